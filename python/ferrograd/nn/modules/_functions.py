"""Autograd Functions used by ``nn`` modules (PyTorch's ``torch/nn/modules/_functions.py``)."""

from ...autograd.function import Function


class BackwardHookFunction(Function):
    """Identity on its tensor arguments: its node is where the module backward hooks run."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[arg for arg in args if not arg.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *args):
        return args
