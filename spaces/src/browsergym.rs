//! BrowserGym's action strings (`click('12')`, `fill('5', "hello")`, `scroll(0, 200)`,
//! `send_msg_to_user("4")`) read as surfgym [`Action`]s, so an agent written for BrowserGym
//! can drive surfgym unchanged.
//!
//! This is a dialect, not a second grammar: each call maps onto actions of the one grammar
//! ([`crate::action`]), and every action produced is passed back through that grammar's
//! parser before it is returned, so nothing this path accepts could not have been written
//! in surfgym's own syntax. Arguments are Python literals only, read as Python reads them
//! (`python`); BrowserGym evaluates agents' text as Python, and guessing at anything that
//! would need evaluating would make a wrong action rather than an error the agent can fix.
//! Errors are worded like BrowserGym's `last_action_error` where it has a wording.

mod args;
mod python;
#[cfg(test)]
mod tests;

use crate::action::{self, Action, MAX_WAIT_MS, Scroll};
use args::{Args, Fail, SIGS};
use python::{Call, Value};

/// What the parser needs from the session: the active tab's number (surfgym numbers tabs
/// from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    /// The tab `tab_close()` closes.
    pub active_tab: u32,
}

/// Action text that does not translate, with a message meant for the agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrowserGymError {
    /// No call at all: the text is empty, blank or only comments.
    #[error("Received an empty action.")]
    Empty,
    /// Text that is not a sequence of calls with literal arguments.
    #[error("line {line}: invalid syntax: {message}")]
    Syntax {
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A call of a name that is not one of BrowserGym's actions.
    #[error(
        "line {line}: Invalid action type '{name}'. The actions are: {}.",
        action_names()
    )]
    InvalidAction {
        /// The line, from 1.
        line: usize,
        /// The name called.
        name: String,
    },
    /// One of BrowserGym's actions, or a form of one, that surfgym cannot carry out.
    #[error("line {line}: {message}")]
    Unsupported {
        /// The line, from 1.
        line: usize,
        /// What is not supported, and what to do instead where there is something.
        message: String,
    },
    /// Arguments that do not fit the action: their number, names, types or values.
    #[error("line {line}: {message}")]
    Arguments {
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// Reads BrowserGym action text (one call per line; blank lines and `#` comments ignored)
/// into surfgym actions: one per call, in order, except `press(bid, key_comb)`, which
/// focuses by clicking first and so yields two. All or nothing: one bad call fails the text.
pub fn parse(text: &str, ctx: &Context) -> Result<Vec<Action>, BrowserGymError> {
    let calls =
        python::calls(text).map_err(|(line, message)| BrowserGymError::Syntax { line, message })?;
    if calls.is_empty() {
        return Err(BrowserGymError::Empty);
    }
    // `tab_close()` closes whichever tab is active by then, which an earlier call of the
    // same text may have changed.
    let mut active = Some(ctx.active_tab);
    let mut out = Vec::new();
    for call in calls {
        let line = call.line;
        let actions = translate(call, &mut active).map_err(|f| f.at(line))?;
        for a in actions {
            out.push(through_grammar(a).map_err(|m| Fail::Args(m).at(line))?);
        }
    }
    Ok(out)
}

const USE_PRESS: &str = "use keyboard_press(key), e.g. 'Shift+ArrowDown'";
const USE_CLICK_OR_DRAG: &str =
    "use mouse_click(x, y) or mouse_drag_and_drop(from_x, from_y, to_x, to_y)";

/// BrowserGym's actions surfgym has no counterpart for, with what to do instead.
const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "new_tab",
        "tabs open only when a page opens them; goto(url) navigates the active tab",
    ),
    ("upload_file", ""),
    ("mouse_upload_file", ""),
    ("keyboard_type", "use fill(bid, text)"),
    ("keyboard_insert_text", "use fill(bid, text)"),
    ("keyboard_down", USE_PRESS),
    ("keyboard_up", USE_PRESS),
    ("mouse_down", USE_CLICK_OR_DRAG),
    ("mouse_up", USE_CLICK_OR_DRAG),
    (
        "get_element_html",
        "the observation's element list describes the elements",
    ),
    ("check", "use click(bid), which toggles it"),
    ("uncheck", "use click(bid), which toggles it"),
];

fn action_names() -> String {
    let names: Vec<&str> = SIGS.iter().map(|s| s.name).collect();
    names.join(", ")
}

