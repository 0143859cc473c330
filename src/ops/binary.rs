//! Binary elementwise ops with broadcasting and PyTorch's type promotion.

use super::{to_dtype, unary};
use crate::autograd::graph::{needs_grad, record, wants_grad, Saved};
use crate::dtype::{DType, ResultType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::kernels::math::Math;
use crate::layout::broadcast_shapes;
use crate::storage::Elem;
use crate::tensor::Tensor;
use std::marker::PhantomData;

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
    pub(crate) fn shape(&self) -> &[usize] {
        match self {
            Operand::T(t) => t.shape(),
            Operand::S(_) => &[],
        }
    }
    /// The operand's values in `dtype` (a 0-d tensor for a number), for kernels to read: only
    /// its storage and layout are used, never its autograd metadata.
    pub(crate) fn data(&self, dtype: DType) -> Result<Tensor> {
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

/// The binary ops, one row each: the Python name (Tensor method and `torch` function) and the
/// op's type, whose `impl Arith` (or `impl Compare`) below holds its element functions, the
/// values it rejects and its derivative, side by side. Arithmetic ops return the promoted dtype,
/// comparisons bool. This list is the only one: the enum and its dispatch (`binary_ops!` here),
/// the op list Python sees (`_core._ops()`) and the Python bindings (py/registry.rs) are
/// generated from it. Adding an op: a row here and its `impl` below (then its stub lines, its
/// re-export in ferrograd/__init__.py and its op-table row; see the README's "Layout").
#[macro_export]
macro_rules! for_each_binary_op {
    ($m:ident) => {
        $m! {
            arith {
                add => Add,
                sub => Sub,
                mul => Mul,
                div => Div,
                pow => Pow,
                maximum => Maximum,
                minimum => Minimum,
                floor_divide => FloorDiv,
                remainder => Rem,
                fmod => Fmod,
                bitwise_and => BitAnd,
                bitwise_or => BitOr,
                bitwise_xor => BitXor,
                bitwise_left_shift => Shl,
                bitwise_right_shift => Shr,
                atan2 => Atan2,
                hypot => Hypot,
                igamma => Igamma,
                igammac => Igammac,
                xlogy => Xlogy,
            }
            compare {
                eq => Eq,
                ne => Ne,
                lt => Lt,
                le => Le,
                gt => Gt,
                ge => Ge,
                logical_and => LogicalAnd,
                logical_or => LogicalOr,
                logical_xor => LogicalXor,
            }
        }
    };
}

/// `BinOp`, the op types (`op::Add`, ...: each gets its `impl Arith` or `impl Compare` below)
/// and the dispatch from one to the other, from the list above.
macro_rules! binary_ops {
    (arith { $($an:ident => $av:ident,)* } compare { $($cn:ident => $cv:ident,)* }) => {
        /// The op types, in a module of their own so `Eq` and friends do not shadow the
        /// prelude's traits.
        pub mod op {
            $(pub struct $av;)*
            $(pub struct $cv;)*
        }

        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum BinOp { $($av,)* $($cv,)* }

        impl BinOp {
            pub const ALL: &'static [BinOp] = &[$(BinOp::$av,)* $(BinOp::$cv,)*];

            /// The Python name.
            pub fn name(self) -> &'static str {
                match self { $(BinOp::$av => stringify!($an),)* $(BinOp::$cv => stringify!($cn),)* }
            }
            /// Whether `torch.<name>(number, tensor)` is accepted, as PyTorch's Scalar overloads.
            pub fn number_first(self) -> bool {
                match self { $(BinOp::$av => op::$av::NUMBER_FIRST,)* $(BinOp::$cv => op::$cv::NUMBER_FIRST,)* }
            }
            /// Whether `other` may be a Python number (else it must be a Tensor).
            pub fn number_other(self) -> bool {
                match self { $(BinOp::$av => op::$av::NUMBER_OTHER,)* $(BinOp::$cv => op::$cv::NUMBER_OTHER,)* }
            }
            fn check(self, a: &Operand, b: &Operand, dtype: DType, db: &Tensor) -> Result<()> {
                match self {
                    $(BinOp::$av => op::$av::check(a, b, dtype, db),)*
                    $(BinOp::$cv => Ok(()),)*
                }
            }
            fn out_dtype(self, promoted: DType) -> DType {
                match self { $(BinOp::$av => op::$av::dtype(promoted),)* $(BinOp::$cv => promoted,)* }
            }
            fn kernel(self, a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
                match self {
                    $(BinOp::$av => arith_kernel::<op::$av>(a, b, shape),)*
                    $(BinOp::$cv => compare_kernel::<op::$cv>(a, b, shape),)*
                }
            }
            /// `x = op(x, b)` in x's own elements (`b` in x's dtype, broadcastable to it);
            /// None for the comparisons, whose in-place forms go the general way.
            fn kernel_inplace(self, x: &Tensor, b: &Tensor) -> Option<Result<()>> {
                match self {
                    $(BinOp::$av => Some(arith_inplace_kernel::<op::$av>(x, b)),)*
                    $(BinOp::$cv => None,)*
                }
            }
            fn backward(self, a: &Operand, b: &Operand, inputs: [&Tensor; 2], out: &Tensor) {
                match self {
                    $(BinOp::$av => op::$av::backward(a, b, inputs, out),)*
                    $(BinOp::$cv => {},)*
                }
            }
        }
    };
}
for_each_binary_op!(binary_ops);

/// An arithmetic op: its element function for each element type, the operand values it
/// rejects, and its derivative (the node it records), side by side. Ints wrap and never trap;
/// bools arrive as 0/1.
pub trait Arith {
    /// See [`BinOp::number_first`].
    const NUMBER_FIRST: bool = false;
    /// See [`BinOp::number_other`].
    const NUMBER_OTHER: bool = true;
    /// One element costs a library call (threads split it sooner).
    const COSTLY: bool = false;
    fn float<F: Math>(a: F, b: F) -> F;
    fn int(a: i64, b: i64) -> i64;
    fn boolean(a: bool, b: bool) -> bool;
    /// The output dtype from the operands' promoted one.
    fn dtype(promoted: DType) -> DType {
        promoted
    }
    /// Rejects what the op is undefined for, before the kernel runs (`db`: `b` in `dtype`).
    fn check(_a: &Operand, _b: &Operand, _dtype: DType, _db: &Tensor) -> Result<()> {
        Ok(())
    }
    /// Records the node of `out = op(a, b)` (`inputs`: the operands, numbers as stand-ins);
    /// called only when a float output needs a gradient. Not differentiable by default.
    fn backward(_a: &Operand, _b: &Operand, _inputs: [&Tensor; 2], _out: &Tensor) {}
    /// The op computed by a faster exact kernel where the operands allow one (see [`Small`]),
    /// or None. `a` and `b` are in the kernel's dtype.
    fn fast_kernel(_a: &Tensor, _b: &Tensor, _shape: &[usize]) -> Option<Result<Tensor>> {
        None
    }
    /// [`Arith::fast_kernel`] in place: `x = op(x, b)`.
    fn fast_inplace(_x: &Tensor, _b: &Tensor) -> Option<Result<()>> {
        None
    }
}

/// An fmod-based op (remainder, floor division) with its element function for quotients
/// |a / b| below 2^27, where float32's fmod has an exact form that vectorises
/// (`Math::fmod_small`).
trait FmodArith: Arith {
    fn float_small<F: Math>(a: F, b: F) -> F;
}

/// `A` with `float_small` as its float element function: the kernel for float32 operands
/// whose quotients [`small_quotients`] bounds.
struct Small<A>(PhantomData<A>);
impl<A: FmodArith> Arith for Small<A> {
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        A::float_small(a, b)
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        A::int(a, b)
    }
    #[inline(always)]
    fn boolean(a: bool, b: bool) -> bool {
        A::boolean(a, b)
    }
}

