//! Random sampling: `ferrograd.Generator` and the samplers that take a `generator=`.

use super::convert::required_dtype;
use super::errors::{guarded, run, Work};
use super::tensor::PyTensor;
use crate::creation::{self, Dist, Generator};
use crate::tensor::Tensor;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// `ferrograd.Generator`: an independent random stream (xoshiro256**).
#[pyclass(name = "Generator", module = "ferrograd", frozen)]
pub struct PyGenerator {
    pub g: Generator,
}

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (device = None))]
    fn py_new(device: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        if let Some(d) = device {
            let s = d.str()?.to_string();
            if s != "cpu" {
                return Err(PyRuntimeError::new_err(format!(
                    "ferrograd only supports CPU generators, got device '{s}'"
                )));
            }
        }
        Ok(PyGenerator {
            g: Generator::new(creation::DEFAULT_SEED),
        })
    }
    fn manual_seed<'py>(
        slf: &Bound<'py, Self>,
        seed: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        slf.get().g.manual_seed(seed_arg(seed)?);
        Ok(slf.clone())
    }
    fn initial_seed(&self) -> u64 {
        self.g.initial_seed()
    }
    /// Seeds from the OS's entropy and returns the seed.
    fn seed(&self) -> u64 {
        let mut buf = [0u8; 8];
        let seed = std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut buf))
            .map(|_| u64::from_le_bytes(buf))
            .unwrap_or_else(|_| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0)
            })
            & (i64::MAX as u64);
        self.g.manual_seed(seed);
        seed
    }
    /// The state as an int64 tensor of 5 words (PyTorch returns a uint8 tensor; ferrograd has no
    /// uint8 dtype).
    fn get_state(&self) -> PyResult<PyTensor> {
        let st = self.g.state().map(|w| w as i64).to_vec();
        Ok(PyTensor::new(Tensor::from_vec(st, vec![5])?))
    }
    fn set_state<'py>(
        slf: &Bound<'py, Self>,
        state: PyRef<'py, PyTensor>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = &state.t;
        if t.dtype() != crate::dtype::DType::I64 || t.shape() != [5] {
            return Err(PyRuntimeError::new_err(
                "Generator.set_state expects the int64 tensor of 5 words that get_state returns",
            ));
        }
        let v: Vec<i64> = crate::ops::cast_vec::<i64>(t)?;
        let mut st = [0u64; 5];
        for (w, x) in st.iter_mut().zip(v) {
            *w = x as u64;
        }
        guarded(|| slf.get().g.set_state(st))?;
        Ok(slf.clone())
    }
    #[getter]
    fn device<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("ferrograd")?.getattr("device")?.call1(("cpu",))
    }
}

fn seed_arg(seed: &Bound<'_, PyAny>) -> PyResult<u64> {
    let s: i128 = seed.extract()?;
    if !(-(1i128 << 63)..(1i128 << 64)).contains(&s) {
        return Err(PyRuntimeError::new_err(format!(
            "Overflow when unpacking long long, seed {s} is out of range"
        )));
    }
    Ok(s as u64)
}

fn dist(kind: &str, a: f64, b: f64) -> PyResult<Dist> {
    Ok(match kind {
        "uniform" => Dist::Uniform(a, b),
        "normal" => Dist::Normal(a, b),
        "randint" => Dist::RandInt(a as i64, b as i64),
        _ => {
            return Err(PyValueError::new_err(format!(
                "unknown distribution {kind}"
            )))
        }
    })
}

fn gen_of(g: &Option<PyRef<'_, PyGenerator>>) -> Option<Generator> {
    g.as_ref().map(|g| g.g.clone())
}

#[pyfunction]
#[pyo3(signature = (shape, kind, a, b, dtype, generator = None))]
pub fn _random(
    py: Python<'_>,
    shape: Vec<usize>,
    kind: &str,
    a: f64,
    b: f64,
    dtype: &Bound<'_, PyAny>,
    generator: Option<PyRef<'_, PyGenerator>>,
) -> PyResult<PyTensor> {
    let d = required_dtype(dtype)?;
    let dist = dist(kind, a, b)?;
    let g = gen_of(&generator);
    let work = Work::over([], shape.iter().product::<usize>());
    run(py, work, move || {
        creation::random(&shape, dist, d, g.as_ref())
    })
    .map(PyTensor::new)
}

/// In-place sampling into an existing tensor (uniform_, normal_, random_).
#[pyfunction]
#[pyo3(signature = (t, kind, a, b, generator = None))]
pub fn _fill_random(
    py: Python<'_>,
    t: PyRef<'_, PyTensor>,
    kind: &str,
    a: f64,
    b: f64,
    generator: Option<PyRef<'_, PyGenerator>>,
) -> PyResult<()> {
    let dist = dist(kind, a, b)?;
    let (x, g) = (t.t.clone(), gen_of(&generator));
    run(py, Work::elems([&x]), move || {
        creation::fill_random(&x, dist, g.as_ref())
    })
}

#[pyfunction]
#[pyo3(signature = (n, dtype, generator = None))]
pub fn _randperm(
    py: Python<'_>,
    n: i64,
    dtype: &Bound<'_, PyAny>,
    generator: Option<PyRef<'_, PyGenerator>>,
) -> PyResult<PyTensor> {
    if n < 0 {
        return Err(PyRuntimeError::new_err(format!(
            "n must be non-negative, got{n}"
        )));
    }
    let d = required_dtype(dtype)?;
    let g = gen_of(&generator);
    run(py, Work::over([], n as usize), move || {
        creation::randperm(n as usize, d, g.as_ref())
    })
    .map(PyTensor::new)
}

#[pyfunction]
pub fn manual_seed(seed: &Bound<'_, PyAny>) -> PyResult<()> {
    creation::manual_seed(seed_arg(seed)?);
    Ok(())
}

#[pyfunction]
pub fn initial_seed() -> u64 {
    creation::initial_seed()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGenerator>()?;
    m.add(
        "default_generator",
        PyGenerator {
            g: creation::default_generator().clone(),
        },
    )?;
    m.add_function(wrap_pyfunction!(_random, m)?)?;
    m.add_function(wrap_pyfunction!(_fill_random, m)?)?;
    m.add_function(wrap_pyfunction!(_randperm, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(initial_seed, m)?)?;
    Ok(())
}
