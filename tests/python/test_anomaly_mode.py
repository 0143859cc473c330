"""Anomaly mode: its flags and context managers, the nan check, the forward traceback warned
on a backward error, and the in-place hint.

Parity tests run each scenario with ferrograd and with torch and compare what it logged; they
skip without PyTorch. The closed-form tests below them always run. Helpers: _hooks_helpers.py.
"""

import warnings

import pytest

import ferrograd
from _hooks_helpers import HookError, attempt, f64, parity_params, run, scenario_registry, val, warning_text

SCENARIOS, scenario = scenario_registry()


# --- Anomaly mode --------------------------------------------------------------------------------


@scenario
def anomaly_flags(torch, log):
    log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    torch.autograd.set_detect_anomaly(True)
    log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    torch.autograd.set_detect_anomaly(False)
    with torch.autograd.set_detect_anomaly(True, check_nan=False):
        log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    with torch.autograd.detect_anomaly():
        log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
        with torch.autograd.detect_anomaly(check_nan=False):
            log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
        log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    torch.set_anomaly_enabled(True, False)
    log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    torch.set_anomaly_enabled(False)
    log.append((torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))


@scenario
def anomaly_nan_in_backward(torch, log):
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    y = x.sqrt()
    log.append(("forward", val(y)))
    with torch.autograd.detect_anomaly():
        attempt(log, lambda: x.sqrt().sum().backward())
    log.append(("x.grad", val(x.grad)))
    with torch.autograd.detect_anomaly(check_nan=False):
        attempt(log, lambda: x.sqrt().sum().backward())
    log.append(("x.grad", val(x.grad)))
    y.sum().backward()  # anomaly off: no check


@scenario
def anomaly_nan_from_custom_function(torch, log):
    class NanBack(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, g * float("nan")

    a = torch.tensor([1.0], requires_grad=True)
    b = torch.tensor([2.0], requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        attempt(log, lambda: NanBack.apply(a, b).sum().backward())
    log.append(("grads", val(a.grad), val(b.grad)))


@scenario
def anomaly_error_in_backward_warns(torch, log):
    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            raise HookError("bad backward")

    a = torch.tensor([1.0], requires_grad=True)
    with torch.autograd.detect_anomaly():
        out = Bad.apply(a)  # the forward line the traceback must show
        out2 = out.exp()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly():
            attempt(log, lambda: out2.sum().backward())
    texts = [str(w.message) for w in caught if w.category is UserWarning]
    head = "Error detected in BadBackward. Traceback of forward call that caused the error:"
    found = [t for t in texts if t.startswith(head)]
    log.append(("warned", len(found)))
    if found:
        log.append(("shows forward line", "out = Bad.apply(a)" in found[0]))
    # a node created outside anomaly mode has no forward traceback
    b = torch.tensor([1.0], requires_grad=True)
    out3 = Bad.apply(b)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly():
            attempt(log, lambda: out3.backward())
    texts = [warning_text(w) for w in caught]
    log.append(("no trace", [t for t in texts if "Error detected" in t]))
    # without anomaly mode: no warning at all
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        attempt(log, lambda: Bad.apply(b).backward())
    log.append(("warnings off", len(caught)))


@scenario
def anomaly_hook_errors(torch, log):
    x = torch.tensor([1.0], requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        y = x * 2
        y.register_hook(lambda g: 1 / 0)
        attempt(log, lambda: (y * 3).backward())
        y = x * 2
        y.grad_fn.register_hook(lambda gi, go: [][0])
        attempt(log, lambda: y.backward())


@scenario
def anomaly_error_in_a_leaf_hook(torch, log):
    x = torch.tensor([1.0], requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        x.register_hook(lambda g: {}["leaf"])
        attempt(log, lambda: (x * 3).backward())


@scenario
def anomaly_exception_is_unchanged(torch, log):
    x = torch.tensor([-1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly():
            try:
                x.sqrt().backward()
            except RuntimeError as e:
                log.append((str(e), getattr(e, "__notes__", None)))


@scenario
def anomaly_inplace_hint(torch, log):
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    for anomaly in (False, True):
        with torch.autograd.set_detect_anomaly(anomaly):
            y = (a * 1).exp()
            y.add_(1)
            attempt(log, lambda: y.sum().backward())


# --- closed forms (always run) -------------------------------------------------------------------

torch = ferrograd


def test_anomaly_flags_and_context_managers():
    assert not torch.is_anomaly_enabled() and torch.is_anomaly_check_nan_enabled()
    with pytest.warns(UserWarning, match="^Anomaly Detection has been enabled"):
        mode = torch.autograd.detect_anomaly(check_nan=False)
    with mode:
        assert torch.is_anomaly_enabled() and not torch.is_anomaly_check_nan_enabled()
        with torch.autograd.set_detect_anomaly(False):
            assert not torch.is_anomaly_enabled()
        assert torch.is_anomaly_enabled()
    assert not torch.is_anomaly_enabled() and torch.is_anomaly_check_nan_enabled()
    torch.autograd.set_detect_anomaly(True)
    try:
        assert torch.is_anomaly_enabled()
    finally:
        torch.autograd.set_detect_anomaly(False)
    assert not torch.is_anomaly_enabled()


def test_anomaly_nan_check():
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        y = x.sqrt().sum()
        with pytest.raises(RuntimeError) as info, pytest.warns(UserWarning, match="SqrtBackward0"):
            y.backward()
    assert str(info.value) == "Function 'SqrtBackward0' returned nan values in its 0th output."
    assert x.grad is None
    with torch.autograd.set_detect_anomaly(True, check_nan=False):
        x.sqrt().sum().backward()
    g = x.grad.tolist()
    assert g[0] != g[0] and g[1] == 0.25  # nan, 1 / (2 sqrt 4)
    x.sqrt().sum().backward()  # anomaly mode off: no check


def test_anomaly_error_warns_with_the_forward_traceback():
    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            raise HookError("bad backward")

    a = f64([1.0])
    with torch.autograd.set_detect_anomaly(True):
        out = Bad.apply(a)  # FORWARD-LINE
        with pytest.warns(UserWarning) as record, pytest.raises(HookError) as info:
            out.exp().sum().backward()
    assert str(info.value) == "bad backward"
    texts = [str(w.message) for w in record if "Error detected" in str(w.message)]
    assert len(texts) == 1
    head = "Error detected in BadBackward. Traceback of forward call that caused the error:\n"
    assert texts[0].startswith(head)
    assert "out = Bad.apply(a)  # FORWARD-LINE" in texts[0]
    assert "test_anomaly_error_warns_with_the_forward_traceback" in texts[0]
    # outside anomaly mode nothing is recorded or warned
    out = Bad.apply(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(HookError):
            out.sum().backward()


def test_anomaly_changes_the_inplace_hint():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (a * 1).exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"Hint: enable anomaly detection to find the operation"):
        y.sum().backward()
    with torch.autograd.set_detect_anomaly(True):
        y = (a * 1).exp()
        y.add_(1)
        with pytest.warns(UserWarning, match="^Error detected in ExpBackward0"), \
                pytest.raises(RuntimeError, match=r"Hint: the backtrace further above shows"):
            y.sum().backward()


# --- parity driver -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", parity_params(SCENARIOS))
def test_parity_with_torch(name, real_torch):
    ours = run(SCENARIOS[name], ferrograd)
    theirs = run(SCENARIOS[name], real_torch)
    assert ours == theirs
