//! The parser: one line of the grammar to an [`Action`], with errors that tell a policy
//! what to write instead.

use super::display::fmt_num;
use super::lex::{Token, lex};
use super::{ACTION_NAMES, Action, Direction, MAX_WAIT_MS, Scroll, Target};
use crate::keys::KeyCombo;

/// A line that is not a valid action, with a message meant for the policy (and its author).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse action `{line}`: {message}")]
pub struct ParseError {
    /// The offending line.
    pub line: String,
    /// What is wrong with it.
    pub message: String,
}

/// Parses one action line, e.g. `click(12)` or `type(css="#q", "red mug")`.
pub fn parse(line: &str) -> Result<Action, ParseError> {
    let err = |message: String| ParseError {
        line: line.to_string(),
        message,
    };
    let tokens = lex(line.trim()).map_err(&err)?;
    let call = parse_call(&tokens).map_err(&err)?;
    build(call).map_err(err)
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Number(f64),
    Str(String),
    Word(String),
}

impl Value {
    fn describe(&self) -> String {
        match self {
            Value::Number(n) => format!("number {}", fmt_num(*n)),
            Value::Str(s) => format!("string {s:?}"),
            Value::Word(w) => format!("word `{w}`"),
        }
    }
}

struct Call {
    name: String,
    positional: Vec<Value>,
    keyword: Vec<(String, Value)>,
}

fn parse_call(tokens: &[Token]) -> Result<Call, String> {
    let mut it = tokens.iter().peekable();
    let name = match it.next() {
        Some(Token::Ident(n)) => n.to_ascii_lowercase(),
        Some(_) => return Err("an action starts with its name, e.g. click(12)".into()),
        None => return Err("empty action".into()),
    };
    if it.next() != Some(&Token::LParen) {
        return Err(format!("expected `(` after `{name}`"));
    }
    let mut call = Call {
        name,
        positional: Vec::new(),
        keyword: Vec::new(),
    };
    if it.peek() == Some(&&Token::RParen) {
        it.next();
    } else {
        loop {
            let value = match it.next() {
                Some(Token::Number(n)) => Value::Number(*n),
                Some(Token::Str(s)) => Value::Str(s.clone()),
                Some(Token::Ident(w)) => {
                    if it.peek() == Some(&&Token::Eq) {
                        it.next();
                        let v = match it.next() {
                            Some(Token::Number(n)) => Value::Number(*n),
                            Some(Token::Str(s)) => Value::Str(s.clone()),
                            Some(Token::Ident(w)) => Value::Word(w.clone()),
                            _ => return Err(format!("expected a value after `{w}=`")),
                        };
                        call.keyword.push((w.to_ascii_lowercase(), v));
                        match it.next() {
                            Some(Token::Comma) => continue,
                            Some(Token::RParen) => break,
                            _ => return Err("expected `,` or `)`".into()),
                        }
                    }
                    Value::Word(w.clone())
                }
                _ => return Err("expected an argument".into()),
            };
            call.positional.push(value);
            match it.next() {
                Some(Token::Comma) => continue,
                Some(Token::RParen) => break,
                _ => return Err("expected `,` or `)` between arguments".into()),
            }
        }
    }
    if it.next().is_some() {
        return Err("unexpected text after `)`".into());
    }
    Ok(call)
}

