//! Scans along one dim (cumprod, logcumsumexp, cummax / cummin, cumprod's backward) of a
//! contiguous buffer seen as `(outer, red, inner)`, and order statistics of rows (kthvalue,
//! median, nanmedian, mode) along the last dim of a contiguous `(rows, n)` buffer.
//!
//! Scans run the `outer` slices in parallel and go across `inner` in the innermost loop (one
//! accumulator per column, so the loop vectorises when the scanned dim is not innermost); along
//! the innermost dim, `GROUP` rows go together so their dependency chains overlap. Each element
//! waits for the previous result (1-5 ns), so scans split across threads from
//! `PAR_THRESHOLD_COSTLY` elements on.
//! Selections copy each row once and select in O(n) (`select_nth_unstable_by`), rows in
//! parallel.

use super::parallel::in_parts;
use super::parallel::{map_each, num_threads, par_ok, PAR_THRESHOLD, PAR_THRESHOLD_COSTLY};
use super::vmath64;
use crate::error::Result;
use crate::storage::{try_vec, Elem};
use std::cmp::Ordering;

#[inline(always)]
#[allow(clippy::eq_op)]
fn is_nan<T: PartialOrd>(v: T) -> bool {
    v != v
}

/// PyTorch's order of two values: NaN after every number, NaNs equal to each other.
#[cfg(test)]
fn nan_last<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    match (is_nan(a), is_nan(b)) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(b).unwrap_or(Ordering::Equal),
    }
}

/// Runs `f(first_row, input_rows, output_rows)` over blocks of whole rows of `row` elements
/// (input and output rows of the same length), in parallel when there are several rows and
/// `n` elements reach `threshold`.
fn per_rows<T: Sync, U: Send>(
    s: &[T],
    out: &mut [U],
    row: usize,
    threshold: usize,
    f: &(dyn Fn(&[T], &mut [U]) + Sync),
) {
    let parallel = par_ok(out.len(), threshold);
    in_parts(out, row, parallel, &|start, o| {
        f(&s[start..start + o.len()], o)
    });
}

#[allow(clippy::type_complexity)]
/// `per_rows` with two outputs of `out_row` elements per input row of `row` elements.
fn per_rows2<T: Sync, U: Send, V: Send>(
    s: &[T],
    row: usize,
    out: (&mut [U], &mut [V]),
    out_row: usize,
    threshold: usize,
    f: &(dyn Fn(&[T], &mut [U], &mut [V]) + Sync),
) {
    let rows = s.len().checked_div(row).unwrap_or(0);
    if rows < 2 || out_row == 0 || !par_ok(s.len(), threshold) {
        f(s, out.0, out.1);
        return;
    }
    let per = rows.div_ceil(num_threads().max(1));
    let parts: Vec<_> = s
        .chunks(per * row)
        .zip(out.0.chunks_mut(per * out_row))
        .zip(out.1.chunks_mut(per * out_row))
        .map(|((a, b), c)| (a, b, c))
        .collect();
    map_each(parts, &|_, (a, b, c)| f(a, b, c));
}

/// Rows scanned together when the scanned dim is innermost: their dependency chains (each
/// element waits for the previous result) interleave, so the core overlaps them.
const GROUP: usize = 8;

/// Columns of a group of rows moved into a tile at a time.
const TILE: usize = 64;

