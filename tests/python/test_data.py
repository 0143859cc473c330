"""ferrograd.utils.data: datasets, samplers, default_collate and the DataLoader.

Expected values are worked out by hand (batching, splitting, collation rules); where
PyTorch is installed the same inputs are also run through torch.utils.data and the
structures compared.  Worker tests use at most two workers (the default ``fork``
start method, one test with ``spawn``).  Shuffling draws from ferrograd's own RNG
streams, so those tests check permutation properties and reproducibility, not
PyTorch's exact order.
"""

import collections
import gc
import json
import multiprocessing
import os
import random
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import ferrograd
from ferrograd.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def values(t):
    assert isinstance(t, ferrograd.Tensor)
    return t.tolist()


# --- datasets --------------------------------------------------------------------


class Range(Dataset):
    def __init__(self, n, offset=0):
        self.n = n
        self.offset = offset

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.offset + i


def test_tensor_dataset():
    x = ferrograd.arange(12).reshape(4, 3)
    y = ferrograd.tensor([1.0, 2.0, 3.0, 4.0])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    a, b = ds[2]
    assert values(a) == [6, 7, 8] and b.item() == 3.0
    assert isinstance(ds[0], tuple)
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(ferrograd.ones(3), ferrograd.ones(4))


def test_subset_and_getitems():
    ds = Subset(Range(10), [7, 2, 5])
    assert len(ds) == 3
    assert [ds[i] for i in range(3)] == [7, 2, 5]
    assert ds.__getitems__([2, 0]) == [5, 7]
    # DataLoader uses __getitems__ and collates
    assert values(next(iter(DataLoader(ds, batch_size=3)))) == [7, 2, 5]


def test_concat_dataset():
    ds = ConcatDataset([Range(3), Range(0), Range(4, offset=100)])
    assert ds.cumulative_sizes == [3, 3, 7]
    assert len(ds) == 7
    assert [ds[i] for i in range(7)] == [0, 1, 2, 100, 101, 102, 103]
    assert ds[-1] == 103 and ds[-7] == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        ds[-8]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Range(2), Stream(3)])
    both = Range(2) + Range(2, offset=10)
    assert isinstance(both, ConcatDataset) and [both[i] for i in range(4)] == [0, 1, 10, 11]


class Stream(IterableDataset):
    """Yields start .. start+n-1; in a worker, only the items of that worker's shard."""

    def __init__(self, n, start=0):
        self.n = n
        self.start = start

    def __len__(self):
        return self.n

    def __iter__(self):
        info = get_worker_info()
        items = range(self.start, self.start + self.n)
        if info is None:
            return iter(items)
        return iter(items[info.id :: info.num_workers])


def test_chain_and_stack_dataset():
    chained = Stream(2) + Stream(3, start=10)
    assert isinstance(chained, ChainDataset)
    assert list(chained) == [0, 1, 10, 11, 12] and len(chained) == 5
    st = StackDataset(Range(3), Range(3, offset=5))
    assert st[1] == (1, 6)
    st = StackDataset(a=Range(3), b=Range(3, offset=5))
    assert st[2] == {"a": 2, "b": 7}
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Range(3), Range(4))


def test_random_split_lengths_partition():
    g = ferrograd.Generator().manual_seed(0)
    parts = random_split(Range(10), [3, 7], generator=g)
    assert [len(p) for p in parts] == [3, 7]
    items = [p[i] for p in parts for i in range(len(p))]
    assert sorted(items) == list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(Range(10), [3, 6])


@pytest.mark.parametrize(
    "n, fractions, expected",
    [
        (10, [0.5, 0.3, 0.2], [5, 3, 2]),
        # floors 3, 3, 3; the remaining 2 go to the first two splits
        (11, [1 / 3, 1 / 3, 1 / 3], [4, 4, 3]),
        # floors 2, 2, 0; the remaining 1 goes to the first split
        (5, [0.5, 0.4, 0.1], [3, 2, 0]),
    ],
)
def test_random_split_fractions(n, fractions, expected):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        parts = random_split(Range(n), fractions, generator=ferrograd.Generator().manual_seed(1))
    assert [len(p) for p in parts] == expected
    empty = [i for i, k in enumerate(expected) if k == 0]
    msgs = [str(x.message) for x in w]
    assert msgs == [f"Length of split at index {i} is 0. This might result in an empty dataset." for i in empty]
    assert sorted(p[i] for p in parts for i in range(len(p))) == list(range(n))


