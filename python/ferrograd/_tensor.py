"""Tensor methods written in Python (argument parsing, conversions); the hot paths are in Rust.

They are the functions and properties of ``_TensorMethods``, which ``install()`` copies onto
the native class ``_core.Tensor``. Every other method of Tensor is native.
"""

import warnings

import numpy as np

from . import (
    _activations,
    _core,
    _functions,
    _index_functions,
    _math_functions,
    _reduction_functions,
    _sampling,
    _set_functions,
    _shape_functions,
    linalg,
)
from ._core import (
    Tensor,
    bfloat16,
    bool as bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from ._device import _CPU, device
from ._dtype import get_default_dtype
from ._factories import _rebuild_tensor, full, ones, tensor, zeros
from ._memory_format import _check_memory_format, contiguous_format, preserve_format
from ._op_args import (
    _bind,
    _correction,
    _dim_list,
    _flip,
    _repeat,
    _roll,
    _scatter,
    _scatter_args,
    _sort_args,
    _tile,
    _topk,
    _tri,
    _unpack_varargs,
)
from ._return_types import max_result, min_result, sort_result
from .autograd._engine import backward as _backward
from .autograd.graph import _register_post_accumulate_grad_hook, _register_tensor_hook

_NP_TYPESTR = {
    "torch.float32": "<f4", "torch.float64": "<f8", "torch.float16": "<f2", "torch.int64": "<i8",
    "torch.int32": "<i4", "torch.int16": "<i2", "torch.int8": "|i1", "torch.uint8": "|u1",
    "torch.bool": "|b1",
}
# the legacy type names (``x.type()``, ``x.type("torch.IntTensor")``)
_LEGACY_NAMES = {
    float32: "torch.FloatTensor", float64: "torch.DoubleTensor", float16: "torch.HalfTensor",
    bfloat16: "torch.BFloat16Tensor", int64: "torch.LongTensor", int32: "torch.IntTensor",
    int16: "torch.ShortTensor", int8: "torch.CharTensor", uint8: "torch.ByteTensor",
    bool_: "torch.BoolTensor",
}

_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information."
)


class _ArrayHolder:
    """Exposes a tensor's memory to numpy through ``__array_interface__`` (no copy)."""

    __slots__ = ("_t", "__array_interface__")

    def __init__(self, t):
        if str(t.dtype) not in _NP_TYPESTR:  # bfloat16: numpy has no such dtype
            raise TypeError("Got unsupported ScalarType BFloat16")
        self._t = t
        size = t.element_size()
        self.__array_interface__ = {
            "version": 3,
            "shape": tuple(t.shape),
            "typestr": _NP_TYPESTR[str(t.dtype)],
            "data": (t.data_ptr(), False),
            "strides": tuple(s * size for s in t.stride()),
        }


# the native in-place forms the Python ones below extend (they replace them on the class)
_native_div_ = Tensor.div_
_native_round_ = Tensor.round_


def _copy_in(self, op, *args, **kwargs):
    """The in-place form of ``op``: its out-of-place result copied into ``self``. When a graph
    is recorded, ``op`` runs on a copy of ``self``, whose old value its backward may need."""
    tensors = [self, *args, *(args[0] if args and isinstance(args[0], tuple) else ())]
    if _core.is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad for t in tensors):
        return self.copy_(op(self.clone(), *args, **kwargs))
    return self.copy_(op(self, *args, **kwargs))


