"""torch.func (issue 13): grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, linearize,
vmap, functional_call, stack_module_state.

Parity tests run each scenario with ferrograd and with torch and compare what it logged
(values, shapes, dtypes, requires_grad of results, exception types and messages); they skip
without PyTorch. The closed-form tests below them always run. Helpers: _func_helpers.py.
"""

import warnings

import numpy as np
import pytest

import ferrograd
import ferrograd.func
from _func_helpers import assert_same, attempt, run, scenario_registry, val
from ferrograd.func import (
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    stack_module_state,
    vjp,
    vmap,
)

SCENARIOS, scenario = scenario_registry()

# ferrograd's one-off notice that vmap runs as a loop (tested on its own)
pytestmark = pytest.mark.filterwarnings("ignore:ferrograd's torch.func.vmap")


def f64(torch, values, requires_grad=False):
    return torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)


# --- grad, grad_and_value ---------------------------------------------------------------------


@scenario
def grad_basic_argnums_and_aux(torch, log):
    F = torch.func
    x, y = f64(torch, [0.5, -1.0, 2.0]), f64(torch, [1.5, 0.25, -0.5])

    def f(a, b):
        return (a.sin() * b).sum() + (a * a).sum()

    log.append(val(F.grad(f)(x, y)))
    log.append(val(F.grad(f, argnums=1)(x, y)))
    log.append(val(F.grad(f, argnums=(0, 1))(x, y)))
    log.append(val(F.grad(f, argnums=-1)(x, y)))
    log.append(val(F.grad(lambda a, b: (f(a, b), {"aux": a * 2}), has_aux=True)(x, y)))
    log.append(val(F.grad_and_value(f)(x, y)))
    log.append(val(F.grad_and_value(lambda a: (f(a, y), a.sum()), has_aux=True)(x)))
    log.append(val(F.grad(lambda a, *, scale: (a * scale).sum())(x, scale=3.0)))


@scenario
def grad_pytree_inputs(torch, log):
    F = torch.func
    params = {"w": f64(torch, [[1.0, 2.0], [3.0, -1.0]]), "b": f64(torch, [0.5, -0.5])}
    x = f64(torch, [0.3, -0.7])

    def loss(p, x):
        return ((p["w"] @ x + p["b"]).tanh() ** 2).sum()

    log.append(val(F.grad(loss)(params, x)))
    log.append(val(F.grad(lambda t: (t[0] * t[1][0]).sum() + t[1][1].sum())(
        (x, [x * 2, x.exp()]))))


@scenario
def grad_nested_and_grad_mode(torch, log):
    F = torch.func
    x = torch.tensor(0.7, dtype=torch.float64)
    log.append(val(F.grad(F.grad(torch.sin))(x)))
    log.append(val(F.grad(F.grad(F.grad(lambda t: t ** 4)))(x)))
    # outer no_grad is ignored, an inner one obeyed
    with torch.no_grad():
        log.append(val(F.grad(lambda t: t * t)(x)))

    def g(t):
        with torch.no_grad():
            c = t * t
        return t * c

    log.append(val(F.grad(g)(x)))
    log.append(("grad mode after", torch.is_grad_enabled()))


@scenario
def grad_results_stay_differentiable_outside(torch, log):
    F = torch.func
    x = f64(torch, [0.5, 1.5], requires_grad=True)
    w = f64(torch, [2.0, -1.0], requires_grad=True)
    g = F.grad(lambda t: (w * t ** 3).sum())(x)
    log.append(val(g))
    g.sum().backward()
    log.append(("x.grad", val(x.grad), "w.grad", val(w.grad)))
    plain = F.grad(lambda t: (t ** 3).sum())(f64(torch, [0.5, 1.5]))
    log.append(("plain input", val(plain)))
    with torch.no_grad():
        log.append(("under no_grad", val(F.grad(lambda t: (w * t ** 3).sum())(x))))


@scenario
def grad_output_independent_of_input(torch, log):
    F = torch.func
    x = f64(torch, [1.0, 2.0])
    c = f64(torch, [3.0])
    log.append(val(F.grad(lambda t: c.sum())(x)))
    log.append(val(F.grad(lambda t, u: (u * 2).sum(), argnums=(0, 1))(x, x)))


