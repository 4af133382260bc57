//! `surfgym bench env`: the cost of an environment step, reset and context, measured on the
//! pool directly (no database, no runner), beside the raw CDP floor on the same pages and
//! against BrowserGym's recorded numbers (`../shared/bench/peer-browsergym/results.json`).
//!
//! Phases, in one run:
//! 1. latency: one context at a time, BrowserGym's ten MiniWoB++ tasks (the `miniwob-solver`
//!    where it solves the task, the `random` policy with BrowserGym's 10-step horizon where it
//!    does not) and the bundled tasks' reference solutions. A step is `act` (which includes
//!    settling) plus MiniWoB's done check plus `observe`; on the same settled page the floor
//!    is a bare `screenshot` plus `scan_elements` (the two halves of an observation with no
//!    settle and no bookkeeping). A reset is lease → start page → environment start → first
//!    observation.
//! 2. throughput: N contexts each looping MiniWoB episodes for a fixed time; steps/s,
//!    episodes/s, and the browsers' process-tree PSS while the contexts are live.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use browser_pool::{Action, BrowserPool, PoolConfig, PoolScreen, Screen, Session, TreeMemory};
use clap::Args;
use engine::environments::{miniwob_done, miniwob_start};
use engine::policy::miniwob::{MiniWobSolver, SOLVED};
use engine::policy::{PastStep, Policy, RandomPolicy, ScriptedPolicy, StepInput};
use engine::sites::SitesServer;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::Value;
use tasks::Task;

use crate::Common;

/// The ten MiniWoB++ tasks BrowserGym's benchmark rotates through
/// (`bench_browsergym.py`, `TASKS`).
const BROWSERGYM_TASKS: &[&str] = &[
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

/// BrowserGym's MiniWoB++ screen (its screenshots are 498x321).
const BROWSERGYM_SCREEN: Screen = Screen {
    width: 332,
    height: 214,
    device_scale: 1.5,
    screenshot_scale: 1.0,
};

/// BrowserGym's step limit for its random policy.
const RANDOM_MAX_STEPS: u32 = 10;

/// Figures used when no peer results file is found (RESULTS.md, 2026-11-22).
const PEER_FALLBACK: Peer = Peer {
    source: None,
    step_default_s: 0.936,
    step_fast_s: 0.355,
    reset_default_s: 2.68,
    reset_fast_s: 2.79,
    steps_per_s_8_default: 1.20,
    steps_per_s_8_fast: 1.40,
    mem_per_env_8_mb: 355.0,
};

/// Options of the environment benchmark.
#[derive(Args)]
pub struct EnvArgs {
    /// Concurrency levels of the throughput phase (contexts looping episodes at once).
    // Same id as the global `--contexts`, which then stays out of this command.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    pub contexts: Vec<usize>,
    /// Seconds each throughput level runs.
    #[arg(long, default_value_t = 20.0)]
    pub seconds: f64,
    /// Browser processes in the throughput phase; 0: one per `--per-browser` contexts,
    /// rounded up.
    // Same id as the global `--browsers`, which then stays out of this command (its own
    // default, not the global one, applies).
    #[arg(long, default_value_t = 0)]
    pub browsers: usize,
    /// Contexts per browser process when `--browsers` is not given.
    #[arg(long, default_value_t = 8)]
    pub per_browser: usize,
    /// Latency phase: episodes per MiniWoB++ task.
    #[arg(long, default_value_t = 3)]
    pub episodes: usize,
    /// Latency phase: bundled tasks to replay (default: all of them).
    #[arg(long)]
    pub bundled: Option<usize>,
    /// A short smoke run: one episode per task, six bundled tasks, contexts 1,2 for 5 s.
    #[arg(long)]
    pub quick: bool,
    /// BrowserGym's results, `bench_browsergym.py`'s JSON (repeatable: one comparison
    /// per file; default: ../shared/bench/peer-browsergym/results.json).
    #[arg(long)]
    pub peer: Vec<PathBuf>,
    /// Throughput phase policy: `solver` (the solver where it solves the task, else
    /// random) or `random` on every task (BrowserGym's random agent, about 3 steps an
    /// episode; steps/s depends on steps per episode, since resets weigh heavily).
    #[arg(long, default_value = "solver", value_parser = ["solver", "random"])]
    pub loop_policy: String,
    /// Override the pool's settle quiet window (ms of DOM quiet before an observation).
    #[arg(long)]
    pub settle_quiet_ms: Option<u64>,
    /// Experiment, not isolation: each throughput worker keeps one context for all its
    /// episodes (a reset is then goto + start + observe), to measure what a fresh browser
    /// context per episode costs.
    #[arg(long)]
    pub reuse_contexts: bool,
    /// Extra Chromium switch for the pool, without leading dashes (repeatable).
    #[arg(long = "chromium-arg", value_name = "SWITCH")]
    pub chromium_args: Vec<String>,
    /// Before starting, wait up to this many seconds for the 1-minute load average to
    /// drop under 1 (other work on the machine skews every figure).
    #[arg(long, default_value_t = 0)]
    pub wait_idle: u64,
    /// Base seed of the episodes.
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// Write every figure as JSON here too.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

// ---- statistics ---------------------------------------------------------------------------

/// Summary of a sample, in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Stats {
    n: usize,
    mean: f64,
    pub(crate) p50: f64,
    pub(crate) p90: f64,
    min: f64,
    max: f64,
}

/// Linear-interpolated percentile (numpy's default), `q` in [0, 1].
fn percentile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = pos.ceil() as usize;
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        }
    }
}

