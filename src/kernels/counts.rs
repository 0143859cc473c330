//! Search, counting and scatter kernels: searchsorted / bucketize, bincount, histc, nonzero,
//! unique_consecutive, max_unpool, pdist (and its backward), multilabel_margin_loss.
//!
//! Each splits its elements, rows or planes across threads above the crate's thresholds
//! (`par_ok`), with no allocation per element; the ones that count (bincount, histc) give
//! each thread a private histogram and add them up at the end.

use super::parallel::{for_each_block, map_blocks, map_each, num_threads, SharedOut};
use super::simd::Real;
use super::{alloc, build_with, par_ok, PAR_THRESHOLD, PAR_THRESHOLD_COSTLY};
use crate::error::{Error, Result};
use crate::storage::{try_filled, Elem};

/// `0..n` cut into one range per thread when `work` is worth splitting, else one range.
fn ranges(n: usize, work: usize, threshold: usize) -> Vec<std::ops::Range<usize>> {
    let parts = if par_ok(work, threshold) {
        num_threads().clamp(1, n.max(1))
    } else {
        1
    };
    let per = n.div_ceil(parts).max(1);
    (0..parts)
        .map(|i| (i * per).min(n)..((i + 1) * per).min(n))
        .filter(|r| !r.is_empty() || n == 0)
        .collect()
}

// ---------------------------------------------------------------- searchsorted

