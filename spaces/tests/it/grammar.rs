//! The regular expression and the parser describe one language: on a generated corpus
//! (every action kind, every key of the key list with modifiers, strings with every
//! escape, element numbers at the edges, and many near misses), a line matches
//! `canonical_regex` exactly when it parses to an action that `Display` writes back as
//! that same line; lines that do not parse never match; and whatever parses is displayed
//! as a line that matches and parses back to the same action.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use regex_automata::hybrid::dfa::DFA;
use regex_automata::{Anchored, Input};
use spaces::action::{ACTION_NAMES, Direction, MAX_WAIT_MS};
use spaces::keys::{key_names, modifier_names};
use spaces::pattern::canonical_regex;
use spaces::{Action, KeyCombo, Scroll, Target, parse_action};

struct Matcher {
    dfa: DFA,
    cache: regex_automata::hybrid::dfa::Cache,
}

impl Matcher {
    fn new(pattern: &str) -> Matcher {
        let dfa = DFA::builder()
            .configure(DFA::config().cache_capacity(16 << 20))
            .build(&format!("^(?:{pattern})$"))
            .expect("the expression compiles");
        let cache = dfa.create_cache();
        Matcher { dfa, cache }
    }

    fn matches(&mut self, text: &str) -> bool {
        self.dfa
            .try_search_fwd(&mut self.cache, &Input::new(text).anchored(Anchored::Yes))
            .expect("the lazy DFA does not give up")
            .is_some()
    }
}

/// Characters strings are drawn from: quotes, backslashes, every control character
/// class, whitespace JSON keeps literal, non-ASCII.
const CHARS: &[char] = &[
    'a', 'Z', '0', ' ', '"', '\'', '\\', '/', '#', '.', '(', ')', ',', '=', '+', '\n', '\t', '\r',
    '\u{8}', '\u{c}', '\u{b}', '\u{0}', '\u{1}', '\u{1c}', '\u{1f}', '\u{7f}', '\u{85}', '\u{a0}',
    '\u{2003}', 'é', '✓', '😀',
];

fn text(rng: &mut StdRng, min: usize) -> String {
    let n = rng.random_range(min..8);
    (0..n)
        .map(|_| CHARS[rng.random_range(0..CHARS.len())])
        .collect()
}

/// A selector `css=` accepts: something besides whitespace in it.
fn selector(rng: &mut StdRng) -> String {
    loop {
        let s = text(rng, 1);
        if !s.trim().is_empty() {
            return s;
        }
    }
}

/// Numbers as a policy might write them: whole, halves, odd fractions, large.
fn number(rng: &mut StdRng) -> f64 {
    match rng.random_range(0..5) {
        0 => 0.0,
        1 => f64::from(rng.random_range(0..2000u32)),
        2 => f64::from(rng.random_range(0..4000u32)) / 4.0,
        3 => f64::from(rng.random_range(0..100_000u32)) / 1000.0,
        _ => f64::from(rng.random_range(0..u32::MAX)),
    }
}

fn element(rng: &mut StdRng) -> u32 {
    match rng.random_range(0..4) {
        0 => 0,
        1 => u32::MAX,
        2 => rng.random_range(1..100),
        _ => rng.random(),
    }
}

fn target(rng: &mut StdRng) -> Target {
    match rng.random_range(0..3) {
        0 => Target::Element(element(rng)),
        1 => Target::Point {
            x: number(rng),
            y: number(rng),
        },
        _ => Target::Selector(selector(rng)),
    }
}

/// Every named key, and single characters, with any modifiers (but `+` only alone:
/// `Control++` does not read back, so `Display` never writes it for a parsed action).
fn key(rng: &mut StdRng) -> KeyCombo {
    let named: Vec<&str> = key_names().collect();
    let mut spelled = String::new();
    for name in modifier_names() {
        if rng.random_bool(0.3) {
            spelled.push_str(name);
            spelled.push('+');
        }
    }
    let k = if rng.random_bool(0.5) {
        named[rng.random_range(0..named.len())].to_string()
    } else {
        match CHARS[rng.random_range(0..CHARS.len())] {
            '+' if !spelled.is_empty() => "p".into(),
            c => c.to_string(),
        }
    };
    KeyCombo::parse(&format!("{spelled}{k}")).unwrap()
}

