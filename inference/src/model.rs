//! The model: three ONNX Runtime sessions in the onnx-community VLM layout
//! (`vision_encoder`, `embed_tokens`, `decoder_model_merged`) and the tokenizer, with batched
//! KV-cache generation.
//!
//! A batch is left-padded; the prompt is embedded, the image-token rows (`<image>`,
//! `<|image_pad|>`) are overwritten with the vision encoder's features in order, the decoder
//! prefills with an empty past, then decodes one token per step for every sequence still
//! running. Positions are `[batch, seq]`, or `[3, batch, seq]` (Qwen2-VL's M-RoPE) when the
//! decoder's `position_ids` input has rank 3; each row then decodes from its own largest
//! prompt position + 1. Past/present tensors are handed back to the decoder as ONNX Runtime
//! returned them, so fp16 exports work unchanged.

use std::path::Path;
use std::sync::OnceLock;

use half::f16;
use ort::session::Session;
use ort::value::{DynValue, Tensor, TensorElementType, ValueType};

mod forward;
mod generate;
mod prefix;
mod share;
mod teacher;

pub use prefix::{BLOCK as PREFIX_BLOCK, PrefixCacheStats};
pub use share::PrefillStats;
pub use teacher::{TeacherInputs, TokenSet};

use crate::OnnxError;
use crate::config::{ModelConfig, VisionLayout};
use crate::grammar::{ActionGrammar, TokenBytes};
use crate::image::Prepared;
use crate::qwen2vl::Patches;

/// Where inference runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// The CPU execution provider.
    Cpu,
    /// CUDA, when built with the `cuda` feature and a GPU is there; else CPU (logged).
    Cuda,
}

/// Whether this build has ONNX Runtime's CUDA execution provider (the `cuda` feature).
/// Without it [`Device::Cuda`] runs on the CPU, so settings that ask for CUDA explicitly
/// check this first.
pub const CUDA_BUILT: bool = cfg!(feature = "cuda");

/// The prefix cache's default budget: room for the key/value cache of about five thousand
/// prompt tokens of SmolLM2-135M (46 KB each in f32), a few hundred of a larger model's.
pub const DEFAULT_PREFIX_CACHE_BYTES: usize = 256 << 20;

/// One prompt: chat-templated text with its images expanded, and those images.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// The text, image tokens included.
    pub text: String,
    /// The text as the template rendered it, one placeholder per image (what is stored
    /// with the step: the expanded image tokens are derived from it).
    pub rendered: String,
    /// The images, in the order their tokens appear.
    pub images: Vec<Pixels>,
    /// Constrained decoding: the output must be an action of this grammar.
    pub grammar: Option<ActionGrammar>,
}

impl Prompt {
    /// A prompt of text alone, as rendered, with no grammar.
    pub fn text_only(text: &str) -> Prompt {
        Prompt {
            text: text.into(),
            rendered: text.into(),
            images: Vec::new(),
            grammar: None,
        }
    }
}

/// One image as the model's vision encoder takes it.
#[derive(Debug, Clone)]
pub enum Pixels {
    /// Idefics3 tiles with their pixel masks.
    Tiles(Prepared),
    /// Qwen2-VL patch rows with their grid.
    Patches(Patches),
}

impl Pixels {
    /// How many image tokens (feature rows) the image takes.
    pub fn tokens(&self, cfg: &ModelConfig) -> usize {
        match (self, &cfg.layout) {
            (Pixels::Patches(p), VisionLayout::Qwen2Vl(q)) => p.tokens(q.merge),
            (Pixels::Patches(p), VisionLayout::Idefics3) => p.tokens(1),
            (Pixels::Tiles(t), _) => t.tiles.len() * cfg.image_seq_len,
        }
    }
}

/// Sampling settings.
#[derive(Debug, Clone, PartialEq)]
pub struct GenParams {
    /// Most tokens to generate.
    pub max_new_tokens: usize,
    /// 0: greedy; otherwise softmax temperature.
    pub temperature: f32,
    /// Nucleus sampling mass (1.0: off).
    pub top_p: f32,
    /// Texts that end a generation (not included in the output).
    pub stop: Vec<String>,
}

