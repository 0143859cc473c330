"""``Dropout``."""

from .. import functional as F
from .module import Module

__all__ = ["Dropout"]


class _DropoutNd(Module):
    __constants__ = ["p", "inplace"]

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    r"""During training, zeroes each element with probability ``p`` and scales the output by
    ``1 / (1 - p)``; in evaluation mode it returns the input."""

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)