fn action(rng: &mut StdRng, kind: usize) -> Action {
    let direction = |rng: &mut StdRng| {
        if rng.random_bool(0.5) {
            Direction::Down
        } else {
            Direction::Up
        }
    };
    match kind {
        0 => Action::Click(target(rng)),
        1 => Action::DoubleClick(target(rng)),
        2 => Action::RightClick(target(rng)),
        3 => Action::Hover(target(rng)),
        4 => Action::Drag {
            from: target(rng),
            to: target(rng),
        },
        5 => Action::Type {
            target: target(rng),
            text: text(rng, 0),
            clear: rng.random_bool(0.5),
        },
        6 => Action::Select {
            target: target(rng),
            option: text(rng, 0),
        },
        7 => Action::Press(key(rng)),
        8 => Action::Scroll(match rng.random_range(0..3) {
            0 => Scroll::Down,
            1 => Scroll::Up,
            _ => {
                let sign = |rng: &mut StdRng, n: f64| if rng.random_bool(0.5) { -n } else { n };
                let (dx, dy) = (number(rng), number(rng));
                // `-0` is written `0`, which reads back as `0`: the same action.
                Scroll::By {
                    dx: if dx == 0.0 { 0.0 } else { sign(rng, dx) },
                    dy: if dy == 0.0 { 0.0 } else { sign(rng, dy) },
                }
            }
        }),
        9 => Action::ScrollElement {
            target: target(rng),
            direction: direction(rng),
        },
        10 => Action::Goto(text(rng, 0)),
        11 => Action::Back,
        12 => Action::Forward,
        13 => Action::Wait(match rng.random_range(0..3) {
            0 => 0,
            1 => MAX_WAIT_MS,
            _ => rng.random_range(0..=MAX_WAIT_MS),
        }),
        14 => Action::SwitchTab(rng.random_range(1..=u32::MAX)),
        15 => Action::CloseTab(rng.random_range(1..20)),
        16 => Action::Answer(text(rng, 0)),
        _ => Action::Stop,
    }
}

/// What the expression must say about `line`: whether it is a canonical action line.
fn canonical(line: &str) -> bool {
    parse_action(line).is_ok_and(|a| a.to_string() == line)
}

/// A near miss of `line`: one character dropped, doubled or replaced, or a prefix.
fn mutate(rng: &mut StdRng, line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let i = rng.random_range(0..chars.len());
    const NOISE: &[char] = &[
        ' ', '(', ')', ',', '"', '\'', '\\', '=', '-', '.', '0', '1', '9', 'x', 'A', '+', '\n',
    ];
    let mut out = chars.clone();
    match rng.random_range(0..4) {
        0 => {
            out.remove(i);
        }
        1 => out.insert(i, NOISE[rng.random_range(0..NOISE.len())]),
        2 => out[i] = NOISE[rng.random_range(0..NOISE.len())],
        _ => out.truncate(i),
    }
    out.into_iter().collect()
}

