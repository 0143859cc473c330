//! The math functions of `torch` / `torch.special` beyond unary.rs: trig and hyperbolic
//! functions and their inverses, log2/log10/exp2/expm1, erfc/erfinv, the gamma family
//! (lgamma, digamma, polygamma), and the binary atan2 and hypot. Kernels in kernels::math; each
//! backward is a fused kernel, or the same formula in differentiable ops when a graph of the
//! backward is wanted.

use super::binary::{binary, mul, mul_scalar, where_op, BinOp, Operand};
use super::unary::{float_map, float_map_inplace, float_unary, fused_grad, neg, rsqrt};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::kernels::elementwise::Map1;
use crate::kernels::math::{self, Math};
use crate::tensor::Tensor;
use std::f64::consts::{FRAC_2_SQRT_PI, LN_10, LN_2, PI};

fn t(x: &Tensor) -> Operand {
    Operand::T(x.clone())
}
fn s(v: f64) -> Operand {
    Operand::S(Scalar::Float(v))
}
/// `a + b * x^2` (`b` = +-1).
fn affine_sq(a: f64, b: f64, x: &Tensor) -> Result<Tensor> {
    binary(BinOp::Add, &s(a), &t(&mul_scalar(&mul(x, x)?, b)?))
}
fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinOp::Div, &t(a), &t(b))
}

float_unary!(tan / tan_, "TanBackward0", f64::tan_, f32::tan_ => crate::kernels::simd::x86::avx512::tan_ps, save: output, grad: math::tan_grad, |ctx, out, g| {
    mul(&g, &affine_sq(1.0, 1.0, &out)?)?
});
float_unary!(atan / atan_, "AtanBackward0", f64::atan_, f32::atan_, save: input, grad: math::atan_grad, |ctx, x, g| {
    div(&g, &affine_sq(1.0, 1.0, &x)?)?
});
float_unary!(asin / asin_, "AsinBackward0", f64::asin_, f32::asin_, save: input, grad: math::asin_grad, |ctx, x, g| {
    mul(&g, &rsqrt(&affine_sq(1.0, -1.0, &x)?)?)?
});
float_unary!(acos / acos_, "AcosBackward0", f64::acos_, f32::acos_, save: input, grad: math::acos_grad, |ctx, x, g| {
    neg(&mul(&g, &rsqrt(&affine_sq(1.0, -1.0, &x)?)?)?)?
});
float_unary!(sinh / sinh_, "SinhBackward0", f64::sinh_, f32::sinh_, save: input, grad: math::sinh_grad, |ctx, x, g| {
    mul(&g, &cosh(&x)?)?
});
float_unary!(cosh / cosh_, "CoshBackward0", f64::cosh_, f32::cosh_, save: input, grad: math::cosh_grad, |ctx, x, g| {
    mul(&g, &sinh(&x)?)?
});
float_unary!(asinh / asinh_, "AsinhBackward0", f64::asinh_, f32::asinh_, save: input, grad: math::asinh_grad, |ctx, x, g| {
    mul(&g, &rsqrt(&affine_sq(1.0, 1.0, &x)?)?)?
});
float_unary!(acosh / acosh_, "AcoshBackward0", f64::acosh_, f32::acosh_, save: input, grad: math::acosh_grad, |ctx, x, g| {
    mul(&g, &rsqrt(&affine_sq(-1.0, 1.0, &x)?)?)?
});
float_unary!(atanh / atanh_, "AtanhBackward0", f64::atanh_, f32::atanh_, save: input, grad: math::atanh_grad, |ctx, x, g| {
    div(&g, &affine_sq(1.0, -1.0, &x)?)?
});
float_unary!(log2 / log2_, "Log2Backward0", f64::log2_, f32::log2_, save: input, grad: math::log2_grad, |ctx, x, g| {
    div(&g, &mul_scalar(&x, LN_2)?)?
});
float_unary!(log10 / log10_, "Log10Backward0", f64::log10_, f32::log10_, save: input, grad: math::log10_grad, |ctx, x, g| {
    div(&g, &mul_scalar(&x, LN_10)?)?
});
float_unary!(exp2 / exp2_, "Exp2Backward0", f64::exp2_, f32::exp2_, save: output, grad: math::exp2_grad, |ctx, out, g| {
    mul_scalar(&mul(&g, &out)?, LN_2)?
});
float_unary!(expm1 / expm1_, "Expm1Backward0", f64::expm1_, f32::expm1_, save: output, grad: math::expm1_grad, |ctx, out, g| {
    mul(&g, &binary(BinOp::Add, &t(&out), &s(1.0))?)?
});
float_unary!(erfc / erfc_, "ErfcBackward0", f64::erfc_, f32::erfc_, save: input, grad: math::erfc_grad, |ctx, x, g| {
    let e = super::exp(&neg(&mul(&x, &x)?)?)?;
    mul(&g, &mul_scalar(&e, -FRAC_2_SQRT_PI)?)?
});
float_unary!(sinc / sinc_, "SincBackward0", math::sinc::<f64>, math::sinc::<f32>, save: input, grad: math::sinc_grad, |ctx, x, g| {
    // the formula on x with its zeros replaced by 1, so that no 0 / 0 reaches a derivative
    let zero = binary(BinOp::Eq, &t(&x), &s(0.0))?;
    let xs = where_op(&zero, &s(1.0), &t(&x))?;
    let p = mul_scalar(&xs, PI)?;
    let num = binary(BinOp::Sub, &t(&mul(&p, &super::cos(&p)?)?), &t(&super::sin(&p)?))?;
    let d = div(&num, &mul(&p, &xs)?)?;
    // at 0: 0, with the derivative there (sinc''(0) = -pi^2 / 3) through -pi^2 / 3 * x
    let at_zero = binary(BinOp::Add, &t(&mul_scalar(&x, -PI * PI / 3.0)?), &s(0.0))?; // +0, not -0
    mul(&g, &where_op(&zero, &t(&at_zero), &t(&d))?)?
});
float_unary!(erfinv / erfinv_, "ErfinvBackward0", math::erfinv_f64, f32::erfinv_, save: output, grad: math::erfinv_grad, |ctx, out, g| {
    let e = super::exp(&mul(&out, &out)?)?;
    mul(&g, &mul_scalar(&e, 0.886_226_925_452_758)?)?
});
float_unary!(lgamma / lgamma_, "LgammaBackward0", f64::lgamma_, f32::lgamma_, save: input, grad: math::lgamma_grad, |ctx, x, g| {
    mul(&g, &digamma(&x)?)?
});

