//! One training run, iteration by iteration: horizons from the curriculum, rollout
//! campaigns of the newest version on the training tasks (groups of rollouts at
//! temperature 1), judged, selected, one update, a published and promoted version, then a
//! greedy evaluation campaign of that version on the held-out tasks at a fixed horizon
//! and the iteration's figures. Iteration 0 evaluates the untrained model.
//!
//! Which phases run when is [`crate::schedule`]'s decision: one after the other (the
//! synchronous loop), or with `overlap` the next iteration's rollouts beside the update
//! and the evaluation, within the staleness bound. The phases are in [`rollout`],
//! [`train`] and [`eval`]; this module drives them, at most one of each kind at a time.
//!
//! Every phase ends with one write to the store, and every phase can be redone: a run
//! killed at any point resumes every phase that was in flight (each iteration's row says
//! which phase it is in, so two or three iterations can be in flight). Campaigns resume
//! through the durable queue; an update interrupted before its version was published is
//! redone from the last published version, and one published but not recorded is taken
//! as it is (versions are published atomically and never overwritten), so no update is
//! ever applied twice.
//!
//! Two version links live in the run's directory: `current`, which the sampling policy
//! follows (moved by each update as soon as its version is recorded, so rollouts pick a
//! new version up at their next episode, each episode keeping the version it started
//! on), and `eval`, which the greedy policy follows (moved only by an evaluation, to its
//! iteration's version, so an evaluation runs exactly that version whatever is published
//! meanwhile).

mod baseline;
mod eval;
mod rollout;
mod train;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use engine::{CampaignSpec, Engine};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use inference::grammar::Constraint;
use inference::version_link::promote;
use policy::follow::Following;
use policy::onnx::{self, OnnxBackend, OnnxOptions};
use policy::{BatchLimits, Demonstrated, Policy, PolicyRegistry};
use store::{IterationView, RunView, Store};
use training::{TrainConfig, Trainer};
use uuid::Uuid;

use crate::RunError;
use crate::config::{HeldOut, RunConfig};
use crate::schedule::{self, Stage};
use store::{Phase, Status};

/// What a run reports while it works.
#[derive(Debug, Clone)]
pub enum Event {
    /// A phase of an iteration began.
    Phase {
        /// Iteration.
        iteration: u32,
        /// rollout, train or eval.
        phase: Phase,
    },
    /// A campaign is about to run (a rollout or an evaluation).
    Campaign {
        /// Iteration.
        iteration: u32,
        /// The campaign.
        id: Uuid,
    },
    /// The update made an optimiser step.
    Step {
        /// Iteration.
        iteration: u32,
        /// Steps done.
        done: usize,
        /// Steps in all.
        total: usize,
        /// That step's loss.
        loss: f64,
    },
    /// An iteration finished.
    Done(Box<IterationView>),
}

/// The run's two policies: sampling for rollouts (following the run's `current` link),
/// greedy for evaluations (following its `eval` link).
pub struct RunPolicies {
    /// Temperature 1.
    pub sample: Arc<Following>,
    /// Greedy.
    pub greedy: Arc<Following>,
    /// The demonstrator's policy, when the run has one (`demonstrator`).
    pub demo: Option<Arc<dyn Policy>>,
}

impl RunPolicies {
    /// All of them, for the engine's registry.
    pub fn all(&self) -> Vec<Arc<dyn Policy>> {
        let mut all: Vec<Arc<dyn Policy>> = vec![self.sample.clone(), self.greedy.clone()];
        all.extend(self.demo.clone());
        all
    }
}

/// Where a run keeps its versions and its version link.
pub fn run_dir(root: &Path, run: Uuid) -> PathBuf {
    root.join(run.to_string())
}

/// The names the run's policies are registered under (stable across restarts, so a
/// resumed run's campaigns find them).
pub fn policy_names(run: Uuid) -> (String, String) {
    let short = &run.simple().to_string()[..8];
    (format!("run-{short}-sample"), format!("run-{short}-greedy"))
}

