"""ferrograd.save / ferrograd.load: safetensors files, never pickles.

Round trips go through a path and through BytesIO.  The files are checked with the
safetensors package directly (so they are genuine safetensors files), and, where
PyTorch is installed, exchanged with ``safetensors.torch`` both ways.
"""

import collections
import io
import json
import pickle
import sys
import zipfile

import numpy as np
import pytest
import safetensors.numpy

import ferrograd


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def roundtrip(obj, tmp_path, how):
    if how == "path":
        path = tmp_path / "obj.safetensors"
        ferrograd.save(obj, path)
        return ferrograd.load(str(path))
    buf = io.BytesIO()
    ferrograd.save(obj, buf)
    buf.seek(0)
    return ferrograd.load(buf)


def same_tensor(a, b):
    return (
        isinstance(a, ferrograd.Tensor)
        and isinstance(b, ferrograd.Tensor)
        and a.dtype == b.dtype
        and tuple(a.shape) == tuple(b.shape)
        and a.tolist() == b.tolist()
    )


def assert_same(a, b):
    """Recursive equality that also checks container types and tensor dtypes."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, ferrograd.Tensor):
        assert same_tensor(a, b) and a.requires_grad == b.requires_grad
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        assert a == b or (a != a and b != b)  # NaN equals NaN here


HOW = pytest.mark.parametrize("how", ["path", "bytesio"])


@HOW
@pytest.mark.parametrize(
    "make",
    [
        lambda: ferrograd.tensor([[1.5, -2.0], [3.25, 0.0]]),
        lambda: ferrograd.tensor([1.0, 2.0], dtype=ferrograd.float64),
        lambda: ferrograd.tensor([-3, 0, 2**40]),
        lambda: ferrograd.tensor([True, False, True]),
        lambda: ferrograd.tensor(7.5),
        lambda: ferrograd.tensor(-4),
        lambda: ferrograd.zeros(0, 3),
    ],
)
def test_tensor_roundtrip(make, how, tmp_path):
    t = make()
    out = roundtrip(t, tmp_path, how)
    assert_same(t, out)


@HOW
def test_requires_grad_and_parameter(how, tmp_path):
    a = ferrograd.tensor([1.0, 2.0], requires_grad=True)
    p = ferrograd.nn.Parameter(ferrograd.tensor([3.0]))
    q = ferrograd.nn.Parameter(ferrograd.tensor([4.0]), requires_grad=False)
    out = roundtrip([a, p, q, a * 2], tmp_path, how)
    assert out[0].requires_grad and out[0].is_leaf and out[0].tolist() == [1.0, 2.0]
    assert type(out[1]) is ferrograd.nn.Parameter and out[1].requires_grad
    assert type(out[2]) is ferrograd.nn.Parameter and not out[2].requires_grad
    # a non-leaf is saved as its values; it loads as a leaf that requires grad
    assert out[3].tolist() == [2.0, 4.0] and out[3].requires_grad and out[3].grad_fn is None


@HOW
def test_views_and_non_contiguous(how, tmp_path):
    base = ferrograd.arange(24.0).reshape(4, 6)
    t = base.t()  # non-contiguous
    window = base[1:3, 2:5]  # a view into a bigger storage
    out = roundtrip({"t": t, "w": window}, tmp_path, how)
    assert same_tensor(out["t"], t) and out["t"].is_contiguous()
    assert out["w"].tolist() == [[8.0, 9.0, 10.0], [14.0, 15.0, 16.0]]
    # only the view's own values are written: 6 float32 values
    buf = io.BytesIO()
    ferrograd.save(window, buf)
    arrays = safetensors.numpy.load(buf.getvalue())
    assert [a.size for a in arrays.values()] == [6]


def test_shared_tensors_are_saved_as_copies(tmp_path):
    t = ferrograd.tensor([1.0, 2.0])
    out = roundtrip({"a": t, "b": t, "nested": [t]}, tmp_path, "bytesio")
    assert out["a"].tolist() == out["b"].tolist() == out["nested"][0].tolist() == [1.0, 2.0]
    # documented: every occurrence is its own copy, loading gives independent tensors
    out["a"].add_(1.0)
    assert out["b"].tolist() == [1.0, 2.0] and out["nested"][0].tolist() == [1.0, 2.0]


@HOW
def test_state_dict_is_plain_safetensors(how, tmp_path):
    sd = collections.OrderedDict(
        [
            ("layer.weight", ferrograd.tensor([[1.0, 2.0], [3.0, 4.0]])),
            ("layer.bias", ferrograd.tensor([0.5, -0.5])),
            ("bn.num_batches_tracked", ferrograd.tensor(12)),
            ("a.mask", ferrograd.tensor([True, False])),
            ("double", ferrograd.tensor([1.0], dtype=ferrograd.float64)),
        ]
    )
    out = roundtrip(sd, tmp_path, how)
    assert_same(sd, out)  # OrderedDict, same (unsorted) key order, dtypes
    path = tmp_path / "sd.safetensors"
    ferrograd.save(sd, path)
    raw = safetensors.numpy.load_file(str(path))
    assert sorted(raw) == sorted(sd)
    assert raw["layer.weight"].dtype == np.float32 and raw["layer.weight"].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert raw["bn.num_batches_tracked"].dtype == np.int64 and raw["bn.num_batches_tracked"].shape == ()
    assert raw["a.mask"].dtype == np.bool_ and raw["double"].dtype == np.float64


def test_plain_dict_stays_dict(tmp_path):
    out = roundtrip({"z": ferrograd.ones(1), "a": ferrograd.zeros(1)}, tmp_path, "path")
    assert type(out) is dict and list(out) == ["z", "a"]


def test_model_state_dict_roundtrip(tmp_path):
    nn = ferrograd.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    path = tmp_path / "model.safetensors"
    ferrograd.save(model.state_dict(), path)
    other = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    other.load_state_dict(ferrograd.load(path))
    x = ferrograd.randn(5, 3)
    assert other(x).tolist() == model(x).tolist()


OPTIMIZER_STATE = lambda: {  # noqa: E731
    "state": {
        0: {"step": ferrograd.tensor(3.0), "exp_avg": ferrograd.tensor([[0.1, 0.2]]),
            "exp_avg_sq": ferrograd.tensor([[0.01, 0.04]])},
        1: {"momentum_buffer": None},
        2: {},
    },
    "param_groups": [
        {
            "lr": 0.001,
            "betas": (0.9, 0.999),
            "eps": 1e-08,
            "weight_decay": 0,
            "amsgrad": False,
            "foreach": None,
            "name": "group-0",
            "big": 2**70,
            "inf": float("inf"),
            "nan": float("nan"),
            "params": [0, 1, 2],
        }
    ],
}


@HOW
def test_optimizer_like_state_roundtrip(how, tmp_path):
    state = OPTIMIZER_STATE()
    out = roundtrip(state, tmp_path, how)
    assert_same(state, out)
    assert list(out["state"]) == [0, 1, 2] and type(out["param_groups"][0]["betas"]) is tuple


def test_real_optimizer_state_dict(tmp_path):
    nn = ferrograd.nn
    model = nn.Linear(3, 2)
    opt = ferrograd.optim.Adam(model.parameters(), lr=0.01)
    model(ferrograd.ones(4, 3)).sum().backward()
    opt.step()
    sd = opt.state_dict()
    out = roundtrip({"model": model.state_dict(), "optimizer": sd, "epoch": 3}, tmp_path, "path")
    assert_same(sd, out["optimizer"])
    assert out["epoch"] == 3
    opt2 = ferrograd.optim.Adam(model.parameters(), lr=0.5)
    opt2.load_state_dict(out["optimizer"])
    assert opt2.param_groups[0]["lr"] == 0.01


@HOW
def test_nested_containers(how, tmp_path):
    obj = {
        "tuple": (1, "two", 3.0, None, True),
        "list_of_tuples": [(ferrograd.ones(2), 1), ()],
        "od": collections.OrderedDict([(3, "c"), (1, "a")]),
        "keys": {(1, 2): "tuple key", 1.5: "float key", None: "none key", False: "bool key"},
        "empty": {},
        "string": "héllo ✓",
    }
    assert_same(obj, roundtrip(obj, tmp_path, how))
    for scalar in [5, 2.5, None, "s", True, [], ()]:
        assert_same(scalar, roundtrip(scalar, tmp_path, how))


def test_file_object_position():
    # save writes at, and load reads from, the stream's current position
    buf = io.BytesIO()
    buf.write(b"prefix")
    ferrograd.save(ferrograd.tensor([1, 2]), buf)
    buf.seek(6)
    assert ferrograd.load(buf).tolist() == [1, 2]


@pytest.mark.parametrize(
    "obj, name",
    [
        (object(), "builtins.object"),
        ({"a": {1, 2}}, "builtins.set"),
        ([np.zeros(2)], "numpy.ndarray"),
        ({"x": np.float64(1.0)}, "numpy.float64"),
        (collections.defaultdict(list), "collections.defaultdict"),
    ],
)
def test_unsupported_objects(obj, name):
    with pytest.raises(TypeError, match=f"ferrograd.save cannot store objects of type {name}"):
        ferrograd.save(obj, io.BytesIO())


def test_tensor_dict_key_rejected():
    with pytest.raises(TypeError, match="tensor keys"):
        ferrograd.save({ferrograd.ones(1): 1}, io.BytesIO())


class _Trap:
    """Unpickling this creates a marker file: proof that a loader unpickled."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_file_is_refused_without_unpickling(tmp_path):
    marker = tmp_path / "unpickled"
    path = tmp_path / "evil.pt"
    with open(path, "wb") as f:
        pickle.dump({"weights": _Trap(str(marker))}, f, protocol=2)
    with pytest.raises(RuntimeError) as e:
        ferrograd.load(path)
    msg = str(e.value)
    assert "not a safetensors file" in msg and "never unpickles" in msg
    assert not marker.exists()


