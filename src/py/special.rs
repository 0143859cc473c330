//! Bindings of `torch.special`'s functions of src/ops/special.rs as `_core.special_<name>`,
//! with PyTorch's argument errors (`special_<name>(): argument 'input' (position 1) must be
//! Tensor`, and the "invalid combination of arguments" of the two-operand ones). `i0`,
//! `igamma` and `igammac` are the op registries' (py/registry.rs).

use super::convert::{operand, type_name};
use super::errors::{run, Work};
use super::tensor::{operand_work, PyTensor};
use crate::ops::special::{self as sp, Polynomial};
use crate::ops::Operand;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

fn unary(
    name: &str,
    f: fn(&crate::tensor::Tensor) -> crate::Result<crate::tensor::Tensor>,
    input: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let t = input.cast::<PyTensor>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{name}(): argument 'input' (position 1) must be Tensor, not {}",
            type_name(input)
        ))
    })?;
    t.get().unary(input.py(), f)
}

/// The operands of `name(a, b)` where one of them may be a number (`(Tensor, Tensor)`,
/// `(Number, Tensor)`, `(Tensor, Number)`), else PyTorch's TypeError listing those forms
/// with the argument names `names`.
fn two_operands(
    name: &str,
    names: [&str; 3],
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<(Operand, Operand)> {
    match (operand(a), operand(b)) {
        (Some(x), Some(y)) if x.tensor().is_some() || y.tensor().is_some() => Ok((x, y)),
        _ => {
            let [first, other, number_first] = names;
            Err(PyTypeError::new_err(format!(
                "{name}() received an invalid combination of arguments - got ({}, {}), but expected one of:\n * (Tensor {first}, Tensor {other}, *, Tensor out = None)\n * (Number {number_first}, Tensor {other}, *, Tensor out = None)\n * (Tensor {first}, Number {other}, *, Tensor out = None)\n",
                type_name(a),
                type_name(b)
            )))
        }
    }
}

fn polynomial(p: Polynomial, x: &Bound<'_, PyAny>, n: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let name = format!("special_{}", p.name());
    let (a, b) = two_operands(&name, ["x", "n", "x"], x, n)?;
    run(x.py(), operand_work(&[&a, &b]), move || {
        sp::special_polynomial(p, &a, &b)
    })
    .map(PyTensor::new)
}

/// `torch.special.zeta(input, other)`.
#[pyfunction]
fn special_zeta(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let (a, b) = two_operands("special_zeta", ["input", "other", "self"], input, other)?;
    run(input.py(), operand_work(&[&a, &b]), move || {
        sp::special_zeta(&a, &b)
    })
    .map(PyTensor::new)
}

/// `torch.logit(input, eps=None)` (the Python layer has turned integer inputs into floats).
#[pyfunction]
#[pyo3(signature = (input, eps=None))]
fn logit(input: &Bound<'_, PyAny>, eps: Option<f64>) -> PyResult<PyTensor> {
    let t = input.cast::<PyTensor>().map_err(|_| {
        PyTypeError::new_err(format!(
            "logit(): argument 'input' (position 1) must be Tensor, not {}",
            type_name(input)
        ))
    })?;
    let x = t.get().t.clone();
    run(input.py(), Work::elems([&x]), move || {
        crate::ops::unary::logit(&x, eps)
    })
    .map(PyTensor::new)
}

macro_rules! bind {
    (unary { $($uname:ident => $uop:path,)* } polynomial { $($pname:ident => $pv:ident,)* }) => {
        $(
            #[pyfunction]
            fn $uname(input: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                unary(stringify!($uname), $uop, input)
            }
        )*
        $(
            #[pyfunction]
            fn $pname(x: &Bound<'_, PyAny>, n: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                polynomial(Polynomial::$pv, x, n)
            }
        )*
        pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $( m.add_function(wrap_pyfunction!($uname, m)?)?; )*
            $( m.add_function(wrap_pyfunction!($pname, m)?)?; )*
            m.add_function(wrap_pyfunction!(logit, m)?)?;
            m.add_function(wrap_pyfunction!(special_zeta, m)?)
        }
    };
}

bind! {
    unary {
        special_i0 => sp::i0,
        special_i0e => sp::special_i0e,
        special_i1 => sp::special_i1,
        special_i1e => sp::special_i1e,
        special_erfcx => sp::special_erfcx,
        special_log_ndtr => sp::special_log_ndtr,
        special_airy_ai => sp::special_airy_ai,
        special_bessel_j0 => sp::special_bessel_j0,
        special_bessel_j1 => sp::special_bessel_j1,
        special_bessel_y0 => sp::special_bessel_y0,
        special_bessel_y1 => sp::special_bessel_y1,
        special_modified_bessel_i0 => sp::special_modified_bessel_i0,
        special_modified_bessel_i1 => sp::special_modified_bessel_i1,
        special_modified_bessel_k0 => sp::special_modified_bessel_k0,
        special_modified_bessel_k1 => sp::special_modified_bessel_k1,
        special_scaled_modified_bessel_k0 => sp::special_scaled_modified_bessel_k0,
        special_scaled_modified_bessel_k1 => sp::special_scaled_modified_bessel_k1,
        special_spherical_bessel_j0 => sp::special_spherical_bessel_j0,
    }
    polynomial {
        special_chebyshev_polynomial_t => ChebyshevT,
        special_chebyshev_polynomial_u => ChebyshevU,
        special_chebyshev_polynomial_v => ChebyshevV,
        special_chebyshev_polynomial_w => ChebyshevW,
        special_shifted_chebyshev_polynomial_t => ShiftedChebyshevT,
        special_shifted_chebyshev_polynomial_u => ShiftedChebyshevU,
        special_shifted_chebyshev_polynomial_v => ShiftedChebyshevV,
        special_shifted_chebyshev_polynomial_w => ShiftedChebyshevW,
        special_hermite_polynomial_h => HermiteH,
        special_hermite_polynomial_he => HermiteHe,
        special_laguerre_polynomial_l => LaguerreL,
        special_legendre_polynomial_p => LegendreP,
    }
}
