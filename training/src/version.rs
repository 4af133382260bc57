//! Publishing policy versions (the format and its checks live in `inference::version`,
//! which the ONNX policy loads them with).
//!
//! ```text
//! VERSION/
//!   config.json, tokenizer.json, ..., onnx/   symlinks to the base model's files
//!   weights.safetensors                       the trained tensors, keyed by ONNX initializer name
//!   train.json                                lineage: base, parent, data, objective, settings, losses
//!   optimizer.safetensors                     AdamW moments (a run goes on from here; a
//!                                             run keeps its newest version's only)
//!   adapter.safetensors                       a LoRA version's A and B (weights hold them merged)
//! ```
//!
//! The base is always the original export (a version trained from a version links the
//! same base and holds every tensor that differs from it), so loading is one layer deep.
//! A version stores every trainable tensor, or, when some never moved (the frozen layers
//! of a `top_layers` run from the base), only the others, listed in `train.json`. A
//! version is written to a temporary directory and renamed into place: a crash never
//! leaves half a version behind, and an existing version is never overwritten.

use std::collections::HashMap;
use std::path::Path;

use candle_core::Tensor;
pub use inference::version::{
    ADAPTER, DECODER, FORMAT, LINEAGE, Lineage, OPTIMIZER, WEIGHTS, base_of, file_sha256,
    load_overrides, read_lineage,
};

use crate::TrainError;
use crate::decoder::Decoder;
use crate::optim::AdamW;

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
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |e: std::io::Error| TrainError::io(&path, e)
    };
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
        if [WEIGHTS, LINEAGE, OPTIMIZER, ADAPTER]
            .iter()
            .any(|n| file == *n)
        {
            continue;
        }
        let link = tmp.join(&file);
        std::os::unix::fs::symlink(entry.path(), &link).map_err(io(&link))?;
    }
    // Only what may have moved: under `top_layers` from the base, the frozen layers are
    // the base's and are left to it.
    // Under LoRA the adapted matrices go merged (ONNX Runtime runs them as any version's),
    // and the adapter beside them (what training goes on from, and exports).
    let mut tensors: HashMap<String, Tensor> = HashMap::new();
    for (k, v) in decoder.params() {
        if decoder.may_differ_from_base(k) {
            let t = match decoder.adapter() {
                Some(a) => a.merged(k, v.as_tensor())?,
                None => v.as_tensor().clone(),
            };
            tensors.insert(k.clone(), t);
        }
    }
    let subset = tensors.len() < decoder.params().len();
    if let Some(a) = decoder.adapter() {
        a.save(&tmp.join(ADAPTER))?;
    }
    candle_core::safetensors::save(&tensors, tmp.join(WEIGHTS))?;
    let steps = match p.optimizer {
        Some(opt) => {
            opt.save(&tmp.join(OPTIMIZER))?;
            opt.steps()
        }
        None => parent_lineage.as_ref().map_or(0, |l| l.optimizer_steps),
    };
    let decoder_file = base.join(DECODER);
    let lineage = Lineage {
        format: FORMAT.into(),
        base_decoder_sha256: file_sha256(&decoder_file).map_err(io(&decoder_file))?,
        base,
        parent: match parent_lineage {
            Some(_) => Some(std::fs::canonicalize(p.parent).map_err(io(p.parent))?),
            None => None,
        },
        created: chrono::Utc::now().to_rfc3339(),
        optimizer_steps: steps,
        training: p.training,
        adapter: decoder.adapter().map(|a| a.meta().clone()),
        tensors: subset.then(|| {
            let mut names: Vec<String> = tensors.keys().cloned().collect();
            names.sort();
            names
        }),
    };
    let json = serde_json::to_string_pretty(&lineage).expect("lineage serialises");
    std::fs::write(tmp.join(LINEAGE), json).map_err(io(&tmp))?;
    std::fs::rename(&tmp, out).map_err(io(out))?;
    tracing::info!(version = %out.display(), steps, "policy version published");
    Ok(lineage)
}

/// Loads a version's trained tensors (checked against its base, as the ONNX policy checks
/// them) into a decoder built from that base.
pub fn apply(dir: &Path, decoder: &mut Decoder) -> Result<Option<Lineage>, TrainError> {
    let Some(o) = load_overrides(dir)? else {
        return Ok(None);
    };
    for t in o.tensors {
        let value = Tensor::from_vec(t.data, t.dims, decoder.device())?;
        decoder.set(&t.name, &value)?;
    }
    Ok(Some(o.lineage))
}
