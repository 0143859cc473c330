"""Module backward hooks: register_full_backward_hook, register_full_backward_pre_hook, the
legacy register_backward_hook and the global module hooks.

The closed-form tests check hand-computed gradients on a Linear; the parity tests run the same
scenario with ``lib = ferrograd`` and ``lib = torch`` and compare what the hooks saw (call order,
gradient values, warnings, errors).
"""

import os
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest

import ferrograd
import ferrograd.nn as nn
from ferrograd.nn.modules import module as module_mod


def _torch():
    return pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _reset_global_backward_hooks():
    """The global hooks are module state: leave it as found, in both libraries."""
    yield
    libs = [ferrograd]
    try:
        import torch

        libs.append(torch)
    except ImportError:
        pass
    for lib in libs:
        mm = lib.nn.modules.module
        mm._global_backward_hooks.clear()
        mm._global_backward_pre_hooks.clear()
        mm._global_is_full_backward_hook = None


def _values(gs):
    """A tuple of gradients as comparable data: (shape, dtype name, values) or None."""
    out = []
    for g in gs:
        if g is None:
            out.append(None)
        else:
            dtype = str(g.dtype).replace("torch.", "")
            out.append((tuple(g.shape), dtype, [float(v) for v in g.flatten().tolist()]))
    return out


def _assert_same(a, b, path="log"):
    if isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-5, abs=1e-6), path
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _run(lib, scenario):
    log = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            scenario(lib, log)
        except Exception as e:  # the exception is part of what is compared
            log.append(("raised", type(e).__name__, str(e)))
    log.append(("warnings", [(w.category.__name__, str(w.message)) for w in caught]))
    return log


def _check_parity(scenario):
    torch = _torch()
    ours = _run(ferrograd, scenario)
    theirs = _run(torch, scenario)
    _assert_same(ours, theirs)
    return ours


def _linear(lib, n_in, n_out, shift):
    """A Linear with fixed, distinct weights."""
    m = lib.nn.Linear(n_in, n_out)
    with lib.no_grad():
        m.weight.copy_(lib.arange(n_in * n_out, dtype=lib.float32).reshape(n_out, n_in) * 0.1 - shift)
        m.bias.copy_(lib.arange(n_out, dtype=lib.float32) * 0.5 + shift)
    return m


def _set_linear(m, weight, bias):
    with ferrograd.no_grad():
        m.weight.copy_(ferrograd.tensor(weight))
        m.bias.copy_(ferrograd.tensor(bias))


# --- closed form ----------------------------------------------------------------------------------


def test_linear_grad_input_grad_output_by_hand():
    # y = x W^T + b, loss = sum(y * c): grad_output = c, grad_input = c W
    m = nn.Linear(3, 2)
    _set_linear(m, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [0.5, -0.5])
    log = []
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", mod, go)))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", mod, gi, go)))
    x = ferrograd.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    (m(x) * ferrograd.tensor([[2.0, 3.0]])).sum().backward()

    assert [entry[0] for entry in log] == ["pre", "hook"]
    _, mod, go = log[0]
    assert mod is m
    assert isinstance(go, tuple) and len(go) == 1
    assert go[0].tolist() == [[2.0, 3.0]]
    _, mod, gi, go = log[1]
    assert mod is m
    assert isinstance(gi, tuple) and len(gi) == 1
    assert gi[0].tolist() == [[14.0, 19.0, 24.0]]
    assert go[0].tolist() == [[2.0, 3.0]]
    assert x.grad.tolist() == [[14.0, 19.0, 24.0]]
    # the parameters' gradients are untouched: dW = c^T x, db = c
    assert m.weight.grad.tolist() == [[2.0, 4.0, 6.0], [3.0, 6.0, 9.0]]
    assert m.bias.grad.tolist() == [2.0, 3.0]


