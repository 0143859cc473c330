"""Custom differentiable operations: ``class F(Function)`` with static ``forward``/``backward``."""

import functools
import weakref

from .. import _core
from .grad_mode import no_grad

Tensor = _core.Tensor

# the ctx of each custom Function node, by node key (the node's backward holds the ctx), for
# grad_fn.saved_tensors
_function_ctx: "weakref.WeakValueDictionary[tuple[int, int], FunctionCtx]" = weakref.WeakValueDictionary()


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``."""

    def __init__(self):
        self.to_save = ()
        self._saved_is_none = ()
        self._key = None
        self.needs_input_grad = ()
        self.materialize_grads = True
        self.non_differentiable = ()
        self.dirty_tensors = ()

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type "
                    f"{_tp_name(t)}"
                )
        self.to_save = tensors

    @property
    def saved_tensors(self):
        if self._key is None:
            return tuple(self.to_save)
        saved = iter(_core._saved_tensors(*self._key))
        # the node keeps the tensors; the Nones passed to save_for_backward come back in place
        return tuple(None if is_none else next(saved) for is_none in self._saved_is_none)

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class Function:
    """Base class of custom autograd Functions (PyTorch's ``torch.autograd.Function``)."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. "
            "Please use new-style autograd function with static forward method. "
            "(Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(
            isinstance(a, Tensor) and a.requires_grad for a in args
        )
        with no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        is_tuple = isinstance(outputs, tuple)
        outs = list(outputs) if is_tuple else [outputs]
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        inputs = [args[i] for i in tensor_pos]
        dirty = list(ctx.dirty_tensors)
        if any(not _contains(outs, d) for d in dirty):
            raise RuntimeError(
                "Some elements marked as dirty during the forward method were not returned as "
                "output. The inputs that are modified inplace must all be outputs of the Function."
            )
        if not (_core.is_grad_enabled() and any(t.requires_grad for t in inputs)):
            return outputs
        for d in dirty:
            if d.requires_grad and d.grad_fn is None:
                raise RuntimeError(
                    "a leaf Variable that requires grad has been used in an in-place operation."
                )
        # an input returned as is (and not modified in place) becomes a new tensor sharing its
        # data, as in PyTorch
        non_differentiable = list(ctx.non_differentiable)
        for k, o in enumerate(outs):
            if isinstance(o, Tensor) and _contains(inputs, o) and not _contains(dirty, o):
                outs[k] = o.detach()
                if _contains(non_differentiable, o):
                    non_differentiable.append(outs[k])
        # every tensor output is an output of the node (integer ones never get a gradient)
        node_outs = [o for o in outs if isinstance(o, Tensor)]
        # output k of the node is the k-th tensor output, even when one tensor is returned
        # twice (it then belongs to its last position, as in PyTorch)
        positions = iter(range(len(node_outs)))
        slots = [next(positions) if isinstance(o, Tensor) else None for o in outs]
        meta = [(list(o.shape), o.dtype) for o in node_outs]
        name = getattr(cls, "_node_name", cls.__name__ + "Backward")
        n_args = len(args)

        def run_backward(*grads):
            full = []
            for slot in slots:
                g = None if slot is None else grads[slot]
                if g is None and slot is not None and ctx.materialize_grads:
                    shape, dtype = meta[slot]
                    g = _core._full(shape, 0, dtype)
                full.append(g)
            result = cls.backward(ctx, *full)
            if not isinstance(result, tuple):
                result = (result,)
            if len(result) < n_args or any(r is not None for r in result[n_args:]):
                raise RuntimeError(
                    f"function {name} returned an incorrect number of gradients "
                    f"(expected {n_args}, got {len(result)})"
                )
            for i, r in enumerate(result[:n_args]):
                if r is None:
                    continue
                if not isinstance(r, Tensor):
                    raise RuntimeError(f"expected Variable or None (got {_tp_name(r)})")
                if not isinstance(args[i], Tensor):
                    raise RuntimeError(
                        f"function {name} returned a gradient different than None at position "
                        f"{i + 1}, but the corresponding forward input was not a Variable"
                    )
            return tuple(result[i] for i in tensor_pos)

        saved = [t for t in ctx.to_save if t is not None]
        ctx._saved_is_none = [t is None for t in ctx.to_save]
        handle = _core._record_function(name, run_backward, inputs, node_outs, saved, dirty)
        ctx._key = handle.key()
        _function_ctx[ctx._key] = ctx  # grad_fn.saved_tensors is ctx.saved_tensors
        ctx.to_save = ()  # the node holds them now (freed after backward)
        for t in non_differentiable:
            for o in node_outs:
                if o is t and o.is_floating_point():
                    o.detach_()
        return tuple(outs) if is_tuple else outs[0]


def _tp_name(obj):
    """The type name PyTorch's messages show (``Py_TYPE(obj)->tp_name``): the bare name for
    builtins and Python classes, ``module.name`` for other C types (``numpy.ndarray``)."""
    cls = type(obj)
    if cls.__flags__ & (1 << 9) or cls.__module__ == "builtins":  # Py_TPFLAGS_HEAPTYPE
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


def _contains(seq, t):
    return any(x is t for x in seq)


class _DelayedError(Function):
    """Stands in for the graph of a backward marked ``@once_differentiable``: differentiating
    through it raises."""

    _node_name = "Error"

    @staticmethod
    def forward(ctx, *grads):
        return grads if len(grads) > 1 else grads[0]

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with @once_differentiable"
        )


def once_differentiable(fn):
    """Decorates a ``backward`` that is not itself differentiable: it runs under ``no_grad``,
    and differentiating its result again raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not _core.is_grad_enabled():
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        if not isinstance(outputs, tuple):
            outputs = (outputs,)

        def fake_requires_grad(v):
            if v is not None:
                v = v.detach()
                v.requires_grad = True
            return v

        res = _DelayedError.apply(*[fake_requires_grad(v) for v in outputs])
        return res if isinstance(res, tuple) else (res,)

    return wrapper
