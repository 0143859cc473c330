//! Fused scaled dot-product attention over (batch, heads, len, dim) operands with contiguous
//! rows and any batch/head/row strides: one (batch, head) slice per task, register-tiled
//! products and the softmax in between.

use super::matmul::transpose_into;
use super::optim::Real;
use super::parallel::SharedOut;
use crate::error::Result;
use crate::storage::{try_vec, Elem};

/// Sizes of one attention call: `bh` slices (`heads` per batch) of queries (l x e), keys
/// (s x e), values (s x ev).
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub bh: usize,
    pub heads: usize,
    pub l: usize,
    pub s: usize,
    pub e: usize,
    pub ev: usize,
}

/// Where the rows of a (batch, head, row, col) operand lie: element (b, h, r, c) at
/// `offset + b*sb + h*sh + r*sr + c` (columns contiguous).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rows {
    pub offset: usize,
    pub sb: usize,
    pub sh: usize,
    pub sr: usize,
}

impl Rows {
    /// Dense (batch, heads, rows, cols) buffer whose dims (batch, head, row) are laid out in
    /// `order` (outermost first) and columns last: `[0, 1, 2]` is contiguous (B, H, L, C).
    pub fn dense(order: [usize; 3], sizes: [usize; 3], cols: usize) -> Rows {
        let mut strides = [0usize; 3];
        let mut acc = cols;
        for &dim in order.iter().rev() {
            strides[dim] = acc;
            acc *= sizes[dim].max(1);
        }
        Rows {
            offset: 0,
            sb: strides[0],
            sh: strides[1],
            sr: strides[2],
        }
    }

    /// Offset of slice `i` (= batch * heads + head).
    fn base(&self, i: usize, heads: usize) -> usize {
        self.offset + (i / heads) * self.sb + (i % heads) * self.sh
    }

    /// True when slice i is the `rows * cols` elements from `i * rows * cols`.
    fn is_contiguous(&self, heads: usize, rows: usize, cols: usize) -> bool {
        self.offset == 0
            && self.sr == cols
            && self.sh == rows * cols
            && self.sb == heads * rows * cols
    }
}

/// A read-only operand: its buffer and row layout.
#[derive(Clone, Copy)]
pub struct Operand<'a, T> {
    pub data: &'a [T],
    pub rows: Rows,
}

impl<'a, T> Operand<'a, T> {
    /// Slice i from its first element, and its row stride.
    fn slice(&self, i: usize, heads: usize) -> (&'a [T], usize) {
        (&self.data[self.rows.base(i, heads)..], self.rows.sr)
    }
}

/// An output written by the tasks: dense, each slice's rows `rows.sr` apart.
struct Dest<T> {
    ptr: SharedOut<T>,
    rows: Rows,
    /// rows and columns of one slice
    n: usize,
    cols: usize,
}

impl<T: Copy> Dest<T> {
    /// Writes slice `i` (given as `n x cols` contiguous values) into its rows.
    ///
    /// # Safety
    /// `rows` maps every (batch, head, row) of the buffer to its own `cols` elements inside it,
    /// and slice `i` is written by one task only.
    unsafe fn put(&self, i: usize, heads: usize, vals: &[T]) {
        let base = self.rows.base(i, heads);
        for (r, v) in vals.chunks_exact(self.cols).take(self.n).enumerate() {
            // SAFETY: row (i, r) lies inside the buffer and belongs to slice i alone.
            unsafe { self.ptr.slice(base + r * self.rows.sr, self.cols) }.copy_from_slice(v);
        }
    }

    /// Slice i as one contiguous `n x cols` block when the layout allows, for writing in place.
    ///
    /// # Safety
    /// As `put`.
    #[allow(clippy::mut_from_ref)]
    unsafe fn block(&self, i: usize, heads: usize) -> Option<&mut [T]> {
        let contiguous = self.rows.is_contiguous(heads, self.n, self.cols);
        // SAFETY: contiguous: slice i is exactly its n*cols block, which only this task writes.
        contiguous.then(|| unsafe { self.ptr.slice(i * self.n * self.cols, self.n * self.cols) })
    }
}

/// Splits `0..n` over the helper threads; `f(first, last)` runs on each range.
fn over(n: usize, work: usize, f: &(dyn Fn(usize, usize) + Sync)) {
    let threads = super::num_threads().min(n).max(1);
    if threads <= 1 || !super::par_ok(work, super::matmul::GEMM_PAR_THRESHOLD) {
        f(0, n);
        return;
    }
    let per = n.div_ceil(threads);
    super::parallel::run_parts(threads, &|p| f((p * per).min(n), ((p + 1) * per).min(n)));
}

/// Rows of the register tile of `small_gemm`.
const MR: usize = 4;
/// Lanes of the folds (`lanes_fold`, `dot`).
const LANES: usize = 16;

/// The left operand of `small_gemm`: element (i, p) at `a[i * rs + p * cs]`, so a matrix or
/// its transpose.
#[derive(Clone, Copy)]
struct Lhs<'a, T> {
    a: &'a [T],
    rs: usize,
    cs: usize,
}

/// How `small_gemm` multiplies and adds: `Fused` (one rounding, one instruction) in the copies
/// compiled with FMA, `Split` elsewhere, where `mul_add` would be a library call.
trait Madd: Copy {
    fn madd<T: Real>(self, acc: T, a: T, b: T) -> T;
}

