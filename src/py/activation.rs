//! Bindings of the activations of ops::activation (elu, softplus, hardtanh, ..., prelu, glu).

use super::errors::{run, Work};
use super::tensor::PyTensor;
use crate::ops;
use crate::ops::activation::{self, Act};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The activation named `kind` with its (up to three) numbers.
fn act(kind: &str, a: f64, b: f64, c: f64) -> PyResult<Act> {
    Ok(match kind {
        "elu" => Act::Elu {
            alpha: a,
            scale: b,
            input_scale: c,
            celu: false,
        },
        "celu" => Act::Elu {
            alpha: a,
            scale: 1.0,
            input_scale: 1.0 / a,
            celu: true,
        },
        "softplus" => Act::Softplus {
            beta: a,
            threshold: b,
        },
        "hardtanh" => Act::Hardtanh { lo: a, hi: b },
        "hardswish" => Act::Hardswish,
        "hardsigmoid" => Act::Hardsigmoid,
        "mish" => Act::Mish,
        "logsigmoid" => Act::LogSigmoid,
        "hardshrink" => Act::Hardshrink { lambd: a },
        "softshrink" => Act::Softshrink { lambd: a },
        "threshold" => Act::Threshold {
            threshold: a,
            value: b,
        },
        "rrelu" => Act::Rrelu { slope: a },
        _ => return Err(PyValueError::new_err(format!("unknown activation {kind}"))),
    })
}

/// `_activation(input, kind, a, b, c)`: the activation `kind` of `input`.
#[pyfunction]
#[pyo3(signature = (input, kind, a = 0.0, b = 0.0, c = 0.0))]
fn _activation(
    input: PyRef<'_, PyTensor>,
    kind: &str,
    a: f64,
    b: f64,
    c: f64,
) -> PyResult<PyTensor> {
    let f = act(kind, a, b, c)?;
    let x = input.t.clone();
    run(input.py(), Work::elems([&x]), move || {
        activation::activation(f, &x, false)
    })
    .map(PyTensor::new)
}

/// `_activation_(input, kind, a, b, c)`: the activation applied in place; returns `input`.
#[pyfunction]
#[pyo3(signature = (input, kind, a = 0.0, b = 0.0, c = 0.0))]
fn _activation_<'py>(
    input: &Bound<'py, PyTensor>,
    kind: &str,
    a: f64,
    b: f64,
    c: f64,
) -> PyResult<Bound<'py, PyTensor>> {
    let f = act(kind, a, b, c)?;
    let x = input.get().t.clone();
    run(input.py(), Work::elems([&x]), move || {
        ops::apply_inplace(&x, &[], |s| activation::activation(f, s, true))
    })?;
    Ok(input.clone())
}

/// `_rrelu_with_noise(input, noise, inplace)`: rrelu in training, `input * noise`.
#[pyfunction]
fn _rrelu_with_noise<'py>(
    input: &Bound<'py, PyTensor>,
    noise: PyRef<'_, PyTensor>,
    inplace: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let x = input.get().t.clone();
    let n = noise.t.clone();
    let py = input.py();
    if inplace {
        run(py, Work::elems([&x]), move || {
            ops::apply_inplace(&x, &[], |s| activation::rrelu_with_noise(s, &n, true))
        })?;
        return Ok(input.clone().into_any());
    }
    let out = run(py, Work::elems([&x]), move || {
        activation::rrelu_with_noise(&x, &n, false)
    })?;
    Ok(Bound::new(py, PyTensor::new(out))?.into_any())
}

/// `_prelu_kernel(input, weight)`, weight already shaped to broadcast over the channels.
#[pyfunction]
fn _prelu_kernel(input: PyRef<'_, PyTensor>, weight: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let (x, w) = (input.t.clone(), weight.t.clone());
    run(input.py(), Work::elems([&x, &w]), move || {
        activation::prelu_kernel(&x, &w)
    })
    .map(PyTensor::new)
}

/// `glu(input, dim)`.
#[pyfunction]
fn _glu(input: PyRef<'_, PyTensor>, dim: i64) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(input.py(), Work::elems([&x]), move || {
        activation::glu(&x, dim)
    })
    .map(PyTensor::new)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_activation, m)?)?;
    m.add_function(wrap_pyfunction!(_activation_, m)?)?;
    m.add_function(wrap_pyfunction!(_rrelu_with_noise, m)?)?;
    m.add_function(wrap_pyfunction!(_prelu_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(_glu, m)?)?;
    Ok(())
}
