//! A training run's configuration: what to train, on which tasks, evaluated where, with
//! which curriculum and update. Parsed strictly (an unknown field is an error naming it)
//! and validated before anything runs; checks that need the task store are
//! [`crate::run::check_tasks`]'.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use spaces::{ActionSet, ElementFormat};
use store::TaskFilter;

use crate::curriculum::Curriculum;
use crate::devices::Devices;
use crate::external::{Returns, TrainerChoice};
use crate::live_web::RunWeb;
use crate::served::Served;

/// GRPO's default group: samples of one task instance (ARPO's `rollout.n` and TRL's
/// `num_generations` are 8; with fewer, more groups end alike and teach nothing).
pub const DEFAULT_GROUP: u32 = 8;

/// Whether `k` samples of each task instance fit `rollouts_per_task`: at least one, and
/// every instance gets as many.
pub fn group_fits(k: u32, rollouts_per_task: u32) -> bool {
    k > 0 && rollouts_per_task.is_multiple_of(k)
}

/// See the module documentation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Display name.
    pub name: String,
    /// The model to start from (a directory the trainer can train: tiny-text, tiny-vlm,
    /// tiny-qwen2vl, SmolLM2 as converted by setup-python.sh). A run has this or `served`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<PathBuf>,
    /// A policy served over HTTP instead of an ONNX model: its weights live in the server
    /// and an external trainer updates them ([`crate::served`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<Served>,
    /// The training tasks.
    pub train: TaskFilter,
    /// Where it is evaluated: other tasks (`{"tasks": {...}}`, e.g. `{"split": "test"}`
    /// or other websites) or the same tasks on seeds never trained on (`"seeds"`).
    pub held_out: HeldOut,
    /// Training iterations.
    pub iterations: u32,
    /// Rollouts per task per iteration: `rollouts_per_task / group_size` task instances
    /// (seeds), `group_size` samples of each.
    #[serde(default = "rollouts")]
    pub rollouts_per_task: u32,
    /// GRPO's group: samples of one task instance (one seed: the same instruction on the
    /// same page), each drawn with its own sampling seed, so the group's baseline is that
    /// instance's and an advantage says which answer to it was better. Must divide
    /// `rollouts_per_task`. Absent: [`DEFAULT_GROUP`] in GRPO iterations (or the largest
    /// divisor of `rollouts_per_task` below it), one in filtered-cloning ones (the
    /// `fbc_iterations` too), which have no baseline and learn more from more instances.
    /// 1: one sample per seed, and the group is the task's rollouts across seeds (the
    /// behaviour before groups were instances).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_size: Option<u32>,
    /// The interaction-horizon schedule.
    pub curriculum: Curriculum,
    /// The evaluation's horizon (fixed across iterations).
    pub eval_horizon: u32,
    /// Evaluation episodes per held-out task (default 4: with one, each held-out task is
    /// one coin flip and a run's curve moves by whole tasks).
    #[serde(default = "eval_rollouts")]
    pub eval_rollouts: u32,
    /// Evaluate every this many iterations (and always before the first and after the
    /// last: the last of `iterations`, or the one that spends `max_env_steps`): an evaluation costs as much as a rollout, and a run that only needs its end
    /// point (a test, a sweep) can skip the ones between. Default 1, every iteration.
    #[serde(default = "one")]
    pub eval_every: u32,
    /// Answers an agent may give in evaluation episodes (the campaigns' `answer_checks`):
    /// with n > 1 each answer but the last is followed by a prompt to check the page again
    /// (TTI's re-check), so a version can be evaluated with and without it.
    #[serde(default = "one")]
    pub eval_answer_checks: u32,
    /// `fbc` or `grpo` (the default).
    #[serde(default = "grpo")]
    pub objective: training::Objective,
    /// Also evaluate the best constant action per task on the held-out episodes, once
    /// (beside the untrained model and the random policy): each first action the untrained
    /// model and the random policy took on a task runs as a constant policy on that task's
    /// held-out episodes, and the task keeps its best. Off by default: each candidate costs
    /// a campaign the size of one task's evaluation.
    #[serde(default)]
    pub best_constant: bool,
    /// The most candidates tried per task (default 16), those that succeeded on more of
    /// the task's held-out episodes (then were taken more often) first.
    #[serde(default = "best_constant_candidates")]
    pub best_constant_candidates: u32,
    /// Filtered behaviour cloning's replay buffer: the rollouts of the last this many
    /// iterations (WebGym's window: 4, the default). TTI keeps every earlier iteration's:
    /// set it to `iterations`.
    #[serde(default = "replay_window")]
    pub replay_iterations: u32,
    /// The first this many iterations use filtered behaviour cloning whatever `objective`
    /// says (a warm-up on the policy's own successes).
    #[serde(default)]
    pub fbc_iterations: u32,
    /// A warm start from demonstrations: the first `fbc_iterations` iterations roll out
    /// this built-in teacher (`miniwob-solver`, or `scripted`: the reference solutions)
    /// instead of the model, each step recorded as the model would have written the
    /// teacher's action (`policy::Demonstrated`), so their FBC updates clone it. A
    /// teacher is deterministic, so those iterations roll out one sample per seed
    /// (`rollouts_per_task` seeds), whatever `group_size` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demonstrator: Option<String>,
    /// GRPO: advantages are divided by this constant (AsyncWebRL: 10, for long
    /// trajectories of big models; small models on short tasks learn faster with 1).
    #[serde(default = "grpo_k")]
    pub grpo_k: f32,
    /// GRPO: how an episode's advantage is shared among its steps: `constant` (divided by
    /// `grpo_k`, AsyncWebRL's choice and the default) or `trajectory` (divided by the
    /// episode's length, so every episode of a group weighs the same whatever its
    /// horizon).
    #[serde(default)]
    pub step_weighting: Weighting,
    /// Peak learning rate (AdamW); default by the model's size
    /// ([`training::optim::default_lr`]: 1e-3 for the generated tiny models, the
    /// published 5e-6 for a pretrained one such as SmolLM2-135M).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr: Option<f64>,
    /// Linear warm-up of the learning rate over the run's first optimiser steps.
    #[serde(default)]
    pub warmup_steps: u32,
    /// The rate after warm-up: `{"kind": "constant"}` (the default) or `{"kind": "cosine",
    /// "total_steps": N, "min_ratio": 0.1}`, counted in optimiser steps over the run.
    #[serde(default = "constant")]
    pub lr_schedule: training::Schedule,
    /// A KL penalty towards a frozen reference (`{"kl": β}`: the base model, or the
    /// warm-started version when the run starts from demonstrations) and an entropy
    /// bonus (`{"entropy": c}`); both 0 by default.
    #[serde(default)]
    pub regularization: training::Regularization,
    /// Bounds an update must stay within to be published (`max_kl`, `max_clipped`,
    /// `max_mean_ratio`, `retries`): one that crosses a bound is undone and retried at
    /// half the rate. None by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<training::Guard>,
    /// Train only the top N layers of the decoder (with its final norm and head); no
    /// backward pass runs below them. Absent: every layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_layers: Option<u32>,
    /// Train a LoRA adapter on the frozen model instead of its weights (`{"rank": 8}`,
    /// with `alpha` and `targets`); each version stores the adapter, `train export-peft`
    /// writes it for PEFT. Absent: full-parameter training.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora: Option<training::lora::LoraConfig>,
    /// Samples that share a prompt (a group's) share its computation in the trainer
    /// (default true; false: the per-sample computation, for comparison).
    #[serde(default = "yes")]
    pub share_prompts: bool,
    /// Passes over an iteration's samples.
    #[serde(default = "one")]
    pub epochs: u32,
    /// Micro-batches per optimiser step (their gradients accumulate): a step takes
    /// `micro_batch` x `accumulation` samples.
    #[serde(default = "one")]
    pub accumulation: u32,
    /// Samples per forward pass.
    #[serde(default = "micro_batch")]
    pub micro_batch: u32,
    /// Tasks whose every rollout got the same reward in each of the last two iterations
    /// (no signal for GRPO) are sampled with this probability (edge-of-competence sampling;
    /// 1: always).
    #[serde(default = "flat_weight")]
    pub flat_task_weight: f64,
    /// How the policy decodes.
    #[serde(default)]
    pub policy: PolicySettings,
    /// Seed of rollouts, sampling and updates.
    #[serde(default)]
    pub seed: u64,
    /// Who makes each update: `{"kind": "builtin"}` (the default) or an external command
    /// (`{"kind": "external", "command": [...], ...}`, see [`crate::external`]).
    #[serde(default, skip_serializing_if = "TrainerChoice::is_builtin")]
    pub trainer: TrainerChoice,
    /// Overlapped training: the next iteration's rollouts start while the trainer works,
    /// at most `max_staleness` versions behind the version each update starts from
    /// ([`crate::schedule`]). Absent: the synchronous loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<Overlap>,
    /// An environment-step budget: once the iterations' recorded `env_steps` reach it,
    /// no new rollout phase starts; the iterations already rolled out are trained and
    /// evaluated and the run completes (compares variants at equal environment steps).
    /// Absent: the run stops after `iterations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_env_steps: Option<u64>,
    /// Where the policies and the built-in trainer compute (absent: the CPU).
    #[serde(default, skip_serializing_if = "Devices::is_default")]
    pub devices: Devices,
    /// What every campaign of the run does with the web: record, replay a recording, keep
    /// to domains, detect blocks (absent: live, any domain, blocks detected).
    #[serde(default, skip_serializing_if = "RunWeb::is_default")]
    pub web: RunWeb,
}

