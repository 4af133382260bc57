//! Things a page does on its own, as the next observation reports them (the session that
//! notices them lives in `browser-pool`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// One thing that happened in the session between two observations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PageEvent {
    /// A JavaScript dialog (`alert`, `confirm`, `prompt`, `beforeunload`) was answered.
    Dialog {
        /// Dialog type.
        dialog: String,
        /// Its message.
        message: String,
        /// Accepted (true) or dismissed (false), per the pool's dialog policy.
        accepted: bool,
        /// How many identical dialogs in a row (an alert storm is one event).
        count: u32,
    },
    /// The page opened a tab (a popup, a `target=_blank` link).
    TabOpened {
        /// Its number in the tab list.
        tab: u32,
        /// The URL it opened.
        url: String,
    },
    /// The page closed one of its tabs (`window.close()`).
    TabClosed {
        /// The number it had.
        tab: u32,
    },
    /// A download was refused (downloads are always denied).
    Download {
        /// What the page tried to download.
        url: String,
        /// The file name it suggested.
        filename: String,
    },
    /// A navigation or request was blocked by the URL policy or scheme rules.
    Blocked {
        /// The refused URL.
        url: String,
        /// Which rule refused it.
        reason: String,
    },
    /// A script ran too long and was terminated so the page could be observed.
    ScriptStopped {
        /// The operation that found the page unresponsive.
        during: String,
    },
    /// A navigation the page started (a link, a form) got no answer within the pool's
    /// navigation timeout and was stopped: the page stays on the document it was leaving.
    NavigationStopped {
        /// Where it was going.
        url: String,
        /// How long it had been waiting, in milliseconds.
        after_ms: u64,
    },
}

impl fmt::Display for PageEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PageEvent::Dialog {
                dialog,
                message,
                accepted,
                count,
            } => {
                let verb = if *accepted { "accepted" } else { "dismissed" };
                write!(f, "the page showed a {dialog} dialog ({verb}): {message:?}")?;
                if *count > 1 {
                    write!(f, " ×{count}")?;
                }
                Ok(())
            }
            PageEvent::TabOpened { tab, url } => {
                write!(
                    f,
                    "the page opened tab {tab} ({url}); it is now the active tab"
                )
            }
            PageEvent::TabClosed { tab } => write!(f, "the page closed tab {tab}"),
            PageEvent::Download { url, filename } => {
                write!(f, "a download of {filename:?} ({url}) was refused")
            }
            PageEvent::Blocked { url, reason } => write!(f, "{url} was blocked: {reason}"),
            PageEvent::ScriptStopped { during } => write!(
                f,
                "a page script ran too long and was stopped (during {during})"
            ),
            PageEvent::NavigationStopped { url, after_ms } => write!(
                f,
                "{url} did not answer within {:.1} s; loading it was stopped and the page stayed where it was",
                *after_ms as f64 / 1000.0
            ),
        }
    }
}
