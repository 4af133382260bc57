//! Which recorded steps an update trains on, and with what weight: TTI's and WebGym's
//! filters and replay sampling for behaviour cloning, group-relative advantages for GRPO.
//! Plain data in, plain data out; every step left out is counted by its reason.

use std::collections::{BTreeMap, HashMap};

use rand::Rng;
use serde::{Deserialize, Serialize};

/// What the selection needs to know of one recorded step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepMeta {
    /// The episode it belongs to.
    pub episode: String,
    /// Its index in the episode.
    pub index: usize,
    /// Steps in the episode.
    pub episode_steps: usize,
    /// GRPO's group: the samples of one task instance (the same instruction on the same
    /// page), whose mean reward is each one's baseline.
    pub group: String,
    /// The website (for inverse-frequency sampling).
    pub site: String,
    /// Training iteration (or campaign order) the episode came from; larger is newer.
    pub iteration: u32,
    /// The episode's reward.
    pub reward: f64,
    /// Whether the episode succeeded.
    pub success: bool,
    /// sha256 of this step's screenshot, and of the next step's (None: none recorded).
    pub screenshot: Option<String>,
    /// The next step's screenshot hash (None on the last step).
    pub next_screenshot: Option<String>,
    /// The episode's final answer, if it gave one.
    pub answer: Option<String>,
}

/// Behaviour-cloning filters (TTI's and WebGym's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FbcFilter {
    /// Drop a step whose screenshot equals the next one (WebGym; the last step is kept).
    pub drop_unchanged: bool,
    /// Drop episodes whose answer says the thing was not found (TTI drops "N/A").
    pub drop_not_found: bool,
    /// Drop episodes with fewer steps than this (WebGym: 2).
    pub min_steps: usize,
    /// Keep only the last this many iterations (WebGym: 4; None: all, TTI).
    pub replay_iterations: Option<u32>,
    /// Draw at most this many steps (None: all kept steps).
    pub max_samples: Option<usize>,
}

impl Default for FbcFilter {
    fn default() -> Self {
        Self {
            drop_unchanged: true,
            drop_not_found: true,
            min_steps: 1,
            replay_iterations: Some(4),
            max_samples: None,
        }
    }
}

/// Steps dropped, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    /// The episode failed.
    pub failed: usize,
    /// The screenshot did not change after the step.
    pub unchanged: usize,
    /// The episode answered "not found".
    pub not_found: usize,
    /// The episode was too short.
    pub short: usize,
    /// Older than the replay window.
    pub stale: usize,
    /// Not drawn by the replay sampler.
    pub not_drawn: usize,
    /// GRPO: every rollout of the group got the same reward (no signal).
    pub flat_group: usize,
}

/// The steps an update trains on (indices into the input) with their advantages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    /// `(index, advantage)` of each kept step.
    pub kept: Vec<(usize, f32)>,
    /// What was left out and why.
    pub dropped: Dropped,
}

/// Whether an answer says the agent did not find what it was asked for.
pub fn says_not_found(answer: &str) -> bool {
    let a = answer.trim().to_ascii_lowercase();
    const PHRASES: [&str; 6] = [
        "n/a",
        "not found",
        "cannot find",
        "can't find",
        "could not find",
        "no such",
    ];
    a.is_empty() || a == "none" || PHRASES.iter().any(|p| a.contains(p))
}

