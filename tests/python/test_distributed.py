"""ferrograd.distributed, DistributedDataParallel, SyncBatchNorm and DistributedSampler.

Single-process tests run in the normal suite. The multi-process tests launch the scripts in
``tests/distributed/`` under ``mpiexec -n 2`` and ``-n 3`` (one launch per script and world
size, each printing ``PASSED <n> checks``); they skip when mpi4py or mpiexec is missing.
"""

import importlib.util
import inspect
import os
import shutil
import subprocess
import sys

import pytest

import ferrograd as fg
import ferrograd.distributed as dist
import ferrograd.nn as nn
from ferrograd.nn.parallel import DistributedDataParallel
from ferrograd.utils.data import DistributedSampler

try:
    import torch
    import torch.distributed as torch_dist
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "distributed")
MPIEXEC = shutil.which("mpiexec")
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(
    not (HAVE_MPI4PY and MPIEXEC),
    reason="needs mpi4py and mpiexec (pip install \"ferrograd[mpi]\")",
)


# --- single process -------------------------------------------------------------------------


def test_is_available_follows_mpi4py():
    assert dist.is_available() == HAVE_MPI4PY
    assert not dist.is_initialized()


def test_without_mpi4py_ferrograd_imports_and_says_so():
    code = (
        "import sys; sys.modules['mpi4py'] = None\n"
        "import ferrograd, ferrograd.distributed as d\n"
        "from ferrograd.utils.data import DistributedSampler\n"
        "assert not d.is_available()\n"
        "try:\n    d.init_process_group('mpi')\nexcept RuntimeError as e:\n    print(e)\n"
        "try:\n    DistributedSampler(range(4))\nexcept RuntimeError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        'ferrograd.distributed needs mpi4py and an MPI library: pip install "ferrograd[mpi]"',
        "Requires distributed package to be available",
    ]


NOT_INITIALIZED_CALLS = {
    "all_reduce": lambda m, t: m.all_reduce(t(2)),
    "broadcast": lambda m, t: m.broadcast(t(2), src=0),
    "reduce": lambda m, t: m.reduce(t(2), dst=0),
    "all_gather": lambda m, t: m.all_gather([t(2)], t(2)),
    "all_gather_into_tensor": lambda m, t: m.all_gather_into_tensor(t(2), t(2)),
    "reduce_scatter_tensor": lambda m, t: m.reduce_scatter_tensor(t(1), t(2)),
    "send": lambda m, t: m.send(t(2), dst=1),
    "recv": lambda m, t: m.recv(t(2), src=1),
    "barrier": lambda m, t: m.barrier(),
    "get_rank": lambda m, t: m.get_rank(),
    "get_world_size": lambda m, t: m.get_world_size(),
    "all_gather_object": lambda m, t: m.all_gather_object([None], 1),
    "broadcast_object_list": lambda m, t: m.broadcast_object_list([None], src=0),
}


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.filterwarnings("ignore:`torch.distributed.*` is deprecated:FutureWarning")
@pytest.mark.parametrize("name", sorted(NOT_INITIALIZED_CALLS))
def test_not_initialized_error(name):
    call = NOT_INITIALIZED_CALLS[name]
    ours = _raised(lambda: call(dist, fg.ones))
    assert ours == (
        ValueError,
        "Default process group has not been initialized, please make sure to call init_process_group.",
    )
    if torch is not None:
        assert ours == _raised(lambda: call(torch_dist, torch.ones))


def test_destroy_without_init_and_ddp_without_init():
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        dist.destroy_process_group()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedDataParallel(nn.Linear(2, 2))


@needs_torch
def test_reduce_op_matches_torch():
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        ours, theirs = getattr(dist.ReduceOp, name), getattr(torch_dist.ReduceOp, name)
        assert int(ours) == int(theirs) and repr(ours) == repr(theirs) and str(ours) == str(theirs)


