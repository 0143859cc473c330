//! Fused scaled dot-product attention over contiguous (batch*heads, len, dim) buffers: one
//! (batch, head) slice per task, gemm for the two products and the softmax in between.

use super::optim::Real;
use crate::storage::Elem;

/// Calls the slice kernel `$base` compiled for the best instruction set the CPU has
/// (`$avx512` / `$avx2`, its `#[target_feature]` copies in `wide`).
macro_rules! best {
    ($base:ident, $avx512:ident, $avx2:ident; $($arg:expr),*) => {{
        #[cfg(target_arch = "x86_64")]
        match super::simd::x86::level() {
            // SAFETY: level() returned Avx512 only after is_x86_feature_detected! confirmed
            // avx512f, avx512dq, avx2 and fma, the features the function enables.
            super::simd::x86::Level::Avx512 => unsafe { wide::$avx512($($arg),*) },
            // SAFETY: level() returned Avx2 only after detecting avx2 and fma.
            super::simd::x86::Level::Avx2 => unsafe { wide::$avx2($($arg),*) },
            super::simd::x86::Level::Base => $base($($arg),*),
        }
        #[cfg(not(target_arch = "x86_64"))]
        $base($($arg),*)
    }};
}

/// Sizes of one attention call: `bh` slices of queries (l x e), keys (s x e), values (s x ev).
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub bh: usize,
    pub l: usize,
    pub s: usize,
    pub e: usize,
    pub ev: usize,
}

/// Splits `0..n` over the helper threads; `f(first, last)` runs on each range.
fn over(n: usize, work: usize, f: &(dyn Fn(usize, usize) + Sync)) {
    let threads = super::num_threads().min(n).max(1);
    if threads <= 1 || !super::par_ok(work, super::matmul::GEMM_PAR_THRESHOLD) {
        f(0, n);
        return;
    }
    let per = n.div_ceil(threads);
    super::pool::run_parts(threads, &|p| f((p * per).min(n), ((p + 1) * per).min(n)));
}

/// A raw pointer to an output buffer whose disjoint slices the tasks write.
#[derive(Clone, Copy)]
struct Out<T>(*mut T);
// SAFETY: every task writes only the slices of the (batch, head) indices it was given, and the
// ranges given to tasks are disjoint, so no element is written twice or read concurrently.
unsafe impl<T: Send> Send for Out<T> {}
unsafe impl<T: Send> Sync for Out<T> {}

impl<T> Out<T> {
    /// The `len` elements at `start`.
    ///
    /// # Safety
    /// `start + len` is within the buffer, and no other live slice overlaps this one.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice(&self, start: usize, len: usize) -> &mut [T] {
        // SAFETY: as documented above.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(start), len) }
    }
}

/// `sum a_i * b_i` over 8 independent lanes (vectorises).
#[inline(always)]
fn dot<T: Real>(a: &[T], b: &[T]) -> T {
    let mut acc = [T::of(0.0); 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let mut rest = T::of(0.0);
    for (&x, &y) in ca.remainder().iter().zip(cb.remainder()) {
        rest = rest + x * y;
    }
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] = acc[i] + x[i] * y[i];
        }
    }
    let mut s = rest;
    for v in acc {
        s = s + v;
    }
    s
}

/// `y += a * x`
#[inline(always)]
fn axpy<T: Real>(y: &mut [T], a: T, x: &[T]) {
    for (d, &v) in y.iter_mut().zip(x) {
        *d = *d + a * v;
    }
}

