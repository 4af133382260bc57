//! The action space and its one text grammar.
//!
//! Every policy speaks the same grammar (documented in `docs/formats.md`): scripted
//! reference solutions, the random policy, model outputs. [`parse`] turns one line into an
//! [`Action`]; `Display` writes the canonical line back, so `parse(&a.to_string()) == Ok(a)`.

use std::fmt;

use crate::keys::KeyCombo;

/// What an action points at.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// An element number from the last observation.
    Element(u32),
    /// A viewport pixel.
    Point {
        /// CSS pixels from the left edge.
        x: f64,
        /// CSS pixels from the top edge.
        y: f64,
    },
    /// The first element matching a CSS selector (used by reference solutions, whose
    /// authors cannot know element numbers in advance).
    Selector(String),
}

/// How far to scroll.
#[derive(Debug, Clone, PartialEq)]
pub enum Scroll {
    /// One viewport height down.
    Down,
    /// One viewport height up.
    Up,
    /// By a pixel offset.
    By {
        /// Horizontal pixels.
        dx: f64,
        /// Vertical pixels.
        dy: f64,
    },
}

/// One browser action.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Click a target with the left mouse button.
    Click(Target),
    /// Focus a target and type text, replacing its content unless `clear` is false.
    Type {
        /// Where to type.
        target: Target,
        /// What to type.
        text: String,
        /// Replace the existing content (the default) or append.
        clear: bool,
    },
    /// Choose an option of a `<select>` by visible text or value.
    Select {
        /// The `<select>`.
        target: Target,
        /// Option text or value.
        option: String,
    },
    /// Press a key or key combination on the focused element.
    Press(KeyCombo),
    /// Scroll the page.
    Scroll(Scroll),
    /// Navigate to a URL.
    Goto(String),
    /// Go back in history.
    Back,
    /// End the episode with a final answer.
    Answer(String),
    /// End the episode without an answer.
    Stop,
}

impl Action {
    /// Whether this action ends the episode.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Action::Answer(_) | Action::Stop)
    }

    /// The action's name in the grammar.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Click(_) => "click",
            Action::Type { .. } => "type",
            Action::Select { .. } => "select",
            Action::Press(_) => "press",
            Action::Scroll(_) => "scroll",
            Action::Goto(_) => "goto",
            Action::Back => "back",
            Action::Answer(_) => "answer",
            Action::Stop => "stop",
        }
    }
}

/// The action names the grammar knows.
pub const ACTION_NAMES: &[&str] = &[
    "click", "type", "select", "press", "scroll", "goto", "back", "answer", "stop",
];

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
enum Token {
    Ident(String),
    Number(f64),
    Str(String),
    LParen,
    RParen,
    Comma,
    Eq,
}

fn lex(s: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '(' => {
                out.push(Token::LParen);
                i += 1
            }
            ')' => {
                out.push(Token::RParen);
                i += 1
            }
            ',' => {
                out.push(Token::Comma);
                i += 1
            }
            '=' => {
                out.push(Token::Eq);
                i += 1
            }
            '"' | '\'' => {
                let (text, next) = lex_string(&chars, i)?;
                out.push(Token::Str(text));
                i = next;
            }
            c if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => {
                let start = i;
                i += 1;
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                    i += 1;
                }
                let raw: String = chars[start..i].iter().collect();
                let n: f64 = raw
                    .parse()
                    .map_err(|_| format!("`{raw}` is not a number"))?;
                if !n.is_finite() {
                    return Err(format!("`{raw}` is not a finite number"));
                }
                out.push(Token::Number(n));
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                out.push(Token::Ident(chars[start..i].iter().collect()));
            }
            other => return Err(format!("unexpected character `{other}`")),
        }
    }
    Ok(out)
}

