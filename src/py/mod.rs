//! All PyO3 code: the `ferrograd._core` module.

pub mod activation;
pub mod breadth;
pub mod convert;
pub mod counts;
pub mod errors;
pub mod hooks;
pub mod linalg;
pub mod nn;
pub mod node;
pub mod op_args;
pub mod optim;
pub mod random;
pub mod rearrange;
pub mod registry;
pub mod sampling;
pub mod scans;
pub mod slot;
pub mod special;
pub mod tensor;

use crate::autograd::engine::{run_backward, BackwardOptions};
use crate::creation;
use crate::dtype::{DType, Scalar};
use crate::ops;
use crate::storage::{Elem, Storage, U8};
use crate::tensor::Tensor;
use convert::{operand, required_dtype, PyDType};
use errors::{run, Work};
use numpy::{PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::ptr::NonNull;
use std::sync::Arc;
use tensor::PyTensor;

fn tensors(v: &[PyRef<'_, PyTensor>]) -> Vec<Tensor> {
    v.iter().map(|t| t.t.clone()).collect()
}

fn copy_array<T: Elem + numpy::Element>(a: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let ro: PyReadonlyArrayDyn<'_, T> = a.extract()?;
    let shape = ro.shape().to_vec();
    let v: Vec<T> = match ro.as_slice() {
        Ok(s) => s.to_vec(),
        Err(_) => ro.as_array().iter().copied().collect(),
    };
    Ok(Tensor::from_vec(v, shape)?)
}

/// A copy of a numpy array (float32, float64, int64 or bool) as a new tensor.
#[pyfunction]
fn _from_array(a: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let kind: String = a.getattr("dtype")?.getattr("str")?.extract()?;
    let t = match kind.as_str() {
        "<f4" => copy_array::<f32>(a)?,
        "<f8" => copy_array::<f64>(a)?,
        "<i8" => copy_array::<i64>(a)?,
        "<i4" => copy_array::<i32>(a)?,
        "<i2" => copy_array::<i16>(a)?,
        "|i1" => copy_array::<i8>(a)?,
        "<f2" => copy_array::<half::f16>(a)?,
        "|u1" => {
            let ro: PyReadonlyArrayDyn<'_, u8> = a.extract()?;
            let shape = ro.shape().to_vec();
            let v: Vec<U8> = ro.as_array().iter().map(|&b| U8(b)).collect();
            Tensor::from_vec(v, shape)?
        }
        "|b1" => {
            // numpy's bools may hold any non-zero byte (views of other data): stored as 0 / 1
            let u8s = a.call_method1("view", ("uint8",))?;
            let t = copy_array::<u8>(&u8s)?;
            t.storage().write::<u8>().iter_mut().for_each(|b| *b = (*b != 0) as u8);
            Tensor::from_parts(t.storage().clone(), t.layout().clone(), DType::Bool)
        }
        other => {
            return Err(PyTypeError::new_err(format!(
                "can't convert np.ndarray of type {other}; ferrograd supports float64, float32, float16, int64, int32, int16, int8, uint8 and bool"
            )))
        }
    };
    Ok(PyTensor::new(t))
}

/// A tensor over memory owned by `owner` (`from_numpy`): `ptr` and the element `strides` come
/// from the array's `__array_interface__`, checked by the Python caller.
#[pyfunction]
fn _from_ptr(
    ptr: usize,
    len: usize,
    dtype: &Bound<'_, PyAny>,
    shape: Vec<usize>,
    strides: Vec<usize>,
    owner: Py<PyAny>,
) -> PyResult<PyTensor> {
    let dtype = required_dtype(dtype)?;
    let Some(nn) = NonNull::new(ptr as *mut u8) else {
        return Err(PyValueError::new_err("null data pointer"));
    };
    if !ptr.is_multiple_of(dtype.size()) {
        return Err(PyValueError::new_err("misaligned numpy array"));
    }
    let span = shape
        .iter()
        .zip(&strides)
        .map(|(&d, &s)| d.saturating_sub(1) * s)
        .sum::<usize>()
        + 1;
    if shape.iter().all(|&d| d > 0) && span > len {
        return Err(PyValueError::new_err("array strides exceed its buffer"));
    }
    // SAFETY: `ptr` is the data pointer of the numpy array `owner`, whose buffer holds `len`
    // elements of `dtype` (len = nbytes / itemsize, computed by the caller from the array's
    // interface) and is properly aligned (checked above). `owner` keeps the array, hence the
    // buffer, alive for the storage's lifetime; numpy never moves an array's data.
    let storage = unsafe { Storage::from_external(nn, len, dtype, Box::new(owner)) };
    let layout = crate::layout::Layout {
        shape,
        strides,
        offset: 0,
    };
    Ok(PyTensor::new(Tensor::from_parts(
        Arc::new(storage),
        layout,
        dtype,
    )))
}

#[pyfunction]
fn _full(
    shape: Vec<usize>,
    value: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let d = required_dtype(dtype)?;
    let v = convert::scalar_of(value)
        .ok_or_else(|| PyTypeError::new_err("fill value must be a number"))?;
    errors::guarded(|| Tensor::full(&shape, v, d)).map(PyTensor::new)
}

#[pyfunction]
fn _arange(start: f64, end: f64, step: f64, dtype: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let d = required_dtype(dtype)?;
    errors::guarded(|| creation::arange(start, end, step, d)).map(PyTensor::new)
}

#[pyfunction]
fn _linspace(start: f64, end: f64, steps: i64, dtype: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let d = required_dtype(dtype)?;
    errors::guarded(|| creation::linspace(start, end, steps, d)).map(PyTensor::new)
}

#[pyfunction]
fn _tri_indices(row: usize, col: usize, offset: i64, upper: bool) -> PyResult<PyTensor> {
    errors::guarded(|| creation::tri_indices(row, col, offset, upper)).map(PyTensor::new)
}

#[pyfunction]
fn _eye(n: usize, m: usize, dtype: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let d = required_dtype(dtype)?;
    errors::guarded(|| creation::eye(n, m, d)).map(PyTensor::new)
}

/// `bias + mat1 @ mat2` in one gemm (PyTorch's addmm with beta = alpha = 1).
#[pyfunction]
fn _addmm(
    py: Python<'_>,
    bias: PyRef<'_, PyTensor>,
    mat1: PyRef<'_, PyTensor>,
    mat2: PyRef<'_, PyTensor>,
) -> PyResult<PyTensor> {
    let (c, a, b) = (bias.t.clone(), mat1.t.clone(), mat2.t.clone());
    run(py, Work::elems([&a, &b]), move || ops::addmm(&c, &a, &b)).map(PyTensor::new)
}

/// `torch.promote_types`.
#[pyfunction]
fn promote_types(type1: &Bound<'_, PyAny>, type2: &Bound<'_, PyAny>) -> PyResult<Py<PyDType>> {
    let d = DType::promote(required_dtype(type1)?, required_dtype(type2)?);
    convert::dtype_object(type1.py(), d)
}

/// `torch.can_cast`: whether PyTorch's casting rules allow `from_` -> `to` (never to a lower
/// category: floating -> integer or bool, integer -> bool).
#[pyfunction]
fn can_cast(from_: &Bound<'_, PyAny>, to: &Bound<'_, PyAny>) -> PyResult<bool> {
    let category = |d: DType| {
        if d.is_float() {
            2
        } else if d == DType::Bool {
            0
        } else {
            1
        }
    };
    Ok(category(required_dtype(from_)?) <= category(required_dtype(to)?))
}

/// `torch.result_type(tensor1, tensor2)`: the dtype an arithmetic op of the two would give.
#[pyfunction]
fn result_type(tensor1: &Bound<'_, PyAny>, tensor2: &Bound<'_, PyAny>) -> PyResult<Py<PyDType>> {
    let arg = |o: &Bound<'_, PyAny>, name: &str| {
        operand(o).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "result_type(): argument '{name}' must be Tensor or Number, not {}",
                o.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })
    };
    let (a, b) = (arg(tensor1, "tensor1")?, arg(tensor2, "tensor2")?);
    convert::dtype_object(tensor1.py(), ops::binary::result_type(&[&a, &b]))
}