/// One call as surfgym actions; `active` is the active tab, `None` once unknown.
fn translate(call: Call, active: &mut Option<u32>) -> Result<Vec<Action>, Fail> {
    if let Some((name, hint)) = UNSUPPORTED.iter().find(|(n, _)| *n == call.name) {
        let hint = if hint.is_empty() {
            String::new()
        } else {
            format!(": {hint}")
        };
        return Err(Fail::Unsupported(format!(
            "{name} is not supported by surfgym{hint}"
        )));
    }
    let Some(sig) = SIGS.iter().find(|s| s.name == call.name) else {
        return Err(Fail::Invalid(call.name));
    };
    let mut a = Args::bind(sig, call)?;
    let one = match sig.name {
        "click" => {
            let target = a.bid("bid")?;
            let right = a.right_button()?;
            a.no_modifiers()?;
            if right {
                Action::RightClick(target)
            } else {
                Action::Click(target)
            }
        }
        "dblclick" => {
            let target = a.bid("bid")?;
            if a.right_button()? {
                return Err(Fail::Unsupported(
                    "dblclick(button='right') is not supported by surfgym: it double-clicks \
                     with the left button only"
                        .into(),
                ));
            }
            a.no_modifiers()?;
            Action::DoubleClick(target)
        }
        "fill" => Action::Type {
            target: a.bid("bid")?,
            text: a.string("value")?,
            clear: true,
        },
        "clear" => Action::Type {
            target: a.bid("bid")?,
            text: String::new(),
            clear: true,
        },
        "select_option" => {
            let target = a.bid("bid")?;
            let option = match a.req("options")? {
                Value::Str(s) => s,
                Value::List(l) if l.len() == 1 => match l.into_iter().next() {
                    Some(Value::Str(s)) => s,
                    other => {
                        let got = other.unwrap_or(Value::None);
                        return Err(a.wrong("options", "a list of option texts or values", &got));
                    }
                },
                Value::List(l) if l.len() > 1 => {
                    return Err(Fail::Unsupported(
                        "select_option() with several options is not supported by surfgym \
                         (multi-select): select one option per action"
                            .into(),
                    ));
                }
                other => return Err(a.wrong("options", "an option's text or value", &other)),
            };
            Action::Select { target, option }
        }
        "hover" => Action::Hover(a.bid("bid")?),
        // surfgym has no focus action. A click focuses too; on a button or link it also
        // activates, which focus does not, but what agents focus is nearly always a field.
        "focus" => Action::Click(a.bid("bid")?),
        // Playwright's element press focuses the element first; the same click stands in.
        "press" => {
            let target = a.bid("bid")?;
            let key = a.key("key_comb")?;
            return Ok(vec![Action::Click(target), Action::Press(key)]);
        }
        "keyboard_press" => Action::Press(a.key("key")?),
        "scroll" => {
            let dx = a.req("delta_x")?;
            let dy = a.req("delta_y")?;
            Action::Scroll(Scroll::By {
                dx: a.number("delta_x", dx)?,
                dy: a.number("delta_y", dy)?,
            })
        }
        "drag_and_drop" => Action::Drag {
            from: a.bid("from_bid")?,
            to: a.bid("to_bid")?,
        },
        "mouse_click" => {
            let target = a.point("x", "y")?;
            if a.right_button()? {
                Action::RightClick(target)
            } else {
                Action::Click(target)
            }
        }
        "mouse_dblclick" => {
            let target = a.point("x", "y")?;
            if a.right_button()? {
                return Err(Fail::Unsupported(
                    "mouse_dblclick(button='right') is not supported by surfgym: it \
                     double-clicks with the left button only"
                        .into(),
                ));
            }
            Action::DoubleClick(target)
        }
        "mouse_move" => Action::Hover(a.point("x", "y")?),
        "mouse_drag_and_drop" => Action::Drag {
            from: a.point("from_x", "from_y")?,
            to: a.point("to_x", "to_y")?,
        },
        "goto" => Action::Goto(a.string("url")?),
        "go_back" => Action::Back,
        "go_forward" => Action::Forward,
        "tab_focus" => {
            let n = match a.req("index")? {
                Value::Int(i) if i >= 0.0 && i < f64::from(u32::MAX) => i as u32 + 1,
                Value::Int(i) => {
                    return Err(Fail::Args(format!(
                        "tab_focus() index counts the open tabs from 0, got {}",
                        Value::Int(i).repr()
                    )));
                }
                other => return Err(a.wrong("index", "an int", &other)),
            };
            *active = Some(n);
            Action::SwitchTab(n)
        }
        "tab_close" => {
            // After a close, which tab is active depends on how many are open, which only
            // the next observation tells.
            let Some(n) = active.take() else {
                return Err(Fail::Unsupported(
                    "a second tab_close() in one action is not supported by surfgym: the \
                     active tab is known again only from the next observation"
                        .into(),
                ));
            };
            Action::CloseTab(n)
        }
        "send_msg_to_user" => Action::Answer(a.string("text")?),
        // surfgym's stop carries no reason; the reason is still checked to be text.
        "report_infeasible" => {
            a.string("reason")?;
            Action::Stop
        }
        "noop" => {
            let ms = match a.opt("wait_ms") {
                None => 1000.0,
                Some(v) => a.number("wait_ms", v)?,
            };
            if ms < 0.0 {
                return Err(Fail::Args(format!(
                    "noop() wait_ms must not be negative, got {}",
                    Value::Float(ms).repr()
                )));
            }
            Action::Wait(ms.round().min(f64::from(MAX_WAIT_MS)) as u32)
        }
        // Every name in SIGS has its arm above.
        other => return Err(Fail::Invalid(other.to_string())),
    };
    Ok(vec![one])
}

/// The action as surfgym's grammar reads its canonical line: whatever the grammar refuses
/// (a tab number below 1, a key it cannot spell), this path refuses too.
fn through_grammar(a: Action) -> Result<Action, String> {
    let line = a.to_string();
    match action::parse(&line) {
        Ok(back) if back == a => Ok(a),
        Ok(back) => Err(format!("surfgym would read `{line}` as `{back}`")),
        Err(e) => Err(format!("surfgym cannot carry out `{line}`: {}", e.message)),
    }
}
