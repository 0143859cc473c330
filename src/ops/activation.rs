//! The pointwise activations of `torch.nn.functional` beyond relu / gelu / silu / leaky_relu:
//! elu (selu, celu), softplus, hardtanh (relu6), hardswish, hardsigmoid, mish, logsigmoid,
//! hardshrink, softshrink, threshold, rrelu, prelu and glu.
//!
//! Each op is one vectorisable pass forward (f32 through the vector exp / log1p / tanh of
//! `kernels::simd`, f64 through std; float16 / bfloat16 computed in f32 and rounded back) and
//! one fused pass backward (the incoming gradient and the saved input to the input's gradient),
//! as PyTorch's `*_backward` kernels. That fused backward is itself an op: when its result must
//! be differentiable (create_graph) it records `<Name>BackwardBackward0`, whose own backward is
//! written in differentiable ops (the same fused op for the incoming gradient, `gg * g * f''(x)`
//! for the input), so every derivative order works, as PyTorch's `EluBackwardBackward0` does.

use super::binary::{binary, mul, mul_scalar, where_op, BinOp, Operand};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::kernels::parallel::build_with;
use crate::kernels::simd::{self, Real};
use crate::kernels::{PAR_THRESHOLD, PAR_THRESHOLD_COSTLY};
use crate::layout::Layout;
use crate::tensor::Tensor;
use std::mem::MaybeUninit;

/// The float math the activations need beyond `Real`: log1p and expm1 (vectorisable for f32).
pub trait Ext: Real {
    fn ln1p(self) -> Self;
    fn expm1(self) -> Self;
}

impl Ext for f32 {
    #[inline(always)]
    fn ln1p(self) -> f32 {
        simd::log1p_f32(self)
    }
    /// Taylor to x^8 for |x| < 0.5 (error below 6e-9), exp(x) - 1 elsewhere: one exp and a
    /// few FMAs (`simd::expm1_f32` also takes a log and a division).
    #[inline(always)]
    #[allow(clippy::excessive_precision)]
    fn expm1(self) -> f32 {
        let x = self;
        let p = x
            * (1.0
                + x * (0.5
                    + x * (1.0 / 6.0
                        + x * (1.0 / 24.0
                            + x * (1.0 / 120.0
                                + x * (1.0 / 720.0 + x * (1.0 / 5040.0 + x * (1.0 / 40320.0))))))));
        let e = simd::exp_f32(x) - 1.0;
        if x.abs() < 0.5 {
            p
        } else {
            e
        }
    }
}

impl Ext for f64 {
    #[inline(always)]
    fn ln1p(self) -> f64 {
        f64::ln_1p(self)
    }
    #[inline(always)]
    fn expm1(self) -> f64 {
        f64::exp_m1(self)
    }
}

/// An activation and its hyper-parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Act {
    /// `x > 0 ? scale x : scale alpha (exp(input_scale x) - 1)`: elu, selu, celu.
    Elu {
        alpha: f64,
        scale: f64,
        input_scale: f64,
        celu: bool,
    },
    Softplus {
        beta: f64,
        threshold: f64,
    },
    Hardtanh {
        lo: f64,
        hi: f64,
    },
    Hardswish,
    Hardsigmoid,
    Mish,
    LogSigmoid,
    Hardshrink {
        lambd: f64,
    },
    Softshrink {
        lambd: f64,
    },
    Threshold {
        threshold: f64,
        value: f64,
    },
    /// rrelu outside training: a leaky relu of slope (lower + upper) / 2.
    Rrelu {
        slope: f64,
    },
}