/// The name a run's demonstrator policy is registered under.
pub fn demo_name(run: Uuid) -> String {
    format!("run-{}-demo", &run.simple().to_string()[..8])
}

/// The link the sampling policy follows: the newest recorded version.
const CURRENT: &str = "current";
/// The link the greedy policy follows: the version under evaluation.
const EVAL: &str = "eval";

/// Prepares a run's directory, points its version links at the newest recorded version
/// (the base model when none was published yet) and loads its two policies. Register
/// them ([`RunPolicies::all`]) before building the engine that runs it. (An evaluation
/// moves the `eval` link to its own iteration's version before it starts.)
pub fn prepare(
    cfg: &RunConfig,
    view: &RunView,
    root: &Path,
    dylib: &Path,
) -> Result<RunPolicies, RunError> {
    let dir = run_dir(root, view.id);
    std::fs::create_dir_all(&dir).map_err(|e| RunError::io(&dir, e))?;
    if let Some(served) = &cfg.served {
        crate::served::base_version(&dir, served)?;
    }
    let current = view
        .version
        .as_ref()
        .map_or_else(|| base_version(cfg, &dir), PathBuf::from);
    let (link, eval_link) = (dir.join(CURRENT), dir.join(EVAL));
    for l in [&link, &eval_link] {
        promote(&current, l).map_err(|e| RunError::io(l, e))?;
    }
    let (sample_name, greedy_name) = policy_names(view.id);
    let limits = BatchLimits {
        max_batch: 8,
        max_wait: Duration::from_millis(10),
    };
    let follow = |name: &str, link: &Path, t: f32| match &cfg.served {
        Some(served) => crate::served::following(cfg, served, name, link, t).map(Arc::new),
        None => onnx::following(name, link, policy_options(cfg, link, dylib, t), limits)
            .map(Arc::new)
            .map_err(|e| RunError::Config(format!("model: {e}"))),
    };
    let demo = match &cfg.demonstrator {
        Some(teacher) => {
            let t = PolicyRegistry::builtin().get(teacher).ok_or_else(|| {
                RunError::Config(format!("demonstrator: no built-in policy {teacher:?}"))
            })?;
            Some(demonstrator(cfg, &demo_name(view.id), t, dylib)?)
        }
        None => None,
    };
    Ok(RunPolicies {
        sample: follow(&sample_name, &link, 1.0)?,
        greedy: follow(&greedy_name, &eval_link, 0.0)?,
        demo,
    })
}

/// How the run's policies load and prompt the model in `dir` (every version, and a
/// demonstrator's student, prompted alike: what is trained on is what is rolled out).
pub fn policy_options(cfg: &RunConfig, dir: &Path, dylib: &Path, temperature: f32) -> OnnxOptions {
    let mut o = OnnxOptions::new(dir, dylib);
    o.device = cfg.devices.policy_device();
    o.threads = cfg.devices.policy_threads as usize;
    o.generation.temperature = temperature;
    o.generation.max_new_tokens = cfg.policy.max_new_tokens as usize;
    o.answer_prefix = cfg.policy.answer_prefix.clone();
    o.prompt.actions = cfg.policy.actions;
    o.prompt.elements = cfg.policy.elements;
    if !cfg.policy.prefix_cache {
        o.prefix_cache_bytes = 0;
    }
    o.constrained = match cfg.policy.constrained.as_deref() {
        Some("reasoned") => Some(Constraint::Reasoned),
        Some(_) => Some(Constraint::Action),
        None => None,
    };
    o
}

