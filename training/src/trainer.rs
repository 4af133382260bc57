//! One update: epochs of minibatches over the selected samples, gradient accumulation,
//! AdamW steps; the trainer keeps the decoder and the optimiser across updates (a run's
//! iterations) and publishes versions.

use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::{Device, Tensor};
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::TrainError;
use crate::decoder::Decoder;
use crate::device::Precision;
use crate::guard::{Attempt, Guard, GuardReport, Health};
use crate::objective::{
    GrpoConfig, GrpoStats, Objective, Regularization, fbc_loss, grpo_loss, token_logprobs_with,
};
use crate::optim::{Accumulator, AdamW, AdamWConfig, StepStats};
use crate::sample::Sample;
use crate::shared_prompts::{PromptSharing, prompt_groups, training_order};
use crate::version::{self, Lineage, Publish};

/// Settings of an update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// The loss.
    pub objective: Objective,
    /// AdamW and its schedule.
    pub optimizer: AdamWConfig,
    /// Samples per forward pass.
    pub micro_batch: usize,
    /// Micro-batches per optimiser step.
    pub accumulation: usize,
    /// Passes over the samples per update (AsyncWebRL: 3; WebGym's SFT: 2).
    pub epochs: usize,
    /// Softmax temperature of the log-probabilities (1: as the policy records them).
    pub temperature: f32,
    /// GRPO's clipping.
    pub grpo: GrpoConfig,
    /// Seed of the minibatch shuffle.
    pub seed: u64,
    /// Precision of the passes (parameters and optimiser state are f32 whatever it is).
    #[serde(default)]
    pub precision: Precision,
    /// KL penalty to the reference model and entropy bonus (both off by default).
    #[serde(default)]
    pub regularization: Regularization,
    /// Bounds an update must stay within to be published (none by default).
    #[serde(default)]
    pub guard: Option<Guard>,
    /// Train only the top N layers (with the final norm and head); no backward pass runs
    /// below them. None: every layer.
    #[serde(default)]
    pub top_layers: Option<usize>,
    /// Samples that share a prompt share its computation: the shuffle puts them side by
    /// side within a step (GRPO keeps a group's samples in one step) and a micro-batch
    /// holds up to `micro_batch` distinct prompts with their samples (an optimiser step
    /// still takes `micro_batch` x `accumulation` samples). The gradients are the
    /// per-sample computation's up to rounding.
    #[serde(default = "yes")]
    pub share_prompts: bool,
    /// Train a LoRA adapter on the frozen base instead of the parameters themselves.
    #[serde(default)]
    pub lora: Option<crate::lora::LoraConfig>,
}

fn yes() -> bool {
    true
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            objective: Objective::Fbc,
            optimizer: AdamWConfig::default(),
            micro_batch: 8,
            accumulation: 1,
            epochs: 1,
            temperature: 1.0,
            grpo: GrpoConfig::default(),
            seed: 0,
            precision: Precision::Auto,
            regularization: Regularization::default(),
            guard: None,
            top_layers: None,
            share_prompts: true,
            lora: None,
        }
    }
}

impl TrainConfig {
    /// Checks every setting, naming the bad one.
    pub fn validate(&self) -> Result<(), TrainError> {
        let bad = |f: &str, why: &str| Err(TrainError::Input(format!("{f}: {why}")));
        self.optimizer.validate()?;
        self.regularization.validate()?;
        if let Some(g) = &self.guard {
            g.validate()?;
        }
        if let Some(l) = &self.lora {
            l.validate()?;
        }
        if self.micro_batch == 0 {
            return bad("micro_batch", "must be at least 1");
        }
        if self.accumulation == 0 {
            return bad("accumulation", "must be at least 1");
        }
        if self.epochs == 0 {
            return bad("epochs", "must be at least 1");
        }
        if !(self.temperature > 0.0 && self.temperature.is_finite()) {
            return bad("temperature", "must be a positive number");
        }
        let g = &self.grpo;
        if !(g.clip > 0.0 && g.clip < 1.0) {
            return bad("grpo.clip", "must be in (0, 1)");
        }
        if g.dual_clip <= 1.0 {
            return bad("grpo.dual_clip", "must be above 1");
        }
        if g.behaviour_cap <= 1.0 {
            return bad("grpo.behaviour_cap", "must be above 1");
        }
        Ok(())
    }
}

