#!/usr/bin/env bash
# How far two traced runs of the same settings drift apart in step time on this machine: what the 250 % gate of
# RealRuns.CompareSameSettingsAndSlowdown must hold. N pairs of the fusion trainer (2 ranks, 20 steps, scale 0.02,
# as the test runs it), each compared with `collscope compare --max-regression 250%`; one line per pair (the new
# run's median step against the base's, in %, and compare's exit code), then how many pairs failed the gate and the
# largest change. Run it beside the load it is meant for (a spinning process, a build).
# Usage: samples/fusion_trainer/bench/same_settings_pairs.sh BUILD_DIR [N=100]   (docs/reliability.md)
set -uo pipefail
bin="$(cd "${1:?BUILD_DIR}" && pwd)/bin" n=${2:-100}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work="$(mktemp -d -t collscope-same-pairs.XXXXXX)"
trap 'rm -rf "$work"' EXIT
trace() {
  rm -rf "$1"
  timeout -s TERM 60 "$bin/collscope" trace -o "$1" -- mpirun -np 2 --oversubscribe --mca btl self,vader \
    "$bin/fusion_trainer" --steps 20 --model-scale 0.02 >/dev/null 2>&1
}
failed=0 worst=-1000
for i in $(seq 1 "$n"); do
  trace "$work/base" && trace "$work/again" || { echo "pair $i: a run failed"; continue; }
  "$bin/collscope" compare "$work/base" "$work/again" --max-regression 250% --allow-new-findings --format json \
    -o "$work/cmp.json" >/dev/null 2>&1
  rc=$?
  change=$(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
m = [m for m in c["metrics"] if m["name"] == "step_time"]
print("%.1f" % (100 * m[0]["relative_change"]) if m else "nan")' "$work/cmp.json" 2>/dev/null || echo nan)
  echo "pair $i: step ${change} %, compare exit $rc, load $(cut -d' ' -f1 /proc/loadavg)"
  ((rc == 0)) || failed=$((failed + 1))
  [[ $change != nan ]] && worst=$(python3 -c "print(max($worst, $change))")
done
echo "$failed of $n pairs past the 250 % gate; largest change +$worst %"
