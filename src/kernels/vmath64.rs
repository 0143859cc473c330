//! Vectorisable float64 transcendentals: the f64 counterparts of the f32 functions in
//! `simd.rs` and `math.rs`.
//!
//! Each function is `#[inline(always)]` and branch-free: every case is computed and the
//! result picked with selects (`if c { a } else { b }` on values), there are no loops with a
//! data-dependent trip count, no table lookups and no calls to libm / std transcendentals, so
//! that a loop over a slice compiled with `#[target_feature(enable = "avx2,fma")]` (see
//! `simd::map`) becomes SIMD code. Integers are rounded and extracted with the 1.5 * 2^52
//! magic number (AVX2 has no f64 <-> i64 conversions), powers of two are built in the
//! exponent bits with 64-bit shifts. No operation is contracted into an FMA (Rust does not
//! contract), so the scalar and the vector code give bit-identical results.
//!
//! The algorithms are fdlibm's (Sun, via musl / the `libm` crate: the same polynomials and
//! rational approximations, rewritten as selects), except the argument reduction of
//! sin / cos / tan (5 exact 21-bit pieces of pi/2 in double-double, Cody-Waite style), exp2
//! (a Dekker product for x ln 2 instead of fdlibm's table), and the Taylor series of sinh,
//! cosh and tanh near 0.
//!
//! Accuracy: max error measured against mpmath (160-bit) on 60K-120K points per function
//! (`dump_for_mpmath` below and `benches/vmath64_check.py`), in ulps of the exact result:
//!
//! | function | max ulp | | function | max ulp | | function | max ulp |
//! |----------|---------|-|----------|---------|-|----------|---------|
//! | exp      | 0.85    | | sin      | 0.72    | | atan     | 0.74    |
//! | exp2     | 0.84    | | cos      | 0.76    | | asin     | 0.82    |
//! | expm1    | 0.78    | | tan      | 0.75    | | acos     | 0.86    |
//! | log      | 0.78    | | tanh     | 1.39    | | atan2    | 0.77    |
//! | log1p    | 0.74    | | sinh     | 1.52    | | asinh    | 1.50    |
//! | log2     | 0.74    | | cosh     | 1.22    | | acosh    | 1.76    |
//! | log10    | 0.66    | | sigmoid  | 1.62    | | atanh    | 1.37    |
//! | erf      | 0.89    | | erfc     | 1.94    | |          |         |
//!
//! so the stated bounds: 1 ulp for the first column, sin, cos, tan, atan, asin, acos, atan2
//! (1.5 for |y| < 1e-289) and erf; 1.5 ulp for tanh and atanh; 2 ulp for sinh, cosh,
//! sigmoid, asinh, acosh and erfc (fdlibm's own bounds for those are 1.6 - 2 ulp). The
//! unit tests check them against the system libm, with the libm's own error added.
//!
//! sin / cos / tan keep their bound for |x| <= 6.7e9 (`TRIG_MAX`); beyond, they are finite
//! and in range (sin, cos in [-1, 1]) but not accurate (PyTorch's SLEEF reduces every x).
//! Subnormal results are computed, not flushed (within the bounds, in units of the
//! subnormal spacing). NaN propagates; infinities and signed zeros follow C99 Annex F.
//!
//! Over slices they run in the elementwise engine (`kernels::elementwise`), called through
//! zero-sized kernel types whose `call` is `#[inline(always)]` (see its `Map1`): a closure
//! calling one of the larger functions is inlined into at most one of the engine's loops.

// the constants are written as published (fdlibm's with their 21 digits)
#![allow(clippy::excessive_precision)]

const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52: adding it rounds to an integer
const MAGIC_BITS: u64 = 0x4338_0000_0000_0000;

/// Rounds to the nearest integer (ties to even), for |x| < 2^51.
#[inline(always)]
fn rint(x: f64) -> f64 {
    (x + MAGIC) - MAGIC
}

/// 2^n for an integer-valued n in [-1022, 1023], built in the exponent bits.
#[inline(always)]
fn pow2i(n: f64) -> f64 {
    // the low bits of n + 1023 + 1.5 * 2^52 hold n + 1023; the shift drops the rest
    f64::from_bits((n + (MAGIC + 1023.0)).to_bits() << 52)
}

/// y * 2^n for an integer-valued n in [-2044, 2046], in two steps so that the intermediate
/// stays normal: a subnormal result is rounded once.
#[inline(always)]
fn ldexp_k(y: f64, n: f64) -> f64 {
    let n1 = rint(n * 0.5);
    let n2 = n - n1;
    y * pow2i(n1) * pow2i(n2)
}

/// The float with the low 32 bits of its significand cleared.
#[inline(always)]
fn hi_word(x: f64) -> f64 {
    f64::from_bits(x.to_bits() & 0xFFFF_FFFF_0000_0000)
}

/// The float with its low 27 significand bits cleared (26 bits left: the products of two
/// such halves are exact).
#[inline(always)]
fn split_hi(x: f64) -> f64 {
    f64::from_bits(x.to_bits() & 0xFFFF_FFFF_F800_0000)
}

/// s + e = a + b exactly (Knuth's TwoSum).
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// c[0] + c[1] z + c[2] z^2 + ..., as even and odd halves in z^2 (two independent Horner
/// chains: half the latency of one).
#[inline(always)]
fn poly_split<const N: usize>(z: f64, c: &[f64; N]) -> f64 {
    let z2 = z * z;
    let mut even = 0.0;
    let mut odd = 0.0;
    for i in (0..N).rev() {
        if i % 2 == 0 {
            even = even * z2 + c[i];
        } else {
            odd = odd * z2 + c[i];
        }
    }
    even + z * odd
}

// ---------------------------------------------------------------------------------------
// exp family
// ---------------------------------------------------------------------------------------

const INVLN2: f64 = std::f64::consts::LOG2_E;
const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-01; // 32 bits: k * LN2_HI is exact
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;

/// exp(hi - lo) for |hi - lo| <= ln2 / 2 (fdlibm's rational form, < 1 ulp).
#[inline(always)]
fn exp_kernel(hi: f64, lo: f64) -> f64 {
    const P1: f64 = 1.666_666_666_666_660_190_37e-01;
    const P2: f64 = -2.777_777_777_701_559_338_42e-03;
    const P3: f64 = 6.613_756_321_437_934_361_17e-05;
    const P4: f64 = -1.653_390_220_546_525_153_90e-06;
    const P5: f64 = 4.138_136_797_057_238_460_39e-08;
    let r = hi - lo;
    let xx = r * r;
    let c = r - xx * (P1 + xx * (P2 + xx * (P3 + xx * (P4 + xx * P5))));
    1.0 + (r * c / (2.0 - c) - lo + hi)
}

/// exp(x + xlo) * 2^adj (|xlo| small, adj a small integer), without intermediate overflow.
#[inline(always)]
fn exp_scaled(x: f64, xlo: f64, adj: f64) -> f64 {
    // outside [-746, 711] the result is 0 or inf whatever the scale; NaN stays NaN
    let xc = x.clamp(-746.0, 711.0);
    let k = rint((xc + xlo) * INVLN2);
    let hi = (xc - k * LN2_HI) + xlo; // the difference is exact
    let lo = k * LN2_LO;
    ldexp_k(exp_kernel(hi, lo), k + adj)
}

/// e^x. Within 1 ulp; overflows to inf above 709.78, subnormal below -708.4, 0 below
/// -745.13; exp(NaN) = NaN.
#[inline(always)]
pub fn exp_f64(x: f64) -> f64 {
    exp_scaled(x, 0.0, 0.0)
}

/// e^x to about 2e-10 relative (a degree-8 Taylor polynomial on |r| <= ln2 / 2: no division,
/// unlike `exp_f64`), for float32 functions computed in float64, whose one rounding to float32
/// (2^-24) dwarfs it. Overflows to inf above 709.78, 0 below -745; NaN stays NaN.
#[inline(always)]
pub fn exp_f64_for_f32(x: f64) -> f64 {
    let xc = x.clamp(-746.0, 711.0);
    let k = rint(xc * INVLN2);
    let r = (xc - k * LN2_HI) - k * LN2_LO;
    const C: [f64; 9] = [
        1.0,
        1.0,
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0,
        1.0 / 40320.0,
    ];
    ldexp_k(poly_split(r, &C), k)
}

/// 2^x. Within 1 ulp; inf from 1024, subnormal below -1022, 0 below -1075.
#[inline(always)]
pub fn exp2_f64(x: f64) -> f64 {
    const LN2: f64 = std::f64::consts::LN_2;
    const LN2_TAIL: f64 = 2.319_046_813_846_299_6e-17; // ln 2 - LN2
    const LN2_H: f64 = 0.693_147_182_464_599_6; // LN2 to 26 bits
    const LN2_L: f64 = -1.904_654_323_148_236e-9; // LN2 - LN2_H, exact
    let xc = x.clamp(-1080.0, 1025.0);
    let n = rint(xc);
    let f = xc - n; // exact, |f| <= 1/2

    // f ln 2 as p + e: Dekker's exact product of f and LN2, plus f times the tail of ln 2
    let p = f * LN2;
    let fh = split_hi(f);
    let fl = f - fh;
    let e = (((fh * LN2_H - p) + fh * LN2_L + fl * LN2_H) + fl * LN2_L) + f * LN2_TAIL;
    ldexp_k(exp_kernel(p, -e), n)
}

/// e^x - 1, accurate near 0 (fdlibm's expm1 as selects). Within 1 ulp; -1 below -38.
#[inline(always)]
pub fn expm1_f64(x: f64) -> f64 {
    const Q1: f64 = -3.333_333_333_333_313_164_28e-02;
    const Q2: f64 = 1.587_301_587_254_814_601_65e-03;
    const Q3: f64 = -7.936_507_578_674_879_424_73e-05;
    const Q4: f64 = 4.008_217_827_329_362_395_52e-06;
    const Q5: f64 = -2.010_992_181_836_243_713_26e-07;
    // below -38.9, expm1 rounds to -1; above 709.79 it overflows
    let xc = x.clamp(-40.0, 710.0);
    let k = rint(xc * INVLN2);
    let hi = xc - k * LN2_HI;
    let lo = k * LN2_LO;
    let r = hi - lo;
    let c = (hi - r) - lo;
    // e^r - 1 in fdlibm's rational form
    let hfx = 0.5 * r;
    let hxs = r * hfx;
    let r1 = 1.0 + hxs * (Q1 + hxs * (Q2 + hxs * (Q3 + hxs * (Q4 + hxs * Q5))));
    let t = 3.0 - r1 * hfx;
    let e0 = hxs * ((r1 - t) / (6.0 - r * t));
    let res_k0 = r - (r * e0 - hxs);
    // e^x = 2^k (r - e + 1)
    let e = (r * (e0 - c) - c) - hxs;
    let res_km1 = 0.5 * (r - e) - 0.5;
    let res_k1 = if r < -0.25 {
        -2.0 * (e - (r + 0.5))
    } else {
        1.0 + 2.0 * (r - e)
    };
    let res_far = ldexp_k(r - e + 1.0, k) - 1.0; // k < 0 or k > 56
    let twopk = pow2i(k);
    let uf = pow2i(-k);
    let res_mid = if k < 20.0 {
        (r - e + (1.0 - uf)) * twopk
    } else {
        (r - (e + uf) + 1.0) * twopk
    };
    let res = if k == 0.0 {
        res_k0
    } else if k == -1.0 {
        res_km1
    } else if k == 1.0 {
        res_k1
    } else if !(0.0..=56.0).contains(&k) {
        res_far
    } else {
        res_mid
    };
    // |x| < 2^-54 (zeros, subnormals) and NaN: x
    if x.abs() < 5.551_115_123_125_783e-17 || x.is_nan() {
        x
    } else {
        res
    }
}

