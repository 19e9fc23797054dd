#!/usr/bin/env bash
# Configures and builds collscope into ./build (one build tree shared by the demo and the tests).
# scripts/build.sh            everything (what the test command needs)
# scripts/build.sh TARGET...  only those targets and what they need (scripts/demo.sh: `demo`)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
# ccache: hit across clones in different folders (CI builds a fresh clone elsewhere).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLSCOPE_BUILD_BENCHMARKS=OFF >build-configure.log 2>&1 ||
  { cat build-configure.log; exit 1; }
grep -E "^-- collscope" build-configure.log || true
if [ $# -gt 0 ]; then
  cmake --build build -j"$jobs" --target "$@"
else
  cmake --build build -j"$jobs"
fi
