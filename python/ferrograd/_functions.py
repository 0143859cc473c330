"""The torch functions (``torch.exp``, ``torch.add``, ``torch.sort``, ...) other than the
factories (``_factories.py``).

Most call the Tensor method of the same name (``Tensor.exp(input)``: Tensor's own, not a
subclass override), after checking that ``input`` is a tensor. ``add``, ``mul``, ``div``,
``pow`` and their aliases also take a number as ``input``.

(This module's ``abs``, ``max``, ``min``, ``sum``, ``any``, ``all`` and ``pow`` are the
torch functions; use ``builtins`` for Python's.)
"""

import warnings

from . import _core
from ._core import Tensor, bool as bool_
from ._dtype import get_default_dtype
from ._factories import ones, zeros
from ._memory_format import (
    _check_memory_format,
    channels_last,
    channels_last_3d,
    contiguous_format,
    preserve_format,
)
from ._op_args import (
    _bind,
    _flip,
    _input,
    _no_out,
    _roll,
    _scatter,
    _scatter_args,
    _sort_args,
    _tile,
    _topk,
    _tri,
)
from ._return_types import sort_result
from ._size import Size


def _not_a_tensor(name, input):
    return TypeError(
        f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
    )


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    """False: ferrograd has no complex dtypes."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return False


def numel(input):
    return input.numel()


# --- arithmetic: the binary ops of the core's op table are its functions (``_core.mul``, ...),
# which take a number as ``input`` where PyTorch does; here only their PyTorch extras


def add(input, other, *, alpha=1):
    if type(alpha) is int and alpha == 1:  # alpha=True or 1.0 are checked as PyTorch does
        return _core.add(input, other)
    return _core._add_alpha(input, other, alpha, False)


def sub(input, other, *, alpha=1):
    if type(alpha) is int and alpha == 1:
        return _core.sub(input, other)
    return _core._add_alpha(input, other, alpha, True)


subtract = sub
multiply = _core.mul


def div(input, other, *, rounding_mode=None):
    if rounding_mode is None:
        return _core.div(input, other)
    return _core._div_rounding(input, other, rounding_mode)


def round(input, *, decimals=None):  # noqa: A001  (torch.round)
    """``round(input)`` (halves to even), or ``round(input, decimals=d)`` (RoundBackward1;
    PyTorch's other overload: floats only, even for ``decimals=0``)."""
    if decimals is None:
        return _core.round(input)
    return _core._round_decimals(input, decimals)


def round_(input, *, decimals=None):
    return input.round_(decimals=decimals)


divide = div


def true_divide(dividend, divisor):
    return _core.div(dividend, divisor)


def clamp(input, min=None, max=None):
    """``input`` limited to [min, max]; the bounds may be tensors."""
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = _core.where(out < min, min, out)
        if max is not None:
            out = _core.where(out > max, max, out)
        return out
    return input.clamp(min, max)


clip = clamp


def reshape(input, shape):
    return input.reshape(shape)


# --- elementwise


# the unary ops of the core's op table (exp, log, ..., logical_not, bitwise_not) are its
# functions, re-exported by the package


def negative(input):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("negative", input)
    return Tensor.negative(input)


def square(input):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("square", input)
    return Tensor.square(input)


def masked_fill(input, mask, value):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("masked_fill", input)
    return Tensor.masked_fill(input, mask, value)


# --- reductions


def sum(input, dim=None, keepdim=False, *, dtype=None, axis=None):  # noqa: A001  (torch.sum)
    if not isinstance(input, Tensor):
        raise _not_a_tensor("sum", input)
    return Tensor.sum(input, dim, keepdim, dtype=dtype, axis=axis)


def mean(input, dim=None, keepdim=False, *, dtype=None, axis=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("mean", input)
    return Tensor.mean(input, dim, keepdim, dtype=dtype, axis=axis)


def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("prod", input)
    return Tensor.prod(input, dim, keepdim, dtype=dtype, axis=axis)


def amax(input, dim=None, keepdim=False, *, axis=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("amax", input)
    return Tensor.amax(input, dim, keepdim, axis=axis)


def amin(input, dim=None, keepdim=False, *, axis=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("amin", input)
    return Tensor.amin(input, dim, keepdim, axis=axis)


def max(input, dim=None, keepdim=False, *, axis=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("max", input)
    return Tensor.max(input, dim, keepdim, axis=axis)


def min(input, dim=None, keepdim=False, *, axis=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("min", input)
    return Tensor.min(input, dim, keepdim, axis=axis)


def argmax(input, dim=None, keepdim=False, *, axis=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("argmax", input)
    return Tensor.argmax(input, dim, keepdim, axis=axis)


def argmin(input, dim=None, keepdim=False, *, axis=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("argmin", input)
    return Tensor.argmin(input, dim, keepdim, axis=axis)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("var", input)
    return Tensor.var(input, dim, unbiased, keepdim, correction=correction, axis=axis)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("std", input)
    return Tensor.std(input, dim, unbiased, keepdim, correction=correction, axis=axis)


def logsumexp(input, dim, keepdim=False):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("logsumexp", input)
    return Tensor.logsumexp(input, dim, keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("norm", input)
    return Tensor.norm(input, p, dim, keepdim, dtype)


def any(input, dim=None, keepdim=False):  # noqa: A001  (torch.any)
    if not isinstance(input, Tensor):
        raise _not_a_tensor("any", input)
    return Tensor.any(input, dim, keepdim)


def all(input, dim=None, keepdim=False):  # noqa: A001  (torch.all)
    if not isinstance(input, Tensor):
        raise _not_a_tensor("all", input)
    return Tensor.all(input, dim, keepdim)


def cumsum(input, dim, *, dtype=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("cumsum", input)
    return Tensor.cumsum(input, dim, dtype=dtype)


def softmax(input, dim, dtype=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("softmax", input)
    return Tensor.softmax(input, dim, dtype)


def log_softmax(input, dim, dtype=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("log_softmax", input)
    return Tensor.log_softmax(input, dim, dtype)


# --- linear algebra


def matmul(input, other):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("matmul", input)
    return Tensor.matmul(input, other)


def mm(input, mat2):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("mm", input)
    return Tensor.mm(input, mat2)


def bmm(input, mat2):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("bmm", input)
    return Tensor.bmm(input, mat2)


def count_nonzero(input, dim=None):
    """The number of non-zero elements (along ``dim``: an int or a tuple), as int64."""
    if not isinstance(input, Tensor):
        raise _not_a_tensor("count_nonzero", input)
    nz = input != 0
    return nz.sum() if dim is None else nz.sum(dim)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)``; one fused gemm when beta and alpha are 1."""
    if out is not None:
        raise NotImplementedError("addmm(out=...) is not supported by ferrograd")
    if not isinstance(input, Tensor):
        raise _not_a_tensor("addmm", input)
    if beta == 1 and alpha == 1:
        return _core._addmm(input, mat1, mat2)
    prod = mat1.mm(mat2) * alpha
    if beta == 0:  # input ignored, its NaN and inf included (as PyTorch)
        return prod
    return input * beta + prod


def mv(input, vec):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("mv", input)
    return Tensor.mv(input, vec)


def dot(input, tensor):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("dot", input)
    return Tensor.dot(input, tensor)


def outer(input, vec2):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("outer", input)
    return Tensor.outer(input, vec2)


# --- shapes, views, indexing


def flatten(input, start_dim=0, end_dim=-1):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("flatten", input)
    return Tensor.flatten(input, start_dim, end_dim)


def unflatten(input, dim, sizes):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("unflatten", input)
    return Tensor.unflatten(input, dim, sizes)


def transpose(input, dim0, dim1):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("transpose", input)
    return Tensor.transpose(input, dim0, dim1)


def swapaxes(input, axis0, axis1):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("swapaxes", input)
    return Tensor.swapaxes(input, axis0, axis1)


def permute(input, *dims):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("permute", input)
    return Tensor.permute(input, *dims)


def t(input):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("t", input)
    return Tensor.t(input)


def unsqueeze(input, dim):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("unsqueeze", input)
    return Tensor.unsqueeze(input, dim)


def squeeze(input, dim=None):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("squeeze", input)
    return Tensor.squeeze(input, dim)


def narrow(input, dim, start, length):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("narrow", input)
    return Tensor.narrow(input, dim, start, length)


def select(input, dim, index):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("select", input)
    return Tensor.select(input, dim, index)


def gather(input, dim, index):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("gather", input)
    return Tensor.gather(input, dim, index)


def scatter_add(input, dim, index, src):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("scatter_add", input)
    return Tensor.scatter_add(input, dim, index, src)


def index_select(input, dim, index):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("index_select", input)
    return Tensor.index_select(input, dim, index)


def index_add(input, dim, index, source):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("index_add", input)
    return Tensor.index_add(input, dim, index, source)


def split(tensor, split_size_or_sections, dim=0):
    if not isinstance(tensor, Tensor):
        raise _not_a_tensor("split", tensor)
    return Tensor.split(tensor, split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("chunk", input)
    return Tensor.chunk(input, chunks, dim)


def unbind(input, dim=0):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("unbind", input)
    return Tensor.unbind(input, dim)


def clone(input, *, memory_format=None):
    """A copy of ``input`` (recorded by autograd), with the strides ``memory_format`` asks for
    (``preserve_format`` by default: the strides of ``input`` if it is dense)."""
    if not isinstance(input, Tensor):
        raise _not_a_tensor("clone", input)
    _check_memory_format("clone", memory_format, optional=True)
    return _clone_as(input, preserve_format if memory_format is None else memory_format)


def detach(input):
    if not isinstance(input, Tensor):
        raise _not_a_tensor("detach", input)
    return Tensor.detach(input)


# --- ops with PyTorch's argument parsing (see _op_args.py); the signatures in the docstrings


def tril(*args, **kwargs):
    """``tril(input, diagonal=0)``"""
    a = _bind("tril", args, kwargs, ("input", "diagonal"), 1)
    return _tri(_input("tril", a), a, False)


def triu(*args, **kwargs):
    """``triu(input, diagonal=0)``"""
    a = _bind("triu", args, kwargs, ("input", "diagonal"), 1)
    return _tri(_input("triu", a), a, True)


def flip(*args, **kwargs):
    """``flip(input, dims)``"""
    a = _bind("flip", args, kwargs, ("input", "dims"), 2)
    return _flip(_input("flip", a), a, False)


def roll(*args, **kwargs):
    """``roll(input, shifts, dims=None)``"""
    a = _bind("roll", args, kwargs, ("input", "shifts", "dims"), 2)
    return _roll(_input("roll", a), a)


def tile(*args, **kwargs):
    """``tile(input, dims)``"""
    a = _bind("tile", args, kwargs, ("input", "dims"), 2)
    return _tile(_input("tile", a), a, False)


def topk(*args, **kwargs):
    """``topk(input, k, dim=-1, largest=True, sorted=True, *, out=None)`` (``out`` unsupported)"""
    _no_out("topk", kwargs)
    a = _bind("topk", args, kwargs, ("input", "k", "dim", "largest", "sorted"), 2)
    return _topk(_input("topk", a), a)


def sort(*args, **kwargs):
    """``sort(input, dim=-1, descending=False)`` or ``sort(input, *, stable, dim=-1,
    descending=False)`` (``out`` unsupported)"""
    input, dim, descending, stable = _sort_args("sort", args, kwargs, False)
    return sort_result(*_core._sort(input, dim, descending, stable))


def argsort(*args, **kwargs):
    """``argsort(input, dim=-1, descending=False)`` or ``argsort(input, *, stable, dim=-1,
    descending=False)``"""
    input, dim, descending, stable = _sort_args("argsort", args, kwargs, False)
    return _core._sort(input, dim, descending, stable)[1]


def scatter(*args, **kwargs):
    """``scatter(input, dim, index, src)`` or ``scatter(input, dim, index, value)``"""
    return _scatter(*_scatter_args(args, kwargs, False))


# --- padding and broadcasting


def constant_pad_nd(input, pad, value=0):
    """``torch.constant_pad_nd``: pad with ``value`` ((before, after) pairs from the last dim;
    negative amounts crop)."""
    return _core._constant_pad_nd(input, list(pad), value)


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


# --- comparisons of values


def isnan(input):
    return input != input


def isinf(input):
    if not input.is_floating_point():
        return zeros(input.shape, dtype=bool_)
    return input.abs() == float("inf")


def isfinite(input):
    if not input.is_floating_point():
        return ones(input.shape, dtype=bool_)
    return (input == input) & (input.abs() != float("inf"))


_SCALAR_TYPE_NAMES = {"torch.float32": "Float", "torch.float64": "Double", "torch.int64": "Long",
                      "torch.bool": "Bool"}


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol * |other|``, elementwise, as PyTorch computes it: equal
    values (infinities included) are close, an infinite error (inf against -inf) never is."""
    _check_tensor_args("isclose", input=input, other=other)
    if input.dtype != other.dtype:
        raise RuntimeError(
            f"{_SCALAR_TYPE_NAMES.get(str(input.dtype), input.dtype)} did not match "
            f"{_SCALAR_TYPE_NAMES.get(str(other.dtype), other.dtype)}"
        )
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    close = input == other
    if equal_nan and input.is_floating_point():
        close = close | (isnan(input) & isnan(other))
    if rtol == 0 and atol == 0:
        return close
    if input.dtype == bool_:  # bools are compared as numbers of the default dtype
        input, other = input.to(get_default_dtype()), other.to(get_default_dtype())
    error = (input - other).abs()
    return close | (isfinite(error) & (error <= atol + (rtol * other).abs()))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    _check_tensor_args("allclose", input=input, other=other)
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):
    """True if the tensors have the same shape and elements."""
    return input.shape == other.shape and bool((input == other).all())


# --- seeds


def manual_seed(seed):
    """Seeds the default generator and returns it."""
    _core.manual_seed(seed)
    return _core.default_generator


def seed():
    """Seeds the default generator from the OS's entropy and returns the seed."""
    return _core.default_generator.seed()


# --- torch.compile


_compile_warned = False


def compile(model=None, **kwargs):  # noqa: A001  (torch.compile)
    """``torch.compile`` as an identity: returns the model (or function) unchanged, warning once
    that nothing is compiled. Usable as ``@compile`` and ``@compile(mode=...)``."""
    global _compile_warned
    if not _compile_warned:
        _compile_warned = True
        warnings.warn("torch.compile is not supported by ferrograd: the model runs uncompiled",
                      UserWarning, stacklevel=2)
    if model is None:
        return lambda m: m
    return model


# --- memory formats: clone / contiguous / is_contiguous / to with ``memory_format=``
# (Tensor's methods call these; the native clone always returns a contiguous tensor)

_native_clone = Tensor.clone
_native_contiguous = Tensor.contiguous
_native_is_contiguous = Tensor.is_contiguous

# channels-last formats: (rank, permutation to the channels-last order, permutation back)
_CHANNELS_LAST = {
    channels_last: (4, (0, 2, 3, 1), (0, 3, 1, 2)),
    channels_last_3d: (5, (0, 2, 3, 4, 1), (0, 4, 1, 2, 3)),
}


def _channels_last_perms(t, memory_format):
    rank, to_last, back = _CHANNELS_LAST[memory_format]
    if t.dim() != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {memory_format._name} format")
    return to_last, back


def _is_contiguous_as(t, memory_format):
    """``t.is_contiguous(memory_format=...)``: PyTorch's stride test for each format."""
    if memory_format is contiguous_format or memory_format is preserve_format:
        return _native_is_contiguous(t)
    rank, to_last, _ = _CHANNELS_LAST[memory_format]
    if t.dim() != rank:
        return False
    sizes, strides = t.shape, t.stride()
    expected = 1
    for d in reversed(to_last):  # innermost (channels) first
        if sizes[d] != 1:
            if strides[d] != expected:
                return False
            expected *= sizes[d]
    return True


def _dense_order(t):
    """The dimensions of ``t`` from the largest stride to the smallest when ``t`` is dense
    and non-overlapping (its elements fill its storage span exactly once), else None."""
    sizes, strides = t.shape, t.stride()
    order = sorted(range(t.dim()), key=lambda d: (-strides[d], d))
    expected = 1
    for d in reversed(order):
        if sizes[d] == 1:
            continue
        if strides[d] != expected:
            return None
        expected *= sizes[d]
    return order


def _suggest_memory_format(t):
    for memory_format, (rank, _, _) in _CHANNELS_LAST.items():
        if t.dim() == rank and not _native_is_contiguous(t) and _is_contiguous_as(t, memory_format):
            return memory_format
    return contiguous_format


def _clone_as(t, memory_format):
    """A copy of ``t`` laid out as ``memory_format`` (a new tensor, recorded as CloneBackward0)."""
    if memory_format is preserve_format:
        if _native_is_contiguous(t) or t.numel() == 0:
            return _native_clone(t)
        order = _dense_order(t)
        if order is None:  # not dense: PyTorch then picks the layout the strides suggest
            memory_format = _suggest_memory_format(t)
            if memory_format is contiguous_format:
                return _native_clone(t)
        else:
            return t._clone_in_order(order)
    if memory_format is contiguous_format:
        return _native_clone(t)
    to_last, _ = _channels_last_perms(t, memory_format)
    return t._clone_in_order(list(to_last))


def _contiguous(t, memory_format):
    _check_memory_format("contiguous", memory_format)
    if memory_format is contiguous_format:
        return _native_contiguous(t)
    if _is_contiguous_as(t, memory_format):
        return t
    if memory_format is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return _clone_as(t, memory_format)


def _to_memory_format(t, dtype, copy, memory_format):
    """``t.to(dtype, copy=copy, memory_format=...)`` for a format other than preserve_format:
    ``t`` itself when nothing changes (PyTorch's aliasing rule), else a copy in that layout."""
    if dtype is not None and dtype != t.dtype:
        t = t._to_dtype(dtype, False)
        if _is_contiguous_as(t, memory_format):
            return t
    elif not copy and _suggest_memory_format(t) is memory_format:
        return t
    return _clone_as(t, memory_format)


def _check_tensor_args(fname, **args):
    for i, (name, v) in enumerate(args.items()):
        if not isinstance(v, Tensor):
            raise TypeError(
                f"{fname}(): argument '{name}' (position {i + 1}) must be Tensor, not {type(v).__name__}"
            )


# --- addcmul, addcdiv, lerp (native: one pass each, src/ops/pointwise.rs)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 * tensor2`` (broadcast, promoted; integer results truncate
    ``value``), in one pass (AddcmulBackward0)."""
    if out is not None:
        raise NotImplementedError("addcmul(out=...) is not supported by ferrograd")
    return _core._addc(input, tensor1, tensor2, value, False)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 / tensor2`` (broadcast, promoted; tensor1 and tensor2 may not
    both be integral), in one pass (AddcdivBackward0)."""
    if out is not None:
        raise NotImplementedError("addcdiv(out=...) is not supported by ferrograd")
    return _core._addc(input, tensor1, tensor2, value, True)


def _lerp_type_error(fname, args, method):
    """PyTorch's TypeError for lerp arguments of the wrong types (``args``: end and weight for
    the method form, input, end and weight for the function)."""
    names = [type(a).__name__ for a in args]
    got = ", ".join(names)
    head = f"{fname}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
    if not method:
        return TypeError(
            head + " * (Tensor input, Tensor end, Tensor weight, *, Tensor out = None)\n"
            " * (Tensor input, Tensor end, Number weight, *, Tensor out = None)\n"
        )
    # the method form lists each overload's mismatches (PyTorch marks a number weight too,
    # beside the bad end that made the Number overload fail)
    end = names[0] if isinstance(args[0], Tensor) else f"!{names[0]}!"
    why = "      didn't match because some of the arguments have invalid types: "
    w_tensor = names[1] if isinstance(args[1], Tensor) else f"!{names[1]}!"
    return TypeError(
        head + f" * (Tensor end, Tensor weight)\n{why}({end}, {w_tensor})\n"
        f" * (Tensor end, Number weight)\n{why}({end}, !{names[1]}!)\n"
    )


def lerp(input, end, weight, *, out=None):
    """``input + weight * (end - input)``, computed as PyTorch does (for ``|weight| >= 0.5`` as
    ``end - (end - input) * (1 - weight)``), weight a number (LerpBackward0) or a tensor
    (LerpBackward1)."""
    if out is not None:
        raise NotImplementedError("lerp(out=...) is not supported by ferrograd")
    if not isinstance(input, Tensor):
        raise _not_a_tensor("lerp", input)
    if not isinstance(end, Tensor) or not isinstance(weight, (Tensor, int, float)):
        raise _lerp_type_error("lerp", (input, end, weight), False)
    return _core._lerp(input, end, weight)


# --- norm_except_dim, _weight_norm (weight normalisation, nn.utils.weight_norm)


def norm_except_dim(v, pow=2, dim=0):  # noqa: A002  (torch's argument name)
    """The ``pow``-norm of ``v`` over every dimension but ``dim`` (kept, the others of size 1);
    ``dim=-1``: the norm of all of ``v`` (0-d)."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        return v.contiguous().view(v.size(0), -1).norm(pow, 1).view((v.size(0),) + (1,) * (v.dim() - 1))
    if dim == v.dim() - 1:
        return v.contiguous().view(-1, v.size(-1)).norm(pow, 0).view((1,) * (v.dim() - 1) + (v.size(-1),))
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _weight_norm(v, g, dim=0):
    """``v * (g / norm_except_dim(v, 2, dim))``: the weight of a weight-normalised layer."""
    return v * (g / norm_except_dim(v, 2, dim))
