#!/bin/sh
# Screenshot of the main window on a real X server (Xvfb): the sample run when traced, else a synthetic run.
# Usage: screenshot_test.sh COLLSCOPE_VIEW WRITE_SYNTHETIC_RUN OUT.png SAMPLE_RUN_DIR|-
set -eu
viewer=$1 writer=$2 out=$3 run=$4
if [ "$run" = "-" ] || [ ! -d "$run" ]; then
  run=$(dirname "$out")/screenshot-synthetic-run
  "$writer" "$run"
fi
rm -f "$out"
timeout 50 xvfb-run -a -s "-screen 0 1600x1000x24" "$viewer" "$run" --screenshot "$out"
# A real picture, not an empty window: a PNG of the window size with many colours.
test -s "$out"
size=$(stat -c %s "$out")
[ "$size" -gt 20000 ] || { echo "screenshot too small: $size bytes"; exit 1; }
echo "saved $out ($size bytes) of $run"
