//! Shape, strides (in elements) and offset: how a tensor reads its storage. Views only ever
//! build new layouts.

use crate::error::{dim_out_of_range, Error, Result};

pub type Shape = Vec<usize>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub shape: Shape,
    pub strides: Vec<usize>,
    pub offset: usize,
}

pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut acc = 1usize;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc = acc.saturating_mul(shape[i].max(1));
    }
    strides
}

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Checked element count: an absurd shape is an error rather than an overflow.
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= i64::MAX as usize)
        .ok_or_else(|| {
            Error::Runtime(format!(
                "Trying to create tensor with shape {shape:?}, whose number of elements overflows"
            ))
        })
}

/// Wraps a possibly negative dim into `0..ndim` (PyTorch's maybe_wrap_dim).
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        return Err(dim_out_of_range(dim, ndim));
    }
    Ok(if dim < 0 {
        (dim + n) as usize
    } else {
        dim as usize
    })
}

/// `torch.Size([2, 3])` formatting used in error messages.
pub fn fmt_size(shape: &[usize]) -> String {
    let inner: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("torch.Size([{}])", inner.join(", "))
}

/// `[2, 3]` formatting.
pub fn fmt_list(shape: &[usize]) -> String {
    let inner: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", inner.join(", "))
}

pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Shape> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::Broadcast {
                a: da,
                b: db,
                dim: i,
            });
        };
    }
    Ok(out)
}

impl Layout {
    pub fn contiguous(shape: Shape) -> Layout {
        let strides = contiguous_strides(&shape);
        Layout {
            shape,
            strides,
            offset: 0,
        }
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }
    pub fn is_contiguous(&self) -> bool {
        // PyTorch: a tensor without elements is contiguous whatever its strides
        if self.shape.contains(&0) {
            return true;
        }
        let mut expected = 1usize;
        for i in (0..self.shape.len()).rev() {
            if self.shape[i] != 1 {
                if self.strides[i] != expected {
                    return false;
                }
                expected *= self.shape[i];
            }
        }
        true
    }
    /// True when no two elements share a storage place: with the dims sorted by stride, each
    /// stride is past the span of the smaller ones (a sufficient test, exact for the layouts
    /// views produce). Unlike `is_non_overlapping_and_dense`, gaps are allowed (a slice with a
    /// step, a narrowed dim).
    pub fn is_non_overlapping(&self) -> bool {
        let mut dims: Vec<usize> = (0..self.ndim()).filter(|&d| self.shape[d] > 1).collect();
        dims.sort_by_key(|&d| self.strides[d]);
        let mut span = 0usize;
        for d in dims {
            if self.strides[d] <= span {
                return false;
            }
            span += self.strides[d] * (self.shape[d] - 1);
        }
        true
    }
    /// PyTorch's `is_non_overlapping_and_dense`: the elements fill a block of storage without
    /// gaps or overlaps, in some order of the dims.
    pub fn is_non_overlapping_and_dense(&self) -> bool {
        let mut dims: Vec<usize> = (0..self.ndim()).filter(|&d| self.shape[d] != 1).collect();
        if self.shape.contains(&0) {
            return true;
        }
        dims.sort_by_key(|&d| self.strides[d]);
        let mut expected = 1usize;
        for d in dims {
            if self.strides[d] != expected {
                return false;
            }
            expected *= self.shape[d];
        }
        true
    }

    /// The dims from the largest stride to the smallest (ties in dim order): the order in
    /// which a dense layout lays out its elements.
    pub fn memory_order(&self) -> Vec<usize> {
        let mut dims: Vec<usize> = (0..self.ndim()).collect();
        dims.sort_by_key(|&d| std::cmp::Reverse(self.strides[d]));
        dims
    }

    /// The storage range `offset..offset+numel` when contiguous.
    pub fn contiguous_range(&self) -> Option<std::ops::Range<usize>> {
        // an empty view may start past the end of its (possibly empty) storage
        let n = self.numel();
        self.is_contiguous().then(|| {
            if n == 0 {
                0..0
            } else {
                self.offset..self.offset + n
            }
        })
    }

