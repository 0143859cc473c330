//! mm, bmm, mv, dot, outer and matmul with broadcast batch dims.

use super::binary::mul;
use super::shape::{squeeze, sum_to, transpose, unsqueeze};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::alloc;
use crate::kernels::matmul::{matmul as kmatmul, Mat};
use crate::kernels::parallel;
use crate::layout::{broadcast_shapes, Layout};
use crate::storage::Elem;
use crate::tensor::Tensor;

fn check_same_dtype(a: &Tensor, b: &Tensor) -> Result<DType> {
    if a.dtype() != b.dtype() {
        return Err(Error::Runtime(format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            a.dtype().torch_name().trim_start_matches("torch."),
            b.dtype().torch_name().trim_start_matches("torch.")
        )));
    }
    if a.dtype() == DType::Bool {
        return Err(Error::NotImplemented(
            "\"addmm_impl_cpu_\" not implemented for 'Bool'".into(),
        ));
    }
    Ok(a.dtype())
}

/// Batched product over layouts `(batch..., n, k) @ (batch..., k, m)` already broadcast to the
/// same batch shape; parallel over the batch when the matrices are small.
fn batched_typed<T: Elem>(
    a: &Tensor,
    la: &Layout,
    b: &Tensor,
    lb: &Layout,
    n: usize,
    k: usize,
    m: usize,
) -> Result<Vec<T>> {
    let nb = la.ndim() - 2;
    let batch: usize = la.shape[..nb].iter().product();
    let mut out = alloc::<T>(crate::layout::checked_numel(&[batch, n, m])?)?;
    out.resize(batch * n * m, T::default());
    let da = a.storage().read::<T>();
    let db = b.storage().read::<T>();
    let batch_off = |l: &Layout, mut i: usize| -> usize {
        let mut off = l.offset;
        for d in (0..nb).rev() {
            off += (i % l.shape[d]) * l.strides[d];
            i /= l.shape[d];
        }
        off
    };
    let (ars, acs) = (la.strides[nb], la.strides[nb + 1]);
    let (brs, bcs) = (lb.strides[nb], lb.strides[nb + 1]);
    let one = |i: usize, dst: &mut [T], serial: bool| {
        let am = Mat {
            data: &da,
            offset: batch_off(la, i),
            rs: ars,
            cs: acs,
        };
        let bm = Mat {
            data: &db,
            offset: batch_off(lb, i),
            rs: brs,
            cs: bcs,
        };
        if serial {
            crate::kernels::matmul::matmul_serial(n, k, m, am, bm, dst, false);
        } else {
            kmatmul(n, k, m, am, bm, dst, false);
        }
    };
    // Whole matrices per thread beat splitting each product when they are small, or when the
    // batch shares evenly (8 products of 64x128x64: 34 us against 52 split per product).
    let threads = parallel::num_threads().max(1);
    if batch > 1
        && n * m > 0
        && crate::kernels::par_ok(batch * n * k * m, 1 << 18)
        && (n * k * m < 1 << 18 || batch.is_multiple_of(threads) || batch >= 4 * threads)
    {
        // one run of consecutive matrices per thread
        let per = batch.div_ceil(threads);
        let runs: Vec<&mut [T]> = out.chunks_mut(per * n * m).collect();
        parallel::map_each(runs, &|r, run| {
            for (i, d) in run.chunks_mut(n * m).enumerate() {
                one(r * per + i, d, true);
            }
        });
    } else if n * m > 0 {
        out.chunks_mut(n * m)
            .enumerate()
            .for_each(|(i, d)| one(i, d, false));
    }
    Ok(out)
}

