//! Property tests of the action grammar: whatever a model or a user writes, the parser
//! never panics; every action it accepts is written back canonically and parses to the
//! same action; and any action a policy can build survives display then parse.

use proptest::prelude::*;
use spaces::action::MAX_WAIT_MS;
use spaces::{Action, Direction, KeyCombo, Scroll, Target, parse_action};

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        any::<u32>().prop_map(Target::Element),
        (0.0f64..5000.0, 0.0f64..5000.0).prop_map(|(x, y)| Target::Point { x, y }),
        "[a-z#.>\\[\\]=\" ']{0,12}[a-z]".prop_map(Target::Selector),
    ]
}

fn key() -> impl Strategy<Value = KeyCombo> {
    prop::sample::select(vec![
        "Enter",
        "Tab",
        "Escape",
        "a",
        "Z",
        "7",
        "ArrowDown",
        "Control+a",
        "Shift+Tab",
        "Control+Shift+K",
        "Meta+c",
        "PageDown",
        "Backspace",
        "F5",
    ])
    .prop_map(|k| KeyCombo::parse(k).expect("a key of the list"))
}

fn action() -> impl Strategy<Value = Action> {
    // Any text at all: quotes, backslashes, newlines, NULs, non-ASCII.
    let text = "(?s).{0,40}";
    prop_oneof![
        target().prop_map(Action::Click),
        target().prop_map(Action::DoubleClick),
        target().prop_map(Action::RightClick),
        target().prop_map(Action::Hover),
        (target(), target()).prop_map(|(from, to)| Action::Drag { from, to }),
        (target(), text, any::<bool>()).prop_map(|(target, text, clear)| Action::Type {
            target,
            text,
            clear
        }),
        (target(), text).prop_map(|(target, option)| Action::Select { target, option }),
        key().prop_map(Action::Press),
        prop_oneof![
            Just(Scroll::Down),
            Just(Scroll::Up),
            (-5000.0f64..5000.0, -5000.0f64..5000.0).prop_map(|(dx, dy)| Scroll::By { dx, dy }),
        ]
        .prop_map(Action::Scroll),
        (
            target(),
            prop_oneof![Just(Direction::Down), Just(Direction::Up)]
        )
            .prop_map(|(target, direction)| Action::ScrollElement { target, direction }),
        "https?://[a-z]{1,12}\\.example(:[0-9]{2,4})?/[a-z0-9/?=&]{0,16}".prop_map(Action::Goto),
        Just(Action::Back),
        Just(Action::Forward),
        (0..=MAX_WAIT_MS).prop_map(Action::Wait),
        any::<u32>().prop_map(Action::SwitchTab),
        any::<u32>().prop_map(Action::CloseTab),
        text.prop_map(Action::Answer),
        Just(Action::Stop),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn display_then_parse_is_the_same_action(a in action()) {
        let line = a.to_string();
        prop_assert_eq!(parse_action(&line), Ok(a), "{}", line);
    }

    #[test]
    fn arbitrary_lines_never_panic_and_what_parses_is_canonical(line in "(?s).{0,80}") {
        if let Ok(a) = parse_action(&line) {
            prop_assert_eq!(parse_action(&a.to_string()), Ok(a));
        }
    }

    /// Lines that look like actions (a name, brackets, quotes, numbers, keywords) reach
    /// deeper into the parser than random text does.
    #[test]
    fn action_shaped_lines_never_panic(
        line in "(click|type|drag|scroll|press|goto|wait|answer|select|hover)\\((-?[0-9.e]{0,6}|\"[^\"]{0,6}\"?|css=|to_x=|clear=|,| ){0,6}\\)?.{0,3}"
    ) {
        if let Ok(a) = parse_action(&line) {
            prop_assert_eq!(parse_action(&a.to_string()), Ok(a));
        } else {
            prop_assert!(!parse_action(&line).unwrap_err().to_string().is_empty());
        }
    }
}
