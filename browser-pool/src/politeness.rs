//! Politeness per domain, so that many contexts on one site are not a denial of service:
//! a cap on the sessions open on a domain at once (a lease names the domain it starts
//! on), a token bucket on the requests of every page to a domain (the browser's own
//! `Fetch` gate holds each request until its domain has a token, see `browser/gate.rs`),
//! and a domain's `Retry-After` (on a 429 or 503 document) honoured by holding its
//! requests until then. Per process: workers on other machines keep their own counts.
//!
//! With a robots.txt agent set, every document a session's page loads is checked against
//! its origin's robots.txt first (`robots`), fetched once through the browser itself.
//!
//! A domain is a URL's host, lower-cased, without its port.

pub(crate) mod robots;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The politeness settings of a pool; the default is none (nothing waits).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Politeness {
    /// Sessions open at once per domain (the domain a lease starts on).
    pub contexts_per_domain: Option<u32>,
    /// Requests per second per domain, every resource type, in all contexts together.
    pub requests_per_sec: Option<f64>,
    /// Requests a domain may get at once before the rate applies (the bucket's size).
    pub burst: u32,
    /// The longest `Retry-After` honoured; a longer one is cut to it.
    pub max_retry_after: Duration,
    /// Check every document against its site's robots.txt, as the robot with this
    /// product token (`surfgym`); None: no check.
    pub robots: Option<String>,
}

impl Politeness {
    /// No limits, `Retry-After` honoured up to 10 minutes.
    pub fn none() -> Politeness {
        Politeness {
            max_retry_after: Duration::from_secs(600),
            ..Default::default()
        }
    }

    /// Whether any limit is set (then the browsers' gates also read documents' answers
    /// for `Retry-After`).
    pub fn is_on(&self) -> bool {
        self.contexts_per_domain.is_some()
            || self.requests_per_sec.is_some()
            || self.robots.is_some()
    }

    /// Whether a browser's gate must see every request (a rate to keep).
    pub(crate) fn gates_requests(&self) -> bool {
        self.requests_per_sec.is_some()
    }

    /// Settings out of range, by field.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.contexts_per_domain == Some(0) {
            out.push(("contexts_per_domain", "must be at least 1".into()));
        }
        if let Some(r) = self.requests_per_sec
            && !(r.is_finite() && r > 0.0 && r <= 10_000.0)
        {
            out.push((
                "requests_per_sec",
                format!("must be in (0, 10000], not {r}"),
            ));
        }
        if self.burst > 10_000 {
            out.push(("burst", "at most 10000".into()));
        }
        if let Some(agent) = &self.robots
            && (agent.is_empty()
                || agent.len() > 64
                || !agent
                    .chars()
                    .all(|c| c.is_ascii_alphabetic() || c == '_' || c == '-'))
        {
            out.push((
                "robots",
                "the robots.txt agent must be 1-64 letters, '_' or '-' (a product token)".into(),
            ));
        }
        out
    }
}

/// A domain's state: its open sessions' permits, its token bucket, its `Retry-After`.
struct Domain {
    contexts: Option<Arc<Semaphore>>,
    tokens: f64,
    refilled: Instant,
    paused_until: Option<Instant>,
}

/// Totals of what politeness made wait, for `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PolitenessStats {
    /// Leases that waited for a domain's session cap.
    pub context_waits: u64,
    /// Their wait, ms.
    pub context_wait_ms: u64,
    /// Requests held for a domain's rate or `Retry-After`.
    pub request_waits: u64,
    /// Their wait, ms.
    pub request_wait_ms: u64,
    /// `Retry-After` answers honoured.
    pub retry_afters: u64,
    /// robots.txt files fetched.
    pub robots_fetches: u64,
    /// Documents refused by a robots.txt.
    pub robots_refusals: u64,
}

/// Every domain's state, shared by the pool's leases and its browsers' gates.
pub(crate) struct Domains {
    cfg: Politeness,
    map: Mutex<HashMap<String, Domain>>,
    context_waits: AtomicU64,
    context_wait_ms: AtomicU64,
    request_waits: AtomicU64,
    request_wait_ms: AtomicU64,
    retry_afters: AtomicU64,
    robots: Option<robots::RobotsCache>,
    robots_fetches: AtomicU64,
    robots_refusals: AtomicU64,
}

/// A domain's session slot, held for as long as the session lives.
pub struct DomainPermit {
    permit: Option<OwnedSemaphorePermit>,
}

impl DomainPermit {
    /// Whether a cap stands behind it (else it holds nothing).
    pub fn caps(&self) -> bool {
        self.permit.is_some()
    }
}

/// The domain of `url`, if it has a host.
pub fn domain_of(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    Some(u.host_str()?.trim_end_matches('.').to_ascii_lowercase())
}

