//! Real Chromium: the screenshot taken during settling's quiet window (see
//! `PoolConfig::early_capture`) is used only when the page is still the one it shows, so
//! an observation never shows an older page than a capture after settling would.
//!
//! One test function: the capture counters are per process, and the steps below read
//! them in order.

use std::time::Duration;

use browser_pool::{BrowserPool, EarlyCaptures, Observation, PoolConfig, Session, parse_action};

mod common;

use common::{html, serve};

const PAGE: &str = r#"<!doctype html><html><head><title>Colours</title></head>
<body style="margin: 0">
<div id="box" style="width: 1280px; height: 500px; background: rgb(0, 0, 255)"></div>
<button id="red" onclick="paint('rgb(255, 0, 0)', 'Painted red')">Paint red</button>
<button id="yellow" onclick="paint('rgb(255, 255, 0)', 'Painted yellow')">Paint yellow</button>
<button id="later" onclick="later()">Later</button>
<input id="field" aria-label="Field" value="">
<div style="height: 3000px"></div>
<script>
  function paint(colour, label) {
    document.getElementById('box').style.background = colour;
    event.target.textContent = label;
  }
  // An update finished by a chain of posted messages (no timer the probe counts): it
  // lands a few ms after the click, while an early capture may be under way.
  function later() {
    const ch = new MessageChannel();
    const t0 = performance.now();
    ch.port1.onmessage = () => {
      if (performance.now() - t0 < 6) return ch.port2.postMessage(0);
      document.getElementById('box').style.background = 'rgb(0, 255, 0)';
      document.getElementById('later').textContent = 'Later done';
    };
    ch.port2.postMessage(0);
  }
</script>
</body></html>"#;

const FRAMED: &str = r#"<!doctype html><html><head><title>Framed</title></head><body>
<button onclick="this.textContent = 'Clicked'">Click me</button>
<iframe srcdoc="<p>inside</p>"></iframe>
</body></html>"#;

/// The colour in the middle of the box (JPEG: roughly).
fn box_colour(obs: &Observation) -> [u8; 3] {
    let img = image::load_from_memory(&obs.screenshot.bytes)
        .unwrap()
        .to_rgb8();
    img.get_pixel(640, 250).0
}

fn is(colour: [u8; 3], want: [u8; 3]) -> bool {
    colour
        .iter()
        .zip(want)
        .all(|(&c, w)| (i16::from(c) - i16::from(w)).abs() < 40)
}

async fn act(s: &mut Session, action: &str) {
    let report = s.act(&parse_action(action).unwrap()).await.unwrap();
    assert_eq!(report.error, None, "{action}");
}

fn has_label(obs: &Observation, label: &str) -> bool {
    obs.elements.iter().any(|e| e.label == label)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_captures_are_used_only_for_the_page_they_show() {
    let base = serve(vec![html("/", PAGE), html("/framed", FRAMED)]).await;
    let mut cfg = PoolConfig::new(PoolConfig::default_chromium());
    cfg.browsers = 1;
    cfg.contexts_per_browser = 1;
    // A long window, so that the first probe after a click always finds it still open
    // (even on a loaded machine) and the capture happens inside it.
    cfg.settle_quiet = Duration::from_millis(150);
    let pool = BrowserPool::launch(cfg).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    act(&mut s, &format!("goto(\"{base}/\")")).await;
    let obs = s.observe().await.unwrap();
    assert!(is(box_colour(&obs), [0, 0, 255]), "{:?}", box_colour(&obs));

    // A click whose update is over at once: the capture taken during the window is the
    // observation's, and shows the page after the click.
    let before = EarlyCaptures::now();
    act(&mut s, "click(css=\"#red\")").await;
    let obs = s.observe().await.unwrap();
    let after = EarlyCaptures::now();
    assert_eq!(after.kept - before.kept, 1, "{before:?} -> {after:?}");
    assert_eq!(after.used - before.used, 1, "{before:?} -> {after:?}");
    assert!(is(box_colour(&obs), [255, 0, 0]), "{:?}", box_colour(&obs));
    assert!(has_label(&obs, "Painted red"));

    // The page changes between the action and the observation (the DOM, then only an
    // input's value, then only the scroll position): each time the capture is dropped and
    // the observation shows the page as it is.
    let changes = [
        "document.getElementById('box').style.background = 'rgb(0, 255, 0)'",
        "document.getElementById('field').value = 'typed'",
        "window.scrollTo(0, 40)",
    ];
    for (i, change) in changes.iter().enumerate() {
        let before = EarlyCaptures::now();
        act(&mut s, "click(css=\"#yellow\")").await;
        s.evaluate(change).await.unwrap().unwrap();
        let obs = s.observe().await.unwrap();
        let after = EarlyCaptures::now();
        assert_eq!(
            after.kept - before.kept,
            1,
            "{change}: {before:?} -> {after:?}"
        );
        assert_eq!(after.used, before.used, "{change}: stale capture used");
        assert_eq!(after.wasted - before.wasted, 1, "{change}");
        match i {
            0 => assert!(is(box_colour(&obs), [0, 255, 0]), "{:?}", box_colour(&obs)),
            1 => assert!(
                obs.elements
                    .iter()
                    .any(|e| e.label == "Field" && e.value.as_deref() == Some("typed")),
                "{:?}",
                obs.elements
            ),
            _ => assert_eq!(obs.scroll.y, 40.0),
        }
        s.evaluate(
            "window.scrollTo(0, 0); document.getElementById('box').style.background = 'rgb(0, 0, 255)'",
        )
        .await
        .unwrap()
        .unwrap();
    }

    // An update that lands a few ms after the click, during the capture: whichever way the
    // race goes, the observation shows its result.
    act(&mut s, "click(css=\"#later\")").await;
    let obs = s.observe().await.unwrap();
    assert!(is(box_colour(&obs), [0, 255, 0]), "{:?}", box_colour(&obs));
    assert!(has_label(&obs, "Later done"));

    // A terminal screenshot: the early capture when nothing changed since.
    act(&mut s, "click(css=\"#red\")").await;
    let before = EarlyCaptures::now();
    let shot = s.settled_screenshot().await.unwrap();
    assert_eq!(EarlyCaptures::now().used - before.used, 1);
    let img = image::load_from_memory(&shot.bytes).unwrap().to_rgb8();
    assert!(is(img.get_pixel(640, 250).0, [255, 0, 0]));

    // Frames: their mutations escape the probe, so no early capture is taken.
    act(&mut s, &format!("goto(\"{base}/framed\")")).await;
    let obs = s.observe().await.unwrap();
    assert!(has_label(&obs, "Click me"));
    let before = EarlyCaptures::now();
    act(&mut s, "click(css=\"button\")").await;
    let obs = s.observe().await.unwrap();
    assert!(has_label(&obs, "Clicked"));
    assert_eq!(
        EarlyCaptures::now().kept,
        before.kept,
        "capture on a framed page"
    );
}