#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
fn cat(py: Python<'_>, tensors: Vec<PyRef<'_, PyTensor>>, dim: i64) -> PyResult<PyTensor> {
    let ts = self::tensors(&tensors);
    run(py, Work::elems(&ts), move || ops::cat(&ts, dim)).map(PyTensor::new)
}

#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
fn stack(py: Python<'_>, tensors: Vec<PyRef<'_, PyTensor>>, dim: i64) -> PyResult<PyTensor> {
    let ts = self::tensors(&tensors);
    run(py, Work::elems(&ts), move || ops::stack(&ts, dim)).map(PyTensor::new)
}

#[pyfunction]
#[pyo3(name = "where")]
fn where_(
    py: Python<'_>,
    condition: PyRef<'_, PyTensor>,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let c = condition.t.clone();
    let a = operand(input)
        .ok_or_else(|| PyTypeError::new_err("where(): input must be a Tensor or a number"))?;
    let b = operand(other)
        .ok_or_else(|| PyTypeError::new_err("where(): other must be a Tensor or a number"))?;
    let work = Work::elems([&c].into_iter().chain(a.tensor()).chain(b.tensor()));
    run(py, work, move || ops::where_op(&c, &a, &b)).map(PyTensor::new)
}

#[pyfunction]
fn is_grad_enabled() -> bool {
    crate::autograd::is_grad_enabled()
}

