//! Matrix products. Floats go to the `gemm` crate (runtime-dispatched AVX2/AVX-512 kernels, split
//! across the helper threads of parallel.rs); int64 uses a plain triple loop.

use super::parallel::SharedOut;
use crate::storage::Elem;

/// A strided matrix operand: `ptr[offset + i*rs + j*cs]`.
#[derive(Clone, Copy)]
pub struct Mat<'a, T> {
    pub data: &'a [T],
    pub offset: usize,
    pub rs: usize,
    pub cs: usize,
}

/// Below this many multiply-adds gemm runs single-threaded.
pub const GEMM_PAR_THRESHOLD: usize = 64 * 64 * 64;

fn in_bounds<T>(m: &Mat<'_, T>, rows: usize, cols: usize) -> bool {
    if rows == 0 || cols == 0 {
        return true;
    }
    m.offset + (rows - 1) * m.rs + (cols - 1) * m.cs < m.data.len()
}

/// `dst (m x n, row-major, contiguous) = lhs (m x k) @ rhs (k x n)`, or `+=` with `acc`.
pub fn matmul<T: Elem>(
    m: usize,
    k: usize,
    n: usize,
    lhs: Mat<'_, T>,
    rhs: Mat<'_, T>,
    dst: &mut [T],
    acc: bool,
) {
    let par = super::par_ok(m * n * k, GEMM_PAR_THRESHOLD);
    matmul_on(m, k, n, lhs, rhs, dst, acc, par)
}

/// `matmul` on the calling thread only (for callers that already split work across threads).
pub fn matmul_serial<T: Elem>(
    m: usize,
    k: usize,
    n: usize,
    lhs: Mat<'_, T>,
    rhs: Mat<'_, T>,
    dst: &mut [T],
    acc: bool,
) {
    matmul_on(m, k, n, lhs, rhs, dst, acc, false)
}

/// `dst[i*ors + j*ocs] = (lhs @ rhs)[i, j]` (or `+=` with `acc`) for float operands, into a
/// strided output such as a column-major one. gemm's kernels cover many rows of the output
/// per tile (64 f32 rows with AVX-512), so when n > m it computes the transposed product
/// `rhs^T @ lhs^T` instead (operand transposes are stride swaps): a 32 x 784 product then
/// uses whole tiles instead of half-empty ones.
#[allow(clippy::too_many_arguments)]
pub fn matmul_strided<T: Elem>(
    m: usize,
    k: usize,
    n: usize,
    lhs: Mat<'_, T>,
    rhs: Mat<'_, T>,
    dst: &mut [T],
    ors: usize,
    ocs: usize,
    acc: bool,
    par: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    assert!(
        (m - 1) * ors + (n - 1) * ocs < dst.len(),
        "output out of bounds"
    );
    let par = par && super::par_ok(m * n * k, GEMM_PAR_THRESHOLD);
    // SAFETY: the operands were checked in bounds above, and so was every output element
    // `i*ors + j*ocs`; `dst` is borrowed mutably, so nothing else accesses it meanwhile.
    unsafe { matmul_raw(m, k, n, lhs, rhs, dst.as_mut_ptr(), ors, ocs, acc, par) }
}