def test_zip_archive_is_refused(tmp_path):
    # torch.save's format: a zip archive holding data.pkl
    path = tmp_path / "archive.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"a": 1}))
    with pytest.raises(RuntimeError, match="is a zip archive \\(the format of torch.save\\), not a safetensors file"):
        ferrograd.load(path)


def test_torch_save_file_is_refused(torch, tmp_path):
    marker = tmp_path / "unpickled"
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2), "trap": _Trap(str(marker))}, path)
    with pytest.raises(RuntimeError, match="never unpickles"):
        ferrograd.load(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    "data",
    [b"", b"abc", b"\x10\x00\x00\x00\x00\x00\x00\x00{}", b"\x02\x00\x00\x00\x00\x00\x00\x00[]",
     b"\x05\x00\x00\x00\x00\x00\x00\x00\xff\xfe\xfd\xfc\xfb"],
)
def test_garbage_is_refused(data):
    with pytest.raises(RuntimeError, match="safetensors file"):
        ferrograd.load(io.BytesIO(data))


def test_invalid_offsets_are_refused():
    header = json.dumps({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    data = len(header).to_bytes(8, "little") + header + b"\x00" * 8  # 8 of 16 bytes
    with pytest.raises(RuntimeError, match="not a valid safetensors file"):
        ferrograd.load(io.BytesIO(data))


@pytest.mark.parametrize(
    "structure",
    ['{"version":1,"obj":{"T":"missing"}}', '{"version":1,"obj":{"D":5}}', '{"version":1}', "not json"],
)
def test_malformed_structure_is_refused(structure):
    raw = safetensors.numpy.save({"0": np.ones(1, np.float32)}, metadata={"ferrograd": structure})
    with pytest.raises(RuntimeError, match="ferrograd.load: "):
        ferrograd.load(io.BytesIO(raw))


def test_unsupported_dtype_in_file():
    raw = safetensors.numpy.save({"half": np.ones(2, np.uint16)})
    with pytest.raises(NotImplementedError, match="tensor 'half' has dtype U16"):
        ferrograd.load(io.BytesIO(raw))


def test_foreign_safetensors_file_loads_as_dict():
    raw = safetensors.numpy.save({"b": np.arange(3, dtype=np.int64), "a": np.eye(2, dtype=np.float32)})
    out = ferrograd.load(io.BytesIO(raw))
    assert type(out) is dict and sorted(out) == ["a", "b"]
    assert out["a"].dtype == ferrograd.float32 and out["a"].tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert out["b"].dtype == ferrograd.int64 and out["b"].tolist() == [0, 1, 2]
    out["a"].mul_(2.0)  # loaded tensors are writable
    assert out["a"].tolist() == [[2.0, 0.0], [0.0, 2.0]]


def test_map_location(tmp_path):
    path = tmp_path / "t.safetensors"
    ferrograd.save(ferrograd.tensor([1.0]), path)
    for loc in ["cpu", ferrograd.device("cpu"), {"cuda:0": "cpu"}, lambda storage, loc: storage]:
        assert ferrograd.load(path, map_location=loc).tolist() == [1.0]
    with pytest.raises(RuntimeError, match="cuda"):
        ferrograd.load(path, map_location="cuda")
    assert ferrograd.load(path, weights_only=False).tolist() == [1.0]


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        ferrograd.load(tmp_path / "nope.safetensors")
    missing = tmp_path / "no_dir"
    with pytest.raises(RuntimeError, match=f"^Parent directory {missing} does not exist.$"):
        ferrograd.save(ferrograd.ones(1), missing / "x.safetensors")


# --- exchange with PyTorch through safetensors.torch ------------------------------


def test_pytorch_reads_our_state_dict(torch, tmp_path):
    from safetensors.torch import load_file

    sd = collections.OrderedDict(
        [
            ("w", ferrograd.tensor([[1.0, 2.0, 3.0]])),
            ("d", ferrograd.tensor([0.25], dtype=ferrograd.float64)),
            ("n", ferrograd.tensor(9)),
            ("m", ferrograd.tensor([False, True])),
            ("t", ferrograd.arange(6.0).reshape(2, 3).t()),
        ]
    )
    path = tmp_path / "ours.safetensors"
    ferrograd.save(sd, path)
    theirs = load_file(str(path))
    assert sorted(theirs) == sorted(sd)
    for k, v in sd.items():
        assert str(theirs[k].dtype) == str(v.dtype)
        assert theirs[k].tolist() == v.tolist()
    model = torch.nn.Linear(3, 1)
    model.load_state_dict({"weight": theirs["w"], "bias": torch.tensor([0.5])})
    assert model(torch.ones(1, 3)).item() == 6.5


def test_we_read_pytorch_state_dict(torch, tmp_path):
    from safetensors.torch import save_file

    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    path = tmp_path / "theirs.safetensors"
    save_file(tm.state_dict(), str(path))
    sd = ferrograd.load(path)
    assert sorted(sd) == sorted(tm.state_dict())
    nn = ferrograd.nn
    fm = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    fm.load_state_dict(sd)
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    expected = tm(torch.from_numpy(x)).detach().numpy()
    got = fm(ferrograd.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    # other dtypes PyTorch writes
    save_file({"i": torch.tensor([1, 2]), "b": torch.tensor([True]), "d": torch.tensor([1.5], dtype=torch.float64)},
              str(path))
    out = ferrograd.load(path)
    assert out["i"].dtype == ferrograd.int64 and out["i"].tolist() == [1, 2]
    assert out["b"].dtype == ferrograd.bool and out["d"].dtype == ferrograd.float64


def test_every_dtype_round_trips_and_loads_in_pytorch(torch, tmp_path):
    from safetensors.torch import load_file, save_file

    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
             "float64"]
    values = [1.5, 2.25, 3.0, 0.0]
    path = tmp_path / "all.safetensors"
    ours = {n: ferrograd.tensor(values, dtype=getattr(ferrograd, n)) for n in names}
    ferrograd.save(ours, path)
    back = ferrograd.load(path)
    theirs = load_file(str(path))
    for n in names:
        assert back[n].dtype == getattr(ferrograd, n)
        assert back[n].tolist() == ours[n].tolist()
        assert theirs[n].dtype == getattr(torch, n)
        assert theirs[n].tolist() == torch.tensor(values, dtype=getattr(torch, n)).tolist()
    # and files written by PyTorch
    save_file({n: torch.tensor(values, dtype=getattr(torch, n)) for n in names}, str(path))
    loaded = ferrograd.load(path)
    for n in names:
        assert loaded[n].dtype == getattr(ferrograd, n) and loaded[n].tolist() == ours[n].tolist()


# --- the format is told from the file's whole structure, not from its first byte ---------------
#
# A safetensors file starts with its header length (8 bytes, little-endian), which safetensors
# pads to a multiple of 8: one header length in 32 ends in byte 0x80, pickle's PROTO opcode.


def header_length(raw):
    return int.from_bytes(raw[:8], "little")


def random_state_dict(rng):
    dtypes = [np.float32, np.float64, np.int64, np.bool_]
    sd = collections.OrderedDict()
    for i in range(int(rng.integers(1, 21))):
        name = f"{i}." + "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz_."), int(rng.integers(1, 40))))
        shape = tuple(int(d) for d in rng.integers(0, 5, size=int(rng.integers(0, 4))))
        dtype = dtypes[int(rng.integers(len(dtypes)))]
        a = np.asarray(rng.standard_normal(shape) * 10).astype(dtype)
        sd[name] = ferrograd.from_numpy(a)
    return sd


