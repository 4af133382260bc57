//! The model judge, WebGym's pipeline: facts written in words are verified by a
//! vision-language model looking at the trajectory.
//!
//! For each episode: (1) pick the screenshots to show (the last is always kept, at most
//! `max_screenshots`), (2) label blocking pages (CAPTCHA, access denied): their facts fail
//! without asking, (3) anti-hallucination: one call checks that every claim of the final
//! answer is visible in the screenshots, (4) one call per fact with its group as context
//! (the reference answer too, when the task has one), answered YES or NO with a reason.
//! A cheap critic orders the facts (likeliest failures first) so that, for binary rewards,
//! judging stops at the first failed group. Verdicts are cached by episode, trajectory,
//! fact and judge.

mod backend;
pub mod calibration;
mod critic;

use std::sync::Arc;

use rubrics::{Fact, FactVerifier, Group, ProbeError, Rubric};
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;
use uuid::Uuid;

pub use backend::{HttpJudge, JudgeBackend, OnnxJudge};
pub use critic::{blocking_label, critic_order, select_screenshots};

use crate::store::Store;

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
pub struct ModelJudge {
    backend: Arc<dyn JudgeBackend>,
    cfg: JudgeConfig,
    store: Option<Store>,
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
        }
    }

    /// The judge's name as stored with its verdicts.
    pub fn name(&self) -> String {
        format!("model:{}", self.backend.name())
    }

    /// The verifier of one episode.
    pub fn for_episode(&self, evidence: Evidence) -> EpisodeJudge<'_> {
        let shown = select_screenshots(&evidence.screenshots, self.cfg.max_screenshots);
        EpisodeJudge {
            name: self.name(),
            blocked: blocking_label(&evidence.final_text, &evidence.titles),
            digest: evidence.digest(),
            judge: self,
            shown,
            evidence,
            claims: OnceCell::new(),
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
    fn context(&self) -> String {
        let e = &self.evidence;
        let mut s = format!("Task given to a web agent: {}\n", e.instruction);
        s.push_str(&format!(
            "The agent's final answer: {}\n",
            e.final_answer.as_deref().unwrap_or("(none)")
        ));
        if let Some(r) = &e.reference_answer {
            s.push_str(&format!("A reference answer: {r}\n"));
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
            self.context()
        );
        let reply = self
            .judge
            .backend
            .ask(self.shown.clone(), q, seed_of(&self.digest, "claims"))
            .await
            .map_err(|e| ProbeError(e.to_string()))?;
        let (ok, reason) = parse_verdict(&reply);
        Ok((!ok)
            .then(|| format!("the answer's claims are not visible in the screenshots: {reason}")))
    }
}

fn seed_of(digest: &str, what: &str) -> u64 {
    let h = Sha256::digest(format!("{digest}/{what}").as_bytes());
    u64::from_le_bytes(h[..8].try_into().expect("8 bytes"))
}

impl FactVerifier for EpisodeJudge<'_> {
    fn name(&self) -> &str {
        &self.name
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
            let mut q = self.context();
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
            let reply = self
                .judge
                .backend
                .ask(self.shown.clone(), q, seed_of(&self.digest, &fact.id))
                .await
                .map_err(|e| ProbeError(e.to_string()))?;
            let (passed, reason) = parse_verdict(&reply);
            (passed, reply.chars().take(200).collect(), reason)
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

/// Judges an episode's rubric with rules and, for facts in words, this model judge.
pub async fn judge_episode(
    judge: &ModelJudge,
    rubric: &Rubric,
    traj: &rubrics::Trajectory,
    page: &impl rubrics::PageProbe,
    evidence: Evidence,
    binary: bool,
    critic: bool,
) -> Result<rubrics::Judgement, ProbeError> {
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
    rubrics::judge_with(rubric, traj, page, &verifier, &opts).await
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
