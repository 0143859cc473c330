//! Ops that move elements around: tril/triu, flip, roll, repeat, sort/argsort/topk, scatter.
//! Each backward is the adjoint movement, written with these same differentiable ops.

use super::index::{gather, scatter_add};
use super::reduce::sum_dims;
use super::shape::reshape;
use crate::autograd::graph::{needs_grad, record};
use crate::dtype::DType;
use crate::error::{dim_out_of_range, Error, Result};
use crate::layout::{fmt_list, wrap_dim};
use crate::storage::Elem;
use crate::tensor::Tensor;

/// A new contiguous tensor of `out_shape` whose element at index `o` is `t`'s element at
/// `src(o, &mut idx)` (which writes the source multi-index into `idx`), or zero when `src`
/// returns false.
fn remap(
    t: &Tensor,
    out_shape: &[usize],
    src: impl Fn(&[usize], &mut [usize]) -> bool,
) -> Result<Tensor> {
    let n: usize = out_shape.iter().product();
    let nd = out_shape.len();
    let l = t.layout();
    dispatch!(t.dtype(), T => {
        let data = t.storage().read::<T>();
        let mut out: Vec<T> = crate::kernels::alloc(n)?;
        let mut o = vec![0usize; nd];
        let mut si = vec![0usize; t.ndim()];
        for _ in 0..n {
            let v = if src(&o, &mut si) {
                let off = l.offset + si.iter().zip(&l.strides).map(|(i, s)| i * s).sum::<usize>();
                data[off]
            } else {
                T::default()
            };
            out.push(v);
            for d in (0..nd).rev() {
                o[d] += 1;
                if o[d] < out_shape[d] {
                    break;
                }
                o[d] = 0;
            }
        }
        drop(data);
        Tensor::from_vec(out, out_shape.to_vec())
    })
}

/// `tril(x, diagonal)` / `triu(x, diagonal)` over the last two dims (TrilBackward0 /
/// TriuBackward0; the backward is the same op on the gradient).
pub fn tri(t: &Tensor, diagonal: i64, upper: bool) -> Result<Tensor> {
    if t.ndim() < 2 {
        return Err(Error::Runtime(format!(
            "{}: input tensor must have at least 2 dimensions",
            if upper { "triu" } else { "tril" }
        )));
    }
    let nd = t.ndim();
    let out = remap(t, t.shape(), |o, si| {
        si.copy_from_slice(o);
        let (i, j) = (o[nd - 2] as i64, o[nd - 1] as i64);
        if upper {
            j - i >= diagonal
        } else {
            j - i <= diagonal
        }
    })?;
    if needs_grad(&[t]) {
        let name = if upper {
            "TriuBackward0"
        } else {
            "TrilBackward0"
        };
        record(name, &[t], &[&out], vec![], move |ctx| {
            Ok(vec![Some(tri(&ctx.grad(0)?, diagonal, upper)?)])
        });
    }
    Ok(out)
}

fn wrap_dims(dims: &[i64], nd: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let w = wrap_dim(d, nd)?;
        if out.contains(&w) {
            return Err(Error::Runtime(format!(
                "dim {w} appears multiple times in the list of dims"
            )));
        }
        out.push(w);
    }
    // a 0-d tensor has nothing to flip
    if nd == 0 {
        out.clear();
    }
    Ok(out)
}

/// `flip(x, dims)` (FlipBackward0).
pub fn flip(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let ds = wrap_dims(dims, t.ndim())?;
    let shape = t.shape().to_vec();
    let out = remap(t, &shape, |o, si| {
        si.copy_from_slice(o);
        for &d in &ds {
            si[d] = shape[d] - 1 - o[d];
        }
        true
    })?;
    if needs_grad(&[t]) {
        let dims = dims.to_vec();
        record("FlipBackward0", &[t], &[&out], vec![], move |ctx| {
            Ok(vec![Some(flip(&ctx.grad(0)?, &dims)?)])
        });
    }
    Ok(out)
}