/// `teacher` acting, each step recorded as the run's base model, prompted as the run
/// prompts it, would have written the action ([`Demonstrated`]): a warm start's
/// behaviour-cloning data, trainable by `train step` like the run's own rollouts.
pub fn demonstrator(
    cfg: &RunConfig,
    name: &str,
    teacher: Arc<dyn Policy>,
    dylib: &Path,
) -> Result<Arc<dyn Policy>, RunError> {
    let model = cfg.onnx_model().ok_or_else(|| {
        RunError::Config("demonstrator: a warm start needs an ONNX model (model)".into())
    })?;
    let student = OnnxBackend::load(policy_options(cfg, model, dylib, 0.0))
        .map_err(|e| RunError::Config(format!("model: {e}")))?;
    Ok(Arc::new(Demonstrated::new(
        name,
        teacher,
        Arc::new(student),
    )))
}

/// Checks what needs the store and the model, before anything runs: the training and
/// held-out tasks exist (and differ), and the trainer can train the model.
pub async fn check(store: &Store, cfg: &RunConfig) -> Result<(), RunError> {
    let train = store.load_tasks(&cfg.train).await?;
    if train.is_empty() {
        return Err(RunError::Config(
            "train: no registered task matches the filter".into(),
        ));
    }
    if let HeldOut::Tasks(f) = &cfg.held_out {
        let held = store.load_tasks(f).await?;
        if held.is_empty() {
            return Err(RunError::Config(
                "held_out.tasks: no registered task matches the filter (a split with no held-out tasks)".into(),
            ));
        }
        let train_ids: std::collections::HashSet<&str> =
            train.iter().map(|t| t.id.as_str()).collect();
        if let Some(t) = held.iter().find(|t| train_ids.contains(t.id.as_str())) {
            return Err(RunError::Config(format!(
                "held_out.tasks: task {} is also a training task (held-out tasks must not be trained on; use \"held_out\": \"seeds\" for the same tasks on other seeds)",
                t.id
            )));
        }
    }
    let model = match (&cfg.served, cfg.onnx_model()) {
        (Some(served), _) => return served.check(cfg).await,
        (None, Some(m)) => m.to_path_buf(),
        (None, None) => return Err(RunError::Config("model: missing".into())),
    };
    let devices = cfg.devices.clone();
    tokio::task::spawn_blocking(move || {
        // A GPU named but missing is refused now, not after the first campaign.
        devices.open_train().map_err(RunError::Config)?;
        Trainer::load(&model, TrainConfig::default(), &candle_core::Device::Cpu)
            .map(|_| ())
            .map_err(|e| RunError::Config(format!("model: the trainer cannot train it: {e}")))
    })
    .await
    .map_err(|e| RunError::Config(format!("model: {e}")))??;
    Ok(())
}

/// Creates a run (after [`check`]).
pub async fn create(store: &Store, cfg: &RunConfig) -> Result<Uuid, RunError> {
    cfg.validate().map_err(RunError::Config)?;
    check(store, cfg).await?;
    let id = Uuid::new_v4();
    let value = serde_json::to_value(cfg).map_err(|e| RunError::Config(e.to_string()))?;
    store.create_run(id, &cfg.name, &value).await?;
    Ok(id)
}

/// Everything a phase needs.
struct Ctx<'a> {
    engine: &'a Engine,
    policies: &'a RunPolicies,
    cfg: RunConfig,
    run: Uuid,
    dir: PathBuf,
    dylib: PathBuf,
    events: &'a (dyn Fn(Event) + Send + Sync),
    /// The built-in trainer as its last update left it, with the version it published:
    /// the next update, which starts from that version, goes on from memory instead of
    /// reading the weights and AdamW's moments back (`train::run`). Empty at start, so
    /// a resumed run loads from disk.
    trainer: std::sync::Mutex<Option<training::Trainer>>,
    /// The frozen parts the replays run, loaded by the first update and kept.
    frozen: std::sync::Mutex<Option<crate::update::Frozen>>,
}

