//! Environment sessions: episodes driven step by step by an API client (a Python trainer,
//! an OpenEnv client, a BrowserGym agent) instead of a campaign's policy.
//!
//! A session is the runner's episode state machine with the client in the policy's seat:
//! leased from the same browser pool under the same isolation, recorded step by step, and
//! judged and stored like any campaign's episode when it ends. Its episode row belongs to
//! the client's interactive campaign, which no scheduler runs.
//!
//! The table enforces the limits (open sessions in all, per client), one step at a time
//! per session, ownership (a client sees only its own sessions), and reclaims idle ones.

mod answer;
mod client_policy;
mod live;
mod request;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use browser_pool::{BrowserPool, Screen};
use store::{EndReason, Store};
use tasks::Task;
use uuid::Uuid;

use crate::judge::ModelJudge;
use crate::runner::episode::EpisodeRun;
use live::Live;

pub use answer::{Ending, SessionError, SessionState, Snapshot};
pub use client_policy::CLIENT_POLICY;
pub use request::{
    Client, Dialect, MAX_SESSION_STEPS, ObserveOptions, OpenRequest, SessionLimits, TaskChoice,
};

/// A session, locked by the step running on it.
type SharedLive = Arc<tokio::sync::Mutex<Live>>;

struct Entry {
    client: Client,
    live: SharedLive,
    last_activity: Arc<Mutex<Instant>>,
    opened: Instant,
    summary: (Uuid, Uuid, String, u64, Dialect, u32),
}

#[derive(Default)]
struct Table {
    open: HashMap<Uuid, Entry>,
    /// Sessions being opened, by client: they count against the limits already.
    opening: HashMap<String, usize>,
}

impl Table {
    fn count(&self) -> usize {
        self.open.len() + self.opening.values().sum::<usize>()
    }

    fn count_for(&self, client: &Client) -> usize {
        self.open.values().filter(|e| e.client == *client).count()
            + self.opening.get(&client.key).copied().unwrap_or(0)
    }
}

/// The open sessions of this process.
pub struct Sessions {
    table: Arc<Mutex<Table>>,
    limits: Mutex<SessionLimits>,
    reaper: std::sync::OnceLock<tokio::task::JoinHandle<()>>,
    stopping: std::sync::atomic::AtomicBool,
}

/// A reserved slot, given back unless the session opened.
struct Reservation {
    table: Arc<Mutex<Table>>,
    client: String,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = t.opening.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                t.opening.remove(&self.client);
            }
        }
    }
}

/// What opening a session needs from the engine.
pub(crate) struct Deps {
    pub store: Store,
    pub pool: BrowserPool,
    pub owner: String,
    pub judge: Option<Arc<ModelJudge>>,
    pub default_screen: Screen,
}

impl Default for Sessions {
    fn default() -> Sessions {
        Sessions {
            table: Arc::default(),
            limits: Mutex::new(SessionLimits::for_pool(4)),
            reaper: std::sync::OnceLock::new(),
            stopping: Default::default(),
        }
    }
}

impl Sessions {
    /// No session open yet, these limits.
    pub(crate) fn with_limits(limits: SessionLimits) -> Sessions {
        let s = Sessions::default();
        s.set_limits(limits);
        s
    }

    /// Sets the limits (sessions already open keep running).
    pub fn set_limits(&self, limits: SessionLimits) {
        *self.limits.lock().unwrap_or_else(|p| p.into_inner()) = limits;
    }

    /// The limits in force.
    pub fn limits(&self) -> SessionLimits {
        *self.limits.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lease(&self) -> Duration {
        // Outlives the idle limit: only a dead server lets a session's lease expire.
        self.limits().idle + Duration::from_secs(120)
    }

    fn reserve(&self, client: &Client) -> Result<Reservation, SessionError> {
        if self.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(SessionError::Stopping);
        }
        let limits = self.limits();
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let open = t.count();
        if open >= limits.max_sessions {
            return Err(SessionError::Capacity {
                scope: "on this server",
                open,
                limit: limits.max_sessions,
            });
        }
        let mine = t.count_for(client);
        if mine >= limits.per_client {
            return Err(SessionError::Capacity {
                scope: "for this token",
                open: mine,
                limit: limits.per_client,
            });
        }
        *t.opening.entry(client.key.clone()).or_default() += 1;
        Ok(Reservation {
            table: self.table.clone(),
            client: client.key.clone(),
        })
    }

