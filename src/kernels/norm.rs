//! Normalization kernels over contiguous buffers: statistics, the normalized output and the
//! fused backward of layer norm, group norm and batch norm.
//!
//! All three normalize groups of elements: `y = (x - mean) * rstd * w + b` with
//! `rstd = 1 / sqrt(var + eps)` (biased variance). A buffer is seen as `outer x c x inner`:
//! - layer norm: one group per row (`c = 1`), the affine index is the position in the row;
//! - group norm: one group per (sample, group) row, the affine index is the channel;
//! - batch norm: one group per channel across `outer` and `inner`.
//!
//! Statistics are accumulated in f64. The backward is
//! `dx = rstd * (dxh - mean(dxh) - xhat * mean(dxh * xhat))` with `dxh = dy * w`.

use super::optim::Real;
use super::parallel::new_in_parts;
use crate::error::Result;
use crate::storage::{try_vec, Elem};

/// Independent f64 accumulators of the sums below: four AVX-512 registers (eight AVX2 ones), so
/// that additions overlap instead of each waiting on the last (8 lanes, one register, made the
/// group norm statistics latency-bound: 3x slower than PyTorch's).
const LANES: usize = 32;

/// `sum f(x_i)` in f64 over `LANES` independent lanes (vectorised; a single running sum would
/// wait on every addition).
#[inline(always)]
fn sum_lanes<T: Copy>(x: &[T], f: impl Fn(T) -> f64) -> f64 {
    let mut acc = [0.0f64; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest: f64 = chunks.remainder().iter().map(|&v| f(v)).sum();
    for c in chunks {
        for i in 0..LANES {
            acc[i] += f(c[i]);
        }
    }
    acc.iter().sum::<f64>() + rest
}

/// Mean and rstd of `x` (f64 accumulation, two passes).
#[inline(always)]
fn stats<T: Elem>(x: &[T], eps: f64) -> (f64, f64) {
    let n = x.len().max(1) as f64;
    let mean = sum_lanes(x, |v| v.to_f64()) / n;
    let var = sum_lanes(x, |v| {
        let d = v.to_f64() - mean;
        d * d
    }) / n;
    (mean, 1.0 / (var + eps).sqrt())
}

/// How a row's elements map to weight/bias entries.
#[derive(Clone, Copy, Debug)]
pub enum Affine {
    /// layer norm: element j of every row uses entry j
    Columns,
    /// group norm: a row (sample n, group g) is `cg` channels of `hw` elements; channel c of
    /// the row uses entry `g * cg + c`
    Channels { groups: usize, cg: usize, hw: usize },
}

impl Affine {
    /// The (start, len, entry) segments of row `r` that share one weight entry, or None for
    /// `Columns` (every element its own entry).
    fn segments(self, r: usize) -> Option<impl Iterator<Item = (usize, usize, usize)>> {
        match self {
            Affine::Columns => None,
            Affine::Channels { groups, cg, hw } => {
                Some((0..cg).map(move |c| (c * hw, hw, (r % groups) * cg + c)))
            }
        }
    }
}

/// Below this many elements a row normalization stays on the calling thread (a few passes
/// over each row: the cost of `PAR_THRESHOLD_COSTLY` kernels).
const ROWS_PAR_THRESHOLD: usize = super::PAR_THRESHOLD_COSTLY;

/// Whether `rows` rows of `n` elements are split over the threads.
fn rows_parallel(rows: usize, n: usize) -> bool {
    super::par_ok(rows * n, ROWS_PAR_THRESHOLD)
}

/// Rows of length `n` normalized and scaled by `w`, shifted by `b` as `aff` maps them.
pub fn rows_forward<T: Real + Elem>(
    x: &[T],
    n: usize,
    eps: f64,
    w: Option<&[T]>,
    b: Option<&[T]>,
    aff: Affine,
) -> Result<Vec<T>> {
    let rows = x.len().checked_div(n).unwrap_or(0);
    if rows == 0 {
        return try_vec::<T>(x.len());
    }
    let run = |start: usize, y: &mut [T]| {
        let part = RowsPart {
            x: &x[start..],
            n,
            eps,
            aff,
            first: start / n,
        };
        let forward_rows_base = |part, w, b, y: &mut [T]| forward_rows(part, w, b, y, stats);
        best!(forward_rows_base, forward_rows_avx512, forward_rows_avx2; part, w, b, y)
    };
    let (y, _) = new_in_parts(x.len(), n, rows_parallel(rows, n), T::of(0.0), &run)?;
    Ok(y)
}

/// The rows of one part of a row normalization: rows `first..` of the whole buffer, `x` starting
/// at row `first`.
#[derive(Clone, Copy)]
struct RowsPart<'a, T> {
    x: &'a [T],
    n: usize,
    eps: f64,
    aff: Affine,
    first: usize,
}

