//! dtypes, Python scalars and PyTorch's type-promotion rules.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Index in `DType::ALL` of the default floating dtype (`torch.set_default_dtype`); float32 at start.
static DEFAULT_FLOAT: AtomicUsize = AtomicUsize::new(8);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 10] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];
    /// The dtype of Python floats in arithmetic and of int -> float results (`true_divide`,
    /// `sqrt` of an integer tensor...): float32 unless `set_default_float` changed it.
    pub fn default_float() -> DType {
        DType::ALL[DEFAULT_FLOAT.load(Ordering::Relaxed)]
    }
    /// `torch.set_default_dtype`; the caller has checked `d` is a floating dtype.
    pub fn set_default_float(d: DType) {
        debug_assert!(d.is_float());
        let i = DType::ALL.iter().position(|&x| x == d).unwrap_or(8);
        DEFAULT_FLOAT.store(i, Ordering::Relaxed);
    }
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }
    /// An integer dtype (not bool).
    pub fn is_int(self) -> bool {
        matches!(
            self,
            DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64
        )
    }
    pub fn is_signed(self) -> bool {
        !matches!(self, DType::Bool | DType::U8)
    }
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }
    /// The dtype the arithmetic kernels compute a storage-only dtype in, as PyTorch's CPU
    /// kernels do for half precision: float16/bfloat16 in float32 (rounded back to the dtype),
    /// the narrow integers in int64 (wrapped back, so overflow wraps as in PyTorch).
    pub fn compute(self) -> DType {
        match self {
            DType::U8 | DType::I8 | DType::I16 | DType::I32 => DType::I64,
            DType::F16 | DType::BF16 => DType::F32,
            d => d,
        }
    }
    /// The least and greatest value of an integer dtype (bool: 0 and 1).
    pub fn int_bounds(self) -> (i64, i64) {
        match self {
            DType::Bool => (0, 1),
            DType::U8 => (0, u8::MAX as i64),
            DType::I8 => (i8::MIN as i64, i8::MAX as i64),
            DType::I16 => (i16::MIN as i64, i16::MAX as i64),
            DType::I32 => (i32::MIN as i64, i32::MAX as i64),
            _ => (i64::MIN, i64::MAX),
        }
    }
    /// `torch.float32` etc.
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::Bool => "torch.bool",
            DType::U8 => "torch.uint8",
            DType::I8 => "torch.int8",
            DType::I16 => "torch.int16",
            DType::I32 => "torch.int32",
            DType::I64 => "torch.int64",
            DType::F16 => "torch.float16",
            DType::BF16 => "torch.bfloat16",
            DType::F32 => "torch.float32",
            DType::F64 => "torch.float64",
        }
    }
    /// The legacy type name used in autograd error messages: `torch.FloatTensor`.
    pub fn legacy_name(self) -> &'static str {
        match self {
            DType::Bool => "torch.BoolTensor",
            DType::U8 => "torch.ByteTensor",
            DType::I8 => "torch.CharTensor",
            DType::I16 => "torch.ShortTensor",
            DType::I32 => "torch.IntTensor",
            DType::I64 => "torch.LongTensor",
            DType::F16 => "torch.HalfTensor",
            DType::BF16 => "torch.BFloat16Tensor",
            DType::F32 => "torch.FloatTensor",
            DType::F64 => "torch.DoubleTensor",
        }
    }
    /// The name PyTorch uses in kernel error messages ("Float", "Long", ...).
    pub fn kernel_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
        }
    }
    /// The element type's C++ name as PyTorch's dtype errors print it (c10's TypeMeta:
    /// `expected dtype float for `end` but got dtype long int`).
    pub fn type_meta_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "unsigned char",
            DType::I8 => "signed char",
            DType::I16 => "short int",
            DType::I32 => "int",
            DType::I64 => "long int",
            DType::F16 => "c10::Half",
            DType::BF16 => "c10::BFloat16",
            DType::F32 => "float",
            DType::F64 => "double",
        }
    }
    /// `torch.promote_types`: the smallest dtype both convert to without losing their
    /// category (bool < integer < floating); uint8 with int8 is int16, float16 with bfloat16
    /// is float32.
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        if a == b {
            return a;
        }
        match (a, b) {
            (Bool, x) | (x, Bool) => x,
            (F16, BF16) | (BF16, F16) => F32,
            _ if a.is_float() && b.is_float() => {
                if a.size() >= b.size() {
                    a
                } else {
                    b
                }
            }
            _ if a.is_float() => a,
            _ if b.is_float() => b,
            (U8, I8) | (I8, U8) => I16,
            (U8, x) | (x, U8) => x,
            _ => {
                if a.size() >= b.size() {
                    a
                } else {
                    b
                }
            }
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
            Scalar::Float(_) => DType::default_float(),
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
    /// The number as a kernel of `dtype` takes a Scalar argument (c10's `Scalar::to<T>()`,
    /// overflow check included): a float for float dtypes (float16 / bfloat16 kernels take a
    /// float32), for integer dtypes an int truncated toward zero and wrapped to the dtype.
    pub fn to_kernel(self, dtype: DType) -> crate::error::Result<Scalar> {
        let overflow = |ty: &str| {
            Err(crate::error::Error::Runtime(format!(
                "value cannot be converted to type {ty} without overflow"
            )))
        };
        if dtype == DType::F64 {
            return Ok(Scalar::Float(self.to_f64()));
        }
        if dtype.is_float() {
            let v = self.to_f64();
            return if v.is_finite() && v.abs() > f32::MAX as f64 {
                overflow("float")
            } else {
                Ok(Scalar::Float(v))
            };
        }
        let ty = match dtype {
            DType::U8 => "uint8_t",
            DType::I8 => "int8_t",
            DType::I16 => "int16_t",
            DType::I32 => "int",
            DType::I64 => "int64_t",
            _ => return Ok(Scalar::Bool(self.to_f64() != 0.0)),
        };
        let (lo, hi) = dtype.int_bounds();
        match self {
            Scalar::Bool(b) => Ok(Scalar::Int(b as i64)),
            Scalar::Float(f) if f.is_nan() || f < lo as f64 || f > hi as f64 => overflow(ty),
            Scalar::Float(f) => Ok(Scalar::Int(f as i64)),
            // c10 lets an unsigned type take negative ints down to -max (they wrap)
            Scalar::Int(i) if dtype == DType::U8 && (-hi..=hi).contains(&i) => {
                Ok(Scalar::Int(i as u8 as i64))
            }
            Scalar::Int(i) if i < lo || i > hi => overflow(ty),
            Scalar::Int(i) => Ok(Scalar::Int(i)),
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
        combine(self.dim, combine(self.zero, self.wrapped)).unwrap_or_else(DType::default_float)
    }
}
