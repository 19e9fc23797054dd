#!/usr/bin/env bash
# Whether every NVTX range of a traced job is closed: RUNS traced runs of the fusion trainer (2 ranks, 12 steps,
# NVTX ranges step/forward/backward/optimizer); prints each run whose rank files count unbalanced pops (meta
# nvtx_unbalanced_pops: a range closed as never ended, and its pop left without a push) and the tally. Run it on a
# loaded machine: the writer runs in the idle scheduling class, and the bug this found needed it preempted mid-drain
# (docs/performance.md, "Test suite, repeated and under load").
# Usage: tracer/bench/nvtx_ranges_closed.sh BIN_DIR RUNS RESULTS   (BIN_DIR: build/bin, with fusion_trainer)
set -uo pipefail
bin="${1:?BIN_DIR}" runs="${2:?RUNS}" results="${3:?RESULTS}"
mkdir -p "$results"
unbalanced_runs=0
for ((i = 1; i <= runs; i++)); do
  run="$results/run-$i"
  rm -rf "$run"
  timeout 60 "$bin/collscope" trace -o "$run" -- mpirun -np 2 --oversubscribe --mca btl self,vader \
    "$bin/fusion_trainer" --steps 12 --model-scale 0.02 >"$results/log-$i" 2>&1
  rc=$?
  unbalanced=""
  for file in "$run"/rank-*.sqlite; do
    n=$(sqlite3 "file:$file?mode=ro" "SELECT value FROM meta WHERE key = 'nvtx_unbalanced_pops'" 2>/dev/null)
    [[ -n $n && $n != 0 ]] && unbalanced+=" $(basename "$file"): $n"
  done
  [[ -n $unbalanced ]] && unbalanced_runs=$((unbalanced_runs + 1))
  echo "run $i: exit $rc;${unbalanced:- every range closed} (load $(cut -d' ' -f1 /proc/loadavg))"
done
echo "$unbalanced_runs of $runs runs with unbalanced pops"
