//! Rubric soundness, measured on trajectories whose truth is known without a judge: a
//! task's reference solution with the page after each of its steps (its strict prefixes,
//! the first of them the do-nothing agent's), and its declared perturbations, each run for
//! real in the pool. [`findings`] reads the rule judge's verdicts on them
//! (`surfgym tasks audit`); [`labels`] turns the same runs into the labelled set that
//! `surfgym judge eval` measures judges against, labelled by the task's declarations
//! (`audit` in the task file), never by a judge.

pub mod labels;
pub mod replay;
pub mod reviewed;

use std::collections::BTreeMap;
use std::sync::Arc;

use browser_pool::{Action, BrowserPool};
use rubrics::{Check, Judgement, Trajectory};
use serde::Serialize;
use tasks::audit::{Edit, Perturbation};
use tasks::{Setup, Task};

use crate::runner::{EpisodeRun, InfraError};
use policy::miniwob::MiniWobSolver;
pub use replay::{Point, replay};

/// A deliberately wrong answer: no bundled answer check accepts it.
pub const WRONG_ANSWER: &str = "I could not find this on the website";

/// One task's trajectories.
#[derive(Debug, Clone)]
pub struct Exploration {
    /// The task.
    pub task: Arc<Task>,
    /// The solution played (the reference, or the MiniWoB++ solver's actions).
    pub solution: Vec<Action>,
    /// The page after 0..=n steps of the solution (0: the do-nothing agent; n: the whole
    /// solution).
    pub prefixes: Vec<Point>,
    /// Each perturbation with where it ended. The generic `wrong-answer` one (the final
    /// answer replaced, the page untouched) comes first for tasks that answer.
    pub perturbed: Vec<(Perturbation, Point)>,
}

impl Exploration {
    /// The whole solution's point.
    pub fn reference(&self) -> &Point {
        self.prefixes
            .last()
            .expect("a replay returns at least one point")
    }

    /// Whether the solution ends with an answer.
    pub fn answers(&self) -> bool {
        matches!(self.solution.last(), Some(Action::Answer(_)))
    }
}

/// Runs `task`'s solution (every prefix) and its perturbations. MiniWoB++ tasks take the
/// solver's actions for the episode of `seed` as their solution.
pub async fn explore(
    pool: &BrowserPool,
    task: Arc<Task>,
    seed: u64,
) -> Result<Exploration, InfraError> {
    let solution = if task.setup == Some(Setup::MiniWob) {
        solver_actions(pool, &task, seed).await?
    } else {
        task.reference_solution.clone()
    };
    // A check that opens another page navigates away: capture each prefix on its own run.
    let prefixes = if task.rubric.pages().is_empty() {
        replay(pool, &task, &solution, true, seed).await?
    } else {
        let mut out = Vec::new();
        for k in 0..=solution.len() {
            out.extend(replay(pool, &task, &solution[..k], false, seed).await?);
        }
        out
    };
    let mut perturbed = Vec::new();
    if let Some(wrong) = wrong_answer(&task, &solution, prefixes.last()) {
        perturbed.push(wrong);
    }
    for p in &task.audit.perturbations {
        let actions = p.apply(&solution);
        let mut end = replay(pool, &task, &actions, false, seed).await?;
        if let Some(point) = end.pop() {
            perturbed.push((p.clone(), point));
        }
    }
    Ok(Exploration {
        task,
        solution,
        prefixes,
        perturbed,
    })
}

/// The final answer replaced by [`WRONG_ANSWER`]: the page is the reference's (an answer
/// does not touch it), so answer checks fail and every other fact holds.
fn wrong_answer(
    task: &Task,
    solution: &[Action],
    reference: Option<&Point>,
) -> Option<(Perturbation, Point)> {
    let (Some(Action::Answer(_)), Some(reference)) = (solution.last(), reference) else {
        return None;
    };
    let (mut fails, mut holds) = (Vec::new(), Vec::new());
    for f in task.rubric.groups().iter().flat_map(|g| &g.facts) {
        match f.check {
            Check::Answer(_) => fails.push(f.id.clone()),
            Check::Judge => {}
            _ => holds.push(f.id.clone()),
        }
    }
    let mut point = reference.clone();
    point.final_answer = Some(WRONG_ANSWER.into());
    Some((
        Perturbation {
            name: "wrong-answer".into(),
            edit: Edit::Replace(solution.len() - 1, Action::Answer(WRONG_ANSWER.into())),
            fails,
            holds,
        },
        point,
    ))
}

/// One episode of `policy` on `task` with `seed`, run through the runner (no database):
/// the trajectories whose actions the audit replays.
pub(crate) async fn play(
    pool: &BrowserPool,
    task: &Arc<Task>,
    policy: Arc<dyn policy::Policy>,
    seed: u64,
) -> Result<crate::runner::episode::Finished, InfraError> {
    let run = EpisodeRun {
        id: uuid::Uuid::new_v4(),
        task: task.clone(),
        policy,
        max_steps: task.max_steps.unwrap_or(20),
        seed,
        sample: 0,
        screen: task.screen,
        answer_checks: 1,
        blocks: Default::default(),
        traffic: Default::default(),
        allowed_domains: Arc::from([]),
        max_invalid_outputs: crate::runner::episode::MAX_POLICY_ERRORS,
    };
    let (_keep, cut) = tokio::sync::watch::channel(false);
    crate::runner::episode::run_alone(pool, run, &cut).await
}

