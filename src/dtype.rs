//! dtypes, Python scalars and PyTorch's type-promotion rules.

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    I64,
    F32,
    F64,
}

impl DType {
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
    pub fn size(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::I64 | DType::F64 => 8,
            DType::F32 => 4,
        }
    }
    /// `torch.float32` etc.
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::Bool => "torch.bool",
            DType::I64 => "torch.int64",
            DType::F32 => "torch.float32",
            DType::F64 => "torch.float64",
        }
    }
    /// The legacy type name used in autograd error messages: `torch.FloatTensor`.
    pub fn legacy_name(self) -> &'static str {
        match self {
            DType::Bool => "torch.BoolTensor",
            DType::I64 => "torch.LongTensor",
            DType::F32 => "torch.FloatTensor",
            DType::F64 => "torch.DoubleTensor",
        }
    }
    /// The name PyTorch uses in kernel error messages ("Float", "Long", ...).
    pub fn kernel_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::I64 => "Long",
            DType::F32 => "Float",
            DType::F64 => "Double",
        }
    }
    fn rank(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::I64 => 1,
            DType::F32 => 2,
            DType::F64 => 3,
        }
    }
    /// `torch.promote_types` restricted to our four dtypes (a total order here).
    pub fn promote(a: DType, b: DType) -> DType {
        if a.rank() >= b.rank() {
            a
        } else {
            b
        }
    }
}

/// A Python number taking part in an op ("wrapped number" in PyTorch).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    /// The dtype a wrapped number contributes to promotion (floats use the default dtype).
    pub fn dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::F32,
        }
    }
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as i64 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }
}

/// Promotion state of PyTorch's `at::native::result_type`: tensors with dims outrank 0-d
/// tensors, which outrank wrapped Python numbers, unless a lower class is of a higher category.
#[derive(Default, Clone, Copy)]
pub struct ResultType {
    dim: Option<DType>,
    zero: Option<DType>,
    wrapped: Option<DType>,
}

fn promote_opt(cur: Option<DType>, d: DType) -> Option<DType> {
    Some(match cur {
        None => d,
        Some(c) => DType::promote(c, d),
    })
}

fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    match (higher, lower) {
        (Some(h), _) if h.is_float() => Some(h),
        (Some(h), Some(l)) if h == DType::Bool || l.is_float() => Some(DType::promote(h, l)),
        (Some(h), _) => Some(h),
        (None, l) => l,
    }
}

impl ResultType {
    pub fn tensor(mut self, dtype: DType, ndim: usize) -> Self {
        if ndim > 0 {
            self.dim = promote_opt(self.dim, dtype);
        } else {
            self.zero = promote_opt(self.zero, dtype);
        }
        self
    }
    pub fn scalar(mut self, s: Scalar) -> Self {
        self.wrapped = promote_opt(self.wrapped, s.dtype());
        self
    }
    pub fn result(self) -> DType {
        combine(self.dim, combine(self.zero, self.wrapped)).unwrap_or(DType::F32)
    }
}

pub fn check_float(dtype: DType, what: &str) -> Result<()> {
    if dtype.is_float() {
        Ok(())
    } else {
        Err(Error::NotImplemented(format!(
            "{what} not implemented for '{}'",
            dtype.kernel_name()
        )))
    }
}
