//! Reductions, softmax and log_softmax.

use super::binary::{binary, mul, mul_scalar, sub, BinOp, Operand};
use super::shape::{expand, reshape};
use super::{to_dtype, unary};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::reduce as kr;
use crate::kernels::scan as ks;
use crate::layout::{reduce_dims, wrap_dim, Layout};
use crate::storage::Elem;
use crate::tensor::Tensor;

/// A tensor arranged as `(outer, red, inner)` with the reduced dims in the middle block.
struct Plan {
    data: Tensor,
    outer: usize,
    red: usize,
    inner: usize,
    keep_shape: Vec<usize>,
    out_shape: Vec<usize>,
    /// How the kernel's results (row-major over `outer` x `inner`) lay out the output.
    out_layout: Layout,
}

impl Plan {
    /// The output tensor of the kernel's results `v`.
    fn output<T: Elem>(&self, v: Vec<T>) -> Result<Tensor> {
        let out = Tensor::from_vec(v, self.out_shape.clone())?;
        // PyTorch's reductions return contiguous results whatever order they were computed in
        if self.out_layout.is_contiguous() {
            Ok(out)
        } else {
            super::materialize(&out.with_layout(self.out_layout.clone()))
        }
    }
}

/// The output shapes of a reduction of `shape` over `dims`.
fn out_shapes(shape: &[usize], dims: &[usize], keepdim: bool) -> (Vec<usize>, Vec<usize>) {
    let keep_shape = keep_shape(shape, dims);
    let out_shape: Vec<usize> = if keepdim {
        keep_shape.clone()
    } else {
        (0..shape.len())
            .filter(|i| !dims.contains(i))
            .map(|i| shape[i])
            .collect()
    };
    (keep_shape, out_shape)
}

/// Arranges `t` for a reduction over `dims` without copying whenever its elements can be read
/// where they lie: a contiguous tensor whose reduced dims are adjacent, or any dense layout
/// (transposed, permuted) whose reduced dims are adjacent in memory order, which then also
/// gives the output its layout, as PyTorch's reductions do. Otherwise a copy with the
/// reduced dims last (`plan_last`).
fn plan(t: &Tensor, dims: &[usize], keepdim: bool) -> Result<Plan> {
    let shape = t.shape();
    let (keep_shape, out_shape) = out_shapes(shape, dims, keepdim);
    let l = t.layout();
    let adjacent = |ds: &[usize]| ds.windows(2).all(|w| w[1] == w[0] + 1);
    if t.is_contiguous() && adjacent(dims) && !dims.is_empty() {
        let (a, b) = (dims[0], dims[dims.len() - 1] + 1);
        return Ok(Plan {
            data: t.clone(),
            outer: shape[..a].iter().product(),
            red: shape[a..b].iter().product(),
            inner: shape[b..].iter().product(),
            out_layout: Layout::contiguous(out_shape.clone()),
            keep_shape,
            out_shape,
        });
    }
    if !t.is_contiguous() && l.is_non_overlapping_and_dense() && t.numel() > 0 {
        // the dims of size above 1, outermost in memory first
        let mem: Vec<usize> = l
            .memory_order()
            .into_iter()
            .filter(|&d| shape[d] > 1)
            .collect();
        let at: Vec<usize> = (0..mem.len()).filter(|&i| dims.contains(&mem[i])).collect();
        if adjacent(&at) {
            let (a, b) = match (at.first(), at.last()) {
                (Some(&a), Some(&b)) => (a, b + 1),
                _ => (mem.len(), mem.len()),
            };
            let size = |r: &[usize]| r.iter().map(|&d| shape[d]).product::<usize>();
            // results come row-major over the kept dims in memory order
            let mut strides = vec![1usize; shape.len()];
            let mut step = 1;
            for &d in mem.iter().rev().filter(|d| !dims.contains(d)) {
                strides[d] = step;
                step *= shape[d];
            }
            let out_strides: Vec<usize> = (0..shape.len())
                .filter(|d| keepdim || !dims.contains(d))
                .map(|d| strides[d])
                .collect();
            return Ok(Plan {
                data: t.with_layout(Layout {
                    shape: vec![t.numel()],
                    strides: vec![1],
                    offset: l.offset,
                }),
                outer: size(&mem[..a]),
                red: size(&mem[a..b]),
                inner: size(&mem[b..]),
                out_layout: Layout {
                    shape: out_shape.clone(),
                    strides: out_strides,
                    offset: 0,
                },
                keep_shape,
                out_shape,
            });
        }
    }
    plan_last(t, dims, keepdim)
}

/// The plan of an op along one dim that keeps every element (softmax, cumsum): a contiguous
/// tensor as it is, any other copied with `d` last.
fn plan_along(t: &Tensor, d: usize) -> Result<Plan> {
    if t.is_contiguous() {
        plan(t, &[d], true)
    } else {
        plan_last(t, &[d], true)
    }
}

/// Arranges `t` as `(kept, reduced)`, copying unless that permutation is already contiguous.
fn plan_last(t: &Tensor, dims: &[usize], keepdim: bool) -> Result<Plan> {
    let shape = t.shape();
    let n = shape.len();
    let (keep_shape, out_shape) = out_shapes(shape, dims, keepdim);
    let kept: Vec<usize> = (0..n).filter(|i| !dims.contains(i)).collect();
    let order: Vec<usize> = kept.iter().chain(dims.iter()).copied().collect();
    let permuted = t.with_layout(t.layout().permute(&order));
    let data = if permuted.is_contiguous() {
        permuted
    } else {
        super::materialize(&permuted)?
    };
    Ok(Plan {
        data,
        outer: kept.iter().map(|&i| shape[i]).product(),
        red: dims.iter().map(|&i| shape[i]).product(),
        inner: 1,
        out_layout: Layout::contiguous(out_shape.clone()),
        keep_shape,
        out_shape,
    })
}

fn contiguous_slice<T: Elem, R>(t: &Tensor, f: impl FnOnce(&[T]) -> R) -> R {
    let d = t.storage().read::<T>();
    let r = t.layout().contiguous_range().expect("planned contiguous");
    f(&d[r])
}

/// Expands a reduced gradient back over the reduced dims.
pub fn expand_back(g: &Tensor, in_shape: &[usize], keep_shape: &[usize]) -> Result<Tensor> {
    let g = reshape(g, keep_shape)?;
    let s: Vec<i64> = in_shape.iter().map(|&d| d as i64).collect();
    expand(&g, &s)
}

/// `shape` with the reduced dims set to 1.
fn keep_shape(shape: &[usize], rd: &[usize]) -> Vec<usize> {
    let mut k = shape.to_vec();
    for &d in rd {
        k[d] = 1;
    }
    k
}

fn dims_of(dims: Option<&[i64]>, ndim: usize) -> Result<Vec<usize>> {
    reduce_dims(dims, ndim)
}

/// `sum(dim, keepdim, dtype)`: SumBackward0 over everything, SumBackward1 with dims.
pub fn sum_dims(
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    sum_or_nansum(t, dims, keepdim, dtype, false)
}

/// `nansum(dim, keepdim, dtype)`: the sum with NaN counted as zero, in one pass
/// (NansumBackward0: the gradient where the input is not NaN).
pub fn nansum(
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    sum_or_nansum(t, dims, keepdim, dtype, true)
}

