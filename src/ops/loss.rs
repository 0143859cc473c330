//! Loss functions with PyTorch's fused nodes (MseLossBackward0, NllLossBackward0, ...): the
//! forward runs on detached values; each backward is written with differentiable ops, so
//! higher-order gradients work.

use super::binary::{binary, mul, mul_scalar, sub, where_op, BinOp, Operand};
use super::reduce::{mean, sum};
use super::shape::{broadcast_to, expand, squeeze, sum_to, unsqueeze};
use super::unary::{abs, clamp, exp, log, log1p, neg, sigmoid, sign};
use super::{cast_vec, index::gather, index::scatter_add, to_dtype};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::loss as kl;
use crate::layout::{broadcast_shapes, fmt_list};
use crate::tensor::Tensor;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Reduction {
    None,
    Mean,
    Sum,
}

impl Reduction {
    pub fn parse(s: &str) -> Result<Reduction> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            _ => Err(Error::Value(format!(
                "{s} is not a valid value for reduction"
            ))),
        }
    }
}

fn t(x: &Tensor) -> Operand {
    Operand::T(x.clone())
}
fn s(v: f64) -> Operand {
    Operand::S(Scalar::Float(v))
}

fn reduce(l: &Tensor, r: Reduction) -> Result<Tensor> {
    match r {
        Reduction::None => Ok(l.clone()),
        Reduction::Sum => sum(l),
        Reduction::Mean => mean(l, None, false, None),
    }
}

/// The gradient of the reduced loss with respect to each element of a loss of `shape`.
fn grad_elems(g: &Tensor, r: Reduction, shape: &[usize]) -> Result<Tensor> {
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    match r {
        Reduction::None => Ok(g.clone()),
        Reduction::Sum => expand(g, &dims),
        Reduction::Mean => {
            let n = shape.iter().product::<usize>();
            expand(&mul_scalar(g, 1.0 / n as f64)?, &dims)
        }
    }
}

/// The parameters of the pointwise losses.
#[derive(Clone)]
pub enum Pointwise {
    Mse,
    SmoothL1 {
        beta: f64,
    },
    Huber {
        delta: f64,
    },
    /// binary_cross_entropy on probabilities
    Bce {
        weight: Option<Tensor>,
    },
    /// binary_cross_entropy_with_logits
    BceLogits {
        weight: Option<Tensor>,
        pos_weight: Option<Tensor>,
    },
}

