//! The generation loop (batched, left-padded, optionally grammar-constrained) and
//! teacher-forced scoring, with sampling and the grammar mask.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::prefix::Kv;
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
        let cached_before = self.prefill.cached;
        let prefilled = self.prefill(&distinct_ids, &distinct)?;
        let cached = self.prefill.cached - cached_before;
        let total: u64 = ids.iter().map(|r| r.len() as u64).sum();
        let distinct_total: u64 = distinct_ids.iter().map(|r| r.len() as u64).sum();
        self.prefill.tokens += distinct_total - cached;
        self.prefill.saved += total - distinct_total;
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

    /// The cache and logits that decoding starts from: each prompt's cached prefix taken
    /// from the prefix cache (`prefix.rs`) and only the rest run, the prompts that found
    /// none prefilled together; then what is new of them cached.
    fn prefill(&mut self, ids: &[Vec<u32>], prompts: &[&Prompt]) -> Result<Prefilled, OnnxError> {
        let Some(cache) = self.prefix.as_mut() else {
            return self.prefill_batch(ids, prompts);
        };
        let image_id = self.cfg.image_token_id;
        // The part of a prompt a cache may hold: its tokens before its first image.
        let cacheable: Vec<usize> = ids
            .iter()
            .map(|r| {
                r.iter()
                    .position(|t| Some(*t) == image_id)
                    .unwrap_or(r.len())
            })
            .collect();
        // At least the last token is always run: its logits start decoding.
        let found: Vec<Vec<u64>> = ids
            .iter()
            .zip(&cacheable)
            .map(|(r, c)| cache.lookup(r, (*c).min(r.len().saturating_sub(1))))
            .collect();
        let cold: Vec<usize> = (0..ids.len()).filter(|r| found[*r].is_empty()).collect();
        if cold.len() == ids.len() {
            let pre = self.prefill_batch(ids, prompts)?;
            let width = pre.mask.len() / ids.len().max(1);
            for (r, row) in ids.iter().enumerate() {
                let pad = width - row.len();
                self.cache_row(row, cacheable[r], &pre.past, r, pad)?;
            }
            return Ok(pre);
        }
        let mut rows: Vec<Option<RowPrefill>> = (0..ids.len()).map(|_| None).collect();
        let mut hidden = 0;
        if !cold.is_empty() {
            let cold_ids: Vec<Vec<u32>> = cold.iter().map(|&r| ids[r].clone()).collect();
            let cold_prompts: Vec<&Prompt> = cold.iter().map(|&r| prompts[r]).collect();
            let pre = self.prefill_batch(&cold_ids, &cold_prompts)?;
            hidden = pre.hidden;
            let width = pre.mask.len() / cold.len();
            for (j, &r) in cold.iter().enumerate() {
                let pad = width - ids[r].len();
                let kv = pre
                    .past
                    .iter()
                    .map(|(_, v)| Kv::of_row(v, self.kv_type, j, pad, width))
                    .collect::<Result<Vec<_>, _>>()?;
                rows[r] = Some(RowPrefill {
                    logits: pre.logits[j].clone(),
                    kv,
                    next_pos: pre.next_pos[j],
                });
            }
        }
        for r in 0..ids.len() {
            if found[r].is_empty() {
                continue;
            }
            let row = self.prefill_after(&ids[r], prompts[r], &found[r])?;
            hidden = row.1;
            rows[r] = Some(row.0);
        }
        let rows: Vec<RowPrefill> = rows
            .into_iter()
            .map(|r| r.ok_or_else(|| OnnxError::Model("a prompt was not prefilled".into())))
            .collect::<Result<_, _>>()?;
        let (heads, dim) = (self.cfg.kv_heads, self.cfg.head_dim);
        for (r, row) in rows.iter().enumerate() {
            if let Some(cache) = self.prefix.as_mut() {
                cache.insert(&ids[r], cacheable[r], |from, to| {
                    row.kv
                        .iter()
                        .map(|kv| kv.positions(heads, dim, from, to))
                        .collect()
                })?;
            }
        }
        self.merge(rows, ids, hidden)
    }

    /// Caches the new blocks of row `row` of a batch's past (left-padded by `pad`).
    fn cache_row(
        &mut self,
        ids: &[u32],
        cacheable: usize,
        past: &super::Past,
        row: usize,
        pad: usize,
    ) -> Result<(), OnnxError> {
        let ty = self.kv_type;
        let Some(cache) = self.prefix.as_mut() else {
            return Ok(());
        };
        cache.insert(ids, cacheable, |from, to| {
            past.iter()
                .map(|(_, v)| Kv::of_row(v, ty, row, pad + from, pad + to))
                .collect()
        })
    }

    /// One prompt whose first blocks are cached: only the rest of it is run, after them.
    /// Returns the row and the width of an embedding row.
    fn prefill_after(
        &mut self,
        ids: &[u32],
        prompt: &Prompt,
        found: &[u64],
    ) -> Result<(RowPrefill, usize), OnnxError> {
        let (heads, dim) = (self.cfg.kv_heads, self.cfg.head_dim);
        let cache = self
            .prefix
            .as_ref()
            .ok_or_else(|| OnnxError::Model("no prefix cache".into()))?;
        let done = found.len() * super::prefix::BLOCK;
        let cached = cache.past(found, heads, dim)?;
        let names: Vec<String> = self.empty_past(1)?.into_iter().map(|(n, _)| n).collect();
        let past: super::Past = names
            .into_iter()
            .zip(&cached)
            .map(|(n, kv)| Ok((n, Kv::stack(&[kv], heads, dim, done)?)))
            .collect::<Result<_, OnnxError>>()?;
        let rest: Vec<i64> = ids[done..].iter().map(|t| i64::from(*t)).collect();
        let n = rest.len();
        let mut embeds = self.embed(rest.clone(), 1, n)?;
        let hidden = embeds.len() / n.max(1);
        self.splice_images(&mut embeds, &rest, &[prompt], hidden)?;
        let positions = self.prompt_positions(ids, &prompt.images)?;
        let next_pos = positions.iter().flatten().max().map_or(0, |m| m + 1);
        let positions = self.position_values(&[positions[done..].to_vec()], n);
        let embeds = self.embeds_value(embeds, 1, n, hidden)?;
        let (mut logits, present) =
            self.decode(embeds, &vec![1i64; ids.len()], positions, past, 1, n)?;
        self.prefill.cached += done as u64;
        let kv = present
            .iter()
            .map(|(_, v)| Kv::of_row(v, self.kv_type, 0, 0, ids.len()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((
            RowPrefill {
                logits: logits.remove(0),
                kv,
                next_pos,
            },
            hidden,
        ))
    }

    /// Rows prefilled apart, as one batch: each row's past left-padded to the longest.
    fn merge(
        &self,
        rows: Vec<RowPrefill>,
        ids: &[Vec<u32>],
        hidden: usize,
    ) -> Result<Prefilled, OnnxError> {
        let (heads, dim) = (self.cfg.kv_heads, self.cfg.head_dim);
        let width = ids.iter().map(Vec::len).max().unwrap_or(0);
        let names: Vec<String> = self.empty_past(1)?.into_iter().map(|(n, _)| n).collect();
        let past = names
            .into_iter()
            .enumerate()
            .map(|(t, name)| {
                let parts: Vec<&Kv> = rows.iter().map(|r| &r.kv[t]).collect();
                Ok((name, Kv::stack(&parts, heads, dim, width)?))
            })
            .collect::<Result<super::Past, OnnxError>>()?;
        let mut mask = Vec::with_capacity(rows.len() * width);
        for row in ids {
            mask.extend(std::iter::repeat_n(0i64, width - row.len()));
            mask.extend(std::iter::repeat_n(1i64, row.len()));
        }
        Ok(Prefilled {
            logits: rows.iter().map(|r| r.logits.clone()).collect(),
            past,
            mask,
            next_pos: rows.iter().map(|r| r.next_pos).collect(),
            hidden,
        })
    }

    /// Replaces the embedding rows of image tokens (in `flat`, the prompts' tokens in
    /// order) with the prompts' image features, in order.
    fn splice_images(
        &mut self,
        embeds: &mut [f32],
        flat: &[i64],
        prompts: &[&Prompt],
        hidden: usize,
    ) -> Result<(), OnnxError> {
        let Some(image_id) = self.cfg.image_token_id else {
            return Ok(());
        };
        let images: Vec<&Pixels> = prompts.iter().flat_map(|p| &p.images).collect();
        if images.is_empty() {
            return Ok(());
        }
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
        Ok(())
    }

    /// Embeds the prompts (`ids` are their tokens), splices in their images' features and
    /// runs the decoder over them, left-padded to the longest: the cache and logits that
    /// decoding starts from.
    fn prefill_batch(
        &mut self,
        ids: &[Vec<u32>],
        prompts: &[&Prompt],
    ) -> Result<Prefilled, OnnxError> {
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
        self.splice_images(&mut embeds, &flat, prompts, hidden)?;
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

/// One prompt's prefill, apart from its batch: its last logits, each past tensor's values
/// at its positions (unpadded), and its next position.
struct RowPrefill {
    logits: Vec<f32>,
    kv: Vec<Kv>,
    next_pos: i64,
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
