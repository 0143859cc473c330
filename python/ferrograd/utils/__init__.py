"""``ferrograd.utils``."""

import importlib

from . import data  # noqa: F401


def __getattr__(name):
    # ``checkpoint`` is imported on first use: it needs ``ferrograd.autograd``, whose import
    # imports ``ferrograd.utils.hooks`` (and so this package) first.
    if name == "checkpoint":
        return importlib.import_module(".checkpoint", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
