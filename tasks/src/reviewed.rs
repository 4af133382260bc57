//! Reviewed episodes: other policies' trajectories (the random policy's first) kept as
//! fixed action lists with a label per fact that a person wrote after looking at where the
//! trajectory ended. They complete the labelled set where no construction says what a
//! trajectory did: a reference solution's prefixes and perturbations are labelled by the
//! task's `audit` declarations; a random walk is labelled only by review.
//!
//! The file (`bundled/reviewed/*.jsonl`, one episode a line) is written in two passes:
//! `surfgym judge record-random` plays the policy and writes every label as `null`; the
//! reviewer replaces each `null` with `true` or `false` and says why in `notes`. A `null`
//! label is an unreviewed fact and labels nothing.

use std::collections::BTreeMap;

use include_dir::{Dir, include_dir};
use rubrics::Check;
use serde::{Deserialize, Serialize};
use spaces::Action;

use crate::{FieldError, Task};

static REVIEWED: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/bundled/reviewed");

/// One reviewed episode as written.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewedSpec {
    /// The task's id.
    pub task: String,
    /// The policy that chose the actions, e.g. `random`.
    pub policy: String,
    /// The episode seed it played with.
    pub seed: u64,
    /// The actions, in order, as the policy wrote them (element numbers are those of the
    /// observation before each step).
    pub actions: Vec<String>,
    /// What the policy said it did at each step (`click [4] "Mugs"`), for the reviewer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<String>,
    /// The pages the replay visited, sites as `{{site}}`: a replay that visits others is
    /// not the trajectory that was reviewed.
    pub visited: Vec<String>,
    /// The final answer, if it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_answer: Option<String>,
    /// Fact id → the reviewer's label (`null`: not reviewed yet). Every fact the rule
    /// judge checks is listed.
    pub labels: BTreeMap<String, Option<bool>>,
    /// Fact id → why the reviewer labelled it so (required for every label given).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub notes: BTreeMap<String, String>,
}

/// A reviewed episode, checked against its task.
#[derive(Debug, Clone, PartialEq)]
pub struct Reviewed {
    /// The episode as written.
    pub spec: ReviewedSpec,
    /// Its actions.
    pub actions: Vec<Action>,
    /// The labels given (facts still `null` are left out).
    pub labels: BTreeMap<String, bool>,
}

impl Reviewed {
    /// A short name for reports, e.g. `shop-mug-capacity/random-seed-3`.
    pub fn label(&self) -> String {
        format!(
            "{}/{}-seed-{}",
            self.spec.task, self.spec.policy, self.spec.seed
        )
    }
}

/// The facts a rule judge checks on `task` (facts in words are for model judges).
fn rule_facts(task: &Task) -> Vec<(&str, &Check)> {
    task.rubric
        .groups()
        .iter()
        .flat_map(|g| &g.facts)
        .filter(|f| !matches!(f.check, Check::Judge))
        .map(|f| (f.id.as_str(), &f.check))
        .collect()
}

impl ReviewedSpec {
    /// An unreviewed episode of `task`: every rule fact labelled `null`.
    pub fn unreviewed(task: &Task, policy: &str, seed: u64) -> ReviewedSpec {
        ReviewedSpec {
            task: task.id.to_string(),
            policy: policy.into(),
            seed,
            labels: rule_facts(task)
                .into_iter()
                .map(|(f, _)| (f.to_string(), None))
                .collect(),
            ..ReviewedSpec::default()
        }
    }

    /// Checks the episode against its task: the actions parse, every rule fact is listed
    /// and nothing else, every label has a note, and no label contradicts what is known
    /// without review (an episode that never answered fails every answer check).
    pub fn check(&self, task: &Task) -> Result<Reviewed, Vec<FieldError>> {
        let mut errors = Vec::new();
        let mut err = |field: String, message: String| errors.push(FieldError { field, message });
        if task.id.as_str() != self.task {
            err(
                "task".into(),
                format!("names {}, checked against {}", self.task, task.id),
            );
        }
        let mut actions = Vec::new();
        for (i, a) in self.actions.iter().enumerate() {
            match spaces::parse_action(a) {
                Ok(a) => actions.push(a),
                Err(e) => err(
                    format!("actions[{i}]"),
                    format!("{a:?} does not parse: {e}"),
                ),
            }
        }
        let facts = rule_facts(task);
        for (fact, check) in &facts {
            match self.labels.get(*fact) {
                None => err(
                    format!("labels.{fact}"),
                    "missing: every fact the rule judge checks is listed (null until reviewed)"
                        .into(),
                ),
                Some(Some(true))
                    if matches!(check, Check::Answer(_)) && self.final_answer.is_none() =>
                {
                    err(
                        format!("labels.{fact}"),
                        "true, but the episode never answered: an answer check cannot hold".into(),
                    )
                }
                _ => {}
            }
        }
        let mut labels = BTreeMap::new();
        for (fact, label) in &self.labels {
            if !facts.iter().any(|(f, _)| f == fact) {
                err(
                    format!("labels.{fact}"),
                    format!("{} has no such rule fact", self.task),
                );
            }
            if let Some(l) = label {
                if self.notes.get(fact).is_none_or(|n| n.trim().is_empty()) {
                    err(
                        format!("notes.{fact}"),
                        "missing: say why the label is what it is".into(),
                    );
                }
                labels.insert(fact.clone(), *l);
            }
        }
        for fact in self.notes.keys() {
            if !self.labels.contains_key(fact) {
                err(
                    format!("notes.{fact}"),
                    "a note on a fact not labelled".into(),
                );
            }
        }
        if errors.is_empty() {
            Ok(Reviewed {
                spec: self.clone(),
                actions,
                labels,
            })
        } else {
            Err(errors)
        }
    }