def test_hooks_replace_grad_input_and_grad_output():
    m = nn.Linear(3, 2)
    _set_linear(m, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [0.0, 0.0])
    seen = []
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi[0].tolist(), go[0].tolist())))
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] + 1,))
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi[0].tolist(), go[0].tolist())))
    x = ferrograd.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    (m(x) * ferrograd.tensor([[2.0, 3.0]])).sum().backward()
    # the pre-hook doubled grad_output: every hook sees it, the parameters get it too
    assert seen == [([[28.0, 38.0, 48.0]], [[4.0, 6.0]]), ([[29.0, 39.0, 49.0]], [[4.0, 6.0]])]
    assert x.grad.tolist() == [[29.0, 39.0, 49.0]]
    assert m.bias.grad.tolist() == [4.0, 6.0]
    assert m.weight.grad.tolist() == [[4.0, 8.0, 12.0], [6.0, 12.0, 18.0]]


def test_prepend_and_remove():
    m = nn.Linear(2, 2)
    log = []
    h1 = m.register_full_backward_hook(lambda *a: log.append("h1"))
    h2 = m.register_full_backward_hook(lambda *a: log.append("h2"), prepend=True)
    p1 = m.register_full_backward_pre_hook(lambda *a: log.append("p1"))
    p2 = m.register_full_backward_pre_hook(lambda *a: log.append("p2"), prepend=True)
    x = ferrograd.ones(1, 2, requires_grad=True)
    m(x).sum().backward()
    assert log == ["p2", "p1", "h2", "h1"]
    log.clear()
    h2.remove()
    p1.remove()
    m(x).sum().backward()
    assert log == ["p2", "h1"]
    log.clear()
    with h1, p2:
        pass
    assert len(m._backward_hooks) == 0 and len(m._backward_pre_hooks) == 0
    m(x).sum().backward()
    assert log == []


def test_grad_input_has_none_for_non_tensor_args():
    class Scale(nn.Module):
        def forward(self, scale, x, mode):
            return x * scale if mode == "mul" else x + scale

    m = Scale()
    log = []
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", len(go))))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", gi, go)))
    x = ferrograd.tensor([1.0, 2.0], requires_grad=True)
    m(3.0, x, "mul").sum().backward()
    assert log[0] == ("pre", 1)
    _, gi, go = log[1]
    assert len(gi) == 3 and gi[0] is None and gi[2] is None
    assert gi[1].tolist() == [3.0, 3.0]
    assert go[0].tolist() == [1.0, 1.0]


def test_tuple_output_unused_output_has_none_grad():
    class Two(nn.Module):
        def forward(self, a):
            return a * 2, a * 5

    m = Two()
    log = []
    m.register_full_backward_hook(lambda mod, gi, go: log.append((gi, go)))
    a = ferrograd.ones(2, requires_grad=True)
    out = m(a)
    assert isinstance(out, tuple) and len(out) == 2
    out[1].sum().backward()
    ((gi, go),) = log
    assert go[0] is None and go[1].tolist() == [1.0, 1.0]
    assert gi[0].tolist() == [5.0, 5.0]


def test_hook_fires_on_outputs_when_no_input_requires_grad():
    m = nn.Linear(2, 1)
    log = []
    m.register_full_backward_hook(lambda mod, gi, go: log.append((gi, go)))
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed "
                                         "with respect to module outputs since no inputs require gradients"):
        m(ferrograd.ones(1, 2)).sum().backward()
    ((gi, go),) = log
    assert gi == (None,)
    assert go[0].tolist() == [[1.0]]

    m2 = nn.Linear(2, 1)
    m2.register_full_backward_hook(lambda mod, gi, go: (ferrograd.ones(1, 2),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="Backward hook for Modules where no input requires "
                                               "gradient should always return None or None for all gradients."):
            m2(ferrograd.ones(1, 2)).sum().backward()


def test_hooks_not_set_up_without_grad():
    m = nn.Linear(2, 1)
    log = []
    m.register_full_backward_hook(lambda *a: log.append("hook"))
    with ferrograd.no_grad():
        y = m(ferrograd.ones(1, 2, requires_grad=True))
    assert not y.requires_grad and y.grad_fn is None
    x = ferrograd.ones(1, 2, requires_grad=True)
    y = m(x)
    # the caller receives the output of the hook node
    assert type(y.grad_fn).__name__ == "BackwardHookFunctionBackward"
    assert log == []


def test_wrong_number_of_values():
    m = nn.Linear(2, 1)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, "
                                           "got 2, but expected 1"):
        m(ferrograd.ones(1, 2, requires_grad=True)).sum().backward()
    m = nn.Linear(2, 1)
    m.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0], go[0]))
    with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number of grad_output, "
                                           "got 3, but expected 1"):
        m(ferrograd.ones(1, 2, requires_grad=True)).sum().backward()


