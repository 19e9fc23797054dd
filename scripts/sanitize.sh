#!/usr/bin/env bash
# Checking builds (docs/reliability.md): an ASan+UBSan build and a TSan build of what the tracer, store, run and
# reader tests need (not the viewer, the autotuner's tests or the benchmarks), and those tests. Separate from
# scripts/test.sh because the two builds add more than CI's 30-minute budget allows on 2 cores (times measured in
# docs/reliability.md). Run after scripts/install-deps.sh; takes no arguments. Exit 0: every test clean.
#   build-asan: -fsanitize=address,undefined; code loaded into traced jobs (the preload) gets UBSan in trap mode
#               (cmake/CollscopeSanitize.cmake). Tests: store, run/analysis, the physical-limits tests, the fuzz
#               test of every reader, the preload tests (real MPI jobs traced), the recorder's concurrency tests.
#   build-tsan: -fsanitize=thread. Tests: the recorder's ring and seqlocks, the store, the parallel run loader.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true

# check DIR SANITIZERS TEST_REGEX TARGETS...: configure, build the targets, run the tests the regex selects.
check() {
  local dir=$1 sanitizers=$2 tests=$3
  shift 3
  local started=$SECONDS
  mkdir -p "$dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLSCOPE_BUILD_BENCHMARKS=OFF -DCOLLSCOPE_BUILD_GUI=OFF \
    -DCOLLSCOPE_SANITIZE="$sanitizers" >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
  cmake --build "$dir" -j"$jobs" --target "$@"
  local built=$SECONDS
  # Tests one at a time, as in scripts/test.sh (MPI jobs with more ranks than cores, timing assertions).
  ctest --test-dir "$dir" --output-on-failure --timeout 600 -R "$tests"
  echo "sanitize.sh: $sanitizers: built in $((built - started)) s, tested in $((SECONDS - built)) s"
}

check build-asan address,undefined \
  '^(Store|Tables|Sqlite|BoundedRead|ReadOnly|Analyzer|AnalyzerCli|PhysicalLimits|Fuzz|Preload|Cli|PendingRequests|ThreadBuffer)\.' \
  collscope collscope-preload mpi_probe fusion_trainer trace_read_probe store_test read_only_test analyzer_test \
  analyzer_cli_test physical_limits_test input_fuzz_test preload_test pending_requests_test thread_buffer_test
check build-tsan thread '^(Store|Tables|Sqlite|BoundedRead|Analyzer|PendingRequests|ThreadBuffer)\.' \
  store_test analyzer_test pending_requests_test thread_buffer_test
