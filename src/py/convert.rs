//! Conversions between Python objects and core types: dtypes, numbers, dims, shapes, indexes.

use super::errors::guarded;
use super::tensor::PyTensor;
use crate::dtype::{DType, Scalar};
use crate::ops::index::{nonzero_split, IndexStep, ParsedIndex};
use crate::ops::shape::Region;
use crate::ops::Operand;
use crate::tensor::Tensor;
use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyFloat, PyInt, PyList, PySlice, PyTuple};

/// `ferrograd.float32` and friends.
#[pyclass(
    name = "dtype",
    module = "ferrograd",
    frozen,
    eq,
    hash,
    skip_from_py_object
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType(pub DType);

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> &'static str {
        self.0.torch_name()
    }
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.0.is_float()
    }
    #[getter]
    fn is_complex(&self) -> bool {
        false
    }
    #[getter]
    fn is_signed(&self) -> bool {
        self.0.is_signed()
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.0.size()
    }
    /// Pickles as the module attribute of that name (`ferrograd.float32`).
    fn __reduce__(&self) -> &'static str {
        self.0.torch_name().trim_start_matches("torch.")
    }
}

/// The one Python object of each dtype, so `x.dtype is torch.float32` holds as in PyTorch.
pub fn dtype_object(py: Python<'_>, d: DType) -> PyResult<Py<PyDType>> {
    static OBJECTS: pyo3::sync::PyOnceLock<Vec<Py<PyDType>>> = pyo3::sync::PyOnceLock::new();
    let all = OBJECTS.get_or_try_init(py, || {
        DType::ALL
            .iter()
            .map(|&d| Py::new(py, PyDType(d)))
            .collect::<PyResult<Vec<_>>>()
    })?;
    let i = DType::ALL.iter().position(|&x| x == d).unwrap_or(0);
    Ok(all[i].clone_ref(py))
}

pub fn dtype_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => {
            if let Ok(d) = o.cast::<PyDType>() {
                return Ok(Some(d.get().0));
            }
            // Python builtins, as PyTorch accepts them
            let py = o.py();
            if o.is(py.get_type::<PyFloat>()) {
                return Ok(Some(DType::F64));
            }
            if o.is(py.get_type::<PyBool>()) {
                return Ok(Some(DType::Bool));
            }
            if o.is(py.get_type::<PyInt>()) {
                return Ok(Some(DType::I64));
            }
            Err(PyTypeError::new_err(format!(
                "dtype must be a ferrograd dtype, got {}",
                o.repr()?
            )))
        }
    }
}

/// A dtype argument that may not be None.
pub fn required_dtype(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    dtype_arg(Some(obj))?.ok_or_else(|| PyTypeError::new_err("expected a dtype, got None"))
}

/// A Python number as a Scalar (bool before int: bool is an int subclass).
pub fn scalar_of(o: &Bound<'_, PyAny>) -> Option<Scalar> {
    if let Ok(b) = o.cast::<PyBool>() {
        return Some(Scalar::Bool(b.is_true()));
    }
    if o.is_instance_of::<PyInt>() {
        return o.extract::<i64>().ok().map(Scalar::Int);
    }
    if o.is_instance_of::<PyFloat>() {
        return o.extract::<f64>().ok().map(Scalar::Float);
    }
    // numpy scalars and other number-likes
    let name = o.get_type().name().ok()?.to_string();
    if name.starts_with("bool") {
        return o.is_truthy().ok().map(Scalar::Bool);
    }
    if name.starts_with("int") || name.starts_with("uint") {
        return o.extract::<i64>().ok().map(Scalar::Int);
    }
    if name.starts_with("float") {
        return o.extract::<f64>().ok().map(Scalar::Float);
    }
    None
}

pub fn operand(o: &Bound<'_, PyAny>) -> Option<Operand> {
    if let Ok(t) = o.cast::<PyTensor>() {
        return Some(Operand::T(t.get().t.clone()));
    }
    scalar_of(o).map(Operand::S)
}

/// `dim` given as an int, a tuple/list of ints, or None.
pub fn dims_arg(o: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match o {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => {
            if let Ok(d) = o.extract::<i64>() {
                return Ok(Some(vec![d]));
            }
            Ok(Some(o.extract::<Vec<i64>>()?))
        }
    }
}