def test_full_and_legacy_hooks_cannot_mix():
    m = nn.Linear(1, 1)
    m.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward "
                                           "hooks on a single Module. Please use only one of them."):
        m.register_backward_hook(lambda *a: None)
    m = nn.Linear(1, 1)
    m.register_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="on a single Module"):
        m.register_full_backward_hook(lambda *a: None)
    module_mod.register_module_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward "
                                           "hooks as a global Module hook. Please use only one of them."):
        module_mod.register_module_backward_hook(lambda *a: None)


def test_global_hooks_run_before_module_hooks():
    log = []
    h1 = module_mod.register_module_full_backward_hook(lambda mod, gi, go: log.append(("g", type(mod).__name__)))
    h2 = module_mod.register_module_full_backward_pre_hook(lambda mod, go: log.append(("gpre", type(mod).__name__)))
    seq = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
    seq[0].register_full_backward_hook(lambda *a: log.append(("own", "Linear")))
    seq[0].register_full_backward_pre_hook(lambda *a: log.append(("ownpre", "Linear")))
    seq(ferrograd.ones(1, 2, requires_grad=True)).sum().backward()
    assert log == [
        ("gpre", "Sequential"), ("gpre", "Tanh"), ("g", "Tanh"),
        ("gpre", "Linear"), ("ownpre", "Linear"), ("g", "Linear"), ("own", "Linear"),
        ("g", "Sequential"),
    ]
    h1.remove()
    h2.remove()
    log.clear()
    seq(ferrograd.ones(1, 2, requires_grad=True)).sum().backward()
    assert log == [("ownpre", "Linear"), ("own", "Linear")]


def test_forward_modifying_input_inplace_raises():
    class Inplace(nn.Module):
        def forward(self, a):
            a.mul_(2)
            return a

    m = Inplace()
    m.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Output 0 of BackwardHookFunction is a view and is being "
                                           "modified inplace. This view was created inside a custom Function"):
        m(ferrograd.ones(2, requires_grad=True) * 1)


def test_legacy_backward_hook_sees_the_last_node():
    class Neg(nn.Module):
        def forward(self, a):
            return -a

    m = Neg()
    log = []
    m.register_backward_hook(lambda mod, gi, go: log.append((gi, go)))
    a = ferrograd.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        # one node whose only input is the grad_fn of the module's input: no deprecation warning
        warnings.simplefilter("error")
        y = m(a * 1)
    (y * ferrograd.tensor([2.0, 3.0])).sum().backward()
    ((gi, go),) = log
    assert gi[0].tolist() == [-2.0, -3.0] and go[0].tolist() == [2.0, 3.0]
    assert a.grad.tolist() == [-2.0, -3.0]

    lin = nn.Linear(2, 1)
    lin.register_backward_hook(lambda *a: None)
    with pytest.warns(FutureWarning, match="Using a non-full backward hook when the forward contains "
                                           "multiple autograd Nodes is deprecated"):
        lin(ferrograd.ones(1, 2, requires_grad=True))


