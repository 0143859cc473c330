"""Graph nodes as Python objects: ``grad_fn``, ``next_functions``, ``AccumulateGrad``.

Each node name gets its own class (``type(t.grad_fn).__name__ == "MulBackward0"``), and a node
reached twice is the same Python object while it is alive.
"""

import threading
import weakref
from typing import Any, NamedTuple

from .. import _core
from ..utils.hooks import _native_handle
from .function import _function_ctx, _tp_name
from .grad_mode import enable_grad

__all__ = [
    "Node",
    "GradientEdge",
    "get_gradient_edge",
    "saved_tensors_hooks",
    "save_on_cpu",
    "disable_saved_tensors_hooks",
    "describe",
    "to_dot",
    "saved_memory",
]

_classes: dict[str, type["Node"]] = {}  # node classes by node name
_live: "weakref.WeakValueDictionary[tuple[int, int], Node]" = weakref.WeakValueDictionary()  # by node key


# the nodes PyTorch names by their C++ class (the others by their generated Python class)
_QUALIFIED = ("AccumulateGrad", "Error", "CopySlices", "CopyBackwards")


class Node:
    """A node of the autograd graph (PyTorch's ``torch.autograd.graph.Node``)."""

    __slots__ = ("_h", "__weakref__")

    def name(self):
        n = self._h.name()
        return f"torch::autograd::{n}" if n in _QUALIFIED else n

    @property
    def next_functions(self):
        return self._h.next_functions()

    @property
    def metadata(self):
        return {}

    @property
    def saved_tensors(self):
        ctx = _function_ctx.get(self._h.key())
        if ctx is not None:
            return ctx.saved_tensors
        return tuple(self._h.saved_tensors())

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs) -> tuple | None`` runs after the node computed the
        gradients of its inputs; a returned tuple replaces ``grad_inputs``."""
        return self._add_hook("post", _tuple_hook(fn, post=True))

    def register_prehook(self, fn):
        """``fn(grad_outputs) -> tuple | None`` runs before the node; a returned tuple
        replaces ``grad_outputs``."""
        return self._add_hook("pre", _tuple_hook(fn, post=False))

    def _add_hook(self, kind, wrapped, output_nr=0):
        key = self._h.key()
        hook_id = self._h.add_hook(kind, wrapped, output_nr)
        return _native_handle(lambda i: _core._remove_node_hook(*key, i), hook_id)

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    __slots__ = ()

    @property
    def variable(self):
        return self._h.variable()


def _node_class(name):
    cls = _classes.get(name)
    if cls is None:
        cls = type(name, (Node,), {"__slots__": ()})
        _classes[name] = cls
    return cls


def _wrap_node(handle):
    key = handle.key()
    obj = _live.get(key)
    if obj is not None:
        return obj
    name = handle.name()
    cls = AccumulateGrad if name == "AccumulateGrad" else _node_class(name)
    obj = object.__new__(cls)
    obj._h = handle
    _live[key] = obj
    return obj


# --- Gradient edges -----------------------------------------------------------------------------


class GradientEdge(NamedTuple):
    """An edge of the autograd graph: input ``output_nr`` of ``node``, through which a tensor's
    gradient flows. ``get_gradient_edge(t)`` gives the edge of ``t``; ``autograd.grad`` and
    ``backward`` accept edges in place of tensors (as ``inputs``, and as ``outputs`` with their
    grad_outputs).

    ferrograd's engine takes tensors: an edge is used through the tensor it was taken from,
    which the edge of ``get_gradient_edge`` keeps alive (PyTorch keeps only the graph). An edge
    built by hand from a node (``GradientEdge(t.grad_fn, 0)``) works for a leaf's
    ``AccumulateGrad``; for other nodes it raises NotImplementedError."""

    node: Node
    output_nr: int
    ownership_token: Any = None


class _TensorGradientEdge(GradientEdge):
    """The edge of ``get_gradient_edge(tensor)``: also holds the tensor."""

    _tensor: Any

    def __repr__(self):
        return "GradientEdge" + super().__repr__()[len(type(self).__name__):]


def _grad_accumulator(tensor):
    """The ``AccumulateGrad`` node of a leaf that requires grad."""
    with enable_grad():
        return tensor.view_as(tensor).grad_fn.next_functions[0][0]


def _edge_node(tensor):
    return tensor.grad_fn if tensor.grad_fn is not None else _grad_accumulator(tensor)


def get_gradient_edge(tensor):
    """The gradient edge of ``tensor``: ``autograd.grad(loss, get_gradient_edge(t))`` is
    ``autograd.grad(loss, t)``."""
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients"
        )
    edge = _TensorGradientEdge(_edge_node(tensor), tensor.output_nr)
    edge._tensor = tensor
    return edge


def _edge_tensor(edge):
    """A tensor whose gradient edge is ``edge`` (what the engine is given in its place)."""
    node, output_nr = edge.node, edge.output_nr
    tensor = getattr(edge, "_tensor", None)
    if tensor is None and isinstance(node, AccumulateGrad):
        tensor = node.variable
    if tensor is None:
        raise NotImplementedError(
            "ferrograd: a GradientEdge to a node other than AccumulateGrad can only be "
            "differentiated when it comes from torch.autograd.graph.get_gradient_edge(tensor) "
            "(the engine needs the tensor that flows through the edge)"
        )
    # the tensor may have moved on (modified in place): its edge must still be this one
    if not (tensor.requires_grad and _edge_node(tensor) is node and tensor.output_nr == output_nr):
        raise NotImplementedError(
            "ferrograd: this GradientEdge's tensor was modified in place after "
            "get_gradient_edge(); differentiating with respect to the old edge is not supported"
        )
    return tensor


# --- Hooks: user callables wrapped with PyTorch's checks on what they return -------------------


def _hook_name(hook):
    return getattr(hook, "__name__", "<unknown>")


def _check_value(original, result, hook):
    if original.dtype != result.dtype:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has changed the type of value "
            f"(was {original.type()} got {result.type()})"
        )
    if tuple(original.shape) != tuple(result.shape):
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")


def _tensor_hook(hook):
    """A ``Tensor.register_hook`` hook as the engine calls it: ``(grad,) -> (grad,) | None``."""

    def call(grads):
        (grad,) = grads
        result = hook(grad)
        if result is None:
            return None
        if grad is None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
        if not isinstance(result, _core.Tensor):
            raise TypeError(f"expected Variable, but hook returned '{_tp_name(result)}'")
        _check_value(grad, result, hook)
        return (result,)

    return call


def _tuple_hook(hook, post):
    """A node hook as the engine calls it, checking that it returns a tuple of the right size."""

    def call(grads, grad_outputs=None):
        result = hook(grads, grad_outputs) if post else hook(grads)
        if result is None:
            return None
        if not isinstance(result, tuple):
            raise TypeError(f"expected tuple, but hook returned '{_tp_name(result)}'")
        if len(result) != len(grads):
            raise RuntimeError(
                f"hook '{_hook_name(hook)}' has returned an incorrect number of values "
                f"(got {len(result)}, but expected {len(grads)})"
            )
        for old, new in zip(grads, result):
            if new is None:
                continue
            if old is None:
                raise RuntimeError("can't replace a None gradient with a non-None value")
            if not isinstance(new, _core.Tensor):
                raise TypeError(f"expected Variable, but hook returned '{_tp_name(new)}'")
            _check_value(old, new, hook)
        return result

    return call


def _register_tensor_hook(tensor, hook):
    """``Tensor.register_hook``: on a leaf the hook lives on the tensor, on a non-leaf on its
    grad_fn (so it still runs when the tensor object is gone, as in PyTorch)."""
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    fn = tensor.grad_fn
    if fn is not None:
        return fn._add_hook("tensor", _tensor_hook(hook), tensor.output_nr)
    return _add_leaf_hook(tensor, "leaf", _tensor_hook(hook))


def _register_post_accumulate_grad_hook(tensor, hook):
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")

    def call(args):
        (t,) = args
        result = hook(t)
        if result is None or result is t:
            return
        # PyTorch checks the value as for a gradient hook before refusing it
        if not isinstance(result, _core.Tensor):
            raise TypeError(f"expected Variable, but hook returned '{_tp_name(result)}'")
        _check_value(t, result, hook)
        raise RuntimeError("Tensor post accumulate grad hooks should return None.")

    return _add_leaf_hook(tensor, "post_accumulate", call)


def _add_leaf_hook(tensor, kind, wrapped):
    ref = weakref.ref(tensor)

    def remove(hook_id):
        t = ref()
        if t is not None:
            _core._remove_leaf_hook(t, hook_id)

    return _native_handle(remove, _core._add_leaf_hook(tensor, kind, wrapped))


# --- Saved tensor hooks -------------------------------------------------------------------------

_disabled = threading.local()


class saved_tensors_hooks:
    """Context manager: every tensor saved for backward inside it is passed to ``pack_hook``,
    and what that returns is kept instead; ``unpack_hook`` turns it back into a tensor when
    backward (or ``ctx.saved_tensors``) needs it. Saved tensors packed this way are not checked
    for in-place modification (as in PyTorch)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        message = getattr(_disabled, "message", None)
        if message is not None:
            raise RuntimeError(message)
        _core._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        _disabled.depth = getattr(_disabled, "depth", 0) + 1

    def __exit__(self, *args):
        _core._pop_saved_tensors_hooks()
        _disabled.depth -= 1


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU: on ferrograd, where every tensor is on the CPU, this
    keeps them as they are."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(lambda t: t, lambda t: t)


