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
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::OnnxError;
use super::config::{ModelConfig, VisionLayout};
use super::grammar::{ActionGrammar, TokenBytes};
use super::image::Prepared;
use super::qwen2vl::{self, Patches};

/// Where inference runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// The CPU execution provider.
    Cpu,
    /// CUDA, when built with the `cuda` feature and a GPU is there; else CPU (logged).
    Cuda,
}

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

fn environment(dylib: &Path) -> Result<&'static ort::environment::Environment, OnnxError> {
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
        let open = |file: &str| -> Result<Session, OnnxError> {
            let path = cfg.onnx_dir.join(file);
            let mut builder = Session::builder(env).map_err(rt)?;
            builder = builder
                .with_intra_threads(threads.max(1))
                .map_err(|e| rt(e.to_string()))?;
            #[cfg(feature = "cuda")]
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
        tracing::info!(model = %dir.display(), provider = %provider, layers = cfg.layers, kv = ?kv_type, mrope, "ONNX policy model loaded");
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
        })
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

    fn embed(&mut self, ids: Vec<i64>, batch: usize, len: usize) -> Result<Vec<f32>, OnnxError> {
        let input = Tensor::from_array(([batch, len], ids)).map_err(rt)?;
        let outputs = self
            .embed
            .run(ort::inputs!["input_ids" => input])
            .map_err(rt)?;
        to_f32(&outputs[0])
    }

    /// The features of a prompt's (or a batch's) images, rows in image order.
    fn image_features(&mut self, images: &[&Pixels]) -> Result<Vec<f32>, OnnxError> {
        let tiles: Vec<&Prepared> = images
            .iter()
            .filter_map(|p| match p {
                Pixels::Tiles(t) => Some(t),
                Pixels::Patches(_) => None,
            })
            .collect();
        let patches: Vec<&Patches> = images
            .iter()
            .filter_map(|p| match p {
                Pixels::Patches(p) => Some(p),
                Pixels::Tiles(_) => None,
            })
            .collect();
        match (tiles.is_empty(), patches.is_empty()) {
            (_, true) => self.tile_features(&tiles),
            (true, false) => self.patch_features(&patches),
            (false, false) => Err(OnnxError::Prompt(
                "tiles and patch rows in one batch: images prepared for different models".into(),
            )),
        }
    }

    fn patch_features(&mut self, images: &[&Patches]) -> Result<Vec<f32>, OnnxError> {
        let patches: usize = images
            .iter()
            .map(|p| p.grid_thw.iter().product::<usize>())
            .sum();
        let rows: Vec<f32> = images.iter().flat_map(|p| p.rows.iter().copied()).collect();
        let width = rows.len() / patches.max(1);
        let grid: Vec<i64> = images
            .iter()
            .flat_map(|p| p.grid_thw.map(|v| v as i64))
            .collect();
        let pixel_values: DynValue = match self.pixels_type {
            TensorElementType::Float16 => Tensor::from_array((
                [patches, width],
                rows.iter().map(|v| f16::from_f32(*v)).collect::<Vec<_>>(),
            ))
            .map_err(rt)?
            .into_dyn(),
            _ => Tensor::from_array(([patches, width], rows))
                .map_err(rt)?
                .into_dyn(),
        };
        let grid_name = self
            .grid_input
            .clone()
            .ok_or_else(|| OnnxError::Model("the vision encoder takes no grid_thw".into()))?;
        let grid = Tensor::from_array(([images.len(), 3], grid)).map_err(rt)?;
        let vision = self
            .vision
            .as_mut()
            .ok_or_else(|| OnnxError::Model("this model has no vision encoder".into()))?;
        let inputs: Vec<(
            std::borrow::Cow<'_, str>,
            ort::session::SessionInputValue<'_>,
        )> = vec![
            ("pixel_values".into(), pixel_values.into()),
            (grid_name.into(), grid.into_dyn().into()),
        ];
        let outputs = vision.run(inputs).map_err(rt)?;
        to_f32(&outputs[0])
    }

    fn tile_features(&mut self, tiles: &[&Prepared]) -> Result<Vec<f32>, OnnxError> {
        let n: usize = tiles.iter().map(|p| p.tiles.len()).sum();
        let t = self.cfg.image.tile as usize;
        let mut pixels = Vec::with_capacity(n * 3 * t * t);
        let mut mask = Vec::with_capacity(n * t * t);
        for p in tiles {
            for (tile, m) in p.tiles.iter().zip(&p.masks) {
                pixels.extend_from_slice(tile);
                mask.extend_from_slice(m);
            }
        }
        let pixel_values: DynValue = match self.pixels_type {
            TensorElementType::Float16 => Tensor::from_array((
                [1, n, 3, t, t],
                pixels.iter().map(|v| f16::from_f32(*v)).collect::<Vec<_>>(),
            ))
            .map_err(rt)?
            .into_dyn(),
            _ => Tensor::from_array(([1, n, 3, t, t], pixels))
                .map_err(rt)?
                .into_dyn(),
        };
        let mask = Tensor::from_array(([1, n, t, t], mask)).map_err(rt)?;
        let vision = self
            .vision
            .as_mut()
            .ok_or_else(|| OnnxError::Model("this model has no vision encoder".into()))?;
        let outputs = vision
            .run(ort::inputs!["pixel_values" => pixel_values, "pixel_attention_mask" => mask])
            .map_err(rt)?;
        to_f32(&outputs[0])
    }

    fn embeds_value(
        &self,
        data: Vec<f32>,
        batch: usize,
        len: usize,
        hidden: usize,
    ) -> Result<DynValue, OnnxError> {
        Ok(match self.embeds_type {
            TensorElementType::Float16 => Tensor::from_array((
                [batch, len, hidden],
                data.into_iter().map(f16::from_f32).collect::<Vec<_>>(),
            ))
            .map_err(rt)?
            .into_dyn(),
            _ => Tensor::from_array(([batch, len, hidden], data))
                .map_err(rt)?
                .into_dyn(),
        })
    }

    fn empty_past(&self, batch: usize) -> Result<Past, OnnxError> {
        let shape = [batch, self.cfg.kv_heads, 0, self.cfg.head_dim];
        let mut out = Vec::new();
        for i in 0..self.cfg.layers {
            for kind in ["key", "value"] {
                let v: DynValue = match self.kv_type {
                    TensorElementType::Float16 => Tensor::<f16>::from_array((shape, Vec::new()))
                        .map_err(rt)?
                        .into_dyn(),
                    _ => Tensor::<f32>::from_array((shape, Vec::new()))
                        .map_err(rt)?
                        .into_dyn(),
                };
                out.push((format!("past_key_values.{i}.{kind}"), v));
            }
        }
        Ok(out)
    }

    /// The prefill positions of one unpadded prompt, per token `[t, h, w]` (the three are
    /// equal for text and for models without M-RoPE).
    fn prompt_positions(&self, ids: &[u32], images: &[Pixels]) -> Result<Vec<[i64; 3]>, OnnxError> {
        if !self.mrope {
            return Ok((0..ids.len() as i64).map(|i| [i; 3]).collect());
        }
        let merge = match &self.cfg.layout {
            VisionLayout::Qwen2Vl(q) => q.merge,
            VisionLayout::Idefics3 => 1,
        };
        let grids: Vec<[usize; 3]> = images
            .iter()
            .filter_map(|p| match p {
                Pixels::Patches(p) => Some(p.grid_thw),
                Pixels::Tiles(_) => None,
            })
            .collect();
        match self.cfg.image_token_id {
            Some(image_id) => {
                qwen2vl::rope_index(ids, image_id, &grids, merge).map_err(OnnxError::Prompt)
            }
            None => Ok((0..ids.len() as i64).map(|i| [i; 3]).collect()),
        }
    }

    /// The decoder's prefill positions of a prompt, per token `[t, h, w]`: what
    /// [`Model::generate`] feeds (with M-RoPE, image tokens sit on their merged grid).
    pub fn positions(&self, prompt: &Prompt) -> Result<Vec<[i64; 3]>, OnnxError> {
        let ids = self.encode(&prompt.text)?;
        self.prompt_positions(&ids, &prompt.images)
    }

    /// Flattens per-row positions (left-padded to `len`, padding at 1) into the decoder's
    /// `position_ids` layout.
    fn position_values(&self, rows: &[Vec<[i64; 3]>], len: usize) -> Vec<i64> {
        let axes = if self.mrope { 3 } else { 1 };
        let mut out = Vec::with_capacity(axes * rows.len() * len);
        for axis in 0..axes {
            for row in rows {
                out.extend(std::iter::repeat_n(1i64, len - row.len()));
                out.extend(row.iter().map(|p| p[axis]));
            }
        }
        out
    }

    /// One decoder call: returns the last position's logits per row and the new past.
    fn decode(
        &mut self,
        embeds: DynValue,
        mask: &[i64],
        positions: Vec<i64>,
        past: Past,
        batch: usize,
        len: usize,
    ) -> Result<(Vec<Vec<f32>>, Past), OnnxError> {
        let (all, past) = self.decode_all(embeds, mask, positions, past, batch, len)?;
        let vocab = all.len() / (batch * len).max(1);
        let rows = (0..batch)
            .map(|b| all[(b * len + len - 1) * vocab..(b * len + len) * vocab].to_vec())
            .collect();
        Ok((rows, past))
    }

    /// One decoder call: every position's logits (`[batch, len, vocab]`, flat) and the new past.
    fn decode_all(
        &mut self,
        embeds: DynValue,
        mask: &[i64],
        positions: Vec<i64>,
        past: Past,
        batch: usize,
        len: usize,
    ) -> Result<(Vec<f32>, Past), OnnxError> {
        let total = mask.len() / batch;
        let mut inputs: Vec<(
            std::borrow::Cow<'_, str>,
            ort::session::SessionInputValue<'_>,
        )> = vec![
            ("inputs_embeds".into(), embeds.into()),
            (
                "attention_mask".into(),
                Tensor::from_array(([batch, total], mask.to_vec()))
                    .map_err(rt)?
                    .into_dyn()
                    .into(),
            ),
        ];
        if self.decoder_inputs.iter().any(|n| n == "position_ids") {
            let value = if self.mrope {
                Tensor::from_array(([3, batch, len], positions))
            } else {
                Tensor::from_array(([batch, len], positions))
            };
            inputs.push(("position_ids".into(), value.map_err(rt)?.into_dyn().into()));
        }
        let past_len = total - len;
        if self.decoder_inputs.iter().any(|n| n == "use_cache_branch") {
            inputs.push((
                "use_cache_branch".into(),
                Tensor::from_array(([1], vec![past_len > 0]))
                    .map_err(rt)?
                    .into_dyn()
                    .into(),
            ));
        }
        for (name, v) in past {
            inputs.push((name.into(), v.into()));
        }
        let mut outputs = self.decoder.run(inputs).map_err(rt)?;
        let logits = outputs
            .remove("logits")
            .ok_or_else(|| OnnxError::Model("decoder has no logits output".into()))?;
        let all = to_f32(&logits)?;
        let mut next = Vec::with_capacity(self.cfg.layers * 2);
        for i in 0..self.cfg.layers {
            for kind in ["key", "value"] {
                let v = outputs
                    .remove(format!("present.{i}.{kind}"))
                    .ok_or_else(|| {
                        OnnxError::Model(format!("decoder has no present.{i}.{kind} output"))
                    })?;
                next.push((format!("past_key_values.{i}.{kind}"), v));
            }
        }
        Ok((all, next))
    }

    /// Teacher-forced scoring: the log-probability of each token of `continuation` after
    /// `prompt`, from one forward pass over prompt and continuation together (no KV cache).
    /// What a trainer recomputes for a stored action, and an independent check of the
    /// log-probabilities [`Model::generate`] records while decoding. A prompt with a
    /// grammar is scored under it (the masked, renormalised distribution).
    pub fn score(&mut self, prompt: &Prompt, continuation: &[u32]) -> Result<Vec<f32>, OnnxError> {
        let mut ids = self.encode(&prompt.text)?;
        let prompt_len = ids.len();
        if prompt_len == 0 {
            return Err(OnnxError::Prompt("empty prompt".into()));
        }
        ids.extend_from_slice(continuation);
        let len = ids.len();
        let flat: Vec<i64> = ids.iter().map(|t| i64::from(*t)).collect();
        let mut embeds = self.embed(flat.clone(), 1, len)?;
        let hidden = embeds.len() / len;
        if let Some(image_id) = self.cfg.image_token_id
            && !prompt.images.is_empty()
        {
            let images: Vec<&Pixels> = prompt.images.iter().collect();
            let features = self.image_features(&images)?;
            let mut rows = features.chunks_exact(hidden);
            for (i, t) in flat[..prompt_len].iter().enumerate() {
                if *t == i64::from(image_id) {
                    let row = rows.next().ok_or_else(|| {
                        OnnxError::Prompt("fewer image features than image tokens".into())
                    })?;
                    embeds[i * hidden..(i + 1) * hidden].copy_from_slice(row);
                }
            }
        }
        let embeds = self.embeds_value(embeds, 1, len, hidden)?;
        let past = self.empty_past(1)?;
        // The continuation goes on from the prompt's largest position, as decoding does.
        let mut positions = self.prompt_positions(&ids[..prompt_len], &prompt.images)?;
        let next = positions.iter().flatten().max().map_or(0, |m| m + 1);
        positions.extend((0..continuation.len() as i64).map(|j| [next + j; 3]));
        let positions = self.position_values(&[positions], len);
        let (all, _) = self.decode_all(embeds, &vec![1i64; len], positions, past, 1, len)?;
        let vocab = all.len() / len;
        // Under a grammar, each token is scored against the masked distribution it was
        // sampled from (as `generate` records it).
        let mut grammar = prompt.grammar.clone();
        if grammar.is_some() && self.token_bytes.is_none() {
            self.token_bytes = Some(std::sync::Arc::new(TokenBytes::of(&self.tokenizer)));
        }
        let bytes = self.token_bytes.clone();
        Ok(continuation
            .iter()
            .enumerate()
            .map(|(j, t)| {
                // The logits at position p predict the token at p + 1.
                let row = &all[(prompt_len - 1 + j) * vocab..(prompt_len + j) * vocab];
                let masked;
                let row = match (grammar.as_mut(), bytes.as_deref()) {
                    (Some(g), Some(bytes)) => {
                        masked = grammar_mask(row, g, bytes, &self.cfg.eos_ids);
                        if let Some(b) = bytes.get(*t as usize) {
                            g.advance(b);
                        }
                        &masked[..]
                    }
                    _ => row,
                };
                let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let sum: f64 = row.iter().map(|l| f64::from(l - max).exp()).sum();
                row.get(*t as usize).map_or(f32::NEG_INFINITY, |l| {
                    (f64::from(l - max) - sum.ln()) as f32
                })
            })
            .collect())
    }

    /// Generates for a batch of prompts; `seeds[i]` drives prompt i's sampling, so a
    /// sequence's output does not depend on its batch companions.
    pub fn generate(
        &mut self,
        prompts: &[Prompt],
        params: &GenParams,
        seeds: &[u64],
    ) -> Result<Vec<Generation>, OnnxError> {
        let batch = prompts.len();
        if batch == 0 {
            return Ok(Vec::new());
        }
        let ids: Vec<Vec<u32>> = prompts
            .iter()
            .map(|p| self.encode(&p.text))
            .collect::<Result<_, _>>()?;
        if let Some(image_id) = self.cfg.image_token_id {
            for (p, ids) in prompts.iter().zip(&ids) {
                let slots = ids.iter().filter(|t| **t == image_id).count();
                let want: usize = p.images.iter().map(|i| i.tokens(&self.cfg)).sum();
                if slots != want {
                    return Err(OnnxError::Prompt(format!(
                        "the prompt has {slots} image tokens for {want} image features"
                    )));
                }
            }
        }
        let len = ids.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let mut flat = Vec::with_capacity(batch * len);
        let mut mask = Vec::with_capacity(batch * len);
        for row in &ids {
            let pad = len - row.len();
            flat.extend(std::iter::repeat_n(i64::from(self.cfg.pad_id), pad));
            flat.extend(row.iter().map(|t| i64::from(*t)));
            mask.extend(std::iter::repeat_n(0i64, pad));
            mask.extend(std::iter::repeat_n(1i64, row.len()));
        }
        // Padded positions get 1 (their value is masked out anyway); each row decodes on from
        // its own largest position (its length without M-RoPE).
        let rows: Vec<Vec<[i64; 3]>> = ids
            .iter()
            .zip(prompts)
            .map(|(r, p)| self.prompt_positions(r, &p.images))
            .collect::<Result<_, _>>()?;
        let mut next_pos: Vec<i64> = rows
            .iter()
            .map(|r| r.iter().flatten().max().map_or(0, |m| m + 1))
            .collect();
        let positions = self.position_values(&rows, len);
        let mut embeds = self.embed(flat.clone(), batch, len)?;
        let hidden = embeds.len() / (batch * len);
        if let Some(image_id) = self.cfg.image_token_id {
            let images: Vec<&Pixels> = prompts.iter().flat_map(|p| &p.images).collect();
            if !images.is_empty() {
                let features = self.image_features(&images)?;
                let mut rows = features.chunks_exact(hidden);
                for (i, t) in flat.iter().enumerate() {
                    if *t == i64::from(image_id) {
                        let row = rows.next().ok_or_else(|| {
                            OnnxError::Prompt("fewer image features than image tokens".into())
                        })?;
                        embeds[i * hidden..(i + 1) * hidden].copy_from_slice(row);
                    }
                }
            }
        }
        let embeds = self.embeds_value(embeds, batch, len, hidden)?;
        let past = self.empty_past(batch)?;
        let (mut logits, mut past) = self.decode(embeds, &mask, positions, past, batch, len)?;
        let mut rngs: Vec<StdRng> = seeds.iter().map(|s| StdRng::seed_from_u64(*s)).collect();
        let mut out: Vec<Generation> = (0..batch)
            .map(|_| Generation {
                text: String::new(),
                tokens: Vec::new(),
                logprobs: Vec::new(),
                finish: Finish::Length,
            })
            .collect();
        let mut running = vec![true; batch];
        let mut grammars: Vec<Option<ActionGrammar>> =
            prompts.iter().map(|p| p.grammar.clone()).collect();
        if grammars.iter().any(Option::is_some) && self.token_bytes.is_none() {
            self.token_bytes = Some(std::sync::Arc::new(TokenBytes::of(&self.tokenizer)));
        }
        let bytes = self.token_bytes.clone();
        let bytes = bytes.as_deref();
        for _ in 0..params.max_new_tokens {
            let mut step_ids = Vec::with_capacity(batch);
            for b in 0..batch {
                if !running[b] {
                    step_ids.push(i64::from(self.cfg.pad_id));
                    continue;
                }
                let masked;
                let row = match (grammars[b].as_mut(), bytes) {
                    (Some(g), Some(bytes)) => {
                        masked = grammar_mask(&logits[b], g, bytes, &self.cfg.eos_ids);
                        if masked.iter().all(|l| *l == f32::NEG_INFINITY) {
                            // Nothing may follow (cannot happen with byte-level tokens).
                            running[b] = false;
                            step_ids.push(i64::from(self.cfg.pad_id));
                            continue;
                        }
                        &masked[..]
                    }
                    _ => &logits[b][..],
                };
                let (token, logprob) = choose(row, params, &mut rngs[b]);
                if let (Some(g), Some(bytes)) = (grammars[b].as_mut(), bytes)
                    && let Some(t) = bytes.get(token as usize)
                {
                    g.advance(t);
                }
                if self.cfg.eos_ids.contains(&token) {
                    running[b] = false;
                    out[b].finish = Finish::Eos;
                    step_ids.push(i64::from(self.cfg.pad_id));
                    continue;
                }
                out[b].tokens.push(token);
                out[b].logprobs.push(logprob);
                if !params.stop.is_empty() {
                    let text = self
                        .tokenizer
                        .decode(&out[b].tokens, true)
                        .unwrap_or_default();
                    if params.stop.iter().any(|s| text.contains(s.as_str())) {
                        running[b] = false;
                        out[b].finish = Finish::Stop;
                    }
                }
                step_ids.push(i64::from(token));
            }
            if !running.iter().any(|r| *r) {
                break;
            }
            let e = self.embed(step_ids, batch, 1)?;
            let e = self.embeds_value(e, batch, 1, hidden)?;
            // Every row attends to the new position (finished rows are ignored anyway).
            let old = mask.len() / batch;
            let mut grown = Vec::with_capacity(batch * (old + 1));
            for b in 0..batch {
                grown.extend_from_slice(&mask[b * old..(b + 1) * old]);
                grown.push(1);
            }
            mask = grown;
            // The same next position on all three M-RoPE axes.
            let axes = if self.mrope { 3 } else { 1 };
            let positions: Vec<i64> = next_pos.repeat(axes);
            let (l, p) = self.decode(e, &mask, positions, past, batch, 1)?;
            logits = l;
            past = p;
            for p in &mut next_pos {
                *p += 1;
            }
        }
        for g in &mut out {
            let mut text = self.tokenizer.decode(&g.tokens, true).unwrap_or_default();
            if g.finish == Finish::Stop
                && let Some(cut) = params
                    .stop
                    .iter()
                    .filter_map(|s| text.find(s.as_str()))
                    .min()
            {
                text.truncate(cut);
            }
            g.text = text;
        }
        Ok(out)
    }
}

