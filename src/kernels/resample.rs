//! Resampling along one dim, the passes of `interpolate`: each output position is a weighted
//! sum of a few input positions (its taps), and the adjoint scatters an output gradient back
//! onto those positions. Tensors are seen as (outer, positions, inner), row-major.

use std::mem::MaybeUninit;

use super::parallel::map_blocks;
use super::simd::Real;
use super::{par_ok, PAR_THRESHOLD};
use crate::error::Result;
use crate::storage::{alloc, try_vec, Elem};

/// The taps of one dim: output `i` is `sum_k weight[k * outs + i] * input[index[k * outs + i]]`
/// (weight 1 when there are no weights). Every index is below `ins`.
pub struct Taps<'a, T> {
    pub index: &'a [usize],
    pub weight: Option<&'a [T]>,
    pub ins: usize,
    pub outs: usize,
}

impl<T> Taps<'_, T> {
    fn count(&self) -> usize {
        self.index.len().checked_div(self.outs).unwrap_or(0)
    }
}

/// Runs `fill(first block, blocks)` over `out` cut into blocks of `block` elements: split
/// across threads when there are several blocks and `work` is worth it.
fn by_blocks<T: Send>(
    out: &mut [T],
    block: usize,
    work: usize,
    fill: &(dyn Fn(usize, &mut [T]) + Sync),
) {
    let blocks = out.len().checked_div(block).unwrap_or(0);
    if blocks > 1 && par_ok(work, PAR_THRESHOLD) {
        map_blocks(out, block, fill);
    } else if blocks > 0 {
        fill(0, out);
    }
}

/// `x` (outer, ins, inner) resampled to (outer, outs, inner).
pub fn resample<T: Real + Elem>(
    x: &[T],
    outer: usize,
    inner: usize,
    taps: &Taps<'_, T>,
) -> Result<Vec<T>> {
    let (ins, outs, k) = (taps.ins, taps.outs, taps.count());
    let block = outs * inner;
    let n = outer * block;
    // not zeroed first: every element is written below (one memory pass instead of two)
    let mut out = alloc::<T>(n)?;
    let fill = |b0: usize, chunk: &mut [MaybeUninit<T>]| {
        for (j, dst) in chunk.chunks_mut(block.max(1)).enumerate() {
            let src = &x[(b0 + j) * ins * inner..(b0 + j + 1) * ins * inner];
            if inner == 1 {
                gather_row(src, dst, taps, k);
                continue;
            }
            for (i, row) in dst.chunks_mut(inner).enumerate() {
                let first = &src[taps.index[i] * inner..][..inner];
                let w0 = taps.weight.map(|w| w[i]);
                for (o, &v) in row.iter_mut().zip(first) {
                    o.write(w0.map_or(v, |w| w * v));
                }
                // SAFETY: every element of `row` was written just above, and MaybeUninit<T>
                // has T's layout.
                let row = unsafe { &mut *(row as *mut [MaybeUninit<T>] as *mut [T]) };
                for t in 1..k {
                    let from = &src[taps.index[t * outs + i] * inner..][..inner];
                    match taps.weight {
                        None => row.iter_mut().zip(from).for_each(|(o, &v)| *o = *o + v),
                        Some(w) => {
                            let w = w[t * outs + i];
                            row.iter_mut().zip(from).for_each(|(o, &v)| *o = *o + w * v)
                        }
                    }
                }
            }
        }
    };
    by_blocks(
        &mut out.spare_capacity_mut()[..n],
        block,
        n * k.max(1),
        &fill,
    );
    // SAFETY: `by_blocks` ran `fill` over every block of the n elements (n is a whole number
    // of blocks), and `fill` writes each element of each block.
    unsafe { out.set_len(n) };
    Ok(out)
}

/// One row resampled along its own elements (inner 1): a gather per output, tap by tap over
/// the row (each tap's indices and weights zipped with the outputs).
fn gather_row<T: Real>(src: &[T], dst: &mut [MaybeUninit<T>], taps: &Taps<'_, T>, k: usize) {
    let outs = taps.outs;
    let tap = |t: usize| &taps.index[t * outs..(t + 1) * outs];
    let weight = |t: usize| taps.weight.map(|w| &w[t * outs..(t + 1) * outs]);
    match weight(0) {
        None => {
            for (o, &i) in dst.iter_mut().zip(tap(0)) {
                o.write(src[i]);
            }
        }
        Some(w) => {
            for ((o, &i), &w) in dst.iter_mut().zip(tap(0)).zip(w) {
                o.write(w * src[i]);
            }
        }
    }
    // SAFETY: every element of `dst` was written just above (the first tap covers all `outs`
    // outputs), and MaybeUninit<T> has T's layout.
    let dst = unsafe { &mut *(dst as *mut [MaybeUninit<T>] as *mut [T]) };
    for t in 1..k {
        match weight(t) {
            None => {
                for (o, &i) in dst.iter_mut().zip(tap(t)) {
                    *o = *o + src[i];
                }
            }
            Some(w) => {
                for ((o, &i), &w) in dst.iter_mut().zip(tap(t)).zip(w) {
                    *o = *o + w * src[i];
                }
            }
        }
    }
}

