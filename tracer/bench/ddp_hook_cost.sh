#!/usr/bin/env bash
# What collscope's DDP comm hook costs a job: the shipped DDP trainer (samples/ddp_trainer/train_ddp.py, 2 ranks
# on gloo, 40 steps, 16 layers: 2 buckets a step) traced with the hook and without it (COLLSCOPE_DDP_HOOK=0),
# alternated ROUNDS times. Prints each run's rate as the job prints it and the CPU time of the whole job (user +
# system, its process tree), then the medians and their ratios (hook / no hook). CPU time moves less than the rate
# on a shared machine: it is what the hook's Python work adds.
# Usage: tracer/bench/ddp_hook_cost.sh BIN_DIR [ROUNDS=6]   (BIN_DIR holds collscope: build/bin)
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${1:?BIN_DIR}" rounds=${2:-6}
work="$(mktemp -d -t collscope-ddp-hook-cost.XXXXXX)"
trap 'rm -rf "$work"' EXIT
for ((round = 1; round <= rounds; round++)); do
  for hook in 1 0; do
    out="$work/out-$hook-$round"
    COLLSCOPE_DDP_HOOK=$hook /usr/bin/time -f "cpu %U %S" -o "$out.time" "$bin/collscope" trace -o "$work/run-$hook-$round" -- \
      /usr/bin/python3 "$repo/samples/ddp_trainer/train_ddp.py" --steps 40 --warmup-steps 5 >"$out" 2>&1
    rate=$(grep -o 'throughput [0-9.]*' "$out" | cut -d' ' -f2)
    cpu=$(awk '/^cpu/ {print $2 + $3}' "$out.time")
    echo "round $round hook $hook: ${rate:-?} samples/s, cpu ${cpu:-?} s"
    echo "$hook $rate $cpu" >>"$work/all"
  done
done
/usr/bin/python3 - "$work/all" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 3]
med = {h: (statistics.median(float(r[1]) for r in rows if r[0] == h), statistics.median(float(r[2]) for r in rows if r[0] == h)) for h in ("1", "0")}
print("median rate: hook %.1f, no hook %.1f samples/s (ratio %.3f); median cpu: hook %.2f, no hook %.2f s (ratio %.3f)"
      % (med["1"][0], med["0"][0], med["1"][0] / med["0"][0], med["1"][1], med["0"][1], med["1"][1] / med["0"][1]))
PY
