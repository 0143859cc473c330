"""Base optimizer."""

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain

from .._core import Tensor, is_grad_enabled
from .._dtype import float32, float64, get_default_dtype
from .._factories import tensor
from .._functions import is_tensor
from ..autograd.grad_mode import enable_grad, set_grad_enabled
from ..nn.modules.module import _register_hook, _typename, _zero_grads

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

_global_optimizer_pre_hooks: OrderedDict[int, Callable] = OrderedDict()  # by handle id
_global_optimizer_post_hooks: OrderedDict[int, Callable] = OrderedDict()


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _use_grad_for_differentiable(func):
    """Runs ``step`` with grad mode set to ``defaults['differentiable']`` (always False here)."""

    @functools.wraps(func)
    def _use_grad(self, *args, **kwargs):
        prev_grad = is_grad_enabled()
        try:
            set_grad_enabled(self.defaults["differentiable"])
            ret = func(self, *args, **kwargs)
        finally:
            set_grad_enabled(prev_grad)
        return ret

    return _use_grad


@_use_grad_for_differentiable
def _builtin_step(self, closure=None):
    """Perform a single optimization step.

    Args:
        closure (Callable, optional): A closure that reevaluates the model
            and returns the loss.
    """
    return self._step_param_groups(closure)


def _get_scalar_dtype():
    return float64 if get_default_dtype() == float64 else float32


def _to_scalar(x):
    """A 1-element tensor hyper-parameter becomes 0-dim; anything else is kept as is."""
    if isinstance(x, Tensor) and x.dim() != 0:
        return x.squeeze()
    return x


def _as_float(name, x):
    """A hyper-parameter as a Python number for the native step (tensor hyper-parameters are read)."""
    if isinstance(x, Tensor):
        if x.requires_grad:
            raise NotImplementedError(
                f"ferrograd.optim does not support a {name} Tensor that requires grad "
                "(differentiable optimizers are not supported)"
            )
        return x.item()
    return x


