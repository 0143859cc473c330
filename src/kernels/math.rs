//! Elementwise math beyond exp/log/sin/cos/tanh/erf: trig and hyperbolic functions and their
//! inverses, log2/log10/exp2, atan2 and hypot, erfc/erfinv, the gamma family (lgamma, digamma,
//! polygamma) — each for f32 and f64, plus the fused backward kernels of the unary ones.
//!
//! f32 versions of the functions PyTorch vectorises (SLEEF) are branch-free polynomial
//! approximations (Cephes' single-precision ones) so that the elementwise loops vectorise; their
//! measured error bounds are in `tests/native/test_kernel_engine.py`. f64 versions use the
//! vectorisable ones of `vmath64` (tan: the standard library's). The special functions PyTorch
//! itself computes one element at a time (lgamma, digamma, polygamma) are scalar here too.

use super::simd::{exp_f32, exp_reduced, horner, log_f32, odd_series, tan_f32, Real};
use super::vmath64 as vm;
use std::f32::consts as c32;

/// The functions of this module for one float type.
pub trait Math: Real {
    fn tan_(self) -> Self;
    fn atan_(self) -> Self;
    fn asin_(self) -> Self;
    fn acos_(self) -> Self;
    fn sinh_(self) -> Self;
    fn cosh_(self) -> Self;
    fn asinh_(self) -> Self;
    fn acosh_(self) -> Self;
    fn atanh_(self) -> Self;
    fn log2_(self) -> Self;
    fn log10_(self) -> Self;
    fn exp2_(self) -> Self;
    fn expm1_(self) -> Self;
    fn erfc_(self) -> Self;
    fn erfinv_(self) -> Self;
    fn lgamma_(self) -> Self;
    fn digamma_(self) -> Self;
    fn atan2_(self, x: Self) -> Self;
    fn hypot_(self, b: Self) -> Self;
    /// The regularized lower incomplete gamma function P(self, x) (f32 computes in f64).
    fn igamma_(self, x: Self) -> Self;
    /// The regularized upper incomplete gamma function Q(self, x).
    fn igammac_(self, x: Self) -> Self;
    /// C's fmod(self, b), exactly, when |self / b| < 2^27 (or b is 0, infinite or NaN, or self
    /// infinite or NaN), in a form that vectorises (see `fmod_small_f32`); f64 has no such
    /// form and computes `self % b`.
    fn fmod_small(self, b: Self) -> Self;
    /// C's pow(self, e); float32's vectorises (see [`pow_f32`]), float64's calls libm.
    fn pow_(self, e: Self) -> Self;
}

impl Math for f32 {
    #[inline(always)]
    fn tan_(self) -> f32 {
        tan_f32(self)
    }
    #[inline(always)]
    fn atan_(self) -> f32 {
        atan_f32(self)
    }
    #[inline(always)]
    fn asin_(self) -> f32 {
        asin_f32(self)
    }
    #[inline(always)]
    fn acos_(self) -> f32 {
        acos_f32(self)
    }
    #[inline(always)]
    fn sinh_(self) -> f32 {
        sinh_f32(self)
    }
    #[inline(always)]
    fn cosh_(self) -> f32 {
        cosh_f32(self)
    }
    #[inline(always)]
    fn asinh_(self) -> f32 {
        asinh_f32(self)
    }
    #[inline(always)]
    fn acosh_(self) -> f32 {
        acosh_f32(self)
    }
    #[inline(always)]
    fn atanh_(self) -> f32 {
        atanh_f32(self)
    }
    #[inline(always)]
    fn log2_(self) -> f32 {
        log_f32(self) * c32::LOG2_E
    }
    #[inline(always)]
    fn log10_(self) -> f32 {
        log_f32(self) * c32::LOG10_E
    }
    #[inline(always)]
    fn exp2_(self) -> f32 {
        exp2_f32(self)
    }
    #[inline(always)]
    fn expm1_(self) -> f32 {
        super::simd::expm1_f32(self)
    }
    #[inline(always)]
    fn erfc_(self) -> f32 {
        erfc_f32(self)
    }
    #[inline(always)]
    fn erfinv_(self) -> f32 {
        erfinv_f32(self)
    }
    #[inline(always)]
    fn lgamma_(self) -> f32 {
        lgamma_vec(self as f64) as f32
    }
    #[inline(always)]
    fn digamma_(self) -> f32 {
        digamma_vec(self as f64) as f32
    }
    #[inline(always)]
    fn atan2_(self, x: f32) -> f32 {
        atan2_f32(self, x)
    }
    #[inline(always)]
    fn hypot_(self, b: f32) -> f32 {
        // in f64: no overflow or underflow of the squares, one rounding at the end
        let (a, b) = (self as f64, b as f64);
        let h = (a * a + b * b).sqrt() as f32;
        if self.is_infinite() || b.is_infinite() {
            f32::INFINITY
        } else {
            h
        }
    }
    #[inline(always)]
    fn fmod_small(self, b: f32) -> f32 {
        fmod_small_f32(self, b)
    }
    #[inline(always)]
    fn pow_(self, e: f32) -> f32 {
        pow_f32(self, e)
    }
    fn igamma_(self, x: f32) -> f32 {
        super::special::igamma(self as f64, x as f64) as f32
    }
    fn igammac_(self, x: f32) -> f32 {
        super::special::igammac(self as f64, x as f64) as f32
    }
}

