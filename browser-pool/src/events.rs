//! Things a page does on its own, reported in the next observation.
//!
//! Hostile or merely busy pages open dialogs, popups and downloads and try to leave the
//! allowed web; the session handles each (accepting or dismissing, denying, blocking) and
//! records it here so that the policy, the stored trace and the replay all see it.

use std::fmt;
use std::sync::{Arc, Mutex};

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

/// Events waiting for the next observation, shared between the session and its watchers.
#[derive(Debug, Clone, Default)]
pub(crate) struct EventLog {
    inner: Arc<Mutex<Vec<PageEvent>>>,
}

/// Events past this many between two observations are dropped: a storm must not grow
/// memory without bound.
const MAX_EVENTS: usize = 50;

impl EventLog {
    pub(crate) fn push(&self, event: PageEvent) {
        let mut events = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        // Repeats of the last dialog fold into it.
        if let (
            Some(PageEvent::Dialog {
                dialog,
                message,
                accepted,
                count,
            }),
            PageEvent::Dialog {
                dialog: d,
                message: m,
                accepted: a,
                ..
            },
        ) = (events.last_mut(), &event)
            && dialog == d
            && message == m
            && accepted == a
        {
            *count = count.saturating_add(1);
            return;
        }
        if events.len() < MAX_EVENTS {
            events.push(event);
        }
    }

    pub(crate) fn take(&self) -> Vec<PageEvent> {
        std::mem::take(&mut *self.inner.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(message: &str) -> PageEvent {
        PageEvent::Dialog {
            dialog: "alert".into(),
            message: message.into(),
            accepted: true,
            count: 1,
        }
    }

    #[test]
    fn a_storm_folds_into_one_event_and_the_log_is_bounded() {
        let log = EventLog::default();
        for _ in 0..1000 {
            log.push(alert("spam"));
        }
        log.push(alert("other"));
        for i in 0..200 {
            log.push(PageEvent::Blocked {
                url: format!("http://x/{i}"),
                reason: "deny list".into(),
            });
        }
        let events = log.take();
        assert_eq!(events.len(), MAX_EVENTS);
        assert!(matches!(&events[0], PageEvent::Dialog { count: 1000, .. }));
        assert!(events[0].to_string().contains("×1000"), "{}", events[0]);
        assert!(log.take().is_empty(), "taking empties the log");
    }

    #[test]
    fn events_serialize_with_a_kind_tag() {
        let v = serde_json::to_value(PageEvent::Download {
            url: "http://x/f.zip".into(),
            filename: "f.zip".into(),
        })
        .unwrap();
        assert_eq!(v["kind"], "download");
        let back: PageEvent = serde_json::from_value(v).unwrap();
        assert!(matches!(back, PageEvent::Download { .. }));
    }
}
