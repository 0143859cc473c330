"""Tensor methods written in Python (argument parsing, conversions); the hot paths are in Rust."""

import warnings
from collections import namedtuple

import numpy as np

from . import _core

Tensor = _core.Tensor

_NP_TYPESTR = {"torch.float32": "<f4", "torch.float64": "<f8", "torch.int64": "<i8", "torch.bool": "|b1"}

def _return_type(name):
    """A (values, indices) named tuple printed as ``torch.return_types.<name>(...)``."""
    base = namedtuple(name, ["values", "indices"])

    def __repr__(self):
        return f"torch.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"

    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__str__": __repr__})


max_result = _return_type("max")
min_result = _return_type("min")
sort_result = _return_type("sort")
topk_result = _return_type("topk")

_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information."
)


class device:
    """Only the CPU exists here."""

    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        if type != "cpu":
            raise RuntimeError(f"ferrograd runs on the CPU only; device {type!r} is not available")
        self.type = type
        self.index = index

    def __repr__(self):
        return f"device(type='{self.type}')"

    def __str__(self):
        return self.type

    def __eq__(self, other):
        return isinstance(other, (device, str)) and str(other) == "cpu"

    def __hash__(self):
        return hash("cpu")


_CPU = device("cpu")


def _grad_get(self):
    g = self._grad
    if g is None and not self.is_leaf and not self.retains_grad:
        warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
    return g


def _grad_set(self, value):
    self._grad = value


def _grad_del(self):
    self._grad = None


class _ArrayHolder:
    """Exposes a tensor's memory to numpy through ``__array_interface__`` (no copy)."""

    __slots__ = ("_t", "__array_interface__")

    def __init__(self, t):
        self._t = t
        size = t.element_size()
        self.__array_interface__ = {
            "version": 3,
            "shape": tuple(t.shape),
            "typestr": _NP_TYPESTR[str(t.dtype)],
            "data": (t.data_ptr(), False),
            "strides": tuple(s * size for s in t.stride()),
        }


def numpy(self, *, force=False):
    if self.requires_grad:
        if not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
            )
        self = self.detach()
    self._mark_shared()
    return np.asarray(_ArrayHolder(self))


def __array__(self, dtype=None, copy=None):
    a = self.detach().numpy()
    if dtype is not None:
        a = a.astype(dtype, copy=False)
    return a


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Computes the gradient of this tensor with respect to the graph's leaves."""
    from .autograd import backward as _backward

    _backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def register_hook(self, hook):
    """Registers ``hook(grad) -> Tensor | None``, run when the gradient of this tensor is
    computed; a returned tensor replaces the gradient. Returns a handle with ``remove()``."""
    from .autograd.graph import _register_tensor_hook

    return _register_tensor_hook(self, hook)


def register_post_accumulate_grad_hook(self, hook):
    """Registers ``hook(tensor)``, run after the gradient was accumulated into ``.grad`` of
    this leaf. Returns a handle with ``remove()``."""
    from .autograd.graph import _register_post_accumulate_grad_hook

    return _register_post_accumulate_grad_hook(self, hook)


def size(self, dim=None):
    if dim is None:
        return self.shape
    n = self.dim()
    if not -max(n, 1) <= dim < max(n, 1):
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(n, 1)}, {max(n, 1) - 1}], but got {dim})"
        )
    return self.shape[dim] if n else 1


def _dtype_of(x):
    from . import float32

    return x if x is not None else float32


def to(self, *args, **kwargs):
    """``to(dtype)``, ``to("cpu")``, ``to(other)``, ``to(device, dtype)``; ``copy=True`` copies."""
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    dev = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, (str, device)):
            dev = a
        elif isinstance(a, bool):
            continue
        elif a is not None:
            dtype = a
    if dev is not None:
        device(dev)
    if dtype is None:
        return self.clone() if copy else self
    return self._to_dtype(dtype, copy)


def _cast(dtype_name):
    def f(self):
        from . import _DTYPES

        return self._to_dtype(_DTYPES[dtype_name])

    f.__name__ = dtype_name
    return f


def _unsupported_int32(self, memory_format=None):
    raise NotImplementedError(
        "Tensor.int(): int32 tensors are not supported by ferrograd yet "
        "(dtypes: float32, float64, int64, bool); use .long() for int64"
    )


