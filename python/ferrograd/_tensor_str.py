"""Tensor printing, ported from PyTorch's ``torch/_tensor_str.py``.

Only what ferrograd needs is kept: dense CPU tensors of dtype float32,
float64, int64 and bool.  The number formatting is done on the values of a
numpy copy of the tensor, converted to Python scalars exactly the way PyTorch
does it (``Tensor.item()`` / ``Tensor.tolist()``), so that the output matches
PyTorch character for character.

Public API:
    tensor_repr(t)         -> what ``repr(t)`` / ``str(t)`` prints in PyTorch
    set_printoptions(...)  same arguments and semantics as torch.set_printoptions
    get_printoptions()     -> dict, same as torch.get_printoptions()
    printoptions(**kw)     context manager, same as torch.printoptions
"""

import contextlib
import dataclasses
import math
from typing import Any, Optional

import numpy as np

from . import _core
from ._dtype import bfloat16, get_default_dtype

inf = math.inf


@dataclasses.dataclass
class __PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: Optional[bool] = None


PRINT_OPTS = __PrinterOptions()


def set_printoptions(
    precision=None,
    threshold=None,
    edgeitems=None,
    linewidth=None,
    profile=None,
    sci_mode=None,
):
    r"""Set options for printing (same semantics as ``torch.set_printoptions``).

    Args:
        precision: Number of digits of precision for floating point output
            (default = 4).
        threshold: Total number of array elements which trigger summarization
            rather than full `repr` (default = 1000).
        edgeitems: Number of array items in summary at beginning and end of
            each dimension (default = 3).
        linewidth: The number of characters per line for the purpose of
            inserting line breaks (default = 80).
        profile: Sane defaults for pretty printing. Can override with any of
            the above options. (any one of `default`, `short`, `full`)
        sci_mode: Enable (True) or disable (False) scientific notation. If
            None (default), it is chosen automatically.  Note that, as in
            PyTorch, every call resets ``sci_mode`` to the given value.
    """
    if profile is not None:
        if profile == "default":
            PRINT_OPTS.precision = 4
            PRINT_OPTS.threshold = 1000
            PRINT_OPTS.edgeitems = 3
            PRINT_OPTS.linewidth = 80
        elif profile == "short":
            PRINT_OPTS.precision = 2
            PRINT_OPTS.threshold = 1000
            PRINT_OPTS.edgeitems = 2
            PRINT_OPTS.linewidth = 80
        elif profile == "full":
            PRINT_OPTS.precision = 4
            PRINT_OPTS.threshold = inf
            PRINT_OPTS.edgeitems = 3
            PRINT_OPTS.linewidth = 80

    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    r"""Gets the current options for printing, as a dictionary that
    can be passed as ``**kwargs`` to set_printoptions().
    """
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    r"""Context manager that temporarily changes the print options.  Accepted
    arguments are same as :func:`set_printoptions`."""
    old_kwargs = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old_kwargs)


# ---------------------------------------------------------------------------
# Formatting of the tensor contents.  In this module "a tensor" is a numpy
# array; the values are turned into Python scalars (float / int / bool)
# before formatting, which is what PyTorch's ``item()`` and ``tolist()`` do.
# ---------------------------------------------------------------------------


def _is_floating(arr):
    return arr.dtype.kind == "f"


class _Formatter:
    def __init__(self, arr):
        self.floating_dtype = _is_floating(arr)
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1

        flat = arr.reshape(-1)

        if not self.floating_dtype:
            for value in flat.tolist():
                value_str = f"{value}"
                self.max_width = max(self.max_width, len(value_str))
            return

        nonzero_finite_vals = flat[np.isfinite(flat) & (flat != 0)]

        if nonzero_finite_vals.size == 0:
            # no valid number, do nothing
            return

        # Convert to double for easy calculation (as PyTorch does on CPU).
        nonzero_finite_abs = np.abs(nonzero_finite_vals).astype(np.float64)
        nonzero_finite_min = nonzero_finite_abs.min()
        nonzero_finite_max = nonzero_finite_abs.max()

        # The comparison is done in the tensor's own dtype, like torch.ceil.
        if np.any(nonzero_finite_vals != np.ceil(nonzero_finite_vals)):
            self.int_mode = False

        if PRINT_OPTS.sci_mode is None:
            # the ratio may overflow to inf (e.g. 1e300 / 1e-300); that is fine
            with np.errstate(over="ignore"):
                ratio = nonzero_finite_max / nonzero_finite_min
            self.sci_mode = bool(
                ratio > 1000.0
                or nonzero_finite_max > 1.0e8
                or nonzero_finite_min < 1.0e-4
            )
        else:
            self.sci_mode = PRINT_OPTS.sci_mode

        values = nonzero_finite_vals.tolist()  # Python floats
        if self.int_mode:
            # in int_mode for floats, all numbers are integers, and we append
            # a decimal to nonfinites to indicate that the tensor is of
            # floating type. add 1 to the len to account for this.
            if self.sci_mode:
                for value in values:
                    value_str = f"{{:.{PRINT_OPTS.precision}e}}".format(value)
                    self.max_width = max(self.max_width, len(value_str))
            else:
                for value in values:
                    value_str = f"{value:.0f}"
                    self.max_width = max(self.max_width, len(value_str) + 1)
        else:
            if self.sci_mode:
                for value in values:
                    value_str = f"{{:.{PRINT_OPTS.precision}e}}".format(value)
                    self.max_width = max(self.max_width, len(value_str))
            else:
                for value in values:
                    value_str = f"{{:.{PRINT_OPTS.precision}f}}".format(value)
                    self.max_width = max(self.max_width, len(value_str))

    def width(self):
        return self.max_width

    def format(self, value):
        if self.floating_dtype:
            if self.sci_mode:
                ret = f"{{:{self.max_width}.{PRINT_OPTS.precision}e}}".format(value)
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{{:.{PRINT_OPTS.precision}f}}".format(value)
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _scalar_str(arr, formatter):
    return formatter.format(arr.item())


