"""Recurrent layers of ferrograd.nn: RNN, LSTM, GRU and RNNCell, LSTMCell, GRUCell."""

import copy
import math
import os
import pickle
import warnings
from collections import OrderedDict, namedtuple

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest

import ferrograd
import ferrograd.nn as nn
from ferrograd.autograd import gradcheck


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


def _fg(a, requires_grad=False):
    return ferrograd.from_numpy(np.ascontiguousarray(a)).requires_grad_(requires_grad)


def _copy_weights(fg_model, torch_model):
    fg_model.load_state_dict(
        OrderedDict((k, _fg(v.detach().numpy())) for k, v in torch_model.state_dict().items())
    )


_NP_DTYPE = {"float32": np.float32, "float64": np.float64}
_TOL = {"float32": dict(atol=1e-5, rtol=1e-4), "float64": dict(atol=1e-12, rtol=1e-10)}


def _build(lib, mode, dtype, *args, **kwargs):
    dt = getattr(lib, dtype)
    if mode in ("tanh", "relu"):
        return lib.nn.RNN(*args, nonlinearity=mode, dtype=dt, **kwargs)
    return getattr(lib.nn, mode)(*args, dtype=dt, **kwargs)


def _flatten_out(out):
    """``(output, h_n)`` or ``(output, (h_n, c_n))`` -> list of tensors."""
    output, hidden = out
    return [output] + (list(hidden) if isinstance(hidden, tuple) else [hidden])


def _run_parity(torch, tm, fm, inputs_np, dtype, call):
    """Forward/backward ``call(module, *inputs)`` in torch and ferrograd with the same weights.

    Compares every output, the gradients of every input and of every parameter.
    """
    _copy_weights(fm, tm)
    tin = [torch.tensor(a, requires_grad=True) for a in inputs_np]
    fin = [_fg(a, requires_grad=True) for a in inputs_np]
    touts = call(tm, *tin)
    fouts = call(fm, *fin)
    assert len(touts) == len(fouts)
    tol = _TOL[dtype]
    rng = np.random.default_rng(7)
    tloss, floss = 0, 0
    for to, fo in zip(touts, fouts):
        assert tuple(fo.shape) == tuple(to.shape)
        assert fo.dtype == getattr(ferrograd, dtype)
        np.testing.assert_allclose(_np(fo), _np(to), **tol)
        w = rng.standard_normal(tuple(to.shape)).astype(_NP_DTYPE[dtype])
        tloss = tloss + (to * torch.tensor(w)).sum()
        floss = floss + (fo * _fg(w)).sum()
    tloss.backward()
    floss.backward()
    for ti, fi in zip(tin, fin):
        np.testing.assert_allclose(fi.grad.detach().numpy(), ti.grad.detach().numpy(), **tol)
    tparams = dict(tm.named_parameters())
    fparams = dict(fm.named_parameters())
    assert list(fparams) == list(tparams)
    for name, p in fparams.items():
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.detach().numpy(), tparams[name].grad.detach().numpy(), err_msg=name, **tol)


# ------------------------------------------------------------------- parity: RNN/LSTM/GRU

MODES = ["tanh", "relu", "LSTM", "GRU"]
T, B, I, H = 4, 3, 5, 6


def _hidden_np(rng, mode, num_states, batch, dtype, proj_size=0):
    h0 = rng.standard_normal((num_states, batch, proj_size or H)).astype(_NP_DTYPE[dtype])
    if mode == "LSTM":
        return [h0, rng.standard_normal((num_states, batch, H)).astype(_NP_DTYPE[dtype])]
    return [h0]