@scenario
def grad_errors(torch, log):
    F = torch.func
    x = f64(torch, [1.0, 2.0])
    attempt(log, lambda: F.grad(lambda t: t * 2)(x))
    attempt(log, lambda: F.grad(lambda t: 3.0)(x))
    attempt(log, lambda: F.grad(lambda t: t.sum(), has_aux=True)(x))
    attempt(log, lambda: F.grad(lambda t: t.sum(), argnums=2)(x))
    attempt(log, lambda: F.grad(lambda t, u: t.sum(), argnums=())(x, x))
    attempt(log, lambda: F.grad(lambda t, u: t.sum(), argnums=(0, 0))(x, x))
    attempt(log, lambda: F.grad(lambda t, u: t.sum(), argnums=1.0)(x, x))
    attempt(log, lambda: F.grad(lambda t, u: t.sum(), argnums=1)(x, 3))


@scenario
def grad_and_vjp_refuse_saved_tensors_hooks(torch, log):
    F = torch.func
    x = f64(torch, [1.0, 2.0])
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        attempt(log, lambda: F.grad(lambda t: (t * t).sum())(x))
        attempt(log, lambda: F.vjp(lambda t: t * t, x))
        attempt(log, lambda: F.jacrev(lambda t: t * t)(x))
        attempt(log, lambda: F.vmap(lambda t: t * t)(x))


# --- vjp ----------------------------------------------------------------------------------------


@scenario
def vjp_values_structure_and_reuse(torch, log):
    F = torch.func
    x, y = f64(torch, [0.5, -1.0, 2.0]), f64(torch, [1.5, 0.25, -0.5])
    out, fn = F.vjp(lambda a, b: (a * b, {"s": (a.exp() * b).sum()}), x, y)
    log.append(val(out))
    ct = (f64(torch, [1.0, 2.0, 3.0]), {"s": f64(torch, 0.5)})
    log.append(val(fn(ct)))
    log.append(val(fn(ct)))  # the graph is retained for further calls
    out, fn, aux = F.vjp(lambda a: (a.sin(), a.cos()), x, has_aux=True)
    log.append(val((out, aux, fn(torch.ones(3, dtype=torch.float64)))))
    attempt(log, lambda: fn((torch.ones(3, dtype=torch.float64),)))
    attempt(log, lambda: F.vjp(lambda a: a.argmax(), x))
    attempt(log, lambda: F.vjp(lambda a: a.sum(), x, 2))
    attempt(log, lambda: F.vjp(lambda a: (a, 3), x))
    attempt(log, lambda: F.vjp(lambda a: a, x, has_aux=True))


@scenario
def vjp_fn_create_graph(torch, log):
    F = torch.func
    x = f64(torch, [0.5, 2.0])
    _, fn = F.vjp(lambda a: a ** 3, x)
    v = f64(torch, [1.0, 1.0], requires_grad=True)
    g = fn(v)
    log.append(val(g))
    g[0].sum().backward()
    log.append(("v.grad", val(v.grad)))
    with torch.no_grad():
        log.append(val(fn(v)))


# --- jacrev, jacfwd, hessian ----------------------------------------------------------------------


@scenario
def jacobians_match(torch, log):
    F = torch.func
    x, y = f64(torch, [0.5, -1.0, 2.0]), f64(torch, [[1.0, 2.0], [0.5, -1.0]])

    def f(a, b):
        return a.sin() * a.sum(), b @ b.t() + a[:2].unsqueeze(0)

    for jac in (F.jacrev, F.jacfwd):
        log.append(val(jac(f)(x, y)))
        log.append(val(jac(f, argnums=(0, 1))(x, y)))
        log.append(val(jac(f, argnums=1)(x, y)))
        log.append(val(jac(lambda a: (a ** 2).sum())(x)))
        log.append(val(jac(lambda s: s * torch.arange(3, dtype=torch.float64))(
            torch.tensor(1.5, dtype=torch.float64))))
        log.append(val(jac(lambda a: (a.exp(), {"aux": a + 1}), has_aux=True)(x)))
        log.append(val(jac(lambda d: {"o": d["p"] * d["q"]})({"p": x, "q": x.cos()})))


