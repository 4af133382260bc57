//! Test-time interaction's re-check prompting (`answer_checks`) in real campaigns on the
//! bundled wiki (real Chromium, real Postgres): the HTTP policy against a scripted
//! OpenAI-compatible server that answers wrong first and right once asked to check again,
//! and `surfgym run --answer-checks` with the scripted policy through `export`.

use crate::common;

use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use common::database_url;
use engine::CampaignSpec;
use policy::PolicyRegistry;
use policy::http::{HttpOptions, HttpPolicy};
use serde_json::json;
use sqlx::PgPool;
use store::{EpisodeDetail, EpisodeFilter, TaskFilter};
use uuid::Uuid;

/// A bundled answer task: the rubric wants 412 (km) and a visit to the article.
const TASK: &str = "wiki-aster-length";

/// What the scripted model says, given the prompt's text: open the article, answer wrong
/// there, and answer right once the prompt says it answered.
fn scripted_reply(prompt: &str, wiki: &str) -> String {
    if prompt.contains("You answered") {
        "The article's infobox says 412 km.\nAction: answer(\"412 km\")".into()
    } else if prompt.contains("id=aster-river") {
        "It looks like 300 km.\nAction: answer(\"300 km\")".into()
    } else {
        format!("Open the article.\nAction: goto(\"{wiki}/article.html?id=aster-river\")")
    }
}

/// Every request's prompt text, in order.
type Prompts = Arc<Mutex<Vec<String>>>;

/// An OpenAI-compatible chat server on loopback answering [`scripted_reply`]; keeps every
/// request's prompt text, in order.
async fn scripted_policy_server(wiki: String) -> (String, Prompts) {
    use axum::Json;
    use axum::extract::State;
    use axum::routing::post;
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let state = (prompts.clone(), Arc::new(wiki));
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            post(
                |State((prompts, wiki)): State<(Prompts, Arc<String>)>,
                 Json(body): Json<serde_json::Value>| async move {
                    let prompt: String = body["messages"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                        .filter_map(|part| part["text"].as_str().map(str::to_string))
                        .collect();
                    let reply = scripted_reply(&prompt, &wiki);
                    prompts.lock().unwrap().push(prompt);
                    Json(json!({
                        "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                        "model": "scripted",
                        "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": reply}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
                    }))
                },
            ),
        )
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), prompts)
}

/// The one episode of a finished campaign, with its steps.
async fn only_episode(engine: &engine::Engine, campaign: Uuid) -> EpisodeDetail {
    let (_, total) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(campaign), 1, 0)
        .await
        .unwrap();
    assert_eq!(total, 1);
    common::first_episode(engine, campaign).await
}

