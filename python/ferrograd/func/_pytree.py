"""Nested Python containers ("pytrees") as ``torch.func`` sees them: tuples, lists, dicts,
OrderedDicts and namedtuples are nodes; anything else (tensors, numbers, None) is a leaf.

The parts of ``torch.utils._pytree`` the transforms use: ``tree_flatten``/``tree_unflatten``,
``tree_map``, and ``broadcast_prefix`` (PyTorch's ``_broadcast_to_and_flatten``, which spreads
an ``in_dims``/``out_dims`` prefix over a tree). Specs print as PyTorch's do (``TreeSpec(tuple,
None, [*, *])``), since they appear in error messages.
"""

from collections import OrderedDict

__all__ = ["TreeSpec", "LEAF", "tree_flatten", "tree_unflatten", "tree_map", "broadcast_prefix"]


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _node_type(x):
    """The node type of ``x``, or None for a leaf."""
    if _is_namedtuple(x):
        return type(x)
    for t in (tuple, list, OrderedDict, dict):
        if type(x) is t:
            return t
    return None


def _children(x, kind):
    """(children, context) of a node."""
    if kind is dict or kind is OrderedDict:
        return list(x.values()), list(x.keys())
    if kind is tuple or kind is list:
        return list(x), None
    return list(x), kind  # namedtuple


def _rebuild(kind, context, children):
    if kind is dict:
        return dict(zip(context, children))
    if kind is OrderedDict:
        return OrderedDict(zip(context, children))
    if kind is tuple:
        return tuple(children)
    if kind is list:
        return list(children)
    return kind(*children)  # namedtuple


class TreeSpec:
    """The structure of a pytree; ``type`` is None for a leaf."""

    __slots__ = ("type", "context", "children", "num_leaves")

    def __init__(self, kind, context, children):
        self.type = kind
        self.context = context
        self.children = children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)

    def is_leaf(self):
        return self.type is None

    def __eq__(self, other):
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return (self.type is other.type and self.context == other.context
                and self.children == other.children)

    def __hash__(self):
        return hash((self.type, len(self.children)))

    def __repr__(self, indent=0):
        if self.type is None:
            return "*"
        indent += 2
        inner = ",".join(
            ("" if i == 0 else "\n" + " " * indent) + c.__repr__(indent)
            for i, c in enumerate(self.children)
        )
        return f"TreeSpec({self.type.__name__}, {self.context}, [{inner}])"


LEAF = TreeSpec(None, None, [])


def tree_flatten(tree):
    """``(leaves, spec)``."""
    leaves = []

    def walk(x):
        kind = _node_type(x)
        if kind is None:
            leaves.append(x)
            return LEAF
        children, context = _children(x, kind)
        return TreeSpec(kind, context, [walk(c) for c in children])

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves, spec):
    """The pytree of ``spec`` with ``leaves`` in order."""
    leaves = iter(leaves)

    def build(s):
        if s.type is None:
            return next(leaves)
        return _rebuild(s.type, s.context, [build(c) for c in s.children])

    return build(spec)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix, spec):
    """The leaves of ``prefix`` spread over ``spec``: a leaf of ``prefix`` stands for every leaf
    of the subtree at its place. None when ``prefix`` is not a prefix of ``spec``."""
    out = []

    def walk(p, s):
        kind = _node_type(p)
        if kind is None:
            out.extend([p] * s.num_leaves)
            return True
        if kind is not s.type:
            return False
        children, context = _children(p, kind)
        if context != s.context or len(children) != len(s.children):
            return False
        return all(walk(c, cs) for c, cs in zip(children, s.children))

    return out if walk(prefix, spec) else None