def type_(self, dtype=None, non_blocking=False):
    if dtype is None:
        return {"torch.float32": "torch.FloatTensor", "torch.float64": "torch.DoubleTensor",
                "torch.int64": "torch.LongTensor", "torch.bool": "torch.BoolTensor"}[str(self.dtype)]
    if isinstance(dtype, str):
        from . import float32, float64, int64, bool as bool_

        dtype = {"torch.FloatTensor": float32, "torch.DoubleTensor": float64,
                 "torch.LongTensor": int64, "torch.BoolTensor": bool_}[dtype]
    return self.to(dtype)


def type_as(self, other):
    return self.to(other.dtype)


def cpu(self):
    return self


def cuda(self, *args, **kwargs):
    raise RuntimeError("Torch not compiled with CUDA enabled")


def _binary_method(name):
    def f(self, other):
        return self._binary(name, other)

    f.__name__ = name
    return f


def add(self, other, *, alpha=1):
    if alpha != 1:
        other = other * alpha
    return self._binary("add", other)


def sub(self, other, *, alpha=1):
    if alpha != 1:
        other = other * alpha
    return self._binary("sub", other)


def add_(self, other, *, alpha=1):
    if alpha != 1:
        other = other * alpha
    return self._add_(other)


def sub_(self, other, *, alpha=1):
    if alpha != 1:
        other = other * alpha
    return self._sub_(other)


def _is_integral(x):
    """An int64 tensor or a Python int (not bool)."""
    if isinstance(x, Tensor):
        return x.dtype == _core.int64
    return isinstance(x, int) and not isinstance(x, bool)


def div(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return self._binary("div", other)
    if rounding_mode == "floor":
        return self._binary("floor_divide", other)
    if rounding_mode == "trunc":
        q = self._binary("div", other)
        if q.is_floating_point() and not (self.dtype == _core.int64 and _is_integral(other)):
            return q.sign() * q.abs()._binary("floor_divide", 1)
        # integers stay integers (exactly): the floor quotient, plus one where it rounded a
        # negative inexact quotient down
        floor = self._binary("floor_divide", other)
        inexact = (self - floor * other) != 0
        return floor + (inexact & ((self < 0) != (other < 0))).to(floor.dtype)
    raise RuntimeError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"
    )


def _clamp_any(self, min=None, max=None):
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        from . import clamp

        return clamp(self, min, max)
    return self._clamp(min, max)


def pow_(self, exponent):
    self._binary_("pow", exponent)
    return self


def square(self):
    return self * self


def _max_min(want_max):
    res_type = max_result if want_max else min_result

    def f(self, dim=None, keepdim=False, *, axis=None):
        if isinstance(dim, Tensor):
            return self._binary("maximum" if want_max else "minimum", dim)
        if dim is None:
            dim = axis
        if dim is None:
            return self._max_all(want_max)
        v, i = self._max_dim(dim, keepdim, want_max)
        return res_type(v, i)

    f.__name__ = "max" if want_max else "min"
    return f


def _correction(unbiased, correction):
    if correction is not None:
        return float(correction)
    if unbiased is None:
        return 1.0
    return 1.0 if unbiased else 0.0


def _var_std(take_sqrt):
    def f(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):
        if isinstance(dim, bool):  # var(unbiased)
            dim, unbiased = None, dim
        if dim is None:
            dim = axis
        dims = [dim] if isinstance(dim, int) else (list(dim) if dim is not None else None)
        return self._var(dims, _correction(unbiased, correction), keepdim, take_sqrt)

    f.__name__ = "std" if take_sqrt else "var"
    return f


def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    if p == "fro" or p is None:
        p = 2.0
    elif p == "nuc":
        raise NotImplementedError("norm(p='nuc') is not supported by ferrograd yet")
    dims = [dim] if isinstance(dim, int) else (list(dim) if dim is not None else None)
    t = self.to(dtype) if dtype is not None else self
    return t._norm(float(p), dims, keepdim)


