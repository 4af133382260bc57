//! The train-mode decoder: the Llama graph of `scripts/models/llama_onnx.py`, written with
//! candle operations that all have gradients, over the very tensors of the ONNX file.
//!
//! Parameters keep their ONNX names and layout (`*.weight_t` as `[in, out]`, the attention
//! scale already folded into `q_proj`), so a trained tensor goes back into ONNX Runtime
//! under the name it came from, with no conversion. candle's fused `rms_norm`,
//! `softmax_last_dim` and rope kernels have no backward pass; RMSNorm and the rotation are
//! therefore spelled out here from differentiable primitives, in the same order of
//! operations as the ONNX graph (which keeps fp32 parity within rounding), and attention's
//! masked softmax is a fused op of this crate with its own backward pass (`ops`).

use std::collections::BTreeMap;
use std::path::Path;

use candle_core::{D, DType, Device, Tensor, Var};

use crate::TrainError;
use inference::onnx_file::{DataType, Initializer, read_initializers};

pub(crate) mod prefix;

/// The decoder's shape, from the model's `config.json` (its `text_config` for a VLM).
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderConfig {
    /// Hidden width.
    pub hidden: usize,
    /// Attention heads.
    pub heads: usize,
    /// Key/value heads (grouped-query attention).
    pub kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// Decoder layers.
    pub layers: usize,
    /// RMSNorm epsilon.
    pub eps: f64,
}

impl DecoderConfig {
    /// Reads the text model's settings from `dir/config.json`.
    pub fn from_model_dir(dir: &Path) -> Result<Self, TrainError> {
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path).map_err(|e| TrainError::io(&path, e))?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| TrainError::Model(format!("{}: {e}", path.display())))?;
        let cfg = json.get("text_config").unwrap_or(&json);
        let num = |k: &str| -> Result<usize, TrainError> {
            cfg.get(k)
                .and_then(serde_json::Value::as_u64)
                .map(|v| v as usize)
                .ok_or_else(|| TrainError::Model(format!("{}: no integer `{k}`", path.display())))
        };
        let hidden = num("hidden_size")?;
        let heads = num("num_attention_heads")?;
        Ok(Self {
            hidden,
            heads,
            kv_heads: num("num_key_value_heads").unwrap_or(heads),
            head_dim: num("head_dim").unwrap_or(hidden / heads.max(1)),
            layers: num("num_hidden_layers")?,
            eps: cfg
                .get("rms_norm_eps")
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(1e-6),
        })
    }
}

/// Positions of a batch: `[batch, seq]`, or `[3, batch, seq]` for Qwen2-VL's M-RoPE.
#[derive(Debug, Clone)]
pub struct Positions {
    /// Row-major values.
    pub values: Vec<i64>,
    /// Three axes (M-RoPE).
    pub mrope: bool,
}

/// The decoder with its trainable parameters.
pub struct Decoder {
    cfg: DecoderConfig,
    device: Device,
    /// Trainable tensors by ONNX initializer name (every `model.*` and `lm_head.*` weight).
    params: BTreeMap<String, Var>,
    inv_freq: Tensor,
    /// `[3, 1, 1, head_dim]` one-hot axis pick for M-RoPE.
    mrope_pick: Option<Tensor>,
    vocab: usize,
    /// Dtype of the matrix products (f32, or bf16 for mixed precision: see `device`).
    compute: DType,
    /// The lowest layer that learns: the residual stream is cut from the graph below it,
    /// so no backward pass runs there (0: every layer learns).
    frozen_below: usize,
    /// Parameters set over the base's values (a version's tensors): a version published
    /// from here stores them, whether or not they learn now.
    overridden: std::collections::BTreeSet<String>,
    /// A LoRA adapter: then only it learns, and every parameter above is frozen.
    lora: Option<crate::lora::Adapter>,
}

/// One layer's parameters: the norms' weights, the projections in the compute dtype.
pub(crate) struct LayerWeights {
    ln1: Tensor,
    ln2: Tensor,
    wq: Proj,
    wk: Proj,
    wv: Proj,
    wo: Proj,
    wg: Proj,
    wu: Proj,
    wd: Proj,
}

