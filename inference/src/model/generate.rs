//! The generation loop (batched, left-padded, optionally grammar-constrained) and
//! teacher-forced scoring, with sampling and the grammar mask.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::share::Prefilled;
use super::{Finish, GenParams, Generation, Model, Pixels, Prompt};
use crate::OnnxError;
use crate::grammar::{ActionGrammar, TokenBytes};

impl Model {
    /// Teacher-forced scoring: the log-probability of each token of `continuation` after
    /// `prompt`, from one forward pass over prompt and continuation together (no KV cache).
    /// What a trainer recomputes for a stored action, and an independent check of the
    /// log-probabilities [`Model::generate`] records while decoding. A prompt with a
    /// grammar is scored under it (the masked, renormalised distribution).
    pub fn score(&mut self, prompt: &Prompt, continuation: &[u32]) -> Result<Vec<f32>, OnnxError> {
        let t = self.teacher_inputs(prompt, continuation)?;
        let (prompt_len, len) = (t.prompt_len, t.positions.len());
        let embeds = self.embeds_value(t.embeds, 1, len, t.hidden)?;
        let past = self.empty_past(1)?;
        let positions = self.position_values(&[t.positions], len);
        let (all, _) = self.decode_all(embeds, &vec![1i64; len], positions, past, 1, len)?;
        let vocab = all.len() / len;
        Ok(continuation
            .iter()
            .enumerate()
            .map(|(j, tok)| {
                // The logits at position p predict the token at p + 1.
                let row = &all[(prompt_len - 1 + j) * vocab..(prompt_len + j) * vocab];
                // Under a grammar, each token is scored against the masked distribution it
                // was sampled from (as `generate` records it).
                let masked: Vec<f32>;
                let row = match &t.allowed {
                    Some(sets) => {
                        masked = row
                            .iter()
                            .enumerate()
                            .map(|(id, l)| {
                                if sets[j].contains(id) {
                                    *l
                                } else {
                                    f32::NEG_INFINITY
                                }
                            })
                            .collect();
                        &masked[..]
                    }
                    None => row,
                };
                let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let sum: f64 = row.iter().map(|l| f64::from(l - max).exp()).sum();
                row.get(*tok as usize).map_or(f32::NEG_INFINITY, |l| {
                    (f64::from(l - max) - sum.ln()) as f32
                })
            })
            .collect())
    }