def test_dict_output_warns():
    class Dict(nn.Module):
        def forward(self, a):
            return {"y": a * 2}

    m = Dict()
    log = []
    m.register_full_backward_hook(lambda mod, gi, go: log.append(gi))
    a = ferrograd.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="For backward hooks to be called, module output should be a "
                                         "Tensor or a tuple of Tensors but received <class 'dict'>"):
        out = m(a)
    out["y"].sum().backward()
    assert log == []  # as in PyTorch: the output is not seen, the hook never fires
    assert a.grad.tolist() == [2.0, 2.0]


# --- parity with PyTorch --------------------------------------------------------------------------


def _log_hooks(mod, name, log):
    mod.register_full_backward_pre_hook(lambda m, go: log.append(("pre", name, _values(go))))
    mod.register_full_backward_hook(lambda m, gi, go: log.append(("hook", name, _values(gi), _values(go))))


def scenario_linear(lib, log):
    m = _linear(lib, 3, 2, 0.2)
    _log_hooks(m, "linear", log)
    x = lib.tensor([[1.0, -2.0, 0.5], [0.3, 0.2, -1.0]], requires_grad=True)
    y = m(x)
    y.register_hook(lambda g: log.append(("tensor hook", _values([g]))))
    (y * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    log.append(("grads", _values([x.grad, m.weight.grad, m.bias.grad])))


def scenario_sequential(lib, log):
    seq = lib.nn.Sequential(_linear(lib, 3, 4, 0.2), lib.nn.Tanh(), _linear(lib, 4, 2, -0.3))
    for name, mod in [("seq", seq), ("l0", seq[0]), ("act", seq[1]), ("l2", seq[2])]:
        _log_hooks(mod, name, log)
    x = lib.tensor([[1.0, -2.0, 0.5], [0.3, 0.2, -1.0]], requires_grad=True)
    (seq(x) * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    log.append(("grads", _values([x.grad, seq[0].weight.grad])))


def scenario_two_inputs_one_without_grad(lib, log):
    class Mul(lib.nn.Module):
        def forward(self, a, b):
            log.append(("forward sees", a.requires_grad, b.requires_grad))
            return a * b

    m = Mul()
    _log_hooks(m, "mul", log)
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0])
    m(a, b).sum().backward()
    log.append(("grads", _values([a.grad])))


def scenario_tuple_outputs(lib, log):
    class Split(lib.nn.Module):
        def forward(self, a, b):
            return a * b, (a - b).sum(), "tag"

    m = Split()
    _log_hooks(m, "split", log)
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, -4.0], requires_grad=True)
    p, q, tag = m(a, b)
    log.append(tag)
    (p.sum() * 2 + q * 3).backward()
    p, q, tag = m(a, b)
    p.sum().backward()  # q unused: its grad_output is None
    log.append(("grads", _values([a.grad, b.grad])))


def scenario_int_output(lib, log):
    class WithIndex(lib.nn.Module):
        def forward(self, a):
            return a * 2, lib.tensor([1, 2])

    m = WithIndex()
    _log_hooks(m, "m", log)
    a = lib.ones(2, requires_grad=True)
    m(a)[0].sum().backward()


def scenario_non_tensor_args(lib, log):
    class Scale(lib.nn.Module):
        def forward(self, scale, x, mode, y=None):
            log.append(("forward", scale, mode, y is None))
            return x * scale + y if mode == "mul" else x + scale

    m = Scale()
    _log_hooks(m, "scale", log)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = lib.tensor([0.5, 0.5], requires_grad=True)
    m(3.0, x, "mul", y=y).sum().backward()
    log.append(("grads", _values([x.grad, y.grad])))


def scenario_replace_and_prepend(lib, log):
    m = _linear(lib, 3, 2, 0.1)
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre first", _values(go))), prepend=True)
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("seen", _values(gi), _values(go))))
    h = m.register_full_backward_hook(lambda mod, gi, go: (gi[0] + 1,))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("first", _values(gi))), prepend=True)
    x = lib.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    m(x).sum().backward()
    log.append(("grads", _values([x.grad, m.weight.grad, m.bias.grad])))
    h.remove()
    x.grad = None
    m(x).sum().backward()
    log.append(("grads after remove", _values([x.grad])))


