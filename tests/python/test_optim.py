"""ferrograd.optim: Optimizer base, SGD, Adam, AdamW, RMSprop, Adagrad.

Parity tests run the same problem in PyTorch (the spec) and in ferrograd from identical
initial values and compare every step; they skip without torch. The closed-form tests
below them always run. Error texts are PyTorch 2.13's.
"""

import copy
import math
import warnings

import numpy as np
import pytest

import ferrograd
import ferrograd.optim as optim

RTOL, ATOL = 1e-5, 1e-6
STEPS = 60


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


# --- the problem: a small tanh network, identical in both libraries ----------------

_rng = np.random.default_rng(0)
INIT = {
    "W": _rng.normal(size=(4, 3)).astype(np.float32),
    "b": _rng.normal(size=(4,)).astype(np.float32),
    "v": _rng.normal(size=(4,)).astype(np.float32),
    "frozen": _rng.normal(size=(2,)).astype(np.float32),
}
X = _rng.normal(size=(6, 3)).astype(np.float32)
Y = _rng.normal(size=(6,)).astype(np.float32)


def make_params(lib):
    return {k: lib.tensor(v.copy(), requires_grad=True) for k, v in INIT.items()}


def loss_fn(lib, P, sign=1.0):
    x, y = lib.tensor(X), lib.tensor(Y)
    h = (x @ P["W"].t() + P["b"]).tanh()
    out = h @ P["v"]
    loss = ((out - y) ** 2).mean() + 0.05 * (P["W"] ** 2).sum()
    return loss * sign


def param_spec(P, groups):
    """``groups`` None: one flat list (without ``frozen``'s grad); else a list of (names, options)."""
    if groups is None:
        return [P["W"], P["b"], P["v"], P["frozen"]]
    return [dict(params=[P[n] for n in names], **opts) for names, opts in groups]


def numpy_of(t):
    return np.array(t.detach().tolist(), dtype=np.float64)


def run(lib, cls_name, kwargs, groups=None, steps=STEPS, sign=1.0, P=None, opt=None):
    """Steps an optimizer ``steps`` times; returns (params, optimizer, trajectory)."""
    if P is None:
        P = make_params(lib)
    if opt is None:
        opt = getattr(lib.optim, cls_name)(param_spec(P, groups), **kwargs)
    traj = []
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(lib, P, sign).backward()
        opt.step()
        traj.append({k: numpy_of(p) for k, p in P.items()})
    return P, opt, traj


def assert_traj_close(ours, theirs, rtol=RTOL, atol=ATOL):
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        for k in b:
            np.testing.assert_allclose(a[k], b[k], rtol=rtol, atol=atol, err_msg=f"step {i + 1}, param {k}")


CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.8, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, maximize=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.05, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6)),
    ("RMSprop", dict(lr=0.005, centered=True)),
    ("RMSprop", dict(lr=0.005, momentum=0.9)),
    ("RMSprop", dict(lr=0.005, momentum=0.5, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, maximize=True, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.1, eps=1e-6)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1, maximize=True)),
    ("Adadelta", dict(lr=0.5, foreach=True)),
    # foreach is accepted (torch runs its multi-tensor path on the CPU too): same numbers
    ("SGD", dict(lr=0.05, momentum=0.9, foreach=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, foreach=False)),
    ("RMSprop", dict(lr=0.01, centered=True, foreach=True)),
]


def _id(c):
    return c[0] + "-" + ",".join(f"{k}={v}" for k, v in c[1].items())


@pytest.mark.parametrize("cls_name,kwargs", CONFIGS, ids=[_id(c) for c in CONFIGS])
def test_trajectory_matches_torch(torch, cls_name, kwargs):
    # maximize ascends -loss, which keeps the trajectory bounded
    sign = -1.0 if kwargs.get("maximize") else 1.0
    _, _, theirs = run(torch, cls_name, kwargs, sign=sign)
    P, opt, ours = run(ferrograd, cls_name, kwargs, sign=sign)
    assert_traj_close(ours, theirs)
    # ``frozen`` never gets a gradient: never moved
    np.testing.assert_array_equal(ours[-1]["frozen"], INIT["frozen"])
    assert P["frozen"].grad is None


GROUPS = [
    (["W"], dict(lr=0.02)),
    (["b", "frozen"], dict()),
    (["v"], dict(weight_decay=0.05)),
]

