"""torch.autograd.graph.GradientEdge and get_gradient_edge (issue 13), with autograd.grad and
backward taking edges as inputs and outputs, and ``inputs`` given as a dict.

Parity tests run each scenario with ferrograd and with torch and compare what it logged; they
skip without PyTorch. The tests below them always run. Helpers: _func_helpers.py.
"""

import pytest

import ferrograd
from _func_helpers import assert_same, attempt, run, scenario_registry, val
from ferrograd.autograd.graph import GradientEdge, get_gradient_edge

SCENARIOS, scenario = scenario_registry()


def f64(torch, values, requires_grad=False):
    return torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)


def chain(torch):
    x = f64(torch, [0.5, -1.0, 2.0], requires_grad=True)
    h = x * 2
    out = (h ** 2).sum() + x.sin().sum()
    return x, h, out


@scenario
def edge_fields_and_equality(torch, log):
    G = torch.autograd.graph
    x, h, _ = chain(torch)
    e = G.get_gradient_edge(h)
    # (ferrograd's edge is a subclass of GradientEdge holding the tensor too)
    log.append((isinstance(e, G.GradientEdge), isinstance(e, tuple), len(e), type(e.node).__name__, e.output_nr,
                e.ownership_token, e.node is h.grad_fn))
    log.append(repr(e).split(" object at")[0])
    ex = G.get_gradient_edge(x)
    log.append((type(ex.node).__name__, ex.output_nr, ex.node.variable is x))
    log.append((e == G.get_gradient_edge(h), hash(e) == hash(G.get_gradient_edge(h)),
                e == G.GradientEdge(h.grad_fn, 0), ex == G.get_gradient_edge(x)))
    a, b = x.split(2)
    log.append((G.get_gradient_edge(b).output_nr, G.get_gradient_edge(b).node is b.grad_fn))
    attempt(log, lambda: G.get_gradient_edge(torch.ones(2)))


@scenario
def grad_with_edge_inputs(torch, log):
    G = torch.autograd.graph
    x, h, out = chain(torch)
    log.append(val(torch.autograd.grad(out, G.get_gradient_edge(h), retain_graph=True)))
    log.append(val(torch.autograd.grad(out, [G.get_gradient_edge(x), h], retain_graph=True)))
    log.append(val(torch.autograd.grad(out, (G.get_gradient_edge(x), G.get_gradient_edge(h)),
                                       retain_graph=True)))
    log.append(val(torch.autograd.grad(out, {"x": x, "h": G.get_gradient_edge(h)},
                                       retain_graph=True)))
    # an edge built by hand to a leaf's AccumulateGrad
    acc = h.grad_fn.next_functions[0][0]
    log.append(val(torch.autograd.grad(out, G.GradientEdge(acc, 0), retain_graph=True)))
    g = torch.autograd.grad(out, G.get_gradient_edge(h), create_graph=True)[0]
    log.append(val(torch.autograd.grad(g.sum(), x)))


@scenario
def grad_with_edge_outputs(torch, log):
    G = torch.autograd.graph
    x, h, out = chain(torch)
    e = G.get_gradient_edge(h)
    log.append(val(torch.autograd.grad(e, x, grad_outputs=f64(torch, [1.0, 2.0, 3.0]),
                                       retain_graph=True)))
    attempt(log, lambda: torch.autograd.grad(e, x, retain_graph=True))
    s = (x * 3).sum()
    log.append(val(torch.autograd.grad(G.get_gradient_edge(s), x, retain_graph=True)))
    torch.autograd.backward(G.get_gradient_edge(s), retain_graph=True)
    log.append(("backward from edge", val(x.grad)))


@scenario
def grad_edge_errors_and_unused(torch, log):
    G = torch.autograd.graph
    x, h, out = chain(torch)
    y = f64(torch, [1.0, 1.0, 1.0], requires_grad=True)
    ey = G.get_gradient_edge(y)
    attempt(log, lambda: torch.autograd.grad(out, [ey], retain_graph=True))
    attempt(log, lambda: torch.autograd.grad(out, [G.get_gradient_edge(h), ey],
                                             allow_unused=True, retain_graph=True))
    attempt(log, lambda: torch.autograd.grad(out, [x, ey], materialize_grads=True,
                                             retain_graph=True))
    attempt(log, lambda: torch.autograd.grad(out, [x, y], materialize_grads=True,
                                             retain_graph=True))
    attempt(log, lambda: torch.autograd.grad(out, [], retain_graph=True))
    attempt(log, lambda: torch.autograd.grad(out, {}, retain_graph=True))
    attempt(log, lambda: torch.autograd.backward(out, inputs={}, retain_graph=True))


@scenario
def backward_with_edge_inputs(torch, log):
    G = torch.autograd.graph
    x, h, out = chain(torch)
    h.register_hook(lambda g: log.append(("h hook", val(g))))
    out.backward(inputs=[G.get_gradient_edge(h)], retain_graph=True)
    log.append(("non-leaf edge only: nothing accumulated", x.grad is None))
    out.backward(inputs=[G.get_gradient_edge(x)], retain_graph=True)
    log.append(("leaf edge", val(x.grad)))
    out.backward(inputs={"x": x}, retain_graph=True)
    log.append(("dict inputs", val(x.grad)))
    out.backward(inputs=G.get_gradient_edge(x))
    log.append(("single edge", val(x.grad)))


@scenario
def edge_after_inplace(torch, log):
    G = torch.autograd.graph
    x, h, out = chain(torch)
    e = G.get_gradient_edge(h)
    h.mul_(3)
    log.append(("new edge", G.get_gradient_edge(h).node is e.node))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_parity_with_torch(name, real_torch):
    assert_same(run(SCENARIOS[name], ferrograd), run(SCENARIOS[name], real_torch))


# --- closed forms and ferrograd's limits (always run) ---------------------------------------------


def test_edge_gradient_is_the_gradient_flowing_into_the_node():
    x = ferrograd.tensor([1.0, 2.0], dtype=ferrograd.float64, requires_grad=True)
    h = x.exp()
    out = (h * h).sum()
    (g,) = ferrograd.autograd.grad(out, get_gradient_edge(h))
    assert g.tolist() == pytest.approx((2 * x.exp()).tolist())


def test_hand_made_edge_to_an_op_node_is_not_supported():
    x = ferrograd.tensor([1.0, 2.0], dtype=ferrograd.float64, requires_grad=True)
    out = (x.exp() * 2).sum()
    node = out.grad_fn.next_functions[0][0]
    with pytest.raises(NotImplementedError, match="get_gradient_edge"):
        ferrograd.autograd.grad(out, GradientEdge(node, 0))


def test_edge_of_a_tensor_modified_in_place_is_refused():
    x = ferrograd.tensor([1.0, 2.0], dtype=ferrograd.float64, requires_grad=True)
    h = x * 2
    e = get_gradient_edge(h)
    h.mul_(3)
    with pytest.raises(NotImplementedError, match="modified in place"):
        ferrograd.autograd.grad(h.sum(), e)


def test_edge_repr_names_gradient_edge():
    x = ferrograd.tensor([1.0], requires_grad=True)
    assert repr(get_gradient_edge(x * 2)).startswith("GradientEdge(node=<MulBackward0 object")
