//! `torch.linalg`: inv, solve, det, slogdet, cholesky, qr, svd, eigh, pinv and lstsq. Each op
//! is its forward (a kernel in kernels/linalg.rs over the batch of matrices), what it saves, and
//! its backward written with differentiable ops (these same ones included), as PyTorch's
//! FunctionsManual.cpp writes them, so higher-order gradients work.

use super::binary::{add, div, mul, mul_scalar, sub};
use super::diagonal::{diag_embed, diagonal};
use super::matmul::matmul;
use super::rearrange::tri;
use super::shape::{broadcast_to, cat, narrow, squeeze, sum_to, transpose, unsqueeze};
use super::unary::neg;
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::autograd::GradModeGuard;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::linalg as k;
use crate::layout::broadcast_shapes;
use crate::tensor::Tensor;

fn mt(t: &Tensor) -> Result<Tensor> {
    transpose(t, -2, -1)
}

/// PyTorch's checks of a linalg input: a float32 / float64 tensor of at least 2 dims
/// (`square`: batches of square matrices). `kernel` names the LAPACK-backed kernel PyTorch
/// reports for float16 / bfloat16.
fn check_input(name: &str, kernel: &str, a: &Tensor, square: bool) -> Result<()> {
    let d = a.dtype();
    if !d.is_float() {
        return Err(Error::Runtime(format!(
            "{name}: Expected a floating point or complex tensor as input. Got {}",
            d.kernel_name()
        )));
    }
    if matches!(d, DType::F16 | DType::BF16) {
        return Err(Error::dtype_not_implemented(kernel, d));
    }
    if a.ndim() < 2 {
        return Err(Error::Runtime(format!(
            "{name}: The input tensor A must have at least 2 dimensions."
        )));
    }
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    if square && m != n {
        return Err(Error::Runtime(format!(
            "{name}: A must be batches of square matrices, but they are {m} by {n} matrices"
        )));
    }
    Ok(())
}

/// A failure of one matrix of the batch, prefixed as PyTorch's with the batch element when
/// the input is batched.
fn linalg_err(name: &str, batched: bool, index: usize, msg: String) -> Error {
    if batched {
        Error::LinAlg(format!("{name}: (Batch element {index}): {msg}"))
    } else {
        Error::LinAlg(format!("{name}: {msg}"))
    }
}

/// (batch, rows, cols) of a tensor of matrices.
fn dims(a: &Tensor) -> (usize, usize, usize) {
    let nd = a.ndim();
    let batch = a.shape()[..nd - 2].iter().product();
    (batch, a.shape()[nd - 2], a.shape()[nd - 1])
}

fn with_shape(shape: &[usize], last: &[usize]) -> Vec<usize> {
    let mut s = shape.to_vec();
    s.extend_from_slice(last);
    s
}

/// `inv` of a float tensor already checked, forward only.
fn inv_values(a: &Tensor, name: &str) -> Result<Tensor> {
    let (batch, n, _) = dims(a);
    dispatch_float!(a.dtype(), T => {
        let r = super::with_slice::<T, _>(a, |s| k::solve(s, None, batch, n, n))?;
        let v = r.map_err(|(i, z)| linalg_err(name, a.ndim() > 2, i, format!(
            "The diagonal element {z} is zero, the inversion could not be completed because the input matrix is singular."
        )))?;
        Tensor::from_vec(v, a.shape().to_vec())
    })
}

/// `linalg.inv` (LinalgInvExBackward0): gA = -A^{-T} gX A^{-T}.
pub fn inv(a: &Tensor) -> Result<Tensor> {
    check_input("linalg.inv", "lu_cpu", a, true)?;
    let out = inv_values(a, "linalg.inv")?;
    if needs_grad(&[a]) {
        record(
            "LinalgInvExBackward0",
            &[a],
            &[&out],
            vec![Saved::Output(out.clone(), 0)],
            |ctx| {
                let g = ctx.grad(0)?;
                let xt = mt(&ctx.saved[0])?;
                Ok(vec![Some(neg(&matmul(&matmul(&xt, &g)?, &xt)?)?)])
            },
        );
    }
    Ok(out)
}

/// Whether `b` is a batch of vectors for `a` in `solve` / `lstsq`: 1-D, or `a`'s shape
/// without its last dim (PyTorch's linalg_solve_is_vector_rhs).
pub fn is_vector_rhs(a: &Tensor, b: &Tensor) -> bool {
    b.ndim() == 1 || (b.ndim() + 1 == a.ndim() && b.shape() == &a.shape()[..a.ndim() - 1])
}

/// `linalg.solve(A, B)` with A on the left (LinalgSolveExBackward0): X = A^{-1} B with
/// broadcast batch dims, B a vector or a matrix; gB = A^{-T} gX, gA = -gB X^T.
pub fn solve(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_input("linalg.solve", "lu_cpu", a, true)?;
    if a.dtype() != b.dtype() {
        return Err(Error::Runtime(format!(
            "linalg.solve: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
            a.dtype().kernel_name(),
            b.dtype().kernel_name()
        )));
    }
    let vector = is_vector_rhs(a, b);
    let n = a.shape()[a.ndim() - 1];
    let (batch, x) = {
        let _g = GradModeGuard::new(false);
        let bm = if vector { unsqueeze(b, -1)? } else { b.clone() };
        let (bn, kk) = (bm.shape()[bm.ndim() - 2], bm.shape()[bm.ndim() - 1]);
        if bn != n {
            return Err(Error::Runtime(format!(
                "linalg.solve: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and {bn}x{kk})"
            )));
        }
        let batch = broadcast_shapes(&a.shape()[..a.ndim() - 2], &bm.shape()[..bm.ndim() - 2])?;
        let ae = super::contiguous(&broadcast_to(a, &with_shape(&batch, &[n, n]))?)?;
        let be = super::contiguous(&broadcast_to(&bm, &with_shape(&batch, &[n, kk]))?)?;
        let nb: usize = batch.iter().product();
        let x = dispatch_float!(a.dtype(), T => {
            let r = super::with_slices::<T, _>(&[Some(&ae), Some(&be)], |s| {
                k::solve(s[0].expect("given"), s[1], nb, n, kk)
            })?;
            let v = r.map_err(|(i, _)| linalg_err("torch.linalg.solve", !batch.is_empty(), i,
                "The solver failed because the input matrix is singular.".into()))?;
            Tensor::from_vec(v, with_shape(&batch, &[n, kk]))?
        });
        (batch, x)
    };
    let out = if vector { squeeze(&x, Some(&[-1]))? } else { x };
    if needs_grad(&[a, b]) {
        let (ashape, bshape) = (a.shape().to_vec(), b.shape().to_vec());
        let full_a = with_shape(&batch, &[n, n]);
        record(
            "LinalgSolveExBackward0",
            &[a, b],
            &[&out],
            vec![Saved::Input(a.clone()), Saved::Output(out.clone(), 0)],
            move |ctx| {
                let g = ctx.grad(0)?;
                let (a, x) = (&ctx.saved[0], &ctx.saved[1]);
                let (g, x) = if vector {
                    (unsqueeze(&g, -1)?, unsqueeze(x, -1)?)
                } else {
                    (g, x.clone())
                };
                let ae = broadcast_to(a, &full_a)?;
                let gb = solve(&mt(&ae)?, &g)?;
                let ga = ctx.grad_if(0, || sum_to(&neg(&matmul(&gb, &mt(&x)?)?)?, &ashape))?;
                let gb = ctx.grad_if(1, || {
                    let gb = if vector {
                        squeeze(&gb, Some(&[-1]))?
                    } else {
                        gb
                    };
                    sum_to(&gb, &bshape)
                })?;
                Ok(vec![ga, gb])
            },
        );
    }
    Ok(out)
}

