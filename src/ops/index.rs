//! gather / scatter_add / index_select / index_add and advanced indexing (`x[idx]`).

use super::binary::Operand;
use super::shape::{region, squeeze, sum_to, unsqueeze, Region};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::index as ki;
use crate::layout::{broadcast_shapes, wrap_dim, Layout};
use crate::tensor::Tensor;

fn check_index_dtype(index: &Tensor, what: &str) -> Result<Vec<i64>> {
    if index.dtype() != DType::I64 {
        return Err(Error::Runtime(format!(
            "{what}(): Expected dtype int64 for index"
        )));
    }
    index.try_to_vec::<i64>()
}

/// `index` as a tensor of its own storage when it shares `t`'s (`x.gather(0, x)`), so that the
/// kernels take one read lock per storage.
fn unshared(index: &Tensor, t: &Tensor) -> Result<Tensor> {
    if std::sync::Arc::ptr_eq(index.storage(), t.storage()) {
        super::materialize(index)
    } else {
        Ok(index.clone())
    }
}

/// `gather(dim, index)` (GatherBackward0).
pub fn gather(t: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim())?;
    if index.dtype() != DType::I64 {
        return Err(Error::Runtime(
            "gather(): Expected dtype int64 for index".into(),
        ));
    }
    if index.ndim() != t.ndim().max(1) && !(t.ndim() == 0 && index.ndim() <= 1) {
        return Err(Error::Runtime(
            "Index tensor must have the same number of dimensions as input tensor".into(),
        ));
    }
    let ishape = index.shape().to_vec();
    if t.ndim() > 0 && index.numel() > 0 {
        if let Some(q) = (0..ishape.len()).find(|&q| q != d && ishape[q] > t.shape()[q]) {
            return Err(Error::Runtime(format!(
                "Size does not match at dimension {q} expected index {} to be smaller than self {} apart from dimension {d}",
                crate::layout::fmt_list(&ishape), crate::layout::fmt_list(t.shape())
            )));
        }
    }
    // each index position's offset along the other dims: t's strides over the index's shape,
    // the gathered dim stepped by the index value instead
    let (size, step, walk) = if t.ndim() == 0 {
        let l = Layout {
            shape: ishape.clone(),
            strides: vec![0; ishape.len()],
            offset: t.layout().offset,
        };
        (1, 0, l)
    } else {
        let mut strides = t.layout().strides.clone();
        strides[d] = 0;
        let l = Layout {
            shape: ishape.clone(),
            strides,
            offset: t.layout().offset,
        };
        (t.shape()[d], t.layout().strides[d], l)
    };
    let index_data = unshared(index, t)?;
    let out = dispatch_all!(t.dtype(), T => {
        let v = super::with_slices::<i64, _>(&[Some(&index_data)], |s| {
            let idx = s[0].expect("index");
            let src = t.storage().read::<T>();
            ki::gather(&src, &walk, idx, size, step, d)
        })??;
        Tensor::from_vec(v, ishape.clone())?
    });
    if needs_grad(&[t]) {
        let shape = t.shape().to_vec();
        let saved = vec![Saved::Input(index.clone())];
        record("GatherBackward0", &[t], &[&out], saved, move |ctx| {
            Ok(vec![Some(scatter_add_into_zeros(
                &shape,
                d,
                &ctx.saved[0],
                &ctx.grad(0)?,
            )?)])
        });
    }
    Ok(out)
}

/// `take(index)` (TakeBackward0): the elements of the flattened `t` at `index` (int64, any
/// shape, negative from the end), in `index`'s shape.
pub fn take(t: &Tensor, index: &Tensor) -> Result<Tensor> {
    if index.dtype() != DType::I64 {
        return Err(Error::Runtime(format!(
            "take(): Expected a long tensor for index, but got {}",
            index.dtype().kernel_name()
        )));
    }
    let n = t.numel();
    let src = if t.is_contiguous() {
        t.detach()
    } else {
        super::materialize(t)?
    };
    let index_data = unshared(index, &src)?;
    let walk = Layout {
        shape: vec![index.numel()],
        strides: vec![0],
        offset: src.layout().offset,
    };
    let out = dispatch_all!(t.dtype(), T => {
        let v = super::with_slices::<i64, _>(&[Some(&index_data)], |s| {
            let idx = s[0].expect("index");
            let wrapped = ki::take_indices(idx, n)?;
            let data = src.storage().read::<T>();
            ki::gather(&data, &walk, wrapped.as_deref().unwrap_or(idx), n, 1, 0)
        })??;
        Tensor::from_vec(v, index.shape().to_vec())?
    });
    if needs_grad(&[t]) {
        let shape = t.shape().to_vec();
        let saved = vec![Saved::Input(index.clone())];
        record("TakeBackward0", &[t], &[&out], saved, move |ctx| {
            let (g, index) = (ctx.grad(0)?, &ctx.saved[0]);
            let k = index.numel();
            let flat = [Some(super::shape::reshape(index, &[k])?)];
            let z = Tensor::zeros(&[crate::layout::numel(&shape)], g.dtype())?;
            let put = index_put(&z, &flat, &super::shape::reshape(&g, &[k])?, true)?;
            Ok(vec![Some(super::shape::reshape(&put, &shape)?)])
        });
    }
    Ok(out)
}