/// True when `a` and `b` are float32 and every quotient |a / b| of their elements is below
/// 2^27, from the largest finite |a| and the smallest finite non-zero |b| (other values are
/// exact in `fmod_small` whatever the quotient). Each operand is scanned over the storage
/// span its elements lie in (for a strided view, a superset: the bound only gets safer).
fn small_quotients(a: &Tensor, b: &Tensor) -> bool {
    fn span(t: &Tensor) -> std::ops::Range<usize> {
        let l = t.layout();
        if l.numel() == 0 {
            return 0..0;
        }
        let last: usize = l
            .shape
            .iter()
            .zip(&l.strides)
            .map(|(&n, &s)| (n - 1) * s)
            .sum();
        l.offset..l.offset + last + 1
    }
    /// The |x| of `xs` that `better(|x|, best)` prefers to all others (and to `init`), in
    /// lanes, so that it vectorises; NaN compares false and is skipped.
    fn best_abs(xs: &[f32], init: f32, better: impl Fn(f32, f32) -> bool) -> f32 {
        const LANES: usize = 16;
        let pick = |m: f32, v: f32| if better(v.abs(), m) { v.abs() } else { m };
        let mut best = [init; LANES];
        let mut chunks = xs.chunks_exact(LANES);
        for c in &mut chunks {
            for (m, &v) in best.iter_mut().zip(c) {
                *m = pick(*m, v);
            }
        }
        chunks
            .remainder()
            .iter()
            .chain(&best)
            .fold(init, |m, &v| pick(m, v))
    }
    let (da, db) = (a.storage().read::<f32>(), b.storage().read::<f32>());
    let max_a = best_abs(&da[span(a)], 0.0, |v, m| v > m && v < f32::INFINITY);
    let min_b = best_abs(&db[span(b)], f32::INFINITY, |v, m| v < m && v > 0.0);
    (max_a as f64) < (min_b as f64) * 134_217_728.0 // 2^27
}

/// `A`'s kernel through [`Small`] where [`small_quotients`] allows it.
fn fmod_kernel<A: FmodArith>(a: &Tensor, b: &Tensor, shape: &[usize]) -> Option<Result<Tensor>> {
    (a.dtype() == DType::F32 && b.dtype() == DType::F32 && small_quotients(a, b))
        .then(|| arith_kernel::<Small<A>>(a, b, shape))
}

/// [`fmod_kernel`] in place.
fn fmod_inplace<A: FmodArith>(x: &Tensor, b: &Tensor) -> Option<Result<()>> {
    (x.dtype() == DType::F32 && b.dtype() == DType::F32 && small_quotients(x, b))
        .then(|| arith_inplace_kernel::<Small<A>>(x, b))
}

/// A comparison or logical op: a bool per element pair; never differentiable.
pub trait Compare {
    const NUMBER_FIRST: bool = false;
    const NUMBER_OTHER: bool = true;
    fn test<T: Elem>(a: T, b: T) -> bool;
}

/// The element types an arithmetic kernel runs on.
trait ArithElem: Elem {
    fn apply<A: Arith>(a: Self, b: Self) -> Self;
    /// The value comparisons see: a bool's byte is any non-zero value in memory shared with
    /// numpy, compared as true.
    #[inline(always)]
    fn canon(self) -> Self {
        self
    }
}
impl ArithElem for f32 {
    #[inline(always)]
    fn apply<A: Arith>(a: f32, b: f32) -> f32 {
        A::float(a, b)
    }
}
impl ArithElem for f64 {
    #[inline(always)]
    fn apply<A: Arith>(a: f64, b: f64) -> f64 {
        A::float(a, b)
    }
}
impl ArithElem for i64 {
    #[inline(always)]
    fn apply<A: Arith>(a: i64, b: i64) -> i64 {
        A::int(a, b)
    }
}
impl ArithElem for u8 {
    #[inline(always)]
    fn apply<A: Arith>(a: u8, b: u8) -> u8 {
        A::boolean(a != 0, b != 0) as u8
    }
    #[inline(always)]
    fn canon(self) -> u8 {
        (self != 0) as u8
    }
}

/// The element function of an arithmetic op as a kernel of the engine, always inlined (a
/// large one, such as atan2, would not be as a closure).
struct ArithFn<A, T>(PhantomData<fn() -> (A, T)>);
impl<A: Arith, T: ArithElem> elementwise::Map2<T, T, T> for ArithFn<A, T> {
    #[inline(always)]
    fn call(&self, x: T, y: T) -> T {
        T::apply::<A>(x, y)
    }
}

fn arith_kernel<A: Arith>(a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if let Some(r) = A::fast_kernel(a, b, shape) {
        return r;
    }
    fn run<A: Arith, T: ArithElem>(a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
        let (la, lb) = (
            a.layout().broadcast_to(shape)?,
            b.layout().broadcast_to(shape)?,
        );
        let (da, db) = (a.storage().read::<T>(), b.storage().read::<T>());
        let costly = A::COSTLY && T::DTYPE.is_float();
        Ok(Tensor::from_mapped(elementwise::map_binary(
            &da,
            &la,
            &db,
            &lb,
            costly,
            ArithFn::<A, T>(PhantomData),
        )?))
    }
    dispatch!(a.dtype(), T => run::<A, T>(a, b, shape))
}

fn arith_inplace_kernel<A: Arith>(x: &Tensor, b: &Tensor) -> Result<()> {
    if let Some(r) = A::fast_inplace(x, b) {
        return r;
    }
    fn run<A: Arith, T: ArithElem>(x: &Tensor, b: &Tensor) -> Result<()> {
        let lb = b.layout().broadcast_to(x.shape())?;
        let db = b.storage().read::<T>();
        let mut dx = x.storage().write::<T>();
        let costly = A::COSTLY && T::DTYPE.is_float();
        elementwise::map_inplace2(
            &mut dx,
            x.layout(),
            &db,
            &lb,
            costly,
            ArithFn::<A, T>(PhantomData),
        );
        Ok(())
    }
    dispatch!(x.dtype(), T => run::<A, T>(x, b))
}

