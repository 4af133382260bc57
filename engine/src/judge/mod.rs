//! The model judge, WebGym's pipeline: facts written in words are verified by a
//! vision-language model looking at the trajectory.
//!
//! For each episode: (1) pick the screenshots to show (the last is always kept, at most
//! `max_screenshots`), (2) label blocking pages (CAPTCHA, access denied): their facts fail
//! without asking, (3) anti-hallucination: one call checks that every claim of the final
//! answer is visible in the screenshots, (4) one call per fact with its group as context
//! answered YES or NO with a reason, (5) when the task has a reference answer, the final
//! answer is matched against it: by rule first (normalised equality, any of its
//! alternatives, numbers), by one model call only when the rules cannot tell; the outcome
//! and which path decided it go into every fact's question and evidence.
//! A cheap critic orders the facts (likeliest failures first) so that, for binary rewards,
//! judging stops at the first failed group. Verdicts are cached by episode, trajectory,
//! fact and judge.

mod backend;
pub mod calibration;
mod critic;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rubrics::{Fact, FactVerifier, Group, ProbeError, ReferenceMatch, Rubric};
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;
use uuid::Uuid;

pub use backend::{HttpJudge, JudgeBackend, OnnxJudge};
pub use critic::{blocking_label, critic_order, select_screenshots};

use store::Store;

/// How the model judge works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JudgeConfig {
    /// Screenshots shown per question, at most (the last one always among them).
    pub max_screenshots: usize,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig { max_screenshots: 3 }
    }
}

/// A model judge: a backend, its settings, and (optionally) the verdict cache.
#[derive(Clone)]
pub struct ModelJudge {
    backend: Arc<dyn JudgeBackend>,
    cfg: JudgeConfig,
    store: Option<Store>,
    /// Mixed into every sampling seed: 0 in production (seeds depend on the trajectory
    /// only); calibration gives each run its own, so sampled runs can disagree.
    run: u64,
}

/// What the judge sees of an episode.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// The episode (the cache key).
    pub episode: Uuid,
    /// The instruction it ran with.
    pub instruction: String,
    /// The agent's final answer.
    pub final_answer: Option<String>,
    /// URLs it visited, in order.
    pub visited_urls: Vec<String>,
    /// Page titles it saw, in order.
    pub titles: Vec<String>,
    /// The final page's visible text.
    pub final_text: String,
    /// Screenshots (JPEG) in order, the final page's last.
    pub screenshots: Vec<Vec<u8>>,
    /// The task's reference answer.
    pub reference_answer: Option<String>,
}

impl Evidence {
    /// A digest of what the trajectory showed: cached verdicts are valid for it only (a
    /// retried episode has a new trajectory).
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.final_answer.as_deref().unwrap_or_default());
        for u in &self.visited_urls {
            h.update(u);
        }
        for s in &self.screenshots {
            h.update(Sha256::digest(s));
        }
        h.finalize()
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

impl ModelJudge {
    /// A judge over `backend`; verdicts are cached in `store` when given.
    pub fn new(
        backend: Arc<dyn JudgeBackend>,
        cfg: JudgeConfig,
        store: Option<Store>,
    ) -> ModelJudge {
        ModelJudge {
            backend,
            cfg,
            store,
            run: 0,
        }
    }

    /// The same judge with run `run`'s sampling seeds and no verdict cache: repeated
    /// calibration runs ask the model again, with different seeds (greedy decoding still
    /// answers the same; sampling, a temperature above 0, may not).
    pub fn for_run(&self, run: u64) -> ModelJudge {
        ModelJudge {
            store: None,
            run,
            ..self.clone()
        }
    }

    /// Asks the judge's model one question about some screenshots (JPEG).
    pub(crate) async fn ask(
        &self,
        images: Vec<Vec<u8>>,
        question: String,
        seed: u64,
    ) -> Result<String, policy::PolicyError> {
        self.backend.ask(images, question, seed).await
    }

