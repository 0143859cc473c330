"""nn.Module mechanics: registration, iteration, state_dict, hooks, conversions, repr.

Parity tests build the same model with ``lib = torch`` and ``lib = ferrograd`` and compare
names, keys, reprs and error texts; the other tests check the behaviour directly.
"""

import copy
import os
import pickle
from collections import OrderedDict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest

import ferrograd
import ferrograd.nn as nn


def _torch():
    return pytest.importorskip("torch")


def make_net(lib):
    """A custom module with a ModuleList, a ModuleDict, buffers and a shared submodule."""
    tnn = lib.nn

    class Block(tnn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = tnn.Linear(n, n)
            self.act = tnn.ReLU()
            self.register_buffer("count", lib.zeros(1))
            self.register_buffer("scratch", lib.ones(2), persistent=False)

        def forward(self, x):
            return self.act(self.fc(x))

    class Net(tnn.Module):
        def __init__(self):
            super().__init__()
            self.scale = tnn.Parameter(lib.ones(3))
            self.inp = tnn.Linear(4, 3)
            self.blocks = tnn.ModuleList([Block(3), Block(3)])
            self.heads = tnn.ModuleDict({"b": tnn.Linear(3, 2), "a": tnn.Linear(3, 1, bias=False)})
            self.shared = self.inp
            self.register_buffer("running", lib.zeros(3))
            self.none_param = None
            self.register_parameter("empty", None)

        def forward(self, x):
            h = self.inp(x) * self.scale
            for b in self.blocks:
                h = b(h)
            return self.heads["b"](h), self.heads["a"](h)

    return Net()


def _copy_weights(fg_model, torch_model):
    sd = OrderedDict((k, ferrograd.tensor(v.detach().numpy())) for k, v in torch_model.state_dict().items())
    fg_model.load_state_dict(sd)


# ---------------------------------------------------------------- names and keys


def test_named_parameters_buffers_modules_match_torch():
    torch = _torch()
    t, f = make_net(torch), make_net(ferrograd)
    assert [n for n, _ in f.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in f.named_parameters(remove_duplicate=False)] == [
        n for n, _ in t.named_parameters(remove_duplicate=False)
    ]
    assert [n for n, _ in f.named_parameters(prefix="model", recurse=True)] == [
        n for n, _ in t.named_parameters(prefix="model")
    ]
    assert [n for n, _ in f.named_parameters(recurse=False)] == [n for n, _ in t.named_parameters(recurse=False)]
    assert [n for n, _ in f.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in f.named_buffers(recurse=False)] == [n for n, _ in t.named_buffers(recurse=False)]
    assert [n for n, _ in f.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in f.named_modules(remove_duplicate=False)] == [
        n for n, _ in t.named_modules(remove_duplicate=False)
    ]
    assert [n for n, _ in f.named_children()] == [n for n, _ in t.named_children()]
    assert len(list(f.parameters())) == len(list(t.parameters()))
    assert len(list(f.modules())) == len(list(t.modules()))
    assert len(list(f.children())) == len(list(t.children()))
    assert len(list(f.buffers())) == len(list(t.buffers()))


def test_state_dict_keys_match_torch():
    torch = _torch()
    t, f = make_net(torch), make_net(ferrograd)
    assert list(f.state_dict().keys()) == list(t.state_dict().keys())
    assert list(f.state_dict(prefix="p.").keys()) == list(t.state_dict(prefix="p.").keys())
    assert list(f.state_dict()._metadata.keys()) == list(t.state_dict()._metadata.keys())

    seq = lambda lib: lib.nn.Sequential(  # noqa: E731
        lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Dropout(0.1),
        lib.nn.Sequential(lib.nn.Linear(8, 8), lib.nn.Tanh()), lib.nn.Linear(8, 2),
    )
    assert list(seq(ferrograd).state_dict()) == list(seq(torch).state_dict())


def test_state_dict_contents():
    net = make_net(ferrograd)
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    # a shared module is saved under each of its names; non-persistent buffers are left out
    assert sd["shared.weight"]._storage_ptr() == sd["inp.weight"]._storage_ptr()
    assert "blocks.0.scratch" not in sd and "blocks.0.count" in sd
    assert "empty" not in sd and "running" in sd
    # detached by default, the parameters themselves with keep_vars
    assert not sd["scale"].requires_grad and type(sd["scale"]) is ferrograd.Tensor
    assert sd["scale"]._storage_ptr() == net.scale._storage_ptr()
    kv = net.state_dict(keep_vars=True)
    assert kv["scale"] is net.scale and kv["running"] is net.running


def test_state_dict_round_trip_into_fresh_model():
    src, dst = make_net(ferrograd), make_net(ferrograd)
    with ferrograd.no_grad():
        src.running.fill_(3.0)
        src.blocks[1].count.fill_(7.0)
    res = dst.load_state_dict(src.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    for (n1, a), (n2, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        assert n1 == n2
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # values are copied, not aliased
    assert dst.inp.weight._storage_ptr() != src.inp.weight._storage_ptr()
    x = ferrograd.randn(5, 4)
    for a, b in zip(src(x), dst(x)):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


# ---------------------------------------------------------------- load_state_dict errors


def _error_text(fn):
    with pytest.raises(RuntimeError) as e:
        fn()
    return str(e.value)


def test_load_state_dict_error_texts_match_torch():
    torch = _torch()

    def cases(lib):
        m = lib.nn.Linear(3, 2)
        sd = m.state_dict()
        missing = OrderedDict((k, v) for k, v in sd.items() if k != "bias")
        extra = OrderedDict(sd)
        extra["foo"] = lib.ones(1)
        extra["sub.x"] = lib.ones(1)
        size = OrderedDict(sd)
        size["weight"] = lib.ones(2, 4)
        all_three = OrderedDict(missing)
        all_three["weight"] = lib.ones(3, 3)
        all_three["zzz"] = lib.ones(1)
        notensor = OrderedDict(sd)
        notensor["bias"] = [1.0, 2.0]
        return m, [missing, extra, size, all_three, notensor]

    tm, tcases = cases(torch)
    fm, fcases = cases(ferrograd)
    for tsd, fsd in zip(tcases, fcases):
        expected = _error_text(lambda: tm.load_state_dict(tsd))
        assert _error_text(lambda: fm.load_state_dict(fsd)) == expected

    # nested model: names are dotted, class name is the root's
    tnet, fnet = make_net(torch), make_net(ferrograd)
    tsd = tnet.state_dict()
    del tsd["blocks.1.fc.bias"]
    tsd["heads.c.weight"] = torch.ones(1)
    fsd = fnet.state_dict()
    del fsd["blocks.1.fc.bias"]
    fsd["heads.c.weight"] = ferrograd.ones(1)
    assert _error_text(lambda: fnet.load_state_dict(fsd)) == _error_text(lambda: tnet.load_state_dict(tsd))


def test_load_state_dict_strict_false_and_assign():
    torch = _torch()
    tm, fm = torch.nn.Linear(3, 2), nn.Linear(3, 2)
    tsd = {"weight": torch.ones(2, 3), "extra": torch.ones(1)}
    fsd = {"weight": ferrograd.ones(2, 3), "extra": ferrograd.ones(1)}
    tres, fres = tm.load_state_dict(tsd, strict=False), fm.load_state_dict(fsd, strict=False)
    assert fres.missing_keys == tres.missing_keys == ["bias"]
    assert fres.unexpected_keys == tres.unexpected_keys == ["extra"]
    assert repr(fres) == repr(tres)
    assert str(fres) == str(tres)
    np.testing.assert_array_equal(fm.weight.detach().numpy(), np.ones((2, 3), np.float32))
    assert fm.weight.requires_grad

    # assign=True keeps the checkpoint's tensors (wrapped as Parameters)
    m = nn.Linear(3, 2)
    w = ferrograd.full((2, 3), 2.0)
    m.load_state_dict({"weight": w, "bias": ferrograd.zeros(2)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.weight._storage_ptr() == w._storage_ptr()

    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        m.load_state_dict([1, 2])


def test_load_state_dict_copies_in_place_keeping_parameter_objects():
    m = nn.Linear(2, 2)
    w = m.weight
    m.load_state_dict({"weight": ferrograd.ones(2, 2), "bias": ferrograd.zeros(2)})
    assert m.weight is w
    np.testing.assert_array_equal(w.detach().numpy(), np.ones((2, 2), np.float32))


# ---------------------------------------------------------------- attribute semantics


def test_setattr_registers_parameters_modules_buffers():
    m = nn.Module()
    p = nn.Parameter(ferrograd.ones(2))
    m.p = p
    assert m._parameters["p"] is p and m.p is p and "p" not in m.__dict__
    m.sub = nn.Linear(2, 2)
    assert "sub" in m._modules
    m.register_buffer("b", ferrograd.zeros(2))
    m.b = ferrograd.ones(2)  # reassigning a buffer name keeps it a buffer
    assert m._buffers["b"] is m.b
    m.plain = ferrograd.ones(1)  # plain tensors are ordinary attributes
    assert "plain" in m.__dict__ and "plain" not in m._buffers
    m.p = None
    assert m._parameters["p"] is None and m.p is None
    # a Parameter replaces an attribute of the same name
    m.plain = nn.Parameter(ferrograd.ones(1))
    assert "plain" not in m.__dict__ and "plain" in m._parameters
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'sub'"):
        _ = m.sub
    del m.b
    assert "b" not in m._buffers


def test_setattr_errors_match_torch():
    torch = _torch()

    def run(lib, fn):
        m = lib.nn.Linear(2, 2)
        m.register_buffer("buf", lib.zeros(1))
        with pytest.raises(Exception) as e:
            fn(lib, m)
        return type(e.value).__name__, str(e.value)

    cases = [
        lambda lib, m: setattr(m, "weight", lib.ones(2, 2)),
        lambda lib, m: setattr(m, "weight", 3),
        lambda lib, m: setattr(m, "buf", "x"),
        lambda lib, m: m.register_buffer("weight", lib.ones(1)),
        lambda lib, m: m.register_buffer("a.b", lib.ones(1)),
        lambda lib, m: m.register_buffer("", lib.ones(1)),
        lambda lib, m: m.register_buffer("c", [1]),
        lambda lib, m: m.register_buffer(1, lib.ones(1)),
        lambda lib, m: m.register_parameter("c", lib.ones(1)),
        lambda lib, m: m.register_parameter("buf", lib.nn.Parameter(lib.ones(1))),
        lambda lib, m: m.register_parameter("a.b", None),
        lambda lib, m: m.add_module("weight", lib.nn.ReLU()),
        lambda lib, m: m.add_module("x.y", lib.nn.ReLU()),
        lambda lib, m: m.add_module("", lib.nn.ReLU()),
        lambda lib, m: m.add_module("q", 3),
        lambda lib, m: m.nothing,
        lambda lib, m: m.get_submodule("a.b"),
        lambda lib, m: m.get_parameter("buf"),
        lambda lib, m: m.get_parameter("nothing"),
        lambda lib, m: m.get_buffer("weight"),
        lambda lib, m: m.train(1),
        lambda lib, m: m.to(lib.int64),
    ]
    for fn in cases:
        assert run(ferrograd, fn) == run(torch, fn)

    # module slot reassignment
    def sub(lib, _m):
        s = lib.nn.Sequential(lib.nn.ReLU())
        s._modules["0"]
        setattr(s, "0", lib.ones(1))

    assert run(ferrograd, sub) == run(torch, sub)


def test_setattr_before_init_raises():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ferrograd.ones(1))
            super().__init__()

    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__\\(\\) call"):
        Bad()


def test_non_leaf_parameter_rejected():
    m = nn.Module()
    p = nn.Parameter(ferrograd.ones(1))
    m.p = p
    with pytest.raises(TypeError, match="cannot assign 'torch.FloatTensor' as parameter 'p'"):
        m.p = p * 2


def test_module_init_arguments_rejected():
    class M(nn.Module):
        def __init__(self, **kw):
            super().__init__(**kw)

    with pytest.raises(TypeError, match="M.__init__\\(\\) got an unexpected keyword argument 'a'"):
        M(a=1)


def test_get_submodule_parameter_buffer():
    net = make_net(ferrograd)
    assert net.get_submodule("") is net
    assert net.get_submodule("blocks.1.fc") is net.blocks[1].fc
    assert net.get_parameter("blocks.0.fc.weight") is net.blocks[0].fc.weight
    assert net.get_parameter("scale") is net.scale
    assert net.get_buffer("blocks.0.count") is net.blocks[0].count
    new = nn.Tanh()
    net.set_submodule("blocks.0.act", new)
    assert net.blocks[0].act is new


def test_dir_lists_registered_names():
    net = make_net(ferrograd)
    d = dir(net)
    for name in ["scale", "inp", "blocks", "running", "forward", "training"]:
        assert name in d
    assert d == sorted(d)
    assert "0" not in dir(nn.Sequential(nn.ReLU()))


def test_forward_missing_raises():
    class Foo(nn.Module):
        pass

    with pytest.raises(NotImplementedError) as e:
        Foo()(ferrograd.ones(1))
    assert str(e.value) == 'Module [Foo] is missing the required "forward" function'
    with pytest.raises(NotImplementedError, match=r"Module \[ModuleList\] is missing"):
        nn.ModuleList()(1)


# ---------------------------------------------------------------- modes, grads, apply


def test_train_eval_propagate():
    net = make_net(ferrograd)
    assert net.training and all(m.training for m in net.modules())
    assert net.eval() is net
    assert not net.training and not any(m.training for m in net.modules())
    net.blocks.train()
    assert not net.training and net.blocks[0].fc.training and not net.inp.training
    assert net.train() is net and all(m.training for m in net.modules())


def test_zero_grad_and_requires_grad_():
    m = nn.Linear(3, 2)
    m(ferrograd.ones(4, 3)).sum().backward()
    assert m.weight.grad is not None
    m.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(m.weight.grad.numpy(), np.zeros((2, 3), np.float32))
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None
    assert m.requires_grad_(False) is m
    assert not m.weight.requires_grad and not m.bias.requires_grad
    m.requires_grad_()
    assert m.weight.requires_grad


def test_apply_visits_children_first():
    seen = []
    net = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU(), nn.Tanh()))
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "ReLU", "Tanh", "Sequential", "Sequential"]

    def init(m):
        if type(m) is nn.Linear:
            nn.init.constant_(m.weight, 0.5)

    net.apply(init)
    assert net[0].weight.item() == 0.5


def test_to_double_float_cpu():
    net = make_net(ferrograd)
    w = net.inp.weight
    assert net.to("cpu") is net and net.inp.weight is w
    assert net.float() is net and net.inp.weight is w  # no conversion keeps the object
    net.inp(ferrograd.ones(1, 4)).sum().backward()
    assert net.double() is net
    assert net.inp.weight.dtype == ferrograd.float64 and isinstance(net.inp.weight, nn.Parameter)
    assert net.inp.weight.requires_grad and net.inp.weight.is_leaf
    assert net.inp.weight.grad.dtype == ferrograd.float64
    assert net.shared.weight is net.inp.weight
    assert net.running.dtype == ferrograd.float64
    np.testing.assert_allclose(net.inp.weight.detach().numpy(), w.detach().numpy().astype(np.float64))
    out = net(ferrograd.ones(2, 4, dtype=ferrograd.float64))
    assert out[0].dtype == ferrograd.float64
    assert net.to(ferrograd.float32) is net and net.inp.weight.dtype == ferrograd.float32
    assert net.to(ferrograd.ones(1, dtype=ferrograd.float64)).inp.weight.dtype == ferrograd.float64
    assert net.to(device="cpu", dtype=ferrograd.float32).inp.weight.dtype == ferrograd.float32
    assert net.cpu() is net
    # integer buffers are not cast
    m = nn.Module()
    m.register_buffer("idx", ferrograd.tensor([1, 2]))
    m.double()
    assert m.idx.dtype == ferrograd.int64
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes"):
        m.to(ferrograd.int64)


def test_frozen_parameter_stays_frozen_after_conversion():
    m = nn.Linear(2, 2)
    m.bias.requires_grad_(False)
    m.double()
    assert m.weight.requires_grad and not m.bias.requires_grad


# ---------------------------------------------------------------- hooks


def _hook_trace(lib):
    tnn = lib.nn
    log = []
    m = tnn.Linear(2, 2)
    h1 = m.register_forward_pre_hook(lambda mod, args: log.append(("pre1", len(args))))
    m.register_forward_pre_hook(lambda mod, args: log.append(("pre0",)), prepend=True)
    m.register_forward_pre_hook(
        lambda mod, args, kwargs: log.append(("prekw", sorted(kwargs))), with_kwargs=True
    )
    m.register_forward_hook(lambda mod, args, out: log.append(("post1", tuple(out.shape))))
    m.register_forward_hook(lambda mod, args, out: log.append(("post0",)), prepend=True)
    m.register_forward_hook(
        lambda mod, args, kwargs, out: log.append(("postkw", sorted(kwargs))), with_kwargs=True
    )
    m(lib.ones(3, 2))
    h1.remove()
    h1.remove()  # removing twice is harmless
    m(input=lib.ones(1, 2))
    return log


def test_hook_order_matches_torch():
    torch = _torch()
    assert _hook_trace(ferrograd) == _hook_trace(torch)


def test_hook_order_closed_form():
    log = _hook_trace(ferrograd)
    assert log[:6] == [("pre0",), ("pre1", 1), ("prekw", []), ("post0",), ("post1", (3, 2)), ("postkw", [])]
    assert log[6:] == [("pre0",), ("prekw", ["input"]), ("post0",), ("post1", (1, 2)), ("postkw", ["input"])]


def test_hook_return_values_replace_input_and_output():
    m = nn.Identity()
    h = m.register_forward_pre_hook(lambda mod, args: args[0] * 2)  # non-tuple gets wrapped
    x = ferrograd.ones(2)
    np.testing.assert_array_equal(m(x).numpy(), [2.0, 2.0])
    h.remove()
    with m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] + 1,), kwargs), with_kwargs=True):
        np.testing.assert_array_equal(m(x).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(m(x).numpy(), [1.0, 1.0])  # context manager removed it
    with m.register_forward_hook(lambda mod, args, out: out * 10):
        np.testing.assert_array_equal(m(x).numpy(), [10.0, 10.0])
    with m.register_forward_hook(lambda mod, args, kwargs, out: out - 1, with_kwargs=True):
        np.testing.assert_array_equal(m(x).numpy(), [0.0, 0.0])
    assert m(x) is x
    assert not m._forward_hooks and not m._forward_pre_hooks
    assert not m._forward_hooks_with_kwargs and not m._forward_pre_hooks_with_kwargs

    bad = m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    msg = "forward pre-hook must return None or a tuple of \\(new_args, new_kwargs\\), but got 5."
    with pytest.raises(RuntimeError, match=msg):
        m(x)
    bad.remove()


def test_always_call_hook_runs_on_exception():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    calls = []
    m = Boom()
    m.register_forward_hook(lambda mod, args, out: calls.append("plain"))
    m.register_forward_hook(lambda mod, args, out: calls.append(("always", out)), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(ferrograd.ones(1))
    assert calls == [("always", None)]


def test_global_forward_hooks():
    from ferrograd.nn.modules import module as module_mod

    log = []
    h1 = module_mod.register_module_forward_pre_hook(lambda mod, args: log.append(("gpre", type(mod).__name__)))
    h2 = module_mod.register_module_forward_hook(lambda mod, args, out: log.append(("gpost", type(mod).__name__)))
    try:
        m = nn.ReLU()
        m.register_forward_hook(lambda mod, args, out: log.append(("post", "ReLU")))
        m(ferrograd.ones(1))
    finally:
        h1.remove()
        h2.remove()
    assert log == [("gpre", "ReLU"), ("gpost", "ReLU"), ("post", "ReLU")]
    nn.ReLU()(ferrograd.ones(1))
    assert len(log) == 3


def test_state_dict_hooks():
    m = nn.Linear(1, 1)
    seen = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: seen.append(("pre", prefix)))
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd.pop(prefix + "bias"))
    # the public post hook must return None; pop returns the tensor
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        m.state_dict()
    m2 = nn.Linear(1, 1)
    m2.register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd.__delitem__(prefix + "bias"))
    assert list(nn.Sequential(m2).state_dict()) == ["0.weight"]
    assert seen == [("pre", "")]

    post = []
    m3 = nn.Linear(1, 1)
    m3.register_load_state_dict_post_hook(lambda mod, keys: post.append(list(keys.missing_keys)))

    def fill_bias(mod, sd, prefix, meta, strict, missing, unexpected, errors):
        sd.setdefault(prefix + "bias", ferrograd.zeros(1))

    m3.register_load_state_dict_pre_hook(fill_bias)
    m3.load_state_dict({"weight": ferrograd.ones(1, 1)})
    assert post == [[]]
    assert m3.bias.item() == 0.0


