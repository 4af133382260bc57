//! Policy versions as ONNX Runtime loads them: a model directory whose `train.json` names
//! the base export it was trained from and whose `weights.safetensors` holds the trained
//! tensors under their ONNX initializer names. [`Model::load`](crate::Model::load) puts
//! those tensors over the base decoder's same-named initializers when it creates the
//! session, so the graph is never rewritten. The trainer (`training`) writes versions;
//! this module reads and checks them, refusing anything that does not fit the base with
//! an error that names the tensor and the file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::onnx_file::{DataType, read_initializers};

/// `train.json`'s format tag.
pub const FORMAT: &str = "surfgym-policy-version/1";
/// The trained tensors' file.
pub const WEIGHTS: &str = "weights.safetensors";
/// The lineage file.
pub const LINEAGE: &str = "train.json";
/// The optimiser state file.
pub const OPTIMIZER: &str = "optimizer.safetensors";
/// A LoRA version's adapter (its `weights.safetensors` holds the merged tensors that ONNX
/// Runtime runs; the trainer goes on from the adapter).
pub const ADAPTER: &str = "adapter.safetensors";
/// The decoder, relative to a model directory.
pub const DECODER: &str = "onnx/decoder_model_merged.onnx";

/// Where a version came from and how it was made (`train.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lineage {
    /// [`FORMAT`].
    pub format: String,
    /// The original model directory (absolute).
    pub base: PathBuf,
    /// sha256 of the base decoder file: a version over other weights is refused.
    pub base_decoder_sha256: String,
    /// The version this one was trained from (None: from the base).
    pub parent: Option<PathBuf>,
    /// When it was published (RFC 3339).
    pub created: String,
    /// Optimiser steps taken since the base, this version's included.
    pub optimizer_steps: usize,
    /// Everything else the trainer records: objective, data, settings, losses.
    pub training: serde_json::Value,
    /// The tensors the weights file holds, when not every trainable tensor (a version
    /// trained on its top layers from the base stores only what moved): the others are
    /// the base's. None: every trainable tensor is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensors: Option<Vec<String>>,
    /// A LoRA version: its adapter's shape (the adapter is in [`ADAPTER`], over the base's
    /// own weights; `tensors` are the base's plus the adapter, merged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<AdapterMeta>,
}

/// A LoRA adapter's shape: `W + (alpha / rank) · A·B` on each target matrix, `A` of
/// `[in, rank]` and `B` of `[rank, out]` in the ONNX layout (`*.weight_t`, `[in, out]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdapterMeta {
    /// The rank r.
    pub rank: usize,
    /// The scale's numerator (PEFT's `lora_alpha`).
    pub alpha: f32,
    /// The adapted matrices' ONNX initializer names.
    pub targets: Vec<String>,
}

/// Why a version cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("policy version {dir}: {why}")]
pub struct VersionError {
    /// The version directory.
    pub dir: PathBuf,
    /// What is wrong, naming the tensor and file where one is at fault.
    pub why: String,
}

/// Whether a decoder initializer is a weight a version may replace (not a rope table or a
/// graph constant).
pub fn is_trainable(name: &str) -> bool {
    name.starts_with("model.") || name.starts_with("lm_head.")
}

/// sha256 of a file, hex.
pub fn file_sha256(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(format!("{:x}", h.finalize()))
}

/// The lineage of a version directory, or None for a plain model directory.
pub fn read_lineage(dir: &Path) -> Result<Option<Lineage>, VersionError> {
    let err = |why: String| VersionError {
        dir: dir.to_path_buf(),
        why,
    };
    let path = dir.join(LINEAGE);
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| err(format!("{LINEAGE}: {e}")))?;
    let l: Lineage = serde_json::from_str(&text).map_err(|e| err(format!("{LINEAGE}: {e}")))?;
    if l.format != FORMAT {
        return Err(err(format!(
            "{LINEAGE}: format {:?}, this surfgym reads {FORMAT:?}",
            l.format
        )));
    }
    Ok(Some(l))
}

/// The original model behind `dir` (itself unless it is a version).
pub fn base_of(dir: &Path) -> Result<PathBuf, VersionError> {
    Ok(match read_lineage(dir)? {
        Some(l) => l.base,
        None => std::fs::canonicalize(dir).map_err(|e| VersionError {
            dir: dir.to_path_buf(),
            why: e.to_string(),
        })?,
    })
}