def test_random_split_fractions_match_torch(torch):
    for n, fr in [(10, [0.5, 0.3, 0.2]), (11, [1 / 3] * 3), (5, [0.5, 0.4, 0.1]), (7, [0.25, 0.75])]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = [len(p) for p in random_split(Range(n), fr)]
            theirs = [len(p) for p in torch.utils.data.random_split(range(n), fr)]
        assert ours == theirs


def test_random_split_reproducible():
    def split(gen):
        return [p.indices for p in random_split(Range(20), [0.5, 0.5], generator=gen)]

    assert split(ferrograd.Generator().manual_seed(7)) == split(ferrograd.Generator().manual_seed(7))
    assert split(ferrograd.Generator().manual_seed(7)) != split(ferrograd.Generator().manual_seed(8))
    # the default generator is the global one that manual_seed seeds
    ferrograd.manual_seed(3)
    a = [p.indices for p in random_split(Range(20), [10, 10])]
    ferrograd.manual_seed(3)
    b = [p.indices for p in random_split(Range(20), [10, 10])]
    assert a == b


# --- samplers --------------------------------------------------------------------


def test_sequential_and_batch_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert len(SequentialSampler(range(4))) == 4
    bs = BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]] and len(bs) == 4
    bs = BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=True)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and len(bs) == 3
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=True"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=1"):
        BatchSampler(range(3), 2, 1)


def test_sampler_has_no_len():
    class Evens(Sampler):
        def __iter__(self):
            return iter([0, 2, 4])

    with pytest.raises(TypeError):
        len(Evens())
    assert list(Evens()) == [0, 2, 4]
    with pytest.raises(NotImplementedError):
        iter(Sampler())


def test_random_sampler_permutation_and_reproducibility():
    s = RandomSampler(range(50), generator=ferrograd.Generator().manual_seed(5))
    first = list(s)
    assert sorted(first) == list(range(50)) and len(s) == 50
    second = list(s)  # the generator moved on: a new order
    assert sorted(second) == list(range(50)) and second != first
    again = list(RandomSampler(range(50), generator=ferrograd.Generator().manual_seed(5)))
    assert again == first
    # without a generator, the order follows the global seed
    ferrograd.manual_seed(11)
    a = list(RandomSampler(range(50)))
    ferrograd.manual_seed(11)
    assert list(RandomSampler(range(50))) == a


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(4), num_samples=10, generator=ferrograd.Generator().manual_seed(0))
    out = list(s)
    # two full permutations, then 2 items of a third
    assert len(out) == 10 and len(s) == 10
    assert sorted(out[:4]) == [0, 1, 2, 3] and sorted(out[4:8]) == [0, 1, 2, 3]
    assert len(set(out[8:])) == 2
    s = RandomSampler(range(3), replacement=True, num_samples=70, generator=ferrograd.Generator().manual_seed(0))
    out = list(s)
    assert len(out) == 70 and set(out) == {0, 1, 2}
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=1"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler([])


def test_subset_random_sampler():
    s = SubsetRandomSampler([10, 20, 30, 40], generator=ferrograd.Generator().manual_seed(2))
    assert sorted(s) == [10, 20, 30, 40] and len(s) == 4


# --- default_collate / default_convert --------------------------------------------

Point = collections.namedtuple("Point", ["x", "y"])


def test_collate_numbers_and_tensors():
    out = default_collate([1, 2, 3])
    assert out.dtype == ferrograd.int64 and values(out) == [1, 2, 3]
    out = default_collate([0.5, 1.5])
    assert out.dtype == ferrograd.float64 and values(out) == [0.5, 1.5]
    out = default_collate([True, False])
    assert out.dtype == ferrograd.bool and values(out) == [True, False]
    out = default_collate([ferrograd.tensor([1.0, 2.0]), ferrograd.tensor([3.0, 4.0])])
    assert out.dtype == ferrograd.float32 and values(out) == [[1.0, 2.0], [3.0, 4.0]]
    out = default_collate([np.array([1, 2]), np.array([3, 4])])
    assert out.dtype == ferrograd.int64 and values(out) == [[1, 2], [3, 4]]
    out = default_collate([np.float64(1.5), np.float64(2.5)])
    assert out.dtype == ferrograd.float64 and values(out) == [1.5, 2.5]
    out = default_collate([np.float32(1.5), np.float32(2.5)])
    assert out.dtype == ferrograd.float32
    assert default_collate(["a", "b"]) == ["a", "b"]