#[pyfunction]
fn _set_grad_enabled(mode: bool) {
    crate::autograd::set_grad_enabled(mode);
}

/// `torch.set_default_dtype` in the core: the dtype of Python floats in arithmetic and of
/// int -> float results (the Python side checks `dtype` is floating and keeps its own copy).
#[pyfunction]
fn _set_default_dtype(dtype: PyRef<'_, PyDType>) {
    crate::dtype::DType::set_default_float(dtype.0);
}

/// Sets this thread's CPU autocast dtype (None: autocast off).
#[pyfunction]
fn _set_autocast(dtype: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    ops::autocast::set(convert::dtype_arg(dtype)?);
    Ok(())
}

/// This thread's CPU autocast dtype, None outside autocast regions.
#[pyfunction]
fn _get_autocast(py: Python<'_>) -> PyResult<Option<Py<PyDType>>> {
    ops::autocast::dtype()
        .map(|d| convert::dtype_object(py, d))
        .transpose()
}

/// Raises OutOfMemoryError for `bytes` the machine cannot hold (for Python code about to make
/// that many objects).
#[pyfunction]
fn _check_fits(bytes: usize) -> PyResult<()> {
    errors::guarded(|| crate::storage::check_fits(bytes))
}

#[pyfunction]
fn _live_nodes() -> usize {
    crate::autograd::graph::live_nodes()
}

thread_local! {
    /// Backward passes running on this thread's native stack (nested through Python backwards
    /// calling `autograd.grad`).
    static STACKED_BACKWARDS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Nested backwards run on one thread's stack up to this depth (each level is a few KB of
/// engine and interpreter frames: the 8 MB main stack overflowed between 1,500 and 2,000).
const MAX_STACKED_BACKWARDS: usize = 48;
/// Stack of a thread that continues a deep nesting.
const NESTED_STACK_BYTES: usize = 16 << 20;

struct StackDepth(usize);

impl StackDepth {
    fn enter(depth: usize) -> StackDepth {
        STACKED_BACKWARDS.with(|d| d.set(depth + 1));
        StackDepth(depth)
    }
}

impl Drop for StackDepth {
    fn drop(&mut self) {
        STACKED_BACKWARDS.with(|d| d.set(self.0));
    }
}

/// Runs a backward on this thread, or, when `MAX_STACKED_BACKWARDS` are already nested on its
/// stack, on a new thread with a stack of known size that takes over this thread's autograd
/// state (as PyTorch's engine hands reentrant backwards past depth 60 to another thread), so
/// nesting is bounded by memory, not by the native stack. What the backward leaves in
/// thread-locals (a Python exception, a deferred error, anomaly mode's failed node) comes back
/// with its result.
fn on_bounded_stack<T: Send>(f: impl FnOnce() -> crate::Result<T> + Send) -> crate::Result<T> {
    let depth = STACKED_BACKWARDS.with(|d| d.get());
    if depth < MAX_STACKED_BACKWARDS {
        let _depth = StackDepth::enter(depth);
        return f();
    }
    let state = crate::autograd::engine::ThreadState::capture();
    let spawned = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("ferrograd-nested-backward".into())
            .stack_size(NESTED_STACK_BYTES)
            .spawn_scoped(s, move || {
                state.install();
                let _depth = StackDepth::enter(0);
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
                (
                    r,
                    errors::take_pending(),
                    crate::error::take_deferred_error(),
                    crate::autograd::hooks::take_failed_node(),
                )
            })
            .map(|h| h.join())
    });
    let (r, pending, deferred, failed) = match spawned {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(payload)) => std::panic::resume_unwind(payload),
        Err(e) => {
            return Err(crate::Error::Runtime(format!(
                "could not start a thread for a backward nested {depth} levels deep: {e}"
            )))
        }
    };
    if let Some(e) = pending {
        errors::restore_pending(e);
    }
    if let Some(e) = deferred {
        crate::error::defer_error(e);
    }
    if let Some((name, trace)) = failed {
        crate::autograd::hooks::set_failed_node(name, trace);
    }
    r.unwrap_or_else(|payload| std::panic::resume_unwind(payload))
}

