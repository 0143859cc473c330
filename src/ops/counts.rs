//! Native search / counting ops (kernels/counts.rs): searchsorted, bincount, histc, nonzero,
//! unique_consecutive (not differentiable), and max_unpool (MaxUnpool2DBackward0 /
//! MaxUnpool3DBackward0), pdist (PdistBackward0), multilabel_margin_loss
//! (MultilabelMarginLossBackward0) with their backward formulas. Argument checks with
//! PyTorch's messages are in the Python wrappers; the checks that need a pass over the data
//! (negative bincount values, indices out of range) are here.

use super::binary::{binary, mul, sub, where_op, BinOp, Operand};
use super::index::{gather, index_add, index_select};
use super::loss::Reduction;
use super::shape::{reshape, unbind, unsqueeze};
use super::unary::{abs, sign};
use super::{to_dtype, with_slice, with_slices};
use crate::autograd::grad_mode::is_grad_enabled;
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::counts as kc;
use crate::storage::Elem;
use crate::tensor::Tensor;

/// `searchsorted(seq, vals)` with `seq` and `vals` of one dtype: int64 (int32 with
/// `out_int32`) positions in `vals`' shape. `seq` is one sorted row (1-D) or rows along its
/// last dim matching `vals`' leading dims; `sorter` (int64, `seq`'s shape) orders each row.
pub fn searchsorted(
    seq: &Tensor,
    vals: &Tensor,
    right: bool,
    sorter: Option<&Tensor>,
    out_int32: bool,
) -> Result<Tensor> {
    if seq.dtype() != vals.dtype() {
        return Err(Error::Runtime(
            "searchsorted: boundaries and values must have one dtype".into(),
        ));
    }
    let m = seq.shape().last().copied().unwrap_or(1);
    let inner = vals.shape().last().copied().unwrap_or(1);
    let shape = vals.shape().to_vec();
    let search = |so: Option<&[i64]>| -> Result<Tensor> {
        if let Some(s) = so {
            if !kc::sorter_in_range(s, m) {
                return Err(Error::Runtime(
                    "torch.searchsorted(): sorter index out of range".into(),
                ));
            }
        }
        dispatch_all!(seq.dtype(), T => {
            with_slices::<T, _>(&[Some(seq), Some(vals)], |s| {
                let (sq, vs) = (s[0].expect("given"), s[1].expect("given"));
                if out_int32 {
                    Tensor::from_vec(kc::searchsorted::<T, i32>(sq, so, m, vs, inner, right)?, shape.clone())
                } else {
                    Tensor::from_vec(kc::searchsorted::<T, i64>(sq, so, m, vs, inner, right)?, shape.clone())
                }
            })?
        })
    };
    match sorter {
        Some(o) => with_slice::<i64, _>(o, |so| search(Some(so)))?,
        None => search(None),
    }
}

/// `bincount` of the 1-D int64 `x`: counts (int64), or with `weights` their sums (float32 for
/// float32 weights, else float64), at least `minlength` bins.
pub fn bincount(x: &Tensor, weights: Option<&Tensor>, minlength: usize) -> Result<Tensor> {
    let idx = with_slice::<i64, _>(x, |s| {
        let (lo, hi) = kc::min_max_i64(s);
        (lo, hi)
    })?;
    if idx.0 < 0 {
        return Err(Error::Runtime(
            "bincount only supports 1-d non-negative integral inputs.".into(),
        ));
    }
    let bins = ((idx.1 + 1) as usize).max(minlength);
    match weights {
        None => with_slice::<i64, _>(x, |s| kc::bincount(s, bins))?
            .and_then(|v| Tensor::from_vec(v, vec![bins])),
        Some(w) => {
            // ATen: float32 weights sum in float32, every other dtype in float64
            let wd = if w.dtype() == DType::F32 {
                DType::F32
            } else {
                DType::F64
            };
            let wc = super::cast(w, wd)?;
            let out = dispatch_float!(wd, W => {
                with_slices::<i64, _>(&[Some(x)], |s| {
                    with_slice::<W, _>(&wc, |ws| kc::bincount_weighted(s[0].expect("given"), ws, bins))
                })??
                .and_then(|v| Tensor::from_vec(v, vec![bins]))?
            });
            Ok(out)
        }
    }
}

