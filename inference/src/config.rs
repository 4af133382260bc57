//! The model directory's configuration files, read into what generation needs. Shapes,
//! layers, heads and special tokens come from the files, never from constants.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::OnnxError;
use super::qwen2vl::QwenVision;

/// What the decoder and prompt need to know about the model.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// Decoder layers (one past/present pair each).
    pub layers: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Per-head width.
    pub head_dim: usize,
    /// The decoder's vocabulary (`vocab_size`, its logits' width). The tokenizer may be
    /// larger: a text model paired with a vision encoder appends image tokens after it, which
    /// are embedded but never generated.
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
    /// Which vision input and prompt expansion the export takes.
    pub layout: VisionLayout,
    /// The chat template (Jinja).
    pub chat_template: String,
    /// Where the ONNX files are.
    pub onnx_dir: PathBuf,
}

/// The family of the vision part: how images are prepared, expanded in the prompt and fed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VisionLayout {
    /// SmolVLM / Idefics3: square tiles with a pixel mask, `<image>` expanded per tile.
    Idefics3,
    /// Qwen2-VL / Qwen2.5-VL: patch rows with `grid_thw`, `<|image_pad|>` per merged patch,
    /// 3-D M-RoPE positions.
    Qwen2Vl(QwenVision),
}

impl VisionLayout {
    /// The token the chat template writes once per image, which the processor expands.
    pub fn placeholder(&self) -> &'static str {
        match self {
            VisionLayout::Idefics3 => "<image>",
            VisionLayout::Qwen2Vl(_) => super::qwen2vl::IMAGE_PAD,
        }
    }
}

/// Image preprocessing, as the model's `preprocessor_config.json` says.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageConfig {
    /// Longest edge after the first resize.
    pub longest_edge: u32,
    /// Tile size the vision encoder takes (square).
    pub tile: u32,
    /// Split large images into tiles plus a global view (`do_image_splitting`).
    pub split: bool,
    /// Resize to `longest_edge` first (`do_resize`).
    pub resize: bool,
    /// Resampling filter, PIL's numbering (`resample`; 1 is Lanczos).
    pub resample: u32,
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

/// CLIP's per-channel statistics, Qwen2-VL's normalisation.
const CLIP_MEAN: [f32; 3] = [0.481_454_66, 0.457_827_5, 0.408_210_73];
const CLIP_STD: [f32; 3] = [0.268_629_54, 0.261_302_6, 0.275_777_1];

#[derive(Deserialize)]
struct SizeEdge {
    longest_edge: Option<u32>,
}

