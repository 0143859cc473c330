//! Index kernels: gather, scatter, scatter_add and index_put over contiguous buffers, the
//! storage offsets advanced indexing reads, nonzero, one_hot, and embedding's gradient scale.
//! Index values are int64, negative ones counted from the end where PyTorch allows it.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{contiguous_strides, Layout};
use crate::storage::{alloc, try_collect, try_filled, Elem};

/// Index `i` of a dim of `size` (negative: from the end), with PyTorch's IndexError.
pub fn wrap_index(i: i64, size: usize, dim: usize) -> Result<usize> {
    let s = size as i64;
    let w = if i < 0 { i + s } else { i };
    if w < 0 || w >= s {
        return Err(Error::Index(format!(
            "index {i} is out of bounds for dimension {dim} with size {size}"
        )));
    }
    Ok(w as usize)
}

/// Every index of `idx` wrapped into a dim of `size` (`wrap_index`), or the first error.
pub fn wrap_indices(idx: &[i64], size: usize, dim: usize) -> Result<Vec<i64>> {
    idx.iter()
        .map(|&i| wrap_index(i, size, dim).map(|w| w as i64))
        .collect()
}

/// Row-major multi-index of flat position `i` in `shape`.
pub fn unravel(mut i: usize, shape: &[usize], out: &mut [usize]) {
    for d in (0..shape.len()).rev() {
        out[d] = i % shape[d].max(1);
        i /= shape[d].max(1);
    }
}

/// `a + b` as accumulating index ops add: wrapping for int64, `or` for bools, in f64 for floats.
#[inline(always)]
pub fn add_elem<T: Elem>(a: T, b: T) -> T {
    match T::DTYPE {
        DType::I64 => T::from_i64(a.to_i64().wrapping_add(b.to_i64())),
        DType::Bool => T::from_bool(a.is_true() || b.is_true()),
        _ => T::from_f64(a.to_f64() + b.to_f64()),
    }
}

/// The first index of `idx` outside `0..size` (negative ones too, as PyTorch's gather and
/// scatter), found with one vectorised pass when every index is in range.
fn first_out_of_range(idx: &[i64], size: usize) -> Option<i64> {
    let out = |i: i64| (i as u64) >= size as u64;
    let any = idx
        .chunks(256)
        .any(|c| c.iter().fold(false, |b, &i| b | out(i)));
    if any {
        idx.iter().copied().find(|&i| out(i))
    } else {
        None
    }
}

/// `take`'s indices into `n` elements checked (PyTorch's IndexError names the first one out of
/// range), and wrapped into a new vector when one of them counts from the end.
pub fn take_indices(idx: &[i64], n: usize) -> Result<Option<Vec<i64>>> {
    let n = n as i64;
    let bad = |i: i64| i < -n || i >= n;
    if idx
        .chunks(256)
        .any(|c| c.iter().fold(false, |b, &i| b | bad(i)))
    {
        let i = idx
            .iter()
            .copied()
            .find(|&i| bad(i))
            .expect("an index out of range");
        return Err(Error::Index(format!(
            "out of range: tried to access index {i} on a tensor of {n} elements."
        )));
    }
    if idx.iter().all(|&i| i >= 0) {
        return Ok(None);
    }
    try_collect(
        idx.len(),
        idx.iter().map(|&i| if i < 0 { i + n } else { i }),
    )
    .map(Some)
}

/// The start offsets, in `N` layouts over one shape, of the rows (all dims but the last) from
/// row `row` on, advanced odometer-style: one division per walk, none per row.
struct Rows<'a, const N: usize> {
    shape: &'a [usize],
    strides: [&'a [usize]; N],
    at: Vec<usize>,
    off: [usize; N],
}

impl<'a, const N: usize> Rows<'a, N> {
    /// `shape` and `strides` are the outer dims (the last dim left out).
    fn new(shape: &'a [usize], strides: [&'a [usize]; N], base: [usize; N], row: usize) -> Self {
        let mut at = vec![0usize; shape.len()];
        unravel(row, shape, &mut at);
        let mut off = base;
        for (o, s) in off.iter_mut().zip(strides) {
            *o += at.iter().zip(s.iter()).map(|(i, s)| i * s).sum::<usize>();
        }
        Rows {
            shape,
            strides,
            at,
            off,
        }
    }

    fn next(&mut self) {
        for d in (0..self.shape.len()).rev() {
            self.at[d] += 1;
            for (o, s) in self.off.iter_mut().zip(self.strides) {
                *o += s[d];
            }
            if self.at[d] < self.shape[d] {
                return;
            }
            for (o, s) in self.off.iter_mut().zip(self.strides) {
                *o -= s[d] * self.shape[d];
            }
            self.at[d] = 0;
        }
    }
}

