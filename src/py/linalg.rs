//! Bindings of `torch.linalg`'s native ops (ops/linalg.rs); `ferrograd.linalg` wraps them.

use super::errors::{run, Work};
use super::tensor::PyTensor;
use crate::ops::linalg as la;
use crate::tensor::Tensor;
use pyo3::prelude::*;

/// Work of a cubic-cost op on `a`: elements times the last dim.
fn cubic(ts: &[&Tensor]) -> Work {
    let n = ts
        .iter()
        .map(|t| {
            t.numel()
                .saturating_mul(t.shape().last().copied().unwrap_or(1))
        })
        .sum();
    Work::over(ts.iter().copied(), n)
}

#[pyfunction]
fn _linalg_inv(py: Python<'_>, a: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let a = a.t.clone();
    run(py, cubic(&[&a]), move || la::inv(&a)).map(PyTensor::new)
}

#[pyfunction]
fn _linalg_solve(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    b: PyRef<'_, PyTensor>,
) -> PyResult<PyTensor> {
    let (a, b) = (a.t.clone(), b.t.clone());
    run(py, cubic(&[&a, &b]), move || la::solve(&a, &b)).map(PyTensor::new)
}

#[pyfunction]
fn _linalg_det(py: Python<'_>, a: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let a = a.t.clone();
    run(py, cubic(&[&a]), move || la::det(&a)).map(PyTensor::new)
}

#[pyfunction]
fn _linalg_slogdet(py: Python<'_>, a: PyRef<'_, PyTensor>) -> PyResult<(PyTensor, PyTensor)> {
    let a = a.t.clone();
    let (s, l) = run(py, cubic(&[&a]), move || la::slogdet(&a))?;
    Ok((PyTensor::new(s), PyTensor::new(l)))
}

#[pyfunction]
fn _linalg_cholesky(py: Python<'_>, a: PyRef<'_, PyTensor>, upper: bool) -> PyResult<PyTensor> {
    let a = a.t.clone();
    run(py, cubic(&[&a]), move || la::cholesky(&a, upper)).map(PyTensor::new)
}

#[pyfunction]
fn _linalg_qr(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    mode: String,
) -> PyResult<(PyTensor, PyTensor)> {
    let a = a.t.clone();
    let (q, r) = run(py, cubic(&[&a]), move || la::qr(&a, &mode))?;
    Ok((PyTensor::new(q), PyTensor::new(r)))
}

#[pyfunction]
fn _linalg_svd(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    full_matrices: bool,
    compute_uv: bool,
) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let a = a.t.clone();
    let (u, s, v) = run(py, cubic(&[&a]), move || {
        la::svd(&a, full_matrices, compute_uv)
    })?;
    Ok((PyTensor::new(u), PyTensor::new(s), PyTensor::new(v)))
}

#[pyfunction]
fn _linalg_svdvals(py: Python<'_>, a: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let a = a.t.clone();
    run(py, cubic(&[&a]), move || la::svdvals(&a)).map(PyTensor::new)
}

#[pyfunction]
fn _linalg_eigh(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    uplo: String,
    compute_v: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let a = a.t.clone();
    let (w, v) = run(py, cubic(&[&a]), move || la::eigh(&a, &uplo, compute_v))?;
    Ok((PyTensor::new(w), PyTensor::new(v)))
}

/// `rtol` None: PyTorch's default (eps * max(m, n) when `atol` is 0, else 0).
#[pyfunction]
#[pyo3(signature = (a, atol, rtol, hermitian))]
fn _linalg_pinv(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    atol: f64,
    rtol: Option<f64>,
    hermitian: bool,
) -> PyResult<PyTensor> {
    let a = a.t.clone();
    run(py, cubic(&[&a]), move || {
        let rtol = match rtol {
            Some(r) => r,
            None if atol > 0.0 => 0.0,
            None if a.ndim() >= 2 => la::default_rtol(&a),
            None => 0.0,
        };
        la::pinv(&a, atol, rtol, hermitian)
    })
    .map(PyTensor::new)
}

#[pyfunction]
#[pyo3(signature = (a, b, rcond=None))]
fn _linalg_lstsq(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    b: PyRef<'_, PyTensor>,
    rcond: Option<f64>,
) -> PyResult<(PyTensor, PyTensor)> {
    let (a, b) = (a.t.clone(), b.t.clone());
    let (x, r) = run(py, cubic(&[&a, &b]), move || la::lstsq(&a, &b, rcond))?;
    Ok((PyTensor::new(x), PyTensor::new(r)))
}