/// Overlapped training's bound (see [`RunConfig::overlap`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overlap {
    /// How many versions an update's samples may lag behind the version it starts from;
    /// older samples are dropped (`too_stale`). At least 1 (0 is the synchronous loop).
    pub max_staleness: u32,
}

/// Where a run is evaluated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum HeldOut {
    /// The training tasks on seeds never trained on.
    Seeds,
    /// Other tasks.
    Tasks(TaskFilter),
}

/// How the run's policy decodes (the ONNX policy's options).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySettings {
    /// Constrained decoding: `action`, `reasoned` or none.
    #[serde(default = "action")]
    pub constrained: Option<String>,
    /// Most tokens per step.
    #[serde(default = "max_new_tokens")]
    pub max_new_tokens: u32,
    /// Text the answer starts with.
    #[serde(default)]
    pub answer_prefix: String,
    /// The kinds of action the policy may take (`["click"]` for click tasks): the prompt
    /// lists only these and the constrained grammar allows only these. Every kind when
    /// absent.
    #[serde(default, skip_serializing_if = "ActionSet::is_all")]
    pub actions: ActionSet,
    /// The policy keeps prompts' key/value caches for later requests that start alike
    /// (default true; false: every prompt prefilled from scratch, for comparison).
    #[serde(default = "yes")]
    pub prefix_cache: bool,
    /// Where the prompt's element lines put the number: `number_first` (`[4] button
    /// "Cancel"`, the default) or `label_first` (`button "Cancel" [4]`).
    #[serde(default, skip_serializing_if = "ElementFormat::is_default")]
    pub elements: ElementFormat,
}

