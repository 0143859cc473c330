"""Which ``torch.func`` transforms are running on this thread, innermost last.

``ferrograd.func`` pushes ``"grad"`` (grad, grad_and_value, vjp, jacrev), ``"jvp"`` (jvp,
jacfwd, linearize) or ``"vmap"`` while it runs the user's function; ``autograd.Function.apply``
reads the stack to raise PyTorch's errors for Functions that do not support a transform.
"""

import threading

_state = threading.local()


def active():
    """The kinds of the transforms running on this thread, outermost first."""
    return getattr(_state, "stack", ())


class running:
    """Context manager: a transform of ``kind`` runs the user's function inside it."""

    def __init__(self, kind):
        self.kind = kind
        self.prev = ()

    def __enter__(self):
        self.prev = active()
        _state.stack = self.prev + (self.kind,)

    def __exit__(self, *exc):
        _state.stack = self.prev
