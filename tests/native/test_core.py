"""The native core: memory, corner cases, sharing with numpy, views and in-place semantics."""

import gc
import threading

import numpy as np
import pytest

import ferrograd as torch
from ferrograd import _core


def test_graph_memory_stays_flat_over_many_iterations():
    w = torch.randn(16, 16, requires_grad=True)
    base = _core._live_nodes()
    counts = []
    for i in range(3000):
        x = torch.randn(8, 16)
        loss = ((x @ w).tanh() * x).sum()
        loss.backward()
        if i % 500 == 0:
            counts.append(_core._live_nodes() - base)
    # one graph at a time is alive (the last loss), never an accumulation
    assert max(counts) <= counts[0] + 1
    del loss, x
    gc.collect()
    assert _core._live_nodes() - base <= 1  # w's AccumulateGrad may be cached while w lives


def test_graph_freed_when_outputs_are_dropped_without_backward():
    x = torch.randn(4, requires_grad=True)
    base = _core._live_nodes()
    ys = [(x * i).exp().sum() for i in range(100)]
    assert _core._live_nodes() - base >= 300
    del ys
    assert _core._live_nodes() - base <= 1


def test_deep_chain_frees_iteratively():
    x = torch.ones(1, requires_grad=True)
    y = x
    for _ in range(200_000):
        y = y * 1.0
    del y  # freeing 200k nodes must not recurse
    gc.collect()
    y = x
    for _ in range(100_000):
        y = y + 0.0
    y.sum().backward()
    assert x.grad.tolist() == [1.0]


@pytest.mark.parametrize("shape", [(2**62,), (2**40, 2**40), (2**31, 2**31, 4)])
def test_absurd_sizes_raise_instead_of_aborting(shape):
    with pytest.raises((RuntimeError, MemoryError)):
        torch.zeros(*shape)


def test_int64_corner_cases_do_not_trap():
    m = torch.tensor([-(2**63)])
    assert (m // -1).tolist() == [-(2**63)]
    assert (m % -1).tolist() == [0]
    assert (-m).tolist() == [-(2**63)]
    assert (m * -1).tolist() == [-(2**63)]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.tensor([5]) // torch.tensor([0])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.tensor([5]) % 0


def test_from_numpy_and_numpy_share_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = torch.from_numpy(a)
    a[0, 0] = 100
    assert t[0, 0].item() == 100
    t[1, 1] = -5
    assert a[1, 1] == -5
    n = t.numpy()
    n[0, 1] = 7
    assert t[0, 1].item() == 7
    assert np.shares_memory(n, a)
    # strided arrays are viewed, not copied
    tt = torch.from_numpy(a.T)
    assert tt.shape == (3, 2) and not tt.is_contiguous()
    a[1, 0] = 42
    assert tt[0, 1].item() == 42


def test_numpy_of_tensor_requiring_grad_raises():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_numpy_round_trip_keeps_dtype(dtype):
    a = (np.arange(5) % 2).astype(dtype)
    t = torch.from_numpy(a)
    assert str(t.dtype) == f"torch.{dtype}"
    assert t.numpy().dtype == a.dtype
    assert torch.tensor(a).numpy().tolist() == a.tolist()


def test_views_share_storage_and_version():
    x = torch.zeros(3, 4)
    v = x[1]
    t = x.t()
    d = x.detach()
    v.fill_(1.0)
    assert x.sum().item() == 4
    assert x._version == v._version == t._version == d._version == 1
    assert x.data._version == 0  # .data has its own counter, as in PyTorch


def test_views_do_not_copy():
    x = torch.arange(24.0)
    for view in [x.view(2, 12), x.reshape(4, 6).t(), x.view(2, 3, 4).permute(2, 0, 1),
                 x.unsqueeze(0), x.view(1, 24).squeeze(), x.view(4, 6)[:, ::2],
                 x.narrow(0, 3, 5), x.view(1, 24).expand(3, 24), x.view(4, 6).mT]:
        assert view._storage_ptr() == x._storage_ptr()
    c = x.view(4, 6).t()
    assert c.contiguous()._storage_ptr() != x._storage_ptr()
    y = x.view(4, 6)
    assert y.contiguous() is y


def test_setitem_records_copyslices():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    v = torch.tensor(10.0, requires_grad=True)
    y[1] = v * 3
    assert type(y.grad_fn).__name__ == "CopySlices"
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 2.0]
    assert v.grad.item() == 3.0


def test_inplace_on_non_leaf_rebases_history():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.mul_(x)
    assert type(y.grad_fn).__name__ == "MulBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_backward_releases_the_gil():
    a = torch.randn(384, 384, requires_grad=True)
    y = a
    for _ in range(12):
        y = y @ a
    loss = y.tanh().sum()
    ticks = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks.append(1)

    th = threading.Thread(target=spin)
    th.start()
    before = len(ticks)
    loss.backward()
    during = len(ticks) - before
    stop.set()
    th.join()
    assert during > 0


def test_errors_are_python_exceptions_with_shapes():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        torch.ones(2, 3) @ torch.ones(4, 5)
    with pytest.raises(RuntimeError, match="size of tensor a \\(3\\) must match the size of tensor b \\(4\\)"):
        torch.ones(3) + torch.ones(4)
    with pytest.raises(IndexError):
        torch.ones(3)[3]
    with pytest.raises(IndexError):
        torch.ones(3).sum(2)
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        torch.ones(3, dtype=torch.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        torch.ones(3, dtype=torch.int64).mean()
    with pytest.raises(NotImplementedError, match="bitwise_and_cpu"):
        torch.ones(2) & torch.ones(2)


def test_printing_goes_through_pytorch_format():
    assert repr(torch.tensor([12.0])) == "tensor([12.])"
    x = torch.tensor([0.5, 0.5], requires_grad=True)
    assert repr(x) == "tensor([0.5000, 0.5000], requires_grad=True)"
    assert repr((x * 3).sum()) == "tensor(3., grad_fn=<SumBackward0>)"
    assert str(torch.ones(2).shape) == "torch.Size([2])"


def test_resident_memory_stays_flat():
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 1e6

    w = torch.randn(64, 64, requires_grad=True)
    for i in range(3000):
        x = torch.randn(32, 64)
        y = Square.apply(x @ w)
        loss = y.softmax(1)[:, :10].sum() + y.norm()
        loss.backward()
        if i == 500:
            start = rss_mb()
    assert rss_mb() - start < 20


def test_max_with_dim_prints_as_pytorch_return_type():
    r = torch.tensor([[1.0, 3.0], [4.0, 2.0]]).max(dim=1)
    assert repr(r) == (
        "torch.return_types.max(\nvalues=tensor([3., 4.]),\nindices=tensor([1, 0]))"
    )
    values, indices = r
    assert values.tolist() == [3.0, 4.0] and r.indices.tolist() == [1, 0]

