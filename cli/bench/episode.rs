//! One episode run on the pool directly, without the runner or a database, timed part by
//! part: the tasks (BrowserGym's ten MiniWoB++ tasks and the bundled reference
//! solutions), the policy that drives each, and the raw timings. `bench env` and `bench
//! soak` both run these; what they do with the timings is theirs.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use browser_pool::{Action, BrowserPool, Session};
use engine::SitesServer;
use engine::{miniwob_done, miniwob_start};
use policy::miniwob::{MiniWobSolver, SOLVED};
use policy::{PastStep, Policy, RandomPolicy, ScriptedPolicy, StepInput};
use serde::Serialize;
use tasks::Task;

use super::stats::ms;
use crate::args::Common;

/// The ten MiniWoB++ tasks BrowserGym's benchmark rotates through
/// (`bench_browsergym.py`, `TASKS`).
pub const BROWSERGYM_TASKS: &[&str] = &[
    "click-test",
    "click-button",
    "enter-text",
    "login-user",
    "click-checkboxes",
    "choose-list",
    "use-autocomplete",
    "navigate-tree",
    "click-tab",
    "focus-text",
];

/// BrowserGym's step limit for its random policy.
pub const RANDOM_MAX_STEPS: u32 = 10;

/// Raw timings of one set of episodes, in milliseconds.
#[derive(Debug, Default)]
pub struct Samples {
    /// act + done check + observe.
    pub step: Vec<f64>,
    pub act: Vec<f64>,
    pub done: Vec<f64>,
    pub observe: Vec<f64>,
    /// screenshot + scan_elements, back to back.
    pub floor: Vec<f64>,
    pub shot: Vec<f64>,
    pub scan: Vec<f64>,
    /// `act(wait(0))` on the settled page: the fixed cost of an action's bookkeeping and
    /// settling, with no action in it.
    pub settle_probe: Vec<f64>,
    /// A bare `Runtime.evaluate("0")` round trip.
    pub rtt: Vec<f64>,
    /// lease → first observation.
    pub reset: Vec<f64>,
    pub lease: Vec<f64>,
    pub goto: Vec<f64>,
    pub setup: Vec<f64>,
    pub first_observe: Vec<f64>,
    pub close: Vec<f64>,
    pub episodes: usize,
    pub successes: usize,
    pub action_errors: usize,
    pub failures: Vec<String>,
}

impl Samples {
    /// Adds `o`'s timings and counts to these.
    pub fn absorb(&mut self, o: Samples) {
        macro_rules! extend {
            ($($f:ident),*) => { $( self.$f.extend(o.$f); )* };
        }
        extend!(
            step,
            act,
            done,
            observe,
            floor,
            shot,
            scan,
            settle_probe,
            rtt,
            reset,
            lease,
            goto,
            setup,
            first_observe,
            close,
            failures
        );
        self.episodes += o.episodes;
        self.successes += o.successes;
        self.action_errors += o.action_errors;
    }
}

// ---- tasks and policies -------------------------------------------------------------------

/// Which policy drives a task's episodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Driver {
    /// `miniwob-solver`.
    Solver,
    /// `random` (MiniWoB++ tasks the solver does not solve).
    Random,
    /// `scripted`: the task's reference solution.
    Scripted,
}

/// A task as the benchmarks run it: the policy that drives it and its step limit.
#[derive(Clone)]
pub struct EnvTask {
    pub task: Arc<Task>,
    pub driver: Driver,
    pub miniwob: bool,
    pub max_steps: u32,
}

impl EnvTask {
    pub fn name(&self) -> &str {
        self.task.id.as_str()
    }

    fn policy(&self) -> Box<dyn Policy> {
        match self.driver {
            Driver::Solver => Box::new(MiniWobSolver),
            Driver::Random => Box::new(RandomPolicy),
            Driver::Scripted => Box::new(ScriptedPolicy),
        }
    }
}

