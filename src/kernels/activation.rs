//! Activation backward kernels: the gradient of the input from the incoming gradient `g` and
//! the saved input `x` (or output `y`), one pass each, as PyTorch's fused `*_backward` kernels.

use super::simd::Real;

#[inline(always)]
pub fn tanh_grad<R: Real>(g: R, y: R) -> R {
    g * (R::c(1.0) - y * y)
}

#[inline(always)]
pub fn sigmoid_grad<R: Real>(g: R, y: R) -> R {
    g * y * (R::c(1.0) - y)
}

#[inline(always)]
pub fn silu_grad<R: Real>(g: R, x: R) -> R {
    let s = x.sigmoid();
    g * s * (R::c(1.0) + x * (R::c(1.0) - s))
}

/// d/dx x Phi(x) = Phi(x) + x phi(x).
#[inline(always)]
pub fn gelu_grad<R: Real>(g: R, x: R) -> R {
    let cdf = R::c(0.5) * (R::c(1.0) + (x * R::c(std::f64::consts::FRAC_1_SQRT_2)).erf());
    let pdf = (R::c(-0.5) * x * x).exp() * R::c(0.398_942_280_401_432_7);
    g * (cdf + x * pdf)
}

/// The tanh form: u = K (x + 0.044715 x^3), d = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) u'.
#[inline(always)]
pub fn gelu_tanh_grad<R: Real>(g: R, x: R) -> R {
    const K: f64 = 0.797_884_560_802_865_4; // sqrt(2/pi)
    let x2 = x * x;
    let t = (R::c(K) * (x + R::c(0.044715) * x2 * x)).tanh();
    let du = R::c(K) * (R::c(1.0) + R::c(3.0 * 0.044715) * x2);
    g * (R::c(0.5) * (R::c(1.0) + t) + R::c(0.5) * x * (R::c(1.0) - t * t) * du)
}

#[inline(always)]
pub fn sin_grad<R: Real>(g: R, x: R) -> R {
    g * x.cos()
}

#[inline(always)]
pub fn cos_grad<R: Real>(g: R, x: R) -> R {
    -(g * x.sin())
}

#[inline(always)]
pub fn erf_grad<R: Real>(g: R, x: R) -> R {
    g * R::c(std::f64::consts::FRAC_2_SQRT_PI) * (-(x * x)).exp()
}

#[inline(always)]
pub fn log_grad<R: Real>(g: R, x: R) -> R {
    g / x
}

#[inline(always)]
pub fn log1p_grad<R: Real>(g: R, x: R) -> R {
    g / (x + R::c(1.0))
}

#[inline(always)]
pub fn sqrt_grad<R: Real>(g: R, y: R) -> R {
    g / (y * R::c(2.0))
}

#[inline(always)]
pub fn rsqrt_grad<R: Real>(g: R, y: R) -> R {
    R::c(-0.5) * g * y * y * y
}

#[inline(always)]
pub fn reciprocal_grad<R: Real>(g: R, y: R) -> R {
    -(g * (y * y))
}

#[inline(always)]
pub fn exp_grad<R: Real>(g: R, y: R) -> R {
    g * y
}
