//! The facade the CLI and the web server use: the store, campaign creation, a scheduler
//! that runs queued campaigns one after another, and a browser pool launched on first use.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use browser_pool::{BrowserPool, PoolConfig, PoolScreen, Screen};
use tokio::sync::{Mutex, OnceCell, broadcast, mpsc};
use uuid::Uuid;

use crate::campaign::{CampaignSpec, TrafficPlan, episode_seed};
use crate::drain::{Drain, Drained};
use crate::error::EngineError;
use crate::runner::{RunEvent, Runner, RunnerConfig};
use crate::sessions::{
    Client, OpenRequest, SessionError, SessionLimits, SessionState, Sessions, Snapshot,
};
use policy::PolicyRegistry;
use store::{PlannedEpisode, Status, Store};

/// The tag every bundled task carries, so campaigns can select the bundled suite.
pub const BUNDLED_TAG: &str = "bundled";

/// A handle on the engine. Cloning is cheap.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    // Behind a lock so a training run's policies can join a running server's engine;
    // each campaign run takes a snapshot.
    policies: std::sync::RwLock<PolicyRegistry>,
    pool_cfg: PoolConfig,
    runner_cfg: RunnerConfig,
    pool: OnceCell<BrowserPool>,
    events: broadcast::Sender<RunEvent>,
    queue: mpsc::Sender<Uuid>,
    queue_rx: Mutex<Option<mpsc::Receiver<Uuid>>>,
    judge: std::sync::RwLock<Option<Arc<crate::judge::ModelJudge>>>,
    drain: Arc<Drain>,
    sessions: Arc<Sessions>,
}

/// What a bundled-suite registration did.
#[derive(Debug, Clone, Default)]
pub struct BundledReport {
    /// Tasks registered or updated.
    pub registered: usize,
    /// Lines that did not validate, as `file:line: error`.
    pub errors: Vec<String>,
}