# ---------------------------------------------------------------- repr, copy, pickle


def test_repr_matches_torch():
    torch = _torch()

    def build(lib):
        tnn = lib.nn

        class Multi(tnn.Module):
            def extra_repr(self):
                return "first=1\nsecond=2"

        net = make_net(lib)
        net.multi = Multi()
        net.multi.child = tnn.Sequential(tnn.Flatten(), tnn.Linear(1, 1, bias=False))
        net.add_module("nothing", None)  # a None module slot is printed as "(nothing): None"
        return net

    assert repr(build(ferrograd)) == repr(build(torch))
    assert repr(nn.Module()) == repr(torch.nn.Module()) == "Module()"


def test_repr_closed_form():
    seq = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU()), nn.ModuleList([nn.Tanh()] * 2))
    assert repr(seq) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): Sequential(\n"
        "    (0): ReLU()\n"
        "  )\n"
        "  (2): ModuleList(\n"
        "    (0-1): 2 x Tanh()\n"
        "  )\n"
        ")"
    )


def test_deepcopy_independent():
    net = make_net(ferrograd)
    net.register_forward_hook(lambda m, a, o: None)
    twin = copy.deepcopy(net)
    assert twin is not net and type(twin) is type(net)
    assert twin.shared is twin.inp  # sharing preserved within the copy
    for (n1, p1), (n2, p2) in zip(net.named_parameters(), twin.named_parameters()):
        assert n1 == n2 and p1 is not p2 and type(p2) is nn.Parameter
        assert p1._storage_ptr() != p2._storage_ptr()
        np.testing.assert_array_equal(p1.detach().numpy(), p2.detach().numpy())
        assert p2.requires_grad == p1.requires_grad
    with ferrograd.no_grad():
        twin.inp.weight.fill_(0.0)
        twin.running.fill_(5.0)
    assert not np.all(net.inp.weight.detach().numpy() == 0.0)
    assert np.all(net.running.numpy() == 0.0)
    assert len(twin._forward_hooks) == 1


