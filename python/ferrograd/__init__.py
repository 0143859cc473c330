"""ferrograd: PyTorch's autograd API on a small, fast Rust core.

``import ferrograd as torch`` runs scripts written against PyTorch's tensor and autograd API.
"""

import builtins as _builtins
import warnings as _warnings

import numpy as _np

from . import _core
from ._core import Tensor, cat, stack, where, initial_seed, is_grad_enabled
from ._core import Generator, default_generator, set_num_threads, get_num_threads
from ._core import OutOfMemoryError
from ._core import float32, float64, int64
from ._core import bool  # noqa: A004  (ferrograd.bool is the dtype, as torch.bool)
from ._size import Size
from ._tensor import FUNCTIONS as _tensor_functions, device, install as _install
from ._tensor_str import set_printoptions

_install()

from . import autograd  # noqa: E402
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode  # noqa: E402
from ._core import is_anomaly_enabled, is_anomaly_check_nan_enabled  # noqa: E402
from .autograd.anomaly_mode import set_anomaly_enabled  # noqa: E402

dtype = type(float32)
float = float32  # noqa: A001
double = float64
long = int64
concat = cat
concatenate = cat

_DTYPES = {"float32": float32, "float64": float64, "int64": int64, "bool": bool}
_NP_TO_DTYPE = {"float32": float32, "float64": float64, "int64": int64, "bool": bool}
_DTYPE_TO_NP = {float32: _np.float32, float64: _np.float64, int64: _np.int64, bool: _np.bool_}
_default_dtype = float32

__version__ = "0.1.0"


def get_default_dtype():
    return _default_dtype


def set_default_dtype(d):
    global _default_dtype
    if d not in (float32, float64):
        raise TypeError("only floating-point types are supported as the default type")
    _default_dtype = d


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(t):
    return t.is_floating_point()


def numel(t):
    return t.numel()


def _check_requires_grad(t, requires_grad):
    if requires_grad:
        if not t.is_floating_point():
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    return t


