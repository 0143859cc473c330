"""The code snippets from the documents users read (/work/shared/seeds/*.txt).

Each snippet is stored verbatim, except that ``import torch`` is replaced by
``import ferrograd as torch``.  Two lines that the articles describe but leave
out of their code are added, each marked with ``# (added)`` in the notes below:

* seed 003, MAE example: ``loss.backward()`` under "# Perform backpropagation".
* seed 003, random-input example: ``loss.backward()`` under "# Backpropagate to
  compute gradients" and ``print(params.grad.shape)`` under "# Check the
  gradients for params", so that the gradient shape can be checked.

Every snippet runs in a fresh interpreter (``sys.executable -c``) in a temporary
directory, and its stdout must equal what PyTorch 2.x prints.  The expected
outputs below were produced by running the original snippets under PyTorch
2.13 (CPU).  Object addresses (``0x7f...``) are masked before comparing.
"""

import importlib.util
import os
import re
import subprocess
import sys

import pytest

NON_LEAF_GRAD_WARNING = (
    "UserWarning: The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"
)

# --- seed 001: gradient accumulation -------------------------------------------

SEED001_ACCUMULATION = """\
import ferrograd as torch
# Create a tensor that requires gradients
x = torch.tensor([2.0], requires_grad=True)
# Perform some operations
y = x * x
z = y * 3 # z = 3 * x^2
# First backward pass
# dz/dx = 6*x = 6*2 = 12
z.backward(retain_graph=True) # retain_graph=True allows subsequent backward calls
print(f"After first backward pass, x.grad: {x.grad}")
# Perform another operation (can be the same or different)
# For simplicity, let's use the same z again for demonstration
# Note: In a real scenario, you'd likely compute a new loss
# based on a new input or different part of the model.
z.backward() # Second backward pass
# We expect the new gradient (12) to be added to the existing one (12)
print(f"After second backward pass, x.grad: {x.grad}")
# Manually zero the gradient
x.grad.zero_()
print(f"After zeroing, x.grad: {x.grad}")
"""

SEED001_ACCUMULATION_OUT = """\
After first backward pass, x.grad: tensor([12.])
After second backward pass, x.grad: tensor([24.])
After zeroing, x.grad: tensor([0.])
"""

# --- seed 002: grad_fn names, non-leaf .grad, diamond graph --------------------

SEED002_GRAD_FN = """\
import ferrograd as torch

x = torch.tensor([2.0], requires_grad=True)
y = x * x
z = y + 3

print(y.grad_fn)
print(z.grad_fn)
"""

SEED002_GRAD_FN_OUT = """\
<MulBackward0 object at 0x...>
<AddBackward0 object at 0x...>
"""

SEED002_NON_LEAF_GRAD = """\
import ferrograd as torch

x = torch.tensor([2.0], requires_grad=True)
y = x * x
z = y + 3
z.backward()

print(x.grad)
print(y.grad)
"""

SEED002_NON_LEAF_GRAD_OUT = """\
tensor([4.])
None
"""

SEED002_DIAMOND = """\
import ferrograd as torch

x = torch.tensor([2.0], requires_grad=True)
y = x * x
a = y + 1
b = y * 2
c = a + b
c.backward()

print(x.grad)
"""

SEED002_DIAMOND_OUT = """\
tensor([12.])
"""

# --- seed 003: MAE loss ---------------------------------------------------------

# The first example, with random inputs.  (added): loss.backward() and the print
# of the gradient's shape.  Note the trailing space after "def calc_preds(params,
# inputs):", which is in the article.
SEED003_RANDOM = """\
import ferrograd as torch

# Function to calculate predictions
def calc_preds(params, inputs): 
    return (inputs * params).sum(axis=1)

# Function to calculate the Mean Absolute Error (MAE)
def calc_loss(params, inputs, targets): 
    return torch.abs(calc_preds(params, inputs) - targets).mean()

# Sample data (features and target)
inputs = torch.rand(1000, 10)  # Input features
targets = torch.rand(1000)     # Target variable

# Model parameters initialized randomly
params = torch.rand(10, requires_grad=True)

# Calculate the loss
loss = calc_loss(params, inputs, targets)

# Backpropagate to compute gradients
loss.backward()

# Check the gradients for params
print(params.grad.shape)
"""

SEED003_RANDOM_OUT = """\
torch.Size([10])
"""

# The worked example with coeffs [0.5, 0.5].  (added): loss.backward().
SEED003_MAE = """\
import ferrograd as torch

# Example data
t_indep = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=False)
t_dep = torch.tensor([5.0, 6.0], requires_grad=False)
coeffs = torch.tensor([0.5, 0.5], requires_grad=True)

# Define prediction and loss functions
def calc_preds(coeffs, indeps):
    return (indeps * coeffs).sum(axis=1)

def calc_loss(coeffs, indeps, deps):
    preds = calc_preds(coeffs, indeps)
    return torch.abs(preds - deps).mean()

# Calculate the loss
loss = calc_loss(coeffs, t_indep, t_dep)
print("Loss:", loss.item())

# Perform backpropagation
loss.backward()

# Access the gradients
print("Coefficients:", coeffs)
print("Gradients:", coeffs.grad)
"""

SEED003_MAE_OUT = """\
Loss: 3.0
Coefficients: tensor([0.5000, 0.5000], requires_grad=True)
Gradients: tensor([-2., -3.])
"""

# --- seed 004: graph walking and a custom Function -----------------------------

