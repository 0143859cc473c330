//! Bindings of the samplers beyond uniform/normal/randint: `multinomial`, `bernoulli`,
//! `poisson` and the in-place fills `bernoulli_`, `exponential_`, `geometric_`, `log_normal_`,
//! `cauchy_`. The argument checks and messages are PyTorch's.

use super::convert::required_dtype;
use super::errors::{run, Work};
use super::random::PyGenerator;
use super::tensor::PyTensor;
use crate::creation::{default_generator, Generator};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::sampling::{self, Scalar2};
use crate::ops::{cast_vec, to_dtype};
use crate::tensor::Tensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn gen_of(g: &Option<PyRef<'_, PyGenerator>>) -> Generator {
    g.as_ref()
        .map(|g| g.g.clone())
        .unwrap_or_else(|| default_generator().clone())
}

fn rt<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Runtime(msg.into()))
}

/// `torch.multinomial`: int64 indices of shape `[n]` (1-d input) or `[rows, n]`.
fn multinomial(x: &Tensor, n: i64, replacement: bool, g: &Generator) -> Result<Tensor> {
    if x.ndim() == 0 || x.ndim() > 2 {
        return rt("prob_dist must be 1 or 2 dim");
    }
    if !x.dtype().is_float() {
        return rt(format!(
            "multinomial only supports floating-point dtypes for input, got: {}",
            x.dtype().kernel_name()
        ));
    }
    if n <= 0 {
        return rt("cannot sample n_sample <= 0 samples");
    }
    let cats = *x.shape().last().unwrap_or(&0);
    if !replacement && n as usize > cats {
        return rt("cannot sample n_sample > prob_dist.size(-1) samples without replacement");
    }
    if cats > 1 << 24 {
        return rt("number of categories cannot exceed 2^24");
    }
    let n = n as usize;
    let rows = if x.ndim() == 1 { 1 } else { x.shape()[0] };
    let shape = if x.ndim() == 1 {
        vec![n]
    } else {
        vec![rows, n]
    };
    if x.numel() == 0 {
        return Tensor::from_vec(vec![0i64; rows * n], shape);
    }
    let p: Vec<f64> = cast_vec(x)?;
    if !replacement || n == 1 {
        if p.iter().any(|&v| !(0.0..f64::INFINITY).contains(&v)) {
            return rt("probability tensor contains either `inf`, `nan` or element < 0");
        }
        if p.chunks(cats).any(|row| row.iter().sum::<f64>() == 0.0) {
            return rt("invalid multinomial distribution (sum of probabilities <= 0)");
        }
    } else {
        for row in p.chunks(cats) {
            for &v in row {
                if v < 0.0 || v.is_nan() {
                    return rt(
                        "invalid multinomial distribution (encountering probability entry < 0)",
                    );
                }
                if !v.is_finite() {
                    return rt(
                        "invalid multinomial distribution (encountering probability entry = infinity or NaN)",
                    );
                }
            }
            if row.iter().sum::<f64>() <= 0.0 {
                return rt("invalid multinomial distribution (sum of probabilities <= 0)");
            }
        }
    }
    let mut out = crate::kernels::alloc::<i64>(rows * n)?;
    g.with(|r| {
        for row in p.chunks(cats) {
            sampling::multinomial_row(row, n, replacement, r, &mut out);
        }
    });
    Tensor::from_vec(out, shape)
}

/// Elementwise samples with a tensor parameter (`bernoulli(p)`, `poisson(rates)`), of its
/// shape and dtype.
fn sample_from(kind: &str, p: &Tensor, g: &Generator) -> Result<Tensor> {
    let (kernel, bad): (&str, fn(f64) -> bool) = match kind {
        "bernoulli" => ("bernoulli_tensor_cpu_p_", |v| !(0.0..=1.0).contains(&v)),
        "poisson" => ("poisson_cpu", |v| v < 0.0 || v.is_nan()),
        _ => return Err(Error::Value(format!("unknown distribution {kind}"))),
    };
    if !p.dtype().is_float() {
        return Err(Error::dtype_not_implemented(kernel, p.dtype()));
    }
    let v: Vec<f64> = cast_vec(p)?;
    if v.iter().any(|&x| bad(x)) {
        return rt(if kind == "poisson" {
            "invalid Poisson rate, expected rate to be non-negative"
        } else {
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error \
             message be improved?  If so, please report an enhancement request to PyTorch.)"
        });
    }
    let out: Vec<f64> = g.with(|r| {
        v.iter()
            .map(|&x| match kind {
                "poisson" => sampling::poisson(x, r),
                _ => sampling::draw(Scalar2::Bernoulli(x), r),
            })
            .collect()
    });
    to_dtype(&Tensor::from_vec(out, p.shape().to_vec())?, p.dtype())
}

