//! Record and replay of web state in real Chromium: a session records a site's pages (a
//! script, a fetch with a cache buster, an image, a link followed); the site then changes
//! and its server stops; a session replaying the recording sees the recorded state, with
//! the same element lists and page text at every step, and a request the recording lacks
//! is failed and counted. The recording survives a round trip through HAR, and a HAR
//! written by hand in Playwright's layout replays too.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use browser_pool::{
    Action, BrowserPool, Exchange, PoolConfig, Recording, Session, Target, Unmatched, from_har,
    to_har,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A shop whose every answer names its version; returns its base URL, the version to
/// change and the server's task (abort it to stop the site).
async fn shop() -> (String, Arc<AtomicU32>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let version = Arc::new(AtomicU32::new(1));
    let v = version.clone();
    let server = tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let v = v.load(Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]);
                let target = req.split_whitespace().nth(1).unwrap_or("/").to_string();
                let path = target.split('?').next().unwrap_or("/");
                let (kind, body) = match path {
                    "/shop" => (
                        "text/html",
                        format!(
                            "<title>Shop v{v}</title><h1>Mugs, edition {v}</h1>\
                             <p>Price: <span id=price>?</span></p>\
                             <img src=\"/logo.svg?cb={v}{v}\" width=20 height=20>\
                             <a id=item href=\"/item?id=7\">Blue mug v{v}</a>\
                             <script src=\"/app.js\"></script>"
                        ),
                    ),
                    "/app.js" => (
                        "text/javascript",
                        "fetch('/api/price?_=' + Date.now()).then(r => r.text())\
                         .then(t => { document.getElementById('price').textContent = t; });"
                            .to_string(),
                    ),
                    "/api/price" => ("text/plain", format!("{} EUR", v * 10)),
                    "/logo.svg" => (
                        "image/svg+xml",
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"20\" height=\"20\"/>"
                            .to_string(),
                    ),
                    "/item" => (
                        "text/html",
                        format!(
                            "<title>Item</title><p>Blue mug, edition {v}</p><button>Buy v{v}</button>"
                        ),
                    ),
                    _ => ("text/html", "<p>elsewhere</p>".to_string()),
                };
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    (base, version, server)
}

async fn pool() -> BrowserPool {
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.capture_traffic = true;
    BrowserPool::launch(cfg).await.unwrap()
}

/// What a step shows: its element list and its page text.
async fn seen(s: &mut Session) -> (Vec<String>, String) {
    let obs = s.observe().await.unwrap();
    let lines = obs.elements.iter().map(|e| e.line()).collect();
    (lines, s.page_text().await.unwrap())
}

/// The shop's walk: its page, then the item behind its link.
async fn walk(s: &mut Session, base: &str) -> Vec<(Vec<String>, String)> {
    let r = s.act(&Action::Goto(format!("{base}/shop"))).await.unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
    let mut steps = vec![seen(s).await];
    let r = s
        .act(&Action::Click(Target::Selector("#item".into())))
        .await
        .unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
    steps.push(seen(s).await);
    steps
}

#[tokio::test]
async fn a_replay_shows_the_recorded_site_after_it_changed_and_stopped() {
    let (base, version, server) = shop().await;
    let pool = pool().await;

    let mut rec = pool.lease().await.unwrap();
    rec.record_traffic().unwrap();
    let recorded = walk(&mut rec, &base).await;
    let exchanges = rec.take_traffic();
    rec.close().await;
    assert!(
        recorded[0].1.contains("10 EUR"),
        "the fetch ran: {}",
        recorded[0].1
    );
    assert!(recorded[1].1.contains("edition 1"));
    let urls: Vec<&str> = exchanges.iter().map(|e| e.url.as_str()).collect();
    for path in [
        "/shop",
        "/app.js",
        "/api/price?_=",
        "/logo.svg?cb=11",
        "/item?id=7",
    ] {
        assert!(urls.iter().any(|u| u.contains(path)), "{path} in {urls:?}");
    }

    // The site moves on, then goes away.
    version.store(2, Ordering::SeqCst);
    server.abort();
    let _ = server.await;

    let recording = Arc::new(Recording::new(exchanges.clone()));
    let mut play = pool.lease().await.unwrap();
    play.replay_traffic(recording.clone(), Unmatched::Fail)
        .unwrap();
    let replayed = walk(&mut play, &base).await;
    assert_eq!(
        replayed, recorded,
        "the same elements and text at every step"
    );
    assert_eq!(
        play.unmatched_requests(),
        0,
        "the fetch's new cache buster matched"
    );
    // A page the recording lacks: failed as if offline, and counted.
    let r = play
        .act(&Action::Goto(format!("{base}/elsewhere")))
        .await
        .unwrap();
    assert!(r.error.is_some(), "not in the recording");
    assert!(play.unmatched_requests() >= 1);
    play.close().await;

    // Through HAR and back: the same replay.
    let har = to_har(&exchanges, "surfgym");
    let back = from_har(&serde_json::from_str(&har.to_string()).unwrap()).unwrap();
    assert_eq!(back, exchanges);
    let mut again = pool.lease().await.unwrap();
    again
        .replay_traffic(Arc::new(Recording::new(back)), Unmatched::NotFound)
        .unwrap();
    assert_eq!(walk(&mut again, &base).await, recorded);
    let r = again
        .act(&Action::Goto(format!("{base}/elsewhere")))
        .await
        .unwrap();
    assert!(r.error.is_none(), "a 404 is a page: {:?}", r.error);
    assert_eq!(again.observe().await.unwrap().signals.status, Some(404));
    again.close().await;
    pool.shutdown().await;
}