/// `zeros(shape).scatter_add(d, index, src)`, gather's gradient, with the zeros written once
/// and `src` read in place (ScatterAddBackward0 for `src` only, so that it is differentiable
/// again). Float32 / float64; other dtypes through `scatter_add`.
fn scatter_add_into_zeros(
    shape: &[usize],
    d: usize,
    index: &Tensor,
    src: &Tensor,
) -> Result<Tensor> {
    fn run<T: crate::storage::Elem + Default>(
        shape: &[usize],
        d: usize,
        index: &Tensor,
        src: &Tensor,
    ) -> Result<Tensor> {
        let mut v = crate::storage::try_filled(crate::layout::numel(shape), T::default())?;
        super::with_slices::<i64, _>(&[Some(index)], |i| {
            super::with_slices::<T, _>(&[Some(src)], |s| {
                let (idx, s) = (i[0].expect("index"), s[0].expect("src"));
                ki::scatter_add(&mut v, shape, d, idx, index.shape(), s, src.shape())
            })
        })???;
        Tensor::from_vec(v, shape.to_vec())
    }
    let out = match src.dtype() {
        DType::F32 => run::<f32>(shape, d, index, src)?,
        DType::F64 => run::<f64>(shape, d, index, src)?,
        dt => {
            let _g = crate::autograd::GradModeGuard::new(false);
            scatter_add(&Tensor::zeros(shape, dt)?, d as i64, index, &src.detach())?
        }
    };
    if needs_grad(&[src]) {
        let saved = vec![Saved::Input(index.clone())];
        record("ScatterAddBackward0", &[src], &[&out], saved, move |ctx| {
            Ok(vec![Some(gather(&ctx.grad(0)?, d as i64, &ctx.saved[0])?)])
        });
    }
    Ok(out)
}

/// `masked_select(mask)` (MaskedSelectBackward0): the elements of `t` where the bool `mask` is
/// true, both broadcast to one shape, as a 1-D tensor, read where they lie.
pub fn masked_select(t: &Tensor, mask: &Tensor) -> Result<Tensor> {
    if mask.dtype() != DType::Bool {
        return Err(Error::Runtime(
            "masked_select: expected BoolTensor for mask".into(),
        ));
    }
    let shape = broadcast_shapes(t.shape(), mask.shape())?;
    let mask = unshared(mask, t)?;
    let (lt, lm) = (
        t.layout().broadcast_to(&shape)?,
        mask.layout().broadcast_to(&shape)?,
    );
    let out = dispatch_all!(t.dtype(), T => {
        let v = {
            let src = t.storage().read::<T>();
            let m = mask.storage().read::<u8>();
            ki::masked_select(&src, &lt, &m, &lm)?
        };
        let n = v.len();
        Tensor::from_vec(v, vec![n])?
    });
    if needs_grad(&[t]) {
        let tshape = t.shape().to_vec();
        let saved = vec![Saved::Input(mask.clone())];
        record("MaskedSelectBackward0", &[t], &[&out], saved, move |ctx| {
            let full = masked_scatter_zeros(&ctx.grad(0)?, &ctx.saved[0], &shape)?;
            Ok(vec![Some(sum_to(&full, &tshape)?)])
        });
    }
    Ok(out)
}