/// `gather` along `dim`: `out[p] = src[walk(p) + step * idx[p]]` for every position `p` of the
/// index's shape in row-major order, where `walk` lays the source's offsets over the index's
/// shape (the gathered dim's stride zeroed) and `idx` is the contiguous index of that shape.
/// An index outside `0..size` (negative included) is PyTorch's RuntimeError, raised before
/// anything is read. Row by row, without per-element index arithmetic; split across threads
/// above `PAR_THRESHOLD` output elements.
pub fn gather<T: Copy + Send + Sync>(
    src: &[T],
    walk: &Layout,
    idx: &[i64],
    size: usize,
    step: usize,
    dim: usize,
) -> Result<Vec<T>> {
    let out_of_range = |bad: i64| {
        Error::Runtime(format!(
            "index {bad} is out of bounds for dimension {dim} with size {size}"
        ))
    };
    let n = idx.len();
    let nd = walk.shape.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    if size == 0 {
        return Err(out_of_range(idx[0]));
    }
    if nd == 0 {
        if let Some(bad) = first_out_of_range(idx, size) {
            return Err(out_of_range(bad));
        }
        let mut v = alloc(1)?;
        v.push(src[walk.offset + idx[0] as usize * step]);
        return Ok(v);
    }
    let len = walk.shape[nd - 1];
    let inner = walk.strides[nd - 1];
    let (oshape, ostrides) = (&walk.shape[..nd - 1], &walk.strides[..nd - 1]);
    // indices are checked as they are read (an index out of range reads the last position
    // instead and is reported after the pass), so that the index is read once
    let lim = (size - 1) as u64;
    let bad = std::sync::atomic::AtomicBool::new(false);
    let v = super::build_with(n, super::PAR_THRESHOLD, |start, dst| {
        let mut out_of = false;
        let end = start + dst.len();
        let mut row = start / len;
        let mut rows = Rows::new(oshape, [ostrides], [walk.offset], row);
        let mut pos = start;
        while pos < end {
            let stop = end.min((row + 1) * len);
            let (ir, out) = (&idx[pos..stop], &mut dst[pos - start..stop - start]);
            let [base] = rows.off;
            if inner == 0 {
                let row_src = &src[base..base + lim as usize * step + 1];
                for (o, &i) in out.iter_mut().zip(ir) {
                    out_of |= i as u64 > lim;
                    o.write(row_src[(i as u64).min(lim) as usize * step]);
                }
            } else {
                let b = base + (pos - row * len) * inner;
                for (k, (o, &i)) in out.iter_mut().zip(ir).enumerate() {
                    out_of |= i as u64 > lim;
                    o.write(src[b + k * inner + (i as u64).min(lim) as usize * step]);
                }
            }
            pos = stop;
            row += 1;
            rows.next();
        }
        if out_of {
            bad.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        dst.len()
    })?;
    if bad.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(out_of_range(
            first_out_of_range(idx, size).expect("an index out of range"),
        ));
    }
    Ok(v)
}

