"""Custom differentiable operations: ``class F(Function)`` with static ``forward``/``backward``.

Two styles, as in PyTorch 2: ``forward(ctx, *args)``, or ``forward(*args)`` plus a static
``setup_context(ctx, inputs, output)`` that fills ``ctx`` once forward has run (``inputs`` is the
tuple of arguments, defaults filled in; both run under ``no_grad``). ``backward`` may also be
spelled ``vjp``.

Inside ``ferrograd.func`` transforms a Function must use the ``setup_context`` style (PyTorch's
rule). ``vmap`` runs a Function once per sample, which is what ``generate_vmap_rule=True``
asks for; a user-written ``vmap`` staticmethod is not run (NotImplementedError). The forward
transforms (``func.jvp``, ``jacfwd``, ``hessian``) require a ``jvp`` staticmethod as PyTorch does,
but compute the product by differentiating ``backward``, so ``backward`` must be differentiable,
as for ``gradgradcheck``. Under ``forward_ad`` (dual tensors), ``jvp(ctx, *tangents)`` runs right
after ``forward`` and gives the outputs' tangents; ``ctx.saved_tensors`` there are the tensors of
``save_for_forward``, as in PyTorch.
"""

import functools
import inspect
import weakref

from .. import _core
from . import _transforms, forward_ad
from .grad_mode import enable_grad, no_grad

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
        if getattr(self, "_in_jvp", False):  # jvp sees what save_for_forward kept
            return tuple(getattr(self, "saved_for_forward", ()))
        if self._key is None:
            return tuple(self.to_save)
        saved = iter(_core._saved_tensors(*self._key))
        # the node keeps the tensors; the Nones passed to save_for_backward come back in place
        return tuple(None if is_none else next(saved) for is_none in self._saved_is_none)

    def save_for_forward(self, *tensors):
        """Saves tensors for the ``jvp`` staticmethod (its ``ctx.saved_tensors``)."""
        if not all(t is None or isinstance(t, Tensor) for t in tensors):
            raise AssertionError(
                "save_for_forward expects all arguments to be tensors; you should save "
                "non-tensors as attributes on ctx."
            )
        self.saved_for_forward = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class Function:
    """Base class of custom autograd Functions (PyTorch's ``torch.autograd.Function``)."""

    # PyTorch's flag asking vmap to derive the batching rule from forward/backward
    generate_vmap_rule = False

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
    def setup_context(ctx, inputs, output):
        """Overridden (PyTorch 2 style): fills ``ctx`` from the arguments and what
        ``forward(*args)`` returned."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError(
            "To use autograd.Function with vmap, you must either override the vmap staticmethod "
            "or set generate_vmap_rule=True."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        new_style = cls.setup_context is not Function.setup_context
        if new_style:
            # forward(*args) gets every argument positionally, defaults filled in (PyTorch's
            # bind_default_args); the same tuple is setup_context's ``inputs``
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = tuple(bound.args), {}
        _check_transforms(cls, new_style)
        tangents = forward_ad._tangents(args)
        by_backward = getattr(cls, "_jvp_by_backward", False)
        if tangents is not None and cls.jvp is Function.jvp and not by_backward:
            Function.jvp(None)  # raises PyTorch's error: forward AD needs the Function's jvp
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(
            isinstance(a, Tensor) and a.requires_grad for a in args
        )
        with no_grad():
            if new_style:
                outputs = cls.forward(*args)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        is_tuple = isinstance(outputs, tuple)
        outs = list(outputs) if is_tuple else [outputs]
        if tangents is None:
            out_tangents = None
        elif by_backward:
            out_tangents = _jvp_by_backward(cls, ctx, outs, tangents)
        else:
            ctx._in_jvp = True
            try:
                out_tangents = cls.jvp(ctx, *tangents)
            finally:
                ctx._in_jvp = False
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        inputs = [args[i] for i in tensor_pos]
        dirty = list(ctx.dirty_tensors)
        if any(not _contains(outs, d) for d in dirty):
            raise RuntimeError(
                "Some elements marked as dirty during the forward method were not returned as "
                "output. The inputs that are modified inplace must all be outputs of the Function."
            )
        if not (_core.is_grad_enabled() and any(t.requires_grad for t in inputs)):
            _set_output_tangents(outs, out_tangents)
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
            result = _user_backward(cls)(ctx, *full)
            if not isinstance(result, tuple):
                result = (result,)
            _check_differentiable_backward(cls, name, grads, result, args)
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
        _set_output_tangents(outs, out_tangents)
        return tuple(outs) if is_tuple else outs[0]


def _jvp_by_backward(cls, ctx, outs, tangents):
    """The outputs' tangents of ferrograd's own Functions (``_jvp_by_backward = True``): their
    ``backward`` is differentiable and linear in the output gradients ``u``, so the vjp of
    ``u -> backward(u)`` seeded with the input tangents is ``J t``."""
    float_outs = [o for o in outs if isinstance(o, Tensor) and o.is_floating_point()]
    suspended = _core._set_forward_ad_suspended(True)  # backward runs on the primals
    try:
        return _double_vjp(cls, ctx, float_outs, tangents)
    finally:
        _core._set_forward_ad_suspended(suspended)


def _double_vjp(cls, ctx, float_outs, tangents):
    # with a graph when the primals or tangents require grad (reverse over forward)
    differentiable = _core.is_grad_enabled() and any(
        t.requires_grad for t in (*ctx.to_save, *tangents) if isinstance(t, Tensor))
    with enable_grad():
        us = [_core._full(list(o.shape), 1, o.dtype).requires_grad_() for o in float_outs]
        grads = _user_backward(cls)(ctx, *us)
        grads = grads if isinstance(grads, tuple) else (grads,)
        pairs = [(g, t) for g, t in zip(grads, tangents)
                 if g is not None and t is not None and g.requires_grad]
        found = [None] * len(us)
        if pairs:
            found = _core._run_backward([g for g, _ in pairs],
                                        [t.to(g.dtype).expand(g.shape) for g, t in pairs],
                                        differentiable, differentiable, inputs=us,
                                        accumulate=False, allow_unused=True)
    return tuple(_core._full(list(o.shape), 0, o.dtype) if t is None else t
                 for o, t in zip(float_outs, found))


def _set_output_tangents(outs, tangents):
    """Gives the Function's tensor outputs the tangents its ``jvp`` returned."""
    if tangents is None:
        return
    if not isinstance(tangents, tuple):
        tangents = (tangents,)
    for o, t in zip([o for o in outs if isinstance(o, Tensor) and o.is_floating_point()], tangents):
        _core._set_tangent(o, t)