fn sum_or_nansum(
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
    nan: bool,
) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(match t.dtype() {
        d if d.is_float() => d,
        _ => DType::I64,
    });
    // kernels only read storage and layout: no detached copy needed unless casting;
    // float16 / bfloat16 accumulate in float32
    let src = super::widen(&if t.dtype() != dtype {
        super::cast(t, dtype)?
    } else {
        t.clone()
    })?;
    let (out_dtype, dtype) = (dtype, src.dtype());
    let rd = dims_of(dims, t.ndim())?;
    let kshape = keep_shape(t.shape(), &rd);
    let out = if let Some(out) = sum_expanded(&src, &rd, keepdim, nan)? {
        out
    } else if src.is_contiguous() && !rd.windows(2).all(|w| w[1] == w[0] + 1) {
        // reduced dims not adjacent (a conv bias grad sums N, H, W): the last run of adjacent
        // dims first, kept as size 1, then the rest; two passes over shrinking data instead
        // of a permuted copy of the whole tensor
        let start = (1..rd.len())
            .rev()
            .find(|&i| rd[i] != rd[i - 1] + 1)
            .expect("dims not adjacent");
        let as_i64 = |d: &[usize]| d.iter().map(|&x| x as i64).collect::<Vec<i64>>();
        let _g = crate::autograd::GradModeGuard::new(false);
        let tail = sum_or_nansum(&src.detach(), Some(&as_i64(&rd[start..])), true, None, nan)?;
        let all = sum_or_nansum(&tail, Some(&as_i64(&rd[..start])), true, None, nan)?;
        if keepdim {
            all
        } else {
            squeeze_reduced(&all, t.shape(), &rd)?
        }
    } else {
        let p = plan(&src, &rd, keepdim)?;
        dispatch!(dtype, T => {
            let v = match dtype {
                DType::F32 if nan => contiguous_slice::<f32, _>(&p.data, |s| kr::reduce(s, p.outer, p.red, p.inner, &kr::NanSumOf))?
                    .into_iter().map(|x| T::from_f64(x as f64)).collect::<Vec<T>>(),
                DType::F64 if nan => contiguous_slice::<f64, _>(&p.data, |s| kr::reduce(s, p.outer, p.red, p.inner, &kr::NanSumOf))?
                    .into_iter().map(T::from_f64).collect(),
                DType::F32 => contiguous_slice::<f32, _>(&p.data, |s| kr::sum(s, p.outer, p.red, p.inner))?
                    .into_iter().map(|x| T::from_f64(x as f64)).collect::<Vec<T>>(),
                DType::F64 => contiguous_slice::<f64, _>(&p.data, |s| kr::sum(s, p.outer, p.red, p.inner))?
                    .into_iter().map(T::from_f64).collect(),
                _ => contiguous_slice::<i64, _>(&p.data, |s| kr::reduce(s, p.outer, p.red, p.inner, &kr::Wrapping(i64::wrapping_add, 0)))?
                    .into_iter().map(T::from_i64).collect(),
            };
            p.output(v)?
        })
    };
    let (out, dtype) = (super::narrow_to(out, out_dtype)?, out_dtype);
    if nan && dtype.is_float() && needs_grad(&[t]) {
        let ishape = t.shape().to_vec();
        let saved = vec![Saved::Input(t.clone())];
        record("NansumBackward0", &[t], &[&out], saved, move |ctx| {
            let x = &ctx.saved[0];
            let not_nan = binary(BinOp::Eq, &x.into(), &x.into())?;
            let g = expand_back(&ctx.grad(0)?, &ishape, &kshape)?;
            Ok(vec![Some(mul(&g, &not_nan)?)])
        });
    } else if dtype.is_float() && needs_grad(&[t]) {
        let name = if dims.is_some_and(|d| !d.is_empty()) {
            "SumBackward1"
        } else {
            "SumBackward0"
        };
        let ishape = t.shape().to_vec();
        record(name, &[t], &[&out], vec![], move |ctx| {
            Ok(vec![Some(expand_back(&ctx.grad(0)?, &ishape, &kshape)?)])
        });
    }
    Ok(out)
}

/// A sum over a tensor with expanded (stride-0) dims, read in place instead of copied: such a
/// dim holds one value, so it is summed as that value times its size when reduced, and the
/// result is broadcast along it when kept. None when the tensor has no expanded dim.
fn sum_expanded(src: &Tensor, rd: &[usize], keepdim: bool, nan: bool) -> Result<Option<Tensor>> {
    let l = src.layout();
    let expanded = |d: usize| l.strides[d] == 0 && l.shape[d] > 1;
    if !(0..l.shape.len()).any(expanded) {
        return Ok(None);
    }
    let _g = crate::autograd::GradModeGuard::new(false);
    let factor: usize = rd
        .iter()
        .filter(|&&d| expanded(d))
        .map(|&d| l.shape[d])
        .product();
    let distinct = src.detach().with_layout(l.stored());
    let dims: Vec<i64> = rd.iter().map(|&d| d as i64).collect();
    let mut s = sum_or_nansum(&distinct, Some(&dims), true, None, nan)?;
    if factor != 1 {
        let k = if s.dtype().is_float() {
            Scalar::Float(factor as f64)
        } else {
            Scalar::Int(factor as i64)
        };
        s = binary(BinOp::Mul, &Operand::T(s), &Operand::S(k))?;
    }
    let kshape: Vec<i64> = keep_shape(src.shape(), rd)
        .iter()
        .map(|&d| d as i64)
        .collect();
    let s = super::contiguous(&expand(&s, &kshape)?)?;
    Ok(Some(if keepdim {
        s
    } else {
        squeeze_reduced(&s, src.shape(), rd)?
    }))
}

/// A keepdim reduction of a tensor of `shape` over `rd`, without the reduced dims.
fn squeeze_reduced(t: &Tensor, shape: &[usize], rd: &[usize]) -> Result<Tensor> {
    let out_shape: Vec<usize> = (0..shape.len())
        .filter(|i| !rd.contains(i))
        .map(|i| shape[i])
        .collect();
    reshape(t, &out_shape)
}

pub fn sum(t: &Tensor) -> Result<Tensor> {
    sum_dims(t, None, false, None)
}

pub fn mean(
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let dt = dtype.unwrap_or(t.dtype());
    if !dt.is_float() {
        return Err(Error::Runtime(format!(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
            dt.kernel_name()
        )));
    }
    let rd = dims_of(dims, t.ndim())?;
    let count: usize = rd.iter().map(|&d| t.shape()[d]).product();
    let s = {
        let _g = crate::autograd::GradModeGuard::new(false);
        sum_dims(t, dims, keepdim, Some(dt))?
    };
    let out = mul_scalar(&s, 1.0 / count as f64)?.detach();
    if needs_grad(&[t]) {
        let name = if dims.is_some_and(|d| !d.is_empty()) {
            "MeanBackward1"
        } else {
            "MeanBackward0"
        };
        let ishape = t.shape().to_vec();
        let kshape = keep_shape(&ishape, &rd);
        record(name, &[t], &[&out], vec![], move |ctx| {
            let g = mul_scalar(&ctx.grad(0)?, 1.0 / count as f64)?;
            Ok(vec![Some(expand_back(&g, &ishape, &kshape)?)])
        });
    }
    Ok(out)
}

/// `prod(dim=None)` (ProdBackward0/1). The gradient is out/x, computed without division where
/// an element is zero.
pub fn prod(t: &Tensor, dim: Option<i64>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(match t.dtype() {
        d if d.is_float() => d,
        _ => DType::I64,
    });
    let src = super::widen(&super::cast(t, dtype)?)?;
    let dims: Option<Vec<i64>> = dim.map(|d| vec![d]);
    let rd = dims_of(dims.as_deref(), t.ndim())?;
    let p = plan(&src, &rd, keepdim && dim.is_some())?;
    let out = match src.dtype() {
        DType::F32 => p.output(contiguous_slice::<f32, _>(&p.data, |s| {
            kr::reduce(s, p.outer, p.red, p.inner, &kr::ProdOf)
        })?)?,
        DType::F64 => p.output(contiguous_slice::<f64, _>(&p.data, |s| {
            kr::reduce(s, p.outer, p.red, p.inner, &kr::ProdOf)
        })?)?,
        _ => p.output(contiguous_slice::<i64, _>(&p.data, |s| {
            kr::reduce(
                s,
                p.outer,
                p.red,
                p.inner,
                &kr::Wrapping(i64::wrapping_mul, 1),
            )
        })?)?,
    };
    let out = super::narrow_to(out, dtype)?;
    if dtype.is_float() && needs_grad(&[t]) {
        let name = if dim.is_some() {
            "ProdBackward1"
        } else {
            "ProdBackward0"
        };
        let ishape = t.shape().to_vec();
        let kshape = p.keep_shape.clone();
        record(
            name,
            &[t],
            &[&out],
            vec![Saved::Input(t.clone()), Saved::Output(out.clone(), 0)],
            move |ctx| {
                let g = ctx.grad(0)?;
                let (x, o) = (&ctx.saved[0], &ctx.saved[1]);
                let ge = expand_back(&g, &ishape, &kshape)?;
                let oe = expand_back(o, &ishape, &kshape)?;
                let has_zero = x.any_f64(|v| v == 0.0);
                let d = if !has_zero {
                    binary(BinOp::Div, &Operand::T(oe), &Operand::T(x.clone()))?
                } else if crate::autograd::is_grad_enabled() && x.requires_grad() {
                    prod_others_differentiable(x, &rd)?
                } else {
                    prod_others(x, &rd)?
                };
                Ok(vec![Some(mul(&ge, &d)?)])
            },
        );
    }
    Ok(out)
}

