"""CPU autocast: PyTorch's lower-precision ops compute in bfloat16/float16, its float32 ops
(the losses) in float32, through differentiable casts; the state is per thread and nests."""

import threading
import warnings

import numpy as np
import pytest

import ferrograd as T

F = T.nn.functional
X = np.linspace(-1, 1, 32).reshape(4, 8)
W = np.linspace(-0.5, 0.7, 64).reshape(8, 8)


def test_lower_precision_and_float32_ops():
    x, w = T.tensor(X, dtype=T.float32), T.tensor(W, dtype=T.float32)
    xb = x.bfloat16()
    with T.autocast("cpu", dtype=T.bfloat16):
        assert T.is_autocast_enabled("cpu") and T.get_autocast_dtype("cpu") is T.bfloat16
        assert F.linear(x, w).dtype is T.bfloat16 and (x @ w).dtype is T.bfloat16
        assert T.bmm(x.view(1, 4, 8), w.view(1, 8, 8)).dtype is T.bfloat16
        assert T.addmm(T.zeros(8), x, w).dtype is T.bfloat16
        assert F.conv2d(x.view(1, 1, 4, 8), w[:2, :2].reshape(1, 1, 2, 2)).dtype is T.bfloat16
        q = x.view(1, 1, 4, 8)
        assert F.scaled_dot_product_attention(q, q, q).dtype is T.bfloat16
        assert (x.double() @ w.double()).dtype is T.float64  # float64 is not eligible
        assert (x + 1).dtype is T.float32  # not on either list: runs as it is
        assert F.cross_entropy(xb, T.tensor([1, 2, 3, 0])).dtype is T.float32
        assert F.mse_loss(xb, xb).dtype is T.float32
        assert F.nll_loss(xb, T.tensor([1, 2, 3, 0])).dtype is T.float32
        assert F.layer_norm(xb, (8,)).dtype is T.bfloat16 and F.gelu(xb).dtype is T.bfloat16
        out, _ = T.nn.LSTM(8, 4)(x.view(4, 1, 8))
        assert out.dtype is T.bfloat16
    assert not T.is_autocast_enabled("cpu") and (x @ w).dtype is T.float32


def test_training_step_matches_pytorch_values():
    x = T.tensor(X, dtype=T.float32, requires_grad=True)
    lin = T.nn.Linear(8, 3)
    with T.no_grad():
        lin.weight.copy_(T.tensor(W[:3], dtype=T.float32))
        lin.bias.fill_(0.1)
    with T.autocast("cpu", dtype=T.bfloat16):
        out = lin(x)
        loss = F.cross_entropy(out, T.tensor([0, 1, 2, 0]))
    assert out.dtype is T.bfloat16 and loss.dtype is T.float32
    assert type(out.grad_fn).__name__ == "AddmmBackward0"
    loss.backward()
    assert lin.weight.grad.dtype is T.float32 and x.grad.dtype is T.float32
    # PyTorch 2.x's values on the same inputs
    assert round(loss.item(), 3) == 1.176
    assert np.allclose(lin.weight.grad[0].tolist(),
                       [-0.087, -0.097, -0.105, -0.116, -0.124, -0.134, -0.143, -0.152], atol=2e-3)


def test_nesting_disabling_decorator_and_threads():
    with T.autocast("cpu"):
        with T.autocast("cpu", enabled=False):
            assert not T.is_autocast_enabled()
        with T.autocast("cpu", dtype=T.float16):
            assert T.get_autocast_dtype("cpu") is T.float16
        assert T.get_autocast_dtype("cpu") is T.bfloat16
        seen = []
        t = threading.Thread(target=lambda: seen.append(T.is_autocast_enabled()))
        t.start()
        t.join()
        assert seen == [False]  # per thread, as in PyTorch

    @T.autocast("cpu")
    def f(a):
        return a @ a

    assert f(T.ones(2, 2)).dtype is T.bfloat16 and not T.is_autocast_enabled()


def test_unsupported_dtype_disables_with_pytorch_warning():
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported"):
        with T.autocast("cpu", dtype=T.float32):
            assert not T.is_autocast_enabled()
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        T.autocast("tpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with T.amp.autocast(device_type="cpu", enabled=False):
            pass
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        with T.cpu.amp.autocast():
            assert T.is_autocast_cpu_enabled() and T.get_autocast_cpu_dtype() is T.bfloat16


def test_matches_pytorch_dtypes():
    torch = pytest.importorskip("torch")

    def dtypes(lib):
        x, w = lib.tensor(X, dtype=lib.float32), lib.tensor(W, dtype=lib.float32)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            outs = [F_(lib).linear(x, w), x @ w, x + 1, lib.bmm(x.view(1, 4, 8), w.view(1, 8, 8)),
                    F_(lib).cross_entropy(x.bfloat16(), lib.tensor([1, 2, 3, 0])),
                    F_(lib).softmax(x.bfloat16(), -1), (x.double() @ w.double())]
        return [str(o.dtype) for o in outs]

    def F_(lib):
        return lib.nn.functional

    assert dtypes(T) == dtypes(torch)