impl Default for PolicySettings {
    fn default() -> Self {
        Self {
            constrained: action(),
            max_new_tokens: max_new_tokens(),
            answer_prefix: String::new(),
            actions: ActionSet::all(),
            prefix_cache: true,
            elements: ElementFormat::NumberFirst,
        }
    }
}

fn best_constant_candidates() -> u32 {
    16
}
fn rollouts() -> u32 {
    4
}
fn one() -> u32 {
    1
}
fn grpo() -> training::Objective {
    training::Objective::Grpo
}
/// How GRPO shares an episode's advantage among its steps ([`RunConfig::weighting`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Weighting {
    /// Divided by `grpo_k`.
    #[default]
    Constant,
    /// Divided by the episode's length.
    Trajectory,
}

fn eval_rollouts() -> u32 {
    4
}

fn grpo_k() -> f32 {
    10.0
}
fn micro_batch() -> u32 {
    8
}
fn replay_window() -> u32 {
    4
}
fn constant() -> training::Schedule {
    training::Schedule::Constant
}
fn flat_weight() -> f64 {
    1.0
}
fn action() -> Option<String> {
    Some("action".into())
}
fn max_new_tokens() -> u32 {
    32
}

/// The built-in teachers a run may take demonstrations from.
pub const DEMONSTRATORS: [&str; 2] = ["miniwob-solver", "scripted"];

