//! Optimizer steps: one call updates every parameter of a group in place (no autograd), with
//! PyTorch's version-counter bumps, so a Python optimizer makes one native call per step.

use super::{materialize, write_values};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::optim::{self as k, Arrays, Real};
use crate::layout::fmt_list;
use crate::storage::Elem;
use crate::tensor::Tensor;
use std::sync::Arc;

/// One parameter's update: the tensors written (parameter first, then its state) with how many
/// in-place ops PyTorch applies to each (its version bumps), and the gradient.
struct Update<'a> {
    muts: Vec<(&'a Tensor, u64)>,
    grad: &'a Tensor,
}

fn check(name: &str, u: &Update<'_>) -> Result<()> {
    let p = u.muts[0].0;
    if !p.dtype().is_float() {
        return Err(Error::Runtime(format!(
            "{name}: parameters must be float32 or float64, got {}",
            p.dtype().kernel_name()
        )));
    }
    crate::ops::check_inplace(p)?;
    for &(t, _) in u.muts.iter().chain([(u.grad, 0)].iter()) {
        if t.dtype() != p.dtype() || t.shape() != p.shape() {
            return Err(Error::Runtime(format!(
                "{name}: expected a {} tensor of shape {} like its parameter, got {} of shape {}",
                p.dtype().kernel_name(),
                fmt_list(p.shape()),
                t.dtype().kernel_name(),
                fmt_list(t.shape())
            )));
        }
    }
    for (i, &(t, _)) in u.muts.iter().enumerate() {
        if !t.is_contiguous() {
            return Err(Error::NotImplemented(format!(
                "{name} on a non-contiguous parameter or state tensor (shape {}, strides {})",
                fmt_list(t.shape()),
                fmt_list(&t.layout().strides)
            )));
        }
        if u.muts[..i]
            .iter()
            .any(|(o, _)| Arc::ptr_eq(o.storage(), t.storage()))
        {
            return Err(Error::Runtime(format!(
                "{name}: a parameter and its optimizer state must not share memory"
            )));
        }
    }
    Ok(())
}

fn apply<T: Real + Elem>(u: &Update<'_>, f: &(dyn Fn(Arrays<'_, T>) + Sync)) -> Result<()> {
    // a gradient sharing memory with a written tensor is read from a copy
    let shared = u
        .muts
        .iter()
        .any(|(t, _)| Arc::ptr_eq(t.storage(), u.grad.storage()));
    let g = if u.grad.is_contiguous() && !shared {
        u.grad.clone()
    } else {
        materialize(u.grad)?
    };
    {
        let gguard = g.storage().read::<T>();
        let grange = g.layout().contiguous_range().expect("contiguous");
        let mut guards: Vec<_> = u
            .muts
            .iter()
            .map(|(t, _)| t.storage().write::<T>())
            .collect();
        let slices: Vec<&mut [T]> = guards
            .iter_mut()
            .zip(&u.muts)
            .map(|(w, (t, _))| &mut w[t.layout().contiguous_range().expect("contiguous")])
            .collect();
        k::for_chunks(
            Arrays {
                muts: slices,
                grad: &gguard[grange],
            },
            f,
        );
    }
    for &(t, n) in &u.muts {
        for _ in 0..n {
            t.bump_version();
        }
    }
    Ok(())
}

/// `apply` on float32 copies of a half-precision parameter, its state and gradient; the written
/// tensors get the rounded results (with their version bumps).
fn apply_widened(u: &Update<'_>, f: &(dyn Fn(Arrays<'_, f32>) + Sync)) -> Result<()> {
    let wide = u
        .muts
        .iter()
        .map(|(t, _)| materialize(&super::cast(t, DType::F32)?))
        .collect::<Result<Vec<_>>>()?;
    let g = super::cast(u.grad, DType::F32)?;
    let w = Update {
        muts: wide.iter().map(|t| (t, 0)).collect(),
        grad: &g,
    };
    apply::<f32>(&w, f)?;
    for (&(t, n), wt) in u.muts.iter().zip(&wide) {
        if n > 0 {
            write_values(t, wt)?; // one version bump
            for _ in 1..n {
                t.bump_version();
            }
        }
    }
    Ok(())
}

