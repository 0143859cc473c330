//! Index kernels: gather, scatter, scatter_add and index_put over contiguous buffers, the
//! storage offsets advanced indexing reads, nonzero, one_hot, and embedding's gradient scale.
//! Index values are int64, negative ones counted from the end where PyTorch allows it.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{contiguous_strides, Layout};
use crate::storage::{alloc, try_collect, try_filled, Elem};

/// Index `i` of a dim of `size` (negative: from the end), with PyTorch's IndexError.
pub fn wrap_index(i: i64, size: usize, dim: usize) -> Result<usize> {
    let s = size as i64;
    let w = if i < 0 { i + s } else { i };
    if w < 0 || w >= s {
        return Err(Error::Index(format!(
            "index {i} is out of bounds for dimension {dim} with size {size}"
        )));
    }
    Ok(w as usize)
}

/// Every index of `idx` wrapped into a dim of `size` (`wrap_index`), or the first error.
pub fn wrap_indices(idx: &[i64], size: usize, dim: usize) -> Result<Vec<i64>> {
    idx.iter()
        .map(|&i| wrap_index(i, size, dim).map(|w| w as i64))
        .collect()
}

/// Row-major multi-index of flat position `i` in `shape`.
pub fn unravel(mut i: usize, shape: &[usize], out: &mut [usize]) {
    for d in (0..shape.len()).rev() {
        out[d] = i % shape[d].max(1);
        i /= shape[d].max(1);
    }
}

/// `a + b` as accumulating index ops add: wrapping for int64, `or` for bools, in f64 for floats.
#[inline(always)]
pub fn add_elem<T: Elem>(a: T, b: T) -> T {
    match T::DTYPE {
        DType::I64 => T::from_i64(a.to_i64().wrapping_add(b.to_i64())),
        DType::Bool => T::from_bool(a.is_true() || b.is_true()),
        _ => T::from_f64(a.to_f64() + b.to_f64()),
    }
}

/// `gather` along `dim`: for each index position, visited in row-major order by `walk` (the
/// source's offsets over the index's shape, the gathered dim's stride zeroed), the source
/// element `step * idx[k]` further on, `idx[k]` wrapped into `size`. An index out of range is
/// a RuntimeError (PyTorch's gather), raised after the walk.
pub fn gather<T: Copy>(
    src: &[T],
    walk: &Layout,
    idx: &[i64],
    size: usize,
    step: usize,
    dim: usize,
) -> Result<Vec<T>> {
    let mut v: Vec<T> = alloc(idx.len())?;
    let mut bad = None;
    let mut k = 0;
    walk.for_each_offset(|base| {
        match wrap_index(idx[k], size, dim) {
            Ok(i) => v.push(src[base + i * step]),
            Err(e) => {
                bad.get_or_insert(e);
                v.push(src[base]);
            }
        }
        k += 1;
    });
    if let Some(e) = bad {
        return Err(Error::Runtime(e.to_string()));
    }
    Ok(v)
}

/// `scatter_add` along `dim` into `dst` (contiguous, of `dst_shape`; a 0-d one has one element
/// along dim 0): `dst[.., idx[k], ..] += src[k's position]`, for `idx` contiguous of `ishape`
/// and `src` contiguous of `src_shape`. Stops at the first index out of range.
pub fn scatter_add<T: Elem>(
    dst: &mut [T],
    dst_shape: &[usize],
    dim: usize,
    idx: &[i64],
    ishape: &[usize],
    src: &[T],
    src_shape: &[usize],
) -> Result<()> {
    let mut mi = vec![0usize; ishape.len()];
    let ostrides = contiguous_strides(dst_shape);
    let sstrides = contiguous_strides(src_shape);
    let size = dst_shape.get(dim).copied().unwrap_or(1);
    for (k, &ix) in idx.iter().enumerate() {
        unravel(k, ishape, &mut mi);
        let sv = src[mi.iter().zip(&sstrides).map(|(i, s)| i * s).sum::<usize>()];
        mi[dim] = wrap_index(ix, size, dim)?;
        let off: usize = mi.iter().zip(&ostrides).map(|(i, s)| i * s).sum();
        dst[off] = add_elem(dst[off], sv);
    }
    Ok(())
}

