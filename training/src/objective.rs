//! The policy's log-probabilities of stored responses, and the losses built on them:
//! filtered behaviour cloning (TTI, WebGym) and GRPO with PPO clipping (WebGym's
//! AsyncWebRL, WebAgent-R1).

use candle_core::{D, Tensor};
use serde::{Deserialize, Serialize};

use crate::TrainError;
use crate::decoder::{Decoder, Positions, log_softmax};
use crate::sample::Sample;
use crate::shared_prompts::{PromptSharing, prompt_groups};

/// Which loss an update minimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Filtered behaviour cloning: maximise the likelihood of kept steps.
    Fbc,
    /// Group-relative policy optimisation with a clipped importance ratio.
    Grpo,
}

impl std::str::FromStr for Objective {
    type Err = TrainError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fbc" => Ok(Self::Fbc),
            "grpo" => Ok(Self::Grpo),
            other => Err(TrainError::Input(format!(
                "objective: unknown {other:?} (expected fbc or grpo)"
            ))),
        }
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Fbc => "fbc",
            Self::Grpo => "grpo",
        })
    }
}

/// GRPO's clipping settings (AsyncWebRL's values by default).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GrpoConfig {
    /// PPO ratio clip ε: the ratio is kept in [1 − ε, 1 + ε].
    pub clip: f32,
    /// Dual clip c: a negative-advantage token's loss is at most c·|A|.
    pub dual_clip: f32,
    /// Tokens whose behaviour importance weight exceeds this are dropped.
    pub behaviour_cap: f32,
}

impl Default for GrpoConfig {
    fn default() -> Self {
        Self {
            clip: 0.2,
            dual_clip: 3.0,
            behaviour_cap: 5.0,
        }
    }
}

/// Log-probabilities of a batch's response tokens: a flat `[tokens]` tensor, sample after
/// sample, and where each sample's tokens start in it.
pub struct TokenLogprobs {
    /// One value per response token, in sample order.
    pub values: Tensor,
    /// The entropy of the distribution each response token was drawn from (under the
    /// grammar mask where the sample has one), one value per token.
    pub entropy: Tensor,
    /// `offsets[i]..offsets[i + 1]` are sample i's tokens.
    pub offsets: Vec<usize>,
    /// Prompts run through the decoder: the batch's samples, or fewer where samples
    /// shared one.
    pub prompt_passes: usize,
}

/// The decoder's log-probabilities of each sample's stored response, under the grammar mask
/// where the sample has one (the distribution the policy sampled from), at `temperature`
/// (1: the log-probabilities the policy records). Samples of the batch that share a prompt
/// share its computation (`shared_prompts`).
pub fn token_logprobs(
    decoder: &Decoder,
    batch: &[&Sample],
    temperature: f32,
) -> Result<TokenLogprobs, TrainError> {
    token_logprobs_with(decoder, batch, temperature, PromptSharing::Shared)
}

/// [`token_logprobs`], with prompt sharing chosen.
pub fn token_logprobs_with(
    decoder: &Decoder,
    batch: &[&Sample],
    temperature: f32,
    sharing: PromptSharing,
) -> Result<TokenLogprobs, TrainError> {
    let dev = decoder.device();
    let hidden = decoder.config().hidden;
    let vocab = decoder.vocab();
    for s in batch {
        s.validate(hidden, vocab)?;
    }
    if batch.is_empty() {
        return Err(TrainError::Input("an empty batch".into()));
    }
    let mut targets = Vec::new();
    let mut offsets = vec![0];
    for s in batch {
        targets.extend(s.response.iter().copied());
        offsets.push(targets.len());
    }
    let groups = match sharing {
        PromptSharing::Shared => prompt_groups(batch.iter().copied()),
        PromptSharing::PerSample => Vec::new(),
    };
    let shared = !groups.is_empty() && groups.len() < batch.len();
    let (h, prompt_passes) = match shared {
        true => (
            crate::shared_prompts::response_hidden(decoder, batch, &groups)?,
            groups.len(),
        ),
        false => (per_sample_hidden(decoder, batch)?, batch.len()),
    };
    let n = targets.len();
    let mut logits = decoder.head(&h)?;
    if batch.iter().any(|s| s.allowed.is_some()) {
        let mut add = vec![0f32; n * vocab];
        let mut k = 0;
        for s in batch {
            match &s.allowed {
                Some(sets) => {
                    for set in sets {
                        for (id, v) in add[k * vocab..(k + 1) * vocab].iter_mut().enumerate() {
                            if !set.contains(id) {
                                *v = -1e30;
                            }
                        }
                        k += 1;
                    }
                }
                None => k += s.response.len(),
            }
        }
        logits = logits.broadcast_add(&Tensor::from_vec(add, (n, vocab), dev)?)?;
    }
    if temperature != 1.0 {
        logits = (logits / f64::from(temperature))?;
    }
    let targets = Tensor::from_vec(targets, (n, 1), dev)?;
    let all = log_softmax(&logits)?;
    let values = all.gather(&targets, D::Minus1)?.squeeze(1)?;
    // Masked tokens have log-probability -1e30 and probability 0: their terms are 0.
    let entropy = all.exp()?.mul(&all)?.sum(D::Minus1)?.neg()?;
    Ok(TokenLogprobs {
        values,
        entropy,
        offsets,
        prompt_passes,
    })
}