/// `x.op_(other)` in one pass over x's own elements, as PyTorch's in-place kernels, when that
/// is what the general way would compute: `other` broadcasts to x's shape, the result dtype is
/// x's (float32, float64 or int64) and `other` does not share x's memory. Returns false (having
/// done nothing) otherwise.
pub(crate) fn binary_inplace_direct(op: BinOp, x: &Tensor, other: &Operand) -> Result<bool> {
    let dt = x.dtype();
    if !matches!(dt, DType::F32 | DType::F64 | DType::I64)
        || op.out_dtype(result_type(&[&Operand::T(x.clone()), other])) != dt
        || broadcast_shapes(x.shape(), other.shape()).ok().as_deref() != Some(x.shape())
    {
        return Ok(false);
    }
    let b = other.data(dt)?;
    if std::sync::Arc::ptr_eq(x.storage(), b.storage()) {
        return Ok(false);
    }
    op.check(&Operand::T(x.clone()), other, dt, &b)?;
    match op.kernel_inplace(x, &b) {
        Some(r) => r.map(|()| true),
        None => Ok(false),
    }
}

fn compare_kernel<C: Compare>(a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
    fn run<C: Compare, T: ArithElem>(a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
        let (la, lb) = (
            a.layout().broadcast_to(shape)?,
            b.layout().broadcast_to(shape)?,
        );
        let (da, db) = (a.storage().read::<T>(), b.storage().read::<T>());
        let f = |x: T, y: T| C::test(x.canon(), y.canon()) as u8;
        Ok(Tensor::from_mapped(elementwise::map_binary(
            &da, &la, &db, &lb, false, f,
        )?))
    }
    dispatch!(a.dtype(), T => run::<C, T>(a, b, shape))
}

/// Forward of a binary op, without autograd: promotion, checks, kernel.
pub fn binary_forward(op: BinOp, a: &Operand, b: &Operand) -> Result<Tensor> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let dtype = op.out_dtype(result_type(&[a, b]));
    // numbers become `dtype` first (so they wrap or round as PyTorch's do), then storage-only
    // dtypes compute in their wider dtype and are rounded back
    let cd = dtype.compute();
    let da = super::widen(&a.data(dtype)?)?;
    let db = super::widen(&b.data(dtype)?)?;
    op.check(a, b, cd, &db)?;
    super::narrow_to(op.kernel(&da, &db, &shape)?, dtype)
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
    // PyTorch treats a wrapped number as a tensor input without grad: it shows up as (None, 0),
    // except for the Scalar overloads (rsub, pow) which take only the tensor.
    let ea = a.tensor().cloned().unwrap_or_else(number_input);
    let eb = b.tensor().cloned().unwrap_or_else(number_input);
    op.backward(a, b, [&ea, &eb], &out);
    Ok(out)
}

/// PyTorch's checks of `alpha` against the result dtype of add/sub.
pub fn add_alpha_check(dtype: DType, alpha: Scalar) -> Result<()> {
    if matches!(alpha, Scalar::Bool(_)) && dtype != DType::Bool {
        return Err(Error::Runtime(
            "Boolean alpha only supported for Boolean results.".into(),
        ));
    }
    if matches!(alpha, Scalar::Float(_)) && !dtype.is_float() {
        return Err(Error::Runtime(
            "For integral input tensors, argument alpha must not be a floating point number."
                .into(),
        ));
    }
    Ok(())
}

/// `add(a, b, alpha=s)` / `sub(a, b, alpha=s)`: `a ± s * b` as one node, AddBackward0 /
/// SubBackward0 with `b`'s gradient scaled by `s` and nothing saved (as PyTorch: a second
/// backward through it is fine), with PyTorch's checks of `s` against the result dtype.
pub fn add_alpha(a: &Operand, b: &Operand, alpha: Scalar, subtract: bool) -> Result<Tensor> {
    let dtype = result_type(&[a, b]);
    add_alpha_check(dtype, alpha)?;
    let op = if subtract { BinOp::Sub } else { BinOp::Add };
    // `s * b` in the result dtype (a bool result: `b`, or false for a zero alpha)
    let scaled = match b {
        Operand::S(v) if dtype == DType::Bool => {
            Operand::S(Scalar::Bool(v.to_f64() != 0.0 && alpha.to_f64() != 0.0))
        }
        Operand::S(v) => Operand::S(match (*v, alpha) {
            (Scalar::Float(_), _) | (_, Scalar::Float(_)) => {
                Scalar::Float(v.to_f64() * alpha.to_f64())
            }
            _ => Scalar::Int(v.to_i64().wrapping_mul(alpha.to_i64())),
        }),
        Operand::T(t) if dtype == DType::Bool => Operand::T(if alpha.to_f64() != 0.0 {
            t.detach()
        } else {
            Tensor::zeros(t.shape(), DType::Bool)?
        }),
        Operand::T(t) => {
            let bt = to_dtype(&t.detach(), dtype)?;
            Operand::T(binary_forward(
                BinOp::Mul,
                &Operand::T(bt),
                &Operand::S(alpha),
            )?)
        }
    };
    let out = binary_forward(op, a, &scaled)?;
    let ins = tensors(a, b);
    if out.dtype().is_float() && needs_grad(&ins) {
        let ea = a.tensor().cloned().unwrap_or_else(number_input);
        let eb = b.tensor().cloned().unwrap_or_else(number_input);
        let (name, s) = if subtract {
            ("SubBackward0", Scalar::Float(-alpha.to_f64()))
        } else {
            ("AddBackward0", alpha)
        };
        record(name, &[&ea, &eb], &[&out], vec![], move |ctx| {
            let g = ctx.grad(0)?;
            let gb = if ctx.needs(1) {
                Some(binary(BinOp::Mul, &Operand::T(g.clone()), &Operand::S(s))?)
            } else {
                None
            };
            Ok(vec![Some(g), gb])
        });
    }
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

// ---- arithmetic ----

impl Arith for op::Add {
    const NUMBER_FIRST: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        a + b
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    #[inline(always)]
    fn boolean(a: bool, b: bool) -> bool {
        a | b
    }
    fn backward(_: &Operand, _: &Operand, inputs: [&Tensor; 2], out: &Tensor) {
        record("AddBackward0", &inputs, &[out], vec![], |ctx| {
            let g = ctx.grad(0)?;
            Ok(vec![Some(g.clone()), Some(g)])
        })
    }
}

impl Arith for op::Sub {
    const NUMBER_FIRST: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        a - b
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        a.wrapping_sub(b)
    }
    #[inline(always)]
    fn boolean(a: bool, b: bool) -> bool {
        a ^ b // never reached: `check` rejects bools
    }
    fn check(a: &Operand, b: &Operand, _: DType, _: &Tensor) -> Result<()> {
        let is_bool = |o: &Operand| matches!(o, Operand::T(t) if t.dtype() == DType::Bool);
        if is_bool(a) && is_bool(b) {
            return Err(Error::Runtime("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.".into()));
        }
        if is_bool(a) || is_bool(b) {
            return Err(Error::Runtime("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.".into()));
        }
        Ok(())
    }
    fn backward(a: &Operand, b: &Operand, inputs: [&Tensor; 2], out: &Tensor) {
        match (a, b) {
            (Operand::S(_), Operand::T(t)) => {
                record("RsubBackward1", &[t], &[out], vec![], |ctx| {
                    Ok(vec![Some(unary::neg(&ctx.grad(0)?)?)])
                })
            }
            _ => record("SubBackward0", &inputs, &[out], vec![], |ctx| {
                let g = ctx.grad(0)?;
                let gb = if ctx.needs(1) {
                    Some(unary::neg(&g)?)
                } else {
                    None
                };
                Ok(vec![Some(g), gb])
            }),
        }
    }
}

