//! Views (no copy: new layouts over the same storage) and shape-changing copies.

use super::reduce::sum_dims;
use crate::autograd::graph::{needs_grad, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::layout::{checked_numel, fmt_list, wrap_dim, Layout};
use crate::tensor::Tensor;

/// A tensor sharing `t`'s storage with another layout, remembered as a view of `t`'s base.
pub fn view_of(t: &Tensor, layout: Layout) -> Tensor {
    let out = t.with_layout(layout);
    let base = t.meta().view_base.clone().unwrap_or_else(|| t.clone());
    out.meta().view_base = Some(base);
    out
}

/// Resolves a single -1 in a requested shape (PyTorch's infer_size).
pub fn infer_shape(shape: &[i64], numel: usize) -> Result<Vec<usize>> {
    let mut infer = None;
    let mut known = 1usize;
    for (i, &d) in shape.iter().enumerate() {
        if d == -1 {
            if infer.is_some() {
                return Err(Error::Runtime("only one dimension can be inferred".into()));
            }
            infer = Some(i);
        } else if d < 0 {
            return Err(Error::Runtime(format!("invalid shape dimension {d}")));
        } else {
            known = known.checked_mul(d as usize).ok_or_else(|| {
                Error::Runtime(format!(
                    "shape '{shape:?}' is invalid for input of size {numel}"
                ))
            })?;
        }
    }
    let show = || {
        let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        format!("[{}]", parts.join(", "))
    };
    let mut out: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    match infer {
        Some(i) => {
            if known == 0 || !numel.is_multiple_of(known) {
                return Err(Error::Runtime(format!(
                    "shape '{}' is invalid for input of size {}",
                    show(),
                    numel
                )));
            }
            out[i] = numel / known;
        }
        None => {
            if known != numel {
                return Err(Error::Runtime(format!(
                    "shape '{}' is invalid for input of size {}",
                    show(),
                    numel
                )));
            }
        }
    }
    Ok(out)
}

fn record_reshape(name: &'static str, t: &Tensor, out: &Tensor) {
    if needs_grad(&[t]) {
        let shape = t.shape().to_vec();
        record(name, &[t], &[out], vec![], move |ctx| {
            Ok(vec![Some(reshape(&ctx.grad(0)?, &shape)?)])
        });
    }
}

/// `view`: never copies; errors when the strides do not allow it.
pub fn view(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let shape = infer_shape(shape, t.numel())?;
    let layout = t.layout().view(&shape).ok_or_else(|| {
        Error::Runtime("view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.".into())
    })?;
    let out = view_of(t, layout);
    record_reshape("ViewBackward0", t, &out);
    Ok(out)
}

/// `_unsafe_view` of a fresh contiguous result (UnsafeViewBackward0), as matmul's folding uses.
pub fn unsafe_view(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let layout = t.layout().view(shape).ok_or_else(|| {
        Error::Runtime(format!(
            "unsafe_view: cannot view {:?} as {:?}",
            t.shape(),
            shape
        ))
    })?;
    let out = view_of(t, layout);
    record_reshape("UnsafeViewBackward0", t, &out);
    Ok(out)
}

/// `reshape`: a view when possible, else a copy.
pub fn reshape(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let ishape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    reshape_i(t, &ishape)
}

pub fn reshape_i(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let shape = infer_shape(shape, t.numel())?;
    if shape == t.shape() && !needs_grad(&[t]) {
        return Ok(view_of(t, t.layout().clone()));
    }
    if let Some(layout) = t.layout().view(&shape) {
        let out = view_of(t, layout);
        record_reshape("ViewBackward0", t, &out);
        return Ok(out);
    }
    let copy = super::clone(t)?;
    let out = copy.with_layout(Layout::contiguous(shape));
    record_reshape("UnsafeViewBackward0", &copy, &out);
    Ok(out)
}

/// `movedim(source, destination)`: the dims `source` moved to the positions `destination`,
/// the others keeping their order; a view (PermuteBackward0).
pub fn movedim(t: &Tensor, src: &[i64], dst: &[i64]) -> Result<Tensor> {
    if src.len() != dst.len() {
        return Err(Error::Runtime(format!(
            "movedim: Invalid source or destination dims: source ({src:?} dims) should contain the same number of dims as destination ({dst:?} dims)"
        )));
    }
    let n = t.ndim();
    let wrap =
        |ds: &[i64]| -> Result<Vec<usize>> { ds.iter().map(|&d| wrap_dim(d, n.max(1))).collect() };
    let (sw, dw) = (wrap(src)?, wrap(dst)?);
    let repeated = |w: &[usize]| (1..w.len()).any(|i| w[..i].contains(&w[i]));
    if repeated(&sw) {
        return Err(Error::Runtime(format!(
            "movedim: repeated dim in `source` ({src:?})"
        )));
    }
    if repeated(&dw) {
        return Err(Error::Runtime(format!(
            "movedim: repeated dim in `destination` ({dst:?})"
        )));
    }
    let mut perm: Vec<Option<i64>> = vec![None; n];
    for (&s, &d) in sw.iter().zip(&dw) {
        if let Some(p) = perm.get_mut(d) {
            *p = Some(s as i64);
        }
    }
    let mut rest = (0..n as i64).filter(|d| !sw.contains(&(*d as usize)));
    let perm: Vec<i64> = perm
        .into_iter()
        .map(|p| p.or_else(|| rest.next()).expect("a dim for every position"))
        .collect();
    permute(t, &perm)
}

pub fn permute(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let n = t.ndim();
    if dims.len() != n {
        return Err(Error::Runtime(format!(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {} is not equal to len(dims) = {}",
            n,
            dims.len()
        )));
    }
    let mut seen = vec![false; n];
    let mut wd = Vec::with_capacity(n);
    for &d in dims {
        let w = wrap_dim(d, n)?;
        if seen[w] {
            return Err(Error::Runtime(
                "permute(): duplicate dims are not allowed.".into(),
            ));
        }
        seen[w] = true;
        wd.push(w);
    }
    let out = view_of(t, t.layout().permute(&wd));
    if needs_grad(&[t]) {
        let mut inv = vec![0i64; n];
        for (i, &d) in wd.iter().enumerate() {
            inv[d] = i as i64;
        }
        record("PermuteBackward0", &[t], &[&out], vec![], move |ctx| {
            Ok(vec![Some(permute(&ctx.grad(0)?, &inv)?)])
        });
    }
    Ok(out)
}

fn transpose_named(t: &Tensor, a: i64, b: i64, name: &'static str) -> Result<Tensor> {
    let n = t.ndim();
    if n == 0 {
        return Ok(view_of(t, t.layout().clone()));
    }
    let (wa, wb) = (wrap_dim(a, n)?, wrap_dim(b, n)?);
    let out = view_of(t, t.layout().transpose(wa, wb));
    if needs_grad(&[t]) {
        record(name, &[t], &[&out], vec![], move |ctx| {
            Ok(vec![Some(transpose(&ctx.grad(0)?, a, b)?)])
        });
    }
    Ok(out)
}

pub fn transpose(t: &Tensor, a: i64, b: i64) -> Result<Tensor> {
    transpose_named(t, a, b, "TransposeBackward0")
}

/// `t()`: transpose of a tensor with at most 2 dims (TBackward0).
pub fn t2(t: &Tensor) -> Result<Tensor> {
    if t.ndim() > 2 {
        return Err(Error::Runtime(format!(
            "t() expects a tensor with <= 2 dimensions, but self is {}D",
            t.ndim()
        )));
    }
    if t.ndim() < 2 {
        let out = view_of(t, t.layout().clone());
        if needs_grad(&[t]) {
            record("TBackward0", &[t], &[&out], vec![], |ctx| {
                Ok(vec![Some(ctx.grad(0)?)])
            });
        }
        return Ok(out);
    }
    transpose_named(t, 0, 1, "TBackward0")
}

pub fn unsqueeze(t: &Tensor, dim: i64) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim() + 1)?;
    let out = view_of(t, t.layout().unsqueeze(d));
    if needs_grad(&[t]) {
        record("UnsqueezeBackward0", &[t], &[&out], vec![], move |ctx| {
            Ok(vec![Some(squeeze(&ctx.grad(0)?, Some(&[d as i64]))?)])
        });
    }
    Ok(out)
}

