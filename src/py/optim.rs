//! Bindings of the fused optimizer steps and the foreach helpers of `nn.utils`.

use super::errors::{run, Work};
use super::tensor::PyTensor;
use crate::kernels::optim::{Adadelta, Adagrad, Adam, RmsProp, Sgd};
use crate::ops::optim::{self, AdamState, RmsPropState};
use crate::tensor::Tensor;
use pyo3::prelude::*;

fn ts(v: &[PyRef<'_, PyTensor>]) -> Vec<Tensor> {
    v.iter().map(|t| t.t.clone()).collect()
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _sgd_step(
    py: Python<'_>,
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    momentum_buffers: Vec<Option<PyRef<'_, PyTensor>>>,
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    maximize: bool,
) -> PyResult<Vec<Option<Py<PyAny>>>> {
    let (p, g) = (ts(&params), ts(&grads));
    let bufs: Vec<Option<Tensor>> = momentum_buffers
        .iter()
        .map(|b| b.as_ref().map(|b| b.t.clone()))
        .collect();
    let a = Sgd {
        lr,
        momentum,
        dampening,
        weight_decay,
        nesterov,
        maximize,
        init_buffer: false,
    };
    let out = run(py, Work::elems(p.iter().chain(&g)), || {
        optim::sgd_step(&p, &g, bufs, a)
    })?;
    // existing buffers come back as the same Python objects
    out.into_iter()
        .zip(momentum_buffers)
        .map(|(b, old)| match (b, old) {
            (None, _) => Ok(None),
            (Some(_), Some(old)) => Ok(Some(old.into_pyobject(py)?.into_any().unbind())),
            (Some(b), None) => Ok(Some(Bound::new(py, PyTensor::new(b))?.into_any().unbind())),
        })
        .collect()
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _adam_step(
    py: Python<'_>,
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    exp_avgs: Vec<PyRef<'_, PyTensor>>,
    exp_avg_sqs: Vec<PyRef<'_, PyTensor>>,
    max_exp_avg_sqs: Vec<PyRef<'_, PyTensor>>,
    state_steps: Vec<PyRef<'_, PyTensor>>,
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    amsgrad: bool,
    maximize: bool,
    decoupled_weight_decay: bool,
) -> PyResult<()> {
    let (p, g) = (ts(&params), ts(&grads));
    let (m, v, vmax, steps) = (
        ts(&exp_avgs),
        ts(&exp_avg_sqs),
        ts(&max_exp_avg_sqs),
        ts(&state_steps),
    );
    let s = AdamState {
        exp_avgs: &m,
        exp_avg_sqs: &v,
        max_exp_avg_sqs: &vmax,
        steps: &steps,
    };
    let a = Adam {
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
        amsgrad,
        maximize,
        decoupled: decoupled_weight_decay,
        step: 0.0,
    };
    run(py, Work::elems(p.iter().chain(&g)), || {
        optim::adam_step(&p, &g, &s, a)
    })
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _rmsprop_step(
    py: Python<'_>,
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    square_avgs: Vec<PyRef<'_, PyTensor>>,
    grad_avgs: Vec<PyRef<'_, PyTensor>>,
    momentum_buffers: Vec<PyRef<'_, PyTensor>>,
    state_steps: Vec<PyRef<'_, PyTensor>>,
    lr: f64,
    alpha: f64,
    eps: f64,
    weight_decay: f64,
    momentum: f64,
    centered: bool,
    maximize: bool,
) -> PyResult<()> {
    let (p, g) = (ts(&params), ts(&grads));
    let (sq, ga, mb, steps) = (
        ts(&square_avgs),
        ts(&grad_avgs),
        ts(&momentum_buffers),
        ts(&state_steps),
    );
    let s = RmsPropState {
        square_avgs: &sq,
        grad_avgs: &ga,
        momentum_buffers: &mb,
        steps: &steps,
    };
    let h = RmsProp {
        lr,
        alpha,
        eps,
        weight_decay,
        momentum,
        centered,
        maximize,
    };
    run(py, Work::elems(p.iter().chain(&g)), || {
        optim::rmsprop_step(&p, &g, &s, h)
    })
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _adagrad_step(
    py: Python<'_>,
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    state_sums: Vec<PyRef<'_, PyTensor>>,
    state_steps: Vec<PyRef<'_, PyTensor>>,
    lr: f64,
    weight_decay: f64,
    lr_decay: f64,
    eps: f64,
    maximize: bool,
) -> PyResult<()> {
    let (p, g, sums, steps) = (ts(&params), ts(&grads), ts(&state_sums), ts(&state_steps));
    let a = Adagrad {
        lr,
        lr_decay,
        weight_decay,
        eps,
        maximize,
        step: 0.0,
    };
    run(py, Work::elems(p.iter().chain(&g)), || {
        optim::adagrad_step(&p, &g, &sums, &steps, a)
    })
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _adadelta_step(
    py: Python<'_>,
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    square_avgs: Vec<PyRef<'_, PyTensor>>,
    acc_deltas: Vec<PyRef<'_, PyTensor>>,
    state_steps: Vec<PyRef<'_, PyTensor>>,
    lr: f64,
    rho: f64,
    eps: f64,
    weight_decay: f64,
    maximize: bool,
) -> PyResult<()> {
    let (p, g, sq, acc, steps) = (
        ts(&params),
        ts(&grads),
        ts(&square_avgs),
        ts(&acc_deltas),
        ts(&state_steps),
    );
    let h = Adadelta {
        lr,
        rho,
        eps,
        weight_decay,
        maximize,
    };
    run(py, Work::elems(p.iter().chain(&g)), || {
        optim::adadelta_step(&p, &g, &sq, &acc, &steps, h)
    })
}

#[pyfunction]
fn _foreach_norm(
    py: Python<'_>,
    tensors: Vec<PyRef<'_, PyTensor>>,
    ord: f64,
) -> PyResult<PyTensor> {
    let t = ts(&tensors);
    run(py, Work::elems(&t), || optim::foreach_norm(&t, ord)).map(PyTensor::new)
}

#[pyfunction]
fn _foreach_mul_(
    py: Python<'_>,
    tensors: Vec<PyRef<'_, PyTensor>>,
    scalar: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let s: f64 = match scalar.cast::<PyTensor>() {
        Ok(t) => t.get().t.item()?.to_f64(),
        Err(_) => scalar.extract()?,
    };
    let t = ts(&tensors);
    run(py, Work::elems(&t), || optim::foreach_mul_(&t, s))
}

/// `dst.copy_(src).mul_(scale)` in one pass (DistributedDataParallel's bucket fill).
#[pyfunction]
fn _copy_scaled_(
    py: Python<'_>,
    dst: PyRef<'_, PyTensor>,
    src: PyRef<'_, PyTensor>,
    scale: f64,
) -> PyResult<()> {
    let (d, s) = (dst.t.clone(), src.t.clone());
    run(py, Work::elems([&d, &s]), || {
        optim::copy_scaled_(&d, &s, scale)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_sgd_step, m)?)?;
    m.add_function(wrap_pyfunction!(_adam_step, m)?)?;
    m.add_function(wrap_pyfunction!(_rmsprop_step, m)?)?;
    m.add_function(wrap_pyfunction!(_adagrad_step, m)?)?;
    m.add_function(wrap_pyfunction!(_adadelta_step, m)?)?;
    m.add_function(wrap_pyfunction!(_foreach_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_foreach_mul_, m)?)?;
    m.add_function(wrap_pyfunction!(_copy_scaled_, m)?)?;
    Ok(())
}
