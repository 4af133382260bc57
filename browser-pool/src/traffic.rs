//! Record and replay of web state: a session can record every exchange its pages make
//! (request, response, body; redirects as their own exchanges) or have every request
//! answered from a recording instead of the network, through the browser's `Fetch` gate
//! (`browser/gate.rs`). A pool captures traffic only when started with
//! [`PoolConfig::capture_traffic`](crate::PoolConfig::capture_traffic): each request then
//! costs a round trip at the gate.
//!
//! Matching a request to the recording:
//! - the method, exactly;
//! - the URL's scheme, host, port and path, exactly; its query parameters as a multiset,
//!   leaving out volatile ones (cache busters and timestamps: [`VOLATILE_PARAMS`], or the
//!   recording's own list); the fragment never counts;
//! - the body, exactly, for requests that have one.
//!
//! The n-th identical request gets the n-th recorded answer, and the last one after that.
//! A request the recording lacks is answered as [`Unmatched`] says and counted.

pub mod har;

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// One request and the response it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The URL asked for.
    pub url: String,
    /// The request's body, if it had one.
    pub request_body: Option<String>,
    /// The response's status.
    pub status: u16,
    /// Its reason phrase (may be empty).
    pub status_text: String,
    /// Its headers, in order.
    pub headers: Vec<(String, String)>,
    /// Its body (empty for a redirect).
    pub body: Vec<u8>,
}

impl Exchange {
    /// A header's value, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Query parameters left out of matching by default: cache busters and timestamps.
pub const VOLATILE_PARAMS: &[&str] = &[
    "_",
    "cb",
    "cachebust",
    "cache_bust",
    "nocache",
    "rnd",
    "rand",
    "random",
    "ts",
    "timestamp",
    "t",
];

/// What a replay does with a request its recording lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unmatched {
    /// Fail it as if the network were down (the default: nothing leaves the machine).
    #[default]
    Fail,
    /// Answer 404 with an empty body.
    NotFound,
    /// Let it go to the network.
    Network,
}

impl Unmatched {
    /// Parses `fail`, `not_found` or `network`.
    pub fn parse(s: &str) -> Option<Unmatched> {
        match s {
            "fail" => Some(Unmatched::Fail),
            "not_found" => Some(Unmatched::NotFound),
            "network" => Some(Unmatched::Network),
            _ => None,
        }
    }
}

/// What a request is matched by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    method: String,
    place: String,
    query: Vec<(String, String)>,
    body: Option<String>,
}

fn key(method: &str, url: &str, body: Option<&str>, volatile: &[String]) -> Key {
    let (place, query) = match url::Url::parse(url) {
        Ok(mut u) => {
            let mut query: Vec<(String, String)> = u
                .query_pairs()
                .filter(|(k, _)| !volatile.iter().any(|v| v == k))
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            query.sort();
            u.set_query(None);
            u.set_fragment(None);
            (u.to_string(), query)
        }
        Err(_) => (url.to_string(), Vec::new()),
    };
    Key {
        method: method.to_ascii_uppercase(),
        place,
        query,
        body: body.filter(|b| !b.is_empty()).map(str::to_string),
    }
}

/// Exchanges to answer requests from, indexed by what they match on.
#[derive(Debug, Default)]
pub struct Recording {
    exchanges: Vec<Exchange>,
    by_key: HashMap<Key, Vec<usize>>,
    volatile: Vec<String>,
}

impl Recording {
    /// A recording of `exchanges`, matching with the default volatile parameters.
    pub fn new(exchanges: Vec<Exchange>) -> Recording {
        Recording::with_volatile(
            exchanges,
            VOLATILE_PARAMS.iter().map(|s| s.to_string()).collect(),
        )
    }

    /// A recording of `exchanges` whose matching leaves out the query parameters named
    /// in `volatile`.
    pub fn with_volatile(exchanges: Vec<Exchange>, volatile: Vec<String>) -> Recording {
        let mut by_key: HashMap<Key, Vec<usize>> = HashMap::new();
        for (i, e) in exchanges.iter().enumerate() {
            let k = key(&e.method, &e.url, e.request_body.as_deref(), &volatile);
            by_key.entry(k).or_default().push(i);
        }
        Recording {
            exchanges,
            by_key,
            volatile,
        }
    }

    /// Its exchanges, in recorded order.
    pub fn exchanges(&self) -> &[Exchange] {
        &self.exchanges
    }

    /// The answer to the `nth` identical request (0-based), if recorded.
    fn answer(&self, k: &Key, nth: usize) -> Option<&Exchange> {
        let all = self.by_key.get(k)?;
        let i = all.get(nth).or(all.last())?;
        self.exchanges.get(*i)
    }
}

/// Unmatched URLs a session keeps (the count goes on past it).
const UNMATCHED_KEPT: usize = 50;

/// A session's traffic mode, shared with its browser's gate.
#[derive(Default)]
pub(crate) struct Traffic {
    mode: Mutex<Mode>,
    unmatched: AtomicU64,
    unmatched_urls: Mutex<Vec<String>>,
}

#[derive(Default)]
enum Mode {
    #[default]
    Off,
    Record(Vec<Exchange>),
    Replay {
        recording: std::sync::Arc<Recording>,
        unmatched: Unmatched,
        served: HashMap<Key, usize>,
    },
}

/// What the gate does with a request at its request stage.
pub(crate) enum Answer {
    /// Let it go.
    Continue,
    /// Answer it with this.
    Fulfill(Exchange),
    /// Fail it (unmatched in a replay).
    Fail,
    /// Answer 404 (unmatched in a replay).
    NotFound,
}

