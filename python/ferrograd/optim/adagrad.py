r"""Implementation for the Adagrad algorithm."""

from .. import _core
from .._core import Tensor
from .._factories import full_like, tensor
from .._functions import is_tensor
from .optimizer import (
    Optimizer,
    _as_float,
    _builtin_step,
    _check_functional_args,
    _check_non_negative,
    _get_scalar_dtype,
    _to_scalar,
)

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    r"""Implements the Adagrad algorithm.

    State (``step`` and ``sum``) is created for every parameter at construction, as in
    PyTorch. ``differentiable=True`` and ``fused=True`` are not supported; ``foreach`` is
    accepted and ignored (every step is one native call per parameter group).
    """

    _unsupported_options = ("differentiable", "fused")

    def __init__(
        self,
        params,
        lr=1e-2,
        lr_decay=0,
        weight_decay=0,
        initial_accumulator_value=0,
        eps=1e-10,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        fused=None,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check_non_negative(lr, "learning rate")
        _check_non_negative(lr_decay, "lr_decay value")
        _check_non_negative(weight_decay, "weight_decay value")
        _check_non_negative(initial_accumulator_value, "initial_accumulator_value value")
        _check_non_negative(eps, "epsilon value")

        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = tensor(0.0, dtype=_get_scalar_dtype())
                state["sum"] = full_like(p, initial_accumulator_value)

    _setstate_group_defaults = (
        ("foreach", None),
        ("maximize", False),
        ("differentiable", False),
        ("fused", None),
    )

    def __setstate__(self, state):
        super().__setstate__(state)

        state_values = list(self.state.values())
        step_is_tensor = (len(state_values) != 0) and is_tensor(state_values[0]["step"])
        if not step_is_tensor:
            for s in state_values:
                s["step"] = tensor(float(s["step"]), dtype=_get_scalar_dtype())

    def _init_state(self, group, param, state):
        # parameters added after construction take the constructor's initial value
        state["step"] = tensor(0.0, dtype=_get_scalar_dtype())
        state["sum"] = full_like(param, self.defaults["initial_accumulator_value"])

    def _update_group(self, group, params, grads, states):
        adagrad(
            params,
            grads,
            [state["sum"] for state in states],
            [state["step"] for state in states],
            lr=group["lr"],
            weight_decay=group["weight_decay"],
            lr_decay=group["lr_decay"],
            eps=group["eps"],
            maximize=group["maximize"],
            foreach=group["foreach"],
            differentiable=group["differentiable"],
            fused=group["fused"],
            grad_scale=getattr(self, "grad_scale", None),
            found_inf=getattr(self, "found_inf", None),
        )

    step = _builtin_step


def adagrad(
    params,
    grads,
    state_sums,
    state_steps,
    fused=None,
    grad_scale=None,
    found_inf=None,
    has_sparse_grad=False,
    foreach=None,
    differentiable=False,
    has_complex=False,
    *,
    lr,
    weight_decay,
    lr_decay,
    eps,
    maximize,
):
    r"""Functional API that performs Adagrad algorithm computation (one native call)."""
    _check_functional_args(
        "Adagrad",
        {"fused": fused, "differentiable": differentiable},
        has_sparse_grad=has_sparse_grad,
        grad_scale=grad_scale,
        found_inf=found_inf,
        state_steps=state_steps,
    )
    if not params:
        return
    _core._adagrad_step(
        list(params),
        list(grads),
        list(state_sums),
        list(state_steps),
        _as_float("lr", _to_scalar(lr)),
        float(weight_decay),
        float(lr_decay),
        float(eps),
        bool(maximize),
    )