pub(crate) fn stats(ms: &[f64]) -> Stats {
    let mut v = ms.to_vec();
    v.sort_by(f64::total_cmp);
    Stats {
        n: v.len(),
        mean: if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        },
        p50: percentile(&v, 0.5),
        p90: percentile(&v, 0.9),
        min: v.first().copied().unwrap_or(f64::NAN),
        max: v.last().copied().unwrap_or(f64::NAN),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Raw timings of one set of episodes, in milliseconds.
#[derive(Debug, Default)]
pub(crate) struct Samples {
    /// act + done check + observe.
    pub(crate) step: Vec<f64>,
    act: Vec<f64>,
    done: Vec<f64>,
    observe: Vec<f64>,
    /// screenshot + scan_elements, back to back.
    floor: Vec<f64>,
    shot: Vec<f64>,
    scan: Vec<f64>,
    /// `act(wait(0))` on the settled page: the fixed cost of an action's bookkeeping and
    /// settling, with no action in it.
    settle_probe: Vec<f64>,
    /// A bare `Runtime.evaluate("0")` round trip.
    rtt: Vec<f64>,
    /// lease → first observation.
    pub(crate) reset: Vec<f64>,
    lease: Vec<f64>,
    goto: Vec<f64>,
    setup: Vec<f64>,
    first_observe: Vec<f64>,
    close: Vec<f64>,
    pub(crate) episodes: usize,
    pub(crate) successes: usize,
    action_errors: usize,
    pub(crate) failures: Vec<String>,
}

impl Samples {
    fn absorb(&mut self, o: Samples) {
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

    fn summary(&self, name: &str) -> LatencySummary {
        LatencySummary {
            name: name.to_string(),
            episodes: self.episodes,
            successes: self.successes,
            action_errors: self.action_errors,
            failures: self.failures.clone(),
            step: stats(&self.step),
            act: stats(&self.act),
            done_check: stats(&self.done),
            observe: stats(&self.observe),
            floor: stats(&self.floor),
            floor_screenshot: stats(&self.shot),
            floor_scan: stats(&self.scan),
            settle_probe: stats(&self.settle_probe),
            evaluate_rtt: stats(&self.rtt),
            reset: stats(&self.reset),
            reset_lease: stats(&self.lease),
            reset_goto: stats(&self.goto),
            reset_setup: stats(&self.setup),
            reset_first_observe: stats(&self.first_observe),
            close: stats(&self.close),
        }
    }
}

#[derive(Debug, Serialize)]
struct LatencySummary {
    name: String,
    episodes: usize,
    successes: usize,
    action_errors: usize,
    failures: Vec<String>,
    step: Stats,
    act: Stats,
    done_check: Stats,
    observe: Stats,
    floor: Stats,
    floor_screenshot: Stats,
    floor_scan: Stats,
    settle_probe: Stats,
    evaluate_rtt: Stats,
    reset: Stats,
    reset_lease: Stats,
    reset_goto: Stats,
    reset_setup: Stats,
    reset_first_observe: Stats,
    close: Stats,
}

// ---- tasks and policies -------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Driver {
    /// `miniwob-solver`.
    Solver,
    /// `random` (MiniWoB++ tasks the solver does not solve).
    Random,
    /// `scripted`: the task's reference solution.
    Scripted,
}

#[derive(Clone)]
pub(crate) struct EnvTask {
    task: Arc<Task>,
    driver: Driver,
    miniwob: bool,
    max_steps: u32,
}

impl EnvTask {
    pub(crate) fn name(&self) -> &str {
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

pub(crate) fn miniwob_tasks(base: &str) -> anyhow::Result<Vec<EnvTask>> {
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

pub(crate) fn bundled_tasks(
    bases: &BTreeMap<String, String>,
    limit: Option<usize>,
) -> Vec<EnvTask> {
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
pub(crate) async fn practice_sites(common: &Common) -> anyhow::Result<SitesServer> {
    let extra = engine::sites::find_miniwob(&common.data_dir)
        .map(|d| ("miniwob".to_string(), d))
        .into_iter()
        .collect();
    SitesServer::start_with(IpAddr::V4(Ipv4Addr::LOCALHOST), None, extra)
        .await
        .context("serving the practice sites")
}

// ---- MiniWoB++: started and ended as the runner does (engine::environments) ----

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
pub(crate) enum Probes {
    /// Floor, settle probe and round trip on every step.
    All,
    /// Nothing but the environment loop (throughput).
    None,
}

/// How an episode ended.
pub(crate) enum Outcome {
    /// Ran to its end.
    Finished,
    /// The deadline passed before it ended (its later steps are not counted).
    Cut,
}

/// Runs one episode: lease, start page, environment start, first observation, then
/// policy → act → done check → observe until the episode ends, the step limit, or
/// `deadline`. Steps that complete before `deadline` are recorded in `out`.
pub(crate) async fn run_episode(
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

async fn drive(
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

// ---- throughput -----------------------------------------------------------------------------

#[derive(Debug, Clone, Serialize)]
struct MemSample {
    at_s: f64,
    leased: usize,
    pss_mb: f64,
    rss_mb: f64,
    processes: usize,
    /// Processes under each browser (one renderer per live context, roughly): shows how
    /// the pool spreads contexts over browsers.
    per_browser_processes: Vec<usize>,
}

async fn mem_sample(pool: &BrowserPool, at: Duration) -> MemSample {
    let m: TreeMemory = pool.memory().await;
    let pids = pool.browser_pids().await;
    MemSample {
        at_s: at.as_secs_f64(),
        leased: pool.stats().leased,
        pss_mb: m.pss as f64 / 1e6,
        rss_mb: m.rss as f64 / 1e6,
        processes: m.processes,
        per_browser_processes: descendants(&pids),
    }
}

/// For each root pid, the number of processes in its tree (itself included), from /proc.
fn descendants(roots: &[u32]) -> Vec<usize> {
    let mut parent: BTreeMap<u32, u32> = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let ppid = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
                .and_then(|p| p.parse().ok());
            if let Some(ppid) = ppid {
                parent.insert(pid, ppid);
            }
        }
    }
    roots
        .iter()
        .map(|&root| {
            parent
                .keys()
                .filter(|&&pid| {
                    let mut p = pid;
                    for _ in 0..64 {
                        if p == root {
                            return true;
                        }
                        match parent.get(&p) {
                            Some(&pp) if pp != p => p = pp,
                            _ => return false,
                        }
                    }
                    false
                })
                .count()
        })
        .collect()
}

#[derive(Debug, Serialize)]
struct Level {
    contexts: usize,
    browsers: usize,
    contexts_per_browser: usize,
    window_s: f64,
    steps: usize,
    episodes: usize,
    successes: usize,
    steps_per_s: f64,
    episodes_per_s: f64,
    step: Stats,
    reset: Stats,
    errors: usize,
    error_samples: Vec<String>,
    baseline: MemSample,
    /// The last sample taken while the contexts ran.
    at_end: MemSample,
    peak_pss_mb: f64,
    pss_per_context_mb: f64,
    added_pss_per_context_mb: f64,
    own_rss_mb: f64,
    cpu: Option<CpuShare>,
}

async fn throughput_level(
    common: &Common,
    args: &EnvArgs,
    tasks: &[EnvTask],
    n: usize,
    window: Duration,
) -> anyhow::Result<Level> {
    let (browsers, per_browser) = match args.browsers {
        b @ 1.. => (b.min(n.max(1)), n.div_ceil(b.min(n.max(1)))),
        0 => {
            let per = args.per_browser.max(1);
            (n.div_ceil(per).max(1), per.min(n.max(1)))
        }
    };
    let mut cfg = pool_config(common, args)?;
    cfg.browsers = browsers;
    cfg.contexts_per_browser = per_browser;
    let pool = BrowserPool::launch(cfg)
        .await
        .context("launching the pool")?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let baseline = mem_sample(&pool, Duration::ZERO).await;

    let bar = ProgressBar::new(window.as_millis() as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>18.bold} [{bar:32.cyan/blue}] {elapsed:>3} {msg}")?
            .progress_chars("=> "),
    );
    bar.set_prefix(format!("throughput N={n}"));

    let cpu0 = cpu_snap();
    let start = Instant::now();
    let deadline = start + window;
    let mut workers = Vec::new();
    for w in 0..n {
        let pool = pool.clone();
        let tasks = tasks.to_vec();
        let seed = args.seed + 1_000_000 * (w as u64 + 1);
        let reuse = args.reuse_contexts;
        workers.push(tokio::spawn(async move {
            let mut out = Samples::default();
            let mut i = w;
            let mut errors = 0usize;
            // With --reuse-contexts: one session for all of this worker's episodes.
            let mut kept: Option<Session> = None;
            while Instant::now() < deadline {
                let t = &tasks[i % tasks.len()];
                let result = match kept.as_mut() {
                    None if reuse => match pool.lease().await {
                        Ok(s) => {
                            kept = Some(s);
                            continue;
                        }
                        Err(e) => Err(e.into()),
                    },
                    Some(session) => {
                        let t0 = Instant::now();
                        let r = drive(
                            session,
                            t,
                            seed + i as u64,
                            Probes::None,
                            Some(deadline),
                            t0,
                            &mut out,
                        )
                        .await;
                        if r.is_err()
                            && let Some(s) = kept.take()
                        {
                            s.close().await;
                        }
                        r
                    }
                    None => {
                        run_episode(
                            &pool,
                            t,
                            seed + i as u64,
                            Probes::None,
                            Some(deadline),
                            &mut out,
                        )
                        .await
                    }
                };
                match result {
                    Ok(_) => {}
                    Err(e) => {
                        errors += 1;
                        if out.failures.len() < 5 {
                            out.failures.push(format!("{}: {e:#}", t.name()));
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
                i += n.max(1);
            }
            if let Some(s) = kept {
                s.close().await;
            }
            (out, errors)
        }));
    }
    // Sample memory while the contexts run.
    let mut samples = Vec::new();
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::time::sleep(left.min(Duration::from_secs(2))).await;
        let elapsed = start.elapsed();
        if elapsed < window.mul_f64(0.98) || samples.is_empty() {
            samples.push(mem_sample(&pool, elapsed).await);
        }
        bar.set_position(elapsed.as_millis().min(window.as_millis()) as u64);
        bar.set_message(format!("{} contexts leased", pool.stats().leased));
    }
    let cpu = cpu_share(cpu0, cpu_snap());
    let mut all = Samples::default();
    let mut errors = 0;
    for w in workers {
        let (out, e) = w.await?;
        errors += e;
        all.absorb(out);
    }
    bar.finish_and_clear();
    let own_rss_mb = own_rss() as f64 / 1e6;
    pool.shutdown().await;
    let at_end = samples.last().context("no memory sample")?.clone();
    let pss_per_context_mb = at_end.pss_mb / n.max(1) as f64;
    let added_pss_per_context_mb = (at_end.pss_mb - baseline.pss_mb) / n.max(1) as f64;
    let peak_pss_mb = samples.iter().map(|s| s.pss_mb).fold(0.0, f64::max);
    let secs = window.as_secs_f64();
    Ok(Level {
        contexts: n,
        browsers,
        contexts_per_browser: per_browser,
        window_s: secs,
        steps: all.step.len(),
        episodes: all.episodes,
        successes: all.successes,
        steps_per_s: all.step.len() as f64 / secs,
        episodes_per_s: all.episodes as f64 / secs,
        step: stats(&all.step),
        reset: stats(&all.reset),
        errors,
        error_samples: all.failures,
        baseline,
        at_end,
        peak_pss_mb,
        pss_per_context_mb,
        added_pss_per_context_mb,
        own_rss_mb,
        cpu,
    })
}

/// CPU time counters at one moment, in clock ticks.
#[derive(Debug, Clone, Copy)]
struct CpuSnap {
    /// Busy time of all CPUs (/proc/stat).
    machine_busy: u64,
    /// All time of all CPUs.
    machine_total: u64,
    /// This process alone (user + system).
    own: u64,
    /// This process and every descendant (the browsers), with the time of exited
    /// descendants their parents reaped.
    tree: u64,
}

/// Where the CPU went over a phase, in percent of the whole machine (all CPUs).
#[derive(Debug, Clone, Copy, Serialize)]
struct CpuShare {
    busy_pct: f64,
    surfgym_pct: f64,
    browsers_pct: f64,
    /// Busy time outside this process tree (other work on the machine).
    other_pct: f64,
}

fn cpu_snap() -> Option<CpuSnap> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let v: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let machine_total: u64 = v.iter().sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    // pid → (parent, user + system, reaped children's user + system)
    let mut procs: BTreeMap<u32, (u32, u64, u64)> = BTreeMap::new();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command name: state ppid ... utime(12) stime(13) cutime(14) cstime(15).
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        procs.insert(pid, (num(1) as u32, num(11) + num(12), num(13) + num(14)));
    }
    let me = std::process::id();
    let in_tree = |mut p: u32| {
        for _ in 0..64 {
            if p == me {
                return true;
            }
            match procs.get(&p) {
                Some(&(pp, ..)) if pp != p && pp != 0 => p = pp,
                _ => return false,
            }
        }
        false
    };
    let tree = procs
        .iter()
        .filter(|(pid, _)| in_tree(**pid))
        .map(|(_, (_, t, c))| t + c)
        .sum();
    let own = procs.get(&me).map_or(0, |p| p.1);
    Some(CpuSnap {
        machine_busy: machine_total - idle,
        machine_total,
        own,
        tree,
    })
}

fn cpu_share(a: Option<CpuSnap>, b: Option<CpuSnap>) -> Option<CpuShare> {
    let (a, b) = (a?, b?);
    let total = b.machine_total.saturating_sub(a.machine_total).max(1) as f64;
    let pct = |x: u64| 100.0 * x as f64 / total;
    let busy = b.machine_busy.saturating_sub(a.machine_busy);
    let tree = b.tree.saturating_sub(a.tree);
    let own = b.own.saturating_sub(a.own);
    Some(CpuShare {
        busy_pct: pct(busy),
        surfgym_pct: pct(own),
        browsers_pct: pct(tree.saturating_sub(own)),
        other_pct: pct(busy.saturating_sub(tree)),
    })
}

fn cpu_cell(c: &Option<CpuShare>) -> String {
    c.map_or("-".to_string(), |c| {
        format!(
            "{:.0}% (surfgym {:.0}%, browsers {:.0}%, other {:.0}%)",
            c.busy_pct, c.surfgym_pct, c.browsers_pct, c.other_pct
        )
    })
}

/// The 1-, 5- and 15-minute load averages.
fn loadavg() -> Vec<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect()
}

/// This process's resident set size in bytes.
pub(crate) fn own_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

// ---- the peer's figures -------------------------------------------------------------------

#[derive(Debug, Clone, Serialize)]
struct Peer {
    source: Option<String>,
    step_default_s: f64,
    step_fast_s: f64,
    reset_default_s: f64,
    reset_fast_s: f64,
    steps_per_s_8_default: f64,
    steps_per_s_8_fast: f64,
    mem_per_env_8_mb: f64,
}

fn load_peers(paths: &[PathBuf]) -> anyhow::Result<Vec<Peer>> {
    let default = PathBuf::from("../shared/bench/peer-browsergym/results.json");
    if !paths.is_empty() {
        paths.iter().map(|p| load_peer(p)).collect()
    } else if default.exists() {
        Ok(vec![load_peer(&default)?])
    } else {
        Ok(vec![PEER_FALLBACK])
    }
}

fn load_peer(path: &Path) -> anyhow::Result<Peer> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let num = |ptr: &str| v.pointer(ptr).and_then(Value::as_f64);
    let level8 = |phase: &str| {
        v.get(phase)
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|l| l["k"].as_u64() == Some(8)))
            .cloned()
    };
    let d8 = level8("parallel_default");
    let f8 = level8("parallel_fast");
    let f = PEER_FALLBACK;
    let mem = |l: &Option<Value>| {
        l.as_ref()
            .and_then(|l| l["mem_peak_sum_env_total_pss_mb"].as_f64())
            .map(|m| m / 8.0)
    };
    let mems: Vec<f64> = [mem(&d8), mem(&f8)].into_iter().flatten().collect();
    Ok(Peer {
        source: Some(path.display().to_string()),
        step_default_s: num("/serial_default/step_s/median").unwrap_or(f.step_default_s),
        step_fast_s: num("/serial_fast/step_s/median").unwrap_or(f.step_fast_s),
        reset_default_s: num("/serial_default/reset_s/median").unwrap_or(f.reset_default_s),
        reset_fast_s: num("/serial_fast/reset_s/median").unwrap_or(f.reset_fast_s),
        steps_per_s_8_default: d8
            .as_ref()
            .and_then(|l| l["agg_steps_per_s"].as_f64())
            .unwrap_or(f.steps_per_s_8_default),
        steps_per_s_8_fast: f8
            .as_ref()
            .and_then(|l| l["agg_steps_per_s"].as_f64())
            .unwrap_or(f.steps_per_s_8_fast),
        mem_per_env_8_mb: if mems.is_empty() {
            f.mem_per_env_8_mb
        } else {
            mems.iter().sum::<f64>() / mems.len() as f64
        },
    })
}

