#!/usr/bin/env bash
# How often plain runs get a straggler, and which cause: the fusion trainer (2 ranks on this machine's cores, 8
# steps) traced N times beside a busy neighbour (a spinning process, unpinned: every core busy), then M times with
# the ranks bound one to a core (rank r on core r) and K spinners pinned to core 1: rank 1's core is shared, so
# rank 1 is the one that waits for a CPU (unbound, the scheduler moves either rank onto the spinners' core).
# One line per run: TAG N straggler|noise|none CAUSE_CODE RANK (cause 1 more work, 2 same phases more CPU,
# 3 waiting for a CPU, 4 off a CPU; RANK the straggler named), contention:RANKS (the CPU contention finding's
# ranks, or contention:- without one) and the note's cause when within noise.
# Usage: samples/fusion_trainer/bench/straggler_causes.sh BUILD_DIR [N=50] [M=10] [K=1]   (docs/performance.md)
set -uo pipefail
bin="$(cd "${1:?BUILD_DIR}" && pwd)/bin" n=${2:-50} m=${3:-10} k=${4:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work="$(mktemp -d -t collscope-straggler-causes.XXXXXX)"
run() {  # TAG COUNT STEPS MPIRUN_PLACEMENT...
  local tag=$1 count=$2 steps=$3
  shift 3
  for i in $(seq 1 "$count"); do
    d="$work/$tag-$i"
    "$bin/collscope" trace -o "$d" -- mpirun -np 2 "$@" --mca btl self,vader "$bin/fusion_trainer" \
      --steps "$steps" --model-scale 0.02 >/dev/null 2>&1
    "$bin/collscope" analyze "$d" --format json -o "$d/analysis.json" >/dev/null 2>&1
    python3 - "$tag" "$i" "$d/analysis.json" <<'PY'
import json, sys
tag, i, path = sys.argv[1:]
a = json.load(open(path))
s = [f for f in a.get("findings", []) if f.get("kind") == "straggler"]
n = [x for x in a.get("notes", []) if "within noise" in x]
cause = s[0]["evidence"].get("cause_code", "") if s else ""
rank = s[0]["ranks"][0] if s else ""
c = [f for f in a.get("findings", []) if f.get("kind") == "cpu_contention"]
contention = "contention:" + (",".join(str(r) for r in c[0]["ranks"]) if c else "-")
why = n[0].split("What there is of it: ")[1][:60] if n and "What there is of it: " in n[0] else ""
print(tag, i, "straggler" if s else ("noise" if n else "none"), cause, rank, contention, why)
PY
  done
}
sh -c 'while :; do :; done' & neighbour=$!
run plain "$n" 8 --oversubscribe
kill "$neighbour"
hogs=()
for ((h = 0; h < k; h++)); do
  taskset -c 1 sh -c 'while :; do :; done' &
  hogs+=($!)
done
run shared-core "$m" 12 --bind-to core --map-by core
kill "${hogs[@]}"
rm -rf "$work"