/// `scatter` along `dim` into `dst` (contiguous, of `dst_shape`): `dst[.., idx[k], ..] = v` for
/// `idx` contiguous of `ishape`, `v` from `src` (contiguous values and their shape) at k's
/// position, or `number` without one. Indices are not wrapped: a negative or too large one is
/// PyTorch's RuntimeError, and stops the writes.
pub fn scatter<T: Copy>(
    dst: &mut [T],
    dst_shape: &[usize],
    dim: usize,
    idx: &[i64],
    ishape: &[usize],
    src: Option<(&[T], &[usize])>,
    number: T,
) -> Result<()> {
    let ostrides = contiguous_strides(dst_shape);
    let size = dst_shape[dim];
    let src = src.map(|(v, shape)| (v, contiguous_strides(shape)));
    let mut mi = vec![0usize; ishape.len()];
    for (kk, &ix) in idx.iter().enumerate() {
        let mut rem = kk;
        for (p, &s) in ishape.iter().enumerate().rev() {
            mi[p] = rem % s;
            rem /= s;
        }
        let v = match &src {
            Some((v, ss)) => v[mi.iter().zip(ss).map(|(i, s)| i * s).sum::<usize>()],
            None => number,
        };
        if ix < 0 || ix >= size as i64 {
            return Err(Error::Runtime(format!(
                "index {ix} is out of bounds for dimension {dim} with size {size}"
            )));
        }
        mi[dim] = ix as usize;
        let off: usize = mi.iter().zip(&ostrides).map(|(i, s)| i * s).sum();
        dst[off] = v;
    }
    Ok(())
}

/// `index_put`: `dst[offsets[k]] = values[k]`, or `+=` (`add_elem`) with `accumulate`.
pub fn put<T: Elem>(dst: &mut [T], offsets: &[usize], values: &[T], accumulate: bool) {
    for (k, &i) in offsets.iter().enumerate() {
        dst[i] = if accumulate {
            add_elem(dst[i], values[k])
        } else {
            values[k]
        };
    }
}

/// The storage offsets of `l`'s elements in row-major order, allocated fallibly.
pub fn layout_offsets(l: &Layout) -> Result<Vec<usize>> {
    let mut v = alloc::<usize>(l.numel())?;
    l.for_each_offset(|o| v.push(o));
    Ok(v)
}

/// `a[i] + b[j]` for every (i, j), `i` outermost: the offsets of blocks laid out by `b`, one
/// block at each offset of `a`.
pub fn outer_sum(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    try_collect(
        a.len() * b.len(),
        a.iter().flat_map(|&x| b.iter().map(move |&y| x + y)),
    )
}

