"""``ferrograd.utils.checkpoint``: activation checkpointing.

Follows ``torch/utils/checkpoint.py`` (PyTorch 2.13): the reentrant variant is an autograd
Function that re-runs the forward inside its backward, the non-reentrant variant packs every
tensor saved inside the checkpointed region as a small ``_Holder`` (saved tensor hooks) and
recomputes the region the first time backward unpacks one of them.

ferrograd runs on the CPU only, has no autocast, no ``torch.compile`` and no dispatch modes:
device RNG states, autocast state, ``debug=True`` and selective checkpointing are left out
(the last two raise ``NotImplementedError``).
"""

import contextlib
import enum
import sys
import threading
import uuid
import warnings
import weakref
from collections import defaultdict

from .. import _core, autograd
from .._core import Tensor, default_generator, is_grad_enabled
from .._factories import empty
from .._functions import is_tensor
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.graph import saved_tensors_hooks
from ..nn.modules.container import Sequential

__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "CheckpointError",
    "CheckpointFunction",
    "check_backward_validity",
    "detach_variable",
    "get_device_states",
    "set_device_states",
    "noop_context_fn",
    "set_checkpoint_early_stop",
    "DefaultDeviceType",
    "set_checkpoint_debug_enabled",
    "CheckpointPolicy",
    "SelectiveCheckpointContext",
    "create_selective_checkpoint_contexts",
    "GraphExecGroup",
]

_DEFAULT_DETERMINISM_MODE = "default"

