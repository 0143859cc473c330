"""ferrograd.optim.Adadelta and LBFGS beyond the shared parity tests of test_optim.py
(Adadelta is in its CONFIGS / GROUP_CONFIGS: trajectories, state dicts, version counters,
repr and errors against PyTorch).

LBFGS runs the same closure-driven problems as PyTorch from identical float64 values; the
comparisons skip without torch, the closed-form tests always run.
"""

import copy
import math

import numpy as np
import pytest

import ferrograd


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


# ------------------------------------------------------------------ Adadelta


def test_adadelta_first_steps_by_hand():
    p = ferrograd.tensor([1.0, -2.0], dtype=ferrograd.float64, requires_grad=True)
    opt = ferrograd.optim.Adadelta([p], lr=0.5, rho=0.8, eps=1e-4)
    g = np.array([0.3, -1.0])
    p.grad = ferrograd.tensor(g)
    opt.step()
    square_avg = 0.2 * g * g
    delta = math.sqrt(1e-4) / np.sqrt(square_avg + 1e-4) * g
    acc_delta = 0.2 * delta * delta
    np.testing.assert_allclose(p.detach().numpy(), [1.0, -2.0] - 0.5 * delta, rtol=1e-12)
    state = opt.state[p]
    assert state["step"].item() == 1.0
    np.testing.assert_allclose(state["square_avg"].numpy(), square_avg, rtol=1e-12)
    np.testing.assert_allclose(state["acc_delta"].numpy(), acc_delta, rtol=1e-12)
    assert list(state) == ["step", "square_avg", "acc_delta"]


def test_adadelta_defaults():
    opt = ferrograd.optim.Adadelta([ferrograd.zeros(1, requires_grad=True)])
    assert opt.defaults == {"lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 0, "maximize": False,
                            "capturable": False, "foreach": None, "differentiable": False}


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
@pytest.mark.parametrize("kw", [{}, {"weight_decay": 0.1, "maximize": True, "rho": 0.5}])
def test_adadelta_native_step_equals_the_tensor_op_loop(dtype, kw):
    # the fused native step (differentiable=False) and the op-by-op loop give the same numbers
    dt = getattr(ferrograd, dtype)
    ps = [ferrograd.tensor([[0.5, -1.0, 2.0], [3.0, 0.0, -0.25]], dtype=dt) for _ in range(2)]
    opts = [ferrograd.optim.Adadelta([ps[0]], lr=0.7, **kw),
            ferrograd.optim.Adadelta([ps[1]], lr=0.7, differentiable=True, **kw)]
    for step in range(4):
        for p, opt in zip(ps, opts):
            p.grad = ferrograd.tensor([[0.3, -1.0, 0.5], [2.0, -0.1, 0.0]], dtype=dt) * (step + 1)
            opt.step()
    # bfloat16: the native step computes in float32 and rounds once, the loop rounds every op
    tol = {"float64": {"rtol": 1e-14}, "float32": {"rtol": 1e-6}, "bfloat16": {"rtol": 2e-2, "atol": 1e-5}}[dtype]
    a, b = (p.detach().float().numpy() for p in ps)
    np.testing.assert_allclose(a, b, **tol)
    for key in ("square_avg", "acc_delta"):
        np.testing.assert_allclose(opts[0].state[ps[0]][key].float().numpy(),
                                   opts[1].state[ps[1]][key].float().numpy(), **tol)
    assert opts[0].state[ps[0]]["step"].item() == 4.0


def _adadelta_differentiable(lib):
    w0 = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64, requires_grad=True)
    p = w0 * 1.0
    opt = lib.optim.Adadelta([p], lr=0.7, rho=0.5, weight_decay=0.1, differentiable=True)
    for _ in range(3):
        p.grad = 2 * p + 1  # a gradient that depends on w0 through p
        opt.step()
    assert p.grad_fn is not None
    g, = lib.autograd.grad((p ** 3).sum(), w0)
    return p.detach().numpy(), g.numpy()


def test_adadelta_differentiable_matches_torch(torch):
    theirs, ours = _adadelta_differentiable(torch), _adadelta_differentiable(ferrograd)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10)


def test_adadelta_tensor_lr_matches_torch(torch):
    out = []
    for lib in (torch, ferrograd):
        p = lib.tensor([1.0, -2.0], requires_grad=True)
        opt = lib.optim.Adadelta([p], lr=lib.tensor(0.5))
        for _ in range(5):
            opt.zero_grad()
            ((p - 3) ** 2).sum().backward()
            opt.step()
        out.append(p.detach().numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-6)


def test_adadelta_capturable_raises_like_torch(torch):
    errors = []
    for lib in (torch, ferrograd):
        p = lib.ones(2, requires_grad=True)
        opt = lib.optim.Adadelta([p], capturable=True)  # accepted at construction, as in PyTorch
        p.sum().backward()
        with pytest.raises(AssertionError) as e:
            opt.step()
        errors.append(str(e.value))
    assert errors[0] == errors[1]


# ------------------------------------------------------------------ LBFGS

_rng = np.random.default_rng(0)
A = _rng.normal(size=(8, 4))
Y = _rng.normal(size=8)
X0 = _rng.normal(size=4)
NET = {"W": _rng.normal(size=(4, 3)), "b": _rng.normal(size=4), "v": _rng.normal(size=4)}
NET_X = _rng.normal(size=(6, 3))
NET_Y = _rng.normal(size=6)


def _loss_on(lib, problem, params):
    """The float64 problems: a least-squares fit with a quartic penalty, a small tanh network."""
    if problem == "lsq":
        return ((lib.tensor(A) @ params[0] - lib.tensor(Y)) ** 2).sum() + 0.1 * (params[0] ** 4).sum()
    h = (lib.tensor(NET_X) @ params[0].t() + params[1]).tanh()
    return ((h @ params[2] - lib.tensor(NET_Y)) ** 2).mean() + 0.05 * (params[0] ** 2).sum()