def test_pickle_round_trip():
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    net.eval()
    back = pickle.loads(pickle.dumps(net))
    assert repr(back) == repr(net) and not back.training
    assert type(back[0].weight) is nn.Parameter and back[0].weight.requires_grad
    np.testing.assert_array_equal(back[0].weight.detach().numpy(), net[0].weight.detach().numpy())


# ---------------------------------------------------------------- parameters


def test_parameter_basics():
    data = ferrograd.randn(2, 3)
    p = nn.Parameter(data)
    assert type(p) is nn.Parameter and isinstance(p, ferrograd.Tensor)
    assert p.requires_grad and p.is_leaf and not data.requires_grad
    assert p._storage_ptr() == data._storage_ptr()  # shares storage
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert type(p * 2) is ferrograd.Tensor and type(p.detach()) is ferrograd.Tensor
    empty = nn.Parameter()
    assert tuple(empty.shape) == (0,) and empty.requires_grad
    # from a tensor that requires grad: detached, still a leaf
    q = nn.Parameter(ferrograd.ones(2, requires_grad=True) * 3)
    assert q.is_leaf and q.grad_fn is None
    with ferrograd.no_grad():
        assert nn.Parameter(ferrograd.ones(1)).requires_grad


def test_parameter_repr_matches_torch():
    torch = _torch()
    a = np.array([[1.5, -2.0], [0.25, 3.0]], dtype=np.float32)
    assert repr(nn.Parameter(ferrograd.tensor(a))) == repr(torch.nn.Parameter(torch.tensor(a)))
    assert str(nn.Parameter(ferrograd.tensor(a))) == str(torch.nn.Parameter(torch.tensor(a)))
    assert repr(nn.Parameter(ferrograd.tensor(a), requires_grad=False)) == repr(
        torch.nn.Parameter(torch.tensor(a), requires_grad=False)
    )
    assert repr(nn.Parameter()) == repr(torch.nn.Parameter())


