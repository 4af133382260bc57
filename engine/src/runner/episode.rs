//! One episode as a state machine: `open` (lease a context, load the start page), then
//! `observe` → policy → `apply` until it answers, stops or runs out of steps, then `finish`
//! (final screenshot, page snapshot for the judge, context released). The async and
//! lockstep schedulers drive the same machine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use browser_pool::{Action, BrowserPool, Observation, PoolError, Screen, Session};
use tasks::{Setup, Task};
use uuid::Uuid;

use super::decide;
use crate::env::EnvError;
use crate::snapshot::PageSnapshot;
use metrics::METRICS;
use policy::{Decision, PastStep, Policy, PolicyError, StepInput};
use store::{Blob, EndReason, StepCore, StepRecord, StoreError, ms};

/// An infrastructure failure: the episode is retried, never scored.
#[derive(Debug, thiserror::Error)]
pub enum InfraError {
    /// The browser failed.
    #[error("browser: {0}")]
    Browser(#[from] PoolError),
    /// The database failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The policy backend is unavailable.
    #[error("{0}")]
    Policy(PolicyError),
    /// The start page did not load.
    #[error("start page {url} did not load: {message}")]
    StartPage {
        /// The task's start URL.
        url: String,
        /// Why.
        message: String,
    },
    /// The episode exceeded its time limit.
    #[error("watchdog: episode exceeded {0:?}")]
    Watchdog(Duration),
    /// The task's environment did not start on its page.
    #[error("setup: {0}")]
    Setup(String),
    /// A page of the task's site turned the agent away (a CAPTCHA, a bot or login wall,
    /// 403, 429): the episode says nothing about the agent.
    #[error("{0}")]
    Blocked(crate::blocked::Block),
    /// A page the rubric reads besides the final one could not be opened. Not the
    /// agent's doing: the site or the rubric is at fault.
    #[error("check page {url} could not be opened: {message}")]
    CheckPage {
        /// The page's URL, as the rubric gives it.
        url: String,
        /// Why.
        message: String,
    },
}

impl From<EnvError> for InfraError {
    fn from(e: EnvError) -> InfraError {
        match e {
            EnvError::Browser(e) => InfraError::Browser(e),
            EnvError::Setup(why) => InfraError::Setup(why),
        }
    }
}

impl InfraError {
    /// A short label for metrics and stored reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            InfraError::Browser(e) => e.kind(),
            InfraError::Store(_) => "store",
            InfraError::Policy(_) => "policy_unavailable",
            InfraError::StartPage { .. } => "start_page",
            InfraError::Watchdog(_) => "watchdog",
            InfraError::Setup(_) => "setup",
            InfraError::CheckPage { .. } => "check_page",
            InfraError::Blocked(_) => "blocked",
        }
    }
}

/// Past steps whose observation (screenshot included) policies may still look at.
const KEEP_OBSERVATIONS: usize = 4;

/// Consecutive unusable policy outputs that end a campaign's episode (a session's client
/// sees each error and may correct itself: its sessions allow any number).
pub const MAX_POLICY_ERRORS: u32 = 3;

/// What an episode needs to run.
#[derive(Clone)]
pub struct EpisodeRun {
    /// Episode id.
    pub id: Uuid,
    /// The task.
    pub task: Arc<Task>,
    /// The policy.
    pub policy: Arc<dyn Policy>,
    /// Step limit.
    pub max_steps: u32,
    /// The episode's seed: its environment's (MiniWoB++'s page and instruction).
    pub seed: u64,
    /// Which sample of its task instance it is (0 with one sample per seed): the policy
    /// samples with [`crate::campaign::sampling_seed`] of both.
    pub sample: u32,
    /// What the pages render at: the task's own screen, else the campaign's (`None` only
    /// for campaigns stored before campaigns recorded one: the pool's own).
    pub screen: Option<Screen>,
    /// Answers the agent may give; every one but the last is followed by a re-check
    /// prompt instead of ending the episode (1: the first answer ends it).
    pub answer_checks: u32,
    /// Consecutive unusable outputs that end the episode ([`MAX_POLICY_ERRORS`]).
    pub max_invalid_outputs: u32,
    /// Whether a page of the task's site that turns the agent away ends the episode as
    /// blocked, by the rules alone or confirmed by the model judge (`crate::blocked`).
    pub blocks: crate::blocked::BlockCheck,
    /// Where its pages get their answers.
    pub traffic: EpisodeTraffic,
    /// Domains its pages may load documents from (empty: any).
    pub allowed_domains: Arc<[String]>,
}