#[derive(Clone, Copy)]
struct Split;

impl Madd for Split {
    #[inline(always)]
    fn madd<T: Real>(self, acc: T, a: T, b: T) -> T {
        acc + a * b
    }
}

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Fused;

#[cfg(target_arch = "x86_64")]
impl Madd for Fused {
    #[inline(always)]
    fn madd<T: Real>(self, acc: T, a: T, b: T) -> T {
        a.mul_add(b, acc)
    }
}

/// `C = A B` for A (m x k, see `Lhs`), B (k x n, row stride `ldb`) and C (m x n, row stride
/// `ldc`), in MR x NR register tiles (NR: two vector registers of T): each B row chunk loaded once serves MR rows, and the
/// tile's sums stay in registers over the whole k loop. For rows `i0..i1`, `cols(i0, i1)` bounds
/// the columns computed (capped at n; the rest of those rows of C is left as is) and
/// `ks(i0, i1)` the range of p where A's rows can be non-zero (causal attention's triangle).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn small_gemm<T: Real, const NR: usize>(
    madd: impl Madd,
    m: usize,
    n: usize,
    a: Lhs<'_, T>,
    b: &[T],
    ldb: usize,
    c: &mut [T],
    ldc: usize,
    cols: impl Fn(usize, usize) -> usize,
    ks: impl Fn(usize, usize) -> (usize, usize),
) {
    let zero = T::of(0.0);
    for i0 in (0..m).step_by(MR) {
        let rows = MR.min(m - i0);
        let ncols = cols(i0, i0 + rows).min(n);
        let (k0, k1) = ks(i0, i0 + rows);
        let out = &mut c[i0 * ldc..];
        if k0 >= k1 {
            for row in out.chunks_mut(ldc).take(rows) {
                row[..ncols].fill(zero);
            }
            continue;
        }
        let b = &b[k0 * ldb..];
        // A's MR values of each p, read without per-element bounds checks where A's rows
        // (a matrix) or columns (a transpose) are contiguous
        if rows == MR && a.cs == 1 {
            let row = |i: usize| &a.a[(i0 + i) * a.rs + k0..(i0 + i) * a.rs + k1];
            let (a0, a1, a2, a3) = (row(0), row(1), row(2), row(3));
            let avs = a0
                .iter()
                .zip(a1)
                .zip(a2)
                .zip(a3)
                .map(|(((&x0, &x1), &x2), &x3)| [x0, x1, x2, x3]);
            tile_row::<T, NR>(madd, avs, b, ldb, out, ldc, rows, ncols);
        } else if rows == MR && a.rs == 1 {
            let avs = a.a[k0 * a.cs + i0..]
                .chunks(a.cs)
                .take(k1 - k0)
                .map(|ch| [ch[0], ch[1], ch[2], ch[3]]);
            tile_row::<T, NR>(madd, avs, b, ldb, out, ldc, rows, ncols);
        } else {
            let avs = (k0..k1).map(|p| {
                let mut col = [zero; MR];
                for (i, x) in col[..rows].iter_mut().enumerate() {
                    *x = a.a[(i0 + i) * a.rs + p * a.cs];
                }
                col
            });
            tile_row::<T, NR>(madd, avs, b, ldb, out, ldc, rows, ncols);
        }
    }
}

/// `c[i][j] += av[i] * bp[j]`: one k step of a register tile (a plain function, not a closure,
/// so that it inlines into the caller compiled with FMA).
#[inline(always)]
fn madd_tile<T: Real, const NR: usize>(
    madd: impl Madd,
    c: &mut [&mut [T; NR]; MR],
    av: [T; MR],
    bp: &[T; NR],
) {
    let [c0, c1, c2, c3] = c;
    for j in 0..NR {
        c0[j] = madd.madd(c0[j], av[0], bp[j]);
        c1[j] = madd.madd(c1[j], av[1], bp[j]);
        c2[j] = madd.madd(c2[j], av[2], bp[j]);
        c3[j] = madd.madd(c3[j], av[3], bp[j]);
    }
}

/// One block of MR rows of `small_gemm`: `avs` gives A's MR values for each p of the block's
/// range and `b` starts at that range's first row; writes the first `rows` rows of `out`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tile_row<T: Real, const NR: usize>(
    madd: impl Madd,
    avs: impl Iterator<Item = [T; MR]> + Clone,
    b: &[T],
    ldb: usize,
    out: &mut [T],
    ldc: usize,
    rows: usize,
    ncols: usize,
) {
    let zero = T::of(0.0);
    for j0 in (0..ncols).step_by(NR) {
        let width = NR.min(ncols - j0);
        // Four named accumulators and one loop over the columns: LLVM keeps each in registers
        // and vectorises the column loop.
        let (mut c0, mut c1, mut c2, mut c3) = ([zero; NR], [zero; NR], [zero; NR], [zero; NR]);
        let mut c = [&mut c0, &mut c1, &mut c2, &mut c3];
        let mut step = |av: [T; MR], bp: &[T; NR]| madd_tile(madd, &mut c, av, bp);
        if width == NR {
            for (av, row) in avs.clone().zip(b.chunks(ldb)) {
                step(av, row[j0..j0 + NR].try_into().expect("NR columns"));
            }
        } else {
            // the last, partial column tile: B's columns zero-padded
            let mut padded = [zero; NR];
            for (av, row) in avs.clone().zip(b.chunks(ldb)) {
                padded[..width].copy_from_slice(&row[j0..j0 + width]);
                step(av, &padded);
            }
        }
        for (i, row) in [c0, c1, c2, c3][..rows].iter().enumerate() {
            let start = i * ldc + j0;
            out[start..start + width].copy_from_slice(&row[..width]);
        }
    }
}