/// `roll(x, shifts, dims)` (RollBackward0); without dims the flattened tensor is rolled.
pub fn roll(t: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    if shifts.is_empty() {
        return Err(Error::Runtime("`shifts` required".into()));
    }
    if dims.is_empty() && shifts.len() != 1 || !dims.is_empty() && shifts.len() != dims.len() {
        return Err(Error::Runtime(format!(
            "shifts and dimensions must align. shifts: {}, dims:{}",
            shifts.len(),
            dims.len()
        )));
    }
    if t.ndim() == 0 {
        return Err(Error::Index(format!(
            "Dimension specified as {} but tensor has no dimensions",
            dims.first().copied().unwrap_or(0)
        )));
    }
    let shape = t.shape().to_vec();
    let out = if dims.is_empty() {
        // the flattened tensor rolled, in the original shape
        let n = t.numel() as i64;
        let strides = crate::layout::contiguous_strides(&shape);
        let shift = shifts[0];
        remap(t, &shape, |o, si| {
            let flat: usize = o.iter().zip(&strides).map(|(i, s)| i * s).sum();
            let mut src = (flat as i64 - shift).rem_euclid(n.max(1)) as usize;
            for (k, &st) in strides.iter().enumerate() {
                si[k] = src / st.max(1);
                src %= st.max(1);
            }
            true
        })?
    } else {
        // shifts of a dim named twice add up
        let mut total = vec![0i64; t.ndim()];
        for (&d, &s) in dims.iter().zip(shifts) {
            total[wrap_dim(d, t.ndim())?] += s;
        }
        remap(t, &shape, |o, si| {
            for (k, &s) in total.iter().enumerate() {
                let n = shape[k] as i64;
                si[k] = (o[k] as i64 - s).rem_euclid(n.max(1)) as usize;
            }
            true
        })?
    };
    if needs_grad(&[t]) {
        let back: Vec<i64> = shifts.iter().map(|s| -s).collect();
        let dims = dims.to_vec();
        record("RollBackward0", &[t], &[&out], vec![], move |ctx| {
            Ok(vec![Some(roll(&ctx.grad(0)?, &back, &dims)?)])
        });
    }
    Ok(out)
}

/// `repeat(x, sizes)` (RepeatBackward0): the backward sums the tiles.
pub fn repeat(t: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    if sizes.len() < t.ndim() {
        return Err(Error::Runtime(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor".into(),
        ));
    }
    let lead = sizes.len() - t.ndim();
    if sizes.iter().any(|&s| s < 0) {
        // PyTorch names the first negative size of the output
        let out: Vec<i64> = sizes
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                s * if i < lead {
                    1
                } else {
                    t.shape()[i - lead] as i64
                }
            })
            .collect();
        let bad = out.iter().find(|&&d| d < 0).copied().unwrap_or(-1);
        let shown: Vec<String> = out.iter().map(|d| d.to_string()).collect();
        return Err(Error::Runtime(format!(
            "Trying to create tensor with negative dimension {bad}: [{}]",
            shown.join(", ")
        )));
    }
    let xshape: Vec<usize> = std::iter::repeat_n(1, lead)
        .chain(t.shape().iter().copied())
        .collect();
    let reps: Vec<usize> = sizes.iter().map(|&s| s as usize).collect();
    let out_shape: Vec<usize> = xshape
        .iter()
        .zip(&reps)
        .map(|(a, b)| a.checked_mul(*b).unwrap_or(usize::MAX))
        .collect();
    crate::layout::checked_numel(&out_shape)?;
    let nd = t.ndim();
    let out = remap(t, &out_shape, |o, si| {
        for k in 0..nd {
            si[k] = o[lead + k] % xshape[lead + k];
        }
        true
    })?;
    if needs_grad(&[t]) {
        let ishape = t.shape().to_vec();
        record("RepeatBackward0", &[t], &[&out], vec![], move |ctx| {
            // (r0*s0, r1*s1, ...) -> (r0, s0, r1, s1, ...), summed over the r dims
            let g = ctx.grad(0)?;
            let split: Vec<usize> = reps
                .iter()
                .zip(&xshape)
                .flat_map(|(&r, &s)| [r, s])
                .collect();
            let red: Vec<i64> = (0..reps.len() as i64).map(|i| 2 * i).collect();
            let summed = sum_dims(&reshape(&g, &split)?, Some(&red), false, None)?;
            Ok(vec![Some(reshape(&summed, &ishape)?)])
        });
    }
    Ok(out)
}