    /// `visited` with the sites' base URLs in place of the placeholders.
    pub fn visited_at(&self, bases: &BTreeMap<String, String>) -> Vec<String> {
        self.visited
            .iter()
            .map(|u| {
                let mut u = u.clone();
                for (site, base) in bases {
                    u = u.replace(&format!("{{{{{site}}}}}"), base.trim_end_matches('/'));
                }
                u
            })
            .collect()
    }
}

/// `url` with the sites' base URLs written as placeholders, for a file that outlives
/// the ports.
pub fn templated(url: &str, bases: &BTreeMap<String, String>) -> String {
    for (site, base) in bases {
        let base = base.trim_end_matches('/');
        if let Some(rest) = url.strip_prefix(base)
            && (rest.is_empty() || rest.starts_with(['/', '?', '#']))
        {
            return format!("{{{{{site}}}}}{rest}");
        }
    }
    url.to_string()
}

/// One line of a bundled reviewed file.
#[derive(Debug)]
pub struct ReviewedLine {
    /// `file:line`.
    pub at: String,
    /// The episode, or why the line does not parse.
    pub spec: Result<ReviewedSpec, String>,
}

/// Every bundled reviewed episode, in file order.
pub fn bundled_reviewed() -> Vec<ReviewedLine> {
    let mut out = Vec::new();
    for f in crate::bundled::jsonl_files(&REVIEWED) {
        let text = f.contents_utf8().unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            out.push(ReviewedLine {
                at: format!("{}:{}", f.path().display(), i + 1),
                spec: serde_json::from_str(line).map_err(|e| e.to_string()),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks() -> Vec<Task> {
        crate::bundled_tasks(&BTreeMap::from([
            ("shop".to_string(), "http://127.0.0.1:1".to_string()),
            ("wiki".to_string(), "http://127.0.0.1:2".to_string()),
            ("booking".to_string(), "http://127.0.0.1:3".to_string()),
        ]))
        .into_iter()
        .map(|l| l.line.result.unwrap())
        .collect()
    }

    fn task() -> Task {
        tasks()
            .into_iter()
            .find(|t| t.id.as_str() == "shop-mug-capacity")
            .unwrap()
    }

    fn reviewed() -> ReviewedSpec {
        let mut s = ReviewedSpec::unreviewed(&task(), "random", 3);
        s.actions = vec!["click(4)".into(), "scroll(down)".into()];
        s.labels.insert("capacity".into(), Some(false));
        s.notes.insert("capacity".into(), "never answered".into());
        s
    }

    #[test]
    fn a_reviewed_episode_keeps_only_the_labels_given() {
        let r = reviewed().check(&task()).unwrap();
        assert_eq!(r.actions.len(), 2);
        assert_eq!(r.labels, BTreeMap::from([("capacity".to_string(), false)]));
        assert_eq!(r.label(), "shop-mug-capacity/random-seed-3");
    }

    #[test]
    fn a_label_that_contradicts_the_episode_or_the_task_is_refused() {
        let fields = |s: ReviewedSpec| -> Vec<String> {
            s.check(&task())
                .unwrap_err()
                .into_iter()
                .map(|e| e.field)
                .collect()
        };
        let mut s = reviewed();
        s.labels.insert("capacity".into(), Some(true));
        assert_eq!(fields(s), ["labels.capacity"]);
        let mut s = reviewed();
        s.notes.clear();
        assert_eq!(fields(s), ["notes.capacity"]);
        let mut s = reviewed();
        s.labels.remove("visited");
        assert_eq!(fields(s), ["labels.visited"]);
        let mut s = reviewed();
        s.labels.insert("price".into(), Some(false));
        s.notes.insert("price".into(), "x".into());
        assert_eq!(fields(s), ["labels.price"]);
        let mut s = reviewed();
        s.actions.push("fly(3)".into());
        assert_eq!(fields(s), ["actions[2]"]);
        let mut s = reviewed();
        s.task = "shop-other".into();
        assert_eq!(fields(s), ["task"]);
    }

    #[test]
    fn urls_round_trip_through_the_placeholders() {
        let bases = BTreeMap::from([("shop".to_string(), "http://127.0.0.1:9/".to_string())]);
        let t = templated("http://127.0.0.1:9/product.html?id=a", &bases);
        assert_eq!(t, "{{shop}}/product.html?id=a");
        let s = ReviewedSpec {
            visited: vec![t],
            ..ReviewedSpec::default()
        };
        assert_eq!(
            s.visited_at(&bases),
            ["http://127.0.0.1:9/product.html?id=a"]
        );
    }

    #[test]
    fn every_bundled_reviewed_episode_is_reviewed_and_checks_against_its_task() {
        let all = tasks();
        let lines = bundled_reviewed();
        assert!(!lines.is_empty());
        for line in lines {
            let spec = line.spec.unwrap_or_else(|e| panic!("{}: {e}", line.at));
            let t = all
                .iter()
                .find(|t| t.id.as_str() == spec.task)
                .unwrap_or_else(|| panic!("{}: no bundled task {}", line.at, spec.task));
            let r = spec
                .check(t)
                .unwrap_or_else(|e| panic!("{}: {e:?}", line.at));
            assert_eq!(
                r.labels.len(),
                spec.labels.len(),
                "{}: a label is still null",
                line.at
            );
        }
    }
}
