//! Dense linear algebra over batches of row-major matrices, through the `faer` crate: LU (inv,
//! solve, det, slogdet), Cholesky, QR, SVD, symmetric eigendecomposition, pseudo-inverse and
//! least squares. Each function takes the contiguous elements of `batch` matrices and returns
//! the contiguous outputs; the batch is split across threads only when it pays.

use super::parallel;
use crate::storage::Elem;
use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::{Mat, MatRef, Side};

/// The element types the decompositions run in (float32 and float64).
pub trait Real: Elem + faer::traits::RealField + Copy {
    fn eps() -> f64;
}
impl Real for f32 {
    fn eps() -> f64 {
        f32::EPSILON as f64
    }
}
impl Real for f64 {
    fn eps() -> f64 {
        f64::EPSILON
    }
}

fn mat<T: Real>(a: &[T], m: usize, n: usize) -> MatRef<'_, T> {
    MatRef::from_row_major_slice(a, m, n)
}

/// The elements of `m` in row-major order.
fn rows<T: Real>(m: MatRef<'_, T>) -> Vec<T> {
    let (r, c) = (m.nrows(), m.ncols());
    let mut out = Vec::with_capacity(r * c);
    for i in 0..r {
        for j in 0..c {
            out.push(m[(i, j)]);
        }
    }
    out
}

/// `m` transposed, row-major.
fn rows_t<T: Real>(m: MatRef<'_, T>) -> Vec<T> {
    rows(m.transpose())
}

