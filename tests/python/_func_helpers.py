"""Helpers for the parity tests of issue 13 (torch.func, GradientEdge, setup_context, grad-mode
decorators): scenarios run once with ``ferrograd`` and once with ``torch`` passed as ``torch``;
what they logged is compared, floats with a relative tolerance (the two libraries may round the
last bits differently).

A logged tensor is ``("T", dtype name, shape, values, requires_grad)``, so a result that should
be detached (or not) is compared too. ferrograd's one-off "vmap runs as a loop" warning is left
out of the logs (it is tested on its own), and so are DeprecationWarnings (PyTorch's internals
raise some about themselves).
"""

import math
import warnings

import pytest

from _hooks_helpers import (
    attempt as _attempt,
    scenario_registry,  # noqa: F401  (the test modules import it from here)
)


def val(x):
    """What a scenario logs of a value (tensors with dtype, shape and requires_grad)."""
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x
    if isinstance(x, dict):
        return ("dict", tuple((k, val(v)) for k, v in x.items()))
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(val(i) for i in x))
    if hasattr(x, "requires_grad") and hasattr(x, "dtype"):
        return ("T", str(x.dtype).replace("torch.", ""), tuple(x.shape), x.detach().tolist(),
                bool(x.requires_grad))
    return repr(x)


def attempt(log, fn):
    """Runs ``fn()`` and logs its value (as ``val`` here puts it), or what it raised."""
    _attempt(log, fn, val)


def run(fn, mod):
    """Runs scenario ``fn`` with ``mod`` as ``torch``; returns what it logged (its warnings
    last)."""
    log = []
    prev = mod.is_grad_enabled()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(mod, log)
    except Exception as e:  # noqa: BLE001
        log.append(("raised", type(e).__name__, str(e)))
    finally:
        mod.set_grad_enabled(prev)
    log.append(("warnings", tuple(
        (w.category.__name__, str(w.message).split("\n")[0]) for w in caught
        if not str(w.message).startswith("ferrograd's torch.func.vmap")
        # PyTorch's internals warn about their own deprecations (torch.jit.script)
        and not issubclass(w.category, DeprecationWarning)
    )))
    return log


def same(a, b, rel=1e-6, abs_=1e-9):
    """Whether two logs are equal, floats up to a tolerance."""
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, rel, abs_) for x, y in zip(a, b))
    return a == b


def assert_same(ours, theirs):
    if not same(ours, theirs):
        for i, (a, b) in enumerate(zip(ours, theirs)):
            if not same(a, b):
                pytest.fail(f"entry {i} differs:\n  ferrograd: {a}\n  torch:     {b}")
        pytest.fail(f"lengths differ:\n  ferrograd: {ours}\n  torch:     {theirs}")
