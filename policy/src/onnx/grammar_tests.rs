//! The constrained-decoding grammar (`inference::grammar`) against the engine's output
//! parsing: whatever the grammar lets a model write, the policy seam reads as an action of
//! the page.

use browser_pool::{Element, TabInfo, parse_action};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use browser_pool::Observation;
use inference::grammar::{ActionGrammar, Constraint, action_pattern, output_pattern};

use crate::output::Grounding;
use crate::output::{check_elements, parse_output};
use spaces::ActionSet;

/// Elements: the first a text input, the second a `<select>`, the rest buttons.
fn observation(ids: &[u32], tabs: usize) -> Observation {
    Observation {
        elements: ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let (tag, input_type) = match i {
                    0 => ("input", Some("text".to_string())),
                    1 => ("select", None),
                    _ => ("button", None),
                };
                Element {
                    id: *id,
                    tag: tag.into(),
                    input_type,
                    ..Element::default()
                }
            })
            .collect(),
        tabs: (1..=tabs as u32)
            .map(|number| TabInfo {
                number,
                url: String::new(),
                title: String::new(),
                active: number == 1,
            })
            .collect(),
        ..Observation::default()
    }
}

#[test]
fn the_pattern_takes_actions_of_the_observation_only() {
    let obs = observation(&[1, 2, 12], 2);
    let p = action_pattern(&obs, Grounding::Marks);
    for ok in [
        "click(12)",
        " click(2)",
        "type(1, \"hello \\\"you\\\"\")",
        "type(1,\"x\", clear=false)",
        "select(2, \"Economy\")",
        "drag(1, to=12)",
        "scroll(down)",
        "scroll(2, up)",
        "press(\"Control+a\")",
        "press(\"Enter\")",
        "goto(\"http://example.test/\")",
        "wait(500)",
        "answer(\"42\")",
        "stop()",
        "back()",
        "switch_tab(2)",
    ] {
        assert!(ActionGrammar::matches(&p, ok), "{ok}");
        let action = parse_action(ok.trim()).unwrap_or_else(|e| panic!("{ok}: {e:?}"));
        check_elements(action, &obs.elements).unwrap();
    }
    for bad in [
        "click(3)",
        "click(120)",
        "click(12",
        "Action: click(1)",
        "click(1)\n",
        "press(\"Hyper+q\")",
        "switch_tab(3)",
        "wait(10001)",
        "type(1, \"a\nb\")",
        "type(2, \"not a text box\")",
        "select(12, \"a button\")",
    ] {
        assert!(!ActionGrammar::matches(&p, bad), "{bad}");
    }
    // No elements: no element targets at all; grid points in coordinate grounding.
    let none = action_pattern(&observation(&[], 1), Grounding::Marks);
    assert!(!ActionGrammar::matches(&none, "click(1)"));
    assert!(!ActionGrammar::matches(&none, "switch_tab(1)"));
    let grid = action_pattern(&observation(&[], 1), Grounding::Coordinates);
    assert!(ActionGrammar::matches(&grid, "click(1000, 5)"));
    assert!(!ActionGrammar::matches(&grid, "click(1001, 5)"));
    assert!(!ActionGrammar::matches(&grid, "select(10, 5, \"a\")"));
}

/// A random printable byte of those `g` allows next, favouring closing quotes and
/// brackets (or strings would rarely end); none when nothing may follow.
fn random_byte(g: &mut ActionGrammar, rng: &mut StdRng) -> Option<u8> {
    let allowed: Vec<u8> = (0x20..0x7f).filter(|b| g.allows(&[*b])).collect();
    let closing: Vec<u8> = allowed
        .iter()
        .copied()
        .filter(|b| matches!(b, b'"' | b')'))
        .collect();
    if !closing.is_empty() && rng.random_bool(0.3) {
        Some(closing[rng.random_range(0..closing.len())])
    } else if allowed.is_empty() {
        None
    } else {
        Some(allowed[rng.random_range(0..allowed.len())])
    }
}

