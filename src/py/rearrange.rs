//! Bindings of the element-moving ops: tril/triu, flip, roll, repeat, sort/topk, scatter.

use super::errors::{run, Work};
use super::tensor::PyTensor;
use crate::ops::rearrange as ra;
use pyo3::prelude::*;

#[pyfunction]
fn _tri(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    diagonal: i64,
    upper: bool,
) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        ra::tri(&x, diagonal, upper)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _flip(py: Python<'_>, input: PyRef<'_, PyTensor>, dims: Vec<i64>) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || ra::flip(&x, &dims)).map(PyTensor::new)
}

#[pyfunction]
fn _roll(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    shifts: Vec<i64>,
    dims: Vec<i64>,
) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        ra::roll(&x, &shifts, &dims)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _repeat(py: Python<'_>, input: PyRef<'_, PyTensor>, sizes: Vec<i64>) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || ra::repeat(&x, &sizes)).map(PyTensor::new)
}

#[pyfunction]
#[pyo3(signature = (input, dim, descending, stable=None))]
fn _sort(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dim: i64,
    descending: bool,
    stable: Option<bool>,
) -> PyResult<(PyTensor, PyTensor)> {
    let x = input.t.clone();
    let given = stable.is_some();
    run(py, Work::elems([&input.t]), move || {
        ra::sort(&x, dim, descending, given)
    })
    .map(|(v, i)| (PyTensor::new(v), PyTensor::new(i)))
}

#[pyfunction]
fn _topk(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    k: i64,
    dim: i64,
    largest: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        ra::topk(&x, k, dim, largest)
    })
    .map(|(v, i)| (PyTensor::new(v), PyTensor::new(i)))
}

#[pyfunction]
#[pyo3(signature = (input, dim, index, src=None, value=None))]
fn _scatter(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dim: i64,
    index: PyRef<'_, PyTensor>,
    src: Option<PyRef<'_, PyTensor>>,
    value: Option<Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let value = match &value {
        None => crate::dtype::Scalar::Float(0.0),
        Some(v) => super::convert::scalar_of(v).ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err(
                "value cannot be converted to type int64_t without overflow",
            )
        })?,
    };
    let (x, i, s) = (input.t.clone(), index.t.clone(), src.map(|s| s.t.clone()));
    run(py, Work::elems([&x, &i].into_iter().chain(&s)), move || {
        ra::scatter(&x, dim, &i, s.as_ref(), value)
    })
    .map(PyTensor::new)
}

#[pyfunction]
#[pyo3(signature = (weight, indices, padding_idx=None, scale_grad_by_freq=false))]
fn _embedding(
    py: Python<'_>,
    weight: PyRef<'_, PyTensor>,
    indices: PyRef<'_, PyTensor>,
    padding_idx: Option<i64>,
    scale_grad_by_freq: bool,
) -> PyResult<PyTensor> {
    let (w, i) = (weight.t.clone(), indices.t.clone());
    let work = Work::over([&w, &i], i.numel() * w.shape().get(1).copied().unwrap_or(1));
    run(py, work, move || {
        ra::embedding(&w, &i, padding_idx, scale_grad_by_freq)
    })
    .map(PyTensor::new)
}

#[pyfunction]
#[pyo3(signature = (input, pad, value=None))]
fn _constant_pad_nd(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    pad: Vec<i64>,
    value: Option<Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let value = match &value {
        None => crate::dtype::Scalar::Int(0),
        Some(v) => super::convert::scalar_of(v).ok_or_else(|| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "constant_pad_nd(): argument 'value' must be Number, not {}",
                v.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?,
    };
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        ra::constant_pad_nd(&x, &pad, value)
    })
    .map(PyTensor::new)
}

#[pyfunction]
#[pyo3(signature = (tensor, num_classes=-1))]
fn _one_hot(py: Python<'_>, tensor: PyRef<'_, PyTensor>, num_classes: i64) -> PyResult<PyTensor> {
    let x = tensor.t.clone();
    run(py, Work::elems([&tensor.t]), move || {
        ra::one_hot(&x, num_classes)
    })
    .map(PyTensor::new)
}

/// Reflection (`mode="reflect"`) or replication (`"replicate"`) padding; sizes checked by the
/// caller (`F.pad`).
#[pyfunction]
fn _index_pad(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    pad: Vec<i64>,
    mode: &str,
) -> PyResult<PyTensor> {
    let reflect = match mode {
        "reflect" => true,
        "replicate" => false,
        other => {
            return Err(pyo3::exceptions::PyNotImplementedError::new_err(format!(
                "_index_pad: mode {other:?} (reflect or replicate)"
            )))
        }
    };
    let x = input.t.clone();
    run(py, Work::elems([&input.t]), move || {
        ra::index_pad(&x, &pad, reflect)
    })
    .map(PyTensor::new)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_embedding, m)?)?;
    m.add_function(wrap_pyfunction!(_tri, m)?)?;
    m.add_function(wrap_pyfunction!(_flip, m)?)?;
    m.add_function(wrap_pyfunction!(_roll, m)?)?;
    m.add_function(wrap_pyfunction!(_repeat, m)?)?;
    m.add_function(wrap_pyfunction!(_sort, m)?)?;
    m.add_function(wrap_pyfunction!(_topk, m)?)?;
    m.add_function(wrap_pyfunction!(_scatter, m)?)?;
    m.add_function(wrap_pyfunction!(_constant_pad_nd, m)?)?;
    m.add_function(wrap_pyfunction!(_one_hot, m)?)?;
    m.add_function(wrap_pyfunction!(_index_pad, m)?)?;
    Ok(())
}
