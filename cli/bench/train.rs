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
    /// Print JSON lines instead of a table.
    #[arg(long = "json-lines")]
    json: bool,
}

/// Runs the benchmark.
pub async fn run(common: &Common, a: TrainArgs) -> anyhow::Result<ExitCode> {
    if a.batch == Some(0)
        || a.micro_batch == Some(0)
        || a.prompt_tokens == 0
        || a.response_tokens == 0
        || a.steps == 0
    {
        bail!("--batch, --prompt-tokens, --response-tokens and --steps must be at least 1");
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
            "trainer (candle, {}, {}): batch x ({} prompt + {} response tokens), {} timed steps",
            training::device_name(&device),
            match precision.compute_dtype(&device) {
                candle_core::DType::BF16 => "bf16 over f32 weights",
                _ => "f32",
            },
            a.prompt_tokens,
            a.response_tokens,
            a.steps
        );
        println!(
            "{:<28} {:>9} {:>7} {:>12} {:>6} {:>12} {:>10} {:>10}",
            "model", "objective", "layers", "trainable", "batch", "tokens/s", "samples/s", "step s"
        );
    }
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
        for (&objective, &top_layers) in a
            .objectives
            .iter()
            .flat_map(|o| layer_choices.iter().map(move |l| (o, l)))
        {
            let shape = BenchShape {
                batch,
                prompt: a.prompt_tokens,
                response: a.response_tokens,
                steps: a.steps,
                micro_batch: a.micro_batch,
                top_layers,
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
            if a.json {
                println!("{}", serde_json::json!({"model": name, "result": r}));
            } else {
                println!(
                    "{:<28} {:>9} {:>7} {:>12} {:>6} {:>12.0} {:>10.2} {:>10.3}",
                    name,
                    objective.to_string(),
                    top_layers.map_or_else(|| "all".to_string(), |n| format!("top {n}")),
                    r.parameters,
                    batch,
                    r.tokens_per_s,
                    r.samples_per_s,
                    r.step_s
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
