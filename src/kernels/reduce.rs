//! Reductions over a contiguous buffer viewed as `(outer, red, inner)`: the reduced axis is the
//! middle one, so a reduction over any single block of adjacent dims needs no copy.

use super::parallel::{in_parts, new_in_parts};
use super::{alloc, par_ok, PAR_THRESHOLD};
use crate::error::Result;
use crate::storage::Elem;

/// Sum over the middle axis (`SumOf` through `reduce`).
pub fn sum<T>(data: &[T], outer: usize, red: usize, inner: usize) -> Result<Vec<T>>
where
    T: Copy + Default + Send + Sync + std::ops::Add<Output = T>,
{
    reduce(data, outer, red, inner, &SumOf)
}

/// A reduction of each row of a contiguous `(outer, red, inner)` buffer: `step` folds one
/// element into an accumulator, `merge` joins two accumulators, and `finish` turns the row's
/// accumulator into the result (it may read the row again: logsumexp, argmax).
pub trait Reduce<T>: Sync {
    type Acc: Copy + Send + Sync;
    type Out: Copy + Send + Sync;
    fn init(&self) -> Self::Acc;
    fn step(&self, acc: Self::Acc, v: T) -> Self::Acc;
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn finish(&self, acc: Self::Acc, row: &[T]) -> Self::Out;
}

/// Independent accumulators of a row fold: four AVX-512 registers of f32, so that the steps of
/// one register do not wait for each other (with one register the fold is latency-bound).
const LANES: usize = 64;

/// Folds `x` with `LANES` independent accumulators (so that it vectorises), then merges them.
#[inline(always)]
pub fn fold_lanes<T: Copy, R: Reduce<T>>(x: &[T], r: &R) -> R::Acc {
    let mut acc = [r.init(); LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            acc[i] = r.step(acc[i], c[i]);
        }
    }
    rest.iter()
        .fold(merge_lanes(acc, |a, b| r.merge(a, b)), |a, &v| r.step(a, v))
}

/// The `LANES` accumulators merged pairwise, halves first (the order every lane fold uses).
/// Each level is a new array half as long, which the compiler keeps in vector registers (one
/// array merged in place went through the stack, ~40 ns per row of 64 floats).
#[inline(always)]
fn merge_lanes<A: Copy>(acc: [A; LANES], merge: impl Fn(A, A) -> A) -> A {
    #[inline(always)]
    fn halve<A: Copy, const N: usize, const H: usize>(
        a: [A; N],
        merge: &impl Fn(A, A) -> A,
    ) -> [A; H] {
        std::array::from_fn(|i| merge(a[i], a[i + H]))
    }
    const { assert!(LANES == 64) };
    let a: [A; 32] = halve(acc, &merge);
    let a: [A; 16] = halve(a, &merge);
    let a: [A; 8] = halve(a, &merge);
    let a: [A; 4] = halve(a, &merge);
    let a: [A; 2] = halve(a, &merge);
    merge(a[0], a[1])
}

#[inline(always)]
fn rows_body<T: Copy, R: Reduce<T>>(data: &[T], len: usize, out: &mut [R::Out], r: &R) {
    for (o, row) in out.iter_mut().zip(data.chunks_exact(len)) {
        *o = r.finish(fold_lanes(row, r), row);
    }
}

