"""Node hooks: grad_fn.register_hook and grad_fn.register_prehook (AccumulateGrad included).

Parity tests run each scenario with ferrograd and with torch and compare what it logged; they
skip without PyTorch. The closed-form tests below them always run. Helpers: _hooks_helpers.py.
"""

import pytest

import ferrograd
from _hooks_helpers import attempt, f64, parity_params, run, scenario_registry, val

SCENARIOS, scenario = scenario_registry()


# --- Node.register_hook / register_prehook -------------------------------------------------------


@scenario
def node_hooks_arguments_and_order(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    c = torch.tensor([5.0, 6.0], dtype=torch.float64)
    y = x * c
    y.register_hook(lambda g: log.append(("tensor", val(g))))
    y.retain_grad()
    y.grad_fn.register_prehook(lambda go: log.append(("pre", val(go), val(y.grad))))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", val(gi), val(go))))
    acc = y.grad_fn.next_functions[0][0]
    log.append(type(acc).__name__)
    acc.register_prehook(lambda go: log.append(("acc pre", val(go))))
    acc.register_hook(lambda gi, go: log.append(("acc post", val(gi), val(go))))
    x.register_hook(lambda g: log.append(("leaf", val(g))))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post acc", val(t.grad))))
    (y * 2).sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def node_hooks_replace_gradients(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    y = x * w
    y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.grad_fn.register_prehook(lambda go: log.append(("pre2", val(go))))
    y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, None))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post2", val(gi), val(go))))
    y.sum().backward()
    log.append(("grads", val(x.grad), val(w.grad)))

    z = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    acc = (z * 2).grad_fn.next_functions[0][0]
    handle = acc.register_prehook(lambda go: (go[0] * 0 + 7,))
    (z * 2).sum().backward()
    log.append(("z.grad", val(z.grad)))
    handle.remove()
    (z * 2).sum().backward()
    log.append(("z.grad", val(z.grad)))


@scenario
def node_hook_return_checks(torch, log):
    def run_hook(kind, hook):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        if kind == "pre":
            y.grad_fn.register_prehook(hook)
        else:
            y.grad_fn.register_hook(hook)
        attempt(log, lambda: y.sum().backward())

    def too_many(*args):
        return (args[0][0], args[0][0])

    def not_tuple(*args):
        return args[0][0]

    def wrong_size(*args):
        return (args[0][0][:1],)

    def wrong_dtype(*args):
        return (args[0][0].double(),)

    def int_in_tuple(*args):
        return (1,)

    for hook in (too_many, not_tuple, wrong_size, wrong_dtype, int_in_tuple):
        run_hook("pre", hook)
        run_hook("post", hook)


@scenario
def node_hook_handles(torch, log):
    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2
    h1 = y.grad_fn.register_prehook(lambda go: log.append("pre"))
    h2 = y.grad_fn.register_hook(lambda gi, go: log.append("post"))
    log.append((type(h1).__name__, type(h2).__name__))
    y.backward(retain_graph=True)
    h1.remove()
    y.backward(retain_graph=True)
    with h2:
        pass
    y.backward()
    log.append(("x.grad", val(x.grad)))


# --- closed forms (always run) -------------------------------------------------------------------

torch = ferrograd


def test_node_hooks_order_and_arguments():
    x = f64([1.0, 2.0])
    y = x * torch.tensor([5.0, 6.0], dtype=torch.float64)
    order = []
    y.register_hook(lambda g: order.append(("tensor", g.tolist())) or g * 2)
    y.grad_fn.register_prehook(lambda go: order.append(("pre", go[0].tolist())))
    y.grad_fn.register_hook(
        lambda gi, go: order.append(("post", [None if g is None else g.tolist() for g in gi],
                                     go[0].tolist()))
    )
    acc = y.grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad"
    acc.register_prehook(lambda go: order.append(("acc pre", go[0].tolist())) or (go[0] + 1,))
    x.register_hook(lambda g: order.append(("leaf", g.tolist())))
    x.register_post_accumulate_grad_hook(lambda t: order.append(("post acc", t.grad.tolist())))
    y.sum().backward()
    assert order == [
        ("tensor", [1.0, 1.0]),
        ("pre", [2.0, 2.0]),
        ("post", [[10.0, 12.0], None], [2.0, 2.0]),
        ("leaf", [10.0, 12.0]),
        ("acc pre", [10.0, 12.0]),
        ("post acc", [11.0, 13.0]),
    ]


def test_node_hooks_replace_and_check_their_results():
    x = f64([1.0, 2.0])
    w = f64([3.0, 4.0])
    y = x * w
    y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, None))
    y.sum().backward()
    assert x.grad.tolist() == [31.0, 41.0] and w.grad is None

    def two(*args):
        return (args[0][0], args[0][0])

    y = x * 2  # grad_inputs is (g, None)
    y.grad_fn.register_hook(two)
    with pytest.raises(RuntimeError, match="^can't replace a None gradient with a non-None value$"):
        y.sum().backward()
    y = x * 2
    y.grad_fn.register_prehook(two)
    message = r"^hook 'two' has returned an incorrect number of values \(got 2, but expected 1\)$"
    with pytest.raises(RuntimeError, match=message):
        y.sum().backward()
    y = x * 2
    y.grad_fn.register_prehook(lambda go: go[0])
    with pytest.raises(TypeError, match="^expected tuple, but hook returned 'Tensor'$"):
        y.sum().backward()


# --- parity driver -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", parity_params(SCENARIOS))
def test_parity_with_torch(name, real_torch):
    ours = run(SCENARIOS[name], ferrograd)
    theirs = run(SCENARIOS[name], real_torch)
    assert ours == theirs
