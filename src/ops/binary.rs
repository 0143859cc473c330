//! Binary elementwise ops with broadcasting and PyTorch's type promotion.

use super::{to_dtype, unary};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::{DType, ResultType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::layout::broadcast_shapes;
use crate::storage::Elem;
use crate::tensor::Tensor;

/// An operand: a tensor or a Python number ("wrapped number").
#[derive(Clone, Debug)]
pub enum Operand {
    T(Tensor),
    S(Scalar),
}

impl From<&Tensor> for Operand {
    fn from(t: &Tensor) -> Self {
        Operand::T(t.clone())
    }
}
impl From<Scalar> for Operand {
    fn from(s: Scalar) -> Self {
        Operand::S(s)
    }
}
impl From<f64> for Operand {
    fn from(s: f64) -> Self {
        Operand::S(Scalar::Float(s))
    }
}

impl Operand {
    pub fn tensor(&self) -> Option<&Tensor> {
        match self {
            Operand::T(t) => Some(t),
            Operand::S(_) => None,
        }
    }
    fn shape(&self) -> &[usize] {
        match self {
            Operand::T(t) => t.shape(),
            Operand::S(_) => &[],
        }
    }
    /// The operand's values in `dtype` (a 0-d tensor for a number), for kernels to read: only
    /// its storage and layout are used, never its autograd metadata.
    fn data(&self, dtype: DType) -> Result<Tensor> {
        match self {
            Operand::T(t) if t.dtype() == dtype => Ok(t.clone()),
            Operand::T(t) => {
                let d = t.detach();
                to_dtype(&d, dtype)
            }
            Operand::S(s) => Ok(Tensor::scalar(*s, dtype)),
        }
    }
}

pub fn result_type(ops: &[&Operand]) -> DType {
    ops.iter()
        .fold(ResultType::default(), |rt, o| match o {
            Operand::T(t) => rt.tensor(t.dtype(), t.ndim()),
            Operand::S(s) => rt.scalar(*s),
        })
        .result()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
    FloorDiv,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitAnd,
    BitOr,
    BitXor,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
}

impl BinOp {
    fn is_comparison(self) -> bool {
        use BinOp::*;
        matches!(
            self,
            Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor
        )
    }
    fn is_bitwise(self) -> bool {
        matches!(self, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor)
    }
    fn kernel_name(self) -> &'static str {
        match self {
            BinOp::BitAnd => "bitwise_and_cpu",
            BinOp::BitOr => "bitwise_or_cpu",
            BinOp::BitXor => "bitwise_xor_cpu",
            _ => "binary op",
        }
    }
}

/// Arithmetic of one element type (wrapping for int64, so corner cases never trap).
trait Arith: Elem {
    fn add(a: Self, b: Self) -> Self;
    fn sub(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    fn div(a: Self, b: Self) -> Self;
    fn pow(a: Self, b: Self) -> Self;
    fn max(a: Self, b: Self) -> Self;
    fn min(a: Self, b: Self) -> Self;
    fn floordiv(a: Self, b: Self) -> Self;
    fn rem(a: Self, b: Self) -> Self;
    fn bitand(a: Self, b: Self) -> Self;
    fn bitor(a: Self, b: Self) -> Self;
    fn bitxor(a: Self, b: Self) -> Self;
    /// The value comparisons see: a bool's byte is any non-zero value in memory shared with
    /// numpy, compared as true.
    #[inline(always)]
    fn canon(self) -> Self {
        self
    }
}

macro_rules! float_arith {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline(always)]
            fn sub(a: Self, b: Self) -> Self {
                a - b
            }
            #[inline(always)]
            fn mul(a: Self, b: Self) -> Self {
                a * b
            }
            #[inline(always)]
            fn div(a: Self, b: Self) -> Self {
                a / b
            }
            #[inline(always)]
            fn pow(a: Self, b: Self) -> Self {
                if b == 2.0 {
                    a * a
                } else {
                    a.powf(b)
                }
            }
            #[inline(always)]
            fn max(a: Self, b: Self) -> Self {
                if a.is_nan() || b.is_nan() {
                    <$t>::NAN
                } else if a > b {
                    a
                } else {
                    b
                }
            }
            #[inline(always)]
            fn min(a: Self, b: Self) -> Self {
                if a.is_nan() || b.is_nan() {
                    <$t>::NAN
                } else if a < b {
                    a
                } else {
                    b
                }
            }
            #[inline(always)]
            fn floordiv(a: Self, b: Self) -> Self {
                (a / b).floor()
            }
            #[inline(always)]
            fn rem(a: Self, b: Self) -> Self {
                let r = a % b;
                if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
                    r + b
                } else {
                    r
                }
            }
            fn bitand(_: Self, _: Self) -> Self {
                unreachable!("checked: bitwise ops reject floats")
            }
            fn bitor(_: Self, _: Self) -> Self {
                unreachable!("checked: bitwise ops reject floats")
            }
            fn bitxor(_: Self, _: Self) -> Self {
                unreachable!("checked: bitwise ops reject floats")
            }
        }
    };
}
float_arith!(f32);
float_arith!(f64);