/// Where an episode's pages get their answers.
#[derive(Clone, Default)]
pub enum EpisodeTraffic {
    /// From the network.
    #[default]
    Live,
    /// From the network, every exchange recorded into this recording.
    Record(Uuid),
    /// From this recording.
    Replay(Arc<browser_pool::Recording>, browser_pool::Unmatched),
}

/// An observation waiting for the policy's decision.
struct Pending {
    observation: Arc<Observation>,
    screenshot: String,
    observe: Duration,
}

/// A running episode.
pub struct Episode {
    /// What it runs.
    pub run: EpisodeRun,
    /// The instruction in force: the task's, or the one its environment generated.
    instruction: Arc<str>,
    session: Session,
    started: Instant,
    steps: Vec<StepRecord>,
    blobs: Vec<Blob>,
    history: Vec<PastStep>,
    visited: Vec<String>,
    policy_errors: u32,
    end: Option<EndReason>,
    /// The last answer given: the one judged, however the episode ends.
    final_answer: Option<String>,
    /// Answers given so far.
    answers: u32,
    terminal_shot: Option<String>,
    pending: Option<Pending>,
    /// What the start page did before the first action: listed with the first step.
    early_events: Vec<browser_pool::PageEvent>,
    /// Counts the episode in `episodes_running` until it is dropped, however it ends
    /// (finished, abandoned, or cancelled by the watchdog mid-await).
    _running: Running,
}

/// One unit of the `episodes_running` gauge, given back on drop.
struct Running;

impl Running {
    fn start() -> Running {
        METRICS.episodes_running.add(1);
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        METRICS.episodes_running.add(-1);
    }
}

/// An episode that ran to its end, ready to be judged and stored.
pub struct Finished {
    /// What it ran.
    pub run: EpisodeRun,
    /// The instruction its environment generated, if it did.
    pub instruction: Option<String>,
    /// How it ended.
    pub end_reason: EndReason,
    /// Its answer.
    pub final_answer: Option<String>,
    /// Its final page's screenshot (a hash into `blobs`).
    pub final_screenshot: String,
    /// Its steps.
    pub steps: Vec<StepRecord>,
    /// Screenshots, deduplicated by hash.
    pub blobs: Vec<Blob>,
    /// URLs it observed, in order.
    pub visited: Vec<String>,
    /// The final page, for the judge.
    pub snapshot: PageSnapshot,
    /// Wall time.
    pub duration: Duration,
    /// What its pages rendered at (the session's screen).
    pub screen: Screen,
    /// Of `duration`, the wait for a session slot on its start domain (`None`: the pool
    /// caps no domain's sessions).
    pub politeness_wait: Option<Duration>,
    /// Its exchanges and the recording they go to (a recording campaign's episode).
    pub recorded: Option<(Uuid, Vec<store::ExchangeRecord>)>,
    /// Requests its replay could not answer (`None`: not a replay).
    pub unmatched_requests: Option<u64>,
}

/// Runs a task's setup actions in its episode's fresh context, then forgets them: the
/// episode's observations and visited pages start at its start page.
pub(crate) async fn prepare(session: &mut Session, actions: &[Action]) -> Result<(), InfraError> {
    for (i, action) in actions.iter().enumerate() {
        let report = session.act(action).await?;
        if let Some(message) = report.error {
            return Err(InfraError::Setup(format!(
                "setup action {} of {} `{action}` failed: {message} (fix the task's setup.actions)",
                i + 1,
                actions.len()
            )));
        }
    }
    session.forget();
    Ok(())
}

