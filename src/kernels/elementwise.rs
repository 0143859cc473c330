//! The elementwise engine: one loop nest for every elementwise kernel (maps of one, two or three
//! inputs, casts, copies, in-place updates), in the spirit of PyTorch's TensorIterator.
//!
//! The output is row-major over the broadcast shape. The dims are coalesced first: size-1 dims
//! are dropped and neighbours merged wherever every operand steps through them as through one
//! dim, so a contiguous tensor is one run, a broadcast (N, 1) operand is a stride-0 inner run and
//! a transposed one a strided run. Each run goes to an inner loop specialised for unit and zero
//! strides, compiled for AVX2 / AVX-512 and chosen at run time, which the compiler vectorises.
//! When an operand is transposed (its inner stride is not 1 but an outer dim's is), rows are
//! visited in tiles of `TILE` x `TILE`, so each cache line read serves a whole tile. Above the
//! parallel threshold the output is split into blocks across threads.

use std::mem::MaybeUninit;

use super::{build_with, par_ok, PAR_THRESHOLD, PAR_THRESHOLD_COSTLY};
use crate::error::Result;
use crate::layout::Layout;

/// Side of the square tiles in which transposed operands are read.
const TILE: usize = 32;

/// The storage span (in elements) of one row of a transposed operand from which its rows are
/// read in tiles: 256K elements, 1 MiB of f32, about the L2 cache of one core.
const TILED_SPAN: usize = 1 << 18;

/// The loop nest of `K` operands over one output shape, after coalescing.
#[derive(Debug, Clone)]
pub struct Nest<const K: usize> {
    /// Dim sizes, outermost first; at least one dim.
    sizes: Vec<usize>,
    /// Per dim, each operand's stride in elements.
    strides: Vec<[usize; K]>,
    /// Each operand's storage offset.
    offsets: [usize; K],
}

impl<const K: usize> Nest<K> {
    /// The nest of `layouts`, all of one shape (already broadcast to it).
    pub fn new(layouts: [&Layout; K]) -> Nest<K> {
        let shape = &layouts[0].shape;
        debug_assert!(layouts.iter().all(|l| &l.shape == shape));
        let mut sizes: Vec<usize> = Vec::with_capacity(shape.len().max(1));
        let mut strides: Vec<[usize; K]> = Vec::with_capacity(shape.len().max(1));
        // innermost first; reversed at the end
        for d in (0..shape.len()).rev() {
            let n = shape[d];
            if n == 1 {
                continue;
            }
            let st: [usize; K] = std::array::from_fn(|k| layouts[k].strides[d]);
            if let (Some(last_n), Some(last_st)) = (sizes.last_mut(), strides.last()) {
                if (0..K).all(|k| st[k] == last_st[k] * *last_n) {
                    *last_n *= n;
                    continue;
                }
            }
            sizes.push(n);
            strides.push(st);
        }
        if sizes.is_empty() {
            sizes.push(1);
            strides.push([0; K]);
        }
        sizes.reverse();
        strides.reverse();
        Nest {
            sizes,
            strides,
            offsets: std::array::from_fn(|k| layouts[k].offset),
        }
    }

    pub fn numel(&self) -> usize {
        self.sizes.iter().product()
    }

    /// Each operand's stride along the innermost dim.
    pub fn inner_strides(&self) -> [usize; K] {
        self.strides[self.sizes.len() - 1]
    }

    /// True when some operand reads its innermost dim with a stride while an outer dim is its
    /// unit-stride one (a transpose): such nests are walked in tiles.
    ///
    /// Only when a row of that operand spans more than `TILED_SPAN` elements: below that, the
    /// lines a row touches stay in cache for the next rows anyway, and plain runs are cheaper.
    fn transposed(&self) -> bool {
        let nd = self.sizes.len();
        nd >= 2
            && (0..K).any(|k| {
                let s = self.strides[nd - 1][k];
                s > 1 && self.strides[nd - 2][k] < s && s * self.sizes[nd - 1] > TILED_SPAN
            })
    }

    /// Calls `f(pos, offsets, len)` for every run of the innermost dim that falls inside `range`
    /// of the output's row-major positions: `len` elements from output position `pos`, operand
    /// `k` reading from `offsets[k]` on with its inner stride. Every position of `range` is
    /// visited exactly once; in tile order when the nest is transposed.
    pub fn for_each_run(
        &self,
        range: std::ops::Range<usize>,
        mut f: impl FnMut(usize, [usize; K], usize),
    ) {
        self.for_each_block(range, |pos, b| {
            for r in 0..b.rows {
                f(pos + r * b.step, b.row(r), b.len)
            }
        })
    }

    /// [`Nest::for_each_run`] with the runs handed over in blocks (see [`Block`]): all the
    /// full rows of one outer index at a time, so a kernel loops over them without a call per
    /// run. `f(pos, block)`: the block's first run starts at output position `pos`.
    pub fn for_each_block(
        &self,
        range: std::ops::Range<usize>,
        mut f: impl FnMut(usize, Block<K>),
    ) {
        if range.is_empty() {
            return;
        }
        let nd = self.sizes.len();
        let inner = self.sizes[nd - 1];
        let ist = self.inner_strides();
        // the dim the rows of a block step along, and its size
        let (outer, rows_dim) = if nd >= 2 {
            (self.strides[nd - 2], self.sizes[nd - 2])
        } else {
            ([0; K], 1)
        };
        let mut rows = Rows::new(self, range.start / inner);
        let at = |base: [usize; K], col: usize| -> [usize; K] {
            std::array::from_fn(|k| base[k] + col * ist[k])
        };
        let block = |offs: [usize; K], rows: usize, len: usize, step: usize| Block {
            offs,
            inner: ist,
            outer,
            rows,
            len,
            step,
        };
        let mut pos = range.start;
        // a row cut by the start of the range
        let col = pos % inner;
        if col != 0 {
            let len = (inner - col).min(range.end - pos);
            f(pos, block(at(rows.base, col), 1, len, inner));
            pos += len;
            rows.skip(self, 1);
        }
        let mut left = (range.end - pos) / inner;
        let tiled = self.transposed() && inner > TILE;
        while left > 0 {
            // rows up to the end of the current outer index: their offsets are linear
            let g = left.min(rows_dim - rows.row_in_dim());
            if tiled {
                let g = g.min(TILE);
                for c0 in (0..inner).step_by(TILE) {
                    f(
                        pos + c0,
                        block(at(rows.base, c0), g, TILE.min(inner - c0), inner),
                    );
                }
                pos += g * inner;
                left -= g;
                rows.skip(self, g);
            } else {
                f(pos, block(rows.base, g, inner, inner));
                pos += g * inner;
                left -= g;
                rows.skip(self, g);
            }
        }
        // a row cut by the end of the range
        if pos < range.end {
            f(pos, block(rows.base, 1, range.end - pos, inner));
        }
    }
}

/// Runs of a nest that a kernel can loop over as one: `rows` runs of `len` elements, run `r`
/// written from output position `r * step` (relative to the block's) and reading operand `k`
/// from `offs[k] + r * outer[k]` on, with stride `inner[k]`.
#[derive(Debug, Clone, Copy)]
pub struct Block<const K: usize> {
    pub offs: [usize; K],
    pub inner: [usize; K],
    pub outer: [usize; K],
    pub rows: usize,
    pub len: usize,
    pub step: usize,
}

impl<const K: usize> Block<K> {
    /// One run of `n` elements, every operand read with unit stride from its start.
    pub fn line(n: usize) -> Block<K> {
        Block::run([0; K], [1; K], n)
    }

    /// One run of `n` elements, operand `k` read from `offs[k]` with stride `inner[k]`.
    pub fn run(offs: [usize; K], inner: [usize; K], n: usize) -> Block<K> {
        Block {
            offs,
            inner,
            outer: [0; K],
            rows: 1,
            len: n,
            step: n,
        }
    }