# Builds the graph and prints nothing.
SEED004_GRAPH = """\
import ferrograd as torch

x = torch.tensor([2.0], requires_grad=True)
y = torch.tensor([3.0], requires_grad=True)

z = x * y
loss = z ** 2
"""

SEED004_GRAPH_OUT = ""

SEED004_PRINT_GRAPH = """\
import ferrograd as torch

x = torch.tensor([2.0], requires_grad=True)
y = torch.tensor([3.0], requires_grad=True)

z = x * y
loss = z ** 2

def print_graph(grad_fn, depth=0):
    indent = '  ' * depth

    if grad_fn is None:
        return

    print(f"{indent}└─ {type(grad_fn).__name__}")

    for next_fn, _ in grad_fn.next_functions:
        print_graph(next_fn, depth + 1)

print("\\n=== Autograd Graph Structure ===")
print_graph(loss.grad_fn)
"""

SEED004_PRINT_GRAPH_OUT = """\

=== Autograd Graph Structure ===
└─ PowBackward0
  └─ MulBackward0
    └─ AccumulateGrad
    └─ AccumulateGrad
"""

# Note the trailing spaces after "ctx.save_for_backward(input_tensor)" and
# "y = MySquare.apply(x)", which are in the article.
SEED004_MY_SQUARE = """\
import ferrograd as torch

class MySquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_tensor):
        # 1. Forward Pass
        # Save input to the 'ctx locker' for later use
        ctx.save_for_backward(input_tensor) 
        return input_tensor ** 2

    @staticmethod
    def backward(ctx, grad_output):
        # 2. Backward Pass
        # Open 'ctx locker' and retrieve the saved input
        input_tensor, = ctx.saved_tensors

        # Calculate Gradient: 2x * (incoming gradient)
        gradient = (2 * input_tensor) * grad_output

        # Pass this gradient down the line
        return gradient


x = torch.tensor([3.0], requires_grad=True)

# Run Forward
y = MySquare.apply(x) 

print(f"Forward result (3^2): {y.item()}")  # 9.0

# Run Backward
# y.backward() is implicitly y.backward(torch.tensor(1.0))
y.backward()

# Check the calculated gradient
# Logic: (2 * 3.0) * 1 = 6.0
print(f"Backward result (2*3): {x.grad.item()}")  # 6.0
"""

SEED004_MY_SQUARE_OUT = """\
Forward result (3^2): 9.0
Backward result (2*3): 6.0
"""

# name -> (code, expected stdout, expects the non-leaf .grad UserWarning)
SNIPPETS = {
    "001_accumulation": (SEED001_ACCUMULATION, SEED001_ACCUMULATION_OUT, False),
    "002_grad_fn": (SEED002_GRAD_FN, SEED002_GRAD_FN_OUT, False),
    "002_non_leaf_grad": (SEED002_NON_LEAF_GRAD, SEED002_NON_LEAF_GRAD_OUT, True),
    "002_diamond": (SEED002_DIAMOND, SEED002_DIAMOND_OUT, False),
    "003_random_inputs": (SEED003_RANDOM, SEED003_RANDOM_OUT, False),
    "003_mae": (SEED003_MAE, SEED003_MAE_OUT, False),
    "004_graph": (SEED004_GRAPH, SEED004_GRAPH_OUT, False),
    "004_print_graph": (SEED004_PRINT_GRAPH, SEED004_PRINT_GRAPH_OUT, False),
    "004_my_square": (SEED004_MY_SQUARE, SEED004_MY_SQUARE_OUT, False),
}

FERROGRAD_IMPORT = "import ferrograd as torch\n"


def mask_addresses(text):
    return re.sub(r"0x[0-9a-fA-F]+", "0x...", text)


def child_env():
    """Environment for the child interpreter: it must find the same ferrograd
    as this process, even though it runs in a temporary directory."""
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"  # the graph snippet prints box-drawing characters
    paths = []
    spec = importlib.util.find_spec("ferrograd")
    if spec is not None:
        if spec.submodule_search_locations:
            location = list(spec.submodule_search_locations)[0]
        else:
            location = spec.origin
        paths.append(os.path.dirname(os.path.abspath(location)))
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def run_snippet(code, cwd):
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=child_env(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )
    return proc


def as_torch(code):
    assert code.startswith(FERROGRAD_IMPORT)
    return "import torch\n" + code[len(FERROGRAD_IMPORT):]


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet_output(name, tmp_path):
    code, expected, warns = SNIPPETS[name]
    proc = run_snippet(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert mask_addresses(proc.stdout) == expected
    if warns:
        # The warning is attributed to the user's line, `print(y.grad)`.
        assert "<string>:9: " + NON_LEAF_GRAD_WARNING in proc.stderr, proc.stderr
    else:
        assert proc.stderr == ""


def test_snippets_start_with_ferrograd_import():
    for code, _, _ in SNIPPETS.values():
        assert code.startswith(FERROGRAD_IMPORT)
        assert "import torch" not in code[len(FERROGRAD_IMPORT):]


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet_matches_torch(name, tmp_path):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed")
    code, _, warns = SNIPPETS[name]
    ours = run_snippet(code, tmp_path)
    theirs = run_snippet(as_torch(code), tmp_path)
    assert theirs.returncode == 0, theirs.stderr
    assert ours.returncode == 0, ours.stderr
    assert mask_addresses(ours.stdout) == mask_addresses(theirs.stdout)
    assert (NON_LEAF_GRAD_WARNING in ours.stderr) == (NON_LEAF_GRAD_WARNING in theirs.stderr)
    assert (NON_LEAF_GRAD_WARNING in theirs.stderr) == warns
