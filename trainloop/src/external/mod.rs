//! External trainers: for models the built-in trainer cannot hold, an iteration hands its
//! selected samples to a command the user configured (TRL, verl, anything) and takes back
//! what it made.
//!
//! The protocol (docs/guides/training.md, "External trainers"):
//! 1. surfgym writes the iteration's training set to `INPUT` ([`dataset`]): TRL's
//!    conversational JSON Lines with the images beside it and the exact token ids, verl's
//!    Parquet, a manifest, and the current weights keyed by ONNX initializer name;
//! 2. it runs the command (argv, no shell) with the directories in environment variables
//!    and `{input}`, `{base}`, `{output}` substituted in its arguments, under a timeout,
//!    its standard output and error logged and kept ([`command`]);
//! 3. it checks what the command left in `OUTPUT` before anything is published
//!    ([`accept`]): safetensors become a new policy version with lineage, or a served
//!    model name (an HTTP policy's) is checked and recorded.
//!
//! An external update is made idempotent as the built-in one is: the version is published
//! atomically under the iteration's name, a version already there is taken as it is, and
//! a rerun after a crash starts the command again in fresh directories, so stale output
//! of an interrupted attempt is never applied.

pub mod accept;
pub mod command;
pub mod dataset;
pub mod parquet;
mod update;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use update::{BASE_WEIGHTS, FORMAT, Job, MANIFEST, Outcome, ServedJob, update, work_dir};

/// Which trainer an iteration's update runs on (`RunConfig::trainer`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TrainerChoice {
    /// surfgym's own trainer (`training`).
    #[default]
    Builtin,
    /// A command outside surfgym.
    External(ExternalTrainer),
}

impl TrainerChoice {
    /// Whether it is surfgym's own trainer.
    pub fn is_builtin(&self) -> bool {
        matches!(self, TrainerChoice::Builtin)
    }
}

/// An external trainer's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalTrainer {
    /// Program and arguments (no shell); `{input}`, `{base}`, `{output}` in an argument
    /// are replaced by those directories.
    pub command: Vec<String>,
    /// Which training-set files to write.
    #[serde(default)]
    pub format: Format,
    /// What the command gives back.
    #[serde(default)]
    pub returns: Returns,
    /// Seconds the command may run before it is killed (and the iteration fails).
    #[serde(default = "timeout_s")]
    pub timeout_s: u64,
    /// Extra environment variables for the command.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
}

/// The training set's files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// TRL's conversational JSON Lines (`train.jsonl`) with `images/`.
    Trl,
    /// verl's Parquet (`train.parquet`) with `images/`.
    Verl,
    /// Both.
    #[default]
    Both,
}

impl Format {
    /// Whether the JSON Lines file is written.
    pub fn jsonl(self) -> bool {
        matches!(self, Format::Trl | Format::Both)
    }
    /// Whether the Parquet file is written.
    pub fn parquet(self) -> bool {
        matches!(self, Format::Verl | Format::Both)
    }
}

/// What an external trainer gives back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Returns {
    /// `OUTPUT/weights.safetensors`: tensors keyed by ONNX initializer name (a new
    /// version of the ONNX policy).
    #[default]
    Safetensors,
    /// `OUTPUT/served_model.txt`: the model or LoRA adapter name an OpenAI-compatible
    /// server now serves the new weights under (an HTTP policy's next `model`).
    ServedModel,
}

fn timeout_s() -> u64 {
    6 * 3600
}

impl ExternalTrainer {
    /// Checks the settings, naming the bad field (under `trainer.`).
    pub fn validate(&self) -> Result<(), String> {
        match self.command.first() {
            None => return Err("trainer.command: must name a program".into()),
            Some(p) if p.trim().is_empty() => {
                return Err("trainer.command: the program must not be empty".into());
            }
            _ => {}
        }
        if self.timeout_s == 0 {
            return Err("trainer.timeout_s: must be at least 1".into());
        }
        if let Some(k) = self
            .env
            .keys()
            .find(|k| k.is_empty() || k.contains('=') || k.contains('\0'))
        {
            return Err(format!("trainer.env: {k:?} is not a variable name"));
        }
        Ok(())
    }

    /// The timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_s)
    }
}