def test_generated_state_dicts_roundtrip_whatever_the_header_length():
    rng = np.random.default_rng(1234)
    low_bytes, first_pairs = [], []
    for _ in range(400):
        sd = random_state_dict(rng)
        buf = io.BytesIO()
        ferrograd.save(sd, buf)
        raw = buf.getvalue()
        low_bytes.append(raw[0])
        first_pairs.append(raw[:2])
        buf.seek(0)
        assert_same(sd, ferrograd.load(buf))
    # the header lengths the old first-byte check refused are really among them
    assert low_bytes.count(0x80) >= 5, low_bytes.count(0x80)
    # ... including some whose first two bytes are a pickle PROTO pair (0x80, protocol 2..5)
    assert any(p[0] == 0x80 and 2 <= p[1] <= 5 for p in first_pairs)


def test_header_length_that_looks_like_a_protocol_2_pickle(tmp_path):
    # a state_dict whose header length is 0x280: the file starts b"\x80\x02", the first two
    # bytes of every protocol-2 pickle (e.g. torch.save's legacy format)
    for pad in range(400):
        sd = {"w" + "x" * pad: ferrograd.arange(4.0)}
        buf = io.BytesIO()
        ferrograd.save(sd, buf)
        if header_length(buf.getvalue()) == 0x280:
            break
    else:
        pytest.fail("no key length gives a header of 0x280 bytes")
    assert buf.getvalue()[:2] == b"\x80\x02"
    assert_same(sd, roundtrip(sd, tmp_path, "path"))
    assert_same(sd, roundtrip(sd, tmp_path, "bytesio"))
    arrays = safetensors.numpy.load(buf.getvalue())  # (and it is a genuine safetensors file)
    assert list(arrays) == list(sd)


