//! Samplers over a random stream: multinomial rows, Poisson, Bernoulli and the scalar
//! distributions of the in-place fills (`exponential_`, `geometric_`, `log_normal_`, `cauchy_`).
//! Pure functions of the probabilities and an `Rng`; the argument checks are the caller's.

use crate::creation::Rng;

/// One Exp(1) draw.
fn exp1(r: &mut Rng) -> f64 {
    -(1.0 - r.uniform()).ln()
}

/// `n` category indices drawn from the (unnormalised, non-negative, finite, not all zero)
/// weights `p`, appended to `out`. With replacement: inverse CDF by binary search. Without:
/// the `n` largest of `p_i / q_i` with `q_i ~ Exp(1)` (PyTorch's Gumbel-top-k form), in
/// decreasing order.
pub fn multinomial_row(p: &[f64], n: usize, replacement: bool, r: &mut Rng, out: &mut Vec<i64>) {
    if replacement {
        let mut cum = Vec::with_capacity(p.len());
        let mut total = 0.0;
        for &x in p {
            total += x;
            cum.push(total);
        }
        // the last category of positive weight, for draws that round up to the total
        let last = p.iter().rposition(|&x| x > 0.0).unwrap_or(0);
        for _ in 0..n {
            let u = r.uniform() * total;
            let i = cum.partition_point(|&c| c <= u);
            out.push(i.min(last) as i64);
        }
        return;
    }
    if n == 1 {
        let (mut best, mut best_key) = (0usize, f64::NEG_INFINITY);
        for (i, &x) in p.iter().enumerate() {
            let key = x / exp1(r);
            if key > best_key {
                (best, best_key) = (i, key);
            }
        }
        out.push(best as i64);
        return;
    }
    let mut keyed: Vec<(f64, usize)> = p
        .iter()
        .enumerate()
        .map(|(i, &x)| (x / exp1(r), i))
        .collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    out.extend(keyed[..n].iter().map(|&(_, i)| i as i64));
}

/// `ln Γ(x)` for `x >= 1` (Lanczos, g = 7, 9 terms: ~1e-15 relative).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, &c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * std::f64::consts::TAU.ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// One Poisson(`lam`) draw: multiplication of uniforms below 10, Hörmann's PTRS
/// (transformed rejection with squeeze) above.
pub fn poisson(lam: f64, r: &mut Rng) -> f64 {
    if lam <= 0.0 {
        return 0.0;
    }
    if lam.is_infinite() {
        return f64::INFINITY;
    }
    if lam < 10.0 {
        let limit = (-lam).exp();
        let mut k = 0.0;
        let mut prod = r.uniform();
        while prod > limit {
            k += 1.0;
            prod *= r.uniform();
        }
        return k;
    }
    let slam = lam.sqrt();
    let loglam = lam.ln();
    let b = 0.931 + 2.53 * slam;
    let a = -0.059 + 0.02483 * b;
    let invalpha = 1.1239 + 1.1328 / (b - 3.4);
    let vr = 0.9277 - 3.6224 / (b - 2.0);
    loop {
        let u = r.uniform() - 0.5;
        let v = r.uniform();
        let us = 0.5 - u.abs();
        let k = ((2.0 * a / us + b) * u + lam + 0.43).floor();
        if us >= 0.07 && v <= vr {
            return k;
        }
        if k < 0.0 || (us < 0.013 && v > us) {
            continue;
        }
        if v.ln() + invalpha.ln() - (a / (us * us) + b).ln()
            <= -lam + k * loglam - ln_gamma(k + 1.0)
        {
            return k;
        }
    }
}

/// A scalar-parameter distribution of the in-place fills and `bernoulli(p=float)`.
#[derive(Clone, Copy, Debug)]
pub enum Scalar2 {
    /// 1 with probability p, else 0
    Bernoulli(f64),
    /// rate lambda
    Exponential(f64),
    /// trials up to the first success (1, 2, ...), success probability p
    Geometric(f64),
    /// exp(N(mean, std))
    LogNormal(f64, f64),
    /// median, sigma
    Cauchy(f64, f64),
}

/// One draw of `d`.
pub fn draw(d: Scalar2, r: &mut Rng) -> f64 {
    match d {
        Scalar2::Bernoulli(p) => f64::from(u8::from(r.uniform() < p)),
        Scalar2::Exponential(l) => exp1(r) / l,
        Scalar2::Geometric(p) => {
            let u = 1.0 - r.uniform(); // (0, 1]
            (u.ln() / (-p).ln_1p()).ceil().max(1.0)
        }
        Scalar2::LogNormal(m, s) => (m + s * r.normal()).exp(),
        Scalar2::Cauchy(m, s) => m + s * (std::f64::consts::PI * (r.uniform() - 0.5)).tan(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_var(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let m = xs.iter().sum::<f64>() / n;
        (m, xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n)
    }

    #[test]
    fn poisson_moments() {
        let mut r = Rng::new(1);
        for lam in [0.5, 3.0, 12.0, 400.0] {
            let xs: Vec<f64> = (0..40_000).map(|_| poisson(lam, &mut r)).collect();
            let (m, v) = mean_var(&xs);
            assert!((m - lam).abs() < 0.05 * lam.max(1.0), "lam {lam}: mean {m}");
            assert!((v - lam).abs() < 0.1 * lam.max(1.0), "lam {lam}: var {v}");
        }
    }

    #[test]
    fn ln_gamma_matches_factorials() {
        let mut f = 1.0f64;
        for k in 1..30 {
            f *= k as f64;
            assert!((ln_gamma(k as f64 + 1.0) - f.ln()).abs() < 1e-10);
        }
    }

    #[test]
    fn multinomial_frequencies_and_no_repeats() {
        let mut r = Rng::new(2);
        let p = [1.0, 0.0, 3.0];
        let mut out = Vec::new();
        multinomial_row(&p, 20_000, true, &mut r, &mut out);
        assert!(out.iter().all(|&i| i != 1));
        let frac = out.iter().filter(|&&i| i == 2).count() as f64 / 20_000.0;
        assert!((frac - 0.75).abs() < 0.02);
        for _ in 0..100 {
            let mut o = Vec::new();
            multinomial_row(&[1.0, 2.0, 3.0, 4.0], 4, false, &mut r, &mut o);
            o.sort_unstable();
            assert_eq!(o, [0, 1, 2, 3]);
        }
    }

    #[test]
    fn geometric_support_starts_at_one() {
        let mut r = Rng::new(3);
        let xs: Vec<f64> = (0..20_000)
            .map(|_| draw(Scalar2::Geometric(0.25), &mut r))
            .collect();
        assert!(xs.iter().all(|&x| x >= 1.0 && x.fract() == 0.0));
        let (m, _) = mean_var(&xs);
        assert!((m - 4.0).abs() < 0.1);
    }
}
