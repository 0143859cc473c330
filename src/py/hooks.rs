//! Python callables as engine hooks: gradient hooks on tensors and nodes, saved-tensor
//! pack/unpack hooks, and the forward traceback that anomaly mode keeps. The Python layer
//! (`autograd/graph.py`, `_tensor.py`) wraps user hooks with PyTorch's checks and messages;
//! here they are only called, with the GIL taken for the call alone.

use super::errors::stash_pyerr;
use super::tensor::{wrap_cached, PyTensor};
use crate::autograd::graph::NodeRef;
use crate::autograd::hooks::{self, GradHook, Hook, HookKind, PackedTensor, SavedTensorsHooks};
use crate::error::Result;
use crate::tensor::Tensor;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::PyTraverseError;
use std::any::Any;
use std::sync::Arc;

fn to_tuple<'py>(py: Python<'py>, grads: &[Option<Tensor>]) -> PyResult<Bound<'py, PyTuple>> {
    let items: Vec<Bound<'py, PyAny>> = grads
        .iter()
        .map(|g| match g {
            Some(t) => wrap_cached(py, t.clone()),
            None => Ok(py.None().into_bound(py)),
        })
        .collect::<PyResult<_>>()?;
    PyTuple::new(py, items)
}

/// A sequence of Tensor-or-None, as returned by a wrapped hook.
fn from_sequence(r: &Bound<'_, PyAny>) -> PyResult<Vec<Option<Tensor>>> {
    r.try_iter()?
        .map(|o| {
            let o = o?;
            if o.is_none() {
                Ok(None)
            } else {
                Ok(Some(o.cast::<PyTensor>()?.get().t.clone()))
            }
        })
        .collect()
}

/// Calls `f(grads)` or `f(grads, extra)` with tuples; `f` returns None or a sequence.
struct PyGradHook {
    f: Py<PyAny>,
}