/// `f(i)` for each matrix `i` of the batch, in order; across threads when `batch * cost`
/// (flops of the whole batch) is large enough and there is more than one matrix.
fn over_batch<R: Send>(batch: usize, cost: usize, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<R> {
    if batch > 1 && parallel::par_ok(batch.saturating_mul(cost), 1 << 18) {
        let per = batch.div_ceil(parallel::num_threads().max(1));
        let parts: Vec<usize> = (0..batch.div_ceil(per)).collect();
        parallel::map_each(parts, &|_, p| {
            (p * per..((p + 1) * per).min(batch))
                .map(f)
                .collect::<Vec<R>>()
        })
        .into_iter()
        .flatten()
        .collect()
    } else {
        (0..batch).map(f).collect()
    }
}

/// Concatenates per-matrix results, or returns the first failure with its batch index.
fn gather<T, E>(parts: Vec<Result<Vec<T>, E>>) -> Result<Vec<T>, (usize, E)> {
    let mut out = Vec::new();
    for (i, p) in parts.into_iter().enumerate() {
        out.extend(p.map_err(|e| (i, e))?);
    }
    Ok(out)
}

/// The 1-based index of the first zero on the diagonal of LU's U (LAPACK's `info`).
fn zero_pivot<T: Real>(u: MatRef<'_, T>) -> Option<usize> {
    (0..u.nrows().min(u.ncols()))
        .find(|&i| u[(i, i)] == T::from_f64(0.0))
        .map(|i| i + 1)
}

/// `A^{-1} B` for `batch` pairs (A: n x n, B: n x k); B `None` gives `A^{-1}`. Err: the batch
/// index and the 1-based position of the zero pivot of a singular A.
pub fn solve<T: Real>(
    a: &[T],
    b: Option<&[T]>,
    batch: usize,
    n: usize,
    k: usize,
) -> Result<Vec<T>, (usize, usize)> {
    let k = if b.is_some() { k } else { n };
    gather(over_batch(batch, n * n * (n + k), &|i| {
        let lu = mat(&a[i * n * n..(i + 1) * n * n], n, n).partial_piv_lu();
        if let Some(z) = zero_pivot(lu.U()) {
            return Err(z);
        }
        Ok(match b {
            Some(b) => rows(lu.solve(mat(&b[i * n * k..(i + 1) * n * k], n, k)).as_ref()),
            None => rows(lu.inverse().as_ref()),
        })
    }))
}

/// `(sign, log|det|)` of each n x n matrix: sign 0 and log|det| -inf for a singular one.
pub fn slogdet<T: Real>(a: &[T], batch: usize, n: usize) -> (Vec<T>, Vec<T>) {
    let parts = over_batch(batch, n * n * n, &|i| {
        if n == 0 {
            return (1.0, 0.0);
        }
        let lu = mat(&a[i * n * n..(i + 1) * n * n], n, n).partial_piv_lu();
        let u = lu.U();
        let (mut sign, mut logabs) = (1.0f64, 0.0f64);
        for j in 0..n {
            let d = u[(j, j)].to_f64();
            if d == 0.0 {
                return (0.0, f64::NEG_INFINITY);
            }
            if d < 0.0 {
                sign = -sign;
            }
            logabs += d.abs().ln();
        }
        // parity of the row permutation: n minus its number of cycles
        let fwd = lu.P().arrays().0;
        let mut seen = vec![false; n];
        let mut cycles = 0;
        for s in 0..n {
            if !seen[s] {
                cycles += 1;
                let mut j = s;
                while !seen[j] {
                    seen[j] = true;
                    j = fwd[j];
                }
            }
        }
        if (n - cycles) % 2 == 1 {
            sign = -sign;
        }
        (sign, logabs)
    });
    parts
        .into_iter()
        .map(|(s, l)| (T::from_f64(s), T::from_f64(l)))
        .unzip()
}

/// `det` of each n x n matrix (through LU: the product of U's diagonal and the pivots' sign).
pub fn det<T: Real>(a: &[T], batch: usize, n: usize) -> Vec<T> {
    over_batch(batch, n * n * n, &|i| {
        if n == 0 {
            return T::from_f64(1.0);
        }
        let lu = mat(&a[i * n * n..(i + 1) * n * n], n, n).partial_piv_lu();
        let u = lu.U();
        let mut d = 1.0f64;
        for j in 0..n {
            let p = u[(j, j)].to_f64();
            // past a zero pivot faer's factor holds 0/0s: the determinant is 0
            if p == 0.0 {
                return T::from_f64(0.0);
            }
            d *= p;
        }
        let fwd = lu.P().arrays().0;
        let mut seen = vec![false; n];
        let mut cycles = 0;
        for s in 0..n {
            if !seen[s] {
                cycles += 1;
                let mut j = s;
                while !seen[j] {
                    seen[j] = true;
                    j = fwd[j];
                }
            }
        }
        if (n - cycles) % 2 == 1 {
            d = -d;
        }
        T::from_f64(d)
    })
}

/// The Cholesky factor of each n x n matrix (read from its lower triangle; `upper` returns
/// `L^T`). Err: the batch index and the order of the first leading minor that is not positive.
pub fn cholesky<T: Real>(
    a: &[T],
    batch: usize,
    n: usize,
    upper: bool,
) -> Result<Vec<T>, (usize, usize)> {
    gather(over_batch(batch, n * n * n / 3, &|i| {
        let m = mat(&a[i * n * n..(i + 1) * n * n], n, n);
        match m.llt(Side::Lower) {
            Ok(llt) => {
                let l = llt.L();
                let mut out = if upper { rows_t(l) } else { rows(l) };
                // faer leaves the other triangle unspecified
                for r in 0..n {
                    for c in 0..n {
                        if (upper && c < r) || (!upper && c > r) {
                            out[r * n + c] = T::from_f64(0.0);
                        }
                    }
                }
                Ok(out)
            }
            Err(faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }) => {
                Err(index + 1)
            }
        }
    }))
}

/// QR of each m x n matrix: `(Q, R)` with Q m x q and R q x n, where q = min(m, n)
/// (`complete`: q = m); `with_q` false leaves Q empty.
pub fn qr<T: Real>(
    a: &[T],
    batch: usize,
    m: usize,
    n: usize,
    complete: bool,
    with_q: bool,
) -> (Vec<T>, Vec<T>) {
    let q = if complete { m } else { m.min(n) };
    let parts = over_batch(batch, m * n * n.max(1), &|i| {
        let f = mat(&a[i * m * n..(i + 1) * m * n], m, n).qr();
        let r = f.R();
        let mut rr = vec![T::from_f64(0.0); q * n];
        for row in 0..q.min(r.nrows()) {
            for c in row..n {
                rr[row * n + c] = r[(row, c)];
            }
        }
        let qq = if !with_q {
            Vec::new()
        } else if complete {
            rows(f.compute_Q().as_ref())
        } else {
            rows(f.compute_thin_Q().as_ref())
        };
        (qq, rr)
    });
    let (mut qs, mut rs) = (Vec::new(), Vec::new());
    for (qq, rr) in parts {
        qs.extend(qq);
        rs.extend(rr);
    }
    (qs, rs)
}

/// Three factors of a batch (U, S, Vh), each contiguous.
pub type Factors3<T> = (Vec<T>, Vec<T>, Vec<T>);