    /// Opens a session: checks the limits, records its episode in the client's
    /// interactive campaign, leases a browser context and takes the first observation.
    pub(crate) async fn open(
        self: &Arc<Self>,
        deps: Deps,
        client: &Client,
        request: OpenRequest,
    ) -> Result<Snapshot, SessionError> {
        let reservation = self.reserve(client)?;
        self.start_reaper();
        let task = resolve_task(&deps.store, &request.task).await?;
        let max_steps = match request.max_steps {
            Some(0) => return Err(invalid("max_steps", "must be at least 1")),
            Some(n) if n > MAX_SESSION_STEPS => {
                return Err(invalid(
                    "max_steps",
                    &format!("must be at most {MAX_SESSION_STEPS}"),
                ));
            }
            Some(n) => n,
            None => task.max_steps.unwrap_or(crate::campaign::DEFAULT_MAX_STEPS),
        };
        let seed = i64::try_from(request.seed)
            .map_err(|_| invalid("seed", "must be at most 9223372036854775807"))?;
        let campaign = client.campaign_id();
        let config = serde_json::json!({
            "name": format!("interactive: {}", client.name),
            "interactive": true,
            "policy": CLIENT_POLICY,
            "screen": request.observe.screen.unwrap_or(deps.default_screen),
        });
        let store_err = |e: store::StoreError| SessionError::Infra(format!("store: {e}"));
        deps.store
            .ensure_interactive_campaign(
                campaign,
                &format!("interactive: {}", client.name),
                CLIENT_POLICY,
                &config,
            )
            .await
            .map_err(store_err)?;
        let episode_id = deps
            .store
            .open_session_episode(campaign, task.id.as_str(), seed, &deps.owner, self.lease())
            .await
            .map_err(store_err)?;
        let run = EpisodeRun {
            id: episode_id,
            max_steps,
            screen: task.screen.or(request.observe.screen),
            task,
            policy: Arc::new(client_policy::ClientPolicy::new(&client.name)),
            seed: request.seed,
            sample: 0,
            answer_checks: 1,
            blocks: Default::default(),
            traffic: Default::default(),
            allowed_domains: Arc::from([]),
            max_invalid_outputs: u32::MAX,
        };
        let id = Uuid::new_v4();
        let (live, snap) = Live::open(
            &deps.pool,
            deps.store.clone(),
            deps.owner.clone(),
            deps.judge.clone(),
            id,
            campaign,
            run,
            request.clone(),
        )
        .await?;
        let now = Instant::now();
        let entry = Entry {
            client: client.clone(),
            summary: (
                episode_id,
                campaign,
                snap.task_id.clone(),
                request.seed,
                request.dialect,
                max_steps,
            ),
            live: Arc::new(tokio::sync::Mutex::new(live)),
            last_activity: Arc::new(Mutex::new(now)),
            opened: now,
        };
        self.table
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .open
            .insert(id, entry);
        // Counted as open now; the slot it reserved is given back.
        drop(reservation);
        Ok(snap)
    }

    fn entry(
        &self,
        client: &Client,
        id: Uuid,
    ) -> Result<(SharedLive, Arc<Mutex<Instant>>), SessionError> {
        let t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let e = t.open.get(&id).ok_or(SessionError::NotFound(id))?;
        if e.client != *client {
            return Err(SessionError::Forbidden(id));
        }
        *e.last_activity.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        Ok((e.live.clone(), e.last_activity.clone()))
    }

    fn remove(&self, id: Uuid) {
        self.table
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .open
            .remove(&id);
    }

    /// One action. The session is gone once its episode ends (or fails).
    pub async fn step(
        &self,
        client: &Client,
        id: Uuid,
        action: &str,
    ) -> Result<Snapshot, SessionError> {
        let (live, activity) = self.entry(client, id)?;
        let mut live = live.try_lock().map_err(|_| SessionError::Busy(id))?;
        let limit = self.limits().step;
        let result = match tokio::time::timeout(limit, live.step(action)).await {
            Ok(r) => r,
            Err(_) => {
                live.fail_timed_out(limit).await;
                Err(SessionError::Infra(format!(
                    "the step took longer than {limit:?} (--session-step-secs)"
                )))
            }
        };
        *activity.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        match &result {
            Ok(snap) if snap.ending.is_none() => live.heartbeat(self.lease()).await,
            _ => self.remove(id),
        }
        result
    }

    /// Ends a session now: its episode is judged and stored as it stands.
    pub async fn close(&self, client: &Client, id: Uuid) -> Result<Snapshot, SessionError> {
        let (live, _) = self.entry(client, id)?;
        let mut live = live.try_lock().map_err(|_| SessionError::Busy(id))?;
        let result = live.close(EndReason::Stopped).await;
        self.remove(id);
        result
    }

