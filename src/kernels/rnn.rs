//! Recurrent cells: the elementwise part of an LSTM or GRU step in one pass, forward and
//! backward (PyTorch's `_thnn_fused_lstm_cell` / `_thnn_fused_gru_cell` and their backwards).
//! The gate pre-activations come in `(batch, k * hidden)` buffers, in PyTorch's gate order:
//! i, f, g, o for the LSTM, r, z, n for the GRU.

use super::matmul::{matmul, Mat};
use super::simd::Real;
use crate::storage::Elem;

/// One LSTM step from the gate pre-activations `gates` and the previous cell state `c`:
/// returns (h, c', act) where `act` holds the activated gates (sigmoid i, f, o, tanh g) for the
/// backward.
pub fn lstm_forward<R: Real>(gates: &[R], c: &[R], hidden: usize) -> (Vec<R>, Vec<R>, Vec<R>) {
    best!(forward_body, forward_avx512, forward_avx2; gates, c, hidden)
}

#[inline(always)]
fn forward_body<R: Real>(gates: &[R], c: &[R], hidden: usize) -> (Vec<R>, Vec<R>, Vec<R>) {
    let n = c.len();
    let zero = R::c(0.0);
    let (mut h, mut cy, mut act) = (vec![zero; n], vec![zero; n], vec![zero; 4 * n]);
    let rows = gates
        .chunks_exact(4 * hidden)
        .zip(act.chunks_exact_mut(4 * hidden))
        .zip(c.chunks_exact(hidden))
        .zip(h.chunks_exact_mut(hidden).zip(cy.chunks_exact_mut(hidden)));
    for (((row, a), c), (h, cy)) in rows {
        let (a_if, a_go) = a.split_at_mut(2 * hidden);
        for (a, &v) in a_if.iter_mut().zip(&row[..2 * hidden]) {
            *a = v.sigmoid();
        }
        let (a_g, a_o) = a_go.split_at_mut(hidden);
        for (a, &v) in a_g.iter_mut().zip(&row[2 * hidden..3 * hidden]) {
            *a = v.tanh();
        }
        for (a, &v) in a_o.iter_mut().zip(&row[3 * hidden..]) {
            *a = v.sigmoid();
        }
        let (i, f) = a_if.split_at(hidden);
        let lanes = i.iter().zip(f).zip(a_g.iter().zip(a_o.iter())).zip(c);
        for ((((&i, &f), (&g, &o)), &c), (h, cy)) in lanes.zip(h.iter_mut().zip(cy.iter_mut())) {
            let cj = f * c + i * g;
            *cy = cj;
            *h = o * cj.tanh();
        }
    }
    (h, cy, act)
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
    best!(backward_body, backward_avx512, backward_avx2; dh, dcy, act, c, cy, hidden)
}

