"""``torch.amp``: mixed precision. ferrograd has no float16/bfloat16 yet: autocast on a device
without CUDA disables itself with PyTorch's warning, CPU autocast raises NotImplementedError
when enabled, and ``GradScaler`` is the identity it is in PyTorch when disabled."""

import functools
import warnings


class autocast:
    """``torch.amp.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``, as a
    context manager or a decorator."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(
                f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = dtype
        if enabled and device_type == "cuda":
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          stacklevel=2)
            enabled = False
        if enabled:
            raise NotImplementedError(
                f"autocast on '{device_type}' (computing in {dtype or 'bfloat16'}) is not "
                "supported by ferrograd yet: it has no float16/bfloat16 dtypes")
        self._enabled = enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


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
