"""``ferrograd.nn.utils``: gradient clipping and parameter/vector conversion."""

from . import clip_grad, convert_parameters  # noqa: F401
from .clip_grad import (
    _clip_grads_with_norm_ as clip_grads_with_norm_,
    _get_total_norm as get_total_norm,
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grads_with_norm_",
    "clip_grad_value_",
    "get_total_norm",
    "parameters_to_vector",
    "vector_to_parameters",
]
