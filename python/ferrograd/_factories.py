"""Tensor factories: ``tensor``, ``from_numpy``, ``zeros``, ``arange``, ``randn``, ... .

``device=`` and ``out=`` are accepted for PyTorch compatibility; only the CPU exists.
"""

import warnings

import numpy as np

from . import _core, _dtype
from ._core import Tensor, bfloat16, bool as bool_, int64
from ._device import device as _device
from ._dtype import _DTYPE_TO_NP, _NP_TO_DTYPE


def _check_requires_grad(t, requires_grad):
    if requires_grad:
        if not t.is_floating_point():
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    return t


_NP_SUPPORTED = "float64, float32, float16, int64, int32, int16, int8, uint8, and bool."


def _infer_dtype(data, arr):
    """The dtype of ``tensor(data)``, ``arr`` being ``np.asarray(data)``."""
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        d = _NP_TO_DTYPE.get(arr.dtype.name)
        if d is None:
            raise TypeError(
                f"can't convert np.ndarray of type numpy.{arr.dtype.name}. The only supported "
                "types are: " + _NP_SUPPORTED
            )
        return d
    k = arr.dtype.kind
    if k == "f":
        return _dtype._default_dtype
    if k in "iu":
        return int64
    if k == "b":
        return bool_
    if arr.size == 0:
        return _dtype._default_dtype
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (numbers, nested lists, numpy arrays)."""
    if device is not None:
        _device(device)  # raises for anything but the CPU
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
            "or sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
        t = data.detach().clone()
        if dtype is not None:
            t = t.to(dtype)
        return _check_requires_grad(t, requires_grad)
    try:
        arr = np.asarray(data)
    except (ValueError, TypeError) as e:
        raise ValueError(f"could not convert {type(data).__name__} to a tensor: {e}") from None
    if arr.dtype == object:
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
        # Python ints past int64 (numpy made them uint64): PyTorch refuses them
        raise ValueError("Overflow when unpacking long long")
    target = dtype if dtype is not None else _infer_dtype(data, arr)
    if target is bfloat16:  # numpy has no bfloat16: rounded from float32
        t = _core._from_array(arr.astype(np.float32, order="C", copy=False)).to(bfloat16)
    else:
        t = _core._from_array(arr.astype(_DTYPE_TO_NP[target], order="C", copy=False))
    return _check_requires_grad(t, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """``data`` itself if it is a tensor (of ``dtype``), a tensor sharing a numpy array's
    memory where it can, else a copy as ``tensor(data)``."""
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray):
        _warn_if_not_writable(data)  # (PyTorch warns even when dtype makes it copy)
        if dtype is None and data.dtype.name in _NP_TO_DTYPE:
            return _from_numpy(data)
    return tensor(data, dtype=dtype)


_NOT_WRITABLE = (
    "The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
    "This means writing to this tensor will result in undefined behavior. You may want to copy the "
    "array to protect its data or make it writable before converting it to a tensor. This type of "
    "warning will be suppressed for the rest of this program."
)
_not_writable_warned = False  # from_numpy's warn-once flag


def _warn_if_not_writable(a):
    """PyTorch's TORCH_WARN_ONCE: the first read-only array of the process warns, even if that
    warning is then filtered out or raised; no later one does (until ``_not_writable_warned`` is
    set back to False)."""
    global _not_writable_warned
    if not a.flags.writeable and not _not_writable_warned:
        _not_writable_warned = True
        warnings.warn(_NOT_WRITABLE, UserWarning, stacklevel=3)  # at from_numpy's caller


def from_numpy(a):
    """A tensor sharing memory with the numpy array ``a``."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    _warn_if_not_writable(a)
    return _from_numpy(a)