/// The sort order of one row: NaN after every number (PyTorch's order), stable.
fn order<T: Elem>(row: &[T], descending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    let key = |a: &T, b: &T| {
        #[allow(clippy::eq_op)]
        let (an, bn) = (a != a, b != b);
        match (an, bn) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            _ => a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal),
        }
    };
    if descending {
        idx.sort_by(|&i, &j| key(&row[j], &row[i]));
    } else {
        idx.sort_by(|&i, &j| key(&row[i], &row[j]));
    }
    idx
}

/// Sorted values and indices along `dim`, keeping the first `k` of each row (`k = None`: all).
fn sort_impl(t: &Tensor, dim: i64, descending: bool, k: Option<usize>) -> Result<(Tensor, Tensor)> {
    let nd = t.ndim().max(1);
    let d = if t.ndim() == 0 {
        if dim != 0 && dim != -1 {
            return Err(dim_out_of_range(dim, 0));
        }
        0
    } else {
        wrap_dim(dim, t.ndim())?
    };
    let shape: Vec<usize> = if t.ndim() == 0 {
        vec![1]
    } else {
        t.shape().to_vec()
    };
    let n = shape[d];
    let keep = k.unwrap_or(n);
    let outer: usize = shape[..d].iter().product();
    let inner: usize = shape[d + 1..].iter().product();
    let mut oshape = shape.clone();
    oshape[d] = keep;
    let x = super::materialize(t)?;
    let (vals, idx) = dispatch!(t.dtype(), T => {
        let data = x.try_to_vec::<T>()?;
        let mut vals = crate::storage::try_vec::<T>(outer * keep * inner)?;
        let mut idx = crate::storage::try_vec::<i64>(outer * keep * inner)?;
        let mut row = Vec::with_capacity(n);
        for o in 0..outer {
            for j in 0..inner {
                row.clear();
                row.extend((0..n).map(|i| data[(o * n + i) * inner + j]));
                for (r, &i) in order(&row, descending).iter().take(keep).enumerate() {
                    vals[(o * keep + r) * inner + j] = row[i];
                    idx[(o * keep + r) * inner + j] = i as i64;
                }
            }
        }
        let fin = |s: Vec<usize>| if t.ndim() == 0 { vec![] } else { s };
        (Tensor::from_vec(vals, fin(oshape.clone()))?, Tensor::from_vec(idx, fin(oshape.clone()))?)
    });
    let _ = nd;
    Ok((vals, idx))
}

/// Records the backward of an op whose values are `t`'s elements at `indices` along `dim`:
/// the gradient is scattered back (ScatterAdd, differentiable through gather).
fn record_gathered(name: &'static str, t: &Tensor, vals: &Tensor, indices: &Tensor, dim: i64) {
    if t.dtype().is_float() && needs_grad(&[t]) {
        let (shape, dtype) = (t.shape().to_vec(), t.dtype());
        let indices = indices.clone();
        record(name, &[t], &[vals], vec![], move |ctx| {
            let g = ctx.grad(0)?;
            let zeros = Tensor::zeros(&shape, dtype)?;
            if shape.is_empty() {
                return Ok(vec![Some(g)]);
            }
            Ok(vec![Some(scatter_add(&zeros, dim, &indices, &g)?)])
        });
    }
}