    /// Generates for a batch of prompts; `seeds[i]` drives prompt i's sampling, so a
    /// sequence's output does not depend on its batch companions.
    pub fn generate(
        &mut self,
        prompts: &[Prompt],
        params: &GenParams,
        seeds: &[u64],
    ) -> Result<Vec<Generation>, OnnxError> {
        let batch = prompts.len();
        if batch == 0 {
            return Ok(Vec::new());
        }
        let ids: Vec<Vec<u32>> = prompts
            .iter()
            .map(|p| self.encode(&p.text))
            .collect::<Result<_, _>>()?;
        if let Some(image_id) = self.cfg.image_token_id {
            for (p, ids) in prompts.iter().zip(&ids) {
                let slots = ids.iter().filter(|t| **t == image_id).count();
                let want: usize = p.images.iter().map(|i| i.tokens(&self.cfg)).sum();
                if slots != want {
                    return Err(OnnxError::Prompt(format!(
                        "the prompt has {slots} image tokens for {want} image features"
                    )));
                }
            }
        }
        // Rows that repeat an earlier row's prompt (a GRPO group's samples) take its prefill.
        let (firsts, of_row) = super::share::distinct_rows(&ids, prompts, self.share_prompts);
        let distinct_ids: Vec<Vec<u32>> = firsts.iter().map(|&r| ids[r].clone()).collect();
        let distinct: Vec<&Prompt> = firsts.iter().map(|&r| &prompts[r]).collect();
        let prefilled = self.prefill(&distinct_ids, &distinct)?;
        let total: u64 = ids.iter().map(|r| r.len() as u64).sum();
        let ran: u64 = distinct_ids.iter().map(|r| r.len() as u64).sum();
        self.prefill.tokens += ran;
        self.prefill.saved += total - ran;
        let Prefilled {
            mut logits,
            mut past,
            mut mask,
            mut next_pos,
            hidden,
        } = if firsts.len() < batch {
            self.spread(prefilled, &of_row)?
        } else {
            prefilled
        };
        let mut rngs: Vec<StdRng> = seeds.iter().map(|s| StdRng::seed_from_u64(*s)).collect();
        let mut out: Vec<Generation> = (0..batch)
            .map(|_| Generation {
                text: String::new(),
                tokens: Vec::new(),
                logprobs: Vec::new(),
                finish: Finish::Length,
            })
            .collect();
        let mut running = vec![true; batch];
        let mut grammars: Vec<Option<ActionGrammar>> =
            prompts.iter().map(|p| p.grammar.clone()).collect();
        if grammars.iter().any(Option::is_some) && self.token_bytes.is_none() {
            self.token_bytes = Some(std::sync::Arc::new(TokenBytes::of(&self.tokenizer)));
        }
        let bytes = self.token_bytes.clone();
        let bytes = bytes.as_deref();
        for _ in 0..params.max_new_tokens {
            let mut step_ids = Vec::with_capacity(batch);
            for b in 0..batch {
                if !running[b] {
                    step_ids.push(i64::from(self.cfg.pad_id));
                    continue;
                }
                let masked;
                let row = match (grammars[b].as_mut(), bytes) {
                    (Some(g), Some(bytes)) => {
                        masked = grammar_mask(&logits[b], g, bytes, &self.cfg.eos_ids);
                        if masked.iter().all(|l| *l == f32::NEG_INFINITY) {
                            // Nothing may follow (cannot happen with byte-level tokens).
                            running[b] = false;
                            step_ids.push(i64::from(self.cfg.pad_id));
                            continue;
                        }
                        &masked[..]
                    }
                    _ => &logits[b][..],
                };
                let (token, logprob) = choose(row, params, &mut rngs[b]);
                if let (Some(g), Some(bytes)) = (grammars[b].as_mut(), bytes)
                    && let Some(t) = bytes.get(token as usize)
                {
                    g.advance(t);
                }
                if self.cfg.eos_ids.contains(&token) {
                    running[b] = false;
                    out[b].finish = Finish::Eos;
                    step_ids.push(i64::from(self.cfg.pad_id));
                    continue;
                }
                out[b].tokens.push(token);
                out[b].logprobs.push(logprob);
                if !params.stop.is_empty() {
                    let text = self
                        .tokenizer
                        .decode(&out[b].tokens, true)
                        .unwrap_or_default();
                    if params.stop.iter().any(|s| text.contains(s.as_str())) {
                        running[b] = false;
                        out[b].finish = Finish::Stop;
                    }
                }
                step_ids.push(i64::from(token));
            }
            if !running.iter().any(|r| *r) {
                break;
            }
            let e = self.embed(step_ids, batch, 1)?;
            let e = self.embeds_value(e, batch, 1, hidden)?;
            // Every row attends to the new position (finished rows are ignored anyway).
            let old = mask.len() / batch;
            let mut grown = Vec::with_capacity(batch * (old + 1));
            for b in 0..batch {
                grown.extend_from_slice(&mask[b * old..(b + 1) * old]);
                grown.push(1);
            }
            mask = grown;
            // The same next position on all three M-RoPE axes.
            let axes = if self.mrope { 3 } else { 1 };
            let positions: Vec<i64> = next_pos.repeat(axes);
            let (l, p) = self.decode(e, &mask, positions, past, batch, 1)?;
            logits = l;
            past = p;
            for p in &mut next_pos {
                *p += 1;
            }
        }
        for g in &mut out {
            let mut text = self.tokenizer.decode(&g.tokens, true).unwrap_or_default();
            if g.finish == Finish::Stop
                && let Some(cut) = params
                    .stop
                    .iter()
                    .filter_map(|s| text.find(s.as_str()))
                    .min()
            {
                text.truncate(cut);
            }
            g.text = text;
        }
        Ok(out)
    }

