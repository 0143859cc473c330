"""Training loops that build graphs of their gradients (create_graph=True) keep their memory
flat: every graph of the backward is freed once it has been used."""

import os
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import ferrograd as torch
from ferrograd import _core, nn


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 1e6


def _gradient_penalty_step(model, opt, x):
    """WGAN-GP style: the loss contains the norm of the gradient of the output wrt the input."""
    x = x.detach().requires_grad_()
    out = model(x)
    (gx,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    loss = out.mean() + ((gx.norm(dim=1) - 1) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def test_gradient_penalty_loop_keeps_nodes_and_memory_flat():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    base = _core._live_nodes()
    counts, rss = [], []
    for i in range(2000):
        _gradient_penalty_step(model, opt, torch.randn(16, 32))
        if i % 250 == 249:
            counts.append(_core._live_nodes() - base)
            rss.append(_rss_mb())
    # the parameters' AccumulateGrad nodes at most; no graph survives an iteration
    assert max(counts) == counts[0] and counts[0] <= len(list(model.parameters()))
    assert rss[-1] - rss[0] < 20, rss


def test_backward_create_graph_loop_frees_graphs_when_grads_are_reset():
    # backward(create_graph=True) makes .grad carry a graph (PyTorch's documented reference
    # cycle); resetting .grad to None each step, as the warning advises, frees it
    w = torch.randn(64, 64, requires_grad=True)
    base = _core._live_nodes()
    counts = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for i in range(1500):
            x = torch.randn(8, 64)
            loss = (x @ w).tanh().pow(2).sum()
            loss.backward(create_graph=True)
            # Hessian-vector product through the graph of the gradient
            (hv,) = torch.autograd.grad((w.grad * w.grad).sum(), w)
            assert hv.shape == w.shape
            w.grad = None
            if i % 300 == 299:
                counts.append(_core._live_nodes() - base)
    # flat: only the last iteration's forward graph (mm, tanh, pow, sum, w's AccumulateGrad)
    assert max(counts) == counts[0] <= 5


def test_double_backward_values_are_right():
    # d/dx of (d/dx x^3) = 6x, through a graph built by create_graph
    x = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    assert h.tolist() == [6.0, -12.0, 3.0]
