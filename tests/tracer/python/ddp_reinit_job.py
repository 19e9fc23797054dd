"""A DDP job that makes its process group twice: init_process_group, 3 DDP steps, destroy_process_group, then all of
it again (as jobs that re-form their group after a failure do). Started like torchrun's ranks (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT); the second group rendezvous on SECOND_MASTER_PORT (else MASTER_PORT + 1). Prints
`expect grad_bytes N`."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ports = [os.environ["MASTER_PORT"], os.environ.get("SECOND_MASTER_PORT", str(int(os.environ["MASTER_PORT"]) + 1))]
    for round_ in range(2):
        os.environ["MASTER_PORT"] = ports[round_]
        dist.init_process_group("gloo")
        torch.manual_seed(round_)
        model = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64))
        ddp = DDP(model)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        data = torch.randn(8, 64)
        for _ in range(3):
            optimizer.zero_grad()
            ddp(data).sum().backward()
            optimizer.step()
        dist.barrier()
        dist.destroy_process_group()
    print("expect grad_bytes %d" % sum(p.numel() * p.element_size() for p in model.parameters()))


if __name__ == "__main__":
    main()
