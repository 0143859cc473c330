"""Run under ``mpiexec -n N`` (N >= 2): ``new_group`` and the collectives, DDP and SyncBatchNorm
on a group of some ranks.

The group holds the first and the last rank of the world (global ranks ``0`` and ``N - 1``, group
ranks 0 and 1); on 3 ranks, rank 1 is outside it. Rank 0 prints ``PASSED <n> checks``.
"""

import warnings

import numpy as np

import ferrograd as torch
import ferrograd.distributed as dist
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.nn.parallel import DistributedDataParallel as DDP

checks = 0


def ok(condition, what):
    global checks
    assert condition, what
    checks += 1


def expect_error(error, fn, match):
    try:
        fn()
    except error as exc:
        ok(match in str(exc), f"{match!r} not in {exc}")
        return
    raise AssertionError(f"expected {error.__name__} with {match!r}")


def test_membership(rank, size, group, members):
    if rank in members:
        ok(group is not dist.GroupMember.NON_GROUP_MEMBER, "a member gets a group")
        ok(dist.get_rank(group) == members.index(rank), "group rank")
        ok(dist.get_world_size(group) == len(members), "group size")
        ok(dist.get_process_group_ranks(group) == members, "group ranks")
        ok(dist.get_global_rank(group, 1) == members[1], "global rank of group rank 1")
        ok(dist.get_group_rank(group, members[1]) == 1, "group rank of a global rank")
        if size > 2:
            expect_error(ValueError, lambda: dist.get_group_rank(group, 1), "Global rank 1 is not part of group")
    else:
        ok(group == dist.GroupMember.NON_GROUP_MEMBER, "a non-member gets NON_GROUP_MEMBER")
        ok(dist.get_rank(group) == -1 and dist.get_world_size(group) == -1, "non-member rank/size")
        t = torch.ones(3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ok(dist.all_reduce(t, group=group) is None, "non-member all_reduce returns None")
        ok(t.tolist() == [1.0, 1.0, 1.0], "a non-member's tensor is left alone")
        ok(any(f"Running all_reduce on global rank {rank} which does not belong to the given group."
               == str(w.message) for w in caught), "non-member warning")
    expect_error(ValueError, lambda: dist.new_group([0, 0]), "must not contain duplicate entries")
    expect_error(ValueError, lambda: dist.get_process_group_ranks(object()), "is not registered")


def test_collectives(rank, group, members):
    if rank not in members:
        return
    me = members.index(rank)
    t = torch.tensor([float(rank + 1)] * 2)
    dist.all_reduce(t, group=group)
    ok(t.tolist() == [float(sum(r + 1 for r in members))] * 2, "all_reduce over the group only")
    t = torch.tensor([float(rank)])
    dist.broadcast(t, src=members[-1], group=group)  # src is a global rank
    ok(t.item() == members[-1], "broadcast from a global rank")
    t = torch.tensor([float(rank)])
    dist.broadcast(t, group_src=0, group=group)
    ok(t.item() == members[0], "broadcast from a group rank")
    expect_error(ValueError, lambda: dist.broadcast(t, src=0, group_src=0, group=group), "Can't specify both")
    expect_error(ValueError, lambda: dist.broadcast(t, group=group), "Must specify global_rank or group_rank")
    parts = [torch.zeros(1) for _ in members]
    dist.all_gather(parts, torch.tensor([float(rank)]), group=group)
    ok([p.item() for p in parts] == [float(r) for r in members], "all_gather in group-rank order")
    t = torch.tensor([2.0 * (rank + 1)])
    dist.reduce(t, dst=members[0], op=dist.ReduceOp.AVG, group=group)
    if me == 0:
        ok(t.item() == np.mean([2.0 * (r + 1) for r in members]), "reduce AVG at a global dst")
    # point to point inside the group: dst given as a global rank, recv returns a global rank
    if me == 0:
        dist.send(torch.tensor([42.0]), dst=members[1], group=group)
    elif me == 1:
        got = torch.zeros(1)
        sender = dist.recv(got, src=members[0], group=group)
        ok(got.item() == 42.0 and sender == members[0], "send/recv in the group")
    objs = [None] * len(members)
    dist.all_gather_object(objs, rank, group=group)
    ok(objs == members, "all_gather_object over the group")
    dist.barrier(group=group)


def test_ddp_on_the_group(rank, group, members):
    """DDP over the group averages the members' gradients: equal to one process on their data."""
    if rank not in members:
        return
    torch.manual_seed(rank)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    ddp = DDP(model, process_group=group)
    reference = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    reference.load_state_dict(ddp.module.state_dict())
    rng = np.random.RandomState(5)
    x = torch.from_numpy(rng.randn(2 * len(members), 4).astype(np.float32))
    y = torch.from_numpy(rng.randn(2 * len(members), 2).astype(np.float32))
    me = members.index(rank)
    F.mse_loss(ddp(x[2 * me:2 * me + 2]), y[2 * me:2 * me + 2]).backward()
    F.mse_loss(reference(x), y).backward()
    for p, q in zip(ddp.module.parameters(), reference.parameters()):
        ok(np.allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6), "DDP gradient on the group")


def main():
    torch.set_num_threads(1)
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    members = [0, size - 1]
    group = dist.new_group(members)
    everyone = dist.new_group()
    ok(dist.get_process_group_ranks(everyone) == list(range(size)), "new_group() holds the world")
    test_membership(rank, size, group, members)
    test_collectives(rank, group, members)
    test_ddp_on_the_group(rank, group, members)
    if rank in members:
        dist.destroy_process_group(group)
        expect_error(ValueError, lambda: dist.all_reduce(torch.ones(1), group=group), "is not registered")
    dist.destroy_process_group(everyone)
    t = torch.ones(1)
    dist.all_reduce(t)  # the world still works
    ok(t.item() == size, "world all_reduce after destroying the groups")
    counts = [None] * size
    dist.all_gather_object(counts, checks)
    dist.destroy_process_group()
    if rank == 0:
        print(f"PASSED {sum(counts)} checks on {size} ranks", flush=True)


if __name__ == "__main__":
    main()