/// `fold(acc, x)` over `xs` in LANES independent lanes, then over the lanes: a serial fold's
/// dependency chain (3-4 cycles an element) would cost more than the products.
#[inline(always)]
fn lanes_fold<T: Real>(xs: &[T], init: T, fold: impl Fn(T, T) -> T) -> T {
    let mut acc = [init; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder().iter().fold(init, |a, &x| fold(a, x));
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a = fold(*a, x);
        }
    }
    acc.into_iter().fold(rest, fold)
}

/// `sum a_i * b_i` in LANES lanes.
#[inline(always)]
fn dot<T: Real>(a: &[T], b: &[T]) -> T {
    let mut acc = [T::of(0.0); LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let rest = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .fold(T::of(0.0), |s, (&x, &y)| s + x * y);
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] = acc[i] + x[i] * y[i];
        }
    }
    acc.into_iter().fold(rest, |s, x| s + x)
}

/// Scratch buffers of one task, reused over its (batch, head) slices.
struct Scratch<T> {
    /// K or V transposed (e x s / ev x s)
    t: Vec<T>,
    /// dP (l x s)
    dp: Vec<T>,
}

/// A slice's output: its block of a contiguous output, or a task buffer copied out after.
fn out_block<'a, T: Copy>(dest: &Dest<T>, i: usize, heads: usize, tmp: &'a mut [T]) -> &'a mut [T] {
    // SAFETY: `dest`'s rows are dense and distinct per slice, and slice i is this task's alone.
    match unsafe { dest.block(i, heads) } {
        // SAFETY: the block lives as long as the output buffer, which outlives the tasks; the
        // lifetime is narrowed to the task buffer's for one return type.
        Some(b) => unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr(), b.len()) },
        None => tmp,
    }
}

