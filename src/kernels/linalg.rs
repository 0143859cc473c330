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