/// Forward only: `a (..., n, k) @ b (..., k, m)` with broadcast batch dims (both >= 2-D).
fn matmul_nd(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let dtype = check_same_dtype(a, b)?;
    if dtype.compute() != dtype {
        // float16 / bfloat16 accumulate in float32, narrow ints in int64 (wrapping back)
        let (wa, wb) = (super::widen(a)?, super::widen(b)?);
        return super::narrow_to(matmul_nd(&wa, &wb)?, dtype);
    }
    let (an, bn) = (a.ndim(), b.ndim());
    let (n, k) = (a.shape()[an - 2], a.shape()[an - 1]);
    let (k2, m) = (b.shape()[bn - 2], b.shape()[bn - 1]);
    if k != k2 {
        return Err(Error::Runtime(if an == 2 && bn == 2 {
            format!("mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
        } else {
            format!(
                "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
                a.shape()[..an - 2].iter().product::<usize>(), k,
                b.shape()[..bn - 2].iter().product::<usize>(), k2
            )
        }));
    }
    let batch = broadcast_shapes(&a.shape()[..an - 2], &b.shape()[..bn - 2])?;
    let mut sa = batch.clone();
    sa.extend([n, k]);
    let mut sb = batch.clone();
    sb.extend([k, m]);
    let la = a.layout().broadcast_to(&sa)?;
    let lb = b.layout().broadcast_to(&sb)?;
    let mut so = batch;
    so.extend([n, m]);
    dispatch!(dtype, T => Tensor::from_vec(batched_typed::<T>(a, &la, b, &lb, n, k, m)?, so))
}

/// Forward only: `bias + a @ b` for matrices, the bias (broadcastable to the output) written
/// into the output first and the product accumulated onto it by gemm (PyTorch's addmm).
fn addmm_values(bias: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let dtype = check_same_dtype(a, b)?;
    if dtype.compute() != dtype && bias.dtype() == dtype {
        let (wbias, wa, wb) = (super::widen(bias)?, super::widen(a)?, super::widen(b)?);
        return super::narrow_to(addmm_values(&wbias, &wa, &wb)?, dtype);
    }
    if a.ndim() != 2 {
        return Err(Error::Runtime(
            "mat1 must be a matrix, got {}-D tensor".replace("{}", &a.ndim().to_string()),
        ));
    }
    if b.ndim() != 2 {
        return Err(Error::Runtime(
            "mat2 must be a matrix, got {}-D tensor".replace("{}", &b.ndim().to_string()),
        ));
    }
    let (n, k, k2, m) = (a.shape()[0], a.shape()[1], b.shape()[0], b.shape()[1]);
    if k != k2 {
        return Err(Error::Runtime(format!(
            "mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})"
        )));
    }
    if bias.dtype() != dtype {
        return Err(Error::Runtime(format!(
            "self and mat2 must have the same dtype, but got {} and {}",
            bias.dtype().kernel_name(),
            dtype.kernel_name()
        )));
    }
    let bl = bias.layout().broadcast_to(&[n, m]).map_err(|_| {
        Error::Runtime(format!(
            "The expanded size of the tensor ({m}) must match the existing size ({}) at non-singleton dimension 1.  Target sizes: [{n}, {m}].  Tensor sizes: {}",
            bias.shape().last().copied().unwrap_or(1),
            crate::layout::fmt_list(bias.shape())
        ))
    })?;
    dispatch!(dtype, T => {
        let mut out = {
            let bd = bias.storage().read::<T>();
            if bias.ndim() == 1 && bl.strides == [0, 1] {
                crate::kernels::matmul::repeat_row(&bd[bl.offset..bl.offset + m], n)?
            } else {
                crate::kernels::elementwise::unary(&bd, &bl, |x: T| x)?
            }
        };
        {
            let da = a.storage().read::<T>();
            let db = b.storage().read::<T>();
            let (la, lb) = (a.layout(), b.layout());
            let am = Mat { data: &da, offset: la.offset, rs: la.strides[0], cs: la.strides[1] };
            let bm = Mat { data: &db, offset: lb.offset, rs: lb.strides[0], cs: lb.strides[1] };
            kmatmul(n, k, m, am, bm, &mut out, true);
        }
        Tensor::from_vec(out, vec![n, m])
    })
}

fn mt(t: &Tensor) -> Result<Tensor> {
    transpose(t, -2, -1)
}

/// `mm` (MmBackward0).
pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let a = &super::autocast::lower(a)?;
    let b = &super::autocast::lower(b)?;
    if a.ndim() != 2 {
        return Err(Error::Runtime("self must be a matrix".into()));
    }
    if b.ndim() != 2 {
        return Err(Error::Runtime("mat2 must be a matrix".into()));
    }
    let out = matmul_nd(a, b)?;
    record_nd("MmBackward0", a, b, &out);
    Ok(out)
}

