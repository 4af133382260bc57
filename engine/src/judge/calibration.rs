//! Calibration: running judges over labelled episodes (gold per-fact labels) and reporting
//! accuracy, precision, recall and run-to-run agreement.
//!
//! The bundled set (`rubrics/calibration/bundled.jsonl`) holds the final pages of the
//! bundled tasks' reference solutions, recorded by `surfgym judge record`: every fact holds
//! there (the tasks are verified to succeed). [`expand`] adds controlled mutations whose
//! effect on each fact is known by construction: a wrong final answer (answer facts no
//! longer hold), and, per element a rubric reads, that element missing from the page.
//! Tasks with a reference answer also get a fact in words ("the final answer is ..."),
//! true on the reference run and false with the wrong answer, to calibrate model judges.

use std::collections::BTreeMap;

use rubrics::{Check, ElementExpect, Rubric, Trajectory};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tasks::{Task, TaskSpec};
use uuid::Uuid;

use super::{Evidence, ModelJudge, judge_episode};
use crate::snapshot::PageSnapshot;

/// One labelled episode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabelledEpisode {
    /// What it is, e.g. `shop-mug-capacity/reference`.
    pub label: String,
    /// The task (a `TaskSpec`, its URLs resolved as when it was recorded).
    pub task: serde_json::Value,
    /// The final page.
    pub page: PageSnapshot,
    /// The agent's final answer.
    pub final_answer: Option<String>,
    /// Pages visited.
    pub visited_urls: Vec<String>,
    /// Gold label per fact id (facts left out have no label).
    pub gold: BTreeMap<String, bool>,
    /// The episode's last screenshots (base64 JPEG, oldest first), when recorded: what a
    /// model judge looks at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub screenshots: Vec<String>,
}

impl LabelledEpisode {
    /// The recorded screenshots, decoded (undecodable ones are left out).
    pub fn screenshot_bytes(&self) -> Vec<Vec<u8>> {
        use base64::Engine as _;
        self.screenshots
            .iter()
            .filter_map(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
            .collect()
    }
}

/// A deliberately wrong answer: no bundled answer check accepts it.
pub const WRONG_ANSWER: &str = "I could not find this on the website";

impl LabelledEpisode {
    /// The validated task.
    pub fn task(&self) -> Result<Task, String> {
        let spec =
            TaskSpec::from_json(self.task.clone()).map_err(|e| format!("{}: {e:?}", self.label))?;
        Task::try_from(spec).map_err(|e| format!("{}: {e:?}", self.label))
    }
}

pub(crate) fn with_answer_fact(task: &serde_json::Value, reference: &str) -> serde_json::Value {
    let mut t = task.clone();
    if let Some(groups) = t["rubric"]["groups"].as_array_mut() {
        groups.push(
            json!({"id": "calibration", "description": "the final answer", "facts": [{
                "id": "calibration.answer",
                "description": format!("The agent's final answer is: {reference}"),
                "check": {"type": "judge"}
            }]}),
        );
    }
    t
}

/// The recorded episodes plus their mutations, each with gold labels.
pub fn expand(recorded: &[LabelledEpisode]) -> Result<Vec<LabelledEpisode>, String> {
    let mut out = Vec::new();
    for base in recorded {
        let task = base.task()?;
        let rubric: &Rubric = &task.rubric;
        let facts: Vec<(&str, &Check)> = rubric
            .groups()
            .iter()
            .flat_map(|g| &g.facts)
            .map(|f| (f.id.as_str(), &f.check))
            .collect();
        let mut reference = base.clone();
        if let Some(r) = &task.reference_answer {
            reference.task = with_answer_fact(&base.task, r);
            reference.gold.insert("calibration.answer".into(), true);
        }
        out.push(reference.clone());
        if rubric.needs_answer() || task.reference_answer.is_some() {
            let mut wrong = reference.clone();
            wrong.label = format!("{}/wrong-answer", base.label.trim_end_matches("/reference"));
            wrong.final_answer = Some(WRONG_ANSWER.into());
            for (id, check) in &facts {
                if matches!(check, Check::Answer(_)) {
                    wrong.gold.insert((*id).to_string(), false);
                }
            }
            if task.reference_answer.is_some() {
                wrong.gold.insert("calibration.answer".into(), false);
            }
            out.push(wrong);
        }
        for selector in rubric.selectors() {
            let mut missing = reference.clone();
            missing.label = format!(
                "{}/without {selector}",
                base.label.trim_end_matches("/reference")
            );
            missing.page.elements.insert(selector.to_string(), Ok(None));
            for (id, check) in &facts {
                if let Check::Element {
                    selector: s,
                    expect,
                    page: None,
                } = check
                    && s == selector
                {
                    // A missing element exists only for `exists: false`.
                    missing.gold.insert(
                        (*id).to_string(),
                        matches!(expect, ElementExpect::Exists(false)),
                    );
                }
            }
            // A model judge sees no page elements: leave the fact in words out of this one.
            missing.gold.remove("calibration.answer");
            out.push(missing);
        }
    }
    Ok(out)
}

/// Outcome of a calibration run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Labelled episodes judged.
    pub episodes: usize,
    /// Labelled facts judged (per run).
    pub facts: usize,
    /// Correct verdicts / all verdicts, over every run.
    pub accuracy: f64,
    /// Of the facts judged to hold, the share that hold.
    pub precision: f64,
    /// Of the facts that hold, the share judged to hold.
    pub recall: f64,
    /// Facts on which every run gave the same verdict.
    pub agreement: f64,
    /// Accuracy by check kind: (facts, correct).
    pub by_kind: BTreeMap<String, (usize, usize)>,
    /// Verdicts against labels by check kind.
    pub confusion: BTreeMap<String, Confusion>,
    /// Wrong verdicts (first run), as `label: fact (gold → verdict)`.
    pub mistakes: Vec<String>,
}

