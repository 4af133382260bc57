//! The action language as a regular expression, built from the tables the parser and
//! `Display` use (action names, the key list, the wait limit, JSON string escapes), so
//! the language is defined once.
//!
//! [`canonical_regex`] is exactly the lines `Display` writes (tests check it against the
//! parser on a generated corpus); [`action_regex`] narrows it to what one observation
//! offers a constrained decoder: its element numbers (or grid points), its tabs, and a
//! little slack in spacing that the parser reads anyway.
//!
//! This module writes expressions; it never compiles or runs them (that is the decoder's
//! business, in `inference`).

use crate::action::MAX_WAIT_MS;
use crate::action_set::ActionSet;
use crate::keys::{key_names, modifier_names};
use crate::observation::{Element, Observation};

/// How a model's actions address the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grounding {
    /// By element number, from a numbered element list (set-of-marks).
    Marks,
    /// By `x, y` on a 0-1000 grid over the screenshot (the Qwen-VL computer-use convention).
    Coordinates,
}

/// The grid `Coordinates` grounding points on, per axis.
pub const GRID: u64 = 1000;

/// One character inside a JSON string as `Display` (serde_json) writes it: control
/// characters escaped, the short escapes where JSON has them.
const CHAR: &str = r#"(?:[^"\\\x00-\x1f]|\\["\\bfnrt]|\\u00(?:0[0-7bef]|1[0-9a-f]))"#;
/// A character of [`CHAR`] that is not whitespace (`str::trim` would keep it).
const SOLID: &str = r#"(?:[^"\\\x00-\x1f\s]|\\["\\b]|\\u00(?:0[0-7ef]|1[0-9a-f]))"#;
/// A non-negative number as `Display` writes it: no leading zeros, no trailing fraction
/// zeros, no exponent.
const NUMBER: &str = r"(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*[1-9])?)";
/// A signed [`NUMBER`] (never `-0`).
const SIGNED: &str = r"(?:0|-?(?:[1-9][0-9]*(?:\.[0-9]*[1-9])?|0\.[0-9]*[1-9]))";

