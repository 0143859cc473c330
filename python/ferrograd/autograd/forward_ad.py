"""``torch.autograd.forward_ad``: the levels of forward-mode AD, without dual tensors.

ferrograd has no forward-mode AD: ``make_dual`` raises NotImplementedError. The levels
(``dual_level``, ``enter_dual_level``, ``exit_dual_level``) work, and ``unpack_dual`` of a
tensor gives ``(tensor, None)`` as PyTorch does for a tensor without a tangent, so code that only
checks for tangents runs. Jacobian-vector products are available through ``torch.func.jvp``,
``torch.func.jacfwd`` and ``torch.autograd.functional.jvp``, computed with reverse mode.

Why not dual tensors computed lazily (the tangent found by a double vjp when ``unpack_dual`` is
called)? The dual tensor would have to be part of a reverse-mode graph, so it and everything
computed from it would report ``requires_grad=True`` (``.numpy()``, in-place ops on leaves and
``requires_grad`` checks would then behave unlike PyTorch), and anything computed under
``no_grad`` (which PyTorch's forward AD ignores) would silently lose its tangent.
"""

from typing import Any, NamedTuple

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
    _current_level += 1
    return _current_level


def exit_dual_level(*, level=None):
    """Exits the latest forward grad level."""
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
    _current_level = level - 1


def make_dual(tensor, tangent, *, level=None):
    """Not supported: ferrograd has no forward-mode AD (see the module docstring)."""
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
    raise NotImplementedError(
        "torch.autograd.forward_ad.make_dual: ferrograd does not support forward-mode AD (dual "
        "tensors); use torch.func.jvp, torch.func.jacfwd or torch.autograd.functional.jvp, which "
        "compute Jacobian-vector products with reverse mode"
    )


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: the primal and the tangent (always None here)."""

    primal: Any
    tangent: Any


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor``. No tensor has a tangent in ferrograd, so the tangent
    is None; inside a level the primal is a view of ``tensor``, as in PyTorch."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(tensor.view_as(tensor), None)


class dual_level(_DecoratorContextManager):
    """Context manager (or decorator) entering a forward AD level for its body."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()
