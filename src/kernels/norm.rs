//! Normalization kernels over contiguous buffers: statistics, the normalized output and the
//! fused backward of layer norm, group norm and batch norm.
//!
//! All three normalize groups of elements: `y = (x - mean) * rstd * w + b` with
//! `rstd = 1 / sqrt(var + eps)` (biased variance). A buffer is seen as `outer x c x inner`:
//! - layer norm: one group per row (`c = 1`), the affine index is the position in the row;
//! - group norm: one group per (sample, group) row, the affine index is the channel;
//! - batch norm: one group per channel across `outer` and `inner`.
//!
//! Statistics are accumulated in f64. The backward is
//! `dx = rstd * (dxh - mean(dxh) - xhat * mean(dxh * xhat))` with `dxh = dy * w`.

use super::optim::Real;
use crate::storage::Elem;

/// `sum f(x_i)` in f64 over 8 independent lanes (vectorised; a single running sum would wait on
/// every addition).
#[inline(always)]
fn sum8<T: Copy>(x: &[T], f: impl Fn(T) -> f64) -> f64 {
    let mut acc = [0.0f64; 8];
    let chunks = x.chunks_exact(8);
    let rest: f64 = chunks.remainder().iter().map(|&v| f(v)).sum();
    for c in chunks {
        for i in 0..8 {
            acc[i] += f(c[i]);
        }
    }
    acc.iter().sum::<f64>() + rest
}

/// `sum a_i * b_i` in f64 over 8 lanes.
#[inline(always)]
fn dot8(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let rest: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f64>() + rest
}

/// Mean and rstd of each row of `n` elements (no output written).
pub fn row_stats<T: Real + Elem>(x: &[T], n: usize, eps: f64) -> (Vec<T>, Vec<T>) {
    let rows = x.len().checked_div(n).unwrap_or(0);
    (0..rows)
        .map(|r| {
            let (m, s) = stats(&x[r * n..(r + 1) * n], eps);
            (T::of(m), T::of(s))
        })
        .unzip()
}

/// Mean and rstd of `x` (f64 accumulation, two passes).
fn stats<T: Elem>(x: &[T], eps: f64) -> (f64, f64) {
    let n = x.len().max(1) as f64;
    let mean = sum8(x, |v| v.to_f64()) / n;
    let var = sum8(x, |v| {
        let d = v.to_f64() - mean;
        d * d
    }) / n;
    (mean, 1.0 / (var + eps).sqrt())
}

/// How a row's elements map to weight/bias entries.
#[derive(Clone, Copy, Debug)]
pub enum Affine {
    /// layer norm: element j of every row uses entry j
    Columns,
    /// group norm: a row (sample n, group g) is `cg` channels of `hw` elements; channel c of
    /// the row uses entry `g * cg + c`
    Channels { groups: usize, cg: usize, hw: usize },
}

impl Affine {
    /// The (start, len, entry) segments of row `r` that share one weight entry, or None for
    /// `Columns` (every element its own entry).
    fn segments(self, r: usize) -> Option<impl Iterator<Item = (usize, usize, usize)>> {
        match self {
            Affine::Columns => None,
            Affine::Channels { groups, cg, hw } => {
                Some((0..cg).map(move |c| (c * hw, hw, (r % groups) * cg + c)))
            }
        }
    }
}

/// Rows of length `n` normalized and scaled by `w`, shifted by `b` as `aff` maps them.
/// Returns (y, mean, rstd).
pub fn rows_forward<T: Real + Elem>(
    x: &[T],
    n: usize,
    eps: f64,
    w: Option<&[T]>,
    b: Option<&[T]>,
    aff: Affine,
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let rows = x.len().checked_div(n).unwrap_or(0);
    let mut y = vec![T::of(0.0); x.len()];
    let mut means = Vec::with_capacity(rows);
    let mut rstds = Vec::with_capacity(rows);
    for r in 0..rows {
        let xr = &x[r * n..(r + 1) * n];
        let yr = &mut y[r * n..(r + 1) * n];
        let (mean, rstd) = stats(xr, eps);
        let (m, s) = (T::of(mean), T::of(rstd));
        match aff.segments(r) {
            None => match (w, b) {
                (Some(w), Some(b)) => {
                    for (((o, &v), &wj), &bj) in yr.iter_mut().zip(xr).zip(w).zip(b) {
                        *o = (v - m) * s * wj + bj;
                    }
                }
                (Some(w), None) => {
                    for ((o, &v), &wj) in yr.iter_mut().zip(xr).zip(w) {
                        *o = (v - m) * s * wj;
                    }
                }
                (None, Some(b)) => {
                    for ((o, &v), &bj) in yr.iter_mut().zip(xr).zip(b) {
                        *o = (v - m) * s + bj;
                    }
                }
                (None, None) => {
                    for (o, &v) in yr.iter_mut().zip(xr) {
                        *o = (v - m) * s;
                    }
                }
            },
            Some(segs) => {
                for (start, len, k) in segs {
                    let scale = s * w.map_or(T::of(1.0), |w| w[k]);
                    let shift = b.map_or(T::of(0.0), |b| b[k]) - m * scale;
                    for (o, &v) in yr[start..start + len]
                        .iter_mut()
                        .zip(&xr[start..start + len])
                    {
                        *o = v * scale + shift;
                    }
                }
            }
        }
        means.push(m);
        rstds.push(s);
    }
    (y, means, rstds)
}