/// Adds the offset along one indexed dim of advanced indexing to each index position's entry of
/// `offsets`: the index values `vals` read through `at` (their layout broadcast to the
/// positions' shape), wrapped into `size` and times `stride`. The first index out of range is
/// returned after the walk.
pub fn add_index_offsets(
    offsets: &mut [usize],
    vals: &[i64],
    at: &Layout,
    size: usize,
    stride: usize,
    dim: usize,
) -> Result<()> {
    let mut k = 0;
    let mut bad = None;
    at.for_each_offset(|o| {
        match wrap_index(vals[o], size, dim) {
            Ok(i) => offsets[k] += i * stride,
            Err(e) => {
                bad.get_or_insert(e);
            }
        }
        k += 1;
    });
    match bad {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The positions of the non-zero elements of a row-major bool buffer of `shape`: one column of
/// int64 coordinates per dim.
pub fn nonzero_columns(mask: &[u8], shape: &[usize]) -> Result<Vec<Vec<i64>>> {
    let n = shape.len();
    let count = mask.iter().filter(|&&v| v != 0).count();
    let mut cols: Vec<Vec<i64>> = (0..n).map(|_| alloc(count)).collect::<Result<_>>()?;
    let mut mi = vec![0usize; n];
    for (k, &v) in mask.iter().enumerate() {
        if v != 0 {
            unravel(k, shape, &mut mi);
            for d in 0..n {
                cols[d].push(mi[d] as i64);
            }
        }
    }
    Ok(cols)
}

/// `one_hot`: one row of `classes` int64 per index, 1 at the index (each in `0..classes`).
pub fn one_hot(idx: &[i64], classes: usize) -> Result<Vec<i64>> {
    let mut out: Vec<i64> = alloc(idx.len() * classes)?;
    out.resize(idx.len() * classes, 0);
    for (row, &i) in out.chunks_mut(classes).zip(idx) {
        row[i as usize] = 1;
    }
    Ok(out)
}

/// What embedding's backward multiplies each looked-up row's gradient by: 0 at `padding_idx`,
/// else 1, divided with `by_freq` by how often the row's index occurs.
pub fn embedding_grad_scale(
    idx: &[i64],
    padding_idx: Option<i64>,
    by_freq: bool,
) -> Result<Vec<f64>> {
    let mut scale = try_filled(idx.len(), 1.0f64)?;
    if let Some(p) = padding_idx {
        for (s, &i) in scale.iter_mut().zip(idx) {
            if i == p {
                *s = 0.0;
            }
        }
    }
    if by_freq {
        let mut counts = std::collections::HashMap::new();
        for &i in idx {
            *counts.entry(i).or_insert(0usize) += 1;
        }
        for (s, i) in scale.iter_mut().zip(idx) {
            *s /= counts[i] as f64;
        }
    }
    Ok(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_counts_negative_indices_from_the_end() {
        assert_eq!(wrap_index(-1, 4, 0).unwrap(), 3);
        assert_eq!(wrap_index(3, 4, 0).unwrap(), 3);
        let e = wrap_index(4, 4, 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "index 4 is out of bounds for dimension 1 with size 4"
        );
        assert!(wrap_index(-5, 4, 0).is_err());
        assert_eq!(wrap_indices(&[0, -1, 2], 3, 0).unwrap(), vec![0, 2, 2]);
        assert!(wrap_indices(&[0, 3], 3, 0).is_err());
    }

    #[test]
    fn gather_along_each_dim() {
        // x = [[1, 2, 3], [4, 5, 6]] (2 x 3, contiguous)
        let x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        // dim 1, index [[2, 0], [-1, 1]]: walk over the index shape with x's row stride
        let walk = Layout {
            shape: vec![2, 2],
            strides: vec![3, 0],
            offset: 0,
        };
        let v = gather(&x, &walk, &[2, 0, -1, 1], 3, 1, 1).unwrap();
        assert_eq!(v, vec![3.0, 1.0, 6.0, 5.0]);
        // dim 0, index [[1, 0, 1]]
        let walk = Layout {
            shape: vec![1, 3],
            strides: vec![0, 1],
            offset: 0,
        };
        let v = gather(&x, &walk, &[1, 0, 1], 2, 3, 0).unwrap();
        assert_eq!(v, vec![4.0, 2.0, 6.0]);
        // out of range: PyTorch's RuntimeError
        let e = gather(&x, &walk, &[1, 2, 0], 2, 3, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "index 2 is out of bounds for dimension 0 with size 2"
        );
    }

    #[test]
    fn scatter_add_accumulates_repeated_indices() {
        // zeros(2, 3).scatter_add(1, [[0, 0, 2], [1, -1, 1]], src)
        let mut dst = vec![0.0f64; 6];
        let src = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        scatter_add(
            &mut dst,
            &[2, 3],
            1,
            &[0, 0, 2, 1, -1, 1],
            &[2, 3],
            &src,
            &[2, 3],
        )
        .unwrap();
        assert_eq!(dst, vec![3.0, 0.0, 3.0, 0.0, 10.0, 5.0]);
        // along dim 0, an index smaller than src
        let mut dst = vec![1i64; 4];
        scatter_add(
            &mut dst,
            &[2, 2],
            0,
            &[1, 1],
            &[1, 2],
            &[7, 8, 9, 10],
            &[2, 2],
        )
        .unwrap();
        assert_eq!(dst, vec![1, 1, 8, 9]);
        // bools accumulate with `or`
        let mut dst = vec![0u8, 1];
        scatter_add(&mut dst, &[2], 0, &[0, 0], &[2], &[1, 0], &[2]).unwrap();
        assert_eq!(dst, vec![1, 1]);
        assert!(scatter_add(&mut dst, &[2], 0, &[2], &[1], &[1], &[1]).is_err());
    }

    #[test]
    fn scatter_writes_values_or_a_number() {
        // zeros(2, 3).scatter(1, [[2], [0]], src 2 x 2)
        let mut dst = vec![0i64; 6];
        let src = [7i64, 8, 9, 10];
        scatter(
            &mut dst,
            &[2, 3],
            1,
            &[2, 0],
            &[2, 1],
            Some((&src, &[2, 2])),
            0,
        )
        .unwrap();
        assert_eq!(dst, vec![0, 0, 7, 9, 0, 0]);
        // a number along dim 0: index [[1, 0], [1, 1]] writes (1, 0), (0, 1), (1, 0), (1, 1)
        let mut dst = vec![0.0f32; 4];
        scatter(&mut dst, &[2, 2], 0, &[1, 0, 1, 1], &[2, 2], None, 5.0).unwrap();
        assert_eq!(dst, vec![0.0, 5.0, 5.0, 5.0]);
        // negative indices are not wrapped
        let e = scatter(&mut dst, &[2, 2], 0, &[-1], &[1, 1], None, 1.0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "index -1 is out of bounds for dimension 0 with size 2"
        );
    }

    #[test]
    fn put_assigns_or_accumulates() {
        let mut d = vec![1.0f64, 1.0, 1.0];
        put(&mut d, &[2, 0, 2], &[5.0, 6.0, 7.0], false);
        assert_eq!(d, vec![6.0, 1.0, 7.0]);
        put(&mut d, &[2, 0, 2], &[1.0, 1.0, 1.0], true);
        assert_eq!(d, vec![7.0, 1.0, 9.0]);
    }

    #[test]
    fn advanced_index_offsets() {
        // x of shape (3, 4): x[[2, 0]] reads rows 2 and 0 (offsets 8 and 0)
        let mut off = vec![0usize; 2];
        let at = Layout::contiguous(vec![2]);
        add_index_offsets(&mut off, &[2, -3], &at, 3, 4, 0).unwrap();
        assert_eq!(off, vec![8, 0]);
        // then x[:, [1, 3]] on top: a broadcast index
        let at = Layout::contiguous(vec![1]).broadcast_to(&[2]).unwrap();
        add_index_offsets(&mut off, &[3], &at, 4, 1, 1).unwrap();
        assert_eq!(off, vec![11, 3]);
        assert!(
            add_index_offsets(&mut off, &[4, 0], &Layout::contiguous(vec![2]), 4, 1, 1).is_err()
        );
        // blocks laid out at the offsets
        assert_eq!(
            outer_sum(&[0, 10], &[1, 2, 3]).unwrap(),
            vec![1, 2, 3, 11, 12, 13]
        );
        let t = Layout::contiguous(vec![2, 3]).transpose(0, 1);
        assert_eq!(layout_offsets(&t).unwrap(), vec![0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn nonzero_coordinates() {
        let mask = [0u8, 1, 0, 2, 0, 1];
        let cols = nonzero_columns(&mask, &[2, 3]).unwrap();
        assert_eq!(cols, vec![vec![0, 1, 1], vec![1, 0, 2]]);
        assert_eq!(
            nonzero_columns(&[0u8; 4], &[4]).unwrap(),
            vec![Vec::<i64>::new()]
        );
    }

    #[test]
    fn one_hot_rows() {
        assert_eq!(one_hot(&[2, 0], 3).unwrap(), vec![0, 0, 1, 1, 0, 0]);
        assert!(one_hot(&[], 3).unwrap().is_empty());
    }

    #[test]
    fn embedding_scale_zeroes_padding_and_divides_by_frequency() {
        let idx = [1, 2, 1, 0, 1];
        assert_eq!(
            embedding_grad_scale(&idx, None, false).unwrap(),
            vec![1.0; 5]
        );
        assert_eq!(
            embedding_grad_scale(&idx, Some(2), false).unwrap(),
            vec![1.0, 0.0, 1.0, 1.0, 1.0]
        );
        let third = 1.0 / 3.0;
        assert_eq!(
            embedding_grad_scale(&idx, Some(0), true).unwrap(),
            vec![third, 1.0, third, 0.0, third]
        );
    }

    #[test]
    fn add_elem_per_dtype() {
        assert_eq!(add_elem(i64::MAX, 1), i64::MIN);
        assert_eq!(add_elem(1u8, 1u8), 1);
        assert_eq!(add_elem(0.5f32, 0.25), 0.75);
    }
}
