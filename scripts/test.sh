#!/usr/bin/env bash
# README command (b): install the Debian packages, build, and run the whole test suite (CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
# Tests run one at a time: several use MPI with more ranks than this 2-core machine has cores, and timing
# assertions (durations within 5 %, straggler attribution) must not compete with each other for the CPUs.
ctest --output-on-failure --timeout 600