/// A projection: its matrix, and a LoRA adapter's `A`, `B` and scale beside it.
pub(crate) struct Proj {
    w: Tensor,
    lora: Option<(Tensor, Tensor, f64)>,
}

impl Proj {
    fn apply(&self, x: &Tensor) -> Result<Tensor, TrainError> {
        let y = linear(x, &self.w)?;
        match &self.lora {
            None => Ok(y),
            Some((a, b, scale)) => Ok((y + (linear(&linear(x, a)?, b)? * *scale)?)?),
        }
    }
}

fn layer_names(i: usize) -> [String; 9] {
    let p = format!("model.layers.{i}");
    [
        format!("{p}.input_layernorm.weight"),
        format!("{p}.self_attn.q_proj.weight_t"),
        format!("{p}.self_attn.k_proj.weight_t"),
        format!("{p}.self_attn.v_proj.weight_t"),
        format!("{p}.self_attn.o_proj.weight_t"),
        format!("{p}.post_attention_layernorm.weight"),
        format!("{p}.mlp.gate_proj.weight_t"),
        format!("{p}.mlp.up_proj.weight_t"),
        format!("{p}.mlp.down_proj.weight_t"),
    ]
}

impl Decoder {
    /// Loads `dir/onnx/decoder_model_merged.onnx` (and `dir/config.json`).
    pub fn load(dir: &Path, device: &Device) -> Result<Self, TrainError> {
        let cfg = DecoderConfig::from_model_dir(dir)?;
        let path = dir.join("onnx").join("decoder_model_merged.onnx");
        let inits = read_initializers(&path)?;
        Self::from_initializers(cfg, &inits, device, &path)
    }

    /// Builds the decoder from already-read initializers.
    pub fn from_initializers(
        cfg: DecoderConfig,
        inits: &[Initializer],
        device: &Device,
        path: &Path,
    ) -> Result<Self, TrainError> {
        let by_name: BTreeMap<&str, &Initializer> =
            inits.iter().map(|i| (i.name.as_str(), i)).collect();
        let tensor = |name: &str| -> Result<Tensor, TrainError> {
            let init = by_name.get(name).ok_or_else(|| {
                TrainError::Model(format!(
                    "{}: no initializer `{name}`: the trainer reads decoders exported by \
                     scripts/models/llama_onnx.py (tiny models, SmolLM2); an onnx-community \
                     export is inference-only",
                    path.display()
                ))
            })?;
            if init.dtype != DataType::F32 {
                return Err(TrainError::Model(format!(
                    "{}: initializer `{name}` is {}, the trainer reads f32 exports",
                    path.display(),
                    init.dtype
                )));
            }
            let data = init.to_f32().unwrap_or_default();
            Ok(Tensor::from_vec(data, init.dims.clone(), device)?)
        };
        let mut params = BTreeMap::new();
        let h = cfg.hidden;
        let (q_out, kv_out) = (cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim);
        for i in 0..cfg.layers {
            for name in layer_names(i) {
                let t = tensor(&name)?;
                params.insert(name, Var::from_tensor(&t)?);
            }
            let check = |name: String, want: &[usize]| -> Result<(), TrainError> {
                let got = params[&name].dims();
                if got != want {
                    return Err(TrainError::Model(format!(
                        "{}: `{name}` has shape {got:?}, config.json implies {want:?}",
                        path.display()
                    )));
                }
                Ok(())
            };
            let p = format!("model.layers.{i}");
            check(format!("{p}.self_attn.q_proj.weight_t"), &[h, q_out])?;
            check(format!("{p}.self_attn.k_proj.weight_t"), &[h, kv_out])?;
            check(format!("{p}.self_attn.v_proj.weight_t"), &[h, kv_out])?;
            check(format!("{p}.self_attn.o_proj.weight_t"), &[q_out, h])?;
        }
        for name in ["model.norm.weight", "lm_head.weight_t"] {
            let t = tensor(name)?;
            params.insert(name.to_string(), Var::from_tensor(&t)?);
        }
        let vocab = params["lm_head.weight_t"].dims()[1];
        let mrope_pick = match by_name.contains_key("rope.mrope_pick") {
            true => Some(tensor("rope.mrope_pick")?),
            false => None,
        };
        Ok(Self {
            inv_freq: tensor("rope.inv_freq")?,
            cfg,
            device: device.clone(),
            params,
            mrope_pick,
            vocab,
            compute: DType::F32,
            frozen_below: 0,
            overridden: Default::default(),
            lora: None,
        })
    }

