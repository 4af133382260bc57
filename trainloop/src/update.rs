//! One update, whoever asks for it: `surfgym train step`, a training run's train phase and
//! the curriculum benchmark's warm start all go through these stages, in this order:
//! [`select`] the steps to learn from, [`replay`] them through the parent version's frozen
//! parts into samples, [`train`] from the parent (or the trainer an earlier update left in
//! memory) and publish the new version. [`run`] chains the three for callers that insert
//! nothing between them; a training run drops stale steps and may hand the selection to
//! an external trainer, so it calls the stages one by one.

use std::path::{Path, PathBuf};
use std::time::Instant;

use inference::{Device, Model};
use policy::traces::{Blobs, Replayer, TraceEpisode};
use rand::SeedableRng;
use training::select::{FbcFilter, Selection, StepWeighting, select_fbc, select_grpo};
use training::version::Lineage;
use training::{Objective, Sample, TrainConfig, TrainDevice, Trainer, UpdateReport};

use crate::RunError;
use crate::data::{self, Collected};

/// How steps are chosen.
#[derive(Debug, Clone)]
pub struct Choice {
    /// The loss the selection feeds.
    pub objective: Objective,
    /// Filtered behaviour cloning's filters.
    pub fbc: FbcFilter,
    /// GRPO: how an episode's advantage is shared among its steps.
    pub weighting: StepWeighting,
    /// Seed of the behaviour-cloning sampler.
    pub seed: u64,
}

/// The steps `choice` keeps of `collected`, each with its advantage (1 for behaviour
/// cloning), and what it dropped and why.
pub fn select(collected: &Collected, choice: &Choice) -> Selection {
    match choice.objective {
        Objective::Fbc => {
            let mut rng = rand::rngs::StdRng::seed_from_u64(choice.seed);
            select_fbc(&collected.metas, &choice.fbc, &mut rng)
        }
        Objective::Grpo => select_grpo(&collected.metas, choice.weighting),
    }
}

/// Where the parent's frozen parts run to rebuild the selected steps' inputs.
pub struct ReplayOn<'a> {
    /// The version trained from.
    pub parent: &'a Path,
    /// `libonnxruntime.so`.
    pub dylib: &'a Path,
    /// ONNX Runtime's execution provider.
    pub device: Device,
    /// Its intra-op threads.
    pub threads: usize,
    /// Where the steps' screenshots are.
    pub blobs: Blobs,
    /// The model an earlier replay loaded, kept loaded between updates (see [`Frozen`]).
    pub resident: Option<Frozen>,
}

/// The frozen parts a replay runs (the tokenizer, `embed_tokens`, the vision encoder, the
/// grammar): the same for every version of one base, since training moves none of them.
/// So a run loads its base once and replays every update's steps with it, instead of
/// loading each parent into ONNX Runtime again.
pub struct Frozen {
    base: PathBuf,
    model: Model,
}

impl Frozen {
    /// The base model it was loaded from.
    pub fn base(&self) -> &Path {
        &self.base
    }
}

/// The kept steps as samples; a step that cannot be replayed is counted in
/// `collected.skipped` with its reason and left out. `progress` is called once a step.
/// Returns the loaded model too, for the next replay's `resident`.
pub async fn replay(
    on: ReplayOn<'_>,
    episodes: &[TraceEpisode],
    collected: &mut Collected,
    kept: &[(usize, f32)],
    progress: impl FnMut(),
) -> Result<(Vec<Sample>, Frozen), RunError> {
    let base = training::version::base_of(on.parent)
        .map_err(|e| RunError::Config(format!("{}: {e}", on.parent.display())))?;
    let model = match on.resident.filter(|f| same_path(&f.base, &base)) {
        Some(f) => f.model,
        None => Model::load(&base, on.dylib, on.device, on.threads)
            .map_err(|e| RunError::Config(format!("{}: {e}", base.display())))?,
    };
    let mut replayer = Replayer::new(model, on.blobs);
    let samples = data::samples(
        &mut replayer,
        episodes,
        &collected.at,
        kept,
        &mut collected.skipped,
        progress,
    )
    .await;
    release_freed_memory();
    Ok((
        samples,
        Frozen {
            base,
            model: replayer.into_model(),
        },
    ))
}