impl Arith for op::Mul {
    const NUMBER_FIRST: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        a * b
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        a.wrapping_mul(b)
    }
    #[inline(always)]
    fn boolean(a: bool, b: bool) -> bool {
        a & b
    }
    fn backward(a: &Operand, b: &Operand, [ea, eb]: [&Tensor; 2], out: &Tensor) {
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
        let ib = slot(eb, wants_grad(ea), sb.is_some());
        let ia = slot(ea, wants_grad(eb), sa.is_some());
        record("MulBackward0", &[ea, eb], &[out], saved, move |ctx| {
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
}

impl Arith for op::Div {
    const NUMBER_FIRST: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        a / b
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        op::FloorDiv::int(a, b) // never reached: true division computes in float
    }
    #[inline(always)]
    fn boolean(a: bool, b: bool) -> bool {
        a & b // never reached, as `int`
    }
    fn dtype(promoted: DType) -> DType {
        if promoted.is_float() {
            promoted
        } else {
            DType::default_float()
        }
    }
    fn backward(a: &Operand, b: &Operand, [ea, eb]: [&Tensor; 2], out: &Tensor) {
        let saved = vec![Saved::Input(ea.clone()), Saved::Input(eb.clone())];
        let (sa, sb) = (scalar_of(a), scalar_of(b));
        record("DivBackward0", &[ea, eb], &[out], saved, move |ctx| {
            let g = ctx.grad(0)?;
            let bden = match sb {
                Some(s) => Operand::S(s),
                None => Operand::T(ctx.saved[1].clone()),
            };
            let ga = if ctx.needs(0) {
                Some(binary(BinOp::Div, &Operand::T(g.clone()), &bden)?)
            } else {
                None
            };
            let gb = if ctx.needs(1) {
                // -g * a / b^2 (`torch.div(number, b)`: `a` is the number, not its stand-in)
                let b2 = mul(&ctx.saved[1], &ctx.saved[1])?;
                let num = mul_operand(&unary::neg(&g)?, sa, &ctx.saved[0])?;
                Some(div(&num, &b2)?)
            } else {
                None
            };
            Ok(vec![ga, gb])
        })
    }
}

/// atan2(a, b) = atan(a / b) in the quadrant of (b, a); integers compute in the default float.
/// The items of an [`Arith`] op whose integer and bool operands are computed in the default
/// float dtype (so its `int` / `boolean` element functions are never reached).
macro_rules! computed_in_float {
    () => {
        #[inline(always)]
        fn int(a: i64, _: i64) -> i64 {
            a // never reached: computed in float
        }
        #[inline(always)]
        fn boolean(a: bool, _: bool) -> bool {
            a // never reached, as `int`
        }
        fn dtype(promoted: DType) -> DType {
            if promoted.is_float() {
                promoted
            } else {
                DType::default_float()
            }
        }
    };
}

impl Arith for op::Atan2 {
    const NUMBER_OTHER: bool = false;
    const COSTLY: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        a.atan2_(b)
    }
    computed_in_float!();
    fn backward(_: &Operand, _: &Operand, [ea, eb]: [&Tensor; 2], out: &Tensor) {
        let saved = vec![Saved::Input(ea.clone()), Saved::Input(eb.clone())];
        record("Atan2Backward0", &[ea, eb], &[out], saved, |ctx| {
            // d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)
            let g = ctx.grad(0)?;
            let (a, b) = (&ctx.saved[0], &ctx.saved[1]);
            let r = div(&g, &add(&mul(a, a)?, &mul(b, b)?)?)?;
            let ga = if ctx.needs(0) {
                Some(mul(&r, b)?)
            } else {
                None
            };
            let gb = if ctx.needs(1) {
                Some(unary::neg(&mul(&r, a)?)?)
            } else {
                None
            };
            Ok(vec![ga, gb])
        })
    }
}

/// sqrt(a^2 + b^2) without overflow; float dtypes only, as PyTorch's hypot_cpu.
impl Arith for op::Hypot {
    const NUMBER_OTHER: bool = false;
    const COSTLY: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        a.hypot_(b)
    }
    #[inline(always)]
    fn int(a: i64, _: i64) -> i64 {
        a // never reached: `check` rejects integers
    }
    #[inline(always)]
    fn boolean(a: bool, _: bool) -> bool {
        a // never reached: `check` rejects bools
    }
    fn check(_: &Operand, _: &Operand, dtype: DType, _: &Tensor) -> Result<()> {
        if dtype.is_float() {
            Ok(())
        } else {
            Err(Error::dtype_not_implemented("hypot_cpu", dtype))
        }
    }
    fn backward(_: &Operand, _: &Operand, [ea, eb]: [&Tensor; 2], out: &Tensor) {
        let saved = vec![
            Saved::Input(ea.clone()),
            Saved::Input(eb.clone()),
            Saved::Output(out.clone(), 0),
        ];
        record("HypotBackward0", &[ea, eb], &[out], saved, |ctx| {
            // d/da = a / out, d/db = b / out
            let r = div(&ctx.grad(0)?, &ctx.saved[2])?;
            let ga = if ctx.needs(0) {
                Some(mul(&r, &ctx.saved[0])?)
            } else {
                None
            };
            let gb = if ctx.needs(1) {
                Some(mul(&r, &ctx.saved[1])?)
            } else {
                None
            };
            Ok(vec![ga, gb])
        })
    }
}

