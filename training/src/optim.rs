//! AdamW with decoupled weight decay, global-norm gradient clipping, warm-up then a constant
//! or cosine learning rate, and gradient accumulation; its state (moments and step count)
//! lives across updates and can be saved with a version, so a run that goes on from a
//! version goes on with the optimiser it had (WebGym resumes optimiser state across
//! iterations).
//!
//! Written here rather than taken from `candle_nn::AdamW`, which has neither clipping,
//! a schedule nor a way to read or restore its moments.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use candle_core::{Device, Tensor, Var};
use serde::{Deserialize, Serialize};

use crate::TrainError;

/// The learning-rate schedule after warm-up.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Schedule {
    /// The peak rate for ever (WebGym's SFT).
    Constant,
    /// Cosine decay from the peak to `min_ratio` x peak at `total_steps` (TTI, AsyncWebRL).
    Cosine {
        /// Steps until the floor.
        total_steps: usize,
        /// The floor as a fraction of the peak.
        min_ratio: f64,
    },
}

/// Optimiser settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdamWConfig {
    /// Peak learning rate.
    pub lr: f64,
    /// First-moment decay.
    pub beta1: f64,
    /// Second-moment decay.
    pub beta2: f64,
    /// Denominator guard.
    pub eps: f64,
    /// Decoupled weight decay.
    pub weight_decay: f64,
    /// Clip the global gradient norm to this (none: no clipping).
    pub clip_norm: Option<f64>,
    /// Linear warm-up steps.
    pub warmup_steps: usize,
    /// After warm-up.
    pub schedule: Schedule,
}

/// The peak learning rate a decoder of `parameters` trainable parameters starts from
/// unless told otherwise. The models this project generates (under 10 M parameters,
/// random weights) learn at 1e-3; a pretrained model does not survive it (SmolLM2-135M
/// collapsed in one GRPO update at 1e-3), and published web-agent RL on pretrained models
/// uses 1e-6 to 5e-6 (WebAgent-R1, ARPO, TTI, WebGym): the top of that range below a
/// billion parameters, the bottom above.
pub fn default_lr(parameters: usize) -> f64 {
    match parameters {
        p if p < 10_000_000 => 1e-3,
        p if p < 1_000_000_000 => 5e-6,
        _ => 1e-6,
    }
}

impl Default for AdamWConfig {
    fn default() -> Self {
        // TTI's and WebGym's AdamW; the rate is for tiny models (theirs: 1e-6 to 5e-6 for 8-12B).
        Self {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
            clip_norm: Some(1.0),
            warmup_steps: 0,
            schedule: Schedule::Constant,
        }
    }
}

impl AdamWConfig {
    /// The rate at optimiser step `step` (0-based).
    pub fn lr_at(&self, step: usize) -> f64 {
        if step < self.warmup_steps {
            return self.lr * (step + 1) as f64 / self.warmup_steps as f64;
        }
        match self.schedule {
            Schedule::Constant => self.lr,
            Schedule::Cosine {
                total_steps,
                min_ratio,
            } => {
                let span = total_steps.saturating_sub(self.warmup_steps).max(1) as f64;
                let done = ((step - self.warmup_steps) as f64 / span).min(1.0);
                let cos = 0.5 * (1.0 + (std::f64::consts::PI * done).cos());
                self.lr * (min_ratio + (1.0 - min_ratio) * cos)
            }
        }
    }

    /// Checks the settings, naming the bad one.
    pub fn validate(&self) -> Result<(), TrainError> {
        let bad = |f: &str, why: &str| Err(TrainError::Input(format!("optimizer.{f}: {why}")));
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return bad("lr", "must be a positive number");
        }
        if !(0.0..1.0).contains(&self.beta1) {
            return bad("beta1", "must be in [0, 1)");
        }
        if !(0.0..1.0).contains(&self.beta2) {
            return bad("beta2", "must be in [0, 1)");
        }
        if !(self.weight_decay >= 0.0 && self.weight_decay.is_finite()) {
            return bad("weight_decay", "must be 0 or more");
        }
        if let Some(c) = self.clip_norm
            && !(c > 0.0 && c.is_finite())
        {
            return bad("clip_norm", "must be a positive number");
        }
        if let Schedule::Cosine { min_ratio, .. } = self.schedule
            && !(0.0..=1.0).contains(&min_ratio)
        {
            return bad("schedule.min_ratio", "must be in [0, 1]");
        }
        Ok(())
    }
}

/// What one optimiser step did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepStats {
    /// The global gradient norm before clipping.
    pub grad_norm: f64,
    /// The rate used.
    pub lr: f64,
}

