"""torch.autograd.forward_ad (issue 13): dual tensors, tangents through every op (one rule in
the core, checked op by op in tests/native/test_op_table.py::test_forward_ad), levels, custom
Functions with jvp, in-place ops, no_grad, and the printed tangent.

Parity scenarios run with ferrograd and with PyTorch (skipped without it); the rest check
values against a closed form.
"""

import math

import numpy as np
import pytest

import ferrograd
import ferrograd.autograd.forward_ad as fwAD
from _func_helpers import assert_same, attempt, run, val


def levels_and_unpack(torch, log):
    fa = torch.autograd.forward_ad
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    log.append(val(fa.unpack_dual(t)))
    log.append(fa.unpack_dual(t).primal is t)
    attempt(log, lambda: fa.make_dual(t, t))
    with fa.dual_level() as level:
        log.append(("level", level))
        attempt(log, lambda: fa.enter_dual_level())
        p, tangent = fa.unpack_dual(t)
        log.append((type(fa.unpack_dual(t)).__name__, p is t, p._base is t, val(p), tangent))
        u = torch.ones(2)
        log.append((fa.unpack_dual(u).tangent, val(fa.unpack_dual(u).primal)))
        attempt(log, lambda: fa.make_dual(torch.ones(2, dtype=torch.int64), torch.ones(2)))
        attempt(log, lambda: fa.make_dual(torch.ones(2), torch.ones(2, dtype=torch.int64)))
        attempt(log, lambda: fa.make_dual(torch.ones(3), torch.ones(2)))
    attempt(log, fa.exit_dual_level)
    log.append(fa.enter_dual_level())
    attempt(log, lambda: fa.exit_dual_level(level=3))
    fa.exit_dual_level()


def duals_through_ops(torch, log):
    fa = torch.autograd.forward_ad
    F = torch.nn.functional
    f64 = torch.float64
    x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=f64)
    t = torch.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]], dtype=f64)
    w = torch.tensor([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.6]], dtype=f64, requires_grad=True)
    with fa.dual_level():
        d = fa.make_dual(x, t)
        log.append((d.grad_fn, d.requires_grad, d._base is x, fa.unpack_dual(d).tangent is t))
        p = fa.unpack_dual(d)
        log.append((p.primal._base is x, p.primal is d, fa.unpack_dual(p.primal).tangent))
        for f in (lambda a: a.sin() * a.exp(), lambda a: F.gelu(a), lambda a: a.softmax(-1),
                  lambda a: a.sum(0), lambda a: a.t() @ a, lambda a: a.max(dim=1).values,
                  lambda a: a.sign(), lambda a: a * 3, lambda a: a[1, 1:], lambda a: a.view(6),
                  lambda a: torch.where(a > 0, a, a * a), lambda a: a.detach(),
                  lambda a: F.layer_norm(a, (3,)), lambda a: a.cumsum(1), lambda a: a ** 2.5):
            y = f(d)
            log.append((val(y), y.grad_fn, val(fa.unpack_dual(y).tangent)))
        log.append(fa.unpack_dual(d.argmax()).tangent)
        with torch.no_grad():
            y = d * d
            log.append((y.requires_grad, val(fa.unpack_dual(y).tangent)))
        y = d @ w  # reverse mode records as usual; the tangent goes alongside
        log.append((type(y.grad_fn).__name__, val(fa.unpack_dual(y).tangent)))
        y.sum().backward()
        log.append(val(w.grad))
        z = torch.zeros(2, 3, dtype=f64)
        z.copy_(d)
        log.append(val(fa.unpack_dual(z).tangent))
        z2 = torch.ones(2, 3, dtype=f64)
        z2 += d
        z2.mul_(d)
        log.append(val(fa.unpack_dual(z2).tangent))
        z2.fill_(1.0)
        log.append(val(fa.unpack_dual(z2).tangent))
        e = d.clone()
        e.exp_()
        log.append(val(fa.unpack_dual(e).tangent))
        kept = d * 2
    log.append((fa.unpack_dual(d).tangent, fa.unpack_dual(kept).tangent))
    attempt(log, lambda: fa.make_dual(x, t))


def custom_functions(torch, log):
    fa = torch.autograd.forward_ad

    class NoJvp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            ctx.save_for_backward(a)
            ctx.save_for_forward(a)
            ctx.k = k
            return a ** 3 * k

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * 3 * a ** 2 * ctx.k, None

        @staticmethod
        def jvp(ctx, ta, tk):
            (a,) = ctx.saved_tensors
            return ta * 3 * a ** 2 * ctx.k

    x = torch.tensor([1.0, -2.0, 0.5])
    with fa.dual_level():
        d = fa.make_dual(x, torch.tensor([1.0, 0.5, 2.0]))
        attempt(log, lambda: NoJvp.apply(d))
        log.append(val(NoJvp.apply(x)))
        y = Cube.apply(d, 2.0)
        log.append((val(y), val(fa.unpack_dual(y).tangent)))

        class ForgotToSave(Cube):  # jvp's saved_tensors are save_for_forward's only
            @staticmethod
            def forward(ctx, a, k):
                ctx.save_for_backward(a)
                ctx.k = k
                return a ** 3 * k

        attempt(log, lambda: ForgotToSave.apply(d, 2.0))


