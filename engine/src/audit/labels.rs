//! The labelled set by construction: an explored task's trajectories, each fact labelled
//! by what the trajectory is, never by a judge's verdict.
//!
//! - The whole reference solution: every fact holds (the task is verified to succeed;
//!   `surfgym tasks audit` reports any that does not). A MiniWoB++ task's solver run is
//!   labelled so only for the tasks the solver solves.
//! - A strict prefix of it (0 steps: the do-nothing agent): when the solution ends with an
//!   answer, no answer was given, so every answer check fails; a fact the task declares in
//!   `audit.holds_after` holds exactly from its step on, one in `audit.holds_on` exactly
//!   on the prefixes listed there (a fact that flips); MiniWoB++'s reward is not yet
//!   given (the runner stops at the episode's end, so no earlier step had ended it).
//! - A perturbation: the facts it declares failing fail, those it declares holding hold.
//!   The generic `wrong-answer` (answer replaced, page untouched) fails every answer check
//!   and leaves every other fact holding.
//!
//! Facts left undeclared on a trajectory carry no label there.

use std::collections::BTreeMap;

use rubrics::Check;
use tasks::Setup;

use tasks::reviewed::Reviewed;

use super::{Exploration, Point};
use crate::judge::calibration::{LabelledEpisode, with_answer_fact};
use policy::miniwob::SOLVED;

/// The fact in words added for model judges on tasks with a reference answer.
pub const ANSWER_FACT: &str = "calibration.answer";

/// The labelled episodes of one explored task.
pub fn labelled(ex: &Exploration) -> Vec<LabelledEpisode> {
    let task = &ex.task;
    let id = task.id.as_str();
    let facts: Vec<(&str, &Check)> = task
        .rubric
        .groups()
        .iter()
        .flat_map(|g| &g.facts)
        .filter(|f| !matches!(f.check, Check::Judge))
        .map(|f| (f.id.as_str(), &f.check))
        .collect();
    let mut spec = serde_json::to_value(task.to_spec()).unwrap_or_default();
    if let Some(r) = &task.reference_answer {
        spec = with_answer_fact(&spec, r);
    }
    let item = |label: String, point: &Point, gold: BTreeMap<String, bool>| LabelledEpisode {
        label,
        task: spec.clone(),
        page: point.snapshot.clone(),
        final_answer: point.final_answer.clone(),
        visited_urls: point.visited.clone(),
        gold,
        screenshots: Vec::new(),
    };
    let n = ex.prefixes.len() - 1;
    let miniwob_solved =
        task.setup == Some(Setup::MiniWob) && SOLVED.contains(&id.trim_start_matches("miniwob."));
    let mut out = Vec::new();
    for point in &ex.prefixes {
        let k = point.steps;
        let mut gold = BTreeMap::new();
        for (fact, check) in &facts {
            let label = if k == n {
                match check {
                    Check::MiniWob => miniwob_solved.then_some(true),
                    _ => Some(true),
                }
            } else {
                match check {
                    Check::Answer(_) if ex.answers() => Some(false),
                    Check::MiniWob => Some(false),
                    _ => task
                        .audit
                        .holds_after
                        .get(*fact)
                        .map(|m| k >= *m)
                        .or_else(|| task.audit.holds_on.get(*fact).map(|ks| ks.contains(&k))),
                }
            };
            if let Some(l) = label {
                gold.insert(fact.to_string(), l);
            }
        }
        if task.reference_answer.is_some() && (k == n || ex.answers()) {
            gold.insert(ANSWER_FACT.into(), k == n);
        }
        let label = match k {
            _ if k == n => format!("{id}/reference"),
            0 => format!("{id}/do-nothing"),
            _ => format!("{id}/prefix-{k}"),
        };
        if !gold.is_empty() {
            out.push(item(label, point, gold));
        }
    }
    for (p, point) in &ex.perturbed {
        let mut gold: BTreeMap<String, bool> = p
            .fails
            .iter()
            .map(|f| (f.clone(), false))
            .chain(p.holds.iter().map(|f| (f.clone(), true)))
            .collect();
        if p.name == "wrong-answer" && task.reference_answer.is_some() {
            gold.insert(ANSWER_FACT.into(), false);
        }
        out.push(item(format!("{id}/{}", p.name), point, gold));
    }
    out
}

/// A reviewed episode (a random policy's, say) with the reviewer's labels, at the point
/// its replay ended.
pub fn reviewed(task: &tasks::Task, r: &Reviewed, end: &Point) -> LabelledEpisode {
    let mut spec = serde_json::to_value(task.to_spec()).unwrap_or_default();
    let mut gold = r.labels.clone();
    if let Some(answer) = &task.reference_answer {
        spec = with_answer_fact(&spec, answer);
        // Labelled by construction, not review: only answering can give the answer.
        if end.final_answer.is_none() {
            gold.insert(ANSWER_FACT.into(), false);
        }
    }
    LabelledEpisode {
        label: r.label(),
        task: spec,
        page: end.snapshot.clone(),
        final_answer: end.final_answer.clone(),
        visited_urls: end.visited.clone(),
        gold,
        screenshots: Vec::new(),
    }
}
