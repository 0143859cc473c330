//! The core tensor behind a Python `Tensor` object, which `t.data = other` re-points (PyTorch's
//! `set_data`) while the Python object keeps its identity (a `Parameter` stays the optimizer's
//! and the module's parameter).
//!
//! A `TensorSlot` derefs to the current `Tensor`: binding code reads it as a plain field
//! (`self.t.shape()`, `self.t.clone()`). A reference taken that way points into the slot's
//! current box; a replaced box is freed once no core work runs (`run` / `guarded` count
//! themselves in [`InFlight`]): at once, or when the work running at the time is done. The
//! binding rule that makes this sound: a reference into a slot is not held across a call into
//! Python code made outside `run` / `guarded` (work that calls Python, like hooks and custom
//! Functions, runs inside them).

use crate::tensor::Tensor;
use std::ops::Deref;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

pub struct TensorSlot {
    current: AtomicPtr<Tensor>,
}

impl TensorSlot {
    pub fn new(t: Tensor) -> TensorSlot {
        TensorSlot {
            current: AtomicPtr::new(Box::into_raw(Box::new(t))),
        }
    }

    /// Re-points the slot at `t`. The GIL (the `Python` token) orders replacements; the old
    /// tensor is freed once no reference into it can be alive (see the module comment).
    pub fn replace(&self, _py: pyo3::Python<'_>, t: Tensor) {
        let old = self
            .current
            .swap(Box::into_raw(Box::new(t)), Ordering::AcqRel);
        // SAFETY: `old` came from `Box::into_raw` (in `new` or an earlier `replace`) and the swap
        // made this call its only owner: no later `deref` can reach it.
        retire(unsafe { Box::from_raw(old) });
    }
}

impl Deref for TensorSlot {
    type Target = Tensor;
    fn deref(&self) -> &Tensor {
        let p = self.current.load(Ordering::Acquire);
        // SAFETY: `p` came from `Box::into_raw` and is freed only by `drop` (which has the slot
        // exclusively) or by `retire`, once no core work runs; by the binding rule (module
        // comment) no reference taken here outlives that.
        unsafe { &*p }
    }
}

impl Drop for TensorSlot {
    fn drop(&mut self) {
        let p = *self.current.get_mut();
        // SAFETY: `p` came from `Box::into_raw`; `&mut self` means no reference from `deref`
        // is alive.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// Core work running (`run` / `guarded`), on any thread.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Replaced tensors waiting for a moment without core work running. Boxed: references taken
/// through `deref` point into these boxes, which must not move.
#[allow(clippy::vec_box)]
static RETIRED: Mutex<Vec<Box<Tensor>>> = Mutex::new(Vec::new());

/// Counts one piece of core work for as long as it lives.
pub struct InFlight(());

impl InFlight {
    pub fn enter() -> InFlight {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight(())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if IN_FLIGHT.fetch_sub(1, Ordering::SeqCst) == 1 {
            // the last work that could hold a reference into a replaced tensor is done
            free_retired();
        }
    }
}

fn retire(old: Box<Tensor>) {
    RETIRED.lock().unwrap_or_else(|e| e.into_inner()).push(old);
    free_retired();
}

/// Frees the replaced tensors if no core work runs. A tensor replaced while work ran was
/// reachable by that work only; work started later reaches the slots' current tensors.
fn free_retired() {
    let dead = {
        let mut r = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
        if r.is_empty() || IN_FLIGHT.load(Ordering::SeqCst) != 0 {
            return;
        }
        std::mem::take(&mut *r)
    };
    // dropped after unlocking: dropping a tensor may free graph nodes and run more drops
    drop(dead);
}

/// What `Work` measures: core tensors, or the slots of Python tensors.
pub trait AsTensor {
    fn as_tensor(&self) -> &Tensor;
}

impl AsTensor for Tensor {
    fn as_tensor(&self) -> &Tensor {
        self
    }
}

impl AsTensor for TensorSlot {
    fn as_tensor(&self) -> &Tensor {
        self
    }
}