/// Filtered behaviour cloning's selection: successful episodes' steps through the filters,
/// then (when `max_samples` is set) drawn without replacement with weights half recency
/// (iteration + 1, normalised) and half inverse website frequency (TTI's sampler).
pub fn select_fbc(steps: &[StepMeta], f: &FbcFilter, rng: &mut impl Rng) -> Selection {
    let mut out = Selection::default();
    let newest = steps.iter().map(|s| s.iteration).max().unwrap_or(0);
    let mut candidates = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let d = &mut out.dropped;
        if let Some(window) = f.replay_iterations
            && newest.saturating_sub(s.iteration) >= window
        {
            d.stale += 1;
        } else if !s.success {
            d.failed += 1;
        } else if s.episode_steps < f.min_steps {
            d.short += 1;
        } else if f.drop_not_found && s.answer.as_deref().is_some_and(says_not_found) {
            d.not_found += 1;
        } else if f.drop_unchanged && s.screenshot.is_some() && s.screenshot == s.next_screenshot {
            d.unchanged += 1;
        } else {
            candidates.push(i);
        }
    }
    let take = f
        .max_samples
        .unwrap_or(candidates.len())
        .min(candidates.len());
    if take < candidates.len() {
        let mut per_site: HashMap<&str, usize> = HashMap::new();
        for i in &candidates {
            *per_site.entry(steps[*i].site.as_str()).or_default() += 1;
        }
        let recency: f64 = candidates
            .iter()
            .map(|i| f64::from(steps[*i].iteration) + 1.0)
            .sum();
        let inverse: f64 = candidates
            .iter()
            .map(|i| 1.0 / per_site[steps[*i].site.as_str()] as f64)
            .sum();
        let mut weights: Vec<f64> = candidates
            .iter()
            .map(|i| {
                let s = &steps[*i];
                0.5 * (f64::from(s.iteration) + 1.0) / recency
                    + 0.5 / per_site[s.site.as_str()] as f64 / inverse
            })
            .collect();
        let mut chosen = Vec::with_capacity(take);
        for _ in 0..take {
            let total: f64 = weights.iter().sum();
            let mut r = rng.random::<f64>() * total;
            let mut pick = weights.iter().rposition(|w| *w > 0.0).unwrap_or(0);
            for (k, w) in weights.iter().enumerate() {
                if *w > 0.0 && r < *w {
                    pick = k;
                    break;
                }
                r -= w;
            }
            weights[pick] = 0.0;
            chosen.push(candidates[pick]);
        }
        out.dropped.not_drawn = candidates.len() - take;
        chosen.sort_unstable();
        candidates = chosen;
    }
    out.kept = candidates.into_iter().map(|i| (i, 1.0)).collect();
    out
}

/// How an episode's advantage is shared among its steps (the loss is a mean over tokens).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StepWeighting {
    /// Each step carries the advantage divided by the episode's length: every episode of a
    /// group weighs the same whatever its horizon, so a 10-step failure does not outweigh
    /// a 1-step success (GRPO's 1/|τ|).
    Trajectory,
    /// Each step carries the advantage divided by a constant `k` (AsyncWebRL's k = 10):
    /// longer episodes weigh more, in proportion to their steps.
    Constant {
        /// The divisor.
        k: f32,
    },
}

impl StepWeighting {
    /// The divisor of a step's advantage in an episode of `steps` steps.
    fn divisor(self, steps: usize) -> f32 {
        match self {
            StepWeighting::Trajectory => steps.max(1) as f32,
            StepWeighting::Constant { k } => k,
        }
    }
}

