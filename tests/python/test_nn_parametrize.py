"""ferrograd.nn.utils.parametrize, parametrizations.weight_norm / spectral_norm, and the legacy
hook-based nn.utils.weight_norm / spectral_norm, against PyTorch on identical weights (the
random ``u`` / ``v`` of spectral norm are copied from PyTorch's buffers) and by hand."""

import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import ferrograd
from ferrograd import nn
from ferrograd.nn.utils import parametrize


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


def _np(t):
    return t.detach().numpy()


def _copy_state(tm, fm):
    """Copies every parameter and buffer of the torch module ``tm`` into ``fm`` (same names)."""
    with ferrograd.no_grad():
        fnamed = dict(fm.named_parameters())
        fnamed.update(dict(fm.named_buffers()))
        tnamed = dict(tm.named_parameters())
        tnamed.update(dict(tm.named_buffers()))
        assert list(fnamed) == list(tnamed)
        for name, t in tnamed.items():
            fnamed[name].copy_(ferrograd.tensor(t.detach().numpy()))


class Symmetric(nn.Module):
    calls = 0

    def forward(self, X):
        Symmetric.calls += 1
        return X.triu() + X.triu(1).transpose(-1, -2)


class Scale(nn.Module):
    def forward(self, X):
        return 2 * X

    def right_inverse(self, X):
        return X / 2


# ------------------------------------------------------------------ parametrize, by hand


def test_register_parametrization():
    m = nn.Linear(3, 3)
    original = m.weight
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert m.parametrizations.weight.original is original
    w = m.weight
    assert w.equal(w.t()) and not isinstance(w, nn.Parameter)
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    # the output is differentiable with respect to the original
    m(ferrograd.ones(2, 3)).sum().backward()
    assert original.grad is not None


def test_right_inverse_chaining_and_removal():
    m = nn.Linear(2, 2)
    original = m.weight
    parametrize.register_parametrization(m, "weight", Scale())
    parametrize.register_parametrization(m, "weight", Scale())
    assert len(m.parametrizations.weight) == 2
    m.weight = ferrograd.tensor([[4.0, 8.0], [12.0, 16.0]])  # through both right_inverse
    assert original.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert m.weight.tolist() == [[4.0, 8.0], [12.0, 16.0]]
    parametrize.remove_parametrizations(m, "weight")  # leave_parametrized=True
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    assert m.weight is original and isinstance(m.weight, nn.Parameter)
    assert m.weight.tolist() == [[4.0, 8.0], [12.0, 16.0]]
    parametrize.register_parametrization(m, "weight", Scale())
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert m.weight.tolist() == [[2.0, 4.0], [6.0, 8.0]]  # set by Scale's right_inverse at registration


def test_cached_computes_once():
    m = nn.Linear(3, 3)
    parametrize.register_parametrization(m, "weight", Symmetric())
    Symmetric.calls = 0
    with parametrize.cached():
        a, b = m.weight, m.weight
        assert a is b
    assert Symmetric.calls == 1
    assert m.weight is not a


def test_parametrized_module_copy_and_pickle():
    m = nn.Linear(3, 3)
    parametrize.register_parametrization(m, "weight", Symmetric())
    m2 = copy.deepcopy(m)
    assert type(m2).__name__ == "ParametrizedLinear"
    assert m2.weight.equal(m.weight)
    assert m2.parametrizations.weight.original is not m.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only supported through"):
        pickle.dumps(m)


def test_buffers_can_be_parametrized():
    m = nn.Module()
    m.register_buffer("b", ferrograd.tensor([[1.0, 2.0], [3.0, 4.0]]))
    parametrize.register_parametrization(m, "b", Symmetric())
    assert m.b.tolist() == [[1.0, 2.0], [2.0, 4.0]]
    assert list(m.state_dict()) == ["parametrizations.b.original"]


def test_right_inverse_cannot_change_the_shape():
    class Flatten(nn.Module):
        def forward(self, X):
            return X.reshape(2, 2)

        def right_inverse(self, X):
            return X.reshape(4)

    with pytest.raises(NotImplementedError, match="Tensor.set_"):
        parametrize.register_parametrization(nn.Linear(2, 2), "weight", Flatten(), unsafe=True)


# ------------------------------------------------------------------ parametrize, against PyTorch


def _symmetric_cls(lib):
    class Sym(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    return Sym


def test_parametrized_training_matches_torch(torch):
    results = []
    for lib in (torch, ferrograd):
        m = lib.nn.Linear(3, 3).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.arange(9.0).reshape(3, 3) / 10))
            m.bias.copy_(lib.tensor([0.1, -0.2, 0.3]))
        lib.nn.utils.parametrize.register_parametrization(m, "weight", _symmetric_cls(lib)())
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        x = lib.tensor(np.linspace(-1, 1, 12).reshape(4, 3))
        for _ in range(5):
            opt.zero_grad()
            (m(x) ** 2).sum().backward()
            opt.step()
        results.append((repr(m), list(m.state_dict()), _np(m.weight), _np(m.parametrizations.weight.original)))
    theirs, ours = results
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12)
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-12)