impl Math for f64 {
    #[inline(always)]
    fn tan_(self) -> f64 {
        self.tan()
    }
    #[inline(always)]
    fn atan_(self) -> f64 {
        vm::atan_f64(self)
    }
    #[inline(always)]
    fn asin_(self) -> f64 {
        vm::asin_f64(self)
    }
    #[inline(always)]
    fn acos_(self) -> f64 {
        vm::acos_f64(self)
    }
    #[inline(always)]
    fn sinh_(self) -> f64 {
        vm::sinh_f64(self)
    }
    #[inline(always)]
    fn cosh_(self) -> f64 {
        vm::cosh_f64(self)
    }
    #[inline(always)]
    fn asinh_(self) -> f64 {
        vm::asinh_f64(self)
    }
    #[inline(always)]
    fn acosh_(self) -> f64 {
        vm::acosh_f64(self)
    }
    #[inline(always)]
    fn atanh_(self) -> f64 {
        vm::atanh_f64(self)
    }
    #[inline(always)]
    fn log2_(self) -> f64 {
        vm::log2_f64(self)
    }
    #[inline(always)]
    fn log10_(self) -> f64 {
        vm::log10_f64(self)
    }
    #[inline(always)]
    fn exp2_(self) -> f64 {
        vm::exp2_f64(self)
    }
    #[inline(always)]
    fn expm1_(self) -> f64 {
        vm::expm1_f64(self)
    }
    #[inline(always)]
    fn erfc_(self) -> f64 {
        vm::erfc_f64(self)
    }
    #[inline(always)]
    fn erfinv_(self) -> f64 {
        erfinv_f64(self)
    }
    #[inline(always)]
    fn lgamma_(self) -> f64 {
        lgamma_vec(self)
    }
    #[inline(always)]
    fn digamma_(self) -> f64 {
        digamma_vec(self)
    }
    #[inline(always)]
    fn atan2_(self, x: f64) -> f64 {
        vm::atan2_f64(self, x)
    }
    #[inline(always)]
    fn hypot_(self, b: f64) -> f64 {
        self.hypot(b)
    }
    #[inline(always)]
    fn fmod_small(self, b: f64) -> f64 {
        self % b
    }
    #[inline(always)]
    fn pow_(self, e: f64) -> f64 {
        self.powf(e)
    }
    fn igamma_(self, x: f64) -> f64 {
        super::special::igamma(self, x)
    }
    fn igammac_(self, x: f64) -> f64 {
        super::special::igammac(self, x)
    }
}

/// log2(x) for a positive float32 value `x` (exact in f64), within 2^-49 relative, branch-free
/// and without tables or float64 divisions: x = 2^k m with m in [sqrt(1/2), sqrt(2)) (the
/// exponent and mantissa split in the bits, as fdlibm's), log2 m = 2 log2(e) s g(s^2) with
/// s = (m - 1) / (m + 1), 1 / (m + 1) a float32 division refined by two Newton steps, g a
/// degree-6 polynomial fitted to atanh(s) / s over |s| <= 3 - 2 sqrt(2). 0 gives -inf, inf
/// inf, NaN NaN.
#[inline(always)]
#[allow(clippy::excessive_precision)] // the fitted coefficients, as printed
fn log2_for_pow_f32(x: f64) -> f64 {
    const SQRT_HALF_BITS: u64 = 0x3fe6_a09e_667f_3bcd;
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
    let ix = x.to_bits();
    let tmp = ix.wrapping_sub(SQRT_HALF_BITS);
    // k = tmp >> 52 as a signed 12-bit integer, converted through the magic number (AVX2 has
    // neither 64-bit arithmetic shifts nor i64 -> f64 conversions)
    let k_bits = ((tmp >> 52) ^ 0x800).wrapping_sub(0x800);
    let k = f64::from_bits(MAGIC.to_bits().wrapping_add(k_bits)) - MAGIC;
    let m = f64::from_bits(ix.wrapping_sub(tmp & (0xfff << 52)));
    let d = m + 1.0;
    let q = (1.0f32 / d as f32) as f64;
    let q = q.mul_add((-d).mul_add(q, 1.0), q);
    let q = q.mul_add((-d).mul_add(q, 1.0), q);
    let s = (m - 1.0) * q;
    let g = horner(
        s * s,
        [
            8.403_924_119_434_837e-2,
            9.062_297_900_961_57e-2,
            1.111_167_195_357_452_4e-1,
            1.428_570_875_658_794e-1,
            2.000_000_002_471_094_3e-1,
            3.333_333_333_330_345_5e-1,
            9.999_999_999_999_998e-1,
        ],
    );
    let r = (s * (2.0 * std::f64::consts::LOG2_E)).mul_add(g, k);
    if x == 0.0 {
        f64::NEG_INFINITY
    } else if x < f64::INFINITY {
        r
    } else {
        x // inf, NaN
    }
}

/// 2^w for the float64 `w` of a float32 pow, within 2^-50 relative: w = n + f with n an
/// integer and |f| <= 1/2, 2^f a degree-10 polynomial (Chebyshev least squares), 2^n in the
/// exponent bits. w is clamped to [-200, 200], far outside float32's range, so the one
/// rounding to float32 gives 0 or inf there; NaN stays NaN.
#[inline(always)]
#[allow(clippy::excessive_precision)] // the fitted coefficients, as printed
fn exp2_for_pow_f32(w: f64) -> f64 {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52: adding it rounds to an integer
    let wc = w.clamp(-200.0, 200.0);
    let n = (wc + MAGIC) - MAGIC;
    let p = horner(
        wc - n,
        [
            7.045_850_194_831_842e-9,
            1.020_999_386_570_939_4e-7,
            1.321_558_951_245_892_9e-6,
            1.525_265_041_878_852_8e-5,
            1.540_353_015_666_223_3e-4,
            1.333_355_824_207_777_6e-3,
            9.618_129_107_853_54e-3,
            5.550_410_866_437_104e-2,
            2.402_265_069_590_908e-1,
            6.931_471_805_599_515e-1,
            1.000_000_000_000_000_2,
        ],
    );
    p * f64::from_bits((n + (MAGIC + 1023.0)).to_bits() << 52)
}

