//! Recurrent cells: the elementwise part of an LSTM or GRU step as one op (the gate matmuls
//! stay matmuls), with its saved tensors and backward side by side.

use super::binary::{add, binary, mul, BinOp, Operand};
use super::shape::{cat, narrow};
use super::unary::{sigmoid, tanh};
use super::with_slices;
use crate::autograd::graph::{needs_grad, record, Saved};
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::kernels::rnn as kr;
use crate::tensor::Tensor;

/// One LSTM step from the gate pre-activations `gates` `(batch, 4 * hidden)` (i, f, g, o) and
/// the cell state `c` `(batch, hidden)`: returns (h, c') with c' = f c + i g and h = o tanh(c').
pub fn lstm_cell(gates: &Tensor, c: &Tensor) -> Result<(Tensor, Tensor)> {
    let (gates, c) = (&super::autocast::lower(gates)?, &super::autocast::lower(c)?);
    if let Some(d) = super::half_precision(gates).filter(|&d| c.dtype() == d) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        let (h, cy) = lstm_cell(&super::up(gates)?, &super::up(c)?)?;
        return Ok((super::to_dtype(&h, d)?, super::to_dtype(&cy, d)?));
    }
    let hidden = c.shape().last().copied().unwrap_or(0);
    if gates.ndim() != 2 || c.ndim() != 2 || gates.shape() != [c.shape()[0], 4 * hidden] {
        return Err(Error::Runtime(format!(
            "lstm cell: gates of shape {} do not match a cell state of shape {}",
            crate::layout::fmt_list(gates.shape()),
            crate::layout::fmt_list(c.shape())
        )));
    }
    if gates.dtype() != c.dtype() || !gates.dtype().is_float() {
        return Err(Error::Runtime(format!(
            "lstm cell: expected float gates and cell state of one dtype, got {} and {}",
            gates.dtype().kernel_name(),
            c.dtype().kernel_name()
        )));
    }
    let (h, cy, act) = dispatch_float!(gates.dtype(), T => {
        let (h, cy, act) = with_slices::<T, _>(&[Some(gates), Some(c)], |s| {
            kr::lstm_forward(s[0].expect("given"), s[1].expect("given"), hidden)
        })?;
        (
            Tensor::from_vec(h, c.shape().to_vec())?,
            Tensor::from_vec(cy, c.shape().to_vec())?,
            Tensor::from_vec(act, gates.shape().to_vec())?,
        )
    });
    if needs_grad(&[gates, c]) {
        let saved = vec![
            Saved::Input(gates.clone()),
            Saved::Input(c.clone()),
            Saved::Output(cy.clone(), 1),
        ];
        record(
            "LstmCellBackward0",
            &[gates, c],
            &[&h, &cy],
            saved,
            move |ctx| {
                let (dh, dcy) = (ctx.grad(0)?, ctx.grad(1)?);
                let (gates, c, cy) = (&ctx.saved[0], &ctx.saved[1], &ctx.saved[2]);
                let (dgates, dc) = if needs_grad(&[&dh, &dcy, gates, c]) {
                    // a graph of the gradient is wanted: the same formulas in differentiable ops
                    lstm_backward_composite(&dh, &dcy, gates, c, hidden)?
                } else {
                    dispatch_float!(dh.dtype(), T => {
                        let (dg, dc) = with_slices::<T, _>(&[Some(&dh), Some(&dcy), Some(&act), Some(c), Some(cy)], |s| {
                            let s: Vec<&[T]> = s.iter().map(|x| x.expect("given")).collect();
                            kr::lstm_backward(s[0], s[1], s[2], s[3], s[4], hidden)
                        })?;
                        (Tensor::from_vec(dg, gates.shape().to_vec())?, Tensor::from_vec(dc, c.shape().to_vec())?)
                    })
                };
                Ok(vec![Some(dgates), Some(dc)])
            },
        );
    }
    Ok((h, cy))
}

