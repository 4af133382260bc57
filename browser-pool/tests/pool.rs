//! Real Chromium, real pages served on loopback: every action, isolation between
//! sessions, dialogs, and recovery from a killed browser.

use std::time::{Duration, Instant};

use browser_pool::{Action, BrowserPool, PoolConfig, PoolError, parse_action};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const INDEX: &str = r#"<!doctype html><html><head><title>Test shop</title></head><body>
<h1 id="h">Hello</h1>
<button id="inc" onclick="document.getElementById('count').textContent = String(Number(document.getElementById('count').textContent) + 1)">Add one</button>
<span id="count">0</span>
<a id="next" href="/second.html">Second page</a>
<form action="/results.html" method="get">
  <label for="q">Search</label><input id="q" name="q" placeholder="Search here">
  <select id="size" name="size"><option value="s">Small</option><option value="l">Large</option></select>
  <input id="day" type="date" name="day">
  <label><input id="agree" type="checkbox" name="agree"> I agree</label>
  <button type="submit" id="go">Go</button>
</form>
<button id="alert" onclick="alert('hi there'); document.getElementById('h').textContent='after alert'">Alert</button>
<button id="hidden" style="display:none">Hidden</button>
<div style="height:3000px"></div><p id="bottom">bottom</p>
</body></html>"#;

const SECOND: &str = r#"<!doctype html><html><head><title>Second</title></head><body><p id="p">second page</p>
<script>document.cookie = "seen=1; path=/"; localStorage.setItem("k", "v");</script></body></html>"#;

const RESULTS: &str = r#"<!doctype html><html><head><title>Results</title></head><body>
<p id="echo"></p><script>document.getElementById('echo').textContent = location.search;</script></body></html>"#;

const STORAGE: &str = r#"<!doctype html><html><head><title>Storage</title></head><body><p id="s"></p>
<script>document.getElementById('s').textContent = 'cookie=[' + document.cookie + '] ls=[' + (localStorage.getItem('k') || '') + ']';</script></body></html>"#;

async fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]);
                let path = req.split_whitespace().nth(1).unwrap_or("/");
                let path = path.split('?').next().unwrap_or("/");
                let (status, body) = match path {
                    "/" | "/index.html" => ("200 OK", INDEX),
                    "/second.html" => ("200 OK", SECOND),
                    "/results.html" => ("200 OK", RESULTS),
                    "/storage.html" => ("200 OK", STORAGE),
                    _ => ("404 Not Found", "<h1>not found</h1>"),
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}")
}

fn config() -> PoolConfig {
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.browsers = 1;
    cfg.contexts_per_browser = 2;
    cfg
}

fn act(line: &str) -> Action {
    parse_action(line).unwrap()
}