/// Runs `kernel` on one parameter's update in its dtype.
macro_rules! run_update {
    ($u:expr, $kernel:path, $h:expr) => {{
        let h = $h;
        match $u.muts[0].0.dtype() {
            DType::F32 => apply::<f32>(&$u, &move |a| $kernel(a, h)),
            DType::F64 => apply::<f64>(&$u, &move |a| $kernel(a, h)),
            // float16 / bfloat16: the update computed in float32, rounded back
            DType::F16 | DType::BF16 => apply_widened(&$u, &move |a| $kernel(a, h)),
            d => Err(Error::dtype_not_implemented(stringify!($kernel), d)),
        }
    }};
}

fn lengths(name: &str, n: usize, lists: &[(&str, usize)]) -> Result<()> {
    for &(what, len) in lists {
        if len != n {
            return Err(Error::Runtime(format!(
                "{name}: expected {n} {what} (one per parameter), got {len}"
            )));
        }
    }
    Ok(())
}

/// `step_t += 1` on a 0-d step tensor; returns the new count.
fn increment_step(t: &Tensor) -> Result<f64> {
    if t.numel() != 1 || !t.dtype().is_float() {
        return Err(Error::Runtime(format!(
            "optimizer step counts must be one-element float tensors, got {} of shape {}",
            t.dtype().kernel_name(),
            fmt_list(t.shape())
        )));
    }
    let v = t.item()?.to_f64() + 1.0;
    write_values(t, &Tensor::scalar(Scalar::Float(v), t.dtype()))?;
    Ok(t.item()?.to_f64())
}

/// PyTorch's single-tensor SGD over a group; returns the momentum buffers (created from the
/// gradient on a parameter's first step; none when momentum is 0).
pub fn sgd_step(
    params: &[Tensor],
    grads: &[Tensor],
    bufs: Vec<Option<Tensor>>,
    a: k::Sgd,
) -> Result<Vec<Option<Tensor>>> {
    let name = "SGD";
    lengths(
        name,
        params.len(),
        &[("gradients", grads.len()), ("momentum buffers", bufs.len())],
    )?;
    let mut out = Vec::with_capacity(params.len());
    for ((p, g), buf) in params.iter().zip(grads).zip(bufs) {
        let (buf, init) = match (a.momentum != 0.0, buf) {
            (false, _) => (None, false),
            (true, Some(b)) => (Some(b), false),
            (true, None) => (Some(Tensor::zeros(p.shape(), p.dtype())?), true),
        };
        let mut muts = vec![(p, 1)];
        if let Some(b) = &buf {
            // a new buffer is a clone of the gradient (no bump); an old one gets mul_ and add_
            muts.push((b, if init { 0 } else { 2 }));
        }
        let u = Update { muts, grad: g };
        check(name, &u)?;
        let h = k::Sgd {
            init_buffer: init,
            ..a
        };
        run_update!(u, k::sgd, h)?;
        out.push(buf);
    }
    Ok(out)
}

pub struct AdamState<'a> {
    pub exp_avgs: &'a [Tensor],
    pub exp_avg_sqs: &'a [Tensor],
    pub max_exp_avg_sqs: &'a [Tensor],
    pub steps: &'a [Tensor],
}