/// `scatter_add` along `dim` into `dst` (contiguous, of `dst_shape`; a 0-d one has one element
/// along dim 0): `dst[.., idx[k], ..] += src[k's position]`, for `idx` contiguous of `ishape`
/// and `src` contiguous of `src_shape`. Negative indices count from the end; one out of range
/// is an IndexError and nothing is written. Row by row; split across threads by slabs of
/// `dst`'s first dim (which no two threads share) when `dim` is not 0.
pub fn scatter_add<T: Elem>(
    dst: &mut [T],
    dst_shape: &[usize],
    dim: usize,
    idx: &[i64],
    ishape: &[usize],
    src: &[T],
    src_shape: &[usize],
) -> Result<()> {
    let nd = ishape.len();
    let size = dst_shape.get(dim).copied().unwrap_or(1);
    if idx.is_empty() {
        return Ok(());
    }
    let wrapped;
    let idx = if first_out_of_range(idx, size).is_some() {
        wrapped = wrap_indices(idx, size, dim)?;
        &wrapped[..]
    } else {
        idx
    };
    let padded = |shape: &[usize]| -> Vec<usize> {
        let s = contiguous_strides(shape);
        (0..nd.max(1))
            .map(|q| s.get(q).copied().unwrap_or(0))
            .collect()
    };
    let (dstr, sstr) = (padded(dst_shape), padded(src_shape));
    for q in 0..nd {
        let (dsize, ssize) = (
            dst_shape.get(q).copied().unwrap_or(1),
            src_shape.get(q).copied().unwrap_or(1),
        );
        if (q != dim && ishape[q] > dsize) || ishape[q] > ssize {
            return Err(Error::Runtime(format!(
                "Expected index {} to be smaller than self {} apart from dimension {dim} and to be smaller size than src {}",
                crate::layout::fmt_list(ishape),
                crate::layout::fmt_list(dst_shape),
                crate::layout::fmt_list(src_shape)
            )));
        }
    }
    let step = dstr[dim];
    if nd == 0 {
        let o = idx[0] as usize * step;
        dst[o] = add_elem(dst[o], src[0]);
        return Ok(());
    }
    let mut dwalk = dstr.clone();
    dwalk[dim] = 0;
    let len = ishape[nd - 1];
    let (din, sin) = (dwalk[nd - 1], sstr[nd - 1]);
    let oshape = &ishape[..nd - 1];
    // rows `r0..r1` into `part`, the slab of `dst` starting at element `sub`
    let run = |part: &mut [T], sub: usize, r0: usize, r1: usize| {
        let mut rows = Rows::new(oshape, [&dwalk[..nd - 1], &sstr[..nd - 1]], [0, 0], r0);
        for r in r0..r1 {
            let [db, sb] = rows.off;
            let ir = &idx[r * len..(r + 1) * len];
            for (k, &i) in ir.iter().enumerate() {
                let o = db - sub + k * din + i as usize * step;
                part[o] = add_elem(part[o], src[sb + k * sin]);
            }
            rows.next();
        }
    };
    let rows_total = idx.len() / len.max(1);
    if len == 0 || rows_total == 0 {
        return Ok(());
    }
    if dim != 0 && nd >= 2 && super::par_ok(idx.len(), super::PAR_THRESHOLD) {
        let slab = dstr[0];
        let per = ishape[0].div_ceil(super::num_threads().max(1));
        let rows_per = rows_total / ishape[0];
        let parts: Vec<(usize, &mut [T])> = dst
            .chunks_mut(per * slab)
            .enumerate()
            .filter(|(k, _)| k * per < ishape[0])
            .collect();
        super::parallel::map_each(parts, &|_, (k, part)| {
            let (a, b) = (k * per, ishape[0].min((k + 1) * per));
            run(part, a * slab, a * rows_per, b * rows_per)
        });
    } else {
        run(dst, 0, 0, rows_total);
    }
    Ok(())
}

/// Collapses the dims of layouts of one shape into as few as possible (size-1 dims dropped,
/// neighbours merged where every layout steps through them as one), at least one dim.
fn coalesce<const N: usize>(ls: [&Layout; N]) -> (Vec<usize>, [Vec<usize>; N]) {
    let shape = &ls[0].shape;
    let mut out_shape: Vec<usize> = vec![];
    let mut out_strides: [Vec<usize>; N] = std::array::from_fn(|_| vec![]);
    for (d, &size) in shape.iter().enumerate() {
        if size == 1 {
            continue;
        }
        let merge = !out_shape.is_empty()
            && (0..N).all(|j| *out_strides[j].last().expect("a dim") == ls[j].strides[d] * size);
        if merge {
            *out_shape.last_mut().expect("a dim") *= size;
            for j in 0..N {
                *out_strides[j].last_mut().expect("a dim") = ls[j].strides[d];
            }
        } else {
            out_shape.push(size);
            for j in 0..N {
                out_strides[j].push(ls[j].strides[d]);
            }
        }
    }
    if out_shape.is_empty() {
        out_shape.push(1);
        for s in out_strides.iter_mut() {
            s.push(0);
        }
    }
    (out_shape, out_strides)
}

/// Row ranges of `rows` rows (of `len` elements) for the threads: one range, or one per
/// thread when `n` is above `PAR_THRESHOLD`.
fn row_parts(rows: usize, n: usize) -> Vec<(usize, usize)> {
    let parts = if super::par_ok(n, super::PAR_THRESHOLD) {
        super::num_threads().max(1).min(rows)
    } else {
        1
    };
    let per = rows.div_ceil(parts.max(1)).max(1);
    (0..rows)
        .step_by(per)
        .map(|a| (a, rows.min(a + per)))
        .collect()
}

/// Calls `f(j)` for each non-zero byte `m[j]`, in order: 64 bytes at a time turned into a bit
/// mask (SSE2 compares), then its set bits, so that the work follows the true elements and no
/// branch depends on each byte.
#[inline(always)]
fn for_each_true(m: &[u8], mut f: impl FnMut(usize)) {
    let chunks = m.chunks_exact(64);
    let rest = chunks.remainder();
    for (c, blk) in chunks.enumerate() {
        let mut bits = mask_bits(blk);
        while bits != 0 {
            f(c * 64 + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
    let off = m.len() - rest.len();
    for (j, &b) in rest.iter().enumerate() {
        if b != 0 {
            f(off + j);
        }
    }
}

/// Bit `j` set where `blk[j]` (64 bytes) is non-zero.
#[inline(always)]
fn mask_bits(blk: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_setzero_si128,
        };
        let mut bits = 0u64;
        for (q, s) in blk.chunks_exact(16).enumerate() {
            // SAFETY: `s` is 16 bytes long (chunks_exact), the length of an unaligned
            // 128-bit load; SSE2 is part of the x86_64 baseline, always enabled.
            let zero = unsafe {
                let v = _mm_loadu_si128(s.as_ptr().cast::<__m128i>());
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()))
            } as u32 as u64;
            bits |= (zero ^ 0xFFFF) << (q * 16);
        }
        bits
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        blk.iter()
            .enumerate()
            .fold(0u64, |b, (j, &v)| b | (((v != 0) as u64) << j))
    }
}