/// Sums gradients over micro-batches until the optimiser takes them.
#[derive(Default)]
pub struct Accumulator {
    grads: BTreeMap<String, Tensor>,
    micro_batches: usize,
}

impl Accumulator {
    /// Adds the gradients `loss.backward()` gave for `params`.
    pub fn add(
        &mut self,
        params: &BTreeMap<String, Var>,
        grads: &candle_core::backprop::GradStore,
    ) -> Result<(), TrainError> {
        for (name, var) in params {
            if let Some(g) = grads.get(var.as_tensor()) {
                let g = g.detach();
                let sum = match self.grads.remove(name) {
                    Some(prev) => (prev + g)?,
                    None => g,
                };
                self.grads.insert(name.clone(), sum);
            }
        }
        self.micro_batches += 1;
        Ok(())
    }

    /// Micro-batches added since the last step.
    pub fn micro_batches(&self) -> usize {
        self.micro_batches
    }
}

/// AdamW over named parameters.
pub struct AdamW {
    cfg: AdamWConfig,
    step: usize,
    m: BTreeMap<String, Tensor>,
    v: BTreeMap<String, Tensor>,
    /// A factor on the scheduled rate: the update guard's retries halve it.
    lr_scale: f64,
}

/// The optimiser's state at one moment, to go back to (the update guard undoes an update
/// that moved the policy too far). Tensors are immutable and each step makes new moments,
/// so holding the old ones copies nothing.
#[derive(Clone)]
pub struct OptimizerState {
    step: usize,
    m: BTreeMap<String, Tensor>,
    v: BTreeMap<String, Tensor>,
}

impl AdamW {
    /// A fresh optimiser.
    pub fn new(cfg: AdamWConfig) -> Result<Self, TrainError> {
        cfg.validate()?;
        Ok(Self {
            cfg,
            step: 0,
            m: BTreeMap::new(),
            v: BTreeMap::new(),
            lr_scale: 1.0,
        })
    }

    /// The state to come back to with [`AdamW::restore`].
    pub fn state(&self) -> OptimizerState {
        OptimizerState {
            step: self.step,
            m: self.m.clone(),
            v: self.v.clone(),
        }
    }

    /// Goes back to an earlier state.
    pub fn restore(&mut self, state: OptimizerState) {
        self.step = state.step;
        self.m = state.m;
        self.v = state.v;
    }

    /// Scales the scheduled rate of the next steps (1: as configured).
    pub fn set_lr_scale(&mut self, scale: f64) {
        self.lr_scale = scale;
    }

    /// Settings.
    pub fn config(&self) -> &AdamWConfig {
        &self.cfg
    }

    /// Steps taken so far (across every update of the run).
    pub fn steps(&self) -> usize {
        self.step
    }

    /// Applies the accumulated gradients (averaged over its micro-batches) and empties it.
    pub fn step(
        &mut self,
        params: &BTreeMap<String, Var>,
        acc: &mut Accumulator,
    ) -> Result<StepStats, TrainError> {
        let n = acc.micro_batches.max(1) as f64;
        let grads = std::mem::take(&mut acc.grads);
        acc.micro_batches = 0;
        let mut sq = 0f64;
        for g in grads.values() {
            sq += f64::from(g.sqr()?.sum_all()?.to_scalar::<f32>()?);
        }
        let grad_norm = sq.sqrt() / n;
        if !grad_norm.is_finite() {
            return Err(TrainError::Input(format!(
                "the gradient norm is {grad_norm}: the loss diverged (lower optimizer.lr)"
            )));
        }
        let clip = match self.cfg.clip_norm {
            Some(c) if grad_norm > c => c / grad_norm,
            _ => 1.0,
        };
        let scale = clip / n;
        let lr = self.cfg.lr_at(self.step) * self.lr_scale;
        self.step += 1;
        let t = self.step as i32;
        let (b1, b2) = (self.cfg.beta1, self.cfg.beta2);
        let (c1, c2) = (1.0 - b1.powi(t), 1.0 - b2.powi(t));
        for (name, var) in params {
            let Some(g) = grads.get(name) else { continue };
            let g = (g * scale)?;
            let m = match self.m.get(name) {
                Some(m) => ((m * b1)? + (&g * (1.0 - b1))?)?,
                None => (&g * (1.0 - b1))?,
            };
            let v = match self.v.get(name) {
                Some(v) => ((v * b2)? + (g.sqr()? * (1.0 - b2))?)?,
                None => (g.sqr()? * (1.0 - b2))?,
            };
            let update = ((&m / c1)? / ((&v / c2)?.sqrt()? + self.cfg.eps)?)?;
            let w = var.as_tensor();
            let next = ((w * (1.0 - lr * self.cfg.weight_decay))? - (update * lr)?)?;
            var.set(&next)?;
            self.m.insert(name.clone(), m);
            self.v.insert(name.clone(), v);
        }
        Ok(StepStats { grad_norm, lr })
    }