/// `out[o, i] = fold over r of data[o, r, i]`: whole rows of `inner` accumulators at a time,
/// which vectorises across `i`.
#[inline(always)]
fn cols_body<T: Copy, R: Reduce<T>>(
    data: &[T],
    red: usize,
    inner: usize,
    out: &mut [R::Acc],
    r: &R,
) {
    for (o, dst) in out.chunks_exact_mut(inner).enumerate() {
        dst.iter_mut().for_each(|d| *d = r.init());
        let base = o * red * inner;
        for k in 0..red {
            let row = &data[base + k * inner..base + (k + 1) * inner];
            for (d, &v) in dst.iter_mut().zip(row) {
                *d = r.step(*d, v);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use super::*;

    macro_rules! isa {
        ($feat:literal, $rows:ident, $cols:ident, $sm_rows:ident, $sm_cols:ident, $sm_bwd:ident,
         $sm_rows_body:path, $sm_bwd_body:path) => {
            #[target_feature(enable = $feat)]
            pub fn $sm_bwd<R: Real + Default>(
                g: &[R],
                y: &[R],
                len: usize,
                out: &mut [R],
                log: bool,
            ) {
                $sm_bwd_body(g, y, len, out, log)
            }

            #[target_feature(enable = $feat)]
            pub fn $sm_rows<R: Real + PartialOrd + Default>(
                src: &[R],
                len: usize,
                out: &mut [R],
                log: bool,
            ) {
                $sm_rows_body(src, len, out, log)
            }

            #[target_feature(enable = $feat)]
            pub fn $sm_cols<R: Real + PartialOrd + Default>(
                src: &[R],
                red: usize,
                inner: usize,
                out: &mut [R],
                log: bool,
            ) {
                softmax_cols_body(src, red, inner, out, log)
            }

            #[target_feature(enable = $feat)]
            pub fn $rows<T: Copy, R: Reduce<T>>(data: &[T], len: usize, out: &mut [R::Out], r: &R) {
                rows_body(data, len, out, r)
            }

            #[target_feature(enable = $feat)]
            pub fn $cols<T: Copy, R: Reduce<T>>(
                data: &[T],
                red: usize,
                inner: usize,
                out: &mut [R::Acc],
                r: &R,
            ) {
                cols_body(data, red, inner, out, r)
            }
        };
    }
    use crate::kernels::simd::Real;
    isa!(
        "avx2,fma",
        rows_avx2,
        cols_avx2,
        softmax_rows_avx2,
        softmax_cols_avx2,
        softmax_backward_avx2,
        softmax_rows_body,
        softmax_backward_body
    );
    isa!(
        "avx512f,avx512dq,avx2,fma",
        rows_avx512,
        cols_avx512,
        softmax_rows_avx512,
        softmax_cols_avx512,
        softmax_backward_avx512,
        explicit::softmax_rows,
        explicit::softmax_backward
    );

    /// Softmax rows of f32 in explicit AVX-512 code, bit for bit the portable kernels' results
    /// (the compiled exponentials spent nine of their ~30 instructions a vector on 2^n; see
    /// `simd::x86::avx512::exp_ps`). Other element types take the portable kernels.
    mod explicit {
        use super::*;
        use crate::kernels::simd::x86::avx512::{exp_ps, first, sum_halving};
        use crate::kernels::simd::{as_f32, as_f32_mut, log_f32};
        use std::arch::x86_64::*;

        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub fn softmax_rows<R: Real + PartialOrd + Default>(
            src: &[R],
            len: usize,
            out: &mut [R],
            log: bool,
        ) {
            if let (Some(x), Some(o)) = (as_f32(src), as_f32_mut(out)) {
                return softmax_rows_f32(x, len, o, log);
            }
            softmax_rows_body(src, len, out, log)
        }

        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub fn softmax_backward<R: Real + Default>(
            g: &[R],
            y: &[R],
            len: usize,
            out: &mut [R],
            log: bool,
        ) {
            if log {
                if let (Some(g), Some(y), Some(o)) = (as_f32(g), as_f32(y), as_f32_mut(out)) {
                    return log_softmax_backward_f32(g, y, len, o);
                }
            }
            softmax_backward_body(g, y, len, out, log)
        }

        /// `f(x)` into `o` for the 16-lane vectors of `x` (the last one partial, masked).
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        fn map_f32(x: &[f32], o: &mut [f32], f: impl Fn(usize, __m512) -> __m512) {
            let n = x.len().min(o.len());
            let (p, q) = (x.as_ptr(), o.as_mut_ptr());
            let mut i = 0;
            while i < n {
                let k = first(n - i);
                // SAFETY: the masked load and store touch only lanes j < min(16, n - i), that
                // is elements i + j < n of both slices.
                unsafe {
                    _mm512_mask_storeu_ps(q.add(i), k, f(i, _mm512_maskz_loadu_ps(k, p.add(i))))
                };
                i += 16;
            }
        }

        /// The row's largest value, NaNs ignored (a NaN still makes its row NaN through the
        /// exponentials and their sum, as the portable kernel's NaN shift does).
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        fn max_f32(x: &[f32]) -> f32 {
            let mut m = [_mm512_set1_ps(f32::NEG_INFINITY); 4];
            let mut chunks = x.chunks_exact(64);
            for c in &mut chunks {
                for (j, m) in m.iter_mut().enumerate() {
                    // SAFETY: 16 * j + 16 <= 64, the chunk's length.
                    *m = _mm512_max_ps(*m, unsafe { _mm512_loadu_ps(c.as_ptr().add(16 * j)) });
                }
            }
            let m = _mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3]));
            let mut best = _mm512_reduce_max_ps(m);
            for &v in chunks.remainder() {
                best = if v > best { v } else { best };
            }
            best
        }

        /// `exp_sum` for f32: exp(x - shift) written to `o` when `WRITE`, and summed in
        /// `fold_lanes`' 64 lanes (four vectors), merge order and one-by-one tail.
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        fn exp_sum_f32<const WRITE: bool>(x: &[f32], shift: f32, o: &mut [f32]) -> f32 {
            let n = x.len().min(o.len());
            let (p, q) = (x.as_ptr(), o.as_mut_ptr());
            let sh = _mm512_set1_ps(shift);
            let mut acc = [_mm512_setzero_ps(); 4];
            let mut i = 0;
            while i + 64 <= n {
                for (j, a) in acc.iter_mut().enumerate() {
                    // SAFETY: i + 16 * j + 16 <= i + 64 <= n, inside both slices.
                    let e = exp_ps(_mm512_sub_ps(
                        unsafe { _mm512_loadu_ps(p.add(i + 16 * j)) },
                        sh,
                    ));
                    if WRITE {
                        // SAFETY: as the load.
                        unsafe { _mm512_storeu_ps(q.add(i + 16 * j), e) };
                    }
                    *a = _mm512_add_ps(*a, e);
                }
                i += 64;
            }
            // lanes k and k + 32 (vectors 0 and 2, 1 and 3), then the two halves
            let acc = _mm512_add_ps(_mm512_add_ps(acc[0], acc[2]), _mm512_add_ps(acc[1], acc[3]));
            let mut s = sum_halving(acc);
            while i < n {
                let k = first(n - i);
                // SAFETY: the masked load (and store) touch only elements i + j < n.
                let e = exp_ps(_mm512_sub_ps(
                    unsafe { _mm512_maskz_loadu_ps(k, p.add(i)) },
                    sh,
                ));
                if WRITE {
                    // SAFETY: as the load.
                    unsafe { _mm512_mask_storeu_ps(q.add(i), k, e) };
                }
                let mut lanes = [0.0f32; 16];
                // SAFETY: `lanes` holds 16 f32s.
                unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), e) };
                for &v in &lanes[..(n - i).min(16)] {
                    s += v;
                }
                i += 16;
            }
            s
        }

        /// `softmax_rows_body` for f32 rows, the same bits.
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        fn softmax_rows_f32(src: &[f32], len: usize, out: &mut [f32], log: bool) {
            for (x, o) in src.chunks_exact(len).zip(out.chunks_exact_mut(len)) {
                let m = max_f32(x);
                let shift = if m == f32::NEG_INFINITY { 0.0 } else { m };
                if log {
                    let ls = _mm512_set1_ps(log_f32(exp_sum_f32::<false>(x, shift, o)) + shift);
                    map_f32(x, o, |_, v| _mm512_sub_ps(v, ls));
                } else {
                    let inv = _mm512_set1_ps(1.0 / exp_sum_f32::<true>(x, shift, o));
                    let e = o.as_mut_ptr();
                    let n = o.len();
                    let mut i = 0;
                    while i < n {
                        let k = first(n - i);
                        // SAFETY: the masked load and store touch only elements i + j < n of `o`.
                        unsafe {
                            let v = _mm512_maskz_loadu_ps(k, e.add(i));
                            _mm512_mask_storeu_ps(e.add(i), k, _mm512_mul_ps(v, inv));
                        }
                        i += 16;
                    }
                }
            }
        }

        /// The log_softmax backward rows for f32: `g - exp(y) * sum(g)`, the same bits as
        /// `softmax_backward_body`.
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        fn log_softmax_backward_f32(g: &[f32], y: &[f32], len: usize, out: &mut [f32]) {
            let rows = out
                .chunks_exact_mut(len)
                .zip(g.chunks_exact(len).zip(y.chunks_exact(len)));
            for (o, (g, y)) in rows {
                let s = _mm512_set1_ps(fold_lanes(g, &SumOf));
                let gp = g.as_ptr();
                map_f32(y, o, |i, y| {
                    // SAFETY: `map_f32` passes the offset i of a vector of `y` (len elements),
                    // and g has len elements too; the masked load reads only elements < len.
                    let g = unsafe { _mm512_maskz_loadu_ps(first(len - i), gp.add(i)) };
                    _mm512_sub_ps(g, _mm512_mul_ps(exp_ps(y), s))
                });
            }
        }
    }
}

