"""The ctx methods of custom autograd Functions: mark_dirty, mark_non_differentiable,
set_materialize_grads, once_differentiable, save_for_backward, the checks on what backward
returns, and Functions nested in or re-entering backward.

Parity tests run each scenario with ferrograd and with torch and compare what it logged; they
skip without PyTorch. The closed-form tests below them always run. Helpers: _hooks_helpers.py.
"""

import pytest

import ferrograd
from _hooks_helpers import attempt, f64, parity_params, run, scenario_registry, val

SCENARIOS, scenario = scenario_registry()


# --- Custom Function: ctx methods ----------------------------------------------------------------


@scenario
def mark_dirty_inplace_function(torch, log):
    class AddOneInplace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    leaf = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    a = leaf * 2
    v0 = a._version
    out = AddOneInplace.apply(a)
    log.append(("same object", out is a, "version bumped", a._version > v0))
    log.append(("values", val(a), type(a.grad_fn).__name__))
    (out * out).sum().backward()
    log.append(("leaf.grad", val(leaf.grad)))

    attempt(log, lambda: AddOneInplace.apply(leaf))
    log.append(("leaf unchanged", val(leaf)))
    plain = torch.tensor([1.0, 2.0])
    log.append(("no grad needed", val(AddOneInplace.apply(plain)), val(plain)))


@scenario
def hooks_around_a_custom_inplace_function(torch, log):
    class TimesThreeInplace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(3)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            log.append(("backward", val(g)))
            return g * 3

    leaf = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    a = leaf * 1
    a.register_hook(lambda g: log.append(("before", val(g))) or g + 1)
    out = TimesThreeInplace.apply(a)
    a.register_hook(lambda g: log.append(("after", val(g))))
    out.grad_fn.register_prehook(lambda go: log.append(("pre", val(go))))
    (out * out).sum().backward()
    log.append(("leaf.grad", val(leaf.grad)))


