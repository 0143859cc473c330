//! Convolutions (1-d and 2-d, plain and transposed, with groups) and pooling.
//!
//! A convolution is one of three bilinear maps between an image, a matrix and a weight (see
//! `kernels::conv`). Each map is an op here whose gradients are the other two maps, so the
//! backward of `convolution` (ConvolutionBackward0) is written in differentiable ops and every
//! order of derivative works. Pooling ops pair a forward with its adjoint in the same way.

use super::shape::reshape;
use super::{sum_dims, with_slice};
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::error::{Error, Result};
use crate::kernels::conv::{self as kc, Geom, PoolGeom, Window};
use crate::layout::fmt_list;
use crate::tensor::Tensor;

fn float_only(t: &Tensor, what: &str) -> Result<()> {
    if t.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::NotImplemented(format!(
            "{what} for {} tensors is not supported by ferrograd yet",
            t.dtype().kernel_name()
        )))
    }
}

/// PyTorch's error for a kernel without integer or bool versions (`"kernel" not implemented for
/// 'Long'`).
fn float_kernel(t: &Tensor, kernel: &str) -> Result<()> {
    if t.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::dtype_not_implemented(kernel, t.dtype()))
    }
}

/// Which bilinear map of a convolution geometry.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Map {
    /// matrix = forward(image, weight)
    Forward,
    /// image = data(matrix, weight)
    Data,
    /// weight = weight(matrix, image)
    Weight,
}

/// The shapes the three operands have as the user sees them (3-D or 4-D; weights 3-D or 4-D).
#[derive(Clone)]
struct Shapes {
    image: Vec<usize>,
    matrix: Vec<usize>,
    weight: Vec<usize>,
}

/// Computes one map without recording anything (the bias, of the forward or data map, is
/// added by the kernel).
fn compute(
    map: Map,
    a: &Tensor,
    b: &Tensor,
    bias: Option<&Tensor>,
    g: &Geom,
    s: &Shapes,
) -> Result<Tensor> {
    let dtype = a.dtype();
    dispatch_float!(dtype, T => {
        let bias: Option<Vec<T>> = bias.map(super::cast_vec::<T>).transpose()?;
        let bias = bias.as_deref();
        let v = with_slice::<T, _>(a, |a| with_slice::<T, _>(b, |b| match map {
            Map::Forward => kc::forward(a, b, bias, g),
            Map::Data => kc::data(a, b, bias, g),
            Map::Weight => kc::weight(a, b, g),
        }))???;
        let shape = match map {
            Map::Forward => &s.matrix,
            Map::Data => &s.image,
            Map::Weight => &s.weight,
        };
        Tensor::from_vec(v, shape.clone())
    })
}

/// One map as a differentiable op (used by backward formulas): its gradients are the other two
/// maps.
fn map_op(map: Map, a: &Tensor, b: &Tensor, g: Geom, s: Shapes) -> Result<Tensor> {
    let out = compute(map, a, b, None, &g, &s)?;
    if needs_grad(&[a, b]) {
        let saved = vec![
            crate::autograd::Saved::Input(a.clone()),
            crate::autograd::Saved::Input(b.clone()),
        ];
        record(
            "ConvolutionBackwardBackward0",
            &[a, b],
            &[&out],
            saved,
            move |ctx| {
                let go = ctx.grad(0)?;
                let (a, b) = (&ctx.saved[0], &ctx.saved[1]);
                let s = s.clone();
                let (ga, gb) = match map {
                    // matrix = F(image a, weight b)
                    Map::Forward => (
                        grad_if(ctx.needs(0), || map_op(Map::Data, &go, b, g, s.clone()))?,
                        grad_if(ctx.needs(1), || map_op(Map::Weight, &go, a, g, s.clone()))?,
                    ),
                    // image = D(matrix a, weight b)
                    Map::Data => (
                        grad_if(ctx.needs(0), || map_op(Map::Forward, &go, b, g, s.clone()))?,
                        grad_if(ctx.needs(1), || map_op(Map::Weight, a, &go, g, s.clone()))?,
                    ),
                    // weight = W(matrix a, image b)
                    Map::Weight => (
                        grad_if(ctx.needs(0), || map_op(Map::Forward, b, &go, g, s.clone()))?,
                        grad_if(ctx.needs(1), || map_op(Map::Data, a, &go, g, s.clone()))?,
                    ),
                };
                Ok(vec![ga, gb])
            },
        );
    }
    Ok(out)
}

fn grad_if(needed: bool, f: impl FnOnce() -> Result<Tensor>) -> Result<Option<Tensor>> {
    if needed {
        f().map(Some)
    } else {
        Ok(None)
    }
}

/// Convolution parameters, one entry per spatial dim (1 or 2).
pub struct ConvParams {
    pub stride: Vec<usize>,
    pub padding: Vec<usize>,
    pub dilation: Vec<usize>,
    pub groups: usize,
    pub transposed: bool,
    pub output_padding: Vec<usize>,
}