def test_parametrize_errors_match_torch(torch):
    def cases(lib):
        P = lib.nn.utils.parametrize

        class Transpose(lib.nn.Module):
            def forward(self, X):
                return X.t()

        class Double(lib.nn.Module):
            def forward(self, X):
                return X.double()

        class NoInverse(lib.nn.Module):
            def forward(self, X):
                return X

        def reassign():
            m = lib.nn.Linear(2, 2)
            P.register_parametrization(m, "weight", NoInverse())
            m.weight = lib.ones(2, 2)

        def twice_shape():
            m = lib.nn.Linear(2, 3)
            P.register_parametrization(m, "weight", NoInverse())
            P.register_parametrization(m, "weight", Transpose())

        return [
            lambda: P.register_parametrization(lib.nn.Linear(2, 3), "weight", Transpose()),
            lambda: P.register_parametrization(lib.nn.Linear(2, 3), "weight", Double()),
            lambda: P.register_parametrization(lib.nn.Linear(2, 3), "nothing", Transpose()),
            lambda: P.remove_parametrizations(lib.nn.Linear(2, 3), "weight"),
            reassign,
            twice_shape,
        ]

    for k, (t_case, f_case) in enumerate(zip(cases(torch), cases(ferrograd))):
        expected = _error(t_case)
        assert expected is not None, k
        got = _error(f_case)
        # the module's repr in "Module '...' does not have ..." is the same too
        assert got == expected, k


# ------------------------------------------------------------------ weight norm


@pytest.mark.parametrize("legacy", [True, False])
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(torch, legacy, dim):
    results = []
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 5))
    for lib in (torch, ferrograd):
        m = lib.nn.Conv1d(3, 4, 2).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.linspace(-1, 1, 24).reshape(4, 3, 2)))
            m.bias.copy_(lib.tensor([0.1, -0.2, 0.3, 0.0]))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            if legacy:
                m = lib.nn.utils.weight_norm(m, dim=dim)
            else:
                m = lib.nn.utils.parametrizations.weight_norm(m, dim=dim)
        opt = lib.optim.SGD(m.parameters(), lr=0.05)
        for _ in range(3):
            opt.zero_grad()
            out = m(lib.tensor(x))
            (out ** 2).sum().backward()
            opt.step()
        names = [n for n, _ in m.named_parameters()]
        params = [_np(p) for p in m.parameters()]
        keys = list(m.state_dict())
        if legacy:
            lib.nn.utils.remove_weight_norm(m)
        else:
            lib.nn.utils.parametrize.remove_parametrizations(m, "weight")
        results.append((names, params, keys, [(x.category.__name__, str(x.message)) for x in w], _np(out),
                        type(m).__name__, [n for n, _ in m.named_parameters()], _np(m.weight)))
    theirs, ours = results
    assert ours[0] == theirs[0] and ours[2] == theirs[2] and ours[3] == theirs[3]
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours[4], theirs[4], rtol=1e-10, atol=1e-12)
    assert ours[5] == theirs[5] and ours[6] == theirs[6]
    np.testing.assert_allclose(ours[7], theirs[7], rtol=1e-10, atol=1e-12)


def test_weight_norm_by_hand():
    m = nn.Linear(2, 2)
    with ferrograd.no_grad():
        m.weight.copy_(ferrograd.tensor([[3.0, 4.0], [0.0, 2.0]]))
    with pytest.warns(FutureWarning, match="torch.nn.utils.weight_norm` is deprecated"):
        nn.utils.weight_norm(m)
    assert m.weight_g.tolist() == [[5.0], [2.0]]
    assert m.weight_v.tolist() == [[3.0, 4.0], [0.0, 2.0]]
    with ferrograd.no_grad():
        m.weight_g.copy_(ferrograd.tensor([[10.0], [1.0]]))
    m(ferrograd.ones(1, 2))  # the pre-hook recomputes the weight
    assert m.weight.tolist() == [[6.0, 8.0], [0.0, 1.0]]
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nn.utils.weight_norm(m)
    nn.utils.remove_weight_norm(m)
    assert isinstance(m.weight, nn.Parameter) and m.weight.tolist() == [[6.0, 8.0], [0.0, 1.0]]
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        nn.utils.remove_weight_norm(m)


def test_legacy_weight_norm_state_dict_loads_into_parametrization():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = nn.utils.weight_norm(nn.Linear(3, 2))
    new = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
    new.load_state_dict(old.state_dict())
    x = ferrograd.randn(4, 3)
    np.testing.assert_allclose(_np(new(x)), _np(old(x)), rtol=1e-6)


def test_norm_except_dim_matches_torch(torch):
    a = np.random.default_rng(0).normal(size=(3, 4, 5))
    for dim in (-1, 0, 1, 2):
        ours = ferrograd.norm_except_dim(ferrograd.tensor(a), 2, dim)
        theirs = torch.norm_except_dim(torch.tensor(a), 2, dim)
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


