//! layer_norm, group_norm and batch_norm: fused forward kernels, and a backward that is the
//! fused kernel when no graph of it is wanted, else the same formula in differentiable ops
//! (with the statistics recomputed from the input, so that higher derivatives see them).

use super::reduce::{mean, sum_dims};
use super::shape::reshape;
use super::{add_scalar, mul, rsqrt, sub, with_slice, with_slices};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::autograd::is_grad_enabled;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::norm as kn;
use crate::layout::fmt_list;
use crate::tensor::Tensor;
use std::sync::Arc;

/// PyTorch's dtype checks: a float input (`"kernel" not implemented for 'Long'`), then its
/// mixed-dtype rule: when the first given parameter's dtype differs from the input's, every
/// parameter must be float32 and the input a reduced float (float16/bfloat16); otherwise every
/// parameter must have the input's dtype.
fn check_dtypes(x: &Tensor, kernel: &str, params: &[Option<&Tensor>]) -> Result<()> {
    let xd = x.dtype();
    if !xd.is_float() {
        return Err(Error::dtype_not_implemented(kernel, xd));
    }
    let mut given = params.iter().flatten().map(|p| p.dtype());
    let Some(first) = given.clone().next() else {
        return Ok(());
    };
    if first != xd {
        if given.any(|d| d != DType::F32) {
            return Err(Error::Runtime(
                "mixed dtype (CPU): expect parameter to have scalar type of Float".into(),
            ));
        }
        if xd == DType::F64 {
            return Err(Error::Runtime(
                "mixed dtype (CPU): all inputs must share same datatype.".into(),
            ));
        }
        return Err(Error::NotImplemented(format!(
            "{kernel}: a {} input with float32 parameters (mixed dtype) is not supported yet",
            xd.kernel_name()
        )));
    }
    match given.find(|&d| d != xd) {
        Some(d) => Err(Error::Runtime(format!(
            "expected scalar type {} but found {}",
            xd.kernel_name(),
            d.kernel_name()
        ))),
        None => Ok(()),
    }
}

/// How the differentiable backward groups `x`: reshaped to `grouped`, statistics over `red`;
/// the weight viewed as `w_view` broadcasts against `x`, its gradient sums `x`'s `affine_sum`
/// dims.
struct Grouping {
    grouped: Vec<usize>,
    red: Vec<i64>,
    w_view: Vec<usize>,
    affine_sum: Vec<i64>,
}

/// The backward of a normalization (batch statistics) in differentiable ops.
fn composite_backward(
    x: &Tensor,
    go: &Tensor,
    w: Option<&Tensor>,
    g: &Grouping,
    eps: f64,
    needs: [bool; 3],
) -> Result<Vec<Option<Tensor>>> {
    let xg = reshape(x, &g.grouped)?;
    let m = mean(&xg, Some(&g.red), true, None)?;
    let xc = sub(&xg, &m)?;
    let var = mean(&mul(&xc, &xc)?, Some(&g.red), true, None)?;
    let rstd = rsqrt(&add_scalar(&var, eps)?)?;
    let xhat = mul(&xc, &rstd)?;
    let dxh = match w {
        Some(w) => mul(go, &reshape(w, &g.w_view)?)?,
        None => go.clone(),
    };
    let dxh = reshape(&dxh, &g.grouped)?;
    let mut out = Vec::with_capacity(3);
    out.push(if needs[0] {
        let a = mean(&dxh, Some(&g.red), true, None)?;
        let c = mean(&mul(&dxh, &xhat)?, Some(&g.red), true, None)?;
        let dx = mul(&rstd, &sub(&sub(&dxh, &a)?, &mul(&xhat, &c)?)?)?;
        Some(reshape(&dx, x.shape())?)
    } else {
        None
    });
    let xhat_x = reshape(&xhat, x.shape())?;
    let wshape: Vec<usize> = w.map(|w| w.shape().to_vec()).unwrap_or_default();
    out.push(if needs[1] && w.is_some() {
        let dw = sum_over(&mul(go, &xhat_x)?, &g.affine_sum)?;
        Some(reshape(&dw, &wshape)?)
    } else {
        None
    });
    out.push(if needs[2] {
        let db = sum_over(go, &g.affine_sum)?;
        Some(reshape(&db, &wshape_or(&db, &wshape))?)
    } else {
        None
    });
    Ok(out)
}

/// `sum_dims` over `dims`; nothing to sum (not all dims) when `dims` is empty.
fn sum_over(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    if dims.is_empty() {
        Ok(t.clone())
    } else {
        sum_dims(t, Some(dims), false, None)
    }
}

fn wshape_or(t: &Tensor, wshape: &[usize]) -> Vec<usize> {
    if wshape.is_empty() {
        t.shape().to_vec()
    } else {
        wshape.to_vec()
    }
}