impl RunConfig {
    /// The peak learning rate: `lr`, else the default for the base model's size (the most
    /// cautious one when its size cannot be read: the update will say why it cannot load).
    pub fn learning_rate(&self) -> f64 {
        self.lr.unwrap_or_else(|| {
            let size = self
                .model
                .as_deref()
                .and_then(|m| training::bench::trainable_parameters(m).ok());
            training::optim::default_lr(size.unwrap_or(usize::MAX))
        })
    }

    /// How GRPO shares an episode's advantage among its steps.
    pub fn weighting(&self) -> training::select::StepWeighting {
        match self.step_weighting {
            Weighting::Constant => training::select::StepWeighting::Constant { k: self.grpo_k },
            Weighting::Trajectory => training::select::StepWeighting::Trajectory,
        }
    }

    /// Samples per task instance in iteration `i`'s rollouts: `group_size`, else
    /// [`DEFAULT_GROUP`] in a GRPO iteration (the largest divisor of `rollouts_per_task` up
    /// to it, so every instance gets as many samples) and 1 in a filtered-cloning one.
    pub fn group_at(&self, i: u32) -> u32 {
        self.group_size
            .unwrap_or_else(|| match self.objective_at(i) {
                training::Objective::Grpo => (1..=DEFAULT_GROUP.min(self.rollouts_per_task))
                    .rev()
                    .find(|k| self.rollouts_per_task.is_multiple_of(*k))
                    .unwrap_or(1),
                training::Objective::Fbc => 1,
            })
    }

