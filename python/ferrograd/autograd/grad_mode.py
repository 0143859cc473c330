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


class _GradMode(_NoParam):
    """Sets grad mode to ``MODE`` inside the block and restores the previous mode after."""

    MODE = True

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _core.is_grad_enabled()
        _core._set_grad_enabled(self.MODE)

    def __exit__(self, *exc):
        _core._set_grad_enabled(self.prev)


class no_grad(_GradMode):
    """Disables gradient recording in this block (or function)."""

    MODE = False


class enable_grad(_GradMode):
    """Enables gradient recording in this block (or function)."""

    MODE = True


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


class inference_mode(_DecoratorContextManager):
    """Treated as no_grad (ferrograd has no separate inference tensors)."""

    def __init__(self, mode=True):
        self.mode = mode
        self.prev = False

    def _args(self):
        return (self.mode,)

    def __enter__(self):
        self.prev = _core.is_grad_enabled()
        _core._set_grad_enabled(self.prev and not self.mode)

    def __exit__(self, *exc):
        _core._set_grad_enabled(self.prev)


def is_grad_enabled():
    return _core.is_grad_enabled()