def _check_non_negative(value, description):
    """Raises ``ValueError`` unless ``0.0 <= value`` (so NaN is invalid too)."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {description}: {value}")


def _check_unsupported(optimizer_name, options):
    """Raises ``NotImplementedError`` for options torch supports and ferrograd does not.

    ``options`` maps each such option's name to its value (taken from a parameter group
    or from the arguments of a functional API).
    """
    for option, value in options.items():
        if value:
            raise NotImplementedError(f"ferrograd.optim.{optimizer_name} does not support {option}=True")


def _check_functional_args(
    optimizer_name, options, has_sparse_grad=False, grad_scale=None, found_inf=None, state_steps=None
):
    """The argument checks shared by the functional APIs (``sgd``, ``adam``, ...)."""
    _check_unsupported(optimizer_name, options)
    if has_sparse_grad:
        raise NotImplementedError(f"ferrograd.optim.{optimizer_name} does not support sparse gradients")
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError(f"ferrograd.optim.{optimizer_name} does not support grad_scale / found_inf (AMP)")
    if state_steps is not None and not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")


def _evaluate_closure(closure):
    """The loss returned by ``closure`` run with grad enabled (``None`` without a closure)."""
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _step_to_tensor(optimizer, group):
    """Turns a ``step`` saved as a Python number (older state dicts) into a scalar tensor."""
    for p in group["params"]:
        p_state = optimizer.state.get(p, [])
        if len(p_state) != 0 and not is_tensor(p_state["step"]):
            p_state["step"] = tensor(float(p_state["step"]), dtype=_get_scalar_dtype())


def register_optimizer_step_pre_hook(hook):
    """Register a pre hook common to all optimizers: ``hook(optimizer, args, kwargs)``."""
    return _register_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """Register a post hook common to all optimizers: ``hook(optimizer, args, kwargs)``."""
    return _register_hook(_global_optimizer_post_hooks, hook)


class Optimizer:
    r"""Base class for all optimizers.

    Args:
        params (iterable): an iterable of :class:`Tensor` s or :class:`dict` s
            (parameter groups), or of ``(name, Tensor)`` pairs.
        defaults (dict): default values of the optimization options, used when a
            parameter group doesn't specify them.
    """

    # options of torch's built-in optimizers that ferrograd's do not implement (set by subclasses)
    _unsupported_options: tuple[str, ...] = ()

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()

        self._patch_step_function()

        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be "
                "an iterable of Tensors or dicts, but got " + _typename(params)
            )

        self.state = defaultdict(dict)
        self.param_groups = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]

        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {
            "defaults": self.defaults,
            "state": self.state,
            "param_groups": self.param_groups,
        }

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in (
            "_optimizer_step_pre_hooks",
            "_optimizer_step_post_hooks",
            "_optimizer_state_dict_pre_hooks",
            "_optimizer_state_dict_post_hooks",
            "_optimizer_load_state_dict_pre_hooks",
            "_optimizer_load_state_dict_post_hooks",
        ):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for name, default in self._setstate_group_defaults:
                group.setdefault(name, default)
            if self._setstate_step_to_tensor:
                _step_to_tensor(self, group)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    @staticmethod
    def profile_hook_step(func):
        """Wraps ``step`` so that the step pre- and post-hooks run around it."""

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self, *_ = args
            for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(
                            f"{func} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                        )
            out = func(*args, **kwargs)
            for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out

        return wrapper

    def _patch_step_function(self):
        hooked = getattr(self.__class__.step, "hooked", None)
        if not hooked:
            self.__class__.step = self.profile_hook_step(self.__class__.step)
            self.__class__.step.hooked = True

    def register_step_pre_hook(self, hook):
        """Register a hook ``hook(optimizer, args, kwargs) -> None or (args, kwargs)`` run before ``step``."""
        return _register_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """Register a hook ``hook(optimizer, args, kwargs) -> None`` run after ``step``."""
        return _register_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """Register a hook ``hook(optimizer) -> None`` run before ``state_dict``."""
        return _register_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """Register a hook ``hook(optimizer, state_dict) -> state_dict or None`` run after ``state_dict``."""
        return _register_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """Register a hook ``hook(optimizer, state_dict) -> state_dict or None`` run before ``load_state_dict``."""
        return _register_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """Register a hook ``hook(optimizer) -> None`` run after ``load_state_dict``."""
        return _register_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def state_dict(self):
        r"""Return the state of the optimizer as a :class:`dict`.

        ``state`` maps parameter ids (their order across the groups) to their state;
        ``param_groups`` holds each group's options with ``params`` as a list of ids.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)

        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update(
                {id(p): i for i, p in enumerate(group["params"], start_index) if id(p) not in param_mappings}
            )
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {
            (param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()
        }
        state_dict = {"state": packed_state, "param_groups": param_groups}

        for post_hook in self._optimizer_state_dict_post_hooks.values():
            hook_result = post_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        # Floating-point state takes the dtype of its parameter; ``step`` keeps its own dtype.
        fused = False
        capturable = False
        for pg in param_groups:
            if param_id in pg["params"]:
                fused = pg.get("fused", False)
                capturable = pg.get("capturable", False)
                break
        if key == "step":
            if capturable or fused:
                return value.to(dtype=float32, device=param.device)
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict):
        r"""Load the optimizer state.

        Args:
            state_dict (dict): optimizer state. Should be an object returned
                from a call to :meth:`state_dict`.
        """
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            hook_result = pre_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result

        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])

        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )

        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in groups),
            )
        )

        def _cast(param, value, param_id=None, param_groups=None, key=None):
            """Copy ``value``, casting its tensors to the parameter's dtype as torch does."""
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, param_id, param_groups, key)
            if isinstance(value, dict):
                return {
                    k: _cast(param, v, param_id=param_id, param_groups=param_groups, key=k) for k, v in value.items()
                }
            if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
                return type(value)(_cast(param, v, param_id=param_id, param_groups=param_groups) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k, param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})

        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    def zero_grad(self, set_to_none=True):
        r"""Reset the gradients of all optimized tensors (to ``None`` by default, else to zeros)."""
        _zero_grads(chain.from_iterable(group["params"] for group in self.param_groups), set_to_none)

    # What ``__setstate__`` fills in for a state saved by an older version: the group options
    # it may lack, as (name, default) pairs, and whether each parameter's ``step`` count (saved
    # as a Python number then) becomes a tensor. Set by the built-in optimizers.
    _setstate_group_defaults: tuple = ()
    _setstate_step_to_tensor = False

    def step(self, closure=None):
        r"""Perform a single optimization step to update parameter.

        Args:
            closure (Callable): A closure that reevaluates the model and
                returns the loss. Optional for most optimizers.
        """
        raise NotImplementedError

    # ---------------------------------------------------- the shared step loop

    def _step_param_groups(self, closure):
        """The step of the built-in optimizers: run ``closure``, then update each group."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params, grads, states = self._init_group(group)
            self._update_group(group, params, grads, states)
        return loss

    def _init_group(self, group):
        """The parameters of ``group`` that have a gradient, their gradients and their states.

        An empty state is filled by ``_init_state`` (lazy initialisation on the first step).
        ``states`` is empty when ``_uses_state(group)`` is false.
        """
        params, grads, states = [], [], []
        uses_state = self._uses_state(group)
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            grads.append(p.grad)
            if uses_state:
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(group, p, state)
                states.append(state)
        return params, grads, states

    def _uses_state(self, group):
        """Whether the update of ``group`` reads per-parameter state."""
        return True

    def _init_state(self, group, param, state):
        """Fill the empty ``state`` of ``param`` before its first update (nothing by default)."""

    def _update_group(self, group, params, grads, states):
        """Update ``params`` of ``group`` from their ``grads`` and ``states`` (one native call)."""
        raise NotImplementedError

    def add_param_group(self, param_group):
        r"""Add a param group to the :class:`Optimizer` s ``param_groups``.

        Args:
            param_group (dict): Specifies what Tensors should be optimized along with group
                specific optimization options.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")

        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but "
                "the ordering of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)

        extracted_param_tensors = []
        extracted_param_names = []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                extracted_param_names.append(param[0])
                extracted_param_tensors.append(param[1])
            else:
                extracted_param_tensors.append(param)

        param_group["params"] = extracted_param_tensors
        if len(extracted_param_names) != 0:
            if len(extracted_param_names) == len(extracted_param_tensors):
                param_group["param_names"] = extracted_param_names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            else:
                param_group.setdefault(name, default)
        _check_unsupported(
            self.__class__.__name__, {option: param_group.get(option) for option in self._unsupported_options}
        )

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; "
                "in future, this will cause an error; "
                "see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )

        param_set = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current_group_txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {current_group_txt} to the optimizer"
                )

        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)
