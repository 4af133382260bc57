//! Prompt prefixes cached across requests: the key/value cache of a prompt's first tokens,
//! kept after its prefill and reused by any later prompt that starts with the same tokens
//! (every step of an episode repeats its system text and task; the samples of a GRPO
//! group that were not batched together repeat a whole prompt).
//!
//! As vLLM's automatic prefix caching does, prompts are cut into blocks of [`BLOCK`]
//! tokens, each block named by a hash chained over every block before it, so a block is
//! found only after the very same tokens; a hit also compares the block's own tokens, so
//! a hash collision costs a miss, never a wrong cache. Only whole blocks before a
//! prompt's first image token are cached (an image's features are not in its tokens),
//! and at least one token of every prompt is always run (its logits start decoding).
//! Memory is bounded by a byte budget with least-recently-used eviction. The cache lives
//! in the loaded [`Model`](super::Model): a new version is a new model, with a cache of
//! its own, so no version ever reads another's keys and values.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use half::f16;
use ort::value::{DynValue, PrimitiveTensorElementType, Tensor, TensorElementType};

use super::rt;
use crate::OnnxError;

/// Tokens per cached block.
pub const BLOCK: usize = 16;

/// One past tensor's values for some positions of one row: `[kv_heads, positions,
/// head_dim]`, flat.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kv {
    F16(Vec<f16>),
    F32(Vec<f32>),
}

/// Positions `[from, to)` of row `row` of a `[batch, heads, seq, dim]` tensor.
fn slice_row<T: Copy>(
    shape: &[i64],
    data: &[T],
    row: usize,
    from: usize,
    to: usize,
) -> Result<Vec<T>, OnnxError> {
    let [batch, heads, seq, dim] = shape else {
        return Err(OnnxError::Model(format!(
            "a key/value cache of shape {shape:?} is not [batch, heads, seq, dim]"
        )));
    };
    let (batch, heads, seq, dim) = (
        *batch as usize,
        *heads as usize,
        *seq as usize,
        *dim as usize,
    );
    if row >= batch || from > to || to > seq {
        return Err(OnnxError::Model(format!(
            "positions {from}..{to} of row {row} of a key/value cache of shape {shape:?}"
        )));
    }
    let mut out = Vec::with_capacity(heads * (to - from) * dim);
    for h in 0..heads {
        let base = ((row * heads + h) * seq) * dim;
        out.extend_from_slice(&data[base + from * dim..base + to * dim]);
    }
    Ok(out)
}

/// `parts` (each `[heads, n_i, dim]`) joined along the positions.
fn concat<T: Copy>(parts: &[&[T]], heads: usize, dim: usize) -> Vec<T> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut out = Vec::with_capacity(total);
    for h in 0..heads {
        for p in parts {
            let n = p.len() / (heads * dim);
            out.extend_from_slice(&p[h * n * dim..(h + 1) * n * dim]);
        }
    }
    out
}

/// `rows` (each `[heads, n_r, dim]`) stacked into `[rows, heads, width, dim]`, each row
/// left-padded with zeros to `width` (its padding is masked out).
fn stack<T: PrimitiveTensorElementType + Copy + Default + std::fmt::Debug + 'static>(
    rows: &[&[T]],
    heads: usize,
    dim: usize,
    width: usize,
) -> Result<DynValue, OnnxError> {
    let mut out = Vec::with_capacity(rows.len() * heads * width * dim);
    for r in rows {
        let n = r.len() / (heads * dim).max(1);
        for h in 0..heads {
            out.extend(std::iter::repeat_n(T::default(), (width - n) * dim));
            out.extend_from_slice(&r[h * n * dim..(h + 1) * n * dim]);
        }
    }
    Ok(Tensor::from_array(([rows.len(), heads, width, dim], out))
        .map_err(rt)?
        .into_dyn())
}