/// `P = softmax(q k^T * scale + mask)` (rows where every score is -inf give zeros) and
/// `O = P v`. `mask` is the additive mask of every slice (bh x l x s) or None; with `causal` the
/// scores above the diagonal are -inf and never computed. Returns (O, P), P empty unless
/// `keep_p` (the backward's input; without it each thread reuses one slice's worth). The products are
/// register-tiled small gemms (`small_gemm`): on attention-sized slices (64 x 32) they beat gemm
/// calls, whose per-call cost dominates there.
#[allow(clippy::too_many_arguments)]
pub fn forward<T: Real + Elem>(
    q: Operand<'_, T>,
    k: Operand<'_, T>,
    v: Operand<'_, T>,
    d: Dims,
    scale: f64,
    mask: Option<&[T]>,
    causal: bool,
    o_rows: Rows,
    keep_p: bool,
) -> Result<(Vec<T>, Vec<T>)> {
    let mut o = try_vec::<T>(checked_len(&[d.bh, d.l, d.ev])?)?;
    let slice_p = checked_len(&[d.l, d.s])?;
    let mut p = try_vec::<T>(if keep_p { d.bh * slice_p } else { 0 })?;
    let pp = SharedOut::new(&mut p);
    let dest = Dest {
        ptr: SharedOut::new(&mut o),
        rows: o_rows,
        n: d.l,
        cols: d.ev,
    };
    let work = d.bh * d.l * d.s * (d.e + d.ev);
    // a thread's scratch P allocated fallibly (a huge attention is an error, not an abort)
    let failed = std::sync::Mutex::new(None);
    over(d.bh, work, &|i0, i1| {
        let mut scratch = Scratch {
            t: vec![T::of(0.0); d.e * d.s],
            dp: Vec::new(),
        };
        let mut tmp = vec![T::of(0.0); d.l * d.ev];
        let mut own_p = match try_vec::<T>(if keep_p { 0 } else { slice_p }) {
            Ok(v) => v,
            Err(e) => {
                *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                return;
            }
        };
        for i in i0..i1 {
            let pi = if keep_p {
                // SAFETY: slice i of p belongs to this task alone (disjoint ranges).
                unsafe { pp.slice(i * slice_p, slice_p) }
            } else {
                &mut own_p[..]
            };
            let oi = out_block(&dest, i, d.heads, &mut tmp);
            let mk = mask.map(|m| &m[i * d.l * d.s..(i + 1) * d.l * d.s]);
            let ((qi, qs), (ki, ks), (vi, vs)) = (
                q.slice(i, d.heads),
                k.slice(i, d.heads),
                v.slice(i, d.heads),
            );
            let args = FwdSlice {
                q: qi,
                qs,
                k: ki,
                ks,
                v: vi,
                vs,
                mask: mk,
                d,
                scale,
                causal,
            };
            best!(fwd_slice_base, fwd_slice_avx512, fwd_slice_avx2; args, oi, pi, &mut scratch);
            if !o_rows.is_contiguous(d.heads, d.l, d.ev) {
                // SAFETY: o_rows is dense (built by the caller) and slice i is this task's.
                unsafe { dest.put(i, d.heads, &tmp) };
            }
        }
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    Ok((o, p))
}

/// The causal mask of an l x s attention as a bool buffer: 1 above the diagonal (key `j` after
/// query `i`: not attended), 0 elsewhere.
pub fn causal_mask(l: usize, s: usize) -> Vec<u8> {
    (0..l)
        .flat_map(|i| (0..s).map(move |j| (j > i) as u8))
        .collect()
}

/// The product of sizes, or an error when it overflows.
fn checked_len(sizes: &[usize]) -> Result<usize> {
    crate::layout::checked_numel(sizes)
}

/// The backward of `forward` from the saved P: (dq, dk, dv), laid out as `grad_rows` gives.
#[allow(clippy::too_many_arguments)]
pub fn backward<T: Real + Elem>(
    q: Operand<'_, T>,
    k: Operand<'_, T>,
    v: Operand<'_, T>,
    p: &[T],
    go: Operand<'_, T>,
    d: Dims,
    scale: f64,
    causal: bool,
    grad_rows: [Rows; 3],
) -> Result<(Vec<T>, Vec<T>, Vec<T>)> {
    let mut dq = try_vec::<T>(checked_len(&[d.bh, d.l, d.e])?)?;
    let mut dk = try_vec::<T>(checked_len(&[d.bh, d.s, d.e])?)?;
    let mut dv = try_vec::<T>(checked_len(&[d.bh, d.s, d.ev])?)?;
    let dests = [
        Dest {
            ptr: SharedOut::new(&mut dq),
            rows: grad_rows[0],
            n: d.l,
            cols: d.e,
        },
        Dest {
            ptr: SharedOut::new(&mut dk),
            rows: grad_rows[1],
            n: d.s,
            cols: d.e,
        },
        Dest {
            ptr: SharedOut::new(&mut dv),
            rows: grad_rows[2],
            n: d.s,
            cols: d.ev,
        },
    ];
    let work = 2 * d.bh * d.l * d.s * (d.e + d.ev);
    over(d.bh, work, &|i0, i1| {
        let mut scratch = Scratch {
            t: vec![T::of(0.0); d.ev * d.s],
            dp: vec![T::of(0.0); d.l * d.s],
        };
        let mut tmps: Vec<Vec<T>> = dests
            .iter()
            .map(|dst| vec![T::of(0.0); dst.n * dst.cols])
            .collect();
        for i in i0..i1 {
            let [tq, tk, tv] = &mut tmps[..] else {
                unreachable!("three gradients")
            };
            let dqi = out_block(&dests[0], i, d.heads, tq);
            let dki = out_block(&dests[1], i, d.heads, tk);
            let dvi = out_block(&dests[2], i, d.heads, tv);
            let ((qi, qs), (ki, ks), (vi, vs), (gi, gs)) = (
                q.slice(i, d.heads),
                k.slice(i, d.heads),
                v.slice(i, d.heads),
                go.slice(i, d.heads),
            );
            let args = BwdSlice {
                q: qi,
                qs,
                k: ki,
                ks,
                v: vi,
                vs,
                p: &p[i * d.l * d.s..(i + 1) * d.l * d.s],
                go: gi,
                gos: gs,
                d,
                scale,
                causal,
            };
            best!(bwd_slice_base, bwd_slice_avx512, bwd_slice_avx2; args, dqi, dki, dvi, &mut scratch);
            for (dst, tmp) in dests.iter().zip(&tmps) {
                if !dst.rows.is_contiguous(d.heads, dst.n, dst.cols) {
                    // SAFETY: the gradient layouts are dense (built by the caller) and slice i
                    // is this task's.
                    unsafe { dst.put(i, d.heads, tmp) };
                }
            }
        }
    });
    Ok((dq, dk, dv))
}

/// One (batch, head) slice of the forward: q, k, v from their first element, rows `qs`, `ks`,
/// `vs` apart.
struct FwdSlice<'a, T> {
    q: &'a [T],
    qs: usize,
    k: &'a [T],
    ks: usize,
    v: &'a [T],
    vs: usize,
    mask: Option<&'a [T]>,
    d: Dims,
    scale: f64,
    causal: bool,
}

/// The columns a row may attend to: all, or with `causal` those up to the diagonal.
#[inline(always)]
fn live(r: usize, s: usize, causal: bool) -> usize {
    if causal {
        (r + 1).min(s)
    } else {
        s
    }
}

#[inline(always)]
fn fwd_slice<T: Real, const NR: usize>(
    madd: impl Madd,
    a: FwdSlice<'_, T>,
    oi: &mut [T],
    pi: &mut [T],
    scratch: &mut Scratch<T>,
) {
    let d = a.d;
    let sc = T::of(a.scale);
    let ninf = T::of(f64::NEG_INFINITY);
    let causal = a.causal;
    // scores S = q k^T into P (with `causal`, for rows i0..i1 only the column tiles up to the
    // last row's diagonal; the masked columns are zeroed below)
    let kt = &mut scratch.t[..d.e * d.s];
    transpose_into(a.k, a.ks, d.s, d.e, kt);
    let q = Lhs {
        a: a.q,
        rs: a.qs,
        cs: 1,
    };
    small_gemm::<T, NR>(
        madd,
        d.l,
        d.s,
        q,
        kt,
        d.s,
        pi,
        d.s,
        |_, i1| live(i1 - 1, d.s, causal).next_multiple_of(NR),
        |_, _| (0, d.e),
    );
    for r in 0..d.l {
        let row = &mut pi[r * d.s..(r + 1) * d.s];
        let live = live(r, d.s, causal);
        row[..live].iter_mut().for_each(|x| *x = *x * sc);
        if let Some(mk) = a.mask {
            for (x, &b) in row[..live].iter_mut().zip(&mk[r * d.s..(r + 1) * d.s]) {
                *x = *x + b;
            }
        }
        row[live..].iter_mut().for_each(|x| *x = T::of(0.0));
        let mx = lanes_fold(&row[..live], ninf, |m, b| if b > m { b } else { m });
        if mx == ninf {
            row.iter_mut().for_each(|x| *x = T::of(0.0));
            continue;
        }
        for x in row[..live].iter_mut() {
            *x = (*x - mx).exp();
        }
        let inv = T::of(1.0) / lanes_fold(&row[..live], T::of(0.0), |a, x| a + x);
        row[..live].iter_mut().for_each(|x| *x = *x * inv);
    }
    // O = P v (P is zero past each row's diagonal)
    let p = Lhs {
        a: &*pi,
        rs: d.s,
        cs: 1,
    };
    small_gemm::<T, NR>(
        madd,
        d.l,
        d.ev,
        p,
        a.v,
        a.vs,
        oi,
        d.ev,
        |_, _| d.ev,
        |_, i1| (0, live(i1 - 1, d.s, causal)),
    );
}

/// One (batch, head) slice of the backward (row strides as in `FwdSlice`; P contiguous).
struct BwdSlice<'a, T> {
    q: &'a [T],
    qs: usize,
    k: &'a [T],
    ks: usize,
    v: &'a [T],
    vs: usize,
    p: &'a [T],
    go: &'a [T],
    gos: usize,
    d: Dims,
    scale: f64,
    causal: bool,
}

