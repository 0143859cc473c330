"""``torch.cuda`` on a machine without CUDA: ferrograd computes on the CPU only, so scripts that
ask (``if torch.cuda.is_available(): ...``) take their CPU branch, and seeding is a no-op, as in
a CPU-only PyTorch build."""

from . import amp  # noqa: F401  (``torch.cuda.amp.GradScaler`` is the deprecated spelling)


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def manual_seed(seed):
    """Seeds the CUDA generators: there are none, so nothing happens (as in PyTorch)."""


def manual_seed_all(seed):
    """As ``manual_seed``."""


def seed():
    """Nothing to seed without CUDA."""


def seed_all():
    """Nothing to seed without CUDA."""


def empty_cache():
    """There is no CUDA cache to empty."""


def synchronize(device=None):
    raise AssertionError("Torch not compiled with CUDA enabled")


def current_device():
    raise AssertionError("Torch not compiled with CUDA enabled")


def is_bf16_supported(including_emulation=True):
    return False
