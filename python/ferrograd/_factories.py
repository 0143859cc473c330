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


_RANDINT_SIGNATURES = (
    # (positional names, whether the generator is a parameter)
    (("high", "size"), True),
    (("high", "size"), False),
    (("low", "high", "size"), True),
    (("low", "high", "size"), False),
)
_FACTORY_KWARGS = ("out", "dtype", "layout", "device", "pin_memory", "requires_grad")
_FACTORY_SIG = (
    "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
    "torch.device device = None, bool pin_memory = False, bool requires_grad = False"
)


def _randint_signature_text(names, with_gen):
    types = {"low": "int low", "high": "int high", "size": "tuple of ints size"}
    gen = "torch.Generator generator, " if with_gen else ""
    return f"({', '.join(types[n] for n in names)}, *, {gen}{_FACTORY_SIG})"


def _int_arg(x):
    """``x`` as an int if PyTorch's parser takes it as one (ints, numpy ints, one-element
    integer tensors; not bools or floats), else None."""
    if isinstance(x, Tensor):
        return int(x.item()) if x.dtype == int64 and x.numel() == 1 else None
    if isinstance(x, bool) or not hasattr(x, "__index__"):
        return None
    return x.__index__()


def _parse_signature(fn, names, args, kwargs, with_gen, raise_):
    """Binds ``args``/``kwargs`` to one of PyTorch's signatures of ``fn`` (ints and a size), or
    returns None (or raises PyTorch's message for it, with ``raise_``)."""
    def fail(msg):
        if raise_:
            raise TypeError(msg)
        return None

    if len(args) > len(names):
        return fail(f"{fn}() takes {len(names)} positional arguments but {len(args)} were given")
    bound = dict(zip(names, args))
    for k in kwargs:
        if k in bound or not (k in names or k in _FACTORY_KWARGS or (k == "generator" and with_gen)):
            return fail(f"{fn}() got an unexpected keyword argument '{k}'")
        if k in names:
            bound[k] = kwargs[k]
    missing = [n for n in names if n not in bound]
    if missing:
        quoted = ", ".join(f'"{n}"' for n in missing)
        return fail(f"{fn}() missing {len(missing)} required positional argument"
                    f"{'s' if len(missing) == 1 else ''}: {quoted}")
    out = {}
    for n in names:
        v = bound[n]
        where = f" (position {names.index(n) + 1})" if names.index(n) < len(args) else ""
        if n == "size":
            if not isinstance(v, (tuple, list)):
                return fail(f"{fn}(): argument 'size'{where} must be tuple of ints, not "
                            f"{_qualname(v)}")
            for i, e in enumerate(v):
                if _int_arg(e) is None:
                    return fail(f"{fn}(): argument 'size'{where} must be tuple of ints, but found "
                                f"element of type {type(e).__name__} at pos {i}")
            out[n] = tuple(_int_arg(e) for e in v)
        else:
            if _int_arg(v) is None:
                return fail(f"{fn}(): argument '{n}'{where} must be int, not {_qualname(v)}")
            out[n] = _int_arg(v)
    return out


def _qualname(v):
    t = type(v)
    return t.__name__ if t.__module__ in ("builtins", "ferrograd") else f"{t.__module__}.{t.__name__}"


def _invalid_arguments(fn, args, kwargs, signatures):
    got = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    lines = "".join(f" * {s}\n" for s in signatures)
    return TypeError(f"{fn}() received an invalid combination of arguments - got "
                     f"({', '.join(got)}), but expected one of:\n{lines}")


def _parse_overloads(fn, args, kwargs, signatures, texts):
    """PyTorch's overload resolution: the first signature that binds; else the one plausible
    signature's own message (the arity fits only one), else the list of all of them."""
    for names, with_gen in signatures:
        if with_gen and "generator" not in kwargs:
            continue
        bound = _parse_signature(fn, names, args, kwargs, with_gen, False)
        if bound is not None:
            return bound
    n = len(args) + len(kwargs)
    plausible = [
        (names, g) for names, g in signatures
        if len(names) + g <= n <= len(names) + g + len(_FACTORY_KWARGS)
        and all(k in names or k in _FACTORY_KWARGS or (g and k == "generator") for k in kwargs)
    ]
    if len(plausible) == 1:
        names, with_gen = plausible[0]
        _parse_signature(fn, names, args, kwargs, with_gen, True)
    raise _invalid_arguments(fn, args, kwargs, texts)


def _randint_bounds(low, high, dtype):
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if dtype == bool_:
        if not 0 <= low <= 1:
            raise RuntimeError("from is out of bounds for bool")
        if not 0 <= high - 1 <= 1:
            raise RuntimeError("to - 1 is out of bounds for bool")


def randint(*args, generator=None, dtype=None, device=None, requires_grad=False, out=None, **kw):
    """Integers in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``."""
    given = dict(kw)
    if generator is not None:
        given["generator"] = generator
    if dtype is not None:
        given["dtype"] = dtype
    bound = _parse_overloads("randint", args, given, _RANDINT_SIGNATURES,
                             [_randint_signature_text(*s) for s in _RANDINT_SIGNATURES])
    low, high, size = bound.get("low", 0), bound["high"], bound["size"]
    dtype = dtype or int64
    _randint_bounds(low, high, dtype)
    return _random("randint", size, float(low), float(high), dtype, requires_grad, generator)


def rand_like(input, *, dtype=None, requires_grad=False, **kw):
    return rand(tuple(input.shape), dtype=dtype or input.dtype, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, requires_grad=False, **kw):
    return randn(tuple(input.shape), dtype=dtype or input.dtype, requires_grad=requires_grad)


def randint_like(input, *args, generator=None, dtype=None, requires_grad=False,
                 memory_format=None, **kw):
    """Integers in [low, high) shaped like ``input``: ``randint_like(input, high)`` or
    ``randint_like(input, low, high)``."""
    names = ("low", "high") if len(args) + len([k for k in kw if k in ("low", "high")]) == 2 else ("high",)
    bound = dict(zip(names, args))
    for k, v in kw.items():
        if k not in ("low", "high", "device", "layout", "pin_memory") or k in bound:
            bound = None
            break
        if k in ("low", "high"):
            bound[k] = v
    if bound is None or any(n not in bound or _int_arg(bound[n]) is None for n in names):
        got = ["Tensor"] + [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kw.items()]
        raise TypeError(
            f"randint_like() received an invalid combination of arguments - got ({', '.join(got)}), but "
            "expected one of:\n"
            " * (Tensor input, int low, int high, *, torch.memory_format memory_format = None, "
            "torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
            "bool pin_memory = False, bool requires_grad = False)\n"
            " * (Tensor input, int high, *, torch.memory_format memory_format = None, "
            "torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
            "bool pin_memory = False, bool requires_grad = False)\n"
        )
    low, high = _int_arg(bound.get("low", 0)), _int_arg(bound["high"])
    dtype = dtype or input.dtype
    _randint_bounds(low, high, dtype)
    return _random("randint", tuple(input.shape), float(low), float(high), dtype, requires_grad, generator)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, **kw):
    """A random permutation of ``0 .. n-1``."""
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    return _check_requires_grad(_core._randperm(n, dtype or int64, generator), requires_grad)