def test_collate_containers():
    out = default_collate([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}])
    assert type(out) is dict and values(out["a"]) == [1, 2] and out["b"] == ["x", "y"]
    od = default_collate([collections.OrderedDict(b=1, a=2), collections.OrderedDict(b=3, a=4)])
    assert type(od) is collections.OrderedDict and list(od) == ["b", "a"]
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert type(p) is Point and values(p.x) == [1, 3] and values(p.y) == [2.0, 4.0]
    # tuples and lists are transposed; tuples come back as lists
    t = default_collate([(1, "a"), (2, "b")])
    assert type(t) is list and values(t[0]) == [1, 2] and t[1] == ("a", "b")
    lst = default_collate([[1, 2], [3, 4]])
    assert type(lst) is list and [values(v) for v in lst] == [[1, 3], [2, 4]]
    nested = default_collate([{"p": (ferrograd.tensor(1.0), [5])}, {"p": (ferrograd.tensor(2.0), [6])}])
    assert values(nested["p"][0]) == [1.0, 2.0] and values(nested["p"][1][0]) == [5, 6]


def test_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError) as e:
        default_collate([object(), object()])
    assert str(e.value) == (
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found <class 'object'>"
    )
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_default_convert():
    out = default_convert(np.array([1.0, 2.0]))
    assert isinstance(out, ferrograd.Tensor) and out.dtype == ferrograd.float64
    assert default_convert(3) == 3 and default_convert("s") == "s"
    conv = default_convert((np.array(1), 2))
    assert type(conv) is list and values(conv[0]) == 1 and conv[1] == 2
    p = default_convert(Point(np.array(0), 1))
    assert type(p) is Point and isinstance(p.x, ferrograd.Tensor) and p.y == 1
    d = default_convert({"k": np.zeros(2)})
    assert values(d["k"]) == [0.0, 0.0]
    strs = np.array(["a", "b"])
    assert default_convert(strs) is strs


def _structure(obj, torch_mod=None):
    """A comparable description: containers by kind, tensors by dtype/shape/values."""
    tensor_types = (ferrograd.Tensor,) + ((torch_mod.Tensor,) if torch_mod else ())
    if isinstance(obj, tensor_types):
        return ("tensor", str(obj.dtype).replace("torch.", ""), tuple(obj.shape), obj.tolist())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, [_structure(v, torch_mod) for v in obj])
    if isinstance(obj, dict):
        return (type(obj).__name__, [(k, _structure(v, torch_mod)) for k, v in obj.items()])
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_structure(v, torch_mod) for v in obj])
    return obj


def _collate_cases(mod):
    return [
        [1, 2, 3],
        [1.0, 2.5],
        [True, False],
        ["a", "b"],
        [mod.tensor([1.0, 2.0]), mod.tensor([3.0, 4.0])],
        [mod.tensor(5), mod.tensor(6)],
        [np.array([1.0, 2.0]), np.array([3.0, 4.0])],
        [np.float64(1.0), np.float64(2.0)],
        [np.int64(1), np.int64(2)],
        [np.bool_(True), np.bool_(False)],
        [{"a": 1, "b": [2.0, 3.0]}, {"a": 4, "b": [5.0, 6.0]}],
        [collections.OrderedDict(z=1, a=mod.tensor([1.0])), collections.OrderedDict(z=2, a=mod.tensor([2.0]))],
        [Point(1, "p"), Point(2, "q")],
        [(1, "a", 2.0), (3, "b", 4.0)],
        [[mod.tensor([1, 2]), 3], [mod.tensor([4, 5]), 6]],
    ]


def test_collate_matches_torch(torch):
    ours = _collate_cases(ferrograd)
    theirs = _collate_cases(torch)
    for a, b in zip(ours, theirs):
        assert _structure(default_collate(a)) == _structure(
            torch.utils.data.default_collate(b), torch
        ), a
        assert _structure(default_convert(a)) == _structure(torch.utils.data.default_convert(b), torch), a