def _from_numpy(a):
    d = _NP_TO_DTYPE.get(a.dtype.name)
    if d is None or not a.dtype.isnative:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{a.dtype.name}. The only supported types are: "
            + _NP_SUPPORTED
        )
    size = a.itemsize
    if any(s < 0 for s in a.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative "
            "strides are not currently supported. (You can probably work around this by making a "
            "copy of your array  with array.copy().) "
        )
    if any(s % size for s in a.strides) or a.ctypes.data % size:
        return tensor(a)
    strides = [s // size for s in a.strides]
    span = 1 + sum((n - 1) * s for n, s in zip(a.shape, strides)) if a.size else 0
    if a.size == 0:
        return tensor(a)
    return _core._from_ptr(a.ctypes.data, span, d, list(a.shape), strides, a)


def _rebuild_tensor(arr, requires_grad):
    """Unpickles a tensor (``Tensor.__reduce_ex__``)."""
    return tensor(arr, requires_grad=requires_grad)


# pickles keep naming it ``ferrograd._rebuild_tensor`` (the package re-exports it), as before
# it moved here: pickles made by either version load in the other
_rebuild_tensor.__module__ = "ferrograd"


def _size_args(size):
    """The size of ``zeros(2, 3)`` / ``zeros((2, 3))`` as a list of ints."""
    if len(size) == 1 and not isinstance(size[0], int):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, int) and not (isinstance(s, Tensor) and s.numel() == 1):
            raise TypeError(
                f"zeros(): argument 'size' must be tuple of ints, but found element of type "
                f"{type(s).__name__}"
            )
    size = [int(s) for s in size]
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {size}")
    return size


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None):
    if dtype is None:
        if isinstance(fill_value, bool):
            dtype = bool_
        elif isinstance(fill_value, int):
            dtype = int64
        else:
            dtype = _dtype._default_dtype
    t = _core._full(_size_args((size,) if isinstance(size, int) else tuple(size)), fill_value, dtype)
    return _check_requires_grad(t, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None):
    t = _core._full(_size_args(size), 0, dtype or _dtype._default_dtype)
    return _check_requires_grad(t, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None):
    t = _core._full(_size_args(size), 1, dtype or _dtype._default_dtype)
    return _check_requires_grad(t, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, memory_format=None):
    """Zeros (the memory is always initialised)."""
    return zeros(*size, dtype=dtype, requires_grad=requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return zeros(tuple(input.shape), dtype=dtype or input.dtype, requires_grad=requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return ones(tuple(input.shape), dtype=dtype or input.dtype, requires_grad=requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return zeros_like(input, dtype=dtype, requires_grad=requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return full(tuple(input.shape), fill_value, dtype=dtype or input.dtype, requires_grad=requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    if end is None:
        start, end = 0, start
    vals = [start, end, step]
    if dtype is None:
        is_float = any(
            isinstance(v, float) or (isinstance(v, Tensor) and v.is_floating_point()) for v in vals
        )
        dtype = _dtype._default_dtype if is_float else int64
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in vals)
    t = _core._arange(float(start), float(end), float(step), dtype)
    return _check_requires_grad(t, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None):
    t = _core._linspace(float(start), float(end), int(steps), dtype or _dtype._default_dtype)
    return _check_requires_grad(t, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None):
    t = _core._eye(n, n if m is None else m, dtype or _dtype._default_dtype)
    return _check_requires_grad(t, requires_grad)


# random factories


def _random(kind, size, a, b, dtype, requires_grad, generator):
    t = _core._random(_size_args(size), kind, a, b, dtype, generator)
    return _check_requires_grad(t, requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Uniform on [0, 1)."""
    return _random("uniform", size, 0.0, 1.0, dtype or _dtype._default_dtype, requires_grad, generator)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Standard normal."""
    return _random("normal", size, 0.0, 1.0, dtype or _dtype._default_dtype, requires_grad, generator)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False, out=None):
    """Integers in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``."""
    if size is None:
        low, high, size = 0, low, high
    return _random("randint", tuple(size), float(low), float(high),
                   dtype or int64, requires_grad, generator)


def rand_like(input, *, dtype=None, requires_grad=False, **kw):
    return rand(tuple(input.shape), dtype=dtype or input.dtype, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, requires_grad=False, **kw):
    return randn(tuple(input.shape), dtype=dtype or input.dtype, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, **kw):
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, **kw):
    """A random permutation of ``0 .. n-1``."""
    return _check_requires_grad(_core._randperm(n, dtype or int64, generator), requires_grad)
