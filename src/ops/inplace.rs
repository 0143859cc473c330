//! In-place ops. Without autograd they write through the tensor's layout and bump the version
//! counter. When a graph must be recorded, the op runs out of place on a snapshot that carries
//! the tensor's history, the result is written back, and the tensor's grad_fn becomes the op's
//! node (PyTorch's "rebase history").

use super::binary::{binary_forward, BinOp, Operand};
use super::index::{index_assign, ParsedIndex};
use super::{cast_vec, materialize};
use crate::autograd::forward;
use crate::autograd::graph::{needs_grad, needs_reverse};
use crate::autograd::is_grad_enabled;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::layout::fmt_list;
use crate::tensor::Tensor;

/// PyTorch's `assert_no_internal_overlap`: an expanded tensor (a stride-0 dim of more than one
/// element) cannot be written in place.
pub fn check_no_internal_overlap(x: &Tensor) -> Result<()> {
    let l = x.layout();
    if l.shape
        .iter()
        .zip(&l.strides)
        .any(|(&n, &s)| n > 1 && s == 0)
    {
        return Err(Error::Runtime(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.".into(),
        ));
    }
    Ok(())
}

/// PyTorch's `assert_no_partial_overlap` between the written-to `x` and an input `y`: when both
/// fill a block of storage (non-overlapping and dense) in the same storage, the blocks must be
/// the same elements in the same layout or not meet. (Other layouts PyTorch does not check.)
pub fn check_no_partial_overlap(x: &Tensor, y: &Tensor) -> Result<()> {
    let (lx, ly) = (x.layout(), y.layout());
    if !std::sync::Arc::ptr_eq(x.storage(), y.storage())
        || !lx.is_non_overlapping_and_dense()
        || !ly.is_non_overlapping_and_dense()
        || lx.numel() == 0
        || ly.numel() == 0
    {
        return Ok(());
    }
    let (rx, ry) = (
        lx.offset..lx.offset + lx.numel(),
        ly.offset..ly.offset + ly.numel(),
    );
    let meet = rx.start < ry.end && ry.start < rx.end;
    let full = rx == ry && lx.strides == ly.strides;
    if meet && !full {
        return Err(Error::Runtime(
            "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.".into(),
        ));
    }
    Ok(())
}

/// PyTorch's check_inplace.
pub fn check_inplace(x: &Tensor) -> Result<()> {
    if !is_grad_enabled() {
        return Ok(());
    }
    let m = x.meta();
    if m.grad_fn.is_none() && m.requires_grad && m.view_base.is_none() {
        return Err(Error::Runtime(
            "a leaf Variable that requires grad is being used in an in-place operation.".into(),
        ));
    }
    if let Some(base) = &m.view_base {
        if base.is_leaf() && base.requires_grad() {
            return Err(Error::Runtime(
                "a view of a leaf Variable that requires grad is being used in an in-place operation.".into(),
            ));
        }
    }
    Ok(())
}

fn can_cast(from: DType, to: DType) -> bool {
    !(from.is_float() && !to.is_float() || from != DType::Bool && to == DType::Bool)
}