    /// A session's state.
    pub fn state(&self, client: &Client, id: Uuid) -> Result<SessionState, SessionError> {
        let t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let e = t.open.get(&id).ok_or(SessionError::NotFound(id))?;
        if e.client != *client {
            return Err(SessionError::Forbidden(id));
        }
        Ok(state_of(id, e))
    }

    /// The client's open sessions.
    pub fn list(&self, client: &Client) -> Vec<SessionState> {
        let t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<SessionState> = t
            .open
            .iter()
            .filter(|(_, e)| e.client == *client)
            .map(|(id, e)| state_of(*id, e))
            .collect();
        out.sort_by(|a, b| b.age_secs.total_cmp(&a.age_secs));
        out
    }

    /// Open sessions, in all.
    pub fn open_count(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .open
            .len()
    }

    /// Ends every session idle past the limit (stored, `timeout`).
    async fn reap(&self) {
        let idle = self.limits().idle;
        let stale: Vec<(Uuid, SharedLive)> = {
            let t = self.table.lock().unwrap_or_else(|p| p.into_inner());
            t.open
                .iter()
                .filter(|(_, e)| {
                    e.last_activity
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .elapsed()
                        >= idle
                })
                .map(|(id, e)| (*id, e.live.clone()))
                .collect()
        };
        for (id, live) in stale {
            // A step in flight is activity: skip it.
            let Ok(mut live) = live.try_lock() else {
                continue;
            };
            tracing::info!(session = %id, "an idle session is ended and stored");
            if let Err(e) = live.close(EndReason::Timeout).await {
                tracing::warn!(session = %id, error = %e, "ending an idle session failed");
            }
            self.remove(id);
        }
    }

    fn start_reaper(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        self.reaper.get_or_init(|| {
            tokio::spawn(async move {
                loop {
                    let every = match weak.upgrade() {
                        Some(s) => (s.limits().idle / 4)
                            .clamp(Duration::from_millis(50), Duration::from_secs(5)),
                        None => return,
                    };
                    tokio::time::sleep(every).await;
                    let Some(sessions) = weak.upgrade() else {
                        return;
                    };
                    sessions.reap().await;
                }
            })
        });
    }

    /// Ends every open session (stored, `timeout`) and opens no more: a stopping server's
    /// sessions are kept, not lost.
    pub async fn close_all(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let all: Vec<(Uuid, SharedLive)> = {
            let t = self.table.lock().unwrap_or_else(|p| p.into_inner());
            t.open.iter().map(|(id, e)| (*id, e.live.clone())).collect()
        };
        for (id, live) in all {
            let mut live = live.lock().await;
            if let Err(e) = live.close(EndReason::Timeout).await {
                tracing::warn!(session = %id, error = %e, "ending a session at shutdown failed");
            }
            self.remove(id);
        }
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        if let Some(reaper) = self.reaper.get() {
            reaper.abort();
        }
    }
}

fn state_of(id: Uuid, e: &Entry) -> SessionState {
    let (episode_id, campaign_id, task_id, seed, dialect, max_steps) = e.summary.clone();
    SessionState {
        session_id: id,
        episode_id,
        campaign_id,
        task_id,
        seed,
        dialect,
        step_count: e.live.try_lock().ok().map(|l| l.steps()),
        max_steps,
        age_secs: e.opened.elapsed().as_secs_f64(),
        idle_secs: e
            .last_activity
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .elapsed()
            .as_secs_f64(),
    }
}

fn invalid(field: &str, message: &str) -> SessionError {
    SessionError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// The task a session runs: a registered one, or the inline one, registered first.
async fn resolve_task(store: &Store, choice: &TaskChoice) -> Result<Arc<Task>, SessionError> {
    let store_err = |e: store::StoreError| SessionError::Infra(format!("store: {e}"));
    match choice {
        TaskChoice::Registered(id) => store
            .load_task(id)
            .await
            .map_err(store_err)?
            .map(Arc::new)
            .ok_or_else(|| {
                invalid(
                    "task_id",
                    &format!("no registered task {id:?} (GET /api/tasks lists them)"),
                )
            }),
        TaskChoice::Inline(task) => {
            if store
                .load_task(task.id.as_str())
                .await
                .map_err(store_err)?
                .is_none()
            {
                match store.insert_task(task).await {
                    Ok(()) => {}
                    // Registered by a concurrent session meanwhile: the same task.
                    Err(store::StoreError::Conflict(_)) => {}
                    Err(e) => return Err(store_err(e)),
                }
            }
            store
                .load_task(task.id.as_str())
                .await
                .map_err(store_err)?
                .map(Arc::new)
                .ok_or_else(|| SessionError::Infra("the inline task vanished".into()))
        }
    }
}
