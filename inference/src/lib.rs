//! Model inference: ONNX Runtime sessions in the onnx-community export layout
//! (`vision_encoder`, `embed_tokens`, `decoder_model_merged`) of SmolVLM / Idefics3 (image
//! tiles) and Qwen2-VL / Qwen2.5-VL (patch rows with `grid_thw`, M-RoPE positions), text-only
//! Llama exports too; batched generation with constrained decoding ([`grammar`]), the
//! image processors, the chat template ([`template`]), the one batching queue ([`batch`])
//! that both the rollout policy and the OpenAI-compatible [`server`] use.
//!
//! This crate must never know the engine, its store, tasks or browsers: it sees
//! observations only through `spaces`. The `cuda` feature builds ONNX Runtime's CUDA
//! execution provider (falling back to CPU at run time).
#![deny(missing_docs)]

pub mod batch;
pub mod config;
pub mod grammar;
pub mod image;
pub mod model;
pub mod onnx_file;
pub mod peft;
pub mod qwen2vl;
pub mod server;
pub mod template;
pub mod version;
pub mod version_link;

use std::path::{Path, PathBuf};

pub use model::{
    DEFAULT_PREFIX_CACHE_BYTES, Device, Finish, GenParams, Generation, Model, Pixels,
    PrefixCacheStats, Prompt, TeacherInputs, TokenSet,
};

/// Why a model could not be loaded or run.
#[derive(Debug, Clone, thiserror::Error)]
pub enum OnnxError {
    /// The model directory is incomplete or inconsistent.
    #[error("model: {0}")]
    Model(String),
    /// ONNX Runtime failed.
    #[error("ONNX Runtime: {0}")]
    Runtime(String),
    /// A prompt could not be built.
    #[error("prompt: {0}")]
    Prompt(String),
}

/// `libonnxruntime.so.*`: `$ORT_DYLIB_PATH`, else the onnxruntime wheel in the project's
/// Python venv (`scripts/setup-python.sh` installs it).
pub fn find_ort_dylib(data_dir: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH").map(PathBuf::from) {
        return p.exists().then_some(p);
    }
    let lib = data_dir.join("venv/lib");
    let mut found: Vec<PathBuf> = std::fs::read_dir(lib)
        .ok()?
        .filter_map(Result::ok)
        .flat_map(|e| {
            std::fs::read_dir(e.path().join("site-packages/onnxruntime/capi"))
                .into_iter()
                .flatten()
        })
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libonnxruntime.so."))
        })
        .collect();
    found.sort();
    found.pop()
}

/// Replaces each image placeholder the template wrote (`<image>`, `<|image_pad|>`) with the
/// processor's expansion of that image, and prepares the images for the vision encoder.
pub fn expand_images(
    text: &str,
    images: &[::image::DynamicImage],
    cfg: &config::ModelConfig,
) -> Result<Prompt, OnnxError> {
    let pieces: Vec<&str> = text.split(cfg.layout.placeholder()).collect();
    if pieces.len() - 1 != images.len() {
        return Err(OnnxError::Prompt(format!(
            "the template wrote {} image placeholders for {} images",
            pieces.len() - 1,
            images.len()
        )));
    }
    let mut out = String::from(pieces[0]);
    let mut prepared = Vec::with_capacity(images.len());
    for (img, rest) in images.iter().zip(&pieces[1..]) {
        match &cfg.layout {
            config::VisionLayout::Idefics3 => {
                let p = image::prepare(img, &cfg.image);
                out.push_str(&image::prompt_tokens(p.grid, cfg.image_seq_len));
                prepared.push(Pixels::Tiles(p));
            }
            config::VisionLayout::Qwen2Vl(q) => {
                let p = qwen2vl::prepare(img, &cfg.image, q).map_err(OnnxError::Prompt)?;
                out.push_str(&qwen2vl::prompt_tokens(&p, q.merge));
                prepared.push(Pixels::Patches(p));
            }
        }
        out.push_str(rest);
    }
    Ok(Prompt {
        text: out,
        rendered: text.to_string(),
        images: prepared,
        grammar: None,
    })
}