impl Engine {
    /// An engine over a migrated store. Nothing runs until [`Engine::start_scheduler`] or
    /// [`Engine::run_campaign`].
    pub fn new(
        store: Store,
        pool_cfg: PoolConfig,
        runner_cfg: RunnerConfig,
        policies: PolicyRegistry,
    ) -> Engine {
        let (events, _) = broadcast::channel(1024);
        let (queue, rx) = mpsc::channel(1024);
        Engine {
            inner: Arc::new(Inner {
                store,
                policies: std::sync::RwLock::new(policies),
                pool_cfg: pool_cfg.clone(),
                runner_cfg,
                pool: OnceCell::new(),
                events,
                queue,
                queue_rx: Mutex::new(Some(rx)),
                judge: std::sync::RwLock::new(None),
                drain: Arc::new(Drain::default()),
                sessions: Arc::new(Sessions::with_limits(SessionLimits::for_pool(
                    pool_cfg.browsers * pool_cfg.contexts_per_browser,
                ))),
            }),
        }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Names of the policies campaigns may use.
    pub fn policy_names(&self) -> Vec<String> {
        self.inner.policies.read().expect("policy lock").names()
    }

    /// Adds (or replaces) a policy while the engine runs: campaigns started afterwards may
    /// use it (a training run executed by a server registers its two policies so).
    pub fn register_policy(&self, policy: Arc<dyn policy::Policy>) {
        self.inner
            .policies
            .write()
            .expect("policy lock")
            .register(policy);
    }

    /// Removes a policy [`Engine::register_policy`] added, once nothing will run it (a
    /// training run's, when the run stops here); campaigns running keep their snapshot.
    pub fn unregister_policy(&self, name: &str) {
        self.inner
            .policies
            .write()
            .expect("policy lock")
            .remove(name);
    }

    /// Progress events of every campaign this engine runs.
    pub fn subscribe(&self) -> broadcast::Receiver<RunEvent> {
        self.inner.events.subscribe()
    }

    /// The browser pool, launched on first use.
    pub async fn pool(&self) -> Result<BrowserPool, EngineError> {
        let pool = self
            .inner
            .pool
            .get_or_try_init(|| BrowserPool::launch(self.inner.pool_cfg.clone()))
            .await?;
        Ok(pool.clone())
    }

    /// The pool's occupancy, once it has been launched.
    pub fn pool_stats(&self) -> Option<browser_pool::PoolStats> {
        self.inner.pool.get().map(BrowserPool::stats)
    }

    async fn runner(&self) -> Result<Runner, EngineError> {
        Ok(Runner::new(
            self.inner.store.clone(),
            self.pool().await?,
            self.inner.policies.read().expect("policy lock").clone(),
            self.inner.runner_cfg.clone(),
            self.inner.events.clone(),
        )
        .with_model_judge(self.model_judge())
        .with_drain(self.inner.drain.clone()))
    }

    /// Sets the model judge that verifies facts written in words.
    pub fn set_model_judge(&self, judge: Arc<crate::judge::ModelJudge>) {
        *self.inner.judge.write().expect("judge lock") = Some(judge);
    }

    /// The model judge, if one is set.
    pub fn model_judge(&self) -> Option<Arc<crate::judge::ModelJudge>> {
        self.inner.judge.read().expect("judge lock").clone()
    }

    /// Validates a campaign request, plans its episodes (tasks × rollouts, each with its
    /// seed) and stores it as `queued`; the scheduler, if started, picks it up.
    pub async fn create_campaign(&self, spec: CampaignSpec) -> Result<Uuid, EngineError> {
        // A fresh id names no campaign yet: nothing to look up.
        self.insert_campaign(Uuid::new_v4(), spec).await
    }

    /// Creates a campaign under `id`, or returns `id` if a campaign already has it (the
    /// spec is then not looked at): a caller that derives the id from what the campaign is
    /// for (a training run's iteration) can call this again after a crash without leaving
    /// a second, orphaned campaign.
    pub async fn create_campaign_as(
        &self,
        id: Uuid,
        spec: CampaignSpec,
    ) -> Result<Uuid, EngineError> {
        if self.inner.store.get_campaign(id).await?.is_some() {
            return Ok(id);
        }
        self.insert_campaign(id, spec).await
    }

    async fn insert_campaign(&self, id: Uuid, spec: CampaignSpec) -> Result<Uuid, EngineError> {
        let mut config = spec
            .validate(&self.policy_names())
            .map_err(EngineError::Invalid)?;
        // Every campaign records the screen its episodes render at, so that workers started
        // with other browser options, and replays, agree on what the policy saw.
        config
            .screen
            .get_or_insert_with(|| Screen::of(&self.inner.pool_cfg));
        if let TrafficPlan::Replay { recording, .. } = config.traffic
            && self.inner.store.get_recording(recording).await?.is_none()
        {
            return Err(EngineError::Invalid(vec![tasks::FieldError {
                field: "replay".into(),
                message: format!(
                    "no recording {recording} (a recording campaign's id, or an imported HAR's: see `surfgym har list`)"
                ),
            }]));
        }
        let tasks = self.inner.store.load_tasks(&config.tasks).await?;
        // Named tasks must all exist: running the ones that do would silently measure
        // something other than what was asked.
        let unknown: Vec<&str> = config
            .tasks
            .ids
            .iter()
            .filter(|id| !tasks.iter().any(|t| t.id.as_str() == id.as_str()))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(EngineError::Invalid(vec![tasks::FieldError {
                field: "tasks.ids".into(),
                message: format!(
                    "{} task ids name no registered task that matches the filter (register them, or leave them out): {}",
                    unknown.len(),
                    unknown.join(", ")
                ),
            }]));
        }
        if tasks.is_empty() {
            return Err(EngineError::Invalid(vec![tasks::FieldError {
                field: "tasks".into(),
                message: "no registered task matches this filter".into(),
            }]));
        }
        let allowed = |host: &str| {
            config
                .allowed_domains
                .iter()
                .any(|d| host == d || host.ends_with(&format!(".{d}")))
        };
        if !config.allowed_domains.is_empty()
            && let Some(t) = tasks.iter().find(|t| {
                !t.start_url
                    .host_str()
                    .is_some_and(|h| allowed(&h.to_ascii_lowercase()))
            })
        {
            return Err(EngineError::Invalid(vec![tasks::FieldError {
                field: "allowed_domains".into(),
                message: format!(
                    "task {} starts at {}, outside these domains (add its domain, or leave the task out)",
                    t.id, t.start_url
                ),
            }]));
        }
        if config.confirm_blocks && self.model_judge().is_none() {
            return Err(EngineError::Invalid(vec![tasks::FieldError {
                field: "confirm_blocks".into(),
                message: "no model judge is configured to confirm blocks (start surfgym with \
                          --judge-onnx-model or --judge-url, or leave confirm_blocks out)"
                    .into(),
            }]));
        }
        let judged = tasks.iter().filter(|t| t.rubric.needs_model()).count();
        if judged > 0 && self.model_judge().is_none() {
            return Err(EngineError::Invalid(vec![tasks::FieldError {
                field: "tasks".into(),
                message: format!(
                    "{judged} of these tasks have facts only a model judge can verify, and none is configured \
                     (start surfgym with --judge-onnx-model or --judge-url)"
                ),
            }]));
        }
        let mut planned = Vec::with_capacity(tasks.len() * config.rollouts_per_task as usize);
        for rollout in 0..config.rollouts_per_task {
            // The samples of one instance share its seed (and so its page and instruction).
            let (instance, _) = config.instance_of(rollout);
            for t in &tasks {
                planned.push(PlannedEpisode {
                    task_id: t.id.to_string(),
                    rollout: rollout as i32,
                    seed: episode_seed(config.seed, t.id.as_str(), instance),
                });
            }
        }
        let json =
            serde_json::to_value(&config).map_err(|e| EngineError::Internal(e.to_string()))?;
        self.inner
            .store
            .create_campaign(id, &config.name, &config.policy, &json, &planned)
            .await?;
        if config.traffic == TrafficPlan::Record {
            // Before any worker can pick the campaign up: its episodes write into it.
            self.inner
                .store
                .create_recording(id, &config.name, Some(id))
                .await?;
        }
        // A full queue only delays pickup: the scheduler also scans for queued campaigns.
        let _ = self.inner.queue.try_send(id);
        Ok(id)
    }