    /// Lets only the top `n` layers (and the final norm and head) learn; `None`: all.
    /// Below them the forward pass runs as before but no gradient flows, so the backward
    /// pass stops at the lowest trainable layer.
    pub fn set_trainable_top(&mut self, n: Option<usize>) -> Result<(), TrainError> {
        let layers = self.cfg.layers;
        self.frozen_below = match n {
            None => 0,
            Some(n) if (1..=layers).contains(&n) => layers - n,
            Some(n) => {
                return Err(TrainError::Input(format!(
                    "top_layers: {n} is not between 1 and the model's {layers} layers"
                )));
            }
        };
        Ok(())
    }

    /// Whether parameter `name` learns (see [`Decoder::set_trainable_top`]).
    pub fn is_trainable(&self, name: &str) -> bool {
        match name
            .strip_prefix("model.layers.")
            .and_then(|r| r.split('.').next())
            .and_then(|i| i.parse::<usize>().ok())
        {
            Some(layer) => layer >= self.frozen_below,
            None => true,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &DecoderConfig {
        &self.cfg
    }

    /// The vocabulary (the logits' width).
    pub fn vocab(&self) -> usize {
        self.vocab
    }

    /// The device the parameters live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Sets the dtype of the matrix products: f32, or bf16 over the f32 parameters (each
    /// forward pass casts them; their gradients come back in f32 through the cast).
    pub fn set_compute_dtype(&mut self, dtype: DType) -> Result<(), TrainError> {
        if !matches!(dtype, DType::F32 | DType::BF16) {
            return Err(TrainError::Input(format!(
                "precision: the trainer computes in f32 or bf16, not {dtype:?}"
            )));
        }
        self.compute = dtype;
        Ok(())
    }

    /// The dtype of the matrix products.
    pub fn compute_dtype(&self) -> DType {
        self.compute
    }

    /// Whether `position_ids` has three axes (Qwen2-VL's M-RoPE).
    pub fn mrope(&self) -> bool {
        self.mrope_pick.is_some()
    }

    /// Trainable parameters by ONNX name.
    pub fn params(&self) -> &BTreeMap<String, Var> {
        &self.params
    }

    /// Replaces parameters by name (a published version's tensors over the base model).
    pub fn set(&mut self, name: &str, value: &Tensor) -> Result<(), TrainError> {
        let var = self
            .params
            .get(name)
            .ok_or_else(|| TrainError::Model(format!("the decoder has no parameter `{name}`")))?;
        if var.dims() != value.dims() {
            return Err(TrainError::Model(format!(
                "`{name}` has shape {:?}, the decoder's is {:?}",
                value.dims(),
                var.dims()
            )));
        }
        if value.dtype() != var.dtype() {
            return Err(TrainError::Model(format!(
                "`{name}` is {:?}, the decoder's is {:?}",
                value.dtype(),
                var.dtype()
            )));
        }
        var.set(&value.to_device(&self.device)?)?;
        self.overridden.insert(name.to_string());
        Ok(())
    }

    /// Whether a parameter may differ from the base's: it learns, or a version set it.
    /// What a published version must store; the rest it leaves to the base.
    pub fn may_differ_from_base(&self, name: &str) -> bool {
        match &self.lora {
            Some(l) => l.pair(name).is_some() || self.overridden.contains(name),
            None => self.is_trainable(name) || self.overridden.contains(name),
        }
    }

    /// What the optimiser steps: the adapter's tensors under LoRA, else the parameters
    /// that learn (see [`Decoder::set_trainable_top`]).
    pub fn trainable(&self) -> BTreeMap<String, Var> {
        match &self.lora {
            Some(l) => l.vars(),
            None => self
                .params
                .iter()
                .filter(|(n, _)| self.is_trainable(n))
                .map(|(n, v)| (n.clone(), v.clone()))
                .collect(),
        }
    }

    /// The `[in, out]` shapes of the matrices `cfg` adapts, in the layers that learn.
    pub fn adapter_shapes(
        &self,
        cfg: &crate::lora::LoraConfig,
    ) -> BTreeMap<String, (usize, usize)> {
        (self.frozen_below..self.cfg.layers)
            .flat_map(|i| cfg.targets.iter().map(move |p| p.initializer(i)))
            .filter_map(|name| {
                let d = self.params.get(&name)?.dims().to_vec();
                Some((name, (d[0], d[1])))
            })
            .collect()
    }

    /// Puts a LoRA adapter on (None takes it off): then only it learns.
    pub fn set_adapter(&mut self, adapter: Option<crate::lora::Adapter>) {
        self.lora = adapter;
    }

    /// The LoRA adapter, when one is on.
    pub fn adapter(&self) -> Option<&crate::lora::Adapter> {
        self.lora.as_ref()
    }

    /// Logits `[batch, seq, vocab]` for input embeddings `[batch, seq, hidden]`, an attention
    /// mask `[batch, seq]` (1 = real token) and positions.
    pub fn forward(
        &self,
        embeds: &Tensor,
        mask: &[u8],
        positions: &Positions,
    ) -> Result<Tensor, TrainError> {
        self.head(&self.hidden(embeds, mask, positions)?)
    }

    /// The language-model head over final hidden states `[.., hidden]` (a trainer applies it
    /// only to the rows it scores: the vocabulary is the widest tensor of a step).
    pub fn head(&self, hidden: &Tensor) -> Result<Tensor, TrainError> {
        let w = self.weight(&self.base(&self.params["lm_head.weight_t"]))?;
        Ok(linear(&hidden.to_dtype(self.compute)?, &w)?.to_dtype(DType::F32)?)
    }

    /// A parameter in the compute dtype.
    fn weight(&self, w: &Tensor) -> Result<Tensor, TrainError> {
        Ok(w.to_dtype(self.compute)?)
    }

    /// The final normalised hidden states `[batch, seq, hidden]`.
    pub fn hidden(
        &self,
        embeds: &Tensor,
        mask: &[u8],
        positions: &Positions,
    ) -> Result<Tensor, TrainError> {
        let (b, s, h) = embeds.dims3()?;
        let c = &self.cfg;
        let d = c.head_dim;
        if mask.len() != b * s {
            return Err(TrainError::Input(format!(
                "attention mask has {} values for a {b}x{s} batch",
                mask.len()
            )));
        }
        let (cos, sin) = self.rope(b, s, positions)?; // [B,1,S,D]
        let bias = self.attention_bias(b, s, mask)?; // [B,1,S,S]
        let nh = c.heads;

        // The residual stream stays f32 (bf16 would round every layer's sum); the products
        // run in the compute dtype.
        let mut x = embeds.to_dtype(DType::F32)?;
        for i in 0..c.layers {
            if i == self.frozen_below && i > 0 {
                // Nothing below learns: no gradient need flow there.
                x = x.detach();
            }
            let w = self.layer(i)?;
            let (q, k, v) = self.qkv(&x, &w, (&cos, &sin))?;
            let scores = q.contiguous()?.matmul(&k.transpose(2, 3)?.contiguous()?)?;
            // Softmax in f32: the bias's lowest-f32 mask would round to -inf in bf16.
            let probs = crate::ops::masked_softmax(&scores.to_dtype(DType::F32)?, &bias)?
                .to_dtype(self.compute)?;
            let attn = probs
                .matmul(&v)?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((b, s, nh * d))?;
            x = self.finish_layer(&x, &attn, &w)?;
        }
        let x = self.final_norm(&x)?;
        debug_assert_eq!(x.dims(), &[b, s, h]);
        Ok(x)
    }

    /// Layer `i`'s weights, the matrices in the compute dtype.
    fn layer(&self, i: usize) -> Result<LayerWeights, TrainError> {
        let names = layer_names(i);
        let proj = |k: usize| -> Result<Proj, TrainError> {
            let w = self.weight(&self.base(&self.params[&names[k]]))?;
            let lora = match self
                .lora
                .as_ref()
                .and_then(|l| Some((l, l.pair(&names[k])?)))
            {
                None => None,
                Some((l, (a, b))) => Some((
                    a.as_tensor().to_dtype(self.compute)?,
                    b.as_tensor().to_dtype(self.compute)?,
                    l.scale(),
                )),
            };
            Ok(Proj { w, lora })
        };
        Ok(LayerWeights {
            ln1: self.base(&self.params[&names[0]]),
            wq: proj(1)?,
            wk: proj(2)?,
            wv: proj(3)?,
            wo: proj(4)?,
            ln2: self.base(&self.params[&names[5]]),
            wg: proj(6)?,
            wu: proj(7)?,
            wd: proj(8)?,
        })
    }

    /// A parameter as the forward pass takes it: cut from the graph under LoRA (the base
    /// is frozen, so no gradient is computed for it).
    fn base(&self, v: &Var) -> Tensor {
        match self.lora {
            Some(_) => v.as_tensor().detach(),
            None => v.as_tensor().clone(),
        }
    }

    /// Queries, keys and values `[B, heads, S, D]` of the residual stream `x: [B, S, hidden]`,
    /// rotated by `rope` (cos and sin `[B, 1, S, D]`), each key/value head repeated for its
    /// query heads.
    pub(crate) fn qkv(
        &self,
        x: &Tensor,
        w: &LayerWeights,
        (cos, sin): (&Tensor, &Tensor),
    ) -> Result<(Tensor, Tensor, Tensor), TrainError> {
        let (b, s, _) = x.dims3()?;
        let c = &self.cfg;
        let (d, kv, g) = (c.head_dim, c.kv_heads, c.heads / c.kv_heads.max(1));
        let y = self.rms_norm(x, &w.ln1)?.to_dtype(self.compute)?;
        // Heads h = kv * G + g, as the export's [B, S, KV, G, D] reshape numbers them;
        // each key/value head is repeated for its G query heads (transformers' repeat_kv).
        let q =
            w.wq.apply(&y)?
                .reshape((b, s, c.heads, d))?
                .transpose(1, 2)?;
        let k = w.wk.apply(&y)?.reshape((b, s, kv, d))?.transpose(1, 2)?;
        let v = w.wv.apply(&y)?.reshape((b, s, kv, d))?.transpose(1, 2)?;
        let q = (q.broadcast_mul(cos)? + rotate_half(&q, d)?.broadcast_mul(sin)?)?;
        let k = (k.broadcast_mul(cos)? + rotate_half(&k, d)?.broadcast_mul(sin)?)?;
        Ok((q, repeat_kv(&k, g)?, repeat_kv(&v, g)?))
    }

    /// The rest of a layer after attention: the output projection into the residual stream,
    /// then the MLP.
    pub(crate) fn finish_layer(
        &self,
        x: &Tensor,
        attn: &Tensor,
        w: &LayerWeights,
    ) -> Result<Tensor, TrainError> {
        let x = (x + w.wo.apply(attn)?.to_dtype(DType::F32)?)?;
        let y = self.rms_norm(&x, &w.ln2)?.to_dtype(self.compute)?;
        let gate = w.wg.apply(&y)?;
        let act = (&gate * candle_nn::ops::sigmoid(&gate)?)?;
        let up = w.wu.apply(&y)?;
        Ok((&x + w.wd.apply(&(act * up)?)?.to_dtype(DType::F32)?)?)
    }

    /// The final norm over the residual stream.
    pub(crate) fn final_norm(&self, x: &Tensor) -> Result<Tensor, TrainError> {
        self.rms_norm(x, &self.base(&self.params["model.norm.weight"]))
    }

    /// cos and sin `[B, 1, S, D]` in the compute dtype, for `positions` of a `b` x `s` batch.
    pub(crate) fn rope(
        &self,
        b: usize,
        s: usize,
        positions: &Positions,
    ) -> Result<(Tensor, Tensor), TrainError> {
        let (cos, sin) = self.rope_tables(b, s, positions)?;
        Ok((
            cos.unsqueeze(1)?.to_dtype(self.compute)?,
            sin.unsqueeze(1)?.to_dtype(self.compute)?,
        ))
    }

    fn rms_norm(&self, x: &Tensor, w: &Tensor) -> Result<Tensor, TrainError> {
        let var = x.sqr()?.mean_keepdim(D::Minus1)?;
        let std = (var + self.cfg.eps)?.sqrt()?;
        Ok(x.broadcast_div(&std)?.broadcast_mul(w)?)
    }

    /// cos and sin `[B, S, D]` of the rotary angles, as the ONNX graph computes them.
    fn rope_tables(
        &self,
        b: usize,
        s: usize,
        positions: &Positions,
    ) -> Result<(Tensor, Tensor), TrainError> {
        let axes = if self.mrope() { 3 } else { 1 };
        if positions.mrope != self.mrope() || positions.values.len() != axes * b * s {
            return Err(TrainError::Input(format!(
                "position_ids: {} values ({} axes) for a {b}x{s} batch of a decoder with {axes} axes",
                positions.values.len(),
                if positions.mrope { 3 } else { 1 },
            )));
        }
        let pos: Vec<f32> = positions.values.iter().map(|p| *p as f32).collect();
        let pos = Tensor::from_vec(pos, (axes, b, s, 1), &self.device)?;
        let freqs = pos.broadcast_mul(&self.inv_freq)?;
        let emb = Tensor::cat(&[&freqs, &freqs], D::Minus1)?; // [A,B,S,D]
        let (cos, sin) = (emb.cos()?, emb.sin()?);
        Ok(match &self.mrope_pick {
            Some(pick) => (
                cos.broadcast_mul(pick)?.sum(0)?,
                sin.broadcast_mul(pick)?.sum(0)?,
            ),
            None => (cos.squeeze(0)?, sin.squeeze(0)?),
        })
    }

    /// `[B,1,S,S]`: 0 where query i may see key j (j <= i and key j is not padding),
    /// else the lowest f32 (as the ONNX graph: a softmax over it gives exactly 0).
    fn attention_bias(&self, b: usize, s: usize, mask: &[u8]) -> Result<Tensor, TrainError> {
        let mut bias = vec![0f32; b * s * s];
        for r in 0..b {
            for i in 0..s {
                for j in 0..s {
                    if j > i || mask[r * s + j] == 0 {
                        bias[(r * s + i) * s + j] = f32::MIN;
                    }
                }
            }
        }
        Ok(Tensor::from_vec(bias, (b, 1, s, s), &self.device)?)
    }
}

/// `x @ w` for `x: [.., in]` and an ONNX-layout `w: [in, out]`, as one 2-D product.
fn linear(x: &Tensor, w: &Tensor) -> Result<Tensor, TrainError> {
    let dims = x.dims().to_vec();
    let (inner, out) = w.dims2()?;
    let rows = x.elem_count() / inner;
    let y = x.contiguous()?.reshape((rows, inner))?.matmul(w)?;
    let mut shape = dims[..dims.len() - 1].to_vec();
    shape.push(out);
    Ok(y.reshape(shape)?)
}

/// `[B, KV, S, D]` to `[B, KV * G, S, D]`, each key/value head repeated for its G query heads.
fn repeat_kv(x: &Tensor, g: usize) -> Result<Tensor, TrainError> {
    if g == 1 {
        return Ok(x.contiguous()?);
    }
    let (b, kv, s, d) = x.dims4()?;
    Ok(x.unsqueeze(2)?
        .broadcast_as((b, kv, g, s, d))?
        .contiguous()?
        .reshape((b, kv * g, s, d))?)
}

fn rotate_half(x: &Tensor, d: usize) -> Result<Tensor, TrainError> {
    let half = d / 2;
    let x1 = x.narrow(D::Minus1, 0, half)?;
    let x2 = x.narrow(D::Minus1, half, half)?;
    Ok(Tensor::cat(&[&x2.neg()?, &x1], D::Minus1)?)
}

/// A softmax over the last axis built from ops that have gradients.
pub(crate) fn softmax(x: &Tensor) -> Result<Tensor, TrainError> {
    let max = x.max_keepdim(D::Minus1)?.detach();
    let e = x.broadcast_sub(&max)?.exp()?;
    Ok(e.broadcast_div(&e.sum_keepdim(D::Minus1)?)?)
}

/// `log_softmax` over the last axis, differentiable.
pub(crate) fn log_softmax(x: &Tensor) -> Result<Tensor, TrainError> {
    let max = x.max_keepdim(D::Minus1)?.detach();
    let shifted = x.broadcast_sub(&max)?;
    let lse = shifted.exp()?.sum_keepdim(D::Minus1)?.log()?;
    Ok(shifted.broadcast_sub(&lse)?)
}
