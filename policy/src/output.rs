//! Turning a model's text into an action, shared by every model policy (ONNX, HTTP).
//!
//! The action is the last line that starts with `Action:` (or, failing that, the last line
//! that parses as an action); everything before it is the thought. Malformed output is
//! never a panic: it becomes an error the next observation shows.

use spaces::{Action, ActionSet, Element, Target, parse_action};

pub use spaces::Grounding;

/// The longest output accepted; longer is a runaway generation.
pub const MAX_OUTPUT_CHARS: usize = 4000;

/// The thought and the action (or why there is none) in a model's output.
pub fn parse_output(
    text: &str,
    grounding: Grounding,
    viewport: (u32, u32),
) -> (Option<String>, Result<Action, String>) {
    if text.chars().count() > MAX_OUTPUT_CHARS {
        return (
            None,
            Err(format!("output longer than {MAX_OUTPUT_CHARS} characters")),
        );
    }
    let lines: Vec<&str> = text.lines().collect();
    let marked = lines
        .iter()
        .rposition(|l| l.trim_start().to_ascii_lowercase().starts_with("action:"));
    let (at, line) = match marked {
        Some(i) => {
            let l = lines[i].trim_start();
            (i, l[l.find(':').map_or(0, |c| c + 1)..].trim())
        }
        None => match lines
            .iter()
            .rposition(|l| parse_action(l.trim().trim_matches('`')).is_ok())
        {
            Some(i) => (i, lines[i].trim().trim_matches('`')),
            None if text.trim().is_empty() => return (None, Err("empty output: no action".into())),
            None => {
                return (
                    Some(text.trim().to_string()),
                    Err("no action found (end with a line `Action: <action>`)".into()),
                );
            }
        },
    };
    let thought = lines[..at].join("\n").trim().to_string();
    let thought = (!thought.is_empty()).then_some(thought);
    let action = parse_action(line.trim_matches('`'))
        .map_err(|e| e.message)
        .and_then(|a| ground(a, grounding, viewport));
    (thought, action)
}

/// `action` if its kind is in `actions`: a model decoding freely can write any action, and
/// one outside the policy's set is an invalid output, like one that does not parse.
pub fn within(action: Result<Action, String>, actions: ActionSet) -> Result<Action, String> {
    let action = action?;
    if actions.allows(action.name()) {
        Ok(action)
    } else {
        Err(format!(
            "{}(...) is not among this policy's actions ({})",
            action.name(),
            actions.names().join(", ")
        ))
    }
}

/// Refuses element numbers the observation did not list. Checked before acting, a made-up
/// number is a parse failure the model is told about, not a click that fails in the page.
pub fn check_elements(action: Action, elements: &[Element]) -> Result<Action, String> {
    action.map_targets(|t| match t {
        Target::Element(n) if !elements.iter().any(|e| e.id == n) => {
            Err(match elements.iter().map(|e| e.id).max() {
                Some(max) => {
                    format!("element {n} is not in the element list (use a number from 1 to {max})")
                }
                None => format!("element {n} is not in the element list (the page has none)"),
            })
        }
        t => Ok(t),
    })
}

