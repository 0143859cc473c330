//! `addcmul`, `addcdiv` and `lerp`, PyTorch's fused pointwise ops. The forward is one pass of
//! the elementwise engine over the (broadcast, strided) operands, computed as PyTorch's CPU
//! kernels compute it so that float32 results agree bit for bit: addcmul `fma(value * t1, t2,
//! self)`, addcdiv `self + value * t1 / t2`, lerp `fma(w, end - self, self)` for |w| < 0.5,
//! else `fma(w - 1, end - self, end)`. The in-place forms write self in one pass. The
//! derivatives are derivatives.yaml's formulas in differentiable ops (AddcmulBackward0,
//! AddcdivBackward0, LerpBackward0 for a number weight, LerpBackward1 for a tensor weight).

use super::binary::{binary, mul, result_type, BinOp, Operand};
use super::inplace::{apply_inplace, check_inplace, check_no_internal_overlap};
use super::inplace::{check_no_partial_overlap, check_result_cast};
use super::unary::neg;
use crate::autograd::graph::{needs_grad, record, wants_grad, Saved};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::elementwise::{self, Map2, Map3};
use crate::kernels::simd::Real;
use crate::layout::{broadcast_shapes, fmt_list};
use crate::storage::Elem;
use crate::tensor::Tensor;
use std::sync::Arc;

/// Which of the two `addc` ops: `self + value * t1 * t2` or `self + value * t1 / t2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addc {
    Mul,
    Div,
}

const ADDCDIV_INTEGER_ERROR: &str = "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.";

impl Addc {
    fn node_name(self) -> &'static str {
        match self {
            Addc::Mul => "AddcmulBackward0",
            Addc::Div => "AddcdivBackward0",
        }
    }

    /// PyTorch's checks of the operands, in its order, and the result dtype.
    fn result_dtype(self, x: &Tensor, t1: &Tensor, t2: &Tensor) -> Result<DType> {
        if self == Addc::Div && !t1.dtype().is_float() && !t2.dtype().is_float() {
            return Err(Error::Runtime(ADDCDIV_INTEGER_ERROR.into()));
        }
        Ok(result_type(&[&x.into(), &t1.into(), &t2.into()]))
    }

    /// The kernel's own refusal (after the shape and in-place checks): addcmul has no bool
    /// kernel (addcdiv's result is always floating).
    fn check_kernel(self, dtype: DType) -> Result<()> {
        if self == Addc::Mul && dtype == DType::Bool {
            return Err(Error::dtype_not_implemented("addcmul_cpu_out", dtype));
        }
        Ok(())
    }
}

/// The broadcast shape of the operands, PyTorch's error naming the first mismatch.
fn broadcast_all(ts: &[&Tensor]) -> Result<Vec<usize>> {
    ts.iter()
        .try_fold(Vec::new(), |s, t| broadcast_shapes(&s, t.shape()))
}

/// Runs `f` on the elements of the tensors (all of element type `T`), one read lock per
/// storage (see `super::storage_owners`).
fn read_each<T: Elem, R, const K: usize>(ts: [&Tensor; K], f: impl FnOnce([&[T]; K]) -> R) -> R {
    let opts: Vec<Option<&Tensor>> = ts.iter().map(|&t| Some(t)).collect();
    let owners = super::storage_owners(&opts);
    let guards: Vec<Option<crate::storage::ReadGuard<'_, T>>> = (0..K)
        .map(|i| (owners[i] == i).then(|| ts[i].storage().read::<T>()))
        .collect();
    let slices: [&[T]; K] = std::array::from_fn(|i| {
        &**guards[owners[i]]
            .as_ref()
            .expect("the owner holds the lock")
    });
    f(slices)
}