/// Runs (or resumes) a run to its end.
pub async fn execute(
    engine: &Engine,
    policies: &RunPolicies,
    run: Uuid,
    root: &Path,
    dylib: &Path,
    events: &(dyn Fn(Event) + Send + Sync),
) -> Result<RunView, RunError> {
    let store = engine.store();
    let view = store.get_run(run).await?.ok_or(RunError::NoRun(run))?;
    if matches!(view.state, Status::Completed | Status::Cancelled) {
        return Ok(view);
    }
    let cfg: RunConfig =
        serde_json::from_value(view.config.clone()).map_err(|e| RunError::Config(e.to_string()))?;
    store.set_run_state(run, Status::Running, None).await?;
    let ctx = Ctx {
        engine,
        policies,
        cfg,
        run,
        dir: run_dir(root, run),
        dylib: dylib.to_path_buf(),
        events,
        trainer: std::sync::Mutex::new(None),
        frozen: std::sync::Mutex::new(None),
    };
    match drive(&ctx).await {
        Ok(true) => store.set_run_state(run, Status::Completed, None).await?,
        Ok(false) => {}
        Err(e) => {
            // A run cancelled (its campaigns with it) or paused meanwhile stopped as asked.
            if let Some(v) = store.get_run(run).await?
                && matches!(v.state, Status::Cancelled | Status::Paused)
            {
                return Ok(v);
            }
            store
                .set_run_state(run, Status::Failed, Some(&e.to_string()))
                .await?;
            return Err(e);
        }
    }
    store.get_run(run).await?.ok_or(RunError::NoRun(run))
}

type Running<'a> = FuturesUnordered<BoxFuture<'a, ((u32, Phase), Result<(), RunError>)>>;

/// Starts every phase the schedule allows, again each time one ends, until the run is
/// done (true), halted (false) or a phase failed. A failure or a halt starts nothing new
/// but lets the phases in flight end (each ends with its write, so nothing is cut short).
async fn drive(ctx: &Ctx<'_>) -> Result<bool, RunError> {
    let store = ctx.engine.store();
    let mut running: Running<'_> = FuturesUnordered::new();
    let mut in_flight: Vec<(u32, Phase)> = Vec::new();
    let mut failure: Option<RunError> = None;
    loop {
        if failure.is_none() && !halted(ctx).await? {
            let its = store.run_iterations(ctx.run).await?;
            let (stages, budget) = (stages(&its, ctx.cfg.iterations), budget(&its, &ctx.cfg));
            if schedule::finished(&stages, &in_flight, budget) {
                return Ok(true);
            }
            let ready = schedule::ready(&stages, &in_flight, ctx.cfg.max_staleness(), budget);
            for (idx, phase) in ready {
                (ctx.events)(Event::Phase {
                    iteration: idx,
                    phase,
                });
                in_flight.push((idx, phase));
                running.push(Box::pin(async move {
                    ((idx, phase), run_phase(ctx, idx, phase).await)
                }));
            }
        }
        let Some((ended, result)) = running.next().await else {
            break;
        };
        in_flight.retain(|p| *p != ended);
        match result {
            Err(e) => {
                tracing::error!(iteration = ended.0, phase = %ended.1, error = %e, "phase failed");
                failure.get_or_insert(e);
            }
            Ok(()) if ended.1 == Phase::Eval => {
                let it = reload(store, ctx.run, ended.0 as i32).await?;
                (ctx.events)(Event::Done(Box::new(it)));
            }
            Ok(()) => {}
        }
    }
    if let Some(e) = failure {
        return Err(e);
    }
    if halted(ctx).await? {
        return Ok(false);
    }
    // Nothing in flight and nothing may start, yet not done: the schedule cannot say so
    // for a consistent store; say what the store holds instead of spinning.
    let its = store.run_iterations(ctx.run).await?;
    let stages = stages(&its, ctx.cfg.iterations);
    if schedule::finished(&stages, &[], budget(&its, &ctx.cfg)) {
        return Ok(true);
    }
    Err(RunError::Config(format!(
        "the run's iterations are in phases no phase can follow: {stages:?}"
    )))
}

