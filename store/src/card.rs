//! What a policy is, recorded with every episode it runs: the provenance of the data. A
//! campaign names its policy, but each worker resolves that name in its own registry, and
//! a name like `onnx` outlives the checkpoint behind it: the trainer must know which model,
//! at which sampling settings, produced each episode's steps and log-probabilities.
//!
//! Defined here because the store keeps it (with each episode, and per campaign); the
//! policies fill it in (`policy::Policy::card`) and re-export it from `policy`.

use serde::{Deserialize, Serialize};

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
    /// ONNX: `policy::fingerprint` of the model directory, which changes with the weights.
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
