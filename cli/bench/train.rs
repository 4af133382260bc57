//! `surfgym bench train`: training throughput of the built-in trainer (candle) on synthetic
//! samples of a realistic shape, for the models the data directory has.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use training::Objective;
use training::bench::{BenchShape, run as bench};

use crate::args::Common;

/// What to time.
#[derive(Args)]
pub struct TrainArgs {
    /// Model directories, comma-separated (default: tiny-text, and smollm2-135m when it
    /// was set up).
    #[arg(long = "models", value_delimiter = ',')]
    models: Vec<PathBuf>,
    /// Samples per optimiser step (default: 8; 2 for models over 10M parameters, such as
    /// SmolLM2-135M: 11 GB at its peak at 2 x 544 tokens, about 4x the activations at 8).
    #[arg(long)]
    batch: Option<usize>,
    /// Samples per forward pass; the batch's passes accumulate into one optimiser step
    /// (default: the whole batch in one pass). What fits a big batch in memory.
    #[arg(long)]
    micro_batch: Option<usize>,
    /// Prompt tokens per sample.
    #[arg(long, default_value_t = 512)]
    prompt_tokens: usize,
    /// Response tokens per sample.
    #[arg(long, default_value_t = 32)]
    response_tokens: usize,
    /// Objectives to time, comma-separated (GRPO adds a forward pass for the proximal
    /// log-probabilities).
    #[arg(long, value_delimiter = ',', default_values_t = [Objective::Fbc, Objective::Grpo])]
    objectives: Vec<Objective>,
    /// Untimed updates before the timed ones (0 for a big model whose step takes minutes).
    #[arg(long, default_value_t = 1)]
    warm_up: usize,
    /// Timed optimiser steps per model and objective.
    #[arg(long, default_value_t = 3)]
    steps: usize,
    /// Where to train: cpu, cuda or cuda:N (cuda needs a `--features train-cuda` build).
    #[arg(long = "train-device", default_value = "cpu")]
    train_device: training::TrainDevice,
    /// Precision of the passes: auto (bf16 on a GPU, f32 on the CPU), f32 or bf16.
    #[arg(long, default_value = "auto")]
    precision: training::Precision,
    /// Layers trained, comma-separated: `all`, or N for the top N layers only (no backward
    /// pass below them). Several values are timed side by side on the same samples.
    #[arg(long = "top-layers", value_delimiter = ',', default_value = "all")]
    top_layers: Vec<String>,
    /// Samples per prompt: the batch is `batch / group` prompts of `group` samples each (a
    /// GRPO group's k).
    #[arg(long, default_value_t = 1)]
    group: usize,
    /// How a prompt's samples are computed, comma-separated: `shared` (one prompt pass
    /// plus their completions) and/or `per-sample`. Both: timed side by side on the same
    /// samples, with the ratio.
    #[arg(long, value_delimiter = ',', default_value = "shared")]
    sharing: Vec<Sharing>,
    /// What learns, comma-separated: `full` (every weight) and/or `lora:R` (a rank-R
    /// adapter on every projection, the weights frozen). Several are timed side by side.
    #[arg(long, value_delimiter = ',', default_value = "full")]
    adapters: Vec<String>,
    /// Print JSON lines instead of a table.
    #[arg(long = "json-lines")]
    json: bool,
}

/// How the samples of one prompt are computed.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Sharing {
    /// One prompt pass plus the completions.
    Shared,
    /// Each sample runs its own prompt.
    PerSample,
}