impl Act {
    /// The node of the op, PyTorch's name (the `...Backward1` of the in-place forms that
    /// PyTorch records from the result).
    fn node(self, inplace: bool) -> &'static str {
        match (self, inplace) {
            (Act::Elu { celu: false, .. }, false) => "EluBackward0",
            (Act::Elu { celu: false, .. }, true) => "EluBackward1",
            (Act::Elu { celu: true, .. }, false) => "CeluBackward0",
            (Act::Elu { celu: true, .. }, true) => "CeluBackward1",
            (Act::Softplus { .. }, _) => "SoftplusBackward0",
            (Act::Hardtanh { .. }, _) => "HardtanhBackward0",
            (Act::Hardswish, _) => "HardswishBackward0",
            (Act::Hardsigmoid, _) => "HardsigmoidBackward0",
            (Act::Mish, _) => "MishBackward0",
            (Act::LogSigmoid, _) => "LogSigmoidBackward0",
            (Act::Hardshrink { .. }, _) => "HardshrinkBackward0",
            (Act::Softshrink { .. }, _) => "SoftshrinkBackward0",
            (Act::Threshold { .. }, false) => "ThresholdBackward0",
            (Act::Threshold { .. }, true) => "ThresholdBackward1",
            (Act::Rrelu { .. }, false) => "RreluWithNoiseBackward0",
            (Act::Rrelu { .. }, true) => "RreluWithNoiseBackward1",
        }
    }

    /// The node of the fused backward op.
    fn backward_node(self) -> &'static str {
        match self {
            Act::Elu { .. } => "EluBackwardBackward0",
            Act::Softplus { .. } => "SoftplusBackwardBackward0",
            Act::Hardtanh { .. } => "HardtanhBackwardBackward0",
            Act::Hardswish => "HardswishBackwardBackward0",
            Act::Hardsigmoid => "HardsigmoidBackwardBackward0",
            Act::Mish => "MishBackwardBackward0",
            Act::LogSigmoid => "LogSigmoidBackwardBackward0",
            Act::Hardshrink { .. } => "HardshrinkBackwardBackward0",
            Act::Softshrink { .. } => "SoftshrinkBackwardBackward0",
            Act::Threshold { .. } => "ThresholdBackwardBackward0",
            Act::Rrelu { .. } => "RreluWithNoiseBackwardBackward0",
        }
    }

    /// PyTorch's kernel name in its "not implemented for 'Long'" error.
    fn kernel(self) -> &'static str {
        match self {
            Act::Elu { .. } => "elu_cpu",
            Act::Softplus { .. } => "softplus_cpu",
            Act::Hardtanh { .. } => "hardtanh_cpu",
            Act::Hardswish => "hardswish_cpu",
            Act::Hardsigmoid => "hardsigmoid_cpu",
            Act::Mish => "mish_cpu",
            Act::LogSigmoid => "log_sigmoid_cpu",
            Act::Hardshrink { .. } => "hardshrink_cpu",
            Act::Softshrink { .. } => "softshrink_check",
            Act::Threshold { .. } => "threshold_cpu",
            Act::Rrelu { .. } => "leaky_relu_cpu",
        }
    }
}

/// One activation as a pair of scalar kernels: the value and the fused gradient.
trait Kernel: Copy + Send + Sync {
    fn f<R: Ext>(self, x: R) -> R;
    /// The gradient of the input from the incoming gradient `g` and the input `x`.
    fn d<R: Ext>(self, g: R, x: R) -> R;
}

#[derive(Clone, Copy)]
struct EluK {
    alpha: f64,
    scale: f64,
    input_scale: f64,
}
impl Kernel for EluK {
    #[inline(always)]
    fn f<R: Ext>(self, x: R) -> R {
        if x > R::c(0.0) {
            x * R::c(self.scale)
        } else {
            (x * R::c(self.input_scale)).expm1() * R::c(self.alpha * self.scale)
        }
    }
    #[inline(always)]
    fn d<R: Ext>(self, g: R, x: R) -> R {
        if x > R::c(0.0) {
            g * R::c(self.scale)
        } else {
            g * R::c(self.input_scale * self.alpha * self.scale)
                * (x * R::c(self.input_scale)).exp()
        }
    }
}

#[derive(Clone, Copy)]
struct SoftplusK {
    beta: f64,
    threshold: f64,
}
impl Kernel for SoftplusK {
    #[inline(always)]
    fn f<R: Ext>(self, x: R) -> R {
        let xb = x * R::c(self.beta);
        if xb > R::c(self.threshold) {
            x
        } else {
            xb.exp().ln1p() / R::c(self.beta)
        }
    }
    #[inline(always)]
    fn d<R: Ext>(self, g: R, x: R) -> R {
        let xb = x * R::c(self.beta);
        let z = xb.exp();
        if xb > R::c(self.threshold) {
            g
        } else {
            g * z / (z + R::c(1.0))
        }
    }
}

#[derive(Clone, Copy)]
struct HardtanhK {
    lo: f64,
    hi: f64,
}
impl Kernel for HardtanhK {
    #[inline(always)]
    fn f<R: Ext>(self, x: R) -> R {
        // NaN stays NaN, as clamp
        if x < R::c(self.lo) {
            R::c(self.lo)
        } else if x > R::c(self.hi) {
            R::c(self.hi)
        } else {
            x
        }
    }
    #[inline(always)]
    fn d<R: Ext>(self, g: R, x: R) -> R {
        if x <= R::c(self.lo) || x >= R::c(self.hi) {
            R::c(0.0)
        } else {
            g
        }
    }
}

