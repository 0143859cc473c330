"""The kernels' code paths for each instruction set give the same results.

The kernels run the best instruction set the CPU has (AVX-512, AVX2+FMA or plain x86_64); the
environment variable FERROGRAD_SIMD=avx2 or =base lowers it. The explicit AVX-512 kernels
(softmax rows, exp/tanh/sigmoid/silu, row norms) are checked bit for bit against the portable
code by `cargo test`; here every path runs the same ops from Python, in a subprocess per level,
and must agree with the others and with float64 references.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ferrograd as fg

SCRIPT = r"""
import json, sys
import numpy as np
import ferrograd as torch
import ferrograd.nn.functional as F

rng = np.random.default_rng(0)
out = {"level": torch._core._simd_level()}

def leaf(shape, scale=3.0):
    return torch.tensor((rng.standard_normal(shape) * scale).astype(np.float32), requires_grad=True)

def record(name, fn, *shapes):
    xs = [leaf(s) for s in shapes]
    y = fn(*xs)
    g = torch.tensor(rng.standard_normal(tuple(y.shape)).astype(np.float32))
    y.backward(g)
    out[name] = [y.detach().numpy().ravel().tolist()] + [x.grad.numpy().ravel().tolist() for x in xs]

# rows of lengths around the vector widths (16, 64) and a long one
for n in (1, 5, 16, 17, 63, 64, 65, 300):
    record(f"softmax{n}", lambda x: F.softmax(x, -1), (3, n))
    record(f"log_softmax{n}", lambda x: F.log_softmax(x, -1), (3, n))
    record(f"layer_norm{n}", lambda x, w, b: F.layer_norm(x, (n,), w, b), (3, n), (n,), (n,))
record("softmax_dim0", lambda x: F.softmax(x, 0), (7, 33))
record("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), (2, 4, 5, 7), (4,), (4,))
for op in ("exp", "tanh", "sigmoid"):
    record(op, lambda x, op=op: getattr(x, op)(), (1000,))
    record(op + "_strided", lambda x, op=op: getattr(x.t(), op)(), (37, 29))
    x = torch.tensor(np.linspace(-90, 90, 1001, dtype=np.float32))
    getattr(x, op + "_")()
    out[op + "_"] = [x.numpy().tolist()]
record("silu", F.silu, (1000,))
record("gelu", F.gelu, (1000,))
record("logsumexp", lambda x: x.logsumexp(-1), (5, 100))
record("bcast_mul", lambda x, c: x * c, (64, 33), (64, 1))
record("sum_dim0", lambda x: x.sum(0), (65, 33))
record("matmul", lambda a, b: a @ b, (17, 40), (40, 9))
json.dump(out, sys.stdout)
"""


def run(level):
    env = dict(os.environ, FERROGRAD_SIMD=level, OPENBLAS_NUM_THREADS="1")
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def results():
    return {level: run(level) for level in ("avx512", "avx2", "base")}


def test_the_environment_variable_lowers_the_level(results):
    best = fg._core._simd_level()
    order = ["base", "avx2", "avx512"]
    for asked, res in results.items():
        want = order[min(order.index(asked), order.index(best))]
        assert res["level"] == want, (asked, res["level"])


@pytest.mark.parametrize("other", ["avx2", "base"])
def test_every_path_gives_the_same_results(results, other):
    ref, res = results["avx512"], results[other]
    assert ref.keys() == res.keys()
    for name in ref:
        if name == "level":
            continue
        for k, (a, b) in enumerate(zip(ref[name], res[name])):
            np.testing.assert_allclose(
                np.asarray(b, dtype=np.float64),
                np.asarray(a, dtype=np.float64),
                rtol=2e-5,
                atol=2e-6,
                err_msg=f"{name} output {k}: {other} vs the best level",
            )


def test_the_explicit_exponentials_are_accurate(results):
    x = np.linspace(-90, 90, 1001, dtype=np.float32).astype(np.float64)
    want = {
        "exp_": np.exp(x),
        "tanh_": np.tanh(x),
        "sigmoid_": 1 / (1 + np.exp(-x)),
    }
    for res in results.values():
        for name, w in want.items():
            got = np.asarray(res[name][0], dtype=np.float64)
            finite = np.isfinite(w) & (np.abs(w) > 1.2e-38) & (np.abs(w) < 3.4e38)
            rel = np.abs(got[finite] - w[finite]) / np.abs(w[finite])
            assert rel.max() < 4 * 2.0**-23, (name, res["level"], rel.max())
            # exp underflows to 0 below the normal range and overflows to inf, as float32 does
            if name == "exp_":
                assert np.all(got[w < 1e-38] == 0) and np.all(np.isinf(got[w > 3.5e38]))