/// Writes `r` (broadcastable to `x`) into `x` through its layout, casting, and bumps the version.
pub fn write_values(x: &Tensor, r: &Tensor) -> Result<()> {
    if !can_cast(r.dtype(), x.dtype()) {
        return Err(Error::Runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            r.dtype().kernel_name(),
            x.dtype().kernel_name()
        )));
    }
    let rb = if r.shape() == x.shape() {
        r.clone()
    } else {
        let l = r.layout().broadcast_to(x.shape()).map_err(|_| {
            Error::Runtime(format!(
                "output with shape {} doesn't match the broadcast shape {}",
                fmt_list(x.shape()),
                fmt_list(
                    &crate::layout::broadcast_shapes(x.shape(), r.shape())
                        .unwrap_or_else(|_| r.shape().to_vec())
                )
            ))
        })?;
        r.with_layout(l)
    };
    dispatch_all!(x.dtype(), T => {
        let direct = rb.dtype() == x.dtype() && !std::sync::Arc::ptr_eq(x.storage(), rb.storage());
        if r.numel() == 1 && x.numel() > 1 {
            // one value (fill_, zero_, a 0-d source) written through x's layout, not an
            // expanded temporary first (zero_ of 64K floats took 2.3x PyTorch's time)
            let v = cast_vec::<T>(r)?[0];
            let mut d = x.storage().write::<T>();
            elementwise::map_inplace(&mut d, x.layout(), false, move |_: T| v);
        } else if let Some(range) = rb.layout().contiguous_range().filter(|_| direct) {
            // the values as they are, no temporary
            let vals = rb.storage().read::<T>();
            let mut d = x.storage().write::<T>();
            elementwise::assign(&mut d, x.layout(), &vals[range]);
        } else {
            let vals = cast_vec::<T>(&rb)?;
            let mut d = x.storage().write::<T>();
            elementwise::assign(&mut d, x.layout(), &vals);
        }
    });
    x.bump_version();
    Ok(())
}

/// A contiguous copy of `x` that carries `x`'s autograd identity (grad_fn, output_nr).
fn snapshot(x: &Tensor) -> Result<Tensor> {
    let s = materialize(x)?;
    {
        let xm = x.meta();
        let mut sm = s.meta();
        sm.grad_fn = xm.grad_fn.clone();
        sm.output_nr = xm.output_nr;
        sm.requires_grad = xm.requires_grad;
    }
    if let Some(t) = crate::autograd::forward::tangent(x) {
        crate::autograd::forward::set_tangent(&s, Some(t));
    }
    Ok(s)
}

/// Whether an in-place kernel may write `x`'s own elements in one pass, as PyTorch's in-place
/// kernels do: no graph to record (else `apply_inplace` rebases the history) and no two
/// elements at one storage place (an expanded tensor takes the general way).
pub fn writes_directly(x: &Tensor) -> bool {
    !needs_grad(&[x]) && x.layout().is_non_overlapping()
}

/// Runs `f` (an out-of-place op on x's value) and stores its result into `x`.
pub fn apply_inplace(
    x: &Tensor,
    others: &[&Tensor],
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<()> {
    check_no_internal_overlap(x)?;
    check_inplace(x)?;
    let mut all = vec![x];
    all.extend_from_slice(others);
    if !needs_grad(&all) {
        let r = {
            let _g = crate::autograd::GradModeGuard::new(false);
            f(&x.detach())?
        };
        return write_values(x, &r);
    }
    let reverse = needs_reverse(&all);
    if reverse && x.meta().view_base.is_some() {
        return Err(Error::NotImplemented(
            "an in-place operation on a view that must record autograd history is not supported by ferrograd yet; apply the operation out of place".into(),
        ));
    }
    let forward = forward::any_tangent(&all);
    let r = f(&snapshot(x)?)?;
    if r.shape() != x.shape() {
        return Err(Error::Runtime(format!(
            "output with shape {} doesn't match the broadcast shape {}",
            fmt_list(x.shape()),
            fmt_list(r.shape())
        )));
    }
    write_values(x, &r.detach())?;
    if forward {
        // x's tangent becomes its new value's (zero when that does not depend on any tangent)
        let t = match forward::tangent(&r) {
            Some(t) => t,
            None => Tensor::zeros(x.shape(), x.dtype())?,
        };
        forward::set_tangent(x, Some(t));
    }
    if reverse {
        let (gf, nr) = {
            let m = r.meta();
            (m.grad_fn.clone(), m.output_nr)
        };
        let mut m = x.meta();
        crate::autograd::graph::set_history(x, &mut m, gf, nr);
        m.requires_grad = true;
    }
    Ok(())
}

/// `x.add_(other)` etc.
pub fn binary_inplace(op: BinOp, x: &Tensor, other: &Operand) -> Result<()> {
    let others: Vec<&Tensor> = match other {
        Operand::T(t) => vec![t],
        Operand::S(_) => vec![],
    };
    let rt = super::binary::result_type(&[&Operand::T(x.clone()), other]);
    let rt = if op == BinOp::Div && !rt.is_float() {
        DType::default_float()
    } else {
        rt
    };
    check_result_cast(rt, x.dtype())?;
    for y in &others {
        check_no_partial_overlap(x, y)?;
    }
    if direct(op, x, &others, other)? {
        return Ok(());
    }
    apply_inplace(x, &others, |s| {
        super::binary::binary(op, &Operand::T(s.clone()), other)
    })
}

/// `x.op_(other)` in one pass over x's own elements when there is no graph to record
/// (`binary::binary_inplace_direct` says when else); false when it must go the general way.
fn direct(op: BinOp, x: &Tensor, others: &[&Tensor], other: &Operand) -> Result<bool> {
    if !writes_directly(x)
        || needs_grad(others)
        || !super::binary::binary_inplace_direct(op, x, other)?
    {
        return Ok(false);
    }
    x.bump_version();
    Ok(true)
}

/// PyTorch's refusal to write a result of dtype `rt` into a tensor of dtype `dt` in place.
pub(crate) fn check_result_cast(rt: DType, dt: DType) -> Result<()> {
    if !can_cast(rt, dt) {
        return Err(Error::Runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            rt.kernel_name(),
            dt.kernel_name()
        )));
    }
    Ok(())
}

