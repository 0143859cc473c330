"""Argument parsing and message helpers shared by the ``ferrograd.nn.functional`` families.

Tuple expansion (``_single``/``_pair``/...), PyTorch's argument-parser checks for int and
int-list arguments, reduction-argument parsing for the losses, and the type and shape
spellings of ATen's error messages.
"""

import collections.abc
import numbers
import operator
import warnings
from itertools import repeat

from ... import _core

Tensor = _core.Tensor


# ------------------------------------------------------------- tuple expansion


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    r"""Reverse the order of ``t`` and repeat each element ``n`` times (conv padding -> ``F.pad``)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    if isinstance(out_size, numbers.Integral):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size) :])]


# ------------------------------------------------------- int and int-list args


def _is_int(x):
    if isinstance(x, bool):
        return False
    if isinstance(x, Tensor):
        return x.dim() == 0 and not x.is_floating_point() and x.dtype != _core.bool
    try:
        operator.index(x)
    except TypeError:
        return False
    return True


def _int_arg(value, fn, name, pos=None):
    """``value`` as a Python int, with the TypeError of PyTorch's argument parser."""
    if not _is_int(value):
        where = f" (position {pos})" if pos is not None else ""
        raise TypeError(f"{fn}(): argument '{name}'{where} must be int, not {type(value).__name__}")
    return operator.index(value)


def _int_list(value, n, fn, name, pos=None):
    """An ``int[n]`` argument as a list: a single int is repeated ``n`` times (``n=None``: no int)."""
    where = f" (position {pos})" if pos is not None else ""
    if _is_int(value) and n is not None:
        return [operator.index(value)] * n
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{fn}(): argument '{name}'{where} must be tuple of ints, not {type(value).__name__}")
    value = list(value)
    if value and not _is_int(value[0]):
        raise TypeError(
            f"{fn}(): argument '{name}'{where} must be tuple of ints, but found element of type "
            f"{type(value[0]).__name__} at pos 0"
        )
    for v in value:
        if not _is_int(v):
            raise TypeError(
                f"{fn}(): argument '{name}' failed to unpack the object at pos {pos} with error "
                f'"type must be tuple of ints,but got {type(v).__name__}"'
            )
    return [operator.index(v) for v in value]


# ------------------------------------------------------------------ reduction


class _Reduction:
    @staticmethod
    def get_enum(reduction):
        if reduction == "none":
            return 0
        if reduction == "mean":
            return 1
        if reduction == "elementwise_mean":
            warnings.warn(
                "reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                stacklevel=2,
            )
            return 1
        if reduction == "sum":
            return 2
        raise ValueError(f"{reduction} is not a valid value for reduction")

    @staticmethod
    def legacy_get_string(size_average, reduce, emit_warning=True):
        if size_average is None:
            size_average = True
        if reduce is None:
            reduce = True
        if size_average and reduce:
            ret = "mean"
        elif reduce:
            ret = "sum"
        else:
            ret = "none"
        if emit_warning:
            warnings.warn(
                f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                stacklevel=3,
            )
        return ret


def _reduction(reduction, size_average=None, reduce=None):
    """The reduction string, from the legacy arguments if given; validated."""
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    _Reduction.get_enum(reduction)
    return "mean" if reduction == "elementwise_mean" else reduction


# ------------------------------------------------------------------- messages

# names of the scalar types in ATen's messages (``c10::TypeMeta``)
_C10_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}


def _c10_name(dtype):
    return _C10_NAMES.get(str(dtype).replace("torch.", ""), str(dtype))


def _scalar_name(dtype):
    # 'torch.int64' -> 'Long', as ATen names scalar types in "not implemented for" messages
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(
        str(dtype).replace("torch.", ""), str(dtype)
    )


def _type_name(t):
    # 'torch.DoubleTensor' -> 'Double', as PyTorch names scalar types in its messages
    return t.type().split(".")[-1].replace("Tensor", "")


def _fmt(shape):
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"