    /// Parses and validates a config (JSON); the error names the field.
    pub fn parse(text: &str) -> Result<RunConfig, String> {
        let cfg: RunConfig =
            serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(text))
                .map_err(|e| {
                    let path = e.path().to_string();
                    let inner = e.into_inner();
                    if !inner.is_data() {
                        // Not JSON, or cut short: the position is what helps.
                        return inner.to_string();
                    }
                    // A bad value: its field's path says more than serde_json's position.
                    let msg = inner.to_string();
                    let msg = msg
                        .rsplit_once(" at line ")
                        .map_or(msg.as_str(), |(m, _)| m);
                    if path == "." {
                        msg.to_string()
                    } else {
                        format!("{path}: {msg}")
                    }
                })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every setting that needs no store, naming the bad field.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err("name: must not be empty".into());
        }
        self.check_policy()?;
        if filter_is_empty(&self.train) {
            return Err(
                "train: names no tasks (give ids, a site, a tag, a difficulty or a split)".into(),
            );
        }
        if let HeldOut::Tasks(f) = &self.held_out
            && filter_is_empty(f)
        {
            return Err("held_out.tasks: names no tasks".into());
        }
        for (field, f) in [
            ("train", Some(&self.train)),
            ("held_out.tasks", self.held_out.tasks()),
        ] {
            if let Some(split) = f.and_then(|f| f.split.as_deref())
                && !matches!(split, "train" | "test")
            {
                return Err(format!(
                    "{field}.split: unknown split {split:?} (expected train or test)"
                ));
            }
        }
        if self.iterations == 0 {
            return Err("iterations: must be at least 1".into());
        }
        if self.rollouts_per_task < 2 {
            return Err("rollouts_per_task: must be at least 2 (a group compares rollouts)".into());
        }
        if self.best_constant_candidates == 0 {
            return Err("best_constant_candidates: must be at least 1".into());
        }
        if self.eval_every == 0 {
            return Err("eval_every: must be at least 1 (1 evaluates every iteration)".into());
        }
        self.regularization.validate().map_err(|e| e.to_string())?;
        if let Some(g) = &self.guard {
            g.validate().map_err(|e| e.to_string())?;
        }
        if self.replay_iterations == 0 {
            return Err("replay_iterations: must be at least 1 (the current iteration)".into());
        }
        if self.top_layers == Some(0) {
            return Err("top_layers: must be at least 1 (absent: every layer)".into());
        }
        if let Some(l) = &self.lora {
            l.validate().map_err(|e| e.to_string())?;
        }
        if let training::Schedule::Cosine { min_ratio, .. } = self.lr_schedule
            && !(0.0..=1.0).contains(&min_ratio)
        {
            return Err("lr_schedule.min_ratio: must be in [0, 1]".into());
        }
        if let Some(k) = self.group_size
            && !group_fits(k, self.rollouts_per_task)
        {
            return Err(format!(
                "group_size: must be at least 1 and divide rollouts_per_task ({})",
                self.rollouts_per_task
            ));
        }
        self.curriculum.validate()?;
        self.web.validate()?;
        if self.eval_horizon == 0 {
            return Err("eval_horizon: must be at least 1".into());
        }
        if self.eval_rollouts == 0 {
            return Err("eval_rollouts: must be at least 1".into());
        }
        if !(1..=engine::MAX_ANSWER_CHECKS).contains(&self.eval_answer_checks) {
            return Err(format!(
                "eval_answer_checks: must be between 1 and {}",
                engine::MAX_ANSWER_CHECKS
            ));
        }
        if let Some(d) = &self.demonstrator {
            if !DEMONSTRATORS.contains(&d.as_str()) {
                return Err(format!(
                    "demonstrator: unknown {d:?} (expected {})",
                    DEMONSTRATORS.join(" or ")
                ));
            }
            if self.fbc_iterations == 0 {
                return Err(
                    "demonstrator: needs fbc_iterations of at least 1 (the iterations it demonstrates)"
                        .into(),
                );
            }
        }
        if !(self.grpo_k > 0.0 && self.grpo_k.is_finite()) {
            return Err("grpo_k: must be a positive number".into());
        }
        if self.lr.is_some_and(|lr| !(lr > 0.0 && lr.is_finite())) {
            return Err("lr: must be a positive number".into());
        }
        if self.epochs == 0 {
            return Err("epochs: must be at least 1".into());
        }
        if self.micro_batch == 0 {
            return Err("micro_batch: must be at least 1".into());
        }
        if self.accumulation == 0 {
            return Err("accumulation: must be at least 1".into());
        }
        if !(self.flat_task_weight > 0.0 && self.flat_task_weight <= 1.0) {
            return Err("flat_task_weight: must be in (0, 1]".into());
        }
        if let Some(c) = &self.policy.constrained
            && !matches!(c.as_str(), "action" | "reasoned")
        {
            return Err(format!(
                "policy.constrained: unknown {c:?} (expected action, reasoned or null)"
            ));
        }
        if self.policy.max_new_tokens == 0 {
            return Err("policy.max_new_tokens: must be at least 1".into());
        }
        if let TrainerChoice::External(t) = &self.trainer {
            t.validate()?;
        }
        if self.max_env_steps == Some(0) {
            return Err("max_env_steps: must be at least 1 (leave it out for no budget)".into());
        }
        self.devices.validate()?;
        if self.devices.trains_off_cpu() && !matches!(self.trainer, TrainerChoice::Builtin) {
            return Err("devices.train: an external trainer computes where its command runs; devices.train is the built-in trainer's (leave it cpu)".into());
        }
        if let Some(o) = self.overlap
            && o.max_staleness == 0
        {
            return Err("overlap.max_staleness: must be at least 1 (0 is the synchronous loop: leave `overlap` out for it)".into());
        }
        Ok(())
    }

    /// The policy's source: an ONNX model the built-in or an external trainer updates, or
    /// a served model only an external trainer that returns served names can update.
    fn check_policy(&self) -> Result<(), String> {
        let returns = match &self.trainer {
            TrainerChoice::External(t) => Some(t.returns),
            TrainerChoice::Builtin => None,
        };
        match (&self.model, &self.served) {
            (None, None) => Err(
                "model: give the ONNX model directory to train (or `served` for a policy served over HTTP)".into(),
            ),
            (Some(_), Some(_)) => Err(
                "served: a run trains an ONNX model (model) or a served one (served), not both".into(),
            ),
            (Some(_), None) if returns == Some(Returns::ServedModel) => Err(
                "trainer.returns: served_model needs a run whose policy is served over HTTP (`served`); an ONNX run takes safetensors".into(),
            ),
            (Some(m), None) if m.as_os_str().is_empty() => {
                Err("model: must name the ONNX model directory".into())
            }
            (Some(_), None) => Ok(()),
            (None, Some(s)) => {
                s.validate()?;
                if returns != Some(Returns::ServedModel) {
                    return Err("trainer: a served run's weights are in its server, so only an external trainer that loads the update there can train it (trainer.kind external, trainer.returns served_model)".into());
                }
                if self.demonstrator.is_some() {
                    return Err("demonstrator: a warm start records the teacher's actions in an ONNX model's tokens; a served run has none".into());
                }
                if !self.devices.is_default() {
                    return Err("devices: a served run's policy and trainer compute on its server and the trainer's machine (leave devices out)".into());
                }
                if !self.policy.answer_prefix.is_empty() {
                    return Err("policy.answer_prefix: the ONNX policy's option; a served policy has no such setting".into());
                }
                Ok(())
            }
        }
    }

    /// The ONNX model a run starts from (None for a served run).
    pub fn onnx_model(&self) -> Option<&Path> {
        self.model.as_deref()
    }

    /// The staleness bound: `Some(n)` with overlap, `None` for the synchronous loop.
    pub fn max_staleness(&self) -> Option<u32> {
        self.overlap.map(|o| o.max_staleness)
    }

    /// Whether iteration `i` (from 1) rolls out the demonstrator instead of the model.
    pub fn demonstrates(&self, i: u32) -> bool {
        self.demonstrator.is_some() && i <= self.fbc_iterations
    }

    /// The objective of iteration `i` (from 1).
    pub fn objective_at(&self, i: u32) -> training::Objective {
        if i <= self.fbc_iterations || self.objective == training::Objective::Fbc {
            training::Objective::Fbc
        } else {
            training::Objective::Grpo
        }
    }
}

impl HeldOut {
    /// The held-out task filter, when held out by task.
    pub fn tasks(&self) -> Option<&TaskFilter> {
        match self {
            HeldOut::Seeds => None,
            HeldOut::Tasks(f) => Some(f),
        }
    }
}

fn filter_is_empty(f: &TaskFilter) -> bool {
    f.site.is_none()
        && f.tag.is_none()
        && f.difficulty.is_none()
        && f.split.is_none()
        && f.ids.is_empty()
}

#[cfg(test)]
mod tests;

fn yes() -> bool {
    true
}