/// Why a generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// An end-of-sequence token.
    Eos,
    /// A stop text.
    Stop,
    /// `max_new_tokens`.
    Length,
}

/// One sequence's output.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// Decoded text (special tokens and the stop text removed).
    pub text: String,
    /// Generated token ids.
    pub tokens: Vec<u32>,
    /// Log-probability of each generated token under the model (temperature 1).
    pub logprobs: Vec<f32>,
    /// Why it ended.
    pub finish: Finish,
}

/// The decoder's key/value cache: `(input name, tensor)` per layer and kind.
type Past = Vec<(String, DynValue)>;

static ORT_ENV: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

/// The process's ONNX Runtime environment, created from `dylib` the first time it is asked
/// for. ONNX Runtime allows one per process: every session (the models here, and anything
/// else that opens an ONNX file in the same process) must be built on this one.
pub fn environment(dylib: &Path) -> Result<&'static ort::environment::Environment, OnnxError> {
    ORT_ENV
        .get_or_init(|| {
            ort::init_from(dylib)
                .map_err(|e| format!("cannot load ONNX Runtime from {}: {e}", dylib.display()))?
                .with_name("surfgym")
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| OnnxError::Runtime(e.clone()))
}

/// A loaded model.
pub struct Model {
    cfg: ModelConfig,
    tokenizer: tokenizers::Tokenizer,
    /// Token bytes for constrained decoding, built the first time a grammar is used.
    token_bytes: Option<std::sync::Arc<TokenBytes>>,
    vision: Option<Session>,
    embed: Session,
    decoder: Session,
    decoder_inputs: Vec<String>,
    /// `position_ids` is `[3, batch, seq]` (M-RoPE).
    mrope: bool,
    /// The vision encoder's grid input (`grid_thw` / `image_grid_thw`), Qwen2-VL only.
    grid_input: Option<String>,
    kv_type: TensorElementType,
    embeds_type: TensorElementType,
    pixels_type: TensorElementType,
    provider: String,
    fallback: Option<String>,
    /// Rows of a batch with one prompt share its prefill (`share.rs`); on unless turned
    /// off (to compare).
    share_prompts: bool,
    prefill: PrefillStats,
    /// Prompt prefixes kept across requests (`prefix.rs`); `None`: off.
    prefix: Option<prefix::PrefixCache>,
}

fn input_type(session: &Session, name: &str) -> Option<TensorElementType> {
    session
        .inputs()
        .iter()
        .find(|o| o.name() == name)
        .and_then(|o| match o.dtype() {
            ValueType::Tensor { ty, .. } => Some(*ty),
            _ => None,
        })
}

fn rt(e: impl std::fmt::Display) -> OnnxError {
    OnnxError::Runtime(e.to_string())
}

impl Model {
    /// Loads a model directory (`config.json`, `tokenizer.json`, `onnx/*.onnx`).
    pub fn load(
        dir: &Path,
        dylib: &Path,
        device: Device,
        threads: usize,
    ) -> Result<Model, OnnxError> {
        // A trained policy version: its tensors go over the base decoder's initializers.
        let overrides =
            crate::version::load_overrides(dir).map_err(|e| OnnxError::Model(e.to_string()))?;
        let trained_steps = overrides.as_ref().map(|o| o.lineage.optimizer_steps);
        let tensors = overrides.map(|o| o.tensors).unwrap_or_default();
        Model::load_over(dir, tensors, trained_steps, dylib, device, threads)
    }

    /// Loads the base model at `base` with the PEFT LoRA adapter at `peft` merged into its
    /// decoder's initializers (see [`crate::peft`]).
    pub fn load_peft(
        base: &Path,
        peft: &Path,
        dylib: &Path,
        device: Device,
        threads: usize,
    ) -> Result<Model, OnnxError> {
        let tensors = crate::peft::merged_overrides(base, peft)
            .map_err(|e| OnnxError::Model(e.to_string()))?;
        Model::load_over(base, tensors, None, dylib, device, threads)
    }