/// `min(max(v, 0), 6)` keeping NaN.
#[inline(always)]
fn clip06<R: Ext>(v: R) -> R {
    let a = if v < R::c(0.0) { R::c(0.0) } else { v };
    if a > R::c(6.0) {
        R::c(6.0)
    } else {
        a
    }
}

#[derive(Clone, Copy)]
struct HardswishK;
impl Kernel for HardswishK {
    #[inline(always)]
    fn f<R: Ext>(self, x: R) -> R {
        x * clip06(x + R::c(3.0)) / R::c(6.0)
    }
    #[inline(always)]
    fn d<R: Ext>(self, g: R, x: R) -> R {
        if x <= R::c(-3.0) {
            R::c(0.0)
        } else if x < R::c(3.0) {
            g * (x / R::c(3.0) + R::c(0.5))
        } else {
            g
        }
    }
}

#[derive(Clone, Copy)]
struct HardsigmoidK;
impl Kernel for HardsigmoidK {
    #[inline(always)]
    fn f<R: Ext>(self, x: R) -> R {
        clip06(x + R::c(3.0)) / R::c(6.0)
    }
    #[inline(always)]
    fn d<R: Ext>(self, g: R, x: R) -> R {
        // PyTorch multiplies by 1/6 rounded to f32, also for f64
        if x > R::c(-3.0) && x < R::c(3.0) {
            g * R::c(f64::from(1.0f32 / 6.0))
        } else {
            R::c(0.0)
        }
    }
}

#[derive(Clone, Copy)]
struct MishK;
impl Kernel for MishK {
    #[inline(always)]
    fn f<R: Ext>(self, x: R) -> R {
        x * x.exp().ln1p().tanh()
    }
    #[inline(always)]
    fn d<R: Ext>(self, g: R, x: R) -> R {
        let s = x.sigmoid();
        let t = x.exp().ln1p().tanh();
        g * (t + x * s * (R::c(1.0) - t * t))
    }
}

#[derive(Clone, Copy)]
struct LogSigmoidK;
impl Kernel for LogSigmoidK {
    #[inline(always)]
    fn f<R: Ext>(self, x: R) -> R {
        let m = if x < R::c(0.0) { x } else { R::c(0.0) };
        let ax = if x < R::c(0.0) { -x } else { x };
        m - (-ax).exp().ln1p()
    }
    #[inline(always)]
    fn d<R: Ext>(self, g: R, x: R) -> R {
        g / (R::c(1.0) + x.exp())
    }
}

#[derive(Clone, Copy)]
struct HardshrinkK {
    lambd: f64,
}
impl Kernel for HardshrinkK {
    #[inline(always)]
    fn f<R: Ext>(self, x: R) -> R {
        if x >= R::c(-self.lambd) && x <= R::c(self.lambd) {
            R::c(0.0)
        } else {
            x
        }
    }
    #[inline(always)]
    fn d<R: Ext>(self, g: R, x: R) -> R {
        if x >= R::c(-self.lambd) && x <= R::c(self.lambd) {
            R::c(0.0)
        } else {
            g
        }
    }
}

#[derive(Clone, Copy)]
struct SoftshrinkK {
    lambd: f64,
}
impl Kernel for SoftshrinkK {
    #[inline(always)]
    fn f<R: Ext>(self, x: R) -> R {
        if x > R::c(self.lambd) {
            x - R::c(self.lambd)
        } else if x < R::c(-self.lambd) {
            x + R::c(self.lambd)
        } else {
            x * R::c(0.0)
        }
    }
    #[inline(always)]
    fn d<R: Ext>(self, g: R, x: R) -> R {
        if x >= R::c(-self.lambd) && x <= R::c(self.lambd) {
            R::c(0.0)
        } else {
            g
        }
    }
}

#[derive(Clone, Copy)]
struct ThresholdK {
    threshold: f64,
    value: f64,
}
impl Kernel for ThresholdK {
    #[inline(always)]
    fn f<R: Ext>(self, x: R) -> R {
        if x <= R::c(self.threshold) {
            R::c(self.value)
        } else {
            x
        }
    }
    #[inline(always)]
    fn d<R: Ext>(self, g: R, x: R) -> R {
        if x <= R::c(self.threshold) {
            R::c(0.0)
        } else {
            g
        }
    }
}

