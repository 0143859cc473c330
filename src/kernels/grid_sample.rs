//! grid_sample's sampler (ATen's GridSampler): each output point reads the taps around its
//! position in the input, weighted; the backward scatters the output gradient onto the taps
//! and differentiates the weights in the position. Pure functions over contiguous slices:
//! input (N, C, *sizes), grid (N, P, dims) whose coordinate k runs along spatial dim
//! `dims - 1 - k` (x along W), output (N, C, P).
//!
//! A point's taps are the product of one short list per spatial dim (`Axis`: 2 positions for
//! bilinear, 4 for bicubic, 1 for nearest), each position with its factor and the factor's
//! derivative in the grid coordinate. Positions outside the input read 0 and are dropped.

use super::parallel::{map_each, num_threads, par_ok, PAR_THRESHOLD_COSTLY};
use super::simd::{vectorized, Real, Vectorize};
use crate::error::Result;
use crate::storage::{try_vec, Elem};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Bilinear,
    Nearest,
    Bicubic,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding {
    Zeros,
    Border,
    Reflection,
}

/// What is sampled where: the caller checks that the slices have these sizes.
#[derive(Clone, Debug)]
pub struct Geometry {
    pub mode: Mode,
    pub padding: Padding,
    pub align_corners: bool,
    pub batch: usize,
    pub channels: usize,
    /// the input's spatial sizes, (H, W) or (D, H, W)
    pub sizes: Vec<usize>,
    /// sampling points per batch item
    pub points: usize,
}

impl Geometry {
    fn len(&self) -> usize {
        self.sizes.iter().product()
    }
    fn dims(&self) -> usize {
        self.sizes.len()
    }
    /// Taps per point and spatial dim.
    pub fn per_dim(&self) -> usize {
        match self.mode {
            Mode::Bilinear => 2,
            Mode::Nearest => 1,
            Mode::Bicubic => 4,
        }
    }
    /// Taps per point.
    pub fn taps(&self) -> usize {
        self.per_dim().pow(self.dims() as u32)
    }
}

/// ATen's grid_sampler_unnormalize, in the form of its vectorised CPU kernel: [-1, 1] to a
/// pixel position, and its derivative.
#[inline(always)]
fn unnormalize<T: Real>(c: T, size: usize, align_corners: bool) -> (T, T) {
    let s = T::of(size as f64);
    let (one, half) = (T::c(1.0), T::c(0.5));
    if align_corners {
        let f = (s - one) * half;
        ((c + one) * f, f)
    } else {
        let f = s * half;
        ((c + one) * f - half, f)
    }
}

/// nearbyint (halves to even), without the library call `round_ties_even` is in the base build.
#[inline(always)]
fn round_half_even<T: Real + Elem>(x: T) -> T {
    let (r, half, one) = (x.floor(), T::c(0.5), T::c(1.0));
    let d = x - r; // exact
    let odd = (r * half).floor() * T::c(2.0) != r;
    if (d > half) | ((d == half) & odd) {
        r + one
    } else {
        r
    }
}

/// ATen's clip_coordinates_set_grad: clamped to [0, size - 1], the borders counting as
/// outside (derivative 0 there).
#[inline(always)]
fn clip<T: Real>(x: T, size: usize) -> (T, T) {
    let (zero, hi) = (T::c(0.0), T::of(size as f64 - 1.0));
    if x <= zero {
        (zero, zero)
    } else if x >= hi {
        (hi, zero)
    } else {
        (x, T::c(1.0))
    }
}

