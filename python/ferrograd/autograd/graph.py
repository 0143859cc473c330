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