/// Verdicts against labels: true/false positives and negatives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Confusion {
    /// Labelled true, judged true.
    pub tp: usize,
    /// Labelled false, judged true.
    pub fp: usize,
    /// Labelled false, judged false.
    pub tn: usize,
    /// Labelled true, judged false.
    pub fn_: usize,
}

impl Confusion {
    /// Adds one verdict.
    pub fn add(&mut self, gold: bool, judged: bool) {
        match (gold, judged) {
            (true, true) => self.tp += 1,
            (false, true) => self.fp += 1,
            (false, false) => self.tn += 1,
            (true, false) => self.fn_ += 1,
        }
    }
    /// Labels that hold.
    pub fn positives(&self) -> usize {
        self.tp + self.fn_
    }
    /// Labels that do not hold.
    pub fn negatives(&self) -> usize {
        self.tn + self.fp
    }
    /// Correct verdicts / all (1 when empty).
    pub fn accuracy(&self) -> f64 {
        ratio(self.tp + self.tn, self.positives() + self.negatives())
    }
    /// Of the facts judged to hold, the share that hold (1 when none was judged to).
    pub fn precision(&self) -> f64 {
        ratio(self.tp, self.tp + self.fp)
    }
    /// Of the facts that hold, the share judged to hold (1 when none holds).
    pub fn recall(&self) -> f64 {
        ratio(self.tp, self.positives())
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

/// Judges every labelled episode `runs` times (rules always; facts in words with `model`,
/// each run with its own sampling seeds and no verdict cache, so that run-to-run agreement
/// measures the judge: with greedy decoding it is 100% by construction).
pub async fn evaluate(
    items: &[LabelledEpisode],
    model: Option<&ModelJudge>,
    runs: usize,
) -> Result<Report, String> {
    let (mut tp, mut fp, mut tn, mut fnn) = (0usize, 0usize, 0usize, 0usize);
    let mut report = Report {
        episodes: items.len(),
        ..Default::default()
    };
    let mut agree = 0usize;
    for item in items {
        let task = item.task()?;
        let traj = Trajectory {
            final_answer: item.final_answer.clone(),
            visited_urls: item.visited_urls.clone(),
        };
        let mut runs_verdicts: Vec<BTreeMap<String, bool>> = Vec::new();
        for run in 0..runs.max(1) {
            let judgement = match (model, task.rubric.needs_model()) {
                (Some(m), true) => {
                    let evidence = calibration_evidence(item, &task);
                    let m = m.for_run(run as u64);
                    judge_episode(&m, &task.rubric, &traj, &item.page, evidence, false, false)
                        .await
                        .map(|j| j.judgement)
                }
                // Without a model, facts in words are not judged (and not counted).
                _ => {
                    rubrics::judge_with(
                        &strip_model_facts(&task.rubric)?,
                        &traj,
                        &item.page,
                        &rubrics::NoModel,
                        &Default::default(),
                    )
                    .await
                }
            }
            .map_err(|e| format!("{}: {e}", item.label))?;
            runs_verdicts.push(
                judgement
                    .verdicts
                    .iter()
                    .map(|v| (v.fact_id.clone(), v.passed))
                    .collect(),
            );
        }
        for (fact, gold) in &item.gold {
            let Some(first) = runs_verdicts[0].get(fact) else {
                continue;
            };
            report.facts += 1;
            if runs_verdicts.iter().all(|r| r.get(fact) == Some(first)) {
                agree += 1;
            }
            let kind = task
                .rubric
                .groups()
                .iter()
                .flat_map(|g| &g.facts)
                .find(|f| f.id == *fact)
                .map_or("?", |f| f.check.kind());
            for r in &runs_verdicts {
                let got = r.get(fact).copied().unwrap_or(false);
                match (gold, got) {
                    (true, true) => tp += 1,
                    (false, true) => fp += 1,
                    (false, false) => tn += 1,
                    (true, false) => fnn += 1,
                }
                report
                    .confusion
                    .entry(kind.to_string())
                    .or_default()
                    .add(*gold, got);
                let e = report.by_kind.entry(kind.to_string()).or_default();
                e.0 += 1;
                if got == *gold {
                    e.1 += 1;
                }
            }
            if first != gold {
                report.mistakes.push(format!(
                    "{}: {fact} (gold {gold}, judged {first})",
                    item.label
                ));
            }
        }
    }
    let total = (tp + fp + tn + fnn).max(1) as f64;
    report.accuracy = (tp + tn) as f64 / total;
    report.precision = if tp + fp > 0 {
        tp as f64 / (tp + fp) as f64
    } else {
        1.0
    };
    report.recall = if tp + fnn > 0 {
        tp as f64 / (tp + fnn) as f64
    } else {
        1.0
    };
    report.agreement = if report.facts > 0 {
        agree as f64 / report.facts as f64
    } else {
        1.0
    };
    Ok(report)
}

/// What a model judge sees of a labelled episode: its screenshots and the task's reference
/// answer included.
pub fn calibration_evidence(item: &LabelledEpisode, task: &Task) -> Evidence {
    Evidence {
        episode: Uuid::nil(),
        instruction: task.instruction.clone(),
        final_answer: item.final_answer.clone(),
        visited_urls: item.visited_urls.clone(),
        titles: Vec::new(),
        final_text: item.page.text.clone(),
        screenshots: item.screenshot_bytes(),
        reference_answer: task.reference_answer.clone(),
    }
}

/// The rubric without facts in words (groups left empty are dropped).
fn strip_model_facts(rubric: &Rubric) -> Result<Rubric, String> {
    let mut spec = rubric.spec().clone();
    for g in &mut spec.groups {
        g.facts.retain(|f| f.check.kind != "judge");
    }
    spec.groups.retain(|g| !g.facts.is_empty());
    if spec.groups.is_empty() {
        return Rubric::from_json(
            json!({"groups": [{"facts": [{"check": {"type": "url", "prefix": ""}}]}]}),
        )
        .or_else(|_| {
            Rubric::from_json(
                json!({"groups": [{"facts": [{"check": {"type": "url", "regex": ".*"}}]}]}),
            )
        })
        .map_err(|e| format!("{e:?}"));
    }
    Rubric::from_spec(spec).map_err(|e| format!("{e:?}"))
}
