//! Fused scaled dot-product attention (ScaledDotProductFlashAttentionForCpuBackward0, the node
//! PyTorch records for 4-D inputs without dropout). The backward is the fused kernel, or the
//! same formula in differentiable ops when a graph of it is built.

use super::reduce::{softmax, sum_dims};
use super::shape::{broadcast_to, transpose};
use super::{add, masked_fill, matmul, mul, mul_scalar, sub};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::autograd::is_grad_enabled;
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::kernels::attention::{self as ka, Dims};
use crate::layout::fmt_list;
use crate::tensor::Tensor;

/// The causal mask (True above the diagonal: not attended), l x s.
fn causal_blocked(l: usize, s: usize) -> Result<Tensor> {
    let v: Vec<u8> = (0..l)
        .flat_map(|i| (0..s).map(move |j| (j > i) as u8))
        .collect();
    Tensor::from_vec(v, vec![l, s])
}

/// `scaled_dot_product_attention(q, k, v, attn_mask, is_causal, scale)` for q (B, H, L, E),
/// k (B, H, S, E), v (B, H, S, Ev) and an additive float mask broadcastable to (B, H, L, S).
pub fn sdpa(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    causal: bool,
    scale: f64,
) -> Result<Tensor> {
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    if qs.len() != 4
        || ks.len() != 4
        || vs.len() != 4
        || qs[..2] != ks[..2]
        || ks[..3] != vs[..3]
        || qs[3] != ks[3]
    {
        return Err(Error::Runtime(format!(
            "fused attention expects q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev); got {}, {}, {}",
            fmt_list(qs),
            fmt_list(ks),
            fmt_list(vs)
        )));
    }
    if q.dtype() != k.dtype() || q.dtype() != v.dtype() || !q.dtype().is_float() {
        return Err(Error::Runtime(
            "fused attention expects q, k, v of one float dtype".into(),
        ));
    }
    let d = Dims {
        bh: qs[0] * qs[1],
        l: qs[2],
        s: ks[2],
        e: qs[3],
        ev: vs[3],
    };
    let full = [qs[0], qs[1], d.l, d.s];
    let mask_full = match mask {
        Some(m) => Some(super::to_dtype(
            &broadcast_to(&m.detach(), &full)?,
            q.dtype(),
        )?),
        None => None,
    };
    let (out, p) = dispatch_float!(q.dtype(), T => {
        let (o, p) = super::with_slices::<T, _>(&[Some(q), Some(k), Some(v), mask_full.as_ref()], |s| {
            ka::forward(s[0].expect("given"), s[1].expect("given"), s[2].expect("given"), d, scale, s[3], causal)
        })?;
        (Tensor::from_vec(o, vec![qs[0], qs[1], d.l, d.ev])?, Tensor::from_vec(p, full.to_vec())?)
    });
    if needs_grad(&[q, k, v]) {
        let saved = vec![
            Saved::Input(q.clone()),
            Saved::Input(k.clone()),
            Saved::Input(v.clone()),
            Saved::Input(p),
        ];
        record(
            "ScaledDotProductFlashAttentionForCpuBackward0",
            &[q, k, v],
            &[&out],
            saved,
            move |ctx| {
                let go = ctx.grad(0)?;
                let (q, k, v, p) = (&ctx.saved[0], &ctx.saved[1], &ctx.saved[2], &ctx.saved[3]);
                let (gq, gk, gv) = if is_grad_enabled() {
                    composite_backward(q, k, v, mask_full.as_ref(), causal, scale, &go)?
                } else {
                    dispatch_float!(q.dtype(), T => {
                        let (dq, dk, dv) = super::with_slices::<T, _>(&[Some(q), Some(k), Some(v), Some(p), Some(&go)], |s| {
                            let g = |i: usize| s[i].expect("given");
                            ka::backward(g(0), g(1), g(2), g(3), g(4), d, scale, causal)
                        })?;
                        (
                            Tensor::from_vec(dq, q.shape().to_vec())?,
                            Tensor::from_vec(dk, k.shape().to_vec())?,
                            Tensor::from_vec(dv, v.shape().to_vec())?,
                        )
                    })
                };
                Ok(vec![
                    ctx.needs(0).then_some(gq),
                    ctx.needs(1).then_some(gk),
                    ctx.needs(2).then_some(gv),
                ])
            },
        );
    }
    Ok(out)
}

/// The attention backward in differentiable ops (the attention weights recomputed from q, k).
fn composite_backward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    causal: bool,
    scale: f64,
    go: &Tensor,
) -> Result<(Tensor, Tensor, Tensor)> {
    let mut scores = mul_scalar(&matmul(q, &transpose(k, -2, -1)?)?, scale)?;
    if let Some(m) = mask {
        scores = add(&scores, m)?;
    }
    if causal {
        let (l, s) = (q.shape()[2], k.shape()[2]);
        scores = masked_fill(
            &scores,
            &causal_blocked(l, s)?,
            Scalar::Float(f64::NEG_INFINITY),
        )?;
    }
    let p = softmax(&scores, -1, false)?;
    // rows with every score masked: zeros, as the forward gives
    let nan = super::binary::binary_forward(
        super::BinOp::Ne,
        &super::Operand::T(p.detach()),
        &super::Operand::T(p.detach()),
    )?;
    let p = masked_fill(&p, &nan, Scalar::Float(0.0))?;
    let gv = matmul(&transpose(&p, -2, -1)?, go)?;
    let dp = matmul(go, &transpose(v, -2, -1)?)?;
    let dot = sum_dims(&mul(&dp, &p)?, Some(&[-1]), true, None)?;
    let ds = mul_scalar(&mul(&p, &sub(&dp, &dot)?)?, scale)?;
    let gq = matmul(&ds, k)?;
    let gk = matmul(&transpose(&ds, -2, -1)?, q)?;
    Ok((gq, gk, gv))
}
