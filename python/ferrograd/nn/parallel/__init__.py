"""``ferrograd.nn.parallel``: ``DistributedDataParallel`` on MPI."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