fn build(mut call: Call) -> Result<Action, String> {
    let name = call.name.clone();
    let action = match name.as_str() {
        "click" => Action::Click(take_target(&mut call)?),
        "type" | "fill" => {
            let target = take_target(&mut call)?;
            let text = take_text(&mut call, "the text to type")?;
            let clear = match take_keyword(&mut call, "clear") {
                None => true,
                Some(Value::Word(w)) if w.eq_ignore_ascii_case("true") => true,
                Some(Value::Word(w)) if w.eq_ignore_ascii_case("false") => false,
                Some(v) => return Err(format!("clear= takes true or false, not {}", v.describe())),
            };
            Action::Type {
                target,
                text,
                clear,
            }
        }
        "select" => {
            let target = take_target(&mut call)?;
            let option = take_text(&mut call, "the option to choose")?;
            Action::Select { target, option }
        }
        "press" => {
            let key = match take_positional(&mut call) {
                Some(Value::Str(s) | Value::Word(s)) => s,
                Some(Value::Number(n)) => fmt_num(n),
                None => return Err("press needs a key, e.g. press(\"Enter\")".into()),
            };
            Action::Press(KeyCombo::parse(&key)?)
        }
        "double_click" => Action::DoubleClick(take_target(&mut call)?),
        "right_click" => Action::RightClick(take_target(&mut call)?),
        "hover" => Action::Hover(take_target(&mut call)?),
        "drag" => build_drag(&mut call)?,
        "scroll" => build_scroll(&mut call)?,
        "goto" => Action::Goto(take_text(&mut call, "a URL")?),
        "back" => Action::Back,
        "forward" => Action::Forward,
        "wait" => Action::Wait(take_wait(&mut call)?),
        "switch_tab" | "tab_focus" => Action::SwitchTab(take_tab(&mut call, "switch_tab")?),
        "close_tab" | "tab_close" => Action::CloseTab(take_tab(&mut call, "close_tab")?),
        "answer" => Action::Answer(take_text(&mut call, "the answer text")?),
        "stop" => Action::Stop,
        other => {
            return Err(format!(
                "unknown action `{other}` (known: {})",
                ACTION_NAMES.join(", ")
            ));
        }
    };
    if let Some(v) = call.positional.first() {
        return Err(format!("{name} got an extra argument: {}", v.describe()));
    }
    if let Some((k, _)) = call.keyword.first() {
        return Err(format!("{name} does not take `{k}=`"));
    }
    Ok(action)
}

const DRAG_FORMS: &str =
    "drag(3, to=7), drag(x, y, to_x=X, to_y=Y) or drag(css=\"...\", to_css=\"...\")";

/// `drag(from, to=N | to_x=X, to_y=Y | to_css="...")`: the source is an ordinary target,
/// the destination is always named by keyword, so `drag(1, 2, 3, 4)` cannot be misread.
fn build_drag(call: &mut Call) -> Result<Action, String> {
    let from = match take_target(call) {
        Ok(t) => t,
        Err(_) if call.positional.is_empty() && call.keyword.iter().all(|(k, _)| k != "css") => {
            return Err(format!(
                "drag needs a source and a destination, e.g. {DRAG_FORMS}"
            ));
        }
        Err(e) => return Err(e),
    };
    if !call.positional.is_empty() {
        return Err(format!(
            "drag takes its destination by keyword (to=, to_x=/to_y= or to_css=), e.g. {DRAG_FORMS}"
        ));
    }
    let to = take_keyword(call, "to");
    let to_x = take_keyword(call, "to_x");
    let to_y = take_keyword(call, "to_y");
    let to_css = take_keyword(call, "to_css");
    let given = usize::from(to.is_some())
        + usize::from(to_x.is_some() || to_y.is_some())
        + usize::from(to_css.is_some());
    if given > 1 {
        return Err(
            "drag's destination is ambiguous: give only one of to=, to_x=/to_y= or to_css=".into(),
        );
    }
    let to = match (to, to_x, to_y, to_css) {
        (Some(Value::Number(n)), ..) => Target::Element(element_number(n)?),
        (Some(v), ..) => {
            return Err(format!(
                "to= takes an element number (to_x=/to_y= for a point, to_css= for a selector), got {}",
                v.describe()
            ));
        }
        (None, Some(x), Some(y), _) => match (x, y) {
            (Value::Number(x), Value::Number(y)) if x >= 0.0 && y >= 0.0 => Target::Point { x, y },
            (Value::Number(_), Value::Number(_)) => {
                return Err("coordinates must not be negative".into());
            }
            _ => return Err("to_x= and to_y= take numbers".into()),
        },
        (None, Some(_), None, _) => return Err("to_x= needs to_y= as well".into()),
        (None, None, Some(_), _) => return Err("to_y= needs to_x= as well".into()),
        (None, None, None, Some(Value::Str(s))) if !s.trim().is_empty() => Target::Selector(s),
        (None, None, None, Some(_)) => {
            return Err("to_css= takes a non-empty quoted selector".into());
        }
        (None, None, None, None) => {
            let hint = if matches!(from, Target::Point { .. }) {
                " (`drag(a, b)` reads a, b as the point to start from; drag(3, to=7) drags \
                 element 3 onto element 7)"
            } else {
                ""
            };
            return Err(format!(
                "drag is missing its destination, e.g. {DRAG_FORMS}{hint}"
            ));
        }
    };
    Ok(Action::Drag { from, to })
}

fn direction(v: &Value) -> Option<Direction> {
    match v {
        Value::Word(w) | Value::Str(w) if w.eq_ignore_ascii_case("down") => Some(Direction::Down),
        Value::Word(w) | Value::Str(w) if w.eq_ignore_ascii_case("up") => Some(Direction::Up),
        _ => None,
    }
}

