"""Tensor.register_hook and Tensor.retain_grad: order, removal, return checks, exceptions, and
how the hooks meet autograd.grad, backward(inputs=...), create_graph and in-place ops.

Parity tests run each scenario with ferrograd and with torch and compare what it logged; they
skip without PyTorch. The closed-form tests below them always run. Helpers: _hooks_helpers.py.
"""

import pytest

import ferrograd
from _hooks_helpers import HookError, attempt, f64, parity_params, run, scenario_registry, val

SCENARIOS, scenario = scenario_registry()


# --- Tensor.register_hook ------------------------------------------------------------------------


@scenario
def leaf_hook_replaces_grad(torch, log):
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)

    def double(g):
        log.append(("hook", val(g)))
        return g * 2

    handle = x.register_hook(double)
    log.append(type(handle).__name__)
    (x * x).sum().backward()
    log.append(("grad", val(x.grad)))


@scenario
def nonleaf_hook_runs_before_retain_grad(torch, log):
    x = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    y = x * 3
    y.retain_grad()
    y.register_hook(lambda g: log.append(("hook", val(g))) or g * 10)
    (y * y).sum().backward()
    log.append(("y.grad", val(y.grad)))
    log.append(("x.grad", val(x.grad)))


@scenario
def several_hooks_in_order_each_sees_previous(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x.exp()

    def make(name, add):
        def hook(g):
            log.append((name, val(g)))
            return g + add

        return hook

    for name, add in (("a", 1), ("b", 10), ("c", 100)):
        y.register_hook(make(name, add))
    x.register_hook(make("leaf1", 0.5))
    x.register_hook(lambda g: log.append(("leaf2-none", val(g))))
    x.register_hook(make("leaf3", 0.25))
    y.sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def hook_on_tensor_used_twice(torch, log):
    x = torch.tensor([2.0, 3.0], dtype=torch.float64, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append(("y", val(g))))
    x.register_hook(lambda g: log.append(("x", val(g))))
    (y * y + y + x).sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def hook_handle_remove_and_context_manager(torch, log):
    x = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    h = x.register_hook(lambda g: log.append("removed hook ran"))
    h.remove()
    h.remove()  # twice is fine
    with x.register_hook(lambda g: log.append(("in with", val(g)))) as h2:
        log.append(type(h2).__name__)
        (x * 5).backward()
    (x * 7).backward()
    log.append(("x.grad", val(x.grad)))
    y = x * 2
    hy = y.register_hook(lambda g: log.append("removed non-leaf hook ran"))
    hy.remove()
    y.backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def hook_removes_itself_during_backward(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * x
    handles = {}

    def once(g):
        log.append(("once", val(g)))
        handles["y"].remove()
        return g * 2

    def leaf_once(g):
        log.append(("leaf once", val(g)))
        handles["x"].remove()

    handles["y"] = y.register_hook(once)
    handles["x"] = x.register_hook(leaf_once)
    s = y.sum()
    s.backward(retain_graph=True)
    s.backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def hook_removes_another_or_registers_one_during_backward(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * 3
    handles = {}

    def remover(g):
        log.append(("remover", val(g)))
        handles["victim"].remove()

    def registrar(g):
        log.append(("registrar", val(g)))
        x.register_hook(lambda g: log.append(("late leaf hook", val(g))))

    y.register_hook(remover)
    handles["victim"] = y.register_hook(lambda g: log.append(("victim", val(g))))
    y.register_hook(registrar)
    out = (y * y).sum()
    out.backward(retain_graph=True)
    log.append("second backward")
    out.backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def hook_outlives_its_tensor(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append(("y hook", val(g))) or g * 3)
    z = (y * y).sum()
    del y
    z.backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def retain_grad_under_autograd_grad_and_backward_inputs(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * 3
    y.retain_grad()
    torch.autograd.grad((y * y).sum(), x)
    log.append(("after autograd.grad", val(y.grad), val(x.grad)))
    y = x * 3
    y.retain_grad()
    y.register_hook(lambda g: g * 2)
    (y * y).sum().backward(inputs=[x])
    log.append(("after backward(inputs=[x])", val(y.grad), val(x.grad)))
    b = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    b.register_hook(lambda g: log.append(("broadcast scalar", val(g), tuple(g.shape))))
    (torch.ones(3, dtype=torch.float64) * b).sum().backward()


@scenario
def hook_on_a_view(torch, log):
    w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    v = w[1:]
    v.register_hook(lambda g: log.append(("view", val(g))) or g * 5)
    (v * v).sum().backward()
    log.append(("w.grad", val(w.grad)))


@scenario
def hooks_rerun_with_retain_graph(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x.sin()
    y.register_hook(lambda g: log.append(("y", val(g))) or g * 2)
    x.register_hook(lambda g: log.append(("x", val(g))))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("acc", val(t.grad))))
    out = (y * 3).sum()
    out.backward(retain_graph=True)
    out.backward(retain_graph=True)
    log.append(("x.grad", val(x.grad)))
    attempt(log, lambda: out.backward())
    attempt(log, lambda: out.backward())


@scenario
def hook_on_multi_output_node_sees_none(torch, log):
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    a, b = x.split([1, 2])
    b.register_hook(lambda g: log.append(("b", val(g))))
    handle = a.register_hook(lambda g: log.append(("a", val(g))))
    (a * 4).sum().backward(retain_graph=True)
    log.append(("x.grad", val(x.grad)))

    def replace(g):
        return torch.ones(2, dtype=torch.float64)

    handle.remove()
    b.register_hook(replace)
    attempt(log, lambda: (a * 4).sum().backward())
    log.append(("x.grad", val(x.grad)))


@scenario
def hooks_on_two_outputs_of_one_node_run_per_tensor(torch, log):
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    a, b = x.split([1, 2])
    b.register_hook(lambda g: log.append(("b1", val(g))) or g * 2)
    a.register_hook(lambda g: log.append(("a", val(g))))
    b.register_hook(lambda g: log.append(("b2", val(g))))
    (a * 3 + b.sum()).sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def hook_return_checks(torch, log):
    def changes_size(g):
        return g[:1]

    def changes_type(g):
        return g.double()

    def returns_int(g):
        return 3

    def returns_list(g):
        return [g]

    def returns_array(g):
        return g.detach().numpy()

    for hook in (changes_size, changes_type, returns_int, returns_list, returns_array):
        for leaf in (True, False):
            x = torch.tensor([1.0, 2.0], requires_grad=True)
            t = x if leaf else x * 2
            t.register_hook(hook)
            attempt(log, lambda: (t * t).sum().backward())
            log.append(("x.grad", val(x.grad)))


@scenario
def hook_errors_at_registration(torch, log):
    x = torch.tensor([1.0])
    attempt(log, lambda: x.register_hook(lambda g: g))
    attempt(log, lambda: x.register_post_accumulate_grad_hook(lambda t: None))
    y = torch.tensor([1.0], requires_grad=True) * 2
    attempt(log, lambda: y.register_post_accumulate_grad_hook(lambda t: None))


@scenario
def hook_exceptions_keep_their_type(torch, log):
    def bad(g):
        raise HookError("from a tensor hook")

    x = torch.tensor([1.0], requires_grad=True)
    x.register_hook(bad)
    attempt(log, lambda: (x * 2).backward())
    log.append(("x.grad", val(x.grad)))

    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2
    y.register_hook(bad)
    attempt(log, lambda: (y * 2).backward())
    log.append(("x.grad", val(x.grad)))

    x = torch.tensor([1.0], requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda t: (_ for _ in ()).throw(KeyError("post")))
    attempt(log, lambda: (x * 2).backward())
    log.append(("x.grad after post hook error", val(x.grad)))

    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2
    y.grad_fn.register_prehook(lambda go: 1 / 0)
    attempt(log, lambda: y.backward())
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: [][1])
    attempt(log, lambda: y.backward())
    log.append(("x.grad", val(x.grad)))


@scenario
def hooks_and_autograd_grad(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x.register_hook(lambda g: log.append(("x", val(g))) or g * 2)
    x.register_post_accumulate_grad_hook(lambda t: log.append("post accumulate ran"))
    y = x * x
    y.register_hook(lambda g: log.append(("y", val(g))) or g + 1)
    (gx,) = torch.autograd.grad(y.sum(), x, retain_graph=True)
    log.append(("grad x", val(gx)))
    (gy,) = torch.autograd.grad(y.sum(), y, retain_graph=True)
    log.append(("grad y", val(gy)))
    (g,) = torch.autograd.grad(y.sum(), x, allow_unused=True, materialize_grads=True,
                               retain_graph=True)
    log.append(("materialized", val(g)))
    log.append(("x.grad", val(x.grad)))
    unused = torch.tensor([5.0], dtype=torch.float64, requires_grad=True)
    unused.register_hook(lambda g: log.append("hook of an unused input ran"))
    attempt(log, lambda: torch.autograd.grad(y.sum(), (x, unused), retain_graph=True))
    attempt(log, lambda: torch.autograd.grad(y.sum(), (x, unused), allow_unused=True,
                                             retain_graph=True))
    attempt(log, lambda: torch.autograd.grad(y.sum(), (x, unused), materialize_grads=True,
                                             retain_graph=True))
    attempt(log, lambda: torch.autograd.grad(y.sum(), (x, unused), allow_unused=False,
                                             materialize_grads=True))


@scenario
def retain_graph_defaults_to_create_graph(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x.register_hook(lambda g: log.append(("hook", val(g))))
    y = (x ** 3).sum()
    (gx,) = torch.autograd.grad(y, x, create_graph=True)
    log.append(("gx", val(gx)))
    attempt(log, lambda: torch.autograd.grad(y, x))  # the graph was kept
    attempt(log, lambda: torch.autograd.grad(y, x))  # but not by the call above
    z = (x ** 3).sum()
    z.backward(create_graph=True)
    attempt(log, lambda: z.backward())
    attempt(log, lambda: z.backward())
    log.append(("x.grad", val(x.grad)))


@scenario
def autograd_grad_of_a_leaf_and_an_intermediate(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x.register_hook(lambda g: log.append(("x", val(g))) or g * 2)
    y = x * x
    y.register_hook(lambda g: log.append(("y", val(g))) or g + 1)
    gx, gy = torch.autograd.grad((y * 3).sum(), (x, y))
    log.append(("both", val(gx), val(gy)))


@scenario
def hooks_and_backward_inputs(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    x.register_hook(lambda g: log.append(("x", val(g))))
    w.register_hook(lambda g: log.append(("w", val(g))))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("x acc", val(t.grad))))
    w.register_post_accumulate_grad_hook(lambda t: log.append(("w acc", val(t.grad))))
    (x * w).sum().backward(inputs=[w])
    log.append(("grads", val(x.grad), val(w.grad)))


@scenario
def hook_output_is_differentiable_with_create_graph(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * x
    y.register_hook(lambda g: g * x)  # the hook's result depends on x
    (gx,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    log.append(("gx", val(gx), gx.requires_grad))
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    log.append(("ggx", val(ggx)))

    z = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
    z.register_hook(lambda g: g * z)
    (z ** 3).sum().backward(create_graph=True)
    log.append(("z.grad", val(z.grad), z.grad.requires_grad))
    (gz,) = torch.autograd.grad(z.grad.sum(), z)
    log.append(("d z.grad / dz", val(gz)))


@scenario
def hook_registered_around_inplace(torch, log):
    a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x = a * 1
    x.register_hook(lambda g: log.append(("before", val(g))) or g * 10)
    x.mul_(3)
    x.register_hook(lambda g: log.append(("after", val(g))))
    log.append(type(x.grad_fn).__name__)
    (x * x).sum().backward()
    log.append(("a.grad", val(a.grad)))


@scenario
def retain_grad_then_inplace_and_hook(torch, log):
    a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x = a * 2
    x.retain_grad()
    x.add_(1)
    x.register_hook(lambda g: log.append(("hook", val(g))) or g * 2)
    (x * x).sum().backward()
    log.append(("x.grad", val(x.grad), "a.grad", val(a.grad)))


@scenario
def hook_result_needing_grad_without_create_graph(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)

    def scale(g):
        r = g * w
        log.append(("in hook", torch.is_grad_enabled(), r.requires_grad))
        return r

    x.register_hook(scale)
    (x * x).sum().backward()
    log.append(("x.grad", val(x.grad), x.grad.requires_grad, x.grad.grad_fn is None))


@scenario
def hooks_with_backward_inputs_non_leaf(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append(("y hook", val(g))) or g * 10)
    x.register_hook(lambda g: log.append(("x hook", val(g))))
    (y * y).sum().backward(inputs=[y], retain_graph=True)
    log.append(("y.grad", val(y.grad), "x.grad", val(x.grad)))
    (y * y).sum().backward(inputs=[x, y])
    log.append(("y.grad", val(y.grad), "x.grad", val(x.grad)))


# --- closed forms (always run) -------------------------------------------------------------------

torch = ferrograd


def test_leaf_hook_replaces_the_accumulated_gradient():
    x = f64([1.0, 2.0, 3.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()) or g * 2)
    (x * x).sum().backward()
    assert seen == [[2.0, 4.0, 6.0]]  # d(sum x^2)/dx = 2x
    assert x.grad.tolist() == [4.0, 8.0, 12.0]


def test_nonleaf_hook_runs_before_retain_grad_whatever_the_order():
    for retain_first in (True, False):
        x = f64([1.0, -2.0])
        y = x * 3
        if retain_first:
            y.retain_grad()
        y.register_hook(lambda g: g * 10)
        if not retain_first:
            y.retain_grad()
        (y * y).sum().backward()
        assert y.grad.tolist() == [60.0, -120.0]  # 10 * 2y
        assert x.grad.tolist() == [180.0, -360.0]  # 3 * 10 * 2y


def test_several_hooks_run_in_registration_order_and_chain():
    x = f64([1.0, 2.0])
    y = x * 1
    seen = []
    for add in (1.0, 10.0, 100.0):
        y.register_hook(lambda g, add=add: seen.append((add, g.tolist())) or g + add)
    y.sum().backward()
    assert seen == [(1.0, [1.0, 1.0]), (10.0, [2.0, 2.0]), (100.0, [12.0, 12.0])]
    assert x.grad.tolist() == [112.0, 112.0]


def test_hook_on_a_tensor_used_twice_runs_once_on_the_sum():
    x = f64([2.0, 3.0])
    y = x * 2
    calls = []
    y.register_hook(lambda g: calls.append(g.tolist()))
    x.register_hook(lambda g: calls.append(("x", g.tolist())))
    (y * y + y).sum().backward()
    # d/dy (y^2 + y) = 2y + 1 = 4x + 1; dx = 2 * (4x + 1)
    assert calls == [[9.0, 13.0], ("x", [18.0, 26.0])]


def test_handle_remove_and_removal_during_backward():
    x = f64([1.0])
    calls = []
    handle = x.register_hook(lambda g: calls.append("removed"))
    handle.remove()
    handles = []

    def once(g):
        calls.append("once")
        handles[0].remove()

    handles.append(x.register_hook(once))
    y = (x * 4).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    with x.register_hook(lambda g: calls.append("with") or g * 0):
        y.backward(retain_graph=True)
    y.backward()
    assert calls == ["once", "with"]
    assert x.grad.tolist() == [12.0]  # three backwards of 4, one zeroed by the hook


def test_hooks_rerun_with_retain_graph():
    x = f64([1.0, 2.0])
    counts = {"hook": 0, "post": 0}
    x.register_hook(lambda g: counts.__setitem__("hook", counts["hook"] + 1))
    x.register_post_accumulate_grad_hook(lambda t: counts.__setitem__("post", counts["post"] + 1))
    y = (x * x).sum()
    for _ in range(3):
        y.backward(retain_graph=True)
    assert counts == {"hook": 3, "post": 3}
    assert x.grad.tolist() == [6.0, 12.0]


def test_tensor_hook_checks_what_it_returns():
    x = f64([1.0, 2.0])

    def shrink(g):
        return g[:1]

    x.register_hook(shrink)
    with pytest.raises(RuntimeError, match=r"^hook 'shrink' has changed the size of value$"):
        (x * 2).sum().backward()

    x = torch.tensor([1.0, 2.0], requires_grad=True)

    def to_double(g):
        return g.double()

    x.register_hook(to_double)
    with pytest.raises(RuntimeError, match=r"\(was torch.FloatTensor got torch.DoubleTensor\)"):
        (x * 2).sum().backward()

    x = f64([1.0])
    x.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="^expected Variable, but hook returned 'int'$"):
        (x * 2).sum().backward()
    assert x.grad is None


def test_hook_on_an_unused_output_gets_none_and_cannot_replace_it():
    x = f64([1.0, 2.0, 3.0])
    a, b = x.split([1, 2])
    seen = []
    b.register_hook(lambda g: seen.append(g))
    (a * 4).sum().backward(retain_graph=True)
    assert seen == [None] and x.grad.tolist() == [4.0, 0.0, 0.0]
    b.register_hook(lambda g: torch.ones(2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="^can't replace a None gradient with a non-None value$"):
        (a * 4).sum().backward()


def test_hook_exceptions_keep_their_type():
    x = f64([1.0])
    y = x * 2

    def bad(g):
        raise HookError("boom")

    y.register_hook(bad)
    with pytest.raises(HookError, match="^boom$"):
        y.sum().backward()
    assert x.grad is None
    p = f64([1.0])
    p.register_post_accumulate_grad_hook(lambda t: {}["missing"])
    with pytest.raises(KeyError):
        (p * 3).sum().backward()
    assert p.grad.tolist() == [3.0]  # accumulated before the hook ran


def test_hooks_apply_to_autograd_grad():
    x = f64([1.0, 2.0])
    calls = []
    x.register_hook(lambda g: g * 2)
    x.register_post_accumulate_grad_hook(lambda t: calls.append("post"))
    y = x * x
    y.register_hook(lambda g: g + 1)
    (gx,) = torch.autograd.grad(y.sum(), x)
    assert gx.tolist() == [8.0, 16.0]  # 2 * (1 + 1) * 2x
    assert x.grad is None and calls == []


def test_hook_result_is_differentiable_with_create_graph():
    x = f64([1.0, 2.0])
    y = x * x
    y.register_hook(lambda g: g * x)
    (gx,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    assert gx.tolist() == [2.0, 8.0]  # (1 * x) * 2x = 2x^2
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    assert ggx.tolist() == [4.0, 8.0]  # 4x


def test_backward_create_graph_warns():
    x = f64([1.0, 2.0])
    with pytest.warns(UserWarning, match=r"^Using backward\(\) with create_graph=True will create"):
        (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.tolist() == [3.0, 12.0]


def test_hook_registered_before_and_after_an_inplace_op():
    a = f64([1.0, 2.0])
    x = a * 1
    seen = {}
    x.register_hook(lambda g: seen.update(before=g.tolist()))
    x.mul_(3)
    x.register_hook(lambda g: seen.update(after=g.tolist()))
    (x * x).sum().backward()
    # after: d(x^2)/dx = 2x = 6a; before: the gradient of the value before mul_, 3 * 6a
    assert seen == {"after": [6.0, 12.0], "before": [18.0, 36.0]}
    assert a.grad.tolist() == [18.0, 36.0]


# --- parity driver -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", parity_params(SCENARIOS))
def test_parity_with_torch(name, real_torch):
    ours = run(SCENARIOS[name], ferrograd)
    theirs = run(SCENARIOS[name], real_torch)
    assert ours == theirs
