"""``torch.func.vmap`` as a Python loop: ``func`` runs once per batch element, on the slices
of the batched inputs, and the results are stacked along ``out_dims``.

The values are PyTorch's; the cost is ``batch size`` calls of ``func`` (a UserWarning says so,
once per process). ``randomness`` behaves as in PyTorch: ``"error"`` refuses random ops in
``func`` (detected through the default generator's state), ``"same"`` gives every element the
same random draws, ``"different"`` independent ones. An output with ``out_dims=None`` must be
the same for every element (else PyTorch's "can not return a BatchedTensor" error).
"""

import functools
import warnings

from .._core import Tensor, default_generator, stack
from ..autograd import _transforms
from ._eager_transforms import _RANDOMNESS_ERROR, _check_randomness_arg
from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["vmap"]

_warned = False


def _warn_loop():
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            "ferrograd's torch.func.vmap runs the function once per batch element in a Python "
            "loop and stacks the results (there are no batching rules): the values are "
            "PyTorch's, the speed is that of the loop.",
            UserWarning,
            stacklevel=3,
        )


def _get_name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def _process_batched_inputs(in_dims, args, func):
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
            f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}."
        )
    if len(args) == 0:
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
            "trying to vmap over a function with no inputs. The latter is unsupported."
        )
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = broadcast_prefix(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
            f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs "
            f"has structure {args_spec}."
        )
    for i, (arg, in_dim) in enumerate(zip(flat_args, flat_in_dims)):
        if not isinstance(in_dim, int) and in_dim is not None:
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an "
                "input but in_dim must be either an integer dimension or None."
            )
        if isinstance(in_dim, int) and not isinstance(arg, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an "
                f"input but the input is of type {type(arg)}. We cannot vmap over non-Tensor "
                "arguments, please use None as the respective in_dim"
            )
        if in_dim is not None and (in_dim < -arg.dim() or in_dim >= arg.dim()):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for some "
                f"input, but that input is a Tensor of dimensionality {arg.dim()} so expected "
                f"in_dim to satisfy -{arg.dim()} <= in_dim < {arg.dim()}."
            )
        if in_dim is not None and in_dim < 0:
            flat_in_dims[i] = in_dim % arg.dim()
    sizes = [a.size(d) for d, a in zip(flat_in_dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return sizes[0], flat_in_dims, flat_args, args_spec


def _check_out_dims(out_dims, func):
    if isinstance(out_dims, int):
        return
    for d in tree_flatten(out_dims)[0]:
        if d is not None and not isinstance(d, int):
            raise ValueError(
                f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                "None or a python collection of ints representing where in the outputs the "
                "vmapped dimension should appear."
            )


def _flat_out_dims(out_dims, outputs, output_spec, func):
    def incompatible():
        return ValueError(
            f"vmap({_get_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
            "compatible with the structure of `outputs`. out_dims has structure "
            f"{tree_flatten(out_dims)[1]} but outputs has structure {output_spec}."
        )

    if isinstance(outputs, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        raise incompatible()
    flat = broadcast_prefix(out_dims, output_spec)
    if flat is None:
        raise incompatible()
    return flat


def _same(values):
    first = values[0]
    for v in values[1:]:
        if isinstance(first, Tensor) and isinstance(v, Tensor):
            if tuple(v.shape) != tuple(first.shape) or not bool((v == first).all()):
                return False
        elif v is not first and v != first:
            return False
    return True


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over dimension ``in_dims`` of its inputs (a pytree prefix of the
    arguments; None: not mapped), the results stacked along ``out_dims``. Runs as a Python loop
    over the batch (see the module docstring)."""
    _check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _warn_loop()
        _check_out_dims(out_dims, func)
        batch_size, flat_in_dims, flat_args, args_spec = _process_batched_inputs(
            in_dims, args, func)
        if batch_size == 0:
            raise NotImplementedError(
                "ferrograd's vmap runs the function once per batch element, so it cannot map "
                "over a batch of size 0"
            )
        start_state = default_generator.get_state()
        per_sample = []
        with _transforms.running("vmap"):
            for b in range(batch_size):
                if randomness == "same":
                    default_generator.set_state(start_state)
                sample = [a if d is None else a.select(d, b)
                          for a, d in zip(flat_args, flat_in_dims)]
                before = default_generator.get_state().tolist() if randomness == "error" else None
                out = func(*tree_unflatten(sample, args_spec), **kwargs)
                if before is not None and default_generator.get_state().tolist() != before:
                    raise RuntimeError(_RANDOMNESS_ERROR)
                per_sample.append(out)
        flat_first, output_spec = tree_flatten(per_sample[0])
        flat_outs = [flat_first]
        for out in per_sample[1:]:
            flat, spec = tree_flatten(out)
            if spec != output_spec:
                raise ValueError(
                    f"vmap({_get_name(func)}, ...): `{_get_name(func)}` returned outputs of "
                    "different structures for different batch elements, which a batched run "
                    "cannot do"
                )
            flat_outs.append(flat)
        flat_out_dims = _flat_out_dims(out_dims, per_sample[0], output_spec, func)
        name = _get_name(func)
        results = []
        for j, out_dim in enumerate(flat_out_dims):
            values = [flat[j] for flat in flat_outs]
            if out_dim is None:
                if isinstance(values[0], Tensor) and not _same(values):
                    raise ValueError(
                        f"vmap({name}, ...): `{name}` can not return a BatchedTensor when "
                        "out_dim is None"
                    )
                results.append(values[0])
                continue
            if not isinstance(values[0], Tensor):
                raise ValueError(
                    f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                    f"{type(values[0])}. Did you mean to set out_dims= to None for output?"
                )
            ndim = values[0].dim() + 1
            if not -ndim <= out_dim < ndim:
                raise IndexError(
                    f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                    f"but got {out_dim})"
                )
            results.append(stack(values, out_dim % ndim))
        return tree_unflatten(results, output_spec)

    return wrapped