/// `masked_select`: the elements of `src` (read through `ls`) where `mask` (read through
/// `lm`, a layout of the same shape) is true, in row-major order. Counts the true elements of
/// each thread's rows, then each thread writes its rows' elements at its place, with a
/// branch-free compaction (every element written, the position advanced by the mask).
pub fn masked_select<T: Copy + Send + Sync>(
    src: &[T],
    ls: &Layout,
    mask: &[u8],
    lm: &Layout,
) -> Result<Vec<T>> {
    let n = ls.numel();
    if n == 0 {
        return Ok(Vec::new());
    }
    // the output may hold every element: refuse a count no allocation could hold before
    // counting (a mask expanded to 2**40 elements would take hours to count)
    crate::storage::checked_bytes::<T>(n)?;
    let (shape, [ss, sm]) = coalesce([ls, lm]);
    let nd = shape.len();
    let (len, si, mi) = (shape[nd - 1], ss[nd - 1], sm[nd - 1]);
    let (oshape, oss, osm) = (&shape[..nd - 1], &ss[..nd - 1], &sm[..nd - 1]);
    let parts = row_parts(n / len, n);
    let count = |&(r0, r1): &(usize, usize)| -> usize {
        let mut rows = Rows::new(oshape, [osm], [lm.offset], r0);
        let mut c = 0;
        for _ in r0..r1 {
            let [mo] = rows.off;
            c += if mi == 1 {
                mask[mo..mo + len]
                    .iter()
                    .map(|&b| (b != 0) as usize)
                    .sum::<usize>()
            } else {
                (0..len).map(|k| (mask[mo + k * mi] != 0) as usize).sum()
            };
            rows.next();
        }
        c
    };
    let counts: Vec<usize> = if parts.len() > 1 {
        super::parallel::map_each(parts.clone(), &|_, p| count(&p))
    } else {
        parts.iter().map(count).collect()
    };
    let total: usize = counts.iter().sum();
    let mut v = alloc::<T>(total)?;
    let mut spare = &mut v.spare_capacity_mut()[..total];
    let mut jobs = Vec::with_capacity(parts.len());
    for (&p, &c) in parts.iter().zip(&counts) {
        let (here, rest) = spare.split_at_mut(c);
        jobs.push((p, here));
        spare = rest;
    }
    let fill = |(r0, r1): (usize, usize), out: &mut [std::mem::MaybeUninit<T>]| {
        let mut rows = Rows::new(oshape, [oss, osm], [ls.offset, lm.offset], r0);
        let mut k = 0;
        for _ in r0..r1 {
            let [so, mo] = rows.off;
            if mi == 1 {
                let row = &src[so..so + (len - 1) * si + 1];
                for_each_true(&mask[mo..mo + len], |j| {
                    out[k].write(row[j * si]);
                    k += 1;
                });
            } else {
                for j in 0..len {
                    let (x, m) = (src[so + j * si], mask[mo + j * mi] != 0);
                    if k < out.len() {
                        out[k].write(x);
                    }
                    k += m as usize;
                }
            }
            rows.next();
        }
        assert_eq!(k, out.len(), "masked_select wrote every counted element");
    };
    if jobs.len() > 1 {
        super::parallel::map_each(jobs, &|_, (p, out)| fill(p, out));
    } else {
        for (p, out) in jobs {
            fill(p, out);
        }
    }
    // SAFETY: the parts of `spare[..total]` are disjoint and cover it (their lengths are the
    // counts, summing to `total`); each `fill` wrote positions 0..k of its part, every one of
    // them (position k is written before k advances), and asserted k == its length, a panic
    // propagating before this line.
    unsafe { v.set_len(total) };
    Ok(v)
}