impl Episode {
    /// Leases a browser context, runs the task's setup actions if it has some, and loads
    /// the task's start page.
    pub async fn open(pool: &BrowserPool, run: EpisodeRun) -> Result<Episode, InfraError> {
        let started = Instant::now();
        let mut session = pool
            .lease_for(run.task.start_url.as_str(), run.screen.as_ref())
            .await?;
        let traffic = match &run.traffic {
            EpisodeTraffic::Live => Ok(()),
            EpisodeTraffic::Record(_) => session.record_traffic(),
            EpisodeTraffic::Replay(recording, unmatched) => {
                session.replay_traffic(recording.clone(), *unmatched)
            }
        };
        let restricted = match traffic {
            Ok(()) => session.restrict_domains(run.allowed_domains.to_vec()).await,
            Err(e) => Err(e),
        };
        if let Err(e) = restricted {
            session.close().await;
            return Err(e.into());
        }
        if let Some(Setup::Actions(actions)) = &run.task.setup
            && let Err(e) = prepare(&mut session, actions).await
        {
            session.close().await;
            return Err(e);
        }
        let url = run.task.start_url.to_string();
        let opened = match session.act(&Action::Goto(url.clone())).await {
            Ok(r) => r,
            Err(e) => {
                session.close().await;
                return Err(e.into());
            }
        };
        if let Some(message) = opened.error {
            session.close().await;
            return Err(InfraError::StartPage { url, message });
        }
        let instruction: Arc<str> = match run.task.setup {
            None | Some(Setup::Actions(_)) => run.task.instruction.as_str().into(),
            Some(Setup::MiniWob) => match crate::env::miniwob_start(&session, run.seed).await {
                Ok(utterance) => utterance.into(),
                Err(e) => {
                    session.close().await;
                    return Err(e.into());
                }
            },
        };
        Ok(Episode {
            run,
            instruction,
            session,
            started,
            steps: Vec::new(),
            blobs: Vec::new(),
            history: Vec::new(),
            visited: Vec::new(),
            policy_errors: 0,
            end: None,
            final_answer: None,
            answers: 0,
            terminal_shot: None,
            _running: Running::start(),
            pending: None,
            early_events: Vec::new(),
        })
    }

    /// Lists page events under the step whose action caused them: the last one taken, or
    /// the first one to come when none has been (the start page's own).
    fn attribute_events(&mut self, events: &[browser_pool::PageEvent]) {
        if events.is_empty() {
            return;
        }
        let Some(step) = self.steps.last_mut() else {
            self.early_events.extend_from_slice(events);
            return;
        };
        let mut all = match std::mem::take(&mut step.core.events) {
            serde_json::Value::Array(a) => a,
            _ => Vec::new(),
        };
        all.extend(
            events
                .iter()
                .map(|e| serde_json::to_value(e).unwrap_or_default()),
        );
        step.core.events = serde_json::Value::Array(all);
    }

    /// See [`Session::set_observation_extras`].
    pub(crate) fn set_observation_extras(&mut self, set_of_marks: bool, accessibility_tree: bool) {
        self.session
            .set_observation_extras(set_of_marks, accessibility_tree);
    }

    /// Whether the episode has ended.
    pub fn done(&self) -> bool {
        self.end.is_some()
    }

    fn keep_blob(&mut self, bytes: Vec<u8>, mime: &'static str) -> String {
        let hash = store::blob_hash(&bytes);
        if !self.blobs.iter().any(|b| b.hash == hash) {
            self.blobs.push(Blob {
                hash: hash.clone(),
                mime: mime.to_string(),
                bytes,
            });
        }
        hash
    }