/// GRPO's selection: every step of an episode gets `(reward − group mean) / group std`,
/// divided as `weighting` says; groups whose rollouts all got the same reward are dropped.
pub fn select_grpo(steps: &[StepMeta], weighting: StepWeighting) -> Selection {
    let mut out = Selection::default();
    // One reward per episode, grouped by task.
    let mut groups: BTreeMap<&str, BTreeMap<&str, f64>> = BTreeMap::new();
    for s in steps {
        groups
            .entry(s.group.as_str())
            .or_default()
            .insert(s.episode.as_str(), s.reward);
    }
    let mut stats: HashMap<&str, Option<(f64, f64)>> = HashMap::new();
    for (g, eps) in &groups {
        let n = eps.len() as f64;
        let mean = eps.values().sum::<f64>() / n;
        let var = eps.values().map(|r| (r - mean).powi(2)).sum::<f64>() / n;
        stats.insert(g, (var > 1e-12).then(|| (mean, var.sqrt())));
    }
    for (i, s) in steps.iter().enumerate() {
        match stats[s.group.as_str()] {
            Some((mean, std)) => out.kept.push((
                i,
                ((s.reward - mean) / (std + 1e-6)) as f32 / weighting.divisor(s.episode_steps),
            )),
            None => out.dropped.flat_group += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn step(ep: &str, index: usize, n: usize, group: &str, success: bool) -> StepMeta {
        StepMeta {
            episode: ep.into(),
            index,
            episode_steps: n,
            group: group.into(),
            site: "shop".into(),
            iteration: 0,
            reward: f64::from(u8::from(success)),
            success,
            screenshot: Some(format!("{ep}-{index}")),
            next_screenshot: (index + 1 < n).then(|| format!("{ep}-{}", index + 1)),
            answer: None,
        }
    }

    #[test]
    fn fbc_keeps_successful_changing_steps_and_counts_the_rest() {
        let mut steps = vec![
            step("a", 0, 3, "t", true),
            step("a", 1, 3, "t", true),
            step("a", 2, 3, "t", true),
            step("b", 0, 1, "t", false),
            step("c", 0, 1, "t", true),
        ];
        // a's second step changed nothing on screen.
        steps[1].next_screenshot = steps[1].screenshot.clone();
        steps[4].answer = Some("N/A".into());
        let mut old = step("d", 0, 1, "t", true);
        old.iteration = 0;
        steps.push(old);
        for s in &mut steps[..5] {
            s.iteration = 5;
        }
        let sel = select_fbc(
            &steps,
            &FbcFilter::default(),
            &mut rand::rngs::StdRng::seed_from_u64(0),
        );
        assert_eq!(sel.kept, vec![(0, 1.0), (2, 1.0)]);
        assert_eq!(sel.dropped.unchanged, 1);
        assert_eq!(sel.dropped.failed, 1);
        assert_eq!(sel.dropped.not_found, 1);
        assert_eq!(sel.dropped.stale, 1);
    }

    #[test]
    fn replay_sampling_favours_rare_sites_and_recent_iterations() {
        let mut steps = Vec::new();
        for i in 0..90 {
            let mut s = step(&format!("common{i}"), 0, 1, "t", true);
            s.site = "common".into();
            steps.push(s);
        }
        for i in 0..10 {
            let mut s = step(&format!("rare{i}"), 0, 1, "t", true);
            s.site = "rare".into();
            steps.push(s);
        }
        let f = FbcFilter {
            max_samples: Some(20),
            replay_iterations: None,
            ..FbcFilter::default()
        };
        let mut rare = 0;
        for seed in 0..20 {
            let sel = select_fbc(&steps, &f, &mut rand::rngs::StdRng::seed_from_u64(seed));
            assert_eq!(sel.kept.len(), 20);
            assert_eq!(sel.dropped.not_drawn, 80);
            let mut idx: Vec<usize> = sel.kept.iter().map(|k| k.0).collect();
            idx.dedup();
            assert_eq!(idx.len(), 20, "drawn without replacement");
            rare += sel.kept.iter().filter(|k| k.0 >= 90).count();
        }
        // Uniform drawing gives the rare site 10% of the draws; with half the weight on
        // inverse frequency its first draw has 30% and later ones a little less (~26%).
        let share = rare as f64 / 400.0;
        assert!(share > 0.2 && share < 0.35, "rare share {share}");
    }

    #[test]
    fn grpo_advantages_are_group_normalised_and_flat_groups_dropped() {
        let steps = vec![
            step("a", 0, 2, "t1", true),
            step("a", 1, 2, "t1", true),
            step("b", 0, 1, "t1", false),
            step("c", 0, 1, "t2", true),
            step("d", 0, 1, "t2", true),
        ];
        let sel = select_grpo(&steps, StepWeighting::Constant { k: 10.0 });
        assert_eq!(sel.dropped.flat_group, 2);
        assert_eq!(sel.kept.len(), 3);
        // Rewards 1 and 0: mean 0.5, std 0.5, advantages ±1 / k.
        assert!((sel.kept[0].1 - 0.1).abs() < 1e-5);
        assert!((sel.kept[1].1 - 0.1).abs() < 1e-5);
        assert!((sel.kept[2].1 + 0.1).abs() < 1e-5);
    }

    #[test]
    fn per_trajectory_weighting_weighs_every_episode_alike_whatever_its_length() {
        // A 10-step failure and a 1-step success in one group.
        let mut steps: Vec<StepMeta> = (0..10).map(|i| step("long", i, 10, "g", false)).collect();
        steps.push(step("short", 0, 1, "g", true));
        let total = |sel: &Selection, ep: &str| -> f32 {
            sel.kept
                .iter()
                .filter(|(i, _)| steps[*i].episode == ep)
                .map(|(_, a)| a.abs())
                .sum()
        };
        let per_trajectory = select_grpo(&steps, StepWeighting::Trajectory);
        let (long, short) = (
            total(&per_trajectory, "long"),
            total(&per_trajectory, "short"),
        );
        assert!((long - short).abs() < 1e-4, "{long} vs {short}");
        // A constant divisor lets the long failure weigh ten times the short success.
        let constant = select_grpo(&steps, StepWeighting::Constant { k: 1.0 });
        let ratio = total(&constant, "long") / total(&constant, "short");
        assert!((ratio - 10.0).abs() < 1e-3, "{ratio}");
    }
}
