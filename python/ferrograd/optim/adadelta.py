r"""Implementation for the Adadelta algorithm.

A step is one native call per parameter group (``_core._adadelta_step``, PyTorch's
single-tensor formula fused per parameter). With ``differentiable=True`` the update is
PyTorch's single-tensor loop written with tensor ops instead, so autograd records it.
"""

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

__all__ = ["Adadelta", "adadelta"]

# torch.optim's devices for capturable=True (CUDA graphs); ferrograd only has the CPU
_CAPTURABLE_DEVICES = ["cuda", "xpu", "hpu", "privateuseone"]


class Adadelta(Optimizer):
    r"""Implements the Adadelta algorithm.

    ``foreach`` is accepted and ignored (one loop over the parameters, which gives the
    same numbers as PyTorch's multi-tensor path). ``capturable=True`` needs a CUDA-graph
    device, as in PyTorch: on the CPU ``step`` raises PyTorch's AssertionError.
    """

    def __init__(
        self,
        params,
        lr=1.0,
        rho=0.9,
        eps=1e-6,
        weight_decay=0,
        foreach=None,
        *,
        capturable=False,
        maximize=False,
        differentiable=False,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check_non_negative(lr, "learning rate")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_non_negative(eps, "epsilon value")
        _check_non_negative(weight_decay, "weight_decay value")

        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    _setstate_group_defaults = (
        ("foreach", None),
        ("maximize", False),
        ("differentiable", False),
        ("capturable", False),
    )
    _setstate_step_to_tensor = True

    def _init_state(self, group, param, state):
        state["step"] = zeros((), dtype=_get_scalar_dtype())
        state["square_avg"] = zeros_like(param)
        state["acc_delta"] = zeros_like(param)

    def _init_group(self, group):
        for p in group["params"]:
            if p.grad is not None and p.grad.is_sparse:
                raise RuntimeError("Adadelta does not support sparse gradients")
        return super()._init_group(group)

    def _update_group(self, group, params, grads, states):
        adadelta(
            params,
            grads,
            [state["square_avg"] for state in states],
            [state["acc_delta"] for state in states],
            [state["step"] for state in states],
            lr=group["lr"],
            rho=group["rho"],
            eps=group["eps"],
            weight_decay=group["weight_decay"],
            foreach=group["foreach"],
            maximize=group["maximize"],
            differentiable=group["differentiable"],
            capturable=group["capturable"],
        )

    step = _builtin_step


def adadelta(
    params,
    grads,
    square_avgs,
    acc_deltas,
    state_steps,
    capturable=False,
    foreach=None,
    differentiable=False,
    has_complex=False,
    *,
    lr,
    rho,
    eps,
    weight_decay,
    maximize,
):
    r"""Functional API that performs Adadelta algorithm computation."""
    _check_functional_args("Adadelta", {}, state_steps=state_steps)
    if capturable and params:
        raise AssertionError(
            f"If capturable=True, params and state_steps must be on supported devices: {_CAPTURABLE_DEVICES}."
        )
    lr = _to_scalar(lr)
    if not differentiable:
        if params:
            _core._adadelta_step(
                list(params),
                list(grads),
                list(square_avgs),
                list(acc_deltas),
                list(state_steps),
                _as_float("lr", lr),
                float(rho),
                float(eps),
                float(weight_decay),
                bool(maximize),
            )
        return
    for param, grad, square_avg, acc_delta, step in zip(params, grads, square_avgs, acc_deltas, state_steps):
        step += 1
        grad = grad if not maximize else -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt()
        delta = acc_delta.add(eps).sqrt()
        if differentiable:
            delta = delta.clone()  # sqrt's backward needs its output unchanged
        delta.div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        param.add_(delta, alpha=-lr)