/// sinh. Within 2 ulp; overflows to +-inf above 710.47.
#[inline(always)]
pub fn sinh_f64(x: f64) -> f64 {
    // 1 / (2k + 1)!, k = 1..9: the Taylor series to 2^-60 for |x| < 1
    const C: [f64; 9] = [
        0.166_666_666_666_666_66,
        0.008_333_333_333_333_333,
        0.000_198_412_698_412_698_4,
        2.755_731_922_398_589_3e-6,
        2.505_210_838_544_172e-8,
        1.605_904_383_682_161_3e-10,
        7.647_163_731_819_816e-13,
        2.811_457_254_345_520_6e-15,
        8.220_635_246_624_33e-18,
    ];
    let ax = x.abs();
    let z = x * x;
    let mut p = C[8];
    for &c in C[..8].iter().rev() {
        p = p * z + c;
    }
    let small = ax + ax * (z * p);
    let h = exp_scaled(ax, 0.0, -1.0); // e^|x| / 2, no overflow before sinh's own
    let big = h - 0.25 / h; // (e^|x| - e^-|x|) / 2
    let r = if ax < 1.0 { small } else { big };
    // NaN: big = NaN
    r.copysign(x)
}

/// cosh. Within 2 ulp; overflows to inf above 710.47.
#[inline(always)]
pub fn cosh_f64(x: f64) -> f64 {
    // 1 / (2k)!, k = 1..9: the Taylor series to 2^-60 for |x| < ln 2
    const C: [f64; 9] = [
        0.5,
        0.041_666_666_666_666_664,
        0.001_388_888_888_888_889,
        2.480_158_730_158_73e-5,
        2.755_731_922_398_589e-7,
        2.087_675_698_786_81e-9,
        1.147_074_559_772_972_5e-11,
        4.779_477_332_387_385e-14,
        1.561_920_696_858_622_5e-16,
    ];
    let ax = x.abs();
    let z = x * x;
    let mut p = C[8];
    for &c in C[..8].iter().rev() {
        p = p * z + c;
    }
    let small = 1.0 + z * p;
    let h = exp_scaled(ax, 0.0, -1.0); // e^|x| / 2
    let big = h + 0.25 / h;
    if ax < std::f64::consts::LN_2 {
        small
    } else {
        big
    }
}

/// tanh: its Taylor series below 0.55, 1 - 2 / (e^2|x| + 1) above. Within 1.5 ulp.
#[inline(always)]
pub fn tanh_f64(x: f64) -> f64 {
    // tanh x = x + x^3 (C0 + x^2 C1 + ...): the series to 2^-57 for |x| <= 0.55
    const C: [f64; 19] = [
        -0.333_333_333_333_333_3,
        0.133_333_333_333_333_33,
        -0.053_968_253_968_253_97,
        0.021_869_488_536_155_203,
        -0.008_863_235_529_902_197,
        0.003_592_128_036_572_481,
        -0.001_455_834_387_051_318_3,
        0.000_590_027_440_945_586,
        -0.000_239_129_114_243_552_48,
        9.691_537_956_929_451e-5,
        -3.927_832_388_331_683e-5,
        1.591_890_506_932_896_4e-5,
        -6.451_689_215_655_431e-6,
        2.614_771_151_290_754_6e-6,
        -1.059_726_832_010_465_4e-6,
        4.294_911_078_273_806e-7,
        -1.740_661_896_357_164_8e-7,
        7.054_636_946_400_968e-8,
        -2.859_136_662_305_254e-8,
    ];
    let ax = x.abs();
    let z = x * x;
    let small = ax + ax * (z * poly_split(z, &C));
    // 1 - 2 / (e + 1), e = e^2|x| >= 3, the rounding error of e + 1 compensated
    let e = exp_f64((2.0 * ax).min(50.0));
    let d = e + 1.0;
    let derr = (e - d) + 1.0; // exact, as e >= 1
    let big = 1.0 - 2.0 / d * (1.0 - derr / d);
    let r = if ax > f64::from_bits(0x3fe1_93ea_0000_0000) {
        big // log(3) / 2
    } else {
        small
    };
    // NaN: the comparison is false, small = NaN; copysign keeps it NaN
    r.copysign(x)
}

/// The logistic function 1 / (1 + e^-x). Within 2 ulp.
#[inline(always)]
pub fn sigmoid_f64(x: f64) -> f64 {
    // e = e^-|x| <= 1 never overflows: sigmoid(|x|) = 1 / (1 + e), sigmoid(-|x|) = e / (1 + e),
    // with the rounding error of 1 + e compensated
    let e = exp_f64(-x.abs());
    let d = 1.0 + e;
    let derr = (1.0 - d) + e; // exact, as 1 >= e
    let num = if x < 0.0 { e } else { 1.0 };
    let y = num / d;
    y - y * (derr / d)
}

// ---------------------------------------------------------------------------------------
// log family
// ---------------------------------------------------------------------------------------

const SQRT_HALF_HI: u64 = 0x3fe6_a09e; // high word of sqrt(1/2)

/// For a positive normal u: (f, k) with u = (1 + f) 2^k and 1 + f in [sqrt(1/2), sqrt(2)).
#[inline(always)]
fn log_reduce(u: f64) -> (f64, f64) {
    let bits = u.to_bits().wrapping_add((0x3ff0_0000 - SQRT_HALF_HI) << 32);
    // the exponent field (11 bits) as an f64, through the magic number
    let k = f64::from_bits((bits >> 52) + MAGIC_BITS) - (MAGIC + 1023.0);
    let m = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) + (SQRT_HALF_HI << 32));
    (m - 1.0, k)
}

/// fdlibm's log pieces for 1 + f, f in [sqrt(1/2) - 1, sqrt(2) - 1): (hfsq, s, R) with
/// log(1 + f) = f - hfsq + s (hfsq + R).
#[inline(always)]
fn log_kernel(f: f64) -> (f64, f64, f64) {
    const LG1: f64 = 6.666_666_666_666_735_130e-01;
    const LG2: f64 = 3.999_999_999_940_941_908e-01;
    const LG3: f64 = 2.857_142_874_366_239_149e-01;
    const LG4: f64 = 2.222_219_843_214_978_396e-01;
    const LG5: f64 = 1.818_357_216_161_805_012e-01;
    const LG6: f64 = 1.531_383_769_920_937_332e-01;
    const LG7: f64 = 1.479_819_860_511_658_591e-01;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    (hfsq, s, t2 + t1)
}

/// (f, k) for a positive finite x, subnormals included.
#[inline(always)]
fn log_reduce_sub(x: f64) -> (f64, f64) {
    let sub = x < f64::MIN_POSITIVE;
    let (f, k) = log_reduce(if sub { x * 18_014_398_509_481_984.0 } else { x }); // 2^54
    (f, if sub { k - 54.0 } else { k })
}

/// Special values of the logs: `r` for a positive finite x, -inf at +-0, inf at inf,
/// NaN below 0 and for NaN.
#[inline(always)]
fn log_special(x: f64, r: f64) -> f64 {
    if x == 0.0 {
        f64::NEG_INFINITY
    } else if x == f64::INFINITY {
        x
    } else if x > 0.0 {
        r
    } else {
        f64::NAN
    }
}

/// Natural log. Within 1 ulp.
#[inline(always)]
pub fn log_f64(x: f64) -> f64 {
    let (f, k) = log_reduce_sub(x);
    let (hfsq, s, r) = log_kernel(f);
    let y = s * (hfsq + r) + k * LN2_LO - hfsq + f + k * LN2_HI;
    log_special(x, y)
}

/// log(1 + x), accurate near 0 (fdlibm's log1p as selects). Within 1 ulp.
#[inline(always)]
pub fn log1p_f64(x: f64) -> f64 {
    let u = 1.0 + x;
    let (fu, ku) = log_reduce(u);
    // log(1 + x) - log(u), the rounding error of u
    let c = if ku >= 2.0 {
        1.0 - (u - x)
    } else {
        x - (u - 1.0)
    };
    let cu = c / u;
    let c = if ku < 54.0 { cu } else { 0.0 };
    // in (sqrt(1/2) - 1, sqrt(2) - 1), 1 + x needs no reduction: f = x
    let near =
        x < f64::from_bits(0x3fda_827a_0000_0000) && x > -f64::from_bits(0x3fd2_bec5_0000_0000);
    let (f, k, c) = if near { (x, 0.0, 0.0) } else { (fu, ku, c) };
    let (hfsq, s, r) = log_kernel(f);
    let y = s * (hfsq + r) + (k * LN2_LO + c) - hfsq + f + k * LN2_HI;
    if x.abs() < 1.110_223_024_625_156_5e-16 {
        x // 2^-53, zeros of either sign
    } else if x == -1.0 {
        f64::NEG_INFINITY
    } else if x == f64::INFINITY {
        x
    } else if x > -1.0 {
        y
    } else {
        f64::NAN
    }
}

/// log base 2. Within 1 ulp; exact at powers of 2.
#[inline(always)]
pub fn log2_f64(x: f64) -> f64 {
    const IVLN2HI: f64 = 1.442_695_040_721_446_275_71e+00;
    const IVLN2LO: f64 = 1.675_171_316_488_651_183_53e-10;
    let (f, k) = log_reduce_sub(x);
    let (hfsq, s, r) = log_kernel(f);
    let hi = hi_word(f - hfsq);
    let lo = f - hi - hfsq + s * (hfsq + r);
    let val_hi = hi * IVLN2HI;
    let val_lo = (lo + hi) * IVLN2LO + lo * IVLN2HI;
    let w = k + val_hi;
    let val_lo = val_lo + ((k - w) + val_hi);
    log_special(x, val_lo + w)
}

