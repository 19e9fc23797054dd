#!/bin/sh
# Traces halo_probe (tests/analyzer: a 1-D ring halo exchange, MPI_Irecv/MPI_Isend/MPI_Waitall, then an
# MPI_Allreduce per step) on 4 ranks, 10 steps, rank 2 computing 20 ms longer per step, into RUN_DIR for the
# viewer's point-to-point tests: every rank sends 8 KiB to each neighbour per step (tag 0 leftwards, 1 rightwards),
# and ranks 1 and 3 wait for rank 2's sends (late sender).
# Usage: trace_halo_run.sh RUN_DIR   (COLLSCOPE_BIN from the test environment)
set -eu
run_dir=$1
rm -rf "$run_dir"
exec timeout 50 "$COLLSCOPE_BIN/collscope" trace -o "$run_dir" -- \
  mpirun -np 4 --oversubscribe --mca btl self,vader "$COLLSCOPE_BIN/halo_probe" --steps 10 --compute-ms 2 \
  --slow-rank 2 --slow-ms 20
