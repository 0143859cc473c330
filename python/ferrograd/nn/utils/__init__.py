"""``ferrograd.nn.utils``: gradient clipping, parameter/vector conversion, packed sequences
(``rnn``), parametrizations, weight and spectral normalization."""

from . import clip_grad, convert_parameters, parametrizations, parametrize, rnn  # noqa: F401
from .clip_grad import (
    _clip_grads_with_norm_ as clip_grads_with_norm_,
    _get_total_norm as get_total_norm,
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grads_with_norm_",
    "clip_grad_value_",
    "get_total_norm",
    "parameters_to_vector",
    "vector_to_parameters",
    "parametrizations",
    "parametrize",
    "rnn",
    "weight_norm",
    "remove_weight_norm",
    "spectral_norm",
    "remove_spectral_norm",
]