/// C99's powf(a, b), computed in float64 as 2^(b log2 |a|) (`log2_for_pow_f32`,
/// `exp2_for_pow_f32`: the float64 result is within 2^-42 relative for every float32 result,
/// normal or subnormal, so the one rounding to float32 is correct but for results within
/// 2^-18 ulp of a midpoint), and C99's special cases as selects, so that it vectorises: a^0 = 1
/// and 1^b = 1 (NaN included), (-1)^(+-inf) = 1, a negative finite base to a non-integer power
/// is NaN, a negative base (or -0) to an odd integer power keeps its sign.
#[inline(always)]
pub fn pow_f32(a: f32, b: f32) -> f32 {
    let (x, y) = (a as f64, b as f64);
    let r = exp2_for_pow_f32(y * log2_for_pow_f32(x.abs()));
    let int = y == y.floor(); // true for +-inf as well
    let half = y * 0.5;
    let odd = int && half != half.floor(); // float32 integers beyond 2^24 are even
    let r = if a.is_sign_negative() && odd { -r } else { r };
    let r = if a < 0.0 && a > f32::NEG_INFINITY && !int {
        f64::NAN
    } else {
        r
    };
    let one = b == 0.0 || a == 1.0 || (a == -1.0 && b.is_infinite());
    if one {
        1.0
    } else {
        r as f32
    }
}

// ---- f32 approximations (Cephes' single-precision routines, branches turned into selects) ----

/// atan on [0, tan(pi/8)] after Cephes' reduction.
#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
fn atan_poly(x: f32) -> f32 {
    odd_series(
        x,
        [
            8.053_744_495_38e-2,
            -1.387_768_560_32e-1,
            1.997_771_064_78e-1,
            -3.333_294_915_39e-1,
        ],
    )
}

#[inline(always)]
pub fn atan_f32(x: f32) -> f32 {
    let a = x.abs();
    let big = a > 2.414_213_5; // tan(3 pi / 8)
    let mid = a > 0.414_213_57; // tan(pi / 8)
    let r = if big {
        -1.0 / a
    } else if mid {
        (a - 1.0) / (a + 1.0)
    } else {
        a
    };
    let base = if big {
        c32::FRAC_PI_2
    } else if mid {
        c32::FRAC_PI_4
    } else {
        0.0
    };
    (base + atan_poly(r)).copysign(x)
}

/// atan2 from atan of a ratio in [0, 1], then the octant: exact special cases for zeros and
/// infinities (atan2(+-0, -0) = +-pi, atan2(inf, inf) = pi/4, ...), NaN in, NaN out.
#[inline(always)]
pub fn atan2_f32(y: f32, x: f32) -> f32 {
    let (a, b) = (y.abs(), x.abs());
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    let t = if hi == 0.0 {
        0.0
    } else if a == b {
        1.0
    } else {
        lo / hi
    };
    let r = atan_f32(t);
    let r = if a > b { c32::FRAC_PI_2 - r } else { r };
    let r = if x.is_sign_negative() { c32::PI - r } else { r };
    r.copysign(y)
}

/// asin on [0, 0.5].
#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
fn asin_poly(a: f32) -> f32 {
    odd_series(
        a,
        [
            4.216_319_904_8e-2,
            2.418_131_104_9e-2,
            4.547_002_599_8e-2,
            7.495_300_268_6e-2,
            1.666_675_242_2e-1,
        ],
    )
}

#[inline(always)]
pub fn asin_f32(x: f32) -> f32 {
    let a = x.abs();
    let big = a > 0.5;
    let p = asin_poly(if big { (0.5 * (1.0 - a)).sqrt() } else { a });
    let r = if big { c32::FRAC_PI_2 - 2.0 * p } else { p };
    r.copysign(x) // |x| > 1: the sqrt gave NaN
}

#[inline(always)]
pub fn acos_f32(x: f32) -> f32 {
    let a = x.abs();
    let big = a > 0.5;
    let p = asin_poly(if big { (0.5 * (1.0 - a)).sqrt() } else { a });
    if big {
        if x > 0.0 {
            2.0 * p
        } else {
            c32::PI - 2.0 * p
        }
    } else {
        c32::FRAC_PI_2 - p.copysign(x)
    }
}

/// e^|x| / 2 without overflowing before the result does (up to |x| ~ 89.4).
#[inline(always)]
fn half_exp(a: f32) -> f32 {
    let h = exp_f32(0.5 * a);
    (0.5 * h) * h
}

#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
pub fn sinh_f32(x: f32) -> f32 {
    let a = x.abs();
    let z = x * x;
    let small = (horner(
        z,
        [
            2.037_219_129_45e-4,
            8.330_283_762_39e-3,
            1.666_671_602_11e-1,
        ],
    ) * z)
        .mul_add(x, x);
    let e = exp_f32(a);
    let big = if a > 88.0 {
        half_exp(a)
    } else {
        0.5 * e - 0.5 / e
    };
    if a > 1.0 {
        big.copysign(x)
    } else {
        small
    }
}

#[inline(always)]
pub fn cosh_f32(x: f32) -> f32 {
    let a = x.abs();
    let e = exp_f32(a);
    if a > 88.0 {
        half_exp(a)
    } else {
        0.5 * e + 0.5 / e
    }
}

