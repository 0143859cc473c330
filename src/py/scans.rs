//! Bindings of the scans and order statistics: cumprod, logcumsumexp, cummax / cummin,
//! kthvalue, median / nanmedian and mode (argument checks in `_reduction_functions.py`).

use super::errors::{run, Work};
use super::tensor::PyTensor;
use crate::ops::reduce as rd;
use pyo3::prelude::*;

fn pair((v, i): (crate::tensor::Tensor, crate::tensor::Tensor)) -> (PyTensor, PyTensor) {
    (PyTensor::new(v), PyTensor::new(i))
}

#[pyfunction]
fn _cumprod(py: Python<'_>, input: PyRef<'_, PyTensor>, dim: i64) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || rd::cumprod(&x, dim)).map(PyTensor::new)
}

#[pyfunction]
fn _logcumsumexp(py: Python<'_>, input: PyRef<'_, PyTensor>, dim: i64) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        rd::logcumsumexp(&x, dim)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _cum_extreme(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dim: i64,
    want_max: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        rd::cum_extreme(&x, dim, want_max)
    })
    .map(pair)
}

#[pyfunction]
fn _kthvalue(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    k: i64,
    dim: i64,
    keepdim: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        rd::kthvalue(&x, k, dim, keepdim)
    })
    .map(pair)
}

#[pyfunction]
fn _median_dim(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dim: i64,
    keepdim: bool,
    ignore_nan: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        rd::median_dim(&x, dim, keepdim, ignore_nan)
    })
    .map(pair)
}

#[pyfunction]
fn _median_all(py: Python<'_>, input: PyRef<'_, PyTensor>, ignore_nan: bool) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        rd::median_all(&x, ignore_nan)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _mode(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dim: i64,
    keepdim: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        rd::mode(&x, dim, keepdim)
    })
    .map(pair)
}

/// `torch.nansum`: the sum with NaN as zero (NansumBackward0), one pass.
#[pyfunction]
#[pyo3(signature = (input, dim=None, keepdim=false, dtype=None))]
fn _nansum(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dims = super::convert::dims_arg(dim)?;
    let dt = super::convert::dtype_arg(dtype)?;
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        rd::nansum(&x, dims.as_deref(), keepdim, dt)
    })
    .map(PyTensor::new)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_nansum, m)?)?;
    m.add_function(wrap_pyfunction!(_cumprod, m)?)?;
    m.add_function(wrap_pyfunction!(_logcumsumexp, m)?)?;
    m.add_function(wrap_pyfunction!(_cum_extreme, m)?)?;
    m.add_function(wrap_pyfunction!(_kthvalue, m)?)?;
    m.add_function(wrap_pyfunction!(_median_dim, m)?)?;
    m.add_function(wrap_pyfunction!(_median_all, m)?)?;
    m.add_function(wrap_pyfunction!(_mode, m)?)?;
    Ok(())
}
