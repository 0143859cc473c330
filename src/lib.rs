//! ferrograd: a PyTorch-compatible autograd library with a Rust core.
//!
//! `kernels` are pure functions over slices; `ops` pair each forward with its backward formula;
//! `autograd` holds the graph arena, the saved-tensor store and the engine; `py` is all the PyO3
//! code.

#[macro_use]
pub mod storage;
pub mod autograd;
pub mod creation;
pub mod dtype;
pub mod error;
pub mod kernels;
pub mod layout;
pub mod ops;
pub mod py;
pub mod tensor;

pub use error::{Error, Result};
pub use tensor::Tensor;