@scenario
def hessians_match(torch, log):
    F = torch.func
    x, y = f64(torch, [0.5, -1.0, 2.0]), f64(torch, [1.5, 0.25])

    def f(a, b):
        return (a.sin() * a).sum() * b.prod() + (a[:2] * b).exp().sum()

    log.append(val(F.hessian(f)(x, y)))
    log.append(val(F.hessian(f, argnums=(0, 1))(x, y)))
    log.append(val(F.jacrev(F.jacrev(f))(x, y)))
    log.append(val(F.jacfwd(F.jacfwd(f, argnums=1), argnums=1)(x, y)))


@scenario
def jacobian_errors(torch, log):
    F = torch.func
    x = f64(torch, [1.0, 2.0])
    attempt(log, lambda: F.jacrev(lambda t: t, chunk_size=0))
    attempt(log, lambda: F.jacfwd(lambda t: t * torch.rand(2, dtype=torch.float64))(x))
    attempt(log, lambda: F.jacfwd(lambda t: t, randomness="sometimes")(x))
    log.append(val(F.jacrev(lambda t: t * 3, chunk_size=1)(x)))


# --- jvp, linearize -------------------------------------------------------------------------------


@scenario
def jvp_values(torch, log):
    F = torch.func
    x, y = f64(torch, [0.5, -1.0, 2.0]), f64(torch, [1.5, 0.25, -0.5])
    tx, ty = f64(torch, [1.0, 0.0, -2.0]), f64(torch, [0.5, 0.5, 0.5])
    log.append(val(F.jvp(lambda a, b: (a * b).sin(), (x, y), (tx, ty))))
    log.append(val(F.jvp(lambda a: {"p": a.exp(), "q": (a.sum(), a * 2)}, (x,), (tx,))))
    log.append(val(F.jvp(lambda a: (a.tanh(), a.shape[0]), (x,), (tx,), has_aux=True)))
    log.append(val(F.jvp(lambda a, b: (a * 2, b.detach()), (x, y), (tx, ty))))
    attempt(log, lambda: F.jvp(lambda a, b: (a * 2, b.detach()), (x, y), (tx, ty), strict=True))
    attempt(log, lambda: F.jvp(lambda a: a, x, tx))
    attempt(log, lambda: F.jvp(lambda a: a, (x,), (tx, ty)))
    attempt(log, lambda: F.jvp(lambda a: a, (x,), (f64(torch, [1.0]),)))
    attempt(log, lambda: F.jvp(lambda a: a, (x,), (tx,), has_aux=True))
    out, fn = F.linearize(lambda a: a.sin() * a, x)
    log.append(val((out, fn(tx), fn(x))))


@scenario
def jvp_tangent_differentiable_outside(torch, log):
    F = torch.func
    x = f64(torch, [0.5, 1.5], requires_grad=True)
    t = f64(torch, [1.0, -1.0], requires_grad=True)
    out, jv = F.jvp(lambda a: a ** 3, (x,), (t,))
    log.append(val((out, jv)))
    jv.sum().backward()
    log.append(("x.grad", val(x.grad), "t.grad", val(t.grad)))


# --- vmap -----------------------------------------------------------------------------------------


@scenario
def vmap_in_out_dims(torch, log):
    F = torch.func
    a = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    b = torch.arange(4, dtype=torch.float64)
    log.append(val(F.vmap(lambda x: x.sum())(a)))
    log.append(val(F.vmap(lambda x, y: x * y, in_dims=(0, None))(a, b)))
    log.append(val(F.vmap(lambda x, y: x * y, in_dims=(1, 0))(a, b)))
    log.append(val(F.vmap(lambda x: x * 2, in_dims=-1)(a)))
    log.append(val(F.vmap(lambda x: x * 2, out_dims=1)(a)))
    log.append(val(F.vmap(lambda x: (x, x.sum()), out_dims=(1, 0))(a)))
    log.append(val(F.vmap(lambda x: (x * 2, 3), out_dims=(0, None))(a)))
    log.append(val(F.vmap(lambda x: torch.ones(2, dtype=torch.float64))(a)))
    log.append(val(F.vmap(lambda x: b * 2, out_dims=None)(a)))
    log.append(val(F.vmap(lambda d: d["p"] + d["q"], in_dims=({"p": 0, "q": None},))(
        {"p": a, "q": b})))
    log.append(val(F.vmap(lambda x, scale: x * scale)(a, scale=2.0)))
    log.append(val(F.vmap(F.vmap(lambda x: x * x))(a)))
    log.append(val(F.vmap(lambda x: x.sum(), out_dims=-1)(a)))