/// The adjoint of `resample`: `g` (outer, outs, inner) scattered onto (outer, ins, inner),
/// each output position's gradient times its tap weights added at the taps.
pub fn resample_adjoint<T: Real + Elem>(
    g: &[T],
    outer: usize,
    inner: usize,
    taps: &Taps<'_, T>,
) -> Result<Vec<T>> {
    let (ins, outs, k) = (taps.ins, taps.outs, taps.count());
    let block = ins * inner;
    // zeroed: the scatter adds into it
    let mut out = try_vec::<T>(outer * block)?;
    let fill = |b0: usize, chunk: &mut [T]| {
        for (j, dst) in chunk.chunks_mut(block.max(1)).enumerate() {
            let src = &g[(b0 + j) * outs * inner..(b0 + j + 1) * outs * inner];
            for t in 0..k {
                let index = &taps.index[t * outs..(t + 1) * outs];
                let weight = taps.weight.map(|w| &w[t * outs..(t + 1) * outs]);
                for (i, &at) in index.iter().enumerate() {
                    let from = &src[i * inner..(i + 1) * inner];
                    let row = &mut dst[at * inner..(at + 1) * inner];
                    match weight {
                        None => row.iter_mut().zip(from).for_each(|(o, &v)| *o = *o + v),
                        Some(w) => {
                            let w = w[i];
                            row.iter_mut().zip(from).for_each(|(o, &v)| *o = *o + w * v)
                        }
                    }
                }
            }
        }
    };
    by_blocks(&mut out, block, outer * outs * inner * k.max(1), &fill);
    Ok(out)
}

// ---------------------------------------------------------------- tap sums (grid_sample)

/// The taps of a sampler: for batch item `n` and tap `t`, the points `p` whose tap falls
/// inside the row of `len` elements and its position there (the same for every channel); a tap
/// outside reads 0 and takes no gradient. `starts[t * batch + n]..starts[t * batch + n + 1]`
/// are the entries of (t, n) in `point` (increasing) and `at`.
pub struct TapIndex<'a> {
    pub point: &'a [usize],
    pub at: &'a [usize],
    pub starts: &'a [usize],
    pub taps: usize,
    pub batch: usize,
    pub points: usize,
    pub len: usize,
}

impl TapIndex<'_> {
    /// The (points, positions) of tap `t` of batch item `n`.
    fn entries(&self, t: usize, n: usize) -> (&[usize], &[usize]) {
        let r = self.starts[t * self.batch + n]..self.starts[t * self.batch + n + 1];
        (&self.point[r.clone()], &self.at[r])
    }
}

/// `out[n, c, p] = sum_t w[t, n, p] * x[n, c, at]` over the taps of each point inside: `x`
/// (batch, channels, len), `w` (taps, batch, points), the result (batch, channels, points).
pub fn tap_sum<T: Real + Elem>(
    x: &[T],
    w: &[T],
    ix: &TapIndex<'_>,
    channels: usize,
) -> Result<Vec<T>> {
    let (len, points) = (ix.len, ix.points);
    let n_out = ix.batch * channels * points;
    let mut out = try_vec::<T>(n_out)?;
    let fill = |r0: usize, rows: &mut [T]| {
        for (j, row) in rows.chunks_mut(points.max(1)).enumerate() {
            let (n, c) = ((r0 + j) / channels, (r0 + j) % channels);
            let src = &x[(n * channels + c) * len..][..len];
            for t in 0..ix.taps {
                let wt = &w[(t * ix.batch + n) * points..][..points];
                let (pts, at) = ix.entries(t, n);
                for (&p, &i) in pts.iter().zip(at) {
                    row[p] = row[p] + wt[p] * src[i];
                }
            }
        }
    };
    by_blocks(&mut out, points, n_out * ix.taps.max(1), &fill);
    Ok(out)
}

/// The adjoint of `tap_sum` in `x`: each output `g[n, c, p]` times its taps' weights added at
/// their positions, (batch, channels, len).
pub fn tap_scatter<T: Real + Elem>(
    g: &[T],
    w: &[T],
    ix: &TapIndex<'_>,
    channels: usize,
) -> Result<Vec<T>> {
    let (len, points) = (ix.len, ix.points);
    let mut out = try_vec::<T>(ix.batch * channels * len)?;
    let fill = |r0: usize, rows: &mut [T]| {
        for (j, row) in rows.chunks_mut(len.max(1)).enumerate() {
            let (n, c) = ((r0 + j) / channels, (r0 + j) % channels);
            let gr = &g[(n * channels + c) * points..][..points];
            for t in 0..ix.taps {
                let wt = &w[(t * ix.batch + n) * points..][..points];
                let (pts, at) = ix.entries(t, n);
                for (&p, &i) in pts.iter().zip(at) {
                    row[i] = row[i] + gr[p] * wt[p];
                }
            }
        }
    };
    let work = ix.batch * channels * points * ix.taps.max(1);
    by_blocks(&mut out, len, work, &fill);
    Ok(out)
}

