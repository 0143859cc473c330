"""Run the same workloads on ferrograd and (if importable) PyTorch, in one run.

    python benches/compare_torch.py           # full run
    python benches/compare_torch.py --quick   # fewer repeats

For each workload it prints, for each library, the best over 5 alternating rounds of the
median over repeats, and the speed ratio ferrograd/PyTorch (above 1 means ferrograd is
faster).  The "ref"
column is what PyTorch measured on the 2-core development machine.

Workloads:
  (a) a chain of 20 elementwise ops on 16-element float32 tensors that require
      grad, forward + backward; time per op (per-call overhead).
  (b) 1024x1024 float32 matmul; GFLOP/s.
  (c) a chain of elementwise ops on 4M-element float32 tensors, no grad;
      effective GB/s, counting the bytes each op reads and writes.
  (d) a 2-16-16-1 tanh MLP written with plain tensors and matmul, batch 32,
      forward + backward; time per step.
  (e, f) a full training step (zero_grad, forward, cross-entropy, backward, optimizer step)
      of an nn.Sequential MLP 784-256-128-10 (ReLU) at batch 64, with SGD (momentum 0.9)
      and with Adam.
  (g) the same step for a 2-16-16-1 tanh MLP at batch 32, MSE loss, SGD with momentum.
  (h) forward + backward of one causal nn.TransformerEncoderLayer (batch 8, seq 64,
      d_model 128, 4 heads, feed-forward 512, batch_first, no dropout).
  (i) a training step (SGD with momentum) of a small CNN on 64 28x28 images: conv 1->16 3x3,
      ReLU, max-pool 2, conv 16->32 3x3, ReLU, max-pool 2, linear 1568->10.
  (j) forward + backward of a nanoGPT block (batch 8, seq 64, d 128, 4 heads): LayerNorm,
      qkv Linear, split, view/transpose to heads, F.scaled_dot_product_attention(is_causal=True),
      output projection, residual, LayerNorm, Linear 128->512, GELU, Linear 512->128, residual.
  (k) the same block with the attention spelled out: (q @ k.transpose(-2, -1)) * scale,
      masked_fill(causal mask, -inf), F.softmax, @ v.
  (l) forward + backward of nn.TransformerEncoderLayer(d_model=128, nhead=4,
      dim_feedforward=512, activation="gelu", norm_first=True, batch_first=True, dropout=0)
      on batch 8, seq 64, no mask.
  (m) forward + backward of a 2-layer nn.LSTM(64, 128) over 32 steps at batch 16.
  (n) a training step (SGD with momentum) of a small CNN on 32 3x32x32 images: conv 3->16 3x3
      pad 1, BatchNorm2d, ReLU, conv 16->32 3x3 stride 2 pad 1, BatchNorm2d, ReLU,
      AdaptiveAvgPool2d(1), flatten, linear 32->10.

OpenBLAS is limited to one thread.  PyTorch keeps its default thread count.
"""

import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before numpy or torch is imported

import argparse
import gc
import importlib
import math
import statistics
import time


def load(name):
    try:
        return importlib.import_module(name), None
    except Exception as exc:  # not built, not installed, or broken
        return None, f"{type(exc).__name__}: {exc}"


def median_time(fn, number, repeat, warmup):
    """Median over `repeat` runs of the time per call, each run making `number` calls."""
    for _ in range(warmup):
        fn()
    gc.collect()
    gc.disable()
    try:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times.append((time.perf_counter() - start) / number)
    finally:
        gc.enable()
    return statistics.median(times)


# Each workload takes the library module `T` and the repeat settings, and returns
# (value, unit, higher_is_better).

SMALL_OPS = 20


