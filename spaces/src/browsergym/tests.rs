//! Every BrowserGym action's mapping onto surfgym's, keyword and positional arguments,
//! Python's string escapes, several calls in one text, and each kind of error.

use super::*;
use crate::action::Target;
use crate::keys::KeyCombo;

mod robust;

const CTX: Context = Context { active_tab: 3 };

/// Parses and checks that every action survives surfgym's own grammar unchanged.
fn ok(text: &str) -> Vec<Action> {
    let actions = parse(text, &CTX).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    for a in &actions {
        assert_eq!(action::parse(&a.to_string()).as_ref(), Ok(a), "{text:?}");
    }
    actions
}

fn one(text: &str) -> Action {
    match ok(text).as_slice() {
        [a] => a.clone(),
        other => panic!("{text:?} gave {other:?}"),
    }
}

fn err(text: &str) -> BrowserGymError {
    parse(text, &CTX).expect_err(text)
}

fn el(n: u32) -> Target {
    Target::Element(n)
}

fn pt(x: f64, y: f64) -> Target {
    Target::Point { x, y }
}

fn key(k: &str) -> Action {
    Action::Press(KeyCombo::parse(k).unwrap())
}

#[test]
fn maps_the_bid_actions() {
    assert_eq!(one("click('12')"), Action::Click(el(12)));
    assert_eq!(one("click(12)"), Action::Click(el(12)));
    assert_eq!(
        one("click('12', button='right')"),
        Action::RightClick(el(12))
    );
    assert_eq!(one("click('12', 'left', [])"), Action::Click(el(12)));
    assert_eq!(one("click('7', modifiers=[])"), Action::Click(el(7)));
    assert_eq!(one("dblclick('4')"), Action::DoubleClick(el(4)));
    assert_eq!(
        one("dblclick(bid='4', button='left')"),
        Action::DoubleClick(el(4))
    );
    assert_eq!(
        one(r#"fill("5", "hello world")"#),
        Action::Type {
            target: el(5),
            text: "hello world".into(),
            clear: true
        }
    );
    assert_eq!(
        one("clear('9')"),
        Action::Type {
            target: el(9),
            text: String::new(),
            clear: true
        }
    );
    let select = |option: &str| Action::Select {
        target: el(8),
        option: option.into(),
    };
    assert_eq!(one("select_option('8', 'Blue')"), select("Blue"));
    assert_eq!(one(r#"select_option('8', ["Blue"])"#), select("Blue"));
    assert_eq!(one(r#"select_option('8', ["Blue",])"#), select("Blue"));
    assert_eq!(one("hover('3')"), Action::Hover(el(3)));
    assert_eq!(one("focus('3')"), Action::Click(el(3)));
    assert_eq!(
        one("drag_and_drop('56', '498')"),
        Action::Drag {
            from: el(56),
            to: el(498)
        }
    );
    assert_eq!(one("click('4294967295')"), Action::Click(el(u32::MAX)));
}

#[test]
fn maps_keys_in_playwright_syntax() {
    assert_eq!(
        ok("press('88', 'Backspace')"),
        vec![Action::Click(el(88)), key("Backspace")]
    );
    assert_eq!(
        ok("press(key_comb='Enter', bid='2')"),
        vec![Action::Click(el(2)), key("Enter")]
    );
    assert_eq!(one("keyboard_press('Enter')"), key("Enter"));
    assert_eq!(one("keyboard_press('Control+a')"), key("Control+a"));
    assert_eq!(
        one("keyboard_press('Shift+ArrowDown')"),
        key("Shift+ArrowDown")
    );
    assert_eq!(one("keyboard_press('ControlOrMeta+a')"), key("Control+a"));
    assert_eq!(one("keyboard_press('Meta+Shift+t')"), key("Meta+Shift+t"));
    assert_eq!(one("keyboard_press(key='Meta+a')"), key("Meta+a"));
    assert_eq!(one("keyboard_press('KeyA')"), key("a"));
    assert_eq!(one("keyboard_press('Shift+KeyZ')"), key("Shift+z"));
    assert_eq!(one("keyboard_press('Control+Digit1')"), key("Control+1"));
    assert_eq!(one("keyboard_press('Minus')"), key("-"));
    assert_eq!(one("keyboard_press('Backslash')"), key("\\"));
    assert_eq!(one("keyboard_press('+')"), key("+"));
    assert_eq!(one("keyboard_press('#')"), key("#"));
    assert_eq!(one("keyboard_press('Space')"), key(" "));
    assert_eq!(one("keyboard_press('PageDown')"), key("PageDown"));
}

#[test]
fn maps_the_coordinate_and_page_actions() {
    let by = |dx, dy| Action::Scroll(Scroll::By { dx, dy });
    assert_eq!(one("scroll(0, 200)"), by(0.0, 200.0));
    assert_eq!(one("scroll(-50.2, -100.5)"), by(-50.2, -100.5));
    assert_eq!(one("scroll(delta_y=1e3, delta_x=.5)"), by(0.5, 1000.0));
    assert_eq!(one("scroll(+3, 5.)"), by(3.0, 5.0));
    assert_eq!(
        one("mouse_click(887.2, 68)"),
        Action::Click(pt(887.2, 68.0))
    );
    assert_eq!(
        one("mouse_click(56, 712.56, 'right')"),
        Action::RightClick(pt(56.0, 712.56))
    );
    assert_eq!(
        one("mouse_click(x=1, y=2, button='left')"),
        Action::Click(pt(1.0, 2.0))
    );
    assert_eq!(
        one("mouse_dblclick(5, 236)"),
        Action::DoubleClick(pt(5.0, 236.0))
    );
    assert_eq!(
        one("mouse_move(65.2, 158.5)"),
        Action::Hover(pt(65.2, 158.5))
    );
    assert_eq!(
        one("mouse_drag_and_drop(10.7, 325, 235.6, 24.54)"),
        Action::Drag {
            from: pt(10.7, 325.0),
            to: pt(235.6, 24.54)
        }
    );
    assert_eq!(one("mouse_move(0, 0)"), Action::Hover(pt(0.0, 0.0)));
    assert_eq!(
        one("goto('http://a.test/x?y=1')"),
        Action::Goto("http://a.test/x?y=1".into())
    );
    assert_eq!(one("go_back()"), Action::Back);
    assert_eq!(one("go_forward()"), Action::Forward);
}

#[test]
fn maps_tabs_answers_and_waits() {
    assert_eq!(one("tab_focus(0)"), Action::SwitchTab(1));
    assert_eq!(one("tab_focus(index=2)"), Action::SwitchTab(3));
    assert_eq!(one("tab_close()"), Action::CloseTab(CTX.active_tab));
    // The tab a close closes is the one active by then.
    assert_eq!(
        ok("tab_focus(0)\ntab_close()"),
        vec![Action::SwitchTab(1), Action::CloseTab(1)]
    );
    assert_eq!(
        one(r#"send_msg_to_user("the answer is 4")"#),
        Action::Answer("the answer is 4".into())
    );
    assert_eq!(one("report_infeasible('no such field')"), Action::Stop);
    assert_eq!(one("report_infeasible(reason='no')"), Action::Stop);
    assert_eq!(one("noop()"), Action::Wait(1000));
    assert_eq!(one("noop(500)"), Action::Wait(500));
    assert_eq!(one("noop(wait_ms=250.4)"), Action::Wait(250));
    assert_eq!(one("noop(0)"), Action::Wait(0));
    assert_eq!(one("noop(60000)"), Action::Wait(MAX_WAIT_MS));
    assert_eq!(one("noop(1e300)"), Action::Wait(MAX_WAIT_MS));
}

#[test]
fn reads_python_string_literals() {
    let answer = |text: &str| one(&format!("send_msg_to_user({text})"));
    let a = |s: &str| Action::Answer(s.into());
    assert_eq!(answer(r#"'a\nb\tc'"#), a("a\nb\tc"));
    assert_eq!(answer(r#"'it\'s'"#), a("it's"));
    assert_eq!(answer(r#""say \"hi\"""#), a("say \"hi\""));
    assert_eq!(answer(r#""it's""#), a("it's"));
    assert_eq!(answer(r#"'C:\\dir'"#), a("C:\\dir"));
    assert_eq!(answer(r#"'\u00e9\u2713'"#), a("é✓"));
    assert_eq!(answer(r#"'\U0001F600 \x41\101\0'"#), a("😀 AA\0"));
    assert_eq!(answer(r#"'\r\a\b\f\v'"#), a("\r\u{7}\u{8}\u{c}\u{b}"));
    // Python keeps an unknown escape as written.
    assert_eq!(answer(r#"'\d+'"#), a("\\d+"));
    assert_eq!(answer("'héllo ✓ 😀'"), a("héllo ✓ 😀"));
    assert_eq!(answer("''"), a(""));
    assert_eq!(answer("u'plain'"), a("plain"));
    assert_eq!(answer("'''it's \"both\"'''"), a("it's \"both\""));
    assert_eq!(answer("\"\"\"two\nlines\"\"\""), a("two\nlines"));
    assert_eq!(answer("'joined \\\nline'"), a("joined line"));
}

#[test]
fn reads_several_calls_and_python_layout() {
    let text = "# fill the form\n\nfill('5', 'x')  # the name\n\n   click('6')\r\n\
                send_msg_to_user('done')\n";
    assert_eq!(
        ok(text),
        vec![
            Action::Type {
                target: el(5),
                text: "x".into(),
                clear: true
            },
            Action::Click(el(6)),
            Action::Answer("done".into()),
        ]
    );
    assert_eq!(
        ok("click('1'); click('2');"),
        vec![Action::Click(el(1)), Action::Click(el(2))]
    );
    // Inside brackets a newline does not end the call, as in Python.
    assert_eq!(
        ok("fill(\n    '5',\n    'x',\n)\nclick('6')"),
        vec![
            Action::Type {
                target: el(5),
                text: "x".into(),
                clear: true
            },
            Action::Click(el(6)),
        ]
    );
    assert_eq!(
        ok("press('3', 'Enter')\nclick('4')"),
        vec![Action::Click(el(3)), key("Enter"), Action::Click(el(4))]
    );
    assert_eq!(ok("click(\n'1'\n) \\\n"), vec![Action::Click(el(1))]);
}

fn assert_err(text: &str, kind: fn(&BrowserGymError) -> bool, wants: &[&str]) {
    let e = err(text);
    let shown = e.to_string();
    assert!(kind(&e), "{text:?}: wrong kind {e:?}");
    for want in wants {
        assert!(shown.contains(want), "{text:?}: {shown} (wanted {want:?})");
    }
}

fn syntax(e: &BrowserGymError) -> bool {
    matches!(e, BrowserGymError::Syntax { .. })
}
fn args(e: &BrowserGymError) -> bool {
    matches!(e, BrowserGymError::Arguments { .. })
}
fn unsupported(e: &BrowserGymError) -> bool {
    matches!(e, BrowserGymError::Unsupported { .. })
}

#[test]
fn empty_and_invalid_actions() {
    for text in ["", "   ", "\n\n", "# just a thought\n  # another", ";;"] {
        assert_eq!(err(text), BrowserGymError::Empty, "{text:?}");
    }
    assert_eq!(err("").to_string(), "Received an empty action.");
    let e = err("click('1')\nfoo('1')");
    assert_eq!(
        e,
        BrowserGymError::InvalidAction {
            line: 2,
            name: "foo".into()
        }
    );
    let shown = e.to_string();
    assert!(
        shown.starts_with("line 2: Invalid action type 'foo'."),
        "{shown}"
    );
    assert!(shown.contains("mouse_drag_and_drop"), "{shown}");
    // Python names are case-sensitive; so are BrowserGym's actions.
    assert!(matches!(
        err("Click('1')"),
        BrowserGymError::InvalidAction { .. }
    ));
    // surfgym's own spelling is another dialect.
    assert!(matches!(
        err("double_click(3)"),
        BrowserGymError::InvalidAction { .. }
    ));
}

#[test]
fn syntax_errors_name_the_problem() {
    let cases = [
        ("click", "expected `(` after `click`"),
        ("click('1'", "got the end of the text"),
        ("click('1' '2')", "expected `,` or `)`"),
        ("click('1) ", "unterminated string literal"),
        ("fill('1', \"x)\nclick('2')", "unterminated string literal"),
        ("send_msg_to_user('''open)", "unterminated string literal"),
        ("click('1') click('2')", "put each action on its own line"),
        ("click('1') now", "unexpected `now`"),
        ("click(bid)", "got `bid`"),
        (
            "click(str(1))",
            "names, expressions and calls are not evaluated",
        ),
        ("click(1 + 2)", "unexpected character '+'"),
        ("scroll(0, 5-3)", "expected `,` or `)`"),
        ("noop(true)", "Python spells them True"),
        ("page.click('1')", "unexpected character '.'"),
        ("```\nclick('1')\n```", "unexpected character '`'"),
        ("click(r'1')", "string prefix `r`"),
        ("fill('1', f'{x}')", "string prefix `f`"),
        (
            "click(bid='1', '2')",
            "positional argument follows keyword argument",
        ),
        ("click(bid='1', bid='2')", "keyword argument repeated: bid"),
        ("select_option('1', [['a']])", "nested lists"),
        ("select_option('1', ['a' 'b'])", "expected `,` or `]`"),
        ("scroll(0, 1e999)", "too large"),
        ("scroll(0, 12abc)", "invalid number literal"),
        ("scroll(0, 0x10)", "invalid number literal"),
        ("scroll(0, 1.2.3)", "invalid number literal"),
        ("send_msg_to_user('\\x4')", "truncated \\x escape"),
        ("send_msg_to_user('\\uD800')", "lone surrogate"),
        ("send_msg_to_user('\\N{DASH}')", "\\N{...}"),
        ("(click('1'))", "expected an action call"),
        ("click('1'))", "unexpected `)` after click(...)"),
        ("= click('1')", "expected an action call"),
        ("click(=1)", "expected a Python literal"),
    ];
    for (text, want) in cases {
        assert_err(text, syntax, &["line ", "invalid syntax", want]);
    }
    assert_err("click('1')\n\nclick(", syntax, &["line 3:"]);
}

#[test]
fn argument_errors_read_like_python() {
    let cases = [
        (
            "fill('5')",
            "fill() takes 2 arguments (1 given): missing 'value'",
        ),
        ("fill('5')", "usage: fill(bid, value)"),
        ("fill()", "missing 'bid' and 'value'"),
        ("fill('5', 'a', 'b')", "fill() takes 2 arguments (3 given)"),
        ("click()", "click() takes from 1 to 3 arguments (0 given)"),
        ("click()", "usage: click(bid, button='left', modifiers=[])"),
        (
            "click('1', 'left', [], 4)",
            "takes from 1 to 3 arguments (4 given)",
        ),
        ("go_back(1)", "go_back() takes no arguments (1 given)"),
        ("hover('1', '2')", "hover() takes 1 argument (2 given)"),
        ("noop(1, 2)", "noop() takes from 0 to 1 arguments (2 given)"),
        (
            "click('1', force=True)",
            "unexpected keyword argument 'force'",
        ),
        ("fill('1', text='x')", "unexpected keyword argument 'text'"),
        (
            "click('1', bid='2')",
            "got multiple values for argument 'bid'",
        ),
        (
            "click('a12')",
            "bid 'a12' names no element: surfgym's bids are the element numbers",
        ),
        ("click('')", "bid '' names no element"),
        ("click('0')", "bid '0' names no element"),
        ("click(0)", "bid 0 names no element"),
        ("click('012')", "bid '012' names no element"),
        ("click(' 12')", "names no element"),
        ("click('4294967296')", "names no element"),
        ("click(-3)", "bid -3 names no element"),
        (
            "click(1.5)",
            "click() argument 'bid' must be a bid such as '12', got 1.5",
        ),
        ("click(None)", "must be a bid"),
        ("drag_and_drop('1', 'b2')", "bid 'b2' names no element"),
        (
            "click('1', button='up')",
            "argument 'button' must be 'left', 'middle' or 'right'",
        ),
        (
            "click('1', modifiers='Shift')",
            "argument 'modifiers' must be a list",
        ),
        (
            "fill('1', 42)",
            "fill() argument 'value' must be a str, got 42",
        ),
        ("fill('1', None)", "got None"),
        (
            "goto(['x'])",
            "goto() argument 'url' must be a str, got ['x']",
        ),
        ("send_msg_to_user(4)", "must be a str, got 4"),
        ("report_infeasible(False)", "must be a str, got False"),
        (
            "select_option('1', [])",
            "argument 'options' must be an option",
        ),
        ("select_option('1', [3])", "must be a list of option texts"),
        ("select_option('1', 3)", "must be an option"),
        (
            "scroll('0', 200)",
            "scroll() argument 'delta_x' must be a number, got '0'",
        ),
        ("mouse_click(-1, 5)", "argument 'x' must not be negative"),
        ("mouse_move(5, -0.5)", "argument 'y' must not be negative"),
        (
            "mouse_drag_and_drop(1, 2, 3, -4)",
            "argument 'to_y' must not be negative",
        ),
        ("mouse_click('5', 5)", "must be a number"),
        ("mouse_click(True, 5)", "must be a number, got True"),
        (
            "tab_focus(-1)",
            "tab_focus() index counts the open tabs from 0, got -1",
        ),
        ("tab_focus(1.0)", "argument 'index' must be an int, got 1.0"),
        ("tab_focus('1')", "must be an int"),
        ("tab_focus(4294967295)", "counts the open tabs from 0"),
        ("noop(-5)", "noop() wait_ms must not be negative"),
        ("noop('5')", "must be a number"),
        ("keyboard_press('Enterr')", "unknown key `Enterr`"),
        ("keyboard_press('Hyper+a')", "unknown modifier `hyper`"),
        ("keyboard_press('Shift')", "unknown key `Shift`"),
        ("keyboard_press('')", "empty key name"),
        (
            "press('1', 'Fn+x')",
            "press() argument 'key_comb' 'Fn+x': unknown modifier",
        ),
        ("keyboard_press(13)", "must be a str"),
    ];
    for (text, want) in cases {
        assert_err(text, args, &["line 1: ", want]);
    }
}

#[test]
fn unsupported_actions_say_what_to_do_instead() {
    let cases = [
        ("new_tab()", "new_tab is not supported by surfgym: "),
        (
            "upload_file('1', 'a.txt')",
            "upload_file is not supported by surfgym",
        ),
        (
            "mouse_upload_file(1, 2, 'a')",
            "mouse_upload_file is not supported by surfgym",
        ),
        (
            "keyboard_type('hi')",
            "keyboard_type is not supported by surfgym: use fill(bid, text)",
        ),
        ("keyboard_insert_text('hi')", "use fill(bid, text)"),
        (
            "keyboard_down('Shift')",
            "keyboard_down is not supported by surfgym: use keyboard_press",
        ),
        ("keyboard_up('Shift')", "keyboard_up is not supported"),
        (
            "mouse_down(1, 2)",
            "mouse_down is not supported by surfgym: use mouse_click",
        ),
        ("mouse_up(1, 2)", "mouse_up is not supported"),
        ("get_element_html('1')", "get_element_html is not supported"),
        (
            "check('1')",
            "check is not supported by surfgym: use click(bid)",
        ),
        ("uncheck('1')", "uncheck is not supported"),
        (
            "click('1', button='middle')",
            "click(button='middle') is not supported",
        ),
        (
            "mouse_click(1, 2, 'middle')",
            "mouse_click(button='middle') is not supported",
        ),
        (
            "dblclick('1', button='right')",
            "dblclick(button='right') is not supported",
        ),
        ("mouse_dblclick(1, 2, 'right')", "left button only"),
        (
            "click('1', modifiers=['Shift'])",
            "modifiers are not supported",
        ),
        (
            "dblclick('1', modifiers=['Control'])",
            "modifiers are not supported",
        ),
        (
            "select_option('1', ['a', 'b'])",
            "several options is not supported by surfgym",
        ),
        ("tab_close()\ntab_close()", "a second tab_close()"),
    ];
    for (text, want) in cases {
        assert_err(text, unsupported, &[want]);
    }
}

#[test]
fn the_grammar_has_the_last_word() {
    // A context no real session has: surfgym's grammar numbers tabs from 1.
    let e = parse("tab_close()", &Context { active_tab: 0 }).unwrap_err();
    assert!(args(&e), "{e:?}");
    assert!(
        e.to_string()
            .contains("surfgym cannot carry out `close_tab(0)`"),
        "{e}"
    );
    // surfgym's key syntax cannot combine a modifier with the `+` key.
    assert_err("keyboard_press('Shift++')", args, &["'Shift++'"]);
    // One bad call fails the whole text, wherever it is.
    assert_err("click('1')\nclick('2')\nclick('x')", args, &["line 3:"]);
}

#[test]
fn every_mapped_name_translates_and_every_action_kind_is_reached() {
    let examples = [
        "click('1')",
        "dblclick('1')",
        "fill('1', 'a')",
        "clear('1')",
        "select_option('1', 'a')",
        "hover('1')",
        "focus('1')",
        "press('1', 'a')",
        "keyboard_press('a')",
        "scroll(0, 1)",
        "drag_and_drop('1', '2')",
        "mouse_click(1, 2)",
        "mouse_dblclick(1, 2)",
        "mouse_move(1, 2)",
        "mouse_drag_and_drop(1, 2, 3, 4)",
        "goto('http://a.test/')",
        "go_back()",
        "go_forward()",
        "tab_focus(0)",
        "tab_close()",
        "send_msg_to_user('a')",
        "report_infeasible('a')",
        "noop()",
    ];
    assert_eq!(examples.len(), SIGS.len());
    let mut names = Vec::new();
    for (example, sig) in examples.iter().zip(SIGS) {
        assert!(example.starts_with(&format!("{}(", sig.name)), "{example}");
        names.extend(ok(example).iter().map(Action::name));
    }
    names.push(one("click('1', button='right')").name());
    // Every kind of surfgym action a BrowserGym agent can reach is reached.
    for name in crate::action::ACTION_NAMES {
        assert!(names.contains(name), "{name}");
    }
    for (name, _) in UNSUPPORTED {
        assert!(SIGS.iter().all(|s| s.name != *name), "{name}");
    }
}
