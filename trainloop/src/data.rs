//! From recorded episodes to training samples: which steps can be trained on at all (the
//! ONNX policy's, with their tokens), what the selection needs to know of each, and the
//! selected steps' decoder inputs rebuilt through the model's frozen parts.

use std::collections::{BTreeMap, HashMap};

use policy::traces::{ReplaySettings, Replayer, TraceEpisode};
use training::Sample;
use training::select::StepMeta;

/// The steps a selection chooses from, with where each one is.
#[derive(Default)]
pub struct Collected {
    /// What the selection reads, one per trainable step.
    pub metas: Vec<StepMeta>,
    /// `(episode, step)` of each meta.
    pub at: Vec<(usize, usize)>,
    /// Steps that cannot be trained on, by reason.
    pub skipped: BTreeMap<String, usize>,
}

/// The trainable steps of `episodes`. Iterations are campaigns in the order they first
/// appear (the replay window and the recency weights count them); `partial` makes the
/// reward the judged score instead of success.
pub fn collect(episodes: &[TraceEpisode], partial: bool) -> Collected {
    collect_from(episodes, partial, Source::Onnx)
}

/// Whose steps a run trains on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The ONNX policy's, replayed through the model (their tokens are needed).
    Onnx,
    /// A policy served over HTTP, read as requested: its prompt and reply are needed, its
    /// token ids only if the server reported them ([`policy::traces::requested`]).
    Served,
}

/// [`collect`] for the steps of `source`'s policy.
pub fn collect_from(episodes: &[TraceEpisode], partial: bool, source: Source) -> Collected {
    let mut out = Collected::default();
    let mut order: HashMap<uuid::Uuid, u32> = HashMap::new();
    let groups = groups_of(episodes);
    for (e, ep) in episodes.iter().enumerate() {
        let next = order.len() as u32;
        let iteration = *order.entry(ep.campaign_id).or_insert(next);
        // An episode the judge could not score (a rubric error) has no reward: counting it
        // as a failure would teach the policy from the rubric's mistake.
        if ep.success.is_none() {
            *out.skipped
                .entry("the episode was not judged (a rubric error)".into())
                .or_default() += ep.steps.len();
            continue;
        }
        let foreign = match (&ep.policy, source) {
            (None, _) => Some("the episode does not record its policy".to_string()),
            (Some(card), Source::Onnx) => ReplaySettings::from_card(card)
                .err()
                .map(|_| format!("recorded by the `{}` policy, not onnx", card.backend)),
            (Some(card), Source::Served) => (card.backend != "http")
                .then(|| format!("recorded by the `{}` policy, not http", card.backend)),
        };
        for (s, step) in ep.steps.iter().enumerate() {
            let why = if let Some(why) = &foreign {
                Some(why.clone())
            } else if step.prompt.is_none() {
                Some("no prompt recorded".into())
            } else if source == Source::Served && step.raw_output.is_none() {
                Some("no reply recorded".into())
            } else if source == Source::Onnx && step.tokens().is_none() {
                Some("no token ids with log-probabilities recorded".into())
            } else {
                None
            };
            if let Some(why) = why {
                *out.skipped.entry(why).or_default() += 1;
                continue;
            }
            out.metas.push(StepMeta {
                episode: ep.id.to_string(),
                index: s,
                episode_steps: ep.steps.len(),
                group: groups[e].clone(),
                site: ep.site.clone(),
                iteration,
                reward: ep.reward(partial),
                success: ep.success == Some(true),
                screenshot: step.screenshot.clone(),
                next_screenshot: ep.steps.get(s + 1).and_then(|n| n.screenshot.clone()),
                answer: ep.final_answer.clone(),
            });
            out.at.push((e, s));
        }
    }
    out
}

