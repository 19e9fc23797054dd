#!/usr/bin/env bash
# README command (a): install the Debian packages, build what the demo needs (the `demo` target: collscope, the
# preload, the sample trainer, the viewer; not the tests, which scripts/test.sh builds), and run the demo (the fusion
# trainer on 2 MPI ranks, one made slow, traced and analysed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh demo
exec build/bin/collscope demo -o collscope-demo