/// Runs a scan along rows of `red` elements (`red` > 0), `GROUP` rows at a time:
/// `step(state, xs, i)` advances the group's state (one lane per row) by the rows' elements
/// `xs` at position `i`, and `put(k, lane, state)` stores lane `lane` of the state as the result
/// of element `k` of `x`. Each group goes through `TILE`-column tiles, so a step reads and
/// writes whole arrays (the compiler vectorises across the lanes) and rows are read and written
/// one after the other (rows whose length is a multiple of 4 KiB would otherwise fight over the
/// same cache sets). A last group of fewer rows leaves its spare lanes unused.
#[inline(always)]
fn scan_rows<T: Copy, S: Copy>(
    x: &[T],
    red: usize,
    init: S,
    step: impl Fn(&mut S, &[T; GROUP], usize),
    mut put: impl FnMut(usize, usize, &S),
) {
    let rows = x.len() / red;
    let Some(&first) = x.first() else { return };
    let mut tin = [[first; GROUP]; TILE];
    let mut tout = [init; TILE];
    for r0 in (0..rows).step_by(GROUP) {
        let lanes = GROUP.min(rows - r0);
        let mut st = init;
        for i0 in (0..red).step_by(TILE) {
            let len = TILE.min(red - i0);
            for g in 0..lanes {
                let src = &x[(r0 + g) * red + i0..][..len];
                for (t, &v) in tin.iter_mut().zip(src) {
                    t[g] = v;
                }
            }
            for (i, (ti, to)) in tin.iter().zip(tout.iter_mut()).take(len).enumerate() {
                step(&mut st, ti, i0 + i);
                *to = st;
            }
            for g in 0..lanes {
                let base = (r0 + g) * red + i0;
                for (i, t) in tout.iter().take(len).enumerate() {
                    put(base + i, g, t);
                }
            }
        }
    }
}

/// The running product along the middle dim of `(outer, red, inner)`: floats accumulate in
/// float64, integers (int64) wrap as PyTorch's.
pub fn cumprod<T: Elem>(s: &[T], red: usize, inner: usize) -> Result<Vec<T>> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = try_vec::<T>(s.len())?;
    let slice = red * inner;
    let inner1 = inner.max(1);
    per_rows(s, &mut out, slice, PAR_THRESHOLD_COSTLY, &|x, o| {
        if inner == 1 {
            if T::DTYPE.is_float() {
                let step = |a: &mut [f64; GROUP], v: &[T; GROUP], _| {
                    a.iter_mut().zip(v).for_each(|(a, v)| *a *= v.to_f64())
                };
                scan_rows(x, red, [1.0f64; GROUP], step, |k, g, a| {
                    o[k] = T::from_f64(a[g])
                });
            } else {
                let step = |a: &mut [i64; GROUP], v: &[T; GROUP], _| {
                    let each = a.iter_mut().zip(v);
                    each.for_each(|(a, v)| *a = a.wrapping_mul(v.to_i64()))
                };
                scan_rows(x, red, [1i64; GROUP], step, |k, g, a| {
                    o[k] = T::from_i64(a[g])
                });
            }
        } else if T::DTYPE.is_float() {
            let mut acc = vec![1.0f64; inner1];
            for (x, o) in x.chunks_exact(slice).zip(o.chunks_exact_mut(slice)) {
                acc.iter_mut().for_each(|a| *a = 1.0);
                for (xr, or) in x.chunks_exact(inner1).zip(o.chunks_exact_mut(inner1)) {
                    for ((a, &v), o) in acc.iter_mut().zip(xr).zip(or.iter_mut()) {
                        *a *= v.to_f64();
                        *o = T::from_f64(*a);
                    }
                }
            }
        } else {
            let mut acc = vec![1i64; inner1];
            for (x, o) in x.chunks_exact(slice).zip(o.chunks_exact_mut(slice)) {
                acc.iter_mut().for_each(|a| *a = 1);
                for (xr, or) in x.chunks_exact(inner1).zip(o.chunks_exact_mut(inner1)) {
                    for ((a, &v), o) in acc.iter_mut().zip(xr).zip(or.iter_mut()) {
                        *a = a.wrapping_mul(v.to_i64());
                        *o = T::from_i64(*a);
                    }
                }
            }
        }
    });
    Ok(out)
}

