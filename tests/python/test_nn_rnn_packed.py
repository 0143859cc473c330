"""ferrograd.nn.utils.rnn (PackedSequence, pad / pack / unpad / unpack) and the recurrent
layers on packed input, against PyTorch (the comparisons skip without torch) and by hand."""

import warnings

import numpy as np
import pytest

import ferrograd
from ferrograd.nn.utils import rnn as frnn


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


_rng = np.random.default_rng(0)
LENGTHS = [2, 5, 3, 1]
SEQS = [_rng.normal(size=(n, 3)) for n in LENGTHS]


# ------------------------------------------------------------------ by hand


def test_pad_sequence_by_hand():
    a, b = ferrograd.tensor([1.0, 2.0, 3.0]), ferrograd.tensor([4.0])
    assert frnn.pad_sequence([a, b]).tolist() == [[1.0, 4.0], [2.0, 0.0], [3.0, 0.0]]
    assert frnn.pad_sequence([a, b], batch_first=True, padding_value=-1).tolist() == [[1.0, 2.0, 3.0],
                                                                                     [4.0, -1.0, -1.0]]
    assert frnn.pad_sequence((a, b), batch_first=True, padding_side="left").tolist() == [[1.0, 2.0, 3.0],
                                                                                        [0.0, 0.0, 4.0]]


def test_pack_and_pad_by_hand():
    a, b, c = ferrograd.tensor([1.0, 2.0, 3.0]), ferrograd.tensor([4.0, 5.0]), ferrograd.tensor([6.0])
    packed = frnn.pack_sequence([a, b, c])
    assert isinstance(packed, frnn.PackedSequence) and isinstance(packed, tuple)
    assert packed.data.tolist() == [1.0, 4.0, 6.0, 2.0, 5.0, 3.0]
    assert packed.batch_sizes.tolist() == [3, 2, 1] and packed.batch_sizes.dtype == ferrograd.int64
    assert packed.sorted_indices is None and packed.unsorted_indices is None
    padded, lengths = frnn.pad_packed_sequence(packed, batch_first=True, total_length=4)
    assert padded.tolist() == [[1.0, 2.0, 3.0, 0.0], [4.0, 5.0, 0.0, 0.0], [6.0, 0.0, 0.0, 0.0]]
    assert lengths.tolist() == [3, 2, 1]
    # unsorted: sorted here, and put back in the given order when unpacking
    packed = frnn.pack_sequence([c, a, b], enforce_sorted=False)
    assert packed.sorted_indices.tolist() == [1, 2, 0]
    assert packed.unsorted_indices.tolist() == [2, 0, 1]
    assert [s.tolist() for s in frnn.unpack_sequence(packed)] == [[6.0], [1.0, 2.0, 3.0], [4.0, 5.0]]
    padded = frnn.pad_sequence([c, a, b])
    assert [s.tolist() for s in frnn.unpad_sequence(padded, ferrograd.tensor([1, 3, 2]))] == [
        [6.0], [1.0, 2.0, 3.0], [4.0, 5.0]]


def test_packing_is_differentiable():
    seqs = [ferrograd.tensor(s, requires_grad=True) for s in SEQS]
    packed = frnn.pack_padded_sequence(frnn.pad_sequence(seqs, batch_first=True), LENGTHS, batch_first=True,
                                       enforce_sorted=False)
    padded, _ = frnn.pad_packed_sequence(packed)
    (padded * 2).sum().backward()
    for s in seqs:
        assert s.grad.equal(ferrograd.full(tuple(s.shape), 2.0, dtype=ferrograd.float64))