/// The directories of one external update.
#[derive(Debug, Clone)]
pub struct Dirs {
    /// The training set (`SURFGYM_TRAIN_INPUT`).
    pub input: PathBuf,
    /// The version the update starts from (`SURFGYM_BASE_MODEL`).
    pub base: PathBuf,
    /// Where the command writes its result (`SURFGYM_TRAIN_OUTPUT`).
    pub output: PathBuf,
}

/// Why an external update failed; nothing was published.
#[derive(Debug, thiserror::Error)]
pub enum ExternalError {
    /// The training set could not be written.
    #[error("external trainer: writing the training set: {0}")]
    Dataset(String),
    /// The command could not be started.
    #[error("external trainer: cannot start {program:?}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The command failed.
    #[error("external trainer {program:?} exited with {status}; the end of its stderr: {tail}")]
    Exit {
        /// The program.
        program: String,
        /// Its exit status.
        status: String,
        /// Its last lines of standard error.
        tail: String,
    },
    /// The command ran past its timeout and was killed.
    #[error(
        "external trainer {program:?} ran past its timeout of {seconds} s and was killed (trainer.timeout_s)"
    )]
    Timeout {
        /// The program.
        program: String,
        /// The limit.
        seconds: u64,
    },
    /// What the command gave back is refused.
    #[error("external trainer's output {path}: {why}")]
    Output {
        /// The file (or directory) at fault.
        path: String,
        /// What is wrong, naming the tensor where one is at fault.
        why: String,
    },
    /// A file could not be read or written.
    #[error("external trainer: {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

impl ExternalError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::RunConfig;

    fn config(trainer: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "name": "ext", "model": "m", "train": {"ids": ["miniwob.click-test"]},
            "held_out": "seeds", "iterations": 1, "curriculum": {"kind": "tti"},
            "eval_horizon": 5, "trainer": trainer
        })
    }

    #[test]
    fn an_external_trainer_parses_with_defaults_and_the_builtin_is_left_out_of_the_stored_config() {
        let c = RunConfig::parse(
            &config(
                serde_json::json!({"kind": "external", "command": ["python", "t.py", "{input}"]}),
            )
            .to_string(),
        )
        .unwrap();
        let super::TrainerChoice::External(t) = &c.trainer else {
            panic!("not external: {:?}", c.trainer)
        };
        assert_eq!(
            (t.format, t.returns, t.timeout_s),
            (super::Format::Both, super::Returns::Safetensors, 6 * 3600)
        );
        // A run configured before trainers existed stores the same config as before.
        let mut plain = config(serde_json::json!({"kind": "builtin"}));
        let builtin = RunConfig::parse(&plain.to_string()).unwrap();
        assert!(builtin.trainer.is_builtin());
        assert!(
            serde_json::to_value(&builtin)
                .unwrap()
                .get("trainer")
                .is_none()
        );
        plain.as_object_mut().unwrap().remove("trainer");
        assert!(
            RunConfig::parse(&plain.to_string())
                .unwrap()
                .trainer
                .is_builtin()
        );
    }

    #[test]
    fn bad_external_trainers_name_the_field() {
        let cases = [
            (
                serde_json::json!({"kind": "external", "command": []}),
                "trainer.command",
            ),
            (
                serde_json::json!({"kind": "external", "command": [" "]}),
                "trainer.command",
            ),
            (
                serde_json::json!({"kind": "external", "command": ["t"], "timeout_s": 0}),
                "trainer.timeout_s",
            ),
            (
                serde_json::json!({"kind": "external", "command": ["t"], "env": {"A=B": "x"}}),
                "trainer.env",
            ),
            (
                serde_json::json!({"kind": "external", "command": ["t"], "returns": "served_model"}),
                "trainer.returns: served_model",
            ),
            (
                serde_json::json!({"kind": "external", "command": ["t"], "format": "csv"}),
                "unknown variant `csv`",
            ),
            (
                serde_json::json!({"kind": "external", "command": ["t"], "sneaky": 1}),
                "unknown field `sneaky`",
            ),
            (
                serde_json::json!({"kind": "deepspeed"}),
                "unknown variant `deepspeed`",
            ),
        ];
        for (trainer, want) in cases {
            let e = RunConfig::parse(&config(trainer.clone()).to_string()).unwrap_err();
            assert!(e.contains(want), "{trainer}: {e}");
        }
    }
}