/// One trained tensor, ready for `SessionBuilder::with_initializer`.
#[derive(Debug, Clone)]
pub struct Override {
    /// The ONNX initializer it replaces.
    pub name: String,
    /// Its shape (the base initializer's).
    pub dims: Vec<usize>,
    /// Its values.
    pub data: Vec<f32>,
}

/// A version's trained tensors, checked against its base decoder.
#[derive(Debug, Clone)]
pub struct Overrides {
    /// The lineage.
    pub lineage: Lineage,
    /// Every trainable initializer of the base, with its trained value.
    pub tensors: Vec<Override>,
}

/// Reads and checks a version's tensors: None for a plain model directory. The base decoder
/// must be the one the version was trained on (sha256), and `weights.safetensors` must hold
/// every trainable initializer of it as f32 in the same shape, and nothing else.
pub fn load_overrides(dir: &Path) -> Result<Option<Overrides>, VersionError> {
    let Some(lineage) = read_lineage(dir)? else {
        return Ok(None);
    };
    let err = |why: String| VersionError {
        dir: dir.to_path_buf(),
        why,
    };
    let decoder = dir.join(DECODER);
    let sha = file_sha256(&decoder).map_err(|e| err(format!("{DECODER}: {e}")))?;
    if sha != lineage.base_decoder_sha256 {
        return Err(err(format!(
            "its base decoder ({}) is not the one it was trained on: sha256 {sha}, {LINEAGE} says {}",
            decoder.display(),
            lineage.base_decoder_sha256
        )));
    }
    let base = read_initializers(&decoder).map_err(|e| err(e.to_string()))?;
    let weights = dir.join(WEIGHTS);
    let bytes = std::fs::read(&weights).map_err(|e| err(format!("{WEIGHTS}: {e}")))?;
    let file = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| {
        err(format!(
            "{WEIGHTS} is not a readable safetensors file ({e})"
        ))
    })?;
    if let Some(listed) = &lineage.tensors
        && let Some(bad) = listed
            .iter()
            .find(|n| !base.iter().any(|i| i.name == **n && is_trainable(n)))
    {
        return Err(err(format!(
            "{LINEAGE} lists a tensor `{bad}` that is no trainable initializer of the base decoder"
        )));
    }
    let stored = |name: &str| {
        lineage
            .tensors
            .as_ref()
            .is_none_or(|l| l.iter().any(|n| n == name))
    };
    let mut tensors = Vec::new();
    for init in base
        .iter()
        .filter(|i| is_trainable(&i.name) && stored(&i.name))
    {
        let t = file.tensor(&init.name).map_err(|_| {
            err(format!(
                "{WEIGHTS} has no tensor `{}` (the base decoder has it)",
                init.name
            ))
        })?;
        if t.dtype() != safetensors::Dtype::F32 || init.dtype != DataType::F32 {
            return Err(err(format!(
                "tensor `{}` in {WEIGHTS} is {:?}, the base decoder's is {} (versions hold f32)",
                init.name,
                t.dtype(),
                init.dtype
            )));
        }
        if t.shape() != init.dims.as_slice() {
            return Err(err(format!(
                "tensor `{}` in {WEIGHTS} has shape {:?}, the base decoder's is {:?}",
                init.name,
                t.shape(),
                init.dims
            )));
        }
        let data: Vec<f32> = t
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if data.iter().any(|x| !x.is_finite()) {
            return Err(err(format!(
                "tensor `{}` in {WEIGHTS} holds a NaN or infinite value",
                init.name
            )));
        }
        tensors.push(Override {
            name: init.name.clone(),
            dims: init.dims.clone(),
            data,
        });
    }
    if let Some(extra) = file
        .names()
        .into_iter()
        .find(|n| !base.iter().any(|i| i.name == **n && is_trainable(n)) || !stored(n))
    {
        return Err(err(format!(
            "{WEIGHTS} has a tensor `{extra}` that is no trainable initializer of the base decoder"
        )));
    }
    Ok(Some(Overrides { lineage, tensors }))
}
