"""``linear`` of ``ferrograd.nn.functional``."""

from ... import _core

__all__ = ["linear"]


def linear(input, weight, bias=None):
    """``y = x A^T + b`` (one fused addmm for a batch of vectors)."""
    return _core.linear(input, weight, bias)