impl Pointwise {
    fn name(&self) -> &'static str {
        match self {
            Pointwise::Mse => "MseLossBackward0",
            Pointwise::SmoothL1 { .. } => "SmoothL1LossBackward0",
            Pointwise::Huber { .. } => "HuberLossBackward0",
            Pointwise::Bce { .. } => "BinaryCrossEntropyBackward0",
            Pointwise::BceLogits { .. } => "BinaryCrossEntropyWithLogitsBackward0",
        }
    }

    fn weighted(&self, l: Tensor) -> Result<Tensor> {
        match self {
            Pointwise::Bce { weight: Some(w) }
            | Pointwise::BceLogits {
                weight: Some(w), ..
            } => mul(&l, w),
            _ => Ok(l),
        }
    }

    /// The elementwise loss (inputs already broadcast).
    fn forward(&self, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        let l = match self {
            Pointwise::Mse => {
                let d = sub(x, y)?;
                mul(&d, &d)?
            }
            Pointwise::SmoothL1 { beta } => {
                let z = abs(&sub(x, y)?)?;
                if *beta == 0.0 {
                    z
                } else {
                    let small = binary(BinOp::Lt, &t(&z), &s(*beta))?;
                    let quad = mul_scalar(&mul(&z, &z)?, 0.5 / beta)?;
                    where_op(&small, &t(&quad), &t(&super::add_scalar(&z, -0.5 * beta)?))?
                }
            }
            Pointwise::Huber { delta } => {
                let z = abs(&sub(x, y)?)?;
                let small = binary(BinOp::Lt, &t(&z), &s(*delta))?;
                let quad = mul_scalar(&mul(&z, &z)?, 0.5)?;
                let lin = mul_scalar(&super::add_scalar(&z, -0.5 * delta)?, *delta)?;
                where_op(&small, &t(&quad), &t(&lin))?
            }
            Pointwise::Bce { .. } => {
                // (y - 1) * max(log(1 - x), -100) - y * max(log(x), -100)
                let lo = Some(Scalar::Float(-100.0));
                let log1m = clamp(&log1p(&neg(x)?)?, lo, None)?;
                let logx = clamp(&log(x)?, lo, None)?;
                sub(&mul(&super::add_scalar(y, -1.0)?, &log1m)?, &mul(y, &logx)?)?
            }
            Pointwise::BceLogits { pos_weight, .. } => {
                // (1 - y) * x + lw * softplus(-x), lw = 1 + (pw - 1) * y
                let sp = softplus_neg(x)?;
                let lin = mul(&binary(BinOp::Sub, &s(1.0), &t(y))?, x)?;
                let term = match pos_weight {
                    Some(pw) => mul(&log_weight(pw, y)?, &sp)?,
                    None => sp,
                };
                super::add(&lin, &term)?
            }
        };
        self.weighted(l)
    }

    /// d loss / d x and d loss / d y, elementwise (differentiable ops).
    fn derivatives(&self, x: &Tensor, y: &Tensor) -> Result<(Tensor, Tensor)> {
        let (dx, dy) = match self {
            Pointwise::Mse => {
                let dx = mul_scalar(&sub(x, y)?, 2.0)?;
                let dy = neg(&dx)?;
                (dx, dy)
            }
            Pointwise::SmoothL1 { beta } => {
                let d = sub(x, y)?;
                let dx = if *beta == 0.0 {
                    sign(&d)?
                } else {
                    let one = Some(Scalar::Float(1.0));
                    clamp(&mul_scalar(&d, 1.0 / beta)?, Some(Scalar::Float(-1.0)), one)?
                };
                let dy = neg(&dx)?;
                (dx, dy)
            }
            Pointwise::Huber { delta } => {
                let dx = clamp(
                    &sub(x, y)?,
                    Some(Scalar::Float(-delta)),
                    Some(Scalar::Float(*delta)),
                )?;
                let dy = neg(&dx)?;
                (dx, dy)
            }
            Pointwise::Bce { .. } => {
                // dx = (x - y) / max(x (1 - x), 1e-12); dy = log(1 - x) - log(x) (clamped)
                let denom = clamp(
                    &mul(x, &binary(BinOp::Sub, &s(1.0), &t(x))?)?,
                    Some(Scalar::Float(1e-12)),
                    None,
                )?;
                let dx = binary(BinOp::Div, &t(&sub(x, y)?), &t(&denom))?;
                let lo = Some(Scalar::Float(-100.0));
                let dy = sub(
                    &clamp(&log1p(&neg(x)?)?, lo, None)?,
                    &clamp(&log(x)?, lo, None)?,
                )?;
                (dx, dy)
            }
            Pointwise::BceLogits { pos_weight, .. } => {
                let sg = sigmoid(x)?;
                match pos_weight {
                    // dx = lw * sigmoid(x) - pw * y; dy = -x + (pw - 1) * softplus(-x)
                    Some(pw) => {
                        let dx = sub(&mul(&log_weight(pw, y)?, &sg)?, &mul(pw, y)?)?;
                        let pw1 = super::add_scalar(pw, -1.0)?;
                        let dy = sub(&mul(&pw1, &softplus_neg(x)?)?, x)?;
                        (dx, dy)
                    }
                    None => (sub(&sg, y)?, neg(x)?),
                }
            }
        };
        Ok((self.weighted(dx)?, self.weighted(dy)?))
    }
}

/// softplus(-x) = max(-x, 0) + log1p(exp(-|x|)), stable for any x.
fn softplus_neg(x: &Tensor) -> Result<Tensor> {
    let m = clamp(&neg(x)?, Some(Scalar::Float(0.0)), None)?;
    super::add(&m, &log1p(&exp(&neg(&abs(x)?)?)?)?)
}

