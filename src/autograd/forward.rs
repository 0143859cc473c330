//! Forward-mode AD (`torch.autograd.forward_ad`): tangents carried by tensors, and one rule that
//! gives every recorded op its Jacobian-vector product.
//!
//! The rule is the double vjp. An op's backward formula `u -> J^T u` is linear in the output
//! gradient `u` and is written with differentiable ops, so running it on a `u` that requires grad
//! records a small graph whose own vjp, seeded with the input tangents `t`, is `J t`: the tangent
//! of each output. It costs about three times the op, and it holds for every op whose backward is
//! differentiable (all of the op table), with nothing written per op. When the primals or the
//! tangents require grad, the rule runs with a graph, so reverse mode differentiates the
//! tangents (reverse over forward).
//!
//! As in PyTorch there is one level at a time (nested levels raise), tangents are dropped when
//! the level exits, and the rule runs also under `no_grad` (forward AD ignores grad mode): an op
//! with a dual input records its node, gets its tangents, and the node is then dropped again
//! unless reverse mode needs it.

use super::engine::{run_backward, BackwardOptions};
use super::graph::{unpack_saved, BackwardCtx, BackwardFn, NodeId};
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::tensor::{Tensor, WeakTensor};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// True while a dual level exists.
static LEVEL_OPEN: AtomicBool = AtomicBool::new(false);
/// The tensors given a tangent in the current level, whose tangents go when it exits.
static DUALS: Mutex<Vec<WeakTensor>> = Mutex::new(Vec::new());

thread_local! {
    /// Set while the rule computes tangents: the ops it runs are plain ops on primals.
    static SUSPENDED: Cell<bool> = const { Cell::new(false) };
}

/// True when ops must look for tangents (a level exists and the rule is not running).
pub fn active() -> bool {
    LEVEL_OPEN.load(Ordering::Relaxed) && !SUSPENDED.with(|s| s.get())
}

/// The tangent of `t` in the current level (none while the rule runs: tensors are primals there).
pub fn tangent(t: &Tensor) -> Option<Tensor> {
    if !active() {
        return None;
    }
    t.meta().fw_grad.clone()
}

/// True when an op on `inputs` must compute tangents.
pub fn any_tangent(inputs: &[&Tensor]) -> bool {
    active() && inputs.iter().any(|t| t.meta().fw_grad.is_some())
}

/// Gives `t` a tangent (or removes it).
pub fn set_tangent(t: &Tensor, tangent: Option<Tensor>) {
    let old = std::mem::replace(&mut t.meta().fw_grad, tangent);
    if old.is_none() && t.meta().fw_grad.is_some() {
        let mut duals = DUALS.lock().unwrap_or_else(|e| e.into_inner());
        duals.push(t.downgrade());
        // a long level makes many short-lived duals: forget the dead ones as the list doubles
        if duals.len() >= 1024 && duals.len().is_power_of_two() {
            duals.retain(|w| w.strong_count() > 0);
        }
    }
    drop(old); // after the locks (it may free a graph)
}

/// Opens the dual level (`enter_dual_level`); PyTorch allows one at a time.
pub fn enter_level() -> Result<i64> {
    if LEVEL_OPEN.swap(true, Ordering::SeqCst) {
        return Err(Error::Runtime(
            "Nested forward mode AD is not supported at the moment".into(),
        ));
    }
    Ok(0)
}

/// Closes the level: every tangent given in it is dropped.
pub fn exit_level() {
    let duals = std::mem::take(&mut *DUALS.lock().unwrap_or_else(|e| e.into_inner()));
    LEVEL_OPEN.store(false, Ordering::SeqCst);
    for w in duals {
        if let Some(t) = w.upgrade() {
            // the tangent is dropped after the lock (it may free a graph)
            let old = Tensor(t).meta().fw_grad.take();
            drop(old);
        }
    }
}

/// Turns tangent propagation off (`true`) or back on for this thread; returns the previous state.
pub fn set_suspended(on: bool) -> bool {
    SUSPENDED.with(|s| s.replace(on))
}