/// The final hidden states that predict each response token, every sample run whole.
fn per_sample_hidden(decoder: &Decoder, batch: &[&Sample]) -> Result<Tensor, TrainError> {
    let dev = decoder.device();
    let hidden = decoder.config().hidden;
    let b = batch.len();
    let len = batch.iter().map(|s| s.len()).max().unwrap_or(0);
    // Right padding: causal attention keeps the padding out of every real position.
    let mut embeds = vec![0f32; b * len * hidden];
    let mut mask = vec![0u8; b * len];
    let axes = if decoder.mrope() { 3 } else { 1 };
    let mut positions = vec![1i64; axes * b * len];
    let mut rows = Vec::new();
    for (i, s) in batch.iter().enumerate() {
        embeds[i * len * hidden..(i * len + s.len()) * hidden].copy_from_slice(&s.embeds);
        mask[i * len..i * len + s.len()].fill(1);
        for axis in 0..axes {
            for (t, p) in s.positions.iter().enumerate() {
                positions[(axis * b + i) * len + t] = p[axis];
            }
        }
        for j in 0..s.response.len() {
            // The logits at position p predict the token at p + 1.
            rows.push((i * len + s.prompt_len - 1 + j) as u32);
        }
    }
    let embeds = Tensor::from_vec(embeds, (b, len, hidden), dev)?;
    let positions = Positions {
        values: positions,
        mrope: decoder.mrope(),
    };
    let h = decoder.hidden(&embeds, &mask, &positions)?;
    let n = rows.len();
    let rows = Tensor::from_vec(rows, n, dev)?;
    Ok(h.reshape((b * len, hidden))?.index_select(&rows, 0)?)
}

/// Terms added to either objective: a KL penalty towards a frozen reference model and an
/// entropy bonus. Both are off by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Regularization {
    /// β of the KL penalty to the reference, estimated per token with k3
    /// (`exp(ref − cur) − (ref − cur) − 1`, unbiased and never negative; WebAgent-R1 uses
    /// 0.001). 0: no penalty, and no reference is needed.
    #[serde(default)]
    pub kl: f32,
    /// Weight of the mean per-token entropy subtracted from the loss (over the masked
    /// distribution, so it spreads probability only among allowed tokens). 0: none.
    #[serde(default)]
    pub entropy: f32,
}

impl Regularization {
    /// Checks both weights, naming the bad one.
    pub fn validate(&self) -> Result<(), TrainError> {
        for (field, v) in [("kl", self.kl), ("entropy", self.entropy)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(TrainError::Input(format!(
                    "regularization.{field}: must be 0 or a positive number"
                )));
            }
        }
        Ok(())
    }

    /// The terms for one batch: `β · mean k3(reference ‖ current) − c · mean entropy`, or
    /// None when both weights are 0. `reference` holds the reference model's
    /// log-probabilities of the same tokens.
    pub fn terms(
        &self,
        lp: &TokenLogprobs,
        reference: Option<&[f32]>,
    ) -> Result<Option<Tensor>, TrainError> {
        let n = lp.values.dim(0)?;
        let mut total: Option<Tensor> = None;
        if self.kl > 0.0 {
            let reference = reference.ok_or_else(|| {
                TrainError::Input("regularization.kl: no reference model to measure it to".into())
            })?;
            if reference.len() != n {
                return Err(TrainError::Input(format!(
                    "{} reference log-probabilities for {n} tokens",
                    reference.len()
                )));
            }
            let r = Tensor::from_vec(reference.to_vec(), n, lp.values.device())?;
            let d = (r - &lp.values)?;
            let k3 = ((d.exp()? - &d)? - 1.0)?;
            total = Some((k3.mean_all()? * f64::from(self.kl))?);
        }
        if self.entropy > 0.0 {
            let bonus = (lp.entropy.mean_all()? * f64::from(-self.entropy))?;
            total = Some(match total {
                Some(t) => (t + bonus)?,
                None => bonus,
            });
        }
        Ok(total)
    }
}

/// The mean k3 estimate of KL(current ‖ reference) over paired per-token log-probabilities.
pub fn mean_k3(current: &[f32], reference: &[f32]) -> f32 {
    let n = current.len().min(reference.len());
    if n == 0 {
        return 0.0;
    }
    let sum: f64 = current
        .iter()
        .zip(reference)
        .map(|(c, r)| {
            let d = f64::from(r - c);
            d.exp() - d - 1.0
        })
        .sum();
    (sum / n as f64) as f32
}

