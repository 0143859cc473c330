//! `grid_sample` (ATen's grid_sampler_2d/3d): one node, `GridSampler2DBackward0` or
//! `GridSampler3DBackward0`. Its backward is the fused kernel (the input's and the grid's
//! gradients in one pass over the taps); when that gradient must itself be differentiable
//! (create_graph, forward AD) it is the composite form: the sampler's taps fixed
//! (`resample::Sampler`), their weights differentiable functions of the grid, and the
//! gradients the sampler's adjoint maps, which are differentiable to every order.

use super::binary::{add, add_scalar, mul, mul_scalar, sub};
use super::resample::{tap_dot, tap_scatter, Sampler};
use super::shape::{reshape, select, stack};
use super::{cast, half_precision, with_slices};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::autograd::is_grad_enabled;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::grid_sample::{self as kg, Geometry, Mode, Padding};
use crate::layout::fmt_list;
use crate::tensor::Tensor;

/// `input` (N, C, *sizes) sampled at `grid` (N, *points, dims): (N, C, *points).
pub fn grid_sample(
    x: &Tensor,
    grid: &Tensor,
    mode: Mode,
    padding: Padding,
    align_corners: bool,
) -> Result<Tensor> {
    check(x, grid, mode)?;
    let (xs, gs) = (x.shape(), grid.shape());
    let nd = xs.len() - 2;
    let geo = Geometry {
        mode,
        padding,
        align_corners,
        batch: xs[0],
        channels: xs[1],
        sizes: xs[2..].to_vec(),
        points: gs[1..=nd].iter().product(),
    };
    let out_shape = [&xs[..2], &gs[1..=nd]].concat();
    let values = |x: &Tensor, grid: &Tensor| -> Result<Tensor> {
        Ok(dispatch_float!(x.dtype(), T => {
            let v = with_slices::<T, _>(&[Some(x), Some(grid)], |s| {
                kg::forward(s[0].expect("given"), s[1].expect("given"), &geo)
            })??;
            Tensor::from_vec(v, out_shape.clone())?
        }))
    };
    let out = match half_precision(x) {
        // computed in float32 and rounded once, as ATen's
        Some(dt) => cast(
            &values(&cast(x, DType::F32)?, &cast(grid, DType::F32)?)?,
            dt,
        )?,
        None => values(x, grid)?,
    };
    if needs_grad(&[x, grid]) {
        let name = format!("GridSampler{nd}DBackward0");
        let saved = vec![Saved::Input(x.clone()), Saved::Input(grid.clone())];
        record(name.clone(), &[x, grid], &[&out], saved, move |ctx| {
            let (x, grid, go) = (&ctx.saved[0], &ctx.saved[1], ctx.grad(0)?);
            let needs = (ctx.needs(0), ctx.needs(1));
            let (gx, gg) = if is_grad_enabled() {
                composite_backward(x, grid, &go, &geo, &name, needs)?
            } else {
                fused_backward(x, grid, &go, &geo, needs)?
            };
            Ok(vec![gx, gg])
        });
    }
    Ok(out)
}

/// PyTorch's argument checks, in its order and words.
fn check(x: &Tensor, grid: &Tensor, mode: Mode) -> Result<()> {
    let (xs, gs) = (x.shape(), grid.shape());
    let (xd, gd) = (xs.len(), gs.len());
    let sizes = || {
        format!(
            "input with sizes {} and grid with sizes {}",
            fmt_list(xs),
            fmt_list(gs)
        )
    };
    let fail = |msg: String| Err(Error::Runtime(format!("grid_sampler(): {msg}")));
    if xs.first() != gs.first() {
        return fail(format!(
            "expected grid and input to have same batch size, but got {}",
            sizes()
        ));
    }
    if gs.last().copied() != Some(xd.wrapping_sub(2)) {
        return fail(format!(
            "expected grid to have size {} in last dimension, but got grid with sizes {}",
            xd as i64 - 2,
            fmt_list(gs)
        ));
    }
    if let Some(i) = (2..xd).find(|&i| xs[i] == 0) {
        return fail(format!(
            "expected input to have non-empty spatial dimensions, but input has sizes {} with \
             dimension {i} being empty",
            fmt_list(xs)
        ));
    }
    if xd != 4 || gd != 4 {
        if xd == 4 || xd != 5 || gd != 5 {
            let d = if xd == 4 { 4 } else { 5 };
            return fail(format!(
                "expected {d}D input and grid with same number of dimensions, but got {}",
                sizes()
            ));
        }
        if mode == Mode::Bicubic {
            return fail("bicubic interpolation only supports 4D input".into());
        }
    }
    if !x.dtype().is_float() {
        let kernel = if xd == 4 {
            "grid_sampler_2d_cpu_kernel_impl"
        } else {
            "grid_sampler_3d_cpu"
        };
        return Err(Error::DtypeNotImplemented {
            kernel: kernel.into(),
            dtype: x.dtype(),
        });
    }
    if grid.dtype() != x.dtype() {
        return Err(Error::Runtime(format!(
            "expected scalar type {} but found {}",
            x.dtype().kernel_name(),
            grid.dtype().kernel_name()
        )));
    }
    Ok(())
}

