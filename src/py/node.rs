//! Python handles on graph nodes (`grad_fn`, `next_functions`) and the bridge for custom
//! `autograd.Function`s whose backward is Python code.

use super::errors::stash_pyerr;
use super::tensor::{wrap_cached, PyTensor};
use crate::autograd::graph::{
    record_node, unpack_saved, visit_node_callbacks, ExternalBackward, NodeId, NodeKind, NodeRef,
    Saved,
};
use crate::error::Result;
use crate::tensor::Tensor;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;
use pyo3::PyTraverseError;
use std::sync::Arc;

/// A counted reference to a node, wrapped by `ferrograd.autograd.graph.Node` objects.
#[pyclass(name = "NodeHandle", module = "ferrograd._core", frozen)]
pub struct PyNodeHandle {
    pub node: NodeRef,
}

#[pymethods]
impl PyNodeHandle {
    /// The cycle collector sees the callbacks of a node this handle owns alone (a grad_fn kept
    /// as a Python attribute of its own Function's ctx).
    fn __traverse__(&self, visit: PyVisit<'_>) -> std::result::Result<(), PyTraverseError> {
        let id = self.node.id();
        super::hooks::traverse_with(&visit, |f| visit_node_callbacks(id, 1, f))
    }
    fn name(&self) -> String {
        self.node.name()
    }
    fn key(&self) -> (u32, u32) {
        let id = self.node.id();
        (id.idx, id.gen)
    }
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items: Vec<Bound<'py, PyAny>> = self
            .node
            .next_functions()
            .into_iter()
            .map(|(n, nr)| {
                let obj = match n {
                    Some(n) => node_object(py, n)?,
                    None => py.None().into_bound(py),
                };
                Ok(PyTuple::new(py, [obj, nr.into_pyobject(py)?.into_any()])?.into_any())
            })
            .collect::<PyResult<_>>()?;
        PyTuple::new(py, items)
    }
    fn variable<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.node.variable().map(|t| wrap_cached(py, t)).transpose()
    }
    /// ([(storage address, bytes)], released) of the node's saved tensors.
    fn saved_storages(&self) -> (Vec<(usize, usize)>, bool) {
        self.node.saved_storages()
    }
    #[pyo3(signature = (kind, f, output_nr=0))]
    fn add_hook(&self, kind: &str, f: Py<PyAny>, output_nr: u32) -> PyResult<u64> {
        super::hooks::add_node_hook(&self.node, kind, f, output_nr)
    }
    fn remove_hook(&self, id: u64) {
        self.node.remove_hook(id);
    }
    fn saved_tensors<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.node
            .saved_tensors()?
            .into_iter()
            .map(|t| wrap_cached(py, t))
            .collect()
    }
}

static WRAP_NODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The Python node object for `n`: the same object while it is alive (identity matters to
/// users comparing grad_fns), created by `ferrograd.autograd.graph._wrap_node`.
pub fn node_object(py: Python<'_>, n: NodeRef) -> PyResult<Bound<'_, PyAny>> {
    let f = WRAP_NODE.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py
            .import("ferrograd.autograd.graph")?
            .getattr("_wrap_node")?
            .unbind())
    })?;
    f.bind(py).call1((PyNodeHandle { node: n },))
}

/// The backward of a Python `autograd.Function`: calls `fn(*grads)` with the GIL held.
pub(crate) struct PyBackward {
    pub(crate) f: Py<PyAny>,
}

impl ExternalBackward for PyBackward {
    fn call(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Python::attach(|py| {
            let args: Vec<Bound<'_, PyAny>> = grads
                .into_iter()
                .map(|g| match g {
                    Some(t) => Ok(Bound::new(py, PyTensor::new(t))?.into_any()),
                    None => Ok(py.None().into_bound(py)),
                })
                .collect::<PyResult<_>>()
                .map_err(stash_pyerr)?;
            let args = PyTuple::new(py, args).map_err(stash_pyerr)?;
            let r = self.f.bind(py).call1(args).map_err(stash_pyerr)?;
            let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = r.cast::<PyTuple>() {
                t.iter().collect()
            } else {
                vec![r]
            };
            items
                .into_iter()
                .map(|o| {
                    if o.is_none() {
                        Ok(None)
                    } else {
                        o.cast::<PyTensor>()
                            .map(|t| Some(t.get().t.clone()))
                            .map_err(|_| {
                                stash_pyerr(pyo3::exceptions::PyTypeError::new_err(format!(
                                    "backward must return Tensors or None, got {}",
                                    o.get_type()
                                        .name()
                                        .map(|n| n.to_string())
                                        .unwrap_or_default()
                                )))
                            })
                    }
                })
                .collect()
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Records a node for a custom Function: `inputs` (tensors, in forward-argument order),
/// `outputs` become its outputs, `saved` are checked and freed like built-ins' saved tensors.
/// `dirty` inputs (modified in place, `ctx.mark_dirty`) are among the outputs: their version is
/// bumped and their history rebased onto the new node.
#[pyfunction]
pub fn _record_function(
    name: String,
    backward: Py<PyAny>,
    inputs: Vec<PyRef<'_, PyTensor>>,
    outputs: Vec<PyRef<'_, PyTensor>>,
    saved: Vec<PyRef<'_, PyTensor>>,
    dirty: Vec<PyRef<'_, PyTensor>>,
) -> PyResult<PyNodeHandle> {
    for d in &dirty {
        if d.t.meta().view_base.is_some() {
            return Err(pyo3::exceptions::PyNotImplementedError::new_err(
                "ctx.mark_dirty on a view is not supported by ferrograd yet",
            ));
        }
    }
    for d in &dirty {
        d.t.bump_version();
    }
    let ins: Vec<Tensor> = inputs.iter().map(|t| t.t.clone()).collect();
    let outs: Vec<Tensor> = outputs.iter().map(|t| t.t.clone()).collect();
    let saved: Vec<Saved> = saved
        .iter()
        .map(|s| match outs.iter().position(|o| o.ptr_eq(&s.t)) {
            Some(i) => Saved::Output(s.t.clone(), i as u32),
            None => Saved::Input(s.t.clone()),
        })
        .collect();
    let in_refs: Vec<&Tensor> = ins.iter().collect();
    let out_refs: Vec<&Tensor> = outs.iter().collect();
    let node = record_node(
        name.into(),
        NodeKind::External(Arc::new(PyBackward { f: backward })),
        &in_refs,
        &out_refs,
        saved,
    );
    Ok(PyNodeHandle { node })
}

/// `ctx.saved_tensors` of a custom Function, by node key (the ctx holds no strong reference);
/// saved outputs come back with the node as their grad_fn, as in PyTorch.
#[pyfunction]
pub fn _saved_tensors(py: Python<'_>, idx: u32, gen: u32) -> PyResult<Vec<Bound<'_, PyAny>>> {
    unpack_saved(NodeId { idx, gen }, true)?
        .into_iter()
        .map(|t| wrap_cached(py, t))
        .collect()
}