/// The backward of `rows_forward`: (dx, dw, db), dw/db of length `naff` (accumulated over rows),
/// compiled for the best instruction set the CPU has.
#[allow(clippy::too_many_arguments)]
pub fn rows_backward<T: Real + Elem>(
    x: &[T],
    dy: &[T],
    n: usize,
    means: &[T],
    rstds: &[T],
    w: Option<&[T]>,
    naff: usize,
    aff: Affine,
) -> (Vec<T>, Vec<f64>, Vec<f64>) {
    #[cfg(target_arch = "x86_64")]
    match super::simd::x86::level() {
        // SAFETY: level() returned Avx512 only after is_x86_feature_detected! confirmed
        // avx512f, avx512dq, avx2 and fma, the features the function enables.
        super::simd::x86::Level::Avx512 => {
            return unsafe { wide::rows_backward_avx512(x, dy, n, means, rstds, w, naff, aff) }
        }
        // SAFETY: level() returned Avx2 only after detecting avx2 and fma.
        super::simd::x86::Level::Avx2 => {
            return unsafe { wide::rows_backward_avx2(x, dy, n, means, rstds, w, naff, aff) }
        }
        super::simd::x86::Level::Base => {}
    }
    rows_backward_body(x, dy, n, means, rstds, w, naff, aff)
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use super::*;

    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub fn rows_backward_avx2<T: Real + Elem>(
        x: &[T],
        dy: &[T],
        n: usize,
        means: &[T],
        rstds: &[T],
        w: Option<&[T]>,
        naff: usize,
        aff: Affine,
    ) -> (Vec<T>, Vec<f64>, Vec<f64>) {
        rows_backward_body(x, dy, n, means, rstds, w, naff, aff)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub fn rows_backward_avx512<T: Real + Elem>(
        x: &[T],
        dy: &[T],
        n: usize,
        means: &[T],
        rstds: &[T],
        w: Option<&[T]>,
        naff: usize,
        aff: Affine,
    ) -> (Vec<T>, Vec<f64>, Vec<f64>) {
        rows_backward_body(x, dy, n, means, rstds, w, naff, aff)
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn rows_backward_body<T: Real + Elem>(
    x: &[T],
    dy: &[T],
    n: usize,
    means: &[T],
    rstds: &[T],
    w: Option<&[T]>,
    naff: usize,
    aff: Affine,
) -> (Vec<T>, Vec<f64>, Vec<f64>) {
    let rows = means.len();
    let mut dx = vec![T::of(0.0); x.len()];
    let mut dw = vec![0.0f64; naff];
    let mut db = vec![0.0f64; naff];
    let mut xh = vec![0.0f64; n];
    let mut dxh = vec![0.0f64; n];
    let entry = |r: usize, j: usize| match aff {
        Affine::Columns => j,
        Affine::Channels { groups, cg, hw } => (r % groups) * cg + j / hw.max(1),
    };
    for r in 0..rows {
        let (m, s) = (means[r].to_f64(), rstds[r].to_f64());
        let xr = &x[r * n..(r + 1) * n];
        let dyr = &dy[r * n..(r + 1) * n];
        for ((h, d), (&v, &g)) in xh.iter_mut().zip(dxh.iter_mut()).zip(xr.iter().zip(dyr)) {
            *h = (v.to_f64() - m) * s;
            *d = g.to_f64();
        }
        match aff {
            Affine::Columns => {
                for j in 0..n {
                    dw[j] += dxh[j] * xh[j];
                    db[j] += dxh[j];
                }
                if let Some(w) = w {
                    for (d, &wj) in dxh.iter_mut().zip(w) {
                        *d *= wj.to_f64();
                    }
                }
            }
            Affine::Channels { .. } => {
                for j in 0..n {
                    let k = entry(r, j);
                    dw[k] += dxh[j] * xh[j];
                    db[k] += dxh[j];
                    if let Some(w) = w {
                        dxh[j] *= w[k].to_f64();
                    }
                }
            }
        }
        let a = sum8(&dxh, |d| d) / n as f64;
        let c = dot8(&dxh, &xh) / n as f64;
        for ((o, &d), &h) in dx[r * n..(r + 1) * n].iter_mut().zip(&dxh).zip(&xh) {
            *o = T::of(s * (d - a - h * c));
        }
    }
    (dx, dw, db)
}

/// Batch norm statistics per channel of an `outer x c x inner` buffer: (mean, biased var).
pub fn channel_stats<T: Elem>(
    x: &[T],
    outer: usize,
    c: usize,
    inner: usize,
) -> (Vec<f64>, Vec<f64>) {
    let n = (outer * inner) as f64;
    let mut mean = vec![0.0; c];
    let mut var = vec![0.0; c];
    for o in 0..outer {
        for (ch, m) in mean.iter_mut().enumerate() {
            *m += x[(o * c + ch) * inner..][..inner]
                .iter()
                .map(|v| v.to_f64())
                .sum::<f64>();
        }
    }
    mean.iter_mut().for_each(|m| *m /= n);
    for o in 0..outer {
        for (ch, v) in var.iter_mut().enumerate() {
            let m = mean[ch];
            *v += x[(o * c + ch) * inner..][..inner]
                .iter()
                .map(|e| (e.to_f64() - m).powi(2))
                .sum::<f64>();
        }
    }
    var.iter_mut().for_each(|v| *v /= n);
    (mean, var)
}

/// `y = (x - mean[ch]) * rstd[ch] * w[ch] + b[ch]` over an `outer x c x inner` buffer.
#[allow(clippy::too_many_arguments)]
pub fn channel_affine<T: Real + Elem>(
    x: &[T],
    outer: usize,
    c: usize,
    inner: usize,
    mean: &[f64],
    rstd: &[f64],
    w: Option<&[T]>,
    b: Option<&[T]>,
) -> Vec<T> {
    let mut y = Vec::with_capacity(x.len());
    for o in 0..outer {
        for ch in 0..c {
            let scale = rstd[ch] * w.map_or(1.0, |w| w[ch].to_f64());
            let shift = b.map_or(0.0, |b| b[ch].to_f64()) - mean[ch] * scale;
            let (scale, shift) = (T::of(scale), T::of(shift));
            y.extend(
                x[(o * c + ch) * inner..][..inner]
                    .iter()
                    .map(|&v| v * scale + shift),
            );
        }
    }
    y
}

/// Batch norm backward per channel: (dx, dw, db). With `training`, the statistics depend on x
/// (the full formula); otherwise they are constants and `dx = dy * w * rstd`.
#[allow(clippy::too_many_arguments)]
pub fn channel_backward<T: Real + Elem>(
    x: &[T],
    dy: &[T],
    outer: usize,
    c: usize,
    inner: usize,
    mean: &[f64],
    rstd: &[f64],
    w: Option<&[T]>,
    training: bool,
) -> (Vec<T>, Vec<f64>, Vec<f64>) {
    let n = (outer * inner) as f64;
    let mut sum_dy = vec![0.0; c];
    let mut sum_dy_xh = vec![0.0; c];
    for o in 0..outer {
        for ch in 0..c {
            let base = (o * c + ch) * inner;
            let (m, s) = (mean[ch], rstd[ch]);
            for (g, v) in dy[base..base + inner].iter().zip(&x[base..base + inner]) {
                let g = g.to_f64();
                sum_dy[ch] += g;
                sum_dy_xh[ch] += g * (v.to_f64() - m) * s;
            }
        }
    }
    let mut dx = Vec::with_capacity(x.len());
    for o in 0..outer {
        for ch in 0..c {
            let base = (o * c + ch) * inner;
            let (m, s) = (mean[ch], rstd[ch]);
            let wk = w.map_or(1.0, |w| w[ch].to_f64());
            let (a, b) = (sum_dy[ch] / n, sum_dy_xh[ch] / n);
            dx.extend(
                dy[base..base + inner]
                    .iter()
                    .zip(&x[base..base + inner])
                    .map(|(g, v)| {
                        let g = g.to_f64();
                        T::of(if training {
                            wk * s * (g - a - (v.to_f64() - m) * s * b)
                        } else {
                            wk * s * g
                        })
                    }),
            );
        }
    }
    (dx, sum_dy_xh, sum_dy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_backward_matches_finite_differences() {
        let x: Vec<f64> = (0..12).map(|i| ((i * 7 % 5) as f64 * 0.3).sin()).collect();
        let w: Vec<f64> = (0..4).map(|i| 1.0 + i as f64 * 0.1).collect();
        let dy: Vec<f64> = (0..12).map(|i| (i as f64 * 0.7).cos()).collect();
        let aff = Affine::Columns;
        let loss = |x: &[f64]| -> f64 {
            let (y, _, _) = rows_forward(x, 4, 1e-5, Some(&w), None, aff);
            y.iter().zip(&dy).map(|(a, b)| a * b).sum()
        };
        let (_, m, s) = rows_forward(&x, 4, 1e-5, Some(&w), None, aff);
        let (dx, _, _) = rows_backward(&x, &dy, 4, &m, &s, Some(&w), 4, aff);
        for i in 0..x.len() {
            let mut xp = x.clone();
            xp[i] += 1e-6;
            let mut xm = x.clone();
            xm[i] -= 1e-6;
            let fd = (loss(&xp) - loss(&xm)) / 2e-6;
            assert!((fd - dx[i]).abs() < 1e-6, "{i}: {fd} {}", dx[i]);
        }
    }
}