def _parameters(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


@needs_torch
@pytest.mark.parametrize("name", [
    "init_process_group", "destroy_process_group", "is_initialized", "get_rank", "get_world_size",
    "barrier", "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
    "reduce_scatter_tensor", "send", "recv", "isend", "irecv", "all_gather_object",
    "broadcast_object_list",
])
def test_signatures_match_torch(name):
    ours, theirs = _parameters(getattr(dist, name)), _parameters(getattr(torch_dist, name))
    theirs = [(n, d) for n, d in theirs if not n.startswith("_")]
    assert [n for n, _ in ours] == [n for n, _ in theirs]
    for (n, d), (_, e) in zip(ours, theirs):
        if isinstance(e, (bool, int, float, str, type(None))):
            assert d == e, n


@needs_torch
@pytest.mark.parametrize("ours, theirs", [
    (DistributedDataParallel.__init__, "torch.nn.parallel.DistributedDataParallel.__init__"),
    (DistributedSampler.__init__, "torch.utils.data.DistributedSampler.__init__"),
    (nn.SyncBatchNorm.__init__, "torch.nn.SyncBatchNorm.__init__"),
])
def test_class_signatures_match_torch(ours, theirs):
    obj = torch
    for part in theirs.split(".")[1:]:
        obj = getattr(obj, part)
    assert _parameters(ours) == _parameters(obj)


@needs_torch
@pytest.mark.parametrize("n", [0, 1, 7, 10, 12])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_matches_torch(n, replicas, drop_last):
    for rank in range(replicas):
        for epoch in (0, 3):
            ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
            theirs = torch.utils.data.DistributedSampler(range(n), replicas, rank, shuffle=False,
                                                         drop_last=drop_last)
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            if n == 0 and not drop_last:
                continue  # both index an empty list by padding: nothing to compare
            assert list(ours) == list(theirs) and len(ours) == len(theirs)
            # shuffled: torch's padding and striding applied to ferrograd's permutation
            perm = fg.randperm(n, generator=fg.Generator().manual_seed(5 + epoch)).tolist()
            ours = DistributedSampler(range(n), replicas, rank, shuffle=True, seed=5, drop_last=drop_last)
            ours.set_epoch(epoch)
            positions = torch.utils.data.DistributedSampler(perm, replicas, rank, shuffle=False,
                                                            drop_last=drop_last)
            assert list(ours) == [perm[i] for i in positions]


def test_distributed_sampler_shuffle_semantics():
    def shares(epoch, seed=0):
        out = []
        for rank in range(3):
            s = DistributedSampler(range(11), num_replicas=3, rank=rank, seed=seed)
            s.set_epoch(epoch)
            out.append(list(s))
        return out

    first = shares(0)
    assert first == shares(0)  # deterministic
    assert shares(1) != first and shares(0, seed=1) != first
    merged = [i for share in first for i in share]
    assert len(merged) == 12 and set(merged) == set(range(11))  # one index repeated as padding


@needs_torch
def test_distributed_sampler_errors_match_torch():
    for bad in (-1, 3):
        ours = _raised(lambda: DistributedSampler(range(4), num_replicas=3, rank=bad))
        theirs = _raised(lambda: torch.utils.data.DistributedSampler(range(4), num_replicas=3, rank=bad))
        assert ours == theirs


def test_sync_batch_norm_on_one_process_is_batch_norm():
    fg.manual_seed(0)
    x = fg.randn(6, 3, 4)
    sync, ref = nn.SyncBatchNorm(3), nn.BatchNorm1d(3)
    xs, xr = x.clone().requires_grad_(), x.clone().requires_grad_()
    ys, yr = sync(xs), ref(xr)
    assert fg.allclose(ys, yr)
    (ys * ys).sum().backward()
    (yr * yr).sum().backward()
    assert fg.allclose(xs.grad, xr.grad, atol=1e-6)
    assert fg.allclose(sync.running_var, ref.running_var)
    with pytest.raises(ValueError, match="expected at least 2D input"):
        sync(fg.ones(3))


def test_convert_sync_batchnorm_shares_parameters():
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Sequential(nn.BatchNorm1d(4)))
    model[1].eval()
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]) is nn.SyncBatchNorm and type(converted[2][0]) is nn.SyncBatchNorm
    assert converted[1].weight is model[1].weight
    assert converted[1].running_mean is model[1].running_mean
    assert not converted[1].training and converted[2][0].training
    assert list(converted.state_dict()) == list(model.state_dict())


def test_copy_scaled_is_copy_then_mul():
    """DDP's bucket fill ``_core._copy_scaled_(dst, src, s)``: ``dst = src * s`` in one pass,
    also in place, between overlapping or disjoint parts of one storage, from a non-contiguous
    source and in other dtypes; one version bump on ``dst``."""
    _core = fg._core
    fg.manual_seed(0)
    for dtype in (fg.float32, fg.float64, fg.float16):
        src = fg.randn(7, 5).to(dtype)
        dst = fg.zeros(7, 5, dtype=dtype)
        version = dst._version
        _core._copy_scaled_(dst, src, 1 / 3)
        assert fg.equal(dst, src * (1 / 3)) and dst._version == version + 1
        expected = dst * 0.5
        _core._copy_scaled_(dst, dst, 0.5)  # in place
        assert fg.equal(dst, expected)
    flat = fg.arange(10.0)
    _core._copy_scaled_(flat[:5], flat[5:], 2.0)
    assert flat.tolist() == [10.0, 12.0, 14.0, 16.0, 18.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    flat = fg.arange(10.0)
    _core._copy_scaled_(flat[5:], flat[:5], 2.0)
    assert flat.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 2.0, 4.0, 6.0, 8.0]
    flat = fg.arange(10.0)
    _core._copy_scaled_(flat[2:7], flat[:5], 1.0)  # overlapping: read before written
    assert flat.tolist() == [0.0, 1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 7.0, 8.0, 9.0]
    dst = fg.zeros(3, 2)
    _core._copy_scaled_(dst, fg.arange(6.0).view(2, 3).t(), -1.0)
    assert dst.tolist() == [[-0.0, -3.0], [-1.0, -4.0], [-2.0, -5.0]]
    with pytest.raises(RuntimeError, match="expected a source of shape"):
        _core._copy_scaled_(fg.zeros(3), fg.zeros(4), 1.0)


# --- several processes under mpiexec ---------------------------------------------------------


def _mpiexec(script, n, timeout=60):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    command = [MPIEXEC, "-n", str(n), sys.executable, os.path.join(WORKERS, script)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("script", ["collectives.py", "ddp.py", "groups.py"])
def test_under_mpiexec(script, n):
    result = _mpiexec(script, n)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"checks on {n} ranks" in result.stdout, result.stdout + result.stderr


@needs_mpi
def test_a_rank_that_raises_aborts_the_job():
    result = _mpiexec("raise_in_step.py", 2, timeout=30)  # a hang would time out here
    assert result.returncode != 0
    assert "ValueError: boom on rank 1 at step 3" in result.stderr
    assert "finished" not in result.stdout


@needs_mpi
@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="needs scikit-learn")
def test_train_ddp_example_matches_one_process(tmp_path):
    example = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "train_ddp.py")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")

    def losses(launcher):
        command = launcher + [sys.executable, example, "--epochs", "3", "--out-dir", str(tmp_path)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        return [line.split()[3] for line in result.stdout.splitlines() if line.startswith("epoch")]

    one, two = losses([]), losses([MPIEXEC, "-n", "2"])
    assert len(one) == 3 and one == two  # printed to 6 decimals
    assert os.path.exists(tmp_path / "checkpoint.safetensors")
