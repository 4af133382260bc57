//! BrowserGym's action signatures, Python's binding of a call's arguments to them, and the
//! typed reading of each argument (bids, coordinates, buttons, Playwright key combinations).

use std::borrow::Cow;

use super::BrowserGymError;
use super::python::{Call, Value};
use crate::action::Target;
use crate::keys::KeyCombo;

/// A BrowserGym action's signature as BrowserGym writes it, defaults included.
pub(super) struct Sig {
    pub(super) name: &'static str,
    params: &'static [&'static str],
}

impl Sig {
    fn param(p: &str) -> &str {
        p.split('=').next().unwrap_or(p)
    }

    fn index(&self, param: &str) -> Option<usize> {
        self.params.iter().position(|p| Sig::param(p) == param)
    }

    fn required(&self) -> usize {
        self.params.iter().filter(|p| !p.contains('=')).count()
    }

    fn usage(&self) -> String {
        format!("{}({})", self.name, self.params.join(", "))
    }
}

const fn sig(name: &'static str, params: &'static [&'static str]) -> Sig {
    Sig { name, params }
}

pub(super) const SIGS: &[Sig] = &[
    sig("click", &["bid", "button='left'", "modifiers=[]"]),
    sig("dblclick", &["bid", "button='left'", "modifiers=[]"]),
    sig("fill", &["bid", "value"]),
    sig("clear", &["bid"]),
    sig("select_option", &["bid", "options"]),
    sig("hover", &["bid"]),
    sig("focus", &["bid"]),
    sig("press", &["bid", "key_comb"]),
    sig("keyboard_press", &["key"]),
    sig("scroll", &["delta_x", "delta_y"]),
    sig("drag_and_drop", &["from_bid", "to_bid"]),
    sig("mouse_click", &["x", "y", "button='left'"]),
    sig("mouse_dblclick", &["x", "y", "button='left'"]),
    sig("mouse_move", &["x", "y"]),
    sig("mouse_drag_and_drop", &["from_x", "from_y", "to_x", "to_y"]),
    sig("goto", &["url"]),
    sig("go_back", &[]),
    sig("go_forward", &[]),
    sig("tab_focus", &["index"]),
    sig("tab_close", &[]),
    sig("send_msg_to_user", &["text"]),
    sig("report_infeasible", &["reason"]),
    sig("noop", &["wait_ms=1000"]),
];

/// Why a call does not translate, before the line is known.
pub(super) enum Fail {
    Invalid(String),
    Args(String),
    Unsupported(String),
}

impl Fail {
    pub(super) fn at(self, line: usize) -> BrowserGymError {
        match self {
            Fail::Invalid(name) => BrowserGymError::InvalidAction { line, name },
            Fail::Args(message) => BrowserGymError::Arguments { line, message },
            Fail::Unsupported(message) => BrowserGymError::Unsupported { line, message },
        }
    }
}

/// A call's arguments bound to its parameters, as Python binds them.
pub(super) struct Args {
    sig: &'static Sig,
    slots: Vec<Option<Value>>,
}

impl Args {
    pub(super) fn bind(sig: &'static Sig, call: Call) -> Result<Args, Fail> {
        let given = call.positional.len() + call.keyword.len();
        let count_error = |missing: &str| {
            let takes = match (sig.required(), sig.params.len()) {
                (_, 0) => "no arguments".to_string(),
                (r, n) if r == n => format!("{n} argument{}", if n == 1 { "" } else { "s" }),
                (r, n) => format!("from {r} to {n} arguments"),
            };
            Fail::Args(format!(
                "{}() takes {takes} ({given} given){missing}; usage: {}",
                sig.name,
                sig.usage()
            ))
        };
        if call.positional.len() > sig.params.len() {
            return Err(count_error(""));
        }
        let mut slots = vec![None; sig.params.len()];
        for (slot, v) in slots.iter_mut().zip(call.positional) {
            *slot = Some(v);
        }
        for (k, v) in call.keyword {
            let Some(slot) = sig.index(&k).and_then(|i| slots.get_mut(i)) else {
                return Err(Fail::Args(format!(
                    "{}() got an unexpected keyword argument '{k}'; usage: {}",
                    sig.name,
                    sig.usage()
                )));
            };
            if slot.is_some() {
                return Err(Fail::Args(format!(
                    "{}() got multiple values for argument '{k}'",
                    sig.name
                )));
            }
            *slot = Some(v);
        }
        let missing: Vec<String> = sig
            .params
            .iter()
            .zip(&slots)
            .filter(|(p, s)| !p.contains('=') && s.is_none())
            .map(|(p, _)| format!("'{p}'"))
            .collect();
        if !missing.is_empty() {
            return Err(count_error(&format!(": missing {}", missing.join(" and "))));
        }
        Ok(Args { sig, slots })
    }

    pub(super) fn opt(&mut self, param: &str) -> Option<Value> {
        let i = self.sig.index(param)?;
        self.slots.get_mut(i).and_then(Option::take)
    }

    pub(super) fn req(&mut self, param: &str) -> Result<Value, Fail> {
        self.opt(param)
            .ok_or_else(|| Fail::Args(format!("{}() is missing '{param}'", self.sig.name)))
    }

    pub(super) fn wrong(&self, param: &str, want: &str, got: &Value) -> Fail {
        Fail::Args(format!(
            "{}() argument '{param}' must be {want}, got {}",
            self.sig.name,
            got.repr()
        ))
    }

    pub(super) fn bid(&mut self, param: &str) -> Result<Target, Fail> {
        let v = self.req(param)?;
        let n = match &v {
            // Digits as the observation writes them: "012" is no element's bid.
            Value::Str(s) if s.bytes().all(|b| b.is_ascii_digit()) && !s.starts_with('0') => {
                s.parse::<u32>().ok()
            }
            Value::Str(_) => None,
            Value::Int(n) if *n >= 1.0 && *n <= f64::from(u32::MAX) => Some(*n as u32),
            Value::Int(_) => None,
            other => return Err(self.wrong(param, "a bid such as '12'", other)),
        };
        n.map(Target::Element).ok_or_else(|| {
            Fail::Args(format!(
                "bid {} names no element: surfgym's bids are the element numbers of the \
                 observation",
                v.repr()
            ))
        })
    }

    pub(super) fn string(&mut self, param: &str) -> Result<String, Fail> {
        match self.req(param)? {
            Value::Str(s) => Ok(s),
            other => Err(self.wrong(param, "a str", &other)),
        }
    }

    pub(super) fn number(&self, param: &str, v: Value) -> Result<f64, Fail> {
        match v {
            Value::Int(n) | Value::Float(n) => Ok(n),
            other => Err(self.wrong(param, "a number", &other)),
        }
    }

    pub(super) fn point(&mut self, x: &str, y: &str) -> Result<Target, Fail> {
        let mut coord = |p: &str| {
            let v = self.req(p)?;
            match self.number(p, v)? {
                n if n >= 0.0 => Ok(n),
                n => Err(Fail::Args(format!(
                    "{}() argument '{p}' must not be negative (coordinates are in the \
                     viewport), got {}",
                    self.sig.name,
                    Value::Float(n).repr()
                ))),
            }
        };
        Ok(Target::Point {
            x: coord(x)?,
            y: coord(y)?,
        })
    }

    /// Whether the `button` argument is the right button (the left is the default).
    pub(super) fn right_button(&mut self) -> Result<bool, Fail> {
        match self.opt("button") {
            None | Some(Value::None) => Ok(false),
            Some(Value::Str(b)) if b == "left" => Ok(false),
            Some(Value::Str(b)) if b == "right" => Ok(true),
            Some(Value::Str(b)) if b == "middle" => Err(Fail::Unsupported(format!(
                "{}(button='middle') is not supported by surfgym: it has no middle button",
                self.sig.name
            ))),
            Some(other) => Err(self.wrong("button", "'left', 'middle' or 'right'", &other)),
        }
    }

    pub(super) fn no_modifiers(&mut self) -> Result<(), Fail> {
        match self.opt("modifiers") {
            None | Some(Value::None) => Ok(()),
            Some(Value::List(l)) if l.is_empty() => Ok(()),
            Some(Value::List(_)) => Err(Fail::Unsupported(format!(
                "{}(modifiers=...): modifiers are not supported by surfgym; leave them out \
                 (keyboard_press takes key combinations such as 'Control+a')",
                self.sig.name
            ))),
            Some(other) => Err(self.wrong("modifiers", "a list", &other)),
        }
    }

    pub(super) fn key(&mut self, param: &str) -> Result<KeyCombo, Fail> {
        let text = self.string(param)?;
        key_combo(&text).map_err(|e| {
            Fail::Args(format!(
                "{}() argument '{param}' {}: {e}",
                self.sig.name,
                Value::Str(text).repr()
            ))
        })
    }
}

/// Playwright's key combination syntax as surfgym's: `ControlOrMeta` is Control (what
/// Playwright makes of it everywhere but macOS), and key codes (`KeyA`, `Digit1`, `Minus`)
/// are the characters they type on a US layout. Everything else is surfgym's own key list.
fn key_combo(text: &str) -> Result<KeyCombo, String> {
    // `Shift++` (a modifier with the plus key) has an empty last part; it goes to surfgym's
    // parser whole, which refuses it: its syntax cannot combine a modifier with `+`.
    let (modifiers, key) = match text.rsplit_once('+') {
        Some((m, k)) if !k.is_empty() => (Some(m), k),
        _ => (None, text),
    };
    let mut spelled = String::new();
    for m in modifiers.into_iter().flat_map(|m| m.split('+')) {
        spelled.push_str(if m == "ControlOrMeta" { "Control" } else { m });
        spelled.push('+');
    }
    spelled.push_str(&playwright_key(key));
    KeyCombo::parse(&spelled)
}

const KEY_CODES: &[(&str, &str)] = &[
    ("Backquote", "`"),
    ("Minus", "-"),
    ("Equal", "="),
    ("BracketLeft", "["),
    ("BracketRight", "]"),
    ("Backslash", "\\"),
    ("Semicolon", ";"),
    ("Quote", "'"),
    ("Comma", ","),
    ("Period", "."),
    ("Slash", "/"),
];

fn playwright_key(name: &str) -> Cow<'_, str> {
    let one_char =
        |s: &str, ok: fn(&char) -> bool| s.chars().count() == 1 && s.chars().all(|c| ok(&c));
    if let Some(letter) = name
        .strip_prefix("Key")
        .filter(|l| one_char(l, char::is_ascii_uppercase))
    {
        return Cow::Owned(letter.to_ascii_lowercase());
    }
    if let Some(digit) = name
        .strip_prefix("Digit")
        .filter(|d| one_char(d, char::is_ascii_digit))
    {
        return Cow::Borrowed(digit);
    }
    match KEY_CODES.iter().find(|(code, _)| *code == name) {
        Some((_, c)) => Cow::Borrowed(c),
        None => Cow::Borrowed(name),
    }
}