/// One optimisation from `parent` on `samples`, published at `out`.
pub struct TrainJob {
    /// The version trained from.
    pub parent: PathBuf,
    /// Where the new version is published (must not exist).
    pub out: PathBuf,
    /// The frozen model a KL term or guard measures against (None: neither may be set).
    pub reference: Option<PathBuf>,
    /// Objective, optimiser, batches, precision.
    pub cfg: TrainConfig,
    /// Where to train, and the option or field that named it (for errors).
    pub device: (TrainDevice, &'static str),
    /// The samples.
    pub samples: Vec<Sample>,
    /// What the version's lineage records besides the update's report.
    pub lineage: serde_json::Value,
    /// A trainer an earlier update left in memory: used when it holds `parent`.
    pub resident: Option<Trainer>,
}

/// What an update gives back.
pub struct Trained {
    /// The optimiser's figures.
    pub report: UpdateReport,
    /// The published version's lineage.
    pub lineage: Lineage,
    /// Where it ran: `cpu f32`, `cuda:0 bf16`.
    pub place: String,
    /// Whether it went on from the resident trainer rather than loading the parent.
    pub kept: bool,
    /// Seconds spent loading the parent (0 when kept).
    pub load_s: f64,
    /// Seconds spent writing the version.
    pub publish_s: f64,
    /// The trainer, holding the published weights, for the next update.
    pub trainer: Trainer,
}

/// Trains and publishes on a blocking thread; `progress(done, total, loss)` is called on
/// the caller's task after each optimiser step. An update that fails drops the trainer
/// (its weights may be half-updated).
pub async fn train(
    job: TrainJob,
    mut progress: impl FnMut(usize, usize, f64),
) -> Result<Trained, RunError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let work = tokio::task::spawn_blocking(move || -> Result<Trained, RunError> {
        let TrainJob {
            parent,
            out,
            reference,
            cfg,
            device: (device, field),
            samples,
            lineage,
            resident,
        } = job;
        let loading = Instant::now();
        let reused = resident
            .filter(|t| same_path(t.source(), &parent))
            .map(|mut t| t.reconfigure(cfg.clone()).map(|()| t));
        let (mut trainer, kept) = match reused {
            Some(Ok(t)) => (t, true),
            _ => {
                let device = device
                    .open()
                    .map_err(|e| RunError::Config(format!("{field}: {e}")))?;
                (Trainer::load(&parent, cfg, &device)?, false)
            }
        };
        let measures_kl = cfg_needs_reference(trainer.config());
        if let (Some(reference), true) = (&reference, measures_kl) {
            trainer.set_reference(reference).map_err(|e| {
                RunError::Config(format!("the KL reference {}: {e}", reference.display()))
            })?;
        }
        let load_s = loading.elapsed().as_secs_f64();
        let place = format!(
            "{} {}",
            training::device_name(trainer.decoder().device()),
            training::dtype_name(trainer.decoder().compute_dtype())
        );
        let report = trainer.update(&samples, &mut |done, total, loss| {
            let _ = tx.send((done, total, loss));
        })?;
        let mut lineage = lineage;
        lineage["report"] = serde_json::to_value(&report).unwrap_or_default();
        let publishing = Instant::now();
        let lineage = trainer.publish(&out, lineage)?;
        Ok(Trained {
            report,
            lineage,
            place,
            kept,
            load_s,
            publish_s: publishing.elapsed().as_secs_f64(),
            trainer,
        })
    });
    while let Some((done, total, loss)) = rx.recv().await {
        progress(done, total, loss);
    }
    let trained = work
        .await
        .map_err(|e| RunError::Config(format!("training thread: {e}")))?;
    release_freed_memory();
    trained
}

/// Gives the pages the update freed back to the system. An update allocates gigabytes of
/// activations on a blocking thread, often a new one, and glibc keeps what a thread's arena
/// freed for that arena: without this a run's resident memory grew by about an update's
/// peak at every update (SmolLM2-135M: 7.4 GB after the first, 11.4 after the second, and
/// the OOM killer at the seventh on a 24 GB machine).
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only hands free pages of the heap back to the kernel; it touches
    // no allocation in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// An update from recorded episodes, start to published version.
pub struct Update<'a> {
    /// The episodes.
    pub episodes: &'a [TraceEpisode],
    /// Their trainable steps (from [`data::collect`]); the replay adds its refusals.
    pub collected: Collected,
    /// How steps are chosen.
    pub choice: Choice,
    /// Where the replay runs.
    pub replay: ReplayOn<'a>,
    /// The rest of the job (its `samples` are filled by the replay).
    pub train: TrainJob,
}

/// What [`run`] did, stage by stage.
pub struct Outcome {
    /// The selection (kept steps, dropped by reason).
    pub selection: Selection,
    /// The collected steps, with the replay's refusals in `skipped`.
    pub collected: Collected,
    /// Samples trained on.
    pub samples: usize,
    /// Seconds of the replay.
    pub replay_s: f64,
    /// The update; None when the selection kept nothing or nothing could be replayed.
    pub trained: Option<Trained>,
}

/// Select, replay, train and publish. `on_replayed` is called once a replayed step,
/// `on_step` after each optimiser step.
pub async fn run(
    u: Update<'_>,
    on_replayed: impl FnMut(),
    on_step: impl FnMut(usize, usize, f64),
) -> Result<Outcome, RunError> {
    let Update {
        episodes,
        mut collected,
        choice,
        replay: on,
        train: mut job,
    } = u;
    let selection = select(&collected, &choice);
    if selection.kept.is_empty() {
        return Ok(Outcome {
            selection,
            collected,
            samples: 0,
            replay_s: 0.0,
            trained: None,
        });
    }
    let replaying = Instant::now();
    let (samples, _) = replay(on, episodes, &mut collected, &selection.kept, on_replayed).await?;
    let replay_s = replaying.elapsed().as_secs_f64();
    let n = samples.len();
    let trained = if samples.is_empty() {
        None
    } else {
        job.samples = samples;
        job.lineage["samples"] = n.into();
        job.lineage["dropped"] = serde_json::to_value(&selection.dropped).unwrap_or_default();
        job.lineage["not_trainable"] = serde_json::to_value(&collected.skipped).unwrap_or_default();
        Some(train(job, on_step).await?)
    };
    Ok(Outcome {
        selection,
        collected,
        samples: n,
        replay_s,
        trained,
    })
}

/// Whether two paths name the same directory (the recorded version and the trainer's
/// own record of what it published may be spelled differently).
fn same_path(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// Whether an update with `cfg` measures KL to a reference (its penalty or its guard).
fn cfg_needs_reference(cfg: &TrainConfig) -> bool {
    cfg.regularization.kl > 0.0 || cfg.guard.and_then(|g| g.max_kl).is_some()
}