/// The LSTM cell's backward written with differentiable ops (for create_graph).
fn lstm_backward_composite(
    dh: &Tensor,
    dcy: &Tensor,
    gates: &Tensor,
    c: &Tensor,
    hidden: usize,
) -> Result<(Tensor, Tensor)> {
    let h = hidden as i64;
    let gate = |k: i64| narrow(gates, 1, k * h, h);
    let (i, f, g, o) = (
        sigmoid(&gate(0)?)?,
        sigmoid(&gate(1)?)?,
        tanh(&gate(2)?)?,
        sigmoid(&gate(3)?)?,
    );
    let one_minus = |x: &Tensor| {
        binary(
            BinOp::Sub,
            &Operand::S(Scalar::Float(1.0)),
            &Operand::T(x.clone()),
        )
    };
    let cy = add(&mul(&f, c)?, &mul(&i, &g)?)?;
    let t = tanh(&cy)?;
    let dct = add(dcy, &mul(&mul(dh, &o)?, &one_minus(&mul(&t, &t)?)?)?)?;
    let di = mul(&mul(&dct, &g)?, &mul(&i, &one_minus(&i)?)?)?;
    let df = mul(&mul(&dct, c)?, &mul(&f, &one_minus(&f)?)?)?;
    let dg = mul(&mul(&dct, &i)?, &one_minus(&mul(&g, &g)?)?)?;
    let dout = mul(&mul(dh, &t)?, &mul(&o, &one_minus(&o)?)?)?;
    Ok((cat(&[di, df, dg, dout], 1)?, mul(&dct, &f)?))
}

/// One GRU step from the input and hidden projections `gi`, `gh` `(batch, 3 * hidden)` (r, z,
/// n) and the state `h` `(batch, hidden)`: h' = n + z (h - n).
pub fn gru_cell(gi: &Tensor, gh: &Tensor, h: &Tensor) -> Result<Tensor> {
    let (gi, gh, h) = (
        &super::autocast::lower(gi)?,
        &super::autocast::lower(gh)?,
        &super::autocast::lower(h)?,
    );
    if let Some(d) = super::half_precision(h).filter(|&d| gi.dtype() == d && gh.dtype() == d) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        let out = gru_cell(&super::up(gi)?, &super::up(gh)?, &super::up(h)?)?;
        return super::to_dtype(&out, d);
    }
    let hidden = h.shape().last().copied().unwrap_or(0);
    let want = [h.shape().first().copied().unwrap_or(0), 3 * hidden];
    if h.ndim() != 2 || gi.shape() != want || gh.shape() != want {
        return Err(Error::Runtime(format!(
            "gru cell: projections of shapes {} and {} do not match a hidden state of shape {}",
            crate::layout::fmt_list(gi.shape()),
            crate::layout::fmt_list(gh.shape()),
            crate::layout::fmt_list(h.shape())
        )));
    }
    if gi.dtype() != h.dtype() || gh.dtype() != h.dtype() || !h.dtype().is_float() {
        return Err(Error::Runtime(format!(
            "gru cell: expected float projections and state of one dtype, got {}, {} and {}",
            gi.dtype().kernel_name(),
            gh.dtype().kernel_name(),
            h.dtype().kernel_name()
        )));
    }
    let (hy, act) = dispatch_float!(h.dtype(), T => {
        let (hy, act) = with_slices::<T, _>(&[Some(gi), Some(gh), Some(h)], |s| {
            kr::gru_forward(s[0].expect("given"), s[1].expect("given"), s[2].expect("given"), hidden)
        })?;
        (Tensor::from_vec(hy, h.shape().to_vec())?, Tensor::from_vec(act, gi.shape().to_vec())?)
    });
    if needs_grad(&[gi, gh, h]) {
        let saved = vec![
            Saved::Input(gi.clone()),
            Saved::Input(gh.clone()),
            Saved::Input(h.clone()),
        ];
        record(
            "GruCellBackward0",
            &[gi, gh, h],
            &[&hy],
            saved,
            move |ctx| {
                let dhy = ctx.grad(0)?;
                let (gi, gh, h) = (&ctx.saved[0], &ctx.saved[1], &ctx.saved[2]);
                let (dgi, dgh, dh) = if needs_grad(&[&dhy, gi, gh, h]) {
                    gru_backward_composite(&dhy, gi, gh, h, hidden)?
                } else {
                    dispatch_float!(dhy.dtype(), T => {
                        let (a, b, c) = with_slices::<T, _>(&[Some(&dhy), Some(gh), Some(h), Some(&act)], |s| {
                            let s: Vec<&[T]> = s.iter().map(|x| x.expect("given")).collect();
                            kr::gru_backward(s[0], s[1], s[2], s[3], hidden)
                        })?;
                        let shape = gi.shape().to_vec();
                        (Tensor::from_vec(a, shape.clone())?, Tensor::from_vec(b, shape)?, Tensor::from_vec(c, h.shape().to_vec())?)
                    })
                };
                Ok(vec![Some(dgi), Some(dgh), Some(dh)])
            },
        );
    }
    Ok(hy)
}

