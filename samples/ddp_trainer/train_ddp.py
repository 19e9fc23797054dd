#!/usr/bin/env python3
"""A small, real PyTorch DDP training job on gloo (CPU), shipped for `collscope tune samples/spaces/ddp-gloo.yaml`
and for trying collscope on DDP. Nothing in it knows about collscope.

  train_ddp.py [--ranks 2] [--steps 20] [--warmup-steps 3] [--batch-size 32] [--bucket-cap-mb 25] [--threads 1]
               [--layers 16] [--width 256] [--accumulate 1]

Started without RANK in its environment it is its own launcher: it starts --ranks copies of itself on this host
with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT set (what torchrun sets), waits for them and exits
with the first failing rank's code (0 when all succeed); under torchrun (RANK set) it is one rank. The launcher
imports no torch, so under `collscope trace` only the ranks write rank files.

Each option also comes from the environment when it is not on the command line: DDP_BUCKET_CAP_MB, DDP_BATCH_SIZE,
DDP_THREADS, DDP_STEPS, DDP_RANKS (so a search space can set them through `env:`).

Rank 0 prints, after the last step, the job's own rate over the steps after the warm-up:
  train_ddp: throughput 1234.5 samples/s, mean step 25.93 ms (2 ranks, batch 32 per rank, bucket_cap_mb 25, 1 threads)
"""
import argparse
import os
import socket
import subprocess
import sys
import time


def options():
    env = os.environ.get
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=int(env("DDP_RANKS", "2")), help="ranks to start (launcher)")
    ap.add_argument("--steps", type=int, default=int(env("DDP_STEPS", "20")), help="optimizer steps")
    ap.add_argument("--warmup-steps", type=int, default=3, help="steps left out of the printed rate")
    ap.add_argument("--batch-size", type=int, default=int(env("DDP_BATCH_SIZE", "32")), help="samples per rank per step")
    ap.add_argument("--bucket-cap-mb", type=float, default=float(env("DDP_BUCKET_CAP_MB", "25")),
                    help="DDP's bucket_cap_mb (MB of 2^20 bytes)")
    ap.add_argument("--threads", type=int, default=int(env("DDP_THREADS", "1")), help="torch.set_num_threads per rank")
    ap.add_argument("--layers", type=int, default=16, help="Linear layers (width x width + bias each)")
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--accumulate", type=int, default=1, help="micro-batches per step (all but the last under no_sync)")
    return ap.parse_args()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args):
    """Starts the ranks the way torchrun does on one host; returns the exit code."""
    port = str(free_port())
    ranks = []
    for rank in range(args.ranks):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(args.ranks),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        ranks.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + sys.argv[1:], env=env))
    codes = [p.wait() for p in ranks]
    return next((c for c in codes if c != 0), 0)


def train(args):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    # 16 layers of 256x256 + bias by default: 4.2 MB of float32 gradients.
    layers = []
    for _ in range(args.layers):
        layers += [nn.Linear(args.width, args.width), nn.ReLU()]
    model = DDP(nn.Sequential(*layers), bucket_cap_mb=args.bucket_cap_mb)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(rank)
    data = torch.randn(args.batch_size, args.width, generator=generator)
    target = torch.randn(args.batch_size, args.width, generator=generator)
    started = None
    for step in range(args.steps):
        if step == args.warmup_steps:
            started = time.perf_counter()
        optimizer.zero_grad()
        for micro in range(args.accumulate):
            if micro < args.accumulate - 1:
                with model.no_sync():
                    nn.functional.mse_loss(model(data), target).backward()
            else:
                nn.functional.mse_loss(model(data), target).backward()
        optimizer.step()
    dist.barrier()
    measured = args.steps - args.warmup_steps
    if rank == 0 and started is not None and measured > 0:
        elapsed = time.perf_counter() - started  # s
        print("train_ddp: throughput %.1f samples/s, mean step %.2f ms (%d ranks, batch %d per rank, bucket_cap_mb %g, "
              "%d threads)" % (args.batch_size * args.accumulate * world * measured / elapsed, 1000 * elapsed / measured,
                               world, args.batch_size, args.bucket_cap_mb, args.threads), flush=True)
    dist.destroy_process_group()
    return 0


def main():
    args = options()
    if "RANK" not in os.environ:
        return launch(args)
    return train(args)


if __name__ == "__main__":
    sys.exit(main())