/// Behaviour cloning: minus the mean over samples of each response's token-mean
/// log-likelihood (TTI's loss).
pub fn fbc_loss(lp: &TokenLogprobs) -> Result<Tensor, TrainError> {
    let samples = lp.offsets.len() - 1;
    let mut per_token = Vec::with_capacity(lp.values.dim(0)?);
    for w in lp.offsets.windows(2) {
        let n = (w[1] - w[0]) as f32;
        per_token.extend(std::iter::repeat_n(1.0 / (n * samples as f32), w[1] - w[0]));
    }
    let weights = Tensor::from_vec(per_token, lp.values.dims(), lp.values.device())?;
    Ok((lp.values.mul(&weights)?.sum_all()? * -1.0)?)
}

/// Figures of one GRPO loss evaluation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GrpoStats {
    /// Tokens that counted.
    pub tokens: usize,
    /// Tokens dropped for a behaviour importance weight over the cap.
    pub dropped_stale: usize,
    /// Fraction of counted tokens whose ratio was clipped.
    pub clipped: f32,
    /// Mean ratio of counted tokens.
    pub mean_ratio: f32,
}

impl GrpoStats {
    /// Adds another batch's figures (means weighted by tokens).
    pub fn merge(&mut self, s: &GrpoStats) {
        let n = (self.tokens + s.tokens).max(1) as f32;
        self.mean_ratio =
            (self.mean_ratio * self.tokens as f32 + s.mean_ratio * s.tokens as f32) / n;
        self.clipped = (self.clipped * self.tokens as f32 + s.clipped * s.tokens as f32) / n;
        self.tokens += s.tokens;
        self.dropped_stale += s.dropped_stale;
    }
}

/// The GRPO loss of a batch: `current` log-probabilities (with gradients), `proximal` ones
/// (the same weights at the start of this update, no gradient) and the stored behaviour
/// ones. Each token carries its sample's advantage; the ratio current/proximal is clipped
/// (PPO, with the dual clip for negative advantages), and the behaviour importance weight
/// proximal/behaviour corrects for rollouts by an older version, its tokens dropped past
/// the cap (AReaL's decoupled PPO, as AsyncWebRL runs it).
pub fn grpo_loss(
    current: &TokenLogprobs,
    proximal: &[f32],
    batch: &[&Sample],
    cfg: &GrpoConfig,
) -> Result<(Tensor, GrpoStats), TrainError> {
    let dev = current.values.device();
    let n = current.values.dim(0)?;
    if proximal.len() != n {
        return Err(TrainError::Input(format!(
            "{} proximal log-probabilities for {n} tokens",
            proximal.len()
        )));
    }
    let cur = current.values.to_vec1::<f32>()?;
    let mut adv = Vec::with_capacity(n);
    let mut weight = Vec::with_capacity(n);
    let mut cap = Vec::with_capacity(n);
    let mut stats = GrpoStats::default();
    let (mut ratio_sum, mut clipped) = (0f32, 0usize);
    for (s, w) in batch.iter().zip(current.offsets.windows(2)) {
        for (j, k) in (w[0]..w[1]).enumerate() {
            let a = s.advantage;
            let behaviour = s.behaviour_logprobs.get(j).copied().unwrap_or(proximal[k]);
            let iw = (proximal[k] - behaviour).exp();
            let keep = iw <= cfg.behaviour_cap;
            adv.push(a);
            cap.push(if a < 0.0 {
                cfg.dual_clip * -a
            } else {
                f32::MAX
            });
            if keep {
                weight.push(iw);
                stats.tokens += 1;
                let r = (cur[k] - proximal[k]).exp();
                ratio_sum += r;
                clipped += usize::from((r - 1.0).abs() > cfg.clip);
            } else {
                weight.push(0.0);
                stats.dropped_stale += 1;
            }
        }
    }
    stats.mean_ratio = ratio_sum / stats.tokens.max(1) as f32;
    stats.clipped = clipped as f32 / stats.tokens.max(1) as f32;
    let t = |v: Vec<f32>| Tensor::from_vec(v, n, dev);
    let (adv, weight, cap) = (t(adv)?, t(weight)?, t(cap)?);
    let proximal = t(proximal.to_vec())?;
    let ratio = (&current.values - &proximal)?.exp()?;
    let surr1 = ratio.mul(&adv)?;
    let surr2 = ratio
        .clamp(1.0 - f64::from(cfg.clip), 1.0 + f64::from(cfg.clip))?
        .mul(&adv)?;
    let pg = surr1.minimum(&surr2)?.neg()?.minimum(&cap)?;
    let loss = (pg.mul(&weight)?.sum_all()? / stats.tokens.max(1) as f64)?;
    Ok((loss, stats))
}
