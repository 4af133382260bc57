//! The `onnx` policy: a vision-language model served by ONNX Runtime (the model itself,
//! its processors and constrained decoding are `inference`'s), in the onnx-community export layout
//! (`vision_encoder`, `embed_tokens`, `decoder_model_merged`) of SmolVLM / Idefics3 (image
//! tiles) and Qwen2-VL / Qwen2.5-VL (patch rows with `grid_thw`, M-RoPE positions); text-only
//! Llama exports such as the converted SmolLM2 work without the vision part.
//!
//! [`OnnxBackend`] is a [`BatchBackend`]: wrapped in [`Batched`], concurrent episodes'
//! requests are padded and generated as one batch on a blocking thread (ONNX Runtime's
//! `run` is synchronous and needs `&mut` on its session).

#[cfg(test)]
mod grammar_tests;
pub mod prompt;

use inference::{OnnxError, expand_images, grammar};

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;

use inference::{Device, GenParams, Model, Prompt};
use metrics::METRICS;
pub use prompt::{PromptConfig, PromptStyle};

use super::output::{Grounding, parse_output, within};
use super::{BatchBackend, BatchLimits, Batched, Decision, PolicyError, StepInput};
use store::PolicyCard;
use store::Sampling;

/// How to load and run the policy.
#[derive(Debug, Clone)]
pub struct OnnxOptions {
    /// The model directory.
    pub model_dir: PathBuf,
    /// `libonnxruntime.so`.
    pub dylib: PathBuf,
    /// CPU or CUDA (with CPU fallback).
    pub device: Device,
    /// Intra-op threads.
    pub threads: usize,
    /// Sampling.
    pub generation: GenParams,
    /// Prompting.
    pub prompt: PromptConfig,
    /// Viewport the coordinates grid maps to when an observation has no screenshot to
    /// tell its own (a campaign's screen can be any size).
    pub viewport: (u32, u32),
    /// Text the model's answer starts with, written into the prompt after the template's
    /// generation prompt (e.g. `Action:`): a small model that will not follow the
    /// output format on its own then only has to finish the line. The decision's
    /// `raw_output` starts with it; its log-probabilities cover the generated tokens only
    /// (the prefix was not sampled).
    pub answer_prefix: String,
    /// Constrained decoding: the model can only write one action, with an element number
    /// (or grid point) the observation offers, alone or after free lines of reasoning
    /// (see [`grammar`]). Every finished output parses; log-probabilities are those of the
    /// constrained distribution.
    pub constrained: Option<grammar::Constraint>,
    /// Memory for prompt prefixes kept across requests (`inference`'s prefix cache: every
    /// step of an episode repeats its system text and task); 0 turns it off.
    pub prefix_cache_bytes: usize,
}

impl OnnxOptions {
    /// Defaults for a model directory: greedy, 96 new tokens, plain prompt, set-of-marks.
    pub fn new(model_dir: impl Into<PathBuf>, dylib: impl Into<PathBuf>) -> OnnxOptions {
        OnnxOptions {
            model_dir: model_dir.into(),
            dylib: dylib.into(),
            device: Device::Cpu,
            threads: 2,
            generation: GenParams {
                max_new_tokens: 96,
                temperature: 0.0,
                top_p: 1.0,
                stop: vec!["\n\n\n".into()],
            },
            prompt: PromptConfig::default(),
            viewport: (1280, 720),
            answer_prefix: String::new(),
            constrained: None,
            prefix_cache_bytes: inference::DEFAULT_PREFIX_CACHE_BYTES,
        }
    }
}

/// The ONNX model behind the batching queue.
pub struct OnnxBackend {
    model: Arc<Mutex<Model>>,
    opts: OnnxOptions,
    vision: bool,
    template: String,
    /// The model files' fingerprint, read once at load.
    fingerprint: Option<String>,
}