/// Random walks through the grammar (one printable byte at a time, any the grammar
/// allows) end in lines the action parser accepts.
#[test]
fn every_complete_walk_parses() {
    let obs = observation(&[3, 7, 41], 3);
    let p = action_pattern(&obs, Grounding::Marks);
    let mut rng = StdRng::seed_from_u64(9);
    let mut complete = 0;
    for _ in 0..400 {
        let mut g = ActionGrammar::new(&p).unwrap();
        let mut text = Vec::new();
        for _ in 0..80 {
            if g.complete() && rng.random_bool(0.5) {
                break;
            }
            let Some(pick) = random_byte(&mut g, &mut rng) else {
                break;
            };
            assert!(g.advance(&[pick]));
            text.push(pick);
        }
        if g.complete() {
            complete += 1;
            let line = String::from_utf8(text).unwrap();
            let action = parse_action(line.trim()).unwrap_or_else(|e| panic!("{line}: {e:?}"));
            check_elements(action, &obs.elements).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
    }
    assert!(complete > 100, "{complete} walks completed");
}

/// Reasoned outputs: any lines, then a last line `Action: <action>` of the page.
#[test]
fn reasoned_outputs_end_with_an_action_of_the_page() {
    let obs = observation(&[3, 7, 41], 1);
    let p = output_pattern(
        &obs,
        Grounding::Marks,
        Constraint::Reasoned,
        ActionSet::all(),
    );
    for ok in [
        "I see three buttons; the last one.\nAction: click(41)",
        "Memory: (empty)\nProgress: none\nIntention: fill the box\nAction: type(3, \"x\")",
        "Action: stop()",
        "\n\nAction:back()",
    ] {
        assert!(ActionGrammar::matches(&p, ok), "{ok:?}");
        let (_, action) = parse_output(ok, Grounding::Marks, (1280, 720));
        check_elements(action.unwrap(), &obs.elements).unwrap();
    }
    for bad in [
        "click(41)",
        "Thinking.\nAction: click(4)",
        "Action: click(41)\nand then",
        "Thinking.\nclick(41)",
    ] {
        assert!(!ActionGrammar::matches(&p, bad), "{bad:?}");
    }
    // Random thoughts, then a random walk through an action (steered by the action-only
    // grammar, since free text allows every byte): the reasoned grammar takes each
    // step, accepts where the action is whole, and every whole one parses.
    let action_only = action_pattern(&obs, Grounding::Marks);
    let mut rng = StdRng::seed_from_u64(4);
    let mut complete = 0;
    for _ in 0..200 {
        let mut g = ActionGrammar::new(&p).unwrap();
        let mut text = String::new();
        for _ in 0..rng.random_range(0..4) {
            let line: String = (0..rng.random_range(0..40))
                .map(|_| char::from(rng.random_range(0x20u8..0x7f)))
                .collect();
            text.push_str(&line);
            text.push('\n');
        }
        text.push_str("Action:");
        assert!(g.advance(text.as_bytes()), "{text:?}");
        let mut a = ActionGrammar::new(&action_only).unwrap();
        for _ in 0..60 {
            if a.complete() {
                break;
            }
            let pick = random_byte(&mut a, &mut rng).expect("an unfinished action goes on");
            assert!(a.advance(&[pick]));
            assert!(g.advance(&[pick]), "{text:?} then {:?}", char::from(pick));
            text.push(char::from(pick));
        }
        if a.complete() {
            assert!(g.complete(), "{text:?}");
            complete += 1;
            let (_, action) = parse_output(&text, Grounding::Marks, (1280, 720));
            let action = action.unwrap_or_else(|e| panic!("{text:?}: {e}"));
            check_elements(action, &obs.elements).unwrap();
        }
    }
    assert!(complete > 50, "{complete} walks completed");
}

/// A narrowed action set: only its kinds of action, on the page's elements; `stop()` when
/// the page offers nothing the set allows.
#[test]
fn an_action_set_narrows_the_grammar_to_its_kinds() {
    let clicks = ActionSet::only(["click", "scroll"]).unwrap();
    let obs = observation(&[1, 2, 12], 2);
    let p = output_pattern(&obs, Grounding::Marks, Constraint::Action, clicks);
    for ok in ["click(12)", " click(2)", "scroll(down)", "scroll(2, up)"] {
        assert!(ActionGrammar::matches(&p, ok), "{ok:?}");
    }
    for no in [
        "click(5)",
        "hover(2)",
        "type(1, \"x\")",
        "press(\"Enter\")",
        "stop()",
        "switch_tab(2)",
        "answer(\"x\")",
    ] {
        assert!(!ActionGrammar::matches(&p, no), "{no:?}");
    }
    let none = output_pattern(
        &observation(&[], 1),
        Grounding::Marks,
        Constraint::Action,
        ActionSet::only(["click"]).unwrap(),
    );
    assert!(ActionGrammar::matches(&none, "stop()"));
    assert!(!ActionGrammar::matches(&none, "click(1)"));
}
