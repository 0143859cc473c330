"""Run under ``mpiexec -n N``: every collective, blocking and async, against numpy.

Each rank builds the same per-rank data from its rank number, so every rank knows what the
others hold and computes the expected result with numpy. A failed check raises; the excepthook
installed by ``init_process_group`` then aborts the job, so ``mpiexec`` exits non-zero.
Rank 0 prints ``PASSED <n> checks`` at the end.
"""

import threading
import time

import numpy as np

import ferrograd as torch
import ferrograd.distributed as dist
from ferrograd.distributed import ReduceOp

DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "bool": np.bool_}
checks = 0


def data(rank, dtype, shape=(2, 3)):
    """The tensor rank ``rank`` contributes: distinct, exactly representable values."""
    base = np.arange(np.prod(shape)).reshape(shape) % 5
    if dtype == "bool":
        return ((base + rank) % 3 == 0)
    return (base + 1 + 2 * rank).astype(DTYPES[dtype])


def as_tensor(array):
    return torch.from_numpy(np.ascontiguousarray(array).copy())


def check(name, got, expected):
    global checks
    got = got.numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, f"{name}: dtype {got.dtype} != {expected.dtype}"
    assert got.shape == expected.shape, f"{name}: shape {got.shape} != {expected.shape}"
    if got.dtype.kind == "f":
        assert np.allclose(got, expected, rtol=1e-6), f"{name}: {got} != {expected}"
    else:
        assert np.array_equal(got, expected), f"{name}: {got} != {expected}"
    checks += 1


def expect_error(name, error, fn):
    global checks
    try:
        fn()
    except error as exc:
        checks += 1
        return str(exc)
    raise AssertionError(f"{name}: expected {error.__name__}")


def reduce_numpy(arrays, op):
    if arrays[0].dtype == np.bool_:
        combine = {ReduceOp.SUM: np.logical_or, ReduceOp.MAX: np.logical_or,
                   ReduceOp.MIN: np.logical_and, ReduceOp.PRODUCT: np.logical_and}[op]
        out = arrays[0]
        for a in arrays[1:]:
            out = combine(out, a)
        return out
    stacked = np.stack(arrays)
    if op == ReduceOp.AVG:
        return (stacked.sum(0) / len(arrays)).astype(arrays[0].dtype)
    return {ReduceOp.SUM: stacked.sum(0), ReduceOp.MAX: stacked.max(0), ReduceOp.MIN: stacked.min(0),
            ReduceOp.PRODUCT: stacked.prod(0)}[op].astype(arrays[0].dtype)


def run(async_op, fn):
    """Calls a collective; in async form, waits on its Work and checks ``is_completed``."""
    work = fn(async_op)
    if async_op:
        assert work is not None
        work.wait()
        assert work.is_completed()
    else:
        assert work is None


def test_reductions(rank, size):
    ops = [ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT]
    for dtype in DTYPES:
        everyone = [data(r, dtype) for r in range(size)]
        for op in ops:
            if op == ReduceOp.AVG and dtype in ("int64", "bool"):
                t = as_tensor(everyone[rank])
                message = expect_error("avg int", RuntimeError, lambda: dist.all_reduce(t, op=op))
                assert "can't be cast" in message
                continue
            expected = reduce_numpy(everyone, op)
            for async_op in (False, True):
                t = as_tensor(everyone[rank])
                run(async_op, lambda a: dist.all_reduce(t, op=op, async_op=a))
                check(f"all_reduce {dtype} {op}", t, expected)
                t = as_tensor(everyone[rank])
                dst = size - 1
                run(async_op, lambda a: dist.reduce(t, dst=dst, op=op, async_op=a))
                check(f"reduce {dtype} {op}", t, expected if rank == dst else everyone[rank])
        if dtype != "bool":
            for async_op in (False, True):
                inp = as_tensor(np.concatenate([everyone[rank]] * size))
                out = as_tensor(np.zeros_like(everyone[rank]))
                run(async_op, lambda a: dist.reduce_scatter_tensor(out, inp, op=ReduceOp.SUM, async_op=a))
                check(f"reduce_scatter {dtype}", out, reduce_numpy(everyone, ReduceOp.SUM))
    # reduce_scatter gives rank i the i-th chunk of the sum
    chunks = [np.arange(size * 4, dtype=np.float32) * (r + 1) for r in range(size)]
    out = torch.zeros(4)
    dist.reduce_scatter_tensor(out, as_tensor(chunks[rank]), op=ReduceOp.AVG)
    check("reduce_scatter chunk", out, (sum(chunks) / size)[rank * 4:(rank + 1) * 4])


def test_broadcast_and_gathers(rank, size):
    for dtype in DTYPES:
        everyone = [data(r, dtype) for r in range(size)]
        for async_op in (False, True):
            src = size - 1
            t = as_tensor(everyone[rank])
            run(async_op, lambda a: dist.broadcast(t, src=src, async_op=a))
            check(f"broadcast {dtype}", t, everyone[src])
            outs = [as_tensor(np.zeros_like(everyone[0])) for _ in range(size)]
            run(async_op, lambda a: dist.all_gather(outs, as_tensor(everyone[rank]), async_op=a))
            for r in range(size):
                check(f"all_gather {dtype}", outs[r], everyone[r])
            out = as_tensor(np.zeros((2 * size, 3), dtype=everyone[0].dtype))
            run(async_op, lambda a: dist.all_gather_into_tensor(out, as_tensor(everyone[rank]), async_op=a))
            check(f"all_gather_into_tensor {dtype}", out, np.concatenate(everyone))
            stacked = as_tensor(np.zeros((size, 2, 3), dtype=everyone[0].dtype))
            dist.all_gather_into_tensor(stacked, as_tensor(everyone[rank]))
            check(f"all_gather_into_tensor stacked {dtype}", stacked, np.stack(everyone))