/// `a log(b)`, 0 where `a` is 0 unless `b` is NaN (PyTorch's xlogy kernel); integer operands
/// computed in the default float dtype. Python numbers are wrapped by the Python function.
impl Arith for op::Xlogy {
    const NUMBER_OTHER: bool = false;
    const COSTLY: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        let v = a * b.ln();
        if a == F::c(0.0) && !b.is_nan() {
            F::c(0.0)
        } else {
            v
        }
    }
    computed_in_float!();
    fn backward(_: &Operand, _: &Operand, [ea, eb]: [&Tensor; 2], out: &Tensor) {
        let saved = vec![Saved::Input(ea.clone()), Saved::Input(eb.clone())];
        record("XlogyBackward0", &[ea, eb], &[out], saved, |ctx| {
            // d/da = log(b), 0 where a = 0 and b <= 0; d/db = a / b (PyTorch's formulas)
            let g = ctx.grad(0)?;
            let (a, b) = (&ctx.saved[0], &ctx.saved[1]);
            let ga = if ctx.needs(0) {
                let zero = binary(
                    BinOp::LogicalAnd,
                    &Operand::T(binary(BinOp::Eq, &a.into(), &0.0.into())?),
                    &Operand::T(binary(BinOp::Le, &b.into(), &0.0.into())?),
                )?;
                let log_b = where_op(&zero, &0.0.into(), &Operand::T(unary::log(b)?))?;
                Some(mul(&g, &log_b)?)
            } else {
                None
            };
            let gb = if ctx.needs(1) {
                Some(mul(&g, &div(a, b)?)?)
            } else {
                None
            };
            Ok(vec![ga, gb])
        })
    }
}

/// The regularized incomplete gamma functions P(a, x) (igamma) and Q(a, x) (igammac), float
/// dtypes only as PyTorch's igamma_cpu / igammac_cpu; differentiable in x only.
impl Arith for op::Igamma {
    const NUMBER_OTHER: bool = false;
    const COSTLY: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        a.igamma_(b)
    }
    #[inline(always)]
    fn int(a: i64, _: i64) -> i64 {
        a // never reached: `check` rejects integers
    }
    #[inline(always)]
    fn boolean(a: bool, _: bool) -> bool {
        a // never reached: `check` rejects bools
    }
    fn check(_: &Operand, _: &Operand, dtype: DType, _: &Tensor) -> Result<()> {
        float_only("igamma_cpu", dtype)
    }
    fn backward(_: &Operand, _: &Operand, inputs: [&Tensor; 2], out: &Tensor) {
        igamma_node("IgammaBackward0", "igamma: input", false, inputs, out)
    }
}

impl Arith for op::Igammac {
    const NUMBER_OTHER: bool = false;
    const COSTLY: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        a.igammac_(b)
    }
    #[inline(always)]
    fn int(a: i64, _: i64) -> i64 {
        a // never reached: `check` rejects integers
    }
    #[inline(always)]
    fn boolean(a: bool, _: bool) -> bool {
        a // never reached: `check` rejects bools
    }
    fn check(_: &Operand, _: &Operand, dtype: DType, _: &Tensor) -> Result<()> {
        float_only("igammac_cpu", dtype)
    }
    fn backward(_: &Operand, _: &Operand, inputs: [&Tensor; 2], out: &Tensor) {
        igamma_node("IgammacBackward0", "igammac: input", true, inputs, out)
    }
}

fn float_only(kernel: &str, dtype: DType) -> Result<()> {
    if dtype.is_float() {
        Ok(())
    } else {
        Err(Error::dtype_not_implemented(kernel, dtype))
    }
}

/// The node of igamma / igammac (`upper`): d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) =
/// exp((a - 1) log x - x - lgamma(a)), negated for Q; PyTorch has no derivative in a.
fn igamma_node(
    name: &'static str,
    what: &'static str,
    upper: bool,
    [ea, eb]: [&Tensor; 2],
    out: &Tensor,
) {
    let saved = vec![Saved::Input(ea.clone()), Saved::Input(eb.clone())];
    record(name, &[ea, eb], &[out], saved, move |ctx| {
        if ctx.needs(0) {
            return Err(Error::NotImplemented(format!(
                "the derivative for '{what}' is not implemented."
            )));
        }
        let g = ctx.grad(0)?;
        let (a, x) = (&ctx.saved[0], &ctx.saved[1]);
        let am1 = binary(
            BinOp::Sub,
            &Operand::T(a.clone()),
            &Operand::S(Scalar::Float(1.0)),
        )?;
        let e = sub(
            &sub(&mul(&am1, &unary::log(x)?)?, x)?,
            &super::math::lgamma(a)?,
        )?;
        let d = mul(&g, &unary::exp(&e)?)?;
        Ok(vec![None, Some(if upper { unary::neg(&d)? } else { d })])
    })
}

