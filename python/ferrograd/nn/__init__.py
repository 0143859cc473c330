"""``ferrograd.nn``: for now only the functional ops the core provides."""

from . import functional  # noqa: F401
