"""Soak: long training loops must keep memory and the autograd graph flat.

    python benches/soak.py            # the full run (about a minute)
    python benches/soak.py --quick    # a tenth of the steps

Phases, each warmed up first (200 steps, then ``gc.collect()``), then measured:
  mlp           10,000 training steps of a 64-128-10 ReLU MLP (nn.Linear, CrossEntropyLoss,
                SGD with momentum) on random data, batch 32.
  create_graph  2,000 gradient-penalty steps: grads = autograd.grad(loss, params,
                create_graph=True); loss + sum(g.pow(2).sum()); backward; step.
  ctx_attr      2,000 steps of a 784-256-10 model whose activation is a custom
                autograd.Function keeping its tensors as ctx attributes (``ctx.inp = x``,
                ``ctx.out = y``) rather than with save_for_backward: a reference cycle
                y -> node -> ctx -> y that only the cycle collector can free.
  no_backward   2,000 forward passes of the MLP whose graphs are dropped without backward.

For each phase it prints the RSS growth over the measured steps (VmRSS, /proc/self/status),
and the live graph nodes (``ferrograd._core._live_nodes()``) at the start, at the end, and
at the end after ``gc.collect()``.  The goal: under 1 MB of growth per phase and the node
count back where it started.  A program that prints figures; it asserts nothing.
"""

import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before numpy is imported

import argparse
import gc
import time

import ferrograd as torch
from ferrograd import _core, nn

WARMUP = 200
GOAL_MB = 1.0


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024  # kB
    raise RuntimeError("no VmRSS in /proc/self/status")


def mlp():
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def sgd_steps(model, in_features, momentum=0.0):
    """A training step of `model` on random batches of 32 (SGD, cross-entropy)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=momentum)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        x, y = torch.randn(32, in_features), torch.randint(0, 10, (32,))
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def training_phase():
    return sgd_steps(mlp(), 64, momentum=0.9)


def create_graph_phase():
    model = mlp()
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
        loss = loss_fn(model(x), y)
        grads = torch.autograd.grad(loss, params, create_graph=True)
        loss = loss + sum(g.pow(2).sum() for g in grads)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


class CtxReLU(torch.autograd.Function):
    """ReLU that keeps its input and output as ctx attributes instead of save_for_backward."""

    @staticmethod
    def forward(ctx, x):
        y = x.clamp(min=0)
        ctx.inp = x
        ctx.out = y
        return y

    @staticmethod
    def backward(ctx, g):
        return g * (ctx.out > 0)


class CtxMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(CtxReLU.apply(self.fc1(x)))


def ctx_attr_phase():
    return sgd_steps(CtxMLP(), 784)


def no_backward_phase():
    model = mlp()
    loss_fn = nn.CrossEntropyLoss()

    def step():
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
        loss = loss_fn(model(x), y)  # a whole graph, never run: dropped with `loss`
        del loss

    return step


PHASES = [
    ("mlp", 10_000, training_phase),
    ("create_graph", 2_000, create_graph_phase),
    ("ctx_attr", 2_000, ctx_attr_phase),
    ("no_backward", 2_000, no_backward_phase),
]


def measure(make_step, steps):
    step = make_step()
    for _ in range(WARMUP):
        step()
    gc.collect()
    nodes0, rss0 = _core._live_nodes(), rss_mb()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    seconds = time.perf_counter() - t0
    nodes1, rss1 = _core._live_nodes(), rss_mb()
    gc.collect()
    nodes_gc, rss_gc = _core._live_nodes(), rss_mb()
    return {
        "seconds": seconds,
        "rss_growth": rss1 - rss0,
        "rss_growth_gc": rss_gc - rss0,
        "nodes": (nodes0, nodes1, nodes_gc),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the steps")
    args = parser.parse_args()

    torch.manual_seed(0)
    print(f"warm-up {WARMUP} steps per phase; goal: RSS growth < {GOAL_MB} MB, nodes back to start")
    header = (f"{'phase':14} {'steps':>7} {'s':>6} {'RSS +MB':>8} {'+MB (gc)':>9} "
              f"{'nodes start':>12} {'end':>8} {'end (gc)':>9}  verdict")
    print(header)
    print("-" * len(header))
    for name, steps, make_step in PHASES:
        if args.quick:
            steps //= 10
        r = measure(make_step, steps)
        n0, n1, ngc = r["nodes"]
        ok = r["rss_growth_gc"] < GOAL_MB and ngc <= n0
        verdict = "ok" if ok else "LEAK" if ngc > n0 else "RSS grows"
        print(f"{name:14} {steps:>7} {r['seconds']:>6.1f} {r['rss_growth']:>8.2f} "
              f"{r['rss_growth_gc']:>9.2f} {n0:>12} {n1:>8} {ngc:>9}  {verdict}")
    print(f"RSS at the end: {rss_mb():.1f} MB")


if __name__ == "__main__":
    main()