/// log base 10. Within 1 ulp.
#[inline(always)]
pub fn log10_f64(x: f64) -> f64 {
    const IVLN10HI: f64 = 4.342_944_818_781_688_809_39e-01;
    const IVLN10LO: f64 = 2.508_294_671_164_527_522_98e-11;
    const LOG10_2HI: f64 = 3.010_299_956_636_117_713_06e-01;
    const LOG10_2LO: f64 = 3.694_239_077_158_930_786_16e-13;
    let (f, k) = log_reduce_sub(x);
    let (hfsq, s, r) = log_kernel(f);
    let hi = hi_word(f - hfsq);
    let lo = f - hi - hfsq + s * (hfsq + r);
    let val_hi = hi * IVLN10HI;
    let y = k * LOG10_2HI;
    let val_lo = k * LOG10_2LO + (lo + hi) * IVLN10LO + lo * IVLN10HI;
    let w = y + val_hi;
    let val_lo = val_lo + ((y - w) + val_hi);
    log_special(x, val_lo + w)
}

/// asinh (fdlibm's, through log1p). Within 2 ulp.
#[inline(always)]
pub fn asinh_f64(x: f64) -> f64 {
    const LN2: f64 = std::f64::consts::LN_2;
    let ax = x.abs();
    let big = ax >= 67_108_864.0; // 2^26: asinh = log(2|x|) = log1p(|x| - 1) + ln 2

    // below: asinh = log1p(|x| + x^2 / (sqrt(x^2 + 1) + 1)) (the clamp keeps it finite)
    let a = ax.min(67_108_864.0);
    let a2 = a * a;
    let q = a2 / ((a2 + 1.0).sqrt() + 1.0);
    // The cases are blended with 0 / 1 factors rather than selects: a select feeding log1p
    // and another on the same condition after it make LLVM compute log1p twice.
    let nb = if big { 0.0 } else { 1.0 };
    let l = log1p_f64((ax + q * nb) - (1.0 - nb));
    let r = l + LN2 * (1.0 - nb);
    let r = if ax < 1.490_116_119_384_765_6e-8 {
        ax
    } else {
        r
    }; // 2^-26
       // ax = inf: log1p(inf) = inf; NaN: NaN
    r.copysign(x)
}

/// acosh (fdlibm's, through log1p). Within 2 ulp; NaN below 1.
#[inline(always)]
pub fn acosh_f64(x: f64) -> f64 {
    const LN2: f64 = std::f64::consts::LN_2;
    let big = x >= 67_108_864.0; // 2^26: acosh = log(2x) = log1p(x - 1) + ln 2

    // below: acosh = log(x + sqrt(x^2 - 1)) = log1p(d + sqrt(d (d + 2))), d = x - 1 exact
    let d = x - 1.0;
    let dc = d.min(67_108_864.0); // keeps the square finite
    let sq = (dc * (dc + 2.0)).sqrt();
    let nb = if big { 0.0 } else { 1.0 }; // (blended, not selected: see asinh)
    let l = log1p_f64(d + sq * nb);
    let r = l + LN2 * (1.0 - nb);
    if x >= 1.0 {
        r
    } else {
        f64::NAN
    }
}

/// atanh (fdlibm's, through log1p). Within 1.5 ulp; +-inf at +-1, NaN beyond.
#[inline(always)]
pub fn atanh_f64(x: f64) -> f64 {
    let y = x.abs();
    let q = y / (1.0 - y);
    let arg = if y < 0.5 {
        2.0 * y + 2.0 * y * q
    } else {
        2.0 * q
    };
    let r = 0.5 * log1p_f64(arg);
    let r = if y < 3.725_290_298_461_914e-9 { y } else { r }; // 2^-28
    let r = if y > 1.0 { f64::NAN } else { r };
    r.copysign(x)
}

// ---------------------------------------------------------------------------------------
// sin, cos, tan
// ---------------------------------------------------------------------------------------

/// Largest |x| for which sin, cos and tan keep their bound: the quotient q = round(2x / pi)
/// must fit in 32 bits for q times the 21-bit pieces of pi/2 to be exact.
pub const TRIG_MAX: f64 = 6.7e9;

/// x = q pi/2 + (r + rr), |r + rr| <= ~pi/4, r + rr good to ~2^-100 relative for
/// |x| <= TRIG_MAX. Returns (r, rr, q). Beyond, r is clamped to [-pi/4, pi/4] (no accuracy,
/// but finite in-range results); inf and NaN give NaN.
#[inline(always)]
fn rem_pio2(x: f64) -> (f64, f64, f64) {
    const FRAC_2_PI: f64 = std::f64::consts::FRAC_2_PI;
    // pi/2 as five 21-bit pieces (so that q * piece is exact for q < 2^32) and a tail
    const P1: f64 = 1.570_796_012_878_418; // 0x3ff921fb00000000
    const P2: f64 = 3.139_164_164_167_596e-7; // 0x3e95110b00000000
    const P3: f64 = 6.223_374_680_175_42e-14; // 0x3d31846a00000000
    const P4: f64 = -2.508_279_158_490_152_5e-20; // 0xbbdd9ccf00000000
    const P5: f64 = 3.521_561_362_568_105e-27; // 0x3a71701c00000000
    const P6: f64 = -1.497_384_904_859_169_8e-33; // 0xb91f1976b7ed8fbc
    let q = rint(x * FRAC_2_PI);
    // x and q P1 are within a factor 2 of each other (or q = 0): the difference is exact
    let hi = x - q * P1;
    let (hi, e2) = two_sum(hi, -(q * P2));
    let (hi, e3) = two_sum(hi, -(q * P3));
    let (hi, e4) = two_sum(hi, -(q * P4));
    let (hi, e5) = two_sum(hi, -(q * P5));
    let lo = ((e2 + e3) + (e4 + e5)) - q * P6;
    let r = hi + lo;
    let rr = lo - (r - hi);
    let far = x.abs() > TRIG_MAX;
    let r = if far {
        r.clamp(-std::f64::consts::FRAC_PI_4, std::f64::consts::FRAC_PI_4)
    } else {
        r
    };
    (r, if far { 0.0 } else { rr }, q)
}

/// sin(x + y) for |x + y| <= ~pi/4, y a tail below ulp(x) (fdlibm's __sin).
#[inline(always)]
pub(crate) fn k_sin(x: f64, y: f64) -> f64 {
    const S1: f64 = -1.666_666_666_666_663_243_48e-01;
    const S2: f64 = 8.333_333_333_322_489_461_24e-03;
    const S3: f64 = -1.984_126_982_985_794_931_34e-04;
    const S4: f64 = 2.755_731_370_707_006_767_89e-06;
    const S5: f64 = -2.505_076_025_340_686_341_95e-08;
    const S6: f64 = 1.589_690_995_211_550_102_21e-10;
    let z = x * x;
    let w = z * z;
    let r = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6);
    let v = z * x;
    x - ((z * (0.5 * y - v * r) - y) - v * S1)
}

/// cos(x + y) for |x + y| <= ~pi/4 (fdlibm's __cos).
#[inline(always)]
pub(crate) fn k_cos(x: f64, y: f64) -> f64 {
    const C1: f64 = 4.166_666_666_666_660_190_37e-02;
    const C2: f64 = -1.388_888_888_887_410_957_49e-03;
    const C3: f64 = 2.480_158_728_947_672_941_78e-05;
    const C4: f64 = -2.755_731_435_139_066_330_35e-07;
    const C5: f64 = 2.087_572_321_298_174_827_90e-09;
    const C6: f64 = -1.135_964_755_778_819_482_65e-11;
    let z = x * x;
    let w = z * z;
    let r = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    w + (((1.0 - w) - hz) + (z * r - x * y))
}

/// The low 64 bits of an integer-valued q, |q| < 2^51 (two's complement).
#[inline(always)]
fn quadrant(q: f64) -> u64 {
    (q + MAGIC).to_bits()
}

/// (sin x, cos x), one reduction for both. Within 1 ulp for |x| <= TRIG_MAX.
#[inline(always)]
pub fn sincos_f64(x: f64) -> (f64, f64) {
    let (r, rr, q) = rem_pio2(x);
    let s = k_sin(r, rr);
    let c = k_cos(r, rr);
    let n = quadrant(q);
    let odd = n & 1 != 0;
    let (a, b) = (if odd { c } else { s }, if odd { s } else { c });
    let sin = if n & 2 != 0 { -a } else { a };
    let cos = if n.wrapping_add(1) & 2 != 0 { -b } else { b };
    // sin(-0) = -0 (the reduction's sums lose the sign of zero)
    (if x == 0.0 { x } else { sin }, cos)
}

/// sin. Within 1 ulp for |x| <= TRIG_MAX.
#[inline(always)]
pub fn sin_f64(x: f64) -> f64 {
    sincos_f64(x).0
}

/// cos. Within 1 ulp for |x| <= TRIG_MAX.
#[inline(always)]
pub fn cos_f64(x: f64) -> f64 {
    sincos_f64(x).1
}

/// tan (fdlibm's __tan as selects). Within 1 ulp for |x| <= TRIG_MAX.
#[inline(always)]
pub fn tan_f64(x: f64) -> f64 {
    const T: [f64; 13] = [
        3.333_333_333_333_340_919_86e-01,
        1.333_333_333_332_012_426_99e-01,
        5.396_825_397_622_605_213_77e-02,
        2.186_948_829_485_954_245_99e-02,
        8.863_239_823_599_300_057_37e-03,
        3.592_079_107_591_312_353_56e-03,
        1.456_209_454_325_290_255_16e-03,
        5.880_412_408_202_640_968_74e-04,
        2.464_631_348_184_699_068_12e-04,
        7.817_944_429_395_570_923_00e-05,
        7.140_724_913_826_081_903_05e-05,
        -1.855_863_748_552_754_566_54e-05,
        2.590_730_518_636_337_128_84e-05,
    ];
    const PIO4: f64 = std::f64::consts::FRAC_PI_4;
    const PIO4_LO: f64 = 3.061_616_997_868_383_017_93e-17;
    let (r0, rr0, q) = rem_pio2(x);
    let odd = quadrant(q) & 1 != 0;
    let neg = r0 < 0.0;
    let big = r0.abs() >= f64::from_bits(0x3fe5_9428_0000_0000); // 0.6743

    // near +-pi/4, tan(r) = tan(pi/4 - r') with r' = pi/4 - |r| small
    let (ra, rra) = if neg { (-r0, -rr0) } else { (r0, rr0) };
    let x1 = if big {
        (PIO4 - ra) + (PIO4_LO - rra)
    } else {
        r0
    };
    let y1 = if big { 0.0 } else { rr0 };
    let z = x1 * x1;
    let w = z * z;
    let r = T[1] + w * (T[3] + w * (T[5] + w * (T[7] + w * (T[9] + w * T[11]))));
    let v = z * (T[2] + w * (T[4] + w * (T[6] + w * (T[8] + w * (T[10] + w * T[12])))));
    let s = z * x1;
    let r = y1 + z * (s * (r + v) + y1) + s * T[0];
    let w = x1 + r;
    // big: (1 - tan r') / (1 + tan r') or its negative reciprocal
    let sg = if odd { -1.0 } else { 1.0 };
    let vb = sg - 2.0 * (x1 + (r - w * w / (w + sg)));
    let res_big = if neg { -vb } else { vb };
    // odd quadrant: -1 / (x1 + r), computed accurately
    let w0 = hi_word(w);
    let v = r - (w0 - x1);
    let a = -1.0 / w;
    let a0 = hi_word(a);
    let res_odd = a0 + a * (1.0 + a0 * w0 + a0 * v);
    let res = if big {
        res_big
    } else if odd {
        res_odd
    } else {
        w
    };
    if x == 0.0 {
        x
    } else {
        res
    }
}