/// `matmul_strided` into a raw output, for kernels whose threads each write their own block of
/// one buffer (the steps of an LSTM layer).
///
/// # Safety
/// `lhs`/`rhs` must be in bounds for (m, k) / (k, n) (asserted), and `out` valid for writes at
/// every `i*ors + j*ocs` (i < m, j < n) with no other access to those elements meanwhile.
#[allow(clippy::too_many_arguments)]
pub unsafe fn matmul_raw<T: Elem>(
    m: usize,
    k: usize,
    n: usize,
    lhs: Mat<'_, T>,
    rhs: Mat<'_, T>,
    out: *mut T,
    ors: usize,
    ocs: usize,
    acc: bool,
    par: bool,
) {
    assert!(T::DTYPE.is_float(), "matmul_raw is for float operands");
    assert!(in_bounds(&lhs, m, k) && in_bounds(&rhs, k, n));
    if m == 0 || n == 0 {
        return;
    }
    fn flip<T>(x: Mat<'_, T>) -> Mat<'_, T> {
        Mat {
            rs: x.cs,
            cs: x.rs,
            ..x
        }
    }
    let (m, n, lhs, rhs, ors, ocs) = if n > m {
        (n, m, flip(rhs), flip(lhs), ocs, ors)
    } else {
        (m, n, lhs, rhs, ors, ocs)
    };
    if k == 0 {
        if !acc {
            for i in 0..m {
                for j in 0..n {
                    // SAFETY: (i, j) is an output element, writable by the caller's contract.
                    unsafe { *out.add(i * ors + j * ocs) = T::default() };
                }
            }
        }
        return;
    }
    if par {
        blocks(
            m,
            k,
            n,
            lhs,
            rhs,
            SharedOut::from_ptr(out),
            ors,
            ocs,
            acc,
            true,
        );
    } else {
        // SAFETY: the caller's contract is gemm_block's.
        unsafe { gemm_block(m, k, n, lhs, rhs, out, ors, ocs, acc) };
    }
}

#[allow(clippy::too_many_arguments)]
fn matmul_on<T: Elem>(
    m: usize,
    k: usize,
    n: usize,
    lhs: Mat<'_, T>,
    rhs: Mat<'_, T>,
    dst: &mut [T],
    acc: bool,
    par: bool,
) {
    assert!(in_bounds(&lhs, m, k) && in_bounds(&rhs, k, n) && dst.len() == m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !acc {
            dst.iter_mut().for_each(|d| *d = T::default());
        }
        return;
    }
    let acc_dst = acc;
    match T::DTYPE {
        crate::dtype::DType::F32 | crate::dtype::DType::F64 => {
            float_matmul(m, k, n, lhs, rhs, dst, acc, par)
        }
        _ => {
            for i in 0..m {
                for j in 0..n {
                    let mut acc: i64 = 0;
                    for p in 0..k {
                        let a = lhs.data[lhs.offset + i * lhs.rs + p * lhs.cs].to_i64();
                        let b = rhs.data[rhs.offset + p * rhs.rs + j * rhs.cs].to_i64();
                        acc = acc.wrapping_add(a.wrapping_mul(b));
                    }
                    let prev = if acc_dst { dst[i * n + j].to_i64() } else { 0 };
                    dst[i * n + j] = T::from_i64(prev.wrapping_add(acc));
                }
            }
        }
    }
}

/// One single-threaded gemm call: `out[i*ors + j*ocs] = (lhs @ rhs)[i, j]` for an m x n block.
///
/// # Safety
/// `lhs`/`rhs` must be in bounds for (m, k) / (k, n), and `out` valid for writes at every
/// `i*ors + j*ocs` (i < m, j < n) with no other access to those elements meanwhile.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_block<T: Elem>(
    m: usize,
    k: usize,
    n: usize,
    lhs: Mat<'_, T>,
    rhs: Mat<'_, T>,
    out: *mut T,
    ors: usize,
    ocs: usize,
    acc: bool,
) {
    macro_rules! call {
        ($t:ty) => {
            // SAFETY: T is $t (checked through DTYPE); bounds as documented above.
            unsafe {
                gemm::gemm::<$t>(
                    m,
                    n,
                    k,
                    out as *mut $t,
                    ocs as isize,
                    ors as isize,
                    acc,
                    (lhs.data.as_ptr() as *const $t).add(lhs.offset),
                    lhs.cs as isize,
                    lhs.rs as isize,
                    (rhs.data.as_ptr() as *const $t).add(rhs.offset),
                    rhs.cs as isize,
                    rhs.rs as isize,
                    if acc { 1.0 } else { 0.0 },
                    1.0,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                )
            }
        };
    }
    match T::DTYPE {
        crate::dtype::DType::F32 => call!(f32),
        crate::dtype::DType::F64 => call!(f64),
        _ => unreachable!("gemm_block is only called for floats"),
    }
}