/// `linalg.det` (LinalgDetBackward0): gA = (g det) A^{-T}.
pub fn det(a: &Tensor) -> Result<Tensor> {
    check_input("linalg.det", "lu_cpu", a, true)?;
    let (batch, n, _) = dims(a);
    let out = dispatch_float!(a.dtype(), T => {
        let v = super::with_slice::<T, _>(a, |s| k::det(s, batch, n))?;
        Tensor::from_vec(v, a.shape()[..a.ndim() - 2].to_vec())?
    });
    if needs_grad(&[a]) {
        record(
            "LinalgDetBackward0",
            &[a],
            &[&out],
            vec![Saved::Input(a.clone()), Saved::Output(out.clone(), 0)],
            |ctx| {
                let g = ctx.grad(0)?;
                let (a, d) = (&ctx.saved[0], &ctx.saved[1]);
                let gd = unsqueeze(&unsqueeze(&mul(&g, d)?, -1)?, -1)?;
                Ok(vec![Some(mul(&gd, &mt(&inv(a)?)?)?)])
            },
        );
    }
    Ok(out)
}

/// `linalg.slogdet` (LinalgSlogdetBackward0): `(sign, log|det|)`; gA = g_logabsdet A^{-T}
/// (the sign of a real matrix has no gradient).
pub fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    check_input("linalg.slogdet", "lu_cpu", a, true)?;
    let (batch, n, _) = dims(a);
    let bshape = a.shape()[..a.ndim() - 2].to_vec();
    let (sign, logabs) = dispatch_float!(a.dtype(), T => {
        let (s, l) = super::with_slice::<T, _>(a, |s| k::slogdet(s, batch, n))?;
        (Tensor::from_vec(s, bshape.clone())?, Tensor::from_vec(l, bshape)?)
    });
    if needs_grad(&[a]) {
        record(
            "LinalgSlogdetBackward0",
            &[a],
            &[&sign, &logabs],
            vec![Saved::Input(a.clone())],
            |ctx| {
                let g = ctx.grad(1)?;
                let g = unsqueeze(&unsqueeze(&g, -1)?, -1)?;
                Ok(vec![Some(mul(&g, &mt(&inv(&ctx.saved[0])?)?)?)])
            },
        );
    }
    Ok((sign, logabs))
}

/// `linalg.cholesky` (LinalgCholeskyExBackward0), reading the lower triangle; `upper`
/// returns `L^T`. gA = L^{-T} Φ(L^T gL) L^{-1}, symmetrized (PyTorch's cholesky_backward).
pub fn cholesky(a: &Tensor, upper: bool) -> Result<Tensor> {
    check_input("linalg.cholesky", "cholesky_cpu", a, true)?;
    let (batch, n, _) = dims(a);
    let out = dispatch_float!(a.dtype(), T => {
        let r = super::with_slice::<T, _>(a, |s| k::cholesky(s, batch, n, upper))?;
        let v = r.map_err(|(i, o)| linalg_err("linalg.cholesky", a.ndim() > 2, i, format!(
            "The factorization could not be completed because the input is not positive-definite (the leading minor of order {o} is not positive-definite)."
        )))?;
        Tensor::from_vec(v, a.shape().to_vec())?
    });
    if needs_grad(&[a]) {
        record(
            "LinalgCholeskyExBackward0",
            &[a],
            &[&out],
            vec![Saved::Output(out.clone(), 0)],
            move |ctx| {
                let g = ctx.grad(0)?;
                let l = &ctx.saved[0];
                let (l, g) = if upper {
                    (mt(l)?, mt(&g)?)
                } else {
                    (l.clone(), g)
                };
                let ga = tri(&matmul(&mt(&l)?, &g)?, 0, false)?;
                let ga = mul_scalar(&add(&ga, &mt(&tri(&ga, -1, false)?)?)?, 0.5)?;
                // L^{-T} gA, then (.) L^{-1} = (L^{-T} (.)^T)^T
                let ga = solve(&mt(&l)?, &ga)?;
                let ga = mt(&solve(&mt(&l)?, &mt(&ga)?)?)?;
                Ok(vec![Some(ga)])
            },
        );
    }
    Ok(out)
}

/// The gradient of a QR with m >= n (PyTorch's linalg_qr_backward):
/// gA = (gQ + Q syminvadj(triu(gR R^T - Q^T gQ))) R^{-T}.
fn qr_backward_tall(
    gq: Option<&Tensor>,
    gr: Option<&Tensor>,
    q: &Tensor,
    r: &Tensor,
) -> Result<Tensor> {
    let m = match (gq, gr) {
        (Some(gq), Some(gr)) => sub(&matmul(gr, &mt(r)?)?, &matmul(&mt(q)?, gq)?)?,
        (Some(gq), None) => neg(&matmul(&mt(q)?, gq)?)?,
        (None, Some(gr)) => matmul(gr, &mt(r)?)?,
        (None, None) => unreachable!("called with a gradient"),
    };
    let m = tri(&m, 0, true)?;
    // m + m^T with the diagonal counted once
    let sym = sub(
        &add(&m, &mt(&m)?)?,
        &diag_embed(&diagonal(&m, 0, -2, -1)?, 0, -2, -1)?,
    )?;
    let mut ga = matmul(q, &sym)?;
    if let Some(gq) = gq {
        ga = add(&ga, gq)?;
    }
    // ga R^{-T} = (R^{-1} ga^T)^T
    mt(&solve(r, &mt(&ga)?)?)
}

