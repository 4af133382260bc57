//! The pool's error type.
//!
//! Two families, kept apart on purpose: [`PoolError`] is an *infrastructure* failure
//! (browser died, CDP call timed out, no slot free) and must never be scored as an agent
//! failure; a failed *action* (element not found, bad URL) is not an error at all but an
//! [`crate::ActReport::error`] message shown to the policy in the next observation.

use std::time::Duration;

/// Infrastructure failures of the pool or of a leased session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// Chromium could not be started.
    #[error(
        "could not launch Chromium at {path}: {message} (install Debian's `chromium` package or set SURFGYM_CHROMIUM)"
    )]
    Launch {
        /// The executable that was tried.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A remote browser (`PoolConfig::remote`) could not be reached.
    #[error(
        "cannot reach the remote browser at {url}: {message} (is Chrome running there with --remote-debugging-port, and can this machine reach it?)"
    )]
    Remote {
        /// The address that was tried.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The pool's configuration is invalid; nothing was launched.
    #[error("invalid browser pool configuration: {0}")]
    Config(String),
    /// A CDP call did not answer in time; the browser or tab is probably hung.
    #[error("CDP call `{op}` timed out after {after:?}")]
    Timeout {
        /// The operation that hung.
        op: &'static str,
        /// The limit it ran into.
        after: Duration,
    },
    /// The browser process or its CDP connection is gone.
    #[error("browser connection lost during `{op}`: {message}")]
    BrowserGone {
        /// The operation that found out.
        op: &'static str,
        /// The underlying error.
        message: String,
    },
    /// Any other CDP protocol failure.
    #[error("CDP call `{op}` failed: {message}")]
    Cdp {
        /// The failing operation.
        op: &'static str,
        /// The underlying error.
        message: String,
    },
    /// The tab's renderer process crashed (killed, out of memory): the page is gone, the
    /// browser is fine.
    #[error("the page crashed during `{op}` (its renderer process died)")]
    TargetCrashed {
        /// The operation that found out.
        op: &'static str,
    },
    /// The page stayed unresponsive even after its scripts were terminated.
    #[error(
        "the page stopped responding during `{op}` (no answer after {after:?}, even after stopping its scripts)"
    )]
    PageUnresponsive {
        /// The operation that hung.
        op: &'static str,
        /// The limit it ran into.
        after: Duration,
    },
    /// No browser context became free within the lease timeout.
    #[error("no browser context free after {0:?}: raise the pool size or lower the concurrency")]
    LeaseTimeout(Duration),
    /// The pool was shut down.
    #[error("the browser pool is shut down")]
    Closed,
}

impl PoolError {
    /// A short stable label, for metrics and stored failure reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            PoolError::Launch { .. } => "launch",
            PoolError::Remote { .. } => "remote_unreachable",
            PoolError::Config(_) => "config",
            PoolError::Timeout { .. } => "cdp_timeout",
            PoolError::BrowserGone { .. } => "browser_gone",
            PoolError::Cdp { .. } => "cdp",
            PoolError::TargetCrashed { .. } => "target_crashed",
            PoolError::PageUnresponsive { .. } => "page_unresponsive",
            PoolError::LeaseTimeout(_) => "lease_timeout",
            PoolError::Closed => "closed",
        }
    }

    /// Whether the browser behind the session should be considered dead.
    pub fn browser_is_dead(&self) -> bool {
        matches!(
            self,
            PoolError::BrowserGone { .. } | PoolError::Timeout { .. }
        )
    }

    pub(crate) fn from_cdp(op: &'static str, err: chromiumoxide::error::CdpError) -> Self {
        use chromiumoxide::error::CdpError as E;
        match err {
            E::Ws(_) | E::Io(_) | E::NoResponse | E::ChannelSendError(_) => {
                PoolError::BrowserGone {
                    op,
                    message: err.to_string(),
                }
            }
            E::Timeout => PoolError::Timeout {
                op,
                after: Duration::from_secs(30),
            },
            other => PoolError::Cdp {
                op,
                message: other.to_string(),
            },
        }
    }
}