// ---------------------------------------------------------------------------------------
// inverse trigonometric
// ---------------------------------------------------------------------------------------

/// atan(ax) + corr = hi + rest (before their sum is rounded) for ax >= 0 (inf included,
/// NaN -> NaN) and a tiny corr: fdlibm's atan, its five intervals as selects.
#[inline(always)]
fn atan_pos(ax: f64, corr: f64) -> (f64, f64) {
    const ATANHI: [f64; 4] = [
        4.636_476_090_008_060_935_15e-01,
        std::f64::consts::FRAC_PI_4,
        9.827_937_232_473_290_540_82e-01,
        std::f64::consts::FRAC_PI_2,
    ];
    const ATANLO: [f64; 4] = [
        2.269_877_745_296_168_709_24e-17,
        3.061_616_997_868_383_017_93e-17,
        1.390_331_103_123_099_845_16e-17,
        6.123_233_995_736_766_035_87e-17,
    ];
    const AT: [f64; 11] = [
        3.333_333_333_333_293_180_27e-01,
        -1.999_999_999_987_648_324_76e-01,
        1.428_571_427_250_346_637_11e-01,
        -1.111_111_040_546_235_578_80e-01,
        9.090_887_133_436_506_561_96e-02,
        -7.691_876_205_044_829_994_95e-02,
        6.661_073_137_387_531_206_69e-02,
        -5.833_570_133_790_573_486_45e-02,
        4.976_877_994_615_932_360_17e-02,
        -3.653_157_274_421_691_552_70e-02,
        1.628_582_011_536_578_236_23e-02,
    ];
    let i0 = ax >= 0.4375;
    let i1 = ax >= 0.6875;
    let i2 = ax >= 1.1875;
    let i3 = ax >= 2.4375;
    let num = if i3 {
        -1.0
    } else if i2 {
        ax - 1.5
    } else if i1 {
        ax - 1.0
    } else if i0 {
        2.0 * ax - 1.0
    } else {
        ax
    };
    let den = if i3 {
        ax
    } else if i2 {
        1.0 + 1.5 * ax
    } else if i1 {
        ax + 1.0
    } else if i0 {
        2.0 + ax
    } else {
        1.0
    };
    let t = num / den;
    let (hi, lo) = if i3 {
        (ATANHI[3], ATANLO[3])
    } else if i2 {
        (ATANHI[2], ATANLO[2])
    } else if i1 {
        (ATANHI[1], ATANLO[1])
    } else {
        (ATANHI[0], ATANLO[0])
    };
    let z = t * t;
    let w = z * z;
    let s1 = z * (AT[0] + w * (AT[2] + w * (AT[4] + w * (AT[6] + w * (AT[8] + w * AT[10])))));
    let s2 = w * (AT[1] + w * (AT[3] + w * (AT[5] + w * (AT[7] + w * AT[9]))));
    let rest = if i0 {
        -((t * (s1 + s2) - (lo + corr)) - t)
    } else {
        t - (t * (s1 + s2) - corr)
    };
    (if i0 { hi } else { 0.0 }, rest)
}

/// atan. Within 1 ulp.
#[inline(always)]
pub fn atan_f64(x: f64) -> f64 {
    let (hi, rest) = atan_pos(x.abs(), 0.0);
    (hi + rest).copysign(x)
}

/// atan2(y, x), the angle of the point (x, y) in [-pi, pi], with C99's special values.
/// Within 1 ulp (1.5 for |y| < 1e-289).
#[inline(always)]
pub fn atan2_f64(y: f64, x: f64) -> f64 {
    const PI: f64 = std::f64::consts::PI;
    const PI_LO: f64 = 1.224_646_799_147_353_177_2e-16;
    const PIO2: f64 = std::f64::consts::FRAC_PI_2;
    let ax = x.abs();
    let ay = y.abs();
    let xneg = x.is_sign_negative();
    // t = |y / x| rounded; atan(|y / x|) = atan(t) + (|y| - t |x|) / (|x| (1 + t^2)), the
    // remainder from Dekker's exact product t |x| (the halves split by masking, which cannot
    // overflow)
    let t = ay / ax;
    let p = t * ax;
    let (th, ah) = (split_hi(t), split_hi(ax));
    let (tl, al) = (t - th, ax - ah);
    let pe = ((th * ah - p) + th * al + tl * ah) + tl * al; // t |x| = p + pe
    let corr = ((ay - p) - pe) / (ax * (1.0 + t * t));
    // (none where x or y is infinite or zero, or t huge: those are special cases below; and
    // none where the partial products of y's size underflow)
    let corr = if corr.abs() < 1e-10 && ay > 1e-289 {
        corr
    } else {
        0.0
    };
    let (hi, rest) = atan_pos(t, corr);
    // x < 0: pi - atan(t) = (PI - hi) + (PI_LO - rest), PI - hi exactly as s + e
    let (s, e) = two_sum(PI, -hi);
    let general = if xneg {
        s + ((PI_LO - rest) + e)
    } else {
        hi + rest
    };
    let r = if ay == 0.0 {
        if xneg {
            PI
        } else {
            0.0
        }
    } else if ax == f64::INFINITY && ay == f64::INFINITY {
        if xneg {
            3.0 * std::f64::consts::FRAC_PI_4
        } else {
            std::f64::consts::FRAC_PI_4
        }
    } else if ax == 0.0 || ay == f64::INFINITY || ay > ax * 18_446_744_073_709_551_616.0 {
        PIO2 // |y / x| > 2^64
    } else {
        general
    };
    if x.is_nan() || y.is_nan() {
        x + y
    } else {
        r.copysign(y)
    }
}

/// fdlibm's rational R(z) for asin / acos: asin(x) = x + x R(x^2).
#[inline(always)]
fn asin_r(z: f64) -> f64 {
    const PS0: f64 = 1.666_666_666_666_666_574_15e-01;
    const PS1: f64 = -3.255_658_186_224_009_154_05e-01;
    const PS2: f64 = 2.012_125_321_348_629_258_81e-01;
    const PS3: f64 = -4.005_553_450_067_941_140_27e-02;
    const PS4: f64 = 7.915_349_942_898_145_321_76e-04;
    const PS5: f64 = 3.479_331_075_960_211_675_70e-05;
    const QS1: f64 = -2.403_394_911_734_414_218_78e+00;
    const QS2: f64 = 2.020_945_760_233_505_694_71e+00;
    const QS3: f64 = -6.882_839_716_054_532_930_30e-01;
    const QS4: f64 = 7.703_815_055_590_193_527_91e-02;
    let p = z * (PS0 + z * (PS1 + z * (PS2 + z * (PS3 + z * (PS4 + z * PS5)))));
    let q = 1.0 + z * (QS1 + z * (QS2 + z * (QS3 + z * QS4)));
    p / q
}

const PIO2_HI: f64 = std::f64::consts::FRAC_PI_2;
const PIO2_LO: f64 = 6.123_233_995_736_766_035_87e-17;

/// asin. Within 1 ulp; NaN outside [-1, 1].
#[inline(always)]
pub fn asin_f64(x: f64) -> f64 {
    let ax = x.abs();
    let small = ax < 0.5;
    let z = (1.0 - ax) * 0.5; // NaN-free: negative beyond 1, where sqrt gives NaN
    let s = z.sqrt();
    let r = asin_r(if small { x * x } else { z });
    let res_small = ax + ax * r;
    // |x| >= 0.975
    let res_near1 = PIO2_HI - (2.0 * (s + s * r) - PIO2_LO);
    let f = hi_word(s);
    let c = (z - f * f) / (s + f);
    let res_mid = 0.5 * PIO2_HI - (2.0 * s * r - (PIO2_LO - 2.0 * c) - (0.5 * PIO2_HI - 2.0 * f));
    let res = if small {
        if ax < 1.490_116_119_384_765_6e-8 {
            ax // 2^-26
        } else {
            res_small
        }
    } else if ax >= f64::from_bits(0x3fef_3333_0000_0000) {
        res_near1
    } else {
        res_mid
    };
    // |x| > 1: s is NaN; NaN stays NaN
    res.copysign(x)
}

/// acos. Within 1 ulp; NaN outside [-1, 1].
#[inline(always)]
pub fn acos_f64(x: f64) -> f64 {
    let ax = x.abs();
    let small = ax < 0.5;
    let z = (1.0 - ax) * 0.5;
    let s = z.sqrt();
    let r = asin_r(if small { x * x } else { z });
    let res_small = PIO2_HI - (x - (PIO2_LO - x * r));
    let res_neg = 2.0 * (PIO2_HI - (s + (r * s - PIO2_LO)));
    let df = hi_word(s);
    let c = (z - df * df) / (s + df);
    let res_pos = 2.0 * (df + (r * s + c));
    if small {
        res_small
    } else if x == 1.0 {
        0.0 // (the general formula divides 0 by 0)
    } else if x < 0.0 {
        res_neg
    } else {
        res_pos
    }
}

// ---------------------------------------------------------------------------------------
// erf, erfc
// ---------------------------------------------------------------------------------------

const ERX: f64 = 8.450_629_115_104_675_292_97e-01;

