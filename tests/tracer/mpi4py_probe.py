"""An mpi4py program with a known set of MPI calls (buffer methods on array.array, so no numpy is needed).
Each rank writes its account of the calls to $COLLSCOPE_PROBE_OUT.<rank> in the lines of mpi_calls_probe.c.
Run with 2 ranks: mpirun -np 2 python3 mpi4py_probe.py"""
import os
from array import array

from mpi4py import MPI  # loads libmpi with RTLD_LOCAL: the preload must find it all the same

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
path = os.environ.get("COLLSCOPE_PROBE_OUT")
out = open(f"{path}.{rank}", "w") if path else None


def said(line):
    print(f"rank {rank}: {line}", file=out, flush=True)


right, left = (rank + 1) % size, (rank + size - 1) % size
d = array("d", [1.0] * 8)
dr = array("d", [0.0] * 8)
ints = array("i", [rank] * 12)
intr = array("i", [0] * 12)

said("coll barrier comm=world count=0 bytes=0 root=-1")
world.Barrier()
said("coll allreduce comm=world count=8 bytes=64 root=-1")
world.Allreduce([d, MPI.DOUBLE], [dr, MPI.DOUBLE], op=MPI.SUM)
said("coll bcast comm=world count=12 bytes=48 root=0")
world.Bcast([ints, MPI.INT], root=0)
said(f"coll allgather comm=world count=3 bytes={3 * 4 * size} root=-1")
world.Allgather([ints, 3, MPI.INT], [intr, 3, MPI.INT])

split = world.Split(rank % 2, rank)
said("coll allreduce comm=split count=4 bytes=32 root=-1")
split.Allreduce([d, 4, MPI.DOUBLE], [dr, 4, MPI.DOUBLE], op=MPI.MAX)
split.Free()

said("coll iallreduce comm=world count=8 bytes=64 root=-1")
request = world.Iallreduce([d, MPI.DOUBLE], [dr, MPI.DOUBLE], op=MPI.SUM)
request.Wait()

if rank == 0:
    said("p2p send comm=world count=6 send=1/7/24 recv=-")
    world.Send([ints, 6, MPI.INT], dest=1, tag=7)
elif rank == 1:
    said("p2p recv comm=world count=6 send=- recv=0/7/24")
    world.Recv([intr, 6, MPI.INT], source=0, tag=7)
said(f"p2p irecv comm=world count=2 send=- recv={left}/8/16")
receive = world.Irecv([dr, 2, MPI.DOUBLE], source=left, tag=8)
said(f"p2p isend comm=world count=2 send={right}/8/16 recv=-")
send = world.Isend([d, 2, MPI.DOUBLE], dest=right, tag=8)
MPI.Request.Waitall([receive, send])

said("done")
if out:
    out.close()
