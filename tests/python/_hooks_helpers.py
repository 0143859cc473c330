"""Helpers shared by the hook tests (issue 5): test_hooks_*.py, test_anomaly_mode.py and
test_custom_function_ctx.py.

Parity tests run each scenario twice, once with ``ferrograd`` and once with ``torch`` passed as
``torch``, and compare what it logged: values, the order in which hooks ran, and the type and
message of every exception. They skip without PyTorch (the ``real_torch`` fixture of conftest.py).
The closed-form tests beside them always run: gradients worked out by hand, call counts and orders.
"""

import warnings

import pytest

import ferrograd


class HookError(Exception):
    """Raised by hooks, to check that exceptions come out of backward with their own type."""


def val(x):
    """What a scenario logs of a value: tensors as rounded nested lists."""
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return "nan" if x != x else round(x, 6)
    if isinstance(x, (tuple, list)):
        return tuple(val(i) for i in x)
    if hasattr(x, "requires_grad"):
        return ("T", val(x.detach().tolist()))
    return repr(x)


def attempt(log, fn, val=val):
    """Runs ``fn()`` and logs what it raised (type name and message), or its value (as ``val``
    puts it)."""
    try:
        log.append(("ok", val(fn())))
    except Exception as e:  # noqa: BLE001 - the point is to compare whatever is raised
        log.append(("raised", type(e).__name__, str(e)))


def scenario_registry():
    """A test module's scenarios (name -> function) and the ``@scenario`` decorator adding to them."""
    scenarios = {}

    def scenario(fn):
        scenarios[fn.__name__] = fn
        return fn

    return scenarios, scenario


def run(fn, mod):
    """Runs scenario ``fn`` with ``mod`` (ferrograd or torch) as ``torch``; returns what it logged."""
    log = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(mod, log)
    except Exception as e:  # noqa: BLE001
        log.append(("raised", type(e).__name__, str(e)))
    finally:
        mod.autograd.set_detect_anomaly(False)
    log.append(("warnings", tuple(
        (w.category.__name__, warning_text(w)) for w in caught
        # PyTorch gives this one once per process (see test_backward_create_graph_warns)
        if not str(w.message).startswith("Using backward() with create_graph=True")
    )))
    return log


def warning_text(w):
    """A warning's first line without PyTorch's "(Triggered internally at <C++ file>)"."""
    return str(w.message).split("\n")[0].split(" (Triggered internally at ")[0]


# scenarios that fail because of bugs in the Rust engine (see the report of issue 5)
ENGINE_BUGS = {}


def parity_params(scenarios):
    """The ``name`` parameters of a module's test_parity_with_torch: its scenarios, the known
    engine bugs among them marked xfail."""
    return [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=ENGINE_BUGS[n]))
        if n in ENGINE_BUGS else n
        for n in scenarios
    ]


def f64(values, requires_grad=True):
    """A float64 ferrograd tensor, requiring grad unless told otherwise."""
    return ferrograd.tensor(values, dtype=ferrograd.float64, requires_grad=requires_grad)