    /// Ends the episode as blocked when the page turns the agent away.
    async fn check_blocked(&self, obs: &Observation) -> Result<(), InfraError> {
        use crate::blocked::BlockCheck;
        let judge = match &self.run.blocks {
            BlockCheck::Off => return Ok(()),
            BlockCheck::Rules => None,
            BlockCheck::Confirmed(judge) => Some(judge),
        };
        let seen = crate::blocked::Seen {
            url: &obs.url,
            title: &obs.title,
            start_url: &self.run.task.start_url,
            at_start: self.steps.is_empty(),
            instruction: &self.instruction,
        };
        let Some(block) = crate::blocked::detect(&obs.signals, &seen) else {
            return Ok(());
        };
        let block = match judge {
            None => block,
            Some(judge) => {
                let shot = &obs.screenshot.bytes;
                match crate::blocked::confirm(judge, block, shot, self.run.seed).await {
                    Some(block) => block,
                    None => return Ok(()),
                }
            }
        };
        METRICS.episodes_blocked.inc(block.reason.as_str());
        Err(InfraError::Blocked(block))
    }

    /// Observes the page and returns what the policy must decide on.
    pub async fn observe(&mut self) -> Result<StepInput, InfraError> {
        let t0 = Instant::now();
        let mut obs = self.session.observe().await?;
        let observe = t0.elapsed();
        METRICS.observe_seconds.time(observe);
        self.check_blocked(&obs).await?;
        let bytes = std::mem::take(&mut obs.screenshot.bytes);
        let screenshot = self.keep_blob(bytes.clone(), obs.screenshot.mime);
        // The policy still sees the image; the stored copy lives in `blobs`.
        obs.screenshot.bytes = bytes;
        self.note_visited();
        if self.visited.last() != Some(&obs.url) {
            self.visited.push(obs.url.clone());
        }
        // The policy sees what happened since its last action in this observation; the
        // record lists it under the step that acted.
        self.attribute_events(&obs.events);
        let observation = Arc::new(obs);
        self.pending = Some(Pending {
            observation: observation.clone(),
            screenshot,
            observe,
        });
        Ok(StepInput {
            task: self.run.task.clone(),
            instruction: self.instruction.clone(),
            observation,
            history: self.history.clone().into(),
            step: self.steps.len() as u32,
            max_steps: self.run.max_steps,
            seed: crate::campaign::sampling_seed(self.run.seed, self.run.sample),
            answered: self.final_answer.as_deref().map(Arc::from),
        })
    }

