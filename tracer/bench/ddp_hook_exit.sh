#!/usr/bin/env bash
# Whether collscope's DDP comm hook can hang or kill a job at its exit: RUNS traced runs of the shipped DDP trainer
# (samples/ddp_trainer/train_ddp.py: 2 ranks on gloo, 10 steps, 8 layers, destroy_process_group() at the end), each
# given 40 s; a run still alive then gets every rank's stacks written by gdb (RESULTS/hang-RUN-PID.txt) and is
# killed. Prints one line per run and the tally of exit codes ("hang" for a killed run). Run it on a loaded machine
# (the hang needs a gloo worker descheduled at the wrong moment): docs/gpu-capture.md has the figures.
# Usage: tracer/bench/ddp_hook_exit.sh BIN_DIR RUNS RESULTS   (BIN_DIR holds collscope: build/bin, or /usr/bin)
# COLLSCOPE_DDP_HOOK=0 in the environment runs the same jobs without the hook.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${1:?BIN_DIR}" runs="${2:?RUNS}" results="${3:?RESULTS}"
mkdir -p "$results"
declare -A tally
for ((i = 1; i <= runs; i++)); do
  run="$results/run-$i"
  rm -rf "$run"
  started=$SECONDS
  # Its own session, so that the whole job (the trainer's launcher and its ranks) is found and killed as one group.
  COLLSCOPE_DDP_HOOK=${COLLSCOPE_DDP_HOOK:-1} setsid "$bin/collscope" trace -o "$run" -- /usr/bin/python3 "$repo/samples/ddp_trainer/train_ddp.py" --steps 10 \
    --layers 8 >"$results/log-$i" 2>&1 &
  job=$!
  while kill -0 "$job" 2>/dev/null && ((SECONDS - started < 40)); do sleep 0.5; done
  if kill -0 "$job" 2>/dev/null; then
    for pid in $(pgrep -g "$job" python3); do
      gdb -p "$pid" -batch -ex 'thread apply all bt' >"$results/hang-$i-$pid.txt" 2>&1
    done
    kill -KILL -- "-$job" 2>/dev/null
    wait "$job"
    outcome=hang
  else
    wait "$job"
    outcome=$?
  fi
  tally[$outcome]=$((${tally[$outcome]:-0} + 1))
  echo "run $i: $outcome ($((SECONDS - started)) s, load $(cut -d' ' -f1 /proc/loadavg))"
done
for outcome in "${!tally[@]}"; do echo "exit $outcome: ${tally[$outcome]} of $runs runs"; done
