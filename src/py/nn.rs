//! Bindings of the fused nn ops: losses, linear, leaky_relu.

use super::errors::{run, Work};
use super::tensor::PyTensor;
use crate::ops::loss::{self, Pointwise, Reduction};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

#[pyfunction]
#[pyo3(signature = (kind, input, target, reduction, param = 1.0, weight = None, pos_weight = None))]
#[allow(clippy::too_many_arguments)]
fn _pointwise_loss(
    py: Python<'_>,
    kind: &str,
    input: PyRef<'_, PyTensor>,
    target: PyRef<'_, PyTensor>,
    reduction: &str,
    param: f64,
    weight: Option<PyRef<'_, PyTensor>>,
    pos_weight: Option<PyRef<'_, PyTensor>>,
) -> PyResult<PyTensor> {
    let r = Reduction::parse(reduction)?;
    let weight = weight.map(|w| w.t.clone());
    let (x, y) = (input.t.clone(), target.t.clone());
    let work = Work::elems(
        [&x, &y]
            .into_iter()
            .chain(&weight)
            .chain(pos_weight.as_ref().map(|w| &*w.t)),
    );
    let kind = match kind {
        "mse" => Pointwise::Mse,
        "smooth_l1" => Pointwise::SmoothL1 { beta: param },
        "huber" => Pointwise::Huber { delta: param },
        "bce" => Pointwise::Bce { weight },
        "bce_logits" => Pointwise::BceLogits {
            weight,
            pos_weight: pos_weight.map(|w| w.t.clone()),
        },
        _ => return Err(PyValueError::new_err(format!("unknown loss {kind}"))),
    };
    run(py, work, move || loss::pointwise_loss(kind, &x, &y, r)).map(PyTensor::new)
}

#[pyfunction]
fn _nll_loss(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    target: PyRef<'_, PyTensor>,
    weight: Option<PyRef<'_, PyTensor>>,
    reduction: &str,
    ignore_index: i64,
) -> PyResult<PyTensor> {
    let r = Reduction::parse(reduction)?;
    let (x, tg, w) = (
        input.t.clone(),
        target.t.clone(),
        weight.map(|w| w.t.clone()),
    );
    run(
        py,
        Work::elems([&x, &tg].into_iter().chain(&w)),
        move || loss::nll_loss(&x, &tg, w.as_ref(), r, ignore_index),
    )
    .map(PyTensor::new)
}

#[pyfunction]
fn _leaky_relu(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    negative_slope: f64,
) -> PyResult<PyTensor> {
    let x = input.t.clone();
    run(py, Work::elems([&x]), move || {
        crate::ops::leaky_relu(&x, negative_slope)
    })
    .map(PyTensor::new)
}

#[pyfunction]
#[pyo3(signature = (input, weight, bias = None))]
fn linear(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: PyRef<'_, PyTensor>,
    bias: Option<PyRef<'_, PyTensor>>,
) -> PyResult<PyTensor> {
    let (x, w, b) = (input.t.clone(), weight.t.clone(), bias.map(|b| b.t.clone()));
    let work = x.numel() * w.shape().first().copied().unwrap_or(1);
    run(
        py,
        Work::over([&x, &w].into_iter().chain(&b), work),
        move || crate::ops::linear(&x, &w, b.as_ref()),
    )
    .map(PyTensor::new)
}

fn sizes(v: &[i64], what: &str) -> PyResult<Vec<usize>> {
    Ok(crate::ops::conv::sizes(v, what)?)
}

fn two(v: &[usize]) -> (usize, usize) {
    match v {
        [a] => (*a, *a),
        [a, b, ..] => (*a, *b),
        [] => (0, 0),
    }
}

