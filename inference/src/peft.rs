//! LoRA adapters in PEFT's directory layout, the one vLLM, SGLang and transformers load
//! (`adapter_config.json`, `adapter_model.safetensors`): written from a LoRA version's
//! adapter, and read back into the initializer overrides ONNX Runtime runs (`serve-policy
//! --load-root` loads such a directory with `/v1/load_lora_adapter`).
//!
//! The layouts differ in two ways, both undone here:
//! - ONNX's matrices are `[in, out]` (`*.weight_t`), PyTorch's `[out, in]`: PEFT's
//!   `lora_A.weight` is `[r, in]` (our `A` transposed) and `lora_B.weight` `[out, r]`;
//! - the export folds attention's `1/√head_dim` into `q_proj`, so a query update is that
//!   much smaller in ONNX's units: `q_proj`'s `lora_B` is ours divided by it.
//!
//! A directory read is hostile input: every tensor must name a projection of the base's
//! decoder, with the shapes the base implies, in f32, finite, or it is refused by name.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::onnx_file::read_initializers;
use crate::version::{AdapterMeta, DECODER, Override};

/// The adapter's settings file.
pub const CONFIG: &str = "adapter_config.json";
/// The adapter's tensors.
pub const WEIGHTS: &str = "adapter_model.safetensors";

/// Why a PEFT directory cannot be written or used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{path}: {why}")]
pub struct PeftError {
    /// The file at fault.
    pub path: PathBuf,
    /// What is wrong, naming the tensor or field.
    pub why: String,
}