    /// Embeds the prompts (`ids` are their tokens), splices in their images' features and
    /// runs the decoder over them, left-padded to the longest: the cache and logits that
    /// decoding starts from.
    fn prefill(&mut self, ids: &[Vec<u32>], prompts: &[&Prompt]) -> Result<Prefilled, OnnxError> {
        let batch = prompts.len();
        let len = ids.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let mut flat = Vec::with_capacity(batch * len);
        let mut mask = Vec::with_capacity(batch * len);
        for row in ids {
            let pad = len - row.len();
            flat.extend(std::iter::repeat_n(i64::from(self.cfg.pad_id), pad));
            flat.extend(row.iter().map(|t| i64::from(*t)));
            mask.extend(std::iter::repeat_n(0i64, pad));
            mask.extend(std::iter::repeat_n(1i64, row.len()));
        }
        // Padded positions get 1 (their value is masked out anyway); each row decodes on from
        // its own largest position (its length without M-RoPE).
        let rows: Vec<Vec<[i64; 3]>> = ids
            .iter()
            .zip(prompts)
            .map(|(r, p)| self.prompt_positions(r, &p.images))
            .collect::<Result<_, _>>()?;
        let next_pos: Vec<i64> = rows
            .iter()
            .map(|r| r.iter().flatten().max().map_or(0, |m| m + 1))
            .collect();
        let positions = self.position_values(&rows, len);
        let mut embeds = self.embed(flat.clone(), batch, len)?;
        let hidden = embeds.len() / (batch * len);
        if let Some(image_id) = self.cfg.image_token_id {
            let images: Vec<&Pixels> = prompts.iter().flat_map(|p| &p.images).collect();
            if !images.is_empty() {
                let features = self.image_features(&images)?;
                let mut rows = features.chunks_exact(hidden);
                for (i, t) in flat.iter().enumerate() {
                    if *t == i64::from(image_id) {
                        let row = rows.next().ok_or_else(|| {
                            OnnxError::Prompt("fewer image features than image tokens".into())
                        })?;
                        embeds[i * hidden..(i + 1) * hidden].copy_from_slice(row);
                    }
                }
            }
        }
        let embeds = self.embeds_value(embeds, batch, len, hidden)?;
        let past = self.empty_past(batch)?;
        let (logits, past) = self.decode(embeds, &mask, positions, past, batch, len)?;
        Ok(Prefilled {
            logits,
            past,
            mask,
            next_pos,
            hidden,
        })
    }
}

/// The logits with every token the grammar does not allow next set to minus infinity; the
/// end of text (EOS) only where the text so far is a whole action. Sampling from these is
/// sampling from the model conditioned on the grammar, and the log-probabilities reported
/// are of that distribution (the one the actions were drawn from).
fn grammar_mask(
    logits: &[f32],
    g: &mut ActionGrammar,
    bytes: &TokenBytes,
    eos: &[u32],
) -> Vec<f32> {
    let mut out = vec![f32::NEG_INFINITY; logits.len()];
    for (id, l) in logits.iter().enumerate() {
        if let Some(b) = bytes.get(id)
            && g.allows(b)
        {
            out[id] = *l;
        }
    }
    if g.complete() {
        for e in eos {
            if let Some(l) = logits.get(*e as usize) {
                out[*e as usize] = *l;
            }
        }
    }
    out
}

/// Picks the next token and its log-probability under the model (temperature 1).
fn choose(logits: &[f32], p: &GenParams, rng: &mut StdRng) -> (u32, f32) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let log_z = max + logits.iter().map(|l| (l - max).exp()).sum::<f32>().ln();
    let token = if p.temperature <= 0.0 {
        logits
            .iter()
            .enumerate()
            .fold((0, f32::NEG_INFINITY), |best, (i, l)| {
                if *l > best.1 { (i, *l) } else { best }
            })
            .0
    } else {
        let t = p.temperature;
        let mut probs: Vec<(usize, f32)> = logits
            .iter()
            .enumerate()
            .map(|(i, l)| (i, ((l - max) / t).exp()))
            .collect();
        probs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let total: f32 = probs.iter().map(|x| x.1).sum();
        let mut kept = Vec::new();
        let mut mass = 0.0;
        for (i, w) in probs {
            kept.push((i, w));
            mass += w / total;
            if mass >= p.top_p.clamp(0.0, 1.0) {
                break;
            }
        }
        let kept_total: f32 = kept.iter().map(|x| x.1).sum();
        let mut r = rng.random::<f32>() * kept_total;
        let mut pick = kept[kept.len() - 1].0;
        for (i, w) in kept {
            if r < w {
                pick = i;
                break;
            }
            r -= w;
        }
        pick
    };
    (token as u32, logits[token] - log_z)
}
