"""Autograd rules that ferrograd must share with PyTorch 2.x.

One test (or parametrized family) per rule.  Error types and texts are PyTorch's
own: every string below was checked against PyTorch 2.13 (CPU).  See
/work/shared/reference/pytorch-autograd.md for where they come from; where that
document and PyTorch 2.13 disagree, this file follows PyTorch 2.13.
"""

import importlib.util
import os
import re
import subprocess
import sys
import threading
import time
import warnings

import pytest

import ferrograd as torch

# --- exact PyTorch texts ---------------------------------------------------------

BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the "
    "graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)

NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
    "Its .grad attribute won't be populated during autograd.backward(). If you indeed "
    "want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on "
    "the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you "
    "access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for "
    "more information."
)

INPLACE_PREFIX = (
    "one of the variables needed for gradient computation has been modified by an "
    "inplace operation: "
)

# PyTorch 2.13's hint (older versions end with "set_detect_anomaly(True).").
INPLACE_HINT = (
    " Hint: enable anomaly detection to find the operation that failed to compute "
    "its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
)

LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_INPLACE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)

NON_LEAF_REQUIRES_GRAD = "you can only change requires_grad flags of leaf variables."
NON_LEAF_REQUIRES_GRAD_FALSE = (
    "you can only change requires_grad flags of leaf variables. If you want to use a "
    "computed variable in a subgraph that doesn't require differentiation use "
    "var_no_grad = var.detach()."
)

DETACH_VIEW_INPLACE = (
    "Can't detach views in-place. Use detach() instead. If you are using "
    "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
    "as True, gradients are views of DDP buckets, and hence detach_() cannot be called "
    "on these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
    "function in torch/optim/optimizer.py as the solution."
)


def inplace_error(tensor_type, sizes, node=None, version=1):
    text = INPLACE_PREFIX + f"[{tensor_type} [{sizes}]]"
    if node is not None:
        text += f", which is output 0 of {node},"
    return text + f" is at version {version}; expected version 0 instead." + INPLACE_HINT


def raises_exactly(exc_type, text):
    """pytest.raises that requires the whole message to equal ``text``."""
    return pytest.raises(exc_type, match="^" + re.escape(text) + r"\Z")


def leaf(values, dtype=None):
    if dtype is None:
        return torch.tensor(values, requires_grad=True)
    return torch.tensor(values, dtype=dtype, requires_grad=True)


def child_env():
    """Environment for a child interpreter that must import the same ferrograd."""
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = "1"
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


# --- backward entry points -------------------------------------------------------


def test_implicit_gradient_only_for_scalar_outputs():
    x = leaf([1.0, 2.0, 3.0])
    with raises_exactly(RuntimeError, "grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    # A one-element tensor that is not 0-d is fine.
    (x[:1] * 2).backward()
    assert x.grad.tolist() == [2.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "out_shape, grad_shape, message",
    [
        ((3,), (2,), "Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) "
                     "and output[0] has a shape of torch.Size([3])."),
        ((3,), (2, 3), "Mismatch in shape: grad_output[0] has a shape of torch.Size([2, 3]) "
                       "and output[0] has a shape of torch.Size([3])."),
        ((), (3,), "Mismatch in shape: grad_output[0] has a shape of torch.Size([3]) "
                   "and output[0] has a shape of torch.Size([])."),
    ],
)
def test_gradient_shape_mismatch(out_shape, grad_shape, message):
    x = torch.ones(out_shape, requires_grad=True)
    with raises_exactly(RuntimeError, message):
        (x * 2).backward(torch.ones(grad_shape))


def test_explicit_gradient_for_non_scalar_output():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).backward(torch.tensor([1.0, 10.0, 100.0]))
    assert x.grad.tolist() == [2.0, 40.0, 600.0]


def test_grad_accumulates_across_backward_calls():
    x = leaf([1.0, 2.0, 3.0])
    assert x.grad is None
    for _ in range(3):
        (x * x).sum().backward()
    assert x.grad.tolist() == [6.0, 12.0, 18.0]
    (x * 5).sum().backward()
    assert x.grad.tolist() == [11.0, 17.0, 23.0]
    x.grad = None
    (x * 5).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0, 5.0]


def test_backward_on_a_leaf():
    z = torch.tensor(3.0, requires_grad=True)
    z.backward()
    assert z.grad.item() == 1.0
    z.backward(torch.tensor(2.0))
    assert z.grad.item() == 3.0