/// `x.add_(other, alpha=s)` / `x.sub_(other, alpha=s)`.
pub fn add_alpha_inplace(x: &Tensor, other: &Operand, alpha: Scalar, subtract: bool) -> Result<()> {
    let others: Vec<&Tensor> = other.tensor().into_iter().collect();
    let rt = super::binary::result_type(&[&Operand::T(x.clone()), other]);
    check_result_cast(rt, x.dtype())?;
    let op = if subtract { BinOp::Sub } else { BinOp::Add };
    // alpha = 1 is x.add_(other): checked as add_alpha checks it, then one pass
    if alpha.to_f64() == 1.0 && !matches!(alpha, Scalar::Bool(_)) && rt != DType::Bool {
        super::binary::add_alpha_check(rt, alpha)?;
        if direct(op, x, &others, other)? {
            return Ok(());
        }
    }
    apply_inplace(x, &others, |s| {
        super::binary::add_alpha(&Operand::T(s.clone()), other, alpha, subtract)
    })
}

/// `x.div_(other, rounding_mode="trunc" | "floor")`.
pub fn div_rounding_inplace(x: &Tensor, other: &Operand, trunc: bool) -> Result<()> {
    let others: Vec<&Tensor> = other.tensor().into_iter().collect();
    let rt = super::binary::result_type(&[&Operand::T(x.clone()), other]);
    check_result_cast(rt, x.dtype())?;
    apply_inplace(x, &others, |s| {
        super::binary::div_rounding(&Operand::T(s.clone()), other, trunc)
    })
}

/// Gradient accumulation: `dst += src`, no autograd, same shape.
pub fn add_inplace_raw(dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.dtype() == src.dtype()
        && matches!(dst.dtype(), DType::F32 | DType::F64)
        && dst.shape() == src.shape()
        && !std::sync::Arc::ptr_eq(dst.storage(), src.storage())
    {
        // one pass, no temporary: a gradient accumulated into .grad
        if let Some(rs) = src.layout().contiguous_range() {
            dispatch_float!(dst.dtype(), T => {
                let s = src.storage().read::<T>();
                let mut d = dst.storage().write::<T>();
                elementwise::update(&mut d, dst.layout(), &s[rs], |a: T, b: T| a + b);
            });
            dst.bump_version();
            return Ok(());
        }
    }
    let _g = crate::autograd::GradModeGuard::new(false);
    let r = binary_forward(
        BinOp::Add,
        &Operand::T(dst.detach()),
        &Operand::T(src.detach()),
    )?;
    write_values(dst, &r)
}

