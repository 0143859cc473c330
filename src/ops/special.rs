//! The ops of `torch.special` beyond math.rs: the modified Bessel functions i0 / i0e / i1 /
//! i1e, erfcx and log_ndtr (differentiable, PyTorch's derivative formulas in differentiable
//! ops, so every order works); the Bessel, Airy and spherical Bessel functions and the
//! orthogonal polynomials (no derivative in PyTorch: their results record no graph); and
//! `zeta(x, q)` (differentiable in q only). Kernels in kernels::special; igamma / igammac
//! are rows of the binary table (ops::binary).

use super::binary::{binary, mul, mul_scalar, result_type, sub, where_op, BinOp, Operand};
use super::unary::{abs, exp, float_map, float_map_inplace, neg, reciprocal, sgn};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::elementwise::{self, Map1};
use crate::kernels::math::zeta_f64;
use crate::kernels::special as k;
use crate::layout::broadcast_shapes;
use crate::storage::Elem;
use crate::tensor::Tensor;
use std::f64::consts::{FRAC_2_SQRT_PI, PI};

fn t(x: &Tensor) -> Operand {
    Operand::T(x.clone())
}
fn s(v: f64) -> Operand {
    Operand::S(Scalar::Float(v))
}

/// `f` elementwise in f64 (float32 rounds once at the end; ints and bools compute in the
/// default float dtype). `half`: whether float16 / bfloat16 are accepted (computed in float32,
/// as PyTorch's kernels that upcast), else PyTorch's `"<kernel>_cpu" not implemented`.
/// `K` is a zero-sized kernel type (`kernel!`) whose call is always inlined, so that the
/// kernel lands inside the engine's loops compiled for AVX2+FMA / AVX-512: its fused
/// multiply-adds are then single instructions, not library calls (a function item called
/// through `Fn` is a shim the compiler may leave out of line, compiled without FMA).
fn map_f64<K: Map1<f64, f64> + Map1<f32, f32> + Copy + Send>(
    x: &Tensor,
    kernel: &str,
    half: bool,
    f: K,
) -> Result<Tensor> {
    if !half && matches!(x.dtype(), DType::F16 | DType::BF16) {
        return Err(Error::dtype_not_implemented(
            format!("{kernel}_cpu"),
            x.dtype(),
        ));
    }
    float_map(x, f, f)
}

/// The zero-sized kernel type of `kernels::special::$f` (an f64 function; float32 values
/// go through it and round once), or of `$f::<F32>`, whose float32 form `$f::<true>` is
/// cheaper and still within float32's rounding.
macro_rules! kernel {
    ($f:ident) => {
        kernel!(@ k::$f, k::$f)
    };
    ($f:ident::<F32>) => {
        kernel!(@ k::$f::<false>, k::$f::<true>)
    };
    (@ $f64:expr, $f32:expr) => {{
        #[derive(Clone, Copy)]
        struct K;
        impl Map1<f64, f64> for K {
            #[inline(always)]
            fn call(&self, x: f64) -> f64 {
                ($f64)(x)
            }
        }
        impl Map1<f32, f32> for K {
            #[inline(always)]
            fn call(&self, x: f32) -> f32 {
                ($f32)(x as f64) as f32
            }
        }
        K
    }};
}

// ---- differentiable ----

/// `torch.i0` / `torch.special.i0` (I0Backward0: grad * i1(x)).
pub fn i0(x: &Tensor) -> Result<Tensor> {
    let out = map_f64(x, "i0", true, kernel!(i0_for::<F32>))?;
    if needs_grad(&[x]) {
        record(
            "I0Backward0",
            &[x],
            &[&out],
            vec![Saved::Input(x.clone())],
            |ctx| Ok(vec![Some(mul(&ctx.grad(0)?, &special_i1(&ctx.saved[0])?)?)]),
        );
    }
    Ok(out)
}

/// `i0` in place.
pub fn i0_(x: &Tensor) -> Result<()> {
    let k = kernel!(i0_for::<F32>);
    float_map_inplace(x, k, k, i0)
}