GROUP_CONFIGS = [
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.005, centered=True, momentum=0.5)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
    ("Adadelta", dict(lr=0.5, rho=0.8)),
]


@pytest.mark.parametrize("cls_name,kwargs", GROUP_CONFIGS, ids=[c[0] for c in GROUP_CONFIGS])
def test_param_groups_trajectory_and_state_dict_match_torch(torch, cls_name, kwargs):
    _, topt, theirs = run(torch, cls_name, kwargs, groups=GROUPS)
    _, opt, ours = run(ferrograd, cls_name, kwargs, groups=GROUPS)
    assert_traj_close(ours, theirs)
    assert_state_dict_equal(opt.state_dict(), topt.state_dict(), torch)
    assert repr(opt) == repr(topt)


def assert_state_dict_equal(ours, theirs, torch):
    assert list(ours) == ["state", "param_groups"] == list(theirs)
    assert len(ours["param_groups"]) == len(theirs["param_groups"])
    for g, tg in zip(ours["param_groups"], theirs["param_groups"]):
        assert list(g) == list(tg)
        for k in tg:
            assert g[k] == tg[k], k
            assert type(g[k]) is type(tg[k]), k
    assert list(ours["state"]) == list(theirs["state"])
    for pid, tstate in theirs["state"].items():
        state = ours["state"][pid]
        assert list(state) == list(tstate), pid
        for k, tv in tstate.items():
            v = state[k]
            if tv is None:
                assert v is None
                continue
            assert isinstance(v, ferrograd.Tensor), k
            assert str(v.dtype) == str(tv.dtype), k
            assert tuple(v.shape) == tuple(tv.shape), k
            # values were checked through the trajectories; accumulated state only needs to agree loosely
            np.testing.assert_allclose(numpy_of(v), tv.detach().double().numpy(), rtol=1e-4, atol=1e-4, err_msg=k)


@pytest.mark.parametrize("cls_name,kwargs", CONFIGS, ids=[_id(c) for c in CONFIGS])
def test_state_dict_structure_matches_torch(torch, cls_name, kwargs):
    sign = -1.0 if kwargs.get("maximize") else 1.0
    _, topt, _ = run(torch, cls_name, kwargs, steps=3, sign=sign)
    _, opt, _ = run(ferrograd, cls_name, kwargs, steps=3, sign=sign)
    assert_state_dict_equal(opt.state_dict(), topt.state_dict(), torch)


@pytest.mark.parametrize("cls_name,kwargs", GROUP_CONFIGS + [("SGD", dict(lr=0.1))], ids=lambda c: str(c))
def test_state_dict_round_trip_continues_torch_trajectory(torch, cls_name, kwargs):
    _, _, theirs = run(torch, cls_name, kwargs, groups=GROUPS, steps=40)

    P, opt, first = run(ferrograd, cls_name, kwargs, groups=GROUPS, steps=25)
    saved = copy.deepcopy(opt.state_dict())  # as if through save/load: nothing shared
    P2 = {k: ferrograd.tensor(numpy_of(p).astype(np.float32), requires_grad=True) for k, p in P.items()}
    fresh = getattr(optim, cls_name)(param_spec(P2, GROUPS), **kwargs)
    fresh.load_state_dict(saved)
    assert_state_dict_equal(fresh.state_dict(), saved_as_torch(saved, torch), torch)
    _, _, rest = run(ferrograd, cls_name, kwargs, groups=GROUPS, steps=15, P=P2, opt=fresh)
    assert_traj_close(first + rest, theirs)


def saved_as_torch(sd, torch):
    """The same state dict with ferrograd tensors converted to torch (for assert_state_dict_equal)."""

    def conv(v):
        if isinstance(v, ferrograd.Tensor):
            dtype = {"torch.float32": torch.float32, "torch.float64": torch.float64}[str(v.dtype)]
            return torch.tensor(numpy_of(v), dtype=dtype)
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return v

    return conv(sd)


