//! The decoder over samples that share their prompt (Prefix Grouper, arXiv 2506.05433):
//! each distinct prompt runs through the layers once, and its samples' completions attend
//! to its keys and values beside their own. The outputs, and so the gradients through
//! them, are the per-sample computation's up to rounding: a completion token sees exactly
//! the keys it would see in its own sample (the whole prompt, then its completion up to
//! itself), with the attention split into the prompt's part and its own, summed.
//!
//! Layout: `G` prompts padded to `P` tokens, and `K` completion slots per prompt padded
//! to `R` tokens (a prompt with fewer samples leaves slots empty: all-zero mask).

use candle_core::{DType, Tensor};

use super::{Decoder, Positions};
use crate::TrainError;

/// One pass's inputs: prompts and the completions that follow them.
pub(crate) struct PrefixBatch {
    /// `[G, P, hidden]`.
    pub(crate) prompts: Tensor,
    /// `[G * P]`, 1 for a real token.
    pub(crate) prompt_mask: Vec<u8>,
    /// The prompts' positions (`G` x `P`).
    pub(crate) prompt_positions: Positions,
    /// `[G * K, R, hidden]`, slot `g * K + j` the j-th completion of prompt g.
    pub(crate) completions: Tensor,
    /// `[G * K * R]`, 1 for a real token.
    pub(crate) completion_mask: Vec<u8>,
    /// The completions' positions (`G * K` x `R`), going on from their prompt's.
    pub(crate) completion_positions: Positions,
    /// Completion slots per prompt.
    pub(crate) per_prompt: usize,
}

impl Decoder {
    /// The final normalised hidden states of the prompts `[G, P, hidden]` and of the
    /// completions `[G * K, R, hidden]`.
    pub(crate) fn hidden_prefixed(
        &self,
        batch: &PrefixBatch,
    ) -> Result<(Tensor, Tensor), TrainError> {
        let (g, p, _) = batch.prompts.dims3()?;
        let (n, r, _) = batch.completions.dims3()?;
        let k = batch.per_prompt;
        if n != g * k || batch.prompt_mask.len() != g * p || batch.completion_mask.len() != n * r {
            return Err(TrainError::Input(format!(
                "a shared-prompt batch of {g} prompts x {p} and {n} completions x {r} with {k} per prompt"
            )));
        }
        let (nh, d) = (self.cfg.heads, self.cfg.head_dim);
        let rope_p = self.rope(g, p, &batch.prompt_positions)?;
        let rope_c = self.rope(n, r, &batch.completion_positions)?;
        let bias_p = self.attention_bias(g, p, &batch.prompt_mask)?;
        let bias_c = completion_bias(self, batch, (g, p), (k, r))?;
        // [G*K, H, R, X] <-> [G, H, K*R, X]: a prompt's completions side by side as one
        // run of queries against its keys.
        let to_prompt = |t: &Tensor, x: usize| -> Result<Tensor, TrainError> {
            Ok(t.reshape((g, k, nh, r, x))?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((g, nh, k * r, x))?)
        };
        let from_prompt = |t: &Tensor, x: usize| -> Result<Tensor, TrainError> {
            Ok(t.reshape((g, nh, k, r, x))?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((n, nh, r, x))?)
        };
        let mut xp = batch.prompts.to_dtype(DType::F32)?;
        let mut xc = batch.completions.to_dtype(DType::F32)?;
        for i in 0..self.cfg.layers {
            if i == self.frozen_below && i > 0 {
                xp = xp.detach();
                xc = xc.detach();
            }
            let w = self.layer(i)?;
            let (qp, kp, vp) = self.qkv(&xp, &w, (&rope_p.0, &rope_p.1))?;
            let scores = qp
                .contiguous()?
                .matmul(&kp.transpose(2, 3)?.contiguous()?)?;
            let probs = crate::ops::masked_softmax(&scores.to_dtype(DType::F32)?, &bias_p)?
                .to_dtype(self.compute)?;
            let attn_p =
                probs
                    .matmul(&vp)?
                    .transpose(1, 2)?
                    .contiguous()?
                    .reshape((g, p, nh * d))?;

            let (qc, kc, vc) = self.qkv(&xc, &w, (&rope_c.0, &rope_c.1))?;
            let kp_t = kp.transpose(2, 3)?.contiguous()?;
            let to_prefix = from_prompt(&to_prompt(&qc, d)?.matmul(&kp_t)?, p)?;
            let to_own = qc
                .contiguous()?
                .matmul(&kc.transpose(2, 3)?.contiguous()?)?;
            let scores = Tensor::cat(&[&to_prefix, &to_own], 3)?;
            let probs = crate::ops::masked_softmax(&scores.to_dtype(DType::F32)?, &bias_c)?
                .to_dtype(self.compute)?;
            let from_prefix = from_prompt(&to_prompt(&probs.narrow(3, 0, p)?, p)?.matmul(&vp)?, d)?;
            let from_own = probs.narrow(3, p, r)?.contiguous()?.matmul(&vc)?;
            let attn_c = (from_prefix + from_own)?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((n, r, nh * d))?;

            xp = self.finish_layer(&xp, &attn_p, &w)?;
            xc = self.finish_layer(&xc, &attn_c, &w)?;
        }
        Ok((self.final_norm(&xp)?, self.final_norm(&xc)?))
    }
}

/// `[G * K, 1, R, P + R]`: a completion token sees its prompt's real tokens, then its own
/// completion's real tokens up to itself; else the lowest f32, as the plain bias.
fn completion_bias(
    decoder: &Decoder,
    batch: &PrefixBatch,
    (g, p): (usize, usize),
    (k, r): (usize, usize),
) -> Result<Tensor, TrainError> {
    let width = p + r;
    let mut bias = vec![0f32; g * k * r * width];
    for slot in 0..g * k {
        let prompt = &batch.prompt_mask[(slot / k) * p..][..p];
        let own = &batch.completion_mask[slot * r..][..r];
        for i in 0..r {
            let row = &mut bias[(slot * r + i) * width..][..width];
            for (j, b) in row.iter_mut().enumerate() {
                let seen = match j.checked_sub(p) {
                    None => prompt[j] == 1,
                    Some(j) => j <= i && own[j] == 1,
                };
                if !seen {
                    *b = f32::MIN;
                }
            }
        }
    }
    Ok(Tensor::from_vec(
        bias,
        (g * k, 1, r, width),
        decoder.device(),
    )?)
}
