//! Runs whose policy is served over HTTP (vLLM, SGLang, `surfgym serve-policy`): the
//! weights live in the server, so each update is an external trainer's, which loads the
//! new weights into the server under a new name (a model or LoRA adapter name) and says
//! which; the run's policies then ask for that name.
//!
//! A served run keeps its versions as an ONNX run does, as directories of the run, so the
//! version links, the resume rules and the staleness count work unchanged: `v0` names the
//! base model the server started with, `v{i}` the name iteration i's trainer returned,
//! each in [`SERVED_MODEL`] beside the update's lineage ([`LINEAGE`]). Each directory is
//! published atomically (written aside, then renamed) and never overwritten. Names are
//! unique within a run: an episode records only the name it asked for, so a name reused
//! for other weights would make its samples' version a guess.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use inference::grammar::Constraint;
use policy::Policy;
use policy::follow::{Following, Loader};
use policy::http::{ChatClient, HttpOptions, HttpPolicy};
use policy::onnx::prompt::PromptConfig;
use serde::{Deserialize, Serialize};
use store::PolicyCard;

use crate::RunError;
use crate::config::RunConfig;
use crate::external::accept::check_name;

/// A served version's name file.
pub const SERVED_MODEL: &str = "served_model.txt";
/// A served version's lineage.
pub const LINEAGE: &str = "served.json";

/// Where the run's policy is served (`RunConfig::served`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Served {
    /// The server's base URL (`/v1/chat/completions` and `/v1/models` are appended).
    pub base_url: String,
    /// The name the server serves the starting weights under.
    pub model: String,
    /// The environment variable holding the server's bearer token, if it wants one (the
    /// token itself is never in the config: configs are stored and shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Seconds one request may take.
    #[serde(default = "timeout_s")]
    pub timeout_s: u64,
    /// Requests in flight at most, per policy (sampling and greedy).
    #[serde(default = "concurrency")]
    pub concurrency: usize,
    /// Whether the served model reads screenshots (false: a text-only model, sent the
    /// page's elements and no images).
    #[serde(default = "yes")]
    pub vision: bool,
}

fn yes() -> bool {
    true
}

fn timeout_s() -> u64 {
    120
}
fn concurrency() -> usize {
    16
}

impl Served {
    /// Checks the settings, naming the bad field (under `served.`).
    pub fn validate(&self) -> Result<(), String> {
        let url = self.base_url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 10 {
            return Err(format!(
                "served.base_url: {:?} is not an http(s) URL (e.g. http://gpu-box:8000)",
                self.base_url
            ));
        }
        check_name(&self.model).map_err(|e| format!("served.model: {e}"))?;
        if let Some(k) = &self.api_key_env
            && (k.is_empty() || k.contains('=') || k.contains('\0'))
        {
            return Err(format!("served.api_key_env: {k:?} is not a variable name"));
        }
        if self.timeout_s == 0 {
            return Err("served.timeout_s: must be at least 1".into());
        }
        if self.concurrency == 0 {
            return Err("served.concurrency: must be at least 1".into());
        }
        Ok(())
    }

    /// The HTTP policy's options for `model` at `temperature`, prompted as the run says.
    fn options(&self, cfg: &RunConfig, model: &str, temperature: f32) -> HttpOptions {
        let mut o = HttpOptions::new(self.base_url.trim(), model);
        o.api_key = self
            .api_key_env
            .as_ref()
            .and_then(|k| std::env::var(k).ok());
        o.timeout = Duration::from_secs(self.timeout_s);
        o.concurrency = self.concurrency;
        o.max_tokens = cfg.policy.max_new_tokens;
        o.vision = self.vision;
        o.temperature = temperature;
        o.prompt = PromptConfig::default();
        o.constrained = match cfg.policy.constrained.as_deref() {
            Some("reasoned") => Some(Constraint::Reasoned),
            Some(_) => Some(Constraint::Action),
            None => None,
        };
        o
    }

    /// The model names the server lists now.
    async fn listed(&self, cfg: &RunConfig) -> Result<Vec<String>, String> {
        let client =
            ChatClient::new(self.options(cfg, &self.model, 0.0)).map_err(|e| e.to_string())?;
        client.models().await.map_err(|e| e.to_string())
    }

    /// Before anything runs: the server answers and lists the base model.
    pub async fn check(&self, cfg: &RunConfig) -> Result<(), RunError> {
        let listed = self.listed(cfg).await.map_err(|e| {
            RunError::Config(format!(
                "served.base_url: the server does not answer ({e}); start it first"
            ))
        })?;
        if !listed.contains(&self.model) {
            return Err(RunError::Config(format!(
                "served.model: the server does not list {:?} (it lists {})",
                self.model,
                listed.join(", ")
            )));
        }
        Ok(())
    }