def test_load_state_dict_casts_like_torch(torch):
    for lib in (torch, ferrograd):
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        opt = lib.optim.Adam([p], lr=0.1)
        sd = {
            "state": {0: {"step": lib.tensor(3.0, dtype=lib.float64),
                          "exp_avg": lib.tensor([0.1, 0.2], dtype=lib.float64),
                          "exp_avg_sq": lib.tensor([0.01, 0.04], dtype=lib.float64)}},
            "param_groups": [dict(opt.state_dict()["param_groups"][0], lr=0.5)],
        }
        opt.load_state_dict(sd)
        state = opt.state[p]
        # moments take the parameter's dtype, step keeps its own
        assert str(state["exp_avg"].dtype) == "torch.float32"
        assert str(state["exp_avg_sq"].dtype) == "torch.float32"
        assert str(state["step"].dtype) == "torch.float64"
        assert opt.param_groups[0]["lr"] == 0.5
        assert opt.param_groups[0]["params"][0] is p


def test_param_groups_keys_and_repr_match_torch(torch):
    for cls_name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"):
        tp = torch.zeros(2, requires_grad=True)
        fp = ferrograd.zeros(2, requires_grad=True)
        topt = getattr(torch.optim, cls_name)([tp], lr=0.01)
        fopt = getattr(optim, cls_name)([fp], lr=0.01)
        tg = {k: v for k, v in topt.param_groups[0].items() if k != "params"}
        fg = {k: v for k, v in fopt.param_groups[0].items() if k != "params"}
        assert list(fg.items()) == list(tg.items()), cls_name
        assert list(fopt.param_groups[0]) == list(topt.param_groups[0]), cls_name
        assert fopt.defaults == topt.defaults, cls_name
        assert repr(fopt) == repr(topt), cls_name
        topt.add_param_group({"params": [torch.ones(1, requires_grad=True)], "lr": 0.5})
        fopt.add_param_group({"params": [ferrograd.ones(1, requires_grad=True)], "lr": 0.5})
        assert repr(fopt) == repr(topt), cls_name


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


ERROR_CASES = [
    lambda L, p: L.optim.SGD([p], lr=-0.1),
    lambda L, p: L.optim.SGD([p], lr=0.1, momentum=-0.5),
    lambda L, p: L.optim.SGD([p], lr=0.1, weight_decay=-1),
    lambda L, p: L.optim.SGD([p], lr=0.1, nesterov=True),
    lambda L, p: L.optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
    lambda L, p: L.optim.SGD([p], lr=L.tensor([0.1, 0.2])),
    lambda L, p: L.optim.Adam([p], lr=-1e-3),
    lambda L, p: L.optim.Adam([p], eps=-1.0),
    lambda L, p: L.optim.Adam([p], betas=(1.0, 0.999)),
    lambda L, p: L.optim.Adam([p], betas=(0.9, -0.1)),
    lambda L, p: L.optim.Adam([p], betas=(0, 0.999)),
    lambda L, p: L.optim.Adam([p], weight_decay=-0.1),
    lambda L, p: L.optim.AdamW([p], betas=(0.9, 1.5)),
    lambda L, p: L.optim.RMSprop([p], alpha=-0.5),
    lambda L, p: L.optim.RMSprop([p], momentum=-0.5),
    lambda L, p: L.optim.RMSprop([p], eps=-0.5),
    lambda L, p: L.optim.Adagrad([p], lr_decay=-0.5),
    lambda L, p: L.optim.Adagrad([p], initial_accumulator_value=-0.5),
    lambda L, p: L.optim.Adagrad([p], eps=-1e-10),
    lambda L, p: L.optim.Adadelta([p], rho=1.5),
    lambda L, p: L.optim.Adadelta([p], lr=-1.0),
    lambda L, p: L.optim.Adadelta([p], eps=-1.0),
    lambda L, p: L.optim.Adadelta([p], weight_decay=-1.0),
    lambda L, p: L.optim.LBFGS([p], lr=-1.0),
    lambda L, p: L.optim.LBFGS([{"params": [p]}, {"params": [L.ones(1, requires_grad=True)]}]),
    lambda L, p: L.optim.SGD([], lr=0.1),
    lambda L, p: L.optim.SGD(p, lr=0.1),
    lambda L, p: L.optim.SGD([p, 3], lr=0.1),
    lambda L, p: L.optim.SGD([p, "x"], lr=0.1),
    lambda L, p: L.optim.SGD([p * 2], lr=0.1),
    lambda L, p: L.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1),
    lambda L, p: L.optim.SGD([{"params": {p}}], lr=0.1),
    lambda L, p: L.optim.SGD([p], lr=0.1).add_param_group([p]),
    lambda L, p: L.optim.SGD([("a", p), L.ones(1, requires_grad=True)], lr=0.1),
    lambda L, p: L.optim.SGD([p], lr=0.1).load_state_dict({"state": {}, "param_groups": []}),
    lambda L, p: L.optim.SGD([p], lr=0.1).load_state_dict(
        {"state": {}, "param_groups": [{"params": [0, 1], "lr": 0.1}]}
    ),
]