impl Arith for i64 {
    fn add(a: Self, b: Self) -> Self {
        a.wrapping_add(b)
    }
    fn sub(a: Self, b: Self) -> Self {
        a.wrapping_sub(b)
    }
    fn mul(a: Self, b: Self) -> Self {
        a.wrapping_mul(b)
    }
    fn div(a: Self, b: Self) -> Self {
        Self::floordiv(a, b)
    }
    fn pow(a: Self, b: Self) -> Self {
        a.wrapping_pow(b.clamp(0, u32::MAX as i64) as u32)
    }
    fn max(a: Self, b: Self) -> Self {
        a.max(b)
    }
    fn min(a: Self, b: Self) -> Self {
        a.min(b)
    }
    fn floordiv(a: Self, b: Self) -> Self {
        if b == 0 {
            return 0; // rejected before the kernel runs
        }
        let q = a.wrapping_div(b);
        if (a.wrapping_rem(b) != 0) && ((a < 0) != (b < 0)) {
            q - 1
        } else {
            q
        }
    }
    fn rem(a: Self, b: Self) -> Self {
        if b == 0 {
            return 0;
        }
        let r = a.wrapping_rem(b);
        if r != 0 && ((r < 0) != (b < 0)) {
            r + b
        } else {
            r
        }
    }
    fn bitand(a: Self, b: Self) -> Self {
        a & b
    }
    fn bitor(a: Self, b: Self) -> Self {
        a | b
    }
    fn bitxor(a: Self, b: Self) -> Self {
        a ^ b
    }
}

impl Arith for u8 {
    fn add(a: Self, b: Self) -> Self {
        ((a | b) != 0) as u8
    }
    fn sub(a: Self, b: Self) -> Self {
        ((a ^ b) != 0) as u8
    }
    fn mul(a: Self, b: Self) -> Self {
        ((a != 0) && (b != 0)) as u8
    }
    fn div(a: Self, b: Self) -> Self {
        Self::mul(a, b)
    }
    fn pow(a: Self, b: Self) -> Self {
        (a != 0 || b == 0) as u8
    }
    fn max(a: Self, b: Self) -> Self {
        ((a | b) != 0) as u8
    }
    fn min(a: Self, b: Self) -> Self {
        Self::mul(a, b)
    }
    fn floordiv(a: Self, b: Self) -> Self {
        Self::mul(a, b)
    }
    fn rem(_: Self, _: Self) -> Self {
        0
    }
    fn bitand(a: Self, b: Self) -> Self {
        ((a != 0) & (b != 0)) as u8
    }
    fn bitor(a: Self, b: Self) -> Self {
        ((a != 0) | (b != 0)) as u8
    }
    fn bitxor(a: Self, b: Self) -> Self {
        ((a != 0) ^ (b != 0)) as u8
    }
    #[inline(always)]
    fn canon(self) -> Self {
        (self != 0) as u8
    }
}