/// `bmm` (BmmBackward0): 3-D operands with the same batch size.
pub fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let a = &super::autocast::lower(a)?;
    let b = &super::autocast::lower(b)?;
    if a.ndim() != 3 {
        return Err(Error::Runtime("batch1 must be a 3D tensor".into()));
    }
    if b.ndim() != 3 {
        return Err(Error::Runtime("batch2 must be a 3D tensor".into()));
    }
    if a.shape()[0] != b.shape()[0] || a.shape()[2] != b.shape()[1] {
        return Err(Error::Runtime(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
            a.shape()[0], a.shape()[2], b.shape()[0], b.shape()[1]
        )));
    }
    let out = matmul_nd(a, b)?;
    record_nd("BmmBackward0", a, b, &out);
    Ok(out)
}

/// `a @ b` for 2-D operands, laid out like `like`: a column-major `like` (a transposed
/// matrix, e.g. `w.t()` in `x @ w.t()`) gets `(b.T @ a.T).T`, so the gradient PyTorch's
/// mm_mat2_backward would produce keeps its parameter's layout and AccumulateGrad can take it
/// without a copy.
pub fn mm_like(a: &Tensor, b: &Tensor, like: &Tensor) -> Result<Tensor> {
    let l = like.layout();
    let col_major = like.ndim() == 2 && l.strides[0] == 1 && l.shape[0] > 1 && l.shape[1] > 1;
    if col_major && a.ndim() == 2 && b.ndim() == 2 {
        super::shape::t2(&mm(&super::shape::t2(b)?, &super::shape::t2(a)?)?)
    } else {
        mm(a, b)
    }
}

fn record_nd(name: &'static str, a: &Tensor, b: &Tensor, out: &Tensor) {
    if !needs_grad(&[a, b]) {
        return;
    }
    let saved = vec![Saved::Input(a.clone()), Saved::Input(b.clone())];
    record(name, &[a, b], &[out], saved, |ctx| {
        let g = ctx.grad(0)?;
        let (a, b) = (&ctx.saved[0], &ctx.saved[1]);
        let two_d = a.ndim() == 2 && b.ndim() == 2 && g.ndim() == 2;
        let ga = if ctx.needs(0) {
            Some(if two_d {
                mm_like(&g, &mt(b)?, a)?
            } else {
                sum_to(&matmul(&g, &mt(b)?)?, a.shape())?
            })
        } else {
            None
        };
        let gb = if ctx.needs(1) {
            Some(if two_d {
                mm_like(&mt(a)?, &g, b)?
            } else {
                sum_to(&matmul(&mt(a)?, &g)?, b.shape())?
            })
        } else {
            None
        };
        Ok(vec![ga, gb])
    });
}

/// The float dot product of two 1-D tensors of one length, read where they lie (one read lock
/// when they share a storage).
fn dot_kernel<T>(a: &Tensor, b: &Tensor) -> T
where
    T: crate::storage::Elem + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let (la, lb) = (a.layout(), b.layout());
    let n = la.shape[0];
    let da = a.storage().read::<T>();
    let (oa, sa, ob, sb) = (la.offset, la.strides[0], lb.offset, lb.strides[0]);
    if std::sync::Arc::ptr_eq(a.storage(), b.storage()) {
        crate::kernels::matmul::dot(&da, oa, sa, &da, ob, sb, n)
    } else {
        let db = b.storage().read::<T>();
        crate::kernels::matmul::dot(&da, oa, sa, &db, ob, sb, n)
    }
}