/// `scroll(down|up)`, `scroll(dx, dy)` (the page) or `scroll(target, down|up)` (the
/// scrollable area at a target: `scroll(5, down)`, `scroll(x, y, up)`, `scroll(css="...", down)`).
fn build_scroll(call: &mut Call) -> Result<Action, String> {
    const FORMS: &str = "scroll takes `down`, `up`, two numbers dx, dy, or a target and a \
         direction (scroll(5, down), scroll(x, y, down), scroll(css=\"...\", up))";
    let has_css = call.keyword.iter().any(|(k, _)| k == "css");
    let ends_with_direction = call.positional.last().and_then(direction);
    if has_css || (ends_with_direction.is_some() && call.positional.len() > 1) {
        let Some(dir) = call.positional.pop().as_ref().and_then(direction) else {
            return Err(format!("{FORMS}: the direction (down or up) is missing"));
        };
        let target = take_target(call)?;
        return Ok(Action::ScrollElement {
            target,
            direction: dir,
        });
    }
    Ok(match (take_positional(call), take_positional(call)) {
        (Some(v), None) if direction(&v) == Some(Direction::Down) => Action::Scroll(Scroll::Down),
        (Some(v), None) if direction(&v) == Some(Direction::Up) => Action::Scroll(Scroll::Up),
        (Some(Value::Number(dx)), Some(Value::Number(dy))) => Action::Scroll(Scroll::By { dx, dy }),
        _ => return Err(FORMS.into()),
    })
}

fn take_wait(call: &mut Call) -> Result<u32, String> {
    match take_positional(call) {
        Some(Value::Number(ms))
            if ms.fract() == 0.0 && (0.0..=f64::from(MAX_WAIT_MS)).contains(&ms) =>
        {
            Ok(ms as u32)
        }
        Some(Value::Number(ms)) => Err(format!(
            "wait takes whole milliseconds from 0 to {MAX_WAIT_MS}, got {}",
            fmt_num(ms)
        )),
        Some(v) => Err(format!(
            "wait takes milliseconds as a number, e.g. wait(500), got {}",
            v.describe()
        )),
        None => Err(format!(
            "wait needs a duration in milliseconds (at most {MAX_WAIT_MS}), e.g. wait(500)"
        )),
    }
}

fn take_tab(call: &mut Call, name: &str) -> Result<u32, String> {
    match take_positional(call) {
        Some(Value::Number(n)) if n.fract() == 0.0 && n >= 1.0 && n <= f64::from(u32::MAX) => {
            Ok(n as u32)
        }
        Some(v) => Err(format!(
            "{name} takes a tab number from the tab list, counted from 1, e.g. {name}(2), got {}",
            v.describe()
        )),
        None => Err(format!(
            "{name} needs a tab number from the tab list, e.g. {name}(2)"
        )),
    }
}

fn element_number(a: f64) -> Result<u32, String> {
    if a.fract() != 0.0 || a < 0.0 || a > f64::from(u32::MAX) {
        return Err(format!(
            "element number must be a whole number, got {}",
            fmt_num(a)
        ));
    }
    Ok(a as u32)
}

fn take_positional(call: &mut Call) -> Option<Value> {
    (!call.positional.is_empty()).then(|| call.positional.remove(0))
}

fn take_keyword(call: &mut Call, key: &str) -> Option<Value> {
    let i = call.keyword.iter().position(|(k, _)| k == key)?;
    Some(call.keyword.remove(i).1)
}

fn take_text(call: &mut Call, what: &str) -> Result<String, String> {
    match take_positional(call) {
        Some(Value::Str(s)) => Ok(s),
        Some(Value::Number(n)) => Ok(fmt_num(n)),
        Some(v) => Err(format!(
            "{} expects {what} as a quoted string, got {}",
            call.name,
            v.describe()
        )),
        None => Err(format!("{} is missing {what}", call.name)),
    }
}