#[inline(always)]
fn bwd_slice<T: Real, const NR: usize>(
    madd: impl Madd,
    a: BwdSlice<'_, T>,
    dqi: &mut [T],
    dki: &mut [T],
    dvi: &mut [T],
    scratch: &mut Scratch<T>,
) {
    let d = a.d;
    let sc = T::of(a.scale);
    let causal = a.causal;
    // dP = dO v^T (with `causal`, only the column tiles up to the diagonal)
    let vt = &mut scratch.t[..d.ev * d.s];
    transpose_into(a.v, a.vs, d.s, d.ev, vt);
    let dp = &mut scratch.dp[..d.l * d.s];
    let go = Lhs {
        a: a.go,
        rs: a.gos,
        cs: 1,
    };
    small_gemm::<T, NR>(
        madd,
        d.l,
        d.s,
        go,
        vt,
        d.s,
        dp,
        d.s,
        |_, i1| live(i1 - 1, d.s, causal).next_multiple_of(NR),
        |_, _| (0, d.ev),
    );
    // dS = P * (dP - rowsum(dP * P)) * scale, in place of dP; zero past the diagonal
    for r in 0..d.l {
        let live = live(r, d.s, causal);
        let pr = &a.p[r * d.s..r * d.s + live];
        let row = &mut dp[r * d.s..(r + 1) * d.s];
        let dotp = dot(&row[..live], pr);
        for (x, &pc) in row.iter_mut().zip(pr) {
            *x = pc * (*x - dotp) * sc;
        }
        row[live..].iter_mut().for_each(|x| *x = T::of(0.0));
    }
    let ds = &*dp;
    // dq = dS k
    small_gemm::<T, NR>(
        madd,
        d.l,
        d.e,
        Lhs {
            a: ds,
            rs: d.s,
            cs: 1,
        },
        a.k,
        a.ks,
        dqi,
        d.e,
        |_, _| d.e,
        |_, i1| (0, live(i1 - 1, d.s, causal)),
    );
    // key c is attended by the queries from c on (causal): the rows of dS^T and P^T are zero
    // before that
    let queries = |c0: usize, _| (if causal { c0.min(d.l) } else { 0 }, d.l);
    // dk = dS^T q
    small_gemm::<T, NR>(
        madd,
        d.s,
        d.e,
        Lhs {
            a: ds,
            rs: 1,
            cs: d.s,
        },
        a.q,
        a.qs,
        dki,
        d.e,
        |_, _| d.e,
        queries,
    );
    // dv = P^T dO
    small_gemm::<T, NR>(
        madd,
        d.s,
        d.ev,
        Lhs {
            a: a.p,
            rs: 1,
            cs: d.s,
        },
        a.go,
        a.gos,
        dvi,
        d.ev,
        |_, _| d.ev,
        queries,
    );
}

/// `fwd_slice` for CPUs without AVX2/FMA.
fn fwd_slice_base<T: Real>(
    a: FwdSlice<'_, T>,
    oi: &mut [T],
    pi: &mut [T],
    scratch: &mut Scratch<T>,
) {
    fwd_slice::<T, 16>(Split, a, oi, pi, scratch)
}