/// `dot` (DotBackward0).
pub fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 1 || b.ndim() != 1 {
        return Err(Error::Runtime(format!(
            "1D tensors expected, but got {}D and {}D tensors",
            a.ndim(),
            b.ndim()
        )));
    }
    if a.numel() != b.numel() {
        return Err(Error::Runtime(format!(
            "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
            a.numel(), b.numel(), a.numel(), b.numel()
        )));
    }
    check_same_dtype(a, b)?;
    let out = match a.dtype() {
        DType::F32 => Tensor::from_vec(vec![dot_kernel::<f32>(a, b)], vec![])?,
        DType::F64 => Tensor::from_vec(vec![dot_kernel::<f64>(a, b)], vec![])?,
        _ => {
            let a2 = a.with_layout(a.layout().unsqueeze(0));
            let b2 = b.with_layout(b.layout().unsqueeze(1));
            let out = matmul_nd(&a2, &b2)?;
            out.with_layout(Layout::contiguous(vec![]))
        }
    };
    if needs_grad(&[a, b]) {
        let saved = vec![Saved::Input(a.clone()), Saved::Input(b.clone())];
        record("DotBackward0", &[a, b], &[&out], saved, |ctx| {
            let g = ctx.grad(0)?;
            Ok(vec![
                Some(mul(&g, &ctx.saved[1])?),
                Some(mul(&g, &ctx.saved[0])?),
            ])
        });
    }
    Ok(out)
}

/// `mv` (MvBackward0).
pub fn mv(a: &Tensor, v: &Tensor) -> Result<Tensor> {
    if a.ndim() != 2 || v.ndim() != 1 {
        return Err(Error::Runtime(format!(
            "vector + matrix @ vector expected, got {}, {}, {}",
            1,
            a.ndim(),
            v.ndim()
        )));
    }
    if a.shape()[1] != v.shape()[0] {
        return Err(Error::Runtime(format!(
            "size mismatch, got input ({}), mat ({}x{}), vec ({})",
            a.shape()[0],
            a.shape()[0],
            a.shape()[1],
            v.shape()[0]
        )));
    }
    let v2 = v.with_layout(v.layout().unsqueeze(1));
    let out = matmul_nd(a, &v2)?;
    let out = out.with_layout(Layout::contiguous(vec![a.shape()[0]]));
    if needs_grad(&[a, v]) {
        let saved = vec![Saved::Input(a.clone()), Saved::Input(v.clone())];
        record("MvBackward0", &[a, v], &[&out], saved, |ctx| {
            let g = ctx.grad(0)?;
            let (a, v) = (&ctx.saved[0], &ctx.saved[1]);
            let ga = if ctx.needs(0) {
                Some(mul(&unsqueeze(&g, 1)?, &unsqueeze(v, 0)?)?)
            } else {
                None
            };
            let gv = if ctx.needs(1) {
                Some(mv(&mt(a)?, &g)?)
            } else {
                None
            };
            Ok(vec![ga, gv])
        });
    }
    Ok(out)
}

pub fn outer(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 1 || b.ndim() != 1 {
        return Err(Error::Runtime(format!(
            "outer: Expected 1-D argument self, but got {}-D",
            a.ndim().max(b.ndim())
        )));
    }
    mul(&unsqueeze(a, 1)?, b)
}