/// `histc` of a float tensor over `[lo, hi]` (already the data's range when asked), `bins`
/// bins, in the input's dtype (float16 / bfloat16 counted through float32).
pub fn histc(x: &Tensor, bins: usize, lo: f64, hi: f64) -> Result<Tensor> {
    let d = x.dtype();
    let xc = super::cast(
        x,
        if matches!(d, DType::F16 | DType::BF16) {
            DType::F32
        } else {
            d
        },
    )?;
    let out = dispatch_float!(xc.dtype(), T => {
        use crate::kernels::simd::Real;
        let v = with_slice::<T, _>(&xc, |s| kc::histc(s, bins, T::of(lo), T::of(hi)))??;
        Tensor::from_vec(v, vec![bins])?
    });
    super::cast(&out, d)
}

/// `nonzero(x)`: the (count, ndim) int64 coordinates of the non-zero elements, row-major; with
/// `as_tuple` one 1-D tensor per dim (views of one buffer).
pub fn nonzero(x: &Tensor, as_tuple: bool) -> Result<Vec<Tensor>> {
    let shape = x.shape().to_vec();
    let nd = shape.len();
    let layout = if as_tuple {
        kc::Coords::Columns
    } else {
        kc::Coords::Rows
    };
    let (v, count) = dispatch_all!(x.dtype(), T => {
        with_slice::<T, _>(x, |s| kc::nonzero(s, &shape, layout))??
    });
    if !as_tuple {
        return Ok(vec![Tensor::from_vec(v, vec![count, nd])?]);
    }
    if nd == 0 {
        return Ok(vec![]);
    }
    unbind(&Tensor::from_vec(v, vec![nd, count])?, 0)
}

/// `unique_consecutive` of the flattened `x`: values, and when asked the inverse (in `x`'s
/// shape) and the counts.
pub fn unique_consecutive(
    x: &Tensor,
    inverse: bool,
    counts: bool,
) -> Result<(Tensor, Option<Tensor>, Option<Tensor>)> {
    let shape = x.shape().to_vec();
    dispatch_all!(x.dtype(), T => {
        let (v, inv, cnt) = with_slice::<T, _>(x, |s| kc::unique_consecutive(s, inverse, counts))??;
        let k = v.len();
        Ok((
            Tensor::from_vec(v, vec![k])?,
            inv.map(|i| Tensor::from_vec(i, shape)).transpose()?,
            cnt.map(|c| Tensor::from_vec(c, vec![k])).transpose()?,
        ))
    })
}

/// `unique(dim=)` / `unique_consecutive(dim=)` of the rows of the 2-D `x`: the row each distinct
/// slice is taken from, each row's slice number and each slice's count (int64).
pub fn unique_dim(x: &Tensor, consecutive: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let (rows, len) = match x.shape() {
        &[r, l] => (r, l),
        s => {
            return Err(Error::Runtime(format!(
                "unique_dim: expected the rows of a 2-D tensor, got shape {s:?}"
            )))
        }
    };
    let (firsts, inv, counts) = dispatch_all!(x.dtype(), T => {
        with_slice::<T, _>(x, |s| kc::unique_rows(s, len, consecutive))??
    });
    debug_assert_eq!(inv.len(), rows);
    let k = firsts.len();
    Ok((
        Tensor::from_vec(firsts, vec![k])?,
        Tensor::from_vec(inv, vec![rows])?,
        Tensor::from_vec(counts, vec![k])?,
    ))
}