def _call_with_hidden(mode):
    if mode == "LSTM":
        return lambda m, x, h, c: _flatten_out(m(x, (h, c)))
    return lambda m, x, h: _flatten_out(m(x, h))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("given_hidden", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_parity_with_torch(mode, batch_first, num_layers, bidirectional, bias, given_hidden, dtype):
    torch = _torch()
    kwargs = dict(num_layers=num_layers, bias=bias, batch_first=batch_first, bidirectional=bidirectional)
    torch.manual_seed(0)
    tm = _build(torch, mode, dtype, I, H, **kwargs)
    fm = _build(ferrograd, mode, dtype, I, H, **kwargs)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((B, T, I) if batch_first else (T, B, I)).astype(_NP_DTYPE[dtype])
    if given_hidden:
        states = _hidden_np(rng, mode, num_layers * (2 if bidirectional else 1), B, dtype)
        _run_parity(torch, tm, fm, [x] + states, dtype, _call_with_hidden(mode))
    else:
        _run_parity(torch, tm, fm, [x], dtype, lambda m, x: _flatten_out(m(x)))


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("given_hidden", [False, True])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_lstm_proj_size_parity_with_torch(batch_first, bidirectional, given_hidden, dtype):
    torch = _torch()
    kwargs = dict(num_layers=2, batch_first=batch_first, bidirectional=bidirectional, proj_size=3)
    torch.manual_seed(0)
    tm = _build(torch, "LSTM", dtype, I, H, **kwargs)
    fm = _build(ferrograd, "LSTM", dtype, I, H, **kwargs)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((B, T, I) if batch_first else (T, B, I)).astype(_NP_DTYPE[dtype])
    if given_hidden:
        states = _hidden_np(rng, "LSTM", 2 * (2 if bidirectional else 1), B, dtype, proj_size=3)
        _run_parity(torch, tm, fm, [x] + states, dtype, _call_with_hidden("LSTM"))
    else:
        _run_parity(torch, tm, fm, [x], dtype, lambda m, x: _flatten_out(m(x)))


@pytest.mark.parametrize("given_hidden", [False, True])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_unbatched_parity_with_torch(mode, batch_first, bidirectional, given_hidden):
    torch = _torch()
    dtype = "float64"
    kwargs = dict(num_layers=2, batch_first=batch_first, bidirectional=bidirectional)
    torch.manual_seed(0)
    tm = _build(torch, mode, dtype, I, H, **kwargs)
    fm = _build(ferrograd, mode, dtype, I, H, **kwargs)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((T, I))
    if given_hidden:
        states = [s[:, 0] for s in _hidden_np(rng, mode, 2 * (2 if bidirectional else 1), 1, dtype)]
        _run_parity(torch, tm, fm, [x] + states, dtype, _call_with_hidden(mode))
    else:
        _run_parity(torch, tm, fm, [x], dtype, lambda m, x: _flatten_out(m(x)))


def test_empty_batch():
    # torch returns output (T, 0, 2 * H) and states (4, 0, H) for an empty batch
    out, (h, c) = nn.LSTM(I, H, 2, bidirectional=True)(ferrograd.zeros(T, 0, I))
    assert tuple(out.shape) == (T, 0, 2 * H)
    assert tuple(h.shape) == tuple(c.shape) == (4, 0, H)


# ------------------------------------------------------------------------- parity: cells


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("given_hidden", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_cell_parity_with_torch(mode, bias, given_hidden, batched, dtype):
    torch = _torch()

    def build(lib):
        dt = getattr(lib, dtype)
        if mode in ("tanh", "relu"):
            return lib.nn.RNNCell(I, H, bias, mode, dtype=dt)
        return getattr(lib.nn, mode + "Cell")(I, H, bias=bias, dtype=dt)

    torch.manual_seed(0)
    tm, fm = build(torch), build(ferrograd)
    rng = np.random.default_rng(4)
    npdt = _NP_DTYPE[dtype]
    lead = (B,) if batched else ()
    x = rng.standard_normal(lead + (I,)).astype(npdt)
    if not given_hidden:
        call = lambda m, x: list(m(x)) if mode == "LSTM" else [m(x)]  # noqa: E731
        _run_parity(torch, tm, fm, [x], dtype, call)
    elif mode == "LSTM":
        h, c = (rng.standard_normal(lead + (H,)).astype(npdt) for _ in range(2))
        _run_parity(torch, tm, fm, [x, h, c], dtype, lambda m, x, h, c: list(m(x, (h, c))))
    else:
        h = rng.standard_normal(lead + (H,)).astype(npdt)
        _run_parity(torch, tm, fm, [x, h], dtype, lambda m, x, h: [m(x, h)])


def test_cell_unrolled_parity_with_torch():
    # A cell applied over several steps: gradients flow through the recurrence.
    torch = _torch()
    torch.manual_seed(0)
    tm, fm = torch.nn.GRUCell(I, H, dtype=torch.float64), nn.GRUCell(I, H, dtype=ferrograd.float64)
    x = np.random.default_rng(5).standard_normal((T, B, I))

    def call(m, x):
        h = m(x[0])
        for t in range(1, T):
            h = m(x[t], h)
        return [h]

    _run_parity(torch, tm, fm, [x], "float64", call)


# ---------------------------------------------------------------- state_dict, repr, misc

CONFIGS = [
    ("RNN", (10, 20), {}),
    ("RNN", (10, 20, 2, "relu"), {}),
    ("RNN", (10, 20), dict(num_layers=3, nonlinearity="relu", bias=False, bidirectional=True)),
    ("LSTM", (10, 20), {}),
    ("LSTM", (10, 20, 2), dict(bias=False, batch_first=True, dropout=0.5, bidirectional=True, proj_size=5)),
    ("LSTM", (3, 4), dict(num_layers=2, proj_size=2)),
    ("GRU", (10, 20), dict(num_layers=2, dropout=0.25, batch_first=True)),
    ("GRU", (7, 3), dict(bias=False, bidirectional=True)),
    ("RNNCell", (10, 20), {}),
    ("RNNCell", (10, 20, False, "relu"), {}),
    ("LSTMCell", (10, 20), dict(bias=False)),
    ("GRUCell", (3, 4), {}),
    ("GRUCell", (3, 4), dict(bias=False)),
]


@pytest.mark.parametrize("name,args,kwargs", CONFIGS)
def test_state_dict_and_repr_match_torch(name, args, kwargs):
    torch = _torch()
    tm = getattr(torch.nn, name)(*args, **kwargs)
    fm = getattr(nn, name)(*args, **kwargs)
    assert repr(fm) == repr(tm)
    tsd, fsd = tm.state_dict(), fm.state_dict()
    assert list(fsd) == list(tsd)
    for k in tsd:
        assert tuple(fsd[k].shape) == tuple(tsd[k].shape), k
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    if hasattr(tm, "_flat_weights_names"):
        assert fm._flat_weights_names == tm._flat_weights_names
        assert fm._all_weights == tm._all_weights
        assert [tuple(w.shape) for w in fm._flat_weights] == [tuple(w.shape) for w in tm._flat_weights]
        assert [[tuple(w.shape) for w in ws] for ws in fm.all_weights] == [
            [tuple(w.shape) for w in ws] for ws in tm.all_weights
        ]
    for attr in ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                 "bidirectional", "proj_size", "mode", "nonlinearity"):
        if hasattr(tm, attr):
            assert getattr(fm, attr) == getattr(tm, attr), attr


def test_state_dict_keys_and_shapes_closed_form():
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    keys = []
    for layer in range(2):
        for suffix in ("", "_reverse"):
            keys += [f"{n}_l{layer}{suffix}" for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")]
    sd = m.state_dict()
    assert list(sd) == keys
    assert tuple(sd["weight_ih_l0"].shape) == (16, 3)
    assert tuple(sd["weight_ih_l1_reverse"].shape) == (16, 4)  # 2 directions * proj_size
    assert tuple(sd["weight_hh_l1"].shape) == (16, 2)
    assert tuple(sd["weight_hr_l0"].shape) == (2, 4)
    assert tuple(sd["bias_hh_l0"].shape) == (16,)
    assert repr(m) == "LSTM(3, 4, proj_size=2, num_layers=2, bidirectional=True)"
    g = nn.GRU(3, 4, bias=False)
    assert list(g.state_dict()) == ["weight_ih_l0", "weight_hh_l0"]
    assert tuple(g.weight_ih_l0.shape) == (12, 3)
    assert repr(g) == "GRU(3, 4, bias=False)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"
    c = nn.LSTMCell(3, 4, bias=False)
    assert c.bias_ih is None and c.bias_hh is None
    assert list(c.state_dict()) == ["weight_ih", "weight_hh"]


@pytest.mark.parametrize("factory", [
    lambda: nn.RNN(5, 16, 2, bidirectional=True),
    lambda: nn.LSTM(5, 16, proj_size=3),
    lambda: nn.GRUCell(5, 16),
])
def test_default_init_is_uniform_in_bound(factory):
    ferrograd.manual_seed(0)
    m = factory()
    bound = 1.0 / math.sqrt(16)
    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    # a uniform(-b, b) sample spreads over the interval
    assert values.min() < -0.8 * bound and values.max() > 0.8 * bound
    assert abs(values.mean()) < 0.1 * bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.1 * bound


def test_flat_weights_follow_parameter_replacement():
    ferrograd.manual_seed(0)
    m = nn.GRU(3, 4, dtype=ferrograd.float64)
    x = ferrograd.randn(2, 1, 3, dtype=ferrograd.float64)
    assert all(a is b for a, b in zip(m._flat_weights, m.parameters()))
    # assignment through setattr
    m.weight_hh_l0 = nn.Parameter(ferrograd.zeros(12, 4, dtype=ferrograd.float64))
    assert m._flat_weights[1] is m.weight_hh_l0
    # load_state_dict(assign=True) replaces every parameter object
    new = {k: v * 0 for k, v in m.state_dict().items()}
    m.load_state_dict(new, assign=True)
    assert all(a is b for a, b in zip(m._flat_weights, m.parameters()))
    out, h = m(x)  # all-zero weights: z = 0.5, n = 0, h_t = h_{t-1} / 2 = 0
    np.testing.assert_array_equal(out.detach().numpy(), np.zeros((2, 1, 4)))
    # dtype conversion builds new parameters; _flat_weights follows
    m.float()
    assert m._flat_weights[0].dtype == ferrograd.float32
    assert all(a is b for a, b in zip(m._flat_weights, m.parameters()))
    m(x.float())


def test_copy_and_pickle_keep_flat_weights_consistent():
    ferrograd.manual_seed(0)
    m = nn.LSTM(3, 4, 2, dtype=ferrograd.float64)
    x = ferrograd.randn(5, 2, 3, dtype=ferrograd.float64)
    ref = m(x)[0].detach().numpy()
    for m2 in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert all(a is b for a, b in zip(m2._flat_weights, m2.parameters()))
        np.testing.assert_array_equal(m2(x)[0].detach().numpy(), ref)


# ---------------------------------------------------------------------------- errors

ERROR_CASES = [
    # input_size mismatch
    lambda lib: lib.nn.RNN(10, 20, 2)(lib.randn(5, 3, 7)),
    lambda lib: lib.nn.LSTM(10, 20)(lib.randn(5, 3, 7)),
    lambda lib: lib.nn.GRU(10, 20, batch_first=True)(lib.randn(5, 3, 7)),
    lambda lib: lib.nn.GRU(10, 20)(lib.randn(5, 7)),
    # hidden shape mismatch
    lambda lib: lib.nn.RNN(10, 20, 2)(lib.randn(5, 3, 10), lib.randn(1, 3, 20)),
    lambda lib: lib.nn.RNN(10, 20, bidirectional=True)(lib.randn(5, 3, 10), lib.randn(1, 3, 20)),
    lambda lib: lib.nn.GRU(10, 20, 2)(lib.randn(5, 3, 10), lib.randn(2, 3, 21)),
    lambda lib: lib.nn.GRU(10, 20, batch_first=True)(lib.randn(5, 3, 10), lib.randn(1, 3, 20)),
    lambda lib: lib.nn.LSTM(10, 20, 2)(lib.randn(5, 3, 10), (lib.randn(1, 3, 20), lib.randn(2, 3, 20))),
    lambda lib: lib.nn.LSTM(10, 20, 2)(lib.randn(5, 3, 10), (lib.randn(2, 3, 20), lib.randn(2, 2, 20))),
    lambda lib: lib.nn.LSTM(10, 20, proj_size=4)(lib.randn(5, 3, 10), (lib.randn(1, 3, 20), lib.randn(1, 3, 20))),
    lambda lib: lib.nn.LSTM(10, 20)(lib.randn(5, 10), (lib.randn(1, 20), lib.randn(1, 21))),
    # hidden dimension mismatch
    lambda lib: lib.nn.RNN(10, 20)(lib.randn(5, 3, 10), lib.randn(1, 20)),
    lambda lib: lib.nn.RNN(10, 20)(lib.randn(5, 10), lib.randn(1, 1, 20)),
    lambda lib: lib.nn.GRU(10, 20)(lib.randn(5, 3, 10), lib.randn(3, 20)),
    lambda lib: lib.nn.GRU(10, 20)(lib.randn(5, 10), lib.randn(1, 1, 20)),
    lambda lib: lib.nn.LSTM(10, 20)(lib.randn(5, 3, 10), (lib.randn(3, 20), lib.randn(1, 3, 20))),
    lambda lib: lib.nn.LSTM(10, 20)(lib.randn(5, 10), (lib.randn(1, 1, 20), lib.randn(1, 1, 20))),
    lambda lib: lib.nn.LSTM(10, 20)(lib.randn(5, 3, 10), lib.randn(1, 3, 20)),
    # input dimension
    lambda lib: lib.nn.RNN(10, 20)(lib.randn(5, 3, 10, 1)),
    lambda lib: lib.nn.RNN(10, 20)(lib.randn(10)),
    lambda lib: lib.nn.LSTM(10, 20)(lib.randn(5, 3, 10, 1)),
    lambda lib: lib.nn.GRU(10, 20)(lib.randn(10)),
    # dtype and empty sequence
    lambda lib: lib.nn.LSTM(10, 20)(lib.randn(5, 3, 10, dtype=lib.float64)),
    lambda lib: lib.nn.GRU(10, 20)(lib.randn(0, 3, 10)),
    lambda lib: lib.nn.RNN(10, 20, batch_first=True)(lib.randn(3, 0, 10)),
    # cells
    lambda lib: lib.nn.RNNCell(10, 20)(lib.randn(3, 7)),
    lambda lib: lib.nn.RNNCell(10, 20)(lib.randn(3, 10), lib.randn(2, 20)),
    lambda lib: lib.nn.RNNCell(10, 20)(lib.randn(3, 10), lib.randn(3, 21)),
    lambda lib: lib.nn.RNNCell(10, 20)(lib.randn(10), lib.randn(3, 20)),
    lambda lib: lib.nn.RNNCell(10, 20)(lib.randn(3, 10), lib.randn(20)),
    lambda lib: lib.nn.RNNCell(10, 20)(lib.randn(2, 3, 10)),
    lambda lib: lib.nn.RNNCell(10, 20)(lib.randn(3, 10), lib.randn(1, 3, 20)),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(3, 7)),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(3, 10), (lib.randn(2, 20), lib.randn(3, 20))),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(3, 10), (lib.randn(3, 20), lib.randn(2, 20))),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(3, 10), (lib.randn(3, 20), lib.randn(3, 21))),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(3, 10), (lib.randn(3, 20), lib.randn(1, 3, 20))),
    lambda lib: lib.nn.LSTMCell(10, 20)(lib.randn(1, 3, 10)),
    lambda lib: lib.nn.GRUCell(10, 20)(lib.randn(3, 7)),
    lambda lib: lib.nn.GRUCell(10, 20)(lib.randn(3, 10), lib.randn(2, 20)),
    lambda lib: lib.nn.GRUCell(10, 20)(lib.randn(3, 10), lib.randn(3, 21)),
    lambda lib: lib.nn.GRUCell(10, 20)(lib.randn(3, 10, 1)),
    lambda lib: lib.nn.GRUCell(10, 20)(lib.randn(3, 10), lib.randn(3, 20, 1)),
    # construction
    lambda lib: lib.nn.GRU(10, 20, proj_size=2),
    lambda lib: lib.nn.RNN(10, 20, proj_size=2),
    lambda lib: lib.nn.RNN(10, 20, 2, "sigmoid"),
    lambda lib: lib.nn.RNN(10, 20, nonlinearity="gelu"),
    lambda lib: lib.nn.LSTM(10, 20, dropout=1.5),
    lambda lib: lib.nn.LSTM(10, 20, dropout=True),
    lambda lib: lib.nn.LSTM(10, 20, dropout="0.1"),
    lambda lib: lib.nn.LSTM(10, 20, proj_size=20),
    lambda lib: lib.nn.LSTM(10, 20, proj_size=-1),
    lambda lib: lib.nn.LSTM(10, 0),
    lambda lib: lib.nn.LSTM(0, 20),
    lambda lib: lib.nn.LSTM(10.0, 20),
    lambda lib: lib.nn.LSTM(10, 20.0),
    lambda lib: lib.nn.LSTM(10, 20, 0),
    lambda lib: lib.nn.LSTM(10, 20, bias=1),
    lambda lib: lib.nn.LSTM(10, 20, batch_first=None),
    lambda lib: lib.nn.modules.rnn.RNNBase("FOO", 10, 20),
]