impl ConvParams {
    /// From PyTorch's arguments, with its checks of them.
    pub fn new(
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        groups: i64,
        transposed: bool,
        output_padding: &[i64],
    ) -> Result<ConvParams> {
        for (v, what) in [
            (stride, "stride"),
            (dilation, "dilation"),
            (&[groups][..], "groups"),
        ] {
            if v.iter().any(|&s| s <= 0) {
                return Err(Error::Runtime(format!(
                    "non-positive {what} is not supported"
                )));
            }
        }
        Ok(ConvParams {
            stride: sizes(stride, "stride")?,
            padding: sizes(padding, "padding")?,
            dilation: sizes(dilation, "dilation")?,
            groups: groups as usize,
            transposed,
            output_padding: sizes(output_padding, "output padding")?,
        })
    }
}

/// A per-dim size argument of a convolution or pooling op (kernel size, stride, padding...),
/// which PyTorch requires to be non-negative.
pub fn sizes(v: &[i64], what: &str) -> Result<Vec<usize>> {
    if let Some(&x) = v.iter().find(|&&x| x < 0) {
        return Err(Error::Runtime(match what {
            "pool padding" => format!("pad must be non-negative, but got pad: {x}"),
            _ => format!("negative {what} is not supported"),
        }));
    }
    Ok(v.iter().map(|&x| x as usize).collect())
}

/// (height, width) of a per-dim parameter; 1-d convolutions have height `unit` (1 for
/// strides and dilations, 0 for paddings).
fn pair(v: &[usize], unit: usize) -> (usize, usize) {
    if v.len() == 1 {
        (unit, v[0])
    } else {
        (v[0], v[1])
    }
}

/// `torch.convolution`: conv1d/conv2d (input N,C,L or N,C,H,W) and their transposed forms, with
/// bias. One node, ConvolutionBackward0, as in PyTorch.
pub fn convolution(x: &Tensor, w: &Tensor, b: Option<&Tensor>, p: &ConvParams) -> Result<Tensor> {
    let (x, w) = (&super::autocast::lower(x)?, &super::autocast::lower(w)?);
    let b = super::autocast::lower_opt(b)?;
    let b = b.as_ref();
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        let (xu, wu, bu) = (super::up(x)?, super::up(w)?, super::up_opt(b)?);
        return super::to_dtype(&convolution(&xu, &wu, bu.as_ref(), p)?, d);
    }
    let (g, shapes) = conv_geometry(x, w, b, p)?;
    let (image, matrix) = if p.transposed {
        (None, Some(x))
    } else {
        (Some(x), None)
    };
    let out = match (image, matrix) {
        (Some(img), _) => compute(Map::Forward, img, w, b, &g, &shapes)?,
        (_, Some(m)) => compute(Map::Data, m, w, b, &g, &shapes)?,
        _ => unreachable!(),
    };
    let inputs: Vec<&Tensor> = match b {
        Some(b) => vec![x, w, b],
        None => vec![x, w],
    };
    if needs_grad(&inputs) {
        let transposed = p.transposed;
        let has_bias = b.is_some();
        let saved = vec![
            crate::autograd::Saved::Input(x.clone()),
            crate::autograd::Saved::Input(w.clone()),
        ];
        record(
            "ConvolutionBackward0",
            &inputs,
            &[&out],
            saved,
            move |ctx| {
                let go = ctx.grad(0)?;
                let (x, w) = (&ctx.saved[0], &ctx.saved[1]);
                let s = shapes.clone();
                let (gx, gw) = if transposed {
                    // out (image) = D(x (matrix), w)
                    (
                        grad_if(ctx.needs(0), || map_op(Map::Forward, &go, w, g, s.clone()))?,
                        grad_if(ctx.needs(1), || map_op(Map::Weight, x, &go, g, s.clone()))?,
                    )
                } else {
                    (
                        grad_if(ctx.needs(0), || map_op(Map::Data, &go, w, g, s.clone()))?,
                        grad_if(ctx.needs(1), || map_op(Map::Weight, &go, x, g, s.clone()))?,
                    )
                };
                let mut grads = vec![gx, gw];
                if has_bias {
                    let dims: Vec<i64> = (0..go.ndim() as i64).filter(|&d| d != 1).collect();
                    grads.push(grad_if(ctx.needs(2), || {
                        sum_dims(&go, Some(&dims), false, None)
                    })?);
                }
                Ok(grads)
            },
        );
    }
    Ok(out)
}