/// `bwd_slice` for CPUs without AVX2/FMA.
fn bwd_slice_base<T: Real>(
    a: BwdSlice<'_, T>,
    dq: &mut [T],
    dk: &mut [T],
    dv: &mut [T],
    scratch: &mut Scratch<T>,
) {
    bwd_slice::<T, 16>(Split, a, dq, dk, dv, scratch)
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use super::*;

    // The tile rows of `small_gemm` are two vector registers wide: 2 x 32 bytes with AVX2,
    // 2 x 64 with AVX-512.

    #[target_feature(enable = "avx2,fma")]
    pub fn fwd_slice_avx2<T: Real>(
        a: FwdSlice<'_, T>,
        oi: &mut [T],
        pi: &mut [T],
        scratch: &mut Scratch<T>,
    ) {
        let madd = Fused;
        if size_of::<T>() == 4 {
            fwd_slice::<T, 16>(madd, a, oi, pi, scratch)
        } else {
            fwd_slice::<T, 8>(madd, a, oi, pi, scratch)
        }
    }
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub fn fwd_slice_avx512<T: Real>(
        a: FwdSlice<'_, T>,
        oi: &mut [T],
        pi: &mut [T],
        scratch: &mut Scratch<T>,
    ) {
        let madd = Fused;
        if size_of::<T>() == 4 {
            fwd_slice::<T, 32>(madd, a, oi, pi, scratch)
        } else {
            fwd_slice::<T, 16>(madd, a, oi, pi, scratch)
        }
    }
    #[target_feature(enable = "avx2,fma")]
    pub fn bwd_slice_avx2<T: Real>(
        a: BwdSlice<'_, T>,
        dq: &mut [T],
        dk: &mut [T],
        dv: &mut [T],
        scratch: &mut Scratch<T>,
    ) {
        let madd = Fused;
        if size_of::<T>() == 4 {
            bwd_slice::<T, 16>(madd, a, dq, dk, dv, scratch)
        } else {
            bwd_slice::<T, 8>(madd, a, dq, dk, dv, scratch)
        }
    }
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub fn bwd_slice_avx512<T: Real>(
        a: BwdSlice<'_, T>,
        dq: &mut [T],
        dk: &mut [T],
        dv: &mut [T],
        scratch: &mut Scratch<T>,
    ) {
        let madd = Fused;
        if size_of::<T>() == 4 {
            bwd_slice::<T, 32>(madd, a, dq, dk, dv, scratch)
        } else {
            bwd_slice::<T, 16>(madd, a, dq, dk, dv, scratch)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values in [-1, 1) (xorshift).
    fn rnd(n: usize, seed: u64) -> Vec<f64> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
            })
            .collect()
    }

    /// `softmax(q k^T * scale + mask)` (causal: -inf above the diagonal; a row with every score
    /// -inf gives zeros) and `O = P v`, one slice at a time, for contiguous (bh, rows, cols)
    /// operands: (O, P).
    fn naive_forward(
        q: &[f64],
        k: &[f64],
        v: &[f64],
        d: Dims,
        scale: f64,
        mask: Option<&[f64]>,
        causal: bool,
    ) -> (Vec<f64>, Vec<f64>) {
        let mut o = vec![0.0; d.bh * d.l * d.ev];
        let mut p = vec![0.0; d.bh * d.l * d.s];
        for i in 0..d.bh {
            for r in 0..d.l {
                let qr = &q[(i * d.l + r) * d.e..][..d.e];
                let mut row: Vec<f64> = (0..d.s)
                    .map(|j| {
                        let kj = &k[(i * d.s + j) * d.e..][..d.e];
                        let mut x = qr.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>() * scale;
                        if let Some(m) = mask {
                            x += m[(i * d.l + r) * d.s + j];
                        }
                        if causal && j > r {
                            x = f64::NEG_INFINITY;
                        }
                        x
                    })
                    .collect();
                let mx = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if mx == f64::NEG_INFINITY {
                    row.iter_mut().for_each(|x| *x = 0.0);
                } else {
                    row.iter_mut().for_each(|x| *x = (*x - mx).exp());
                    let sum: f64 = row.iter().sum();
                    row.iter_mut().for_each(|x| *x /= sum);
                }
                for c in 0..d.ev {
                    o[(i * d.l + r) * d.ev + c] =
                        (0..d.s).map(|j| row[j] * v[(i * d.s + j) * d.ev + c]).sum();
                }
                p[(i * d.l + r) * d.s..][..d.s].copy_from_slice(&row);
            }
        }
        (o, p)
    }

    /// The backward from P: dV = P^T dO, dS = P * (dO V^T - rowsum(dO V^T * P)) * scale,
    /// dQ = dS K, dK = dS^T Q.
    #[allow(clippy::too_many_arguments)]
    fn naive_backward(
        q: &[f64],
        k: &[f64],
        v: &[f64],
        p: &[f64],
        go: &[f64],
        d: Dims,
        scale: f64,
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (mut dq, mut dk, mut dv) = (
            vec![0.0; d.bh * d.l * d.e],
            vec![0.0; d.bh * d.s * d.e],
            vec![0.0; d.bh * d.s * d.ev],
        );
        for i in 0..d.bh {
            let p = |r: usize, j: usize| p[(i * d.l + r) * d.s + j];
            let go = |r: usize, c: usize| go[(i * d.l + r) * d.ev + c];
            for j in 0..d.s {
                for c in 0..d.ev {
                    dv[(i * d.s + j) * d.ev + c] = (0..d.l).map(|r| p(r, j) * go(r, c)).sum();
                }
            }
            let mut ds = vec![0.0; d.l * d.s];
            for r in 0..d.l {
                let dp: Vec<f64> = (0..d.s)
                    .map(|j| {
                        (0..d.ev)
                            .map(|c| go(r, c) * v[(i * d.s + j) * d.ev + c])
                            .sum()
                    })
                    .collect();
                let dot: f64 = (0..d.s).map(|j| dp[j] * p(r, j)).sum();
                for j in 0..d.s {
                    ds[r * d.s + j] = p(r, j) * (dp[j] - dot) * scale;
                }
            }
            for c in 0..d.e {
                for r in 0..d.l {
                    dq[(i * d.l + r) * d.e + c] = (0..d.s)
                        .map(|j| ds[r * d.s + j] * k[(i * d.s + j) * d.e + c])
                        .sum();
                }
                for j in 0..d.s {
                    dk[(i * d.s + j) * d.e + c] = (0..d.l)
                        .map(|r| ds[r * d.s + j] * q[(i * d.l + r) * d.e + c])
                        .sum();
                }
            }
        }
        (dq, dk, dv)
    }

    /// Row layouts of the (bh, n, cols) operands with their (batch, head, row) dims in `order`.
    fn rows(d: Dims, order: [usize; 3], n: usize, cols: usize) -> Rows {
        Rows::dense(order, [d.bh / d.heads, d.heads, n], cols)
    }

    /// Contiguous (bh, n, cols) values laid out as `r` gives.
    fn lay<T: Copy + Default>(x: &[T], r: Rows, d: Dims, n: usize, cols: usize) -> Vec<T> {
        let mut out = vec![T::default(); d.bh * n * cols];
        for i in 0..d.bh {
            for row in 0..n {
                let at = r.base(i, d.heads) + row * r.sr;
                out[at..at + cols].copy_from_slice(&x[(i * n + row) * cols..][..cols]);
            }
        }
        out
    }

    /// The inverse of `lay`.
    fn unlay<T: Copy + Default>(x: &[T], r: Rows, d: Dims, n: usize, cols: usize) -> Vec<T> {
        let mut out = vec![T::default(); d.bh * n * cols];
        for i in 0..d.bh {
            for row in 0..n {
                let at = r.base(i, d.heads) + row * r.sr;
                out[(i * n + row) * cols..][..cols].copy_from_slice(&x[at..at + cols]);
            }
        }
        out
    }

    /// Inputs of one case: q, k, v, the output gradient, and an additive mask with -inf
    /// entries (row 1 of slice 0 wholly masked).
    fn inputs(d: Dims) -> [Vec<f64>; 5] {
        let mut mask = rnd(d.bh * d.l * d.s, 5);
        for (n, m) in mask.iter_mut().enumerate() {
            if n % 7 == 3 || (d.l > 1 && n / d.s == 1) {
                *m = f64::NEG_INFINITY;
            }
        }
        [
            rnd(d.bh * d.l * d.e, 1),
            rnd(d.bh * d.s * d.e, 2),
            rnd(d.bh * d.s * d.ev, 3),
            rnd(d.bh * d.l * d.ev, 4),
            mask,
        ]
    }

    /// Forward and backward through the kernels, every operand and gradient laid out in
    /// `order`: ((O, P), (dQ, dK, dV)), contiguous again.
    #[allow(clippy::type_complexity)]
    fn run<T: Real + Elem + Default>(
        x: &[Vec<f64>; 5],
        d: Dims,
        scale: f64,
        masked: bool,
        causal: bool,
        order: [usize; 3],
    ) -> ((Vec<T>, Vec<T>), (Vec<T>, Vec<T>, Vec<T>)) {
        let conv = |v: &[f64]| v.iter().map(|&x| T::of(x)).collect::<Vec<T>>();
        let (rq, rk, rv, ro) = (
            rows(d, order, d.l, d.e),
            rows(d, order, d.s, d.e),
            rows(d, order, d.s, d.ev),
            rows(d, order, d.l, d.ev),
        );
        let (q, k, v, go) = (
            lay(&conv(&x[0]), rq, d, d.l, d.e),
            lay(&conv(&x[1]), rk, d, d.s, d.e),
            lay(&conv(&x[2]), rv, d, d.s, d.ev),
            lay(&conv(&x[3]), ro, d, d.l, d.ev),
        );
        let mask = conv(&x[4]);
        fn op<T>(data: &[T], rows: Rows) -> Operand<'_, T> {
            Operand { data, rows }
        }
        let (q, k, v, go) = (op(&q, rq), op(&k, rk), op(&v, rv), op(&go, ro));
        let mask = masked.then_some(&mask[..]);
        let (o, p) = forward(q, k, v, d, scale, mask, causal, ro, true).unwrap();
        // without P kept (inference), each thread's scratch P gives the same output
        let (o2, none) = forward(q, k, v, d, scale, mask, causal, ro, false).unwrap();
        assert!(none.is_empty() && o2.iter().zip(&o).all(|(a, b)| a.to_f64() == b.to_f64()));
        let (dq, dk, dv) = backward(q, k, v, &p, go, d, scale, causal, [rq, rk, rv]).unwrap();
        (
            (unlay(&o, ro, d, d.l, d.ev), p),
            (
                unlay(&dq, rq, d, d.l, d.e),
                unlay(&dk, rk, d, d.s, d.e),
                unlay(&dv, rv, d, d.s, d.ev),
            ),
        )
    }

    fn assert_close<T: Real + Elem>(got: &[T], want: &[f64], tol: f64, what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (n, (&g, &w)) in got.iter().zip(want).enumerate() {
            let g = g.to_f64();
            assert!(
                (g - w).abs() <= tol * (1.0 + w.abs()),
                "{what}[{n}]: {g} vs {w}"
            );
        }
    }

    const CASES: [Dims; 4] = [
        // tiles of the register gemm left partial in rows and columns
        Dims {
            bh: 6,
            heads: 3,
            l: 5,
            s: 7,
            e: 3,
            ev: 4,
        },
        // more queries than keys (causal rows past the last key)
        Dims {
            bh: 2,
            heads: 1,
            l: 9,
            s: 4,
            e: 5,
            ev: 2,
        },
        Dims {
            bh: 1,
            heads: 1,
            l: 1,
            s: 1,
            e: 1,
            ev: 1,
        },
        // large enough to split the slices over threads
        Dims {
            bh: 4,
            heads: 2,
            l: 64,
            s: 48,
            e: 32,
            ev: 16,
        },
    ];

    #[test]
    fn forward_and_backward_match_the_naive_formulas() {
        for d in CASES {
            let x = inputs(d);
            let scale = 1.0 / (d.e as f64).sqrt();
            for (masked, causal) in [(false, false), (false, true), (true, false), (true, true)] {
                let mask = masked.then_some(&x[4][..]);
                let (o, p) = naive_forward(&x[0], &x[1], &x[2], d, scale, mask, causal);
                let (dq, dk, dv) = naive_backward(&x[0], &x[1], &x[2], &p, &x[3], d, scale);
                for order in [[0, 1, 2], [2, 0, 1]] {
                    let what = format!("{d:?} masked {masked} causal {causal} order {order:?}");
                    let ((go, gp), (gdq, gdk, gdv)) =
                        run::<f64>(&x, d, scale, masked, causal, order);
                    assert_close(&go, &o, 1e-12, &format!("O {what}"));
                    assert_close(&gp, &p, 1e-12, &format!("P {what}"));
                    assert_close(&gdq, &dq, 1e-12, &format!("dQ {what}"));
                    assert_close(&gdk, &dk, 1e-12, &format!("dK {what}"));
                    assert_close(&gdv, &dv, 1e-12, &format!("dV {what}"));
                    let ((fo, fp), (fdq, fdk, fdv)) =
                        run::<f32>(&x, d, scale, masked, causal, order);
                    assert_close(&fo, &o, 1e-5, &format!("f32 O {what}"));
                    assert_close(&fp, &p, 1e-5, &format!("f32 P {what}"));
                    assert_close(&fdq, &dq, 1e-5, &format!("f32 dQ {what}"));
                    assert_close(&fdk, &dk, 1e-5, &format!("f32 dK {what}"));
                    assert_close(&fdv, &dv, 1e-5, &format!("f32 dV {what}"));
                }
            }
        }
    }

    #[test]
    fn a_wholly_masked_row_gives_zeros() {
        let d = CASES[0];
        let x = inputs(d);
        let ((o, p), _) = run::<f64>(&x, d, 0.5, true, false, [0, 1, 2]);
        // row 1 of slice 0
        assert!(p[d.s..2 * d.s].iter().all(|&v| v == 0.0));
        assert!(o[d.ev..2 * d.ev].iter().all(|&v| v == 0.0));
        // the other rows are distributions over the keys
        for row in p.chunks(d.s).filter(|r| r.iter().any(|&v| v != 0.0)) {
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
    }

    /// The gradients of L = <O, dO> against central differences of L in each input element.
    #[test]
    fn backward_matches_finite_differences() {
        let d = CASES[0];
        let x = inputs(d);
        let scale = 0.7;
        for (masked, causal) in [(false, true), (true, false)] {
            let mask = masked.then_some(&x[4][..]);
            let loss = |q: &[f64], k: &[f64], v: &[f64]| {
                let (o, _) = naive_forward(q, k, v, d, scale, mask, causal);
                o.iter().zip(&x[3]).map(|(a, b)| a * b).sum::<f64>()
            };
            let (_, (dq, dk, dv)) = run::<f64>(&x, d, scale, masked, causal, [0, 1, 2]);
            let h = 1e-6;
            for (which, grad) in [(0, &dq), (1, &dk), (2, &dv)] {
                for n in 0..x[which].len() {
                    let at = |delta: f64| {
                        let mut y = [x[0].clone(), x[1].clone(), x[2].clone()];
                        y[which][n] += delta;
                        loss(&y[0], &y[1], &y[2])
                    };
                    let fd = (at(h) - at(-h)) / (2.0 * h);
                    assert!(
                        (grad[n] - fd).abs() < 1e-7,
                        "input {which}[{n}] masked {masked} causal {causal}: {} vs {fd}",
                        grad[n]
                    );
                }
            }
        }
    }

    #[test]
    fn causal_mask_blocks_keys_after_the_query() {
        assert_eq!(causal_mask(2, 3), vec![0, 1, 1, 0, 0, 1]);
        assert_eq!(causal_mask(3, 1), vec![0, 0, 0]);
        assert!(causal_mask(0, 4).is_empty());
    }
}
