//! Reductions over a contiguous buffer viewed as `(outer, red, inner)`: the reduced axis is the
//! middle one, so a reduction over any single block of adjacent dims needs no copy.

use super::{alloc, par_ok, PAR_THRESHOLD};
use crate::error::Result;
use rayon::prelude::*;

/// Sum of a contiguous run with 8 independent accumulators (vectorises; a single running sum
/// cannot, because float addition is not associative).
pub fn sum_slice<T>(x: &[T]) -> T
where
    T: Copy + Default + std::ops::Add<Output = T>,
{
    let mut acc = [T::default(); 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] = acc[i] + c[i];
        }
    }
    let mut s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for &v in rest {
        s = s + v;
    }
    s
}

/// `out[o, i] = fold(init, data[o, r, i] for r in 0..red)`.
pub fn fold<T, A, F>(
    data: &[T],
    outer: usize,
    red: usize,
    inner: usize,
    init: A,
    f: F,
) -> Result<Vec<A>>
where
    T: Copy + Send + Sync,
    A: Copy + Send + Sync,
    F: Fn(A, T) -> A + Send + Sync,
{
    let mut out = alloc::<A>(outer * inner)?;
    out.resize(outer * inner, init);
    let block = |o: usize, dst: &mut [A]| {
        let base = o * red * inner;
        for r in 0..red {
            let row = &data[base + r * inner..base + (r + 1) * inner];
            for (d, &v) in dst.iter_mut().zip(row) {
                *d = f(*d, v);
            }
        }
    };
    if inner > 0 && par_ok(outer * red * inner, PAR_THRESHOLD) && outer > 1 {
        out.par_chunks_mut(inner)
            .enumerate()
            .for_each(|(o, dst)| block(o, dst));
    } else if inner > 0 {
        out.chunks_mut(inner)
            .enumerate()
            .for_each(|(o, dst)| block(o, dst));
    }
    Ok(out)
}

/// Sum over the middle axis, with the multi-accumulator sum when `inner == 1`.
pub fn sum<T>(data: &[T], outer: usize, red: usize, inner: usize) -> Result<Vec<T>>
where
    T: Copy + Default + Send + Sync + std::ops::Add<Output = T>,
{
    if inner == 1 {
        let mut out = alloc::<T>(outer)?;
        if par_ok(outer * red, PAR_THRESHOLD) && outer > 1 {
            data.par_chunks(red.max(1))
                .take(outer)
                .map(sum_slice)
                .collect_into_vec(&mut out);
            if red == 0 {
                out = crate::storage::try_filled(outer, T::default())?;
            }
        } else if red == 0 {
            out.resize(outer, T::default());
        } else if outer == 1 && par_ok(red, PAR_THRESHOLD) {
            let parts: Vec<T> = data.par_chunks(PAR_THRESHOLD / 4).map(sum_slice).collect();
            out.push(sum_slice(&parts));
        } else {
            out.extend(data.chunks(red).map(sum_slice));
        }
        return Ok(out);
    }
    fold(data, outer, red, inner, T::default(), |a, b| a + b)
}

/// Index and value of the max (or min, with `less`) over the middle axis. NaN wins, and the
/// first occurrence wins ties, as in PyTorch.
pub fn arg_extreme<T>(
    data: &[T],
    outer: usize,
    red: usize,
    inner: usize,
    want_max: bool,
) -> Result<(Vec<T>, Vec<i64>)>
where
    T: Copy + PartialOrd + Send + Sync,
{
    let n = outer * inner;
    let mut vals = alloc::<T>(n)?;
    let mut idxs = alloc::<i64>(n)?;
    for o in 0..outer {
        for i in 0..inner {
            let base = o * red * inner + i;
            let mut best = data[base];
            let mut bi = 0usize;
            #[allow(clippy::eq_op)]
            let is_nan = |v: T| v != v;
            if !is_nan(best) {
                for r in 1..red {
                    let v = data[base + r * inner];
                    if is_nan(v) {
                        best = v;
                        bi = r;
                        break;
                    }
                    let better = if want_max { v > best } else { v < best };
                    if better {
                        best = v;
                        bi = r;
                    }
                }
            }
            vals.push(best);
            idxs.push(bi as i64);
        }
    }
    Ok((vals, idxs))
}