fn lex_string(chars: &[char], start: usize) -> Result<(String, usize), String> {
    let quote = chars[start];
    let mut out = String::new();
    let mut i = start + 1;
    while i < chars.len() {
        let c = chars[i];
        if c == quote {
            return Ok((out, i + 1));
        }
        if c == '\\' {
            i += 1;
            let e = *chars.get(i).ok_or("unterminated escape in string")?;
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                '/' => out.push('/'),
                '\\' => out.push('\\'),
                '"' => out.push('"'),
                '\'' => out.push('\''),
                'u' => {
                    let hex: String = chars
                        .get(i + 1..i + 5)
                        .ok_or("short \\u escape")?
                        .iter()
                        .collect();
                    let code = u32::from_str_radix(&hex, 16)
                        .map_err(|_| format!("bad \\u escape `{hex}`"))?;
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    i += 4;
                }
                other => return Err(format!("unknown escape `\\{other}` in string")),
            }
            i += 1;
            continue;
        }
        out.push(c);
        i += 1;
    }
    Err("unterminated string (missing closing quote)".into())
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
        "scroll" => match (take_positional(&mut call), take_positional(&mut call)) {
            (Some(Value::Word(w) | Value::Str(w)), None) if w.eq_ignore_ascii_case("down") => {
                Action::Scroll(Scroll::Down)
            }
            (Some(Value::Word(w) | Value::Str(w)), None) if w.eq_ignore_ascii_case("up") => {
                Action::Scroll(Scroll::Up)
            }
            (Some(Value::Number(dx)), Some(Value::Number(dy))) => {
                Action::Scroll(Scroll::By { dx, dy })
            }
            _ => return Err("scroll takes `down`, `up`, or two numbers dx, dy".into()),
        },
        "goto" => Action::Goto(take_text(&mut call, "a URL")?),
        "back" => Action::Back,
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
            if a.fract() != 0.0 || a < 0.0 || a > f64::from(u32::MAX) {
                return Err(format!(
                    "element number must be a whole number, got {}",
                    fmt_num(a)
                ));
            }
            Ok(Target::Element(a as u32))
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

fn fmt_num(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialize")
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Element(n) => write!(f, "{n}"),
            Target::Point { x, y } => write!(f, "{}, {}", fmt_num(*x), fmt_num(*y)),
            Target::Selector(s) => write!(f, "css={}", quote(s)),
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Click(t) => write!(f, "click({t})"),
            Action::Type {
                target,
                text,
                clear,
            } => {
                write!(f, "type({target}, {}", quote(text))?;
                if !clear {
                    f.write_str(", clear=false")?;
                }
                f.write_str(")")
            }
            Action::Select { target, option } => write!(f, "select({target}, {})", quote(option)),
            Action::Press(k) => write!(f, "press({})", quote(&k.to_string())),
            Action::Scroll(Scroll::Down) => f.write_str("scroll(down)"),
            Action::Scroll(Scroll::Up) => f.write_str("scroll(up)"),
            Action::Scroll(Scroll::By { dx, dy }) => {
                write!(f, "scroll({}, {})", fmt_num(*dx), fmt_num(*dy))
            }
            Action::Goto(u) => write!(f, "goto({})", quote(u)),
            Action::Back => f.write_str("back()"),
            Action::Answer(a) => write!(f, "answer({})", quote(a)),
            Action::Stop => f.write_str("stop()"),
        }
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
    fn display_round_trips() {
        for line in [
            "click(12)",
            "click(640, 360.5)",
            r##"click(css="a[href='x']")"##,
            r#"type(3, "a\nb \"c\"")"#,
            r##"type(css="#q", "mug", clear=false)"##,
            r#"select(4, "Economy")"#,
            r#"press("Control+Shift+a")"#,
            "scroll(down)",
            "scroll(up)",
            "scroll(0, 400)",
            r#"goto("http://x.test/")"#,
            "back()",
            r#"answer("héllo ✓")"#,
            "stop()",
        ] {
            let a = ok(line);
            assert_eq!(a.to_string(), line, "canonical form");
            assert_eq!(ok(&a.to_string()), a, "round trip");
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