def _infer_dtype(data, arr):
    if isinstance(data, _np.ndarray) or isinstance(data, _np.generic):
        k = arr.dtype
        if k == _np.float64:
            return float64
        if k.kind == "f":
            return float32 if k.itemsize <= 4 else float64
        if k.kind in "iu":
            return int64
        if k.kind == "b":
            return bool
        raise TypeError(
            f"can't convert np.ndarray of type {k}. The only supported types are: float64, "
            "float32, int64 and bool."
        )
    k = arr.dtype.kind
    if k == "f":
        return _default_dtype
    if k in "iu":
        return int64
    if k == "b":
        return bool
    if arr.size == 0:
        return _default_dtype
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (numbers, nested lists, numpy arrays)."""
    if device is not None:
        _tensor_device(device)
    if isinstance(data, Tensor):
        _warnings.warn(
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
        arr = _np.asarray(data)
    except (ValueError, TypeError) as e:
        raise ValueError(f"could not convert {type(data).__name__} to a tensor: {e}") from None
    if arr.dtype == object:
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    if arr.dtype == _np.uint64 and arr.size and arr.max() > _np.iinfo(_np.int64).max:
        # Python ints past int64 (numpy made them uint64): PyTorch refuses them
        raise ValueError("Overflow when unpacking long long")
    target = dtype if dtype is not None else _infer_dtype(data, arr)
    arr = arr.astype(_DTYPE_TO_NP[target], order="C", copy=False)
    return _check_requires_grad(_core._from_array(arr), requires_grad)


def _tensor_device(d):
    return device(d)


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, _np.ndarray):
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
_not_writable_warned = False


def _warn_if_not_writable(a):
    """PyTorch's TORCH_WARN_ONCE: the first read-only array of the process warns, even if that
    warning is then filtered out or raised; no later one does."""
    global _not_writable_warned
    if not a.flags.writeable and not _not_writable_warned:
        _not_writable_warned = True
        _warnings.warn(_NOT_WRITABLE, UserWarning, stacklevel=3)  # at from_numpy's caller


def from_numpy(a):
    """A tensor sharing memory with the numpy array ``a``."""
    if not isinstance(a, _np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    _warn_if_not_writable(a)
    return _from_numpy(a)


def _from_numpy(a):
    d = _NP_TO_DTYPE.get(a.dtype.name)
    if d is None or not a.dtype.isnative:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{a.dtype.name}. The only supported types are: "
            "float64, float32, int64 and bool."
        )
    size = a.itemsize
    if _builtins.any(s < 0 for s in a.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative "
            "strides are not currently supported. (You can probably work around this by making a "
            "copy of your array  with array.copy().) "
        )
    if _builtins.any(s % size for s in a.strides) or a.ctypes.data % size:
        return tensor(a)
    strides = [s // size for s in a.strides]
    span = 1 + _builtins.sum((n - 1) * s for n, s in zip(a.shape, strides)) if a.size else 0
    if a.size == 0:
        return tensor(a)
    return _core._from_ptr(a.ctypes.data, span, d, list(a.shape), strides, a)


def _size_args(size):
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
        if isinstance(fill_value, _builtins.bool):
            dtype = bool
        elif isinstance(fill_value, int):
            dtype = int64
        else:
            dtype = _default_dtype
    t = _core._full(_size_args((size,) if isinstance(size, int) else tuple(size)), fill_value, dtype)
    return _check_requires_grad(t, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None):
    t = _core._full(_size_args(size), 0, dtype or _default_dtype)
    return _check_requires_grad(t, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None):
    t = _core._full(_size_args(size), 1, dtype or _default_dtype)
    return _check_requires_grad(t, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, memory_format=None):
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
        is_float = _builtins.any(
            isinstance(v, _builtins.float) or (isinstance(v, Tensor) and v.is_floating_point())
            for v in vals
        )
        dtype = _default_dtype if is_float else int64
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in vals)
    t = _core._arange(_builtins.float(start), _builtins.float(end), _builtins.float(step), dtype)
    return _check_requires_grad(t, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None):
    t = _core._linspace(_builtins.float(start), _builtins.float(end), int(steps), dtype or _default_dtype)
    return _check_requires_grad(t, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None):
    t = _core._eye(n, n if m is None else m, dtype or _default_dtype)
    return _check_requires_grad(t, requires_grad)


def _random(kind, size, a, b, dtype, requires_grad, generator):
    t = _core._random(_size_args(size), kind, a, b, dtype, generator)
    return _check_requires_grad(t, requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    return _random("uniform", size, 0.0, 1.0, dtype or _default_dtype, requires_grad, generator)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    return _random("normal", size, 0.0, 1.0, dtype or _default_dtype, requires_grad, generator)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False, out=None):
    if size is None:
        low, high, size = 0, low, high
    return _random("randint", tuple(size), _builtins.float(low), _builtins.float(high),
                   dtype or int64, requires_grad, generator)


def rand_like(input, *, dtype=None, requires_grad=False, **kw):
    return rand(tuple(input.shape), dtype=dtype or input.dtype, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, requires_grad=False, **kw):
    return randn(tuple(input.shape), dtype=dtype or input.dtype, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, **kw):
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype)


def constant_pad_nd(input, pad, value=0):
    """``torch.constant_pad_nd``: pad with ``value`` ((before, after) pairs from the last dim;
    negative amounts crop)."""
    return _core._constant_pad_nd(input, list(pad), value)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, **kw):
    return _check_requires_grad(_core._randperm(n, dtype or int64, generator), requires_grad)


def broadcast_shapes(*shapes):
    """The shape that tensors of these shapes broadcast to."""
    out = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if len(shape) > len(out):
            out = [1] * (len(shape) - len(out)) + out
        for i, d in enumerate(shape):
            j = len(out) - len(shape) + i
            if out[j] == 1:
                out[j] = d
            elif d != 1 and d != out[j]:
                raise RuntimeError(
                    f"Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is "
                    f"between {list(shapes)}."
                )
    return Size(out)


def broadcast_tensors(*tensors):
    """Views of the tensors expanded to their common shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def isnan(input):
    return input != input