    fn load_over(
        dir: &Path,
        tensors: Vec<crate::version::Override>,
        trained_steps: Option<usize>,
        dylib: &Path,
        device: Device,
        threads: usize,
    ) -> Result<Model, OnnxError> {
        let cfg = ModelConfig::load(dir)?;
        let tokenizer = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| OnnxError::Model(format!("tokenizer.json: {e}")))?;
        let env = environment(dylib)?;
        let (provider, fallback) = match device {
            Device::Cpu => ("CPU".to_string(), None),
            Device::Cuda => cuda_or_cpu(env),
        };
        if let Some(why) = &fallback {
            tracing::warn!(reason = %why, "CUDA execution provider unavailable; falling back to CPU");
        }
        // Made into runtime values once; the session builder shares them.
        let initializers: Vec<(String, std::sync::Arc<DynValue>)> = tensors
            .into_iter()
            .map(|t| {
                let v = Tensor::from_array((t.dims, t.data)).map_err(rt)?;
                Ok((t.name, std::sync::Arc::new(v.into_dyn())))
            })
            .collect::<Result<_, OnnxError>>()?;
        let open = |file: &str| -> Result<Session, OnnxError> {
            let path = cfg.onnx_dir.join(file);
            let mut builder = Session::builder(env).map_err(rt)?;
            if file == "decoder_model_merged.onnx" {
                for (name, value) in &initializers {
                    builder = builder.with_initializer(name, value.clone()).map_err(|e| {
                        OnnxError::Model(format!("{}: tensor `{name}`: {e}", dir.display()))
                    })?;
                }
            }
            builder = builder
                .with_intra_threads(threads.max(1))
                .map_err(|e| rt(e.to_string()))?;
            // Only `cuda_or_cpu` names CUDA, and only in a `cuda` build.
            if provider == "CUDA" {
                builder = builder
                    // A session that cannot place the model on the GPU fails here rather
                    // than quietly running on the CPU while reporting CUDA.
                    .with_execution_providers([ort::ep::CUDA::default().build().error_on_failure()])
                    .map_err(|e| rt(e.to_string()))?;
            }
            builder
                .commit_from_file(&path)
                .map_err(|e| OnnxError::Model(format!("{}: {e}", path.display())))
        };
        let embed = open("embed_tokens.onnx")?;
        let decoder = open("decoder_model_merged.onnx")?;
        let vision = if cfg.onnx_dir.join("vision_encoder.onnx").exists() {
            Some(open("vision_encoder.onnx")?)
        } else {
            None
        };
        let decoder_inputs: Vec<String> = decoder
            .inputs()
            .iter()
            .map(|o| o.name().to_string())
            .collect();
        let mrope = decoder.inputs().iter().any(|o| {
            o.name() == "position_ids"
                && matches!(o.dtype(), ValueType::Tensor { shape, .. } if shape.len() == 3)
        });
        let grid_input = vision.as_ref().and_then(|v| {
            v.inputs()
                .iter()
                .map(|o| o.name())
                .find(|n| *n == "image_grid_thw" || *n == "grid_thw")
                .map(str::to_string)
        });
        if matches!(cfg.layout, VisionLayout::Qwen2Vl(_))
            && vision.is_some()
            && grid_input.is_none()
        {
            return Err(OnnxError::Model(
                "a Qwen2-VL vision_encoder needs a grid_thw or image_grid_thw input".into(),
            ));
        }
        let kv_type = input_type(&decoder, "past_key_values.0.key")
            .ok_or_else(|| OnnxError::Model("decoder has no past_key_values.0.key input".into()))?;
        let embeds_type = input_type(&decoder, "inputs_embeds")
            .ok_or_else(|| OnnxError::Model("decoder has no inputs_embeds input".into()))?;
        let pixels_type = vision
            .as_ref()
            .and_then(|v| input_type(v, "pixel_values"))
            .unwrap_or(TensorElementType::Float32);
        tracing::info!(model = %dir.display(), provider = %provider, layers = cfg.layers, kv = ?kv_type, mrope, trained_steps = ?trained_steps, "ONNX policy model loaded");
        Ok(Model {
            cfg,
            tokenizer,
            token_bytes: None,
            vision,
            embed,
            decoder,
            decoder_inputs,
            mrope,
            grid_input,
            kv_type,
            embeds_type,
            pixels_type,
            provider,
            fallback,
            share_prompts: true,
            prefill: PrefillStats::default(),
            prefix: Some(prefix::PrefixCache::new(DEFAULT_PREFIX_CACHE_BYTES)),
        })
    }

    /// Whether rows of a batch with one prompt share its prefill (on by default; the
    /// outputs are the same either way, up to float rounding).
    pub fn set_prompt_sharing(&mut self, on: bool) {
        self.share_prompts = on;
    }

    /// Keeps prompt prefixes across requests in at most `bytes` of memory (0: off, and the
    /// cache is emptied). On by default with [`DEFAULT_PREFIX_CACHE_BYTES`]; the outputs
    /// are the same either way, up to float rounding.
    pub fn set_prefix_cache(&mut self, bytes: usize) {
        self.prefix = (bytes > 0).then(|| prefix::PrefixCache::new(bytes));
    }

    /// What the prefix cache did since it was set (`None`: off).
    pub fn prefix_cache_stats(&self) -> Option<PrefixCacheStats> {
        self.prefix.as_ref().map(|c| c.stats)
    }

    /// Prompt tokens prefilled and saved by sharing, since the model was loaded.
    pub fn prefill_stats(&self) -> PrefillStats {
        self.prefill
    }

    /// The model's configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// The execution provider in use (`CPU`, `CUDA`).
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// Why CUDA was not used, when it was asked for.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// Whether the decoder takes 3-D M-RoPE positions (`[3, batch, seq]`).
    pub fn uses_mrope(&self) -> bool {
        self.mrope
    }

    /// Whether the model has a vision encoder.
    pub fn has_vision(&self) -> bool {
        self.vision.is_some() && self.cfg.image_token_id.is_some()
    }

    /// One token alone as text (special tokens included; a token holding part of a
    /// character decodes to a replacement character, as servers report it).
    pub fn token_text(&self, id: u32) -> String {
        self.tokenizer.decode(&[id], false).unwrap_or_default()
    }

    /// Token ids of a text (special tokens in the text are recognised).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, OnnxError> {
        Ok(self
            .tokenizer
            .encode(text, false)
            .map_err(|e| rt(e.to_string()))?
            .get_ids()
            .to_vec())
    }
}