/// GRPO's group of each episode: its task instance (campaign, task, seed). Samples of one
/// instance saw the same instruction on the same page, so the group's mean reward is a
/// baseline for that instruction; across seeds it would be the task's average, and no
/// group would compare two answers to one instruction. A campaign that drew one sample
/// per seed (`samples_per_seed` 1) has no instance with two samples: its task's episodes
/// form the group, as before instances were groups.
pub fn groups_of(episodes: &[TraceEpisode]) -> Vec<String> {
    let mut samples: HashMap<(uuid::Uuid, &str, i64), usize> = HashMap::new();
    for ep in episodes {
        *samples
            .entry((ep.campaign_id, ep.task_id.as_str(), ep.seed))
            .or_default() += 1;
    }
    let mut sampled: HashMap<(uuid::Uuid, &str), bool> = HashMap::new();
    for ((c, t, _), n) in &samples {
        *sampled.entry((*c, *t)).or_default() |= *n > 1;
    }
    episodes
        .iter()
        .map(|ep| match sampled[&(ep.campaign_id, ep.task_id.as_str())] {
            true => format!("{}/{}/{}", ep.campaign_id, ep.task_id, ep.seed),
            false => format!("{}/{}", ep.campaign_id, ep.task_id),
        })
        .collect()
}

/// The selected steps as samples (`kept`: index into `at`, advantage). A step that cannot
/// be replayed (a screenshot gone, a prompt the model cannot take) is counted in
/// `skipped` with its reason and left out; the caller says so.
pub async fn samples(
    replayer: &mut Replayer,
    episodes: &[TraceEpisode],
    at: &[(usize, usize)],
    kept: &[(usize, f32)],
    skipped: &mut BTreeMap<String, usize>,
    mut progress: impl FnMut(),
) -> Vec<Sample> {
    let mut out = Vec::with_capacity(kept.len());
    for &(i, advantage) in kept {
        let (e, s) = at[i];
        match replayer.step(&episodes[e], s).await {
            Ok(x) => out.push(Sample::from_teacher(
                x.inputs,
                x.response,
                x.behaviour,
                advantage,
            )),
            Err(err) => {
                tracing::warn!(error = %err, "step left out");
                *skipped
                    .entry(format!("cannot be replayed: {err}"))
                    .or_default() += 1;
            }
        }
        progress();
        // Replaying runs the model's frozen parts on this task: let the rollouts and the
        // evaluation that overlapped training runs beside the update take their turn.
        tokio::task::yield_now().await;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn episode(success: Option<bool>) -> TraceEpisode {
        serde_json::from_value(serde_json::json!({
            "id": uuid::Uuid::new_v4(), "campaign_id": uuid::Uuid::nil(), "task_id": "t", "site": "s",
            "status": "finished", "success": success, "score": null, "final_answer": null,
            "final_screenshot": null, "screen": null,
            "policy": {"name": "onnx", "backend": "onnx", "settings": {"grounding": "marks"}},
            "steps": [{"idx": 0, "url": "u", "title": "t", "screenshot": "a", "prompt": "p",
                       "token_ids": [1, 2], "token_logprobs": [-0.1, -0.2]}]
        }))
        .unwrap()
    }

    fn on_seed(seed: i64, success: bool) -> TraceEpisode {
        let mut e = episode(Some(success));
        e.seed = seed;
        e
    }

    #[test]
    fn a_group_is_one_task_instance_not_the_task() {
        // Two instances of one task: seed 1 solved once in two samples, seed 2 always. Only
        // seed 1's samples compare two answers to one instruction.
        let eps = [
            on_seed(1, true),
            on_seed(1, false),
            on_seed(2, true),
            on_seed(2, true),
        ];
        let c = collect(&eps, false);
        let groups: std::collections::BTreeSet<&str> =
            c.metas.iter().map(|m| m.group.as_str()).collect();
        assert_eq!(groups.len(), 2, "{groups:?}");
        let s = training::select::select_grpo(
            &c.metas,
            training::select::StepWeighting::Constant { k: 1.0 },
        );
        assert_eq!(s.kept.len(), 2, "seed 2's flat group is dropped");
        assert!(s.kept.iter().all(|&(i, _)| eps[c.at[i].0].seed == 1));
        let adv: Vec<f32> = s.kept.iter().map(|&(_, a)| a).collect();
        assert!(
            adv.iter().any(|a| *a > 0.0) && adv.iter().any(|a| *a < 0.0),
            "{adv:?}"
        );
    }

    #[test]
    fn unjudged_episodes_are_never_trained_on() {
        let c = collect(
            &[episode(Some(true)), episode(None), episode(Some(false))],
            false,
        );
        assert_eq!(c.metas.len(), 2);
        assert!(c.metas.iter().any(|m| m.success) && c.metas.iter().any(|m| !m.success));
        assert_eq!(c.skipped["the episode was not judged (a rubric error)"], 1);
    }
}