#[derive(Clone, Copy)]
struct LeakyK {
    slope: f64,
}
impl Kernel for LeakyK {
    #[inline(always)]
    fn f<R: Ext>(self, x: R) -> R {
        if x > R::c(0.0) {
            x
        } else {
            x * R::c(self.slope)
        }
    }
    #[inline(always)]
    fn d<R: Ext>(self, g: R, x: R) -> R {
        if x > R::c(0.0) {
            g
        } else {
            g * R::c(self.slope)
        }
    }
}

/// Calls `$body` with `$k` bound to the kernel of `$act`, monomorphised per activation.
macro_rules! with_kernel {
    ($act:expr, $k:ident => $body:expr) => {
        match $act {
            Act::Elu {
                alpha,
                scale,
                input_scale,
                ..
            } => {
                let $k = EluK {
                    alpha,
                    scale,
                    input_scale,
                };
                $body
            }
            Act::Softplus { beta, threshold } => {
                let $k = SoftplusK { beta, threshold };
                $body
            }
            Act::Hardtanh { lo, hi } => {
                let $k = HardtanhK { lo, hi };
                $body
            }
            Act::Hardswish => {
                let $k = HardswishK;
                $body
            }
            Act::Hardsigmoid => {
                let $k = HardsigmoidK;
                $body
            }
            Act::Mish => {
                let $k = MishK;
                $body
            }
            Act::LogSigmoid => {
                let $k = LogSigmoidK;
                $body
            }
            Act::Hardshrink { lambd } => {
                let $k = HardshrinkK { lambd };
                $body
            }
            Act::Softshrink { lambd } => {
                let $k = SoftshrinkK { lambd };
                $body
            }
            Act::Threshold { threshold, value } => {
                let $k = ThresholdK { threshold, value };
                $body
            }
            Act::Rrelu { slope } => {
                let $k = LeakyK { slope };
                $body
            }
        }
    };
}

/// Whether the kernel calls exp / log (a costlier element: a lower parallel threshold).
fn costly(act: Act) -> bool {
    matches!(
        act,
        Act::Elu { .. } | Act::Softplus { .. } | Act::Mish | Act::LogSigmoid
    )
}