@scenario
def vmap_errors(torch, log):
    F = torch.func
    # distinct slices: ferrograd tells a batched output with out_dims=None by its values
    a = torch.arange(6, dtype=torch.float64).reshape(3, 2)

    def f(x, y=None):
        return x

    attempt(log, lambda: F.vmap(f, in_dims=[0])(a))
    attempt(log, lambda: F.vmap(f)())
    attempt(log, lambda: F.vmap(f, in_dims=(0, 0))(a))
    attempt(log, lambda: F.vmap(f, in_dims=(0.5,))(a))
    attempt(log, lambda: F.vmap(f, in_dims=(0, 0))(a, 3))
    attempt(log, lambda: F.vmap(f, in_dims=3)(a))
    attempt(log, lambda: F.vmap(f, in_dims=(0, 0))(a, torch.ones(2, 2)))
    attempt(log, lambda: F.vmap(f, in_dims=None)(a))
    attempt(log, lambda: F.vmap(f, in_dims=(None,))(a))
    attempt(log, lambda: F.vmap(lambda x: 3)(a))
    attempt(log, lambda: F.vmap(lambda x: x, out_dims=None)(a))
    attempt(log, lambda: F.vmap(lambda x: x, out_dims="a")(a))
    attempt(log, lambda: F.vmap(lambda x: (x, x), out_dims=(0, 0, 0))(a))
    attempt(log, lambda: F.vmap(f, chunk_size=0))
    attempt(log, lambda: F.vmap(f, randomness="sometimes"))
    attempt(log, lambda: F.vmap(lambda x: x + torch.rand(2, dtype=torch.float64))(a))


@scenario
def vmap_randomness_modes(torch, log):
    F = torch.func
    a = torch.zeros(4, 3, dtype=torch.float64)
    torch.manual_seed(0)
    same = F.vmap(lambda x: x + torch.rand(3, dtype=torch.float64), randomness="same")(a)
    log.append(("same rows equal", all(bool((same[i] == same[0]).all()) for i in range(4))))
    diff = F.vmap(lambda x: x + torch.rand(3, dtype=torch.float64), randomness="different")(a)
    log.append(("different rows differ", not bool((diff[1] == diff[0]).all())))
    log.append(("shapes", tuple(same.shape), tuple(diff.shape)))


@scenario
def vmap_of_grad_per_sample(torch, log):
    F = torch.func
    w = f64(torch, [[0.5, -1.0, 2.0], [1.0, 0.25, -0.5]])
    xs = torch.arange(12, dtype=torch.float64).reshape(4, 3) / 7
    ys = f64(torch, [1.0, -1.0, 0.5, 2.0])

    def loss(w, x, y):
        return ((w @ x).tanh().sum() - y) ** 2

    log.append(val(F.vmap(F.grad(loss), in_dims=(None, 0, 0))(w, xs, ys)))
    log.append(val(F.vmap(F.jacrev(lambda x: x.sin() * x.sum()))(xs)))
    log.append(val(F.vmap(F.hessian(lambda x: (x ** 3).sum()))(xs)))
    # the loop's results are differentiable through the stack
    wt = f64(torch, [[0.5, -1.0, 2.0], [1.0, 0.25, -0.5]], requires_grad=True)
    out = F.vmap(lambda x: (wt @ x).exp().sum())(xs)
    out.sum().backward()
    log.append(("wt.grad", val(wt.grad)))


# --- functional_call, stack_module_state ----------------------------------------------------------