/// `prod_others` in differentiable ops, for higher-order gradients at zeros: with the group
/// moved last as `X` (.., n), each element's value is `prod(M, -1)` where `M[.., i, j]` is
/// `X[.., j]`, or 1 on the diagonal. O(n) memory per element, so used only when a graph of the
/// backward is built.
fn prod_others_differentiable(x: &Tensor, rd: &[usize]) -> Result<Tensor> {
    let shape = x.shape().to_vec();
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !rd.contains(d)).collect();
    let perm: Vec<i64> = kept.iter().chain(rd).map(|&d| d as i64).collect();
    let kshape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
    let n: usize = rd.iter().map(|&d| shape[d]).product();
    let with = |tail: &[usize]| -> Vec<usize> { kshape.iter().chain(tail).copied().collect() };
    let xs = reshape(&super::shape::permute(x, &perm)?, &with(&[n]))?;
    let rows = super::shape::broadcast_to(&super::shape::unsqueeze(&xs, -2)?, &with(&[n, n]))?;
    let eye = crate::creation::eye(n, n, DType::Bool)?;
    let m = super::binary::where_op(&eye, &Operand::S(Scalar::Float(1.0)), &Operand::T(rows))?;
    let others = prod(&m, Some(-1), false, None)?;
    let pshape: Vec<usize> = perm.iter().map(|&d| shape[d as usize]).collect();
    let mut inv = vec![0i64; perm.len()];
    for (i, &d) in perm.iter().enumerate() {
        inv[d as usize] = i as i64;
    }
    super::shape::permute(&reshape(&others, &pshape)?, &inv)
}

/// For each element, the product of the other elements of its reduction group (no graph).
fn prod_others(x: &Tensor, rd: &[usize]) -> Result<Tensor> {
    let shape = x.shape().to_vec();
    let out = kr::prod_others(&x.to_f64_vec(), &shape, rd)?;
    to_dtype(&Tensor::from_vec(out, shape)?, x.dtype())
}

/// amax / amin over dims (AmaxBackward0 / AminBackward0): ties share the gradient evenly.
pub fn amax(t: &Tensor, dims: Option<&[i64]>, keepdim: bool, want_max: bool) -> Result<Tensor> {
    let rd = dims_of(dims, t.ndim())?;
    for &d in &rd {
        if t.shape()[d] == 0 {
            return Err(Error::Index(format!(
                "{}(): Expected reduction dim {} to have non-zero size.",
                if want_max { "amax" } else { "amin" },
                d
            )));
        }
    }
    if t.numel() == 0 && rd.is_empty() {
        return Err(Error::Runtime(
            "amax(): Expected reduction dim to be specified for input.numel() == 0.".into(),
        ));
    }
    let p = plan(t, &rd, keepdim)?;
    let out = dispatch_all!(t.dtype(), T => {
        let r = kr::Extreme { max: want_max, init: extreme_init::<T>(want_max) };
        let v = contiguous_slice::<T, _>(&p.data, |s| kr::reduce(s, p.outer, p.red, p.inner, &r))?;
        p.output(v)?
    });
    if needs_grad(&[t]) {
        let name = if want_max {
            "AmaxBackward0"
        } else {
            "AminBackward0"
        };
        let ishape = t.shape().to_vec();
        let kshape = p.keep_shape.clone();
        let idims: Vec<i64> = rd.iter().map(|&d| d as i64).collect();
        record_evenly(name, t, &out, ishape, kshape, idims);
    }
    Ok(out)
}

/// The identity of a max (or min) reduction in `T`: -inf (+inf) for floats, the least
/// (greatest) int64, false (true) for bools.
fn extreme_init<T: Elem>(want_max: bool) -> T {
    let d = T::DTYPE;
    if d.is_float() {
        T::from_f64(if want_max {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        })
    } else {
        let (lo, hi) = d.int_bounds();
        T::from_i64(if want_max { lo } else { hi })
    }
}

/// Records the backward of a max/min-like reduction: ties share the gradient evenly.
fn record_evenly(
    name: &'static str,
    t: &Tensor,
    out: &Tensor,
    ishape: Vec<usize>,
    kshape: Vec<usize>,
    dims: Vec<i64>,
) {
    let saved = vec![Saved::Input(t.clone()), Saved::Output(out.clone(), 0)];
    record(name, &[t], &[out], saved, move |ctx| {
        let g = ctx.grad(0)?;
        let (x, o) = (&ctx.saved[0], &ctx.saved[1]);
        Ok(vec![Some(evenly_distribute(
            &g, x, o, &ishape, &kshape, &dims,
        )?)])
    });
}

fn evenly_distribute(
    g: &Tensor,
    x: &Tensor,
    out: &Tensor,
    ishape: &[usize],
    kshape: &[usize],
    dims: &[i64],
) -> Result<Tensor> {
    let oe = expand_back(out, ishape, kshape)?;
    let mask = binary(BinOp::Eq, &Operand::T(x.clone()), &Operand::T(oe))?;
    let maskf = to_dtype(&mask, g.dtype())?;
    let count = sum_dims(&maskf, Some(dims), true, None)?;
    let ge = expand_back(g, ishape, kshape)?;
    let share = binary(
        BinOp::Div,
        &Operand::T(ge),
        &Operand::T(expand_back(&count, ishape, kshape)?),
    )?;
    mul(&share, &maskf)
}

/// `max()`/`min()` of the whole tensor (MaxBackward1 / MinBackward1).
pub fn max_all(t: &Tensor, want_max: bool) -> Result<Tensor> {
    if t.numel() == 0 {
        return Err(Error::Runtime(format!(
            "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
            if want_max { "max" } else { "min" }
        )));
    }
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        amax(t, None, false, want_max)?
    };
    if needs_grad(&[t]) {
        let name = if want_max {
            "MaxBackward1"
        } else {
            "MinBackward1"
        };
        let ishape = t.shape().to_vec();
        let kshape = vec![1; ishape.len()];
        let dims: Vec<i64> = (0..ishape.len() as i64).collect();
        record_evenly(name, t, &out, ishape, kshape, dims);
    }
    Ok(out)
}

/// `max(dim)`/`min(dim)`: values and int64 indices (MaxBackward0 routes the gradient to the index).
pub fn max_dim(t: &Tensor, dim: i64, keepdim: bool, want_max: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, t.ndim())?;
    let name = if want_max {
        "MaxBackward0"
    } else {
        "MinBackward0"
    };
    if t.ndim() == 0 {
        // the value itself; the node saves its index, as for any other shape
        let v = super::materialize(t)?;
        let idx = Tensor::from_vec(vec![0i64], vec![])?;
        if needs_grad(&[t]) {
            let saved = vec![Saved::Input(idx.clone())];
            record(name, &[t], &[&v], saved, |ctx| Ok(vec![Some(ctx.grad(0)?)]));
        }
        return Ok((v, idx));
    }
    let rd = if t.ndim() == 0 { vec![] } else { vec![d] };
    if t.ndim() > 0 && t.shape()[d] == 0 {
        return Err(Error::Index(format!(
            "{}(): Expected reduction dim {} to have non-zero size.",
            if want_max { "max" } else { "min" },
            d
        )));
    }
    let p = plan(t, &rd, keepdim)?;
    let (vals, idx) = dispatch_all!(t.dtype(), T => {
        let (v, i) = contiguous_slice::<T, _>(&p.data, |s| -> Result<(Vec<T>, Vec<i64>)> {
            if p.inner != 1 {
                return kr::arg_extreme(s, p.outer, p.red, p.inner, want_max);
            }
            let r = kr::ArgExtreme(kr::Extreme { max: want_max, init: extreme_init::<T>(want_max) });
            Ok(kr::reduce_rows(s, p.outer, p.red, &r)?.into_iter().unzip())
        })?;
        (p.output(v)?, p.output(i)?)
    });
    if needs_grad(&[t]) {
        let ishape = t.shape().to_vec();
        let kshape = p.keep_shape.clone();
        record(
            name,
            &[t],
            &[&vals],
            vec![Saved::Input(idx.clone())],
            move |ctx| {
                let g = reshape(&ctx.grad(0)?, &kshape)?;
                let i = reshape(&ctx.saved[0], &kshape)?;
                let z = Tensor::zeros(&ishape, g.dtype())?;
                Ok(vec![Some(super::index::scatter_add(&z, d as i64, &i, &g)?)])
            },
        );
    }
    Ok((vals, idx))
}