/// `forward_ad.enter_dual_level()`: opens the (single) dual level.
#[pyfunction]
fn _enter_dual_level() -> PyResult<i64> {
    Ok(crate::autograd::forward::enter_level()?)
}

/// `forward_ad.exit_dual_level()`: drops every tangent given in the level.
#[pyfunction]
fn _exit_dual_level() {
    crate::autograd::forward::exit_level()
}

/// `forward_ad.make_dual(tensor, tangent)`: a view of `tensor` carrying `tangent` (both keep
/// their Python objects: `dual._base is tensor`, `unpack_dual(dual).tangent is tangent`).
#[pyfunction]
fn _make_dual(tensor: &Bound<'_, PyTensor>, tangent: &Bound<'_, PyTensor>) -> PyResult<PyTensor> {
    let (t, tg) = (tensor.get().t.clone(), tangent.get().t.clone());
    if t.shape() != tg.shape() {
        return Err(crate::error::Error::Runtime(format!(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size {} while the given forward gradient is of size {}.",
            crate::layout::fmt_list(t.shape()),
            crate::layout::fmt_list(tg.shape())
        ))
        .into());
    }
    tensor::register_pyobj(tensor)?;
    tensor::register_pyobj(tangent)?;
    let dual = primal_view(&t)?;
    crate::autograd::forward::set_tangent(&dual, Some(tg));
    Ok(PyTensor::new(dual))
}

/// `forward_ad.unpack_dual(tensor)` inside a level: a view of the primal (without tangent) and
/// the tangent, None when `tensor` has none.
#[pyfunction]
fn _unpack_dual<'py>(
    tensor: &Bound<'py, PyTensor>,
) -> PyResult<(PyTensor, Option<Bound<'py, PyAny>>)> {
    Ok((
        PyTensor::new(primal_view(&tensor.get().t)?),
        _tangent(tensor)?,
    ))
}

/// The tangent of `t` (None outside a level or without one), with no primal view made: for the
/// checks of the Python layer and the printed `tangent=`.
#[pyfunction]
fn _tangent<'py>(t: &Bound<'py, PyTensor>) -> PyResult<Option<Bound<'py, PyAny>>> {
    crate::autograd::forward::tangent(&t.get().t)
        .map(|g| tensor::wrap_cached(t.py(), g))
        .transpose()
}

/// Gives `t` the tangent a custom Function's `jvp` computed for it.
#[pyfunction]
fn _set_tangent(t: PyRef<'_, PyTensor>, tangent: Option<PyRef<'_, PyTensor>>) {
    crate::autograd::forward::set_tangent(&t.t, tangent.map(|g| g.t.clone()));
}

/// Turns forward-mode tangent propagation off (or back on) for this thread; returns the previous
/// state (for the jvp of ferrograd's own Python Functions).
#[pyfunction]
fn _set_forward_ad_suspended(on: bool) -> bool {
    crate::autograd::forward::set_suspended(on)
}

/// A view of `t` with `t`'s reverse-mode history and no tangent.
fn primal_view(t: &Tensor) -> crate::error::Result<Tensor> {
    let shape: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
    crate::autograd::forward::suspended(|| crate::ops::shape::view(t, &shape))
}