/// Each iteration's stage, 0..=iterations.
fn stages(its: &[IterationView], iterations: u32) -> Vec<Stage> {
    (0..=iterations as i32)
        .map(|i| {
            its.iter()
                .find(|it| it.idx == i)
                .map_or(Stage::NotStarted, |it| Stage::of(Some(it.phase)))
        })
        .collect()
}

/// The environment steps the run's rollouts recorded, against its budget.
fn budget<'a>(
    its: impl IntoIterator<Item = &'a IterationView>,
    cfg: &RunConfig,
) -> schedule::Budget {
    schedule::Budget {
        spent: its
            .into_iter()
            .filter_map(|it| it.env_steps)
            .map(|s| s.max(0) as u64)
            .sum(),
        max: cfg.max_env_steps,
    }
}

async fn run_phase(ctx: &Ctx<'_>, idx: u32, phase: Phase) -> Result<(), RunError> {
    match phase {
        Phase::Rollout => rollout::run(ctx, idx).await,
        Phase::Train => train::run(ctx, idx).await,
        Phase::Eval => eval::run(ctx, idx).await,
    }
}

/// The version the run is at now (the newest recorded).
async fn current_version(ctx: &Ctx<'_>) -> Result<PathBuf, RunError> {
    let v = ctx
        .engine
        .store()
        .get_run(ctx.run)
        .await?
        .ok_or(RunError::NoRun(ctx.run))?;
    Ok(v.version
        .map_or_else(|| base_version(&ctx.cfg, &ctx.dir), PathBuf::from))
}

/// The version a run starts from: its ONNX model, or a served run's `v0` (the base
/// model's name, written by [`prepare`]).
pub fn base_version(cfg: &RunConfig, dir: &Path) -> PathBuf {
    cfg.onnx_model()
        .map_or_else(|| dir.join("v0"), Path::to_path_buf)
}

/// Points the run's `link` at `version` and waits until `policy` serves it.
async fn serve(
    ctx: &Ctx<'_>,
    link: &str,
    version: &Path,
    policy: &Following,
) -> Result<(), RunError> {
    let link = ctx.dir.join(link);
    promote(version, &link).map_err(|e| RunError::io(&link, e))?;
    catch_up(policy).await
}

/// Waits until `policy` serves what its link names.
async fn catch_up(policy: &Following) -> Result<(), RunError> {
    policy
        .catch_up()
        .await
        .map_err(|r| RunError::Config(format!("version {}: {}", r.dir.display(), r.why)))?;
    Ok(())
}

/// Whether the run was paused or cancelled (through the API): checked before phases
/// start, so a phase is never cut short by a pause.
async fn halted(ctx: &Ctx<'_>) -> Result<bool, RunError> {
    let v = ctx.engine.store().get_run(ctx.run).await?;
    Ok(v.is_some_and(|v| matches!(v.state, Status::Paused | Status::Cancelled)))
}

async fn reload(store: &Store, run: Uuid, i: i32) -> Result<IterationView, RunError> {
    store
        .run_iterations(run)
        .await?
        .into_iter()
        .find(|it| it.idx == i)
        .ok_or(RunError::NoRun(run))
}

async fn run_campaign(ctx: &Ctx<'_>, idx: u32, id: Uuid) -> Result<(), RunError> {
    (ctx.events)(Event::Campaign { iteration: idx, id });
    let status = ctx.engine.run_campaign(id).await?;
    if status != Status::Completed {
        return Err(RunError::Config(format!(
            "campaign {id} ended {status}, not completed"
        )));
    }
    Ok(())
}

/// Milliseconds since the Unix epoch, as phase times are recorded.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Records in `report` when `phase` started and ended (`phases.<phase>.start_ms` and
/// `end_ms`, Unix ms): with overlap, the phases of neighbouring iterations interleave,
/// and these say how.
fn stamp(report: &mut serde_json::Value, phase: Phase, start_ms: i64) {
    if !report.is_object() {
        *report = serde_json::json!({});
    }
    report["phases"][phase.as_str()] =
        serde_json::json!({"start_ms": start_ms, "end_ms": now_ms()});
}