/// A JSON-quoted string.
fn string() -> String {
    format!(r#""{CHAR}*""#)
}

/// A JSON-quoted string with something besides whitespace in it (what `css=` takes).
fn solid_string() -> String {
    format!(r#""(?:[\s&&[^\x00-\x1f]]|\\[tnrf]|\\u000b)*{SOLID}{CHAR}*""#)
}

/// Whole numbers from `min` (0 or 1) to `max`, written without leading zeros.
pub fn decimal_range(min: u64, max: u64) -> String {
    let digits: Vec<u32> = max
        .to_string()
        .chars()
        .map(|c| c.to_digit(10).expect("a decimal digit"))
        .collect();
    let mut alts: Vec<String> = Vec::new();
    if min == 0 {
        alts.push("0".into());
    }
    // Every shorter length, whole.
    for len in 1..digits.len() {
        alts.push(match len {
            1 => "[1-9]".into(),
            _ => format!("[1-9][0-9]{{{}}}", len - 1),
        });
    }
    // The full length: max's prefix, then a smaller digit, then anything.
    for i in 0..digits.len() {
        let low = if i == 0 { 1 } else { 0 };
        let Some(high) = digits[i].checked_sub(1).filter(|h| *h >= low) else {
            continue;
        };
        let prefix: String = digits[..i].iter().map(|d| d.to_string()).collect();
        let rest = digits.len() - i - 1;
        let tail = match rest {
            0 => String::new(),
            1 => "[0-9]".into(),
            n => format!("[0-9]{{{n}}}"),
        };
        alts.push(format!("{prefix}[{low}-{high}]{tail}"));
    }
    if max > 0 {
        alts.push(max.to_string());
    }
    format!("(?:{})", alts.join("|"))
}

/// What an expression offers; every field an expression already (`None`: not offered).
struct Space {
    /// Between arguments: `, ` exactly, or with the space optional.
    sep: &'static str,
    /// Before the action: nothing, or an optional space (a prompt may end in `Action:`).
    lead: &'static str,
    /// Targets of the pointer actions and of `scroll(target, direction)`.
    any: Option<String>,
    /// Destinations of `drag` (the part after `drag(from, `).
    drag_to: Option<String>,
    /// Targets `type` may fill.
    typeable: Option<String>,
    /// Targets `select` may choose in.
    selectable: Option<String>,
    /// The key combinations of `press`, inside the quotes.
    keys: String,
    /// Tab numbers of `switch_tab` and `close_tab`.
    tabs: Option<String>,
    /// Whether `scroll(dx, dy)` is offered.
    scroll_by: bool,
    /// The kinds of action offered at all.
    actions: ActionSet,
}

/// The alternation of every action `space` offers, in the grammar's order of names. When
/// the set leaves nothing this page allows (only `click`, on a page without elements),
/// `stop()`: a policy held to a set still ends its episode rather than write nothing.
fn expression(space: &Space) -> String {
    let sep = space.sep;
    let s = string();
    let on = |name: &str| space.actions.allows(name);
    // The names of `group` the set allows, as an alternation.
    let some = |group: &[&str]| {
        let kept: Vec<&str> = group.iter().copied().filter(|n| on(n)).collect();
        (!kept.is_empty()).then(|| kept.join("|"))
    };
    let mut actions: Vec<String> = Vec::new();
    if let (Some(t), Some(names)) = (
        &space.any,
        some(&["click", "double_click", "right_click", "hover"]),
    ) {
        actions.push(format!(r"(?:{names})\({t}\)"));
    }
    if let (Some(t), Some(to), true) = (&space.any, &space.drag_to, on("drag")) {
        actions.push(format!(r"drag\({t}{sep}{to}\)"));
    }
    if let (Some(t), true) = (&space.typeable, on("type")) {
        actions.push(format!(r"type\({t}{sep}{s}(?:{sep}clear=false)?\)"));
    }
    if let (Some(t), true) = (&space.selectable, on("select")) {
        actions.push(format!(r"select\({t}{sep}{s}\)"));
    }
    if on("press") {
        actions.push(format!(r#"press\("{}"\)"#, space.keys));
    }
    if on("scroll") {
        actions.push(r"scroll\((?:down|up)\)".into());
        if space.scroll_by {
            actions.push(format!(r"scroll\({SIGNED}{sep}{SIGNED}\)"));
        }
        if let Some(t) = &space.any {
            actions.push(format!(r"scroll\({t}{sep}(?:down|up)\)"));
        }
    }
    if on("goto") {
        actions.push(format!(r"goto\({s}\)"));
    }
    for name in ["back", "forward"] {
        if on(name) {
            actions.push(format!(r"{name}\(\)"));
        }
    }
    if on("wait") {
        actions.push(format!(
            r"wait\({}\)",
            decimal_range(0, u64::from(MAX_WAIT_MS))
        ));
    }
    if let (Some(n), Some(names)) = (&space.tabs, some(&["switch_tab", "close_tab"])) {
        actions.push(format!(r"(?:{names})\({n}\)"));
    }
    if on("answer") {
        actions.push(format!(r"answer\({s}\)"));
    }
    if on("stop") || actions.is_empty() {
        actions.push(r"stop\(\)".into());
    }
    format!("{}(?:{})", space.lead, actions.join("|"))
}

/// The named keys of the one key list, as an alternation.
fn named_keys() -> String {
    key_names().collect::<Vec<_>>().join("|")
}

/// The language `Display` writes, unanchored: every line it can write matches, and every
/// line that matches parses back to an action that writes that same line.
pub fn canonical_regex() -> String {
    let element = decimal_range(0, u64::from(u32::MAX));
    let solid = solid_string();
    let target = format!("(?:{element}|{NUMBER}, {NUMBER}|css={solid})");
    let modifiers: String = modifier_names().map(|m| format!(r"(?:{m}\+)?")).collect();
    // One character of the string (not the space: that is `Space`); `+` only alone, as
    // `Control++` does not read back.
    let char_key = r#"(?:[^"\\\x00-\x1f +]|\\["\\bfnrt]|\\u00(?:0[0-7bef]|1[0-9a-f]))"#;
    expression(&Space {
        sep: ", ",
        lead: "",
        any: Some(target.clone()),
        drag_to: Some(format!(
            "(?:to={element}|to_x={NUMBER}, to_y={NUMBER}|to_css={solid})"
        )),
        typeable: Some(target.clone()),
        selectable: Some(target),
        keys: format!(r"(?:{modifiers}(?:{}|{char_key})|\+)", named_keys()),
        tabs: Some(decimal_range(1, u64::from(u32::MAX))),
        scroll_by: true,
        actions: ActionSet::all(),
    })
}

/// The actions `obs` allows a constrained decoder, unanchored (what a server's guided
/// decoding takes as the whole output): element targets from its element list (none when
/// it has none), grid points in `Coordinates` grounding, tab numbers from its tab list,
/// keys from the key list (letters and digits, or a named key, after up to two modifiers),
/// and only the kinds of action in `actions`. A subset of what the parser reads.
pub fn action_regex(obs: &Observation, grounding: Grounding, actions: ActionSet) -> String {
    let sep = ", ?";
    // Element numbers of the elements `keep` picks, as an alternation.
    let numbers = |keep: &dyn Fn(&Element) -> bool| {
        let ids: Vec<String> = obs
            .elements
            .iter()
            .filter(|e| keep(e))
            .map(|e| e.id.to_string())
            .collect();
        (!ids.is_empty()).then(|| format!("(?:{})", ids.join("|")))
    };
    let (any, typeable, selectable) = match grounding {
        Grounding::Marks => (
            numbers(&|_| true),
            numbers(&takes_text),
            numbers(&|e| e.tag == "select"),
        ),
        // What is under a point is not known here.
        Grounding::Coordinates => {
            let axis = decimal_range(0, GRID);
            let point = Some(format!("{axis}{sep}{axis}"));
            (point.clone(), point, None)
        }
    };
    // Dragging by grid points is left to pointer-capable policies.
    let drag_to = match grounding {
        Grounding::Marks => any.as_ref().map(|t| format!("to={t}")),
        Grounding::Coordinates => None,
    };
    let modifiers = modifier_names().collect::<Vec<_>>().join("|");
    let tabs = (obs.tabs.len() > 1).then(|| {
        let numbers: Vec<String> = obs.tabs.iter().map(|t| t.number.to_string()).collect();
        format!("(?:{})", numbers.join("|"))
    });
    expression(&Space {
        sep,
        lead: " ?",
        any,
        drag_to,
        typeable,
        selectable,
        keys: format!(r"(?:(?:{modifiers})\+){{0,2}}(?:{}|[a-z0-9])", named_keys()),
        tabs,
        scroll_by: false,
        actions,
    })
}

/// Elements `type` can fill: text areas, text-like inputs, editable regions.
pub fn takes_text(e: &Element) -> bool {
    const NOT_TEXT: &[&str] = &[
        "checkbox", "radio", "button", "submit", "reset", "file", "image", "range", "color",
        "hidden",
    ];
    match e.tag.as_str() {
        "textarea" => true,
        "input" => !NOT_TEXT.contains(&e.input_type.as_deref().unwrap_or("text")),
        _ => matches!(e.role.as_str(), "textbox" | "searchbox" | "combobox"),
    }
}