/// The gradients from the kernel, without a graph.
fn fused_backward(
    x: &Tensor,
    grid: &Tensor,
    go: &Tensor,
    geo: &Geometry,
    needs: (bool, bool),
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let values = |x: &Tensor, grid: &Tensor, go: &Tensor| -> Result<(Tensor, Tensor)> {
        Ok(dispatch_float!(x.dtype(), T => {
            let (gx, gg) = with_slices::<T, _>(&[Some(x), Some(grid), Some(go)], |s| {
                let [x, grid, go] = [0, 1, 2].map(|i| s[i].expect("given"));
                kg::backward(x, grid, go, geo, needs)
            })??;
            (
                Tensor::from_vec(gx, if needs.0 { x.shape().to_vec() } else { vec![0] })?,
                Tensor::from_vec(gg, if needs.1 { grid.shape().to_vec() } else { vec![0] })?,
            )
        }))
    };
    let (gx, gg) = match half_precision(x) {
        Some(dt) => {
            let f = |t: &Tensor| cast(t, DType::F32);
            let (gx, gg) = values(&f(x)?, &f(grid)?, &f(go)?)?;
            (cast(&gx, dt)?, cast(&gg, dt)?)
        }
        None => values(x, grid, go)?,
    };
    Ok((needs.0.then_some(gx), needs.1.then_some(gg)))
}

/// The gradients written with differentiable ops (for create_graph): the taps' positions are
/// constants; along each spatial dim the fraction `t` the tap factors are functions of is
/// `t + (c - c.detach()) * m` for the grid coordinate `c` (value `t`, derivative `m`, the
/// unnormalising and padding slope); a tap's weight is the product of its factors.
fn composite_backward(
    x: &Tensor,
    grid: &Tensor,
    go: &Tensor,
    geo: &Geometry,
    name: &str,
    (need_x, need_grid): (bool, bool),
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (nd, n, p) = (geo.sizes.len(), geo.batch, geo.points);
    let taps = geo.taps();
    let kernel_grid = match half_precision(grid) {
        Some(_) => cast(&grid.detach(), DType::F32)?,
        None => grid.detach(),
    };
    let (pos, frac, mult) = dispatch_float!(kernel_grid.dtype(), T => {
        let (pos, frac, mult) =
            with_slices::<T, _>(&[Some(&kernel_grid)], |s| kg::tap_positions(s[0].expect("given"), geo))??;
        let planes = |v: Vec<T>| -> Result<Tensor> {
            cast(&Tensor::from_vec(v, vec![nd, n, p])?, grid.dtype())
        };
        (pos, planes(frac)?, planes(mult)?)
    });
    let point_shape = &grid.shape()[1..=nd];
    let sampler = Sampler::new(&pos, (taps, n, point_shape), &geo.sizes, name)?;
    // per dim: the factors of its taps and their derivatives in the fraction
    let mut factors = Vec::with_capacity(nd);
    for d in 0..nd {
        let c = reshape(&select(grid, -1, (nd - 1 - d) as i64)?, &[n, p])?;
        let (t, m) = (select(&frac, 0, d as i64)?, select(&mult, 0, d as i64)?);
        let f = add(&t, &mul(&sub(&c, &c.detach())?, &m)?)?;
        factors.push((tap_factors(&f, geo.mode)?, m));
    }
    // tap k's factor along dim d: digit d of k (the last dim fastest)
    let per_dim: usize = match geo.mode {
        Mode::Bilinear => 2,
        Mode::Nearest => 1,
        Mode::Bicubic => 4,
    };
    let digit = |k: usize, d: usize| (k / per_dim.pow((nd - 1 - d) as u32)) % per_dim;
    let product = |k: usize, skip: Option<usize>| -> Result<Option<Tensor>> {
        let mut w: Option<Tensor> = None;
        for (d, ((f, _), _)) in factors.iter().enumerate() {
            if Some(d) != skip {
                let fd = &f[digit(k, d)];
                w = Some(match w {
                    None => fd.clone(),
                    Some(w) => mul(&w, fd)?,
                });
            }
        }
        Ok(w)
    };
    let weights: Vec<Tensor> = (0..taps)
        .map(|k| product(k, None).map(|w| w.expect("at least one dim")))
        .collect::<Result<_>>()?;
    let weights = stack(&weights, 0)?;
    let gx = need_x
        .then(|| tap_scatter(go, &weights, &sampler))
        .transpose()?;
    let gg = if need_grid {
        let per_tap = tap_dot(go, x, &sampler)?;
        let mut coords = Vec::with_capacity(nd);
        for d in (0..nd).rev() {
            let ((_, df), m) = &factors[d];
            let mut sum: Option<Tensor> = None;
            for k in 0..taps {
                let mut term = mul(&select(&per_tap, 0, k as i64)?, &df[digit(k, d)])?;
                if let Some(rest) = product(k, Some(d))? {
                    term = mul(&term, &rest)?;
                }
                sum = Some(match sum {
                    None => term,
                    Some(s) => add(&s, &term)?,
                });
            }
            coords.push(mul(&sum.expect("at least one tap"), m)?);
        }
        Some(reshape(&stack(&coords, -1)?, grid.shape())?)
    } else {
        None
    };
    Ok((gx, gg))
}