/// `squeeze()` (all size-1 dims, SqueezeBackward0) or `squeeze(dims)` (SqueezeBackward1).
pub fn squeeze(t: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    let n = t.ndim();
    let drop: Vec<bool> = match dims {
        None => t.shape().iter().map(|&s| s == 1).collect(),
        Some(ds) => {
            let mut v = vec![false; n];
            for &d in ds {
                let w = wrap_dim(d, n)?;
                if n > 0 && t.shape()[w] == 1 {
                    v[w] = true;
                }
            }
            v
        }
    };
    let l = t.layout();
    let layout = Layout {
        shape: (0..n).filter(|&i| !drop[i]).map(|i| l.shape[i]).collect(),
        strides: (0..n).filter(|&i| !drop[i]).map(|i| l.strides[i]).collect(),
        offset: l.offset,
    };
    let out = view_of(t, layout);
    let name = if dims.is_none() {
        "SqueezeBackward0"
    } else {
        "SqueezeBackward1"
    };
    record_reshape(name, t, &out);
    Ok(out)
}

/// `expand`: -1 keeps a dim; new leading dims may be added. Never copies.
pub fn expand(t: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let n = sizes.len();
    if n < t.ndim() {
        return Err(Error::Runtime(format!(
            "expand({}{{{}}}, size=[{}]): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
            t.dtype().legacy_name(),
            fmt_list(t.shape()),
            sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "),
            n,
            t.ndim()
        )));
    }
    let lead = n - t.ndim();
    let mut shape = Vec::with_capacity(n);
    for (i, &s) in sizes.iter().enumerate() {
        if s == -1 {
            if i < lead {
                return Err(Error::Runtime(format!(
                    "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}"
                )));
            }
            shape.push(t.shape()[i - lead]);
        } else if s < 0 {
            return Err(Error::Runtime(format!("expand: invalid size {s}")));
        } else {
            shape.push(s as usize);
        }
    }
    // as PyTorch, a shape whose element count does not fit in int64 is refused
    crate::layout::checked_numel(&shape)
        .map_err(|_| Error::Runtime("numel: integer multiplication overflow".into()))?;
    let out = view_of(t, t.layout().broadcast_to(&shape)?);
    if needs_grad(&[t]) {
        let ishape = t.shape().to_vec();
        record("ExpandBackward0", &[t], &[&out], vec![], move |ctx| {
            Ok(vec![Some(sum_to(&ctx.grad(0)?, &ishape)?)])
        });
    }
    Ok(out)
}

