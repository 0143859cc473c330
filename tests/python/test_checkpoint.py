"""ferrograd.utils.checkpoint: checkpoint (reentrant and non-reentrant), checkpoint_sequential,
their warnings and errors (PyTorch 2.13's torch/utils/checkpoint.py)."""

import contextlib
import os
import warnings
import weakref
from collections import OrderedDict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F
import ferrograd.utils.checkpoint as ck
from ferrograd.autograd.graph import saved_memory, saved_tensors_hooks

BOTH = pytest.mark.parametrize("use_reentrant", [True, False])

USE_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
    "exception. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
    "the differences between the two variants."
)
SEQUENTIAL_WARNING = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
    "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is not "
    "passed. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
    "the differences between the two variants."
)
REENTRANT_GRAD_ERROR = (
    "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing "
    "an `inputs` parameter to .backward(). To resolve this error, you can either set "
    "use_reentrant=False, or call .backward() without passing the `inputs` argument."
)


def _torch():
    return pytest.importorskip("torch")


def _fg(a, requires_grad=False):
    return torch.from_numpy(np.ascontiguousarray(a)).requires_grad_(requires_grad)


def _np(t):
    return t.detach().numpy()


def _vec(values, requires_grad=True):
    return torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)


def _grads(fn, *leaves):
    for leaf in leaves:
        leaf.grad = None
    fn().sum().backward()
    grads = [leaf.grad.clone() for leaf in leaves]
    for leaf in leaves:
        leaf.grad = None
    return grads


def _close(a, b):
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12)


def _mlp(layers=4, width=16, dtype=torch.float64):
    torch.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width, dtype=dtype), nn.Tanh()]
    return nn.Sequential(*mods)


# --- Gradients ----------------------------------------------------------------------------------


@BOTH
def test_gradients_closed_form(use_reentrant):
    x = _vec([0.5, -1.0, 2.0])
    w = _vec([1.5, 0.25, -2.0])
    out = ck.checkpoint(lambda a: (a * w).sin(), x, use_reentrant=use_reentrant)
    out.sum().backward()
    _close(x.grad, (x * w).cos() * w)
    _close(w.grad, (x * w).cos() * x)


@BOTH
def test_gradients_equal_uncheckpointed(use_reentrant):
    torch.manual_seed(1)
    w1 = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    w2 = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    x = torch.randn(2, 5, dtype=torch.float64, requires_grad=True)

    def f(a):
        h = (a @ w1).tanh()
        return (h @ w2).exp() * h.sum(1, keepdim=True)

    got = _grads(lambda: ck.checkpoint(f, x, use_reentrant=use_reentrant), x, w1, w2)
    for g, r in zip(got, _grads(lambda: f(x), x, w1, w2)):
        _close(g, r)


@BOTH
def test_function_is_rerun_during_backward(use_reentrant):
    calls = []
    x = _vec([0.5, -1.0, 2.0])

    def f(a):
        calls.append(a.requires_grad)
        return a.sin().exp()

    out = ck.checkpoint(f, x, use_reentrant=use_reentrant)
    assert len(calls) == 1
    out.sum().backward()
    assert len(calls) == 2
    # the recomputation records a graph on inputs that require grad
    assert calls[1] is True


@BOTH
def test_retain_graph_backward_twice_recomputes_twice(use_reentrant):
    calls = []
    x = _vec([0.5, -1.0, 2.0])

    def f(a):
        calls.append(1)
        return a.sin().exp()

    out = ck.checkpoint(f, x, use_reentrant=use_reentrant)
    out.sum().backward(retain_graph=True)
    first = x.grad.clone()
    out.sum().backward()
    _close(x.grad, 2 * first)
    assert len(calls) == 3


@BOTH
def test_non_tensor_args_and_tuple_outputs(use_reentrant):
    x = _vec([0.5, -1.0, 2.0])
    y = _vec([1.0, 2.0, 3.0])

    def f(a, scale, b, tag):
        return a.sin() * scale, tag, (a * b).exp(), None

    def run(fn):
        out = fn(x, 3.0, y, "tag")
        assert out[1] == "tag" and out[3] is None
        return out[0].sum() + out[2].sum()

    got = _grads(lambda: run(lambda *a: ck.checkpoint(f, *a, use_reentrant=use_reentrant)), x, y)
    ref = _grads(lambda: run(f), x, y)
    for g, r in zip(got, ref):
        _close(g, r)
    _close(ref[0], 3.0 * x.cos() + (x * y).exp() * y)


