"""Tests for ``ferrograd.autograd.functional`` (jacobian, hessian, vjp, jvp, hvp, vhp).

Closed-form tests (numpy references, float64) always run; parity tests compare values and
the exact output structure (tuples vs single Tensors) with PyTorch and skip without it.
"""

import numpy as np
import pytest

import ferrograd
from ferrograd.autograd import functional as F

RNG = np.random.default_rng(0)
A_NP = RNG.standard_normal((4, 3))
B_NP = RNG.standard_normal((4, 2))
Q_NP = RNG.standard_normal((3, 3))
X_NP = RNG.standard_normal(3)
Y_NP = RNG.standard_normal(3)


def T(a, requires_grad=False):
    return ferrograd.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def npy(t):
    return t.detach().numpy()


# --- closed forms (always run) ---------------------------------------------------------


def test_jacobian_of_linear_map_is_matrix():
    A = T(A_NP)
    jac = F.jacobian(lambda x: A @ x, T(X_NP))
    assert isinstance(jac, ferrograd.Tensor)
    assert tuple(jac.shape) == (4, 3)
    np.testing.assert_allclose(npy(jac), A_NP, rtol=1e-12, atol=1e-12)
    assert not jac.requires_grad


def test_jacobian_two_inputs_gives_tuple_of_blocks():
    A, B = T(A_NP), T(B_NP)
    jac = F.jacobian(lambda x, y: A @ x + B @ y, (T(X_NP), T([0.5, -1.0])))
    assert isinstance(jac, tuple) and len(jac) == 2
    np.testing.assert_allclose(npy(jac[0]), A_NP, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(npy(jac[1]), B_NP, rtol=1e-12, atol=1e-12)


def test_jacobian_tuple_output_nested_structure_and_shapes():
    x = T(RNG.standard_normal((2, 3)))
    y = T(Y_NP)
    jac = F.jacobian(lambda x, y: (x * 2.0, (y ** 2).sum()), (x, y))
    assert isinstance(jac, tuple) and len(jac) == 2
    assert all(isinstance(row, tuple) and len(row) == 2 for row in jac)
    assert tuple(jac[0][0].shape) == (2, 3, 2, 3)
    assert tuple(jac[0][1].shape) == (2, 3, 3)
    assert tuple(jac[1][0].shape) == (2, 3)
    assert tuple(jac[1][1].shape) == (3,)
    np.testing.assert_allclose(npy(jac[0][0]), 2.0 * np.eye(6).reshape(2, 3, 2, 3))
    np.testing.assert_allclose(npy(jac[0][1]), np.zeros((2, 3, 3)))
    np.testing.assert_allclose(npy(jac[1][0]), np.zeros((2, 3)))
    np.testing.assert_allclose(npy(jac[1][1]), 2.0 * Y_NP, rtol=1e-12)


def test_jacobian_elementwise_is_diagonal():
    jac = F.jacobian(lambda x: x.exp() * x, T(X_NP))
    np.testing.assert_allclose(npy(jac), np.diag(np.exp(X_NP) * (1 + X_NP)), rtol=1e-12)


def test_hessian_of_sum_cubes_is_diag_6x():
    hes = F.hessian(lambda x: (x ** 3).sum(), T(X_NP))
    assert isinstance(hes, ferrograd.Tensor) and tuple(hes.shape) == (3, 3)
    np.testing.assert_allclose(npy(hes), np.diag(6 * X_NP), rtol=1e-12, atol=1e-12)


def test_hessian_quadratic_plus_cubic():
    Q = T(Q_NP)
    hes = F.hessian(lambda x: x @ (Q @ x) + (x ** 3).sum(), T(X_NP))
    expected = Q_NP + Q_NP.T + np.diag(6 * X_NP)
    np.testing.assert_allclose(npy(hes), expected, rtol=1e-12, atol=1e-12)


def test_hessian_two_inputs_blocks():
    # f(x, y) = sum(x * y): d2f/dx2 = d2f/dy2 = 0 (zeros, not errors), cross blocks = I
    hes = F.hessian(lambda x, y: (x * y).sum(), (T(X_NP), T(Y_NP)))
    assert isinstance(hes, tuple) and all(isinstance(r, tuple) and len(r) == 2 for r in hes)
    np.testing.assert_allclose(npy(hes[0][0]), np.zeros((3, 3)))
    np.testing.assert_allclose(npy(hes[0][1]), np.eye(3))
    np.testing.assert_allclose(npy(hes[1][0]), np.eye(3))
    np.testing.assert_allclose(npy(hes[1][1]), np.zeros((3, 3)))


def test_hvp_and_vhp_match_hessian_times_v():
    Q = T(Q_NP)
    v_np = RNG.standard_normal(3)
    f = lambda x: x @ (Q @ x) + (x ** 3).sum()  # noqa: E731
    H = Q_NP + Q_NP.T + np.diag(6 * X_NP)
    value = X_NP @ Q_NP @ X_NP + (X_NP ** 3).sum()
    out, hv = F.hvp(f, T(X_NP), T(v_np))
    np.testing.assert_allclose(out.item(), value, rtol=1e-12)
    np.testing.assert_allclose(npy(hv), H @ v_np, rtol=1e-12, atol=1e-12)
    out, vh = F.vhp(f, T(X_NP), T(v_np))
    np.testing.assert_allclose(npy(vh), v_np @ H, rtol=1e-12, atol=1e-12)
    assert not hv.requires_grad and not vh.requires_grad and not out.requires_grad


def test_vjp_of_linear_map():
    A = T(A_NP)
    v_np = RNG.standard_normal(4)
    out, vj = F.vjp(lambda x: A @ x, T(X_NP), T(v_np))
    np.testing.assert_allclose(npy(out), A_NP @ X_NP, rtol=1e-12)
    np.testing.assert_allclose(npy(vj), v_np @ A_NP, rtol=1e-12)


def test_vjp_scalar_output_default_v_is_gradient():
    out, g = F.vjp(lambda x: (x ** 3).sum(), T(X_NP))
    np.testing.assert_allclose(npy(g), 3 * X_NP ** 2, rtol=1e-12)


def test_jvp_of_linear_and_elementwise():
    A = T(A_NP)
    v_np = RNG.standard_normal(3)
    out, jv = F.jvp(lambda x: A @ x, T(X_NP), T(v_np))
    np.testing.assert_allclose(npy(jv), A_NP @ v_np, rtol=1e-12)
    out, jv = F.jvp(lambda x: x.exp(), T(X_NP), T(v_np))
    np.testing.assert_allclose(npy(out), np.exp(X_NP), rtol=1e-12)
    np.testing.assert_allclose(npy(jv), np.exp(X_NP) * v_np, rtol=1e-12)


def test_jvp_tuple_inputs_and_outputs():
    A, B = T(A_NP), T(B_NP)
    vx, vy = RNG.standard_normal(3), RNG.standard_normal(2)
    out, jv = F.jvp(lambda x, y: (A @ x + B @ y, x * 3.0), (T(X_NP), T([1.0, 2.0])), (T(vx), T(vy)))
    assert isinstance(out, tuple) and isinstance(jv, tuple) and len(jv) == 2
    np.testing.assert_allclose(npy(jv[0]), A_NP @ vx + B_NP @ vy, rtol=1e-12)
    np.testing.assert_allclose(npy(jv[1]), 3.0 * vx, rtol=1e-12)


def test_independent_input_gives_zeros_or_strict_error():
    x, y = T(X_NP), T(Y_NP)
    f = lambda x, y: x * 2.0  # noqa: E731
    jac = F.jacobian(f, (x, y))
    np.testing.assert_allclose(npy(jac[1]), np.zeros((3, 3)))
    _, vj = F.vjp(f, (x, y), T(np.ones(3)))
    np.testing.assert_allclose(npy(vj[1]), np.zeros(3))
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        F.jacobian(f, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1. This is not allowed in strict mode"):
        F.vjp(f, (x, y), T(np.ones(3)), strict=True)


def test_strict_hessian_of_linear_function_raises():
    with pytest.raises(RuntimeError,
                       match="jacobian of the user-provided function with respect to input 0 is independent"):
        F.hessian(lambda x: (x * 2.0).sum(), T(X_NP), strict=True)


def test_inputs_not_modified_and_grad_mode_restored():
    x = T(X_NP, requires_grad=True)
    with ferrograd.no_grad():
        jac = F.jacobian(lambda x: x ** 2, x)
        assert not ferrograd.is_grad_enabled()
    np.testing.assert_allclose(npy(jac), np.diag(2 * X_NP), rtol=1e-12)
    assert x.grad is None and x.requires_grad


def test_create_graph_lets_gradients_flow_to_inputs():
    # d/dx sum(J(x)) for f(x) = x**3 (J = diag(3x^2)) is 6x
    x = T(X_NP, requires_grad=True)
    jac = F.jacobian(lambda x: x ** 3, x, create_graph=True)
    assert jac.requires_grad
    jac.sum().backward()
    np.testing.assert_allclose(npy(x.grad), 6 * X_NP, rtol=1e-12)


def test_error_messages_for_bad_arguments():
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor or a tuple"):
        F.jacobian(lambda x: x, [1.0])
    with pytest.raises(RuntimeError, match="The vector v can only be None"):
        F.vjp(lambda x: x * 2.0, T(X_NP))
    with pytest.raises(RuntimeError,
                       match=r"v has invalid size: should be torch.Size\(\[3\]\) but got torch.Size\(\[2\]\)"):
        F.jvp(lambda x: x * 2.0, T(X_NP), T([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="The function given to hvp should return a single Tensor"):
        F.hvp(lambda x: (x.sum(), x.sum()), T(X_NP), T(X_NP))
    with pytest.raises(RuntimeError, match="should contain a single element"):
        F.hessian(lambda x: x ** 2, T(X_NP))


def test_forward_mode_raises_not_implemented():
    with pytest.raises(NotImplementedError, match="forward-mode"):
        F.jacobian(lambda x: x * 2.0, T(X_NP), strategy="forward-mode", vectorize=True)


def test_vectorize_gives_the_closed_form():
    x = T(X_NP)
    jac = F.jacobian(lambda x: (x.exp(), (x * x).sum()), x, vectorize=True)
    np.testing.assert_allclose(jac[0].numpy(), np.diag(np.exp(X_NP)), rtol=1e-12)
    np.testing.assert_allclose(jac[1].numpy(), 2 * np.asarray(X_NP), rtol=1e-12)
    h = F.hessian(lambda x: (x ** 3).sum(), x, vectorize=True)
    np.testing.assert_allclose(h.numpy(), np.diag(6 * np.asarray(X_NP)), rtol=1e-12)
    # an input the output does not depend on gets zeros
    a, b = F.jacobian(lambda x, y: x * 2.0, (x, T([1.0, 2.0])), vectorize=True)
    np.testing.assert_allclose(a.numpy(), 2 * np.eye(len(X_NP)))
    np.testing.assert_allclose(b.numpy(), np.zeros((len(X_NP), 2)))


def test_grad_is_grads_batched():
    x = ferrograd.tensor([1.0, 2.0, 3.0], dtype=ferrograd.float64, requires_grad=True)
    z = ferrograd.tensor([1.0, 2.0], dtype=ferrograd.float64, requires_grad=True)
    y = x * x
    (g,) = ferrograd.autograd.grad(y, x, ferrograd.eye(3, dtype=ferrograd.float64),
                                   is_grads_batched=True, retain_graph=True)
    np.testing.assert_allclose(g.numpy(), np.diag([2.0, 4.0, 6.0]))
    g, gz = ferrograd.autograd.grad(y, [x, z], 2 * ferrograd.eye(3, dtype=ferrograd.float64),
                                    is_grads_batched=True, allow_unused=True, retain_graph=True)
    np.testing.assert_allclose(g.numpy(), np.diag([4.0, 8.0, 12.0]))
    assert gz is None
    with pytest.raises(RuntimeError, match="we interpret the first dimension of each grad_output"):
        ferrograd.autograd.grad(y, x, ferrograd.ones(4, 2), is_grads_batched=True)
    # the graph is freed after the last slice unless retain_graph
    ferrograd.autograd.grad(y, x, ferrograd.eye(3, dtype=ferrograd.float64), is_grads_batched=True)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        ferrograd.autograd.grad(y, x, ferrograd.eye(3, dtype=ferrograd.float64), is_grads_batched=True)


def test_registered_in_autograd():
    import ferrograd.autograd as ag

    assert ag.functional is F
    assert "functional" in ag.__all__


# --- parity with PyTorch ---------------------------------------------------------------


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _to(lib, a):
    return lib.tensor(np.asarray(a, dtype=np.float64))


def _convert(lib, obj):
    if isinstance(obj, tuple):
        return tuple(_convert(lib, o) for o in obj)
    return _to(lib, obj)


def _assert_same(ours, ref, torch):
    if isinstance(ref, tuple):
        assert isinstance(ours, tuple), f"expected tuple, got {type(ours).__name__}"
        assert len(ours) == len(ref)
        for o, r in zip(ours, ref):
            _assert_same(o, r, torch)
        return
    assert isinstance(ref, torch.Tensor)
    assert isinstance(ours, ferrograd.Tensor), f"expected Tensor, got {type(ours).__name__}"
    assert tuple(ours.shape) == tuple(ref.shape)
    assert str(ours.dtype) == str(ref.dtype)
    assert ours.requires_grad == ref.requires_grad
    np.testing.assert_allclose(npy(ours), ref.detach().numpy(), rtol=1e-10, atol=1e-12)


# Each function takes the library module first so that constants are built in that library.
def f_elementwise(lib, x):
    return x.exp() * x.sin() + x ** 2


def f_matmul(lib, x):
    return _to(lib, A_NP) @ x.tanh()


def f_scalar2(lib, x, y):
    return (x * x * y).sum() + (x.sin() * y.exp()).sum()


def f_tuple_out(lib, x, y):
    return x * y.cos(), (x ** 2).sum() * y


def f_scalar1(lib, x):
    return (x.exp() * x ** 3).sum()


X2_NP = RNG.standard_normal((2, 3))

# name -> (function, numpy inputs, numpy v for vjp)
CASES = {
    "elementwise": (f_elementwise, X2_NP, RNG.standard_normal((2, 3))),
    "matmul": (f_matmul, X_NP, RNG.standard_normal(4)),
    "scalar2": (f_scalar2, (X_NP, Y_NP), 1.5),
    "tuple_out": (f_tuple_out, (X_NP, Y_NP), (RNG.standard_normal(3), RNG.standard_normal(3))),
    "scalar1": (f_scalar1, X_NP, 0.5),
}
SCALAR_CASES = ["scalar2", "scalar1"]


def _jvp_v(inputs):
    if isinstance(inputs, tuple):
        return tuple(np.cos(np.arange(np.size(i), dtype=np.float64)).reshape(np.shape(i)) for i in inputs)
    return np.cos(np.arange(np.size(inputs), dtype=np.float64)).reshape(np.shape(inputs))


def _run(lib, api, name, **kwargs):
    fn, inputs, v = CASES[name]
    func = lambda *a: fn(lib, *a)  # noqa: E731
    ins = _convert(lib, inputs)
    if api in ("jacobian", "hessian"):
        return getattr(lib.autograd.functional, api)(func, ins, **kwargs)
    if api in ("jvp", "hvp", "vhp"):
        v = _jvp_v(inputs)
    return getattr(lib.autograd.functional, api)(func, ins, _convert(lib, v), **kwargs)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("api", ["jacobian", "vjp", "jvp"])
def test_parity_general(torch, api, name):
    _assert_same(_run(ferrograd, api, name), _run(torch, api, name), torch)


@pytest.mark.parametrize("name", SCALAR_CASES)
@pytest.mark.parametrize("api", ["hessian", "hvp", "vhp"])
def test_parity_scalar(torch, api, name):
    _assert_same(_run(ferrograd, api, name), _run(torch, api, name), torch)


def test_parity_vjp_default_v_and_jacobian_single_output(torch):
    # jacobian of a single-element output and the v=None vjp path
    fn = lambda lib: (lambda x, y: (x * y).sum())  # noqa: E731
    ins = (X_NP, Y_NP)
    for api in ("jacobian", "vjp"):
        ours = getattr(F, api)(fn(ferrograd), _convert(ferrograd, ins))
        ref = getattr(torch.autograd.functional, api)(fn(torch), _convert(torch, ins))
        _assert_same(ours, ref, torch)


@pytest.mark.parametrize("api", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"])
def test_parity_create_graph_backprop_to_inputs(torch, api):
    name = "scalar2" if api in ("hessian", "hvp", "vhp") else "tuple_out"
    fn, inputs, v = CASES[name]

    def run(lib):
        ins = tuple(lib.tensor(a, requires_grad=True) for a in inputs)
        func = lambda *a: fn(lib, *a)  # noqa: E731
        if api in ("jacobian", "hessian"):
            res = getattr(lib.autograd.functional, api)(func, ins, create_graph=True)
        else:
            vv = _jvp_v(inputs) if api in ("jvp", "hvp", "vhp") else v
            res = getattr(lib.autograd.functional, api)(func, ins, _convert(lib, vv), create_graph=True)
        flat = []

        def walk(r):
            if isinstance(r, tuple):
                for e in r:
                    walk(e)
            elif r.requires_grad:
                flat.append((r * r).sum())

        walk(res)
        sum(flat).backward()
        return res, tuple(i.grad for i in ins)

    ours, ours_grads = run(ferrograd)
    ref, ref_grads = run(torch)
    _assert_same(ours, ref, torch)
    for o, r in zip(ours_grads, ref_grads):
        assert (o is None) == (r is None)
        if r is not None:
            np.testing.assert_allclose(npy(o), r.numpy(), rtol=1e-10, atol=1e-12)


STRICT_CALLS = [
    ("jacobian", lambda x, y: x * 2.0, None),
    ("vjp", lambda x, y: x * 2.0, "out"),
    ("jvp", lambda x, y: x * 2.0, "in"),
    ("jvp", lambda x, y: (x * 2.0, y.detach()), "in"),
    ("hessian", lambda x, y: (x ** 3).sum(), None),
    ("hessian", lambda x, y: (x * 2.0 + y).sum(), None),
    ("hvp", lambda x, y: (x * 2.0 + y).sum(), "in"),
    ("vhp", lambda x, y: (x ** 3).sum(), "in"),
    ("vhp", lambda x, y: (x * 2.0).sum() + (y ** 2).sum(), "in"),
]


@pytest.mark.parametrize("api,fn,vkind", STRICT_CALLS)
@pytest.mark.parametrize("strict", [False, True])
def test_parity_strict(torch, api, fn, vkind, strict):
    def run(lib):
        ins = _convert(lib, (X_NP, Y_NP))
        args = [fn, ins]
        if vkind == "in":
            args.append(_convert(lib, (X_NP, Y_NP)))
        elif vkind == "out":
            args.append(_to(lib, np.ones(3)))
        try:
            return getattr(lib.autograd.functional, api)(*args, strict=strict)
        except RuntimeError as e:
            return e

    ours, ref = run(ferrograd), run(torch)
    if isinstance(ref, RuntimeError):
        assert isinstance(ours, RuntimeError), f"expected RuntimeError {ref}, got {ours}"
        assert str(ours) == str(ref)
    else:
        assert not isinstance(ours, RuntimeError), str(ours)
        _assert_same(ours, ref, torch)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, F_: F_.jacobian(lambda x: x, [1.0]),
        lambda lib, F_: F_.jacobian(lambda x: x, (_to(lib, X_NP), 2.0)),
        lambda lib, F_: F_.vjp(lambda x: x * 2.0, _to(lib, X_NP)),
        lambda lib, F_: F_.vjp(lambda x: x * 2.0, _to(lib, X_NP), (_to(lib, X_NP), _to(lib, X_NP))),
        lambda lib, F_: F_.jvp(lambda x, y: x * y, (_to(lib, X_NP), _to(lib, Y_NP)), (_to(lib, X_NP), _to(lib, [1.0]))),
        lambda lib, F_: F_.jvp(lambda x: x * 2.0, _to(lib, X_NP)),
        lambda lib, F_: F_.hvp(lambda x: x * 2.0, _to(lib, X_NP), _to(lib, X_NP)),
        lambda lib, F_: F_.vhp(lambda x: (x.sum(), x.sum()), _to(lib, X_NP), _to(lib, X_NP)),
        lambda lib, F_: F_.hessian(lambda x: x * 2.0, _to(lib, X_NP)),
        lambda lib, F_: F_.hessian(lambda x: (x.sum(),), _to(lib, X_NP)),
        lambda lib, F_: F_.jacobian(lambda x: x, _to(lib, X_NP), strategy="sideways"),
    ],
)
def test_parity_errors(torch, call):
    with pytest.raises(Exception) as ref:
        call(torch, torch.autograd.functional)
    with pytest.raises(Exception) as ours:
        call(ferrograd, F)
    assert type(ours.value) is type(ref.value)
    # torch prints types as <class 'torch.Tensor'>/<class 'float'>; both are plain Python types here
    assert str(ours.value) == str(ref.value)


def test_vectorize_matches_torch(torch):
    x_np = np.array([0.3, -1.2, 0.8])

    def f(lib):
        return lambda x, y: (x.exp() * y.sum(), (x * x).sum() * y)

    ours = F.jacobian(f(ferrograd), (_to(ferrograd, x_np), _to(ferrograd, [1.0, 2.0])), vectorize=True)
    theirs = torch.autograd.functional.jacobian(
        f(torch), (_to(torch, x_np), _to(torch, [1.0, 2.0])), vectorize=True)
    for a_row, b_row in zip(ours, theirs):
        for a, b in zip(a_row, b_row):
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