    /// Applies the policy's decision to the observed page.
    pub async fn apply(
        &mut self,
        decision: Result<Decision, PolicyError>,
        policy_time: Duration,
    ) -> Result<(), InfraError> {
        let pending = self.pending.take().expect("apply follows observe");
        METRICS.policy_seconds.time(policy_time);
        let decision = match decision {
            Ok(d) => d,
            Err(e @ PolicyError::Unavailable(_)) => return Err(InfraError::Policy(e)),
            Err(PolicyError::Failed(msg)) => Decision {
                action: Err(msg.clone()),
                raw_output: String::new(),
                thought: Some(format!("policy failed: {msg}")),
                logprob: None,
                token_logprobs: Vec::new(),
                token_ids: Vec::new(),
                prompt: None,
            },
        };
        let obs = &pending.observation;
        let mut record = StepRecord {
            core: StepCore {
                url: obs.url.clone(),
                title: obs.title.clone(),
                screenshot: Some(pending.screenshot.clone()),
                elements: serde_json::to_value(&obs.elements).unwrap_or_default(),
                // Filled as the events come in: at the next observation, or at the end.
                events: serde_json::to_value(std::mem::take(&mut self.early_events))
                    .unwrap_or_default(),
                tabs: serde_json::to_value(&obs.tabs).unwrap_or_default(),
                ax_tree: obs.ax_tree.clone(),
                action: String::new(),
                thought: decision.thought.clone(),
                raw_output: Some(decision.raw_output.clone()),
                action_error: None,
                logprob: decision.logprob,
                prompt: decision.prompt.clone(),
                observe_ms: ms(pending.observe),
                policy_ms: ms(policy_time),
                act_ms: 0,
            },
            click: None,
            token_logprobs: decision.token_logprobs.clone(),
            token_ids: paired_ids(&decision),
        };
        METRICS.steps.inc();
        // Every policy's action goes through here, so this is where element numbers are
        // checked against the list the policy was shown.
        let action = decision
            .action
            .and_then(|a| policy::output::check_elements(a, &obs.elements));
        match action {
            Ok(action) => {
                self.policy_errors = 0;
                record.core.action = action.to_string();
                let mut error = None;
                if let Action::Answer(a) = &action {
                    // Recorded as a step either way, so replays show every answer.
                    self.final_answer = Some(a.clone());
                    self.answers += 1;
                    if self.answers >= self.run.answer_checks {
                        self.end = Some(EndReason::Answered);
                        self.terminal_shot = Some(pending.screenshot);
                        self.steps.push(record);
                        return Ok(());
                    }
                    // Not the last answer allowed: the page is left as it is and the next
                    // observation asks the agent to check it again (`StepInput::answered`).
                } else if action.is_terminal() {
                    self.end = Some(EndReason::Stopped);
                    self.terminal_shot = Some(pending.screenshot);
                    self.steps.push(record);
                    return Ok(());
                } else {
                    let t = Instant::now();
                    let report = self.session.act(&action).await?;
                    METRICS.act_seconds.time(t.elapsed());
                    record.core.act_ms = ms(t.elapsed());
                    record.core.action_error = report.error.clone();
                    record.click = report.point;
                    error = report.error;
                    if self.run.task.setup == Some(Setup::MiniWob)
                        && crate::env::miniwob_done(&self.session).await?
                    {
                        self.end = Some(EndReason::EnvDone);
                    }
                }
                self.history.push(PastStep {
                    observation: Some(pending.observation.clone()),
                    screenshot: pending.screenshot.clone(),
                    thought: record.core.thought.clone(),
                    action: record.core.action.clone(),
                    url: obs.url.clone(),
                    title: obs.title.clone(),
                    error,
                });
            }
            Err(message) => {
                METRICS.parse_failures.inc();
                self.policy_errors += 1;
                record.core.action = decision.raw_output.clone();
                record.core.action_error = Some(message.clone());
                self.session.report_error(format!(
                    "your last output was not a valid action: {message}"
                ));
                self.history.push(PastStep {
                    observation: Some(pending.observation.clone()),
                    screenshot: pending.screenshot.clone(),
                    thought: record.core.thought.clone(),
                    action: decision.raw_output,
                    url: obs.url.clone(),
                    title: obs.title.clone(),
                    error: Some(message),
                });
            }
        }
        self.steps.push(record);
        // Only the last few steps keep their observation (screenshots are large).
        let n = self.history.len();
        for old in self
            .history
            .iter_mut()
            .take(n.saturating_sub(KEEP_OBSERVATIONS))
        {
            old.observation = None;
        }
        if self.end.is_some() {
            return Ok(());
        }
        if self.policy_errors >= self.run.max_invalid_outputs {
            self.end = Some(EndReason::PolicyError);
        } else if self.steps.len() as u32 >= self.run.max_steps {
            self.end = Some(EndReason::MaxSteps);
        }
        Ok(())
    }

    /// Ends the episode now for `reason`, unless it has already ended (a session its
    /// client closed, or that sat idle).
    pub(crate) fn end_as(&mut self, reason: EndReason) {
        if self.end.is_none() {
            self.end = Some(reason);
        }
    }

    /// Ends the episode now (a straggler cut off by the campaign).
    pub fn cut(&mut self) {
        if self.end.is_none() {
            self.end = Some(EndReason::Timeout);
        }
    }