    /// Layout of this tensor broadcast to `shape` (stride 0 on broadcast dims).
    /// The elements actually stored: every expanded (stride-0) dim cut to its one element.
    pub fn stored(&self) -> Layout {
        Layout {
            shape: self
                .shape
                .iter()
                .zip(&self.strides)
                .map(|(&d, &s)| if s == 0 { d.min(1) } else { d })
                .collect(),
            strides: self.strides.clone(),
            offset: self.offset,
        }
    }

    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout> {
        let n = shape.len();
        if self.ndim() > n {
            return Err(Error::Runtime(format!(
                "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension 0.  Target sizes: {}.  Tensor sizes: {}",
                shape.first().copied().unwrap_or(0), self.shape[0], fmt_list(shape), fmt_list(&self.shape)
            )));
        }
        let lead = n - self.ndim();
        let mut strides = vec![0; n];
        for i in 0..n {
            if i < lead {
                continue;
            }
            let d = self.shape[i - lead];
            if d == shape[i] {
                strides[i] = self.strides[i - lead];
            } else if d == 1 {
                strides[i] = 0;
            } else {
                return Err(Error::Runtime(format!(
                    "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension {}.  Target sizes: {}.  Tensor sizes: {}",
                    shape[i], d, i, fmt_list(shape), fmt_list(&self.shape)
                )));
            }
        }
        Ok(Layout {
            shape: shape.to_vec(),
            strides,
            offset: self.offset,
        })
    }

    pub fn permute(&self, dims: &[usize]) -> Layout {
        Layout {
            shape: dims.iter().map(|&d| self.shape[d]).collect(),
            strides: dims.iter().map(|&d| self.strides[d]).collect(),
            offset: self.offset,
        }
    }

    pub fn transpose(&self, a: usize, b: usize) -> Layout {
        let mut l = self.clone();
        l.shape.swap(a, b);
        l.strides.swap(a, b);
        l
    }

    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Layout {
        let mut l = self.clone();
        l.offset += start * self.strides[dim];
        l.shape[dim] = len;
        l
    }

    /// Basic slicing `start:stop:step` along `dim` (already clamped, `step > 0`).
    pub fn slice(&self, dim: usize, start: usize, len: usize, step: usize) -> Layout {
        let mut l = self.clone();
        if len > 0 {
            l.offset += start * self.strides[dim];
        }
        l.shape[dim] = len;
        l.strides[dim] = self.strides[dim] * step;
        l
    }

    pub fn select(&self, dim: usize, index: usize) -> Layout {
        let mut l = self.clone();
        l.offset += index * self.strides[dim];
        l.shape.remove(dim);
        l.strides.remove(dim);
        l
    }

    pub fn unsqueeze(&self, dim: usize) -> Layout {
        let mut l = self.clone();
        let stride = if dim < self.ndim() {
            self.strides[dim] * self.shape[dim]
        } else {
            1
        };
        l.shape.insert(dim, 1);
        l.strides.insert(dim, stride);
        l
    }