/// exp(-|x|) I0(x) (SpecialI0EBackward0: grad * (i1e(x) - sgn(x) i0e(x))).
pub fn special_i0e(x: &Tensor) -> Result<Tensor> {
    let out = map_f64(x, "special_i0e", true, kernel!(i0e_for::<F32>))?;
    if needs_grad(&[x]) {
        let saved = vec![Saved::Input(x.clone()), Saved::Output(out.clone(), 0)];
        record("SpecialI0EBackward0", &[x], &[&out], saved, |ctx| {
            let (x, result) = (&ctx.saved[0], &ctx.saved[1]);
            let d = sub(&special_i1e(x)?, &mul(&sgn(x)?, result)?)?;
            Ok(vec![Some(mul(&ctx.grad(0)?, &d)?)])
        });
    }
    Ok(out)
}

/// PyTorch's i1 / i1e backward: the derivative at a "safe" x (eps where |x| <= eps, the
/// machine epsilon of x's dtype), and its limit 1/2 there, selected by `where` so no 0/0
/// reaches the gradient.
fn i1_family_grad(
    g: &Tensor,
    x: &Tensor,
    derivative: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let eps = if x.dtype() == DType::F64 {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    };
    let not_tiny = binary(BinOp::Gt, &t(&abs(x)?), &s(eps))?;
    let safe = where_op(&not_tiny, &t(x), &s(eps))?;
    let gradx = derivative(&safe)?;
    mul(g, &where_op(&not_tiny, &t(&gradx), &s(0.5))?)
}

/// I1(x) (SpecialI1Backward0: grad * (i0(x) - i1(x) / x), 1/2 at 0).
pub fn special_i1(x: &Tensor) -> Result<Tensor> {
    let out = map_f64(x, "i1", true, kernel!(i1_for::<F32>))?;
    if needs_grad(&[x]) {
        let saved = vec![Saved::Input(x.clone()), Saved::Output(out.clone(), 0)];
        record("SpecialI1Backward0", &[x], &[&out], saved, |ctx| {
            let (x, result) = (&ctx.saved[0], &ctx.saved[1]);
            let g = i1_family_grad(&ctx.grad(0)?, x, |safe| {
                sub(&i0(safe)?, &mul(result, &reciprocal(safe)?)?)
            })?;
            Ok(vec![Some(g)])
        });
    }
    Ok(out)
}

/// exp(-|x|) I1(x) (SpecialI1EBackward0: grad * (i0e(x) - i1e(x) (sgn(x) + 1/x)), 1/2 at 0).
pub fn special_i1e(x: &Tensor) -> Result<Tensor> {
    let out = map_f64(x, "i1e", true, kernel!(i1e_for::<F32>))?;
    if needs_grad(&[x]) {
        let saved = vec![Saved::Input(x.clone()), Saved::Output(out.clone(), 0)];
        record("SpecialI1EBackward0", &[x], &[&out], saved, |ctx| {
            let (x, result) = (&ctx.saved[0], &ctx.saved[1]);
            let g = i1_family_grad(&ctx.grad(0)?, x, |safe| {
                let f = binary(BinOp::Add, &t(&sgn(safe)?), &t(&reciprocal(safe)?))?;
                sub(&special_i0e(safe)?, &mul(result, &f)?)
            })?;
            Ok(vec![Some(g)])
        });
    }
    Ok(out)
}

/// exp(x^2) erfc(x) (SpecialErfcxBackward0: grad * (2 x erfcx(x) - 2 / sqrt(pi))).
pub fn special_erfcx(x: &Tensor) -> Result<Tensor> {
    let out = map_f64(x, "erfcx", false, kernel!(erfcx))?;
    if needs_grad(&[x]) {
        let saved = vec![Saved::Input(x.clone()), Saved::Output(out.clone(), 0)];
        record("SpecialErfcxBackward0", &[x], &[&out], saved, |ctx| {
            let (x, result) = (&ctx.saved[0], &ctx.saved[1]);
            let d = binary(
                BinOp::Sub,
                &t(&mul_scalar(&mul(x, result)?, 2.0)?),
                &s(FRAC_2_SQRT_PI),
            )?;
            Ok(vec![Some(mul(&ctx.grad(0)?, &d)?)])
        });
    }
    Ok(out)
}

