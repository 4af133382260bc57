//! A task's `audit` field: what `surfgym tasks audit` may accept of its findings (each with
//! a reason), and what its reference solution's prefixes and perturbations are declared to
//! do to each fact. Those declarations are the labels `surfgym judge eval` measures the
//! judges against: written by a reviewer from the task, never taken from a judge.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use spaces::Action;

use crate::FieldError;

/// The findings `surfgym tasks audit` reports (and a task may accept).
pub const FINDINGS: &[&str] = &[
    "reference-fails",
    "do-nothing-succeeds",
    "lenient-prefix",
    "never-false",
    "unevaluable",
];

/// The `audit` field as written.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditSpec {
    /// Findings accepted, each with its reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accept: Vec<AcceptSpec>,
    /// Fact id → the number of reference steps after which the fact holds, and keeps
    /// holding to the end: it is false after fewer (0 is the do-nothing agent).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub holds_after: BTreeMap<String, usize>,
    /// Fact id → the strict prefixes of the reference solution (numbers of steps played,
    /// 0 to its length − 1) after which the fact holds; it is false after every other
    /// strict prefix. For a fact that holds, stops holding and holds again along the way
    /// (`holds_after` says "from step n on" only), e.g. an element's absence, true on the
    /// pages that never show it and false on the one that shows it before it is removed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub holds_on: BTreeMap<String, Vec<usize>>,
    /// Perturbations of the reference solution with their declared effect.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub perturbations: Vec<PerturbationSpec>,
}

/// An accepted finding as written.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcceptSpec {
    /// One of [`FINDINGS`].
    pub finding: String,
    /// The fact it concerns (`never-false`, `unevaluable`); none: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact: Option<String>,
    /// Why it is acceptable (required).
    #[serde(default)]
    pub reason: String,
}

/// A perturbation as written: one of `drop`, `replace` (with `action`) or `swap` (step
/// `step` with the next) on reference step `step` (0-based).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerturbationSpec {
    /// A name, unique in the task, e.g. `wrong-quantity`.
    pub name: String,
    /// `drop`, `replace` or `swap`.
    pub op: String,
    /// The reference step it changes (0-based).
    pub step: usize,
    /// The replacement action (`replace` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Facts that must now fail.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fails: Vec<String>,
    /// Facts that still hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holds: Vec<String>,
}

/// A validated `audit` field.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Audit {
    /// Accepted findings.
    pub accept: Vec<AcceptSpec>,
    /// Fact id → steps after which it holds.
    pub holds_after: BTreeMap<String, usize>,
    /// Fact id → the strict prefixes after which it holds (false after the others).
    pub holds_on: BTreeMap<String, Vec<usize>>,
    /// Perturbations.
    pub perturbations: Vec<Perturbation>,
}

/// How a perturbation edits the reference solution.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// Leaves step i out.
    Drop(usize),
    /// Plays another action at step i.
    Replace(usize, Action),
    /// Plays steps i and i+1 in the other order.
    Swap(usize),
}

/// A validated perturbation.
#[derive(Debug, Clone, PartialEq)]
pub struct Perturbation {
    /// Its name.
    pub name: String,
    /// The edit.
    pub edit: Edit,
    /// Facts that must fail.
    pub fails: Vec<String>,
    /// Facts that still hold.
    pub holds: Vec<String>,
}

impl Perturbation {
    /// The reference solution with this edit applied.
    pub fn apply(&self, solution: &[Action]) -> Vec<Action> {
        let mut out = solution.to_vec();
        match &self.edit {
            Edit::Drop(i) => {
                out.remove(*i);
            }
            Edit::Replace(i, a) => out[*i] = a.clone(),
            Edit::Swap(i) => out.swap(*i, *i + 1),
        }
        out
    }
}

impl Audit {
    /// Whether `finding` (about `fact`, if any) is accepted.
    pub fn accepts(&self, finding: &str, fact: Option<&str>) -> bool {
        self.accept
            .iter()
            .any(|a| a.finding == finding && (a.fact.is_none() || a.fact.as_deref() == fact))
    }

    /// The spec form (round-trips through [`validate`]).
    pub fn to_spec(&self) -> AuditSpec {
        AuditSpec {
            accept: self.accept.clone(),
            holds_after: self.holds_after.clone(),
            holds_on: self.holds_on.clone(),
            perturbations: self
                .perturbations
                .iter()
                .map(|p| {
                    let (op, step, action) = match &p.edit {
                        Edit::Drop(i) => ("drop", *i, None),
                        Edit::Replace(i, a) => ("replace", *i, Some(a.to_string())),
                        Edit::Swap(i) => ("swap", *i, None),
                    };
                    PerturbationSpec {
                        name: p.name.clone(),
                        op: op.into(),
                        step,
                        action,
                        fails: p.fails.clone(),
                        holds: p.holds.clone(),
                    }
                })
                .collect(),
        }
    }
}