/// The rows of `part` normalized into `y`, each row's (mean, rstd) from `stats`.
#[inline(always)]
fn forward_rows<T: Real + Elem>(
    part: RowsPart<'_, T>,
    w: Option<&[T]>,
    b: Option<&[T]>,
    y: &mut [T],
    stats: impl Fn(&[T], f64) -> (f64, f64),
) {
    let n = part.n;
    for (r, yr) in y.chunks_exact_mut(n).enumerate() {
        let xr = &part.x[r * n..(r + 1) * n];
        let (mean, rstd) = stats(xr, part.eps);
        let (m, s) = (T::of(mean), T::of(rstd));
        match part.aff.segments(part.first + r) {
            None => match (w, b) {
                (Some(w), Some(b)) => {
                    for (((o, &v), &wj), &bj) in yr.iter_mut().zip(xr).zip(w).zip(b) {
                        *o = (v - m) * s * wj + bj;
                    }
                }
                (Some(w), None) => {
                    for ((o, &v), &wj) in yr.iter_mut().zip(xr).zip(w) {
                        *o = (v - m) * s * wj;
                    }
                }
                (None, Some(b)) => {
                    for ((o, &v), &bj) in yr.iter_mut().zip(xr).zip(b) {
                        *o = (v - m) * s + bj;
                    }
                }
                (None, None) => {
                    for (o, &v) in yr.iter_mut().zip(xr) {
                        *o = (v - m) * s;
                    }
                }
            },
            Some(segs) => {
                for (start, len, k) in segs {
                    let scale = s * w.map_or(T::of(1.0), |w| w[k]);
                    let shift = b.map_or(T::of(0.0), |b| b[k]) - m * scale;
                    for (o, &v) in yr[start..start + len]
                        .iter_mut()
                        .zip(&xr[start..start + len])
                    {
                        *o = v * scale + shift;
                    }
                }
            }
        }
    }
}

/// The backward of `rows_forward` (the statistics recomputed, cheaper than saving them for
/// small rows): (dx, dw, db), dw/db of length `naff` (accumulated over rows in f64).
#[allow(clippy::too_many_arguments)]
pub fn rows_backward<T: Real + Elem>(
    x: &[T],
    dy: &[T],
    n: usize,
    eps: f64,
    w: Option<&[T]>,
    naff: usize,
    aff: Affine,
) -> Result<(Vec<T>, Vec<f64>, Vec<f64>)> {
    let rows = x.len().checked_div(n).unwrap_or(0);
    let (mut dw, mut db) = (vec![0.0f64; naff], vec![0.0f64; naff]);
    if rows == 0 {
        return Ok((try_vec::<T>(x.len())?, dw, db));
    }
    // each part sums its own dw, db
    let run = |start: usize, dx: &mut [T]| {
        let part = RowsPart {
            x: &x[start..],
            n,
            eps,
            aff,
            first: start / n,
        };
        let mut sums = (vec![T::of(0.0); naff], vec![T::of(0.0); naff]);
        let dy = &dy[start..];
        let backward_rows_base = |part, dy, w, dx: &mut [T], sums: &mut (Vec<T>, Vec<T>)| {
            backward_rows(part, dy, w, dx, sums, stats, sum_dot)
        };
        best!(backward_rows_base, backward_rows_avx512, backward_rows_avx2; part, dy, w, dx, &mut sums);
        sums
    };
    let (dx, sums) = new_in_parts(x.len(), n, rows_parallel(rows, n), T::of(0.0), &run)?;
    for (pw, pb) in sums {
        dw.iter_mut().zip(pw).for_each(|(a, v)| *a += v.to_f64());
        db.iter_mut().zip(pb).for_each(|(a, v)| *a += v.to_f64());
    }
    Ok((dx, dw, db))
}

/// `sum a_i * b_i` in f64 over `LANES` lanes.
#[inline(always)]
fn dot_product<T: Elem>(a: &[T], b: &[T]) -> f64 {
    let mut acc = [0.0f64; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let rest: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x.to_f64() * y.to_f64())
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += x[i].to_f64() * y[i].to_f64();
        }
    }
    acc.iter().sum::<f64>() + rest
}