/// Reduces the middle axis of a contiguous `(outer, red, inner)` buffer with `r`: rows
/// (`inner == 1`) folded with independent lanes, otherwise rows of `inner` accumulators; split
/// across threads by `outer` when large. `red` must not be 0.
/// `reduce` for reductions whose result differs from their accumulator: rows only.
pub fn reduce_rows<T, R>(data: &[T], rows: usize, len: usize, r: &R) -> Result<Vec<R::Out>>
where
    T: Copy + Send + Sync,
    R: Reduce<T>,
{
    let mut out = alloc::<R::Out>(rows)?;
    out.resize(rows, r.finish(r.init(), &[]));
    let data = &data[..rows * len];
    let run = |start: usize, o: &mut [R::Out]| {
        let d = &data[start * len..(start + o.len()) * len];
        best!(rows_body, rows_avx512, rows_avx2; d, len, o, r)
    };
    if len > 0 && rows > 1 && par_ok(rows * len, PAR_THRESHOLD) {
        super::parallel::for_each_block(&mut out, &run);
    } else if len > 0 {
        run(0, &mut out);
    }
    Ok(out)
}

pub fn reduce<T, R>(
    data: &[T],
    outer: usize,
    red: usize,
    inner: usize,
    r: &R,
) -> Result<Vec<R::Out>>
where
    T: Copy + Send + Sync,
    R: Reduce<T, Out = <R as Reduce<T>>::Acc>,
{
    // one long row (a full reduction): pieces on all threads, then their results merged
    const PIECE: usize = 1 << 16;
    if outer == 1 && inner == 1 && red >= 2 * PIECE && par_ok(red, PAR_THRESHOLD) {
        let pieces = red / PIECE;
        let parts = reduce_rows(data, pieces, PIECE, r)?;
        let tail = fold_lanes(&data[pieces * PIECE..red], r);
        let all = parts.into_iter().fold(tail, |a, p| r.merge(a, p));
        return Ok(vec![r.finish(all, &[])]);
    }
    if inner == 1 {
        return reduce_rows(data, outer, red, r);
    }
    let mut out = alloc::<R::Acc>(outer * inner)?;
    out.resize(outer * inner, r.init());
    if inner == 0 {
        return Ok(out);
    }
    let data = &data[..outer * red * inner];
    let run = |start: usize, dst: &mut [R::Acc]| {
        let o0 = start / inner;
        let d = &data[o0 * red * inner..(o0 + dst.len() / inner) * red * inner];
        best!(cols_body, cols_avx512, cols_avx2; d, red, inner, dst, r)
    };
    let parallel = par_ok(outer * red * inner, PAR_THRESHOLD);
    in_parts(&mut out, inner, parallel, &run);
    Ok(out)
}