pub fn broadcast_to(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let s: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    expand(t, &s)
}

/// Sums `g` down to `shape` (the reverse of broadcasting).
pub fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let lead = g
        .ndim()
        .checked_sub(shape.len())
        .ok_or_else(|| Error::Runtime("sum_to: target has more dims".into()))?;
    let mut dims: Vec<i64> = (0..lead as i64).collect();
    for (i, &s) in shape.iter().enumerate() {
        let gs = g.shape()[lead + i];
        if s == 1 && gs != 1 {
            dims.push((lead + i) as i64);
        } else if s != gs {
            return Err(Error::Runtime(format!(
                "sum_to: shape {} is not reducible to {}",
                fmt_list(g.shape()),
                fmt_list(shape)
            )));
        }
    }
    let r = if dims.is_empty() {
        g.clone()
    } else {
        sum_dims(g, Some(&dims), true, None)?
    };
    reshape(&r, shape)
}

/// A rectangular region of a tensor: `start:start+len*step:step` along `dim`, or one index.
#[derive(Clone, Copy, Debug)]
pub enum Region {
    Slice {
        dim: usize,
        start: usize,
        len: usize,
        step: usize,
    },
    Select {
        dim: usize,
        index: usize,
    },
}

impl Region {
    pub fn apply(&self, l: &Layout) -> Layout {
        match *self {
            Region::Slice {
                dim,
                start,
                len,
                step,
            } => l.slice(dim, start, len, step),
            Region::Select { dim, index } => l.select(dim, index),
        }
    }
}

/// The region of `t` as a view (SliceBackward0 / SelectBackward0).
pub fn region(t: &Tensor, r: Region) -> Result<Tensor> {
    let out = view_of(t, r.apply(t.layout()));
    if needs_grad(&[t]) {
        let shape = t.shape().to_vec();
        let name = match r {
            Region::Slice { .. } => "SliceBackward0",
            Region::Select { .. } => "SelectBackward0",
        };
        record(name, &[t], &[&out], vec![], move |ctx| {
            Ok(vec![Some(embed(&ctx.grad(0)?, &shape, r)?)])
        });
    }
    Ok(out)
}

