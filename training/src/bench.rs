//! Training throughput on synthetic samples of a chosen shape: what `surfgym bench train`
//! prints. The samples are random embeddings and tokens (the figures depend on shapes,
//! not on values), so the benchmark needs only the model's decoder.

use std::path::Path;
use std::time::Instant;

use candle_core::Device;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::TrainError;
use crate::decoder::DecoderConfig;
use crate::device::Precision;
use crate::objective::Objective;
use crate::sample::Sample;
use crate::trainer::{TrainConfig, Trainer};

/// The shape of a benchmark batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BenchShape {
    /// Samples per optimiser step.
    pub batch: usize,
    /// Prompt tokens per sample.
    pub prompt: usize,
    /// Response tokens per sample.
    pub response: usize,
    /// Optimiser steps timed (after one untimed warm-up step).
    pub steps: usize,
    /// Samples per forward pass, the gradients of `batch / micro_batch` passes accumulated
    /// into the one optimiser step (`None`: the whole batch in one pass).
    #[serde(default)]
    pub micro_batch: Option<usize>,
    /// Train only the top N layers (`None`: all of them).
    #[serde(default)]
    pub top_layers: Option<usize>,
    /// Samples per prompt (a GRPO group's k): `batch / group` distinct prompts.
    #[serde(default = "one")]
    pub group: usize,
    /// Whether a prompt's samples share its computation (else each runs its own).
    #[serde(default)]
    pub share_prompts: bool,
    /// A LoRA adapter of this rank on every projection instead of full-parameter training.
    #[serde(default)]
    pub lora: Option<usize>,
    /// Untimed updates before the timed ones (default 1; 0 for a big model whose one step
    /// takes minutes).
    #[serde(default = "one")]
    pub warm_up: usize,
}

fn one() -> usize {
    1
}

/// Figures of one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// The shape.
    pub shape: BenchShape,
    /// Objective timed.
    pub objective: Objective,
    /// Trainable parameters.
    pub parameters: usize,
    /// Tokens (prompt + response) through forward and backward per second.
    pub tokens_per_s: f64,
    /// Samples per second.
    pub samples_per_s: f64,
    /// Seconds per optimiser step (median of the timed steps).
    pub step_s: f64,
    /// Where it ran (`cpu`, `cuda:0`).
    #[serde(default)]
    pub device: String,
    /// Dtype of the matrix products (`f32`, `bf16`).
    #[serde(default)]
    pub precision: String,
}

/// Models above this many trainable parameters default to [`BIG_MODEL_BATCH`] samples.
pub const BIG_MODEL_PARAMETERS: usize = 10_000_000;

/// The default batch of a big model. SmolLM2-135M at 2 x 544 tokens peaks at 11 GB resident
/// (weights, gradients, AdamW moments, the activations kept for the backward pass) and
/// takes ~40 s a step on 2 cores; at 8 the activations alone would be about four times
/// that, past what a 24 GB machine shared with other work can give.
pub const BIG_MODEL_BATCH: usize = 2;

/// The default batch for the model at `dir`: 8, or [`BIG_MODEL_BATCH`] past
/// [`BIG_MODEL_PARAMETERS`] (counted from `config.json`, without loading the weights).
pub fn default_batch(dir: &Path) -> Result<usize, TrainError> {
    Ok(if trainable_parameters(dir)? > BIG_MODEL_PARAMETERS {
        BIG_MODEL_BATCH
    } else {
        8
    })
}

/// The decoder's trainable parameters (layers, final norm, head) from `dir/config.json`.
pub fn trainable_parameters(dir: &Path) -> Result<usize, TrainError> {
    let c = DecoderConfig::from_model_dir(dir)?;
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| TrainError::io(&path, e))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| TrainError::Model(format!("{}: {e}", path.display())))?;
    let cfg = json.get("text_config").unwrap_or(&json);
    let num = |k: &str| {
        cfg.get(k)
            .and_then(serde_json::Value::as_u64)
            .map(|v| v as usize)
            .ok_or_else(|| TrainError::Model(format!("{}: no integer `{k}`", path.display())))
    };
    let (h, inter, vocab) = (c.hidden, num("intermediate_size")?, num("vocab_size")?);
    let (q, kv) = (c.heads * c.head_dim, c.kv_heads * c.head_dim);
    let layer = 2 * h + h * q * 2 + h * kv * 2 + 3 * h * inter;
    Ok(c.layers * layer + h + h * vocab)
}