/// A HAR as Playwright's `record_har_path` writes it (content embedded), for a host with
/// no server at all.
const PLAYWRIGHT_HAR: &str = r#"{"log": {"version": "1.2",
  "creator": {"name": "Playwright", "version": "1.48.0"},
  "browser": {"name": "chromium", "version": "130.0.6723.31"},
  "pages": [{"startedDateTime": "2026-11-01T10:00:00.000Z", "id": "page@1", "title": "Docs", "pageTimings": {"onContentLoad": 40, "onLoad": 45}}],
  "entries": [
    {"startedDateTime": "2026-11-01T10:00:00.000Z", "time": 12.5, "pageref": "page@1", "_frameref": "frame@1",
     "request": {"method": "GET", "url": "http://docs.har.test/start", "httpVersion": "HTTP/1.1", "cookies": [],
       "headers": [{"name": "Accept", "value": "text/html"}], "queryString": [], "headersSize": -1, "bodySize": 0},
     "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [],
       "headers": [{"name": "Content-Type", "value": "text/html; charset=utf-8"}],
       "content": {"size": 86, "mimeType": "text/html; charset=utf-8", "text": "<title>Docs</title><p>Recorded by Playwright</p><img src=\"/dot.png\"><a href=\"/next\">Next</a>"},
       "headersSize": -1, "bodySize": -1, "redirectURL": "", "_transferSize": -1},
     "cache": {}, "timings": {"dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 10, "receive": 2.5}},
    {"startedDateTime": "2026-11-01T10:00:00.020Z", "time": 3, "pageref": "page@1",
     "request": {"method": "GET", "url": "http://docs.har.test/dot.png", "httpVersion": "HTTP/1.1", "cookies": [], "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0},
     "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [],
       "headers": [{"name": "Content-Type", "value": "image/png"}],
       "content": {"size": 68, "mimeType": "image/png", "encoding": "base64", "text": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="},
       "headersSize": -1, "bodySize": -1, "redirectURL": ""},
     "cache": {}, "timings": {"send": 0, "wait": 2, "receive": 1}}
  ]}}"#;

#[tokio::test]
async fn a_har_written_by_playwright_replays() {
    let exchanges: Vec<Exchange> =
        from_har(&serde_json::from_str(PLAYWRIGHT_HAR).unwrap()).unwrap();
    assert_eq!(exchanges.len(), 2);
    assert_eq!(&exchanges[1].body[1..4], b"PNG");
    let pool = pool().await;
    let mut s = pool.lease().await.unwrap();
    s.replay_traffic(Arc::new(Recording::new(exchanges)), Unmatched::Fail)
        .unwrap();
    let r = s
        .act(&Action::Goto("http://docs.har.test/start".into()))
        .await
        .unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
    let obs = s.observe().await.unwrap();
    assert_eq!(obs.title, "Docs");
    assert!(obs.elements.iter().any(|e| e.label == "Next"));
    assert!(
        s.page_text()
            .await
            .unwrap()
            .contains("Recorded by Playwright")
    );
    // Chromium's own favicon request may be missing from the HAR; the page's are not.
    let missed = s.unmatched_urls();
    assert!(
        missed.iter().all(|u| u.ends_with("/favicon.ico")),
        "the image came from the HAR too: {missed:?}"
    );
    s.close().await;
    pool.shutdown().await;
}
