"""``dropout`` of ``ferrograd.nn.functional``."""

from ..._factories import rand

__all__ = ["dropout"]


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        scale = input.new_zeros(())
    else:
        keep = rand(tuple(input.shape), dtype=input.dtype) >= p
        scale = keep.to(input.dtype) * (1.0 / (1.0 - p))
    return input.mul_(scale) if inplace else input * scale
