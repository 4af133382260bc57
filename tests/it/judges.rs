//! The model judge in real campaigns: facts written in words verified by the tiny VLM
//! (real ONNX Runtime) and by the same model behind `serve-policy` (real HTTP), verdicts
//! stored with their judge and cached per trajectory, binary judging with the critic
//! giving the same success labels as exhaustive judging (on a judge server with scripted,
//! mixed verdicts and no cache, so the labels are really recomputed and both kinds occur),
//! a binary campaign storing the facts it left unchecked and reporting the calls it saved
//! (replay and campaign page in Chromium), and a judge that is down never scoring an
//! episode.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use engine::PageSnapshot;
use engine::SitesServer;
use engine::judge::{Evidence, HttpJudge, JudgeBackend, JudgeConfig, ModelJudge, OnnxJudge};
use engine::{CampaignSpec, Engine};
use futures::future::BoxFuture;
use policy::http::HttpOptions;
use policy::onnx::{OnnxBackend, OnnxOptions};
use policy::{PolicyError, PolicyRegistry};
use serde_json::json;
use sqlx::PgPool;
use store::{EpisodeFilter, Store, TaskFilter};
use uuid::Uuid;

fn tiny() -> OnnxBackend {
    let data = common::data_dir();
    let dylib =
        inference::find_ort_dylib(&data).expect("ONNX Runtime: run ./scripts/setup-python.sh");
    OnnxBackend::load(OnnxOptions::new(data.join("models/tiny-vlm"), dylib)).unwrap()
}

/// Counts the questions that reach the model.
struct Counting<B> {
    inner: B,
    calls: Arc<AtomicUsize>,
}

impl<B: JudgeBackend> JudgeBackend for Counting<B> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn ask(
        &self,
        images: Vec<Vec<u8>>,
        question: String,
        seed: u64,
    ) -> BoxFuture<'_, Result<String, PolicyError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.ask(images, question, seed)
    }
}

/// Three bundled tasks re-written with facts in words only (two groups each).
async fn judged_tasks(engine: &Engine) -> Vec<String> {
    let mut ids = Vec::new();
    for base in ["shop-mug-capacity", "wiki-aster-length", "booking-bag-fee"] {
        let t = engine.store().load_task(base).await.unwrap().unwrap();
        let mut spec = serde_json::to_value(t.to_spec()).unwrap();
        spec["id"] = json!(format!("judged.{base}"));
        // A new rubric: the bundled task's audit declarations name facts it no longer has.
        spec.as_object_mut().unwrap().remove("audit");
        spec["rubric"] = json!({"groups": [
            {"id": "nav", "description": "the agent found the right page", "facts": [
                {"id": "nav.page", "description": "The screenshots show the page with the information the task asks for", "check": {"type": "judge"}},
                {"id": "nav.site", "description": "The agent stayed on the website of the task", "check": {"type": "judge"}}]},
            {"id": "ans", "description": "the final answer", "facts": [
                {"id": "ans.value", "description": "The final answer gives the value the task asks for", "check": {"type": "judge"}}]}
        ]});
        let task = tasks::parse_task(&spec.to_string()).unwrap_or_else(|e| panic!("{base}: {e:?}"));
        engine.store().insert_task(&task).await.unwrap();
        ids.push(task.id.to_string());
    }
    ids
}

async fn setup(pool: PgPool) -> (Engine, SitesServer) {
    let (engine, sites, _) = common::engine_with_sites(pool, PolicyRegistry::builtin()).await;
    (engine, sites)
}

fn scripted(ids: &[String]) -> CampaignSpec {
    CampaignSpec {
        policy: Some("scripted".into()),
        tasks: Some(TaskFilter {
            ids: ids.to_vec(),
            ..Default::default()
        }),
        critic: Some(false),
        max_attempts: Some(1),
        ..Default::default()
    }
}