/// The fused backward: (x, grad_output, weight) -> (dx, dw, db).
type FusedBackward =
    Arc<dyn Fn(&Tensor, &Tensor, Option<&Tensor>) -> Result<[Tensor; 3]> + Send + Sync>;
/// The differentiable backward: (x, grad_output, weight, needed) -> grads.
type CompositeBackward = Arc<
    dyn Fn(&Tensor, &Tensor, Option<&Tensor>, [bool; 3]) -> Result<Vec<Option<Tensor>>>
        + Send
        + Sync,
>;

/// Records a normalization node: inputs x, weight, bias (those given).
#[allow(clippy::too_many_arguments)]
fn record_norm(
    name: &'static str,
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    out: &Tensor,
    fused: FusedBackward,
    composite: CompositeBackward,
) {
    let mut inputs = vec![x];
    inputs.extend(w);
    inputs.extend(b);
    if !needs_grad(&inputs) {
        return;
    }
    let (has_w, has_b) = (w.is_some(), b.is_some());
    let mut saved = vec![Saved::Input(x.clone())];
    if let Some(w) = w {
        saved.push(Saved::Input(w.clone()));
    }
    record(name, &inputs, &[out], saved, move |ctx| {
        let go = ctx.grad(0)?;
        let x = &ctx.saved[0];
        let w = has_w.then(|| &ctx.saved[1]);
        let needs = [
            ctx.needs(0),
            has_w && ctx.needs(1),
            has_b && ctx.needs(if has_w { 2 } else { 1 }),
        ];
        let grads: Vec<Option<Tensor>> = if is_grad_enabled() {
            composite(x, &go, w, needs)?
        } else {
            let [dx, dw, db] = fused(x, &go, w)?;
            vec![Some(dx), Some(dw), Some(db)]
        };
        let mut out = vec![if needs[0] { grads[0].clone() } else { None }];
        if has_w {
            out.push(if needs[1] { grads[1].clone() } else { None });
        }
        if has_b {
            out.push(if needs[2] { grads[2].clone() } else { None });
        }
        Ok(out)
    });
}

/// Row-wise normalization (layer norm, group norm): `rows` rows of `n` elements, affine index
/// `aff(row, j)` into weight/bias of length `naff`.
#[allow(clippy::too_many_arguments)]
fn rows_norm(
    name: &'static str,
    x: &Tensor,
    n: usize,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
    naff: usize,
    aff: kn::Affine,
    grouping: Grouping,
) -> Result<Tensor> {
    let shape = x.shape().to_vec();
    let out = dispatch_float!(x.dtype(), T => {
        let y = with_slices::<T, _>(&[Some(x), w, b], |s| {
            kn::rows_forward(s[0].expect("given"), n, eps, s[1], s[2], aff)
        })??;
        Tensor::from_vec(y, shape.clone())?
    });
    let fused = Arc::new(
        move |x: &Tensor, go: &Tensor, w: Option<&Tensor>| -> Result<[Tensor; 3]> {
            dispatch_float!(x.dtype(), T => {
                let (dx, dw, db) = with_slices::<T, _>(&[Some(x), Some(go), w], |s| {
                    let (xv, gv) = (s[0].expect("given"), s[1].expect("given"));
                    kn::rows_backward(xv, gv, n, eps, s[2], naff, aff)
                })??;
                let to = |v: Vec<f64>| -> Result<Tensor> {
                    let v: Vec<T> = v.into_iter().map(<T as crate::storage::Elem>::from_f64).collect();
                    let s = w.map(|w| w.shape().to_vec()).unwrap_or_else(|| vec![v.len()]);
                    Tensor::from_vec(v, s)
                };
                Ok([Tensor::from_vec(dx, x.shape().to_vec())?, to(dw)?, to(db)?])
            })
        },
    );
    let composite = Arc::new(
        move |x: &Tensor, go: &Tensor, w: Option<&Tensor>, needs: [bool; 3]| {
            composite_backward(x, go, w, &grouping, eps, needs)
        },
    );
    record_norm(name, x, w, b, &out, fused, composite);
    Ok(out)
}