/// Where the row `seq` (read through `sorter` when given) would take `v`: the first position
/// whose element is not `< v` (`<= v` with `right`), with PyTorch's comparisons written as
/// `!(mid >= v)`, so a NaN value goes after everything and the search steps over a NaN
/// boundary as if it were smaller.
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // the negations are PyTorch's NaN semantics
fn bound<T: Elem>(seq: &[T], sorter: Option<&[i64]>, v: T, right: bool) -> usize {
    let (mut lo, mut hi) = (0usize, seq.len());
    while lo < hi {
        let mid = lo + ((hi - lo) >> 1);
        let m = match sorter {
            Some(s) => seq[s[mid] as usize],
            None => seq[mid],
        };
        let before = if right { !(m > v) } else { !(m >= v) };
        if before {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `searchsorted`: for each of `vals` (rows of `inner` values, or all against one row when
/// `seq` is one row of `m`), its insertion position in its row of `seq` (rows of `m`, each
/// sorted, or ordered by the matching row of `sorter`), as `O` (int64 or int32).
pub fn searchsorted<T: Elem, O: Elem>(
    seq: &[T],
    sorter: Option<&[i64]>,
    m: usize,
    vals: &[T],
    inner: usize,
    right: bool,
) -> Result<Vec<O>> {
    let one_row = seq.len() == m;
    build_with(vals.len(), PAR_THRESHOLD_COSTLY, |start, out| {
        for (k, o) in out.iter_mut().enumerate() {
            let i = start + k;
            let r = if one_row { 0 } else { i / inner.max(1) };
            let row = &seq[r * m..(r + 1) * m];
            let srow = sorter.map(|s| &s[r * m..(r + 1) * m]);
            o.write(O::from_i64(bound(row, srow, vals[i], right) as i64));
        }
        out.len()
    })
}

/// Whether every index of `sorter` (rows of `m`) is in `0..m`.
pub fn sorter_in_range(sorter: &[i64], m: usize) -> bool {
    // one unsigned comparison per index (a negative one wraps above m)
    sorter.iter().all(|&s| (s as u64) < m as u64)
}

// ---------------------------------------------------------------- bincount / histc

/// Sums `value(i)` into bin `bin(i)` (or skips `i` when `bin(i)` is `None`) over `0..n`, into
/// `bins` bins: one private histogram per thread above the threshold, added up at the end.
fn histogram<A, B, V>(n: usize, bins: usize, bin: B, value: V) -> Result<Vec<A>>
where
    A: Copy + Default + Send + std::ops::AddAssign,
    B: Fn(usize) -> Option<usize> + Sync,
    V: Fn(usize) -> A + Sync,
{
    let count = |r: std::ops::Range<usize>| -> Result<Vec<A>> {
        let mut h = try_filled(bins, A::default())?;
        for i in r {
            if let Some(b) = bin(i) {
                h[b] += value(i);
            }
        }
        Ok(h)
    };
    // a private histogram per thread only pays when the input is much larger than the bins
    let parts = if bins.saturating_mul(8) <= n {
        ranges(n, n, PAR_THRESHOLD)
    } else {
        std::iter::once(0..n).collect()
    };
    if parts.len() <= 1 {
        return count(0..n);
    }
    let mut hs = map_each(parts, &|_, r| count(r)).into_iter();
    let mut total = hs.next().expect("one part at least")?;
    for h in hs {
        for (t, v) in total.iter_mut().zip(h?) {
            *t += v;
        }
    }
    Ok(total)
}

/// The smallest and largest of `idx` (`(0, -1)` when empty).
pub fn min_max_i64(idx: &[i64]) -> (i64, i64) {
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for &v in idx {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if idx.is_empty() {
        (0, -1)
    } else {
        (lo, hi)
    }
}

/// `bincount`: the number of occurrences of each value of `idx` (all in `0..bins`).
pub fn bincount(idx: &[i64], bins: usize) -> Result<Vec<i64>> {
    histogram(idx.len(), bins, |i| Some(idx[i] as usize), |_| 1i64)
}

/// `bincount` with weights: the sum of `w[i]` at each value `idx[i]` (all in `0..bins`).
pub fn bincount_weighted<W>(idx: &[i64], w: &[W], bins: usize) -> Result<Vec<W>>
where
    W: Copy + Default + Send + Sync + std::ops::AddAssign,
{
    histogram(idx.len(), bins, |i| Some(idx[i] as usize), |i| w[i])
}

/// `histc`: counts of `x` in `bins` equal bins over `[lo, hi]` (elements outside, and NaNs,
/// are skipped; `hi` falls in the last bin), with PyTorch's bin position
/// `trunc((x - lo) * bins / (hi - lo))` computed in `T`.
pub fn histc<T: Real + Elem>(x: &[T], bins: usize, lo: T, hi: T) -> Result<Vec<T>> {
    let (nb, width) = (T::of(bins as f64), hi - lo);
    let counts: Vec<i64> = histogram(
        x.len(),
        bins,
        |i| {
            let v = x[i];
            if v >= lo && v <= hi {
                let pos = ((v - lo) * nb / width).to_f64() as usize;
                Some(pos.min(bins - 1))
            } else {
                None
            }
        },
        |_| 1i64,
    )?;
    Ok(counts.into_iter().map(|c| T::of(c as f64)).collect())
}

// ---------------------------------------------------------------- nonzero

/// How the coordinates of `nonzero` are laid out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Coords {
    /// (count, ndim) row-major: `nonzero(x)`.
    Rows,
    /// ndim columns of count one after the other: `nonzero(x, as_tuple=True)`.
    Columns,
}

/// The coordinates of the non-zero elements of the row-major `x` of `shape`: a parallel pass
/// counting each block's non-zeros, then a parallel pass writing each block's coordinates at
/// its offset (stepping a multi-index through the block instead of dividing per element).
/// Returns the coordinates and the count.
pub fn nonzero<T: Elem>(x: &[T], shape: &[usize], layout: Coords) -> Result<(Vec<i64>, usize)> {
    let nd = shape.len();
    let blocks = ranges(x.len(), x.len(), PAR_THRESHOLD);
    let count_block =
        |r: &std::ops::Range<usize>| x[r.clone()].iter().filter(|v| v.is_true()).count();
    let counts: Vec<usize> = if blocks.len() > 1 {
        map_each(blocks.clone(), &|_, r| count_block(&r))
    } else {
        blocks.iter().map(count_block).collect()
    };
    let total: usize = counts.iter().sum();
    let mut out: Vec<i64> = alloc(total * nd)?;
    out.resize(total * nd, 0);
    let mut offsets = Vec::with_capacity(blocks.len());
    let mut acc = 0usize;
    for c in &counts {
        offsets.push(acc);
        acc += c;
    }
    let shared = SharedOut::new(&mut out);
    let write = |b: usize, r: std::ops::Range<usize>| {
        if counts[b] == 0 || nd == 0 {
            return;
        }
        // the multi-index of r.start
        let mut mi = vec![0usize; nd];
        let mut rest = r.start;
        for d in (0..nd).rev() {
            mi[d] = rest % shape[d];
            rest /= shape[d];
        }
        let mut k = offsets[b];
        let end_k = k + counts[b];
        for i in r {
            if x[i].is_true() {
                for (d, &c) in mi.iter().enumerate() {
                    let at = match layout {
                        Coords::Rows => k * nd + d,
                        Coords::Columns => d * total + k,
                    };
                    debug_assert!(k < end_k);
                    // SAFETY: block b writes only the coordinates of its own non-zeros, the
                    // indices offsets[b]..offsets[b] + counts[b] (k stays below end_k as the
                    // count pass counted exactly these elements), which no other block
                    // writes; `at` is below total * nd, the buffer's length, which outlives
                    // this call.
                    unsafe { *shared.ptr().add(at) = c as i64 };
                }
                k += 1;
            }
            // step the multi-index
            let mut d = nd;
            while d > 0 {
                d -= 1;
                mi[d] += 1;
                if mi[d] < shape[d] {
                    break;
                }
                mi[d] = 0;
            }
        }
    };
    if blocks.len() > 1 {
        map_each(blocks, &|b, r| write(b, r));
    } else if let Some(r) = blocks.into_iter().next() {
        write(0, r);
    }
    Ok((out, total))
}

// ---------------------------------------------------------------- unique_consecutive

/// `unique(dim=)` / `unique_consecutive(dim=)` of the rows of a contiguous `(rows, len)` buffer:
/// the row each distinct slice is taken from (in the result's order), each row's slice number
/// and each slice's count. The distinct rows are sorted lexicographically (a stable sort, so a
/// group is represented by its first row in index order) unless `consecutive`, where each run
/// of equal rows is one slice. Rows are equal when their elements are (a NaN equals nothing).
pub fn unique_rows<T: Elem>(
    x: &[T],
    len: usize,
    consecutive: bool,
) -> Result<(Vec<i64>, Vec<i64>, Vec<i64>)> {
    let rows = x.len().checked_div(len).unwrap_or(0);
    let row = |i: usize| &x[i * len..(i + 1) * len];
    let mut order = alloc::<usize>(rows)?;
    order.extend(0..rows);
    if !consecutive {
        // the first differing element decides; NaN against anything decides nothing
        order.sort_by(|&a, &b| {
            let pair = row(a).iter().zip(row(b));
            pair.map(|(u, v)| u.partial_cmp(v).unwrap_or(std::cmp::Ordering::Equal))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    let (mut firsts, mut counts) = (Vec::new(), Vec::new());
    let mut inverse = try_filled(rows, 0i64)?;
    for (k, &i) in order.iter().enumerate() {
        if k == 0 || row(order[k - 1]) != row(i) {
            firsts.push(i as i64);
            counts.push(0i64);
        }
        if let Some(c) = counts.last_mut() {
            *c += 1;
        }
        inverse[i] = firsts.len() as i64 - 1;
    }
    Ok((firsts, inverse, counts))
}

/// The outputs of `unique_consecutive`: the first value of each run, and when asked each
/// element's run number and the runs' lengths.
pub type Runs<T> = (Vec<T>, Option<Vec<i64>>, Option<Vec<i64>>);

/// `unique_consecutive` of the flat `x` (NaN equals nothing): a parallel pass counting the
/// runs starting in each block, then a parallel pass writing each block's run values (and
/// start positions, for the counts; and each element's run number) at its offset.
pub fn unique_consecutive<T: Elem>(x: &[T], inverse: bool, counts: bool) -> Result<Runs<T>> {
    let n = x.len();
    let blocks = ranges(n, n, PAR_THRESHOLD);
    let starts_in = |r: &std::ops::Range<usize>| -> usize {
        let first = usize::from(r.start == 0 && !r.is_empty());
        let from = r.start.max(1);
        first
            + (from..r.end)
                .map(|i| usize::from(x[i - 1] != x[i]))
                .sum::<usize>()
    };
    let per: Vec<usize> = if blocks.len() > 1 {
        map_each(blocks.clone(), &|_, r| starts_in(&r))
    } else {
        blocks.iter().map(starts_in).collect()
    };
    let runs: usize = per.iter().sum();
    let mut offsets = Vec::with_capacity(per.len());
    let mut acc = 0usize;
    for c in &per {
        offsets.push(acc);
        acc += c;
    }
    // each block has a scratch slot after the runs, where its non-starting elements write, so
    // the loop has no unpredictable branch
    let slots = runs + per.len();
    let mut values: Vec<T> = try_filled(slots, T::default())?;
    let mut inv: Vec<i64> = if inverse {
        try_filled(n, 0i64)?
    } else {
        Vec::new()
    };
    let mut starts: Vec<i64> = if counts {
        try_filled(slots, 0i64)?
    } else {
        Vec::new()
    };
    let (vo, io, so) = (
        SharedOut::new(&mut values),
        SharedOut::new(&mut inv),
        SharedOut::new(&mut starts),
    );
    let write = |b: usize, r: std::ops::Range<usize>| {
        let scratch = runs + b;
        // the run number before this block's first element
        let mut run = offsets[b] as i64 - 1;
        for i in r {
            let start = i == 0 || x[i - 1] != x[i];
            run += i64::from(start);
            let slot = if start { run as usize } else { scratch };
            // SAFETY: block b writes the runs starting in it, offsets[b]..offsets[b] + per[b]
            // (as the count pass counted), its own scratch slot runs + b, and its own range
            // of `inv`: disjoint from every other block's, within the buffers' lengths
            // (slots, n), which outlive this call.
            unsafe {
                *vo.ptr().add(slot) = x[i];
                if counts {
                    *so.ptr().add(slot) = i as i64;
                }
                if inverse {
                    *io.ptr().add(i) = run;
                }
            }
        }
    };
    if blocks.len() > 1 {
        map_each(blocks, &|b, r| write(b, r));
    } else if let Some(r) = blocks.into_iter().next() {
        write(0, r);
    }
    values.truncate(runs);
    starts.truncate(runs);
    let cnt = counts.then(|| {
        (0..runs)
            .map(|k| starts.get(k + 1).copied().unwrap_or(n as i64) - starts[k])
            .collect()
    });
    Ok((values, inverse.then_some(inv), cnt))
}

// ---------------------------------------------------------------- max_unpool

/// `max_unpool`: for each plane of `inp` values (with their flat `idx` in an output plane of
/// `outp`), a zero plane with each value written at its index (the last write wins, as
/// PyTorch's CPU kernel). An index outside `0..outp` is `Err(index)`: the first such in order.
pub fn max_unpool<T: Elem>(
    x: &[T],
    idx: &[i64],
    inp: usize,
    outp: usize,
) -> std::result::Result<Vec<T>, Result<i64>> {
    let planes = x.len().checked_div(inp).unwrap_or(0);
    // zeroed by the allocator: a huge output_size touches only the pages the values land on
    let mut out = crate::storage::try_vec::<T>(planes * outp).map_err(Err)?;
    let fill = |p0: usize, chunk: &mut [T]| -> Option<i64> {
        for (k, plane) in chunk.chunks_mut(outp.max(1)).enumerate() {
            let p = p0 + k;
            let (xs, is) = (&x[p * inp..(p + 1) * inp], &idx[p * inp..(p + 1) * inp]);
            for (&v, &i) in xs.iter().zip(is) {
                if i < 0 || i as usize >= outp {
                    return Some(i);
                }
                plane[i as usize] = v;
            }
        }
        None
    };
    let bad = if outp > 0 && planes > 1 && par_ok(planes * (inp + outp), PAR_THRESHOLD) {
        map_blocks(&mut out, outp, &fill)
            .into_iter()
            .flatten()
            .next()
    } else if outp > 0 {
        fill(0, &mut out)
    } else {
        idx.first().copied()
    };
    match bad {
        Some(i) => Err(Ok(i)),
        None => Ok(out),
    }
}

// ---------------------------------------------------------------- pdist

/// The norm kind of pdist's `p`.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Norm {
    Zero,
    One,
    Two,
    Inf,
    P(f64),
}

impl Norm {
    pub fn of(p: f64) -> Norm {
        if p == 0.0 {
            Norm::Zero
        } else if p == 1.0 {
            Norm::One
        } else if p == 2.0 {
            Norm::Two
        } else if p.is_infinite() {
            Norm::Inf
        } else {
            Norm::P(p)
        }
    }
}

#[inline(always)]
fn abs<T: Real>(v: T) -> T {
    if v < T::c(0.0) {
        -v
    } else {
        v
    }
}

/// Folds `term(a[k], b[k])` over two rows into `comb` with 16 independent accumulators, so
/// the loop vectorises.
#[inline(always)]
fn fold_rows<T: Real>(
    a: &[T],
    b: &[T],
    init: T,
    term: impl Fn(T, T) -> T,
    comb: impl Fn(T, T) -> T,
) -> T {
    const L: usize = 16;
    let mut acc = [init; L];
    let (ac, bc) = (a.chunks_exact(L), b.chunks_exact(L));
    let (ar, br) = (ac.remainder(), bc.remainder());
    for (x, y) in ac.zip(bc) {
        for l in 0..L {
            acc[l] = comb(acc[l], term(x[l], y[l]));
        }
    }
    let mut s = init;
    for &v in &acc {
        s = comb(s, v);
    }
    for (&x, &y) in ar.iter().zip(br) {
        s = comb(s, term(x, y));
    }
    s
}

/// The max of the inf-norm, NaN winning.
#[inline(always)]
fn max_nan<T: Real>(s: T, t: T) -> T {
    if t > s || t.is_nan() {
        t
    } else {
        s
    }
}

/// One pair's partial reduction over a block of features: the sum of the norm's terms (the
/// max of |a - b| for inf), one loop per norm.
#[inline]
fn partial<T: Real>(a: &[T], b: &[T], norm: Norm) -> T {
    let zero = T::c(0.0);
    let add = |s: T, t: T| s + t;
    match norm {
        Norm::Zero => fold_rows(
            a,
            b,
            zero,
            |x, y| if x != y { T::c(1.0) } else { zero },
            add,
        ),
        Norm::One => fold_rows(a, b, zero, |x, y| abs(x - y), add),
        Norm::Two => fold_rows(
            a,
            b,
            zero,
            |x, y| {
                let d = x - y;
                d * d
            },
            add,
        ),
        Norm::Inf => fold_rows(a, b, zero, |x, y| abs(x - y), max_nan),
        Norm::P(p) => {
            let e = T::of(p);
            fold_rows(a, b, zero, |x, y| abs(x - y).powf(e), add)
        }
    }
}

/// Features per block in pdist's loops: the block of all `n` rows stays in a core's L2
/// (256 KB) while every pair reads it, instead of streaming two whole rows per pair.
fn feature_block<T>(n: usize) -> usize {
    ((256usize << 10) / std::mem::size_of::<T>() / n.max(1)).max(64) / 16 * 16
}

/// The pair (i, j), i < j, at position `k` of pdist's row-major upper triangle of `n` rows.
fn pair_of(k: usize, n: usize) -> (usize, usize) {
    let (mut i, mut first) = (0usize, 0usize);
    while first + (n - 1 - i) <= k {
        first += n - 1 - i;
        i += 1;
    }
    (i, i + 1 + (k - first))
}

/// `pdist`: the `p`-distances between the `n` rows of `m` of `x`, pair by pair (i < j, row
/// major): each thread takes a range of pairs and sweeps the features block by block.
pub fn pdist<T: Real + Elem>(x: &[T], n: usize, m: usize, p: f64) -> Result<Vec<T>> {
    let pairs = n * n.saturating_sub(1) / 2;
    let norm = Norm::of(p);
    let fb = feature_block::<T>(n);
    let mut out: Vec<T> = try_filled(pairs, T::c(0.0))?;
    let fill = |start: usize, chunk: &mut [T]| {
        if chunk.is_empty() {
            return;
        }
        let first = pair_of(start, n);
        for f0 in (0..m).step_by(fb) {
            let f1 = (f0 + fb).min(m);
            let (mut i, mut j) = first;
            for o in chunk.iter_mut() {
                let part = partial(&x[i * m + f0..i * m + f1], &x[j * m + f0..j * m + f1], norm);
                *o = if norm == Norm::Inf {
                    max_nan(*o, part)
                } else {
                    *o + part
                };
                j += 1;
                if j == n {
                    i += 1;
                    j = i + 1;
                }
            }
        }
        match norm {
            Norm::Two => chunk.iter_mut().for_each(|o| *o = o.sqrt()),
            Norm::P(p) => {
                let e = T::of(1.0 / p);
                chunk.iter_mut().for_each(|o| *o = o.powf(e))
            }
            _ => {}
        }
    };
    if pairs > 1 && par_ok(pairs * m, PAR_THRESHOLD) {
        for_each_block(&mut out, &|s, c| fill(s, c));
    } else {
        fill(0, &mut out);
    }
    Ok(out)
}

/// Adds pair (i, j)'s share of row i's gradient over a block of features: `gk` times
/// PyTorch's `_pdist_backward` coefficient of `d = x_i - x_j` at distance `dk` (0 where the
/// distance is 0), one loop per norm.
#[inline]
fn pdist_grad_block<T: Real>(gi: &mut [T], xi: &[T], xj: &[T], gk: T, dk: T, norm: Norm) {
    let zero = T::c(0.0);
    let sign = |v: T| -> T {
        if v > zero {
            T::c(1.0)
        } else if v < zero {
            T::c(-1.0)
        } else {
            zero
        }
    };
    let rows = gi.iter_mut().zip(xi.iter().zip(xj));
    match norm {
        Norm::Zero => {}
        Norm::One => rows.for_each(|(o, (&a, &b))| *o = *o + gk * sign(a - b)),
        Norm::Two => {
            if dk != zero {
                let s = gk / dk;
                rows.for_each(|(o, (&a, &b))| *o = *o + s * (a - b));
            }
        }
        Norm::Inf => rows.for_each(|(o, (&a, &b))| {
            let d = a - b;
            *o = *o + if abs(d) == dk { gk * sign(d) } else { zero };
        }),
        Norm::P(p) => {
            if dk != zero {
                let e = T::of(p - 1.0);
                let s = gk / dk.powf(e);
                rows.for_each(|(o, (&a, &b))| {
                    let d = a - b;
                    if !(p < 1.0 && d == zero) {
                        *o = *o + s * sign(d) * abs(d).powf(e);
                    }
                });
            }
        }
    }
}

/// `_pdist_backward`: the gradient of `x` (n rows of m) from the gradient `g` of its pdist
/// `dist`: row i gets the sum over j != i of g_ij * coef(x_i - x_j). Rows split across
/// threads (each writes its own rows; O(n * m) memory), features swept block by block.
pub fn pdist_backward<T: Real + Elem>(
    g: &[T],
    x: &[T],
    dist: &[T],
    n: usize,
    m: usize,
    p: f64,
) -> Result<Vec<T>> {
    let norm = Norm::of(p);
    let fb = feature_block::<T>(n);
    // position of pair (i, j), i < j
    let at = |i: usize, j: usize| i * (2 * n - i - 1) / 2 + (j - i - 1);
    let mut out: Vec<T> = try_filled(n * m, T::c(0.0))?;
    let fill = |row0: usize, chunk: &mut [T]| {
        let rows = chunk.len() / m.max(1);
        for f0 in (0..m).step_by(fb) {
            let f1 = (f0 + fb).min(m);
            for r in 0..rows {
                let i = row0 + r;
                let gi = &mut chunk[r * m + f0..r * m + f1];
                let xi = &x[i * m + f0..i * m + f1];
                for j in (0..n).filter(|&j| j != i) {
                    let k = if i < j { at(i, j) } else { at(j, i) };
                    let xj = &x[j * m + f0..j * m + f1];
                    pdist_grad_block(gi, xi, xj, g[k], dist[k], norm);
                }
            }
        }
    };
    if m > 0 && n > 1 && par_ok(n * n * m, PAR_THRESHOLD) {
        map_blocks(&mut out, m, &fill);
    } else if m > 0 {
        fill(0, &mut out);
    }
    Ok(out)
}

// ---------------------------------------------------------------- multilabel_margin_loss

/// `multilabel_margin_loss` over `n` rows of `c` classes: each row's loss
/// `sum_{j, k} max(0, 1 - x[y_j] + x[k]) / c` over its targets `y_j` (the entries of its
/// target row before the first -1) and its non-target classes `k`, and with `grad` the
/// coefficients d loss_n / d x[n, k] (each pair with a positive margin term adds 1/c at k and
/// -1/c at y_j). O(n * c) memory; rows split across threads. A target outside `-1..c` is
/// `Err`.
pub fn multilabel_margin<T: Real + Elem>(
    x: &[T],
    y: &[i64],
    n: usize,
    c: usize,
    grad: bool,
) -> Result<(Vec<T>, Option<Vec<T>>)> {
    if y.iter().any(|&t| t < -1 || t >= c as i64) {
        return Err(Error::Runtime(
            "argument #2 'target' is out of range".into(),
        ));
    }
    let zero = T::c(0.0);
    let mut losses: Vec<T> = try_filled(n, zero)?;
    let mut coef: Vec<T> = if grad {
        try_filled(n * c, zero)?
    } else {
        Vec::new()
    };
    let inv_c = T::of(1.0 / c as f64);
    let rows = |r0: usize, ls: &mut [T], cs: &mut [T]| {
        // per thread: 1 at the non-target classes of the current row, else 0
        let mut mask: Vec<T> = vec![T::c(1.0); c];
        for (r, l) in ls.iter_mut().enumerate() {
            let row = r0 + r;
            let (xr, yr) = (&x[row * c..(row + 1) * c], &y[row * c..(row + 1) * c]);
            let targets = yr.iter().position(|&t| t < 0).unwrap_or(c);
            for &t in &yr[..targets] {
                mask[t as usize] = zero;
            }
            let mut sum = zero;
            for &t in &yr[..targets] {
                let xt = xr[t as usize];
                if grad {
                    let g = &mut cs[r * c..(r + 1) * c];
                    let mut hits = zero;
                    for ((gk, &xk), &mk) in g.iter_mut().zip(xr).zip(&mask) {
                        let z = T::c(1.0) - xt + xk;
                        let on = if z > zero { mk } else { zero };
                        sum = sum + z * on;
                        hits = hits + on;
                        *gk = *gk + on * inv_c;
                    }
                    g[t as usize] = g[t as usize] - hits * inv_c;
                } else {
                    for (&xk, &mk) in xr.iter().zip(&mask) {
                        let z = T::c(1.0) - xt + xk;
                        sum = sum + if z > zero { z * mk } else { zero };
                    }
                }
            }
            *l = sum * inv_c;
            for &t in &yr[..targets] {
                mask[t as usize] = T::c(1.0);
            }
        }
    };
    if n > 1 && c > 0 && par_ok(n * c, PAR_THRESHOLD) {
        let per = n.div_ceil(num_threads().max(1)).max(1);
        let cchunks: Vec<&mut [T]> = if grad {
            coef.chunks_mut(per * c).collect()
        } else {
            (0..n.div_ceil(per)).map(|_| &mut [][..]).collect()
        };
        #[allow(clippy::type_complexity)]
        let parts: Vec<(usize, (&mut [T], &mut [T]))> = losses
            .chunks_mut(per)
            .zip(cchunks)
            .enumerate()
            .map(|(b, lc)| (b * per, lc))
            .collect();
        map_each(parts, &|_, (r0, (l, cs))| rows(r0, l, cs));
    } else {
        rows(0, &mut losses, &mut coef);
    }
    Ok((losses, grad.then_some(coef)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searchsorted_left_right_sorter_and_nan() {
        let seq = [1.0f64, 2.0, 2.0, 3.0, f64::NAN];
        let vals = [0.0, 2.0, 2.5, 4.0, f64::NAN];
        let l: Vec<i64> = searchsorted(&seq, None, 5, &vals, 5, false).unwrap();
        assert_eq!(l, vec![0, 1, 5, 5, 5]); // as PyTorch: a NaN boundary sorts first
        let r: Vec<i64> = searchsorted(&seq, None, 5, &vals, 5, true).unwrap();
        assert_eq!(r, vec![0, 5, 5, 5, 5]);
        // two rows, the second ordered by a sorter; int32 output
        let seq2 = [1i64, 3, 5, 30, 10, 20];
        let sorter = [0i64, 1, 2, 1, 2, 0];
        let v: Vec<i32> = searchsorted(&seq2, Some(&sorter), 3, &[4i64, 15], 1, false).unwrap();
        assert_eq!(v, vec![2, 1]);
        assert!(sorter_in_range(&sorter, 3) && !sorter_in_range(&[3], 3));
    }

    #[test]
    fn bincount_and_histc_parallel_agree_with_serial() {
        let n = 1 << 20;
        let idx: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 13).collect();
        let c = bincount(&idx, 15).unwrap();
        let mut want = vec![0i64; 15];
        for &i in &idx {
            want[i as usize] += 1;
        }
        assert_eq!(c, want);
        let w: Vec<f64> = (0..n).map(|i| (i % 3) as f64).collect();
        let cw = bincount_weighted(&idx, &w, 13).unwrap();
        let mut ww = vec![0f64; 13];
        for (&i, &v) in idx.iter().zip(&w) {
            ww[i as usize] += v;
        }
        assert_eq!(cw, ww);
        assert_eq!(min_max_i64(&[3, -1, 5]), (-1, 5));
        let x = [0.0f32, 0.5, 1.0, 2.0, -0.1, f32::NAN, 0.99];
        assert_eq!(histc(&x, 4, 0.0, 1.0).unwrap(), vec![1.0, 0.0, 1.0, 2.0]);
    }

    #[test]
    fn nonzero_rows_and_columns() {
        let x = [0.0f32, 1.0, 0.0, 2.0, 0.0, 3.0];
        let (r, k) = nonzero(&x, &[2, 3], Coords::Rows).unwrap();
        assert_eq!((r, k), (vec![0, 1, 1, 0, 1, 2], 3));
        let (c, _) = nonzero(&x, &[2, 3], Coords::Columns).unwrap();
        assert_eq!(c, vec![0, 1, 1, 1, 0, 2]);
        // large: the parallel path
        let n = 1 << 20;
        let big: Vec<i64> = (0..n).map(|i| (i % 3 == 0) as i64).collect();
        let (c, k) = nonzero(&big, &[n / 4, 4], Coords::Columns).unwrap();
        assert_eq!(k, n.div_ceil(3));
        for j in 0..k {
            let flat = (c[j] * 4 + c[k + j]) as usize;
            assert_eq!(flat, 3 * j);
        }
    }

    #[test]
    fn unique_rows_sorts_slices_and_counts_them() {
        // rows [1, 2], [0, 1], [1, 2], [0, 3]
        let x = [1.0, 2.0, 0.0, 1.0, 1.0, 2.0, 0.0, 3.0];
        let (firsts, inv, counts) = unique_rows(&x, 2, false).unwrap();
        assert_eq!(firsts, vec![1, 3, 0]);
        assert_eq!(inv, vec![2, 0, 2, 1]);
        assert_eq!(counts, vec![1, 1, 2]);
        // runs: [1, 2] [0, 1] [1, 2] [0, 3] are all distinct neighbours
        let (firsts, _, counts) = unique_rows(&x, 2, true).unwrap();
        assert_eq!((firsts, counts), (vec![0, 1, 2, 3], vec![1; 4]));
        // a NaN row equals nothing, not even itself
        let n = [f64::NAN, 1.0, f64::NAN, 1.0];
        assert_eq!(unique_rows(&n, 2, false).unwrap().2, vec![1, 1]);
        assert_eq!(
            unique_rows::<f64>(&[], 3, false).unwrap().0,
            Vec::<i64>::new()
        );
    }

    #[test]
    fn unique_consecutive_runs() {
        let (v, inv, cnt) = unique_consecutive(&[1i64, 1, 2, 2, 2, 1], true, true).unwrap();
        assert_eq!(
            (v, inv, cnt),
            (
                vec![1, 2, 1],
                Some(vec![0, 0, 1, 1, 1, 2]),
                Some(vec![2, 3, 1])
            )
        );
        let (v, inv, cnt) = unique_consecutive(&[f64::NAN, f64::NAN], false, true).unwrap();
        assert_eq!((v.len(), inv, cnt), (2, None, Some(vec![1, 1])));
        // large: the parallel passes, runs crossing the blocks' borders
        let x: Vec<i64> = (0..(1i64 << 20)).map(|i| i / 1000).collect();
        let (v, inv, cnt) = unique_consecutive(&x, true, true).unwrap();
        assert_eq!(v, (0..=((1i64 << 20) - 1) / 1000).collect::<Vec<_>>());
        assert_eq!(inv.unwrap(), x);
        let cnt = cnt.unwrap();
        assert!(cnt[..cnt.len() - 1].iter().all(|&c| c == 1000));
        assert_eq!(cnt.iter().sum::<i64>(), 1 << 20);
    }

    #[test]
    fn max_unpool_writes_and_checks() {
        let out = max_unpool(&[5.0f32, 6.0, 7.0, 8.0], &[1, 1, 0, 3], 2, 4).unwrap();
        assert_eq!(out, vec![0.0, 6.0, 0.0, 0.0, 7.0, 0.0, 0.0, 8.0]);
        match max_unpool(&[1.0f32, 2.0], &[0, 9], 2, 4) {
            Err(Ok(i)) => assert_eq!(i, 9),
            _ => panic!("expected a bad index"),
        }
    }

    #[test]
    fn pdist_norms_and_backward() {
        let x = [0.0f64, 0.0, 3.0, 4.0, 3.0, 4.0];
        assert_eq!(pdist(&x, 3, 2, 2.0).unwrap(), vec![5.0, 5.0, 0.0]);
        assert_eq!(pdist(&x, 3, 2, 1.0).unwrap(), vec![7.0, 7.0, 0.0]);
        assert_eq!(pdist(&x, 3, 2, f64::INFINITY).unwrap(), vec![4.0, 4.0, 0.0]);
        assert_eq!(pdist(&x, 3, 2, 0.0).unwrap(), vec![2.0, 2.0, 0.0]);
        let d3 = pdist(&x, 3, 2, 3.0).unwrap();
        assert!((d3[0] - (27.0f64 + 64.0).powf(1.0 / 3.0)).abs() < 1e-12);
        assert_eq!(pair_of(2, 3), (1, 2));
        let d = pdist(&x, 3, 2, 2.0).unwrap();
        let g = pdist_backward(&[1.0, 1.0, 1.0], &x, &d, 3, 2, 2.0).unwrap();
        // row 0: -(3,4)/5 twice; rows 1, 2: (3,4)/5 each (their zero distance adds nothing)
        let want = [-1.2, -1.6, 0.6, 0.8, 0.6, 0.8];
        assert!(
            g.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-12),
            "{g:?}"
        );
        assert_eq!(g.len(), want.len());
    }

    #[test]
    fn multilabel_margin_loss_and_coefficients() {
        // PyTorch's docs example: loss 0.85
        let x = [0.1f64, 0.2, 0.4, 0.8];
        let y = [3i64, 0, -1, 1];
        let (l, g) = multilabel_margin(&x, &y, 1, 4, true).unwrap();
        assert!((l[0] - 0.85).abs() < 1e-12);
        assert_eq!(g.unwrap(), vec![-0.5, 0.5, 0.5, -0.5]);
        assert!(multilabel_margin(&x, &[4, -1, 0, 0], 1, 4, false).is_err());
    }
}