def scenario_no_input_requires_grad(lib, log):
    m = _linear(lib, 2, 1, 0.1)
    _log_hooks(m, "linear", log)
    m(lib.ones(1, 2)).sum().backward()
    log.append(("weight grad", _values([m.weight.grad])))
    m2 = _linear(lib, 2, 1, 0.1)
    m2.register_full_backward_hook(lambda mod, gi, go: (lib.ones(1, 2),))
    m2(lib.ones(1, 2)).sum().backward()


def scenario_wrong_number(lib, log):
    m = _linear(lib, 2, 1, 0.1)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    try:
        m(lib.ones(1, 2, requires_grad=True)).sum().backward()
    except RuntimeError as e:
        log.append(str(e))
    m = _linear(lib, 2, 1, 0.1)
    m.register_full_backward_pre_hook(lambda mod, go: ())
    m(lib.ones(1, 2, requires_grad=True)).sum().backward()


def scenario_wrong_shape(lib, log):
    m = _linear(lib, 2, 1, 0.1)
    m.register_full_backward_hook(lambda mod, gi, go: (lib.ones(3),))
    m(lib.ones(1, 2, requires_grad=True)).sum().backward()


def scenario_inplace_input(lib, log):
    class Inplace(lib.nn.Module):
        def forward(self, a, b=None):
            (a if b is None else b).mul_(2)
            return a if b is None else a * b

    m = Inplace()
    m.register_full_backward_hook(lambda *a: None)
    for args in [(lib.ones(2, requires_grad=True) * 1,),
                 (lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True) * 1)]:
        try:
            m(*args)
            log.append("no error")
        except RuntimeError as e:
            log.append(str(e))


def scenario_inplace_input_without_grad(lib, log):
    class Inplace(lib.nn.Module):
        def forward(self, a, b):
            b.mul_(2)
            return a * b

    m = Inplace()
    _log_hooks(m, "inplace", log)
    a = lib.ones(2, requires_grad=True)
    b = lib.ones(2)
    m(a, b).sum().backward()
    log.append(("b", _values([b])))


def scenario_global_hooks(lib, log):
    mm = lib.nn.modules.module
    h1 = mm.register_module_full_backward_hook(
        lambda mod, gi, go: log.append(("global", type(mod).__name__, _values(gi))))
    h2 = mm.register_module_full_backward_pre_hook(lambda mod, go: log.append(("global pre", type(mod).__name__)))
    seq = lib.nn.Sequential(_linear(lib, 2, 2, 0.1), lib.nn.ReLU(), _linear(lib, 2, 1, -0.2))
    _log_hooks(seq[0], "l0", log)
    seq(lib.ones(1, 2, requires_grad=True)).sum().backward()
    try:
        mm.register_module_backward_hook(lambda *a: None)
    except RuntimeError as e:
        log.append(str(e))
    h1.remove()
    h2.remove()
    log.append("removed")
    seq(lib.ones(1, 2, requires_grad=True)).sum().backward()
    mm._global_is_full_backward_hook = None
    h3 = mm.register_module_backward_hook(lambda mod, gi, go: log.append(("legacy", type(mod).__name__, _values(gi))))
    try:
        mm.register_module_full_backward_hook(lambda *a: None)
    except RuntimeError as e:
        log.append(str(e))
    seq(lib.ones(1, 2, requires_grad=True)).sum().backward()
    h3.remove()


def scenario_legacy_hook(lib, log):
    class Triple(lib.nn.Module):
        def forward(self, a):
            return a * 3

    m = Triple()
    m.register_backward_hook(lambda mod, gi, go: log.append(("legacy", _values(gi), _values(go))))
    m.register_backward_hook(lambda mod, gi, go: (gi[0] * 10,))
    a = lib.ones(2, requires_grad=True)
    m(a).sum().backward()
    log.append(("grad", _values([a.grad])))
    lin = _linear(lib, 2, 1, 0.1)
    lin.register_backward_hook(lambda mod, gi, go: log.append(("legacy linear", _values(gi), _values(go))))
    lin(lib.ones(1, 2, requires_grad=True)).sum().backward()
    m.register_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    m(a).sum().backward()


