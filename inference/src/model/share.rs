//! Prompts shared within a batch: the k samples of a GRPO group are k requests with one
//! prompt, and the prompt is nearly all of their work (a few hundred tokens of prefill
//! against a few tokens of action). [`Model::generate`] prefills each distinct prompt once
//! and copies its key/value cache to every row that repeats it; decoding then goes on row
//! by row as before, each row with its own sampling seed.
//!
//! Rows are shared only when their token ids are equal and they carry no image: images are
//! not compared, so a prompt with one is always prefilled on its own.

use ort::value::{DynValue, PrimitiveTensorElementType, Tensor, TensorElementType};

use super::{Model, Past, Prompt, rt};
use crate::OnnxError;

/// Prefill work done and saved by sharing, since the model was loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefillStats {
    /// Prompt tokens the decoder was run on.
    pub tokens: u64,
    /// Prompt tokens of rows that took a shared prefill instead.
    pub saved: u64,
    /// Prompt tokens taken from the prefix cache (an earlier request's) instead of run.
    pub cached: u64,
}

impl PrefillStats {
    /// The share of prompt tokens that were not prefilled again, shared in a batch or
    /// cached from an earlier request (0 before any).
    pub fn saved_fraction(&self) -> f64 {
        let all = self.tokens + self.saved + self.cached;
        if all == 0 {
            0.0
        } else {
            (self.saved + self.cached) as f64 / all as f64
        }
    }
}

/// The rows to prefill (the first row of each distinct prompt, in order) and, for every
/// row, the index among those of the prefill it takes. Without `share`, every row is its
/// own.
pub(super) fn distinct_rows(
    ids: &[Vec<u32>],
    prompts: &[Prompt],
    share: bool,
) -> (Vec<usize>, Vec<usize>) {
    let mut firsts: Vec<usize> = Vec::new();
    let mut of_row = Vec::with_capacity(ids.len());
    for (row, (tokens, prompt)) in ids.iter().zip(prompts).enumerate() {
        let same = share && prompt.images.is_empty();
        let earlier = firsts
            .iter()
            .position(|&f| same && prompts[f].images.is_empty() && ids[f] == *tokens);
        match earlier {
            Some(i) => of_row.push(i),
            None => {
                of_row.push(firsts.len());
                firsts.push(row);
            }
        }
    }
    (firsts, of_row)
}

/// A batch right after its prefill: what decoding starts from.
pub(super) struct Prefilled {
    /// The last position's logits, per row.
    pub(super) logits: Vec<Vec<f32>>,
    pub(super) past: Past,
    /// The attention mask, `[rows, prompt length]`, flat.
    pub(super) mask: Vec<i64>,
    /// Each row's next position.
    pub(super) next_pos: Vec<i64>,
    /// The width of an embedding row.
    pub(super) hidden: usize,
}

impl Model {
    /// `pre` (one row per distinct prompt) spread to the batch's rows: row `r` takes row
    /// `of_row[r]`'s logits, cache, mask and next position.
    pub(super) fn spread(&self, pre: Prefilled, of_row: &[usize]) -> Result<Prefilled, OnnxError> {
        let distinct = pre.next_pos.len().max(1);
        let width = pre.mask.len() / distinct;
        let past = pre
            .past
            .into_iter()
            .map(|(name, v)| {
                let v = match self.kv_type {
                    TensorElementType::Float16 => gather::<half::f16>(&v, of_row)?,
                    _ => gather::<f32>(&v, of_row)?,
                };
                Ok((name, v))
            })
            .collect::<Result<Past, OnnxError>>()?;
        Ok(Prefilled {
            logits: of_row.iter().map(|&i| pre.logits[i].clone()).collect(),
            past,
            mask: of_row
                .iter()
                .flat_map(|&i| pre.mask[i * width..(i + 1) * width].iter().copied())
                .collect(),
            next_pos: of_row.iter().map(|&i| pre.next_pos[i]).collect(),
            hidden: pre.hidden,
        })
    }
}

/// The tensor with its first axis (the batch) re-indexed: row `r` of the result is row
/// `rows[r]` of `v`.
fn gather<T: PrimitiveTensorElementType + Copy + std::fmt::Debug + 'static>(
    v: &DynValue,
    rows: &[usize],
) -> Result<DynValue, OnnxError> {
    let (shape, data) = v.try_extract_tensor::<T>().map_err(rt)?;
    let mut dims: Vec<usize> = shape.iter().map(|d| (*d).max(0) as usize).collect();
    let Some(first) = dims.first().copied().filter(|n| *n > 0) else {
        return Err(OnnxError::Model(format!(
            "a key/value cache of shape {shape:?} has no batch rows"
        )));
    };
    let per_row = data.len() / first;
    let mut out = Vec::with_capacity(rows.len() * per_row);
    for &r in rows {
        let row = data.get(r * per_row..(r + 1) * per_row).ok_or_else(|| {
            OnnxError::Model(format!("row {r} of a key/value cache with {first} rows"))
        })?;
        out.extend_from_slice(row);
    }
    dims[0] = rows.len();
    Ok(Tensor::from_array((dims, out)).map_err(rt)?.into_dyn())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_with_equal_tokens_share_one_prefill_and_others_keep_their_own() {
        let ids = vec![vec![1, 2, 3], vec![1, 2], vec![1, 2, 3], vec![1, 2, 3]];
        let prompts: Vec<Prompt> = ["a", "b", "a", "a"].map(Prompt::text_only).into();
        assert_eq!(
            distinct_rows(&ids, &prompts, true),
            (vec![0, 1], vec![0, 1, 0, 0])
        );
        assert_eq!(
            distinct_rows(&ids, &prompts, false),
            (vec![0, 1, 2, 3], vec![0, 1, 2, 3])
        );
    }

    #[test]
    fn the_saved_fraction_counts_every_prompt_token() {
        let s = PrefillStats {
            tokens: 100,
            saved: 200,
            cached: 100,
        };
        assert!((s.saved_fraction() - 0.75).abs() < 1e-12);
        assert_eq!(PrefillStats::default().saved_fraction(), 0.0);
    }
}
