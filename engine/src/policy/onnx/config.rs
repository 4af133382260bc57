//! The model directory's configuration files, read into what generation needs. Shapes,
//! layers, heads and special tokens come from the files, never from constants.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::OnnxError;

/// What the decoder and prompt need to know about the model.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// Decoder layers (one past/present pair each).
    pub layers: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Per-head width.
    pub head_dim: usize,
    /// Vocabulary size.
    pub vocab: usize,
    /// The `<image>` token, whose rows get image features (None: text-only model).
    pub image_token_id: Option<u32>,
    /// Image features per image tile.
    pub image_seq_len: usize,
    /// Tokens that end a generation.
    pub eos_ids: Vec<u32>,
    /// Padding token.
    pub pad_id: u32,
    /// Image preprocessing.
    pub image: ImageConfig,
    /// The chat template (Jinja).
    pub chat_template: String,
    /// Where the ONNX files are.
    pub onnx_dir: PathBuf,
}

/// Image preprocessing, as the model's `preprocessor_config.json` says.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageConfig {
    /// Longest edge after the first resize.
    pub longest_edge: u32,
    /// Tile size the vision encoder takes (square).
    pub tile: u32,
    /// Split large images into tiles plus a global view.
    pub split: bool,
    /// Multiply pixel values by this (1/255).
    pub rescale: f32,
    /// Per-channel mean.
    pub mean: [f32; 3],
    /// Per-channel standard deviation.
    pub std: [f32; 3],
}

fn read_json(path: &Path) -> Result<Value, OnnxError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| OnnxError::Model(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| OnnxError::Model(format!("{}: {e}", path.display())))
}

fn read_optional(path: &Path) -> Result<Option<Value>, OnnxError> {
    if path.exists() {
        read_json(path).map(Some)
    } else {
        Ok(None)
    }
}

fn uint(v: &Value, keys: &[&str]) -> Option<usize> {
    keys.iter()
        .find_map(|k| v.get(*k).and_then(Value::as_u64))
        .map(|n| n as usize)
}

fn ids(v: Option<&Value>) -> Vec<u32> {
    match v {
        Some(Value::Number(n)) => n.as_u64().map(|n| vec![n as u32]).unwrap_or_default(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_u64)
            .map(|n| n as u32)
            .collect(),
        _ => Vec::new(),
    }
}

#[derive(Deserialize)]
struct SizeEdge {
    longest_edge: Option<u32>,
}

impl ModelConfig {
    /// Reads `config.json`, `preprocessor_config.json`, `generation_config.json`,
    /// `tokenizer_config.json` / `chat_template.json` from a model directory.
    pub fn load(dir: &Path) -> Result<ModelConfig, OnnxError> {
        let config = read_json(&dir.join("config.json"))?;
        // VLM configs nest the decoder's settings under text_config; text models do not.
        let text = config.get("text_config").unwrap_or(&config);
        let heads = uint(text, &["num_attention_heads"])
            .ok_or_else(|| OnnxError::Model("config.json: no num_attention_heads".into()))?;
        let hidden = uint(text, &["hidden_size"])
            .ok_or_else(|| OnnxError::Model("config.json: no hidden_size".into()))?;
        let layers = uint(text, &["num_hidden_layers"])
            .ok_or_else(|| OnnxError::Model("config.json: no num_hidden_layers".into()))?;
        let kv_heads = uint(text, &["num_key_value_heads"]).unwrap_or(heads);
        let head_dim = uint(text, &["head_dim"]).unwrap_or(hidden / heads.max(1));
        let vocab = uint(text, &["vocab_size"])
            .or_else(|| uint(&config, &["vocab_size"]))
            .unwrap_or(0);
        let image_token_id =
            uint(&config, &["image_token_id", "image_token_index"]).map(|n| n as u32);

        let generation = read_optional(&dir.join("generation_config.json"))?;
        let tok_cfg = read_optional(&dir.join("tokenizer_config.json"))?;
        let mut eos_ids = ids(generation.as_ref().and_then(|g| g.get("eos_token_id")));
        if eos_ids.is_empty() {
            eos_ids = ids(text
                .get("eos_token_id")
                .or_else(|| config.get("eos_token_id")));
        }
        let pad_id = ids(text
            .get("pad_token_id")
            .or_else(|| config.get("pad_token_id")))
        .first()
        .copied()
        .or_else(|| eos_ids.first().copied())
        .unwrap_or(0);

        let pre = read_optional(&dir.join("preprocessor_config.json"))?.unwrap_or(Value::Null);
        let longest = pre
            .get("size")
            .and_then(|s| serde_json::from_value::<SizeEdge>(s.clone()).ok())
            .and_then(|s| s.longest_edge);
        let tile = pre
            .get("max_image_size")
            .and_then(|s| serde_json::from_value::<SizeEdge>(s.clone()).ok())
            .and_then(|s| s.longest_edge)
            .or_else(|| {
                config
                    .get("vision_config")
                    .and_then(|v| uint(v, &["image_size"]))
                    .map(|n| n as u32)
            })
            .unwrap_or(512);
        let triple = |key: &str, default: f32| -> [f32; 3] {
            match pre.get(key).and_then(Value::as_array) {
                Some(a) if a.len() == 3 => {
                    [0, 1, 2].map(|i| a[i].as_f64().unwrap_or(default as f64) as f32)
                }
                _ => [default; 3],
            }
        };
        let image = ImageConfig {
            longest_edge: longest.unwrap_or(tile),
            tile,
            split: pre
                .get("do_image_splitting")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            rescale: pre
                .get("rescale_factor")
                .and_then(Value::as_f64)
                .unwrap_or(1.0 / 255.0) as f32,
            mean: triple("image_mean", 0.5),
            std: triple("image_std", 0.5),
        };
        let image_seq_len = uint(&pre, &["image_seq_len"])
            .or_else(|| {
                // Idefics3: (tile / patch)^2 / scale_factor^2.
                let vision = config.get("vision_config")?;
                let patch = uint(vision, &["patch_size"])?;
                let scale = uint(&config, &["scale_factor"]).unwrap_or(1);
                Some((tile as usize / patch).pow(2) / scale.pow(2).max(1))
            })
            .unwrap_or(64);

        let chat_template = tok_cfg
            .as_ref()
            .and_then(|t| t.get("chat_template"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| {
                read_optional(&dir.join("chat_template.json"))
                    .ok()
                    .flatten()
                    .and_then(|c| {
                        c.get("chat_template")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
            })
            .ok_or_else(|| {
                OnnxError::Model(
                    "no chat template (tokenizer_config.json or chat_template.json)".into(),
                )
            })?;
        let onnx_dir = if dir.join("onnx").is_dir() {
            dir.join("onnx")
        } else {
            dir.to_path_buf()
        };
        Ok(ModelConfig {
            layers,
            kv_heads,
            head_dim,
            vocab,
            image_token_id,
            image_seq_len,
            eos_ids,
            pad_id,
            image,
            chat_template,
            onnx_dir,
        })
    }
}