/// `dst[i] = k.f(src[i])` (one of `F` = false) or `dst[i] = k.d(src[i], src2[i])`, in a loop
/// compiled for the CPU's best instruction set. The kernels are `#[inline(always)]` down to the
/// vector exp / log, so the whole formula is inlined into (and vectorised in) these loops; the
/// elementwise maps take closures, which LLVM does not inline once they are that large.
#[inline(always)]
fn dense_body<K: Kernel, R: Ext>(k: K, a: &[R], b: &[R], dst: &mut [MaybeUninit<R>]) -> usize {
    if b.is_empty() {
        for (d, &x) in dst.iter_mut().zip(a) {
            d.write(k.f(x));
        }
    } else {
        for ((d, &g), &x) in dst.iter_mut().zip(a).zip(b) {
            d.write(k.d(g, x));
        }
    }
    dst.len()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn dense_avx2<K: Kernel, R: Ext>(k: K, a: &[R], b: &[R], dst: &mut [MaybeUninit<R>]) -> usize {
    dense_body(k, a, b, dst)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
fn dense_avx512<K: Kernel, R: Ext>(k: K, a: &[R], b: &[R], dst: &mut [MaybeUninit<R>]) -> usize {
    dense_body(k, a, b, dst)
}

fn dense_run<K: Kernel, R: Ext>(k: K, a: &[R], b: &[R], dst: &mut [MaybeUninit<R>]) -> usize {
    #[cfg(target_arch = "x86_64")]
    match simd::x86::level() {
        // SAFETY: level() returned Avx512 only after is_x86_feature_detected! confirmed
        // avx512f, avx512dq, avx2 and fma, the features the function enables.
        simd::x86::Level::Avx512 => return unsafe { dense_avx512(k, a, b, dst) },
        // SAFETY: level() returned Avx2 only after detecting avx2 and fma.
        simd::x86::Level::Avx2 => return unsafe { dense_avx2(k, a, b, dst) },
        simd::x86::Level::Base => {}
    }
    dense_body(k, a, b, dst)
}

/// The kernel over the storage block of dense inputs of one layout (contiguous or a dense
/// permutation such as a transpose): the output keeps that layout, as PyTorch's does. `b` is
/// empty for the forward.
fn dense_map<K: Kernel, R: Ext + crate::storage::Elem>(
    k: K,
    a: &[R],
    b: &[R],
    layout: &Layout,
    costly: bool,
) -> Result<Tensor> {
    let n = layout.numel();
    let (a, b) = (
        &a[layout.offset..layout.offset + n],
        if b.is_empty() {
            b
        } else {
            &b[layout.offset..layout.offset + n]
        },
    );
    let threshold = if costly {
        PAR_THRESHOLD_COSTLY
    } else {
        PAR_THRESHOLD
    };
    let data = build_with(n, threshold, |start, chunk: &mut [MaybeUninit<R>]| {
        let end = start + chunk.len();
        let bb = if b.is_empty() { b } else { &b[start..end] };
        dense_run(k, &a[start..end], bb, chunk)
    })?;
    Ok(Tensor::from_mapped(elementwise::Mapped {
        data,
        layout: Layout {
            shape: layout.shape.clone(),
            strides: layout.strides.clone(),
            offset: 0,
        },
    }))
}

fn forward_kernel<K: Kernel>(k: K, x: &Tensor, costly: bool) -> Result<Tensor> {
    let xw = super::widen(x)?;
    let l = xw.layout();
    let dense = l.is_non_overlapping_and_dense();
    let out = match xw.dtype() {
        DType::F32 => {
            let d = xw.storage().read::<f32>();
            if dense {
                dense_map(k, &d, &[], l, costly)?
            } else {
                Tensor::from_mapped(elementwise::map_unary(&d, l, costly, move |v: f32| k.f(v))?)
            }
        }
        _ => {
            let d = xw.storage().read::<f64>();
            if dense {
                dense_map(k, &d, &[], l, costly)?
            } else {
                Tensor::from_mapped(elementwise::map_unary(&d, l, costly, move |v: f64| k.f(v))?)
            }
        }
    };
    super::narrow_to(out, x.dtype())
}

fn backward_kernel<K: Kernel>(k: K, g: &Tensor, x: &Tensor, costly: bool) -> Result<Tensor> {
    let gw = super::widen(g)?;
    let xw = super::cast(x, gw.dtype())?;
    let shape = crate::layout::broadcast_shapes(gw.shape(), xw.shape())?;
    let (lg, lx) = (
        gw.layout().broadcast_to(&shape)?,
        xw.layout().broadcast_to(&shape)?,
    );
    let dense = gw.shape() == xw.shape()
        && gw.layout().strides == xw.layout().strides
        && gw.layout().offset == xw.layout().offset
        && gw.layout().is_non_overlapping_and_dense();
    let out = match gw.dtype() {
        DType::F32 if dense => {
            let (a, b) = (gw.storage().read::<f32>(), xw.storage().read::<f32>());
            dense_map(k, &a, &b, gw.layout(), costly)?
        }
        DType::F64 if dense => {
            let (a, b) = (gw.storage().read::<f64>(), xw.storage().read::<f64>());
            dense_map(k, &a, &b, gw.layout(), costly)?
        }
        DType::F32 => {
            let (a, b) = (gw.storage().read::<f32>(), xw.storage().read::<f32>());
            Tensor::from_mapped(elementwise::map_binary(
                &a,
                &lg,
                &b,
                &lx,
                costly,
                move |g: f32, x: f32| k.d(g, x),
            )?)
        }
        DType::F64 => {
            let (a, b) = (gw.storage().read::<f64>(), xw.storage().read::<f64>());
            Tensor::from_mapped(elementwise::map_binary(
                &a,
                &lg,
                &b,
                &lx,
                costly,
                move |g: f64, x: f64| k.d(g, x),
            )?)
        }
        dt => return Err(Error::dtype_not_implemented("activation_backward", dt)),
    };
    super::narrow_to(out, g.dtype())
}

/// The activation `act` of `x` (`inplace`: the node name of the in-place form, for
/// `apply_inplace`).
pub fn activation(act: Act, x: &Tensor, inplace: bool) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return match act {
            // PyTorch's hardtanh (relu6) and threshold keep integer dtypes
            Act::Hardtanh { lo, hi } => super::cast(
                &super::clamp(x, Some(Scalar::Float(lo)), Some(Scalar::Float(hi)))?,
                x.dtype(),
            ),
            Act::Threshold { threshold, value } => {
                let keep = binary(BinOp::Gt, &x.into(), &Operand::S(Scalar::Float(threshold)))?;
                let v = Tensor::scalar(Scalar::Float(value), x.dtype());
                where_op(&keep, &x.into(), &Operand::T(v))
            }
            _ => Err(Error::dtype_not_implemented(act.kernel(), x.dtype())),
        };
    }
    let c = costly(act);
    let out = with_kernel!(act, k => forward_kernel(k, x, c))?;
    if needs_grad(&[x]) {
        record(
            act.node(inplace),
            &[x],
            &[&out],
            vec![Saved::Input(x.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                Ok(vec![Some(activation_backward(act, &g, &ctx.saved[0])?)])
            },
        );
    }
    Ok(out)
}

/// The gradient of `act` at `x` for the incoming gradient `g`, in one pass; differentiable in
/// `g` and `x` (`<Name>BackwardBackward0`).
pub fn activation_backward(act: Act, g: &Tensor, x: &Tensor) -> Result<Tensor> {
    let c = costly(act);
    let out = with_kernel!(act, k => backward_kernel(k, g, x, c))?;
    if needs_grad(&[g, x]) {
        record(
            act.backward_node(),
            &[g, x],
            &[&out],
            vec![Saved::Input(g.clone()), Saved::Input(x.clone())],
            move |ctx| {
                let gg = ctx.grad(0)?;
                let (g, x) = (&ctx.saved[0], &ctx.saved[1]);
                // linear in g: the same fused op of the incoming gradient
                let dg = if ctx.needs(0) {
                    Some(activation_backward(act, &gg, x)?)
                } else {
                    None
                };
                let dx = if ctx.needs(1) {
                    Some(mul(&mul(&gg, g)?, &second_derivative(act, x)?)?)
                } else {
                    None
                };
                Ok(vec![dg, dx])
            },
        );
    }
    Ok(out)
}

fn f(v: f64) -> Operand {
    Operand::S(Scalar::Float(v))
}

/// `1.0` where `cond`, else `0.0`, in `x`'s dtype (a constant).
fn indicator(cond: &Tensor, x: &Tensor) -> Result<Tensor> {
    super::cast(cond, x.dtype())
}

/// f''(x) of the activation, in differentiable ops of `x`.
fn second_derivative(act: Act, x: &Tensor) -> Result<Tensor> {
    let cmp = |op: BinOp, v: f64| binary(op, &x.into(), &f(v));
    let zeros = || Tensor::zeros(x.shape(), x.dtype());
    match act {
        Act::Elu {
            alpha,
            scale,
            input_scale,
            ..
        } => {
            // x <= 0: alpha scale input_scale^2 exp(input_scale x)
            let e = super::exp(&mul_scalar(x, input_scale)?)?;
            let neg = cmp(BinOp::Le, 0.0)?;
            where_op(
                &neg,
                &Operand::T(mul_scalar(&e, alpha * scale * input_scale * input_scale)?),
                &f(0.0),
            )
        }
        Act::Softplus { beta, threshold } => {
            // beta s (1 - s), s = sigmoid(beta x), below the threshold
            let s = super::sigmoid(&mul_scalar(x, beta)?)?;
            let d = mul_scalar(&mul(&s, &binary(BinOp::Sub, &f(1.0), &(&s).into())?)?, beta)?;
            let below = binary(BinOp::Le, &Operand::T(mul_scalar(x, beta)?), &f(threshold))?;
            mul(&d, &indicator(&below, x)?)
        }
        Act::Hardswish => {
            let inside = binary(
                BinOp::LogicalAnd,
                &Operand::T(cmp(BinOp::Gt, -3.0)?),
                &Operand::T(cmp(BinOp::Lt, 3.0)?),
            )?;
            mul_scalar(&indicator(&inside, x)?, 1.0 / 3.0)
        }
        Act::Mish => {
            // (1 - t^2) s (2 - 2 x t s + x (1 - s)), t = tanh(softplus(x)), s = sigmoid(x)
            let sp = activation(
                Act::Softplus {
                    beta: 1.0,
                    threshold: 20.0,
                },
                x,
                false,
            )?;
            let t = super::tanh(&sp)?;
            let s = super::sigmoid(x)?;
            let sech2 = binary(BinOp::Sub, &f(1.0), &(&mul(&t, &t)?).into())?;
            let one_minus_s = binary(BinOp::Sub, &f(1.0), &(&s).into())?;
            let xts = mul(&mul(x, &t)?, &s)?;
            let inner = binary(
                BinOp::Add,
                &Operand::T(binary(
                    BinOp::Sub,
                    &f(2.0),
                    &Operand::T(mul_scalar(&xts, 2.0)?),
                )?),
                &(&mul(x, &one_minus_s)?).into(),
            )?;
            mul(&mul(&sech2, &s)?, &inner)
        }
        Act::LogSigmoid => {
            // -s (1 - s), s = sigmoid(x)
            let s = super::sigmoid(x)?;
            let one_minus_s = binary(BinOp::Sub, &f(1.0), &(&s).into())?;
            super::neg(&mul(&s, &one_minus_s)?)
        }
        // piecewise linear
        Act::Hardtanh { .. }
        | Act::Hardsigmoid
        | Act::Hardshrink { .. }
        | Act::Softshrink { .. }
        | Act::Threshold { .. }
        | Act::Rrelu { .. } => zeros(),
    }
}

/// rrelu in training: `x * noise`, the noise holding 1 where `x > 0` and the drawn slopes
/// elsewhere (RreluWithNoiseBackward0: the gradient is `g * noise`).
pub fn rrelu_with_noise(x: &Tensor, noise: &Tensor, inplace: bool) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(Error::dtype_not_implemented("leaky_relu_cpu", x.dtype()));
    }
    let out = mul(&x.detach(), noise)?;
    if needs_grad(&[x]) {
        record(
            if inplace {
                "RreluWithNoiseBackward1"
            } else {
                "RreluWithNoiseBackward0"
            },
            &[x],
            &[&out],
            vec![Saved::Input(noise.detach())],
            |ctx| Ok(vec![Some(mul(&ctx.grad(0)?, &ctx.saved[0])?)]),
        );
    }
    Ok(out)
}