@scenario
def mark_dirty_errors(torch, log):
    class DirtyNotReturned(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    a = torch.tensor([1.0], requires_grad=True) * 1
    attempt(log, lambda: DirtyNotReturned.apply(a))

    class ViewOfLeaf(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    with torch.no_grad():
        b = torch.tensor([1.0], requires_grad=True)
        log.append(("under no_grad", val(ViewOfLeaf.apply(b))))


@scenario
def mark_dirty_then_saved_tensor_check(torch, log):
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x

    class Inplace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(5)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    leaf = torch.tensor([1.0], requires_grad=True)
    a = leaf * 1
    y = Scale.apply(a)
    Inplace.apply(a)
    attempt(log, lambda: y.backward())


@scenario
def mark_non_differentiable_outputs(torch, log):
    class SortLike(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            values = x * 2
            idx = x.argmax().reshape(1)
            mask = (x > 1).to(x.dtype)
            ctx.mark_non_differentiable(idx, mask)
            return values, idx, mask

        @staticmethod
        def backward(ctx, gv, gi, gm):
            log.append(("backward got", val(gv), val(gi), val(gm)))
            return gv * 2

    x = torch.tensor([1.0, 3.0, 2.0], dtype=torch.float64, requires_grad=True)
    v, i, m = SortLike.apply(x)
    log.append(("requires_grad", v.requires_grad, i.requires_grad, m.requires_grad))
    log.append(("grad_fn", m.grad_fn is None, i.grad_fn is None, val(i), val(m)))
    v.sum().backward()
    log.append(("x.grad", val(x.grad)))
    attempt(log, lambda: m.sum().backward())


@scenario
def set_materialize_grads_false(torch, log):
    class Two(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            log.append(("backward got", val(g1), val(g2)))
            total = 0
            if g1 is not None:
                total = total + g1 * 2
            if g2 is not None:
                total = total + g2 * 3
            return total, None

    for materialize in (True, False):
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        a, b = Two.apply(x, materialize)
        a.sum().backward()
        log.append(("x.grad", val(x.grad)))


@scenario
def once_differentiable_backward(torch, log):
    from importlib import import_module

    once = import_module(torch.__name__ + ".autograd.function").once_differentiable

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @once
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            log.append(("grad enabled in backward", torch.is_grad_enabled()))
            return g * 3 * x ** 2

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    Cube.apply(x).sum().backward()
    log.append(("x.grad", val(x.grad)))
    (gx,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    log.append(("gx", val(gx), gx.requires_grad))
    attempt(log, lambda: gx.sum().backward())
    v = torch.tensor([1.0, 1.0], dtype=torch.float64, requires_grad=True)
    (gx,) = torch.autograd.grad(Cube.apply(x), x, v, create_graph=True)
    log.append(("gx", val(gx), gx.requires_grad, gx.grad_fn.name()))
    attempt(log, lambda: gx.sum().backward())
    attempt(log, lambda: torch.autograd.grad(gx.sum(), v))


@scenario
def save_for_backward_inputs_and_outputs(torch, log):
    class ExpFn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            y = (x * scale).exp()
            ctx.save_for_backward(x, y, None)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y, none = ctx.saved_tensors
            log.append(("saved", val(x), none, x.grad_fn is None, x.requires_grad,
                        type(y.grad_fn).__name__, y.requires_grad))
            return g * y * 2, None

    x = torch.tensor([0.0, 0.5], dtype=torch.float64, requires_grad=True)
    y = ExpFn.apply(x, 2.0)
    y.sum().backward(retain_graph=True)
    log.append(("x.grad", val(x.grad)))
    log.append(("saved_tensors outside", len(y.grad_fn.saved_tensors)))
    y.sum().backward()
    attempt(log, lambda: y.sum().backward())


@scenario
def save_for_backward_errors(torch, log):
    class SavesInt(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    attempt(log, lambda: SavesInt.apply(torch.tensor([1.0], requires_grad=True)))
    attempt(log, lambda: SavesInt.apply(torch.tensor([1.0, 2.0], requires_grad=True)))


@scenario
def backward_return_value_checks(torch, log):
    cases = [
        ("none", lambda g: (None, g * 2, None)),
        ("too many", lambda g: (g, g, None, g)),
        ("too many but None", lambda g: (g, g, None, None)),
        ("too few", lambda g: (g,)),
        ("not a tuple", lambda g: g),
        ("int", lambda g: (g, 1, None)),
        ("ndarray", lambda g: (g.detach().numpy(), None, None)),
        ("grad for non-tensor", lambda g: (g, g, g)),
        ("other dtype", lambda g: (g.float(), g, None)),
        ("reducible", lambda g: (g * torch.ones(3, 2, dtype=g.dtype), g, None)),
    ]
    check_backward_returns(torch, log, cases)


@scenario
def backward_returning_wrong_shapes(torch, log):
    cases = [
        ("wrong shape", lambda g: (g, g[:1], None)),
        ("scalar for a vector", lambda g: (g.sum(), g, None)),
        ("not expandable", lambda g: (g.reshape(2, 1) * torch.ones(2, 3, dtype=g.dtype), g, None)),
    ]
    check_backward_returns(torch, log, cases)


def check_backward_returns(torch, log, cases):
    def make(ret):
        class F(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, k):
                return x * y * k

            @staticmethod
            def backward(ctx, g):
                return ret(g)

        return F

    for name, ret in cases:
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        y = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
        out = make(ret).apply(x, y, 2.0)
        attempt(log, lambda: out.sum().backward())
        log.append((name, val(x.grad), val(y.grad), x.grad is not None and str(x.grad.dtype)))


@scenario
def function_nested_in_backward_and_double_backward(torch, log):
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return Double.apply(g * x)

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            log.append("Double.backward")
            return g * 2

    x = torch.tensor([1.0, 3.0], dtype=torch.float64, requires_grad=True)
    (gx,) = torch.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    log.append(("gx", val(gx), type(gx.grad_fn).__name__))
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    log.append(("ggx", val(ggx)))
    (gx,) = torch.autograd.grad(Square.apply(x).sum(), x)
    log.append(("no create_graph", val(gx), gx.requires_grad))


@scenario
def reentrant_autograd_grad_in_backward(torch, log):
    class Checkpoint(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x.sin() * x).detach()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                xd = x.detach().requires_grad_()
                y = xd.sin() * xd
                y.register_hook(lambda gy: log.append(("inner hook", val(gy))))
                (gx,) = torch.autograd.grad(y, xd, g)
            return gx

    x = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
    x.register_hook(lambda g: log.append(("outer hook", val(g))))
    (Checkpoint.apply(x) * 2).sum().backward()
    log.append(("x.grad", val(x.grad)))

    class Reentrant(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                xd = x.detach().requires_grad_()
                (xd * xd).sum().backward()
            log.append(("inner .grad", val(xd.grad)))
            return g * xd.grad

    (Reentrant.apply(x) * 1).sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def custom_function_double_backward(torch, log):
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = Cube.apply(x)
    (gx,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    log.append(("gx", val(gx), gx.requires_grad))
    (ggx,) = torch.autograd.grad(gx.sum(), x, create_graph=True)
    log.append(("ggx", val(ggx)))
    (gggx,) = torch.autograd.grad(ggx.sum(), x)
    log.append(("gggx", val(gggx)))
    Cube.apply(x).sum().backward(create_graph=True)
    log.append(("x.grad", val(x.grad), x.grad.requires_grad))


@scenario
def custom_function_hooks_and_needs_input_grad(torch, log):
    class Mul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            log.append(("needs_input_grad", tuple(ctx.needs_input_grad)))
            x, y = ctx.saved_tensors
            return g * y, g * x

    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([3.0, 4.0], dtype=torch.float64)
    out = Mul.apply(x, y)
    log.append(type(out.grad_fn).__name__)
    out.register_hook(lambda g: log.append(("out hook", val(g))) or g * 2)
    out.grad_fn.register_hook(lambda gi, go: log.append(("post", val(gi), val(go))))
    out.grad_fn.register_prehook(lambda go: log.append(("pre", val(go))))
    out.sum().backward()
    log.append(("x.grad", val(x.grad)))


# --- closed forms (always run) -------------------------------------------------------------------

torch = ferrograd


class AddOneInplace(ferrograd.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 3


def test_mark_dirty():
    leaf = f64([1.0, 2.0])
    a = leaf * 2
    version = a._version
    out = AddOneInplace.apply(a)
    assert out is a and a._version > version
    assert a.tolist() == [3.0, 5.0] and type(a.grad_fn).__name__ == "AddOneInplaceBackward"
    (out * out).sum().backward()
    assert leaf.grad.tolist() == [36.0, 60.0]  # 2 * 3 * 2a
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad has been used"):
        AddOneInplace.apply(leaf)


def test_mark_dirty_requires_returning_the_input():
    class NotReturned(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    message = "^Some elements marked as dirty during the forward method were not returned as output"
    with pytest.raises(RuntimeError, match=message):
        NotReturned.apply(f64([1.0]) * 1)


class ValuesAndIndex(ferrograd.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        idx = x.argmax().reshape(1)
        mask = (x > 1).to(x.dtype)
        ctx.mark_non_differentiable(idx, mask)
        ctx.seen = []
        return x * 2, idx, mask

    @staticmethod
    def backward(ctx, gv, gi, gm):
        ctx.seen.append((gi.tolist(), gm.tolist()))
        return gv * 2


def test_mark_non_differentiable_outputs_get_zero_gradients():
    x = f64([1.0, 3.0, 2.0])
    v, i, m = ValuesAndIndex.apply(x)
    assert v.requires_grad and not i.requires_grad and not m.requires_grad
    assert i.tolist() == [1] and m.tolist() == [0.0, 1.0, 1.0]
    v.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_set_materialize_grads_false_passes_none():
    got = []

    class Two(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            got.append((g1 is None, g2 is None))
            return g1 * 2 if g1 is not None else None

    x = f64([1.0, 2.0])
    a, b = Two.apply(x)
    a.sum().backward()
    assert got == [(False, True)] and x.grad.tolist() == [2.0, 2.0]


def test_once_differentiable():
    enabled = []

    class Cube(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @ferrograd.autograd.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            enabled.append(torch.is_grad_enabled())
            return g * 3 * x ** 2

    x = f64([1.0, 2.0])
    (gx,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    # the incoming gradient does not require grad: nothing to guard (as in PyTorch)
    assert enabled == [False] and gx.tolist() == [3.0, 12.0] and not gx.requires_grad
    v = f64([1.0, 1.0])
    (gx,) = torch.autograd.grad(Cube.apply(x), x, v, create_graph=True)
    assert gx.tolist() == [3.0, 12.0] and gx.requires_grad
    with pytest.raises(RuntimeError, match="^trying to differentiate twice a function that was "
                                           "marked with @once_differentiable$"):
        gx.sum().backward()


def test_saved_output_comes_back_with_its_grad_fn_and_none_stays_none():
    got = []

    class Exp(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(None, x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            none, x, y = ctx.saved_tensors
            got.append((none, x.grad_fn, type(y.grad_fn).__name__))
            return g * y

    x = f64([0.0, 1.0])
    y = Exp.apply(x)
    assert len(y.grad_fn.saved_tensors) == 3 and y.grad_fn.saved_tensors[0] is None
    y.sum().backward()
    assert got == [(None, None, "ExpBackward")]
    assert x.grad.tolist() == [1.0, y.tolist()[1]]
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        y.sum().backward()


def test_backward_return_value_errors():
    def apply(ret):
        class F(ferrograd.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return ret(g)

        return F.apply(f64([1.0, 2.0]), 2.0).sum().backward

    with pytest.raises(RuntimeError, match=r"^function FBackward returned an incorrect number of "
                                           r"gradients \(expected 2, got 3\)$"):
        apply(lambda g: (g, None, g))()
    with pytest.raises(RuntimeError, match=r"^function FBackward returned an incorrect number of "
                                           r"gradients \(expected 2, got 1\)$"):
        apply(lambda g: g)()
    apply(lambda g: (g, None, None))()  # extra Nones are fine
    with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2"):
        apply(lambda g: (g, g))()


def test_function_nested_in_backward_and_double_backward():
    class Double(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Square(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return Double.apply(g * x)

    x = f64([1.0, 3.0])
    (gx,) = torch.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    assert gx.tolist() == [2.0, 6.0] and type(gx.grad_fn).__name__ == "DoubleBackward"
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    assert ggx.tolist() == [2.0, 2.0]


def test_autograd_grad_inside_a_backward():
    class Checkpointed(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x * x * x).detach()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                xd = x.detach().requires_grad_()
                (gx,) = torch.autograd.grad(xd * xd * xd, xd, g)
            return gx

    x = f64([1.0, 2.0])
    (Checkpointed.apply(x) * 2).sum().backward()
    assert x.grad.tolist() == [6.0, 24.0]  # 2 * 3x^2


def test_custom_function_triple_backward():
    class Cube(ferrograd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    x = f64([1.0, 2.0])
    (g1,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (g2,) = torch.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = torch.autograd.grad(g2.sum(), x)
    assert (g1.tolist(), g2.tolist(), g3.tolist()) == ([3.0, 12.0], [6.0, 12.0], [6.0, 6.0])


# --- parity driver -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", parity_params(SCENARIOS))
def test_parity_with_torch(name, real_torch):
    ours = run(SCENARIOS[name], ferrograd)
    theirs = run(SCENARIOS[name], real_torch)
    assert ours == theirs
