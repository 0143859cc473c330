"""Run under ``mpiexec -n N``: DistributedDataParallel, SyncBatchNorm and DistributedSampler.

Every rank builds the full batch of N*B samples from the step number and trains on its own B;
every rank also trains a reference model, in one process, on the whole N*B batch. After every
step the DDP parameters must match the reference (float32 tolerance) and be bitwise identical on
all ranks. A failed check raises, the excepthook aborts the job and ``mpiexec`` exits non-zero.
"""

import contextlib
import hashlib
import warnings

import numpy as np

import ferrograd as torch
import ferrograd.distributed as dist
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.nn.parallel import DistributedDataParallel as DDP, distributed as ddp_module
from ferrograd.utils.data import DistributedSampler

B = 4  # samples per rank and step
STEPS = 50
checks = 0


def passed(n=1):
    global checks
    checks += n


def mlp(seed, batch_norm=False):
    torch.manual_seed(seed)
    layers = [nn.Linear(12, 16), nn.Tanh()]
    if batch_norm:
        layers.append(nn.BatchNorm1d(16))
    layers += [nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)]
    return nn.Sequential(*layers)


def full_batch(step, size, features=12):
    rng = np.random.RandomState(1000 + step)
    x = rng.randn(size * B, features).astype(np.float32)
    y = rng.randint(0, 4, size * B).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


def my_share(tensor, rank):
    return tensor[rank * B:(rank + 1) * B]


def params_digest(module):
    h = hashlib.sha256()
    for p in module.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()


def assert_identical_across_ranks(module, what):
    digests = [None] * dist.get_world_size()
    dist.all_gather_object(digests, params_digest(module))
    assert len(set(digests)) == 1, f"{what}: parameters differ across ranks"


def assert_close(a, b, what, rtol=1e-4, atol=1e-5):
    a, b = a.detach().numpy(), b.detach().numpy()
    assert np.allclose(a, b, rtol=rtol, atol=atol), f"{what}: max diff {np.abs(a - b).max()}"


def assert_params_close(model, reference, what):
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert_close(p, q, f"{what} {name}")
    for (name, b), c in zip(model.named_buffers(), reference.buffers()):
        assert_close(b.float(), c.float(), f"{what} buffer {name}")


def test_matches_single_process(rank, size, optimizer_class, batch_norm, bucket_cap_mb,
                                as_view=False, set_to_none=True):
    """DDP on N ranks x B samples == one process on N*B samples, step after step."""
    model = mlp(seed=rank, batch_norm=batch_norm)  # different on every rank: DDP broadcasts rank 0's
    if batch_norm:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb, gradient_as_bucket_view=as_view)
    assert len(ddp.reducer.buckets) > (1 if bucket_cap_mb else 0)
    # all ranks run on this node: the buckets are reduced through shared memory unless disabled
    assert all((b.shared is not None) == ddp_module._SHARED_MEMORY_REDUCTION for b in ddp.reducer.buckets)
    reference = mlp(seed=0, batch_norm=batch_norm)
    reference.load_state_dict(ddp.module.state_dict())
    assert_identical_across_ranks(ddp, "after construction")
    kwargs = {"lr": 0.05, "momentum": 0.9} if optimizer_class is torch.optim.SGD else {"lr": 0.01}
    opt = optimizer_class(ddp.parameters(), **kwargs)
    ref_opt = optimizer_class(reference.parameters(), **kwargs)
    for step in range(STEPS):
        x, y = full_batch(step, size)
        opt.zero_grad(set_to_none=set_to_none)
        F.cross_entropy(ddp(my_share(x, rank)), my_share(y, rank)).backward()
        if as_view:  # every .grad is its bucket slot
            for bucket in ddp.reducer.buckets:
                for p, view in zip(bucket.params, bucket.views):
                    assert p.grad is view and p.grad.data_ptr() == view.data_ptr()
        opt.step()
        ref_opt.zero_grad()
        F.cross_entropy(reference(x), y).backward()
        ref_opt.step()
        what = f"{optimizer_class.__name__} bn={batch_norm} as_view={as_view} step {step}"
        assert_params_close(ddp.module, reference, what)
        assert_identical_across_ranks(ddp, what)
        passed()