/// `torch.convolution(input, weight, bias, stride, padding, dilation, transposed,
/// output_padding, groups)` for 1-d and 2-d.
#[pyfunction]
#[pyo3(signature = (input, weight, bias, stride, padding, dilation, groups, transposed, output_padding))]
#[allow(clippy::too_many_arguments)]
fn conv(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: PyRef<'_, PyTensor>,
    bias: Option<PyRef<'_, PyTensor>>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    groups: i64,
    transposed: bool,
    output_padding: Vec<i64>,
) -> PyResult<PyTensor> {
    let p = crate::ops::conv::ConvParams::new(
        &stride,
        &padding,
        &dilation,
        groups,
        transposed,
        &output_padding,
    )?;
    let (x, w, b) = (input.t.clone(), weight.t.clone(), bias.map(|b| b.t.clone()));
    let work = x.numel() * w.numel();
    run(
        py,
        Work::over([&x, &w].into_iter().chain(&b), work),
        move || crate::ops::conv::convolution(&x, &w, b.as_ref(), &p),
    )
    .map(PyTensor::new)
}

/// Adaptive max pooling of the last `len(output_size)` (1 to 3) dims: (values, indices).
#[pyfunction]
fn adaptive_max_pool(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: Vec<i64>,
) -> PyResult<(PyTensor, PyTensor)> {
    let out = sizes(&output_size, "output size")?;
    let x = input.t.clone();
    run(py, Work::elems([&x]), move || {
        crate::ops::conv::adaptive_max_pool(&x, &out)
    })
    .map(|(v, i)| (PyTensor::new(v), PyTensor::new(i)))
}

/// `max_pool1d` values only (no indices, no graph).
#[pyfunction]
fn _max_pool1d_values(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: i64,
    stride: i64,
    padding: i64,
    dilation: i64,
    ceil_mode: bool,
) -> PyResult<PyTensor> {
    let [k, s, p, d] = [kernel_size, stride, padding, dilation].map(|v| v.max(0) as usize);
    let x = input.t.clone();
    run(py, Work::elems([&x]), move || {
        crate::ops::conv::max_pool1d_values(&x, k, s, p, d, ceil_mode)
    })
    .map(PyTensor::new)
}

/// A pass of `_ResamplePlan`: (dim, input size, index, weight).
type PassArg<'py> = (
    usize,
    usize,
    PyRef<'py, PyTensor>,
    Option<PyRef<'py, PyTensor>>,
);

/// The resampling passes of one `interpolate` call, built once per geometry (Python caches it).
#[pyclass(name = "_ResamplePlan", module = "ferrograd._core", frozen)]
pub struct PyResamplePlan(crate::ops::resample::Plan);

#[pymethods]
impl PyResamplePlan {
    /// `passes`: `(dim, input size, index, weight)` with `index` (int64) and `weight` (float64,
    /// or None for weights of 1) of shape (taps, output size); `name` names the node.
    #[new]
    fn new(passes: Vec<PassArg<'_>>, name: &str) -> PyResult<Self> {
        let passes = passes
            .iter()
            .map(|(dim, ins, index, weight)| {
                let outs = index.t.shape().last().copied().unwrap_or(0);
                let weight = weight
                    .as_ref()
                    .map(|w| crate::ops::cast_vec::<f64>(&w.t))
                    .transpose()?;
                let index = crate::ops::cast_vec::<i64>(&index.t)?;
                Ok((*dim, *ins, outs, index, weight))
            })
            .collect::<crate::error::Result<Vec<_>>>()?;
        Ok(PyResamplePlan(crate::ops::resample::Plan::new(
            passes, name,
        )?))
    }
}

/// `interpolate`'s resampling: `input` through the passes of `plan`, one node.
#[pyfunction]
fn _resample(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    plan: PyRef<'_, PyResamplePlan>,
) -> PyResult<PyTensor> {
    let (x, plan) = (input.t.clone(), plan.0.clone());
    run(py, Work::elems([&x]), move || {
        crate::ops::resample::resample(&x, &plan)
    })
    .map(PyTensor::new)
}