def _vector_str(arr, indent, summarize, formatter):
    # length includes spaces and comma between elements
    element_length = formatter.width() + 2
    elements_per_line = max(
        1, math.floor((PRINT_OPTS.linewidth - indent) / (element_length))
    )

    edgeitems = PRINT_OPTS.edgeitems
    if summarize and not edgeitems:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * edgeitems:
        data = (
            [formatter.format(val) for val in arr[:edgeitems].tolist()]
            + [" ..."]
            + [formatter.format(val) for val in arr[-edgeitems:].tolist()]
        )
    else:
        data = [formatter.format(val) for val in arr.tolist()]

    data_lines = [
        data[i : i + elements_per_line] for i in range(0, len(data), elements_per_line)
    ]
    lines = [", ".join(line) for line in data_lines]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_with_formatter(arr, indent, summarize, formatter):
    dim = arr.ndim

    if dim == 0:
        return _scalar_str(arr, formatter)

    if dim == 1:
        return _vector_str(arr, indent, summarize, formatter)

    edgeitems = PRINT_OPTS.edgeitems
    size0 = arr.shape[0]
    if summarize and size0 > 2 * edgeitems:
        slices = (
            [
                _tensor_str_with_formatter(arr[i], indent + 1, summarize, formatter)
                for i in range(edgeitems)
            ]
            + ["..."]
            + [
                _tensor_str_with_formatter(arr[i], indent + 1, summarize, formatter)
                for i in range(size0 - edgeitems, size0)
            ]
        )
    else:
        slices = [
            _tensor_str_with_formatter(arr[i], indent + 1, summarize, formatter)
            for i in range(size0)
        ]

    tensor_str = ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices)
    return "[" + tensor_str + "]"


def get_summarized_data(arr):
    """The elements that are shown when summarizing (used to pick the format)."""
    dim = arr.ndim
    edgeitems = PRINT_OPTS.edgeitems
    if dim == 0:
        return arr
    if dim == 1:
        if arr.shape[0] > 2 * edgeitems:
            # note: with edgeitems == 0 this is the whole array, as in PyTorch
            return np.concatenate((arr[:edgeitems], arr[-edgeitems:]))
        else:
            return arr
    if not edgeitems:
        return np.empty([0] * dim, dtype=arr.dtype)
    elif arr.shape[0] > 2 * edgeitems:
        start = [arr[i] for i in range(edgeitems)]
        end = [arr[i] for i in range(arr.shape[0] - edgeitems, arr.shape[0])]
        return np.stack([get_summarized_data(x) for x in (start + end)])
    else:
        return np.stack([get_summarized_data(x) for x in arr])


def _tensor_str(arr, indent):
    if arr.size == 0:
        return "[]"

    summarize = arr.size > PRINT_OPTS.threshold
    formatter = _Formatter(get_summarized_data(arr) if summarize else arr)
    return _tensor_str_with_formatter(arr, indent, summarize, formatter)


def _add_suffixes(tensor_str, suffixes, indent, force_newline):
    tensor_strs = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        suffix_len = len(suffix)
        if force_newline or last_line_len + suffix_len + 2 > PRINT_OPTS.linewidth:
            tensor_strs.append(",\n" + " " * indent + suffix)
            last_line_len = indent + suffix_len
            force_newline = False
        else:
            tensor_strs.append(", " + suffix)
            last_line_len += suffix_len + 2
    tensor_strs.append(")")
    return "".join(tensor_strs)


def _default_dtype_name():
    """str() of the default floating dtype ('torch.float32' unless changed)."""
    return str(get_default_dtype())


def tensor_repr(t) -> str:
    """What PyTorch prints for ``repr(t)`` (and ``str(t)``)."""
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []

    values = t.detach()
    # bfloat16 has no numpy dtype: its values are exactly float32 ones
    arr = np.asarray((values.float() if values.dtype == bfloat16 else values).numpy())
    dtype_name = str(t.dtype)
    default_dtype_name = _default_dtype_name()
    has_default_dtype = dtype_name in (
        default_dtype_name,
        "torch.int64",
        "torch.bool",
    )

    if arr.size == 0:
        # Explicitly print the shape if it is not (0,), to match NumPy behavior
        if arr.ndim != 1:
            suffixes.append("size=" + str(tuple(arr.shape)))
        # In an empty tensor, there are no elements to infer if the dtype
        # should be int64, so it must be shown explicitly.
        if dtype_name != default_dtype_name:
            suffixes.append("dtype=" + dtype_name)
        tensor_str = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + str(tuple(arr.shape)))
        if not has_default_dtype:
            suffixes.append("dtype=" + dtype_name)
        tensor_str = _tensor_str(arr, indent)

    grad_fn = t.grad_fn
    if grad_fn is not None:
        grad_fn_name = type(grad_fn).__name__
        if grad_fn_name == "CppFunction":
            grad_fn_name = grad_fn.name().rsplit("::", 1)[-1]
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")

    tangent = _core._tangent(t)  # forward-mode AD (None outside a dual level)
    if tangent is not None:
        suffixes.append(f"tangent={tangent}")

    return _add_suffixes(prefix + tensor_str, suffixes, indent, force_newline=False)
