//! Bindings of `diagonal` / `diag_embed` (src/ops/diagonal.rs), the `scatter_reduce` forward
//! (src/ops/scatter_reduce.rs), `index_put`, `index_fill` and `masked_scatter` (src/ops/index.rs); argument handling in
//! ferrograd's Python layer; `polygamma` (src/ops/math.rs).

use super::convert::{operand, type_name};
use super::errors::{run, Work};
use super::tensor::PyTensor;
use crate::ops::{self, diagonal as dg, scatter_reduce as sr, Operand};
use crate::tensor::Tensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

#[pyfunction]
fn _diagonal(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    offset: i64,
    dim1: i64,
    dim2: i64,
) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        dg::diagonal(&x, offset, dim1, dim2)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _diag_embed(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    offset: i64,
    dim1: i64,
    dim2: i64,
) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        dg::diag_embed(&x, offset, dim1, dim2)
    })
    .map(PyTensor::new)
}

/// The forward only: no graph is recorded.
#[pyfunction]
fn _scatter_reduce(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dim: i64,
    index: PyRef<'_, PyTensor>,
    src: PyRef<'_, PyTensor>,
    reduce: String,
    include_self: bool,
) -> PyResult<PyTensor> {
    let (x, i, s) = (input.t.clone(), index.t.clone(), src.t.clone());
    run(py, Work::elems([&x, &i, &s]), move || {
        sr::scatter_reduce(&x, dim, &i, &s, &reduce, include_self)
    })
    .map(PyTensor::new)
}

/// `index_put(indices, values, accumulate)` out of place (IndexPutBackward0): `indices` are
/// int64 tensors for the leading dims (bool masks already split into their nonzero columns).
#[pyfunction]
fn _index_put(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    indices: Vec<PyRef<'_, PyTensor>>,
    values: PyRef<'_, PyTensor>,
    accumulate: bool,
) -> PyResult<PyTensor> {
    let (x, v) = (input.t.clone(), values.t.clone());
    let idx: Vec<Option<crate::tensor::Tensor>> =
        indices.iter().map(|i| Some(i.t.clone())).collect();
    let work = Work::elems([&x, &v].into_iter().chain(idx.iter().flatten()));
    run(py, work, move || {
        crate::ops::index::index_put(&x, &idx, &v, accumulate)
    })
    .map(PyTensor::new)
}

/// `index_fill(dim, index, value)` (IndexFillBackward0 / 1), or `index_fill_` with `inplace`;
/// `value` a number or a 0-d tensor.
#[pyfunction]
fn _index_fill(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dim: i64,
    index: PyRef<'_, PyTensor>,
    value: &Bound<'_, PyAny>,
    inplace: bool,
) -> PyResult<PyTensor> {
    let v = operand(value).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "index_fill(): argument 'value' must be Number or Tensor, not {}",
            type_name(value)
        ))
    })?;
    let (x, i) = (input.t.clone(), index.t.clone());
    run(py, Work::elems([&x]), move || {
        if inplace {
            let others: Vec<&Tensor> = match &v {
                Operand::T(t) => vec![t],
                Operand::S(_) => vec![],
            };
            ops::apply_inplace(&x, &others, |s| ops::index_fill(s, dim, &i, &v))?;
            Ok(x)
        } else {
            ops::index_fill(&x, dim, &i, &v)
        }
    })
    .map(PyTensor::new)
}

/// `masked_scatter(mask, source)` (MaskedScatterBackward0), or `masked_scatter_` with `inplace`.
#[pyfunction]
fn _masked_scatter(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    mask: PyRef<'_, PyTensor>,
    source: PyRef<'_, PyTensor>,
    inplace: bool,
) -> PyResult<PyTensor> {
    let (x, m, s) = (input.t.clone(), mask.t.clone(), source.t.clone());
    run(py, Work::elems([&x, &m, &s]), move || {
        if inplace {
            ops::apply_inplace(&x, &[&s], |t| ops::masked_scatter(t, &m, &s))?;
            Ok(x)
        } else {
            ops::masked_scatter(&x, &m, &s)
        }
    })
    .map(PyTensor::new)
}

/// `take(input, index)` (TakeBackward0).
#[pyfunction]
fn _take(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    index: PyRef<'_, PyTensor>,
) -> PyResult<PyTensor> {
    let (x, i) = (input.t.clone(), index.t.clone());
    run(py, Work::elems([&x, &i]), move || ops::take(&x, &i)).map(PyTensor::new)
}

/// `masked_select(input, mask)` (MaskedSelectBackward0), one pass over both in place.
#[pyfunction]
fn _masked_select(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    mask: PyRef<'_, PyTensor>,
) -> PyResult<PyTensor> {
    let (x, m) = (input.t.clone(), mask.t.clone());
    run(py, Work::elems([&x, &m]), move || {
        crate::ops::index::masked_select(&x, &m)
    })
    .map(PyTensor::new)
}

/// `torch.polygamma(n, input)` (n = 0: digamma).
#[pyfunction]
fn _polygamma(py: Python<'_>, n: i64, input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        crate::ops::polygamma(n, &x)
    })
    .map(PyTensor::new)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_polygamma, m)?)?;
    m.add_function(wrap_pyfunction!(_index_put, m)?)?;
    m.add_function(wrap_pyfunction!(_masked_select, m)?)?;
    m.add_function(wrap_pyfunction!(_index_fill, m)?)?;
    m.add_function(wrap_pyfunction!(_take, m)?)?;
    m.add_function(wrap_pyfunction!(_masked_scatter, m)?)?;
    m.add_function(wrap_pyfunction!(_diagonal, m)?)?;
    m.add_function(wrap_pyfunction!(_diag_embed, m)?)?;
    m.add_function(wrap_pyfunction!(_scatter_reduce, m)?)?;
    Ok(())
}