/// `sort(x, dim, descending)` -> (values, indices), always stable; PyTorch's node is
/// SortBackward1 when `stable=` was passed, SortBackward0 otherwise.
pub fn sort(
    t: &Tensor,
    dim: i64,
    descending: bool,
    stable_given: bool,
) -> Result<(Tensor, Tensor)> {
    let (v, i) = sort_impl(t, dim, descending, None)?;
    let name = if stable_given {
        "SortBackward1"
    } else {
        "SortBackward0"
    };
    record_gathered(name, t, &v, &i, dim);
    Ok((v, i))
}

/// `topk(x, k, dim, largest)` -> (values, indices) (TopkBackward0), sorted.
pub fn topk(t: &Tensor, k: i64, dim: i64, largest: bool) -> Result<(Tensor, Tensor)> {
    if t.dtype() == DType::Bool {
        return Err(Error::Runtime(
            "topk does not support bool dtypes on CPU".into(),
        ));
    }
    if t.ndim() == 0 {
        // PyTorch gives the value itself for k = 0 or 1
        wrap_dim(dim, 0)?;
        if !(0..=1).contains(&k) {
            return Err(Error::Runtime("selected index k out of range".into()));
        }
        let v = super::clone(&t.detach())?;
        let i = Tensor::scalar(crate::dtype::Scalar::Int(0), DType::I64);
        record_gathered("TopkBackward0", t, &v, &i, dim);
        return Ok((v, i));
    }
    let d = wrap_dim(dim, t.ndim())?;
    let n = t.shape()[d];
    if k < 0 || k as usize > n {
        return Err(Error::Runtime("selected index k out of range".into()));
    }
    let (v, i) = sort_impl(t, dim, largest, Some(k as usize))?;
    record_gathered("TopkBackward0", t, &v, &i, dim);
    Ok((v, i))
}

/// A shape as PyTorch's scatter/gather checks see it: a 0-d tensor counts as one element.
fn nonempty(shape: &[usize]) -> Vec<usize> {
    if shape.is_empty() {
        vec![1]
    } else {
        shape.to_vec()
    }
}

/// `scatter(x, dim, index, src)` (ScatterBackward0) or with a number (ScatterBackward1):
/// `out = x` with `out[index[i]][...] = src[i][...]` along `dim`, with PyTorch's checks.
pub fn scatter(
    t: &Tensor,
    dim: i64,
    index: &Tensor,
    src: Option<&Tensor>,
    value: crate::dtype::Scalar,
) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim())?;
    if index.dtype() != DType::I64 {
        return Err(Error::Runtime(
            "scatter(): Expected dtype int32/int64 for index".into(),
        ));
    }
    if let Some(s) = src {
        if s.dtype() != t.dtype() {
            return Err(Error::Runtime(
                "scatter(): Expected self.dtype to be equal to src.dtype".into(),
            ));
        }
    }
    let out = super::materialize(t)?;
    if index.numel() > 0 {
        scatter_values(&out, d, index, src, value)?;
    }
    let mut inputs = vec![t];
    if let Some(s) = src {
        inputs.push(s);
    }
    if needs_grad(&inputs) {
        let index = index.clone();
        let has_src = src.is_some();
        let name = if has_src {
            "ScatterBackward0"
        } else {
            "ScatterBackward1"
        };
        record(name, &inputs, &[&out], vec![], move |ctx| {
            let g = ctx.grad(0)?;
            let zero = crate::dtype::Scalar::Float(0.0);
            let gx = scatter(&g, d as i64, &index, None, zero)?;
            let mut grads = vec![Some(gx)];
            if has_src {
                grads.push(Some(gather(&g, d as i64, &index)?));
            }
            Ok(grads)
        });
    }
    Ok(out)
}

