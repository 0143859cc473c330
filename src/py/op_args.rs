//! Ops with an argument the op tables do not carry: `add` / `sub` with `alpha=`,
//! `div(rounding_mode=...)` and `round(decimals=...)`, and their in-place forms.

use super::convert::{operand, scalar_of};
use super::errors::{run, Work};
use super::tensor::{operand_work, PyTensor};
use crate::ops::{self, Operand};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;

/// Whether `rounding_mode` is "trunc" (else "floor"), with PyTorch's error for others.
fn trunc_mode(rounding_mode: &str) -> PyResult<bool> {
    match rounding_mode {
        "trunc" => Ok(true),
        "floor" => Ok(false),
        m => Err(PyRuntimeError::new_err(format!(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{m}'"
        ))),
    }
}

/// `div(input, other, rounding_mode="trunc" | "floor")`: either operand may be a number, not
/// both.
#[pyfunction]
fn _div_rounding(
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    rounding_mode: &str,
) -> PyResult<PyTensor> {
    let trunc = trunc_mode(rounding_mode)?;
    let (a, b) = operands(input, other, "div")?;
    run(input.py(), operand_work(&[&a, &b]), move || {
        ops::div_rounding(&a, &b, trunc)
    })
    .map(PyTensor::new)
}

/// `input.div_(other, rounding_mode="trunc" | "floor")`.
#[pyfunction]
fn _div_rounding_<'py>(
    input: &Bound<'py, PyTensor>,
    other: &Bound<'py, PyAny>,
    rounding_mode: &str,
) -> PyResult<Bound<'py, PyTensor>> {
    let trunc = trunc_mode(rounding_mode)?;
    let b = operand(other).ok_or_else(|| {
        PyTypeError::new_err("div_(): argument 'other' must be a Tensor or a number")
    })?;
    let t = input.get().t.clone();
    let work = operand_work(&[&Operand::T(t.clone()), &b]);
    run(input.py(), work, move || {
        ops::div_rounding_inplace(&t, &b, trunc)
    })?;
    Ok(input.clone())
}

/// The operands of a binary op: either may be a number, not both.
fn operands(
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    name: &str,
) -> PyResult<(Operand, Operand)> {
    match (operand(input), operand(other)) {
        (Some(a), Some(b)) if a.tensor().is_some() || b.tensor().is_some() => Ok((a, b)),
        _ => Err(PyTypeError::new_err(format!(
            "{name}(): expected a Tensor and a Tensor or a number"
        ))),
    }
}

/// `alpha` of `op`: a number, or a one-element tensor (PyTorch's Scalar argument takes its
/// value).
fn alpha_arg(alpha: &Bound<'_, PyAny>, op: &str) -> PyResult<crate::dtype::Scalar> {
    if let Some(s) = scalar_of(alpha) {
        return Ok(s);
    }
    match alpha.cast::<PyTensor>() {
        Ok(t) if t.get().t.numel() == 1 => Ok(t.get().t.item()?),
        _ => Err(PyTypeError::new_err(format!(
            "{op}(): argument 'alpha' must be Number, not {}",
            alpha
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))),
    }
}

/// `add(input, other, alpha=s)` / `sub(...)` (AddBackward0 / SubBackward0).
#[pyfunction]
fn _add_alpha(
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    alpha: &Bound<'_, PyAny>,
    subtract: bool,
) -> PyResult<PyTensor> {
    let name = if subtract { "sub" } else { "add" };
    let (a, b) = operands(input, other, name)?;
    let s = alpha_arg(alpha, name)?;
    run(input.py(), operand_work(&[&a, &b]), move || {
        ops::add_alpha(&a, &b, s, subtract)
    })
    .map(PyTensor::new)
}

/// `input.add_(other, alpha=s)` / `input.sub_(...)`.
#[pyfunction]
fn _add_alpha_<'py>(
    input: &Bound<'py, PyTensor>,
    other: &Bound<'py, PyAny>,
    alpha: &Bound<'py, PyAny>,
    subtract: bool,
) -> PyResult<Bound<'py, PyTensor>> {
    let b = operand(other)
        .ok_or_else(|| PyTypeError::new_err("argument 'other' must be a Tensor or a number"))?;
    let s = alpha_arg(alpha, if subtract { "sub_" } else { "add_" })?;
    let t = input.get().t.clone();
    let work = operand_work(&[&Operand::T(t.clone()), &b]);
    run(input.py(), work, move || {
        ops::add_alpha_inplace(&t, &b, s, subtract)
    })?;
    Ok(input.clone())
}

/// `input.round_(decimals=d)` (RoundBackward1).
#[pyfunction]
fn _round_decimals_<'py>(
    input: &Bound<'py, PyTensor>,
    decimals: i64,
) -> PyResult<Bound<'py, PyTensor>> {
    let t = input.get().t.clone();
    run(input.py(), Work::elems([&t]), move || {
        ops::apply_inplace(&t, &[], |s| ops::round_decimals(s, decimals))
    })?;
    Ok(input.clone())
}

/// `round(input, decimals=d)` (RoundBackward1).
#[pyfunction]
fn _round_decimals(input: PyRef<'_, PyTensor>, decimals: i64) -> PyResult<PyTensor> {
    let t = input.t.clone();
    run(input.py(), Work::elems([&t]), move || {
        ops::round_decimals(&t, decimals)
    })
    .map(PyTensor::new)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_div_rounding, m)?)?;
    m.add_function(wrap_pyfunction!(_div_rounding_, m)?)?;
    m.add_function(wrap_pyfunction!(_round_decimals, m)?)?;
    m.add_function(wrap_pyfunction!(_round_decimals_, m)?)?;
    m.add_function(wrap_pyfunction!(_add_alpha, m)?)?;
    m.add_function(wrap_pyfunction!(_add_alpha_, m)?)?;
    Ok(())
}