@HOW
def test_sequential_of_four_linear_layers(how, tmp_path):
    model = ferrograd.nn.Sequential(*[ferrograd.nn.Linear(16, 16) for _ in range(4)])
    sd = model.state_dict()
    out = roundtrip(sd, tmp_path, how)
    assert_same(sd, out)
    model2 = ferrograd.nn.Sequential(*[ferrograd.nn.Linear(16, 16) for _ in range(4)])
    model2.load_state_dict(out)
    x = ferrograd.randn(3, 16)
    assert model2(x).tolist() == model(x).tolist()


def test_legacy_torch_save_pickle_is_refused(torch, tmp_path):
    marker = tmp_path / "unpickled"
    path = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2), "trap": _Trap(str(marker))}, path, _use_new_zipfile_serialization=False)
    assert path.read_bytes()[:2] == b"\x80\x02"
    with pytest.raises(RuntimeError, match="is a pickle \\(the legacy format of torch.save\\), not a"):
        ferrograd.load(path)
    assert not marker.exists()


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_pickle_protocols_are_refused(protocol):
    raw = pickle.dumps({"a": [1, 2, 3]}, protocol=protocol)
    with pytest.raises(RuntimeError, match="is a pickle .* never unpickles"):
        ferrograd.load(io.BytesIO(raw))


