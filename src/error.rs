//! The one error type of the crate. Every fallible function returns `Result<T>`; the Python
//! layer maps each variant to the PyTorch exception type in exactly one place (`py::errors`).

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// RuntimeError: shape mismatches, autograd misuse, anything PyTorch raises as RuntimeError.
    Runtime(String),
    /// IndexError: an index or dim out of range.
    Index(String),
    /// ValueError.
    Value(String),
    /// TypeError: wrong argument kinds.
    Type(String),
    /// NotImplementedError: a feature ferrograd does not support yet.
    NotImplemented(String),
    /// MemoryError: an allocation that cannot be satisfied.
    Memory(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let msg = match self {
            Error::Runtime(m)
            | Error::Index(m)
            | Error::Value(m)
            | Error::Type(m)
            | Error::NotImplemented(m)
            | Error::Memory(m) => m,
        };
        f.write_str(msg)
    }
}

impl std::error::Error for Error {}

#[macro_export]
macro_rules! rt_err {
    ($($arg:tt)*) => { Err($crate::error::Error::Runtime(format!($($arg)*))) };
}

#[macro_export]
macro_rules! index_err {
    ($($arg:tt)*) => { Err($crate::error::Error::Index(format!($($arg)*))) };
}

/// PyTorch's text for a dim outside `[-ndim, ndim-1]`.
pub fn dim_out_of_range(dim: i64, ndim: usize) -> Error {
    let n = ndim.max(1) as i64;
    Error::Index(format!(
        "Dimension out of range (expected to be in range of [{}, {}], but got {})",
        -n,
        n - 1,
        dim
    ))
}

thread_local! {
    /// An error raised where it cannot be returned (a failing saved-tensors pack hook while a
    /// node is recorded); the binding layer raises it once the current op returns.
    static DEFERRED: std::cell::RefCell<Option<Error>> = const { std::cell::RefCell::new(None) };
}

pub fn defer_error(e: Error) {
    DEFERRED.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = Some(e);
        }
    });
}

pub fn take_deferred_error() -> Option<Error> {
    DEFERRED.with(|d| d.borrow_mut().take())
}