/// fdlibm's four rational approximations of erf / erfc, the interval's coefficients picked
/// per element: (t, P(t) / Q(t)) for |x| in [0, 0.84375) (t = x^2), [0.84375, 1.25)
/// (t = |x| - 1), [1.25, 1/0.35) and [1/0.35, 28] (t = 1 / x^2).
#[inline(always)]
fn erf_rational(x: f64, ax: f64) -> f64 {
    // numerators, constant term first, padded with zeros to 8 terms
    const NUM: [[f64; 8]; 4] = [
        [
            1.283_791_670_955_125_585_61e-01,
            -3.250_421_072_470_014_993_70e-01,
            -2.848_174_957_559_851_047_66e-02,
            -5.770_270_296_489_441_591_57e-03,
            -2.376_301_665_665_016_260_84e-05,
            0.0,
            0.0,
            0.0,
        ],
        [
            -2.362_118_560_752_659_440_77e-03,
            4.148_561_186_837_483_316_66e-01,
            -3.722_078_760_357_013_238_47e-01,
            3.183_466_199_011_617_536_74e-01,
            -1.108_946_942_823_966_774_76e-01,
            3.547_830_432_561_823_593_71e-02,
            -2.166_375_594_868_790_843_00e-03,
            0.0,
        ],
        [
            -9.864_944_034_847_148_227_05e-03,
            -6.938_585_727_071_817_643_72e-01,
            -1.055_862_622_532_329_098_14e+01,
            -6.237_533_245_032_600_603_96e+01,
            -1.623_966_694_625_734_703_55e+02,
            -1.846_050_929_067_110_359_94e+02,
            -8.128_743_550_630_659_342_46e+01,
            -9.814_329_344_169_145_485_92e+00,
        ],
        [
            -9.864_942_924_700_099_285_97e-03,
            -7.992_832_376_805_230_065_74e-01,
            -1.775_795_491_775_475_198_89e+01,
            -1.606_363_848_558_219_160_62e+02,
            -6.375_664_433_683_896_277_22e+02,
            -1.025_095_131_611_077_249_54e+03,
            -4.835_191_916_086_513_970_19e+02,
            0.0,
        ],
    ];
    // denominators 1 + t (D0 + t (D1 + ...)), padded to 8 terms
    const DEN: [[f64; 8]; 4] = [
        [
            3.979_172_239_591_553_528_19e-01,
            6.502_224_998_876_729_444_85e-02,
            5.081_306_281_875_765_627_76e-03,
            1.324_947_380_043_216_445_26e-04,
            -3.960_228_278_775_368_123_20e-06,
            0.0,
            0.0,
            0.0,
        ],
        [
            1.064_208_804_008_442_282_86e-01,
            5.403_979_177_021_710_489_37e-01,
            7.182_865_441_419_626_628_68e-02,
            1.261_712_198_087_616_421_12e-01,
            1.363_708_391_202_905_073_62e-02,
            1.198_449_984_679_910_741_70e-02,
            0.0,
            0.0,
        ],
        [
            1.965_127_166_743_925_712_92e+01,
            1.376_577_541_435_190_426_00e+02,
            4.345_658_774_752_292_288_21e+02,
            6.453_872_717_332_678_803_36e+02,
            4.290_081_400_275_678_333_86e+02,
            1.086_350_055_417_794_351_34e+02,
            6.570_249_770_319_281_701_35e+00,
            -6.042_441_521_485_809_874_38e-02,
        ],
        [
            3.033_806_074_348_245_829_24e+01,
            3.257_925_129_965_739_188_26e+02,
            1.536_729_586_084_436_959_94e+03,
            3.199_858_219_508_595_539_08e+03,
            2.553_050_406_433_164_425_83e+03,
            4.745_285_412_069_553_672_15e+02,
            -2.244_095_244_658_581_833_62e+01,
            0.0,
        ],
    ];
    let b1 = ax >= 0.84375;
    let b2 = ax >= 1.25;
    let b3 = ax >= f64::from_bits(0x4006_db6d_0000_0000); // about 1/0.35
    let pick = |c: [f64; 4]| {
        if b3 {
            c[3]
        } else if b2 {
            c[2]
        } else if b1 {
            c[1]
        } else {
            c[0]
        }
    };
    let inv2 = 1.0 / (ax * ax);
    let t = if b2 {
        inv2
    } else if b1 {
        ax - 1.0
    } else {
        x * x
    };
    // (LLVM turns this into the four rationals evaluated side by side and a final select)
    let mut p = 0.0;
    let mut q = 0.0;
    for i in (0..8).rev() {
        p = p * t + pick([NUM[0][i], NUM[1][i], NUM[2][i], NUM[3][i]]);
        q = q * t + pick([DEN[0][i], DEN[1][i], DEN[2][i], DEN[3][i]]);
    }
    p / (1.0 + t * q)
}

/// erfc(ax) for ax in [1.25, 28] from the rational ratio: exp(-x^2 - 0.5625 + R/S) / x.
#[inline(always)]
fn erfc_tail(ax: f64, ratio: f64) -> f64 {
    let z = hi_word(ax);
    // -z^2 - 0.5625 is exact (z has 21 bits); the rest is small: one exp of a two-part sum
    exp_scaled(-z * z - 0.5625, (z - ax) * (z + ax) + ratio, 0.0) / ax
}

/// erf. Within 1 ulp.
#[inline(always)]
pub fn verf_f64(x: f64) -> f64 {
    const EFX8: f64 = 1.027_033_336_764_100_690_53e+00;
    let ax = x.abs();
    let axc = ax.min(6.0); // erf = +-1 beyond (NaN: min gives 6, the NaN is restored below)
    let ratio = erf_rational(x, axc);
    let tail = erfc_tail(axc, ratio);
    let r = if ax < 3.725_290_298_461_914e-9 {
        0.125 * (8.0 * x + EFX8 * x) // 2^-28
    } else if ax < 0.84375 {
        x + x * ratio
    } else if ax < 1.25 {
        (ERX + ratio).copysign(x)
    } else if ax < 6.0 {
        (1.0 - tail).copysign(x)
    } else {
        1.0f64.copysign(x)
    };
    if x.is_nan() {
        x
    } else {
        r
    }
}

