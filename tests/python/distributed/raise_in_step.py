"""Run under ``mpiexec -n 2``: rank 1 raises in the middle of a training step while rank 0 goes
on into backward, where it waits for rank 1's gradients. The excepthook that
``init_process_group`` installs must abort the whole job (non-zero exit), not leave rank 0
waiting forever."""

import ferrograd as torch
import ferrograd.distributed as dist
import ferrograd.nn as nn
from ferrograd.nn.parallel import DistributedDataParallel as DDP

torch.set_num_threads(1)
dist.init_process_group("mpi")
rank = dist.get_rank()
model = DDP(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    opt.zero_grad()
    loss = model(torch.randn(4, 8)).pow(2).mean()
    if step == 3 and rank == 1:
        raise ValueError(f"boom on rank {rank} at step {step}")
    loss.backward()
    opt.step()
print("rank", rank, "finished: the job was not aborted", flush=True)
