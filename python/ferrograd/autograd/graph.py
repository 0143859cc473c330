"""Graph nodes as Python objects: ``grad_fn``, ``next_functions``, ``AccumulateGrad``.

Each node name gets its own class (``type(t.grad_fn).__name__ == "MulBackward0"``), and a node
reached twice is the same Python object while it is alive.
"""

import weakref

_classes = {}
_live = weakref.WeakValueDictionary()


class Node:
    """A node of the autograd graph (PyTorch's ``torch.autograd.graph.Node``)."""

    __slots__ = ("_h", "__weakref__")

    def name(self):
        n = self._h.name()
        return "torch::autograd::AccumulateGrad" if n == "AccumulateGrad" else n

    @property
    def next_functions(self):
        return self._h.next_functions()

    @property
    def metadata(self):
        return {}

    @property
    def saved_tensors(self):
        return tuple(self._h.saved_tensors())

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
        lines = [f"saved tensors: {_bytes(self.total)} held by {len(self.nodes) - freed} nodes"
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