/// argmax / argmin; `dim=None` reduces the flattened tensor.
pub fn argmax(t: &Tensor, dim: Option<i64>, keepdim: bool, want_max: bool) -> Result<Tensor> {
    match dim {
        Some(d) => Ok(max_dim(&t.detach(), d, keepdim, want_max)?.1),
        None => {
            if t.numel() == 0 {
                return Err(Error::Runtime(format!(
                    "{}(): Expected reduction dim to be specified for input.numel() == 0.",
                    if want_max { "argmax" } else { "argmin" }
                )));
            }
            let flat = super::materialize(t)?;
            let flat = flat.with_layout(Layout::contiguous(vec![t.numel()]));
            let (_, i) = max_dim(&flat, 0, false, want_max)?;
            if keepdim {
                reshape(&i, &vec![1; t.ndim()])
            } else {
                Ok(i)
            }
        }
    }
}

/// var (or std, `take_sqrt`) and mean over `rd` of a float tensor whose reduced elements form
/// rows (the last dims, or any dims once `plan` has gathered them) or the whole tensor, in two
/// passes per row accumulated in f64 (PyTorch's CPU var / std accumulate in double); None for
/// other arrangements, an empty tensor, or no reduced dims.
fn var_mean_rows(
    x: &Tensor,
    rd: &[usize],
    correction: f64,
    keepdim: bool,
    take_sqrt: bool,
) -> Result<Option<(Tensor, Tensor)>> {
    if rd.is_empty() || x.numel() == 0 {
        return Ok(None);
    }
    let p = plan(x, rd, keepdim)?;
    if p.inner != 1 {
        return Ok(None);
    }
    let denom = (p.red as f64 - correction).max(0.0);
    let spread = |m2: f64| {
        let v = m2 / denom;
        if take_sqrt {
            v.sqrt()
        } else {
            v
        }
    };
    macro_rules! rows {
        ($t:ty) => {{
            let (means, m2s) =
                contiguous_slice::<$t, _>(&p.data, |s| kr::deviations(s, p.outer, p.red))?;
            let v: Vec<$t> = m2s.into_iter().map(|m2| spread(m2) as $t).collect();
            let m: Vec<$t> = means.into_iter().map(|m| m as $t).collect();
            (p.output(v)?, p.output(m)?)
        }};
    }
    Ok(Some(match x.dtype() {
        DType::F32 => rows!(f32),
        DType::F64 => rows!(f64),
        _ => return Ok(None),
    }))
}

/// The forward of var / std and mean (see `var`): `var_mean_rows`, or mean, deviations and
/// their squares' sum as ops.
fn var_mean_forward(
    x: &Tensor,
    rd: &[usize],
    correction: f64,
    keepdim: bool,
    take_sqrt: bool,
) -> Result<(Tensor, Tensor)> {
    let _g = crate::autograd::GradModeGuard::new(false);
    if let Some(vm) = var_mean_rows(x, rd, correction, keepdim, take_sqrt)? {
        return Ok(vm);
    }
    let n: usize = rd.iter().map(|&d| x.shape()[d]).product();
    let denom = (n as f64 - correction).max(0.0);
    let idims: Vec<i64> = rd.iter().map(|&d| d as i64).collect();
    let m = mean(x, Some(&idims), true, None)?;
    let c = sub(x, &m)?;
    let sq = sum_dims(&mul(&c, &c)?, Some(&idims), keepdim, None)?;
    let v = mul_scalar(&sq, 1.0 / denom)?;
    let m = if keepdim {
        m
    } else {
        reshape(&m, &out_shapes(x.shape(), rd, false).1)?
    };
    Ok((if take_sqrt { unary::sqrt(&v)? } else { v }, m))
}

/// The gradient of var (or std, from its saved output `out`) for the incoming `g`, in
/// differentiable ops: 2 (x - mean) g / (n - correction), divided by 2 std for std.
#[allow(clippy::too_many_arguments)]
fn var_grad(
    g: &Tensor,
    x: &Tensor,
    out: &Tensor,
    idims: &[i64],
    ishape: &[usize],
    kshape: &[usize],
    denom: f64,
    take_sqrt: bool,
) -> Result<Tensor> {
    let m = mean(x, Some(idims), true, None)?;
    let c = sub(x, &m)?;
    let ge = expand_back(g, ishape, kshape)?;
    if take_sqrt {
        let se = expand_back(out, ishape, kshape)?;
        binary(
            BinOp::Div,
            &Operand::T(mul_scalar(&mul(&ge, &c)?, 1.0 / denom)?),
            &Operand::T(se),
        )
    } else {
        mul_scalar(&mul(&ge, &c)?, 2.0 / denom)
    }
}

/// var / std with `correction` (1 = unbiased). VarBackward0 / StdBackward0.
pub fn var(
    t: &Tensor,
    dims: Option<&[i64]>,
    correction: f64,
    keepdim: bool,
    take_sqrt: bool,
) -> Result<Tensor> {
    Ok(var_mean_impl(t, dims, correction, keepdim, take_sqrt, false)?.0)
}

/// `var_mean` / `std_mean`: both from one pass over the data, recorded as one node
/// (VarMeanBackward0 / StdMeanBackward0) whose gradient sums var's and mean's.
pub fn var_mean(
    t: &Tensor,
    dims: Option<&[i64]>,
    correction: f64,
    keepdim: bool,
    take_sqrt: bool,
) -> Result<(Tensor, Tensor)> {
    var_mean_impl(t, dims, correction, keepdim, take_sqrt, true)
}

fn var_mean_impl(
    t: &Tensor,
    dims: Option<&[i64]>,
    correction: f64,
    keepdim: bool,
    take_sqrt: bool,
    with_mean: bool,
) -> Result<(Tensor, Tensor)> {
    if !t.dtype().is_float() {
        return Err(Error::Runtime(
            "std and var only support floating point and complex dtypes".into(),
        ));
    }
    let rd = dims_of(dims, t.ndim())?;
    let n: usize = rd.iter().map(|&d| t.shape()[d]).product();
    let idims: Vec<i64> = rd.iter().map(|&d| d as i64).collect();
    let denom = (n as f64 - correction).max(0.0);
    let (out, m) = var_mean_forward(&t.detach(), &rd, correction, keepdim, take_sqrt)?;
    if needs_grad(&[t]) {
        let ishape = t.shape().to_vec();
        let kshape = keep_shape(&ishape, &rd);
        let name = match (take_sqrt, with_mean) {
            (true, false) => "StdBackward0",
            (false, false) => "VarBackward0",
            (true, true) => "StdMeanBackward0",
            (false, true) => "VarMeanBackward0",
        };
        let outs: Vec<&Tensor> = if with_mean {
            vec![&out, &m]
        } else {
            vec![&out]
        };
        record(
            name,
            &[t],
            &outs,
            vec![Saved::Input(t.clone()), Saved::Output(out.clone(), 0)],
            move |ctx| {
                let x = &ctx.saved[0];
                let mut parts = vec![];
                if let Some(g) = &ctx.grads[0] {
                    let s = &ctx.saved[1];
                    parts.push(var_grad(
                        g, x, s, &idims, &ishape, &kshape, denom, take_sqrt,
                    )?);
                }
                if let Some(Some(g)) = ctx.grads.get(1) {
                    let gm = mul_scalar(g, 1.0 / n as f64)?;
                    parts.push(expand_back(&gm, &ishape, &kshape)?);
                }
                Ok(vec![Some(sum_grads(parts, &ishape, x.dtype())?)])
            },
        );
    }
    Ok((out, m))
}

