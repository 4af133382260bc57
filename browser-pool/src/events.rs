//! Things a page does on its own, reported in the next observation.
//!
//! Hostile or merely busy pages open dialogs, popups and downloads and try to leave the
//! allowed web; the session handles each (accepting or dismissing, denying, blocking) and
//! records it here so that the policy, the stored trace and the replay all see it.

use std::sync::{Arc, Mutex};

pub use spaces::PageEvent;

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

    /// Why the gate refused `url`, when it did since the last observation.
    pub(crate) fn refusal_of(&self, url: &str) -> Option<String> {
        let events = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        events.iter().rev().find_map(|e| match e {
            PageEvent::Blocked { url: u, reason } if u == url => Some(reason.clone()),
            _ => None,
        })
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