fn to_f32(v: &DynValue) -> Result<Vec<f32>, OnnxError> {
    if let Ok((_, data)) = v.try_extract_tensor::<f32>() {
        return Ok(data.to_vec());
    }
    let (_, data) = v.try_extract_tensor::<f16>().map_err(rt)?;
    Ok(data.iter().map(|x| x.to_f32()).collect())
}

/// Whether the CUDA provider can be used: compiled into this ONNX Runtime (the
/// onnxruntime-gpu build) and registrable, which loads the provider library and the CUDA
/// and cuDNN libraries it needs.
///
/// The CUDA code is compiled in every build (ort's CUDA bindings cost nothing with a
/// dynamically loaded runtime), so a build without the `cuda` feature still type-checks
/// it; the feature only decides whether it runs.
fn cuda_or_cpu(env: &ort::environment::Environment) -> (String, Option<String>) {
    use ort::ep::ExecutionProvider;
    let cpu = |why: String| ("CPU".to_string(), Some(why));
    if !CUDA_BUILT {
        return cpu(
            "this build of surfgym has no `cuda` feature (rebuild with --features cuda)".into(),
        );
    }
    match ort::ep::CUDA::is_available() {
        Ok(true) => {}
        Ok(false) => {
            return cpu("this ONNX Runtime has no CUDA provider (install the onnxruntime-gpu wheel and point ORT_DYLIB_PATH at its libonnxruntime.so)".into());
        }
        Err(e) => return cpu(format!("checking for CUDA failed: {e}")),
    }
    let registered =
        Session::builder(env).and_then(|mut b| ort::ep::CUDA::default().register(&mut b));
    match registered {
        Ok(()) => ("CUDA".into(), None),
        Err(e) => cpu(format!(
            "the CUDA provider did not load ({e}); the CUDA 13 runtime, cuBLAS, cuFFT, cuRAND and cuDNN 9 libraries must be on LD_LIBRARY_PATH"
        )),
    }
}
