//! Unary elementwise ops. Float-only math promotes int/bool inputs to float32, as PyTorch does.

use super::binary::{binary, mul, mul_scalar, BinOp, Operand};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::{elementwise, simd};
use crate::tensor::Tensor;

/// Applies a float function elementwise; ints and bools are computed in float32.
fn float_map<F32, F64>(t: &Tensor, f32f: F32, f64f: F64) -> Result<Tensor>
where
    F32: Fn(f32) -> f32 + Send + Sync,
    F64: Fn(f64) -> f64 + Send + Sync,
{
    let src = if t.dtype().is_float() {
        t.detach()
    } else {
        super::to_dtype(&t.detach(), DType::F32)?
    };
    Ok(match src.dtype() {
        DType::F32 => {
            let d = src.storage().read::<f32>();
            Tensor::from_mapped(elementwise::map_unary(&d, src.layout(), true, f32f)?)
        }
        _ => {
            let d = src.storage().read::<f64>();
            Tensor::from_mapped(elementwise::map_unary(&d, src.layout(), true, f64f)?)
        }
    })
}

/// Defines a float unary op: kernel for f32 and f64, saved tensors and backward formula.
macro_rules! float_unary {
    ($name:ident, $node:literal, $f:expr, save: $save:ident, |$ctx:ident, $s:ident, $g:ident| $bw:expr) => {
        float_unary!($name, $node, $f, |x: f32| ($f)(x as f64) as f32, save: $save, |$ctx, $s, $g| $bw);
    };
    ($name:ident, $node:literal, $f:expr, $f32:expr, save: $save:ident, |$ctx:ident, $s:ident, $g:ident| $bw:expr) => {
        pub fn $name(t: &Tensor) -> Result<Tensor> {
            let out = float_map(t, $f32, |x: f64| ($f)(x))?;
            if needs_grad(&[t]) {
                let saved = float_unary!(@save $save, t, out);
                record($node, &[t], &[&out], saved, |$ctx| {
                    let $g = $ctx.grad(0)?;
                    let $s = $ctx.saved.first().cloned();
                    let $s = $s.expect("saved");
                    Ok(vec![Some($bw)])
                });
            }
            Ok(out)
        }
    };
    (@save input, $t:ident, $out:ident) => { vec![Saved::Input($t.clone())] };
    (@save output, $t:ident, $out:ident) => { vec![Saved::Output($out.clone(), 0)] };
}

fn t(x: &Tensor) -> Operand {
    Operand::T(x.clone())
}
fn s(v: f64) -> Operand {
    Operand::S(Scalar::Float(v))
}

float_unary!(exp, "ExpBackward0", f64::exp, simd::exp_f32, save: output, |ctx, out, g| mul(&g, &out)?);
float_unary!(log, "LogBackward0", f64::ln, save: input, |ctx, x, g| binary(BinOp::Div, &t(&g), &t(&x))?);
float_unary!(log1p, "Log1PBackward0", f64::ln_1p, save: input, |ctx, x, g| {
    binary(BinOp::Div, &t(&g), &t(&binary(BinOp::Add, &t(&x), &s(1.0))?))?
});
float_unary!(sqrt, "SqrtBackward0", f64::sqrt, f32::sqrt, save: output, |ctx, out, g| {
    binary(BinOp::Div, &t(&g), &t(&mul_scalar(&out, 2.0)?))?
});
float_unary!(rsqrt, "RsqrtBackward0", |x: f64| 1.0 / x.sqrt(), save: output, |ctx, out, g| {
    let o3 = mul(&mul(&out, &out)?, &out)?;
    mul_scalar(&mul(&g, &o3)?, -0.5)?
});
float_unary!(sin, "SinBackward0", f64::sin, save: input, |ctx, x, g| mul(&g, &cos(&x)?)?);
float_unary!(cos, "CosBackward0", f64::cos, save: input, |ctx, x, g| {
    mul(&g, &neg(&sin(&x)?)?)?
});
float_unary!(tanh, "TanhBackward0", f64::tanh, simd::tanh_f32, save: output, |ctx, out, g| {
    // g * (1 - out^2)
    let one_minus = binary(BinOp::Sub, &s(1.0), &t(&mul(&out, &out)?))?;
    mul(&g, &one_minus)?
});
float_unary!(sigmoid, "SigmoidBackward0", |x: f64| 1.0 / (1.0 + (-x).exp()), simd::sigmoid_f32, save: output, |ctx, out, g| {
    let one_minus = binary(BinOp::Sub, &s(1.0), &t(&out))?;
    mul(&mul(&g, &out)?, &one_minus)?
});
float_unary!(reciprocal, "ReciprocalBackward0", |x: f64| 1.0 / x, save: output, |ctx, out, g| {
    neg(&mul(&g, &mul(&out, &out)?)?)?
});
float_unary!(erf, "ErfBackward0", erf_f64, save: input, |ctx, x, g| {
    // 2/sqrt(pi) * exp(-x^2)
    let e = exp(&neg(&mul(&x, &x)?)?)?;
    mul(&g, &mul_scalar(&e, std::f64::consts::FRAC_2_SQRT_PI)?)?
});
float_unary!(silu, "SiluBackward0", |x: f64| x / (1.0 + (-x).exp()), |x: f32| x * simd::sigmoid_f32(x), save: input, |ctx, x, g| {
    // sig(x) * (1 + x * (1 - sig(x)))
    let sg = sigmoid(&x)?;
    let one_minus = binary(BinOp::Sub, &s(1.0), &t(&sg))?;
    let inner = binary(BinOp::Add, &s(1.0), &t(&mul(&x, &one_minus)?))?;
    mul(&g, &mul(&sg, &inner)?)?
});

