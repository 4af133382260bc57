//! Real Chromium: settling waits for what an action set in motion (short timeouts and
//! the chains they start) but not for the page's background timers, long timeouts or
//! intervals, so observations are neither stale nor slow.

use std::time::{Duration, Instant};

use browser_pool::{BrowserPool, PoolConfig, Session, parse_action};

use crate::common;

use common::{Route, html, serve};

/// Items in `/big.json`: a few MB, so the page spends a while on the response after the
/// network reports it finished.
const BIG: usize = 400_000;

fn big_json() -> Route {
    let items: Vec<String> = (0..BIG)
        .map(|i| (i * 7919 % 1_000_003).to_string())
        .collect();
    Route {
        path: "/big.json",
        status: "200 OK",
        content_type: "application/json",
        headers: "",
        body: format!("{{\"items\": [{}]}}", items.join(",")),
        delay: std::time::Duration::ZERO,
    }
}

const PAGE: &str = r#"<!doctype html><html><head><title>Timers</title></head><body>
<button id="late" onclick="setTimeout(() => { document.getElementById('out').textContent = 'late result'; }, 300)">Late</button>
<button id="chain" onclick="step(1)">Chain</button>
<button id="slow" onclick="setTimeout(() => { document.getElementById('out').textContent = 'slow result'; }, 60000)">Slow</button>
<button id="frame" onclick="requestAnimationFrame(() => requestAnimationFrame(() => { document.getElementById('out').textContent = 'frame result'; }))">Frame</button>
<button id="plain" onclick="document.getElementById('out').textContent = 'plain result'">Plain</button>
<button id="cleared" onclick="clearTimeout(setTimeout(() => {}, 400)); document.getElementById('out').textContent = 'cleared'">Cleared</button>
<button id="fetch" onclick="fetch('/big.json').then(r => r.json()).then(j => { document.getElementById('out').textContent = 'fetched ' + j.items.length; })">Fetch</button>
<button id="xhr" onclick="const x = new XMLHttpRequest(); x.open('GET', '/big.json'); x.onload = () => { document.getElementById('out').textContent = 'xhr ' + JSON.parse(x.responseText).items.length; }; x.send();">XHR</button>
<button id="open" onclick="document.getElementById('panel').style.height = '200px'">Open</button>
<div id="panel" style="height: 0; overflow: hidden; transition: height 300ms linear">Panel</div>
<div id="spinner" style="width: 10px; height: 10px; animation: spin 1s linear infinite"></div>
<style>@keyframes spin { from { transform: rotate(0deg); } to { transform: rotate(360deg); } }</style>
<p id="out">nothing yet</p>
<script>
  // Three counted generations, 120 ms apart: the last one writes the result.
  function step(n) {
    setTimeout(() => {
      if (n < 3) step(n + 1);
      else document.getElementById('out').textContent = 'chain result';
    }, 120);
  }
  // Background work started at load that never ends: a polling loop of short timeouts
  // and an interval that sets timeouts of its own. Neither may hold settling up.
  let polls = 0;
  (function poll() { polls++; setTimeout(poll, 40); })();
  setInterval(() => { setTimeout(() => { polls++; }, 30); }, 50);
  let frames = 0;
  (function frame() { frames++; requestAnimationFrame(frame); })();
</script>
</body></html>"#;

fn config() -> PoolConfig {
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.browsers = 1;
    cfg.contexts_per_browser = 1;
    // Settling's caps far above the bounds below: a click that waited for what it must not
    // (the background loops, a long timeout) runs into a cap, which no busy machine
    // mistakes for a prompt settle.
    cfg.settle_max = Duration::from_secs(90);
    cfg.settle_restless = Duration::from_secs(30);
    cfg
}

/// What a click that waits for nothing it must not wait for may take on a loaded machine
/// (well under a second on an idle one).
const PROMPT: Duration = Duration::from_secs(10);

async fn out(s: &Session) -> String {
    let v = s
        .evaluate("document.getElementById('out').textContent")
        .await
        .unwrap()
        .unwrap();
    v.as_str().unwrap().to_string()
}

