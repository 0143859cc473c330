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