#[inline(always)]
fn backward_body<R: Real>(
    dh: &[R],
    dcy: &[R],
    act: &[R],
    c: &[R],
    cy: &[R],
    hidden: usize,
) -> (Vec<R>, Vec<R>) {
    let one = R::c(1.0);
    let (mut dgates, mut dc) = (vec![R::c(0.0); act.len()], vec![R::c(0.0); c.len()]);
    let per_row = dgates
        .chunks_exact_mut(4 * hidden)
        .zip(dc.chunks_exact_mut(hidden))
        .zip(act.chunks_exact(4 * hidden));
    for (b, ((d, dc), a)) in per_row.enumerate() {
        let at = b * hidden..(b + 1) * hidden;
        let (dh, dcy, c, cy) = (&dh[at.clone()], &dcy[at.clone()], &c[at.clone()], &cy[at]);
        let (d_if, d_go) = d.split_at_mut(2 * hidden);
        let (d_i, d_f) = d_if.split_at_mut(hidden);
        let (d_g, d_o) = d_go.split_at_mut(hidden);
        let (i, rest) = a.split_at(hidden);
        let (f, rest) = rest.split_at(hidden);
        let (g, o) = rest.split_at(hidden);
        for j in 0..hidden {
            let (i, f, g, o) = (i[j], f[j], g[j], o[j]);
            let t = cy[j].tanh();
            let dct = dcy[j] + dh[j] * o * (one - t * t);
            d_i[j] = dct * g * i * (one - i);
            d_f[j] = dct * c[j] * f * (one - f);
            d_g[j] = dct * i * (one - g * g);
            d_o[j] = dh[j] * t * o * (one - o);
            dc[j] = dct * f;
        }
    }
    (dgates, dc)
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

/// A whole LSTM layer (one direction): the input projection of all steps as one gemm, then per
/// step the recurrent gemm `h @ w_hh^T` added to it and the fused cell (`lstm_forward`).
pub fn lstm_seq_forward<R: Real + Elem>(p: &LstmSeq<'_, R>, save: bool) -> LstmSeqOut<R> {
    let (tn, b, ni, nh) = (p.steps, p.batch, p.input, p.hidden);
    let g4 = 4 * nh;
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
    let mut out = vec![R::c(0.0); tn * b * nh];
    let (mut act, mut cs) = if save {
        (vec![R::c(0.0); tn * b * g4], vec![R::c(0.0); tn * b * nh])
    } else {
        (Vec::new(), Vec::new())
    };
    let (mut h, mut c) = (p.h0.to_vec(), p.c0.to_vec());
    for s in 0..tn {
        let t = p.at(s);
        let g = &mut gates[t * b * g4..(t + 1) * b * g4];
        matmul(b, nh, g4, mat(&h, 0, nh, 1), mat(p.w_hh, 0, 1, nh), g, true);
        let (hy, cy, a) = lstm_forward(g, &c, nh);
        out[t * b * nh..(t + 1) * b * nh].copy_from_slice(&hy);
        if save {
            act[t * b * g4..(t + 1) * b * g4].copy_from_slice(&a);
            cs[t * b * nh..(t + 1) * b * nh].copy_from_slice(&cy);
        }
        (h, c) = (hy, cy);
    }
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
/// fused cell backward and the recurrent gemm `dgates @ w_hh`; then the weight gradients as one
/// gemm each over all steps, the input gradient as one gemm and the bias gradient as one sum.
pub fn lstm_seq_backward<R: Real + Elem>(
    p: &LstmSeq<'_, R>,
    fwd: (&[R], &[R], &[R]),
    grads: SeqGrads<'_, R>,
    needs: LstmSeqNeeds,
) -> LstmSeqGrads<R> {
    let (tn, b, ni, nh) = (p.steps, p.batch, p.input, p.hidden);
    let (g4, bh, bg) = (4 * nh, p.batch * p.hidden, p.batch * 4 * p.hidden);
    let (out, act, cs) = fwd;
    let (dout, dhn, dcn) = grads;
    let mut dgates = vec![R::c(0.0); tn * bg];
    let mut dh = dhn.map_or_else(|| vec![R::c(0.0); bh], <[R]>::to_vec);
    let mut dc = dcn.map_or_else(|| vec![R::c(0.0); bh], <[R]>::to_vec);
    for s in (0..tn).rev() {
        let t = p.at(s);
        if let Some(d) = dout {
            for (a, &v) in dh.iter_mut().zip(&d[t * bh..(t + 1) * bh]) {
                *a = *a + v;
            }
        }
        let c_prev = if s == 0 {
            p.c0
        } else {
            &cs[p.at(s - 1) * bh..(p.at(s - 1) + 1) * bh]
        };
        let (dg, dcp) = lstm_backward(
            &dh,
            &dc,
            &act[t * bg..(t + 1) * bg],
            c_prev,
            &cs[t * bh..(t + 1) * bh],
            nh,
        );
        if s > 0 || needs[1] {
            matmul(
                b,
                g4,
                nh,
                mat(&dg, 0, g4, 1),
                mat(p.w_hh, 0, nh, 1),
                &mut dh,
                false,
            );
        }
        dgates[t * bg..(t + 1) * bg].copy_from_slice(&dg);
        dc = dcp;
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
    if needs[1] {
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
            pub fn $fwd<R: Real>(gates: &[R], c: &[R], hidden: usize) -> (Vec<R>, Vec<R>, Vec<R>) {
                forward_body(gates, c, hidden)
            }

            #[target_feature(enable = $feat)]
            pub fn $bwd<R: Real>(
                dh: &[R],
                dcy: &[R],
                act: &[R],
                c: &[R],
                cy: &[R],
                hidden: usize,
            ) -> (Vec<R>, Vec<R>) {
                backward_body(dh, dcy, act, c, cy, hidden)
            }
        };
    }
    isa!("avx2,fma", forward_avx2, backward_avx2);
    isa!("avx512f,avx512dq,avx2,fma", forward_avx512, backward_avx512);

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