/// What an update did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UpdateReport {
    /// Samples trained on.
    pub samples: usize,
    /// Response tokens trained on (per epoch).
    pub tokens: usize,
    /// Optimiser steps taken.
    pub steps: usize,
    /// Mean loss of the first and of the last epoch.
    pub first_loss: f64,
    /// See `first_loss`.
    pub last_loss: f64,
    /// Each optimiser step's loss (mean over its micro-batches).
    pub losses: Vec<f64>,
    /// Each step's gradient norm and rate.
    pub optimizer: Vec<StepStats>,
    /// GRPO figures, summed over the update.
    pub grpo: Option<GrpoStats>,
    /// How far the update moved the policy, measured after it on its samples (when it
    /// had the starting log-probabilities anyway: GRPO, a KL term or a guard).
    #[serde(default)]
    pub health: Option<Health>,
    /// The guard's tries and verdict, when a guard is set.
    #[serde(default)]
    pub guard: Option<GuardReport>,
    /// Seconds spent.
    pub seconds: f64,
    /// Samples per second (all epochs).
    pub samples_per_s: f64,
    /// Tokens per second, prompts included (all epochs).
    pub tokens_per_s: f64,
}

/// Called after each optimiser step with (steps done, steps in all, that step's loss).
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, f64);

/// The decoder under training and its optimiser.
pub struct Trainer {
    decoder: Decoder,
    optimizer: AdamW,
    cfg: TrainConfig,
    source: PathBuf,
    /// The frozen model the KL term measures against, and where it was loaded from.
    reference: Option<(PathBuf, Decoder)>,
}

/// Per-sample, per-token log-probabilities.
type Logprobs = Vec<Vec<f32>>;

impl Trainer {
    /// Loads the model (or version) at `dir`: a version's tensors and optimiser state are
    /// taken up, so training goes on where it stopped.
    pub fn load(dir: &Path, cfg: TrainConfig, device: &Device) -> Result<Self, TrainError> {
        cfg.validate()?;
        let base = version::base_of(dir)?;
        let mut decoder = Decoder::load(&base, device)?;
        decoder.set_compute_dtype(cfg.precision.compute_dtype(device))?;
        decoder.set_trainable_top(cfg.top_layers)?;
        let lineage = match &cfg.lora {
            Some(lora) => attach_adapter(dir, lora, cfg.seed, &mut decoder)?,
            None => version::apply(dir, &mut decoder)?,
        };
        let opt_file = dir.join(version::OPTIMIZER);
        // Moments of the other kind of training (LoRA's of full's) are no start.
        let same_kind = lineage
            .as_ref()
            .is_some_and(|l| l.adapter.is_some() == cfg.lora.is_some());
        let optimizer = match lineage {
            Some(l) if opt_file.exists() && same_kind => {
                AdamW::load(cfg.optimizer.clone(), l.optimizer_steps, &opt_file, device)?
            }
            _ => AdamW::new(cfg.optimizer.clone())?,
        };
        Ok(Self {
            decoder,
            optimizer,
            cfg,
            source: dir.to_path_buf(),
            reference: None,
        })
    }

