//! Politeness per domain, measured from the site's own log: under 32 sessions leased at
//! once on one domain, no more than the cap are ever active together and no second
//! carries more requests than the rate and burst allow; a 429 with `Retry-After` holds
//! the domain's next request until it has passed; robots.txt, read once per site through
//! the browser, refuses what it disallows for our agent before it is requested (a replay
//! asks it nothing).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use browser_pool::{Action, BrowserPool, Politeness, PoolConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The site's robots.txt: surfgym may go anywhere but `/secret`; any other robot nowhere.
const ROBOTS: &str = "User-agent: *\nDisallow: /\n\nUser-agent: surfgym\nDisallow: /secret\n";

/// When the site was asked for what (path and query).
type Log = Arc<Mutex<Vec<(Instant, String)>>>;

/// A site whose pages each load three images; `/busy` answers 429 with `Retry-After: 2`
/// the first time, then 200.
async fn site() -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let log = Log::default();
    let requests = log.clone();
    let busy = Arc::new(AtomicU32::new(0));
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let (requests, busy) = (requests.clone(), busy.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]);
                let target = req.split_whitespace().nth(1).unwrap_or("/").to_string();
                requests
                    .lock()
                    .unwrap()
                    .push((Instant::now(), target.clone()));
                let path = target.split('?').next().unwrap_or("/");
                let query = target.split_once('?').map_or("", |(_, q)| q);
                let (status, headers, kind, body) = match path {
                    "/page" => (
                        "200 OK",
                        "",
                        "text/html",
                        format!(
                            "<title>p</title>{}",
                            (0..3)
                                .map(|k| format!("<img src=\"/img?{query}&k={k}\">"))
                                .collect::<String>()
                        ),
                    ),
                    "/img" => (
                        "200 OK",
                        "",
                        "image/svg+xml",
                        "<svg xmlns=\"http://www.w3.org/2000/svg\"/>".into(),
                    ),
                    "/busy" if busy.fetch_add(1, Ordering::SeqCst) == 0 => (
                        "429 Too Many Requests",
                        "Retry-After: 2\r\n",
                        "text/html",
                        "<p>slow down</p>".into(),
                    ),
                    "/busy" => ("200 OK", "", "text/html", "<p>welcome</p>".into()),
                    "/robots.txt" => ("200 OK", "", "text/plain", ROBOTS.into()),
                    "/secret" => ("200 OK", "", "text/html", "<p>secret</p>".into()),
                    _ => ("404 Not Found", "", "text/html", String::new()),
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    (base, log)
}

fn config(politeness: Politeness) -> PoolConfig {
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.browsers = 2;
    cfg.contexts_per_browser = 16;
    cfg.politeness = politeness;
    cfg
}

/// The session named in a request's query (`s=N`).
fn session_of(target: &str) -> Option<u32> {
    target
        .split(['?', '&'])
        .find_map(|kv| kv.strip_prefix("s="))
        .and_then(|n| n.parse().ok())
}

