//! The rule judge: runs every fact's check against the end of an episode.

mod verdict;

use std::collections::HashMap;
use std::future::Future;

use crate::rubric::{Check, Fact, Group, PageUrl, Rubric};
use verdict::{Outcome, Page, verdict};

/// What the judge may ask of the page an episode ended on. The engine implements it over
/// a live browser session; tests may implement it over a recorded page.
pub trait PageProbe {
    /// The final page's URL.
    fn url(&self) -> impl Future<Output = Result<String, ProbeError>> + Send;
    /// The visible text of `page` (`None`: the final page).
    fn text(
        &self,
        page: Option<&PageUrl>,
    ) -> impl Future<Output = Result<String, ProbeError>> + Send;
    /// The first element matching a CSS selector on `page` (`None`: the final page).
    /// `Ok(Err(_))` is a bad selector or a page that could not be opened.
    fn element(
        &self,
        page: Option<&PageUrl>,
        selector: &str,
    ) -> impl Future<Output = Result<Result<Option<ElementSnapshot>, String>, ProbeError>> + Send;
    /// The value of a JavaScript expression (time-limited) on `page` (`None`: the final
    /// page). `Ok(Err(_))` is a script error or a page that could not be opened.
    fn eval(
        &self,
        page: Option<&PageUrl>,
        expression: &str,
    ) -> impl Future<Output = Result<Result<serde_json::Value, String>, ProbeError>> + Send;
}

/// An element as the judge sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ElementSnapshot {
    /// Rendered text.
    pub text: String,
    /// Current value, for form fields.
    pub value: Option<String>,
    /// Checkbox / radio state.
    pub checked: Option<bool>,
}

/// The page could not be read (an infrastructure failure: judge again later).
#[derive(Debug, Clone, thiserror::Error)]
#[error("could not read the final page: {0}")]
pub struct ProbeError(pub String);

/// The recorded part of an episode the judge uses.
#[derive(Debug, Clone, Default)]
pub struct Trajectory {
    /// The agent's final answer, if it gave one.
    pub final_answer: Option<String>,
    /// Every URL the episode observed, in order.
    pub visited_urls: Vec<String>,
}

/// The verdict on one fact.
#[derive(Debug, Clone, PartialEq)]
pub struct FactVerdict {
    /// The fact's group.
    pub group_id: String,
    /// The fact.
    pub fact_id: String,
    /// Whether it holds.
    pub passed: bool,
    /// What was observed (the URL, the element's value, the answer...).
    pub evidence: String,
    /// Why it passed or failed, in words.
    pub reason: String,
    /// Which judge decided (`rules`, or a model judge's name).
    pub judge: String,
}

/// A fact whose check could not be evaluated because the rubric itself is wrong: a
/// selector the browser rejects, a script with a syntax error. Neither a pass nor a
/// failure: an episode with one is a rubric error, never scored as the agent's failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckError {
    /// The fact's group.
    pub group_id: String,
    /// The fact.
    pub fact_id: String,
    /// What the page said about the check.
    pub message: String,
}

/// A fact the judge did not check: binary judging stopped once the success label was
/// settled, so its outcome is unknown (never a failure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFact {
    /// The fact's group.
    pub group_id: String,
    /// The fact.
    pub fact_id: String,
    /// The judge that would have verified it.
    pub judge: String,
}

/// Partial credit: the weighted fraction of passing facts, exact only when every fact was
/// verified.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Credit {
    /// Every fact was verified.
    Exact(f64),
    /// Binary judging stopped early and left facts unchecked.
    LowerBound {
        /// Passing weight over all facts' weight (unchecked facts earn nothing): the
        /// credit is at least this.
        at_least: f64,
        /// Passing weight over the verified facts' weight.
        of_verified: f64,
    },
}

impl Credit {
    /// The credit as one number: exact, or the lower bound.
    pub fn score(&self) -> f64 {
        match *self {
            Credit::Exact(s) => s,
            Credit::LowerBound { at_least, .. } => at_least,
        }
    }

    /// Partial credit over the verified facts, when some were left unchecked.
    pub fn of_verified(&self) -> Option<f64> {
        match *self {
            Credit::Exact(_) => None,
            Credit::LowerBound { of_verified, .. } => Some(of_verified),
        }
    }
}

