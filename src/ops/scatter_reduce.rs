//! `scatter_reduce` forward, with PyTorch's checks. No graph: the Python layer records the
//! backward (PyTorch's `scatter_reduce_backward`, written with differentiable ops).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::scatter_reduce::{scatter_reduce as kernel, Reduce};
use crate::layout::{fmt_list, wrap_dim};
use crate::tensor::Tensor;

fn nonempty(shape: &[usize]) -> Vec<usize> {
    if shape.is_empty() {
        vec![1]
    } else {
        shape.to_vec()
    }
}

/// `t.scatter_reduce(dim, index, src, reduce, include_self=...)`, out of place, without
/// autograd.
pub fn scatter_reduce(
    t: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    include_self: bool,
) -> Result<Tensor> {
    let Some(reduce) = Reduce::parse(reduce) else {
        return Err(Error::Runtime(format!(
            "reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )));
    };
    let d = wrap_dim(dim, t.ndim())?;
    if index.dtype() != DType::I64 {
        return Err(Error::Runtime(
            "scatter(): Expected dtype int32/int64 for index".into(),
        ));
    }
    if src.dtype() != t.dtype() {
        return Err(Error::Runtime(
            "scatter(): Expected self.dtype to be equal to src.dtype".into(),
        ));
    }
    let out = super::materialize(t)?;
    if index.numel() == 0 {
        return Ok(out);
    }
    let (sshape, ishape, src_shape) = (
        nonempty(t.shape()),
        nonempty(index.shape()),
        nonempty(src.shape()),
    );
    if ishape.len() != sshape.len() {
        return Err(Error::Runtime(
            "Index tensor must have the same number of dimensions as self tensor".into(),
        ));
    }
    if src_shape.len() != ishape.len() {
        return Err(Error::Runtime(
            "Index tensor must have the same number of dimensions as src tensor".into(),
        ));
    }
    if (0..ishape.len()).any(|k| k != d && ishape[k] > sshape[k] || ishape[k] > src_shape[k]) {
        return Err(Error::Runtime(format!(
            "Expected index {} to be no larger than self {} apart from dimension {d} and to be no larger size than src {}",
            fmt_list(index.shape()),
            fmt_list(t.shape()),
            fmt_list(src.shape())
        )));
    }
    let idx = index.try_to_vec::<i64>()?;
    dispatch!(t.dtype(), T => {
        let vals = src.try_to_vec::<T>()?;
        let mut dst = out.storage().write::<T>();
        kernel(&mut dst, &sshape, d, &idx, &ishape, &vals, &src_shape, reduce, include_self)?;
    });
    Ok(out)
}