/// ATen's reflect_coordinates_set_grad: `x` mirrored at `low` and `high` (given doubled) until
/// it falls between them, and the derivative (+1 or -1).
#[inline(always)]
fn reflect<T: Real + Elem>(x: T, twice_low: f64, twice_high: f64) -> (T, T) {
    let zero = T::c(0.0);
    if twice_low == twice_high {
        return (zero, zero);
    }
    let (low, span) = (
        T::of(twice_low / 2.0),
        T::of((twice_high - twice_low) / 2.0),
    );
    let (mut x, mut g) = (x - low, T::c(1.0));
    if x < zero {
        (x, g) = (-x, -g);
    }
    let flips = (x / span).floor();
    let extra = x % span;
    if flips % T::c(2.0) == zero {
        (extra + low, g)
    } else {
        (span - extra + low, -g)
    }
}

/// ATen's compute_coordinates (with the derivative): a pixel position clipped or reflected
/// into the image, unchanged for zeros padding.
#[inline(always)]
fn pad<T: Real + Elem>(x: T, size: usize, padding: Padding, align_corners: bool) -> (T, T) {
    match padding {
        Padding::Zeros => (x, T::c(1.0)),
        Padding::Border => clip(x, size),
        Padding::Reflection => {
            let (x, g) = if align_corners {
                reflect(x, 0.0, 2.0 * (size as f64 - 1.0))
            } else {
                reflect(x, -1.0, 2.0 * size as f64 - 1.0)
            };
            let (x, h) = clip(x, size);
            (x, g * h)
        }
    }
}

const A: f64 = -0.75; // ATen's bicubic convolution parameter

/// ATen's get_cubic_upsample_coefficients: the weights of the taps at -1, 0, 1, 2 for the
/// fraction `t`, and their derivatives in `t`.
#[inline(always)]
fn cubic<T: Real>(t: T) -> ([T; 4], [T; 4]) {
    let c = T::c;
    let near = |x: T| ((c(A + 2.0) * x - c(A + 3.0)) * x) * x + c(1.0);
    let far = |x: T| ((c(A) * x - c(5.0 * A)) * x + c(8.0 * A)) * x - c(4.0 * A);
    let d_near = |x: T| (c(3.0 * (A + 2.0)) * x - c(2.0 * (A + 3.0))) * x;
    let d_far = |x: T| (c(3.0 * A) * x - c(10.0 * A)) * x + c(8.0 * A);
    let (one, two) = (c(1.0), c(2.0));
    (
        [far(t + one), near(t), near(one - t), far(two - t)],
        [d_far(t + one), d_near(t), -d_near(one - t), -d_far(two - t)],
    )
}

/// `v`, or 0 where `ok` is false (whatever `v` is: an infinite or NaN value read in place of a
/// tap outside the input is dropped, as ATen's masked loads drop it). Branch-free.
pub trait Keep: Copy {
    fn keep(self, ok: bool) -> Self;
}

impl Keep for f32 {
    #[inline(always)]
    fn keep(self, ok: bool) -> f32 {
        f32::from_bits(self.to_bits() & 0u32.wrapping_sub(u32::from(ok)))
    }
}

impl Keep for f64 {
    #[inline(always)]
    fn keep(self, ok: bool) -> f64 {
        f64::from_bits(self.to_bits() & 0u64.wrapping_sub(u64::from(ok)))
    }
}

/// One spatial dim's share of a chunk's taps: slot i of point q at `i * cap + q` (up to 4
/// slots): the position (0 outside), whether it is inside, the factor, and the factor's
/// derivative in the grid coordinate.
struct Rows<T> {
    cap: usize,
    at: Vec<usize>,
    ok: Vec<bool>,
    f: Vec<T>,
    df: Vec<T>,
    /// per point: the fraction the factors are functions of, and its derivative in the grid
    /// coordinate (0 and 0 for nearest)
    t: Vec<T>,
    slope: Vec<T>,
}

impl<T: Real + Elem> Rows<T> {
    fn new(cap: usize) -> Self {
        let zeros = || vec![T::c(0.0); 4 * cap];
        Rows {
            cap,
            at: vec![0; 4 * cap],
            ok: vec![false; 4 * cap],
            f: zeros(),
            df: zeros(),
            t: vec![T::c(0.0); cap],
            slope: vec![T::c(0.0); cap],
        }
    }