/// Checks a convolution's arguments with PyTorch's messages and builds its geometry.
fn conv_geometry(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    p: &ConvParams,
) -> Result<(Geom, Shapes)> {
    let nd = p.stride.len();
    let xs = x.shape();
    let ws = w.shape();
    if !(nd == 1 || nd == 2) || xs.len() != nd + 2 || ws.len() != nd + 2 {
        return Err(Error::Runtime(format!(
            "Expected {}D (unbatched) or {}D (batched) input to conv{nd}d, but got input of size: {}",
            nd + 1,
            nd + 2,
            fmt_list(xs)
        )));
    }
    if x.dtype() != w.dtype() || b.is_some_and(|b| b.dtype() != x.dtype()) {
        let other = if x.dtype() != w.dtype() {
            w.dtype()
        } else {
            b.map(|b| b.dtype()).unwrap_or(x.dtype())
        };
        return Err(Error::Runtime(format!(
            "expected scalar type {} but found {}",
            x.dtype().kernel_name(),
            other.kernel_name()
        )));
    }
    float_only(x, "convolution")?;
    if p.stride.contains(&0) {
        return Err(Error::Runtime(
            "non-positive stride is not supported".into(),
        ));
    }
    if p.dilation.contains(&0) {
        return Err(Error::Runtime(
            "non-positive dilation is not supported".into(),
        ));
    }
    let groups = p.groups;
    if groups == 0 {
        return Err(Error::Runtime(
            "non-positive groups is not supported".into(),
        ));
    }
    if ws[0] == 0 {
        return Err(Error::Runtime(format!(
            "Given groups={groups}, expected weight to be at least 1 at dimension 0, but got weight of size {} instead",
            fmt_list(ws)
        )));
    }
    if !ws[0].is_multiple_of(groups) {
        return Err(Error::Runtime(format!(
            "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size [{}] instead",
            fmt_list(ws)
        )));
    }
    let c_in = xs[1];
    let expected_in = if p.transposed { ws[0] } else { ws[1] * groups };
    if c_in != expected_in {
        let kind = if p.transposed {
            "transposed=1".to_string()
        } else {
            format!("groups={groups}")
        };
        return Err(Error::Runtime(format!(
            "Given {kind}, weight of size {}, expected input{} to have {expected_in} channels, but got {c_in} channels instead",
            fmt_list(ws),
            fmt_list(xs)
        )));
    }
    let out_channels = if p.transposed { ws[1] * groups } else { ws[0] };
    if let Some(b) = b {
        if b.ndim() != 1 || b.numel() != out_channels {
            return Err(Error::Runtime(format!(
                "Given {}weight of size {}, expected bias to be 1-dimensional with {out_channels} elements, but got bias of size {} instead",
                if p.transposed { "transposed=1, " } else { "" },
                fmt_list(ws),
                fmt_list(b.shape())
            )));
        }
    }
    let (sh, sw) = pair(&p.stride, 1);
    let (ph, pw) = pair(&p.padding, 0);
    let (dh, dw) = pair(&p.dilation, 1);
    let (kh, kw) = if nd == 1 { (1, ws[2]) } else { (ws[2], ws[3]) };
    let (ih, iw) = if nd == 1 { (1, xs[2]) } else { (xs[2], xs[3]) };
    let n = xs[0];
    let dims_text = |v: &[usize]| {
        v.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(" x ")
    };
    let overflow = || {
        Error::Runtime(format!(
            "convolution sizes overflow: input {}, weight {}, stride {:?}, padding {:?}, dilation {:?}",
            fmt_list(xs),
            fmt_list(ws),
            p.stride,
            p.padding,
            p.dilation
        ))
    };
    // the geometry from an image of (h, w) to a matrix of (oh, ow) positions
    let geom = |(h, w): (usize, usize), (oh, ow): (usize, usize)| Geom {
        n,
        groups,
        c: ws[1],
        h,
        w,
        og: ws[0] / groups,
        kh,
        kw,
        sh,
        sw,
        ph,
        pw,
        dh,
        dw,
        oh,
        ow,
    };
    if p.transposed {
        let (oph, opw) = pair(&p.output_padding, 0);
        if oph >= sh.max(dh) || opw >= sw.max(dw) {
            return Err(Error::Runtime(format!(
                "output padding must be smaller than either stride or dilation, but got output_padding_height: {oph} output_padding_width: {opw} stride_height: {sh} stride_width: {sw} dilation_height: {dh} dilation_width: {dw}"
            )));
        }
        let len = |i: usize, s: usize, p: usize, d: usize, k: usize, op: usize| -> Result<usize> {
            let [i, s, p, d, k, op] = [i, s, p, d, k, op].map(|v| v as i128);
            let v = (i - 1) * s - 2 * p + d * (k - 1) + op + 1;
            if v < 0 {
                return Err(Error::Runtime(format!(
                    "Given input size per channel: ({}). Calculated output size per channel: ({v}). Output size is too small",
                    dims_text(&xs[2..])
                )));
            }
            usize::try_from(v).map_err(|_| overflow())
        };
        let oh = len(ih, sh, ph, dh, kh, oph)?;
        let ow = len(iw, sw, pw, dw, kw, opw)?;
        // the image is the output, the matrix the input
        let g = geom((oh, ow), (ih, iw));
        g.check()?;
        let image = if nd == 1 {
            vec![n, out_channels, ow]
        } else {
            vec![n, out_channels, oh, ow]
        };
        return Ok((
            g,
            Shapes {
                image,
                matrix: xs.to_vec(),
                weight: ws.to_vec(),
            },
        ));
    }
    let extent = |i: usize, p: usize| p.checked_mul(2).and_then(|p2| p2.checked_add(i));
    let dilated = |d: usize, k: usize| d.checked_mul(k - 1).and_then(|e| e.checked_add(1));
    let (Some(ph2), Some(pw2), Some(kh2), Some(kw2)) = (
        extent(ih, ph),
        extent(iw, pw),
        dilated(dh, kh),
        dilated(dw, kw),
    ) else {
        return Err(overflow());
    };
    let padded = [ph2, pw2];
    let kext = [kh2, kw2];
    if padded[0] < kext[0] || padded[1] < kext[1] {
        let (pi, ke): (Vec<usize>, Vec<usize>) = if nd == 1 {
            (vec![padded[1]], vec![kext[1]])
        } else {
            (padded.to_vec(), kext.to_vec())
        };
        return Err(Error::Runtime(format!(
            "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
            dims_text(&pi),
            dims_text(&ke)
        )));
    }
    let oh = (padded[0] - kext[0]) / sh + 1;
    let ow = (padded[1] - kext[1]) / sw + 1;
    let g = geom((ih, iw), (oh, ow));
    g.check()?;
    let matrix = if nd == 1 {
        vec![n, out_channels, ow]
    } else {
        vec![n, out_channels, oh, ow]
    };
    Ok((
        g,
        Shapes {
            image: xs.to_vec(),
            matrix,
            weight: ws.to_vec(),
        },
    ))
}