/// log of the standard normal CDF (SpecialLogNdtrBackward0: grad / sqrt(2 pi) *
/// exp(-(log_ndtr(x) + x^2 / 2)), the normal density over the CDF without overflow).
pub fn special_log_ndtr(x: &Tensor) -> Result<Tensor> {
    let out = map_f64(x, "log_ndtr", false, kernel!(log_ndtr))?;
    if needs_grad(&[x]) {
        let saved = vec![Saved::Input(x.clone()), Saved::Output(out.clone(), 0)];
        record("SpecialLogNdtrBackward0", &[x], &[&out], saved, |ctx| {
            let (x, result) = (&ctx.saved[0], &ctx.saved[1]);
            let half_x2 = mul_scalar(&mul(x, x)?, 0.5)?;
            let e = exp(&neg(&binary(BinOp::Add, &t(result), &t(&half_x2))?)?)?;
            let g = mul_scalar(&ctx.grad(0)?, 1.0 / (2.0 * PI).sqrt())?;
            Ok(vec![Some(mul(&g, &e)?)])
        });
    }
    Ok(out)
}

// ---- without a derivative in PyTorch: no graph is recorded ----

/// The unary special functions PyTorch does not differentiate, each `pub fn name(&Tensor)`:
/// float16 / bfloat16 are PyTorch's `"<name>_cpu" not implemented`.
macro_rules! nondifferentiable_unary {
    ($($name:ident => $kernel:ident $(::<$f32:ident>)?,)*) => {
        $(
            #[doc = concat!("`torch.special.", stringify!($kernel), "` (no derivative).")]
            pub fn $name(x: &Tensor) -> Result<Tensor> {
                map_f64(x, stringify!($kernel), false, kernel!($kernel $(::<$f32>)?))
            }
        )*
    };
}
nondifferentiable_unary! {
    special_airy_ai => airy_ai,
    special_modified_bessel_i0 => modified_bessel_i0::<F32>,
    special_modified_bessel_i1 => modified_bessel_i1::<F32>,
    special_modified_bessel_k0 => modified_bessel_k0::<F32>,
    special_modified_bessel_k1 => modified_bessel_k1::<F32>,
    special_scaled_modified_bessel_k0 => scaled_modified_bessel_k0::<F32>,
    special_scaled_modified_bessel_k1 => scaled_modified_bessel_k1::<F32>,
    special_spherical_bessel_j0 => spherical_bessel_j0,
}

/// The Bessel functions J0, J1, Y0, Y1 (no derivative): the branch-free `_vec` kernels for
/// float32 / float64, then, only where the input holds an |x| beyond `BESSEL_VEC_MAX` (or an
/// infinity), those elements again with the scalar kernel (`far`).
macro_rules! bessel_unary {
    ($($name:ident => $scalar:ident, $vector:ident;)*) => {
        $(
            #[doc = concat!("`torch.special.", stringify!($scalar), "` (no derivative).")]
            pub fn $name(x: &Tensor) -> Result<Tensor> {
                if !matches!(x.dtype(), DType::F32 | DType::F64) {
                    return map_f64(x, stringify!($scalar), false, kernel!($scalar));
                }
                let out = map_f64(x, stringify!($scalar), false, kernel!($vector))?;
                far(x, out, k::$scalar)
            }
        )*
    };
}
bessel_unary! {
    special_bessel_j0 => bessel_j0, bessel_j0_vec;
    special_bessel_j1 => bessel_j1, bessel_j1_vec;
    special_bessel_y0 => bessel_y0, bessel_y0_vec;
    special_bessel_y1 => bessel_y1, bessel_y1_vec;
}

/// `out` with the elements whose input is beyond `BESSEL_VEC_MAX` in magnitude recomputed
/// by `scalar`; a pass over x's storage decides whether there are any (NaN is not beyond).
fn far(x: &Tensor, out: Tensor, scalar: fn(f64) -> f64) -> Result<Tensor> {
    match x.dtype() {
        DType::F32 => far_in::<f32>(x, out, scalar),
        _ => far_in::<f64>(x, out, scalar),
    }
}