    /// The `m` points of slot `at` (an offset).
    #[inline(always)]
    fn slot(&self, at: usize, m: usize) -> (&[usize], &[bool], &[T], &[T]) {
        let r = at..at + m;
        (
            &self.at[r.clone()],
            &self.ok[r.clone()],
            &self.f[r.clone()],
            &self.df[r],
        )
    }

    /// `fill` for bilinear sampling with padding `pad` (position -> padded position, slope).
    #[inline(always)]
    fn bilinear(
        &mut self,
        coords: &[T],
        k: usize,
        nd: usize,
        m: usize,
        (size, align): (usize, bool),
        pad: impl Fn(T) -> (T, T),
    ) {
        let cap = self.cap;
        let (zero, one, hi) = (T::c(0.0), T::c(1.0), T::of(size as f64 - 1.0));
        let (at0, at1) = self.at.split_at_mut(cap);
        let (ok0, ok1) = self.ok.split_at_mut(cap);
        let (f0, f1) = self.f.split_at_mut(cap);
        let (df0, df1) = self.df.split_at_mut(cap);
        let (at0, at1, ok0, ok1) = (&mut at0[..m], &mut at1[..m], &mut ok0[..m], &mut ok1[..m]);
        let (f0, f1, df0, df1) = (&mut f0[..m], &mut f1[..m], &mut df0[..m], &mut df1[..m]);
        let (ts, slopes) = (&mut self.t[..m], &mut self.slope[..m]);
        let coords = &coords[..m * nd];
        for q in 0..m {
            let (u, slope) = unnormalize(coords[q * nd + k], size, align);
            let (x, h) = pad(u);
            let lo = x.floor();
            let (t, slope) = (x - lo, slope * h);
            let up = lo + one;
            // inside: a position in [0, size - 1] (NaN is not); its index, else 0
            let (in0, in1) = ((lo >= zero) & (lo <= hi), (up >= zero) & (up <= hi));
            (ok0[q], ok1[q]) = (in0, in1);
            at0[q] = if in0 { lo.to_i64() as usize } else { 0 };
            at1[q] = if in1 { up.to_i64() as usize } else { 0 };
            (f0[q], f1[q]) = (one - t, t);
            (df0[q], df1[q]) = (-slope, slope);
            (ts[q], slopes[q]) = (t, slope);
        }
    }

    /// Slot `i` of point `q` is the integral position `p`.
    #[inline(always)]
    fn put(&mut self, i: usize, q: usize, p: T, hi: T) {
        let ok = p >= T::c(0.0) && p <= hi;
        self.ok[i * self.cap + q] = ok;
        self.at[i * self.cap + q] = if ok { p.to_i64() as usize } else { 0 };
    }

