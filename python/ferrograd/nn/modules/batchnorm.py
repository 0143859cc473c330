"""``BatchNorm1d``, ``BatchNorm2d`` and ``BatchNorm3d`` (ported from PyTorch)."""

from ... import distributed as dist
from ..._dtype import long
from ..._factories import empty, ones, tensor, zeros
from .. import functional as F, init
from ..parameter import Parameter
from ._functions import SyncBatchNorm as sync_batch_norm
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


class _NormBase(Module):
    r"""Common base of batch and instance norm: affine parameters and running-statistics buffers."""

    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = Parameter(empty(num_features, **factory_kwargs))
            if bias:
                self.bias = Parameter(empty(num_features, **factory_kwargs))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if self.track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, **factory_kwargs))
            self.register_buffer("running_var", ones(num_features, **factory_kwargs))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=long, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (
            "{num_features}, eps={eps}, momentum={momentum}, affine={affine}, "
            "bias={use_bias}, track_running_stats={track_running_stats}".format(
                **self.__dict__, use_bias=self.bias is not None
            )
        )

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # at version 2: added num_batches_tracked buffer, which defaults to 0
            num_batches_tracked_key = prefix + "num_batches_tracked"
            if num_batches_tracked_key not in state_dict:
                state_dict[num_batches_tracked_key] = (
                    self.num_batches_tracked if self.num_batches_tracked is not None else tensor(0, dtype=long)
                )
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class _BatchNorm(_NormBase):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(num_features, eps, momentum, affine, track_running_stats, **factory_kwargs, bias=bias)

    def forward(self, input):
        self._check_input_dim(input)
        factor, bn_training = self._step_statistics()
        # buffers that are not tracked must not be updated
        return F.batch_norm(input, *self._running_stats(), self.weight, self.bias, bn_training, factor,
                            self.eps)

    def _step_statistics(self):
        """Counts the batch; returns (the running-average factor, whether batch statistics are
        used). The factor is ``momentum``, or ``1/num_batches_tracked`` (a cumulative moving
        average) when momentum is None."""
        if self.momentum is None:
            exponential_average_factor = 0.0
        else:
            exponential_average_factor = self.momentum
        if self.training and self.track_running_stats:
            if self.num_batches_tracked is not None:
                self.num_batches_tracked.add_(1)
                if self.momentum is None:
                    exponential_average_factor = 1.0 / float(self.num_batches_tracked)
                else:
                    exponential_average_factor = self.momentum
        if self.training:
            bn_training = True
        else:
            bn_training = (self.running_mean is None) and (self.running_var is None)
        return exponential_average_factor, bn_training

    def _running_stats(self):
        """The running statistics batch norm reads and updates (None where not tracked)."""
        if not self.training or self.track_running_stats:
            return self.running_mean, self.running_var
        return None, None


class BatchNorm1d(_BatchNorm):
    r"""Batch normalisation over a ``(N, C)`` or ``(N, C, L)`` input.

    ``y = (x - E[x]) / sqrt(Var[x] + eps) * weight + bias``; in training mode the batch
    statistics are used and ``running_mean``/``running_var`` updated (``momentum=None``: a
    cumulative average); in eval mode the running statistics are used.
    """

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    r"""Batch normalisation over a ``(N, C, H, W)`` input (see ``BatchNorm1d``)."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    r"""Batch normalisation over a ``(N, C, D, H, W)`` input (see ``BatchNorm1d``)."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    r"""Batch normalisation whose training statistics cover the batches of all ranks.

    In training mode with more than one process, the mean and variance are those of the
    concatenated batch of every rank (one all-gather in forward, one all-reduce in backward); in
    eval mode, or on a single process, it is ``BatchNorm``. Takes any ``(N, C, ...)`` input.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype,
                         bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        factor, bn_training = self._step_statistics()
        running_mean, running_var = self._running_stats()
        need_sync = bn_training and self.training and dist.is_available() and dist.is_initialized()
        if need_sync:
            process_group = dist.distributed_c10d._world(self.process_group)
            need_sync = process_group.size() > 1
        if not need_sync:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training, factor,
                                self.eps)
        return sync_batch_norm.apply(input, self.weight, self.bias, running_mean, running_var, self.eps, factor,
                                     process_group, process_group.size())

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        r"""Returns ``module`` with every ``BatchNorm*d`` replaced by a ``SyncBatchNorm`` sharing its
        parameters and running statistics."""
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = cls(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group)
            shared = ["running_mean", "running_var", "num_batches_tracked", "training"]
            shared += ["weight", "bias"] if module.affine else []
            shared += ["qconfig"] if hasattr(module, "qconfig") else []
            for name in shared:
                setattr(module_output, name, getattr(module, name))
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output
