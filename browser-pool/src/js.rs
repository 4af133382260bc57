//! The JavaScript snippets the session runs in pages, with their placeholders filled.
//!
//! Snippets live in `js/*.js` so they can be read and linted as JavaScript; values are
//! spliced in as JSON literals, never as raw text, so page-controlled strings cannot break
//! out of them.

use std::time::Duration;

use crate::action::Target;

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
