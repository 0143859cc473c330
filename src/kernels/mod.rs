//! Kernels: pure functions over slices and layouts. No graph, no Python.

/// Calls the kernel `$base` compiled for the best instruction set the CPU has: `$avx512` /
/// `$avx2` are its `#[target_feature]` copies in the calling module's `wide` module.
macro_rules! best {
    ($base:ident, $avx512:ident, $avx2:ident; $($arg:expr),*) => {{
        #[cfg(target_arch = "x86_64")]
        match $crate::kernels::simd::x86::level() {
            // SAFETY: level() returned Avx512 only after is_x86_feature_detected! confirmed
            // avx512f, avx512dq, avx2 and fma, the features the function enables.
            $crate::kernels::simd::x86::Level::Avx512 => unsafe { wide::$avx512($($arg),*) },
            // SAFETY: level() returned Avx2 only after detecting avx2 and fma.
            $crate::kernels::simd::x86::Level::Avx2 => unsafe { wide::$avx2($($arg),*) },
            $crate::kernels::simd::x86::Level::Base => $base($($arg),*),
        }
        #[cfg(not(target_arch = "x86_64"))]
        $base($($arg),*)
    }};
}

pub mod activation;
pub mod attention;
pub mod conv;
pub mod counts;
pub mod elementwise;
pub mod grid_sample;
pub mod index;
pub mod linalg;
pub mod loss;
pub mod math;
pub mod matmul;
pub mod norm;
pub mod optim;
pub mod pad;
pub mod parallel;
pub mod rearrange;
pub mod reduce;
pub mod resample;
pub mod rnn;
pub mod sampling;
pub mod scan;
pub mod scatter_reduce;
pub mod simd;
pub mod sort;
pub mod special;
pub mod vmath64;

pub use crate::storage::alloc;
pub use parallel::{
    build, build_with, num_threads, par_ok, set_num_threads, PAR_THRESHOLD, PAR_THRESHOLD_COSTLY,
};
