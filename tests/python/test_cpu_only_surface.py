"""What scripts written for GPUs ask before they train (issue 13): torch.cuda, torch.backends,
torch.accelerator, torch.amp, torch.onnx, torch.compile and is_complex answer as a CPU-only
PyTorch does, so the scripts take their CPU branch."""

import warnings

import pytest

import ferrograd as T


def _surface(lib):
    out = [lib.cuda.is_available(), lib.cuda.device_count(), lib.cuda.manual_seed(1),
           lib.cuda.manual_seed_all(1), lib.accelerator.is_available(),
           lib.accelerator.current_accelerator(), lib.backends.mps.is_available(),
           lib.backends.cuda.matmul.allow_tf32, lib.backends.cudnn.allow_tf32,
           lib.backends.cudnn.benchmark, lib.backends.cudnn.deterministic,
           lib.is_complex(lib.zeros(2))]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        scaler = lib.amp.GradScaler("cuda")  # asked for, but there is no CUDA
        with lib.amp.autocast(device_type="cuda", dtype=lib.float32):
            pass
    out += [scaler.is_enabled(), scaler.get_scale(), scaler.state_dict(), len(w),
            [str(x.message) for x in w]]
    return out


def test_cpu_only_answers():
    s = _surface(T)
    assert s[:12] == [False, 0, None, None, False, None, False, False, True, False, False, False]
    assert s[12:16] == [False, 1.0, {}, 2]


def test_cpu_only_answers_match_torch():
    torch = pytest.importorskip("torch")
    assert _surface(T) == _surface(torch)


def test_backend_flags_are_settable():
    old = T.backends.cuda.matmul.allow_tf32
    try:
        T.backends.cuda.matmul.allow_tf32 = True
        T.backends.cudnn.benchmark = True
        assert T.backends.cuda.matmul.allow_tf32 and T.backends.cudnn.benchmark
    finally:
        T.backends.cuda.matmul.allow_tf32 = old
        T.backends.cudnn.benchmark = False


def test_disabled_grad_scaler_is_the_identity():
    model = T.nn.Linear(3, 1)
    opt = T.optim.SGD(model.parameters(), lr=0.1)
    scaler = T.amp.GradScaler(enabled=False)
    x = T.ones(4, 3)
    loss = model(x).sum()
    assert scaler.scale(loss) is loss
    scaler.scale(loss).backward()
    before = model.weight.detach().clone()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert T.allclose(model.weight.detach(), before - 0.1 * 4)


def test_onnx_says_what_is_missing():
    with pytest.raises(NotImplementedError, match="onnx"):
        T.onnx.export(T.nn.Linear(1, 1), T.zeros(1), "model.onnx")


def test_compile_is_an_identity_that_warns_once(monkeypatch):
    monkeypatch.setattr(T._functions, "_compile_warned", False)
    model = T.nn.Linear(2, 2)
    with pytest.warns(UserWarning, match="torch.compile"):
        assert T.compile(model) is model
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert T.compile(mode="max-autotune")(model) is model