// --- pooling ----------------------------------------------------------------------------------

/// The planes (N*C or C) and spatial size of a pooling input (3-D or 4-D), with PyTorch's
/// checks.
fn planes_of(x: &Tensor, name: &str) -> Result<(usize, usize, usize)> {
    let s = x.shape();
    if !(s.len() == 3 || s.len() == 4) {
        if name == "avg_pool2d" {
            return Err(crate::error::dim_out_of_range(-3, s.len()));
        }
        return Err(Error::Runtime(
            "non-empty 3D or 4D (batch mode) tensor expected for input".into(),
        ));
    }
    if s[s.len() - 2] == 0 || s[s.len() - 1] == 0 || s.len() == 4 && s[1] == 0 {
        return Err(Error::Runtime(format!(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:{}",
            fmt_list(s)
        )));
    }
    let planes: usize = s[..s.len() - 2].iter().product();
    Ok((planes, s[s.len() - 2], s[s.len() - 1]))
}

fn out_shape(x: &Tensor, oh: usize, ow: usize) -> Vec<usize> {
    let s = x.shape();
    let mut o = s[..s.len() - 2].to_vec();
    o.extend([oh, ow]);
    o
}

/// `max_pool1d` of `(N, C, L)` or `(C, L)` when neither indices nor a gradient are wanted:
/// values only, as PyTorch's CPU `max_pool1d` (the caller checks the arguments and the grad
/// requirement).
pub fn max_pool1d_values(
    x: &Tensor,
    kernel: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
    ceil_mode: bool,
) -> Result<Tensor> {
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new();
        let y = max_pool1d_values(&super::up(x)?, kernel, stride, padding, dilation, ceil_mode)?;
        return super::to_dtype(&y, d);
    }
    float_only(x, "max_pool1d")?;
    let s = x.shape();
    let (l, planes) = (s[s.len() - 1], s[..s.len() - 1].iter().product::<usize>());
    check_pool_args((1, kernel), (1, stride), (0, padding), (1, dilation))?;
    let ol = kc::pool_out_len(l, kernel, padding, stride, dilation, ceil_mode);
    if ol <= 0 {
        let c = s[s.len() - 2];
        return Err(Error::Runtime(format!(
            "Given input size: ({c}x1x{l}). Calculated output size: ({c}x1x{ol}). Output size is too small"
        )));
    }
    let g = PoolGeom {
        planes,
        h: 1,
        w: l,
        kh: 1,
        kw: kernel,
        sh: 1,
        sw: stride,
        ph: 0,
        pw: padding,
        dh: 1,
        dw: dilation,
        oh: 1,
        ow: ol as usize,
    };
    let mut oshape = s[..s.len() - 1].to_vec();
    oshape.push(ol as usize);
    dispatch_float!(x.dtype(), T => {
        let v = with_slice::<T, _>(x, |xs| kc::max_pool1d_values(xs, &g))??;
        Tensor::from_vec(v, oshape)
    })
}

