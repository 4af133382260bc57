//! Hostile pages against real Chromium: a script that never yields, an alert storm,
//! dismissed dialogs, popups and tabs (a storm of them too), a huge title, a page that
//! replaces the built-ins a scan uses. Each case must be handled and reported, and none
//! may hang the pool. What pages load and where they go: `hostile_network.rs`; the
//! browsers themselves: `hostile_browsers.rs`.

use std::time::{Duration, Instant};

use browser_pool::{Action, BrowserPool, DialogPolicy, PageEvent};

use crate::common;
use crate::hostile_site;

use common::html;
use hostile_site::{
    INDEX, PROMPT, SECOND, act, config, heading, number_of, patient, serve, still_usable,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_pages_are_stopped_and_storms_of_dialogs_answered() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let base = serve().await;
    let pool = BrowserPool::launch(config()).await.unwrap();
    let mut s = pool.lease().await.unwrap();

    // A click whose handler never returns: the script is stopped, the page lives on.
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    let started = Instant::now();
    s.act(&act(r##"click(css="#spin")"##)).await.unwrap();
    let obs = s.observe().await.unwrap();
    // A hang guard, not a benchmark (it takes about the 2 s script limit).
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "{:?}",
        started.elapsed()
    );
    assert!(
        obs.events
            .iter()
            .any(|e| matches!(e, PageEvent::ScriptStopped { .. })),
        "{:?}",
        obs.events
    );
    assert_eq!(obs.title, "Hostile");
    assert_eq!(heading(&s).await, "Start", "the page still answers");

    // A page whose inline script loops at load: the rest of the page still arrives.
    let started = Instant::now();
    s.act(&Action::Goto(format!("{base}/loop.html")))
        .await
        .unwrap();
    let obs = s.observe().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(obs.title, "Looping");
    assert!(
        obs.events
            .iter()
            .any(|e| matches!(e, PageEvent::ScriptStopped { .. })),
        "{:?}",
        obs.events
    );

    // Forty alerts in a row: every one answered, folded into one event.
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    s.act(&act(r##"click(css="#storm")"##)).await.unwrap();
    let obs = s.observe().await.unwrap();
    let storm = obs
        .events
        .iter()
        .find_map(|e| match e {
            PageEvent::Dialog { message, count, .. } if message == "storm" => Some(*count),
            _ => None,
        })
        .expect("the storm is reported");
    assert_eq!(storm, 40);
    assert_eq!(heading(&s).await, "after storm");

    // The same pool still serves a fresh session promptly.
    let mut other = pool.lease().await.unwrap();
    other
        .act(&Action::Goto(format!("{base}/second.html")))
        .await
        .unwrap();
    assert_eq!(other.observe().await.unwrap().title, "Second");
    other.close().await;
    s.close().await;
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dialogs_can_be_dismissed() {
    let base = serve().await;
    // Limits of a minute: waiting for the commit (or settling's cap) would show.
    let mut cfg = patient(config());
    cfg.dialogs = DialogPolicy::Dismiss;
    let pool = BrowserPool::launch(cfg).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    s.act(&act(r##"click(css="#confirm")"##)).await.unwrap();
    let obs = s.observe().await.unwrap();
    assert_eq!(heading(&s).await, "no");
    assert!(obs.events.iter().any(|e| matches!(
        e,
        PageEvent::Dialog { dialog, accepted: false, .. } if dialog == "confirm"
    )));

    // A page that asks to confirm leaving, answered "stay": goto says so at once (Chromium
    // would have Page.navigate wait for a commit that never comes) and a link click
    // settles without waiting for a navigation that will not happen.
    s.act(&Action::Goto(format!("{base}/keep.html")))
        .await
        .unwrap();
    s.act(&act(r##"click(css="#touch")"##)).await.unwrap(); // the prompt needs a gesture
    let started = Instant::now();
    let r = s
        .act(&Action::Goto(format!("{base}/second.html")))
        .await
        .unwrap();
    let error = r.error.expect("goto reports the refusal");
    assert!(error.contains("confirm leaving"), "{error}");
    assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
    let started = Instant::now();
    s.act(&act(r##"click(css="#away")"##)).await.unwrap();
    assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
    let obs = s.observe().await.unwrap();
    assert_eq!(obs.title, "Keep");
    assert!(obs.events.iter().any(|e| matches!(
        e,
        PageEvent::Dialog { dialog, accepted: false, .. } if dialog == "beforeunload"
    )));
    s.close().await;
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn popups_become_tabs_that_can_be_switched_and_closed() {
    let base = serve().await;
    let pool = BrowserPool::launch(config()).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    s.act(&Action::Goto(format!("{base}/"))).await.unwrap();
    let obs = s.observe().await.unwrap();
    assert_eq!(obs.tabs.len(), 1);
    assert!(obs.tabs[0].active);

    // window.open: the popup is tab 2 and active.
    s.act(&act(r##"click(css="#popup")"##)).await.unwrap();
    let obs = s.observe().await.unwrap();
    assert_eq!(obs.title, "Second", "the popup is observed");
    assert_eq!(obs.tabs.len(), 2, "{:?}", obs.tabs);
    assert!(obs.tabs[1].active && !obs.tabs[0].active);
    assert_eq!(obs.tabs[0].title, "Hostile");
    assert!(obs.tabs[1].url.ends_with("/second.html"));
    // The browser announces a window.open tab blank; the event names the page it loaded.
    assert!(
        obs.events.iter().any(|e| matches!(
            e,
            PageEvent::TabOpened { tab: 2, url } if url.ends_with("/second.html")
        )),
        "{:?}",
        obs.events
    );

    // Back to the first tab, then a target=_blank link opens tab 3; its event is taken
    // without observing (as at the end of an episode), with its URL.
    let r = s.act(&act("switch_tab(1)")).await.unwrap();
    assert_eq!(r.error, None);
    assert_eq!(s.observe().await.unwrap().title, "Hostile");
    s.act(&act(r##"click(css="#blank")"##)).await.unwrap();
    let events = s.take_events().await.unwrap();
    assert!(
        events.iter().any(|e| matches!(
            e,
            PageEvent::TabOpened { tab: 3, url } if url.ends_with("/second.html")
        )),
        "{events:?}"
    );
    let obs = s.observe().await.unwrap();
    assert!(
        !obs.events
            .iter()
            .any(|e| matches!(e, PageEvent::TabOpened { .. })),
        "taken once: {:?}",
        obs.events
    );
    assert_eq!(obs.tabs.len(), 3);
    assert!(obs.tabs[2].active);
    assert_eq!(obs.title, "Second");

    // Errors for tabs that do not exist; closing works; the page can close its own popup.
    let r = s.act(&act("switch_tab(7)")).await.unwrap();
    assert!(r.error.unwrap().contains("no tab 7"));
    s.act(&act("close_tab(2)")).await.unwrap();
    let obs = s.observe().await.unwrap();
    assert_eq!(obs.tabs.len(), 2);
    assert!(obs.tabs[1].active, "the active tab moved down a number");
    s.act(&act(r##"click(css="#close")"##)).await.unwrap();
    let obs = s.observe().await.unwrap();
    assert_eq!(obs.tabs.len(), 1, "{:?}", obs.tabs);
    assert_eq!(obs.title, "Hostile");
    assert!(
        obs.events
            .iter()
            .any(|e| matches!(e, PageEvent::TabClosed { tab: 2 })),
        "{:?}",
        obs.events
    );
    let r = s.act(&act("close_tab(1)")).await.unwrap();
    assert!(r.error.unwrap().contains("only tab"));
    s.close().await;
    pool.shutdown().await;
}

/// A page opening windows in a loop gets at most `max_tabs` tabs; the rest are closed at
/// once and reported, and the session stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_popup_storm_is_capped_at_max_tabs() {
    let base = common::serve(vec![
        html(
            "/storm.html",
            r#"<title>Storm</title><script>for (let i = 0; i < 12; i++) window.open('/second.html?' + i)</script>"#,
        ),
        html("/second.html", SECOND),
        html("/", INDEX),
    ])
    .await;
    let mut cfg = config();
    cfg.max_tabs = 4;
    // Twelve windows opening at once keep the renderer busy: on a loaded machine reading
    // the page once took longer than the 2 s limit (CI, 2026-11-29), and the cap on tabs,
    // not that limit, is what this test is about.
    cfg.script_timeout = PROMPT;
    let pool = BrowserPool::launch(cfg).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    let r = s
        .act(&Action::Goto(format!("{base}/storm.html")))
        .await
        .unwrap();
    assert_eq!(r.error, None);
    // Popups may still be arriving after the first observation: gather a few.
    let mut events = Vec::new();
    let mut tabs = 0;
    for _ in 0..100 {
        let obs = s.observe().await.unwrap();
        tabs = obs.tabs.len();
        events.extend(obs.events);
        let closed = events
            .iter()
            .filter(|e| matches!(e, PageEvent::Blocked { reason, .. } if reason.contains("more than 4 tabs")))
            .count();
        if closed == 9 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(tabs, 4);
    let opened = events
        .iter()
        .filter(|e| matches!(e, PageEvent::TabOpened { .. }))
        .count();
    let closed = events
        .iter()
        .filter(|e| matches!(e, PageEvent::Blocked { .. }))
        .count();
    assert_eq!((opened, closed), (3, 9), "{events:?}");
    still_usable(pool, s, &base).await;
}

/// A page cannot make every step's record huge through its title.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_title_is_clipped() {
    let base = common::serve(vec![
        html(
            "/title.html",
            r#"<title>t</title><script>document.title = 'Huge ' + 'x'.repeat(100000)</script>"#,
        ),
        html("/", INDEX),
    ])
    .await;
    let pool = BrowserPool::launch(config()).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    s.act(&Action::Goto(format!("{base}/title.html")))
        .await
        .unwrap();
    let clipped = |title: &str| {
        assert!(
            title.starts_with("Huge xxx") && title.ends_with('…'),
            "{title:.40}"
        );
        assert_eq!(title.chars().count(), 300);
    };
    clipped(&s.observe().await.unwrap().title);
    // An inactive tab's title comes from the browser: clipped the same.
    s.evaluate("window.open('/'), 1").await.unwrap().unwrap();
    let obs = s.observe().await.unwrap();
    assert_eq!(obs.tabs.len(), 2);
    assert!(obs.tabs[1].active);
    clipped(&obs.tabs[0].title);
    s.close().await;
    pool.shutdown().await;
}

/// Controls in the top document, a same-origin frame and an open shadow root.
const CONTROLS: &str = r#"<title>Controls</title>
<button id="b" onclick="this.textContent = 'pressed'">Press</button>
<label>Name <input id="i" value="old"></label>
<select id="s"><option>Tea</option><option>Coffee</option></select>
<iframe srcdoc="<button onclick='this.textContent = &quot;framed pressed&quot;'>Framed</button>"></iframe>
<div id="host"></div>
<script>
  document.getElementById('host').attachShadow({ mode: 'open' }).innerHTML = '<a href="/second.html">Shadow link</a>';
</script>"#;

/// What polyfills, old libraries and anti-bot scripts do to a page's built-ins, here at
/// its worst: every one a scan or an action uses is replaced by a broken one.
const TAMPERING: &str = r#"<script>
  Array.prototype.map = function () { return []; };
  Array.from = function () { return []; };
  String.prototype.trim = function () { return 'tampered'; };
  Set.prototype.has = function () { return true; };
  window.getComputedStyle = function () { return { display: 'none', visibility: 'hidden' }; };
  window.Symbol = undefined;
  JSON.stringify = function () { return '"tampered"'; };
</script>"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_replaces_built_ins_is_observed_and_driven_as_if_it_had_not() {
    let base = common::serve(vec![
        html("/clean.html", CONTROLS),
        html("/tampered.html", format!("{CONTROLS}{TAMPERING}")),
        html("/", INDEX),
    ])
    .await;
    let pool = BrowserPool::launch(config()).await.unwrap();
    let mut s = pool.lease().await.unwrap();
    let describe = |obs: &browser_pool::Observation| -> Vec<String> {
        obs.elements
            .iter()
            .map(|e| {
                format!(
                    "{} {} {:?} {:?} {:?}",
                    e.role, e.label, e.value, e.options, e.bbox
                )
            })
            .collect()
    };
    s.act(&Action::Goto(format!("{base}/clean.html")))
        .await
        .unwrap();
    let clean = describe(&s.observe().await.unwrap());
    assert_eq!(clean.len(), 5, "{clean:#?}");
    s.act(&Action::Goto(format!("{base}/tampered.html")))
        .await
        .unwrap();
    let obs = s.observe().await.unwrap();
    assert_eq!(describe(&obs), clean);
    assert_eq!(obs.title, "Controls");

    let n = |label: &str| number_of(&obs, label);
    for line in [
        format!("click({})", n("Press")),
        format!("type({}, \"new\", clear=true)", n("Name")),
        format!("select({}, \"Coffee\")", n("")),
        format!("click({})", n("Framed")),
    ] {
        let r = s.act(&act(&line)).await.unwrap();
        assert_eq!(r.error, None, "{line}");
    }
    let read = |css: &'static str| {
        let s = &s;
        async move { s.query_selector(css).await.unwrap().unwrap().unwrap() }
    };
    assert_eq!(read("#b").await.text, "pressed");
    assert_eq!(read("#i").await.value.as_deref(), Some("new"));
    assert_eq!(read("#s").await.value.as_deref(), Some("Coffee"));
    let framed = s
        .evaluate("document.querySelector('iframe').contentDocument.body.innerText")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(framed, "framed pressed");

    // What the scan keeps is out of the page's sight (it could tell an agent by it).
    s.act(&Action::Goto(format!("{base}/clean.html")))
        .await
        .unwrap();
    s.observe().await.unwrap();
    let seen = s
        .evaluate("Object.getOwnPropertySymbols(window).map(String).join()")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen, "", "the page sees our keys");
    s.close().await;
    pool.shutdown().await;
}
