#!/usr/bin/env python3
"""The GPU check's PyTorch job (tests/gpu/run.sh, checks (d) and (e)): a plain DDP training loop on one GPU,
world size 1, NCCL backend. Nothing in it knows about collscope: it is traced from outside.

The model's gradients (under DDP's 1 MiB first bucket) fill exactly one bucket, so DDP makes exactly one
allreduce of `grad_bytes` per step. Prints `expect KEY VALUE` lines and its own mean step time after warm-up.
usage: ddp_train.py [--steps 40] [--warmup 5]"""
import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=device)
    torch.manual_seed(0)
    # 135 696 parameters, 543 KB of gradients: one bucket.
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 16)).to(device)
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    ddp = DDP(model, device_ids=[0])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    data = torch.randn(64, 256, device=device)
    target = torch.randint(0, 16, (64,), device=device)
    times = []
    for step in range(args.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(data), target)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        if step >= args.warmup:
            times.append(time.perf_counter() - t0)
    dist.destroy_process_group()
    times.sort()
    print(f"expect steps {args.steps}")
    print(f"expect grad_bytes {grad_bytes}")
    print(f"nccl_version {'.'.join(map(str, torch.cuda.nccl.version()))}")
    print(f"torch {torch.__version__}")
    print(f"step_ms_median {1e3 * times[len(times) // 2]:.4f}")
    print(f"step_ms_mean {1e3 * sum(times) / len(times):.4f}")
    print(f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