    /// The slots of coordinate `k` of the `m` points at `coords` (`nd` per point), along a
    /// dim of `size`.
    #[inline(always)]
    fn fill(&mut self, coords: &[T], k: usize, nd: usize, m: usize, size: usize, g: &Geometry) {
        let (hi, one) = (T::of(size as f64 - 1.0), T::c(1.0));
        let (padding, align) = (g.padding, g.align_corners);
        let coord = |q: usize| coords[q * nd + k];
        let cap = self.cap;
        match g.mode {
            Mode::Nearest => {
                let (at, ok) = (&mut self.at[..m], &mut self.ok[..m]);
                let (f, df) = (&mut self.f[..m], &mut self.df[..m]);
                let (ts, slopes) = (&mut self.t[..m], &mut self.slope[..m]);
                let coords = &coords[..m * nd];
                for q in 0..m {
                    let (u, _) = unnormalize(coords[q * nd + k], size, align);
                    let (x, _) = pad(u, size, padding, align);
                    let r = round_half_even(x);
                    let inside = (r >= T::c(0.0)) & (r <= hi);
                    ok[q] = inside;
                    at[q] = if inside { r.to_i64() as usize } else { 0 };
                    (f[q], df[q], ts[q], slopes[q]) = (one, T::c(0.0), T::c(0.0), T::c(0.0));
                }
            }
            Mode::Bilinear => match padding {
                // one loop per padding, each without calls or branches (so vectorised)
                Padding::Zeros => self.bilinear(coords, k, nd, m, (size, align), |u| (u, one)),
                Padding::Border => {
                    self.bilinear(coords, k, nd, m, (size, align), |u| clip(u, size))
                }
                Padding::Reflection => self.bilinear(coords, k, nd, m, (size, align), |u| {
                    pad(u, size, padding, align)
                }),
            },
            Mode::Bicubic => {
                for q in 0..m {
                    // the taps around the unpadded position, each padded on its own
                    let (u, slope) = unnormalize(coord(q), size, align);
                    let lo = u.floor();
                    let (f, df) = cubic(u - lo);
                    for i in 0..4 {
                        let (p, _) = pad(lo + T::of(i as f64 - 1.0), size, padding, align);
                        self.put(i, q, p, hi);
                        (self.f[i * cap + q], self.df[i * cap + q]) = (f[i], df[i] * slope);
                    }
                    (self.t[q], self.slope[q]) = (u - lo, slope);
                }
            }
        }
    }
}

/// The taps of a chunk of points, tap-major (`taps` slots of `cap` points): flat input
/// positions (0 for a tap outside the input), whether the tap is inside, its weight and, when
/// computed for a backward, per spatial dim the weight's derivative in that dim's grid
/// coordinate.
struct Chunk<T> {
    cap: usize,
    taps: usize,
    per_dim: usize,
    dims: [Rows<T>; 3],
    at: Vec<usize>,
    ok: Vec<bool>,
    w: Vec<T>,
    dw: [Vec<T>; 3],
}

impl<T: Real + Elem> Chunk<T> {
    /// Room for `cap` points.
    fn new(g: &Geometry, grad: bool, cap: usize) -> Self {
        let taps = g.taps();
        let slots = cap * taps;
        let zeros = || vec![T::c(0.0); if grad { slots } else { 0 }];
        Chunk {
            cap,
            taps,
            per_dim: g.per_dim(),
            dims: [Rows::new(cap), Rows::new(cap), Rows::new(cap)],
            at: vec![0; slots],
            ok: vec![false; slots],
            w: vec![T::c(0.0); slots],
            dw: [zeros(), zeros(), zeros()],
        }
    }