/// Runs the benchmark.
pub async fn run(common: &Common, a: TrainArgs) -> anyhow::Result<ExitCode> {
    if a.batch == Some(0)
        || a.micro_batch == Some(0)
        || a.prompt_tokens == 0
        || a.response_tokens == 0
        || a.steps == 0
        || a.group == 0
    {
        bail!(
            "--batch, --group, --prompt-tokens, --response-tokens and --steps must be at least 1"
        );
    }
    if let Some(b) = a.batch
        && b % a.group != 0
    {
        bail!(
            "--batch {b} is not a whole number of --group {} samples",
            a.group
        );
    }
    let layer_choices = a
        .top_layers
        .iter()
        .map(|v| match v.as_str() {
            "all" => Ok(None),
            n => match n.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => bail!("--top-layers: {n:?} is neither `all` nor a number of layers above 0"),
            },
        })
        .collect::<anyhow::Result<Vec<Option<usize>>>>()?;
    let adapter_choices = a
        .adapters
        .iter()
        .map(|v| match v.as_str() {
            "full" => Ok(None),
            other => match other
                .strip_prefix("lora:")
                .and_then(|r| r.parse::<usize>().ok())
            {
                Some(r) if (1..=256).contains(&r) => Ok(Some(r)),
                _ => bail!("--adapters: {other:?} is neither `full` nor `lora:R` with R in 1-256"),
            },
        })
        .collect::<anyhow::Result<Vec<Option<usize>>>>()?;
    let mut models = a.models.clone();
    if models.is_empty() {
        let dir = common.data_dir.join("models");
        models.push(dir.join("tiny-text"));
        if dir.join("smollm2-135m").exists() {
            models.push(dir.join("smollm2-135m"));
        }
    }
    let device = a.train_device.open().context("--train-device")?;
    let precision = a.precision;
    if !a.json {
        println!(
            "trainer (candle, {}, {}): batch x ({} prompt + {} response tokens), {} samples per prompt, {} timed steps",
            training::device_name(&device),
            match precision.compute_dtype(&device) {
                candle_core::DType::BF16 => "bf16 over f32 weights",
                _ => "f32",
            },
            a.prompt_tokens,
            a.response_tokens,
            a.group,
            a.steps
        );
        println!(
            "{:<28} {:>9} {:>7} {:>10} {:>12} {:>6} {:>12} {:>10} {:>10} {:>8}",
            "model",
            "objective",
            "layers",
            "prompts",
            "trainable",
            "batch",
            "tokens/s",
            "samples/s",
            "step s",
            "speed-up"
        );
    }
    let mut per_sample_step: Option<f64> = None;
    for model in &models {
        let batch = match a.batch {
            Some(b) => b,
            None => training::bench::default_batch(model).with_context(|| {
                format!(
                    "reading {} (run ./scripts/setup-python.sh)",
                    model.display()
                )
            })?,
        };
        if batch % a.group != 0 {
            bail!(
                "the batch ({batch}) is not a whole number of --group {} samples",
                a.group
            );
        }
        // Per-sample first: the shared row reads its ratio against it.
        let mut sharing = a.sharing.clone();
        sharing.sort_by_key(|s| *s == Sharing::Shared);
        sharing.dedup();
        let (sharing, adapters) = (&sharing, &adapter_choices);
        let runs = a.objectives.iter().flat_map(|o| {
            layer_choices.iter().flat_map(move |l| {
                adapters
                    .iter()
                    .flat_map(move |ad| sharing.iter().map(move |s| (o, l, ad, s)))
            })
        });
        for (&objective, &top_layers, &lora, &share) in runs {
            let shape = BenchShape {
                batch,
                prompt: a.prompt_tokens,
                response: a.response_tokens,
                steps: a.steps,
                micro_batch: a.micro_batch,
                top_layers,
                group: a.group,
                share_prompts: share == Sharing::Shared,
                lora,
                warm_up: a.warm_up,
            };
            let (m, d) = (model.clone(), device.clone());
            let r = tokio::task::spawn_blocking(move || bench(&m, shape, objective, &d, precision))
                .await?
                .with_context(|| {
                    format!(
                        "benchmarking {} (run ./scripts/setup-python.sh)",
                        model.display()
                    )
                })?;
            let name = model
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let speed_up = match share {
                Sharing::PerSample => {
                    per_sample_step = Some(r.step_s);
                    None
                }
                Sharing::Shared => per_sample_step.take().map(|p| p / r.step_s.max(1e-9)),
            };
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"model": name, "result": r, "speed_up_vs_per_sample": speed_up})
                );
            } else {
                println!(
                    "{:<28} {:>9} {:>7} {:>10} {:>12} {:>6} {:>12.0} {:>10.2} {:>10.3} {:>8}",
                    name,
                    objective.to_string(),
                    match (top_layers, lora) {
                        (None, None) => "all".to_string(),
                        (Some(n), None) => format!("top {n}"),
                        (None, Some(r)) => format!("lora {r}"),
                        (Some(n), Some(r)) => format!("top{n} l{r}"),
                    },
                    match share {
                        Sharing::Shared => "shared",
                        Sharing::PerSample => "per-sample",
                    },
                    r.parameters,
                    batch,
                    r.tokens_per_s,
                    r.samples_per_s,
                    r.step_s,
                    speed_up.map_or_else(String::new, |x| format!("{x:.2}x"))
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
