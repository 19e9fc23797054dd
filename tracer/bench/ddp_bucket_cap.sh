#!/usr/bin/env bash
# The DDP bucket advice checked against real runs: the DDP test job (tests/tracer/python/ddp_gloo_job.py, 64
# layers of 128x128, 4 MiB of gradients, 2 ranks on gloo) traced at bucket_cap_mb 0.07 and at the value the
# finding suggests (25), alternated ROUNDS times; prints each run's median step and the finding.
# Usage: tracer/bench/ddp_bucket_cap.sh BUILD_DIR [ROUNDS=2]   (docs/performance.md)
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="$(cd "${1:?BUILD_DIR}" && pwd)/bin" rounds=${2:-2}
work="$(mktemp -d -t collscope-ddp-cap.XXXXXX)"
for round in $(seq 1 "$rounds"); do
  for cap in 0.07 25; do
    run="$work/$cap-$round"
    port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    for rank in 0 1; do
      COLLSCOPE_DDP_HOOK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 RANK=$rank timeout 120 "$bin/collscope" trace -o "$run" -- \
        /usr/bin/python3 "$repo/tests/tracer/python/ddp_gloo_job.py" --steps 20 --layers 64 --width 128 \
        --bucket-cap-mb "$cap" >/dev/null 2>&1 &
    done
    wait
    "$bin/collscope" analyze "$run" --format json | /usr/bin/python3 -c "
import json, sys
a = json.load(sys.stdin)
f = [x for x in a['findings'] if x['title'].startswith('DDP sends')]
print('round $round bucket_cap_mb $cap: median step %.2f ms; %s' % (a['summary']['median_step_ns'] / 1e6,
      'finding: last-bucket tail %.2f ms, suggests %g' % (f[0]['evidence']['last_bucket_tail_ns'] / 1e6,
      f[0]['evidence']['suggested_bucket_cap_mb']) if f else 'no DDP finding'))"
  done
done
rm -rf "$work"