/// Writes the scattered values into `out` (a fresh contiguous copy of self).
fn scatter_values(
    out: &Tensor,
    d: usize,
    index: &Tensor,
    src: Option<&Tensor>,
    value: crate::dtype::Scalar,
) -> Result<()> {
    let (sshape, ishape) = (nonempty(out.shape()), nonempty(index.shape()));
    if ishape.len() != sshape.len() {
        return Err(Error::Runtime(
            "Index tensor must have the same number of dimensions as self tensor".into(),
        ));
    }
    let src_shape = src.map(|s| nonempty(s.shape()));
    if let Some(ss) = &src_shape {
        if ss.len() != ishape.len() {
            return Err(Error::Runtime(
                "Index tensor must have the same number of dimensions as src tensor".into(),
            ));
        }
    }
    let too_big = (0..ishape.len()).any(|k| k != d && ishape[k] > sshape[k])
        || src_shape
            .as_ref()
            .is_some_and(|ss| (0..ishape.len()).any(|k| ishape[k] > ss[k]));
    if too_big {
        let mut msg = format!(
            "Expected index {} to be no larger than self {} apart from dimension {d}",
            fmt_list(index.shape()),
            fmt_list(out.shape())
        );
        if let Some(s) = src {
            msg.push_str(&format!(
                " and to be no larger size than src {}",
                fmt_list(s.shape())
            ));
        }
        return Err(Error::Runtime(msg));
    }
    let idx = index.try_to_vec::<i64>()?;
    let ostrides = crate::layout::contiguous_strides(&sshape);
    let size = sshape[d];
    dispatch!(out.dtype(), T => {
        let number = scalar_value::<T>(value, out.dtype())?;
        let vals: Option<Vec<T>> = src.map(super::cast_vec::<T>).transpose()?;
        let sstrides = src_shape.as_ref().map(|s| crate::layout::contiguous_strides(s));
        let mut dst = out.storage().write::<T>();
        let mut mi = vec![0usize; ishape.len()];
        for (kk, &ix) in idx.iter().enumerate() {
            let mut rem = kk;
            for (p, &s) in ishape.iter().enumerate().rev() {
                mi[p] = rem % s;
                rem /= s;
            }
            let v = match (&vals, &sstrides) {
                (Some(v), Some(ss)) => v[mi.iter().zip(ss).map(|(i, s)| i * s).sum::<usize>()],
                _ => number,
            };
            if ix < 0 || ix >= size as i64 {
                return Err(Error::Runtime(format!(
                    "index {ix} is out of bounds for dimension {d} with size {size}"
                )));
            }
            mi[d] = ix as usize;
            let off: usize = mi.iter().zip(&ostrides).map(|(i, s)| i * s).sum();
            dst[off] = v;
        }
    });
    Ok(())
}

/// A Python number converted to the element type, with PyTorch's overflow error for int64.
fn scalar_value<T: Elem>(v: crate::dtype::Scalar, dtype: DType) -> Result<T> {
    use crate::dtype::Scalar;
    if dtype == DType::I64 {
        if let Scalar::Float(f) = v {
            if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
                return Err(Error::Runtime(
                    "value cannot be converted to type int64_t without overflow".into(),
                ));
            }
        }
    }
    Ok(crate::tensor::scalar_as::<T>(v))
}