/// The id of the run's campaign for `purpose`: derived, not drawn, so that a run resumed
/// after a crash between creating a campaign and recording it in its iteration finds that
/// campaign again instead of creating a second one.
pub fn campaign_id(run: Uuid, purpose: &str) -> Uuid {
    Uuid::new_v5(&run, purpose.as_bytes())
}

/// The name of one of the run's campaigns: the run's name, then what the campaign is for.
/// The run's name is cut (at a character boundary, marked with `…`) when the whole would
/// pass [`engine::MAX_CAMPAIGN_NAME_BYTES`], so that a long run name never stops a run at
/// its first campaign.
fn campaign_name(run: &str, detail: &str) -> String {
    const MAX: usize = engine::MAX_CAMPAIGN_NAME_BYTES;
    let full = format!("{run} · {detail}");
    if full.len() <= MAX {
        return full;
    }
    let detail = format!(" · {detail}");
    match MAX.checked_sub(detail.len() + '…'.len_utf8()) {
        // Room for a recognisable part of the run's name: cut the name, keep the detail.
        Some(room) if room >= 40 => format!("{}…{detail}", prefix(run, room).trim_end()),
        // A detail too long on its own: cut the end, rather than fail the run.
        _ => prefix(&full, MAX).to_string(),
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends at a character boundary.
fn prefix(s: &str, max: usize) -> &str {
    &s[..s.floor_char_boundary(max)]
}

/// The evaluation campaign of iteration `idx` for `policy`: the same held-out episodes
/// (tasks, seeds, horizon) in every iteration, and for any other policy compared with the
/// run (e.g. `random`).
pub fn eval_spec(cfg: &RunConfig, policy: &str, idx: u32) -> CampaignSpec {
    let tasks = match &cfg.held_out {
        HeldOut::Seeds => cfg.train.clone(),
        HeldOut::Tasks(f) => f.clone(),
    };
    let mut spec = CampaignSpec {
        name: Some(campaign_name(
            &cfg.name,
            &format!("iteration {idx} · held-out evaluation"),
        )),
        policy: Some(policy.to_string()),
        tasks: Some(tasks),
        rollouts_per_task: Some(cfg.eval_rollouts),
        max_steps: Some(cfg.eval_horizon),
        answer_checks: Some(cfg.eval_answer_checks),
        // One seed for every evaluation, never a training seed's.
        seed: Some(EVAL_SEED ^ cfg.seed),
        ..Default::default()
    };
    cfg.web.apply(&mut spec);
    spec
}

/// Seed of every evaluation campaign (xor the run's seed): far from the rollouts', which
/// mix the iteration into the high bits.
const EVAL_SEED: u64 = 0x5EED_E7A1_0000_0001;

#[cfg(test)]
mod tests {
    use super::campaign_name;
    use engine::MAX_CAMPAIGN_NAME_BYTES as MAX;

    #[test]
    fn a_campaign_name_fits_whatever_the_run_is_called() {
        assert_eq!(
            campaign_name("reading", "iteration 3 · rollouts at horizon 1"),
            "reading · iteration 3 · rollouts at horizon 1"
        );
        // A run name that fits alone but not with the detail (the bug: the run failed at
        // its first evaluation), and one in multi-byte characters cut mid-character.
        for run in ["r".repeat(190), "é".repeat(150)] {
            let name = campaign_name(&run, "iteration 0 · held-out evaluation");
            assert!(name.len() <= MAX, "{} bytes", name.len());
            assert!(
                name.ends_with("… · iteration 0 · held-out evaluation"),
                "{name}"
            );
            assert!(name.starts_with(&run[..40]));
        }
        let name = campaign_name("run", &"d".repeat(300));
        assert!(name.len() <= MAX && name.starts_with("run · ddd"), "{name}");
    }
}