/// Clicks `css` and returns how long the action with its settling took.
async fn click(s: &mut Session, css: &str) -> Duration {
    let start = Instant::now();
    let report = s
        .act(&parse_action(&format!("click(css=\"{css}\")")).unwrap())
        .await
        .unwrap();
    assert_eq!(report.error, None, "clicking {css}");
    start.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settling_follows_the_actions_timers() {
    let base = serve(vec![html("/", PAGE), big_json()]).await;
    let pool = BrowserPool::launch(config()).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    s.act(&parse_action(&format!("goto(\"{base}\")")).unwrap())
        .await
        .unwrap();

    // The background loops have been running through the load; wait a little more so
    // several generations of them are behind us.
    tokio::time::sleep(Duration::from_millis(300)).await;

    // A result that appears 300 ms after the click is in the next observation.
    click(&mut s, "#late").await;
    assert_eq!(out(&s).await, "late result");
    assert!(
        s.observe()
            .await
            .unwrap()
            .elements
            .iter()
            .any(|e| e.label == "Late")
    );

    // So is the end of a chain of timeouts the click started.
    click(&mut s, "#chain").await;
    assert_eq!(out(&s).await, "chain result");

    // And a render the click deferred by two animation frames.
    click(&mut s, "#frame").await;
    assert_eq!(out(&s).await, "frame result");

    // A fetch the click started, whose body the page parses before showing the result,
    // and the same with XMLHttpRequest: the result is in the next observation.
    click(&mut s, "#fetch").await;
    assert_eq!(out(&s).await, format!("fetched {BIG}"));
    click(&mut s, "#xhr").await;
    assert_eq!(out(&s).await, format!("xhr {BIG}"));

    // A CSS transition the click started is over before the observation (it changes no
    // DOM, so only the animation tracking sees it).
    click(&mut s, "#open").await;
    let height = s
        .evaluate("document.getElementById('panel').getBoundingClientRect().height")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        height.as_f64().unwrap().round(),
        200.0,
        "panel mid-transition"
    );

    // A plain click settles without waiting for the background loops or the endless
    // spinner: well under the cap a restless page gets.
    let took = click(&mut s, "#plain").await;
    assert_eq!(out(&s).await, "plain result");
    assert!(took < PROMPT, "plain click took {took:?}");

    // A cleared timeout is forgotten, and the background loops' timeouts were never
    // counted: nothing is pending once the click has settled.
    click(&mut s, "#cleared").await;
    assert_eq!(out(&s).await, "cleared");
    let pending = s
        .evaluate("window.__sgTimers.pending()")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(pending, 0, "counted timeouts left pending");

    // A timeout beyond the horizon is not waited for (it would take a minute).
    let took = click(&mut s, "#slow").await;
    assert_eq!(out(&s).await, "cleared");
    assert!(took < PROMPT, "slow timer waited for: {took:?}");

    // The bookkeeping is invisible to the page's own timers: the loops still run.
    let polls = |v: serde_json::Value| v.as_f64().unwrap();
    let before = polls(s.evaluate("polls").await.unwrap().unwrap());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = polls(s.evaluate("polls").await.unwrap().unwrap());
    assert!(
        after > before + 2.0,
        "background timers stopped: {before} -> {after}"
    );
    let frames = s.evaluate("frames").await.unwrap().unwrap();
    assert!(
        frames.as_f64().unwrap() > 10.0,
        "animation frames: {frames}"
    );
    drop(s);
    pool.shutdown().await;
}

/// A page the session passed through between two observations (here a client-side
/// redirect) was still visited: the session reports every web page its tabs committed,
/// once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_passed_through_are_reported_as_visited() {
    let base = serve(vec![
        html(
            "/start.html",
            r#"<title>Start</title><a id="go" href="/hop.html">go</a>"#,
        ),
        html(
            "/hop.html",
            r#"<title>Hop</title><script>location.replace('/end.html?from=hop')</script>"#,
        ),
        html("/end.html", "<title>End</title><p>arrived</p>"),
    ])
    .await;
    let pool = BrowserPool::launch(config()).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    let act = |line: &str| parse_action(line).unwrap();
    s.act(&act(&format!("goto(\"{base}/start.html\")")))
        .await
        .unwrap();
    assert_eq!(s.take_visited(), [format!("{base}/start.html")]);
    let r = s.act(&act("click(css=\"#go\")")).await.unwrap();
    assert_eq!(r.error, None);
    let obs = s.observe().await.unwrap();
    assert_eq!(obs.url, format!("{base}/end.html?from=hop"));
    assert_eq!(
        s.take_visited(),
        [
            format!("{base}/hop.html"),
            format!("{base}/end.html?from=hop")
        ],
        "the hop was never observed, but visited"
    );
    assert!(s.take_visited().is_empty(), "each page is reported once");
    s.close().await;
    pool.shutdown().await;
}
