"""examples/char_gpt.py (a small nanoGPT on bundled text): its main() in --quick mode, in-process."""

import importlib.util
import os
import warnings

import pytest

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "char_gpt.py")


def load_example(monkeypatch, backend=None):
    """Import examples/char_gpt.py as a module; backend="torch" makes it import PyTorch instead."""
    if backend is None:
        monkeypatch.delenv("FERROGRAD_EXAMPLE_BACKEND", raising=False)
    else:
        monkeypatch.setenv("FERROGRAD_EXAMPLE_BACKEND", backend)
    spec = importlib.util.spec_from_file_location(f"char_gpt_{backend or 'ferrograd'}", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_quick_run(result, max_new_tokens):
    history = result["history"]
    assert [step for step, _, _ in history] == [0, 10, 20, 30]
    (_, train0, val0), (_, train_end, val_end) = history[0], history[-1]
    assert 4.0 < train0 < 4.4 and 4.0 < val0 < 4.4  # about log(66): uniform over the vocabulary
    assert train_end < train0 - 0.7 and val_end < val0 - 0.7
    vocab = result["vocab"]
    assert len(vocab) == 66 and vocab == sorted(vocab)
    sample = result["sample"]
    assert isinstance(sample, str) and len(sample) == max_new_tokens
    assert set(sample) <= set(vocab)


def test_quick_run_learns_and_generates(monkeypatch, capsys):
    example = load_example(monkeypatch)
    assert example.torch.__name__ == "ferrograd"
    result = example.main(["--quick", "--seed", "0", "--max-new-tokens", "73"])
    check_quick_run(result, 73)
    out = capsys.readouterr().out
    assert "step 30: train loss" in out and "---------- sample ----------" in out


def test_compile_flag_calls_torch_compile(monkeypatch):
    example = load_example(monkeypatch)
    compiled = []
    identity = example.torch.compile  # ferrograd's: returns the model (and warns once per process)
    monkeypatch.setattr(example.torch, "compile", lambda model: compiled.append(model) or identity(model))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = example.main(["--quick", "--steps", "3", "--compile", "--max-new-tokens", "5"])
    assert len(compiled) == 1 and isinstance(compiled[0], example.GPT)
    assert [step for step, _, _ in result["history"]] == [0, 3]
    assert len(result["sample"]) == 5


def test_only_cpu_is_accepted(monkeypatch, capsys):
    example = load_example(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        example.main(["--quick", "--device", "cuda"])
    assert exc.value.code == 2
    assert "invalid choice: 'cuda'" in capsys.readouterr().err


def test_weight_tying_and_decay_groups(monkeypatch):
    example = load_example(monkeypatch)
    config = example.GPTConfig(block_size=8, vocab_size=11, n_layer=2, n_head=2, n_embd=16)
    model = example.GPT(config)
    assert model.lm_head.weight is model.transformer.wte.weight
    names = [name for name, _ in model.named_parameters()]
    assert "transformer.wte.weight" in names and "lm_head.weight" not in names  # shared: listed once
    optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99), device_type="cpu")
    decay, no_decay = optimizer.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() == 2 for p in decay["params"]) and all(p.dim() == 1 for p in no_decay["params"])
    assert len(decay["params"]) + len(no_decay["params"]) == len(names)
    assert example.get_lr(0, 1.0, 0.1, 10, 100) == pytest.approx(1 / 11)
    assert example.get_lr(10, 1.0, 0.1, 10, 100) == pytest.approx(1.0)
    assert example.get_lr(55, 1.0, 0.1, 10, 100) == pytest.approx(0.55)
    assert example.get_lr(100, 1.0, 0.1, 10, 100) == pytest.approx(0.1)


def test_the_same_script_runs_on_pytorch(monkeypatch):
    torch = pytest.importorskip("torch")
    example = load_example(monkeypatch, backend="torch")
    assert example.torch is torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the 2 cores are shared: PyTorch's OpenMP threads spin when they are busy
    try:
        result = example.main(["--quick", "--seed", "0", "--max-new-tokens", "40"])
    finally:
        torch.set_num_threads(threads)
    check_quick_run(result, 40)
