//! Teacher forcing: the decoder's inputs for a prompt followed by a given continuation, as
//! generation built them. Scoring runs them through the decoder here; the trainer runs
//! them through its own differentiable copy of the decoder, so both see exactly what the
//! policy saw (same template, same image expansion, same positions, the stored token ids,
//! the same grammar mask).

use super::{Model, Pixels, Prompt};
use crate::OnnxError;
use crate::grammar::TokenBytes;

/// A set of token ids (what a grammar allows next), as a bitset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSet {
    bits: Vec<u64>,
}

impl TokenSet {
    /// The empty set over a vocabulary of `vocab` tokens.
    pub fn empty(vocab: usize) -> Self {
        Self {
            bits: vec![0; vocab.div_ceil(64)],
        }
    }

    /// Adds a token (ids past the vocabulary are ignored).
    pub fn insert(&mut self, id: usize) {
        if let Some(w) = self.bits.get_mut(id / 64) {
            *w |= 1 << (id % 64);
        }
    }

    /// Whether the set holds `id`.
    pub fn contains(&self, id: usize) -> bool {
        self.bits
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    /// How many ids the set holds.
    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|w| *w == 0)
    }
}

/// The decoder's inputs for prompt + continuation.
#[derive(Debug, Clone)]
pub struct TeacherInputs {
    /// Input embeddings, `[len, hidden]` row-major: token embeddings with the vision
    /// encoder's features in the image-token rows.
    pub embeds: Vec<f32>,
    /// Embedding width.
    pub hidden: usize,
    /// Each token's position `[t, h, w]` (equal unless the decoder uses M-RoPE).
    pub positions: Vec<[i64; 3]>,
    /// Prompt tokens (the continuation starts after them).
    pub prompt_len: usize,
    /// Under a grammar: the tokens it allowed at each continuation position.
    pub allowed: Option<Vec<TokenSet>>,
}

impl Model {
    /// The decoder's inputs for `prompt` followed by `continuation` (stored token ids).
    pub fn teacher_inputs(
        &mut self,
        prompt: &Prompt,
        continuation: &[u32],
    ) -> Result<TeacherInputs, OnnxError> {
        let mut ids = self.encode(&prompt.text)?;
        let prompt_len = ids.len();
        if prompt_len == 0 {
            return Err(OnnxError::Prompt("empty prompt".into()));
        }
        ids.extend_from_slice(continuation);
        let len = ids.len();
        let flat: Vec<i64> = ids.iter().map(|t| i64::from(*t)).collect();
        let mut embeds = self.embed(flat.clone(), 1, len)?;
        let hidden = embeds.len() / len;
        if let Some(image_id) = self.cfg.image_token_id
            && !prompt.images.is_empty()
        {
            let images: Vec<&Pixels> = prompt.images.iter().collect();
            let features = self.image_features(&images)?;
            let mut rows = features.chunks_exact(hidden);
            for (i, t) in flat[..prompt_len].iter().enumerate() {
                if *t == i64::from(image_id) {
                    let row = rows.next().ok_or_else(|| {
                        OnnxError::Prompt("fewer image features than image tokens".into())
                    })?;
                    embeds[i * hidden..(i + 1) * hidden].copy_from_slice(row);
                }
            }
        }
        // The continuation goes on from the prompt's largest position, as decoding does.
        let mut positions = self.prompt_positions(&ids[..prompt_len], &prompt.images)?;
        let next = positions.iter().flatten().max().map_or(0, |m| m + 1);
        positions.extend((0..continuation.len() as i64).map(|j| [next + j; 3]));
        let allowed = match prompt.grammar.clone() {
            None => None,
            Some(mut g) => {
                if self.token_bytes.is_none() {
                    self.token_bytes = Some(std::sync::Arc::new(TokenBytes::of(&self.tokenizer)));
                }
                let bytes = self.token_bytes.clone().expect("just set");
                let vocab = self.cfg.vocab;
                let mut sets = Vec::with_capacity(continuation.len());
                for t in continuation {
                    let mut set = TokenSet::empty(vocab);
                    for id in 0..vocab.min(bytes.len()) {
                        if let Some(b) = bytes.get(id)
                            && g.allows(b)
                        {
                            set.insert(id);
                        }
                    }
                    // End of text is allowed where the text so far is a whole action (as in
                    // generation); a stored continuation never holds it, but the mask must
                    // give it its share of the distribution.
                    if g.complete() {
                        for e in &self.cfg.eos_ids {
                            set.insert(*e as usize);
                        }
                    }
                    if let Some(b) = bytes.get(*t as usize) {
                        g.advance(b);
                    }
                    sets.push(set);
                }
                Some(sets)
            }
        };
        Ok(TeacherInputs {
            embeds,
            hidden,
            positions,
            prompt_len,
            allowed,
        })
    }
}