    /// The judge's name as stored with its verdicts.
    pub fn name(&self) -> String {
        format!("model:{}", self.backend.name())
    }

    /// The verifier of one episode.
    pub fn for_episode(&self, evidence: Evidence) -> EpisodeJudge<'_> {
        let shown = select_screenshots(&evidence.screenshots, self.cfg.max_screenshots);
        let reference_rule = evidence
            .reference_answer
            .as_deref()
            .map(|r| rubrics::match_reference(evidence.final_answer.as_deref(), r));
        EpisodeJudge {
            reference_rule,
            reference: OnceCell::new(),
            name: self.name(),
            blocked: blocking_label(&evidence.final_text, &evidence.titles),
            digest: evidence.digest(),
            judge: self,
            shown,
            evidence,
            claims: OnceCell::new(),
            calls: AtomicUsize::new(0),
        }
    }
}

/// Verifies the facts of one episode.
pub struct EpisodeJudge<'a> {
    judge: &'a ModelJudge,
    name: String,
    evidence: Evidence,
    shown: Vec<Vec<u8>>,
    blocked: Option<String>,
    digest: String,
    /// The anti-hallucination verdict: `Some(reason)` when the answer's claims are not
    /// visible in the screenshots.
    claims: OnceCell<Option<String>>,
    /// Questions put to the backend (cache hits and blocking pages ask nothing).
    calls: AtomicUsize,
    /// The rule match against the reference answer, when the task has one.
    reference_rule: Option<ReferenceMatch>,
    /// The reference step's outcome (the rules', or the model's when they could not tell).
    reference: OnceCell<Option<ReferenceOutcome>>,
}

/// How the final answer compares with the reference answer, and what decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceOutcome {
    /// The answer agrees with the reference.
    pub matches: bool,
    /// `rule` or `model`.
    pub decided_by: &'static str,
    /// Why.
    pub why: String,
}

impl ReferenceOutcome {
    /// The outcome as written into a verdict's evidence.
    pub fn describe(&self) -> String {
        format!(
            "reference answer {} (decided by {}: {})",
            if self.matches {
                "matched"
            } else {
                "not matched"
            },
            self.decided_by,
            self.why
        )
    }
}

/// YES or NO, and the reason, from a judge's reply (anything unclear counts as NO).
pub fn parse_verdict(reply: &str) -> (bool, String) {
    let upper = reply.to_ascii_uppercase();
    let word = |w: &str| {
        upper
            .match_indices(w)
            .find(|(i, _)| {
                let before = upper[..*i]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !c.is_ascii_alphabetic());
                let after = upper[i + w.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_ascii_alphabetic());
                before && after
            })
            .map(|(i, _)| i)
    };
    let reason = reply.trim().chars().take(300).collect::<String>();
    match (word("YES"), word("NO")) {
        (Some(y), Some(n)) => (y < n, reason),
        (Some(_), None) => (true, reason),
        (None, Some(_)) => (false, reason),
        (None, None) => (false, format!("unclear verdict (counted as NO): {reason}")),
    }
}

