"""Results of ops PyTorch cannot differentiate, recorded as PyTorch records them: a node whose
backward raises (``_no_derivative``); and ``scatter`` with ``reduce=``, one of them.

Only the native core is imported here, so the argument parsers (``_op_args``) can use it.
"""

from . import _core
from ._core import Tensor


def _no_derivative(name, exc, message):
    """``attach(result, *inputs)``: ``result`` (computed without a graph) recorded as the
    output of a node named ``name`` whose backward raises ``exc(message)``, when one of the
    tensors ``inputs`` requires grad (floating results only); PyTorch's ``NotImplemented``
    nodes."""

    def backward(*grads):
        raise exc(message)

    def attach(result, *inputs):
        needs = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
        if not result.is_floating_point() or not needs or not _core.is_grad_enabled():
            return result
        _core._record_function(name, backward, needs, [result], [], [])
        return result

    return attach


_scatter_node = _no_derivative("NotImplemented", RuntimeError, "derivative for aten::scatter is not implemented")


def scatter_with_reduce(input, dim, index, src, value, reduce):
    """``scatter(dim, index, src or value, reduce="add" | "multiply")``: the values added to
    or multiplied into ``input`` (not differentiable, as in PyTorch)."""
    if src is None:
        src = _core._full(list(index.shape), value, input.dtype)
    name = "sum" if reduce == "add" else "prod"
    r = _core._scatter_reduce(input.detach(), dim, index, src.detach(), name, True)
    return _scatter_node(r, input, src)