/// `linalg.qr` (LinalgQrBackward0): mode "reduced", "complete" or "r" (Q empty).
pub fn qr(a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
    let (complete, with_q) = match mode {
        "reduced" => (false, true),
        "complete" => (true, true),
        "r" => (false, false),
        _ => {
            return Err(Error::Runtime(format!(
                "qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
            )))
        }
    };
    check_input("linalg.qr", "geqrf_cpu", a, false)?;
    let (batch, m, n) = dims(a);
    let kq = if complete { m } else { m.min(n) };
    let bs = &a.shape()[..a.ndim() - 2];
    let (q, r) = dispatch_float!(a.dtype(), T => {
        let (qv, rv) = super::with_slice::<T, _>(a, |s| k::qr(s, batch, m, n, complete, with_q))?;
        let q = if with_q { Tensor::from_vec(qv, with_shape(bs, &[m, kq]))? } else { Tensor::from_vec(qv, vec![0])? };
        (q, Tensor::from_vec(rv, with_shape(bs, &[kq, n]))?)
    });
    if needs_grad(&[a]) {
        let mode = mode.to_string();
        record(
            "LinalgQrBackward0",
            &[a],
            &[&q, &r],
            vec![Saved::Output(q.clone(), 0), Saved::Output(r.clone(), 1)],
            move |ctx| {
                if mode == "r" {
                    return Err(Error::Runtime("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.".into()));
                }
                let (q, r) = (&ctx.saved[0], &ctx.saved[1]);
                let (m, n) = (q.shape()[q.ndim() - 2], r.shape()[r.ndim() - 1]);
                if mode == "complete" && m > n {
                    return Err(Error::Runtime("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.".into()));
                }
                let gq = ctx.grads[0].clone();
                let gr = ctx.grads[1].clone();
                if gq.is_none() && gr.is_none() {
                    return Ok(vec![None]);
                }
                if m >= n {
                    return Ok(vec![Some(qr_backward_tall(
                        gq.as_ref(),
                        gr.as_ref(),
                        q,
                        r,
                    )?)]);
                }
                // A = Q [R1 R2] with Y = Q R2: R2 = Q^T Y feeds gQ += Y gR2^T, gY = Q gR2
                let r1 = narrow(r, -1, 0, m as i64)?;
                let r2 = narrow(r, -1, m as i64, (n - m) as i64)?;
                let y = matmul(q, &r2)?;
                let gr = match gr {
                    Some(g) => g,
                    None => Tensor::zeros(r.shape(), r.dtype())?,
                };
                let (gr1, gr2) = (
                    narrow(&gr, -1, 0, m as i64)?,
                    narrow(&gr, -1, m as i64, (n - m) as i64)?,
                );
                let gq = match gq {
                    Some(g) => add(&g, &matmul(&y, &mt(&gr2)?)?)?,
                    None => matmul(&y, &mt(&gr2)?)?,
                };
                let gx = qr_backward_tall(Some(&gq), Some(&gr1), q, &r1)?;
                let gy = matmul(q, &gr2)?;
                Ok(vec![Some(cat(&[gx, gy], -1)?)])
            },
        );
    }
    Ok((q, r))
}

/// PyTorch's svd_backward for the thin factors (U m x k, S k, Vh k x n).
fn svd_backward(
    gu: Option<&Tensor>,
    gs: Option<&Tensor>,
    gvh: Option<&Tensor>,
    u: &Tensor,
    s: &Tensor,
    vh: &Tensor,
) -> Result<Option<Tensor>> {
    let (m, n, kk) = (
        u.shape()[u.ndim() - 2],
        vh.shape()[vh.ndim() - 1],
        s.shape()[s.ndim() - 1],
    );
    if gu.is_none() && gvh.is_none() {
        let Some(gs) = gs else { return Ok(None) };
        return Ok(Some(matmul(&mul(u, &unsqueeze(gs, -2)?)?, vh)?));
    }
    let skew = |x: &Tensor| -> Result<Tensor> { sub(x, &mt(x)?) };
    let s_row = unsqueeze(s, -2)?;
    let s_col = unsqueeze(s, -1)?;
    let s2 = mul(s, s)?;
    // E_ij = s_j^2 - s_i^2, with ones on the diagonal
    let e = sub(&unsqueeze(&s2, -2)?, &unsqueeze(&s2, -1)?)?;
    let ones = Tensor::full(s.shape(), crate::dtype::Scalar::Float(1.0), s.dtype())?;
    let e = add(&e, &diag_embed(&ones, 0, -2, -1)?)?;
    let mut inner: Option<Tensor> = None;
    if let Some(gu) = gu {
        let uhgu = skew(&matmul(&mt(u)?, gu)?)?;
        inner = Some(mul(&uhgu, &s_row)?);
    }
    if let Some(gvh) = gvh {
        let vhgv = skew(&matmul(vh, &mt(gvh)?)?)?;
        let t = mul(&s_col, &vhgv)?;
        inner = Some(match inner {
            Some(i) => add(&i, &t)?,
            None => t,
        });
    }
    let mut ga = div(&inner.expect("gU or gVh is given"), &e)?;
    if let Some(gs) = gs {
        ga = add(&ga, &diag_embed(gs, 0, -2, -1)?)?;
    }
    let ga = if let (true, Some(gu)) = (m > kk, gu) {
        let ga = matmul(u, &ga)?;
        let gusinv = div(gu, &s_row)?;
        let ga = add(&ga, &sub(&gusinv, &matmul(u, &matmul(&mt(u)?, &gusinv)?)?)?)?;
        matmul(&ga, vh)?
    } else if let (true, Some(gvh)) = (n > kk, gvh) {
        let ga = matmul(&ga, vh)?;
        let sinvgvh = div(gvh, &s_col)?;
        let ga = add(
            &ga,
            &sub(&sinvgvh, &matmul(&matmul(&sinvgvh, &mt(vh)?)?, vh)?)?,
        )?;
        matmul(u, &ga)?
    } else {
        matmul(&matmul(u, &ga)?, vh)?
    };
    Ok(Some(ga))
}

/// `linalg.svd` (LinalgSvdBackward0): `(U, S, Vh)`; `compute_uv` false gives empty U and Vh
/// (and records no node: the gradient needs them).
pub fn svd(a: &Tensor, full_matrices: bool, compute_uv: bool) -> Result<(Tensor, Tensor, Tensor)> {
    check_input("linalg.svd", "linalg_svd_cpu", a, false)?;
    let (batch, m, n) = dims(a);
    let kk = m.min(n);
    let (um, vn) = if full_matrices { (m, n) } else { (kk, kk) };
    let bs = &a.shape()[..a.ndim() - 2];
    let (u, s, vh) = dispatch_float!(a.dtype(), T => {
        let r = super::with_slice::<T, _>(a, |x| k::svd(x, batch, m, n, full_matrices, compute_uv))?;
        let (uv, sv, vv) = r.map_err(|i| linalg_err("linalg.svd", a.ndim() > 2, i,
            "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated singular values.".into()))?;
        let s = Tensor::from_vec(sv, with_shape(bs, &[kk]))?;
        if compute_uv {
            (Tensor::from_vec(uv, with_shape(bs, &[m, um]))?, s, Tensor::from_vec(vv, with_shape(bs, &[vn, n]))?)
        } else {
            (Tensor::from_vec(uv, vec![0])?, s, Tensor::from_vec(vv, vec![0])?)
        }
    });
    if compute_uv && needs_grad(&[a]) {
        record_svd(a, &u, &s, &vh, full_matrices);
    }
    Ok((u, s, vh))
}

fn record_svd(a: &Tensor, u: &Tensor, s: &Tensor, vh: &Tensor, full: bool) {
    record(
        "LinalgSvdBackward0",
        &[a],
        &[u, s, vh],
        vec![
            Saved::Output(u.clone(), 0),
            Saved::Output(s.clone(), 1),
            Saved::Output(vh.clone(), 2),
        ],
        move |ctx| {
            let (u, s, vh) = (&ctx.saved[0], &ctx.saved[1], &ctx.saved[2]);
            let kk = s.shape()[s.ndim() - 1] as i64;
            let narrow_u = |t: &Tensor| narrow(t, -1, 0, kk);
            let narrow_v = |t: &Tensor| narrow(t, -2, 0, kk);
            let (u, vh) = if full {
                (narrow_u(u)?, narrow_v(vh)?)
            } else {
                (u.clone(), vh.clone())
            };
            let gu = match &ctx.grads[0] {
                Some(g) if full => Some(narrow_u(g)?),
                g => g.clone(),
            };
            let gvh = match &ctx.grads[2] {
                Some(g) if full => Some(narrow_v(g)?),
                g => g.clone(),
            };
            Ok(vec![svd_backward(
                gu.as_ref(),
                ctx.grads[1].as_ref(),
                gvh.as_ref(),
                &u,
                s,
                &vh,
            )?])
        },
    );
}

