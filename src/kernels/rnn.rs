//! Recurrent cells: the elementwise part of an LSTM or GRU step in one pass, forward and
//! backward (PyTorch's `_thnn_fused_lstm_cell` / `_thnn_fused_gru_cell` and their backwards).
//! The gate pre-activations come in `(batch, k * hidden)` buffers, in PyTorch's gate order:
//! i, f, g, o for the LSTM, r, z, n for the GRU.

use super::matmul::{matmul, matmul_raw, Mat};
use super::parallel::SharedOut;
use super::simd::Real;
use crate::storage::Elem;

/// One LSTM step from the gate pre-activations `gates` and the previous cell state `c`:
/// returns (h, c', act) where `act` holds the activated gates (sigmoid i, f, o, tanh g) for the
/// backward.
pub fn lstm_forward<R: Real>(gates: &[R], c: &[R], hidden: usize) -> (Vec<R>, Vec<R>, Vec<R>) {
    let n = c.len();
    let zero = R::c(0.0);
    let (mut h, mut cy, mut act) = (vec![zero; n], vec![zero; n], gates.to_vec());
    let rows = act
        .chunks_exact_mut(4 * hidden)
        .zip(c.chunks_exact(hidden))
        .zip(h.chunks_exact_mut(hidden).zip(cy.chunks_exact_mut(hidden)));
    for ((a, c), (h, cy)) in rows {
        let (i, rest) = a.split_at_mut(hidden);
        let (f, rest) = rest.split_at_mut(hidden);
        let (g, o) = rest.split_at_mut(hidden);
        cell_forward([i, f, g, o], c, cy, h);
    }
    (h, cy, act)
}

/// The LSTM cell on one batch row's block of hidden units: `g` holds the block's gate
/// pre-activations (i, f, g, o), replaced by their activations (sigmoid, sigmoid, tanh,
/// sigmoid); `c` is the previous cell state; writes the new cell state `cy` and hidden state `h`.
fn cell_forward<R: Real>(g: [&mut [R]; 4], c: &[R], cy: &mut [R], h: &mut [R]) {
    best!(cell_forward_body, cell_forward_avx512, cell_forward_avx2; g, c, cy, h)
}

#[inline(always)]
fn cell_forward_body<R: Real>(g: [&mut [R]; 4], c: &[R], cy: &mut [R], h: &mut [R]) {
    let n = c.len();
    let [gi, gf, gg, go] = g;
    let (gi, gf, gg, go) = (&mut gi[..n], &mut gf[..n], &mut gg[..n], &mut go[..n]);
    let (cy, h) = (&mut cy[..n], &mut h[..n]);
    for j in 0..n {
        let (i, f) = (gi[j].sigmoid(), gf[j].sigmoid());
        let (g, o) = (gg[j].tanh(), go[j].sigmoid());
        (gi[j], gf[j], gg[j], go[j]) = (i, f, g, o);
        let cj = f * c[j] + i * g;
        cy[j] = cj;
        h[j] = o * cj.tanh();
    }
}

/// The backward of `lstm_forward`: from the gradients of h and c' (`dh`, `dcy`), the
/// activated gates `act`, the previous cell state `c` and the new one `cy`, returns the
/// gradients of the gate pre-activations and of `c`.
pub fn lstm_backward<R: Real>(
    dh: &[R],
    dcy: &[R],
    act: &[R],
    c: &[R],
    cy: &[R],
    hidden: usize,
) -> (Vec<R>, Vec<R>) {
    let (mut dgates, mut dc) = (vec![R::c(0.0); act.len()], dcy.to_vec());
    let rows = dgates
        .chunks_exact_mut(4 * hidden)
        .zip(act.chunks_exact(4 * hidden));
    for (b, (d, a)) in rows.enumerate() {
        let at = b * hidden..(b + 1) * hidden;
        let (i, rest) = d.split_at_mut(hidden);
        let (f, rest) = rest.split_at_mut(hidden);
        let (g, o) = rest.split_at_mut(hidden);
        let act: [&[R]; 4] = std::array::from_fn(|k| &a[k * hidden..(k + 1) * hidden]);
        let state = CellState {
            c: &c[at.clone()],
            cy: &cy[at.clone()],
            dh: &dh[at.clone()],
        };
        cell_backward(act, state, &mut dc[at], [i, f, g, o]);
    }
    (dgates, dc)
}

/// What the cell's backward reads of one row's block of hidden units besides the gates: the
/// previous cell state `c`, the new one `cy`, and the gradient of the new hidden state `dh`.
struct CellState<'a, R> {
    c: &'a [R],
    cy: &'a [R],
    dh: &'a [R],
}

/// The backward of `cell_forward` on one row's block of units: from the activated gates `a`
/// (i, f, g, o) and `state`, with `dc` the gradient of the new cell state (replaced by that of
/// the previous one), writes the gradients of the gate pre-activations `d`.
fn cell_backward<R: Real>(a: [&[R]; 4], state: CellState<'_, R>, dc: &mut [R], d: [&mut [R]; 4]) {
    best!(cell_backward_body, cell_backward_avx512, cell_backward_avx2; a, state, dc, d)
}