/// Float matmul through gemm. Two measured facts shape it (benches/compare_torch.py,
/// workloads (e) and (h)):
/// - gemm is 2-4x slower when both operands are read along k (lhs row-major, rhs column-major,
///   as in `x @ w.t()`) into a row-major output. A column-major output is fast, so that case
///   either computes one and transposes it (m*n copies), or first copies the rhs row-major
///   (k*n copies), whichever copies less: 64x784 @ 784x256 takes ~120 µs the first way,
///   512x128 @ 128x512 ~350 µs the second way (1373 µs before);
/// - gemm's own rayon split gains little on mid-sized products (64x784x256), while one
///   single-threaded gemm per thread on a block of output rows (or columns) halves the time.
#[allow(clippy::too_many_arguments)]
fn float_matmul<T: Elem>(
    m: usize,
    k: usize,
    n: usize,
    lhs: Mat<'_, T>,
    rhs: Mat<'_, T>,
    dst: &mut [T],
    acc: bool,
    par: bool,
) {
    let along_k = lhs.cs == 1 && lhs.rs != 1 && rhs.rs == 1 && rhs.cs != 1;
    if along_k && m > 1 && n > 1 && k >= 16 && m < k {
        let mut tmp = vec![T::default(); m * n];
        blocks(
            m,
            k,
            n,
            lhs,
            rhs,
            SharedOut::new(&mut tmp),
            1,
            m,
            false,
            par,
        );
        add_transposed(&tmp, n, m, dst, acc);
    } else if along_k && m > 1 && n > 1 && k >= 16 {
        // each thread copies its own block of the rhs's columns row-major and computes those
        // columns of the output
        let threads = if par { super::num_threads() } else { 1 };
        let per = (n.div_ceil(threads).div_ceil(16) * 16).max(1);
        let out = SharedOut::new(dst);
        let run = |i: usize| {
            let (j0, j1) = (i * per, ((i + 1) * per).min(n));
            let nj = j1 - j0;
            let mut packed = vec![T::default(); k * nj];
            transpose_into(
                &rhs.data[rhs.offset + j0 * rhs.cs..],
                rhs.cs,
                nj,
                k,
                &mut packed,
            );
            let packed_rhs = Mat {
                data: &packed,
                offset: 0,
                rs: nj,
                cs: 1,
            };
            // SAFETY: column blocks [j0, j1) are disjoint across `i`, so each call writes its
            // own elements of the m x n output (row stride n); `lhs` was bounds-checked by the
            // caller and `packed_rhs` is k x nj by construction.
            unsafe { gemm_block(m, k, nj, lhs, packed_rhs, out.ptr().add(j0), n, 1, acc) };
        };
        let parts = n.div_ceil(per);
        if parts <= 1 {
            run(0);
        } else {
            super::parallel::run_parts(parts, &run);
        }
    } else {
        blocks(m, k, n, lhs, rhs, SharedOut::new(dst), n, 1, acc, par);
    }
}

