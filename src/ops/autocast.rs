//! CPU autocast (`torch.autocast("cpu", dtype=torch.bfloat16)`), thread-local as in PyTorch.
//!
//! Inside an autocast region the ops of PyTorch's CPU "lower precision" list (matmul, mm, bmm,
//! addmm, linear, convolution, scaled_dot_product_attention, the recurrent cells) cast their
//! float32 (and other non-float64 floating) inputs to the autocast dtype, and the ops of its
//! "float32" list (the losses) cast half-precision inputs to float32. The casts are ordinary
//! differentiable `to_dtype` copies (ToCopyBackward0), as PyTorch's are; backward runs without
//! autocast.

use super::to_dtype;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use std::cell::Cell;

thread_local! {
    static AUTOCAST: Cell<Option<DType>> = const { Cell::new(None) };
}

/// The autocast dtype of this thread, None outside autocast regions.
pub fn dtype() -> Option<DType> {
    AUTOCAST.with(|a| a.get())
}

pub fn set(d: Option<DType>) {
    AUTOCAST.with(|a| a.set(d));
}

/// Turns autocast off for a scope (backward), restoring it on drop.
pub struct Suspend(Option<DType>);

impl Suspend {
    pub fn new() -> Self {
        let prev = dtype();
        set(None);
        Suspend(prev)
    }
}

impl Default for Suspend {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Suspend {
    fn drop(&mut self) {
        set(self.0);
    }
}

/// An input of a lower-precision op: cast to the autocast dtype when it is eligible (floating,
/// not float64), else as it is.
pub fn lower(t: &Tensor) -> Result<Tensor> {
    match dtype() {
        Some(d) if t.dtype().is_float() && t.dtype() != DType::F64 && t.dtype() != d => {
            to_dtype(t, d)
        }
        _ => Ok(t.clone()),
    }
}

/// `lower` of an optional input.
pub fn lower_opt(t: Option<&Tensor>) -> Result<Option<Tensor>> {
    t.map(lower).transpose()
}

/// An input of a float32 op: float16 / bfloat16 cast to float32 inside autocast regions.
pub fn fp32(t: &Tensor) -> Result<Tensor> {
    match (dtype(), t.dtype()) {
        (Some(_), DType::F16 | DType::BF16) => to_dtype(t, DType::F32),
        _ => Ok(t.clone()),
    }
}