#[test]
fn the_expression_is_exactly_the_canonical_language() {
    let mut m = Matcher::new(&canonical_regex());
    let mut rng = StdRng::seed_from_u64(21);
    let mut kinds_seen = std::collections::BTreeSet::new();
    let (mut valid, mut invalid, mut lenient) = (0, 0, 0);
    for round in 0..3000 {
        let a = action(&mut rng, round % 18);
        kinds_seen.insert(a.name());
        let line = a.to_string();
        // Every action's canonical line matches, parses back to it, and is canonical.
        assert!(m.matches(&line), "{line:?} does not match");
        assert_eq!(parse_action(&line).as_ref(), Ok(&a), "{line:?}");
        valid += 1;
        // Its near misses match exactly when they are canonical lines themselves.
        for _ in 0..6 {
            let s = mutate(&mut rng, &line);
            let parsed = parse_action(&s);
            assert_eq!(
                m.matches(&s),
                canonical(&s),
                "{s:?} from {line:?}: {parsed:?}"
            );
            match parsed {
                Err(_) => invalid += 1,
                Ok(b) => {
                    if b.to_string() != s {
                        lenient += 1;
                    }
                    // Whatever parses is displayed as a matching line that reads back.
                    let shown = b.to_string();
                    assert!(m.matches(&shown), "{shown:?} (from {s:?})");
                    assert_eq!(parse_action(&shown), Ok(b), "{s:?}");
                }
            }
        }
    }
    assert_eq!(
        kinds_seen.len(),
        ACTION_NAMES.len(),
        "every action kind: {kinds_seen:?}"
    );
    assert!(
        valid > 2000 && invalid > 5000 && lenient > 200,
        "{valid} {invalid} {lenient}"
    );
}

#[test]
fn lines_that_do_not_parse_never_match() {
    let mut m = Matcher::new(&canonical_regex());
    let invalid = [
        "",
        "click",
        "click(",
        "click()",
        "click(12",
        "click(12))",
        "click(-1)",
        "click(1.5)",
        "click(4294967296)",
        "click(\"Add to cart\")",
        "click(css=\" \")",
        "click(css=\"\\t\\u000b\")",
        "click(css=\"\")",
        "click(1, -2)",
        "fly(3)",
        "stop(1)",
        "back(css=\"x\")",
        "answer(\"open",
        "answer(\"bad \\x escape\")",
        "click(1) now",
        "press(\"Hyper+x\")",
        "press(\"Control++\")",
        "press(\"Enterr\")",
        "press(\"\")",
        "scroll(sideways)",
        "scroll(down, 5)",
        "scroll(1, 2, 3, down)",
        "drag(3, 7)",
        "drag(3)",
        "drag(3, to=7, to_css=\"#b\")",
        "drag(3, to_x=10)",
        "drag(3, to_x=-1, to_y=2)",
        "wait()",
        "wait(10001)",
        "wait(-5)",
        "wait(1.5)",
        "switch_tab(0)",
        "close_tab(1.5)",
        "type(3)",
        "type(3, \"x\", clear=maybe)",
        "select(4)",
        "goto()",
    ];
    for line in invalid {
        assert!(parse_action(line).is_err(), "{line:?} parses");
        assert_eq!(parse_action(line).is_ok(), m.matches(line), "{line:?}");
    }
}

/// The parser also reads spellings `Display` never writes (spaces, either quote, any
/// case, aliases, numbers for strings): the expression leaves them out, and each is
/// displayed as a line it takes.
#[test]
fn lenient_spellings_parse_to_canonical_lines() {
    let mut m = Matcher::new(&canonical_regex());
    for line in [
        "click( 12 )",
        "CLICK(12)",
        "click(12.0)",
        "click(012)",
        "click(640, 360.50)",
        "click(css='#buy')",
        "type(3,\"x\")",
        "type(3, 'x', clear=true)",
        "answer(42)",
        "tab_focus(2)",
        "tab_close(2)",
        "wait(0500)",
        "scroll(\"up\")",
        "scroll(-0, 5)",
        "press(\"ctrl+shift+a\")",
        "press(\"Shift+Control+a\")",
        "press(\"return\")",
        "press(\" \")",
        "press(Enter)",
        "goto(\"a\\/b\")",
        "answer(\"\\u00e9\")",
        "drag(to_css=\".bin\", css=\"#a\")",
        "drag(3, to_y=5, to_x=4)",
    ] {
        let a = parse_action(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        assert!(!m.matches(line), "{line:?} is not canonical");
        let shown = a.to_string();
        assert!(m.matches(&shown), "{shown:?}");
        assert_eq!(parse_action(&shown), Ok(a));
    }
}
