//! Convolution as im2col + gemm, and window pooling, over contiguous NC(H)W buffers.
//!
//! One geometry describes a convolution from an "image" (N, groups*c, h, w) to a "matrix"
//! (N, groups*og, oh*ow) with a weight (groups*og, c*kh*kw). The three bilinear maps of a
//! convolution are then:
//! - `forward`: matrix = W @ im2col(image) (convolution; transposed convolution's input grad);
//! - `data`: image = col2im(W^T @ matrix) (transposed convolution; convolution's input grad);
//! - `weight`: W = sum over the batch of matrix @ im2col(image)^T (both weight grads).
//!
//! 1-d convolutions are the case h = kh = 1. The batch is split across threads, each with its
//! own column buffer and a single-threaded gemm; below `threads` samples gemm splits instead.

use super::matmul::{matmul_strided, Mat, GEMM_PAR_THRESHOLD};
use super::optim::Real;
use super::{alloc, par_ok};
use crate::error::Result;
use crate::storage::{try_vec, Elem};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geom {
    pub n: usize,
    pub groups: usize,
    /// image channels, height, width (per group for channels)
    pub c: usize,
    pub h: usize,
    pub w: usize,
    /// matrix rows per group (output channels of a convolution)
    pub og: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub ph: usize,
    pub pw: usize,
    pub dh: usize,
    pub dw: usize,
    pub oh: usize,
    pub ow: usize,
}

impl Geom {
    /// Checks that every size the kernels compute from this geometry (buffers of the whole
    /// batch, padded and dilated extents, window offsets) fits in `isize`, so the kernels'
    /// plain arithmetic cannot overflow; the buffers themselves are then allocated fallibly.
    pub fn check(&self) -> Result<()> {
        let mul = |v: &[usize]| v.iter().try_fold(1usize, |a, &b| a.checked_mul(b));
        let fits = |v: Option<usize>| v.filter(|&x| x <= isize::MAX as usize).is_some();
        let extent = |o: usize, s: usize, k: usize, d: usize, len: usize, p: usize| {
            o.checked_mul(s)
                .zip(k.checked_mul(d))
                .and_then(|(a, b)| a.checked_add(b))
                .zip(p.checked_mul(2).and_then(|p2| p2.checked_add(len)))
                .and_then(|(a, b)| a.checked_add(b))
        };
        let ok = fits(mul(&[self.n, self.groups, self.c, self.h, self.w]))
            && fits(mul(&[self.n, self.groups, self.og, self.oh, self.ow]))
            && fits(mul(&[self.n, self.c, self.kh, self.kw, self.oh, self.ow]))
            && fits(mul(&[self.groups, self.og, self.c, self.kh, self.kw]))
            && fits(extent(self.oh, self.sh, self.kh, self.dh, self.h, self.ph))
            && fits(extent(self.ow, self.sw, self.kw, self.dw, self.w, self.pw));
        if ok {
            Ok(())
        } else {
            Err(crate::error::Error::Runtime(format!(
                "convolution sizes overflow: input {}x{}x{}x{}, output {}x{}, kernel {}x{}, stride {}x{}, padding {}x{}, dilation {}x{}",
                self.n, self.groups * self.c, self.h, self.w, self.oh, self.ow, self.kh, self.kw,
                self.sh, self.sw, self.ph, self.pw, self.dh, self.dw
            )))
        }
    }
    /// Rows of the column matrix: c * kh * kw.
    pub fn rows(&self) -> usize {
        self.c * self.kh * self.kw
    }
    /// Columns of the column matrix: output positions.
    pub fn cols(&self) -> usize {
        self.oh * self.ow
    }
    pub fn image_len(&self) -> usize {
        self.groups * self.c * self.h * self.w
    }
    pub fn matrix_len(&self) -> usize {
        self.groups * self.og * self.cols()
    }
}

/// The output columns `ox` whose input column `ox*stride + offset - pad` lies in `0..len`.
#[inline]
fn valid_range(len: usize, out: usize, stride: usize, offset: usize, pad: usize) -> (usize, usize) {
    let lo = if pad > offset {
        (pad - offset).div_ceil(stride)
    } else {
        0
    };
    let hi = if len + pad > offset {
        (len + pad - offset).div_ceil(stride)
    } else {
        0
    };
    (lo.min(out), hi.min(out).max(lo.min(out)))
}

/// `cols[(ch*kh + i)*kw + j][oy*ow + ox] = img[ch][oy*sh - ph + i*dh][ox*sw - pw + j*dw]`, zero
/// outside the image (one image of one group: c x h x w).
pub fn im2col<T: Copy + Default>(img: &[T], g: &Geom, cols: &mut [T]) {
    im2col_ld(img, g, cols, g.cols())
}

/// `im2col` into rows `ld` elements apart (one sample's block of a wider column matrix).
fn im2col_ld<T: Copy + Default>(img: &[T], g: &Geom, cols: &mut [T], ld: usize) {
    let (l, ow) = (g.cols(), g.ow);
    // stride 1 and output rows as wide as input rows ("same" padding): a column row is the
    // input plane shifted, so the valid rows are one copy, then the border columns are zeroed
    let shifted = g.sh == 1 && g.sw == 1 && ow == g.w;
    for ch in 0..g.c {
        for i in 0..g.kh {
            for j in 0..g.kw {
                let row = &mut cols[((ch * g.kh + i) * g.kw + j) * ld..][..l];
                let (x0, x1) = valid_range(g.w, ow, g.sw, j * g.dw, g.pw);
                if shifted {
                    im2col_shifted(&img[ch * g.h * g.w..][..g.h * g.w], g, i, j, row);
                    continue;
                }
                for oy in 0..g.oh {
                    let dst = &mut row[oy * ow..(oy + 1) * ow];
                    let iy = (oy * g.sh + i * g.dh) as isize - g.ph as isize;
                    if iy < 0 || iy >= g.h as isize {
                        dst.fill(T::default());
                        continue;
                    }
                    let src = &img[(ch * g.h + iy as usize) * g.w..][..g.w];
                    zero_run(&mut dst[..x0]);
                    zero_run(&mut dst[x1..]);
                    if x0 == x1 {
                        continue;
                    }
                    let first = x0 * g.sw + j * g.dw - g.pw; // input column of output x0
                                                             // the input elements read, checked once (not per element)
                    let src = &src[first..first + (x1 - x0 - 1) * g.sw + 1];
                    match g.sw {
                        1 => dst[x0..x1].copy_from_slice(src),
                        2 => gather2(src, &mut dst[x0..x1]),
                        sw => gather_strided(src, sw, &mut dst[x0..x1]),
                    }
                }
            }
        }
    }
}

