//! Environment sessions end to end: a real `surfgym serve` (real Chromium, real Postgres,
//! the bundled sites and MiniWoB++) driven by the Python client's test suite
//! (`python/tests`, pytest in the test venv), then checked from here: every session the
//! client ran is a stored, judged episode of its token's interactive campaign; a session
//! solved with a task's reference solution gets the verdict a campaign running the same
//! actions gets; an idle session is reclaimed and stored; interactive campaigns cannot
//! be paused, resumed or cancelled.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::database_url;
use serde_json::{Value, json};
use sqlx::PgPool;
use store::{Scope, Store};

/// The bundled task the client solves with its reference solution.
const SOLVED: &str = "booking-bag-fee";
/// The server's cap on open sessions.
const MAX_SESSIONS: usize = 16;
/// Its idle limit: short enough that the test sees a session reclaimed, long enough that
/// none of the client suite's sessions idles out while 16 others open on a loaded machine.
const IDLE_SECS: u64 = 15;

struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token)
            .header("content-type", "application/json");
        if let Some(b) = body {
            req = req.body(b.to_string());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_python_client_drives_sessions_that_are_stored_and_judged(pool: PgPool) {
    let store = Store::from_pool(pool.clone());
    let (_, token) = store.create_token(Scope::Write, "trainer-a").await.unwrap();
    let (_, other) = store.create_token(Scope::Write, "trainer-b").await.unwrap();
    let db = database_url(&pool);
    let served = crate::tokens::serve(
        &db,
        &[
            "--contexts",
            &MAX_SESSIONS.to_string(),
            "--max-sessions",
            &MAX_SESSIONS.to_string(),
            "--session-idle-secs",
            &IDLE_SECS.to_string(),
        ],
    );
    let api = Api {
        base: format!("http://127.0.0.1:{}", served.1),
        http: reqwest::Client::new(),
    };
    let episodes_file = std::env::temp_dir().join(format!("sessions-{}.txt", uuid::Uuid::new_v4()));

    // The client's own suite, against this server.
    let out = Command::new(common::python())
        .args([
            "-m",
            "pytest",
            "-q",
            "-x",
            "-p",
            "no:cacheprovider",
            "python/tests",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("SURFGYM_URL", &api.base)
        .env("SURFGYM_TOKEN", &token)
        .env("SURFGYM_OTHER_TOKEN", &other)
        .env("SURFGYM_SOLVED_TASK", SOLVED)
        .env("SURFGYM_MAX_SESSIONS", MAX_SESSIONS.to_string())
        .env("SURFGYM_EPISODES_FILE", &episodes_file)
        .output()
        .expect(
            "the test venv's python runs (scripts/setup-python.sh installs pytest and the client)",
        );
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "pytest failed:\n{report}");
    assert!(
        !report.contains(" skipped"),
        "nothing may be skipped:\n{report}"
    );

    // Every session the client saw end is a finished, judged episode of an interactive
    // campaign, readable through the API the dashboard reads.
    let seen = std::fs::read_to_string(&episodes_file).unwrap_or_default();
    let _ = std::fs::remove_file(&episodes_file);
    let ids: Vec<&str> = seen.lines().filter(|l| !l.is_empty()).collect();
    assert!(
        ids.len() >= 20,
        "the suite ran at least 20 sessions: {ids:?}"
    );
    for id in &ids {
        let (status, ep) = api
            .call(
                reqwest::Method::GET,
                &format!("/api/episodes/{id}"),
                &token,
                None,
            )
            .await;
        assert_eq!(status, 200, "episode {id}: {ep}");
        assert_eq!(ep["status"], "finished", "episode {id}: {ep}");
        let campaign = ep["campaign_id"].as_str().unwrap();
        let (_, c) = api
            .call(
                reqwest::Method::GET,
                &format!("/api/campaigns/{campaign}"),
                &token,
                None,
            )
            .await;
        assert_eq!(c["interactive"], true, "{c}");
        assert_eq!(c["policy"], "client", "{c}");
    }

    // The reference solution as a session and as a campaign: the same verdict.
    let session_ep = solved_episode(&store).await;
    let (status, created) = api
        .call(
            reqwest::Method::POST,
            "/api/campaigns",
            &token,
            Some(json!({"policy": "scripted", "tasks": {"ids": [SOLVED]}, "rollouts_per_task": 1})),
        )
        .await;
    assert_eq!(status, 202, "{created}");
    let campaign = created["id"].as_str().unwrap().to_string();
    let campaign_ep = wait_for_episode(&api, &token, &campaign).await;
    assert_eq!(session_ep["success"], true, "{session_ep}");
    assert_eq!(campaign_ep["success"], true, "{campaign_ep}");
    assert_eq!(verdicts(&session_ep), verdicts(&campaign_ep));
    assert_eq!(
        session_ep["steps"].as_array().unwrap().len(),
        campaign_ep["steps"].as_array().unwrap().len()
    );

    // An idle session is reclaimed: gone, and stored as timed out.
    let (status, opened) = api
        .call(
            reqwest::Method::POST,
            "/api/sessions",
            &token,
            Some(json!({"task_id": SOLVED})),
        )
        .await;
    assert_eq!(status, 201, "{opened}");
    let sid = opened["session_id"].as_str().unwrap();
    let eid = opened["episode_id"].as_str().unwrap();
    let metrics = api
        .http
        .get(format!("{}/metrics", api.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("\nsurfgym_sessions_open 1\n"),
        "one session open:\n{metrics}"
    );
    let t0 = Instant::now();
    loop {
        let (status, _) = api
            .call(
                reqwest::Method::GET,
                &format!("/api/sessions/{sid}"),
                &token,
                None,
            )
            .await;
        if status == 404 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(IDLE_SECS * 5),
            "never reclaimed"
        );
        // Reading the state is not activity: only steps are.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(t0.elapsed() >= Duration::from_secs(IDLE_SECS - 1));
    let (_, ep) = api
        .call(
            reqwest::Method::GET,
            &format!("/api/episodes/{eid}"),
            &token,
            None,
        )
        .await;
    assert_eq!(ep["status"], "finished", "{ep}");
    assert_eq!(ep["end_reason"], "timeout", "{ep}");

    // An interactive campaign is not a queue: pause and cancel are refused.
    let interactive = ep["campaign_id"].as_str().unwrap();
    for action in ["pause", "cancel"] {
        let (status, body) = api
            .call(
                reqwest::Method::POST,
                &format!("/api/campaigns/{interactive}/{action}"),
                &token,
                None,
            )
            .await;
        assert_eq!(status, 409, "{action}: {body}");
    }
}

/// The stored episode of the session that solved [`SOLVED`] with its reference solution.
async fn solved_episode(store: &Store) -> Value {
    let filter = store::EpisodeFilter {
        task: Some(SOLVED.into()),
        ..Default::default()
    };
    let (items, _) = store.list_episodes(&filter, 100, 0).await.unwrap();
    let finished = items
        .iter()
        .find(|e| e.success == Some(true))
        .expect("the client solved the task in a session");
    let detail = store.get_episode(finished.id).await.unwrap().unwrap();
    serde_json::to_value(detail).unwrap()
}

async fn wait_for_episode(api: &Api, token: &str, campaign: &str) -> Value {
    let t0 = Instant::now();
    loop {
        let (_, c) = api
            .call(
                reqwest::Method::GET,
                &format!("/api/campaigns/{campaign}"),
                token,
                None,
            )
            .await;
        if c["status"] == "completed" {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(180),
            "campaign never completed: {c}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (_, page) = api
        .call(
            reqwest::Method::GET,
            &format!("/api/episodes?campaign={campaign}"),
            token,
            None,
        )
        .await;
    let id = page["items"][0]["id"].as_str().unwrap().to_string();
    api.call(
        reqwest::Method::GET,
        &format!("/api/episodes/{id}"),
        token,
        None,
    )
    .await
    .1
}

/// (fact, passed) of every verdict, in rubric order.
fn verdicts(ep: &Value) -> Vec<(String, Value)> {
    ep["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["fact_id"].as_str().unwrap_or_default().to_string(),
                v["passed"].clone(),
            )
        })
        .collect()
}
