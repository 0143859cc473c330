//! Bindings of the fused nn ops: losses, linear, leaky_relu.

use super::errors::{run, HEAVY_NUMEL};
use super::tensor::PyTensor;
use crate::ops::loss::{self, Pointwise, Reduction};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn heavy(n: usize) -> bool {
    n > HEAVY_NUMEL
}

#[pyfunction]
#[pyo3(signature = (kind, input, target, reduction, param = 1.0, weight = None, pos_weight = None))]
#[allow(clippy::too_many_arguments)]
fn _pointwise_loss(
    py: Python<'_>,
    kind: &str,
    input: PyRef<'_, PyTensor>,
    target: PyRef<'_, PyTensor>,
    reduction: &str,
    param: f64,
    weight: Option<PyRef<'_, PyTensor>>,
    pos_weight: Option<PyRef<'_, PyTensor>>,
) -> PyResult<PyTensor> {
    let r = Reduction::parse(reduction)?;
    let weight = weight.map(|w| w.t.clone());
    let kind = match kind {
        "mse" => Pointwise::Mse,
        "smooth_l1" => Pointwise::SmoothL1 { beta: param },
        "huber" => Pointwise::Huber { delta: param },
        "bce" => Pointwise::Bce { weight },
        "bce_logits" => Pointwise::BceLogits {
            weight,
            pos_weight: pos_weight.map(|w| w.t.clone()),
        },
        _ => return Err(PyValueError::new_err(format!("unknown loss {kind}"))),
    };
    let (x, y) = (input.t.clone(), target.t.clone());
    run(py, heavy(x.numel()), move || {
        loss::pointwise_loss(kind, &x, &y, r)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _nll_loss(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    target: PyRef<'_, PyTensor>,
    weight: Option<PyRef<'_, PyTensor>>,
    reduction: &str,
    ignore_index: i64,
) -> PyResult<PyTensor> {
    let r = Reduction::parse(reduction)?;
    let (x, tg, w) = (
        input.t.clone(),
        target.t.clone(),
        weight.map(|w| w.t.clone()),
    );
    run(py, heavy(x.numel()), move || {
        loss::nll_loss(&x, &tg, w.as_ref(), r, ignore_index)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn _leaky_relu(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    negative_slope: f64,
) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, heavy(x.numel()), move || {
        crate::ops::leaky_relu(&x, negative_slope)
    })
    .map(PyTensor::new)
}

#[pyfunction]
#[pyo3(signature = (input, weight, bias = None))]
fn linear(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: PyRef<'_, PyTensor>,
    bias: Option<PyRef<'_, PyTensor>>,
) -> PyResult<PyTensor> {
    let (x, w, b) = (input.t.clone(), weight.t.clone(), bias.map(|b| b.t.clone()));
    let work = x.numel() * w.shape().first().copied().unwrap_or(1);
    run(py, heavy(work), move || {
        crate::ops::linear(&x, &w, b.as_ref())
    })
    .map(PyTensor::new)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_pointwise_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_leaky_relu, m)?)?;
    m.add_function(wrap_pyfunction!(linear, m)?)?;
    Ok(())
}
