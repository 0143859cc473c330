"""``ferrograd.distributed``: data-parallel training on MPI, with ``torch.distributed``'s API.

Launch with ``mpiexec -n N python train.py`` after ``pip install "ferrograd[mpi]"`` (mpi4py and
MPICH). See ``distributed_c10d`` for how tensors reach MPI and how errors end the job.
"""

from .distributed_c10d import *  # noqa: F401,F403
from .distributed_c10d import __all__  # noqa: F401