#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
pub fn asinh_f32(x: f32) -> f32 {
    let a = x.abs();
    let z = a * a;
    let p = horner(
        z,
        [
            2.012_200_330_9e-2,
            -4.269_934_097_2e-2,
            7.484_758_608_8e-2,
            -1.666_628_813_4e-1,
        ],
    );
    let small = (p * z).mul_add(a, a);
    let large = log_f32(a) + c32::LN_2;
    let mid = log_f32(a + (z + 1.0).sqrt());
    let r = if a > 1500.0 {
        large
    } else if a < 0.5 {
        small
    } else {
        mid
    };
    r.copysign(x)
}

#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
pub fn acosh_f32(x: f32) -> f32 {
    let z = x - 1.0;
    let small = horner(
        z,
        [
            1.759_688_107_1e-3,
            -7.527_288_671_3e-3,
            2.645_490_501_9e-2,
            -1.178_474_170_3e-1,
            1.414_213_526_3,
        ],
    ) * z.sqrt();
    let large = log_f32(x) + c32::LN_2;
    let mid = log_f32(x + (z * (x + 1.0)).sqrt());
    if x < 1.0 {
        f32::NAN
    } else if x > 1500.0 {
        large
    } else if z < 0.5 {
        small
    } else {
        mid
    }
}

#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
pub fn atanh_f32(x: f32) -> f32 {
    let a = x.abs();
    let z = x * x;
    let p = horner(
        z,
        [
            1.817_400_783_49e-1,
            8.243_703_010_58e-2,
            1.466_914_317_30e-1,
            1.997_821_645_00e-1,
            3.333_373_003_03e-1,
        ],
    );
    let small = (p * z).mul_add(x, x);
    let large = 0.5 * log_f32((1.0 + x) / (1.0 - x));
    if a < 0.5 {
        small
    } else {
        large
    }
}

