//! Policy versions: a directory the ONNX policy loads like any model directory.
//!
//! ```text
//! VERSION/
//!   config.json, tokenizer.json, ..., onnx/   symlinks to the base model's files
//!   weights.safetensors                       every trained tensor, keyed by ONNX initializer name
//!   train.json                                lineage: base, parent, data, objective, settings, losses
//!   optimizer.safetensors                     AdamW moments (a run goes on from here)
//! ```
//!
//! ONNX Runtime puts `weights.safetensors` over the base graph's same-named initializers
//! when it creates the session, so the graph is never rewritten and a version costs only
//! its tensors on disk. The base is always the original export (a version trained from a
//! version links the same base and holds the full set of trained tensors), so loading is
//! one layer deep. A version is written to a temporary directory and renamed into place:
//! a crash never leaves half a version behind.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::Tensor;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::TrainError;
use crate::decoder::Decoder;
use crate::optim::AdamW;

/// `train.json`'s format tag.
pub const FORMAT: &str = "surfgym-policy-version/1";
/// The trained tensors' file.
pub const WEIGHTS: &str = "weights.safetensors";
/// The lineage file.
pub const LINEAGE: &str = "train.json";
/// The optimiser state file.
pub const OPTIMIZER: &str = "optimizer.safetensors";
const DECODER: &str = "onnx/decoder_model_merged.onnx";

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
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TrainError + '_ {
    move |e| TrainError::io(path, e)
}

/// sha256 of a file, hex.
pub fn file_sha256(path: &Path) -> Result<String, TrainError> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(io(path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(format!("{:x}", h.finalize()))
}

/// The lineage of a version directory, or None for a plain model directory.
pub fn read_lineage(dir: &Path) -> Result<Option<Lineage>, TrainError> {
    let path = dir.join(LINEAGE);
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    let l: Lineage = serde_json::from_str(&text)
        .map_err(|e| TrainError::Version(format!("{}: {e}", path.display())))?;
    if l.format != FORMAT {
        return Err(TrainError::Version(format!(
            "{}: format {:?}, this surfgym reads {FORMAT:?}",
            path.display(),
            l.format
        )));
    }
    Ok(Some(l))
}

/// The original model behind `dir` (itself unless it is a version).
pub fn base_of(dir: &Path) -> Result<PathBuf, TrainError> {
    Ok(match read_lineage(dir)? {
        Some(l) => l.base,
        None => std::fs::canonicalize(dir).map_err(io(dir))?,
    })
}

/// What [`publish`] writes besides the tensors.
pub struct Publish<'a> {
    /// The model or version the decoder was loaded from.
    pub parent: &'a Path,
    /// The optimiser, saved with the version.
    pub optimizer: Option<&'a AdamW>,
    /// Objective, data, settings and losses for `train.json`.
    pub training: serde_json::Value,
}

/// Publishes the decoder's parameters as a version at `out` (which must not exist).
pub fn publish(out: &Path, decoder: &Decoder, p: Publish<'_>) -> Result<Lineage, TrainError> {
    if out.exists() {
        return Err(TrainError::Version(format!(
            "{} already exists: versions are never overwritten (choose another --out)",
            out.display()
        )));
    }
    let base = base_of(p.parent)?;
    let parent_lineage = read_lineage(p.parent)?;
    let name = out
        .file_name()
        .ok_or_else(|| TrainError::Version(format!("{}: not a directory name", out.display())))?;
    let parent_dir = out.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent_dir).map_err(io(parent_dir))?;
    let tmp = parent_dir.join(format!(".{}.partial", name.to_string_lossy()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(io(&tmp))?;
    }
    std::fs::create_dir(&tmp).map_err(io(&tmp))?;
    for entry in std::fs::read_dir(&base).map_err(io(&base))? {
        let entry = entry.map_err(io(&base))?;
        let file = entry.file_name();
        if [WEIGHTS, LINEAGE, OPTIMIZER].iter().any(|n| file == *n) {
            continue;
        }
        let link = tmp.join(&file);
        std::os::unix::fs::symlink(entry.path(), &link).map_err(io(&link))?;
    }
    let tensors: HashMap<String, Tensor> = decoder
        .params()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_tensor().clone()))
        .collect();
    candle_core::safetensors::save(&tensors, tmp.join(WEIGHTS))?;
    let steps = match p.optimizer {
        Some(opt) => {
            opt.save(&tmp.join(OPTIMIZER))?;
            opt.steps()
        }
        None => parent_lineage.as_ref().map_or(0, |l| l.optimizer_steps),
    };
    let lineage = Lineage {
        format: FORMAT.into(),
        base_decoder_sha256: file_sha256(&base.join(DECODER))?,
        base,
        parent: parent_lineage
            .is_some()
            .then(|| std::fs::canonicalize(p.parent))
            .transpose()
            .map_err(io(p.parent))?,
        created: chrono::Utc::now().to_rfc3339(),
        optimizer_steps: steps,
        training: p.training,
    };
    let json = serde_json::to_string_pretty(&lineage).expect("lineage serialises");
    std::fs::write(tmp.join(LINEAGE), json).map_err(io(&tmp))?;
    std::fs::rename(&tmp, out).map_err(io(out))?;
    tracing::info!(version = %out.display(), steps, "policy version published");
    Ok(lineage)
}

/// Loads a version's trained tensors into a decoder built from its base, checking that the
/// version belongs to that base.
pub fn apply(dir: &Path, decoder: &mut Decoder) -> Result<Option<Lineage>, TrainError> {
    let Some(lineage) = read_lineage(dir)? else {
        return Ok(None);
    };
    let decoder_file = dir.join(DECODER);
    let sha = file_sha256(&decoder_file)?;
    if sha != lineage.base_decoder_sha256 {
        return Err(TrainError::Version(format!(
            "{}: its base decoder {} is not the one it was trained on (sha256 {sha}, train.json says {})",
            dir.display(),
            decoder_file.display(),
            lineage.base_decoder_sha256
        )));
    }
    let weights = dir.join(WEIGHTS);
    let tensors = candle_core::safetensors::load(&weights, decoder.device()).map_err(|e| {
        TrainError::Version(format!("{}: unreadable ({e})", weights.display()))
    })?;
    for name in decoder.params().keys().cloned().collect::<Vec<_>>() {
        let t = tensors.get(&name).ok_or_else(|| {
            TrainError::Version(format!("{}: no tensor `{name}`", weights.display()))
        })?;
        decoder
            .set(&name, t)
            .map_err(|e| TrainError::Version(format!("{}: {e}", weights.display())))?;
    }
    Ok(Some(lineage))
}
