#!/usr/bin/env bash
# `collscope analyze RUN` alone and as an MPI job, in the same run: each command ROUNDS times, interleaved (one round
# runs every command once), so that the machine's load falls on all alike. Prints each command's median wall time
# and peak RSS (of its largest process), its ratio to the plain command and to one process on one core, and checks
# that every report is byte-identical to the plain command's (docs/performance.md, "Under a launcher").
# Usage: analyzer/bench/analyze_under_mpirun.sh BUILD_DIR RUN_DIR [ROUNDS=3]
#   RUN_DIR, e.g.: BUILD_DIR/bin/analyzer_bench --ranks 64 --collectives 160000 --dir /tmp/cb160  -> /tmp/cb160/160000
set -euo pipefail
collscope="$(cd "${1:?BUILD_DIR}" && pwd)/bin/collscope"
run="${2:?RUN_DIR}" rounds=${3:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work="$(mktemp -d -t collscope-analyze-mpirun.XXXXXX)"
trap 'rm -rf "$work"' EXIT

names=("plain (every core)" "one core (taskset -c 0)" "mpirun -np 1" "mpirun -np 2" "mpirun -np 4 (oversubscribed)")
command_of() {  # INDEX OUTPUT
  case $1 in
    0) echo "$collscope analyze $run -o $2" ;;
    1) echo "taskset -c 0 $collscope analyze $run -o $2" ;;
    2) echo "mpirun -np 1 $collscope analyze $run -o $2" ;;
    3) echo "mpirun -np 2 $collscope analyze $run -o $2" ;;
    4) echo "mpirun --oversubscribe -np 4 $collscope analyze $run -o $2" ;;
  esac
}
for ((round = 1; round <= rounds; round++)); do
  for c in "${!names[@]}"; do
    out="$work/report-$c-$round.txt"
    # shellcheck disable=SC2046  # the command's words
    /usr/bin/time -f '%e %M' -o "$work/time-$c-$round" $(command_of "$c" "$out") 2>"$work/err-$c-$round" ||
      { echo "analyze_under_mpirun.sh: '${names[$c]}' failed:" >&2; cat "$work/err-$c-$round" >&2; exit 1; }
    cmp -s "$out" "$work/report-0-1.txt" || { echo "analyze_under_mpirun.sh: '${names[$c]}' wrote another report" >&2; exit 1; }
  done
done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
declare -a wall rss
for c in "${!names[@]}"; do
  wall[c]=$(for f in "$work"/time-"$c"-*; do cut -d' ' -f1 "$f"; done | median)
  rss[c]=$(for f in "$work"/time-"$c"-*; do cut -d' ' -f2 "$f"; done | median)
done
echo "collscope analyze $run: $rounds rounds, medians; every report byte-identical to the plain command's"
printf '%-32s %9s %9s %12s %14s\n' command "wall s" "RSS MiB" "vs plain" "vs one core"
for c in "${!names[@]}"; do
  awk -v n="${names[$c]}" -v w="${wall[c]}" -v r="${rss[c]}" -v p="${wall[0]}" -v o="${wall[1]}" \
    'BEGIN {printf "%-32s %9.2f %9.0f %11.2fx %13.2fx\n", n, w, r / 1024, p / w, o / w}'
done
# The load each process 0 reported (mpirun lines).
grep -h "loaded by" "$work"/err-3-* "$work"/err-4-* | sed 's/^collscope analyze: //' || true