/// Validates `spec` against the task's fact ids and reference solution; errors name their
/// field under `audit`.
pub fn validate(
    spec: &AuditSpec,
    facts: &[&str],
    solution: &[Action],
    errors: &mut Vec<FieldError>,
) -> Audit {
    let mut err = |field: String, message: String| errors.push(FieldError { field, message });
    let known = |f: &str| facts.contains(&f);
    for (i, a) in spec.accept.iter().enumerate() {
        if !FINDINGS.contains(&a.finding.as_str()) {
            err(
                format!("audit.accept[{i}].finding"),
                format!(
                    "unknown finding `{}` (known: {})",
                    a.finding,
                    FINDINGS.join(", ")
                ),
            );
        }
        if a.reason.trim().len() < 10 {
            err(
                format!("audit.accept[{i}].reason"),
                "is required: say why the finding is acceptable (10 characters or more)".into(),
            );
        }
        if let Some(f) = &a.fact
            && !known(f)
        {
            err(
                format!("audit.accept[{i}].fact"),
                format!("no fact `{f}` in the rubric"),
            );
        }
    }
    for (f, n) in &spec.holds_after {
        if !known(f) {
            err(
                format!("audit.holds_after.{f}"),
                format!("no fact `{f}` in the rubric"),
            );
        }
        if *n > solution.len() {
            err(
                format!("audit.holds_after.{f}"),
                format!(
                    "{n} is past the reference solution's {} steps",
                    solution.len()
                ),
            );
        }
    }
    for (f, ks) in &spec.holds_on {
        let at = format!("audit.holds_on.{f}");
        if !known(f) {
            err(at.clone(), format!("no fact `{f}` in the rubric"));
        }
        if spec.holds_after.contains_key(f) {
            err(
                at.clone(),
                "the fact is also in `holds_after`: declare it in one of them".into(),
            );
        }
        if let Some(k) = ks.iter().find(|k| **k >= solution.len()) {
            err(
                at.clone(),
                format!(
                    "{k} is not a strict prefix of the reference solution's {} steps (0 to {})",
                    solution.len(),
                    solution.len().saturating_sub(1)
                ),
            );
        }
        if ks.windows(2).any(|w| w[0] >= w[1]) {
            err(
                at,
                "list the prefixes in increasing order, each once".into(),
            );
        }
    }
    let mut perturbations = Vec::new();
    for (i, p) in spec.perturbations.iter().enumerate() {
        let at = format!("audit.perturbations[{i}]");
        if p.name.trim().is_empty() {
            err(format!("{at}.name"), "must not be empty".into());
        } else if spec.perturbations[..i].iter().any(|o| o.name == p.name) {
            err(format!("{at}.name"), format!("`{}` is used twice", p.name));
        }
        let last = solution.len();
        let in_range = match p.op.as_str() {
            "swap" => p.step + 1 < last,
            _ => p.step < last,
        };
        if !in_range {
            err(
                format!("{at}.step"),
                format!(
                    "{} is outside the reference solution ({last} steps)",
                    p.step
                ),
            );
        }
        let edit = match (p.op.as_str(), &p.action) {
            ("drop", None) => Some(Edit::Drop(p.step)),
            ("swap", None) => Some(Edit::Swap(p.step)),
            ("replace", Some(line)) => match spaces::parse_action(line) {
                Ok(a) => Some(Edit::Replace(p.step, a)),
                Err(e) => {
                    err(format!("{at}.action"), e.message);
                    None
                }
            },
            ("replace", None) => {
                err(format!("{at}.action"), "is required with `replace`".into());
                None
            }
            ("drop" | "swap", Some(_)) => {
                err(
                    format!("{at}.action"),
                    format!("`{}` takes no action", p.op),
                );
                None
            }
            (other, _) => {
                err(
                    format!("{at}.op"),
                    format!("unknown op `{other}` (known: drop, replace, swap)"),
                );
                None
            }
        };
        if p.fails.is_empty() && p.holds.is_empty() {
            err(
                format!("{at}.fails"),
                "declare which facts fail (and which hold)".into(),
            );
        }
        for (list, name) in [(&p.fails, "fails"), (&p.holds, "holds")] {
            for (j, f) in list.iter().enumerate() {
                if !known(f) {
                    err(
                        format!("{at}.{name}[{j}]"),
                        format!("no fact `{f}` in the rubric"),
                    );
                }
            }
        }
        if let Some(f) = p.fails.iter().find(|f| p.holds.contains(f)) {
            err(
                format!("{at}.holds"),
                format!("`{f}` cannot both fail and hold"),
            );
        }
        if let (Some(edit), true) = (edit, in_range) {
            perturbations.push(Perturbation {
                name: p.name.clone(),
                edit,
                fails: p.fails.clone(),
                holds: p.holds.clone(),
            });
        }
    }
    Audit {
        accept: spec.accept.clone(),
        holds_after: spec.holds_after.clone(),
        holds_on: spec.holds_on.clone(),
        perturbations,
    }
}