/// A step's seed for sampling: a function of the episode seed and step only.
fn request_seed(input: &StepInput) -> u64 {
    input.seed ^ (u64::from(input.step) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl OnnxBackend {
    /// Loads the model.
    pub fn load(opts: OnnxOptions) -> Result<OnnxBackend, OnnxError> {
        let mut model = Model::load(&opts.model_dir, &opts.dylib, opts.device, opts.threads)?;
        model.set_prefix_cache(opts.prefix_cache_bytes);
        let vision = model.has_vision();
        let template = model.config().chat_template.clone();
        // The files just loaded are readable; a failure here leaves the card without it.
        let fingerprint = crate::fingerprint(&opts.model_dir)
            .map_err(|e| tracing::warn!(dir = %opts.model_dir.display(), error = %e, "could not fingerprint the model"))
            .ok();
        Ok(OnnxBackend {
            model: Arc::new(Mutex::new(model)),
            opts,
            vision,
            template,
            fingerprint,
        })
    }

    /// The execution provider in use, and why CUDA was not, if it was asked for.
    pub fn provider(&self) -> (String, Option<String>) {
        let m = self.model.lock().expect("model lock");
        (m.provider().to_string(), m.fallback().map(str::to_string))
    }

    /// Whether the model reads screenshots.
    pub fn has_vision(&self) -> bool {
        self.vision
    }

    /// The shared model (for the OpenAI-compatible server).
    pub fn model(&self) -> Arc<Mutex<Model>> {
        self.model.clone()
    }

    /// Builds the prompt of one step: template-rendered text with images expanded.
    pub fn prompt_for(&self, input: &StepInput) -> Result<Prompt, OnnxError> {
        let built = prompt::build(input, &self.opts.prompt, self.vision, self.opts.constrained);
        let mut text = prompt::render(&self.template, &built.text, built.images.len(), self.vision)
            .map_err(OnnxError::Prompt)?;
        text.push_str(&self.opts.answer_prefix);
        // The store keeps text with NUL as U+FFFD (Postgres rejects NUL), and a page or an
        // earlier output of the model can carry NUL into the prompt. Cleaning it here makes
        // the prompt the model is given the prompt the store keeps, so the trainer rescores
        // a recorded step on exactly the tokens that produced it.
        if text.contains('\0') {
            text = text.replace('\0', "\u{FFFD}");
        }
        let model = self.model.lock().expect("model lock");
        let mut prompt = expand_images(&text, &built.images, model.config())?;
        if let Some(constraint) = self.opts.constrained {
            prompt.grammar = Some(grammar::ActionGrammar::for_observation(
                &input.observation,
                self.grounding(),
                constraint,
                self.opts.prompt.actions,
            )?);
        }
        Ok(prompt)
    }

    /// The text every output starts with (written into the prompt, not sampled).
    pub fn answer_prefix(&self) -> &str {
        &self.opts.answer_prefix
    }

    /// The viewport grid points map to when an observation has no screenshot.
    pub fn viewport(&self) -> (u32, u32) {
        self.opts.viewport
    }

    /// How actions address the page: element numbers unless a vision model uses the grid.
    pub fn grounding(&self) -> Grounding {
        prompt::effective_grounding(self.opts.prompt.grounding, self.vision)
    }

    /// The decoder's inputs for a step as this policy prompted it, followed by the tokens it
    /// sampled (`Decision::token_ids`): what the trainer scores and trains on, rebuilt from
    /// the step exactly as the policy saw it (template, images, grammar).
    pub fn teacher_inputs(
        &self,
        input: &StepInput,
        token_ids: &[u32],
    ) -> Result<inference::TeacherInputs, OnnxError> {
        let prompt = self.prompt_for(input)?;
        self.model
            .lock()
            .expect("model lock")
            .teacher_inputs(&prompt, token_ids)
    }

    /// Decides a batch of steps on the calling thread (the batching queue calls this on a
    /// blocking thread; tests and offline tools may call it directly).
    pub fn decide_all(
        &self,
        inputs: &[StepInput],
    ) -> Result<Vec<Result<Decision, PolicyError>>, PolicyError> {
        let prompts: Vec<Prompt> = inputs
            .iter()
            .map(|i| self.prompt_for(i))
            .collect::<Result<_, _>>()
            .map_err(|e| PolicyError::Failed(e.to_string()))?;
        let seeds: Vec<u64> = inputs.iter().map(request_seed).collect();
        let mut model = self.model.lock().expect("model lock");
        let before = model.prefill_stats();
        let cache_before = model.prefix_cache_stats().unwrap_or_default();
        let outputs = model
            .generate(&prompts, &self.opts.generation, &seeds)
            // The runtime failing (out of memory, a broken session) is the backend's
            // trouble, not the agent's: retried, never scored.
            .map_err(|e| PolicyError::Unavailable(format!("inference failed: {e}")))?;
        let after = model.prefill_stats();
        let cache_after = model.prefix_cache_stats().unwrap_or_default();
        drop(model);
        METRICS.prefill_tokens.add(after.tokens - before.tokens);
        METRICS.prefill_tokens_saved.add(after.saved - before.saved);
        METRICS
            .prefill_tokens_cached
            .add(after.cached.saturating_sub(before.cached));
        METRICS
            .prefix_cache_lookups
            .add(cache_after.lookups.saturating_sub(cache_before.lookups));
        METRICS
            .prefix_cache_hits
            .add(cache_after.hits.saturating_sub(cache_before.hits));
        let grounding = self.grounding();
        Ok(outputs
            .into_iter()
            .zip(prompts)
            .zip(inputs)
            .map(|((g, p), input)| {
                let output = format!("{}{}", self.opts.answer_prefix, g.text);
                let viewport = input.observation.screenshot.viewport();
                let (thought, action) =
                    parse_output(&output, grounding, viewport.unwrap_or(self.opts.viewport));
                Ok(Decision {
                    action: within(action, self.opts.prompt.actions),
                    thought,
                    logprob: Some(g.logprobs.iter().map(|l| f64::from(*l)).sum()),
                    token_logprobs: g.logprobs,
                    token_ids: g.tokens,
                    raw_output: output,
                    prompt: Some(p.rendered),
                })
            })
            .collect())
    }
}

impl BatchBackend for OnnxBackend {
    fn card(&self, name: &str) -> PolicyCard {
        let g = &self.opts.generation;
        let (provider, _) = self.provider();
        let mut card = PolicyCard::new(name, "onnx");
        card.model = self
            .opts
            .model_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        card.fingerprint = self.fingerprint.clone();
        card.sampling = Some(Sampling {
            temperature: g.temperature,
            top_p: g.top_p,
            max_tokens: u32::try_from(g.max_new_tokens).unwrap_or(u32::MAX),
        });
        card.settings = self.opts.prompt.describe();
        card.with("provider", provider)
            .with("vision", self.vision)
            .with("answer_prefix", self.opts.answer_prefix.clone())
            .with("constrained", describe_constraint(self.opts.constrained))
            .with("stop", g.stop.clone())
    }

    fn run_batch(
        &self,
        inputs: Vec<StepInput>,
    ) -> BoxFuture<'_, Result<Vec<Result<Decision, PolicyError>>, PolicyError>> {
        async move {
            let this = OnnxBackend {
                model: self.model.clone(),
                opts: self.opts.clone(),
                vision: self.vision,
                template: self.template.clone(),
                fingerprint: self.fingerprint.clone(),
            };
            tokio::task::spawn_blocking(move || this.decide_all(&inputs))
                .await
                .map_err(|e| PolicyError::Unavailable(format!("inference thread failed: {e}")))?
        }
        .boxed()
    }
}

/// The `onnx` policy: the model behind a batching queue.
pub fn policy(
    name: &str,
    opts: OnnxOptions,
    limits: BatchLimits,
) -> Result<(Batched, Arc<OnnxBackend>), OnnxError> {
    let backend = Arc::new(OnnxBackend::load(opts)?);
    Ok((Batched::new(name, backend.clone(), limits), backend))
}

/// The ONNX policy following a version link (`inference::version_link`): new episodes
/// run the version the link names when they start; see [`super::follow`].
pub fn following(
    name: &str,
    link: &std::path::Path,
    opts: OnnxOptions,
    limits: BatchLimits,
) -> Result<super::follow::Following, String> {
    let policy_name = name.to_string();
    let load: super::follow::Loader = Arc::new(move |dir: &std::path::Path| {
        let mut o = opts.clone();
        o.model_dir = dir.to_path_buf();
        policy(&policy_name, o, limits)
            .map(|(p, _)| Arc::new(p) as Arc<dyn super::Policy>)
            .map_err(|e| e.to_string())
    });
    super::follow::Following::new(name, link, load)
}

/// Constrained decoding as a policy card records it.
pub fn describe_constraint(c: Option<grammar::Constraint>) -> serde_json::Value {
    match c {
        None => serde_json::Value::Null,
        Some(grammar::Constraint::Action) => "action".into(),
        Some(grammar::Constraint::Reasoned) => "reasoned".into(),
    }
}