/// Runs gemm over blocks of the output (rows when m >= n, else columns), one per thread.
#[allow(clippy::too_many_arguments)]
fn blocks<T: Elem>(
    m: usize,
    k: usize,
    n: usize,
    lhs: Mat<'_, T>,
    rhs: Mat<'_, T>,
    out: SharedOut<T>,
    ors: usize,
    ocs: usize,
    acc: bool,
    par: bool,
) {
    let threads = if par { super::num_threads() } else { 1 };
    let (len, split_rows) = if m >= n { (m, true) } else { (n, false) };
    // blocks of a multiple of 16 rows/columns, one per thread
    let per = (len.div_ceil(threads).div_ceil(16) * 16).max(1);
    let parts = len.div_ceil(per);
    let run = |i: usize| {
        let (start, end) = (i * per, ((i + 1) * per).min(len));
        // SAFETY: blocks [start, end) of rows (or columns) are disjoint across `i`, so each
        // call writes its own elements of the output; the operand sub-views stay inside the
        // operands checked by the caller's bounds assertion.
        unsafe {
            // the block's operands and first output element
            let (rows, cols, l, r, at) = if split_rows {
                let l = Mat {
                    offset: lhs.offset + start * lhs.rs,
                    ..lhs
                };
                (end - start, n, l, rhs, start * ors)
            } else {
                let r = Mat {
                    offset: rhs.offset + start * rhs.cs,
                    ..rhs
                };
                (m, end - start, lhs, r, start * ocs)
            };
            gemm_block(rows, k, cols, l, r, out.ptr().add(at), ors, ocs, acc);
        }
    };
    if parts <= 1 {
        run(0);
    } else {
        super::parallel::run_parts(parts, &run);
    }
}

/// `dst (cols x rows, row-major) = src (rows x cols, row-major)` transposed (`+=` with `acc`),
/// in cache blocks.
fn add_transposed<T: Elem>(src: &[T], rows: usize, cols: usize, dst: &mut [T], acc: bool) {
    if !acc {
        transpose_into(src, cols, rows, cols, dst);
        return;
    }
    const B: usize = 32;
    for r0 in (0..rows).step_by(B) {
        for c0 in (0..cols).step_by(B) {
            for r in r0..(r0 + B).min(rows) {
                for c in c0..(c0 + B).min(cols) {
                    let d = &mut dst[c * rows + r];
                    *d = T::from_f64(d.to_f64() + src[r * cols + c].to_f64());
                }
            }
        }
    }
}

/// `dst (cols x rows, row-major) = src (rows x cols, rows `stride` apart)` transposed: eight
/// source rows at a time, so every destination row gets eight contiguous elements per pass
/// while the eight source rows are read in order.
#[inline]
pub(super) fn transpose_into<T: Copy>(
    src: &[T],
    stride: usize,
    rows: usize,
    cols: usize,
    dst: &mut [T],
) {
    const R: usize = 8;
    if rows == 0 || cols == 0 {
        return;
    }
    let row = |r: usize| &src[r * stride..r * stride + cols];
    let mut r0 = 0;
    while r0 + R <= rows {
        let s: [&[T]; R] = std::array::from_fn(|i| row(r0 + i));
        for (c, d) in dst.chunks_exact_mut(rows).take(cols).enumerate() {
            let d: &mut [T; R] = (&mut d[r0..r0 + R]).try_into().expect("R elements");
            for i in 0..R {
                d[i] = s[i][c];
            }
        }
        r0 += R;
    }
    for r in r0..rows {
        for (c, &v) in row(r).iter().enumerate() {
            dst[c * rows + r] = v;
        }
    }
}