def test_saved_tensors_are_freed_after_backward():
    x = leaf([1.0, 2.0, 3.0])
    y = (x * x).sum()  # MulBackward0 saves both inputs
    y.backward()
    with raises_exactly(RuntimeError, BACKWARD_TWICE):
        y.backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_backward_twice_without_saved_tensors_works():
    # AddBackward0 and SumBackward0 save only sizes and scalars.
    x = leaf([1.0, 2.0, 3.0])
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_retain_graph_allows_second_backward():
    x = leaf([1.0, 2.0, 3.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [6.0, 12.0, 18.0]
    with raises_exactly(RuntimeError, BACKWARD_TWICE):
        y.backward()


def test_backward_without_grad_fn_raises():
    with raises_exactly(
        RuntimeError, "element 0 of tensors does not require grad and does not have a grad_fn"
    ):
        torch.ones(3).sum().backward()
    x = leaf([1.0, 2.0])
    with torch.no_grad():
        y = (x * 2).sum()
    with raises_exactly(
        RuntimeError, "element 0 of tensors does not require grad and does not have a grad_fn"
    ):
        y.backward()
    # The index is that of the offending root.
    with raises_exactly(
        RuntimeError, "element 1 of tensors does not require grad and does not have a grad_fn"
    ):
        torch.autograd.backward([x.sum(), torch.ones(3).sum()])


def test_backward_with_empty_inputs_raises():
    x = leaf([1.0, 2.0])
    with raises_exactly(RuntimeError, "`inputs` argument to `backward()` cannot be empty."):
        (x * 2).sum().backward(inputs=[])


# --- .grad of non-leaves, retain_grad -----------------------------------------------


def test_retain_grad_populates_non_leaf_grad():
    x = leaf([1.0, 2.0])
    a = x * 2
    assert a.retains_grad is False
    a.retain_grad()
    assert a.retains_grad is True
    (a * a).sum().backward()
    assert a.grad.tolist() == [4.0, 8.0]
    assert x.grad.tolist() == [8.0, 16.0]
    # retain_grad is a no-op on a leaf.
    x.retain_grad()
    assert x.retains_grad is False


def test_non_leaf_grad_is_none_with_user_warning():
    x = leaf([2.0])
    y = x * x
    (y + 3).backward()
    with pytest.warns(UserWarning) as record:
        assert y.grad is None
    assert any(NON_LEAF_GRAD_WARNING in str(w.message) for w in record)
    # A leaf's .grad does not warn.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad.tolist() == [4.0]
        assert torch.ones(2).grad is None


def test_retain_grad_without_requires_grad_raises():
    with raises_exactly(RuntimeError, "can't retain_grad on Tensor that has requires_grad=False"):
        torch.ones(3).retain_grad()


# --- in-place operations and the version counter ------------------------------------


def test_inplace_on_saved_output_raises():
    # ExpBackward0 saves its own output; the message names the node with
    # "Backward0" dropped.
    a = torch.rand(3, 4, requires_grad=True)
    b = a.exp()
    b.add_(1)
    with raises_exactly(RuntimeError, inplace_error("torch.FloatTensor", "3, 4", "Exp")):
        b.sum().backward()


def test_inplace_on_saved_float64_tensor_raises():
    a = torch.rand(3, 4, dtype=torch.float64, requires_grad=True)
    b = a.exp()
    b.mul_(2)
    with raises_exactly(RuntimeError, inplace_error("torch.DoubleTensor", "3, 4", "Exp")):
        b.sum().backward()


def test_inplace_on_saved_input_names_its_current_grad_fn():
    # b was saved by SinBackward0; after b.add_(1), b's grad_fn is AddBackward0.
    a = torch.rand(3, 4, requires_grad=True)
    b = a.exp()
    c = b.sin()
    b.add_(1)
    assert type(b.grad_fn).__name__ == "AddBackward0"
    with raises_exactly(RuntimeError, inplace_error("torch.FloatTensor", "3, 4", "Add")):
        c.sum().backward()


def test_inplace_via_detach_is_detected():
    # detach() shares the version counter; SumBackward1 is reported as "Sum1".
    a = torch.rand(3, 4, requires_grad=True)
    b = a.sum(0)
    c = b * b
    b.detach().add_(1)
    assert b._version == 1
    with raises_exactly(RuntimeError, inplace_error("torch.FloatTensor", "4", "Sum1")):
        c.sum().backward()


def test_inplace_on_saved_leaf_raises():
    # A leaf has no grad_fn, so there is no ", which is output 0 of ..." part.
    a = torch.rand(3, 4, requires_grad=True)
    c = a.sin()
    with torch.no_grad():
        a.add_(1)
    with raises_exactly(RuntimeError, inplace_error("torch.FloatTensor", "3, 4")):
        c.sum().backward()


def test_inplace_on_saved_constant_raises():
    a = torch.rand(3, 4, requires_grad=True)
    w = torch.rand(3, 4)
    c = a * w
    w.add_(1)
    with raises_exactly(RuntimeError, inplace_error("torch.FloatTensor", "3, 4")):
        c.sum().backward()


def test_inplace_error_reports_version():
    a = torch.rand(2, 3, requires_grad=True)
    b = a.exp()
    c = b.sin()
    b.add_(1)
    b.add_(1)
    assert b._version == 2
    with raises_exactly(RuntimeError, inplace_error("torch.FloatTensor", "2, 3", "Add", version=2)):
        c.sum().backward()


def test_inplace_on_saved_zero_dim_tensor_raises():
    a = torch.rand((), requires_grad=True)
    b = a.exp()
    b.add_(1)
    with raises_exactly(RuntimeError, inplace_error("torch.FloatTensor", "", "Exp")):
        b.backward()


def test_inplace_via_data_is_not_detected():
    a = torch.rand(4, 3, requires_grad=True)
    c = a * a
    a.data.add_(1)
    c.sum().backward()
    assert a.grad.shape == (4, 3)


def test_inplace_on_unsaved_tensor_is_fine():
    a = leaf([1.0, 2.0])
    b = a * 2
    c = b + 1  # AddBackward0 saves nothing
    b.mul_(3)
    (c.sum() + b.sum()).backward()
    assert a.grad.tolist() == [8.0, 8.0]


def test_inplace_on_leaf_requiring_grad_raises():
    x = leaf([1.0, 2.0, 3.0])
    with raises_exactly(RuntimeError, LEAF_INPLACE):
        x.add_(1)
    with raises_exactly(RuntimeError, LEAF_INPLACE):
        x.mul_(2)


def test_inplace_on_view_of_leaf_requiring_grad_raises():
    x = leaf([1.0, 2.0, 3.0])
    with raises_exactly(RuntimeError, VIEW_OF_LEAF_INPLACE):
        x[0:2].add_(1)
    y = torch.ones(3, 2, requires_grad=True)
    with raises_exactly(RuntimeError, VIEW_OF_LEAF_INPLACE):
        y.view(6).mul_(2)


def test_inplace_on_leaf_allowed_under_no_grad():
    x = leaf([1.0, 2.0, 3.0])
    assert x._version == 0
    with torch.no_grad():
        x.add_(1)
        x[0:2].mul_(2)
    assert x.tolist() == [4.0, 6.0, 4.0]
    assert x.requires_grad and x.is_leaf and x.grad_fn is None
    assert x._version == 2


def test_inplace_on_non_leaf_rebases_history():
    x = leaf([1.0, 2.0])
    b = x * 2
    b.add_(1)
    assert type(b.grad_fn).__name__ == "AddBackward0"
    b.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


# --- requires_grad -------------------------------------------------------------------


def test_requires_grad_on_integer_tensor_raises():
    # Three different texts, depending on where the check happens.
    with raises_exactly(
        RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"
    ):
        torch.tensor([1, 2], requires_grad=True)
    with raises_exactly(
        RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"
    ):
        torch.tensor([True], requires_grad=True)
    with raises_exactly(
        RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"
    ):
        torch.ones(2, dtype=torch.int64, requires_grad=True)
    t = torch.tensor([1, 2])
    with raises_exactly(
        RuntimeError, "only Tensors of floating point and complex dtype can require gradients"
    ):
        t.requires_grad = True
    with raises_exactly(RuntimeError, "only Tensors of floating point dtype can require gradients"):
        t.requires_grad_()
    assert t.requires_grad is False


def test_changing_requires_grad_of_non_leaf_raises():
    x = leaf([1.0, 2.0])
    y = x * 2
    with raises_exactly(RuntimeError, NON_LEAF_REQUIRES_GRAD_FALSE):
        y.requires_grad = False
    with raises_exactly(RuntimeError, NON_LEAF_REQUIRES_GRAD):
        y.requires_grad = True
    with raises_exactly(RuntimeError, NON_LEAF_REQUIRES_GRAD_FALSE):
        y.requires_grad_(False)
    # Asking for what it already has is fine, and returns self.
    assert y.requires_grad_() is y
    assert y.requires_grad_(True) is y


def test_requires_grad_propagation_and_leaves():
    x = leaf([1.0, 2.0])
    c = torch.tensor([3.0, 4.0])
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert c.is_leaf and not c.requires_grad and c.grad_fn is None
    y = x * c
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    z = c * 2
    assert not z.requires_grad and z.is_leaf and z.grad_fn is None
    with torch.no_grad():
        w = x * c
    assert not w.requires_grad and w.is_leaf and w.grad_fn is None
    # Results computed from w do not require grad either.
    assert not (w * x.detach()).requires_grad


# --- grad modes ------------------------------------------------------------------------


def test_grad_mode_context_managers():
    x = leaf([1.0])
    assert torch.is_grad_enabled() is True
    with torch.no_grad():
        assert torch.is_grad_enabled() is False
        assert not (x * 2).requires_grad
        with torch.enable_grad():
            assert torch.is_grad_enabled() is True
            assert (x * 2).requires_grad
        assert torch.is_grad_enabled() is False
    assert torch.is_grad_enabled() is True
    with torch.set_grad_enabled(False):
        assert torch.is_grad_enabled() is False
        with torch.set_grad_enabled(True):
            assert torch.is_grad_enabled() is True
        assert torch.is_grad_enabled() is False
    assert torch.is_grad_enabled() is True


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with torch.no_grad():
            raise ValueError("boom")
    assert torch.is_grad_enabled() is True


def test_set_grad_enabled_as_a_function():
    try:
        torch.set_grad_enabled(False)
        assert torch.is_grad_enabled() is False
        torch.set_grad_enabled(True)
        assert torch.is_grad_enabled() is True
    finally:
        torch.set_grad_enabled(True)


def test_grad_modes_as_decorators():
    x = leaf([1.0])

    @torch.no_grad()
    def f():
        return torch.is_grad_enabled(), (x * 2).requires_grad

    @torch.no_grad
    def g():
        return torch.is_grad_enabled()

    @torch.enable_grad()
    def h():
        return torch.is_grad_enabled()

    @torch.set_grad_enabled(False)
    def k():
        return torch.is_grad_enabled()

    assert f() == (False, False)
    assert g() is False
    assert k() is False
    with torch.no_grad():
        assert h() is True
        assert torch.is_grad_enabled() is False
    assert torch.is_grad_enabled() is True


def test_grad_mode_is_thread_local():
    seen = []
    release = threading.Event()

    def worker():
        seen.append(torch.is_grad_enabled())
        with torch.no_grad():
            seen.append(torch.is_grad_enabled())
            release.wait()

    # A new thread starts with grad enabled, whatever the main thread's mode.
    release.set()
    try:
        torch.set_grad_enabled(False)
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert seen == [True, False]
        assert torch.is_grad_enabled() is False
    finally:
        torch.set_grad_enabled(True)

    # A thread's no_grad does not leak into the main thread.
    seen.clear()
    release.clear()
    t = threading.Thread(target=worker)
    t.start()
    try:
        while len(seen) < 2:
            t.join(0.01)
        assert seen == [True, False]
        assert torch.is_grad_enabled() is True
    finally:
        release.set()
        t.join()


# --- graph structure -----------------------------------------------------------------


def test_next_functions_structure():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    nf = y.grad_fn.next_functions
    assert isinstance(nf, tuple) and len(nf) == 2
    assert isinstance(nf[0], tuple)
    acc, nr = nf[0]
    assert type(acc).__name__ == "AccumulateGrad" and nr == 0
    assert acc.variable is x
    assert acc.next_functions == ()
    assert nf[1] == (None, 0)  # constant input

    nf = (torch.ones(3) * x).grad_fn.next_functions
    assert nf[0] == (None, 0)
    assert type(nf[1][0]).__name__ == "AccumulateGrad" and nf[1][1] == 0

    assert len(x.sum().grad_fn.next_functions) == 1
    assert (x + 1).grad_fn.next_functions[1] == (None, 0)


def test_next_functions_input_nr_of_multi_output_node():
    x = leaf([1.0, 2.0, 3.0])
    a, b, _ = x.unbind(0)
    (n0, i0), (n1, i1) = (a + b).grad_fn.next_functions
    assert type(n0).__name__ == "UnbindBackward0"
    assert n0 is n1
    assert (i0, i1) == (0, 1)


def test_same_node_reached_twice_is_the_same_object():
    x = leaf([1.0, 2.0])
    a = x * 2
    b = a * 3
    c = a * 4
    d = b + c
    left = d.grad_fn.next_functions[0][0].next_functions[0][0]
    right = d.grad_fn.next_functions[1][0].next_functions[0][0]
    assert left is right
    assert left is a.grad_fn
    # One AccumulateGrad per leaf, shared by every use.
    assert (x * 2).grad_fn.next_functions[0][0] is (x * 3).grad_fn.next_functions[0][0]


def test_diamond_gradients_are_summed():
    x = leaf([2.0])
    y = x * x
    c = (y + 1) + (y * 2)
    c.backward()
    assert x.grad.tolist() == [12.0]


def test_leaf_used_twice_in_one_op():
    x = leaf([3.0])
    (x * x).backward()
    assert x.grad.tolist() == [6.0]


def _namespace():
    torch.manual_seed(0)
    return {
        "torch": torch,
        "x": torch.rand(3, 4, requires_grad=True),
        "y": torch.rand(3, 4, requires_grad=True),
        "m": torch.rand(4, 5, requires_grad=True),
        "b3": torch.rand(2, 3, 4, requires_grad=True),
        "c3": torch.rand(2, 4, 5, requires_grad=True),
        "v": torch.rand(4, requires_grad=True),
    }


# (expression, grad_fn class name in PyTorch 2.13)
GRAD_FN_NAMES = [
    ("x + y", "AddBackward0"),
    ("x + 1", "AddBackward0"),
    ("1 + x", "AddBackward0"),
    ("x - y", "SubBackward0"),
    ("x - 1", "SubBackward0"),
    ("1 - x", "RsubBackward1"),
    ("x * y", "MulBackward0"),
    ("x * 2", "MulBackward0"),
    ("2 * x", "MulBackward0"),
    ("x / y", "DivBackward0"),
    ("x / 2", "DivBackward0"),
    ("2 / x", "MulBackward0"),
    ("x ** 2", "PowBackward0"),
    ("x ** 2.5", "PowBackward0"),
    ("x.pow(2)", "PowBackward0"),
    ("x ** y", "PowBackward1"),
    ("2 ** x", "PowBackward2"),
    ("-x", "NegBackward0"),
    ("x.neg()", "NegBackward0"),
    ("x.exp()", "ExpBackward0"),
    ("torch.exp(x)", "ExpBackward0"),
    ("x.log()", "LogBackward0"),
    ("x.sqrt()", "SqrtBackward0"),
    ("x.sin()", "SinBackward0"),
    ("x.cos()", "CosBackward0"),
    ("x.sum()", "SumBackward0"),
    ("x.sum(0)", "SumBackward1"),
    ("x.sum(dim=1)", "SumBackward1"),
    ("x.sum(axis=1)", "SumBackward1"),
    ("x.sum(0, keepdim=True)", "SumBackward1"),
    ("x.mean()", "MeanBackward0"),
    ("x.mean(0)", "MeanBackward1"),
    ("x.mean(dim=1, keepdim=True)", "MeanBackward1"),
    ("x @ m", "MmBackward0"),
    ("x.matmul(m)", "MmBackward0"),
    ("torch.mm(x, m)", "MmBackward0"),
    ("x @ v", "MvBackward0"),
    ("v @ v", "DotBackward0"),
    ("torch.bmm(b3, c3)", "BmmBackward0"),
    ("b3 @ c3", "UnsafeViewBackward0"),
    ("b3 @ m", "UnsafeViewBackward0"),
    ("x.t()", "TBackward0"),
    ("x.T", "PermuteBackward0"),
    ("x.view(12)", "ViewBackward0"),
    ("x.view(4, 3)", "ViewBackward0"),
    ("x.reshape(12)", "ViewBackward0"),
    ("x.t().reshape(12)", "UnsafeViewBackward0"),
    ("x.flatten()", "ViewBackward0"),
    ("x.expand(2, 3, 4)", "ExpandBackward0"),
    ("v.expand(3, 4)", "ExpandBackward0"),
    ("x[0]", "SelectBackward0"),
    ("x[:, 1]", "SelectBackward0"),
    ("x[0:2]", "SliceBackward0"),
    ("x[:, 1:3]", "SliceBackward0"),
    ("x[[0, 2]]", "IndexBackward0"),
    ("x[torch.tensor([0, 2])]", "IndexBackward0"),
    ("x[x > 0.5]", "IndexBackward0"),
    ("x[None]", "UnsqueezeBackward0"),
    ("x.transpose(0, 1)", "TransposeBackward0"),
    ("b3.permute(2, 0, 1)", "PermuteBackward0"),
    ("x.unsqueeze(0)", "UnsqueezeBackward0"),
    ("x.unsqueeze(0).squeeze()", "SqueezeBackward0"),
    ("x.squeeze()", "SqueezeBackward0"),
    ("x.unsqueeze(0).squeeze(0)", "SqueezeBackward1"),
    ("torch.cat([x, y])", "CatBackward0"),
    ("torch.cat([x, y], dim=1)", "CatBackward0"),
    ("torch.stack([x, y])", "StackBackward0"),
    ("x.relu()", "ReluBackward0"),
    ("torch.relu(x)", "ReluBackward0"),
    ("x.sigmoid()", "SigmoidBackward0"),
    ("torch.sigmoid(x)", "SigmoidBackward0"),
    ("x.tanh()", "TanhBackward0"),
    ("torch.tanh(x)", "TanhBackward0"),
    ("x.softmax(dim=1)", "SoftmaxBackward0"),
    ("torch.softmax(x, dim=1)", "SoftmaxBackward0"),
    ("x.log_softmax(dim=1)", "LogSoftmaxBackward0"),
    ("torch.log_softmax(x, 1)", "LogSoftmaxBackward0"),
    ("x.max()", "MaxBackward1"),
    ("x.max(dim=0)[0]", "MaxBackward0"),
    ("x.max(dim=0).values", "MaxBackward0"),
    ("x.min()", "MinBackward1"),
    ("x.min(dim=1)[0]", "MinBackward0"),
    ("x.amax(dim=0)", "AmaxBackward0"),
    ("x.clone()", "CloneBackward0"),
    ("x.t().contiguous()", "CloneBackward0"),
    ("x.abs()", "AbsBackward0"),
    ("torch.abs(x)", "AbsBackward0"),
    ("x.clamp(0.2, 0.8)", "ClampBackward1"),
    ("x.clamp(min=0.2)", "ClampBackward1"),
    ("x.maximum(y)", "MaximumBackward0"),
    ("torch.where(x > 0.5, x, y)", "WhereBackward0"),
    ("x.double()", "ToCopyBackward0"),
    ("x.masked_fill(x > 0.5, 0.0)", "MaskedFillBackward0"),
    ("x.split(2)[0]", "SplitBackward0"),
    ("x.unbind(0)[0]", "UnbindBackward0"),
    ("x.cumsum(0)", "CumsumBackward0"),
    ("x.prod()", "ProdBackward0"),
    ("x.var()", "VarBackward0"),
    ("x.std()", "StdBackward0"),
]


@pytest.mark.parametrize("expr, name", GRAD_FN_NAMES, ids=[e for e, _ in GRAD_FN_NAMES])
def test_grad_fn_names(expr, name):
    result = eval(expr, _namespace())
    assert type(result.grad_fn).__name__ == name
    assert result.grad_fn.name() == name
    assert repr(result.grad_fn).startswith(f"<{name} object at 0x")


@pytest.mark.parametrize("expr", ["x.detach()", "x.contiguous()", "x.float()"])
def test_no_op_conversions_have_no_grad_fn(expr):
    ns = _namespace()
    result = eval(expr, ns)
    assert result.grad_fn is None
    if expr != "x.detach()":
        assert result is ns["x"]  # returns self


def test_accumulate_grad_node_name():
    x = leaf([1.0])
    acc = (x * 2).grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad"
    assert acc.name() == "torch::autograd::AccumulateGrad"


# --- broadcasting ----------------------------------------------------------------------


def test_broadcasting_gradients_are_summed_to_input_shapes():
    p = torch.ones(3, 1, requires_grad=True)
    r = torch.ones(1, 4, requires_grad=True)
    s = torch.ones(4, requires_grad=True)
    t = torch.tensor(2.0, requires_grad=True)
    (p * r + s * t).sum().backward()
    assert p.grad.shape == (3, 1) and p.grad.tolist() == [[4.0], [4.0], [4.0]]
    assert r.grad.shape == (1, 4) and r.grad.tolist() == [[3.0, 3.0, 3.0, 3.0]]
    assert s.grad.shape == (4,) and s.grad.tolist() == [6.0, 6.0, 6.0, 6.0]
    assert t.grad.shape == () and t.grad.item() == 12.0


def test_expand_gradient_is_summed():
    v = leaf([1.0, 2.0])
    (v.expand(3, 2) * torch.tensor([[1.0], [2.0], [3.0]])).sum().backward()
    assert v.grad.tolist() == [6.0, 6.0]


# --- torch.autograd.backward / torch.autograd.grad -------------------------------------


def test_autograd_grad_returns_tuple_and_leaves_grad_alone():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    g = torch.autograd.grad((x * w).sum(), [x, w])
    assert isinstance(g, tuple) and len(g) == 2
    assert g[0].tolist() == [3.0, 4.0] and g[1].tolist() == [1.0, 2.0]
    assert x.grad is None and w.grad is None
    g = torch.autograd.grad((x * w).sum(), x)
    assert isinstance(g, tuple) and len(g) == 1
    assert g[0].tolist() == [3.0, 4.0]


def test_autograd_grad_with_respect_to_non_leaf_and_grad_outputs():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    h = x * w
    (gh,) = torch.autograd.grad(h.sum(), h)
    assert gh.tolist() == [1.0, 1.0]
    (gx,) = torch.autograd.grad(x * w, x, grad_outputs=torch.tensor([1.0, 10.0]))
    assert gx.tolist() == [3.0, 40.0]
    with raises_exactly(RuntimeError, "grad can be implicitly created only for scalar outputs"):
        torch.autograd.grad(x * w, x)


def test_autograd_grad_frees_the_graph():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    torch.autograd.grad(y, x)
    with raises_exactly(RuntimeError, BACKWARD_TWICE):
        torch.autograd.grad(y, x)
    y = (x * x).sum()
    torch.autograd.grad(y, x, retain_graph=True)
    (g,) = torch.autograd.grad(y, x)
    assert g.tolist() == [2.0, 4.0]


def test_autograd_grad_allow_unused():
    x = leaf([1.0, 2.0, 3.0])
    unused = leaf([1.0, 2.0])
    with raises_exactly(
        RuntimeError,
        "The differentiated Tensor at index 1 appears to not have been used in the graph. "
        "Set allow_unused=True if this is the desired behavior.",
    ):
        torch.autograd.grad((x * 2).sum(), [x, unused])
    g = torch.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert g[0].tolist() == [2.0, 2.0, 2.0] and g[1] is None


def test_autograd_grad_input_without_requires_grad():
    x = leaf([1.0, 2.0, 3.0])
    with raises_exactly(RuntimeError, "One of the differentiated Tensors does not require grad"):
        torch.autograd.grad((x * 2).sum(), [x, torch.ones(2)])


def test_autograd_backward_function():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    torch.autograd.backward([(x * 2).sum(), (w * 3).sum()])
    assert x.grad.tolist() == [2.0, 2.0] and w.grad.tolist() == [3.0, 3.0]
    torch.autograd.backward([x * 2], [torch.tensor([1.0, 10.0])])
    assert x.grad.tolist() == [4.0, 22.0]
    torch.autograd.backward((x * w).sum())
    assert x.grad.tolist() == [7.0, 26.0] and w.grad.tolist() == [4.0, 5.0]


def test_backward_inputs_accumulates_only_into_listed_tensors():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    (x * w).sum().backward(inputs=[x])
    assert x.grad.tolist() == [3.0, 4.0] and w.grad is None
    x.grad = None
    (x * w).sum().backward(inputs=w)
    assert x.grad is None and w.grad.tolist() == [1.0, 2.0]
    torch.autograd.backward((x * w).sum(), inputs=[x])
    assert x.grad.tolist() == [3.0, 4.0] and w.grad.tolist() == [1.0, 2.0]


def test_backward_inputs_with_non_leaf():
    x = leaf([1.0, 2.0])
    h = x * 3
    (h * h).sum().backward(inputs=[h])
    assert h.grad.tolist() == [6.0, 12.0]
    assert x.grad is None


# --- custom autograd.Function --------------------------------------------------------


class MySquare(torch.autograd.Function):
    seen = {}

    @staticmethod
    def forward(ctx, x, k, y):
        ctx.save_for_backward(x, y)
        ctx.k = k
        MySquare.seen["forward_grad_enabled"] = torch.is_grad_enabled()
        return x * x * k + y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        MySquare.seen["needs_input_grad"] = ctx.needs_input_grad
        MySquare.seen["backward_grad_enabled"] = torch.is_grad_enabled()
        return 2 * x * ctx.k * grad_output, None, grad_output


def test_custom_function_forward_and_backward():
    MySquare.seen.clear()
    x = leaf([1.0, 2.0])
    y = torch.tensor([3.0, 4.0])
    out = MySquare.apply(x, 3.0, y)
    assert out.tolist() == [6.0, 16.0]
    assert type(out.grad_fn).__name__ == "MySquareBackward"
    assert out.grad_fn.name() == "MySquareBackward"
    assert repr(out).endswith("grad_fn=<MySquareBackward>)")
    nf = out.grad_fn.next_functions
    assert type(nf[0][0]).__name__ == "AccumulateGrad" and nf[0][0].variable is x
    assert nf[1] == (None, 0)
    out.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]
    assert MySquare.seen == {
        "forward_grad_enabled": False,
        "needs_input_grad": (True, False, False),
        "backward_grad_enabled": False,
    }


def test_custom_function_needs_input_grad():
    x = leaf([1.0, 2.0])
    y = leaf([3.0, 4.0])
    MySquare.apply(x, 1.0, y).backward(torch.ones(2))
    assert MySquare.seen["needs_input_grad"] == (True, False, True)
    assert y.grad.tolist() == [1.0, 1.0]


def test_custom_function_without_grad_inputs():
    out = MySquare.apply(torch.ones(2), 2.0, torch.ones(2))
    assert out.tolist() == [3.0, 3.0]
    assert out.requires_grad is False and out.grad_fn is None


def test_custom_function_saved_tensors_after_backward():
    x = leaf([1.0, 2.0])
    out = MySquare.apply(x, 1.0, torch.zeros(2))
    node = out.grad_fn
    assert len(node.saved_tensors) == 2
    out.sum().backward()
    with raises_exactly(RuntimeError, BACKWARD_TWICE):
        _ = node.saved_tensors
    with raises_exactly(RuntimeError, BACKWARD_TWICE):
        out.sum().backward()


def test_custom_function_retain_graph():
    x = leaf([1.0, 2.0])
    out = MySquare.apply(x, 1.0, torch.zeros(2))
    out.sum().backward(retain_graph=True)
    out.sum().backward()
    assert x.grad.tolist() == [4.0, 8.0]


def test_custom_function_wrong_number_of_gradients():
    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output

    x = leaf([1.0, 2.0])
    with raises_exactly(
        RuntimeError, "function BadBackward returned an incorrect number of gradients (expected 2, got 1)"
    ):
        Bad.apply(x, x).sum().backward()


def test_custom_function_inplace_error_names_the_node():
    a = torch.rand(3, 4, requires_grad=True)
    b = MySquare.apply(a, 1.0, torch.zeros(3, 4))
    c = b * b
    b.detach().add_(1)
    with raises_exactly(RuntimeError, inplace_error("torch.FloatTensor", "3, 4", "MySquare")):
        c.sum().backward()


# --- detach / detach_ / requires_grad_ ------------------------------------------------


def test_detach_shares_storage_and_version_counter():
    x = leaf([1.0, 2.0])
    a = x * 2
    d = a.detach()
    assert d.requires_grad is False and d.is_leaf and d.grad_fn is None
    d[0] = 100.0
    assert a.tolist() == [100.0, 4.0]
    assert a._version == 1 and d._version == 1
    assert a.requires_grad and a.grad_fn is not None


def test_detach_in_place():
    x = leaf([1.0, 2.0])
    e = x * 2
    assert e.detach_() is e
    assert e.requires_grad is False and e.is_leaf and e.grad_fn is None
    with raises_exactly(RuntimeError, DETACH_VIEW_INPLACE):
        (x * 2)[0:1].detach_()


def test_requires_grad_():
    f = torch.ones(2)
    assert f.requires_grad_() is f
    assert f.requires_grad and f.is_leaf
    f.requires_grad_(False)
    assert f.requires_grad is False
    f.requires_grad = True
    (f * 3).sum().backward()
    assert f.grad.tolist() == [3.0, 3.0]


# --- deep graphs -----------------------------------------------------------------------

DEEP_CHAIN = """
import gc
import ferrograd as torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x
for _ in range(100000):
    y = y * 1.0
y.sum().backward()
print(x.grad.tolist())
del y
gc.collect()

y = x
for _ in range(100000):
    y = y + 0
del y
gc.collect()

y = x
for _ in range(100000):
    y = y * 1.0
z = y.sum()
del y
z.backward()
print(x.grad.tolist())
del z
gc.collect()
print("done")
"""


def test_deep_chain_builds_runs_backward_and_is_freed(tmp_path):
    # In a child process, so that a stack overflow shows up as a failed test.
    proc = subprocess.run(
        [sys.executable, "-c", DEEP_CHAIN],
        cwd=tmp_path,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[1.0, 1.0]\n[2.0, 2.0]\ndone\n"


# --- tie-breaking and derivatives at kinks -----------------------------------------------


def grad_of(fn, values):
    x = leaf(values)
    fn(x).sum().backward()
    return x.grad.tolist()


def test_max_min_over_whole_tensor_distribute_ties_evenly():
    assert grad_of(lambda x: x.max(), [1.0, 3.0, 3.0, 2.0]) == [0.0, 0.5, 0.5, 0.0]
    assert grad_of(lambda x: x.max(), [3.0, 3.0, 3.0, 2.0]) == pytest.approx(
        [1 / 3, 1 / 3, 1 / 3, 0.0]
    )
    assert grad_of(lambda x: x.min(), [1.0, 3.0, 1.0, 2.0]) == [0.5, 0.0, 0.5, 0.0]
    assert grad_of(lambda x: x.amax(), [1.0, 3.0, 3.0, 2.0]) == [0.0, 0.5, 0.5, 0.0]
    g = grad_of(lambda x: x.max(), [[3.0, 1.0], [3.0, 3.0]])
    assert g == [pytest.approx([1 / 3, 0.0]), pytest.approx([1 / 3, 1 / 3])]


def test_max_min_along_dim_pick_the_first_index():
    vals = [[1.0, 3.0], [1.0, 2.0], [0.0, 3.0]]
    result = torch.tensor(vals).max(dim=0)
    assert result.values.tolist() == [1.0, 3.0]
    assert result.indices.tolist() == [0, 0]
    assert grad_of(lambda x: x.max(dim=0)[0], vals) == [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    assert grad_of(lambda x: x.min(dim=0)[0], vals) == [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
    assert grad_of(lambda x: x.max(dim=1)[0], [[3.0, 3.0, 1.0]]) == [[1.0, 0.0, 0.0]]
    # amax along a dim distributes evenly, unlike max(dim=...).
    assert grad_of(lambda x: x.amax(dim=0), vals) == [[0.5, 0.5], [0.5, 0.0], [0.0, 0.5]]


def test_derivatives_at_zero():
    assert grad_of(lambda x: x.abs(), [-1.0, 0.0, 2.0]) == [-1.0, 0.0, 1.0]
    assert grad_of(lambda x: x.relu(), [-1.0, 0.0, 2.0]) == [0.0, 0.0, 1.0]
    assert grad_of(lambda x: x.sign(), [-1.0, 0.0, 2.0]) == [0.0, 0.0, 0.0]
    assert grad_of(lambda x: x.sqrt(), [0.0, 4.0]) == [float("inf"), 0.25]
    assert grad_of(lambda x: x ** 2, [0.0]) == [0.0]
    assert grad_of(lambda x: x ** 0, [0.0]) == [0.0]
    assert grad_of(lambda x: x ** 1, [0.0]) == [1.0]


def test_clamp_gradient_at_the_boundary_passes_through():
    assert grad_of(lambda x: x.clamp(0.0, 1.0), [-1.0, 0.0, 0.5, 1.0, 2.0]) == [
        0.0, 1.0, 1.0, 1.0, 0.0
    ]
    assert grad_of(lambda x: x.clamp(min=0.0), [-1.0, 0.0, 0.5]) == [0.0, 1.0, 1.0]
    assert grad_of(lambda x: x.clamp(max=1.0), [0.5, 1.0, 2.0]) == [1.0, 1.0, 0.0]


def test_maximum_with_ties_splits_the_gradient():
    zeros = torch.zeros(3)
    assert grad_of(lambda x: x.maximum(zeros), [-1.0, 0.0, 2.0]) == [0.0, 0.5, 1.0]


# --- the engine and other Python threads ---------------------------------------------


def test_python_threads_run_during_backward():
    """backward() must not hold the GIL: a pure-Python thread keeps counting.

    The switch interval is raised so that the interpreter never forces the GIL
    away from the main thread during the test: the counter can then only move
    between the two reads if backward() itself releases the GIL.  The counting
    thread yields voluntarily (sleep(0)) now and then, so that the main thread
    gets the GIL back quickly.
    """
    n, layers = 1024, 8
    torch.manual_seed(0)
    x = torch.randn(n, n, requires_grad=True)
    weights = [torch.randn(n, n) / n ** 0.5 for _ in range(layers)]
    y = x
    for w in weights:
        y = y @ w
    loss = y.sum()

    counter = [0]
    stop = [False]
    started = threading.Event()

    def count():
        started.set()
        while not stop[0]:
            counter[0] += 1
            if counter[0] % 1000 == 0:
                time.sleep(0)

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    thread = threading.Thread(target=count, daemon=True)
    advanced = []
    try:
        thread.start()
        started.wait()
        for _ in range(3):
            before = counter[0]
            loss.backward(retain_graph=True)
            after = counter[0]
            advanced.append(after - before)
            if after > before:
                break
    finally:
        stop[0] = True
        thread.join()
        sys.setswitchinterval(old_interval)
    assert advanced[-1] > 0, advanced
    assert x.grad.shape == (n, n)


def test_relu_backward_is_threshold_backward():
    # PyTorch's relu backward is threshold_backward(grad, result, 0): the gradient passes where
    # the result is > 0 or NaN, and differentiating it again gives ThresholdBackwardBackward0
    x = torch.tensor([float("nan"), -1.0, 0.0, 2.0], requires_grad=True)
    g = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    (gx,) = torch.autograd.grad(torch.relu(x), x, g, create_graph=True)
    assert gx.tolist() == [1.0, 0.0, 0.0, 4.0]
    assert type(gx.grad_fn).__name__ == "ThresholdBackwardBackward0"
    gg, gxx = torch.autograd.grad(gx, (g, x), torch.tensor([5.0, 6.0, 7.0, 8.0]), retain_graph=True)
    assert gg.tolist() == [5.0, 0.0, 0.0, 8.0]
    assert gxx.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_accumulated_grad_is_updated_in_place():
    # AccumulateGrad adds into the existing .grad in place (outside create_graph), so a
    # reference to it sees the sum, as in PyTorch
    x = torch.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    first = x.grad
    (x * 3).sum().backward()
    assert x.grad is first or x.grad.data_ptr() == first.data_ptr()
    assert first.tolist() == [5.0, 5.0, 5.0]
    big = torch.ones(600, 600, requires_grad=True)  # above the parallel threshold
    (big * 2).sum().backward()
    (big * 3).sum().backward()
    assert big.grad.sum().item() == 5.0 * 600 * 600