/// `input` (N, C, *sizes) sampled at `grid` (N, *points, dims) by ATen's grid sampler: one node
/// (`GridSampler2DBackward0` / `GridSampler3DBackward0`), with PyTorch's argument checks.
#[pyfunction]
fn _grid_sample(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    grid: PyRef<'_, PyTensor>,
    mode: &str,
    padding_mode: &str,
    align_corners: bool,
) -> PyResult<PyTensor> {
    use crate::kernels::grid_sample::{Mode, Padding};
    let mode = match mode {
        "bilinear" => Mode::Bilinear,
        "nearest" => Mode::Nearest,
        "bicubic" => Mode::Bicubic,
        other => {
            return Err(PyValueError::new_err(format!(
                "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or \
                 'bicubic', but got: '{other}'"
            )))
        }
    };
    let padding = match padding_mode {
        "zeros" => Padding::Zeros,
        "border" => Padding::Border,
        "reflection" => Padding::Reflection,
        other => {
            return Err(PyValueError::new_err(format!(
                "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', \
                 or 'reflection', but got: '{other}'"
            )))
        }
    };
    let (x, g) = (input.t.clone(), grid.t.clone());
    run(py, Work::elems([&x, &g]), move || {
        crate::ops::grid_sample::grid_sample(&x, &g, mode, padding, align_corners)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn max_pool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    ceil_mode: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let (k, s) = (
        two(&sizes(&kernel_size, "kernel size")?),
        two(&sizes(&stride, "stride")?),
    );
    let (p, d) = (
        two(&sizes(&padding, "pool padding")?),
        two(&sizes(&dilation, "dilation")?),
    );
    let x = input.t.clone();
    run(py, Work::elems([&x]), move || {
        crate::ops::conv::max_pool2d(&x, k, s, p, d, ceil_mode)
    })
    .map(|(v, i)| (PyTensor::new(v), PyTensor::new(i)))
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn avg_pool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> PyResult<PyTensor> {
    let (k, s) = (
        two(&sizes(&kernel_size, "kernel size")?),
        two(&sizes(&stride, "stride")?),
    );
    let p = two(&sizes(&padding, "pool padding")?);
    let x = input.t.clone();
    run(py, Work::elems([&x]), move || {
        crate::ops::conv::avg_pool2d(&x, k, s, p, ceil_mode, count_include_pad, divisor_override)
    })
    .map(PyTensor::new)
}

#[pyfunction]
fn adaptive_avg_pool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: Vec<i64>,
) -> PyResult<PyTensor> {
    let o = two(&sizes(&output_size, "output size")?);
    let x = input.t.clone();
    run(py, Work::elems([&x]), move || {
        crate::ops::conv::adaptive_avg_pool2d(&x, o)
    })
    .map(PyTensor::new)
}

fn opt(t: &Option<PyRef<'_, PyTensor>>) -> Option<crate::tensor::Tensor> {
    t.as_ref().map(|t| t.t.clone())
}

#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight = None, bias = None, eps = 1e-5))]
fn layer_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    normalized_shape: Vec<i64>,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    eps: f64,
) -> PyResult<PyTensor> {
    let shape = sizes(&normalized_shape, "normalized_shape")?;
    let (x, w, b) = (input.t.clone(), opt(&weight), opt(&bias));
    run(
        py,
        Work::elems([&x].into_iter().chain(&w).chain(&b)),
        move || crate::ops::norm::layer_norm(&x, &shape, w.as_ref(), b.as_ref(), eps),
    )
    .map(PyTensor::new)
}

#[pyfunction]
#[pyo3(signature = (input, num_groups, weight = None, bias = None, eps = 1e-5))]
fn group_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    num_groups: i64,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    eps: f64,
) -> PyResult<PyTensor> {
    let groups = sizes(&[num_groups], "num_groups")?[0];
    let (x, w, b) = (input.t.clone(), opt(&weight), opt(&bias));
    run(
        py,
        Work::elems([&x].into_iter().chain(&w).chain(&b)),
        move || crate::ops::norm::group_norm(&x, groups, w.as_ref(), b.as_ref(), eps),
    )
    .map(PyTensor::new)
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn batch_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    running_mean: Option<PyRef<'_, PyTensor>>,
    running_var: Option<PyRef<'_, PyTensor>>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> PyResult<PyTensor> {
    let (x, w, b) = (input.t.clone(), opt(&weight), opt(&bias));
    let (rm, rv) = (opt(&running_mean), opt(&running_var));
    run(
        py,
        Work::elems([&x].into_iter().chain(&w).chain(&b).chain(&rm).chain(&rv)),
        move || {
            crate::ops::norm::batch_norm(
                &x,
                w.as_ref(),
                b.as_ref(),
                rm.as_ref(),
                rv.as_ref(),
                training,
                momentum,
                eps,
            )
        },
    )
    .map(PyTensor::new)
}