    /// Each operand's offset of run `r`.
    #[inline(always)]
    pub fn row(&self, r: usize) -> [usize; K] {
        std::array::from_fn(|k| self.offs[k] + r * self.outer[k])
    }

    /// The output positions the block spans, from its first to its last element.
    #[inline(always)]
    pub fn span(&self) -> usize {
        (self.rows - 1) * self.step + self.len
    }

    /// True when every element the runs read of operand `k` is inside its `len` elements.
    #[inline(always)]
    pub fn fits(&self, k: usize, len: usize) -> bool {
        (self.rows - 1)
            .checked_mul(self.outer[k])
            .and_then(|o| o.checked_add(self.offs[k]))
            .is_some_and(|last_run| fits(len, last_run, self.inner[k], self.len))
    }

    /// The output positions of run `r`, relative to the block's first.
    #[inline(always)]
    pub fn out(&self, r: usize) -> std::ops::Range<usize> {
        r * self.step..r * self.step + self.len
    }
}

/// Walks the outer dims of a nest row by row, keeping each operand's offset of the row start.
struct Rows<const K: usize> {
    idx: Vec<usize>,
    base: [usize; K],
}

impl<const K: usize> Rows<K> {
    /// Positioned at row `row` (row-major over the outer dims).
    fn new(nest: &Nest<K>, row: usize) -> Rows<K> {
        let outer = nest.sizes.len() - 1;
        let mut idx = vec![0usize; outer];
        let mut base = nest.offsets;
        let mut rem = row;
        for d in (0..outer).rev() {
            idx[d] = rem % nest.sizes[d];
            rem /= nest.sizes[d];
            for (b, s) in base.iter_mut().zip(nest.strides[d]) {
                *b += idx[d] * s;
            }
        }
        Rows { idx, base }
    }

    /// The current row's index along the innermost outer dim (0 when there is none).
    fn row_in_dim(&self) -> usize {
        self.idx.last().copied().unwrap_or(0)
    }

    /// Moves `g` rows on, `g` not past the end of the innermost outer dim's current pass.
    fn skip(&mut self, nest: &Nest<K>, g: usize) {
        if let Some(d) = self.idx.len().checked_sub(1) {
            if g > 1 {
                self.idx[d] += g - 1;
                for (b, s) in self.base.iter_mut().zip(nest.strides[d]) {
                    *b += (g - 1) * s;
                }
            }
        }
        self.next(nest);
    }

    fn next(&mut self, nest: &Nest<K>) {
        for d in (0..self.idx.len()).rev() {
            self.idx[d] += 1;
            if self.idx[d] < nest.sizes[d] {
                for (b, s) in self.base.iter_mut().zip(nest.strides[d]) {
                    *b += s;
                }
                return;
            }
            for (b, s) in self.base.iter_mut().zip(nest.strides[d]) {
                *b -= (nest.sizes[d] - 1) * s;
            }
            self.idx[d] = 0;
        }
    }
}

/// True when `n` elements from `off` with stride `st` lie inside a slice of `len`.
#[inline(always)]
fn fits(len: usize, off: usize, st: usize, n: usize) -> bool {
    n == 0
        || (n - 1)
            .checked_mul(st)
            .and_then(|span| span.checked_add(off))
            .is_some_and(|last| last < len)
}

/// An elementwise function of one input, as the engine calls it. Every closure is one. A kernel
/// with a large body (a transcendental function) is better written as a zero-sized type whose
/// `call` is `#[inline(always)]`: LLVM inlines a large closure or `fn` item into at most one of
/// the engine's loops and calls it element by element, unvectorised, from the others.
pub trait Map1<T, U>: Sync {
    fn call(&self, x: T) -> U;
    /// `d[i] = call(a[i])` for a contiguous run in explicit AVX-512 code, for maps that have
    /// such a form (exp on f32, whose compiled loop costs more than it needs); returns whether
    /// it ran. The AVX-512 loops try it first.
    ///
    /// # Safety
    /// The CPU has AVX-512F, AVX-512DQ, AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn run_avx512(&self, _a: &[T], _d: &mut [MaybeUninit<U>]) -> bool {
        false
    }
    /// `run_avx512` in place.
    ///
    /// # Safety
    /// As `run_avx512`.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn inplace_avx512(&self, _d: &mut [T]) -> bool
    where
        T: Copy,
    {
        false
    }
}
impl<T, U, F: Fn(T) -> U + Sync> Map1<T, U> for F {
    #[inline(always)]
    fn call(&self, x: T) -> U {
        self(x)
    }
}

/// [`Map1`] of two inputs.
pub trait Map2<A, B, U>: Sync {
    fn call(&self, a: A, b: B) -> U;
}
impl<A, B, U, F: Fn(A, B) -> U + Sync> Map2<A, B, U> for F {
    #[inline(always)]
    fn call(&self, a: A, b: B) -> U {
        self(a, b)
    }
}

/// [`Map1`] of three inputs.
pub trait Map3<C, A, B, U>: Sync {
    fn call(&self, c: C, a: A, b: B) -> U;
}
impl<C, A, B, U, F: Fn(C, A, B) -> U + Sync> Map3<C, A, B, U> for F {
    #[inline(always)]
    fn call(&self, c: C, a: A, b: B) -> U {
        self(c, a, b)
    }
}

/// The element loops behind `run1` / `run2` / `run3`. Each is called with literal unit or zero
/// strides, so after inlining the compiler sees constant strides and vectorises.
///
/// # Safety
/// For each operand `x` with stride `s`: `(dst.len() - 1) * s < x.len()` (when `dst` is not
/// empty), so that every `i * s` read is inside `x`.
macro_rules! element_loop {
    ($name:ident, $tr:ident, $($x:ident: $t:ident / $s:ident),+) => {
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name<$($t: Copy,)+ U, F: $tr<$($t,)+ U>>(
            $($x: &[$t], $s: usize,)+
            dst: &mut [MaybeUninit<U>],
            f: &F,
        ) {
            for (i, d) in dst.iter_mut().enumerate() {
                // SAFETY: i < dst.len(), so i * s <= (dst.len() - 1) * s < x.len() for each
                // operand, the caller's promise.
                d.write(f.call($(unsafe { *$x.get_unchecked(i * $s) }),+));
            }
        }
    };
}
element_loop!(loop1, Map1, a: A / sa);
element_loop!(loop2, Map2, a: A / sa, b: B / sb);
element_loop!(loop3, Map3, c: C / sc, a: A / sa, b: B / sb);

/// `x[off..]`, after checking that a run of `n` elements with stride `st` from `off` fits.
#[inline(always)]
fn operand<T>(x: &[T], off: usize, st: usize, n: usize) -> &[T] {
    assert!(
        fits(x.len(), off, st, n),
        "elementwise run outside its operand"
    );
    &x[off.min(x.len())..]
}

/// A run in which some operand has a stride other than 0 and 1 (a transposed or sliced one) is
/// computed in chunks of this many elements, each such operand gathered into a buffer first, so
/// that the function itself always runs over unit or zero strides and vectorises.
const CHUNK: usize = 128;

/// A gather buffer of one chunk.
type Buf<T> = [MaybeUninit<T>; CHUNK];

/// Operand `x`, read with stride `s` from `x[0]`, for the `n` run positions from `i0`: the
/// operand itself from `i0 * s` on when `s` is 0 or 1, else its `n` elements gathered into
/// `buf`; with the stride (0 or 1) to read the result by.
///
/// # Safety
/// `n > 0`, `(i0 + n - 1) * s < x.len()`, and `n <= CHUNK` when `s > 1`.
#[inline(always)]
unsafe fn part<'a, T: Copy>(
    x: &'a [T],
    s: usize,
    i0: usize,
    n: usize,
    buf: &'a mut Buf<T>,
) -> (&'a [T], usize) {
    if s <= 1 {
        // SAFETY: i0 * s <= (i0 + n - 1) * s < x.len(), the caller's promise.
        return (unsafe { x.get_unchecked(i0 * s..) }, s);
    }
    for (i, b) in buf[..n].iter_mut().enumerate() {
        // SAFETY: (i0 + i) * s <= (i0 + n - 1) * s < x.len(), the caller's promise.
        b.write(unsafe { *x.get_unchecked((i0 + i) * s) });
    }
    // SAFETY: buf[..n] was initialised just above, and MaybeUninit<T> has T's layout.
    (
        unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const T, n) },
        1,
    )
}