fn kernel<T: Arith>(op: BinOp, a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let la = a.layout().broadcast_to(shape)?;
    let lb = b.layout().broadcast_to(shape)?;
    let da = a.storage().read::<T>();
    let db = b.storage().read::<T>();
    let costly = op == BinOp::Pow && T::DTYPE.is_float();
    macro_rules! run {
        ($f:expr) => {
            Ok(Tensor::from_mapped(elementwise::map_binary(
                &da, &la, &db, &lb, costly, $f,
            )?))
        };
    }
    macro_rules! cmp {
        ($f:expr) => {
            Ok(Tensor::from_mapped(elementwise::map_binary(
                &da,
                &la,
                &db,
                &lb,
                false,
                |x: T, y: T| -> u8 { $f(x.canon(), y.canon()) as u8 },
            )?))
        };
    }
    use BinOp::*;
    match op {
        Add => run!(T::add),
        Sub => run!(T::sub),
        Mul => run!(T::mul),
        Div => run!(T::div),
        Pow => run!(T::pow),
        Maximum => run!(T::max),
        Minimum => run!(T::min),
        FloorDiv => run!(T::floordiv),
        Rem => run!(T::rem),
        BitAnd => run!(T::bitand),
        BitOr => run!(T::bitor),
        BitXor => run!(T::bitxor),
        Eq => cmp!(|x: T, y: T| x == y),
        Ne => cmp!(|x: T, y: T| x != y),
        Lt => cmp!(|x: T, y: T| x < y),
        Le => cmp!(|x: T, y: T| x <= y),
        Gt => cmp!(|x: T, y: T| x > y),
        Ge => cmp!(|x: T, y: T| x >= y),
        LogicalAnd => cmp!(|x: T, y: T| x.is_true() && y.is_true()),
        LogicalOr => cmp!(|x: T, y: T| x.is_true() || y.is_true()),
        LogicalXor => cmp!(|x: T, y: T| x.is_true() != y.is_true()),
    }
}

/// d/dx x^e = e x^(e - 1), with the common exponents written out (and vectorisable).
#[inline(always)]
fn pow_grad_factor<F: Arith + crate::kernels::simd::Real>(x: F, e: F) -> F {
    let (one, two) = (F::c(1.0), F::c(2.0));
    if e == two {
        two * x
    } else if e == one {
        one
    } else {
        e * F::pow(x, e - one)
    }
}

fn any_zero(t: &Tensor) -> bool {
    t.any_f64(|v| v == 0.0)
}

/// Forward of a binary op, without autograd: promotion, checks, kernel.
pub fn binary_forward(op: BinOp, a: &Operand, b: &Operand) -> Result<Tensor> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let mut dtype = result_type(&[a, b]);
    if op == BinOp::Div && !dtype.is_float() {
        dtype = DType::F32;
    }
    if op.is_bitwise() && dtype.is_float() {
        return Err(Error::NotImplemented(format!(
            "\"{}\" not implemented for '{}'",
            op.kernel_name(),
            dtype.kernel_name()
        )));
    }
    if op == BinOp::Sub {
        let is_bool = |o: &Operand| matches!(o, Operand::T(t) if t.dtype() == DType::Bool);
        if is_bool(a) && is_bool(b) {
            return Err(Error::Runtime("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.".into()));
        }
        if is_bool(a) || is_bool(b) {
            return Err(Error::Runtime("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.".into()));
        }
    }
    let da = a.data(dtype)?;
    let db = b.data(dtype)?;
    if matches!(op, BinOp::FloorDiv | BinOp::Rem) && dtype == DType::I64 && any_zero(&db) {
        return Err(Error::Runtime("ZeroDivisionError".into()));
    }
    if op == BinOp::Pow && dtype == DType::I64 && db.any_f64(|v| v < 0.0) {
        return Err(Error::Runtime(
            "Integers to negative integer powers are not allowed.".into(),
        ));
    }
    let _ = op.is_comparison();
    dispatch!(dtype, T => kernel::<T>(op, &da, &db, &shape))
}

