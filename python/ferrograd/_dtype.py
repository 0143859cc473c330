"""Dtypes: the dtype objects and their aliases, the default dtype, the numpy <-> dtype maps.

The default dtype is ``_default_dtype`` here; read it at call time (``_dtype._default_dtype``
or ``get_default_dtype()``), never copy it with ``from ._dtype import _default_dtype``.
"""

import numpy as np

from ._core import (
    bool,  # noqa: A004  (ferrograd.bool is the dtype, as torch.bool)
    dtype,
    float32,
    float64,
    int64,
)

__all__ = [
    "dtype", "float32", "float64", "int64", "bool", "float", "double", "long",
    "get_default_dtype", "set_default_dtype",
]

float = float32  # noqa: A001
double = float64
long = int64

# dtype names -> dtypes
_DTYPES = {"float32": float32, "float64": float64, "int64": int64, "bool": bool}
# numpy dtype names -> dtypes (the numpy dtypes a tensor can share memory with)
_NP_TO_DTYPE = {"float32": float32, "float64": float64, "int64": int64, "bool": bool}
# dtypes -> numpy dtypes
_DTYPE_TO_NP = {float32: np.float32, float64: np.float64, int64: np.int64, bool: np.bool_}

_default_dtype = float32


def get_default_dtype():
    """The dtype of new floating-point tensors (float32 unless changed)."""
    return _default_dtype


def set_default_dtype(d):
    """Sets the dtype of new floating-point tensors: float32 or float64."""
    global _default_dtype
    if d not in (float32, float64):
        raise TypeError("only floating-point types are supported as the default type")
    _default_dtype = d