/// The factors of one dim's taps as functions of the fraction `f`, and their derivatives.
fn tap_factors(f: &Tensor, mode: Mode) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    let scaled = |t: &Tensor, a: f64, b: f64| add_scalar(&mul_scalar(t, a)?, b);
    Ok(match mode {
        // unit weights that depend on the grid: a zero gradient for it, as ATen's
        Mode::Nearest => (vec![scaled(f, 0.0, 1.0)?], vec![mul_scalar(f, 0.0)?]),
        Mode::Bilinear => (
            vec![scaled(f, -1.0, 1.0)?, f.clone()],
            vec![scaled(f, 0.0, -1.0)?, scaled(f, 0.0, 1.0)?],
        ),
        Mode::Bicubic => {
            const A: f64 = -0.75;
            // ATen's cubic_convolution1 (|x| <= 1) and cubic_convolution2 (1 < |x| < 2)
            let near = |x: &Tensor| -> Result<Tensor> {
                add_scalar(&mul(&mul(&scaled(x, A + 2.0, -(A + 3.0))?, x)?, x)?, 1.0)
            };
            let far = |x: &Tensor| -> Result<Tensor> {
                add_scalar(
                    &mul(&add_scalar(&mul(&scaled(x, A, -5.0 * A)?, x)?, 8.0 * A)?, x)?,
                    -4.0 * A,
                )
            };
            let d_near = |x: &Tensor| -> Result<Tensor> {
                mul(&scaled(x, 3.0 * (A + 2.0), -2.0 * (A + 3.0))?, x)
            };
            let d_far = |x: &Tensor| -> Result<Tensor> {
                add_scalar(&mul(&scaled(x, 3.0 * A, -10.0 * A)?, x)?, 8.0 * A)
            };
            let (f1, g1, g2) = (
                scaled(f, 1.0, 1.0)?,
                scaled(f, -1.0, 1.0)?,
                scaled(f, -1.0, 2.0)?,
            );
            (
                vec![far(&f1)?, near(f)?, near(&g1)?, far(&g2)?],
                vec![
                    d_far(&f1)?,
                    d_near(f)?,
                    mul_scalar(&d_near(&g1)?, -1.0)?,
                    mul_scalar(&d_far(&g2)?, -1.0)?,
                ],
            )
        }
    })
}