/// The sum of the gradient parts an input gets from a node's outputs (zeros of `shape` when
/// none of the outputs had a gradient).
fn sum_grads(parts: Vec<Tensor>, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let mut it = parts.into_iter();
    let Some(first) = it.next() else {
        return Tensor::zeros(shape, dtype);
    };
    it.try_fold(first, |a, b| {
        binary(BinOp::Add, &Operand::T(a), &Operand::T(b))
    })
}

/// `aminmax`: amin and amax over `dims` recorded as one node (AminmaxBackward0), each output's
/// gradient shared evenly over its ties, as PyTorch's.
pub fn aminmax(t: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let (lo, hi) = {
        let _g = crate::autograd::GradModeGuard::new(false);
        (
            amax(t, dims, keepdim, false)?,
            amax(t, dims, keepdim, true)?,
        )
    };
    if needs_grad(&[t]) {
        let rd = dims_of(dims, t.ndim())?;
        let ishape = t.shape().to_vec();
        let kshape = keep_shape(&ishape, &rd);
        let idims: Vec<i64> = rd.iter().map(|&d| d as i64).collect();
        let saved = vec![
            Saved::Input(t.clone()),
            Saved::Output(lo.clone(), 0),
            Saved::Output(hi.clone(), 1),
        ];
        record("AminmaxBackward0", &[t], &[&lo, &hi], saved, move |ctx| {
            let x = &ctx.saved[0];
            let mut parts = vec![];
            for (k, g) in ctx.grads.iter().enumerate() {
                if let Some(g) = g {
                    let o = &ctx.saved[1 + k];
                    parts.push(evenly_distribute(g, x, o, &ishape, &kshape, &idims)?);
                }
            }
            Ok(vec![Some(sum_grads(parts, &ishape, x.dtype())?)])
        });
    }
    Ok((lo, hi))
}

/// logsumexp over dims, stable (LogsumexpBackward0).
/// logsumexp of a float tensor whose reduced elements form contiguous rows (the last dims, or
/// any dims once `plan` has gathered them): one row kernel. None for other arrangements.
fn logsumexp_rows(x: &Tensor, rd: &[usize], keepdim: bool) -> Result<Option<Tensor>> {
    if rd.is_empty() || x.numel() == 0 {
        return Ok(None);
    }
    let p = plan(x, rd, keepdim)?;
    if p.inner != 1 {
        return Ok(None);
    }
    let out = match x.dtype() {
        DType::F32 => contiguous_slice::<f32, _>(&p.data, |s| {
            p.output(kr::reduce_rows(s, p.outer, p.red, &kr::LogSumExp)?)
        })?,
        DType::F64 => contiguous_slice::<f64, _>(&p.data, |s| {
            p.output(kr::reduce_rows(s, p.outer, p.red, &kr::LogSumExp)?)
        })?,
        _ => return Ok(None),
    };
    Ok(Some(out))
}

pub fn logsumexp(t: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    let x = if t.dtype().is_float() {
        t.detach()
    } else {
        to_dtype(&t.detach(), DType::default_float())?
    };
    let rd = dims_of(Some(dims), t.ndim())?;
    let idims: Vec<i64> = rd.iter().map(|&d| d as i64).collect();
    let out = if let Some(out) = logsumexp_rows(&x, &rd, keepdim)? {
        out
    } else {
        let _g = crate::autograd::GradModeGuard::new(false);
        let m = amax(&x, Some(&idims), true, true)?;
        // where the max is infinite, subtract 0 instead (keeps -inf rows at -inf, not nan)
        let finite = binary(
            BinOp::Eq,
            &Operand::T(unary::abs(&m)?),
            &Operand::S(Scalar::Float(f64::INFINITY)),
        )?;
        let m = super::binary::masked_fill(&m, &finite, Scalar::Float(0.0))?;
        let s = sum_dims(&unary::exp(&sub(&x, &m)?)?, Some(&idims), true, None)?;
        let r = super::binary::add(&unary::log(&s)?, &m)?;
        if keepdim {
            r
        } else {
            super::shape::squeeze(&r, Some(&idims))?
        }
    };
    if needs_grad(&[t]) {
        let ishape = t.shape().to_vec();
        let kshape = keep_shape(&ishape, &rd);
        record(
            "LogsumexpBackward0",
            &[t],
            &[&out],
            vec![Saved::Input(t.clone()), Saved::Output(out.clone(), 0)],
            move |ctx| {
                let g = ctx.grad(0)?;
                let ge = expand_back(&g, &ishape, &kshape)?;
                let oe = expand_back(&ctx.saved[1], &ishape, &kshape)?;
                Ok(vec![Some(mul(
                    &ge,
                    &unary::exp(&sub(&ctx.saved[0], &oe)?)?,
                )?)])
            },
        );
    }
    Ok(out)
}

/// Vector p-norm over dims (LinalgVectorNormBackward0).
pub fn norm(t: &Tensor, p: f64, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    if !t.dtype().is_float() {
        return Err(Error::Runtime(format!(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
            t.dtype().kernel_name()
        )));
    }
    let rd = dims_of(dims, t.ndim())?;
    let idims: Vec<i64> = rd.iter().map(|&d| d as i64).collect();
    let x = t.detach();
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let a = unary::abs(&x)?;
        if p == f64::INFINITY {
            amax(&a, Some(&idims), keepdim, true)?
        } else if p == f64::NEG_INFINITY {
            amax(&a, Some(&idims), keepdim, false)?
        } else if p == 0.0 {
            let nz = binary(BinOp::Ne, &Operand::T(a), &Operand::S(Scalar::Float(0.0)))?;
            sum_dims(&to_dtype(&nz, x.dtype())?, Some(&idims), keepdim, None)?
        } else if p == 1.0 {
            sum_dims(&a, Some(&idims), keepdim, None)?
        } else if p == 2.0 {
            unary::sqrt(&sum_dims(&mul(&x, &x)?, Some(&idims), keepdim, None)?)?
        } else {
            let s = sum_dims(
                &binary(BinOp::Pow, &Operand::T(a), &Operand::S(Scalar::Float(p)))?,
                Some(&idims),
                keepdim,
                None,
            )?;
            binary(
                BinOp::Pow,
                &Operand::T(s),
                &Operand::S(Scalar::Float(1.0 / p)),
            )?
        }
    };
    if needs_grad(&[t]) {
        let ishape = t.shape().to_vec();
        let kshape = keep_shape(&ishape, &rd);
        record(
            "LinalgVectorNormBackward0",
            &[t],
            &[&out],
            vec![Saved::Input(t.clone()), Saved::Output(out.clone(), 0)],
            move |ctx| {
                let g = ctx.grad(0)?;
                let (x, o) = (&ctx.saved[0], &ctx.saved[1]);
                let ge = expand_back(&g, &ishape, &kshape)?;
                let oe = expand_back(o, &ishape, &kshape)?;
                let zero = Operand::S(Scalar::Float(0.0));
                let r = if p == 0.0 {
                    mul_scalar(&ge, 0.0)?
                } else if p == 1.0 {
                    mul(&ge, &unary::sign(x)?)?
                } else if p.is_infinite() {
                    let a = unary::abs(x)?;
                    let mask = to_dtype(
                        &binary(BinOp::Eq, &Operand::T(a), &Operand::T(oe))?,
                        x.dtype(),
                    )?;
                    let cnt = expand_back(
                        &sum_dims(&mask, Some(&idims), true, None)?,
                        &ishape,
                        &kshape,
                    )?;
                    let share =
                        binary(BinOp::Div, &Operand::T(mul(&ge, &mask)?), &Operand::T(cnt))?;
                    mul(&share, &unary::sign(x)?)?
                } else {
                    // g * x * |x|^(p-2) / norm^(p-1), 0 where norm == 0
                    let scale = if p == 2.0 {
                        x.clone()
                    } else {
                        let a = unary::abs(x)?;
                        mul(
                            x,
                            &binary(
                                BinOp::Pow,
                                &Operand::T(a),
                                &Operand::S(Scalar::Float(p - 2.0)),
                            )?,
                        )?
                    };
                    let den = if p == 2.0 {
                        oe.clone()
                    } else {
                        binary(
                            BinOp::Pow,
                            &Operand::T(oe.clone()),
                            &Operand::S(Scalar::Float(p - 1.0)),
                        )?
                    };
                    let r = binary(BinOp::Div, &Operand::T(mul(&ge, &scale)?), &Operand::T(den))?;
                    let zmask = binary(BinOp::Eq, &Operand::T(oe), &zero)?;
                    super::binary::masked_fill(&r, &zmask, Scalar::Float(0.0))?
                };
                Ok(vec![Some(r)])
            },
        );
    }
    Ok(out)
}