    /// Freezes the model (or version) at `dir` as the reference the KL term measures
    /// against (the run's base, or the warm-started version); loaded once, kept until
    /// another is set.
    pub fn set_reference(&mut self, dir: &Path) -> Result<(), TrainError> {
        if self.reference.as_ref().is_some_and(|(d, _)| d == dir) {
            return Ok(());
        }
        let device = self.decoder.device().clone();
        let mut decoder = Decoder::load(&version::base_of(dir)?, &device)?;
        decoder.set_compute_dtype(self.decoder.compute_dtype())?;
        version::apply(dir, &mut decoder)?;
        self.reference = Some((dir.to_path_buf(), decoder));
        Ok(())
    }

    /// The decoder.
    pub fn decoder(&self) -> &Decoder {
        &self.decoder
    }

    /// Switches the objective for the next updates (a run may warm up with behaviour
    /// cloning, then go on with GRPO, keeping weights and optimiser state).
    pub fn set_objective(&mut self, objective: Objective) {
        self.cfg.objective = objective;
    }

    /// Takes the settings of the next update while keeping weights and optimiser state in
    /// memory: what [`Trainer::load`] of the version this trainer just published would
    /// give, without reading it back (for a 135M model, gigabytes of weights and AdamW
    /// moments). The optimiser's own settings cannot change this way (its schedule is
    /// part of its state): load the version again for that.
    pub fn reconfigure(&mut self, cfg: TrainConfig) -> Result<(), TrainError> {
        cfg.validate()?;
        if cfg.lora != self.cfg.lora {
            return Err(TrainError::Input(
                "lora: other settings than the loaded trainer's (load the version again)".into(),
            ));
        }
        if cfg.optimizer != self.cfg.optimizer {
            return Err(TrainError::Input(
                "optimizer: other settings than the loaded trainer's (load the version again)"
                    .into(),
            ));
        }
        let dtype = cfg.precision.compute_dtype(self.decoder.device());
        self.decoder.set_compute_dtype(dtype)?;
        self.decoder.set_trainable_top(cfg.top_layers)?;
        self.cfg = cfg;
        Ok(())
    }

    /// The settings.
    pub fn config(&self) -> &TrainConfig {
        &self.cfg
    }

    /// The model or version the current weights were last published as (or loaded from).
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// The current weights' log-probabilities of each sample's response (no gradients).
    pub fn logprobs(&self, samples: &[Sample]) -> Result<Vec<Vec<f32>>, TrainError> {
        Ok(self.measure(&self.decoder, samples)?.0)
    }

    /// `decoder`'s log-probabilities of each sample's response, and the mean entropy of
    /// the distributions they were drawn from (no gradients).
    fn measure(
        &self,
        decoder: &Decoder,
        samples: &[Sample],
    ) -> Result<(Logprobs, f32), TrainError> {
        let mut out = vec![Vec::new(); samples.len()];
        let (mut entropy, mut tokens) = (0f64, 0usize);
        let order = self.grouped_order(samples, None);
        for chunk in self.micro_batches(&order, samples) {
            let refs: Vec<&Sample> = chunk.iter().map(|i| &samples[*i]).collect();
            let lp = self.logprobs_of(decoder, &refs)?;
            let v = lp.values.detach().to_vec1::<f32>()?;
            entropy += f64::from(lp.entropy.detach().sum_all()?.to_scalar::<f32>()?);
            tokens += v.len();
            for (i, w) in chunk.iter().zip(lp.offsets.windows(2)) {
                out[*i] = v[w[0]..w[1]].to_vec();
            }
        }
        Ok((out, (entropy / tokens.max(1) as f64) as f32))
    }

    fn logprobs_of(
        &self,
        decoder: &Decoder,
        batch: &[&Sample],
    ) -> Result<crate::objective::TokenLogprobs, TrainError> {
        let sharing = match self.cfg.share_prompts {
            true => PromptSharing::Shared,
            false => PromptSharing::PerSample,
        };
        token_logprobs_with(decoder, batch, self.cfg.temperature, sharing)
    }

