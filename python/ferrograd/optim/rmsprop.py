r"""Implementation for the RMSprop algorithm."""

from .. import _core
from .._core import Tensor
from .._factories import zeros, zeros_like
from .optimizer import (
    Optimizer,
    _as_float,
    _builtin_step,
    _check_functional_args,
    _check_non_negative,
    _get_scalar_dtype,
    _to_scalar,
)

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    r"""Implements the RMSprop algorithm (optionally centered, with momentum).

    ``capturable=True`` and ``differentiable=True`` are not supported; ``foreach`` is
    accepted and ignored (every step is one native call per parameter group).
    """

    _unsupported_options = ("capturable", "differentiable")

    def __init__(
        self,
        params,
        lr=1e-2,
        alpha=0.99,
        eps=1e-8,
        weight_decay=0,
        momentum=0,
        centered=False,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check_non_negative(lr, "learning rate")
        _check_non_negative(eps, "epsilon value")
        _check_non_negative(momentum, "momentum value")
        _check_non_negative(weight_decay, "weight_decay value")
        _check_non_negative(alpha, "alpha value")

        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    _setstate_group_defaults = (
        ("momentum", 0),
        ("centered", False),
        ("foreach", None),
        ("maximize", False),
        ("differentiable", False),
        ("capturable", False),
    )
    _setstate_step_to_tensor = True

    def _init_state(self, group, param, state):
        state["step"] = zeros((), dtype=_get_scalar_dtype())
        state["square_avg"] = zeros_like(param)
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_like(param)
        if group["centered"]:
            state["grad_avg"] = zeros_like(param)

    def _update_group(self, group, params, grads, states):
        rmsprop(
            params,
            grads,
            [state["square_avg"] for state in states],
            [state["grad_avg"] for state in states] if group["centered"] else [],
            [state["momentum_buffer"] for state in states] if group["momentum"] > 0 else [],
            [state["step"] for state in states],
            lr=group["lr"],
            alpha=group["alpha"],
            eps=group["eps"],
            weight_decay=group["weight_decay"],
            momentum=group["momentum"],
            centered=group["centered"],
            foreach=group["foreach"],
            maximize=group["maximize"],
            differentiable=group["differentiable"],
            capturable=group["capturable"],
        )

    step = _builtin_step


def rmsprop(
    params,
    grads,
    square_avgs,
    grad_avgs,
    momentum_buffer_list,
    state_steps,
    foreach=None,
    maximize=False,
    differentiable=False,
    capturable=False,
    has_complex=False,
    *,
    lr,
    alpha,
    eps,
    weight_decay,
    momentum,
    centered,
):
    r"""Functional API that performs RMSprop algorithm computation (one native call)."""
    _check_functional_args(
        "RMSprop", {"capturable": capturable, "differentiable": differentiable}, state_steps=state_steps
    )
    if not params:
        return
    _core._rmsprop_step(
        list(params),
        list(grads),
        list(square_avgs),
        list(grad_avgs) if centered else [],
        list(momentum_buffer_list) if momentum > 0 else [],
        list(state_steps),
        _as_float("lr", _to_scalar(lr)),
        float(alpha),
        float(eps),
        float(weight_decay),
        float(momentum),
        bool(centered),
        bool(maximize),
    )