impl Domains {
    pub(crate) fn new(cfg: Politeness) -> Domains {
        Domains {
            map: Mutex::default(),
            context_waits: AtomicU64::new(0),
            context_wait_ms: AtomicU64::new(0),
            request_waits: AtomicU64::new(0),
            request_wait_ms: AtomicU64::new(0),
            retry_afters: AtomicU64::new(0),
            robots: cfg.robots.as_deref().map(robots::RobotsCache::new),
            robots_fetches: AtomicU64::new(0),
            robots_refusals: AtomicU64::new(0),
            cfg,
        }
    }

    /// Whether documents are checked against robots.txt.
    pub(crate) fn checks_robots(&self) -> bool {
        self.robots.is_some()
    }

    /// `Err(why)` when `url`'s robots.txt forbids it; `fetch` reads a robots.txt URL
    /// (called at most once per origin and day, however many ask at once).
    pub(crate) async fn robots_allow<F, Fut>(&self, url: &str, fetch: F) -> Result<(), String>
    where
        F: FnOnce(String) -> Fut,
        Fut: std::future::Future<Output = robots::Fetched>,
    {
        let (Some(cache), Some((origin, path))) = (&self.robots, robots::split(url)) else {
            return Ok(());
        };
        let (rules, fetched) = cache
            .rules(&origin, fetch(format!("{origin}/robots.txt")))
            .await;
        if fetched {
            self.robots_fetches.fetch_add(1, Ordering::Relaxed);
        }
        let verdict = rules.check(&path);
        if verdict.is_err() {
            self.robots_refusals.fetch_add(1, Ordering::Relaxed);
        }
        verdict
    }

    pub(crate) fn config(&self) -> &Politeness {
        &self.cfg
    }

    fn with<T>(&self, domain: &str, f: impl FnOnce(&mut Domain) -> T) -> T {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let d = map.entry(domain.to_string()).or_insert_with(|| Domain {
            contexts: self
                .cfg
                .contexts_per_domain
                .map(|n| Arc::new(Semaphore::new(n as usize))),
            tokens: self.cfg.burst.max(1) as f64,
            refilled: Instant::now(),
            paused_until: None,
        });
        f(d)
    }

    /// Waits for a session slot on `url`'s domain; returns it and how long it waited.
    pub(crate) async fn context(&self, url: &str) -> (DomainPermit, Duration) {
        let sem = domain_of(url).and_then(|d| self.with(&d, |d| d.contexts.clone()));
        let Some(sem) = sem else {
            return (DomainPermit { permit: None }, Duration::ZERO);
        };
        if let Ok(p) = sem.clone().try_acquire_owned() {
            return (DomainPermit { permit: Some(p) }, Duration::ZERO);
        }
        let t0 = Instant::now();
        let permit = sem.acquire_owned().await.ok();
        let waited = t0.elapsed();
        self.context_waits.fetch_add(1, Ordering::Relaxed);
        self.context_wait_ms
            .fetch_add(waited.as_millis() as u64, Ordering::Relaxed);
        (DomainPermit { permit }, waited)
    }

    /// How long a request to `domain` must wait now (its token is taken: the caller waits
    /// this long and then sends it).
    fn reserve(&self, domain: &str, now: Instant) -> Duration {
        let rate = self.cfg.requests_per_sec;
        let burst = self.cfg.burst.max(1) as f64;
        self.with(domain, |d| {
            let start = d.paused_until.filter(|p| *p > now).unwrap_or(now);
            let Some(rate) = rate else {
                return start - now;
            };
            // Refill up to `start`, then take a token; a deficit is paid in time.
            if start > d.refilled {
                let gained = (start - d.refilled).as_secs_f64() * rate;
                d.tokens = (d.tokens + gained).min(burst);
                d.refilled = start;
            }
            d.tokens -= 1.0;
            let behind = if d.tokens >= 0.0 {
                Duration::ZERO
            } else {
                Duration::from_secs_f64(-d.tokens / rate)
            };
            (start - now) + behind
        })
    }

    /// Holds a request to `url` until its domain allows it; returns the wait.
    pub(crate) async fn request(&self, url: &str) -> Duration {
        let Some(domain) = domain_of(url) else {
            return Duration::ZERO;
        };
        let wait = self.reserve(&domain, Instant::now());
        if !wait.is_zero() {
            self.request_waits.fetch_add(1, Ordering::Relaxed);
            self.request_wait_ms
                .fetch_add(wait.as_millis() as u64, Ordering::Relaxed);
            tokio::time::sleep(wait).await;
        }
        wait
    }