@pytest.mark.parametrize("case", range(len(ERROR_CASES)))
def test_errors_match_torch(torch, case):
    make = ERROR_CASES[case]
    expected = _error(lambda: make(torch, torch.ones(2, requires_grad=True)))
    assert expected is not None
    assert _error(lambda: make(ferrograd, ferrograd.ones(2, requires_grad=True))) == expected


def test_duplicate_parameter_warning_matches_torch(torch):
    msgs = []
    for L in (torch, ferrograd):
        p = L.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            L.optim.SGD([p, p], lr=0.1)
        msgs.append([str(x.message) for x in w])
    assert msgs[0] == msgs[1] and len(msgs[0]) == 1


@pytest.mark.parametrize("cls_name,kwargs", CONFIGS, ids=[_id(c) for c in CONFIGS])
def test_version_counters_like_torch(torch, cls_name, kwargs):
    deltas = []
    for lib in (torch, ferrograd):
        P = make_params(lib)
        opt = getattr(lib.optim, cls_name)(param_spec(P, None), **kwargs)
        ids = {k: id(p) for k, p in P.items()}
        loss_fn(lib, P).backward()
        before = {k: p._version for k, p in P.items()}
        opt.step()
        assert {k: id(p) for k, p in P.items()} == ids
        assert opt.param_groups[0]["params"][0] is P["W"]
        loss_fn(lib, P).backward()
        opt.step()
        delta = {k: p._version - before[k] for k, p in P.items()}
        delta.update({"state." + k: v._version for k, v in opt.state[P["W"]].items() if isinstance(v, lib.Tensor)})
        deltas.append(delta)
    theirs, ours = deltas
    assert ours == theirs
    assert ours["frozen"] == 0 and ours["W"] >= 1


def test_lr_as_tensor_matches_torch(torch):
    kw_t = dict(lr=torch.tensor(0.01))
    kw_f = dict(lr=ferrograd.tensor(0.01))
    _, _, theirs = run(torch, "Adam", kw_t, steps=20)
    _, _, ours = run(ferrograd, "Adam", kw_f, steps=20)
    assert_traj_close(ours, theirs)


def test_training_nn_module_matches_torch(torch):
    if not hasattr(ferrograd.nn, "Linear"):
        pytest.skip("ferrograd.nn.Linear is not available yet")
    trajs = []
    for lib in (torch, ferrograd):
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1))
        with lib.no_grad():
            for (_name, p), arr in zip(model.named_parameters(), _module_init()):
                p.copy_(lib.tensor(arr))
        opt = lib.optim.AdamW(model.named_parameters(), lr=0.01, amsgrad=True)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=STEPS)
        traj = []
        for _ in range(STEPS):
            opt.zero_grad()
            loss = ((model(lib.tensor(X)) - lib.tensor(Y).reshape(6, 1)) ** 2).mean()
            loss.backward()
            opt.step()
            sched.step()
            traj.append({n: numpy_of(p) for n, p in model.named_parameters()})
        trajs.append(traj)
        assert opt.param_groups[0]["param_names"] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert_traj_close(trajs[1], trajs[0])


def _module_init():
    rng = np.random.default_rng(1)
    return [rng.normal(size=s).astype(np.float32) for s in [(4, 3), (4,), (1, 4), (1,)]]


# --- always run: hand-computed results ---------------------------------------------


def leaf(values):
    return ferrograd.tensor(values, requires_grad=True)


def set_grad(p, values):
    p.grad = ferrograd.tensor(values)