/// The evidence of a stored episode, rebuilt from the database.
async fn stored_evidence(store: &Store, episode: Uuid, reference: Option<String>) -> Evidence {
    let d = store.get_episode(episode).await.unwrap().unwrap();
    // What judging a stored episode again reads (`surfgym judge`): the final page and every
    // page the episode's tabs loaded.
    let material = store.judged_material(episode).await.unwrap().unwrap();
    let mut screenshots = Vec::new();
    for hash in d
        .steps
        .iter()
        .filter_map(|s| s.core.screenshot.clone())
        .chain(d.final_screenshot.clone())
    {
        screenshots.push(store.get_blob(&hash).await.unwrap().unwrap().1);
    }
    Evidence {
        episode,
        instruction: d.instruction.clone(),
        final_answer: d.summary.final_answer.clone(),
        visited_urls: material.2,
        titles: d.steps.iter().map(|s| s.core.title.clone()).collect(),
        final_text: material.0["text"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_default(),
        screenshots,
        reference_answer: reference,
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_onnx_judge_verifies_facts_in_words_and_caches_its_verdicts(pool: PgPool) {
    let (engine, _sites) = setup(pool).await;
    let ids = judged_tasks(&engine).await;
    let err = engine.create_campaign(scripted(&ids)).await.unwrap_err();
    assert!(err.to_string().contains("model judge"), "{err}");

    let calls = Arc::new(AtomicUsize::new(0));
    let model = tiny().model();
    let backend = Counting {
        inner: OnnxJudge::new(model, "tiny", 24),
        calls: calls.clone(),
    };
    let judge = Arc::new(ModelJudge::new(
        Arc::new(backend),
        JudgeConfig { max_screenshots: 2 },
        Some(engine.store().clone()),
    ));
    engine.set_model_judge(judge.clone());

    let id = engine.create_campaign(scripted(&ids)).await.unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let v = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(v.counts.finished, 3);
    assert_eq!(v.judge_facts, 9);
    // At least one question per episode: the anti-hallucination check, then one per fact
    // unless that check already failed the answer.
    assert!(calls.load(Ordering::SeqCst) >= 3, "the model was asked");
    assert_eq!(
        v.judge_calls as usize,
        calls.load(Ordering::SeqCst),
        "every question counted, nothing else"
    );
    assert_eq!(
        (v.judge_calls_saved, v.judge_exhaustive_calls),
        (0, v.judge_calls),
        "exhaustive judging saves nothing"
    );
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 10, 0)
        .await
        .unwrap();
    for e in &eps {
        let d = engine.store().get_episode(e.id).await.unwrap().unwrap();
        assert_eq!(d.verdicts.len(), 3);
        assert!(
            d.verdicts
                .iter()
                .all(|v| v.judge == "model:tiny" && !v.reason.is_empty()),
            "{:?}",
            d.verdicts
        );
    }

    // Judged again, the stored episodes' verdicts come from the cache: the stored labels,
    // and not one question to the model.
    let asked = calls.load(Ordering::SeqCst);
    for e in &eps {
        let task = engine.store().load_task(&e.task_id).await.unwrap().unwrap();
        let ev = stored_evidence(engine.store(), e.id, task.reference_answer.clone()).await;
        let traj = rubrics::Trajectory {
            final_answer: ev.final_answer.clone(),
            visited_urls: ev.visited_urls.clone(),
        };
        let full = engine::judge::judge_episode(
            &judge,
            &task.rubric,
            &traj,
            &PageSnapshot::default(),
            ev,
            false,
            false,
        )
        .await
        .unwrap();
        assert_eq!(
            full.judgement.model_calls, 0,
            "cached verdicts are not calls"
        );
        assert_eq!(
            Some(full.judgement.success),
            e.success,
            "{}: the stored label",
            e.task_id
        );
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        asked,
        "verdicts of a judged trajectory come from the cache"
    );
    engine.shutdown().await;
}

/// What the scripted judge server holds true, by task (told apart by its instruction): the
/// shop task's facts all hold, the wiki task's final answer does not, none of the booking
/// task's does. The answer's claims are always visible, and a final answer always agrees
/// with the reference.
fn scripted_verdict(question: &str) -> &'static str {
    let fact = question
        .split_once("Fact to verify: ")
        .map(|(_, f)| f.lines().next().unwrap_or_default());
    let holds = match fact {
        None => true,
        Some(_) if question.contains("checked bag") => false,
        Some(f) if question.contains("Aster River") => !f.starts_with("The final answer"),
        Some(_) => true,
    };
    if holds {
        "YES. The trajectory shows it."
    } else {
        "NO. The trajectory does not show it."
    }
}

/// An OpenAI-compatible judge server on loopback answering [`scripted_verdict`]; counts the
/// questions it was asked.
async fn scripted_judge_server() -> (String, Arc<AtomicUsize>) {
    use axum::Json;
    use axum::extract::State;
    use axum::routing::post;
    let asked = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            post(
                |State(asked): State<Arc<AtomicUsize>>, Json(body): Json<serde_json::Value>| async move {
                    asked.fetch_add(1, Ordering::SeqCst);
                    let question: String = body["messages"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                        .filter_map(|part| part["text"].as_str().map(str::to_string))
                        .collect();
                    Json(json!({
                        "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                        "model": "scripted",
                        "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": scripted_verdict(&question)}}],
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

fn scripted_judge(base: &str) -> HttpJudge {
    HttpJudge::new(HttpOptions::new(base, "scripted")).unwrap()
}

/// Binary judging with the critic gives exhaustive judging's success labels on a judge with
/// known mixed verdicts (one episode succeeds, two fail, one of them at its first fact),
/// over real HTTP, and asks fewer questions. The binary judge has no cache, so every label
/// is really computed again.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn binary_judging_keeps_mixed_labels_with_fewer_questions(pool: PgPool) {
    let (engine, _sites) = setup(pool).await;
    let ids = judged_tasks(&engine).await;
    let (base, asked) = scripted_judge_server().await;
    let judge = Arc::new(ModelJudge::new(
        Arc::new(scripted_judge(&base)),
        JudgeConfig { max_screenshots: 2 },
        Some(engine.store().clone()),
    ));
    engine.set_model_judge(judge.clone());
    let id = engine.create_campaign(scripted(&ids)).await.unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 10, 0)
        .await
        .unwrap();
    let stored: std::collections::BTreeMap<&str, Option<bool>> = eps
        .iter()
        .map(|e| (e.task_id.as_str(), e.success))
        .collect();
    assert_eq!(
        stored,
        [
            ("judged.booking-bag-fee", Some(false)),
            ("judged.shop-mug-capacity", Some(true)),
            ("judged.wiki-aster-length", Some(false)),
        ]
        .into(),
        "the campaign stored the scripted verdicts' labels"
    );

    let uncached = ModelJudge::new(
        Arc::new(scripted_judge(&base)),
        JudgeConfig { max_screenshots: 2 },
        None,
    );
    let (mut exhaustive_checks, mut binary_checks) = (0, 0);
    let (mut exhaustive_labels, mut binary_labels) = (Vec::new(), Vec::new());
    for e in &eps {
        let task = engine.store().load_task(&e.task_id).await.unwrap().unwrap();
        let ev = stored_evidence(engine.store(), e.id, task.reference_answer.clone()).await;
        let traj = rubrics::Trajectory {
            final_answer: ev.final_answer.clone(),
            visited_urls: ev.visited_urls.clone(),
        };
        let page = PageSnapshot::default();
        let full = engine::judge::judge_episode(
            &judge,
            &task.rubric,
            &traj,
            &page,
            ev.clone(),
            false,
            false,
        )
        .await
        .unwrap();
        assert_eq!(
            full.judgement.model_calls, 0,
            "cached verdicts are not calls"
        );
        let before = asked.load(Ordering::SeqCst);
        let quick =
            engine::judge::judge_episode(&uncached, &task.rubric, &traj, &page, ev, true, true)
                .await
                .unwrap();
        let quick_calls = asked.load(Ordering::SeqCst) - before;
        assert!(quick_calls >= 1, "{}: the model was asked again", e.task_id);
        assert_eq!(quick.judgement.model_calls, quick_calls, "{}", e.task_id);
        assert_eq!(
            full.judgement.success, quick.judgement.success,
            "{}: binary judging keeps the label",
            e.task_id
        );
        assert_eq!(
            quick.judgement.verdicts.len() + quick.judgement.skipped.len(),
            3,
            "{}: every fact verified or marked unchecked",
            e.task_id
        );
        assert!(
            quick_calls <= full.exhaustive_calls,
            "{}: {quick_calls} calls, exhaustive {}",
            e.task_id,
            full.exhaustive_calls
        );
        exhaustive_checks += full.exhaustive_calls;
        binary_checks += quick_calls;
        exhaustive_labels.push(full.judgement.success);
        binary_labels.push(quick.judgement.success);
    }
    for (mode, labels) in [
        ("exhaustive", &exhaustive_labels),
        ("binary", &binary_labels),
    ] {
        assert!(
            labels.contains(&true) && labels.contains(&false),
            "{mode} judging: some episodes succeed, some fail: {labels:?}"
        );
    }
    assert!(
        binary_checks < exhaustive_checks,
        "binary judging stops at the first failed fact: {binary_checks} calls, exhaustive {exhaustive_checks}"
    );
    engine.shutdown().await;
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_http_judge_works_against_serve_policy_and_a_dead_judge_scores_nothing(pool: PgPool) {
    let (engine, _sites) = setup(pool).await;
    let ids = judged_tasks(&engine).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server =
        inference::server::PolicyServer::start(tiny().model(), "tiny", Default::default()).unwrap();
    let app = inference::server::router(server);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let mut opts = HttpOptions::new(format!("http://{addr}"), "tiny-http");
    opts.max_tokens = 24;
    engine.set_model_judge(Arc::new(ModelJudge::new(
        Arc::new(HttpJudge::new(opts).unwrap()),
        JudgeConfig::default(),
        None,
    )));
    let id = engine.create_campaign(scripted(&ids[..1])).await.unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let d = common::first_episode(&engine, id).await;
    assert_eq!(d.summary.status, store::EpisodeStatus::Finished);
    assert!(
        d.verdicts.iter().all(|v| v.judge == "model:tiny-http"),
        "{:?}",
        d.verdicts
    );

    let mut down = HttpOptions::new("http://127.0.0.1:9", "down");
    down.retries = 0;
    down.timeout = Duration::from_secs(2);
    engine.set_model_judge(Arc::new(ModelJudge::new(
        Arc::new(HttpJudge::new(down).unwrap()),
        JudgeConfig::default(),
        None,
    )));
    let id = engine.create_campaign(scripted(&ids[..1])).await.unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let v = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(
        (v.counts.failed, v.counts.finished),
        (1, 0),
        "a dead judge is an infrastructure failure"
    );
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 10, 0)
        .await
        .unwrap();
    assert!(
        eps[0].last_error.as_deref().unwrap().contains("judge"),
        "{:?}",
        eps[0].last_error
    );
    assert_eq!(eps[0].success, None, "never scored");
    engine.shutdown().await;
}

/// A judge that holds every fact in words false (and the answer's claims visible): binary
/// judging must stop after the first fact of each episode.
struct SaysNo;

impl JudgeBackend for SaysNo {
    fn name(&self) -> &str {
        "says-no"
    }
    fn ask(
        &self,
        _images: Vec<Vec<u8>>,
        question: String,
        _seed: u64,
    ) -> BoxFuture<'_, Result<String, PolicyError>> {
        let reply = if question.contains("Is every factual claim") {
            "YES, the screenshots show it."
        } else {
            "NO, the trajectory does not show it."
        };
        Box::pin(async move { Ok(reply.to_string()) })
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_binary_campaign_stores_unchecked_facts_and_reports_the_calls_it_saved(pool: PgPool) {
    let (engine, _sites) = setup(pool).await;
    let ids = judged_tasks(&engine).await;
    engine.set_model_judge(Arc::new(ModelJudge::new(
        Arc::new(SaysNo),
        JudgeConfig::default(),
        Some(engine.store().clone()),
    )));
    let mut spec = scripted(&ids);
    spec.judge = Some("binary".into());
    let id = engine.create_campaign(spec).await.unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let v = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!((v.counts.finished, v.successes), (3, 0));
    // Per episode: the anti-hallucination call and the first fact, which fails; an
    // exhaustive judge asks all three facts too (and the reference question, when the
    // rules cannot compare the answer with the task's reference).
    assert_eq!(v.judge_facts, 9);
    assert!(
        v.judge_calls >= 6 && v.judge_calls < v.judge_exhaustive_calls,
        "{v:?}"
    );
    assert_eq!(
        v.judge_calls_saved,
        v.judge_exhaustive_calls - v.judge_calls
    );
    assert!(
        v.judge_calls_saved >= 6,
        "two facts saved per episode: {v:?}"
    );

    let d = common::first_episode(&engine, id).await;
    let unchecked: Vec<_> = d.verdicts.iter().filter(|v| v.passed.is_none()).collect();
    assert_eq!(d.verdicts.len(), 3, "unchecked facts are stored too");
    assert_eq!(unchecked.len(), 2, "{:?}", d.verdicts);
    assert!(
        unchecked
            .iter()
            .all(|v| v.evidence.is_empty() && v.reason.is_empty())
    );
    assert_eq!(d.summary.score, Some(0.0), "a lower bound");
    assert_eq!(d.summary.score_of_verified, Some(0.0));

    // The replay and the campaign page, in a real browser.
    let addr = common::serve_web(&engine).await;
    let mut s = engine.pool().await.unwrap().lease().await.unwrap();
    let text = open_page(
        &mut s,
        &format!("http://{addr}/#/episodes/{}", d.summary.id),
    )
    .await;
    assert_eq!(
        text.matches("not checked (stopped early)").count(),
        2 + 2,
        "two rows, the facts summary and the panel head: {text}"
    );
    let rows = s
        .evaluate("document.querySelectorAll('#verdicts tr.verdict.unchecked').length")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rows, json!(2));
    assert!(
        text.contains("≥ 0.00"),
        "the score is a lower bound: {text}"
    );
    let text = open_page(&mut s, &format!("http://{addr}/#/campaigns/{id}")).await;
    assert!(
        text.contains(&format!(
            "{} for an exhaustive judge; {} saved",
            v.judge_exhaustive_calls, v.judge_calls_saved
        )),
        "{text}"
    );
    s.close().await;
    engine.shutdown().await;
}

/// Opens a dashboard page, waits until it has rendered its data, returns its text.
async fn open_page(s: &mut browser_pool::Session, url: &str) -> String {
    common::open_dashboard(s, url).await;
    s.evaluate("document.body.innerText")
        .await
        .unwrap()
        .unwrap()
        .as_str()
        .unwrap_or_default()
        .to_string()
}
