#!/usr/bin/env python3
"""A plain PyTorch DDP job on gloo, for the tests: nothing in it knows about collscope. Each rank is started the
way torchrun starts ranks (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment, env:// rendezvous).

  ddp_gloo_job.py [--steps 10] [--slow-rank R --slow-ms MS] [--explicit] [--second-group] [--subgroup]
                  [--accumulate K] [--bucket-cap-mb MB] [--find-unused] [--threads 1] [--layers 4 --width 256]

--slow-rank sleeps MS ms in each step's forward on rank R (an input pipeline that stalls); --explicit makes, after
training, 3 all_reduce, 2 broadcast, 1 all_gather, 1 all_to_all_single with uneven splits (rank r sends r + 1
floats to each rank) and 1 barrier on the default group and 2 async all_reduce;
--second-group makes a group of ranks {0, 1} and 4 all_reduce on it; --subgroup (3 or more ranks) makes a group of
the first and the last rank and 4 all_reduce and 1 broadcast on it; --accumulate K runs K-1 of every K
micro-batches under no_sync; --find-unused passes find_unused_parameters=True (the model has none unused);
--threads N is torch.set_num_threads(N). Prints `expect KEY VALUE` lines (what the job did) and its loss."""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--slow-rank", type=int, default=-1)
    ap.add_argument("--slow-ms", type=float, default=0.0)
    ap.add_argument("--explicit", action="store_true")
    ap.add_argument("--second-group", action="store_true")
    ap.add_argument("--subgroup", action="store_true")
    ap.add_argument("--accumulate", type=int, default=1)
    ap.add_argument("--find-unused", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--bucket-cap-mb", type=float, default=25.0)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    # By default 4 layers of 256x256 + bias: 1.05 MB of float32 gradients in all.
    model = nn.Sequential(*[nn.Linear(args.width, args.width) for _ in range(args.layers)])
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb, find_unused_parameters=args.find_unused)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    data, target = torch.randn(32, args.width), torch.randn(32, args.width)
    loss = None
    for step in range(args.steps):
        optimizer.zero_grad()
        for micro in range(args.accumulate):
            last = micro == args.accumulate - 1
            if rank == args.slow_rank:
                time.sleep(args.slow_ms / 1000.0)
            if last:
                loss = nn.functional.mse_loss(ddp(data), target)
                loss.backward()
            else:
                with ddp.no_sync():
                    nn.functional.mse_loss(ddp(data), target).backward()
        optimizer.step()
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    print(f"expect steps {args.steps}")
    print(f"expect grad_bytes {grad_bytes}")
    if args.explicit:
        t = torch.ones(1000)
        for _ in range(3):
            dist.all_reduce(t)
        for _ in range(2):
            dist.broadcast(t, src=0)
        gathered = [torch.zeros(1000) for _ in range(world)]
        dist.all_gather(gathered, t)
        # Split sizes differ per rank, as in a mixture-of-experts dispatch: not a mismatch.
        received = torch.zeros(sum(q + 1 for q in range(world)))
        dist.all_to_all_single(received, torch.ones((rank + 1) * world), output_split_sizes=[q + 1 for q in range(world)],
                               input_split_sizes=[rank + 1] * world)
        dist.barrier()
        works = [dist.all_reduce(torch.ones(10), async_op=True) for _ in range(2)]
        for w in works:
            w.wait()
        print("expect explicit_allreduce 5")
        print("expect explicit_bcast 2")
        print("expect explicit_allgather 1")
    if args.second_group:
        group = dist.new_group([0, 1])
        if rank in (0, 1):
            for _ in range(4):
                dist.all_reduce(torch.ones(100), group=group)
        print("expect second_group_allreduce 4")
    if args.subgroup:
        ends = [0, world - 1]
        group = dist.new_group(ends)
        if rank in ends:
            for _ in range(4):
                dist.all_reduce(torch.ones(100), group=group)
            dist.broadcast(torch.ones(50), src=world - 1, group=group)
        print("expect subgroup_allreduce 4")
        print("expect subgroup_bcast 1")
    dist.barrier()
    print(f"rank {rank} loss {loss.item():.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