    /// Writes the moments (`m.NAME`, `v.NAME`) to a safetensors file; the step count and
    /// settings go to the caller's metadata.
    pub fn save(&self, path: &Path) -> Result<(), TrainError> {
        let mut all: HashMap<String, Tensor> = HashMap::new();
        for (k, t) in &self.m {
            all.insert(format!("m.{k}"), t.clone());
        }
        for (k, t) in &self.v {
            all.insert(format!("v.{k}"), t.clone());
        }
        candle_core::safetensors::save(&all, path)?;
        Ok(())
    }

    /// Restores the moments saved by [`AdamW::save`] after `steps` steps.
    pub fn load(
        cfg: AdamWConfig,
        steps: usize,
        path: &Path,
        device: &Device,
    ) -> Result<Self, TrainError> {
        let mut opt = Self::new(cfg)?;
        opt.step = steps;
        for (k, t) in candle_core::safetensors::load(path, device)? {
            if let Some(name) = k.strip_prefix("m.") {
                opt.m.insert(name.to_string(), t);
            } else if let Some(name) = k.strip_prefix("v.") {
                opt.v.insert(name.to_string(), t);
            }
        }
        Ok(opt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretrained_models_default_to_the_published_rates() {
        assert_eq!(default_lr(104_256), 1e-3, "tiny-text");
        assert_eq!(default_lr(134_515_008), 5e-6, "SmolLM2-135M");
        assert_eq!(default_lr(8_000_000_000), 1e-6);
    }

    #[test]
    fn warm_up_then_cosine_reaches_the_floor() {
        let c = AdamWConfig {
            lr: 1.0,
            warmup_steps: 4,
            schedule: Schedule::Cosine {
                total_steps: 14,
                min_ratio: 0.1,
            },
            ..AdamWConfig::default()
        };
        assert_eq!(c.lr_at(0), 0.25);
        assert_eq!(c.lr_at(3), 1.0);
        assert!((c.lr_at(4) - 1.0).abs() < 1e-12);
        assert!((c.lr_at(9) - 0.55).abs() < 1e-9);
        assert!((c.lr_at(14) - 0.1).abs() < 1e-12);
        assert!((c.lr_at(100) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn minimises_a_quadratic_with_clipping_and_accumulation() {
        let dev = Device::Cpu;
        let x = Var::from_tensor(&Tensor::new(&[3f32, -2.0], &dev).unwrap()).unwrap();
        let params = BTreeMap::from([("x".to_string(), x.clone())]);
        let mut opt = AdamW::new(AdamWConfig {
            lr: 0.1,
            weight_decay: 0.0,
            clip_norm: Some(0.5),
            ..AdamWConfig::default()
        })
        .unwrap();
        let mut acc = Accumulator::default();
        let mut first = None;
        for _ in 0..200 {
            for _ in 0..2 {
                let loss = x.as_tensor().sqr().unwrap().sum_all().unwrap();
                acc.add(&params, &loss.backward().unwrap()).unwrap();
            }
            let s = opt.step(&params, &mut acc).unwrap();
            first.get_or_insert(s.grad_norm);
        }
        // The first gradient was 2x = (6, -4): norm 7.21 before clipping.
        assert!((first.unwrap() - 52f64.sqrt()).abs() < 1e-4);
        let v = x.as_tensor().to_vec1::<f32>().unwrap();
        assert!(v.iter().all(|x| x.abs() < 0.05), "{v:?}");
        assert_eq!(opt.steps(), 200);
        let dir = tempfile::tempdir().unwrap();
        opt.save(&dir.path().join("o.safetensors")).unwrap();
        let back = AdamW::load(
            opt.config().clone(),
            200,
            &dir.path().join("o.safetensors"),
            &dev,
        )
        .unwrap();
        assert_eq!(back.steps(), 200);
        assert_eq!(
            back.m["x"].to_vec1::<f32>().unwrap(),
            opt.m["x"].to_vec1::<f32>().unwrap()
        );
    }

    #[test]
    fn bad_settings_name_their_field() {
        let e = AdamW::new(AdamWConfig {
            lr: -1.0,
            ..AdamWConfig::default()
        })
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("optimizer.lr"), "{e}");
    }
}