def isinf(input):
    if not input.is_floating_point():
        return zeros(input.shape, dtype=bool)
    return input.abs() == _builtins.float("inf")


def isfinite(input):
    if not input.is_floating_point():
        return ones(input.shape, dtype=bool)
    return (input == input) & (input.abs() != _builtins.float("inf"))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol * |other|``, elementwise (infinities equal themselves)."""
    if input.dtype != other.dtype:
        raise RuntimeError(
            f"{input.dtype} did not match {other.dtype}"
        )
    # PyTorch's rule: an infinite error (inf against -inf) is never close
    error = (input - other).abs()
    close = (input == other) | (isfinite(error) & (error <= atol + rtol * other.abs()))
    if equal_nan and input.is_floating_point():
        close = close | (isnan(input) & isnan(other))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _builtins.bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):
    """True if the tensors have the same shape and elements."""
    return input.shape == other.shape and _builtins.bool((input == other).all())


def manual_seed(seed):
    """Seeds the default generator and returns it."""
    _core.manual_seed(seed)
    return default_generator


def seed():
    """Seeds the default generator from the OS's entropy and returns the seed."""
    return default_generator.seed()


def _rebuild_tensor(arr, requires_grad):
    return tensor(arr, requires_grad=requires_grad)


def _method_function(name):
    method = getattr(Tensor, name)  # looked up once, not per call

    def f(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(
                f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
            )
        return method(input, *args, **kwargs)

    f.__name__ = name
    f.__qualname__ = name
    return f


def _binary_function(name):
    method = getattr(Tensor, name)

    def f(input, other, *args, **kwargs):
        if isinstance(input, Tensor):
            return method(input, other, *args, **kwargs)
        return _core._scalar_binary(name, input, other)

    f.__name__ = name
    return f


for _name in [
    "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "abs",
    "sign", "neg", "negative", "erf", "reciprocal", "square", "masked_fill",
    "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
    "logical_xor", "logical_not", "bitwise_not", "floor_divide", "remainder", "sum", "mean",
    "prod", "amax", "amin", "max", "min", "argmax", "argmin", "var", "std", "logsumexp", "norm",
    "softmax", "log_softmax", "matmul", "mm", "bmm", "mv", "dot", "outer", "flatten", "unflatten",
    "transpose", "swapaxes", "permute", "t", "unsqueeze", "squeeze", "narrow", "select",
    "gather", "scatter_add", "index_select", "index_add", "split", "chunk", "unbind", "clone",
    "detach", "any", "all", "cumsum",
]:
    globals()[_name] = _method_function(_name)
globals().update(_tensor_functions)  # tril, triu, flip, roll, tile, sort, argsort, topk, scatter
def reshape(input, shape):
    return input.reshape(shape)


def clamp(input, min=None, max=None):
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = where(out < min, min, out)
        if max is not None:
            out = where(out > max, max, out)
        return out
    return input.clamp(min, max)


clip = clamp


for _name in ["add", "sub", "mul", "div", "pow", "true_divide", "subtract", "multiply", "divide"]:
    globals()[_name] = _binary_function(_name)
del _name

from . import _tensor_str  # noqa: E402,F401
from . import nn  # noqa: E402,F401
from . import optim  # noqa: E402,F401
from . import utils  # noqa: E402,F401
from .serialization import save, load  # noqa: E402,F401
from . import accelerator, amp, backends, cuda, distributed, onnx  # noqa: E402,F401


def is_complex(input):
    """False: ferrograd has no complex dtypes."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return False


_compile_warned = False


def compile(model=None, **kwargs):
    """``torch.compile`` as an identity: returns the model (or function) unchanged, warning once
    that nothing is compiled. Usable as ``@compile`` and ``@compile(mode=...)``."""
    global _compile_warned
    if not _compile_warned:
        _compile_warned = True
        _warnings.warn("torch.compile is not supported by ferrograd: the model runs uncompiled",
                       UserWarning, stacklevel=2)
    if model is None:
        return lambda m: m
    return model
