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