/// Runs `f` with tangent propagation off (ops in it are plain ops on primals).
pub fn suspended<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SUSPENDED.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(set_suspended(true));
    f()
}

/// The tangents of `outputs` of the op whose node `id` (backward `f`) was just recorded on
/// `inputs` (`reverse`: whether reverse mode records it, as the inputs were before the op): `J t`
/// by the double vjp (see the module docs). An output that does not depend on any
/// tangent gets a zero tangent, as in PyTorch; non-float outputs get none.
pub fn jvp(
    id: NodeId,
    f: &BackwardFn,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    reverse: bool,
) -> Result<Vec<Option<Tensor>>> {
    let tangents: Vec<Option<Tensor>> = inputs.iter().map(|t| tangent(t)).collect();
    // reverse over forward: when the primals or tangents require grad, the tangents are
    // computed with a graph (saved tensors with their history, create_graph)
    let differentiable = super::is_grad_enabled()
        && (reverse || tangents.iter().flatten().any(|t| t.requires_grad()));
    suspended(|| {
        let _grad = super::GradModeGuard::new(true);
        let us: Vec<Option<Tensor>> = outputs
            .iter()
            .map(|o| {
                o.dtype()
                    .is_float()
                    .then(|| {
                        // any u will do (J^T u is linear in it); ones keep formulas that
                        // take log|u| or skip zero gradients away from their edge cases
                        let u = Tensor::full(o.shape(), Scalar::Float(1.0), o.dtype())?;
                        u.set_requires_grad(true)?;
                        Ok::<_, Error>(u)
                    })
                    .transpose()
            })
            .collect::<Result<_>>()?;
        let saved = unpack_saved(id, differentiable)?
            .into_iter()
            .map(|t| if differentiable { t } else { t.detach() })
            .collect();
        let mut ctx = BackwardCtx {
            grads: us.clone(),
            saved,
            needs_input_grad: tangents.iter().map(Option::is_some).collect(),
            output_meta: outputs
                .iter()
                .map(|t| (t.shape().to_vec(), t.dtype()))
                .collect(),
        };
        let vjps = f(&mut ctx).map_err(no_forward_formula)?;
        let (mut roots, mut seeds) = (Vec::new(), Vec::new());
        for (g, t) in vjps.into_iter().zip(&tangents) {
            let (Some(g), Some(t)) = (g, t) else { continue };
            if !g.requires_grad() {
                continue; // this input's vjp does not depend on u: its part of J t is zero
            }
            // a vjp in the broadcast shape (the engine sums it down) pairs with the expanded
            // tangent: <sum_to(g), t> = <g, expand(t)>
            let sizes: Vec<i64> = g.shape().iter().map(|&d| d as i64).collect();
            let t = crate::ops::shape::expand(&crate::ops::to_dtype(t, g.dtype())?, &sizes)?;
            roots.push(g);
            seeds.push(t);
        }
        let wanted: Vec<Tensor> = us.iter().flatten().cloned().collect();
        let found = if roots.is_empty() || wanted.is_empty() {
            vec![None; wanted.len()]
        } else {
            run_backward(
                &roots,
                seeds,
                BackwardOptions {
                    keep_graph: differentiable,
                    create_graph: differentiable,
                    inputs: Some(wanted),
                    accumulate: false,
                    allow_unused: true,
                },
            )?
        };
        let mut found = found.into_iter();
        us.iter()
            .zip(outputs)
            .map(|(u, o)| match u {
                None => Ok(None),
                Some(_) => match found.next().flatten() {
                    Some(t) => Ok(Some(t)),
                    None => Tensor::zeros(o.shape(), o.dtype()).map(Some),
                },
            })
            .collect()
    })
}

/// PyTorch's error for an op without a derivative (its backward raises "derivative for aten::X
/// is not implemented"): forward AD does not support it either.
fn no_forward_formula(e: Error) -> Error {
    let text = e.to_string();
    match text
        .split("derivative for ")
        .nth(1)
        .and_then(|r| r.strip_suffix(" is not implemented"))
    {
        Some(op) => Error::NotImplemented(format!(
            "Trying to use forward AD with {op} that does not support it."
        )),
        None => e,
    }
}