/// The GRU cell's backward written with differentiable ops (for create_graph).
fn gru_backward_composite(
    dhy: &Tensor,
    gi: &Tensor,
    gh: &Tensor,
    h: &Tensor,
    hidden: usize,
) -> Result<(Tensor, Tensor, Tensor)> {
    let k = hidden as i64;
    let part = |t: &Tensor, j: i64| narrow(t, 1, j * k, k);
    let r = sigmoid(&add(&part(gi, 0)?, &part(gh, 0)?)?)?;
    let z = sigmoid(&add(&part(gi, 1)?, &part(gh, 1)?)?)?;
    let hn = part(gh, 2)?;
    let n = tanh(&add(&part(gi, 2)?, &mul(&r, &hn)?)?)?;
    let one_minus = |x: &Tensor| {
        binary(
            BinOp::Sub,
            &Operand::S(Scalar::Float(1.0)),
            &Operand::T(x.clone()),
        )
    };
    let dn = mul(&mul(dhy, &one_minus(&z)?)?, &one_minus(&mul(&n, &n)?)?)?;
    let dz = mul(
        &mul(
            dhy,
            &binary(BinOp::Sub, &Operand::T(h.clone()), &Operand::T(n.clone()))?,
        )?,
        &mul(&z, &one_minus(&z)?)?,
    )?;
    let dr = mul(&mul(&dn, &hn)?, &mul(&r, &one_minus(&r)?)?)?;
    let dgi = cat(&[dr.clone(), dz.clone(), dn.clone()], 1)?;
    let dgh = cat(&[dr, dz, mul(&dn, &r)?], 1)?;
    Ok((dgi, dgh, mul(dhy, &z)?))
}