@scenario
def functional_call_swaps_and_restores(torch, log):
    F = torch.func
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2).double()
    x = f64(torch, [[1.0, 2.0, 3.0]])
    params = {"weight": torch.ones(2, 3, dtype=torch.float64),
              "bias": f64(torch, [0.5, -0.5])}
    log.append(val(F.functional_call(lin, params, (x,))))
    log.append(val(F.functional_call(lin, params, x)))
    log.append(val(F.functional_call(lin, ({"weight": params["weight"]}, {"bias": params["bias"]}),
                                     args=(), kwargs={"input": x})))
    log.append(("restored", type(lin.weight).__name__, lin.weight.requires_grad))
    # gradients with respect to the given tensors
    g = F.grad(lambda p, x: F.functional_call(lin, p, (x,)).sum())(params, x)
    log.append(val(g))
    attempt(log, lambda: F.functional_call(lin, {"weight": params["weight"]}, (x,), strict=True))
    attempt(log, lambda: F.functional_call(lin, {**params, "extra": x}, (x,), strict=True))
    attempt(log, lambda: F.functional_call(lin, ({"bias": x}, {"bias": x}), (x,)))
    attempt(log, lambda: F.functional_call(lin, [params, 3], (x,)))
    attempt(log, lambda: F.functional_call(lin, 3, (x,)))


@scenario
def functional_call_buffers_and_tied_weights(torch, log):
    F = torch.func
    bn = torch.nn.BatchNorm1d(2).double()
    x = f64(torch, [[1.0, 2.0], [3.0, 5.0], [0.0, -1.0]])
    bufs = {"running_mean": torch.zeros(2, dtype=torch.float64),
            "running_var": torch.ones(2, dtype=torch.float64),
            "num_batches_tracked": torch.tensor(0)}
    log.append(val(F.functional_call(bn, bufs, (x,))))
    log.append(("given buffers updated", val(bufs["running_mean"]), val(bufs["num_batches_tracked"])))
    log.append(("module's untouched", val(bn.running_mean), val(bn.num_batches_tracked)))

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(2, 2, bias=False).double()
            self.b = torch.nn.Linear(2, 2, bias=False).double()
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    w = f64(torch, [[1.0, 2.0], [0.0, 1.0]])
    log.append(val(F.functional_call(m, {"a.weight": w}, (x,))))
    log.append(val(F.functional_call(m, {"a.weight": w}, (x,), tie_weights=False)
                   - F.functional_call(m, {"a.weight": w, "b.weight": m.b.weight}, (x,),
                                       tie_weights=False)))
    attempt(log, lambda: F.functional_call(m, {"a.weight": w, "b.weight": w * 2}, (x,)))


@scenario
def stack_module_state_ensemble(torch, log):
    F = torch.func
    torch.manual_seed(0)
    models = [torch.nn.Linear(3, 2).double() for _ in range(4)]
    params, buffers = F.stack_module_state(models)
    log.append(({k: (tuple(v.shape), v.requires_grad, v.is_leaf) for k, v in params.items()},
                buffers))
    base = models[0]
    x = f64(torch, [[1.0, 2.0, 3.0]])

    def call(p, b, x):
        return F.functional_call(base, (p, b), (x,))

    out = F.vmap(call, in_dims=(0, 0, None))(params, buffers, x)
    expected = torch.stack([m(x) for m in models])
    log.append(("ensemble matches", tuple(out.shape), bool((out - expected).abs().max() < 1e-12)))
    attempt(log, lambda: F.stack_module_state([]))
    attempt(log, lambda: F.stack_module_state([models[0], torch.nn.ReLU()]))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_parity_with_torch(name, real_torch):
    assert_same(run(SCENARIOS[name], ferrograd), run(SCENARIOS[name], real_torch))


# --- closed forms (always run) --------------------------------------------------------------------


def T(a, requires_grad=False):
    return ferrograd.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def npy(t):
    return t.detach().numpy()


RNG = np.random.default_rng(13)
A = RNG.standard_normal((4, 3))
X = RNG.standard_normal(3)


def test_func_is_importable_both_ways():
    assert ferrograd.func is __import__("ferrograd.func").func
    assert set(ferrograd.func.__all__) >= {
        "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
        "functional_call"}


def test_grad_of_quadratic_form_and_plain_result():
    Q = A.T @ A
    g = grad(lambda x: x @ T(Q) @ x)(T(X))
    np.testing.assert_allclose(npy(g), 2 * Q @ X, rtol=1e-12)
    assert not g.requires_grad


def test_grad_and_value_returns_value():
    g, v = grad_and_value(lambda x: (x ** 2).sum())(T(X))
    np.testing.assert_allclose(npy(g), 2 * X, rtol=1e-12)
    assert float(v) == pytest.approx(float((X ** 2).sum()), rel=1e-12)