/// SVD of each m x n matrix: `(U, S, Vh)`, singular values in nonincreasing order; U m x m and
/// Vh n x n with `full`, else m x k and k x n (k = min(m, n)); `with_uv` false gives S only.
/// Err: the batch index of a matrix the iteration did not converge on.
pub fn svd<T: Real>(
    a: &[T],
    batch: usize,
    m: usize,
    n: usize,
    full: bool,
    with_uv: bool,
) -> Result<Factors3<T>, usize> {
    let k = m.min(n);
    let parts = over_batch(batch, m * n * k.max(1) * 4, &|i| {
        let x = mat(&a[i * m * n..(i + 1) * m * n], m, n);
        if k == 0 {
            let eye = |d: usize| rows(Mat::<T>::identity(d, d).as_ref());
            return Ok(if with_uv && full {
                (eye(m), Vec::new(), eye(n))
            } else {
                (Vec::new(), Vec::new(), Vec::new())
            });
        }
        if !with_uv {
            return x.singular_values().map(|s| (Vec::new(), s, Vec::new()));
        }
        let f = if full { x.svd() } else { x.thin_svd() }?;
        let s = f.S().column_vector();
        Ok((rows(f.U()), (0..k).map(|j| s[j]).collect(), rows_t(f.V())))
    });
    let (mut us, mut ss, mut vs) = (Vec::new(), Vec::new(), Vec::new());
    for (i, p) in parts.into_iter().enumerate() {
        let (u, s, v) = p.map_err(|_: faer::linalg::svd::SvdError| i)?;
        us.extend(u);
        ss.extend(s);
        vs.extend(v);
    }
    Ok((us, ss, vs))
}

/// Eigendecomposition of each symmetric n x n matrix, read from its lower (or `upper`)
/// triangle: `(eigenvalues in nondecreasing order, eigenvectors as columns)`; `with_v` false
/// gives the eigenvalues only. Err: the batch index of a matrix that did not converge.
pub fn eigh<T: Real>(
    a: &[T],
    batch: usize,
    n: usize,
    upper: bool,
    with_v: bool,
) -> Result<(Vec<T>, Vec<T>), usize> {
    let side = if upper { Side::Upper } else { Side::Lower };
    let parts = over_batch(batch, n * n * n * 4, &|i| {
        let x = mat(&a[i * n * n..(i + 1) * n * n], n, n);
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        if !with_v {
            return x.self_adjoint_eigenvalues(side).map(|w| (w, Vec::new()));
        }
        let f = x.self_adjoint_eigen(side)?;
        let w = f.S().column_vector();
        Ok(((0..n).map(|j| w[j]).collect(), rows(f.U())))
    });
    let (mut ws, mut vs) = (Vec::new(), Vec::new());
    for (i, p) in parts.into_iter().enumerate() {
        let (w, v) = p.map_err(|_: faer::linalg::evd::EvdError| i)?;
        ws.extend(w);
        vs.extend(v);
    }
    Ok((ws, vs))
}

/// `V diag(1/s_j for s_j > tol) U^T` (n x m) from a thin SVD or EVD, with the rank kept.
fn pinv_from<T: Real>(u: MatRef<'_, T>, s: &[f64], v: MatRef<'_, T>, tol: f64) -> (Vec<T>, usize) {
    let (m, n, k) = (u.nrows(), v.nrows(), s.len());
    let mut out = vec![0.0f64; n * m];
    let mut rank = 0;
    for (j, &sj) in s.iter().enumerate().take(k) {
        if sj.abs() <= tol || sj == 0.0 {
            continue;
        }
        rank += 1;
        let inv = 1.0 / sj;
        for r in 0..n {
            let vr = v[(r, j)].to_f64() * inv;
            for c in 0..m {
                out[r * m + c] += vr * u[(c, j)].to_f64();
            }
        }
    }
    (out.into_iter().map(T::from_f64).collect(), rank)
}

