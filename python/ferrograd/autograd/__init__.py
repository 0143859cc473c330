"""``ferrograd.autograd``: backward, grad, custom Functions, grad modes and gradcheck.

``backward`` and ``grad`` are defined in ``_engine.py``, so that the submodules (``functional``)
import them from there rather than from this package.
"""

from .._core import Tensor
from . import forward_ad, functional, graph
from ._engine import backward, grad
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .variable import Variable

__all__ = [
    "Variable",
    "backward",
    "grad",
    "Function",
    "FunctionCtx",
    "once_differentiable",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "gradcheck",
    "gradgradcheck",
    "GradcheckError",
    "graph",
    "forward_ad",
    "functional",
    "detect_anomaly",
    "set_detect_anomaly",
]
