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
    Tensor::from_vec(ka::causal_mask(l, s), vec![l, s])
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
    let (q, k, v) = (
        &super::autocast::lower(q)?,
        &super::autocast::lower(k)?,
        &super::autocast::lower(v)?,
    );
    if let Some(d) = super::half_precision(q) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        let m = match mask {
            Some(m) if m.dtype().is_float() => Some(super::up(m)?),
            m => m.cloned(),
        };
        let (qu, ku, vu) = (super::up(q)?, super::up(k)?, super::up(v)?);
        return super::to_dtype(&sdpa(&qu, &ku, &vu, m.as_ref(), causal, scale)?, d);
    }
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
        heads: qs[1],
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
    // q, k, v read in place when their rows are contiguous (the heads split off a projection
    // are strided views); the output laid out like q, as PyTorch does
    let (qr, kr, vr) = (&rows_readable(q)?, &rows_readable(k)?, &rows_readable(v)?);
    let (nb, nh) = (qs[0], qs[1]);
    let o_order = dim_order(qr);
    let o_rows = ka::Rows::dense(o_order, [nb, nh, d.l], d.ev);
    // P (the probabilities) is kept only for a backward
    let keep_p = needs_grad(&[q, k, v]);
    let (out, p) = dispatch_float!(q.dtype(), T => {
        let (o, p) = with_operands::<T, _>(&[qr, kr, vr], |ops| {
            super::with_slices::<T, _>(&[mask_full.as_ref()], |m| {
                ka::forward(ops[0], ops[1], ops[2], d, scale, m[0], causal, o_rows, keep_p)
            })
        })???;
        let p = if keep_p { Some(Tensor::from_vec(p, full.to_vec())?) } else { None };
        (laid_out(o, [nb, nh, d.l, d.ev], o_order)?, p)
    });
    if let Some(p) = p {
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
                    let (q, k, v, go) = (
                        &rows_readable(q)?,
                        &rows_readable(k)?,
                        &rows_readable(v)?,
                        &rows_readable(&go)?,
                    );
                    // each gradient laid out like its input
                    let orders = [dim_order(q), dim_order(k), dim_order(v)];
                    let grad_rows = [
                        ka::Rows::dense(orders[0], [nb, nh, d.l], d.e),
                        ka::Rows::dense(orders[1], [nb, nh, d.s], d.e),
                        ka::Rows::dense(orders[2], [nb, nh, d.s], d.ev),
                    ];
                    dispatch_float!(q.dtype(), T => {
                        let (dq, dk, dv) = with_operands::<T, _>(&[q, k, v, go], |ops| {
                            super::with_slices::<T, _>(&[Some(p)], |s| {
                                ka::backward(ops[0], ops[1], ops[2], s[0].expect("given"), ops[3], d, scale, causal, grad_rows)
                            })
                        })???;
                        (
                            laid_out(dq, [nb, nh, d.l, d.e], orders[0])?,
                            laid_out(dk, [nb, nh, d.s, d.e], orders[1])?,
                            laid_out(dv, [nb, nh, d.s, d.ev], orders[2])?,
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

/// `t` itself when its last dim is contiguous (rows the kernel can read in place), else a
/// contiguous copy (no graph).
fn rows_readable(t: &Tensor) -> Result<Tensor> {
    let (shape, strides) = (t.shape(), &t.layout().strides);
    if shape[3] <= 1 || strides[3] == 1 {
        Ok(t.clone())
    } else {
        super::materialize(t)
    }
}

/// The order of `t`'s (batch, head, row) dims in memory, outermost first (by stride, ties in
/// dim order): `[0, 1, 2]` for a contiguous tensor, `[2, 0, 1]` for heads split off an
/// (L, B, E) projection.
fn dim_order(t: &Tensor) -> [usize; 3] {
    let st = &t.layout().strides;
    let mut order = [0, 1, 2];
    order.sort_by(|&a, &b| st[b].cmp(&st[a]).then(a.cmp(&b)));
    order
}

/// A (B, H, rows, cols) tensor over `data` laid out with its (B, H, rows) dims in `order`.
fn laid_out<T: crate::storage::Elem>(
    data: Vec<T>,
    shape: [usize; 4],
    order: [usize; 3],
) -> Result<Tensor> {
    let mem_shape = vec![shape[order[0]], shape[order[1]], shape[order[2]], shape[3]];
    let t = Tensor::from_vec(data, mem_shape)?;
    // memory dim j holds logical dim order[j]: the inverse permutation gives the view
    let mut perm = [0usize, 0, 0, 3];
    for (j, &dim) in order.iter().enumerate() {
        perm[dim] = j;
    }
    Ok(t.with_layout(t.layout().permute(&perm)))
}

/// Runs `f` on the tensors as kernel operands over their whole storages, one read lock per
/// distinct storage (q, k and v often share one).
fn with_operands<T: crate::storage::Elem, R>(
    ts: &[&Tensor],
    f: impl FnOnce(&[ka::Operand<'_, T>]) -> R,
) -> Result<R> {
    let owners = super::storage_owners(&ts.iter().map(|&t| Some(t)).collect::<Vec<_>>());
    let guards: Vec<Option<crate::storage::ReadGuard<'_, T>>> = ts
        .iter()
        .enumerate()
        .map(|(i, t)| (owners[i] == i).then(|| t.storage().read::<T>()))
        .collect();
    let ops: Vec<ka::Operand<'_, T>> = ts
        .iter()
        .zip(&owners)
        .map(|(t, &o)| {
            let l = t.layout();
            ka::Operand {
                data: &guards[o].as_ref().expect("owner holds the guard")[..],
                rows: ka::Rows {
                    offset: l.offset,
                    sb: l.strides[0],
                    sh: l.strides[1],
                    sr: l.strides[2],
                },
            }
        })
        .collect();
    Ok(f(&ops))
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
