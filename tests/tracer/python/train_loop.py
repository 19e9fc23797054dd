# A plain PyTorch CPU training loop with no collscope code: `collscope trace` annotates it (python_annotation_test).
# Usage: train_loop.py STEPS [WORKERS]. Each step: a forward through nested modules, backward, an optimizer step;
# after each step an evaluation forward without grad (a forward range in no step). With WORKERS > 1 the loop runs
# in that many torch.multiprocessing.spawn workers, data-parallel (DistributedDataParallel over gloo): no launcher
# names their ranks, only torch.distributed knows them. With COLLSCOPE_TEST_NVTX_SHIM naming an NVTX shim library
# (nvtx_shim.c), the loop marks each step itself, as jobs that use NVTX do.
import ctypes
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def train(rank, workers, steps, port):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    if workers > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=workers)
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 16), torch.randn(64, 1)
    shim = ctypes.CDLL(os.environ["COLLSCOPE_TEST_NVTX_SHIM"]) if os.environ.get("COLLSCOPE_TEST_NVTX_SHIM") else None
    for _ in range(steps):
        if shim:
            shim.shim_push(b"step")
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if shim:
            shim.shim_pop()
        with torch.no_grad():
            model(x)
    if workers > 1:
        dist.destroy_process_group()
    print("rank %d trained %d steps, loss %.4f" % (rank, steps, loss.item()))


if __name__ == "__main__":
    steps, workers = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1
    if workers == 1:
        train(0, 1, steps, 0)
    else:
        with socket.socket() as s:  # a free port for the workers' rendezvous
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        mp.spawn(train, args=(workers, steps, port), nprocs=workers)
