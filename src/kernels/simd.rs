//! Runtime SIMD dispatch for elementwise maps, and vectorisable f32 transcendentals.
//!
//! The loops are plain Rust; compiling them inside `#[target_feature]` functions lets LLVM use
//! AVX2+FMA or AVX-512 registers, chosen once per process from what the CPU reports. Nothing
//! is compiled for `target-cpu=native`, so the wheel runs on any x86_64.

use std::mem::MaybeUninit;

#[inline(always)]
fn map_body<T: Copy, U, F: Fn(T) -> U>(src: &[T], dst: &mut [MaybeUninit<U>], f: &F) -> usize {
    for (d, &x) in dst.iter_mut().zip(src) {
        d.write(f(x));
    }
    src.len().min(dst.len())
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use super::*;

    #[target_feature(enable = "avx2,fma")]
    pub fn map_avx2<T: Copy, U, F: Fn(T) -> U>(
        src: &[T],
        dst: &mut [MaybeUninit<U>],
        f: &F,
    ) -> usize {
        map_body(src, dst, f)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub fn map_avx512<T: Copy, U, F: Fn(T) -> U>(
        src: &[T],
        dst: &mut [MaybeUninit<U>],
        f: &F,
    ) -> usize {
        map_body(src, dst, f)
    }

    #[derive(Clone, Copy, PartialEq, Eq)]
    pub enum Level {
        Base,
        Avx2,
        Avx512,
    }

    pub fn level() -> Level {
        static LEVEL: std::sync::OnceLock<Level> = std::sync::OnceLock::new();
        *LEVEL.get_or_init(|| {
            if is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512dq")
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
            {
                Level::Avx512
            } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                Level::Avx2
            } else {
                Level::Base
            }
        })
    }
}

/// `dst[i] = f(src[i])`, compiled for the best instruction set the CPU has. Returns the number
/// of elements written (`min` of the two lengths).
#[inline]
pub fn map<T: Copy, U, F: Fn(T) -> U>(src: &[T], dst: &mut [MaybeUninit<U>], f: &F) -> usize {
    #[cfg(target_arch = "x86_64")]
    if src.len() >= 64 {
        // below that, the indirect call costs more than the wider registers save
        match x86::level() {
            // SAFETY: level() returned Avx512 only after is_x86_feature_detected! confirmed
            // avx512f, avx512dq, avx2 and fma on this CPU, the features the function enables.
            x86::Level::Avx512 => return unsafe { x86::map_avx512(src, dst, f) },
            // SAFETY: level() returned Avx2 only after detecting avx2 and fma.
            x86::Level::Avx2 => return unsafe { x86::map_avx2(src, dst, f) },
            x86::Level::Base => {}
        }
    }
    map_body(src, dst, f)
}

/// Largest element of a slice (-inf when empty; NaNs are ignored, as the callers rely on
/// NaN propagating through the exp), with 8 lanes so that it vectorises.
#[inline(always)]
pub fn max_f32(x: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] = if c[i] > acc[i] { c[i] } else { acc[i] };
        }
    }
    let mut m = f32::NEG_INFINITY;
    for &v in acc.iter().chain(rest) {
        m = if v > m { v } else { m };
    }
    m
}

/// `map` into an initialised slice (overwriting it).
#[inline]
pub fn map_into<T: Copy, U: Copy, F: Fn(T) -> U>(src: &[T], dst: &mut [U], f: &F) -> usize {
    // SAFETY: MaybeUninit<U> has the same size, alignment and layout as U, and `map` only
    // writes initialised values, so viewing initialised memory as MaybeUninit is sound; U is
    // Copy, so overwriting without dropping the old values leaks nothing.
    let dst = unsafe {
        std::slice::from_raw_parts_mut(dst.as_mut_ptr() as *mut MaybeUninit<U>, dst.len())
    };
    map(src, dst, f)
}

/// exp for f32, branch-free so it vectorises (Cody-Waite reduction, Cephes polynomial);
/// max relative error ~2 ulp against `f32::exp`. Overflows to inf above ~88.72; NaN stays NaN.
#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
pub fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer
    let xc = x.clamp(-87.5, 88.75);
    let shifted = xc * LOG2E + MAGIC;
    let n = shifted - MAGIC;
    let ni = (shifted.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let r = xc - n * LN2_HI - n * LN2_LO;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 5.000_000_1e-1;
    let y = p * r * r + r + 1.0;
    // 2^n applied as two halves, so that n = 128 and n = -126 stay in the exponent range
    let n1 = ni >> 1;
    let n2 = ni - n1;
    let s1 = f32::from_bits(((n1 + 127).clamp(1, 254) as u32) << 23);
    let s2 = f32::from_bits(((n2 + 127).clamp(1, 254) as u32) << 23);
    let r = y * s1 * s2;
    // below the normal range the result is (flushed) zero; exp(-inf) = 0
    if x < -87.5 {
        0.0
    } else {
        r
    }
}

/// tanh for f32: a polynomial near 0 (no cancellation), 1 - 2/(exp(2|x|)+1) elsewhere.
#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
pub fn tanh_f32(x: f32) -> f32 {
    let ax = x.abs();
    let z = x * x;
    let p = (((-5.704_988_7e-3 * z + 2.063_908_9e-2) * z - 5.373_971_6e-2) * z + 1.333_144_2e-1)
        * z
        - 3.333_328_2e-1;
    let small = x + x * z * p;
    let big = (1.0 - 2.0 / (exp_f32(2.0 * ax) + 1.0)).copysign(x);
    if ax < 0.625 {
        small
    } else {
        big
    }
}

/// sigmoid for f32: 1 / (1 + exp(-x)).
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f32) -> f32 {
        ((a - b).abs() / b.abs().max(f32::MIN_POSITIVE)) / f32::EPSILON
    }

    #[test]
    fn exp_is_accurate_over_its_range() {
        let mut worst = 0.0f32;
        let mut x = -87.0f32;
        while x < 88.7 {
            worst = worst.max(ulps(exp_f32(x), x.exp()));
            x += 0.0137;
        }
        assert!(worst < 4.0, "worst {worst} ulp");
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(100.0), f32::INFINITY);
        assert_eq!(exp_f32(-200.0), 0.0);
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn tanh_and_sigmoid_are_accurate() {
        let mut x = -12.0f32;
        while x < 12.0 {
            let t = tanh_f32(x);
            let want = (x as f64).tanh() as f32;
            assert!(
                (t - want).abs() <= 3.0 * f32::EPSILON * want.abs().max(1e-30) + 1e-37,
                "tanh({x})"
            );
            let s = sigmoid_f32(x);
            let want = (1.0 / (1.0 + (-(x as f64)).exp())) as f32;
            assert!(
                (s - want).abs() <= 4.0 * f32::EPSILON * want,
                "sigmoid({x})"
            );
            x += 0.00731;
        }
        assert_eq!(tanh_f32(1e-6), 1e-6);
        assert_eq!(tanh_f32(50.0), 1.0);
        assert_eq!(tanh_f32(-50.0), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
    }

    #[test]
    fn dispatched_map_matches_scalar() {
        let src: Vec<f32> = (0..1000).map(|i| i as f32 * 0.01 - 5.0).collect();
        let mut dst = vec![MaybeUninit::<f32>::uninit(); 1000];
        assert_eq!(map(&src, &mut dst, &|x| exp_f32(x)), 1000);
        for (d, &x) in dst.iter().zip(&src) {
            // SAFETY: map reported writing all 1000 elements
            assert_eq!(unsafe { d.assume_init() }, exp_f32(x));
        }
    }
}