def small_elementwise_chain(T, quick):
    x = T.randn(16, requires_grad=True)
    w = T.randn(16)

    def step():
        y = x
        for _ in range(SMALL_OPS // 5):
            y = y * w
            y = y + 0.5
            y = y.tanh()
            y = y * 2.0
            y = y.sigmoid()
        y.sum().backward()
        x.grad = None

    seconds = median_time(step, number=50 if quick else 200, repeat=5 if quick else 15, warmup=20)
    return seconds / SMALL_OPS * 1e6, "µs/op", False


MATMUL_N = 1024


def matmul(T, quick):
    a = T.randn(MATMUL_N, MATMUL_N)
    b = T.randn(MATMUL_N, MATMUL_N)

    def step():
        a @ b

    seconds = median_time(step, number=1, repeat=5 if quick else 20, warmup=3)
    return 2 * MATMUL_N ** 3 / seconds / 1e9, "GFLOP/s", True


BIG_N = 4 * 1024 * 1024


def big_elementwise_chain(T, quick):
    x = T.randn(BIG_N)

    def step():
        y = x * 2.0  # reads 1 tensor, writes 1
        y = y + 1.0  # 1 + 1
        y = y * x  # 2 + 1
        y = y + x  # 2 + 1
        y = y * 0.5  # 1 + 1
        y = y - x  # 2 + 1

    tensors_touched = 2 + 2 + 3 + 3 + 2 + 3
    with T.no_grad():
        seconds = median_time(step, number=1, repeat=5 if quick else 20, warmup=3)
    return tensors_touched * BIG_N * 4 / seconds / 1e9, "GB/s", True


def mlp(T, quick):
    batch = 32
    X = T.randn(batch, 2)
    Y = T.randn(batch, 1)
    W1 = (T.randn(2, 16) * 0.5).requires_grad_()
    b1 = T.zeros(16).requires_grad_()
    W2 = (T.randn(16, 16) * 0.25).requires_grad_()
    b2 = T.zeros(16).requires_grad_()
    W3 = (T.randn(16, 1) * 0.25).requires_grad_()
    b3 = T.zeros(1).requires_grad_()
    params = [W1, b1, W2, b2, W3, b3]

    def step():
        h = (X @ W1 + b1).tanh()
        h = (h @ W2 + b2).tanh()
        out = h @ W3 + b3
        loss = ((out - Y) ** 2).mean()
        loss.backward()
        for p in params:
            p.grad = None

    seconds = median_time(step, number=50 if quick else 200, repeat=5 if quick else 15, warmup=20)
    return seconds * 1e6, "µs/step", False


def training_step(T, model, loss_fn, optimizer, x, y):
    def step():
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()

    return step


def mnist_mlp(T, optimizer):
    nn = T.nn
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    x = T.randn(64, 784)
    y = T.randint(0, 10, (64,))
    opt = (T.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) if optimizer == "sgd"
           else T.optim.Adam(model.parameters(), lr=1e-3))
    return training_step(T, model, nn.CrossEntropyLoss(), opt, x, y)


def mlp784_sgd(T, quick):
    step = mnist_mlp(T, "sgd")
    seconds = median_time(step, number=10 if quick else 40, repeat=5 if quick else 15, warmup=10)
    return seconds * 1e6, "µs/step", False


def mlp784_adam(T, quick):
    step = mnist_mlp(T, "adam")
    seconds = median_time(step, number=10 if quick else 40, repeat=5 if quick else 15, warmup=10)
    return seconds * 1e6, "µs/step", False


def tiny_mlp_module(T, quick):
    nn = T.nn
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                          nn.Linear(16, 1))
    x, y = T.randn(32, 2), T.randn(32, 1)
    opt = T.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step = training_step(T, model, nn.MSELoss(), opt, x, y)
    seconds = median_time(step, number=50 if quick else 200, repeat=5 if quick else 15, warmup=20)
    return seconds * 1e6, "µs/step", False


def forward_backward(model, x, quick, **kwargs):
    """Time one `model(x, **kwargs).sum().backward()` (gradients accumulate)."""

    def step():
        out = model(x, **kwargs)
        out = out[0] if isinstance(out, tuple) else out  # nn.LSTM: (output, (h, c))
        out.sum().backward()

    seconds = median_time(step, number=5 if quick else 20, repeat=5 if quick else 11, warmup=5)
    return seconds * 1e3, "ms/step", False


def transformer_block(T, quick):
    nn = T.nn
    T.manual_seed(0)
    block = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512, dropout=0.0,
                                       batch_first=True)
    x = T.randn(8, 64, 128, requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(64)
    return forward_backward(block, x, quick, src_mask=mask, is_causal=True)


def sdpa_attention(T, block, q, k, v):
    return T.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def explicit_attention(T, block, q, k, v):
    seq = q.shape[-2]
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    att = att.masked_fill(block.bias[:, :, :seq, :seq] == 0, float("-inf"))
    return T.nn.functional.softmax(att, dim=-1) @ v


def gpt_block(T, attention, d=128, heads=4, block_size=64):
    """A nanoGPT block (pre-LayerNorm, causal self-attention, 4x GELU MLP, residuals)."""
    nn, F = T.nn, T.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.fc = nn.Linear(d, 4 * d)
            self.fc_out = nn.Linear(4 * d, d)
            causal = T.tril(T.ones(block_size, block_size))
            self.register_buffer("bias", causal.view(1, 1, block_size, block_size))

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (t.view(b, s, heads, d // heads).transpose(1, 2) for t in (q, k, v))
            y = attention(T, self, q, k, v).transpose(1, 2).contiguous().view(b, s, d)
            x = x + self.proj(y)
            return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))

    T.manual_seed(0)
    return Block()


def gpt_block_sdpa(T, quick):
    return forward_backward(gpt_block(T, sdpa_attention), T.randn(8, 64, 128), quick)


def gpt_block_explicit(T, quick):
    return forward_backward(gpt_block(T, explicit_attention), T.randn(8, 64, 128), quick)


def encoder_layer_gelu(T, quick):
    T.manual_seed(0)
    layer = T.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512,
                                         activation="gelu", norm_first=True, batch_first=True,
                                         dropout=0.0)
    return forward_backward(layer, T.randn(8, 64, 128), quick)


