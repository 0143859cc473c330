"""The dtypes beyond float32/float64/int64/bool: uint8, int8, int16, int32, float16, bfloat16.

Storage-only dtypes compute as PyTorch's CPU kernels do: float16/bfloat16 in float32, rounded
back; the narrow integers in int64, wrapped back (so overflow wraps). Literal expectations are
PyTorch 2.x's values; where torch is installed the same cases are also compared with it.
"""

import pickle

import numpy as np
import pytest

import ferrograd as torch

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64"]
SHORT = ["b", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"]
BY_SHORT = dict(zip(SHORT, NAMES))

# torch.promote_types(row, column), from PyTorch 2.x
PROMOTE = {
    "b": "b u8 i8 i16 i32 i64 f16 bf16 f32 f64",
    "u8": "u8 u8 i16 i16 i32 i64 f16 bf16 f32 f64",
    "i8": "i8 i16 i8 i16 i32 i64 f16 bf16 f32 f64",
    "i16": "i16 i16 i16 i16 i32 i64 f16 bf16 f32 f64",
    "i32": "i32 i32 i32 i32 i32 i64 f16 bf16 f32 f64",
    "i64": "i64 i64 i64 i64 i64 i64 f16 bf16 f32 f64",
    "f16": "f16 f16 f16 f16 f16 f16 f16 f32 f32 f64",
    "bf16": "bf16 bf16 bf16 bf16 bf16 bf16 f32 bf16 f32 f64",
    "f32": "f32 f32 f32 f32 f32 f32 f32 f32 f32 f64",
    "f64": "f64 f64 f64 f64 f64 f64 f64 f64 f64 f64",
}


def dt(name):
    return getattr(torch, name)


def test_dtype_objects_names_and_aliases():
    sizes = [1, 1, 1, 2, 4, 8, 2, 2, 4, 8]
    for name, size in zip(NAMES, sizes):
        d = dt(name)
        assert repr(d) == f"torch.{name}"
        assert d.itemsize == size
        assert d.is_floating_point == (name.startswith("float") or name == "bfloat16")
        assert d.is_signed == (name not in ("bool", "uint8"))
        assert pickle.loads(pickle.dumps(d)) is d
    assert torch.int is torch.int32 and torch.short is torch.int16
    assert torch.half is torch.float16 and torch.long is torch.int64


@pytest.mark.parametrize("a", SHORT)
def test_promote_types_table(a):
    got = [torch.promote_types(dt(BY_SHORT[a]), dt(BY_SHORT[b])) for b in SHORT]
    assert got == [dt(BY_SHORT[s]) for s in PROMOTE[a].split()]


def test_result_type_and_can_cast():
    i8 = torch.ones(2, dtype=torch.int8)
    assert torch.result_type(i8, 2.5) is torch.float32
    assert torch.result_type(i8, 1000) is torch.int8
    assert torch.result_type(i8, torch.tensor(1.5, dtype=torch.float16)) is torch.float16
    assert torch.result_type(torch.ones(2, dtype=torch.uint8), torch.ones(2, dtype=torch.int8)) \
        is torch.int16
    assert [torch.can_cast(torch.float32, dt(n)) for n in NAMES] == [False] * 6 + [True] * 4
    assert [torch.can_cast(torch.int8, dt(n)) for n in NAMES] == [False] + [True] * 9
    assert all(torch.can_cast(torch.bool, dt(n)) for n in NAMES)


def test_iinfo_finfo():
    assert repr(torch.iinfo(torch.int8)) == "iinfo(min=-128, max=127, dtype=int8)"
    assert (torch.iinfo(torch.uint8).min, torch.iinfo(torch.uint8).max) == (0, 255)
    assert torch.iinfo(torch.int32).bits == 32 and torch.iinfo(torch.int16).max == 32767
    assert repr(torch.finfo(torch.float16)) == (
        "finfo(resolution=0.001, min=-65504, max=65504, eps=0.000976562, "
        "smallest_normal=6.10352e-05, tiny=6.10352e-05, dtype=float16)")
    assert repr(torch.finfo(torch.bfloat16)) == (
        "finfo(resolution=0.01, min=-3.38953e+38, max=3.38953e+38, eps=0.0078125, "
        "smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=bfloat16)")
    assert torch.finfo().dtype == "float32" and torch.finfo(torch.float64).eps == 2.0**-52
    with pytest.raises(TypeError, match=r"torch.iinfo\(\) requires an integer input type"):
        torch.iinfo(torch.float32)
    with pytest.raises(TypeError, match=r"torch.finfo\(\) requires a floating point input type"):
        torch.finfo(torch.int32)


@pytest.mark.parametrize("name", NAMES)
def test_creation_printing_and_values(name):
    d = dt(name)
    t = torch.tensor([1, 0], dtype=d)
    suffix = "" if name in ("int64", "float32", "bool") else f", dtype=torch.{name}"
    body = {"bool": "[ True, False]"}.get(name, "[1., 0.]" if d.is_floating_point else "[1, 0]")
    assert repr(t) == f"tensor({body}{suffix})"
    empty_suffix = "" if name == "float32" else f", dtype=torch.{name}"
    assert repr(torch.zeros(0, dtype=d)) == f"tensor([]{empty_suffix})"
    assert torch.zeros(3, dtype=d).dtype is d and torch.ones(2, 2, dtype=d).tolist() == \
        [[True, True]] * 2 if name == "bool" else [[1, 1]] * 2
    assert torch.full((2,), 1, dtype=d).dtype is d
    if name != "bool":
        assert torch.arange(4, dtype=d).tolist() == [0, 1, 2, 3]
        assert isinstance(torch.tensor(3, dtype=d).item(), float if d.is_floating_point else int)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "float16"])