/// A whole LSTM layer in one direction over a time-major sequence `x` `(steps, batch,
/// input)` from the state `h0`, `c0` `(batch, hidden)`: returns (output `(steps, batch,
/// hidden)`, h_n, c_n), as one node (PyTorch's `MkldnnRnnLayerBackward0`) whose backward is
/// back-propagation through time in one pass. The gate order and formulas are `lstm_cell`'s;
/// `reverse` runs from the last step to the first (the backward direction of a bidirectional
/// LSTM, its output still indexed by time).
#[allow(clippy::too_many_arguments)]
pub fn lstm_layer(
    x: &Tensor,
    h0: &Tensor,
    c0: &Tensor,
    w_ih: &Tensor,
    w_hh: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
    reverse: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    use super::autocast::{lower, lower_opt};
    let (x, h0, c0) = (&lower(x)?, &lower(h0)?, &lower(c0)?);
    let (w_ih, w_hh) = (&lower(w_ih)?, &lower(w_hh)?);
    let (b_ih, b_hh) = (lower_opt(b_ih)?, lower_opt(b_hh)?);
    let (b_ih, b_hh) = (b_ih.as_ref(), b_hh.as_ref());
    let all: Vec<&Tensor> = [x, h0, c0, w_ih, w_hh]
        .into_iter()
        .chain(b_ih)
        .chain(b_hh)
        .collect();
    if all.iter().any(|t| t.dtype() != x.dtype()) || !x.dtype().is_float() {
        return Err(Error::Runtime(format!(
            "lstm layer: expected float tensors of one dtype, got {}",
            all.iter()
                .map(|t| t.dtype().kernel_name())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        let ups = all
            .iter()
            .map(|t| super::up(t))
            .collect::<Result<Vec<_>>>()?;
        let (bi, bh) = match (b_ih.is_some(), b_hh.is_some()) {
            (true, true) => (Some(&ups[5]), Some(&ups[6])),
            (true, false) => (Some(&ups[5]), None),
            (false, true) => (None, Some(&ups[5])),
            (false, false) => (None, None),
        };
        let (o, h, c) = lstm_layer(&ups[0], &ups[1], &ups[2], &ups[3], &ups[4], bi, bh, reverse)?;
        return Ok((
            super::to_dtype(&o, d)?,
            super::to_dtype(&h, d)?,
            super::to_dtype(&c, d)?,
        ));
    }
    let hidden = w_hh.shape().last().copied().unwrap_or(0);
    let (steps, batch, input) = match *x.shape() {
        [t, b, i] => (t, b, i),
        _ => (0, 0, 0),
    };
    let bad = |what: &str, t: &Tensor| {
        Err(Error::Runtime(format!(
            "lstm layer: {what} of shape {} does not match an input of shape {} and hidden size {hidden}",
            crate::layout::fmt_list(t.shape()),
            crate::layout::fmt_list(x.shape()),
        )))
    };
    if x.ndim() != 3 || steps == 0 {
        return bad("input", x);
    }
    for (what, t, want) in [
        ("h0", h0, vec![batch, hidden]),
        ("c0", c0, vec![batch, hidden]),
        ("w_ih", w_ih, vec![4 * hidden, input]),
        ("w_hh", w_hh, vec![4 * hidden, hidden]),
    ] {
        if t.shape() != want {
            return bad(what, t);
        }
    }
    for b in b_ih.iter().chain(&b_hh) {
        if b.shape() != [4 * hidden] {
            return bad("bias", b);
        }
    }
    let save = needs_grad(&all);
    let opts = [
        Some(x),
        Some(h0),
        Some(c0),
        Some(w_ih),
        Some(w_hh),
        b_ih,
        b_hh,
    ];
    let (out, hn, cn, act, cs) = dispatch_float!(x.dtype(), T => {
        let r = with_slices::<T, _>(&opts, |s| {
            let p = kr::LstmSeq {
                x: s[0].expect("given"),
                h0: s[1].expect("given"),
                c0: s[2].expect("given"),
                w_ih: s[3].expect("given"),
                w_hh: s[4].expect("given"),
                b_ih: s[5],
                b_hh: s[6],
                steps,
                batch,
                input,
                hidden,
                reverse,
            };
            kr::lstm_seq_forward(&p, save)
        })?;
        let (state, seq) = (vec![batch, hidden], vec![steps, batch, hidden]);
        (
            Tensor::from_vec(r.out, seq.clone())?,
            Tensor::from_vec(r.h, state.clone())?,
            Tensor::from_vec(r.c, state)?,
            save.then(|| Tensor::from_vec(r.act, vec![steps, batch, 4 * hidden])).transpose()?,
            save.then(|| Tensor::from_vec(r.cs, seq)).transpose()?,
        )
    });
    if let (Some(act), Some(cs)) = (act, cs) {
        let (has_bi, has_bh) = (b_ih.is_some(), b_hh.is_some());
        let mut saved: Vec<Saved> = all.iter().map(|t| Saved::Input((*t).clone())).collect();
        saved.push(Saved::Output(out.clone(), 0));
        saved.push(Saved::Input(act));
        saved.push(Saved::Input(cs));
        record(
            "MkldnnRnnLayerBackward0",
            &all,
            &[&out, &hn, &cn],
            saved,
            move |ctx| {
                let n_in = 5 + usize::from(has_bi) + usize::from(has_bh);
                let s = &ctx.saved;
                let (bi, bh) = match (has_bi, has_bh) {
                    (true, true) => (Some(&s[5]), Some(&s[6])),
                    (true, false) => (Some(&s[5]), None),
                    (false, true) => (None, Some(&s[5])),
                    (false, false) => (None, None),
                };
                let grads = [
                    ctx.grads[0].clone(),
                    ctx.grads[1].clone(),
                    ctx.grads[2].clone(),
                ];
                let seq = LstmSaved {
                    x: &s[0],
                    h0: &s[1],
                    c0: &s[2],
                    w_ih: &s[3],
                    w_hh: &s[4],
                    b_ih: bi,
                    b_hh: bh,
                    reverse,
                };
                let live: Vec<&Tensor> = s[..n_in].iter().chain(grads.iter().flatten()).collect();
                let (g, gb) = if needs_grad(&live) {
                    // a graph of the gradient is wanted: the same steps in differentiable ops
                    lstm_layer_backward_composite(&seq, &grads)?
                } else {
                    let needs = [
                        ctx.needs(0),
                        ctx.needs(1),
                        ctx.needs(2),
                        ctx.needs(3),
                        ctx.needs(4),
                        (5..n_in).any(|i| ctx.needs(i)),
                    ];
                    lstm_layer_backward(
                        &seq,
                        (&s[n_in], &s[n_in + 1], &s[n_in + 2]),
                        &grads,
                        needs,
                    )?
                };
                let mut r: Vec<Option<Tensor>> = g.into_iter().collect();
                if has_bi {
                    r.push(gb.clone());
                }
                if has_bh {
                    r.push(gb);
                }
                Ok(r)
            },
        );
    }
    Ok((out, hn, cn))
}

/// The tensors `lstm_layer`'s backward works from.
struct LstmSaved<'a> {
    x: &'a Tensor,
    h0: &'a Tensor,
    c0: &'a Tensor,
    w_ih: &'a Tensor,
    w_hh: &'a Tensor,
    b_ih: Option<&'a Tensor>,
    b_hh: Option<&'a Tensor>,
    reverse: bool,
}

/// The gradients of x, h0, c0, w_ih, w_hh, and of either bias.
type LayerGrads = ([Option<Tensor>; 5], Option<Tensor>);

/// `lstm_layer`'s backward with the kernels (`kr::lstm_seq_backward`).
fn lstm_layer_backward(
    p: &LstmSaved<'_>,
    fwd: (&Tensor, &Tensor, &Tensor),
    grads: &[Option<Tensor>; 3],
    needs: kr::LstmSeqNeeds,
) -> Result<LayerGrads> {
    let (steps, batch, input) = (p.x.shape()[0], p.x.shape()[1], p.x.shape()[2]);
    let hidden = p.w_hh.shape()[1];
    let opts = [
        Some(p.x),
        Some(p.h0),
        Some(p.c0),
        Some(p.w_ih),
        Some(p.w_hh),
        Some(fwd.0),
        Some(fwd.1),
        Some(fwd.2),
        grads[0].as_ref(),
        grads[1].as_ref(),
        grads[2].as_ref(),
    ];
    dispatch_float!(p.x.dtype(), T => {
        let g = with_slices::<T, _>(&opts, |s| {
            let seq = kr::LstmSeq {
                x: s[0].expect("given"),
                h0: s[1].expect("given"),
                c0: s[2].expect("given"),
                w_ih: s[3].expect("given"),
                w_hh: s[4].expect("given"),
                b_ih: None,
                b_hh: None,
                steps,
                batch,
                input,
                hidden,
                reverse: p.reverse,
            };
            let fwd = (s[5].expect("given"), s[6].expect("given"), s[7].expect("given"));
            kr::lstm_seq_backward(&seq, fwd, (s[8], s[9], s[10]), needs)
        })?;
        let wrap = |v: Option<Vec<T>>, shape: Vec<usize>| v.map(|v| Tensor::from_vec(v, shape)).transpose();
        Ok((
            [
                wrap(g.x, vec![steps, batch, input])?,
                wrap(g.h0, vec![batch, hidden])?,
                wrap(g.c0, vec![batch, hidden])?,
                wrap(g.w_ih, vec![4 * hidden, input])?,
                wrap(g.w_hh, vec![4 * hidden, hidden])?,
            ],
            wrap(g.bias, vec![4 * hidden])?,
        ))
    })
}

/// `lstm_layer`'s backward written with differentiable ops (for create_graph): the forward
/// recomputed step by step (`linear`, `lstm_cell`), then the same back-propagation through time
/// with `lstm_backward_composite` and matrix products.
fn lstm_layer_backward_composite(
    p: &LstmSaved<'_>,
    grads: &[Option<Tensor>; 3],
) -> Result<LayerGrads> {
    use super::matmul::{linear, mm};
    use super::reduce::sum_dims;
    use super::shape::{reshape, select, stack, t2};
    let (steps, batch, input) = (p.x.shape()[0], p.x.shape()[1], p.x.shape()[2]);
    let hidden = p.w_hh.shape()[1];
    let order: Vec<usize> = if p.reverse {
        (0..steps).rev().collect()
    } else {
        (0..steps).collect()
    };
    let gi = linear(p.x, p.w_ih, p.b_ih)?;
    let (mut h, mut c) = (p.h0.clone(), p.c0.clone());
    let (mut gates, mut h_prev, mut c_prev) = (vec![], vec![], vec![]);
    for &t in &order {
        let g = add(&select(&gi, 0, t as i64)?, &linear(&h, p.w_hh, p.b_hh)?)?;
        let (h2, c2) = lstm_cell(&g, &c)?;
        gates.push(g);
        h_prev.push(h);
        c_prev.push(c);
        (h, c) = (h2, c2);
    }
    let zeros = || Tensor::zeros(&[batch, hidden], p.x.dtype());
    let mut dh = grads[1].clone().map_or_else(zeros, Ok)?;
    let mut dc = grads[2].clone().map_or_else(zeros, Ok)?;
    let mut dgates = vec![None; steps];
    for s in (0..steps).rev() {
        let t = order[s];
        if let Some(d) = &grads[0] {
            dh = add(&dh, &select(d, 0, t as i64)?)?;
        }
        let (dg, dcp) = lstm_backward_composite(&dh, &dc, &gates[s], &c_prev[s], hidden)?;
        dh = mm(&dg, p.w_hh)?;
        dc = dcp;
        dgates[s] = Some(dg);
    }
    // rows in processing order, matched with the states each step started from
    let dg = stack(&dgates.into_iter().flatten().collect::<Vec<_>>(), 0)?;
    let dg = reshape(&dg, &[steps * batch, 4 * hidden])?;
    let hp = reshape(&stack(&h_prev, 0)?, &[steps * batch, hidden])?;
    let xs: Vec<Tensor> = order
        .iter()
        .map(|&t| select(p.x, 0, t as i64))
        .collect::<Result<_>>()?;
    let xs = reshape(&stack(&xs, 0)?, &[steps * batch, input])?;
    let dxs = reshape(&mm(&dg, p.w_ih)?, &[steps, batch, input])?;
    let dx = if p.reverse {
        let rows: Vec<Tensor> = (0..steps)
            .rev()
            .map(|s| select(&dxs, 0, s as i64))
            .collect::<Result<_>>()?;
        stack(&rows, 0)?
    } else {
        dxs
    };
    let dgt = t2(&dg)?;
    Ok((
        [
            Some(dx),
            Some(dh),
            Some(dc),
            Some(mm(&dgt, &xs)?),
            Some(mm(&dgt, &hp)?),
        ],
        Some(sum_dims(&dg, Some(&[0]), false, None)?),
    ))
}

/// A whole GRU layer in one direction over a time-major sequence `x` `(steps, batch, input)`
/// from the state `h0` `(batch, hidden)`: returns (output `(steps, batch, hidden)`, h_n), as
/// one node like `lstm_layer` (gate order and formulas of `gru_cell`).
pub fn gru_layer(
    x: &Tensor,
    h0: &Tensor,
    w_ih: &Tensor,
    w_hh: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
    reverse: bool,
) -> Result<(Tensor, Tensor)> {
    use super::autocast::{lower, lower_opt};
    let (x, h0, w_ih, w_hh) = (&lower(x)?, &lower(h0)?, &lower(w_ih)?, &lower(w_hh)?);
    let (b_ih, b_hh) = (lower_opt(b_ih)?, lower_opt(b_hh)?);
    let (b_ih, b_hh) = (b_ih.as_ref(), b_hh.as_ref());
    let all: Vec<&Tensor> = [x, h0, w_ih, w_hh]
        .into_iter()
        .chain(b_ih)
        .chain(b_hh)
        .collect();
    if all.iter().any(|t| t.dtype() != x.dtype()) || !x.dtype().is_float() {
        return Err(Error::Runtime(format!(
            "gru layer: expected float tensors of one dtype, got {}",
            all.iter()
                .map(|t| t.dtype().kernel_name())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let split_biases = |ts: &[Tensor]| -> (Option<Tensor>, Option<Tensor>) {
        let mut rest = ts[4..].iter().cloned();
        let bi = b_ih.and_then(|_| rest.next());
        (bi, b_hh.and_then(|_| rest.next()))
    };
    if let Some(d) = super::half_precision(x) {
        let _float32 = super::autocast::Suspend::new(); // computed in float32, not cast back down
        let ups = all
            .iter()
            .map(|t| super::up(t))
            .collect::<Result<Vec<_>>>()?;
        let (bi, bh) = split_biases(&ups);
        let (o, h) = gru_layer(
            &ups[0],
            &ups[1],
            &ups[2],
            &ups[3],
            bi.as_ref(),
            bh.as_ref(),
            reverse,
        )?;
        return Ok((super::to_dtype(&o, d)?, super::to_dtype(&h, d)?));
    }
    let hidden = w_hh.shape().last().copied().unwrap_or(0);
    let (steps, batch, input) = match *x.shape() {
        [t, b, i] => (t, b, i),
        _ => (0, 0, 0),
    };
    let bad = |what: &str, t: &Tensor| {
        Err(Error::Runtime(format!(
            "gru layer: {what} of shape {} does not match an input of shape {} and hidden size {hidden}",
            crate::layout::fmt_list(t.shape()),
            crate::layout::fmt_list(x.shape()),
        )))
    };
    if x.ndim() != 3 || steps == 0 {
        return bad("input", x);
    }
    for (what, t, want) in [
        ("h0", h0, vec![batch, hidden]),
        ("w_ih", w_ih, vec![3 * hidden, input]),
        ("w_hh", w_hh, vec![3 * hidden, hidden]),
    ] {
        if t.shape() != want {
            return bad(what, t);
        }
    }
    for b in b_ih.iter().chain(&b_hh) {
        if b.shape() != [3 * hidden] {
            return bad("bias", b);
        }
    }
    let save = needs_grad(&all);
    let opts = [Some(x), Some(h0), Some(w_ih), Some(w_hh), b_ih, b_hh];
    let (out, hn, act, gh) = dispatch_float!(x.dtype(), T => {
        let r = with_slices::<T, _>(&opts, |s| {
            let p = kr::LstmSeq {
                x: s[0].expect("given"),
                h0: s[1].expect("given"),
                c0: &[],
                w_ih: s[2].expect("given"),
                w_hh: s[3].expect("given"),
                b_ih: s[4],
                b_hh: s[5],
                steps,
                batch,
                input,
                hidden,
                reverse,
            };
            kr::gru_seq_forward(&p, save)
        })?;
        let gates = vec![steps, batch, 3 * hidden];
        (
            Tensor::from_vec(r.out, vec![steps, batch, hidden])?,
            Tensor::from_vec(r.h, vec![batch, hidden])?,
            save.then(|| Tensor::from_vec(r.act, gates.clone())).transpose()?,
            save.then(|| Tensor::from_vec(r.gh, gates)).transpose()?,
        )
    });
    if let (Some(act), Some(gh)) = (act, gh) {
        let (has_bi, has_bh) = (b_ih.is_some(), b_hh.is_some());
        let n_in = all.len();
        let mut saved: Vec<Saved> = all.iter().map(|t| Saved::Input((*t).clone())).collect();
        saved.push(Saved::Output(out.clone(), 0));
        saved.push(Saved::Input(act));
        saved.push(Saved::Input(gh));
        record(
            "MkldnnRnnLayerBackward0",
            &all,
            &[&out, &hn],
            saved,
            move |ctx| {
                let s = &ctx.saved;
                let mut rest = s[4..n_in].iter();
                let bi = if has_bi { rest.next() } else { None };
                let bh = if has_bh { rest.next() } else { None };
                let grads = [ctx.grads[0].clone(), ctx.grads[1].clone()];
                let seq = LstmSaved {
                    x: &s[0],
                    h0: &s[1],
                    c0: &s[1],
                    w_ih: &s[2],
                    w_hh: &s[3],
                    b_ih: bi,
                    b_hh: bh,
                    reverse,
                };
                let live: Vec<&Tensor> = s[..n_in].iter().chain(grads.iter().flatten()).collect();
                let g = if needs_grad(&live) {
                    // a graph of the gradient is wanted: the same steps in differentiable ops
                    gru_layer_backward_composite(&seq, &grads)?
                } else {
                    let bias_need =
                        |has: bool, before: bool| has && ctx.needs(4 + usize::from(before));
                    let needs = [
                        ctx.needs(0),
                        ctx.needs(1),
                        ctx.needs(2),
                        ctx.needs(3),
                        bias_need(has_bi, false),
                        bias_need(has_bh, has_bi),
                    ];
                    gru_layer_backward(&seq, (&s[n_in], &s[n_in + 1], &s[n_in + 2]), &grads, needs)?
                };
                let [dx, dh0, dwi, dwh, dbi, dbh] = g;
                let mut r = vec![dx, dh0, dwi, dwh];
                if has_bi {
                    r.push(dbi);
                }
                if has_bh {
                    r.push(dbh);
                }
                Ok(r)
            },
        );
    }
    Ok((out, hn))
}

/// `gru_layer`'s backward with the kernels: gradients of x, h0, w_ih, w_hh, b_ih, b_hh.
fn gru_layer_backward(
    p: &LstmSaved<'_>,
    fwd: (&Tensor, &Tensor, &Tensor),
    grads: &[Option<Tensor>; 2],
    needs: kr::LstmSeqNeeds,
) -> Result<[Option<Tensor>; 6]> {
    let (steps, batch, input) = (p.x.shape()[0], p.x.shape()[1], p.x.shape()[2]);
    let hidden = p.w_hh.shape()[1];
    let opts = [
        Some(p.x),
        Some(p.h0),
        Some(p.w_ih),
        Some(p.w_hh),
        Some(fwd.0),
        Some(fwd.1),
        Some(fwd.2),
        grads[0].as_ref(),
        grads[1].as_ref(),
    ];
    dispatch_float!(p.x.dtype(), T => {
        let g = with_slices::<T, _>(&opts, |s| {
            let seq = kr::LstmSeq {
                x: s[0].expect("given"),
                h0: s[1].expect("given"),
                c0: &[],
                w_ih: s[2].expect("given"),
                w_hh: s[3].expect("given"),
                b_ih: None,
                b_hh: None,
                steps,
                batch,
                input,
                hidden,
                reverse: p.reverse,
            };
            let fwd = (s[4].expect("given"), s[5].expect("given"), s[6].expect("given"));
            kr::gru_seq_backward(&seq, fwd, (s[7], s[8]), needs)
        })?;
        let wrap = |v: Option<Vec<T>>, shape: Vec<usize>| v.map(|v| Tensor::from_vec(v, shape)).transpose();
        Ok([
            wrap(g.x, vec![steps, batch, input])?,
            wrap(g.h0, vec![batch, hidden])?,
            wrap(g.w_ih, vec![3 * hidden, input])?,
            wrap(g.w_hh, vec![3 * hidden, hidden])?,
            wrap(g.b_ih, vec![3 * hidden])?,
            wrap(g.b_hh, vec![3 * hidden])?,
        ])
    })
}

/// `gru_layer`'s backward written with differentiable ops (for create_graph), as
/// `lstm_layer_backward_composite`.
fn gru_layer_backward_composite(
    p: &LstmSaved<'_>,
    grads: &[Option<Tensor>; 2],
) -> Result<[Option<Tensor>; 6]> {
    use super::matmul::{linear, mm};
    use super::reduce::sum_dims;
    use super::shape::{reshape, select, stack, t2};
    let (steps, batch, input) = (p.x.shape()[0], p.x.shape()[1], p.x.shape()[2]);
    let hidden = p.w_hh.shape()[1];
    let order: Vec<usize> = if p.reverse {
        (0..steps).rev().collect()
    } else {
        (0..steps).collect()
    };
    let gi = linear(p.x, p.w_ih, p.b_ih)?;
    let mut h = p.h0.clone();
    let (mut gis, mut ghs, mut h_prev) = (vec![], vec![], vec![]);
    for &t in &order {
        let (gi_t, gh) = (select(&gi, 0, t as i64)?, linear(&h, p.w_hh, p.b_hh)?);
        let h2 = gru_cell(&gi_t, &gh, &h)?;
        gis.push(gi_t);
        ghs.push(gh);
        h_prev.push(h);
        h = h2;
    }
    let mut dh = match &grads[1] {
        Some(g) => g.clone(),
        None => Tensor::zeros(&[batch, hidden], p.x.dtype())?,
    };
    let (mut dgis, mut dghs) = (vec![None; steps], vec![None; steps]);
    for s in (0..steps).rev() {
        if let Some(d) = &grads[0] {
            dh = add(&dh, &select(d, 0, order[s] as i64)?)?;
        }
        let (dgi, dgh, dhp) = gru_backward_composite(&dh, &gis[s], &ghs[s], &h_prev[s], hidden)?;
        dh = add(&dhp, &mm(&dgh, p.w_hh)?)?;
        dgis[s] = Some(dgi);
        dghs[s] = Some(dgh);
    }
    // rows in processing order, matched with the inputs and states of those steps
    let rows = |v: Vec<Option<Tensor>>, w: usize| {
        reshape(
            &stack(&v.into_iter().flatten().collect::<Vec<_>>(), 0)?,
            &[steps * batch, w],
        )
    };
    let (dgi, dgh) = (rows(dgis, 3 * hidden)?, rows(dghs, 3 * hidden)?);
    let hp = rows(h_prev.into_iter().map(Some).collect(), hidden)?;
    let xs: Vec<Option<Tensor>> = order
        .iter()
        .map(|&t| select(p.x, 0, t as i64).map(Some))
        .collect::<Result<_>>()?;
    let xs = rows(xs, input)?;
    let dxs = reshape(&mm(&dgi, p.w_ih)?, &[steps, batch, input])?;
    let dx = if p.reverse {
        let back: Vec<Tensor> = (0..steps)
            .rev()
            .map(|s| select(&dxs, 0, s as i64))
            .collect::<Result<_>>()?;
        stack(&back, 0)?
    } else {
        dxs
    };
    Ok([
        Some(dx),
        Some(dh),
        Some(mm(&t2(&dgi)?, &xs)?),
        Some(mm(&t2(&dgh)?, &hp)?),
        Some(sum_dims(&dgi, Some(&[0]), false, None)?),
        Some(sum_dims(&dgh, Some(&[0]), false, None)?),
    ])
}