/// 1 + (pos_weight - 1) * y
fn log_weight(pw: &Tensor, y: &Tensor) -> Result<Tensor> {
    super::add_scalar(&mul(&super::add_scalar(pw, -1.0)?, y)?, 1.0)
}

/// A pointwise loss of `x` against `y` (broadcast together), reduced.
pub fn pointwise_loss(kind: Pointwise, x: &Tensor, y: &Tensor, r: Reduction) -> Result<Tensor> {
    let (x, y) = (&super::autocast::fp32(x)?, &super::autocast::fp32(y)?);
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        return super::to_dtype(&pointwise_loss(kind, &super::up(x)?, &super::up(y)?, r)?, d);
    }
    if !x.dtype().is_float() {
        return Err(Error::dtype_not_implemented(
            kind.name().trim_end_matches("Backward0"),
            x.dtype(),
        ));
    }
    if !y.dtype().is_float() {
        match kind {
            Pointwise::Bce { .. } => {
                return Err(Error::Runtime(format!(
                    "Found dtype {} but expected {}",
                    y.dtype().kernel_name(),
                    x.dtype().kernel_name()
                )))
            }
            Pointwise::BceLogits { .. } => {
                return Err(Error::Runtime(format!(
                    "result type {} can't be cast to the desired output type {}",
                    x.dtype().kernel_name(),
                    y.dtype().kernel_name()
                )))
            }
            _ => {}
        }
    }
    let shape = broadcast_shapes(x.shape(), y.shape())?;
    let (xd, yd) = (x.detach(), y.detach());
    if let Pointwise::Bce { .. } = kind {
        let v = cast_vec::<f64>(&xd)?;
        if v.iter().any(|&p| !(0.0..=1.0).contains(&p)) {
            return Err(Error::Runtime(
                "all elements of input should be between 0 and 1".into(),
            ));
        }
    }
    let (xb, yb) = (broadcast_to(&xd, &shape)?, broadcast_to(&yd, &shape)?);
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        reduce(&kind.forward(&xb, &yb)?, r)?
    };
    if needs_grad(&[x, y]) {
        let (xs, ys) = (x.shape().to_vec(), y.shape().to_vec());
        record(
            kind.name(),
            &[x, y],
            &[&out],
            vec![Saved::Input(x.clone()), Saved::Input(y.clone())],
            move |ctx| {
                let ge = grad_elems(&ctx.grad(0)?, r, &shape)?;
                let (xv, yv) = (&ctx.saved[0], &ctx.saved[1]);
                let (xb, yb) = (broadcast_to(xv, &shape)?, broadcast_to(yv, &shape)?);
                let (dx, dy) = kind.derivatives(&xb, &yb)?;
                let gx = if ctx.needs(0) {
                    Some(sum_to(&mul(&ge, &dx)?, &xs)?)
                } else {
                    None
                };
                let gy = if ctx.needs(1) {
                    Some(sum_to(&mul(&ge, &dy)?, &ys)?)
                } else {
                    None
                };
                Ok(vec![gx, gy])
            },
        );
    }
    Ok(out)
}