/// The exact gradient of cumprod along the middle dim of `(outer, red, inner)`, zeros in `x`
/// included, without division: grad_k = prod(x[..k]) * S_k with S_k = g_k + x_{k+1} S_{k+1}
/// (S_k = sum over j >= k of g_j prod(x[k+1..=j])). Float64 accumulation.
#[allow(clippy::needless_range_loop)]
pub fn cumprod_backward<T: Elem>(x: &[T], g: &[T], red: usize, inner: usize) -> Result<Vec<T>> {
    if x.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = try_vec::<T>(x.len())?;
    let slice = red * inner;
    let inner1 = inner.max(1);
    let run = |first: usize, o: &mut [T]| {
        let mut s = vec![0.0f64; inner1];
        let mut p = vec![1.0f64; inner1];
        let mut col = vec![0.0f64; slice];
        let mut next_x = vec![0.0f64; inner1];
        for (sl, o) in o.chunks_exact_mut(slice).enumerate() {
            let base = (first + sl) * slice;
            let (x, g) = (&x[base..base + slice], &g[base..base + slice]);
            // S from the right, kept in `col`
            s.iter_mut().for_each(|a| *a = 0.0);
            next_x.iter_mut().for_each(|a| *a = 0.0);
            for i in (0..red).rev() {
                let k = i * inner1;
                for j in 0..inner1 {
                    s[j] = g[k + j].to_f64() + next_x[j] * s[j];
                    col[k + j] = s[j];
                    next_x[j] = x[k + j].to_f64();
                }
            }
            p.iter_mut().for_each(|a| *a = 1.0);
            for i in 0..red {
                let k = i * inner1;
                for j in 0..inner1 {
                    o[k + j] = T::from_f64(p[j] * col[k + j]);
                    p[j] *= x[k + j].to_f64();
                }
            }
        }
    };
    // `run` takes the index of its first slice
    let parallel = par_ok(x.len(), PAR_THRESHOLD);
    in_parts(&mut out, slice, parallel, &|start, o| run(start / slice, o));
    Ok(out)
}

/// `log(exp(x) + exp(y))` as PyTorch's `_log_add_exp_helper` (`y` the running value).
#[inline]
fn log_add_exp(x: f64, y: f64) -> f64 {
    let (min, max) = if y.is_nan() {
        (y, y)
    } else {
        // std::min / std::max return the first argument when either is NaN
        (if y < x { y } else { x }, if x < y { y } else { x })
    };
    if min != max || min.is_finite() {
        vmath64::log1p_f64(vmath64::exp_f64(min - max)) + max
    } else {
        x
    }
}

/// The running log-sum-exp along the middle dim of `(outer, red, inner)`, in float64.
pub fn logcumsumexp<T: Elem>(s: &[T], red: usize, inner: usize) -> Result<Vec<T>> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = try_vec::<T>(s.len())?;
    let slice = red * inner;
    let inner1 = inner.max(1);
    per_rows(s, &mut out, slice, PAR_THRESHOLD_COSTLY, &|x, o| {
        if inner == 1 {
            let step = |a: &mut [f64; GROUP], v: &[T; GROUP], _| {
                a.iter_mut()
                    .zip(v)
                    .for_each(|(a, v)| *a = log_add_exp(v.to_f64(), *a))
            };
            scan_rows(x, red, [f64::NEG_INFINITY; GROUP], step, |k, g, a| {
                o[k] = T::from_f64(a[g])
            });
            return;
        }
        let mut acc = vec![f64::NEG_INFINITY; inner1];
        for (x, o) in x.chunks_exact(slice).zip(o.chunks_exact_mut(slice)) {
            acc.iter_mut().for_each(|a| *a = f64::NEG_INFINITY);
            for (xr, or) in x.chunks_exact(inner1).zip(o.chunks_exact_mut(inner1)) {
                for ((a, &v), o) in acc.iter_mut().zip(xr).zip(or.iter_mut()) {
                    *a = log_add_exp(v.to_f64(), *a);
                    *o = T::from_f64(*a);
                }
            }
        }
    });
    Ok(out)
}