/// PyTorch's single-tensor Adam / AdamW over a group.
pub fn adam_step(params: &[Tensor], grads: &[Tensor], s: &AdamState<'_>, a: k::Adam) -> Result<()> {
    let name = if a.decoupled { "AdamW" } else { "Adam" };
    let n = params.len();
    lengths(
        name,
        n,
        &[
            ("gradients", grads.len()),
            ("exp_avgs", s.exp_avgs.len()),
            ("exp_avg_sqs", s.exp_avg_sqs.len()),
            ("steps", s.steps.len()),
            (
                "max_exp_avg_sqs",
                if a.amsgrad {
                    s.max_exp_avg_sqs.len()
                } else {
                    n
                },
            ),
        ],
    )?;
    for i in 0..n {
        let p = &params[i];
        let p_bumps = if a.decoupled && a.weight_decay != 0.0 {
            2
        } else {
            1
        };
        let mut muts = vec![(p, p_bumps), (&s.exp_avgs[i], 1), (&s.exp_avg_sqs[i], 2)];
        if a.amsgrad {
            muts.push((&s.max_exp_avg_sqs[i], 1));
        }
        let u = Update {
            muts,
            grad: &grads[i],
        };
        check(name, &u)?;
        let step = increment_step(&s.steps[i])?;
        let h = k::Adam { step, ..a };
        run_update!(u, k::adam, h)?;
    }
    Ok(())
}

pub struct RmsPropState<'a> {
    pub square_avgs: &'a [Tensor],
    pub grad_avgs: &'a [Tensor],
    pub momentum_buffers: &'a [Tensor],
    pub steps: &'a [Tensor],
}

/// PyTorch's single-tensor RMSprop over a group.
pub fn rmsprop_step(
    params: &[Tensor],
    grads: &[Tensor],
    s: &RmsPropState<'_>,
    h: k::RmsProp,
) -> Result<()> {
    let name = "RMSprop";
    let n = params.len();
    lengths(
        name,
        n,
        &[
            ("gradients", grads.len()),
            ("square_avgs", s.square_avgs.len()),
            ("steps", s.steps.len()),
            ("grad_avgs", if h.centered { s.grad_avgs.len() } else { n }),
            (
                "momentum_buffers",
                if h.momentum > 0.0 {
                    s.momentum_buffers.len()
                } else {
                    n
                },
            ),
        ],
    )?;
    for i in 0..n {
        let mut muts = vec![(&params[i], 1), (&s.square_avgs[i], 2)];
        if h.centered {
            muts.push((&s.grad_avgs[i], 1));
        }
        if h.momentum > 0.0 {
            muts.push((&s.momentum_buffers[i], 2));
        }
        let u = Update {
            muts,
            grad: &grads[i],
        };
        check(name, &u)?;
        increment_step(&s.steps[i])?;
        run_update!(u, k::rmsprop, h)?;
    }
    Ok(())
}

/// PyTorch's single-tensor Adagrad over a group.
pub fn adagrad_step(
    params: &[Tensor],
    grads: &[Tensor],
    sums: &[Tensor],
    steps: &[Tensor],
    a: k::Adagrad,
) -> Result<()> {
    let name = "Adagrad";
    let n = params.len();
    lengths(
        name,
        n,
        &[
            ("gradients", grads.len()),
            ("state sums", sums.len()),
            ("steps", steps.len()),
        ],
    )?;
    for i in 0..n {
        let u = Update {
            muts: vec![(&params[i], 1), (&sums[i], 1)],
            grad: &grads[i],
        };
        check(name, &u)?;
        let step = increment_step(&steps[i])?;
        let h = k::Adagrad { step, ..a };
        run_update!(u, k::adagrad, h)?;
    }
    Ok(())
}

/// PyTorch's single-tensor Adadelta over a group.
pub fn adadelta_step(
    params: &[Tensor],
    grads: &[Tensor],
    square_avgs: &[Tensor],
    acc_deltas: &[Tensor],
    steps: &[Tensor],
    h: k::Adadelta,
) -> Result<()> {
    let name = "Adadelta";
    let n = params.len();
    lengths(
        name,
        n,
        &[
            ("gradients", grads.len()),
            ("square_avgs", square_avgs.len()),
            ("acc_deltas", acc_deltas.len()),
            ("steps", steps.len()),
        ],
    )?;
    for i in 0..n {
        let u = Update {
            muts: vec![(&params[i], 1), (&square_avgs[i], 2), (&acc_deltas[i], 2)],
            grad: &grads[i],
        };
        check(name, &u)?;
        increment_step(&steps[i])?;
        run_update!(u, k::adadelta, h)?;
    }
    Ok(())
}

