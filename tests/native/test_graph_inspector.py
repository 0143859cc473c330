"""ferrograd.autograd.graph.describe / to_dot / saved_memory: the graph and the memory its saved
tensors hold (issue 5's inspector; PyTorch has no equivalent, so these are checked by hand)."""

import io
import re

import ferrograd as torch
import ferrograd.nn as nn
from ferrograd.autograd import graph


def print_graph(grad_fn, depth=0, out=None):
    # seed 004's function, verbatim apart from the output stream
    indent = '  ' * depth
    if grad_fn is None:
        return
    print(f"{indent}└─ {type(grad_fn).__name__}", file=out)
    for next_fn, _ in grad_fn.next_functions:
        print_graph(next_fn, depth + 1, out)


def seed_graph():
    x = torch.tensor([2.0], requires_grad=True)
    y = torch.tensor([3.0], requires_grad=True)
    z = x * y
    return z ** 2


def describe_text(t):
    out = io.StringIO()
    graph.describe(t, file=out)
    return out.getvalue()


def test_describe_is_print_graph_with_leaf_shapes():
    loss = seed_graph()
    ref = io.StringIO()
    print_graph(loss.grad_fn, out=ref)
    ours = describe_text(loss)
    assert re.sub(r" \(leaf: .*\)", "", ours) == ref.getvalue()
    assert ours.splitlines()[2:] == [
        "    └─ AccumulateGrad (leaf: shape [1], float32)",
        "    └─ AccumulateGrad (leaf: shape [1], float32)",
    ]


def test_describe_names_a_shared_node_once_and_handles_no_graph():
    a = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    b = a.exp()
    text = describe_text((b * b).sum())
    assert text.count("ExpBackward0") == 2 and text.count("(shown above)") == 1
    assert text.count("AccumulateGrad (leaf: shape [4, 3], float64)") == 1
    assert describe_text(a) == "no graph: a leaf of shape [4, 3]\n"
    assert describe_text(torch.ones(2)) == "no graph: a tensor that does not require grad of shape [2]\n"


def test_describe_and_to_dot_walk_a_deep_chain_iteratively():
    x = torch.ones(1, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y * 1.0
    assert describe_text(y).count("\n") == 20_001
    assert graph.to_dot(y).count("->") == 20_001  # 20,000 node edges + the output


def test_to_dot_edges_follow_the_forward_pass():
    loss = seed_graph()
    dot = graph.to_dot(loss)
    assert dot.startswith("digraph autograd {") and dot.rstrip().endswith("}")
    labels = dict(re.findall(r'  (n\d+) \[label="([^"\\]+)', dot))
    edges = re.findall(r"  (n\d+) -> (n\d+|out);", dot)
    named = [(labels[a], labels.get(b, b)) for a, b in edges]
    assert sorted(named) == sorted([
        ("MulBackward0", "PowBackward0"),
        ("AccumulateGrad", "MulBackward0"),
        ("AccumulateGrad", "MulBackward0"),
        ("PowBackward0", "out"),
    ])
    assert dot.count("[1] float32") == 3  # two leaves and the output


def test_saved_memory_before_and_after_backward():
    loss = seed_graph()
    before = graph.saved_memory(loss)
    assert before.total == 12  # Pow saves z (4 B), Mul saves x and y (8 B)
    assert sorted((n, b) for n, b, _ in before.nodes) == [("MulBackward0", 8), ("PowBackward0", 4)]
    loss.backward(retain_graph=True)
    assert graph.saved_memory(loss).total == 12  # retained
    loss.backward()
    after = graph.saved_memory(loss)
    assert after.total == 0 and all(freed for _, _, freed in after.nodes)
    assert "freed by backward" in repr(after)


def test_saved_memory_of_a_model_counts_each_storage_once():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(100, 50), nn.Tanh(), nn.Linear(50, 10))
    x = torch.randn(32, 100)
    loss = model(x).pow(2).mean()
    report = graph.saved_memory(loss)
    # at least the input, the tanh output and both weights are held, each once
    held = {32 * 100, 32 * 50, 50 * 100, 10 * 50}
    assert report.total >= 4 * sum(held)
    assert report.total <= sum(b for _, b, _ in report.nodes)
    loss.backward()
    assert graph.saved_memory(loss).total == 0


class MySquare(torch.autograd.Function):
    # seed 004's custom Function, verbatim
    @staticmethod
    def forward(ctx, input_tensor):
        ctx.save_for_backward(input_tensor)
        return input_tensor ** 2

    @staticmethod
    def backward(ctx, grad_output):
        input_tensor, = ctx.saved_tensors
        gradient = (2 * input_tensor) * grad_output
        return gradient


def test_inspector_on_seed_004_custom_function():
    x = torch.tensor([3.0], requires_grad=True)
    y = MySquare.apply(x)
    assert describe_text(y) == (
        "└─ MySquareBackward\n"
        "  └─ AccumulateGrad (leaf: shape [1], float32)\n"
    )
    # the 'ctx locker' holds x (4 bytes) until backward frees it
    before = graph.saved_memory(y)
    assert before.nodes == [("MySquareBackward", 4, False)] and before.total == 4
    assert repr(before) == "saved tensors: 4 B held by 1 node\n  MySquareBackward  4 B"
    y.backward()
    assert x.grad.item() == 6.0
    after = graph.saved_memory(y)
    assert after.nodes == [("MySquareBackward", 0, True)] and after.total == 0
    dot = graph.to_dot(y)
    assert 'label="MySquareBackward"' in dot and "n1 -> n0;" in dot
