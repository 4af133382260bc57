//! The JavaScript snippets the session runs in pages, with their placeholders filled.
//!
//! Snippets live in `js/*.js` so they can be read and linted as JavaScript; values are
//! spliced in as JSON literals, never as raw text, so page-controlled strings cannot break
//! out of them.

use crate::action::Target;

const OBSERVE: &str = include_str!("js/observe.js");
const SETTLE: &str = include_str!("js/settle.js");
const PREPARE: &str = include_str!("js/prepare.js");
const RESOLVE: &str = include_str!("js/resolve.js");
const FILL: &str = include_str!("js/fill.js");
const SELECT: &str = include_str!("js/select.js");

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

pub(crate) fn observe() -> &'static str {
    OBSERVE
}

pub(crate) fn settle(action: u64) -> String {
    SETTLE.replace("__ACTION__", &action.to_string())
}

pub(crate) fn prepare(action: u64) -> String {
    PREPARE.replace("__ACTION__", &action.to_string())
}

pub(crate) fn resolve(target: &Target) -> String {
    let (id, css) = target_parts(target);
    RESOLVE.replace("__ID__", &id).replace("__CSS__", &css)
}

pub(crate) fn fill(target: &Target, text: &str, clear: bool) -> String {
    let (id, css) = target_parts(target);
    FILL.replace("__ID__", &id)
        .replace("__CSS__", &css)
        .replace("__TEXT__", &json(text))
        .replace("__CLEAR__", if clear { "true" } else { "false" })
}

pub(crate) fn select(target: &Target, option: &str) -> String {
    let (id, css) = target_parts(target);
    SELECT
        .replace("__ID__", &id)
        .replace("__CSS__", &css)
        .replace("__TEXT__", &json(option))
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
    }
}