/// `clip_grad_norm_`'s total norm, as PyTorch computes it: the norm of each tensor (the
/// reduction kernel of `norm`), then the same norm of those norms, in the promoted dtype
/// (float32 for an empty list).
pub fn foreach_norm(ts: &[Tensor], ord: f64) -> Result<Tensor> {
    let _g = crate::autograd::GradModeGuard::new(false);
    let dtype = if ts.iter().any(|t| t.dtype() == DType::F64) {
        DType::F64
    } else {
        DType::F32
    };
    let norms = ts
        .iter()
        .map(|t| super::to_dtype(&super::norm(t, ord, None, false)?, dtype))
        .collect::<Result<Vec<_>>>()?;
    if norms.is_empty() {
        return Ok(Tensor::scalar(Scalar::Float(0.0), dtype));
    }
    super::norm(&super::stack(&norms, 0)?, ord, None, false)
}

/// `t.mul_(scalar)` for each tensor.
pub fn foreach_mul_(ts: &[Tensor], scalar: f64) -> Result<()> {
    let s = super::Operand::S(Scalar::Float(scalar));
    ts.iter()
        .try_for_each(|t| super::binary_inplace(super::BinOp::Mul, t, &s))
}

/// `dst.copy_(src).mul_(scale)` in one pass, without autograd and without a temporary:
/// DistributedDataParallel's bucket fill, each gradient divided by the world size on its way into
/// its bucket slot. `src` may be `dst` itself (then `dst` is scaled in place). One version bump
/// on `dst`, as `copy_`.
pub fn copy_scaled_(dst: &Tensor, src: &Tensor, scale: f64) -> Result<()> {
    if dst.shape() != src.shape() {
        return Err(Error::Runtime(format!(
            "_copy_scaled_: expected a source of shape {}, got {}",
            fmt_list(dst.shape()),
            fmt_list(src.shape())
        )));
    }
    crate::ops::check_inplace(dst)?;
    let ranges = (
        dst.layout().contiguous_range(),
        src.layout().contiguous_range(),
    );
    match (dst.dtype(), src.dtype(), ranges) {
        (DType::F32, DType::F32, (Some(d), Some(s))) => scale_into::<f32>(dst, src, d, s, scale),
        (DType::F64, DType::F64, (Some(d), Some(s))) => scale_into::<f64>(dst, src, d, s, scale),
        _ => {
            // other dtypes and layouts: the product, then written (mul_ and copy_'s casts)
            let _g = crate::autograd::GradModeGuard::new(false);
            let s = super::Operand::S(Scalar::Float(scale));
            let product =
                super::binary::binary(super::BinOp::Mul, &super::Operand::T(src.detach()), &s)?;
            write_values(dst, &product)
        }
    }
}

fn scale_into<T: Real + Elem>(
    dst: &Tensor,
    src: &Tensor,
    d: std::ops::Range<usize>,
    s: std::ops::Range<usize>,
    scale: f64,
) -> Result<()> {
    let c = T::of(scale);
    if Arc::ptr_eq(dst.storage(), src.storage()) {
        if d != s && d.start < s.end && s.start < d.end {
            // overlapping, not identical: read from a copy
            return scale_into::<T>(dst, &materialize(src)?, d, 0..s.len(), scale);
        }
        let mut w = dst.storage().write::<T>();
        if d == s {
            w[d].iter_mut().for_each(|x| *x = *x * c);
        } else {
            let (lo, hi) = (d.start.min(s.start), d.start.max(s.start));
            let (head, tail) = w.split_at_mut(hi);
            let (to, from) = if d.start < s.start {
                (&mut head[lo..lo + d.len()], &tail[..s.len()])
            } else {
                (&mut tail[..d.len()], &head[lo..lo + s.len()])
            };
            to.iter_mut().zip(from).for_each(|(x, &y)| *x = y * c);
        }
    } else {
        let r = src.storage().read::<T>();
        let mut w = dst.storage().write::<T>();
        w[d].iter_mut().zip(&r[s]).for_each(|(x, &y)| *x = y * c);
    }
    dst.bump_version();
    Ok(())
}