_checkpoint_debug_enabled = None


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Sets whether checkpoint runs in debug mode, overriding the ``debug`` argument of
    :func:`checkpoint`; ``None`` defers to that argument."""
    global _checkpoint_debug_enabled
    try:
        prev = _checkpoint_debug_enabled
        _checkpoint_debug_enabled = enabled
        yield
    finally:
        _checkpoint_debug_enabled = prev


def detach_variable(inputs):
    if isinstance(inputs, tuple):
        out = []
        for inp in inputs:
            if not isinstance(inp, Tensor):
                out.append(inp)
                continue

            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        return tuple(out)
    else:
        raise RuntimeError(
            "Only tuple of tensors is supported. Got Unsupported input type: "
            f"{type(inputs).__name__}"
        )


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2
        )


class DefaultDeviceType:
    """The device type whose RNG state checkpoint saves when no argument is on a device:
    always ``"cpu"`` on ferrograd unless set otherwise."""

    _default_device_type = None

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        if not DefaultDeviceType._default_device_type:
            DefaultDeviceType._default_device_type = "cpu"
        return DefaultDeviceType._default_device_type


def get_device_states(*args):
    """The RNG states of the (non-CPU) devices of the tensor arguments: none on ferrograd,
    where every tensor is on the CPU."""
    return [], []


def set_device_states(devices, states, *, device_type=None):
    if device_type is None:
        device_type = DefaultDeviceType.get_device_type()
    if device_type == "meta":
        return
    if len(devices) > 0:
        raise NotImplementedError(
            f"set_device_states: ferrograd has no {device_type} devices (CPU only)"
        )


@contextlib.contextmanager
def _fork_rng(enabled=True):
    """``torch.random.fork_rng`` for the CPU: the default generator's state is restored on
    exit."""
    if not enabled:
        yield
        return
    state = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(state)


def _is_checkpoint_valid():
    """``torch.autograd._is_checkpoint_valid()``: False while the running backward (or one it
    is nested in) was started by ``autograd.grad()`` or by ``backward(inputs=...)``.

    The engine does not tell which backward is running, so until it does
    (``ferrograd.autograd._is_checkpoint_valid``), this looks for the ``autograd.grad`` and
    ``autograd.backward`` calls on the Python stack: every backward starts from one of them.
    """
    native = getattr(autograd, "_is_checkpoint_valid", None)
    if native is not None:
        return native()
    grad_code = autograd.grad.__code__
    backward_code = autograd.backward.__code__
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is grad_code:
            return False
        if frame.f_code is backward_code and frame.f_locals.get("inputs") is not None:
            return False
        frame = frame.f_back
    return True


class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = default_generator.get_state()

        # Save non-tensor inputs in ctx, keep a placeholder None for tensors
        # to be filled out during the backward.
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if is_tensor(arg):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)

        ctx.save_for_backward(*tensor_inputs)

        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible"
                " with .grad() or passing an `inputs` parameter to .backward()."
                " To resolve this error, you can either set use_reentrant=False,"
                " or call .backward() without passing the `inputs` argument."
            )
        # Copy the list to avoid modifying original list.
        inputs = list(ctx.inputs)
        tensor_indices = ctx.tensor_indices
        tensors = ctx.saved_tensors

        # Fill in inputs with appropriate saved tensors.
        for i, idx in enumerate(tensor_indices):
            if ctx.needs_input_grad[idx + 2] and not tensors[i].requires_grad:
                raise NotImplementedError(_unpack_requires_grad_msg.format(
                    "checkpoint(use_reentrant=True) inside checkpoint(use_reentrant=False) "
                    "or under saved_tensors_hooks"))
            inputs[idx] = tensors[i]

        # Stash the surrounding rng state, and mimic the state that was
        # present at this time during forward.  Restore the surrounding state
        # when we're done.
        with _fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                default_generator.set_state(ctx.fwd_cpu_state)
            detached_inputs = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached_inputs)

        if isinstance(outputs, Tensor):
            outputs = (outputs,)

        # run backward() with only tensor that requires grad
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if is_tensor(outputs[i]) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError(
                "none of output has requires_grad=True,"
                " this checkpoint() is not necessary"
            )
        autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(
            inp.grad if isinstance(inp, Tensor) else None
            for inp in detached_inputs
        )

        return (None, None) + grads


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(
    function,
    *args,
    use_reentrant=None,
    context_fn=noop_context_fn,
    determinism_check=_DEFAULT_DETERMINISM_MODE,
    debug=False,
    early_stop=True,
    **kwargs,
):
    r"""Checkpoint a model or part of the model.

    Tensors computed inside :attr:`function` are not kept for the backward pass: only the
    inputs in :attr:`args` are, and :attr:`function` is run again during backward to
    recompute what the gradient formulas need. ``use_reentrant=False`` is recommended;
    ``use_reentrant=True`` only works with ``.backward()`` without ``inputs`` and needs an
    input that requires grad.

    Keyword args:
        preserve_rng_state (bool): restore the RNG state of the forward before recomputing
            (so that dropout draws the same mask). Default: ``True``.
        use_reentrant (bool): which implementation to use; should be passed explicitly.
        context_fn: returns two context managers, the forward and the recomputation run
            under them (``use_reentrant=False`` only).
        determinism_check (str): ``"default"`` compares shapes, dtypes and devices of the
            recomputed tensors with those saved in the forward; ``"none"`` turns it off.
        debug (bool): not supported by ferrograd.
        early_stop (bool): stop the recomputation once all needed tensors are recomputed
            (``use_reentrant=False`` only).

    Returns:
        Output of running :attr:`function` on :attr:`*args`
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True

    # Hack to mix *args with **kwargs in a python 2.7-compliant way
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError(
            "Unexpected keyword arguments: " + ",".join(arg for arg in kwargs)
        )

    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when "
                "use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve, *args)
    else:
        gen = _checkpoint_without_reentrant_generator(
            function, preserve, context_fn, determinism_check, debug, early_stop, *args, **kwargs
        )
        # Runs pre-forward logic
        next(gen)
        try:
            ret = function(*args, **kwargs)
        except BaseException as e:
            try:
                gen.throw(e)
            except StopIteration as stop:
                raise RuntimeError(
                    "torch.utils.checkpoint: the forward context provided by "
                    "context_fn suppressed an exception raised during the "
                    "checkpointed forward. This is not supported because "
                    "checkpoint cannot return a value for a failed forward."
                ) from stop
            raise
        # Runs post-forward logic
        try:
            next(gen)
        except StopIteration:
            return ret
        raise AssertionError(
            "torch.utils.checkpoint: expected context_fn generator to yield "
            "exactly twice, but it yielded more than twice."
        )


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    r"""Checkpoint a sequential model to save memory.

    The modules (or functions) run in order, split into :attr:`segments` chunks; every chunk
    but the last is checkpointed, so only its input is kept for backward.

    Args:
        functions: a :class:`nn.Sequential` or a list of modules or functions.
        segments: number of chunks to create in the model.
        input: a Tensor that is input to :attr:`functions`.
        preserve_rng_state (bool, optional): Default: ``True``.
        use_reentrant (bool): as for :func:`checkpoint`; should be passed explicitly.

    Returns:
        Output of running :attr:`functions` sequentially on :attr:`*inputs`
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True

    # Hack for keyword-only parameter in a python 2.7-compliant way
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError(
            "Unexpected keyword arguments: " + ",".join(arg for arg in kwargs)
        )

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    if isinstance(functions, Sequential):
        functions = list(functions.children())

    segment_size = len(functions) // segments
    # the last chunk has to be non-volatile
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(
            run_function(start, end, functions),
            input,
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve,
        )
    return run_function(end + 1, len(functions) - 1, functions)(input)


def _internal_assert(cond):
    if not cond:
        raise AssertionError(
            "Something went unexpectedly wrong in activation checkpoint. "
            "Please report this bug by filing an issue to PyTorch."
        )


# The rules of nested checkpoints, the lifetime of recomputed tensors (cleared as soon as
# they are unpacked, even with retain_graph=True), early stopping and backward inside a
# checkpointed function are those of PyTorch: see NOTE [ Nestable Checkpoint ] in
# torch/utils/checkpoint.py.

_enable_checkpoint_early_stop = None


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Controls whether non-reentrant checkpoints created inside it stop the recomputation
    as soon as all needed tensors are recomputed (the default)."""
    global _enable_checkpoint_early_stop
    try:
        prev = _enable_checkpoint_early_stop
        _enable_checkpoint_early_stop = enable
        yield
    finally:
        _enable_checkpoint_early_stop = prev


