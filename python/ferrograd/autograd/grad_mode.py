"""Grad modes: thread-local, usable as context managers and as decorators."""

import functools

from .. import _core


class _DecoratorContextManager:
    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
                return func(*args, **kwargs)

        return wrapper

    def _args(self):
        return ()

    def clone(self):
        return self.__class__(*self._args())


class _NoParam(_DecoratorContextManager):
    """Usable as ``@no_grad()`` and as a bare ``@no_grad``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParam):
    """Disables gradient recording in this block (or function)."""

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _core.is_grad_enabled()
        _core._set_grad_enabled(False)

    def __exit__(self, *exc):
        _core._set_grad_enabled(self.prev)


class enable_grad(_NoParam):
    """Enables gradient recording in this block (or function)."""

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _core.is_grad_enabled()
        _core._set_grad_enabled(True)

    def __exit__(self, *exc):
        _core._set_grad_enabled(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode on or off; takes effect at once, and as a context manager restores it."""

    def __init__(self, mode):
        self.prev = _core.is_grad_enabled()
        self.mode = bool(mode)
        _core._set_grad_enabled(self.mode)

    def _args(self):
        return (self.mode,)

    def __call__(self, func):
        _core._set_grad_enabled(self.prev)
        return super().__call__(func)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _core._set_grad_enabled(self.prev)


class inference_mode(no_grad):
    """Treated as no_grad (ferrograd has no separate inference tensors)."""

    def __init__(self, mode=True):
        super().__init__()
        self.mode = mode

    def __enter__(self):
        self.prev = _core.is_grad_enabled()
        _core._set_grad_enabled(not self.mode and self.prev)


def is_grad_enabled():
    return _core.is_grad_enabled()
