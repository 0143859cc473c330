//! The Python `Tensor` class. Hot methods are here in Rust; argument-heavy conveniences live in
//! `python/ferrograd/_tensor.py`, attached to this same class.

use super::convert::{
    dims_arg, dtype_arg, operand, parse_index, required_dtype, shape_args, PyDType,
};
use super::errors::{guarded, run, Work};
use super::node::node_object;
use super::slot::TensorSlot;
use crate::autograd::graph::NodeRef;
use crate::dtype::{DType, Scalar};
use crate::ops::{self, BinOp, Operand};
use crate::tensor::Tensor;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple, PyWeakrefMethods, PyWeakrefReference};
use pyo3::PyTraverseError;

#[pyclass(name = "Tensor", module = "ferrograd", subclass, frozen, weakref)]
pub struct PyTensor {
    /// The core tensor; `t.data = other` re-points it (see py/slot.rs).
    pub t: TensorSlot,
}

impl PyTensor {
    pub fn new(t: Tensor) -> Self {
        PyTensor {
            t: TensorSlot::new(t),
        }
    }

    /// softmax / log_softmax, optionally computed in another dtype.
    fn softmax_impl(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
        log: bool,
    ) -> PyResult<PyTensor> {
        let dt = dtype_arg(dtype)?;
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            let t = match dt {
                Some(d) => ops::to_dtype(&t, d)?,
                None => t,
            };
            ops::softmax(&t, dim, log)
        })
        .map(wrap)
    }

    /// `f(self)` through the engine, the GIL released for large tensors.
    pub(super) fn unary(
        &self,
        py: Python<'_>,
        f: fn(&Tensor) -> crate::Result<Tensor>,
    ) -> PyResult<PyTensor> {
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || f(&t)).map(wrap)
    }
}

fn wrap(t: Tensor) -> PyTensor {
    PyTensor::new(t)
}

/// Remembers `obj` (weakly) as the Python object of its tensor.
pub fn register_pyobj(obj: &Bound<'_, PyTensor>) -> PyResult<()> {
    let w = PyWeakrefReference::new(obj)?.unbind();
    let old = obj
        .get()
        .t
        .0
        .pyobj
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .replace(Box::new(w));
    drop(old);
    Ok(())
}

/// The Python object of `t`: the registered one while it is alive, else a new registered one.
pub fn wrap_cached(py: Python<'_>, t: Tensor) -> PyResult<Bound<'_, PyAny>> {
    let existing = {
        let slot = t.0.pyobj.lock().unwrap_or_else(|e| e.into_inner());
        slot.as_ref()
            .and_then(|b| b.downcast_ref::<Py<PyWeakrefReference>>())
            .and_then(|w| w.bind(py).upgrade())
    };
    if let Some(o) = existing {
        return Ok(o);
    }
    let obj = Bound::new(py, PyTensor::new(t))?;
    register_pyobj(&obj)?;
    Ok(obj.into_any())
}

static SIZE_CLS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static REPR_FN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `torch.Size` from a shape.
pub fn size_object<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let cls = SIZE_CLS.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("ferrograd._size")?.getattr("Size")?.unbind())
    })?;
    cls.bind(py).call1((PyTuple::new(py, shape)?,))
}

/// The work of an elementwise op over these operands (numbers count for nothing).
pub fn operand_work(operands: &[&Operand]) -> Work {
    Work::elems(operands.iter().filter_map(|o| o.tensor()))
}

/// `self op other`, or NotImplemented for operands that are not tensors or numbers.
fn forward_op(
    slf: &PyTensor,
    other: &Bound<'_, PyAny>,
    op: BinOp,
    reflected: bool,
) -> PyResult<Py<PyAny>> {
    let py = other.py();
    let Some(o) = operand(other) else {
        return Ok(py.NotImplemented());
    };
    let s = Operand::T(slf.t.clone());
    let (a, b) = if reflected { (o, s) } else { (s, o) };
    Ok(super::registry::apply_binary(py, op, a, b)?
        .into_pyobject(py)?
        .into_any()
        .unbind())
}

fn other_operand(o: &Bound<'_, PyAny>) -> PyResult<Operand> {
    operand(o).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "expected a Tensor or a number, but got {}",
            o.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

fn tensor_arg(o: &Bound<'_, PyAny>, what: &str) -> PyResult<Tensor> {
    o.cast::<PyTensor>()
        .map(|t| t.get().t.clone())
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "{what} must be a Tensor, not {}",
                o.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })
}