/// The sum of the deviations `v - c` (or of their squares, `SQUARE`) in f64, of f32 or f64
/// elements: with c = 0 the first pass of a variance, with c the mean the second.
pub struct DevSum<const SQUARE: bool>(pub f64);
impl<T: Copy + Into<f64> + Send + Sync, const SQUARE: bool> Reduce<T> for DevSum<SQUARE> {
    type Acc = f64;
    type Out = f64;
    #[inline(always)]
    fn init(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn step(&self, a: f64, v: T) -> f64 {
        let d = v.into() - self.0;
        a + if SQUARE { d * d } else { d }
    }
    #[inline(always)]
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: f64, _: &[T]) -> f64 {
        a
    }
}

/// Each row's mean and sum of squared deviations, two passes over the row (`DevSum<false>`
/// from 0, then `DevSum<true>` from the mean, in `finish`).
struct Deviations;
impl<T: Copy + Into<f64> + Send + Sync> Reduce<T> for Deviations {
    type Acc = f64;
    type Out = (f64, f64);
    #[inline(always)]
    fn init(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn step(&self, a: f64, v: T) -> f64 {
        DevSum::<false>(0.0).step(a, v)
    }
    #[inline(always)]
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn finish(&self, sum: f64, row: &[T]) -> (f64, f64) {
        let mean = sum / row.len() as f64;
        (mean, fold_lanes(row, &DevSum::<true>(mean)))
    }
}

/// The mean and the sum of squared deviations of each of `rows` rows of `len` elements, in
/// f64 (the variance's parts, as PyTorch's CPU var accumulates in double). One row (a whole
/// tensor) is split across threads, a pass at a time; several rows are shared out.
pub fn deviations<T: Copy + Into<f64> + Send + Sync>(
    data: &[T],
    rows: usize,
    len: usize,
) -> Result<(Vec<f64>, Vec<f64>)> {
    if rows == 1 {
        let mean = reduce(data, 1, len, 1, &DevSum::<false>(0.0))?[0] / len as f64;
        let m2 = reduce(data, 1, len, 1, &DevSum::<true>(mean))?[0];
        return Ok((vec![mean], vec![m2]));
    }
    Ok(reduce_rows(data, rows, len, &Deviations)?
        .into_iter()
        .unzip())
}

/// Sum, accumulated in the element type (as PyTorch's CPU sum for float types).
pub struct SumOf;
impl<T: Copy + Default + Send + Sync + std::ops::Add<Output = T>> Reduce<T> for SumOf {
    type Acc = T;
    type Out = T;
    #[inline(always)]
    fn init(&self) -> T {
        T::default()
    }
    #[inline(always)]
    fn step(&self, a: T, v: T) -> T {
        a + v
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: T, _: &[T]) -> T {
        a
    }
}

/// Sum with NaN counted as zero (`nansum`), accumulated in the element type: a compare and a
/// blend per element, vectorised as `SumOf`.
pub struct NanSumOf;
impl<T: Copy + Default + Send + Sync + PartialEq + std::ops::Add<Output = T>> Reduce<T>
    for NanSumOf
{
    type Acc = T;
    type Out = T;
    #[inline(always)]
    fn init(&self) -> T {
        T::default()
    }
    #[inline(always)]
    #[allow(clippy::eq_op)] // v != v: NaN
    fn step(&self, a: T, v: T) -> T {
        a + if v == v { v } else { T::default() }
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: T, _: &[T]) -> T {
        a
    }
}

/// Sum (`Wrapping(i64::wrapping_add, 0)`) or product (`Wrapping(i64::wrapping_mul, 1)`) of
/// int64 elements, wrapping on overflow as PyTorch's.
pub struct Wrapping(pub fn(i64, i64) -> i64, pub i64);
impl Reduce<i64> for Wrapping {
    type Acc = i64;
    type Out = i64;
    #[inline(always)]
    fn init(&self) -> i64 {
        self.1
    }
    #[inline(always)]
    fn step(&self, a: i64, v: i64) -> i64 {
        (self.0)(a, v)
    }
    #[inline(always)]
    fn merge(&self, a: i64, b: i64) -> i64 {
        (self.0)(a, b)
    }
    #[inline(always)]
    fn finish(&self, a: i64, _: &[i64]) -> i64 {
        a
    }
}

/// Product of float elements, accumulated in the element type (PyTorch's CPU prod).
pub struct ProdOf;
impl<R: super::simd::Real> Reduce<R> for ProdOf {
    type Acc = R;
    type Out = R;
    #[inline(always)]
    fn init(&self) -> R {
        R::c(1.0)
    }
    #[inline(always)]
    fn step(&self, a: R, v: R) -> R {
        a * v
    }
    #[inline(always)]
    fn merge(&self, a: R, b: R) -> R {
        a * b
    }
    #[inline(always)]
    fn finish(&self, a: R, _: &[R]) -> R {
        a
    }
}

/// Sum and sum of squares, accumulated in f64 (batch norm statistics in one pass).
pub struct Moments;
impl<T: crate::storage::Elem> Reduce<T> for Moments {
    type Acc = (f64, f64);
    type Out = (f64, f64);
    #[inline(always)]
    fn init(&self) -> (f64, f64) {
        (0.0, 0.0)
    }
    #[inline(always)]
    fn step(&self, a: (f64, f64), v: T) -> (f64, f64) {
        let v = v.to_f64();
        (a.0 + v, a.1 + v * v)
    }
    #[inline(always)]
    fn merge(&self, a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
        (a.0 + b.0, a.1 + b.1)
    }
    #[inline(always)]
    fn finish(&self, a: (f64, f64), _: &[T]) -> (f64, f64) {
        a
    }
}

/// Largest (or, with `max == false`, smallest) value; NaN wins, as in PyTorch.
pub struct Extreme<T> {
    pub max: bool,
    /// the identity: -inf / +inf for floats, the type's min / max for ints
    pub init: T,
}
impl<T: Copy + PartialOrd + Send + Sync> Extreme<T> {
    #[inline(always)]
    fn pick(&self, a: T, v: T) -> T {
        #[allow(clippy::eq_op)]
        let nan = v != v;
        let better = if self.max { v > a } else { v < a };
        if better || nan {
            v
        } else {
            a
        }
    }
}
impl<T: Copy + PartialOrd + Send + Sync> Reduce<T> for Extreme<T> {
    type Acc = T;
    type Out = T;
    #[inline(always)]
    fn init(&self) -> T {
        self.init
    }
    #[inline(always)]
    fn step(&self, a: T, v: T) -> T {
        self.pick(a, v)
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        self.pick(a, b)
    }
    #[inline(always)]
    fn finish(&self, a: T, _: &[T]) -> T {
        a
    }
}

/// The extreme value of a row and the index of its first occurrence (of the first NaN, when
/// there is one), as PyTorch's max(dim) / argmax: one vectorised pass for the value, then a
/// scan that stops at it.
pub struct ArgExtreme<T>(pub Extreme<T>);
impl<T: Copy + PartialOrd + Send + Sync> Reduce<T> for ArgExtreme<T> {
    type Acc = T;
    type Out = (T, i64);
    #[inline(always)]
    fn init(&self) -> T {
        self.0.init
    }
    #[inline(always)]
    fn step(&self, a: T, v: T) -> T {
        self.0.pick(a, v)
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        self.0.pick(a, b)
    }
    #[inline(always)]
    fn finish(&self, m: T, row: &[T]) -> (T, i64) {
        #[allow(clippy::eq_op)]
        let hit = |v: T| if m != m { v != v } else { v == m };
        // 16 at a time: a vectorised test per chunk, the exact place only in the chunk found
        let chunks = row.chunks_exact(LANES);
        let rest = chunks.remainder();
        for (ci, c) in chunks.enumerate() {
            if c.iter().fold(false, |f, &v| f | hit(v)) {
                let at = c.iter().position(|&v| hit(v)).unwrap_or(0);
                return (m, (ci * LANES + at) as i64);
            }
        }
        let at = rest.iter().position(|&v| hit(v)).unwrap_or(0);
        (m, (row.len() - rest.len() + at) as i64)
    }
}

/// log(sum(exp(row))) of float rows: the max in one pass, the shifted exp sum in a second (an
/// infinite max is used unshifted, so -inf rows stay -inf and +inf rows +inf).
pub struct LogSumExp;
impl<R: super::simd::Real + PartialOrd + Default> Reduce<R> for LogSumExp {
    type Acc = R;
    type Out = R;
    #[inline(always)]
    fn init(&self) -> R {
        R::c(f64::NEG_INFINITY)
    }
    #[inline(always)]
    fn step(&self, a: R, v: R) -> R {
        #[allow(clippy::eq_op)]
        let nan = v != v;
        if v > a || nan {
            v
        } else {
            a
        }
    }
    #[inline(always)]
    fn merge(&self, a: R, b: R) -> R {
        self.step(a, b)
    }
    #[inline(always)]
    fn finish(&self, m: R, row: &[R]) -> R {
        let inf = R::c(f64::INFINITY);
        let finite = m < inf && m > -inf;
        let shift = if finite { m } else { R::c(0.0) };
        let s = fold_lanes(row, &ExpSum(shift));
        s.ln() + shift
    }
}

/// sum(exp(v - shift)), the second pass of `LogSumExp`.
struct ExpSum<R>(R);
impl<R: super::simd::Real + Default> Reduce<R> for ExpSum<R> {
    type Acc = R;
    type Out = R;
    #[inline(always)]
    fn init(&self) -> R {
        R::c(0.0)
    }
    #[inline(always)]
    fn step(&self, a: R, v: R) -> R {
        a + (v - self.0).exp()
    }
    #[inline(always)]
    fn merge(&self, a: R, b: R) -> R {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: R, _: &[R]) -> R {
        a
    }
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

/// The sum of `exp(x - shift)`, folded as `fold_lanes` folds (the same lanes, merges and
/// order), with the exponentials written to `o` when `WRITE`, in one pass.
#[inline(always)]
fn exp_sum<const WRITE: bool, R: super::simd::Real + Default>(x: &[R], shift: R, o: &mut [R]) -> R {
    let mut acc = [R::default(); LANES];
    let xs = x.chunks_exact(LANES);
    let x_rest = xs.remainder();
    let mut os = o.chunks_exact_mut(LANES);
    for (oc, xc) in (&mut os).zip(xs) {
        for i in 0..LANES {
            let e = (xc[i] - shift).exp();
            if WRITE {
                oc[i] = e;
            }
            acc[i] = acc[i] + e;
        }
    }
    let mut s = merge_lanes(acc, |a, b| a + b);
    for (o, &v) in os.into_remainder().iter_mut().zip(x_rest) {
        let e = (v - shift).exp();
        if WRITE {
            *o = e;
        }
        s = s + e;
    }
    s
}

/// Softmax (or log_softmax) of each contiguous row of `len`: max-shifted (a row whose max is
/// -inf is shifted by 0, as PyTorch), exponentials written and summed, then scaled.
#[inline(always)]
fn softmax_rows_body<R: super::simd::Real + PartialOrd + Default>(
    src: &[R],
    len: usize,
    out: &mut [R],
    log: bool,
) {
    for (x, o) in src.chunks_exact(len).zip(out.chunks_exact_mut(len)) {
        let m = fold_lanes(x, &LogSumExp); // its fold is the NaN-propagating max
        let shift = if m == R::c(f64::NEG_INFINITY) {
            R::c(0.0)
        } else {
            m
        };
        let s = if log {
            exp_sum::<false, R>(x, shift, o)
        } else {
            exp_sum::<true, R>(x, shift, o)
        };
        if log {
            let ls = s.ln() + shift;
            for (o, &v) in o.iter_mut().zip(x) {
                *o = v - ls;
            }
        } else {
            let inv = R::c(1.0) / s;
            o.iter_mut().for_each(|v| *v = *v * inv);
        }
    }
}

/// Softmax (or log_softmax) of each contiguous row of `len` values; rows in parallel when the
/// tensor is large.
pub fn softmax_rows<R>(src: &[R], len: usize, log: bool) -> Result<Vec<R>>
where
    R: super::simd::Real + PartialOrd + Default,
{
    let n = src.len();
    if len == 0 {
        return Ok(vec![R::default(); n]);
    }
    let run = |start: usize, o: &mut [R]| {
        let x = &src[start..start + o.len()];
        best!(softmax_rows_body, softmax_rows_avx512, softmax_rows_avx2; x, len, o, log)
    };
    new_in_parts(
        n,
        len,
        super::par_ok(n, super::PAR_THRESHOLD_COSTLY),
        R::default(),
        &run,
    )
    .map(|(out, _)| out)
}

/// Softmax (or log_softmax) over the middle axis of a contiguous `(outer, red, inner)` buffer
/// with `inner > 1`: vectorised across `inner`, one pass for the maxima, one for the sums of
/// exponentials and one to write.
#[inline(always)]
fn softmax_cols_body<R: super::simd::Real + PartialOrd + Default>(
    src: &[R],
    red: usize,
    inner: usize,
    out: &mut [R],
    log: bool,
) {
    let mut m = vec![R::c(f64::NEG_INFINITY); inner];
    let mut sum = vec![R::default(); inner];
    for (x, o) in src
        .chunks_exact(red * inner)
        .zip(out.chunks_exact_mut(red * inner))
    {
        m.iter_mut().for_each(|v| *v = R::c(f64::NEG_INFINITY));
        for row in x.chunks_exact(inner) {
            for (m, &v) in m.iter_mut().zip(row) {
                #[allow(clippy::eq_op)]
                let nan = v != v;
                *m = if v > *m || nan { v } else { *m };
            }
        }
        // a max of -inf shifts by 0, as in the row kernel
        let neg_inf = R::c(f64::NEG_INFINITY);
        m.iter_mut().for_each(|v| {
            if *v == neg_inf {
                *v = R::c(0.0)
            }
        });
        sum.iter_mut().for_each(|v| *v = R::default());
        for row in x.chunks_exact(inner) {
            for ((s, &m), &v) in sum.iter_mut().zip(&m).zip(row) {
                *s = *s + (v - m).exp();
            }
        }
        if log {
            sum.iter_mut().zip(&m).for_each(|(s, &m)| *s = s.ln() + m);
            for (row, o) in x.chunks_exact(inner).zip(o.chunks_exact_mut(inner)) {
                for ((o, &v), &ls) in o.iter_mut().zip(row).zip(&sum) {
                    *o = v - ls;
                }
            }
        } else {
            sum.iter_mut().for_each(|s| *s = R::c(1.0) / *s);
            for (row, o) in x.chunks_exact(inner).zip(o.chunks_exact_mut(inner)) {
                for (((o, &v), &m), &inv) in o.iter_mut().zip(row).zip(&m).zip(&sum) {
                    *o = (v - m).exp() * inv;
                }
            }
        }
    }
}

/// Softmax (or log_softmax) over the middle axis of a contiguous `(outer, red, inner)` buffer,
/// `inner > 1` (a dim that is not the last); outer slices in parallel when large.
pub fn softmax_cols<R>(
    src: &[R],
    outer: usize,
    red: usize,
    inner: usize,
    log: bool,
) -> Result<Vec<R>>
where
    R: super::simd::Real + PartialOrd + Default,
{
    let n = outer * red * inner;
    if n == 0 {
        return Ok(vec![R::default(); n]);
    }
    let run = |start: usize, dst: &mut [R]| {
        let src = &src[start..start + dst.len()];
        best!(softmax_cols_body, softmax_cols_avx512, softmax_cols_avx2; src, red, inner, dst, log)
    };
    new_in_parts(
        n,
        red * inner,
        super::par_ok(n, super::PAR_THRESHOLD_COSTLY),
        R::default(),
        &run,
    )
    .map(|(out, _)| out)
}

/// `softmax_backward_rows` over whole rows of `len` of `g`, `y` and `out`.
#[inline(always)]
fn softmax_backward_body<R: super::simd::Real + Default>(
    g: &[R],
    y: &[R],
    len: usize,
    out: &mut [R],
    log: bool,
) {
    let rows = out
        .chunks_exact_mut(len)
        .zip(g.chunks_exact(len).zip(y.chunks_exact(len)));
    for (o, (g, y)) in rows {
        if log {
            let s = fold_lanes(g, &SumOf);
            for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
                *o = g - y.exp() * s;
            }
        } else {
            for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
                *o = g * y;
            }
            let s = fold_lanes(o, &SumOf);
            for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
                *o = y * (g - s);
            }
        }
    }
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
    if len == 0 {
        return Ok(vec![R::default(); n]);
    }
    let run = |start: usize, o: &mut [R]| {
        let (g, y) = (&g[start..start + o.len()], &y[start..start + o.len()]);
        best!(softmax_backward_body, softmax_backward_avx512, softmax_backward_avx2; g, y, len, o, log)
    };
    new_in_parts(
        n,
        len,
        super::par_ok(n, super::PAR_THRESHOLD_COSTLY),
        R::default(),
        &run,
    )
    .map(|(out, _)| out)
}