/// `_prelu_kernel(x, w)`: `x > 0 ? x : w x`, `w` broadcast against `x` (PreluKernelBackward0).
pub fn prelu_kernel(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    if x.dtype() != w.dtype() {
        return Err(Error::Runtime(format!(
            "prelu: Type promoting not supported. Got {} and {}",
            x.dtype().kernel_name(),
            w.dtype().kernel_name()
        )));
    }
    if !x.dtype().is_float() {
        return Err(Error::dtype_not_implemented("prelu_cpu", x.dtype()));
    }
    let shape = crate::layout::broadcast_shapes(x.shape(), w.shape())?;
    let (xw, ww) = (super::widen(x)?, super::widen(w)?);
    let (lx, lw) = (
        xw.layout().broadcast_to(&shape)?,
        ww.layout().broadcast_to(&shape)?,
    );
    let out = dispatch_float!(xw.dtype(), T => {
        let (a, b) = (xw.storage().read::<T>(), ww.storage().read::<T>());
        let zero = <T as crate::storage::Elem>::from_f64(0.0);
        Tensor::from_mapped(elementwise::map_binary(&a, &lx, &b, &lw, false, move |x: T, w: T| if x > zero { x } else { w * x })?)
    });
    let out = super::narrow_to(out, x.dtype())?;
    if needs_grad(&[x, w]) {
        record(
            "PreluKernelBackward0",
            &[x, w],
            &[&out],
            vec![Saved::Input(x.clone()), Saved::Input(w.clone())],
            |ctx| {
                let g = ctx.grad(0)?;
                let (x, w) = (&ctx.saved[0], &ctx.saved[1]);
                let (gx, gw) = prelu_backward(&g, x, w, ctx.needs(0), ctx.needs(1))?;
                Ok(vec![gx, gw])
            },
        );
    }
    Ok(out)
}

