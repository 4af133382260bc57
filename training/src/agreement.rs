//! Does a device, at a precision, train what the CPU in f32 trains? The check a GPU build
//! must pass before its figures mean anything: the same samples go through a reference
//! trainer (CPU, f32) and the one under test; their log-probabilities, the loss of one
//! update and the log-probabilities after it are compared.

use std::path::Path;

use candle_core::Device;
use serde::{Deserialize, Serialize};

use crate::TrainError;
use crate::bench::{BenchShape, synthetic_samples};
use crate::device::{Precision, device_name, dtype_name};
use crate::objective::Objective;
use crate::optim::AdamWConfig;
use crate::trainer::{TrainConfig, Trainer};

/// How far the trainer under test is from the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// The device under test.
    pub device: String,
    /// Its compute dtype (`f32`, `bf16`).
    pub precision: String,
    /// Response tokens compared.
    pub tokens: usize,
    /// Largest |log p| difference before the update.
    pub logprob_max_diff: f64,
    /// Mean |log p| difference before the update.
    pub logprob_mean_diff: f64,
    /// Behaviour-cloning loss of the update, reference and under test.
    pub loss_reference: f64,
    /// See `loss_reference`.
    pub loss: f64,
    /// Largest |log p| difference after one AdamW step on each side.
    pub after_update_max_diff: f64,
    /// Mean change of log p made by the update, reference and under test (the update
    /// moved both the same way when these agree).
    pub update_gain_reference: f64,
    /// See `update_gain_reference`.
    pub update_gain: f64,
}

/// Compares `device` at `precision` with the CPU in f32 on `shape.batch` synthetic samples
/// of the decoder at `model` (one behaviour-cloning step at learning rate 1e-3).
pub fn agreement(
    model: &Path,
    shape: BenchShape,
    device: &Device,
    precision: Precision,
) -> Result<Agreement, TrainError> {
    let cfg = |precision| TrainConfig {
        objective: Objective::Fbc,
        micro_batch: shape.batch,
        precision,
        optimizer: AdamWConfig {
            lr: 1e-3,
            warmup_steps: 0,
            ..AdamWConfig::default()
        },
        ..TrainConfig::default()
    };
    let mut reference = Trainer::load(model, cfg(Precision::F32), &Device::Cpu)?;
    let mut under_test = Trainer::load(model, cfg(precision), device)?;
    let hidden = reference.decoder().config().hidden;
    let vocab = reference.decoder().vocab();
    let samples = synthetic_samples(hidden, vocab, shape, 7);

    let before_ref = flat(reference.logprobs(&samples)?);
    let before = flat(under_test.logprobs(&samples)?);
    let r_ref = reference.update(&samples, &mut |_, _, _| {})?;
    let r = under_test.update(&samples, &mut |_, _, _| {})?;
    let after_ref = flat(reference.logprobs(&samples)?);
    let after = flat(under_test.logprobs(&samples)?);

    let diffs = |a: &[f32], b: &[f32]| -> (f64, f64) {
        let d: Vec<f64> = a
            .iter()
            .zip(b)
            .map(|(x, y)| f64::from((x - y).abs()))
            .collect();
        let max = d.iter().copied().fold(0.0, f64::max);
        (max, d.iter().sum::<f64>() / d.len().max(1) as f64)
    };
    let gain = |after: &[f32], before: &[f32]| -> f64 {
        let s: f64 = after
            .iter()
            .zip(before)
            .map(|(a, b)| f64::from(a - b))
            .sum();
        s / after.len().max(1) as f64
    };
    let (logprob_max_diff, logprob_mean_diff) = diffs(&before_ref, &before);
    Ok(Agreement {
        device: device_name(device),
        precision: dtype_name(under_test.decoder().compute_dtype()).into(),
        tokens: before.len(),
        logprob_max_diff,
        logprob_mean_diff,
        loss_reference: r_ref.first_loss,
        loss: r.first_loss,
        after_update_max_diff: diffs(&after_ref, &after).0,
        update_gain_reference: gain(&after_ref, &before_ref),
        update_gain: gain(&after, &before),
    })
}

fn flat(v: Vec<Vec<f32>>) -> Vec<f32> {
    v.into_iter().flatten().collect()
}