/// erf with ~1e-16 accuracy (W. J. Cody's rational approximations via erfc for large |x|).
pub fn erf_f64(x: f64) -> f64 {
    // Abramowitz-Stegun 7.1.26 is too coarse for float64 gradchecks; use a series / continued
    // fraction split instead.
    let ax = x.abs();
    if ax < 2.5 {
        // Taylor series: erf(x) = 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1))
        let mut term = x;
        let mut sum = x;
        let x2 = x * x;
        let mut n = 0.0;
        loop {
            n += 1.0;
            term *= -x2 / n;
            let add = term / (2.0 * n + 1.0);
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
            if n > 200.0 {
                break;
            }
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else {
        // continued fraction for erfc (Lentz), accurate for |x| >= 2.5
        let z = ax;
        let mut f;
        let tiny = 1e-300;
        let mut c;
        let mut d;
        // erfc(z) = exp(-z^2)/sqrt(pi) * 1/(z + 1/2/(z + 1/(z + 3/2/(z + ...))))
        f = z;
        if f == 0.0 {
            f = tiny;
        }
        c = f;
        d = 0.0;
        for i in 1..300 {
            let a = i as f64 / 2.0;
            d = z + a * d;
            if d == 0.0 {
                d = tiny;
            }
            c = z + a / c;
            if c == 0.0 {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        let erfc = (-z * z).exp() / std::f64::consts::PI.sqrt() / f;
        let r = 1.0 - erfc;
        if x < 0.0 {
            -r
        } else {
            r
        }
    }
}

pub fn neg(x: &Tensor) -> Result<Tensor> {
    if x.dtype() == DType::Bool {
        return Err(Error::Runtime("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.".into()));
    }
    let out = same_dtype_map(x, |v| -v, i64::wrapping_neg)?;
    if needs_grad(&[x]) {
        record("NegBackward0", &[x], &[&out], vec![], |ctx| {
            Ok(vec![Some(neg(&ctx.grad(0)?)?)])
        });
    }
    Ok(out)
}

/// Keeps the dtype; sign/abs of ints stay ints.
/// Applies `ff` to float elements and `fi` to integer ones, keeping the dtype. Generic (not
/// `fn` pointers) so the per-element call inlines and vectorises.
fn same_dtype_map<FF, FI>(x: &Tensor, ff: FF, fi: FI) -> Result<Tensor>
where
    FF: Fn(f64) -> f64 + Copy + Send + Sync,
    FI: Fn(i64) -> i64 + Copy + Send + Sync,
{
    let l = x.layout();
    Ok(match x.dtype() {
        DType::F32 => {
            let d = x.storage().read::<f32>();
            Tensor::from_mapped(elementwise::map_unary(&d, l, false, |v: f32| {
                ff(v as f64) as f32
            })?)
        }
        DType::F64 => {
            let d = x.storage().read::<f64>();
            Tensor::from_mapped(elementwise::map_unary(&d, l, false, ff)?)
        }
        DType::I64 => {
            let d = x.storage().read::<i64>();
            Tensor::from_mapped(elementwise::map_unary(&d, l, false, fi)?)
        }
        DType::Bool => {
            let d = x.storage().read::<u8>();
            Tensor::from_mapped(elementwise::map_unary(&d, l, false, |v: u8| {
                (fi(v as i64) != 0) as u8
            })?)
        }
    })
}

fn sign_f(v: f64) -> f64 {
    if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else if v.is_nan() {
        v
    } else {
        0.0
    }
}

pub fn sign(x: &Tensor) -> Result<Tensor> {
    let out = same_dtype_map(x, sign_f, i64::signum)?;
    if needs_grad(&[x]) {
        record("SignBackward0", &[x], &[&out], vec![], |ctx| {
            Ok(vec![Some(mul_scalar(&ctx.grad(0)?, 0.0)?)])
        });
    }
    Ok(out)
}

pub fn abs(x: &Tensor) -> Result<Tensor> {
    let out = same_dtype_map(x, f64::abs, i64::wrapping_abs)?;
    if needs_grad(&[x]) {
        record(
            "AbsBackward0",
            &[x],
            &[&out],
            vec![Saved::Input(x.clone())],
            |ctx| Ok(vec![Some(mul(&ctx.grad(0)?, &sign(&ctx.saved[0])?)?)]),
        );
    }
    Ok(out)
}

pub fn relu(x: &Tensor) -> Result<Tensor> {
    let out = same_dtype_map(
        x,
        |v| if v > 0.0 || v.is_nan() { v } else { 0.0 },
        |v| v.max(0),
    )?;
    if needs_grad(&[x]) {
        record(
            "ReluBackward0",
            &[x],
            &[&out],
            vec![Saved::Output(out.clone(), 0)],
            |ctx| {
                Ok(vec![Some(threshold_backward(
                    &ctx.grad(0)?,
                    &ctx.saved[0],
                    0.0,
                )?)])
            },
        );
    }
    Ok(out)
}

/// `threshold_backward(grad, x, threshold)`: `grad` where `x > threshold` (or NaN), else 0, in
/// one pass (ThresholdBackwardBackward0: the same op of the incoming gradient for `grad`,
/// zeros for `x`).
pub fn threshold_backward(grad: &Tensor, x: &Tensor, threshold: f64) -> Result<Tensor> {
    let shape = crate::layout::broadcast_shapes(grad.shape(), x.shape())?;
    let x_same = super::to_dtype(x, grad.dtype())?;
    let (lg, lx) = (
        grad.layout().broadcast_to(&shape)?,
        x_same.layout().broadcast_to(&shape)?,
    );
    let out = dispatch_float!(grad.dtype(), T => {
        let (g, v) = (grad.storage().read::<T>(), x_same.storage().read::<T>());
        let th = <T as crate::storage::Elem>::from_f64(threshold);
        let zero = <T as crate::storage::Elem>::from_f64(0.0);
        let r = elementwise::map_binary(&g, &lg, &v, &lx, false, move |g: T, v: T| if v <= th { zero } else { g })?;
        Tensor::from_mapped(r)
    });
    if needs_grad(&[grad, x]) {
        record(
            "ThresholdBackwardBackward0",
            &[grad, x],
            &[&out],
            vec![Saved::Input(x.clone())],
            move |ctx| {
                let gg = ctx.grad(0)?;
                Ok(vec![
                    ctx.needs(0)
                        .then(|| threshold_backward(&gg, &ctx.saved[0], threshold))
                        .transpose()?,
                    ctx.needs(1)
                        .then(|| Tensor::zeros(ctx.saved[0].shape(), gg.dtype()))
                        .transpose()?,
                ])
            },
        );
    }
    Ok(out)
}

pub fn logical_not(x: &Tensor) -> Result<Tensor> {
    dispatch!(x.dtype(), T => {
        let d = x.storage().read::<T>();
        Ok(Tensor::from_mapped(elementwise::map_unary(&d, x.layout(), false, |v: T| (!crate::storage::Elem::is_true(v)) as u8)?))
    })
}

/// `~x`: logical not for bool, bitwise not for ints.
pub fn bitwise_not(x: &Tensor) -> Result<Tensor> {
    match x.dtype() {
        DType::Bool => logical_not(x),
        DType::I64 => {
            let d = x.storage().read::<i64>();
            Ok(Tensor::from_mapped(elementwise::map_unary(
                &d,
                x.layout(),
                false,
                |v: i64| !v,
            )?))
        }
        dt => Err(Error::NotImplemented(format!(
            "\"bitwise_not_cpu\" not implemented for '{}'",
            dt.kernel_name()
        ))),
    }
}

/// gelu, exact (`approximate="none"`) or with the tanh approximation.
pub fn gelu(x: &Tensor, tanh_approx: bool) -> Result<Tensor> {
    const K: f64 = 0.797_884_560_802_865_4; // sqrt(2/pi)
    let out = if tanh_approx {
        float_map(
            x,
            |v: f32| {
                let v = v as f64;
                (0.5 * v * (1.0 + (K * (v + 0.044715 * v * v * v)).tanh())) as f32
            },
            |v| 0.5 * v * (1.0 + (K * (v + 0.044715 * v * v * v)).tanh()),
        )?
    } else {
        float_map(
            x,
            |v: f32| {
                let v = v as f64;
                (0.5 * v * (1.0 + erf_f64(v * std::f64::consts::FRAC_1_SQRT_2))) as f32
            },
            |v| 0.5 * v * (1.0 + erf_f64(v * std::f64::consts::FRAC_1_SQRT_2)),
        )?
    };
    if needs_grad(&[x]) {
        record(
            "GeluBackward0",
            &[x],
            &[&out],
            vec![Saved::Input(x.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                let x = &ctx.saved[0];
                let d = if tanh_approx {
                    // u = K (x + 0.044715 x^3); d = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) K (1 + 3*0.044715 x^2)
                    let x2 = mul(x, x)?;
                    let x3 = mul(&x2, x)?;
                    let u = mul_scalar(
                        &binary(BinOp::Add, &t(x), &t(&mul_scalar(&x3, 0.044715)?))?,
                        K,
                    )?;
                    let th = tanh(&u)?;
                    let left = mul_scalar(&binary(BinOp::Add, &s(1.0), &t(&th))?, 0.5)?;
                    let sech2 = binary(BinOp::Sub, &s(1.0), &t(&mul(&th, &th)?))?;
                    let du = mul_scalar(
                        &binary(BinOp::Add, &s(1.0), &t(&mul_scalar(&x2, 3.0 * 0.044715)?))?,
                        K,
                    )?;
                    let right = mul(&mul_scalar(&mul(x, &sech2)?, 0.5)?, &du)?;
                    binary(BinOp::Add, &t(&left), &t(&right))?
                } else {
                    // Phi(x) + x phi(x)
                    let cdf = mul_scalar(
                        &binary(
                            BinOp::Add,
                            &s(1.0),
                            &t(&erf(&mul_scalar(x, std::f64::consts::FRAC_1_SQRT_2)?)?),
                        )?,
                        0.5,
                    )?;
                    let pdf = mul_scalar(
                        &exp(&mul_scalar(&mul(x, x)?, -0.5)?)?,
                        0.398_942_280_401_432_7,
                    )?;
                    binary(BinOp::Add, &t(&cdf), &t(&mul(x, &pdf)?))?
                };
                Ok(vec![Some(mul(&g, &d)?)])
            },
        );
    }
    Ok(out)
}

/// clamp with optional number bounds (ClampBackward1). Gradient flows where min <= x <= max.
pub fn clamp(x: &Tensor, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::Runtime(
            "torch.clamp: At least one of 'min' or 'max' must not be None".into(),
        ));
    }
    let mut out = x.detach();
    if let Some(lo) = min {
        out = binary(BinOp::Maximum, &t(&out), &Operand::S(lo))?;
    }
    if let Some(hi) = max {
        out = binary(BinOp::Minimum, &t(&out), &Operand::S(hi))?;
    }
    if needs_grad(&[x]) {
        record(
            "ClampBackward1",
            &[x],
            &[&out],
            vec![Saved::Input(x.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                let x = &ctx.saved[0];
                let mut mask: Option<Tensor> = None;
                if let Some(lo) = min {
                    mask = Some(binary(BinOp::Ge, &t(x), &Operand::S(lo))?);
                }
                if let Some(hi) = max {
                    let m = binary(BinOp::Le, &t(x), &Operand::S(hi))?;
                    mask = Some(match mask {
                        Some(a) => binary(BinOp::LogicalAnd, &t(&a), &t(&m))?,
                        None => m,
                    });
                }
                Ok(vec![Some(mul(&g, &mask.expect("one bound"))?)])
            },
        );
    }
    Ok(out)
}

/// `leaky_relu` (LeakyReluBackward0): one pass over the input in its own dtype.
pub fn leaky_relu(x: &Tensor, slope: f64) -> Result<Tensor> {
    let out =
        match x.dtype() {
            DType::F32 => {
                let s = slope as f32;
                let d = x.storage().read::<f32>();
                let v =
                    elementwise::map_unary(
                        &d,
                        x.layout(),
                        false,
                        |v: f32| {
                            if v > 0.0 {
                                v
                            } else {
                                v * s
                            }
                        },
                    )?;
                Tensor::from_mapped(v)
            }
            DType::F64 => {
                let d = x.storage().read::<f64>();
                let v = elementwise::map_unary(&d, x.layout(), false, |v: f64| {
                    if v > 0.0 {
                        v
                    } else {
                        v * slope
                    }
                })?;
                Tensor::from_mapped(v)
            }
            dt => {
                return Err(Error::NotImplemented(format!(
                    "\"leaky_relu_cpu\" not implemented for '{}'",
                    dt.kernel_name()
                )))
            }
        };
    if needs_grad(&[x]) {
        record(
            "LeakyReluBackward0",
            &[x],
            &[&out],
            vec![Saved::Input(x.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                let pos = binary(
                    BinOp::Gt,
                    &t(&ctx.saved[0]),
                    &Operand::S(Scalar::Float(0.0)),
                )?;
                let neg = Operand::T(mul_scalar(&g, slope)?);
                Ok(vec![Some(super::binary::where_op(&pos, &t(&g), &neg)?)])
            },
        );
    }
    Ok(out)
}
