//! Recurrent cells: the elementwise part of an LSTM or GRU step in one pass, forward and
//! backward (PyTorch's `_thnn_fused_lstm_cell` / `_thnn_fused_gru_cell` and their backwards).
//! The gate pre-activations come in `(batch, k * hidden)` buffers, in PyTorch's gate order:
//! i, f, g, o for the LSTM, r, z, n for the GRU.

use super::simd::Real;

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