def split(self, split_size_or_sections, dim=0):
    n = self.shape[dim] if self.dim() else 1
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        if s <= 0 and n > 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        if s > 0:
            count = -(-n // s)
            _core._check_fits(count * 256)  # one tensor object per piece: refuse what cannot fit
            sizes = [s] * count
            if count:
                sizes[-1] = n - s * (count - 1)
        else:
            sizes = [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                f"dimension {dim}), but got split_sizes={sizes}"
            )
    return tuple(self._split_sizes(sizes, dim, not isinstance(split_size_or_sections, int)))


def chunk(self, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    n = self.shape[dim]
    size = -(-n // chunks) if n else 0
    if size == 0:
        return tuple(self._split_sizes([0] * min(chunks, 1 if n == 0 else chunks), dim, False))
    return split(self, size, dim)


def unflatten(self, dim, sizes):
    """Splits dimension ``dim`` into ``sizes`` (one of them may be -1): a view."""
    sizes = list(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    ndim = self.dim()
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, "
            f"{max(ndim, 1) - 1}], but got {dim})"
        )
    dim = dim % ndim
    n = self.shape[dim]
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in sizes:
        if s != -1:
            known *= s
    if (-1 in sizes and (known == 0 or n % known)) or (-1 not in sizes and known != n):
        raise RuntimeError(
            f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} "
            f"({n}) in the input tensor"
        )
    if -1 in sizes:
        sizes[sizes.index(-1)] = n // known
    shape = tuple(self.shape)
    return self.view(shape[:dim] + tuple(sizes) + shape[dim + 1:])


def __iter__(self):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(self.unbind(0))


def __format__(self, spec):
    if self.dim() == 0:
        return self.item().__format__(spec)
    return object.__format__(self, spec)


def __contains__(self, element):
    return bool((self == element).any())


def any_(self, dim=None, keepdim=False):
    b = self.to(_dtype_bool())
    if dim is None:
        return b.sum() > 0
    return b.sum(dim, keepdim=keepdim) > 0


def all_(self, dim=None, keepdim=False):
    b = self.to(_dtype_bool())
    if dim is None:
        return b.logical_not().sum() == 0
    return b.logical_not().sum(dim, keepdim=keepdim) == 0


def _dtype_bool():
    from . import bool as b

    return b


def where(self, condition, other):
    return _core.where(condition, self, other)


def view_as(self, other):
    return self.view(tuple(other.shape))


def reshape_as(self, other):
    return self.reshape(tuple(other.shape))


def new_tensor(self, data, dtype=None, requires_grad=False, **kw):
    from . import tensor

    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


def new_zeros(self, *size, dtype=None, requires_grad=False, **kw):
    from . import zeros

    return zeros(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)


def new_ones(self, *size, dtype=None, requires_grad=False, **kw):
    from . import ones

    return ones(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)


def new_full(self, size, fill_value, dtype=None, requires_grad=False, **kw):
    from . import full

    return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)


def new_empty(self, *size, dtype=None, requires_grad=False, **kw):
    return new_zeros(self, *size, dtype=dtype, requires_grad=requires_grad)


def gelu(self, approximate="none"):
    return self._gelu(approximate)


def _ferrograd():
    import ferrograd

    return ferrograd


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    from_ = kw.pop("from", from_)
    _core._fill_random(self, "uniform", float(from_), float(to), generator)
    return self


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    _core._fill_random(self, "normal", float(mean), float(std), generator)
    return self


def random_(self, from_=0, to=None, *, generator=None, **kw):
    from_ = kw.pop("from", from_)
    if to is None:
        from_, to = 0, (from_ if from_ else (1 << 24 if self.dtype == _core.float32 else
                                              1 << 53 if self.is_floating_point() else (1 << 63) - 1))
    _core._fill_random(self, "randint", float(from_), float(to), generator)
    return self


def __deepcopy__(self, memo):
    if not self.is_leaf:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
            "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
            "because of a torch.nn.utils.weight_norm usage, see "
            "https://github.com/pytorch/pytorch/pull/103001"
        )
    out = self.detach().clone()
    if type(self) is not Tensor:
        out = type(self).__new__(type(self), out) if hasattr(type(self), "__new__") else out
    out.requires_grad_(self.requires_grad)
    memo[id(self)] = out
    return out


def __reduce_ex__(self, protocol):
    from . import _rebuild_tensor

    return (_rebuild_tensor, (self.detach().numpy().copy(), self.requires_grad))


# Argument parsing of tril/triu, flip, roll, repeat, tile, sort, argsort, topk and scatter
# as PyTorch's parser does it: the same accepted types and the same TypeError texts. Each op
# has one implementation taking the parsed arguments, shared by the method and the function.