pub fn fill_(x: &Tensor, v: Scalar) -> Result<()> {
    check_inplace(x)?;
    let t = Tensor::scalar(v, x.dtype());
    if needs_grad(&[x]) {
        return apply_inplace(x, &[], |s| {
            super::binary::binary(
                BinOp::Mul,
                &Operand::T(s.clone()),
                &Operand::S(Scalar::Float(0.0)),
            )
            .and_then(|z| super::binary::binary(BinOp::Add, &Operand::T(z), &Operand::T(t.clone())))
        });
    }
    write_values(x, &t)
}

pub fn zero_(x: &Tensor) -> Result<()> {
    fill_(x, Scalar::Int(0))
}

/// `x.copy_(src)`: broadcasting, casting, differentiable w.r.t. src.
pub fn copy_(x: &Tensor, src: &Tensor) -> Result<()> {
    check_inplace(x)?;
    if needs_grad(&[x, src]) {
        let dt = x.dtype();
        let shape: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
        return apply_inplace(x, &[src], |s| {
            let values = {
                let _g = crate::autograd::GradModeGuard::new(false);
                let c = super::to_dtype(&src.detach(), dt)?;
                materialize(&super::shape::expand(&c, &shape)?)?
            };
            // PyTorch's CopyBackwards: a zero gradient for the overwritten value, the incoming
            // one summed to src's shape (and cast to its dtype) for src
            let (src_shape, src_dt) = (src.shape().to_vec(), src.dtype());
            crate::autograd::graph::record(
                "CopyBackwards",
                &[s, src],
                &[&values],
                vec![],
                move |ctx| {
                    let g = ctx.grad(0)?;
                    let gs = if ctx.needs(0) {
                        Some(Tensor::zeros(g.shape(), g.dtype())?)
                    } else {
                        None
                    };
                    let gsrc = if ctx.needs(1) {
                        Some(super::to_dtype(
                            &super::shape::sum_to(&g, &src_shape)?,
                            src_dt,
                        )?)
                    } else {
                        None
                    };
                    Ok(vec![gs, gsrc])
                },
            );
            Ok(values)
        });
    }
    let r = if src.dtype() != x.dtype() {
        super::to_dtype(&src.detach(), x.dtype())?
    } else {
        src.detach()
    };
    // copy_ casts freely (float -> int truncates), unlike arithmetic in-place ops
    let r = if !can_cast(r.dtype(), x.dtype()) {
        super::to_dtype(&r, x.dtype())?
    } else {
        r
    };
    write_values(x, &r)
}

/// Raw write of `value` into `x[idx]` (no autograd).
pub fn write_index(x: &Tensor, idx: &ParsedIndex, value: &Tensor) -> Result<()> {
    let _g = crate::autograd::GradModeGuard::new(false);
    let target = idx.view(&x.detach())?;
    match &idx.advanced {
        None => {
            let v = if value.dtype() != x.dtype() {
                super::to_dtype(value, x.dtype())?
            } else {
                value.clone()
            };
            write_values(&target, &v)
        }
        Some(ind) => {
            let v = if value.dtype() != x.dtype() {
                super::to_dtype(value, x.dtype())?
            } else {
                value.clone()
            };
            let r = super::index::index_put(&materialize(&target)?, ind, &v, false)?;
            write_values(&target, &r)
        }
    }
}

/// `x[idx] = value`.
pub fn setitem(x: &Tensor, idx: &ParsedIndex, value: &Operand) -> Result<()> {
    let vt = match value {
        Operand::T(t) => Some(t.clone()),
        Operand::S(_) => None,
    };
    let mut all = vec![x];
    if let Some(v) = &vt {
        all.push(v);
    }
    if needs_grad(&all) {
        let others: Vec<&Tensor> = vt.iter().collect();
        return apply_inplace(x, &others, |s| index_assign(s, idx, value));
    }
    check_inplace(x)?;
    let v = match value {
        Operand::T(t) => t.clone(),
        Operand::S(s) => Tensor::scalar(*s, x.dtype()),
    };
    write_index(x, idx, &v)
}