/// Fused, stable softmax / log_softmax along `dim` (float16 / bfloat16 computed in float32).
fn softmax_forward(x: &Tensor, d: usize, log: bool) -> Result<Tensor> {
    if x.dtype().compute() != x.dtype() {
        return super::narrow_to(softmax_forward(&super::widen(x)?, d, log)?, x.dtype());
    }
    if x.dtype() == DType::F32 && d + 1 == x.ndim() {
        if let Some(r) = x.layout().contiguous_range() {
            let data = x.storage().read::<f32>();
            let len = x.shape()[d];
            let v = kr::softmax_rows(&data[r], len, log)?;
            return Tensor::from_vec(v, x.shape().to_vec());
        }
    }
    let p = plan_along(x, d)?;
    let (outer, red, inner) = (p.outer, p.red, p.inner);
    let out = match x.dtype() {
        DType::F32 if inner == 1 => contiguous_slice::<f32, _>(&p.data, |s| {
            Tensor::from_vec(kr::softmax_rows(s, red, log)?, p.data.shape().to_vec())
        })?,
        DType::F32 => contiguous_slice::<f32, _>(&p.data, |s| {
            Tensor::from_vec(
                kr::softmax_cols(s, outer, red, inner, log)?,
                p.data.shape().to_vec(),
            )
        })?,
        _ => contiguous_slice::<f64, _>(&p.data, |s| {
            // rows are columns of one: the same kernel
            let inner = inner.max(1);
            Tensor::from_vec(
                kr::softmax_cols(s, outer, red, inner, log)?,
                p.data.shape().to_vec(),
            )
        })?,
    };
    Ok(if p.data.ptr_eq(x) || x.is_contiguous() {
        out
    } else {
        // plan() permuted the reduced dim last; undo it
        let n = x.ndim();
        let kept: Vec<usize> = (0..n).filter(|&i| i != d).collect();
        let order: Vec<usize> = kept.iter().copied().chain([d]).collect();
        let pshape: Vec<usize> = order.iter().map(|&i| x.shape()[i]).collect();
        let mut inv = vec![0usize; n];
        for (i, &o) in order.iter().enumerate() {
            inv[o] = i;
        }
        let permuted = out.with_layout(Layout::contiguous(pshape).permute(&inv));
        super::materialize(&permuted)?
    })
}

/// The fused backward of softmax / log_softmax along the last dim of contiguous tensors, when
/// no graph of the gradient is wanted; None where the composite formula must run instead.
fn softmax_backward_fused(g: &Tensor, y: &Tensor, d: usize, log: bool) -> Result<Option<Tensor>> {
    let fits = d + 1 == y.ndim()
        && g.shape() == y.shape()
        && g.dtype() == y.dtype()
        && !needs_grad(&[g, y]);
    let (Some(rg), Some(ry)) = (g.layout().contiguous_range(), y.layout().contiguous_range())
    else {
        return Ok(None);
    };
    if !fits {
        return Ok(None);
    }
    let len = y.shape()[d];
    let shape = y.shape().to_vec();
    Ok(Some(match y.dtype() {
        DType::F32 => {
            let (gd, yd) = (g.storage().read::<f32>(), y.storage().read::<f32>());
            Tensor::from_vec(
                kr::softmax_backward_rows(&gd[rg], &yd[ry], len, log)?,
                shape,
            )?
        }
        DType::F64 => {
            let (gd, yd) = (g.storage().read::<f64>(), y.storage().read::<f64>());
            Tensor::from_vec(
                kr::softmax_backward_rows(&gd[rg], &yd[ry], len, log)?,
                shape,
            )?
        }
        _ => return Ok(None),
    }))
}

pub fn softmax(t: &Tensor, dim: i64, log: bool) -> Result<Tensor> {
    if !t.dtype().is_float() {
        return Err(Error::dtype_not_implemented(
            if log {
                "log_softmax_lastdim_kernel_impl"
            } else {
                "softmax_lastdim_kernel_impl"
            },
            t.dtype(),
        ));
    }
    let d = wrap_dim(dim, t.ndim())?;
    let out = if t.ndim() == 0 {
        if log {
            mul_scalar(&t.detach(), 0.0)?
        } else {
            super::binary::add_scalar(&mul_scalar(&t.detach(), 0.0)?, 1.0)?
        }
    } else if t.numel() == 0 {
        Tensor::zeros(t.shape(), t.dtype())?
    } else {
        softmax_forward(&t.detach(), d, log)?
    };
    if needs_grad(&[t]) {
        let dd = [d as i64];
        if log {
            record(
                "LogSoftmaxBackward0",
                &[t],
                &[&out],
                vec![Saved::Output(out.clone(), 0)],
                move |ctx| {
                    let g = ctx.grad(0)?;
                    let y = &ctx.saved[0];
                    if let Some(gx) = softmax_backward_fused(&g, y, d, true)? {
                        return Ok(vec![Some(gx)]);
                    }
                    let s = sum_dims(&g, Some(&dd), true, None)?;
                    Ok(vec![Some(sub(&g, &mul(&unary::exp(y)?, &s)?)?)])
                },
            );
        } else {
            record(
                "SoftmaxBackward0",
                &[t],
                &[&out],
                vec![Saved::Output(out.clone(), 0)],
                move |ctx| {
                    let g = ctx.grad(0)?;
                    let y = &ctx.saved[0];
                    if let Some(gx) = softmax_backward_fused(&g, y, d, false)? {
                        return Ok(vec![Some(gx)]);
                    }
                    let s = sum_dims(&mul(&g, y)?, Some(&dd), true, None)?;
                    Ok(vec![Some(mul(y, &sub(&g, &s)?)?)])
                },
            );
        }
    }
    Ok(out)
}