def _error_of(fn, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(lib)
        except Exception as e:  # noqa: BLE001
            return type(e), str(e)
    return None, None


@pytest.mark.parametrize("case", range(len(ERROR_CASES)))
def test_errors_match_torch(case):
    torch = _torch()
    ttype, tmsg = _error_of(ERROR_CASES[case], torch)
    assert ttype is not None, "the case must raise in torch"
    ftype, fmsg = _error_of(ERROR_CASES[case], ferrograd)
    assert ftype is ttype
    assert fmsg == tmsg


def test_error_messages_closed_form():
    with pytest.raises(RuntimeError, match=r"^input.size\(-1\) must be equal to input_size. Expected 10, got 7$"):
        nn.RNN(10, 20)(ferrograd.randn(5, 3, 7))
    with pytest.raises(RuntimeError, match=r"^Expected hidden size \(2, 3, 20\), got \[1, 3, 20\]$"):
        nn.RNN(10, 20, 2)(ferrograd.randn(5, 3, 10), ferrograd.randn(1, 3, 20))
    with pytest.raises(ValueError, match=r"^LSTM: Expected input to be 2D or 3D, got 4D instead$"):
        nn.LSTM(10, 20)(ferrograd.randn(5, 3, 10, 1))
    with pytest.raises(ValueError, match=r"^RNN: Expected input to be 2D or 3D, got 1D tensor instead$"):
        nn.RNN(10, 20)(ferrograd.randn(10))
    with pytest.raises(RuntimeError, match=r"^Expected hidden\[1\] size \(1, 3, 20\), got \[1, 2, 20\]$"):
        nn.LSTM(10, 20)(ferrograd.randn(5, 3, 10), (ferrograd.randn(1, 3, 20), ferrograd.randn(1, 2, 20)))
    with pytest.raises(RuntimeError, match=r"^hidden0 has inconsistent hidden_size: got 21, expected 20$"):
        nn.GRUCell(10, 20)(ferrograd.randn(3, 10), ferrograd.randn(3, 21))


def test_packed_sequence_as_a_plain_named_tuple():
    # a named tuple with PackedSequence's fields is taken as one (PyTorch unpacks it the same way)
    PackedSequence = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])
    data, batch_sizes = ferrograd.randn(6, 3), ferrograd.tensor([3, 2, 1])
    for m in (nn.RNN(3, 4), nn.LSTM(3, 4), nn.GRU(3, 4)):
        out, _ = m(PackedSequence(data, batch_sizes, None, None))
        expected, _ = m(ferrograd.nn.utils.rnn.PackedSequence(data, batch_sizes))
        assert type(out) is ferrograd.nn.utils.rnn.PackedSequence
        assert out.data.equal(expected.data)


