"""Padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad`` and
``CircularPad`` in 1, 2 and 3 dimensions, each a call of ``F.pad`` with PyTorch's arguments,
attributes and reprs."""

from .. import functional as F
from ..functional._utils import _ntuple, _pair, _quadruple
from .module import Module

__all__ = [
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]

# per number of padded dims: how `padding` is expanded, and the input dims accepted
_EXPAND = {1: _pair, 2: _quadruple, 3: _ntuple(6)}


class _PadNd(Module):
    """``F.pad(input, self.padding, mode)`` for the ``dims`` last dimensions."""

    __constants__ = ["padding"]
    mode: str | None = None  # both set by the subclasses
    dims: int | None = None

    def __init__(self, padding):
        super().__init__()
        self.padding = _EXPAND[self.dims](padding)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _CircularPadNd(_PadNd):
    mode = "circular"

    def forward(self, input):
        if input.dim() not in (self.dims + 1, self.dims + 2):
            raise ValueError(
                f"expected {self.dims + 1}D or {self.dims + 2}D input (got {input.dim()}D input)"
            )
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    r"""Pads the last dimension by wrapping the input around."""

    dims = 1


class CircularPad2d(_CircularPadNd):
    r"""Pads the last 2 dimensions by wrapping the input around."""

    dims = 2


class CircularPad3d(_CircularPadNd):
    r"""Pads the last 3 dimensions by wrapping the input around."""

    dims = 3


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    r"""Pads the last dimension with the reflection of the input at its edges."""

    dims = 1


class ReflectionPad2d(_ReflectionPadNd):
    r"""Pads the last 2 dimensions with the reflection of the input at its edges."""

    dims = 2


class ReflectionPad3d(_ReflectionPadNd):
    r"""Pads the last 3 dimensions with the reflection of the input at its edges."""

    dims = 3


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    r"""Pads the last dimension by repeating the input's edge values."""

    dims = 1


class ReplicationPad2d(_ReplicationPadNd):
    r"""Pads the last 2 dimensions by repeating the input's edge values."""

    dims = 2


class ReplicationPad3d(_ReplicationPadNd):
    r"""Pads the last 3 dimensions by repeating the input's edge values."""

    dims = 3


class _ConstantPadNd(_PadNd):
    __constants__ = ["padding", "value"]
    mode = "constant"

    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    r"""Pads the last dimension with ``value``."""

    dims = 1


class ConstantPad2d(_ConstantPadNd):
    r"""Pads the last 2 dimensions with ``value``."""

    dims = 2


class ConstantPad3d(_ConstantPadNd):
    r"""Pads the last 3 dimensions with ``value``."""

    dims = 3


class ZeroPad1d(ConstantPad1d):
    r"""Pads the last dimension with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    r"""Pads the last 2 dimensions with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    r"""Pads the last 3 dimensions with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"