/// The judge's result for an episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// Every group satisfied.
    pub success: bool,
    /// Partial credit.
    pub credit: Credit,
    /// One verdict per verified fact, in rubric order.
    pub verdicts: Vec<FactVerdict>,
    /// Facts left unchecked (the success label was settled without them, or a rubric
    /// error left the episode unscorable), in rubric order.
    pub skipped: Vec<SkippedFact>,
    /// Checks the rubric got wrong, in rubric order. When any, the episode cannot be
    /// scored: `success` is false and the credit counts none of these facts, but neither
    /// says anything about the agent (see [`Judgement::rubric_error`]).
    pub errors: Vec<CheckError>,
    /// Facts handed to the model verifier (its cache hits included).
    pub model_verifications: usize,
    /// Calls the model verifier made to its model (cache hits and short-cuts are not calls).
    pub model_calls: usize,
}

impl Judgement {
    /// The rubric's errors in one line, when it had any: the episode is then a judge error,
    /// not the agent's failure.
    pub fn rubric_error(&self) -> Option<String> {
        (!self.errors.is_empty()).then(|| {
            self.errors
                .iter()
                .map(|e| format!("fact `{}`: {}", e.fact_id, e.message))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    /// The partial credit as one number (see [`Credit::score`]).
    pub fn score(&self) -> f64 {
        self.credit.score()
    }
}

/// The judge's name, stored with its verdicts.
pub const RULE_JUDGE: &str = "rules";

/// Verifies facts written in words: a model judge (see `engine::judge`). It knows the
/// episode it judges (answer, screenshots, pages) on its own.
pub trait FactVerifier: Sync {
    /// The judge's name, stored with its verdicts (e.g. `model:smolvlm`).
    fn name(&self) -> &str;
    /// Calls made to the model so far: questions actually asked, not answers from a cache
    /// or settled without asking (a blocking page).
    fn calls(&self) -> usize;
    /// Verifies one fact, with its group as context: `(holds, evidence, reason)`.
    fn verify(
        &self,
        group: &Group,
        fact: &Fact,
    ) -> impl Future<Output = Result<(bool, String, String), ProbeError>> + Send;
}

/// A verifier for rubrics that need none: asking it is a bug in the caller.
pub struct NoModel;

impl FactVerifier for NoModel {
    fn name(&self) -> &str {
        "none"
    }
    fn calls(&self) -> usize {
        0
    }
    async fn verify(&self, _: &Group, fact: &Fact) -> Result<(bool, String, String), ProbeError> {
        Err(ProbeError(format!(
            "fact `{}` needs a model judge and none is configured",
            fact.id
        )))
    }
}

/// How facts that need a model are verified.
#[derive(Debug, Clone, Default)]
pub struct JudgeOptions {
    /// Stop verifying once a required group has failed: the success label is known, the
    /// remaining model facts are skipped (their outcome unknown), and calls are saved. For
    /// binary rewards: the partial credit becomes a lower bound.
    pub stop_at_first_failure: bool,
    /// Model facts to verify first, by fact id (a critic's guess of the likeliest failures);
    /// the others follow in rubric order.
    pub order: Vec<String>,
}

/// Judges an episode: every rule fact, then the model facts (through `model`) in the order
/// the options give, stopping early when asked.
pub async fn judge_with<P: PageProbe, V: FactVerifier>(
    rubric: &Rubric,
    traj: &Trajectory,
    probe: &P,
    model: &V,
    opts: &JudgeOptions,
) -> Result<Judgement, ProbeError> {
    let mut page = Page {
        probe,
        texts: HashMap::new(),
    };
    let final_url = probe.url().await?;
    let groups = rubric.groups();
    // (group, fact) -> verdict, filled rules first.
    let mut verdicts: Vec<Vec<Option<FactVerdict>>> =
        groups.iter().map(|g| vec![None; g.facts.len()]).collect();
    let mut errors = Vec::new();
    for (gi, group) in groups.iter().enumerate() {
        for (fi, fact) in group.facts.iter().enumerate() {
            if matches!(fact.check, Check::Judge) {
                continue;
            }
            let (passed, evidence, reason) =
                match verdict(&fact.check, traj, &mut page, &final_url).await? {
                    Outcome::Checked(p, e, r) => (p, e, r),
                    Outcome::RubricError(message) => {
                        errors.push(CheckError {
                            group_id: group.id.clone(),
                            fact_id: fact.id.clone(),
                            message,
                        });
                        continue;
                    }
                };
            verdicts[gi][fi] = Some(FactVerdict {
                group_id: group.id.clone(),
                fact_id: fact.id.clone(),
                passed,
                evidence,
                reason,
                judge: RULE_JUDGE.to_string(),
            });
        }
    }
    let mut pending: Vec<(usize, usize)> = groups
        .iter()
        .enumerate()
        .flat_map(|(gi, g)| {
            g.facts
                .iter()
                .enumerate()
                .filter(|(_, f)| matches!(f.check, Check::Judge))
                .map(move |(fi, _)| (gi, fi))
        })
        .collect();
    let rank = |gi: usize, fi: usize| {
        opts.order
            .iter()
            .position(|id| *id == groups[gi].facts[fi].id)
            .unwrap_or(usize::MAX)
    };
    pending.sort_by_key(|(gi, fi)| (rank(*gi, *fi), *gi, *fi));
    let calls_before = model.calls();
    let mut model_verifications = 0;
    for (gi, fi) in pending {
        // An unscorable episode is not worth the model's calls.
        if !errors.is_empty() {
            break;
        }
        if opts.stop_at_first_failure
            && (0..groups.len()).any(|g| group_failed(&groups[g], &verdicts[g]))
        {
            break;
        }
        let (group, fact) = (&groups[gi], &groups[gi].facts[fi]);
        if opts.stop_at_first_failure
            && group.any
            && verdicts[gi].iter().flatten().any(|v| v.passed)
        {
            continue;
        }
        let (passed, evidence, reason) = model.verify(group, fact).await?;
        model_verifications += 1;
        verdicts[gi][fi] = Some(FactVerdict {
            group_id: group.id.clone(),
            fact_id: fact.id.clone(),
            passed,
            evidence,
            reason,
            judge: model.name().to_string(),
        });
    }
    let mut success = true;
    let (mut passed_weight, mut verified_weight, mut total_weight) = (0.0, 0.0, 0.0);
    for (g, vs) in groups.iter().zip(&verdicts) {
        for (f, v) in g.facts.iter().zip(vs) {
            total_weight += f.weight;
            if let Some(v) = v {
                verified_weight += f.weight;
                if v.passed {
                    passed_weight += f.weight;
                }
            }
        }
        let satisfied = if g.any {
            vs.iter().flatten().any(|v| v.passed)
        } else {
            vs.iter().all(|v| v.as_ref().is_some_and(|v| v.passed))
        };
        success &= satisfied;
    }
    success &= errors.is_empty();
    let fraction = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
    let skipped: Vec<SkippedFact> = groups
        .iter()
        .zip(&verdicts)
        .flat_map(|(g, vs)| {
            g.facts
                .iter()
                .zip(vs)
                .filter(|(f, v)| {
                    v.is_none() && !errors.iter().any(|e: &CheckError| e.fact_id == f.id)
                })
                .map(|(f, _)| SkippedFact {
                    group_id: g.id.clone(),
                    fact_id: f.id.clone(),
                    judge: model.name().to_string(),
                })
        })
        .collect();
    let credit = if skipped.is_empty() && errors.is_empty() {
        Credit::Exact(fraction(passed_weight, total_weight))
    } else {
        Credit::LowerBound {
            at_least: fraction(passed_weight, total_weight),
            of_verified: fraction(passed_weight, verified_weight),
        }
    };
    Ok(Judgement {
        success,
        credit,
        verdicts: verdicts.into_iter().flatten().flatten().collect(),
        skipped,
        errors,
        model_verifications,
        model_calls: model.calls().saturating_sub(calls_before),
    })
}

/// A required group whose outcome is already a failure.
fn group_failed(group: &Group, verdicts: &[Option<FactVerdict>]) -> bool {
    if group.any {
        // Fails only when every fact is in and none passed.
        verdicts
            .iter()
            .all(|v| v.as_ref().is_some_and(|v| !v.passed))
    } else {
        verdicts.iter().flatten().any(|v| !v.passed)
    }
}

/// Judges an episode whose rubric has only rule checks (a model fact is an error).
pub async fn judge<P: PageProbe>(
    rubric: &Rubric,
    traj: &Trajectory,
    probe: &P,
) -> Result<Judgement, ProbeError> {
    judge_with(rubric, traj, probe, &NoModel, &JudgeOptions::default()).await
}
