#!/usr/bin/env bash
# What recording DDP's buckets costs a job: the shipped DDP trainer (samples/ddp_trainer/train_ddp.py, 2 ranks on
# gloo, 40 steps, 16 layers: 2 buckets a step) traced with them recorded and without, alternated ROUNDS times.
# KNOB says how they are recorded: COLLSCOPE_DDP_HOOK (the default: the comm hook, 1 against 0, gloo's own
# recording off in both) or COLLSCOPE_GLOO (from gloo by the preload, 1 against 0, no hook). Prints each run's rate
# as the job prints it and the CPU time of the whole job (user + system, its process tree), then the medians and
# their ratios (on / off). CPU time moves less than the rate on a shared machine: it is what the recording adds.
# Usage: tracer/bench/ddp_hook_cost.sh BIN_DIR [ROUNDS=6] [KNOB=COLLSCOPE_DDP_HOOK]   (BIN_DIR holds collscope)
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${1:?BIN_DIR}" rounds=${2:-6} knob=${3:-COLLSCOPE_DDP_HOOK}
case "$knob" in
  COLLSCOPE_DDP_HOOK) other=COLLSCOPE_GLOO ;;
  COLLSCOPE_GLOO) other=COLLSCOPE_DDP_HOOK ;;
  *) echo "ddp_hook_cost.sh: KNOB is COLLSCOPE_DDP_HOOK or COLLSCOPE_GLOO, not $knob" >&2; exit 2 ;;
esac
work="$(mktemp -d -t collscope-ddp-hook-cost.XXXXXX)"
trap 'rm -rf "$work"' EXIT
for ((round = 1; round <= rounds; round++)); do
  # ABBA: the order alternates from round to round, so that neither arm always runs first (after the other's exit).
  order="1 0"
  ((round % 2 == 0)) && order="0 1"
  for hook in $order; do
    out="$work/out-$hook-$round"
    env "$knob=$hook" "$other=0" /usr/bin/time -f "cpu %U %S" -o "$out.time" "$bin/collscope" trace -o "$work/run-$hook-$round" -- \
      /usr/bin/python3 "$repo/samples/ddp_trainer/train_ddp.py" --steps 40 --warmup-steps 5 >"$out" 2>&1
    rate=$(grep -o 'throughput [0-9.]*' "$out" | cut -d' ' -f2)
    cpu=$(awk '/^cpu/ {print $2 + $3}' "$out.time")
    echo "round $round $knob=$hook: ${rate:-?} samples/s, cpu ${cpu:-?} s"
    echo "$hook $rate $cpu" >>"$work/all"
  done
done
/usr/bin/python3 - "$work/all" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 3]
med = {h: (statistics.median(float(r[1]) for r in rows if r[0] == h), statistics.median(float(r[2]) for r in rows if r[0] == h)) for h in ("1", "0")}
print("median rate: on %.1f, off %.1f samples/s (ratio %.3f); median cpu: on %.2f, off %.2f s (ratio %.3f)"
      % (med["1"][0], med["0"][0], med["1"][0] / med["0"][0], med["1"][1], med["0"][1], med["1"][1] / med["0"][1]))
PY