/// The running sums of the row `x` into `o`, accumulated by `add` from `zero` and written
/// through `put`: one chain of dependent additions (a row cut into segments scanned side by
/// side measured slower: its strided reads and writes cost more than the chain).
#[inline(always)]
fn scan_row<T: Copy, A: Copy>(
    x: &[T],
    o: &mut [T],
    zero: A,
    add: impl Fn(A, T) -> A,
    put: impl Fn(A) -> T,
) {
    let mut a = zero;
    for (o, &v) in o.iter_mut().zip(x) {
        a = add(a, v);
        *o = put(a);
    }
}

/// Running sums along the middle axis of a contiguous (outer, red, inner) buffer, whole rows
/// of `inner` at a time (vectorised across them): in f64 for floats (PyTorch's accumulation
/// type), wrapping int64 otherwise (ints and bools).
pub fn cumsum<T: Elem>(s: &[T], red: usize, inner: usize) -> Vec<T> {
    let mut out: Vec<T> = s.to_vec();
    let float = T::DTYPE.is_float();
    if inner == 1 && red > 0 {
        // whole rows, split across threads
        let run = |start: usize, o: &mut [T]| {
            let x = &s[start..start + o.len()];
            for (x, o) in x.chunks_exact(red).zip(o.chunks_exact_mut(red)) {
                if float {
                    scan_row(x, o, 0.0f64, |a, v| a + v.to_f64(), T::from_f64);
                } else {
                    scan_row(x, o, 0i64, |a, v| a.wrapping_add(v.to_i64()), T::from_i64);
                }
            }
        };
        in_parts(&mut out, red, par_ok(s.len(), PAR_THRESHOLD), &run);
        return out;
    }
    let mut acc = vec![0.0f64; inner];
    let mut iacc = vec![0i64; inner];
    let slice = (red * inner).max(1); // an empty tensor has no slices
    for (x, o) in s.chunks_exact(slice).zip(out.chunks_exact_mut(slice)) {
        acc.iter_mut().for_each(|a| *a = 0.0);
        iacc.iter_mut().for_each(|a| *a = 0);
        for (xr, or) in x
            .chunks_exact(inner.max(1))
            .zip(o.chunks_exact_mut(inner.max(1)))
        {
            if float {
                for ((a, &v), o) in acc.iter_mut().zip(xr).zip(or.iter_mut()) {
                    *a += v.to_f64();
                    *o = T::from_f64(*a);
                }
            } else {
                for ((a, &v), o) in iacc.iter_mut().zip(xr).zip(or.iter_mut()) {
                    *a = a.wrapping_add(v.to_i64());
                    *o = T::from_i64(*a);
                }
            }
        }
    }
    out
}

