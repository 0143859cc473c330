"""Train the digits MLP on several processes with DistributedDataParallel.

    mpiexec -n 2 python3 examples/train_ddp.py [--epochs 20] [--out-dir digits_ddp_out]
    python3 examples/train_ddp.py            # the same run on one process

Each rank reads its share of every global batch of 64 (DistributedSampler), gradients are
averaged across ranks during backward, and rank 0 logs and writes a checkpoint after every epoch.
The global batches are the same whatever the number of processes (dividing 64), so the losses
printed by 1, 2 or 4 processes agree to float32 rounding.
"""

import argparse
import os
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import ferrograd as torch
import ferrograd.distributed as dist
import ferrograd.nn as nn
from ferrograd.nn.parallel import DistributedDataParallel as DDP
from ferrograd.utils.data import DataLoader, DistributedSampler, TensorDataset


def load_data(seed):
    """examples/train_digits.py's data: the 8x8 digits in [0, 1], the same stratified split."""
    digits = load_digits()
    x = torch.from_numpy((digits.images / 16.0).astype(np.float32))
    y = torch.from_numpy(digits.target.astype(np.int64))
    train, test = train_test_split(np.arange(len(y)), test_size=0.2, random_state=seed, stratify=digits.target)
    return (x[train], y[train]), (x[test], y[test])


def make_model():
    # the single-process demo's MLP without its dropout, so runs on any number of ranks agree
    return nn.Sequential(
        nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch, over all ranks")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", default="digits_ddp_out")
    args = parser.parse_args()

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:
        raise SystemExit(f"the global batch {args.batch_size} must be divisible by {world} ranks")
    torch.set_num_threads(max(1, torch.get_num_threads() // world))
    torch.manual_seed(args.seed + rank)  # different on purpose: DDP broadcasts rank 0's weights
    (x_train, y_train), (x_test, y_test) = load_data(args.seed)
    dataset = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(dataset, shuffle=True, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size // world, sampler=sampler, drop_last=True)
    model = DDP(make_model())
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    loss_fn = nn.CrossEntropyLoss()
    if rank == 0:
        print(f"{world} process(es), {len(loader)} steps per epoch of {args.batch_size // world} "
              f"samples per rank", flush=True)
        os.makedirs(args.out_dir, exist_ok=True)

    start = time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total = torch.zeros(1, dtype=torch.float64)
        for inputs, labels in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), labels)
            loss.backward()
            optimizer.step()
            total += loss.item()
        scheduler.step()
        dist.all_reduce(total, op=dist.ReduceOp.AVG)  # the mean over ranks of the mean losses
        if rank == 0:
            with torch.no_grad():
                test_acc = (model.module(x_test).argmax(dim=1) == y_test).float().mean().item()
            print(f"epoch {epoch + 1:3d}  loss {total.item() / len(loader):.6f}  "
                  f"test accuracy {test_acc:.4f}", flush=True)
            checkpoint = {"epoch": epoch + 1, "model": model.module.state_dict(),
                          "optimizer": optimizer.state_dict()}
            torch.save(checkpoint, os.path.join(args.out_dir, "checkpoint.safetensors"))
    if rank == 0:
        print(f"trained {args.epochs} epochs in {time.perf_counter() - start:.1f} s; "
              f"checkpoint in {args.out_dir}/checkpoint.safetensors", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