class _TensorMethods:
    """Tensor's Python methods and properties; ``install()`` puts them on ``_core.Tensor``.

    (In this class body, ``float``, ``bool``, ``max``, ``any``, ... are methods; the
    methods themselves see Python's builtins.)
    """

    # --- properties

    @property
    def grad(self):
        g = self._grad
        if g is None and not self.is_leaf and not self.retains_grad:
            warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value):
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def device(self):
        return _CPU

    @property
    def is_cuda(self):
        return False

    @property
    def is_cpu(self):
        return True

    @property
    def layout(self):
        return "torch.strided"

    @property
    def is_sparse(self):
        return False

    # --- numpy

    __array_priority__ = 1000

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

    # --- autograd

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Computes the gradient of this tensor with respect to the graph's leaves."""
        _backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """Registers ``hook(grad) -> Tensor | None``, run when the gradient of this tensor is
        computed; a returned tensor replaces the gradient. Returns a handle with ``remove()``."""
        return _register_tensor_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Registers ``hook(tensor)``, run after the gradient was accumulated into ``.grad`` of
        this leaf. Returns a handle with ``remove()``."""
        return _register_post_accumulate_grad_hook(self, hook)

    # --- size, dtype and device

    def size(self, dim=None):
        if dim is None:
            return self.shape
        n = self.dim()
        if not -max(n, 1) <= dim < max(n, 1):
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-max(n, 1)}, {max(n, 1) - 1}], but got {dim})"
            )
        return self.shape[dim] if n else 1

    def to(self, *args, **kwargs):
        """``to(dtype)``, ``to("cpu")``, ``to(other)``, ``to(device, dtype)``; ``copy=True`` copies."""
        dtype = kwargs.pop("dtype", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        dev = kwargs.pop("device", None)
        memory_format = kwargs.pop("memory_format", preserve_format)
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
        _check_memory_format("to", memory_format)
        if memory_format is not preserve_format:
            return _functions._to_memory_format(self, dtype, copy, memory_format)
        if dtype is None:
            return self.clone() if copy else self
        return self._to_dtype(dtype, copy)

    def float(self):
        return self._to_dtype(float32)

    def double(self):
        return self._to_dtype(float64)

    def long(self):
        return self._to_dtype(int64)

    def bool(self):
        return self._to_dtype(bool_)

    def int(self, memory_format=None):
        return self._to_dtype(int32)

    def short(self, memory_format=None):
        return self._to_dtype(int16)

    def char(self, memory_format=None):
        return self._to_dtype(int8)

    def byte(self, memory_format=None):
        return self._to_dtype(uint8)

    def half(self, memory_format=None):
        return self._to_dtype(float16)

    def bfloat16(self, memory_format=None):
        return self._to_dtype(bfloat16)

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            return _LEGACY_NAMES[self.dtype]
        if isinstance(dtype, str):
            by_name = {v: k for k, v in _LEGACY_NAMES.items()}
            if dtype not in by_name:
                raise ValueError(f"invalid type: '{dtype}'")
            dtype = by_name[dtype]
        return self.to(dtype)

    def type_as(self, other):
        return self.to(other.dtype)

    def cpu(self):
        return self

    def cuda(self, *args, **kwargs):
        raise RuntimeError("Torch not compiled with CUDA enabled")

    # --- memory formats (see _functions.py: the native clone is always contiguous)

    def clone(self, *args, memory_format=None):
        if args:
            raise TypeError(f"clone() takes 0 positional arguments but {len(args)} was given")
        return _functions.clone(self, memory_format=memory_format)

    def contiguous(self, *args, memory_format=contiguous_format):
        if args:
            raise TypeError(f"contiguous() takes 0 positional arguments but {len(args)} was given")
        return _functions._contiguous(self, memory_format)

    def is_contiguous(self, *args, memory_format=contiguous_format):
        if args:
            raise TypeError(f"is_contiguous() takes 0 positional arguments but {len(args)} was given")
        _check_memory_format("is_contiguous", memory_format)
        return _functions._is_contiguous_as(self, memory_format)

    # --- arithmetic and comparisons
    # The binary ops (mul, pow, maximum, eq, logical_and, bitwise_and, ...) are native methods
    # generated from the core's op table (src/ops/binary.rs); only their PyTorch extras are here.

    add = _functions.add  # (other, *, alpha=1), as torch.add
    sub = _functions.sub
    subtract = sub

    def add_(self, other, *, alpha=1):
        if type(alpha) is int and alpha == 1:  # alpha=True or 1.0 are checked as PyTorch does
            return self._add_(other)
        return _core._add_alpha_(self, other, alpha, False)

    def sub_(self, other, *, alpha=1):
        if type(alpha) is int and alpha == 1:
            return self._sub_(other)
        return _core._add_alpha_(self, other, alpha, True)

    multiply = Tensor.mul

    def div(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return _core.div(self, other)
        return _core._div_rounding(self, other, rounding_mode)

    def div_(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return _native_div_(self, other)
        return _core._div_rounding_(self, other, rounding_mode)

    divide = div
    divide_ = div_

    round = _functions.round

    def round_(self, *, decimals=None):
        if decimals is None:
            return _native_round_(self)
        return _core._round_decimals_(self, decimals)

    negative_ = Tensor.neg_
    true_divide = Tensor.div

    def square(self):
        return self * self

    def addcmul(self, tensor1, tensor2, *, value=1):
        return _core._addc(self, tensor1, tensor2, value, False, True)

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return _core._addc_(self, tensor1, tensor2, value, False)

    def addcdiv(self, tensor1, tensor2, *, value=1):
        return _core._addc(self, tensor1, tensor2, value, True, True)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return _core._addc_(self, tensor1, tensor2, value, True)

    def lerp(self, end, weight):
        if not isinstance(end, Tensor) or not isinstance(weight, (Tensor, int, float)):
            raise _functions._lerp_type_error("lerp", (end, weight), True)
        return _core._lerp(self, end, weight)

    def lerp_(self, end, weight):
        if not isinstance(end, Tensor) or not isinstance(weight, (Tensor, int, float)):
            raise _functions._lerp_type_error("lerp_", (end, weight), True)
        return _core._lerp_(self, end, weight)

    def negative(self):
        return self.neg()

    greater = Tensor.gt
    less = Tensor.lt

    def clamp(self, min=None, max=None):
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            return _functions.clamp(self, min, max)
        return self._clamp(min, max)

    clip = clamp

    def clip_(self, min=None, max=None):
        return self.clamp_(min, max)

    def where(self, condition, other):
        return _core.where(condition, self, other)

    def silu(self):
        return self._silu()

    # --- reductions

    def max(self, dim=None, keepdim=False, *, axis=None):
        if isinstance(dim, Tensor):
            return _core.maximum(self, dim)
        if dim is None:
            dim = axis
        if dim is None:
            return self._max_all(True)
        v, i = self._max_dim(dim, keepdim, True)
        return max_result(v, i)

    def min(self, dim=None, keepdim=False, *, axis=None):
        if isinstance(dim, Tensor):
            return _core.minimum(self, dim)
        if dim is None:
            dim = axis
        if dim is None:
            return self._max_all(False)
        v, i = self._max_dim(dim, keepdim, False)
        return min_result(v, i)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):
        if isinstance(dim, bool):  # var(unbiased)
            dim, unbiased = None, dim
        if dim is None:
            dim = axis
        dims = _dim_list(dim)
        return self._var(dims, _correction(unbiased, correction), keepdim, False)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):
        if isinstance(dim, bool):  # std(unbiased)
            dim, unbiased = None, dim
        if dim is None:
            dim = axis
        dims = _dim_list(dim)
        return self._var(dims, _correction(unbiased, correction), keepdim, True)

    def det(self):
        return linalg.det(self)

    def inverse(self):
        return linalg.inv(self)

    def logdet(self):
        return linalg._torch_logdet(self)

    def slogdet(self):
        return linalg._torch_slogdet(self)

    def pinverse(self, rcond=1e-15):
        return linalg.pinv(self, rcond)

    def matrix_power(self, n):
        return linalg.matrix_power(self, n)

    def matrix_exp(self):
        return linalg.matrix_exp(self)

    def cross(self, other, dim=None):
        return linalg._torch_cross(self, other, dim)

    def cholesky_solve(self, input2, upper=False):
        return linalg._torch_cholesky_solve(self, input2, upper)

    def cholesky_inverse(self, upper=False):
        return linalg._torch_cholesky_inverse(self, upper)

    def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
        return linalg._torch_triangular_solve(self, A, upper, transpose, unitriangular)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        if p == "fro" or p is None:
            p = 2.0
        elif p == "nuc":
            return linalg.matrix_norm(self, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
        dims = _dim_list(dim)
        t = self.to(dtype) if dtype is not None else self
        return t._norm(float(p), dims, keepdim)

    def any(self, dim=None, keepdim=False):
        b = self.to(bool_)
        r = b.sum() > 0 if dim is None else b.sum(dim, keepdim=keepdim) > 0
        return r.byte() if self.dtype == uint8 else r  # (uint8 in, uint8 out, as PyTorch)

    def all(self, dim=None, keepdim=False):
        b = self.to(bool_)
        r = (b.logical_not().sum() == 0 if dim is None
             else b.logical_not().sum(dim, keepdim=keepdim) == 0)
        return r.byte() if self.dtype == uint8 else r

    # --- splitting and shapes

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
            if any(s < 0 for s in sizes):
                raise RuntimeError(
                    f"split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={sizes}"
                )
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
        return self.split(size, dim)

    def unbind(self, dim=0):
        return tuple(self._unbind(dim))

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

    def view_as(self, other):
        return self.view(tuple(other.shape))

    def reshape_as(self, other):
        return self.reshape(tuple(other.shape))

    # --- ops with PyTorch's argument parsing (see _op_args.py)

    def tril(self, *args, **kwargs):
        """``tril(diagonal=0)``"""
        return _tri(self, _bind("tril", args, kwargs, ("diagonal",), 0), False)

    def triu(self, *args, **kwargs):
        """``triu(diagonal=0)``"""
        return _tri(self, _bind("triu", args, kwargs, ("diagonal",), 0), True)

    def flip(self, *args, **kwargs):
        """``flip(dims)``, also ``flip(*dims)``"""
        return _flip(self, _bind("flip", _unpack_varargs(args), kwargs, ("dims",), 1), True)

    def roll(self, *args, **kwargs):
        """``roll(shifts, dims=None)``"""
        return _roll(self, _bind("roll", args, kwargs, ("shifts", "dims"), 1))

    def repeat(self, *args, **kwargs):
        """``repeat(repeats)``, also ``repeat(*repeats)``"""
        return _repeat(self, _bind("repeat", _unpack_varargs(args), kwargs, ("repeats",), 1))

    def tile(self, *args, **kwargs):
        """``tile(dims)``, also ``tile(*dims)``"""
        return _tile(self, _bind("tile", _unpack_varargs(args), kwargs, ("dims",), 1), True)

    def topk(self, *args, **kwargs):
        """``topk(k, dim=-1, largest=True, sorted=True)``"""
        return _topk(self, _bind("topk", args, kwargs, ("k", "dim", "largest", "sorted"), 1))

    def sort(self, *args, **kwargs):
        """``sort(dim=-1, descending=False)`` or ``sort(*, stable, dim=-1, descending=False)``"""
        _, dim, descending, stable = _sort_args("sort", args, kwargs, True)
        return sort_result(*_core._sort(self, dim, descending, stable))

    def argsort(self, *args, **kwargs):
        """``argsort(dim=-1, descending=False)`` or ``argsort(*, stable, dim=-1, descending=False)``"""
        _, dim, descending, stable = _sort_args("argsort", args, kwargs, True)
        return _core._sort(self, dim, descending, stable)[1]

    def scatter(self, *args, **kwargs):
        """``scatter(dim, index, src)`` or ``scatter(dim, index, value)``"""
        _, dim, index, src, value, reduce = _scatter_args(args, kwargs, True)
        return _scatter(self, dim, index, src, value, reduce)

    # --- iteration, formatting, membership

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

    # --- new tensors like this one

    def new_tensor(self, data, dtype=None, requires_grad=False, **kw):
        return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, requires_grad=False, **kw):
        return zeros(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, requires_grad=False, **kw):
        return ones(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, requires_grad=False, **kw):
        return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, requires_grad=False, **kw):
        return zeros(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    # --- activations

    hardshrink = _activations.hardshrink
    prelu = _activations.prelu

    # --- random fills

    uniform_ = _sampling.uniform_
    normal_ = _sampling.normal_
    bernoulli_ = _sampling.bernoulli_
    exponential_ = _sampling.exponential_
    geometric_ = _sampling.geometric_
    log_normal_ = _sampling.log_normal_
    cauchy_ = _sampling.cauchy_
    bernoulli = _sampling._tensor_bernoulli
    multinomial = _sampling.multinomial

    def random_(self, from_=0, to=None, *, generator=None, **kw):
        from_ = kw.pop("from", from_)
        if to is None:
            from_, to = 0, (from_ if from_ else (1 << 24 if self.dtype == float32 else
                                                  1 << 53 if self.is_floating_point() else (1 << 63) - 1))
        _core._fill_random(self, "randint", float(from_), float(to), generator)
        return self

    # --- dims moved, diagonals, products (_shape_functions.py)

    swapdims = _shape_functions.swapdims
    diagonal = _shape_functions.diagonal
    diag = _shape_functions.diag
    diag_embed = _shape_functions.diag_embed
    trace = _shape_functions.trace
    kron = _shape_functions.kron

    # --- reductions and scans (_reduction_functions.py)

    aminmax = _reduction_functions.aminmax
    nansum = _reduction_functions.nansum
    nanmean = _reduction_functions.nanmean
    cumprod = _reduction_functions.cumprod
    logcumsumexp = _reduction_functions.logcumsumexp
    cummax = _reduction_functions.cummax
    cummin = _reduction_functions.cummin
    median = _reduction_functions.median
    nanmedian = _reduction_functions.nanmedian
    mode = _reduction_functions.mode
    kthvalue = _reduction_functions.kthvalue
    quantile = _reduction_functions.quantile
    nanquantile = _reduction_functions.nanquantile

    def cumprod_(self, dim, *, dtype=None):
        return _copy_in(self, _reduction_functions.cumprod, dim, dtype=dtype)

    # --- sets, counts and bins (_set_functions.py)

    unique = _set_functions.unique
    unique_consecutive = _set_functions.unique_consecutive
    bincount = _set_functions.bincount
    histc = _set_functions.histc

    # --- indexing (_index_functions.py); the in-place forms copy the result in

    masked_select = _index_functions.masked_select
    take = _index_functions.take
    take_along_dim = _index_functions.take_along_dim
    index_fill = _index_functions.index_fill
    masked_scatter = _index_functions.masked_scatter
    scatter_reduce = _index_functions.scatter_reduce
    index_put = _index_functions.index_put
    argwhere = _index_functions.argwhere

    def nonzero(self, *, as_tuple=False):
        return _index_functions.nonzero(self, as_tuple=as_tuple)

    def index_fill_(self, dim, index, value):
        _core._index_fill(self, dim, index, value, True)
        return self

    def masked_scatter_(self, mask, source):
        _core._masked_scatter(self, mask, source, True)
        return self

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        return _copy_in(self, _index_functions.scatter_reduce, dim, index, src, reduce, include_self=include_self)

    def index_put_(self, indices, values, accumulate=False):
        return _copy_in(self, _index_functions.index_put, indices, values, accumulate)

    # --- copying and pickling

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
        return (_rebuild_tensor, (self.detach().numpy().copy(), self.requires_grad))

    # --- the torch functions of the same names (_functions.py)

    def isnan(self):
        return _functions.isnan(self)

    def isinf(self):
        return _functions.isinf(self)

    def isfinite(self):
        return _functions.isfinite(self)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return _functions.isclose(self, other, rtol, atol, equal_nan)

    def count_nonzero(self, dim=None):
        return _functions.count_nonzero(self, dim)

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        return _functions.addmm(self, mat1, mat2, beta=beta, alpha=alpha)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return _functions.allclose(self, other, rtol, atol, equal_nan)

    def equal(self, other):
        return _functions.equal(self, other)

    # --- math with arguments, composites and aliases (_math_functions.py)
    arccos, arccos_ = Tensor.acos, Tensor.acos_
    arccosh, arccosh_ = Tensor.acosh, Tensor.acosh_
    arcsin, arcsin_ = Tensor.asin, Tensor.asin_
    arcsinh, arcsinh_ = Tensor.asinh, Tensor.asinh_
    arctan, arctan_ = Tensor.atan, Tensor.atan_
    arctanh, arctanh_ = Tensor.atanh, Tensor.atanh_
    arctan2, arctan2_ = Tensor.atan2, Tensor.atan2_
    logit, logit_ = _math_functions.logit, _math_functions.logit_
    xlogy, xlogy_ = _math_functions.xlogy, _math_functions.xlogy_
    mvlgamma = _math_functions.mvlgamma

    def mvlgamma_(self, p):
        if not self.is_floating_point():  # PyTorch's message names the dtypes the other way round
            name = _shape_functions._scalar_type_name
            raise RuntimeError(f"mvlgamma: result type {name(self.dtype)} can't be cast to the "
                               f"desired output type {name(get_default_dtype())}")
        return self.copy_(_math_functions.mvlgamma(self, p))

    def polygamma(self, n):
        return _math_functions.polygamma(n, self)

    def polygamma_(self, n):
        return _math_functions._write_result(self, _math_functions.polygamma(n, self))


# what every class body has, not methods to copy
_CLASS_MACHINERY = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                    "__firstlineno__", "__static_attributes__"}


def install(*more):
    """Puts the methods and properties of ``_TensorMethods`` (and of the classes ``more``, the
    ``TensorMethods`` of other modules) on ``_core.Tensor``."""
    for cls in (_TensorMethods, *more):
        for name, value in vars(cls).items():
            if name not in _CLASS_MACHINERY:
                setattr(Tensor, name, value)
