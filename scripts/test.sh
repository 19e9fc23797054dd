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
cd ..

# The build without the optional components (COLLSCOPE_WITH_ANALYZER/AUTOTUNER/FORMATS=OFF), whose code paths the
# plain build never compiles (#ifdef COLLSCOPE_HAVE_* in the CLI, COLLSCOPE_GUI_HAVE_ANALYZER in the viewer): the
# CLI and the viewer compile and link, and the CLI starts. Those two programs only, no tests (40 s, warm ccache).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
mkdir -p build-without-components
cmake -S . -B build-without-components -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLSCOPE_BUILD_TESTS=OFF \
  -DCOLLSCOPE_BUILD_BENCHMARKS=OFF -DCOLLSCOPE_WITH_ANALYZER=OFF -DCOLLSCOPE_WITH_AUTOTUNER=OFF \
  -DCOLLSCOPE_WITH_FORMATS=OFF >build-without-components/configure.log 2>&1 ||
  { cat build-without-components/configure.log; exit 1; }
targets=(collscope)
if [[ -d build-without-components/gui ]]; then targets+=(collscope-view); fi
cmake --build build-without-components -j"$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}"
build-without-components/bin/collscope --help >/dev/null

# Checking builds (docs/reliability.md): ASan+UBSan and TSan builds of what the readers', the fuzz and the
# tracer's tests need, and those tests: an estimated 11 minutes of a cold CI run on 2 idle cores, 4 with a warm ccache
# (docs/performance.md, "CI time"). COLLSCOPE_SANITIZE_CHECKS=0 skips them.
scripts/sanitize.sh