/// `n` copies of `row` one after the other: an (n x row.len()) matrix whose rows are all `row`
/// (addmm's output starting as its bias vector).
pub fn repeat_row<T: Copy>(row: &[T], n: usize) -> crate::error::Result<Vec<T>> {
    let mut v = super::alloc::<T>(crate::layout::checked_numel(&[n, row.len()])?)?;
    for _ in 0..n {
        v.extend_from_slice(row);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_row_stacks_copies() {
        assert_eq!(
            repeat_row(&[1.0f32, 2.0], 3).unwrap(),
            vec![1.0, 2.0, 1.0, 2.0, 1.0, 2.0]
        );
        assert!(repeat_row(&[1i64, 2], 0).unwrap().is_empty());
        assert!(repeat_row::<u8>(&[], 5).unwrap().is_empty());
        assert!(repeat_row(&[0.0f64; 2], usize::MAX).is_err());
    }

    /// `lhs @ rhs^T` for row-major lhs (m x k) and rhs (n x k), naively.
    fn naive_nt(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..k).map(|p| a[i * k + p] * b[j * k + p]).sum();
            }
        }
        out
    }

    #[test]
    fn along_k_paths_match_naive() {
        // lhs row-major and rhs column-major: the transposed-output path (m < k) and the
        // per-thread packed-column path (m >= k), serial and split, plain and accumulating
        for &(m, k, n) in &[
            (3, 20, 5),
            (40, 17, 33),
            (200, 40, 70),
            (70, 300, 90),
            (130, 64, 1),
        ] {
            let a: Vec<f64> = (0..m * k)
                .map(|i| ((i * 7 % 13) as f64 - 6.0) * 0.25)
                .collect();
            let b: Vec<f64> = (0..n * k)
                .map(|i| ((i * 5 % 11) as f64 - 5.0) * 0.5)
                .collect();
            let expected = naive_nt(&a, &b, m, k, n);
            let lhs = Mat {
                data: &a,
                offset: 0,
                rs: k,
                cs: 1,
            };
            let rhs = Mat {
                data: &b,
                offset: 0,
                rs: 1,
                cs: k,
            };
            let mut d = vec![0.0; m * n];
            matmul(m, k, n, lhs, rhs, &mut d, false);
            assert_eq!(d, expected, "{m}x{k}x{n}");
            let mut d = vec![1.0; m * n];
            matmul(m, k, n, lhs, rhs, &mut d, true);
            let plus_one: Vec<f64> = expected.iter().map(|v| v + 1.0).collect();
            assert_eq!(d, plus_one, "{m}x{k}x{n} accumulating");
        }
    }

    #[test]
    fn small_and_transposed() {
        let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2x3
        let b = [1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0]; // 3x2
        let mut d = [0.0f32; 4];
        let am = Mat {
            data: &a,
            offset: 0,
            rs: 3,
            cs: 1,
        };
        let bm = Mat {
            data: &b,
            offset: 0,
            rs: 2,
            cs: 1,
        };
        matmul(2, 3, 2, am, bm, &mut d, false);
        assert_eq!(d, [4.0, 5.0, 10.0, 11.0]);
        // a^T (3x2) @ a (2x3), using strides only
        let at = Mat {
            data: &a,
            offset: 0,
            rs: 1,
            cs: 3,
        };
        let mut d = [0.0f32; 9];
        matmul(3, 2, 3, at, am, &mut d, false);
        assert_eq!(d[0], 17.0);
        let ai = [1i64, 2, 3, 4];
        let mut di = [0i64; 4];
        let m = Mat {
            data: &ai,
            offset: 0,
            rs: 2,
            cs: 1,
        };
        matmul(2, 2, 2, m, m, &mut di, false);
        assert_eq!(di, [7, 10, 15, 22]);
    }

    #[test]
    fn large_parallel_matches_naive() {
        let n = 96;
        let a: Vec<f64> = (0..n * n).map(|i| (i % 7) as f64 - 3.0).collect();
        let b: Vec<f64> = (0..n * n).map(|i| (i % 5) as f64 - 2.0).collect();
        let mut d = vec![0.0; n * n];
        let am = Mat {
            data: &a,
            offset: 0,
            rs: n,
            cs: 1,
        };
        let bm = Mat {
            data: &b,
            offset: 0,
            rs: n,
            cs: 1,
        };
        matmul(n, n, n, am, bm, &mut d, false);
        for i in [0, 17, 95] {
            for j in [0, 50, 95] {
                let want: f64 = (0..n).map(|p| a[i * n + p] * b[p * n + j]).sum();
                assert_eq!(d[i * n + j], want);
            }
        }
    }

    /// Every operand layout, with and without accumulation, against a naive product: covers
    /// the column-major-output path (`x @ w.t()`) and the per-thread blocks (rows and columns).
    #[test]
    fn all_layouts_and_accumulation() {
        for &(m, k, n) in &[(120, 33, 90), (90, 40, 110), (5, 3, 4)] {
            let a: Vec<f64> = (0..m * k).map(|i| ((i * 7) % 11) as f64 - 5.0).collect();
            let b: Vec<f64> = (0..k * n).map(|i| ((i * 5) % 13) as f64 - 6.0).collect();
            for (a_col, b_col, acc) in (0..8).map(|f| (f & 1 == 1, f & 2 == 2, f & 4 == 4)) {
                // a_col: element (i, p) of lhs at p*m + i; b_col: (p, j) of rhs at j*k + p
                let am = if a_col {
                    Mat {
                        data: &a,
                        offset: 0,
                        rs: 1,
                        cs: m,
                    }
                } else {
                    Mat {
                        data: &a,
                        offset: 0,
                        rs: k,
                        cs: 1,
                    }
                };
                let bm = if b_col {
                    Mat {
                        data: &b,
                        offset: 0,
                        rs: 1,
                        cs: k,
                    }
                } else {
                    Mat {
                        data: &b,
                        offset: 0,
                        rs: n,
                        cs: 1,
                    }
                };
                let mut d: Vec<f64> = (0..m * n)
                    .map(|i| if acc { i as f64 } else { 0.5 })
                    .collect();
                matmul(m, k, n, am, bm, &mut d, acc);
                for i in 0..m {
                    for j in 0..n {
                        let dot: f64 = (0..k)
                            .map(|p| a[i * am.rs + p * am.cs] * b[p * bm.rs + j * bm.cs])
                            .sum();
                        let want = if acc { (i * n + j) as f64 + dot } else { dot };
                        assert_eq!(d[i * n + j], want, "{m}x{k}x{n} {a_col} {b_col} {acc}");
                    }
                }
            }
        }
    }
}