#[inline(always)]
fn cell_backward_body<R: Real>(
    a: [&[R]; 4],
    state: CellState<'_, R>,
    dc: &mut [R],
    d: [&mut [R]; 4],
) {
    let one = R::c(1.0);
    let n = dc.len();
    let [i, f, g, o] = a.map(|x| &x[..n]);
    let (c, cy, dh) = (&state.c[..n], &state.cy[..n], &state.dh[..n]);
    let [d_i, d_f, d_g, d_o] = d;
    let (d_i, d_f, d_g, d_o) = (&mut d_i[..n], &mut d_f[..n], &mut d_g[..n], &mut d_o[..n]);
    for j in 0..n {
        let (i, f, g, o) = (i[j], f[j], g[j], o[j]);
        let t = cy[j].tanh();
        let dct = dc[j] + dh[j] * o * (one - t * t);
        d_i[j] = dct * g * i * (one - i);
        d_f[j] = dct * c[j] * f * (one - f);
        d_g[j] = dct * i * (one - g * g);
        d_o[j] = dh[j] * t * o * (one - o);
        dc[j] = dct * f;
    }
}

/// One GRU step from the input and hidden projections `gi`, `gh` `(batch, 3 * hidden)` and the
/// previous state `h`: returns (h', act) with r = sigmoid(i_r + h_r), z = sigmoid(i_z + h_z),
/// n = tanh(i_n + r h_n), h' = n + z (h - n); `act` holds r, z, n for the backward.
pub fn gru_forward<R: Real>(gi: &[R], gh: &[R], h: &[R], hidden: usize) -> (Vec<R>, Vec<R>) {
    best!(gru_forward_body, gru_forward_avx512, gru_forward_avx2; gi, gh, h, hidden)
}

#[inline(always)]
fn gru_forward_body<R: Real>(gi: &[R], gh: &[R], h: &[R], hidden: usize) -> (Vec<R>, Vec<R>) {
    let zero = R::c(0.0);
    let (mut hy, mut act) = (vec![zero; h.len()], vec![zero; 3 * h.len()]);
    let rows = gi
        .chunks_exact(3 * hidden)
        .zip(gh.chunks_exact(3 * hidden))
        .zip(act.chunks_exact_mut(3 * hidden))
        .zip(h.chunks_exact(hidden).zip(hy.chunks_exact_mut(hidden)));
    for (((gi, gh), a), (h, hy)) in rows {
        let (a_rz, a_n) = a.split_at_mut(2 * hidden);
        for ((a, &x), &y) in a_rz
            .iter_mut()
            .zip(&gi[..2 * hidden])
            .zip(&gh[..2 * hidden])
        {
            *a = (x + y).sigmoid();
        }
        let (r, z) = a_rz.split_at(hidden);
        let pre = gi[2 * hidden..].iter().zip(&gh[2 * hidden..]).zip(r);
        for (a, ((&x, &y), &r)) in a_n.iter_mut().zip(pre) {
            *a = (x + r * y).tanh();
        }
        for (((hy, &h), &z), &n) in hy.iter_mut().zip(h).zip(z).zip(a_n.iter()) {
            *hy = n + z * (h - n);
        }
    }
    (hy, act)
}

/// The backward of `gru_forward`: from the gradient of h' and the saved `gh`, `h`, `act`,
/// returns the gradients of `gi`, `gh` and `h`.
pub fn gru_backward<R: Real>(
    dhy: &[R],
    gh: &[R],
    h: &[R],
    act: &[R],
    hidden: usize,
) -> (Vec<R>, Vec<R>, Vec<R>) {
    best!(gru_backward_body, gru_backward_avx512, gru_backward_avx2; dhy, gh, h, act, hidden)
}

#[inline(always)]
fn gru_backward_body<R: Real>(
    dhy: &[R],
    gh: &[R],
    h: &[R],
    act: &[R],
    hidden: usize,
) -> (Vec<R>, Vec<R>, Vec<R>) {
    let (zero, one) = (R::c(0.0), R::c(1.0));
    let (mut dgi, mut dgh, mut dh) = (
        vec![zero; act.len()],
        vec![zero; act.len()],
        vec![zero; h.len()],
    );
    let per_row = dgi
        .chunks_exact_mut(3 * hidden)
        .zip(dgh.chunks_exact_mut(3 * hidden))
        .zip(dh.chunks_exact_mut(hidden));
    for (b, ((dgi, dgh), dh)) in per_row.enumerate() {
        let at = b * hidden..(b + 1) * hidden;
        let (dhy, h) = (&dhy[at.clone()], &h[at]);
        let (a, gh) = (
            &act[b * 3 * hidden..(b + 1) * 3 * hidden],
            &gh[b * 3 * hidden..(b + 1) * 3 * hidden],
        );
        for j in 0..hidden {
            let (r, z, n) = (a[j], a[hidden + j], a[2 * hidden + j]);
            let d = dhy[j];
            let dn = d * (one - z) * (one - n * n);
            let dz = d * (h[j] - n) * z * (one - z);
            let dr = dn * gh[2 * hidden + j] * r * (one - r);
            dgi[j] = dr;
            dgi[hidden + j] = dz;
            dgi[2 * hidden + j] = dn;
            dgh[j] = dr;
            dgh[hidden + j] = dz;
            dgh[2 * hidden + j] = dn * r;
            dh[j] = d * z;
        }
    }
    (dgi, dgh, dh)
}