    /// A `Retry-After` from `url`'s domain: its requests wait until then (capped).
    pub(crate) fn retry_after(&self, url: &str, after: Duration) {
        let Some(domain) = domain_of(url) else {
            return;
        };
        let until = Instant::now() + after.min(self.cfg.max_retry_after);
        self.retry_afters.fetch_add(1, Ordering::Relaxed);
        tracing::info!(domain, secs = after.as_secs_f64(), "honouring Retry-After");
        self.with(&domain, |d| {
            d.paused_until = Some(d.paused_until.map_or(until, |p| p.max(until)));
        });
    }

    pub(crate) fn stats(&self) -> PolitenessStats {
        PolitenessStats {
            context_waits: self.context_waits.load(Ordering::Relaxed),
            context_wait_ms: self.context_wait_ms.load(Ordering::Relaxed),
            request_waits: self.request_waits.load(Ordering::Relaxed),
            request_wait_ms: self.request_wait_ms.load(Ordering::Relaxed),
            retry_afters: self.retry_afters.load(Ordering::Relaxed),
            robots_fetches: self.robots_fetches.load(Ordering::Relaxed),
            robots_refusals: self.robots_refusals.load(Ordering::Relaxed),
        }
    }
}

/// A `Retry-After` header's delay: seconds, or an HTTP date (RFC 7231).
pub(crate) fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domains(rate: Option<f64>, burst: u32) -> Domains {
        Domains::new(Politeness {
            requests_per_sec: rate,
            burst,
            ..Politeness::none()
        })
    }

    #[test]
    fn the_bucket_lets_a_burst_through_then_spaces_requests_at_the_rate() {
        let d = domains(Some(10.0), 3);
        let now = Instant::now();
        let waits: Vec<u128> = (0..6)
            .map(|_| d.reserve("a.example", now).as_millis())
            .collect();
        assert_eq!(waits[..3], [0, 0, 0], "the burst");
        assert_eq!(waits[3..], [100, 200, 300], "then one per 100 ms");
        assert_eq!(d.reserve("b.example", now), Duration::ZERO, "domains apart");
        // A second later the bucket has refilled to its size, no more.
        let later = now + Duration::from_secs(2);
        let waits: Vec<u128> = (0..4)
            .map(|_| d.reserve("a.example", later).as_millis())
            .collect();
        assert_eq!(waits, [0, 0, 0, 100]);
    }

    #[test]
    fn retry_after_holds_a_domain_and_only_it() {
        let d = domains(None, 0);
        d.retry_after("http://a.example:8080/x", Duration::from_secs(5));
        let now = Instant::now();
        let w = d.reserve("a.example", now);
        assert!(
            w > Duration::from_millis(4900) && w <= Duration::from_secs(5),
            "{w:?}"
        );
        assert_eq!(d.reserve("b.example", now), Duration::ZERO);
        // Capped at the longest honoured.
        let capped = Domains::new(Politeness {
            max_retry_after: Duration::from_secs(1),
            ..Politeness::none()
        });
        capped.retry_after("http://a.example/", Duration::from_secs(3600));
        assert!(capped.reserve("a.example", Instant::now()) <= Duration::from_secs(1));
        assert_eq!(d.stats().retry_afters, 1);
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(
            parse_retry_after(" 30 ", now),
            Some(Duration::from_secs(30))
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(90));
        assert_eq!(parse_retry_after(&date, now), Some(Duration::from_secs(90)));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(
            domain_of("http://WWW.Shop.example.:81/a"),
            Some("www.shop.example".into())
        );
        assert_eq!(domain_of("about:blank"), None);
    }

    #[test]
    fn bad_settings_name_their_field() {
        let p = Politeness {
            contexts_per_domain: Some(0),
            requests_per_sec: Some(-1.0),
            ..Politeness::none()
        };
        let fields: Vec<_> = p.problems().into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["contexts_per_domain", "requests_per_sec"]);
        assert!(Politeness::none().problems().is_empty());
    }

    #[tokio::test]
    async fn the_session_cap_makes_the_next_lease_wait_for_a_slot() {
        let d = Arc::new(Domains::new(Politeness {
            contexts_per_domain: Some(1),
            ..Politeness::none()
        }));
        let (first, waited) = d.context("http://a.example/").await;
        assert_eq!(waited, Duration::ZERO);
        let (_other, waited) = d.context("http://b.example/").await;
        assert_eq!(waited, Duration::ZERO, "another domain has its own");
        let d2 = d.clone();
        let second = tokio::spawn(async move { d2.context("http://a.example/y").await.1 });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!second.is_finished());
        drop(first);
        let waited = second.await.unwrap();
        assert!(waited >= Duration::from_millis(150), "{waited:?}");
        assert_eq!(d.stats().context_waits, 1);
    }
}