/// `f(x, a, b)` per element over `shape`, all three in `T`, laid out as PyTorch lays it out.
fn map3<T: Elem, F: Map3<T, T, T, T> + Send>(
    [x, a, b]: [&Tensor; 3],
    shape: &[usize],
    f: F,
) -> Result<Tensor> {
    let (lx, la, lb) = (
        x.layout().broadcast_to(shape)?,
        a.layout().broadcast_to(shape)?,
        b.layout().broadcast_to(shape)?,
    );
    read_each([x, a, b], |[dx, da, db]| {
        elementwise::map_ternary(dx, &lx, da, &la, db, &lb, f).map(Tensor::from_mapped)
    })
}

/// `f(x, a)` per element over `shape`, both in `T`.
fn map2<T: Elem, F: Map2<T, T, T> + Send>(
    [x, a]: [&Tensor; 2],
    shape: &[usize],
    f: F,
) -> Result<Tensor> {
    let (lx, la) = (
        x.layout().broadcast_to(shape)?,
        a.layout().broadcast_to(shape)?,
    );
    read_each([x, a], |[dx, da]| {
        elementwise::map_binary(dx, &lx, da, &la, false, f).map(Tensor::from_mapped)
    })
}

/// In place `x = f(x, a, b)` over x's own elements, `a` and `b` in x's element type `T`,
/// broadcastable to x and not sharing its memory.
fn write3<T: Elem, F: Map3<T, T, T, T> + Send>(
    x: &Tensor,
    a: &Tensor,
    b: &Tensor,
    f: F,
) -> Result<()> {
    let (la, lb) = (
        a.layout().broadcast_to(x.shape())?,
        b.layout().broadcast_to(x.shape())?,
    );
    read_each([a, b], |[da, db]| {
        let mut dx = x.storage().write::<T>();
        elementwise::map_inplace3(&mut dx, x.layout(), da, &la, db, &lb, false, f);
    });
    Ok(())
}

/// In place `x = f(x, a)`, as `write3`.
fn write2<T: Elem, F: Map2<T, T, T> + Send>(x: &Tensor, a: &Tensor, f: F) -> Result<()> {
    let la = a.layout().broadcast_to(x.shape())?;
    let da = a.storage().read::<T>();
    let mut dx = x.storage().write::<T>();
    elementwise::map_inplace2(&mut dx, x.layout(), &da, &la, false, f);
    Ok(())
}

/// `t`'s values in `dtype`'s compute dtype (float16 -> float32, int8 -> int64, ...), for
/// kernels to read (no autograd).
fn kernel_data(t: &Tensor, dtype: DType) -> Result<Tensor> {
    super::widen(&Operand::T(t.clone()).data(dtype)?)
}

// ---- addcmul, addcdiv ----

/// The element functions (value `v` already in the compute type).
#[inline(always)]
fn addcmul_f<T: Real>(v: T) -> impl Fn(T, T, T) -> T + Send + Sync + Copy {
    move |s, a, b| (v * a).mul_add(b, s)
}
#[inline(always)]
fn addcdiv_f<T: Real>(v: T) -> impl Fn(T, T, T) -> T + Send + Sync + Copy {
    move |s, a, b| s + v * a / b
}
#[inline(always)]
fn addcmul_i(v: i64) -> impl Fn(i64, i64, i64) -> i64 + Send + Sync + Copy {
    move |s, a, b| s.wrapping_add(v.wrapping_mul(a).wrapping_mul(b))
}

/// `op` over the operands (already in the compute dtype `cd`), out of place.
fn addc_kernel(
    op: Addc,
    ts: [&Tensor; 3],
    shape: &[usize],
    cd: DType,
    v: Scalar,
) -> Result<Tensor> {
    match (op, cd) {
        (Addc::Mul, DType::F32) => map3(ts, shape, addcmul_f(v.to_f64() as f32)),
        (Addc::Mul, DType::F64) => map3(ts, shape, addcmul_f(v.to_f64())),
        (Addc::Div, DType::F32) => map3(ts, shape, addcdiv_f(v.to_f64() as f32)),
        (Addc::Div, DType::F64) => map3(ts, shape, addcdiv_f(v.to_f64())),
        (Addc::Mul, DType::I64) => map3(ts, shape, addcmul_i(v.to_i64())),
        (_, d) => Err(Error::dtype_not_implemented("addcdiv_cpu_out", d)),
    }
}