def _index(v):
    """``v`` as an int where PyTorch takes one (ints, NumPy ints, one-element integer
    tensors; not bool), else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, Tensor) and v.dtype == _core.int64 and v.numel() == 1:
        return int(v.item())
    return None


def _at(pos):
    return "" if pos is None else f" (position {pos})"


def _type_name(v):
    """The type name PyTorch's messages show: ``float``, ``Tensor``, ``numpy.bool``."""
    t = type(v)
    if t.__module__ == "builtins" or isinstance(v, Tensor):
        return t.__name__
    return f"{t.__module__}.{t.__name__}"


def _int(fname, name, v, pos):
    i = _index(v)
    if i is None:
        raise TypeError(f"{fname}(): argument '{name}'{_at(pos)} must be int, not {_type_name(v)}")
    return i


def _bool(fname, name, v, pos):
    if isinstance(v, bool):
        return v
    raise TypeError(f"{fname}(): argument '{name}'{_at(pos)} must be bool, not {_type_name(v)}")


def _int_list(fname, name, v, pos, allow_int):
    """A tuple-of-ints argument; a lone int only where PyTorch takes one (``allow_int``)."""
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, (tuple, list)):
        if v and _index(v[0]) is None:
            raise TypeError(
                f"{fname}(): argument '{name}'{_at(pos)} must be tuple of ints, but found element "
                f"of type {_type_name(v[0])} at pos 0"
            )
        out = []
        for i, e in enumerate(v):
            k = int(e) if isinstance(e, bool) else _index(e)
            if k is None:
                raise TypeError(
                    f"{fname}(): argument '{name}' failed to unpack the object at pos {i + 1} "
                    f'with error "type must be tuple of ints,but got {_type_name(e)}"'
                )
            out.append(k)
        return out
    i = _index(v)
    if i is None or not allow_int:
        raise TypeError(f"{fname}(): argument '{name}'{_at(pos)} must be tuple of ints, not {_type_name(v)}")
    return [i]


def _bind(fname, args, kwargs, params, nreq):
    """``{name: (value, position)}`` for ``args``/``kwargs`` bound to ``params`` (the first
    ``nreq`` required); the position is None for keywords."""
    if len(args) > len(params):
        n = len(params)
        if nreq == n:
            takes = f"{n} positional argument" + ("s" if n != 1 else "")
        else:
            takes = f"from {nreq} to {n} positional arguments"
        raise TypeError(f"{fname}() takes {takes} but {len(args)} were given")
    out = {p: (a, i + 1) for i, (p, a) in enumerate(zip(params, args))}
    for k, v in kwargs.items():
        if k in out:
            raise TypeError(f"{fname}() got multiple values for argument '{k}'")
        out[k] = (v, None)
    for p in params[:nreq]:
        if p not in out:
            raise TypeError(f'{fname}() missing 1 required positional arguments: "{p}"')
    for k in kwargs:
        if k not in params:
            raise TypeError(f"{fname}() got an unexpected keyword argument '{k}'")
    return out


def _input(fname, a):
    v, pos = a.pop("input")
    if not isinstance(v, Tensor):
        raise TypeError(f"{fname}(): argument 'input'{_at(pos)} must be Tensor, not {_type_name(v)}")
    return v


def _no_out(fname, kwargs):
    if kwargs.pop("out", None) is not None:
        raise NotImplementedError(f"{fname}(out=...) is not supported by ferrograd")


def _op(fname, params, nreq, impl, varargs=False, out=False):
    """The method and the torch function of an op taking ``params`` after its input;
    ``impl(input, args, method)`` gets the bound ``args``. ``varargs``: the method also takes
    the int list unpacked (``x.flip(0, 1)``); ``out``: the function takes ``out=None``."""

    def method(self, *args, **kwargs):
        if varargs and len(args) > 1 and _index(args[0]) is not None:
            args = (args,)
        return impl(self, _bind(fname, args, kwargs, params, nreq), True)

    def function(*args, **kwargs):
        if out:
            _no_out(fname, kwargs)
        a = _bind(fname, args, kwargs, ("input",) + params, nreq + 1)
        return impl(_input(fname, a), a, False)

    method.__name__ = function.__name__ = fname
    return method, function


def _tri(upper):
    fname = "triu" if upper else "tril"

    def impl(self, a, method):
        return _core._tri(self, _int(fname, "diagonal", *a.get("diagonal", (0, None))), upper)

    return _op(fname, ("diagonal",), 0, impl)


