//! Samples that share a prompt (a GRPO group's k samples of one observation, the steps
//! FBC keeps from rollouts of one instance) computed as one prompt pass plus their
//! completions (`decoder::prefix`). The prompt is about 99% of a web step's tokens (a 5-10
//! token action after hundreds of tokens of page), so a group of k pays for one prompt
//! instead of k, forward and backward.
//!
//! Two samples share a prompt when their prompt embeddings and positions are bit for bit
//! the same: stored inputs of one rendered observation are, whatever sampled after them.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use candle_core::Tensor;

use crate::TrainError;
use crate::decoder::prefix::PrefixBatch;
use crate::decoder::{Decoder, Positions};
use crate::sample::Sample;

/// Whether the trainer computes a shared prompt once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptSharing {
    /// Samples with the same prompt in one pass share its computation.
    Shared,
    /// Every sample runs its own prompt (the reference computation).
    PerSample,
}

/// The samples' indices grouped by identical prompt, groups in order of first appearance,
/// each group's indices ascending.
pub fn prompt_groups<'a>(samples: impl IntoIterator<Item = &'a Sample>) -> Vec<Vec<usize>> {
    let samples: Vec<&Sample> = samples.into_iter().collect();
    let mut by_hash: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        let candidates = by_hash.entry(prompt_hash(s)).or_default();
        match candidates
            .iter()
            .find(|g| same_prompt(samples[groups[**g][0]], s))
        {
            Some(g) => groups[*g].push(i),
            None => {
                candidates.push(groups.len());
                groups.push(vec![i]);
            }
        }
    }
    groups
}

fn prompt_len_values(s: &Sample) -> (usize, usize) {
    let hidden = s.embeds.len() / s.len().max(1);
    (
        s.prompt_len.min(s.len()),
        s.prompt_len.min(s.len()) * hidden,
    )
}

fn prompt_hash(s: &Sample) -> u64 {
    let (len, values) = prompt_len_values(s);
    let mut h = std::hash::DefaultHasher::new();
    len.hash(&mut h);
    for v in &s.embeds[..values] {
        v.to_bits().hash(&mut h);
    }
    s.positions[..len].hash(&mut h);
    h.finish()
}

/// Whether two samples' prompts are the same, bit for bit.
pub(crate) fn same_prompt(a: &Sample, b: &Sample) -> bool {
    let ((la, va), (lb, vb)) = (prompt_len_values(a), prompt_len_values(b));
    la == lb
        && va == vb
        && a.positions[..la] == b.positions[..lb]
        && a.embeds[..va]
            .iter()
            .zip(&b.embeds[..vb])
            .all(|(x, y)| x.to_bits() == y.to_bits())
}

/// The final hidden states that predict each response token of `batch` (sample after
/// sample, as `objective::token_logprobs` scores them), computed with each of `groups`'
/// prompts run once.
pub(crate) fn response_hidden(
    decoder: &Decoder,
    batch: &[&Sample],
    groups: &[Vec<usize>],
) -> Result<Tensor, TrainError> {
    let dev = decoder.device();
    let hidden = decoder.config().hidden;
    let axes = if decoder.mrope() { 3 } else { 1 };
    let (g, k) = (groups.len(), groups.iter().map(Vec::len).max().unwrap_or(0));
    let p = groups
        .iter()
        .map(|m| batch[m[0]].prompt_len)
        .max()
        .unwrap_or(0);
    let r = batch.iter().map(|s| s.response.len()).max().unwrap_or(0);
    let mut prompts = vec![0f32; g * p * hidden];
    let mut prompt_mask = vec![0u8; g * p];
    let mut prompt_pos = vec![1i64; axes * g * p];
    let mut comps = vec![0f32; g * k * r * hidden];
    let mut comp_mask = vec![0u8; g * k * r];
    let mut comp_pos = vec![1i64; axes * g * k * r];
    // Where each sample's response rows are in the concatenated [prompts; completions].
    let mut first_row = vec![0usize; batch.len()];
    let mut slot_of = vec![0usize; batch.len()];
    for (gi, members) in groups.iter().enumerate() {
        let s = batch[members[0]];
        let pl = s.prompt_len;
        prompts[gi * p * hidden..][..pl * hidden].copy_from_slice(&s.embeds[..pl * hidden]);
        prompt_mask[gi * p..][..pl].fill(1);
        for axis in 0..axes {
            for (t, pos) in s.positions[..pl].iter().enumerate() {
                prompt_pos[(axis * g + gi) * p + t] = pos[axis];
            }
        }
        for (j, &m) in members.iter().enumerate() {
            let s = batch[m];
            let slot = gi * k + j;
            let rl = s.response.len();
            comps[slot * r * hidden..][..rl * hidden].copy_from_slice(&s.embeds[pl * hidden..]);
            comp_mask[slot * r..][..rl].fill(1);
            for axis in 0..axes {
                for (t, pos) in s.positions[pl..].iter().enumerate() {
                    comp_pos[(axis * g * k + slot) * r + t] = pos[axis];
                }
            }
            first_row[m] = gi * p + pl - 1;
            slot_of[m] = slot;
        }
    }
    let positions = |values| Positions {
        values,
        mrope: decoder.mrope(),
    };
    let pass = PrefixBatch {
        prompts: Tensor::from_vec(prompts, (g, p, hidden), dev)?,
        prompt_mask,
        prompt_positions: positions(prompt_pos),
        completions: Tensor::from_vec(comps, (g * k, r, hidden), dev)?,
        completion_mask: comp_mask,
        completion_positions: positions(comp_pos),
        per_prompt: k,
    };
    let (hp, hc) = decoder.hidden_prefixed(&pass)?;
    // The first response token is predicted by the prompt's last row, the j-th (j >= 1) by
    // the completion's row j - 1.
    let mut rows = Vec::new();
    for (i, s) in batch.iter().enumerate() {
        rows.push(first_row[i] as u32);
        for j in 1..s.response.len() {
            rows.push((g * p + slot_of[i] * r + j - 1) as u32);
        }
    }
    let all = Tensor::cat(
        &[
            &hp.reshape((g * p, hidden))?,
            &hc.reshape((g * k * r, hidden))?,
        ],
        0,
    )?;
    let n = rows.len();
    Ok(all.index_select(&Tensor::from_vec(rows, n, dev)?, 0)?)
}

