"""addcmul, addcdiv and lerp as native fused ops (src/ops/pointwise.rs).

* the nodes PyTorch records: AddcmulBackward0, AddcdivBackward0, LerpBackward0 (number weight)
  and LerpBackward1 (tensor weight), for the in-place forms too;
* float32 and float64 results and gradients equal PyTorch's bit for bit (same operation order,
  the same fused multiply-adds), for contiguous, broadcast, transposed and sliced operands;
* the in-place forms write self in one pass: same tensor, one version bump, the op's node;
* integer addcmul, half precision, the value conversion and the errors as PyTorch.

The op table (tests/native/op_db.py) has the gradcheck / gradgradcheck rows.
"""

import numpy as np
import pytest

import ferrograd as fg

try:
    import torch
except ImportError:  # comparisons against PyTorch skip; the rest runs
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _arr(rng, shape, dtype, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


# operand layouts: (self, tensor1 / end, tensor2 / weight) shapes and views
LAYOUTS = {
    "contiguous": ((1031,), (1031,), (1031,), None),
    "broadcast": ((64, 70), (70,), (64, 1), None),
    "transposed": ((70, 64), (70, 64), (70, 64), "T"),
    "sliced": ((40, 50), (40, 50), (40, 50), "slice"),
}


def _make(lib, a, dtype, view):
    if view == "T":
        return lib.tensor(np.ascontiguousarray(a.T), dtype=dtype).t()
    if view == "slice":
        base = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
        base[..., ::2] = a
        return lib.tensor(base, dtype=dtype)[..., ::2]
    return lib.tensor(a, dtype=dtype)


def _inputs(layout, np_dtype, seed, weight=False):
    rng = np.random.default_rng(seed)
    s0, s1, s2, view = LAYOUTS[layout]
    x, a = _arr(rng, s0, np_dtype), _arr(rng, s1, np_dtype)
    b = _arr(rng, s2, np_dtype, -1.0, 2.0) if weight else _arr(rng, s2, np_dtype, 0.5, 3.0)
    return x, a, b, view


def _call(lib, name, x, a, b, kw, inplace):
    if name == "lerp":
        return x.lerp_(a, b) if inplace else lib.lerp(x, a, b)
    return getattr(x, name + "_")(a, b, **kw) if inplace else getattr(lib, name)(x, a, b, **kw)


CASES = (
    [("addcmul", {"value": v}) for v in (1, 0.3, -2.5)]
    + [("addcdiv", {"value": v}) for v in (1, 0.3, -2.5)]
    + [("lerp", {"weight": w}) for w in (0.3, 0.7, -0.6, 1.5, "tensor")]
)


def _case_id(c):
    return f"{c[0]}-{next(iter(c[1].values()))}"


def _run(lib, name, kw, x, a, b, view, dtype, inplace, grad):
    dt = getattr(lib, dtype)
    X, A = _make(lib, x, dt, view), _make(lib, a, dt, view)
    B = _make(lib, b, dt, view)
    if name == "lerp" and kw["weight"] != "tensor":
        B = kw["weight"]
    leaves = [t for t in (X, A, B) if isinstance(t, lib.Tensor)]
    if grad:
        for t in leaves:
            t.requires_grad_()
    self = X
    if inplace:  # a copy: transposed without a graph (ferrograd records none through a view's in-place op)
        self = X.clone(memory_format=lib.contiguous_format) if grad else X.clone()
    out = _call(lib, name, self, A, B, {k: v for k, v in kw.items() if k != "weight"}, inplace)
    grads = []
    if grad:
        g = lib.tensor(np.random.default_rng(5).uniform(-1, 1, size=tuple(out.shape)), dtype=dt)
        grads = lib.autograd.grad(out, leaves, g)
    return out, grads


@needs_torch
@pytest.mark.parametrize("inplace", [False, True], ids=["out", "inplace"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_bit_exact_with_torch(case, layout, dtype, inplace):
    name, kw = case
    x, a, b, view = _inputs(layout, dtype, seed=len(name) + len(layout), weight=name == "lerp")
    if inplace and layout == "broadcast":
        x = np.broadcast_to(x, np.broadcast_shapes(x.shape, a.shape, b.shape)).copy()
    grad = layout != "broadcast"  # broadcast gradients are sums: compared with a tolerance below
    f_out, f_grads = _run(fg, name, kw, x, a, b, view, dtype, inplace, grad)
    t_out, t_grads = _run(torch, name, kw, x, a, b, view, dtype, inplace, grad)
    assert f_out.dtype == getattr(fg, dtype)
    np.testing.assert_array_equal(f_out.detach().numpy(), t_out.detach().numpy())
    assert f_out.stride() == t_out.stride()
    for fgr, tgr in zip(f_grads, t_grads):
        np.testing.assert_array_equal(fgr.numpy(), tgr.numpy())


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_broadcast_gradients_match_torch(case):
    name, kw = case
    x, a, b, view = _inputs("broadcast", "float64", seed=3, weight=name == "lerp")
    f_out, f_grads = _run(fg, name, kw, x, a, b, view, "float64", False, True)
    t_out, t_grads = _run(torch, name, kw, x, a, b, view, "float64", False, True)
    assert len(f_grads) == len(t_grads)
    for fgr, tgr in zip(f_grads, t_grads):
        assert tuple(fgr.shape) == tuple(tgr.shape)
        np.testing.assert_allclose(fgr.numpy(), tgr.numpy(), rtol=1e-12, atol=1e-12)


def _grad_fn_cases(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    b = lib.tensor([2.0, 4.0, -3.0], requires_grad=True)
    w = lib.tensor([0.2, 0.7, 1.5], requires_grad=True)

    def inplace(method, *args, **kw):
        y = x * 1
        getattr(y, method)(*args, **kw)
        return y

    return {
        "addcmul": lib.addcmul(x, a, b, value=0.5),
        "addcmul_method": x.addcmul(a, b),
        "addcdiv": lib.addcdiv(x, a, b, value=-2),
        "lerp_scalar": lib.lerp(x, a, 0.3),
        "lerp_tensor": lib.lerp(x, a, w),
        "lerp_0d_weight": lib.lerp(x, a, lib.tensor(0.7, dtype=lib.float64, requires_grad=True)),
        "addcmul_": inplace("addcmul_", a, b, value=0.5),
        "addcdiv_": inplace("addcdiv_", a, b),
        "lerp_scalar_": inplace("lerp_", a, 0.8),
        "lerp_tensor_": inplace("lerp_", a, w),
        "lerp_tensor_const_": inplace("lerp_", a, w.detach()),
        "addcmul_self_only": lib.addcmul(x, a.detach(), b.detach()),
        "addcmul_plain_self_": lib.zeros(3).addcmul_(a, b),
    }


EXPECTED_NODES = {
    "addcmul": ("AddcmulBackward0", 3), "addcmul_method": ("AddcmulBackward0", 3),
    "addcdiv": ("AddcdivBackward0", 3), "lerp_scalar": ("LerpBackward0", 2),
    "lerp_tensor": ("LerpBackward1", 3), "lerp_0d_weight": ("LerpBackward1", 3),
    "addcmul_": ("AddcmulBackward0", 3), "addcdiv_": ("AddcdivBackward0", 3),
    "lerp_scalar_": ("LerpBackward0", 2), "lerp_tensor_": ("LerpBackward1", 3),
    "lerp_tensor_const_": ("LerpBackward1", 3), "addcmul_self_only": ("AddcmulBackward0", 3),
    "addcmul_plain_self_": ("AddcmulBackward0", 3),
}


def _edges(node):
    return [None if n is None else n.name().split("::")[-1] for n, _ in node.next_functions]


def test_grad_fn_names():
    for key, out in _grad_fn_cases(fg).items():
        name, n_inputs = EXPECTED_NODES[key]
        assert out.grad_fn.name() == name, key
        assert len(out.grad_fn.next_functions) == n_inputs, key
    # the in-place forms rebase self's history: their first edge is self's old node
    assert _grad_fn_cases(fg)["addcmul_"].grad_fn.next_functions[0][0].name() == "MulBackward0"


@needs_torch
def test_grad_fn_names_and_edges_match_torch():
    ours, theirs = _grad_fn_cases(fg), _grad_fn_cases(torch)
    for key in EXPECTED_NODES:
        assert ours[key].grad_fn.name() == theirs[key].grad_fn.name(), key
        assert _edges(ours[key].grad_fn) == _edges(theirs[key].grad_fn), key


def test_inplace_is_one_write_of_self():
    x = fg.tensor([1.0, 2.0, 3.0])
    a, b = fg.tensor([1.0, 2.0, 3.0]), fg.tensor([4.0, 5.0, 6.0])
    for op, args, kw in (("addcmul_", (a, b), {"value": 2}), ("addcdiv_", (a, b), {}), ("lerp_", (a, 0.3), {}),
                         ("lerp_", (a, b), {})):
        v, ptr = x._version, x.data_ptr()
        assert getattr(x, op)(*args, **kw) is x
        assert x._version == v + 1 and x.data_ptr() == ptr, op


def test_inplace_on_a_transposed_self_matches_out_of_place():
    rng = np.random.default_rng(7)
    base, t1, t2 = (rng.standard_normal((50, 40)).astype(np.float32) for _ in range(3))
    for op in ("addcmul", "addcdiv", "lerp"):
        x = fg.tensor(base).t()
        a, b = fg.tensor(t1).t(), fg.tensor(t2[:1]).t()  # b broadcast along dim 1
        kw = {} if op == "lerp" else {"value": 0.5}
        expected = getattr(fg, op)(x, a, b, **kw)
        stride = x.stride()
        getattr(x, op + "_")(a, b, **kw)
        assert x.stride() == stride
        np.testing.assert_array_equal(x.numpy(), expected.numpy())


def test_large_tensors_split_across_threads_match_numpy():
    # above the parallel threshold, broadcast and in place
    rng = np.random.default_rng(3)
    x = rng.standard_normal((600, 700))
    a, b = rng.standard_normal((700,)), rng.uniform(1, 2, (600, 1))
    X, A, B = fg.tensor(x), fg.tensor(a), fg.tensor(b)
    tol = {"rtol": 1e-13, "atol": 1e-13}  # numpy rounds the product, the kernels fuse it
    np.testing.assert_allclose(fg.addcmul(X, A, B, value=0.5).numpy(), x + 0.5 * a * b, **tol)
    np.testing.assert_allclose(fg.addcdiv(X, A, B, value=0.5).numpy(), x + 0.5 * a / b, **tol)
    np.testing.assert_allclose(fg.lerp(X, A, B).numpy(), x + b * (a - x), **tol)
    Y = X.clone()
    Y.addcmul_(A, B, value=-1.5)
    np.testing.assert_allclose(Y.numpy(), x - 1.5 * a * b, **tol)
    Y.lerp_(X, B)
    np.testing.assert_allclose(Y.numpy(), (x - 1.5 * a * b) + b * (1.5 * a * b), **tol)


def test_saved_tensor_changed_in_place_raises():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    a = fg.tensor([3.0, 4.0], requires_grad=True)
    b = fg.tensor([5.0, 6.0])
    y = x * 1
    y.addcmul_(a, b)
    b.add_(1)  # tensor1's gradient needs tensor2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_integer_addcmul():
    i = fg.tensor([1, 3, -4])
    assert fg.addcmul(i, i, i, value=2.7).tolist() == [3, 21, 28]
    assert fg.addcmul(i, i, i, value=-1.5).tolist() == [0, -6, -20]
    i8 = fg.tensor([100, -100, 7], dtype=fg.int8)
    wrap = lambda v: (v + 128) % 256 - 128  # noqa: E731
    assert fg.addcmul(i8, i8, i8, value=3).tolist() == [wrap(v + 3 * v * v) for v in (100, -100, 7)]
    y = fg.tensor([1, 2, 3])
    y.addcmul_(i, i, value=2)
    assert y.tolist() == [3, 20, 35]


@needs_torch
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
@pytest.mark.parametrize("value", [1, 3, -2, 2.9, -1.5, True])
def test_integer_addcmul_matches_torch(dtype, value):
    if dtype == "uint8" and isinstance(value, float) and value < 0:
        pytest.skip("an error (the same): see test_errors_match_torch")
    rng = np.random.default_rng(1)
    lo, hi = (0, 255) if dtype == "uint8" else (-100, 100)
    x, a, b = (rng.integers(lo, hi, size=(5, 6)) for _ in range(3))
    res = [lib.addcmul(lib.tensor(x, dtype=getattr(lib, dtype)), lib.tensor(a, dtype=getattr(lib, dtype)),
                       lib.tensor(b[:, :1], dtype=getattr(lib, dtype)), value=value) for lib in (fg, torch)]
    assert str(res[0].dtype) == str(res[1].dtype)
    np.testing.assert_array_equal(res[0].numpy(), res[1].numpy())


@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["addcmul", "addcdiv", "lerp", "lerp_tensor"])
def test_half_precision_matches_torch(dtype, name):
    rng = np.random.default_rng(2)
    x, a, b = (rng.uniform(0.5, 2, size=(300,)).astype(np.float32) for _ in range(3))
    res = []
    for lib in (fg, torch):
        X, A, B = (lib.tensor(v).to(getattr(lib, dtype)) for v in (x, a, b))
        if name == "lerp":
            out = lib.lerp(X, A, 0.3)
        elif name == "lerp_tensor":
            out = lib.lerp(X, A, B - 1)
        else:
            out = getattr(lib, name)(X, A, B, value=0.7)
        res.append(out.float().numpy())
    np.testing.assert_array_equal(res[0], res[1])


@needs_torch
def test_mixed_dtypes_match_torch():
    rng = np.random.default_rng(4)
    x, a, b = (rng.uniform(0.5, 2, size=(4, 5)) for _ in range(3))

    def cases(lib):
        f32 = lambda v: lib.tensor(v, dtype=lib.float32)  # noqa: E731
        f64 = lambda v: lib.tensor(v, dtype=lib.float64)  # noqa: E731
        i64 = lambda v: lib.tensor((v * 10).astype(np.int64))  # noqa: E731
        return [
            lambda: lib.addcmul(f32(x), f64(a), f32(b), value=0.3),
            lambda: lib.addcmul(i64(x), f32(a), i64(b), value=2),
            lambda: lib.addcdiv(i64(x), i64(a), f32(b)),
            lambda: lib.addcmul(f32(x), f32(a), lib.tensor(2.0, dtype=lib.float64)),
            lambda: lib.lerp(f32(x), f32(a), lib.tensor(0.6, dtype=lib.float64)),
            lambda: lib.lerp(f32(x), f32(a), lib.tensor(1)),
            lambda: f32(x).addcmul_(f64(a), f64(b), value=0.1),
            lambda: f32(x).lerp_(f32(a), lib.tensor(0.6, dtype=lib.float64)),
        ]

    for k, (f, t) in enumerate(zip(cases(fg), cases(torch))):
        ours, theirs = f(), t()
        assert str(ours.dtype) == str(theirs.dtype), k
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@needs_torch
def test_mixed_dtype_gradients_match_torch():
    rng = np.random.default_rng(6)
    x, a, b = (rng.uniform(0.5, 2, size=(4, 5)) for _ in range(3))
    res = []
    for lib in (fg, torch):
        X = lib.tensor(x, dtype=lib.float32, requires_grad=True)
        A = lib.tensor(a, dtype=lib.float64, requires_grad=True)
        B = lib.tensor(b, dtype=lib.float32, requires_grad=True)
        W = lib.tensor(0.3, dtype=lib.float64, requires_grad=True)
        out = lib.addcdiv(X, A, B, value=0.5).sum() + lib.lerp(X, B, W).sum()
        res.append([(str(g.dtype), g.numpy()) for g in lib.autograd.grad(out, [X, A, B, W])])
    for (d0, g0), (d1, g1) in zip(*res):
        assert d0 == d1
        np.testing.assert_allclose(g0, g1, rtol=1e-6)


def _error(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


def _error_cases(lib):
    f, d, i = lib.ones(2), lib.ones(2, dtype=lib.float64), lib.ones(2, dtype=lib.int64)
    i8, u8 = lib.ones(2, dtype=lib.int8), lib.ones(2, dtype=lib.uint8)
    h = lib.ones(2, dtype=lib.float16)
    leaf = lambda: lib.ones(2, requires_grad=True)  # noqa: E731
    return [
        # the value as the kernel's type, with c10's overflow check
        lambda: lib.addcmul(f, f, f, value=1e40),
        lambda: lib.addcmul(h, h, h, value=1e39),
        lambda: lib.addcmul(i8, i8, i8, value=300),
        lambda: lib.addcmul(u8, u8, u8, value=300),
        lambda: lib.addcmul(u8, u8, u8, value=-256),
        lambda: lib.addcmul(u8, u8, u8, value=-1.5),
        lambda: lib.addcmul(i, i, i, value=float("nan")),
        lambda: lib.addcmul(i, i, i, value=1e30),
        lambda: lib.addcmul(f, f, f, value=2**64),
        lambda: lib.addcdiv(f, f, f, value=-1e39),
        lambda: lib.lerp(f, f, 1e40),
        lambda: f.clone().lerp_(f, -1e40),
        # arguments
        lambda: lib.addcmul(f, f, f, value=lib.ones(2)),
        lambda: lib.addcmul(f, f, f, value=lib.ones(1)),
        lambda: f.addcmul(2, f),
        lambda: f.addcdiv(f, None),
        lambda: f.addcmul_(f, f, value=None),
        lambda: f.lerp(2, 0.5),
        lambda: f.lerp(2, f),
        lambda: f.lerp(f, None),
        lambda: f.lerp_(f, "a"),
        lambda: lib.lerp(f, f, None),
        # shapes
        lambda: lib.addcmul(f, lib.ones(3), f),
        lambda: lib.addcdiv(lib.ones(3), f, f),
        lambda: lib.lerp(f, f, lib.ones(3)),
        lambda: f.clone().addcdiv_(lib.ones(2, 1), f),
        lambda: f.clone().lerp_(lib.ones(2, 1), 0.5),
        lambda: f.clone().lerp_(f, lib.ones(3, 2)),
        lambda: lib.ones(1).expand(2).addcmul_(f, f),
        lambda: (lambda z: z[1:].addcmul_(z[:2], z[:2]))(lib.ones(3)),
        # autograd
        lambda: leaf().addcmul_(f, f),
        lambda: leaf().addcmul_(lib.ones(3), f),
        lambda: leaf().lerp_(f, d),
        lambda: leaf().addcdiv_(i, i),
        # dtypes
        lambda: i.clone().addcmul_(f, f),
        lambda: i.clone().addcdiv_(f, i),
        lambda: lib.tensor([True]).addcmul_(lib.tensor([True]), lib.tensor([True])),
        lambda: lib.lerp(i, i, lib.tensor(1)),
        lambda: lib.lerp(i, i, 0.5),
        lambda: i.clone().lerp_(i, lib.tensor(0.5)),
        lambda: lib.lerp(f, f, lib.ones(2, dtype=lib.int64)),
        lambda: d.clone().lerp_(d, f),
    ]


@needs_torch
def test_errors_match_torch():
    for k, (t_case, f_case) in enumerate(zip(_error_cases(torch), _error_cases(fg))):
        expected = _error(t_case)
        assert expected is not None, k
        assert _error(f_case) == expected, k


@needs_torch
def test_values_torch_accepts():
    def cases(lib):
        f, i, u8 = lib.ones(3), lib.ones(3, dtype=lib.int64), lib.ones(3, dtype=lib.uint8)
        return [
            lambda: lib.addcmul(f, f, f, value=float("inf")),
            lambda: lib.addcmul(f, f, f, value=float("nan")),
            lambda: lib.addcmul(f, f, f, value=2**63),
            lambda: lib.addcmul(f, f, f, value=lib.tensor(2.5)),
            lambda: lib.addcmul(f, f, f, value=np.float32(0.1)),
            lambda: lib.addcmul(i, i, i, value=True),
            lambda: lib.addcmul(u8, u8, u8, value=-255),
            lambda: lib.lerp(f, f * 3, True),
            lambda: lib.lerp(f, f * 3, np.float64(0.25)),
            lambda: lib.addcdiv(lib.ones(3, dtype=lib.float64), f, f, value=1e300),
            # a 0-d float weight promotes an integer or bool self
            lambda: lib.lerp(i, i * 3, lib.tensor(0.25)),
            lambda: lib.lerp(i, i * 3, lib.tensor(0.25, dtype=lib.float64)),
            lambda: lib.lerp(lib.ones(3, dtype=lib.bool), lib.ones(3, dtype=lib.bool), lib.tensor(0.3)),
            lambda: lib.lerp(lib.ones(3, dtype=lib.float16), lib.ones(3, dtype=lib.float16) * 3,
                             lib.tensor(0.3, dtype=lib.float64)),
        ]

    for k, (t_case, f_case) in enumerate(zip(cases(torch), cases(fg))):
        theirs, ours = t_case(), f_case()
        assert str(ours.dtype) == str(theirs.dtype), k
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_number_divided_by_tensor_gradient():
    # addcdiv's tensor1 gradient is `grad * (value / tensor2)`: `torch.div(number, t)`
    # (DivBackward0) must differentiate through its number numerator, to any order
    x = fg.tensor([2.0, -0.5, 4.0], dtype=fg.float64, requires_grad=True)
    y = fg.div(3, x)
    assert y.grad_fn.name() == "DivBackward0"
    (g,) = fg.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(g.numpy(), -3 / np.array([2.0, -0.5, 4.0]) ** 2)
    assert fg.autograd.gradcheck(lambda t: fg.div(3, t), (x,))
    assert fg.autograd.gradgradcheck(lambda t: fg.div(-1.5, t), (x,))
