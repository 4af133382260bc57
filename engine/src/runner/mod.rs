//! Runs campaigns.
//!
//! Episode workers claim episodes from the store (leases in Postgres, so any number of
//! runner processes can share a campaign), drive them in the browser pool, and hand each
//! finished episode to the [`pipeline`]: a judge queue, then a store writer. Infrastructure
//! failures put the episode back for a retry (up to the campaign's limit) with the reason
//! recorded, and are never scored.
//!
//! Two schedules: `async` (each episode its own state machine, no barriers; policy
//! requests meet in the policy's own batching queue) and `lockstep` (every active episode
//! steps together with one batched policy call per step: the naive baseline, kept to
//! measure the difference).

mod capture;
mod decide;
pub(crate) mod episode;
mod lockstep;
mod pipeline;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use browser_pool::BrowserPool;
use tokio::sync::{Mutex, broadcast, watch};
use uuid::Uuid;

pub use crate::snapshot::PageSnapshot;
pub use decide::POLICY_CALL_RETRIES;
pub use episode::{EpisodeRun, EpisodeTraffic, InfraError};
pub(crate) use pipeline::{Judging, judge_finished};
pub use pipeline::{LeaseGuard, Pipeline, Work};

use crate::campaign::{CampaignConfig, Mode, TrafficPlan};
use crate::drain::Drain;
use crate::error::EngineError;
use metrics::METRICS;
use policy::{Policy, PolicyRegistry};
use store::{ClaimedEpisode, Status, Store};

/// What the runner reports as it goes (progress bars, logs, live views).
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// A campaign started or resumed.
    CampaignStarted {
        /// Campaign.
        campaign: Uuid,
        /// Episodes planned.
        total: i64,
        /// Episodes already done when it (re)started.
        done: i64,
    },
    /// An episode was stored.
    EpisodeFinished {
        /// Campaign.
        campaign: Uuid,
        /// Episode.
        episode: Uuid,
        /// Task.
        task_id: String,
        /// Judged successful.
        success: bool,
        /// Steps taken.
        steps: usize,
    },
    /// An episode hit an infrastructure failure.
    EpisodeFailed {
        /// Campaign.
        campaign: Uuid,
        /// Episode.
        episode: Uuid,
        /// What went wrong.
        error: String,
        /// No retries left: the episode is `failed`.
        gave_up: bool,
    },
    /// A campaign stopped running.
    CampaignEnded {
        /// Campaign.
        campaign: Uuid,
        /// Its status now.
        status: Status,
    },
}

/// Knobs of a runner process.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Identifies this runner in episode leases.
    pub owner: String,
    /// Lease length; a runner that dies loses its episodes after this long.
    pub lease: Duration,
    /// Judge workers per campaign.
    pub judges: usize,
    /// The watchdog's limit for one episode: `base` plus `per_step` for each step of its
    /// horizon. An episode past it is abandoned as an infrastructure failure (retried).
    pub watchdog: Watchdog,
}

/// How long an episode may run before the watchdog takes it back.
#[derive(Debug, Clone, Copy)]
pub struct Watchdog {
    /// Fixed allowance (lease, start page, environment setup, judging snapshot).
    pub base: Duration,
    /// Allowance per step of the horizon (policy call, action, settling, observation).
    pub per_step: Duration,
}

impl Watchdog {
    /// The limit for an episode of at most `max_steps` steps.
    pub fn limit(&self, max_steps: u32) -> Duration {
        self.base + self.per_step * max_steps
    }
}

impl Default for Watchdog {
    /// Generous, but finite: a stuck episode is noticed within minutes.
    fn default() -> Watchdog {
        Watchdog {
            base: Duration::from_secs(60),
            per_step: Duration::from_secs(30),
        }
    }
}

impl RunnerConfig {
    /// A unique owner name for this process, a 60 s lease.
    pub fn for_this_process() -> RunnerConfig {
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
        RunnerConfig {
            owner: format!(
                "{}:{}:{}",
                host.trim(),
                std::process::id(),
                Uuid::new_v4().simple()
            ),
            lease: Duration::from_secs(60),
            judges: 2,
            watchdog: Watchdog::default(),
        }
    }
}

/// Runs campaigns against one browser pool.
#[derive(Clone)]
pub struct Runner {
    store: Store,
    pool: BrowserPool,
    policies: PolicyRegistry,
    cfg: RunnerConfig,
    events: broadcast::Sender<RunEvent>,
    judge: Option<Arc<crate::judge::ModelJudge>>,
    drain: Arc<Drain>,
}