@pytest.mark.parametrize(
    "data",
    [
        b"\x80",  # a lone 0x80
        b"\x80\x00\x00\x00\x00\x00\x00\x00" + b"{" + b" " * 0x7F,  # 0x80 but no PROTO pair: a length
        b"\x00" * 8 + b"{}",  # header length 0
        b"\x02\x00\x00\x00\x00\x00\x00\x00 {",  # the header must start with "{", no whitespace
        b"\x02\x00\x00\x00\x00\x00\x00\x00[]",
        pickle.dumps([1], protocol=0),
        b"PK\x05\x06" + b"\x00" * 18,  # (an empty zip: not torch.save's format, just garbage)
    ],
)
def test_not_safetensors(data):
    with pytest.raises(RuntimeError, match="safetensors file") as e:
        ferrograd.load(io.BytesIO(data))
    assert "is a pickle" not in str(e.value) and "zip archive" not in str(e.value)


# --- deep nesting: no recursion, one limit on both sides ----------------------------------------


def nested(depth, leaf):
    """``depth`` containers, cycling through list, dict (also with a tuple key) and tuple."""
    obj = leaf
    for i in range(depth):
        kind = i % 4
        if kind == 0:
            obj = [obj, i]
        elif kind == 1:
            obj = {"k": obj, "i": i}
        elif kind == 2:
            obj = (i, obj)
        else:
            obj = collections.OrderedDict([((i, ("t",)), obj)])
    return obj