    /// The samples' indices in the order passes take them: for a measurement each prompt's
    /// samples side by side; for an update, shuffled by `rng` into steps as
    /// [`training_order`] says.
    fn grouped_order(
        &self,
        samples: &[Sample],
        rng: Option<&mut rand::rngs::StdRng>,
    ) -> Vec<usize> {
        let units: Vec<Vec<usize>> = match self.cfg.share_prompts {
            true => prompt_groups(samples),
            false => (0..samples.len()).map(|i| vec![i]).collect(),
        };
        match rng {
            None => units.concat(),
            Some(rng) => training_order(
                &units,
                self.cfg.micro_batch * self.cfg.accumulation,
                self.cfg.objective == Objective::Grpo,
                rng,
            ),
        }
    }

    /// `order` cut into forward passes: `micro_batch` samples each, or with shared prompts
    /// up to `micro_batch` distinct prompts each (a prompt's samples cost little beside it).
    fn micro_batches<'o>(&self, order: &'o [usize], samples: &[Sample]) -> Vec<&'o [usize]> {
        let limit = self.cfg.micro_batch;
        if !self.cfg.share_prompts {
            return order.chunks(limit).collect();
        }
        let mut out = Vec::new();
        let (mut start, mut prompts) = (0, 0);
        for i in 0..order.len() {
            let new_prompt = i == start
                || !crate::shared_prompts::same_prompt(&samples[order[i - 1]], &samples[order[i]]);
            if new_prompt && prompts == limit {
                out.push(&order[start..i]);
                (start, prompts) = (i, 0);
            }
            prompts += usize::from(new_prompt);
        }
        if start < order.len() {
            out.push(&order[start..]);
        }
        out
    }

    /// The reference model's log-probabilities of the samples, when one is set (the KL
    /// term and the guard's `max_kl` need one; the update's health reports KL to it).
    fn reference_logprobs(&self, samples: &[Sample]) -> Result<Option<Logprobs>, TrainError> {
        match &self.reference {
            Some((_, reference)) => Ok(Some(self.measure(reference, samples)?.0)),
            None if self.cfg.regularization.kl > 0.0
                || self.cfg.guard.and_then(|g| g.max_kl).is_some() =>
            {
                Err(TrainError::Input(
                    "regularization.kl / guard.max_kl: no reference model was set to measure KL to"
                        .into(),
                ))
            }
            None => Ok(None),
        }
    }

    /// A copy of the weights, to go back to.
    fn weights(&self) -> Result<Vec<Tensor>, TrainError> {
        Ok(self
            .decoder
            .trainable()
            .values()
            .map(|v| v.as_tensor().copy())
            .collect::<Result<_, _>>()?)
    }

    fn set_weights(&self, saved: &[Tensor]) -> Result<(), TrainError> {
        for (var, t) in self.decoder.trainable().values().zip(saved) {
            var.set(t)?;
        }
        Ok(())
    }

    /// One update over `samples` (their `advantage`s set by the selection). With a guard,
    /// an update that crosses a bound is undone and tried again at half the rate, up to
    /// `guard.retries` times; when every try crosses one, the weights and the optimiser
    /// are left as they were and the report says so.
    pub fn update(
        &mut self,
        samples: &[Sample],
        progress: Progress<'_>,
    ) -> Result<UpdateReport, TrainError> {
        if samples.is_empty() {
            return Err(TrainError::Input(
                "no samples to train on (every step was filtered out)".into(),
            ));
        }
        let start = Instant::now();
        let measured = self.cfg.objective == Objective::Grpo
            || self.cfg.guard.is_some()
            || self.cfg.regularization.kl > 0.0;
        let before = if measured {
            Some(self.logprobs(samples)?)
        } else {
            None
        };
        let reference = self.reference_logprobs(samples)?;
        let Some(guard) = self.cfg.guard else {
            let mut report =
                self.epochs(samples, before.as_deref(), reference.as_deref(), progress)?;
            if let Some(before) = &before {
                report.health = Some(self.health(samples, before, reference.as_deref())?);
            }
            return Ok(finish(report, samples.len() * self.cfg.epochs, start));
        };
        let before = before.unwrap_or_default();
        let (weights, state) = (self.weights()?, self.optimizer.state());
        let mut verdict = GuardReport::default();
        let mut lr_scale = 1.0;
        let mut report = loop {
            self.optimizer.set_lr_scale(lr_scale);
            let tried = self.epochs(samples, Some(&before), reference.as_deref(), progress);
            self.optimizer.set_lr_scale(1.0);
            let mut report = tried?;
            let health = self.health(samples, &before, reference.as_deref())?;
            let crossed = guard.crossed(&health);
            let last = verdict.attempts.len() as u32 >= guard.retries;
            verdict.attempts.push(Attempt {
                lr_scale,
                health,
                crossed: crossed.clone(),
            });
            report.health = Some(health);
            if crossed.is_none() {
                verdict.accepted = true;
                break report;
            }
            tracing::warn!(
                lr_scale,
                crossed = crossed.as_deref(),
                "the update guard undid an update"
            );
            self.set_weights(&weights)?;
            self.optimizer.restore(state.clone());
            if last {
                break report;
            }
            lr_scale /= 2.0;
        };
        let tries = verdict.attempts.len();
        report.guard = Some(verdict);
        Ok(finish(
            report,
            samples.len() * self.cfg.epochs * tries,
            start,
        ))
    }

    /// How far the current weights are from `before` (and the reference), on `samples`.
    fn health(
        &self,
        samples: &[Sample],
        before: &[Vec<f32>],
        reference: Option<&[Vec<f32>]>,
    ) -> Result<Health, TrainError> {
        let (after, entropy) = self.measure(&self.decoder, samples)?;
        Ok(Health::measure(
            &after,
            before,
            reference,
            entropy,
            self.cfg.grpo.clip,
        ))
    }

    /// The epochs of one try: minibatches, gradient accumulation, AdamW steps.
    /// `proximal` is the weights' log-probabilities at the start of the update (GRPO's
    /// ratio), `reference` the reference model's (the KL term).
    fn epochs(
        &mut self,
        samples: &[Sample],
        proximal: Option<&[Vec<f32>]>,
        reference: Option<&[Vec<f32>]>,
        progress: Progress<'_>,
    ) -> Result<UpdateReport, TrainError> {
        let grpo = self.cfg.objective == Objective::Grpo;
        let per_step = self.cfg.micro_batch * self.cfg.accumulation;
        let steps_per_epoch = samples.len().div_ceil(per_step);
        let total_steps = steps_per_epoch * self.cfg.epochs;
        let mut rng =
            rand::rngs::StdRng::seed_from_u64(self.cfg.seed ^ self.optimizer.steps() as u64);
        let mut report = UpdateReport {
            samples: samples.len(),
            tokens: samples.iter().map(|s| s.response.len()).sum(),
            grpo: grpo.then(GrpoStats::default),
            ..UpdateReport::default()
        };
        let mut acc = Accumulator::default();
        let mut seen_tokens = 0usize;
        let trainable = self.decoder.trainable();
        for epoch in 0..self.cfg.epochs {
            let order = self.grouped_order(samples, Some(&mut rng));
            let mut epoch_loss = 0.0;
            for step in order.chunks(per_step) {
                let mut step_loss = 0.0;
                let micro = self.micro_batches(step, samples);
                for idx in &micro {
                    let batch: Vec<&Sample> = idx.iter().map(|i| &samples[*i]).collect();
                    seen_tokens += batch.iter().map(|s| s.len()).sum::<usize>();
                    let lp = self.logprobs_of(&self.decoder, &batch)?;
                    let pick = |all: &[Vec<f32>]| -> Vec<f32> {
                        idx.iter().flat_map(|i| all[*i].iter().copied()).collect()
                    };
                    let mut loss = match proximal.filter(|_| grpo) {
                        None => fbc_loss(&lp)?,
                        Some(prox) => {
                            let (loss, s) = grpo_loss(&lp, &pick(prox), &batch, &self.cfg.grpo)?;
                            if let Some(g) = report.grpo.as_mut() {
                                g.merge(&s);
                            }
                            loss
                        }
                    };
                    let reference = reference.map(pick);
                    if let Some(terms) = self.cfg.regularization.terms(&lp, reference.as_deref())? {
                        loss = (loss + terms)?;
                    }
                    let value = f64::from(loss.to_scalar::<f32>()?);
                    if !value.is_finite() {
                        return Err(TrainError::Input(format!(
                            "the loss is {value}: a sample's stored response is impossible under the model (check its grammar masks) or the rate is too high"
                        )));
                    }
                    step_loss += value / micro.len() as f64;
                    acc.add(&trainable, &loss.backward()?)?;
                }
                let stats = self.optimizer.step(&trainable, &mut acc)?;
                report.optimizer.push(stats);
                report.losses.push(step_loss);
                report.steps += 1;
                epoch_loss += step_loss / steps_per_epoch as f64;
                progress(report.steps, total_steps, step_loss);
            }
            if epoch == 0 {
                report.first_loss = epoch_loss;
            }
            report.last_loss = epoch_loss;
        }
        report.tokens_per_s = seen_tokens as f64;
        Ok(report)
    }

    /// Publishes the current weights (and optimiser state) as a version at `out`.
    pub fn publish(
        &mut self,
        out: &Path,
        training: serde_json::Value,
    ) -> Result<Lineage, TrainError> {
        let lineage = version::publish(
            out,
            &self.decoder,
            Publish {
                parent: &self.source,
                optimizer: Some(&self.optimizer),
                training,
            },
        )?;
        self.source = out.to_path_buf();
        Ok(lineage)
    }
}