/// One campaign's run: what every worker shares.
struct CampaignRun {
    id: Uuid,
    config: CampaignConfig,
    policy: Arc<dyn Policy>,
    pipeline: Pipeline,
    cut: watch::Receiver<bool>,
    tasks: Mutex<HashMap<String, Arc<tasks::Task>>>,
}

impl Runner {
    /// A runner; events go to `events`.
    pub fn new(
        store: Store,
        pool: BrowserPool,
        policies: PolicyRegistry,
        cfg: RunnerConfig,
        events: broadcast::Sender<RunEvent>,
    ) -> Runner {
        METRICS.pool_capacity.set(pool.config().capacity() as i64);
        Runner {
            store,
            pool,
            policies,
            cfg,
            events,
            judge: None,
            drain: Arc::new(Drain::default()),
        }
    }

    /// Takes leases under `drain`: none once it stops, each counted while held.
    pub fn with_drain(mut self, drain: Arc<Drain>) -> Runner {
        self.drain = drain;
        self
    }

    /// Facts in words are verified by this model judge.
    pub fn with_model_judge(mut self, judge: Option<Arc<crate::judge::ModelJudge>>) -> Runner {
        self.judge = judge;
        self
    }

    fn emit(&self, e: RunEvent) {
        // Nobody listening is fine.
        let _ = self.events.send(e);
    }

    /// Runs (or resumes) a campaign until no episode is left, or until it is paused or
    /// cancelled. Returns its status afterwards.
    pub async fn run_campaign(&self, id: Uuid) -> Result<Status, EngineError> {
        let view = self
            .store
            .get_campaign(id)
            .await?
            .ok_or(EngineError::NotFound("campaign"))?;
        // A stopping process starts nothing: the campaign stays as it is for the next.
        if view.status.is_ended() || view.status == Status::Paused || self.drain.stopping() {
            return Ok(view.status);
        }
        let config: CampaignConfig = serde_json::from_value(view.config.clone())
            .map_err(|e| EngineError::Internal(format!("campaign config: {e}")))?;
        let Some(policy) = self.policies.get(&config.policy) else {
            let msg = format!(
                "policy `{}` is not available in this process",
                config.policy
            );
            self.store
                .set_campaign_status(id, Status::Failed, Some(&msg))
                .await?;
            return Err(EngineError::Internal(msg));
        };
        self.store
            .set_campaign_status(id, Status::Running, None)
            .await?;
        self.emit(RunEvent::CampaignStarted {
            campaign: id,
            total: view.total_episodes,
            done: view.counts.finished + view.counts.failed,
        });
        let capacity = self.pool.config().capacity();
        let workers = match config.concurrency as usize {
            0 => capacity,
            n => n.min(capacity),
        };
        let (cut_tx, cut) = watch::channel(false);
        let monitor = config
            .stragglers
            .map(|s| tokio::spawn(watch_stragglers(self.store.clone(), id, s, cut_tx)));
        let run = Arc::new(CampaignRun {
            id,
            pipeline: Pipeline::start(
                self.store.clone(),
                self.cfg.owner.clone(),
                self.events.clone(),
                self.cfg.judges,
                workers,
                self.judge.clone(),
                pipeline::Judging {
                    binary: config.binary_judge,
                    critic: config.critic,
                },
            ),
            config,
            policy,
            cut,
            tasks: Mutex::new(HashMap::new()),
        });
        let result = match run.config.mode {
            Mode::Async => {
                let results =
                    futures::future::join_all((0..workers).map(|_| self.worker(&run))).await;
                results
                    .into_iter()
                    .collect::<Result<Vec<()>, EngineError>>()
                    .map(|_| ())
            }
            Mode::Lockstep => lockstep::run(self, &run, workers).await,
        };
        if let Some(m) = monitor {
            m.abort();
        }
        let Ok(run) = Arc::try_unwrap(run) else {
            return Err(EngineError::Internal(
                "a worker outlived its campaign".into(),
            ));
        };
        run.pipeline.close().await;
        if let Err(e) = result {
            self.store
                .set_campaign_status(id, Status::Failed, Some(&e.to_string()))
                .await?;
            self.emit(RunEvent::CampaignEnded {
                campaign: id,
                status: Status::Failed,
            });
            return Err(e);
        }
        let mut status = self
            .store
            .campaign_status(id)
            .await?
            .ok_or(EngineError::NotFound("campaign"))?;
        if status == Status::Running {
            let v = self
                .store
                .get_campaign(id)
                .await?
                .ok_or(EngineError::NotFound("campaign"))?;
            if v.counts.pending + v.counts.running == 0 {
                // Only from running: a cancel that came meanwhile stands.
                status = if self.store.complete_campaign(id).await? {
                    Status::Completed
                } else {
                    self.store.campaign_status(id).await?.unwrap_or(status)
                };
            }
        }
        self.emit(RunEvent::CampaignEnded {
            campaign: id,
            status,
        });
        Ok(status)
    }