/// Times `shape.steps` updates of one optimiser step each on the decoder of `model`.
pub fn run(
    model: &Path,
    shape: BenchShape,
    objective: Objective,
    device: &Device,
    precision: Precision,
) -> Result<BenchResult, TrainError> {
    let micro = shape
        .micro_batch
        .unwrap_or(shape.batch)
        .clamp(1, shape.batch.max(1));
    let cfg = TrainConfig {
        objective,
        micro_batch: micro,
        accumulation: shape.batch.div_ceil(micro),
        precision,
        top_layers: shape.top_layers,
        share_prompts: shape.share_prompts,
        lora: shape.lora.map(crate::lora::LoraConfig::rank),
        ..TrainConfig::default()
    };
    let mut trainer = Trainer::load(model, cfg, device)?;
    let hidden = trainer.decoder().config().hidden;
    let vocab = trainer.decoder().vocab();
    let decoder = trainer.decoder();
    let parameters = decoder.trainable().values().map(|v| v.elem_count()).sum();
    let samples = synthetic_samples(hidden, vocab, shape, 0);
    for _ in 0..shape.warm_up {
        trainer.update(&samples, &mut |_, _, _| {})?;
    }
    device.synchronize()?;
    let mut times = Vec::with_capacity(shape.steps);
    for _ in 0..shape.steps.max(1) {
        let start = Instant::now();
        trainer.update(&samples, &mut |_, _, _| {})?;
        // A GPU queues work: the step ends when its kernels have run.
        device.synchronize()?;
        times.push(start.elapsed().as_secs_f64());
    }
    let total: f64 = times.iter().sum();
    times.sort_by(f64::total_cmp);
    let n = times.len() as f64;
    Ok(BenchResult {
        shape,
        objective,
        parameters,
        tokens_per_s: (shape.batch * (shape.prompt + shape.response)) as f64 * n / total,
        samples_per_s: shape.batch as f64 * n / total,
        step_s: times[times.len() / 2],
        device: crate::device::device_name(device),
        precision: crate::device::dtype_name(trainer.decoder().compute_dtype()).into(),
    })
}

/// `shape.batch` samples of random embeddings and response tokens, `shape.group` after
/// each other on one prompt, advantages alternating ±0.1 (so GRPO has both signs): the
/// figures depend on shapes, not on values.
pub fn synthetic_samples(hidden: usize, vocab: usize, shape: BenchShape, seed: u64) -> Vec<Sample> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let len = shape.prompt + shape.response;
    let mut prompt = Vec::new();
    (0..shape.batch)
        .map(|i| Sample {
            embeds: {
                if i % shape.group.max(1) == 0 {
                    prompt = (0..shape.prompt * hidden)
                        .map(|_| rng.random::<f32>() - 0.5)
                        .collect();
                }
                let mut e = prompt.clone();
                e.extend((0..shape.response * hidden).map(|_| rng.random::<f32>() - 0.5));
                e
            },
            positions: (0..len as i64).map(|p| [p; 3]).collect(),
            prompt_len: shape.prompt,
            response: (0..shape.response)
                .map(|_| rng.random_range(0..vocab as u32))
                .collect(),
            behaviour_logprobs: Vec::new(),
            allowed: None,
            advantage: if i % 2 == 0 { 0.1 } else { -0.1 },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, json: &str) {
        std::fs::write(dir.join("config.json"), json).unwrap();
    }

    /// The count from config.json equals what the loaded decoders hold (tiny-text: 104,256;
    /// SmolLM2-135M: 134,515,008, as `bench train` and PyTorch count them), and picks the
    /// batch: 8 for the tiny model, 2 for SmolLM2.
    #[test]
    fn parameters_from_config_pick_the_default_batch() -> Result<(), TrainError> {
        let dir = tempfile::tempdir().unwrap();
        config(
            dir.path(),
            r#"{"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
                "vocab_size": 472}"#,
        );
        assert_eq!(trainable_parameters(dir.path())?, 104_256);
        assert_eq!(default_batch(dir.path())?, 8);
        config(
            dir.path(),
            r#"{"hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
                "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64,
                "vocab_size": 49152}"#,
        );
        assert_eq!(trainable_parameters(dir.path())?, 134_515_008);
        assert_eq!(default_batch(dir.path())?, BIG_MODEL_BATCH);
        config(
            dir.path(),
            r#"{"hidden_size": 576, "num_hidden_layers": 30, "num_attention_heads": 9}"#,
        );
        let err = trainable_parameters(dir.path()).unwrap_err().to_string();
        assert!(err.contains("intermediate_size"), "{err}");
        Ok(())
    }
}