/// Independent accumulators of a dot product (four AVX-512 registers of f32).
const DOT_LANES: usize = 64;

/// `acc[j] += x[j] * y[j]` lane by lane over `x` and `y` (of one length).
#[inline(always)]
fn dot_lanes<T>(acc: &mut [T; DOT_LANES], x: &[T], y: &[T])
where
    T: Copy + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let (cx, cy) = (x.chunks_exact(DOT_LANES), y.chunks_exact(DOT_LANES));
    let (rx, ry) = (cx.remainder(), cy.remainder());
    for (a, b) in cx.zip(cy) {
        for j in 0..DOT_LANES {
            acc[j] = acc[j] + a[j] * b[j];
        }
    }
    for (j, (&a, &b)) in rx.iter().zip(ry).enumerate() {
        acc[j] = acc[j] + a * b;
    }
}

/// `dst.len()` elements of `src` from `start`, `stride` apart (0: one repeated element).
#[inline(always)]
fn fill_strided<T: Copy>(dst: &mut [T], src: &[T], start: usize, stride: usize) {
    if stride == 0 {
        dst.fill(src[start]);
    } else if stride == 2 {
        // a slice with step 2: pairs, so that the copy vectorises (shuffles, no gathers)
        let n = dst.len();
        let pairs = &src[start..(start + 2 * n).min(src.len())];
        for (d, p) in dst.iter_mut().zip(pairs.chunks_exact(2)) {
            *d = p[0];
        }
        if pairs.len() < 2 * n {
            dst[n - 1] = src[start + 2 * (n - 1)];
        }
    } else {
        for (d, &v) in dst.iter_mut().zip(src[start..].iter().step_by(stride)) {
            *d = v;
        }
    }
}

