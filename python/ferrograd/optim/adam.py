r"""Implementation for the Adam algorithm."""

from .. import _core
from .._core import Tensor
from .._factories import tensor, zeros_like
from .optimizer import (
    Optimizer,
    _as_float,
    _builtin_step,
    _check_functional_args,
    _check_non_negative,
    _get_scalar_dtype,
    _to_scalar,
)

__all__ = ["Adam", "adam"]


class Adam(Optimizer):
    r"""Implements the Adam algorithm (AMSGrad and decoupled weight decay optional).

    ``capturable=True``, ``differentiable=True`` and ``fused=True`` are not supported;
    ``foreach`` is accepted and ignored (every step is one native call per parameter group).
    """

    _unsupported_options = ("capturable", "differentiable", "fused")

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        amsgrad=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
        fused=None,
        decoupled_weight_decay=False,
    ):
        if isinstance(lr, Tensor):
            if foreach and not capturable:
                raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
            if lr.numel() != 1:
                raise ValueError("Tensor lr must be 1-element")
        _check_non_negative(lr, "learning rate")
        _check_non_negative(eps, "epsilon value")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        _check_non_negative(weight_decay, "weight_decay value")
        if not (
            (isinstance(betas[0], float) and isinstance(betas[1], float))
            or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))
        ):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            if isinstance(betas[i], Tensor):
                if not capturable and foreach:
                    raise ValueError(
                        f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True"
                    )
                if betas[i].numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(map(_to_scalar, betas))

        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    _setstate_group_defaults = (
        ("amsgrad", False),
        ("maximize", False),
        ("foreach", None),
        ("capturable", False),
        ("differentiable", False),
        ("decoupled_weight_decay", False),
        ("fused", None),
    )
    _setstate_step_to_tensor = True

    def _init_state(self, group, param, state):
        state["step"] = tensor(0.0, dtype=_get_scalar_dtype())
        # Exponential moving average of gradient values
        state["exp_avg"] = zeros_like(param)
        # Exponential moving average of squared gradient values
        state["exp_avg_sq"] = zeros_like(param)
        if group["amsgrad"]:
            # Maintains max of all exp. moving avg. of sq. grad. values
            state["max_exp_avg_sq"] = zeros_like(param)

    def _update_group(self, group, params, grads, states):
        beta1, beta2 = group["betas"]
        adam(
            params,
            grads,
            [state["exp_avg"] for state in states],
            [state["exp_avg_sq"] for state in states],
            [state["max_exp_avg_sq"] for state in states] if group["amsgrad"] else [],
            [state["step"] for state in states],
            amsgrad=group["amsgrad"],
            beta1=beta1,
            beta2=beta2,
            lr=group["lr"],
            weight_decay=group["weight_decay"],
            eps=group["eps"],
            maximize=group["maximize"],
            foreach=group["foreach"],
            capturable=group["capturable"],
            differentiable=group["differentiable"],
            fused=group["fused"],
            grad_scale=getattr(self, "grad_scale", None),
            found_inf=getattr(self, "found_inf", None),
            decoupled_weight_decay=group["decoupled_weight_decay"],
        )

    step = _builtin_step


def adam(
    params,
    grads,
    exp_avgs,
    exp_avg_sqs,
    max_exp_avg_sqs,
    state_steps,
    foreach=None,
    capturable=False,
    differentiable=False,
    fused=None,
    grad_scale=None,
    found_inf=None,
    has_complex=False,
    decoupled_weight_decay=False,
    *,
    amsgrad,
    beta1,
    beta2,
    lr,
    weight_decay,
    eps,
    maximize,
):
    r"""Functional API that performs Adam algorithm computation (one native call).

    Each ``state_steps`` tensor is incremented in place before the update.
    """
    _check_functional_args(
        "Adam",
        {"capturable": capturable, "differentiable": differentiable, "fused": fused},
        grad_scale=grad_scale,
        found_inf=found_inf,
        state_steps=state_steps,
    )
    if not params:
        return
    _core._adam_step(
        list(params),
        list(grads),
        list(exp_avgs),
        list(exp_avg_sqs),
        list(max_exp_avg_sqs) if amsgrad else [],
        list(state_steps),
        _as_float("lr", _to_scalar(lr)),
        _as_float("beta1", _to_scalar(beta1)),
        _as_float("beta2", _to_scalar(beta2)),
        float(eps),
        float(weight_decay),
        bool(amsgrad),
        bool(maximize),
        bool(decoupled_weight_decay),
    )