class _Handle:
    pass


class _Holder:
    def __init__(self):
        self.handles = {}
        # whether the saved tensor required grad (see _unpacked_tensors_reattached)
        self.requires_grad = False


class _NoopSaveInputs(Function):
    """Saves the checkpoint's tensor inputs on a node outside the graph, so that the saved
    tensor hooks of an enclosing checkpoint see them (the inputs of an inner checkpoint are
    saved tensors of its parent); PyTorch 2.13 uses ``_make_saved_tensor`` for this."""

    @staticmethod
    def forward(ctx, dummy, *tensors):
        ctx.save_for_backward(*tensors)
        return empty((0,))

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise AssertionError("Did not expect to backward on this graph")


class _CheckpointFrame:
    def __init__(self, recompute_fn, early_stop, unpack_error_cb, metadata_fn):
        self.recompute_fn = recompute_fn
        self.saved_args = []
        self.tensor_indices = []
        self.inputs_requires_grad = []
        self.input_saver = None
        self.weak_holders = []
        # A WeakKeyDictionary so that in the case of a partial backward, the entries are
        # cleared alongside the Holder, removed when the saved tensor is cleared.
        self.recomputed = defaultdict(weakref.WeakKeyDictionary)
        self.recomp_counter = defaultdict(int)
        self.is_recomputed = defaultdict(bool)
        # the id of the latest recomputation, when the engine does not give the backward's
        self.latest_gid = None

        self.early_stop = early_stop

        self.metadata_fn = metadata_fn
        self.unpack_error_cb = unpack_error_cb
        self.x_metadatas = []
        self.forward_completed = False
        self.ignore_saved_mismatch = False

    def save_inputs(self, *args):
        self.saved_args = [None if isinstance(arg, Tensor) else arg for arg in args]
        self.tensor_indices = [i for i, arg in enumerate(args) if isinstance(arg, Tensor)]
        tensors = [args[i] for i in self.tensor_indices]
        self.inputs_requires_grad = [t.requires_grad for t in tensors]
        dummy = empty((0,), requires_grad=True)
        self.input_saver = _NoopSaveInputs.apply(dummy, *tensors)

    def get_inputs(self):
        args = list(self.saved_args)
        # may unpack tensors saved to an enclosing checkpoint, and so recompute it
        saved = self.input_saver.grad_fn.saved_tensors
        for i, requires_grad, tensor in zip(self.tensor_indices, self.inputs_requires_grad, saved):
            if requires_grad and not tensor.requires_grad:
                raise NotImplementedError(_unpack_requires_grad_msg.format(
                    "checkpoint(use_reentrant=False) inside another one, or under "
                    "saved_tensors_hooks"))
            args[i] = tensor
        return args

    def check_recomputed_tensors_match(self, gid):
        if self.ignore_saved_mismatch:
            return
        # 1. During recompute, more tensors were saved: hidden by the early stop, or caught
        #    by the recomputation hook.
        if not len(self.weak_holders) == self.recomp_counter[gid]:
            # 2. During recompute, fewer tensors were saved
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved "
                "during the original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter[gid]}.\n"
                f"{_debug_tip_msg}"
            )

        # 3. During recompute, the same tensors were saved, but they have different metadata
        nb_meta_different = []
        for idx, weak_holder in enumerate(self.weak_holders):
            holder = weak_holder()
            if holder is None:
                continue
            _internal_assert(gid in holder.handles)
            _internal_assert(holder.handles[gid] is not None)
            _internal_assert(holder.handles[gid] in self.recomputed[gid])
            x_meta = self.x_metadatas[idx]
            recomputed_x = self.recomputed[gid][holder.handles[gid]]
            if x_meta != self.metadata_fn(recomputed_x):
                nb_meta_different.append((idx, x_meta, self.metadata_fn(recomputed_x)))

        if len(nb_meta_different) > 0:
            mismatched_tensors = ""
            for idx, x_meta, recomputed_meta in nb_meta_different:
                mismatched_tensors += (
                    f"tensor at position {idx}:\n"
                    f"saved metadata: {x_meta}\n"
                    f"recomputed metadata: {recomputed_meta}\n"
                )
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors "
                "have different metadata than during the forward pass.\n"
                f"{mismatched_tensors}.\n"
                f"{_debug_tip_msg}"
            )