/// `(sum a_i, sum a_i * b_i)` in f64.
#[inline(always)]
fn sum_dot<T: Elem>(a: &[T], b: &[T]) -> (f64, f64) {
    (sum_lanes(a, |v| v.to_f64()), dot_product(a, b))
}

/// One part of `rows_backward`: dx of the part's rows, dw and db sums (over the part's rows, in
/// T as PyTorch sums them) into `sums`; each row's (mean, rstd) from `stats`, `(sum a, a . b)`
/// of two rows from `moments`.
#[inline(always)]
fn backward_rows<T: Real + Elem>(
    part: RowsPart<'_, T>,
    dy: &[T],
    w: Option<&[T]>,
    dx: &mut [T],
    sums: &mut (Vec<T>, Vec<T>),
    stats: impl Fn(&[T], f64) -> (f64, f64),
    moments: impl Fn(&[T], &[T]) -> (f64, f64),
) {
    let n = part.n;
    let (dw, db) = (&mut sums.0, &mut sums.1);
    // the normalized row and dL/d(normalized row)
    let (mut xh, mut dxh) = (vec![T::of(0.0); n], vec![T::of(0.0); n]);
    for (r, dxr) in dx.chunks_exact_mut(n).enumerate() {
        let xr = &part.x[r * n..(r + 1) * n];
        let dyr = &dy[r * n..(r + 1) * n];
        let (mean, rstd) = stats(xr, part.eps);
        let (m, s) = (T::of(mean), T::of(rstd));
        for ((h, d), (&v, &g)) in xh.iter_mut().zip(dxh.iter_mut()).zip(xr.iter().zip(dyr)) {
            *h = (v - m) * s;
            *d = g;
        }
        match part.aff {
            Affine::Columns => {
                for (((a, bsum), &h), &g) in dw.iter_mut().zip(db.iter_mut()).zip(&xh).zip(dyr) {
                    *a = *a + g * h;
                    *bsum = *bsum + g;
                }
                if let Some(w) = w {
                    for (d, &wj) in dxh.iter_mut().zip(w) {
                        *d = *d * wj;
                    }
                }
            }
            Affine::Channels { groups, cg, hw } => {
                // per channel: the sums of dy and dy * xhat, which give dw, db and (times the
                // channel's weight) the row's two means; then dx channel by channel
                let entry = |c: usize| (part.first + r) % groups * cg + c;
                let (mut sum_d, mut sum_dh) = (0.0f64, 0.0f64);
                for c in 0..cg {
                    let (g, h) = (&dxh[c * hw..(c + 1) * hw], &xh[c * hw..(c + 1) * hw]);
                    let (s0, s1) = if hw >= 16 {
                        moments(g, h)
                    } else {
                        g.iter().zip(h).fold((0.0, 0.0), |(s0, s1), (&d, &v)| {
                            (s0 + d.to_f64(), s1 + d.to_f64() * v.to_f64())
                        })
                    };
                    let k = entry(c);
                    dw[k] = dw[k] + T::of(s1);
                    db[k] = db[k] + T::of(s0);
                    let wk = w.map_or(1.0, |w| w[k].to_f64());
                    sum_d += wk * s0;
                    sum_dh += wk * s1;
                }
                let (mean_d, mean_dh) = (T::of(sum_d / n as f64), T::of(sum_dh / n as f64));
                for c in 0..cg {
                    let wk = w.map_or(T::of(1.0), |w| w[entry(c)]);
                    let seg = c * hw..(c + 1) * hw;
                    for ((o, &d), &h) in dxr[seg.clone()]
                        .iter_mut()
                        .zip(&dxh[seg.clone()])
                        .zip(&xh[seg])
                    {
                        *o = s * (d * wk - mean_d - h * mean_dh);
                    }
                }
                continue;
            }
        }
        let (sum_d, sum_dh) = moments(&dxh, &xh);
        let (a, c) = (T::of(sum_d / n as f64), T::of(sum_dh / n as f64));
        for ((o, &d), &h) in dxr.iter_mut().zip(&dxh).zip(&xh) {
            *o = s * (d - a - h * c);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use super::*;
    use std::arch::x86_64::{
        __m512, __mmask16, _mm512_add_pd, _mm512_add_ps, _mm512_castps512_ps256, _mm512_cvtps_pd,
        _mm512_extractf32x8_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_maskz_loadu_ps,
        _mm512_maskz_sub_ps, _mm512_mul_ps, _mm512_reduce_add_pd, _mm512_set1_ps,
        _mm512_setzero_pd, _mm512_setzero_ps, _mm512_sub_ps,
    };

    #[target_feature(enable = "avx2,fma")]
    pub fn forward_rows_avx2<T: Real + Elem>(
        part: RowsPart<'_, T>,
        w: Option<&[T]>,
        b: Option<&[T]>,
        y: &mut [T],
    ) {
        forward_rows(part, w, b, y, stats)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub fn forward_rows_avx512<T: Real + Elem>(
        part: RowsPart<'_, T>,
        w: Option<&[T]>,
        b: Option<&[T]>,
        y: &mut [T],
    ) {
        forward_rows(part, w, b, y, |x, eps| stats_avx512(x, eps))
    }

    #[target_feature(enable = "avx2,fma")]
    pub fn backward_rows_avx2<T: Real + Elem>(
        part: RowsPart<'_, T>,
        dy: &[T],
        w: Option<&[T]>,
        dx: &mut [T],
        sums: &mut (Vec<T>, Vec<T>),
    ) {
        backward_rows(part, dy, w, dx, sums, stats, sum_dot)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub fn backward_rows_avx512<T: Real + Elem>(
        part: RowsPart<'_, T>,
        dy: &[T],
        w: Option<&[T]>,
        dx: &mut [T],
        sums: &mut (Vec<T>, Vec<T>),
    ) {
        backward_rows(
            part,
            dy,
            w,
            dx,
            sums,
            |x, eps| stats_avx512(x, eps),
            |a, b| sum_dot_avx512(a, b),
        )
    }

    /// `sum_dot` with explicit AVX-512 code for f32 rows, as `stats_avx512`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    fn sum_dot_avx512<T: Elem>(a: &[T], b: &[T]) -> (f64, f64) {
        if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>() {
            return sum_dot(a, b);
        }
        let len = a.len().min(b.len());
        // SAFETY: T is f32 (same TypeId), so both slices hold at least `len` initialised f32s.
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts(a.as_ptr().cast::<f32>(), len),
                std::slice::from_raw_parts(b.as_ptr().cast::<f32>(), len),
            )
        };
        const BLOCK: usize = 1024;
        let (mut total_a, mut total_ab) = (_mm512_setzero_pd(), _mm512_setzero_pd());
        for (ba, bb) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
            let (pa, pb, n) = (ba.as_ptr(), bb.as_ptr(), ba.len());
            let (mut sa, mut sab) = ([_mm512_setzero_ps(); 2], [_mm512_setzero_ps(); 2]);
            let mut i = 0;
            while i + 32 <= n {
                for j in 0..2 {
                    // SAFETY: i + 16 * j + 16 <= i + 32 <= n, the length of both blocks.
                    let (va, vb) = unsafe {
                        (
                            _mm512_loadu_ps(pa.add(i + 16 * j)),
                            _mm512_loadu_ps(pb.add(i + 16 * j)),
                        )
                    };
                    sa[j] = _mm512_add_ps(sa[j], va);
                    sab[j] = _mm512_fmadd_ps(va, vb, sab[j]);
                }
                i += 32;
            }
            if i + 16 <= n {
                // SAFETY: i + 16 <= n.
                let (va, vb) = unsafe { (_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i))) };
                sa[1] = _mm512_add_ps(sa[1], va);
                sab[1] = _mm512_fmadd_ps(va, vb, sab[1]);
                i += 16;
            }
            if i < n {
                let k = ((1u32 << (n - i)) - 1) as __mmask16;
                // SAFETY: the masked loads read only lanes j < n - i (elements i + j < n of both
                // blocks); masked-off lanes are not accessed and read as 0 (adding 0).
                let (va, vb) = unsafe {
                    (
                        _mm512_maskz_loadu_ps(k, pa.add(i)),
                        _mm512_maskz_loadu_ps(k, pb.add(i)),
                    )
                };
                sa[0] = _mm512_add_ps(sa[0], va);
                sab[0] = _mm512_fmadd_ps(va, vb, sab[0]);
            }
            let widen = |v: __m512| {
                _mm512_add_pd(
                    _mm512_cvtps_pd(_mm512_castps512_ps256(v)),
                    _mm512_cvtps_pd(_mm512_extractf32x8_ps::<1>(v)),
                )
            };
            total_a = _mm512_add_pd(total_a, widen(_mm512_add_ps(sa[0], sa[1])));
            total_ab = _mm512_add_pd(total_ab, widen(_mm512_add_ps(sab[0], sab[1])));
        }
        (
            _mm512_reduce_add_pd(total_a),
            _mm512_reduce_add_pd(total_ab),
        )
    }

    /// `stats` with explicit AVX-512 code for f32 rows (the compiler's own vectorisation of
    /// the lane sums leaves their per-row fold and f64 conversions as the cost of short rows:
    /// a (256, 256) layer norm spent 80% of its time there).
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    fn stats_avx512<T: Elem>(x: &[T], eps: f64) -> (f64, f64) {
        if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>() {
            return stats(x, eps);
        }
        // SAFETY: T is f32 (same TypeId), so `x` is `x.len()` initialised f32 values.
        let x = unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<f32>(), x.len()) };
        let n = x.len().max(1) as f64;
        let mean = sum_f32_avx512(x, |v| v, |_, v| v) / n;
        let m = _mm512_set1_ps(mean as f32);
        let square = |v: __m512| {
            let d = _mm512_sub_ps(v, m);
            _mm512_mul_ps(d, d)
        };
        // the lanes a partial load left out are 0, not 0 - mean
        let square_masked = |k: __mmask16, v: __m512| {
            let d = _mm512_maskz_sub_ps(k, v, m);
            _mm512_mul_ps(d, d)
        };
        let var = sum_f32_avx512(x, square, square_masked) / n;
        (mean, 1.0 / (var + eps).sqrt())
    }

    /// `sum f(x_i)` over f32 vectors of 16: four f32 accumulators within blocks of `BLOCK`
    /// elements (each lane sums at most 16 values, so f32 loses nothing that matters), the
    /// blocks summed in f64. `masked(k, v)` is `f` for a partial vector whose lanes outside `k`
    /// must contribute 0.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    fn sum_f32_avx512(
        x: &[f32],
        f: impl Fn(__m512) -> __m512,
        masked: impl Fn(__mmask16, __m512) -> __m512,
    ) -> f64 {
        const BLOCK: usize = 1024;
        let mut total = _mm512_setzero_pd();
        for blk in x.chunks(BLOCK) {
            let (p, n) = (blk.as_ptr(), blk.len());
            let mut acc = [_mm512_setzero_ps(); 4];
            let mut i = 0;
            while i + 64 <= n {
                for (j, a) in acc.iter_mut().enumerate() {
                    // SAFETY: i + 16 * j + 16 <= i + 64 <= n: the 16 floats read are in `blk`.
                    *a = _mm512_add_ps(*a, f(unsafe { _mm512_loadu_ps(p.add(i + 16 * j)) }));
                }
                i += 64;
            }
            while i + 16 <= n {
                // SAFETY: i + 16 <= n.
                acc[0] = _mm512_add_ps(acc[0], f(unsafe { _mm512_loadu_ps(p.add(i)) }));
                i += 16;
            }
            if i < n {
                let k = ((1u32 << (n - i)) - 1) as __mmask16;
                // SAFETY: the masked load reads only lanes j < n - i (elements i + j < n of
                // `blk`); masked-off lanes are not accessed and read as 0.
                let v = unsafe { _mm512_maskz_loadu_ps(k, p.add(i)) };
                acc[1] = _mm512_add_ps(acc[1], masked(k, v));
            }
            let a = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
            total = _mm512_add_pd(total, _mm512_cvtps_pd(_mm512_castps512_ps256(a)));
            total = _mm512_add_pd(total, _mm512_cvtps_pd(_mm512_extractf32x8_ps::<1>(a)));
        }
        _mm512_reduce_add_pd(total)
    }
}

