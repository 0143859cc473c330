"""``torch.cpu``: the one device ferrograd computes on."""

from . import amp


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """CPU work is done when its call returns: nothing to wait for."""


__all__ = ["amp", "is_available", "device_count", "current_device", "synchronize"]