/// `dst[k] = src[2 k]` (`src` holds exactly the elements read, 2 len - 1): pairs of which the
/// first is kept, a pattern the compiler vectorises as loads and shuffles.
#[inline(always)]
fn gather2<T: Copy>(src: &[T], dst: &mut [T]) {
    let Some((last, head)) = dst.split_last_mut() else {
        return;
    };
    for (d, p) in head.iter_mut().zip(src.chunks_exact(2)) {
        *d = p[0];
    }
    *last = src[2 * head.len()];
}

/// `dst[k] = src[k * stride]` for other strides.
fn gather_strided<T: Copy>(src: &[T], stride: usize, dst: &mut [T]) {
    for (d, &v) in dst.iter_mut().zip(src.iter().step_by(stride)) {
        *d = v;
    }
}

/// Zeroes a short run (one element for padding 1) without a library call.
#[inline(always)]
fn zero_run<T: Copy + Default>(s: &mut [T]) {
    match s {
        [] => {}
        [x] => *x = T::default(),
        s => s.fill(T::default()),
    }
}

/// For stride 1 and `ow == w`, the column row of kernel offset (i, j) is the input plane
/// shifted: output rows `ya..yb` read input rows, and within them the `len` elements from
/// `row_at` of the row are the `len` elements from `plane_at` of the plane, except the border
/// columns (outside `x0..x1`), which map outside the image.
struct ShiftedBlock {
    ya: usize,
    yb: usize,
    x0: usize,
    x1: usize,
    row_at: usize,
    plane_at: usize,
    /// 0 when no output element reads the image
    len: usize,
}

impl ShiftedBlock {
    fn new(g: &Geom, i: usize, j: usize) -> Self {
        let (ya, yb) = valid_range(g.h, g.oh, 1, i * g.dh, g.ph);
        let (x0, x1) = valid_range(g.w, g.ow, 1, j * g.dw, g.pw);
        if ya >= yb || x0 >= x1 {
            return ShiftedBlock {
                ya,
                yb,
                x0,
                x1,
                row_at: 0,
                plane_at: 0,
                len: 0,
            };
        }
        // output (oy, ox) reads input (oy + i*dh - ph, ox + j*dw - pw): one offset for the block
        let (iy, ix) = (ya + i * g.dh - g.ph, x0 + j * g.dw - g.pw);
        ShiftedBlock {
            ya,
            yb,
            x0,
            x1,
            row_at: ya * g.ow + x0,
            plane_at: iy * g.w + ix,
            len: (yb - 1 - ya) * g.ow + (x1 - x0),
        }
    }

    /// Zeroes the border columns of the block's rows of `row`.
    fn zero_borders<T: Copy + Default>(&self, row: &mut [T], ow: usize) {
        for r in row[self.ya * ow..self.yb * ow].chunks_exact_mut(ow) {
            zero_run(&mut r[..self.x0]);
            zero_run(&mut r[self.x1..]);
        }
    }
}

/// The column row of kernel offset (i, j) of one channel `plane` for stride 1 and `ow == w`.
fn im2col_shifted<T: Copy + Default>(plane: &[T], g: &Geom, i: usize, j: usize, row: &mut [T]) {
    let b = ShiftedBlock::new(g, i, j);
    row[..b.ya * g.ow].fill(T::default());
    row[b.yb * g.ow..].fill(T::default());
    if b.len == 0 {
        row[b.ya * g.ow..b.yb * g.ow].fill(T::default());
        return;
    }
    row[b.row_at..][..b.len].copy_from_slice(&plane[b.plane_at..][..b.len]);
    b.zero_borders(row, g.ow);
}

/// `col2im_ld` from a scratch column matrix it may modify: for stride 1 and `ow == w` each row
/// is added as one shifted block after its border columns (which map outside the image) are
/// zeroed.
fn col2im_scratch<T: Real + Default>(cols: &mut [T], g: &Geom, img: &mut [T], ld: usize) {
    if !(g.sh == 1 && g.sw == 1 && g.ow == g.w) {
        return col2im_ld(cols, g, img, ld);
    }
    let (l, ow) = (g.cols(), g.ow);
    for ch in 0..g.c {
        let plane = &mut img[ch * g.h * g.w..][..g.h * g.w];
        for i in 0..g.kh {
            for j in 0..g.kw {
                let row = &mut cols[((ch * g.kh + i) * g.kw + j) * ld..][..l];
                let b = ShiftedBlock::new(g, i, j);
                if b.len == 0 {
                    continue;
                }
                b.zero_borders(row, ow);
                let dst = &mut plane[b.plane_at..][..b.len];
                for (d, &v) in dst.iter_mut().zip(&row[b.row_at..][..b.len]) {
                    *d = *d + v;
                }
            }
        }
    }
}

/// The adjoint of `im2col`: adds every column entry into its image position (`img` must be
/// zeroed by the caller).
pub fn col2im<T: Real>(cols: &[T], g: &Geom, img: &mut [T]) {
    col2im_ld(cols, g, img, g.cols())
}

/// `col2im` from rows `ld` elements apart.
fn col2im_ld<T: Real>(cols: &[T], g: &Geom, img: &mut [T], ld: usize) {
    let (l, ow) = (g.cols(), g.ow);
    for ch in 0..g.c {
        for i in 0..g.kh {
            for j in 0..g.kw {
                let row = &cols[((ch * g.kh + i) * g.kw + j) * ld..][..l];
                let (x0, x1) = valid_range(g.w, ow, g.sw, j * g.dw, g.pw);
                if x0 >= x1 {
                    continue;
                }
                let first = x0 * g.sw + j * g.dw - g.pw;
                for oy in 0..g.oh {
                    let iy = (oy * g.sh + i * g.dh) as isize - g.ph as isize;
                    if iy < 0 || iy >= g.h as isize {
                        continue;
                    }
                    let dst = &mut img[(ch * g.h + iy as usize) * g.w..][..g.w];
                    let src = &row[oy * ow + x0..oy * ow + x1];
                    // the image elements written, checked once (not per element)
                    let dst = &mut dst[first..first + (src.len() - 1) * g.sw + 1];
                    match g.sw {
                        1 => {
                            for (d, &v) in dst.iter_mut().zip(src) {
                                *d = *d + v;
                            }
                        }
                        2 => {
                            // pairs of which the first is added to (vectorised), then the last
                            let (head, last) = src.split_at(src.len() - 1);
                            for (p, &v) in dst.chunks_exact_mut(2).zip(head) {
                                p[0] = p[0] + v;
                            }
                            dst[2 * head.len()] = dst[2 * head.len()] + last[0];
                        }
                        sw => {
                            for (d, &v) in dst.iter_mut().step_by(sw).zip(src) {
                                *d = *d + v;
                            }
                        }
                    }
                }
            }
        }
    }
}

