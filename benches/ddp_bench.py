"""DistributedDataParallel step times on MPI: one process with 2 threads against 2 processes
with 1 thread each, for an MLP and a small nanoGPT-style block.

    python3 benches/ddp_bench.py [--steps 60]

The script measures the 1-process figures itself, then runs itself under ``mpiexec -n 2``
(``--worker``) and prints one table. For the 2-process runs it reports:

- all-reduce: the time the step's bucket all-reduces take when run alone, one after the other,
  as the reducer runs them (median; through shared memory when all ranks are on one node, see
  ``_SharedMemoryReduction`` in ferrograd/nn/parallel/distributed.py), and in brackets the
  time of a blocking ``MPI_Allreduce`` of the same buffers;
- exposed: the time from the last rank reaching the final wait to the end of the reductions,
  i.e. the communication not hidden behind backward (median; the time a rank waits for a slower
  rank, reported as "skew", is left out);
- overlap: the part of the all-reduce time hidden behind backward, ``1 - exposed / all-reduce``;
- bytes: the gradient bytes all-reduced per step.

Then it estimates, on paper, 8 and 64 nodes on a 10 Gb/s network (ring all-reduce
``2(N-1)/N * bytes / bandwidth + 2(N-1) * latency`` per bucket).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import ferrograd as torch
import ferrograd.distributed as dist
import ferrograd.nn as nn
import ferrograd.nn.functional as F

GLOBAL_BATCH = {"mlp": 64, "gpt": 8}
# DDP's default buckets (the first one 1 MiB: each model fits in it), the same with
# gradient_as_bucket_view=True (no copy of the averages back into .grad), then 0.25 MB buckets
# so that reductions can start while backward still runs: (bucket_cap_mb, gradient_as_bucket_view)
BUCKET_CAPS = {"default": (None, False), "default, grad as bucket view": (None, True),
               "0.25 MB": (0.25, False)}
BANDWIDTH = 10e9 / 8  # bytes per second
LATENCY = 25e-6  # seconds per message step, TCP over 10 GbE


class Block(nn.Module):
    """Pre-norm transformer block: LayerNorm, qkv Linear, causal SDPA, GELU MLP."""

    def __init__(self, d=128, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


def workload(name, batch):
    torch.manual_seed(0)
    if name == "mlp":
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
        x, y = torch.randn(batch, 784), torch.randint(0, 10, (batch,))
        return model, lambda m: F.cross_entropy(m(x), y)
    model = Block()
    x, target = torch.randn(batch, 64, 128), torch.randn(batch, 64, 128)
    return model, lambda m: F.mse_loss(m(x), target)


def time_steps(model, loss_fn, steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    times = []
    for i in range(steps + 10):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss_fn(model).backward()
        optimizer.step()
        if i >= 10:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def single_process(name, threads, batch, steps):
    torch.set_num_threads(threads)
    model, loss_fn = workload(name, batch)
    return time_steps(model, loss_fn, steps)


def allreduce_alone(ddp, repeats=50, mpi=False):
    """Median time of the step's bucket all-reduces, one after the other, each waited for: as
    the reducer runs them (shared memory when all ranks are on this node), or, with ``mpi``,
    with a blocking ``MPI_Allreduce`` on copies of the buckets."""
    from mpi4py import MPI

    comm = ddp.process_group.comm
    # the copies must outlive the buffers MPI writes through (a buffer is only an address)
    copies = [b.flat.clone() for b in ddp.reducer.buckets]
    buffers = [dist.distributed_c10d._buffer(c) for c in copies]
    times = []
    for _ in range(repeats):
        comm.Barrier()
        start = time.perf_counter()
        for bucket, buffer in zip(ddp.reducer.buckets, buffers):
            if mpi:
                comm.Allreduce(MPI.IN_PLACE, buffer, MPI.SUM)
            else:
                bucket.start(comm)
                bucket.progress(block=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def worker(steps):
    torch.set_num_threads(1)
    dist.init_process_group("mpi")
    world = dist.get_world_size()
    results = {}
    for (name, batch), (caps, cap) in ((w, c) for w in GLOBAL_BATCH.items() for c in BUCKET_CAPS.items()):
        model, loss_fn = workload(name, batch // world)
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap[0],
                                                  gradient_as_bucket_view=cap[1])
        step = time_steps(ddp, loss_fn, steps)
        ddp.reducer.clock = time.perf_counter
        exposed, skew = [], []
        optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-3)
        for _ in range(steps):
            optimizer.zero_grad()
            loss_fn(ddp).backward()
            events = dict(ddp.reducer.events)  # the last "launch", "wait" and "done"
            # perf_counter is CLOCK_MONOTONIC, one clock for all processes of this machine
            arrivals = [None] * world
            dist.all_gather_object(arrivals, events["wait"])
            exposed.append(events["done"] - max(arrivals))
            skew.append(max(arrivals) - min(arrivals))
        results[f"{name} {caps}"] = {
            "step": step,
            "allreduce": allreduce_alone(ddp),
            "mpi_allreduce": allreduce_alone(ddp, mpi=True),
            "exposed": statistics.median(exposed),
            "skew": statistics.median(skew),
            "bytes": sum(b.flat.numel() * b.flat.element_size() for b in ddp.reducer.buckets),
            "buckets": len(ddp.reducer.buckets),
        }
    if dist.get_rank() == 0:
        print("RESULTS " + json.dumps(results), flush=True)
    dist.destroy_process_group()


def ring_allreduce(nbytes, buckets, nodes):
    return 2 * (nodes - 1) / nodes * nbytes / BANDWIDTH + buckets * 2 * (nodes - 1) * LATENCY


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=1,
                        help="run everything this many times, interleaved, and report the medians "
                             "(and the 2 procs / 1 proc ratios' range)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.steps)

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    command = ["mpiexec", "-n", "2", sys.executable, os.path.abspath(__file__), "--worker",
               "--steps", str(args.steps)]
    runs, singles = [], []
    for _ in range(args.repeats):
        out = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout
        runs.append(json.loads(next(line for line in out.splitlines() if line.startswith("RESULTS "))[8:]))
        singles.append({name: (single_process(name, 2, batch, args.steps),
                               single_process(name, 1, batch // 2, args.steps))
                        for name, batch in GLOBAL_BATCH.items()})
    two = {key: {k: statistics.median(run[key][k] for run in runs) for k in runs[0][key]} for key in runs[0]}
    ratios = {key: sorted(run[key]["step"] / single[key.split()[0]][0] for run, single in zip(runs, singles))
              for key in runs[0]}

    ms = lambda s: f"{s * 1e3:.2f} ms"  # noqa: E731
    print("| workload | buckets | 1 proc x 2 threads | 1 proc x 1 thread, half batch "
          "| 2 procs x 1 thread | 2 procs / 1 proc | all-reduce alone (MPI_Allreduce) | exposed "
          "| overlap | skew | bytes/step (buckets) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, batch in GLOBAL_BATCH.items():
        one = statistics.median(single[name][0] for single in singles)
        half = statistics.median(single[name][1] for single in singles)
        for caps in BUCKET_CAPS:
            r = two[f"{name} {caps}"]
            r["compute"] = half
            overlap = max(0.0, 1 - r["exposed"] / r["allreduce"]) if r["allreduce"] else 0.0
            spread = ratios[f"{name} {caps}"]
            ratio = f"{r['step'] / one:.2f}x" + (f" ({spread[0]:.2f}-{spread[-1]:.2f})" if len(spread) > 1 else "")
            print(f"| {name} (global batch {batch}) | {caps} | {ms(one)} | {ms(half)} | {ms(r['step'])} "
                  f"| {ratio} | {ms(r['allreduce'])} ({ms(r['mpi_allreduce'])}) "
                  f"| {ms(r['exposed'])} | {overlap:.0%} | {ms(r['skew'])} "
                  f"| {r['bytes'] / 1e6:.2f} MB ({int(r['buckets'])}) |")
    print()
    print("Paper estimate, 10 Gb/s, ring all-reduce, 25 us per message step; compute per node = "
          "the 1-thread half-batch step above (weak scaling: each node keeps its batch):")
    print("| workload | nodes | all-reduce | step, no overlap | step, full overlap | efficiency range |")
    print("|---|---|---|---|---|---|")
    for name in GLOBAL_BATCH:
        r = two[f"{name} default"]
        for nodes in (8, 64):
            comm = ring_allreduce(r["bytes"], r["buckets"], nodes)
            worst, best = r["compute"] + comm, max(r["compute"], comm)
            print(f"| {name} | {nodes} | {ms(comm)} | {ms(worst)} | {ms(best)} "
                  f"| {r['compute'] / worst:.0%}-{r['compute'] / best:.0%} |")


if __name__ == "__main__":
    main()
