//! Unary elementwise ops. Float-only math promotes int/bool inputs to float32, as PyTorch does.

use super::binary::{binary, mul, mul_scalar, BinOp, Operand};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::elementwise::{Map1, Map2};
use crate::kernels::{activation, elementwise, simd, vmath64 as vm};
use crate::tensor::Tensor;

/// Applies a float function elementwise; ints and bools are computed in float32.
pub(crate) fn float_map<F32, F64>(t: &Tensor, f32f: F32, f64f: F64) -> Result<Tensor>
where
    F32: Map1<f32, f32> + Send,
    F64: Map1<f64, f64> + Send,
{
    let src = if t.dtype().is_float() {
        super::widen(t)?
    } else {
        super::cast(t, DType::default_float().compute())?
    };
    let out = match src.dtype() {
        DType::F32 => {
            let d = src.storage().read::<f32>();
            Tensor::from_mapped(elementwise::map_unary(&d, src.layout(), true, f32f)?)
        }
        _ => {
            let d = src.storage().read::<f64>();
            Tensor::from_mapped(elementwise::map_unary(&d, src.layout(), true, f64f)?)
        }
    };
    // float16 / bfloat16 computed in float32, rounded back
    super::narrow_to(
        out,
        if t.dtype().is_float() {
            t.dtype()
        } else {
            DType::default_float()
        },
    )
}

/// The in-place form of a float op (`x.exp_()`): one pass of its kernel over `x`'s own
/// elements when `x` is float32 or float64 and `super::writes_directly(x)`; else `op` out of
/// place and written back (`apply_inplace`: the graph, other dtypes and PyTorch's errors).
pub(crate) fn float_map_inplace<F32, F64>(
    x: &Tensor,
    f32f: F32,
    f64f: F64,
    op: fn(&Tensor) -> Result<Tensor>,
) -> Result<()>
where
    F32: Map1<f32, f32> + Send,
    F64: Map1<f64, f64> + Send,
{
    if !super::writes_directly(x) {
        return super::apply_inplace(x, &[], op);
    }
    match x.dtype() {
        DType::F32 => {
            let mut d = x.storage().write::<f32>();
            elementwise::map_inplace(&mut d, x.layout(), true, f32f);
        }
        DType::F64 => {
            let mut d = x.storage().write::<f64>();
            elementwise::map_inplace(&mut d, x.layout(), true, f64f);
        }
        _ => return super::apply_inplace(x, &[], op),
    }
    x.bump_version();
    Ok(())
}

/// `same_dtype_map`'s op in place, as `float_map_inplace` (direct for float32 and float64).
fn same_dtype_inplace<FF>(x: &Tensor, ff: FF, op: fn(&Tensor) -> Result<Tensor>) -> Result<()>
where
    FF: Fn(f64) -> f64 + Copy + Send + Sync,
{
    float_map_inplace(x, move |v: f32| ff(v as f64) as f32, ff, op)
}

/// `op_` of an op whose backward reads only its output (relu, sigmoid, tanh, exp...), while a
/// graph is recorded: x's elements are overwritten in one pass, as without one, then `node(x)`
/// records the op's node with x as its input (the history so far) and as its output (saved),
/// as PyTorch's in-place ops rebase a tensor's history. A view, or a dtype without a direct
/// kernel, goes through `apply_inplace`.
pub(crate) fn inplace_saving_output<F32, F64>(
    x: &Tensor,
    f32f: F32,
    f64f: F64,
    op: fn(&Tensor) -> Result<Tensor>,
    node: impl FnOnce(&Tensor),
) -> Result<()>
where
    F32: Map1<f32, f32> + Send,
    F64: Map1<f64, f64> + Send,
{
    if !needs_grad(&[x]) {
        return float_map_inplace(x, f32f, f64f, op);
    }
    super::check_no_internal_overlap(x)?;
    super::check_inplace(x)?;
    if x.meta().view_base.is_some() || !matches!(x.dtype(), DType::F32 | DType::F64) {
        return super::apply_inplace(x, &[], op);
    }
    match x.dtype() {
        DType::F32 => {
            let mut d = x.storage().write::<f32>();
            elementwise::map_inplace(&mut d, x.layout(), true, f32f);
        }
        _ => {
            let mut d = x.storage().write::<f64>();
            elementwise::map_inplace(&mut d, x.layout(), true, f64f);
        }
    }
    x.bump_version();
    node(x);
    Ok(())
}

