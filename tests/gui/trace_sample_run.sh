#!/bin/sh
# Traces the fusion_trainer sample (2 ranks, 10 steps) into RUN_DIR for the viewer tests.
# Usage: trace_sample_run.sh RUN_DIR   (COLLSCOPE_BIN from the test environment)
set -eu
run_dir=$1
rm -rf "$run_dir"
exec timeout 50 "$COLLSCOPE_BIN/collscope" trace -o "$run_dir" -- \
  mpirun -np 2 --oversubscribe --mca btl self,vader "$COLLSCOPE_BIN/fusion_trainer" --steps 10