def unnest(obj, depth):
    """Walks down ``nested``'s structure without recursion; returns the leaf."""
    for i in reversed(range(depth)):
        kind = i % 4
        if kind == 0:
            assert type(obj) is list and obj[1] == i
            obj = obj[0]
        elif kind == 1:
            assert type(obj) is dict and list(obj) == ["k", "i"] and obj["i"] == i
            obj = obj["k"]
        elif kind == 2:
            assert type(obj) is tuple and obj[0] == i
            obj = obj[1]
        else:
            assert type(obj) is collections.OrderedDict and list(obj) == [(i, ("t",))]
            obj = obj[(i, ("t",))]
    return obj


def call_deep(frames, fn):
    """Calls ``fn`` ``frames`` Python frames further down the stack."""
    return fn() if frames == 0 else call_deep(frames - 1, fn)


@pytest.mark.parametrize("depth", [900, ferrograd.serialization._MAX_DEPTH])
def test_deeply_nested_structure_roundtrips(depth, tmp_path):
    assert sys.getrecursionlimit() <= 1000 + 50  # (the default; pytest leaves it alone)
    leaf = ferrograd.tensor([1.5, -2.0], requires_grad=True)
    path = tmp_path / "deep.safetensors"
    # a few dozen frames down, as from inside a training script
    call_deep(40, lambda: ferrograd.save(nested(depth, leaf), path))
    out = call_deep(40, lambda: ferrograd.load(path))
    bottom = unnest(out, depth)
    assert same_tensor(bottom, leaf) and bottom.requires_grad


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5, 17])
def test_nested_helper_roundtrip(depth, tmp_path):
    obj = nested(depth, ferrograd.ones(1))
    assert_same(obj, roundtrip(obj, tmp_path, "bytesio"))


@pytest.mark.parametrize("kind", ["list", "dict", "tuple", "mixed"])
def test_nesting_deeper_than_the_limit_is_refused_on_save(kind):
    limit = ferrograd.serialization._MAX_DEPTH
    make = {"list": lambda x: [x], "dict": lambda x: {"a": x}, "tuple": lambda x: (x,)}
    kinds = ["list", "dict", "tuple"] if kind == "mixed" else [kind]
    obj = ferrograd.ones(1)
    for i in range(limit + 1):
        obj = make[kinds[i % len(kinds)]](obj)
    message = f"nesting deeper than {limit} levels of dicts, lists and tuples is not supported"
    with pytest.raises(ValueError, match=message):
        ferrograd.save(obj, io.BytesIO())
    # one level less is fine
    inner = obj[0] if type(obj) in (list, tuple) else obj["a"]
    ferrograd.save(inner, io.BytesIO())