/// `linalg.svdvals`: the singular values; when a gradient is needed, the thin factors are
/// computed too and the node is LinalgSvdBackward0's, as in PyTorch.
pub fn svdvals(a: &Tensor) -> Result<Tensor> {
    if needs_grad(&[a]) {
        let (u, s, vh) = svd(a, false, true)?;
        drop((u, vh));
        return Ok(s);
    }
    Ok(svd(a, false, false)?.1)
}

/// `linalg.eigh` (LinalgEighBackward0): eigenvalues ascending and eigenvectors as columns;
/// gA = V (diag(gL) + skew(V^T gV) / E) V^T with E_ij = L_j - L_i. `compute_v` false (eigvalsh)
/// returns an empty V unless a gradient is needed.
pub fn eigh(a: &Tensor, uplo: &str, compute_v: bool) -> Result<(Tensor, Tensor)> {
    let upper = match uplo {
        "L" | "l" => false,
        "U" | "u" => true,
        _ => {
            return Err(Error::Runtime(format!(
                "Expected UPLO argument to be 'L' or 'U', but got {uplo}"
            )))
        }
    };
    check_input("linalg.eigh", "linalg_eigh_cpu", a, true)?;
    let (batch, n, _) = dims(a);
    let with_v = compute_v || needs_grad(&[a]);
    let bs = &a.shape()[..a.ndim() - 2];
    let (w, v) = dispatch_float!(a.dtype(), T => {
        let r = super::with_slice::<T, _>(a, |x| k::eigh(x, batch, n, upper, with_v))?;
        let (wv, vv) = r.map_err(|i| linalg_err("linalg.eigh", a.ndim() > 2, i,
            "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues.".into()))?;
        let v = if with_v { Tensor::from_vec(vv, a.shape().to_vec())? } else { Tensor::from_vec(vv, vec![0])? };
        (Tensor::from_vec(wv, with_shape(bs, &[n]))?, v)
    });
    if needs_grad(&[a]) {
        record(
            "LinalgEighBackward0",
            &[a],
            &[&w, &v],
            vec![Saved::Output(w.clone(), 0), Saved::Output(v.clone(), 1)],
            |ctx| {
                let (l, v) = (&ctx.saved[0], &ctx.saved[1]);
                let gl = ctx.grads[0].as_ref();
                let inner = match ctx.grads[1].as_ref() {
                    Some(gv) => {
                        let vhgv = matmul(&mt(v)?, gv)?;
                        let vhgv = mul_scalar(&sub(&vhgv, &mt(&vhgv)?)?, 0.5)?;
                        let ones =
                            Tensor::full(l.shape(), crate::dtype::Scalar::Float(1.0), l.dtype())?;
                        let e = add(
                            &sub(&unsqueeze(l, -2)?, &unsqueeze(l, -1)?)?,
                            &diag_embed(&ones, 0, -2, -1)?,
                        )?;
                        let r = div(&vhgv, &e)?;
                        match gl {
                            Some(gl) => add(&r, &diag_embed(gl, 0, -2, -1)?)?,
                            None => r,
                        }
                    }
                    None => match gl {
                        Some(gl) => {
                            // V diag(gL) V^T
                            return Ok(vec![Some(matmul(&mul(v, &unsqueeze(gl, -2)?)?, &mt(v)?)?)]);
                        }
                        None => return Ok(vec![None]),
                    },
                };
                Ok(vec![Some(matmul(&matmul(v, &inner)?, &mt(v)?)?)])
            },
        );
    }
    Ok((w, v))
}

/// PyTorch's default relative tolerance of pinv / lstsq: eps * max(m, n).
pub fn default_rtol(a: &Tensor) -> f64 {
    let eps = if a.dtype() == DType::F32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    eps * m.max(n) as f64
}

/// PyTorch's pinv_backward: the gradient of `pinvA = pinv(A)` given `g` = d/d pinvA.
fn pinv_backward(g: &Tensor, p: &Tensor, a: &Tensor) -> Result<Tensor> {
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    let ph = mt(p)?;
    let gh = mt(g)?;
    if m <= n {
        let kk = matmul(&gh, p)?;
        let kph = matmul(&kk, &ph)?;
        let t1 = neg(&mt(&matmul(p, &kk)?)?)?;
        let t3 = matmul(&matmul(a, p)?, &kph)?;
        let t4 = matmul(&matmul(&ph, p)?, &sub(&gh, &matmul(&kk, a)?)?)?;
        add(&sub(&add(&t1, &kph)?, &t3)?, &t4)
    } else {
        let kk = matmul(p, &gh)?;
        let phk = matmul(&ph, &kk)?;
        let t1 = neg(&mt(&matmul(&kk, p)?)?)?;
        let t2 = matmul(&matmul(&sub(&gh, &matmul(a, &kk)?)?, p)?, &ph)?;
        let t4 = matmul(&matmul(&phk, p)?, a)?;
        sub(&add(&add(&t1, &t2)?, &phk)?, &t4)
    }
}

/// `linalg.pinv` (LinalgPinvBackward0) with float tolerances: singular values (eigenvalues,
/// `hermitian`) at most `max(atol, rtol * largest)` count as zero.
pub fn pinv(a: &Tensor, atol: f64, rtol: f64, hermitian: bool) -> Result<Tensor> {
    check_input("linalg.pinv", "linalg_svd_cpu", a, hermitian)?;
    let (batch, m, n) = dims(a);
    let out = dispatch_float!(a.dtype(), T => {
        let r = super::with_slice::<T, _>(a, |x| k::pinv(x, batch, m, n, atol, rtol, hermitian))?;
        let v = r.map_err(|i| linalg_err("linalg.pinv", a.ndim() > 2, i,
            "The algorithm failed to converge because the input matrix is ill-conditioned.".into()))?;
        Tensor::from_vec(v, with_shape(&a.shape()[..a.ndim() - 2], &[n, m]))?
    });
    if needs_grad(&[a]) {
        record(
            "LinalgPinvBackward0",
            &[a],
            &[&out],
            vec![Saved::Input(a.clone()), Saved::Output(out.clone(), 0)],
            |ctx| {
                let g = ctx.grad(0)?;
                Ok(vec![Some(pinv_backward(&g, &ctx.saved[1], &ctx.saved[0])?)])
            },
        );
    }
    Ok(out)
}