/// `torch.polygamma(n, x)`: the n-th derivative of digamma (n = 0: digamma itself, node
/// DigammaBackward0); its gradient is polygamma(n + 1, x), so every order is differentiable.
pub fn polygamma(n: i64, x: &Tensor) -> Result<Tensor> {
    if n < 0 {
        return Err(Error::Runtime(
            "polygamma(n, x) does not support negative n.".into(),
        ));
    }
    let k = n as u32;
    let out = if n == 0 {
        // a zero-sized kernel, inlined into the engine's vector loops
        #[derive(Clone, Copy)]
        struct Digamma;
        impl Map1<f32, f32> for Digamma {
            #[inline(always)]
            fn call(&self, v: f32) -> f32 {
                math::digamma_vec(v as f64) as f32
            }
        }
        impl Map1<f64, f64> for Digamma {
            #[inline(always)]
            fn call(&self, v: f64) -> f64 {
                math::digamma_vec(v)
            }
        }
        float_map(x, Digamma, Digamma)?
    } else {
        float_map(
            x,
            move |v: f32| math::polygamma_f64(k, v as f64) as f32,
            move |v: f64| math::polygamma_f64(k, v),
        )?
    };
    if needs_grad(&[x]) {
        let node = if n == 0 {
            "DigammaBackward0"
        } else {
            "PolygammaBackward0"
        };
        record(
            node,
            &[x],
            &[&out],
            vec![Saved::Input(x.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                Ok(vec![Some(mul(&g, &polygamma(n + 1, &ctx.saved[0])?)?)])
            },
        );
    }
    Ok(out)
}

pub fn digamma(x: &Tensor) -> Result<Tensor> {
    polygamma(0, x)
}