impl GradHook for PyGradHook {
    fn call(
        &self,
        grads: &[Option<Tensor>],
        extra: Option<&[Option<Tensor>]>,
    ) -> Result<Option<Vec<Option<Tensor>>>> {
        Python::attach(|py| {
            let r = (|| -> PyResult<Option<Vec<Option<Tensor>>>> {
                let a = to_tuple(py, grads)?;
                let r = match extra {
                    Some(e) => self.f.bind(py).call1((a, to_tuple(py, e)?))?,
                    None => self.f.bind(py).call1((a,))?,
                };
                if r.is_none() {
                    Ok(None)
                } else {
                    from_sequence(&r).map(Some)
                }
            })();
            r.map_err(stash_pyerr)
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Shows Python's cycle collector the Python objects of a callback held by the core (a hook,
/// a custom Function's backward, a packed saved tensor); see `graph::visit_owned_callbacks`.
pub fn visit_callback(
    obj: &dyn Any,
    visit: &PyVisit<'_>,
) -> std::result::Result<(), PyTraverseError> {
    if let Some(h) = obj.downcast_ref::<PyGradHook>() {
        visit.call(&h.f)
    } else if let Some(p) = obj.downcast_ref::<PyPacked>() {
        visit.call(&p.obj)?;
        visit.call(&p.unpack)
    } else if let Some(b) = obj.downcast_ref::<super::node::PyBackward>() {
        visit.call(&b.f)
    } else {
        Ok(())
    }
}

/// Runs a core visit (`graph::visit_owned_callbacks` / `visit_node_callbacks`) with
/// `visit_callback`, returning the collector's first error.
pub fn traverse_with(
    visit: &PyVisit<'_>,
    walk: impl FnOnce(&mut dyn FnMut(&dyn Any) -> bool) -> bool,
) -> std::result::Result<(), PyTraverseError> {
    let mut err = None;
    walk(&mut |obj| match visit_callback(obj, visit) {
        Ok(()) => true,
        Err(e) => {
            err = Some(e);
            false
        }
    });
    err.map_or(Ok(()), Err)
}

fn hook_kind(kind: &str, output_nr: u32) -> PyResult<HookKind> {
    Ok(match kind {
        "tensor" => HookKind::Tensor(output_nr),
        "pre" => HookKind::Pre,
        "post" => HookKind::Post,
        "leaf" => HookKind::Leaf,
        "post_accumulate" => HookKind::PostAccumulate,
        _ => return Err(PyValueError::new_err(format!("unknown hook kind {kind}"))),
    })
}

/// `NodeHandle.add_hook`: registers `f` on `node` ("tensor" on output `output_nr`, "pre",
/// "post"); returns its id.
pub fn add_node_hook(node: &NodeRef, kind: &str, f: Py<PyAny>, output_nr: u32) -> PyResult<u64> {
    let hook = Hook::new(hook_kind(kind, output_nr)?, Arc::new(PyGradHook { f }));
    Ok(node.add_hook(hook))
}

/// Registers a leaf's tensor hook ("leaf") or post-accumulate-grad hook ("post_accumulate").
#[pyfunction]
pub fn _add_leaf_hook(t: PyRef<'_, PyTensor>, kind: &str, f: Py<PyAny>) -> PyResult<u64> {
    let kind = hook_kind(kind, 0)?;
    if !matches!(kind, HookKind::Leaf | HookKind::PostAccumulate) {
        return Err(PyTypeError::new_err(
            "leaf hooks are 'leaf' or 'post_accumulate'",
        ));
    }
    let hook = Hook::new(kind, Arc::new(PyGradHook { f }));
    let id = hook.id;
    t.t.meta().hooks.push(hook);
    Ok(id)
}

/// Removes a hook from a node, by node key; nothing happens when the node is gone.
#[pyfunction]
pub fn _remove_node_hook(idx: u32, gen: u32, id: u64) {
    if let Some(n) = NodeRef::from_id(crate::autograd::graph::NodeId { idx, gen }) {
        n.remove_hook(id);
    }
}

#[pyfunction]
pub fn _remove_leaf_hook(t: PyRef<'_, PyTensor>, id: u64) {
    let removed: Vec<Hook> = {
        let mut m = t.t.meta();
        let keep = m.hooks.iter().filter(|h| h.id != id).cloned().collect();
        std::mem::replace(&mut m.hooks, keep)
    };
    drop(removed);
}

// --- saved tensor hooks ---------------------------------------------------------------------

struct PySavedHooks {
    pack: Py<PyAny>,
    unpack: Py<PyAny>,
}

struct PyPacked {
    obj: Py<PyAny>,
    unpack: Py<PyAny>,
}

impl SavedTensorsHooks for PySavedHooks {
    fn pack(&self, t: &Tensor) -> Result<Arc<dyn PackedTensor>> {
        Python::attach(|py| {
            let obj = self
                .pack
                .bind(py)
                .call1((wrap_cached(py, t.clone()).map_err(stash_pyerr)?,))
                .map_err(stash_pyerr)?;
            Ok(Arc::new(PyPacked {
                obj: obj.unbind(),
                unpack: self.unpack.clone_ref(py),
            }) as Arc<dyn PackedTensor>)
        })
    }
}

impl PackedTensor for PyPacked {
    fn unpack(&self) -> Result<Tensor> {
        Python::attach(|py| {
            let r = self
                .unpack
                .bind(py)
                .call1((self.obj.bind(py),))
                .map_err(stash_pyerr)?;
            match r.cast::<PyTensor>() {
                Ok(t) => Ok(t.get().t.clone()),
                Err(_) => Err(stash_pyerr(PyTypeError::new_err(format!(
                    "Output of saved tensor unpack_hook expected to be a Tensor but got result of type {}",
                    tp_name(&r)
                )))),
            }
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A type's `tp_name` as CPython error messages show it: `numpy.ndarray`, `int`.
fn tp_name(o: &Bound<'_, PyAny>) -> String {
    let t = o.get_type();
    let name = t.name().map(|n| n.to_string()).unwrap_or_default();
    match t.module().map(|m| m.to_string()) {
        Ok(m) if m != "builtins" => format!("{m}.{name}"),
        _ => name,
    }
}

#[pyfunction]
pub fn _push_saved_tensors_hooks(pack: Py<PyAny>, unpack: Py<PyAny>) {
    hooks::push_saved_hooks(Arc::new(PySavedHooks { pack, unpack }));
}

#[pyfunction]
pub fn _pop_saved_tensors_hooks() {
    hooks::pop_saved_hooks();
}

// --- anomaly mode ---------------------------------------------------------------------------

#[pyfunction]
pub fn _set_anomaly_enabled(enabled: bool, check_nan: bool) {
    hooks::set_anomaly(enabled, check_nan);
}

#[pyfunction]
pub fn is_anomaly_enabled() -> bool {
    hooks::anomaly_enabled()
}

#[pyfunction]
pub fn is_anomaly_check_nan_enabled() -> bool {
    hooks::anomaly_check_nan()
}

/// `traceback.format_stack()` joined: the forward call a node remembers in anomaly mode.
fn format_stack() -> Option<String> {
    Python::attach(|py| {
        let tb = py.import("traceback").ok()?;
        let lines = tb.call_method0("format_stack").ok()?;
        let s: Vec<String> = lines.extract().ok()?;
        Some(s.concat())
    })
}

/// In anomaly mode, after a failed backward: PyTorch's warning naming the node with the forward
/// traceback.
pub fn report_anomaly(py: Python<'_>) {
    let Some((name, trace)) = hooks::take_failed_node() else {
        return;
    };
    let msg = match &trace {
        Some(t) => format!(
            "Error detected in {name}. Traceback of forward call that caused the error:\n{t}"
        ),
        None => format!("Error detected in {name}. No forward pass information available. Enable detect anomaly during forward pass for more information."),
    };
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    let cmsg = std::ffi::CString::new(msg).unwrap_or_default();
    if let Err(w) = PyErr::warn(py, &category, &cmsg, 1) {
        // a warning turned into an error by the filters: the original error wins
        drop(w);
    }
}

/// The id of the backward running on this thread, -1 outside backward.
#[pyfunction]
pub fn _current_graph_task_id() -> i64 {
    crate::autograd::engine::current_graph_task_id().map_or(-1, |i| i as i64)
}

#[pyfunction]
pub fn _is_checkpoint_valid() -> bool {
    crate::autograd::engine::is_checkpoint_valid()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_current_graph_task_id, m)?)?;
    m.add_function(wrap_pyfunction!(_is_checkpoint_valid, m)?)?;
    hooks::set_trace_capture(format_stack);
    m.add_function(wrap_pyfunction!(_add_leaf_hook, m)?)?;
    m.add_function(wrap_pyfunction!(_remove_leaf_hook, m)?)?;
    m.add_function(wrap_pyfunction!(_remove_node_hook, m)?)?;
    m.add_function(wrap_pyfunction!(_push_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_pop_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_set_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_check_nan_enabled, m)?)?;
    Ok(())
}
