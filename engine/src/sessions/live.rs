//! One open session: the episode state machine (`runner::episode`) driven by a client's
//! actions instead of a policy's, and its ending (judged with the task's rubric and
//! stored like any campaign's episode, or failed when the browser gives out).

use std::sync::Arc;
use std::time::{Duration, Instant};

use browser_pool::{Action, BrowserPool};
use policy::{Decision, StepInput};
use store::{EndReason, Store};
use uuid::Uuid;

use super::{Dialect, Ending, OpenRequest, SessionError, Snapshot};
use crate::judge::ModelJudge;
use crate::runner::episode::{Episode, EpisodeRun};
use crate::runner::{InfraError, Judging, judge_finished};

/// A live session. Its episode is `None` once it has ended.
pub(super) struct Live {
    pub id: Uuid,
    pub episode_id: Uuid,
    pub campaign_id: Uuid,
    pub request: OpenRequest,
    pub task_id: String,
    pub instruction: Arc<str>,
    pub max_steps: u32,
    pub opened: Instant,
    episode: Option<Episode>,
    /// What the client was last shown (the observation its next action refers to).
    input: Option<StepInput>,
    /// When the client was last shown an observation: its think time is the step's
    /// policy time.
    shown: Instant,
    steps: u32,
    last_action: Option<String>,
    store: Store,
    owner: String,
    judge: Option<Arc<ModelJudge>>,
}