    /// Whether the server lists `name` now (a trainer's returned name must be served
    /// before the run asks for it).
    pub async fn lists(&self, cfg: &RunConfig, name: &str) -> Result<bool, String> {
        Ok(self.listed(cfg).await?.iter().any(|m| m == name))
    }
}

/// The served name a version directory holds.
pub fn name_of(dir: &Path) -> Result<String, String> {
    let file = dir.join(SERVED_MODEL);
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let name = text.trim();
    check_name(name).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(name.to_string())
}

/// Whether `dir` is a served version.
pub fn is_served(dir: &Path) -> bool {
    dir.join(SERVED_MODEL).is_file()
}

/// Publishes `name` as the version at `out` with `lineage`: written aside, then renamed,
/// so `out` is whole or absent. A version already at `out` is an error (versions are
/// never overwritten).
pub fn publish(out: &Path, name: &str, lineage: &serde_json::Value) -> std::io::Result<()> {
    check_name(name).map_err(std::io::Error::other)?;
    if out.exists() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{} exists already", out.display()),
        ));
    }
    let file_name = out
        .file_name()
        .map_or_else(|| "version".into(), |n| n.to_string_lossy().into_owned());
    let tmp = out.with_file_name(format!(".{file_name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    std::fs::write(tmp.join(SERVED_MODEL), format!("{name}\n"))?;
    let text = serde_json::to_string_pretty(lineage).map_err(std::io::Error::other)?;
    std::fs::write(tmp.join(LINEAGE), text)?;
    std::fs::rename(&tmp, out).inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&tmp);
    })
}

/// The run's version 0: the base model's name, published once.
pub fn base_version(run_dir: &Path, served: &Served) -> Result<PathBuf, RunError> {
    let v0 = run_dir.join("v0");
    if !is_served(&v0) {
        let lineage = serde_json::json!({"served_model": served.model, "base": true});
        publish(&v0, &served.model, &lineage).map_err(|e| RunError::io(&v0, e))?;
    }
    Ok(v0)
}

/// A policy following the run's `link` among served versions: each episode asks for the
/// name of the version the link named when it started.
pub fn following(
    cfg: &RunConfig,
    served: &Served,
    name: &str,
    link: &Path,
    temperature: f32,
) -> Result<Following, RunError> {
    let (cfg, served, policy) = (cfg.clone(), served.clone(), name.to_string());
    let load: Loader = Arc::new(move |dir: &Path| {
        let model = name_of(dir)?;
        let p = HttpPolicy::new(policy.clone(), served.options(&cfg, &model, temperature))
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(p) as Arc<dyn Policy>)
    });
    Following::new(name, link, load).map_err(|e| RunError::Config(format!("served: {e}")))
}

/// The name an episode's policy card says it asked for.
pub fn card_model(card: &PolicyCard) -> Option<&str> {
    (card.backend == "http")
        .then_some(card.model.as_deref())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_versions_are_published_whole_once() {
        let dir = tempfile::tempdir().unwrap();
        let v1 = dir.path().join("v1");
        publish(&v1, "run-it1", &serde_json::json!({"iteration": 1})).unwrap();
        assert_eq!(name_of(&v1).unwrap(), "run-it1");
        assert!(is_served(&v1));
        let again = publish(&v1, "other", &serde_json::json!({})).unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(name_of(&v1).unwrap(), "run-it1", "never overwritten");
        assert!(publish(&dir.path().join("v2"), "two words", &serde_json::json!({})).is_err());
        assert!(
            !dir.path().join("v2").exists(),
            "a refused name leaves nothing"
        );
        // No temporary directory is left beside the versions.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1);
    }

    #[test]
    fn bad_settings_name_the_field() {
        let good = Served {
            base_url: "http://gpu-box:8000".into(),
            model: "qwen".into(),
            api_key_env: None,
            timeout_s: 10,
            concurrency: 4,
            vision: true,
        };
        assert!(good.validate().is_ok());
        for (s, want) in [
            (
                Served {
                    base_url: "gpu-box:8000".into(),
                    ..good.clone()
                },
                "served.base_url",
            ),
            (
                Served {
                    model: "".into(),
                    ..good.clone()
                },
                "served.model: the served model name is empty",
            ),
            (
                Served {
                    model: "a b".into(),
                    ..good.clone()
                },
                "served.model: the served model name \"a b\" holds ' '",
            ),
            (
                Served {
                    api_key_env: Some("A=B".into()),
                    ..good.clone()
                },
                "served.api_key_env",
            ),
            (
                Served {
                    timeout_s: 0,
                    ..good.clone()
                },
                "served.timeout_s",
            ),
            (
                Served {
                    concurrency: 0,
                    ..good.clone()
                },
                "served.concurrency",
            ),
        ] {
            let e = s.validate().unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
