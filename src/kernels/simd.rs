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

    #[target_feature(enable = "avx2,fma")]
    pub fn run_avx2<K: super::Vectorize>(k: K) -> K::Out {
        k.run()
    }

    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub fn run_avx512<K: super::Vectorize>(k: K) -> K::Out {
        k.run()
    }

    #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    pub enum Level {
        Base,
        Avx2,
        Avx512,
    }

    /// The instruction set the kernels use: the best the CPU has, or less when the environment
    /// variable `FERROGRAD_SIMD` (`avx2` or `base`, read once) asks for it, so that the tests
    /// can run the other code paths on any machine.
    pub fn level() -> Level {
        static LEVEL: std::sync::OnceLock<Level> = std::sync::OnceLock::new();
        *LEVEL.get_or_init(|| {
            let detected = if is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512dq")
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
            {
                Level::Avx512
            } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                Level::Avx2
            } else {
                Level::Base
            };
            let asked = match std::env::var("FERROGRAD_SIMD").as_deref() {
                Ok("base") => Level::Base,
                Ok("avx2") => Level::Avx2,
                _ => Level::Avx512,
            };
            detected.min(asked)
        })
    }

    /// Explicit AVX-512 forms of the f32 functions above, for row kernels whose compiled loops
    /// cost more than they need: `exp_f32`'s 2^n1 * 2^n2 is nine instructions a vector, and
    /// `vscalefps` gives the same bits in one.
    pub mod avx512 {
        use super::super::{
            EXP_HI, EXP_LN2_HI, EXP_LN2_LO, EXP_LO, EXP_LOG2E, EXP_MAGIC, EXP_POLY, TANH_POLY,
            TANH_SMALL,
        };
        use std::arch::x86_64::*;

        /// `exp_f32` of each lane, bit for bit (the same reduction, polynomial and fused
        /// multiply-adds; 2^n applied by `vscalefps`, exact or rounded once, as the two
        /// products are).
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub fn exp_ps(x: __m512) -> __m512 {
            // max(lo, x) and min(hi, .) return their second operand for a NaN: NaN stays
            let xc = _mm512_min_ps(
                _mm512_set1_ps(EXP_HI),
                _mm512_max_ps(_mm512_set1_ps(EXP_LO), x),
            );
            let magic = _mm512_set1_ps(EXP_MAGIC);
            let n = _mm512_sub_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(EXP_LOG2E), magic), magic);
            let r = _mm512_fmadd_ps(
                n,
                _mm512_set1_ps(-EXP_LN2_LO),
                _mm512_fmadd_ps(n, _mm512_set1_ps(-EXP_LN2_HI), xc),
            );
            let mut p = _mm512_set1_ps(EXP_POLY[0]);
            for &c in &EXP_POLY[1..] {
                p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
            }
            let em1 = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r);
            let e = _mm512_scalef_ps(_mm512_add_ps(em1, _mm512_set1_ps(1.0)), n);
            // below the normal range (and at -inf) 0; a NaN compares unordered and is kept
            let keep = _mm512_cmp_ps_mask::<_CMP_NLT_UQ>(x, _mm512_set1_ps(EXP_LO));
            _mm512_maskz_mov_ps(keep, e)
        }

        /// `tanh_f32` of each lane, bit for bit.
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub fn tanh_ps(x: __m512) -> __m512 {
            let ax = _mm512_abs_ps(x);
            let z = _mm512_mul_ps(x, x);
            let mut p = _mm512_set1_ps(TANH_POLY[0]);
            for &c in &TANH_POLY[1..] {
                p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(c));
            }
            let small = _mm512_fmadd_ps(_mm512_mul_ps(x, z), p, x);
            let one = _mm512_set1_ps(1.0);
            let e = exp_ps(_mm512_add_ps(ax, ax));
            let big = _mm512_sub_ps(
                one,
                _mm512_div_ps(_mm512_set1_ps(2.0), _mm512_add_ps(e, one)),
            );
            // copysign: big's magnitude with x's sign bit
            let sign = _mm512_set1_ps(-0.0);
            let big = _mm512_or_ps(_mm512_andnot_ps(sign, big), _mm512_and_ps(x, sign));
            let is_small = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(ax, _mm512_set1_ps(TANH_SMALL));
            _mm512_mask_blend_ps(is_small, big, small)
        }

        /// `sigmoid_f32` of each lane, bit for bit.
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub fn sigmoid_ps(x: __m512) -> __m512 {
            let one = _mm512_set1_ps(1.0);
            let e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x));
            _mm512_div_ps(one, _mm512_add_ps(one, e))
        }

        /// `x * sigmoid_f32(x)` of each lane (silu), bit for bit.
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub fn silu_ps(x: __m512) -> __m512 {
            _mm512_mul_ps(x, sigmoid_ps(x))
        }

        /// The sum of the 16 lanes in `merge_lanes`' order: lane i and lane i + 8 added, then
        /// i + 4, i + 2, i + 1.
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub fn sum_halving(v: __m512) -> f32 {
            let a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps::<1>(v));
            let b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
            let c = _mm_add_ps(b, _mm_movehl_ps(b, b));
            _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)))
        }

        /// A float32 trig function as `trig_ps` runs it: `small` for |x| within
        /// `TRIG_SMALL` (or NaN), `general` for any x, the same bits where both apply. Zero-sized
        /// types whose functions are always inlined, so that the lane loops vectorise inside
        /// `trig_ps` (closures were called lane by lane).
        trait Trig {
            fn small(x: f32) -> f32;
            fn general(x: f32) -> f32;
        }
        struct Sin;
        impl Trig for Sin {
            #[inline(always)]
            fn small(x: f32) -> f32 {
                super::super::sincos_reduced(x, super::super::reduce_pio2_small_f32(x)).0
            }
            #[inline(always)]
            fn general(x: f32) -> f32 {
                super::super::sin_f32(x)
            }
        }
        struct Cos;
        impl Trig for Cos {
            #[inline(always)]
            fn small(x: f32) -> f32 {
                super::super::sincos_reduced(x, super::super::reduce_pio2_small_f32(x)).1
            }
            #[inline(always)]
            fn general(x: f32) -> f32 {
                super::super::cos_f32(x)
            }
        }
        struct Tan;
        impl Trig for Tan {
            #[inline(always)]
            fn small(x: f32) -> f32 {
                super::super::tan_reduced(x, super::super::reduce_pio2_small_f32(x))
            }
            #[inline(always)]
            fn general(x: f32) -> f32 {
                super::super::tan_f32(x)
            }
        }

        /// `K`'s function of each lane: through `K::small` (bit for bit the same) when every
        /// lane is within `TRIG_SMALL` or NaN, so without the f64 reduction.
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        fn trig_ps<K: Trig>(x: __m512) -> __m512 {
            let big = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(
                _mm512_abs_ps(x),
                _mm512_set1_ps(super::super::TRIG_SMALL),
            );
            let mut v = [0.0f32; 16];
            // SAFETY: v holds 16 f32s.
            unsafe { _mm512_storeu_ps(v.as_mut_ptr(), x) };
            if big == 0 {
                for e in &mut v {
                    *e = K::small(*e);
                }
            } else {
                for e in &mut v {
                    *e = K::general(*e);
                }
            }
            // SAFETY: as above.
            unsafe { _mm512_loadu_ps(v.as_ptr()) }
        }

        /// `sin_f32` of each lane, bit for bit.
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub fn sin_ps(x: __m512) -> __m512 {
            trig_ps::<Sin>(x)
        }

        /// `cos_f32` of each lane, bit for bit.
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub fn cos_ps(x: __m512) -> __m512 {
            trig_ps::<Cos>(x)
        }

        /// `tan_f32` of each lane, bit for bit.
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub fn tan_ps(x: __m512) -> __m512 {
            trig_ps::<Tan>(x)
        }

        /// `q[i] = f(p[i])` for i < n, 16 lanes at a time, the last vector masked.
        ///
        /// # Safety
        /// `p` is readable and `q` writable for `n` f32s (they may be the same memory).
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub unsafe fn map16(p: *const f32, q: *mut f32, n: usize, f: impl Fn(__m512) -> __m512) {
            let mut i = 0;
            while i < n {
                let k = first(n - i);
                // SAFETY: the masked load and store touch only elements i + j < n, readable
                // and writable by the caller's promise.
                unsafe {
                    _mm512_mask_storeu_ps(q.add(i), k, f(_mm512_maskz_loadu_ps(k, p.add(i))))
                };
                i += 16;
            }
        }

        /// The mask of the first `n` (at most 16) lanes.
        #[inline(always)]
        pub fn first(n: usize) -> __mmask16 {
            (((1u32 << n.min(16)) - 1) & 0xffff) as __mmask16
        }
    }
}