fn mat<T>(data: &[T], offset: usize, rs: usize, cs: usize) -> Mat<'_, T> {
    Mat {
        data,
        offset,
        rs,
        cs,
    }
}

/// Splits the batch across threads when there are enough samples and work; returns the number
/// of parts (1: run serially, gemm may split itself).
fn batch_parts(g: &Geom) -> usize {
    let work = g.n * g.groups * g.og * g.rows() * g.cols();
    let threads = super::num_threads();
    if g.n >= threads && par_ok(work, GEMM_PAR_THRESHOLD) {
        threads.min(g.n)
    } else {
        1
    }
}

/// Runs `f(first sample, last sample, part)` over the batch cut into `parts` ranges.
fn over_batch(
    n: usize,
    parts: usize,
    f: &(dyn Fn(usize, usize, usize) -> Result<()> + Sync),
) -> Result<()> {
    let per = n.div_ceil(parts.max(1));
    if parts <= 1 {
        return f(0, n, 0);
    }
    // a part that fails (its scratch buffers could not be allocated) reports the first error
    let failed = std::sync::Mutex::new(None);
    super::parallel::run_parts(parts, &|p| {
        if let Err(e) = f((p * per).min(n), ((p + 1) * per).min(n), p) {
            failed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert(e);
        }
    });
    match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Disjoint mutable per-sample chunks of one output buffer, handed out to the parts.
struct Chunks<'a, T>(Vec<std::sync::Mutex<&'a mut [T]>>);

impl<'a, T> Chunks<'a, T> {
    fn new(buf: &'a mut [T], per_sample: usize) -> Self {
        Chunks(
            buf.chunks_mut(per_sample.max(1))
                .map(std::sync::Mutex::new)
                .collect(),
        )
    }
    fn with<R>(&self, i: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
        let mut c = self.0[i].lock().unwrap_or_else(|e| e.into_inner());
        f(&mut c)
    }
}

/// `dst (m x n, row-major) = a @ b` (`+=` with `acc`), on the calling thread when `serial`
/// (the batch is already split over the threads).
#[allow(clippy::too_many_arguments)]
fn gemm<T: Elem>(
    serial: bool,
    m: usize,
    k: usize,
    n: usize,
    a: Mat<'_, T>,
    b: Mat<'_, T>,
    dst: &mut [T],
    acc: bool,
) {
    matmul_strided(m, k, n, a, b, dst, n, 1, acc, !serial)
}

/// Bytes of column matrix one gemm call covers: enough samples side by side (`cnt * l` columns)
/// to amortise gemm's per-call packing, few enough to stay in the L2 cache.
const COLS_BUDGET: usize = 512 * 1024;

/// Samples per gemm call (at most `samples`).
fn group_len<T>(g: &Geom, samples: usize) -> usize {
    let per_sample = g.rows().max(g.og) * g.cols() * std::mem::size_of::<T>();
    (COLS_BUDGET / per_sample.max(1)).clamp(1, samples.max(1))
}

/// The matrices of samples `first..first + cnt` of group `gi` side by side (og x cnt*l): one
/// sample's in place, several gathered into `buf`.
fn matrices<'a, T: Copy>(
    matrix: &'a [T],
    g: &Geom,
    gi: usize,
    first: usize,
    cnt: usize,
    buf: &'a mut [T],
) -> Mat<'a, T> {
    let (l, width) = (g.cols(), cnt * g.cols());
    if cnt == 1 {
        return mat(matrix, first * g.matrix_len() + gi * g.og * l, l, 1);
    }
    for k in 0..cnt {
        for o in 0..g.og {
            let src = &matrix[(first + k) * g.matrix_len() + (gi * g.og + o) * l..][..l];
            buf[o * width + k * l..][..l].copy_from_slice(src);
        }
    }
    mat(buf, 0, width, 1)
}

/// `cols (rows x cnt*l)`: the column matrices of samples `first..first + cnt` of group `gi`
/// side by side.
fn im2col_samples<T: Copy + Default>(
    image: &[T],
    g: &Geom,
    gi: usize,
    first: usize,
    cnt: usize,
    cols: &mut [T],
) {
    let (l, len) = (g.cols(), g.c * g.h * g.w);
    for k in 0..cnt {
        let off = (first + k) * g.image_len() + gi * len;
        im2col_ld(&image[off..off + len], g, &mut cols[k * l..], cnt * l);
    }
}

/// matrix[n, g*og + o, :] = W[g*og + o, :] @ im2col(image[n, g]) (+ bias[g*og + o]), with the
/// column matrices of several samples side by side in one gemm.
pub fn forward<T: Real + Elem>(
    image: &[T],
    w: &[T],
    bias: Option<&[T]>,
    g: &Geom,
) -> Result<Vec<T>> {
    let (rows, l) = (g.rows(), g.cols());
    let mut out = try_vec::<T>(g.n * g.matrix_len())?;
    if out.is_empty() {
        return Ok(out);
    }
    let parts = batch_parts(g);
    let chunks = Chunks::new(&mut out, g.matrix_len());
    over_batch(g.n, parts, &|s0, s1, _| {
        let gl = group_len::<T>(g, s1 - s0);
        let mut cols = try_vec::<T>(rows * gl * l)?;
        let mut prod = try_vec::<T>(g.og * gl * l)?;
        for first in (s0..s1).step_by(gl) {
            let cnt = gl.min(s1 - first);
            let width = cnt * l;
            for gi in 0..g.groups {
                im2col_samples(image, g, gi, first, cnt, &mut cols);
                let a = mat(w, gi * g.og * rows, rows, 1);
                let b = mat(&cols, 0, width, 1);
                gemm(
                    parts > 1,
                    g.og,
                    rows,
                    width,
                    a,
                    b,
                    &mut prod[..g.og * width],
                    false,
                );
                // each sample's rows of the product, with the bias
                for k in 0..cnt {
                    chunks.with(first + k, |dst| {
                        for o in 0..g.og {
                            let src = &prod[o * width + k * l..][..l];
                            let d = &mut dst[(gi * g.og + o) * l..][..l];
                            match bias {
                                Some(b) => {
                                    let v = b[gi * g.og + o];
                                    d.iter_mut().zip(src).for_each(|(x, &s)| *x = s + v);
                                }
                                None => d.copy_from_slice(src),
                            }
                        }
                    });
                }
            }
        }
        Ok(())
    })?;
    Ok(out)
}