def test_packed_sequence_from_torch_is_refused():
    torch = _torch()
    packed = torch.nn.utils.rnn.pack_sequence([torch.randn(3, 3), torch.randn(2, 3)])
    with pytest.raises(TypeError, match="PackedSequence of ferrograd tensors"):
        nn.LSTM(3, 4)(packed)


def test_dropout_warning_matches_torch():
    torch = _torch()
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        torch.nn.GRU(3, 4, dropout=0.5)
    with warnings.catch_warnings(record=True) as fw:
        warnings.simplefilter("always")
        nn.GRU(3, 4, dropout=0.5)
    assert len(fw) == len(tw) == 1
    assert fw[0].category is tw[0].category
    assert str(fw[0].message) == str(tw[0].message)


def test_dropout_warning_text():
    with pytest.warns(UserWarning) as record:
        nn.LSTM(3, 4, dropout=0.2)
    assert str(record[0].message) == (
        "dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
        "expects num_layers greater than 1, but got dropout=0.2 and num_layers=1"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.LSTM(3, 4, num_layers=2, dropout=0.2)
        nn.LSTM(3, 4, dropout=0.0)


# ------------------------------------------------------------- always-run numerical tests


def test_gradcheck_lstm():
    ferrograd.manual_seed(0)
    m = nn.LSTM(2, 3, num_layers=2, bidirectional=True, dtype=ferrograd.float64)
    weights = [p.detach().clone().requires_grad_(True) for p in m._flat_weights]
    x = ferrograd.randn(3, 2, 2, dtype=ferrograd.float64, requires_grad=True)
    h0 = ferrograd.randn(4, 2, 3, dtype=ferrograd.float64, requires_grad=True)
    c0 = ferrograd.randn(4, 2, 3, dtype=ferrograd.float64, requires_grad=True)

    def fn(x, h0, c0, *ws):
        m._flat_weights = list(ws)  # route the weights being checked through the module
        out, (h, c) = m(x, (h0, c0))
        return out, h, c

    assert gradcheck(fn, (x, h0, c0, *weights))


def test_gradcheck_gru_batch_first_proj_free():
    ferrograd.manual_seed(1)
    m = nn.GRU(2, 3, num_layers=2, batch_first=True, dtype=ferrograd.float64)
    weights = [p.detach().clone().requires_grad_(True) for p in m._flat_weights]
    x = ferrograd.randn(2, 3, 2, dtype=ferrograd.float64, requires_grad=True)
    h0 = ferrograd.randn(2, 2, 3, dtype=ferrograd.float64, requires_grad=True)

    def fn(x, h0, *ws):
        m._flat_weights = list(ws)
        return m(x, h0)

    assert gradcheck(fn, (x, h0, *weights))


def test_gradcheck_lstm_proj_and_cells():
    ferrograd.manual_seed(2)
    m = nn.LSTM(2, 3, proj_size=2, bidirectional=True, dtype=ferrograd.float64)
    weights = [p.detach().clone().requires_grad_(True) for p in m._flat_weights]
    x = ferrograd.randn(3, 2, dtype=ferrograd.float64, requires_grad=True)  # unbatched

    def fn(x, *ws):
        m._flat_weights = list(ws)
        out, (h, c) = m(x)
        return out, h, c

    assert gradcheck(fn, (x, *weights))

    cell = nn.LSTMCell(2, 3, dtype=ferrograd.float64)
    hc = [ferrograd.randn(2, 3, dtype=ferrograd.float64, requires_grad=True) for _ in range(2)]
    xb = ferrograd.randn(2, 2, dtype=ferrograd.float64, requires_grad=True)
    assert gradcheck(lambda x, h, c: cell(x, (h, c)), (xb, *hc))
    gcell = nn.GRUCell(2, 3, dtype=ferrograd.float64)
    assert gradcheck(lambda x, h: gcell(x, h), (xb, hc[0]))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _cell_weights(cell):
    w = {k: v.detach().numpy() for k, v in cell.state_dict().items()}
    if "bias_ih" not in w:
        w["bias_ih"] = w["bias_hh"] = 0.0
    return w


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_cell_one_step_numpy(nonlinearity, bias):
    ferrograd.manual_seed(3)
    cell = nn.RNNCell(4, 3, bias=bias, nonlinearity=nonlinearity, dtype=ferrograd.float64)
    rng = np.random.default_rng(0)
    x, h = rng.standard_normal((2, 4)), rng.standard_normal((2, 3))
    w = _cell_weights(cell)
    pre = x @ w["weight_ih"].T + w["bias_ih"] + h @ w["weight_hh"].T + w["bias_hh"]
    expected = np.tanh(pre) if nonlinearity == "tanh" else np.maximum(pre, 0)
    np.testing.assert_allclose(cell(_fg(x), _fg(h)).detach().numpy(), expected, rtol=1e-12, atol=1e-12)
    # default hidden state is zero; unbatched input gives an unbatched result
    pre0 = x[0] @ w["weight_ih"].T + w["bias_ih"] + w["bias_hh"]
    expected0 = np.tanh(pre0) if nonlinearity == "tanh" else np.maximum(pre0, 0)
    out0 = cell(_fg(x[0]))
    assert tuple(out0.shape) == (3,)
    np.testing.assert_allclose(out0.detach().numpy(), expected0, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bias", [True, False])
def test_gru_cell_one_step_numpy(bias):
    ferrograd.manual_seed(4)
    cell = nn.GRUCell(4, 3, bias=bias, dtype=ferrograd.float64)
    rng = np.random.default_rng(1)
    x, h = rng.standard_normal((2, 4)), rng.standard_normal((2, 3))
    w = _cell_weights(cell)
    W_ir, W_iz, W_in = np.split(w["weight_ih"], 3)
    W_hr, W_hz, W_hn = np.split(w["weight_hh"], 3)
    b_ir, b_iz, b_in = np.split(w["bias_ih"], 3) if bias else (0.0, 0.0, 0.0)
    b_hr, b_hz, b_hn = np.split(w["bias_hh"], 3) if bias else (0.0, 0.0, 0.0)
    r = _sigmoid(x @ W_ir.T + b_ir + h @ W_hr.T + b_hr)
    z = _sigmoid(x @ W_iz.T + b_iz + h @ W_hz.T + b_hz)
    n = np.tanh(x @ W_in.T + b_in + r * (h @ W_hn.T + b_hn))
    expected = (1 - z) * n + z * h
    np.testing.assert_allclose(cell(_fg(x), _fg(h)).detach().numpy(), expected, rtol=1e-12, atol=1e-12)


def test_lstm_cell_one_step_numpy():
    ferrograd.manual_seed(5)
    cell = nn.LSTMCell(4, 3, dtype=ferrograd.float64)
    rng = np.random.default_rng(2)
    x, h, c = rng.standard_normal((2, 4)), rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    w = _cell_weights(cell)
    gates = x @ w["weight_ih"].T + w["bias_ih"] + h @ w["weight_hh"].T + w["bias_hh"]
    i, f, g, o = np.split(gates, 4, axis=1)
    c1 = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    h1 = _sigmoid(o) * np.tanh(c1)
    hf, cf = cell(_fg(x), (_fg(h), _fg(c)))
    np.testing.assert_allclose(hf.detach().numpy(), h1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cf.detach().numpy(), c1, rtol=1e-12, atol=1e-12)


def _np_reference(mode, m, x, h0, c0):
    """Multi-layer (bi)directional recurrence in numpy, time-major ``x``; weights from ``m``."""
    w = {k: v.detach().numpy() for k, v in m.state_dict().items()}
    D = 2 if m.bidirectional else 1
    inp, hs, cs = x, [], []
    for layer in range(m.num_layers):
        outs = []
        for d in range(D):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            W_ih, W_hh = w["weight_ih" + sfx], w["weight_hh" + sfx]
            b_ih, b_hh = w.get("bias_ih" + sfx, 0.0), w.get("bias_hh" + sfx, 0.0)
            h, c = h0[layer * D + d], c0[layer * D + d] if c0 is not None else None
            seq = [None] * len(inp)
            order = range(len(inp) - 1, -1, -1) if d else range(len(inp))
            for t in order:
                gi, gh = inp[t] @ W_ih.T + b_ih, h @ W_hh.T + b_hh
                if mode == "LSTM":
                    i, f, g, o = np.split(gi + gh, 4, axis=-1)
                    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
                    h = _sigmoid(o) * np.tanh(c)
                    if "weight_hr" + sfx in w:
                        h = h @ w["weight_hr" + sfx].T
                elif mode == "GRU":
                    (ir, iz, in_), (hr, hz, hn) = np.split(gi, 3, axis=-1), np.split(gh, 3, axis=-1)
                    r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
                    n = np.tanh(in_ + r * hn)
                    h = (1 - z) * n + z * h
                else:
                    h = np.tanh(gi + gh) if mode == "tanh" else np.maximum(gi + gh, 0)
                seq[t] = h
            outs.append(np.stack(seq))
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(outs, axis=-1)
    return inp, np.stack(hs), (np.stack(cs) if c0 is not None else None)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_multilayer_bidirectional_against_numpy(mode, batch_first):
    ferrograd.manual_seed(6)
    kwargs = dict(num_layers=2, bidirectional=True, batch_first=batch_first, dtype=ferrograd.float64)
    if mode == "LSTM":
        m = nn.LSTM(3, 4, proj_size=2, **kwargs)
    elif mode == "GRU":
        m = nn.GRU(3, 4, bias=False, **kwargs)
    else:
        m = nn.RNN(3, 4, nonlinearity=mode, **kwargs)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 2, 3))  # time-major
    hsize = 2 if mode == "LSTM" else 4
    h0 = rng.standard_normal((4, 2, hsize))
    c0 = rng.standard_normal((4, 2, 4)) if mode == "LSTM" else None
    out_ref, h_ref, c_ref = _np_reference(mode, m, x, h0, c0)
    xin = _fg(x.transpose(1, 0, 2) if batch_first else x)
    out, hidden = m(xin, (_fg(h0), _fg(c0)) if mode == "LSTM" else _fg(h0))
    out = out.detach().numpy()
    if batch_first:
        out = out.transpose(1, 0, 2)
    np.testing.assert_allclose(out, out_ref, rtol=1e-12, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(hidden[0].detach().numpy(), h_ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(hidden[1].detach().numpy(), c_ref, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(hidden.detach().numpy(), h_ref, rtol=1e-12, atol=1e-12)


def test_output_shapes_and_default_hidden_is_zero():
    ferrograd.manual_seed(7)
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True, batch_first=True, proj_size=2)
    x = ferrograd.randn(4, 6, 3)
    out, (h, c) = m(x)
    assert tuple(out.shape) == (4, 6, 4) and tuple(h.shape) == (4, 4, 2) and tuple(c.shape) == (4, 4, 5)
    out2, (h2, c2) = m(x, (ferrograd.zeros(4, 4, 2), ferrograd.zeros(4, 4, 5)))
    np.testing.assert_array_equal(out.detach().numpy(), out2.detach().numpy())
    np.testing.assert_array_equal(c.detach().numpy(), c2.detach().numpy())
    # unbatched: squeezed batch dimension, same values as a batch of one
    ub_out, (ub_h, ub_c) = m(x[0])
    assert tuple(ub_out.shape) == (6, 4) and tuple(ub_h.shape) == (4, 2) and tuple(ub_c.shape) == (4, 5)
    np.testing.assert_allclose(ub_out.detach().numpy(), out.detach().numpy()[0], rtol=1e-6, atol=1e-6)
    # the last forward step / first backward step of the output are the final states
    np.testing.assert_allclose(out.detach().numpy()[:, -1, :2], h.detach().numpy()[2], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out.detach().numpy()[:, 0, 2:], h.detach().numpy()[3], rtol=1e-6, atol=1e-7)


def test_dropout_between_layers_train_vs_eval():
    ferrograd.manual_seed(8)
    m = nn.GRU(3, 4, num_layers=2, dropout=0.5, dtype=ferrograd.float64)
    ref = nn.GRU(3, 4, num_layers=2, dtype=ferrograd.float64)
    ref.load_state_dict(m.state_dict())
    x = ferrograd.randn(6, 5, 3, dtype=ferrograd.float64)

    m.eval()
    e1, e2 = m(x)[0].detach().numpy(), m(x)[0].detach().numpy()
    np.testing.assert_array_equal(e1, e2)
    np.testing.assert_array_equal(e1, ref(x)[0].detach().numpy())  # eval: no dropout at all

    m.train()
    t1, t2 = m(x)[0].detach().numpy(), m(x)[0].detach().numpy()
    assert not np.allclose(t1, e1)
    assert not np.allclose(t1, t2)  # fresh masks each call
    ferrograd.manual_seed(123)
    s1 = m(x)[0].detach().numpy()
    ferrograd.manual_seed(123)
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), s1)