/// The dot product of `n` elements of `a` (from `oa`, `sa` apart) and of `b`: contiguous
/// operands folded in place with independent lanes, strided ones copied in chunks of 256 to
/// the stack first so that the fold still vectorises.
#[inline(always)]
fn dot_body<T>(a: &[T], oa: usize, sa: usize, b: &[T], ob: usize, sb: usize, n: usize) -> T
where
    T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let mut acc = [T::default(); DOT_LANES];
    if n == 0 {
        return T::default();
    }
    if sa == 1 && sb == 1 {
        dot_lanes(&mut acc, &a[oa..oa + n], &b[ob..ob + n]);
    } else {
        const CHUNK: usize = 256;
        let (mut ba, mut bb) = ([T::default(); CHUNK], [T::default(); CHUNK]);
        let mut i = 0;
        while i < n {
            let m = CHUNK.min(n - i);
            let x: &[T] = if sa == 1 {
                &a[oa + i..oa + i + m]
            } else {
                fill_strided(&mut ba[..m], a, oa + i * sa, sa);
                &ba[..m]
            };
            let y: &[T] = if sb == 1 {
                &b[ob + i..ob + i + m]
            } else {
                fill_strided(&mut bb[..m], b, ob + i * sb, sb);
                &bb[..m]
            };
            dot_lanes(&mut acc, x, y);
            i += m;
        }
    }
    let mut width = DOT_LANES;
    while width > 1 {
        width /= 2;
        for j in 0..width {
            acc[j] = acc[j] + acc[j + width];
        }
    }
    acc[0]
}

#[cfg(target_arch = "x86_64")]
mod wide {
    macro_rules! isa {
        ($feat:literal, $dot:ident) => {
            #[target_feature(enable = $feat)]
            pub fn $dot<T>(
                a: &[T],
                oa: usize,
                sa: usize,
                b: &[T],
                ob: usize,
                sb: usize,
                n: usize,
            ) -> T
            where
                T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
            {
                super::dot_body(a, oa, sa, b, ob, sb, n)
            }
        };
    }
    isa!("avx2,fma", dot_avx2);
    isa!("avx512f,avx512dq,avx2,fma", dot_avx512);
}

/// `torch.dot` of float vectors: `n` elements of `a` from offset `oa`, `sa` apart, and of `b`
/// (any strides, 0 included), accumulated in the element type with independent lanes; split
/// across threads above `PAR_THRESHOLD` elements.
pub fn dot<T>(a: &[T], oa: usize, sa: usize, b: &[T], ob: usize, sb: usize, n: usize) -> T
where
    T: Copy + Default + Send + Sync + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let part = |start: usize, len: usize| -> T {
        let (oa, ob) = (oa + start * sa, ob + start * sb);
        best!(dot_body, dot_avx512, dot_avx2; a, oa, sa, b, ob, sb, len)
    };
    if !super::par_ok(n, super::PAR_THRESHOLD) {
        return part(0, n);
    }
    let per = n.div_ceil(super::num_threads().max(1));
    let ranges: Vec<(usize, usize)> = (0..n).step_by(per).map(|s| (s, per.min(n - s))).collect();
    super::parallel::map_each(ranges, &|_, (s, len)| part(s, len))
        .into_iter()
        .fold(T::default(), |x, y| x + y)
}

#[cfg(test)]
mod dot_tests {
    use super::dot;

    #[test]
    fn dot_of_contiguous_strided_and_expanded_vectors() {
        let a: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
        let b: Vec<f64> = (0..2000).map(|i| (i % 7) as f64 - 3.0).collect();
        let want = |sa: usize, sb: usize, n: usize| -> f64 {
            (0..n).map(|i| a[i * sa] * b[1 + i * sb]).sum()
        };
        for n in [0, 1, 63, 64, 65, 300, 999] {
            assert_eq!(dot(&a, 0, 1, &b, 1, 1, n), want(1, 1, n), "contiguous {n}");
            assert_eq!(dot(&a, 0, 1, &b, 1, 2, n), want(1, 2, n), "strided {n}");
            assert_eq!(dot(&a, 0, 0, &b, 1, 2, n), want(0, 2, n), "expanded {n}");
        }
    }
}