/// `embedding(weight, indices)` (EmbeddingBackward0): rows of `weight` at `indices`, output
/// `indices.shape + [dim]`. The gradient of a row at `padding_idx` is zero; with
/// `scale_grad_by_freq` each row's gradient is divided by how often its index occurs.
pub fn embedding(
    weight: &Tensor,
    indices: &Tensor,
    padding_idx: Option<i64>,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    if weight.ndim() != 2 {
        return Err(Error::Runtime("'weight' must be 2-D".into()));
    }
    if indices.dtype() != DType::I64 {
        return Err(Error::Runtime(format!(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.{}Tensor instead (while checking arguments for embedding)",
            indices.dtype().kernel_name()
        )));
    }
    let (num, dim) = (weight.shape()[0], weight.shape()[1]);
    let idx = indices.try_to_vec::<i64>()?;
    if idx.iter().any(|&i| i < 0 || i as usize >= num) {
        return Err(Error::Index("index out of range in self".into()));
    }
    let flat = Tensor::from_vec(idx.clone(), vec![idx.len()])?;
    let rows = super::index::index_select(&weight.detach(), 0, &flat)?;
    let mut shape = indices.shape().to_vec();
    shape.push(dim);
    let out = reshape(&rows, &shape)?.detach();
    if needs_grad(&[weight]) {
        let dtype = weight.dtype();
        record(
            "EmbeddingBackward0",
            &[weight],
            &[&out],
            vec![],
            move |ctx| {
                let g = reshape(&ctx.grad(0)?, &[idx.len(), dim])?;
                let mut scale = crate::storage::try_filled(idx.len(), 1.0f64)?;
                if let Some(p) = padding_idx {
                    for (s, &i) in scale.iter_mut().zip(&idx) {
                        if i == p {
                            *s = 0.0;
                        }
                    }
                }
                if scale_grad_by_freq {
                    let mut counts = std::collections::HashMap::new();
                    for &i in &idx {
                        *counts.entry(i).or_insert(0usize) += 1;
                    }
                    for (s, i) in scale.iter_mut().zip(&idx) {
                        *s /= counts[i] as f64;
                    }
                }
                let g = if scale.iter().any(|&s| s != 1.0) {
                    let s = super::to_dtype(
                        &Tensor::from_vec(scale.clone(), vec![idx.len(), 1])?,
                        dtype,
                    )?;
                    super::mul(&g, &s)?
                } else {
                    g
                };
                let zeros = Tensor::zeros(&[num, dim], dtype)?;
                Ok(vec![Some(super::index::index_add(&zeros, 0, &flat, &g)?)])
            },
        );
    }
    Ok(out)
}

/// `constant_pad_nd(x, pad, value)` (ConstantPadNdBackward0): `pad` holds (before, after)
/// amounts from the last dim backwards; negative amounts crop. The output is filled with
/// `value` and the overlap copied in; the gradient is the same op with the amounts negated.
pub fn constant_pad_nd(x: &Tensor, pad: &[i64], value: crate::dtype::Scalar) -> Result<Tensor> {
    if !pad.len().is_multiple_of(2) {
        return Err(Error::Runtime(
            "Length of pad must be even but instead it equals ".to_string()
                + &pad.len().to_string(),
        ));
    }
    let nd = x.ndim();
    if pad.len() / 2 > nd {
        return Err(Error::Runtime(format!(
            "Length of pad should be no more than twice the number of dimensions of the input. Pad length is {}while the input has {}dimensions.",
            pad.len(),
            nd
        )));
    }
    let mut out_shape = x.shape().to_vec();
    // per padded dim: (dim, input start, output start, overlap length)
    let mut spans = Vec::with_capacity(pad.len() / 2);
    for (k, pair) in pad.chunks(2).enumerate() {
        let d = nd - 1 - k;
        let (before, after, size) = (pair[0], pair[1], x.shape()[d] as i64);
        let overflow = || {
            Error::Runtime(format!(
                "padding ({before}, {after}) of a dimension of size {size} overflows"
            ))
        };
        let len = size + before.min(0) + after.min(0);
        let total = size
            .checked_add(before)
            .and_then(|t| t.checked_add(after))
            .ok_or_else(overflow)?;
        if len < 0 || total < 0 {
            return Err(Error::Runtime(
                "narrow(): length must be non-negative.".into(),
            ));
        }
        out_shape[d] = total as usize;
        spans.push((
            d,
            (-before).max(0) as usize,
            before.max(0) as usize,
            len as usize,
        ));
    }
    let out = Tensor::full(&out_shape, value, x.dtype())?;
    let (mut src, mut dst) = (x.layout().clone(), out.layout().clone());
    for &(d, s0, d0, len) in &spans {
        src = src.narrow(d, s0, len);
        dst = dst.narrow(d, d0, len);
    }
    if src.numel() > 0 {
        super::inplace::write_values(&out.with_layout(dst), &x.detach().with_layout(src))?;
    }
    let out = out.detach();
    if needs_grad(&[x]) {
        let back: Vec<i64> = pad.iter().map(|p| -p).collect();
        record(
            "ConstantPadNdBackward0",
            &[x],
            &[&out],
            vec![],
            move |ctx| {
                Ok(vec![Some(constant_pad_nd(
                    &ctx.grad(0)?,
                    &back,
                    crate::dtype::Scalar::Int(0),
                )?)])
            },
        );
    }
    Ok(out)
}