fn fail(path: &Path, why: impl Into<String>) -> PeftError {
    PeftError {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// An adapter in the ONNX layout: per adapted matrix, `A` (`[in, r]`) and `B` (`[r, out]`)
/// row-major.
pub struct LoraTensors {
    /// Rank, alpha, targets.
    pub meta: AdapterMeta,
    /// `A` and `B` by the ONNX name of the matrix they adapt.
    pub pairs: BTreeMap<String, (Vec<f32>, Vec<f32>)>,
}

/// PEFT's module path of an ONNX matrix name (`model.layers.3.mlp.up_proj.weight_t` ->
/// `base_model.model.model.layers.3.mlp.up_proj`).
fn module_of(onnx: &str) -> Option<String> {
    let stem = onnx.strip_suffix(".weight_t")?;
    stem.starts_with("model.layers.")
        .then(|| format!("base_model.model.{stem}"))
}

/// The inverse of [`module_of`], for a tensor name with its `.lora_A.weight` /
/// `.lora_B.weight` suffix: (ONNX name, is `A`).
fn onnx_of(tensor: &str) -> Option<(String, bool)> {
    let (module, is_a) = match tensor.strip_suffix(".lora_A.weight") {
        Some(m) => (m, true),
        None => (tensor.strip_suffix(".lora_B.weight")?, false),
    };
    let stem = module.strip_prefix("base_model.model.")?;
    Some((format!("{stem}.weight_t"), is_a))
}

/// The factor the export folded into `name` (`1/√head_dim` for `q_proj`, else 1).
fn folded(name: &str, head_dim: usize) -> f32 {
    match name.ends_with(".self_attn.q_proj.weight_t") {
        true => 1.0 / (head_dim as f32).sqrt(),
        false => 1.0,
    }
}

/// `head_dim` from the model's `config.json` (its `text_config` for a VLM).
fn head_dim(model: &Path) -> Result<usize, PeftError> {
    let path = model.join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| fail(&path, e.to_string()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| fail(&path, e.to_string()))?;
    let c = v.get("text_config").unwrap_or(&v);
    let num = |k: &str| {
        c.get(k)
            .and_then(serde_json::Value::as_u64)
            .map(|n| n as usize)
    };
    num("head_dim")
        .or_else(|| Some(num("hidden_size")? / num("num_attention_heads")?.max(1)))
        .ok_or_else(|| {
            fail(
                &path,
                "no head_dim (nor hidden_size and num_attention_heads)",
            )
        })
}

/// Writes `adapter` as a PEFT directory at `out` over the base model at `base` (its
/// `config.json` gives the folded scale; its path is `base_model_name_or_path`).
pub fn export(adapter: &LoraTensors, base: &Path, out: &Path) -> Result<(), PeftError> {
    let d = head_dim(base)?;
    let r = adapter.meta.rank;
    std::fs::create_dir_all(out).map_err(|e| fail(out, e.to_string()))?;
    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    let mut modules = std::collections::BTreeSet::new();
    let mut layers = std::collections::BTreeSet::new();
    for (name, (a, b)) in &adapter.pairs {
        let module = module_of(name)
            .ok_or_else(|| fail(out, format!("`{name}` is no layer's projection")))?;
        let (inner, outer) = (a.len() / r, b.len() / r);
        // lora_A = Aᵀ: [r, in]; lora_B = Bᵀ / folded: [out, r].
        let mut la = vec![0f32; r * inner];
        for i in 0..inner {
            for k in 0..r {
                la[k * inner + i] = a[i * r + k];
            }
        }
        let f = folded(name, d);
        let mut lb = vec![0f32; outer * r];
        for k in 0..r {
            for o in 0..outer {
                lb[o * r + k] = b[k * outer + o] / f;
            }
        }
        let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        tensors.push((
            format!("{module}.lora_A.weight"),
            vec![r, inner],
            bytes(&la),
        ));
        tensors.push((
            format!("{module}.lora_B.weight"),
            vec![outer, r],
            bytes(&lb),
        ));
        modules.insert(module.rsplit('.').next().unwrap_or_default().to_string());
        if let Some(i) = name
            .strip_prefix("model.layers.")
            .and_then(|rest| rest.split('.').next())
            .and_then(|i| i.parse::<usize>().ok())
        {
            layers.insert(i);
        }
    }
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .map(|(n, shape, data)| {
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), data)
                .map(|v| (n.clone(), v))
                .map_err(|e| fail(out, format!("{n}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let weights = out.join(WEIGHTS);
    safetensors::serialize_to_file(views, None, &weights)
        .map_err(|e| fail(&weights, e.to_string()))?;
    let config = json!({
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": r,
        "lora_alpha": adapter.meta.alpha,
        "lora_dropout": 0.0,
        "bias": "none",
        "fan_in_fan_out": false,
        "use_rslora": false,
        "use_dora": false,
        "inference_mode": true,
        "init_lora_weights": true,
        "target_modules": modules,
        "layers_to_transform": layers,
        "modules_to_save": null,
        "base_model_name_or_path": base.display().to_string(),
    });
    let path = out.join(CONFIG);
    std::fs::write(&path, serde_json::to_string_pretty(&config).expect("json"))
        .map_err(|e| fail(&path, e.to_string()))
}

/// The settings of a PEFT LoRA directory that change what it computes.
struct Settings {
    rank: usize,
    scale: f32,
}

fn settings(dir: &Path) -> Result<Settings, PeftError> {
    let path = dir.join(CONFIG);
    let text = std::fs::read_to_string(&path).map_err(|e| fail(&path, e.to_string()))?;
    let c: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| fail(&path, e.to_string()))?;
    if c["peft_type"] != "LORA" {
        return Err(fail(
            &path,
            format!("peft_type: only LORA is read, not {}", c["peft_type"]),
        ));
    }
    let rank = c["r"]
        .as_u64()
        .filter(|r| (1..=1024).contains(r))
        .ok_or_else(|| fail(&path, "r: must be a rank between 1 and 1024"))?
        as usize;
    let alpha = c["lora_alpha"]
        .as_f64()
        .filter(|a| a.is_finite() && *a > 0.0)
        .ok_or_else(|| fail(&path, "lora_alpha: must be a positive number"))?
        as f32;
    for (field, ok) in [
        (
            "fan_in_fan_out",
            !c["fan_in_fan_out"].as_bool().unwrap_or(false),
        ),
        ("use_dora", !c["use_dora"].as_bool().unwrap_or(false)),
        ("bias", matches!(c["bias"].as_str(), None | Some("none"))),
        (
            "modules_to_save",
            c["modules_to_save"].is_null()
                || c["modules_to_save"].as_array().is_some_and(Vec::is_empty),
        ),
    ] {
        if !ok {
            return Err(fail(
                &path,
                format!("{field}: {} is not supported", c[field]),
            ));
        }
    }
    let scale = match c["use_rslora"].as_bool().unwrap_or(false) {
        true => alpha / (rank as f32).sqrt(),
        false => alpha / rank as f32,
    };
    Ok(Settings { rank, scale })
}

/// The base decoder's matrices at `base` with the PEFT adapter at `peft` merged in: the
/// overrides ONNX Runtime puts over the base (`Model::load_peft`).
pub fn merged_overrides(base: &Path, peft: &Path) -> Result<Vec<Override>, PeftError> {
    let s = settings(peft)?;
    let d = head_dim(base)?;
    let weights = peft.join(WEIGHTS);
    let bytes = std::fs::read(&weights).map_err(|e| fail(&weights, e.to_string()))?;
    let file = safetensors::SafeTensors::deserialize(&bytes)
        .map_err(|e| fail(&weights, format!("not a readable safetensors file ({e})")))?;
    let decoder = base.join(DECODER);
    let inits = read_initializers(&decoder).map_err(|e| fail(&decoder, e.to_string()))?;
    let by_name: HashMap<&str, _> = inits.iter().map(|i| (i.name.as_str(), i)).collect();
    let mut pairs: BTreeMap<String, [Option<Vec<f32>>; 2]> = BTreeMap::new();
    for (tensor, view) in file.tensors() {
        let bad = |why: String| fail(&weights, format!("tensor `{tensor}`: {why}"));
        let (name, is_a) = onnx_of(&tensor)
            .ok_or_else(|| bad("not a LoRA A or B of a decoder layer's projection".into()))?;
        let init = by_name
            .get(name.as_str())
            .ok_or_else(|| bad(format!("the base decoder has no `{name}`")))?;
        let (inner, outer) = (init.dims[0], init.dims[1]);
        let want = if is_a {
            vec![s.rank, inner]
        } else {
            vec![outer, s.rank]
        };
        if view.dtype() != safetensors::Dtype::F32 || view.shape() != want.as_slice() {
            return Err(bad(format!(
                "is {:?} {:?}, the base implies F32 {want:?}",
                view.dtype(),
                view.shape()
            )));
        }
        let data: Vec<f32> = view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if data.iter().any(|x| !x.is_finite()) {
            return Err(bad("holds a NaN or infinite value".into()));
        }
        pairs.entry(name).or_default()[usize::from(!is_a)] = Some(data);
    }
    let mut out = Vec::with_capacity(pairs.len());
    for (name, [a, b]) in pairs {
        let (Some(a), Some(b)) = (a, b) else {
            return Err(fail(
                &weights,
                format!("`{name}` has only one of lora_A and lora_B"),
            ));
        };
        let init = by_name[name.as_str()];
        let (inner, outer) = (init.dims[0], init.dims[1]);
        let mut w = init
            .to_f32()
            .ok_or_else(|| fail(&decoder, format!("`{name}` is not f32")))?;
        // W_t[i][o] += scale · folded · Σ_k lora_B[o][k] · lora_A[k][i].
        let f = s.scale * folded(&name, d);
        for i in 0..inner {
            for o in 0..outer {
                let delta: f32 = (0..s.rank)
                    .map(|k| b[o * s.rank + k] * a[k * inner + i])
                    .sum();
                w[i * outer + o] += f * delta;
            }
        }
        out.push(Override {
            name,
            dims: init.dims.clone(),
            data: w,
        });
    }
    if out.is_empty() {
        return Err(fail(&weights, "holds no LoRA tensor"));
    }
    Ok(out)
}

/// A LoRA version's adapter (`train.json`'s `adapter`, `adapter.safetensors`).
pub fn version_adapter(version: &Path) -> Result<LoraTensors, PeftError> {
    let lineage = crate::version::read_lineage(version)
        .map_err(|e| fail(version, e.to_string()))?
        .ok_or_else(|| fail(version, "not a policy version (no train.json)"))?;
    let meta = lineage.adapter.ok_or_else(|| {
        fail(
            version,
            "not a LoRA version: it holds full-parameter updates",
        )
    })?;
    let path = version.join(crate::version::ADAPTER);
    let bytes = std::fs::read(&path).map_err(|e| fail(&path, e.to_string()))?;
    let file = safetensors::SafeTensors::deserialize(&bytes)
        .map_err(|e| fail(&path, format!("not a readable safetensors file ({e})")))?;
    let read = |key: String| -> Result<Vec<f32>, PeftError> {
        let t = file
            .tensor(&key)
            .map_err(|_| fail(&path, format!("no tensor `{key}`")))?;
        if t.dtype() != safetensors::Dtype::F32 || t.shape().len() != 2 {
            return Err(fail(
                &path,
                format!("tensor `{key}` is not a 2-D f32 matrix"),
            ));
        }
        Ok(t.data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    };
    let mut pairs = BTreeMap::new();
    for name in &meta.targets {
        let a = read(format!("{name}.lora_a"))?;
        let b = read(format!("{name}.lora_b"))?;
        pairs.insert(name.clone(), (a, b));
    }
    Ok(LoraTensors { meta, pairs })
}