/// The gradient of an elementwise op from the incoming gradient `g` and a saved tensor (its
/// input or output) in one pass of the kernel `k` (see kernels::activation), as PyTorch's fused
/// backward kernels. When that gradient must itself be differentiable (create_graph), it is
/// built from differentiable ops instead (`composite`, the same formula), so every derivative
/// order keeps working.
pub fn fused_grad(
    g: &Tensor,
    saved: &Tensor,
    k32: impl Map2<f32, f32, f32> + Send,
    k64: impl Map2<f64, f64, f64> + Send,
    composite: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    if needs_grad(&[g, saved]) || g.dtype() != saved.dtype() || g.shape() != saved.shape() {
        return composite();
    }
    let (lg, ls) = (g.layout(), saved.layout());
    Ok(match g.dtype() {
        DType::F32 => {
            let (a, b) = (g.storage().read::<f32>(), saved.storage().read::<f32>());
            Tensor::from_mapped(elementwise::map_binary(&a, lg, &b, ls, true, k32)?)
        }
        DType::F64 => {
            let (a, b) = (g.storage().read::<f64>(), saved.storage().read::<f64>());
            Tensor::from_mapped(elementwise::map_binary(&a, lg, &b, ls, true, k64)?)
        }
        _ => return composite(),
    })
}

/// Defines a float unary op: kernel for f32 and f64, saved tensor, and its backward: the fused
/// kernel `activation::$k` and the same formula in differentiable ops.
/// `grad: name` is a kernel of kernels::activation, `grad: module::name` one of another module.
/// The element functions are wrapped in zero-sized kernel types (`Fwd`, `Bwd`) whose calls are
/// always inlined, so the engine's loops vectorise them however large they are.
macro_rules! float_unary {
    ($name:ident / $inplace:ident, $node:literal, $f:expr, $f32:expr $(=> $v16:path)?, save: $save:ident, grad: $k:ident, |$ctx:ident, $s:ident, $g:ident| $bw:expr) => {
        float_unary!($name / $inplace, $node, $f, $f32 $(=> $v16)?, save: $save, grad: activation::$k, |$ctx, $s, $g| $bw);
    };
    // `f32 => v16`: v16 is the f32 function's explicit AVX-512 form (run by `Map1::run_avx512`)
    ($name:ident / $inplace:ident, $node:literal, $f:expr, $f32:expr $(=> $v16:path)?, save: $save:ident, grad: $km:ident :: $k:ident, |$ctx:ident, $s:ident, $g:ident| $bw:expr) => {
        #[doc = concat!("`", stringify!($name), "` in place.")]
        pub fn $inplace(t: &Tensor) -> Result<()> {
            float_unary!(@fwd $f, $f32 $(=> $v16)?);
            float_unary!(@inplace $save, t, $name, $node, $km::$k, |$ctx, $s, $g| $bw)
        }

        pub fn $name(t: &Tensor) -> Result<Tensor> {
            float_unary!(@fwd $f, $f32 $(=> $v16)?);
            let out = float_map(t, Fwd, Fwd)?;
            if needs_grad(&[t]) {
                float_unary!(@record $save, t, &out, $node, $km::$k, |$ctx, $s, $g| $bw);
            }
            Ok(out)
        }
    };
    // the node of `out = op(x)`, saving x or out, with the fused backward kernel `Bwd`
    (@record $save:ident, $x:expr, $out:expr, $node:literal, $km:ident :: $k:ident, |$ctx:ident, $s:ident, $g:ident| $bw:expr) => {{
        use $crate::kernels::elementwise::Map2;
        struct Bwd;
        impl Map2<f32, f32, f32> for Bwd {
            #[inline(always)]
            fn call(&self, g: f32, s: f32) -> f32 {
                $km::$k::<f32>(g, s)
            }
        }
        impl Map2<f64, f64, f64> for Bwd {
            #[inline(always)]
            fn call(&self, g: f64, s: f64) -> f64 {
                $km::$k::<f64>(g, s)
            }
        }
        let saved = float_unary!(@save $save, $x, $out);
        record($node, &[$x], &[$out], saved, |$ctx| {
            let $g = $ctx.grad(0)?;
            let $s = $ctx.saved[0].clone();
            let grad = fused_grad(&$g, &$s, Bwd, Bwd, || Ok($bw))?;
            Ok(vec![Some(grad)])
        });
    }};
    // an op whose backward reads its output overwrites x in one pass under autograd too
    (@inplace output, $t:ident, $name:ident, $node:literal, $km:ident :: $k:ident, |$ctx:ident, $s:ident, $g:ident| $bw:expr) => {
        $crate::ops::unary::inplace_saving_output($t, Fwd, Fwd, $name, |x: &Tensor| {
            float_unary!(@record output, x, x, $node, $km::$k, |$ctx, $s, $g| $bw)
        })
    };
    (@inplace input, $t:ident, $name:ident, $node:literal, $km:ident :: $k:ident, |$ctx:ident, $s:ident, $g:ident| $bw:expr) => {
        float_map_inplace($t, Fwd, Fwd, $name)
    };
    (@fwd $f:expr, $f32:expr $(=> $v16:path)?) => {
        struct Fwd;
        impl $crate::kernels::elementwise::Map1<f32, f32> for Fwd {
            #[inline(always)]
            fn call(&self, x: f32) -> f32 {
                ($f32)(x)
            }
            $(
                #[cfg(target_arch = "x86_64")]
                #[inline(always)]
                unsafe fn run_avx512(&self, a: &[f32], d: &mut [std::mem::MaybeUninit<f32>]) -> bool {
                    let n = a.len().min(d.len());
                    // SAFETY: the contract of run_avx512: the CPU has the features of map16 and
                    // $v16; a is readable and d (MaybeUninit<f32>, f32's layout) writable for
                    // n f32s.
                    unsafe { $crate::kernels::simd::x86::avx512::map16(a.as_ptr(), d.as_mut_ptr().cast(), n, |v| $v16(v)) };
                    true
                }
                #[cfg(target_arch = "x86_64")]
                #[inline(always)]
                unsafe fn inplace_avx512(&self, d: &mut [f32]) -> bool {
                    let (q, n) = (d.as_mut_ptr(), d.len());
                    // SAFETY: as run_avx512, d read and written through q only.
                    unsafe { $crate::kernels::simd::x86::avx512::map16(q, q, n, |v| $v16(v)) };
                    true
                }
            )?
        }
        impl $crate::kernels::elementwise::Map1<f64, f64> for Fwd {
            #[inline(always)]
            fn call(&self, x: f64) -> f64 {
                ($f)(x)
            }
        }
    };
    (@save input, $t:expr, $out:expr) => { vec![Saved::Input($t.clone())] };
    (@save output, $t:expr, $out:expr) => { vec![Saved::Output($out.clone(), 0)] };
}
pub(crate) use float_unary;