def test_kwargs_non_reentrant():
    x = _vec([0.5, -1.0, 2.0])
    w = _vec([2.0, 3.0, 4.0])

    def f(a, *, weight, power=1):
        return (a * weight) ** power

    (gx, gw) = _grads(lambda: ck.checkpoint(f, x, use_reentrant=False, weight=w, power=2), x, w)
    _close(gx, 2 * x * w * w)
    _close(gw, 2 * x * x * w)


def test_kwargs_reentrant_raise():
    x = _vec([0.5])
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: foo,bar$"):
        ck.checkpoint(lambda a: a, x, use_reentrant=True, foo=1, bar=2)
    # preserve_rng_state is not one of them
    ck.checkpoint(lambda a: a * 2, x, use_reentrant=True, preserve_rng_state=False)


def test_parameters_only_non_reentrant():
    # the non-reentrant variant needs no input that requires grad
    w = _vec([1.0, 2.0])
    out = ck.checkpoint(lambda a: (a * w).sin(), torch.ones(2, dtype=torch.float64), use_reentrant=False)
    out.sum().backward()
    _close(w.grad, w.cos())


def test_parameters_only_reentrant_warns_and_gives_no_gradient():
    w = _vec([1.0, 2.0])
    with pytest.warns(UserWarning, match="^None of the inputs have requires_grad=True. Gradients will be None$"):
        out = ck.checkpoint(lambda a: (a * w).sin(), torch.ones(2, dtype=torch.float64), use_reentrant=True)
    assert not out.requires_grad


@BOTH
def test_no_grad_runs_function_once_without_graph(use_reentrant):
    calls = []
    x = _vec([0.5, -1.0])
    with torch.no_grad():
        out = ck.checkpoint(lambda a: calls.append(1) or a.sin(), x, use_reentrant=use_reentrant)
    assert not out.requires_grad and len(calls) == 1
    _close(out, x.sin())


def test_non_reentrant_supports_grad_and_backward_inputs():
    x = _vec([0.5, -1.0, 2.0])
    w = _vec([1.0, 2.0, 3.0])
    out = ck.checkpoint(lambda a: (a * w).exp(), x, use_reentrant=False)
    (gx,) = torch.autograd.grad(out.sum(), x)
    _close(gx, (x * w).exp() * w)
    assert x.grad is None and w.grad is None
    out = ck.checkpoint(lambda a: (a * w).exp(), x, use_reentrant=False)
    out.sum().backward(inputs=[w])
    _close(w.grad, (x * w).exp() * x)
    assert x.grad is None


@pytest.mark.parametrize("how", ["grad", "inputs"])
def test_reentrant_with_grad_or_inputs_raises(how):
    x = _vec([0.5, -1.0])
    out = ck.checkpoint(lambda a: a.sin(), x, use_reentrant=True)
    with pytest.raises(RuntimeError) as info:
        if how == "grad":
            torch.autograd.grad(out.sum(), x)
        else:
            out.sum().backward(inputs=[x])
    assert str(info.value) == REENTRANT_GRAD_ERROR


def test_reentrant_output_without_grad_raises():
    x = _vec([0.5, -1.0])
    out = ck.checkpoint(lambda a: (a.detach() * 2,), x, use_reentrant=True)
    assert out[0].requires_grad
    msg = "^none of output has requires_grad=True, this checkpoint\\(\\) is not necessary$"
    with pytest.raises(RuntimeError, match=msg):
        out[0].sum().backward()


@BOTH
def test_input_modified_in_place_after_forward_raises(use_reentrant):
    x = _vec([0.5, -1.0])
    h = x * 1.0
    out = ck.checkpoint(lambda a: a.sin(), h, use_reentrant=use_reentrant)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


# --- RNG ----------------------------------------------------------------------------------------


def _dropout_fn(a):
    return F.dropout(a * 1.0, 0.5, training=True) * a