// ---- the report ---------------------------------------------------------------------------

#[derive(Debug, Serialize)]
struct Verdict {
    /// What the figure is compared with: the floor, or a BrowserGym results file.
    against: String,
    target: String,
    ours: String,
    theirs: String,
    ratio: f64,
    needed: f64,
    pass: bool,
}

#[derive(Debug, Serialize)]
struct Report {
    cpus: usize,
    chromium: String,
    chromium_args: Vec<String>,
    settle_quiet_ms: u64,
    screen: Screen,
    loop_policy: String,
    reuse_contexts: bool,
    miniwob_tasks: Vec<String>,
    drivers: BTreeMap<String, Driver>,
    loadavg_at_start: Vec<f64>,
    loadavg_after_latency: Vec<f64>,
    latency_cpu: Option<CpuShare>,
    loadavg_at_end: Vec<f64>,
    cold_first_reset_ms: Option<f64>,
    latency: Vec<LatencySummary>,
    throughput: Vec<Level>,
    peers: Vec<Peer>,
    verdicts: Vec<Verdict>,
}

/// The pool a benchmark drives: the command line's browser options, and leases that
/// wait as long as a benchmark's queue of episodes may take.
pub(crate) fn bench_pool(common: &Common) -> anyhow::Result<PoolConfig> {
    if !common.chromium.exists() {
        bail!(
            "Chromium not found at {}: run ./scripts/setup.sh, or point --chromium / SURFGYM_CHROMIUM at one",
            common.chromium.display()
        );
    }
    let mut cfg = PoolConfig::new(&common.chromium);
    common.browser.apply(&mut cfg)?;
    cfg.lease_timeout = Duration::from_secs(600);
    Ok(cfg)
}

