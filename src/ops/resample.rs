//! Resampling along one dim (the separable passes of `interpolate`): `resample` and its
//! adjoint, each the other's gradient, so every order of derivative works.

use std::sync::Arc;

use super::{cast, half_precision, with_slice};
use crate::autograd::graph::{needs_grad, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::resample::{self as kr, Taps};
use crate::kernels::simd::Real;
use crate::storage::Elem;
use crate::tensor::Tensor;

/// One pass: the taps of one dim (see `kernels::resample::Taps`).
struct Pass {
    dim: usize,
    index: Vec<usize>,
    weight: Option<Vec<f64>>,
    ins: usize,
    outs: usize,
}

/// A pass as given: (dim, input size, output size, index, weight).
pub type PassSpec = (usize, usize, usize, Vec<i64>, Option<Vec<f64>>);

/// The passes of one resampling (one dim after the other), and the name of its node.
#[derive(Clone)]
pub struct Plan {
    passes: Arc<Vec<Pass>>,
    name: Arc<str>,
}

impl Plan {
    /// Passes of `(dim, ins, outs, index, weight)`: `index` and `weight` hold `taps * outs`
    /// entries, tap-major, every index below `ins`.
    pub fn new(passes: Vec<PassSpec>, name: &str) -> Result<Plan> {
        let bad = |what: String| Err(Error::Runtime(format!("resample: {what}")));
        let mut out = Vec::with_capacity(passes.len());
        for (dim, ins, outs, index, weight) in passes {
            if outs == 0 || index.is_empty() || index.len() % outs != 0 {
                return bad(format!(
                    "{} indices are not whole taps of {outs} outputs",
                    index.len()
                ));
            }
            if weight.as_ref().is_some_and(|w| w.len() != index.len()) {
                return bad("the weights and indices differ in number".into());
            }
            if let Some(&i) = index.iter().find(|&&i| i < 0 || i as usize >= ins) {
                return bad(format!("index {i} is out of bounds for size {ins}"));
            }
            let index = index.into_iter().map(|i| i as usize).collect();
            out.push(Pass {
                dim,
                index,
                weight,
                ins,
                outs,
            });
        }
        Ok(Plan {
            passes: Arc::new(out),
            name: name.into(),
        })
    }
}

impl Pass {
    fn run<T: Real + Elem>(
        &self,
        x: &[T],
        outer: usize,
        inner: usize,
        adjoint: bool,
    ) -> Result<Vec<T>> {
        let weight: Option<Vec<T>> = self
            .weight
            .as_ref()
            .map(|w| w.iter().map(|&v| T::of(v)).collect());
        let taps = Taps {
            index: &self.index,
            weight: weight.as_deref(),
            ins: self.ins,
            outs: self.outs,
        };
        if adjoint {
            kr::resample_adjoint(x, outer, inner, &taps)
        } else {
            kr::resample(x, outer, inner, &taps)
        }
    }
}

/// `x` resampled by the passes of `plan`, one node for all. Float16/bfloat16 are computed in
/// float32 and rounded once, as PyTorch's upsample kernels.
pub fn resample(x: &Tensor, plan: &Plan) -> Result<Tensor> {
    apply(x, plan, false)
}

fn apply(x: &Tensor, plan: &Plan, adjoint: bool) -> Result<Tensor> {
    let all = |x: &Tensor| -> Result<Tensor> {
        let mut out = x.clone();
        if adjoint {
            for pass in plan.passes.iter().rev() {
                out = values(&out, pass.dim, pass, true)?;
            }
        } else {
            for pass in plan.passes.iter() {
                out = values(&out, pass.dim, pass, false)?;
            }
        }
        Ok(out)
    };
    let out = match half_precision(x) {
        // computed in float32 and rounded once, with no nodes for the casts
        Some(dt) => cast(&all(&cast(x, DType::F32)?)?, dt)?,
        None => all(x)?,
    };
    if needs_grad(&[x]) {
        let name = if adjoint {
            // PyTorch's name for a backward's own node
            let base = plan.name.trim_end_matches("Backward0");
            format!("{base}BackwardBackward0")
        } else {
            plan.name.to_string()
        };
        let plan = plan.clone();
        record(name, &[x], &[&out], vec![], move |ctx| {
            Ok(vec![Some(apply(&ctx.grad(0)?, &plan, !adjoint)?)])
        });
    }
    Ok(out)
}

/// One pass of `apply` along `dim`, in x's dtype (float32 or float64). A dense input in another memory
/// order (channels-last) is resampled in that order, and the result keeps it, as PyTorch's.
fn values(x: &Tensor, dim: usize, pass: &Pass, adjoint: bool) -> Result<Tensor> {
    let (from, to) = if adjoint {
        (pass.outs, pass.ins)
    } else {
        (pass.ins, pass.outs)
    };
    let shape = x.shape();
    if dim >= shape.len() || shape[dim] != from {
        return Err(Error::Runtime(format!(
            "resample: expected size {from} at dim {dim}, but got a tensor of shape {:?}",
            shape
        )));
    }
    let layout = x.layout();
    if !x.is_contiguous() && layout.is_non_overlapping_and_dense() {
        let order = layout.memory_order();
        let in_memory = x.with_layout(layout.permute(&order));
        if in_memory.is_contiguous() {
            let at = order.iter().position(|&d| d == dim).unwrap_or(dim);
            let out = values(&in_memory, at, pass, adjoint)?;
            let mut back = vec![0; order.len()];
            for (i, &d) in order.iter().enumerate() {
                back[d] = i;
            }
            return Ok(out.with_layout(out.layout().permute(&back)));
        }
    }
    let outer: usize = shape[..dim].iter().product();
    let inner: usize = shape[dim + 1..].iter().product();
    let mut out_shape = shape.to_vec();
    out_shape[dim] = to;
    Ok(dispatch_float!(x.dtype(), T => {
        let v = with_slice::<T, _>(x, |s| pass.run(s, outer, inner, adjoint))??;
        Tensor::from_vec(v, out_shape)?
    }))
}