#[pymethods]
impl PyTensor {
    /// Shows Python's cycle collector the hooks and the custom Function backward this tensor
    /// owns through the Rust graph (`ctx.out = y`, a hook capturing its own leaf), so such
    /// cycles are collected as in PyTorch. Nothing needs clearing here: every cycle through a
    /// tensor also runs through a Python object the collector clears (a dict, a closure).
    fn __traverse__(&self, visit: PyVisit<'_>) -> std::result::Result<(), PyTraverseError> {
        super::hooks::traverse_with(&visit, |f| {
            crate::autograd::graph::visit_owned_callbacks(&self.t, f)
        })
    }
    /// The legacy constructor: `Tensor()` (empty), `Tensor(2, 3)` (zeros of that shape),
    /// `Tensor(data)` (float32 copy of a list/array), `Tensor(tensor)` (shares its data, no
    /// history: what `Parameter(t)` builds on).
    #[new]
    #[pyo3(signature = (*args))]
    fn py_new(args: &Bound<'_, PyTuple>) -> PyResult<Self> {
        let py = args.py();
        if args.is_empty() {
            return Ok(wrap(Tensor::zeros(&[0], DType::default_float())?));
        }
        if args.len() == 1 {
            let a = args.get_item(0)?;
            if let Ok(t) = a.cast::<PyTensor>() {
                return Ok(wrap(t.get().t.detach()));
            }
            if a.extract::<i64>().is_err() {
                let kw = pyo3::types::PyDict::new(py);
                kw.set_item(
                    "dtype",
                    crate::py::convert::dtype_object(py, DType::default_float())?,
                )?;
                let t = py
                    .import("ferrograd")?
                    .getattr("tensor")?
                    .call((a,), Some(&kw))?;
                return Ok(wrap(t.cast::<PyTensor>()?.get().t.clone()));
            }
        }
        let shape: Vec<usize> = args
            .iter()
            .map(|a| a.extract::<usize>())
            .collect::<PyResult<_>>()
            .map_err(|_| {
                PyTypeError::new_err(
                    "Tensor(): expected a shape of non-negative ints, a sequence, or a Tensor",
                )
            })?;
        Ok(wrap(Tensor::zeros(&shape, DType::default_float())?))
    }

