//! `surfgym train step`: one update from judged episodes, published as a policy version.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use indicatif::ProgressBar;
use inference::Device;
use policy::traces::{self, Blobs, TraceEpisode};
use training::select::FbcFilter;
use training::{AdamWConfig, Objective, TrainConfig};
use trainloop::data;
use trainloop::update as pipeline;
use uuid::Uuid;

use crate::args::Common;
use crate::db;

/// The objective.
#[derive(Clone, Copy, ValueEnum)]
pub enum ObjectiveArg {
    /// Filtered behaviour cloning: successful episodes' steps (TTI, WebGym).
    Fbc,
    /// GRPO: every step weighted by its episode's group-relative advantage.
    Grpo,
}

/// `surfgym train step`.
#[derive(Args)]
pub struct StepArgs {
    /// A campaign whose finished episodes to train on (repeatable; older first: the
    /// replay window and recency weights count campaigns in this order).
    #[arg(
        long = "campaign",
        value_name = "ID",
        required_unless_present = "jsonl"
    )]
    campaigns: Vec<String>,
    /// Or: episodes written by `surfgym export`.
    #[arg(long, value_name = "FILE", conflicts_with = "campaigns")]
    jsonl: Option<PathBuf>,
    /// With --jsonl: the directory `surfgym export --screenshots` wrote (vision models).
    #[arg(long, value_name = "DIR", requires = "jsonl")]
    screenshots: Option<PathBuf>,
    /// The model or policy version to train from (an ONNX model directory the trainer can
    /// read: tiny-text, tiny-vlm, tiny-qwen2vl, SmolLM2 as converted by setup-python.sh).
    #[arg(long = "model", id = "train_model", value_name = "DIR")]
    from: PathBuf,
    /// Where to publish the new version (must not exist).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// After publishing, point this version link at the new version (atomically): rollout
    /// workers and `serve-policy` started on the link run it for new episodes.
    #[arg(long, value_name = "LINK")]
    promote: Option<PathBuf>,
    /// The loss.
    #[arg(long, value_enum, default_value = "fbc")]
    objective: ObjectiveArg,
    /// Peak learning rate (AdamW); default by the model's size: 1e-3 for the generated tiny
    /// models, 5e-6 for a pretrained one such as SmolLM2-135M.
    #[arg(long)]
    lr: Option<f64>,
    /// Linear warm-up steps.
    #[arg(long, default_value_t = 0)]
    warmup_steps: usize,
    /// Passes over the samples.
    #[arg(long, default_value_t = 1)]
    epochs: usize,
    /// Samples per forward pass.
    #[arg(long, default_value_t = 8)]
    micro_batch: usize,
    /// Micro-batches per optimiser step.
    #[arg(long, default_value_t = 1)]
    accumulation: usize,
    /// Train a rank-R LoRA adapter on every projection, the weights frozen (the version
    /// stores the adapter; `train export-peft` writes it for PEFT).
    #[arg(long, value_name = "R")]
    lora_rank: Option<usize>,
    /// Behaviour cloning: draw at most this many steps (recency and inverse website
    /// frequency, TTI's sampler); all kept steps without it.
    #[arg(long)]
    max_samples: Option<usize>,
    /// Behaviour cloning: keep steps whose screenshot equals the next one.
    #[arg(long)]
    keep_unchanged: bool,
    /// Behaviour cloning: keep episodes that answered "not found".
    #[arg(long)]
    keep_not_found: bool,
    /// Behaviour cloning: drop episodes shorter than this.
    #[arg(long, default_value_t = 1)]
    min_steps: usize,
    /// Behaviour cloning: only the last this many campaigns (0: all).
    #[arg(long, default_value_t = 4)]
    replay_campaigns: u32,
    /// Reward: the judged score (partial credit) instead of success.
    #[arg(long)]
    partial_reward: bool,
    /// GRPO: advantages are divided by this constant (AsyncWebRL: 10).
    #[arg(long, default_value_t = 10.0)]
    grpo_k: f32,
    /// GRPO: divide each step's advantage by its episode's length instead of --grpo-k, so
    /// every episode of a group weighs the same whatever its horizon.
    #[arg(long, conflicts_with = "grpo_k")]
    per_trajectory: bool,
    /// Seed of the sampler and the minibatch order.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Where to train: cpu, cuda or cuda:N (cuda needs a `--features train-cuda` build).
    #[arg(long = "train-device", default_value = "cpu")]
    train_device: training::TrainDevice,
    /// Precision of the passes: auto (bf16 on a GPU, f32 on the CPU), f32 or bf16. The
    /// weights and optimiser state stay f32.
    #[arg(long, default_value = "auto")]
    precision: training::Precision,
}