impl Live {
    /// Opens the episode's browser context and takes the first observation.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn open(
        pool: &BrowserPool,
        store: Store,
        owner: String,
        judge: Option<Arc<ModelJudge>>,
        id: Uuid,
        campaign_id: Uuid,
        run: EpisodeRun,
        request: OpenRequest,
    ) -> Result<(Live, Snapshot), SessionError> {
        let episode_id = run.id;
        let task_id = run.task.id.to_string();
        let max_steps = run.max_steps;
        let opened = Instant::now();
        let mut episode = match Episode::open(pool, run).await {
            Ok(e) => e,
            Err(e) => {
                return Err(give_up(&store, episode_id, &owner, &e).await);
            }
        };
        episode.set_observation_extras(request.observe.set_of_marks, request.observe.ax_tree);
        let input = match episode.observe().await {
            Ok(i) => i,
            Err(e) => {
                episode.abandon().await;
                return Err(give_up(&store, episode_id, &owner, &e).await);
            }
        };
        let mut live = Live {
            id,
            episode_id,
            campaign_id,
            request,
            task_id,
            instruction: input.instruction.clone(),
            max_steps,
            opened,
            episode: Some(episode),
            input: Some(input),
            shown: Instant::now(),
            steps: 0,
            last_action: None,
            store,
            owner,
            judge,
        };
        let snap = live.snapshot(None);
        Ok((live, snap))
    }

    /// Steps taken so far.
    pub(super) fn steps(&self) -> u32 {
        self.steps
    }

    fn snapshot(&mut self, ending: Option<Ending>) -> Snapshot {
        Snapshot {
            session_id: self.id,
            episode_id: self.episode_id,
            campaign_id: self.campaign_id,
            task_id: self.task_id.clone(),
            instruction: self.instruction.clone(),
            dialect: self.request.dialect,
            observe: self.request.observe.clone(),
            step: self.steps,
            max_steps: self.max_steps,
            input: self.input.clone(),
            last_action: self.last_action.clone(),
            elapsed: self.opened.elapsed(),
            ending,
        }
    }

    /// Carries out the client's action text (one line of its dialect; BrowserGym's
    /// `press(bid, key)` is two actions, each its own recorded step), then observes.
    pub(super) async fn step(&mut self, text: &str) -> Result<Snapshot, SessionError> {
        let Some(input) = self.input.take() else {
            return Err(SessionError::Ended);
        };
        let think = self.shown.elapsed();
        let parsed = parse(self.request.dialect, text, &input);
        let actions: Vec<Result<Action, String>> = match parsed {
            Ok(list) if !list.is_empty() => list.into_iter().map(Ok).collect(),
            Ok(_) => vec![Err("no action given".to_string())],
            Err(message) => vec![Err(message)],
        };
        let result = self.apply_all(actions, text, think).await;
        match result {
            Ok(()) => {}
            Err(e) => return Err(self.fail(e).await),
        }
        let episode = self
            .episode
            .as_mut()
            .expect("a live session has its episode");
        if episode.done() {
            return self.end(None).await;
        }
        match episode.observe().await {
            Ok(next) => {
                self.input = Some(next);
                self.shown = Instant::now();
                Ok(self.snapshot(None))
            }
            Err(e) => Err(self.fail(e).await),
        }
    }

    async fn apply_all(
        &mut self,
        actions: Vec<Result<Action, String>>,
        text: &str,
        think: Duration,
    ) -> Result<(), InfraError> {
        let episode = self
            .episode
            .as_mut()
            .expect("a live session has its episode");
        for (i, action) in actions.into_iter().enumerate() {
            if i > 0 {
                if episode.done() {
                    break;
                }
                // The second half of a two-step action acts on the page the first left.
                episode.observe().await?;
            }
            self.last_action = Some(match &action {
                Ok(a) => a.to_string(),
                Err(_) => text.to_string(),
            });
            let decision = Decision {
                action,
                // The client's text once, with the first of the steps it made.
                raw_output: if i == 0 {
                    text.to_string()
                } else {
                    String::new()
                },
                thought: None,
                logprob: None,
                token_logprobs: Vec::new(),
                token_ids: Vec::new(),
                prompt: None,
            };
            episode
                .apply(Ok(decision), if i == 0 { think } else { Duration::ZERO })
                .await?;
            self.steps += 1;
        }
        Ok(())
    }

    /// Ends the session now (the client closed it, or it sat idle): stored and judged as
    /// it stands.
    pub(super) async fn close(&mut self, reason: EndReason) -> Result<Snapshot, SessionError> {
        if self.episode.is_none() {
            return Err(SessionError::Ended);
        }
        self.end(Some(reason)).await
    }

    /// Finishes the episode, judges it and stores it.
    async fn end(&mut self, cut: Option<EndReason>) -> Result<Snapshot, SessionError> {
        let mut episode = self.episode.take().expect("ended once");
        self.input = None;
        if let Some(reason) = cut {
            episode.end_as(reason);
        }
        let finished = match episode.finish().await {
            Ok(f) => f,
            Err(e) => {
                return Err(give_up(&self.store, self.episode_id, &self.owner, &e).await);
            }
        };
        let (record, failed) =
            judge_finished(finished, self.judge.as_deref(), Judging::default()).await;
        if let Some(reason) = failed {
            let _ = self
                .store
                .release_episode(self.episode_id, &self.owner, &reason, true)
                .await;
            return Err(SessionError::Infra(reason));
        }
        match self.store.finish_episode(&self.owner, &record).await {
            Ok(true) => {}
            Ok(false) => {
                return Err(SessionError::Infra(
                    "the episode's lease was lost before it could be stored".into(),
                ));
            }
            Err(e) => {
                let _ = self
                    .store
                    .release_episode(self.episode_id, &self.owner, &format!("store: {e}"), true)
                    .await;
                return Err(SessionError::Infra(format!(
                    "storing the episode failed: {e}"
                )));
            }
        }
        let ending = Ending {
            end_reason: record.end_reason,
            success: record.judge_error.is_none() && record.success,
            score: if record.judge_error.is_some() {
                0.0
            } else {
                record.credit.score()
            },
            verdicts: record.verdicts,
            judge_error: record.judge_error,
            final_answer: record.final_answer,
        };
        Ok(self.snapshot(Some(ending)))
    }

    /// The browser or the store failed mid-step: the episode is recorded as failed (never
    /// scored) and the session is over.
    async fn fail(&mut self, e: InfraError) -> SessionError {
        self.input = None;
        if let Some(episode) = self.episode.take() {
            episode.abandon().await;
        }
        give_up(&self.store, self.episode_id, &self.owner, &e).await
    }

    /// After a step overran its limit: the episode is failed and its browser context
    /// released.
    pub(super) async fn fail_timed_out(&mut self, limit: Duration) {
        let _ = self.fail(InfraError::Watchdog(limit)).await;
    }

    /// Its heartbeat: the lease outlives the idle limit, so only a dead server lets it
    /// expire ([`Store::fail_lost_sessions`]).
    pub(super) async fn heartbeat(&self, lease: Duration) {
        if let Err(e) = self
            .store
            .heartbeat(self.episode_id, &self.owner, lease)
            .await
        {
            tracing::warn!(session = %self.id, error = %e, "session heartbeat failed");
        }
    }
}

/// Records an episode whose session could not go on as failed; the client is told the
/// reason as stored (`blocked: captcha at ...`, `watchdog: ...`).
async fn give_up(store: &Store, episode: Uuid, owner: &str, e: &InfraError) -> SessionError {
    let reason = format!("{}: {e}", e.kind());
    if let Err(err) = store.release_episode(episode, owner, &reason, true).await {
        tracing::error!(episode = %episode, error = %err, "recording a failed session failed");
    }
    SessionError::Infra(reason)
}

/// The client's text as actions of surfgym's grammar.
fn parse(dialect: Dialect, text: &str, input: &StepInput) -> Result<Vec<Action>, String> {
    match dialect {
        Dialect::Surfgym => spaces::parse_action(text.trim())
            .map(|a| vec![a])
            .map_err(|e| e.to_string()),
        Dialect::Browsergym => {
            let active_tab = input
                .observation
                .tabs
                .iter()
                .find(|t| t.active)
                .map_or(1, |t| t.number);
            spaces::browsergym::parse(text, &spaces::browsergym::Context { active_tab })
                .map_err(|e| e.to_string())
        }
    }
}
