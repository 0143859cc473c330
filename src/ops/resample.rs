//! Resampling along one dim (the separable passes of `interpolate`): `resample` and its
//! adjoint, each the other's gradient, so every order of derivative works.

use std::any::Any;
use std::sync::Arc;

use super::{cast, half_precision, with_slice};
use crate::autograd::graph::{needs_grad, record, Saved};
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
    /// the weights in float32 and float64, converted once when the plan is built
    weight: Option<(Vec<f32>, Vec<f64>)>,
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
            let weight = weight.map(|w| (w.iter().map(|&v| v as f32).collect(), w));
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
        let weight = match &self.weight {
            None => None,
            Some((w32, w64)) => {
                let both: [&dyn Any; 2] = [w32, w64];
                let w = both.iter().find_map(|w| w.downcast_ref::<Vec<T>>());
                Some(w.ok_or_else(|| {
                    Error::Runtime("resample: weights are float32 or float64".into())
                })?)
            }
        };
        let taps = Taps {
            index: &self.index,
            weight: weight.map(Vec::as_slice),
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

// ---------------------------------------------------------------- tap sums (grid_sample)

/// The fixed taps of a sampler (`kernels::resample::TapIndex`): three bilinear maps between
/// an input `x` (batch, channels, *sizes), tap weights `w` (taps, batch, points) and an output
/// `g` (batch, channels, points...: the points in any shape) share them, and each map's gradients are the other two (as
/// a convolution's), so every order of derivative works.
#[derive(Clone)]
pub struct Sampler {
    point: Arc<Vec<usize>>,
    at: Arc<Vec<usize>>,
    starts: Arc<Vec<usize>>,
    taps: usize,
    batch: usize,
    points: usize,
    /// the shape of the points in the output
    point_shape: Vec<usize>,
    /// the spatial shape of the input (`len` elements)
    sizes: Vec<usize>,
    len: usize,
    name: Arc<str>,
}

/// Which of the three maps.
#[derive(Clone, Copy)]
enum TapMap {
    /// `(x, w) -> g`: the weighted sum of each point's taps
    Sum,
    /// `(g, w) -> x`: the output scattered back onto the taps
    Scatter,
    /// `(g, x) -> w`: each tap's value times the output, summed over channels
    Dot,
}

impl Sampler {
    /// `positions`: (taps, dims, batch, *point_shape) integer positions in an array of `sizes` (one
    /// per dim); a tap outside it reads 0.
    pub fn new(
        positions: &[i64],
        (taps, batch, point_shape): (usize, usize, &[usize]),
        sizes: &[usize],
        name: &str,
    ) -> Result<Sampler> {
        let points = point_shape.iter().product::<usize>();
        let per_tap = batch * points;
        if positions.len() != taps * sizes.len() * per_tap {
            return Err(Error::Runtime(format!(
                "tap_sum: {} positions for {taps} taps of {} dims x {batch} x {points} points",
                positions.len(),
                sizes.len()
            )));
        }
        // per (tap, batch item): the points inside and their row-major positions, written
        // without branches (whether a tap is inside is as unpredictable as the grid)
        let (mut point, mut at) = (vec![0usize; taps * per_tap], vec![0usize; taps * per_tap]);
        let mut starts = Vec::with_capacity(taps * batch + 1);
        starts.push(0);
        let (mut lin, mut k) = (vec![0i64; per_tap], 0);
        for t in 0..taps {
            lin.iter_mut().for_each(|v| *v = 0);
            for (d, &size) in sizes.iter().enumerate() {
                let from = (t * sizes.len() + d) * per_tap;
                let size = size as i64;
                for (o, &p) in lin.iter_mut().zip(&positions[from..from + per_tap]) {
                    // all ones while inside, else 0: the position, or -1 once outside
                    let inside = -i64::from((*o >= 0) & (p >= 0) & (p < size));
                    *o = ((*o * size + p) & inside) | !inside;
                }
            }
            for row in (0..batch).map(|n| &lin[n * points..(n + 1) * points]) {
                for (q, &i) in row.iter().enumerate() {
                    point[k] = q;
                    at[k] = i.max(0) as usize;
                    k += usize::from(i >= 0);
                }
                starts.push(k);
            }
        }
        point.truncate(k);
        at.truncate(k);
        Ok(Sampler {
            point: Arc::new(point),
            at: Arc::new(at),
            starts: Arc::new(starts),
            taps,
            batch,
            points,
            point_shape: point_shape.to_vec(),
            sizes: sizes.to_vec(),
            len: sizes.iter().product(),
            name: name.into(),
        })
    }

    fn shape_of(&self, what: char, channels: usize) -> Vec<usize> {
        match what {
            'x' => [&[self.batch, channels][..], &self.sizes].concat(),
            'w' => vec![self.taps, self.batch, self.points],
            _ => [&[self.batch, channels][..], &self.point_shape].concat(),
        }
    }
}

/// `x[n, c, index[t, n, p]] += w[t, n, p] * g[n, c, p]`: the adjoint of the tap sum in `x`.
pub fn tap_scatter(g: &Tensor, w: &Tensor, s: &Sampler) -> Result<Tensor> {
    tap_map(TapMap::Scatter, g, w, s)
}

/// `w[t, n, p] = sum_c g[n, c, p] * x[n, c, index[t, n, p]]`: the adjoint of the tap sum in `w`.
pub fn tap_dot(g: &Tensor, x: &Tensor, s: &Sampler) -> Result<Tensor> {
    tap_map(TapMap::Dot, g, x, s)
}

fn tap_map(map: TapMap, a: &Tensor, b: &Tensor, s: &Sampler) -> Result<Tensor> {
    // the first operand is x or g, (batch, channels, ...) both
    let channels = a.shape().get(1).copied().unwrap_or(0);
    let (ka, kb, kout) = match map {
        TapMap::Sum => ('x', 'w', 'g'),
        TapMap::Scatter => ('g', 'w', 'x'),
        TapMap::Dot => ('g', 'x', 'w'),
    };
    for (t, k) in [(a, ka), (b, kb)] {
        if t.shape() != s.shape_of(k, channels).as_slice() || t.dtype() != a.dtype() {
            return Err(Error::Runtime(format!(
                "tap_sum: expected {k} of shape {:?} and dtype {:?}, got {:?} and {:?}",
                s.shape_of(k, channels),
                a.dtype(),
                t.shape(),
                t.dtype()
            )));
        }
    }
    let values = |a: &Tensor, b: &Tensor| -> Result<Tensor> {
        let ix = kr::TapIndex {
            point: &s.point,
            at: &s.at,
            starts: &s.starts,
            taps: s.taps,
            batch: s.batch,
            points: s.points,
            len: s.len,
        };
        let v = dispatch_float!(a.dtype(), T => {
            let v = super::with_slices::<T, _>(&[Some(a), Some(b)], |sl| {
                let (a, b) = (sl[0].expect("given"), sl[1].expect("given"));
                match map {
                    TapMap::Sum => kr::tap_sum(a, b, &ix, channels),
                    TapMap::Scatter => kr::tap_scatter(a, b, &ix, channels),
                    TapMap::Dot => kr::tap_dot(a, b, &ix, channels),
                }
            })??;
            Tensor::from_vec(v, s.shape_of(kout, channels))?
        });
        Ok(v)
    };
    let out = match half_precision(a) {
        // computed in float32 and rounded once, with no nodes for the casts
        Some(dt) => cast(&values(&cast(a, DType::F32)?, &cast(b, DType::F32)?)?, dt)?,
        None => values(a, b)?,
    };
    if needs_grad(&[a, b]) {
        let name = match map {
            TapMap::Sum => s.name.to_string(),
            _ => format!("{}BackwardBackward0", s.name.trim_end_matches("Backward0")),
        };
        let s = s.clone();
        let saved = vec![Saved::Input(a.clone()), Saved::Input(b.clone())];
        record(name, &[a, b], &[&out], saved, move |ctx| {
            let (a, b, o) = (&ctx.saved[0], &ctx.saved[1], ctx.grad(0)?);
            // the gradient of each input is the map that makes it from the other two
            let (ga, gb) = match map {
                // a = x, b = w, o = g
                TapMap::Sum => (
                    ctx.needs(0).then(|| tap_map(TapMap::Scatter, &o, b, &s)),
                    ctx.needs(1).then(|| tap_map(TapMap::Dot, &o, a, &s)),
                ),
                // a = g, b = w, o = x
                TapMap::Scatter => (
                    ctx.needs(0).then(|| tap_map(TapMap::Sum, &o, b, &s)),
                    ctx.needs(1).then(|| tap_map(TapMap::Dot, a, &o, &s)),
                ),
                // a = g, b = x, o = w
                TapMap::Dot => (
                    ctx.needs(0).then(|| tap_map(TapMap::Sum, b, &o, &s)),
                    ctx.needs(1).then(|| tap_map(TapMap::Scatter, a, &o, &s)),
                ),
            };
            Ok(vec![ga.transpose()?, gb.transpose()?])
        });
    }
    Ok(out)
}