/// `one_hot(indices, num_classes)`: int64 `(*indices.shape, num_classes)` with a 1 at each
/// index; `num_classes` -1 takes the largest index + 1. PyTorch's checks and messages.
pub fn one_hot(indices: &Tensor, num_classes: i64) -> Result<Tensor> {
    if indices.dtype() != DType::I64 {
        return Err(Error::Runtime(
            "one_hot is only applicable to index tensor of type LongTensor.".into(),
        ));
    }
    let idx = indices.try_to_vec::<i64>()?;
    let mut shape = indices.shape().to_vec();
    if idx.is_empty() {
        if num_classes <= 0 {
            return Err(Error::Runtime(
                "Can not infer total number of classes from empty tensor.".into(),
            ));
        }
        shape.push(num_classes as usize);
        return Tensor::zeros(&shape, DType::I64);
    }
    if idx.iter().any(|&i| i < 0) {
        return Err(Error::Runtime("Class values must be non-negative.".into()));
    }
    let max = idx.iter().copied().max().unwrap_or(0);
    let classes = if num_classes == -1 {
        max + 1
    } else if num_classes <= max {
        return Err(Error::Runtime(
            "Class values must be smaller than num_classes.".into(),
        ));
    } else {
        num_classes
    } as usize;
    let mut out: Vec<i64> = crate::kernels::alloc(idx.len() * classes)?;
    out.resize(idx.len() * classes, 0);
    for (row, &i) in out.chunks_mut(classes).zip(&idx) {
        row[i as usize] = 1;
    }
    shape.push(classes);
    Tensor::from_vec(out, shape)
}

/// For reflection / replication padding of the last `pad.len() / 2` dims of a tensor of
/// `shape`: the padded shape, and for each element of one padded block (the padded dims, in
/// row-major order) the offset of its source element in one unpadded block.
fn pad_sources(shape: &[usize], pad: &[i64], reflect: bool) -> Result<(Vec<usize>, Vec<usize>)> {
    let nd = shape.len();
    let np = pad.len() / 2;
    let mut out_shape = shape.to_vec();
    let mut maps: Vec<Vec<usize>> = Vec::with_capacity(np);
    for d in nd - np..nd {
        let k = nd - 1 - d;
        let (before, after, size) = (pad[2 * k], pad[2 * k + 1], shape[d] as i64);
        let len = size
            .checked_add(before)
            .and_then(|l| l.checked_add(after))
            .ok_or_else(|| {
                Error::Runtime(format!(
                    "padding ({before}, {after}) of a dimension of size {size} overflows"
                ))
            })?
            .max(0);
        out_shape[d] = len as usize;
        let sources = (0..len).map(|i| {
            let j = i - before;
            let j = if reflect {
                // reflect about the edges (pads are smaller than the dim)
                let j = j.abs();
                if j >= size {
                    2 * (size - 1) - j
                } else {
                    j
                }
            } else {
                j.clamp(0, size - 1)
            };
            j as usize
        });
        maps.push(crate::storage::try_collect(len as usize, sources)?);
    }
    // offsets in one block, row-major over the padded dims
    let in_strides = crate::layout::contiguous_strides(&shape[nd - np..]);
    let block = crate::layout::checked_numel(&out_shape[nd - np..])?;
    crate::layout::checked_numel(&out_shape)?;
    let mut table = vec![0usize];
    for (m, &st) in maps.iter().zip(&in_strides) {
        let next = table
            .iter()
            .flat_map(|&base| m.iter().map(move |&j| base + j * st));
        table = crate::storage::try_collect(table.len() * m.len(), next)?;
    }
    debug_assert_eq!(table.len(), block);
    Ok((out_shape, table))
}

