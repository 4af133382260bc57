//! Runs campaigns: workers claim episodes from the store, run them in the browser pool,
//! and store each finished episode atomically. Infrastructure failures put the episode
//! back for a retry (up to the campaign's limit) and are never scored.

mod episode;
mod probe;

use std::sync::Arc;
use std::time::Duration;

use browser_pool::BrowserPool;
use tokio::sync::broadcast;
use uuid::Uuid;

pub use episode::InfraError;

use crate::campaign::CampaignConfig;
use crate::error::EngineError;
use crate::policy::{Policy, PolicyRegistry};
use crate::store::{ClaimedEpisode, Store};

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
        status: String,
    },
}

/// Knobs of a runner process.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Identifies this runner in episode leases.
    pub owner: String,
    /// Lease length; a runner that dies loses its episodes after this long.
    pub lease: Duration,
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
}

const TERMINAL: &[&str] = &["completed", "cancelled", "failed"];

impl Runner {
    /// A runner; events go to `events`.
    pub fn new(
        store: Store,
        pool: BrowserPool,
        policies: PolicyRegistry,
        cfg: RunnerConfig,
        events: broadcast::Sender<RunEvent>,
    ) -> Runner {
        Runner {
            store,
            pool,
            policies,
            cfg,
            events,
        }
    }

    fn emit(&self, e: RunEvent) {
        // Nobody listening is fine.
        let _ = self.events.send(e);
    }

    /// Runs (or resumes) a campaign until no episode is left, or until it is paused or
    /// cancelled. Returns its status afterwards.
    pub async fn run_campaign(&self, id: Uuid) -> Result<String, EngineError> {
        let view = self
            .store
            .get_campaign(id)
            .await?
            .ok_or(EngineError::NotFound("campaign"))?;
        if TERMINAL.contains(&view.status.as_str()) || view.status == "paused" {
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
                .set_campaign_status(id, "failed", Some(&msg))
                .await?;
            return Err(EngineError::Internal(msg));
        };
        self.store.set_campaign_status(id, "running", None).await?;
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
        let config = Arc::new(config);
        let results = futures::future::join_all(
            (0..workers).map(|_| self.worker(id, &config, policy.as_ref())),
        )
        .await;
        let status = self.store.campaign_status(id).await?.unwrap_or_default();
        if let Some(Err(e)) = results.into_iter().find(|r| r.is_err()) {
            self.store
                .set_campaign_status(id, "failed", Some(&e.to_string()))
                .await?;
            self.emit(RunEvent::CampaignEnded {
                campaign: id,
                status: "failed".into(),
            });
            return Err(e);
        }
        let status = if status == "running" {
            self.store
                .set_campaign_status(id, "completed", None)
                .await?;
            "completed".to_string()
        } else {
            status
        };
        self.emit(RunEvent::CampaignEnded {
            campaign: id,
            status: status.clone(),
        });
        Ok(status)
    }

    /// Claims and runs episodes until the campaign has none left or stops running.
    async fn worker(
        &self,
        id: Uuid,
        config: &CampaignConfig,
        policy: &dyn Policy,
    ) -> Result<(), EngineError> {
        loop {
            if self.store.campaign_status(id).await?.as_deref() != Some("running") {
                return Ok(());
            }
            match self
                .store
                .claim_episode(id, &self.cfg.owner, self.cfg.lease)
                .await?
            {
                Some(ep) => self.run_episode(id, config, policy, ep).await?,
                None => {
                    let v = self
                        .store
                        .get_campaign(id)
                        .await?
                        .ok_or(EngineError::NotFound("campaign"))?;
                    if v.counts.pending + v.counts.running == 0 {
                        return Ok(());
                    }
                    // Others hold the rest; their leases may yet expire and come back to us.
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
    }

    async fn run_episode(
        &self,
        campaign: Uuid,
        config: &CampaignConfig,
        policy: &dyn Policy,
        ep: ClaimedEpisode,
    ) -> Result<(), EngineError> {
        let owner = &self.cfg.owner;
        let give_up = |store: Store, reason: String| async move {
            store.release_episode(ep.id, owner, &reason, true).await
        };
        if ep.attempts > config.max_attempts as i32 {
            let reason = format!(
                "gave up after {} attempts; last error: {}",
                ep.attempts - 1,
                ep.last_error
                    .as_deref()
                    .unwrap_or("lease expired (runner died?)")
            );
            give_up(self.store.clone(), reason.clone()).await?;
            self.emit(RunEvent::EpisodeFailed {
                campaign,
                episode: ep.id,
                error: reason,
                gave_up: true,
            });
            return Ok(());
        }
        let task = match self.store.load_task(&ep.task_id).await {
            Ok(Some(t)) => t,
            Ok(None) => {
                give_up(
                    self.store.clone(),
                    format!("task {} no longer exists", ep.task_id),
                )
                .await?;
                return Ok(());
            }
            Err(e) => {
                give_up(self.store.clone(), e.to_string()).await?;
                return Ok(());
            }
        };
        let max_steps = config.horizon(task.max_steps);
        // A stuck episode (hung page, hung policy) is cut off and retried.
        let limit = Duration::from_secs(60) + Duration::from_secs(30) * max_steps;
        let heartbeat = self.spawn_heartbeat(ep.id);
        let span = tracing::info_span!("episode", campaign = %campaign, episode = %ep.id, task = %ep.task_id, attempt = ep.attempts);
        let run = episode::run(
            &self.pool,
            &self.store,
            episode::EpisodeRun {
                id: ep.id,
                task: &task,
                policy,
                max_steps,
                seed: ep.seed as u64,
            },
        );
        let outcome = tracing::Instrument::instrument(tokio::time::timeout(limit, run), span).await;
        heartbeat.abort();
        let failure = match outcome {
            Ok(Ok(record)) => {
                let (success, steps) = (record.success, record.steps.len());
                if self.store.finish_episode(owner, &record).await? {
                    self.emit(RunEvent::EpisodeFinished {
                        campaign,
                        episode: ep.id,
                        task_id: ep.task_id.clone(),
                        success,
                        steps,
                    });
                } else {
                    tracing::warn!(episode = %ep.id, "lost the lease before storing; another runner owns the episode");
                }
                return Ok(());
            }
            Ok(Err(e)) => format!("{}: {e}", e.kind()),
            Err(_) => format!("watchdog: episode exceeded {limit:?}"),
        };
        let gave_up = ep.attempts >= config.max_attempts as i32;
        tracing::warn!(episode = %ep.id, attempt = ep.attempts, gave_up, error = %failure, "episode failed (infrastructure)");
        self.store
            .release_episode(ep.id, owner, &failure, gave_up)
            .await?;
        self.emit(RunEvent::EpisodeFailed {
            campaign,
            episode: ep.id,
            error: failure,
            gave_up,
        });
        Ok(())
    }

    fn spawn_heartbeat(&self, episode: Uuid) -> tokio::task::JoinHandle<()> {
        let (store, owner, lease) = (self.store.clone(), self.cfg.owner.clone(), self.cfg.lease);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(lease / 3).await;
                match store.heartbeat(episode, &owner, lease).await {
                    Ok(true) => {}
                    Ok(false) => return,
                    Err(e) => {
                        tracing::warn!(episode = %episode, error = %e, "lease heartbeat failed")
                    }
                }
            }
        })
    }
}
