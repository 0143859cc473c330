"""Tensor.register_post_accumulate_grad_hook: when it runs, what it sees and what it may return.

Parity tests run each scenario with ferrograd and with torch and compare what it logged; they
skip without PyTorch. The closed-form tests below them always run. Helpers: _hooks_helpers.py.
"""

import pytest

import ferrograd
from _hooks_helpers import attempt, f64, parity_params, run, scenario_registry, val

SCENARIOS, scenario = scenario_registry()


# --- register_post_accumulate_grad_hook ----------------------------------------------------------


@scenario
def post_accumulate_hook_sees_updated_grad_once(torch, log):
    p = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    p.register_hook(lambda g: log.append(("tensor hook", val(g), val(p.grad))))
    handle = p.register_post_accumulate_grad_hook(
        lambda t: log.append(("post", t is p, val(t.grad)))
    )
    (p * p + p * 3).sum().backward()
    (p * 5).sum().backward()
    handle.remove()
    (p * 7).sum().backward()
    log.append(("grad", val(p.grad)))


@scenario
def post_accumulate_hook_returning_value_and_optimizer_step(torch, log):
    p = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)

    def step(t):
        with torch.no_grad():
            t.sub_(t.grad * 0.5)
        t.grad = None

    p.register_post_accumulate_grad_hook(step)
    (p * p).sum().backward()
    log.append(("p", val(p), val(p.grad)))

    q = torch.tensor([1.0], requires_grad=True)
    q.register_post_accumulate_grad_hook(lambda t: t)
    attempt(log, lambda: (q * 2).backward())
    log.append(("q.grad", val(q.grad)))


# --- closed forms (always run) -------------------------------------------------------------------

torch = ferrograd


def test_post_accumulate_hook_sees_the_updated_grad_once_per_backward():
    p = f64([1.0, 2.0])
    seen = []
    p.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (p * p + p * 3).sum().backward()  # p used three times: 2p + 3
    (p * 5).sum().backward()
    assert seen == [[5.0, 7.0], [10.0, 12.0]]


def test_post_accumulate_hook_must_return_none():
    q = f64([1.0])
    q.register_post_accumulate_grad_hook(lambda t: t * 1)
    with pytest.raises(RuntimeError, match="^Tensor post accumulate grad hooks should return"):
        (q * 2).sum().backward()
    r = f64([1.0])
    r.register_post_accumulate_grad_hook(lambda t: t)  # the same tensor: accepted, as in PyTorch
    (r * 2).sum().backward()
    assert r.grad.tolist() == [2.0]
    with pytest.raises(RuntimeError, match="cannot be registered on non-leaf tensors"):
        (r * 2).register_post_accumulate_grad_hook(lambda t: None)


# --- parity driver -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", parity_params(SCENARIOS))
def test_parity_with_torch(name, real_torch):
    ours = run(SCENARIOS[name], ferrograd)
    theirs = run(SCENARIOS[name], real_torch)
    assert ours == theirs