impl Kv {
    /// Positions `[from, to)` of row `row` of a past tensor.
    pub(super) fn of_row(
        v: &DynValue,
        ty: TensorElementType,
        row: usize,
        from: usize,
        to: usize,
    ) -> Result<Kv, OnnxError> {
        Ok(match ty {
            TensorElementType::Float16 => {
                let (shape, data) = v.try_extract_tensor::<f16>().map_err(rt)?;
                Kv::F16(slice_row(shape, data, row, from, to)?)
            }
            _ => {
                let (shape, data) = v.try_extract_tensor::<f32>().map_err(rt)?;
                Kv::F32(slice_row(shape, data, row, from, to)?)
            }
        })
    }

    /// Positions `[from, to)` of a `[heads, n, dim]` slice.
    pub(super) fn positions(
        &self,
        heads: usize,
        dim: usize,
        from: usize,
        to: usize,
    ) -> Result<Kv, OnnxError> {
        fn cut<T: Copy>(v: &[T], heads: usize, dim: usize, from: usize, to: usize) -> Vec<T> {
            let n = v.len() / (heads * dim).max(1);
            let mut out = Vec::with_capacity(heads * (to - from) * dim);
            for h in 0..heads {
                out.extend_from_slice(&v[(h * n + from) * dim..(h * n + to) * dim]);
            }
            out
        }
        let n = match self {
            Kv::F16(v) => v.len(),
            Kv::F32(v) => v.len(),
        } / (heads * dim).max(1);
        if from > to || to > n {
            return Err(OnnxError::Model(format!(
                "positions {from}..{to} of a key/value slice of {n}"
            )));
        }
        Ok(match self {
            Kv::F16(v) => Kv::F16(cut(v, heads, dim, from, to)),
            Kv::F32(v) => Kv::F32(cut(v, heads, dim, from, to)),
        })
    }

    fn bytes(&self) -> usize {
        match self {
            Kv::F16(v) => v.len() * 2,
            Kv::F32(v) => v.len() * 4,
        }
    }

    /// `parts` joined along the positions (all of one element type).
    pub(super) fn concat(parts: &[&Kv], heads: usize, dim: usize) -> Result<Kv, OnnxError> {
        Ok(match parts.first() {
            Some(Kv::F16(_)) => Kv::F16(concat(&f16_slices(parts)?, heads, dim)),
            _ => Kv::F32(concat(&f32_slices(parts)?, heads, dim)),
        })
    }

    /// `rows` stacked into one past tensor, left-padded to `width` positions.
    pub(super) fn stack(
        rows: &[&Kv],
        heads: usize,
        dim: usize,
        width: usize,
    ) -> Result<DynValue, OnnxError> {
        match rows.first() {
            Some(Kv::F16(_)) => stack(&f16_slices(rows)?, heads, dim, width),
            _ => stack(&f32_slices(rows)?, heads, dim, width),
        }
    }
}

fn mixed() -> OnnxError {
    OnnxError::Model("key/value slices of two element types".into())
}

/// Each slice's f16 values; an f32 one is an error.
fn f16_slices<'a>(parts: &[&'a Kv]) -> Result<Vec<&'a [f16]>, OnnxError> {
    parts
        .iter()
        .map(|p| match p {
            Kv::F16(v) => Ok(&v[..]),
            Kv::F32(_) => Err(mixed()),
        })
        .collect()
}

/// Each slice's f32 values; an f16 one is an error.
fn f32_slices<'a>(parts: &[&'a Kv]) -> Result<Vec<&'a [f32]>, OnnxError> {
    parts
        .iter()
        .map(|p| match p {
            Kv::F32(v) => Ok(&v[..]),
            Kv::F16(_) => Err(mixed()),
        })
        .collect()
}

/// One cached block: its tokens, and each past tensor's values at its positions.
struct Block {
    tokens: Vec<u32>,
    kv: Vec<Kv>,
    bytes: usize,
    last_used: u64,
}