/// Zeros of `shape` with `g` written into region `r` (the backward of `region`).
pub fn embed(g: &Tensor, shape: &[usize], r: Region) -> Result<Tensor> {
    let out = Tensor::zeros(shape, g.dtype())?;
    let target = r.apply(out.layout());
    dispatch_all!(g.dtype(), T => {
        let vals = g.to_vec::<T>();
        let mut d = out.storage().write::<T>();
        elementwise::assign(&mut d, &target, &vals);
    });
    if needs_grad(&[g]) {
        record(
            "SliceBackwardBackward0",
            &[g],
            &[&out],
            vec![],
            move |ctx| Ok(vec![Some(region(&ctx.grad(0)?, r)?)]),
        );
    }
    Ok(out)
}

/// `Tensor.unfold(dimension, size, step)`: the windows of `size` elements every `step` along
/// `dim`, as a new last dim; a view (UnfoldBackward0: the windows' gradients added back).
pub fn unfold(t: &Tensor, dim: i64, size: i64, step: i64) -> Result<Tensor> {
    let d = wrap_dim(dim, t.ndim().max(1))?;
    let n = t.shape().get(d).copied().unwrap_or(1) as i64;
    if size < 0 {
        return Err(Error::Runtime(format!("size is {size} but must be >= 0")));
    }
    if size > n {
        return Err(Error::Runtime(format!(
            "maximum size for tensor at dimension {d} is {n} but size is {size}"
        )));
    }
    if step <= 0 {
        return Err(Error::Runtime(format!("step is {step} but must be > 0")));
    }
    let (size, step) = (size as usize, step as usize);
    let mut l = t.layout().clone();
    if t.ndim() == 0 {
        l.shape = vec![size];
        l.strides = vec![1];
    } else {
        let windows = (n as usize - size) / step + 1;
        let st = l.strides[d];
        l.shape[d] = windows;
        l.strides[d] = st * step;
        l.shape.push(size);
        l.strides.push(st);
    }
    let out = view_of(t, l);
    if needs_grad(&[t]) {
        let shape = t.shape().to_vec();
        record("UnfoldBackward0", &[t], &[&out], vec![], move |ctx| {
            let g = ctx.grad(0)?;
            if shape.is_empty() {
                return Ok(vec![Some(reshape(&g, &[])?)]);
            }
            // the windows side by side along d, added into zeros at the positions they read
            let windows = g.shape()[d];
            let idx: Vec<i64> = (0..windows)
                .flat_map(|w| (0..size).map(move |j| (w * step + j) as i64))
                .collect();
            let idx = Tensor::from_vec(idx, vec![windows * size])?;
            let mut flat = shape.clone();
            flat[d] = windows * size;
            let g = reshape(&movedim(&g, &[-1], &[d as i64 + 1])?, &flat)?;
            let z = Tensor::zeros(&shape, g.dtype())?;
            Ok(vec![Some(super::index::index_add(&z, d as i64, &idx, &g)?)])
        });
    }
    Ok(out)
}

pub fn narrow(t: &Tensor, dim: i64, start: i64, len: i64) -> Result<Tensor> {
    if t.ndim() == 0 {
        return Err(Error::Runtime(
            "narrow() cannot be applied to a 0-dim tensor.".into(),
        ));
    }
    let d = wrap_dim(dim, t.ndim())?;
    let size = t.shape()[d] as i64;
    let start = if start < 0 { start + size } else { start };
    if start < 0 || start > size {
        return Err(Error::Index(format!(
            "start out of range (expected to be in range of [{}, {}], but got {})",
            -size, size, start
        )));
    }
    if len < 0 || len > size - start {
        return Err(Error::Runtime(format!(
            "start ({start}) + length ({len}) exceeds dimension size ({size})."
        )));
    }
    region(
        t,
        Region::Slice {
            dim: d,
            start: start as usize,
            len: len as usize,
            step: 1,
        },
    )
}

pub fn select(t: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    if t.ndim() == 0 {
        return Err(Error::Index(
            "select() cannot be applied to a 0-dim tensor.".into(),
        ));
    }
    let d = wrap_dim(dim, t.ndim())?;
    let size = t.shape()[d] as i64;
    let i = if index < 0 { index + size } else { index };
    if i < 0 || i >= size {
        return Err(Error::Index(format!(
            "index {index} is out of bounds for dimension {d} with size {size}"
        )));
    }
    region(
        t,
        Region::Select {
            dim: d,
            index: i as usize,
        },
    )
}

