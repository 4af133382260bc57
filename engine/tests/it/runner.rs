//! The runner under real failures, with real Chromium, real Postgres and the bundled
//! practice sites: a browser SIGKILLed mid-episode is replaced and its episodes retried; a
//! policy backend that is down ends in recorded infrastructure failures, never in scores;
//! the watchdog takes back a stuck episode. And campaign control: pause, resume and cancel,
//! lockstep runs, stragglers cut. What episodes record of their pages is in
//! `episode_pages.rs`.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use browser_pool::BrowserPool;
use common::{engine, engine_with, wiki_easy};
use engine::RunnerConfig;
use engine::{CampaignSpec, Engine};
use futures::FutureExt;
use futures::future::BoxFuture;
use policy::{Decision, Policy, PolicyError, ScriptedPolicy, StepInput};
use sqlx::PgPool;
use store::{EpisodeFilter, TaskFilter};

/// Plays the reference solution, but SIGKILLs every browser of the pool the first time
/// any episode reaches step 1.
struct KillOnce {
    pool: Arc<OnceLock<BrowserPool>>,
    done: AtomicBool,
}

impl Policy for KillOnce {
    fn name(&self) -> &str {
        "kill-once"
    }
    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        async move {
            if input.step == 1 && !self.done.swap(true, Ordering::SeqCst) {
                let pool = self.pool.get().expect("pool set before the campaign runs");
                for pid in pool.browser_pids().await {
                    std::process::Command::new("kill")
                        .args(["-9", &pid.to_string()])
                        .status()
                        .unwrap();
                }
            }
            ScriptedPolicy.decide(input).await
        }
        .boxed()
    }
}

/// A policy server that is down.
struct Down;

