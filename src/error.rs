//! The one error type of the crate. Every fallible function returns `Result<T>`; the Python
//! layer maps each variant to the PyTorch exception type in exactly one place (`py::errors`).

use crate::dtype::DType;
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
    /// A kernel with no version for a dtype, named as PyTorch names its kernels
    /// (`"addmm_impl_cpu_" not implemented for 'Bool'`): NotImplementedError.
    DtypeNotImplemented { kernel: String, dtype: DType },
    /// A dim outside `[-ndim, ndim - 1]`: IndexError.
    DimOutOfRange { dim: i64, ndim: usize },
    /// Two shapes that do not broadcast: the sizes at the first mismatching dim (counted from
    /// the left of the broadcast shape): RuntimeError.
    Broadcast { a: usize, b: usize, dim: usize },
    /// A matrix a decomposition cannot handle (singular, not positive-definite):
    /// `torch.linalg.LinAlgError`, a RuntimeError.
    LinAlg(String),
}

/// The Python exception type an error becomes (mapped in `py::errors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Runtime,
    Index,
    Value,
    Type,
    NotImplemented,
    Memory,
    LinAlg,
}

impl Error {
    pub fn kind(&self) -> Kind {
        match self {
            Error::Runtime(_) | Error::Broadcast { .. } => Kind::Runtime,
            Error::Index(_) | Error::DimOutOfRange { .. } => Kind::Index,
            Error::Value(_) => Kind::Value,
            Error::Type(_) => Kind::Type,
            Error::NotImplemented(_) | Error::DtypeNotImplemented { .. } => Kind::NotImplemented,
            Error::Memory(_) => Kind::Memory,
            Error::LinAlg(_) => Kind::LinAlg,
        }
    }

    /// `kernel` has no version for `dtype`.
    pub fn dtype_not_implemented(kernel: impl Into<String>, dtype: DType) -> Error {
        Error::DtypeNotImplemented {
            kernel: kernel.into(),
            dtype,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// PyTorch's texts.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Runtime(m)
            | Error::Index(m)
            | Error::Value(m)
            | Error::Type(m)
            | Error::NotImplemented(m)
            | Error::Memory(m)
            | Error::LinAlg(m) => f.write_str(m),
            Error::DtypeNotImplemented { kernel, dtype } => {
                write!(f, "\"{kernel}\" not implemented for '{}'", dtype.kernel_name())
            }
            Error::DimOutOfRange { dim, ndim } => {
                let n = (*ndim).max(1) as i64;
                write!(
                    f,
                    "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
                    -n,
                    n - 1
                )
            }
            Error::Broadcast { a, b, dim } => write!(
                f,
                "The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton dimension {dim}"
            ),
        }
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

/// A dim outside `[-ndim, ndim-1]`.
pub fn dim_out_of_range(dim: i64, ndim: usize) -> Error {
    Error::DimOutOfRange { dim, ndim }
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