/// `matmul` / `@` with PyTorch's dispatch on the operands' dims.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let a = &super::autocast::lower(a)?;
    let b = &super::autocast::lower(b)?;
    let (an, bn) = (a.ndim(), b.ndim());
    if an == 0 || bn == 0 {
        return Err(Error::Runtime(format!(
            "both arguments to matmul need to be at least 1D, but they are {an}D and {bn}D"
        )));
    }
    match (an, bn) {
        (1, 1) => dot(a, b),
        (2, 2) => mm(a, b),
        (2, 1) => mv(a, b),
        (1, 2) => {
            if a.shape()[0] != b.shape()[0] {
                return Err(Error::Runtime(format!(
                    "mat1 and mat2 shapes cannot be multiplied (1x{} and {}x{})",
                    a.shape()[0],
                    b.shape()[0],
                    b.shape()[1]
                )));
            }
            squeeze(&mm(&unsqueeze(a, 0)?, b)?, Some(&[0]))
        }
        (_, 1 | 2) if an >= 3 => {
            // PyTorch folds the batch dims into the rows: one mm instead of a batch of them
            let k = a.shape()[an - 1];
            let folded = super::shape::reshape_i(a, &[-1, k as i64])?;
            let out = if bn == 2 {
                mm(&folded, b)?
            } else {
                mv(&folded, b)?
            };
            let mut shape = a.shape()[..an - 1].to_vec();
            if bn == 2 {
                shape.push(b.shape()[1]);
            }
            super::shape::unsafe_view(&out, &shape)
        }
        _ => {
            let a2 = if an == 1 { unsqueeze(a, 0)? } else { a.clone() };
            let b2 = if bn == 1 { unsqueeze(b, 1)? } else { b.clone() };
            let out = matmul_nd(&a2, &b2)?;
            record_nd("UnsafeViewBackward0", &a2, &b2, &out);
            let mut out = out;
            if an == 1 {
                out = squeeze(&out, Some(&[-2]))?;
            }
            if bn == 1 {
                out = squeeze(&out, Some(&[-1]))?;
            }
            Ok(out)
        }
    }
}

/// `addmm(bias, m1, m2)` = bias + m1 @ m2 (AddmmBackward0), as `linear` uses it.
pub fn addmm(bias: &Tensor, m1: &Tensor, m2: &Tensor) -> Result<Tensor> {
    let bias = &super::autocast::lower(bias)?;
    let m1 = &super::autocast::lower(m1)?;
    let m2 = &super::autocast::lower(m2)?;
    let out = addmm_values(bias, m1, m2)?;
    if needs_grad(&[bias, m1, m2]) {
        let bshape = bias.shape().to_vec();
        record(
            "AddmmBackward0",
            &[bias, m1, m2],
            &[&out],
            vec![Saved::Input(m1.clone()), Saved::Input(m2.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                let (a, b) = (&ctx.saved[0], &ctx.saved[1]);
                let gb = if ctx.needs(0) {
                    Some(sum_to(&g, &bshape)?)
                } else {
                    None
                };
                let ga = if ctx.needs(1) {
                    Some(mm_like(&g, &super::shape::t2(b)?, a)?)
                } else {
                    None
                };
                let gm = if ctx.needs(2) {
                    Some(mm_like(&super::shape::t2(a)?, &g, b)?)
                } else {
                    None
                };
                Ok(vec![gb, ga, gm])
            },
        );
    }
    Ok(out)
}

/// `linear(x, w, b)`: addmm for a matrix input with bias, else matmul (+ bias).
pub fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
    let (x, w) = (&super::autocast::lower(x)?, &super::autocast::lower(w)?);
    let b = super::autocast::lower_opt(b)?;
    let b = b.as_ref();
    let wt = super::shape::t2(w)?;
    match b {
        Some(b) if x.ndim() == 2 => addmm(b, x, &wt),
        Some(b) if x.ndim() >= 3 => {
            // PyTorch: addmm on the input folded to 2-D, then a view back
            let n = x.ndim();
            let folded = super::shape::reshape_i(x, &[-1, x.shape()[n - 1] as i64])?;
            let out = addmm(b, &folded, &wt)?;
            let mut shape = x.shape()[..n - 1].to_vec();
            shape.push(w.shape()[0]);
            super::shape::view(&out, &shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
        }
        Some(b) => super::add(&matmul(x, &wt)?, b),
        None => matmul(x, &wt),
    }
}
