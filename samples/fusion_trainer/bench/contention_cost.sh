#!/usr/bin/env bash
# The CPU contention finding's cost against the step time it says contention adds: N pairs of fusion trainer runs
# (2 ranks bound one to a core, `mpirun --bind-to core --map-by core`, 20 steps), each a run with the cores to
# themselves and a run with K spinners pinned to core 1 (rank 1's core), in alternating order. Per pair: the
# median step of each (the analysis's own), the contended run's finding (the most any rank's step thread waited
# for a CPU per step), and its error against the real difference. One line per pair, then the median error.
# Usage: samples/fusion_trainer/bench/contention_cost.sh BUILD_DIR [N=5] [K=3] [RECORD_DIR]   (docs/performance.md)
# RECORD_DIR: the last pair's traces are kept there (alone/, shared-core/).
set -uo pipefail
bin="$(cd "${1:?BUILD_DIR}" && pwd)/bin" n=${2:-5} k=${3:-3} record=${4:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work="$(mktemp -d -t collscope-contention-cost.XXXXXX)"
trap 'rm -rf "$work"' EXIT
trace() {  # DIR
  "$bin/collscope" trace -o "$1" -- mpirun -np 2 --bind-to core --map-by core --mca btl self,vader \
    "$bin/fusion_trainer" --steps 20 --model-scale 0.02 >/dev/null 2>&1
  "$bin/collscope" analyze "$1" --format json -o "$1/analysis.json" >/dev/null 2>&1
}
for i in $(seq 1 "$n"); do
  alone="$work/alone-$i" shared="$work/shared-core-$i"
  ((i % 2)) && trace "$alone"
  hogs=()
  for ((h = 0; h < k; h++)); do
    taskset -c 1 sh -c 'while :; do :; done' &
    hogs+=($!)
  done
  trace "$shared"
  kill "${hogs[@]}"
  wait "${hogs[@]}" 2>/dev/null
  ((i % 2)) || trace "$alone"
  python3 - "$i" "$alone/analysis.json" "$shared/analysis.json" <<'PY'
import json, sys
i, alone, shared = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
base, slow = alone["summary"]["median_step_ns"] / 1e6, shared["summary"]["median_step_ns"] / 1e6
f = [x for x in shared["findings"] if x["kind"] == "cpu_contention"]
g = [x for x in alone["findings"] if x["kind"] == "cpu_contention"]
est = f[0]["evidence"]["run_queue_per_step_ns"] / 1e6 if f else 0.0
total = sum(r.get("run_queue_per_step_ns", 0) for r in shared["ranks"]) / 1e6
real = slow - base
err = (est - real) / real * 100 if real > 0 else float("nan")
ranks = ",".join(str(r) for r in f[0]["ranks"]) if f else "-"
quiet = max(r.get("run_queue_share_pct", 0) for r in alone["ranks"])
print(f"pair {i}: step alone {base:.2f} ms (finding: {'yes' if g else 'no'}; step threads waiting <= {quiet:.0f} %), shared core {slow:.2f} ms; "
      f"finding {'ranks ' + ranks if f else 'absent'}, {est:.2f} ms per step against {real:.2f} ms added: "
      f"error {err:+.0f} %; sum over ranks {total:.2f} ms: {((total - real) / real * 100 if real > 0 else float('nan')):+.0f} %")
PY
done | tee "$work/pairs.txt"
python3 - "$work/pairs.txt" <<'PY'
import re, statistics, sys
errs = [float(m.group(1)) for m in re.finditer(r"error ([+-][0-9]+) %", open(sys.argv[1]).read())]
if errs:
    print(f"median error {statistics.median(errs):+.0f} % over {len(errs)} pairs (range {min(errs):+.0f} to {max(errs):+.0f} %)")
PY
if [[ -n $record ]]; then
  mkdir -p "$record" && rm -rf "$record/alone" "$record/shared-core"
  cp -r "$work/alone-$n" "$record/alone" && cp -r "$work/shared-core-$n" "$record/shared-core"
  rm -f "$record"/*/analysis.json
fi
