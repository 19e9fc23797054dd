#!/usr/bin/env bash
# README command (b): install the Debian packages, build, and run the whole test suite (CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
# The disk free where everything is built (the plain build tree alone takes 1.3 GiB: docs/performance.md, "CI
# time"): a run that fails writing then says how much there was.
df -Ph . | awk 'NR == 2 { print "test.sh: " $4 " free on " $6 }'
scripts/install-deps.sh
scripts/build.sh
cd build
# Tests run one at a time: several use MPI with more ranks than this 2-core machine has cores, and timing
# assertions (durations within 5 %, straggler attribution) must not compete with each other for the CPUs.
ctest --output-on-failure --timeout 600

# Checking builds (docs/reliability.md): ASan+UBSan and TSan builds of what the readers', the fuzz and the
# tracer's tests need, and those tests: an estimated 11 minutes of a cold CI run on 2 idle cores, 4 with a warm ccache
# (docs/performance.md, "CI time"). COLLSCOPE_SANITIZE_CHECKS=0 skips them.
../scripts/sanitize.sh
