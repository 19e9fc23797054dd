#!/usr/bin/env bash
# What tracing costs a real point-to-point code: Debian's LAMMPS (`lmp`, package lammps) on LAMMPS's own LJ melt
# bench (tracer/bench/lammps/in.lj: 32 000 atoms, 100 steps), untraced and traced alternated PAIRS times, ranks =
# cores. Prints LAMMPS's own "Loop time" for each run, the median traced/untraced ratio, and what the tracer
# recorded per rank file: events, dropped events, flushes.
#   tracer/bench/lammps_overhead.sh [BUILD_DIR] [PAIRS] [RANKS]
set -euo pipefail
# Absolute: the runs start inside a scratch directory, where a relative BUILD_DIR (the documented `build`) would not
# be found and the script ended silently at the first traced run.
build=$(cd "${1:-build}" && pwd) || { echo "lammps_overhead: no build directory ${1:-build}" >&2; exit 2; }
pairs=${2:-5}
ranks=${3:-$(nproc)}
here=$(cd "$(dirname "$0")" && pwd)
command -v lmp > /dev/null || { echo "lammps_overhead: no lmp (apt-get install lammps)" >&2; exit 2; }
mpi=(mpirun -np "$ranks" --bind-to core --mca btl self,vader)
[ "$ranks" -le "$(nproc)" ] || mpi+=(--oversubscribe)
[ "$(id -u)" -ne 0 ] || mpi+=(--allow-run-as-root)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
loop_time() { sed -n 's/^Loop time of \([0-9.]*\) .*/\1/p' "$1"; }
echo "lammps_overhead: lmp -in in.lj on $ranks ranks ($(nproc) cores), $pairs alternated pairs, load $(cut -d' ' -f1-3 /proc/loadavg)"
ratios=()
for ((i = 0; i < pairs; i++)); do
  (cd "$work" && "${mpi[@]}" lmp -in "$here/lammps/in.lj" -log none > untraced.$i 2>&1)
  rm -rf "$work/run"
  (cd "$work" && "$build/bin/collscope" trace -o "$work/run" -- "${mpi[@]}" lmp -in "$here/lammps/in.lj" -log none \
     > traced.$i 2>&1)
  u=$(loop_time "$work/untraced.$i") t=$(loop_time "$work/traced.$i")
  counts=$(for f in "$work"/run/rank-*.sqlite; do
    sqlite3 "$f" "SELECT (SELECT coalesce(sum(count), 0) FROM event_batches) + (SELECT count(*) FROM collectives) +
                         (SELECT count(*) FROM point_to_point), (SELECT value FROM meta WHERE key = 'events_dropped'),
                         (SELECT count(*) FROM tracer_flushes)" | tr '|' ' '
  done | awk '{e += $1; d += $2; f += $3} END {printf "%d events, %d dropped, %d flushes", e, d, f}')
  ratio=$(awk -v t="$t" -v u="$u" 'BEGIN {printf "%.3f", t / u}')
  ratios+=("$ratio")
  echo "lammps_overhead: pair $((i + 1)): untraced ${u} s, traced ${t} s, ratio $ratio; traced run: $counts"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{r[NR] = $1} END {m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2;
  printf "lammps_overhead: median traced/untraced loop time %.3f over %d pairs (min %.3f, max %.3f)\n", m, NR, r[1], r[NR]}'