#[pyfunction]
fn _linalg_solve_triangular(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    b: PyRef<'_, PyTensor>,
    upper: bool,
    left: bool,
    unitriangular: bool,
) -> PyResult<PyTensor> {
    let (a, b) = (a.t.clone(), b.t.clone());
    run(py, cubic(&[&a, &b]), move || {
        la::solve_triangular(&a, &b, upper, left, unitriangular)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _linalg_cholesky_solve(
    py: Python<'_>,
    b: PyRef<'_, PyTensor>,
    l: PyRef<'_, PyTensor>,
    upper: bool,
) -> PyResult<PyTensor> {
    let (b, l) = (b.t.clone(), l.t.clone());
    run(py, cubic(&[&b, &l]), move || {
        la::cholesky_solve(&b, &l, upper)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _linalg_cholesky_inverse(
    py: Python<'_>,
    l: PyRef<'_, PyTensor>,
    upper: bool,
) -> PyResult<PyTensor> {
    let l = l.t.clone();
    run(py, cubic(&[&l]), move || la::cholesky_inverse(&l, upper)).map(PyTensor::new)
}

#[pyfunction]
fn _linalg_lu_factor(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let a = a.t.clone();
    let (lu, p, i) = run(py, cubic(&[&a]), move || la::lu_factor(&a))?;
    Ok((PyTensor::new(lu), PyTensor::new(p), PyTensor::new(i)))
}

#[pyfunction]
fn _linalg_lu(py: Python<'_>, a: PyRef<'_, PyTensor>) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let a = a.t.clone();
    let (p, l, u) = run(py, cubic(&[&a]), move || la::lu(&a))?;
    Ok((PyTensor::new(p), PyTensor::new(l), PyTensor::new(u)))
}

#[pyfunction]
fn _linalg_lu_unpack(
    py: Python<'_>,
    lu: PyRef<'_, PyTensor>,
    pivots: PyRef<'_, PyTensor>,
) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let (lu, piv) = (lu.t.clone(), pivots.t.clone());
    let (p, l, u) = run(py, cubic(&[&lu]), move || la::lu_unpack(&lu, &piv))?;
    Ok((PyTensor::new(p), PyTensor::new(l), PyTensor::new(u)))
}

#[pyfunction]
fn _linalg_lu_solve(
    py: Python<'_>,
    lu: PyRef<'_, PyTensor>,
    pivots: PyRef<'_, PyTensor>,
    b: PyRef<'_, PyTensor>,
    left: bool,
    adjoint: bool,
) -> PyResult<PyTensor> {
    let (lu, piv, b) = (lu.t.clone(), pivots.t.clone(), b.t.clone());
    run(py, cubic(&[&lu, &b]), move || {
        la::lu_solve(&lu, &piv, &b, left, adjoint)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _linalg_matrix_exp(py: Python<'_>, a: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let a = a.t.clone();
    run(py, cubic(&[&a, &a, &a]), move || la::matrix_exp(&a)).map(PyTensor::new)
}

#[pyfunction]
fn _linalg_cross(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    b: PyRef<'_, PyTensor>,
    dim: usize,
) -> PyResult<PyTensor> {
    let (a, b) = (a.t.clone(), b.t.clone());
    run(py, Work::over([&a, &b], a.numel() + b.numel()), move || {
        la::cross(&a, &b, dim)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _linalg_triangular_solve(
    py: Python<'_>,
    b: PyRef<'_, PyTensor>,
    a: PyRef<'_, PyTensor>,
    upper: bool,
    transpose: bool,
    unitriangular: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let (b, a) = (b.t.clone(), a.t.clone());
    let (x, m) = run(py, cubic(&[&a, &b]), move || {
        la::triangular_solve(&b, &a, upper, transpose, unitriangular)
    })?;
    Ok((PyTensor::new(x), PyTensor::new(m)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("_LinAlgError", super::errors::linalg_error(m.py())?)?;
    m.add_function(wrap_pyfunction!(_linalg_inv, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_solve, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_det, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_slogdet, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_cholesky, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_qr, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_svd, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_svdvals, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_eigh, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_pinv, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_lstsq, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_solve_triangular, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_cholesky_solve, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_cholesky_inverse, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_lu_factor, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_lu, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_lu_unpack, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_lu_solve, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_matrix_exp, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_cross, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_triangular_solve, m)?)?;
    Ok(())
}