/// The pseudo-inverse of each m x n matrix: singular values (or, `hermitian`, eigenvalues in
/// absolute value) at most `max(atol, rtol * largest)` are treated as zero. Err: the batch
/// index of a matrix that did not converge.
pub fn pinv<T: Real>(
    a: &[T],
    batch: usize,
    m: usize,
    n: usize,
    atol: f64,
    rtol: f64,
    hermitian: bool,
) -> Result<Vec<T>, usize> {
    let k = m.min(n);
    let parts = over_batch(batch, m * n * k.max(1) * 4, &|i| {
        let x = mat(&a[i * m * n..(i + 1) * m * n], m, n);
        if k == 0 {
            return Ok(vec![T::from_f64(0.0); m * n]);
        }
        if hermitian {
            let f = x.self_adjoint_eigen(Side::Lower).map_err(|_| ())?;
            let w = f.S().column_vector();
            let s: Vec<f64> = (0..n).map(|j| w[j].to_f64()).collect();
            let big = s.iter().fold(0.0f64, |a, &b| a.max(b.abs()));
            Ok(pinv_from(f.U(), &s, f.U(), atol.max(rtol * big)).0)
        } else {
            let f = x.thin_svd().map_err(|_| ())?;
            let sv = f.S().column_vector();
            let s: Vec<f64> = (0..k).map(|j| sv[j].to_f64()).collect();
            Ok(pinv_from(f.U(), &s, f.V(), atol.max(rtol * s[0])).0)
        }
    });
    gather(parts).map_err(|(i, ())| i)
}

/// Least squares `min ||A X - B||` for each pair (A: m x n, B: m x k): the minimum-norm
/// solution (n x k) with singular values at most `rcond * largest` treated as zero, and the
/// effective rank (as LAPACK's gelsy computes both). Err: the batch index of a matrix that did
/// not converge.
pub fn lstsq<T: Real>(
    a: &[T],
    b: &[T],
    batch: usize,
    m: usize,
    n: usize,
    k: usize,
    rcond: f64,
) -> Result<(Vec<T>, Vec<i64>), usize> {
    let q = m.min(n);
    let parts = over_batch(batch, m * n * q.max(1) * 4, &|i| {
        let x = mat(&a[i * m * n..(i + 1) * m * n], m, n);
        let rhs = mat(&b[i * m * k..(i + 1) * m * k], m, k);
        if q == 0 {
            return Ok((vec![T::from_f64(0.0); n * k], 0));
        }
        let f = x.thin_svd().map_err(|_| ())?;
        let sv = f.S().column_vector();
        let s: Vec<f64> = (0..q).map(|j| sv[j].to_f64()).collect();
        let (p, rank) = pinv_from(f.U(), &s, f.V(), rcond * s[0]);
        let sol = mat(&p, n, m) * rhs;
        Ok((rows(sol.as_ref()), rank as i64))
    });
    let (mut xs, mut ranks) = (Vec::new(), Vec::new());
    for (i, p) in parts.into_iter().enumerate() {
        let (xx, r) = p.map_err(|()| i)?;
        xs.extend(xx);
        ranks.push(r);
    }
    Ok((xs, ranks))
}

// --- LU with LAPACK's pivots, triangular solves, matrix exponential

/// LAPACK's sequential row swaps (`ipiv`, 1-based) for the row permutation `fwd` (row i of
/// P A is row `fwd[i]` of A), over the first `k` rows.
fn swaps_of(fwd: &[usize], k: usize) -> Vec<i32> {
    let m = fwd.len();
    let mut at: Vec<usize> = (0..m).collect(); // original row now at position r
    let mut pos: Vec<usize> = (0..m).collect(); // position of original row
    let mut out = Vec::with_capacity(k);
    for i in 0..k {
        let j = pos[fwd[i]];
        out.push(j as i32 + 1);
        let (ri, rj) = (at[i], at[j]);
        at.swap(i, j);
        pos[ri] = j;
        pos[rj] = i;
    }
    out
}

/// LAPACK's unblocked getf2 on a row-major m x n matrix, in place: the pivot is the first
/// entry of largest magnitude; a zero pivot leaves its column unscaled (and sets `info`).
fn getf2(a: &mut [f64], m: usize, n: usize) -> (Vec<i32>, i32) {
    let k = m.min(n);
    let mut piv = Vec::with_capacity(k);
    let mut info = 0;
    for j in 0..k {
        let mut p = j;
        for i in j + 1..m {
            if a[i * n + j].abs() > a[p * n + j].abs() {
                p = i;
            }
        }
        piv.push(p as i32 + 1);
        if a[p * n + j] != 0.0 {
            if p != j {
                for c in 0..n {
                    a.swap(j * n + c, p * n + c);
                }
            }
            let d = a[j * n + j];
            for i in j + 1..m {
                a[i * n + j] /= d;
            }
        } else if info == 0 {
            info = j as i32 + 1;
        }
        for i in j + 1..m {
            let l = a[i * n + j];
            if l != 0.0 {
                for c in j + 1..n {
                    a[i * n + c] -= l * a[j * n + c];
                }
            }
        }
    }
    (piv, info)
}