/// `op` written into `x` (float32, float64 or int64; `a` and `b` in its dtype), as
/// `addc_kernel`.
fn addc_kernel_inplace(op: Addc, x: &Tensor, a: &Tensor, b: &Tensor, v: Scalar) -> Result<()> {
    match (op, x.dtype()) {
        (Addc::Mul, DType::F32) => write3(x, a, b, addcmul_f(v.to_f64() as f32)),
        (Addc::Mul, DType::F64) => write3(x, a, b, addcmul_f(v.to_f64())),
        (Addc::Div, DType::F32) => write3(x, a, b, addcdiv_f(v.to_f64() as f32)),
        (Addc::Div, DType::F64) => write3(x, a, b, addcdiv_f(v.to_f64())),
        (Addc::Mul, DType::I64) => write3(x, a, b, addcmul_i(v.to_i64())),
        (_, d) => Err(Error::dtype_not_implemented("addcdiv_cpu_out", d)),
    }
}

/// `addcmul(x, t1, t2, value=value)` / `addcdiv(...)`: `x + value * t1 * t2` (or `/ t2`),
/// broadcast and promoted (`value` does not take part in promotion; integer results truncate
/// it), in one pass.
pub fn addc(op: Addc, x: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<Tensor> {
    let dtype = op.result_dtype(x, t1, t2)?;
    let shape = broadcast_all(&[x, t1, t2])?;
    op.check_kernel(dtype)?;
    let v = value.to_kernel(dtype)?;
    let cd = dtype.compute();
    let (dx, d1, d2) = (
        kernel_data(x, dtype)?,
        kernel_data(t1, dtype)?,
        kernel_data(t2, dtype)?,
    );
    let out = super::narrow_to(addc_kernel(op, [&dx, &d1, &d2], &shape, cd, v)?, dtype)?;
    if out.dtype().is_float() && needs_grad(&[x, t1, t2]) {
        addc_node(op, [x, t1, t2], &out, value);
    }
    Ok(out)
}

/// `x.addcmul_(t1, t2, value=value)` / `x.addcdiv_(...)`: one pass over x's own elements when
/// the result has x's dtype (float32, float64, int64) and no operand shares x's memory, also
/// while a graph is recorded (x then takes the op's node); else computed out of place and
/// written back.
pub fn addc_(op: Addc, x: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<()> {
    check_inplace(x)?;
    let dtype = op.result_dtype(x, t1, t2)?;
    check_written(x, &[t1, t2])?;
    check_result_cast(dtype, x.dtype())?;
    op.check_kernel(dtype)?;
    let v = value.to_kernel(dtype)?;
    if direct_ok(x, &[t1, t2], dtype, false) {
        let (d1, d2) = (kernel_data(t1, dtype)?, kernel_data(t2, dtype)?);
        addc_kernel_inplace(op, x, &d1, &d2, v)?;
        x.bump_version();
        if needs_grad(&[x, t1, t2]) {
            addc_node(op, [x, t1, t2], x, value);
        }
        return Ok(());
    }
    apply_inplace(x, &[t1, t2], |s| addc(op, s, t1, t2, value))
}

/// Records AddcmulBackward0 / AddcdivBackward0 (derivatives.yaml, in PyTorch's operation order):
/// addcmul: self `grad`, tensor1 `grad * (tensor2 * value)`, tensor2 `grad * (tensor1 * value)`;
/// addcdiv: self `grad`, tensor1 `grad * (value / tensor2)`, tensor2
/// `-grad * (value * tensor1 / (tensor2 * tensor2))`. Broadcast gradients are summed back to
/// each input's shape by the engine. Saves tensor2 when tensor1 needs a gradient and tensor1
/// when tensor2 does (addcdiv's tensor2 gradient needs both).
fn addc_node(op: Addc, [x, t1, t2]: [&Tensor; 3], out: &Tensor, value: Scalar) {
    let (n1, n2) = (wants_grad(t1), wants_grad(t2));
    let save1 = n2;
    let save2 = n1 || (op == Addc::Div && n2);
    let mut saved = Vec::new();
    let mut slot = |t: &Tensor, wanted: bool| {
        wanted.then(|| {
            saved.push(Saved::Input(t.clone()));
            saved.len() - 1
        })
    };
    let (i1, i2) = (slot(t1, save1), slot(t2, save2));
    record(op.node_name(), &[x, t1, t2], &[out], saved, move |ctx| {
        let g = ctx.grad(0)?;
        let saved = |i: Option<usize>| &ctx.saved[i.expect("saved when needed")];
        let gx = ctx.grad_if(0, || Ok(g.clone()))?;
        let (g1, g2) = match op {
            Addc::Mul => (
                ctx.grad_if(1, || mul(&g, &times(saved(i2), value)?))?,
                ctx.grad_if(2, || mul(&g, &times(saved(i1), value)?))?,
            ),
            Addc::Div => {
                let g1 = ctx.grad_if(1, || {
                    mul(
                        &g,
                        &binary(BinOp::Div, &Operand::S(value), &saved(i2).into())?,
                    )
                })?;
                let g2 = ctx.grad_if(2, || {
                    let (t1, t2) = (saved(i1), saved(i2));
                    let q = binary(
                        BinOp::Div,
                        &(&times(t1, value)?).into(),
                        &(&mul(t2, t2)?).into(),
                    )?;
                    mul(&neg(&g)?, &q)
                })?;
                (g1, g2)
            }
        };
        Ok(vec![gx, g1, g2])
    });
}

/// `t * value` (differentiable); `t` itself for a value of 1 and a float `t`, where the product
/// is `t` exactly.
fn times(t: &Tensor, value: Scalar) -> Result<Tensor> {
    if t.dtype().is_float() && !matches!(value, Scalar::Bool(_)) && value.to_f64() == 1.0 {
        return Ok(t.clone());
    }
    binary(BinOp::Mul, &t.into(), &Operand::S(value))
}

/// TensorIterator's checks of an in-place op's output `x` and its inputs `others`, in its
/// order: x has no two elements in one place and meets no input partially, and the operands
/// broadcast to x's shape.
fn check_written(x: &Tensor, others: &[&Tensor]) -> Result<()> {
    check_no_internal_overlap(x)?;
    for t in others {
        check_no_partial_overlap(x, t)?;
    }
    let mut all = vec![x];
    all.extend_from_slice(others);
    let shape = broadcast_all(&all)?;
    if shape != x.shape() {
        return Err(Error::Runtime(format!(
            "output with shape {} doesn't match the broadcast shape {}",
            fmt_list(x.shape()),
            fmt_list(&shape)
        )));
    }
    Ok(())
}

/// Whether an in-place op may write x's own elements in one pass: the result has x's dtype
/// (float32, float64 or int64), x has no two elements in one place, no other operand shares
/// x's memory, and either no graph is recorded or x can take the op's node itself (a float
/// tensor that is not a view, and the op's backward does not need x's old value,
/// `saves_self`).
fn direct_ok(x: &Tensor, others: &[&Tensor], dtype: DType, saves_self: bool) -> bool {
    let dt = x.dtype();
    if !matches!(dt, DType::F32 | DType::F64 | DType::I64)
        || dtype != dt
        || !x.layout().is_non_overlapping()
        || others.iter().any(|t| Arc::ptr_eq(t.storage(), x.storage()))
    {
        return false;
    }
    let mut all = vec![x];
    all.extend_from_slice(others);
    !needs_grad(&all) || !saves_self && dt.is_float() && x.meta().view_base.is_none()
}

// ---- lerp ----

/// PyTorch's checks of lerp's operands: `end` (and a weight tensor with dims) must have
/// self's dtype.
fn lerp_check(x: &Tensor, end: &Tensor, weight: &Operand) -> Result<()> {
    let mismatch = |what: &str, d: DType| {
        Err(Error::Runtime(format!(
            "expected dtype {} for `{what}` but got dtype {}",
            x.dtype().type_meta_name(),
            d.type_meta_name()
        )))
    };
    if end.dtype() != x.dtype() {
        return mismatch("end", end.dtype());
    }
    if let Operand::T(w) = weight {
        if w.ndim() != 0 && w.dtype() != x.dtype() {
            return mismatch("weight", w.dtype());
        }
    }
    Ok(())
}

/// The dtype lerp computes in and returns: self's, or for a tensor weight PyTorch's promotion
/// of the three (a 0-d float weight makes an integer self's result float; a weight with dims
/// has self's dtype).
fn lerp_dtype(x: &Tensor, end: &Tensor, weight: &Operand) -> DType {
    match weight {
        Operand::T(w) => result_type(&[&x.into(), &end.into(), &w.into()]),
        Operand::S(_) => x.dtype(),
    }
}

/// lerp's kernels are floating only.
fn lerp_check_kernel(dtype: DType, weight: &Operand) -> Result<()> {
    if !dtype.is_float() {
        let kernel = match weight {
            Operand::T(_) => "lerp_kernel_tensor",
            Operand::S(_) => "lerp_kernel_scalar",
        };
        return Err(Error::dtype_not_implemented(kernel, dtype));
    }
    Ok(())
}

/// The element function of lerp with a number weight `w`: the formula is chosen once.
fn lerp_scalar<T: Real>(w: T, small: bool) -> impl Fn(T, T) -> T + Send + Sync + Copy {
    let c = if small { w } else { w - T::of(1.0) };
    move |s, e| c.mul_add(e - s, if small { s } else { e })
}

/// The element function of lerp with a tensor weight (selects, so that it vectorises).
#[inline(always)]
fn lerp_tensor<T: Real>(s: T, e: T, w: T) -> T {
    let small = w > T::of(-0.5) && w < T::of(0.5);
    let (c, base) = if small { (w, s) } else { (w - T::of(1.0), e) };
    c.mul_add(e - s, base)
}

/// The kernel weight of a number weight (c10's `weight.to<opmath_t>()`) and whether it takes
/// the small-weight formula (PyTorch tests |w| < 0.5 on the converted weight).
fn scalar_weight(w: Scalar, dtype: DType) -> Result<(f64, bool)> {
    let v = w.to_kernel(dtype)?.to_f64();
    let v = if dtype.compute() == DType::F32 {
        v as f32 as f64
    } else {
        v
    };
    Ok((v, v.abs() < 0.5))
}

/// `lerp(x, end, weight)`: `x + weight * (end - x)` as PyTorch computes it, weight a number or
/// a tensor (broadcast), in one pass; result in x's dtype (see `lerp_dtype`).
pub fn lerp(x: &Tensor, end: &Tensor, weight: &Operand) -> Result<Tensor> {
    lerp_check(x, end, weight)?;
    let mut ins = vec![x, end];
    ins.extend(weight.tensor());
    let shape = broadcast_all(&ins)?;
    let dtype = lerp_dtype(x, end, weight);
    lerp_check_kernel(dtype, weight)?;
    let (dx, de) = (kernel_data(x, dtype)?, kernel_data(end, dtype)?);
    let out = match weight {
        Operand::S(w) => {
            let (w, small) = scalar_weight(*w, dtype)?;
            match dx.dtype() {
                DType::F32 => map2([&dx, &de], &shape, lerp_scalar(w as f32, small))?,
                _ => map2([&dx, &de], &shape, lerp_scalar(w, small))?,
            }
        }
        Operand::T(w) => {
            let dw = kernel_data(w, dtype)?;
            match dx.dtype() {
                DType::F32 => map3([&dx, &de, &dw], &shape, lerp_tensor::<f32>)?,
                _ => map3([&dx, &de, &dw], &shape, lerp_tensor::<f64>)?,
            }
        }
    };
    let out = super::narrow_to(out, dtype)?;
    if needs_grad(&ins) {
        lerp_node(x, end, weight, &out);
    }
    Ok(out)
}

/// `x.lerp_(end, weight)`: one pass over x's own elements for float32 / float64 when no
/// operand shares x's memory, also while a graph is recorded unless the weight needs a
/// gradient (its derivative reads x's old value); else out of place and written back.
pub fn lerp_(x: &Tensor, end: &Tensor, weight: &Operand) -> Result<()> {
    check_inplace(x)?;
    lerp_check(x, end, weight)?;
    let mut others = vec![end];
    others.extend(weight.tensor());
    check_written(x, &others)?;
    let dtype = lerp_dtype(x, end, weight);
    check_result_cast(dtype, x.dtype())?;
    lerp_check_kernel(dtype, weight)?;
    let saves_self = weight.tensor().is_some_and(wants_grad);
    if direct_ok(x, &others, dtype, saves_self) {
        let de = kernel_data(end, dtype)?;
        match weight {
            Operand::S(w) => {
                let (w, small) = scalar_weight(*w, dtype)?;
                match dtype {
                    DType::F32 => write2(x, &de, lerp_scalar(w as f32, small))?,
                    _ => write2(x, &de, lerp_scalar(w, small))?,
                }
            }
            Operand::T(w) => {
                let dw = kernel_data(w, dtype)?;
                match dtype {
                    DType::F32 => write3(x, &de, &dw, lerp_tensor::<f32>)?,
                    _ => write3(x, &de, &dw, lerp_tensor::<f64>)?,
                }
            }
        }
        x.bump_version();
        let mut ins = vec![x];
        ins.extend_from_slice(&others);
        if needs_grad(&ins) {
            lerp_node(x, end, weight, x);
        }
        return Ok(());
    }
    apply_inplace(x, &others, |s| lerp(s, end, weight))
}

/// Records LerpBackward0 (number weight: self `grad * (1 - weight)` with `1 - weight` in
/// double, end `grad * weight`) or LerpBackward1 (tensor weight: self `grad * (1 - weight)`,
/// end `grad * weight`, weight `grad * (end - self)`), as derivatives.yaml.
fn lerp_node(x: &Tensor, end: &Tensor, weight: &Operand, out: &Tensor) {
    let w = match weight {
        Operand::S(w) => {
            let w = *w;
            record("LerpBackward0", &[x, end], &[out], vec![], move |ctx| {
                let g = ctx.grad(0)?;
                let one_minus = Operand::S(Scalar::Float(1.0 - w.to_f64()));
                Ok(vec![
                    ctx.grad_if(0, || binary(BinOp::Mul, &(&g).into(), &one_minus))?,
                    ctx.grad_if(1, || binary(BinOp::Mul, &(&g).into(), &Operand::S(w)))?,
                ])
            });
            return;
        }
        Operand::T(w) => w,
    };
    // the weight when self or end needs a gradient, self and end when the weight does
    let need_w = wants_grad(x) || wants_grad(end);
    let mut saved = Vec::new();
    if need_w {
        saved.push(Saved::Input(w.clone()));
    }
    let need_ends = wants_grad(w);
    if need_ends {
        saved.push(Saved::Input(x.clone()));
        saved.push(Saved::Input(end.clone()));
    }
    record("LerpBackward1", &[x, end, w], &[out], saved, move |ctx| {
        let g = ctx.grad(0)?;
        let w = need_w.then(|| ctx.saved[0].clone());
        let w = || w.clone().expect("saved when needed");
        let gx = ctx.grad_if(0, || {
            let one_minus = binary(BinOp::Sub, &Operand::S(Scalar::Int(1)), &(&w()).into())?;
            mul(&g, &one_minus)
        })?;
        let ge = ctx.grad_if(1, || mul(&g, &w()))?;
        let gw = ctx.grad_if(2, || {
            let k = need_w as usize;
            let (s, e) = (&ctx.saved[k], &ctx.saved[k + 1]);
            mul(&g, &super::binary::sub(e, s)?)
        })?;
        Ok(vec![gx, ge, gw])
    });
}