def test_no_sync(rank, size, as_view=False):
    """4 micro-batches, 3 under no_sync, give the gradients of one synchronised step."""
    x, y = full_batch(0, size * 4)  # 16 samples per rank
    mine = slice(rank * 4 * B, (rank + 1) * 4 * B)
    xs, ys = x[mine], y[mine]
    accumulated = DDP(mlp(seed=rank), gradient_as_bucket_view=as_view)
    single = DDP(mlp(seed=0), gradient_as_bucket_view=as_view)
    with torch.no_grad():
        for p, q in zip(single.parameters(), accumulated.parameters()):
            p.copy_(q)
    for k in range(4):
        micro = slice(k * B, (k + 1) * B)
        with accumulated.no_sync() if k < 3 else contextlib.nullcontext():
            (F.cross_entropy(accumulated(xs[micro]), ys[micro]) / 4).backward()
    F.cross_entropy(single(xs), ys).backward()
    for p, q in zip(accumulated.parameters(), single.parameters()):
        assert_close(p.grad, q.grad, "no_sync gradient")
    # and inside no_sync the gradients really stayed local
    local = DDP(mlp(seed=0))
    with local.no_sync():
        F.cross_entropy(local(xs[:B]), ys[:B]).backward()
    grads = [None] * size
    dist.all_gather_object(grads, local.module[0].bias.grad.numpy().tolist())
    assert grads[0] != grads[1], "no_sync must not average"
    passed(2)


def test_sync_batch_norm(rank, size):
    """SyncBatchNorm on N ranks == BatchNorm2d on the concatenated batch."""
    rng = np.random.RandomState(7)
    x_full = torch.from_numpy(rng.randn(size * B, 3, 5, 5).astype(np.float32) * 2 + 1)
    r_full = torch.from_numpy(rng.randn(size * B, 3, 5, 5).astype(np.float32))
    affine = torch.from_numpy(rng.randn(2, 3).astype(np.float32))
    sync, ref = nn.SyncBatchNorm(3, momentum=0.3), nn.BatchNorm2d(3, momentum=0.3)
    with torch.no_grad():
        for m in (sync, ref):
            m.weight.copy_(affine[0])
            m.bias.copy_(affine[1])
    x_ref = x_full.clone().requires_grad_()
    x_mine = my_share(x_full, rank).clone().requires_grad_()
    out_ref, out_mine = ref(x_ref), sync(x_mine)
    assert_close(out_mine, my_share(out_ref, rank), "SyncBatchNorm output")
    assert_close(sync.running_mean, ref.running_mean, "running_mean")
    assert_close(sync.running_var, ref.running_var, "running_var")
    (out_ref * r_full).sum().backward()
    (out_mine * my_share(r_full, rank)).sum().backward()
    assert_close(x_mine.grad, my_share(x_ref.grad, rank), "input grad")
    for name in ("weight", "bias"):
        total = getattr(sync, name).grad.clone()
        dist.all_reduce(total)  # local sums of the weight/bias grads add up to the full-batch ones
        assert_close(total, getattr(ref, name).grad, f"{name} grad")
    sync.eval()
    ref.eval()
    assert_close(sync(x_mine.detach()), my_share(ref(x_full), rank), "eval output")
    passed(6)


class Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(12, 4)
        self.unused = nn.Linear(12, 4)

    def forward(self, x):
        return self.used(x)


def test_unused_parameters(rank, size):
    x, y = full_batch(0, size)
    ddp = DDP(Branches(), find_unused_parameters=True)
    reference = Branches()
    reference.load_state_dict(ddp.module.state_dict())
    for _ in range(2):
        ddp.zero_grad()
        F.cross_entropy(ddp(my_share(x, rank)), my_share(y, rank)).backward()
    reference.zero_grad()
    F.cross_entropy(reference(x), y).backward()
    assert_close(ddp.module.used.weight.grad, reference.used.weight.grad, "used grad")
    assert ddp.module.unused.weight.grad is None
    strict = DDP(Branches())
    F.cross_entropy(strict(my_share(x, rank)), my_share(y, rank)).backward()
    try:
        strict(x)
    except RuntimeError as exc:
        assert str(exc).startswith("Expected to have finished reduction in the prior iteration")
    else:
        raise AssertionError("an unfinished reduction must raise at the next forward")
    passed(3)


class WithBuffer(nn.Module):
    def __init__(self, value):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.register_buffer("count", torch.tensor([float(value)]))

    def forward(self, x):
        self.count.add_(1)
        return self.lin(x)