/// `zeros(shape).masked_scatter(mask, g)`: masked_select's gradient (MaskedScatterBackward0,
/// whose own gradient selects again).
fn masked_scatter_zeros(g: &Tensor, mask: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let lm = mask.layout().broadcast_to(shape)?;
    let out = dispatch_all!(g.dtype(), T => {
        let v = super::with_slices::<T, _>(&[Some(g)], |s| {
            let m = mask.storage().read::<u8>();
            ki::masked_scatter_zeros(s[0].expect("grad"), &m, &lm)
        })??;
        Tensor::from_vec(v, shape.to_vec())?
    });
    if needs_grad(&[g]) {
        let saved = vec![Saved::Input(mask.clone())];
        record("MaskedScatterBackward0", &[g], &[&out], saved, move |ctx| {
            Ok(vec![Some(masked_select(&ctx.grad(0)?, &ctx.saved[0])?)])
        });
    }
    Ok(out)
}

/// `masked_scatter(mask, source)`, out of place (MaskedScatterBackward0): `t` and the bool
/// `mask` broadcast to one shape, the elements where the mask is true replaced, in order, by
/// the first elements of `source` (any shape).
pub fn masked_scatter(t: &Tensor, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
    if mask.dtype() != DType::Bool {
        return Err(Error::Runtime(format!(
            "masked_scatter_ only supports boolean masks, but got mask with dtype {}",
            mask.dtype().kernel_name()
        )));
    }
    if source.dtype() != t.dtype() {
        return Err(Error::Runtime(format!(
            "masked_scatter: expected self and source to have same dtypes but got{} and {}",
            t.dtype().kernel_name(),
            source.dtype().kernel_name()
        )));
    }
    let shape = broadcast_shapes(t.shape(), mask.shape())?;
    let mask = unshared(mask, source)?;
    let lm = mask.layout().broadcast_to(&shape)?;
    let out = super::materialize(&super::shape::broadcast_to(&t.detach(), &shape)?)?;
    let ones = dispatch_all!(t.dtype(), T => {
        super::with_slices::<T, _>(&[Some(source)], |s| {
            let m = mask.storage().read::<u8>();
            let mut o = out.storage().write::<T>();
            ki::masked_scatter(&mut o, s[0].expect("source"), &m, &lm)
        })?
    });
    if ones > source.numel() {
        return Err(Error::Runtime(
            "Number of elements of source < number of ones in mask".into(),
        ));
    }
    if needs_grad(&[t, source]) {
        let (tshape, sshape) = (t.shape().to_vec(), source.shape().to_vec());
        let saved = vec![Saved::Input(mask.clone())];
        record(
            "MaskedScatterBackward0",
            &[t, source],
            &[&out],
            saved,
            move |ctx| {
                let (g, mask) = (ctx.grad(0)?, &ctx.saved[0]);
                let gt = if ctx.needs(0) {
                    let kept = super::binary::masked_fill(&g, mask, Scalar::Float(0.0))?;
                    Some(sum_to(&kept, &tshape)?)
                } else {
                    None
                };
                let gs = if ctx.needs(1) {
                    // the selected gradient, zero-padded to source's size
                    let sel = masked_select(&g, mask)?;
                    let pad = crate::layout::numel(&sshape) - sel.numel();
                    let flat = if pad > 0 {
                        super::rearrange::constant_pad_nd(
                            &sel,
                            &[0, pad as i64],
                            Scalar::Float(0.0),
                        )?
                    } else {
                        sel
                    };
                    Some(super::shape::reshape(&flat, &sshape)?)
                } else {
                    None
                };
                Ok(vec![gt, gs])
            },
        );
    }
    Ok(out)
}

/// index_fill's mask: a bool tensor broadcasting against `t`, true at `index` (int64, 0-d or
/// 1-D, negative from the end) along dim `d`. PyTorch's errors for a bad index.
fn index_fill_mask(t: &Tensor, d: usize, index: &Tensor) -> Result<Tensor> {
    if index.dtype() != DType::I64 {
        return Err(Error::Index(
            "index_fill_(): Expected dtype int64 for index.".into(),
        ));
    }
    if index.ndim() > 1 {
        return Err(Error::Runtime("Index has to be a vector/scalar".into()));
    }
    let size = t.shape().get(d).copied().unwrap_or(1);
    let mut marks = crate::storage::try_filled(size, 0u8)?;
    for i in index.try_to_vec::<i64>()? {
        let w = if i < 0 { i + size as i64 } else { i };
        if !(0..size as i64).contains(&w) {
            return Err(Error::Index(format!(
                "index {i} is out of bounds for dimension {d} with size {size}"
            )));
        }
        marks[w as usize] = 1;
    }
    let mut shape = vec![1; t.ndim()];
    if let Some(s) = shape.get_mut(d) {
        *s = size;
    }
    Tensor::from_vec(marks, shape)
}