impl EpisodeJudge<'_> {
    /// The calls an exhaustive judge makes on this episode with an empty cache: one per
    /// fact in words, the anti-hallucination call when there is an answer and the
    /// reference-answer call when the rules cannot compare the answers; none on a blocking
    /// page, only the anti-hallucination call when it failed (facts then fail unasked).
    pub fn exhaustive_calls(&self, model_facts: usize) -> usize {
        if self.blocked.is_some() || model_facts == 0 {
            return 0;
        }
        let answered = self
            .evidence
            .final_answer
            .as_deref()
            .is_some_and(|a| !a.trim().is_empty());
        if let Some(Some(_)) = self.claims.get() {
            // The answer's claims were not visible: every fact fails without a question.
            return usize::from(answered);
        }
        let reference_call = matches!(self.reference_rule, Some(ReferenceMatch::Inconclusive));
        model_facts + usize::from(answered) + usize::from(reference_call)
    }

    /// Step 5: the final answer against the reference answer, by rule, else by the model.
    pub async fn reference_outcome(&self) -> Result<Option<ReferenceOutcome>, ProbeError> {
        self.reference
            .get_or_try_init(|| async {
                let (Some(rule), Some(reference)) = (
                    &self.reference_rule,
                    self.evidence.reference_answer.as_deref(),
                ) else {
                    return Ok(None);
                };
                Ok(Some(match rule {
                    ReferenceMatch::Match(why) => ReferenceOutcome {
                        matches: true,
                        decided_by: "rule",
                        why: why.clone(),
                    },
                    ReferenceMatch::Mismatch(why) => ReferenceOutcome {
                        matches: false,
                        decided_by: "rule",
                        why: why.clone(),
                    },
                    ReferenceMatch::Inconclusive => {
                        let q = format!(
                            "Task given to a web agent: {}\nThe agent's final answer: {}\nA reference answer: {reference}\n\
                             Does the agent's final answer give the same answer as the reference? Reply YES or NO, then one sentence explaining why.",
                            self.evidence.instruction,
                            self.evidence.final_answer.as_deref().unwrap_or("(none)"),
                        );
                        let (matches, why) = parse_verdict(&self.ask(q, "reference").await?);
                        ReferenceOutcome {
                            matches,
                            decided_by: "model",
                            why,
                        }
                    }
                }))
            })
            .await
            .cloned()
    }

    async fn ask(&self, question: String, what: &str) -> Result<String, ProbeError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.judge
            .backend
            .ask(
                self.shown.clone(),
                question,
                seed_of(&self.digest, what, self.judge.run),
            )
            .await
            .map_err(|e| ProbeError(e.to_string()))
    }

    fn context(&self, reference: Option<&ReferenceOutcome>) -> String {
        let e = &self.evidence;
        let mut s = format!("Task given to a web agent: {}\n", e.instruction);
        s.push_str(&format!(
            "The agent's final answer: {}\n",
            e.final_answer.as_deref().unwrap_or("(none)")
        ));
        if let (Some(r), Some(o)) = (&e.reference_answer, reference) {
            s.push_str(&format!(
                "A reference answer: {r} (the final answer {} it)\n",
                if o.matches {
                    "agrees with"
                } else {
                    "does not agree with"
                }
            ));
        }
        let urls: Vec<&str> = e
            .visited_urls
            .iter()
            .rev()
            .take(10)
            .rev()
            .map(String::as_str)
            .collect();
        s.push_str(&format!("Pages visited: {}\n", urls.join(" → ")));
        s.push_str(&format!(
            "The screenshots show the last {} page states, the final one last.\n",
            self.shown.len()
        ));
        s
    }

    async fn answer_claims(&self) -> Result<Option<String>, ProbeError> {
        let Some(answer) = self
            .evidence
            .final_answer
            .as_deref()
            .filter(|a| !a.trim().is_empty())
        else {
            return Ok(None);
        };
        let q = format!(
            "{}\nIs every factual claim in the agent's final answer ({answer:?}) visible in the screenshots? \
             Reply YES or NO, then one sentence explaining why.",
            self.context(None)
        );
        let reply = self.ask(q, "claims").await?;
        let (ok, reason) = parse_verdict(&reply);
        Ok((!ok)
            .then(|| format!("the answer's claims are not visible in the screenshots: {reason}")))
    }
}

fn seed_of(digest: &str, what: &str, run: u64) -> u64 {
    let key = if run == 0 {
        format!("{digest}/{what}")
    } else {
        format!("{digest}/{what}/run {run}")
    };
    let h = Sha256::digest(key.as_bytes());
    u64::from_le_bytes(h[..8].try_into().expect("8 bytes"))
}