# --- DataLoader (main process) ----------------------------------------------------


def test_dataloader_batches_and_len():
    ds = TensorDataset(ferrograd.arange(10), ferrograd.arange(10) * 2.0)
    batches = list(DataLoader(ds, batch_size=4))
    assert [values(x) for x, _ in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [values(y) for _, y in batches] == [[0.0, 2.0, 4.0, 6.0], [8.0, 10.0, 12.0, 14.0], [16.0, 18.0]]
    assert len(DataLoader(ds, batch_size=4)) == 3
    dl = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dl) == 2 and [values(x) for x, _ in dl] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # batch_size=1 (the default) adds a batch dimension
    assert values(next(iter(DataLoader(Range(3))))) == [0]
    assert len(DataLoader(Range(3))) == 3


def test_dataloader_no_auto_batching():
    class Arrays(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return {"x": np.full(2, float(i)), "i": i}

    out = list(DataLoader(Arrays(), batch_size=None))
    assert len(out) == 2 and len(DataLoader(Arrays(), batch_size=None)) == 2
    assert values(out[1]["x"]) == [1.0, 1.0] and out[1]["i"] == 1


def test_dataloader_shuffle():
    def epoch(dl):
        return [v for b in dl for v in values(b)]

    dl = DataLoader(Range(30), batch_size=7, shuffle=True, generator=ferrograd.Generator().manual_seed(4))
    e1, e2 = epoch(dl), epoch(dl)
    assert sorted(e1) == sorted(e2) == list(range(30))
    assert e1 != e2  # reshuffled every epoch
    dl2 = DataLoader(Range(30), batch_size=7, shuffle=True, generator=ferrograd.Generator().manual_seed(4))
    assert epoch(dl2) == e1
    ferrograd.manual_seed(0)
    a = epoch(DataLoader(Range(30), batch_size=7, shuffle=True))
    ferrograd.manual_seed(0)
    assert epoch(DataLoader(Range(30), batch_size=7, shuffle=True)) == a
    assert isinstance(DataLoader(Range(3), shuffle=True).sampler, RandomSampler)
    assert isinstance(DataLoader(Range(3)).sampler, SequentialSampler)


def test_dataloader_custom_sampler_and_batch_sampler():
    dl = DataLoader(Range(10), batch_size=2, sampler=[9, 8, 7])
    assert [values(b) for b in dl] == [[9, 8], [7]]
    dl = DataLoader(Range(10), batch_sampler=[[1, 2, 3], [0]])
    assert [values(b) for b in dl] == [[1, 2, 3], [0]]
    assert dl.batch_size is None and dl.drop_last is False
    dl = DataLoader(Range(10), collate_fn=lambda b: sum(b), batch_size=5)
    assert list(dl) == [10, 35]


def test_dataloader_argument_errors():
    with pytest.raises(ValueError, match="^sampler option is mutually exclusive with shuffle$"):
        DataLoader(Range(3), sampler=[0, 1], shuffle=True)
    msg = "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
    for kw in [dict(batch_size=2), dict(shuffle=True), dict(sampler=[0]), dict(drop_last=True)]:
        with pytest.raises(ValueError, match=f"^{msg}$"):
            DataLoader(Range(3), batch_sampler=[[0]], **kw)
    with pytest.raises(ValueError,
                       match="batch_size=None option disables auto-batching and is mutually exclusive with drop_last"):
        DataLoader(Range(3), batch_size=None, drop_last=True)
    with pytest.raises(
        ValueError, match="num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."
    ):
        DataLoader(Range(3), num_workers=-1)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(Range(3), timeout=-1)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(Range(3), persistent_workers=True)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(Range(3), prefetch_factor=2)
    with pytest.raises(ValueError, match="multiprocessing_context can only be used with multi-process loading"):
        DataLoader(Range(3), multiprocessing_context="fork")
    with pytest.raises(ValueError, match="multiprocessing_context option should specify a valid start method"):
        DataLoader(Range(3), num_workers=1, multiprocessing_context="nope")
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])
    dl = DataLoader(Range(3))
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        dl.batch_size = 2
    assert DataLoader(Range(3), num_workers=2).prefetch_factor == 2


def test_pin_memory_warns_without_accelerator():
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found"):
        assert [values(b) for b in DataLoader(Range(2), pin_memory=True)] == [[0], [1]]


