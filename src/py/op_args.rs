//! Ops with an argument the op tables do not carry: `add` / `sub` with `alpha=`,
//! `div(rounding_mode=...)`, `round(decimals=...)`, `addcmul` / `addcdiv` with `value=` and
//! `lerp` with its number or tensor weight, and their in-place forms.

use super::convert::{operand, scalar_of, type_name};
use super::errors::{run, Work};
use super::tensor::{operand_work, PyTensor};
use crate::dtype::Scalar;
use crate::ops::pointwise::{self, Addc};
use crate::ops::{self, Operand};
use crate::tensor::Tensor;
use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyInt;

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

/// Argument `name` (at `position`) of `op`, which must be a Tensor.
fn tensor_arg(o: &Bound<'_, PyAny>, op: &str, name: &str, position: usize) -> PyResult<Tensor> {
    match o.cast::<PyTensor>() {
        Ok(t) => Ok(t.get().t.clone()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{op}(): argument '{name}' (position {position}) must be Tensor, not {}",
            type_name(o)
        ))),
    }
}

/// `value` of addcmul / addcdiv: a number or a 0-d tensor (PyTorch's Scalar argument).
fn value_arg(value: &Bound<'_, PyAny>, op: &str) -> PyResult<Scalar> {
    if let Some(s) = scalar_of(value) {
        return Ok(s);
    }
    if value.is_instance_of::<PyInt>() {
        // beyond int64: PyTorch's Scalar holds up to uint64
        return match value.extract::<u64>() {
            Ok(v) => Ok(Scalar::Float(v as f64)),
            Err(_) => Err(PyOverflowError::new_err("int too big to convert")),
        };
    }
    match value.cast::<PyTensor>() {
        Ok(t) if t.get().t.ndim() == 0 => Ok(t.get().t.item()?),
        _ => Err(PyTypeError::new_err(format!(
            "{op}(): argument 'value' must be Number, not {}",
            type_name(value)
        ))),
    }
}

/// `torch.addcmul(input, tensor1, tensor2, value=v)` / `torch.addcdiv(...)` (`divide`), and
/// the Tensor methods (`method`: argument positions then count from tensor1, as PyTorch's).
#[pyfunction]
#[pyo3(signature = (input, tensor1, tensor2, value, divide, method=false))]
fn _addc(
    input: &Bound<'_, PyAny>,
    tensor1: &Bound<'_, PyAny>,
    tensor2: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    divide: bool,
    method: bool,
) -> PyResult<PyTensor> {
    let (op, name) = if divide {
        (Addc::Div, "addcdiv")
    } else {
        (Addc::Mul, "addcmul")
    };
    let first = usize::from(!method);
    let x = tensor_arg(input, name, "input", 1)?;
    let t1 = tensor_arg(tensor1, name, "tensor1", first + 1)?;
    let t2 = tensor_arg(tensor2, name, "tensor2", first + 2)?;
    let v = value_arg(value, name)?;
    run(input.py(), Work::elems([&x, &t1, &t2]), move || {
        pointwise::addc(op, &x, &t1, &t2, v)
    })
    .map(PyTensor::new)
}

/// `input.addcmul_(tensor1, tensor2, value=v)` / `input.addcdiv_(...)` (`divide`).
#[pyfunction]
fn _addc_<'py>(
    input: &Bound<'py, PyTensor>,
    tensor1: &Bound<'py, PyAny>,
    tensor2: &Bound<'py, PyAny>,
    value: &Bound<'py, PyAny>,
    divide: bool,
) -> PyResult<Bound<'py, PyTensor>> {
    let (op, name) = if divide {
        (Addc::Div, "addcdiv_")
    } else {
        (Addc::Mul, "addcmul_")
    };
    let x = input.get().t.clone();
    let t1 = tensor_arg(tensor1, name, "tensor1", 1)?;
    let t2 = tensor_arg(tensor2, name, "tensor2", 2)?;
    let v = value_arg(value, name)?;
    run(input.py(), Work::elems([&x, &t1, &t2]), move || {
        pointwise::addc_(op, &x, &t1, &t2, v)
    })?;
    Ok(input.clone())
}

/// lerp's weight: a Tensor or a number (the Python caller checked which).
fn weight_arg(weight: &Bound<'_, PyAny>) -> PyResult<Operand> {
    operand(weight)
        .ok_or_else(|| PyTypeError::new_err("lerp(): argument 'weight' must be Tensor or Number"))
}

/// `torch.lerp(input, end, weight)`: LerpBackward0 for a number weight, LerpBackward1 for a
/// tensor one.
#[pyfunction]
fn _lerp(
    input: PyRef<'_, PyTensor>,
    end: PyRef<'_, PyTensor>,
    weight: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let (x, e) = (input.t.clone(), end.t.clone());
    let w = weight_arg(weight)?;
    let work = operand_work(&[&Operand::T(x.clone()), &Operand::T(e.clone()), &w]);
    run(input.py(), work, move || pointwise::lerp(&x, &e, &w)).map(PyTensor::new)
}

/// `input.lerp_(end, weight)`.
#[pyfunction]
fn _lerp_<'py>(
    input: &Bound<'py, PyTensor>,
    end: PyRef<'py, PyTensor>,
    weight: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTensor>> {
    let (x, e) = (input.get().t.clone(), end.t.clone());
    let w = weight_arg(weight)?;
    let work = operand_work(&[&Operand::T(x.clone()), &Operand::T(e.clone()), &w]);
    run(input.py(), work, move || pointwise::lerp_(&x, &e, &w))?;
    Ok(input.clone())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_addc, m)?)?;
    m.add_function(wrap_pyfunction!(_addc_, m)?)?;
    m.add_function(wrap_pyfunction!(_lerp, m)?)?;
    m.add_function(wrap_pyfunction!(_lerp_, m)?)?;
    m.add_function(wrap_pyfunction!(_div_rounding, m)?)?;
    m.add_function(wrap_pyfunction!(_div_rounding_, m)?)?;
    m.add_function(wrap_pyfunction!(_round_decimals, m)?)?;
    m.add_function(wrap_pyfunction!(_round_decimals_, m)?)?;
    m.add_function(wrap_pyfunction!(_add_alpha, m)?)?;
    m.add_function(wrap_pyfunction!(_add_alpha_, m)?)?;
    Ok(())
}
