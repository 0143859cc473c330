//! `diagonal` (a view: the two dims replaced by one last dim whose stride is the sum of their
//! strides) and its adjoint, zeros with values written on such a diagonal (`diag_embed`, and
//! the backward of `diagonal`). Each one's backward is the other.

use super::shape::view_of;
use crate::autograd::graph::{needs_grad, record};
use crate::error::{Error, Result};
use crate::kernels::elementwise;
use crate::layout::{fmt_list, wrap_dim, Layout};
use crate::tensor::Tensor;

/// The two dims of a diagonal, wrapped into `0..ndim`; PyTorch's error when they are the same.
fn diagonal_dims(ndim: usize, dim1: i64, dim2: i64) -> Result<(usize, usize)> {
    let (d1, d2) = (wrap_dim(dim1, ndim)?, wrap_dim(dim2, ndim)?);
    if d1 == d2 {
        return Err(Error::Runtime(format!(
            "diagonal dimensions cannot be identical {dim1}, {dim2}"
        )));
    }
    Ok((d1, d2))
}

/// The layout of the `offset` diagonal of the plane (`d1`, `d2`) of `l`: the other dims in
/// order, then the diagonal (PyTorch's `diagonal` strides; an empty diagonal keeps the offset).
pub fn diagonal_layout(l: &Layout, offset: i64, d1: usize, d2: usize) -> Layout {
    let (n1, n2) = (l.shape[d1] as i64, l.shape[d2] as i64);
    let len = if offset >= 0 {
        n1.min(n2 - offset)
    } else {
        (n1 + offset).min(n2)
    }
    .max(0) as usize;
    let mut start = l.offset;
    if len > 0 {
        start += if offset >= 0 {
            offset as usize * l.strides[d2]
        } else {
            offset.unsigned_abs() as usize * l.strides[d1]
        };
    }
    let keep = (0..l.shape.len()).filter(|&i| i != d1 && i != d2);
    let mut shape: Vec<usize> = keep.clone().map(|i| l.shape[i]).collect();
    let mut strides: Vec<usize> = keep.map(|i| l.strides[i]).collect();
    shape.push(len);
    strides.push(l.strides[d1] + l.strides[d2]);
    Layout {
        shape,
        strides,
        offset: start,
    }
}

/// `diagonal(offset, dim1, dim2)`: a view (DiagonalBackward0).
pub fn diagonal(t: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let (d1, d2) = diagonal_dims(t.ndim(), dim1, dim2)?;
    let out = view_of(t, diagonal_layout(t.layout(), offset, d1, d2));
    if needs_grad(&[t]) {
        let shape = t.shape().to_vec();
        record("DiagonalBackward0", &[t], &[&out], vec![], move |ctx| {
            let g = ctx.grad(0)?;
            let name = "DiagonalBackwardBackward0";
            Ok(vec![Some(diagonal_embed(
                &g, &shape, offset, d1, d2, name,
            )?)])
        });
    }
    Ok(out)
}

/// Zeros of `shape` with `g` written on its (`offset`, `d1`, `d2`) diagonal, recorded as node
/// `name`; the backward takes that diagonal of the gradient.
pub fn diagonal_embed(
    g: &Tensor,
    shape: &[usize],
    offset: i64,
    d1: usize,
    d2: usize,
    name: &'static str,
) -> Result<Tensor> {
    let out = Tensor::zeros(shape, g.dtype())?;
    let target = diagonal_layout(out.layout(), offset, d1, d2);
    if target.shape != g.shape() {
        return Err(Error::Runtime(format!(
            "diagonal of shape {} cannot hold values of shape {}",
            fmt_list(&target.shape),
            fmt_list(g.shape())
        )));
    }
    dispatch!(g.dtype(), T => {
        let vals = g.try_to_vec::<T>()?;
        let mut d = out.storage().write::<T>();
        elementwise::assign(&mut d, &target, &vals);
    });
    if needs_grad(&[g]) {
        record(name, &[g], &[&out], vec![], move |ctx| {
            Ok(vec![Some(diagonal(
                &ctx.grad(0)?,
                offset,
                d1 as i64,
                d2 as i64,
            )?)])
        });
    }
    Ok(out)
}

/// `diag_embed(offset, dim1, dim2)` (DiagEmbedBackward0): the last dim of `t` becomes the
/// `offset` diagonal of the new (`dim1`, `dim2`) planes, the dims counted in the result.
pub fn diag_embed(t: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let nd = t.ndim() + 1;
    let (d1, d2) = diagonal_dims(nd, dim1, dim2)?;
    let n = t.shape()[t.ndim() - 1] + offset.unsigned_abs() as usize;
    let mut rest = t.shape()[..t.ndim() - 1].iter().copied();
    let shape: Vec<usize> = (0..nd)
        .map(|i| {
            if i == d1 || i == d2 {
                n
            } else {
                rest.next().expect("one dim per remaining position")
            }
        })
        .collect();
    diagonal_embed(t, &shape, offset, d1, d2, "DiagEmbedBackward0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagonal_layout_of_a_matrix() {
        // 3x4 row-major: the main diagonal steps 5, the +1 diagonal starts at 1
        let l = Layout::contiguous(vec![3, 4]);
        let d = diagonal_layout(&l, 1, 0, 1);
        assert_eq!((d.shape, d.strides, d.offset), (vec![3], vec![5], 1));
        let d = diagonal_layout(&l, -2, 0, 1);
        assert_eq!((d.shape, d.strides, d.offset), (vec![1], vec![5], 8));
        let d = diagonal_layout(&l, 7, 0, 1);
        assert_eq!((d.shape, d.offset), (vec![0], 0));
    }
}