    /// Claims and runs episodes one at a time until the campaign has none left or stops.
    async fn worker(&self, run: &CampaignRun) -> Result<(), EngineError> {
        loop {
            match self.next_claim(run).await? {
                Claim::Episode(ep, lease) => self.run_one(run, ep, lease).await?,
                Claim::Wait => tokio::time::sleep(Duration::from_millis(500)).await,
                Claim::Done => return Ok(()),
            }
        }
    }

    /// The next episode to run, or whether to wait or stop.
    async fn next_claim(&self, run: &CampaignRun) -> Result<Claim, EngineError> {
        if self.store.campaign_status(run.id).await? != Some(Status::Running) {
            return Ok(Claim::Done);
        }
        if *run.cut.borrow() || self.drain.stopping() {
            return Ok(Claim::Done);
        }
        if let Some(ep) = self
            .store
            .claim_episode(run.id, &self.cfg.owner, self.cfg.lease)
            .await?
        {
            let lease = LeaseGuard::start(
                self.store.clone(),
                self.cfg.owner.clone(),
                self.cfg.lease,
                ep.id,
                self.drain.hold(),
            );
            return Ok(Claim::Episode(ep, lease));
        }
        let v = self
            .store
            .get_campaign(run.id)
            .await?
            .ok_or(EngineError::NotFound("campaign"))?;
        // Others hold the rest; their leases may yet expire and come back to us.
        Ok(if v.counts.pending + v.counts.running == 0 {
            Claim::Done
        } else {
            Claim::Wait
        })
    }

    /// Turns a claim into something runnable, or gives it up (returns `None`).
    async fn prepare(
        &self,
        run: &CampaignRun,
        ep: &ClaimedEpisode,
    ) -> Result<Option<EpisodeRun>, EngineError> {
        if ep.attempts > run.config.max_attempts as i32 {
            let reason = format!(
                "gave up after {} attempts; last error: {}",
                ep.attempts - 1,
                ep.last_error
                    .as_deref()
                    .unwrap_or("lease expired (runner died?)")
            );
            self.give_up(run.id, ep.id, reason).await?;
            return Ok(None);
        }
        let task = {
            let mut cache = run.tasks.lock().await;
            match cache.get(&ep.task_id) {
                Some(t) => Some(t.clone()),
                None => match self.store.load_task(&ep.task_id).await {
                    Ok(Some(t)) => {
                        let t = Arc::new(t);
                        cache.insert(ep.task_id.clone(), t.clone());
                        Some(t)
                    }
                    Ok(None) => None,
                    Err(e) => {
                        self.give_up(run.id, ep.id, format!("task {}: {e}", ep.task_id))
                            .await?;
                        return Ok(None);
                    }
                },
            }
        };
        let Some(task) = task else {
            self.give_up(
                run.id,
                ep.id,
                format!("task {} no longer exists", ep.task_id),
            )
            .await?;
            return Ok(None);
        };
        let traffic = match run.config.traffic {
            TrafficPlan::Live => EpisodeTraffic::Live,
            TrafficPlan::Record => EpisodeTraffic::Record(run.id),
            TrafficPlan::Replay {
                recording,
                unmatched,
            } => {
                let exchanges = self
                    .store
                    .replay_exchanges(recording, &ep.task_id, ep.rollout)
                    .await?;
                let recording = browser_pool::Recording::new(crate::recordings::to_pool(exchanges));
                EpisodeTraffic::Replay(Arc::new(recording), unmatched.to_pool())
            }
        };
        Ok(Some(EpisodeRun {
            traffic,
            allowed_domains: run.config.allowed_domains.clone().into(),
            id: ep.id,
            max_steps: run.config.horizon(task.max_steps),
            // A task made for a screen (MiniWoB++'s) renders at it in any campaign.
            screen: task.screen.or(run.config.screen),
            task,
            // The version a following policy serves now, kept to the episode's end.
            policy: run.policy.pinned().unwrap_or_else(|| run.policy.clone()),
            seed: ep.seed as u64,
            sample: run.config.instance_of(ep.rollout.max(0) as u32).1,
            answer_checks: run.config.answer_checks,
            blocks: match (
                run.config.detect_blocks,
                run.config.confirm_blocks,
                &self.judge,
            ) {
                (false, _, _) => crate::blocked::BlockCheck::Off,
                (true, true, Some(judge)) => crate::blocked::BlockCheck::Confirmed(judge.clone()),
                (true, _, _) => crate::blocked::BlockCheck::Rules,
            },
            max_invalid_outputs: episode::MAX_POLICY_ERRORS,
        }))
    }