fn actions(e: &EpisodeDetail) -> Vec<String> {
    e.steps.iter().map(|s| s.core.action.clone()).collect()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_second_answer_after_a_recheck_is_the_one_judged(pool: PgPool) {
    let sites = common::sites().await;
    let wiki = sites.bases()["wiki"].trim_end_matches('/').to_string();
    let (base, prompts) = scripted_policy_server(wiki.clone()).await;
    let mut policies = PolicyRegistry::builtin();
    let mut http = HttpOptions::new(base, "scripted");
    http.retries = 0;
    policies.register(Arc::new(HttpPolicy::new("http", http).unwrap()));
    let engine = common::new_engine(pool, policies);
    engine.register_bundled(sites.bases()).await.unwrap();
    let spec = |answer_checks: u32| CampaignSpec {
        policy: Some("http".into()),
        tasks: Some(TaskFilter {
            ids: vec![TASK.into()],
            ..Default::default()
        }),
        max_attempts: Some(1),
        answer_checks: Some(answer_checks),
        ..Default::default()
    };
    let goto = format!("goto(\"{wiki}/article.html?id=aster-river\")");

    // Two answers allowed: the wrong one is recorded, the agent is asked to check again,
    // and the corrected one decides the episode.
    let id = engine.create_campaign(spec(2)).await.unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let e = only_episode(&engine, id).await;
    assert_eq!(
        actions(&e),
        [goto.as_str(), "answer(\"300 km\")", "answer(\"412 km\")"],
        "every answer is a step of the replay"
    );
    assert_eq!(e.summary.final_answer.as_deref(), Some("412 km"));
    assert_eq!(e.summary.end_reason.as_deref(), Some("answered"));
    assert_eq!(e.summary.success, Some(true), "judged on the second answer");
    let note = "You answered \"300 km\". Check the page again, then answer again";
    let asked = prompts.lock().unwrap().clone();
    assert_eq!(asked.len(), 3, "one request per step");
    assert!(
        !asked[1].contains("You answered"),
        "no note before the first answer: {}",
        asked[1]
    );
    assert!(asked[2].contains(note), "{}", asked[2]);
    let stored = e.steps[2].core.prompt.as_deref().unwrap_or_default();
    assert!(
        stored.contains(note),
        "the step records the prompt it answered: {stored}"
    );
    // The answer step did not act on the page: the re-check sees the same article.
    assert_eq!(e.steps[1].core.url, e.steps[2].core.url);

    // One answer (the default behaviour): the same server's first, wrong answer ends it.
    prompts.lock().unwrap().clear();
    let id = engine.create_campaign(spec(1)).await.unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let e = only_episode(&engine, id).await;
    assert_eq!(actions(&e), [goto.as_str(), "answer(\"300 km\")"]);
    assert_eq!(e.summary.final_answer.as_deref(), Some("300 km"));
    assert_eq!(e.summary.end_reason.as_deref(), Some("answered"));
    assert_eq!(e.summary.success, Some(false));
    assert_eq!(prompts.lock().unwrap().len(), 2);

    // The step limit counts answer steps: with room for only the goto and one answer, the
    // first answer given is the one judged, though another was allowed.
    let id = engine
        .create_campaign(CampaignSpec {
            max_steps: Some(2),
            ..spec(3)
        })
        .await
        .unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let e = only_episode(&engine, id).await;
    assert_eq!(actions(&e), [goto.as_str(), "answer(\"300 km\")"]);
    assert_eq!(e.summary.end_reason.as_deref(), Some("max_steps"));
    assert_eq!(e.summary.final_answer.as_deref(), Some("300 km"));
    assert_eq!(e.summary.success, Some(false));
    engine.shutdown().await;
}

fn surfgym(args: &[&str], database: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args(args)
        .env("DATABASE_URL", database)
        .env("SURFGYM_LOG", "warn")
        .output()
        .expect("the surfgym binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn surfgym_run_answer_checks_records_every_answer_in_the_export(pool: PgPool) {
    // No database behind this address: refused before one is needed.
    let out = surfgym(
        &["run", "--answer-checks", "0", "--policy", "scripted"],
        "postgres://127.0.0.1:1/unused",
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("'--answer-checks <ANSWER_CHECKS>'"),
        "{}",
        text(&out)
    );

    let db = database_url(&pool);
    let ran = surfgym(
        &[
            "run",
            "--policy",
            "scripted",
            "--task",
            TASK,
            "--answer-checks",
            "2",
            "--sites-port",
            "0",
        ],
        &db,
    );
    assert!(ran.status.success(), "{}", text(&ran));
    let config: serde_json::Value = sqlx::query_scalar("SELECT config FROM campaigns")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(config["answer_checks"], 2, "{config}");
    let out = surfgym(&["export"], &db);
    assert!(out.status.success(), "{}", text(&out));
    let e: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let answers: Vec<&str> = e["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["action"].as_str())
        .filter(|a| a.starts_with("answer("))
        .collect();
    // The reference solution's answer, then the scripted policy confirming it when asked.
    assert_eq!(answers, ["answer(\"412 km\")", "answer(\"412 km\")"], "{e}");
    assert_eq!(e["final_answer"], "412 km");
    assert_eq!(e["end_reason"], "answered");
    assert_eq!(e["success"], true);
}