@BOTH
def test_rng_state_is_preserved_for_dropout(use_reentrant):
    x = torch.linspace(-1, 1, 64, dtype=torch.float64, requires_grad=True)
    torch.manual_seed(5)
    out = ck.checkpoint(_dropout_fn, x, use_reentrant=use_reentrant)
    state = torch.default_generator.get_state()
    out.sum().backward()
    # the recomputation's draws do not move the surrounding RNG state
    assert torch.equal(torch.default_generator.get_state(), state)
    got = x.grad.clone()
    x.grad = None
    torch.manual_seed(5)
    _dropout_fn(x).sum().backward()
    _close(got, x.grad)


@BOTH
def test_without_preserve_rng_state_the_mask_changes(use_reentrant):
    x = torch.linspace(-1, 1, 64, dtype=torch.float64, requires_grad=True)
    torch.manual_seed(5)
    out = ck.checkpoint(_dropout_fn, x, use_reentrant=use_reentrant, preserve_rng_state=False)
    out.sum().backward()
    got = x.grad.clone()
    x.grad = None
    torch.manual_seed(5)
    _dropout_fn(x).sum().backward()
    assert not torch.allclose(got, x.grad)


# --- Memory and checkpoint_sequential -----------------------------------------------------------


@BOTH
def test_checkpoint_sequential_gradients_and_saved_memory(use_reentrant):
    model = _mlp(layers=4, width=16)
    x = torch.randn(8, 16, dtype=torch.float64, requires_grad=True)
    params = [x] + list(model.parameters())

    plain = model(x)
    out = ck.checkpoint_sequential(model, 4, x, use_reentrant=use_reentrant)
    _close(out, plain)
    full = saved_memory(plain).total
    held = saved_memory(out).total
    # only the last segment keeps its activations (plus, for the reentrant variant, the
    # CheckpointFunction nodes keep the input of each checkpointed segment)
    tail = saved_memory(model[6:](model[:6](x).detach().requires_grad_())).total
    segment_inputs = 3 * x.numel() * 8 if use_reentrant else 0
    assert held == tail + segment_inputs
    assert held < full

    got = _grads(lambda: ck.checkpoint_sequential(model, 4, x, use_reentrant=use_reentrant), *params)
    for g, r in zip(got, _grads(lambda: model(x), *params)):
        _close(g, r)


def test_checkpoint_sequential_list_of_functions_and_segments():
    calls = []

    def step(k):
        def fn(a):
            calls.append(k)
            return (a * (k + 1)).sin()
        return fn

    functions = [step(k) for k in range(5)]
    x = _vec([0.1, 0.2, 0.3])
    out = ck.checkpoint_sequential(functions, 2, x, use_reentrant=False)
    # segment size 5 // 2 = 2: functions 0-1 are checkpointed, 2-4 run as they are
    assert calls == [0, 1, 2, 3, 4]
    out.sum().backward()
    assert calls == [0, 1, 2, 3, 4, 0, 1]


def test_checkpoint_sequential_unexpected_kwargs():
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: foo$"):
        ck.checkpoint_sequential([lambda a: a], 1, _vec([1.0]), use_reentrant=True, foo=1)


def test_non_reentrant_inputs_are_saved_to_enclosing_hooks():
    # the inputs of a checkpoint are the only tensors an enclosing saved_tensors_hooks sees
    x = _vec([0.5, -1.0, 2.0])
    w = _vec([1.0, 2.0, 3.0])
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        ref = ((x * w).sin() * w).exp()
    n_plain = len(packed)
    packed.clear()
    with saved_tensors_hooks(pack, lambda t: t):
        out = ck.checkpoint(lambda a, b: ((a * b).sin() * b).exp(), x, w, use_reentrant=False)
    assert n_plain >= 4 and packed == [(3,), (3,)]
    got = _grads(lambda: out, x, w)
    for g, r in zip(got, _grads(lambda: ref, x, w)):
        _close(g, r)


def test_non_reentrant_releases_function_and_inputs_after_backward():
    class Fn:
        def __call__(self, a):
            return a.sin().exp()

    x = _vec([0.5, -1.0])
    fn, h = Fn(), x * 2
    fn_ref, h_ref = weakref.ref(fn), weakref.ref(h)
    out = ck.checkpoint(fn, h, use_reentrant=False)
    del fn, h
    assert fn_ref() is not None and h_ref() is not None
    out.sum().backward()
    # the saved tensors of the graph are freed, and with them the checkpoint's frame
    assert fn_ref() is None and h_ref() is None


