"""saved_tensors_hooks, disable_saved_tensors_hooks and save_on_cpu.

Parity tests run each scenario with ferrograd and with torch and compare what it logged; they
skip without PyTorch. The closed-form tests below them always run. Helpers: _hooks_helpers.py.
"""

import pytest

import ferrograd
from _hooks_helpers import HookError, attempt, f64, parity_params, run, scenario_registry, val

SCENARIOS, scenario = scenario_registry()


# --- saved_tensors_hooks -------------------------------------------------------------------------


def saved_fn_class(torch, log):
    class Saves(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            out = x * w
            ctx.save_for_backward(x, out)
            ctx.w = w
            return out

        @staticmethod
        def backward(ctx, g):
            x, out = ctx.saved_tensors
            log.append(("saved in backward", val(x), val(out), out.grad_fn is not None))
            return g * ctx.w, g * x

    return Saves


@scenario
def saved_tensors_hooks_with_custom_function(torch, log):
    Saves = saved_fn_class(torch, log)

    def pack(t):
        log.append(("pack", val(t)))
        return ("packed", t * 1)

    def unpack(p):
        log.append(("unpack", p[0], val(p[1])))
        return p[1]

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = Saves.apply(x, w)
    log.append("forward done")
    y.sum().backward()
    log.append(("grads", val(x.grad), val(w.grad)))


@scenario
def saved_tensors_hooks_unpack_can_change_values(torch, log):
    Saves = saved_fn_class(torch, log)
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    packs = []
    with torch.autograd.graph.saved_tensors_hooks(
        lambda t: packs.append(val(t)) or len(packs),
        lambda n: torch.full((2,), float(10 * n), dtype=torch.float64),
    ):
        y = Saves.apply(x, w)
    log.append(("packed", packs))
    y.sum().backward()
    log.append(("grads", val(x.grad), val(w.grad)))


@scenario
def saved_tensors_pack_order_of_mul(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    packs = []
    with torch.autograd.graph.saved_tensors_hooks(
        lambda t: packs.append(val(t)) or len(packs),
        lambda n: torch.full((2,), float(10 * n), dtype=torch.float64),
    ):
        y = x * w
    log.append(("packed", packs))
    y.sum().backward()
    log.append(("grads", val(x.grad), val(w.grad)))


@scenario
def saved_tensors_hooks_nested_innermost_wins(torch, log):
    Saves = saved_fn_class(torch, log)

    def hooks(name):
        return (lambda t: log.append(("pack " + name, val(t))) or t,
                lambda t: log.append(("unpack " + name, val(t))) or t)

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([2.0, 2.0], dtype=torch.float64)
    with torch.autograd.graph.saved_tensors_hooks(*hooks("outer")):
        y1 = Saves.apply(x, w)
        with torch.autograd.graph.saved_tensors_hooks(*hooks("inner")):
            y2 = Saves.apply(x, w * 2)
        y3 = Saves.apply(x, w * 3)
    y4 = Saves.apply(x, w * 4)
    (y1 + y2 + y3 + y4).sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def saved_tensors_hooks_errors(torch, log):
    x = torch.tensor([1.0, 2.0], requires_grad=True)

    def bad_pack(t):
        raise HookError("pack failed")

    def forward():
        with torch.autograd.graph.saved_tensors_hooks(bad_pack, lambda p: p):
            return x * x

    attempt(log, forward)  # raised at forward time
    log.append(("hooks popped", val((x * x).sum())))
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: 3):
        y = x * x
    attempt(log, lambda: y.sum().backward())
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: 1 / 0):
        y = x * x
    attempt(log, lambda: y.sum().backward())
    def enter_hooks():
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            return "entered"

    with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        attempt(log, enter_hooks)
        with torch.autograd.graph.disable_saved_tensors_hooks("inner message"):
            attempt(log, enter_hooks)
        attempt(log, enter_hooks)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        log.append(("allowed again", val((x * 2).sum())))

        def disable_inside():
            with torch.autograd.graph.disable_saved_tensors_hooks("hooks are active"):
                return "entered"

        attempt(log, disable_inside)
        log.append(("still active", val((x * x).sum())))
    with torch.autograd.graph.disable_saved_tensors_hooks("enabled again after the error"):
        pass
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        log.append(("and after", val((x * 3).sum())))


@scenario
def unpack_hook_returning_an_array(torch, log):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t.detach().numpy()):
        y = x.exp()
    attempt(log, lambda: y.sum().backward())