impl Arith for op::Pow {
    const NUMBER_FIRST: bool = true;
    const COSTLY: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        if b == F::c(2.0) {
            a * a
        } else {
            a.pow_(b)
        }
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        a.wrapping_pow(b.clamp(0, u32::MAX as i64) as u32)
    }
    #[inline(always)]
    fn boolean(a: bool, b: bool) -> bool {
        a || !b
    }
    fn fast_kernel(a: &Tensor, b: &Tensor, shape: &[usize]) -> Option<Result<Tensor>> {
        pow_const(a, b).map(|k| (k.out_of_place)(a, b, shape))
    }
    fn fast_inplace(x: &Tensor, b: &Tensor) -> Option<Result<()>> {
        pow_const(x, b).map(|k| (k.in_place)(x, b))
    }
    fn check(_: &Operand, _: &Operand, dtype: DType, db: &Tensor) -> Result<()> {
        if dtype == DType::I64 && db.any_f64(|v| v < 0.0) {
            return Err(Error::Runtime(
                "Integers to negative integer powers are not allowed.".into(),
            ));
        }
        Ok(())
    }
    fn backward(a: &Operand, b: &Operand, [ea, eb]: [&Tensor; 2], out: &Tensor) {
        use Operand::{S, T};
        match (a, b) {
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
                let saved = vec![Saved::Output(out.clone(), 0), Saved::Input(x.clone())];
                record("PowBackward2", &[x], &[out], saved, move |ctx| {
                    let g = ctx.grad(0)?;
                    let d = mul_scalar(&mul(&g, &ctx.saved[0])?, lnb)?;
                    let d = if zero_base {
                        // 0^x: gradient 0 where x >= 0
                        let mask = binary(BinOp::Ge, &T(ctx.saved[1].clone()), &S(Scalar::Int(0)))?;
                        masked_fill(&d, &mask, Scalar::Float(0.0))?
                    } else {
                        d
                    };
                    Ok(vec![Some(d)])
                })
            }
            _ => {
                let saved = vec![
                    Saved::Input(ea.clone()),
                    Saved::Input(eb.clone()),
                    Saved::Output(out.clone(), 0),
                ];
                record("PowBackward1", &[ea, eb], &[out], saved, |ctx| {
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
        }
    }
}

/// `x ^ e` for the constant exponents that PyTorch's CPU kernel writes out
/// (`pow_tensor_scalar_optimized_kernel`, and the sqrt, rsqrt and reciprocal kernels it hands
/// 0.5, -0.5 and -1 to), so the results are PyTorch's bit for bit: `E2` is 2e.
struct PowConst<const E2: i8>;
impl<const E2: i8> Arith for PowConst<E2> {
    #[inline(always)]
    fn float<F: Math>(a: F, _: F) -> F {
        let one = F::c(1.0);
        match E2 {
            2 => a,
            4 => a * a,
            6 => a * a * a,
            -4 => one / (a * a),
            -2 => one / a,
            1 => a.sqrt(),
            -1 => one / a.sqrt(),
            _ => unreachable!("no kernel for exponent {}", E2 as f64 / 2.0),
        }
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        op::Pow::int(a, b)
    }
    #[inline(always)]
    fn boolean(a: bool, b: bool) -> bool {
        op::Pow::boolean(a, b)
    }
}

/// A kernel's out-of-place and in-place forms.
struct KernelPair {
    out_of_place: fn(&Tensor, &Tensor, &[usize]) -> Result<Tensor>,
    in_place: fn(&Tensor, &Tensor) -> Result<()>,
}

/// The [`PowConst`] kernel for a float `x` to a one-element exponent `e` of 1, 2, 3, -2, 0.5,
/// -0.5 or -1, or None.
fn pow_const(x: &Tensor, e: &Tensor) -> Option<KernelPair> {
    fn pair<A: Arith>() -> KernelPair {
        KernelPair {
            out_of_place: arith_kernel::<A>,
            in_place: arith_inplace_kernel::<A>,
        }
    }
    if !x.dtype().is_float() || e.numel() != 1 {
        return None;
    }
    let e = e.item().ok()?.to_f64();
    Some(match e {
        1.0 => pair::<PowConst<2>>(),
        2.0 => pair::<PowConst<4>>(),
        3.0 => pair::<PowConst<6>>(),
        -2.0 => pair::<PowConst<-4>>(),
        -1.0 => pair::<PowConst<-2>>(),
        0.5 => pair::<PowConst<1>>(),
        -0.5 => pair::<PowConst<-1>>(),
        _ => return None,
    })
}

/// d/dx x^e = e x^(e - 1), with the common exponents written out (and vectorisable).
#[inline(always)]
fn pow_grad_factor<F: Math>(x: F, e: F) -> F {
    let (one, two) = (F::c(1.0), F::c(2.0));
    if e == two {
        two * x
    } else if e == one {
        one
    } else {
        e * x.pow_(e - one)
    }
}

impl Arith for op::Maximum {
    const NUMBER_OTHER: bool = false;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        if a.is_nan() || b.is_nan() {
            F::NAN
        } else if a > b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        a.max(b)
    }
    #[inline(always)]
    fn boolean(a: bool, b: bool) -> bool {
        a | b
    }
    fn backward(_: &Operand, _: &Operand, inputs: [&Tensor; 2], out: &Tensor) {
        extremum_backward("MaximumBackward0", BinOp::Lt, inputs, out)
    }
}

impl Arith for op::Minimum {
    const NUMBER_OTHER: bool = false;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        if a.is_nan() || b.is_nan() {
            F::NAN
        } else if a < b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        a.min(b)
    }
    #[inline(always)]
    fn boolean(a: bool, b: bool) -> bool {
        a & b
    }
    fn backward(_: &Operand, _: &Operand, inputs: [&Tensor; 2], out: &Tensor) {
        extremum_backward("MinimumBackward0", BinOp::Gt, inputs, out)
    }
}

/// maximum/minimum: the gradient goes to the winner, split in half on ties; `loses` is the
/// comparison under which the first operand lost.
fn extremum_backward(name: &'static str, loses: BinOp, [ea, eb]: [&Tensor; 2], out: &Tensor) {
    let saved = vec![Saved::Input(ea.clone()), Saved::Input(eb.clone())];
    record(name, &[ea, eb], &[out], saved, move |ctx| {
        let g = ctx.grad(0)?;
        let (x, y) = (
            Operand::T(ctx.saved[0].clone()),
            Operand::T(ctx.saved[1].clone()),
        );
        let half = where_(&binary(BinOp::Eq, &x, &y)?, &mul_scalar(&g, 0.5)?, &g)?;
        let lost_a = binary(loses, &x, &y)?;
        let lost_b = binary(loses, &y, &x)?;
        Ok(vec![
            Some(masked_fill(&half, &lost_a, Scalar::Float(0.0))?),
            Some(masked_fill(&half, &lost_b, Scalar::Float(0.0))?),
        ])
    })
}

/// Integer floor division and remainder by zero are errors (floats give inf/nan).
fn reject_int_zero(dtype: DType, db: &Tensor) -> Result<()> {
    if dtype == DType::I64 && db.any_f64(|v| v == 0.0) {
        return Err(Error::Runtime("ZeroDivisionError".into()));
    }
    Ok(())
}

impl Arith for op::FloorDiv {
    const NUMBER_FIRST: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        floor_div(a, b, a % b)
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
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
    #[inline(always)]
    fn boolean(a: bool, b: bool) -> bool {
        a & b
    }
    fn check(_: &Operand, _: &Operand, dtype: DType, db: &Tensor) -> Result<()> {
        reject_bool_and_int_zero("div_floor_cpu", dtype, db)
    }
    fn fast_kernel(a: &Tensor, b: &Tensor, shape: &[usize]) -> Option<Result<Tensor>> {
        fmod_kernel::<Self>(a, b, shape)
    }
    fn fast_inplace(x: &Tensor, b: &Tensor) -> Option<Result<()>> {
        fmod_inplace::<Self>(x, b)
    }
    /// `floor_divide` has no derivative in PyTorch: its node raises when backward reaches it
    /// (`div(rounding_mode="floor")` is the differentiable form, see [`div_rounding`]).
    fn backward(_: &Operand, _: &Operand, inputs: [&Tensor; 2], out: &Tensor) {
        record(
            "torch::autograd::NotImplemented",
            &inputs,
            &[out],
            vec![],
            |_| {
                Err(Error::Runtime(
                    "derivative for aten::floor_divide is not implemented".into(),
                ))
            },
        )
    }
}

impl FmodArith for op::FloorDiv {
    #[inline(always)]
    fn float_small<F: Math>(a: F, b: F) -> F {
        floor_div(a, b, a.fmod_small(b))
    }
}