/// Runs one update.
pub async fn step(common: &Common, a: StepArgs) -> anyhow::Result<ExitCode> {
    // Everything that can be refused is refused before any work.
    if let Some(link) = &a.promote
        && link.exists()
        && !inference::version_link::is_link(link)
    {
        bail!(
            "--promote {}: exists and is not a version link (a symbolic link); it would not be replaced",
            link.display()
        );
    }
    if a.out.exists() {
        bail!(
            "--out {}: already exists (versions are never overwritten; choose a new directory)",
            a.out.display()
        );
    }
    let objective = match a.objective {
        ObjectiveArg::Fbc => Objective::Fbc,
        ObjectiveArg::Grpo => Objective::Grpo,
    };
    let cfg = TrainConfig {
        objective,
        optimizer: AdamWConfig {
            lr: a.lr.unwrap_or_else(|| {
                let size = training::bench::trainable_parameters(&a.from).ok();
                training::optim::default_lr(size.unwrap_or(usize::MAX))
            }),
            warmup_steps: a.warmup_steps,
            ..AdamWConfig::default()
        },
        micro_batch: a.micro_batch,
        accumulation: a.accumulation,
        epochs: a.epochs,
        seed: a.seed,
        precision: a.precision,
        lora: a.lora_rank.map(training::lora::LoraConfig::rank),
        ..TrainConfig::default()
    };
    cfg.validate()
        .map_err(|e| anyhow::anyhow!("--{}", e.to_string().replace('_', "-")))?;
    if !(a.grpo_k > 0.0 && a.grpo_k.is_finite()) {
        bail!("--grpo-k: must be a positive number");
    }
    let dylib = common.models.onnx_options(common, a.from.clone())?.dylib;
    let campaigns = a
        .campaigns
        .iter()
        .map(|c| {
            Uuid::parse_str(c)
                .with_context(|| format!("--campaign {c}: not a campaign id (a UUID)"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;

    let (episodes, blobs, source) = match &a.jsonl {
        Some(path) => {
            let (episodes, errors) = traces::read_jsonl(path)?;
            if !errors.is_empty() {
                for e in errors.iter().take(5) {
                    eprintln!("error: {e}");
                }
                bail!(
                    "{} bad lines in {} (nothing was trained): fix or remove them",
                    errors.len(),
                    path.display()
                );
            }
            let base = path.parent().map(PathBuf::from).unwrap_or_default();
            let blobs = Blobs::Files {
                base,
                dir: a.screenshots.clone(),
            };
            (episodes, blobs, serde_json::json!({"jsonl": path}))
        }
        None => {
            let db = db::open(common).await?;
            let episodes = traces::from_campaigns(&db.store, &campaigns)
                .await
                .map_err(|e| anyhow::anyhow!("--campaign: {e}"))?;
            (
                episodes,
                Blobs::Store(db.store.clone()),
                serde_json::json!({"campaigns": campaigns}),
            )
        }
    };
    let recorded: usize = episodes.iter().map(|e| e.steps.len()).sum();
    let mut collected = data::collect(&episodes, a.partial_reward);
    let choice = pipeline::Choice {
        objective,
        fbc: FbcFilter {
            drop_unchanged: !a.keep_unchanged,
            drop_not_found: !a.keep_not_found,
            min_steps: a.min_steps,
            replay_iterations: (a.replay_campaigns > 0).then_some(a.replay_campaigns),
            max_samples: a.max_samples,
        },
        weighting: if a.per_trajectory {
            training::select::StepWeighting::Trajectory
        } else {
            training::select::StepWeighting::Constant { k: a.grpo_k }
        },
        seed: a.seed,
    };
    let selection = pipeline::select(&collected, &choice);
    println!(
        "{} episodes, {recorded} steps: {} trainable, {} selected for {objective}",
        episodes.len(),
        collected.metas.len(),
        selection.kept.len()
    );
    print_counts("not trainable", &collected.skipped);
    let dropped = serde_json::to_value(&selection.dropped)?;
    print_counts(
        "dropped by the selection",
        &serde_json::from_value(dropped.clone())?,
    );
    if selection.kept.is_empty() {
        bail!(
            "{}",
            nothing_selected(objective, &episodes, collected.metas.len())
        );
    }

    warn_off_policy(&a.from, &episodes);
    let replay_bar = bar(selection.kept.len(), "replaying", "steps")?;
    // The frozen parts (embeddings, vision encoder) in ONNX Runtime.
    let on = pipeline::ReplayOn {
        parent: &a.from,
        dylib: &dylib,
        device: Device::Cpu,
        threads: 2,
        blobs,
        resident: None,
    };
    let (samples, _) = pipeline::replay(on, &episodes, &mut collected, &selection.kept, || {
        replay_bar.inc(1)
    })
    .await
    .context("--model: loading it in ONNX Runtime")?;
    replay_bar.finish_and_clear();
    if samples.len() < selection.kept.len() {
        eprintln!(
            "warning: {} selected steps could not be replayed and are left out",
            selection.kept.len() - samples.len()
        );
        print_counts("not replayable", &collected.skipped);
    }
    if samples.is_empty() {
        bail!("no selected step could be replayed (see the reasons above)");
    }

    let started = Instant::now();
    let n = samples.len();
    let job = pipeline::TrainJob {
        parent: a.from.clone(),
        out: a.out.clone(),
        reference: None,
        cfg: cfg.clone(),
        device: (a.train_device, "--train-device"),
        samples,
        lineage: serde_json::json!({
            "source": source,
            "episodes": episodes.len(),
            "steps_recorded": recorded,
            "steps_trainable": collected.metas.len(),
            "samples": n,
            "not_trainable": collected.skipped,
            "dropped": dropped,
            "objective": objective.to_string(),
            "config": cfg,
            "partial_reward": a.partial_reward,
            "grpo_k": a.grpo_k,
        }),
        resident: None,
    };
    let train_bar = bar(0, "training", "optimiser steps")?;
    let trained = pipeline::train(job, |done, total, loss| {
        train_bar.set_length(total as u64);
        train_bar.set_position(done as u64);
        train_bar.set_message(format!("loss {loss:.4}"));
    })
    .await
    .with_context(|| format!("--model {}: training it", a.from.display()))?;
    train_bar.finish_and_clear();
    let (report, lineage) = (trained.report, trained.lineage);
    let fingerprint =
        policy::fingerprint(&a.out).with_context(|| format!("reading back {}", a.out.display()))?;
    println!(
        "{objective}: {} samples, {} response tokens, {} optimiser steps, loss {:.4} -> {:.4}, {:.2} samples/s, {:.0} tokens/s ({:.1} s in all)",
        report.samples,
        report.tokens,
        report.steps,
        report.first_loss,
        report.last_loss,
        report.samples_per_s,
        report.tokens_per_s,
        started.elapsed().as_secs_f64()
    );
    println!(
        "version {} (fingerprint {}, {} optimiser steps since the base)",
        a.out.display(),
        fingerprint
            .trim_start_matches("sha256:")
            .chars()
            .take(12)
            .collect::<String>(),
        lineage.optimizer_steps
    );
    match &a.promote {
        Some(link) => {
            inference::version_link::promote(&a.out, link).with_context(|| {
                format!(
                    "--promote {}: pointing it at {}",
                    link.display(),
                    a.out.display()
                )
            })?;
            println!("promoted: {} -> {}", link.display(), a.out.display());
        }
        None => println!(
            "use it: surfgym run --policy onnx --onnx-model {}",
            a.out.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

fn bar(len: usize, prefix: &'static str, unit: &str) -> anyhow::Result<ProgressBar> {
    crate::progress::bar(
        len as u64,
        prefix,
        10,
        &format!("{{pos}}/{{len}} {unit} {{msg}} {{elapsed_precise}} eta {{eta}}"),
    )
}

fn print_counts(what: &str, counts: &std::collections::BTreeMap<String, usize>) {
    let nonzero: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    if !nonzero.is_empty() {
        println!("  {what}: {}", nonzero.join(", "));
    }
}

/// What to do when the selection kept nothing (`trainable`: steps a trainer could replay).
fn nothing_selected(objective: Objective, episodes: &[TraceEpisode], trainable: usize) -> String {
    let successes = episodes.iter().filter(|e| e.success == Some(true)).count();
    let steps: usize = episodes.iter().map(|e| e.steps.len()).sum();
    if trainable == 0 && steps > 0 {
        return format!(
            "no step selected: none of the {steps} recorded steps can be trained on (see \"not trainable\" above): a trainer replays the onnx policy's own steps, with the prompt and token ids it recorded, so episodes of the scripted, random or HTTP policies cannot be trained on yet; train on a campaign of the onnx policy"
        );
    }
    match objective {
        Objective::Fbc if successes == 0 => format!(
            "no step selected: none of the {} episodes succeeded (behaviour cloning learns from successes; try --objective grpo, more rollouts, or a warm start)",
            episodes.len()
        ),
        Objective::Fbc => "no step selected: every successful episode's steps were filtered out (see the counts above; --keep-unchanged, --keep-not-found, --min-steps, --replay-campaigns)".into(),
        Objective::Grpo => "no step selected: in every group (the samples of one task instance, or a task's rollouts in a campaign of one sample per seed) all episodes got the same reward, so no step has an advantage (run more rollouts per task, --samples-per-seed, or use --partial-reward)".into(),
    }
}

/// Episodes recorded by other weights than `--model` are off-policy: GRPO's importance
/// weights correct for it within their cap, behaviour cloning does not care.
fn warn_off_policy(model: &std::path::Path, episodes: &[TraceEpisode]) {
    let Ok(ours) = policy::fingerprint(model) else {
        return;
    };
    let other = episodes
        .iter()
        .filter(|e| {
            e.policy
                .as_ref()
                .and_then(|c| c.fingerprint.as_deref())
                .is_some_and(|f| f != ours)
        })
        .count();
    if other > 0 {
        eprintln!(
            "note: {other} of {} episodes were recorded by other weights than {} (off-policy: GRPO's behaviour weights correct for it, capped)",
            episodes.len(),
            model.display()
        );
    }
}
