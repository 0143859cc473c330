//! Bindings of the native search / counting ops (ops/counts.rs); the Python wrappers in
//! `_set_functions.py`, `_index_functions.py` and `nn/functional` check the arguments.

use super::errors::{run, Work};
use super::tensor::PyTensor;
use crate::ops::counts as oc;
use crate::ops::loss::Reduction;
use pyo3::prelude::*;

#[pyfunction]
#[pyo3(signature = (sorted_sequence, values, right, sorter, out_int32))]
fn _searchsorted(
    py: Python<'_>,
    sorted_sequence: PyRef<'_, PyTensor>,
    values: PyRef<'_, PyTensor>,
    right: bool,
    sorter: Option<PyRef<'_, PyTensor>>,
    out_int32: bool,
) -> PyResult<PyTensor> {
    let (s, v, o) = (
        sorted_sequence.t.clone(),
        values.t.clone(),
        sorter.map(|o| o.t.clone()),
    );
    run(py, Work::elems([&s, &v].into_iter().chain(&o)), move || {
        oc::searchsorted(&s, &v, right, o.as_ref(), out_int32)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _bincount(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weights: Option<PyRef<'_, PyTensor>>,
    minlength: usize,
) -> PyResult<PyTensor> {
    let (x, w) = (input.t.clone(), weights.map(|w| w.t.clone()));
    run(py, Work::elems([&x].into_iter().chain(&w)), move || {
        oc::bincount(&x, w.as_ref(), minlength)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _histc(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    bins: usize,
    min: f64,
    max: f64,
) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, Work::elems([&x]), move || oc::histc(&x, bins, min, max)).map(PyTensor::new)
}

#[pyfunction]
fn _nonzero(py: Python<'_>, input: PyRef<'_, PyTensor>, as_tuple: bool) -> PyResult<Vec<PyTensor>> {
    let x = input.t.clone();
    run(py, Work::elems([&x]), move || oc::nonzero(&x, as_tuple))
        .map(|v| v.into_iter().map(PyTensor::new).collect())
}

#[pyfunction]
#[allow(clippy::type_complexity)]
fn _unique_consecutive(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    return_inverse: bool,
    return_counts: bool,
) -> PyResult<(PyTensor, Option<PyTensor>, Option<PyTensor>)> {
    let x = input.t.clone();
    run(py, Work::elems([&x]), move || {
        oc::unique_consecutive(&x, return_inverse, return_counts)
    })
    .map(|(a, b, c)| (PyTensor::new(a), b.map(PyTensor::new), c.map(PyTensor::new)))
}

#[pyfunction]
fn _unique_dim(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    consecutive: bool,
) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let x = input.t.clone();
    run(py, Work::elems([&x]), move || {
        oc::unique_dim(&x, consecutive)
    })
    .map(|(a, b, c)| (PyTensor::new(a), PyTensor::new(b), PyTensor::new(c)))
}

#[pyfunction]
fn _max_unpool(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    indices: PyRef<'_, PyTensor>,
    output_size: Vec<usize>,
) -> PyResult<PyTensor> {
    let (x, i) = (input.t.clone(), indices.t.clone());
    run(py, Work::elems([&x, &i]), move || {
        oc::max_unpool(&x, &i, &output_size)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _pdist(py: Python<'_>, input: PyRef<'_, PyTensor>, p: f64) -> PyResult<PyTensor> {
    let x = input.t.clone();
    let n = x.shape().first().copied().unwrap_or(0);
    let work = Work::over([&x], x.numel().saturating_mul(n));
    run(py, work, move || oc::pdist(&x, p)).map(PyTensor::new)
}

#[pyfunction]
fn _multilabel_margin_loss(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    target: PyRef<'_, PyTensor>,
    reduction: &str,
) -> PyResult<PyTensor> {
    let r = Reduction::parse(reduction)?;
    let (x, y) = (input.t.clone(), target.t.clone());
    run(py, Work::elems([&x, &y]), move || {
        oc::multilabel_margin_loss(&x, &y, r)
    })
    .map(PyTensor::new)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_searchsorted, m)?)?;
    m.add_function(wrap_pyfunction!(_bincount, m)?)?;
    m.add_function(wrap_pyfunction!(_histc, m)?)?;
    m.add_function(wrap_pyfunction!(_nonzero, m)?)?;
    m.add_function(wrap_pyfunction!(_unique_consecutive, m)?)?;
    m.add_function(wrap_pyfunction!(_unique_dim, m)?)?;
    m.add_function(wrap_pyfunction!(_max_unpool, m)?)?;
    m.add_function(wrap_pyfunction!(_pdist, m)?)?;
    m.add_function(wrap_pyfunction!(_multilabel_margin_loss, m)?)?;
    Ok(())
}