/// [`far`] for float tensors of type `T`.
fn far_in<T: Elem>(x: &Tensor, out: Tensor, scalar: fn(f64) -> f64) -> Result<Tensor> {
    let beyond = |v: T| v.to_f64().abs() > k::BESSEL_VEC_MAX;
    let xd = x.storage().read::<T>();
    if !xd.iter().fold(false, |any, &v| any | beyond(v)) {
        return Ok(out);
    }
    let od = out.storage().read::<T>();
    let f = |v: T, o: T| {
        if beyond(v) {
            T::from_f64(scalar(v.to_f64()))
        } else {
            o
        }
    };
    Ok(Tensor::from_mapped(elementwise::map_binary(
        &xd,
        x.layout(),
        &od,
        out.layout(),
        true,
        f,
    )?))
}

// ---- binary: zeta and the polynomials ----

/// `f32f` / `f64f` elementwise over the broadcast operands, in PyTorch's result dtype
/// (integer and bool results in the default float dtype); float16 / bfloat16 are PyTorch's
/// `"<kernel>_cpu" not implemented`.
fn map2(
    kernel: &str,
    a: &Operand,
    b: &Operand,
    f32f: impl Fn(f32, f32) -> f32 + Send + Sync,
    f64f: impl Fn(f64, f64) -> f64 + Send + Sync,
) -> Result<Tensor> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let promoted = result_type(&[a, b]);
    let dtype = if promoted.is_float() {
        promoted
    } else {
        DType::default_float()
    };
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(Error::dtype_not_implemented(format!("{kernel}_cpu"), dtype));
    }
    let (da, db) = (a.data(dtype)?, b.data(dtype)?);
    let (la, lb) = (
        da.layout().broadcast_to(&shape)?,
        db.layout().broadcast_to(&shape)?,
    );
    Ok(match dtype {
        DType::F32 => {
            let (x, y) = (da.storage().read::<f32>(), db.storage().read::<f32>());
            Tensor::from_mapped(elementwise::map_binary(&x, &la, &y, &lb, true, f32f)?)
        }
        _ => {
            let (x, y) = (da.storage().read::<f64>(), db.storage().read::<f64>());
            Tensor::from_mapped(elementwise::map_binary(&x, &la, &y, &lb, true, f64f)?)
        }
    })
}

/// The Hurwitz zeta function zeta(x, q) = sum_k (k + q)^-x (`torch.special.zeta`; either
/// operand may be a number). Differentiable in q only: d/dq = -x zeta(x + 1, q)
/// (SpecialZetaBackward0, or 1 / 2 when x / q is a number); the derivative in x raises
/// PyTorch's NotImplementedError.
pub fn special_zeta(x: &Operand, q: &Operand) -> Result<Tensor> {
    // float32 accumulates in f64, as PyTorch's zeta does on the CPU
    let out = map2(
        "zeta",
        x,
        q,
        |x: f32, q: f32| zeta_f64(x as f64, q as f64) as f32,
        zeta_f64,
    )?;
    let ins: Vec<&Tensor> = [x.tensor(), q.tensor()].into_iter().flatten().collect();
    if !needs_grad(&ins) {
        return Ok(out);
    }
    let (name, inputs) = match (x, q) {
        (Operand::T(a), Operand::T(b)) => ("SpecialZetaBackward0", vec![a, b]),
        (Operand::S(_), Operand::T(b)) => ("SpecialZetaBackward1", vec![b]),
        (Operand::T(a), Operand::S(_)) => ("SpecialZetaBackward2", vec![a]),
        _ => unreachable!("a tensor needs a gradient"),
    };
    // the gradient's x: a number stays one, a tensor is saved
    let x_number = match x {
        Operand::S(v) => Some(*v),
        Operand::T(_) => None,
    };
    let q_index = usize::from(matches!(x, Operand::T(_)));
    let saved: Vec<Saved> = inputs.iter().map(|t| Saved::Input((*t).clone())).collect();
    record(name, &inputs, &[&out], saved, move |ctx| {
        let x_needs = x_number.is_none() && ctx.needs(0);
        if x_needs {
            return Err(Error::NotImplemented(
                "the derivative for 'zeta' is not implemented.".into(),
            ));
        }
        if q_index >= ctx.saved.len() {
            // zeta(tensor, number): only x could need a gradient
            return Ok(vec![None]);
        }
        let g = ctx.grad(0)?;
        let (x1, minus_x) = match x_number {
            Some(v) => {
                let v = v.to_f64();
                (s(v + 1.0), s(-v))
            }
            None => {
                let xt = &ctx.saved[0];
                (
                    Operand::T(binary(BinOp::Add, &t(xt), &s(1.0))?),
                    Operand::T(neg(xt)?),
                )
            }
        };
        let z = special_zeta(&x1, &t(&ctx.saved[q_index]))?;
        let d = binary(BinOp::Mul, &t(&mul(&g, &z)?), &minus_x)?;
        let mut grads = vec![None; ctx.saved.len()];
        grads[q_index] = Some(d);
        Ok(grads)
    });
    Ok(out)
}