/// `masked_scatter` into `out` (contiguous, of the mask's shape): the k-th element where the
/// mask (read through `lm`) is true becomes `src[k]`, the others are left as they are. Returns
/// how many elements the mask holds; when `src` has fewer, the positions past its end are left
/// as they are too (the caller raises).
pub fn masked_scatter<T: Copy>(out: &mut [T], src: &[T], mask: &[u8], lm: &Layout) -> usize {
    if out.is_empty() {
        return 0;
    }
    let (shape, [sm]) = coalesce([lm]);
    let nd = shape.len();
    let (len, mi) = (shape[nd - 1], sm[nd - 1]);
    let (oshape, osm) = (&shape[..nd - 1], &sm[..nd - 1]);
    let mut rows = Rows::new(oshape, [osm], [lm.offset], 0);
    let mut k = 0;
    for row in out.chunks_exact_mut(len) {
        let [mo] = rows.off;
        if mi == 1 {
            for_each_true(&mask[mo..mo + len], |j| {
                if let Some(&v) = src.get(k) {
                    row[j] = v;
                }
                k += 1;
            });
        } else {
            for (j, o) in row.iter_mut().enumerate() {
                if mask[mo + j * mi] != 0 {
                    if let Some(&v) = src.get(k) {
                        *o = v;
                    }
                    k += 1;
                }
            }
        }
        rows.next();
    }
    k
}

/// `masked_select`'s gradient: a contiguous buffer of the mask's shape holding `g`'s values,
/// in order, where the mask (read through `lm`) is true, zero elsewhere.
pub fn masked_scatter_zeros<T: Elem>(g: &[T], mask: &[u8], lm: &Layout) -> Result<Vec<T>> {
    let mut out = try_filled(lm.numel(), T::default())?;
    let k = masked_scatter(&mut out, g, mask, lm);
    if k != g.len() {
        return Err(Error::Runtime(format!(
            "masked_select backward: expected a gradient of {k} elements, got {}",
            g.len()
        )));
    }
    Ok(out)
}

/// `scatter` along `dim` into `dst` (contiguous, of `dst_shape`): `dst[.., idx[k], ..] = v` for
/// `idx` contiguous of `ishape`, `v` from `src` (contiguous values and their shape) at k's
/// position, or `number` without one. Indices are not wrapped: a negative or too large one is
/// PyTorch's RuntimeError, and stops the writes.
pub fn scatter<T: Copy>(
    dst: &mut [T],
    dst_shape: &[usize],
    dim: usize,
    idx: &[i64],
    ishape: &[usize],
    src: Option<(&[T], &[usize])>,
    number: T,
) -> Result<()> {
    let ostrides = contiguous_strides(dst_shape);
    let size = dst_shape[dim];
    let src = src.map(|(v, shape)| (v, contiguous_strides(shape)));
    let mut mi = vec![0usize; ishape.len()];
    for (kk, &ix) in idx.iter().enumerate() {
        let mut rem = kk;
        for (p, &s) in ishape.iter().enumerate().rev() {
            mi[p] = rem % s;
            rem /= s;
        }
        let v = match &src {
            Some((v, ss)) => v[mi.iter().zip(ss).map(|(i, s)| i * s).sum::<usize>()],
            None => number,
        };
        if ix < 0 || ix >= size as i64 {
            return Err(Error::Runtime(format!(
                "index {ix} is out of bounds for dimension {dim} with size {size}"
            )));
        }
        mi[dim] = ix as usize;
        let off: usize = mi.iter().zip(&ostrides).map(|(i, s)| i * s).sum();
        dst[off] = v;
    }
    Ok(())
}

/// `index_put`: `dst[offsets[k]] = values[k]`, or `+=` (`add_elem`) with `accumulate`.
pub fn put<T: Elem>(dst: &mut [T], offsets: &[usize], values: &[T], accumulate: bool) {
    for (k, &i) in offsets.iter().enumerate() {
        dst[i] = if accumulate {
            add_elem(dst[i], values[k])
        } else {
            values[k]
        };
    }
}