/// PyTorch's `div_floor_floating`: the quotient of `a - fmod(a, b)` (exact where
/// `floor(a / b)` rounds, as Python's `//`: `1.0 // 0.1 == 9.0`), zero keeping the sign of
/// `a / b`, and IEEE's `a / b` for a zero divisor; `m` is fmod(a, b).
#[inline(always)]
fn floor_div<F: Math>(a: F, b: F, m: F) -> F {
    let (zero, one) = (F::c(0.0), F::c(1.0));
    if b == zero {
        return a / b;
    }
    let mut div = (a - m) / b;
    if m != zero && (b < zero) != (m < zero) {
        div = div - one;
    }
    if div == zero {
        // |a| < |b|: a zero with the quotient's sign
        return zero * (a / b);
    }
    let floor = div.floor();
    if div - floor > F::c(0.5) {
        floor + one
    } else {
        floor
    }
}

/// `div(rounding_mode="trunc")`'s element functions (not a registry op: it is reached through
/// `div`'s argument, see [`div_rounding`]).
pub struct DivTrunc;

impl Arith for DivTrunc {
    /// `trunc(a / b)`, as PyTorch.
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        let q = a / b;
        if q < F::c(0.0) {
            -(-q).floor()
        } else {
            q.floor()
        }
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        if b == 0 {
            return 0; // rejected before the kernel runs
        }
        a.wrapping_div(b)
    }
    #[inline(always)]
    fn boolean(a: bool, _: bool) -> bool {
        a // never reached: `check` rejects bools
    }
    fn check(_: &Operand, _: &Operand, dtype: DType, db: &Tensor) -> Result<()> {
        reject_bool_and_int_zero("div_trunc_cpu", dtype, db)
    }
}

/// The forward of an arithmetic op given by its type (promotion, checks, kernel).
fn arith_forward<A: Arith>(a: &Operand, b: &Operand) -> Result<Tensor> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let dtype = A::dtype(result_type(&[a, b]));
    let (da, db) = (a.data(dtype)?, b.data(dtype)?);
    A::check(a, b, dtype, &db)?;
    arith_kernel::<A>(&da, &db, &shape)
}

/// `div(a, b, rounding_mode="trunc" | "floor")` (DivBackward2: zero gradients). Integers stay
/// integers; a zero integer divisor is PyTorch's ZeroDivisionError.
pub fn div_rounding(a: &Operand, b: &Operand, trunc: bool) -> Result<Tensor> {
    let out = if trunc {
        arith_forward::<DivTrunc>(a, b)?
    } else {
        arith_forward::<op::FloorDiv>(a, b)?
    };
    let ins = tensors(a, b);
    if out.dtype().is_float() && needs_grad(&ins) {
        let ea = a.tensor().cloned().unwrap_or_else(number_input);
        let eb = b.tensor().cloned().unwrap_or_else(number_input);
        record("DivBackward2", &[&ea, &eb], &[&out], vec![], |ctx| {
            let g = ctx.grad(0)?;
            let z = Tensor::zeros(g.shape(), g.dtype())?;
            Ok(vec![Some(z.clone()), Some(z)])
        });
    }
    Ok(out)
}

/// The integer division ops reject bools, and division by zero.
fn reject_bool_and_int_zero(kernel: &str, dtype: DType, db: &Tensor) -> Result<()> {
    if dtype == DType::Bool {
        return Err(Error::dtype_not_implemented(kernel, dtype));
    }
    reject_int_zero(dtype, db)
}

/// The node of `out = a - q(a, b) * b` (fmod, remainder): the gradient passes to `a`, and `b`
/// gets `-q(a, b)` times it; `names`: the node for a number `b`, and for a tensor `b`.
fn quotient_backward(
    names: [&'static str; 2],
    q: fn(&Operand, &Operand) -> Result<Tensor>,
    b: &Operand,
    [ea, eb]: [&Tensor; 2],
    out: &Tensor,
) {
    match b {
        Operand::S(_) => record(names[0], &[ea], &[out], vec![], |ctx| {
            Ok(vec![Some(ctx.grad(0)?)])
        }),
        Operand::T(_) => {
            let saved = vec![Saved::Input(ea.clone()), Saved::Input(eb.clone())];
            record(names[1], &[ea, eb], &[out], saved, move |ctx| {
                let g = ctx.grad(0)?;
                let (x, y) = (
                    Operand::T(ctx.saved[0].detach()),
                    Operand::T(ctx.saved[1].detach()),
                );
                let gb = unary::neg(&mul(&g, &q(&x, &y)?)?)?;
                Ok(vec![Some(g), Some(gb)])
            })
        }
    }
}

impl Arith for op::Fmod {
    /// C's fmod (the sign of `a`), truncating integer remainder.
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        a % b
    }
    fn fast_kernel(a: &Tensor, b: &Tensor, shape: &[usize]) -> Option<Result<Tensor>> {
        fmod_kernel::<Self>(a, b, shape)
    }
    fn fast_inplace(x: &Tensor, b: &Tensor) -> Option<Result<()>> {
        fmod_inplace::<Self>(x, b)
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        if b == 0 {
            return 0; // rejected before the kernel runs
        }
        a.wrapping_rem(b)
    }
    #[inline(always)]
    fn boolean(_: bool, _: bool) -> bool {
        false // never reached: `check` rejects bools
    }
    fn check(_: &Operand, _: &Operand, dtype: DType, db: &Tensor) -> Result<()> {
        reject_bool_and_int_zero("fmod_cpu", dtype, db)
    }
    /// d/da = 1, d/db = -trunc(a / b).
    fn backward(_: &Operand, b: &Operand, inputs: [&Tensor; 2], out: &Tensor) {
        let trunc = |x: &Operand, y: &Operand| div_rounding(x, y, true);
        quotient_backward(["FmodBackward0", "FmodBackward1"], trunc, b, inputs, out)
    }
}

impl FmodArith for op::Fmod {
    #[inline(always)]
    fn float_small<F: Math>(a: F, b: F) -> F {
        a.fmod_small(b)
    }
}

impl FmodArith for op::Rem {
    #[inline(always)]
    fn float_small<F: Math>(a: F, b: F) -> F {
        remainder(b, a.fmod_small(b))
    }
}

/// Python's remainder from C's `r = fmod(a, b)`: the sign of the divisor `b`.
#[inline(always)]
fn remainder<F: Math>(b: F, r: F) -> F {
    if r != F::c(0.0) && ((r < F::c(0.0)) != (b < F::c(0.0))) {
        r + b
    } else {
        r
    }
}