impl ModelConfig {
    /// Reads `config.json`, `preprocessor_config.json`, `generation_config.json`,
    /// `tokenizer_config.json` / `chat_template.json` from a model directory.
    pub fn load(dir: &Path) -> Result<ModelConfig, OnnxError> {
        let config = read_json(&dir.join("config.json"))?;
        let qwen = matches!(
            config.get("model_type").and_then(Value::as_str),
            Some("qwen2_vl" | "qwen2_5_vl")
        );
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
        let triple = |key: &str, default: [f32; 3]| -> [f32; 3] {
            match pre.get(key).and_then(Value::as_array) {
                Some(a) if a.len() == 3 => {
                    [0, 1, 2].map(|i| a[i].as_f64().map_or(default[i], |v| v as f32))
                }
                _ => default,
            }
        };
        let flag = |key: &str| pre.get(key).and_then(Value::as_bool).unwrap_or(true);
        // Qwen2-VL's processor defaults: CLIP's statistics, bicubic resampling.
        let (default_mean, default_std, default_resample) = if qwen {
            (CLIP_MEAN, CLIP_STD, 3)
        } else {
            ([0.5; 3], [0.5; 3], 1)
        };
        let image = ImageConfig {
            longest_edge: longest.unwrap_or(tile),
            tile,
            split: pre
                .get("do_image_splitting")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            resize: flag("do_resize"),
            resample: uint(&pre, &["resample"]).map_or(default_resample, |n| n as u32),
            // Without rescaling or normalising, the identity.
            rescale: if flag("do_rescale") {
                pre.get("rescale_factor")
                    .and_then(Value::as_f64)
                    .unwrap_or(1.0 / 255.0) as f32
            } else {
                1.0
            },
            mean: if flag("do_normalize") {
                triple("image_mean", default_mean)
            } else {
                [0.0; 3]
            },
            std: if flag("do_normalize") {
                triple("image_std", default_std)
            } else {
                [1.0; 3]
            },
        };
        let layout = if qwen {
            let vision = config.get("vision_config").unwrap_or(&Value::Null);
            let size = pre.get("size").unwrap_or(&Value::Null);
            VisionLayout::Qwen2Vl(QwenVision {
                patch: uint(&pre, &["patch_size"])
                    .or_else(|| uint(vision, &["patch_size"]))
                    .unwrap_or(14),
                temporal: uint(&pre, &["temporal_patch_size"])
                    .or_else(|| uint(vision, &["temporal_patch_size"]))
                    .unwrap_or(2),
                merge: uint(&pre, &["merge_size"])
                    .or_else(|| uint(vision, &["spatial_merge_size"]))
                    .unwrap_or(2),
                // Older exports say min/max_pixels, newer ones size.shortest/longest_edge
                // (both in pixels, not sides).
                min_pixels: uint(&pre, &["min_pixels"])
                    .or_else(|| uint(size, &["shortest_edge"]))
                    .unwrap_or(56 * 56) as u64,
                max_pixels: uint(&pre, &["max_pixels"])
                    .or_else(|| uint(size, &["longest_edge"]))
                    .unwrap_or(28 * 28 * 1280) as u64,
            })
        } else {
            VisionLayout::Idefics3
        };
        // The processor's own setting first (processor_config.json), then the image
        // processor's, then what the vision config implies.
        let processor = read_optional(&dir.join("processor_config.json"))?.unwrap_or(Value::Null);
        let image_seq_len = uint(&processor, &["image_seq_len"])
            .or_else(|| uint(&pre, &["image_seq_len"]))
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
            layout,
            chat_template,
            onnx_dir,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processor_settings_come_from_the_model_files() {
        let dir = std::env::temp_dir().join(format!("surfgym-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, v: Value| std::fs::write(dir.join(name), v.to_string()).unwrap();
        write(
            "config.json",
            serde_json::json!({
                "image_token_id": 49190, "scale_factor": 4,
                "vision_config": {"image_size": 512, "patch_size": 16},
                "text_config": {"num_attention_heads": 9, "num_key_value_heads": 3,
                                "hidden_size": 576, "num_hidden_layers": 30, "vocab_size": 49280}
            }),
        );
        write(
            "preprocessor_config.json",
            serde_json::json!({
                "do_image_splitting": true, "size": {"longest_edge": 2048},
                "max_image_size": {"longest_edge": 512}, "resample": 3, "image_seq_len": 64,
                "rescale_factor": 0.5, "image_mean": [0.1, 0.2, 0.3], "do_normalize": true
            }),
        );
        write(
            "chat_template.json",
            serde_json::json!({"chat_template": "{{x}}"}),
        );
        let cfg = ModelConfig::load(&dir).unwrap();
        assert_eq!(
            cfg.image,
            ImageConfig {
                longest_edge: 2048,
                tile: 512,
                split: true,
                resize: true,
                resample: 3,
                rescale: 0.5,
                mean: [0.1, 0.2, 0.3],
                std: [0.5; 3],
            }
        );
        assert_eq!((cfg.layers, cfg.kv_heads, cfg.head_dim), (30, 3, 64));
        assert_eq!(cfg.image_seq_len, 64, "the image processor's value");
        // The processor's own config wins over the image processor's.
        write(
            "processor_config.json",
            serde_json::json!({"image_seq_len": 81}),
        );
        assert_eq!(ModelConfig::load(&dir).unwrap().image_seq_len, 81);
        // Neither: derived from the vision config, (512 / 16)^2 / 4^2.
        std::fs::remove_file(dir.join("processor_config.json")).unwrap();
        write(
            "preprocessor_config.json",
            serde_json::json!({"do_rescale": false, "do_normalize": false}),
        );
        let cfg = ModelConfig::load(&dir).unwrap();
        assert_eq!(cfg.image_seq_len, 64);
        assert_eq!(
            (cfg.image.rescale, cfg.image.mean, cfg.image.std),
            (1.0, [0.0; 3], [1.0; 3])
        );
        assert_eq!(cfg.layout, VisionLayout::Idefics3);
        // Qwen2-VL (the onnx-community Qwen2-VL-2B-Instruct files): its own layout.
        write(
            "config.json",
            serde_json::json!({"model_type": "qwen2_vl", "num_attention_heads": 12,
                               "num_key_value_heads": 2, "hidden_size": 1536,
                               "num_hidden_layers": 28, "image_token_id": 151655,
                               "vision_config": {"patch_size": 14, "spatial_merge_size": 2,
                                                 "temporal_patch_size": 2},
                               "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}),
        );
        write(
            "preprocessor_config.json",
            serde_json::json!({"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14,
                               "temporal_patch_size": 2, "merge_size": 2,
                               "image_processor_type": "Qwen2VLImageProcessor"}),
        );
        let cfg = ModelConfig::load(&dir).unwrap();
        assert_eq!(
            cfg.layout,
            VisionLayout::Qwen2Vl(QwenVision {
                patch: 14,
                temporal: 2,
                merge: 2,
                min_pixels: 3136,
                max_pixels: 12845056
            })
        );
        assert_eq!(cfg.layout.placeholder(), "<|image_pad|>");
        assert_eq!((cfg.layers, cfg.kv_heads, cfg.head_dim), (28, 2, 128));
        assert_eq!(cfg.image_token_id, Some(151655));
        assert_eq!(
            (cfg.image.mean, cfg.image.std, cfg.image.resample),
            (CLIP_MEAN, CLIP_STD, 3),
            "the processor's defaults"
        );
        // Newer exports give the pixel bounds as size.shortest_edge / longest_edge.
        write(
            "preprocessor_config.json",
            serde_json::json!({"size": {"shortest_edge": 100, "longest_edge": 2000}}),
        );
        match ModelConfig::load(&dir).unwrap().layout {
            VisionLayout::Qwen2Vl(q) => assert_eq!((q.min_pixels, q.max_pixels), (100, 2000)),
            other => panic!("{other:?}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
