"""nn.LSTM and nn.GRU as native sequence ops (``_core._lstm_layer``, ``_core._gru_layer``: one
node per layer and direction) against the per-step Python loop (``RNNBase._run_steps``) and
against PyTorch."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest

import ferrograd
import ferrograd.nn as nn
from ferrograd.autograd import gradcheck, gradgradcheck

CONFIGS = [
    dict(),
    dict(batch_first=True),
    dict(bidirectional=True),
    dict(num_layers=2),
    dict(num_layers=2, bidirectional=True, batch_first=True),
    dict(bias=False, bidirectional=True),
]


def _np(t):
    return t.detach().numpy()


def _inputs(cfg, dtype, given_hidden, seed=0):
    rng = np.random.default_rng(seed)
    layers = cfg.get("num_layers", 1) * (2 if cfg.get("bidirectional") else 1)
    x = rng.standard_normal((4, 3, 5) if cfg.get("batch_first") else (3, 4, 5))  # batch 4 x 3 steps
    hx = [rng.standard_normal((layers, 4, 6)) for _ in range(2)] if given_hidden else None
    return [a.astype(dtype) for a in [x] + (hx or [])], given_hidden


def _run(module, arrays, given_hidden, run=None, create_graph=False):
    """Forward + backward of a fixed loss; returns outputs, then gradients of the inputs and of
    every parameter (in named_parameters order)."""
    tensors = [ferrograd.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
    x = tensors[0]
    hx = (tensors[1], tensors[2]) if given_hidden else None
    if run is not None:  # call a given _run variant with the checked arguments
        module._run = run.__get__(module)
    try:
        out, (h, c) = module(x, hx)
    finally:
        module.__dict__.pop("_run", None)
    w = ferrograd.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)
    loss = (out * w).sum() + (h * h).sum() + 3 * c.sum()
    params = [p for _, p in module.named_parameters()]
    grads = ferrograd.autograd.grad(loss, tensors + params, create_graph=create_graph)
    return [out, h, c], list(grads)


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
@pytest.mark.parametrize("given_hidden", [False, True])
def test_fused_matches_step_loop(cfg, given_hidden):
    ferrograd.manual_seed(0)
    m = nn.LSTM(5, 6, dtype=ferrograd.float64, **cfg)
    arrays, given = _inputs(cfg, np.float64, given_hidden)
    outs, grads = _run(m, arrays, given)
    ref_outs, ref_grads = _run(m, arrays, given, run=nn.LSTM._run_steps)
    assert outs[0].grad_fn is not None
    for a, b in zip(outs + grads, ref_outs + ref_grads):
        assert a.shape == b.shape
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12)


def test_fused_is_used_and_named_like_pytorch():
    m = nn.LSTM(5, 6)
    x = ferrograd.randn(3, 4, 5)
    out, (h, c) = m(x)
    assert out.grad_fn.name() == "MkldnnRnnLayerBackward0"
    assert h.grad_fn.name() == "StackBackward0"
    out, _ = nn.LSTM(5, 6, batch_first=True)(x)
    assert out.grad_fn.name() == "TransposeBackward0"
    assert out.grad_fn.next_functions[0][0].name() == "MkldnnRnnLayerBackward0"
    out, _ = nn.LSTM(5, 6, bidirectional=True)(x)
    assert out.grad_fn.name() == "CatBackward0"
    # proj_size keeps the per-step loop
    out, _ = nn.LSTM(5, 6, proj_size=2)(x)
    assert out.grad_fn.name() != "MkldnnRnnLayerBackward0"


def test_dropout_between_layers_same_as_step_loop():
    m = nn.LSTM(5, 6, num_layers=3, dropout=0.5, dtype=ferrograd.float64)
    arrays, given = _inputs(dict(num_layers=3), np.float64, False)
    ferrograd.manual_seed(7)
    outs, grads = _run(m, arrays, given)
    ferrograd.manual_seed(7)
    ref_outs, ref_grads = _run(m, arrays, given, run=nn.LSTM._run_steps)
    for a, b in zip(outs + grads, ref_outs + ref_grads):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12)


def test_no_grad_saves_nothing_and_matches():
    ferrograd.manual_seed(0)
    m = nn.LSTM(5, 6, num_layers=2, bidirectional=True)
    x = ferrograd.randn(3, 4, 5)
    out, (h, c) = m(x)
    with ferrograd.no_grad():
        out2, (h2, c2) = m(x)
    assert out2.grad_fn is None and not out2.requires_grad and h2.grad_fn is None and c2.grad_fn is None
    for a, b in [(out, out2), (h, h2), (c, c2)]:
        np.testing.assert_array_equal(_np(a), _np(b))


def test_unbatched_input():
    ferrograd.manual_seed(0)
    m = nn.LSTM(5, 6, bidirectional=True, dtype=ferrograd.float64)
    x = ferrograd.randn(3, 5, dtype=ferrograd.float64)
    out, (h, c) = m(x)
    ref, (rh, rc) = m._run_steps(x.unsqueeze(1), (ferrograd.zeros(2, 1, 6, dtype=ferrograd.float64),) * 2)
    assert out.shape == (3, 12) and h.shape == (2, 6)
    np.testing.assert_allclose(_np(out), _np(ref.squeeze(1)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(c), _np(rc.squeeze(1)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", ["both", "ih", "none"])
def test_gradcheck_and_gradgradcheck_lstm_layer(reverse, bias):
    ferrograd.manual_seed(3)
    f64 = dict(dtype=ferrograd.float64, requires_grad=True)
    x, h0, c0 = ferrograd.randn(3, 2, 3, **f64), ferrograd.randn(2, 4, **f64), ferrograd.randn(2, 4, **f64)
    w_ih, w_hh = ferrograd.randn(16, 3, **f64), ferrograd.randn(16, 4, **f64)
    b_ih = ferrograd.randn(16, **f64) if bias != "none" else None
    b_hh = ferrograd.randn(16, **f64) if bias == "both" else None
    args = [t for t in (x, h0, c0, w_ih, w_hh, b_ih, b_hh) if t is not None]

    def fn(*a):
        biases = list(a[5:]) + [None] * (7 - len(a))
        return ferrograd._core._lstm_layer(*a[:5], *biases, reverse)

    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_double_backward_through_module_matches_step_loop():
    # create_graph=True: the fused node's backward records differentiable ops
    ferrograd.manual_seed(0)
    cfg = dict(num_layers=2, bidirectional=True)
    m = nn.LSTM(5, 6, dtype=ferrograd.float64, **cfg)
    arrays, given = _inputs(cfg, np.float64, True)
    results = []
    for run in (None, nn.LSTM._run_steps):
        _, grads = _run(m, arrays, given, run=run, create_graph=True)
        penalty = sum((g * g).sum() for g in grads)
        params = [p for _, p in m.named_parameters()]
        results.append(ferrograd.autograd.grad(penalty, params))
    for a, b in zip(*results):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-10)


def test_lstm_module_gradcheck_float64():
    ferrograd.manual_seed(4)
    m = nn.LSTM(2, 3, num_layers=2, bidirectional=True, batch_first=True, dtype=ferrograd.float64)
    weights = [p.detach().clone().requires_grad_(True) for p in m._flat_weights]
    x = ferrograd.randn(2, 3, 2, dtype=ferrograd.float64, requires_grad=True)

    def fn(x, *ws):
        m._flat_weights = list(ws)
        out, (h, c) = m(x)
        return out, h, c

    assert gradcheck(fn, (x, *weights))


def test_backward_errors():
    m = nn.LSTM(5, 6)
    out, _ = m(ferrograd.randn(3, 4, 5))
    out.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.sum().backward()
    out, _ = m(ferrograd.randn(3, 4, 5))
    loss = out.sum()
    with ferrograd.no_grad():
        out.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_lstm_layer_bad_shapes():
    x = ferrograd.randn(3, 2, 5)
    h = ferrograd.zeros(2, 6)
    w_ih, w_hh = ferrograd.randn(24, 5), ferrograd.randn(24, 6)
    with pytest.raises(RuntimeError, match="w_ih of shape"):
        ferrograd._core._lstm_layer(x, h, h, ferrograd.randn(24, 4), w_hh, None, None, False)
    with pytest.raises(RuntimeError, match="h0 of shape"):
        ferrograd._core._lstm_layer(x, ferrograd.zeros(3, 6), h, w_ih, w_hh, None, None, False)
    with pytest.raises(RuntimeError, match="one dtype"):
        ferrograd._core._lstm_layer(x.double(), h, h, w_ih, w_hh, None, None, False)


def test_bfloat16_close_to_step_loop():
    ferrograd.manual_seed(0)
    m = nn.LSTM(5, 6, dtype=ferrograd.bfloat16)
    x = ferrograd.randn(3, 4, 5, dtype=ferrograd.bfloat16)
    out, (h, c) = m(x)
    ref, (rh, rc) = m._run_steps(x, (ferrograd.zeros(1, 4, 6, dtype=ferrograd.bfloat16),) * 2)
    assert out.dtype == ferrograd.bfloat16 and c.dtype == ferrograd.bfloat16
    np.testing.assert_allclose(_np(out.float()), _np(ref.float()), atol=3e-2)
    np.testing.assert_allclose(_np(c.float()), _np(rc.float()), atol=3e-2)


# ------------------------------------------------------------------ against PyTorch


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
@pytest.mark.parametrize("given_hidden", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_matches_torch(cfg, given_hidden, dtype):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.LSTM(5, 6, dtype=getattr(torch, dtype), **cfg)
    m = nn.LSTM(5, 6, dtype=getattr(ferrograd, dtype), **cfg)
    m.load_state_dict({k: ferrograd.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    arrays, given = _inputs(cfg, getattr(np, dtype), given_hidden)
    outs, grads = _run(m, arrays, given)

    tensors = [torch.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
    out, (h, c) = tm(tensors[0], (tensors[1], tensors[2]) if given else None)
    w = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)
    loss = (out * w).sum() + (h * h).sum() + 3 * c.sum()
    ref_grads = torch.autograd.grad(loss, tensors + list(tm.parameters()))
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for a, b in zip(outs + grads, [out, h, c] + list(ref_grads)):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), **tol)


# ------------------------------------------------------------------------------ GRU


def _node_names(node, depth):
    """The names of the graph nodes up to ``depth`` edges from ``node``."""
    if node is None or depth < 0:
        return set()
    return {node.name()}.union(*(_node_names(f, depth - 1) for f, _ in node.next_functions))


def _run_gru(module, arrays, given_hidden, run=None, create_graph=False):
    tensors = [ferrograd.from_numpy(a.copy()).requires_grad_(True) for a in arrays[: 2 if given_hidden else 1]]
    if run is not None:
        module._run = run.__get__(module)
    try:
        out, h = module(tensors[0], tensors[1] if given_hidden else None)
    finally:
        module.__dict__.pop("_run", None)
    w = ferrograd.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)
    loss = (out * w).sum() + (h * h).sum()
    params = [p for _, p in module.named_parameters()]
    return [out, h], list(ferrograd.autograd.grad(loss, tensors + params, create_graph=create_graph))


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
@pytest.mark.parametrize("given_hidden", [False, True])
def test_gru_fused_matches_step_loop(cfg, given_hidden):
    ferrograd.manual_seed(0)
    m = nn.GRU(5, 6, dtype=ferrograd.float64, **cfg)
    arrays, given = _inputs(cfg, np.float64, given_hidden)
    outs, grads = _run_gru(m, arrays, given)
    ref_outs, ref_grads = _run_gru(m, arrays, given, run=nn.GRU._run_steps)
    assert "MkldnnRnnLayerBackward0" in _node_names(outs[0].grad_fn, depth=3)
    for a, b in zip(outs + grads, ref_outs + ref_grads):
        assert a.shape == b.shape
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", ["both", "hh", "none"])
def test_gradcheck_and_gradgradcheck_gru_layer(reverse, bias):
    ferrograd.manual_seed(5)
    f64 = dict(dtype=ferrograd.float64, requires_grad=True)
    x, h0 = ferrograd.randn(3, 2, 3, **f64), ferrograd.randn(2, 4, **f64)
    w_ih, w_hh = ferrograd.randn(12, 3, **f64), ferrograd.randn(12, 4, **f64)
    b_ih = ferrograd.randn(12, **f64) if bias == "both" else None
    b_hh = ferrograd.randn(12, **f64) if bias != "none" else None
    args = [t for t in (x, h0, w_ih, w_hh, b_ih, b_hh) if t is not None]

    def fn(*a):
        given = iter(a[4:])
        bi = next(given) if b_ih is not None else None
        bh = next(given) if b_hh is not None else None
        return ferrograd._core._gru_layer(*a[:4], bi, bh, reverse)

    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_gru_double_backward_matches_step_loop():
    ferrograd.manual_seed(0)
    cfg = dict(num_layers=2, bidirectional=True)
    m = nn.GRU(5, 6, dtype=ferrograd.float64, **cfg)
    arrays, given = _inputs(cfg, np.float64, True)
    results = []
    for run in (None, nn.GRU._run_steps):
        _, grads = _run_gru(m, arrays, given, run=run, create_graph=True)
        penalty = sum((g * g).sum() for g in grads)
        results.append(ferrograd.autograd.grad(penalty, [p for _, p in m.named_parameters()]))
    for a, b in zip(*results):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-10)


def test_gru_no_grad_and_bfloat16():
    ferrograd.manual_seed(0)
    m = nn.GRU(5, 6, num_layers=2)
    x = ferrograd.randn(3, 4, 5)
    out, h = m(x)
    with ferrograd.no_grad():
        out2, h2 = m(x)
    assert out2.grad_fn is None and h2.grad_fn is None
    np.testing.assert_array_equal(_np(out), _np(out2))
    mb = nn.GRU(5, 6, dtype=ferrograd.bfloat16)
    xb = x.bfloat16()
    out, h = mb(xb)
    ref, rh = mb._run_steps(xb, ferrograd.zeros(1, 4, 6, dtype=ferrograd.bfloat16))
    assert out.dtype == ferrograd.bfloat16
    np.testing.assert_allclose(_np(out.float()), _np(ref.float()), atol=3e-2)


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gru_fused_matches_torch(cfg, dtype):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.GRU(5, 6, dtype=getattr(torch, dtype), **cfg)
    m = nn.GRU(5, 6, dtype=getattr(ferrograd, dtype), **cfg)
    m.load_state_dict({k: ferrograd.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    arrays, given = _inputs(cfg, getattr(np, dtype), True)
    outs, grads = _run_gru(m, arrays, given)
    tensors = [torch.from_numpy(a.copy()).requires_grad_(True) for a in arrays[:2]]
    out, h = tm(*tensors)
    w = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)
    loss = (out * w).sum() + (h * h).sum()
    ref_grads = torch.autograd.grad(loss, tensors + list(tm.parameters()))
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for a, b in zip(outs + grads, [out, h] + list(ref_grads)):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), **tol)