/// `max_pool2d_with_indices`: values and indices into each h*w plane (MaxPool2DWithIndicesBackward0).
#[allow(clippy::too_many_arguments)]
pub fn max_pool2d(
    x: &Tensor,
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        let (y, i) = max_pool2d(&super::up(x)?, kernel, stride, padding, dilation, ceil_mode)?;
        return Ok((super::to_dtype(&y, d)?, i));
    }
    float_only(x, "max_pool2d")?;
    let (planes, h, w) = planes_of(x, "max_pool2d")?;
    check_pool_args(kernel, stride, padding, dilation)?;
    let oh = kc::pool_out_len(h, kernel.0, padding.0, stride.0, dilation.0, ceil_mode);
    let ow = kc::pool_out_len(w, kernel.1, padding.1, stride.1, dilation.1, ceil_mode);
    if oh <= 0 || ow <= 0 {
        return Err(Error::Runtime(format!(
            "Given input size: ({}x{}x{}). Calculated output size: ({}x{}x{}). Output size is too small",
            x.shape()[x.ndim() - 3], h, w, x.shape()[x.ndim() - 3], oh, ow
        )));
    }
    let (oh, ow) = (oh as usize, ow as usize);
    let g = PoolGeom {
        planes,
        h,
        w,
        kh: kernel.0,
        kw: kernel.1,
        sh: stride.0,
        sw: stride.1,
        ph: padding.0,
        pw: padding.1,
        dh: dilation.0,
        dw: dilation.1,
        oh,
        ow,
    };
    let oshape = out_shape(x, oh, ow);
    let (vals, idx) = dispatch_float!(x.dtype(), T => {
        let (v, i) = with_slice::<T, _>(x, |s| kc::max_pool(s, &g))??;
        (Tensor::from_vec(v, oshape.clone())?, Tensor::from_vec(i, oshape.clone())?)
    });
    if needs_grad(&[x]) {
        let ishape = x.shape().to_vec();
        record(
            "MaxPool2DWithIndicesBackward0",
            &[x],
            &[&vals],
            vec![Saved::Input(idx.clone())],
            move |ctx| {
                let indices = &ctx.saved[0];
                let g = ctx.grad(0)?;
                let gx = max_pool_backward(&g, indices, planes, h * w, &ishape, MAX_POOL_2D_BB)?;
                Ok(vec![Some(gx)])
            },
        );
    }
    Ok((vals, idx))
}

/// Adaptive max pooling of `x`'s last `output_size.len()` (1 to 3) dims to `output_size`:
/// values and indices into each pooled plane or volume (AdaptiveMaxPool2DBackward0, or 3D
/// for three dims; 1-d pooling is PyTorch's 2-d one). The caller has checked the sizes.
pub fn adaptive_max_pool(x: &Tensor, output_size: &[usize]) -> Result<(Tensor, Tensor)> {
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        let (y, i) = adaptive_max_pool(&super::up(x)?, output_size)?;
        return Ok((super::to_dtype(&y, d)?, i));
    }
    let k = output_size.len();
    float_only(
        x,
        if k == 3 {
            "adaptive_max_pool3d"
        } else {
            "adaptive_max_pool2d"
        },
    )?;
    if !(1..=3).contains(&k) || x.ndim() < k {
        return Err(Error::Runtime(format!(
            "adaptive_max_pool: {k} output sizes for an input of shape {}",
            fmt_list(x.shape())
        )));
    }
    let lead = &x.shape()[..x.ndim() - k];
    let planes: usize = lead.iter().product();
    let (mut size, mut out) = ([1; 3], [1; 3]);
    size[3 - k..].copy_from_slice(&x.shape()[x.ndim() - k..]);
    out[3 - k..].copy_from_slice(output_size);
    let oshape: Vec<usize> = lead.iter().chain(output_size).copied().collect();
    let (vals, idx) = dispatch_float!(x.dtype(), T => {
        let (v, i) = with_slice::<T, _>(x, |s| kc::adaptive_max_pool(s, planes, size, out))??;
        (Tensor::from_vec(v, oshape.clone())?, Tensor::from_vec(i, oshape.clone())?)
    });
    if needs_grad(&[x]) {
        let ishape = x.shape().to_vec();
        let (name, bb) = if k == 3 {
            (
                "AdaptiveMaxPool3DBackward0",
                "AdaptiveMaxPool3DBackwardBackward0",
            )
        } else {
            (
                "AdaptiveMaxPool2DBackward0",
                "AdaptiveMaxPool2DBackwardBackward0",
            )
        };
        let vol = size.iter().product::<usize>();
        record(
            name,
            &[x],
            &[&vals],
            vec![Saved::Input(idx.clone())],
            move |ctx| {
                let g = ctx.grad(0)?;
                let gx = max_pool_backward(&g, &ctx.saved[0], planes, vol, &ishape, bb)?;
                Ok(vec![Some(gx)])
            },
        );
    }
    Ok((vals, idx))
}