/// Softmax (or log_softmax) of each contiguous row of `len` f32 values: max-shifted, with the
/// vectorised exp; rows in parallel when the tensor is large.
pub fn softmax_rows_f32(src: &[f32], len: usize, log: bool) -> Result<Vec<f32>> {
    use super::simd::{exp_f32, map_into, max_f32};
    let n = src.len();
    let mut out = alloc::<f32>(n)?;
    out.resize(n, 0.0);
    if len == 0 {
        return Ok(out);
    }
    let row = |x: &[f32], o: &mut [f32]| {
        let m = max_f32(x);
        let m = if m == f32::NEG_INFINITY { 0.0 } else { m };
        map_into(x, o, &|v| exp_f32(v - m));
        let sum = sum_slice(o);
        if log {
            let ls = sum.ln() + m;
            map_into(x, o, &|v| v - ls);
        } else {
            let inv = 1.0 / sum;
            o.iter_mut().for_each(|v| *v *= inv);
        }
    };
    if super::par_ok(n, super::PAR_THRESHOLD_COSTLY) {
        let per_task = (4096 / len).max(1);
        out.par_chunks_mut(len)
            .zip(src.par_chunks(len))
            .with_min_len(per_task)
            .for_each(|(o, x)| row(x, o));
    } else {
        out.chunks_mut(len)
            .zip(src.chunks(len))
            .for_each(|(o, x)| row(x, o));
    }
    Ok(out)
}

/// The backward of softmax along contiguous rows of `len`: `y * (g - sum(g * y))`; with `log`,
/// of log_softmax (`y` the log-probabilities): `g - exp(y) * sum(g)`. One pass to sum and one to
/// write per row (PyTorch's `_softmax_backward_data` / `_log_softmax_backward_data`); rows in
/// parallel when the tensor is large.
pub fn softmax_backward_rows<R>(g: &[R], y: &[R], len: usize, log: bool) -> Result<Vec<R>>
where
    R: super::simd::Real + Default,
{
    let n = g.len();
    let mut out = alloc::<R>(n)?;
    out.resize(n, R::default());
    if len == 0 {
        return Ok(out);
    }
    let row = |g: &[R], y: &[R], o: &mut [R]| {
        if log {
            let s = sum_slice(g);
            for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
                *o = g - y.exp() * s;
            }
        } else {
            for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
                *o = g * y;
            }
            let s = sum_slice(o);
            for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
                *o = y * (g - s);
            }
        }
    };
    if super::par_ok(n, super::PAR_THRESHOLD_COSTLY) {
        let per_task = (4096 / len).max(1);
        out.par_chunks_mut(len)
            .zip(g.par_chunks(len).zip(y.par_chunks(len)))
            .with_min_len(per_task)
            .for_each(|(o, (g, y))| row(g, y, o));
    } else {
        out.chunks_mut(len)
            .zip(g.chunks(len).zip(y.chunks(len)))
            .for_each(|(o, (g, y))| row(g, y, o));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_middle_axis() {
        // shape (2, 3, 2), reduce axis 1
        let d: Vec<f64> = (0..12).map(|x| x as f64).collect();
        assert_eq!(sum(&d, 2, 3, 2).unwrap(), vec![6., 9., 24., 27.]);
        assert_eq!(sum(&d, 1, 12, 1).unwrap(), vec![66.]);
    }

    #[test]
    fn sum_large_is_accurate() {
        let n = 1 << 20;
        let d = vec![1.0f32; n];
        assert_eq!(sum(&d, 1, n, 1).unwrap(), vec![n as f32]);
    }

    #[test]
    fn softmax_rows_sum_to_one_across_chunk_boundaries() {
        let len = 1000;
        let rows = 70; // 70_000 elements: several parallel chunks that split rows
        let src: Vec<f32> = (0..rows * len)
            .map(|i| ((i * 37) % 101) as f32 * 0.1 - 5.0)
            .collect();
        let out = softmax_rows_f32(&src, len, false).unwrap();
        for r in 0..rows {
            let s: f32 = out[r * len..(r + 1) * len].iter().sum();
            assert!((s - 1.0).abs() < 1e-4, "row {r}: {s}");
        }
        let lo = softmax_rows_f32(&src, len, true).unwrap();
        assert!((lo[5].exp() - out[5]).abs() < 1e-6);
        let inf = softmax_rows_f32(&[f32::NEG_INFINITY, 0.0], 2, false).unwrap();
        assert_eq!(inf, vec![0.0, 1.0]);
    }

    #[test]
    fn argmax_ties_and_nan() {
        let d = [1.0f32, 3.0, 3.0, 0.0];
        assert_eq!(arg_extreme(&d, 1, 4, 1, true).unwrap().1, vec![1]);
        let d = [1.0f32, f32::NAN, 3.0];
        assert_eq!(arg_extreme(&d, 1, 3, 1, true).unwrap().1, vec![1]);
        assert_eq!(
            arg_extreme(&[2i64, 1, 1], 1, 3, 1, false).unwrap().1,
            vec![1]
        );
    }
}
