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
pub mod elementwise;
pub mod matmul;
pub mod norm;
pub mod optim;
pub mod pool;
pub mod reduce;
pub mod rnn;
pub mod simd;

/// Below this many elements a cheap kernel stays on the calling thread. Measured with
/// `cargo bench -- elementwise_mul` on the 2-core machine: at 64K elements one thread takes
/// 8.7 µs and two take 23 µs (waking rayon's workers dominates); at 256K they break even
/// (37 vs 34 µs); at 1M two threads win (107 vs 167 µs).
pub const PAR_THRESHOLD: usize = 1 << 18;

/// The same for kernels costing ~10x more per element (exp, tanh, erf...).
pub const PAR_THRESHOLD_COSTLY: usize = 1 << 15;

use crate::error::Result;

pub use crate::storage::alloc;

/// True when work of size `n` should run on the rayon pool: `n` reaches `threshold` and this is
/// the process whose rayon pool is alive. A child forked after the pool started has the pool's
/// bookkeeping but none of its threads (fork copies only the calling thread), so a rayon call
/// there would wait forever; forked children (DataLoader workers) run kernels serially instead.
pub fn par_ok(n: usize, threshold: usize) -> bool {
    static POOL_PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    n >= threshold
        && num_threads() > 1
        && *POOL_PID.get_or_init(std::process::id) == std::process::id()
}

/// The thread limit set by `set_num_threads` (0: all of rayon's threads).
static THREAD_LIMIT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `torch.set_num_threads`: at most `n` threads per kernel from now on; 1 keeps every kernel
/// on the calling thread (and never starts the pool).
pub fn set_num_threads(n: usize) {
    THREAD_LIMIT.store(n.max(1), std::sync::atomic::Ordering::Relaxed);
}

/// The number of threads kernels may use.
pub fn num_threads() -> usize {
    let limit = THREAD_LIMIT.load(std::sync::atomic::Ordering::Relaxed);
    let pool = if limit == 1 { 1 } else { rayon_threads() };
    if limit == 0 {
        pool
    } else {
        limit.min(pool)
    }
}

/// rayon's pool size without starting the pool (RAYON_NUM_THREADS or the CPU count), looked
/// up once: `available_parallelism` reads cgroup files, too slow to ask per kernel.
fn rayon_threads() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// Builds a Vec of `n` elements from disjoint chunks `fill(start, chunk)` covering `0..n`, in
/// parallel above `PAR_THRESHOLD`. `fill` returns how many elements it wrote, which must be the
/// whole chunk; the output is never zero-filled first (one memory pass instead of two).
pub fn build<U, F>(n: usize, fill: F) -> Result<Vec<U>>
where
    U: Send,
    F: Fn(usize, &mut [std::mem::MaybeUninit<U>]) -> usize + Sync,
{
    build_with(n, PAR_THRESHOLD, fill)
}

/// `build` with an explicit parallel threshold.
pub fn build_with<U, F>(n: usize, threshold: usize, fill: F) -> Result<Vec<U>>
where
    U: Send,
    F: Fn(usize, &mut [std::mem::MaybeUninit<U>]) -> usize + Sync,
{
    let mut v = alloc::<U>(n)?;
    let spare = &mut v.spare_capacity_mut()[..n];
    let check = |start: usize, c: &mut [std::mem::MaybeUninit<U>]| {
        let len = c.len();
        assert_eq!(fill(start, c), len, "kernel left elements unwritten");
    };
    if par_ok(n, threshold) {
        pool::for_each_block(spare, &|start, c| check(start, c));
    } else {
        check(0, spare);
    }
    // SAFETY: `check` asserted that every chunk of `spare[..n]` was fully written by `fill`
    // (a panic there propagates before we get here), so the first `n` elements are initialised.
    unsafe { v.set_len(n) };
    Ok(v)
}
