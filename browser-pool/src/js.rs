//! The JavaScript snippets the session runs in pages, with their placeholders filled.
//!
//! Snippets live in `js/*.js` so they can be read and linted as JavaScript; values are
//! spliced in as JSON literals, never as raw text, so page-controlled strings cannot break
//! out of them.

use std::time::Duration;

use crate::action::Target;

/// The name of our isolated world, in the top document and in cross-origin frames alike:
/// the element snippets run there, where the page's scripts can neither see what they
/// keep nor break them by replacing built-ins (`Symbol`, `Array.from`, `getComputedStyle`
/// and the like, as old libraries and anti-bot scripts do). The snippets that must see
/// the page's own state (the timers it scheduled, its form submissions, settling) run in
/// its main world.
pub(crate) const WORLD: &str = "surfgym";

const OBSERVE: &str = include_str!("js/observe.js");
const SETTLE: &str = include_str!("js/settle.js");
const TIMERS: &str = include_str!("js/timers.js");
const PREPARE: &str = include_str!("js/prepare.js");
const RESOLVE: &str = include_str!("js/resolve.js");
const FILL: &str = include_str!("js/fill.js");
const SELECT: &str = include_str!("js/select.js");
const SCROLL_AREA: &str = include_str!("js/scroll_area.js");
const NUMBERED: &str = include_str!("js/numbered.js");
const PLACE: &str = include_str!("js/place.js");

/// A snippet with its shared helpers spliced in where it says `// #include <file>`.
fn assemble(src: &str) -> String {
    src.replace("  // #include numbered.js\n", NUMBERED)
        .replace("  // #include place.js\n", PLACE)
}

fn json(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialize")
}

/// `(__ID__, __CSS__)` for a target; only element and selector targets have them.
fn target_parts(target: &Target) -> (String, String) {
    match target {
        Target::Element(n) => (n.to_string(), "null".into()),
        Target::Selector(css) => ("null".into(), json(css)),
        Target::Point { .. } => ("null".into(), "null".into()),
    }
}

/// The element scan of the top document.
pub(crate) fn observe() -> &'static str {
    static TOP: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| OBSERVE.replace("__ORIGIN__", "null"));
    &TOP
}

/// The element scan run inside a cross-origin frame: `origin` is a JSON object with where
/// the frame's viewport sits in the top one (`x`, `y`), what of it shows (`view`) and how
/// many elements are left (`max`).
pub(crate) fn observe_frame(origin: &str) -> String {
    OBSERVE.replace("__ORIGIN__", origin)
}

/// Where cross-origin frame `slot` of the document's last scan sits (see
/// `js/frame_origin.js`), scrolling it into view first when `bring`.
pub(crate) fn frame_origin(slot: usize, bring: bool) -> String {
    assemble(include_str!("js/frame_origin.js"))
        .replace("__SLOT__", &slot.to_string())
        .replace("__BRING__", if bring { "true" } else { "false" })
}

/// The settling probe for action `action`: resolves once the DOM has been quiet for
/// `quiet` with no counted timeout pending, or after `wait`.
pub(crate) fn settle(action: u64, quiet: Duration, wait: Duration) -> String {
    SETTLE
        .replace("__ACTION__", &action.to_string())
        .replace("__QUIET__", &quiet.as_millis().to_string())
        .replace("__WAIT__", &wait.as_millis().to_string())
}

/// The timer bookkeeping every document gets before its own scripts run.
pub(crate) fn timers() -> &'static str {
    TIMERS
}

pub(crate) fn prepare(action: u64) -> String {
    PREPARE.replace("__ACTION__", &action.to_string())
}

pub(crate) fn query(css: &str) -> String {
    assemble(include_str!("js/query.js")).replace("__CSS__", &json(css))
}

pub(crate) fn number_of(css: &str) -> String {
    assemble(include_str!("js/number_of.js")).replace("__CSS__", &json(css))
}

pub(crate) fn resolve(target: &Target) -> String {
    let (id, css) = target_parts(target);
    assemble(RESOLVE)
        .replace("__ID__", &id)
        .replace("__CSS__", &css)
}

pub(crate) fn fill(target: &Target, text: &str, clear: bool) -> String {
    let (id, css) = target_parts(target);
    assemble(FILL)
        .replace("__ID__", &id)
        .replace("__CSS__", &css)
        .replace("__TEXT__", &json(text))
        .replace("__CLEAR__", if clear { "true" } else { "false" })
}