    // ---- unary elementwise ----
    fn clone(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, ops::clone)
    }
    /// `clone()` laid out in the memory order `order` (outermost dim first).
    fn _clone_in_order(&self, py: Python<'_>, order: Vec<usize>) -> PyResult<PyTensor> {
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::clone_in_order(&t, &order)
        })
        .map(wrap)
    }
    fn __neg__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, ops::neg)
    }
    fn __abs__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, ops::abs)
    }
    fn __invert__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, ops::bitwise_not)
    }
    fn _silu(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, ops::silu)
    }

    // ---- attributes ----
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        size_object(py, self.t.shape())
    }
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<Py<PyDType>> {
        super::convert::dtype_object(py, self.t.dtype())
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.t.ndim()
    }
    fn dim(&self) -> usize {
        self.t.ndim()
    }
    fn numel(&self) -> usize {
        self.t.numel()
    }
    fn nelement(&self) -> usize {
        self.t.numel()
    }
    fn element_size(&self) -> usize {
        self.t.dtype().size()
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.t.dtype().size()
    }
    #[pyo3(signature = (dim=None))]
    fn stride<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        let s = &self.t.layout().strides;
        match dim {
            None => Ok(PyTuple::new(py, s)?.into_any()),
            Some(d) => {
                let w = crate::layout::wrap_dim(d, self.t.ndim())?;
                Ok(s[w].into_pyobject(py)?.into_any())
            }
        }
    }
    fn storage_offset(&self) -> usize {
        self.t.layout().offset
    }
    fn is_contiguous(&self) -> bool {
        self.t.is_contiguous()
    }
    fn is_floating_point(&self) -> bool {
        self.t.dtype().is_float()
    }
    #[getter]
    fn _version(&self) -> u64 {
        self.t.version()
    }
    #[getter]
    fn requires_grad(&self) -> bool {
        self.t.requires_grad()
    }
    #[setter]
    fn set_requires_grad(slf: &Bound<'_, Self>, v: bool) -> PyResult<()> {
        slf.get().t.set_requires_grad(v)?;
        register_pyobj(slf)
    }
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_<'py>(
        slf: &Bound<'py, Self>,
        requires_grad: bool,
    ) -> PyResult<Bound<'py, Self>> {
        slf.get().t.requires_grad_(requires_grad)?;
        register_pyobj(slf)?;
        Ok(slf.clone())
    }
    fn contiguous<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let t = slf.get().t.clone();
        if t.is_contiguous() {
            return Ok(slf.clone().into_any());
        }
        Ok(Bound::new(slf.py(), wrap(ops::clone(&t)?))?.into_any())
    }
    #[getter]
    fn is_leaf(&self) -> bool {
        self.t.is_leaf()
    }
    #[getter]
    fn grad_fn<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.t.grad_fn() {
            None => Ok(None),
            Some(n) => Ok(Some(node_object(py, n)?)),
        }
    }
    #[getter]
    fn output_nr(&self) -> u32 {
        self.t.meta().output_nr
    }
    #[getter]
    fn _grad<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.t.grad().map(|g| wrap_cached(py, g)).transpose()
    }
    #[setter(_grad)]
    fn assign_grad(&self, g: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        if let Some(g) = g.and_then(|g| g.cast::<PyTensor>().ok()) {
            register_pyobj(g)?;
        }
        match g {
            None => self.t.set_grad(None),
            Some(g) if g.is_none() => self.t.set_grad(None),
            Some(g) => self.t.assign_grad(Some(tensor_arg(g, "assigned grad")?))?,
        }
        Ok(())
    }
    #[getter]
    fn retains_grad(&self) -> bool {
        let m = self.t.meta();
        m.retains_grad && m.grad_fn.is_some()
    }
    fn retain_grad(&self) -> PyResult<()> {
        Ok(self.t.retain_grad()?)
    }
    fn detach(&self) -> PyTensor {
        wrap(self.t.detach())
    }
    fn detach_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        slf.get().t.detach_()?;
        Ok(slf.clone())
    }
    #[getter]
    fn data(&self) -> PyTensor {
        wrap(self.t.data_alias())
    }
    /// `t.data = other`: this Python tensor now has `other`'s storage, shape and dtype, and
    /// keeps its own autograd identity (PyTorch's `set_data`; see `Tensor::with_data_of`).
    #[setter]
    fn set_data(slf: &Bound<'_, Self>, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let Some(value) = value else {
            return Err(PyTypeError::new_err("cannot delete attribute 'data'"));
        };
        let new = value.cast::<PyTensor>().map_err(|_| {
            PyTypeError::new_err(format!(
                "Variable data has to be a tensor, but got {}",
                value
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        let new = new.get().t.clone();
        let swapped = slf.get().t.with_data_of(&new)?;
        slf.get().t.replace(slf.py(), swapped);
        register_pyobj(slf)
    }
    fn _is_view(&self) -> bool {
        self.t.meta().view_base.is_some()
    }
    #[getter]
    fn _base<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let b = self.t.meta().view_base.clone();
        b.map(|b| wrap_cached(py, b)).transpose()
    }
    fn data_ptr(&self) -> usize {
        self.t.storage().data_ptr() as usize + self.t.layout().offset * self.t.dtype().size()
    }
    fn _storage_ptr(&self) -> usize {
        self.t.storage().data_ptr() as usize
    }
    fn _storage_len(&self) -> usize {
        self.t.storage().len()
    }
    fn _mark_shared(&self) {
        self.t.storage().mark_shared();
    }

    // ---- conversions ----
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self.t.item()? {
            Scalar::Bool(b) => pyo3::types::PyBool::new(py, b).to_owned().into_any(),
            Scalar::Int(i) => i.into_pyobject(py)?.into_any(),
            Scalar::Float(f) => f.into_pyobject(py)?.into_any(),
        })
    }
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        fn build<'py>(
            py: Python<'py>,
            shape: &[usize],
            flat: &mut impl Iterator<Item = Bound<'py, PyAny>>,
        ) -> PyResult<Bound<'py, PyAny>> {
            if shape.is_empty() {
                return Ok(flat.next().expect("enough elements"));
            }
            let items: Vec<Bound<'py, PyAny>> = (0..shape[0])
                .map(|_| build(py, &shape[1..], flat))
                .collect::<PyResult<_>>()?;
            Ok(PyList::new(py, items)?.into_any())
        }
        let shape = self.t.shape().to_vec();
        let items: Vec<Bound<'py, PyAny>> = match self.t.dtype() {
            DType::Bool => self
                .t
                .try_to_vec::<u8>()?
                .into_iter()
                .map(|v| Ok(pyo3::types::PyBool::new(py, v != 0).to_owned().into_any()))
                .collect::<PyResult<_>>()?,
            d => {
                let wide = if d.is_float() { DType::F64 } else { DType::I64 };
                let t = guarded(|| ops::to_dtype(&self.t, wide))?;
                if d.is_float() {
                    t.try_to_vec::<f64>()?
                        .into_iter()
                        .map(|v| Ok(v.into_pyobject(py)?.into_any()))
                        .collect::<PyResult<_>>()?
                } else {
                    t.try_to_vec::<i64>()?
                        .into_iter()
                        .map(|v| Ok(v.into_pyobject(py)?.into_any()))
                        .collect::<PyResult<_>>()?
                }
            }
        };
        build(py, &shape, &mut items.into_iter())
    }
    fn __bool__(&self) -> PyResult<bool> {
        if self.t.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "Boolean value of Tensor with {} values is ambiguous",
                if self.t.numel() == 0 {
                    "no".to_string()
                } else {
                    "more than one".to_string()
                }
            )));
        }
        Ok(self.t.item()?.to_f64() != 0.0)
    }
    fn __float__(&self) -> PyResult<f64> {
        Ok(self.t.item()?.to_f64())
    }
    fn __int__(&self) -> PyResult<i64> {
        Ok(self.t.item()?.to_i64())
    }
    fn __index__(&self) -> PyResult<i64> {
        if self.t.dtype() != DType::I64 && self.t.dtype() != DType::Bool {
            return Err(PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            ));
        }
        Ok(self.t.item()?.to_i64())
    }
    fn __len__(&self) -> PyResult<usize> {
        if self.t.ndim() == 0 {
            return Err(PyTypeError::new_err("len() of a 0-d tensor"));
        }
        Ok(self.t.shape()[0])
    }
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let py = slf.py();
        let f = REPR_FN.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py
                .import("ferrograd._tensor_str")?
                .getattr("tensor_repr")?
                .unbind())
        })?;
        f.bind(py).call1((slf,))?.extract()
    }
    fn __str__(slf: &Bound<'_, Self>) -> PyResult<String> {
        Self::__repr__(slf)
    }
    /// Same dtype, new storage: `to(dtype)`; `copy=True` forces a copy.
    #[pyo3(signature = (dtype, copy=false))]
    fn _to_dtype<'py>(
        slf: &Bound<'py, Self>,
        dtype: &Bound<'py, PyAny>,
        copy: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let d = required_dtype(dtype)?;
        let t = slf.get().t.clone();
        if d == t.dtype() && !copy {
            return Ok(slf.clone().into_any());
        }
        let r = run(slf.py(), Work::elems([&t]), move || {
            let r = ops::to_dtype(&t, d)?;
            if r.ptr_eq(&t) {
                ops::clone(&t)
            } else {
                Ok(r)
            }
        })?;
        Ok(Bound::new(slf.py(), wrap(r))?.into_any())
    }

    // ---- arithmetic operators ----
    fn __add__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Add, false)
    }
    fn __radd__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Add, true)
    }
    fn __sub__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Sub, false)
    }
    fn __rsub__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Sub, true)
    }
    fn __mul__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Mul, false)
    }
    fn __rmul__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Mul, true)
    }
    fn __truediv__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Div, false)
    }
    fn __rtruediv__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = o.py();
        let Some(Operand::S(s)) = operand(o) else {
            return Ok(py.NotImplemented());
        };
        // PyTorch computes `s / x` as reciprocal(x) * s
        let t = self.t.clone();
        let r = run(py, Work::elems([&t]), move || {
            ops::binary(
                BinOp::Mul,
                &Operand::T(ops::reciprocal(&t)?),
                &Operand::S(s),
            )
        })?;
        Ok(wrap(r).into_pyobject(py)?.into_any().unbind())
    }
    fn __floordiv__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::FloorDiv, false)
    }
    fn __rfloordiv__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::FloorDiv, true)
    }
    fn __mod__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Rem, false)
    }
    fn __rmod__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Rem, true)
    }
    fn __pow__(&self, o: &Bound<'_, PyAny>, _m: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Pow, false)
    }
    fn __rpow__(&self, o: &Bound<'_, PyAny>, _m: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Pow, true)
    }
    fn __and__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::BitAnd, false)
    }
    fn __rand__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::BitAnd, true)
    }
    fn __or__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::BitOr, false)
    }
    fn __ror__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::BitOr, true)
    }
    fn __xor__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::BitXor, false)
    }
    fn __rxor__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::BitXor, true)
    }
    fn __lshift__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Shl, false)
    }
    fn __rlshift__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Shl, true)
    }
    fn __rshift__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Shr, false)
    }
    fn __rrshift__(&self, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        forward_op(self, o, BinOp::Shr, true)
    }
    fn __matmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(b) = o.cast::<PyTensor>() else {
            return Ok(py.NotImplemented());
        };
        let (a, c) = (self.t.clone(), b.get().t.clone());
        let r = run(py, Work::elems([&a, &c]), move || ops::matmul(&a, &c))?;
        Ok(wrap(r).into_pyobject(py)?.into_any().unbind())
    }
    fn __rmatmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(b) = o.cast::<PyTensor>() else {
            return Ok(py.NotImplemented());
        };
        let (a, s) = (b.get().t.clone(), self.t.clone());
        let r = run(py, Work::elems([&a, &s]), move || ops::matmul(&a, &s))?;
        Ok(wrap(r).into_pyobject(py)?.into_any().unbind())
    }
    fn __pos__(&self) -> PyTensor {
        wrap(self.t.clone())
    }
    fn __richcmp__(&self, o: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let bop = match op {
            CompareOp::Eq => BinOp::Eq,
            CompareOp::Ne => BinOp::Ne,
            CompareOp::Lt => BinOp::Lt,
            CompareOp::Le => BinOp::Le,
            CompareOp::Gt => BinOp::Gt,
            CompareOp::Ge => BinOp::Ge,
        };
        if operand(o).is_none() {
            let py = o.py();
            return match op {
                CompareOp::Eq => Ok(false.into_pyobject(py)?.to_owned().into_any().unbind()),
                CompareOp::Ne => Ok(true.into_pyobject(py)?.to_owned().into_any().unbind()),
                _ => Ok(py.NotImplemented()),
            };
        }
        forward_op(self, o, bop, false)
    }

    // ---- in-place operator forms ----
    fn __iadd__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, BinOp::Add, o).map(|_| ())
    }
    fn __isub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, BinOp::Sub, o).map(|_| ())
    }
    fn __imul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, BinOp::Mul, o).map(|_| ())
    }
    fn __itruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, BinOp::Div, o).map(|_| ())
    }
    fn _add_<'py>(slf: &Bound<'py, Self>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        inplace(slf, BinOp::Add, o)
    }
    fn _sub_<'py>(slf: &Bound<'py, Self>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        inplace(slf, BinOp::Sub, o)
    }
    fn mul_<'py>(slf: &Bound<'py, Self>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        inplace(slf, BinOp::Mul, o)
    }
    fn div_<'py>(slf: &Bound<'py, Self>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        inplace(slf, BinOp::Div, o)
    }
    fn pow_<'py>(slf: &Bound<'py, Self>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        inplace(slf, BinOp::Pow, o)
    }
    fn __ilshift__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, BinOp::Shl, o).map(|_| ())
    }
    fn __irshift__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, BinOp::Shr, o).map(|_| ())
    }
    fn bitwise_left_shift_<'py>(
        slf: &Bound<'py, Self>,
        o: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        inplace(slf, BinOp::Shl, o)
    }
    fn bitwise_right_shift_<'py>(
        slf: &Bound<'py, Self>,
        o: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        inplace(slf, BinOp::Shr, o)
    }
    fn floor_divide_<'py>(
        slf: &Bound<'py, Self>,
        o: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        inplace(slf, BinOp::FloorDiv, o)
    }
    fn __ifloordiv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, BinOp::FloorDiv, o).map(|_| ())
    }
    fn remainder_<'py>(
        slf: &Bound<'py, Self>,
        o: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        inplace(slf, BinOp::Rem, o)
    }
    fn __imod__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, BinOp::Rem, o).map(|_| ())
    }
    fn fmod_<'py>(slf: &Bound<'py, Self>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        inplace(slf, BinOp::Fmod, o)
    }
    fn atan2_<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        tensor_arg(other, "other")?;
        inplace(slf, BinOp::Atan2, other)
    }
    fn hypot_<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        tensor_arg(other, "other")?;
        inplace(slf, BinOp::Hypot, other)
    }
    fn igamma_<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        tensor_arg(other, "other")?;
        inplace(slf, BinOp::Igamma, other)
    }
    fn igammac_<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        tensor_arg(other, "other")?;
        inplace(slf, BinOp::Igammac, other)
    }
    fn xlogy_<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        tensor_arg(other, "other")?;
        inplace(slf, BinOp::Xlogy, other)
    }
    fn zero_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        guarded(|| ops::zero_(&slf.get().t))?;
        Ok(slf.clone())
    }
    fn fill_<'py>(slf: &Bound<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let v = match operand(value) {
            Some(Operand::S(s)) => s,
            Some(Operand::T(t)) if t.numel() == 1 => t.item()?,
            _ => {
                return Err(PyTypeError::new_err(
                    "fill_(): value must be a number or a one-element tensor",
                ))
            }
        };
        guarded(|| ops::fill_(&slf.get().t, v))?;
        Ok(slf.clone())
    }
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_<'py>(
        slf: &Bound<'py, Self>,
        src: &Bound<'py, PyAny>,
        non_blocking: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let _ = non_blocking;
        let s = tensor_arg(src, "copy_(): argument 'src'")?;
        let t = slf.get().t.clone();
        run(slf.py(), Work::elems([&t, &s]), move || ops::copy_(&t, &s))?;
        Ok(slf.clone())
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(
        slf: &Bound<'py, Self>,
        min: Option<f64>,
        max: Option<f64>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.get().t.clone();
        let (lo, hi) = (min.map(Scalar::Float), max.map(Scalar::Float));
        run(slf.py(), Work::LIGHT, move || {
            ops::apply_inplace(&t, &[], |s| ops::clamp(s, lo, hi))
        })?;
        Ok(slf.clone())
    }
    fn masked_fill_<'py>(
        slf: &Bound<'py, Self>,
        mask: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let m = tensor_arg(mask, "mask")?;
        let v = operand(value)
            .ok_or_else(|| PyTypeError::new_err("masked_fill_(): value must be a number"))?;
        let t = slf.get().t.clone();
        run(slf.py(), Work::LIGHT, move || match &v {
            Operand::S(s) => ops::apply_inplace(&t, &[], |x| ops::masked_fill(x, &m, *s)),
            Operand::T(v) => ops::apply_inplace(&t, &[v], |x| ops::masked_fill_tensor(x, &m, v)),
        })?;
        Ok(slf.clone())
    }

    fn matmul(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (self.t.clone(), other.t.clone());
        let work = Work::over(
            [&a, &b],
            a.numel()
                .saturating_mul(b.shape().last().copied().unwrap_or(1)),
        );
        run(py, work, move || ops::matmul(&a, &b)).map(wrap)
    }
    fn mm(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (self.t.clone(), other.t.clone());
        run(py, Work::elems([&a, &b]), move || ops::mm(&a, &b)).map(wrap)
    }
    fn bmm(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (self.t.clone(), other.t.clone());
        run(py, Work::elems([&a, &b]), move || ops::bmm(&a, &b)).map(wrap)
    }
    fn mv(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (self.t.clone(), other.t.clone());
        run(py, Work::elems([&a, &b]), move || ops::mv(&a, &b)).map(wrap)
    }
    fn dot(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (self.t.clone(), other.t.clone());
        run(py, Work::elems([&a, &b]), move || ops::dot(&a, &b)).map(wrap)
    }
    fn outer(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (self.t.clone(), other.t.clone());
        run(py, Work::LIGHT, move || ops::outer(&a, &b)).map(wrap)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn _clamp(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let bound = |b: Option<&Bound<'_, PyAny>>| -> PyResult<Option<Scalar>> {
            match b {
                None => Ok(None),
                Some(b) if b.is_none() => Ok(None),
                Some(b) => match operand(b) {
                    Some(Operand::S(s)) => Ok(Some(s)),
                    Some(Operand::T(t)) if t.numel() == 1 => Ok(Some(t.item()?)),
                    _ => Err(PyTypeError::new_err("clamp(): min and max must be numbers")),
                },
            }
        };
        let (lo, hi) = (bound(min)?, bound(max)?);
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || ops::clamp(&t, lo, hi)).map(wrap)
    }
    fn masked_fill(
        &self,
        py: Python<'_>,
        mask: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let m = tensor_arg(mask, "masked_fill(): argument 'mask'")?;
        let v = operand(value).ok_or_else(|| {
            PyTypeError::new_err("masked_fill(): value must be a number or a 0-dim tensor")
        })?;
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || match v {
            Operand::S(s) => ops::masked_fill(&t, &m, s),
            Operand::T(v) => ops::masked_fill_tensor(&t, &m, &v),
        })
        .map(wrap)
    }
    #[pyo3(signature = (approximate="none"))]
    fn _gelu(&self, py: Python<'_>, approximate: &str) -> PyResult<PyTensor> {
        let tanh = match approximate {
            "none" => false,
            "tanh" => true,
            _ => {
                return Err(PyRuntimeError::new_err(
                    "approximate argument must be either none or tanh.".to_string(),
                ))
            }
        };
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || ops::gelu(&t, tanh)).map(wrap)
    }

    // ---- reductions ----
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None, axis=None))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dims = dims_arg(dim.or(axis))?;
        let dt = dtype_arg(dtype)?;
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::sum_dims(&t, dims.as_deref(), keepdim, dt)
        })
        .map(wrap)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None, axis=None))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dims = dims_arg(dim.or(axis))?;
        let dt = dtype_arg(dtype)?;
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::mean(&t, dims.as_deref(), keepdim, dt)
        })
        .map(wrap)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None, axis=None))]
    fn prod(
        &self,
        py: Python<'_>,
        dim: Option<i64>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
        axis: Option<i64>,
    ) -> PyResult<PyTensor> {
        let dt = dtype_arg(dtype)?;
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::prod(&t, dim.or(axis), keepdim, dt)
        })
        .map(wrap)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None))]
    fn amax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dims = dims_arg(dim.or(axis))?;
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::amax(&t, dims.as_deref(), keepdim, true)
        })
        .map(wrap)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None))]
    fn amin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dims = dims_arg(dim.or(axis))?;
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::amax(&t, dims.as_deref(), keepdim, false)
        })
        .map(wrap)
    }
    fn _max_all(&self, py: Python<'_>, want_max: bool) -> PyResult<PyTensor> {
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || ops::max_all(&t, want_max)).map(wrap)
    }
    fn _max_dim(
        &self,
        py: Python<'_>,
        dim: i64,
        keepdim: bool,
        want_max: bool,
    ) -> PyResult<(PyTensor, PyTensor)> {
        let t = self.t.clone();
        let (v, i) = run(py, Work::elems([&t]), move || {
            ops::max_dim(&t, dim, keepdim, want_max)
        })?;
        Ok((wrap(v), wrap(i)))
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None))]
    fn argmax(
        &self,
        py: Python<'_>,
        dim: Option<i64>,
        keepdim: bool,
        axis: Option<i64>,
    ) -> PyResult<PyTensor> {
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::argmax(&t, dim.or(axis), keepdim, true)
        })
        .map(wrap)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None))]
    fn argmin(
        &self,
        py: Python<'_>,
        dim: Option<i64>,
        keepdim: bool,
        axis: Option<i64>,
    ) -> PyResult<PyTensor> {
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::argmax(&t, dim.or(axis), keepdim, false)
        })
        .map(wrap)
    }
    fn _var(
        &self,
        py: Python<'_>,
        dims: Option<Vec<i64>>,
        correction: f64,
        keepdim: bool,
        take_sqrt: bool,
    ) -> PyResult<PyTensor> {
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::var(&t, dims.as_deref(), correction, keepdim, take_sqrt)
        })
        .map(wrap)
    }
    fn _var_mean(
        &self,
        py: Python<'_>,
        dims: Option<Vec<i64>>,
        correction: f64,
        keepdim: bool,
        take_sqrt: bool,
    ) -> PyResult<(PyTensor, PyTensor)> {
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::var_mean(&t, dims.as_deref(), correction, keepdim, take_sqrt)
        })
        .map(|(v, m)| (wrap(v), wrap(m)))
    }
    fn _aminmax(
        &self,
        py: Python<'_>,
        dims: Option<Vec<i64>>,
        keepdim: bool,
    ) -> PyResult<(PyTensor, PyTensor)> {
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::aminmax(&t, dims.as_deref(), keepdim)
        })
        .map(|(lo, hi)| (wrap(lo), wrap(hi)))
    }
    #[pyo3(signature = (dim, keepdim=false))]
    fn logsumexp(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let dims = dims_arg(Some(dim))?.unwrap_or_default();
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::logsumexp(&t, &dims, keepdim)
        })
        .map(wrap)
    }
    fn _norm(
        &self,
        py: Python<'_>,
        p: f64,
        dims: Option<Vec<i64>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || {
            ops::norm(&t, p, dims.as_deref(), keepdim)
        })
        .map(wrap)
    }
    #[pyo3(signature = (dim, dtype=None))]
    fn softmax(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        self.softmax_impl(py, dim, dtype, false)
    }
    #[pyo3(signature = (dim, dtype=None))]
    fn log_softmax(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        self.softmax_impl(py, dim, dtype, true)
    }

    // ---- shape ----
    #[pyo3(signature = (*shape))]
    fn view(&self, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        if shape.len() == 1 {
            if let Ok(Some(d)) = dtype_arg(Some(&shape.get_item(0)?)) {
                if d != self.t.dtype() {
                    return Err(pyo3::exceptions::PyNotImplementedError::new_err(
                        "view(dtype) is not supported by ferrograd yet",
                    ));
                }
                return guarded(|| {
                    ops::view(
                        &self.t,
                        &self.t.shape().iter().map(|&d| d as i64).collect::<Vec<_>>(),
                    )
                })
                .map(wrap);
            }
        }
        {
            let s = shape_args(shape)?;
            guarded(|| ops::view(&self.t, &s)).map(wrap)
        }
    }
    #[pyo3(signature = (*args, shape=None))]
    fn reshape(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        shape: Option<Vec<i64>>,
    ) -> PyResult<PyTensor> {
        let s = match shape {
            Some(s) => s,
            None => shape_args(args)?,
        };
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || ops::reshape_i(&t, &s)).map(wrap)
    }
    #[pyo3(signature = (*dims))]
    fn permute(&self, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        {
            let d = shape_args(dims)?;
            guarded(|| ops::permute(&self.t, &d)).map(wrap)
        }
    }
    fn movedim(
        &self,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let src = dims_arg(Some(source))?.unwrap_or_default();
        let dst = dims_arg(Some(destination))?.unwrap_or_default();
        guarded(|| ops::movedim(&self.t, &src, &dst)).map(wrap)
    }
    fn moveaxis(
        &self,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        self.movedim(source, destination)
    }
    fn unfold(&self, dimension: i64, size: i64, step: i64) -> PyResult<PyTensor> {
        guarded(|| ops::unfold(&self.t, dimension, size, step)).map(wrap)
    }
    fn transpose(&self, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
        guarded(|| ops::transpose(&self.t, dim0, dim1)).map(wrap)
    }
    fn swapaxes(&self, axis0: i64, axis1: i64) -> PyResult<PyTensor> {
        self.transpose(axis0, axis1)
    }
    fn t(&self) -> PyResult<PyTensor> {
        guarded(|| ops::t2(&self.t)).map(wrap)
    }
    #[getter(T)]
    fn big_t(&self) -> PyResult<PyTensor> {
        let n = self.t.ndim() as i64;
        let dims: Vec<i64> = (0..n).rev().collect();
        guarded(|| ops::permute(&self.t, &dims)).map(wrap)
    }
    #[getter(mT)]
    fn m_t(&self) -> PyResult<PyTensor> {
        if self.t.ndim() < 2 {
            return Err(PyRuntimeError::new_err(format!(
                "tensor.mT is only supported on matrices or batches of matrices. Got {}-D tensor.",
                self.t.ndim()
            )));
        }
        guarded(|| ops::transpose(&self.t, -2, -1)).map(wrap)
    }
    fn unsqueeze(&self, dim: i64) -> PyResult<PyTensor> {
        guarded(|| ops::unsqueeze(&self.t, dim)).map(wrap)
    }
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let dims = dims_arg(dim)?;
        guarded(|| ops::squeeze(&self.t, dims.as_deref())).map(wrap)
    }
    #[pyo3(signature = (*sizes))]
    fn expand(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        {
            let s = shape_args(sizes)?;
            guarded(|| ops::expand(&self.t, &s)).map(wrap)
        }
    }
    fn expand_as(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let s: Vec<i64> = other.t.shape().iter().map(|&d| d as i64).collect();
        guarded(|| ops::expand(&self.t, &s)).map(wrap)
    }
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, start_dim: i64, end_dim: i64) -> PyResult<PyTensor> {
        guarded(|| ops::flatten(&self.t, start_dim, end_dim)).map(wrap)
    }
    fn narrow(&self, dim: i64, start: i64, length: i64) -> PyResult<PyTensor> {
        guarded(|| ops::narrow(&self.t, dim, start, length)).map(wrap)
    }
    fn select(&self, dim: i64, index: i64) -> PyResult<PyTensor> {
        guarded(|| ops::select(&self.t, dim, index)).map(wrap)
    }
    fn _split_sizes(
        &self,
        sizes: Vec<usize>,
        dim: i64,
        with_sizes: bool,
    ) -> PyResult<Vec<PyTensor>> {
        let name = if with_sizes {
            "SplitWithSizesBackward0"
        } else {
            "SplitBackward0"
        };
        Ok(guarded(|| ops::split(&self.t, &sizes, dim, name))?
            .into_iter()
            .map(wrap)
            .collect())
    }
    #[pyo3(signature = (dim=0))]
    fn _unbind(&self, dim: i64) -> PyResult<Vec<PyTensor>> {
        Ok(guarded(|| ops::unbind(&self.t, dim))?
            .into_iter()
            .map(wrap)
            .collect())
    }
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumsum(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dt = dtype_arg(dtype)?;
        let t = self.t.clone();
        run(py, Work::elems([&t]), move || ops::cumsum(&t, dim, dt)).map(wrap)
    }
    fn gather(&self, py: Python<'_>, dim: i64, index: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (t, i) = (self.t.clone(), index.t.clone());
        run(py, Work::elems([&t, &i]), move || ops::gather(&t, dim, &i)).map(wrap)
    }
    fn scatter_add(
        &self,
        py: Python<'_>,
        dim: i64,
        index: PyRef<'_, PyTensor>,
        src: PyRef<'_, PyTensor>,
    ) -> PyResult<PyTensor> {
        let (t, i, s) = (self.t.clone(), index.t.clone(), src.t.clone());
        run(py, Work::elems([&t, &i]), move || {
            ops::scatter_add(&t, dim, &i, &s)
        })
        .map(wrap)
    }
    fn index_select(
        &self,
        py: Python<'_>,
        dim: i64,
        index: PyRef<'_, PyTensor>,
    ) -> PyResult<PyTensor> {
        let (t, i) = (self.t.clone(), index.t.clone());
        run(py, Work::elems([&t, &i]), move || {
            ops::index_select(&t, dim, &i)
        })
        .map(wrap)
    }
    fn index_add(
        &self,
        py: Python<'_>,
        dim: i64,
        index: PyRef<'_, PyTensor>,
        source: PyRef<'_, PyTensor>,
    ) -> PyResult<PyTensor> {
        let (t, i, s) = (self.t.clone(), index.t.clone(), source.t.clone());
        run(py, Work::elems([&t, &i]), move || {
            ops::index_add(&t, dim, &i, &s)
        })
        .map(wrap)
    }
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let idx = parse_index(&self.t, key)?;
        let t = self.t.clone();
        let work = if idx.advanced.is_some() {
            Work::elems([&t])
        } else {
            Work::LIGHT
        };
        run(py, work, move || idx.get(&t)).map(wrap)
    }
    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let idx = parse_index(&self.t, key)?;
        let v = match operand(value) {
            Some(v) => v,
            None => {
                let t = py.import("ferrograd")?.getattr("tensor")?.call1((value,))?;
                Operand::T(t.cast::<PyTensor>()?.get().t.clone())
            }
        };
        let t = self.t.clone();
        run(py, Work::LIGHT, move || ops::setitem(&t, &idx, &v))
    }
}

fn inplace<'py>(
    slf: &Bound<'py, PyTensor>,
    op: BinOp,
    o: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTensor>> {
    let other = other_operand(o)?;
    let t = slf.get().t.clone();
    let work = operand_work(&[&Operand::T(t.clone()), &other]);
    run(slf.py(), work, move || ops::binary_inplace(op, &t, &other))?;
    Ok(slf.clone())
}

/// A tensor from a Python object that must be a Tensor.
pub fn extract_tensor(o: &Bound<'_, PyAny>, what: &str) -> PyResult<Tensor> {
    tensor_arg(o, what)
}

pub fn node_ref_of(t: &Tensor) -> Option<NodeRef> {
    t.grad_fn()
}
