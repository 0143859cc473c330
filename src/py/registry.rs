//! The op registries bound to Python: every row of ops::binary's table and of the unary list
//! becomes a Tensor method and a `ferrograd._core` function of the op's name, with PyTorch's
//! argument rules. Nothing here is written per op.

use super::convert::{operand, type_name};
use super::errors::{run, Work};
use super::tensor::{operand_work, PyTensor};
use crate::ops::{self, BinOp, Operand};
use crate::tensor::Tensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// PyTorch's message for an argument that must be a Tensor.
fn must_be_tensor(op: &str, arg: &str, o: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "{op}(): argument '{arg}' (position 1) must be Tensor, not {}",
        type_name(o)
    ))
}

/// `other` of a binary op: a Tensor, or a number where the op takes one.
fn other_operand(op: BinOp, other: &Bound<'_, PyAny>) -> PyResult<Operand> {
    match operand(other) {
        Some(o @ Operand::T(_)) => Ok(o),
        Some(o @ Operand::S(_)) if op.number_other() => Ok(o),
        _ => Err(must_be_tensor(op.name(), "other", other)),
    }
}

/// `a op b` through the engine, the GIL released for large operands.
pub fn apply_binary(py: Python<'_>, op: BinOp, a: Operand, b: Operand) -> PyResult<PyTensor> {
    run(py, operand_work(&[&a, &b]), || ops::binary(op, &a, &b)).map(PyTensor::new)
}

fn binary_method(
    py: Python<'_>,
    op: BinOp,
    t: &Tensor,
    other: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    apply_binary(py, op, Operand::T(t.clone()), other_operand(op, other)?)
}

/// `torch.<op>(input, other)`: `input` may be a number only for PyTorch's Scalar overloads
/// (add, sub, mul, div, pow, floor_divide, remainder), and then `other` must be a Tensor.
fn binary_function(
    op: BinOp,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let py = input.py();
    let a = match operand(input) {
        Some(a @ Operand::T(_)) => a,
        Some(a @ Operand::S(_)) if op.number_first() => {
            let b = operand(other).filter(|b| matches!(b, Operand::T(_)));
            let b = b.ok_or_else(|| must_be_tensor(op.name(), "other", other))?;
            return apply_binary(py, op, a, b);
        }
        _ => return Err(must_be_tensor(op.name(), "input", input)),
    };
    apply_binary(py, op, a, other_operand(op, other)?)
}

fn unary_function(
    name: &str,
    f: fn(&Tensor) -> crate::Result<Tensor>,
    input: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let t = input
        .cast::<PyTensor>()
        .map_err(|_| must_be_tensor(name, "input", input))?;
    t.get().unary(input.py(), f)
}

macro_rules! bind_binary {
    (arith { $($an:ident => $av:ident,)* } compare { $($cn:ident => $cv:ident,)* }) => {
        bind_binary! { $($an $av,)* $($cn $cv,)* }
    };
    ($($name:ident $op:ident,)*) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                    binary_method(py, BinOp::$op, &self.t, other)
                }
            )*
        }

        /// The binary ops as `torch` functions.
        mod binary_functions {
            use super::*;
            $(
                #[pyfunction]
                pub fn $name(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                    binary_function(BinOp::$op, input, other)
                }
            )*
            pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
                $( m.add_function(wrap_pyfunction!($name, m)?)?; )*
                Ok(())
            }
        }
    };
}
crate::for_each_binary_op!(bind_binary);

/// `x.<op>_()`: the op's in-place form (`ops::<op>_`, with PyTorch's in-place rules: the leaf
/// check, the version bump, the new grad_fn).
fn unary_inplace<'py>(
    slf: &Bound<'py, PyTensor>,
    f: fn(&Tensor) -> crate::Result<()>,
) -> PyResult<Bound<'py, PyTensor>> {
    let t = slf.get().t.clone();
    run(slf.py(), Work::elems([&t]), move || f(&t))?;
    Ok(slf.clone())
}

macro_rules! bind_unary {
    ($($name:ident => $inplace:ident $($function:ident)?,)*) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name(&self, py: Python<'_>) -> PyResult<PyTensor> {
                    self.unary(py, ops::$name)
                }
                fn $inplace<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
                    unary_inplace(slf, ops::$inplace)
                }
            )*
        }

        /// The unary ops as `torch` functions, and their in-place forms where PyTorch has them.
        mod unary_functions {
            use super::*;
            $(
                #[pyfunction]
                pub fn $name(input: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                    unary_function(stringify!($name), ops::$name, input)
                }
                $(
                    #[pyfunction]
                    pub fn $inplace<'py>(input: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                        let _ = stringify!($function);
                        let t = input
                            .cast::<PyTensor>()
                            .map_err(|_| must_be_tensor(stringify!($inplace), "input", input))?;
                        unary_inplace(t, ops::$inplace)?;
                        Ok(input.clone())
                    }
                )?
            )*
            pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
                $(
                    m.add_function(wrap_pyfunction!($name, m)?)?;
                    $(
                        let _ = stringify!($function);
                        m.add_function(wrap_pyfunction!($inplace, m)?)?;
                    )?
                )*
                Ok(())
            }
            pub const NAMES: &[&str] = &[$(stringify!($name),)*];
        }
    };
}
crate::for_each_unary_op!(bind_unary);

/// `_core._ops()`: the ops of the registries by family, for the test that every op has an
/// op-table row.
#[pyfunction]
fn _ops(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("unary", unary_functions::NAMES.to_vec())?;
    let binary: Vec<&str> = BinOp::ALL.iter().map(|op| op.name()).collect();
    d.set_item("binary", binary)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    binary_functions::register(m)?;
    unary_functions::register(m)?;
    m.add_function(wrap_pyfunction!(_ops, m)?)
}