def printing(torch, log):
    fa = torch.autograd.forward_ad
    with fa.dual_level():
        d = fa.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0]))
        log.append(repr(d))
        log.append(repr(d * 2))
        log.append(repr(d.sum()))


def reverse_over_forward(torch, log):
    fa = torch.autograd.forward_ad
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    t = torch.tensor([1.0, 0.5, -2.0], dtype=torch.float64, requires_grad=True)
    with fa.dual_level():
        d = fa.make_dual(x, t)
        y = (d.sin() * d.exp()).sum() + (d * d).prod()
        jt = fa.unpack_dual(y).tangent
        log.append((val(y), val(jt), jt.requires_grad))
        jt.backward()
    log.append((val(x.grad), val(t.grad)))


def composite_ops(torch, log):
    """Ops ferrograd writes in Python (entr, scatter_reduce) and one PyTorch cannot differentiate
    (floor_divide). (grid_sample has tangents in ferrograd, checked by the op table's
    test_forward_ad; PyTorch 2.13 raises NotImplementedError for it.)"""
    fa = torch.autograd.forward_ad
    f64 = torch.float64
    x = torch.tensor([0.5, 1.5, 2.0, 0.25], dtype=f64, requires_grad=True)
    t = torch.tensor([1.0, -1.0, 0.5, 2.0], dtype=f64)
    index = torch.tensor([0, 1, 0, 1])
    with fa.dual_level():
        d = fa.make_dual(x, t)
        e = torch.special.entr(d)
        log.append((val(e), val(fa.unpack_dual(e).tangent)))
        fa.unpack_dual(e).tangent.sum().backward()
        log.append(val(x.grad))
        # (PyTorch 2.13 leaves reduce="prod" without a tangent; ferrograd gives J t for it,
        # which tests/native/test_op_table.py::test_forward_ad checks)
        for reduce in ("sum", "mean", "amax"):
            r = torch.zeros(2, dtype=f64).scatter_reduce(0, index, d, reduce, include_self=False)
            log.append((reduce, val(r), val(fa.unpack_dual(r).tangent)))
        attempt(log, lambda: torch.floor_divide(d, 2))


@pytest.mark.parametrize("scenario", [levels_and_unpack, duals_through_ops, custom_functions,
                                      printing, reverse_over_forward, composite_ops])
def test_parity_with_torch(real_torch, scenario):
    assert_same(run(scenario, ferrograd), run(scenario, real_torch))


def test_tangents_match_closed_forms():
    x = np.array([0.3, -1.2, 2.0])
    t = np.array([1.0, -0.5, 0.25])
    with fwAD.dual_level():
        d = fwAD.make_dual(ferrograd.tensor(x), ferrograd.tensor(t))
        y = (d.sin() * d).tanh()
        inner = np.sin(x) * x
        expected = (1 - np.tanh(inner) ** 2) * (np.cos(x) * x + np.sin(x)) * t
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), expected, rtol=1e-12)
        with ferrograd.no_grad():
            s = (d * d).sum()
        assert math.isclose(fwAD.unpack_dual(s).tangent.item(), float(np.sum(2 * x * t)))


def test_tangents_leave_with_the_level():
    with fwAD.dual_level():
        d = fwAD.make_dual(ferrograd.ones(2), ferrograd.ones(2))
        y = d.exp()
    assert fwAD.unpack_dual(y).tangent is None
    with fwAD.dual_level():  # a new level does not see the old tangents
        assert fwAD.unpack_dual(y).tangent is None
        assert fwAD.unpack_dual(y * 2).tangent is None
    assert fwAD._current_level == -1


def test_dual_level_as_decorator_restores_level():
    @fwAD.dual_level()
    def inside():
        return fwAD.unpack_dual(ferrograd.ones(1)).primal._base is not None

    assert inside()
    assert fwAD._current_level == -1


def test_a_deep_chain_of_duals():
    with fwAD.dual_level():
        one = ferrograd.tensor([1.0], dtype=ferrograd.float64)
        d = fwAD.make_dual(one, one.clone())
        for _ in range(2000):
            d = d * 1.001
        assert math.isclose(fwAD.unpack_dual(d).tangent.item(), 1.001 ** 2000, rel_tol=1e-5)


def test_exported_names():
    assert ferrograd.autograd.forward_ad is fwAD
    assert set(fwAD.__all__) == {
        "UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
        "dual_level"}