def test_numpy_round_trips_keep_the_dtype(name):
    a = np.array([1, 2, 3], dtype=name)
    t = torch.from_numpy(a)
    assert t.dtype is dt(name)
    a[0] = 7  # shares memory
    assert t[0].item() == 7
    assert t.numpy().dtype == np.dtype(name)
    assert torch.tensor(a).dtype is dt(name) and torch.as_tensor(a).dtype is dt(name)
    assert torch.tensor([1, 2], dtype=dt(name)).numpy().dtype == np.dtype(name)


def test_bfloat16_has_no_numpy_dtype():
    b = torch.tensor([1.5, 2.0], dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        b.numpy()
    assert b.float().numpy().tolist() == [1.5, 2.0]


def test_conversion_methods():
    x = torch.tensor([1.7, -2.5, 300.0])
    assert x.int().dtype is torch.int32 and x.int().tolist() == [1, -2, 300]
    assert x.short().dtype is torch.int16 and x.char().dtype is torch.int8
    assert x.byte().tolist() == [1, 254, 44]  # truncated, then wrapped (as PyTorch on x86)
    assert x.half().dtype is torch.float16 and x.bfloat16().dtype is torch.bfloat16
    assert x.bfloat16().tolist() == [1.703125, -2.5, 300.0]
    assert x.half().type() == "torch.HalfTensor" and x.type("torch.IntTensor").dtype is torch.int32


def test_integer_arithmetic_wraps_and_promotes():
    a = torch.tensor([1, 100], dtype=torch.int8)
    assert (a + 1000).tolist() == [-23, 76] and (a + 1000).dtype is torch.int8
    assert (a < 1000).tolist() == [False, False]  # 1000 becomes int8 first, as in PyTorch
    assert (a * 2).tolist() == [2, -56] and (a // 3).tolist() == [0, 33]
    assert (a / 3).dtype is torch.float32
    u = torch.tensor([1, 2, 250], dtype=torch.uint8)
    assert (u - 3).tolist() == [254, 255, 247] and (~u).tolist() == [254, 253, 5]
    mixed = torch.tensor([200], dtype=torch.uint8) + torch.tensor([1], dtype=torch.int8)
    assert mixed.dtype is torch.int16 and mixed.tolist() == [201]
    assert a.sum().dtype is torch.int64 and a.sum().item() == 101
    assert a.max().dtype is torch.int8 and a.cumsum(0).dtype is torch.int64
    i = torch.tensor([[1, -2], [3, 4]], dtype=torch.int32)
    assert (i @ i).tolist() == [[-5, -10], [15, 10]] and (i @ i).dtype is torch.int32


def test_half_precision_rounds_each_result():
    h = torch.tensor([1.0, 100.0], dtype=torch.float16)
    assert (h + 0.1).tolist() == [1.099609375, 100.125]
    assert (h + 0.1).dtype is torch.float16
    b = torch.tensor([1.5, -2.25, 3.0], dtype=torch.bfloat16)
    assert (b * 3).tolist() == [4.5, -6.75, 9.0] and b.exp().dtype is torch.bfloat16
    assert b.exp().tolist() == [4.46875, 0.10546875, 20.125]
    hh = torch.tensor([1.5, -2.25, 3.0], dtype=torch.float16)
    assert (hh @ hh).item() == 16.3125 and (hh @ hh).dtype is torch.float16
    assert hh.sum().dtype is torch.float16 and hh.softmax(0).dtype is torch.float16


def test_half_precision_autograd():
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16, requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.dtype is torch.float16 and x.grad.tolist() == [2.0, 4.0, 6.0]
    w = torch.ones(2, 3, dtype=torch.bfloat16, requires_grad=True)
    y = (w @ x.detach().bfloat16()).sigmoid().sum()
    y.backward()
    assert w.grad.dtype is torch.bfloat16


def test_int32_indices_index():
    x = torch.arange(5.0)
    assert x[torch.tensor([1, 3], dtype=torch.int32)].tolist() == [1.0, 3.0]


def test_unsupported_kernels_name_the_op_and_dtype():
    with pytest.raises(NotImplementedError, match="im2col_out_cpu\" not implemented for 'Int'"):
        torch.nn.functional.unfold(torch.ones(1, 1, 4, 4, dtype=torch.int32), 2)
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        torch.ones(3, dtype=torch.int32).std()


# the same expressions, compared with PyTorch value for value and dtype for dtype
CASES = {
    "add_scalar": lambda t, x: x + 3,
    "mul": lambda t, x: x * x,
    "sub_rev": lambda t, x: 1 - x,
    "floordiv": lambda t, x: x // 2,
    "truediv": lambda t, x: x / 3,
    "lt": lambda t, x: x < 2,
    "eq": lambda t, x: x == x,
    "maximum": lambda t, x: t.maximum(x, x.flip(0)),
    "neg": lambda t, x: -x,
    "abs": lambda t, x: x.abs(),
    "sum": lambda t, x: x.sum(),
    "sum_dim": lambda t, x: x.reshape(2, 3).sum(1),
    "amax": lambda t, x: x.reshape(2, 3).amax(0),
    "max_dim": lambda t, x: tuple(x.reshape(2, 3).max(dim=1)),
    "argmax": lambda t, x: x.argmax(),
    "cumsum": lambda t, x: x.cumsum(0),
    "prod": lambda t, x: x.prod(),
    "sort": lambda t, x: tuple(x.sort()),
    "cat": lambda t, x: t.cat([x, x]),
    "stack": lambda t, x: t.stack([x, x], 1),
    "where": lambda t, x: t.where(x > 1, x, x.flip(0)),
    "index": lambda t, x: x[t.tensor([0, 2, 4])],
    "transpose": lambda t, x: x.reshape(2, 3).t().contiguous(),
    "matmul": lambda t, x: x.reshape(2, 3) @ x.reshape(3, 2),
    "exp": lambda t, x: x.exp(),
    "sigmoid": lambda t, x: x.sigmoid(),
    "softmax": lambda t, x: x.float().softmax(0).to(x.dtype) if not x.is_floating_point()
    else x.softmax(0),
    "to_float": lambda t, x: x.float(),
    "mean": lambda t, x: x.mean() if x.is_floating_point() else x.float().mean(),
}
VALUES = [1, 2, 0, 5, 3, 7]


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "float16", "bfloat16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_pytorch(name, case):
    ref = pytest.importorskip("torch")

    def run(lib):
        try:
            r = CASES[case](lib, lib.tensor(VALUES, dtype=getattr(lib, name)))
        except Exception as e:  # both must raise the same type
            return type(e).__name__
        return r if isinstance(r, tuple) else (r,)

    got, want = run(torch), run(ref)
    if isinstance(want, str):
        assert got == want
        return
    for g, w in zip(got, want):
        assert repr(g.dtype) == repr(w.dtype), case
        gv, wv = g.float().tolist(), w.float().tolist()
        assert np.allclose(gv, wv, rtol=1e-2, atol=1e-2), (case, gv, wv)


F = torch.nn.functional
# ops that run half precision through float32 (kernels of their own or casts around the op)
HALF_OPS = {
    "gelu": lambda t, x, w: t.nn.functional.gelu(x),
    "gelu_tanh": lambda t, x, w: t.nn.functional.gelu(x, approximate="tanh"),
    "relu": lambda t, x, w: t.nn.functional.relu(x),
    "silu": lambda t, x, w: t.nn.functional.silu(x),
    "leaky_relu": lambda t, x, w: t.nn.functional.leaky_relu(x, 0.1),
    "layer_norm": lambda t, x, w: t.nn.functional.layer_norm(x, (8,)),
    "group_norm": lambda t, x, w: t.nn.functional.group_norm(x.view(2, 4, 4), 2),
    "linear": lambda t, x, w: t.nn.functional.linear(x, w),
    "log_softmax": lambda t, x, w: t.nn.functional.log_softmax(x, -1),
    "cross_entropy": lambda t, x, w: t.nn.functional.cross_entropy(x, t.tensor([1, 2, 3, 0])),
    "mse": lambda t, x, w: t.nn.functional.mse_loss(x, x.detach() * 0.5),
    "embedding": lambda t, x, w: t.nn.functional.embedding(t.tensor([1, 2]), w),
    "sdpa": lambda t, x, w: t.nn.functional.scaled_dot_product_attention(
        x.view(1, 1, 4, 8), x.view(1, 1, 4, 8), x.view(1, 1, 4, 8), is_causal=True),
    "conv2d": lambda t, x, w: t.nn.functional.conv2d(x.view(1, 1, 4, 8),
                                                     w[:1, :4].reshape(1, 1, 2, 2)),
    "max_pool2d": lambda t, x, w: t.nn.functional.max_pool2d(x.view(1, 1, 4, 8), 2),
    "avg_pool2d": lambda t, x, w: t.nn.functional.avg_pool2d(x.view(1, 1, 4, 8), 2),
    "batch_norm": lambda t, x, w: t.nn.functional.batch_norm(x, None, None, training=True),
    "var": lambda t, x, w: x.var(-1),
    "logsumexp": lambda t, x, w: x.logsumexp(-1),
    "topk": lambda t, x, w: x.topk(2)[0],
    "bce_logits": lambda t, x, w: t.nn.functional.binary_cross_entropy_with_logits(
        x, x.detach().sigmoid()),
}
X = np.linspace(-2, 2, 32).reshape(4, 8)
W = np.cos(np.arange(64.0)).reshape(8, 8) / 4


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", sorted(HALF_OPS))
def test_half_precision_ops_and_their_gradients(name, op):
    def run(lib):
        d = getattr(lib, name)
        x = lib.tensor(X, dtype=d, requires_grad=True)
        w = lib.tensor(W, dtype=d, requires_grad=True)
        y = HALF_OPS[op](lib, x, w)
        # a weighted sum: the plain sum of a normalised output has a zero gradient
        (y.float() * lib.arange(float(y.numel())).view(y.shape).sin()).sum().backward()
        return y, x.grad, w.grad

    y, gx, gw = run(torch)
    assert y.dtype is getattr(torch, name)
    assert all(g is None or g.dtype is getattr(torch, name) for g in (gx, gw))
    try:
        ref = __import__("torch")
    except ImportError:
        return
    ry, rgx, rgw = run(ref)
    tol = 2e-2 if name == "bfloat16" else 4e-3
    for g, r in [(y, ry), (gx, rgx), (gw, rgw)]:
        if r is None:
            assert g is None
            continue
        assert np.allclose(g.float().tolist(), r.float().tolist(), rtol=tol, atol=tol), op


def test_half_precision_module_training():
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.LayerNorm(8),
                            torch.nn.Linear(8, 2)).bfloat16()
    assert all(p.dtype is torch.bfloat16 for p in m.parameters())
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    x = torch.tensor(X[:, :4], dtype=torch.bfloat16)
    t = torch.tensor([0, 1, 1, 0])
    losses = []
    for _ in range(20):
        loss = F.cross_entropy(m(x), t)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert m[0].weight.dtype is torch.bfloat16 and losses[-1] < losses[0] - 0.2
    bn = torch.nn.BatchNorm1d(3).half()
    bn(torch.tensor(X[:, :3], dtype=torch.float16))
    assert bn.running_mean.dtype is torch.float16
    assert np.allclose(bn.running_mean.float().tolist(), (0.1 * X[:, :3].mean(0)).tolist(),
                       atol=1e-3)