/// A shape given as varargs (`view(2, 3)`) or as one sequence (`view((2, 3))`).
pub fn shape_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    if args.len() == 1 {
        let a = args.get_item(0)?;
        if let Ok(v) = a.extract::<Vec<i64>>() {
            return Ok(v);
        }
    }
    args.iter().map(|a| a.extract::<i64>()).collect()
}

pub fn usize_shape(v: &[i64]) -> PyResult<Vec<usize>> {
    v.iter()
        .map(|&d| {
            if d < 0 {
                Err(PyValueError::new_err(format!("negative dimension {d}")))
            } else {
                Ok(d as usize)
            }
        })
        .collect()
}

fn to_tensor(o: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let m = o.py().import("ferrograd")?;
    let t = m.getattr("tensor")?.call1((o,))?;
    Ok(t.cast::<PyTensor>()?.get().t.clone())
}

/// A sequence or array used as an index, as an index tensor: bools stay a mask, anything else
/// becomes int64 (an empty sequence too), as PyTorch's `indexing_tensor_from_data`.
fn to_index_tensor(o: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let t = to_tensor(o)?;
    if t.dtype().is_float() {
        return Ok(crate::ops::to_dtype(&t.detach(), DType::I64)?);
    }
    Ok(t)
}

/// `PySequence_Check`: lists, tuples, ranges, strings, numpy arrays, ...
fn is_sequence(o: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `o` is a live object and the GIL is held (we have a `Bound`); the call only reads
    // the object's type slots.
    unsafe { pyo3::ffi::PySequence_Check(o.as_ptr()) != 0 }
}

/// PyTorch's `treatSequenceAsTuple`: a non-tuple sequence shorter than 32 that holds a tensor,
/// a sequence, a slice, `...` or None is read as a tuple of indices (`x[[[0, 1], b]]` is
/// `x[[0, 1], b]`), with PyTorch's deprecation warning. Tensors and numpy arrays never are.
fn sequence_as_tuple<'py>(key: &Bound<'py, PyAny>) -> PyResult<Option<Vec<Bound<'py, PyAny>>>> {
    let is_array = key.get_type().name().is_ok_and(|n| n == "ndarray");
    if key.cast::<PyTensor>().is_ok() || is_array || !is_sequence(key) {
        return Ok(None);
    }
    let Ok(n) = key.len() else {
        return Ok(None);
    };
    if n >= 32 {
        return Ok(None);
    }
    let mut items = Vec::with_capacity(n);
    let mut as_tuple = false;
    for i in 0..n {
        let Ok(it) = key.get_item(i) else {
            return Ok(None);
        };
        as_tuple |= it.cast::<PyTensor>().is_ok()
            || is_sequence(&it)
            || it.is_instance_of::<PySlice>()
            || it.is_none()
            || it.is_instance_of::<PyEllipsis>();
        items.push(it);
    }
    if !as_tuple {
        return Ok(None);
    }
    let py = key.py();
    PyErr::warn(
        py,
        &py.get_type::<pyo3::exceptions::PyUserWarning>(),
        c"Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error or a different result",
        1,
    )?;
    Ok(Some(items))
}