/// `dst[o, idx[i], j] += src[o, i, j]` for a contiguous `(outer, size, inner)` `dst` and
/// `(outer, idx.len(), inner)` `src` (index_add along the middle dim; every index `< size`):
/// one vectorised row add per index. Threads take blocks of `outer`, or when it is too short to
/// share, blocks of columns, so no two threads write one element (the order of the additions
/// into each element stays the order of `idx`).
pub fn index_add_rows<T>(dst: &mut [T], size: usize, inner: usize, idx: &[usize], src: &[T])
where
    T: Copy + Send + Sync + std::ops::Add<Output = T>,
{
    let n = idx.len();
    if dst.is_empty() || src.is_empty() {
        return; // nothing to add (a zero-size dim)
    }
    let outer = dst.len() / (size * inner);
    assert!(src.len() == outer * n * inner && idx.iter().all(|&i| i < size));
    let rows = |d: &mut [T], s: &[T]| {
        for (k, &i) in idx.iter().enumerate() {
            let (d, s) = (
                &mut d[i * inner..(i + 1) * inner],
                &s[k * inner..(k + 1) * inner],
            );
            d.iter_mut().zip(s).for_each(|(a, &b)| *a = *a + b);
        }
    };
    let threads = super::num_threads();
    if !super::par_ok(outer * n * inner, super::PAR_THRESHOLD) || threads < 2 {
        for (d, s) in dst
            .chunks_exact_mut(size * inner)
            .zip(src.chunks_exact(n * inner))
        {
            rows(d, s);
        }
    } else if outer >= threads {
        let per = outer.div_ceil(threads);
        let parts: Vec<&mut [T]> = dst.chunks_mut(per * size * inner).collect();
        super::parallel::map_each(parts, &|p, d| {
            let s = &src[p * per * n * inner..];
            for (d, s) in d
                .chunks_exact_mut(size * inner)
                .zip(s.chunks_exact(n * inner))
            {
                rows(d, s);
            }
        });
    } else {
        // blocks of 16 columns (a cache line of f32) per thread
        let per = inner.div_ceil(threads).div_ceil(16) * 16;
        let out = super::parallel::SharedOut::new(dst);
        super::parallel::run_parts(inner.div_ceil(per), &|p| {
            let (j0, j1) = (p * per, ((p + 1) * per).min(inner));
            for o in 0..outer {
                for (k, &i) in idx.iter().enumerate() {
                    // SAFETY: row `i` of sample `o` is inside `dst` (i < size, checked above);
                    // this thread alone touches its columns j0..j1 (the parts' column blocks are
                    // disjoint), and the slice is dropped before the next one is made.
                    let d = unsafe { out.slice((o * size + i) * inner + j0, j1 - j0) };
                    let s = &src[(o * n + k) * inner..][j0..j1];
                    d.iter_mut().zip(s).for_each(|(a, &b)| *a = *a + b);
                }
            }
        });
    }
}

/// The storage offsets of `l`'s elements in row-major order, allocated fallibly.
pub fn layout_offsets(l: &Layout) -> Result<Vec<usize>> {
    let mut v = alloc::<usize>(l.numel())?;
    l.for_each_offset(|o| v.push(o));
    Ok(v)
}

/// `a[i] + b[j]` for every (i, j), `i` outermost: the offsets of blocks laid out by `b`, one
/// block at each offset of `a`.
/// `put` of whole rows: `dst[b + j] = values[k * len + j]` (`+=` with `accumulate`) for the
/// k-th base `b` and every j below `len` — advanced indexing's writes when the dims after the
/// indexed ones are contiguous.
pub fn put_rows<T: Elem>(
    dst: &mut [T],
    bases: &[usize],
    len: usize,
    values: &[T],
    accumulate: bool,
) {
    if len == 0 {
        return;
    }
    for (&b, v) in bases.iter().zip(values.chunks_exact(len)) {
        let row = &mut dst[b..b + len];
        if accumulate {
            for (d, &x) in row.iter_mut().zip(v) {
                *d = add_elem(*d, x);
            }
        } else {
            row.copy_from_slice(v);
        }
    }
}

pub fn outer_sum(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    try_collect(
        a.len() * b.len(),
        a.iter().flat_map(|&x| b.iter().map(move |&y| x + y)),
    )
}