def test_dataloader_iterable_dataset():
    dl = DataLoader(Stream(7), batch_size=3)
    assert [values(b) for b in dl] == [[0, 1, 2], [3, 4, 5], [6]] and len(dl) == 3
    dl = DataLoader(Stream(7), batch_size=3, drop_last=True)
    assert [values(b) for b in dl] == [[0, 1, 2], [3, 4, 5]] and len(dl) == 2
    dl = DataLoader(Stream(3), batch_size=None)
    assert list(dl) == [0, 1, 2] and len(dl) == 3


def test_dataloader_iterable_len_warning():
    class Liar(Stream):
        def __len__(self):
            return 2

    dl = DataLoader(Liar(3), batch_size=None)
    assert len(dl) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        assert list(dl) == [0, 1, 2]


def test_dataloader_matches_torch(torch):
    # the same sequence of batches with fixed order, in both libraries
    kw_cases = [dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None), dict(batch_size=4)]
    for kw in kw_cases:
        ours = [_structure(b) for b in DataLoader(Range(10), **kw)]
        theirs = [_structure(b, torch) for b in torch.utils.data.DataLoader(Range(10), **kw)]
        assert ours == theirs
        assert len(DataLoader(Range(10), **kw)) == len(torch.utils.data.DataLoader(Range(10), **kw))


# --- DataLoader with worker processes ---------------------------------------------