@scenario
def saved_tensors_hooks_unpack_on_each_access(torch, log):
    count = [0, 0]

    class TwoAccess(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            (b,) = ctx.saved_tensors
            log.append(("same values", val(a), val(b)))
            return g * b.cos()

    def pack(t):
        count[0] += 1
        return t

    def unpack(t):
        count[1] += 1
        return t

    x = torch.tensor([0.0, 1.0], dtype=torch.float64, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = TwoAccess.apply(x)
    log.append(("after forward", tuple(count)))
    y.sum().backward()
    log.append(("after backward", tuple(count), val(x.grad)))


@scenario
def saved_tensors_hooks_on_builtin_ops(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 5.0], dtype=torch.float64, requires_grad=True)
    _c = torch.tensor([7.0, 11.0], dtype=torch.float64)
    packed = []
    hooks = (lambda t: packed.append(val(t)) or t, lambda t: t)
    with torch.autograd.graph.saved_tensors_hooks(*hooks):
        y1 = x * w
        y3 = w.exp()  # saves its result
        y4 = x.sin()  # saves its input
    log.append(("packed", sorted(packed)))
    (y1 + y3 + y4).sum().backward()
    log.append(("grads", val(x.grad), val(w.grad)))


@scenario
def saved_tensors_mul_by_constant_saves_only_the_constant(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    c = torch.tensor([7.0, 11.0], dtype=torch.float64)
    packed = []
    hooks = (lambda t: packed.append(val(t)) or t, lambda t: t)
    with torch.autograd.graph.saved_tensors_hooks(*hooks):
        y = x * c
    log.append(("packed", packed))
    y.sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def saved_tensors_hooks_detaching_pack_keeps_double_backward(torch, log):
    x = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        y = (x.sin() * x).sum()
    (gx,) = torch.autograd.grad(y, x, create_graph=True)
    log.append(("gx", val(gx), gx.requires_grad))
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    log.append(("ggx", val(ggx)))


@scenario
def save_on_cpu_gives_same_gradients(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    with torch.autograd.graph.save_on_cpu():
        y = (x.exp() * x).sum()
    y.backward()
    log.append(("x.grad", val(x.grad)))
    with torch.autograd.graph.save_on_cpu(pin_memory=False):
        z = (x.sin() * x).sum()
    z.backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def saved_tensors_hooks_and_inplace_check(torch, log):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        a = x * 1
        y = a * a
    a.mul_(2)
    attempt(log, lambda: y.sum().backward())
    log.append(("x.grad", val(x.grad)))


# --- closed forms (always run) -------------------------------------------------------------------

torch = ferrograd


class SaveBoth(ferrograd.autograd.Function):
    """y = x * w, saving the input x and the output y (backward uses both)."""

    @staticmethod
    def forward(ctx, x, w):
        y = x * w
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * (y / x), g * x


def test_saved_tensors_hooks_see_a_custom_functions_saved_tensors():
    calls = []

    def pack(t):
        calls.append(("pack", t.tolist()))
        return {"kept": t}

    def unpack(p):
        calls.append(("unpack", p["kept"].tolist()))
        return p["kept"]

    x = f64([1.0, 2.0])
    w = f64([3.0, 4.0])
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = SaveBoth.apply(x, w)
    assert calls == [("pack", [1.0, 2.0]), ("pack", [3.0, 8.0])]
    y.sum().backward()
    assert calls[2:] == [("unpack", [1.0, 2.0]), ("unpack", [3.0, 8.0])]
    assert x.grad.tolist() == [3.0, 4.0] and w.grad.tolist() == [1.0, 2.0]


def test_unpack_result_is_what_backward_uses():
    x = f64([1.0, 2.0])
    w = f64([3.0, 4.0])
    tens = torch.full((2,), 10.0, dtype=torch.float64)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: None, lambda p: tens):
        y = SaveBoth.apply(x, w)
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]  # y / x = 10 / 10
    assert w.grad.tolist() == [10.0, 10.0]


def test_nested_saved_tensors_hooks_innermost_wins():
    calls = []

    def hooks(name):
        return (lambda t: calls.append(name) or t, lambda t: calls.append(name.upper()) or t)

    x = f64([1.0, 2.0])
    w = f64([2.0, 2.0], requires_grad=False)
    with torch.autograd.graph.saved_tensors_hooks(*hooks("outer")):
        y1 = SaveBoth.apply(x, w)
        with torch.autograd.graph.saved_tensors_hooks(*hooks("inner")):
            y2 = SaveBoth.apply(x, w)
        y3 = SaveBoth.apply(x, w)
    y4 = SaveBoth.apply(x, w)
    assert calls == ["outer", "outer", "inner", "inner", "outer", "outer"]
    (y1 + y2 + y3 + y4).sum().backward()
    assert sorted(calls[6:]) == ["INNER"] * 2 + ["OUTER"] * 4
    assert x.grad.tolist() == [8.0, 8.0]


def test_pack_hook_error_is_raised_at_forward_time_and_pops_the_hooks():
    x = f64([1.0, 2.0])
    packed = []

    def bad_pack(t):
        raise HookError("pack failed")

    with pytest.raises(HookError, match="^pack failed$"):
        with torch.autograd.graph.saved_tensors_hooks(bad_pack, lambda p: p):
            x * x
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda p: p):
        y = x.exp()
    assert packed == [1]  # the failed context is gone: the new one packs
    y.sum().backward()
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: "not a tensor"):
        y = x.exp()
    message = "^Output of saved tensor unpack_hook expected to be a Tensor but got result of type"
    with pytest.raises(TypeError, match=message):
        y.sum().backward()


def test_disable_saved_tensors_hooks():
    with torch.autograd.graph.disable_saved_tensors_hooks("not here"):
        with pytest.raises(RuntimeError, match="^not here$"):
            with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        pass


def test_saved_tensors_hooks_are_thread_local():
    import threading

    calls = []
    x = f64([1.0, 2.0])
    with torch.autograd.graph.saved_tensors_hooks(lambda t: calls.append("pack") or t, lambda t: t):
        thread = threading.Thread(target=lambda: (x * x).sum().backward())
        thread.start()
        thread.join()
        assert calls == []
        x.exp()
        assert calls == ["pack"]
        with pytest.raises(RuntimeError, match="^no disabling while active$"):
            with torch.autograd.graph.disable_saved_tensors_hooks("no disabling while active"):
                pass


def test_save_on_cpu():
    x = f64([1.0, 2.0])
    with torch.autograd.graph.save_on_cpu():
        y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0]


# --- parity driver -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", parity_params(SCENARIOS))
def test_parity_with_torch(name, real_torch):
    ours = run(SCENARIOS[name], ferrograd)
    theirs = run(SCENARIOS[name], real_torch)
    assert ours == theirs
