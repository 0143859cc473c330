"""autograd.Function in PyTorch 2 style (issue 13): ``forward(*args)`` plus
``setup_context(ctx, inputs, output)``, the ctx methods in that style, ``vjp`` as the name of
backward, and Functions inside torch.func transforms.

Parity tests run each scenario with ferrograd and with torch and compare what it logged; they
skip without PyTorch. The tests below them always run. Helpers: _func_helpers.py.
"""

import pytest

import ferrograd
from _func_helpers import assert_same, attempt, run, scenario_registry, val

SCENARIOS, scenario = scenario_registry()

# ferrograd's one-off notice that vmap runs as a loop (tested on its own)
pytestmark = pytest.mark.filterwarnings("ignore:ferrograd's torch.func.vmap")


def f64(torch, values, requires_grad=False):
    return torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)


def scaled_sin(torch, log=None):
    """``k * sin(x)`` in setup_context style, with a consistent jvp and generate_vmap_rule."""

    class ScaledSin(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, k=2.0):
            return x.sin() * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            if log is not None:
                log.append(("setup_context", len(inputs), k, ctx.needs_input_grad,
                            torch.is_grad_enabled(), output.requires_grad))
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            ctx.k = k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos() * ctx.k, None

        @staticmethod
        def jvp(ctx, x_t, k_t):
            (x,) = ctx.saved_tensors
            return x_t * x.cos() * ctx.k

    return ScaledSin


@scenario
def setup_context_basics(torch, log):
    ScaledSin = scaled_sin(torch, log)
    x = f64(torch, [0.5, -1.0, 2.0], requires_grad=True)
    y = ScaledSin.apply(x)
    log.append((val(y), type(y.grad_fn).__name__))
    y.sum().backward()
    log.append(("grad", val(x.grad)))
    log.append(val(ScaledSin.apply(x, 3.0)))
    log.append(val(ScaledSin.apply(x, k=0.5)))
    log.append(val(ScaledSin.apply(f64(torch, [1.0]))))
    with torch.no_grad():
        log.append(val(ScaledSin.apply(x)))
    attempt(log, lambda: ScaledSin.apply(x, 1.0, 2.0))


