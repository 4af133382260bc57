//! What a policy is, recorded with every episode it runs: the provenance of the data. A
//! campaign names its policy, but each worker resolves that name in its own registry, and
//! a name like `onnx` outlives the checkpoint behind it: the trainer must know which model,
//! at which sampling settings, produced each episode's steps and log-probabilities.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One policy as it ran: backend, model identity and the settings that shaped its samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyCard {
    /// The name campaigns refer to it by.
    pub name: String,
    /// `builtin`, `onnx`, `http`, or a wrapper's kind around its inner policy's card.
    pub backend: String,
    /// ONNX: the model directory's name; HTTP: the `model` field requests carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// ONNX: [`fingerprint`] of the model directory, which changes with the weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// HTTP: the server's base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// How tokens were drawn (model policies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
    /// Backend-specific settings: prompt style, grounding, constrained decoding, device.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub settings: serde_json::Map<String, serde_json::Value>,
}

/// Sampling settings of a model policy. Stored log-probabilities are the model's at
/// temperature 1 (ONNX) or the server's report; these say how the tokens were chosen.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// 0: greedy.
    pub temperature: f32,
    /// Nucleus mass (1: off).
    pub top_p: f32,
    /// Most tokens per step.
    pub max_tokens: u32,
}

impl PolicyCard {
    /// A card with only a name and a backend kind.
    pub fn new(name: impl Into<String>, backend: impl Into<String>) -> PolicyCard {
        PolicyCard {
            name: name.into(),
            backend: backend.into(),
            model: None,
            fingerprint: None,
            endpoint: None,
            sampling: None,
            settings: serde_json::Map::new(),
        }
    }

    /// One line for people: `onnx · smolvlm · 3f2a91c0d4e5 · greedy` (the fingerprint's
    /// first 12 hex digits; the endpoint for HTTP policies).
    pub fn label(&self) -> String {
        let mut parts = vec![self.name.clone()];
        parts.extend(self.model.clone());
        if let Some(f) = &self.fingerprint {
            parts.push(f.trim_start_matches("sha256:").chars().take(12).collect());
        }
        parts.extend(self.endpoint.clone());
        if let Some(s) = self.sampling {
            parts.push(if s.temperature == 0.0 {
                "greedy".to_string()
            } else {
                format!("T={}, top-p {}", s.temperature, s.top_p)
            });
        }
        parts.join(" · ")
    }

    /// Adds one setting.
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> PolicyCard {
        self.settings.insert(key.to_string(), value.into());
        self
    }
}

/// Files at most this large are hashed whole; larger ones are sampled.
const WHOLE: u64 = 16 << 20;
/// Chunks read from a larger file, evenly spread from its first byte to its last.
const CHUNKS: u64 = 64;
const CHUNK: u64 = 64 << 10;

/// A fingerprint of a model directory: SHA-256 over every file's relative path and size
/// (the directory and its `onnx/`), and its bytes: whole for files up to 16 MiB, else 64
/// chunks of 64 KiB spread over the file. Reading 4 MiB per large file keeps loading a
/// multi-gigabyte model fast; a new checkpoint rewrites its weights throughout, so its
/// samples differ. Hidden files are skipped.
pub fn fingerprint(dir: &Path) -> std::io::Result<String> {
    let mut files = Vec::new();
    for sub in [Path::new(""), Path::new("onnx")] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with('.') && e.file_type()?.is_file() {
                files.push(sub.join(name));
            }
        }
    }
    files.sort();
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK as usize];
    for rel in &files {
        let mut f = std::fs::File::open(dir.join(rel))?;
        let len = f.metadata()?.len();
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        h.update(len.to_le_bytes());
        if len <= WHOLE {
            std::io::copy(&mut f, &mut h)?;
            continue;
        }
        for i in 0..CHUNKS {
            let at = i * (len - CHUNK) / (CHUNKS - 1);
            f.seek(SeekFrom::Start(at))?;
            f.read_exact(&mut buf)?;
            h.update(&buf);
        }
    }
    let digest = h.finalize();
    Ok(format!(
        "sha256:{}",
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("surfgym-card-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("onnx")).unwrap();
        d
    }

    #[test]
    fn a_label_names_what_tells_policies_apart() {
        assert_eq!(PolicyCard::new("scripted", "builtin").label(), "scripted");
        let mut card = PolicyCard::new("onnx", "onnx");
        card.model = Some("smolvlm".into());
        card.fingerprint = Some(format!("sha256:{}", "ab".repeat(32)));
        card.sampling = Some(Sampling {
            temperature: 0.0,
            top_p: 1.0,
            max_tokens: 96,
        });
        assert_eq!(card.label(), "onnx · smolvlm · abababababab · greedy");
        card.sampling = Some(Sampling {
            temperature: 0.7,
            top_p: 0.9,
            max_tokens: 96,
        });
        assert!(
            card.label().ends_with("T=0.7, top-p 0.9"),
            "{}",
            card.label()
        );
    }

    #[test]
    fn the_fingerprint_follows_the_bytes_not_the_place() {
        let a = dir("a");
        std::fs::write(a.join("config.json"), b"{}").unwrap();
        // Larger than the whole-file limit: sampled.
        let mut weights = vec![7u8; (WHOLE + 3 * CHUNK) as usize];
        std::fs::write(a.join("onnx/decoder.onnx"), &weights).unwrap();
        std::fs::write(a.join(".cache"), b"ignored").unwrap();
        let first = fingerprint(&a).unwrap();
        assert!(first.starts_with("sha256:") && first.len() == 71, "{first}");

        // The same files elsewhere, hidden files aside: the same fingerprint.
        let b = dir("b");
        std::fs::write(b.join("config.json"), b"{}").unwrap();
        std::fs::write(b.join("onnx/decoder.onnx"), &weights).unwrap();
        assert_eq!(fingerprint(&b).unwrap(), first);

        // New weights (here: the bytes of the 11th sampled chunk) or config: a new
        // fingerprint.
        let len = weights.len() as u64;
        let at = 10 * (len - CHUNK) / (CHUNKS - 1);
        weights[at as usize..][..CHUNK as usize].fill(8);
        std::fs::write(b.join("onnx/decoder.onnx"), &weights).unwrap();
        let changed = fingerprint(&b).unwrap();
        assert_ne!(changed, first);
        std::fs::write(a.join("config.json"), b"{\"v\": 2}").unwrap();
        assert_ne!(fingerprint(&a).unwrap(), first);
        // Small files are hashed whole: any byte counts.
        std::fs::write(a.join("config.json"), b"{}").unwrap();
        std::fs::write(a.join("tokenizer.json"), b"[1]").unwrap();
        let with = fingerprint(&a).unwrap();
        std::fs::write(a.join("tokenizer.json"), b"[2]").unwrap();
        assert_ne!(fingerprint(&a).unwrap(), with);
        for d in [a, b] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}