impl Arith for op::Rem {
    const NUMBER_FIRST: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, b: F) -> F {
        remainder(b, a % b)
    }
    fn fast_kernel(a: &Tensor, b: &Tensor, shape: &[usize]) -> Option<Result<Tensor>> {
        fmod_kernel::<Self>(a, b, shape)
    }
    fn fast_inplace(x: &Tensor, b: &Tensor) -> Option<Result<()>> {
        fmod_inplace::<Self>(x, b)
    }
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        if b == 0 {
            return 0; // rejected before the kernel runs
        }
        let r = a.wrapping_rem(b);
        if r != 0 && ((r < 0) != (b < 0)) {
            r + b
        } else {
            r
        }
    }
    #[inline(always)]
    fn boolean(_: bool, _: bool) -> bool {
        false // never reached: `check` rejects bools
    }
    fn check(_: &Operand, _: &Operand, dtype: DType, db: &Tensor) -> Result<()> {
        reject_bool_and_int_zero("remainder_cpu", dtype, db)
    }
    /// d/da = 1, d/db = -floor(a / b).
    fn backward(_: &Operand, b: &Operand, inputs: [&Tensor; 2], out: &Tensor) {
        let floor = |x: &Operand, y: &Operand| binary(BinOp::FloorDiv, x, y);
        quotient_backward(
            ["RemainderBackward0", "RemainderBackward1"],
            floor,
            b,
            inputs,
            out,
        )
    }
}

/// Bitwise ops exist for integers and bools only, as PyTorch's `bitwise_*_cpu` kernels.
fn reject_float(kernel: &str, dtype: DType) -> Result<()> {
    if dtype.is_float() {
        return Err(Error::dtype_not_implemented(kernel, dtype));
    }
    Ok(())
}

macro_rules! bitwise {
    ($ty:ident, $kernel:literal, $op:tt) => {
        impl Arith for op::$ty {
            #[inline(always)]
            fn float<F: Math>(a: F, _: F) -> F {
                a // never reached: `check` rejects floats
            }
            #[inline(always)]
            fn int(a: i64, b: i64) -> i64 {
                a $op b
            }
            #[inline(always)]
            fn boolean(a: bool, b: bool) -> bool {
                a $op b
            }
            fn check(_: &Operand, _: &Operand, dtype: DType, _: &Tensor) -> Result<()> {
                reject_float($kernel, dtype)
            }
        }
    };
}
bitwise!(BitAnd, "bitwise_and_cpu", &);
bitwise!(BitOr, "bitwise_or_cpu", |);
bitwise!(BitXor, "bitwise_xor_cpu", ^);

/// Shifts exist for integers only (PyTorch's `lshift_cpu` / `rshift_cpu` dispatch integral
/// types: bools and floats are rejected).
fn reject_non_integer(kernel: &str, dtype: DType) -> Result<()> {
    if dtype != DType::I64 {
        return Err(Error::dtype_not_implemented(kernel, dtype));
    }
    Ok(())
}

impl Arith for op::Shl {
    const NUMBER_FIRST: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, _: F) -> F {
        a // never reached: `check` rejects floats
    }
    /// As PyTorch: a shift by a negative amount or by 64 or more gives 0.
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        if (0..64).contains(&b) {
            ((a as u64) << b) as i64
        } else {
            0
        }
    }
    #[inline(always)]
    fn boolean(a: bool, _: bool) -> bool {
        a // never reached: `check` rejects bools
    }
    fn check(_: &Operand, _: &Operand, dtype: DType, _: &Tensor) -> Result<()> {
        reject_non_integer("lshift_cpu", dtype)
    }
}

impl Arith for op::Shr {
    const NUMBER_FIRST: bool = true;
    #[inline(always)]
    fn float<F: Math>(a: F, _: F) -> F {
        a // never reached: `check` rejects floats
    }
    /// Arithmetic shift; as PyTorch, a negative amount or one of 63 or more shifts by 63 (the
    /// sign is all that is left).
    #[inline(always)]
    fn int(a: i64, b: i64) -> i64 {
        if (0..63).contains(&b) {
            a >> b
        } else {
            a >> 63
        }
    }
    #[inline(always)]
    fn boolean(a: bool, _: bool) -> bool {
        a // never reached: `check` rejects bools
    }
    fn check(_: &Operand, _: &Operand, dtype: DType, _: &Tensor) -> Result<()> {
        reject_non_integer("rshift_cpu", dtype)
    }
}

// ---- comparisons ----

macro_rules! comparison {
    ($ty:ident, |$a:ident, $b:ident| $test:expr) => {
        impl Compare for op::$ty {
            #[inline(always)]
            fn test<T: Elem>($a: T, $b: T) -> bool {
                $test
            }
        }
    };
}
comparison!(Eq, |a, b| a == b);
comparison!(Ne, |a, b| a != b);
comparison!(Lt, |a, b| a < b);
comparison!(Le, |a, b| a <= b);
comparison!(Gt, |a, b| a > b);
comparison!(Ge, |a, b| a >= b);

macro_rules! logical {
    ($ty:ident, |$a:ident, $b:ident| $test:expr) => {
        impl Compare for op::$ty {
            const NUMBER_OTHER: bool = false;
            #[inline(always)]
            fn test<T: Elem>(a: T, b: T) -> bool {
                let ($a, $b) = (a.is_true(), b.is_true());
                $test
            }
        }
    };
}
logical!(LogicalAnd, |a, b| a && b);
logical!(LogicalOr, |a, b| a || b);
logical!(LogicalXor, |a, b| a != b);

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
    let out = dispatch_all!(dtype, T => {
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
        let saved = vec![Saved::Input(cond.clone())];
        record("WhereBackward0", &[&ea, &eb], &[&out], saved, |ctx| {
            let (g, c) = (ctx.grad(0)?, ctx.saved[0].clone());
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

/// `masked_fill(mask, value)` with a 0-d tensor `value` (MaskedFillBackward1): the value gets
/// the sum of the filled elements' gradients.
pub fn masked_fill_tensor(t: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    if value.ndim() != 0 {
        return Err(Error::Runtime(format!(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            value.ndim()
        )));
    }
    let v = super::to_dtype(value, t.dtype())?;
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        masked_fill(&t.detach(), mask, v.item()?)?
    };
    if needs_grad(&[t, &v]) {
        let saved = vec![Saved::Input(mask.clone())];
        record("MaskedFillBackward1", &[t, &v], &[&out], saved, |ctx| {
            let (g, mask) = (ctx.grad(0)?, &ctx.saved[0]);
            let zero = Scalar::Float(0.0);
            let gt = masked_fill(&g, mask, zero)?;
            let picked = where_op(mask, &Operand::T(g), &Operand::S(zero))?;
            Ok(vec![Some(gt), Some(super::reduce::sum(&picked)?)])
        });
    }
    Ok(out)
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
        let saved = vec![Saved::Input(mask.clone())];
        record("MaskedFillBackward0", &[t], &[&out], saved, |ctx| {
            Ok(vec![Some(masked_fill(
                &ctx.grad(0)?,
                &ctx.saved[0],
                Scalar::Float(0.0),
            )?)])
        });
    }
    Ok(out)
}