/// `cumsum(dim)` (CumsumBackward0); ints and bools accumulate in int64.
pub fn cumsum(t: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(match t.dtype() {
        d if d.is_float() => d,
        _ => DType::I64,
    });
    if t.ndim() == 0 {
        // the value itself (CumsumBackward0 passes the gradient through)
        wrap_dim(dim, 0)?;
        let out = super::clone(&to_dtype(&t.detach(), dtype)?)?;
        if dtype.is_float() && needs_grad(&[t]) {
            record("CumsumBackward0", &[t], &[&out], vec![], |ctx| {
                Ok(vec![Some(ctx.grad(0)?)])
            });
        }
        return Ok(out);
    }
    // float16 / bfloat16 accumulate in float32
    let x = super::widen(&super::cast(t, dtype)?)?;
    let d = wrap_dim(dim, t.ndim())?;
    let out = {
        let p = plan_along(&x, d)?;
        let (red, inner) = (p.red, p.inner);
        let v = dispatch!(@ "cumsum_cpu"; x.dtype(), T => {
            let v = contiguous_slice::<T, _>(&p.data, |s| kr::cumsum(s, red, inner));
            Tensor::from_vec(v, p.data.shape().to_vec())?
        });
        if x.is_contiguous() {
            v
        } else {
            let n = x.ndim();
            let order: Vec<usize> = (0..n).filter(|&i| i != d).chain([d]).collect();
            let mut inv = vec![0usize; n];
            for (i, &o) in order.iter().enumerate() {
                inv[o] = i;
            }
            super::materialize(&v.with_layout(v.layout().permute(&inv)))?
        }
    };
    let out = super::narrow_to(out, dtype)?;
    if dtype.is_float() && needs_grad(&[t]) {
        record("CumsumBackward0", &[t], &[&out], vec![], move |ctx| {
            // d/dx_i sum_{j >= i}: total - cumsum(g) + g
            let g = ctx.grad(0)?;
            let total = sum_dims(&g, Some(&[d as i64]), true, None)?;
            let c = cumsum(&g, d as i64, None)?;
            Ok(vec![Some(super::binary::add(&sub(&total, &c)?, &g)?)])
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// scans and order statistics on the kernels of `kernels::scan`

/// A result computed in the arrangement of `plan_along(x, d)`, seen in `x`'s shape: as it is
/// for a contiguous `x`, else the permutation that put `d` last undone (a view, with the dims
/// in `x`'s memory order when `x` was a permuted dense tensor, as PyTorch lays its result out).
fn unplan_along(x: &Tensor, d: usize, v: Tensor) -> Result<Tensor> {
    if x.is_contiguous() {
        return Ok(v);
    }
    let n = x.ndim();
    let order: Vec<usize> = (0..n).filter(|&i| i != d).chain([d]).collect();
    let mut inv = vec![0usize; n];
    for (i, &o) in order.iter().enumerate() {
        inv[o] = i;
    }
    Ok(v.with_layout(v.layout().permute(&inv)))
}

/// `t` itself when its elements lie contiguously, else a contiguous copy.
fn dense(t: &Tensor) -> Result<Tensor> {
    if t.layout().contiguous_range().is_some() {
        Ok(t.clone())
    } else {
        super::materialize(t)
    }
}

/// `cumprod(dim)` (CumprodBackward0): integers and bools multiply in int64, floats accumulate
/// in float64. The gradient is exact with zeros in the input.
pub fn cumprod(t: &Tensor, dim: i64) -> Result<Tensor> {
    let dtype = if t.dtype().is_float() {
        t.dtype()
    } else {
        DType::I64
    };
    let d = wrap_dim(dim, t.ndim())?;
    let out = if t.ndim() == 0 {
        super::clone(&to_dtype(&t.detach(), dtype)?)?
    } else {
        let x = super::widen(&super::cast(&t.detach(), dtype)?)?;
        let p = plan_along(&x, d)?;
        let (red, inner) = (p.red, p.inner);
        let v = dispatch!(@ "cumprod_cpu"; x.dtype(), T => {
            let v = contiguous_slice::<T, _>(&p.data, |s| ks::cumprod(s, red, inner))?;
            Tensor::from_vec(v, p.data.shape().to_vec())?
        });
        super::narrow_to(unplan_along(&x, d, v)?, dtype)?
    };
    if dtype.is_float() && needs_grad(&[t]) {
        let saved = vec![Saved::Input(t.clone()), Saved::Output(out.clone(), 0)];
        record("CumprodBackward0", &[t], &[&out], saved, move |ctx| {
            let g = ctx.grad(0)?;
            let (x, y) = (&ctx.saved[0], &ctx.saved[1]);
            Ok(vec![Some(cumprod_backward(&g, x, y, d)?)])
        });
    }
    Ok(out)
}

/// PyTorch's `cumprod_backward`: without a graph of the gradient, the exact O(n) kernel
/// (zeros included, no division); with one, `reversed_cumsum(out * g) / x` when `x` has no
/// zero, else the O(n^2) sum over omitted products, both differentiable again.
fn cumprod_backward(g: &Tensor, x: &Tensor, out: &Tensor, d: usize) -> Result<Tensor> {
    if x.ndim() == 0 || x.numel() <= 1 || x.shape()[d] == 1 {
        return Ok(g.clone());
    }
    let shape = x.shape().to_vec();
    let n = shape[d];
    if !needs_grad(&[g, x]) {
        let xc = dense(&super::widen(x)?)?;
        let gc = dense(&super::widen(&super::cast(g, x.dtype())?)?)?;
        let inner: usize = shape[d + 1..].iter().product();
        let v = dispatch_float!(xc.dtype(), T => {
            let (xs, gs) = (xc.storage().read::<T>(), gc.storage().read::<T>());
            let (xr, gr) = (
                xc.layout().contiguous_range().expect("dense"),
                gc.layout().contiguous_range().expect("dense"),
            );
            let v = ks::cumprod_backward(&xs[xr], &gs[gr], n, inner)?;
            Tensor::from_vec(v, shape.clone())?
        });
        return super::narrow_to(v, x.dtype());
    }
    let dd = d as i64;
    if !x.any_f64(|v| v == 0.0) {
        let w = mul(out, g)?;
        let flip = |t: &Tensor| super::rearrange::flip(t, &[dd]);
        let rc = flip(&cumsum(&flip(&w)?, dd, None)?)?;
        return binary(BinOp::Div, &Operand::T(rc), &Operand::T(x.clone()));
    }
    // grad_k = sum over j >= k of g_j * prod(x[..=j] without x_k)
    let mut ones_shape = shape.clone();
    ones_shape[d] = 1;
    let ones = Tensor::full(&ones_shape, Scalar::Float(1.0), x.dtype())?;
    let narrow =
        |t: &Tensor, a: usize, len: usize| super::shape::narrow(t, dd, a as i64, len as i64);
    let mut cols = Vec::with_capacity(n);
    for k in 0..n {
        let omitted = if k == 0 {
            super::shape::cat(&[ones.clone(), cumprod(&narrow(x, 1, n - 1)?, dd)?], dd)?
        } else {
            let until = prod(&narrow(x, 0, k)?, Some(dd), true, None)?;
            if k == n - 1 {
                until
            } else {
                let from = cumprod(&narrow(x, k + 1, n - k - 1)?, dd)?;
                super::shape::cat(&[until.clone(), mul(&until, &from)?], dd)?
            }
        };
        let gk = mul(&narrow(g, k, n - k)?, &omitted)?;
        cols.push(sum_dims(&gk, Some(&[dd]), true, None)?);
    }
    super::shape::cat(&cols, dd)
}

/// `logcumsumexp(dim)` (LogcumsumexpBackward0), in float64 (float16 / bfloat16 through
/// float32), as PyTorch's `_log_add_exp_helper`.
pub fn logcumsumexp(t: &Tensor, dim: i64) -> Result<Tensor> {
    if !t.dtype().is_float() {
        return Err(Error::dtype_not_implemented(
            "logcumsumexp_out_cpu",
            t.dtype(),
        ));
    }
    let d = wrap_dim(dim, t.ndim())?;
    let out = if t.ndim() == 0 {
        super::clone(&t.detach())?
    } else {
        let x = super::widen(&t.detach())?;
        let p = plan_along(&x, d)?;
        let (red, inner) = (p.red, p.inner);
        let v = dispatch_float!(x.dtype(), T => {
            let v = contiguous_slice::<T, _>(&p.data, |s| ks::logcumsumexp(s, red, inner))?;
            Tensor::from_vec(v, p.data.shape().to_vec())?
        });
        super::narrow_to(unplan_along(&x, d, v)?, t.dtype())?
    };
    if needs_grad(&[t]) {
        let saved = vec![Saved::Input(t.clone()), Saved::Output(out.clone(), 0)];
        record("LogcumsumexpBackward0", &[t], &[&out], saved, move |ctx| {
            let g = ctx.grad(0)?;
            let (x, y) = (&ctx.saved[0], &ctx.saved[1]);
            Ok(vec![Some(logcumsumexp_backward(&g, x, y, d)?)])
        });
    }
    Ok(out)
}

/// PyTorch's `logcumsumexp_backward`: the positive and negative parts of the gradient in log
/// space, each through a reversed logcumsumexp.
fn logcumsumexp_backward(g: &Tensor, x: &Tensor, out: &Tensor, d: usize) -> Result<Tensor> {
    if g.ndim() == 0 || g.numel() == 0 {
        return Ok(g.clone());
    }
    if !needs_grad(&[g, x, out]) {
        // the fused reverse pass
        let shape = x.shape().to_vec();
        let (xc, gc, yc) = (
            dense(&super::widen(x)?)?,
            dense(&super::widen(&super::cast(g, x.dtype())?)?)?,
            dense(&super::widen(out)?)?,
        );
        let inner: usize = shape[d + 1..].iter().product();
        let v = dispatch_float!(xc.dtype(), T => {
            let (xs, gs, ys) = (xc.storage().read::<T>(), gc.storage().read::<T>(), yc.storage().read::<T>());
            let r = |t: &Tensor| t.layout().contiguous_range().expect("dense");
            let v = ks::logcumsumexp_backward(&xs[r(&xc)], &gs[r(&gc)], &ys[r(&yc)], shape[d], inner)?;
            Tensor::from_vec(v, shape.clone())?
        });
        return super::narrow_to(v, x.dtype());
    }
    let lowest = match g.dtype() {
        DType::F64 => f64::MIN,
        DType::F16 => half::f16::MIN.to_f64(),
        DType::BF16 => half::bf16::MIN.to_f64(),
        _ => f32::MIN as f64,
    };
    let dd = d as i64;
    let log_abs = super::unary::log(&super::unary::abs(g)?)?;
    let zero = Operand::S(Scalar::Float(0.0));
    let low = Operand::S(Scalar::Float(lowest));
    let part = |op: BinOp| -> Result<Tensor> {
        let mask = binary(op, &Operand::T(g.clone()), &zero)?;
        let lg = super::binary::where_op(&mask, &Operand::T(log_abs.clone()), &low)?;
        let flip = |t: &Tensor| super::rearrange::flip(t, &[dd]);
        let r = flip(&logcumsumexp(&flip(&sub(&lg, out)?)?, dd)?)?;
        unary::exp(&super::binary::add(&r, x)?)
    };
    sub(&part(BinOp::Gt)?, &part(BinOp::Lt)?)
}

/// The backward of an op whose output `d`-slices pick input elements at `idx` (of the
/// output's shape with `d` kept, `kshape`): the gradient added at those indices (PyTorch's
/// `cummaxmin_backward` / `value_selecting_reduction_backward`).
fn record_picked(
    name: &'static str,
    t: &Tensor,
    vals: &Tensor,
    idx: &Tensor,
    d: usize,
    kshape: Vec<usize>,
) {
    let ishape = t.shape().to_vec();
    record(
        name,
        &[t],
        &[vals],
        vec![Saved::Input(idx.clone())],
        move |ctx| {
            let g = ctx.grad(0)?;
            if ishape.is_empty() {
                return Ok(vec![Some(g)]);
            }
            let g = reshape(&g, &kshape)?;
            let i = reshape(&ctx.saved[0], &kshape)?;
            let z = Tensor::zeros(&ishape, g.dtype())?;
            Ok(vec![Some(super::index::scatter_add(&z, d as i64, &i, &g)?)])
        },
    );
}

/// `cummax(dim)` / `cummin(dim)` (CummaxBackward0 / CumminBackward0): values and int64
/// indices; NaN propagates (at the latest NaN's index), ties take the latest index.
pub fn cum_extreme(t: &Tensor, dim: i64, want_max: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, t.ndim())?;
    let x = t.detach();
    let (vals, idx) = if t.ndim() == 0 {
        (super::clone(&x)?, Tensor::from_vec(vec![0i64], vec![])?)
    } else {
        let p = plan_along(&x, d)?;
        let (red, inner) = (p.red, p.inner);
        let shape = p.data.shape().to_vec();
        let (v, i) = dispatch_all!(x.dtype(), T => {
            let (v, i) = contiguous_slice::<T, _>(&p.data, |s| ks::cum_extreme(s, red, inner, want_max))?;
            (Tensor::from_vec(v, shape.clone())?, Tensor::from_vec(i, shape)?)
        });
        (unplan_along(&x, d, v)?, unplan_along(&x, d, i)?)
    };
    if needs_grad(&[t]) {
        let name = if want_max {
            "CummaxBackward0"
        } else {
            "CumminBackward0"
        };
        record_picked(name, t, &vals, &idx, d, t.shape().to_vec());
    }
    Ok((vals, idx))
}

pub use crate::kernels::scan::Pick;

/// The statistic of each row along `d`: `Some(pick)` an order statistic, `None` the mode.
fn row_statistic(
    t: &Tensor,
    dim: i64,
    keepdim: bool,
    stat: Option<Pick>,
) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, t.ndim())?;
    let (fname, name) = match stat {
        Some(Pick::Kth(_)) => ("kthvalue", "KthvalueBackward0"),
        Some(Pick::Median) => ("median", "MedianBackward1"),
        Some(Pick::NanMedian) => ("nanmedian", "NanmedianBackward1"),
        None => ("mode", "ModeBackward0"),
    };
    let x = t.detach();
    let n = if t.ndim() == 0 { 1 } else { t.shape()[d] };
    if n == 0 {
        return Err(Error::Index(format!(
            "{fname}(): Expected reduction dim {d} to have non-zero size."
        )));
    }
    if let Some(Pick::Kth(k)) = stat {
        if k >= n {
            return Err(Error::Runtime(format!(
                "kthvalue(): selected number k out of range for dimension {d}"
            )));
        }
    }
    let (vals, idx) = if t.ndim() == 0 {
        (super::clone(&x)?, Tensor::from_vec(vec![0i64], vec![])?)
    } else {
        // rows along the last dim: read in place when they are, else a copy with `d` last
        let p = plan(&x, &[d], keepdim)?;
        let p = if p.inner == 1 {
            p
        } else {
            plan_last(&x, &[d], keepdim)?
        };
        dispatch_all!(x.dtype(), T => {
            let (v, i) = contiguous_slice::<T, _>(&p.data, |s| match stat {
                Some(pick) => ks::select_rows(s, n, pick),
                None => ks::mode_rows(s, n),
            })?;
            (p.output(v)?, p.output(i)?)
        })
    };
    if needs_grad(&[t]) {
        let kshape = if t.ndim() == 0 {
            vec![]
        } else {
            keep_shape(t.shape(), &[d])
        };
        record_picked(name, t, &vals, &idx, d, kshape);
    }
    Ok((vals, idx))
}

/// `kthvalue(k, dim, keepdim)` (KthvalueBackward0): the k-th smallest (1-based; NaN after
/// every number), ties in index order.
pub fn kthvalue(t: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    if k < 1 {
        let d = wrap_dim(dim, t.ndim())?;
        return Err(Error::Runtime(format!(
            "kthvalue(): selected number k out of range for dimension {d}"
        )));
    }
    row_statistic(t, dim, keepdim, Some(Pick::Kth(k as usize - 1)))
}

/// `median(dim, keepdim)` / `nanmedian(dim, keepdim)` (MedianBackward1 / NanmedianBackward1).
pub fn median_dim(
    t: &Tensor,
    dim: i64,
    keepdim: bool,
    ignore_nan: bool,
) -> Result<(Tensor, Tensor)> {
    let pick = if ignore_nan {
        Pick::NanMedian
    } else {
        Pick::Median
    };
    row_statistic(t, dim, keepdim, Some(pick))
}

/// `mode(dim, keepdim)` (ModeBackward0): the smallest of the most frequent values, at its last
/// index.
pub fn mode(t: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    row_statistic(t, dim, keepdim, None)
}

/// `median()` / `nanmedian()` of all elements (MedianBackward0 / NanmedianBackward0; NaN for
/// an empty tensor). The gradient is spread evenly over the elements equal to the result (over
/// the NaNs when it is NaN), as PyTorch's `evenly_distribute_backward`.
pub fn median_all(t: &Tensor, ignore_nan: bool) -> Result<Tensor> {
    let n = t.numel();
    if n == 0 {
        return Tensor::full(&[], Scalar::Float(f64::NAN), t.dtype());
    }
    let x = dense(&t.detach())?;
    let pick = if ignore_nan {
        Pick::NanMedian
    } else {
        Pick::Median
    };
    let out = dispatch_all!(x.dtype(), T => {
        let (v, _) = contiguous_slice::<T, _>(&x, |s| ks::select_rows(s, n, pick))?;
        Tensor::from_vec(v, vec![])?
    });
    if needs_grad(&[t]) {
        let name = if ignore_nan {
            "NanmedianBackward0"
        } else {
            "MedianBackward0"
        };
        let saved = vec![Saved::Input(t.clone()), Saved::Output(out.clone(), 0)];
        record(name, &[t], &[&out], saved, |ctx| {
            let g = ctx.grad(0)?;
            let (x, o) = (&ctx.saved[0], &ctx.saved[1]);
            let mask = if o.any_f64(f64::is_nan) {
                binary(BinOp::Ne, &Operand::T(x.clone()), &Operand::T(x.clone()))?
            } else {
                binary(BinOp::Eq, &Operand::T(x.clone()), &Operand::T(o.clone()))?
            };
            let maskf = to_dtype(&mask, g.dtype())?;
            let count = sum_dims(&maskf, None, false, None)?;
            let share = binary(BinOp::Div, &Operand::T(g), &Operand::T(count))?;
            Ok(vec![Some(mul(&maskf, &share)?)])
        });
    }
    Ok(out)
}