    /// Runs a campaign in the calling task until it is done, paused or cancelled.
    pub async fn run_campaign(&self, id: Uuid) -> Result<Status, EngineError> {
        self.runner().await?.run_campaign(id).await
    }

    /// Pauses a running or queued campaign: workers finish their current episode and stop.
    pub async fn pause_campaign(&self, id: Uuid) -> Result<(), EngineError> {
        self.transition(id, &[Status::Queued, Status::Running], Status::Paused)
            .await
    }

    /// Resumes a paused campaign.
    pub async fn resume_campaign(&self, id: Uuid) -> Result<(), EngineError> {
        self.transition(id, &[Status::Paused], Status::Queued)
            .await?;
        let _ = self.inner.queue.try_send(id);
        Ok(())
    }

    /// Cancels a campaign: its episodes that have not started end as `cancelled`; those
    /// running end as they do (cancelled rather than retried if they fail).
    pub async fn cancel_campaign(&self, id: Uuid) -> Result<(), EngineError> {
        self.transition(id, Status::UNFINISHED, Status::Cancelled)
            .await?;
        self.inner.store.cancel_unrun(id).await?;
        Ok(())
    }

    async fn transition(&self, id: Uuid, from: &[Status], to: Status) -> Result<(), EngineError> {
        if self.inner.store.campaign_is_interactive(id).await? == Some(true) {
            return Err(EngineError::Conflict(
                "an interactive campaign is its clients' environment sessions: it is never \
                 paused, resumed or cancelled (end a session with DELETE /api/sessions/ID)"
                    .into(),
            ));
        }
        let status = self
            .inner
            .store
            .campaign_status(id)
            .await?
            .ok_or(EngineError::NotFound("campaign"))?;
        if !from.contains(&status) {
            return Err(EngineError::Conflict(format!(
                "campaign is {status}; cannot move it to {to}"
            )));
        }
        self.inner.store.set_campaign_status(id, to, None).await?;
        Ok(())
    }

