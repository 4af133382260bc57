//! The canonical spelling of actions: what `Display` writes is what the parser reads back
//! and what the constrained-decoding expression ([`crate::pattern`]) describes.

use std::fmt;

use super::{Action, Direction, Scroll, Target};

/// A number as the grammar writes it: integers without a fraction.
pub(crate) fn fmt_num(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// A string as the grammar writes it: JSON-quoted.
pub(crate) fn quote(s: &str) -> String {
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
            Action::DoubleClick(t) => write!(f, "double_click({t})"),
            Action::RightClick(t) => write!(f, "right_click({t})"),
            Action::Hover(t) => write!(f, "hover({t})"),
            Action::Drag { from, to } => {
                write!(f, "drag({from}, ")?;
                match to {
                    Target::Element(n) => write!(f, "to={n})"),
                    Target::Point { x, y } => {
                        write!(f, "to_x={}, to_y={})", fmt_num(*x), fmt_num(*y))
                    }
                    Target::Selector(s) => write!(f, "to_css={})", quote(s)),
                }
            }
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
            Action::ScrollElement { target, direction } => {
                let d = match direction {
                    Direction::Down => "down",
                    Direction::Up => "up",
                };
                write!(f, "scroll({target}, {d})")
            }
            Action::Goto(u) => write!(f, "goto({})", quote(u)),
            Action::Back => f.write_str("back()"),
            Action::Forward => f.write_str("forward()"),
            Action::Wait(ms) => write!(f, "wait({ms})"),
            Action::SwitchTab(n) => write!(f, "switch_tab({n})"),
            Action::CloseTab(n) => write!(f, "close_tab({n})"),
            Action::Answer(a) => write!(f, "answer({})", quote(a)),
            Action::Stop => f.write_str("stop()"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::parse;

    fn ok(line: &str) -> Action {
        parse(line).unwrap_or_else(|e| panic!("{e}"))
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
            "double_click(12)",
            "double_click(5.5, 6)",
            r##"double_click(css="#x")"##,
            "right_click(3)",
            "right_click(640, 360)",
            r##"right_click(css="li:nth-child(2)")"##,
            "hover(4)",
            "hover(10, 20)",
            r##"hover(css=".menu")"##,
            "drag(3, to=7)",
            "drag(100, 200, to_x=300, to_y=400)",
            r##"drag(css="#a", to_css="#b")"##,
            "drag(3, to_x=1.5, to_y=2)",
            r##"drag(10, 20, to_css="#bin")"##,
            r##"drag(css="#a", to=9)"##,
            "scroll(5, down)",
            "scroll(5, up)",
            "scroll(100, 200, down)",
            r##"scroll(css="#list", up)"##,
            "forward()",
            "wait(250)",
            "switch_tab(2)",
            "close_tab(1)",
            r#"answer("héllo ✓")"#,
            "stop()",
        ] {
            let a = ok(line);
            assert_eq!(a.to_string(), line, "canonical form");
            assert_eq!(ok(&a.to_string()), a, "round trip");
        }
    }
}