/// The sizes and weights of one LSTM layer in one direction over a whole sequence: input `x`
/// `(steps, batch, input)` time-major, initial state `h0`, `c0` `(batch, hidden)`, weights
/// `w_ih` `(4 hidden, input)`, `w_hh` `(4 hidden, hidden)`, optional biases `(4 hidden)`;
/// `reverse` runs the steps from the last to the first.
pub struct LstmSeq<'a, R> {
    pub x: &'a [R],
    pub h0: &'a [R],
    pub c0: &'a [R],
    pub w_ih: &'a [R],
    pub w_hh: &'a [R],
    pub b_ih: Option<&'a [R]>,
    pub b_hh: Option<&'a [R]>,
    pub steps: usize,
    pub batch: usize,
    pub input: usize,
    pub hidden: usize,
    pub reverse: bool,
}

impl<R> LstmSeq<'_, R> {
    /// The time index of the `s`-th step processed.
    fn at(&self, s: usize) -> usize {
        if self.reverse {
            self.steps - 1 - s
        } else {
            s
        }
    }
}

/// What `lstm_seq_forward` returns: the hidden state of every step `out` `(steps, batch,
/// hidden)`, the final `h`, `c`, and (when asked to save) the activated gates `act` and the cell
/// state `cs` of every step, for `lstm_seq_backward`.
pub struct LstmSeqOut<R> {
    pub out: Vec<R>,
    pub h: Vec<R>,
    pub c: Vec<R>,
    pub act: Vec<R>,
    pub cs: Vec<R>,
}

fn mat<R>(data: &[R], offset: usize, rs: usize, cs: usize) -> Mat<'_, R> {
    Mat {
        data,
        offset,
        rs,
        cs,
    }
}

/// Below this many multiply-adds in a step's recurrent product (batch x hidden x 4 hidden) a
/// layer's steps run on one thread: one fork and join per step costs a few microseconds.
const STEP_PAR_THRESHOLD: usize = 1 << 17;

/// How the steps of a layer with `hidden` units share them between threads: `per` units (a
/// multiple of 16) to each of `parts` threads.
#[derive(Clone, Copy)]
struct UnitSplit {
    parts: usize,
    per: usize,
}

impl UnitSplit {
    fn new(batch: usize, hidden: usize) -> Self {
        let threads = if super::par_ok(batch * hidden * 4 * hidden, STEP_PAR_THRESHOLD) {
            super::num_threads()
        } else {
            1
        };
        Self::of(hidden, threads)
    }

    fn of(hidden: usize, threads: usize) -> Self {
        let per = (hidden.div_ceil(threads.max(1)).div_ceil(16) * 16).max(1);
        UnitSplit {
            parts: hidden.div_ceil(per).max(1),
            per,
        }
    }

    /// The units of part `q`.
    fn units(&self, q: usize, hidden: usize) -> std::ops::Range<usize> {
        (q * self.per).min(hidden)..((q + 1) * self.per).min(hidden)
    }

    /// Runs `f` on every part, on the helper threads when there are several.
    fn run(&self, f: &(dyn Fn(usize) + Sync)) {
        if self.parts == 1 {
            f(0)
        } else {
            super::parallel::run_parts(self.parts, f)
        }
    }
}

/// `buf`'s `len`-element slots `read` (shared) and `write` (mutable), two different ones.
fn slot_pair<R>(buf: &mut [R], len: usize, read: usize, write: usize) -> (&[R], &mut [R]) {
    if read < write {
        let (lo, hi) = buf.split_at_mut(write * len);
        (&lo[read * len..(read + 1) * len], &mut hi[..len])
    } else {
        let (lo, hi) = buf.split_at_mut(read * len);
        (&hi[..len], &mut lo[write * len..(write + 1) * len])
    }
}

/// A whole LSTM layer (one direction): the input projection of all steps as one gemm, then per
/// step the recurrent product `h @ w_hh^T` added to it and the fused cell. The threads split a
/// step by hidden units: each computes the four gates of its units (four gemm calls) and their
/// cell, so a step costs one fork and join.
pub fn lstm_seq_forward<R: Real + Elem>(p: &LstmSeq<'_, R>, save: bool) -> LstmSeqOut<R> {
    lstm_seq_forward_split(p, save, UnitSplit::new(p.batch, p.hidden))
}