/// `cat` along `dim` (CatBackward0).
pub fn cat(ts: &[Tensor], dim: i64) -> Result<Tensor> {
    if ts.is_empty() {
        return Err(Error::Runtime(
            "torch.cat(): expected a non-empty list of Tensors".into(),
        ));
    }
    // legacy behaviour: 1-d empty tensors are skipped
    let parts: Vec<&Tensor> = ts
        .iter()
        .filter(|t| !(t.ndim() == 1 && t.numel() == 0))
        .collect();
    let parts: Vec<&Tensor> = if parts.is_empty() {
        vec![&ts[0]]
    } else {
        parts
    };
    let first = parts[0];
    if first.ndim() == 0 {
        return Err(Error::Runtime(
            "zero-dimensional tensor (at position 0) cannot be concatenated".into(),
        ));
    }
    let d = wrap_dim(dim, first.ndim())?;
    let mut dtype = first.dtype();
    let mut total = 0usize;
    for (i, t) in parts.iter().enumerate() {
        if t.ndim() != first.ndim() {
            return Err(Error::Runtime(format!(
                "Tensors must have same number of dimensions: got {} and {}",
                first.ndim(),
                t.ndim()
            )));
        }
        for k in 0..first.ndim() {
            if k != d && t.shape()[k] != first.shape()[k] {
                return Err(Error::Runtime(format!(
                    "Sizes of tensors must match except in dimension {}. Expected size {} but got size {} for tensor number {} in the list.",
                    d, first.shape()[k], t.shape()[k], i
                )));
            }
        }
        dtype = DType::promote(dtype, t.dtype());
        total += t.shape()[d];
    }
    let mut shape = first.shape().to_vec();
    shape[d] = total;
    checked_numel(&shape)?;
    let out = Tensor::zeros(&shape, dtype)?;
    let mut start = 0;
    dispatch_all!(dtype, T => {
        let mut dst = out.storage().write::<T>();
        for t in &parts {
            let len = t.shape()[d];
            let target = out.layout().narrow(d, start, len);
            if t.dtype() == dtype {
                // read through the part's own layout: no row-major copy of it first
                let src = t.storage().read::<T>();
                elementwise::map_inplace2(&mut dst, &target, &src, t.layout(), false, |_, v: T| v);
            } else {
                elementwise::assign(&mut dst, &target, &super::cast_vec::<T>(t)?);
            }
            start += len;
        }
    });
    // every input is an edge of the node, the skipped empty ones too (their gradient: empty)
    let refs: Vec<&Tensor> = ts.iter().collect();
    if dtype.is_float() && needs_grad(&refs) {
        let sizes: Vec<Option<usize>> = ts
            .iter()
            .map(|t| (t.ndim() == first.ndim()).then(|| t.shape()[d]))
            .collect();
        record("CatBackward0", &refs, &[&out], vec![], move |ctx| {
            let g = ctx.grad(0)?;
            let mut start = 0;
            let mut grads = Vec::with_capacity(sizes.len());
            for &len in &sizes {
                grads.push(Some(match len {
                    Some(len) => narrow(&g, d as i64, start as i64, len as i64)?,
                    None => Tensor::zeros(&[0], g.dtype())?,
                }));
                start += len.unwrap_or(0);
            }
            Ok(grads)
        });
    }
    Ok(out)
}

/// `stack` along a new `dim` (StackBackward0).
pub fn stack(ts: &[Tensor], dim: i64) -> Result<Tensor> {
    if ts.is_empty() {
        return Err(Error::Runtime(
            "stack expects a non-empty TensorList".into(),
        ));
    }
    let d = wrap_dim(dim, ts[0].ndim() + 1)?;
    for (i, t) in ts.iter().enumerate() {
        if t.shape() != ts[0].shape() {
            return Err(Error::Runtime(format!(
                "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {}",
                fmt_list(ts[0].shape()),
                fmt_list(t.shape()),
                i
            )));
        }
    }
    let unsq: Vec<Tensor> = ts
        .iter()
        .map(|t| t.with_layout(t.layout().unsqueeze(d)))
        .collect();
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        cat(&unsq, d as i64)?
    };
    let refs: Vec<&Tensor> = ts.iter().collect();
    if out.dtype().is_float() && needs_grad(&refs) {
        let n = ts.len();
        record("StackBackward0", &refs, &[&out], vec![], move |ctx| {
            let g = ctx.grad(0)?;
            (0..n)
                .map(|i| select(&g, d as i64, i as i64).map(Some))
                .collect()
        });
    }
    Ok(out)
}