    /// The taps of the `m` points whose coordinates start `coords`: per spatial dim the
    /// positions and factors of every point (one simple loop per dim and mode), then per tap
    /// their products (one loop per tap).
    #[inline(always)]
    fn fill<const GRAD: bool>(&mut self, coords: &[T], m: usize, g: &Geometry) {
        let nd = g.dims();
        for (d, rows) in self.dims.iter_mut().enumerate().take(nd) {
            rows.fill(coords, nd - 1 - d, nd, m, g.sizes[d], g);
        }
        let (per, cap) = (self.per_dim, self.cap);
        for k in 0..self.taps {
            let out = k * cap..k * cap + m;
            let (at, ok, w) = (
                &mut self.at[out.clone()],
                &mut self.ok[out.clone()],
                &mut self.w[out.clone()],
            );
            // tap k's slot along dim d is digit d of k (the last dim fastest)
            let slot = |d: usize| (k / per.pow((nd - 1 - d) as u32)) % per * cap;
            match &self.dims[..nd] {
                [a, b] => {
                    let (a, b) = (a.slot(slot(0), m), b.slot(slot(1), m));
                    let width = g.sizes[1];
                    for q in 0..m {
                        at[q] = a.0[q] * width + b.0[q];
                        ok[q] = a.1[q] & b.1[q];
                        w[q] = a.2[q] * b.2[q];
                    }
                    if GRAD {
                        let [d0, d1, _] = &mut self.dw;
                        let (d0, d1) = (&mut d0[out.clone()], &mut d1[out]);
                        for q in 0..m {
                            d0[q] = a.3[q] * b.2[q];
                            d1[q] = a.2[q] * b.3[q];
                        }
                    }
                }
                [a, b, c] => {
                    let (a, b, c) = (a.slot(slot(0), m), b.slot(slot(1), m), c.slot(slot(2), m));
                    let (h, width) = (g.sizes[1], g.sizes[2]);
                    for q in 0..m {
                        at[q] = (a.0[q] * h + b.0[q]) * width + c.0[q];
                        ok[q] = a.1[q] & b.1[q] & c.1[q];
                        w[q] = a.2[q] * b.2[q] * c.2[q];
                    }
                    if GRAD {
                        let [d0, d1, d2] = &mut self.dw;
                        let (d0, d1, d2) =
                            (&mut d0[out.clone()], &mut d1[out.clone()], &mut d2[out]);
                        for q in 0..m {
                            d0[q] = a.3[q] * b.2[q] * c.2[q];
                            d1[q] = a.2[q] * b.3[q] * c.2[q];
                            d2[q] = a.2[q] * b.2[q] * c.3[q];
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Tap `k` of the first `m` points: positions, inside, weights.
    #[inline(always)]
    fn tap(&self, k: usize, m: usize) -> (&[usize], &[bool], &[T]) {
        let r = k * self.cap..k * self.cap + m;
        (&self.at[r.clone()], &self.ok[r.clone()], &self.w[r])
    }
}

/// Points whose taps are worked out together before the channel loop.
const CHUNK: usize = 128;

/// The units of work (batch item, channel range), cut so that every thread gets some when
/// the batch is small, and grouped into one contiguous run of units per thread.
fn units(g: &Geometry, work: usize) -> (Vec<(usize, usize, usize)>, Vec<usize>) {
    let threads = if par_ok(work, PAR_THRESHOLD_COSTLY) {
        num_threads().max(1)
    } else {
        1
    };
    let (n, c) = (g.batch, g.channels);
    let blocks = if n >= threads {
        1
    } else {
        threads.div_ceil(n.max(1)).min(c.max(1))
    };
    let mut list = Vec::with_capacity(n * blocks);
    for i in 0..n {
        for b in 0..blocks {
            list.push((i, b * c / blocks, (b + 1) * c / blocks));
        }
    }
    let groups = threads.min(list.len()).max(1);
    let bounds = (0..=groups).map(|k| k * list.len() / groups).collect();
    (list, bounds)
}

/// One thread's share of `forward`: the rows (n, c) of its units, written to `part`.
struct ForwardPart<'a, T> {
    x: &'a [T],
    grid: &'a [T],
    g: &'a Geometry,
    units: &'a [(usize, usize, usize)],
    part: &'a mut [T],
}

impl<T: Real + Elem + Keep> Vectorize for ForwardPart<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run(self) {
        let ForwardPart {
            x,
            grid,
            g,
            units,
            part,
        } = self;
        let (len, points, nd) = (g.len(), g.points, g.dims());
        let mut taps = Chunk::<T>::new(g, false, CHUNK.min(points));
        let mut row0 = 0;
        for &(n, c0, c1) in units {
            let coords = &grid[n * points * nd..][..points * nd];
            for p0 in (0..points).step_by(CHUNK) {
                let m = CHUNK.min(points - p0);
                taps.fill::<false>(&coords[p0 * nd..], m, g);
                for c in c0..c1 {
                    let src = &x[(n * g.channels + c) * len..][..len];
                    let dst = &mut part[(row0 + c - c0) * points + p0..][..m];
                    // `out` starts zeroed (try_vec): the taps add onto it
                    for k in 0..taps.taps {
                        let (at, ok, w) = taps.tap(k, m);
                        for (((o, &i), &ok), &w) in dst.iter_mut().zip(at).zip(ok).zip(w) {
                            *o = *o + w * src[i].keep(ok);
                        }
                    }
                }
            }
            row0 += c1 - c0;
        }
    }
}

/// Each group of units with its rows (n, c) of `buf` (`per_row` elements each): consecutive,
/// so one slice.
#[allow(clippy::type_complexity)]
fn parts<'a, T>(
    list: &'a [(usize, usize, usize)],
    bounds: &[usize],
    buf: &'a mut [T],
    per_row: usize,
) -> Vec<(&'a [(usize, usize, usize)], &'a mut [T])> {
    let mut parts = Vec::with_capacity(bounds.len());
    let mut rest = buf;
    for w in bounds.windows(2) {
        let group = &list[w[0]..w[1]];
        let rows: usize = group.iter().map(|u| u.2 - u.1).sum();
        let (part, tail) = rest.split_at_mut(rows * per_row);
        parts.push((group, part));
        rest = tail;
    }
    parts
}

/// The output: `out[n, c, p] = sum of w * x[n, c, tap]` over the taps of point p.
pub fn forward<T: Real + Elem + Keep>(x: &[T], grid: &[T], g: &Geometry) -> Result<Vec<T>> {
    let points = g.points;
    let mut out = try_vec::<T>(g.batch * g.channels * points)?;
    let (list, bounds) = units(g, out.len() * g.taps());
    let parts = parts(&list, &bounds, &mut out, points);
    map_each(parts, &|_, (units, part)| {
        vectorized(ForwardPart {
            x,
            grid,
            g,
            units,
            part,
        })
    });
    Ok(out)
}

/// One thread's share of `backward`: the input gradient's rows (n, c) of its units, written
/// to `part`, and per unit its channels' share of the grid gradient of item n.
struct BackwardPart<'a, T> {
    x: &'a [T],
    grid: &'a [T],
    go: &'a [T],
    g: &'a Geometry,
    need: (bool, bool),
    units: &'a [(usize, usize, usize)],
    part: &'a mut [T],
}

impl<T: Real + Elem + Keep> Vectorize for BackwardPart<'_, T> {
    type Out = Result<Vec<(usize, Vec<T>)>>;
    #[inline(always)]
    fn run(self) -> Self::Out {
        let BackwardPart {
            x,
            grid,
            go,
            g,
            need: (need_input, need_grid),
            units,
            part,
        } = self;
        let (len, points, nd) = (g.len(), g.points, g.dims());
        let mut taps = Chunk::<T>::new(g, true, CHUNK.min(points));
        let mut shares = Vec::with_capacity(units.len());
        let mut row0 = 0;
        for &(n, c0, c1) in units {
            let coords = &grid[n * points * nd..][..points * nd];
            let mut gg = if need_grid {
                try_vec::<T>(points * nd)?
            } else {
                Vec::new()
            };
            for p0 in (0..points).step_by(CHUNK) {
                let m = CHUNK.min(points - p0);
                taps.fill::<true>(&coords[p0 * nd..], m, g);
                for c in c0..c1 {
                    let row = n * g.channels + c;
                    let gor = &go[row * points + p0..][..m];
                    if need_input {
                        let dst = &mut part[(row0 + c - c0) * len..][..len];
                        for k in 0..taps.taps {
                            let (at, ok, w) = taps.tap(k, m);
                            for (((&o, &i), &ok), &w) in gor.iter().zip(at).zip(ok).zip(w) {
                                dst[i] = dst[i] + (w * o).keep(ok);
                            }
                        }
                    }
                    if need_grid && g.mode != Mode::Nearest {
                        let src = &x[row * len..][..len];
                        let ggc = &mut gg[p0 * nd..][..m * nd];
                        for (q, (&o, acc)) in gor.iter().zip(ggc.chunks_mut(nd)).enumerate() {
                            let mut s = [T::c(0.0); 3];
                            for k in 0..taps.taps {
                                let j = k * taps.cap + q;
                                let v = src[taps.at[j]].keep(taps.ok[j]);
                                for (s, dw) in s.iter_mut().zip(&taps.dw).take(nd) {
                                    *s = *s + dw[j] * v;
                                }
                            }
                            // coordinate nd - 1 - d of the grid runs along dim d
                            for (d, &s) in s[..nd].iter().enumerate() {
                                acc[nd - 1 - d] = acc[nd - 1 - d] + s * o;
                            }
                        }
                    }
                }
            }
            row0 += c1 - c0;
            shares.push((n, gg));
        }
        Ok(shares)
    }
}

/// The gradients of `forward` in the input (if `need_input`, else empty) and in the grid (if
/// `need_grid`, else empty), for the output gradient `go` (N, C, P).
pub fn backward<T: Real + Elem + Keep>(
    x: &[T],
    grid: &[T],
    go: &[T],
    g: &Geometry,
    (need_input, need_grid): (bool, bool),
) -> Result<(Vec<T>, Vec<T>)> {
    let (len, points, nd) = (g.len(), g.points, g.dims());
    let mut gx = if need_input {
        try_vec::<T>(g.batch * g.channels * len)?
    } else {
        Vec::new()
    };
    let (list, bounds) = units(g, go.len() * g.taps());
    let parts = parts(&list, &bounds, &mut gx, if need_input { len } else { 0 });
    // per unit: the grid gradient's share of its channels, (P, dims)
    let shares = map_each(parts, &|_, (units, part)| {
        vectorized(BackwardPart {
            x,
            grid,
            go,
            g,
            need: (need_input, need_grid),
            units,
            part,
        })
    });
    let mut ggrid = if need_grid {
        try_vec::<T>(g.batch * points * nd)?
    } else {
        Vec::new()
    };
    for shares in shares {
        for (n, share) in shares? {
            if need_grid {
                let dst = &mut ggrid[n * points * nd..][..points * nd];
                dst.iter_mut().zip(&share).for_each(|(d, &s)| *d = *d + s);
            }
        }
    }
    Ok((gx, ggrid))
}

/// For the differentiable (composite) form of the sampler: the taps' positions (taps, dims,
/// N, P), -1 outside the input; and per spatial dim (dims, N, P) the fraction `t` the
/// factors are functions of, and its derivative in the grid coordinate.
pub fn tap_positions<T: Real + Elem>(
    grid: &[T],
    g: &Geometry,
) -> Result<(Vec<i64>, Vec<T>, Vec<T>)> {
    let (nd, all, per) = (g.dims(), g.batch * g.points, g.per_dim());
    let taps = g.taps();
    let mut pos = try_vec::<i64>(taps * nd * all)?;
    let (mut frac, mut slope) = (try_vec::<T>(nd * all)?, try_vec::<T>(nd * all)?);
    let mut rows = Rows::<T>::new(CHUNK.min(all));
    for q0 in (0..all).step_by(CHUNK) {
        let m = CHUNK.min(all - q0);
        for d in 0..nd {
            rows.fill(&grid[q0 * nd..], nd - 1 - d, nd, m, g.sizes[d], g);
            frac[d * all + q0..][..m].copy_from_slice(&rows.t[..m]);
            slope[d * all + q0..][..m].copy_from_slice(&rows.slope[..m]);
            for k in 0..taps {
                // tap k's slot along dim d: digit d of k (the last dim fastest)
                let i = (k / per.pow((nd - 1 - d) as u32)) % per;
                let (at, ok, _, _) = rows.slot(i * rows.cap, m);
                let dst = &mut pos[(k * nd + d) * all + q0..][..m];
                for ((p, &at), &ok) in dst.iter_mut().zip(at).zip(ok) {
                    *p = if ok { at as i64 } else { -1 };
                }
            }
        }
    }
    Ok((pos, frac, slope))
}
