r"""Implementation for Stochastic Gradient Descent optimizer."""

from .. import _core
from .._core import Tensor
from .optimizer import (
    Optimizer,
    _as_float,
    _builtin_step,
    _check_functional_args,
    _to_scalar,
)

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    r"""Implements stochastic gradient descent (optionally with momentum).

    The momentum buffer starts as the first step's gradient (no dampening on the
    first step), as in PyTorch. ``differentiable=True`` and ``fused=True`` are not
    supported; ``foreach`` is accepted and ignored (every step is one native call
    per parameter group).
    """

    _unsupported_options = ("differentiable", "fused")

    def __init__(
        self,
        params,
        lr=1e-3,
        momentum=0,
        dampening=0,
        weight_decay=0,
        nesterov=False,
        *,
        maximize=False,
        foreach=None,
        differentiable=False,
        fused=None,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")

        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    _setstate_group_defaults = (
        ("nesterov", False),
        ("maximize", False),
        ("foreach", None),
        ("differentiable", False),
        ("fused", False),
    )

    def _uses_state(self, group):
        # the momentum buffers are SGD's only state
        return group["momentum"] != 0

    def _update_group(self, group, params, grads, states):
        momentum_buffer_list = [state.get("momentum_buffer") for state in states]
        sgd(
            params,
            grads,
            momentum_buffer_list,
            weight_decay=group["weight_decay"],
            momentum=group["momentum"],
            lr=group["lr"],
            dampening=group["dampening"],
            nesterov=group["nesterov"],
            maximize=group["maximize"],
            foreach=group["foreach"],
            fused=group["fused"],
            grad_scale=getattr(self, "grad_scale", None),
            found_inf=getattr(self, "found_inf", None),
        )
        # the buffers created on the first step go into the state
        for state, momentum_buffer in zip(states, momentum_buffer_list):
            state["momentum_buffer"] = momentum_buffer

    step = _builtin_step


def sgd(
    params,
    d_p_list,
    momentum_buffer_list,
    has_sparse_grad=False,
    foreach=None,
    fused=None,
    grad_scale=None,
    found_inf=None,
    *,
    weight_decay,
    momentum,
    lr,
    dampening,
    nesterov,
    maximize,
):
    r"""Functional API that performs SGD algorithm computation (one native call).

    ``momentum_buffer_list`` is updated in place with the buffers created on the first step.
    """
    _check_functional_args(
        "SGD", {"fused": fused}, has_sparse_grad=has_sparse_grad, grad_scale=grad_scale, found_inf=found_inf
    )
    if not params:
        return
    if momentum == 0 and not momentum_buffer_list:
        buffers = [None] * len(params)
    else:
        buffers = list(momentum_buffer_list)
    buffers = _core._sgd_step(
        list(params),
        list(d_p_list),
        buffers,
        _as_float("lr", _to_scalar(lr)),
        float(momentum),
        float(dampening),
        _as_float("weight_decay", _to_scalar(weight_decay)),
        bool(nesterov),
        bool(maximize),
    )
    if momentum != 0:
        momentum_buffer_list[:] = buffers