# ------------------------------------------------------------------ spectral norm


def _spectral_modules(lib):
    return [
        (lambda: lib.nn.Linear(5, 4), (2, 5), {}),
        (lambda: lib.nn.Conv2d(3, 4, 2), (2, 3, 5, 5), dict(n_power_iterations=3)),
        (lambda: lib.nn.ConvTranspose2d(3, 4, 2), (2, 3, 4, 4), {}),  # dim=1 by default
        (lambda: lib.nn.Linear(5, 4), (2, 5), dict(dim=1, eps=1e-4)),
    ]


@pytest.mark.parametrize("legacy", [True, False])
@pytest.mark.parametrize("case", range(4))
def test_spectral_norm_matches_torch(torch, legacy, case):
    rng = np.random.default_rng(case)
    modules = []
    for lib in (torch, ferrograd):
        make, shape, kwargs = _spectral_modules(lib)[case]
        m = make().double()
        with lib.no_grad():
            for p in m.parameters():
                p.copy_(lib.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)) * 0.7))
        sn = lib.nn.utils.spectral_norm if legacy else lib.nn.utils.parametrizations.spectral_norm
        modules.append((lib, sn(m, **kwargs)))
    (_, tm), (_, fm) = modules
    assert [n for n, _ in fm.named_buffers()] == [n for n, _ in tm.named_buffers()]
    assert list(fm.state_dict()) == list(tm.state_dict())
    _copy_state(tm, fm)  # PyTorch's random u (and v)
    x = rng.normal(size=shape)
    for step in range(3):
        outs = []
        for lib, m in modules:
            out = m(lib.tensor(x))
            (out ** 2).sum().backward()
            outs.append((_np(out), [_np(p.grad) for p in m.parameters()], [_np(b) for b in m.buffers()]))
        theirs, ours = outs
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12, err_msg=f"step {step}")
        for a, b in zip(ours[1] + ours[2], theirs[1] + theirs[2]):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=f"step {step}")
    # eval mode: u and v are not updated
    for _, m in modules:
        m.eval()
    before = [_np(b).copy() for b in fm.buffers()]
    ours, theirs = _np(fm(ferrograd.tensor(x))), _np(tm(torch.tensor(x)))
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    for a, b in zip(before, fm.buffers()):
        np.testing.assert_array_equal(a, _np(b))
    if legacy:
        torch.nn.utils.remove_spectral_norm(tm)
        nn.utils.remove_spectral_norm(fm)
        assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
        assert list(fm.state_dict()) == list(tm.state_dict())
        np.testing.assert_allclose(_np(fm.weight), _np(tm.weight), rtol=1e-10, atol=1e-12)


def test_spectral_norm_by_hand():
    m = nn.Linear(2, 2, bias=False)
    with ferrograd.no_grad():
        m.weight.copy_(ferrograd.tensor([[3.0, 0.0], [0.0, 1.0]]))
    nn.utils.spectral_norm(m, n_power_iterations=20)
    m(ferrograd.ones(1, 2))
    # the largest singular value is 3
    np.testing.assert_allclose(_np(m.weight), [[1.0, 0.0], [0.0, 1.0 / 3.0]], rtol=1e-6)
    assert sorted(n for n, _ in m.named_buffers()) == ["weight_u", "weight_v"]
    sd = m.state_dict()
    assert list(sd) == ["weight_orig", "weight_u", "weight_v"]
    assert sd._metadata[""]["spectral_norm"] == {"weight.version": 1}
    m2 = nn.utils.spectral_norm(nn.Linear(2, 2, bias=False))
    m2.load_state_dict(OrderedDict(sd))  # without the metadata: taken as the current version
    nn.utils.remove_spectral_norm(m)
    assert isinstance(m.weight, nn.Parameter)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        nn.utils.remove_spectral_norm(m)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(m2)


def test_parametrized_spectral_norm_by_hand():
    m = nn.Linear(2, 2, bias=False)
    with ferrograd.no_grad():
        m.weight.copy_(ferrograd.tensor([[3.0, 0.0], [0.0, 1.0]]))
    nn.utils.parametrizations.spectral_norm(m)  # 15 power iterations at registration
    np.testing.assert_allclose(_np(m.weight), [[1.0, 0.0], [0.0, 1.0 / 3.0]], rtol=1e-6)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nothing'"):
        nn.utils.parametrizations.spectral_norm(m, "nothing")
    with pytest.raises(NotImplementedError, match="orthogonal"):
        nn.utils.parametrizations.orthogonal(nn.Linear(2, 2))


# ------------------------------------------------------------------ trunc_normal_


def test_trunc_normal_arguments():
    ferrograd.manual_seed(0)
    t = nn.init.trunc_normal_(ferrograd.empty(2000), mean=1.0, std=2.0, a=0.5, b=3.0)
    values = t.numpy()
    assert values.min() >= 0.5 and values.max() <= 3.0
    assert nn.init.trunc_normal_(ferrograd.empty(3, 3)).abs().max().item() <= 2.0