fn lstm_seq_forward_split<R: Real + Elem>(
    p: &LstmSeq<'_, R>,
    save: bool,
    split: UnitSplit,
) -> LstmSeqOut<R> {
    let (tn, b, ni, nh) = (p.steps, p.batch, p.input, p.hidden);
    let (g4, bh) = (4 * nh, b * nh);
    // the two biases summed, one row per (step, batch) to accumulate the projection onto
    let mut gates = match (p.b_ih, p.b_hh) {
        (None, None) => vec![R::c(0.0); tn * b * g4],
        (bi, bh) => {
            let row: Vec<R> = (0..g4)
                .map(|j| bi.map_or(R::c(0.0), |v| v[j]) + bh.map_or(R::c(0.0), |v| v[j]))
                .collect();
            row.repeat(tn * b)
        }
    };
    let biased = p.b_ih.is_some() || p.b_hh.is_some();
    matmul(
        tn * b,
        ni,
        g4,
        mat(p.x, 0, ni, 1),
        mat(p.w_ih, 0, 1, ni),
        &mut gates,
        biased,
    );
    // w_hh^T (hidden x 4 hidden) row-major: each step's product reads it along its rows
    let mut wt = vec![R::c(0.0); nh * g4];
    super::matmul::transpose_into(p.w_hh, nh, g4, nh, &mut wt);
    let mut out = vec![R::c(0.0); tn * bh];
    // every step's cell state when saving, else two slots used in turn
    let mut cs = vec![R::c(0.0); if save { tn * bh } else { 2 * bh }];
    let c_slot = |s: usize, t: usize| if save { t } else { s % 2 };
    for s in 0..tn {
        let t = p.at(s);
        let (h_prev, h_new) = if s == 0 {
            (p.h0, &mut out[t * bh..(t + 1) * bh])
        } else {
            slot_pair(&mut out, bh, p.at(s - 1), t)
        };
        let (c_prev, c_new) = if s == 0 {
            (p.c0, &mut cs[c_slot(s, t) * bh..(c_slot(s, t) + 1) * bh])
        } else {
            slot_pair(&mut cs, bh, c_slot(s - 1, p.at(s - 1)), c_slot(s, t))
        };
        let g = SharedOut::new(&mut gates[t * b * g4..(t + 1) * b * g4]);
        let (h_new, c_new) = (SharedOut::new(h_new), SharedOut::new(c_new));
        let step = |q: usize| {
            let units = split.units(q, nh);
            let (j0, w) = (units.start, units.len());
            for k in 0..4 {
                // SAFETY: the operands are in bounds (asserted by matmul_raw); the output is
                // the b x w block of gate k's columns for part q's units in this step's rows
                // (row stride 4 hidden), written by no other part.
                unsafe {
                    let (h, w_t) = (mat(h_prev, 0, nh, 1), mat(&wt, k * nh + j0, g4, 1));
                    matmul_raw(
                        b,
                        nh,
                        w,
                        h,
                        w_t,
                        g.ptr().add(k * nh + j0),
                        g4,
                        1,
                        true,
                        false,
                    );
                }
            }
            for r in 0..b {
                // SAFETY: part q's units of row r, in each gate and state buffer: disjoint from
                // every other part's, and inside buffers of b rows of 4 hidden / hidden.
                let (gr, cy, h) = unsafe {
                    let gr: [&mut [R]; 4] =
                        std::array::from_fn(|k| g.slice(r * g4 + k * nh + j0, w));
                    (gr, c_new.slice(r * nh + j0, w), h_new.slice(r * nh + j0, w))
                };
                cell_forward(gr, &c_prev[r * nh + j0..r * nh + j0 + w], cy, h);
            }
        };
        split.run(&step);
    }
    let last = |buf: &[R], slot: usize| buf[slot * bh..(slot + 1) * bh].to_vec();
    let (h, c) = match tn {
        0 => (p.h0.to_vec(), p.c0.to_vec()),
        _ => {
            let t = p.at(tn - 1);
            (last(&out, t), last(&cs, c_slot(tn - 1, t)))
        }
    };
    // after the cells, `gates` holds the activated gates
    let (act, cs) = if save {
        (gates, cs)
    } else {
        (Vec::new(), Vec::new())
    };
    LstmSeqOut { out, h, c, act, cs }
}

/// The gradients `lstm_seq_backward` computes (each only when asked for).
#[derive(Default)]
pub struct LstmSeqGrads<R> {
    pub x: Option<Vec<R>>,
    pub h0: Option<Vec<R>>,
    pub c0: Option<Vec<R>>,
    pub w_ih: Option<Vec<R>>,
    pub w_hh: Option<Vec<R>>,
    /// The gradient of either bias (both get the same).
    pub bias: Option<Vec<R>>,
}

/// The gradients of a sequence's output, final h and final c (None: zero).
pub type SeqGrads<'a, R> = (Option<&'a [R]>, Option<&'a [R]>, Option<&'a [R]>);

