"""``torch.amp``: mixed precision on the CPU.

``autocast("cpu", dtype=torch.bfloat16)`` (or float16) makes the ops of PyTorch's CPU
lower-precision list (matmul, mm, bmm, addmm, linear, convolutions, scaled_dot_product_attention,
the recurrent cells) compute in that dtype and the losses in float32, through differentiable
casts, as PyTorch's CPU autocast does; the state is per thread. Autocast on a device without
CUDA disables itself with PyTorch's warning, and ``GradScaler`` is the identity it is in PyTorch
when disabled.
"""

import functools
import warnings

from . import _core
from ._core import bfloat16, float16

_CPU_DTYPES = (bfloat16, float16)
_default_cpu_dtype = bfloat16  # torch.get_autocast_dtype("cpu")


def is_autocast_available(device_type):
    return device_type == "cpu"


def is_autocast_enabled(device_type="cpu"):
    """Whether an autocast region is active on this thread for ``device_type``."""
    return device_type == "cpu" and _core._get_autocast() is not None


def get_autocast_dtype(device_type="cpu"):
    return _core._get_autocast() or _default_cpu_dtype


def is_autocast_cpu_enabled():
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


class autocast:
    """``torch.amp.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``, as a
    context manager or a decorator."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(
                f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else _default_cpu_dtype
        if enabled and device_type == "cuda":
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          stacklevel=2)
            enabled = False
        elif device_type != "cpu" and device_type != "cuda":
            raise RuntimeError(
                "User specified an unsupported autocast device_type '" + device_type + "'")
        if enabled and self.fast_dtype not in _CPU_DTYPES:
            warnings.warn(
                "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                stacklevel=2)
            enabled = False
        self._enabled = enabled
        self._prev = []

    def __enter__(self):
        self._prev.append(_core._get_autocast())
        if self.device == "cpu":
            _core._set_autocast(self.fast_dtype if self._enabled else None)
        return self

    def __exit__(self, *exc):
        _core._set_autocast(self._prev.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled):
                return fn(*args, **kwargs)
        return wrapper


def _to_float32(t):
    """An input of PyTorch's CPU float32 autocast list (the losses computed in Python): half
    precision cast to float32 inside an autocast region."""
    if _core._get_autocast() is not None and t.dtype in _CPU_DTYPES:
        return t.float()
    return t


class GradScaler:
    """``torch.amp.GradScaler``: gradient scaling for float16 training on CUDA. Without CUDA it
    is disabled (with PyTorch's warning when asked to be enabled), and a disabled scaler passes
    everything through: ``scale(loss)`` is ``loss``, ``step`` is ``optimizer.step()``."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
        self._enabled = False

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        return outputs

    def unscale_(self, optimizer):
        pass

    def step(self, optimizer, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        pass

    def get_scale(self):
        return 1.0

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        pass