fn scalar_dist(kind: &str, a: f64, b: f64) -> PyResult<Scalar2> {
    Ok(match kind {
        "bernoulli" => Scalar2::Bernoulli(a),
        "exponential" => Scalar2::Exponential(a),
        "geometric" => Scalar2::Geometric(a),
        "log_normal" => Scalar2::LogNormal(a, b),
        "cauchy" => Scalar2::Cauchy(a, b),
        _ => {
            return Err(PyValueError::new_err(format!(
                "unknown distribution {kind}"
            )))
        }
    })
}

fn sample_scalar(shape: &[usize], d: Scalar2, dtype: DType, g: &Generator) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let mut v = crate::kernels::alloc::<f64>(n)?;
    g.with(|r| v.extend((0..n).map(|_| sampling::draw(d, r))));
    to_dtype(&Tensor::from_vec(v, shape.to_vec())?, dtype)
}

#[pyfunction]
#[pyo3(signature = (input, num_samples, replacement = false, generator = None))]
fn _multinomial(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    num_samples: i64,
    replacement: bool,
    generator: Option<PyRef<'_, PyGenerator>>,
) -> PyResult<PyTensor> {
    let (x, g) = (input.t.clone(), gen_of(&generator));
    run(py, Work::elems([&x]), move || {
        multinomial(&x, num_samples, replacement, &g)
    })
    .map(PyTensor::new)
}

/// `bernoulli(p)` / `poisson(rates)`: samples shaped like the parameter tensor.
#[pyfunction]
#[pyo3(signature = (kind, param, generator = None))]
fn _sample_from(
    py: Python<'_>,
    kind: &str,
    param: PyRef<'_, PyTensor>,
    generator: Option<PyRef<'_, PyGenerator>>,
) -> PyResult<PyTensor> {
    let (p, g) = (param.t.clone(), gen_of(&generator));
    let kind = kind.to_string();
    run(py, Work::elems([&p]), move || sample_from(&kind, &p, &g)).map(PyTensor::new)
}

/// A new tensor of draws from a scalar-parameter distribution.
#[pyfunction]
#[pyo3(signature = (shape, kind, a, b, dtype, generator = None))]
fn _sample(
    py: Python<'_>,
    shape: Vec<usize>,
    kind: &str,
    a: f64,
    b: f64,
    dtype: &Bound<'_, PyAny>,
    generator: Option<PyRef<'_, PyGenerator>>,
) -> PyResult<PyTensor> {
    let (d, dt, g) = (
        scalar_dist(kind, a, b)?,
        required_dtype(dtype)?,
        gen_of(&generator),
    );
    let work = Work::over([], shape.iter().product());
    run(py, work, move || sample_scalar(&shape, d, dt, &g)).map(PyTensor::new)
}

/// In place: `t` filled with draws of a scalar-parameter distribution, or with
/// `bernoulli(p)` when `p` (already expanded to `t`'s shape) is given.
#[pyfunction]
#[pyo3(signature = (t, kind, a, b, p = None, generator = None))]
fn _fill_sample(
    py: Python<'_>,
    t: PyRef<'_, PyTensor>,
    kind: &str,
    a: f64,
    b: f64,
    p: Option<PyRef<'_, PyTensor>>,
    generator: Option<PyRef<'_, PyGenerator>>,
) -> PyResult<()> {
    let d = scalar_dist(kind, a, b)?;
    let (x, p, g) = (t.t.clone(), p.map(|p| p.t.clone()), gen_of(&generator));
    run(py, Work::elems([&x]), move || {
        crate::ops::inplace::check_inplace(&x)?;
        if crate::autograd::graph::needs_grad(&[&x]) {
            return Err(Error::NotImplemented(
                "in-place random sampling into a tensor that is part of an autograd graph".into(),
            ));
        }
        let vals = match &p {
            Some(p) => sample_from("bernoulli", p, &g)?,
            None => sample_scalar(x.shape(), d, DType::F64, &g)?,
        };
        crate::ops::inplace::write_values(&x, &to_dtype(&vals, x.dtype())?)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_multinomial, m)?)?;
    m.add_function(wrap_pyfunction!(_sample_from, m)?)?;
    m.add_function(wrap_pyfunction!(_sample, m)?)?;
    m.add_function(wrap_pyfunction!(_fill_sample, m)?)?;
    Ok(())
}
