"""The training loops of the documents users read (/work/shared/seeds/*.txt), run on ferrograd.

Seed 000's three examples are stored verbatim; seed 001's training iteration and seed 004's
loop and evaluation appendix are the articles' lines, with the definitions the articles leave to
the reader (model, data, loss, optimizer) added around them.  Every added line ends with
``# (added)``; the loop body of seed 001 is indented into the added loops.  The data and
initial weights of the added parts are fixed (no random numbers), so ferrograd and PyTorch
start from equal states and must print the same numbers.

Each snippet runs in a fresh interpreter and its stdout must equal what PyTorch 2.13 printed
for the same code (``import torch`` in place of ``import ferrograd as torch``), stored below;
with torch installed, the two are also run side by side.
"""

import importlib.util
import re

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn as nn
from ferrograd.utils.data import DataLoader, TensorDataset
from test_seeds import mask_addresses, run_snippet

SEED000_EX1 = """\
import ferrograd as torch
import ferrograd.nn as nn

# Define a simple linear model
model = nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

# Input and target
x = torch.randn(1, 10)
y = torch.randn(1, 1)

# Forward pass
output = model(x)
loss = nn.MSELoss()(output, y)

# Zero gradients
optimizer.zero_grad()

# Backward pass
loss.backward()

# Update parameters
optimizer.step()
print(loss.grad_fn)  # (added)
print(model.weight.grad.shape, model.bias.grad.shape, model.weight.grad_fn)  # (added)
"""

SEED000_EX1_OUT = """\
<MseLossBackward0 object at 0x...>
torch.Size([1, 10]) torch.Size([1]) None
"""

SEED000_EX2 = """\
import ferrograd as torch
import ferrograd.nn as nn

model = nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(1, 10)
y = torch.randn(1, 1)

# Forward pass and loss calculation (same as Example 1)
output = model(x)
loss = nn.MSELoss()(output, y)

# Simulate accumulating gradients over two steps:
loss.backward()  #First Backpropagation
#Notice: optimizer.zero_grad() is absent here intentionally.
g1 = model.weight.grad.clone()  # (added)

#Second batch - simulating another forward pass
x2 = torch.randn(1, 10)
y2 = torch.randn(1, 1)
output2 = model(x2)
loss2 = nn.MSELoss()(output2, y2)
loss2.backward()

# Update parameters after accumulating gradients
optimizer.step()
g2 = 2 * (output2 - y2).detach() * x2  # (added) loss2's gradient, by hand
print(torch.allclose(model.weight.grad, g1 + g2))  # (added)
print(loss2.grad_fn.next_functions[0][0].name())  # (added)
"""

SEED000_EX2_OUT = """\
True
AddmmBackward0
"""

SEED000_EX3 = """\
import ferrograd as torch
import ferrograd.nn as nn

class CustomLoss(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, output, target):
        loss = torch.sum((output - target)**2) # Example custom loss
        return loss

model = nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(1, 10)
y = torch.randn(1, 1)

criterion = CustomLoss()
output = model(x)
loss = criterion(output, y)

optimizer.zero_grad()
loss.backward()
optimizer.step()
print(criterion, loss.grad_fn)  # (added)
print([type(p).__name__ for p in model.parameters()], loss.shape)  # (added)
"""

SEED000_EX3_OUT = """\
CustomLoss() <SumBackward0 object at 0x...>
['Parameter', 'Parameter'] torch.Size([])
"""