tril, _tril_function = _tri(False)
triu, _triu_function = _tri(True)


def _flip(self, a, method):
    v, pos = a["dims"]
    return _core._flip(self, _int_list("flip", "dims", v, pos, method and pos is not None))


flip, _flip_function = _op("flip", ("dims",), 1, _flip, varargs=True)


def _roll(self, a, method):
    shifts = _int_list("roll", "shifts", *a["shifts"], True)
    dims, pos = a.get("dims", ((), None))
    dims = [] if dims is None else _int_list("roll", "dims", dims, pos, True)
    return _core._roll(self, shifts, dims)


roll, _roll_function = _op("roll", ("shifts", "dims"), 1, _roll)


def _repeat(self, a, method):
    v, pos = a["repeats"]
    return _core._repeat(self, _int_list("repeat", "repeats", v, pos, pos is not None))


repeat = _op("repeat", ("repeats",), 1, _repeat, varargs=True)[0]  # no torch.repeat


def _tile(self, a, method):
    v, pos = a["dims"]
    dims = _int_list("tile", "dims", v, pos, method and pos is not None)
    if len(dims) < self.dim():
        dims = [1] * (self.dim() - len(dims)) + dims
    return _core._repeat(self, dims)


tile, _tile_function = _op("tile", ("dims",), 1, _tile, varargs=True)


def _topk(self, a, method):
    k = _int("topk", "k", *a["k"])
    dim = _int("topk", "dim", *a.get("dim", (-1, None)))
    largest = _bool("topk", "largest", *a.get("largest", (True, None)))
    _bool("topk", "sorted", *a.get("sorted", (True, None)))  # the result is always sorted
    return topk_result(*_core._topk(self, k, dim, largest))


topk, _topk_function = _op("topk", ("k", "dim", "largest", "sorted"), 1, _topk, out=True)


def _invalid_combination(fname, args, kwargs, overloads):
    """PyTorch's TypeError for arguments matching none of an op's overloads (without its
    "didn't match because" details)."""
    got = [_type_name(v) for v in args]
    got += [f"{k}={_type_name(v)}" for k, v in reversed(kwargs.items())]
    got = ", ".join(got) + (", " if kwargs and not args else "")
    lines = "".join(f" * ({o})\n" for o in overloads)
    return TypeError(
        f"{fname}() received an invalid combination of arguments - got ({got}), but expected one of:\n{lines}"
    )


def _sort_args(fname, args, kwargs, method):
    """(input, dim, descending) of sort/argsort: ``(*, bool stable, int dim = -1, bool
    descending = False)`` or ``(int dim = -1, bool descending = False)``."""
    overloads = ["*, bool stable, int dim = -1, bool descending = False", "int dim = -1, bool descending = False"]
    if not method:
        out = "tuple of Tensors out = None" if fname == "sort" else "Tensor out = None"
        overloads = [f"Tensor input, {overloads[0]}, {out}", f"Tensor input, {overloads[1]}"]
        if fname == "sort":
            overloads[1] += f", *, {out}"
    bad = _invalid_combination(fname, args, kwargs, overloads)
    a = dict(kwargs)
    if not method:
        if args:
            a["input"], args = args[0], args[1:]
        elif "input" not in a:
            raise bad
        if not isinstance(a["input"], Tensor):
            where = " (position 1)" if "input" not in kwargs else ""
            raise TypeError(f"{fname}(): argument 'input'{where} must be Tensor, not {_type_name(a['input'])}")
        if "out" in a and fname == "argsort" and "stable" not in a:
            raise bad  # only argsort's stable overload has out=
        _no_out(fname, a)
    # PyTorch's parser picks the keyword-only overload (and refuses positionals) for these
    if len(args) > 2 or "stable" in a and (len(args) == 2 or args and method and "descending" in a):
        if not method and fname == "sort":
            raise bad
        lo, hi = (1, 0) if method else (2, 1)
        given = len(args) + (0 if method else 1)
        raise TypeError(f"{fname}() takes from {lo} to {hi} positional arguments but {given} were given")
    for name, v in zip(("dim", "descending"), args):
        if name in a:
            raise bad
        a[name] = v
    input = a.pop("input", None)
    dim, descending = _index(a.pop("dim", -1)), a.pop("descending", False)
    stable = a.pop("stable", None)
    if a or dim is None or not isinstance(descending, bool) or "stable" in kwargs and args:
        raise bad
    if not isinstance(stable, bool) and (stable is not None or "stable" in kwargs and fname == "argsort"):
        raise bad
    # PyTorch records SortBackward1 when `stable=` is passed at all (the sort is always stable
    # here); the core takes any bool for "given"
    given = bool(stable) if stable is not None else ("stable" in kwargs or None)
    return input, dim, descending, given


