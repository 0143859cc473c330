"""Custom differentiable operations: ``class F(Function)`` with static ``forward``/``backward``."""

from .. import _core
from .grad_mode import no_grad

Tensor = _core.Tensor


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``."""

    def __init__(self):
        self.to_save = ()
        self._key = None
        self.needs_input_grad = ()
        self.materialize_grads = True
        self.non_differentiable = ()
        self.dirty_tensors = ()

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    "save_for_backward can only save variables, but argument "
                    f"{tensors.index(t)} is of type {type(t).__name__}"
                )
        self.to_save = tensors

    @property
    def saved_tensors(self):
        if self._key is None:
            return tuple(self.to_save)
        return tuple(_core._saved_tensors(*self._key))

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
        if not (_core.is_grad_enabled() and any(t.requires_grad for t in inputs)):
            return outputs
        # an input returned as is becomes a new tensor sharing its data, as in PyTorch
        for k, o in enumerate(outs):
            if isinstance(o, Tensor) and any(o is a for a in inputs):
                outs[k] = o.detach()
        out_tensors = [o for o in outs if isinstance(o, Tensor) and o.is_floating_point()]
        meta = [(tuple(o.shape), o.dtype) for o in out_tensors]
        name = cls.__name__ + "Backward"
        n_args = len(args)

        def run_backward(*grads):
            if ctx.materialize_grads:
                grads = tuple(
                    g if g is not None else _core._full(list(s), 0, d)
                    for g, (s, d) in zip(grads, meta)
                )
            result = cls.backward(ctx, *grads)
            if not isinstance(result, tuple):
                result = (result,)
            if len(result) < n_args or any(r is not None for r in result[n_args:]):
                raise RuntimeError(
                    f"function {name} returned an incorrect number of gradients "
                    f"(expected {n_args}, got {len(result)})"
                )
            return tuple(result[i] for i in tensor_pos)

        saved = [t for t in ctx.to_save if t is not None]
        handle = _core._record_function(name, run_backward, inputs, out_tensors, saved)
        ctx._key = handle.key()
        ctx.to_save = ()  # the node holds them now (freed after backward)
        for t in ctx.non_differentiable:
            for o in out_tensors:
                if o is t:
                    o.detach_()
        return tuple(outs) if is_tuple else outs[0]


class once_differentiable:
    def __new__(cls, fn):
        return fn
