//! One episode: observe → ask the policy → act, until the agent answers or stops or the
//! step limit is reached; then judge the final page and build the record to store.

use std::time::{Duration, Instant};

use browser_pool::{Action, BrowserPool, PoolError};
use rubrics::{RULE_JUDGE, Trajectory};
use tasks::Task;
use uuid::Uuid;

use super::probe::SessionProbe;
use crate::policy::{PastStep, Policy, PolicyError, StepInput};
use crate::store::{EndReason, EpisodeRecord, StepRecord, Store, StoreError, VerdictRecord};

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
    /// The final page could not be read for judging.
    #[error("judging: {0}")]
    Judge(#[from] rubrics::ProbeError),
}

impl InfraError {
    /// A short label for metrics and stored reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            InfraError::Browser(e) => e.kind(),
            InfraError::Store(_) => "store",
            InfraError::Policy(_) => "policy_unavailable",
            InfraError::StartPage { .. } => "start_page",
            InfraError::Judge(_) => "judge",
        }
    }
}

/// Consecutive unusable policy outputs that end an episode.
const MAX_POLICY_ERRORS: u32 = 3;

fn ms(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

/// What an episode needs to run.
pub struct EpisodeRun<'a> {
    /// Episode id.
    pub id: Uuid,
    /// The task.
    pub task: &'a Task,
    /// The policy.
    pub policy: &'a dyn Policy,
    /// Step limit.
    pub max_steps: u32,
    /// Policy seed.
    pub seed: u64,
}

/// Runs one episode to its end and judges it. The session is always released.
pub async fn run(
    pool: &BrowserPool,
    store: &Store,
    ep: EpisodeRun<'_>,
) -> Result<EpisodeRecord, InfraError> {
    let started = Instant::now();
    let mut session = pool.lease().await?;
    let result = drive(&mut session, store, &ep, started).await;
    session.close().await;
    result
}

async fn drive(
    session: &mut browser_pool::Session,
    store: &Store,
    ep: &EpisodeRun<'_>,
    started: Instant,
) -> Result<EpisodeRecord, InfraError> {
    let start_url = ep.task.start_url.to_string();
    let opened = session.act(&Action::Goto(start_url.clone())).await?;
    if let Some(message) = opened.error {
        return Err(InfraError::StartPage {
            url: start_url,
            message,
        });
    }
    let mut steps: Vec<StepRecord> = Vec::new();
    let mut history: Vec<PastStep> = Vec::new();
    let mut visited: Vec<String> = Vec::new();
    let mut policy_errors = 0;
    let mut end = EndReason::MaxSteps;
    let mut final_answer = None;
    // Set when the agent answered or stopped: the page is the one last observed.
    let mut terminal_shot: Option<String> = None;

    for step in 0..ep.max_steps {
        let t0 = Instant::now();
        let obs = session.observe().await?;
        let shot = store
            .put_blob(&obs.screenshot.bytes, obs.screenshot.mime)
            .await?;
        visited.push(obs.url.clone());
        let t1 = Instant::now();
        let decision = ep
            .policy
            .decide(StepInput {
                task: ep.task,
                observation: &obs,
                history: &history,
                step,
                max_steps: ep.max_steps,
                seed: ep.seed,
            })
            .await;
        let t2 = Instant::now();
        let decision = match decision {
            Ok(d) => d,
            Err(e @ PolicyError::Unavailable(_)) => return Err(InfraError::Policy(e)),
            Err(PolicyError::Failed(msg)) => crate::policy::Decision {
                action: Err(msg.clone()),
                raw_output: String::new(),
                thought: Some(format!("policy failed: {msg}")),
                logprob: None,
                token_logprobs: Vec::new(),
            },
        };
        let mut record = StepRecord {
            url: obs.url.clone(),
            title: obs.title.clone(),
            screenshot: Some(shot.clone()),
            elements: serde_json::to_value(&obs.elements).unwrap_or_default(),
            action: String::new(),
            thought: decision.thought.clone(),
            raw_output: Some(decision.raw_output.clone()),
            action_error: None,
            click: None,
            logprob: decision.logprob,
            token_logprobs: decision.token_logprobs.clone(),
            observe_ms: ms(t1 - t0),
            policy_ms: ms(t2 - t1),
            act_ms: 0,
        };
        match decision.action {
            Ok(action) => {
                policy_errors = 0;
                record.action = action.to_string();
                if action.is_terminal() {
                    if let Action::Answer(a) = &action {
                        final_answer = Some(a.clone());
                        end = EndReason::Answered;
                    } else {
                        end = EndReason::Stopped;
                    }
                    steps.push(record);
                    terminal_shot = Some(shot);
                    break;
                }
                let report = session.act(&action).await?;
                record.act_ms = ms(t2.elapsed());
                record.action_error = report.error.clone();
                record.click = report.point;
                history.push(PastStep {
                    action: record.action.clone(),
                    url: obs.url.clone(),
                    title: obs.title.clone(),
                    error: report.error,
                });
            }
            Err(message) => {
                policy_errors += 1;
                record.action = decision.raw_output.clone();
                record.action_error = Some(message.clone());
                session.report_error(format!(
                    "your last output was not a valid action: {message}"
                ));
                history.push(PastStep {
                    action: decision.raw_output,
                    url: obs.url.clone(),
                    title: obs.title.clone(),
                    error: Some(message),
                });
            }
        }
        steps.push(record);
        if policy_errors >= MAX_POLICY_ERRORS {
            end = EndReason::PolicyError;
            break;
        }
    }

    // The page the episode ended on: unchanged after answer/stop, otherwise taken anew.
    let final_screenshot = match terminal_shot {
        Some(hash) => hash,
        None => {
            let shot = session.screenshot().await?;
            store.put_blob(&shot.bytes, shot.mime).await?
        }
    };
    let probe = SessionProbe(session);
    let traj = Trajectory {
        final_answer: final_answer.clone(),
        visited_urls: visited,
    };
    let judgement = rubrics::judge(&ep.task.rubric, &traj, &probe).await?;
    let final_url = session.url().await.ok();
    Ok(EpisodeRecord {
        id: ep.id,
        end_reason: end,
        final_answer,
        final_url,
        final_screenshot: Some(final_screenshot),
        steps,
        verdicts: judgement
            .verdicts
            .into_iter()
            .map(|v| VerdictRecord {
                judge: RULE_JUDGE.to_string(),
                group_id: v.group_id,
                fact_id: v.fact_id,
                passed: v.passed,
                evidence: v.evidence,
                reason: v.reason,
            })
            .collect(),
        success: judgement.success,
        score: judgement.score,
        duration: started.elapsed(),
    })
}