def sort(self, *args, **kwargs):
    _, dim, descending, stable = _sort_args("sort", args, kwargs, True)
    return sort_result(*_core._sort(self, dim, descending, stable))


def argsort(self, *args, **kwargs):
    _, dim, descending, stable = _sort_args("argsort", args, kwargs, True)
    return _core._sort(self, dim, descending, stable)[1]


def _sort_function(*args, **kwargs):
    input, dim, descending, stable = _sort_args("sort", args, kwargs, False)
    return sort_result(*_core._sort(input, dim, descending, stable))


def _argsort_function(*args, **kwargs):
    input, dim, descending, stable = _sort_args("argsort", args, kwargs, False)
    return _core._sort(input, dim, descending, stable)[1]


_sort_function.__name__, _argsort_function.__name__ = "sort", "argsort"


def _scatter_args(args, kwargs, method):
    """(input, dim, index, src, value) of ``scatter(dim, index, src)`` or
    ``scatter(dim, index, value)`` (``reduce=`` is not supported)."""
    overloads = ["int dim, Tensor index, Tensor src", "int dim, Tensor index, Tensor src, *, str reduce",
                 "int dim, Tensor index, Number value", "int dim, Tensor index, Number value, *, str reduce"]
    if not method:
        overloads = [f"Tensor input, {o}" + (", " if "*" in o else ", *, ") + "Tensor out = None"
                     for o in overloads]
    bad = _invalid_combination("scatter", args, kwargs, overloads)
    names = ("dim", "index", "src") if method else ("input", "dim", "index", "src")
    if len(args) > len(names):
        raise bad
    a = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in a or k not in names + ("value", "reduce") + (() if method else ("out",)):
            raise bad
        a[k] = v
    if not method:
        if not isinstance(a.get("input"), Tensor):
            if "input" not in a:
                raise bad
            where = " (position 1)" if "input" not in kwargs else ""
            raise TypeError(f"scatter(): argument 'input'{where} must be Tensor, not {_type_name(a['input'])}")
        _no_out("scatter", a)
    dim, index = _index(a.get("dim")), a.get("index")
    src = a.get("src", a.get("value"))
    if dim is None or not isinstance(index, Tensor) or "src" in a and "value" in a:
        raise bad
    if isinstance(src, Tensor):
        if "value" in a:
            raise bad
        value = None
    elif isinstance(src, (int, float, np.integer, np.floating, np.bool_)):
        if "src" in kwargs:
            raise bad
        src, value = None, src
    else:
        raise bad
    if "reduce" in a:
        if not isinstance(a["reduce"], str):
            raise bad
        if a["reduce"] not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        raise NotImplementedError("scatter(reduce=...) is not supported by ferrograd")
    return a.get("input"), dim, index, src, value


def _scatter(input, dim, index, src, value):
    if src is not None:
        return _core._scatter(input, dim, index, src)
    return _core._scatter(input, dim, index, None, value)


def scatter(self, *args, **kwargs):
    _, dim, index, src, value = _scatter_args(args, kwargs, True)
    return _scatter(self, dim, index, src, value)


def _scatter_function(*args, **kwargs):
    return _scatter(*_scatter_args(args, kwargs, False))


_scatter_function.__name__ = "scatter"

# the torch-namespace functions, exported by ferrograd/__init__.py
FUNCTIONS = {
    "tril": _tril_function,
    "triu": _triu_function,
    "flip": _flip_function,
    "roll": _roll_function,
    "tile": _tile_function,
    "sort": _sort_function,
    "argsort": _argsort_function,
    "topk": _topk_function,
    "scatter": _scatter_function,
}


