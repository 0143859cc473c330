"""ferrograd's main demo: a small MLP trained with tensors and autograd only.

Two interleaved spirals, a 2-32-32-1 tanh network written by hand, full-batch gradient descent
with momentum; the update runs under no_grad and changes the parameters in place.
Run: python examples/demo.py
"""

import math
import time

import ferrograd as torch


def spirals(n_per_class, noise=0.05):
    """Two interleaved spirals in 2-D, labels 0 and 1."""
    t = torch.linspace(0.25, 3.5 * math.pi, n_per_class)
    r = t / (3.5 * math.pi)
    a = torch.stack([r * t.cos(), r * t.sin()], dim=1)
    b = -a
    x = torch.cat([a, b]) + noise * torch.randn(2 * n_per_class, 2)
    y = torch.cat([torch.zeros(n_per_class), torch.ones(n_per_class)])
    return x, y


def init_layer(n_in, n_out):
    bound = 1.0 / math.sqrt(n_in)
    w = ((torch.rand(n_in, n_out) * 2 - 1) * bound).requires_grad_()
    b = ((torch.rand(n_out) * 2 - 1) * bound).requires_grad_()
    return w, b


def forward(params, x):
    (w1, b1), (w2, b2), (w3, b3) = params
    h = (x @ w1 + b1).tanh()
    h = (h @ w2 + b2).tanh()
    return (h @ w3 + b3).squeeze(1)


def bce_with_logits(logits, y):
    # log(1 + exp(-|z|)) + max(z, 0) - z*y, the numerically stable form
    return (logits.clamp(min=0) - logits * y + (1 + (-logits.abs()).exp()).log()).mean()


def main():
    torch.manual_seed(0)
    x, y = spirals(200)
    params = [init_layer(2, 32), init_layer(32, 32), init_layer(32, 1)]
    flat = [p for layer in params for p in layer]
    velocity = [torch.zeros_like(p) for p in flat]
    lr, momentum = 0.5, 0.9

    start = time.perf_counter()
    for step in range(1, 1501):
        loss = bce_with_logits(forward(params, x), y)
        for p in flat:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p, v in zip(flat, velocity):
                v.mul_(momentum).add_(p.grad)
                p.sub_(lr * v)
        if step % 250 == 0:
            with torch.no_grad():
                acc = ((forward(params, x) > 0).float() == y).float().mean()
            print(f"step {step:4d}  loss {loss.item():.4f}  accuracy {acc.item():.3f}")
    elapsed = time.perf_counter() - start
    print(f"trained in {elapsed:.2f} s ({elapsed / 1500 * 1e3:.2f} ms per step)")
    print("loss graph of one step:", loss.grad_fn)


if __name__ == "__main__":
    main()
