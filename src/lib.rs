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
pub mod fork;
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

extern "C" {
    fn mi_option_set(option: std::os::raw::c_int, value: std::os::raw::c_long);
}

/// `mi_option_purge_delay`: position 15 of mimalloc's option enum (the same in its v2 and v3
/// headers, `include/mimalloc.h`).
const MI_OPTION_PURGE_DELAY: std::os::raw::c_int = 15;

/// Keeps freed pages for a second before returning them to the OS (mimalloc's default is 10 ms):
/// a training step of the small CNN (~10 ms) otherwise faults its activation buffers back in
/// every step (7% of the step in `clear_page_erms`, perf).
pub fn tune_allocator() {
    // SAFETY: mi_option_set is mimalloc's documented runtime API for options; it only stores
    // the value in mimalloc's option table (an atomic store), with any option index.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 1000) }
}