const MAX_POOL_2D_BB: &str = "MaxPool2DWithIndicesBackwardBackward0";

/// Max pooling's backward as an op: each window's gradient added at its maximum. Its own
/// gradient (node `name`) gathers the incoming one at the same positions.
fn max_pool_backward(
    g: &Tensor,
    indices: &Tensor,
    planes: usize,
    hw: usize,
    ishape: &[usize],
    name: &'static str,
) -> Result<Tensor> {
    let ohw = indices.numel() / planes.max(1);
    let idx = indices.try_to_vec::<i64>()?;
    let out = dispatch_float!(g.dtype(), T => {
        let v = with_slice::<T, _>(g, |gs| kc::max_pool_scatter(gs, &idx, planes, hw, ohw))??;
        Tensor::from_vec(v, ishape.to_vec())?
    });
    if needs_grad(&[g]) {
        let oshape = g.shape().to_vec();
        record(
            name,
            &[g],
            &[&out],
            vec![Saved::Input(indices.clone())],
            move |ctx| {
                let flat = [planes, hw];
                let gg = reshape(&ctx.grad(0)?, &flat)?;
                let indices = reshape(&ctx.saved[0], &[planes, ohw])?;
                let picked = super::index::gather(&gg, 1, &indices)?;
                Ok(vec![Some(reshape(&picked, &oshape)?)])
            },
        );
    }
    Ok(out)
}

fn check_pool_args(
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
) -> Result<()> {
    if stride.0 == 0 || stride.1 == 0 {
        return Err(Error::Runtime("stride should not be zero".into()));
    }
    if kernel.0 == 0 || kernel.1 == 0 {
        return Err(Error::Runtime(
            "kernel size should be greater than zero, but got kH: 0 kW: 0"
                .replace("kH: 0 kW: 0", &format!("kH: {} kW: {}", kernel.0, kernel.1)),
        ));
    }
    if stride.0 == 0 || stride.1 == 0 {
        return Err(Error::Runtime(format!(
            "stride should be greater than zero, but got dH: {} dW: {}",
            stride.0, stride.1
        )));
    }
    if dilation.0 == 0 || dilation.1 == 0 {
        return Err(Error::Runtime(format!(
            "dilation should be greater than zero, but got dilationH: {} dilationW: {}",
            dilation.0, dilation.1
        )));
    }
    if padding.0 * 2 > kernel.0 || padding.1 * 2 > kernel.1 {
        return Err(Error::Runtime(format!(
            "pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}",
            padding.0.max(padding.1),
            kernel.0.max(kernel.1),
            dilation.0.max(dilation.1)
        )));
    }
    Ok(())
}

/// Where an averaging pool reads: its windows over `planes` planes of h x w, and the shapes
/// of its input (the image) and output.
#[derive(Clone)]
struct WindowPlan {
    windows: std::sync::Arc<Vec<Window>>,
    planes: usize,
    h: usize,
    w: usize,
    image: Vec<usize>,
    pooled: Vec<usize>,
}

/// A window average (forward: image -> pooled) or its adjoint (pooled -> image), as a
/// differentiable op: each is the other's gradient.
fn window_op(x: &Tensor, adjoint: bool, name: &'static str, plan: WindowPlan) -> Result<Tensor> {
    let shape = if adjoint { &plan.image } else { &plan.pooled };
    let out = dispatch_float!(x.dtype(), T => {
        let v = with_slice::<T, _>(x, |s| if adjoint {
            kc::window_avg_adjoint(s, plan.planes, plan.h, plan.w, &plan.windows)
        } else {
            kc::window_avg(s, plan.planes, plan.h, plan.w, &plan.windows)
        })??;
        Tensor::from_vec(v, shape.clone())?
    });
    if needs_grad(&[x]) {
        // PyTorch's average-pooling nodes save their input (for its size): saved here too, so
        // that a second backward through the freed graph raises as there
        let saved = if adjoint {
            vec![]
        } else {
            vec![Saved::Input(x.clone())]
        };
        record(name, &[x], &[&out], saved, move |ctx| {
            let g = window_op(
                &ctx.grad(0)?,
                !adjoint,
                "AvgPool2DBackwardBackward0",
                plan.clone(),
            )?;
            Ok(vec![Some(g)])
        });
    }
    Ok(out)
}

