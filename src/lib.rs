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

/// mimalloc keeps freed pages of large tensor buffers for reuse instead of returning them to
/// the OS at once, as glibc's malloc does for mmap-sized blocks; a training step that frees and
/// reallocates the same activation and gradient buffers every iteration otherwise spends a
/// fifth of its time in page faults (measured with perf on the 784-256-128-10 MLP step).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