/// Which gradients `lstm_seq_backward` computes: x, h0, c0, w_ih, w_hh, bias.
pub type LstmSeqNeeds = [bool; 6];

/// Back-propagation through time for `lstm_seq_forward`: from the gradients of `out`, the
/// final `h` and `c` (each optional: zero), with the forward's `out`, `act`, `cs`. Per step the
/// fused cell backward and the recurrent product `dgates @ w_hh`, split by hidden units as in
/// the forward: each part multiplies its units' gate gradients by their rows of w_hh, a partial
/// sum of the next step's dh that every part adds up for its own units. Then the weight
/// gradients as one gemm each over all steps, the input gradient as one gemm and the bias
/// gradient as one sum.
pub fn lstm_seq_backward<R: Real + Elem>(
    p: &LstmSeq<'_, R>,
    fwd: (&[R], &[R], &[R]),
    grads: SeqGrads<'_, R>,
    needs: LstmSeqNeeds,
) -> LstmSeqGrads<R> {
    lstm_seq_backward_split(p, fwd, grads, needs, UnitSplit::new(p.batch, p.hidden))
}

fn lstm_seq_backward_split<R: Real + Elem>(
    p: &LstmSeq<'_, R>,
    fwd: (&[R], &[R], &[R]),
    grads: SeqGrads<'_, R>,
    needs: LstmSeqNeeds,
    split: UnitSplit,
) -> LstmSeqGrads<R> {
    let (tn, b, ni, nh) = (p.steps, p.batch, p.input, p.hidden);
    let (g4, bh, bg) = (4 * nh, p.batch * p.hidden, p.batch * 4 * p.hidden);
    let (out, act, cs) = fwd;
    let (dout, dhn, dcn) = grads;
    let mut dgates = vec![R::c(0.0); tn * bg];
    let mut dc = dcn.map_or_else(|| vec![R::c(0.0); bh], <[R]>::to_vec);
    // each part's share of dh (b x hidden) for the step before, in two halves used in turn
    let parts = split.parts;
    let mut partial = vec![R::c(0.0); 2 * parts * bh];
    for (i, s) in (0..tn).rev().enumerate() {
        let t = p.at(s);
        let (read, write) = slot_pair(&mut partial, parts * bh, (i + 1) % 2, i % 2);
        let c_prev = if s == 0 {
            p.c0
        } else {
            &cs[p.at(s - 1) * bh..(p.at(s - 1) + 1) * bh]
        };
        let (dg_t, dc_out) = (
            SharedOut::new(&mut dgates[t * bg..(t + 1) * bg]),
            SharedOut::new(&mut dc),
        );
        let write = SharedOut::new(write);
        let product = s > 0 || needs[1];
        let step = |q: usize| {
            let units = split.units(q, nh);
            let (j0, w) = (units.start, units.len());
            // this part's gate gradients, b rows of (i, f, g, o) x w units
            let mut d = vec![R::c(0.0); b * 4 * w];
            let mut dh = vec![R::c(0.0); w];
            for r in 0..b {
                let at = r * nh + j0..r * nh + j0 + w;
                if let Some(v) = dout {
                    dh.copy_from_slice(&v[t * bh + at.start..t * bh + at.end]);
                } else {
                    dh.fill(R::c(0.0));
                }
                let shares: Vec<&[R]> = if i == 0 {
                    dhn.map(|v| &v[at.clone()]).into_iter().collect()
                } else {
                    (0..parts)
                        .map(|q| &read[q * bh + at.start..q * bh + at.end])
                        .collect()
                };
                for share in shares {
                    for (a, &v) in dh.iter_mut().zip(share) {
                        *a = *a + v;
                    }
                }
                let a_row = &act[t * bg + r * g4..t * bg + (r + 1) * g4];
                let a: [&[R]; 4] = std::array::from_fn(|k| &a_row[k * nh + j0..k * nh + j0 + w]);
                let state = CellState {
                    c: &c_prev[at.clone()],
                    cy: &cs[t * bh + at.start..t * bh + at.end],
                    dh: &dh,
                };
                let (i, rest) = d[r * 4 * w..(r + 1) * 4 * w].split_at_mut(w);
                let (f, rest) = rest.split_at_mut(w);
                let (g, o) = rest.split_at_mut(w);
                // SAFETY: part q's units of row r of dc, written by no other part.
                let dc = unsafe { dc_out.slice(r * nh + j0, w) };
                cell_backward(a, state, dc, [i, f, g, o]);
                for k in 0..4 {
                    // SAFETY: part q's units of gate k in row r of this step's gradients.
                    let dst = unsafe { dg_t.slice(r * g4 + k * nh + j0, w) };
                    dst.copy_from_slice(&d[(r * 4 + k) * w..(r * 4 + k + 1) * w]);
                }
            }
            if product {
                for k in 0..4 {
                    // SAFETY: the operands are in bounds (asserted by matmul_raw); the output
                    // is part q's own b x hidden share in `write`.
                    unsafe {
                        let (dg, w_hh) = (
                            mat(&d, k * w, 4 * w, 1),
                            mat(p.w_hh, (k * nh + j0) * nh, nh, 1),
                        );
                        matmul_raw(
                            b,
                            w,
                            nh,
                            dg,
                            w_hh,
                            write.ptr().add(q * bh),
                            nh,
                            1,
                            k > 0,
                            false,
                        );
                    }
                }
            }
        };
        split.run(&step);
    }
    let mut g = LstmSeqGrads::default();
    if needs[0] {
        let mut dx = vec![R::c(0.0); tn * b * ni];
        let (dg, w) = (mat(&dgates, 0, g4, 1), mat(p.w_ih, 0, ni, 1));
        matmul(tn * b, g4, ni, dg, w, &mut dx, false);
        g.x = Some(dx);
    }
    if needs[3] {
        let mut dw = vec![R::c(0.0); g4 * ni];
        let (dg_t, x) = (mat(&dgates, 0, 1, g4), mat(p.x, 0, ni, 1));
        matmul(g4, tn * b, ni, dg_t, x, &mut dw, false);
        g.w_ih = Some(dw);
    }
    if needs[4] {
        // the state each step started from: h0 for the first step processed, else the output
        // of the step before it (the previous time step, or the next one in reverse)
        let mut dw = vec![R::c(0.0); g4 * nh];
        let (first, rest_g, rest_h) = if p.reverse {
            (tn - 1, 0, bh)
        } else {
            (0, bg, 0)
        };
        let rows = (tn - 1) * b;
        let (dg_t, h) = (mat(&dgates, rest_g, 1, g4), mat(out, rest_h, nh, 1));
        matmul(g4, rows, nh, dg_t, h, &mut dw, false);
        let (dg_t, h) = (mat(&dgates, first * bg, 1, g4), mat(p.h0, 0, nh, 1));
        matmul(g4, b, nh, dg_t, h, &mut dw, true);
        g.w_hh = Some(dw);
    }
    if needs[5] {
        let mut db = vec![R::c(0.0); g4];
        for row in dgates.chunks_exact(g4) {
            for (a, &v) in db.iter_mut().zip(row) {
                *a = *a + v;
            }
        }
        g.bias = Some(db);
    }
    if needs[1] && tn > 0 {
        let last = &partial[((tn - 1) % 2) * parts * bh..][..parts * bh];
        let mut dh = last[..bh].to_vec();
        for share in last.chunks_exact(bh).skip(1) {
            for (a, &v) in dh.iter_mut().zip(share) {
                *a = *a + v;
            }
        }
        g.h0 = Some(dh);
    }
    if needs[2] {
        g.c0 = Some(dc);
    }
    g
}