/// `avg_pool2d` (AvgPool2DBackward0).
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d(
    x: &Tensor,
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
    ceil_mode: bool,
    count_include_pad: bool,
    divisor: Option<i64>,
) -> Result<Tensor> {
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        let y = avg_pool2d(
            &super::up(x)?,
            kernel,
            stride,
            padding,
            ceil_mode,
            count_include_pad,
            divisor,
        )?;
        return super::to_dtype(&y, d);
    }
    float_only(x, "avg_pool2d")?;
    let (planes, h, w) = planes_of(x, "avg_pool2d")?;
    check_pool_args(kernel, stride, padding, (1, 1))?;
    if divisor == Some(0) {
        return Err(Error::Runtime("divisor must be not zero".into()));
    }
    let oh = kc::pool_out_len(h, kernel.0, padding.0, stride.0, 1, ceil_mode);
    let ow = kc::pool_out_len(w, kernel.1, padding.1, stride.1, 1, ceil_mode);
    if oh <= 0 || ow <= 0 {
        return Err(Error::Runtime(format!(
            "Given input size: ({}x{}x{}). Calculated output size: ({}x{}x{}). Output size is too small",
            x.shape()[x.ndim() - 3], h, w, x.shape()[x.ndim() - 3], oh, ow
        )));
    }
    let (oh, ow) = (oh as usize, ow as usize);
    let windows = kc::avg_windows(
        h,
        w,
        oh,
        ow,
        kernel,
        stride,
        padding,
        count_include_pad,
        divisor,
    )?;
    let plan = WindowPlan {
        windows: std::sync::Arc::new(windows),
        planes,
        h,
        w,
        image: x.shape().to_vec(),
        pooled: out_shape(x, oh, ow),
    };
    window_op(x, false, "AvgPool2DBackward0", plan)
}

/// `adaptive_avg_pool2d` (AdaptiveAvgPool2DBackward0).
pub fn adaptive_avg_pool2d(x: &Tensor, out: (usize, usize)) -> Result<Tensor> {
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        return super::to_dtype(&adaptive_avg_pool2d(&super::up(x)?, out)?, d);
    }
    float_kernel(x, "adaptive_avg_pool2d")?;
    let s = x.shape();
    if !(s.len() == 3 || s.len() == 4) {
        return Err(Error::Runtime(format!(
            "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {}",
            fmt_list(s)
        )));
    }
    if let Some(d) = (s.len() - 2..s.len()).find(|&d| s[d] == 0) {
        return Err(Error::Runtime(format!(
            "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {} with dimension {d} being empty",
            fmt_list(s)
        )));
    }
    if x.numel() == 0 {
        return Tensor::zeros(&out_shape(x, out.0, out.1), x.dtype());
    }
    let (planes, h, w) = planes_of(x, "adaptive_avg_pool2d")?;
    if out == (1, 1) {
        // PyTorch computes a global average pool as a mean (MeanBackward1)
        return super::reduce::mean(x, Some(&[-2, -1]), true, None);
    }
    let windows = kc::adaptive_windows(h, w, out.0, out.1)?;
    let plan = WindowPlan {
        windows: std::sync::Arc::new(windows),
        planes,
        h,
        w,
        image: x.shape().to_vec(),
        pooled: out_shape(x, out.0, out.1),
    };
    window_op(x, false, "AdaptiveAvgPool2DBackward0", plan)
}

/// The sliding-block geometry of `unfold`/`fold` over an image of c x h x w, with PyTorch's
/// check that there is at least one block.
#[allow(clippy::too_many_arguments)]
fn blocks_geom(
    n: usize,
    c: usize,
    (h, w): (usize, usize),
    k: (usize, usize),
    d: (usize, usize),
    p: (usize, usize),
    s: (usize, usize),
) -> Result<Geom> {
    // in i128: hostile sizes cannot overflow (the geometry is checked below)
    let blocks = |len: usize, k: usize, d: usize, p: usize, s: usize| {
        let [len, k, d, p, s] = [len, k, d, p, s].map(|v| v as i128);
        let v = (len + 2 * p - d * (k.max(1) - 1) - 1).div_euclid(s.max(1)) + 1;
        v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    };
    let (oh, ow) = (blocks(h, k.0, d.0, p.0, s.0), blocks(w, k.1, d.1, p.1, s.1));
    if oh < 1 || ow < 1 {
        return Err(Error::Runtime(format!(
            "Given input with spatial size ({h}, {w}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), calculated shape of the array of sliding blocks as ({oh}, {ow}), but its components must be at least one.",
            k.0, k.1, d.0, d.1, p.0, p.1
        )));
    }
    let g = Geom {
        n,
        groups: 1,
        c,
        h,
        w,
        og: 1,
        kh: k.0,
        kw: k.1,
        sh: s.0,
        sw: s.1,
        ph: p.0,
        pw: p.1,
        dh: d.0,
        dw: d.1,
        oh: oh as usize,
        ow: ow as usize,
    };
    g.check()?;
    Ok(g)
}