/// `P = softmax(q k^T * scale + mask)` (rows where every score is -inf give zeros) and
/// `O = P v`. `mask` is the additive mask of every slice (bh x l x s) or None; with `causal` the
/// scores above the diagonal are -inf. Returns (O, P). The products are dot products and
/// axpys over the head dim: on attention-sized slices (64 x 32) they beat gemm calls, whose
/// per-call cost dominates there.
pub fn forward<T: Real + Elem>(
    q: &[T],
    k: &[T],
    v: &[T],
    d: Dims,
    scale: f64,
    mask: Option<&[T]>,
    causal: bool,
) -> (Vec<T>, Vec<T>) {
    let mut o = vec![T::of(0.0); d.bh * d.l * d.ev];
    let mut p = vec![T::of(0.0); d.bh * d.l * d.s];
    let (po, pp) = (Out(o.as_mut_ptr()), Out(p.as_mut_ptr()));
    let work = d.bh * d.l * d.s * (d.e + d.ev);
    over(d.bh, work, &|i0, i1| {
        for i in i0..i1 {
            // SAFETY: slice i of o and p belongs to this task alone (disjoint ranges).
            let (oi, pi) = unsafe {
                (
                    po.slice(i * d.l * d.ev, d.l * d.ev),
                    pp.slice(i * d.l * d.s, d.l * d.s),
                )
            };
            let mk = mask.map(|m| &m[i * d.l * d.s..(i + 1) * d.l * d.s]);
            let args = FwdSlice {
                q: &q[i * d.l * d.e..(i + 1) * d.l * d.e],
                k: &k[i * d.s * d.e..(i + 1) * d.s * d.e],
                v: &v[i * d.s * d.ev..(i + 1) * d.s * d.ev],
                mask: mk,
                d,
                scale,
                causal,
            };
            best!(fwd_slice, fwd_slice_avx512, fwd_slice_avx2; args, oi, pi);
        }
    });
    (o, p)
}

/// The backward of `forward` from the saved P: (dq, dk, dv).
#[allow(clippy::too_many_arguments)]
pub fn backward<T: Real + Elem>(
    q: &[T],
    k: &[T],
    v: &[T],
    p: &[T],
    go: &[T],
    d: Dims,
    scale: f64,
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let mut dq = vec![T::of(0.0); d.bh * d.l * d.e];
    let mut dk = vec![T::of(0.0); d.bh * d.s * d.e];
    let mut dv = vec![T::of(0.0); d.bh * d.s * d.ev];
    let (pq, pk, pv) = (
        Out(dq.as_mut_ptr()),
        Out(dk.as_mut_ptr()),
        Out(dv.as_mut_ptr()),
    );
    let work = 2 * d.bh * d.l * d.s * (d.e + d.ev);
    over(d.bh, work, &|i0, i1| {
        let mut ds = vec![T::of(0.0); d.s];
        for i in i0..i1 {
            // SAFETY: slice i of dq, dk and dv belongs to this task alone (disjoint ranges).
            let (dqi, dki, dvi) = unsafe {
                (
                    pq.slice(i * d.l * d.e, d.l * d.e),
                    pk.slice(i * d.s * d.e, d.s * d.e),
                    pv.slice(i * d.s * d.ev, d.s * d.ev),
                )
            };
            let args = BwdSlice {
                q: &q[i * d.l * d.e..(i + 1) * d.l * d.e],
                k: &k[i * d.s * d.e..(i + 1) * d.s * d.e],
                v: &v[i * d.s * d.ev..(i + 1) * d.s * d.ev],
                p: &p[i * d.l * d.s..(i + 1) * d.l * d.s],
                go: &go[i * d.l * d.ev..(i + 1) * d.l * d.ev],
                d,
                scale,
            };
            best!(bwd_slice, bwd_slice_avx512, bwd_slice_avx2; args, dqi, dki, dvi, &mut ds);
        }
    });
    (dq, dk, dv)
}

/// One (batch, head) slice of the forward.
struct FwdSlice<'a, T> {
    q: &'a [T],
    k: &'a [T],
    v: &'a [T],
    mask: Option<&'a [T]>,
    d: Dims,
    scale: f64,
    causal: bool,
}