# --- Non-reentrant specifics --------------------------------------------------------------------


def _counting_fn(log):
    def f(a):
        b = a.sin()   # saves a
        log.append("sin")
        c = b.exp()   # saves its output
        log.append("exp")
        d = c + 1     # saves nothing
        log.append("add")
        return d
    return f


@pytest.mark.parametrize("early_stop", [True, False])
def test_early_stop(early_stop):
    log = []
    x = _vec([0.5, -1.0])
    with ck.set_checkpoint_early_stop(early_stop):
        out = ck.checkpoint(_counting_fn(log), x, use_reentrant=False)
    out.sum().backward()
    # with early stop the recomputation ends inside exp, once both saved tensors are back
    expected = ["sin", "exp", "add", "sin"] if early_stop else ["sin", "exp", "add"] * 2
    assert log == expected
    _close(x.grad, x.sin().exp() * x.cos())


def test_early_stop_argument():
    log = []
    x = _vec([0.5, -1.0])
    ck.checkpoint(_counting_fn(log), x, use_reentrant=False, early_stop=False).sum().backward()
    assert log == ["sin", "exp", "add"] * 2


def _changing_fn(first, second):
    calls = []

    def f(a):
        calls.append(1)
        return first(a) if len(calls) == 1 else second(a)
    return f


def test_recomputed_metadata_mismatch_raises():
    x = _vec([0.5, -1.0, 2.0])
    out = ck.checkpoint(_changing_fn(lambda a: a.exp(), lambda a: a[:2].exp()), x, use_reentrant=False)
    with pytest.raises(ck.CheckpointError) as info:
        out.sum().backward()
    msg = str(info.value)
    assert msg.startswith(
        "torch.utils.checkpoint: Recomputed values for the following tensors have different "
        "metadata than during the forward pass.\ntensor at position 0:\n"
        "saved metadata: {'shape': torch.Size([3]), 'dtype': torch.float64, 'device': device(type='cpu')}\n"
        "recomputed metadata: {'shape': torch.Size([2]), 'dtype': torch.float64, 'device': device(type='cpu')}\n"
        ".\n\nTip: To see a more detailed error message, either pass `debug=True` to\n"
    )
    assert isinstance(info.value, RuntimeError)


def test_determinism_check_none_skips_the_metadata_check():
    x = _vec([0.5, -1.0, 2.0])
    out = ck.checkpoint(_changing_fn(lambda a: a.exp(), lambda a: a[:2].exp()), x,
                        use_reentrant=False, determinism_check="none")
    # no check: the recomputed value reaches the backward formula, which fails as in PyTorch
    msg = "The size of tensor a \\(3\\) must match the size of tensor b \\(2\\)"
    with pytest.raises(RuntimeError, match=msg) as info:
        out.sum().backward()
    assert not isinstance(info.value, ck.CheckpointError)


def test_fewer_tensors_saved_in_recomputation_raises():
    x = _vec([0.5, -1.0, 2.0])
    out = ck.checkpoint(_changing_fn(lambda a: a.sin().exp(), lambda a: a.exp()), x, use_reentrant=False)
    with pytest.raises(ck.CheckpointError, match=(
            "^torch.utils.checkpoint: A different number of tensors was saved during the original "
            "forward and recomputation.\nNumber of tensors saved during forward: 2\n"
            "Number of tensors saved during recomputation: 1.\n")):
        out.sum().backward()


def test_more_tensors_saved_in_recomputation_raises_without_early_stop():
    x = _vec([0.5, -1.0, 2.0])
    out = ck.checkpoint(_changing_fn(lambda a: a.exp(), lambda a: a.sin().exp()), x,
                        use_reentrant=False, early_stop=False)
    with pytest.raises(ck.CheckpointError, match=(
            "^torch.utils.checkpoint: trying to save more tensors during recomputation than "
            "during the original forward pass.\n")):
        out.sum().backward()