async fn text(session: &browser_pool::Session, css: &str) -> String {
    session
        .query_selector(css)
        .await
        .unwrap()
        .unwrap()
        .map(|s| s.text)
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_observations_and_isolation() {
    let base = serve().await;
    let pool = BrowserPool::launch(config()).await.unwrap();
    let mut s = pool.lease().await.unwrap();

    let r = s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    assert_eq!(r.error, None);
    let obs = s.observe().await.unwrap();
    assert_eq!(obs.title, "Test shop");
    assert_eq!(obs.url, format!("{base}/"));
    assert_eq!(
        &obs.screenshot.bytes[..3],
        &[0xFF, 0xD8, 0xFF],
        "JPEG magic"
    );
    assert_eq!((obs.screenshot.width, obs.screenshot.height), (1280, 720));
    let labels: Vec<&str> = obs.elements.iter().map(|e| e.label.as_str()).collect();
    for want in ["Add one", "Second page", "Search", "Go", "I agree"] {
        assert!(labels.contains(&want), "{want} in {labels:?}");
    }
    assert!(
        !labels.contains(&"Hidden"),
        "hidden elements are not listed"
    );
    let ids: Vec<u32> = obs.elements.iter().map(|e| e.id).collect();
    assert_eq!(
        ids,
        (1..=ids.len() as u32).collect::<Vec<_>>(),
        "numbered from 1 in order"
    );
    let size = obs.elements.iter().find(|e| e.tag == "select").unwrap();
    assert_eq!(size.options, vec!["Small", "Large"]);
    assert_eq!(size.value.as_deref(), Some("Small"));

    // Click by element number, then by coordinates.
    let inc = obs.elements.iter().find(|e| e.label == "Add one").unwrap();
    let r = s
        .act(&Action::Click(browser_pool::Target::Element(inc.id)))
        .await
        .unwrap();
    assert_eq!(r.error, None);
    let (cx, cy) = r.point.unwrap();
    assert!((cx - inc.bbox.center().0).abs() < 1.0 && (cy - inc.bbox.center().1).abs() < 1.0);
    assert_eq!(text(&s, "#count").await, "1");
    s.act(&act(&format!("click({cx}, {cy})"))).await.unwrap();
    assert_eq!(text(&s, "#count").await, "2");

    // A failed action is reported, and shown in the next observation, never a crash.
    let r = s.act(&act("click(999)")).await.unwrap();
    assert!(r.error.as_deref().unwrap().contains("element 999"), "{r:?}");
    let obs = s.observe().await.unwrap();
    assert!(obs.last_action_error.unwrap().contains("element 999"));
    assert_eq!(
        s.observe().await.unwrap().last_action_error,
        None,
        "errors are shown once"
    );
    let r = s.act(&act("click(5000, 10)")).await.unwrap();
    assert!(r.error.unwrap().contains("outside"));

    // Type, select, date, checkbox, then Enter submits the form.
    assert_eq!(
        s.act(&act(r##"type(css="#q", "old text")"##))
            .await
            .unwrap()
            .error,
        None
    );
    assert_eq!(
        s.act(&act(r##"type(css="#q", "red mug")"##))
            .await
            .unwrap()
            .error,
        None,
        "replaces"
    );
    assert_eq!(
        s.act(&act(r##"type(css="#q", "!", clear=false)"##))
            .await
            .unwrap()
            .error,
        None
    );
    assert_eq!(
        s.query_selector("#q")
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            .value
            .as_deref(),
        Some("red mug!")
    );
    assert_eq!(
        s.act(&act(r##"select(css="#size", "large")"##))
            .await
            .unwrap()
            .error,
        None
    );
    let bad = s
        .act(&act(r##"select(css="#size", "Huge")"##))
        .await
        .unwrap();
    assert!(
        bad.error.unwrap().contains("Small"),
        "error lists the options"
    );
    assert_eq!(
        s.act(&act(r##"type(css="#day", "2026-12-24")"##))
            .await
            .unwrap()
            .error,
        None
    );
    assert_eq!(
        s.act(&act(r##"click(css="#agree")"##)).await.unwrap().error,
        None
    );
    assert_eq!(
        s.query_selector("#agree")
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            .checked,
        Some(true)
    );
    s.act(&act(r##"click(css="#q")"##)).await.unwrap();
    assert_eq!(s.act(&act(r#"press("Enter")"#)).await.unwrap().error, None);
    let obs = s.observe().await.unwrap();
    assert_eq!(
        obs.title, "Results",
        "Enter submitted the form and the page settled"
    );
    let echo = text(&s, "#echo").await;
    assert!(
        echo.contains("q=red+mug%21")
            && echo.contains("size=l")
            && echo.contains("day=2026-12-24")
            && echo.contains("agree=on"),
        "{echo}"
    );

    // Back, scroll, link navigation.
    assert_eq!(s.act(&Action::Back).await.unwrap().error, None);
    assert_eq!(s.observe().await.unwrap().title, "Test shop");
    let r = s.act(&act("scroll(down)")).await.unwrap();
    assert_eq!(r.error, None);
    assert!(s.observe().await.unwrap().scroll.y > 100.0);
    s.act(&act(r##"click(css="#next")"##)).await.unwrap();
    assert_eq!(s.observe().await.unwrap().title, "Second");

    // A fragment-only goto is a same-document navigation and must not wait for a load.
    let started = Instant::now();
    let r = s
        .act(&Action::Goto(format!("{base}/second.html#part")))
        .await
        .unwrap();
    assert_eq!(r.error, None);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        s.observe()
            .await
            .unwrap()
            .url
            .ends_with("/second.html#part")
    );

    // Dialogs are accepted and reported instead of blocking the page.
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    let r = s.act(&act(r##"click(css="#alert")"##)).await.unwrap();
    assert_eq!(r.error, None);
    let obs = s.observe().await.unwrap();
    assert!(
        obs.last_action_error
            .unwrap_or_default()
            .contains("hi there")
    );
    assert_eq!(text(&s, "#h").await, "after alert");

    // Goto refuses non-web schemes and reports unreachable hosts.
    assert!(
        s.act(&act(r#"goto("file:///etc/passwd")"#))
            .await
            .unwrap()
            .error
            .unwrap()
            .contains("http")
    );
    let r = s.act(&act(r#"goto("http://127.0.0.1:9/")"#)).await.unwrap();
    assert!(
        r.error.unwrap().contains("ERR_"),
        "connection refused is an action error"
    );

    // The second page set a cookie and localStorage; a new session sees neither.
    s.act(&Action::Goto(format!("{base}/storage.html")))
        .await
        .unwrap();
    assert_eq!(text(&s, "#s").await, "cookie=[seen=1] ls=[v]");
    let mut other = pool.lease().await.unwrap();
    other
        .act(&Action::Goto(format!("{base}/storage.html")))
        .await
        .unwrap();
    assert_eq!(text(&other, "#s").await, "cookie=[] ls=[]");
    other.close().await;
    s.close().await;

    let stats = pool.stats();
    assert_eq!(stats.leased, 0);
    assert_eq!(stats.leases, 2);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_browser_fails_fast_and_is_replaced() {
    let base = serve().await;
    let mut cfg = config();
    cfg.cdp_timeout = Duration::from_secs(3);
    let pool = BrowserPool::launch(cfg).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    let pid = s.browser_pid().unwrap();
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let started = Instant::now();
    let err = s.observe().await.expect_err("the browser is gone");
    assert!(
        matches!(
            err,
            PoolError::BrowserGone { .. } | PoolError::Timeout { .. }
        ),
        "{err}"
    );
    assert!(err.browser_is_dead());
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "failed fast: {:?}",
        started.elapsed()
    );
    drop(s);

    // The next lease relaunches the browser and works.
    let mut s = pool.lease().await.unwrap();
    assert_ne!(s.browser_pid(), Some(pid));
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    assert_eq!(s.observe().await.unwrap().title, "Test shop");
    assert_eq!(pool.stats().relaunches, 1);
    s.close().await;
    pool.shutdown().await;
}