fn t(x: &Tensor) -> Operand {
    Operand::T(x.clone())
}
fn s(v: f64) -> Operand {
    Operand::S(Scalar::Float(v))
}

float_unary!(exp / exp_, "ExpBackward0", vm::exp_f64, simd::exp_f32 => simd::x86::avx512::exp_ps, save: output, grad: exp_grad, |ctx, out, g| mul(&g, &out)?);
float_unary!(log / log_, "LogBackward0", vm::log_f64, simd::log_f32, save: input, grad: log_grad, |ctx, x, g| binary(BinOp::Div, &t(&g), &t(&x))?);
float_unary!(log1p / log1p_, "Log1PBackward0", vm::log1p_f64, simd::log1p_f32, save: input, grad: log1p_grad, |ctx, x, g| {
    binary(BinOp::Div, &t(&g), &t(&binary(BinOp::Add, &t(&x), &s(1.0))?))?
});
float_unary!(sqrt / sqrt_, "SqrtBackward0", f64::sqrt, f32::sqrt, save: output, grad: sqrt_grad, |ctx, out, g| {
    binary(BinOp::Div, &t(&g), &t(&mul_scalar(&out, 2.0)?))?
});
float_unary!(rsqrt / rsqrt_, "RsqrtBackward0", |x: f64| 1.0 / x.sqrt(), |x: f32| 1.0 / x.sqrt(), save: output, grad: rsqrt_grad, |ctx, out, g| {
    let o3 = mul(&mul(&out, &out)?, &out)?;
    mul_scalar(&mul(&g, &o3)?, -0.5)?
});
float_unary!(sin / sin_, "SinBackward0", f64::sin, simd::sin_f32 => simd::x86::avx512::sin_ps, save: input, grad: sin_grad, |ctx, x, g| mul(&g, &cos(&x)?)?);
float_unary!(cos / cos_, "CosBackward0", f64::cos, simd::cos_f32 => simd::x86::avx512::cos_ps, save: input, grad: cos_grad, |ctx, x, g| {
    mul(&g, &neg(&sin(&x)?)?)?
});
float_unary!(tanh / tanh_, "TanhBackward0", vm::tanh_f64, simd::tanh_f32 => simd::x86::avx512::tanh_ps, save: output, grad: tanh_grad, |ctx, out, g| {
    // g * (1 - out^2)
    let one_minus = binary(BinOp::Sub, &s(1.0), &t(&mul(&out, &out)?))?;
    mul(&g, &one_minus)?
});
float_unary!(sigmoid / sigmoid_, "SigmoidBackward0", vm::sigmoid_f64, simd::sigmoid_f32 => simd::x86::avx512::sigmoid_ps, save: output, grad: sigmoid_grad, |ctx, out, g| {
    let one_minus = binary(BinOp::Sub, &s(1.0), &t(&out))?;
    mul(&mul(&g, &out)?, &one_minus)?
});
float_unary!(reciprocal / reciprocal_, "ReciprocalBackward0", |x: f64| 1.0 / x, |x: f32| 1.0 / x, save: output, grad: reciprocal_grad, |ctx, out, g| {
    neg(&mul(&g, &mul(&out, &out)?)?)?
});
float_unary!(erf / erf_, "ErfBackward0", vm::verf_f64, simd::erf_f32, save: input, grad: erf_grad, |ctx, x, g| {
    // 2/sqrt(pi) * exp(-x^2)
    let e = exp(&neg(&mul(&x, &x)?)?)?;
    mul(&g, &mul_scalar(&e, std::f64::consts::FRAC_2_SQRT_PI)?)?
});
float_unary!(silu / silu_, "SiluBackward0", |x: f64| x / (1.0 + vm::exp_f64(-x)), |x: f32| x * simd::sigmoid_f32(x) => simd::x86::avx512::silu_ps, save: input, grad: silu_grad, |ctx, x, g| {
    // sig(x) * (1 + x * (1 - sig(x)))
    let sg = sigmoid(&x)?;
    let one_minus = binary(BinOp::Sub, &s(1.0), &t(&sg))?;
    let inner = binary(BinOp::Add, &s(1.0), &t(&mul(&x, &one_minus)?))?;
    mul(&g, &mul(&sg, &inner)?)?
});

