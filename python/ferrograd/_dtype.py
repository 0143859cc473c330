"""Dtypes: the dtype objects and their aliases, the default dtype, the numpy <-> dtype maps.

The default dtype is ``_default_dtype`` here; read it at call time (``_dtype._default_dtype``
or ``get_default_dtype()``), never copy it with ``from ._dtype import _default_dtype``.
"""

import builtins

import numpy as np

from ._core import (
    _set_default_dtype,
    bfloat16,
    bool,  # noqa: A004  (ferrograd.bool is the dtype, as torch.bool)
    can_cast,
    dtype,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    result_type,
    uint8,
)

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
    "float64", "float", "double", "half", "long", "int", "short", "get_default_dtype",
    "set_default_dtype", "promote_types", "result_type", "can_cast", "iinfo", "finfo",
]

float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16

# dtype names -> dtypes
_DTYPES = {
    "bool": bool, "uint8": uint8, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
    "float16": float16, "bfloat16": bfloat16, "float32": float32, "float64": float64,
}
# numpy dtype names -> dtypes (the numpy dtypes a tensor can share memory with; numpy has no
# bfloat16)
_NP_TO_DTYPE = {
    "bool": bool, "uint8": uint8, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
    "float16": float16, "float32": float32, "float64": float64,
}
# dtypes -> numpy dtypes
_DTYPE_TO_NP = {
    bool: np.bool_, uint8: np.uint8, int8: np.int8, int16: np.int16, int32: np.int32,
    int64: np.int64, float16: np.float16, float32: np.float32, float64: np.float64,
}


class iinfo:
    """``torch.iinfo(dtype)``: the range of an integer dtype."""

    def __init__(self, type):
        if not isinstance(type, dtype) or type.is_floating_point or type is bool:
            raise TypeError(
                "torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                f"'{type!r}'" if isinstance(type, dtype) else
                f"iinfo(): argument 'type' must be torch.dtype, not {builtins.type(type).__name__}"
            )
        info = np.iinfo(_DTYPE_TO_NP[type])
        self.bits = info.bits
        self.min = builtins.int(info.min)
        self.max = builtins.int(info.max)
        self.dtype = repr(type).removeprefix("torch.")

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


# bfloat16: 8 exponent bits as float32, 7 mantissa bits
_BF16 = {"bits": 16, "eps": 2.0**-7, "max": (2 - 2.0**-7) * 2.0**127, "tiny": 2.0**-126,
         "resolution": 0.01}


class finfo:
    """``torch.finfo(dtype)``: the limits of a floating-point dtype (the default dtype when
    called without one)."""

    def __init__(self, type=None):
        if type is None:
            type = _default_dtype
        if not isinstance(type, dtype) or not type.is_floating_point:
            raise TypeError(
                "torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                f"'{type!r}'" if isinstance(type, dtype) else
                f"finfo(): argument 'type' must be torch.dtype, not {builtins.type(type).__name__}"
            )
        if type is bfloat16:
            v = _BF16
        else:
            info = np.finfo(_DTYPE_TO_NP[type])
            v = {"bits": info.bits, "eps": builtins.float(info.eps), "max": builtins.float(info.max),
                 "tiny": builtins.float(info.tiny), "resolution": 10.0**-info.precision}
        self.bits = v["bits"]
        self.eps = v["eps"]
        self.max = v["max"]
        self.min = -v["max"]
        self.tiny = self.smallest_normal = v["tiny"]
        self.resolution = v["resolution"]
        self.dtype = repr(type).removeprefix("torch.")

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


_default_dtype = float32


def get_default_dtype():
    """The dtype of new floating-point tensors (float32 unless changed)."""
    return _default_dtype


def set_default_dtype(d):
    """Sets the dtype of new floating-point tensors (and of Python floats in arithmetic)."""
    global _default_dtype
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _set_default_dtype(d)
    _default_dtype = d