/// LU with partial pivoting of each m x n matrix, as LAPACK's getrf returns it: the packed
/// factors (L's unit diagonal implicit), the 1-based pivots (min(m, n) per matrix) and info
/// (0, or the 1-based position of the first zero pivot). faer factors; a matrix with a zero
/// pivot (where faer's factor holds 0/0s) is refactored the way LAPACK does.
pub fn lu_factor<T: Real>(
    a: &[T],
    batch: usize,
    m: usize,
    n: usize,
) -> (Vec<T>, Vec<i32>, Vec<i32>) {
    let k = m.min(n);
    let parts = over_batch(batch, m * n * k.max(1), &|i| {
        let x = &a[i * m * n..(i + 1) * m * n];
        let lu = mat(x, m, n).partial_piv_lu();
        let (l, u) = (lu.L(), lu.U());
        let mut packed = vec![T::from_f64(0.0); m * n];
        let mut clean = true;
        for r in 0..m {
            for c in 0..n {
                let v = if c < r { l[(r, c)] } else { u[(r, c)] };
                packed[r * n + c] = v;
            }
        }
        for j in 0..k {
            if u[(j, j)] == T::from_f64(0.0) || !u[(j, j)].to_f64().is_finite() {
                clean = false;
            }
        }
        if clean {
            return (packed, swaps_of(lu.P().arrays().0, k), 0);
        }
        let mut w: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
        let (piv, info) = getf2(&mut w, m, n);
        (w.into_iter().map(T::from_f64).collect(), piv, info)
    });
    let (mut lus, mut pivs, mut infos) = (Vec::new(), Vec::new(), Vec::new());
    for (l, p, i) in parts {
        lus.extend(l);
        pivs.extend(p);
        infos.push(i);
    }
    (lus, pivs, infos)
}

/// Solves `A X = B` for each triangular n x n A (only its `upper` or lower triangle read;
/// `unit`: its diagonal taken as ones) and n x k B. A zero on the diagonal gives inf / NaN,
/// as LAPACK's trtrs without its check.
pub fn solve_triangular<T: Real>(
    a: &[T],
    b: &[T],
    batch: usize,
    n: usize,
    k: usize,
    upper: bool,
    unit: bool,
) -> Vec<T> {
    use faer::linalg::triangular_solve as ts;
    let parts = over_batch(batch, n * n * k.max(1), &|i| {
        let t = mat(&a[i * n * n..(i + 1) * n * n], n, n);
        let mut x = mat(&b[i * n * k..(i + 1) * n * k], n, k).to_owned();
        let par = faer::Par::Seq;
        match (upper, unit) {
            (true, true) => ts::solve_unit_upper_triangular_in_place(t, x.as_mut(), par),
            (true, false) => ts::solve_upper_triangular_in_place(t, x.as_mut(), par),
            (false, true) => ts::solve_unit_lower_triangular_in_place(t, x.as_mut(), par),
            (false, false) => ts::solve_lower_triangular_in_place(t, x.as_mut(), par),
        }
        rows(x.as_ref())
    });
    parts.into_iter().flatten().collect()
}

/// Solves `A X = B` (`adjoint`: `A^T X = B`) for each n x n A = P L U given as LAPACK's packed
/// LU and 1-based pivots, with n x k B.
pub fn lu_solve<T: Real>(
    lu: &[T],
    piv: &[i32],
    b: &[T],
    batch: usize,
    n: usize,
    k: usize,
    adjoint: bool,
) -> Vec<T> {
    use faer::linalg::triangular_solve as ts;
    let parts = over_batch(batch, n * n * k.max(1), &|i| {
        let f = mat(&lu[i * n * n..(i + 1) * n * n], n, n);
        let p = &piv[i * n..(i + 1) * n];
        let mut x = mat(&b[i * n * k..(i + 1) * n * k], n, k).to_owned();
        let par = faer::Par::Seq;
        let swap_rows = |x: &mut Mat<T>, r: usize, s: usize| {
            if r != s {
                for c in 0..k {
                    let t = x[(r, c)];
                    x[(r, c)] = x[(s, c)];
                    x[(s, c)] = t;
                }
            }
        };
        if !adjoint {
            // P^T B: the swaps in order, then L^{-1}, then U^{-1}
            for (r, &s) in p.iter().enumerate() {
                swap_rows(&mut x, r, s as usize - 1);
            }
            ts::solve_unit_lower_triangular_in_place(f, x.as_mut(), par);
            ts::solve_upper_triangular_in_place(f, x.as_mut(), par);
        } else {
            // A^T = U^T L^T P^T: U^{-T}, L^{-T}, then P (the swaps in reverse)
            ts::solve_lower_triangular_in_place(f.transpose(), x.as_mut(), par);
            ts::solve_unit_upper_triangular_in_place(f.transpose(), x.as_mut(), par);
            for (r, &s) in p.iter().enumerate().rev() {
                swap_rows(&mut x, r, s as usize - 1);
            }
        }
        rows(x.as_ref())
    });
    parts.into_iter().flatten().collect()
}