_METHODS = {
    "unflatten": unflatten,
    "tril": tril,
    "triu": triu,
    "flip": flip,
    "roll": roll,
    "repeat": repeat,
    "tile": tile,
    "sort": sort,
    "argsort": argsort,
    "topk": topk,
    "scatter": scatter,
    "grad": property(_grad_get, _grad_set, _grad_del),
    "device": property(lambda self: _CPU),
    "is_cuda": property(lambda self: False),
    "is_cpu": property(lambda self: True),
    "layout": property(lambda self: "torch.strided"),
    "numpy": numpy,
    "__array__": __array__,
    "__array_priority__": 1000,
    "backward": backward,
    "register_hook": register_hook,
    "register_post_accumulate_grad_hook": register_post_accumulate_grad_hook,
    "size": size,
    "to": to,
    "float": _cast("float32"),
    "double": _cast("float64"),
    "long": _cast("int64"),
    "int": _unsupported_int32,
    "bool": _cast("bool"),
    "type": type_,
    "type_as": type_as,
    "cpu": cpu,
    "cuda": cuda,
    "add": add,
    "sub": sub,
    "subtract": sub,
    "add_": add_,
    "sub_": sub_,
    "mul": _binary_method("mul"),
    "multiply": _binary_method("mul"),
    "div": div,
    "divide": div,
    "true_divide": _binary_method("div"),
    "pow": _binary_method("pow"),
    "pow_": pow_,
    "square": square,
    "maximum": _binary_method("maximum"),
    "minimum": _binary_method("minimum"),
    "floor_divide": _binary_method("floor_divide"),
    "remainder": _binary_method("remainder"),
    "eq": _binary_method("eq"),
    "ne": _binary_method("ne"),
    "lt": _binary_method("lt"),
    "le": _binary_method("le"),
    "gt": _binary_method("gt"),
    "ge": _binary_method("ge"),
    "greater": _binary_method("gt"),
    "less": _binary_method("lt"),
    "logical_and": _binary_method("logical_and"),
    "logical_or": _binary_method("logical_or"),
    "logical_xor": _binary_method("logical_xor"),
    "bitwise_and": _binary_method("bitwise_and"),
    "bitwise_or": _binary_method("bitwise_or"),
    "bitwise_xor": _binary_method("bitwise_xor"),
    "negative": lambda self: self.neg(),
    "clip": lambda self, min=None, max=None: _clamp_any(self, min, max),
    "clip_": lambda self, min=None, max=None: self.clamp_(min, max),
    "clamp": _clamp_any,
    "max": _max_min(True),
    "min": _max_min(False),
    "var": _var_std(False),
    "std": _var_std(True),
    "norm": norm,
    "split": split,
    "chunk": chunk,
    "unbind": lambda self, dim=0: tuple(self._unbind(dim)),
    "__iter__": __iter__,
    "__format__": __format__,
    "__contains__": __contains__,
    "any": any_,
    "all": all_,
    "where": where,
    "view_as": view_as,
    "reshape_as": reshape_as,
    "new_tensor": new_tensor,
    "new_zeros": new_zeros,
    "new_ones": new_ones,
    "new_full": new_full,
    "new_empty": new_empty,
    "__deepcopy__": __deepcopy__,
    "__reduce_ex__": __reduce_ex__,
    "silu": lambda self: self._silu(),
    "uniform_": uniform_,
    "isnan": lambda self: _ferrograd().isnan(self),
    "isinf": lambda self: _ferrograd().isinf(self),
    "isfinite": lambda self: _ferrograd().isfinite(self),
    "isclose": lambda self, other, rtol=1e-05, atol=1e-08, equal_nan=False: _ferrograd().isclose(self, other, rtol, atol, equal_nan),
    "allclose": lambda self, other, rtol=1e-05, atol=1e-08, equal_nan=False: _ferrograd().allclose(self, other, rtol, atol, equal_nan),
    "equal": lambda self, other: _ferrograd().equal(self, other),
    "normal_": normal_,
    "random_": random_,
}


def _set_data(self, value):
    raise NotImplementedError(
        "assigning tensor.data (swapping a tensor's storage in place) is not supported by "
        "ferrograd yet; copy the values instead: `with torch.no_grad(): t.copy_(value)`"
    )


def install():
    for name, fn in _METHODS.items():
        setattr(Tensor, name, fn)
    # `.data` reads through the native getter; assigning it names the missing feature
    Tensor.data = property(Tensor.data.__get__, _set_data, doc=Tensor.data.__doc__)
