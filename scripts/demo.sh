#!/usr/bin/env bash
# README command (a): install the Debian packages, build, and run the demo (the fusion trainer on 2 MPI ranks,
# one made slow, traced and analysed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/bin/collscope demo -o collscope-demo