/// Adds the offset along one indexed dim of advanced indexing to each index position's entry of
/// `offsets`: the index values `vals` read through `at` (their layout broadcast to the
/// positions' shape), wrapped into `size` and times `stride`. The first index out of range is
/// returned after the walk.
pub fn add_index_offsets(
    offsets: &mut [usize],
    vals: &[i64],
    at: &Layout,
    size: usize,
    stride: usize,
    dim: usize,
) -> Result<()> {
    let mut k = 0;
    let mut bad = None;
    at.for_each_offset(|o| {
        match wrap_index(vals[o], size, dim) {
            Ok(i) => offsets[k] += i * stride,
            Err(e) => {
                bad.get_or_insert(e);
            }
        }
        k += 1;
    });
    match bad {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The positions of the non-zero elements of a row-major bool buffer of `shape`: one column of
/// int64 coordinates per dim.
pub fn nonzero_columns(mask: &[u8], shape: &[usize]) -> Result<Vec<Vec<i64>>> {
    let n = shape.len();
    let count = mask.iter().filter(|&&v| v != 0).count();
    let mut cols: Vec<Vec<i64>> = (0..n).map(|_| alloc(count)).collect::<Result<_>>()?;
    let mut mi = vec![0usize; n];
    for (k, &v) in mask.iter().enumerate() {
        if v != 0 {
            unravel(k, shape, &mut mi);
            for d in 0..n {
                cols[d].push(mi[d] as i64);
            }
        }
    }
    Ok(cols)
}

/// `one_hot`: one row of `classes` int64 per index, 1 at the index (each in `0..classes`).
pub fn one_hot(idx: &[i64], classes: usize) -> Result<Vec<i64>> {
    let mut out: Vec<i64> = alloc(idx.len() * classes)?;
    out.resize(idx.len() * classes, 0);
    for (row, &i) in out.chunks_mut(classes).zip(idx) {
        row[i as usize] = 1;
    }
    Ok(out)
}

/// What embedding's backward multiplies each looked-up row's gradient by: 0 at `padding_idx`,
/// else 1, divided with `by_freq` by how often the row's index occurs.
pub fn embedding_grad_scale(
    idx: &[i64],
    padding_idx: Option<i64>,
    by_freq: bool,
) -> Result<Vec<f64>> {
    let mut scale = try_filled(idx.len(), 1.0f64)?;
    if let Some(p) = padding_idx {
        for (s, &i) in scale.iter_mut().zip(idx) {
            if i == p {
                *s = 0.0;
            }
        }
    }
    if by_freq {
        let mut counts = std::collections::HashMap::new();
        for &i in idx {
            *counts.entry(i).or_insert(0usize) += 1;
        }
        for (s, i) in scale.iter_mut().zip(idx) {
            *s /= counts[i] as f64;
        }
    }
    Ok(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_counts_negative_indices_from_the_end() {
        assert_eq!(wrap_index(-1, 4, 0).unwrap(), 3);
        assert_eq!(wrap_index(3, 4, 0).unwrap(), 3);
        let e = wrap_index(4, 4, 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "index 4 is out of bounds for dimension 1 with size 4"
        );
        assert!(wrap_index(-5, 4, 0).is_err());
        assert_eq!(wrap_indices(&[0, -1, 2], 3, 0).unwrap(), vec![0, 2, 2]);
        assert!(wrap_indices(&[0, 3], 3, 0).is_err());
    }

    #[test]
    fn gather_along_each_dim() {
        // x = [[1, 2, 3], [4, 5, 6]] (2 x 3, contiguous)
        let x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        // dim 1, index [[2, 0], [2, 1]]: walk over the index shape with x's row stride
        let walk = Layout {
            shape: vec![2, 2],
            strides: vec![3, 0],
            offset: 0,
        };
        let v = gather(&x, &walk, &[2, 0, 2, 1], 3, 1, 1).unwrap();
        assert_eq!(v, vec![3.0, 1.0, 6.0, 5.0]);
        // negative indices are out of range, as in PyTorch's gather
        let e = gather(&x, &walk, &[2, 0, -1, 1], 3, 1, 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "index -1 is out of bounds for dimension 1 with size 3"
        );
        // dim 0, index [[1, 0, 1]]
        let walk = Layout {
            shape: vec![1, 3],
            strides: vec![0, 1],
            offset: 0,
        };
        let v = gather(&x, &walk, &[1, 0, 1], 2, 3, 0).unwrap();
        assert_eq!(v, vec![4.0, 2.0, 6.0]);
        // out of range: PyTorch's RuntimeError
        let e = gather(&x, &walk, &[1, 2, 0], 2, 3, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "index 2 is out of bounds for dimension 0 with size 2"
        );
    }

    #[test]
    fn scatter_add_accumulates_repeated_indices() {
        // zeros(2, 3).scatter_add(1, [[0, 0, 2], [1, -1, 1]], src)
        let mut dst = vec![0.0f64; 6];
        let src = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        scatter_add(
            &mut dst,
            &[2, 3],
            1,
            &[0, 0, 2, 1, -1, 1],
            &[2, 3],
            &src,
            &[2, 3],
        )
        .unwrap();
        assert_eq!(dst, vec![3.0, 0.0, 3.0, 0.0, 10.0, 5.0]);
        // along dim 0, an index smaller than src
        let mut dst = vec![1i64; 4];
        scatter_add(
            &mut dst,
            &[2, 2],
            0,
            &[1, 1],
            &[1, 2],
            &[7, 8, 9, 10],
            &[2, 2],
        )
        .unwrap();
        assert_eq!(dst, vec![1, 1, 8, 9]);
        // bools accumulate with `or`
        let mut dst = vec![0u8, 1];
        scatter_add(&mut dst, &[2], 0, &[0, 0], &[2], &[1, 0], &[2]).unwrap();
        assert_eq!(dst, vec![1, 1]);
        assert!(scatter_add(&mut dst, &[2], 0, &[2], &[1], &[1], &[1]).is_err());
    }

    #[test]
    fn scatter_writes_values_or_a_number() {
        // zeros(2, 3).scatter(1, [[2], [0]], src 2 x 2)
        let mut dst = vec![0i64; 6];
        let src = [7i64, 8, 9, 10];
        scatter(
            &mut dst,
            &[2, 3],
            1,
            &[2, 0],
            &[2, 1],
            Some((&src, &[2, 2])),
            0,
        )
        .unwrap();
        assert_eq!(dst, vec![0, 0, 7, 9, 0, 0]);
        // a number along dim 0: index [[1, 0], [1, 1]] writes (1, 0), (0, 1), (1, 0), (1, 1)
        let mut dst = vec![0.0f32; 4];
        scatter(&mut dst, &[2, 2], 0, &[1, 0, 1, 1], &[2, 2], None, 5.0).unwrap();
        assert_eq!(dst, vec![0.0, 5.0, 5.0, 5.0]);
        // negative indices are not wrapped
        let e = scatter(&mut dst, &[2, 2], 0, &[-1], &[1, 1], None, 1.0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "index -1 is out of bounds for dimension 0 with size 2"
        );
    }

    #[test]
    fn put_assigns_or_accumulates() {
        let mut d = vec![1.0f64, 1.0, 1.0];
        put(&mut d, &[2, 0, 2], &[5.0, 6.0, 7.0], false);
        assert_eq!(d, vec![6.0, 1.0, 7.0]);
        put(&mut d, &[2, 0, 2], &[1.0, 1.0, 1.0], true);
        assert_eq!(d, vec![7.0, 1.0, 9.0]);
    }

    #[test]
    fn advanced_index_offsets() {
        // x of shape (3, 4): x[[2, 0]] reads rows 2 and 0 (offsets 8 and 0)
        let mut off = vec![0usize; 2];
        let at = Layout::contiguous(vec![2]);
        add_index_offsets(&mut off, &[2, -3], &at, 3, 4, 0).unwrap();
        assert_eq!(off, vec![8, 0]);
        // then x[:, [1, 3]] on top: a broadcast index
        let at = Layout::contiguous(vec![1]).broadcast_to(&[2]).unwrap();
        add_index_offsets(&mut off, &[3], &at, 4, 1, 1).unwrap();
        assert_eq!(off, vec![11, 3]);
        assert!(
            add_index_offsets(&mut off, &[4, 0], &Layout::contiguous(vec![2]), 4, 1, 1).is_err()
        );
        // blocks laid out at the offsets
        assert_eq!(
            outer_sum(&[0, 10], &[1, 2, 3]).unwrap(),
            vec![1, 2, 3, 11, 12, 13]
        );
        let t = Layout::contiguous(vec![2, 3]).transpose(0, 1);
        assert_eq!(layout_offsets(&t).unwrap(), vec![0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn nonzero_coordinates() {
        let mask = [0u8, 1, 0, 2, 0, 1];
        let cols = nonzero_columns(&mask, &[2, 3]).unwrap();
        assert_eq!(cols, vec![vec![0, 1, 1], vec![1, 0, 2]]);
        assert_eq!(
            nonzero_columns(&[0u8; 4], &[4]).unwrap(),
            vec![Vec::<i64>::new()]
        );
    }

    #[test]
    fn one_hot_rows() {
        assert_eq!(one_hot(&[2, 0], 3).unwrap(), vec![0, 0, 1, 1, 0, 0]);
        assert!(one_hot(&[], 3).unwrap().is_empty());
    }

    #[test]
    fn embedding_scale_zeroes_padding_and_divides_by_frequency() {
        let idx = [1, 2, 1, 0, 1];
        assert_eq!(
            embedding_grad_scale(&idx, None, false).unwrap(),
            vec![1.0; 5]
        );
        assert_eq!(
            embedding_grad_scale(&idx, Some(2), false).unwrap(),
            vec![1.0, 0.0, 1.0, 1.0, 1.0]
        );
        let third = 1.0 / 3.0;
        assert_eq!(
            embedding_grad_scale(&idx, Some(0), true).unwrap(),
            vec![third, 1.0, third, 0.0, third]
        );
    }

    #[test]
    fn index_add_rows_matches_a_naive_loop_on_every_split() {
        // (outer, size, inner, n): serial, blocks of samples, blocks of columns, zero-size
        for (outer, size, inner, n) in [
            (2, 5, 3, 7),
            (8, 40, 300, 120),
            (1, 50, 2000, 300),
            (3, 4, 0, 2),
        ] {
            let idx: Vec<usize> = (0..n).map(|k| (k * 7 + k / 3) % size).collect();
            let src: Vec<f64> = (0..outer * n * inner)
                .map(|v| (v % 13) as f64 - 6.0)
                .collect();
            let base: Vec<f64> = (0..outer * size * inner).map(|v| (v % 5) as f64).collect();
            let mut want = base.clone();
            for o in 0..outer {
                for (k, &i) in idx.iter().enumerate() {
                    for j in 0..inner {
                        want[(o * size + i) * inner + j] += src[(o * n + k) * inner + j];
                    }
                }
            }
            let mut got = base;
            index_add_rows(&mut got, size, inner, &idx, &src);
            assert_eq!(got, want, "outer {outer} size {size} inner {inner} n {n}");
        }
    }

    #[test]
    fn add_elem_per_dtype() {
        assert_eq!(add_elem(i64::MAX, 1), i64::MIN);
        assert_eq!(add_elem(1u8, 1u8), 1);
        assert_eq!(add_elem(0.5f32, 0.25), 0.75);
    }
}