/// Batch norm statistics per channel of an `outer x c x inner` buffer: (mean, biased var), from
/// the f64 sums and sums of squares of every (sample, channel) row, vectorised and split across
/// threads.
pub fn channel_stats<T: Elem>(
    x: &[T],
    outer: usize,
    c: usize,
    inner: usize,
) -> Result<(Vec<f64>, Vec<f64>)> {
    use super::reduce::{reduce, reduce_rows, Moments};
    let sums = if inner == 1 {
        // (outer, c): the channels are the columns
        reduce(x, 1, outer, c, &Moments)?
    } else {
        let rows = reduce_rows(x, outer * c, inner, &Moments)?;
        let mut per = vec![(0.0, 0.0); c];
        for (k, (s, q)) in rows.into_iter().enumerate() {
            per[k % c].0 += s;
            per[k % c].1 += q;
        }
        per
    };
    let n = (outer * inner).max(1) as f64;
    Ok(sums
        .into_iter()
        .map(|(s, q)| {
            let mean = s / n;
            (mean, (q / n - mean * mean).max(0.0))
        })
        .unzip())
}

/// `y = a[ch] * x + b[ch]` over an `outer x c x inner` buffer, by the elementwise engine (the
/// per-channel factors read as broadcast operands).
fn channel_map<T: Real + Elem>(
    x: &[T],
    outer: usize,
    c: usize,
    inner: usize,
    a: &[T],
    b: &[T],
) -> Result<Vec<T>> {
    use crate::layout::Layout;
    let shape = vec![outer, c, inner];
    let per_channel = Layout {
        shape: shape.clone(),
        strides: vec![0, 1, 0],
        offset: 0,
    };
    super::elementwise::ternary(
        x,
        &Layout::contiguous(shape),
        a,
        &per_channel,
        b,
        &per_channel,
        |x: T, a: T, b: T| a * x + b,
    )
}