/// What `gru_seq_forward` returns: the hidden state of every step `out` `(steps, batch,
/// hidden)`, the final `h`, and (when asked to save) the activated gates `act` and the hidden
/// projections `gh` of every step, for `gru_seq_backward`.
pub struct GruSeqOut<R> {
    pub out: Vec<R>,
    pub h: Vec<R>,
    pub act: Vec<R>,
    pub gh: Vec<R>,
}

/// `n` copies of `bias` (zeros without one), one per row, to accumulate a product onto.
fn bias_rows<R: Real>(bias: Option<&[R]>, width: usize, n: usize) -> Vec<R> {
    match bias {
        Some(b) => b.repeat(n),
        None => vec![R::c(0.0); width * n],
    }
}

/// A whole GRU layer (one direction, `LstmSeq`'s layout with 3 gates, `c0` unused): the input
/// projection of all steps as one gemm, then per step the hidden projection `h @ w_hh^T + b_hh`
/// and the fused cell (`gru_forward`).
pub fn gru_seq_forward<R: Real + Elem>(p: &LstmSeq<'_, R>, save: bool) -> GruSeqOut<R> {
    let (tn, b, ni, nh) = (p.steps, p.batch, p.input, p.hidden);
    let g3 = 3 * nh;
    let mut gi = bias_rows(p.b_ih, g3, tn * b);
    let (x, w) = (mat(p.x, 0, ni, 1), mat(p.w_ih, 0, 1, ni));
    matmul(tn * b, ni, g3, x, w, &mut gi, p.b_ih.is_some());
    let mut out = vec![R::c(0.0); tn * b * nh];
    let (mut act, mut ghs) = if save {
        (vec![R::c(0.0); tn * b * g3], vec![R::c(0.0); tn * b * g3])
    } else {
        (Vec::new(), Vec::new())
    };
    let mut h = p.h0.to_vec();
    for s in 0..tn {
        let t = p.at(s);
        let mut gh = bias_rows(p.b_hh, g3, b);
        let (hm, w) = (mat(&h, 0, nh, 1), mat(p.w_hh, 0, 1, nh));
        matmul(b, nh, g3, hm, w, &mut gh, p.b_hh.is_some());
        let (hy, a) = gru_forward(&gi[t * b * g3..(t + 1) * b * g3], &gh, &h, nh);
        out[t * b * nh..(t + 1) * b * nh].copy_from_slice(&hy);
        if save {
            act[t * b * g3..(t + 1) * b * g3].copy_from_slice(&a);
            ghs[t * b * g3..(t + 1) * b * g3].copy_from_slice(&gh);
        }
        h = hy;
    }
    GruSeqOut {
        out,
        h,
        act,
        gh: ghs,
    }
}