fn tensors<'a>(a: &'a Operand, b: &'a Operand) -> Vec<&'a Tensor> {
    [a.tensor(), b.tensor()].into_iter().flatten().collect()
}

/// A binary op with autograd.
pub fn binary(op: BinOp, a: &Operand, b: &Operand) -> Result<Tensor> {
    let out = binary_forward(op, a, b)?;
    let ins = tensors(a, b);
    if !out.dtype().is_float() || !needs_grad(&ins) {
        return Ok(out);
    }
    record_binary(op, a, b, &out);
    Ok(out)
}

/// Stands in for a Python number among a node's inputs: it never requires grad, so its edge
/// is `(None, 0)` as in PyTorch. One shared instance, since nothing ever writes to it.
fn number_input() -> Tensor {
    static NUMBER: std::sync::OnceLock<Tensor> = std::sync::OnceLock::new();
    NUMBER
        .get_or_init(|| Tensor::scalar(Scalar::Int(0), DType::F32))
        .clone()
}

fn record_binary(op: BinOp, a: &Operand, b: &Operand, out: &Tensor) {
    use Operand::{S, T};
    // PyTorch treats a wrapped number as a tensor input without grad: it shows up as (None, 0),
    // except for the Scalar overloads (rsub, pow) which take only the tensor.
    let ea = a.tensor().cloned().unwrap_or_else(number_input);
    let eb = b.tensor().cloned().unwrap_or_else(number_input);
    match op {
        BinOp::Add => record("AddBackward0", &[&ea, &eb], &[out], vec![], |ctx| {
            let g = ctx.grad(0)?;
            Ok(vec![Some(g.clone()), Some(g)])
        }),
        BinOp::Sub => match (a, b) {
            (S(_), T(t)) => record("RsubBackward1", &[t], &[out], vec![], |ctx| {
                Ok(vec![Some(unary::neg(&ctx.grad(0)?)?)])
            }),
            _ => record("SubBackward0", &[&ea, &eb], &[out], vec![], |ctx| {
                let g = ctx.grad(0)?;
                let gb = if ctx.needs(1) {
                    Some(unary::neg(&g)?)
                } else {
                    None
                };
                Ok(vec![Some(g), gb])
            }),
        },
        BinOp::Mul => {
            // PyTorch saves `other` when self needs a gradient and `self` when other does (in
            // that order); a number is saved as a wrapped 0-d tensor
            let (sa, sb) = (scalar_of(a), scalar_of(b));
            let mut saved = Vec::new();
            let mut slot = |t: &Tensor, wanted: bool, number: bool| {
                wanted.then(|| {
                    saved.push(if number {
                        Saved::Number(t.clone())
                    } else {
                        Saved::Input(t.clone())
                    });
                    saved.len() - 1
                })
            };
            let ib = slot(&eb, ea.requires_grad(), sb.is_some());
            let ia = slot(&ea, eb.requires_grad(), sa.is_some());
            record("MulBackward0", &[&ea, &eb], &[out], saved, move |ctx| {
                let g = ctx.grad(0)?;
                let operand = |s: Option<Scalar>, i: Option<usize>| match (s, i) {
                    (Some(_), _) => mul_operand(&g, s, &g),
                    (None, Some(i)) => mul(&g, &ctx.saved[i]),
                    (None, None) => unreachable!("saved when needed"),
                };
                let ga = if ctx.needs(0) {
                    Some(operand(sb, ib)?)
                } else {
                    None
                };
                let gb = if ctx.needs(1) {
                    Some(operand(sa, ia)?)
                } else {
                    None
                };
                Ok(vec![ga, gb])
            })
        }
        BinOp::Div => {
            let saved = vec![Saved::Input(ea.clone()), Saved::Input(eb.clone())];
            let sb = scalar_of(b);
            record("DivBackward0", &[&ea, &eb], &[out], saved, move |ctx| {
                let g = ctx.grad(0)?;
                let bden: Operand = match sb {
                    Some(s) => S(s),
                    None => T(ctx.saved[1].clone()),
                };
                let ga = if ctx.needs(0) {
                    Some(binary(BinOp::Div, &T(g.clone()), &bden)?)
                } else {
                    None
                };
                let gb = if ctx.needs(1) {
                    // -g * a / b^2
                    let b2 = mul(&ctx.saved[1], &ctx.saved[1])?;
                    let num = mul(&unary::neg(&g)?, &ctx.saved[0])?;
                    Some(div(&num, &b2)?)
                } else {
                    None
                };
                Ok(vec![ga, gb])
            })
        }
        BinOp::Pow => match (a, b) {
            (T(x), S(e)) => {
                let e = *e;
                record(
                    "PowBackward0",
                    &[x],
                    &[out],
                    vec![Saved::Input(x.clone())],
                    move |ctx| {
                        let g = ctx.grad(0)?;
                        let x = &ctx.saved[0];
                        if e.to_f64() == 0.0 {
                            return Ok(vec![Some(mul_scalar(&g, 0.0)?)]);
                        }
                        let composite = || {
                            let em1 = Scalar::Float(e.to_f64() - 1.0);
                            let p = binary(BinOp::Pow, &T(x.clone()), &S(em1))?;
                            let d = binary(BinOp::Mul, &T(p), &S(e))?;
                            mul(&g, &d)
                        };
                        // g * e * x^(e - 1) in one pass
                        let (e64, e32) = (e.to_f64(), e.to_f64() as f32);
                        let gx = super::unary::fused_grad(
                            &g,
                            x,
                            move |g: f32, x: f32| g * pow_grad_factor(x, e32),
                            move |g: f64, x: f64| g * pow_grad_factor(x, e64),
                            composite,
                        )?;
                        Ok(vec![Some(gx)])
                    },
                )
            }
            (S(base), T(x)) => {
                let lnb = base.to_f64().ln();
                let zero_base = base.to_f64() == 0.0;
                record(
                    "PowBackward2",
                    &[x],
                    &[out],
                    vec![Saved::Output(out.clone(), 0), Saved::Input(x.clone())],
                    move |ctx| {
                        let g = ctx.grad(0)?;
                        let d = mul_scalar(&mul(&g, &ctx.saved[0])?, lnb)?;
                        let d = if zero_base {
                            // 0^x: gradient 0 where x >= 0
                            let mask =
                                binary(BinOp::Ge, &T(ctx.saved[1].clone()), &S(Scalar::Int(0)))?;
                            masked_fill(&d, &mask, Scalar::Float(0.0))?
                        } else {
                            d
                        };
                        Ok(vec![Some(d)])
                    },
                )
            }
            _ => {
                let saved = vec![
                    Saved::Input(ea.clone()),
                    Saved::Input(eb.clone()),
                    Saved::Output(out.clone(), 0),
                ];
                record("PowBackward1", &[&ea, &eb], &[out], saved, |ctx| {
                    let g = ctx.grad(0)?;
                    let (x, e, o) = (&ctx.saved[0], &ctx.saved[1], &ctx.saved[2]);
                    let ga = if ctx.needs(0) {
                        let em1 = sub(e, &Tensor::scalar(Scalar::Float(1.0), e.dtype()))?;
                        let p = binary(BinOp::Pow, &T(x.clone()), &T(em1))?;
                        let d = mul(&mul(&g, e)?, &p)?;
                        // 0 where x = 0 and the exponent is 0 (0 * 0^-1 is nan), as PyTorch's
                        // pow_backward_self gives; masked only there, so the gradient stays
                        // differentiable in the exponent elsewhere
                        let x0 = binary(BinOp::Eq, &T(x.clone()), &S(Scalar::Int(0)))?;
                        let e0 = binary(BinOp::Eq, &T(e.clone()), &S(Scalar::Int(0)))?;
                        let m = binary(BinOp::LogicalAnd, &T(x0), &T(e0))?;
                        Some(masked_fill(&d, &m, Scalar::Float(0.0))?)
                    } else {
                        None
                    };
                    let gb = if ctx.needs(1) {
                        let d = mul(&mul(&g, o)?, &unary::log(x)?)?;
                        // where x == 0 and e >= 0 the gradient is 0, not nan
                        let x0 = binary(BinOp::Eq, &T(x.clone()), &S(Scalar::Int(0)))?;
                        let e0 = binary(BinOp::Ge, &T(e.clone()), &S(Scalar::Int(0)))?;
                        let m = binary(BinOp::LogicalAnd, &T(x0), &T(e0))?;
                        Some(masked_fill(&d, &m, Scalar::Float(0.0))?)
                    } else {
                        None
                    };
                    Ok(vec![ga, gb])
                })
            }
        },
        BinOp::Maximum | BinOp::Minimum => {
            let name = if op == BinOp::Maximum {
                "MaximumBackward0"
            } else {
                "MinimumBackward0"
            };
            let saved = vec![Saved::Input(ea.clone()), Saved::Input(eb.clone())];
            record(name, &[&ea, &eb], &[out], saved, move |ctx| {
                let g = ctx.grad(0)?;
                let (x, y) = (&ctx.saved[0], &ctx.saved[1]);
                let eq = binary(BinOp::Eq, &T(x.clone()), &T(y.clone()))?;
                let half = where_(&eq, &mul_scalar(&g, 0.5)?, &g)?;
                let (lose_a, lose_b) = if op == BinOp::Maximum {
                    (BinOp::Lt, BinOp::Gt)
                } else {
                    (BinOp::Gt, BinOp::Lt)
                };
                let ma = binary(lose_a, &T(x.clone()), &T(y.clone()))?;
                let mb = binary(lose_b, &T(x.clone()), &T(y.clone()))?;
                Ok(vec![
                    Some(masked_fill(&half, &ma, Scalar::Float(0.0))?),
                    Some(masked_fill(&half, &mb, Scalar::Float(0.0))?),
                ])
            })
        }
        BinOp::Rem => match b {
            S(_) => record("RemainderBackward0", &[&ea], &[out], vec![], |ctx| {
                Ok(vec![Some(ctx.grad(0)?)])
            }),
            T(_) => {
                let saved = vec![Saved::Input(ea.clone()), Saved::Input(eb.clone())];
                record("RemainderBackward1", &[&ea, &eb], &[out], saved, |ctx| {
                    let g = ctx.grad(0)?;
                    let q = binary(
                        BinOp::FloorDiv,
                        &T(ctx.saved[0].detach()),
                        &T(ctx.saved[1].detach()),
                    )?;
                    let gb = unary::neg(&mul(&g, &q)?)?;
                    Ok(vec![Some(g), Some(gb)])
                })
            }
        },
        BinOp::FloorDiv => record("DivBackward2", &[&ea, &eb], &[out], vec![], |ctx| {
            let z = mul_scalar(&ctx.grad(0)?, 0.0)?;
            Ok(vec![Some(z.clone()), Some(z)])
        }),
        _ => {}
    }
}

