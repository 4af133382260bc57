//! The runner under real failures, with real Chromium, real Postgres and the bundled
//! practice sites: a browser SIGKILLed mid-episode is replaced and its episodes retried; a
//! policy backend that is down ends in recorded infrastructure failures, never in scores.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use browser_pool::{BrowserPool, PoolConfig};
use engine::policy::{Decision, Policy, PolicyError, PolicyRegistry, ScriptedPolicy, StepInput};
use engine::runner::RunnerConfig;
use engine::sites::SitesServer;
use engine::store::{EpisodeFilter, Store, TaskFilter};
use engine::{CampaignSpec, Engine};
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::PgPool;

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

async fn engine(pool: PgPool, extra: Vec<Arc<dyn Policy>>) -> (Engine, SitesServer) {
    let sites = SitesServer::start(IpAddr::V4(Ipv4Addr::LOCALHOST), None)
        .await
        .unwrap();
    let mut policies = PolicyRegistry::builtin();
    for p in extra {
        policies.register(p);
    }
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.contexts_per_browser = 2;
    let engine = Engine::new(
        Store::from_pool(pool),
        cfg,
        RunnerConfig::for_this_process(),
        policies,
    );
    let report = engine.register_bundled(sites.bases()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    (engine, sites)
}

fn wiki_easy(policy: &str) -> CampaignSpec {
    CampaignSpec {
        policy: Some(policy.into()),
        tasks: Some(TaskFilter {
            site: Some("wiki".into()),
            difficulty: Some("easy".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
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
    assert_eq!(engine.run_campaign(id).await.unwrap(), "completed");
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
        .list_episodes(
            &EpisodeFilter {
                campaign: Some(id),
                ..Default::default()
            },
            100,
            0,
        )
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

#[sqlx::test(migrator = "engine::store::MIGRATOR")]
async fn an_unavailable_policy_fails_episodes_with_a_reason_and_the_campaign_ends(pool: PgPool) {
    let (engine, _sites) = engine(pool, vec![Arc::new(Down)]).await;
    let mut spec = wiki_easy("down");
    spec.max_attempts = Some(2);
    let id = engine.create_campaign(spec).await.unwrap();
    assert_eq!(engine.run_campaign(id).await.unwrap(), "completed");
    let view = engine.store().get_campaign(id).await.unwrap().unwrap();
    assert_eq!(
        (view.counts.failed, view.counts.finished),
        (view.total_episodes, 0)
    );
    assert_eq!(view.success_rate, None, "nothing was scored");
    let (eps, _) = engine
        .store()
        .list_episodes(
            &EpisodeFilter {
                campaign: Some(id),
                ..Default::default()
            },
            100,
            0,
        )
        .await
        .unwrap();
    for e in eps {
        assert_eq!(e.attempts, 2);
        assert!(e.last_error.unwrap().contains("connection refused"));
        assert_eq!(e.success, None);
    }
    engine.shutdown().await;
}