/// Puts the LoRA adapter on `decoder`: the version's own when `dir` is a LoRA version of
/// the same shape (its base weights untouched), a fresh one over the base model. A version
/// of full-parameter updates is no base for an adapter (its PEFT export would be wrong).
fn attach_adapter(
    dir: &Path,
    lora: &crate::lora::LoraConfig,
    seed: u64,
    decoder: &mut Decoder,
) -> Result<Option<Lineage>, TrainError> {
    let shapes = decoder.adapter_shapes(lora);
    let lineage = version::read_lineage(dir)?;
    let adapter = match lineage.as_ref().map(|l| &l.adapter) {
        None => crate::lora::Adapter::new(lora, &shapes, seed, decoder.device())?,
        Some(Some(meta)) => {
            let targets: Vec<&String> = shapes.keys().collect();
            if meta.rank != lora.rank || meta.targets.iter().collect::<Vec<_>>() != targets {
                return Err(TrainError::Input(format!(
                    "lora: {} has a rank-{} adapter on {} matrices, these settings want rank {} on {} \
                     (train on with its settings, or from the base model)",
                    dir.display(),
                    meta.rank,
                    meta.targets.len(),
                    lora.rank,
                    targets.len()
                )));
            }
            crate::lora::Adapter::load(
                &dir.join(version::ADAPTER),
                meta,
                &shapes,
                decoder.device(),
            )?
        }
        Some(None) => {
            return Err(TrainError::Input(format!(
                "lora: {} holds full-parameter updates; an adapter starts from the base model or a LoRA version",
                dir.display()
            )));
        }
    };
    decoder.set_adapter(Some(adapter));
    Ok(lineage)
}

/// Rates over the whole update (every try): `tokens_per_s` holds the tokens seen until
/// here.
fn finish(mut report: UpdateReport, samples_seen: usize, start: Instant) -> UpdateReport {
    report.seconds = start.elapsed().as_secs_f64();
    let secs = report.seconds.max(1e-9);
    report.samples_per_s = samples_seen as f64 / secs;
    report.tokens_per_s /= secs;
    report
}