#[tokio::test]
async fn thirty_two_sessions_on_one_domain_keep_to_its_session_cap_and_request_rate() {
    let (base, log) = site().await;
    let (cap, rate, burst) = (8usize, 40.0, 4u32);
    let pool = BrowserPool::launch(config(Politeness {
        contexts_per_domain: Some(cap as u32),
        requests_per_sec: Some(rate),
        burst,
        ..Politeness::none()
    }))
    .await
    .unwrap();
    let runs = (0..32u32).map(|s| {
        let (pool, base) = (pool.clone(), base.clone());
        async move {
            let url = format!("{base}/page?s={s}");
            let mut session = pool.lease_for(&url, None).await.unwrap();
            let r = session.act(&Action::Goto(url.clone())).await.unwrap();
            assert!(r.error.is_none(), "{:?}", r.error);
            let waited = session.politeness_wait();
            session.close().await;
            waited
        }
    });
    let waits = futures::future::join_all(runs).await;
    assert!(
        waits.iter().all(Option::is_some),
        "a capped pool reports each wait"
    );
    assert!(
        waits.iter().filter(|w| w.unwrap() > Duration::ZERO).count() >= 32 - cap,
        "all but the first {cap} waited for a slot: {waits:?}"
    );

    let log = log.lock().unwrap().clone();
    // Each session's activity, first to last request, from the site's side.
    let mut spans: std::collections::BTreeMap<u32, (Instant, Instant)> = Default::default();
    for (t, target) in &log {
        if let Some(s) = session_of(target) {
            let e = spans.entry(s).or_insert((*t, *t));
            e.0 = e.0.min(*t);
            e.1 = e.1.max(*t);
        }
    }
    assert_eq!(spans.len(), 32);
    let most_at_once = spans
        .values()
        .map(|(start, _)| {
            spans
                .values()
                .filter(|(a, b)| a <= start && start <= b)
                .count()
        })
        .max()
        .unwrap();
    assert!(
        most_at_once <= cap,
        "{most_at_once} sessions at once, cap {cap}"
    );
    assert!(most_at_once >= 2, "sessions did run side by side");
    // No window of one second holds more than the rate plus the burst.
    let times: Vec<Instant> = log.iter().map(|(t, _)| *t).collect();
    let busiest = times
        .iter()
        .map(|t0| {
            times
                .iter()
                .filter(|t| **t >= *t0 && **t < *t0 + Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap();
    assert!(
        busiest <= rate as usize + burst as usize,
        "{busiest} requests in one second, rate {rate} burst {burst}"
    );
    assert!(log.len() >= 32 * 4, "every page and image: {}", log.len());
    let stats = pool.stats().politeness;
    assert!(stats.context_waits >= (32 - cap) as u64, "{stats:?}");
    assert!(stats.request_waits > 0, "{stats:?}");
    pool.shutdown().await;
}

#[tokio::test]
async fn a_retry_after_holds_the_domains_next_request_until_it_has_passed() {
    let (base, log) = site().await;
    let pool = BrowserPool::launch(config(Politeness {
        contexts_per_domain: Some(8),
        ..Politeness::none()
    }))
    .await
    .unwrap();
    let mut session = pool.lease_for(&format!("{base}/busy"), None).await.unwrap();
    session
        .act(&Action::Goto(format!("{base}/busy")))
        .await
        .unwrap();
    let obs = session.observe().await.unwrap();
    assert_eq!(
        obs.signals.status,
        Some(429),
        "the observation reads the status"
    );
    // Another session on the domain is held too: the domain waits, not the session.
    let mut other = pool.lease_for(&format!("{base}/busy"), None).await.unwrap();
    other
        .act(&Action::Goto(format!("{base}/busy?again")))
        .await
        .unwrap();
    let obs = other.observe().await.unwrap();
    assert_eq!(obs.signals.status, Some(200));
    let log = log.lock().unwrap().clone();
    let busy: Vec<Instant> = log
        .iter()
        .filter(|(_, t)| t.starts_with("/busy"))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(busy.len(), 2, "{log:?}");
    let gap = busy[1] - busy[0];
    assert!(
        gap >= Duration::from_millis(1900),
        "asked again after {gap:?}"
    );
    assert_eq!(pool.stats().politeness.retry_afters, 1);
    session.close().await;
    other.close().await;
    pool.shutdown().await;
}

#[tokio::test]
async fn robots_txt_refuses_what_it_disallows_for_our_agent_and_is_read_once() {
    let (base, log) = site().await;
    let robots = |agent: &str| {
        config(Politeness {
            robots: Some(agent.into()),
            ..Politeness::none()
        })
    };
    let pool = BrowserPool::launch(robots("surfgym")).await.unwrap();
    let visit = |pool: BrowserPool, url: String| async move {
        let mut s = pool.lease_for(&url, None).await.unwrap();
        let r = s.act(&Action::Goto(url)).await.unwrap();
        let events = s.observe().await.unwrap().events;
        s.close().await;
        (r.error, events)
    };
    // Several sessions at once on the site: one robots.txt read between them.
    let pages = (0..4).map(|s| visit(pool.clone(), format!("{base}/page?s={s}")));
    for (error, _) in futures::future::join_all(pages).await {
        assert!(error.is_none(), "{error:?}");
    }
    let (error, events) = visit(pool.clone(), format!("{base}/secret")).await;
    let error = error.expect("refused");
    assert!(
        error.contains("robots.txt") && error.contains("/secret"),
        "{error}"
    );
    assert!(
        events.iter().any(|e| matches!(
            e,
            browser_pool::PageEvent::Blocked { url, reason } if url.ends_with("/secret") && reason.contains("robots.txt")
        )),
        "{events:?}"
    );
    let asked: Vec<String> = log.lock().unwrap().iter().map(|(_, t)| t.clone()).collect();
    assert_eq!(
        asked.iter().filter(|t| *t == "/robots.txt").count(),
        1,
        "{asked:?}"
    );
    assert!(!asked.iter().any(|t| t == "/secret"), "never requested");
    let stats = pool.stats().politeness;
    assert_eq!((stats.robots_fetches, stats.robots_refusals), (1, 1));
    pool.shutdown().await;

    // Another robot falls under `*`: nothing is allowed.
    let pool = BrowserPool::launch(robots("otherbot")).await.unwrap();
    let (error, _) = visit(pool.clone(), format!("{base}/page?s=9")).await;
    assert!(
        error.as_deref().is_some_and(|e| e.contains("Disallow: /")),
        "{error:?}"
    );
    assert!(!log.lock().unwrap().iter().any(|(_, t)| t == "/page?s=9"));
    pool.shutdown().await;
    // Without the check, the disallowed page loads; recorded, it replays in a pool that
    // checks: a replay is the web as it was, and asks no robots.txt of the network.
    let mut capture = config(Politeness::none());
    capture.capture_traffic = true;
    let pool = BrowserPool::launch(capture).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    s.record_traffic().unwrap();
    let r = s
        .act(&Action::Goto(format!("{base}/secret")))
        .await
        .unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
    let recording = std::sync::Arc::new(browser_pool::Recording::new(s.take_traffic()));
    s.close().await;
    pool.shutdown().await;
    let mut checking = robots("otherbot");
    checking.capture_traffic = true;
    let pool = BrowserPool::launch(checking).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    s.replay_traffic(recording, browser_pool::Unmatched::Fail)
        .unwrap();
    let r = s
        .act(&Action::Goto(format!("{base}/secret")))
        .await
        .unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(s.page_text().await.unwrap().contains("secret"));
    s.close().await;
    assert_eq!(pool.stats().politeness.robots_fetches, 0);
    pool.shutdown().await;
}