    async fn run_one(
        &self,
        run: &CampaignRun,
        ep: ClaimedEpisode,
        lease: LeaseGuard,
    ) -> Result<(), EngineError> {
        let Some(er) = self.prepare(run, &ep).await? else {
            return Ok(());
        };
        let limit = self.cfg.watchdog.limit(er.max_steps);
        let span = tracing::info_span!("episode", campaign = %run.id, episode = %ep.id, task = %ep.task_id, attempt = ep.attempts);
        let outcome = tracing::Instrument::instrument(
            tokio::time::timeout(limit, episode::run_alone(&self.pool, er, &run.cut)),
            span,
        )
        .await;
        match outcome {
            Ok(Ok(finished)) => {
                run.pipeline
                    .submit(Work {
                        campaign: run.id,
                        finished,
                        lease,
                    })
                    .await
            }
            Ok(Err(e)) => self.failed(run, &ep, &e.to_string(), e.kind()).await?,
            Err(_) => {
                let e = InfraError::Watchdog(limit);
                self.failed(run, &ep, &e.to_string(), e.kind()).await?;
            }
        }
        Ok(())
    }

    /// Records an infrastructure failure: back to pending, or failed when out of attempts.
    async fn failed(
        &self,
        run: &CampaignRun,
        ep: &ClaimedEpisode,
        error: &str,
        kind: &str,
    ) -> Result<(), EngineError> {
        let gave_up = ep.attempts >= run.config.max_attempts as i32;
        let reason = format!("{kind}: {error}");
        let held = self
            .store
            .release_episode(ep.id, &self.cfg.owner, &reason, gave_up)
            .await?;
        if !held {
            // Handed back by a clean stop (or taken over after a lapsed lease): not this
            // runner's failure to count.
            return Ok(());
        }
        tracing::warn!(episode = %ep.id, attempt = ep.attempts, gave_up, error = %reason, "episode failed (infrastructure)");
        METRICS.retries.inc(kind);
        if gave_up {
            METRICS.episodes_failed.inc();
        }
        self.emit(RunEvent::EpisodeFailed {
            campaign: run.id,
            episode: ep.id,
            error: reason,
            gave_up,
        });
        Ok(())
    }

    async fn give_up(
        &self,
        campaign: Uuid,
        episode: Uuid,
        reason: String,
    ) -> Result<(), EngineError> {
        METRICS.episodes_failed.inc();
        self.store
            .release_episode(episode, &self.cfg.owner, &reason, true)
            .await?;
        self.emit(RunEvent::EpisodeFailed {
            campaign,
            episode,
            error: reason,
            gave_up: true,
        });
        Ok(())
    }
}

enum Claim {
    Episode(ClaimedEpisode, LeaseGuard),
    Wait,
    Done,
}

/// Once enough of the campaign is done, waits out the grace period, then cuts the rest:
/// running episodes end as `timeout` at their next step, unstarted ones are not run.
async fn watch_stragglers(
    store: Store,
    id: Uuid,
    s: crate::campaign::Stragglers,
    cut: watch::Sender<bool>,
) {
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let Ok(Some(v)) = store.get_campaign(id).await else {
            continue;
        };
        let done = (v.counts.finished + v.counts.failed) as f64;
        if v.total_episodes > 0 && done / v.total_episodes as f64 >= s.cutoff {
            break;
        }
    }
    tokio::time::sleep(Duration::from_secs(s.grace_secs)).await;
    tracing::info!(campaign = %id, "straggler cut-off: ending the remaining episodes");
    let _ = cut.send(true);
    match store
        .fail_pending(id, "not started: cut off as a straggler")
        .await
    {
        Ok(n) if n > 0 => {
            tracing::info!(campaign = %id, episodes = n, "unstarted stragglers not run")
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not mark unstarted stragglers"),
    }
}