/// `index_fill(dim, index, value)`, out of place: `t` with the slices at `index` along `dim`
/// set to `value`, a number (IndexFillBackward0) or a 0-d tensor, which then gets the sum of
/// the filled elements' gradients (IndexFillBackward1).
pub fn index_fill(t: &Tensor, dim: i64, index: &Tensor, value: &Operand) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim().max(1))?;
    let vt = match value {
        Operand::T(v) if v.ndim() != 0 => {
            return Err(Error::Runtime(format!(
                "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                v.ndim()
            )))
        }
        Operand::T(v) => Some(super::to_dtype(v, t.dtype())?),
        Operand::S(_) => None,
    };
    let mask = index_fill_mask(t, d, index)?;
    let fill = match (&vt, value) {
        (Some(v), _) => v.detach(),
        (None, Operand::S(s)) => Tensor::scalar(*s, t.dtype()),
        (None, Operand::T(v)) => v.detach(),
    };
    let mut out = super::binary::where_op(&mask, &Operand::T(fill), &Operand::T(t.detach()))?;
    if !out.is_contiguous() {
        out = super::materialize(&out)?;
    }
    let ins: Vec<&Tensor> = [Some(t), vt.as_ref()].into_iter().flatten().collect();
    if needs_grad(&ins) {
        let has_value = vt.is_some();
        let name = if has_value {
            "IndexFillBackward1"
        } else {
            "IndexFillBackward0"
        };
        let saved = vec![Saved::Input(index.clone())];
        record(name, &ins, &[&out], saved, move |ctx| {
            let (g, index) = (ctx.grad(0)?, &ctx.saved[0]);
            let zero = Operand::S(Scalar::Float(0.0));
            let mut grads = vec![Some(index_fill(&g, d as i64, index, &zero)?)];
            if has_value {
                let mask = index_fill_mask(&g, d, index)?;
                let picked = super::binary::where_op(&mask, &Operand::T(g.clone()), &zero)?;
                grads.push(Some(super::reduce::sum(&picked)?));
            }
            Ok(grads)
        });
    }
    Ok(out)
}

/// `scatter_add(dim, index, src)`, out of place (ScatterAddBackward0).
pub fn scatter_add(t: &Tensor, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim())?;
    let idx = check_index_dtype(index, "scatter_add")?;
    // float16 / bfloat16 accumulate in float32, narrow ints in int64
    let out = super::materialize(&super::widen(t)?)?;
    dispatch!(out.dtype(), T => {
        let s = super::cast_vec::<T>(src)?;
        let mut dst = out.storage().write::<T>();
        ki::scatter_add(&mut dst, t.shape(), d, &idx, index.shape(), &s, src.shape())?;
    });
    let out = super::narrow_to(out, t.dtype())?;
    if needs_grad(&[t, src]) {
        record(
            "ScatterAddBackward0",
            &[t, src],
            &[&out],
            vec![Saved::Input(index.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                let gs = gather(&g, d as i64, &ctx.saved[0])?;
                Ok(vec![Some(g), Some(gs)])
            },
        );
    }
    Ok(out)
}

/// `index_select(dim, index)` (IndexSelectBackward0).
pub fn index_select(t: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    if index.ndim() > 1 {
        return Err(Error::Index(
            "index_select(): Index is supposed to be a vector".into(),
        ));
    }
    let d = wrap_dim(dim, t.ndim())?;
    let idx = check_index_dtype(index, "index_select")?;
    let size = if t.ndim() == 0 { 1 } else { t.shape()[d] };
    let idx = ki::wrap_indices(&idx, size, d)
        .map_err(|_| Error::Index("index out of range in self".into()))?;
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let n = idx.len();
        let it = Tensor::from_vec(idx, vec![n])?;
        let mut ind: Vec<Option<Tensor>> = vec![None; t.ndim().max(1)];
        ind[d] = Some(it);
        if t.ndim() == 0 {
            unsqueeze(t, 0)?.detach()
        } else {
            crate::ops::index::index(&t.detach(), &ind)?
        }
    };
    let out = if t.ndim() == 0 && index.ndim() == 0 {
        squeeze(&out, None)?
    } else {
        out
    };
    if needs_grad(&[t]) {
        let shape = t.shape().to_vec();
        let saved = vec![Saved::Input(index.clone())];
        record("IndexSelectBackward0", &[t], &[&out], saved, move |ctx| {
            let z = Tensor::zeros(&shape, ctx.grad(0)?.dtype())?;
            let index = &ctx.saved[0];
            Ok(vec![Some(index_add(&z, d as i64, index, &ctx.grad(0)?)?)])
        });
    }
    Ok(out)
}