def test_buffers_and_state_dict(rank, size):
    ddp = DDP(WithBuffer(10 * rank))
    assert ddp.module.count.item() == 0  # rank 0's buffer at construction
    ddp(torch.ones(1, 2)).sum().backward()
    ddp(torch.ones(1, 2)).sum().backward()
    assert ddp.module.count.item() == 2
    assert list(ddp.state_dict()) == ["module.count", "module.lin.weight", "module.lin.bias"] or \
        list(ddp.state_dict()) == ["module.lin.weight", "module.lin.bias", "module.count"]
    assert ddp.broadcast_buffers is True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        local = DDP(WithBuffer(10 * rank), broadcast_buffers=False)
    assert any(issubclass(w.category, FutureWarning) for w in caught)
    local(torch.ones(1, 2)).sum().backward()
    assert local.module.count.item() == 10 * rank + 1
    passed(3)


def test_sampler(rank, size):
    n = 10
    for drop_last in (False, True):
        sampler = DistributedSampler(range(n), shuffle=True, seed=3, drop_last=drop_last)
        assert sampler.num_replicas == size and sampler.rank == rank
        sampler.set_epoch(2)
        shares = [None] * size
        dist.all_gather_object(shares, list(sampler))
        lengths = {len(s) for s in shares}
        assert lengths == {len(sampler)}, lengths
        merged = [i for s in shares for i in s]
        if drop_last:
            assert len(set(merged)) == len(merged) == (n // size) * size
        else:
            assert set(merged) == set(range(n)) and len(merged) == -(-n // size) * size
    passed(2)


def test_bucket_reductions(rank, size):
    """A bucket's all-reduce, through shared memory (all ranks are on this node) and through
    MPI_Iallreduce: the sum over ranks, bitwise the same on every rank, for float32 and float64,
    sizes that do not split evenly over the ranks (or leave some rank no part), polled or
    waited for, several buckets in flight at once."""
    comm = dist.distributed_c10d._world().comm
    for shared in (True, False):
        ddp_module._SHARED_MEMORY_REDUCTION = shared
        try:
            buckets = [ddp_module._Bucket([torch.zeros(n, dtype=dtype)], comm)
                       for n in (1, 2, 7, 1000) for dtype in (torch.float32, torch.float64)]
        finally:
            ddp_module._SHARED_MEMORY_REDUCTION = True
        assert all((b.shared is not None) == shared for b in buckets)
        for step in range(3):
            expected = []
            for k, bucket in enumerate(buckets):
                n = bucket.flat.numel()
                mine = [torch.arange(n, dtype=bucket.flat.dtype) * (r + 1) / 3 + step + k for r in range(size)]
                bucket.flat.copy_(mine[rank])
                total = mine[0].clone()
                for other in mine[1:]:
                    total += other
                expected.append(total)
            for bucket in buckets:
                bucket.start(comm)
            while not all([b.progress(block=False) for b in buckets[::2]]):  # polled
                pass
            for bucket, total in zip(buckets, expected):
                assert bucket.progress(block=True)
                assert_close(bucket.flat, total, f"bucket of {bucket.flat.numel()} {bucket.flat.dtype}")
                digests = [None] * size
                dist.all_gather_object(digests, bucket.flat.numpy().tobytes())
                assert len(set(digests)) == 1, "bucket sums differ across ranks"
    passed(2)


def main():
    torch.set_num_threads(1)
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    test_matches_single_process(rank, size, torch.optim.SGD, batch_norm=False, bucket_cap_mb=0.001)
    test_matches_single_process(rank, size, torch.optim.Adam, batch_norm=False, bucket_cap_mb=None)
    test_matches_single_process(rank, size, torch.optim.SGD, batch_norm=True, bucket_cap_mb=0.001)
    test_matches_single_process(rank, size, torch.optim.SGD, batch_norm=False, bucket_cap_mb=0.001,
                                as_view=True)
    test_matches_single_process(rank, size, torch.optim.Adam, batch_norm=False, bucket_cap_mb=None,
                                as_view=True, set_to_none=False)
    # the same through MPI_Iallreduce (ranks on several nodes) instead of shared memory
    ddp_module._SHARED_MEMORY_REDUCTION = False
    test_matches_single_process(rank, size, torch.optim.SGD, batch_norm=False, bucket_cap_mb=0.001)
    test_matches_single_process(rank, size, torch.optim.Adam, batch_norm=False, bucket_cap_mb=None,
                                as_view=True, set_to_none=False)
    ddp_module._SHARED_MEMORY_REDUCTION = True
    test_bucket_reductions(rank, size)
    test_no_sync(rank, size)
    test_no_sync(rank, size, as_view=True)
    test_sync_batch_norm(rank, size)
    test_unused_parameters(rank, size)
    test_buffers_and_state_dict(rank, size)
    test_sampler(rank, size)
    counts = [None] * size
    dist.all_gather_object(counts, checks)
    if rank == 0:
        print(f"PASSED {sum(counts)} checks on {size} ranks", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
