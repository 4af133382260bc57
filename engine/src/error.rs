//! The engine's error type.

use browser_pool::PoolError;
use tasks::FieldError;

use store::StoreError;

/// Engine failures, by what the caller should do about them.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request is invalid; every problem names its field.
    #[error("invalid request: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<FieldError>),
    /// The named thing does not exist.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The request conflicts with stored state.
    #[error("{0}")]
    Conflict(String),
    /// The database failed.
    #[error(transparent)]
    Store(StoreError),
    /// The browser pool failed.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// A bug or an inconsistent state.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> EngineError {
        match e {
            StoreError::Conflict(m) => EngineError::Conflict(m),
            other => EngineError::Store(other),
        }
    }
}

impl EngineError {
    /// A short stable label (API `error_type`, metrics).
    pub fn kind(&self) -> &'static str {
        match self {
            EngineError::Invalid(_) => "invalid_request",
            EngineError::NotFound(_) => "not_found",
            EngineError::Conflict(_) => "conflict",
            EngineError::Store(_) => "store",
            EngineError::Pool(_) => "browser_pool",
            EngineError::Internal(_) => "internal",
        }
    }
}