/// `index_add(dim, index, source)`, out of place (IndexAddBackward0).
pub fn index_add(t: &Tensor, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim())?;
    let mut ind: Vec<Option<Tensor>> = vec![None; t.ndim().max(1)];
    ind[d] = Some(index.clone());
    let out = match index_add_rows(t, d, index, src)? {
        Some(out) => out,
        None => {
            let _g = crate::autograd::GradModeGuard::new(false);
            index_put(&t.detach(), &ind, &src.detach(), true)?
        }
    };
    if needs_grad(&[t, src]) {
        record(
            "IndexAddBackward0",
            &[t, src],
            &[&out],
            vec![Saved::Input(index.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                let gs = index_select(&g, d as i64, &ctx.saved[0])?;
                Ok(vec![Some(g), Some(gs)])
            },
        );
    }
    Ok(out)
}

/// `index_add` of float tensors with a 1-D index of in-range positions and `src` of the exact
/// shape, as row adds (the embedding backward's case); None for anything else, which the
/// general `index_put` path computes (or rejects with PyTorch's messages).
fn index_add_rows(t: &Tensor, d: usize, index: &Tensor, src: &Tensor) -> Result<Option<Tensor>> {
    let shape = t.shape();
    if !matches!(t.dtype(), DType::F32 | DType::F64)
        || src.dtype() != t.dtype()
        || index.dtype() != DType::I64
        || index.ndim() > 1
        || shape.is_empty()
    {
        return Ok(None);
    }
    let mut want = shape.to_vec();
    want[d] = index.numel();
    let size = shape[d];
    let idx = index.try_to_vec::<i64>()?;
    if src.shape() != want || idx.iter().any(|&i| i < 0 || i as usize >= size) {
        return Ok(None);
    }
    let idx: Vec<usize> = idx.into_iter().map(|i| i as usize).collect();
    let inner: usize = shape[d + 1..].iter().product();
    let out = super::materialize(&t.detach())?;
    dispatch_float!(out.dtype(), T => {
        super::with_slices::<T, _>(&[Some(src)], |s| {
            let mut o = out.storage().write::<T>();
            ki::index_add_rows(&mut o, size, inner, &idx, s[0].expect("given"));
        })?
    });
    Ok(Some(out))
}

/// Where advanced indexing reads: the result is one block per entry of `bases` (a storage
/// offset), each block laid out in the source by `block` (offset 0).
struct Gather {
    out_shape: Vec<usize>,
    bases: Vec<usize>,
    block: Layout,
}

impl Gather {
    /// The storage offset of every result element, in row-major order.
    fn offsets(&self) -> Result<Vec<usize>> {
        ki::outer_sum(&self.bases, &ki::layout_offsets(&self.block)?)
    }
}