/// `F.unfold` (Im2ColBackward0): (N, C, H, W) -> (N, C*kh*kw, L), or unbatched (C, H, W) ->
/// (C*kh*kw, L). Its gradient is `fold`, and `fold`'s is `unfold`.
pub fn unfold(
    x: &Tensor,
    k: (usize, usize),
    d: (usize, usize),
    p: (usize, usize),
    s: (usize, usize),
) -> Result<Tensor> {
    if let Some(dt) = super::half_precision(x) {
        // computed in float32, rounded once (a copy: exact)
        let _float32 = super::autocast::Suspend::new();
        return super::to_dtype(&unfold(&super::up(x)?, k, d, p, s)?, dt);
    }
    float_kernel(x, "im2col_out_cpu")?;
    let xs = x.shape();
    if !(xs.len() == 3 || xs.len() == 4) {
        return Err(Error::Runtime(format!(
            "Input Error: Only 3D or 4D input Tensors are supported (got {}D)",
            xs.len()
        )));
    }
    let batched = xs.len() == 4;
    let (n, c) = if batched { (xs[0], xs[1]) } else { (1, xs[0]) };
    let (h, w) = (xs[xs.len() - 2], xs[xs.len() - 1]);
    let g = blocks_geom(n, c, (h, w), k, d, p, s)?;
    let (rows, l) = (g.rows(), g.cols());
    let out = dispatch_float!(x.dtype(), T => {
        let v = with_slice::<T, _>(x, |src| {
            let mut out = crate::storage::try_vec::<T>(n * rows * l)?;
            for (i, cols) in out.chunks_mut((rows * l).max(1)).enumerate().take(n) {
                kc::im2col(&src[i * c * h * w..(i + 1) * c * h * w], &g, cols);
            }
            Ok(out)
        })??;
        let shape = if batched { vec![n, rows, l] } else { vec![rows, l] };
        Tensor::from_vec(v, shape)?
    });
    if needs_grad(&[x]) {
        record("Im2ColBackward0", &[x], &[&out], vec![], move |ctx| {
            Ok(vec![Some(fold(&ctx.grad(0)?, (h, w), k, d, p, s)?)])
        });
    }
    Ok(out)
}

/// `F.fold` (Col2ImBackward0): (N, C*kh*kw, L) -> (N, C, H, W), overlapping blocks summed.
pub fn fold(
    x: &Tensor,
    out_size: (usize, usize),
    k: (usize, usize),
    d: (usize, usize),
    p: (usize, usize),
    s: (usize, usize),
) -> Result<Tensor> {
    if let Some(dt) = super::half_precision(x) {
        // computed in float32 (the overlapping blocks summed there), rounded once
        let _float32 = super::autocast::Suspend::new();
        return super::to_dtype(&fold(&super::up(x)?, out_size, k, d, p, s)?, dt);
    }
    float_kernel(x, "col2im_out_cpu")?;
    let xs = x.shape();
    if !(xs.len() == 2 || xs.len() == 3) {
        return Err(Error::Runtime(format!(
            "Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got {}D)",
            xs.len()
        )));
    }
    let batched = xs.len() == 3;
    let (n, ckk, l) = if batched {
        (xs[0], xs[1], xs[2])
    } else {
        (1, xs[0], xs[1])
    };
    let kk = k.0 * k.1;
    let dim = if batched { 1 } else { 0 };
    if kk == 0 || ckk % kk != 0 {
        return Err(Error::Runtime(format!(
            "Expected size of input's dimension {dim} to be divisible by the product of kernel_size, but got input.size({dim})={ckk} and kernel_size=({}, {}).",
            k.0, k.1
        )));
    }
    let c = ckk / kk;
    let g = blocks_geom(n, c, out_size, k, d, p, s)?;
    if g.cols() != l {
        return Err(Error::Runtime(format!(
            "Given output_size=({}, {}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), stride=({}, {}), expected size of input's dimension {} to match the calculated number of sliding blocks {} * {} = {}, but got input.size({})={l}.",
            out_size.0, out_size.1, k.0, k.1, d.0, d.1, p.0, p.1, s.0, s.1,
            dim + 1, g.oh, g.ow, g.cols(), dim + 1
        )));
    }
    let (h, w) = out_size;
    let out = dispatch_float!(x.dtype(), T => {
        let v = with_slice::<T, _>(x, |src| {
            let mut out = crate::storage::try_vec::<T>(n * c * h * w)?;
            for (i, img) in out.chunks_mut((c * h * w).max(1)).enumerate().take(n) {
                kc::col2im(&src[i * ckk * l..(i + 1) * ckk * l], &g, img);
            }
            Ok(out)
        })??;
        let shape = if batched { vec![n, c, h, w] } else { vec![c, h, w] };
        Tensor::from_vec(v, shape)?
    });
    if needs_grad(&[x]) {
        record("Col2ImBackward0", &[x], &[&out], vec![], move |ctx| {
            Ok(vec![Some(unfold(&ctx.grad(0)?, k, d, p, s)?)])
        });
    }
    Ok(out)
}