/// `nll_loss`: input (C), (N, C) or (N, C, d1, ...), class-index target, optional class
/// weights, ignore_index (NllLossBackward0 / NllLoss2DBackward0).
pub fn nll_loss(
    x: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    r: Reduction,
    ignore_index: i64,
) -> Result<Tensor> {
    let x = &super::autocast::fp32(x)?;
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        let wu = super::up_opt(weight)?;
        return super::to_dtype(
            &nll_loss(&super::up(x)?, target, wu.as_ref(), r, ignore_index)?,
            d,
        );
    }
    if target.dtype() != DType::I64 {
        return Err(Error::Runtime(format!(
            "expected target dtype to be Long or Byte, but got {}",
            target.dtype().kernel_name()
        )));
    }
    if !x.dtype().is_float() {
        return Err(Error::dtype_not_implemented(
            "nll_loss_out_frame",
            x.dtype(),
        ));
    }
    let nd = x.ndim();
    if nd == 0 {
        return Err(Error::Runtime("input tensor should be 1D or 2D".into()));
    }
    // work on (N, C, rest...) with target (N, rest...)
    let (xin, tin) = if nd == 1 {
        if target.ndim() > 1 {
            return Err(Error::Runtime(
                "0D or 1D target tensor expected, multi-target not supported".into(),
            ));
        }
        if target.numel() != 1 {
            return Err(Error::Value(format!(
                "Expected input batch_size (1) to match target batch_size ({}).",
                target.numel()
            )));
        }
        (
            unsqueeze(&x.detach(), 0)?,
            super::shape::reshape(target, &[1])?,
        )
    } else {
        if nd == 2 && target.ndim() != 1 {
            return Err(Error::Runtime(
                "0D or 1D target tensor expected, multi-target not supported".into(),
            ));
        }
        if target.ndim() == 0 || x.shape()[0] != target.shape()[0] {
            return Err(Error::Value(format!(
                "Expected input batch_size ({}) to match target batch_size ({}).",
                x.shape()[0],
                target.shape().first().copied().unwrap_or(1)
            )));
        }
        if nd > 2 && (target.ndim() != nd - 1 || x.shape()[2..] != target.shape()[1..]) {
            return Err(Error::Runtime(format!(
                "size mismatch (got input: {} , target: {}",
                fmt_list(x.shape()),
                fmt_list(target.shape())
            )));
        }
        (x.detach(), target.clone())
    };
    let c = xin.shape()[1];
    let wv: Option<Vec<f64>> = match weight {
        Some(w) => {
            if w.numel() != c {
                return Err(Error::Runtime(format!(
                    "weight tensor should be defined either for all {c} classes or no classes but got weight tensor of shape: {}",
                    fmt_list(w.shape())
                )));
            }
            Some(cast_vec::<f64>(w)?)
        }
        None => None,
    };
    let tv = cast_vec::<i64>(&tin)?;
    let (safe, wt) = kl::nll_targets(&tv, c, ignore_index, wv.as_deref())?;
    let tshape = tin.shape().to_vec();
    let idx = unsqueeze(&Tensor::from_vec(safe, tshape.clone())?, 1)?;
    let picked = cast_vec::<f64>(&gather(&xin, 1, &idx)?)?;
    let nll = kl::nll(&picked, &wt);
    let total_weight = nll.total_weight;
    let dtype = x.dtype();
    let out = match r {
        Reduction::None => {
            let l = Tensor::from_vec(nll.losses, tshape.clone())?;
            let l = to_dtype(&l, dtype)?;
            if nd == 1 {
                squeeze(&l, None)?
            } else {
                l
            }
        }
        Reduction::Sum => Tensor::scalar(Scalar::Float(nll.sum), dtype),
        Reduction::Mean => Tensor::scalar(Scalar::Float(nll.sum / total_weight), dtype),
    };
    if needs_grad(&[x]) {
        // d out / d x[n, t[n]] = -w[t[n]] (/ total weight for the mean)
        let denom = if r == Reduction::Mean {
            total_weight
        } else {
            1.0
        };
        let coef = kl::nll_coefficients(&wt, denom);
        let coef = to_dtype(&Tensor::from_vec(coef, tshape.clone())?, dtype)?;
        let xshape = x.shape().to_vec();
        let name = if nd > 2 {
            "NllLoss2DBackward0"
        } else {
            "NllLossBackward0"
        };
        record(name, &[x], &[&out], vec![], move |ctx| {
            let g = ctx.grad(0)?;
            let g = match r {
                Reduction::None => super::shape::reshape(&g, &tshape)?,
                _ => expand(&g, &tshape.iter().map(|&d| d as i64).collect::<Vec<_>>())?,
            };
            let src = unsqueeze(&mul(&g, &coef)?, 1)?;
            let mut full = xshape.clone();
            if full.len() == 1 {
                full.insert(0, 1);
            }
            let gx = scatter_add(&Tensor::zeros(&full, coef.dtype())?, 1, &idx, &src)?;
            Ok(vec![Some(super::shape::reshape(&gx, &xshape)?)])
        });
    }
    Ok(out)
}
