//! Ops: each is a forward (a kernel call), what it saves, and its backward formula written with
//! these same differentiable ops, side by side.

pub mod activation;
pub mod attention;
pub mod autocast;
pub mod binary;
pub mod conv;
pub mod counts;
pub mod diagonal;
pub mod grid_sample;
pub mod index;
pub mod inplace;
pub mod linalg;
pub mod loss;
pub mod math;
pub mod matmul;
pub mod norm;
pub mod optim;
pub mod pointwise;
pub mod rearrange;
pub mod reduce;
pub mod resample;
pub mod rnn;
pub mod scatter_reduce;
pub mod shape;
pub mod special;
pub mod unary;

pub use binary::*;
pub use index::*;
pub use inplace::*;
pub use math::*;
pub use matmul::*;
pub use reduce::*;
pub use shape::*;
pub use special::{i0, i0_};
pub use unary::*;

use crate::autograd::graph::{needs_grad, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::layout::Layout;
use crate::storage::Elem;
use crate::tensor::Tensor;

/// A contiguous copy of `t`'s elements as a new tensor (no autograd).
pub fn materialize(t: &Tensor) -> Result<Tensor> {
    dispatch_all!(t.dtype(), T => {
        let data = t.storage().read::<T>();
        let v = elementwise::unary(&data, t.layout(), |x: T| x)?;
        drop(data);
        Tensor::from_vec(v, t.shape().to_vec())
    })
}

/// Runs `f` on the elements of each given tensor as a contiguous slice: borrowed from the
/// storage when the tensor is contiguous, copied (without a graph) only when it is not. For
/// kernels over slices, which then never copy contiguous inputs.
pub fn with_slices<T: Elem, R>(
    ts: &[Option<&Tensor>],
    f: impl FnOnce(&[Option<&[T]>]) -> R,
) -> Result<R> {
    let owned: Vec<Option<Tensor>> = ts
        .iter()
        .map(|t| {
            t.map(|t| {
                if t.is_contiguous() {
                    Ok(t.clone())
                } else {
                    materialize(t)
                }
            })
            .transpose()
        })
        .collect::<Result<_>>()?;
    let owners = storage_owners(&owned.iter().map(Option::as_ref).collect::<Vec<_>>());
    let guards: Vec<Option<crate::storage::ReadGuard<'_, T>>> = owned
        .iter()
        .enumerate()
        .map(|(i, t)| {
            t.as_ref()
                .filter(|_| owners[i] == i)
                .map(|t| t.storage().read::<T>())
        })
        .collect();
    let slices: Vec<Option<&[T]>> = owned
        .iter()
        .zip(&owners)
        .map(|(t, &o)| {
            t.as_ref().map(|t| {
                let r = t
                    .layout()
                    .contiguous_range()
                    .expect("contiguous by construction");
                &guards[o].as_ref().expect("the owner holds the lock")[r]
            })
        })
        .collect();
    Ok(f(&slices))
}

/// For each tensor, the index of the first one sharing its storage: kernels take one read lock
/// per distinct storage, because taking a std RwLock twice for reading on one thread can
/// deadlock when a writer queues in between.
pub fn storage_owners(ts: &[Option<&Tensor>]) -> Vec<usize> {
    (0..ts.len())
        .map(|i| {
            (0..i)
                .find(|&j| match (ts[j], ts[i]) {
                    (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a.storage(), b.storage()),
                    _ => false,
                })
                .unwrap_or(i)
        })
        .collect()
}

/// `with_slices` for one tensor.
pub fn with_slice<T: Elem, R>(t: &Tensor, f: impl FnOnce(&[T]) -> R) -> Result<R> {
    with_slices(&[Some(t)], |s| f(s[0].expect("given")))
}

/// Elements converted to `U` (row-major), for kernels computing in another dtype.
pub fn cast_vec<U: Elem>(t: &Tensor) -> Result<Vec<U>> {
    dispatch_all!(t.dtype(), T => {
        let data = t.storage().read::<T>();
        elementwise::unary(&data, t.layout(), convert::<T, U>)
    })
}

/// Value conversion between element types, as PyTorch's `to(dtype)` does it.
#[inline(always)]
pub fn convert<T: Elem, U: Elem>(x: T) -> U {
    match (T::DTYPE, U::DTYPE) {
        (t, _) if !t.is_float() => U::from_i64(x.to_i64()),
        (_, DType::Bool) => U::from_bool(x.is_true()),
        _ => U::from_f64(x.to_f64()),
    }
}

/// `t` in `dtype`, without autograd: `t` itself when it already has it, else a copy keeping the
/// layout of `t` where PyTorch's does (preserve_format).
pub fn cast(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.dtype() == dtype {
        return Ok(t.clone());
    }
    Ok(dispatch_all!(t.dtype(), T => {
        let data = t.storage().read::<T>();
        dispatch_all!(dtype, U => Tensor::from_mapped(elementwise::map_unary(&data, t.layout(), false, convert::<T, U>)?))
    }))
}

/// `t` in the dtype its arithmetic runs in (`DType::compute`: float16 and bfloat16 in float32,
/// the narrow integers in int64), without autograd; `t` itself for the other dtypes.
pub fn widen(t: &Tensor) -> Result<Tensor> {
    cast(t, t.dtype().compute())
}

/// A kernel's output computed in `dtype.compute()` rounded (or wrapped) back to `dtype`, as
/// PyTorch's CPU kernels store half-precision and narrow-integer results; outputs of other
/// dtypes (a comparison's bool, a true division's float) are returned as they are.
pub fn narrow_to(out: Tensor, dtype: DType) -> Result<Tensor> {
    if dtype != out.dtype() && out.dtype() == dtype.compute() {
        cast(&out, dtype)
    } else {
        Ok(out)
    }
}

/// float16 / bfloat16 `t`'s dtype: the ops whose kernels are float32/float64 only (norms,
/// convolution, pooling, attention, losses) run these in float32, through differentiable casts
/// of their inputs and output, as PyTorch's CPU kernels compute them in float32 (its graph holds
/// the op's node alone, ferrograd's the casts around it).
pub fn half_precision(t: &Tensor) -> Option<DType> {
    matches!(t.dtype(), DType::F16 | DType::BF16).then_some(t.dtype())
}

/// `t` in float32 if it is float16 / bfloat16 (differentiable), else `t`.
pub fn up(t: &Tensor) -> Result<Tensor> {
    match half_precision(t) {
        Some(_) => to_dtype(t, DType::F32),
        None => Ok(t.clone()),
    }
}

/// `up` of an optional tensor.
pub fn up_opt(t: Option<&Tensor>) -> Result<Option<Tensor>> {
    t.map(up).transpose()
}

/// `to(dtype)`: a copy in another dtype (ToCopyBackward0), or `t` itself when it already has it.
pub fn to_dtype(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.dtype() == dtype {
        return Ok(t.clone());
    }
    let out = cast(t, dtype)?;
    if needs_grad(&[t]) && dtype.is_float() {
        let src = t.dtype();
        record("ToCopyBackward0", &[t], &[&out], vec![], move |ctx| {
            Ok(vec![Some(to_dtype(&ctx.grad(0)?, src)?)])
        });
    }
    Ok(out)
}

/// `clone()`: a contiguous copy (CloneBackward0).
pub fn clone(t: &Tensor) -> Result<Tensor> {
    let out = materialize(t)?;
    record_clone(t, &out);
    Ok(out)
}

fn record_clone(t: &Tensor, out: &Tensor) {
    if needs_grad(&[t]) {
        record("CloneBackward0", &[t], &[out], vec![], |ctx| {
            Ok(vec![Some(ctx.grad(0)?)])
        });
    }
}

/// `clone()` laid out in the memory order `order` (dims from outermost to innermost: the
/// result permuted by `order` is contiguous), for `preserve_format` and `channels_last`
/// clones. A new tensor recorded as CloneBackward0, not a view of a contiguous copy.
pub fn clone_in_order(t: &Tensor, order: &[usize]) -> Result<Tensor> {
    let mut sorted = order.to_vec();
    sorted.sort_unstable();
    if !sorted.iter().copied().eq(0..t.ndim()) {
        return Err(Error::Runtime(format!(
            "clone: {} is not a memory order of a {}-d tensor",
            crate::layout::fmt_list(order),
            t.ndim()
        )));
    }
    let out = copy_in_order(t, order)?;
    record_clone(t, &out);
    Ok(out)
}

/// A copy of `t` (no autograd) whose elements lie row-major over the dims in `order` (a
/// permutation of t's dims, outermost first), with the strides that gives, in t's dim order.
fn copy_in_order(t: &Tensor, order: &[usize]) -> Result<Tensor> {
    let copy = materialize(&t.with_layout(t.layout().permute(order)))?;
    let mut strides = vec![0; order.len()];
    for (k, &d) in order.iter().enumerate() {
        strides[d] = copy.layout().strides[k];
    }
    Ok(copy.with_layout(Layout {
        shape: t.shape().to_vec(),
        strides,
        offset: 0,
    }))
}

/// A copy of `t` (no autograd) laid out as `like`: with its strides when `like` is dense (in
/// whatever order), else contiguous. PyTorch's `clone_obey_contract` for gradients.
pub fn clone_like(t: &Tensor, like: &Layout) -> Result<Tensor> {
    if !like.is_non_overlapping_and_dense() || like.is_contiguous() || like.shape != t.shape() {
        return materialize(t);
    }
    // like's own strides (size-1 dims keep whatever stride they had)
    Ok(copy_in_order(t, &like.memory_order())?.with_layout(Layout {
        offset: 0,
        ..like.clone()
    }))
}

/// `contiguous()`: `t` itself when already contiguous, else a clone.
pub fn contiguous(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        Ok(t.clone())
    } else {
        clone(t)
    }
}

pub fn detach_unless(t: Tensor, keep_graph: bool) -> Tensor {
    if keep_graph {
        t
    } else {
        t.detach()
    }
}