def test_nested_grad_third_derivative():
    x = T(0.3)
    d3 = grad(grad(grad(lambda t: t.exp() * t)))(x)
    assert float(d3) == pytest.approx(np.exp(0.3) * (3 + 0.3), rel=1e-12)


def test_jacobians_of_linear_map_and_hessian_of_cubic():
    for jac in (jacrev, jacfwd):
        J = jac(lambda x: T(A) @ x)(T(X))
        np.testing.assert_allclose(npy(J), A, rtol=1e-12, atol=1e-14)
    H = hessian(lambda x: (x ** 3).sum())(T(X))
    np.testing.assert_allclose(npy(H), np.diag(6 * X), rtol=1e-12, atol=1e-14)


def test_jvp_and_vjp_are_transposes():
    f = lambda x: (T(A) @ x).sin()  # noqa: E731
    t = T(RNG.standard_normal(3))
    u = T(RNG.standard_normal(4))
    _, jv = jvp(f, (T(X),), (t,))
    _, fn = vjp(f, T(X))
    (vj,) = fn(u)
    assert float((u * jv).sum()) == pytest.approx(float((vj * t).sum()), rel=1e-12)
    np.testing.assert_allclose(npy(jv), np.cos(A @ X) * (A @ npy(t)), rtol=1e-12)


def test_linearize_reuses_one_run():
    calls = []

    def f(x):
        calls.append(1)
        return x.exp()

    out, fn = linearize(f, T(X))
    for _ in range(3):
        np.testing.assert_allclose(npy(fn(T([1.0, 0.0, 0.0]))), [np.exp(X[0]), 0, 0], rtol=1e-12)
    assert len(calls) == 1
    np.testing.assert_allclose(npy(out), np.exp(X), rtol=1e-12)


def test_vmap_matches_loop_and_warns_once(monkeypatch):
    from ferrograd.func import _vmap

    monkeypatch.setattr(_vmap, "_warned", False)
    xs = T(RNG.standard_normal((5, 3)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = vmap(lambda x: T(A) @ x)(xs)
        vmap(lambda x: x * 2)(xs)
    loop_warnings = [w for w in caught if "Python loop" in str(w.message)]
    assert len(loop_warnings) == 1 and loop_warnings[0].category is UserWarning
    np.testing.assert_allclose(npy(out), npy(xs) @ A.T, rtol=1e-12)


def test_vmap_grad_gives_per_sample_gradients():
    w = T(RNG.standard_normal(3))
    xs = T(RNG.standard_normal((6, 3)))
    per_sample = vmap(grad(lambda w, x: (w @ x) ** 2), in_dims=(None, 0))(w, xs)
    expected = 2 * (npy(xs) @ npy(w))[:, None] * npy(xs)
    np.testing.assert_allclose(npy(per_sample), expected, rtol=1e-12)


def test_vmap_randomness_error_mode():
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda x: x + ferrograd.rand(3, dtype=ferrograd.float64))(T(np.zeros((2, 3))))


def test_functional_call_restores_parameters_after_an_exception():
    lin = ferrograd.nn.Linear(3, 2).double()
    original = lin.weight

    def boom(*_):
        raise ValueError("boom")

    lin.register_forward_pre_hook(boom)
    with pytest.raises(ValueError, match="boom"):
        functional_call(lin, {"weight": T(np.zeros((2, 3)))}, (T(X),))
    assert lin.weight is original


def test_stack_module_state_vmap_ensemble():
    models = [ferrograd.nn.Linear(3, 2).double() for _ in range(3)]
    params, buffers = stack_module_state(models)
    x = T(X)
    out = vmap(lambda p, b: functional_call(models[0], (p, b), (x,)))(params, buffers)
    for i, m in enumerate(models):
        np.testing.assert_allclose(npy(out[i]), npy(m(x)), rtol=1e-12)


def test_transforms_leave_no_graph_on_plain_inputs():
    x = T(X)
    for result in (grad(lambda t: (t ** 2).sum())(x), jacrev(lambda t: t.exp())(x),
                   jacfwd(lambda t: t.exp())(x), hessian(lambda t: t.exp().sum())(x),
                   jvp(lambda t: t.exp(), (x,), (x,))[1]):
        assert not result.requires_grad and result.grad_fn is None