/// The order an epoch's optimiser steps take the samples, `per_step` at a time, given
/// their prompt `groups`, so that samples of one prompt meet in a step without biasing
/// what a step sees.
///
/// With `whole_groups` (GRPO, whose advantages are relative within a group: TRL keeps a
/// group's generations in one batch too) a prompt's samples stay together, cut into runs
/// of at most `per_step` and the runs shuffled. Otherwise (behaviour cloning) every step is
/// a uniform draw of the samples, and only within a step are a prompt's samples put side
/// by side: a page that is the same whatever the seed gives one prompt to dozens of
/// samples, and steps of one prompt each would pull the policy from one instruction to the
/// next instead of learning to tell them apart.
pub(crate) fn training_order(
    groups: &[Vec<usize>],
    per_step: usize,
    whole_groups: bool,
    rng: &mut impl rand::Rng,
) -> Vec<usize> {
    use rand::seq::SliceRandom;
    let per_step = per_step.max(1);
    if whole_groups {
        let mut runs: Vec<&[usize]> = groups.iter().flat_map(|g| g.chunks(per_step)).collect();
        runs.shuffle(rng);
        return runs.concat();
    }
    let mut order: Vec<usize> = groups.concat();
    let mut group_of = vec![0; order.iter().max().map_or(0, |m| m + 1)];
    for (g, members) in groups.iter().enumerate() {
        for i in members {
            group_of[*i] = g;
        }
    }
    order.shuffle(rng);
    for step in order.chunks_mut(per_step) {
        step.sort_by_key(|i| group_of[*i]);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::training_order;
    use rand::SeedableRng;
    use std::collections::BTreeSet;

    /// Two prompts of 40 samples each: steps of 8.
    fn groups() -> Vec<Vec<usize>> {
        vec![(0..40).collect(), (40..80).collect()]
    }

    #[test]
    fn behaviour_cloning_steps_draw_across_prompts_with_each_prompt_side_by_side() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let order = training_order(&groups(), 8, false, &mut rng);
        assert_eq!(order.iter().copied().collect::<BTreeSet<_>>().len(), 80);
        let mixed = order
            .chunks(8)
            .filter(|s| s.iter().any(|i| *i < 40) && s.iter().any(|i| *i >= 40))
            .count();
        // A uniform draw mixes both prompts in almost every step of 8 (all eight from one
        // prompt has probability about 2 * 0.5^8 per step).
        assert!(mixed >= 7, "{mixed} of 10 steps mixed: {order:?}");
        for step in order.chunks(8) {
            let firsts: Vec<bool> = step.iter().map(|i| *i < 40).collect();
            assert!(
                firsts.windows(2).all(|w| w[0] >= w[1]),
                "a prompt's samples side by side within the step: {step:?}"
            );
        }
    }

    #[test]
    fn grpo_keeps_a_prompts_samples_together_in_runs_of_a_step() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let groups = vec![(0..8).collect(), (8..12).collect(), (12..32).collect()];
        let order = training_order(&groups, 8, true, &mut rng);
        assert_eq!(order.iter().copied().collect::<BTreeSet<_>>().len(), 32);
        let mut runs: Vec<Vec<usize>> = Vec::new();
        for i in order {
            let g = |i: usize| usize::from(i >= 8) + usize::from(i >= 12);
            match runs.last_mut() {
                Some(r) if g(r[0]) == g(i) && r.len() < 8 => r.push(i),
                _ => runs.push(vec![i]),
            }
        }
        let mut sizes: Vec<usize> = runs.iter().map(Vec::len).collect();
        sizes.sort();
        assert_eq!(sizes, vec![4, 4, 8, 8, 8], "{runs:?}");
    }
}