/// For each element of a row-major buffer of `shape`, the product of the other elements of its
/// reduction group (the elements sharing its indices outside the reduced dims `rd`).
pub fn prod_others(vals: &[f64], shape: &[usize], rd: &[usize]) -> Result<Vec<f64>> {
    let n = vals.len();
    let strides = crate::layout::contiguous_strides(shape);
    let mut groups: std::collections::HashMap<Vec<usize>, Vec<usize>> = Default::default();
    for i in 0..n {
        let key: Vec<usize> = (0..shape.len())
            .filter(|d| !rd.contains(d))
            .map(|d| (i / strides[d]) % shape[d])
            .collect();
        groups.entry(key).or_default().push(i);
    }
    let mut out = crate::storage::try_vec::<f64>(n)?;
    for idx in groups.values() {
        for &i in idx {
            out[i] = idx.iter().filter(|&&j| j != i).map(|&j| vals[j]).product();
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cumsum_of_rows_matches_the_serial_sums() {
        for n in [1usize, 511, 512, 1003, 4096 + 7] {
            let x: Vec<f32> = (0..2 * n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.25)
                .collect();
            let got = cumsum(&x, n, 1);
            let xi: Vec<i64> = (0..2 * n as i64).map(|i| i * 7919 % 1001 - 500).collect();
            let goti = cumsum(&xi, n, 1);
            for r in 0..2 {
                let (mut a, mut ai) = (0.0f64, 0i64);
                for i in r * n..(r + 1) * n {
                    a += x[i] as f64;
                    ai += xi[i];
                    assert_eq!(got[i], a as f32, "n {n} i {i}");
                    assert_eq!(goti[i], ai);
                }
            }
        }
    }

    #[test]
    fn cumsum_along_the_middle_axis() {
        // (2, 3, 2), running sums over axis 1
        let d: Vec<f64> = (0..12).map(|x| x as f64).collect();
        assert_eq!(
            cumsum(&d, 3, 2),
            vec![0., 1., 2., 4., 6., 9., 6., 7., 14., 16., 24., 27.]
        );
        // f32 accumulates in f64: 1 + 1e8 - 1e8 would lose the 1 in f32 sums
        let f = [1.0f32, 1e8, -1e8];
        assert_eq!(cumsum(&f, 3, 1), vec![1.0, 1e8, 1.0]);
        // int64 wraps; bools count as 0 / 1 (the op casts them to int64 first)
        assert_eq!(
            cumsum(&[i64::MAX, 1, 1], 3, 1),
            vec![i64::MAX, i64::MIN, i64::MIN + 1]
        );
        assert!(cumsum::<f64>(&[], 0, 4).is_empty());
    }

    #[test]
    fn prod_others_per_group() {
        // (2, 3) reduced over dim 1: rows are the groups
        let x = [1.0, 2.0, 3.0, 4.0, 0.0, 5.0];
        assert_eq!(
            prod_others(&x, &[2, 3], &[1]).unwrap(),
            vec![6.0, 3.0, 2.0, 0.0, 20.0, 0.0]
        );
        // over dim 0: columns
        assert_eq!(
            prod_others(&x, &[2, 3], &[0]).unwrap(),
            vec![4.0, 0.0, 5.0, 1.0, 2.0, 3.0]
        );
        // over everything: one group
        assert_eq!(
            prod_others(&[2.0, 3.0, 4.0], &[3], &[0]).unwrap(),
            vec![12.0, 8.0, 6.0]
        );
    }

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
        let out = softmax_rows(&src, len, false).unwrap();
        for r in 0..rows {
            let s: f32 = out[r * len..(r + 1) * len].iter().sum();
            assert!((s - 1.0).abs() < 1e-4, "row {r}: {s}");
        }
        let lo = softmax_rows(&src, len, true).unwrap();
        assert!((lo[5].exp() - out[5]).abs() < 1e-6);
        let inf = softmax_rows(&[f32::NEG_INFINITY, 0.0], 2, false).unwrap();
        assert_eq!(inf, vec![0.0, 1.0]);
    }

    fn avx512() -> bool {
        crate::kernels::simd::x86::level() == crate::kernels::simd::x86::Level::Avx512
    }

    fn same_bits(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
    }

    #[test]
    fn explicit_avx512_softmax_rows_are_the_portable_ones_bit_for_bit() {
        if !avx512() {
            eprintln!("skipped: this CPU (or FERROGRAD_SIMD) runs no AVX-512 code");
            return;
        }
        let mut seed = 12345u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) * 40.0 - 20.0
        };
        for len in [1, 2, 15, 16, 17, 63, 64, 65, 100, 128, 130, 257, 1000] {
            let mut x: Vec<f32> = (0..6 * len).map(|_| next()).collect();
            // rows 2..6: a -inf, all -inf, a NaN, a +inf
            x[2 * len] = f32::NEG_INFINITY;
            x[3 * len..4 * len].fill(f32::NEG_INFINITY);
            x[4 * len + len / 2] = f32::NAN;
            x[5 * len + len / 3] = f32::INFINITY;
            let g: Vec<f32> = (0..6 * len).map(|_| next()).collect();
            for log in [false, true] {
                let (mut want, mut got) = (vec![0.0; x.len()], vec![0.0; x.len()]);
                softmax_rows_body(&x, len, &mut want, log);
                // SAFETY: level() reported AVX-512 (avx512f, avx512dq, avx2 and fma detected).
                unsafe { wide::softmax_rows_avx512(&x, len, &mut got, log) };
                assert!(same_bits(&want, &got), "forward len {len} log {log}");
                let y = want;
                let (mut want, mut got) = (vec![0.0; x.len()], vec![0.0; x.len()]);
                softmax_backward_body(&g, &y, len, &mut want, log);
                // SAFETY: as above.
                unsafe { wide::softmax_backward_avx512(&g, &y, len, &mut got, log) };
                assert!(same_bits(&want, &got), "backward len {len} log {log}");
            }
        }
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
