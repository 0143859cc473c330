//! `scatter_reduce` along one dim of a contiguous buffer: sum, prod, mean, amax or amin of the
//! scattered values, with or without the values already there.

use super::index::{add_elem, unravel};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::contiguous_strides;
use crate::storage::Elem;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    Sum,
    Prod,
    Mean,
    Amax,
    Amin,
}

impl Reduce {
    /// PyTorch's names: "sum", "prod", "mean", "amax", "amin".
    pub fn parse(name: &str) -> Option<Reduce> {
        Some(match name {
            "sum" => Reduce::Sum,
            "prod" => Reduce::Prod,
            "mean" => Reduce::Mean,
            "amax" => Reduce::Amax,
            "amin" => Reduce::Amin,
            _ => return None,
        })
    }
}

/// `a * b`: wrapping for int64, `and` for bools, in f64 for floats.
#[inline]
fn mul_elem<T: Elem>(a: T, b: T) -> T {
    match T::DTYPE {
        DType::I64 => T::from_i64(a.to_i64().wrapping_mul(b.to_i64())),
        DType::Bool => T::from_bool(a.is_true() && b.is_true()),
        _ => T::from_f64(a.to_f64() * b.to_f64()),
    }
}

/// The larger (`max`) or smaller of `a` and `b`; NaN wins (PyTorch propagates it).
#[inline]
fn pick<T: Elem>(a: T, b: T, max: bool) -> T {
    #[allow(clippy::eq_op)]
    let (a_nan, b_nan) = (a != a, b != b);
    if a_nan {
        a
    } else if b_nan || (max && b > a) || (!max && b < a) {
        b
    } else {
        a
    }
}

#[inline]
fn combine<T: Elem>(a: T, b: T, reduce: Reduce) -> T {
    match reduce {
        Reduce::Sum | Reduce::Mean => add_elem(a, b),
        Reduce::Prod => mul_elem(a, b),
        Reduce::Amax => pick(a, b, true),
        Reduce::Amin => pick(a, b, false),
    }
}

/// Reduces `src` into `dst` (contiguous, of `dst_shape`; a 0-d one has one element along dim
/// 0) along `dim`: `dst[.., idx[k], ..] = reduce(dst[.., idx[k], ..], src[k's position])` for
/// `idx` contiguous of `ishape` and `src` contiguous of `src_shape`. Without `include_self`, a
/// position receiving values starts from the first of them instead of its own value. `mean`
/// divides by the number of values reduced (floor division for int64). An index out of range
/// is PyTorch's RuntimeError.
#[allow(clippy::too_many_arguments)]
pub fn scatter_reduce<T: Elem>(
    dst: &mut [T],
    dst_shape: &[usize],
    dim: usize,
    idx: &[i64],
    ishape: &[usize],
    src: &[T],
    src_shape: &[usize],
    reduce: Reduce,
    include_self: bool,
) -> Result<()> {
    let ostrides = contiguous_strides(dst_shape);
    let sstrides = contiguous_strides(src_shape);
    let size = dst_shape.get(dim).copied().unwrap_or(1);
    // how many scattered values each position received
    let mut count = vec![0u64; dst.len()];
    let mut mi = vec![0usize; ishape.len()];
    for (k, &ix) in idx.iter().enumerate() {
        unravel(k, ishape, &mut mi);
        let sv = src[mi.iter().zip(&sstrides).map(|(i, s)| i * s).sum::<usize>()];
        if ix < 0 || ix >= size as i64 {
            return Err(Error::Runtime(format!(
                "index {ix} is out of bounds for dimension {dim} with size {size}"
            )));
        }
        mi[dim] = ix as usize;
        let off: usize = mi.iter().zip(&ostrides).map(|(i, s)| i * s).sum();
        dst[off] = if count[off] == 0 && !include_self {
            sv
        } else {
            combine(dst[off], sv, reduce)
        };
        count[off] += 1;
    }
    if reduce == Reduce::Mean {
        for (v, &c) in dst.iter_mut().zip(&count) {
            let n = c + include_self as u64;
            if c == 0 || n == 1 {
                continue;
            }
            *v = match T::DTYPE {
                DType::I64 => T::from_i64(v.to_i64().div_euclid(n as i64)),
                DType::Bool => T::from_bool(v.is_true()),
                _ => T::from_f64(v.to_f64() / n as f64),
            };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_with_and_without_self() {
        // [5, 6, 7, 8].scatter_reduce(0, [0, 0, 1], [1, 2, 4], reduce, include_self)
        let run = |reduce, include_self| {
            let mut dst = vec![5i64, 6, 7, 8];
            scatter_reduce(
                &mut dst,
                &[4],
                0,
                &[0, 0, 1],
                &[3],
                &[1, 2, 4],
                &[3],
                reduce,
                include_self,
            )
            .unwrap();
            dst
        };
        assert_eq!(run(Reduce::Sum, true), vec![8, 10, 7, 8]);
        assert_eq!(run(Reduce::Sum, false), vec![3, 4, 7, 8]);
        assert_eq!(run(Reduce::Prod, true), vec![10, 24, 7, 8]);
        assert_eq!(run(Reduce::Mean, true), vec![2, 5, 7, 8]);
        assert_eq!(run(Reduce::Mean, false), vec![1, 4, 7, 8]);
        assert_eq!(run(Reduce::Amax, true), vec![5, 6, 7, 8]);
        assert_eq!(run(Reduce::Amin, false), vec![1, 4, 7, 8]);
    }

    #[test]
    fn nan_propagates_through_amax() {
        let mut dst = vec![1.0f64, f64::NAN];
        scatter_reduce(
            &mut dst,
            &[2],
            0,
            &[0, 1],
            &[2],
            &[f64::NAN, 3.0],
            &[2],
            Reduce::Amax,
            true,
        )
        .unwrap();
        assert!(dst[0].is_nan() && dst[1].is_nan());
    }

    #[test]
    fn index_out_of_range_is_an_error() {
        let mut dst = vec![0.0f32; 3];
        let err = scatter_reduce(
            &mut dst,
            &[3],
            0,
            &[3],
            &[1],
            &[1.0],
            &[1],
            Reduce::Sum,
            true,
        );
        assert!(err.is_err());
    }
}
