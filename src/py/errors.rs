//! The one place where Rust errors become Python exceptions, and the one helper that runs core
//! work with panics caught, deciding (`Work`) whether the GIL is released meanwhile.

use super::slot::{AsTensor, InFlight};
use crate::error::{Error, Kind};
use crate::tensor::Tensor;
use pyo3::exceptions::{
    PyIndexError, PyMemoryError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    /// A Python exception raised inside a Python callback run by the engine; re-raised as is
    /// when the error reaches Python.
    static PENDING: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

pub const PYTHON_ERROR: &str = "<python exception>";

pub fn stash_pyerr(e: PyErr) -> Error {
    PENDING.with(|p| *p.borrow_mut() = Some(e));
    Error::Runtime(PYTHON_ERROR.into())
}

/// The Python exception stashed on this thread, if any (to move it to another thread).
pub fn take_pending() -> Option<PyErr> {
    PENDING.with(|p| p.borrow_mut().take())
}

pub fn restore_pending(e: PyErr) {
    PENDING.with(|p| *p.borrow_mut() = Some(e));
}

static OUT_OF_MEMORY: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> =
    pyo3::sync::PyOnceLock::new();

/// `ferrograd.OutOfMemoryError`: an allocation the system refused. PyTorch raises a
/// RuntimeError there (and `torch.OutOfMemoryError`, a RuntimeError, on GPUs); it is also a
/// MemoryError, as Python code expects of memory exhaustion.
pub fn out_of_memory_error(py: Python<'_>) -> PyResult<&Bound<'_, pyo3::types::PyType>> {
    OUT_OF_MEMORY
        .get_or_try_init(py, || {
            let builtins = py.import("builtins")?;
            let bases = (
                builtins.getattr("RuntimeError")?,
                builtins.getattr("MemoryError")?,
            );
            let ns = pyo3::types::PyDict::new(py);
            ns.set_item("__module__", "ferrograd")?;
            ns.set_item(
                "__doc__",
                "An allocation the system refused (a RuntimeError, as in PyTorch, and a MemoryError).",
            )?;
            let cls = builtins
                .getattr("type")?
                .call1(("OutOfMemoryError", bases, ns))?;
            Ok(cls.cast_into::<pyo3::types::PyType>()?.unbind())
        })
        .map(|c| c.bind(py))
}

static LINALG_ERROR: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> =
    pyo3::sync::PyOnceLock::new();

/// `ferrograd.linalg.LinAlgError`: a matrix a decomposition cannot handle (singular, not
/// positive-definite); a RuntimeError, as PyTorch's.
pub fn linalg_error(py: Python<'_>) -> PyResult<&Bound<'_, pyo3::types::PyType>> {
    LINALG_ERROR
        .get_or_try_init(py, || {
            let builtins = py.import("builtins")?;
            let ns = pyo3::types::PyDict::new(py);
            ns.set_item("__module__", "ferrograd.linalg")?;
            ns.set_item(
                "__doc__",
                "Error raised by torch.linalg functions when the input matrix cannot be handled (singular, not positive-definite, ...); a RuntimeError.",
            )?;
            let cls = builtins.getattr("type")?.call1((
                "LinAlgError",
                (builtins.getattr("RuntimeError")?,),
                ns,
            ))?;
            Ok(cls.cast_into::<pyo3::types::PyType>()?.unbind())
        })
        .map(|c| c.bind(py))
}

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        if let Some(p) = PENDING.with(|p| p.borrow_mut().take()) {
            return p;
        }
        let m = e.to_string();
        match e.kind() {
            Kind::Runtime => PyRuntimeError::new_err(m),
            Kind::Index => PyIndexError::new_err(m),
            Kind::Value => PyValueError::new_err(m),
            Kind::Type => PyTypeError::new_err(m),
            Kind::NotImplemented => PyNotImplementedError::new_err(m),
            Kind::LinAlg => Python::attach(|py| match linalg_error(py) {
                Ok(cls) => PyErr::from_type(cls.clone(), m),
                Err(_) => PyRuntimeError::new_err(m),
            }),
            Kind::Memory => Python::attach(|py| match out_of_memory_error(py) {
                Ok(cls) => PyErr::from_type(cls.clone(), m),
                Err(_) => PyMemoryError::new_err(m),
            }),
        }
    }
}

fn catch<T>(f: impl FnOnce() -> crate::Result<T>) -> crate::Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        // an error raised where it could not be returned (a saved-tensors pack hook)
        Ok(r) => match crate::error::take_deferred_error() {
            Some(e) => Err(e),
            None => r,
        },
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error::Runtime(format!("ferrograd internal error: {msg}")))
        }
    }
}

/// How core work is run: with the GIL kept, or released so other Python threads run meanwhile.
/// Built by the constructors below, which are the one place that decides.
#[derive(Clone, Copy)]
pub struct Work {
    release: bool,
}

impl Work {
    /// `n` elements (or multiply-adds) of work over `tensors`. The GIL is released when the
    /// work is heavy (at least `HEAVY_NUMEL`) and none of the tensors' memory is shared with
    /// numpy (`from_numpy` / `.numpy()`): Python code writing through numpy must not run while
    /// a kernel reads or writes that memory, so such work keeps the GIL.
    pub fn over<'a>(tensors: impl IntoIterator<Item = &'a Tensor>, n: usize) -> Work {
        let mut tensors = tensors.into_iter();
        Work {
            release: n >= HEAVY_NUMEL && !tensors.any(|t| t.storage().is_shared()),
        }
    }
    /// Work proportional to the tensors' element count.
    pub fn elems<'a, T: AsTensor + 'a>(tensors: impl IntoIterator<Item = &'a T> + Clone) -> Work {
        let n = tensors
            .clone()
            .into_iter()
            .map(|t| t.as_tensor().numel())
            .sum();
        Work::over(tensors.into_iter().map(|t| t.as_tensor()), n)
    }
    /// Work too small to be worth releasing the GIL.
    pub const LIGHT: Work = Work { release: false };
    /// The backward engine: always without the GIL, which Python backwards and hooks take for
    /// themselves (the tensors it touches are not known in advance).
    pub const ENGINE: Work = Work { release: true };
}

/// Runs core work with panics turned into RuntimeError, releasing the GIL as `work` says.
pub fn run<T: Send>(
    py: Python<'_>,
    work: Work,
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> PyResult<T> {
    // counted from before the GIL is released (see py/slot.rs)
    let _in_flight = InFlight::enter();
    let r = if work.release {
        py.detach(|| catch(f))
    } else {
        catch(f)
    };
    r.map_err(PyErr::from)
}

/// Runs cheap core work on the calling thread with panics turned into RuntimeError.
pub fn guarded<T>(f: impl FnOnce() -> crate::Result<T>) -> PyResult<T> {
    let _in_flight = InFlight::enter();
    catch(f).map_err(PyErr::from)
}

/// Element count from which work releases the GIL.
pub const HEAVY_NUMEL: usize = 1 << 15;