/// The gradients `gru_seq_backward` computes (each only when asked for).
#[derive(Default)]
pub struct GruSeqGrads<R> {
    pub x: Option<Vec<R>>,
    pub h0: Option<Vec<R>>,
    pub w_ih: Option<Vec<R>>,
    pub w_hh: Option<Vec<R>>,
    pub b_ih: Option<Vec<R>>,
    pub b_hh: Option<Vec<R>>,
}

/// Column sums of a `(rows, width)` buffer.
fn col_sums<R: Real>(m: &[R], width: usize) -> Vec<R> {
    let mut db = vec![R::c(0.0); width];
    for row in m.chunks_exact(width) {
        for (a, &v) in db.iter_mut().zip(row) {
            *a = *a + v;
        }
    }
    db
}

/// Back-propagation through time for `gru_seq_forward`, from the gradients of `out` and the
/// final `h` (each optional: zero), with the forward's `out`, `act`, `gh`; `needs` says which of
/// x, h0, w_ih, w_hh, b_ih, b_hh to compute. The weight gradients are one gemm each over all
/// steps, the input gradient one gemm, the bias gradients one sum each.
pub fn gru_seq_backward<R: Real + Elem>(
    p: &LstmSeq<'_, R>,
    fwd: (&[R], &[R], &[R]),
    grads: (Option<&[R]>, Option<&[R]>),
    needs: LstmSeqNeeds,
) -> GruSeqGrads<R> {
    let (tn, b, ni, nh) = (p.steps, p.batch, p.input, p.hidden);
    let (g3, bh, bg) = (3 * nh, p.batch * p.hidden, p.batch * 3 * p.hidden);
    let (out, act, ghs) = fwd;
    let (dout, dhn) = grads;
    let (mut dgi, mut dgh) = (vec![R::c(0.0); tn * bg], vec![R::c(0.0); tn * bg]);
    let mut dh = dhn.map_or_else(|| vec![R::c(0.0); bh], <[R]>::to_vec);
    for s in (0..tn).rev() {
        let t = p.at(s);
        if let Some(d) = dout {
            for (a, &v) in dh.iter_mut().zip(&d[t * bh..(t + 1) * bh]) {
                *a = *a + v;
            }
        }
        let h_prev = if s == 0 {
            p.h0
        } else {
            &out[p.at(s - 1) * bh..(p.at(s - 1) + 1) * bh]
        };
        let at = t * bg..(t + 1) * bg;
        let (gi_, gh_, mut dhp) = gru_backward(&dh, &ghs[at.clone()], h_prev, &act[at.clone()], nh);
        let (g, w) = (mat(&gh_, 0, g3, 1), mat(p.w_hh, 0, nh, 1));
        matmul(b, g3, nh, g, w, &mut dhp, true);
        dgi[at.clone()].copy_from_slice(&gi_);
        dgh[at].copy_from_slice(&gh_);
        dh = dhp;
    }
    let mut g = GruSeqGrads::default();
    if needs[0] {
        let mut dx = vec![R::c(0.0); tn * b * ni];
        let (d, w) = (mat(&dgi, 0, g3, 1), mat(p.w_ih, 0, ni, 1));
        matmul(tn * b, g3, ni, d, w, &mut dx, false);
        g.x = Some(dx);
    }
    if needs[2] {
        let mut dw = vec![R::c(0.0); g3 * ni];
        let (d_t, x) = (mat(&dgi, 0, 1, g3), mat(p.x, 0, ni, 1));
        matmul(g3, tn * b, ni, d_t, x, &mut dw, false);
        g.w_ih = Some(dw);
    }
    if needs[3] {
        let mut dw = vec![R::c(0.0); g3 * nh];
        let (first, rest_g, rest_h) = if p.reverse {
            (tn - 1, 0, bh)
        } else {
            (0, bg, 0)
        };
        let (d_t, h) = (mat(&dgh, rest_g, 1, g3), mat(out, rest_h, nh, 1));
        matmul(g3, (tn - 1) * b, nh, d_t, h, &mut dw, false);
        let (d_t, h) = (mat(&dgh, first * bg, 1, g3), mat(p.h0, 0, nh, 1));
        matmul(g3, b, nh, d_t, h, &mut dw, true);
        g.w_hh = Some(dw);
    }
    if needs[4] {
        g.b_ih = Some(col_sums(&dgi, g3));
    }
    if needs[5] {
        g.b_hh = Some(col_sums(&dgh, g3));
    }
    if needs[1] {
        g.h0 = Some(dh);
    }
    g
}