/// The gradients of `_prelu_kernel`: `x > 0 ? g : w g` for x and `x > 0 ? 0 : x g` summed to
/// w's shape, both from one pass over (g, x, w) when no graph is needed.
fn prelu_backward(
    g: &Tensor,
    x: &Tensor,
    w: &Tensor,
    need_x: bool,
    need_w: bool,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let fused = !needs_grad(&[g, x, w])
        && g.dtype() == x.dtype()
        && g.shape() == x.shape()
        && matches!(g.dtype(), DType::F32 | DType::F64);
    if !fused {
        let pos = binary(BinOp::Gt, &x.into(), &f(0.0))?;
        let gx = if need_x {
            Some(where_op(&pos, &g.into(), &Operand::T(mul(g, w)?))?)
        } else {
            None
        };
        let gw = if need_w {
            let full = where_op(&pos, &f(0.0), &Operand::T(mul(g, x)?))?;
            Some(super::sum_to(&full, w.shape())?)
        } else {
            None
        };
        return Ok((gx, gw));
    }
    let shape = x.shape().to_vec();
    let lw = w.layout().broadcast_to(&shape)?;
    let (lg, lx) = (g.layout(), x.layout());
    let (gx, gw_full) = dispatch_float!(g.dtype(), T => {
        let (gd, xd, wd) = (g.storage().read::<T>(), x.storage().read::<T>(), w.storage().read::<T>());
        let zero = <T as crate::storage::Elem>::from_f64(0.0);
        let gx = if need_x {
            Some(Tensor::from_mapped(elementwise::map_ternary(&gd, lg, &xd, lx, &wd, &lw, move |g: T, x: T, w: T| if x > zero { g } else { w * g })?))
        } else { None };
        let gw = if need_w {
            Some(Tensor::from_mapped(elementwise::map_binary(&gd, lg, &xd, lx, false, move |g: T, x: T| if x > zero { zero } else { x * g })?))
        } else { None };
        (gx, gw)
    });
    let gw = gw_full.map(|t| super::sum_to(&t, w.shape())).transpose()?;
    Ok((gx, gw))
}

