#!/usr/bin/env bash
# End-to-end cost of tracing: the fusion trainer's own throughput (samples/s) untraced vs traced, alternated A/B.
#   tracer/bench/e2e_overhead.sh [BUILD_DIR] [PAIRS] [TRAINER ARGS...]
set -euo pipefail
build=${1:-build}
pairs=${2:-6}
shift $(( $# >= 2 ? 2 : $# )) || true
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--steps 30 --warmup-steps 3)
mpi=(mpirun -np 2 --oversubscribe --mca btl self,vader)
[ "$(id -u)" -ne 0 ] || mpi+=(--allow-run-as-root)
run_dir=$(mktemp -d)
throughput() { grep -o 'throughput [0-9.]* samples/s' | awk '{print $2}'; }
untraced=(); traced=()
for ((i = 0; i < pairs; i++)); do
  untraced+=("$("${mpi[@]}" "$build/bin/fusion_trainer" "${args[@]}" | throughput)")
  traced+=("$("$build/bin/collscope" trace -o "$run_dir" -- "${mpi[@]}" "$build/bin/fusion_trainer" "${args[@]}" | throughput)")
done
rm -rf "$run_dir"
printf '%s\n' "${untraced[@]}" > /tmp/e2e_untraced.$$
printf '%s\n' "${traced[@]}" > /tmp/e2e_traced.$$
median() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mu=$(median /tmp/e2e_untraced.$$); mt=$(median /tmp/e2e_traced.$$)
echo "e2e_overhead: fusion_trainer ${args[*]} on 2 ranks, $pairs alternated pairs"
echo "e2e_overhead: untraced samples/s: ${untraced[*]}"
echo "e2e_overhead: traced   samples/s: ${traced[*]}"
awk -v u="$mu" -v t="$mt" 'BEGIN {printf "e2e_overhead: medians untraced %.1f, traced %.1f samples/s: traced/untraced = %.3f (%.1f %% slower)\n", u, t, t/u, 100*(1-t/u)}'
rm -f /tmp/e2e_untraced.$$ /tmp/e2e_traced.$$