/// `y = (x - mean[ch]) * rstd[ch] * w[ch] + b[ch]` over an `outer x c x inner` buffer.
#[allow(clippy::too_many_arguments)]
pub fn channel_affine<T: Real + Elem>(
    x: &[T],
    outer: usize,
    c: usize,
    inner: usize,
    mean: &[f64],
    rstd: &[f64],
    w: Option<&[T]>,
    b: Option<&[T]>,
) -> Result<Vec<T>> {
    let scale: Vec<f64> = (0..c)
        .map(|ch| rstd[ch] * w.map_or(1.0, |w| w[ch].to_f64()))
        .collect();
    let shift: Vec<T> = (0..c)
        .map(|ch| T::of(b.map_or(0.0, |b| b[ch].to_f64()) - mean[ch] * scale[ch]))
        .collect();
    let scale: Vec<T> = scale.into_iter().map(T::of).collect();
    channel_map(x, outer, c, inner, &scale, &shift)
}

/// Batch norm backward per channel: (dx, dw, db). With `training`, the statistics depend on x
/// (the full formula); otherwise they are constants and `dx = dy * w * rstd`. The sums of dy
/// and of dy * x per channel come from one pass, and dx from a second as
/// `k1 * dy + k2 * x + k3` with per-channel factors.
#[allow(clippy::too_many_arguments)]
pub fn channel_backward<T: Real + Elem>(
    x: &[T],
    dy: &[T],
    outer: usize,
    c: usize,
    inner: usize,
    mean: &[f64],
    rstd: &[f64],
    w: Option<&[T]>,
    training: bool,
) -> Result<(Vec<T>, Vec<f64>, Vec<f64>)> {
    let n = (outer * inner) as f64;
    let (sum_dy, sum_dy_x) = channel_dot(dy, x, outer, c, inner);
    // sum of dy * xhat = (sum dy x - mean sum dy) * rstd
    let sum_dy_xh: Vec<f64> = (0..c)
        .map(|ch| (sum_dy_x[ch] - mean[ch] * sum_dy[ch]) * rstd[ch])
        .collect();
    let (mut k1, mut k2, mut k3) = (
        Vec::with_capacity(c),
        Vec::with_capacity(c),
        Vec::with_capacity(c),
    );
    for ch in 0..c {
        let s = rstd[ch] * w.map_or(1.0, |w| w[ch].to_f64());
        if training {
            // dx = s (dy - a - (x - m) rstd b), a = sum dy / n, b = sum dy xhat / n
            let (a, b) = (sum_dy[ch] / n, sum_dy_xh[ch] / n);
            k1.push(T::of(s));
            k2.push(T::of(-s * rstd[ch] * b));
            k3.push(T::of(s * (mean[ch] * rstd[ch] * b - a)));
        } else {
            k1.push(T::of(s));
            k2.push(T::of(0.0));
            k3.push(T::of(0.0));
        }
    }
    let dx = if training {
        let xs = channel_map(x, outer, c, inner, &k2, &k3)?;
        let l = crate::layout::Layout::contiguous(vec![outer, c, inner]);
        let per = crate::layout::Layout {
            shape: vec![outer, c, inner],
            strides: vec![0, 1, 0],
            offset: 0,
        };
        super::elementwise::ternary(dy, &l, &k1, &per, &xs, &l, |g: T, k: T, r: T| k * g + r)?
    } else {
        channel_map(dy, outer, c, inner, &k1, &k3)?
    };
    Ok((dx, sum_dy_xh, sum_dy))
}