def test_dropout_one_zeroes_the_input_of_upper_layers():
    ferrograd.manual_seed(9)
    m = nn.LSTM(3, 4, num_layers=2, dropout=1.0, dtype=ferrograd.float64).train()
    top = nn.LSTM(4, 4, dtype=ferrograd.float64)
    top.load_state_dict({k.replace("_l1", "_l0"): v for k, v in m.state_dict().items() if "_l1" in k})
    x = ferrograd.randn(5, 2, 3, dtype=ferrograd.float64)
    out, (h, c) = m(x)
    top_out, (top_h, _) = top(ferrograd.zeros(5, 2, 4, dtype=ferrograd.float64))
    np.testing.assert_allclose(out.detach().numpy(), top_out.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h.detach().numpy()[1], top_h.detach().numpy()[0], rtol=1e-12, atol=1e-14)
    # the first layer itself is not dropped: its final state does not depend on dropout
    m.eval()
    np.testing.assert_allclose(m(x)[1][0].detach().numpy()[0], h.detach().numpy()[0], rtol=1e-12, atol=1e-14)
    # the last layer's output is never dropped, even with a single layer
    with pytest.warns(UserWarning):
        single = nn.RNN(3, 4, dropout=1.0).train()
    assert np.count_nonzero(single(x.float())[0].detach().numpy()) == 5 * 2 * 4


def test_backward_reaches_every_parameter():
    ferrograd.manual_seed(10)
    for m in (nn.RNN(3, 4, 2, "relu", bidirectional=True), nn.LSTM(3, 4, 2, proj_size=2), nn.GRU(3, 4, bias=False)):
        out, hidden = m(ferrograd.randn(5, 2, 3))
        out.sum().backward()
        for name, p in m.named_parameters():
            assert p.grad is not None and tuple(p.grad.shape) == tuple(p.shape), name
            assert np.abs(p.grad.detach().numpy()).sum() > 0, name