class disable_saved_tensors_hooks:
    """Within it, entering ``saved_tensors_hooks`` raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        if getattr(_disabled, "depth", 0):
            # hooks already active: refused at once, as in PyTorch
            raise RuntimeError(self.error_message)
        self._prev = getattr(_disabled, "message", None)
        _disabled.message = self.error_message

    def __exit__(self, *args):
        _disabled.message = self._prev


# --- Inspecting a graph: what PyTorch does not show ---------------------------------------------


def _inputs(node):
    return [n for n, _ in node.next_functions if n is not None]


def _leaf_text(t):
    return f"(leaf: shape {list(t.shape)}, {str(t.dtype).replace('torch.', '')})"


def _walk(tensor):
    """The graph's nodes depth-first from `tensor.grad_fn`, as (node, depth, first_visit);
    iterative, so a chain of any depth works."""
    stack = [(tensor.grad_fn, 0)] if tensor.grad_fn is not None else []
    seen = set()
    while stack:
        node, depth = stack.pop()
        key = node._h.key()
        first = key not in seen
        seen.add(key)
        yield node, depth, first
        if first:
            stack.extend((child, depth + 1) for child in reversed(_inputs(node)))


def describe(tensor, file=None):
    """Print the graph behind ``tensor`` as an indented tree of its nodes, each leaf with its
    shape and dtype. A node reached a second time (a tensor used twice) is named again but not
    expanded again."""
    if tensor.grad_fn is None:
        kind = "a leaf" if tensor.requires_grad else "a tensor that does not require grad"
        print(f"no graph: {kind} of shape {list(tensor.shape)}", file=file)
        return
    for node, depth, first in _walk(tensor):
        line = f"{'  ' * depth}└─ {type(node).__name__}"
        if isinstance(node, AccumulateGrad):
            line += " " + _leaf_text(node.variable)
        elif not first:
            line += " (shown above)"
        print(line, file=file)


def to_dot(tensor):
    """The graph behind ``tensor`` as Graphviz DOT text (`dot -Tpng`): one box per node, leaves
    with their shapes, arrows in the direction the forward pass computed."""
    lines = ["digraph autograd {", '  node [shape=box, fontname="monospace"];']
    ids = {}

    def node_id(node):
        return ids.setdefault(node._h.key(), f"n{len(ids)}")

    for node, _, first in _walk(tensor):
        if not first:
            continue
        label = type(node).__name__
        style = ""
        if isinstance(node, AccumulateGrad):
            v = node.variable
            label += f"\\n{list(v.shape)} {str(v.dtype).replace('torch.', '')}"
            style = ", style=filled, fillcolor=lightblue"
        lines.append(f'  {node_id(node)} [label="{label}"{style}];')
        for child in _inputs(node):
            lines.append(f"  {node_id(child)} -> {node_id(node)};")
    if tensor.grad_fn is not None:
        shape = f"{list(tensor.shape)} {str(tensor.dtype).replace('torch.', '')}"
        lines.append(f'  out [label="output\\n{shape}", shape=ellipse];')
        lines.append(f"  {node_id(tensor.grad_fn)} -> out;")
    lines.append("}")
    return "\n".join(lines) + "\n"


class SavedMemory:
    """What :func:`saved_memory` reports: ``nodes`` is a list of ``(node name, bytes, freed)``,
    one per node that saves tensors (``freed`` once backward released them), and ``total``
    the bytes of the distinct storages they keep alive (a storage saved by several nodes, or a
    parameter that is also alive elsewhere, is counted once)."""

    def __init__(self, nodes, total):
        self.nodes = nodes
        self.total = total

    def __repr__(self):
        freed = sum(1 for _, _, f in self.nodes if f)
        held = len(self.nodes) - freed
        lines = [f"saved tensors: {_bytes(self.total)} held by {held} node{'' if held == 1 else 's'}"
                 + (f" ({freed} freed by backward)" if freed else "")]
        width = max((len(name) for name, _, _ in self.nodes), default=0)
        for name, size, f in self.nodes:
            lines.append(f"  {name:<{width}}  {'freed' if f else _bytes(size)}")
        return "\n".join(lines)


def _bytes(n):
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def saved_memory(tensor):
    """The memory the graph behind ``tensor`` holds in saved tensors ("what ctx keeps"), per
    node and in total; call it before and after ``backward()`` to see what backward frees."""
    nodes, storages = [], {}
    for node, _, first in _walk(tensor):
        if not first:
            continue
        pairs, freed = node._h.saved_storages()
        if pairs or freed:
            nodes.append((type(node).__name__, sum(dict(pairs).values()), freed))
            storages.update(pairs)
    return SavedMemory(nodes, sum(storages.values()))
