#!/usr/bin/env python3
"""A small DDP model on gloo, profiled with torch.profiler: one Chrome trace per rank.

Start one process per rank by hand, as torchrun would (env:// rendezvous):

    MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 WORLD_SIZE=2 RANK=0 python3 profile_ddp.py --out DIR &
    MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 WORLD_SIZE=2 RANK=1 python3 profile_ddp.py --out DIR

--straggler-rank R --straggler-ms M makes rank R sleep M ms before its backward pass every profiled step.
Each rank writes DIR/rank-R.json (torch.profiler's export_chrome_trace) and prints one JSON line with the
collectives it issued while profiled: DDP's bucket allreduces, counted by a communication hook that wraps
PyTorch's own allreduce hook, and the final barrier.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--straggler-rank", type=int, default=-1)
    ap.add_argument("--straggler-ms", type=float, default=0.0)
    ap.add_argument("--bucket-cap-mb", type=float, default=1.0)
    args = ap.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    # 3.2 MB of float32 gradients: DDP's first bucket (1 MiB) and more of --bucket-cap-mb after its rebuild.
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 10))
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb)
    counting = {"on": False, "allreduce": 0}

    def hook(state, bucket):
        if counting["on"]:
            counting["allreduce"] += 1
        return default_hooks.allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(32, 256)
    y = torch.randint(0, 10, (32,))
    loss_fn = nn.CrossEntropyLoss()

    def step(profiled):
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        if profiled and rank == args.straggler_rank and args.straggler_ms > 0:
            time.sleep(args.straggler_ms / 1000.0)
        loss.backward()
        opt.step()

    for _ in range(args.warmup):  # DDP rebuilds its buckets after the first iteration
        step(False)
    dist.barrier()

    counting["on"] = True
    barriers = 0
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for s in range(args.steps):
            # What torch.profiler's prof.step() records; named by hand so that the trailing barrier is no step.
            with torch.profiler.record_function(f"ProfilerStep#{s}"):
                step(True)
        dist.barrier()
        barriers += 1
    counting["on"] = False
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"rank-{rank}.json")
    prof.export_chrome_trace(path)
    buckets = ddp._get_ddp_logging_data().get("rebuilt_bucket_sizes", "")
    print(json.dumps({"rank": rank, "world_size": world, "steps": args.steps, "allreduce": counting["allreduce"],
                      "barrier": barriers, "bucket_bytes": buckets, "torch": torch.__version__, "trace": path}),
          flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