def scenario_retain_graph_and_shared_module(lib, log):
    m = _linear(lib, 2, 2, 0.1)
    _log_hooks(m, "m", log)
    x = lib.tensor([[1.0, -1.0]], requires_grad=True)
    y = (m(m(x)) * lib.tensor([[1.0, 3.0]])).sum()
    y.backward(retain_graph=True)
    (y * 2).backward()
    log.append(("grads", _values([x.grad])))


def scenario_autograd_grad_and_create_graph(lib, log):
    m = _linear(lib, 2, 1, 0.1)
    m.register_full_backward_hook(lambda mod, gi, go: log.append(
        ("hook", _values(gi), _values(go), gi[0] is not None and gi[0].requires_grad)))
    x = lib.tensor([[1.0, 2.0]], requires_grad=True)
    (g,) = lib.autograd.grad(m(x).sum(), x)
    log.append(("grad", _values([g])))
    (g,) = lib.autograd.grad(m(x).sum(), m.weight)  # the input is not on the path
    log.append(("weight grad", _values([g])))
    (g,) = lib.autograd.grad((m(x) ** 2).sum(), x, create_graph=True)
    g.sum().backward()
    log.append(("double backward", _values([x.grad])))


def scenario_forward_hooks_see_hooked_tensors(lib, log):
    m = _linear(lib, 2, 2, 0.1)
    m.register_forward_pre_hook(lambda mod, args: log.append(("forward pre", args[0].grad_fn is None)))
    m.register_forward_hook(lambda mod, args, out: log.append(
        ("forward", type(args[0].grad_fn).__name__, type(out.grad_fn).__name__)))
    m.register_full_backward_hook(lambda *a: log.append("backward"))
    y = m(lib.ones(1, 2, requires_grad=True))
    log.append(type(y.grad_fn).__name__)
    y.sum().backward()


def scenario_dict_output(lib, log):
    class Dict(lib.nn.Module):
        def forward(self, a):
            return {"y": a * 2}

    m = Dict()
    _log_hooks(m, "dict", log)
    a = lib.ones(2, requires_grad=True)
    m(a)["y"].sum().backward()
    log.append(("grad", _values([a.grad])))


_SCENARIOS = [
    scenario_linear,
    scenario_sequential,
    scenario_tuple_outputs,
    scenario_non_tensor_args,
    scenario_replace_and_prepend,
    scenario_no_input_requires_grad,
    scenario_wrong_number,
    scenario_wrong_shape,
    scenario_inplace_input,
    scenario_global_hooks,
    scenario_legacy_hook,
    scenario_retain_graph_and_shared_module,
    scenario_autograd_grad_and_create_graph,
    scenario_forward_hooks_see_hooked_tensors,
    scenario_dict_output,
]

# These three once failed on engine bugs (mark_non_differentiable on an input returned as is,
# integer outputs of a Function that were not outputs of its node); kept as regression tests.
_ENGINE_BUGS = [scenario_two_inputs_one_without_grad, scenario_inplace_input_without_grad,
                scenario_int_output]


@pytest.mark.parametrize("scenario", _SCENARIOS + _ENGINE_BUGS, ids=lambda s: getattr(s, "__name__", None))
def test_parity_with_torch(scenario):
    log = _check_parity(scenario)
    assert len(log) > 1  # the scenario recorded something besides the warnings


def test_parity_hooks_fire_in_the_same_order():
    log = _check_parity(scenario_sequential)
    order = [entry[:2] for entry in log if entry[0] in ("pre", "hook")]
    assert order == [("pre", "seq"), ("pre", "l2"), ("hook", "l2"), ("pre", "act"), ("hook", "act"),
                     ("pre", "l0"), ("hook", "l0"), ("hook", "seq")]