/// Plans advanced indexing with one optional int64 index tensor per dim, PyTorch's placement
/// rules included: the result is `[dims before] + B + [dims after]` when the indexed dims are
/// adjacent (B the broadcast shape of the indices), else `B + [other dims]`. The offsets of the
/// indexed dims are computed once per index position, and the source is read where it lies, so
/// an expanded (stride-0) tensor is never copied.
fn plan_advanced(layout: &Layout, indices: &[Option<Tensor>]) -> Result<Gather> {
    let shape = &layout.shape[..];
    let n = shape.len();
    let adv: Vec<usize> = (0..indices.len())
        .filter(|&i| indices[i].is_some())
        .collect();
    let mut bshape: Vec<usize> = vec![];
    for &i in &adv {
        let t = indices[i].as_ref().expect("adv");
        if t.dtype() != DType::I64 {
            return Err(Error::Index(
                "tensors used as indices must be long, int, byte or bool tensors".into(),
            ));
        }
        bshape = broadcast_shapes(&bshape, t.shape()).map_err(|_| {
            Error::Index(format!(
                "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                adv.iter()
                    .map(|&j| crate::layout::fmt_list(indices[j].as_ref().expect("adv").shape()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    }
    let adjacent = adv.windows(2).all(|w| w[1] == w[0] + 1);
    let first = adv.first().copied().unwrap_or(0);
    let rest: Vec<usize> = (0..n).filter(|i| !adv.contains(i)).collect();
    let (pre, post): (Vec<usize>, Vec<usize>) = if adjacent {
        (
            rest.iter().copied().filter(|&i| i < first).collect(),
            rest.iter().copied().filter(|&i| i > first).collect(),
        )
    } else {
        (vec![], rest.clone())
    };
    let dims_layout = |dims: &[usize], offset: usize| Layout {
        shape: dims.iter().map(|&i| shape[i]).collect(),
        strides: dims.iter().map(|&i| layout.strides[i]).collect(),
        offset,
    };
    let mut out_shape: Vec<usize> = pre.iter().map(|&i| shape[i]).collect();
    out_shape.extend(&bshape);
    out_shape.extend(post.iter().map(|&i| shape[i]));
    let block = dims_layout(&post, 0);
    if crate::layout::checked_numel(&out_shape)? == 0 {
        return Ok(Gather {
            out_shape,
            bases: vec![],
            block,
        });
    }
    // the offset of each index position along the indexed dims
    let mut adv_off = crate::storage::try_filled(crate::layout::numel(&bshape), 0usize)?;
    for &d in &adv {
        let t = indices[d].as_ref().expect("adv");
        let vals = t.try_to_vec::<i64>()?;
        let at = Layout::contiguous(t.shape().to_vec()).broadcast_to(&bshape)?;
        ki::add_index_offsets(&mut adv_off, &vals, &at, shape[d], layout.strides[d], d)?;
    }
    let pre_offsets = ki::layout_offsets(&dims_layout(&pre, layout.offset))?;
    let bases = ki::outer_sum(&pre_offsets, &adv_off)?;
    Ok(Gather {
        out_shape,
        bases,
        block,
    })
}

/// The index tensors of advanced indexing as saved tensors (PyTorch saves them: they are
/// freed after backward and checked for in-place changes), with which dims have one.
fn save_indices(indices: &[Option<Tensor>]) -> (Vec<bool>, Vec<Saved>) {
    let present = indices.iter().map(Option::is_some).collect();
    let saved = indices
        .iter()
        .flatten()
        .cloned()
        .map(Saved::Input)
        .collect();
    (present, saved)
}

/// The indices back from `save_indices`' saved tensors.
fn saved_indices(present: &[bool], saved: &[Tensor]) -> Vec<Option<Tensor>> {
    let mut it = saved.iter();
    present
        .iter()
        .map(|&p| if p { it.next().cloned() } else { None })
        .collect()
}

/// Advanced indexing (IndexBackward0).
pub fn index(t: &Tensor, indices: &[Option<Tensor>]) -> Result<Tensor> {
    if indices.len() > t.ndim() {
        return Err(Error::Index(format!(
            "too many indices for tensor of dimension {}",
            t.ndim()
        )));
    }
    let g = plan_advanced(t.layout(), indices)?;
    let out = dispatch_all!(t.dtype(), T => {
        let data = t.storage().read::<T>();
        let v = crate::kernels::elementwise::gather_blocks(&data, &g.bases, &g.block)?;
        drop(data);
        Tensor::from_vec(v, g.out_shape)?
    });
    if needs_grad(&[t]) {
        let ishape = t.shape().to_vec();
        let (present, saved) = save_indices(indices);
        record("IndexBackward0", &[t], &[&out], saved, move |ctx| {
            let g = ctx.grad(0)?;
            let z = Tensor::zeros(&ishape, g.dtype())?;
            let ind = saved_indices(&present, &ctx.saved);
            Ok(vec![Some(index_put(&z, &ind, &g, true)?)])
        });
    }
    Ok(out)
}

/// `index_put(indices, values, accumulate)`, out of place (IndexPutBackward0).
pub fn index_put(
    t: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    let g = plan_advanced(&Layout::contiguous(t.shape().to_vec()), indices)?;
    let shape = g.out_shape.clone();
    let vals = super::shape::broadcast_to(&values.detach(), &shape).map_err(|_| {
        Error::Runtime(format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            crate::layout::fmt_list(values.shape()),
            crate::layout::fmt_list(&shape)
        ))
    })?;
    let out = super::materialize(&super::widen(t)?)?;
    // the dims after the indexed ones are contiguous rows of the output when they trail
    let rows = g.block.is_contiguous();
    let lin = if rows { vec![] } else { g.offsets()? };
    dispatch!(out.dtype(), T => {
        let write = |v: &[T]| {
            let mut d = out.storage().write::<T>();
            if rows {
                ki::put_rows(&mut d, &g.bases, g.block.numel(), v, accumulate);
            } else {
                ki::put(&mut d, &lin, v, accumulate);
            }
        };
        if vals.dtype() == out.dtype() {
            super::with_slices::<T, _>(&[Some(&vals)], |v| write(v[0].expect("values")))?;
        } else {
            write(&super::cast_vec::<T>(&vals)?);
        }
    });
    let out = super::narrow_to(out, t.dtype())?;
    if needs_grad(&[t, values]) {
        let (present, saved) = save_indices(indices);
        let vshape = values.shape().to_vec();
        record(
            "IndexPutBackward0",
            &[t, values],
            &[&out],
            saved,
            move |ctx| {
                let g = ctx.grad(0)?;
                let ind = saved_indices(&present, &ctx.saved);
                let gt = if accumulate {
                    g.clone()
                } else {
                    let z = Tensor::scalar(Scalar::Float(0.0), g.dtype());
                    index_put(&g, &ind, &z, false)?
                };
                let gv = sum_to(&index(&g, &ind)?, &vshape)?;
                Ok(vec![Some(gt), Some(gv)])
            },
        );
    }
    Ok(out)
}

/// Positions of the true elements of a bool mask, one int64 tensor per mask dim.
pub fn nonzero_split(mask: &Tensor) -> Result<Vec<Tensor>> {
    let vals = mask.try_to_vec::<u8>()?;
    ki::nonzero_columns(&vals, mask.shape())?
        .into_iter()
        .map(|c| {
            let len = c.len();
            Tensor::from_vec(c, vec![len])
        })
        .collect()
}

/// One step of basic indexing, replayable on any tensor of the same shape.
#[derive(Clone, Debug)]
pub enum IndexStep {
    Region(Region),
    Unsqueeze(usize),
}

/// A parsed Python index: basic steps (views), then optional advanced indices.
#[derive(Clone, Debug, Default)]
pub struct ParsedIndex {
    pub steps: Vec<IndexStep>,
    pub advanced: Option<Vec<Option<Tensor>>>,
}

impl ParsedIndex {
    /// The basic (view) part.
    pub fn view(&self, t: &Tensor) -> Result<Tensor> {
        let mut cur = t.clone();
        for s in &self.steps {
            cur = match s {
                IndexStep::Region(r) => region(&cur, *r)?,
                IndexStep::Unsqueeze(d) => unsqueeze(&cur, *d as i64)?,
            };
        }
        Ok(cur)
    }
    /// `t[idx]` (differentiable).
    pub fn get(&self, t: &Tensor) -> Result<Tensor> {
        let v = self.view(t)?;
        match &self.advanced {
            Some(ind) => index(&v, ind),
            None => Ok(v),
        }
    }
}

/// Out-of-place `t[idx] = value` (CopySlices): the backward of an indexed assignment.
pub fn index_assign(t: &Tensor, idx: &ParsedIndex, value: &Operand) -> Result<Tensor> {
    let out = super::materialize(t)?;
    let value_t = match value {
        Operand::T(v) => v.clone(),
        Operand::S(s) => Tensor::scalar(*s, t.dtype()),
    };
    super::inplace::write_index(&out, idx, &value_t.detach())?;
    let vt = match value {
        Operand::T(v) => Some(v.clone()),
        Operand::S(_) => None,
    };
    let ins: Vec<&Tensor> = [Some(t), vt.as_ref()].into_iter().flatten().collect();
    if needs_grad(&ins) {
        let idx2 = idx.clone();
        let vshape = value_t.shape().to_vec();
        let has_v = vt.is_some();
        record("CopySlices", &ins, &[&out], vec![], move |ctx| {
            let g = ctx.grad(0)?;
            let zero = Operand::S(Scalar::Float(0.0));
            // differentiable in g (itself a CopySlices when a graph is built): double backward
            // and forward-mode AD go through the assignment
            let gt = index_assign(&g, &idx2, &zero)?;
            let mut grads = vec![Some(gt)];
            if has_v {
                grads.push(Some(sum_to(&idx2.get(&g)?, &vshape)?));
            }
            Ok(grads)
        });
    }
    Ok(out)
}
