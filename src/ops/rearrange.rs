//! Ops that move elements around: tril/triu, flip, roll, repeat, sort/argsort/topk, scatter.
//! Each backward is the adjoint movement, written with these same differentiable ops.

use super::index::{gather, scatter_add};
use super::reduce::sum_dims;
use super::shape::reshape;
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::DType;
use crate::error::{dim_out_of_range, Error, Result};
use crate::kernels::pad as kpad;
use crate::kernels::rearrange as kr;
use crate::layout::{fmt_list, wrap_dim};
use crate::storage::Elem;
use crate::tensor::Tensor;

/// A new contiguous tensor of `$shape` from the movement kernel call `$call`, which reads
/// `$t`'s elements as `$data` (its storage) through `$l` (its layout), in any dtype.
macro_rules! moved {
    ($t:expr, $shape:expr, |$data:ident, $l:ident| $call:expr) => {
        dispatch_all!($t.dtype(), T => {
            let $data = $t.storage().read::<T>();
            let $l = $t.layout();
            let v: Vec<T> = $call?;
            drop($data);
            Tensor::from_vec(v, $shape)
        })
    };
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
    let out = moved!(t, t.shape().to_vec(), |d, l| kr::tri(
        &d, l, diagonal, upper
    ))?;
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
    let out = moved!(t, t.shape().to_vec(), |d, l| kr::flip(&d, l, &ds))?;
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
        moved!(t, shape, |d, l| kr::roll_flat(&d, l, shifts[0]))?
    } else {
        // shifts of a dim named twice add up
        let mut total = vec![0i64; t.ndim()];
        for (&d, &s) in dims.iter().zip(shifts) {
            total[wrap_dim(d, t.ndim())?] += s;
        }
        moved!(t, shape, |d, l| kr::roll(&d, l, &total))?
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
    let out = moved!(t, out_shape.clone(), |d, l| kr::repeat(&d, l, &out_shape))?;
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
    let (vals, idx) = dispatch_all!(t.dtype(), T => {
        let data = x.try_to_vec::<T>()?;
        let (vals, idx) = crate::kernels::sort::sort_rows(&data, outer, n, inner, descending, keep)?;
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
        let saved = vec![Saved::Input(indices.clone())];
        record(name, &[t], &[vals], saved, move |ctx| {
            let g = ctx.grad(0)?;
            let zeros = Tensor::zeros(&shape, dtype)?;
            if shape.is_empty() {
                return Ok(vec![Some(g)]);
            }
            Ok(vec![Some(scatter_add(&zeros, dim, &ctx.saved[0], &g)?)])
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
        let has_src = src.is_some();
        let name = if has_src {
            "ScatterBackward0"
        } else {
            "ScatterBackward1"
        };
        let saved = vec![Saved::Input(index.clone())];
        record(name, &inputs, &[&out], saved, move |ctx| {
            let g = ctx.grad(0)?;
            let index = ctx.saved[0].clone();
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
    dispatch_all!(out.dtype(), T => {
        let number = scalar_value::<T>(value, out.dtype())?;
        let vals: Option<Vec<T>> = src.map(super::cast_vec::<T>).transpose()?;
        let src = vals.as_deref().zip(src_shape.as_deref());
        let mut dst = out.storage().write::<T>();
        crate::kernels::index::scatter(&mut dst, &sshape, d, &idx, &ishape, src, number)
    })
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
        // the indices are saved (freed after backward, checked for in-place changes), as
        // PyTorch's EmbeddingBackward0 saves them
        record(
            "EmbeddingBackward0",
            &[weight],
            &[&out],
            vec![Saved::Input(indices.clone())],
            move |ctx| {
                let idx = ctx.saved[0].try_to_vec::<i64>()?;
                let flat = Tensor::from_vec(idx.clone(), vec![idx.len()])?;
                let g = reshape(&ctx.grad(0)?, &[idx.len(), dim])?;
                let scale = crate::kernels::index::embedding_grad_scale(
                    &idx,
                    padding_idx,
                    scale_grad_by_freq,
                )?;
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
    let (out_shape, spans) = kpad::constant_spans(x.shape(), pad)?;
    // the output filled with the value, the overlap copied in (the elementwise kernels)
    let out = Tensor::full(&out_shape, value, x.dtype())?;
    let (mut src, mut dst) = (x.layout().clone(), out.layout().clone());
    for s in &spans {
        src = src.narrow(s.dim, s.src_start, s.len);
        dst = dst.narrow(s.dim, s.dst_start, s.len);
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
    let out = crate::kernels::index::one_hot(&idx, classes)?;
    shape.push(classes);
    Tensor::from_vec(out, shape)
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
    let (out_shape, table) = kpad::sources(x.shape(), pad, reflect)?;
    let in_block: usize = x.shape()[x.ndim() - pad.len() / 2..].iter().product();
    let out = dispatch_all!(x.dtype(), T => {
        let v = super::with_slice::<T, _>(x, |s| kpad::pad_blocks(s, in_block, &table))??;
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
    let (_, table) = kpad::sources(shape, pad, reflect)?;
    let in_block: usize = shape[shape.len() - pad.len() / 2..].iter().product();
    let n: usize = shape.iter().product();
    let out = dispatch_float!(g.dtype(), T => {
        let v = super::with_slice::<T, _>(g, |s| kpad::unpad_blocks(s, n, in_block, &table))??;
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