_debug_tip_msg = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint‑debug mode globally.

If this error occurs under torch.compile with automatic_dynamic_shapes enabled,
it may be because the recomputation selected a different compiled graph than the
forward pass (e.g., a dynamic graph instead of the original static graph).
To fix this, either:
  - Use torch._dynamo.mark_dynamic() to explicitly mark varying dimensions as
    dynamic upfront, avoiding the static-to-dynamic transition.
  - Call torch._C._dynamo.eval_frame._set_lru_cache(False) to disable LRU cache
    reordering, which can change which graph is checked first between forward
    and recompute.
See https://github.com/pytorch/pytorch/issues/166926 for more details and
workaround examples.
"""


class CheckpointError(RuntimeError):
    pass


def _default_meta_extractor(x):
    # These properties are fast to check, easy to understand
    return {
        "shape": x.shape,
        "dtype": x.dtype,
        "device": x.device,
    }


_allowed_determinism_checks_to_fns = {
    _DEFAULT_DETERMINISM_MODE: _default_meta_extractor,
    "none": lambda _: None,
}


# Raised by the recomputation hook once every needed tensor is recomputed (early stop)
class _StopRecomputationError(Exception):
    pass


class _recomputation_hook(saved_tensors_hooks):
    def __init__(self, target_frame_ref, gid):
        def pack_hook(x):
            x = x.detach() if x.requires_grad else x
            target_frame = target_frame_ref()
            if target_frame is None:
                raise AssertionError("Internal error: target_frame reference is None")
            recomp_idx = target_frame.recomp_counter[gid]
            target_frame.recomp_counter[gid] += 1

            if recomp_idx >= len(target_frame.weak_holders):
                if target_frame.early_stop:
                    raise AssertionError("Unexpected state: target_frame.early_stop is set")
                if not target_frame.forward_completed:
                    # Early stop is disabled and a backward runs inside the checkpointed
                    # function: do not error out later when comparing the counts.
                    target_frame.ignore_saved_mismatch = True
                    return x
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during "
                    "recomputation than during the original forward pass.\n"
                    f"{_debug_tip_msg}"
                )

            holder = target_frame.weak_holders[recomp_idx]()

            # This holder may have been cleared because someone may have called
            # backward within forward. If so, we don't need to save.
            if holder is not None:
                _internal_assert(holder.handles.get(gid, None) is None)
                holder.handles[gid] = _Handle()
                target_frame.recomputed[gid][holder.handles[gid]] = x

            if target_frame.early_stop and target_frame.recomp_counter[gid] == len(
                target_frame.weak_holders
            ):
                raise _StopRecomputationError
            # The graph of the recomputation may itself be backwarded (a backward inside the
            # checkpointed function): save the tensor for it.
            return x

        def unpack_hook(x):
            return x

        super().__init__(pack_hook, unpack_hook)


# ferrograd's engine gives an unpacked saved tensor back as the unpack hook returned it: PyTorch
# gives it the autograd identity (requires_grad, grad_fn or leaf) of the tensor that was saved.
# A recomputed tensor that required grad is therefore not handed out while grad mode is on (a
# backward with create_graph=True would differentiate through it), and the inputs of a
# checkpoint that come back from an enclosing checkpoint without requires_grad are refused
# (the recomputation would record nothing). Set to True once the engine reattaches them.
_unpacked_tensors_reattached = True

_unpack_requires_grad_msg = (
    "ferrograd.utils.checkpoint: {} is not supported: a saved tensor that required grad "
    "comes back from the saved tensor hooks without requires_grad, because the engine does "
    "not reattach unpacked saved tensors to the autograd graph"
)


def _current_graph_task_id():
    """The id of the running backward, -1 outside one or when the engine does not say."""
    native = getattr(_core, "_current_graph_task_id", None)
    return native() if native is not None else -1


class _checkpoint_hook(saved_tensors_hooks):
    def __init__(self, frame):
        def pack_hook(x):
            holder = _Holder()
            holder.requires_grad = x.requires_grad
            frame.weak_holders.append(weakref.ref(holder))
            # Save metadata to detect non-determinism
            if frame.metadata_fn is not None:
                with no_grad():
                    frame.x_metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack_hook(holder):
            if (holder.requires_grad and is_grad_enabled()
                    and not _unpacked_tensors_reattached):
                raise NotImplementedError(_unpack_requires_grad_msg.format(
                    "unpacking a tensor saved inside checkpoint(use_reentrant=False) while "
                    "grad mode is enabled (e.g. backward with create_graph=True)"))
            gid = GraphExecGroup._get_current_group()
            if gid is None:
                gid = _current_graph_task_id()
                if gid == -1 and hasattr(_core, "_current_graph_task_id"):
                    # unpack outside of a backward call: a temporary id
                    gid = int(uuid.uuid4())
                elif gid == -1:
                    # The engine does not tell which backward is running: reuse the latest
                    # recomputation while it still holds this tensor, else recompute.
                    gid = frame.latest_gid
                    if gid is None or holder.handles.get(gid) is None:
                        gid = frame.latest_gid = int(uuid.uuid4())

            if not frame.is_recomputed[gid]:
                args = frame.get_inputs()

                try:
                    with _recomputation_hook(weakref.ref(frame), gid), enable_grad():
                        frame.recompute_fn(*args)
                except _StopRecomputationError:
                    pass
                frame.is_recomputed[gid] = True
                frame.check_recomputed_tensors_match(gid)

            _internal_assert(gid in holder.handles)

            if holder.handles[gid] is None:
                extra = ""
                if GraphExecGroup._get_current_group() is not None:
                    extra = (
                        "Performing two backward calls that overlap (i.e. require the same "
                        "saved activation in order to compute gradients) is not allowed while "
                        "under the torch.utils.checkpoint.GraphExecGroup context. "
                    )
                raise CheckpointError(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was "
                    f"already unpacked once. {extra}If you are calling ctx.saved_tensors in "
                    "backward, make sure to do so only once. Otherwise please open an issue "
                    "with details on your use case."
                )
            _internal_assert(holder.handles[gid] in frame.recomputed[gid])
            ret = frame.recomputed[gid][holder.handles[gid]]
            holder.handles[gid] = None
            return ret

        if frame.unpack_error_cb is not None:
            def unpack_hook_with_error_cb(holder):
                try:
                    return unpack_hook(holder)
                except CheckpointError as e:
                    frame.unpack_error_cb(e)
            super().__init__(pack_hook, unpack_hook_with_error_cb)
        else:
            super().__init__(pack_hook, unpack_hook)


class SelectiveCheckpointContext:
    """Context passed to the policy function of selective checkpointing."""

    def __init__(self, *, is_recompute, op_output=None):
        self.is_recompute = is_recompute
        self.op_output = op_output


class CheckpointPolicy(enum.Enum):
    """Whether an operation's output is saved or recomputed (selective checkpointing)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    raise NotImplementedError(
        "ferrograd.utils.checkpoint.create_selective_checkpoint_contexts: selective "
        "activation checkpointing needs TorchDispatchMode, which ferrograd does not have"
    )


