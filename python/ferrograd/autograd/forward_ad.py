"""``torch.autograd.forward_ad``: forward-mode AD with dual tensors.

Inside ``with dual_level():``, ``make_dual(x, t)`` gives a view of ``x`` carrying the tangent
``t``; every op on it computes its outputs' tangents as it runs, and ``unpack_dual`` reads them
back. As in PyTorch there is one level at a time (a nested one raises), forward AD ignores
``no_grad``, and the tangents are dropped when the level exits.

Every op's Jacobian-vector product comes from one rule in the core (``src/autograd/forward.rs``):
the op's backward formula is linear in the output gradient and differentiable, so the vjp of
that vjp, seeded with the input tangents, is ``J t``. A custom ``autograd.Function`` needs its
own ``jvp`` staticmethod, as in PyTorch.
"""

from typing import Any, NamedTuple

from .. import _core
from .grad_mode import _DecoratorContextManager

__all__ = [
    "UnpackedDualTensor",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
    "dual_level",
]

_current_level = -1


def enter_dual_level():
    """Enters a new forward grad level and returns it."""
    global _current_level
    level = _core._enter_dual_level()
    _current_level = level
    return level


def exit_dual_level(*, level=None):
    """Exits the latest forward grad level (its tangents are dropped)."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported."
        )
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    _core._exit_dual_level()
    _current_level = level - 1


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` whose tangent is ``tangent`` (same shape), for forward-mode AD."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    if not tensor.is_floating_point():
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not tangent.is_floating_point():
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    return _core._make_dual(tensor, tangent)


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: the primal and the tangent (None if it has none)."""

    primal: Any
    tangent: Any


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor``: inside a level the primal is a view of ``tensor``
    without tangent and the tangent is the tensor given to ``make_dual`` (or computed by the
    ops); outside any level, ``(tensor, None)``."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    primal, tangent = _core._unpack_dual(tensor)
    return UnpackedDualTensor(primal, tangent)


class dual_level(_DecoratorContextManager):
    """Context manager (or decorator) entering a forward AD level for its body."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()


def _has_tangent(t):
    """Whether ``t`` is a dual tensor (a path differentiable in ``t`` must be taken for it)."""
    return _current_level >= 0 and _core._tangent(t) is not None


def _tangents(args):
    """The tangent of each argument of a custom Function (None for non-tensors and tensors
    without one), or None when no argument has a tangent."""
    if _current_level < 0:
        return None
    tangents = [_core._tangent(a) if isinstance(a, _core.Tensor) else None for a in args]
    return tangents if any(t is not None for t in tangents) else None
