//! Random valid actions over the marked elements: the floor every learned policy must beat.

use futures::FutureExt;
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

use browser_pool::{Action, Element, Scroll, Target};

use super::{Decision, Policy, PolicyError, StepInput};

/// The `random` policy. Reproducible: the choice depends only on the episode seed, the
/// step index and the observation.
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomPolicy;

const WORDS: &[&str] = &[
    "blue",
    "mug",
    "river",
    "lamp",
    "2026-12-01",
    "London",
    "42",
    "test",
    "yes",
    "Ada",
];

fn is_textbox(e: &Element) -> bool {
    matches!(e.role.as_str(), "textbox" | "searchbox" | "spinbutton")
        && !matches!(e.input_type.as_deref(), Some("checkbox" | "radio"))
}

/// A word to type: from the instruction half the time (the way BrowserGym's random agent
/// quotes the goal), else from a fixed list.
fn word(rng: &mut StdRng, instruction: &str) -> String {
    let from_goal: Vec<&str> = instruction
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|w| w.len() > 2)
        .collect();
    if rng.random_bool(0.5)
        && let Some(w) = from_goal.choose(rng)
    {
        return (*w).to_string();
    }
    WORDS.choose(rng).copied().unwrap_or("test").to_string()
}

pub(super) fn choose(input: &StepInput) -> (Action, String) {
    let mix = (input.step as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = StdRng::seed_from_u64(input.seed ^ mix);
    let usable: Vec<&Element> = input
        .observation
        .elements
        .iter()
        .filter(|e| e.in_viewport && !e.disabled)
        .collect();
    let roll: f64 = rng.random();
    if input.step >= 2 && roll < 0.06 {
        let text = match usable.choose(&mut rng) {
            Some(e) if !e.label.is_empty() => e.label.clone(),
            _ => word(&mut rng, &input.instruction),
        };
        return (Action::Answer(text), "random answer".into());
    }
    if roll < 0.09 {
        return (Action::Stop, "random stop".into());
    }
    if roll < 0.17 || usable.is_empty() {
        let dir = if rng.random_bool(0.7) {
            Scroll::Down
        } else {
            Scroll::Up
        };
        return (Action::Scroll(dir), "random scroll".into());
    }
    if roll < 0.21 {
        return (Action::Back, "random back".into());
    }
    let el = usable.choose(&mut rng).expect("usable is not empty");
    let target = Target::Element(el.id);
    if is_textbox(el) {
        let text = word(&mut rng, &input.instruction);
        return (
            Action::Type {
                target,
                text,
                clear: true,
            },
            format!("type into [{}]", el.id),
        );
    }
    if !el.options.is_empty() {
        let option = el.options.choose(&mut rng).cloned().unwrap_or_default();
        return (
            Action::Select { target, option },
            format!("select in [{}]", el.id),
        );
    }
    (
        Action::Click(target),
        format!("click [{}] {:?}", el.id, el.label),
    )
}

impl Policy for RandomPolicy {
    fn name(&self) -> &str {
        "random"
    }

    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        let (action, thought) = choose(&input);
        async move { Ok(Decision::action(action, thought)) }.boxed()
    }
}