@scenario
def setup_context_ctx_methods(torch, log):
    class TwoOut(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2, (x > 0).to(x.dtype), x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            double, mask, e = output
            ctx.mark_non_differentiable(mask)
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(e, None)

        @staticmethod
        def backward(ctx, g_double, g_mask, g_exp):
            e, none = ctx.saved_tensors
            log.append(("backward got", g_double is None, g_mask is None, g_exp is None,
                        none is None))
            g = 0
            if g_double is not None:
                g = g + 2 * g_double
            if g_exp is not None:
                g = g + e * g_exp
            return g

    x = f64(torch, [0.5, -1.0], requires_grad=True)
    double, mask, e = TwoOut.apply(x)
    log.append(("requires_grad", double.requires_grad, mask.requires_grad, e.requires_grad))
    (double.sum() * 3).backward()
    log.append(("grad", val(x.grad)))
    log.append(("saved via grad_fn", len(TwoOut.apply(x)[0].grad_fn.saved_tensors)))


@scenario
def setup_context_input_returned_as_is(torch, log):
    class Ident(torch.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x, y * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_non_differentiable(output[0])

        @staticmethod
        def backward(ctx, gx, gy):
            return None, gy * 2

    x = f64(torch, [1.0, 2.0], requires_grad=True)
    y = f64(torch, [3.0], requires_grad=True)
    a, b = Ident.apply(x, y)
    log.append(("a is x", a is x, a.requires_grad, b.requires_grad))
    b.sum().backward()
    log.append(val(y.grad))


@scenario
def vjp_is_backward(torch, log):
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def vjp(ctx, g):
            return g * 2

    class Both(Double):
        @staticmethod
        def backward(ctx, g):
            return g * 3

    class Neither(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

    x = f64(torch, [1.0, 2.0], requires_grad=True)
    Double.apply(x).sum().backward()
    log.append(val(x.grad))
    attempt(log, lambda: Both.apply(x).sum().backward())
    attempt(log, lambda: Neither.apply(x).sum().backward())


@scenario
def save_for_forward_checks(torch, log):
    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(inputs[0], 3)

    attempt(log, lambda: Bad.apply(f64(torch, [1.0], requires_grad=True)))
    log.append(("base", type(torch.autograd.Function.generate_vmap_rule).__name__,
                torch.autograd.Function.generate_vmap_rule))
    attempt(log, lambda: torch.autograd.Function.setup_context(None, (), None))
    attempt(log, lambda: torch.autograd.Function.jvp(None))
    attempt(log, lambda: torch.autograd.Function.vmap(None, None))


@scenario
def functions_inside_transforms(torch, log):
    F = torch.func
    ScaledSin = scaled_sin(torch)
    x = f64(torch, [0.5, -1.0, 2.0])
    t = f64(torch, [1.0, 0.5, -2.0])
    log.append(val(F.grad(lambda a: ScaledSin.apply(a).sum())(x)))
    log.append(val(F.vjp(ScaledSin.apply, x)[1](t)))
    log.append(val(F.jacrev(ScaledSin.apply)(x)))
    log.append(val(F.jvp(ScaledSin.apply, (x,), (t,))))
    log.append(val(F.jacfwd(lambda a: ScaledSin.apply(a, 3.0))(x)))
    log.append(val(F.vmap(ScaledSin.apply)(torch.stack([x, t]))))
    log.append(val(F.vmap(F.grad(lambda a: ScaledSin.apply(a).sum()))(torch.stack([x, t]))))

    class OldStyle(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class NoRules(torch.autograd.Function):
        @staticmethod
        def forward(a):
            return a * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class BothRules(NoRules):
        generate_vmap_rule = True

        @staticmethod
        def vmap(info, in_dims, a):
            return a * 2, in_dims[0]

    for fn in (OldStyle.apply, NoRules.apply, BothRules.apply):
        attempt(log, lambda: F.grad(lambda a: fn(a).sum())(x))
        attempt(log, lambda: F.vmap(fn)(torch.stack([x, t])))
        attempt(log, lambda: F.jvp(fn, (x,), (t,)))
    log.append(("outside transforms", val(OldStyle.apply(x))))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_parity_with_torch(name, real_torch):
    assert_same(run(SCENARIOS[name], ferrograd), run(SCENARIOS[name], real_torch))


# --- ferrograd's own rules (always run) -----------------------------------------------------------


def test_setup_context_style_gradients_closed_form():
    ScaledSin = scaled_sin(ferrograd)
    x = ferrograd.tensor([0.5, 1.5], dtype=ferrograd.float64, requires_grad=True)
    ScaledSin.apply(x, 4.0).sum().backward()
    assert x.grad.tolist() == pytest.approx([4 * 0.8775825618903728, 4 * 0.0707372016677029])


def test_custom_vmap_staticmethod_is_not_run():
    class WithRule(ferrograd.autograd.Function):
        @staticmethod
        def forward(a):
            return a * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def vmap(info, in_dims, a):
            return a * 2, in_dims[0]

    with pytest.raises(NotImplementedError, match="custom vmap staticmethod"):
        ferrograd.func.vmap(WithRule.apply)(ferrograd.ones(3, 2))


def test_jvp_refuses_a_non_differentiable_backward():
    class NumpyBackward(ferrograd.autograd.Function):
        @staticmethod
        def forward(a):
            return a * 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return ferrograd.tensor(g.detach().numpy() * 3)

        @staticmethod
        def jvp(ctx, t):
            return t * 3

    x = ferrograd.tensor([1.0, 2.0], dtype=ferrograd.float64)
    # reverse mode is fine, forward products would silently be zero
    assert ferrograd.func.grad(lambda a: NumpyBackward.apply(a).sum())(x).tolist() == [3.0, 3.0]
    with pytest.raises(NotImplementedError, match="not differentiable"):
        ferrograd.func.jvp(NumpyBackward.apply, (x,), (x,))


def test_internal_functions_are_ops_inside_transforms():
    # scatter_reduce is a ferrograd Function standing in for a native op: no setup_context
    # error, and it works under grad, jacfwd and vmap
    x = ferrograd.tensor([1.0, 2.0, 3.0], dtype=ferrograd.float64)
    idx = ferrograd.tensor([0, 1, 0])

    def f(a):
        return ferrograd.zeros(2, dtype=ferrograd.float64).scatter_reduce(0, idx, a * a, "sum")

    assert ferrograd.func.jacfwd(f)(x).tolist() == [[2.0, 0.0, 6.0], [0.0, 4.0, 0.0]]
    assert ferrograd.func.grad(lambda a: f(a).sum())(x).tolist() == [2.0, 4.0, 6.0]
    assert ferrograd.func.vmap(f)(ferrograd.stack([x, x])).shape == (2, 2)
