//! Kernels: pure functions over slices and layouts. No graph, no Python.
pub mod elementwise;
pub mod matmul;
pub mod reduce;

/// Below this many elements a kernel stays on the calling thread: on this 2-core machine a
/// second thread buys nothing under ~100K elements (measured; see benches/).
pub const PAR_THRESHOLD: usize = 1 << 16;

use crate::error::{Error, Result};

/// An empty Vec with room for `n` elements, allocated fallibly.
pub fn alloc<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        Error::Memory(format!(
            "DefaultCPUAllocator: not enough memory: you tried to allocate {} bytes.",
            n.saturating_mul(std::mem::size_of::<T>())
        ))
    })?;
    Ok(v)
}