/// BrowserGym's ten MiniWoB++ tasks served from `base`: the solver drives those it
/// solves, `random` with BrowserGym's step limit the others.
pub fn miniwob_tasks(base: &str) -> anyhow::Result<Vec<EnvTask>> {
    BROWSERGYM_TASKS
        .iter()
        .map(|name| {
            let task = tasks::miniwob_task(name, base)
                .map_err(|e| anyhow::anyhow!("miniwob task {name}: {e:?}"))?;
            let solved = SOLVED.contains(name);
            Ok(EnvTask {
                max_steps: if solved {
                    task.max_steps.unwrap_or(20)
                } else {
                    RANDOM_MAX_STEPS
                },
                task: Arc::new(task),
                driver: if solved {
                    Driver::Solver
                } else {
                    Driver::Random
                },
                miniwob: true,
            })
        })
        .collect()
}

/// The bundled tasks that have a reference solution and no set-up (at most `limit`),
/// replayed by `scripted`.
pub fn bundled_tasks(bases: &BTreeMap<String, String>, limit: Option<usize>) -> Vec<EnvTask> {
    tasks::bundled_tasks(bases)
        .into_iter()
        .filter_map(|l| l.line.result.ok())
        .filter(|t| t.setup.is_none() && !t.reference_solution.is_empty())
        .take(limit.unwrap_or(usize::MAX))
        .map(|t| EnvTask {
            max_steps: t.reference_solution.len() as u32,
            task: Arc::new(t),
            driver: Driver::Scripted,
            miniwob: false,
        })
        .collect()
}

/// The bundled practice sites on loopback, with MiniWoB++'s HTML as the `miniwob` site
/// where it is installed.
pub async fn practice_sites(common: &Common) -> anyhow::Result<SitesServer> {
    let extra = engine::find_miniwob(&common.data_dir)
        .map(|d| ("miniwob".to_string(), d))
        .into_iter()
        .collect();
    SitesServer::start_with(IpAddr::V4(Ipv4Addr::LOCALHOST), None, extra)
        .await
        .context("serving the practice sites")
}

// ---- MiniWoB++: started and ended as the runner does (engine::env::miniwob) ----

async fn miniwob_reward(session: &Session) -> anyhow::Result<f64> {
    Ok(session
        .evaluate("typeof WOB_RAW_REWARD_GLOBAL === 'undefined' ? 0 : WOB_RAW_REWARD_GLOBAL")
        .await?
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0))
}

// ---- one episode ----------------------------------------------------------------------------

/// What the latency phase measures beside each step.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Probes {
    /// Floor, settle probe and round trip on every step.
    All,
    /// Nothing but the environment loop (throughput).
    None,
}

/// How an episode ended.
pub enum Outcome {
    /// Ran to its end.
    Finished,
    /// The deadline passed before it ended (its later steps are not counted).
    Cut,
}

/// Runs one episode: lease, start page, environment start, first observation, then
/// policy → act → done check → observe until the episode ends, the step limit, or
/// `deadline`. Steps that complete before `deadline` are recorded in `out`.
pub async fn run_episode(
    pool: &BrowserPool,
    t: &EnvTask,
    seed: u64,
    probes: Probes,
    deadline: Option<Instant>,
    out: &mut Samples,
) -> anyhow::Result<Outcome> {
    let t0 = Instant::now();
    let mut session = pool.lease().await.context("lease")?;
    let result = drive(&mut session, t, seed, probes, deadline, t0, out).await;
    let tc = Instant::now();
    session.close().await;
    if result.is_ok() {
        out.close.push(ms(tc.elapsed()));
    }
    result
}