/// What the cache did, since the model was loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefixCacheStats {
    /// Prompts looked up.
    pub lookups: u64,
    /// Prompts that found at least one cached block.
    pub hits: u64,
    /// Prompt tokens taken from the cache instead of prefilled.
    pub tokens: u64,
    /// Blocks evicted to stay within the budget.
    pub evicted: u64,
    /// Bytes held now.
    pub bytes: u64,
}

impl PrefixCacheStats {
    /// Share of lookups that found a cached prefix (0 before any).
    pub fn hit_rate(&self) -> f64 {
        if self.lookups == 0 {
            0.0
        } else {
            self.hits as f64 / self.lookups as f64
        }
    }
}

/// The cache.
pub(super) struct PrefixCache {
    budget: usize,
    blocks: HashMap<u64, Block>,
    tick: u64,
    pub(super) stats: PrefixCacheStats,
}

/// The chained hash of each whole block of `ids[..upto]`.
fn chain(ids: &[u32], upto: usize) -> Vec<u64> {
    let mut h: u64 = 0x5375_7266_6779_6d21;
    ids[..upto.min(ids.len())]
        .chunks_exact(BLOCK)
        .map(|block| {
            let mut s = DefaultHasher::new();
            h.hash(&mut s);
            block.hash(&mut s);
            h = s.finish();
            h
        })
        .collect()
}

impl PrefixCache {
    /// An empty cache holding at most `budget` bytes.
    pub(super) fn new(budget: usize) -> PrefixCache {
        PrefixCache {
            budget,
            blocks: HashMap::new(),
            tick: 0,
            stats: PrefixCacheStats::default(),
        }
    }

    /// The hashes of the longest run of cached blocks `ids` starts with, within its first
    /// `usable` tokens (those blocks are marked used).
    pub(super) fn lookup(&mut self, ids: &[u32], usable: usize) -> Vec<u64> {
        self.tick += 1;
        self.stats.lookups += 1;
        let mut found = Vec::new();
        for (k, h) in chain(ids, usable).into_iter().enumerate() {
            match self.blocks.get_mut(&h) {
                Some(b) if b.tokens[..] == ids[k * BLOCK..(k + 1) * BLOCK] => {
                    b.last_used = self.tick;
                    found.push(h);
                }
                _ => break,
            }
        }
        if !found.is_empty() {
            self.stats.hits += 1;
            self.stats.tokens += (found.len() * BLOCK) as u64;
        }
        found
    }

    /// Each past tensor's values at the positions of the blocks `found` (in order).
    pub(super) fn past(
        &self,
        found: &[u64],
        heads: usize,
        dim: usize,
    ) -> Result<Vec<Kv>, OnnxError> {
        let blocks: Vec<&Block> = found
            .iter()
            .map(|h| {
                self.blocks
                    .get(h)
                    .ok_or_else(|| OnnxError::Model("a cached block vanished".into()))
            })
            .collect::<Result<_, _>>()?;
        let tensors = blocks.first().map_or(0, |b| b.kv.len());
        (0..tensors)
            .map(|t| {
                let parts: Vec<&Kv> = blocks.iter().map(|b| &b.kv[t]).collect();
                Kv::concat(&parts, heads, dim)
            })
            .collect()
    }

    /// Caches the whole blocks of `ids[..cacheable]` that are not cached yet; `kv(from,
    /// to)` gives each past tensor's values at those positions.
    pub(super) fn insert(
        &mut self,
        ids: &[u32],
        cacheable: usize,
        mut kv: impl FnMut(usize, usize) -> Result<Vec<Kv>, OnnxError>,
    ) -> Result<(), OnnxError> {
        self.tick += 1;
        for (k, h) in chain(ids, cacheable).into_iter().enumerate() {
            if let Some(b) = self.blocks.get_mut(&h) {
                b.last_used = self.tick;
                continue;
            }
            let kv = kv(k * BLOCK, (k + 1) * BLOCK)?;
            let bytes = kv.iter().map(Kv::bytes).sum::<usize>() + BLOCK * 4;
            if bytes > self.budget {
                return Ok(());
            }
            self.blocks.insert(
                h,
                Block {
                    tokens: ids[k * BLOCK..(k + 1) * BLOCK].to_vec(),
                    kv,
                    bytes,
                    last_used: self.tick,
                },
            );
            self.stats.bytes += bytes as u64;
            self.evict();
        }
        Ok(())
    }