@pytest.mark.parametrize("early_stop", [True, False])
def test_backward_inside_checkpointed_function(early_stop):
    x = _vec([0.5, -1.0, 2.0])

    def f(a):
        z = a.sin().cos()
        (ga,) = torch.autograd.grad(z.sum(), a, retain_graph=True)
        return ga * z

    with ck.set_checkpoint_early_stop(early_stop):
        got = _grads(lambda: ck.checkpoint(f, x, use_reentrant=False), x)[0]
    # d/dx [-sin(sin x) cos x * cos(sin x)] with ga treated as a constant (no create_graph)
    ga = -(x.sin()).sin() * x.cos()
    _close(got, ga * -(x.sin()).sin() * x.cos())


def test_context_fn_contexts():
    log = []

    @contextlib.contextmanager
    def cm(name):
        log.append(name + " enter")
        yield
        log.append(name + " exit")

    x = _vec([0.5, -1.0])
    out = ck.checkpoint(lambda a: log.append("run") or a.sin().exp(), x, use_reentrant=False,
                        context_fn=lambda: (cm("forward"), cm("recompute")), early_stop=False)
    assert log == ["forward enter", "run", "forward exit"]
    out.sum().backward()
    assert log[3:] == ["recompute enter", "run", "recompute exit"]


def test_context_fn_that_suppresses_the_forward_exception_raises():
    x = _vec([0.5])

    def fn(a):
        raise ZeroDivisionError

    msg = ("^torch.utils.checkpoint: the forward context provided by context_fn suppressed an "
           "exception raised during the checkpointed forward. This is not supported because "
           "checkpoint cannot return a value for a failed forward.$")
    contexts = (contextlib.suppress(ZeroDivisionError), contextlib.nullcontext())
    with pytest.raises(RuntimeError, match=msg):
        ck.checkpoint(fn, x, use_reentrant=False, context_fn=lambda: contexts)
    with pytest.raises(ZeroDivisionError):
        ck.checkpoint(fn, x, use_reentrant=False)


def test_graph_exec_group():
    x = _vec([0.5, -1.0])
    calls = []
    y = ck.checkpoint(lambda a: calls.append(1) or a.sin(), x, use_reentrant=False)
    z = ck.checkpoint(lambda a: a.cos(), x, use_reentrant=False)
    with ck.GraphExecGroup() as group:
        y.sum().backward()
        z.sum().backward()
        with pytest.raises(RuntimeError, match="^GraphExecGroup contexts cannot be nested. Already inside group"):
            with ck.GraphExecGroup():
                pass
    assert ck.GraphExecGroup._get_current_group() is None and group is not None
    _close(x.grad, x.cos() - x.sin())
    out = ck.checkpoint(lambda a: a.sin().exp(), x, use_reentrant=False)
    with ck.GraphExecGroup():
        out.sum().backward(retain_graph=True)
        msg = "already unpacked once. Performing two backward calls that overlap"
        with pytest.raises(ck.CheckpointError, match=msg):
            out.sum().backward()


def test_debug_mode_is_not_supported():
    x = _vec([0.5])
    with pytest.raises(NotImplementedError, match="debug=True"):
        ck.checkpoint(lambda a: a.sin(), x, use_reentrant=False, debug=True)
    with ck.set_checkpoint_debug_enabled(True):
        with pytest.raises(NotImplementedError, match="debug=True"):
            ck.checkpoint(lambda a: a.sin(), x, use_reentrant=False)
    with ck.set_checkpoint_debug_enabled(False):  # overrides the argument
        ck.checkpoint(lambda a: a.sin(), x, use_reentrant=False, debug=True).sum().backward()
    with pytest.raises(ValueError, match="^debug=True is incompatible with non-default context_fn$"):
        ck.checkpoint(lambda a: a.sin(), x, use_reentrant=False, debug=True,
                      context_fn=lambda: (contextlib.nullcontext(), contextlib.nullcontext()))