def lstm(T, quick):
    T.manual_seed(0)
    model = T.nn.LSTM(64, 128, num_layers=2)
    return forward_backward(model, T.randn(32, 16, 64), quick)  # (seq, batch, features)


def classifier_sgd_step(T, model, x, quick):
    """Time a training step (SGD with momentum, cross-entropy over 10 classes) on batch x."""
    y = T.randint(0, 10, (x.shape[0],))
    opt = T.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step = training_step(T, model, T.nn.CrossEntropyLoss(), opt, x, y)
    seconds = median_time(step, number=5 if quick else 20, repeat=5 if quick else 11, warmup=3)
    return seconds * 1e3, "ms/step", False


def small_cnn(T, quick):
    nn = T.nn
    T.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
    return classifier_sgd_step(T, model, T.randn(64, 1, 28, 28), quick)


def bn_cnn(T, quick):
    nn = T.nn
    T.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                          nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    return classifier_sgd_step(T, model, T.randn(32, 3, 32, 32), quick)


WORKLOADS = [
    ("(a) 20 elementwise ops, 16 elts, fwd+bwd", small_elementwise_chain, 9.4),
    ("(b) matmul 1024x1024 f32", matmul, 245.0),
    ("(c) elementwise chain, 4M elts, no grad", big_elementwise_chain, 27.0),
    ("(d) MLP 2-16-16-1 tanh, batch 32, fwd+bwd", mlp, None),
    ("(e) nn MLP 784-256-128-10, b64, SGD step", mlp784_sgd, 1330),
    ("(f) nn MLP 784-256-128-10, b64, Adam step", mlp784_adam, 1730),
    ("(g) nn MLP 2-16-16-1 tanh, b32, SGD step", tiny_mlp_module, 220),
    ("(h) transformer block b8 s64 d128 h4 fwd+bwd", transformer_block, 7.1),
    ("(i) CNN 28x28 conv16-pool-conv32-pool-fc b64 SGD", small_cnn, None),
    ("(j) GPT block, F.sdpa causal, b8 s64 d128 fwd+bwd", gpt_block_sdpa, None),
    ("(k) GPT block, explicit masked softmax, fwd+bwd", gpt_block_explicit, None),
    ("(l) encoder layer gelu norm_first fwd+bwd", encoder_layer_gelu, None),
    ("(m) LSTM 64-128 x2 layers, b16 s32 fwd+bwd", lstm, None),
    ("(n) CNN 32x32 conv-BN-conv-BN-avgpool b32 SGD", bn_cnn, None),
]


def run(T, fn, quick):
    try:
        return fn(T, quick), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"


def speed_ratio(ours, theirs):
    """ferrograd speed / PyTorch speed."""
    if ours is None or theirs is None:
        return "-"
    value, _, higher_is_better = ours
    other = theirs[0]
    ratio = value / other if higher_is_better else other / value
    return f"{ratio:.2f}x"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()

    fg, fg_error = load("ferrograd")
    torch, torch_error = load("torch")
    if fg is None:
        print(f"ferrograd not importable ({fg_error})")
    if torch is None:
        print(f"torch not importable ({torch_error})")
    else:
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    if fg is None and torch is None:
        raise SystemExit(1)
    print(f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}"
          f"{', quick' if args.quick else ''}")
    print()

    header = f"{'workload':44} {'ferrograd':>18} {'torch':>18} {'ref (torch)':>12} {'fg/torch speed':>15}"
    print(header)
    print("-" * len(header))
    errors = []
    rounds = 1 if args.quick else 5
    for name, fn, reference in WORKLOADS:
        # Alternate the libraries over several rounds and keep each one's best median: a
        # library's worker threads still spinning from its last call would otherwise slow
        # down the other one, and the order of the two would decide the ratio.
        best = {"ferrograd": None, "torch": None}
        for _ in range(rounds):
            for label, lib in (("ferrograd", fg), ("torch", torch)):
                if lib is None or best[label] == "error":
                    continue
                time.sleep(0.2)
                result, error = run(lib, fn, args.quick)
                if error is not None:
                    errors.append(f"{label} {name}: {error}")
                    best[label] = "error"
                    continue
                prev = best[label]
                better = prev is None or (
                    result[0] > prev[0] if result[2] else result[0] < prev[0]
                )
                if better:
                    best[label] = result
        results, cells = [], []
        for label in ("ferrograd", "torch"):
            result = best[label]
            if result is None:
                cells.append("-")
            elif result == "error":
                cells.append("error")
                result = None
            else:
                value, unit, _ = result
                cells.append(f"{value:.1f} {unit}")
            results.append(result)
        ref = f"~{reference:g}" if reference is not None else "-"
        print(f"{name:44} {cells[0]:>18} {cells[1]:>18} {ref:>12} {speed_ratio(*results):>15}",
              flush=True)
    for line in errors:
        print(line)


if __name__ == "__main__":
    main()