SEED001_TRAINING_ITERATION = """\
import ferrograd as torch
import ferrograd.nn as nn  # (added) the article's model, data and optimizer are left to the reader:
from ferrograd.utils.data import DataLoader, TensorDataset  # (added)
device = "cpu"  # (added)
X = torch.linspace(-1, 1, 64).reshape(32, 2)  # (added)
Y = (X[:, 0] * 3 > X[:, 1] + 0.5).long()  # (added)
model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 2))  # (added)
with torch.no_grad():  # (added) fixed weights, so both libraries start equal
    for i, p in enumerate(model.parameters()):  # (added)
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + 1))  # (added)
dataloader = DataLoader(TensorDataset(X, Y), batch_size=8)  # (added)
loss_fn = nn.CrossEntropyLoss()  # (added)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)  # (added)
for epoch in range(3):  # (added)
    for data_batch in dataloader:  # (added)
        # 1. Get data batch
        inputs, labels = data_batch
        inputs, labels = inputs.to(device), labels.to(device) # Move data to appropriate device
        # 2. Zero the gradients
        # IMPORTANT: Clear previous gradients before processing the new batch
        optimizer.zero_grad()
        # 3. Forward pass: Compute model predictions
        outputs = model(inputs)
        # 4. Calculate the loss
        loss = loss_fn(outputs, labels)
        # 5. Backward pass: Compute gradients
        loss.backward()
        # 6. Optimizer step: Update model weights
        optimizer.step()
        # ... (logging, evaluation, etc.)
    print(f"epoch {epoch}: loss {loss.item():.4f}")  # (added)
print(model(X[:4]))  # (added)
"""

SEED001_TRAINING_ITERATION_OUT = """\
epoch 0: loss 0.2996
epoch 1: loss 0.8112
epoch 2: loss 0.0131
tensor([[ 4.9976, -4.9991],
        [ 4.9958, -4.9963],
        [ 4.9934, -4.9922],
        [ 4.9903, -4.9862]], grad_fn=<AddmmBackward0>)
"""

SEED004_TRAINING_LOOP = """\
import ferrograd as torch
import ferrograd.nn as nn  # (added) model, data, criterion and optimizer for the article's loop:
model = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 1))  # (added)
with torch.no_grad():  # (added)
    for i, p in enumerate(model.parameters()):  # (added)
        p.copy_(torch.linspace(-0.4, 0.6, p.numel()).reshape(p.shape) / (i + 1))  # (added)
input = torch.linspace(-2, 2, 30).reshape(10, 3)  # (added)
target = input.sum(dim=1, keepdim=True) ** 2 / 10  # (added)
criterion = nn.MSELoss()  # (added)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)  # (added)
model[2].p = 0.0  # (added) no random dropout while training, so runs are comparable
epochs = 20  # (added)
for epoch in range(epochs):
    # 1. Clear the whiteboard (Reset Gradients)
    optimizer.zero_grad()

    # 2. Take the test (Forward pass)
    output = model(input)

    # 3. Grade the test (Compute Loss)
    loss = criterion(output, target)

    # 4. Find out why we failed (Backward pass)
    loss.backward()

    # 5. Study and improve (Update Parameters)
    optimizer.step()
print(f"final loss {loss.item():.4f}")  # (added)
model[2].p = 0.5  # (added)
data = input[:3]  # (added)
# 1. Change Model Behavior (Disable Dropout, etc.)
model.eval() 

# 2. Save Memory & Speed Up (Stop tracking operations)
with torch.no_grad():
    output = model(data)
print(output)  # (added)
print(output.requires_grad, output.grad_fn, model.training, model[2].training)  # (added)
"""

SEED004_TRAINING_LOOP_OUT = """\
final loss 0.9259
tensor([[0.7589],
        [0.6027],
        [0.4465]])
False None False False
"""

SNIPPETS = {
    "000_ex1": (SEED000_EX1, SEED000_EX1_OUT),
    "000_ex2": (SEED000_EX2, SEED000_EX2_OUT),
    "000_ex3": (SEED000_EX3, SEED000_EX3_OUT),
    "001_training_iteration": (SEED001_TRAINING_ITERATION, SEED001_TRAINING_ITERATION_OUT),
    "004_training_loop": (SEED004_TRAINING_LOOP, SEED004_TRAINING_LOOP_OUT),
}