/// Per channel, the f64 sums of `dy` and of `dy * x` over an `outer x c x inner` buffer.
fn channel_dot<T: Elem>(
    dy: &[T],
    x: &[T],
    outer: usize,
    c: usize,
    inner: usize,
) -> (Vec<f64>, Vec<f64>) {
    let (mut sd, mut sdx) = (vec![0.0; c], vec![0.0; c]);
    for o in 0..outer {
        for ch in 0..c {
            let at = (o * c + ch) * inner;
            let (g, v) = (&dy[at..at + inner], &x[at..at + inner]);
            let (a, b) = dot_lanes(g, v);
            sd[ch] += a;
            sdx[ch] += b;
        }
    }
    (sd, sdx)
}

/// (sum g, sum g * v) in f64 over `LANES` independent lanes.
#[inline(always)]
fn dot_lanes<T: Elem>(g: &[T], v: &[T]) -> (f64, f64) {
    let (mut a, mut b) = ([0.0f64; LANES], [0.0f64; LANES]);
    let (gc, vc) = (g.chunks_exact(LANES), v.chunks_exact(LANES));
    let (gr, vr) = (gc.remainder(), vc.remainder());
    for (gs, vs) in gc.zip(vc) {
        for i in 0..LANES {
            let gi = gs[i].to_f64();
            a[i] += gi;
            b[i] += gi * vs[i].to_f64();
        }
    }
    let mut sa: f64 = a.iter().sum();
    let mut sb: f64 = b.iter().sum();
    for (&gi, &vi) in gr.iter().zip(vr) {
        sa += gi.to_f64();
        sb += gi.to_f64() * vi.to_f64();
    }
    (sa, sb)
}