/// The gradient of logcumsumexp along the middle dim of `(outer, red, inner)` from the input
/// `x`, the result `y` and the output gradient `g`, in one reverse pass (float64):
/// grad_i = exp(x_i - y_i) * Q_i with Q_i = g_i + exp(y_i - y_{i+1}) Q_{i+1}, the sum over
/// j >= i of g_j exp(y_i - y_j). Every factor is at most 1 (`y` never decreases), so nothing
/// overflows.
#[allow(clippy::needless_range_loop)]
pub fn logcumsumexp_backward<T: Elem>(
    x: &[T],
    g: &[T],
    y: &[T],
    red: usize,
    inner: usize,
) -> Result<Vec<T>> {
    if x.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = try_vec::<T>(x.len())?;
    let slice = red * inner;
    let inner1 = inner.max(1);
    let run = |first: usize, o: &mut [T]| {
        let mut q = vec![0.0f64; inner1];
        for (s, o) in o.chunks_exact_mut(slice).enumerate() {
            let base = (first + s) * slice;
            q.iter_mut().for_each(|a| *a = 0.0);
            for i in (0..red).rev() {
                for j in 0..inner1 {
                    let k = i * inner1 + j;
                    let yk = y[base + k].to_f64();
                    let f = if i + 1 == red {
                        0.0
                    } else {
                        let yn = y[base + k + inner1].to_f64();
                        if yk == yn {
                            1.0
                        } else {
                            vmath64::exp_f64(yk - yn)
                        }
                    };
                    q[j] = g[base + k].to_f64() + f * q[j];
                    let xk = x[base + k].to_f64();
                    let w = if xk == f64::NEG_INFINITY {
                        0.0
                    } else {
                        vmath64::exp_f64(xk - yk)
                    };
                    o[k] = T::from_f64(w * q[j]);
                }
            }
        }
    };
    // `run` takes the index of its first slice
    let parallel = par_ok(x.len(), PAR_THRESHOLD_COSTLY);
    in_parts(&mut out, slice, parallel, &|start, o| run(start / slice, o));
    Ok(out)
}

/// The running maximum (`want_max`) or minimum along the middle dim of `(outer, red, inner)`
/// and its index, as PyTorch's `cummax_cummin_helper`: a NaN always wins (so NaN propagates,
/// at the index of the latest NaN), and an element equal to the extreme takes over its index.
#[allow(clippy::needless_range_loop)]
pub fn cum_extreme<T: Elem>(
    s: &[T],
    red: usize,
    inner: usize,
    want_max: bool,
) -> Result<(Vec<T>, Vec<i64>)> {
    if s.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut vals = try_vec::<T>(s.len())?;
    let mut idx = try_vec::<i64>(s.len())?;
    let slice = red * inner;
    let inner1 = inner.max(1);
    per_rows2(
        s,
        slice,
        (&mut vals, &mut idx),
        slice,
        PAR_THRESHOLD_COSTLY,
        &|x, ov, oi| {
            if inner == 1 {
                extreme_rows(x, red, want_max, ov, oi);
                return;
            }
            let mut best = vec![T::default(); inner1];
            let mut at = vec![0i64; inner1];
            let slices = x.chunks_exact(slice).zip(ov.chunks_exact_mut(slice));
            for ((x, ov), oi) in slices.zip(oi.chunks_exact_mut(slice)) {
                best.copy_from_slice(&x[..inner1]);
                at.iter_mut().for_each(|a| *a = 0);
                let rows = x.chunks_exact(inner1).zip(ov.chunks_exact_mut(inner1));
                for (i, ((xr, vr), ir)) in rows.zip(oi.chunks_exact_mut(inner1)).enumerate() {
                    for j in 0..inner1 {
                        let v = xr[j];
                        let better = if want_max { v >= best[j] } else { v <= best[j] };
                        if is_nan(v) || (!is_nan(best[j]) && better) {
                            best[j] = v;
                            at[j] = i as i64;
                        }
                        vr[j] = best[j];
                        ir[j] = at[j];
                    }
                }
            }
        },
    );
    Ok((vals, idx))
}