/// `layer_norm` (NativeLayerNormBackward0).
pub fn layer_norm(
    x: &Tensor,
    normalized_shape: &[usize],
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        let (wu, bu) = (super::up_opt(w)?, super::up_opt(b)?);
        let y = layer_norm(
            &super::up(x)?,
            normalized_shape,
            wu.as_ref(),
            bu.as_ref(),
            eps,
        )?;
        return super::to_dtype(&y, d);
    }
    check_dtypes(x, "LayerNormKernelImpl", &[w, b])?;
    let k = normalized_shape.len();
    let s = x.shape();
    if k == 0 || s.len() < k || s[s.len() - k..] != *normalized_shape {
        return Err(Error::Runtime(format!(
            "Given normalized_shape={}, expected input with shape [*, {}], but got input of size{}",
            fmt_list(normalized_shape),
            normalized_shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            fmt_list(s)
        )));
    }
    for (name, t) in [("weight", w), ("bias", b)] {
        if let Some(t) = t {
            if t.shape() != normalized_shape {
                return Err(Error::Runtime(format!(
                    "Expected {name} to be of same shape as normalized_shape, but got {name} of shape {} and normalized_shape = {}",
                    fmt_list(t.shape()),
                    fmt_list(normalized_shape)
                )));
            }
        }
    }
    let n: usize = normalized_shape.iter().product();
    let nd = s.len() as i64;
    let grouping = Grouping {
        grouped: s.to_vec(),
        red: (nd - k as i64..nd).collect(),
        w_view: normalized_shape.to_vec(),
        affine_sum: (0..nd - k as i64).collect(),
    };
    rows_norm(
        "NativeLayerNormBackward0",
        x,
        n,
        w,
        b,
        eps,
        n,
        kn::Affine::Columns,
        grouping,
    )
}

/// `group_norm` (NativeGroupNormBackward0): x is (N, C, *), statistics per (sample, group).
pub fn group_norm(
    x: &Tensor,
    groups: usize,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        let (wu, bu) = (super::up_opt(w)?, super::up_opt(b)?);
        let y = group_norm(&super::up(x)?, groups, wu.as_ref(), bu.as_ref(), eps)?;
        return super::to_dtype(&y, d);
    }
    check_dtypes(x, "GroupNormKernelImpl", &[w, b])?;
    let s = x.shape().to_vec();
    if s.len() < 2 {
        return Err(Error::Runtime(format!(
            "Expected at least 2 dimensions for input tensor but received {}",
            s.len()
        )));
    }
    let (nb, c) = (s[0], s[1]);
    if groups == 0 || c % groups != 0 {
        return Err(Error::Runtime(format!(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape {} and num_groups={groups}",
            fmt_list(&s)
        )));
    }
    for (name, t) in [("weight", w), ("bias", b)] {
        if let Some(t) = t {
            if t.ndim() != 1 || t.numel() != c {
                return Err(Error::Runtime(format!(
                    "Expected {name} to be a vector of size equal to the number of channels in input, but got {name} of shape {} and input of shape {}",
                    fmt_list(t.shape()),
                    fmt_list(&s)
                )));
            }
        }
    }
    let hw: usize = s[2..].iter().product();
    let cg = c / groups;
    let n = cg * hw;
    let mut w_view = vec![1usize; s.len()];
    w_view[1] = c;
    let grouping = Grouping {
        grouped: vec![nb, groups, n],
        red: vec![2],
        w_view,
        affine_sum: (0..s.len() as i64).filter(|&d| d != 1).collect(),
    };
    rows_norm(
        "NativeGroupNormBackward0",
        x,
        n,
        w,
        b,
        eps,
        c,
        kn::Affine::Channels { groups, cg, hw },
        grouping,
    )
}