class PidDataset(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {"i": i, "pid": os.getpid()}


def test_workers_same_batches_in_order():
    ds = TensorDataset(ferrograd.arange(23), ferrograd.arange(23).double() / 2)
    single = [(values(x), values(y)) for x, y in DataLoader(ds, batch_size=4)]
    multi = [(values(x), values(y)) for x, y in DataLoader(ds, batch_size=4, num_workers=2)]
    assert multi == single
    out = list(DataLoader(PidDataset(), batch_size=2, num_workers=2))
    assert [values(b["i"]) for b in out] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    pids = {p for b in out for p in values(b["pid"])}
    assert len(pids) == 2 and os.getpid() not in pids


def test_workers_shuffle_matches_single_process():
    def epoch(num_workers):
        g = ferrograd.Generator().manual_seed(9)
        dl = DataLoader(Range(20), batch_size=3, shuffle=True, generator=g, num_workers=num_workers)
        return [v for b in dl for v in values(b)]

    assert epoch(2) == epoch(0)


class SeedReport(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return {
            "id": info.id,
            "num_workers": info.num_workers,
            "seed": info.seed,
            "initial_seed": ferrograd.initial_seed(),
            "random": random.random(),
            "same_dataset_type": type(info.dataset) is SeedReport,
        }


def test_worker_info_and_seeding():
    g = ferrograd.Generator().manual_seed(123)
    out = list(DataLoader(SeedReport(), batch_size=None, num_workers=2, generator=g))
    assert [o["id"] for o in out] == [0, 1, 0, 1]
    assert all(o["num_workers"] == 2 and o["same_dataset_type"] for o in out)
    seed0, seed1 = out[0]["seed"], out[1]["seed"]
    assert seed1 == seed0 + 1  # base_seed + worker_id
    for o in out[:2]:
        # the worker seeds ferrograd and `random` with its seed before loading
        assert o["initial_seed"] == o["seed"]
        assert o["random"] == random.Random(o["seed"]).random()
    # the same generator seed gives the same worker seeds
    again = list(DataLoader(SeedReport(), batch_size=None, num_workers=2,
                            generator=ferrograd.Generator().manual_seed(123)))
    assert [o["seed"] for o in again] == [o["seed"] for o in out]
    assert get_worker_info() is None


class Plain(IterableDataset):
    def __init__(self, n, start=0):
        self.n = n
        self.start = start

    def __iter__(self):
        return iter(range(self.start, self.start + self.n))


class NumpyReport(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        info = get_worker_info()
        return info.id, info.seed, float(np.random.random())


def test_worker_numpy_seeding():
    from ferrograd.utils.data._utils.worker import _generate_state

    for wid, seed, value in DataLoader(NumpyReport(), batch_size=None, num_workers=2):
        base = seed - wid
        assert value == np.random.RandomState(_generate_state(base, wid)).random()
    # numpy's stream differs between workers and from `random`'s seeding
    assert _generate_state(5, 0) != _generate_state(5, 1)


def test_generate_state_matches_torch(torch):
    from torch.utils.data._utils.worker import _generate_state as torch_state

    from ferrograd.utils.data._utils.worker import _generate_state

    for base in [0, 1, 2**32 + 7, 2**62 - 1, 123456789123]:
        for wid in [0, 1, 5]:
            assert _generate_state(base, wid) == torch_state(base, wid)


def _init_fn(worker_id):
    info = get_worker_info()
    info.dataset.start = 1000 * (worker_id + 1)


def test_iterable_dataset_with_workers():
    # sharded in __iter__ through get_worker_info: every item once
    out = [v for b in DataLoader(Stream(9), batch_size=2, num_workers=2) for v in values(b)]
    assert sorted(out) == list(range(9))
    # without sharding each replica yields everything; worker_init_fn configures replicas
    out = list(DataLoader(Plain(4), batch_size=None, num_workers=2, worker_init_fn=_init_fn))
    assert out[:2] == [1000, 2000]  # batches alternate between the workers
    assert sorted(out) == [1000, 1001, 1002, 1003, 2000, 2001, 2002, 2003]


class Failing(Dataset):
    def __init__(self, exc_type):
        self.exc_type = exc_type

    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 4:
            raise self.exc_type("boom at index 4")
        return i


def test_worker_exception_is_reraised():
    with pytest.raises(ValueError) as e:
        list(DataLoader(Failing(ValueError), batch_size=2, num_workers=2))
    msg = str(e.value)
    # batch [4, 5] is task 2, which goes to worker 0
    assert msg.startswith("Caught ValueError in DataLoader worker process 0.\nOriginal Traceback")
    assert "raise self.exc_type(\"boom at index 4\")" in msg
    assert msg.rstrip().endswith("ValueError: boom at index 4")
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        list(DataLoader(Failing(KeyError), batch_size=2, num_workers=1))


class Crash(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 1:
            os._exit(3)
        return i


def test_worker_crash_is_detected():
    # checked every 5 seconds (MP_STATUS_CHECK_INTERVAL) while waiting for data
    with pytest.raises(RuntimeError, match=r"^DataLoader worker \(pid\(s\) \d+\) exited unexpectedly$"):
        list(DataLoader(Crash(), num_workers=2))


def test_out_of_order_delivery():
    out = [v for b in DataLoader(Range(20), batch_size=3, num_workers=2, in_order=False) for v in values(b)]
    assert sorted(out) == list(range(20))


def test_iteration_continues_after_worker_exception():
    it = iter(DataLoader(Failing(ValueError), batch_size=1, num_workers=2))
    assert [values(next(it)) for _ in range(4)] == [[0], [1], [2], [3]]
    with pytest.raises(ValueError, match="boom at index 4"):
        next(it)
    assert values(next(it)) == [5]
    with pytest.raises(StopIteration):
        next(it)


def _failing_init(worker_id):
    raise ZeroDivisionError("init failed")


def test_worker_init_fn_exception():
    with pytest.raises(ZeroDivisionError, match="Caught ZeroDivisionError in DataLoader worker process 0"):
        list(DataLoader(Range(4), num_workers=1, worker_init_fn=_failing_init))


class Slow(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(2.5)
        return i


def test_timeout():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.5 seconds$"):
        next(iter(DataLoader(Slow(), num_workers=1, timeout=0.5)))
    assert time.monotonic() - start < 10


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_abandoned_iterator_shuts_workers_down():
    it = iter(DataLoader(Range(100), batch_size=2, num_workers=2))
    assert values(next(it)) == [0, 1]
    pids = [w.pid for w in it._workers]
    assert all(_alive(p) for p in pids)
    del it
    gc.collect()
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)
    assert not [p for p in multiprocessing.active_children() if p.pid in pids]


def test_iterator_in_reference_cycle_shuts_down_cleanly():
    # e.g. an iterator kept alive by a stored exception's traceback: the garbage
    # collector finalizes it, and the workers must still get the exit signal
    it = iter(DataLoader(Range(100), batch_size=2, num_workers=2))
    assert values(next(it)) == [0, 1]
    workers = list(it._workers)
    cycle = [it]
    cycle.append(cycle)
    del it, cycle
    start = time.monotonic()
    gc.collect()
    assert time.monotonic() - start < 4  # well below the 5 s join timeout
    assert [w.exitcode for w in workers] == [0, 0]  # exited on their own, not terminated


def test_finished_epoch_shuts_workers_down():
    it = iter(DataLoader(Range(4), batch_size=2, num_workers=2))
    workers = list(it._workers)
    assert len(list(it)) == 2
    assert all(w.exitcode == 0 for w in workers)


def test_persistent_workers():
    dl = DataLoader(PidDataset(), batch_size=4, num_workers=2, persistent_workers=True)
    e1 = list(dl)
    e2 = list(dl)
    assert [values(b["i"]) for b in e1] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [values(b["i"]) for b in e2] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # the same two processes served both epochs
    assert {p for b in e1 for p in values(b["pid"])} == {p for b in e2 for p in values(b["pid"])}
    workers = list(dl._iterator._workers)
    assert all(w.is_alive() for w in workers)
    dl._iterator._shutdown_workers()
    assert all(not w.is_alive() for w in workers)


def test_spawn_context():
    ds = TensorDataset(ferrograd.arange(6))
    dl = DataLoader(ds, batch_size=4, num_workers=1, multiprocessing_context="spawn")
    assert [values(b[0]) for b in dl] == [[0, 1, 2, 3], [4, 5]]
    ctx = multiprocessing.get_context("spawn")
    assert DataLoader(ds, num_workers=1, multiprocessing_context="spawn").multiprocessing_context is ctx


FORK_SAFETY = """
import json

import ferrograd as torch
from ferrograd.utils.data import DataLoader, Dataset

def big():
    s = (torch.ones(1 << 22) * 2).sum().item()
    a = torch.arange(512 * 512, dtype=torch.float32).reshape(512, 512) / (512 * 512)
    m = torch.matmul(a, torch.ones(512, 512))
    return s, m.sum().item()

class DS(Dataset):
    def __len__(self):
        return 6
    def __getitem__(self, i):
        s, msum = big()
        return torch.tensor([float(i), s, msum], dtype=torch.float64)

parent = big()  # runs the thread pool in the parent before the workers fork
out = torch.cat(list(DataLoader(DS(), batch_size=2, num_workers=2)))
print(json.dumps([parent, out.tolist()]))
"""


def test_fork_safety_after_parallel_ops():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    try:
        r = subprocess.run([sys.executable, "-c", FORK_SAFETY], capture_output=True, text=True,
                           timeout=120, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("DataLoader workers forked after parallel ops hung")
    assert r.returncode == 0, r.stderr
    (s, msum), rows = json.loads(r.stdout)
    assert s == 2.0 * (1 << 22)
    # sum over rows i, cols j of sum_k a[i, k] = 512 * sum(a) = 512 * (N - 1) / 2, N = 512 * 512
    n = 512 * 512
    assert msum == pytest.approx(512 * (n - 1) / 2, rel=1e-5)
    assert [r[0] for r in rows] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert all(r[1] == s and r[2] == pytest.approx(msum, rel=1e-6) for r in rows)


def test_worker_count_warning():
    n = len(os.sched_getaffinity(0)) + 1
    with pytest.warns(UserWarning, match=f"This DataLoader will create {n} worker processes in total"):
        DataLoader(Range(3), num_workers=n)


def test_weighted_random_sampler_draws_by_weight():
    from ferrograd.utils.data import WeightedRandomSampler

    g = ferrograd.Generator().manual_seed(0)
    sampler = WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=g)
    draws = list(sampler)
    assert len(sampler) == 4000 and len(draws) == 4000 and all(isinstance(i, int) for i in draws)
    counts = [draws.count(i) for i in range(3)]
    assert counts[0] == 0 and abs(counts[2] / 4000 - 0.75) < 0.03
    no_repeat = list(WeightedRandomSampler([1.0, 1.0, 1.0, 1.0], 4, replacement=False, generator=g))
    assert sorted(no_repeat) == [0, 1, 2, 3]
    g1, g2 = ferrograd.Generator().manual_seed(7), ferrograd.Generator().manual_seed(7)
    assert list(WeightedRandomSampler([1.0, 2.0], 20, generator=g1)) == \
        list(WeightedRandomSampler([1.0, 2.0], 20, generator=g2))