    /// Drops the least recently used blocks until the cache fits its budget.
    fn evict(&mut self) {
        while self.stats.bytes as usize > self.budget {
            let Some((&h, _)) = self.blocks.iter().min_by_key(|(_, b)| b.last_used) else {
                return;
            };
            if let Some(b) = self.blocks.remove(&h) {
                self.stats.bytes -= b.bytes as u64;
                self.stats.evicted += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(v: f32) -> Vec<Kv> {
        vec![Kv::F32(vec![v; 2 * BLOCK * 3])]
    }

    #[test]
    fn a_prefix_is_found_only_after_the_same_tokens_and_within_the_usable_part() {
        let mut c = PrefixCache::new(1 << 20);
        let a: Vec<u32> = (0..50).collect();
        c.insert(&a, 48, |from, _| Ok(kv(from as f32))).unwrap();
        assert_eq!(c.blocks.len(), 3);
        // The same start, another tail: the three blocks.
        let mut b = a.clone();
        b[49] = 999;
        assert_eq!(c.lookup(&b, 49).len(), 3);
        // Only two whole blocks fit in 40 usable tokens.
        assert_eq!(c.lookup(&b, 40).len(), 2);
        // A change in the second block: only the first.
        let mut d = a.clone();
        d[20] = 7;
        assert_eq!(c.lookup(&d, 49).len(), 1);
        // Another first token: nothing.
        let mut e = a.clone();
        e[0] = 5;
        assert!(c.lookup(&e, 49).is_empty());
        assert_eq!(c.stats.lookups, 4);
        assert_eq!(c.stats.hits, 3);
        assert_eq!(c.stats.tokens, (3 + 2 + 1) as u64 * BLOCK as u64);
    }

    #[test]
    fn the_budget_evicts_the_least_recently_used_blocks() {
        let block_bytes = 2 * BLOCK * 3 * 4 + BLOCK * 4;
        let mut c = PrefixCache::new(2 * block_bytes);
        let a: Vec<u32> = (0..16).collect();
        let b: Vec<u32> = (100..116).collect();
        let d: Vec<u32> = (200..216).collect();
        c.insert(&a, 16, |_, _| Ok(kv(1.0))).unwrap();
        c.insert(&b, 16, |_, _| Ok(kv(2.0))).unwrap();
        assert_eq!(c.lookup(&a, 16).len(), 1); // a is now the most recent
        c.insert(&d, 16, |_, _| Ok(kv(3.0))).unwrap();
        assert_eq!(c.stats.evicted, 1);
        assert!(c.lookup(&b, 16).is_empty(), "b was the least recently used");
        assert_eq!(c.lookup(&a, 16).len(), 1);
        assert_eq!(c.lookup(&d, 16).len(), 1);
        assert!(c.stats.bytes as usize <= 2 * block_bytes);
    }

    #[test]
    fn row_slices_join_back_into_the_positions_they_came_from() {
        // [batch 2, heads 2, seq 3, dim 2], values numbered.
        let data: Vec<f32> = (0..24).map(|i| i as f32).collect();
        let shape = [2i64, 2, 3, 2];
        let first = slice_row(&shape, &data, 1, 0, 1).unwrap();
        let rest = slice_row(&shape, &data, 1, 1, 3).unwrap();
        assert_eq!(first, vec![12.0, 13.0, 18.0, 19.0]);
        let whole = concat(&[&first[..], &rest[..]], 2, 2);
        assert_eq!(whole, slice_row(&shape, &data, 1, 0, 3).unwrap());
        assert!(slice_row(&shape, &data, 2, 0, 1).is_err());
        assert!(slice_row(&shape, &data, 0, 2, 4).is_err());
    }
}