def _checkpoint_without_reentrant_generator(
    fn,
    preserve_rng_state=True,
    context_fn=noop_context_fn,
    determinism_check=_DEFAULT_DETERMINISM_MODE,
    debug=False,
    early_stop=True,
    *args,
    **kwargs,
):
    """Checkpointing without reentrant autograd: a generator that yields once before the
    forward of ``fn`` (run by the caller) and returns after it; the arguments are those
    of :func:`checkpoint`."""
    unpack_error_cb = None

    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError(
                "debug=True is incompatible with non-default context_fn"
            )
        raise NotImplementedError(
            "ferrograd.utils.checkpoint: debug=True (checkpoint debug mode) is not "
            "supported: it logs operators with TorchDispatchMode, which ferrograd does not have"
        )

    if determinism_check in _allowed_determinism_checks_to_fns:
        metadata_fn = _allowed_determinism_checks_to_fns[determinism_check]
    else:
        raise ValueError(
            f"determinism_check should be one of {list(_allowed_determinism_checks_to_fns.keys())}, "
            f"but got {determinism_check}"
        )

    forward_context, recompute_context = context_fn()

    if preserve_rng_state:
        fwd_cpu_state = default_generator.get_state()

    def recompute_fn(*args):
        # Called later during recomputation; this wrapping captures the global state.
        with _fork_rng(enabled=preserve_rng_state):
            if preserve_rng_state:
                default_generator.set_state(fwd_cpu_state)
            with recompute_context:
                fn(*args, **kwargs)

    new_frame = _CheckpointFrame(
        recompute_fn,
        _enable_checkpoint_early_stop if _enable_checkpoint_early_stop is not None else early_stop,
        unpack_error_cb,
        metadata_fn,
    )

    if not is_grad_enabled():
        yield
        return

    new_frame.save_inputs(*args)

    forward_context_suppressed_exc = False
    with _checkpoint_hook(new_frame), forward_context:
        try:
            yield
        except BaseException:
            forward_context_suppressed_exc = True
            raise
    if forward_context_suppressed_exc:
        raise RuntimeError(
            "torch.utils.checkpoint: the forward context provided by "
            "context_fn suppressed an exception raised during the "
            "checkpointed forward. This is not supported because checkpoint "
            "cannot return a value for a failed forward."
        )
    new_frame.forward_completed = True

    return


_graph_exec_group = threading.local()


class GraphExecGroup:
    """Checkpointed regions reached by backward calls under the same instance of this
    context manager are recomputed at most once, even over several backward calls; those
    calls must not need the same saved activation. Only affects ``use_reentrant=False``."""

    def __enter__(self):
        current = getattr(_graph_exec_group, "group", None)
        if current is not None:
            raise RuntimeError(
                "GraphExecGroup contexts cannot be nested. "
                f"Already inside group {current}"
            )
        _graph_exec_group.group = self
        return self

    def __exit__(self, *args):
        _graph_exec_group.group = None

    @classmethod
    def _get_current_group(cls):
        return getattr(_graph_exec_group, "group", None)