/// erfc = 1 - erf, accurate for large x. Within 2 ulp; subnormal above 26.55, 0 above 27.3.
#[inline(always)]
pub fn erfc_f64(x: f64) -> f64 {
    let ax = x.abs();
    let axc = ax.min(28.0);
    let ratio = erf_rational(x, axc);
    let tail = erfc_tail(axc, ratio);
    let r = if ax < 1.387_778_780_781_445_7e-17 {
        1.0 - x // 2^-56
    } else if ax < 0.84375 {
        if x < 0.25 {
            1.0 - (x + x * ratio)
        } else if x < 0.5 {
            0.5 - (x - 0.5 + x * ratio)
        } else {
            (1.0 - x) - x * ratio // 1 - x is exact here: one rounding
        }
    } else if ax < 1.25 {
        if x > 0.0 {
            1.0 - ERX - ratio
        } else {
            1.0 + (ERX + ratio)
        }
    } else if ax < 28.0 {
        if x > 0.0 {
            tail
        } else {
            2.0 - tail
        }
    } else if x > 0.0 {
        0.0
    } else {
        2.0
    };
    if x.is_nan() {
        x
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "x86_64")]
    use crate::kernels::elementwise::wide;
    use crate::kernels::elementwise::{run1, run2, Block, Map1, Map2};
    use std::mem::MaybeUninit;

    /// The functions as the engine's kernel types (as `float_unary!` makes them for the ops).
    macro_rules! kernels64 {
        ($($name:ident => $f:ident,)*) => {
            $(
                struct $name;
                impl Map1<f64, f64> for $name {
                    #[inline(always)]
                    fn call(&self, x: f64) -> f64 {
                        $f(x)
                    }
                }
            )*
        };
    }

    kernels64! {
        Exp => exp_f64,
        Exp2 => exp2_f64,
        Expm1 => expm1_f64,
        Log => log_f64,
        Log1p => log1p_f64,
        Log2 => log2_f64,
        Log10 => log10_f64,
        Sin => sin_f64,
        Cos => cos_f64,
        Tan => tan_f64,
        Tanh => tanh_f64,
        Sigmoid => sigmoid_f64,
        Erf => verf_f64,
        Erfc => erfc_f64,
        Atan => atan_f64,
        Asin => asin_f64,
        Acos => acos_f64,
        Sinh => sinh_f64,
        Cosh => cosh_f64,
        Asinh => asinh_f64,
        Acosh => acosh_f64,
        Atanh => atanh_f64,
    }

    struct Atan2;
    impl Map2<f64, f64, f64> for Atan2 {
        #[inline(always)]
        fn call(&self, y: f64, x: f64) -> f64 {
            atan2_f64(y, x)
        }
    }

    fn as_uninit(dst: &mut [f64]) -> &mut [MaybeUninit<f64>] {
        // SAFETY: MaybeUninit<f64> has the same size, alignment and layout as f64, and the
        // loops only write initialised values, so viewing initialised memory as MaybeUninit
        // is sound; f64 is Copy, so overwriting without dropping the old values leaks nothing.
        unsafe {
            std::slice::from_raw_parts_mut(dst.as_mut_ptr() as *mut MaybeUninit<f64>, dst.len())
        }
    }

    /// `dst[i] = k(src[i])` through the engine's dispatching loop.
    fn map_into<K: Map1<f64, f64>>(k: &K, src: &[f64], dst: &mut [f64]) {
        run1(
            src,
            &Block::line(src.len()),
            as_uninit(&mut dst[..src.len()]),
            k,
        )
    }

    type F64 = fn(f64) -> f64;

    // The system libm's (glibc's) erf, erfc, asinh, acosh and atanh: std's own asinh /
    // acosh / atanh are simple formulas, inaccurate near 1 and 0.
    mod c {
        extern "C" {
            pub fn erf(x: f64) -> f64;
            pub fn erfc(x: f64) -> f64;
            pub fn asinh(x: f64) -> f64;
            pub fn acosh(x: f64) -> f64;
            pub fn atanh(x: f64) -> f64;
        }
    }
    macro_rules! libm_ref {
        ($name:ident) => {
            fn $name(x: f64) -> f64 {
                // SAFETY: a C99 math function: takes a double by value, returns a double, has
                // no preconditions and touches no memory.
                unsafe { c::$name(x) }
            }
        };
    }
    libm_ref!(erf);
    libm_ref!(erfc);
    libm_ref!(asinh);
    libm_ref!(acosh);
    libm_ref!(atanh);

    /// 1 / (1 + e^-x) from std's exp with the rounding of 1 + e compensated.
    fn sigmoid_ref(x: f64) -> f64 {
        let pos = |e: f64| {
            let d = 1.0 + e;
            let derr = (1.0 - d) + e; // exact: 1 >= e
            let y = 1.0 / d;
            y - y * y * derr
        };
        if x >= 0.0 {
            pos((-x).exp())
        } else {
            let e = x.exp();
            e * pos(e)
        }
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            // xorshift64*
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
        fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
            lo + (hi - lo) * self.unit()
        }
        /// +-2^e, e uniform in [lo, hi].
        fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
            let m = self.uniform(lo, hi).exp2();
            if self.next() & 1 == 0 {
                m
            } else {
                -m
            }
        }
        fn bits(&mut self) -> f64 {
            f64::from_bits(self.next())
        }
    }

    enum Gen {
        Bits,
        Uniform(f64, f64),
        LogUniform(f64, f64),
    }

    /// Inputs: `n` points of each generator, a dense grid over each uniform range, and the
    /// special values.
    fn inputs(gens: &[Gen], n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Rng(seed | 1);
        let mut v = vec![
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            f64::MAX,
            f64::MIN,
            1.0,
            -1.0,
            0.5,
            -0.5,
            2.0,
            -2.0,
        ];
        for g in gens {
            for i in 0..n {
                v.push(match *g {
                    Gen::Bits => rng.bits(),
                    Gen::Uniform(lo, hi) => rng.uniform(lo, hi),
                    Gen::LogUniform(lo, hi) => rng.log_uniform(lo, hi),
                });
                if let Gen::Uniform(lo, hi) = *g {
                    v.push(lo + (hi - lo) * i as f64 / n as f64);
                }
            }
        }
        v
    }

    fn ulp_of(want: f64) -> f64 {
        let a = want.abs();
        if a < f64::MIN_POSITIVE {
            5e-324
        } else {
            f64::from_bits(a.to_bits() & 0x7ff0_0000_0000_0000) * f64::EPSILON
        }
    }

    /// Error of `got` in ulps of `want`; NaN vs NaN and equal infinities are exact, any other
    /// mismatch of NaN or infinity is infinitely wrong.
    fn ulps(got: f64, want: f64) -> f64 {
        if got.is_nan() && want.is_nan() || got == want {
            0.0
        } else if got.is_nan() || want.is_nan() || got.is_infinite() || want.is_infinite() {
            f64::INFINITY
        } else {
            (got - want).abs() / ulp_of(want)
        }
    }

    /// Max error of f against the reference over the inputs, in ulps of the reference (an
    /// integer: the count of doubles between the two); panics above `bound`. The references
    /// are the system libm (glibc), correctly rounded or nearly for exp, log, sin, cos, ...
    /// but up to 2 ulp off for log10, tanh, sinh, cosh, asinh, acosh, atanh and 5 for erfc
    /// (glibc's published bounds): the bounds below are ours (1 or 2 ulp, checked against
    /// mpmath by `dump_for_mpmath`) plus the reference's.
    fn check(name: &str, f: impl Fn(f64) -> f64, r: impl Fn(f64) -> f64, xs: &[f64], bound: f64) {
        let mut worst = (0.0, 0.0);
        for &x in xs {
            let e = ulps(f(x), r(x));
            if e > worst.0 {
                worst = (e, x);
            }
        }
        let (e, x) = worst;
        println!(
            "{name}: max {e:.3} ulp at x = {x:e} (got {:e}, want {:e})",
            f(x),
            r(x)
        );
        assert!(
            e <= bound,
            "{name}: {e} ulp > {bound} at x = {x:e}: {} vs {}",
            f(x),
            r(x)
        );
    }

    const N: usize = 200_000;
    use Gen::*;

    #[test]
    fn exp_accuracy() {
        let xs = inputs(
            &[
                Bits,
                Uniform(-750.0, 750.0),
                Uniform(-1.0, 1.0),
                LogUniform(-80.0, 3.0),
            ],
            N,
            1,
        );
        check("exp", exp_f64, f64::exp, &xs, 2.0);
        let xs = inputs(
            &[
                Bits,
                Uniform(-1080.0, 1030.0),
                Uniform(-2.0, 2.0),
                LogUniform(-80.0, 3.0),
            ],
            N,
            2,
        );
        check("exp2", exp2_f64, f64::exp2, &xs, 2.0);
        let xs = inputs(
            &[
                Bits,
                Uniform(-45.0, 715.0),
                Uniform(-2.0, 2.0),
                LogUniform(-70.0, 3.0),
            ],
            N,
            3,
        );
        check("expm1", expm1_f64, f64::exp_m1, &xs, 2.0);
    }

    #[test]
    fn log_accuracy() {
        let xs = inputs(
            &[
                Bits,
                LogUniform(-1074.0, 1024.0),
                Uniform(0.5, 2.0),
                Uniform(1.0 - 1e-6, 1.0 + 1e-6),
            ],
            N,
            4,
        );
        check("log", log_f64, f64::ln, &xs, 2.0);
        check("log2", log2_f64, f64::log2, &xs, 2.0);
        check("log10", log10_f64, f64::log10, &xs, 3.0);
        let xs = inputs(
            &[
                Bits,
                LogUniform(-80.0, 1024.0),
                Uniform(-1.0, 1.0),
                Uniform(-1.0, -0.99),
                LogUniform(-60.0, -1e-9),
            ],
            N,
            5,
        );
        check("log1p", log1p_f64, f64::ln_1p, &xs, 2.0);
    }

    #[test]
    fn trig_accuracy() {
        let mut xs = inputs(
            &[
                Bits,
                Uniform(-10.0, 10.0),
                LogUniform(-40.0, 32.6),
                Uniform(-1e5, 1e5),
            ],
            N,
            6,
        );
        // near multiples of pi/2 up to TRIG_MAX, where the reduction cancels most
        let mut rng = Rng(7);
        for _ in 0..N {
            let k = (rng
                .uniform(0.0, TRIG_MAX / 1.57)
                .exp2()
                .min(TRIG_MAX / 1.571))
            .round();
            let x = k * std::f64::consts::FRAC_PI_2;
            let d = (rng.next() % 9) as i64 - 4;
            xs.push(f64::from_bits((x.to_bits() as i64 + d) as u64));
        }
        xs.retain(|x| x.is_nan() || x.abs() <= TRIG_MAX);
        check("sin", sin_f64, f64::sin, &xs, 2.0);
        check("cos", cos_f64, f64::cos, &xs, 2.0);
        check("tan", tan_f64, f64::tan, &xs, 2.0);
        for &x in &xs {
            let (s, c) = sincos_f64(x);
            assert_eq!(s.to_bits(), sin_f64(x).to_bits());
            assert_eq!(c.to_bits(), cos_f64(x).to_bits());
        }
    }

    #[test]
    fn trig_huge_arguments_stay_in_range() {
        let xs = inputs(&[Bits, LogUniform(32.6, 1024.0)], N, 8);
        for &x in xs.iter().filter(|x| x.abs() > TRIG_MAX && x.is_finite()) {
            let (s, c) = sincos_f64(x);
            assert!(
                (-1.0..=1.0).contains(&s) && (-1.0..=1.0).contains(&c),
                "{x}: {s} {c}"
            );
            assert!(tan_f64(x).is_finite(), "tan {x}");
        }
    }

    #[test]
    fn hyperbolic_accuracy() {
        let xs = inputs(
            &[
                Bits,
                Uniform(-25.0, 25.0),
                Uniform(-1.0, 1.0),
                LogUniform(-80.0, 5.0),
            ],
            N,
            9,
        );
        check("tanh", tanh_f64, f64::tanh, &xs, 4.0);
        let xs = inputs(
            &[
                Bits,
                Uniform(-720.0, 720.0),
                Uniform(-2.0, 2.0),
                LogUniform(-80.0, 10.0),
            ],
            N,
            10,
        );
        check("sinh", sinh_f64, f64::sinh, &xs, 4.0);
        check("cosh", cosh_f64, f64::cosh, &xs, 4.0);
        let xs = inputs(
            &[
                Bits,
                Uniform(-800.0, 800.0),
                Uniform(-40.0, 40.0),
                LogUniform(-80.0, 5.0),
            ],
            N,
            11,
        );
        check("sigmoid", sigmoid_f64, sigmoid_ref, &xs, 3.0);
        let xs = inputs(
            &[Bits, LogUniform(-80.0, 1024.0), Uniform(-3.0, 3.0)],
            N,
            12,
        );
        check("asinh", asinh_f64, asinh, &xs, 4.0);
        let mut xs = inputs(&[Bits, LogUniform(-60.0, 1023.0), Uniform(1.0, 3.0)], N, 13);
        xs.iter_mut().for_each(|x| *x = 1.0 + x.abs());
        xs.extend(inputs(&[Bits, Uniform(-3.0, 1.0)], N / 10, 14));
        check("acosh", acosh_f64, acosh, &xs, 4.0);
        let mut xs = inputs(&[Bits, Uniform(-1.0, 1.0), LogUniform(-80.0, 0.0)], N, 15);
        let mut rng = Rng(16);
        xs.extend(
            (0..N).map(|_| {
                (1.0 - rng.log_uniform(-53.0, -1.0).abs()).copysign(rng.uniform(-1.0, 1.0))
            }),
        );
        check("atanh", atanh_f64, atanh, &xs, 4.0);
    }

    #[test]
    fn inverse_trig_accuracy() {
        let xs = inputs(&[Bits, LogUniform(-80.0, 80.0), Uniform(-4.0, 4.0)], N, 17);
        check("atan", atan_f64, f64::atan, &xs, 2.0);
        let mut xs = inputs(&[Bits, Uniform(-1.0, 1.0), LogUniform(-80.0, 0.0)], N, 18);
        let mut rng = Rng(19);
        xs.extend(
            (0..N).map(|_| {
                (1.0 - rng.log_uniform(-53.0, -1.0).abs()).copysign(rng.uniform(-1.0, 1.0))
            }),
        );
        check("asin", asin_f64, f64::asin, &xs, 2.0);
        check("acos", acos_f64, f64::acos, &xs, 2.0);
        let ys = inputs(&[Bits, Uniform(-3.0, 3.0), LogUniform(-80.0, 80.0)], N, 20);
        let xs = inputs(&[Bits, Uniform(-3.0, 3.0), LogUniform(-80.0, 80.0)], N, 42);
        let mut worst = (0.0, 0.0, 0.0);
        let specials = inputs(&[], 0, 1);
        let pairs = ys.iter().zip(&xs).map(|(&y, &x)| (y, x));
        let pairs = pairs.chain(
            specials
                .iter()
                .flat_map(|&y| specials.iter().map(move |&x| (y, x))),
        );
        for (y, x) in pairs {
            let e = ulps(atan2_f64(y, x), y.atan2(x));
            assert_eq!(
                atan2_f64(y, x).is_sign_negative(),
                y.atan2(x).is_sign_negative(),
                "atan2({y}, {x})"
            );
            if e > worst.0 {
                worst = (e, y, x);
            }
        }
        println!(
            "atan2: max {:.3} ulp at ({:e}, {:e})",
            worst.0, worst.1, worst.2
        );
        assert!(worst.0 <= 2.0, "atan2: {worst:?}");
    }

    #[test]
    fn erf_accuracy() {
        let xs = inputs(
            &[
                Bits,
                Uniform(-7.0, 7.0),
                Uniform(-1.5, 1.5),
                LogUniform(-80.0, 3.0),
            ],
            N,
            22,
        );
        check("erf", verf_f64, erf, &xs, 2.0);
        let xs = inputs(
            &[
                Bits,
                Uniform(-7.0, 30.0),
                Uniform(-1.5, 1.5),
                LogUniform(-80.0, 5.0),
            ],
            N,
            23,
        );
        check("erfc", erfc_f64, erfc, &xs, 6.0);
    }

    #[test]
    fn special_values() {
        let inf = f64::INFINITY;
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan();
        let unary: [(&str, F64, F64); 20] = [
            ("exp", exp_f64, f64::exp),
            ("exp2", exp2_f64, f64::exp2),
            ("expm1", expm1_f64, f64::exp_m1),
            ("log", log_f64, f64::ln),
            ("log1p", log1p_f64, f64::ln_1p),
            ("log2", log2_f64, f64::log2),
            ("log10", log10_f64, f64::log10),
            ("sin", sin_f64, f64::sin),
            ("cos", cos_f64, f64::cos),
            ("tan", tan_f64, f64::tan),
            ("tanh", tanh_f64, f64::tanh),
            ("sinh", sinh_f64, f64::sinh),
            ("cosh", cosh_f64, f64::cosh),
            ("atan", atan_f64, f64::atan),
            ("asin", asin_f64, f64::asin),
            ("acos", acos_f64, f64::acos),
            ("asinh", asinh_f64, asinh),
            ("acosh", acosh_f64, acosh),
            ("atanh", atanh_f64, atanh),
            ("erf", verf_f64, erf),
        ];
        let specials = [
            0.0,
            -0.0,
            inf,
            -inf,
            f64::NAN,
            -f64::NAN,
            5e-324,
            -5e-324,
            f64::MAX,
            f64::MIN,
            710.0,
            -746.0,
            1025.0,
            -1076.0,
            1.5,
            -1.5,
        ];
        for (name, f, r) in unary {
            for x in specials {
                if name.len() == 3
                    && (name.starts_with("sin")
                        || name.starts_with("cos")
                        || name.starts_with("tan"))
                    && x.is_finite()
                    && x.abs() > TRIG_MAX
                {
                    continue; // beyond the accurate range: trig_huge_arguments_stay_in_range
                }
                // special cases exactly; finite values to 1 ulp (1.5 is an ordinary point)
                let ok = if r(x).is_finite() && r(x) != 0.0 && f(x).is_finite() {
                    ulps(f(x), r(x)) <= 1.0
                } else {
                    same(f(x), r(x))
                };
                assert!(ok, "{name}({x:e}) = {:e}, want {:e}", f(x), r(x));
            }
        }
        for x in specials {
            assert!(ulps(erfc_f64(x), erfc(x)) <= 1.0, "erfc({x:e})");
            assert!(
                ulps(sigmoid_f64(x), sigmoid_ref(x)) <= 1.0,
                "sigmoid({x:e})"
            );
            for y in specials {
                let (a, b) = (atan2_f64(y, x), y.atan2(x));
                assert!(
                    same(a, b) || ulps(a, b) <= 1.0,
                    "atan2({y:e}, {x:e}): {a:e} vs {b:e}"
                );
            }
        }
        // exact values
        assert_eq!(exp2_f64(10.0), 1024.0);
        assert_eq!(exp2_f64(-1074.0), 5e-324);
        assert_eq!(log2_f64(1024.0), 10.0);
        assert_eq!(log10_f64(1e22), 22.0);
        assert_eq!(exp_f64(0.0), 1.0);
        assert_eq!(cos_f64(0.0), 1.0);
        assert_eq!(acos_f64(-1.0), std::f64::consts::PI);
        assert_eq!(sigmoid_f64(0.0), 0.5);
    }

    /// Writes (x, f(x)) pairs of each function for an independent check with mpmath:
    /// `cargo test --release --lib dump_for_mpmath -- --ignored`, then
    /// `python3 benches/vmath64_check.py` (which prints the max error of each function).
    #[test]
    #[ignore]
    fn dump_for_mpmath() {
        let dir = std::path::Path::new("/tmp/vm_dump");
        std::fs::create_dir_all(dir).unwrap();
        let n = 20_000;
        let mut rng = Rng(99);
        let near1: Vec<f64> = (0..n)
            .map(|_| (1.0 - rng.log_uniform(-53.0, -1.0).abs()).copysign(rng.uniform(-1.0, 1.0)))
            .collect();
        let mut trig = inputs(
            &[
                Uniform(-10.0, 10.0),
                LogUniform(-40.0, 32.6),
                Uniform(-1e5, 1e5),
            ],
            n,
            6,
        );
        for _ in 0..n {
            let k = (rng.uniform(0.0, 32.0).exp2().min(TRIG_MAX / 1.571)).round();
            let x = k * std::f64::consts::FRAC_PI_2;
            let d = (rng.next() % 9) as i64 - 4;
            trig.push(f64::from_bits((x.to_bits() as i64 + d) as u64));
        }
        trig.retain(|x| x.is_nan() || x.abs() <= TRIG_MAX);
        let mut acosh_in = inputs(&[LogUniform(-60.0, 1023.0), Uniform(1.0, 3.0)], n, 13);
        acosh_in.iter_mut().for_each(|x| *x = 1.0 + x.abs());
        let sets: Vec<(&str, F64, Vec<f64>)> = vec![
            (
                "exp",
                exp_f64,
                inputs(
                    &[
                        Uniform(-750.0, 750.0),
                        Uniform(-1.0, 1.0),
                        LogUniform(-80.0, 3.0),
                    ],
                    n,
                    1,
                ),
            ),
            (
                "exp2",
                exp2_f64,
                inputs(&[Uniform(-1080.0, 1030.0), Uniform(-2.0, 2.0)], n, 2),
            ),
            (
                "expm1",
                expm1_f64,
                inputs(
                    &[
                        Uniform(-45.0, 715.0),
                        Uniform(-2.0, 2.0),
                        LogUniform(-70.0, 3.0),
                    ],
                    n,
                    3,
                ),
            ),
            (
                "log",
                log_f64,
                inputs(&[LogUniform(-1074.0, 1024.0), Uniform(0.5, 2.0)], n, 4),
            ),
            (
                "log2",
                log2_f64,
                inputs(&[LogUniform(-1074.0, 1024.0), Uniform(0.5, 2.0)], n, 4),
            ),
            (
                "log10",
                log10_f64,
                inputs(&[LogUniform(-1074.0, 1024.0), Uniform(0.5, 2.0)], n, 4),
            ),
            (
                "log1p",
                log1p_f64,
                inputs(
                    &[
                        LogUniform(-80.0, 1024.0),
                        Uniform(-1.0, 1.0),
                        Uniform(-1.0, -0.99),
                    ],
                    n,
                    5,
                ),
            ),
            ("sin", sin_f64, trig.clone()),
            ("cos", cos_f64, trig.clone()),
            ("tan", tan_f64, trig),
            (
                "tanh",
                tanh_f64,
                inputs(
                    &[
                        Uniform(-25.0, 25.0),
                        Uniform(-1.0, 1.0),
                        LogUniform(-80.0, 5.0),
                    ],
                    n,
                    9,
                ),
            ),
            (
                "sinh",
                sinh_f64,
                inputs(
                    &[
                        Uniform(-720.0, 720.0),
                        Uniform(-2.0, 2.0),
                        LogUniform(-80.0, 10.0),
                    ],
                    n,
                    10,
                ),
            ),
            (
                "cosh",
                cosh_f64,
                inputs(
                    &[
                        Uniform(-720.0, 720.0),
                        Uniform(-2.0, 2.0),
                        LogUniform(-80.0, 10.0),
                    ],
                    n,
                    10,
                ),
            ),
            (
                "sigmoid",
                sigmoid_f64,
                inputs(
                    &[
                        Uniform(-800.0, 800.0),
                        Uniform(-40.0, 40.0),
                        LogUniform(-80.0, 5.0),
                    ],
                    n,
                    11,
                ),
            ),
            (
                "asinh",
                asinh_f64,
                inputs(&[LogUniform(-80.0, 1024.0), Uniform(-3.0, 3.0)], n, 12),
            ),
            ("acosh", acosh_f64, acosh_in),
            (
                "atanh",
                atanh_f64,
                [
                    inputs(&[Uniform(-1.0, 1.0), LogUniform(-80.0, 0.0)], n, 15),
                    near1.clone(),
                ]
                .concat(),
            ),
            (
                "atan",
                atan_f64,
                inputs(&[LogUniform(-80.0, 80.0), Uniform(-4.0, 4.0)], n, 17),
            ),
            (
                "asin",
                asin_f64,
                [
                    inputs(&[Uniform(-1.0, 1.0), LogUniform(-80.0, 0.0)], n, 18),
                    near1.clone(),
                ]
                .concat(),
            ),
            (
                "acos",
                acos_f64,
                [
                    inputs(&[Uniform(-1.0, 1.0), LogUniform(-80.0, 0.0)], n, 18),
                    near1,
                ]
                .concat(),
            ),
            (
                "erf",
                verf_f64,
                inputs(
                    &[
                        Uniform(-7.0, 7.0),
                        Uniform(-1.5, 1.5),
                        LogUniform(-80.0, 3.0),
                    ],
                    n,
                    22,
                ),
            ),
            (
                "erfc",
                erfc_f64,
                inputs(
                    &[
                        Uniform(-7.0, 30.0),
                        Uniform(-1.5, 1.5),
                        LogUniform(-80.0, 5.0),
                    ],
                    n,
                    23,
                ),
            ),
        ];
        for (name, f, xs) in sets {
            let mut bytes = Vec::new();
            for x in xs.into_iter().filter(|x| x.is_finite()) {
                bytes.extend_from_slice(&x.to_le_bytes());
                bytes.extend_from_slice(&f(x).to_le_bytes());
            }
            std::fs::write(dir.join(format!("{name}.bin")), bytes).unwrap();
        }
        let ys = inputs(&[Uniform(-3.0, 3.0), LogUniform(-80.0, 80.0)], n, 20);
        let xs = inputs(&[Uniform(-3.0, 3.0), LogUniform(-80.0, 80.0)], n, 42);
        let mut bytes = Vec::new();
        for (&y, &x) in ys
            .iter()
            .zip(&xs)
            .filter(|(y, x)| y.is_finite() && x.is_finite())
        {
            for v in [y, x, atan2_f64(y, x)] {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
        }
        std::fs::write(dir.join("atan2.bin"), bytes).unwrap();
    }

    fn same_bits(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan()
    }

    /// Every function over a 4096-element slice in its `#[target_feature(enable = "avx2,fma")]`
    /// map (where LLVM vectorises the loop, and may use FMA), and in the avx512 one and the
    /// dispatching `map` where the CPU has them, gives bit-identical results to scalar calls.
    #[test]
    fn vectorised_loop_matches_scalar() {
        let xs = inputs(
            &[
                Bits,
                Uniform(-10.0, 10.0),
                LogUniform(-60.0, 12.0),
                Uniform(-1.0, 1.0),
            ],
            1024,
            24,
        );
        let xs = &xs[..4096];
        let ys: Vec<f64> = xs.iter().rev().copied().collect();
        let check = |name: &str, what: &str, out: &[f64]| {
            for (&x, &v) in xs.iter().zip(out) {
                let s = std::hint::black_box(
                    all_unary().iter().find(|u| u.0 == name).unwrap().1.scalar,
                )(std::hint::black_box(x));
                assert!(
                    same_bits(v, s),
                    "{name} {what} ({x:e}): {v:e} vs scalar {s:e}"
                );
            }
        };
        let check2 = |what: &str, out: &[f64]| {
            for ((&y, &x), &v) in ys.iter().zip(xs).zip(out) {
                let s = std::hint::black_box(atan2_f64)(y, x);
                assert!(
                    same_bits(v, s),
                    "atan2 {what} ({y:e}, {x:e}): {v:e} vs scalar {s:e}"
                );
            }
        };
        for (name, f) in all_unary() {
            let mut out = vec![0.0; xs.len()];
            (f.dispatch)(xs, &mut out);
            check(name, "engine", &out);
        }
        let mut out = vec![0.0; xs.len()];
        run2(
            &ys,
            xs,
            &Block::line(out.len()),
            as_uninit(&mut out),
            &Atan2,
        );
        check2("engine", &out);
        // short and odd lengths (below 64 the engine runs the plain loop)
        for n in [0, 1, 5, 15, 16, 17, 31, 63, 64, 65, 100] {
            let mut out = vec![-7.0; n + 3];
            map_into(&Erf, &xs[..n], &mut out);
            for (i, (&x, &v)) in xs.iter().zip(&out).enumerate() {
                let want = if i < n { verf_f64(x) } else { -7.0 };
                assert!(
                    same_bits(v, want),
                    "erf map of {n}: [{i}] = {v:e}, want {want:e}"
                );
            }
        }
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            let avx512 =
                avx2 && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512dq");
            for (name, f) in all_unary() {
                let mut out = vec![0.0; xs.len()];
                if avx2 {
                    // SAFETY: avx2 and fma were detected above.
                    unsafe { (f.avx2)(xs, as_uninit(&mut out)) };
                    check(name, "avx2", &out);
                }
                if avx512 {
                    // SAFETY: avx512f, avx512dq, avx2 and fma were detected above.
                    unsafe { (f.avx512)(xs, as_uninit(&mut out)) };
                    check(name, "avx512", &out);
                }
            }
            if avx2 {
                // SAFETY: avx2 and fma were detected above.
                unsafe {
                    wide::run2_avx2(
                        &ys,
                        xs,
                        &Block::line(out.len()),
                        as_uninit(&mut out),
                        &Atan2,
                    )
                };
                check2("avx2", &out);
            }
            if !avx2 {
                println!("no avx2 + fma on this CPU: only the dispatching maps were checked");
            }
        }
    }

    /// ns / element of each function over 1M float64 in its avx2+fma map (and avx512 map),
    /// against std's function (glibc's, through the test references for erf, erfc, asinh,
    /// acosh, atanh) in a plain loop: `cargo test --release bench_vs_std -- --ignored
    /// --nocapture`. The minimum over many runs of 64K elements (this machine is shared).
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[ignore]
    fn bench_vs_std() {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            return;
        }
        let avx512 = is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512dq");
        let n = 1 << 20;
        let block = 1 << 16;
        let time = |g: &mut dyn FnMut(usize)| {
            let mut best = f64::INFINITY;
            for rep in 0..100 {
                let t = std::time::Instant::now();
                g(rep % (n / block));
                best = best.min(t.elapsed().as_secs_f64() * 1e9 / block as f64);
            }
            best
        };
        let std_fns: Vec<(&str, F64)> = vec![
            ("exp", f64::exp),
            ("exp2", f64::exp2),
            ("expm1", f64::exp_m1),
            ("log", f64::ln),
            ("log1p", f64::ln_1p),
            ("log2", f64::log2),
            ("log10", f64::log10),
            ("sin", f64::sin),
            ("cos", f64::cos),
            ("tan", f64::tan),
            ("tanh", f64::tanh),
            ("sigmoid", |x| 1.0 / (1.0 + (-x).exp())),
            ("erf", erf),
            ("erfc", erfc),
            ("atan", f64::atan),
            ("asin", f64::asin),
            ("acos", f64::acos),
            ("sinh", f64::sinh),
            ("cosh", f64::cosh),
            ("asinh", asinh),
            ("acosh", acosh),
            ("atanh", atanh),
        ];
        let mut rng = Rng(5);
        for ((name, f), (_, sf)) in all_unary().into_iter().zip(std_fns) {
            let (lo, hi) = match name {
                "log" | "log2" | "log10" => (1e-3, 1e3),
                "log1p" => (-0.9, 10.0),
                "erf" => (-3.0, 3.0),
                "erfc" => (-3.0, 10.0),
                "asin" | "acos" | "atanh" => (-0.999, 0.999),
                "acosh" => (1.0, 100.0),
                "sin" | "cos" | "tan" => (-100.0, 100.0),
                _ => (-20.0, 20.0),
            };
            let xs: Vec<f64> = (0..n).map(|_| rng.uniform(lo, hi)).collect();
            let mut out = vec![0.0; block];
            let chunk = |i: usize| &xs[i * block..][..block];
            // SAFETY: avx2 and fma were detected above.
            let t_avx2 = time(&mut |i| unsafe {
                (f.avx2)(chunk(i), as_uninit(&mut out));
            });
            let t_avx512 = if avx512 {
                // SAFETY: avx512f, avx512dq (and avx2, fma) were detected above.
                time(&mut |i| unsafe {
                    (f.avx512)(chunk(i), as_uninit(&mut out));
                })
            } else {
                f64::NAN
            };
            let t_std = time(&mut |i| {
                for (o, &x) in out.iter_mut().zip(chunk(i)) {
                    *o = sf(std::hint::black_box(x));
                }
            });
            println!(
                "{name:8} avx2 {t_avx2:6.2} ns  avx512 {t_avx512:6.2} ns  std {t_std:6.2} ns  \
                 speedup avx2 {:5.1}x",
                t_std / t_avx2
            );
        }
        let ys: Vec<f64> = (0..n).map(|_| rng.uniform(-20.0, 20.0)).collect();
        let xs: Vec<f64> = (0..n).map(|_| rng.uniform(-20.0, 20.0)).collect();
        let mut out = vec![0.0; block];
        let chunk = |v: &[f64], i: usize| v[i * block..][..block].to_vec();
        let (yc, xc) = (chunk(&ys, 0), chunk(&xs, 0));
        // SAFETY: avx2 and fma were detected above.
        let t_avx2 = time(&mut |_| unsafe {
            wide::run2_avx2(
                &yc,
                &xc,
                &Block::line(out.len()),
                as_uninit(&mut out),
                &Atan2,
            );
        });
        let t_avx512 = if avx512 {
            // SAFETY: avx512f, avx512dq (and avx2, fma) were detected above.
            time(&mut |_| unsafe {
                wide::run2_avx512(
                    &yc,
                    &xc,
                    &Block::line(out.len()),
                    as_uninit(&mut out),
                    &Atan2,
                );
            })
        } else {
            f64::NAN
        };
        let t_std = time(&mut |_| {
            for ((o, &y), &x) in out.iter_mut().zip(&yc).zip(&xc) {
                *o = std::hint::black_box(y).atan2(x);
            }
        });
        println!(
            "atan2    avx2 {t_avx2:6.2} ns  avx512 {t_avx512:6.2} ns  std {t_std:6.2} ns  \
             speedup avx2 {:5.1}x",
            t_std / t_avx2
        );
    }

    /// A unary function: its scalar form and the engine's loop over a slice for each
    /// instruction set (the SIMD ones to call only where the CPU has the features).
    #[derive(Clone, Copy)]
    struct Unary {
        scalar: fn(f64) -> f64,
        #[cfg(target_arch = "x86_64")]
        avx2: unsafe fn(&[f64], &mut [MaybeUninit<f64>]),
        #[cfg(target_arch = "x86_64")]
        avx512: unsafe fn(&[f64], &mut [MaybeUninit<f64>]),
        dispatch: fn(&[f64], &mut [f64]),
    }
    macro_rules! unary_table {
        ($($name:literal => $k:ident),* $(,)?) => {
            fn all_unary() -> Vec<(&'static str, Unary)> {
                vec![$(($name, Unary {
                    scalar: |x| $k.call(x),
                    #[cfg(target_arch = "x86_64")]
                    avx2: |s, d| {
                        // SAFETY: `Unary`'s contract: the caller checked avx2 and fma
                        unsafe { wide::run1_avx2(s, &Block::line(d.len()), d, &$k) }
                    },
                    #[cfg(target_arch = "x86_64")]
                    avx512: |s, d| {
                        // SAFETY: `Unary`'s contract: the caller checked avx512f, avx512dq,
                        // avx2 and fma
                        unsafe { wide::run1_avx512(s, &Block::line(d.len()), d, &$k) }
                    },
                    dispatch: |s, d| map_into(&$k, s, d),
                })),*]
            }
        };
    }
    unary_table! {
        "exp" => Exp, "exp2" => Exp2, "expm1" => Expm1, "log" => Log, "log1p" => Log1p,
        "log2" => Log2, "log10" => Log10, "sin" => Sin, "cos" => Cos, "tan" => Tan,
        "tanh" => Tanh, "sigmoid" => Sigmoid, "erf" => Erf, "erfc" => Erfc, "atan" => Atan,
        "asin" => Asin, "acos" => Acos, "sinh" => Sinh, "cosh" => Cosh, "asinh" => Asinh,
        "acosh" => Acosh, "atanh" => Atanh,
    }
}