#[inline(always)]
fn fwd_slice<T: Real>(a: FwdSlice<'_, T>, oi: &mut [T], pi: &mut [T]) {
    let d = a.d;
    let sc = T::of(a.scale);
    let ninf = T::of(f64::NEG_INFINITY);
    for r in 0..d.l {
        let row = &mut pi[r * d.s..(r + 1) * d.s];
        let qr = &a.q[r * d.e..(r + 1) * d.e];
        // causal: columns past the diagonal are masked
        let live = if a.causal { (r + 1).min(d.s) } else { d.s };
        for (c, x) in row[..live].iter_mut().enumerate() {
            *x = dot(qr, &a.k[c * d.e..(c + 1) * d.e]) * sc;
        }
        if let Some(mk) = a.mask {
            for (x, &b) in row[..live].iter_mut().zip(&mk[r * d.s..(r + 1) * d.s]) {
                *x = *x + b;
            }
        }
        row[live..].iter_mut().for_each(|x| *x = T::of(0.0));
        let mx = row[..live]
            .iter()
            .fold(ninf, |m, &b| if b > m { b } else { m });
        if mx == ninf {
            row.iter_mut().for_each(|x| *x = T::of(0.0));
            continue;
        }
        for x in row[..live].iter_mut() {
            *x = (*x - mx).exp();
        }
        let mut sum = T::of(0.0);
        for &x in row[..live].iter() {
            sum = sum + x;
        }
        let inv = T::of(1.0) / sum;
        row[..live].iter_mut().for_each(|x| *x = *x * inv);
        let or = &mut oi[r * d.ev..(r + 1) * d.ev];
        for (c, &pc) in row[..live].iter().enumerate() {
            if pc != T::of(0.0) {
                axpy(or, pc, &a.v[c * d.ev..(c + 1) * d.ev]);
            }
        }
    }
}

/// One (batch, head) slice of the backward.
struct BwdSlice<'a, T> {
    q: &'a [T],
    k: &'a [T],
    v: &'a [T],
    p: &'a [T],
    go: &'a [T],
    d: Dims,
    scale: f64,
}

#[inline(always)]
fn bwd_slice<T: Real>(
    a: BwdSlice<'_, T>,
    dqi: &mut [T],
    dki: &mut [T],
    dvi: &mut [T],
    ds: &mut [T],
) {
    let d = a.d;
    let sc = T::of(a.scale);
    for r in 0..d.l {
        let pr = &a.p[r * d.s..(r + 1) * d.s];
        let gr = &a.go[r * d.ev..(r + 1) * d.ev];
        // dv += P^T dO, dP = dO v^T (only where P is non-zero)
        let mut dotp = T::of(0.0);
        for c in 0..d.s {
            let pc = pr[c];
            if pc == T::of(0.0) {
                ds[c] = T::of(0.0);
                continue;
            }
            axpy(&mut dvi[c * d.ev..(c + 1) * d.ev], pc, gr);
            let dp = dot(gr, &a.v[c * d.ev..(c + 1) * d.ev]);
            ds[c] = dp;
            dotp = dotp + dp * pc;
        }
        // dS = P * (dP - rowsum(dP * P)) * scale; dq = dS k, dk += dS^T q
        let qr = &a.q[r * d.e..(r + 1) * d.e];
        let dqr = &mut dqi[r * d.e..(r + 1) * d.e];
        for c in 0..d.s {
            let pc = pr[c];
            if pc == T::of(0.0) {
                continue;
            }
            let s = pc * (ds[c] - dotp) * sc;
            axpy(dqr, s, &a.k[c * d.e..(c + 1) * d.e]);
            axpy(&mut dki[c * d.e..(c + 1) * d.e], s, qr);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use super::*;

    #[target_feature(enable = "avx2,fma")]
    pub fn fwd_slice_avx2<T: Real>(a: FwdSlice<'_, T>, oi: &mut [T], pi: &mut [T]) {
        fwd_slice(a, oi, pi)
    }
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub fn fwd_slice_avx512<T: Real>(a: FwdSlice<'_, T>, oi: &mut [T], pi: &mut [T]) {
        fwd_slice(a, oi, pi)
    }
    #[target_feature(enable = "avx2,fma")]
    pub fn bwd_slice_avx2<T: Real>(
        a: BwdSlice<'_, T>,
        dq: &mut [T],
        dk: &mut [T],
        dv: &mut [T],
        ds: &mut [T],
    ) {
        bwd_slice(a, dq, dk, dv, ds)
    }
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub fn bwd_slice_avx512<T: Real>(
        a: BwdSlice<'_, T>,
        dq: &mut [T],
        dk: &mut [T],
        dv: &mut [T],
        ds: &mut [T],
    ) {
        bwd_slice(a, dq, dk, dv, ds)
    }
}