fn take_target(call: &mut Call) -> Result<Target, String> {
    if let Some(v) = take_keyword(call, "css") {
        return match v {
            Value::Str(s) if !s.trim().is_empty() => Ok(Target::Selector(s)),
            _ => Err("css= takes a non-empty quoted selector".into()),
        };
    }
    match call.positional.first() {
        Some(Value::Number(a)) => {
            let a = *a;
            call.positional.remove(0);
            if let Some(Value::Number(b)) = call.positional.first() {
                let b = *b;
                call.positional.remove(0);
                if a < 0.0 || b < 0.0 {
                    return Err("coordinates must not be negative".into());
                }
                return Ok(Target::Point { x: a, y: b });
            }
            Ok(Target::Element(element_number(a)?))
        }
        Some(v) => Err(format!(
            "{} needs an element number, x, y, or css=\"...\" first, got {}",
            call.name,
            v.describe()
        )),
        None => Err(format!(
            "{} needs a target: an element number, x, y, or css=\"...\"",
            call.name
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(line: &str) -> Action {
        parse(line).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn parses_every_action_form() {
        assert_eq!(ok("click(12)"), Action::Click(Target::Element(12)));
        assert_eq!(
            ok(" click( 640 , 360.5 ) "),
            Action::Click(Target::Point { x: 640.0, y: 360.5 })
        );
        assert_eq!(
            ok(r##"click(css="#buy")"##),
            Action::Click(Target::Selector("#buy".into()))
        );
        assert_eq!(
            ok(r#"type(3, "red \"mug\"")"#),
            Action::Type {
                target: Target::Element(3),
                text: "red \"mug\"".into(),
                clear: true
            }
        );
        assert_eq!(
            ok(r#"type(css="input[name='q']", 'x', clear=false)"#),
            Action::Type {
                target: Target::Selector("input[name='q']".into()),
                text: "x".into(),
                clear: false
            }
        );
        assert_eq!(
            ok(r#"select(4, "Economy")"#),
            Action::Select {
                target: Target::Element(4),
                option: "Economy".into()
            }
        );
        assert_eq!(
            ok(r#"press("Enter")"#),
            Action::Press(KeyCombo::parse("Enter").unwrap())
        );
        assert_eq!(ok("scroll(down)"), Action::Scroll(Scroll::Down));
        assert_eq!(ok(r#"scroll("up")"#), Action::Scroll(Scroll::Up));
        assert_eq!(
            ok("scroll(0, -400)"),
            Action::Scroll(Scroll::By {
                dx: 0.0,
                dy: -400.0
            })
        );
        assert_eq!(
            ok(r#"goto("http://a.test/x?y=1")"#),
            Action::Goto("http://a.test/x?y=1".into())
        );
        assert_eq!(ok("back()"), Action::Back);
        assert_eq!(ok("answer(\"12.50\")"), Action::Answer("12.50".into()));
        assert_eq!(ok("answer(42)"), Action::Answer("42".into()));
        assert_eq!(ok("STOP()"), Action::Stop);
    }

    #[test]
    fn parses_the_pointer_and_timing_actions() {
        assert_eq!(
            ok("double_click(7)"),
            Action::DoubleClick(Target::Element(7))
        );
        assert_eq!(
            ok("right_click(10, 20)"),
            Action::RightClick(Target::Point { x: 10.0, y: 20.0 })
        );
        assert_eq!(
            ok(r##"hover(css="#menu")"##),
            Action::Hover(Target::Selector("#menu".into()))
        );
        assert_eq!(
            ok("drag(3, to=7)"),
            Action::Drag {
                from: Target::Element(3),
                to: Target::Element(7)
            }
        );
        assert_eq!(
            ok("drag(100, 200, to_x=300, to_y=400.5)"),
            Action::Drag {
                from: Target::Point { x: 100.0, y: 200.0 },
                to: Target::Point { x: 300.0, y: 400.5 }
            }
        );
        assert_eq!(
            ok(r##"drag(to_css=".bin", css="#a")"##),
            Action::Drag {
                from: Target::Selector("#a".into()),
                to: Target::Selector(".bin".into())
            }
        );
        assert_eq!(
            ok("drag(3, to_y=5, to_x=4)"),
            Action::Drag {
                from: Target::Element(3),
                to: Target::Point { x: 4.0, y: 5.0 }
            }
        );
        assert_eq!(
            ok("scroll(5, down)"),
            Action::ScrollElement {
                target: Target::Element(5),
                direction: Direction::Down
            }
        );
        assert_eq!(
            ok("scroll(100, 200, \"up\")"),
            Action::ScrollElement {
                target: Target::Point { x: 100.0, y: 200.0 },
                direction: Direction::Up
            }
        );
        assert_eq!(
            ok(r##"scroll(css="#list", down)"##),
            Action::ScrollElement {
                target: Target::Selector("#list".into()),
                direction: Direction::Down
            }
        );
        // The page forms keep their meaning.
        assert_eq!(ok("scroll(down)"), Action::Scroll(Scroll::Down));
        assert_eq!(
            ok("scroll(5, 10)"),
            Action::Scroll(Scroll::By { dx: 5.0, dy: 10.0 })
        );
        assert_eq!(ok("forward()"), Action::Forward);
        assert_eq!(ok("wait(500)"), Action::Wait(500));
        assert_eq!(ok("wait(0)"), Action::Wait(0));
        assert_eq!(ok("switch_tab(2)"), Action::SwitchTab(2));
        assert_eq!(ok("tab_focus(2)"), Action::SwitchTab(2));
        assert_eq!(ok("close_tab(3)"), Action::CloseTab(3));
        assert_eq!(ok("wait(10000)"), Action::Wait(MAX_WAIT_MS));
        for a in [
            ok("double_click(1)"),
            ok("right_click(1)"),
            ok("hover(1)"),
            ok("drag(1, to=2)"),
            ok("scroll(1, up)"),
            ok("forward()"),
            ok("wait(1)"),
        ] {
            assert!(!a.is_terminal(), "{a}");
            assert!(ACTION_NAMES.contains(&a.name()), "{a}");
        }
    }

    #[test]
    fn errors_name_the_problem() {
        let cases = [
            ("", "empty action"),
            ("click", "expected `(`"),
            ("click(", "expected an argument"),
            ("click()", "needs a target"),
            ("click(\"Add to cart\")", "needs an element number"),
            ("click(1.5)", "whole number"),
            ("type(3)", "missing the text"),
            ("type(3, \"x\", clear=maybe)", "clear= takes true or false"),
            ("fly(3)", "unknown action `fly`"),
            ("stop(1)", "extra argument"),
            ("back(css=\"x\")", "does not take `css=`"),
            ("answer(\"open", "unterminated string"),
            ("click(1) now", "unexpected text after"),
            ("press(\"Hyper+x\")", "unknown modifier"),
            ("scroll(sideways)", "scroll takes"),
            ("click(1 @)", "unexpected character"),
            ("double_click()", "needs a target"),
            ("right_click(\"x\")", "needs an element number"),
            ("hover(2.5)", "whole number"),
            ("drag()", "needs a source and a destination"),
            ("drag(3, 7)", "missing its destination"),
            ("drag(3, 7)", "reads a, b as the point"),
            ("drag(100, 200, 300, 400)", "destination by keyword"),
            ("drag(3)", "missing its destination"),
            ("drag(3, to=7, to_css=\"#b\")", "ambiguous"),
            ("drag(3, to=7, to_x=1, to_y=2)", "ambiguous"),
            ("drag(3, to=\"#b\")", "to= takes an element number"),
            ("drag(3, to=1.5)", "whole number"),
            ("drag(3, to_x=10)", "to_x= needs to_y="),
            ("drag(3, to_y=10)", "to_y= needs to_x="),
            ("drag(3, to_x=-1, to_y=2)", "must not be negative"),
            ("drag(3, to_x=a, to_y=2)", "take numbers"),
            ("drag(3, to_css=\" \")", "non-empty"),
            ("drag(3, to=4, speed=2)", "does not take `speed=`"),
            ("scroll(css=\"#list\")", "direction (down or up) is missing"),
            (
                "scroll(css=\"#list\", left)",
                "direction (down or up) is missing",
            ),
            ("scroll(down, 5)", "scroll takes"),
            ("scroll(1, 2, 3, down)", "extra argument"),
            ("scroll(\"list\", down)", "needs an element number"),
            ("forward(1)", "extra argument"),
            ("wait()", "needs a duration"),
            ("wait(10001)", "from 0 to 10000"),
            ("wait(-5)", "from 0 to 10000"),
            ("wait(1.5)", "whole milliseconds"),
            ("wait(soon)", "as a number"),
            ("wait(1, 2)", "extra argument"),
            ("switch_tab()", "needs a tab number"),
            ("switch_tab(0)", "counted from 1"),
            ("close_tab(\"x\")", "takes a tab number"),
            ("close_tab(1.5)", "counted from 1"),
            ("switch_tab(1, 2)", "extra argument"),
        ];
        for (line, want) in cases {
            let e = parse(line).expect_err(line);
            assert!(
                e.message.contains(want),
                "{line:?}: {} (wanted {want:?})",
                e.message
            );
        }
    }
}