def _user_backward(cls):
    """``backward``, or ``vjp`` when that is the one overridden (PyTorch's BackwardCFunction)."""
    if cls.backward is not Function.backward and cls.vjp is not Function.vjp:
        raise RuntimeError(
            "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
            "should only implement one of them."
        )
    return cls.vjp if cls.vjp is not Function.vjp else cls.backward


_EXTENDING_FUNC = "https://pytorch.org/docs/main/notes/extending.func.html"


# Functions standing in for PyTorch's native ops (scatter_reduce, random sampling, the
# once_differentiable error node): transforms treat them as ops, not as user Functions
_NATIVE_OP_MODULES = ("ferrograd._index_functions", "ferrograd._sampling", __name__)


def _check_transforms(cls, new_style):
    """PyTorch's checks for a Function called inside ``torch.func`` transforms."""
    kinds = _transforms.active()
    if not kinds or cls.__module__ in _NATIVE_OP_MODULES:
        return
    if not new_style:
        raise RuntimeError(
            "In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, "
            "jacrev, ...), it must override the setup_context staticmethod. For more details, "
            f"please see {_EXTENDING_FUNC}"
        )
    for kind in reversed(kinds):
        if kind == "vmap":
            own_rule = cls.vmap is not Function.vmap
            if own_rule and cls.generate_vmap_rule:
                raise RuntimeError(
                    f"You tried to vmap over {cls.__name__}, but it has both "
                    "generate_vmap_rule=True and an overridden vmap staticmethod. Please set "
                    "generate_vmap_rule=False or delete the overridden vmap staticmethod to avoid "
                    f"ambiguity. For more details, please see {_EXTENDING_FUNC}"
                )
            if own_rule:
                raise NotImplementedError(
                    f"{cls.__name__}.vmap: ferrograd's vmap runs the function once per sample and "
                    "cannot use a custom vmap staticmethod; set generate_vmap_rule=True instead "
                    "(the per-sample loop is the generated rule)"
                )
            if not cls.generate_vmap_rule:
                raise RuntimeError(
                    f"You tried to vmap over {cls.__name__}, but it does not have vmap support. "
                    "Please override and implement the vmap staticmethod or set "
                    f"generate_vmap_rule=True. For more details, please see {_EXTENDING_FUNC}"
                )
        elif kind == "jvp" and cls.jvp is Function.jvp:
            Function.jvp(None)


def _check_differentiable_backward(cls, name, grads, result, args):
    """Inside ``func.jvp``/``jacfwd``/``hessian`` the product comes from differentiating
    ``backward`` again: a gradient that lost its graph would make it silently wrong."""
    if "jvp" not in _transforms.active() or not _core.is_grad_enabled():
        return
    if cls.__module__ in _NATIVE_OP_MODULES:
        return
    if not any(isinstance(g, Tensor) and g.requires_grad for g in grads):
        return
    if any(isinstance(r, Tensor) and r.is_floating_point() and not r.requires_grad
           and isinstance(a, Tensor) and a.requires_grad for r, a in zip(result, args)):
        raise NotImplementedError(
            f"{name}: ferrograd computes forward-mode products (torch.func.jvp, jacfwd, hessian) "
            "by differentiating the custom Function's backward, but it returned a gradient that "
            "is not differentiable (computed under no_grad, detached or not from the graph)"
        )


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
