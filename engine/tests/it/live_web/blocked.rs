//! Pages that turn the agent away end their episodes as `blocked` with the right reason,
//! an infrastructure outcome (retried, never scored, listed by site in triage), while an
//! ordinary failure stays the agent's: a CAPTCHA, a bot wall, 403, 429, a login wall.

use crate::common;

use std::collections::BTreeMap;

use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use engine::{CampaignSpec, Engine};
use sqlx::PgPool;
use store::TaskFilter;

use super::task;

/// A page: its status, extra headers, and body.
type Page = (
    StatusCode,
    &'static [(&'static str, &'static str)],
    &'static str,
);

const PAGES: &[(&str, Page)] = &[
    (
        "/captcha.html",
        (
            StatusCode::OK,
            &[],
            r#"<title>Shop</title><p>One more step.</p><div class="g-recaptcha" data-sitekey="k"></div>"#,
        ),
    ),
    (
        "/wall.html",
        (
            StatusCode::SERVICE_UNAVAILABLE,
            &[],
            "<title>Just a moment...</title><p>Checking your browser before accessing the shop.</p>",
        ),
    ),
    (
        "/forbidden.html",
        (
            StatusCode::FORBIDDEN,
            &[],
            "<title>Shop</title><h1>Forbidden</h1>",
        ),
    ),
    (
        "/busy.html",
        (
            StatusCode::TOO_MANY_REQUESTS,
            &[("retry-after", "30")],
            "<title>Shop</title><p>Slow down.</p>",
        ),
    ),
    (
        "/orders.html",
        (
            StatusCode::OK,
            &[],
            r#"<title>Orders</title><p>Please sign in to continue.</p>
               <input name="email"><input type="password" name="pw"><button>Sign in</button>"#,
        ),
    ),
    (
        "/plain.html",
        (
            StatusCode::OK,
            &[],
            r#"<title>Shop</title><p>Mugs</p><button id="buy">Buy</button>
               <a id="away" href="/">home</a>"#,
        ),
    ),
];