/// Parses `x[key]` into view steps plus optional advanced indices (PyTorch's applySlicing).
pub fn parse_index(t: &Tensor, key: &Bound<'_, PyAny>) -> PyResult<ParsedIndex> {
    let items: Vec<Bound<'_, PyAny>> = if let Ok(tup) = key.cast::<PyTuple>() {
        tup.iter().collect()
    } else if let Some(items) = sequence_as_tuple(key)? {
        items
    } else {
        vec![key.clone()]
    };
    // convert sequences (lists, a tuple inside the index tuple, ranges) and arrays to tensors up
    // front, as PyTorch does
    let mut conv: Vec<Bound<'_, PyAny>> = Vec::with_capacity(items.len());
    for it in items {
        if it.is_instance_of::<PyList>()
            || it.is_instance_of::<PyTuple>()
            || it.is_instance_of::<pyo3::types::PyRange>()
            || it.hasattr("__array_interface__")?
        {
            let tt = to_index_tensor(&it)?;
            conv.push(Bound::new(it.py(), PyTensor::new(tt))?.into_any());
        } else {
            conv.push(it);
        }
    }
    let consumed = |it: &Bound<'_, PyAny>| -> usize {
        if let Ok(tt) = it.cast::<PyTensor>() {
            let tt = &tt.get().t;
            if tt.dtype() == DType::Bool {
                return tt.ndim();
            }
            return 1;
        }
        if it.is_none() || it.is_instance_of::<PyEllipsis>() {
            0
        } else {
            1
        }
    };
    let used: usize = conv.iter().map(consumed).sum();
    let ndim = t.ndim();
    if used > ndim {
        if ndim == 0 && conv.iter().any(|c| c.is_instance_of::<PyInt>()) {
            return Err(PyIndexError::new_err("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"));
        }
        return Err(PyIndexError::new_err(format!(
            "too many indices for tensor of dimension {ndim}"
        )));
    }
    let mut cur: Vec<usize> = t.shape().to_vec();
    let mut steps = Vec::new();
    let mut adv: Vec<(usize, Tensor)> = Vec::new();
    let mut d = 0usize;
    let mut seen_ellipsis = false;
    for it in &conv {
        if it.is_none() {
            steps.push(IndexStep::Unsqueeze(d));
            cur.insert(d, 1);
            d += 1;
        } else if it.is_instance_of::<PyEllipsis>() {
            if seen_ellipsis {
                return Err(PyIndexError::new_err(
                    "an index can only have a single ellipsis ('...')",
                ));
            }
            seen_ellipsis = true;
            d += ndim - used;
        } else if it.is_instance_of::<PyBool>() {
            return Err(PyNotImplementedError::new_err(
                "indexing with a Python bool is not supported by ferrograd yet",
            ));
        } else if let Ok(sl) = it.cast::<PySlice>() {
            let size = cur[d];
            let ind = sl.indices(size as isize)?;
            if ind.step <= 0 {
                return Err(PyValueError::new_err("step must be greater than zero"));
            }
            let len = ind.slicelength;
            steps.push(IndexStep::Region(Region::Slice {
                dim: d,
                start: ind.start.max(0) as usize,
                len,
                step: ind.step as usize,
            }));
            cur[d] = len;
            d += 1;
        } else if let Ok(tt) = it.cast::<PyTensor>() {
            let tt = tt.get().t.clone();
            match tt.dtype() {
                DType::Bool => {
                    let m = tt.ndim();
                    for k in 0..m {
                        if tt.shape()[k] != cur[d + k] {
                            return Err(PyIndexError::new_err(format!(
                                "The shape of the mask {} at index {} does not match the shape of the indexed tensor {} at index {}",
                                crate::layout::fmt_list(tt.shape()), k, crate::layout::fmt_list(&cur), d + k
                            )));
                        }
                    }
                    if m == 0 {
                        return Err(PyNotImplementedError::new_err(
                            "indexing with a 0-dim bool tensor is not supported by ferrograd yet",
                        ));
                    }
                    for (k, col) in nonzero_split(&tt)?.into_iter().enumerate() {
                        adv.push((d + k, col));
                    }
                    d += m;
                }
                DType::I64 => {
                    adv.push((d, tt));
                    d += 1;
                }
                DType::I32 | DType::I16 | DType::I8 => {
                    adv.push((d, guarded(|| crate::ops::cast(&tt, DType::I64))?));
                    d += 1;
                }
                _ => {
                    return Err(PyIndexError::new_err(
                        "tensors used as indices must be long, int, byte or bool tensors",
                    ))
                }
            }
        } else if let Some(Scalar::Int(i)) = scalar_of(it) {
            let size = cur[d] as i64;
            let w = if i < 0 { i + size } else { i };
            if w < 0 || w >= size {
                return Err(PyIndexError::new_err(format!(
                    "index {i} is out of bounds for dimension {d} with size {size}"
                )));
            }
            steps.push(IndexStep::Region(Region::Select {
                dim: d,
                index: w as usize,
            }));
            cur.remove(d);
        } else {
            return Err(PyIndexError::new_err(format!(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got {})",
                it.get_type().name()?
            )));
        }
    }
    let advanced = if adv.is_empty() {
        None
    } else {
        let mut v: Vec<Option<Tensor>> = vec![None; cur.len()];
        for (pos, tt) in adv {
            v[pos] = Some(tt);
        }
        Some(v)
    };
    Ok(ParsedIndex { steps, advanced })
}

/// The Python type name PyTorch's argument errors print ("Tensor" for tensors).
pub(crate) fn type_name(o: &Bound<'_, PyAny>) -> String {
    if o.cast::<PyTensor>().is_ok() {
        return "Tensor".into();
    }
    o.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}