pub use crate::kernels::simd::erf_f64;

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
        d => super::narrow_to(same_dtype_map(&super::widen(x)?, ff, fi)?, d)?,
    })
}

/// `(0 < v) - (v < 0)`, PyTorch's sign: 0 for a zero of either sign and for NaN.
fn sign_f(v: f64) -> f64 {
    if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else {
        0.0
    }
}

pub fn sign(x: &Tensor) -> Result<Tensor> {
    let out = same_dtype_map(x, sign_f, i64::signum)?;
    if needs_grad(&[x]) {
        record("SignBackward0", &[x], &[&out], vec![], zero_grad);
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
    let out = same_dtype_map(x, relu_f, |v| v.max(0))?;
    if needs_grad(&[x]) {
        relu_node(x, &out);
    }
    Ok(out)
}

#[inline(always)]
fn relu_f(v: f64) -> f64 {
    if v > 0.0 || v.is_nan() {
        v
    } else {
        0.0
    }
}

/// ReluBackward0 of `out = relu(x)`, from the saved output.
fn relu_node(x: &Tensor, out: &Tensor) {
    record(
        "ReluBackward0",
        &[x],
        &[out],
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

/// `threshold_backward(grad, x, threshold)`: `grad` where `x > threshold` (or NaN), else 0, in
/// one pass (ThresholdBackwardBackward0: the same op of the incoming gradient for `grad`,
/// zeros for `x`).
pub fn threshold_backward(grad: &Tensor, x: &Tensor, threshold: f64) -> Result<Tensor> {
    let shape = crate::layout::broadcast_shapes(grad.shape(), x.shape())?;
    // (float16 / bfloat16 select in float32: exact)
    let g_wide = super::widen(grad)?;
    let x_same = super::cast(x, g_wide.dtype())?;
    let (lg, lx) = (
        g_wide.layout().broadcast_to(&shape)?,
        x_same.layout().broadcast_to(&shape)?,
    );
    let out = dispatch_float!(g_wide.dtype(), T => {
        let (g, v) = (g_wide.storage().read::<T>(), x_same.storage().read::<T>());
        let th = <T as crate::storage::Elem>::from_f64(threshold);
        let zero = <T as crate::storage::Elem>::from_f64(0.0);
        let r = elementwise::map_binary(&g, &lg, &v, &lx, false, move |g: T, v: T| if v <= th { zero } else { g })?;
        Tensor::from_mapped(r)
    });
    let out = super::narrow_to(out, grad.dtype())?;
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

/// `sgn`: `sign` for real tensors, recorded as SgnBackward0 (a zero gradient).
pub fn sgn(x: &Tensor) -> Result<Tensor> {
    let out = same_dtype_map(x, sign_f, i64::signum)?;
    if needs_grad(&[x]) {
        record("SgnBackward0", &[x], &[&out], vec![], zero_grad);
    }
    Ok(out)
}

/// The gradient of a piecewise-constant op: zeros, not connected to the incoming gradient
/// (PyTorch's `zeros_like(grad)`), so an infinite gradient does not become NaN.
fn zero_grad(ctx: &mut crate::autograd::graph::BackwardCtx) -> Result<Vec<Option<Tensor>>> {
    let g = ctx.grad(0)?;
    Ok(vec![Some(Tensor::zeros(g.shape(), g.dtype())?)])
}

/// Rounds a float to the nearest integer, halfway cases to even (C's `nearbyint`).
#[inline(always)]
fn round_half_even(v: f64) -> f64 {
    v.round_ties_even()
}

/// A rounding op (floor, ceil, round, trunc): floats are rounded in their own dtype, integers
/// come back as a copy, bools are PyTorch's `<kernel> not implemented for 'Bool'`; the
/// gradient is zero.
macro_rules! rounding_unary {
    ($name:ident, $node:literal, $kernel:literal, $f:expr) => {
        pub fn $name(x: &Tensor) -> Result<Tensor> {
            if x.dtype() == DType::Bool {
                return Err(Error::dtype_not_implemented($kernel, DType::Bool));
            }
            let out = same_dtype_map(x, $f, |v| v)?;
            if needs_grad(&[x]) {
                record($node, &[x], &[&out], vec![], zero_grad);
            }
            Ok(out)
        }
    };
}
rounding_unary!(floor, "FloorBackward0", "floor_vml_cpu", f64::floor);
rounding_unary!(ceil, "CeilBackward0", "ceil_vml_cpu", f64::ceil);
rounding_unary!(round, "RoundBackward0", "round_vml_cpu", round_half_even);
rounding_unary!(trunc, "TruncBackward0", "trunc_vml_cpu", f64::trunc);

/// `fix`: PyTorch's alias of `trunc` (TruncBackward0).
pub fn fix(x: &Tensor) -> Result<Tensor> {
    trunc(x)
}

/// `round(decimals=d)` (RoundBackward1): `nearbyint(x * 10^d) / 10^d`, or
/// `nearbyint(x / 10^-d) * 10^-d` for negative `d`, in the tensor's dtype as PyTorch computes
/// it; floats only.
pub fn round_decimals(x: &Tensor, decimals: i64) -> Result<Tensor> {
    if !x.dtype().is_float() {
        let kernel = if decimals == 0 {
            "round_vml_cpu"
        } else {
            "round_cpu"
        };
        return Err(Error::dtype_not_implemented(kernel, x.dtype()));
    }
    let neg = decimals < 0;
    let p = 10f64.powf(decimals.unsigned_abs() as f64);
    let p32 = p as f32;
    let l = x.layout();
    let out = match x.dtype() {
        DType::F32 => {
            let d = x.storage().read::<f32>();
            Tensor::from_mapped(elementwise::map_unary(&d, l, false, move |v: f32| {
                if neg {
                    (v / p32).round_ties_even() * p32
                } else {
                    (v * p32).round_ties_even() / p32
                }
            })?)
        }
        _ => {
            let d = x.storage().read::<f64>();
            Tensor::from_mapped(elementwise::map_unary(&d, l, false, move |v: f64| {
                if neg {
                    (v / p).round_ties_even() * p
                } else {
                    (v * p).round_ties_even() / p
                }
            })?)
        }
    };
    if needs_grad(&[x]) {
        record("RoundBackward1", &[x], &[&out], vec![], zero_grad);
    }
    Ok(out)
}

/// `frac`: `x - trunc(x)`, floats only (FracBackward0: the gradient passes through).
pub fn frac(x: &Tensor) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(Error::dtype_not_implemented("frac_cpu", x.dtype()));
    }
    let out = same_dtype_map(x, |v| v - v.trunc(), |v| v)?;
    if needs_grad(&[x]) {
        record("FracBackward0", &[x], &[&out], vec![], |ctx| {
            Ok(vec![Some(ctx.grad(0)?)])
        });
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
        d if d.is_int() && d != DType::I64 => super::narrow_to(bitwise_not(&super::widen(x)?)?, d),
        DType::I64 => {
            let d = x.storage().read::<i64>();
            Ok(Tensor::from_mapped(elementwise::map_unary(
                &d,
                x.layout(),
                false,
                |v: i64| !v,
            )?))
        }
        dt => Err(Error::dtype_not_implemented("bitwise_not_cpu", dt)),
    }
}

const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

/// gelu's element function, exact or (`TANH`) with the tanh approximation, as a kernel of the
/// engine.
struct GeluFn<const TANH: bool>;
impl<const TANH: bool> Map1<f32, f32> for GeluFn<TANH> {
    #[inline(always)]
    fn call(&self, v: f32) -> f32 {
        if TANH {
            simd::gelu_tanh_f32(v)
        } else {
            simd::gelu_f32(v)
        }
    }
}
impl<const TANH: bool> Map1<f64, f64> for GeluFn<TANH> {
    #[inline(always)]
    fn call(&self, v: f64) -> f64 {
        if TANH {
            0.5 * v * (1.0 + vm::tanh_f64(SQRT_2_OVER_PI * (v + 0.044715 * v * v * v)))
        } else {
            0.5 * v * (1.0 + vm::verf_f64(v * std::f64::consts::FRAC_1_SQRT_2))
        }
    }
}

/// gelu, exact (`approximate="none"`) or with the tanh approximation.
pub fn gelu(x: &Tensor, tanh_approx: bool) -> Result<Tensor> {
    let out = if tanh_approx {
        float_map(x, GeluFn::<true>, GeluFn::<true>)?
    } else {
        float_map(x, GeluFn::<false>, GeluFn::<false>)?
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
                let composite = || {
                    let d = if tanh_approx {
                        // u = K (x + 0.044715 x^3); d = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) K (1 + 3*0.044715 x^2)
                        let x2 = mul(x, x)?;
                        let x3 = mul(&x2, x)?;
                        let u = mul_scalar(
                            &binary(BinOp::Add, &t(x), &t(&mul_scalar(&x3, 0.044715)?))?,
                            SQRT_2_OVER_PI,
                        )?;
                        let th = tanh(&u)?;
                        let left = mul_scalar(&binary(BinOp::Add, &s(1.0), &t(&th))?, 0.5)?;
                        let sech2 = binary(BinOp::Sub, &s(1.0), &t(&mul(&th, &th)?))?;
                        let du = mul_scalar(
                            &binary(BinOp::Add, &s(1.0), &t(&mul_scalar(&x2, 3.0 * 0.044715)?))?,
                            SQRT_2_OVER_PI,
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
                    mul(&g, &d)
                };
                let grad = if tanh_approx {
                    fused_grad(
                        &g,
                        x,
                        activation::gelu_tanh_grad::<f32>,
                        activation::gelu_tanh_grad::<f64>,
                        composite,
                    )?
                } else {
                    fused_grad(
                        &g,
                        x,
                        activation::gelu_grad::<f32>,
                        activation::gelu_grad::<f64>,
                        composite,
                    )?
                };
                Ok(vec![Some(grad)])
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
    let out = match clamp_float(x, min, max)? {
        Some(out) => out,
        None => {
            let mut out = x.detach();
            if let Some(lo) = min {
                out = binary(BinOp::Maximum, &t(&out), &Operand::S(lo))?;
            }
            if let Some(hi) = max {
                out = binary(BinOp::Minimum, &t(&out), &Operand::S(hi))?;
            }
            out
        }
    };
    if needs_grad(&[x]) {
        record(
            "ClampBackward1",
            &[x],
            &[&out],
            vec![Saved::Input(x.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                let x = &ctx.saved[0];
                // g where lo <= x <= hi, else 0, in one pass
                let (lo, hi) = (
                    min.map_or(f64::NEG_INFINITY, |v| v.to_f64()),
                    max.map_or(f64::INFINITY, |v| v.to_f64()),
                );
                let (lo32, hi32) = (lo as f32, hi as f32);
                let composite = || clamp_grad_composite(&g, x, min, max);
                let gx = fused_grad(
                    &g,
                    x,
                    move |g: f32, x: f32| if x >= lo32 && x <= hi32 { g } else { 0.0 },
                    move |g: f64, x: f64| if x >= lo && x <= hi { g } else { 0.0 },
                    composite,
                )?;
                Ok(vec![Some(gx)])
            },
        );
    }
    Ok(out)
}

/// The gradient of clamp as differentiable ops: `g` times the mask `lo <= x <= hi`.
fn clamp_grad_composite(
    g: &Tensor,
    x: &Tensor,
    min: Option<Scalar>,
    max: Option<Scalar>,
) -> Result<Tensor> {
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
    mul(g, &mask.expect("one bound"))
}

/// clamp of a float tensor by number bounds in one pass (NaN stays NaN, as in PyTorch); None
/// for other dtypes, which take the maximum / minimum ops.
fn clamp_float(x: &Tensor, min: Option<Scalar>, max: Option<Scalar>) -> Result<Option<Tensor>> {
    let lo = min.map_or(f64::NEG_INFINITY, |v| v.to_f64());
    let hi = max.map_or(f64::INFINITY, |v| v.to_f64());
    // a NaN bound makes every element NaN, as PyTorch's clamp
    let nan = lo.is_nan() || hi.is_nan();
    let l = x.layout();
    Ok(Some(match x.dtype() {
        DType::F32 => {
            let (lo, hi) = (lo as f32, hi as f32);
            let d = x.storage().read::<f32>();
            Tensor::from_mapped(elementwise::map_unary(&d, l, false, move |v| {
                if nan {
                    f32::NAN
                } else {
                    clamp_one(v, lo, hi)
                }
            })?)
        }
        DType::F64 => {
            let d = x.storage().read::<f64>();
            Tensor::from_mapped(elementwise::map_unary(&d, l, false, move |v| {
                if nan {
                    f64::NAN
                } else {
                    clamp_one(v, lo, hi)
                }
            })?)
        }
        _ => return Ok(None),
    }))
}

/// One clamped value: max then min, as PyTorch (with lo > hi every value becomes hi); NaN
/// stays NaN.
#[inline(always)]
fn clamp_one<T: PartialOrd + Copy>(v: T, lo: T, hi: T) -> T {
    let a = if v < lo { lo } else { v };
    let c = if a > hi { hi } else { a };
    #[allow(clippy::eq_op)]
    let nan = v != v;
    if nan {
        v
    } else {
        c
    }
}

/// `leaky_relu` (LeakyReluBackward0): one pass over the input in its own dtype.
pub fn leaky_relu(x: &Tensor, slope: f64) -> Result<Tensor> {
    let xw = super::widen(x)?;
    let out =
        match xw.dtype() {
            DType::F32 => {
                let s = slope as f32;
                let d = xw.storage().read::<f32>();
                let v = elementwise::map_unary(&d, xw.layout(), false, |v: f32| {
                    if v > 0.0 {
                        v
                    } else {
                        v * s
                    }
                })?;
                Tensor::from_mapped(v)
            }
            DType::F64 => {
                let d = xw.storage().read::<f64>();
                let v = elementwise::map_unary(&d, xw.layout(), false, |v: f64| {
                    if v > 0.0 {
                        v
                    } else {
                        v * slope
                    }
                })?;
                Tensor::from_mapped(v)
            }
            dt => return Err(Error::dtype_not_implemented("leaky_relu_cpu", dt)),
        };
    let out = super::narrow_to(out, x.dtype())?;
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

/// In-place forms of the ops above that keep the dtype: one pass over the tensor's elements
/// for float32 and float64 (`same_dtype_inplace`).
pub fn neg_(x: &Tensor) -> Result<()> {
    same_dtype_inplace(x, |v| -v, neg)
}
pub fn abs_(x: &Tensor) -> Result<()> {
    same_dtype_inplace(x, f64::abs, abs)
}
pub fn sign_(x: &Tensor) -> Result<()> {
    same_dtype_inplace(x, sign_f, sign)
}
pub fn relu_(x: &Tensor) -> Result<()> {
    let f32f = |v: f32| relu_f(v as f64) as f32;
    inplace_saving_output(x, f32f, relu_f, relu, |x| relu_node(x, x))
}
pub fn floor_(x: &Tensor) -> Result<()> {
    same_dtype_inplace(x, f64::floor, floor)
}
pub fn ceil_(x: &Tensor) -> Result<()> {
    same_dtype_inplace(x, f64::ceil, ceil)
}
pub fn round_(x: &Tensor) -> Result<()> {
    same_dtype_inplace(x, round_half_even, round)
}
pub fn trunc_(x: &Tensor) -> Result<()> {
    same_dtype_inplace(x, f64::trunc, trunc)
}
pub fn fix_(x: &Tensor) -> Result<()> {
    trunc_(x)
}
pub fn frac_(x: &Tensor) -> Result<()> {
    same_dtype_inplace(x, |v| v - v.trunc(), frac)
}

/// In-place forms computed out of place and written back (`apply_inplace`).
macro_rules! inplace_by_copy {
    ($($inplace:ident => $op:path,)*) => {
        $(
            #[doc = concat!("`", stringify!($op), "` in place.")]
            pub fn $inplace(x: &Tensor) -> Result<()> {
                super::apply_inplace(x, &[], $op)
            }
        )*
    };
}
inplace_by_copy! {
    sgn_ => sgn,
    logical_not_ => logical_not,
    bitwise_not_ => bitwise_not,
    digamma_ => super::math::digamma,
}

/// The unary ops bound to Python, each a Tensor method and a `torch` function of that name, with
/// its in-place form (`x.exp_()`; `torch.exp_(x)` too where PyTorch has that function, marked
/// `fn`). The bindings in py/registry.rs and the op list `_core._ops()` are generated from this
/// list. An op here is its `pub fn name(&Tensor) -> Result<Tensor>` above: forward, saved
/// tensors, backward; its in-place form is `pub fn name_(&Tensor) -> Result<()>`.
#[macro_export]
macro_rules! for_each_unary_op {
    ($m:ident) => {
        $m! {
            exp => exp_ fn,
            log => log_ fn,
            log1p => log1p_ fn,
            sqrt => sqrt_ fn,
            rsqrt => rsqrt_ fn,
            sin => sin_ fn,
            cos => cos_ fn,
            tanh => tanh_ fn,
            sigmoid => sigmoid_ fn,
            relu => relu_ fn,
            abs => abs_ fn,
            sign => sign_,
            sgn => sgn_,
            neg => neg_ fn,
            erf => erf_ fn,
            reciprocal => reciprocal_ fn,
            floor => floor_ fn,
            ceil => ceil_ fn,
            round => round_ fn,
            trunc => trunc_ fn,
            fix => fix_ fn,
            frac => frac_ fn,
            logical_not => logical_not_,
            bitwise_not => bitwise_not_,
            tan => tan_ fn,
            atan => atan_ fn,
            asin => asin_ fn,
            acos => acos_ fn,
            sinh => sinh_ fn,
            cosh => cosh_ fn,
            asinh => asinh_ fn,
            acosh => acosh_ fn,
            atanh => atanh_ fn,
            log2 => log2_ fn,
            log10 => log10_ fn,
            exp2 => exp2_ fn,
            expm1 => expm1_ fn,
            erfc => erfc_ fn,
            sinc => sinc_ fn,
            erfinv => erfinv_,
            lgamma => lgamma_,
            digamma => digamma_,
            i0 => i0_ fn,
        }
    };
}

/// `torch.logit`: log(x / (1 - x)), x first clamped to [eps, 1 - eps] when `eps` is given and
/// not negative, in one pass as PyTorch's logit_kernel (bounds in the tensor's dtype: lo = eps,
/// hi = 1 - lo). LogitBackward0 (logit_backward): grad / (x (1 - x)); without eps NaN outside
/// [0, 1] and grad * inf at 0 and 1, with eps 0 outside [lo, hi] and at NaN.
pub fn logit(x: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    let eps = eps.filter(|&e| e >= 0.0);
    let (lo, lo32) = eps.map_or((f64::NEG_INFINITY, f32::NEG_INFINITY), |e| (e, e as f32));
    let (hi, hi32) = eps.map_or((f64::INFINITY, f32::INFINITY), |e| {
        (1.0 - e, 1.0 - e as f32)
    });
    let out = float_map(
        x,
        move |v: f32| logit_one(clamp_one(v, lo32, hi32)),
        move |v: f64| logit_one(clamp_one(v, lo, hi)),
    )?;
    if needs_grad(&[x]) {
        record(
            "LogitBackward0",
            &[x],
            &[&out],
            vec![Saved::Input(x.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                let x = &ctx.saved[0];
                let composite = || logit_grad_composite(&g, x, eps.map(|_| (lo, hi)));
                let gx = match eps {
                    None => fused_grad(
                        &g,
                        x,
                        logit_grad_free::<f32>,
                        logit_grad_free::<f64>,
                        composite,
                    )?,
                    Some(_) => fused_grad(
                        &g,
                        x,
                        move |g: f32, x: f32| {
                            if x >= lo32 && x <= hi32 {
                                g / (x * (1.0 - x))
                            } else {
                                0.0
                            }
                        },
                        move |g: f64, x: f64| {
                            if x >= lo && x <= hi {
                                g / (x * (1.0 - x))
                            } else {
                                0.0
                            }
                        },
                        composite,
                    )?,
                };
                Ok(vec![Some(gx)])
            },
        );
    }
    Ok(out)
}

#[inline(always)]
fn logit_one<R: simd::Real>(x: R) -> R {
    (x / (R::c(1.0) - x)).ln()
}

/// logit_backward without eps, element by element.
#[inline(always)]
fn logit_grad_free<R: simd::Real>(g: R, x: R) -> R {
    let (zero, one) = (R::c(0.0), R::c(1.0));
    if x < zero || x > one {
        R::NAN
    } else if x == zero || x == one {
        g * R::c(f64::INFINITY)
    } else {
        g / (x * (one - x))
    }
}

/// logit's gradient as differentiable ops: `g / (x (1 - x))`, then the cases of
/// `logit_grad_free` (no `bounds`) or 0 outside `bounds`.
fn logit_grad_composite(g: &Tensor, x: &Tensor, bounds: Option<(f64, f64)>) -> Result<Tensor> {
    let one_minus = binary(BinOp::Sub, &s(1.0), &t(x))?;
    let q = binary(BinOp::Div, &t(g), &t(&mul(x, &one_minus)?))?;
    let within = |lo: f64, hi: f64| -> Result<Tensor> {
        let ge = binary(BinOp::Ge, &t(x), &s(lo))?;
        let le = binary(BinOp::Le, &t(x), &s(hi))?;
        binary(BinOp::LogicalAnd, &t(&ge), &t(&le))
    };
    match bounds {
        // a NaN x is not within: 0 there, as PyTorch
        Some((lo, hi)) => super::binary::where_op(&within(lo, hi)?, &t(&q), &s(0.0)),
        None => {
            // at 0 and 1, q is already g / 0 = g * inf (a graph through `g * inf` would give
            // 0 * inf = NaN second derivatives)
            // NaN outside [0, 1] (a NaN x gives NaN through q)
            let below = binary(BinOp::Lt, &t(x), &s(0.0))?;
            let above = binary(BinOp::Gt, &t(x), &s(1.0))?;
            let outside = binary(BinOp::LogicalOr, &t(&below), &t(&above))?;
            super::binary::where_op(&outside, &s(f64::NAN), &t(&q))
        }
    }
}