/// The matrix exponential of each n x n matrix: Higham's (2005) scaling and squaring with
/// the Padé approximant of degree 3, 5, 7, 9 or 13 chosen from the 1-norm, in float64.
pub fn matrix_exp<T: Real>(a: &[T], batch: usize, n: usize) -> Vec<T> {
    const THETA: [(usize, f64); 4] = [
        (3, 1.495585217958292e-2),
        (5, 2.539_398_330_063_23e-1),
        (7, 9.504178996162932e-1),
        (9, 2.097847961257068e0),
    ];
    const THETA13: f64 = 5.371920351148152;
    const B: [&[f64]; 4] = [
        &[120., 60., 12., 1.],
        &[30240., 15120., 3360., 420., 30., 1.],
        &[
            17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.,
        ],
        &[
            17643225600.,
            8821612800.,
            2075673600.,
            302702400.,
            30270240.,
            2162160.,
            110880.,
            3960.,
            90.,
            1.,
        ],
    ];
    const B13: [f64; 14] = [
        64764752532480000.,
        32382376266240000.,
        7771770303897600.,
        1187353796428800.,
        129060195264000.,
        10559470521600.,
        670442572800.,
        33522128640.,
        1323241920.,
        40840800.,
        960960.,
        16380.,
        182.,
        1.,
    ];
    let parts = over_batch(batch, n * n * n * 8, &|i| {
        let x = &a[i * n * n..(i + 1) * n * n];
        let mut am = Mat::<f64>::from_fn(n, n, |r, c| x[r * n + c].to_f64());
        if n == 0 {
            return Vec::new();
        }
        let norm1 = (0..n)
            .map(|c| (0..n).map(|r| am[(r, c)].abs()).sum::<f64>())
            .fold(0.0f64, f64::max);
        if !norm1.is_finite() {
            return vec![T::from_f64(f64::NAN); n * n];
        }
        let eye = Mat::<f64>::identity(n, n);
        let (u, v, squarings) = if let Some(&(deg, _)) = THETA.iter().find(|t| norm1 <= t.1) {
            let b = B[THETA.iter().position(|t| t.0 == deg).expect("listed")];
            let a2 = &am * &am;
            let mut pw = eye.clone(); // A^(2j)
            let mut u = Mat::<f64>::zeros(n, n);
            let mut v = Mat::<f64>::zeros(n, n);
            for j in 0..=deg / 2 {
                u += b[2 * j + 1] * &pw;
                v += b[2 * j] * &pw;
                pw = &pw * &a2;
            }
            (&am * &u, v, 0)
        } else {
            let s = (norm1 / THETA13).log2().ceil().max(0.0) as i32;
            am *= faer::Scale(0.5f64.powi(s));
            let b = &B13;
            let a2 = &am * &am;
            let a4 = &a2 * &a2;
            let a6 = &a4 * &a2;
            let inner_u = b[13] * &a6 + b[11] * &a4 + b[9] * &a2;
            let u = &a6 * &inner_u + b[7] * &a6 + b[5] * &a4 + b[3] * &a2 + b[1] * &eye;
            let inner_v = b[12] * &a6 + b[10] * &a4 + b[8] * &a2;
            let v = &a6 * &inner_v + b[6] * &a6 + b[4] * &a4 + b[2] * &a2 + b[0] * &eye;
            (&am * &u, v, s)
        };
        let p = &v + &u;
        let q = &v - &u;
        let mut r = q.partial_piv_lu().solve(&p);
        for _ in 0..squarings {
            r = &r * &r;
        }
        (0..n * n)
            .map(|j| T::from_f64(r[(j / n, j % n)]))
            .collect::<Vec<T>>()
    });
    parts.into_iter().flatten().collect()
}
