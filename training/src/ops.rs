//! Attention's masked softmax, fused, with a backward pass, on the CPU.
//!
//! candle's fused `softmax_last_dim` has no backward pass, and the softmax spelled out from
//! primitives (after adding the mask) walks the `[batch, heads, seq, seq]` scores six times
//! forward and more backward, keeps each result for the backward pass, and runs its
//! reductions and broadcasts on one thread. Attention grows with the square of a sample's
//! length, so here it is one pass per row forward (add the mask, max, exp, sum, divide: the
//! ONNX graph's Add and Softmax) and one backward (`dx = y * (dy - sum(dy * y))`), rows
//! spread over the cores. Other devices take the primitive version.

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Tensor};
use rayon::prelude::*;

use crate::TrainError;

/// `softmax(scores + bias)` over the last axis for scores `[B, H, S, T]` and a bias
/// `[B, 1, S, T]` shared by the heads (no gradient flows to the bias).
pub(crate) fn masked_softmax(scores: &Tensor, bias: &Tensor) -> Result<Tensor, TrainError> {
    let fused = !primitive_forced()
        && scores.device().is_cpu()
        && scores.dtype() == DType::F32
        && bias.dtype() == DType::F32
        && scores.rank() == 4
        && bias.rank() == 4
        && bias.dim(1)? == 1
        && bias.dims()[0] == scores.dims()[0]
        && bias.dims()[2..] == scores.dims()[2..];
    if fused {
        return Ok(scores
            .contiguous()?
            .apply_op2(&bias.contiguous()?.detach(), MaskedSoftmax)?);
    }
    crate::decoder::softmax(&scores.broadcast_add(bias)?)
}

/// `SURFGYM_TRAIN_PRIMITIVE_SOFTMAX=1` takes the primitive version on the CPU too: how the
/// fused op's speed-up is measured (`surfgym bench train` with and without it).
fn primitive_forced() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| {
        std::env::var("SURFGYM_TRAIN_PRIMITIVE_SOFTMAX").is_ok_and(|v| !v.is_empty() && v != "0")
    })
}

fn rows<'a>(s: &'a CpuStorage, l: &Layout, op: &str) -> candle_core::Result<(&'a [f32], usize)> {
    let CpuStorage::F32(v) = s else {
        candle_core::bail!("{op}: f32 only");
    };
    let Some((a, b)) = l.contiguous_offsets() else {
        candle_core::bail!("{op}: the input must be contiguous");
    };
    Ok((&v[a..b], l.dims().last().copied().unwrap_or(1).max(1)))
}

struct MaskedSoftmax;

impl CustomOp2 for MaskedSoftmax {
    fn name(&self) -> &'static str {
        "surfgym-masked-softmax"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (x, t) = rows(s1, l1, self.name())?;
        let (bias, _) = rows(s2, l2, self.name())?;
        let dims = l1.dims();
        let (heads, per_head) = (dims[1], dims[2] * t);
        let mut dst = vec![0f32; x.len()];
        // Chunks of one (sample, head): the bias is the sample's, whatever the head.
        dst.par_chunks_mut(per_head)
            .zip(x.par_chunks(per_head))
            .enumerate()
            .for_each(|(bh, (d, x))| {
                let bias = &bias[(bh / heads) * per_head..][..per_head];
                for ((d, x), bias) in d.chunks_mut(t).zip(x.chunks(t)).zip(bias.chunks(t)) {
                    let mut max = f32::NEG_INFINITY;
                    for ((d, x), b) in d.iter_mut().zip(x).zip(bias) {
                        *d = x + b;
                        max = max.max(*d);
                    }
                    let mut sum = 0f32;
                    for d in d.iter_mut() {
                        *d = (*d - max).exp();
                        sum += *d;
                    }
                    for d in d.iter_mut() {
                        *d /= sum;
                    }
                }
            });
        Ok((CpuStorage::F32(dst), l1.shape().clone()))
    }

    fn bwd(
        &self,
        _scores: &Tensor,
        _bias: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let dx = grad
            .contiguous()?
            .apply_op2_no_bwd(&res.contiguous()?, &SoftmaxGrad)?;
        Ok((Some(dx), None))
    }
}

/// `(dy, y) -> y * (dy - sum(dy * y))` row by row.
struct SoftmaxGrad;

impl CustomOp2 for SoftmaxGrad {
    fn name(&self) -> &'static str {
        "surfgym-softmax-grad"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (dy, n) = rows(s1, l1, self.name())?;
        let (y, _) = rows(s2, l2, self.name())?;
        if dy.len() != y.len() {
            candle_core::bail!("{}: shapes differ", self.name());
        }
        let mut dx = vec![0f32; y.len()];
        dx.par_chunks_mut(n)
            .zip(dy.par_chunks(n).zip(y.par_chunks(n)))
            .for_each(|(dx, (dy, y))| {
                let dot: f32 = dy.iter().zip(y).map(|(a, b)| a * b).sum();
                for ((dx, dy), y) in dx.iter_mut().zip(dy).zip(y) {
                    *dx = y * (dy - dot);
                }
            });
        Ok((CpuStorage::F32(dx), l1.shape().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};

    /// The fused op and the primitives agree, values and gradients, masked entries included.
    #[test]
    fn fused_softmax_matches_primitives() -> Result<(), TrainError> {
        let dev = Device::Cpu;
        let x = Var::from_tensor(&(Tensor::randn(0f32, 3.0, (2, 3, 5, 7), &dev)?))?;
        let w = Tensor::randn(0f32, 1.0, (2, 3, 5, 7), &dev)?;
        // A different mask per sample, whole columns masked as padding is.
        let bias: Vec<f32> = (0..2 * 5 * 7)
            .map(|i| match (i / 35, i % 7) {
                (0, j) if j >= 5 => f32::MIN,
                (1, j) if j < 2 => f32::MIN,
                _ => 0.0,
            })
            .collect();
        let bias = Tensor::from_vec(bias, (2, 1, 5, 7), &dev)?;
        let fused = masked_softmax(x.as_tensor(), &bias)?;
        let prim = crate::decoder::softmax(&x.as_tensor().broadcast_add(&bias)?)?;
        let masked = fused.narrow(0, 0, 1)?.narrow(3, 5, 2)?;
        assert_eq!(masked.abs()?.max_all()?.to_scalar::<f32>()?, 0.0);
        let diff = (&fused - &prim)?.abs()?.max_all()?.to_scalar::<f32>()?;
        assert!(diff < 1e-6, "values differ by {diff}");
        let g1 = (fused * &w)?.sum_all()?.backward()?;
        let g2 = (prim * &w)?.sum_all()?.backward()?;
        let (g1, g2) = (g1.get(&x).unwrap(), g2.get(&x).unwrap());
        let diff = (g1 - g2)?.abs()?.max_all()?.to_scalar::<f32>()?;
        assert!(diff < 1e-6, "gradients differ by {diff}");
        assert!(g1.abs()?.max_all()?.to_scalar::<f32>()? > 1e-3);
        Ok(())
    }
}