/// `linalg.lstsq` with the gelsy driver (LinalgLstsqBackward0): `(solution, rank)`, the
/// minimum-norm solution with singular values at most `rcond * largest` treated as zero;
/// batch dims broadcast, B a vector or a matrix. The gradient goes through `pinv(A)`.
pub fn lstsq(a: &Tensor, b: &Tensor, rcond: Option<f64>) -> Result<(Tensor, Tensor)> {
    check_input("torch.linalg.lstsq", "linalg_lstsq", a, false)?;
    if a.dtype() != b.dtype() {
        return Err(Error::Runtime(format!(
            "torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's dtype {} and other's dtype {}",
            a.dtype().torch_name(),
            b.dtype().torch_name()
        )));
    }
    let vector = is_vector_rhs(a, b);
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    let (x, rank) = {
        let _g = GradModeGuard::new(false);
        let bm = if vector { unsqueeze(b, -1)? } else { b.clone() };
        if bm.shape()[bm.ndim() - 2] != m {
            return Err(Error::Runtime(
                "torch.linalg.lstsq: input.size(-2) should match other.size(-2)".into(),
            ));
        }
        let kk = bm.shape()[bm.ndim() - 1];
        let batch = broadcast_shapes(&a.shape()[..a.ndim() - 2], &bm.shape()[..bm.ndim() - 2])?;
        let ae = super::contiguous(&broadcast_to(a, &with_shape(&batch, &[m, n]))?)?;
        let be = super::contiguous(&broadcast_to(&bm, &with_shape(&batch, &[m, kk]))?)?;
        let nb: usize = batch.iter().product();
        let rcond = rcond.unwrap_or_else(|| default_rtol(a));
        dispatch_float!(a.dtype(), T => {
            let r = super::with_slices::<T, _>(&[Some(&ae), Some(&be)], |s| {
                k::lstsq(s[0].expect("given"), s[1].expect("given"), nb, m, n, kk, rcond)
            })?;
            let (xv, ranks) = r.map_err(|i| linalg_err("torch.linalg.lstsq", !batch.is_empty(), i,
                "The algorithm failed to converge because the input matrix is ill-conditioned.".into()))?;
            let x = Tensor::from_vec(xv, with_shape(&batch, &[n, kk]))?;
            (if vector { squeeze(&x, Some(&[-1]))? } else { x }, Tensor::from_vec(ranks, batch.clone())?)
        })
    };
    if needs_grad(&[a, b]) {
        let (ashape, bshape) = (a.shape().to_vec(), b.shape().to_vec());
        record(
            "LinalgLstsqBackward0",
            &[a, b],
            &[&x, &rank],
            vec![Saved::Input(a.clone()), Saved::Input(b.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                let (a, b) = (&ctx.saved[0], &ctx.saved[1]);
                let (g, bm) = if vector {
                    (unsqueeze(&g, -1)?, unsqueeze(b, -1)?)
                } else {
                    (g, b.clone())
                };
                let p = pinv(a, 0.0, default_rtol(a), false)?;
                let ga = ctx.grad_if(0, || {
                    let gp = matmul(&g, &mt(&bm)?)?;
                    let ga = pinv_backward(&gp, &p, a)?;
                    sum_to(&ga, &ashape)
                })?;
                let gb = ctx.grad_if(1, || {
                    let gb = matmul(&mt(&p)?, &g)?;
                    let gb = if vector {
                        squeeze(&gb, Some(&[-1]))?
                    } else {
                        gb
                    };
                    sum_to(&gb, &bshape)
                })?;
                Ok(vec![ga, gb])
            },
        );
    }
    Ok((x, rank))
}

// --- triangular solves, Cholesky solves, LU, matrix exponential, cross product. The Python
// layer (ferrograd/linalg.py) checks the arguments with PyTorch's messages; these take
// float32 / float64 batches of matrices of matching sizes.

/// `a` (.. x n x n) and `b` (.. x n x k) broadcast over their batch dims, contiguous, with the
/// batch shape.
fn broadcast_pair(a: &Tensor, b: &Tensor) -> Result<(Vec<usize>, Tensor, Tensor)> {
    let (na, nb) = (a.ndim(), b.ndim());
    let batch = broadcast_shapes(&a.shape()[..na - 2], &b.shape()[..nb - 2])?;
    let ae = super::contiguous(&broadcast_to(a, &with_shape(&batch, &a.shape()[na - 2..]))?)?;
    let be = super::contiguous(&broadcast_to(b, &with_shape(&batch, &b.shape()[nb - 2..]))?)?;
    Ok((batch, ae, be))
}

/// `A X = B` with A triangular, forward only (the batch dims broadcast).
fn tri_solve_values(a: &Tensor, b: &Tensor, upper: bool, unit: bool) -> Result<Tensor> {
    let (batch, ae, be) = broadcast_pair(a, b)?;
    let n = a.shape()[a.ndim() - 1];
    let k = b.shape()[b.ndim() - 1];
    let nb: usize = batch.iter().product();
    dispatch_float!(a.dtype(), T => {
        let v = super::with_slices::<T, _>(&[Some(&ae), Some(&be)], |s| {
            k::solve_triangular(s[0].expect("given"), s[1].expect("given"), nb, n, k, upper, unit)
        })?;
        Tensor::from_vec(v, with_shape(&batch, &[n, k]))
    })
}

/// `linalg.solve_triangular` (LinalgSolveTriangularBackward0): X with `A X = B` (`left`
/// false: `X A = B`), reading A's `upper` or lower triangle (`unit`: ones on its diagonal).
/// gB = solve_triangular(A^T, gX) and gA = -gB X^T (left) or -X^T gB, on A's triangle.
pub fn solve_triangular(
    a: &Tensor,
    b: &Tensor,
    upper: bool,
    left: bool,
    unit: bool,
) -> Result<Tensor> {
    let out = {
        let _g = GradModeGuard::new(false);
        if left {
            tri_solve_values(a, b, upper, unit)?
        } else {
            mt(&tri_solve_values(&mt(a)?, &mt(b)?, !upper, unit)?)?
        }
    };
    if needs_grad(&[a, b]) {
        let (ashape, bshape) = (a.shape().to_vec(), b.shape().to_vec());
        record(
            "LinalgSolveTriangularBackward0",
            &[a, b],
            &[&out],
            vec![Saved::Input(a.clone()), Saved::Output(out.clone(), 0)],
            move |ctx| {
                let g = ctx.grad(0)?;
                let (a, x) = (&ctx.saved[0], &ctx.saved[1]);
                let gb = solve_triangular(&mt(a)?, &g, !upper, left, unit)?;
                let ga = ctx.grad_if(0, || {
                    let ga = if left {
                        neg(&matmul(&gb, &mt(x)?)?)?
                    } else {
                        neg(&matmul(&mt(x)?, &gb)?)?
                    };
                    let d = i64::from(unit);
                    let ga = tri(&ga, if upper { d } else { -d }, upper)?;
                    sum_to(&ga, &ashape)
                })?;
                let gb = ctx.grad_if(1, || sum_to(&gb, &bshape))?;
                Ok(vec![ga, gb])
            },
        );
    }
    Ok(out)
}

/// `cholesky_solve(B, L)` (CholeskySolveBackward0): X = (L L^T)^{-1} B (`upper`: L is U with
/// A = U^T U). gB = cholesky_solve(gX, L), gL = -(C + C^T) L (upper: -L (C + C^T)), C = gB X^T.
pub fn cholesky_solve(b: &Tensor, l: &Tensor, upper: bool) -> Result<Tensor> {
    let out = {
        let _g = GradModeGuard::new(false);
        if upper {
            let y = solve_triangular(&mt(l)?, b, false, true, false)?;
            solve_triangular(l, &y, true, true, false)?
        } else {
            let y = solve_triangular(l, b, false, true, false)?;
            solve_triangular(&mt(l)?, &y, true, true, false)?
        }
    };
    if needs_grad(&[b, l]) {
        let (bshape, lshape) = (b.shape().to_vec(), l.shape().to_vec());
        record(
            "CholeskySolveBackward0",
            &[b, l],
            &[&out],
            vec![Saved::Input(l.clone()), Saved::Output(out.clone(), 0)],
            move |ctx| {
                let g = ctx.grad(0)?;
                let (l, x) = (&ctx.saved[0], &ctx.saved[1]);
                let gb = cholesky_solve(&g, l, upper)?;
                let gl = ctx.grad_if(1, || {
                    let c = matmul(&gb, &mt(x)?)?;
                    let c = add(&c, &mt(&c)?)?;
                    let gl = if upper {
                        neg(&matmul(l, &c)?)?
                    } else {
                        neg(&matmul(&c, l)?)?
                    };
                    sum_to(&gl, &lshape)
                })?;
                let gb = ctx.grad_if(0, || sum_to(&gb, &bshape))?;
                Ok(vec![gb, gl])
            },
        );
    }
    Ok(out)
}

/// The identity matrices of `shape` (.. x n x n) in `dtype`.
fn eye_like(shape: &[usize], dtype: DType) -> Result<Tensor> {
    let n = shape[shape.len() - 1];
    let batch: usize = shape[..shape.len() - 2].iter().product();
    let mut v = vec![0.0f64; batch * n * n];
    for b in 0..batch {
        for i in 0..n {
            v[b * n * n + i * n + i] = 1.0;
        }
    }
    super::cast(&Tensor::from_vec(v, shape.to_vec())?, dtype)
}

/// `cholesky_inverse(L)` (CholeskyInverseBackward0): (L L^T)^{-1} (`upper`: (U^T U)^{-1});
/// with C = X (g + g^T) X, gL = -C L (upper: -L C).
pub fn cholesky_inverse(l: &Tensor, upper: bool) -> Result<Tensor> {
    let out = {
        let _g = GradModeGuard::new(false);
        cholesky_solve(&eye_like(l.shape(), l.dtype())?, l, upper)?
    };
    if needs_grad(&[l]) {
        record(
            "CholeskyInverseBackward0",
            &[l],
            &[&out],
            vec![Saved::Input(l.clone()), Saved::Output(out.clone(), 0)],
            move |ctx| {
                let g = ctx.grad(0)?;
                let (l, x) = (&ctx.saved[0], &ctx.saved[1]);
                let c = matmul(x, &matmul(&add(&g, &mt(&g)?)?, x)?)?;
                let gl = if upper {
                    neg(&matmul(l, &c)?)?
                } else {
                    neg(&matmul(&c, l)?)?
                };
                Ok(vec![Some(gl)])
            },
        );
    }
    Ok(out)
}

/// The permutation matrices P (.. x m x m, A = P L U) of LAPACK's 1-based pivots
/// (.. x k, each in 1..=m; checked by the caller).
pub fn pivots_to_perm(piv: &Tensor, m: usize, dtype: DType) -> Result<Tensor> {
    let k = piv.shape()[piv.ndim() - 1];
    let bshape = &piv.shape()[..piv.ndim() - 1];
    let batch: usize = bshape.iter().product();
    let p: Vec<i64> = super::cast_vec::<i64>(piv)?;
    let mut v = vec![0.0f64; batch * m * m];
    for b in 0..batch {
        let mut order: Vec<usize> = (0..m).collect();
        for i in 0..k {
            let j = (p[b * k + i] - 1).clamp(0, m as i64 - 1) as usize;
            order.swap(i, j);
        }
        // row i of P^T A is row order[i] of A
        for (i, &o) in order.iter().enumerate() {
            v[b * m * m + o * m + i] = 1.0;
        }
    }
    super::cast(&Tensor::from_vec(v, with_shape(bshape, &[m, m]))?, dtype)
}

/// L (m x k, unit lower) and U (k x n, upper) of packed LU factors, differentiably.
fn unpack_lu(lu: &Tensor) -> Result<(Tensor, Tensor)> {
    let (m, n) = (lu.shape()[lu.ndim() - 2], lu.shape()[lu.ndim() - 1]);
    let k = m.min(n);
    let l = narrow(&tri(lu, -1, false)?, -1, 0, k as i64)?;
    let mut eshape = lu.shape()[..lu.ndim() - 2].to_vec();
    eshape.extend_from_slice(&[m, k]);
    let eye = {
        let nb: usize = eshape[..eshape.len() - 2].iter().product();
        let mut v = vec![0.0f64; nb * m * k];
        for b in 0..nb {
            for i in 0..k {
                v[b * m * k + i * k + i] = 1.0;
            }
        }
        super::cast(&Tensor::from_vec(v, eshape)?, lu.dtype())?
    };
    let l = add(&l, &eye)?;
    let u = narrow(&tri(lu, 0, true)?, -2, 0, k as i64)?;
    Ok((l, u))
}

/// PyTorch's linalg_lu_backward: gA of A = P L U from gL (m x k) and gU (k x n).
fn lu_backward(
    gl: Option<&Tensor>,
    gu: Option<&Tensor>,
    p: &Tensor,
    l: &Tensor,
    u: &Tensor,
) -> Result<Tensor> {
    let (m, n) = (l.shape()[l.ndim() - 2], u.shape()[u.ndim() - 1]);
    let k = m.min(n) as i64;
    let ga = if m == n {
        let mut ga: Option<Tensor> = match gl {
            Some(gl) => Some(tri(&matmul(&mt(l)?, gl)?, -1, false)?),
            None => None,
        };
        if let Some(gu) = gu {
            let t = tri(&matmul(gu, &mt(u)?)?, 0, true)?;
            ga = Some(match ga {
                Some(g) => add(&g, &t)?,
                None => t,
            });
        }
        let ga = match ga {
            Some(g) => g,
            None => Tensor::zeros(&with_shape(&l.shape()[..l.ndim() - 2], &[m, n]), l.dtype())?,
        };
        let ga = solve_triangular(&mt(u)?, &ga, false, false, false)?;
        solve_triangular(&mt(l)?, &ga, true, true, true)?
    } else if m < n {
        // wide: U = [U1 U2]
        let u1 = narrow(u, -1, 0, k)?;
        let mut ga: Option<Tensor> = match gl {
            Some(gl) => Some(matmul(&mt(l)?, gl)?),
            None => None,
        };
        if let Some(gu) = gu {
            let t = matmul(&tri(gu, 0, true)?, &mt(u)?)?;
            ga = Some(match ga {
                Some(g) => sub(&g, &t)?,
                None => neg(&t)?,
            });
        }
        let ga = match ga {
            Some(g) => g,
            None => Tensor::zeros(&with_shape(&l.shape()[..l.ndim() - 2], &[m, m]), l.dtype())?,
        };
        let ga = solve_triangular(&mt(&u1)?, &tri(&ga, -1, false)?, false, false, false)?;
        let ga = match gu {
            Some(gu) => cat(
                &[
                    add(&ga, &tri(&narrow(gu, -1, 0, k)?, 0, true)?)?,
                    narrow(gu, -1, k, n as i64 - k)?,
                ],
                -1,
            )?,
            None => ga,
        };
        let ga = solve_triangular(&mt(l)?, &ga, true, true, true)?;
        if gu.is_none() {
            let z = Tensor::zeros(
                &with_shape(&l.shape()[..l.ndim() - 2], &[m, n - m]),
                l.dtype(),
            )?;
            cat(&[ga, z], -1)?
        } else {
            ga
        }
    } else {
        // tall: L = [L1; L2]
        let l1 = narrow(l, -2, 0, k)?;
        let mut ga: Option<Tensor> = match gu {
            Some(gu) => Some(matmul(gu, &mt(u)?)?),
            None => None,
        };
        if let Some(gl) = gl {
            let t = matmul(&mt(l)?, &tri(gl, -1, false)?)?;
            ga = Some(match ga {
                Some(g) => sub(&g, &t)?,
                None => neg(&t)?,
            });
        }
        let ga = match ga {
            Some(g) => g,
            None => Tensor::zeros(&with_shape(&u.shape()[..u.ndim() - 2], &[n, n]), u.dtype())?,
        };
        let ga = solve_triangular(&mt(&l1)?, &tri(&ga, 0, true)?, true, true, true)?;
        let ga = match gl {
            Some(gl) => cat(
                &[
                    add(&ga, &tri(&narrow(gl, -2, 0, k)?, -1, false)?)?,
                    narrow(gl, -2, k, m as i64 - k)?,
                ],
                -2,
            )?,
            None => ga,
        };
        let ga = solve_triangular(&mt(u)?, &ga, false, false, false)?;
        if gl.is_none() {
            let z = Tensor::zeros(
                &with_shape(&u.shape()[..u.ndim() - 2], &[m - n, n]),
                u.dtype(),
            )?;
            cat(&[ga, z], -2)?
        } else {
            ga
        }
    };
    matmul(p, &ga)
}

/// The packed LU, pivots (int32) and infos (int32) of each matrix of `a`, forward only.
fn lu_values(a: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let (batch, m, n) = dims(a);
    let k = m.min(n);
    let bs = &a.shape()[..a.ndim() - 2];
    dispatch_float!(a.dtype(), T => {
        let (lu, piv, info) = super::with_slice::<T, _>(a, |s| k::lu_factor(s, batch, m, n))?;
        Ok((
            Tensor::from_vec(lu, a.shape().to_vec())?,
            Tensor::from_vec(piv, with_shape(bs, &[k]))?,
            Tensor::from_vec(info, bs.to_vec())?,
        ))
    })
}

/// `linalg.lu_factor_ex` (LinalgLuFactorExBackward0): `(LU, pivots, info)` as LAPACK's getrf.
pub fn lu_factor(a: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let (lu, piv, info) = lu_values(a)?;
    if needs_grad(&[a]) {
        let m = a.shape()[a.ndim() - 2];
        let p = pivots_to_perm(&piv, m, a.dtype())?;
        record(
            "LinalgLuFactorExBackward0",
            &[a],
            &[&lu],
            vec![Saved::Output(lu.clone(), 0)],
            move |ctx| {
                let g = ctx.grad(0)?;
                let (l, u) = unpack_lu(&ctx.saved[0])?;
                let (gl, gu) = unpack_lu_grads(&g)?;
                Ok(vec![Some(lu_backward(Some(&gl), Some(&gu), &p, &l, &u)?)])
            },
        );
    }
    Ok((lu, piv, info))
}

/// The parts of a gradient of packed LU factors that reach L (strictly lower, m x k) and U.
fn unpack_lu_grads(g: &Tensor) -> Result<(Tensor, Tensor)> {
    let (m, n) = (g.shape()[g.ndim() - 2], g.shape()[g.ndim() - 1]);
    let k = m.min(n) as i64;
    Ok((
        narrow(&tri(g, -1, false)?, -1, 0, k)?,
        narrow(&tri(g, 0, true)?, -2, 0, k)?,
    ))
}

/// `lu_unpack(LU, pivots)` (LuUnpackBackward0): `(P, L, U)`; gLU = tril(gL, -1) + triu(gU)
/// placed in LU's shape.
pub fn lu_unpack(lu: &Tensor, piv: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let m = lu.shape()[lu.ndim() - 2];
    let p = pivots_to_perm(piv, m, lu.dtype())?;
    let (l, u) = {
        let _g = GradModeGuard::new(false);
        let (l, u) = unpack_lu(lu)?;
        (super::contiguous(&l)?, super::contiguous(&u)?)
    };
    if needs_grad(&[lu]) {
        let shape = lu.shape().to_vec();
        record("LuUnpackBackward0", &[lu], &[&l, &u], vec![], move |ctx| {
            let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
            let k = m.min(n);
            let bs = &shape[..shape.len() - 2];
            let mut g = Tensor::zeros(&shape, ctx.output_meta[0].1)?;
            if let Some(gl) = &ctx.grads[0] {
                let gl = tri(gl, -1, false)?;
                let gl = if k < n {
                    cat(
                        &[gl, Tensor::zeros(&with_shape(bs, &[m, n - k]), g.dtype())?],
                        -1,
                    )?
                } else {
                    gl
                };
                g = add(&g, &gl)?;
            }
            if let Some(gu) = &ctx.grads[1] {
                let gu = tri(gu, 0, true)?;
                let gu = if k < m {
                    cat(
                        &[gu, Tensor::zeros(&with_shape(bs, &[m - k, n]), g.dtype())?],
                        -2,
                    )?
                } else {
                    gu
                };
                g = add(&g, &gu)?;
            }
            Ok(vec![Some(g)])
        });
    }
    Ok((p, l, u))
}

/// `linalg.lu` (LinalgLuBackward0): `(P, L, U)` with A = P L U.
pub fn lu(a: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let (p, l, u) = {
        let _g = GradModeGuard::new(false);
        let (lu, piv, _) = lu_values(a)?;
        lu_unpack(&lu, &piv)?
    };
    if needs_grad(&[a]) {
        let pc = p.clone();
        record(
            "LinalgLuBackward0",
            &[a],
            &[&l, &u],
            vec![Saved::Output(l.clone(), 0), Saved::Output(u.clone(), 1)],
            move |ctx| {
                let (l, u) = (&ctx.saved[0], &ctx.saved[1]);
                Ok(vec![Some(lu_backward(
                    ctx.grads[0].as_ref(),
                    ctx.grads[1].as_ref(),
                    &pc,
                    l,
                    u,
                )?)])
            },
        );
    }
    Ok((p, l, u))
}

/// `A X = B` (`adjoint`: `A^T X = B`) from packed LU factors, forward only; batch dims of LU
/// (with its pivots) and B broadcast.
fn lu_solve_values(lu: &Tensor, piv: &Tensor, b: &Tensor, adjoint: bool) -> Result<Tensor> {
    let (batch, lue, be) = broadcast_pair(lu, b)?;
    let n = lu.shape()[lu.ndim() - 1];
    let k = b.shape()[b.ndim() - 1];
    let pe = broadcast_to(piv, &with_shape(&batch, &[n]))?;
    let pv: Vec<i32> = super::cast_vec::<i32>(&pe)?;
    let nb: usize = batch.iter().product();
    dispatch_float!(lu.dtype(), T => {
        let v = super::with_slices::<T, _>(&[Some(&lue), Some(&be)], |s| {
            k::lu_solve(s[0].expect("given"), &pv, s[1].expect("given"), nb, n, k, adjoint)
        })?;
        Tensor::from_vec(v, with_shape(&batch, &[n, k]))
    })
}

/// `linalg.lu_solve` (LinalgLuSolveBackward0): X with `A X = B` for A = P L U given packed
/// (`adjoint`: `A^T X = B`; `left` false: `X A = B` / `X A^T = B`). gB is the solve of the
/// transposed equation; gA = -gB X^T (or its transposed forms) reaches LU through
/// A = P L U: gL = tril(P^T gA U^T, -1), gU = triu(L^T P^T gA).
pub fn lu_solve(
    lu: &Tensor,
    piv: &Tensor,
    b: &Tensor,
    left: bool,
    adjoint: bool,
) -> Result<Tensor> {
    let out = {
        let _g = GradModeGuard::new(false);
        if left {
            lu_solve_values(lu, piv, b, adjoint)?
        } else {
            mt(&lu_solve_values(lu, piv, &mt(b)?, !adjoint)?)?
        }
    };
    if needs_grad(&[lu, b]) {
        let (lshape, bshape) = (lu.shape().to_vec(), b.shape().to_vec());
        let piv = piv.clone();
        record(
            "LinalgLuSolveBackward0",
            &[lu, b],
            &[&out],
            vec![Saved::Input(lu.clone()), Saved::Output(out.clone(), 0)],
            move |ctx| {
                let g = ctx.grad(0)?;
                let (lu, x) = (&ctx.saved[0], &ctx.saved[1]);
                let gb = lu_solve(lu, &piv, &g, left, !adjoint)?;
                let glu = ctx.grad_if(0, || {
                    let ga = match (left, adjoint) {
                        (true, false) => matmul(&gb, &mt(x)?)?,
                        (true, true) => matmul(x, &mt(&gb)?)?,
                        (false, false) => matmul(&mt(x)?, &gb)?,
                        (false, true) => matmul(&mt(&gb)?, x)?,
                    };
                    let ga = neg(&ga)?;
                    let n = lu.shape()[lu.ndim() - 1];
                    let p = pivots_to_perm(&piv, n, lu.dtype())?;
                    let (l, u) = unpack_lu(lu)?;
                    let ptga = matmul(&mt(&p)?, &ga)?;
                    let gl = tri(&matmul(&ptga, &mt(&u)?)?, -1, false)?;
                    let gu = tri(&matmul(&mt(&l)?, &ptga)?, 0, true)?;
                    sum_to(&add(&gl, &gu)?, &lshape)
                })?;
                let gb = ctx.grad_if(1, || sum_to(&gb, &bshape))?;
                Ok(vec![glu, gb])
            },
        );
    }
    Ok(out)
}

/// `linalg.matrix_exp` (LinalgMatrixExpBackward0): the gradient is the upper-right block of
/// exp([[A^T, g], [0, A^T]]), as PyTorch's backward_analytic_function_of_a_matrix.
pub fn matrix_exp(a: &Tensor) -> Result<Tensor> {
    let (batch, n, _) = dims(a);
    let out = dispatch_float!(a.dtype(), T => {
        let v = super::with_slice::<T, _>(a, |s| k::matrix_exp(s, batch, n))?;
        Tensor::from_vec(v, a.shape().to_vec())?
    });
    if needs_grad(&[a]) {
        record(
            "LinalgMatrixExpBackward0",
            &[a],
            &[&out],
            vec![Saved::Input(a.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                let at = mt(&ctx.saved[0])?;
                let z = Tensor::zeros(at.shape(), at.dtype())?;
                let top = cat(&[at.clone(), g], -1)?;
                let bottom = cat(&[z, at], -1)?;
                let e = matrix_exp(&cat(&[top, bottom], -2)?)?;
                let n = n as i64;
                Ok(vec![Some(narrow(&narrow(&e, -2, 0, n)?, -1, n, n)?)])
            },
        );
    }
    Ok(out)
}

/// `linalg.cross` (LinalgCrossBackward0) over the (wrapped, size-3) dim `dim` of the
/// broadcast inputs: gA = cross(B, g), gB = cross(g, A).
pub fn cross(a: &Tensor, b: &Tensor, dim: usize) -> Result<Tensor> {
    let out = {
        let _g = GradModeGuard::new(false);
        let shape = broadcast_shapes(a.shape(), b.shape())?;
        let (ae, be) = (broadcast_to(a, &shape)?, broadcast_to(b, &shape)?);
        let d = dim as i64;
        let c = |t: &Tensor, i: i64| narrow(t, d, i, 1);
        let comp = |i: i64, j: i64| -> Result<Tensor> {
            sub(
                &mul(&c(&ae, i)?, &c(&be, j)?)?,
                &mul(&c(&ae, j)?, &c(&be, i)?)?,
            )
        };
        cat(&[comp(1, 2)?, comp(2, 0)?, comp(0, 1)?], d)?
    };
    if needs_grad(&[a, b]) {
        let (ashape, bshape) = (a.shape().to_vec(), b.shape().to_vec());
        record(
            "LinalgCrossBackward0",
            &[a, b],
            &[&out],
            vec![Saved::Input(a.clone()), Saved::Input(b.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                let (a, b) = (&ctx.saved[0], &ctx.saved[1]);
                let ga = ctx.grad_if(0, || sum_to(&cross(b, &g, dim)?, &ashape))?;
                let gb = ctx.grad_if(1, || sum_to(&cross(&g, a, dim)?, &bshape))?;
                Ok(vec![ga, gb])
            },
        );
    }
    Ok(out)
}

/// PyTorch's deprecated `torch.triangular_solve(b, A)` (TriangularSolveBackward0):
/// `(X, a copy of A broadcast to X's batch)` with `A X = b` (`transpose`: `A^T X = b`) on A's
/// `upper` or lower triangle. gb = the solve of the transposed equation, gA = -gb X^T
/// (transpose: -X gb^T) on the triangle, plus the copy's gradient.
pub fn triangular_solve(
    b: &Tensor,
    a: &Tensor,
    upper: bool,
    transpose: bool,
    unit: bool,
) -> Result<(Tensor, Tensor)> {
    let (x, copy) = {
        let _g = GradModeGuard::new(false);
        let at = if transpose { mt(a)? } else { a.clone() };
        let x = solve_triangular(&at, b, upper != transpose, true, unit)?;
        let batch = &x.shape()[..x.ndim() - 2];
        let full = with_shape(batch, &a.shape()[a.ndim() - 2..]);
        (x.clone(), super::contiguous(&broadcast_to(a, &full)?)?)
    };
    if needs_grad(&[b, a]) {
        let (bshape, ashape) = (b.shape().to_vec(), a.shape().to_vec());
        record(
            "TriangularSolveBackward0",
            &[b, a],
            &[&x, &copy],
            vec![Saved::Input(a.clone()), Saved::Output(x.clone(), 0)],
            move |ctx| {
                let (a, x) = (&ctx.saved[0], &ctx.saved[1]);
                let (mut gb, mut ga) = (None, None);
                if let Some(gx) = &ctx.grads[0] {
                    let (g, _) = triangular_solve(gx, a, upper, !transpose, unit)?;
                    if ctx.needs(1) {
                        let t = if transpose {
                            neg(&matmul(x, &mt(&g)?)?)?
                        } else {
                            neg(&matmul(&g, &mt(x)?)?)?
                        };
                        let d = i64::from(unit);
                        ga = Some(tri(&t, if upper { d } else { -d }, upper)?);
                    }
                    gb = Some(sum_to(&g, &bshape)?);
                }
                if let (Some(gm), true) = (&ctx.grads[1], ctx.needs(1)) {
                    ga = Some(match ga {
                        Some(g) => add(&g, gm)?,
                        None => gm.clone(),
                    });
                }
                let ga = match ga {
                    Some(g) => Some(sum_to(&g, &ashape)?),
                    None => None,
                };
                Ok(vec![gb, ga])
            },
        );
    }
    Ok((x, copy))
}
