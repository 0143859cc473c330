"""Autograd Functions used by ``nn`` modules (PyTorch's ``torch/nn/modules/_functions.py``)."""

from ..._core import cat, sqrt
from ..._factories import empty, tensor
from ...autograd.function import Function
from ...distributed import distributed_c10d as c10d

# re-exported at PyTorch's address: it is defined next to its user, utils.hooks.BackwardHook
from ...utils.hooks import BackwardHookFunction as BackwardHookFunction


def _channel_shape(input):
    """``(1, C, 1, ...)``: per-channel statistics broadcast against an ``(N, C, ...)`` input."""
    return [1, input.shape[1]] + [1] * (input.dim() - 2)


def _reduced_dims(input):
    return [0] + list(range(2, input.dim()))


class SyncBatchNorm(Function):
    """Batch norm whose statistics cover the batches of every rank (PyTorch's
    ``torch.nn.modules._functions.SyncBatchNorm``).

    Forward all-gathers each rank's (count, mean, sum of squared deviations) and merges them
    exactly (Chan et al.), so a rank's output is that of ``BatchNorm`` on the concatenated batch.
    Backward all-reduces ``sum_dy`` and ``sum_dy_xmu`` to form the input gradient; the weight and
    bias gradients stay local sums, which ``DistributedDataParallel`` then averages, as in PyTorch.
    """

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, process_group,
                world_size):
        channels = input.shape[1]
        dims = _reduced_dims(input)
        count = input.numel() // channels
        mean = input.mean(dims)
        m2 = ((input - mean.view(_channel_shape(input))) ** 2).sum(dims)
        local = cat([tensor([float(count)], dtype=input.dtype), mean, m2])
        gathered = empty(world_size, 2 * channels + 1, dtype=input.dtype)
        process_group.comm.Allgather(c10d._buffer(local), c10d._buffer(gathered))
        counts, means, m2s = gathered[:, :1], gathered[:, 1:channels + 1], gathered[:, channels + 1:]
        total = counts.sum()
        mean = (counts * means).sum(0) / total
        var = (m2s + counts * (means - mean) ** 2).sum(0) / total
        invstd = 1.0 / sqrt(var + eps)
        total = float(total.item())
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean * momentum)
        if running_var is not None:
            unbiased = var * (total / (total - 1)) if total > 1 else var
            running_var.mul_(1 - momentum).add_(unbiased * momentum)
        shape = _channel_shape(input)
        out = (input - mean.view(shape)) * invstd.view(shape)
        if weight is not None:
            out = out * weight.view(shape)
        if bias is not None:
            out = out + bias.view(shape)
        ctx.save_for_backward(input, weight, mean, invstd)
        ctx.process_group = process_group
        ctx.total = total
        return out

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, mean, invstd = ctx.saved_tensors
        shape, dims = _channel_shape(input), _reduced_dims(input)
        xmu = input - mean.view(shape)
        sum_dy = grad_output.sum(dims)
        sum_dy_xmu = (grad_output * xmu).sum(dims)
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            channels = input.shape[1]
            combined = cat([sum_dy, sum_dy_xmu])
            MPI = c10d._mpi()
            ctx.process_group.comm.Allreduce(MPI.IN_PLACE, c10d._buffer(combined), MPI.SUM)
            mean_dy = (combined[:channels] / ctx.total).view(shape)
            mean_dy_xmu = (combined[channels:] / ctx.total).view(shape)
            scale = invstd if weight is None else invstd * weight
            grad_input = (grad_output - mean_dy - xmu * (invstd ** 2).view(shape) * mean_dy_xmu)
            grad_input = grad_input * scale.view(shape)
        if weight is not None and ctx.needs_input_grad[1]:
            grad_weight = sum_dy_xmu * invstd
        if ctx.needs_input_grad[2]:
            grad_bias = sum_dy
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None