def test_packed_sequence_methods():
    packed = frnn.pack_sequence([ferrograd.ones(2, 3), ferrograd.ones(1, 3)])
    assert packed.to(ferrograd.float32) is packed
    d = packed.double()
    assert d.data.dtype == ferrograd.float64 and d.batch_sizes is packed.batch_sizes
    assert type(d) is frnn.PackedSequence
    assert not packed.is_cuda and not packed.is_pinned()
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert frnn.PackedSequence((data, batch_sizes)).data is data
    assert frnn.invert_permutation(ferrograd.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    assert frnn.invert_permutation(None) is None


def test_rnn_on_packed_input_by_hand():
    # an RNN over a packed batch equals the same RNN run on each sequence alone
    ferrograd.manual_seed(0)
    for cls in (ferrograd.nn.RNN, ferrograd.nn.LSTM, ferrograd.nn.GRU):
        m = cls(3, 4, num_layers=2, bidirectional=True).double()
        seqs = [ferrograd.tensor(s) for s in SEQS]
        out, hidden = m(frnn.pack_sequence(seqs, enforce_sorted=False))
        assert type(out) is frnn.PackedSequence
        outs = frnn.unpack_sequence(out)
        h_n = hidden[0] if cls is ferrograd.nn.LSTM else hidden
        for i, s in enumerate(seqs):
            alone, hidden_alone = m(s)
            h_alone = hidden_alone[0] if cls is ferrograd.nn.LSTM else hidden_alone
            np.testing.assert_allclose(outs[i].detach().numpy(), alone.detach().numpy(), rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(h_n[:, i].detach().numpy(), h_alone.detach().numpy(), rtol=1e-12,
                                       atol=1e-14)


# ------------------------------------------------------------------ against PyTorch


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pack_pad_match_torch(torch, batch_first, enforce_sorted):
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    seqs = sorted(SEQS, key=len, reverse=True) if enforce_sorted else SEQS
    out = []
    for lib, mod in ((torch, torch.nn.utils.rnn), (ferrograd, frnn)):
        ts = [lib.tensor(s) for s in seqs]
        padded = mod.pad_sequence(ts, batch_first=batch_first, padding_value=-2.0)
        packed = mod.pack_padded_sequence(padded, lib.tensor(lengths), batch_first=batch_first,
                                          enforce_sorted=enforce_sorted)
        unpacked, unpacked_lengths = mod.pad_packed_sequence(packed, batch_first=batch_first, padding_value=7.0,
                                                             total_length=6)
        left = mod.pad_sequence(ts, batch_first=batch_first, padding_side="left")
        indices = [None if i is None else i.tolist() for i in (packed.sorted_indices, packed.unsorted_indices)]
        out.append((padded.numpy(), packed.data.numpy(), packed.batch_sizes.tolist(), indices, unpacked.numpy(),
                    unpacked_lengths.tolist(), left.numpy(),
                    [s.numpy() for s in mod.unpack_sequence(packed)],
                    [s.numpy() for s in mod.unpad_sequence(unpacked, unpacked_lengths, batch_first=batch_first)]))
    theirs, ours = out
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if isinstance(b, list) and b and isinstance(b[0], np.ndarray):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)
        elif isinstance(b, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=str(k))
        else:
            assert a == b, k


def test_rnn_utils_errors_match_torch(torch):
    def cases(lib, mod):
        x = lib.zeros(4, 3, 2)
        return [
            lambda: mod.pack_padded_sequence(x, [4, 2, 3]),
            lambda: mod.pack_padded_sequence(x, [4, 3]),
            lambda: mod.pack_padded_sequence(x, [4, 3, 0]),
            lambda: mod.pack_padded_sequence(lib.zeros(0, 3, 2), [1, 1, 1]),
            lambda: mod.pack_padded_sequence(x, lib.tensor([[4, 3, 1]])),
            lambda: mod.pad_sequence([]),
            lambda: mod.pad_sequence([lib.ones(2)], padding_side="middle"),
            lambda: mod.pad_sequence(5),
            lambda: mod.pad_sequence([lib.ones(2, 3), lib.ones(3, 4)]),
            lambda: mod.pad_sequence([lib.tensor(1.0)]),
            lambda: mod.pad_packed_sequence(mod.pack_padded_sequence(x, [4, 3, 1]), total_length=3),
            lambda: mod.PackedSequence(lib.ones(2)),
        ]

    for k, (t_case, f_case) in enumerate(zip(cases(torch, torch.nn.utils.rnn), cases(ferrograd, frnn))):
        expected = _error(t_case)
        assert expected is not None, k
        assert _error(f_case) == expected, k


def test_pad_sequence_dtype_of_first_matches_torch(torch):
    for lib, mod in ((torch, torch.nn.utils.rnn), (ferrograd, frnn)):
        out = mod.pad_sequence([lib.ones(2, 3), lib.ones(3, 3, dtype=lib.float64)])
        assert str(out.dtype) == "torch.float32"
        assert tuple(out.shape) == (3, 2, 3)


RNN_CONFIGS = [
    ("RNN", {}),
    ("RNN", dict(nonlinearity="relu", num_layers=2)),
    ("LSTM", dict(bidirectional=True)),
    ("LSTM", dict(num_layers=2, proj_size=2, bidirectional=True)),
    ("GRU", dict(num_layers=2, bidirectional=True)),
    ("GRU", dict(batch_first=True)),
]


def _copy_params(tm, fm):
    with ferrograd.no_grad():
        for (n, tp), (n2, fp) in zip(tm.named_parameters(), fm.named_parameters()):
            assert n == n2
            fp.copy_(ferrograd.tensor(tp.detach().numpy()))


@pytest.mark.parametrize("with_hx", [False, True])
@pytest.mark.parametrize("cls,kwargs", RNN_CONFIGS, ids=[f"{c}-{k}" for c, k in RNN_CONFIGS])
def test_recurrent_layers_on_packed_input_match_torch(torch, cls, kwargs, with_hx):
    tm = getattr(torch.nn, cls)(3, 4, dtype=torch.float64, **kwargs)
    fm = getattr(ferrograd.nn, cls)(3, 4, dtype=ferrograd.float64, **kwargs)
    _copy_params(tm, fm)
    batch_first = kwargs.get("batch_first", False)
    num = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    h_size = kwargs.get("proj_size", 0) or 4
    rng = np.random.default_rng(1)
    h0, c0 = rng.normal(size=(num, len(LENGTHS), h_size)), rng.normal(size=(num, len(LENGTHS), 4))
    weights = None
    results = []
    for lib, mod, m in ((torch, torch.nn.utils.rnn, tm), (ferrograd, frnn, fm)):
        seqs = [lib.tensor(s, requires_grad=True) for s in SEQS]
        packed = mod.pack_padded_sequence(mod.pad_sequence(seqs, batch_first=batch_first), LENGTHS,
                                          batch_first=batch_first, enforce_sorted=False)
        hx = None
        if with_hx:
            hx = lib.tensor(h0, requires_grad=True)
            hx = (hx, lib.tensor(c0, requires_grad=True)) if cls == "LSTM" else hx
        out, hidden = m(packed, hx)
        assert type(out).__name__ == "PackedSequence"
        padded, lengths = mod.pad_packed_sequence(out, batch_first=batch_first)
        hs = list(hidden) if cls == "LSTM" else [hidden]
        if weights is None:
            weights = [rng.normal(size=tuple(padded.shape))] + [rng.normal(size=tuple(h.shape)) for h in hs]
        loss = (padded * lib.tensor(weights[0])).sum() + sum((h * lib.tensor(w)).sum() for h, w in zip(hs, weights[1:]))
        loss.backward()
        grads = [s.grad.numpy() for s in seqs] + [p.grad.numpy() for p in m.parameters()]
        if with_hx:
            grads += [t.grad.numpy() for t in (hx if cls == "LSTM" else (hx,))]
        results.append((out.data.detach().numpy(), out.batch_sizes.tolist(), [h.detach().numpy() for h in hs],
                        lengths.tolist(), grads))
    theirs, ours = results
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
    assert ours[1] == theirs[1] and ours[3] == theirs[3]
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert len(ours[4]) == len(theirs[4])
    for a, b in zip(ours[4], theirs[4]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_packed_input_errors_match_torch(torch):
    def cases(lib, mod):
        packed = mod.pack_sequence([lib.ones(3, 3), lib.ones(2, 3)])
        return [
            lambda: lib.nn.GRU(4, 5)(packed),
            lambda: lib.nn.RNN(3, 5)(packed, lib.zeros(1, 3, 5)),
            lambda: lib.nn.GRU(3, 5, bidirectional=True)(packed, lib.zeros(1, 2, 5)),
        ]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, (t_case, f_case) in enumerate(zip(cases(torch, torch.nn.utils.rnn), cases(ferrograd, frnn))):
            expected = _error(t_case)
            assert expected is not None, k
            assert _error(f_case) == expected, k