def test_views(rank, size):
    """Non-contiguous tensors are staged and written back; contiguous views are used in place."""
    base = torch.zeros(3, 4)
    column = base[:, 1]
    column.copy_(torch.ones(3) * (rank + 1))
    dist.all_reduce(column)
    expected = np.zeros((3, 4), dtype=np.float32)
    expected[:, 1] = size * (size + 1) / 2
    check("all_reduce non-contiguous view", base, expected)
    row = base[1]
    row.fill_(rank)
    dist.broadcast(row, src=size - 1)
    expected[1] = size - 1
    check("broadcast contiguous view", base, expected)
    # a parameter that requires grad is written in place too, as in PyTorch
    weight = torch.nn.Parameter(torch.ones(4) * rank)
    dist.all_reduce(weight, op=ReduceOp.MAX)
    check("all_reduce parameter", weight.detach(), np.full(4, size - 1, dtype=np.float32))


def test_point_to_point(rank, size):
    nxt, prev = (rank + 1) % size, (rank - 1) % size
    payload = as_tensor(np.arange(5, dtype=np.int64) + 100 * rank)
    box = torch.zeros(5, dtype=torch.int64)
    if rank % 2 == 0:
        dist.send(payload, dst=nxt)
        sender = dist.recv(box, src=prev)
    else:
        sender = dist.recv(box, src=prev)
        dist.send(payload, dst=nxt)
    check("send/recv", box, np.arange(5, dtype=np.int64) + 100 * prev)
    assert sender == prev
    out = dist.isend(payload * 2, dst=nxt, tag=7)
    box2 = torch.zeros(5, dtype=torch.int64)
    incoming = dist.irecv(box2, tag=7)  # from any source
    out.wait()
    incoming.wait()
    assert incoming.is_completed() and incoming.source_rank() == prev
    check("isend/irecv", box2, 2 * (np.arange(5, dtype=np.int64) + 100 * prev))
    message = expect_error("send to self", ValueError, lambda: dist.send(payload, dst=rank))
    assert "should not be the same" in message
    # a message of the wrong size raises on the receiving rank
    if rank == 0:
        dist.send(torch.ones(3), dst=1)
    elif rank == 1:
        message = expect_error("recv size", RuntimeError, lambda: dist.recv(torch.zeros(4), src=0))
        assert "expected 4 elements" in message, message


def test_mismatch_raises_everywhere(rank, size):
    message = expect_error("shape mismatch", RuntimeError, lambda: dist.all_reduce(torch.ones(2 + rank)))
    assert "different tensors" in message
    dtype = torch.float64 if rank == 0 else torch.float32
    expect_error("dtype mismatch", RuntimeError, lambda: dist.broadcast(torch.ones(3, dtype=dtype), src=0))
    expect_error("root mismatch", RuntimeError, lambda: dist.broadcast(torch.ones(3), src=rank))
    # a bad argument on one rank only: that rank raises its own error, the others are told
    outs = [torch.zeros(2) for _ in range(size if rank else size + 1)]
    message = expect_error("bad list on rank 0", RuntimeError, lambda: dist.all_gather(outs, torch.ones(2)))
    assert ("expected length" in message) == (rank == 0), message
    expect_error("invalid root", RuntimeError, lambda: dist.broadcast(torch.ones(1), src=size))
    t = torch.ones(2)
    dist.all_reduce(t)  # the group is still usable
    check("after errors", t, np.full(2, size, dtype=np.float32))


def test_objects(rank, size):
    objs = [None] * size
    dist.all_gather_object(objs, {"rank": rank, "name": f"r{rank}"})
    assert objs == [{"rank": r, "name": f"r{r}"} for r in range(size)]
    items = [f"from {rank}", rank, None]
    dist.broadcast_object_list(items, src=size - 1)
    assert items == [f"from {size - 1}", size - 1, None]
    global checks
    checks += 2


def test_gil_released(rank, size):
    """While rank 0 waits in a collective for a late rank, its other Python threads run."""
    stamps = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.001)

    dist.barrier()
    if rank == 0:
        thread = threading.Thread(target=count)
        thread.start()
        start = time.perf_counter()
        dist.all_reduce(torch.ones(4))
        end = time.perf_counter()
        stop.set()
        thread.join()
        assert end - start > 0.2, end - start
        # with the GIL held during the wait, the thread could not have run in this window
        inside = [t for t in stamps if start + 0.05 < t < end - 0.05]
        assert len(inside) > 20, f"the other thread ran {len(inside)} times during the wait"
    else:
        time.sleep(0.3)
        dist.all_reduce(torch.ones(4))
    work = dist.barrier(async_op=True)
    work.wait()
    global checks
    checks += 1


def main():
    torch.set_num_threads(1)
    assert not dist.is_initialized()
    dist.init_process_group("mpi")
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    rank, size = dist.get_rank(), dist.get_world_size()
    assert size >= 2
    for test in (test_reductions, test_broadcast_and_gathers, test_views, test_point_to_point,
                 test_mismatch_raises_everywhere, test_objects, test_gil_released):
        test(rank, size)
    counts = [None] * size
    dist.all_gather_object(counts, checks)
    dist.destroy_process_group()
    assert not dist.is_initialized()
    if rank == 0:
        print(f"PASSED {sum(counts)} checks on {size} ranks", flush=True)


if __name__ == "__main__":
    main()