/// 2^x: 2^n for the nearest integer n times 2^r = e^(r ln 2) with |r| <= 1/2 (exact reduction).
#[inline(always)]
pub fn exp2_f32(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
    let xc = x.clamp(-151.0, 129.0);
    let shifted = xc + MAGIC;
    let n = shifted - MAGIC;
    let ni = (shifted.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let y = exp_f32((xc - n) * c32::LN_2);
    let n1 = ni >> 1;
    let n2 = ni - n1;
    let s1 = f32::from_bits(((n1 + 127).clamp(1, 254) as u32) << 23);
    let s2 = f32::from_bits(((n2 + 127).clamp(1, 254) as u32) << 23);
    let r = y * s1 * s2;
    if x < -150.0 {
        0.0
    } else if x > 128.0 {
        f32::INFINITY
    } else {
        r
    }
}

/// erfinv for f32: Giles' single-precision approximation ("Approximating the erfinv function",
/// GPU Computing Gems, 2011), a polynomial in w = -log(1 - x^2) on each side of w = 5, both
/// evaluated and one selected; measured within 2.2 ulp. erfinv(+-1) = +-inf, NaN outside [-1, 1].
#[inline(always)]
#[allow(clippy::excessive_precision)] // Giles' coefficients, as published
pub fn erfinv_f32(x: f32) -> f32 {
    let w = -log_f32((1.0 - x) * (1.0 + x));
    let c = w - 2.5;
    let central = horner(
        c,
        [
            2.810_226_36e-08,
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            2.185_808_7e-4,
            -1.253_725_03e-3,
            -4.177_681_64e-3,
            2.466_407_27e-1,
            1.501_409_41,
        ],
    );
    let t = w.sqrt() - 3.0;
    let tail = horner(
        t,
        [
            -2.002_142_57e-4,
            1.009_505_58e-4,
            1.349_343_22e-3,
            -3.673_428_44e-3,
            5.739_507_73e-3,
            -7.622_461_3e-3,
            9.438_870_47e-3,
            1.001_674_06,
            2.832_976_82,
        ],
    );
    let r = if w < 5.0 { central } else { tail } * x;
    if x.abs() == 1.0 {
        f32::INFINITY.copysign(x)
    } else {
        r
    }
}

/// erfcx(x) = exp(x^2) erfc(x) for 0 <= x <= 10.1, in f32: t q(u) with t = 2 / (2 + x), q a
/// degree-10 polynomial in t mapped onto u in [-1, 1] (Chebyshev least squares, within 0.1
/// ulp). t carries its rounding error as t0 + c (2 + x split exactly by Fast2Sum, c from the
/// division's residual), so that neither the sum nor the division adds its ulp to the result.
#[inline(always)]
#[allow(clippy::excessive_precision)] // the fitted coefficients, as printed
fn erfcx_small_f32(x: f32) -> f32 {
    let d = 2.0 + x;
    let de = x.min(2.0) - (d - x.max(2.0)); // 2 + x = d + de exactly
    let t0 = 2.0 / d;
    let c = ((-t0).mul_add(d, 2.0) - t0 * de) * t0 * 0.5; // 2 / (d + de) = t0 + c
                                                          // t in [2 / 12.1, 1] mapped onto u in [-1, 1]
    const A: f32 = 2.396_039_485_931_396_5;
    let u = t0.mul_add(A, c.mul_add(A, -1.396_039_605_140_686));
    let q = horner(
        u,
        [
            5.194_138_793_740_421_5e-6,
            6.589_116_765_098_879e-6,
            -6.671_767_914_667_726e-5,
            5.846_799_012_942_938e-6,
            6.018_204_148_858_786e-4,
            -6.309_217_424_131_93e-4,
            -6.189_696_956_425_905e-3,
            6.033_353_041_857_481e-3,
            1.023_375_764_489_173_9e-1,
            3.264_239_132_404_327_4e-1,
            5.714_730_620_384_216e-1,
        ],
    );
    t0.mul_add(q, c * q)
}

/// erfc for f32, branch-free and in f32 (16 lanes per AVX-512 vector): for x >= 0,
/// erfc(x) = erfcx(x) exp(-x^2) (`erfcx_small_f32`), with x^2 = s + e split exactly by an FMA
/// and exp(-s) = 2^n (1 + m) from exp_f32's reduction: (1 + m)(1 - e) = 1 + (m - e - e m), so
/// that the product is one FMA. erfc(-x) = 2 - erfc(x). Within 2.0 ulp, measured on every
/// float32 in [-10.2, 10.2] (SLEEF's erfcf, PyTorch's, is within 1.5). Subnormal results round
/// once (the last factor 2^n2). 0 beyond 10.1, where erfc is below f32's least subnormal;
/// below 2^-12, 1 - 2x / sqrt(pi) (so that erfc(0) = 1).
#[inline(always)]
pub fn erfc_f32(x: f32) -> f32 {
    let ax = x.abs().min(10.1); // (NaN becomes 10.1 here: restored below)
    let erfcx = erfcx_small_f32(ax);
    let s = ax * ax;
    let e = ax.mul_add(ax, -s); // ax^2 = s + e exactly
    let (m, s1, s2, _) = exp_reduced(-s);
    let r = erfcx.mul_add((-e).mul_add(m, m - e), erfcx) * s1 * s2;
    let r = if x < 0.0 { 2.0 - r } else { r };
    if x.is_nan() {
        x
    } else if ax >= 10.1 && x > 0.0 {
        0.0
    } else if ax < 1.0 / 4096.0 {
        // 1 - 2x / sqrt(pi), whose next term is below 2^-36: exactly 1 at 0
        (-std::f32::consts::FRAC_2_SQRT_PI).mul_add(x, 1.0)
    } else {
        r
    }
}

/// fmod for f32 operands whose quotient |a / b| is below 2^27, exact and branch-free, in f64:
/// the rounded a / b truncates to the true integer quotient q (a non-integer quotient is at
/// least 2^-24 from an integer, far more than the division's rounding error below 2^-26), q b
/// is exact (27 + 24 bits), and a - q b is exact (a multiple of the smaller operand's last
/// place, smaller than |b|). A zero result takes a's sign, as fmod's; b = 0, a infinite or
/// either NaN give NaN through the arithmetic, b infinite gives a. Larger quotients need
/// `a % b` (callers check, see `ops::binary`).
#[inline(always)]
pub fn fmod_small_f32(a: f32, b: f32) -> f32 {
    let (ad, bd) = (a as f64, b as f64);
    let q = (ad / bd).trunc();
    let r = ad - q * bd;
    let r = if r == 0.0 { 0.0f64.copysign(ad) } else { r };
    if bd.is_infinite() && ad.is_finite() {
        a
    } else {
        r as f32
    }
}

// ---- f64 special functions (PyTorch's algorithms in ATen's Math.h) ----

/// psi(10), where digamma's recurrence lands exactly (PyTorch's constant).
const PSI_10: f64 = 2.251_752_589_066_721;

/// digamma's asymptotic series in 1/x^2, highest power first (PyTorch's coefficients).
const DIGAMMA_SERIES: [f64; 7] = [
    8.333_333_333_333_333e-2,
    -2.109_279_609_279_609_3e-2,
    7.575_757_575_757_576e-3,
    -4.166_666_666_666_667e-3,
    3.968_253_968_253_968e-3,
    -8.333_333_333_333_333e-3,
    8.333_333_333_333_333e-2,
];

/// digamma (psi): reflection below 0, the recurrence up to 10, then the asymptotic series.
/// psi(0) = -inf with the sign flipped for -0 (PyTorch's), negative integers give NaN.
pub fn digamma_f64(x: f64) -> f64 {
    if x == 0.0 {
        return f64::INFINITY.copysign(-x);
    }
    if x < 0.0 {
        if x == x.trunc() {
            return f64::NAN;
        }
        // psi(1 - x) - pi / tan(pi x), with x's fractional part for accuracy
        let r = x.fract();
        return digamma_f64(1.0 - x) - std::f64::consts::PI / (std::f64::consts::PI * r).tan();
    }
    let mut x = x;
    let mut result = 0.0;
    while x < 10.0 {
        result -= 1.0 / x;
        x += 1.0;
    }
    if x == 10.0 {
        return result + PSI_10;
    }
    let y = if x < 1e17 {
        let z = 1.0 / (x * x);
        z * DIGAMMA_SERIES.iter().fold(0.0, |acc, &a| acc * z + a)
    } else {
        0.0
    };
    result + x.ln() - 0.5 / x - y
}

/// digamma as [`digamma_f64`] computes it, branch-free so that it vectorises: below 10 the
/// recurrence always takes ten steps (to [10, 20)), its reciprocals summed as 1/x and three
/// groups of three fractions (one division per group); the asymptotic series; the
/// reflection psi(1 - x) - pi / tan(pi frac(x)) below 0, all selected per element.
#[inline(always)]
pub fn digamma_vec(x: f64) -> f64 {
    use std::f64::consts::PI;
    let neg = x < 0.0;
    let a = if neg { 1.0 - x } else { x };
    // 1/t1 + 1/t2 + 1/t3 as one fraction (all terms positive: no cancellation)
    let group = |t1: f64, t2: f64, t3: f64| {
        let p = t1 * t2;
        (t1 + t2).mul_add(t3, p) / (p * t3)
    };
    let shift = a < 10.0;
    let s = 1.0 / a
        + (group(a + 1.0, a + 2.0, a + 3.0)
            + group(a + 4.0, a + 5.0, a + 6.0)
            + group(a + 7.0, a + 8.0, a + 9.0));
    let (xs, sum) = if shift { (a + 10.0, s) } else { (a, 0.0) };
    let ir = 1.0 / xs;
    let z = ir * ir;
    let y = z * horner(z, DIGAMMA_SERIES);
    let psi = vm::log_f64(xs) - 0.5 * ir - y - sum;
    let psi = if xs == 10.0 { PSI_10 - sum } else { psi };
    let r = x - x.trunc();
    let refl = psi - PI / vm::tan_f64(PI * r);
    let v = if neg { refl } else { psi };
    let v = if neg && x == x.trunc() { f64::NAN } else { v };
    if x == 0.0 {
        f64::INFINITY.copysign(-x)
    } else {
        v
    }
}

/// log|gamma(x)|, branch-free so that it vectorises (Cephes' `lgam` for x > 0, the
/// reflection log(pi / |sin(pi x)|) - lgamma(1 - x) below 0): below 13 the argument is moved
/// into [2, 3) by a fixed number of selected steps (ten down, two up, the product of the
/// steps kept as a fraction) and lgamma(2 + p) = p B(p) / C(p) added to the log of the
/// product; from 13 Stirling's series. About 1-2 ulp of the result's magnitude (of 1 where it
/// is below 1; relative near the roots at 1 and 2, exactly 0 there); the float32 results
/// are correctly rounded but for ties.
#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
pub fn lgamma_vec(x: f64) -> f64 {
    const B: [f64; 6] = [
        -1.378_251_525_691_208_591_00e3,
        -3.880_163_151_346_378_409_24e4,
        -3.316_129_927_388_711_847_44e5,
        -1.162_370_974_927_623_073_83e6,
        -1.721_737_008_208_396_621_46e6,
        -8.535_556_642_457_654_656_27e5,
    ];
    const C: [f64; 7] = [
        1.0,
        -3.518_157_014_365_234_705_49e2,
        -1.706_421_066_518_811_592_23e4,
        -2.205_285_905_538_544_548_39e5,
        -1.139_334_443_679_825_072_07e6,
        -2.532_523_071_775_829_512_85e6,
        -2.018_891_414_335_327_732_31e6,
    ];
    // Stirling's correction sum_k A_k / a^(2k-1) as poly(a^2) / (a^8 a), lowest power last
    const A: [f64; 5] = [
        8.333_333_333_333_319_277_22e-2,
        -2.777_777_777_300_996_872_05e-3,
        7.936_503_404_577_169_439_45e-4,
        -5.950_619_042_843_014_383_24e-4,
        8.116_141_674_705_084_503_00e-4,
    ];
    const LS2PI: f64 = 0.918_938_533_204_672_741_78; // log(sqrt(2 pi))
    const LOGPI: f64 = 1.144_729_885_849_400_174_14;
    let neg = x < 0.0;
    let a = if neg { 1.0 - x } else { x };
    let (mut y, mut z, mut zd) = (a, 1.0, 1.0);
    for _ in 0..10 {
        let down = y >= 3.0;
        y = if down { y - 1.0 } else { y };
        z = if down { z * y } else { z };
    }
    for _ in 0..2 {
        let up = y < 2.0;
        zd = if up { zd * y } else { zd };
        y = if up { y + 1.0 } else { y };
    }
    let p = y - 2.0;
    let big = a >= 13.0;
    // lgamma(x) = -log|x| - 0.577 x: the second term is below an ulp (and pi x of a
    // subnormal x in the reflection would lose digits)
    let tiny = x.abs() < 1e-17;
    let l = vm::log_f64(if tiny {
        x.abs()
    } else if big {
        a
    } else {
        z / zd
    });
    // one division serves the rational of [2, 3) and Stirling's correction
    let ac = a.min(1e8); // beyond, the correction is below an ulp of the result
    let t = ac * ac;
    let t2 = t * t;
    let num = if big { horner(t, A) } else { p * horner(p, B) };
    let den = if big { t2 * t2 * ac } else { horner(p, C) };
    let frac = num / den;
    let stirling = (a - 0.5).mul_add(l, LS2PI - a) + frac;
    let pos = if big {
        stirling
    } else if tiny {
        -l
    } else {
        l + frac
    };
    let pos = if a == f64::INFINITY { a } else { pos };
    // the reflection: |sin(pi x)| from x's distance r to the nearest integer (exact), as
    // sin(pi r) or cos(pi (1/2 - r)) on [0, pi/4] (no further reduction needed)
    let r = (x - x.round()).abs();
    let near = r <= 0.25;
    let arg = std::f64::consts::PI * if near { r } else { 0.5 - r };
    let s = if near {
        vm::k_sin(arg, 0.0)
    } else {
        vm::k_cos(arg, 0.0)
    };
    let refl = LOGPI - vm::log_f64(s) - pos;
    let v = if neg && !tiny { refl } else { pos };
    if x <= 0.0 && x == x.floor() {
        f64::INFINITY // the poles, and -inf
    } else {
        v
    }
}

/// The Hurwitz zeta function zeta(s, q) = sum_k (k + q)^-s (Cephes' `zeta`, as PyTorch's):
/// the first terms directly, the rest by Euler-Maclaurin.
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
pub fn zeta_f64(s: f64, q: f64) -> f64 {
    const MACHEP: f64 = 1.110_223_024_625_156_54e-16;
    const A: [f64; 12] = [
        12.0,
        -720.0,
        30240.0,
        -1_209_600.0,
        47_900_160.0,
        -1.892_437_580_318_379_160_6e9,
        7.472_424_96e10,
        -2.950_130_727_918_164_224e12,
        1.164_678_281_435_006_724_9e14,
        -4.597_978_722_407_472_610_5e15,
        1.815_210_540_194_354_677_3e17,
        -7.166_165_256_175_667_011_3e18,
    ];
    if s == 1.0 {
        return f64::INFINITY;
    }
    if s < 1.0 {
        return f64::NAN;
    }
    if q <= 0.0 {
        if q == q.floor() {
            return f64::INFINITY;
        }
        if s != s.floor() {
            return f64::NAN; // q^-s is not defined
        }
    }
    let mut sum = q.powf(-s);
    let mut a = q;
    let mut b = 0.0;
    let mut i = 0;
    while i < 9 || a <= 9.0 {
        i += 1;
        a += 1.0;
        b = a.powf(-s);
        sum += b;
        if -MACHEP * sum < b && b < MACHEP * sum {
            return sum;
        }
    }
    let w = a;
    sum += b * w / (s - 1.0);
    sum -= 0.5 * b;
    let mut a = 1.0;
    let mut k = 0.0;
    for coef in A {
        a *= s + k;
        b /= w;
        let t = a * b / coef;
        sum += t;
        if (t / sum).abs() < MACHEP {
            break;
        }
        k += 1.0;
        a *= s + k;
        b /= w;
        k += 1.0;
    }
    sum
}

/// trigamma, psi'(x) (PyTorch's `calc_trigamma`: reflection below 1/2, six recurrence steps,
/// then the asymptotic series).
pub fn trigamma_f64(x: f64) -> f64 {
    use std::f64::consts::PI;
    let (mut x, mut sign, mut result) = (x, 1.0, 0.0);
    if x < 0.5 {
        sign = -1.0;
        let s = (PI * x).sin();
        result -= PI * PI / (s * s);
        x = 1.0 - x;
    }
    for _ in 0..6 {
        result += 1.0 / (x * x);
        x += 1.0;
    }
    let ixx = 1.0 / (x * x);
    result +=
        (1.0 + 1.0 / (2.0 * x) + ixx * (1.0 / 6.0 - ixx * (1.0 / 30.0 - ixx * (1.0 / 42.0)))) / x;
    sign * result
}

/// polygamma(n, x), the n-th derivative of digamma: digamma, trigamma, then
/// (-1)^(n+1) n! zeta(n + 1, x), as PyTorch computes it.
pub fn polygamma_f64(n: u32, x: f64) -> f64 {
    match n {
        0 => digamma_vec(x),
        1 => trigamma_f64(x),
        _ => {
            let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
            sign * libm::lgamma(n as f64 + 1.0).exp() * zeta_f64(n as f64 + 1.0, x)
        }
    }
}

/// erfinv: Giles' single-precision approximation as a start, then two Newton steps on erf
/// (PyTorch's float64 algorithm refines the same way). erfinv(+-1) = +-inf, |x| > 1: NaN.
pub fn erfinv_f64(x: f64) -> f64 {
    if x.is_nan() || !(-1.0..=1.0).contains(&x) {
        return f64::NAN;
    }
    if x == 1.0 || x == -1.0 {
        return f64::INFINITY.copysign(x);
    }
    let w = -((1.0 - x) * (1.0 + x)).ln();
    let mut r = if w < 5.0 {
        let w = w - 2.5;
        let mut p = 2.810_226_36e-08;
        for c in [
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ] {
            p = c + p * w;
        }
        p * x
    } else {
        let w = w.sqrt() - 3.0;
        let mut p = -0.000_200_214_257;
        for c in [
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ] {
            p = c + p * w;
        }
        p * x
    };
    // Newton on erf(r) = x: r -= (erf(r) - x) / (2/sqrt(pi) exp(-r^2))
    for _ in 0..2 {
        let err = libm::erf(r) - x;
        r -= err / (std::f64::consts::FRAC_2_SQRT_PI * (-r * r).exp());
    }
    r
}

// ---- fused backward kernels: d input from the incoming gradient `g` and the saved input `x`
// (or output `y`), one pass each ----

#[inline(always)]
pub fn tan_grad<R: Math>(g: R, y: R) -> R {
    g * (R::c(1.0) + y * y)
}

#[inline(always)]
pub fn atan_grad<R: Math>(g: R, x: R) -> R {
    g / (R::c(1.0) + x * x)
}

#[inline(always)]
pub fn asin_grad<R: Math>(g: R, x: R) -> R {
    g / (R::c(1.0) - x * x).sqrt()
}

#[inline(always)]
pub fn acos_grad<R: Math>(g: R, x: R) -> R {
    -(g / (R::c(1.0) - x * x).sqrt())
}

#[inline(always)]
pub fn sinh_grad<R: Math>(g: R, x: R) -> R {
    g * x.cosh_()
}

#[inline(always)]
pub fn cosh_grad<R: Math>(g: R, x: R) -> R {
    g * x.sinh_()
}

#[inline(always)]
pub fn asinh_grad<R: Math>(g: R, x: R) -> R {
    g / (x * x + R::c(1.0)).sqrt()
}

#[inline(always)]
pub fn acosh_grad<R: Math>(g: R, x: R) -> R {
    g / (x * x - R::c(1.0)).sqrt()
}

#[inline(always)]
pub fn atanh_grad<R: Math>(g: R, x: R) -> R {
    g / (R::c(1.0) - x * x)
}

#[inline(always)]
pub fn log2_grad<R: Math>(g: R, x: R) -> R {
    g / (x * R::c(std::f64::consts::LN_2))
}

#[inline(always)]
pub fn log10_grad<R: Math>(g: R, x: R) -> R {
    g / (x * R::c(std::f64::consts::LN_10))
}

#[inline(always)]
pub fn exp2_grad<R: Math>(g: R, y: R) -> R {
    g * y * R::c(std::f64::consts::LN_2)
}

#[inline(always)]
pub fn expm1_grad<R: Math>(g: R, y: R) -> R {
    g * (y + R::c(1.0))
}

/// sin(pi x) / (pi x), 1 at 0: PyTorch's sinc kernel, in the argument's precision.
#[inline(always)]
pub fn sinc<R: Math>(x: R) -> R {
    let p = x * R::c(std::f64::consts::PI);
    let r = p.sin() / p;
    if x == R::c(0.0) {
        R::c(1.0)
    } else {
        r
    }
}

/// d sinc(x) = (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at 0 (PyTorch's formula, masked).
#[inline(always)]
pub fn sinc_grad<R: Math>(g: R, x: R) -> R {
    let p = x * R::c(std::f64::consts::PI);
    let d = g * ((p * p.cos() - p.sin()) / (p * x));
    if x == R::c(0.0) {
        R::c(0.0)
    } else {
        d
    }
}

#[inline(always)]
pub fn erfc_grad<R: Math>(g: R, x: R) -> R {
    -(g * R::c(std::f64::consts::FRAC_2_SQRT_PI) * (-(x * x)).exp())
}

/// d erfinv(x) = sqrt(pi) / 2 exp(erfinv(x)^2), from the saved output.
#[inline(always)]
pub fn erfinv_grad<R: Math>(g: R, y: R) -> R {
    g * R::c(0.886_226_925_452_758) * (y * y).exp()
}

#[inline(always)]
pub fn lgamma_grad<R: Math>(g: R, x: R) -> R {
    g * x.digamma_()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// |a - b| in units of max(|b|, 1) * eps.
    fn err(a: f64, b: f64) -> f64 {
        (a - b).abs() / (b.abs().max(1.0) * f64::EPSILON)
    }

    /// erfc_f32 through the engine's vectorised loop, on every 61st float32 of [-10.2, 10.2]
    /// (its stated 2.0 ulp bound was measured on all of them), against libm's float64 erfc.
    #[test]
    fn erfc_f32_is_within_two_ulp() {
        use crate::kernels::elementwise::{run1, Block};
        let top = 10.2f32.to_bits();
        let xs: Vec<f32> = (0..=top)
            .step_by(61)
            .flat_map(|b| [f32::from_bits(b), -f32::from_bits(b)])
            .collect();
        let mut out = vec![std::mem::MaybeUninit::<f32>::uninit(); xs.len()];
        run1(&xs, &Block::line(xs.len()), &mut out, &|x: f32| erfc_f32(x));
        let mut worst = (0.0f64, 0.0f32);
        for (&x, o) in xs.iter().zip(&out) {
            // SAFETY: run1 wrote every element of `out`.
            let got = unsafe { o.assume_init() } as f64;
            let want = libm::erfc(x as f64);
            let ulp =
                ((want as f32).abs() as f64).max(f32::MIN_POSITIVE as f64) * f32::EPSILON as f64;
            let e = (got - want).abs() / ulp;
            if e > worst.0 {
                worst = (e, x);
            }
        }
        assert!(worst.0 <= 2.0, "erfc_f32: {} ulp at {}", worst.0, worst.1);
        assert_eq!(erfc_f32(f32::INFINITY), 0.0);
        assert_eq!(erfc_f32(f32::NEG_INFINITY), 2.0);
        assert!(erfc_f32(f32::NAN).is_nan());
        assert_eq!(erfc_f32(0.0), 1.0);
    }

    #[test]
    fn branch_free_gamma_functions() {
        let mut worst = (0.0f64, 0.0f64);
        let mut x = 1e-300f64;
        while x < 1e300 {
            for v in [x, -x, x.fract() + 0.25, -(x.fract() + 0.25), x % 40.0] {
                if v <= 0.0 && v == v.floor() {
                    continue;
                }
                let (a, b) = (lgamma_vec(v), libm::lgamma(v));
                if b.is_finite() {
                    worst.0 = worst.0.max(err(a, b));
                } else {
                    assert_eq!(a, b, "lgamma({v})");
                }
                let (a, b) = (digamma_vec(v), digamma_f64(v));
                if b.is_finite() {
                    worst.1 = worst.1.max(err(a, b));
                } else {
                    assert_eq!(a.to_bits(), b.to_bits(), "digamma({v})");
                }
            }
            x *= 1.0113;
        }
        // digamma: within 8 units of max(|b|, 1) * eps of the scalar routine (7.5 measured;
        // the Python test holds the same bound against PyTorch)
        assert!(worst.0 < 6.0 && worst.1 < 8.0, "{worst:?}");
        // exact values and the special cases
        assert_eq!((lgamma_vec(1.0), lgamma_vec(2.0)), (0.0, 0.0));
        for v in [
            0.0,
            -0.0,
            -1.0,
            -2.0,
            -1e20,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(lgamma_vec(v), f64::INFINITY, "lgamma({v})");
        }
        assert!(lgamma_vec(f64::NAN).is_nan() && digamma_vec(f64::NAN).is_nan());
        assert_eq!(digamma_vec(0.0), f64::NEG_INFINITY);
        assert_eq!(digamma_vec(-0.0), f64::INFINITY);
        assert!(digamma_vec(-3.0).is_nan() && digamma_vec(f64::NEG_INFINITY).is_nan());
        assert_eq!(digamma_vec(10.0), 2.251_752_589_066_721);
        assert_eq!(digamma_vec(f64::INFINITY), f64::INFINITY);
    }
}