def _initial_params(lib, problem):
    arrays = [X0] if problem == "lsq" else [NET["W"], NET["b"], NET["v"]]
    return [lib.tensor(a.copy(), requires_grad=True) for a in arrays]


def _run_lbfgs(lib, problem, kwargs, steps, params=None, opt=None):
    """Steps LBFGS ``steps`` times; returns (params, optimizer, [params and loss after each step])."""
    if params is None:
        params = _initial_params(lib, problem)
    if opt is None:
        opt = lib.optim.LBFGS(params, **kwargs)

    def closure():
        opt.zero_grad()
        loss = _loss_on(lib, problem, params)
        loss.backward()
        return loss

    traj = []
    for _ in range(steps):
        loss = opt.step(closure)
        traj.append(np.concatenate([p.detach().numpy().ravel() for p in params] + [[loss.item()]]))
    return params, opt, traj


LBFGS_CONFIGS = [
    ("lsq", dict()),
    ("lsq", dict(line_search_fn="strong_wolfe")),
    ("lsq", dict(lr=0.5, history_size=3, max_iter=7)),
    ("lsq", dict(line_search_fn="strong_wolfe", history_size=2, max_iter=4, max_eval=6)),
    ("lsq", dict(lr=0.1, max_iter=5)),
    ("lsq", dict(tolerance_grad=1e-3, line_search_fn="strong_wolfe")),
    ("net", dict(lr=0.5, history_size=3, max_iter=7)),
    ("net", dict(line_search_fn="strong_wolfe", history_size=2, max_iter=4, max_eval=6)),
    ("net", dict(lr=0.1, max_iter=5, tolerance_change=1e-5)),
]


@pytest.mark.parametrize("problem,kwargs", LBFGS_CONFIGS, ids=[f"{p}-{k}" for p, k in LBFGS_CONFIGS])
def test_lbfgs_trajectory_matches_torch(torch, problem, kwargs):
    _, topt, theirs = _run_lbfgs(torch, problem, kwargs, steps=4)
    params, opt, ours = _run_lbfgs(ferrograd, problem, kwargs, steps=4)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12, err_msg=f"step {step + 1}")
    tstate = topt.state[topt.param_groups[0]["params"][0]]
    state = opt.state[params[0]]
    assert list(state) == list(tstate)
    assert (state["func_evals"], state["n_iter"]) == (tstate["func_evals"], tstate["n_iter"])
    assert len(state["old_dirs"]) == len(tstate["old_dirs"])
    assert list(opt.param_groups[0]) == list(topt.param_groups[0])
    assert repr(opt) == repr(topt)


def test_lbfgs_state_dict_round_trip_continues_torch_trajectory(torch):
    kwargs = dict(line_search_fn="strong_wolfe", history_size=3, max_iter=4)
    _, _, theirs = _run_lbfgs(torch, "net", kwargs, steps=4)
    params, opt, first = _run_lbfgs(ferrograd, "net", kwargs, steps=2)
    saved = copy.deepcopy(opt.state_dict())  # as if through save / load: nothing shared
    params2 = [ferrograd.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params]
    opt2 = ferrograd.optim.LBFGS(params2, **kwargs)
    opt2.load_state_dict(saved)
    assert opt2.state[params2[0]]["n_iter"] == opt.state[params[0]]["n_iter"]
    _, _, rest = _run_lbfgs(ferrograd, "net", kwargs, steps=2, params=params2, opt=opt2)
    for step, (a, b) in enumerate(zip(first + rest, theirs)):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12, err_msg=f"step {step + 1}")


def test_lbfgs_solves_a_quadratic():
    rng = np.random.default_rng(1)
    M = rng.normal(size=(5, 5))
    Q = M @ M.T + 5 * np.eye(5)
    b = rng.normal(size=5)
    x = ferrograd.zeros(5, dtype=ferrograd.float64, requires_grad=True)
    opt = ferrograd.optim.LBFGS([x], max_iter=50, line_search_fn="strong_wolfe", tolerance_grad=1e-12,
                                tolerance_change=1e-15)
    Qt, bt = ferrograd.tensor(Q), ferrograd.tensor(b)

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x @ Qt @ x) - bt @ x
        loss.backward()
        return loss

    first = opt.step(closure)
    assert first.item() == 0.0  # the loss before the step
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.solve(Q, b), rtol=1e-6, atol=1e-9)
    # at the optimum the gradient is below tolerance_grad: a step evaluates once and returns
    opt = ferrograd.optim.LBFGS([x], tolerance_grad=1e-6)
    before = x.detach().clone()
    opt.step(closure)
    assert opt.state[x]["func_evals"] == 1 and "d" not in opt.state[x]
    assert x.detach().equal(before)


def test_lbfgs_defaults_and_errors():
    p = ferrograd.zeros(2, requires_grad=True)
    opt = ferrograd.optim.LBFGS([p])
    assert opt.defaults == {"lr": 1, "max_iter": 20, "max_eval": 25, "tolerance_grad": 1e-7,
                            "tolerance_change": 1e-9, "history_size": 100, "line_search_fn": None}
    assert ferrograd.optim.LBFGS([p], max_iter=8).defaults["max_eval"] == 10
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        ferrograd.optim.LBFGS([{"params": [p]}, {"params": [ferrograd.ones(1, requires_grad=True)]}])
    bad = ferrograd.optim.LBFGS([p], line_search_fn="backtracking")

    def closure():
        bad.zero_grad()
        loss = ((p - 1) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="^only 'strong_wolfe' is supported$"):
        bad.step(closure)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'closure'"):
        opt.step()