def test_parameter_copy_and_pickle_keep_class():
    p = nn.Parameter(ferrograd.tensor([1.0, 2.0]), requires_grad=False)
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(q) is nn.Parameter and not q.requires_grad
        np.testing.assert_array_equal(q.numpy(), [1.0, 2.0])
        assert q._storage_ptr() != p._storage_ptr()
    memo = {}
    assert copy.deepcopy(p, memo) is copy.deepcopy(p, memo)


def test_buffer_assignment():
    m = nn.Module()
    m.a = nn.Buffer(ferrograd.ones(2))
    m.b = nn.Buffer(ferrograd.zeros(1), persistent=False)
    assert list(m.state_dict()) == ["a"]
    assert [n for n, _ in m.named_buffers()] == ["a", "b"]


def test_call_fast_path_is_forward():
    calls = []

    class M(nn.Module):
        def forward(self, *args, **kwargs):
            calls.append((args, kwargs))
            return 7

    m = M()
    assert m(1, 2, k=3) == 7
    assert calls == [((1, 2), {"k": 3})]
    assert nn.Module.__call__ is nn.Module._call_impl


def test_conversion_keeps_the_parameter_objects():
    # as PyTorch, Module.double() assigns param.data: optimizers holding the parameters see
    # the converted values (tests/python/test_tensor_data.py covers the assignment itself)
    m = nn.Linear(2, 2)
    w, b = m.weight, m.bias
    opt = ferrograd.optim.SGD(m.parameters(), lr=0.5)
    m(ferrograd.ones(1, 2)).sum().backward()
    g = w.grad
    m.double()
    assert m.weight is w and m.bias is b and w.dtype == ferrograd.float64
    assert w.grad is g and g.dtype == ferrograd.float64
    before = w.detach().clone()
    opt.step()
    assert (w.detach() == before - 0.5 * g).all()