/// The orthogonal polynomials of `torch.special`, each `p(x, n)`: PyTorch casts n to the
/// result's float dtype, then to int64 ([`k::degree`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Polynomial {
    ChebyshevT,
    ChebyshevU,
    ChebyshevV,
    ChebyshevW,
    ShiftedChebyshevT,
    ShiftedChebyshevU,
    ShiftedChebyshevV,
    ShiftedChebyshevW,
    HermiteH,
    HermiteHe,
    LaguerreL,
    LegendreP,
}

impl Polynomial {
    /// The name after `torch.special.` (and of the kernel, `<name>_cpu`).
    pub fn name(self) -> &'static str {
        match self {
            Polynomial::ChebyshevT => "chebyshev_polynomial_t",
            Polynomial::ChebyshevU => "chebyshev_polynomial_u",
            Polynomial::ChebyshevV => "chebyshev_polynomial_v",
            Polynomial::ChebyshevW => "chebyshev_polynomial_w",
            Polynomial::ShiftedChebyshevT => "shifted_chebyshev_polynomial_t",
            Polynomial::ShiftedChebyshevU => "shifted_chebyshev_polynomial_u",
            Polynomial::ShiftedChebyshevV => "shifted_chebyshev_polynomial_v",
            Polynomial::ShiftedChebyshevW => "shifted_chebyshev_polynomial_w",
            Polynomial::HermiteH => "hermite_polynomial_h",
            Polynomial::HermiteHe => "hermite_polynomial_he",
            Polynomial::LaguerreL => "laguerre_polynomial_l",
            Polynomial::LegendreP => "legendre_polynomial_p",
        }
    }

    /// The value at x of degree n, in x's type (n already in it).
    fn eval<F: k::PolyFloat>(self, x: F, n: F) -> F {
        let n = k::degree(n.to_f64());
        match self {
            Polynomial::ChebyshevT => k::chebyshev_polynomial_t(x, n),
            Polynomial::ChebyshevU => k::chebyshev_polynomial_u(x, n),
            Polynomial::ChebyshevV => k::chebyshev_polynomial_v(x, n),
            Polynomial::ChebyshevW => k::chebyshev_polynomial_w(x, n),
            Polynomial::ShiftedChebyshevT => k::shifted_chebyshev_polynomial_t(x, n),
            Polynomial::ShiftedChebyshevU => k::shifted_chebyshev_polynomial_u(x, n),
            Polynomial::ShiftedChebyshevV => k::shifted_chebyshev_polynomial_v(x, n),
            Polynomial::ShiftedChebyshevW => k::shifted_chebyshev_polynomial_w(x, n),
            Polynomial::HermiteH => k::hermite_polynomial_h(x, n),
            Polynomial::HermiteHe => k::hermite_polynomial_he(x, n),
            Polynomial::LaguerreL => k::laguerre_polynomial_l(x, n),
            Polynomial::LegendreP => k::legendre_polynomial_p(x, n),
        }
    }
}

/// `torch.special.<polynomial>(x, n)`: either operand may be a number; no derivative (the
/// result records no graph, as PyTorch's).
pub fn special_polynomial(p: Polynomial, x: &Operand, n: &Operand) -> Result<Tensor> {
    // each dtype in its own arithmetic, as PyTorch's loops (float32 overflows where theirs do)
    map2(
        p.name(),
        x,
        n,
        move |x: f32, n: f32| p.eval(x, n),
        move |x: f64, n: f64| p.eval(x, n),
    )
}