impl FactVerifier for EpisodeJudge<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }

    async fn verify(
        &self,
        group: &Group,
        fact: &Fact,
    ) -> Result<(bool, String, String), ProbeError> {
        let store = self.judge.store.as_ref();
        if let Some(store) = store
            && let Some(hit) = store
                .cached_verdict(self.evidence.episode, &self.digest, &fact.id, &self.name)
                .await
                .map_err(|e| ProbeError(e.to_string()))?
        {
            return Ok(hit);
        }
        let verdict = if let Some(label) = &self.blocked {
            (
                false,
                label.clone(),
                format!("the final page is a blocking page ({label}); the task could not be done"),
            )
        } else if let Some(why) = self
            .claims
            .get_or_try_init(|| self.answer_claims())
            .await?
            .clone()
        {
            (false, String::new(), why)
        } else {
            let reference = self.reference_outcome().await?;
            let mut q = self.context(reference.as_ref());
            if !group.description.is_empty() {
                q.push_str(&format!(
                    "The fact belongs to the group: {}\n",
                    group.description
                ));
            }
            q.push_str(&format!(
                "Fact to verify: {}\nDoes the trajectory establish this fact? Reply YES or NO, then one sentence explaining why.",
                fact.description
            ));
            let reply = self.ask(q, &fact.id).await?;
            let (passed, reason) = parse_verdict(&reply);
            let shown: String = reply.chars().take(200).collect();
            let evidence = match &reference {
                Some(o) => format!("[{}] {shown}", o.describe()),
                None => shown,
            };
            (passed, evidence, reason)
        };
        if let Some(store) = store {
            store
                .cache_verdict(
                    self.evidence.episode,
                    &self.digest,
                    &fact.id,
                    &self.name,
                    &verdict,
                )
                .await
                .map_err(|e| ProbeError(e.to_string()))?;
        }
        Ok(verdict)
    }
}

/// An episode judged with a model judge.
#[derive(Debug, Clone)]
pub struct ModelJudgement {
    /// Verdicts, label and credit (`model_calls`: the calls made).
    pub judgement: rubrics::Judgement,
    /// The calls an exhaustive judge makes on this episode (see
    /// [`EpisodeJudge::exhaustive_calls`]).
    pub exhaustive_calls: usize,
}

/// Judges an episode's rubric with rules and, for facts in words, this model judge.
pub async fn judge_episode(
    judge: &ModelJudge,
    rubric: &Rubric,
    traj: &rubrics::Trajectory,
    page: &impl rubrics::PageProbe,
    evidence: Evidence,
    binary: bool,
    critic: bool,
) -> Result<ModelJudgement, ProbeError> {
    let order = if critic {
        critic_order(rubric, &evidence)
    } else {
        Vec::new()
    };
    let verifier = judge.for_episode(evidence);
    let opts = rubrics::JudgeOptions {
        stop_at_first_failure: binary,
        order,
    };
    let judgement = rubrics::judge_with(rubric, traj, page, &verifier, &opts).await?;
    let facts = rubric
        .groups()
        .iter()
        .flat_map(|g| &g.facts)
        .filter(|f| matches!(f.check, rubrics::Check::Judge))
        .count();
    Ok(ModelJudgement {
        exhaustive_calls: verifier.exhaustive_calls(facts),
        judgement,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_parse_from_free_text() {
        assert!(parse_verdict("YES. The cart shows the mug.").0);
        assert!(!parse_verdict("No, the page shows an error.").0);
        assert!(parse_verdict("Answer: yes — it is there").0);
        assert!(
            !parse_verdict("The answer is not known").0,
            "\"not\" and \"known\" are not NO/YES"
        );
        let (ok, why) = parse_verdict("I cannot tell");
        assert!(!ok && why.starts_with("unclear verdict"));
        assert!(
            !parse_verdict("NO, although YES would be nice").0,
            "the first verdict word counts"
        );
    }
}