    /// Starts the background scheduler: it runs queued campaigns one at a time, starting
    /// with those left queued or running by an earlier process (which resumes them).
    /// Calling it twice does nothing.
    pub async fn start_scheduler(&self) {
        let Some(mut rx) = self.inner.queue_rx.lock().await.take() else {
            return;
        };
        // Sessions of a server that died cannot be run again by anyone: their episodes
        // end as failed rather than staying `running` for ever.
        match self.inner.store.fail_lost_sessions().await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(
                episodes = n,
                "sessions left open by a stopped server recorded as failed"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "could not check for sessions left by a stopped server")
            }
        }
        let engine = self.clone();
        tokio::spawn(async move {
            loop {
                if engine.inner.drain.stopping() {
                    return;
                }
                let pending = match engine
                    .inner
                    .store
                    .campaigns_with_status(&[Status::Running, Status::Queued])
                    .await
                {
                    Ok(ids) => ids,
                    Err(e) => {
                        tracing::error!(error = %e, "scheduler cannot read campaigns; retrying");
                        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
                        continue;
                    }
                };
                for id in pending {
                    if engine.inner.drain.stopping() {
                        return;
                    }
                    // A campaign of a policy this process lacks (a training run's, run by
                    // the process that holds the run) is left to the process that has it.
                    if let Ok(Some(c)) = engine.inner.store.get_campaign(id).await
                        && !engine.policy_names().contains(&c.policy)
                    {
                        continue;
                    }
                    let span = tracing::info_span!("campaign", campaign = %id);
                    let _g = span.enter();
                    match engine.run_campaign(id).await {
                        Ok(status) => tracing::info!(%status, "campaign ended"),
                        Err(e) => tracing::error!(error = %e, "campaign failed"),
                    }
                }
                // Sleep until a new campaign is queued (or re-scan now and then).
                if let Ok(None) =
                    tokio::time::timeout(std::time::Duration::from_secs(2), rx.recv()).await
                {
                    return;
                }
            }
        });
    }

    /// Registers the bundled suite against where its sites are served now.
    pub async fn register_bundled(
        &self,
        bases: &BTreeMap<String, String>,
    ) -> Result<BundledReport, EngineError> {
        let mut report = BundledReport::default();
        self.inner.store.serve_sites(bases);
        for line in tasks::bundled_tasks(bases) {
            match line.line.result {
                Ok(mut task) => {
                    if !task.tags.iter().any(|t| t == BUNDLED_TAG) {
                        task.tags.push(BUNDLED_TAG.to_string());
                    }
                    self.inner
                        .store
                        .upsert_task_resolved(&task, Some(bases))
                        .await?;
                    report.registered += 1;
                }
                Err(errors) => {
                    for e in errors {
                        report
                            .errors
                            .push(format!("{}:{}: {e}", line.file, line.line.line));
                    }
                }
            }
        }
        Ok(report)
    }

    /// Registers the MiniWoB++ suite (every page in `html_dir`) served at `base`.
    pub async fn register_miniwob(
        &self,
        html_dir: &std::path::Path,
        base: &str,
    ) -> Result<BundledReport, EngineError> {
        let mut report = BundledReport::default();
        let bases = BTreeMap::from([("miniwob".to_string(), base.to_string())]);
        self.inner.store.serve_sites(&bases);
        for name in crate::env::miniwob_task_names(html_dir) {
            match tasks::miniwob_task(&name, base) {
                Ok(task) => {
                    self.inner
                        .store
                        .upsert_task_resolved(&task, Some(&bases))
                        .await?;
                    report.registered += 1;
                }
                Err(errors) => report
                    .errors
                    .extend(errors.iter().map(|e| format!("miniwob {name}: {e}"))),
            }
        }
        Ok(report)
    }

    /// Stops cleanly (SIGTERM, Ctrl-C): no new lease from now on; episodes running here get
    /// `grace` to finish and be stored; the leases of those still running are handed back
    /// (pending again, the attempt not counted; nothing of them was stored, an episode
    /// being stored whole or not at all); then the browsers close. Campaigns stay queued
    /// or running for the next process.
    pub async fn shutdown_gracefully(&self, grace: Duration) -> Result<Drained, EngineError> {
        self.inner.drain.stop();
        // A session cannot outlive its server: each is ended and stored as it stands.
        self.inner.sessions.close_all().await;
        let running = self.inner.drain.leased();
        if running > 0 {
            tracing::info!(
                running,
                grace_s = grace.as_secs_f64(),
                "stopping: no new episodes; waiting for the running ones"
            );
        }
        let handed_back = if self.inner.drain.idle_within(grace).await {
            0
        } else {
            self.inner
                .store
                .hand_back_leases(&self.inner.runner_cfg.owner)
                .await?
        };
        if handed_back > 0 {
            tracing::info!(handed_back, "unfinished episodes handed back to the queue");
        }
        self.shutdown().await;
        Ok(Drained { handed_back })
    }

    /// Sets the limits on environment sessions.
    pub fn set_session_limits(&self, limits: SessionLimits) {
        self.inner.sessions.set_limits(limits);
    }

    /// The limits on environment sessions.
    pub fn session_limits(&self) -> SessionLimits {
        self.inner.sessions.limits()
    }

    /// Opens an environment session for `client` (see [`crate::sessions`]).
    pub async fn open_session(
        &self,
        client: &Client,
        request: OpenRequest,
    ) -> Result<Snapshot, SessionError> {
        let pool = self
            .pool()
            .await
            .map_err(|e| SessionError::Infra(e.to_string()))?;
        let deps = crate::sessions::Deps {
            store: self.inner.store.clone(),
            pool,
            owner: self.inner.runner_cfg.owner.clone(),
            judge: self.model_judge(),
            default_screen: Screen::of(&self.inner.pool_cfg),
        };
        self.inner.sessions.open(deps, client, request).await
    }

    /// One action of a session.
    pub async fn step_session(
        &self,
        client: &Client,
        id: Uuid,
        action: &str,
    ) -> Result<Snapshot, SessionError> {
        self.inner.sessions.step(client, id, action).await
    }

    /// Ends a session now, judged and stored as it stands.
    pub async fn close_session(&self, client: &Client, id: Uuid) -> Result<Snapshot, SessionError> {
        self.inner.sessions.close(client, id).await
    }

    /// A session's state.
    pub fn session_state(&self, client: &Client, id: Uuid) -> Result<SessionState, SessionError> {
        self.inner.sessions.state(client, id)
    }

    /// The client's open sessions.
    pub fn list_sessions(&self, client: &Client) -> Vec<SessionState> {
        self.inner.sessions.list(client)
    }

    /// Open sessions on this server.
    pub fn open_sessions(&self) -> usize {
        self.inner.sessions.open_count()
    }

    /// Closes the browsers.
    pub async fn shutdown(&self) {
        if let Some(pool) = self.inner.pool.get() {
            pool.shutdown().await;
        }
    }
}
