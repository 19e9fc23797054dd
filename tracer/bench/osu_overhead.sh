#!/usr/bin/env bash
# What tracing costs a latency-bound MPI job, measured as OSU measures it: tracer/bench/osu_style (OSU 7's default
# iterations: 10 000 timed calls per size up to 8 KiB) on RANKS ranks, untraced and traced alternated PAIRS times.
# Prints, per benchmark, the median over pairs of traced/untraced latency at each size, the median of those ratios
# over 4 B - 4 KiB and the worst size; then what the tracer recorded: events, dropped events, flushes, bytes/event.
#   tracer/bench/osu_overhead.sh [BUILD_DIR] [PAIRS] [RANKS]      (a build with -DCOLLSCOPE_BUILD_BENCHMARKS=ON)
# With every core busy too: run `tracer/bench/osu_overhead.sh build 5 $(nproc)` (ranks = cores, as on a node).
set -euo pipefail
build=${1:-build}
pairs=${2:-5}
ranks=${3:-2}
mpi=(mpirun -np "$ranks" --bind-to core --mca btl self,vader)
[ "$ranks" -le "$(nproc)" ] || mpi+=(--oversubscribe)
[ "$(id -u)" -ne 0 ] || mpi+=(--allow-run-as-root)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ((i = 0; i < pairs; i++)); do
  "${mpi[@]}" "$build/bin/osu_style" > "$work/untraced.$i"
  rm -rf "$work/run"
  "$build/bin/collscope" trace -o "$work/run" -- "${mpi[@]}" "$build/bin/osu_style" > "$work/traced.$i" 2> "$work/trace.$i.err"
  for f in "$work"/run/rank-*.sqlite; do
    sqlite3 "$f" "SELECT (SELECT coalesce(sum(count), 0) FROM event_batches) + (SELECT count(*) FROM collectives) +
                         (SELECT count(*) FROM point_to_point),
                  (SELECT value FROM meta WHERE key = 'events_dropped'),
                  (SELECT count(*) FROM tracer_flushes), (SELECT coalesce(sum(end_ns - start_ns), 0) FROM tracer_flushes)" \
      | tr '|' ' ' >> "$work/events.$i"
    stat -c %s "$f" >> "$work/bytes.$i"
  done
done
echo "osu_overhead: osu_style on $ranks ranks ($(nproc) cores), $pairs alternated pairs, OSU default iterations"
python3 - "$work" "$pairs" <<'PY'
import statistics, sys, os
work, pairs = sys.argv[1], int(sys.argv[2])
def table(path):
    t = {}
    for line in open(path):
        name, size, us = line.split()
        t[(name, int(size))] = float(us)
    return t
untraced = [table(os.path.join(work, "untraced.%d" % i)) for i in range(pairs)]
traced = [table(os.path.join(work, "traced.%d" % i)) for i in range(pairs)]
for name in ["latency", "bw", "allreduce", "bcast", "allgather"]:
    sizes = sorted(s for (n, s) in untraced[0] if n == name)
    ratios = {s: statistics.median(traced[i][(name, s)] / untraced[i][(name, s)] for i in range(pairs)) for s in sizes}
    small = [ratios[s] for s in sizes if 4 <= s <= 4096]
    worst = max(sizes, key=lambda s: ratios[s])
    u = {s: statistics.median(x[(name, s)] for x in untraced) for s in sizes}
    print("osu_overhead: %-9s traced/untraced median over 4 B-4 KiB %.3f, worst %.3f at %d B (untraced %.2f us there)"
          % (name, statistics.median(small), ratios[worst], worst, u[worst]))
    print("osu_overhead: %-9s per size: %s" % (name, " ".join("%d:%.2f" % (s, ratios[s]) for s in sizes)))
events = dropped = flushes = flush_ns = 0
files = 0
for i in range(pairs):
    for line in open(os.path.join(work, "events.%d" % i)):
        e, d, f, fns = (int(x) for x in line.split())
        events += e; dropped += d; flushes += f; flush_ns += fns; files += 1
size = sum(int(l) for i in range(pairs) for l in open(os.path.join(work, "bytes.%d" % i)))
print("osu_overhead: traced runs recorded %d events per rank file on average, %d dropped in all, %d tracer flushes "
      "(%.1f ms), %.1f bytes per event on disk" % (events / files, dropped, flushes, flush_ns / 1e6, size / events))
PY