def close(t, values, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(np.array(t.detach().tolist(), dtype=np.float64), values, rtol=rtol, atol=atol)


def test_sgd_one_step_is_p_minus_lr_g():
    p = leaf([1.0, -2.0, 3.0])
    opt = optim.SGD([p], lr=0.1)
    set_grad(p, [0.5, 1.0, -2.0])
    assert opt.step() is None
    close(p, [1.0 - 0.05, -2.0 - 0.1, 3.0 + 0.2])
    assert len(opt.state) == 0  # no momentum: no state, as in torch


def test_sgd_momentum_dampening_and_nesterov_by_hand():
    lr, m, d = 0.1, 0.9, 0.25
    p = leaf([1.0, 2.0])
    opt = optim.SGD([p], lr=lr, momentum=m, dampening=d)
    g1, g2 = np.array([1.0, -1.0]), np.array([0.5, 2.0])
    set_grad(p, g1.tolist())
    opt.step()
    buf = g1  # first buffer is the gradient itself, not dampened
    expect = np.array([1.0, 2.0]) - lr * buf
    close(p, expect)
    set_grad(p, g2.tolist())
    opt.step()
    buf = m * buf + (1 - d) * g2
    expect = expect - lr * buf
    close(p, expect)
    close(opt.state[p]["momentum_buffer"], buf)

    q = leaf([1.0, 2.0])
    opt = optim.SGD([q], lr=lr, momentum=m, nesterov=True, weight_decay=0.1)
    set_grad(q, g1.tolist())
    opt.step()
    g = g1 + 0.1 * np.array([1.0, 2.0])
    close(q, np.array([1.0, 2.0]) - lr * (g + m * g))


def test_maximize_flips_the_step():
    p = leaf([1.0, 1.0])
    opt = optim.SGD([p], lr=0.5, maximize=True)
    set_grad(p, [1.0, -2.0])
    opt.step()
    close(p, [1.5, 0.0])


def test_adam_first_step_moves_by_lr_sign_g():
    p = leaf([1.0, -2.0, 3.0, 0.5])
    opt = optim.Adam([p], lr=0.01)
    set_grad(p, [0.3, -4.0, 1e-3, 10.0])
    opt.step()
    close(p, [1.0 - 0.01, -2.0 + 0.01, 3.0 - 0.01, 0.5 - 0.01], rtol=1e-5, atol=1e-6)
    state = opt.state[p]
    assert list(state) == ["step", "exp_avg", "exp_avg_sq"]
    assert state["step"].dim() == 0 and str(state["step"].dtype) == "torch.float32"
    assert state["step"].item() == 1.0
    close(state["exp_avg"], 0.1 * np.array([0.3, -4.0, 1e-3, 10.0]), rtol=1e-5)
    close(state["exp_avg_sq"], 0.001 * np.array([0.3, -4.0, 1e-3, 10.0]) ** 2, rtol=1e-5)


def test_adam_amsgrad_state_and_second_step_by_hand():
    b1, b2, lr, eps = 0.9, 0.999, 0.01, 1e-8
    p = leaf([0.0])
    opt = optim.Adam([p], lr=lr, amsgrad=True)
    set_grad(p, [2.0])
    opt.step()
    set_grad(p, [0.5])
    opt.step()
    m = (1 - b1) * 2.0 * b1 + (1 - b1) * 0.5
    v1 = (1 - b2) * 4.0
    v = b2 * v1 + (1 - b2) * 0.25
    vmax = max(v1, v)
    step2 = lr / (1 - b1**2) * m / (math.sqrt(vmax) / math.sqrt(1 - b2**2) + eps)
    close(p, [-lr - step2], rtol=1e-5)
    assert list(opt.state[p]) == ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
    close(opt.state[p]["max_exp_avg_sq"], [vmax], rtol=1e-5)
    assert opt.state[p]["step"].item() == 2.0


def test_adamw_decoupled_decay_with_zero_grad():
    # a zero gradient leaves the moments at zero: only the decay p * (1 - lr * wd) acts
    p = leaf([1.0, -3.0])
    opt = optim.AdamW([p], lr=0.1, weight_decay=0.5)
    assert opt.param_groups[0]["decoupled_weight_decay"] is True
    set_grad(p, [0.0, 0.0])
    opt.step()
    close(p, [0.95, -2.85])

    q = leaf([1.0, -3.0])
    opt = optim.Adam([q], lr=0.1, weight_decay=0.5)  # L2: the decay goes through the moments
    set_grad(q, [0.0, 0.0])
    opt.step()
    close(q, [0.9, -2.9], rtol=1e-5)


def test_rmsprop_first_steps_by_hand():
    alpha, lr = 0.9, 0.01
    p = leaf([1.0, 1.0])
    opt = optim.RMSprop([p], lr=lr, alpha=alpha, eps=0.0)
    set_grad(p, [2.0, -0.5])
    opt.step()
    close(p, [1.0 - lr / math.sqrt(1 - alpha), 1.0 + lr / math.sqrt(1 - alpha)], rtol=1e-5)
    assert list(opt.state[p]) == ["step", "square_avg"]

    q = leaf([0.0])
    opt = optim.RMSprop([q], lr=lr, alpha=alpha, eps=0.0, centered=True, momentum=0.5)
    assert list(opt.state) == []
    set_grad(q, [2.0])
    opt.step()
    sq, ga = (1 - alpha) * 4.0, (1 - alpha) * 2.0
    buf = 2.0 / math.sqrt(sq - ga * ga)
    close(q, [-lr * buf], rtol=1e-5)
    assert list(opt.state[q]) == ["step", "square_avg", "momentum_buffer", "grad_avg"]
    close(opt.state[q]["momentum_buffer"], [buf], rtol=1e-5)


def test_adagrad_steps_by_hand():
    lr, decay = 0.1, 0.5
    p = leaf([1.0, 1.0])
    opt = optim.Adagrad([p], lr=lr, lr_decay=decay, initial_accumulator_value=0.0, eps=0.0)
    # state exists from construction
    assert list(opt.state[p]) == ["step", "sum"] and opt.state[p]["step"].item() == 0.0
    set_grad(p, [3.0, -1.0])
    opt.step()
    close(p, [1.0 - lr, 1.0 + lr], rtol=1e-6)
    set_grad(p, [4.0, 0.0])
    opt.step()
    close(p, [1.0 - lr - lr / (1 + decay) * 4.0 / 5.0, 1.0 + lr], rtol=1e-6)
    close(opt.state[p]["sum"], [25.0, 1.0])
    assert opt.state[p]["step"].item() == 2.0


def test_params_without_grad_are_skipped():
    p, q = leaf([1.0]), leaf([2.0])
    for cls in (optim.SGD, optim.Adam, optim.RMSprop):
        opt = cls([p, q], lr=0.1)
        set_grad(p, [1.0])
        q.grad = None
        opt.step()
        close(q, [2.0])
        assert q not in opt.state


def test_step_updates_in_place_under_no_grad():
    p = leaf([1.0, 2.0])
    opt = optim.Adam([p], lr=0.1)
    set_grad(p, [1.0, 1.0])
    ident, version = id(p), p._version
    opt.step()
    assert id(opt.param_groups[0]["params"][0]) == ident and opt.param_groups[0]["params"][0] is p
    assert p._version > version
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert ferrograd.is_grad_enabled()


def test_closure_runs_with_grad_enabled_and_loss_is_returned():
    p = leaf([3.0])
    opt = optim.SGD([p], lr=0.1)
    seen = []

    def closure():
        seen.append(ferrograd.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with ferrograd.no_grad():
        loss = opt.step(closure)
    assert seen == [True]
    assert loss.item() == 9.0
    close(p, [3.0 - 0.1 * 6.0])


def test_zero_grad():
    p = leaf([1.0, 2.0])
    opt = optim.SGD([p], lr=0.1)
    set_grad(p, [1.0, 1.0])
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g
    close(p.grad, [0.0, 0.0])
    opt.zero_grad()
    assert p.grad is None


def test_state_dict_ids_across_groups_and_hooks():
    a, b, c = leaf([1.0]), leaf([2.0]), leaf([3.0])
    opt = optim.SGD([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1, momentum=0.9)
    for p in (a, b, c):
        set_grad(p, [1.0])
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
    opt.step()
    assert calls == ["pre", "post"]
    h1.remove()
    opt.step()
    assert calls == ["pre", "post", "post"]
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert list(sd["state"]) == [0, 1, 2]
    assert sd["state"][2]["momentum_buffer"] is opt.state[c]["momentum_buffer"]
    assert sd["param_groups"][1]["lr"] == 0.5


def test_named_parameters_are_kept_as_param_names():
    a, b = leaf([1.0]), leaf([2.0])
    opt = optim.Adam([("w", a), ("b", b)])
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.param_groups[0]["params"][0] is a
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]


@pytest.mark.parametrize(
    "make,option",
    [
        (lambda p: optim.SGD([p], fused=True), "fused"),
        (lambda p: optim.SGD([p], differentiable=True), "differentiable"),
        (lambda p: optim.Adam([p], capturable=True), "capturable"),
        (lambda p: optim.Adam([p], fused=True), "fused"),
        (lambda p: optim.AdamW([p], differentiable=True), "differentiable"),
        (lambda p: optim.RMSprop([p], capturable=True), "capturable"),
        (lambda p: optim.Adagrad([p], fused=True), "fused"),
        (lambda p: optim.SGD([{"params": [p], "fused": True}]), "fused"),
    ],
)
def test_unsupported_options_raise_not_implemented(make, option):
    with pytest.raises(NotImplementedError, match=option):
        make(leaf([1.0]))


def test_error_texts_without_torch():
    p = leaf([1.0])
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -0.1$"):
        optim.SGD([p], lr=-0.1)
    with pytest.raises(ValueError, match=r"^optimizer got an empty parameter list$"):
        optim.Adam([])
    with pytest.raises(TypeError, match=r"^params argument given to the optimizer should be an iterable "
                                        r"of Tensors or dicts, but got torch.FloatTensor$"):
        optim.Adam(p)
    with pytest.raises(TypeError, match=r"^optimizer can only optimize Tensors, but one of the params is int$"):
        optim.Adam([p, 1])
    with pytest.raises(ValueError, match=r"^can't optimize a non-leaf Tensor$"):
        optim.Adam([p * 2])
    with pytest.raises(ValueError, match=r"^some parameters appear in more than one parameter group$"):
        optim.Adam([{"params": [p]}, {"params": p}])
    with pytest.raises(ValueError, match=r"^Nesterov momentum requires a momentum and zero dampening$"):
        optim.SGD([p], momentum=0.0, nesterov=True)


def test_repr_format():
    opt = optim.SGD([leaf([1.0])], lr=0.1)
    assert repr(opt) == (
        "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n"
        "    fused: None\n    lr: 0.1\n    maximize: False\n    momentum: 0\n    nesterov: False\n"
        "    weight_decay: 0\n)"
    )


def test_custom_optimizer_on_the_base_class():
    from ferrograd.optim.optimizer import required

    class PlainSGD(optim.Optimizer):
        def __init__(self, params, lr=required, fused=True):
            super().__init__(params, dict(lr=lr, fused=fused, differentiable=False))

        @ferrograd.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-group["lr"])
                        self.state[p]["n"] = self.state[p].get("n", 0) + 1

    with pytest.raises(ValueError, match="^parameter group didn't specify a value of required optimization "
                                         "parameter lr$"):
        PlainSGD([leaf([1.0])])
    p = leaf([1.0, 2.0])
    opt = PlainSGD([p], lr=0.5)  # its own options (fused here) are its business
    set_grad(p, [1.0, -1.0])
    opt.step()
    close(p, [0.5, 2.5])
    sd = opt.state_dict()
    assert sd["state"] == {0: {"n": 1}}
    q = leaf([0.5, 2.5])
    fresh = PlainSGD([q], lr=0.1)
    fresh.load_state_dict(sd)
    assert fresh.state[q] == {"n": 1} and fresh.param_groups[0]["lr"] == 0.5


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adadelta"])
def test_setstate_fills_what_an_older_state_lacks(name):
    # an optimizer pickled by an older version: group options missing, step counts as numbers
    cls = getattr(ferrograd.optim, name)
    p = ferrograd.ones(2, requires_grad=True)
    opt = cls([p], lr=0.1, **({"momentum": 0.9} if name == "SGD" else {}))
    p.grad = ferrograd.ones(2)
    opt.step()
    state = copy.deepcopy(opt.__getstate__())
    for group in state["param_groups"]:
        del group["maximize"], group["foreach"]
    for s in state["state"].values():
        if "step" in s:
            s["step"] = s["step"].item()
    old = cls.__new__(cls)
    old.__setstate__(state)
    group = old.param_groups[0]
    assert group["maximize"] is False and group["foreach"] is None
    for s in old.state.values():
        assert "step" not in s or (ferrograd.is_tensor(s["step"]) and s["step"].item() == 1.0)
    old.param_groups[0]["params"][0].grad = ferrograd.ones(2)
    old.step()
    assert not ferrograd.equal(old.param_groups[0]["params"][0], p)