/// The engine entry point behind `backward()` and `autograd.grad()`; runs without the GIL.
#[pyfunction]
#[pyo3(signature = (roots, grads, keep_graph, create_graph, inputs=None, accumulate=true, allow_unused=false))]
#[allow(clippy::too_many_arguments)]
fn _run_backward(
    py: Python<'_>,
    roots: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    keep_graph: bool,
    create_graph: bool,
    inputs: Option<Vec<PyRef<'_, PyTensor>>>,
    accumulate: bool,
    allow_unused: bool,
) -> PyResult<Vec<Option<PyTensor>>> {
    let roots = tensors(&roots);
    let grads = tensors(&grads);
    let inputs = inputs.map(|v| tensors(&v));
    let opts = BackwardOptions {
        keep_graph,
        create_graph,
        inputs,
        accumulate,
        allow_unused,
    };
    let out = run(py, Work::ENGINE, move || {
        on_bounded_stack(move || run_backward(&roots, grads, opts))
    })
    .inspect_err(|_| {
        if crate::autograd::hooks::anomaly_enabled() {
            hooks::report_anomaly(py);
        }
    })?;
    Ok(out.into_iter().map(|o| o.map(PyTensor::new)).collect())
}

/// `torch.set_num_threads`.
#[pyfunction]
fn set_num_threads(n: i64) -> PyResult<()> {
    if n <= 0 {
        return Err(PyRuntimeError::new_err(
            "set_num_threads expects a positive integer",
        ));
    }
    crate::kernels::set_num_threads(n as usize);
    Ok(())
}

/// `torch.get_num_threads`.
#[pyfunction]
fn get_num_threads() -> usize {
    crate::kernels::num_threads()
}

/// The instruction set the kernels run ("avx512", "avx2" or "base"): the best the CPU has,
/// or less when `FERROGRAD_SIMD` asks for it (the tests run every path so).
#[pyfunction]
fn _simd_level() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::kernels::simd::x86::{level, Level};
        match level() {
            Level::Avx512 => "avx512",
            Level::Avx2 => "avx2",
            Level::Base => "base",
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    "base"
}

#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::tune_allocator();
    crate::fork::install();
    m.add_class::<PyTensor>()?;
    m.add("OutOfMemoryError", errors::out_of_memory_error(m.py())?)?;
    m.add_class::<PyDType>()?;
    m.add_class::<node::PyNodeHandle>()?;
    random::register(m)?;
    sampling::register(m)?;
    optim::register(m)?;
    nn::register(m)?;
    activation::register(m)?;
    hooks::register(m)?;
    rearrange::register(m)?;
    scans::register(m)?;
    breadth::register(m)?;
    linalg::register(m)?;
    counts::register(m)?;
    special::register(m)?;
    for d in DType::ALL {
        m.add(
            d.torch_name().trim_start_matches("torch."),
            convert::dtype_object(m.py(), d)?,
        )?;
    }
    m.add_function(wrap_pyfunction!(promote_types, m)?)?;
    m.add_function(wrap_pyfunction!(_addmm, m)?)?;
    m.add_function(wrap_pyfunction!(can_cast, m)?)?;
    m.add_function(wrap_pyfunction!(result_type, m)?)?;
    m.add_function(wrap_pyfunction!(_from_array, m)?)?;
    m.add_function(wrap_pyfunction!(_from_ptr, m)?)?;
    m.add_function(wrap_pyfunction!(_full, m)?)?;
    m.add_function(wrap_pyfunction!(_arange, m)?)?;
    m.add_function(wrap_pyfunction!(_tri_indices, m)?)?;
    m.add_function(wrap_pyfunction!(_linspace, m)?)?;
    m.add_function(wrap_pyfunction!(_eye, m)?)?;
    m.add_function(wrap_pyfunction!(cat, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_simd_level, m)?)?;
    m.add_function(wrap_pyfunction!(stack, m)?)?;
    m.add_function(wrap_pyfunction!(where_, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_autocast, m)?)?;
    m.add_function(wrap_pyfunction!(_get_autocast, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(_live_nodes, m)?)?;
    m.add_function(wrap_pyfunction!(_check_fits, m)?)?;
    m.add_function(wrap_pyfunction!(_run_backward, m)?)?;
    m.add_function(wrap_pyfunction!(_enter_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_exit_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_make_dual, m)?)?;
    m.add_function(wrap_pyfunction!(_unpack_dual, m)?)?;
    m.add_function(wrap_pyfunction!(_set_tangent, m)?)?;
    m.add_function(wrap_pyfunction!(_tangent, m)?)?;
    m.add_function(wrap_pyfunction!(_set_forward_ad_suspended, m)?)?;
    registry::register(m)?;
    op_args::register(m)?;
    m.add_function(wrap_pyfunction!(node::_record_function, m)?)?;
    m.add_function(wrap_pyfunction!(node::_saved_tensors, m)?)?;
    let _ = Scalar::Int(0);
    Ok(())
}