impl Traffic {
    fn lock(&self) -> std::sync::MutexGuard<'_, Mode> {
        self.mode.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn record(&self) {
        *self.lock() = Mode::Record(Vec::new());
    }

    pub(crate) fn replay(&self, recording: std::sync::Arc<Recording>, unmatched: Unmatched) {
        *self.lock() = Mode::Replay {
            recording,
            unmatched,
            served: HashMap::new(),
        };
    }

    /// Whether responses are being recorded.
    pub(crate) fn recording(&self) -> bool {
        matches!(*self.lock(), Mode::Record(_))
    }

    /// Whether requests are answered from a recording (the web as it was: no robots.txt
    /// is asked of the network then).
    pub(crate) fn replaying(&self) -> bool {
        matches!(*self.lock(), Mode::Replay { .. })
    }

    /// The exchanges recorded so far, taken (recording goes on).
    pub(crate) fn take(&self) -> Vec<Exchange> {
        match &mut *self.lock() {
            Mode::Record(v) => std::mem::take(v),
            _ => Vec::new(),
        }
    }

    pub(crate) fn push(&self, e: Exchange) {
        if let Mode::Record(v) = &mut *self.lock() {
            v.push(e);
        }
    }

    pub(crate) fn unmatched(&self) -> u64 {
        self.unmatched.load(Ordering::Relaxed)
    }

    /// The first unmatched requests' URLs.
    pub(crate) fn unmatched_urls(&self) -> Vec<String> {
        self.unmatched_urls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How to answer a request at its request stage.
    pub(crate) fn answer(&self, method: &str, url: &str, body: Option<&str>) -> Answer {
        let mut mode = self.lock();
        let Mode::Replay {
            recording,
            unmatched,
            served,
        } = &mut *mode
        else {
            return Answer::Continue;
        };
        let k = key(method, url, body, &recording.volatile);
        let nth = served.get(&k).copied().unwrap_or(0);
        if let Some(e) = recording.answer(&k, nth) {
            let e = e.clone();
            served.insert(k, nth + 1);
            return Answer::Fulfill(e);
        }
        self.unmatched.fetch_add(1, Ordering::Relaxed);
        let mut urls = self
            .unmatched_urls
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if urls.len() < UNMATCHED_KEPT {
            urls.push(url.to_string());
        }
        tracing::debug!(url, "a request the recording lacks");
        match unmatched {
            Unmatched::Fail => Answer::Fail,
            Unmatched::NotFound => Answer::NotFound,
            Unmatched::Network => Answer::Continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(method: &str, url: &str, body: Option<&str>, text: &str) -> Exchange {
        Exchange {
            method: method.into(),
            url: url.into(),
            request_body: body.map(Into::into),
            status: 200,
            status_text: "OK".into(),
            headers: vec![("Content-Type".into(), "text/html".into())],
            body: text.as_bytes().to_vec(),
        }
    }

    fn body_of(a: Answer) -> Option<String> {
        match a {
            Answer::Fulfill(e) => Some(String::from_utf8(e.body).unwrap()),
            _ => None,
        }
    }

    #[test]
    fn requests_match_by_method_url_and_body_without_volatile_parameters() {
        let t = Traffic::default();
        t.replay(
            std::sync::Arc::new(Recording::new(vec![
                ex("GET", "http://a.test/p?x=1&y=2&_=111#top", None, "page"),
                ex("POST", "http://a.test/form", Some("q=mug"), "mugs"),
                ex("POST", "http://a.test/form", Some("q=cup"), "cups"),
            ])),
            Unmatched::Fail,
        );
        // Parameters in another order, another cache buster, another fragment.
        assert_eq!(
            body_of(t.answer("get", "http://a.test/p?y=2&x=1&_=999#end", None)).as_deref(),
            Some("page")
        );
        assert_eq!(
            body_of(t.answer("POST", "http://a.test/form", Some("q=cup"))).as_deref(),
            Some("cups")
        );
        assert!(matches!(
            t.answer("POST", "http://a.test/form", Some("q=pen")),
            Answer::Fail
        ));
        assert!(matches!(
            t.answer("GET", "http://a.test/p?x=2&y=2", None),
            Answer::Fail
        ));
        assert!(matches!(
            t.answer("GET", "http://b.test/p?x=1&y=2", None),
            Answer::Fail
        ));
        assert_eq!(t.unmatched(), 3);
    }

    #[test]
    fn repeats_are_answered_in_recorded_order_then_the_last_again() {
        let t = Traffic::default();
        t.replay(
            std::sync::Arc::new(Recording::new(vec![
                ex("GET", "http://a.test/n", None, "1"),
                ex("GET", "http://a.test/n", None, "2"),
            ])),
            Unmatched::NotFound,
        );
        let got: Vec<_> = (0..3)
            .map(|_| body_of(t.answer("GET", "http://a.test/n", None)).unwrap())
            .collect();
        assert_eq!(got, ["1", "2", "2"]);
        assert!(matches!(
            t.answer("GET", "http://a.test/m", None),
            Answer::NotFound
        ));
    }

    #[test]
    fn recording_keeps_exchanges_until_taken_and_only_when_on() {
        let t = Traffic::default();
        t.push(ex("GET", "http://a.test/", None, "x"));
        assert!(t.take().is_empty(), "off: nothing kept");
        assert!(matches!(
            t.answer("GET", "http://a.test/", None),
            Answer::Continue
        ));
        t.record();
        assert!(t.recording());
        t.push(ex("GET", "http://a.test/", None, "x"));
        assert_eq!(t.take().len(), 1);
        assert!(t.take().is_empty());
        assert_eq!(Unmatched::parse("not_found"), Some(Unmatched::NotFound));
        assert_eq!(Unmatched::parse("drop"), None);
    }
}