/// image[n, g] = col2im(W[g]^T @ matrix[n, g]) (+ bias[channel]), several samples per gemm.
pub fn data<T: Real + Elem>(matrix: &[T], w: &[T], bias: Option<&[T]>, g: &Geom) -> Result<Vec<T>> {
    let (rows, l) = (g.rows(), g.cols());
    let mut out = try_vec::<T>(g.n * g.image_len())?;
    if out.is_empty() {
        return Ok(out);
    }
    let parts = batch_parts(g);
    let chunks = Chunks::new(&mut out, g.image_len());
    over_batch(g.n, parts, &|s0, s1, _| {
        let gl = group_len::<T>(g, s1 - s0);
        let mut gathered = try_vec::<T>(if gl > 1 { g.og * gl * l } else { 0 })?;
        let mut cols = try_vec::<T>(rows * gl * l)?;
        for first in (s0..s1).step_by(gl) {
            let cnt = gl.min(s1 - first);
            let width = cnt * l;
            for gi in 0..g.groups {
                let a = mat(w, gi * g.og * rows, 1, rows); // W[g]^T: rows x og
                let b = matrices(matrix, g, gi, first, cnt, &mut gathered);
                gemm(
                    parts > 1,
                    rows,
                    g.og,
                    width,
                    a,
                    b,
                    &mut cols[..rows * width],
                    false,
                );
                for k in 0..cnt {
                    chunks.with(first + k, |dst| {
                        let len = g.c * g.h * g.w;
                        let img = &mut dst[gi * len..(gi + 1) * len];
                        col2im_scratch(&mut cols[k * l..], g, img, width);
                        if let Some(bias) = bias {
                            let plane = g.h * g.w;
                            for (ch, p) in img.chunks_mut(plane.max(1)).enumerate() {
                                let v = bias[gi * g.c + ch];
                                p.iter_mut().for_each(|x| *x = *x + v);
                            }
                        }
                    });
                }
            }
        }
        Ok(())
    })?;
    Ok(out)
}

/// W[g] = sum over n of matrix[n, g] @ im2col(image[n, g])^T, several samples per gemm (their
/// columns side by side make the gemm's inner dimension).
pub fn weight<T: Real + Elem>(matrix: &[T], image: &[T], g: &Geom) -> Result<Vec<T>> {
    let (rows, l) = (g.rows(), g.cols());
    let wlen = g.groups * g.og * rows;
    let parts = batch_parts(g);
    let mut partials: Vec<Vec<T>> = Vec::with_capacity(parts);
    for _ in 0..parts {
        partials.push(crate::storage::try_vec::<T>(wlen)?);
    }
    let partial_chunks = Chunks::new(&mut partials, 1);
    over_batch(g.n, parts, &|s0, s1, p| {
        partial_chunks.with(p, |acc| {
            let acc = &mut acc[0];
            let gl = group_len::<T>(g, s1 - s0);
            let mut gathered = try_vec::<T>(if gl > 1 { g.og * gl * l } else { 0 })?;
            let mut cols = try_vec::<T>(rows * gl * l)?;
            for first in (s0..s1).step_by(gl) {
                let cnt = gl.min(s1 - first);
                let width = cnt * l;
                for gi in 0..g.groups {
                    im2col_samples(image, g, gi, first, cnt, &mut cols);
                    let a = matrices(matrix, g, gi, first, cnt, &mut gathered);
                    let b = mat(&cols, 0, 1, width); // the columns transposed: width x rows
                    let d = &mut acc[gi * g.og * rows..(gi + 1) * g.og * rows];
                    gemm(parts > 1, g.og, width, rows, a, b, d, true);
                }
            }
            Ok(())
        })
    })?;
    let mut total = partials.swap_remove(0);
    for p in partials {
        for (t, v) in total.iter_mut().zip(p) {
            *t = *t + v;
        }
    }
    Ok(total)
}

// --- pooling ----------------------------------------------------------------------------------