/// Batch norm's running statistic after a training step: `(1 - momentum) * old + momentum *
/// batch * factor` per channel (`factor` the unbiased correction n / (n - 1) for the variance,
/// 1 for the mean).
pub fn running_update(old: &[f64], batch: &[f64], momentum: f64, factor: f64) -> Vec<f64> {
    old.iter()
        .zip(batch)
        .map(|(o, b)| (1.0 - momentum) * o + momentum * b * factor)
        .collect()
}

/// `1 / sqrt(var + eps)` per channel.
pub fn inv_std(var: &[f64], eps: f64) -> Vec<f64> {
    var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_statistics() {
        let r = running_update(&[0.0, 1.0], &[1.0, 3.0], 0.1, 1.0);
        assert!((r[0] - 0.1).abs() < 1e-15 && (r[1] - 1.2).abs() < 1e-15);
        // the variance's unbiased factor scales the batch term only
        let r = running_update(&[1.0], &[2.0], 0.5, 2.0);
        assert_eq!(r, vec![2.5]);
        assert_eq!(inv_std(&[3.0, 0.0], 1.0), vec![0.5, 1.0]);
    }

    #[test]
    fn rows_backward_matches_finite_differences() {
        let x: Vec<f64> = (0..12).map(|i| ((i * 7 % 5) as f64 * 0.3).sin()).collect();
        let w: Vec<f64> = (0..4).map(|i| 1.0 + i as f64 * 0.1).collect();
        let dy: Vec<f64> = (0..12).map(|i| (i as f64 * 0.7).cos()).collect();
        let aff = Affine::Columns;
        let loss = |x: &[f64]| -> f64 {
            let y = rows_forward(x, 4, 1e-5, Some(&w), None, aff).unwrap();
            y.iter().zip(&dy).map(|(a, b)| a * b).sum()
        };
        let (dx, _, _) = rows_backward(&x, &dy, 4, 1e-5, Some(&w), 4, aff).unwrap();
        for i in 0..x.len() {
            let mut xp = x.clone();
            xp[i] += 1e-6;
            let mut xm = x.clone();
            xm[i] -= 1e-6;
            let fd = (loss(&xp) - loss(&xm)) / 2e-6;
            assert!((fd - dx[i]).abs() < 1e-6, "{i}: {fd} {}", dx[i]);
        }
    }
}