impl Policy for Down {
    fn name(&self) -> &str {
        "down"
    }
    fn decide(&self, _: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        async { Err(PolicyError::Unavailable("connection refused".into())) }.boxed()
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_killed_browser_is_replaced_and_its_episodes_retried(pool: PgPool) {
    let cell = Arc::new(OnceLock::new());
    let policy = Arc::new(KillOnce {
        pool: cell.clone(),
        done: AtomicBool::new(false),
    });
    let (engine, _sites) = engine(pool, vec![policy]).await;
    cell.set(engine.pool().await.unwrap()).ok();

    let id = engine
        .create_campaign(wiki_easy("kill-once"))
        .await
        .unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let view = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(view.counts.failed, 0, "retries succeeded");
    assert_eq!(view.counts.finished, view.total_episodes, "no episode lost");
    assert_eq!(
        view.success_rate,
        Some(1.0),
        "the killed episodes were retried, not scored as failures"
    );

    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap();
    let retried: Vec<_> = eps.iter().filter(|e| e.attempts > 1).collect();
    assert!(
        !retried.is_empty(),
        "the episode that saw the kill ran again"
    );
    for e in &retried {
        let err = e.last_error.as_deref().unwrap_or_default();
        assert!(
            err.starts_with("browser_gone")
                || err.starts_with("cdp_timeout")
                || err.starts_with("launch"),
            "{err}"
        );
    }
    let (episodes, steps, _, _) = engine.store().campaign_row_counts(id).await.unwrap();
    let stored_steps: i64 = eps.iter().map(|e| i64::from(e.steps)).sum();
    assert_eq!(
        (episodes, steps),
        (view.total_episodes, stored_steps),
        "no duplicate steps from the aborted attempt"
    );
    assert!(engine.pool().await.unwrap().stats().relaunches >= 1);
    engine.shutdown().await;
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn an_unavailable_policy_fails_episodes_with_a_reason_and_the_campaign_ends(pool: PgPool) {
    let (engine, _sites) = engine(pool, vec![Arc::new(Down)]).await;
    let mut spec = wiki_easy("down");
    spec.max_attempts = Some(2);
    let id = engine.create_campaign(spec).await.unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let view = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(
        (view.counts.failed, view.counts.finished),
        (view.total_episodes, 0)
    );
    assert_eq!(view.success_rate, None, "nothing was scored");
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap();
    for e in eps {
        assert_eq!(e.attempts, 2);
        assert!(e.last_error.unwrap().contains("connection refused"));
        assert_eq!(e.success, None);
    }
    engine.shutdown().await;
}

/// Fails every fifth call as if its server were down (a retry of the call absorbs it), and
/// the first episode to reach step 1 gets four failures in a row (more than an episode
/// retries a call: that episode goes back to the queue); otherwise plays the reference.
struct Flaky {
    calls: std::sync::atomic::AtomicU64,
    burst: std::sync::Mutex<Option<(String, u32)>>,
}

impl Policy for Flaky {
    fn name(&self) -> &str {
        "flaky"
    }
    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        async move {
            let task = input.task.id.to_string();
            let in_burst = {
                let mut burst = self.burst.lock().unwrap();
                if burst.is_none() && input.step == 1 {
                    *burst = Some((task.clone(), 0));
                }
                match burst.as_mut() {
                    Some((t, n)) if *t == task && *n < 4 => {
                        *n += 1;
                        true
                    }
                    _ => false,
                }
            };
            if in_burst {
                return Err(PolicyError::Unavailable(
                    "503 burst from the policy server".into(),
                ));
            }
            if self.calls.fetch_add(1, Ordering::SeqCst) % 5 == 4 {
                return Err(PolicyError::Unavailable(
                    "503 from the policy server".into(),
                ));
            }
            ScriptedPolicy.decide(input).await
        }
        .boxed()
    }
}

/// A policy server that is down; `own` says whether the backend retries by itself.
struct Unreachable {
    name: &'static str,
    own: bool,
    calls: std::sync::atomic::AtomicU32,
}

impl Policy for Unreachable {
    fn name(&self) -> &str {
        self.name
    }
    fn retries_own_calls(&self) -> bool {
        self.own
    }
    fn decide(&self, _: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        async { Err(PolicyError::Unavailable("connection refused".into())) }.boxed()
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_backend_that_retries_its_own_calls_is_not_retried_again_per_step(pool: PgPool) {
    let plain = Arc::new(Unreachable {
        name: "down",
        own: false,
        calls: Default::default(),
    });
    let own = Arc::new(Unreachable {
        name: "down-own",
        own: true,
        calls: Default::default(),
    });
    let (engine, _sites) = engine(pool, vec![plain.clone(), own.clone()]).await;
    let mut episodes = 0;
    for name in ["down", "down-own"] {
        let mut spec = wiki_easy(name);
        spec.max_attempts = Some(1);
        let id = engine.create_campaign(spec).await.unwrap();
        engine.run_campaign(id).await.unwrap();
        let view = engine.store().get_campaign(id).await.unwrap().unwrap();
        assert_eq!(
            (view.counts.finished, view.counts.failed),
            (0, view.total_episodes),
            "{name}: a dead server fails every episode as infrastructure"
        );
        episodes = view.total_episodes as u32;
    }
    assert!(episodes > 0);
    assert_eq!(
        plain.calls.load(Ordering::SeqCst),
        episodes * (1 + engine::POLICY_CALL_RETRIES),
        "the episode retries a plain backend's call"
    );
    assert_eq!(
        own.calls.load(Ordering::SeqCst),
        episodes,
        "a backend with its own retries is asked once per step"
    );
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_policy_failing_a_fifth_of_calls_is_retried_until_the_campaign_completes(pool: PgPool) {
    let flaky = Arc::new(Flaky {
        calls: Default::default(),
        burst: Default::default(),
    });
    let retries_before = metrics::METRICS.policy_call_retries.get();
    let (engine, _sites) = engine(pool, vec![flaky.clone()]).await;
    let mut spec = wiki_easy("flaky");
    spec.max_attempts = Some(20);
    let id = engine.create_campaign(spec).await.unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let view = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(
        (view.counts.finished, view.counts.failed),
        (view.total_episodes, 0)
    );
    assert_eq!(
        view.success_rate,
        Some(1.0),
        "retried episodes are judged on their clean run"
    );
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap();
    // Single failures were absorbed by retrying the call; only the burst cost an episode.
    let burst_task = flaky.burst.lock().unwrap().clone().unwrap().0;
    for e in &eps {
        if e.task_id == burst_task {
            assert_eq!(e.attempts, 2, "the burst's episode is run again");
            let why = e.last_error.as_deref().unwrap();
            assert!(
                why.contains("policy_unavailable") && why.contains("503 burst"),
                "{why}"
            );
        } else {
            assert_eq!(e.attempts, 1, "{}: {:?}", e.task_id, e.last_error);
        }
    }
    let every_fifth = flaky.calls.load(Ordering::SeqCst) / 5;
    assert!(every_fifth > 0);
    let retried = metrics::METRICS.policy_call_retries.get() - retries_before;
    assert!(
        retried >= every_fifth + 3,
        "{retried} call retries for {every_fifth} single failures and a burst"
    );
    assert!(metrics::METRICS.retries.get("policy_unavailable") > 0);
    engine.shutdown().await;
}

fn slow(model_ms: u64) -> Arc<dyn Policy> {
    Arc::new(policy::SimulatedLatency::new(
        "slow",
        Arc::new(ScriptedPolicy),
        policy::LatencyModel {
            median: std::time::Duration::from_millis(model_ms),
            sigma: 0.0,
            batch_overhead: std::time::Duration::ZERO,
        },
    ))
}

async fn wait_finished(engine: &Engine, id: uuid::Uuid, n: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let v = engine.store().get_campaign(id).await.unwrap().unwrap();
        if v.counts.finished >= n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{n} episodes never finished"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn pause_stops_new_episodes_resume_finishes_and_cancel_leaves_the_rest_unrun(pool: PgPool) {
    let (engine, _sites) = engine(pool, vec![slow(200)]).await;
    let spec = || CampaignSpec {
        policy: Some("slow".into()),
        concurrency: Some(2),
        tasks: Some(TaskFilter {
            site: Some("wiki".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let id = engine.create_campaign(spec()).await.unwrap();
    let run = tokio::spawn({
        let e = engine.clone();
        async move { e.run_campaign(id).await }
    });
    wait_finished(&engine, id, 2).await;
    engine.pause_campaign(id).await.unwrap();
    assert_eq!(
        run.await.unwrap().unwrap(),
        store::Status::Paused,
        "workers stop once paused"
    );
    let paused = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(
        paused.counts.running, 0,
        "in-flight episodes finished and were stored"
    );
    assert!(paused.counts.pending > 0);
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let later = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(
        later.counts.finished, paused.counts.finished,
        "nothing runs while paused"
    );
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Paused,
        "a paused campaign does not run"
    );

    engine.resume_campaign(id).await.unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let done = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(done.counts.finished, done.total_episodes);
    assert!(
        engine.resume_campaign(id).await.is_err(),
        "a completed campaign cannot be resumed"
    );

    let id = engine.create_campaign(spec()).await.unwrap();
    let run = tokio::spawn({
        let e = engine.clone();
        async move { e.run_campaign(id).await }
    });
    wait_finished(&engine, id, 1).await;
    engine.cancel_campaign(id).await.unwrap();
    assert_eq!(run.await.unwrap().unwrap(), store::Status::Cancelled);
    let cancelled = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert!(
        cancelled.counts.cancelled > 0,
        "unfinished episodes are not run: {:?}",
        cancelled.counts
    );
    assert_eq!(
        (cancelled.counts.pending, cancelled.counts.running),
        (0, 0),
        "none is left pending for ever"
    );
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Cancelled
    );
    engine.shutdown().await;
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn lockstep_runs_the_same_episodes_to_the_same_results(pool: PgPool) {
    let (engine, _sites) = engine(pool, vec![]).await;
    let mut results = Vec::new();
    for mode in ["async", "lockstep"] {
        let mut spec = wiki_easy("scripted");
        spec.mode = Some(mode.into());
        let id = engine.create_campaign(spec).await.unwrap();
        assert_eq!(
            engine.run_campaign(id).await.unwrap(),
            store::Status::Completed
        );
        let v = engine.store().get_campaign(id).await.unwrap().unwrap();
        assert_eq!(v.success_rate, Some(1.0), "{mode}");
        results.push((v.counts.finished, v.steps));
    }
    assert_eq!(results[0], results[1], "same episodes, same steps");
    engine.shutdown().await;
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn stragglers_are_cut_after_the_grace_period(pool: PgPool) {
    let (engine, _sites) = engine(pool, vec![slow(300)]).await;
    let id = engine
        .create_campaign(CampaignSpec {
            policy: Some("slow".into()),
            concurrency: Some(2),
            tasks: Some(TaskFilter {
                site: Some("wiki".into()),
                ..Default::default()
            }),
            straggler_cutoff: Some(0.2),
            straggler_grace_secs: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    let started = std::time::Instant::now();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let v = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(
        v.counts.finished + v.counts.failed,
        v.total_episodes,
        "every episode accounted for"
    );
    assert!(v.counts.failed > 0, "unstarted episodes were cut");
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap();
    assert!(
        eps.iter()
            .filter(|e| e.status == store::EpisodeStatus::Failed)
            .all(|e| e.last_error.as_deref().unwrap().contains("straggler"))
    );
    // Episodes still running at the cut end there, stored as `timeout` (not as failures).
    let cut_running: Vec<_> = eps
        .iter()
        .filter(|e| e.end_reason.as_deref() == Some("timeout"))
        .collect();
    assert!(!cut_running.is_empty(), "a running episode was cut");
    assert!(
        cut_running
            .iter()
            .all(|e| e.status == store::EpisodeStatus::Finished)
    );
    // The cut itself is the assertions above; this only guards against a campaign that
    // waited for its stragglers after all (a bound no busy machine reaches).
    assert!(
        started.elapsed() < std::time::Duration::from_secs(300),
        "{:?}",
        started.elapsed()
    );
    engine.shutdown().await;
}

/// Never answers the first call it gets (a stuck inference server that keeps the
/// connection open); plays the reference otherwise.
struct HangOnce {
    hung: std::sync::Mutex<Option<String>>,
}

impl Policy for HangOnce {
    fn name(&self) -> &str {
        "hang-once"
    }
    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        async move {
            let first = {
                let mut hung = self.hung.lock().unwrap();
                let first = hung.is_none();
                if first {
                    *hung = Some(input.task.id.to_string());
                }
                first
            };
            if first {
                std::future::pending::<()>().await;
            }
            ScriptedPolicy.decide(input).await
        }
        .boxed()
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn the_watchdog_takes_back_a_stuck_episode_which_is_then_rerun(pool: PgPool) {
    let hang = Arc::new(HangOnce {
        hung: Default::default(),
    });
    let mut runner = RunnerConfig::for_this_process();
    runner.watchdog = engine::Watchdog {
        base: std::time::Duration::from_secs(4),
        per_step: std::time::Duration::from_secs(1),
    };
    let (engine, _sites) = engine_with(pool, vec![hang.clone()], runner).await;
    let id = engine
        .create_campaign(wiki_easy("hang-once"))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(300),
        "the stuck call held the campaign up: {:?}",
        started.elapsed()
    );
    let view = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(
        (view.counts.finished, view.counts.failed),
        (view.total_episodes, 0)
    );
    let stuck = hang.hung.lock().unwrap().clone().unwrap();
    let (eps, _) = engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap();
    let unsolved: Vec<_> = eps
        .iter()
        .filter(|e| e.success != Some(true))
        .map(|e| (&e.task_id, &e.end_reason, e.attempts, &e.last_error))
        .collect();
    assert!(
        unsolved.is_empty(),
        "the scripted policy solves them all: {unsolved:?}"
    );
    let e = eps.iter().find(|e| e.task_id == stuck).unwrap();
    assert_eq!(e.attempts, 2, "taken back once, then run again");
    let why = e.last_error.as_deref().unwrap();
    assert!(why.starts_with("watchdog"), "{why}");
    engine.shutdown().await;
}
