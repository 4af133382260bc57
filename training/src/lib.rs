//! The trainer: turns judged traces into new weights for the policy that produced them.
//!
//! It trains the decoder the ONNX policy runs, read from the same files under the same
//! initializer names ([`decoder`]), computes the policy's own log-probabilities of stored
//! actions, applies an objective (filtered behaviour cloning, GRPO) with AdamW, and
//! publishes the result as a policy version: the base model's files plus the trained
//! tensors, keyed by ONNX name, which ONNX Runtime puts over the base graph when it loads
//! the version.
//!
//! This crate owns gradients, optimiser state and the version directory's format. It must
//! never know browsers, the database, HTTP or rubrics: samples come in as plain data.
#![deny(missing_docs)]

pub mod agreement;
pub mod bench;
pub mod decoder;
pub mod device;
pub mod guard;
pub mod lora;
pub mod objective;
mod ops;
pub mod optim;
pub mod sample;
pub mod select;
pub mod shared_prompts;
pub mod trainer;
pub mod version;

pub use device::{DeviceError, Precision, TrainDevice, device_name, dtype_name, parse_device};
pub use guard::{Guard, GuardReport, Health};
pub use objective::{GrpoConfig, Objective, Regularization};
pub use optim::{AdamWConfig, Schedule};
pub use sample::Sample;
pub use trainer::{TrainConfig, Trainer, UpdateReport};

use std::path::Path;

/// Everything that can go wrong while training.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The model files are not what the trainer can train.
    #[error("{0}")]
    Model(String),
    /// A sample or batch is inconsistent.
    #[error("{0}")]
    Input(String),
    /// A published version is unusable.
    #[error("{0}")]
    Version(String),
    /// The ONNX file could not be parsed.
    #[error(transparent)]
    Onnx(#[from] inference::onnx_file::OnnxFileError),
    /// A version does not fit its base.
    #[error(transparent)]
    BadVersion(#[from] inference::version::VersionError),
    /// The tensor engine failed.
    #[error("tensor error: {0}")]
    Tensor(#[from] candle_core::Error),
}

impl TrainError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