/// The logits with every token the grammar does not allow next set to minus infinity; the
/// end of text (EOS) only where the text so far is a whole action. Sampling from these is
/// sampling from the model conditioned on the grammar, and the log-probabilities reported
/// are of that distribution (the one the actions were drawn from).
fn grammar_mask(
    logits: &[f32],
    g: &mut ActionGrammar,
    bytes: &TokenBytes,
    eos: &[u32],
) -> Vec<f32> {
    let mut out = vec![f32::NEG_INFINITY; logits.len()];
    for (id, l) in logits.iter().enumerate() {
        if let Some(b) = bytes.get(id)
            && g.allows(b)
        {
            out[id] = *l;
        }
    }
    if g.complete() {
        for e in eos {
            if let Some(l) = logits.get(*e as usize) {
                out[*e as usize] = *l;
            }
        }
    }
    out
}

/// Picks the next token and its log-probability under the model (temperature 1).
fn choose(logits: &[f32], p: &GenParams, rng: &mut StdRng) -> (u32, f32) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let log_z = max + logits.iter().map(|l| (l - max).exp()).sum::<f32>().ln();
    let token = if p.temperature <= 0.0 {
        logits
            .iter()
            .enumerate()
            .fold((0, f32::NEG_INFINITY), |best, (i, l)| {
                if *l > best.1 { (i, *l) } else { best }
            })
            .0
    } else {
        let t = p.temperature;
        let mut probs: Vec<(usize, f32)> = logits
            .iter()
            .enumerate()
            .map(|(i, l)| (i, ((l - max) / t).exp()))
            .collect();
        probs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let total: f32 = probs.iter().map(|x| x.1).sum();
        let mut kept = Vec::new();
        let mut mass = 0.0;
        for (i, w) in probs {
            kept.push((i, w));
            mass += w / total;
            if mass >= p.top_p.clamp(0.0, 1.0) {
                break;
            }
        }
        let kept_total: f32 = kept.iter().map(|x| x.1).sum();
        let mut r = rng.random::<f32>() * kept_total;
        let mut pick = kept[kept.len() - 1].0;
        for (i, w) in kept {
            if r < w {
                pick = i;
                break;
            }
            r -= w;
        }
        pick
    };
    (token as u32, logits[token] - log_z)
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
#[cfg(feature = "cuda")]
fn cuda_or_cpu(env: &ort::environment::Environment) -> (String, Option<String>) {
    use ort::ep::ExecutionProvider;
    let cpu = |why: String| ("CPU".to_string(), Some(why));
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

#[cfg(not(feature = "cuda"))]
fn cuda_or_cpu(_env: &ort::environment::Environment) -> (String, Option<String>) {
    (
        "CPU".into(),
        Some("this build of surfgym has no `cuda` feature (rebuild with --features cuda)".into()),
    )
}
