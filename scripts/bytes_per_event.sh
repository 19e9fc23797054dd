#!/bin/sh
# Bytes per event on disk of a traced run (docs/performance.md): scripts/bytes_per_event.sh BUILD_DIR RUN_DIR.
# The rank files' size as the job left them, divided by the rows a reader sees in the event tables (collectives,
# point_to_point, nvtx_ranges, gpu_activities, buffers), counted in a copy that `collscope sql` expanded.
build=$1 run=$2
copy=$(mktemp -d)
cp -r "$run"/. "$copy"/
"$build"/bin/collscope sql "$copy" > /dev/null
python3 - "$run" "$copy" <<'PY'
import os, sqlite3, sys, glob
run, copy = sys.argv[1], sys.argv[2]
tables = ["collectives", "point_to_point", "nvtx_ranges", "gpu_activities", "buffers"]
size = sum(os.path.getsize(f) for f in glob.glob(run + "/rank-*.sqlite"))
counts = {t: 0 for t in tables}
for f in glob.glob(copy + "/rank-*.sqlite"):
    db = sqlite3.connect(f)
    for t in tables:
        counts[t] += db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
events = sum(counts.values())
print(f"{run}: {size} bytes, {events} events {counts}: {size / events:.1f} bytes per event")
PY
rm -rf "$copy"