/// `cum_extreme` along contiguous rows of `red` elements, a row at a time. The extreme changes
/// rarely, so the update is a predicted branch and elements do not wait for each other (a
/// select would chain each compare to the one before). Compiled for the best instruction set
/// the CPU has.
fn extreme_rows<T: Elem>(x: &[T], red: usize, want_max: bool, ov: &mut [T], oi: &mut [i64]) {
    best!(
        extreme_rows_body,
        extreme_rows_avx512,
        extreme_rows_avx2;
        x, red, want_max, ov, oi
    )
}

#[inline(always)]
fn extreme_rows_body<T: Elem>(x: &[T], red: usize, want_max: bool, ov: &mut [T], oi: &mut [i64]) {
    if want_max {
        extreme_rows_of::<T, true>(x, red, ov, oi)
    } else {
        extreme_rows_of::<T, false>(x, red, ov, oi)
    }
}

/// A NaN always wins (so NaN propagates, at the index of the latest NaN), and an element equal
/// to the extreme takes over its index.
#[inline(always)]
fn extreme_rows_of<T: Elem, const MAX: bool>(x: &[T], red: usize, ov: &mut [T], oi: &mut [i64]) {
    let rows = x.chunks_exact(red).zip(ov.chunks_exact_mut(red));
    for ((x, ov), oi) in rows.zip(oi.chunks_exact_mut(red)) {
        let (mut best, mut at) = (x[0], 0i64);
        for (i, ((&v, o), oi)) in x.iter().zip(ov.iter_mut()).zip(oi.iter_mut()).enumerate() {
            let better = if MAX { v >= best } else { v <= best };
            if is_nan(v) || (!is_nan(best) && better) {
                best = v;
                at = i as i64;
            }
            *o = best;
            *oi = at;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use super::*;

    #[target_feature(enable = "avx2,fma")]
    pub fn extreme_rows_avx2<T: Elem>(
        x: &[T],
        red: usize,
        want_max: bool,
        ov: &mut [T],
        oi: &mut [i64],
    ) {
        extreme_rows_body(x, red, want_max, ov, oi)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub fn extreme_rows_avx512<T: Elem>(
        x: &[T],
        red: usize,
        want_max: bool,
        ov: &mut [T],
        oi: &mut [i64],
    ) {
        extreme_rows_body(x, red, want_max, ov, oi)
    }
}

/// Which element of a row an order statistic selects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pick {
    /// The k-th smallest (0-based), NaN after every number.
    Kth(usize),
    /// The lower median; the first NaN if the row has one.
    Median,
    /// The lower median of the numbers; NaN (the middle one) if all are NaN.
    NanMedian,
}

/// The value and index of the element of `row` at sorted position `pick` in the order of
/// (value with NaN last, index): ties go by index, as a stable sort orders them. O(n): one
/// copy of the numbers into `scratch`, `select_nth_unstable_by`, then a pass to find which of
/// the elements equal to the selected value is the one at that position.
fn select_one<T: Elem>(row: &[T], pick: Pick, scratch: &mut Vec<T>) -> (T, i64) {
    let n = row.len();
    scratch.clear();
    scratch.extend(row.iter().copied().filter(|&v| !is_nan(v)));
    let good = scratch.len();
    let r = match pick {
        Pick::Kth(k) => k,
        Pick::Median if good < n => good,
        Pick::Median => (n - 1) / 2,
        Pick::NanMedian if good > 0 => (good - 1) / 2,
        Pick::NanMedian => (n - 1) / 2,
    };
    if r >= good {
        // the (r - good)-th NaN in index order
        let i = row
            .iter()
            .enumerate()
            .filter(|p| is_nan(*p.1))
            .nth(r - good)
            .map_or(0, |p| p.0);
        return (row[i], i as i64);
    }
    let (lower, &mut v, _) =
        scratch.select_nth_unstable_by(r, |a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal));
    let less = lower.iter().filter(|&&u| u < v).count();
    // the (r - less)-th element equal to v, in index order
    let i = row
        .iter()
        .enumerate()
        .filter(|p| *p.1 == v)
        .nth(r - less)
        .map_or(0, |p| p.0);
    (row[i], i as i64)
}

/// The order statistic `pick` of each row of a contiguous `(rows, n)` buffer (`n` > 0): its
/// value and index in the row.
pub fn select_rows<T: Elem>(s: &[T], n: usize, pick: Pick) -> Result<(Vec<T>, Vec<i64>)> {
    each_row(s, n, |row: &[T], scratch: &mut Vec<T>| {
        select_one(row, pick, scratch)
    })
}

/// `one(row, scratch)` (a value and an index) for each row of a contiguous `(rows, n)` buffer,
/// rows in parallel; `scratch` is one buffer per thread.
fn each_row<T: Elem, S, F>(s: &[T], n: usize, one: F) -> Result<(Vec<T>, Vec<i64>)>
where
    F: Fn(&[T], &mut Vec<S>) -> (T, i64) + Sync,
{
    let rows = s.len().checked_div(n).unwrap_or(0);
    let mut vals = try_vec::<T>(rows)?;
    let mut idx = try_vec::<i64>(rows)?;
    per_rows2(
        s,
        n,
        (&mut vals, &mut idx),
        1,
        PAR_THRESHOLD_COSTLY,
        &|x, ov, oi| {
            let mut scratch = Vec::with_capacity(n);
            for ((row, v), i) in x.chunks_exact(n).zip(ov.iter_mut()).zip(oi.iter_mut()) {
                (*v, *i) = one(row, &mut scratch);
            }
        },
    );
    Ok((vals, idx))
}

/// A key whose unsigned order is the order of the numbers: the float64 bits with the sign
/// bit flipped (all bits of negatives), -0.0 as 0.0; int64 with the sign bit flipped.
#[inline(always)]
fn order_key<T: Elem>(v: T) -> u64 {
    if T::DTYPE.is_float() {
        let f = v.to_f64();
        let b = if f == 0.0 { 0 } else { f.to_bits() };
        if b >> 63 == 1 {
            !b
        } else {
            b | (1 << 63)
        }
    } else {
        (v.to_i64() as u64) ^ (1 << 63)
    }
}

/// The most frequent value of `row` (the smallest of the most frequent ones; NaN equals
/// nothing) and its last index (the first NaN's index when the row holds only NaN). Sorts the
/// numbers' order keys.
fn mode_one<T: Elem>(row: &[T], keys: &mut Vec<u64>) -> (T, i64) {
    keys.clear();
    keys.extend(row.iter().filter(|&&v| !is_nan(v)).map(|&v| order_key(v)));
    if keys.is_empty() {
        return (row[0], 0);
    }
    keys.sort_unstable();
    let (mut best, mut best_len, mut start) = (keys[0], 0, 0);
    for i in 0..keys.len() {
        if i + 1 == keys.len() || keys[i + 1] != keys[i] {
            if i + 1 - start > best_len {
                best_len = i + 1 - start;
                best = keys[i];
            }
            start = i + 1;
        }
    }
    let i = row
        .iter()
        .rposition(|&v| !is_nan(v) && order_key(v) == best)
        .unwrap_or(0);
    (row[i], i as i64)
}

/// The mode of each row of a contiguous `(rows, n)` buffer (`n` > 0): value and index.
pub fn mode_rows<T: Elem>(s: &[T], n: usize) -> Result<(Vec<T>, Vec<i64>)> {
    each_row(s, n, mode_one)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAN: f64 = f64::NAN;

    fn same(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
    }

    #[test]
    fn cumprod_along_the_middle_dim_and_of_integers() {
        // (2, 3, 2), products over the middle axis
        let d: Vec<f64> = (1..=12).map(|x| x as f64).collect();
        let r = cumprod(&d, 3, 2).unwrap();
        assert_eq!(
            r,
            vec![1., 2., 3., 8., 15., 48., 7., 8., 63., 80., 693., 960.]
        );
        let i: Vec<i64> = vec![i64::MAX, 2, 3];
        assert_eq!(cumprod(&i, 3, 1).unwrap(), vec![i64::MAX, -2, -6]);
    }

    #[test]
    fn grouped_rows_match_one_row_at_a_time() {
        // 19 rows of 150: two groups of 8 through tiles of 64, 86 and 22 columns, then 3 rows
        let (rows, n) = (19, 150);
        let x: Vec<f64> = (0..rows * n)
            .map(|i| 1.0 + ((i * 37) % 11) as f64 / 100.0)
            .collect();
        let got = cumprod(&x, n, 1).unwrap();
        let t: Vec<f64> = (0..rows * n).map(|i| ((i * 13) % 7) as f64).collect();
        let (mv, mi) = cum_extreme(&t, n, 1, true).unwrap();
        for r in 0..rows {
            let (mut p, mut best, mut at) = (1.0, f64::NEG_INFINITY, 0);
            for i in 0..n {
                let k = r * n + i;
                p *= x[k];
                assert_eq!(got[k], p);
                if t[k] >= best {
                    (best, at) = (t[k], i as i64);
                }
                assert_eq!((mv[k], mi[k]), (best, at));
            }
        }
    }

    #[test]
    fn cumprod_backward_is_exact_with_zeros() {
        let x = [2.0, 0.0, 3.0, 0.0, 5.0];
        let g = [1.0, 1.0, 1.0, 1.0, 1.0];
        // the sum of the running products: d/dx_k of 2 + 2x1 + 2x1x2 + ... at x
        let want = [1.0, 2.0 + 6.0, 0.0, 0.0, 0.0];
        assert_eq!(cumprod_backward(&x, &g, 5, 1).unwrap(), want);
        // one zero: its gradient is the product of the others' prefixes
        let x = [2.0, 0.0, 3.0];
        assert_eq!(
            cumprod_backward(&x, &g[..3], 3, 1).unwrap(),
            [1.0, 2.0 + 6.0, 0.0]
        );
    }

    #[test]
    fn logcumsumexp_is_stable_and_keeps_infinities() {
        let x = [1000.0, 1000.0, f64::NEG_INFINITY, NAN, 0.0];
        let r = logcumsumexp(&x, 5, 1).unwrap();
        assert!((r[1] - (1000.0 + 2f64.ln())).abs() < 1e-12);
        assert_eq!(r[2], r[1]);
        assert!(r[3].is_nan() && r[4].is_nan());
        let inf = [f64::INFINITY, 1.0, f64::NEG_INFINITY];
        assert_eq!(
            logcumsumexp(&inf, 3, 1).unwrap(),
            [f64::INFINITY; 3].to_vec()
        );
        let ninf = [f64::NEG_INFINITY, f64::NEG_INFINITY];
        assert_eq!(logcumsumexp(&ninf, 2, 1).unwrap(), ninf.to_vec());
    }

    #[test]
    fn logcumsumexp_backward_is_the_softmax_weighted_sum() {
        // (2, 3) along the last dim, and the same as (3, 2) columns
        let x = [0.5, -1.0, 2.0, 1000.0, f64::NEG_INFINITY, 999.0];
        let g = [1.0, -2.0, 0.5, 0.25, 1.0, -1.0];
        let y = logcumsumexp(&x, 3, 1).unwrap();
        let got = logcumsumexp_backward(&x, &g, &y, 3, 1).unwrap();
        for r in 0..2 {
            for i in 0..3 {
                let want: f64 = (i..3)
                    .map(|j| g[r * 3 + j] * (x[r * 3 + i] - y[r * 3 + j]).exp())
                    .sum();
                assert!((got[r * 3 + i] - want).abs() < 1e-12, "{r} {i}");
            }
        }
        let t = |v: &[f64]| vec![v[0], v[3], v[1], v[4], v[2], v[5]];
        let cols = logcumsumexp_backward(&t(&x), &t(&g), &t(&y), 3, 2).unwrap();
        assert_eq!(cols, t(&got));
    }

    #[test]
    fn cummax_takes_the_latest_equal_index_and_nan_wins() {
        let x = [1.0, 3.0, 3.0, 2.0, 3.0, NAN, 9.0, NAN, 1.0];
        let (v, i) = cum_extreme(&x, 9, 1, true).unwrap();
        assert!(same(&v, &[1., 3., 3., 3., 3., NAN, NAN, NAN, NAN]));
        assert_eq!(i, vec![0, 1, 2, 2, 4, 5, 5, 7, 7]);
        // columns of (3, 2): cummin down each
        let x = [2.0, 1.0, 1.0, 5.0, 2.0, 0.0];
        let (v, i) = cum_extreme(&x, 3, 2, false).unwrap();
        assert_eq!(v, vec![2., 1., 1., 1., 1., 0.]);
        assert_eq!(i, vec![0, 0, 1, 0, 1, 2]);
    }

    #[test]
    fn selection_orders_ties_by_index_and_nan_last() {
        let row = [3.0, 1.0, 2.0, 1.0, NAN, 2.0];
        let (v, i) = select_rows(&row, 6, Pick::Kth(1)).unwrap();
        assert_eq!((v[0], i[0]), (1.0, 3));
        let (v, i) = select_rows(&row, 6, Pick::Kth(3)).unwrap();
        assert_eq!((v[0], i[0]), (2.0, 5));
        let (v, i) = select_rows(&row, 6, Pick::Kth(5)).unwrap();
        assert!(v[0].is_nan() && i[0] == 4);
        // median: the first NaN; nanmedian: the lower median of the numbers
        let (v, i) = select_rows(&row, 6, Pick::Median).unwrap();
        assert!(v[0].is_nan() && i[0] == 4);
        let (v, i) = select_rows(&row, 6, Pick::NanMedian).unwrap();
        assert_eq!((v[0], i[0]), (2.0, 2));
        let nans = [NAN, NAN, NAN];
        let (_, i) = select_rows(&nans, 3, Pick::NanMedian).unwrap();
        assert_eq!(i[0], 1);
        // two rows, integers
        let ints: Vec<i64> = vec![5, 1, 5, 9, 9, 9];
        assert_eq!(
            select_rows(&ints, 3, Pick::Median).unwrap(),
            (vec![5, 9], vec![0, 1])
        );
    }

    #[test]
    fn selection_of_many_rows_matches_a_sort() {
        let n = 97;
        let rows = 2000; // above the parallel threshold
        let data: Vec<f64> = (0..rows * n).map(|i| ((i * 7919) % 31) as f64).collect();
        let (v, i) = select_rows(&data, n, Pick::Kth(40)).unwrap();
        for r in 0..rows {
            let row = &data[r * n..(r + 1) * n];
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&a, &b| nan_last(&row[a], &row[b]));
            assert_eq!((v[r], i[r]), (row[order[40]], order[40] as i64));
        }
    }

    #[test]
    fn mode_is_the_smallest_most_frequent_at_its_last_index() {
        let x = [1.0, 2.0, 2.0, 1.0, 3.0, 5.0, 5.0, 1.0, 1.0, 1.0];
        assert_eq!(mode_rows(&x, 5).unwrap(), (vec![1.0, 1.0], vec![3, 4]));
        let x = [0.0, NAN, NAN, 1.0];
        assert_eq!(mode_rows(&x, 4).unwrap(), (vec![0.0], vec![0]));
        assert_eq!(
            mode_rows(&[-0.0, 0.0, 1.0], 3).unwrap(),
            (vec![0.0], vec![1])
        );
        let (v, i) = mode_rows(&[NAN, NAN], 2).unwrap();
        assert!(v[0].is_nan() && i[0] == 0);
        let b: Vec<u8> = vec![1, 0, 1];
        assert_eq!(mode_rows(&b, 3).unwrap(), (vec![1], vec![2]));
        let i: Vec<i64> = vec![i64::MIN, 7, -3, 7, i64::MIN, -3, -3];
        assert_eq!(mode_rows(&i, 7).unwrap(), (vec![-3], vec![6]));
    }
}