def test_double_backward_through_saved_outputs():
    # exp saves only its output, which the engine reattaches: d2/dx2 exp(exp(x))
    x = _vec([0.5, -1.0, 0.3])
    out = ck.checkpoint(lambda a: a.exp().exp(), x, use_reentrant=False)
    (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    e = x.exp()
    _close(gg, e.exp() * e * (e + 1))


def test_double_backward_non_reentrant():
    x = _vec([0.5, -1.0, 0.3])

    def f(a):
        return (a.sin() * a).exp()

    def second(fn):
        (g,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
        return torch.autograd.grad(g.sum(), x)[0]

    _close(second(lambda a: ck.checkpoint(f, a, use_reentrant=False)), second(f))


@pytest.mark.filterwarnings("ignore:None of the inputs have requires_grad")
@pytest.mark.parametrize("outer,inner", [(True, True), (True, False)])
def test_nested_checkpoints(outer, inner):
    x = _vec([0.5, -1.0, 2.0])
    calls = {"outer": 0, "inner": 0}

    def inner_fn(a):
        calls["inner"] += 1
        return a.sin().exp()

    def outer_fn(a):
        calls["outer"] += 1
        return ck.checkpoint(inner_fn, a.cos(), use_reentrant=inner).tanh()

    (got,) = _grads(lambda: ck.checkpoint(outer_fn, x, use_reentrant=outer), x)
    (ref,) = _grads(lambda: x.cos().sin().exp().tanh(), x)
    _close(got, ref)
    assert calls["outer"] == 2


@pytest.mark.parametrize("inner", [True, False])
def test_checkpoints_nested_in_non_reentrant(inner):
    x = _vec([0.5, -1.0, 2.0])

    def outer_fn(a):
        return ck.checkpoint(lambda b: b.sin().exp(), a.cos(), use_reentrant=inner).tanh()

    (got,) = _grads(lambda: ck.checkpoint(outer_fn, x, use_reentrant=False), x)
    (ref,) = _grads(lambda: x.cos().sin().exp().tanh(), x)
    _close(got, ref)


# --- Warnings and argument checks ---------------------------------------------------------------


def test_use_reentrant_not_passed_warns_and_defaults_to_reentrant():
    x = _vec([0.5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = ck.checkpoint(lambda a: a.sin(), x)
    assert [str(w.message) for w in caught] == [USE_REENTRANT_WARNING]
    assert caught[0].category is UserWarning and caught[0].filename == __file__
    assert type(out.grad_fn).__name__ == "CheckpointFunctionBackward"


def test_checkpoint_sequential_use_reentrant_not_passed_warns_once():
    model = _mlp(layers=2, width=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ck.checkpoint_sequential(model, 2, torch.randn(2, 4, dtype=torch.float64, requires_grad=True))
    assert [str(w.message) for w in caught] == [SEQUENTIAL_WARNING]
    assert caught[0].filename == __file__


def test_argument_errors():
    x = _vec([0.5])
    msg = "^Passing `context_fn` or `debug` is only supported when use_reentrant=False.$"
    with pytest.raises(ValueError, match=msg):
        ck.checkpoint(lambda a: a, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match=msg):
        ck.checkpoint(lambda a: a, x, use_reentrant=True, context_fn=lambda: None)
    msg = r"^determinism_check should be one of \['default', 'none'\], but got foo$"
    with pytest.raises(ValueError, match=msg):
        ck.checkpoint(lambda a: a, x, use_reentrant=False, determinism_check="foo")
    msg = "^Only tuple of tensors is supported. Got Unsupported input type: list$"
    with pytest.raises(RuntimeError, match=msg):
        ck.detach_variable([x])
    detached = ck.detach_variable((x, 3))
    assert detached[1] == 3 and detached[0].requires_grad and detached[0].grad_fn is None
    with pytest.raises(NotImplementedError, match="TorchDispatchMode"):
        ck.create_selective_checkpoint_contexts([])


def test_importable_as_attribute():
    import ferrograd
    assert ferrograd.utils.checkpoint is ck
    assert ck.noop_context_fn()[0].__class__ is contextlib.nullcontext
    assert ck.DefaultDeviceType.get_device_type() == "cpu"
    assert ck.get_device_states(_vec([1.0])) == ([], [])


# --- Against PyTorch ----------------------------------------------------------------------------


def _torch_and_fg_models(torch_mod):
    torch_mod.manual_seed(0)
    layers = []
    for _ in range(3):
        layers += [torch_mod.nn.Linear(6, 6, dtype=torch_mod.float64), torch_mod.nn.Tanh()]
    tm = torch_mod.nn.Sequential(*layers)
    fm = _mlp(layers=3, width=6)
    fm.load_state_dict(OrderedDict((k, _fg(v.detach().numpy())) for k, v in tm.state_dict().items()))
    return tm, fm


@BOTH
def test_gradients_match_torch(use_reentrant):
    pt = _torch()
    tm, fm = _torch_and_fg_models(pt)
    xa = np.random.default_rng(0).standard_normal((4, 6))
    tx = pt.tensor(xa, requires_grad=True)
    fx = _fg(xa, requires_grad=True)

    def run(mod, model, x):
        def block(a, scale):
            h = model[0:4](a)
            return (h * scale).sin(), model[4:](h)
        a, b = mod.utils.checkpoint.checkpoint(block, x, 2.0, use_reentrant=use_reentrant)
        (a.sum() + (b * b).sum()).backward()
        return [x.grad] + [p.grad for p in model.parameters()]

    for g, r in zip(run(torch, fm, fx), run(pt, tm, tx)):
        np.testing.assert_allclose(_np(g), r.numpy(), rtol=1e-10, atol=1e-12)


@BOTH
def test_checkpoint_sequential_matches_torch(use_reentrant):
    pt = _torch()
    tm, fm = _torch_and_fg_models(pt)
    xa = np.random.default_rng(1).standard_normal((4, 6))
    tx = pt.tensor(xa, requires_grad=True)
    fx = _fg(xa, requires_grad=True)
    fo = ck.checkpoint_sequential(fm, 3, fx, use_reentrant=use_reentrant)
    to = pt.utils.checkpoint.checkpoint_sequential(tm, 3, tx, use_reentrant=use_reentrant)
    np.testing.assert_allclose(_np(fo), to.detach().numpy(), rtol=1e-12)
    fo.pow(2).sum().backward()
    to.pow(2).sum().backward()
    np.testing.assert_allclose(_np(fx.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    for fp, tp in zip(fm.parameters(), tm.parameters()):
        np.testing.assert_allclose(_np(fp.grad), tp.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("early_stop", [True, False])
def test_early_stop_matches_torch(early_stop):
    pt = _torch()
    logs = []
    for mod in (torch, pt):
        log = []
        x = mod.tensor([0.5, -1.0], requires_grad=True)
        with mod.utils.checkpoint.set_checkpoint_early_stop(early_stop):
            out = mod.utils.checkpoint.checkpoint(_counting_fn(log), x, use_reentrant=False)
        out.sum().backward()
        logs.append(log)
    assert logs[0] == logs[1]


def test_messages_match_torch():
    pt = _torch()

    def messages(mod):
        c = mod.utils.checkpoint
        x = mod.tensor([0.5, -1.0], requires_grad=True)
        out = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            c.checkpoint(lambda a: a.sin(), x)
            c.checkpoint_sequential([lambda a: a.sin()], 1, x)
            c.checkpoint(lambda a: a.sin(), mod.ones(2), use_reentrant=True)
        out += [str(w.message) for w in caught]
        attempts = [
            lambda: c.checkpoint(lambda a: a, x, use_reentrant=True, foo=1, bar=2),
            lambda: c.checkpoint(lambda a: a, x, use_reentrant=True, debug=True),
            lambda: c.checkpoint(lambda a: a, x, use_reentrant=False, determinism_check="x"),
            lambda: c.checkpoint_sequential([lambda a: a], 1, x, use_reentrant=False, foo=1),
            lambda: c.detach_variable([x]),
            lambda: mod.autograd.grad(c.checkpoint(lambda a: a.sin(), x, use_reentrant=True).sum(), x),
            lambda: c.checkpoint(lambda a: (a.detach(),), x, use_reentrant=True)[0].sum().backward(),
            lambda: c.checkpoint(_changing_fn(lambda a: a.exp(), lambda a: a[:1].exp()), x,
                                 use_reentrant=False).sum().backward(),
            lambda: c.checkpoint(_changing_fn(lambda a: a.sin().exp(), lambda a: a.exp()), x,
                                 use_reentrant=False).sum().backward(),
            lambda: c.checkpoint(_changing_fn(lambda a: a.exp(), lambda a: a.sin().exp()), x,
                                 use_reentrant=False, early_stop=False).sum().backward(),
        ]
        for attempt in attempts:
            with pytest.raises(Exception) as info:
                attempt()
            out.append((type(info.value).__name__, str(info.value)))
        return out

    assert messages(torch) == messages(pt)