/// The cell loops compiled for AVX2+FMA and AVX-512 (see `best!`).
#[cfg(target_arch = "x86_64")]
mod wide {
    use super::*;

    macro_rules! isa {
        ($feat:literal, $fwd:ident, $bwd:ident) => {
            #[target_feature(enable = $feat)]
            pub fn $fwd<R: Real>(g: [&mut [R]; 4], c: &[R], cy: &mut [R], h: &mut [R]) {
                cell_forward_body(g, c, cy, h)
            }

            #[target_feature(enable = $feat)]
            pub fn $bwd<R: Real>(
                a: [&[R]; 4],
                state: CellState<'_, R>,
                dc: &mut [R],
                d: [&mut [R]; 4],
            ) {
                cell_backward_body(a, state, dc, d)
            }
        };
    }
    isa!("avx2,fma", cell_forward_avx2, cell_backward_avx2);
    isa!(
        "avx512f,avx512dq,avx2,fma",
        cell_forward_avx512,
        cell_backward_avx512
    );

    macro_rules! gru_isa {
        ($feat:literal, $fwd:ident, $bwd:ident) => {
            #[target_feature(enable = $feat)]
            pub fn $fwd<R: Real>(gi: &[R], gh: &[R], h: &[R], hidden: usize) -> (Vec<R>, Vec<R>) {
                gru_forward_body(gi, gh, h, hidden)
            }

            #[target_feature(enable = $feat)]
            pub fn $bwd<R: Real>(
                dhy: &[R],
                gh: &[R],
                h: &[R],
                act: &[R],
                hidden: usize,
            ) -> (Vec<R>, Vec<R>, Vec<R>) {
                gru_backward_body(dhy, gh, h, act, hidden)
            }
        };
    }
    gru_isa!("avx2,fma", gru_forward_avx2, gru_backward_avx2);
    gru_isa!(
        "avx512f,avx512dq,avx2,fma",
        gru_forward_avx512,
        gru_backward_avx512
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values in [-1, 1).
    fn values(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            })
            .collect()
    }

    #[test]
    fn lstm_layer_split_by_units_matches_one_thread() {
        // 40 units: blocks of 16, 16 and 8 with three parts
        let (tn, b, ni, nh) = (5, 3, 7, 40);
        let (x, h0, c0) = (values(tn * b * ni, 1), values(b * nh, 2), values(b * nh, 3));
        let (w_ih, w_hh) = (values(4 * nh * ni, 4), values(4 * nh * nh, 5));
        let bias = values(4 * nh, 6);
        let dout = values(tn * b * nh, 7);
        let (dhn, dcn) = (values(b * nh, 8), values(b * nh, 9));
        for reverse in [false, true] {
            let p = LstmSeq {
                x: &x,
                h0: &h0,
                c0: &c0,
                w_ih: &w_ih,
                w_hh: &w_hh,
                b_ih: Some(&bias),
                b_hh: None,
                steps: tn,
                batch: b,
                input: ni,
                hidden: nh,
                reverse,
            };
            let (one, three) = (UnitSplit::of(nh, 1), UnitSplit::of(nh, 3));
            assert_eq!((one.parts, three.parts), (1, 3));
            let f1 = lstm_seq_forward_split(&p, true, one);
            let f3 = lstm_seq_forward_split(&p, true, three);
            let close = |a: &[f64], b: &[f64]| {
                assert_eq!(a.len(), b.len());
                a.iter()
                    .zip(b)
                    .all(|(x, y)| (x - y).abs() <= 1e-12 * (1.0 + x.abs()))
            };
            assert!(close(&f1.out, &f3.out) && close(&f1.act, &f3.act) && close(&f1.cs, &f3.cs));
            assert!(close(&f1.h, &f3.h) && close(&f1.c, &f3.c));
            // without saving: the same output from the two-slot cell state
            let f0 = lstm_seq_forward_split(&p, false, three);
            assert!(close(&f1.out, &f0.out) && close(&f1.c, &f0.c) && f0.act.is_empty());
            let fwd = (&f1.out[..], &f1.act[..], &f1.cs[..]);
            let grads = (Some(&dout[..]), Some(&dhn[..]), Some(&dcn[..]));
            let g1 = lstm_seq_backward_split(&p, fwd, grads, [true; 6], one);
            let g3 = lstm_seq_backward_split(&p, fwd, grads, [true; 6], three);
            for (a, b) in [
                (&g1.x, &g3.x),
                (&g1.h0, &g3.h0),
                (&g1.c0, &g3.c0),
                (&g1.w_ih, &g3.w_ih),
                (&g1.w_hh, &g3.w_hh),
                (&g1.bias, &g3.bias),
            ] {
                assert!(close(
                    a.as_ref().expect("asked"),
                    b.as_ref().expect("asked")
                ));
            }
        }
    }
}
