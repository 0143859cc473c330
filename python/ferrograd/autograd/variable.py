"""``Variable``: PyTorch's legacy name for Tensor, kept for ``Variable._execution_engine``.

The execution engine's ``queue_callback`` installs a *final callback*: a function that runs once
the backward pass in progress has finished every node (gradients accumulated, post-accumulate
hooks run) and before ``backward()`` / ``autograd.grad()`` returns, on the thread that called it.
Callbacks queued by callbacks run too. DistributedDataParallel uses it to wait for its
gradient reductions at the end of backward.
"""

from .. import _core

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


class Variable(_core.Tensor):
    """PyTorch's ``torch.autograd.Variable``: tensors are variables; what remains is the
    engine handle ``Variable._execution_engine``."""

    _execution_engine = _ExecutionEngine()
