"""``torch.func.functional_call`` and ``stack_module_state``: a module called with parameters
and buffers given in a dict, the module's own being swapped out for the call and back after
(PyTorch's ``torch.nn.utils.stateless``)."""

from collections.abc import Sequence

from .._core import Tensor, stack
from ..nn.modules.module import Module

__all__ = ["functional_call", "stack_module_state"]

_MISSING = object()


def _swap_tensor(module, name, tensor):
    """Puts ``tensor`` at ``name`` of ``module`` (``_MISSING``: removes it) and returns what was
    there (``_MISSING`` if nothing)."""
    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of torch.nn.Module")
    if tensor is not _MISSING and not isinstance(tensor, Tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    for store in (module._parameters, module._buffers):
        if name in store:
            orig = store[name]
            if tensor is _MISSING:
                del store[name]
            else:
                store[name] = tensor
            return orig
    orig = getattr(module, name) if hasattr(module, name) else _MISSING
    if orig is not _MISSING and not isinstance(orig, Tensor) and orig is not None:
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig


class _Accessor:
    """Submodules by dotted path, cached (PyTorch's NamedMemberAccessor)."""

    def __init__(self, module):
        self.module = module
        self.memo = {}

    def get_submodule(self, name):
        if not name:
            return self.module
        if name not in self.memo:
            prefix, dot, attr = name.rpartition(".")
            parent = self.get_submodule(prefix) if dot else self.module
            try:
                sub = getattr(parent, attr)
            except AttributeError as ex:
                raise AttributeError(f"{parent._get_name()} has no attribute `{attr}`") from ex
            if not isinstance(sub, Module):
                raise TypeError(f"submodule `{name}`: {sub} is not an instance of torch.nn.Module")
            self.memo[name] = sub
        return self.memo[name]

    def swap(self, name, value):
        prefix, _, attr = name.rpartition(".")
        return _swap_tensor(self.get_submodule(prefix), attr, value)

    def swap_dict(self, named):
        orig = {}
        try:
            for name, tensor in named.items():
                orig[name] = self.swap(name, tensor)
        except Exception:
            for name, tensor in orig.items():
                self.swap(name, tensor)
            raise
        return orig

    def check_keys(self, keys):
        keys = set(keys)
        valid = {n for n, _ in self.module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in self.module.named_buffers(remove_duplicate=False)}
        return sorted(valid - keys), sorted(keys - valid)


def _untie_named_tensors_map(module, parameters_and_buffers):
    """Adds the names tied to a given name (one tensor under several names) with its value;
    refuses different values for tied names."""
    all_named = dict(module.named_parameters(remove_duplicate=False))
    all_named.update(module.named_buffers(remove_duplicate=False))
    names_of = {}  # id(tensor) -> its names
    for name, t in all_named.items():
        names_of.setdefault(id(t), set()).add(name)
    tied = {n: names for names in names_of.values() if len(names) > 1 for n in names}
    given_tied = {n for n in parameters_and_buffers if n in tied}
    for n in given_tied:
        names = tied[n]
        values = {id(parameters_and_buffers[m]) for m in names if m in parameters_and_buffers}
        if len(names & given_tied) > 1 and len(values) != 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                "Consider using tie_weights=False"
            )
    untied = dict(parameters_and_buffers)
    for n in given_tied:
        for m in tied[n]:
            untied[m] = parameters_and_buffers[n]
    return untied


def _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights, strict):
    named = (_untie_named_tensors_map(module, parameters_and_buffers) if tie_weights
             else parameters_and_buffers)
    accessor = _Accessor(module)
    if strict:
        missing, unexpected = accessor.check_keys(named)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError(
                "Error(s) in reparametrizing for {}:\n\t{}".format(
                    module._get_name(), "\n\t".join(msgs))
            )
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    orig = {}
    try:
        orig = accessor.swap_dict(named)
        return module(*args, **kwargs)
    finally:
        new = accessor.swap_dict(orig)
        # a module that reassigned a parameter or buffer in place of the given one: the new
        # value goes back to the caller's dict, as in PyTorch
        parameters_and_buffers.update(
            {k: new[k] for k in parameters_and_buffers if k in new and new[k] is not _MISSING})


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Calls ``module(*args, **kwargs)`` with its parameters and buffers replaced by the tensors
    of ``parameter_and_buffer_dicts`` (a dict by dotted name, or a sequence of dicts), restored
    afterwards. ``tie_weights``: a value given for one of several tied names applies to all;
    ``strict``: the names must be exactly the module's."""
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError(
                "Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(
                f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                "ambiguous"
            )
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
            f"{type(parameter_and_buffer_dicts)}"
        )
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def stack_module_state(models):
    """``(params, buffers)``: each parameter and buffer of the (same-class) ``models`` stacked
    along a new first dimension, for ``vmap`` over ``functional_call`` (model ensembling)."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(tensors, name):
        all_rg = all(t.requires_grad for t in tensors)
        if not all_rg and any(t.requires_grad for t in tensors):
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        result = stack(list(tensors))
        if all_rg:
            result = result.detach().requires_grad_()
        return result

    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: stacked([p[k] for p in all_params], k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: stacked([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers
