//! The one place where Rust errors become Python exceptions, and the one helper that runs core
//! work (releasing the GIL when it is heavy) with panics caught.

use crate::error::Error;
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

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        if let Some(p) = PENDING.with(|p| p.borrow_mut().take()) {
            return p;
        }
        match e {
            Error::Runtime(m) => PyRuntimeError::new_err(m),
            Error::Index(m) => PyIndexError::new_err(m),
            Error::Value(m) => PyValueError::new_err(m),
            Error::Type(m) => PyTypeError::new_err(m),
            Error::NotImplemented(m) => PyNotImplementedError::new_err(m),
            Error::Memory(m) => PyMemoryError::new_err(m),
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

/// Runs core work with panics turned into RuntimeError. With `heavy`, the GIL is released
/// around it (`Python::detach`), so other Python threads run meanwhile.
pub fn run<T: Send>(
    py: Python<'_>,
    heavy: bool,
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> PyResult<T> {
    let r = if heavy {
        py.detach(|| catch(f))
    } else {
        catch(f)
    };
    r.map_err(PyErr::from)
}

/// Runs cheap core work on the calling thread with panics turned into RuntimeError.
pub fn guarded<T>(f: impl FnOnce() -> crate::Result<T>) -> PyResult<T> {
    catch(f).map_err(PyErr::from)
}

/// Element count above which forward kernels release the GIL.
pub const HEAVY_NUMEL: usize = 1 << 15;