/// Several regions of `t` as views recorded by one multi-output node (SplitBackward0,
/// UnbindBackward0, ...): its backward embeds each output's gradient back in place.
pub fn regions(t: &Tensor, regions: Vec<Region>, name: &'static str) -> Result<Vec<Tensor>> {
    // one tensor object (a few hundred bytes with its layout) per region
    crate::storage::check_fits(regions.len().saturating_mul(256))?;
    let mut outs: Vec<Tensor> = crate::storage::alloc(regions.len())?;
    outs.extend(regions.iter().map(|r| view_of(t, r.apply(t.layout()))));
    if needs_grad(&[t]) {
        let (shape, dtype) = (t.shape().to_vec(), t.dtype());
        let refs: Vec<&Tensor> = outs.iter().collect();
        record(name, &[t], &refs, vec![], move |ctx| {
            let grads: Vec<&Tensor> = ctx.grads.iter().flatten().collect();
            if !needs_grad(&grads) {
                // the pieces are disjoint: one zeroed tensor, each gradient written into its
                // region (not one full-size tensor per piece, summed)
                let out = Tensor::zeros(&shape, dtype)?;
                for (g, r) in ctx.grads.iter().zip(&regions) {
                    if let Some(g) = g {
                        super::inplace::write_values(&out.with_layout(r.apply(out.layout())), g)?;
                    }
                }
                return Ok(vec![Some(out)]);
            }
            let mut acc: Option<Tensor> = None;
            for (i, r) in regions.iter().enumerate() {
                if let Some(g) = &ctx.grads[i] {
                    let e = embed(g, &shape, *r)?;
                    acc = Some(match acc {
                        None => e,
                        Some(a) => super::binary::add(&a, &e)?,
                    });
                }
            }
            Ok(vec![Some(match acc {
                Some(a) => a,
                None => Tensor::zeros(&shape, dtype)?,
            })])
        });
    }
    Ok(outs)
}

/// `split` into pieces of the given sizes along `dim`.
pub fn split(t: &Tensor, sizes: &[usize], dim: i64, name: &'static str) -> Result<Vec<Tensor>> {
    let d = wrap_dim(dim, t.ndim())?;
    let total: usize = sizes.iter().sum();
    if t.ndim() == 0 || total != t.shape()[d] {
        return Err(Error::Runtime(format!(
            "split_with_sizes expects split_sizes to sum exactly to {} (input tensor's size at dimension {}), but got split_sizes={}",
            t.shape().get(d).copied().unwrap_or(0), d, fmt_list(sizes)
        )));
    }
    let mut start = 0;
    let mut rs = Vec::with_capacity(sizes.len());
    for &len in sizes {
        rs.push(Region::Slice {
            dim: d,
            start,
            len,
            step: 1,
        });
        start += len;
    }
    regions(t, rs, name)
}

/// `unbind(dim)` (UnbindBackward0).
pub fn unbind(t: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    if t.ndim() == 0 {
        return Err(Error::Index(
            "Dimension specified as 0 but tensor has no dimensions".into(),
        ));
    }
    let d = wrap_dim(dim, t.ndim())?;
    let n = t.shape()[d];
    let rs = crate::storage::try_collect(n, (0..n).map(|i| Region::Select { dim: d, index: i }))?;
    regions(t, rs, "UnbindBackward0")
}

pub fn flatten(t: &Tensor, start: i64, end: i64) -> Result<Tensor> {
    if t.ndim() == 0 {
        return reshape(t, &[1]);
    }
    let s = wrap_dim(start, t.ndim())?;
    let e = wrap_dim(end, t.ndim())?;
    if s > e {
        return Err(Error::Runtime(
            "flatten() has invalid args: start_dim cannot come after end_dim".into(),
        ));
    }
    if s == e {
        return Ok(t.clone());
    }
    let mut shape: Vec<usize> = t.shape()[..s].to_vec();
    shape.push(t.shape()[s..=e].iter().product());
    shape.extend_from_slice(&t.shape()[e + 1..]);
    reshape(t, &shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_to_scalar_shape() {
        let g = Tensor::from_vec(vec![1.0f32; 4], vec![4]).unwrap();
        assert_eq!(sum_to(&g, &[]).unwrap().shape(), &[] as &[usize]);
        let g = Tensor::from_vec(vec![1.0f32; 6], vec![2, 3]).unwrap();
        let r = sum_to(&g, &[3]).unwrap();
        assert_eq!(r.shape(), &[3]);
        assert_eq!(r.to_vec::<f32>(), vec![2.0; 3]);
        let r = sum_to(&g, &[2, 1]).unwrap();
        assert_eq!(r.to_vec::<f32>(), vec![3.0; 2]);
    }
}
