"""``backward()`` and ``grad()``: the entry points of the native backward engine, run as a
backward pass of ``Variable._execution_engine`` (so that final callbacks run before they return).

Outputs and inputs may be ``graph.GradientEdge``s: the engine is given the tensor of each edge
(see ``graph._edge_tensor``). ``inputs`` may also be a dict (the result of ``grad`` is then a
dict with the same keys).
"""

import warnings
from collections.abc import Mapping

from .. import _core
from .._core import Tensor, stack
from .graph import GradientEdge, _edge_tensor
from .variable import Variable


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, (Tensor, GradientEdge)):
        return (x,)
    return tuple(x)


def _inputs_tuple(inputs, fn):
    """PyTorch's handling of ``inputs``: one tensor or edge, a dict (its values), or a
    sequence."""
    if isinstance(inputs, (Tensor, GradientEdge)):
        return (inputs,)
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, Mapping):
        raise TypeError(
            f"`inputs` argument to `{fn}()` must be a dict, not {type(inputs).__name__}. "
            "Other Mapping types are not supported."
        )
    return tuple(inputs)


def _tensors(items):
    """Tensors in place of gradient edges."""
    return tuple(_edge_tensor(x) if isinstance(x, GradientEdge) else x for x in items)


def _make_grads(outputs, grads, kind="grad_output"):
    new = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.is_floating_point():
                    raise RuntimeError(
                        "grad can be implicitly created only for real scalar outputs but got "
                        + str(out.dtype)
                    )
            new.append(_core._full(list(out.shape), 1, out.dtype))
        elif isinstance(g, Tensor):
            if tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(
                    f"Mismatch in shape: {kind}[{i}] has a shape of {g.shape} and "
                    f"output[{i}] has a shape of {out.shape}."
                )
            new.append(g)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    return new


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulates gradients of ``tensors`` into the leaves' ``.grad``."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _tensors(_as_tuple(tensors))
    # a GradientEdge input to a non-leaf node has no .grad to fill: it only bounds the part of
    # the graph that runs (PyTorch). With other inputs it is dropped; alone, the graph runs up
    # to it and nothing is accumulated.
    edges_only = ()
    if inputs is not None:
        inputs = _inputs_tuple(inputs, "backward")
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        resolved = _tensors(inputs)
        leaf_or_tensor = tuple(
            t for t, i in zip(resolved, inputs)
            if not isinstance(i, GradientEdge) or t.grad_fn is None
        )
        if leaf_or_tensor:
            inputs = leaf_or_tensor
        else:
            edges_only, inputs = resolved, None
    grads = _as_tuple(grad_tensors) or (None,) * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(
            f"got {len(grads)} tensors and {len(tensors)} gradients"
        )
    grads = _make_grads(tensors, grads)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between "
            "the parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after "
            "use to break the cycle and avoid the leak.",
            UserWarning,
            stacklevel=3,
        )
    if edges_only:
        Variable._execution_engine.run(lambda: _core._run_backward(
            list(tensors), grads, bool(retain_graph), bool(create_graph), list(edges_only),
            False, True))
        return
    Variable._execution_engine.run(lambda: _core._run_backward(
        list(tensors), grads, bool(retain_graph), bool(create_graph),
        list(inputs) if inputs is not None else None, True, False))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Returns the gradients of ``outputs`` with respect to ``inputs``; ``.grad`` is untouched."""
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False."
        )
    outputs = _tensors(_as_tuple(outputs))
    inputs_arg = inputs
    inputs = _inputs_tuple(inputs, "grad")
    if len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    is_edge = [isinstance(i, GradientEdge) for i in inputs]
    inputs = _tensors(inputs)
    grads = _as_tuple(grad_outputs) or (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(
            f"grad requires one grad_output per output: got {len(grads)} and {len(outputs)}"
        )
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        res = _grad_batched(outputs, inputs, grads, retain_graph, create_graph, allow_unused,
                            materialize_grads)
        return _as_given(res, inputs_arg)
    grads = _make_grads(outputs, grads)
    res = Variable._execution_engine.run(lambda: _core._run_backward(
        list(outputs), grads, bool(retain_graph), bool(create_graph), list(inputs), False,
        bool(allow_unused)))
    if materialize_grads:
        if any(r is None and e for r, e in zip(res, is_edge)):
            raise RuntimeError(
                "materialize_grads cannot be used when the given input is a GradientEdge"
            )
        res = [r if r is not None else _core._full(list(i.shape), 0, i.dtype) for r, i in zip(res, inputs)]
    return _as_given(tuple(res), inputs_arg)


def _as_given(res, inputs_arg):
    """The result of ``grad``: a dict when ``inputs`` was one."""
    if type(inputs_arg) is dict:
        return dict(zip(inputs_arg.keys(), res))
    return tuple(res)


def _grad_batched(outputs, inputs, grads, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """``grad(..., is_grads_batched=True)``: one backward per slice of the grad_outputs' first
    dimension (the graph is kept until the last), the results stacked along a new first dim."""
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if isinstance(g, Tensor) and tuple(g.shape[1:]) != tuple(out.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output "
                "as the batch dimension. The sizes of the remaining dimensions are expected to "
                "match the shape of corresponding output, but a mismatch was detected: "
                f"grad_output[{i}] has a shape of {g[0].shape[1:] if g.dim() > 0 else g.shape} "
                f"and output[{i}] has a shape of {out.shape}. If you only want some tensors in "
                "`grad_output` to be considered batched, consider using vmap."
            )
    batch = next(g.shape[0] for g in grads if isinstance(g, Tensor))
    per_slice = []
    for b in range(batch):
        slice_grads = [g[b] if isinstance(g, Tensor) else None for g in grads]
        keep = retain_graph or b < batch - 1
        per_slice.append(grad(outputs, inputs, slice_grads, retain_graph=keep,
                              create_graph=create_graph, allow_unused=allow_unused,
                              materialize_grads=materialize_grads))
    return tuple(
        None if any(r[k] is None for r in per_slice) else stack([r[k] for r in per_slice])
        for k in range(len(inputs))
    )