fn pool_config(common: &Common, args: &EnvArgs) -> anyhow::Result<PoolConfig> {
    let mut cfg = bench_pool(common)?;
    // The pool's own switches already lift screenshot pacing (--disable-frame-rate-limit
    // --disable-gpu-vsync, browser-pool/src/launch.rs); these come on top.
    cfg.extra_args = args.chromium_args.clone();
    if let Some(q) = args.settle_quiet_ms {
        cfg.settle_quiet = Duration::from_millis(q);
    }
    Ok(cfg)
}

fn row(label: &str, s: &Stats) -> String {
    format!(
        "| {label} | {} | {:.1} | {:.1} | {:.1} |",
        s.n, s.p50, s.p90, s.mean
    )
}

/// Runs the benchmark and prints its tables.
pub async fn run(common: &Common, mut args: EnvArgs) -> anyhow::Result<ExitCode> {
    if args.quick {
        args.episodes = 1;
        args.bundled = Some(args.bundled.unwrap_or(6));
        args.contexts = vec![1, 2];
        args.seconds = args.seconds.min(5.0);
    }
    let peers = load_peers(&args.peer)?;
    let waited = Instant::now();
    while args.wait_idle > 0
        && waited.elapsed() < Duration::from_secs(args.wait_idle)
        && loadavg().first().is_some_and(|l| *l >= 1.0)
    {
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    let loadavg_at_start = loadavg();
    println!("load average at start: {loadavg_at_start:?}");
    let sites = practice_sites(common).await?;
    let mw = match sites.bases().get("miniwob") {
        Some(base) => miniwob_tasks(base)?,
        None => {
            eprintln!(
                "warning: MiniWoB++ not found (run ./scripts/setup-python.sh or set SURFGYM_MINIWOB_DIR): \
                 MiniWoB rows are skipped and throughput loops the bundled tasks"
            );
            Vec::new()
        }
    };
    let bundled = bundled_tasks(sites.bases(), args.bundled);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let drivers: BTreeMap<String, Driver> = mw
        .iter()
        .map(|t| (t.name().to_string(), t.driver))
        .collect();
    let base = pool_config(common, &args)?;
    println!(
        "bench env: {cpus} CPUs, {} (extra switches: {:?}), screen {}, settle quiet {} ms, {} MiniWoB++ tasks x {} episodes, {} bundled tasks",
        common.chromium.display(),
        args.chromium_args,
        Screen::of(&base).label(),
        base.settle_quiet.as_millis(),
        mw.len(),
        args.episodes,
        bundled.len()
    );
    if !mw.is_empty() {
        let random: Vec<&str> = mw
            .iter()
            .filter(|t| t.driver == Driver::Random)
            .map(EnvTask::name)
            .collect();
        println!(
            "MiniWoB++ tasks (BrowserGym's ten): miniwob-solver on {}, random policy (max {RANDOM_MAX_STEPS} steps, as BrowserGym) on {}",
            mw.len() - random.len(),
            if random.is_empty() {
                "none".to_string()
            } else {
                random.join(", ")
            }
        );
    }
    for peer in &peers {
        match &peer.source {
            Some(p) => println!("BrowserGym figures from {p}"),
            None => println!("BrowserGym figures: recorded constants (no results.json found)"),
        }
    }
    let screen = Screen::of(&base);
    if screen != BROWSERGYM_SCREEN {
        let Screen {
            width: w,
            height: h,
            device_scale: scale,
            ..
        } = BROWSERGYM_SCREEN;
        println!(
            "note: BrowserGym renders MiniWoB++ at {w}x{h} with device scale {scale} (so do surfgym's campaigns: the tasks carry that screen); this bench renders every task at its one screen: pass --viewport {w}x{h} --device-scale {scale} to compare on the same screen"
        );
    }

    // ---- phase 1: latency, one context at a time ----
    let mut cfg = pool_config(common, &args)?;
    cfg.browsers = 1;
    cfg.contexts_per_browser = 1;
    let pool = BrowserPool::launch(cfg)
        .await
        .context("launching the pool")?;
    // The very first lease in a fresh browser also starts its first renderer: reported
    // apart, as BrowserGym reports its cold first reset.
    let mut warm = Samples::default();
    let first = mw.first().or(bundled.first()).context("no tasks")?;
    run_episode(&pool, first, args.seed, Probes::None, None, &mut warm).await?;
    let cold_first_reset_ms = warm.reset.first().copied();

    let latency_cpu0 = cpu_snap();
    let plan: Vec<(&str, &EnvTask, u64)> = (0..args.episodes)
        .flat_map(|e| {
            mw.iter()
                .enumerate()
                .map(move |(i, t)| ("miniwob", t, (e * 100 + i) as u64))
        })
        .chain(bundled.iter().map(|t| ("bundled", t, 0)))
        .collect();
    let bar = ProgressBar::new(plan.len() as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>18.bold} [{bar:32.cyan/blue}] {pos:>4}/{len:4} {msg} {elapsed_precise}",
        )?
        .progress_chars("=> "),
    );
    bar.set_prefix("latency");
    let mut sets: BTreeMap<&str, Samples> = BTreeMap::new();
    for (set, t, k) in plan {
        bar.set_message(t.name().to_string());
        let out = sets.entry(set).or_default();
        if let Err(e) = run_episode(&pool, t, args.seed + k, Probes::All, None, out).await {
            bar.println(format!("  {}: {e:#}", t.name()));
            out.failures.push(format!("{}: {e:#}", t.name()));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let latency_cpu = cpu_share(latency_cpu0, cpu_snap());
    pool.shutdown().await;
    let mut latency: Vec<LatencySummary> = sets.iter().map(|(k, s)| s.summary(k)).collect();
    let mut both = Samples::default();
    for (_, s) in sets {
        both.absorb(s);
    }
    latency.push(both.summary("all"));

    println!();
    for l in &latency {
        println!(
            "### {}: {} episodes ({} successful), {} steps, {} action errors, {} failures",
            l.name,
            l.episodes,
            l.successes,
            l.step.n,
            l.action_errors,
            l.failures.len()
        );
        println!("| ms | n | p50 | p90 | mean |");
        println!("|---|---|---|---|---|");
        for (label, s) in [
            ("step = act + done check + observe", &l.step),
            ("  act (incl. settle)", &l.act),
            ("  done check (MiniWoB)", &l.done_check),
            ("  observe", &l.observe),
            ("floor = screenshot + scan_elements", &l.floor),
            ("  screenshot", &l.floor_screenshot),
            ("  scan_elements", &l.floor_scan),
            ("act(wait(0)) on a settled page", &l.settle_probe),
            ("evaluate(\"0\") round trip", &l.evaluate_rtt),
            ("reset = lease → first observation", &l.reset),
            ("  lease", &l.reset_lease),
            ("  goto start page (incl. settle)", &l.reset_goto),
            ("  MiniWoB start", &l.reset_setup),
            ("  first observe", &l.reset_first_observe),
            ("close (after the episode)", &l.close),
        ] {
            if s.n > 0 {
                println!("{}", row(label, s));
            }
        }
        println!(
            "step / floor (p50): **{:.2}x**, p90: {:.2}x\n",
            l.step.p50 / l.floor.p50,
            l.step.p90 / l.floor.p90
        );
    }
    if let Some(c) = cold_first_reset_ms {
        println!("cold first reset (first lease in a fresh browser): {c:.0} ms\n");
    }

    let loadavg_after_latency = loadavg();
    println!(
        "load average after the latency phase: {loadavg_after_latency:?}; CPU during it: {}\n",
        cpu_cell(&latency_cpu)
    );

    // ---- phase 2: throughput ----
    let window = Duration::from_secs_f64(args.seconds.max(1.0));
    let random_loop: Vec<EnvTask> = mw
        .iter()
        .map(|t| EnvTask {
            driver: Driver::Random,
            max_steps: RANDOM_MAX_STEPS,
            ..t.clone()
        })
        .collect();
    let loop_tasks = if mw.is_empty() {
        &bundled
    } else if args.loop_policy == "random" {
        &random_loop
    } else {
        &mw
    };
    println!(
        "throughput: {} policy over {} tasks, {:.0} s per level{}",
        args.loop_policy,
        loop_tasks.len(),
        window.as_secs_f64(),
        if args.reuse_contexts {
            ", one context per worker reused across episodes (--reuse-contexts: not isolated)"
        } else {
            ", a fresh context per episode"
        }
    );
    let mut levels = Vec::new();
    for &n in &args.contexts {
        let level = throughput_level(common, &args, loop_tasks, n.max(1), window).await?;
        println!(
            "  N={:<3} {} browser(s) x {} contexts: {:>6.2} steps/s {:>5.2} episodes/s, step p50 {:.0} ms, reset p50 {:.0} ms, PSS {:.0} MB ({:.0} MB/context), {} errors",
            level.contexts,
            level.browsers,
            level.contexts_per_browser,
            level.steps_per_s,
            level.episodes_per_s,
            level.step.p50,
            level.reset.p50,
            level.at_end.pss_mb,
            level.pss_per_context_mb,
            level.errors
        );
        for e in &level.error_samples {
            println!("      {e}");
        }
        levels.push(level);
    }
    println!();
    println!(
        "| contexts | browsers | steps/s | episodes/s | steps/episode | success | step p50 / p90 ms | reset p50 / p90 ms | CPU | empty pool PSS MB | PSS MB (live) | peak PSS MB | MB / context | added MB / context | processes per browser | errors |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for l in &levels {
        println!(
            "| {} | {} | {:.2} | {:.2} | {:.1} | {}/{} | {:.0} / {:.0} | {:.0} / {:.0} | {} | {:.0} | {:.0} ({} leased) | {:.0} | {:.0} | {:.0} | {:?} | {} |",
            l.contexts,
            l.browsers,
            l.steps_per_s,
            l.episodes_per_s,
            l.steps as f64 / l.episodes.max(1) as f64,
            l.successes,
            l.episodes,
            l.step.p50,
            l.step.p90,
            l.reset.p50,
            l.reset.p90,
            cpu_cell(&l.cpu),
            l.baseline.pss_mb,
            l.at_end.pss_mb,
            l.at_end.leased,
            l.peak_pss_mb,
            l.pss_per_context_mb,
            l.added_pss_per_context_mb,
            l.at_end.per_browser_processes,
            l.errors
        );
    }
    if let Some(l) = levels.first() {
        println!("(surfgym's own RSS: {:.0} MB)", l.own_rss_mb);
    }

    // ---- comparison ----
    let find = |name: &str| latency.iter().find(|l| l.name == name);
    let mut verdicts = Vec::new();
    let mut verdict =
        |against: &str, target: &str, ours: String, theirs: String, ratio: f64, needed: f64| {
            verdicts.push(Verdict {
                against: against.to_string(),
                target: target.to_string(),
                ours,
                theirs,
                ratio,
                needed,
                pass: ratio >= needed,
            });
        };
    for name in ["miniwob", "bundled"] {
        if let Some(l) = find(name) {
            verdict(
                "raw CDP floor",
                &format!("step within 1.5x of the raw CDP floor ({name}, p50)"),
                format!("{:.0} ms", l.step.p50),
                format!("floor {:.0} ms", l.floor.p50),
                // Expressed as floor/step so that "higher is better" as for the others.
                l.floor.p50 / l.step.p50,
                1.0 / 1.5,
            );
        }
    }
    for peer in &peers {
        let label = peer
            .source
            .clone()
            .unwrap_or_else(|| "BrowserGym, recorded".into());
        if let Some(l) = find("miniwob") {
            verdict(
                &label,
                "step >= 5x faster than BrowserGym fast",
                format!("{:.0} ms", l.step.p50),
                format!("{:.0} ms", peer.step_fast_s * 1000.0),
                peer.step_fast_s * 1000.0 / l.step.p50,
                5.0,
            );
            verdict(
                &label,
                "step >= 10x faster than BrowserGym default",
                format!("{:.0} ms", l.step.p50),
                format!("{:.0} ms", peer.step_default_s * 1000.0),
                peer.step_default_s * 1000.0 / l.step.p50,
                10.0,
            );
            let theirs = peer.reset_default_s.min(peer.reset_fast_s);
            verdict(
                &label,
                "reset >= 10x faster than BrowserGym",
                format!("{:.0} ms", l.reset.p50),
                format!("{:.0} ms", theirs * 1000.0),
                theirs * 1000.0 / l.reset.p50,
                10.0,
            );
        }
        if let Some(l) = levels.iter().find(|l| l.contexts == 8) {
            let theirs = peer.steps_per_s_8_fast.max(peer.steps_per_s_8_default);
            verdict(
                &label,
                "steps/s at 8 contexts >= 10x BrowserGym at 8 envs",
                format!("{:.2}", l.steps_per_s),
                format!("{theirs:.2}"),
                l.steps_per_s / theirs,
                10.0,
            );
            verdict(
                &label,
                "memory per context <= 1/3 of BrowserGym's per env (8)",
                format!("{:.0} MB", l.pss_per_context_mb),
                format!("{:.0} MB", peer.mem_per_env_8_mb),
                peer.mem_per_env_8_mb / l.pss_per_context_mb,
                3.0,
            );
        }
    }
    println!();
    println!("| against | target | surfgym | floor / BrowserGym | ratio | needed | verdict |");
    println!("|---|---|---|---|---|---|---|");
    for v in &verdicts {
        let (ratio, needed) = if v.target.starts_with("step within") {
            (
                format!("step/floor {:.2}x", 1.0 / v.ratio),
                "<= 1.50x".to_string(),
            )
        } else {
            (format!("{:.2}x", v.ratio), format!(">= {:.0}x", v.needed))
        };
        println!(
            "| {} | {} | {} | {} | {ratio} | {needed} | {} |",
            v.against,
            v.target,
            v.ours,
            v.theirs,
            if v.pass { "PASS" } else { "MISS" }
        );
    }

    let loadavg_at_end = loadavg();
    println!("\nload average at the end: {loadavg_at_end:?}");
    if let Some(path) = &args.json {
        let report = Report {
            cpus,
            chromium: common.chromium.display().to_string(),
            chromium_args: args.chromium_args.clone(),
            settle_quiet_ms: base.settle_quiet.as_millis() as u64,
            screen,
            loop_policy: args.loop_policy.clone(),
            reuse_contexts: args.reuse_contexts,
            miniwob_tasks: mw.iter().map(|t| t.name().to_string()).collect(),
            drivers,
            loadavg_at_start,
            loadavg_after_latency,
            latency_cpu,
            loadavg_at_end,
            cold_first_reset_ms,
            latency,
            throughput: levels,
            peers,
            verdicts,
        };
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("\nwrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.5), 2.5);
        assert!((percentile(&v, 0.9) - 3.7).abs() < 1e-9);
        assert!(percentile(&[], 0.5).is_nan());
        let s = stats(&[3.0, 1.0, 2.0]);
        assert_eq!((s.n, s.p50, s.min, s.max), (3, 2.0, 1.0, 3.0));
    }

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
