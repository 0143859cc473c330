"""``Variable``: PyTorch's legacy name for Tensor, kept for ``Variable._execution_engine``.

The execution engine's ``queue_callback`` installs a *final callback*: a function that runs once
the backward pass in progress has finished every node (gradients accumulated, post-accumulate
hooks run) and before ``backward()`` / ``autograd.grad()`` returns, on the thread that called it.
Callbacks queued by callbacks run too. DistributedDataParallel uses it to wait for its
gradient reductions at the end of backward.
"""

import warnings

from .. import _core
from .._factories import empty

__all__ = ["Variable"]


class _ExecutionEngine:
    """The part of PyTorch's ``torch._C._EngineBase`` that Python code uses."""

    def __init__(self):
        # one list of callbacks per backward pass in progress (nested ones from hooks on top)
        self._tasks = []

    def _in_backward(self):
        return bool(self._tasks)

    def queue_callback(self, callback):
        if not self._tasks:
            raise RuntimeError("Final callbacks can only be installed during backward pass.")
        self._tasks[-1].append(callback)

    def run(self, backward):
        """Runs ``backward()`` (one call into the native engine) as a backward pass: callbacks
        queued meanwhile run after it, before this returns its result."""
        callbacks = []
        self._tasks.append(callbacks)
        try:
            result = backward()
            done = 0
            while done < len(callbacks):  # a callback may queue more
                callbacks[done]()
                done += 1
        finally:
            self._tasks.pop()
        return result


class _VariableMeta(type):  # the metaclass of _core.Tensor is ``type``
    def __instancecheck__(cls, other):
        return isinstance(other, _core.Tensor)


class Variable(_core.Tensor, metaclass=_VariableMeta):
    """PyTorch's legacy ``torch.autograd.Variable``: tensors are variables (every tensor is an
    instance). ``Variable(data, requires_grad=False)`` returns a tensor: ``data`` detached
    (sharing its memory), with ``requires_grad`` set. What remains besides is the engine
    handle ``Variable._execution_engine``."""

    _execution_engine = _ExecutionEngine()

    def __new__(cls, data=None, requires_grad=False, volatile=False, _grad_fn=None, name=None):
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if _grad_fn is not None:
            raise NotImplementedError("Variable(_grad_fn=...) is not supported by ferrograd")
        if data is None:
            data = empty(0)
        elif not isinstance(data, _core.Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(bool(requires_grad))
