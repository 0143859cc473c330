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

/// Mean and rstd of `x` (f64 accumulation, two passes).
fn stats<T: Elem>(x: impl Iterator<Item = T> + Clone, n: usize, eps: f64) -> (f64, f64) {
    let mean = x.clone().map(|v| v.to_f64()).sum::<f64>() / n as f64;
    let var = x.map(|v| (v.to_f64() - mean).powi(2)).sum::<f64>() / n as f64;
    (mean, 1.0 / (var + eps).sqrt())
}

/// Rows of length `n` normalized, each element `j` of a row scaled by `w[aff(j)]` and shifted by
/// `b[aff(j)]` (`aff(j) = j / inner` for group norm, `j` for layer norm). Returns (y, mean, rstd).
pub fn rows_forward<T: Real + Elem>(
    x: &[T],
    n: usize,
    eps: f64,
    w: Option<&[T]>,
    b: Option<&[T]>,
    aff: &(dyn Fn(usize, usize) -> usize + Sync),
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let rows = x.len().checked_div(n).unwrap_or(0);
    let mut y = vec![T::of(0.0); x.len()];
    let mut means = Vec::with_capacity(rows);
    let mut rstds = Vec::with_capacity(rows);
    for r in 0..rows {
        let xr = &x[r * n..(r + 1) * n];
        let (mean, rstd) = stats(xr.iter().copied(), n, eps);
        let (m, s) = (T::of(mean), T::of(rstd));
        for (j, (o, &v)) in y[r * n..(r + 1) * n].iter_mut().zip(xr).enumerate() {
            let mut t = (v - m) * s;
            if let Some(w) = w {
                t = t * w[aff(r, j)];
            }
            if let Some(b) = b {
                t = t + b[aff(r, j)];
            }
            *o = t;
        }
        means.push(m);
        rstds.push(s);
    }
    (y, means, rstds)
}

/// The backward of `rows_forward`: (dx, dw, db), dw/db of length `naff` (accumulated over rows).
#[allow(clippy::too_many_arguments)]
pub fn rows_backward<T: Real + Elem>(
    x: &[T],
    dy: &[T],
    n: usize,
    means: &[T],
    rstds: &[T],
    w: Option<&[T]>,
    naff: usize,
    aff: &(dyn Fn(usize, usize) -> usize + Sync),
) -> (Vec<T>, Vec<f64>, Vec<f64>) {
    let rows = means.len();
    let mut dx = vec![T::of(0.0); x.len()];
    let mut dw = vec![0.0f64; naff];
    let mut db = vec![0.0f64; naff];
    let mut dxh = vec![0.0f64; n];
    for r in 0..rows {
        let (m, s) = (means[r].to_f64(), rstds[r].to_f64());
        let xr = &x[r * n..(r + 1) * n];
        let dyr = &dy[r * n..(r + 1) * n];
        let (mut a, mut c) = (0.0, 0.0);
        for j in 0..n {
            let xh = (xr[j].to_f64() - m) * s;
            let g = dyr[j].to_f64();
            let k = aff(r, j);
            dw[k] += g * xh;
            db[k] += g;
            let d = g * w.map_or(1.0, |w| w[k].to_f64());
            dxh[j] = d;
            a += d;
            c += d * xh;
        }
        let (a, c) = (a / n as f64, c / n as f64);
        for (j, o) in dx[r * n..(r + 1) * n].iter_mut().enumerate() {
            let xh = (xr[j].to_f64() - m) * s;
            *o = T::of(s * (dxh[j] - a - xh * c));
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
        let aff = |_: usize, j: usize| j;
        let loss = |x: &[f64]| -> f64 {
            let (y, _, _) = rows_forward(x, 4, 1e-5, Some(&w), None, &aff);
            y.iter().zip(&dy).map(|(a, b)| a * b).sum()
        };
        let (_, m, s) = rows_forward(&x, 4, 1e-5, Some(&w), None, &aff);
        let (dx, _, _) = rows_backward(&x, &dy, 4, &m, &s, Some(&w), 4, &aff);
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