/// `x` as f32 values when `R` is f32.
#[inline(always)]
pub fn as_f32<R: 'static>(x: &[R]) -> Option<&[f32]> {
    (std::any::TypeId::of::<R>() == std::any::TypeId::of::<f32>())
        // SAFETY: R is f32 (same TypeId), so the slice holds x.len() initialised f32 values.
        .then(|| unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<f32>(), x.len()) })
}

/// `x` as mutable f32 values when `R` is f32.
#[inline(always)]
pub fn as_f32_mut<R: 'static>(x: &mut [R]) -> Option<&mut [f32]> {
    (std::any::TypeId::of::<R>() == std::any::TypeId::of::<f32>())
        // SAFETY: R is f32 (same TypeId), so the slice holds x.len() initialised f32 values,
        // borrowed mutably and exclusively for the returned lifetime.
        .then(|| unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<f32>(), x.len()) })
}

/// `dst[i] = f(src[i])`, compiled for the best instruction set the CPU has. Returns the number
/// of elements written (`min` of the two lengths).
#[inline]
pub fn map<T: Copy, U, F: Fn(T) -> U>(src: &[T], dst: &mut [MaybeUninit<U>], f: &F) -> usize {
    // every length goes through the dispatch: the vector math uses fused multiply-adds,
    // single instructions there and library calls in the plain build
    #[cfg(target_arch = "x86_64")]
    {
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

/// Work to compile for the best instruction set the CPU has (see `vectorized`). `run` must be
/// `#[inline(always)]`, and so must what it calls, to be compiled inside the dispatching
/// function with its features (a closure would not be inlined there, so it is a trait).
pub trait Vectorize {
    type Out;
    fn run(self) -> Self::Out;
}

/// `k.run()` compiled for the best instruction set the CPU has: its loops vectorised with
/// AVX2+FMA or AVX-512, and float rounding (`floor`) one instruction rather than a library
/// call.
#[inline]
pub fn vectorized<K: Vectorize>(k: K) -> K::Out {
    #[cfg(target_arch = "x86_64")]
    {
        match x86::level() {
            // SAFETY: level() returned Avx512 only after is_x86_feature_detected! confirmed
            // avx512f, avx512dq, avx2 and fma on this CPU, the features the function enables.
            x86::Level::Avx512 => return unsafe { x86::run_avx512(k) },
            // SAFETY: level() returned Avx2 only after detecting avx2 and fma.
            x86::Level::Avx2 => return unsafe { x86::run_avx2(k) },
            x86::Level::Base => {}
        }
    }
    k.run()
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

/// The polynomial with coefficients `c` (highest degree first) at `x`, by Horner's rule with
/// fused multiply-adds. A fused multiply-add is one instruction in the code compiled for
/// AVX2+FMA and AVX-512 (`map`, `best!`) and a correctly rounded libm call in the plain build,
/// so both give the same bits; the engine runs every map through the dispatch when the CPU
/// has FMA.
#[inline(always)]
pub fn horner<R: Real, const N: usize>(x: R, c: [R; N]) -> R {
    let mut acc = c[0];
    for &k in &c[1..] {
        acc = acc.mul_add(x, k);
    }
    acc
}

/// x + x^3 p(x^2), with p's coefficients `c` (highest degree first): the odd series of the
/// Cephes approximations (sin, tan, atan, asin) on their reduced ranges.
#[inline(always)]
pub fn odd_series<const N: usize>(x: f32, c: [f32; N]) -> f32 {
    let z = x * x;
    (horner(z, c) * z).mul_add(x, x)
}

// exp_f32's constants (shared with its explicit AVX-512 form, `x86::avx512::exp_ps`)
const EXP_LO: f32 = -87.5;
const EXP_HI: f32 = 88.75;
const EXP_LOG2E: f32 = std::f32::consts::LOG2_E;
const EXP_LN2_HI: f32 = 0.693_359_4;
const EXP_LN2_LO: f32 = -2.121_944_4e-4;
const EXP_MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
const EXP_POLY: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    1.666_666_5e-1,
    5.000_000_1e-1,
];

/// exp's reduction and polynomial for `xc` (already clamped to [-88, 88.75], or to [-102.5, 0]
/// by erfc, whose 2^n1 2^n2 then ends subnormal, each factor still normal): x = n ln2 + r
/// with |r| <= ln2 / 2 (Cody-Waite), exp(r) - 1 = r + r^2 p(r) (Cephes' polynomial, without its
/// 1), and 2^n as two factors 2^n1 * 2^n2, so that n = 128 and n = -126 stay in the exponent
/// range. Returns (exp(r) - 1, 2^n1, 2^n2, n).
#[inline(always)]
pub(crate) fn exp_reduced(xc: f32) -> (f32, f32, f32, i32) {
    let shifted = xc.mul_add(EXP_LOG2E, EXP_MAGIC);
    let n = shifted - EXP_MAGIC;
    let ni = (shifted.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let r = n.mul_add(-EXP_LN2_LO, n.mul_add(-EXP_LN2_HI, xc));
    let p = horner(r, EXP_POLY);
    let n1 = ni >> 1;
    let n2 = ni - n1;
    // xc in [-88, 88.75]: n in [-127, 128], so n1, n2 in [-64, 64] and both exponent fields in
    // [63, 191] (a NaN xc gives any bits here, and a NaN result through em1)
    let s1 = f32::from_bits(((n1 + 127) as u32) << 23);
    let s2 = f32::from_bits(((n2 + 127) as u32) << 23);
    ((p * r).mul_add(r, r), s1, s2, ni)
}

/// exp for f32, branch-free so it vectorises (`exp_reduced`); max relative error ~2 ulp
/// against `f32::exp`. Overflows to inf above ~88.72; NaN stays NaN.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    let (em1, s1, s2, _) = exp_reduced(x.clamp(EXP_LO, EXP_HI));
    let r = (em1 + 1.0) * s1 * s2;
    // below the normal range the result is (flushed) zero; exp(-inf) = 0
    if x < EXP_LO {
        0.0
    } else {
        r
    }
}

#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
const TANH_POLY: [f32; 5] = [
    -5.704_988_7e-3,
    2.063_908_9e-2,
    -5.373_971_6e-2,
    1.333_144_2e-1,
    -3.333_328_2e-1,
];
const TANH_SMALL: f32 = 0.625;

/// tanh for f32: a polynomial near 0 (no cancellation), 1 - 2/(exp(2|x|)+1) elsewhere.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let ax = x.abs();
    let z = x * x;
    let p = horner(z, TANH_POLY);
    let small = (x * z).mul_add(p, x);
    let big = (1.0 - 2.0 / (exp_f32(2.0 * ax) + 1.0)).copysign(x);
    if ax < TANH_SMALL {
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

/// Splits a positive normal or subnormal f32 into `m` in [sqrt(1/2), sqrt(2)) and `e` with
/// x = m * 2^e, branch-free.
#[inline(always)]
fn split_f32(x: f32) -> (f32, f32) {
    // subnormals are scaled into the normal range first
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 8_388_608.0 } else { x };
    let bits = xs.to_bits();
    let mut e = ((bits >> 23) & 0xff) as i32 - 126 - if sub { 23 } else { 0 };
    let mut m = f32::from_bits((bits & 0x807f_ffff) | 0x3f00_0000); // [0.5, 1)
    let low = m < std::f32::consts::FRAC_1_SQRT_2;
    e -= low as i32;
    m = if low { m + m } else { m };
    (m, e as f32)
}

/// Natural log for f32, branch-free so it vectorises (Cephes' logf polynomial on the mantissa);
/// within 1 ulp of the correctly rounded result over the positive floats. log(0) = -inf,
/// log(x < 0) = NaN, log(inf) = inf, NaN stays NaN.
#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
pub fn log_f32(x: f32) -> f32 {
    let (m, e) = split_f32(x);
    let f = m - 1.0;
    let z = f * f;
    let p = horner(
        f,
        [
            7.037_683_6e-2,
            -1.151_461_03e-1,
            1.167_699_874e-1,
            -1.242_014_085e-1,
            1.424_932_279e-1,
            -1.666_805_766e-1,
            2.000_071_477e-1,
            -2.499_999_399e-1,
            3.333_333_117e-1,
        ],
    );
    let y = (f * z).mul_add(p, e.mul_add(-2.121_944_4e-4, -0.5 * z));
    let r = e.mul_add(0.693_359_375, f + y);
    if x > 0.0 && x < f32::INFINITY {
        r
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        f32::NAN
    }
}

/// log(1 + x) for f32, accurate near 0: log(u) * x / (u - 1) with u = 1 + x (Goldberg), which
/// cancels the rounding error of u.
#[inline(always)]
pub fn log1p_f32(x: f32) -> f32 {
    let u = 1.0 + x;
    let d = u - 1.0;
    let r = log_f32(u) * (x / d);
    if d == 0.0 {
        x
    } else if u == f32::INFINITY {
        u
    } else {
        r
    }
}

/// exp(x) - 1 for f32, accurate near 0: with exp's reduction x = n ln2 + r, exp(r) - 1 comes
/// without cancellation, and expm1(x) = 2^n (exp(r) - 1) + (2^n - 1). Branch-free; -1 below
/// -88, inf from ~88.72 on.
#[inline(always)]
pub fn expm1_f32(x: f32) -> f32 {
    let (em1, s1, s2, n) = exp_reduced(x.clamp(-88.0, 88.75));
    let s = s1 * s2; // exact while n < 128, the only case it is used
    let near = s.mul_add(em1, s - 1.0);
    let big = (em1 + 1.0) * s1 * s2 - 1.0;
    if x.is_nan() {
        x
    } else if x < -88.0 {
        -1.0
    } else if n > 64 {
        big
    } else {
        near
    }
}

/// erf for f32: an odd rational function of x on [-4, 4] (beyond, erf is +-1 in f32), the
/// approximation of Eigen and XLA: within 0.6 ulp before rounding, 3.4 ulp measured in f32.
#[inline(always)]
#[allow(clippy::excessive_precision)] // published coefficients
pub fn erf_f32(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = horner(
        x2,
        [
            -2.726_142_258e-10,
            2.770_681_425e-8,
            -2.101_024_021e-6,
            -5.692_506_394e-5,
            -7.349_906_303e-4,
            -2.954_599_809e-3,
            -1.609_603_333e-2,
        ],
    );
    let q = horner(
        x2,
        [
            -1.456_607_185e-5,
            -2.133_740_553e-4,
            -1.682_826_974e-3,
            -7.373_329_167e-3,
            -1.426_473_905e-2,
        ],
    );
    x * p / q
}

/// |x| up to which sin, cos and tan reduce their argument in f32 (`reduce_pio2_small_f32`):
/// below it, the f32 reduction's error leaves the functions' maximum error as it is with the
/// f64 reduction (measured on every float32; up to 8192 it grows from 1.09 to 1.43 ulp).
pub(crate) const TRIG_SMALL: f32 = 128.0;

/// x = r + q pi/2 with |r| <= pi/4 (a little more at the rounding of q), in f32 for
/// |x| <= `TRIG_SMALL`: pi/2 in three parts, the first of 12 bits (so q times it is exact),
/// each subtracted by a fused multiply-add. r and q mod 4.
#[inline(always)]
#[allow(clippy::excessive_precision)] // pi/2's parts, as computed
fn reduce_pio2_small_f32(x: f32) -> (f32, u32) {
    let q = (x * std::f32::consts::FRAC_2_PI).round();
    let r = q.mul_add(-1.570_800_781_25, x);
    let r = q.mul_add(4.454_454_938_240_815e-6, r);
    let r = q.mul_add(1.651_399_557_465_321_7e-13, r);
    // q mod 4 from the low mantissa bits of q + 1.5 * 2^23 (`as i32` saturates, which LLVM
    // does lane by lane)
    (r, (q + 12_582_912.0).to_bits() & 3)
}

/// x = r + q pi/2 with |r| <= pi/4: r and q mod 4. In f32 up to `TRIG_SMALL`, beyond in f64
/// (exact enough for |x| up to ~1e9). Both are computed, so that it vectorises; the explicit
/// AVX-512 forms skip the f64 one for vectors whose lanes are all small.
#[inline(always)]
fn reduce_pio2_f32(x: f32) -> (f32, u32) {
    const FRAC_2_PI: f64 = std::f64::consts::FRAC_2_PI;
    const PIO2_HI: f64 = 1.570_796_326_734_125_6; // pi/2 to 33 bits
    const PIO2_LO: f64 = 6.077_100_506_506_192e-11; // pi/2 - PIO2_HI
    let xd = x as f64;
    let q = (xd * FRAC_2_PI).round();
    let r = ((xd - q * PIO2_HI) - q * PIO2_LO) as f32;
    // q mod 4 from the low mantissa bits of q + 1.5 * 2^52 (no f64 -> int conversion, which
    // AVX2 lacks)
    let quadrant = ((q + 6_755_399_441_055_744.0).to_bits() as u32) & 3;
    let (rs, qs) = reduce_pio2_small_f32(x);
    if x.abs() <= TRIG_SMALL {
        (rs, qs)
    } else {
        (r, quadrant)
    }
}

/// sin and cos of `x` from its reduction (r, q mod 4): Cephes' sinf / cosf polynomials on
/// [-pi/4, pi/4]. inf and NaN give NaN.
#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
fn sincos_reduced(x: f32, (r, quadrant): (f32, u32)) -> (f32, f32) {
    let z = r * r;
    let s = odd_series(
        r,
        [-1.951_529_589_1e-4, 8.332_160_873_6e-3, -1.666_665_461_1e-1],
    );
    let c = (horner(
        z,
        [
            2.443_315_711_809_948e-5,
            -1.388_731_625_493_765e-3,
            4.166_664_568_298_827e-2,
        ],
    ) * z)
        .mul_add(z, (-0.5f32).mul_add(z, 1.0));
    // sin(r + q pi/2) and cos(r + q pi/2), by quadrant, with selects rather than branches
    let odd = quadrant & 1 != 0;
    let (a, b) = (if odd { c } else { s }, if odd { s } else { c });
    let sin = if quadrant & 2 != 0 { -a } else { a };
    let cos = if (quadrant + 1) & 2 != 0 { -b } else { b };
    if x.is_finite() {
        (sin, cos)
    } else {
        (f32::NAN, f32::NAN)
    }
}

/// tan of `x` from its reduction: Cephes' tanf polynomial on [-pi/4, pi/4], and -1 / tan(r)
/// in the odd quadrants. inf and NaN give NaN.
#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
fn tan_reduced(x: f32, (r, quadrant): (f32, u32)) -> f32 {
    let t = odd_series(
        r,
        [
            9.385_401_855_43e-3,
            3.119_922_326_97e-3,
            2.443_013_545_25e-2,
            5.341_128_070_05e-2,
            1.333_879_940_85e-1,
            3.333_315_685_48e-1,
        ],
    );
    let t = if quadrant & 1 != 0 { -1.0 / t } else { t };
    if x.is_finite() {
        t
    } else {
        f32::NAN
    }
}

/// sin and cos of an f32 (both, as one reduction serves both): the argument reduced modulo
/// pi/2 (`reduce_pio2_f32`), then Cephes' sinf / cosf polynomials. inf and NaN give NaN.
#[inline(always)]
pub fn sincos_f32(x: f32) -> (f32, f32) {
    sincos_reduced(x, reduce_pio2_f32(x))
}

/// tan for f32, vectorisable (`reduce_pio2_f32`, Cephes' tanf).
#[inline(always)]
pub fn tan_f32(x: f32) -> f32 {
    tan_reduced(x, reduce_pio2_f32(x))
}

/// sin for f32, vectorisable (see `sincos_f32`).
#[inline(always)]
pub fn sin_f32(x: f32) -> f32 {
    sincos_f32(x).0
}

/// cos for f32, vectorisable (see `sincos_f32`).
#[inline(always)]
pub fn cos_f32(x: f32) -> f32 {
    sincos_f32(x).1
}

/// gelu for f32, exact form: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)).
#[inline(always)]
pub fn gelu_f32(x: f32) -> f32 {
    0.5 * x * (1.0 + erf_f32(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// gelu for f32, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
#[inline(always)]
pub fn gelu_tanh_f32(x: f32) -> f32 {
    const K: f32 = 0.797_884_6; // sqrt(2/pi)
    0.5 * x * (1.0 + tanh_f32(K * (0.044_715 * x * x).mul_add(x, x)))
}

/// erf with ~1e-16 accuracy (W. J. Cody's rational approximations via erfc for large |x|).
pub fn erf_f64(x: f64) -> f64 {
    // Abramowitz-Stegun 7.1.26 is too coarse for float64 gradchecks; use a series / continued
    // fraction split instead.
    let ax = x.abs();
    if ax < 2.5 {
        // Taylor series: erf(x) = 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1))
        let mut term = x;
        let mut sum = x;
        let x2 = x * x;
        let mut n = 0.0;
        loop {
            n += 1.0;
            term *= -x2 / n;
            let add = term / (2.0 * n + 1.0);
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
            if n > 200.0 {
                break;
            }
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else {
        // continued fraction for erfc (Lentz), accurate for |x| >= 2.5
        let z = ax;
        let mut f;
        let tiny = 1e-300;
        let mut c;
        let mut d;
        // erfc(z) = exp(-z^2)/sqrt(pi) * 1/(z + 1/2/(z + 1/(z + 3/2/(z + ...))))
        f = z;
        if f == 0.0 {
            f = tiny;
        }
        c = f;
        d = 0.0;
        for i in 1..300 {
            let a = i as f64 / 2.0;
            d = z + a * d;
            if d == 0.0 {
                d = tiny;
            }
            c = z + a / c;
            if c == 0.0 {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        let erfc = (-z * z).exp() / std::f64::consts::PI.sqrt() / f;
        let r = 1.0 - erfc;
        if x < 0.0 {
            -r
        } else {
            r
        }
    }
}

/// The float element types, with the math their kernels need (activations, optimizers,
/// normalization): f32 through the vectorisable functions above, f64 through std (and
/// `erf_f64`).
pub trait Real:
    Copy
    + 'static
    + Send
    + Sync
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::Rem<Output = Self>
{
    const NAN: Self;
    /// The f64 value in this type (a constant, a hyper-parameter).
    fn of(v: f64) -> Self;
    /// `of`, short for constants in formulas.
    #[inline(always)]
    fn c(v: f64) -> Self {
        Self::of(v)
    }
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn tanh(self) -> Self;
    fn erf(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn sqrt(self) -> Self;
    fn floor(self) -> Self;
    fn powf(self, e: Self) -> Self;
    fn is_nan(self) -> bool;
    /// `self * a + b` with one rounding: one instruction where compiled with FMA, a library
    /// call elsewhere.
    fn mul_add(self, a: Self, b: Self) -> Self;
    #[inline(always)]
    fn sigmoid(self) -> Self {
        Self::of(1.0) / (Self::of(1.0) + (-self).exp())
    }
}

/// `Real` for a float type from its vectorisable (or std) functions.
macro_rules! real {
    ($t:ty, exp: $exp:path, ln: $ln:path, tanh: $tanh:path, erf: $erf:path, sin: $sin:path, cos: $cos:path) => {
        impl Real for $t {
            const NAN: $t = <$t>::NAN;
            #[inline(always)]
            fn of(v: f64) -> $t {
                v as $t
            }
            #[inline(always)]
            fn exp(self) -> $t {
                $exp(self)
            }
            #[inline(always)]
            fn ln(self) -> $t {
                $ln(self)
            }
            #[inline(always)]
            fn tanh(self) -> $t {
                $tanh(self)
            }
            #[inline(always)]
            fn erf(self) -> $t {
                $erf(self)
            }
            #[inline(always)]
            fn sin(self) -> $t {
                $sin(self)
            }
            #[inline(always)]
            fn cos(self) -> $t {
                $cos(self)
            }
            #[inline(always)]
            fn sqrt(self) -> $t {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn floor(self) -> $t {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn powf(self, e: $t) -> $t {
                <$t>::powf(self, e)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn mul_add(self, a: $t, b: $t) -> $t {
                <$t>::mul_add(self, a, b)
            }
        }
    };
}

real!(f32, exp: exp_f32, ln: log_f32, tanh: tanh_f32, erf: erf_f32, sin: sin_f32, cos: cos_f32);
// f64: the vectorisable functions of vmath64, except sin and cos, whose vector reduction is exact
// only up to |x| = vmath64::TRIG_MAX
real!(f64, exp: super::vmath64::exp_f64, ln: super::vmath64::log_f64, tanh: super::vmath64::tanh_f64, erf: super::vmath64::verf_f64, sin: f64::sin, cos: f64::cos);

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

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn explicit_avx512_forms_are_the_f32_functions_bit_for_bit() {
        use std::arch::x86_64::{_mm512_loadu_ps, _mm512_storeu_ps};
        if x86::level() != x86::Level::Avx512 {
            eprintln!("skipped: this CPU (or FERROGRAD_SIMD) runs no AVX-512 code");
            return;
        }
        let mut xs = vec![
            0.0,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            EXP_LO,
            EXP_LO.next_up(),
            EXP_LO.next_down(),
            -87.4,
            -87.33655,
            88.72283,
            88.72284,
            EXP_HI,
            f32::MIN_POSITIVE,
            f32::MAX,
            f32::MIN,
            TRIG_SMALL,
            -TRIG_SMALL,
            TRIG_SMALL.next_up(),
            -TRIG_SMALL.next_up(),
        ];
        // every exponent and sign, and a fine sweep of the range where exp is finite
        xs.extend((0..=u32::MAX).step_by(4099).map(f32::from_bits));
        xs.extend((0..400_000).map(|i| -100.0 + i as f32 * 0.0005));
        for c in xs.chunks(16) {
            let mut lanes = [0.0f32; 16];
            lanes[..c.len()].copy_from_slice(c);
            type Pair = (
                &'static str,
                unsafe fn(std::arch::x86_64::__m512) -> std::arch::x86_64::__m512,
                fn(f32) -> f32,
            );
            let fns: [Pair; 7] = [
                ("exp", x86::avx512::exp_ps, exp_f32),
                ("tanh", x86::avx512::tanh_ps, tanh_f32),
                ("sigmoid", x86::avx512::sigmoid_ps, sigmoid_f32),
                ("silu", x86::avx512::silu_ps, |x| x * sigmoid_f32(x)),
                ("sin", x86::avx512::sin_ps, sin_f32),
                ("cos", x86::avx512::cos_ps, cos_f32),
                ("tan", x86::avx512::tan_ps, tan_f32),
            ];
            for (name, v, f) in fns {
                let mut got = [0.0f32; 16];
                // SAFETY: level() reported AVX-512 (avx512f, avx512dq, avx2 and fma detected);
                // both arrays hold 16 f32s.
                unsafe { _mm512_storeu_ps(got.as_mut_ptr(), v(_mm512_loadu_ps(lanes.as_ptr()))) };
                for (&x, &e) in c.iter().zip(&got) {
                    let want = f(x);
                    assert!(
                        e.to_bits() == want.to_bits() || (e.is_nan() && want.is_nan()),
                        "{name}({x:e}): {e:e} != {want:e}"
                    );
                }
            }
        }
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

    /// Largest error in ulps (of the correctly rounded f32 result) of `f` against `reference`
    /// (computed in f64) at `n` points spread over [lo, hi].
    fn worst_ulps(f: impl Fn(f32) -> f32, reference: impl Fn(f64) -> f64, lo: f32, hi: f32) -> f64 {
        let n = 200_000;
        let mut worst = 0.0f64;
        for i in 0..=n {
            let x = lo + (hi - lo) * (i as f32 / n as f32);
            let want = reference(x as f64);
            let got = f(x) as f64;
            let ulp = ((want as f32).abs().max(f32::MIN_POSITIVE) as f64) * f32::EPSILON as f64;
            worst = worst.max((got - want).abs() / ulp);
        }
        worst
    }

    #[test]
    fn vector_math_is_within_its_stated_ulps() {
        let erf = erf_f64;
        assert!(worst_ulps(log_f32, f64::ln, 1e-30, 1e30) <= 2.0);
        assert!(worst_ulps(log_f32, f64::ln, 0.5, 2.0) <= 2.0);
        assert!(worst_ulps(log1p_f32, f64::ln_1p, -0.999, 10.0) <= 3.0);
        assert!(worst_ulps(log1p_f32, f64::ln_1p, -1e-3, 1e-3) <= 3.0);
        assert!(worst_ulps(expm1_f32, f64::exp_m1, -20.0, 20.0) <= 4.0);
        assert!(worst_ulps(expm1_f32, f64::exp_m1, -1e-3, 1e-3) <= 4.0);
        let w = worst_ulps(erf_f32, erf, -5.0, 5.0);
        assert!(w <= 4.0, "erf {w}");
        assert!(worst_ulps(erf_f32, erf, -1e-3, 1e-3) <= 3.0);
        // sin/cos: relative ulps away from their zeros, absolute near them
        let abs_err = |f: fn(f32) -> f32, r: fn(f64) -> f64| {
            (0..=200_000)
                .map(|i| -1000.0 + 2000.0 * (i as f32 / 200_000.0))
                .map(|x| (f(x) as f64 - r(x as f64)).abs())
                .fold(0.0, f64::max)
        };
        assert!(abs_err(sin_f32, f64::sin) <= 2.0 * f32::EPSILON as f64);
        assert!(abs_err(cos_f32, f64::cos) <= 2.0 * f32::EPSILON as f64);
        assert!(worst_ulps(sin_f32, f64::sin, -1.5, 1.5) <= 2.0);
        // special values
        assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
        assert!(log_f32(-1.0).is_nan() && log_f32(f32::NAN).is_nan());
        assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(log1p_f32(-1.0), f32::NEG_INFINITY);
        assert_eq!(log1p_f32(1e-30), 1e-30);
        assert_eq!(expm1_f32(-100.0), -1.0);
        assert_eq!(expm1_f32(100.0), f32::INFINITY);
        assert_eq!(erf_f32(10.0), 1.0);
        assert_eq!(erf_f32(-10.0), -1.0);
        assert!(sin_f32(f32::INFINITY).is_nan() && cos_f32(f32::NAN).is_nan());
        assert_eq!(sin_f32(0.0), 0.0);
        assert_eq!(cos_f32(0.0), 1.0);
    }
}