def as_torch(code):
    return code.replace("import ferrograd as torch", "import torch").replace("ferrograd.", "torch.")


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_training_snippet_output(name, tmp_path):
    code, expected = SNIPPETS[name]
    proc = run_snippet(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert mask_addresses(proc.stdout) == expected
    assert proc.stderr == ""


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_training_snippet_matches_torch(name, tmp_path):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed")
    code, _ = SNIPPETS[name]
    ours = run_snippet(code, tmp_path)
    theirs = run_snippet(as_torch(code), tmp_path)
    assert theirs.returncode == 0, theirs.stderr
    assert ours.returncode == 0, ours.stderr
    assert mask_addresses(ours.stdout) == mask_addresses(theirs.stdout)


def test_snippet_lines_are_the_articles():
    """Apart from lines marked (added), every line of a snippet is in its article."""
    import pathlib

    seeds = pathlib.Path(__file__).resolve().parents[3] / "shared" / "seeds"
    if not seeds.is_dir():
        pytest.skip("the seed articles are not beside this checkout")
    text = {p.name[:3]: p.read_text() for p in seeds.glob("*.txt")}
    for name, (code, _) in SNIPPETS.items():
        article = text[name[:3]].replace("import torch.nn as nn", "import ferrograd.nn as nn")
        article = article.replace("import torch", "import ferrograd as torch")
        for line in code.splitlines():
            if "# (added)" in line or not line.strip():
                continue
            assert line.strip() in article, (name, line)


def _mlp():
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 3))
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.linspace(-0.3, 0.3, p.numel()).reshape(p.shape) * (i % 2 + 1))
    return model


def _data():
    x = torch.linspace(-2, 2, 64 * 8).reshape(64, 8).sin()
    y = (torch.arange(64) % 3).long()
    return TensorDataset(x, y)


def test_gradient_accumulation_of_4_micro_batches_equals_one_batch_of_64():
    """Seed 004: four micro-batches of 16, each loss divided by 4, accumulate the gradient of
    one batch of 64; the optimizer step then moves the weights identically."""
    loss_fn = nn.CrossEntropyLoss()
    results = []
    for batch_size, steps in ((64, 1), (16, 4)):
        model = _mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        opt.zero_grad()
        for x, y in DataLoader(_data(), batch_size=batch_size):
            (loss_fn(model(x), y) / steps).backward()
        grads = [p.grad.clone() for p in model.parameters()]
        opt.step()
        opt.zero_grad()
        assert all(p.grad is None for p in model.parameters())
        results.append((grads, [p.detach().clone() for p in model.parameters()]))
    (g64, p64), (g16, p16) = results
    for a, b in zip(g64 + p64, g16 + p16):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    # and the accumulated gradient is not just one micro-batch's
    assert not np.allclose(g16[0].numpy(), 0)


def test_without_zero_grad_gradients_keep_accumulating():
    model = _mlp()
    x, y = _data()[:16]
    loss_fn = nn.CrossEntropyLoss()
    loss_fn(model(x), y).backward()
    g1 = model[0].weight.grad.clone()
    loss_fn(model(x), y).backward()
    np.testing.assert_allclose(model[0].weight.grad.numpy(), 2 * g1.numpy(), rtol=1e-6)
    model.zero_grad()
    assert model[0].weight.grad is None


def test_eval_and_no_grad_are_independent():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    x = torch.ones(2, 4)
    model.eval()
    out = model(x)  # eval: deterministic, but a graph is still recorded
    assert out.requires_grad and out.grad_fn is not None
    assert torch.equal(out, model(x))
    with torch.no_grad():
        model.train()
        out = model(x)  # no_grad: no graph, but dropout is active
    assert not out.requires_grad and out.grad_fn is None
    assert model.training and model[1].training


def test_main_demo_trains_digits_to_95_percent(tmp_path):
    """The README's first command: examples/train_digits.py (needs the demo extras)."""
    for mod in ("sklearn", "tqdm", "matplotlib"):
        pytest.importorskip(mod)
    import os
    import subprocess
    import sys

    from test_seeds import child_env

    script = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "train_digits.py")
    proc = subprocess.run(
        [sys.executable, script, "--epochs", "15", "--out-dir", str(tmp_path)],
        capture_output=True, text=True, env=child_env(), timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    acc = float(re.search(r"test accuracy: ([\d.]+)%", proc.stdout).group(1))
    assert acc >= 95.0
    assert (tmp_path / "loss_curve.png").stat().st_size > 10_000
    state = torch.load(str(tmp_path / "digits_mlp.safetensors"))
    assert list(state) == ["1.weight", "1.bias", "4.weight", "4.bias", "6.weight", "6.bias"]