/// `glu(x, dim)`: `a * sigmoid(b)` of the two halves of `x` along `dim` (GluBackward0).
pub fn glu(x: &Tensor, dim: i64) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(Error::dtype_not_implemented("glu_cpu", x.dtype()));
    }
    if x.ndim() == 0 {
        return Err(Error::Runtime(
            "glu does not support scalars because halving size must be even".into(),
        ));
    }
    let d = crate::layout::wrap_dim(dim, x.ndim())?;
    let n = x.shape()[d];
    if !n.is_multiple_of(2) {
        return Err(Error::Runtime(format!(
            "Halving dimension must be even, but dimension {d} is size {n}"
        )));
    }
    let h = (n / 2) as i64;
    let (a, b) = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let xw = super::widen(x)?;
        (
            super::narrow(&xw, d as i64, 0, h)?,
            super::narrow(&xw, d as i64, h, h)?,
        )
    };
    let out = dispatch_float!(a.dtype(), T => {
        let (ad, bd) = (a.storage().read::<T>(), b.storage().read::<T>());
        Tensor::from_mapped(elementwise::map_binary(&ad, a.layout(), &bd, b.layout(), true, |a: T, b: T| a * Real::sigmoid(b))?)
    });
    let out = super::narrow_to(out, x.dtype())?;
    if needs_grad(&[x]) {
        record(
            "GluBackward0",
            &[x],
            &[&out],
            vec![Saved::Input(x.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                Ok(vec![Some(glu_backward(&g, &ctx.saved[0], d, h)?)])
            },
        );
    }
    Ok(out)
}

/// The gradient of glu: `[g s, g a s (1 - s)]` along `dim`, s = sigmoid(b).
fn glu_backward(g: &Tensor, x: &Tensor, d: usize, h: i64) -> Result<Tensor> {
    let a = super::narrow(x, d as i64, 0, h)?;
    let b = super::narrow(x, d as i64, h, h)?;
    let fused = !needs_grad(&[g, x])
        && g.dtype() == x.dtype()
        && matches!(g.dtype(), DType::F32 | DType::F64);
    if !fused {
        let s = super::sigmoid(&b)?;
        let ga = mul(g, &s)?;
        let one_minus = binary(BinOp::Sub, &f(1.0), &(&s).into())?;
        let gb = mul(&mul(&ga, &a)?, &one_minus)?;
        return super::cat(&[ga, gb], d as i64);
    }
    let (ga, gb) = dispatch_float!(g.dtype(), T => {
        let (gd, ad, bd) = (g.storage().read::<T>(), a.storage().read::<T>(), b.storage().read::<T>());
        let one = <T as crate::storage::Elem>::from_f64(1.0);
        let ga = Tensor::from_mapped(elementwise::map_binary(&gd, g.layout(), &bd, b.layout(), true, |g: T, b: T| g * Real::sigmoid(b))?);
        let gb = Tensor::from_mapped(elementwise::map_ternary(&gd, g.layout(), &ad, a.layout(), &bd, b.layout(), move |g: T, a: T, b: T| {
            let s = Real::sigmoid(b);
            g * a * s * (one - s)
        })?);
        (ga, gb)
    });
    super::cat(&[ga, gb], d as i64)
}