/// `max_unpool` over the last `out_size.len()` dims of `x`: each value written at its flat
/// `idx` (same shape as `x`, int64) in a zero output of size `out_size` per plane.
/// Backward: the gradient gathered at the indices.
pub fn max_unpool(x: &Tensor, idx: &Tensor, out_size: &[usize]) -> Result<Tensor> {
    let nd = out_size.len();
    let xs = x.shape().to_vec();
    if xs.len() < nd || idx.shape() != xs.as_slice() {
        return Err(Error::Runtime(
            "max_unpool: indices must have the input's shape".into(),
        ));
    }
    let lead = xs[..xs.len() - nd].to_vec();
    let inp: usize = xs[xs.len() - nd..].iter().product();
    let outp: usize = out_size.iter().product();
    let mut oshape = lead.clone();
    oshape.extend_from_slice(out_size);
    let name = if nd == 3 {
        "MaxUnpool3DBackward0"
    } else {
        "MaxUnpool2DBackward0"
    };
    let out = dispatch_all!(x.dtype(), T => {
        let r = with_slices::<T, _>(&[Some(&x.detach())], |s| {
            with_slice::<i64, _>(idx, |is| kc::max_unpool(s[0].expect("given"), is, inp, outp))
        })??;
        match r {
            Ok(v) => Tensor::from_vec(v, oshape.clone())?,
            Err(Err(e)) => return Err(e),
            Err(Ok(bad)) => {
                let sizes: Vec<String> = out_size.iter().map(|s| s.to_string()).collect();
                return Err(Error::Runtime(format!(
                    "Found an invalid max index: {bad} (output volumes are of size {})",
                    sizes.join("x")
                )));
            }
        }
    });
    if needs_grad(&[x]) {
        let mut flat_in = lead.clone();
        flat_in.push(inp);
        let mut flat_out = lead;
        flat_out.push(outp);
        let fidx = reshape(idx, &flat_in)?;
        record(name, &[x], &[&out], vec![], move |ctx| {
            let g = reshape(&ctx.grad(0)?, &flat_out)?;
            Ok(vec![Some(reshape(&gather(&g, -1, &fidx)?, &xs)?)])
        });
    }
    Ok(out)
}

/// The pairs (i, j), i < j, of `n` rows in pdist's order, as two int64 index tensors.
fn pair_indices(n: usize) -> Result<(Tensor, Tensor)> {
    let p = n * n.saturating_sub(1) / 2;
    let (mut a, mut b) = (Vec::with_capacity(p), Vec::with_capacity(p));
    for i in 0..n {
        for j in i + 1..n {
            a.push(i as i64);
            b.push(j as i64);
        }
    }
    Ok((Tensor::from_vec(a, vec![p])?, Tensor::from_vec(b, vec![p])?))
}

fn t(x: &Tensor) -> Operand {
    Operand::T(x.clone())
}
fn s(v: f64) -> Operand {
    Operand::S(Scalar::Float(v))
}

/// `_pdist_backward` with differentiable ops (for a graph of the backward): the pairs'
/// differences, PyTorch's per-p coefficient (0 at zero distances, with safe denominators so
/// a second derivative has no NaN), scattered back to both rows of each pair.
fn pdist_backward_graph(g: &Tensor, x: &Tensor, dist: &Tensor, p: f64) -> Result<Tensor> {
    let n = x.shape()[0];
    let (ii, jj) = pair_indices(n)?;
    let zero = Tensor::zeros(x.shape(), x.dtype())?;
    if p == 0.0 {
        return Ok(zero);
    }
    let diff = sub(&index_select(x, 0, &ii)?, &index_select(x, 0, &jj)?)?;
    let d = unsqueeze(dist, 1)?;
    let dzero = binary(BinOp::Eq, &t(&d), &s(0.0))?;
    let dsafe = where_op(&dzero, &s(1.0), &t(&d))?;
    let coef = if p == 1.0 {
        sign(&diff)?
    } else if p == 2.0 {
        where_op(&dzero, &s(0.0), &t(&super::div(&diff, &dsafe)?))?
    } else if p.is_infinite() {
        let at_max = binary(BinOp::Eq, &t(&abs(&diff)?), &t(&d))?;
        where_op(&at_max, &t(&sign(&diff)?), &s(0.0))?
    } else {
        let dz = binary(BinOp::Eq, &t(&diff), &s(0.0))?;
        let asafe = where_op(&dz, &s(1.0), &t(&abs(&diff)?))?;
        let num = mul(&sign(&diff)?, &binary(BinOp::Pow, &t(&asafe), &s(p - 1.0))?)?;
        let c = super::div(&num, &binary(BinOp::Pow, &t(&dsafe), &s(p - 1.0))?)?;
        let c = where_op(&dzero, &s(0.0), &t(&c))?;
        if p < 1.0 {
            where_op(&dz, &s(0.0), &t(&c))?
        } else {
            c
        }
    };
    let gd = mul(&unsqueeze(g, 1)?, &coef)?;
    sub(
        &index_add(&zero, 0, &ii, &gd)?,
        &index_add(&zero, 0, &jj, &gd)?,
    )
}