async fn serve() -> u16 {
    let mut app = axum::Router::new();
    for &(path, (status, headers, body)) in PAGES {
        app = app.route(
            path,
            axum::routing::get(move || async move {
                let mut h = axum::http::HeaderMap::new();
                h.insert(header::CONTENT_TYPE, "text/html".parse().unwrap());
                for &(k, v) in headers {
                    h.insert(header::HeaderName::from_static(k), v.parse().unwrap());
                }
                (status, h, body).into_response()
            }),
        );
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// Runs the scripted policy over every task of the `walls` site; each episode's success
/// and last error by task.
async fn run(
    engine: &Engine,
    detect_blocks: bool,
) -> BTreeMap<String, (Option<bool>, Option<String>, i32)> {
    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("scripted".into()),
            tasks: Some(TaskFilter {
                site: Some("walls".into()),
                ..Default::default()
            }),
            max_attempts: Some(2),
            detect_blocks: Some(detect_blocks),
            ..Default::default()
        })
        .await
        .unwrap();
    let eps = common::run_to_end(engine, id).await;
    let triage = engine.store().triage(Some(id)).await.unwrap();
    if detect_blocks {
        let mut kinds: Vec<(String, i64, i64)> = triage
            .blocked
            .iter()
            .map(|g| {
                (
                    g.kind.split(" at ").next().unwrap().to_string(),
                    g.episodes,
                    g.gave_up,
                )
            })
            .collect();
        kinds.sort();
        // `captcha` and `deeper` both met the CAPTCHA: one group per reason and site.
        let expect = [
            ("access_denied", 1),
            ("bot_wall", 1),
            ("captcha", 2),
            ("login_wall", 1),
            ("rate_limited", 1),
        ];
        assert_eq!(
            kinds,
            expect.map(|(k, n)| (k.to_string(), n, n)),
            "by reason and site: {:?}",
            triage.blocked
        );
        assert!(
            triage
                .blocked
                .iter()
                .all(|g| g.kind.ends_with("at http://127.0.0.1")
                    || g.kind.contains("at http://127.0.0.1:")),
            "{:?}",
            triage.blocked
        );
    } else {
        assert!(triage.blocked.is_empty(), "{:?}", triage.blocked);
    }
    eps.into_iter()
        .map(|e| (e.task_id, (e.success, e.last_error, e.attempts)))
        .collect()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn walls_end_as_blocked_with_their_reason_and_ordinary_failures_stay_failures(pool: PgPool) {
    let port = serve().await;
    let at = |path: &str| format!("http://127.0.0.1:{port}{path}");
    let (engine, _sites) = common::engine(pool, vec![]).await;
    let stop = ["stop()"];
    for (id, path) in [
        ("captcha", "/captcha.html"),
        ("wall", "/wall.html"),
        ("forbidden", "/forbidden.html"),
        ("busy", "/busy.html"),
        ("plain", "/plain.html"),
    ] {
        task(&engine, id, "Buy a mug.", at(path), &stop).await;
    }
    task(
        &engine,
        "orders",
        "Find my last order.",
        at("/orders.html"),
        &stop,
    )
    .await;
    // The same form where the task asks to sign in: the form is the task, not a wall.
    task(
        &engine,
        "sign-in",
        "Sign in as alice.",
        at("/orders.html"),
        &stop,
    )
    .await;
    // A wall the agent walks into on another site (localhost is not 127.0.0.1 by name):
    // the agent's doing, scored.
    let away = format!("goto(\"http://localhost:{port}/wall.html\")");
    task(
        &engine,
        "wander",
        "Buy a mug.",
        at("/plain.html"),
        &[away.as_str(), "stop()"],
    )
    .await;
    // A wall met after the start: blocked whenever it comes.
    let deeper = format!("goto(\"{}\")", at("/captcha.html"));
    task(
        &engine,
        "deeper",
        "Buy a mug.",
        at("/plain.html"),
        &[deeper.as_str(), "stop()"],
    )
    .await;

    let eps = run(&engine, true).await;
    let blocked = |task: &str, reason: &str, path: &str| {
        let (success, error, attempts) = &eps[task];
        assert_eq!(*success, None, "{task}: never scored");
        assert_eq!(
            *attempts, 2,
            "{task}: retried under the campaign's attempts"
        );
        let error = error.as_deref().unwrap_or_default();
        let want = format!("blocked: {reason} at {}", at(path));
        assert!(error.starts_with(&want), "{task}: {error}, not {want}");
    };
    blocked("captcha", "captcha", "/captcha.html");
    blocked("wall", "bot_wall", "/wall.html");
    blocked("forbidden", "access_denied", "/forbidden.html");
    blocked("busy", "rate_limited", "/busy.html");
    blocked("orders", "login_wall", "/orders.html");
    assert!(eps["forbidden"].1.as_deref().unwrap().contains("HTTP 403"));
    assert!(eps["busy"].1.as_deref().unwrap().contains("HTTP 429"));
    for task in ["plain", "sign-in", "wander"] {
        assert_eq!(
            eps[task].0,
            Some(false),
            "{task}: an ordinary failure, scored"
        );
        assert_eq!(eps[task].1, None, "{task}");
    }
    // `deeper` is blocked at its second observation, on the CAPTCHA page it went to.
    assert_eq!(eps["deeper"].0, None);
    assert!(
        eps["deeper"]
            .1
            .as_deref()
            .unwrap()
            .starts_with("blocked: captcha")
    );

    // An environment session opened on a wall fails as the episode's stored reason says.
    let e = engine
        .open_session(
            &engine::sessions::Client::local(),
            engine::sessions::OpenRequest {
                task: engine::sessions::TaskChoice::Registered("captcha".into()),
                seed: 0,
                max_steps: None,
                dialect: Default::default(),
                observe: Default::default(),
            },
        )
        .await
        .err()
        .expect("a session on a CAPTCHA page does not open")
        .to_string();
    assert!(e.contains("blocked: captcha at"), "{e}");

    // With detection off, every wall is scored as the agent's failure.
    let eps = run(&engine, false).await;
    for (task, (success, error, _)) in &eps {
        assert_eq!(*success, Some(false), "{task}");
        assert_eq!(*error, None, "{task}");
    }
    engine.shutdown().await;
}

/// An OpenAI-compatible judge on loopback that sees a wall on every page but the 403
/// (say, a members' area the task may not need); returns its address and the questions
/// it was asked.
async fn wall_judge() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use axum::Json;
    use axum::extract::State;
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            axum::routing::post(
                |State(asked): State<std::sync::Arc<std::sync::Mutex<Vec<String>>>>,
                 Json(body): Json<serde_json::Value>| async move {
                    let question: String = body["messages"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                        .filter_map(|part| part["text"].as_str().map(str::to_string))
                        .collect();
                    let images = body.to_string().matches("data:image/").count();
                    let answer = match question.contains("/forbidden.html") {
                        true => "NO. A normal page.",
                        false => "YES, a wall.",
                    };
                    asked.lock().unwrap().push(format!("{images} {question}"));
                    Json(serde_json::json!({
                        "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                        "model": "walls",
                        "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": answer}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
                    }))
                },
            ),
        )
        .with_state(asked.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), asked)
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_model_judge_confirms_blocks_or_takes_them_back(pool: PgPool) {
    use engine::judge::{HttpJudge, JudgeConfig, ModelJudge};
    let port = serve().await;
    let at = |path: &str| format!("http://127.0.0.1:{port}{path}");
    let (engine, _sites) = common::engine(pool, vec![]).await;
    for (id, path) in [
        ("captcha", "/captcha.html"),
        ("forbidden", "/forbidden.html"),
    ] {
        task(&engine, id, "Buy a mug.", at(path), &["stop()"]).await;
    }
    let spec = || CampaignSpec {
        policy: Some("scripted".into()),
        tasks: Some(TaskFilter {
            site: Some("walls".into()),
            ..Default::default()
        }),
        max_attempts: Some(1),
        confirm_blocks: Some(true),
        ..Default::default()
    };
    // No judge: refused by field, before anything runs.
    let e = engine
        .create_campaign(spec())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("confirm_blocks"), "{e}");
    let off = CampaignSpec {
        detect_blocks: Some(false),
        ..spec()
    };
    let e = engine.create_campaign(off).await.unwrap_err().to_string();
    assert!(
        e.contains("confirm_blocks") && e.contains("detect_blocks"),
        "{e}"
    );

    let (base, asked) = wall_judge().await;
    let http = HttpJudge::new(policy::http::HttpOptions::new(&base, "walls")).unwrap();
    engine.set_model_judge(std::sync::Arc::new(ModelJudge::new(
        std::sync::Arc::new(http),
        JudgeConfig::default(),
        None,
    )));
    let id = engine.create_campaign(spec()).await.unwrap();
    let eps = common::run_to_end(&engine, id).await;
    let by_task: BTreeMap<String, (Option<bool>, Option<String>)> = eps
        .into_iter()
        .map(|e| (e.task_id, (e.success, e.last_error)))
        .collect();
    // Confirmed: blocked, and the evidence says who confirmed it.
    let (success, error) = &by_task["captcha"];
    assert_eq!(*success, None);
    let error = error.as_deref().unwrap_or_default();
    assert!(error.starts_with("blocked: captcha"), "{error}");
    assert!(error.contains("confirmed by model:walls"), "{error}");
    // Taken back: the 403 goes on as an ordinary page, the agent's failure.
    assert_eq!(by_task["forbidden"], (Some(false), None));
    // One question per block the rules found, each with the page's screenshot.
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked.iter().all(|q| q.starts_with("1 ")), "{asked:?}");
    assert!(
        asked
            .iter()
            .any(|q| q.contains("captcha (a CAPTCHA widget)"))
    );
    assert!(asked.iter().any(|q| q.contains("access_denied (HTTP 403)")));
    engine.shutdown().await;
}