def raw_with_structure(structure, version=2):
    return safetensors.numpy.save(
        {"0": np.ones(1, np.float32)},
        metadata={"ferrograd": json.dumps({"version": version, "obj": structure})},
    )


def test_nesting_deeper_than_the_limit_is_refused_on_load():
    limit = ferrograd.serialization._MAX_DEPTH
    ok = ferrograd.load(io.BytesIO(raw_with_structure([{"L": 1}] * limit + [{"T": "0"}])))
    for _ in range(limit):
        ok = ok[0]
    assert ok.tolist() == [1.0]
    # one container more: around the tensor, or an empty one at the bottom
    for structure in [[{"L": 1}] * (limit + 1) + [{"T": "0"}], [{"L": 1}] * limit + [{"L": 0}]]:
        raw = raw_with_structure(structure)
        with pytest.raises(RuntimeError, match=f"ferrograd.load: nesting deeper than {limit} levels"):
            ferrograd.load(io.BytesIO(raw))


def test_format_1_tree_so_deep_that_json_recurses_is_refused_clearly():
    structure = '{"version":1,"obj":' + '{"L":[' * 3000 + "1" + "]}" * 3000 + "}"
    raw = safetensors.numpy.save({"0": np.ones(1, np.float32)}, metadata={"ferrograd": structure})
    with pytest.raises(RuntimeError, match="ferrograd.load: the structure .* is nested too deeply"):
        ferrograd.load(io.BytesIO(raw))


def test_reference_cycle_is_refused():
    a = [ferrograd.ones(1)]
    a.append({"back": a})
    with pytest.raises(ValueError, match="the list contains itself \\(a reference cycle\\)"):
        ferrograd.save(a, io.BytesIO())
    t = ferrograd.ones(1)
    shared = [t]
    out = ferrograd.load(_saved([shared, shared, (shared,)]))  # shared, not cyclic: fine
    assert out[0][0].tolist() == out[1][0].tolist() == out[2][0][0].tolist() == [1.0]


def _saved(obj):
    buf = io.BytesIO()
    ferrograd.save(obj, buf)
    buf.seek(0)
    return buf


# what ferrograd 0.x wrote before the format became flat (format 1: a JSON tree)
_FORMAT_1 = (
    '{"version":1,"obj":{"D":[["a",{"L":[{"T":"0","rg":true},{"U":[1,"x",null,2.5]}]}],'
    '[{"U":[1,2]},{"D":[["b",{"T":"1","rg":true,"cls":"Parameter"}]],"od":true}],'
    '["e",{"L":[]}],["f",{"D":[]}],["g",{"U":[]}]]}}'
)


def test_format_1_files_still_load():
    raw = safetensors.numpy.save(
        {"0": np.ones(2, np.float32), "1": np.zeros(3, np.float32)}, metadata={"ferrograd": _FORMAT_1}
    )
    out = ferrograd.load(io.BytesIO(raw))
    expected = {
        "a": [ferrograd.ones(2, requires_grad=True), (1, "x", None, 2.5)],
        (1, 2): collections.OrderedDict(b=ferrograd.nn.Parameter(ferrograd.zeros(3))),
        "e": [],
        "f": {},
        "g": (),
    }
    assert_same(expected, out)
    assert type(out[(1, 2)]["b"]) is ferrograd.nn.Parameter


@pytest.mark.parametrize(
    "structure",
    [
        [],  # no object
        [{"L": 2}, 1],  # ends inside a container
        [{"L": 1}, 1, 2],  # tokens after the end
        [{"L": -1}],
        [{"L": True}],
        [{"D": 1}, [1], 2],  # an unhashable key
        [{"X": 1}, 1],
        [[1]],
        {"L": []},
        [{"T": "missing"}],
    ],
)
def test_malformed_tokens_are_refused(structure):
    with pytest.raises(RuntimeError, match="ferrograd.load: "):
        ferrograd.load(io.BytesIO(raw_with_structure(structure)))