/// `pdist(x, p)` of a 2-D float tensor (PdistBackward0). The backward runs the native
/// `_pdist_backward` kernel, or differentiable ops when a graph of it is being built.
pub fn pdist(x: &Tensor, p: f64) -> Result<Tensor> {
    if let Some(d) = super::half_precision(x) {
        return to_dtype(&pdist(&super::up(x)?, p)?, d);
    }
    let (n, m) = (x.shape()[0], x.shape()[1]);
    let pairs = n * n.saturating_sub(1) / 2;
    let out = dispatch_float!(x.dtype(), T => {
        let v = with_slice::<T, _>(&x.detach(), |s| kc::pdist(s, n, m, p))??;
        Tensor::from_vec(v, vec![pairs])?
    });
    if needs_grad(&[x]) {
        record(
            "PdistBackward0",
            &[x],
            &[&out],
            vec![Saved::Input(x.clone()), Saved::Output(out.clone(), 0)],
            move |ctx| {
                let g = ctx.grad(0)?;
                let (x, dist) = (ctx.saved[0].clone(), ctx.saved[1].clone());
                if is_grad_enabled() {
                    return Ok(vec![Some(pdist_backward_graph(&g, &x, &dist, p)?)]);
                }
                let g = super::cast(&g, x.dtype())?;
                let gx = dispatch_float!(x.dtype(), T => {
                    let v = with_slices::<T, _>(&[Some(&g), Some(&x), Some(&dist)], |s| {
                        kc::pdist_backward(
                            s[0].expect("given"),
                            s[1].expect("given"),
                            s[2].expect("given"),
                            n,
                            m,
                            p,
                        )
                    })??;
                    Tensor::from_vec(v, vec![n, m])?
                });
                Ok(vec![Some(gx)])
            },
        );
    }
    Ok(out)
}

/// `multilabel_margin_loss` of `x` ((C) or (N, C), float) and its int64 targets of the same
/// shape (MultilabelMarginLossBackward0). The forward computes each row's loss and, when a
/// gradient is needed, the constant d loss / d x coefficients (O(N * C)); the backward scales
/// them by the incoming gradient (the loss is piecewise linear: its second derivative is 0).
pub fn multilabel_margin_loss(x: &Tensor, y: &Tensor, r: Reduction) -> Result<Tensor> {
    if let Some(d) = super::half_precision(x) {
        return to_dtype(&multilabel_margin_loss(&super::up(x)?, y, r)?, d);
    }
    let xshape = x.shape().to_vec();
    let (n, c) = if xshape.len() <= 1 {
        (1, xshape.first().copied().unwrap_or(1))
    } else {
        (xshape[0], xshape[1])
    };
    let grad = needs_grad(&[x]);
    let dtype = x.dtype();
    let (losses, coef) = dispatch_float!(dtype, T => {
        let (l, g) = with_slices::<T, _>(&[Some(&x.detach())], |s| {
            with_slice::<i64, _>(y, |ys| kc::multilabel_margin(s[0].expect("given"), ys, n, c, grad))
        })???;
        let total: f64 = l.iter().map(|v| v.to_f64()).sum();
        let scale = if r == Reduction::Mean && n > 0 { 1.0 / n as f64 } else { 1.0 };
        let coef = match g {
            Some(mut g) => {
                if scale != 1.0 {
                    use crate::kernels::simd::Real;
                    let sc = T::of(scale);
                    g.iter_mut().for_each(|v| *v *= sc);
                }
                Some(Tensor::from_vec(g, vec![n, c])?)
            }
            None => None,
        };
        let out = match r {
            Reduction::None => {
                let shape = if xshape.len() <= 1 { vec![] } else { vec![n] };
                Tensor::from_vec(l, shape)?
            }
            Reduction::Sum => Tensor::scalar(Scalar::Float(total), dtype),
            Reduction::Mean => Tensor::scalar(Scalar::Float(if n > 0 { total / n as f64 } else { 0.0 }), dtype),
        };
        (out, coef)
    });
    let out = losses;
    if let Some(coef) = coef {
        let two_d = xshape.len() == 2;
        record(
            "MultilabelMarginLossBackward0",
            &[x],
            &[&out],
            vec![],
            move |ctx| {
                let g = ctx.grad(0)?;
                let g = if r == Reduction::None && two_d {
                    unsqueeze(&g, 1)?
                } else {
                    g
                };
                Ok(vec![Some(reshape(&mul(&g, &coef)?, &xshape)?)])
            },
        );
    }
    Ok(out)
}