/// The length of the pieces a run is computed in: the whole run, or chunks when an operand
/// must be gathered.
#[inline(always)]
fn piece(n: usize, strides: &[usize]) -> usize {
    if strides.iter().any(|&s| s > 1) {
        CHUNK
    } else {
        n.max(1)
    }
}

#[inline(always)]
fn run1_row<T: Copy, U, F: Map1<T, U>>(
    a: &[T],
    oa: usize,
    sa: usize,
    dst: &mut [MaybeUninit<U>],
    f: &F,
) {
    let a = operand(a, oa, sa, dst.len());
    let len = piece(dst.len(), &[sa]);
    let mut ba: Buf<T> = [const { MaybeUninit::uninit() }; CHUNK];
    for (c, d) in dst.chunks_mut(len).enumerate() {
        // SAFETY: `operand` checked that the whole run fits in `a` with stride `sa`; this
        // chunk is a non-empty part of it, no longer than CHUNK when `sa > 1`; `part` returns
        // a slice of at least `d.len()` elements read with a stride of 0 or 1.
        unsafe {
            let (a, sa) = part(a, sa, c * len, d.len(), &mut ba);
            match sa {
                1 => loop1(a, 1, d, f),
                _ => loop1(a, 0, d, f),
            }
        }
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn run2_row<A: Copy, B: Copy, U, F: Map2<A, B, U>>(
    a: &[A],
    oa: usize,
    sa: usize,
    b: &[B],
    ob: usize,
    sb: usize,
    dst: &mut [MaybeUninit<U>],
    f: &F,
) {
    let (a, b) = (operand(a, oa, sa, dst.len()), operand(b, ob, sb, dst.len()));
    let len = piece(dst.len(), &[sa, sb]);
    let mut ba: Buf<A> = [const { MaybeUninit::uninit() }; CHUNK];
    let mut bb: Buf<B> = [const { MaybeUninit::uninit() }; CHUNK];
    for (c, d) in dst.chunks_mut(len).enumerate() {
        // SAFETY: as in run1_row, for each operand.
        unsafe {
            let (a, sa) = part(a, sa, c * len, d.len(), &mut ba);
            let (b, sb) = part(b, sb, c * len, d.len(), &mut bb);
            match (sa, sb) {
                (1, 1) => loop2(a, 1, b, 1, d, f),
                (1, _) => loop2(a, 1, b, 0, d, f),
                (_, 1) => loop2(a, 0, b, 1, d, f),
                _ => loop2(a, 0, b, 0, d, f),
            }
        }
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn run3_row<C: Copy, A: Copy, B: Copy, U, F: Map3<C, A, B, U>>(
    c: &[C],
    oc: usize,
    sc: usize,
    a: &[A],
    oa: usize,
    sa: usize,
    b: &[B],
    ob: usize,
    sb: usize,
    dst: &mut [MaybeUninit<U>],
    f: &F,
) {
    let n = dst.len();
    let (c, a, b) = (
        operand(c, oc, sc, n),
        operand(a, oa, sa, n),
        operand(b, ob, sb, n),
    );
    let len = piece(n, &[sc, sa, sb]);
    let mut bc: Buf<C> = [const { MaybeUninit::uninit() }; CHUNK];
    let mut ba: Buf<A> = [const { MaybeUninit::uninit() }; CHUNK];
    let mut bb: Buf<B> = [const { MaybeUninit::uninit() }; CHUNK];
    for (i, d) in dst.chunks_mut(len).enumerate() {
        // SAFETY: as in run1_row, for each operand.
        unsafe {
            let (c, sc) = part(c, sc, i * len, d.len(), &mut bc);
            let (a, sa) = part(a, sa, i * len, d.len(), &mut ba);
            let (b, sb) = part(b, sb, i * len, d.len(), &mut bb);
            match (sc, sa, sb) {
                (1, 1, 1) => loop3(c, 1, a, 1, b, 1, d, f),
                (1, 1, _) => loop3(c, 1, a, 1, b, 0, d, f),
                (1, _, 1) => loop3(c, 1, a, 0, b, 1, d, f),
                (1, _, _) => loop3(c, 1, a, 0, b, 0, d, f),
                (_, 1, 1) => loop3(c, 0, a, 1, b, 1, d, f),
                (_, 1, _) => loop3(c, 0, a, 1, b, 0, d, f),
                (_, _, 1) => loop3(c, 0, a, 0, b, 1, d, f),
                _ => loop3(c, 0, a, 0, b, 0, d, f),
            }
        }
    }
}

/// The fast path of the block bodies, for blocks whose listed operands all have an inner stride
/// of 0 or 1: checks once that the last element of the last run is inside each operand `x`
/// (operand `k` of the block), then for each run evaluates `call` with `d` the run's output and
/// each `x` rebound to itself from the run's offset on. `call` must read each `x` with a
/// literal stride of 0 or 1, its own in the block, over `d.len()` elements.
macro_rules! unit_runs {
    ($blk:ident, $out:expr, [$($x:ident @ $k:literal),+], |$d:ident| $call:expr) => {{
        assert!(
            $($blk.fits($k, $x.len()))&&+,
            "elementwise block outside its operands"
        );
        for r in 0..$blk.rows {
            let offs = $blk.row(r);
            let $d = &mut $out[$blk.out(r)];
            // SAFETY: the check above: every run's offset is at most the last run's, whose
            // last element is inside the operand.
            $(let $x = unsafe { $x.get_unchecked(offs[$k]..) };)+
            // SAFETY: each operand from the run's offset holds the run's `len` elements at its
            // stride, 0 or 1 (offsets grow with the run, the last run's fit), as `call` reads.
            unsafe { $call }
        }
    }};
}

/// The runs of a block, each by `run1_row`.
#[inline(always)]
fn run1_body<T: Copy, U, F: Map1<T, U>>(
    a: &[T],
    blk: &Block<1>,
    dst: &mut [MaybeUninit<U>],
    f: &F,
) {
    // (loops, not closures: a closure would be compiled without the caller's target features)
    let [sa] = blk.inner;
    if sa <= 1 && blk.len > 0 {
        // unit and zero strides: the loop for the stride chosen once for all the runs
        match sa {
            1 => unit_runs!(blk, dst, [a @ 0], |d| loop1(a, 1, d, f)),
            _ => unit_runs!(blk, dst, [a @ 0], |d| loop1(a, 0, d, f)),
        }
        return;
    }
    for r in 0..blk.rows {
        let [oa] = blk.row(r);
        run1_row(a, oa, sa, &mut dst[blk.out(r)], f)
    }
}

/// The runs of a block, each by `run2_row`.
#[inline(always)]
fn run2_body<A: Copy, B: Copy, U, F: Map2<A, B, U>>(
    a: &[A],
    b: &[B],
    blk: &Block<2>,
    dst: &mut [MaybeUninit<U>],
    f: &F,
) {
    let [sa, sb] = blk.inner;
    if sa <= 1 && sb <= 1 && blk.len > 0 {
        // unit and zero strides: the loop for the strides chosen once for all the runs
        match (sa, sb) {
            (1, 1) => unit_runs!(blk, dst, [a @ 0, b @ 1], |d| loop2(a, 1, b, 1, d, f)),
            (1, _) => unit_runs!(blk, dst, [a @ 0, b @ 1], |d| loop2(a, 1, b, 0, d, f)),
            (_, 1) => unit_runs!(blk, dst, [a @ 0, b @ 1], |d| loop2(a, 0, b, 1, d, f)),
            _ => unit_runs!(blk, dst, [a @ 0, b @ 1], |d| loop2(a, 0, b, 0, d, f)),
        }
        return;
    }
    for r in 0..blk.rows {
        let [oa, ob] = blk.row(r);
        run2_row(a, oa, sa, b, ob, sb, &mut dst[blk.out(r)], f)
    }
}

/// The runs of a block, each by `run3_row`.
#[inline(always)]
fn run3_body<C: Copy, A: Copy, B: Copy, U, F: Map3<C, A, B, U>>(
    c: &[C],
    a: &[A],
    b: &[B],
    blk: &Block<3>,
    dst: &mut [MaybeUninit<U>],
    f: &F,
) {
    let [sc, sa, sb] = blk.inner;
    if sc <= 1 && sa <= 1 && sb <= 1 && blk.len > 0 {
        // unit and zero strides: the loop for the strides chosen once for all the runs
        macro_rules! runs {
            ($sc:literal, $sa:literal, $sb:literal) => {
                unit_runs!(blk, dst, [c @ 0, a @ 1, b @ 2], |d| loop3(
                    c, $sc, a, $sa, b, $sb, d, f
                ))
            };
        }
        match (sc, sa, sb) {
            (1, 1, 1) => runs!(1, 1, 1),
            (1, 1, _) => runs!(1, 1, 0),
            (1, _, 1) => runs!(1, 0, 1),
            (1, _, _) => runs!(1, 0, 0),
            (_, 1, 1) => runs!(0, 1, 1),
            (_, 1, _) => runs!(0, 1, 0),
            (_, _, 1) => runs!(0, 0, 1),
            _ => runs!(0, 0, 0),
        }
        return;
    }
    for r in 0..blk.rows {
        let [oc, oa, ob] = blk.row(r);
        run3_row(c, oc, sc, a, oa, sa, b, ob, sb, &mut dst[blk.out(r)], f)
    }
}

/// The inner loops compiled for AVX2+FMA and AVX-512 (see `best!`).
#[cfg(target_arch = "x86_64")]
pub(crate) mod wide {
    use super::*;

    macro_rules! isa {
        ($feat:literal, $r1:ident, $r2:ident, $r3:ident, $ri:ident, $ri2:ident, $ri3:ident,
         $run1:path, $inplace1:path) => {
            #[target_feature(enable = $feat)]
            pub fn $ri<T: Copy, F: Map1<T, T>>(d: &mut [T], f: &F) {
                $inplace1(d, f)
            }

            #[target_feature(enable = $feat)]
            pub fn $ri2<T: Copy, B: Copy, F: Map2<T, B, T>>(
                d: &mut [T],
                s: &[B],
                blk: &Block<2>,
                f: &F,
            ) {
                inplace2_body(d, s, blk, f)
            }

            #[target_feature(enable = $feat)]
            pub fn $ri3<T: Copy, A: Copy, B: Copy, F: Map3<T, A, B, T>>(
                d: &mut [T],
                a: &[A],
                b: &[B],
                blk: &Block<3>,
                f: &F,
            ) {
                inplace3_body(d, a, b, blk, f)
            }

            #[target_feature(enable = $feat)]
            pub fn $r1<T: Copy, U, F: Map1<T, U>>(
                a: &[T],
                blk: &Block<1>,
                dst: &mut [MaybeUninit<U>],
                f: &F,
            ) {
                $run1(a, blk, dst, f)
            }

            #[target_feature(enable = $feat)]
            pub fn $r2<A: Copy, B: Copy, U, F: Map2<A, B, U>>(
                a: &[A],
                b: &[B],
                blk: &Block<2>,
                dst: &mut [MaybeUninit<U>],
                f: &F,
            ) {
                run2_body(a, b, blk, dst, f)
            }

            #[target_feature(enable = $feat)]
            pub fn $r3<C: Copy, A: Copy, B: Copy, U, F: Map3<C, A, B, U>>(
                c: &[C],
                a: &[A],
                b: &[B],
                blk: &Block<3>,
                dst: &mut [MaybeUninit<U>],
                f: &F,
            ) {
                run3_body(c, a, b, blk, dst, f)
            }
        };
    }

    isa!(
        "avx2,fma",
        run1_avx2,
        run2_avx2,
        run3_avx2,
        inplace_avx2,
        inplace2_avx2,
        inplace3_avx2,
        run1_body,
        inplace_body
    );
    isa!(
        "avx512f,avx512dq,avx2,fma",
        run1_avx512,
        run2_avx512,
        run3_avx512,
        inplace_avx512,
        inplace2_avx512,
        inplace3_avx512,
        explicit::run1,
        explicit::inplace
    );

    /// The unary loops of AVX-512: a map's explicit form (`Map1::run_avx512`) for contiguous
    /// runs when it has one, else the compiled loops.
    mod explicit {
        use super::*;

        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub fn run1<T: Copy, U, F: Map1<T, U>>(
            a: &[T],
            blk: &Block<1>,
            dst: &mut [MaybeUninit<U>],
            f: &F,
        ) {
            if blk.inner == [1] && blk.len > 0 && blk.fits(0, a.len()) {
                let mut done = true;
                for r in 0..blk.rows {
                    let [oa] = blk.row(r);
                    let d = &mut dst[blk.out(r)];
                    // the fit above: every run's offset is at most the last run's, whose last
                    // element is inside `a`
                    let a = &a[oa..oa + d.len()];
                    // SAFETY: this function runs only where the CPU has its features.
                    done = unsafe { f.run_avx512(a, d) };
                    if !done {
                        break;
                    }
                }
                if done {
                    return;
                }
            }
            run1_body(a, blk, dst, f)
        }

        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
        pub fn inplace<T: Copy, F: Map1<T, T>>(d: &mut [T], f: &F) {
            // SAFETY: this function runs only where the CPU has its features.
            if !unsafe { f.inplace_avx512(d) } {
                inplace_body(d, f)
            }
        }
    }
}

/// `x = f(x)` for each element of `d`, 64 at a time through a local buffer: written straight
/// back, a kernel that leaves some elements as they are (NaN passes through) becomes a masked
/// store, and the next iteration's loads wait for it, which serialises the long dependency
/// chains of the costly kernels (erfc_ ran at a third of erfc's speed).
#[inline(always)]
fn inplace_body<T: Copy, F: Map1<T, T>>(d: &mut [T], f: &F) {
    const CHUNK: usize = 64;
    let mut chunks = d.chunks_exact_mut(CHUNK);
    for c in &mut chunks {
        let mut out = [c[0]; CHUNK];
        for (o, &x) in out.iter_mut().zip(c.iter()) {
            *o = f.call(x);
        }
        c.copy_from_slice(&out);
    }
    for x in chunks.into_remainder() {
        *x = f.call(*x);
    }
}

/// `inplace_body`, compiled for the best instruction set the CPU has.
#[inline]
fn inplace_run<T: Copy, F: Map1<T, T>>(d: &mut [T], f: &F) {
    best!(inplace_body, inplace_avx512, inplace_avx2; d, f)
}

/// `dst[..] = f(a[..])` over the runs of `blk`, `dst` holding its span.
#[inline]
pub fn run1<T: Copy, U, F: Map1<T, U>>(a: &[T], blk: &Block<1>, dst: &mut [MaybeUninit<U>], f: &F) {
    best!(run1_body, run1_avx512, run1_avx2; a, blk, dst, f)
}

/// `dst[..] = f(a[..], b[..])` over the runs of `blk`, `dst` holding its span.
#[inline]
pub fn run2<A: Copy, B: Copy, U, F: Map2<A, B, U>>(
    a: &[A],
    b: &[B],
    blk: &Block<2>,
    dst: &mut [MaybeUninit<U>],
    f: &F,
) {
    best!(run2_body, run2_avx512, run2_avx2; a, b, blk, dst, f)
}

/// `dst[..] = f(c[..], a[..], b[..])` over the runs of `blk`, `dst` holding its span.
#[inline]
fn run3<C: Copy, A: Copy, B: Copy, U, F: Map3<C, A, B, U>>(
    c: &[C],
    a: &[A],
    b: &[B],
    blk: &Block<3>,
    dst: &mut [MaybeUninit<U>],
    f: &F,
) {
    best!(run3_body, run3_avx512, run3_avx2; c, a, b, blk, dst, f)
}

/// A fresh row-major output of `nest`, filled block by block by `run(dst_span, block)`,
/// split across threads from `threshold` elements on.
fn fill<const K: usize, U: Send>(
    nest: &Nest<K>,
    threshold: usize,
    run: impl Fn(&mut [MaybeUninit<U>], &Block<K>) + Sync,
) -> Result<Vec<U>> {
    let n = nest.numel();
    // a strided (gathering) inner loop costs several times a contiguous one per element
    let threshold = if nest.inner_strides().iter().any(|&s| s > 1) {
        threshold.min(PAR_THRESHOLD_COSTLY)
    } else {
        threshold
    };
    build_with(n, threshold, |start, dst| {
        nest.for_each_block(start..start + dst.len(), |pos, blk| {
            run(&mut dst[pos - start..pos - start + blk.span()], &blk)
        });
        dst.len()
    })
}

/// `out[i] = f(src[i])` over `layout`'s elements, in row-major order.
pub fn unary<T, U, F>(src: &[T], layout: &Layout, f: F) -> Result<Vec<U>>
where
    T: Copy + Send + Sync,
    U: Send,
    F: Map1<T, U> + Send,
{
    unary_with(src, layout, PAR_THRESHOLD, f)
}

/// `unary` for a costly `f` (transcendentals): goes parallel on smaller tensors.
pub fn unary_costly<T, U, F>(src: &[T], layout: &Layout, f: F) -> Result<Vec<U>>
where
    T: Copy + Send + Sync,
    U: Send,
    F: Map1<T, U> + Send,
{
    unary_with(src, layout, PAR_THRESHOLD_COSTLY, f)
}

fn unary_with<T, U, F>(src: &[T], layout: &Layout, threshold: usize, f: F) -> Result<Vec<U>>
where
    T: Copy + Send + Sync,
    U: Send,
    F: Map1<T, U> + Send,
{
    if layout.numel() == 0 {
        return Ok(Vec::new());
    }
    let nest = Nest::new([layout]);
    if let Some(t) = Transposed::of(&nest) {
        return t.map(src, threshold, &f);
    }
    fill(&nest, threshold, |dst, blk| run1(src, blk, dst, &f))
}

/// A one-operand nest whose last two dims are a transpose: the operand steps 1 along rows and
/// `col_stride` along columns, while the output is written row by row. Read as is, every
/// element of an output row comes from another cache line (and at power-of-two strides, from
/// the same cache set); instead `BLOCK` x `BLOCK` blocks are gathered column by column into a
/// buffer, then written out row by row.
struct Transposed<'n> {
    nest: &'n Nest<1>,
    rows: usize,
    cols: usize,
    col_stride: usize,
}

/// Side of the blocks of a transposed copy: 16 x 16 f32 is one cache line per block row.
const BLOCK: usize = 16;

impl<'n> Transposed<'n> {
    fn of(nest: &'n Nest<1>) -> Option<Transposed<'n>> {
        let nd = nest.sizes.len();
        (nd >= 2 && nest.strides[nd - 2][0] == 1 && nest.strides[nd - 1][0] > 1).then(|| {
            Transposed {
                nest,
                rows: nest.sizes[nd - 2],
                cols: nest.sizes[nd - 1],
                col_stride: nest.strides[nd - 1][0],
            }
        })
    }

    fn map<T, U, F>(&self, src: &[T], threshold: usize, f: &F) -> Result<Vec<U>>
    where
        T: Copy + Send + Sync,
        U: Send,
        F: Map1<T, U> + Send,
    {
        let (rows, cols) = (self.rows, self.cols);
        let n = self.nest.numel();
        // a stripe is BLOCK rows of one matrix: a contiguous piece of the output
        let per_matrix = rows.div_ceil(BLOCK);
        // the outer dims (all but the last two) as a nest of their own
        let outer = Nest::<1> {
            sizes: self.nest.sizes[..self.nest.sizes.len() - 2]
                .iter()
                .copied()
                .chain([1])
                .collect(),
            strides: self.nest.strides[..self.nest.strides.len() - 2]
                .iter()
                .copied()
                .chain([[0]])
                .collect(),
            offsets: self.nest.offsets,
        };
        let stripe = |i: usize, dst: &mut [MaybeUninit<U>]| {
            let (m, r0) = (i / per_matrix, (i % per_matrix) * BLOCK);
            let base = Rows::new(&outer, m).base[0] + r0;
            let br = dst.len() / cols;
            let mut buf = [[MaybeUninit::<T>::uninit(); BLOCK]; BLOCK];
            for c0 in (0..cols).step_by(BLOCK) {
                let bc = BLOCK.min(cols - c0);
                for (c, col) in buf.iter_mut().enumerate().take(bc) {
                    let from = base + (c0 + c) * self.col_stride;
                    for (slot, &x) in col.iter_mut().zip(&src[from..from + br]) {
                        slot.write(x);
                    }
                }
                for r in 0..br {
                    for (c, d) in dst[r * cols + c0..r * cols + c0 + bc]
                        .iter_mut()
                        .enumerate()
                    {
                        // SAFETY: buf[c][r] was written above for every c < bc and r < br (the
                        // slice `src[from..from + br]` has br elements, or indexing panicked).
                        d.write(f.call(unsafe { buf[c][r].assume_init() }));
                    }
                }
            }
        };
        build_with(n, threshold, |start, dst| {
            // blocks from build_with need not align with stripes: cut them to stripes
            let mut pos = start;
            let end = start + dst.len();
            while pos < end {
                let i = pos / (rows * cols) * per_matrix + (pos % (rows * cols)) / (BLOCK * cols);
                let stripe_start = (i / per_matrix) * rows * cols + (i % per_matrix) * BLOCK * cols;
                let stripe_len = BLOCK.min(rows - (i % per_matrix) * BLOCK) * cols;
                if stripe_start == pos && stripe_start + stripe_len <= end {
                    stripe(i, &mut dst[pos - start..pos - start + stripe_len]);
                    pos += stripe_len;
                } else {
                    // a cut stripe: element runs, as the general path
                    let stop = end.min(stripe_start + stripe_len);
                    self.nest.for_each_block(pos..stop, |p, blk| {
                        run1(src, &blk, &mut dst[p - start..p - start + blk.span()], f)
                    });
                    pos = stop;
                }
            }
            dst.len()
        })
    }
}

/// `out[i] = f(a[i], b[i])` where both layouts are already broadcast to the output shape.
pub fn binary<A, B, U, F>(a: &[A], la: &Layout, b: &[B], lb: &Layout, f: F) -> Result<Vec<U>>
where
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
    U: Send,
    F: Map2<A, B, U> + Send,
{
    binary_with(a, la, b, lb, PAR_THRESHOLD, f)
}

/// `binary` with an explicit parallel threshold (`PAR_THRESHOLD_COSTLY` for costly `f`).
pub fn binary_with<A, B, U, F>(
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    threshold: usize,
    f: F,
) -> Result<Vec<U>>
where
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
    U: Send,
    F: Map2<A, B, U> + Send,
{
    if la.numel() == 0 {
        return Ok(Vec::new());
    }
    let nest = Nest::new([la, lb]);
    fill(&nest, threshold, |dst, blk| run2(a, b, blk, dst, &f))
}

/// `out[i] = f(c[i], a[i], b[i])`, all three layouts broadcast to the output shape.
pub fn ternary<C, A, B, U, F>(
    c: &[C],
    lc: &Layout,
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    f: F,
) -> Result<Vec<U>>
where
    C: Copy + Send + Sync,
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
    U: Send,
    F: Map3<C, A, B, U> + Send,
{
    if lc.numel() == 0 {
        return Ok(Vec::new());
    }
    let nest = Nest::new([lc, la, lb]);
    fill(&nest, PAR_THRESHOLD, |dst, blk| run3(c, a, b, blk, dst, &f))
}

/// The blocks of `src` at `bases`, one after the other: block `b` is `block` (a layout at
/// offset 0) read from `bases[b]` on. Advanced indexing and embedding: a contiguous block (a
/// row) is one copy.
pub fn gather_blocks<T: Copy + Send + Sync>(
    src: &[T],
    bases: &[usize],
    block: &Layout,
) -> Result<Vec<T>> {
    let per = block.numel();
    let n = bases.len() * per;
    if n == 0 {
        return Ok(Vec::new());
    }
    if per == 1 {
        return build_with(n, PAR_THRESHOLD, |start, dst| {
            for (d, &b) in dst.iter_mut().zip(&bases[start..]) {
                d.write(src[b]);
            }
            dst.len().min(bases.len() - start)
        });
    }
    if block.is_contiguous() {
        // rows (or single elements): one strided-free copy per block
        return build_with(n, PAR_THRESHOLD, |start, dst| {
            let end = start + dst.len();
            let mut pos = start;
            while pos < end {
                let (b, within) = (pos / per, pos % per);
                let stop = end.min((b + 1) * per);
                let (at, from) = (pos - start, bases[b] + within);
                dst[at..at + stop - pos].write_copy_of_slice(&src[from..from + stop - pos]);
                pos = stop;
            }
            dst.len()
        });
    }
    let nest = Nest::new([block]);
    build_with(n, PAR_THRESHOLD, |start, dst| {
        let end = start + dst.len();
        let mut pos = start;
        while pos < end {
            let (b, within) = (pos / per, pos % per);
            let stop = end.min((b + 1) * per);
            let base = bases[b];
            nest.for_each_block(within..within + (stop - pos), |p, mut blk| {
                let at = pos - start + (p - within);
                blk.offs[0] += base;
                run1(src, &blk, &mut dst[at..at + blk.span()], &|x| x)
            });
            pos = stop;
        }
        dst.len()
    })
}

/// The output of an elementwise op with the layout PyTorch gives it: the elements in `data`,
/// laid out densely by `layout` (contiguous unless the inputs are laid out otherwise).
pub struct Mapped<U> {
    pub data: Vec<U>,
    pub layout: Layout,
}

/// The dims of `layouts` (all of one shape), outermost first, in the order the output of an
/// elementwise op lays them out: PyTorch's TensorIterator `reorder_dimensions`. Dims are sorted
/// by stride, innermost the smallest; the first operand whose strides differ on two dims
/// decides (a broadcast, stride-0, dim leaves it to the next operand), and on equal strides the
/// smaller dim goes inside. Contiguous inputs give the identity, a transposed one its transpose.
pub fn output_order(layouts: &[&Layout]) -> Vec<usize> {
    let shape = &layouts[0].shape;
    let nd = shape.len();
    // perm[0] is the innermost dim, as in PyTorch
    let mut perm: Vec<usize> = (0..nd).rev().collect();
    let should_swap = |d0: usize, d1: usize| -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        for l in layouts {
            let (s0, s1) = (l.strides[d0], l.strides[d1]);
            if s0 == 0 || s1 == 0 {
                continue;
            }
            match s0.cmp(&s1) {
                Equal if shape[d0] > shape[d1] => return Greater,
                Equal => {}
                order => return order,
            }
        }
        Equal
    };
    for i in 1..nd {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match should_swap(perm[d0], perm[d1]) {
                std::cmp::Ordering::Greater => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                std::cmp::Ordering::Less => break,
                std::cmp::Ordering::Equal => {}
            }
        }
    }
    perm.reverse();
    perm
}

/// Runs `fill_in_order` over `layouts` permuted to the output order, and lays the result out
/// in that order.
fn mapped<const K: usize, U>(
    layouts: [&Layout; K],
    fill_in_order: impl FnOnce([&Layout; K]) -> Result<Vec<U>>,
) -> Result<Mapped<U>> {
    let shape = layouts[0].shape.clone();
    let order = output_order(&layouts);
    if order.iter().enumerate().all(|(i, &d)| i == d) {
        return Ok(Mapped {
            data: fill_in_order(layouts)?,
            layout: Layout::contiguous(shape),
        });
    }
    let permuted: [Layout; K] = std::array::from_fn(|k| layouts[k].permute(&order));
    let data = fill_in_order(std::array::from_fn(|k| &permuted[k]))?;
    let mut strides = vec![0; shape.len()];
    let mut step = 1;
    for &d in order.iter().rev() {
        strides[d] = step;
        step *= shape[d];
    }
    Ok(Mapped {
        data,
        layout: Layout {
            shape,
            strides,
            offset: 0,
        },
    })
}

/// The parallel threshold of a kernel, costly (transcendental) or not.
fn threshold(costly: bool) -> usize {
    if costly {
        PAR_THRESHOLD_COSTLY
    } else {
        PAR_THRESHOLD
    }
}

/// `unary` whose output takes the layout PyTorch gives it (`output_order`).
pub fn map_unary<T, U, F>(src: &[T], layout: &Layout, costly: bool, f: F) -> Result<Mapped<U>>
where
    T: Copy + Send + Sync,
    U: Send,
    F: Map1<T, U> + Send,
{
    mapped([layout], |[l]| unary_with(src, l, threshold(costly), f))
}

/// `binary` whose output takes the layout PyTorch gives it (`output_order`).
pub fn map_binary<A, B, U, F>(
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    costly: bool,
    f: F,
) -> Result<Mapped<U>>
where
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
    U: Send,
    F: Map2<A, B, U> + Send,
{
    mapped([la, lb], |[la, lb]| {
        binary_with(a, la, b, lb, threshold(costly), f)
    })
}

/// `ternary` whose output takes the layout PyTorch gives it (`output_order`).
#[allow(clippy::too_many_arguments)]
pub fn map_ternary<C, A, B, U, F>(
    c: &[C],
    lc: &Layout,
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    f: F,
) -> Result<Mapped<U>>
where
    C: Copy + Send + Sync,
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
    U: Send,
    F: Map3<C, A, B, U> + Send,
{
    mapped([lc, la, lb], |[lc, la, lb]| ternary(c, lc, a, la, b, lb, f))
}

/// In place `x = f(x)` for every element of `layout` in `dst` (PyTorch's `exp_` and friends):
/// one vectorised pass over the storage block when the elements fill one (in any dim order),
/// else run by run.
pub fn map_inplace<T, F>(dst: &mut [T], layout: &Layout, costly: bool, f: F)
where
    T: Copy + Send + Sync,
    F: Map1<T, T> + Send,
{
    let n = layout.numel();
    if n == 0 {
        return;
    }
    if layout.is_non_overlapping_and_dense() {
        let d = &mut dst[layout.offset..layout.offset + n];
        if par_ok(n, threshold(costly)) {
            super::parallel::for_each_block(d, &|_, d| inplace_run(d, &f));
        } else {
            inplace_run(d, &f);
        }
        return;
    }
    let nest = Nest::new([layout]);
    let [st] = nest.inner_strides();
    nest.for_each_run(0..n, |_, [o], len| {
        if st == 1 {
            inplace_run(&mut dst[o..o + len], &f);
        } else {
            for i in 0..len {
                let x = &mut dst[o + i * st];
                *x = f.call(*x);
            }
        }
    });
}

/// In place `x = f(x, y)` for every element of `layout` in `dst`, `y` read from `src` through
/// `src_layout` (of the same shape, stride 0 where broadcast): PyTorch's `x.add_(y)`. `layout`
/// must not map two elements to one place.
pub fn map_inplace2<T, B, F>(
    dst: &mut [T],
    layout: &Layout,
    src: &[B],
    src_layout: &Layout,
    costly: bool,
    f: F,
) where
    T: Copy + Send + Sync,
    B: Copy + Send + Sync,
    F: Map2<T, B, T> + Send,
{
    let n = layout.numel();
    if n == 0 {
        return;
    }
    let nest = Nest::new([layout, src_layout]);
    let [sd, ss] = nest.inner_strides();
    if let Some(r) = layout.contiguous_range() {
        // output positions are storage places from r.start on
        let run = |start: usize, blk: &mut [T]| {
            nest.for_each_block(start..start + blk.len(), |pos, b| {
                inplace2_run(&mut blk[pos - start..pos - start + b.span()], src, &b, &f)
            })
        };
        let d = &mut dst[r];
        if par_ok(n, threshold(costly)) {
            super::parallel::for_each_block(d, &run);
        } else {
            run(0, d);
        }
        return;
    }
    nest.for_each_run(0..n, |_, [od, os], len| {
        if sd == 1 {
            let run = Block::run([od, os], [sd, ss], len);
            inplace2_run(&mut dst[od..od + len], src, &run, &f);
        } else {
            for i in 0..len {
                let x = &mut dst[od + i * sd];
                *x = f.call(*x, src[os + i * ss]);
            }
        }
    });
}

/// `d[..] = f(d[..], src[..])` over the runs of `blk` (`d` holding its span), compiled for the
/// best instruction set the CPU has.
fn inplace2_run<T: Copy, B: Copy, F: Map2<T, B, T>>(d: &mut [T], src: &[B], blk: &Block<2>, f: &F) {
    best!(inplace2_body, inplace2_avx512, inplace2_avx2; d, src, blk, f)
}

/// The runs of a block, each by `inplace2_row`.
#[inline(always)]
fn inplace2_body<T: Copy, B: Copy, F: Map2<T, B, T>>(
    d: &mut [T],
    src: &[B],
    blk: &Block<2>,
    f: &F,
) {
    let ss = blk.inner[1];
    for r in 0..blk.rows {
        let [_, os] = blk.row(r);
        let d = &mut d[blk.out(r)];
        inplace2_row(d, operand(src, os, ss, d.len()), ss, f)
    }
}

/// The loop of one run of `inplace2_run` (`s` from the run's first element on): unit and zero
/// strides vectorise; other strides are gathered chunk by chunk.
#[inline(always)]
fn inplace2_row<T: Copy, B: Copy, F: Map2<T, B, T>>(d: &mut [T], s: &[B], ss: usize, f: &F) {
    match ss {
        1 => {
            for (x, &y) in d.iter_mut().zip(s) {
                *x = f.call(*x, y);
            }
        }
        0 => {
            let y = s[0];
            for x in d.iter_mut() {
                *x = f.call(*x, y);
            }
        }
        _ => {
            let mut buf = [s[0]; CHUNK];
            for (c, dc) in d.chunks_mut(CHUNK).enumerate() {
                for (i, b) in buf.iter_mut().take(dc.len()).enumerate() {
                    *b = s[(c * CHUNK + i) * ss];
                }
                for (x, &y) in dc.iter_mut().zip(&buf) {
                    *x = f.call(*x, y);
                }
            }
        }
    }
}

/// In place `x = f(x, y, z)` for every element of `layout` in `dst`, `y` and `z` read from `a`
/// and `b` through `la` and `lb` (of the same shape, stride 0 where broadcast): PyTorch's
/// `x.addcmul_(t1, t2)`. `layout` must not map two elements to one place. A dense `layout` in
/// any dim order is walked in its memory order, so its inner loop has unit stride.
#[allow(clippy::too_many_arguments)]
pub fn map_inplace3<T, A, B, F>(
    dst: &mut [T],
    layout: &Layout,
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    costly: bool,
    f: F,
) where
    T: Copy + Send + Sync,
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
    F: Map3<T, A, B, T> + Send,
{
    let n = layout.numel();
    if n == 0 {
        return;
    }
    let permuted;
    let [layout, la, lb] = if layout.is_non_overlapping_and_dense() && !layout.is_contiguous() {
        let order = layout.memory_order();
        permuted = [
            layout.permute(&order),
            la.permute(&order),
            lb.permute(&order),
        ];
        [&permuted[0], &permuted[1], &permuted[2]]
    } else {
        [layout, la, lb]
    };
    let nest = Nest::new([layout, la, lb]);
    let [sd, sa, sb] = nest.inner_strides();
    if let Some(r) = layout.contiguous_range() {
        // output positions are storage places from r.start on
        let run = |start: usize, blk: &mut [T]| {
            nest.for_each_block(start..start + blk.len(), |pos, r| {
                inplace3_run(&mut blk[pos - start..pos - start + r.span()], a, b, &r, &f)
            })
        };
        let d = &mut dst[r];
        if par_ok(n, threshold(costly)) {
            super::parallel::for_each_block(d, &run);
        } else {
            run(0, d);
        }
        return;
    }
    nest.for_each_run(0..n, |_, [od, oa, ob], len| {
        if sd == 1 {
            let run = Block::run([od, oa, ob], [sd, sa, sb], len);
            inplace3_run(&mut dst[od..od + len], a, b, &run, &f);
        } else {
            for i in 0..len {
                let x = &mut dst[od + i * sd];
                *x = f.call(*x, a[oa + i * sa], b[ob + i * sb]);
            }
        }
    });
}

/// `d[..] = f(d[..], a[..], b[..])` over the runs of `blk` (`d` holding its span), compiled
/// for the best instruction set the CPU has.
fn inplace3_run<T: Copy, A: Copy, B: Copy, F: Map3<T, A, B, T>>(
    d: &mut [T],
    a: &[A],
    b: &[B],
    blk: &Block<3>,
    f: &F,
) {
    best!(inplace3_body, inplace3_avx512, inplace3_avx2; d, a, b, blk, f)
}

/// The runs of a block, each by `inplace3_row`.
#[inline(always)]
fn inplace3_body<T: Copy, A: Copy, B: Copy, F: Map3<T, A, B, T>>(
    d: &mut [T],
    a: &[A],
    b: &[B],
    blk: &Block<3>,
    f: &F,
) {
    let [_, sa, sb] = blk.inner;
    if sa <= 1 && sb <= 1 && blk.len > 0 {
        // unit and zero strides: the loop for the strides chosen once for all the runs
        match (sa, sb) {
            (1, 1) => unit_runs!(blk, d, [a @ 1, b @ 2], |d| loop3_inplace(d, a, 1, b, 1, f)),
            (1, _) => unit_runs!(blk, d, [a @ 1, b @ 2], |d| loop3_inplace(d, a, 1, b, 0, f)),
            (_, 1) => unit_runs!(blk, d, [a @ 1, b @ 2], |d| loop3_inplace(d, a, 0, b, 1, f)),
            _ => unit_runs!(blk, d, [a @ 1, b @ 2], |d| loop3_inplace(d, a, 0, b, 0, f)),
        }
        return;
    }
    for r in 0..blk.rows {
        let [_, oa, ob] = blk.row(r);
        let d = &mut d[blk.out(r)];
        let (a, b) = (operand(a, oa, sa, d.len()), operand(b, ob, sb, d.len()));
        inplace3_row(d, a, sa, b, sb, f)
    }
}

/// `d[i] = f(d[i], a[i * sa], b[i * sb])`, called with literal strides.
///
/// # Safety
/// `(d.len() - 1) * s < x.len()` for each operand `x` with stride `s` (`d` not empty).
#[inline(always)]
unsafe fn loop3_inplace<T: Copy, A: Copy, B: Copy, F: Map3<T, A, B, T>>(
    d: &mut [T],
    a: &[A],
    sa: usize,
    b: &[B],
    sb: usize,
    f: &F,
) {
    for (i, x) in d.iter_mut().enumerate() {
        // SAFETY: i < d.len(), so i * s <= (d.len() - 1) * s < x.len() for each operand,
        // the caller's promise.
        *x = f.call(*x, unsafe { *a.get_unchecked(i * sa) }, unsafe {
            *b.get_unchecked(i * sb)
        });
    }
}

/// The loop of one run of `inplace3_run` (`a`, `b` from the run's first element on): unit
/// and zero strides vectorise; other strides are gathered chunk by chunk, as in `run3_row`.
#[inline(always)]
fn inplace3_row<T: Copy, A: Copy, B: Copy, F: Map3<T, A, B, T>>(
    d: &mut [T],
    a: &[A],
    sa: usize,
    b: &[B],
    sb: usize,
    f: &F,
) {
    let len = piece(d.len(), &[sa, sb]);
    let mut ba: Buf<A> = [const { MaybeUninit::uninit() }; CHUNK];
    let mut bb: Buf<B> = [const { MaybeUninit::uninit() }; CHUNK];
    for (i, dc) in d.chunks_mut(len).enumerate() {
        // SAFETY: the caller (`inplace3_body`, through `operand`) checked that the whole run
        // fits in `a` and `b` with their strides; this chunk is a non-empty part of it, no
        // longer than CHUNK when a stride is above 1; `part` returns slices of at least
        // `dc.len()` elements read with a stride of 0 or 1.
        unsafe {
            let (a, sa) = part(a, sa, i * len, dc.len(), &mut ba);
            let (b, sb) = part(b, sb, i * len, dc.len(), &mut bb);
            match (sa, sb) {
                (1, 1) => loop3_inplace(dc, a, 1, b, 1, f),
                (1, _) => loop3_inplace(dc, a, 1, b, 0, f),
                (_, 1) => loop3_inplace(dc, a, 0, b, 1, f),
                _ => loop3_inplace(dc, a, 0, b, 0, f),
            }
        }
    }
}

/// Writes `values` (row-major, one per element of `layout`) into `dst` through `layout`.
pub fn assign<T: Copy + Send + Sync>(dst: &mut [T], layout: &Layout, values: &[T]) {
    update(dst, layout, values, |_, v| v)
}

/// In place `dst[i] = f(dst[i], src[i])` through `layout`, `src` row-major.
pub fn update<T: Copy + Send + Sync, F>(dst: &mut [T], layout: &Layout, src: &[T], f: F)
where
    F: Fn(T, T) -> T + Send + Sync,
{
    if let Some(r) = layout.contiguous_range() {
        let d = &mut dst[r];
        let run = |start: usize, d: &mut [T]| {
            d.iter_mut()
                .zip(&src[start..])
                .for_each(|(x, &y)| *x = f(*x, y))
        };
        if par_ok(d.len(), PAR_THRESHOLD) {
            super::parallel::for_each_block(d, &run);
        } else {
            run(0, d);
        }
        return;
    }
    let nest = Nest::new([layout]);
    let [st] = nest.inner_strides();
    nest.for_each_run(0..nest.numel(), |pos, [o], len| {
        let vals = &src[pos..pos + len];
        if st == 1 {
            for (x, &y) in dst[o..o + len].iter_mut().zip(vals) {
                *x = f(*x, y);
            }
        } else {
            for (i, &y) in vals.iter().enumerate() {
                let x = &mut dst[o + i * st];
                *x = f(*x, y);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_broadcast_and_strided() {
        let a = [1.0f32, 2.0, 3.0];
        let b = [10.0f32, 20.0];
        let la = Layout::contiguous(vec![3, 1])
            .broadcast_to(&[3, 2])
            .unwrap();
        let lb = Layout::contiguous(vec![2]).broadcast_to(&[3, 2]).unwrap();
        let out = binary(&a, &la, &b, &lb, |x, y| x + y).unwrap();
        assert_eq!(out, vec![11., 21., 12., 22., 13., 23.]);
    }

    #[test]
    fn unary_parallel_matches_serial() {
        let n = PAR_THRESHOLD * 3 + 7;
        let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let out = unary(&a, &Layout::contiguous(vec![n]), |x| x * 2.0).unwrap();
        assert!(out.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f64));
    }

    #[test]
    fn inplace3_matches_ternary_through_transpose_broadcast_and_slices() {
        // dst transposed (walked in memory order), `a` sliced (gathered), `b` broadcast
        let (r, c) = (37, 150);
        let f = |x: f64, y: f64, z: f64| x + 0.5 * y * z;
        let ld = Layout::contiguous(vec![c, r]).transpose(0, 1);
        let a: Vec<f64> = (0..2 * r * c).map(|i| (i % 17) as f64).collect();
        let la = Layout {
            shape: vec![r, c],
            strides: vec![2 * c, 2],
            offset: 1,
        };
        let b: Vec<f64> = (0..c).map(|i| i as f64 - 3.0).collect();
        let lb = Layout::contiguous(vec![c]).broadcast_to(&[r, c]).unwrap();
        let mut d: Vec<f64> = (0..r * c).map(|i| (i % 5) as f64).collect();
        let expected = ternary(&d, &ld, &a, &la, &b, &lb, f).unwrap();
        map_inplace3(&mut d, &ld, &a, &la, &b, &lb, false, f);
        let got = unary(&d, &ld, |x: f64| x).unwrap();
        assert_eq!(got, expected);
    }

    /// Offset of row-major output position `pos` in operand layout `l`.
    fn offset_of(l: &Layout, mut pos: usize) -> usize {
        let mut off = l.offset;
        for d in (0..l.shape.len()).rev() {
            off += (pos % l.shape[d]) * l.strides[d];
            pos /= l.shape[d];
        }
        off
    }

    #[test]
    fn blocks_visit_every_position_once_with_its_offsets() {
        // broadcasts, a transpose wide enough to be tiled, slices, and ranges that cut rows
        // and outer dims, as the threads' pieces do
        let shape = vec![2, 1000, 300];
        let a = Layout::contiguous(vec![2, 300, 1000]).transpose(1, 2);
        let b = Layout::contiguous(vec![1000, 1])
            .broadcast_to(&shape)
            .unwrap();
        let c = Layout::contiguous(vec![2, 2000, 600])
            .slice(1, 1, 1000, 2)
            .slice(2, 0, 300, 2);
        let nest = Nest::new([&a, &b, &c]);
        assert!(nest.transposed());
        let n = nest.numel();
        for range in [0..n, 5..n - 3, 299..601, 299_999..300_001, 1000..400_000] {
            let mut seen = vec![0u8; n];
            nest.for_each_block(range.clone(), |pos, blk| {
                for r in 0..blk.rows {
                    let offs = blk.row(r);
                    for i in 0..blk.len {
                        let p = pos + blk.out(r).start + i;
                        seen[p] += 1;
                        for (k, l) in [&a, &b, &c].into_iter().enumerate() {
                            assert_eq!(offs[k] + i * blk.inner[k], offset_of(l, p), "{p} {k}");
                        }
                    }
                }
            });
            for (p, &v) in seen.iter().enumerate() {
                assert_eq!(v, u8::from(range.contains(&p)), "position {p} of {range:?}");
            }
        }
    }

    #[test]
    fn assign_through_transpose() {
        let mut d = [0i64; 6];
        let l = Layout::contiguous(vec![2, 3]).transpose(0, 1);
        assign(&mut d, &l, &[1, 2, 3, 4, 5, 6]);
        assert_eq!(d, [1, 3, 5, 2, 4, 6]);
    }
}