/// Maps grid coordinates to viewport pixels, and refuses targets the mode does not use.
fn ground(action: Action, grounding: Grounding, (w, h): (u32, u32)) -> Result<Action, String> {
    let map = |t: Target| -> Result<Target, String> {
        match (grounding, t) {
            (Grounding::Coordinates, Target::Point { x, y }) => {
                if !(0.0..=1000.0).contains(&x) || !(0.0..=1000.0).contains(&y) {
                    return Err(format!(
                        "coordinates ({x}, {y}) are outside the 0-1000 grid"
                    ));
                }
                Ok(Target::Point {
                    x: (x / 1000.0 * f64::from(w)).min(f64::from(w) - 1.0),
                    y: (y / 1000.0 * f64::from(h)).min(f64::from(h) - 1.0),
                })
            }
            (Grounding::Coordinates, Target::Element(_)) => {
                Err("this agent acts by coordinates: use x, y on the 0-1000 grid".into())
            }
            (Grounding::Marks, Target::Point { .. }) => {
                Err("this agent acts by element number: use the numbers of the element list".into())
            }
            (_, Target::Selector(_)) => {
                Err("css= targets are for scripted solutions; use an element number".into())
            }
            (_, t) => Ok(t),
        }
    };
    action.map_targets(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VP: (u32, u32) = (1280, 720);

    #[test]
    fn thought_and_action_are_separated() {
        let (t, a) = parse_output("I need the cart.\nAction: click(12)", Grounding::Marks, VP);
        assert_eq!(t.as_deref(), Some("I need the cart."));
        assert_eq!(a, Ok(Action::Click(Target::Element(12))));
        let (_, a) = parse_output(
            "Memory: x\nIntention: y\naction: `type(3, \"mug\")`",
            Grounding::Marks,
            VP,
        );
        assert!(matches!(a, Ok(Action::Type { .. })));
        let (t, a) = parse_output("thinking\nscroll(down)", Grounding::Marks, VP);
        assert_eq!(
            (t.as_deref(), a),
            (
                Some("thinking"),
                Ok(Action::Scroll(browser_pool::Scroll::Down))
            )
        );
    }

    #[test]
    fn coordinates_map_from_the_grid_to_pixels() {
        let (_, a) = parse_output("Action: click(500, 500)", Grounding::Coordinates, VP);
        assert_eq!(a, Ok(Action::Click(Target::Point { x: 640.0, y: 360.0 })));
        let (_, a) = parse_output("Action: click(1000, 1000)", Grounding::Coordinates, VP);
        assert_eq!(
            a,
            Ok(Action::Click(Target::Point {
                x: 1279.0,
                y: 719.0
            }))
        );
    }

    #[test]
    fn malformed_output_is_an_error_never_a_panic() {
        for (text, want) in [
            ("", "empty output"),
            ("I don't know", "no action found"),
            ("Action: fly(3)", "unknown action"),
            ("Action: click(", "expected an argument"),
            ("Action: click(3)", "by coordinates"),
            ("Action: click(2000, 10)", "outside the 0-1000 grid"),
        ] {
            let g = if want == "by coordinates" || want.contains("grid") {
                Grounding::Coordinates
            } else {
                Grounding::Marks
            };
            let (_, a) = parse_output(text, g, VP);
            assert!(
                a.as_ref().is_err_and(|e| e.contains(want)),
                "{text:?}: {a:?}"
            );
        }
        let (_, a) = parse_output(&"x".repeat(5000), Grounding::Marks, VP);
        assert!(a.unwrap_err().contains("longer than"));
        let (_, a) = parse_output("Action: click(1, 2)", Grounding::Marks, VP);
        assert!(a.unwrap_err().contains("element number"));
        let (_, a) = parse_output("Action: click(css=\"#x\")", Grounding::Marks, VP);
        assert!(a.unwrap_err().contains("scripted"));
        // Every target of every action is grounded, drags' destinations included.
        let (_, a) = parse_output(
            "Action: drag(100, 200, to_x=500, to_y=1000)",
            Grounding::Coordinates,
            VP,
        );
        assert_eq!(
            a,
            Ok(Action::Drag {
                from: Target::Point { x: 128.0, y: 144.0 },
                to: Target::Point { x: 640.0, y: 719.0 }
            })
        );
        let (_, a) = parse_output("Action: hover(css=\"#x\")", Grounding::Marks, VP);
        assert!(a.unwrap_err().contains("scripted"));
    }

    #[test]
    fn element_numbers_must_be_in_the_observed_list() {
        let el = |id| Element {
            id,
            tag: "a".into(),
            role: "link".into(),
            in_viewport: true,
            ..Default::default()
        };
        let list = [el(1), el(2), el(3)];
        let ok = Action::Click(Target::Element(3));
        assert_eq!(check_elements(ok.clone(), &list), Ok(ok));
        let drag = Action::Drag {
            from: Target::Element(1),
            to: Target::Element(4),
        };
        let e = check_elements(drag, &list).unwrap_err();
        assert!(e.contains("element 4") && e.contains("1 to 3"), "{e}");
        let e = check_elements(Action::Click(Target::Element(1)), &[]).unwrap_err();
        assert!(e.contains("has none"), "{e}");
        // Targets that are not element numbers are not the list's business.
        let point = Action::Click(Target::Point { x: 5.0, y: 5.0 });
        assert_eq!(check_elements(point.clone(), &[]), Ok(point));
    }

    #[test]
    fn an_action_outside_the_set_is_an_invalid_output() {
        let clicks = ActionSet::only(["click"]).unwrap();
        let (_, a) = parse_output("Action: click(3)", Grounding::Marks, VP);
        assert_eq!(within(a, clicks).unwrap().to_string(), "click(3)");
        let (_, a) = parse_output("Action: press(\"Enter\")", Grounding::Marks, VP);
        let e = within(a, clicks).unwrap_err();
        assert!(
            e.contains("press(...) is not among this policy's actions (click)"),
            "{e}"
        );
        let (_, a) = parse_output("nothing here", Grounding::Marks, VP);
        assert!(within(a, clicks).unwrap_err().contains("no action found"));
    }
}