/// The episode on a leased session, from its start page on (`t0`: when the lease was
/// asked for). [`run_episode`] leases and closes around it.
pub async fn drive(
    session: &mut Session,
    t: &EnvTask,
    seed: u64,
    probes: Probes,
    deadline: Option<Instant>,
    t0: Instant,
    out: &mut Samples,
) -> anyhow::Result<Outcome> {
    let past = |d: Option<Instant>| d.is_some_and(|d| Instant::now() >= d);
    let lease = t0.elapsed();
    let tg = Instant::now();
    let url = t.task.start_url.to_string();
    let opened = session.act(&Action::Goto(url.clone())).await?;
    if let Some(e) = opened.error {
        bail!("start page {url}: {e}");
    }
    let goto = tg.elapsed();
    let ts = Instant::now();
    let instruction: Arc<str> = if t.miniwob {
        miniwob_start(session, seed).await?.into()
    } else {
        t.task.instruction.as_str().into()
    };
    let setup = ts.elapsed();
    let to = Instant::now();
    let mut obs = Arc::new(session.observe().await?);
    let first_observe = to.elapsed();
    let reset = t0.elapsed();
    if past(deadline) {
        return Ok(Outcome::Cut);
    }
    out.reset.push(ms(reset));
    out.lease.push(ms(lease));
    out.goto.push(ms(goto));
    out.setup.push(ms(setup));
    out.first_observe.push(ms(first_observe));

    let policy = t.policy();
    let mut history: Vec<PastStep> = Vec::new();
    let mut done = false;
    for step in 0..t.max_steps {
        let input = StepInput {
            task: t.task.clone(),
            instruction: instruction.clone(),
            observation: obs.clone(),
            history: Arc::from(history.clone()),
            step,
            max_steps: t.max_steps,
            seed,
            answered: None,
        };
        let decision = policy
            .decide(input)
            .await
            .map_err(|e| anyhow::anyhow!("policy: {e}"))?;
        let Ok(action) = decision.action else {
            break;
        };
        if action.is_terminal() {
            break;
        }
        let ta = Instant::now();
        let report = session.act(&action).await?;
        let act = ta.elapsed();
        let td = Instant::now();
        if t.miniwob {
            done = miniwob_done(session).await?;
        }
        let done_check = td.elapsed();
        // Alternate which goes first, so that neither the observation nor the floor always
        // meets a page the other has just captured.
        let floor_first = probes == Probes::All && step % 2 == 1;
        if floor_first {
            floor(session, out).await?;
        }
        let to = Instant::now();
        let next = Arc::new(session.observe().await?);
        let observe = to.elapsed();
        if probes == Probes::All && !floor_first {
            floor(session, out).await?;
        }
        if past(deadline) {
            return Ok(Outcome::Cut);
        }
        out.act.push(ms(act));
        out.done.push(ms(done_check));
        out.observe.push(ms(observe));
        out.step.push(ms(act + done_check + observe));
        out.action_errors += usize::from(report.error.is_some());
        if probes == Probes::All {
            let tr = Instant::now();
            session.evaluate("0").await?.ok();
            out.rtt.push(ms(tr.elapsed()));
            let tw = Instant::now();
            session.act(&Action::Wait(0)).await?;
            out.settle_probe.push(ms(tw.elapsed()));
        }
        history.push(PastStep {
            observation: Some(obs.clone()),
            screenshot: String::new(),
            thought: decision.thought,
            action: action.to_string(),
            url: obs.url.clone(),
            title: obs.title.clone(),
            error: report.error,
        });
        let n = history.len();
        for old in history.iter_mut().take(n.saturating_sub(3)) {
            old.observation = None;
        }
        obs = next;
        if done {
            break;
        }
    }
    out.episodes += 1;
    let success = if t.miniwob {
        done && miniwob_reward(session).await? > 0.0
    } else {
        // The bundled rubrics are judged by the engine; here a full replay with no action
        // error stands in for success.
        obs.last_action_error.is_none()
    };
    out.successes += usize::from(success);
    Ok(Outcome::Finished)
}

/// The raw CDP floor on the current page: a screenshot and the element scan, back to back.
async fn floor(session: &Session, out: &mut Samples) -> anyhow::Result<()> {
    let t = Instant::now();
    let shot = session.screenshot().await?;
    let shot_ms = ms(t.elapsed());
    let t2 = Instant::now();
    let elements = session.scan_elements().await?;
    let scan_ms = ms(t2.elapsed());
    std::hint::black_box((shot.bytes.len(), elements.len()));
    out.shot.push(shot_ms);
    out.scan.push(scan_ms);
    out.floor.push(shot_ms + scan_ms);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::Value;

    use super::*;

    #[test]
    fn browsergym_tasks_are_the_peer_list() {
        assert_eq!(BROWSERGYM_TASKS.len(), 10);
        let peer = Path::new("../shared/bench/peer-browsergym/results.json");
        if let Ok(text) = std::fs::read_to_string(peer) {
            let v: Value = serde_json::from_str(&text).unwrap();
            let theirs: Vec<&str> = v["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(theirs, BROWSERGYM_TASKS);
        }
    }
}