    /// Captures the final page and releases the browser context.
    pub async fn finish(mut self) -> Result<Finished, InfraError> {
        let result = self.capture_end().await;
        let screen = self.session.screen();
        let politeness_wait = self.session.politeness_wait();
        let recorded = match self.run.traffic {
            EpisodeTraffic::Record(recording) => Some((
                recording,
                crate::recordings::to_store(self.session.take_traffic()),
            )),
            _ => None,
        };
        let unmatched_requests = matches!(self.run.traffic, EpisodeTraffic::Replay(..))
            .then(|| self.session.unmatched_requests());
        self.session.close().await;
        let (final_screenshot, snapshot) = result?;
        // Stored only where the environment generated it.
        let instruction =
            (self.run.task.setup == Some(Setup::MiniWob)).then(|| self.instruction.to_string());
        Ok(Finished {
            run: self.run,
            instruction,
            end_reason: self.end.unwrap_or(EndReason::MaxSteps),
            final_answer: self.final_answer,
            final_screenshot,
            steps: self.steps,
            blobs: self.blobs,
            visited: self.visited,
            snapshot,
            duration: self.started.elapsed(),
            screen,
            politeness_wait,
            recorded,
            unmatched_requests,
        })
    }

    /// Adds the pages committed since the last call: a page left before an observation saw
    /// it was still visited (URL checks with `"scope": "any"` read this list).
    fn note_visited(&mut self) {
        for url in self.session.take_visited() {
            if self.visited.last() != Some(&url) {
                self.visited.push(url);
            }
        }
    }

    async fn capture_end(&mut self) -> Result<(String, PageSnapshot), InfraError> {
        // Before the snapshot, which may open other pages the rubric names: those are the
        // judge's visits, not the agent's. The last action's page events, which no
        // observation took, belong to its step.
        self.note_visited();
        let events = self.session.take_events().await?;
        self.attribute_events(&events);
        // Unchanged after answer/stop: the page is the one last observed.
        let shot = match self.terminal_shot.take() {
            Some(hash) => hash,
            None => {
                let s = self.session.screenshot().await?;
                self.keep_blob(s.bytes, s.mime)
            }
        };
        let snapshot = PageSnapshot::capture(&mut self.session, &self.run.task.rubric).await?;
        Ok((shot, snapshot))
    }

    /// See [`decide::renumber`]: the decision's selector targets as the observation's
    /// element numbers, for a policy that wants them.
    pub(crate) async fn renumber(
        &self,
        policy: &dyn Policy,
        input: StepInput,
        decision: Result<Decision, PolicyError>,
    ) -> Result<Decision, PolicyError> {
        decide::renumber(&self.session, policy, input, decision).await
    }

    /// Releases the browser context of an episode that failed.
    pub async fn abandon(self) {
        self.session.close().await;
    }
}

/// Runs one episode on its own, asking the policy one step at a time: the async
/// scheduler's unit of work. `cut` ends it early as a straggler.
pub async fn run_alone(
    pool: &BrowserPool,
    run: EpisodeRun,
    cut: &tokio::sync::watch::Receiver<bool>,
) -> Result<Finished, InfraError> {
    let policy = run.policy.clone();
    let mut ep = Episode::open(pool, run).await?;
    while !ep.done() {
        if *cut.borrow() {
            ep.cut();
            break;
        }
        let input = match ep.observe().await {
            Ok(i) => i,
            Err(e) => {
                ep.abandon().await;
                return Err(e);
            }
        };
        let t = Instant::now();
        let decision = decide::retrying(policy.as_ref(), input.clone()).await;
        let decision = ep.renumber(policy.as_ref(), input, decision).await;
        if let Err(e) = ep.apply(decision, t.elapsed()).await {
            ep.abandon().await;
            return Err(e);
        }
    }
    ep.finish().await
}

/// The decision's token ids when they pair one to one with its log-probabilities: a policy
/// backend that reports a different number is not trusted with either alignment, and its
/// ids are dropped rather than stored misaligned.
fn paired_ids(decision: &Decision) -> Vec<u32> {
    if decision.token_ids.len() == decision.token_logprobs.len() {
        decision.token_ids.clone()
    } else {
        tracing::warn!(
            ids = decision.token_ids.len(),
            logprobs = decision.token_logprobs.len(),
            "the policy's token ids do not pair with its log-probabilities; not stored"
        );
        Vec::new()
    }
}