/// The adjoint of `tap_sum` in `w`: `out[t, n, p] = sum_c g[n, c, p] * x[n, c, at]` (0 for a
/// tap outside).
pub fn tap_dot<T: Real + Elem>(
    g: &[T],
    x: &[T],
    ix: &TapIndex<'_>,
    channels: usize,
) -> Result<Vec<T>> {
    let (len, points) = (ix.len, ix.points);
    let mut out = try_vec::<T>(ix.taps * ix.batch * points)?;
    let fill = |r0: usize, rows: &mut [T]| {
        for (j, row) in rows.chunks_mut(points.max(1)).enumerate() {
            let (t, n) = ((r0 + j) / ix.batch, (r0 + j) % ix.batch);
            let (pts, at) = ix.entries(t, n);
            for c in 0..channels {
                let src = &x[(n * channels + c) * len..][..len];
                let gr = &g[(n * channels + c) * points..][..points];
                for (&p, &i) in pts.iter().zip(at) {
                    row[p] = row[p] + gr[p] * src[i];
                }
            }
        }
    };
    let work = ix.batch * channels * points * ix.taps.max(1);
    by_blocks(&mut out, points, work, &fill);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjoint_is_the_transpose() {
        // 2 rows of 3 positions, inner 2, resampled to 4 with two weighted taps
        let x: Vec<f64> = (0..12).map(|v| v as f64 * 0.5 - 1.0).collect();
        let index = [0, 0, 1, 2, 1, 1, 2, 2];
        let weight = [0.25, 1.0, 0.5, 0.75, 0.75, 0.0, 0.5, 0.25];
        let taps = Taps {
            index: &index,
            weight: Some(&weight[..]),
            ins: 3,
            outs: 4,
        };
        let y = resample(&x, 2, 2, &taps).unwrap();
        assert_eq!(y.len(), 16);
        // y[0, 0, :] = 0.25 x[0, 0, :] + 0.75 x[0, 1, :]
        assert_eq!(y[0], 0.25 * x[0] + 0.75 * x[2]);
        assert_eq!(y[1], 0.25 * x[1] + 0.75 * x[3]);
        // <y, g> = <x, adjoint(g)> for any g
        let g: Vec<f64> = (0..16).map(|v| (v as f64).sin()).collect();
        let xg = resample_adjoint(&g, 2, 2, &taps).unwrap();
        let lhs: f64 = y.iter().zip(&g).map(|(a, b)| a * b).sum();
        let rhs: f64 = x.iter().zip(&xg).map(|(a, b)| a * b).sum();
        assert!((lhs - rhs).abs() < 1e-12, "{lhs} vs {rhs}");
        // inner 1, no weights: a gather
        let taps = Taps::<f64> {
            index: &[2, 0, 0],
            weight: None,
            ins: 3,
            outs: 3,
        };
        assert_eq!(
            resample(&[1.0, 2.0, 3.0], 1, 1, &taps).unwrap(),
            [3.0, 1.0, 1.0]
        );
        assert_eq!(
            resample_adjoint(&[1.0, 2.0, 3.0], 1, 1, &taps).unwrap(),
            [5.0, 0.0, 1.0]
        );
    }

    #[test]
    fn tap_maps_are_adjoint() {
        // 2 batch items, 3 channels, rows of 4, 5 points, 2 taps (some outside: index -1)
        let (b, c, len, p, t) = (2, 3, 4, 5, 2);
        let index: Vec<i64> = (0..t * b * p).map(|k| (k as i64 * 7 % 5) - 1).collect();
        let (mut point, mut at, mut starts) = (vec![], vec![], vec![0]);
        for row in index.chunks(p) {
            for (q, &i) in row.iter().enumerate().filter(|(_, &i)| i >= 0) {
                point.push(q);
                at.push(i as usize);
            }
            starts.push(point.len());
        }
        let ix = TapIndex {
            point: &point,
            at: &at,
            starts: &starts,
            taps: t,
            batch: b,
            points: p,
            len,
        };
        let x: Vec<f64> = (0..b * c * len).map(|k| (k as f64 * 0.37).sin()).collect();
        let w: Vec<f64> = (0..t * b * p).map(|k| (k as f64 * 0.91).cos()).collect();
        let g: Vec<f64> = (0..b * c * p).map(|k| (k as f64 * 0.53).sin()).collect();
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
        // <g, A(x, w)> = <B(g, w), x> = <C(g, x), w>
        let a = dot(&g, &tap_sum(&x, &w, &ix, c).unwrap());
        let bx = dot(&tap_scatter(&g, &w, &ix, c).unwrap(), &x);
        let cw = dot(&tap_dot(&g, &x, &ix, c).unwrap(), &w);
        assert!(
            (a - bx).abs() < 1e-12 && (a - cw).abs() < 1e-12,
            "{a} {bx} {cw}"
        );
        // one entry by hand: index -1 reads 0
        let y = tap_sum(&x, &w, &ix, c).unwrap();
        let want: f64 = (0..t)
            .map(|k| {
                let i = index[k * b * p];
                if i < 0 {
                    0.0
                } else {
                    w[k * b * p] * x[i as usize]
                }
            })
            .sum();
        assert!((y[0] - want).abs() < 1e-15);
    }
}