/// Fused attention for 4-D q, k, v (no dropout); `attn_mask` is additive.
#[pyfunction]
#[pyo3(signature = (query, key, value, attn_mask, is_causal, scale))]
fn _sdpa(
    py: Python<'_>,
    query: PyRef<'_, PyTensor>,
    key: PyRef<'_, PyTensor>,
    value: PyRef<'_, PyTensor>,
    attn_mask: Option<PyRef<'_, PyTensor>>,
    is_causal: bool,
    scale: f64,
) -> PyResult<PyTensor> {
    let (q, k, v, m) = (
        query.t.clone(),
        key.t.clone(),
        value.t.clone(),
        opt(&attn_mask),
    );
    let work = q.numel() * k.shape().get(2).copied().unwrap_or(1);
    run(
        py,
        Work::over([&q, &k, &v].into_iter().chain(&m), work),
        move || crate::ops::attention::sdpa(&q, &k, &v, m.as_ref(), is_causal, scale),
    )
    .map(PyTensor::new)
}

/// `F.unfold`.
#[pyfunction]
fn im2col(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: Vec<i64>,
    dilation: Vec<i64>,
    padding: Vec<i64>,
    stride: Vec<i64>,
) -> PyResult<PyTensor> {
    let (k, d) = (
        two(&sizes(&kernel_size, "kernel size")?),
        two(&sizes(&dilation, "dilation")?),
    );
    let (p, s) = (
        two(&sizes(&padding, "padding")?),
        two(&sizes(&stride, "stride")?),
    );
    let x = input.t.clone();
    run(py, Work::over([&x], x.numel() * k.0 * k.1), move || {
        crate::ops::conv::unfold(&x, k, d, p, s)
    })
    .map(PyTensor::new)
}

/// `F.fold`.
#[pyfunction]
fn col2im(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: Vec<i64>,
    kernel_size: Vec<i64>,
    dilation: Vec<i64>,
    padding: Vec<i64>,
    stride: Vec<i64>,
) -> PyResult<PyTensor> {
    let o = two(&sizes(&output_size, "output size")?);
    let (k, d) = (
        two(&sizes(&kernel_size, "kernel size")?),
        two(&sizes(&dilation, "dilation")?),
    );
    let (p, s) = (
        two(&sizes(&padding, "padding")?),
        two(&sizes(&stride, "stride")?),
    );
    let x = input.t.clone();
    run(py, Work::elems([&x]), move || {
        crate::ops::conv::fold(&x, o, k, d, p, s)
    })
    .map(PyTensor::new)
}

/// One LSTM step's elementwise part: (h, c') from the gate pre-activations and the cell state.
#[pyfunction]
fn _lstm_cell(
    py: Python<'_>,
    gates: PyRef<'_, PyTensor>,
    c: PyRef<'_, PyTensor>,
) -> PyResult<(PyTensor, PyTensor)> {
    let (g, c) = (gates.t.clone(), c.t.clone());
    run(py, Work::elems([&g, &c]), move || {
        crate::ops::rnn::lstm_cell(&g, &c)
    })
    .map(|(h, c)| (PyTensor::new(h), PyTensor::new(c)))
}

/// One GRU step's elementwise part: h' from the input and hidden projections and the state.
#[pyfunction]
fn _gru_cell(
    py: Python<'_>,
    gi: PyRef<'_, PyTensor>,
    gh: PyRef<'_, PyTensor>,
    h: PyRef<'_, PyTensor>,
) -> PyResult<PyTensor> {
    let (gi, gh, h) = (gi.t.clone(), gh.t.clone(), h.t.clone());
    run(py, Work::elems([&gi, &gh, &h]), move || {
        crate::ops::rnn::gru_cell(&gi, &gh, &h)
    })
    .map(PyTensor::new)
}