pub(crate) fn select(target: &Target, option: &str) -> String {
    let (id, css) = target_parts(target);
    assemble(SELECT)
        .replace("__ID__", &id)
        .replace("__CSS__", &css)
        .replace("__TEXT__", &json(option))
}

/// `scroll_area.js` for a target given as its parts (element number, selector or point,
/// each a JSON literal or `null`).
pub(crate) fn scroll_area(id: &str, css: &str, x: &str, y: &str, down: bool) -> String {
    assemble(SCROLL_AREA)
        .replace("__ID__", id)
        .replace("__CSS__", css)
        .replace("__X__", x)
        .replace("__Y__", y)
        .replace("__DOWN__", if down { "true" } else { "false" })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A form's navigation starts in a task of its own after the submit event; a settling
    /// probe that runs before that task (as it can when a loaded renderer runs the probe's
    /// evaluation first) must not call the page settled. Here the submission and the probe
    /// share one evaluation, so the probe's first look always comes first; the results page
    /// never answers, so the old document stays to be looked at again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_probe_ahead_of_a_form_submission_waits_for_it() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut sock, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                if String::from_utf8_lossy(&buf[..n]).starts_with("GET /form ") {
                    let body = r#"<title>Form</title><form id="f" action="/results"><input name="q" value="x"><input name="method" value="m"><input name="target" value="t"></form>
                        <form id="g" action="/results" onsubmit="event.preventDefault()"></form>"#;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = sock.write_all(format!("{head}{body}").as_bytes()).await;
                } else {
                    // /results (and the favicon): never answered.
                    held.push(sock);
                }
            }
        });
        let mut cfg = crate::PoolConfig::new(crate::PoolConfig::default_chromium());
        cfg.browsers = 1;
        cfg.contexts_per_browser = 1;
        let pool = crate::BrowserPool::launch(cfg).await.unwrap();
        let mut s = pool.lease().await.unwrap();
        let goto = crate::parse_action(&format!("goto(\"{base}/form\")")).unwrap();
        assert_eq!(s.act(&goto).await.unwrap().error, None);
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The submission and action `n`'s probe in one evaluation; the probe's state.
        async fn submit_then_probe(
            s: &crate::Session,
            n: u64,
            submission: &str,
        ) -> serde_json::Value {
            let probe = settle(n, Duration::from_millis(1), Duration::from_millis(2_000));
            let js = format!("({}, {submission}, {probe})", prepare(n));
            s.evaluate(&js).await.unwrap().unwrap()
        }
        // A submission the page handles itself (cancelled) navigates nowhere: nothing to
        // wait for.
        let state =
            submit_then_probe(&s, 1_000, "document.getElementById('g').requestSubmit()").await;
        assert_eq!(
            (&state["state"], &state["timers"]),
            (&"complete".into(), &0.into()),
            "{state}"
        );
        let state =
            submit_then_probe(&s, 1_001, "document.getElementById('f').requestSubmit()").await;
        assert_eq!(state["state"], "leaving", "{state}");
        // A script's form.submit() fires no submit event, yet navigates the same way; the
        // form's fields named "method" and "target" must not trip the bookkeeping up. (A
        // fresh page: this one waits for /results.)
        s.close().await;
        let mut s = pool.lease().await.unwrap();
        assert_eq!(s.act(&goto).await.unwrap().error, None);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let state = submit_then_probe(&s, 1_002, "document.getElementById('f').submit()").await;
        assert_eq!(state["state"], "leaving", "{state}");
        s.close().await;
        pool.shutdown().await;
    }

    #[test]
    fn hostile_strings_stay_inside_their_literal() {
        let js = fill(
            &Target::Selector("a\"); alert(1); (\"".into()),
            "x'`${y}`\n",
            true,
        );
        assert!(js.contains(r#"CSS = "a\"); alert(1); (\"""#));
        assert!(!js.contains("__"), "every placeholder filled");
        for js in [
            resolve(&Target::Element(3)),
            select(&Target::Element(3), "x"),
            scroll_area("3", "null", "null", "null", true),
        ] {
            assert!(!js.contains("#include"), "helpers spliced in");
            assert!(js.contains("const numbered"), "element lookup present");
        }
    }
}