    /// View with a new shape without copying, if the strides allow it (PyTorch's computeStride).
    pub fn view(&self, shape: &[usize]) -> Option<Layout> {
        if self.is_contiguous() {
            return Some(Layout {
                shape: shape.to_vec(),
                strides: contiguous_strides(shape),
                offset: self.offset,
            });
        }
        let numel = self.numel();
        if numel == 0 {
            return Some(Layout {
                shape: shape.to_vec(),
                strides: contiguous_strides(shape),
                offset: self.offset,
            });
        }
        let mut new_strides = vec![0usize; shape.len()];
        let mut view_d = shape.len() as isize - 1;
        let mut chunk_base_stride = *self.strides.last().unwrap_or(&1);
        let mut tensor_numel = 1usize;
        let mut view_numel = 1usize;
        for tensor_d in (0..self.ndim()).rev() {
            tensor_numel *= self.shape[tensor_d];
            if tensor_d == 0
                || (self.shape[tensor_d - 1] != 1
                    && self.strides[tensor_d - 1] != tensor_numel * chunk_base_stride)
            {
                while view_d >= 0 && (view_numel < tensor_numel || shape[view_d as usize] == 1) {
                    new_strides[view_d as usize] = view_numel * chunk_base_stride;
                    view_numel *= shape[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = self.strides[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(Layout {
            shape: shape.to_vec(),
            strides: new_strides,
            offset: self.offset,
        })
    }

    /// Calls `f` with the storage offset of every element, in row-major order.
    #[inline]
    /// Calls `f(first offset, len, stride)` for each run of the innermost dim, in row-major
    /// order (one call for a contiguous layout).
    pub fn for_each_run(&self, mut f: impl FnMut(usize, usize, usize)) {
        let n = self.numel();
        if n == 0 {
            return;
        }
        if let Some(r) = self.contiguous_range() {
            f(r.start, n, 1);
            return;
        }
        let nd = self.ndim();
        let inner = self.shape[nd - 1];
        let inner_stride = self.strides[nd - 1];
        let mut idx = vec![0usize; nd];
        let mut base = self.offset;
        for _ in 0..n / inner {
            f(base, inner, inner_stride);
            let mut d = nd - 1;
            while d > 0 {
                d -= 1;
                idx[d] += 1;
                base += self.strides[d];
                if idx[d] < self.shape[d] {
                    break;
                }
                base -= self.strides[d] * self.shape[d];
                idx[d] = 0;
            }
        }
    }

    pub fn for_each_offset(&self, mut f: impl FnMut(usize)) {
        self.for_each_run(|base, len, stride| {
            let mut o = base;
            for _ in 0..len {
                f(o);
                o += stride;
            }
        });
    }

    /// Calls `f(offset_in_self, offset_in_other)` for every element of two layouts of the same
    /// shape, in row-major order, stepping the innermost dim with a plain loop.
    #[inline]
    pub fn for_each_offset2(&self, other: &Layout, mut f: impl FnMut(usize, usize)) {
        debug_assert_eq!(self.shape, other.shape);
        let n = self.numel();
        if n == 0 {
            return;
        }
        let nd = self.ndim();
        if nd == 0 {
            f(self.offset, other.offset);
            return;
        }
        let inner = self.shape[nd - 1];
        let (sa, sb) = (self.strides[nd - 1], other.strides[nd - 1]);
        let mut idx = vec![0usize; nd];
        let (mut ba, mut bb) = (self.offset, other.offset);
        for _ in 0..n / inner {
            let (mut oa, mut ob) = (ba, bb);
            for _ in 0..inner {
                f(oa, ob);
                oa += sa;
                ob += sb;
            }
            let mut d = nd - 1;
            while d > 0 {
                d -= 1;
                idx[d] += 1;
                ba += self.strides[d];
                bb += other.strides[d];
                if idx[d] < self.shape[d] {
                    break;
                }
                ba -= self.strides[d] * self.shape[d];
                bb -= other.strides[d] * self.shape[d];
                idx[d] = 0;
            }
        }
    }

    /// Storage offsets of all elements, in row-major order.
    pub fn offsets(&self) -> Vec<usize> {
        let mut v = Vec::with_capacity(self.numel());
        self.for_each_offset(|o| v.push(o));
        v
    }
}

/// Normalises a list of dims (possibly negative, possibly empty meaning "all") to a sorted,
/// de-duplicated list, with PyTorch's error for repeated dims.
pub fn reduce_dims(dims: Option<&[i64]>, ndim: usize) -> Result<Vec<usize>> {
    match dims {
        None | Some([]) => Ok((0..ndim).collect()),
        Some(ds) => {
            let mut seen = vec![false; ndim.max(1)];
            let mut out = Vec::with_capacity(ds.len());
            for &d in ds {
                let w = wrap_dim(d, ndim)?;
                if seen[w] {
                    return Err(Error::Runtime(format!(
                        "dim {w} appears multiple times in the list of dims"
                    )));
                }
                seen[w] = true;
                out.push(w);
            }
            out.sort_unstable();
            if ndim == 0 {
                out.clear();
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast() {
        assert_eq!(broadcast_shapes(&[3, 1], &[1, 4]).unwrap(), vec![3, 4]);
        assert_eq!(broadcast_shapes(&[2, 3, 4], &[4]).unwrap(), vec![2, 3, 4]);
        let e = broadcast_shapes(&[3], &[4]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"
        );
    }

    #[test]
    fn offsets_of_transpose() {
        let l = Layout::contiguous(vec![2, 3]).transpose(0, 1);
        assert_eq!(l.offsets(), vec![0, 3, 1, 4, 2, 5]);
        assert!(!l.is_contiguous());
    }

    #[test]
    fn offsets2_follow_both_layouts() {
        let a = Layout::contiguous(vec![2, 3]);
        let b = Layout::contiguous(vec![3, 2]).transpose(0, 1);
        let mut pairs = vec![];
        a.for_each_offset2(&b, |x, y| pairs.push((x, y)));
        assert_eq!(pairs, vec![(0, 0), (1, 2), (2, 4), (3, 1), (4, 3), (5, 5)]);
    }

    #[test]
    fn view_of_noncontiguous() {
        let l = Layout::contiguous(vec![4, 6]).narrow(1, 0, 3);
        assert!(l.view(&[12]).is_none());
        let v = l.view(&[4, 3, 1]).unwrap();
        assert_eq!(v.strides, vec![6, 1, 1]);
        let t = Layout::contiguous(vec![2, 3, 4]).transpose(1, 2);
        assert!(t.view(&[2, 12]).is_none());
        assert!(t.view(&[2, 4, 3]).is_some());
    }
}
