"""Grad modes: thread-local, usable as context managers and as decorators.

As decorators they follow PyTorch's ``torch.utils._contextlib``: a plain function runs inside
the mode; a generator function gets the mode inside each resumption (``next``/``send``/
``throw``/``close``), the caller's mode being restored at each ``yield``; anything else that
returns an awaitable or iterator (``async def``, async generators) is called inside the mode,
so only the creation of the coroutine is covered, not its body (PyTorch 2.x does the same).
"""

import functools
import inspect
import sys
import warnings

from .. import _core


def _wrap_generator(ctx_factory, func):
    """PyTorch's ``_wrap_generator``: enters a fresh context around each resumption of the
    generator, and forwards what the caller sends or throws."""

    @functools.wraps(func)
    def generator_context(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException:
                    with ctx_factory():
                        response = gen.throw(*sys.exc_info())
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value

    return generator_context


class _DecoratorContextManager:
    def __call__(self, orig_func):
        if inspect.isclass(orig_func):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. You "
                "should only decorate functions or methods. To preserve the current behavior of "
                "class decoration, you can directly decorate the `__init__` method and nothing "
                "else.",
                FutureWarning,
                stacklevel=2,
            )

            def func(*args, **kwargs):
                return orig_func(*args, **kwargs)
        else:
            func = orig_func
        if inspect.isgeneratorfunction(func):
            return _wrap_generator(self.clone, func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
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
    """Treated as no_grad (ferrograd has no separate inference tensors). Usable as
    ``@inference_mode()``, ``@inference_mode(False)`` and as a bare ``@inference_mode``."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode=True):
        self.mode = mode
        self.prev = False

    def _args(self):
        return (self.mode,)

    def __enter__(self):
        # as c10::InferenceMode: inference_mode(True) disables grad mode, inference_mode(False)
        # enables it (even inside no_grad)
        self.prev = _core.is_grad_enabled()
        _core._set_grad_enabled(not self.mode)

    def __exit__(self, *exc):
        _core._set_grad_enabled(self.prev)


def is_grad_enabled():
    return _core.is_grad_enabled()