/// `batch_norm` (NativeBatchNormBackward0): x is (N, C, *). In training the batch statistics
/// are used and the running statistics (when given) updated in place with `momentum`
/// (unbiased variance); otherwise the running statistics are used.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
                                                        // float32 copies of half-precision running statistics, written back after the update
        let stat32 = |t: Option<&Tensor>| t.map(|t| super::cast(t, DType::F32)).transpose();
        let (rm, rv) = (stat32(running_mean)?, stat32(running_var)?);
        let (wu, bu) = (super::up_opt(w)?, super::up_opt(b)?);
        let y = batch_norm(
            &super::up(x)?,
            wu.as_ref(),
            bu.as_ref(),
            rm.as_ref(),
            rv.as_ref(),
            training,
            momentum,
            eps,
        )?;
        for (orig, upd) in [(running_mean, &rm), (running_var, &rv)] {
            if let (Some(o), Some(u), true) = (orig, upd, training) {
                super::write_values(o, &super::cast(u, o.dtype())?)?;
            }
        }
        return super::to_dtype(&y, d);
    }
    if !x.dtype().is_float() {
        return Err(Error::dtype_not_implemented("batch_norm", x.dtype()));
    }
    let s = x.shape().to_vec();
    if s.len() < 2 {
        return Err(Error::Runtime(format!(
            "Expected at least 2 dimensions for input tensor but received {}",
            s.len()
        )));
    }
    let (outer, c) = (s[0], s[1]);
    let inner: usize = s[2..].iter().product();
    if !training {
        for (name, t) in [("running_mean", running_mean), ("running_var", running_var)] {
            if t.is_none() {
                return Err(Error::Runtime(format!(
                    "{name} must be defined in evaluation mode"
                )));
            }
        }
    }
    for (name, t) in [
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", w),
        ("bias", b),
    ] {
        if let Some(t) = t {
            if t.numel() != c {
                return Err(Error::Runtime(format!(
                    "{name} should contain {c} elements not {}",
                    t.numel()
                )));
            }
        }
    }
    check_dtypes(x, "batch_norm", &[w, b, running_mean, running_var])?;
    let (mean_v, rstd_v): (Vec<f64>, Vec<f64>) = if training {
        let (m, v) = dispatch_float!(x.dtype(), T => with_slice::<T, _>(x, |xs| kn::channel_stats(xs, outer, c, inner))??);
        let count = (outer * inner) as f64;
        if let (Some(rm), Some(rv)) = (running_mean, running_var) {
            let unbiased = count / (count - 1.0).max(1.0);
            let new_m = kn::running_update(&rm.to_f64_vec(), &m, momentum, 1.0);
            let new_v = kn::running_update(&rv.to_f64_vec(), &v, momentum, unbiased);
            super::inplace::write_values(rm, &Tensor::from_vec(new_m, vec![c])?)?;
            super::inplace::write_values(rv, &Tensor::from_vec(new_v, vec![c])?)?;
        }
        let rstd = kn::inv_std(&v, eps);
        (m, rstd)
    } else {
        let m = running_mean.expect("checked").to_f64_vec();
        let rstd = kn::inv_std(&running_var.expect("checked").to_f64_vec(), eps);
        (m, rstd)
    };
    let out = dispatch_float!(x.dtype(), T => {
        let y = with_slices::<T, _>(&[Some(x), w, b], |s| {
            kn::channel_affine(s[0].expect("given"), outer, c, inner, &mean_v, &rstd_v, s[1], s[2])
        })??;
        Tensor::from_vec(y, s.clone())?
    });
    let (mean_v, rstd_v) = (Arc::new(mean_v), Arc::new(rstd_v));
    let (m2, r2) = (mean_v.clone(), rstd_v.clone());
    let fused = Arc::new(
        move |x: &Tensor, go: &Tensor, w: Option<&Tensor>| -> Result<[Tensor; 3]> {
            dispatch_float!(x.dtype(), T => {
                let (dx, dw, db) = with_slices::<T, _>(&[Some(x), Some(go), w], |s| {
                    let (xv, gv) = (s[0].expect("given"), s[1].expect("given"));
                    kn::channel_backward(xv, gv, outer, c, inner, &m2, &r2, s[2], training)
                })??;
                let to = |v: Vec<f64>| Tensor::from_vec(v.into_iter().map(<T as crate::storage::Elem>::from_f64).collect::<Vec<T>>(), vec![c]);
                Ok([Tensor::from_vec(dx, x.shape().to_vec())?, to(dw)?, to(db)?])
            })
        },
    );
    let mut w_view = vec![1usize; s.len()];
    w_view[1] = c;
    let nd = s.len() as i64;
    let grouping = Grouping {
        grouped: s.clone(),
        red: (0..nd).filter(|&d| d != 1).collect(),
        w_view: w_view.clone(),
        affine_sum: (0..nd).filter(|&d| d != 1).collect(),
    };
    let composite = Arc::new(
        move |x: &Tensor, go: &Tensor, w: Option<&Tensor>, needs: [bool; 3]| {
            if training {
                return composite_backward(x, go, w, &grouping, eps, needs);
            }
            // running statistics: constants, the map is affine in x
            let dtype = x.dtype();
            let m = reshape(
                &super::to_dtype(&Tensor::from_vec(mean_v.to_vec(), vec![c])?, dtype)?,
                &w_view,
            )?;
            let r = reshape(
                &super::to_dtype(&Tensor::from_vec(rstd_v.to_vec(), vec![c])?, dtype)?,
                &w_view,
            )?;
            let xhat = mul(&sub(x, &m)?, &r)?;
            let scale = match w {
                Some(w) => mul(&reshape(w, &w_view)?, &r)?,
                None => r.clone(),
            };
            Ok(vec![
                if needs[0] {
                    Some(mul(go, &scale)?)
                } else {
                    None
                },
                if needs[1] {
                    Some(sum_dims(
                        &mul(go, &xhat)?,
                        Some(&grouping.affine_sum),
                        false,
                        None,
                    )?)
                } else {
                    None
                },
                if needs[2] {
                    Some(sum_dims(go, Some(&grouping.affine_sum), false, None)?)
                } else {
                    None
                },
            ])
        },
    );
    record_norm("NativeBatchNormBackward0", x, w, b, &out, fused, composite);
    Ok(out)
}