/// A whole LSTM layer in one direction over a time-major sequence: (output, h_n, c_n).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _lstm_layer(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    h0: PyRef<'_, PyTensor>,
    c0: PyRef<'_, PyTensor>,
    w_ih: PyRef<'_, PyTensor>,
    w_hh: PyRef<'_, PyTensor>,
    b_ih: Option<PyRef<'_, PyTensor>>,
    b_hh: Option<PyRef<'_, PyTensor>>,
    reverse: bool,
) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let (x, h0, c0) = (input.t.clone(), h0.t.clone(), c0.t.clone());
    let (w_ih, w_hh) = (w_ih.t.clone(), w_hh.t.clone());
    let (b_ih, b_hh) = (b_ih.map(|b| b.t.clone()), b_hh.map(|b| b.t.clone()));
    let all = [&x, &h0, &c0, &w_ih, &w_hh]
        .into_iter()
        .chain(&b_ih)
        .chain(&b_hh);
    run(py, Work::elems(all), move || {
        crate::ops::rnn::lstm_layer(
            &x,
            &h0,
            &c0,
            &w_ih,
            &w_hh,
            b_ih.as_ref(),
            b_hh.as_ref(),
            reverse,
        )
    })
    .map(|(o, h, c)| (PyTensor::new(o), PyTensor::new(h), PyTensor::new(c)))
}

/// A whole GRU layer in one direction over a time-major sequence: (output, h_n).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _gru_layer(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    h0: PyRef<'_, PyTensor>,
    w_ih: PyRef<'_, PyTensor>,
    w_hh: PyRef<'_, PyTensor>,
    b_ih: Option<PyRef<'_, PyTensor>>,
    b_hh: Option<PyRef<'_, PyTensor>>,
    reverse: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let (x, h0) = (input.t.clone(), h0.t.clone());
    let (w_ih, w_hh) = (w_ih.t.clone(), w_hh.t.clone());
    let (b_ih, b_hh) = (b_ih.map(|b| b.t.clone()), b_hh.map(|b| b.t.clone()));
    let all = [&x, &h0, &w_ih, &w_hh]
        .into_iter()
        .chain(&b_ih)
        .chain(&b_hh);
    run(py, Work::elems(all), move || {
        crate::ops::rnn::gru_layer(&x, &h0, &w_ih, &w_hh, b_ih.as_ref(), b_hh.as_ref(), reverse)
    })
    .map(|(o, h)| (PyTensor::new(o), PyTensor::new(h)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(im2col, m)?)?;
    m.add_function(wrap_pyfunction!(col2im, m)?)?;
    m.add_function(wrap_pyfunction!(_sdpa, m)?)?;
    m.add_function(wrap_pyfunction!(layer_norm, m)?)?;
    m.add_function(wrap_pyfunction!(group_norm, m)?)?;
    m.add_function(wrap_pyfunction!(batch_norm, m)?)?;
    m.add_function(wrap_pyfunction!(conv, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(_max_pool1d_values, m)?)?;
    m.add_function(wrap_pyfunction!(_resample, m)?)?;
    m.add_class::<PyResamplePlan>()?;
    m.add_function(wrap_pyfunction!(_grid_sample, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_max_pool, m)?)?;
    m.add_function(wrap_pyfunction!(avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(_pointwise_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_leaky_relu, m)?)?;
    m.add_function(wrap_pyfunction!(linear, m)?)?;
    m.add_function(wrap_pyfunction!(_lstm_cell, m)?)?;
    m.add_function(wrap_pyfunction!(_gru_cell, m)?)?;
    m.add_function(wrap_pyfunction!(_lstm_layer, m)?)?;
    m.add_function(wrap_pyfunction!(_gru_layer, m)?)?;
    Ok(())
}