fn scalar_of(o: &Operand) -> Option<Scalar> {
    match o {
        Operand::S(s) => Some(*s),
        Operand::T(_) => None,
    }
}

/// `g * other`, where `other` is a number when given, else the saved tensor.
fn mul_operand(g: &Tensor, s: Option<Scalar>, t: &Tensor) -> Result<Tensor> {
    match s {
        Some(s) => binary(BinOp::Mul, &Operand::T(g.clone()), &Operand::S(s)),
        None => mul(g, t),
    }
}

pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinOp::Add, &a.into(), &b.into())
}
pub fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinOp::Sub, &a.into(), &b.into())
}
pub fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinOp::Mul, &a.into(), &b.into())
}
pub fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinOp::Div, &a.into(), &b.into())
}
pub fn mul_scalar(a: &Tensor, s: f64) -> Result<Tensor> {
    binary(BinOp::Mul, &a.into(), &Operand::S(Scalar::Float(s)))
}
pub fn add_scalar(a: &Tensor, s: f64) -> Result<Tensor> {
    binary(BinOp::Add, &a.into(), &Operand::S(Scalar::Float(s)))
}

/// `where(cond, a, b)` (WhereBackward0).
pub fn where_op(cond: &Tensor, a: &Operand, b: &Operand) -> Result<Tensor> {
    if cond.dtype() != DType::Bool {
        return Err(Error::Runtime(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            cond.dtype().kernel_name()
        )));
    }
    let shape = broadcast_shapes(&broadcast_shapes(cond.shape(), a.shape())?, b.shape())?;
    let dtype = result_type(&[a, b]);
    let (da, db) = (a.data(dtype)?, b.data(dtype)?);
    let lc = cond.layout().broadcast_to(&shape)?;
    let la = da.layout().broadcast_to(&shape)?;
    let lb = db.layout().broadcast_to(&shape)?;
    let out = dispatch!(dtype, T => {
        let c = cond.storage().read::<u8>();
        let x = da.storage().read::<T>();
        let y = db.storage().read::<T>();
        let v = elementwise::map_ternary(&c, &lc, &x, &la, &y, &lb, |c: u8, x: T, y: T| if c != 0 { x } else { y })?;
        Tensor::from_mapped(v)
    });
    let ins = tensors(a, b);
    if dtype.is_float() && needs_grad(&ins) {
        let ea = a.tensor().cloned().unwrap_or_else(number_input);
        let eb = b.tensor().cloned().unwrap_or_else(number_input);
        let c = cond.clone();
        record("WhereBackward0", &[&ea, &eb], &[&out], vec![], move |ctx| {
            let g = ctx.grad(0)?;
            let z = Tensor::scalar(Scalar::Float(0.0), g.dtype());
            let ga = if ctx.needs(0) {
                Some(where_(&c, &g, &z)?)
            } else {
                None
            };
            let gb = if ctx.needs(1) {
                Some(where_(&c, &z, &g)?)
            } else {
                None
            };
            Ok(vec![ga, gb])
        });
    }
    Ok(out)
}

pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    where_op(cond, &a.into(), &b.into())
}

/// `masked_fill(mask, value)` (MaskedFillBackward0).
pub fn masked_fill(t: &Tensor, mask: &Tensor, value: Scalar) -> Result<Tensor> {
    if mask.dtype() != DType::Bool {
        return Err(Error::Runtime(format!(
            "masked_fill_ only supports boolean masks, but got mask with dtype {}",
            mask.dtype().kernel_name()
        )));
    }
    let shape = broadcast_shapes(t.shape(), mask.shape())?;
    if shape != t.shape() {
        return Err(Error::Runtime(format!(
            "The expanded size of the mask must match the tensor: mask {} vs tensor {}",
            crate::layout::fmt_list(mask.shape()),
            crate::layout::fmt_list(t.shape())
        )));
    }
    let v = Tensor::scalar(value, t.dtype());
    let mut out = where_op(mask, &Operand::T(v), &Operand::T(t.detach()))?;
    if !out.is_contiguous() {
        // PyTorch fills a contiguous clone whatever the input's layout
        out = super::materialize(&out)?;
    }
    if needs_grad(&[t]) {
        let m = mask.clone();
        record("MaskedFillBackward0", &[t], &[&out], vec![], move |ctx| {
            Ok(vec![Some(masked_fill(
                &ctx.grad(0)?,
                &m,
                Scalar::Float(0.0),
            )?)])
        });
    }
    Ok(out)
}
