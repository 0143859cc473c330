"""Flatten parameters into one vector and back."""

from ... import _core
from ..._core import cat
from ...autograd.grad_mode import no_grad
from ..modules.module import _typename

Tensor = _core.Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    r"""Flatten an iterable of parameters into a single vector."""
    return cat([param.view(-1) for param in parameters])


def vector_to_parameters(vec, parameters):
    r"""Copy slices of the vector ``vec`` into an iterable of parameters, in place."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    pointer = 0
    with no_grad():
        for param in parameters:
            num_param = param.numel()
            param.copy_(vec[pointer:pointer + num_param].view_as(param))
            pointer += num_param