/// `pooling_output_shape` of PyTorch: the number of windows along one dim.
pub fn pool_out_len(
    len: usize,
    k: usize,
    pad: usize,
    stride: usize,
    dilation: usize,
    ceil: bool,
) -> i64 {
    // in i128: huge hostile sizes cannot overflow; the count saturates at i64's range
    let (len, k, pad, stride, dil) = (
        len as i128,
        k as i128,
        pad as i128,
        stride as i128,
        dilation as i128,
    );
    let num = len + 2 * pad - dil * (k - 1) - 1 + if ceil { stride - 1 } else { 0 };
    let mut out = num.div_euclid(stride) + 1;
    if ceil && (out - 1) * stride >= len + pad {
        out -= 1;
    }
    out.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// One max-pooling geometry over planes of h x w.
#[derive(Clone, Copy, Debug)]
pub struct PoolGeom {
    pub planes: usize,
    pub h: usize,
    pub w: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub ph: usize,
    pub pw: usize,
    pub dh: usize,
    pub dw: usize,
    pub oh: usize,
    pub ow: usize,
}

impl PoolGeom {
    /// Checks that the window arithmetic of `max_pool` (in isize) and its outputs cannot
    /// overflow.
    pub fn check(&self) -> Result<()> {
        let fits = |v: Option<usize>| v.filter(|&x| x <= isize::MAX as usize / 2).is_some();
        let reach = |o: usize, s: usize, k: usize, d: usize, p: usize| {
            o.checked_mul(s)
                .zip(k.checked_mul(d))
                .and_then(|(a, b)| a.checked_add(b))
                .and_then(|a| a.checked_add(p))
        };
        let ok = fits(reach(self.oh, self.sh, self.kh, self.dh, self.ph))
            && fits(reach(self.ow, self.sw, self.kw, self.dw, self.pw))
            && fits(crate::layout::checked_numel(&[self.planes, self.oh, self.ow]).ok())
            && fits(crate::layout::checked_numel(&[self.planes, self.h, self.w]).ok());
        if ok {
            Ok(())
        } else {
            Err(crate::error::Error::Runtime(format!(
                "max pooling sizes overflow: kernel {}x{}, stride {}x{}, padding {}x{}, dilation {}x{}",
                self.kh, self.kw, self.sh, self.sw, self.ph, self.pw, self.dh, self.dw
            )))
        }
    }
}

/// The first position `start + i * step` (i >= 0) that is not negative.
fn first_inside(start: isize, step: usize) -> isize {
    if start >= 0 {
        start
    } else {
        let back = start.unsigned_abs().div_ceil(step) * step;
        start + back as isize
    }
}

/// Max pooling with PyTorch's CPU rule: the first maximum of a window wins, NaN wins over
/// numbers; indices are positions in the h*w plane.
pub fn max_pool<T: Real + Elem>(x: &[T], g: &PoolGeom) -> Result<(Vec<T>, Vec<i64>)> {
    g.check()?;
    let (hw, ohw) = (g.h * g.w, g.oh * g.ow);
    let n = g.planes * ohw;
    let mut vals = try_vec::<T>(n)?;
    let mut idx = try_vec::<i64>(n)?;
    // every window inside the plane, no dilation: per output row, each window element is
    // compared across all output columns at once (a loop that vectorises), in PyTorch's
    // window order, so the first maximum still wins
    let inside = g.ph == 0
        && g.pw == 0
        && g.dh == 1
        && g.dw == 1
        && (g.oh.max(1) - 1) * g.sh + g.kh <= g.h
        && (g.ow.max(1) - 1) * g.sw + g.kw <= g.w;
    let run_inside = |p: usize, vals: &mut [T], idx: &mut [i64]| {
        let src = &x[p * hw..(p + 1) * hw];
        #[cfg(target_arch = "x86_64")]
        match super::simd::x86::level() {
            super::simd::x86::Level::Avx512 => {
                // SAFETY: level() returned Avx512 only after is_x86_feature_detected! confirmed
                // avx512f, avx512dq, avx2 and fma, the features the function enables.
                return unsafe { wide::pool_inside_avx512(src, g, vals, idx) };
            }
            super::simd::x86::Level::Avx2 => {
                // SAFETY: level() returned Avx2 only after detecting avx2 and fma.
                return unsafe { wide::pool_inside_avx2(src, g, vals, idx) };
            }
            super::simd::x86::Level::Base => {}
        }
        pool_inside(src, g, vals, idx)
    };
    let run_plane = |p: usize, vals: &mut [T], idx: &mut [i64]| {
        if inside {
            return run_inside(p, vals, idx);
        }
        let src = &x[p * hw..(p + 1) * hw];
        for oy in 0..g.oh {
            let y0 = oy as isize * g.sh as isize - g.ph as isize;
            let y1 = (y0 + ((g.kh - 1) * g.dh + 1) as isize).min(g.h as isize);
            let y0 = first_inside(y0, g.dh);
            for ox in 0..g.ow {
                let x0 = ox as isize * g.sw as isize - g.pw as isize;
                let x1 = (x0 + ((g.kw - 1) * g.dw + 1) as isize).min(g.w as isize);
                let x0 = first_inside(x0, g.dw);
                let mut best = T::of(f64::NEG_INFINITY);
                let mut at = (y0 * g.w as isize + x0) as i64;
                if g.dh == 1 && g.dw == 1 {
                    // contiguous window rows
                    let (xa, xb) = (x0.max(0) as usize, x1.max(x0).max(0) as usize);
                    for y in y0.max(0) as usize..y1.max(0) as usize {
                        let row = &src[y * g.w + xa..y * g.w + xb];
                        for (k, &v) in row.iter().enumerate() {
                            if v > best || v.is_nan() {
                                best = v;
                                at = (y * g.w + xa + k) as i64;
                            }
                        }
                    }
                } else {
                    let mut y = y0;
                    while y < y1 {
                        let mut xx = x0;
                        while xx < x1 {
                            let i = y as usize * g.w + xx as usize;
                            let v = src[i];
                            if v > best || v.is_nan() {
                                best = v;
                                at = i as i64;
                            }
                            xx += g.dw as isize;
                        }
                        y += g.dh as isize;
                    }
                }
                vals[oy * g.ow + ox] = best;
                idx[oy * g.ow + ox] = at;
            }
        }
    };
    for_each_plane(
        g.planes,
        ohw,
        g.planes * hw,
        &mut vals,
        &mut idx,
        &run_plane,
    );
    Ok((vals, idx))
}

/// Max pooling along the rows (`g.w` long, `g.h == 1`) without indices: PyTorch's `max_pool1d`
/// when neither the indices nor a gradient are wanted. Per row, the outputs whose windows lie
/// inside the row window by window without bound checks (side-by-side windows of 2 to 4 in a
/// loop the compiler vectorises), then the edge outputs. The rule is `max_pool`'s: NaN wins,
/// else the maximum.
pub fn max_pool1d_values<T: Real + Elem>(x: &[T], g: &PoolGeom) -> Result<Vec<T>> {
    g.check()?;
    let (l, ol) = (g.w, g.ow);
    let mut out = try_vec::<T>(g.planes * ol)?;
    if ol == 0 {
        return Ok(out);
    }
    let run = |first: usize, out: &mut [T]| {
        for (r, o) in out.chunks_mut(ol).enumerate() {
            let row = first + r;
            pool1d_row(&x[row * l..(row + 1) * l], o, g);
        }
    };
    if par_ok(
        g.planes * l * g.kw / g.sw.max(1),
        super::PAR_THRESHOLD_COSTLY,
    ) && g.planes > 1
    {
        let threads = super::num_threads().min(g.planes);
        let per = g.planes.div_ceil(threads);
        let chunks = Chunks::new(&mut out, per * ol);
        super::parallel::run_parts(chunks.0.len(), &|p| chunks.with(p, |o| run(p * per, o)));
    } else {
        run(0, &mut out);
    }
    Ok(out)
}

/// `out[j]` = the maximum of `src[j * K..(j + 1) * K]` (NaN wins).
#[inline(always)]
fn windows<T: Real, const K: usize>(src: &[T], out: &mut [T]) {
    for (o, w) in out.iter_mut().zip(src.chunks_exact(K)) {
        let mut m = w[0];
        for &v in &w[1..] {
            m = nan_max(m, v);
        }
        *o = m;
    }
}

#[inline(always)]
fn nan_max<T: Real>(m: T, v: T) -> T {
    // `|`, not `||`: one select, no branch to mispredict on unordered data
    if (v > m) | v.is_nan() {
        v
    } else {
        m
    }
}

/// One row of `max_pool1d_values`.
fn pool1d_row<T: Real>(row: &[T], out: &mut [T], g: &PoolGeom) {
    let (l, ol, k, s, p, d) = (g.w, g.ow, g.kw, g.sw, g.pw, g.dw);
    let span = (k - 1) * d + 1;
    // outputs whose whole window is inside the row: j * s >= p and j * s - p + span <= l
    let lo = p.div_ceil(s).min(ol);
    let hi = if l + p >= span {
        ((l + p - span) / s + 1).min(ol)
    } else {
        0
    }
    .max(lo);
    for j in (0..lo).chain(hi..ol) {
        // the taps start + t * d inside [0, l) only (a huge kernel or padding costs nothing)
        let start = j as isize * s as isize - p as isize;
        let first = first_inside(start, d);
        let mut m = T::of(f64::NEG_INFINITY);
        let end = (start + span as isize).min(l as isize);
        let mut i = first;
        while i < end {
            m = nan_max(m, row[i as usize]);
            i += d as isize;
        }
        out[j] = m;
    }
    if lo == hi {
        return;
    }
    let inner = &mut out[lo..hi];
    // lo * s >= p: the first inside window
    let src = &row[lo * s - p..];
    // windows side by side (the default stride): one pass, each window's maximum in registers
    match (k, s, d) {
        (2, 2, 1) => return windows::<T, 2>(src, inner),
        (3, 3, 1) => return windows::<T, 3>(src, inner),
        (4, 4, 1) => return windows::<T, 4>(src, inner),
        _ => {}
    }
    for (o, w) in inner.iter_mut().zip(src.windows(span).step_by(s)) {
        let mut m = w[0];
        for t in 1..k {
            m = nan_max(m, w[t * d]);
        }
        *o = m;
    }
}

/// A pooling kernel of one plane: (plane, its values, its indices).
type PlaneFn<'a, T> = dyn Fn(usize, &mut [T], &mut [i64]) + Sync + 'a;

/// `run(p, vals, idx)` for every plane p, with that plane's `per_plane` outputs (values and
/// indices), the planes split over the threads when `work` (elements read) is worth it.
fn for_each_plane<T: Send>(
    planes: usize,
    per_plane: usize,
    work: usize,
    vals: &mut [T],
    idx: &mut [i64],
    run: &PlaneFn<'_, T>,
) {
    if per_plane == 0 {
        return;
    }
    let run_from = |start: usize, vals: &mut [T], idx: &mut [i64]| {
        let chunks = vals.chunks_mut(per_plane).zip(idx.chunks_mut(per_plane));
        for (k, (v, i)) in chunks.enumerate() {
            run(start + k, v, i);
        }
    };
    // (a compare and a select per element read: the threshold of the costlier maps)
    if par_ok(work, super::PAR_THRESHOLD_COSTLY) && planes > 1 {
        let threads = super::num_threads().min(planes);
        let per = planes.div_ceil(threads);
        let vc = Chunks::new(vals, per * per_plane);
        let ic = Chunks::new(idx, per * per_plane);
        super::parallel::run_parts(vc.0.len(), &|p| {
            vc.with(p, |v| ic.with(p, |i| run_from(p * per, v, i)));
        });
    } else {
        run_from(0, vals, idx);
    }
}

/// PyTorch's adaptive bin `i` of `n` positions pooled to `o`: [floor(i n / o),
/// ceil((i + 1) n / o)), never empty for n, o >= 1.
fn adaptive_bin(i: usize, n: usize, o: usize) -> (usize, usize) {
    let (i, n, o) = (i as u128, n as u128, o as u128);
    ((i * n / o) as usize, ((i + 1) * n).div_ceil(o) as usize)
}

/// Adaptive max pooling of `planes` volumes of `size` = [d, h, w] (row-major, contiguous)
/// to `out` = [od, oh, ow] bins, as PyTorch's CPU kernel: a larger value or any NaN replaces
/// the bin's maximum so far (raster order); indices are positions in the d*h*w volume.
/// 1-d and 2-d pooling are d = h = 1 and d = 1.
pub fn adaptive_max_pool<T: Real + Elem>(
    x: &[T],
    planes: usize,
    size: [usize; 3],
    out: [usize; 3],
) -> Result<(Vec<T>, Vec<i64>)> {
    let [_, h, w] = size;
    let vol = size.iter().product::<usize>();
    let ovol = crate::layout::checked_numel(&out)?;
    let n = crate::layout::checked_numel(&[planes, ovol])?;
    let mut vals = try_vec::<T>(n)?;
    let mut idx = try_vec::<i64>(n)?;
    if size.contains(&0) {
        return Ok((vals, idx)); // no bins to fill (the caller rejects empty inputs)
    }
    let bins: [Vec<(usize, usize)>; 3] = std::array::from_fn(|k| {
        (0..out[k])
            .map(|i| adaptive_bin(i, size[k], out[k]))
            .collect()
    });
    let run_plane = |p: usize, vals: &mut [T], idx: &mut [i64]| {
        let src = &x[p * vol..(p + 1) * vol];
        let mut o = 0;
        for &(z0, z1) in &bins[0] {
            for &(y0, y1) in &bins[1] {
                for &(x0, x1) in &bins[2] {
                    let mut best = T::of(f64::NEG_INFINITY);
                    let mut at = (z0 * h + y0) * w + x0;
                    for z in z0..z1 {
                        for y in y0..y1 {
                            let row = (z * h + y) * w;
                            for (k, &v) in src[row + x0..row + x1].iter().enumerate() {
                                if beats(v, best) {
                                    best = v;
                                    at = row + x0 + k;
                                }
                            }
                        }
                    }
                    vals[o] = best;
                    idx[o] = at as i64;
                    o += 1;
                }
            }
        }
    };
    for_each_plane(planes, ovol, planes * vol, &mut vals, &mut idx, &run_plane);
    Ok((vals, idx))
}

/// `v` replaces the window's maximum so far under PyTorch's rule: a larger value or any NaN.
#[inline(always)]
fn beats<T: Real>(v: T, best: T) -> bool {
    v > best || v.is_nan()
}

/// 2x2 stride-2 windows over input rows `r0`, `r1` (`base`: r0's offset in the plane, `w` the
/// plane's width), outputs `from..` in groups of L: each group's windows compared lane by lane
/// (the winner kept as a code 0..3 in a 32-bit lane, so the loop vectorises). Returns the first
/// output left.
#[inline(always)]
fn pool_2x2_lanes<T: Real, const L: usize>(
    r0: &[T],
    r1: &[T],
    vals: &mut [T],
    idx: &mut [i64],
    from: usize,
    base: i64,
    w: usize,
) -> usize {
    let mut ox = from;
    while ox + L <= vals.len() {
        let (top, bottom) = (&r0[2 * ox..2 * ox + 2 * L], &r1[2 * ox..2 * ox + 2 * L]);
        let mut best = [T::of(0.0); L];
        let mut code = [0u32; L];
        for l in 0..L {
            best[l] = top[2 * l];
        }
        for (c, row, dx) in [(1u32, top, 1), (2, bottom, 0), (3, bottom, 1)] {
            for l in 0..L {
                let v = row[2 * l + dx];
                let take = beats(v, best[l]);
                best[l] = if take { v } else { best[l] };
                code[l] = if take { c } else { code[l] };
            }
        }
        vals[ox..ox + L].copy_from_slice(&best);
        for (l, i) in idx[ox..ox + L].iter_mut().enumerate() {
            let c = code[l] as i64;
            *i = base + 2 * (ox + l) as i64 + (c & 1) + (c >> 1) * w as i64;
        }
        ox += L;
    }
    ox
}

/// Max pooling of one plane whose windows all lie inside it (no padding, no dilation), window
/// by window in PyTorch's order (rows, then columns), so the first maximum wins. The 2x2,
/// stride-2 case has its own straight-line loop over pairs of input rows.
#[inline(always)]
fn pool_inside<T: Real + Elem>(src: &[T], g: &PoolGeom, vals: &mut [T], idx: &mut [i64]) {
    let (w, ow) = (g.w, g.ow);
    if (g.kh, g.kw, g.sh, g.sw) == (2, 2, 2, 2) {
        for oy in 0..g.oh {
            let y = 2 * oy;
            let (r0, r1) = (&src[y * w..][..2 * ow], &src[(y + 1) * w..][..2 * ow]);
            let (v, i) = (
                &mut vals[oy * ow..(oy + 1) * ow],
                &mut idx[oy * ow..(oy + 1) * ow],
            );
            let base = (y * w) as i64;
            let mut ox = pool_2x2_lanes::<T, 8>(r0, r1, v, i, 0, base, w);
            ox = pool_2x2_lanes::<T, 4>(r0, r1, v, i, ox, base, w);
            pool_2x2_lanes::<T, 1>(r0, r1, v, i, ox, base, w);
        }
        return;
    }
    for oy in 0..g.oh {
        for ox in 0..ow {
            let (y0, x0) = (oy * g.sh, ox * g.sw);
            let (mut best, mut at) = (src[y0 * w + x0], (y0 * w + x0) as i64);
            for y in y0..y0 + g.kh {
                for (k, &v) in src[y * w + x0..y * w + x0 + g.kw].iter().enumerate() {
                    if beats(v, best) {
                        (best, at) = (v, (y * w + x0 + k) as i64);
                    }
                }
            }
            vals[oy * ow + ox] = best;
            idx[oy * ow + ox] = at;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use super::*;

    #[target_feature(enable = "avx2,fma")]
    pub fn pool_inside_avx2<T: Real + Elem>(
        src: &[T],
        g: &PoolGeom,
        vals: &mut [T],
        idx: &mut [i64],
    ) {
        pool_inside(src, g, vals, idx)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub fn pool_inside_avx512<T: Real + Elem>(
        src: &[T],
        g: &PoolGeom,
        vals: &mut [T],
        idx: &mut [i64],
    ) {
        pool_inside(src, g, vals, idx)
    }
}

/// The adjoint of max pooling's selection: `out[p, idx[p, o]] += g[p, o]` over `planes` planes
/// of `hw` elements (gradients of `ohw` windows each).
pub fn max_pool_scatter<T: Real + Elem>(
    g: &[T],
    idx: &[i64],
    planes: usize,
    hw: usize,
    ohw: usize,
) -> Result<Vec<T>> {
    let mut out = try_vec::<T>(planes * hw)?;
    for p in 0..planes {
        let dst = &mut out[p * hw..(p + 1) * hw];
        for (&v, &i) in g[p * ohw..(p + 1) * ohw]
            .iter()
            .zip(&idx[p * ohw..(p + 1) * ohw])
        {
            dst[i as usize] = dst[i as usize] + v;
        }
    }
    Ok(out)
}

/// An averaging window: rows [y0, y1), columns [x0, x1), and what the sum is divided by.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub y0: usize,
    pub y1: usize,
    pub x0: usize,
    pub x1: usize,
    pub div: f64,
}

/// Averaging windows of `avg_pool2d` (PyTorch's divisor rules).
#[allow(clippy::too_many_arguments)]
pub fn avg_windows(
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
    count_include_pad: bool,
    divisor: Option<i64>,
) -> Result<Vec<Window>> {
    let mut out = alloc(window_count(oh, ow)?)?;
    for oy in 0..oh {
        for ox in 0..ow {
            let y0 = (oy * stride.0) as i64 - padding.0 as i64;
            let x0 = (ox * stride.1) as i64 - padding.1 as i64;
            let y1 = (y0 + kernel.0 as i64).min((h + padding.0) as i64);
            let x1 = (x0 + kernel.1 as i64).min((w + padding.1) as i64);
            let pool_size = (y1 - y0) * (x1 - x0);
            let (y0, x0) = (y0.max(0), x0.max(0));
            let (y1, x1) = (y1.min(h as i64), x1.min(w as i64));
            let div = match divisor {
                Some(d) => d,
                None if count_include_pad => pool_size,
                None => (y1 - y0) * (x1 - x0),
            };
            out.push(Window {
                y0: y0 as usize,
                y1: y1.max(y0) as usize,
                x0: x0 as usize,
                x1: x1.max(x0) as usize,
                div: div as f64,
            });
        }
    }
    Ok(out)
}

/// `oh * ow` windows, or an error when that count overflows.
fn window_count(oh: usize, ow: usize) -> Result<usize> {
    crate::layout::checked_numel(&[oh, ow])
}

/// Windows of `adaptive_avg_pool2d`: [floor(i*h/oh), ceil((i+1)*h/oh)).
pub fn adaptive_windows(h: usize, w: usize, oh: usize, ow: usize) -> Result<Vec<Window>> {
    let start = |i: usize, len: usize, out: usize| (i * len) / out;
    let end = |i: usize, len: usize, out: usize| ((i + 1) * len).div_ceil(out);
    let mut v = alloc(window_count(oh, ow)?)?;
    for oy in 0..oh {
        for ox in 0..ow {
            let (y0, y1) = (start(oy, h, oh), end(oy, h, oh));
            let (x0, x1) = (start(ox, w, ow), end(ox, w, ow));
            v.push(Window {
                y0,
                y1,
                x0,
                x1,
                div: ((y1 - y0) * (x1 - x0)) as f64,
            });
        }
    }
    Ok(v)
}

/// out[p, o] = sum of x[p, window o] / div (windows shared by all planes).
pub fn window_avg<T: Real + Elem>(
    x: &[T],
    planes: usize,
    h: usize,
    w: usize,
    windows: &[Window],
) -> Result<Vec<T>> {
    let mut out = alloc(planes * windows.len())?;
    for p in 0..planes {
        let src = &x[p * h * w..(p + 1) * h * w];
        for win in windows {
            let mut s = T::of(0.0);
            for y in win.y0..win.y1 {
                for v in &src[y * w + win.x0..y * w + win.x1] {
                    s = s + *v;
                }
            }
            out.push(if win.y0 >= win.y1 || win.x0 >= win.x1 {
                T::of(0.0)
            } else {
                s / T::of(win.div)
            });
        }
    }
    Ok(out)
}

/// The adjoint of `window_avg`: every window spreads g / div over its positions.
pub fn window_avg_adjoint<T: Real + Elem>(
    g: &[T],
    planes: usize,
    h: usize,
    w: usize,
    windows: &[Window],
) -> Result<Vec<T>> {
    let mut out = try_vec::<T>(planes * h * w)?;
    for p in 0..planes {
        let dst = &mut out[p * h * w..(p + 1) * h * w];
        for (win, &gv) in windows
            .iter()
            .zip(&g[p * windows.len()..(p + 1) * windows.len()])
        {
            if win.y0 >= win.y1 || win.x0 >= win.x1 {
                continue;
            }
            let v = gv / T::of(win.div);
            for y in win.y0..win.y1 {
                for d in &mut dst[y * w + win.x0..y * w + win.x1] {
                    *d = *d + v;
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geom(c: usize, h: usize, w: usize, k: usize, s: usize, p: usize, d: usize) -> Geom {
        let o = |len: usize| (len + 2 * p - d * (k - 1) - 1) / s + 1;
        Geom {
            n: 2,
            groups: 1,
            c,
            h,
            w,
            og: 3,
            kh: k,
            kw: k,
            sh: s,
            sw: s,
            ph: p,
            pw: p,
            dh: d,
            dw: d,
            oh: o(h),
            ow: o(w),
        }
    }

    /// <im2col(x), y> == <x, col2im(y)> for arbitrary x, y: col2im is im2col's adjoint.
    #[test]
    fn col2im_is_the_adjoint_of_im2col() {
        for (k, s, p, d) in [(3, 1, 1, 1), (2, 2, 0, 1), (3, 2, 2, 2), (1, 1, 0, 1)] {
            let g = geom(2, 5, 6, k, s, p, d);
            let x: Vec<f64> = (0..g.c * g.h * g.w)
                .map(|i| (i as f64 * 0.37).sin())
                .collect();
            let y: Vec<f64> = (0..g.rows() * g.cols())
                .map(|i| (i as f64 * 0.11).cos())
                .collect();
            let mut cols = vec![0.0; g.rows() * g.cols()];
            im2col(&x, &g, &mut cols);
            let mut back = vec![0.0; x.len()];
            col2im(&y, &g, &mut back);
            let lhs: f64 = cols.iter().zip(&y).map(|(a, b)| a * b).sum();
            let rhs: f64 = x.iter().zip(&back).map(|(a, b)| a * b).sum();
            assert!((lhs - rhs).abs() < 1e-9, "{k} {s} {p} {d}: {lhs} {rhs}");
        }
    }

    fn spans(ws: &[Window]) -> Vec<(usize, usize, usize, usize)> {
        ws.iter().map(|w| (w.y0, w.y1, w.x0, w.x1)).collect()
    }

    #[test]
    fn avg_windows_clip_to_the_image_and_follow_pytorchs_divisors() {
        // 3 x 3, kernel 2, stride 2, padding 1: windows of 1 or 2 rows / columns
        let (k, s, p) = ((2, 2), (2, 2), (1, 1));
        let ws = avg_windows(3, 3, 2, 2, k, s, p, true, None).unwrap();
        assert_eq!(
            spans(&ws),
            vec![(0, 1, 0, 1), (0, 1, 1, 3), (1, 3, 0, 1), (1, 3, 1, 3)]
        );
        // count_include_pad: the padded window's area
        assert!(ws.iter().all(|w| w.div == 4.0));
        // without: the area inside the image
        let ws = avg_windows(3, 3, 2, 2, k, s, p, false, None).unwrap();
        let divs: Vec<f64> = ws.iter().map(|w| w.div).collect();
        assert_eq!(divs, vec![1.0, 2.0, 2.0, 4.0]);
        // divisor_override wins
        let ws = avg_windows(3, 3, 2, 2, k, s, p, false, Some(7)).unwrap();
        assert!(ws.iter().all(|w| w.div == 7.0));
        // ceil mode: the last window runs past the image (no padding) and is not padded
        let ws = avg_windows(3, 3, 2, 2, (2, 2), (2, 2), (0, 0), true, None).unwrap();
        assert_eq!(spans(&ws)[3], (2, 3, 2, 3));
        let divs: Vec<f64> = ws.iter().map(|w| w.div).collect();
        assert_eq!(divs, vec![4.0, 2.0, 2.0, 1.0]);
    }

    #[test]
    fn adaptive_windows_floor_start_and_ceil_end() {
        // 5 rows into 3: [0, 2), [1, 4), [3, 5); 2 columns into 1
        let ws = adaptive_windows(5, 2, 3, 1).unwrap();
        assert_eq!(spans(&ws), vec![(0, 2, 0, 2), (1, 4, 0, 2), (3, 5, 0, 2)]);
        let divs: Vec<f64> = ws.iter().map(|w| w.div).collect();
        assert_eq!(divs, vec![4.0, 6.0, 4.0]);
        assert!(adaptive_windows(4, 4, usize::MAX, 2).is_err());
    }

    #[test]
    fn pool_output_lengths_follow_pytorch() {
        assert_eq!(pool_out_len(5, 2, 0, 2, 1, false), 2);
        assert_eq!(pool_out_len(5, 2, 0, 2, 1, true), 3);
        // the last window would start in the padding only: dropped
        assert_eq!(pool_out_len(4, 2, 1, 2, 1, true), 3);
    }
}