/// PyTorch's node names for reflection / replication padding of `np` dims.
fn pad_node_name(reflect: bool, np: usize, backward: bool) -> &'static str {
    match (reflect, np, backward) {
        (true, 1, false) => "ReflectionPad1DBackward0",
        (true, 2, false) => "ReflectionPad2DBackward0",
        (true, _, false) => "ReflectionPad3DBackward0",
        (false, 1, false) => "ReplicationPad1DBackward0",
        (false, 2, false) => "ReplicationPad2DBackward0",
        (false, _, false) => "ReplicationPad3DBackward0",
        (true, 1, true) => "ReflectionPad1DBackwardBackward0",
        (true, 2, true) => "ReflectionPad2DBackwardBackward0",
        (true, _, true) => "ReflectionPad3DBackwardBackward0",
        (false, 1, true) => "ReplicationPad1DBackwardBackward0",
        (false, 2, true) => "ReplicationPad2DBackwardBackward0",
        (false, _, true) => "ReplicationPad3DBackwardBackward0",
    }
}

/// Reflection (`reflect`) or replication padding of the last `pad.len() / 2` dims (sizes
/// checked by the caller): every output element copies its source element. The gradient is
/// `index_pad_backward`, its adjoint.
pub fn index_pad(x: &Tensor, pad: &[i64], reflect: bool) -> Result<Tensor> {
    let (out_shape, table) = pad_sources(x.shape(), pad, reflect)?;
    let in_block: usize = x.shape()[x.ndim() - pad.len() / 2..].iter().product();
    let out = dispatch!(x.dtype(), T => {
        let v = super::with_slice::<T, _>(x, |s| {
            let blocks = s.len().checked_div(in_block).unwrap_or(0);
            let mut out: Vec<T> = crate::storage::alloc(table.len() * blocks)?;
            for block in s.chunks(in_block.max(1)).take(blocks) {
                out.extend(table.iter().map(|&t| block[t]));
            }
            Ok::<_, Error>(out)
        })??;
        Tensor::from_vec(v, out_shape.clone())?
    });
    if needs_grad(&[x]) {
        let (shape, pad) = (x.shape().to_vec(), pad.to_vec());
        let name = pad_node_name(reflect, pad.len() / 2, false);
        record(name, &[x], &[&out], vec![], move |ctx| {
            Ok(vec![Some(index_pad_backward(
                &ctx.grad(0)?,
                &shape,
                &pad,
                reflect,
            )?)])
        });
    }
    Ok(out)
}

/// The adjoint of `index_pad`: each gradient element added into its source position of an
/// input of `shape`. Differentiable: its gradient is `index_pad` again.
pub fn index_pad_backward(
    g: &Tensor,
    shape: &[usize],
    pad: &[i64],
    reflect: bool,
) -> Result<Tensor> {
    let (_, table) = pad_sources(shape, pad, reflect)?;
    let in_block: usize = shape[shape.len() - pad.len() / 2..].iter().product();
    let n: usize = shape.iter().product();
    let out = dispatch_float!(g.dtype(), T => {
        let v = super::with_slice::<T, _>(g, |s| {
            let mut out = crate::storage::try_vec::<T>(n)?;
            if !table.is_empty() && in_block > 0 {
                for (block, gb) in out.chunks_mut(in_block).zip(s.chunks(table.len())) {
                    for (&t, &v) in table.iter().zip(gb) {
                        block[t] += v;
                    }
                }
            }
            Ok(out)
        })??;
        Tensor::from_vec(v, shape.to_vec())?
    });
    if needs_grad(&[g]) {
        let pad = pad.to_vec();
        let name = pad_node_name(reflect, pad.len() / 2, true);
        record(name, &[g], &[&out], vec![], move |ctx| {
            Ok(vec![Some(index_pad(&ctx.grad(0)?, &pad, reflect)?)])
        });
    }
    Ok(out)
}