/// The MiniWoB++ solver's actions on the episode of `seed`, run through the runner.
async fn solver_actions(
    pool: &BrowserPool,
    task: &Arc<Task>,
    seed: u64,
) -> Result<Vec<Action>, InfraError> {
    let finished = play(pool, task, Arc::new(MiniWobSolver), seed).await?;
    Ok(finished
        .steps
        .iter()
        .filter_map(|s| spaces::parse_action(&s.core.action).ok())
        .collect())
}

/// The rule judge's verdicts on one point (facts in words are not judged).
pub async fn judge(task: &Task, point: &Point) -> Result<Judgement, String> {
    let traj = Trajectory {
        final_answer: point.final_answer.clone(),
        visited_urls: point.visited.clone(),
    };
    rubrics::judge(&task.rubric, &traj, &point.snapshot)
        .await
        .map_err(|e| e.0)
}

/// One audit finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The task.
    pub task: String,
    /// One of `tasks::audit::FINDINGS`.
    pub kind: &'static str,
    /// The fact it concerns, if one.
    pub fact: Option<String>,
    /// What was seen.
    pub detail: String,
    /// Whether the task file accepts it.
    pub accepted: bool,
}

/// The audit's findings on one explored task.
pub async fn findings(ex: &Exploration) -> Result<Vec<Finding>, String> {
    let task = &ex.task;
    let mut out = Vec::new();
    let mut push = |kind: &'static str, fact: Option<String>, detail: String| {
        let accepted = task.audit.accepts(kind, fact.as_deref());
        out.push(Finding {
            task: task.id.to_string(),
            kind,
            fact,
            detail,
            accepted,
        });
    };
    let n = ex.prefixes.len() - 1;
    // A closing `stop()` changes nothing: the prefix without it is the same trajectory.
    let last_prefix = n - usize::from(matches!(ex.solution.last(), Some(Action::Stop)));
    let mut ever_false: BTreeMap<String, bool> = BTreeMap::new();
    let mut errors: BTreeMap<String, String> = BTreeMap::new();
    let mut lenient = Vec::new();
    let points = ex
        .prefixes
        .iter()
        .map(|p| (None, p))
        .chain(ex.perturbed.iter().map(|(q, p)| (Some(q), p)));
    for (perturbation, point) in points {
        let j = judge(task, point).await?;
        for v in &j.verdicts {
            *ever_false.entry(v.fact_id.clone()).or_default() |= !v.passed;
        }
        for e in &j.errors {
            errors
                .entry(e.fact_id.clone())
                .or_insert_with(|| e.message.clone());
        }
        match perturbation {
            Some(_) => {}
            None if point.steps == n && !j.success => {
                let failed: Vec<_> = j
                    .verdicts
                    .iter()
                    .filter(|v| !v.passed)
                    .map(|v| format!("{} ({})", v.fact_id, v.reason))
                    .chain(
                        j.errors
                            .iter()
                            .map(|e| format!("{}: {}", e.fact_id, e.message)),
                    )
                    .collect();
                push(
                    "reference-fails",
                    None,
                    format!("the whole solution fails: {}", failed.join("; ")),
                );
            }
            None if point.steps == 0 && j.success => push(
                "do-nothing-succeeds",
                None,
                "the rubric holds on the start page with no answer".into(),
            ),
            None if point.steps > 0 && point.steps < last_prefix && j.success => {
                lenient.push(point.steps)
            }
            None => {}
        }
    }
    if !lenient.is_empty() {
        push(
            "lenient-prefix",
            None,
            format!(
                "the rubric already holds after {} of {n} steps",
                lenient
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    for (fact, message) in errors {
        push("unevaluable", Some(fact), message);
    }
    for (fact, was_false) in ever_false {
        if !was_false {
            push(
                "never-false",
                Some(fact),
                format!(
                    "holds on all {} trajectories (every prefix, {} perturbation(s))",
                    ex.prefixes.len() + ex.perturbed.len(),
                    ex.perturbed.len()
                ),
            );
        }
    }
    Ok(out)
}

/// A task whose exploration failed: a check page that would not open is the rubric's
/// finding; any other failure is the environment's, reported as an error.
pub fn infra_finding(task: &Task, e: &InfraError) -> Option<Finding> {
    matches!(e, InfraError::CheckPage { .. }).then(|| Finding {
        task: task.id.to_string(),
        kind: "unevaluable",
        fact: None,
        detail: e.to_string(),
        accepted: task.audit.accepts("unevaluable", None),
    })
}
