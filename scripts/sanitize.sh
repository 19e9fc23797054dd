#!/usr/bin/env bash
# Checking builds (docs/reliability.md), run by scripts/test.sh (CI) after the plain suite: an ASan+UBSan build and
# a TSan build of only what their tests need (not the viewer, the benchmarks, the autotuner's, the formats' or the
# NCCL plugins' tests), at -O0 -g1, code loaded into jobs at -O1 (cmake/CollscopeSanitize.cmake), and those tests. Every sanitizer report fails its test
# (tests/CMakeLists.txt: halt_on_error, exitcode=86, -fno-sanitize-recover). Run after scripts/install-deps.sh;
# takes no arguments. Exit 0: every test clean. COLLSCOPE_SANITIZE_CHECKS=0 skips it (a quick local scripts/test.sh).
#   build-asan: -fsanitize=address,undefined; code loaded into traced jobs (the preload) gets UBSan in trap mode.
#               Tests: the store and reader tests, run/analysis, the physical-limits tests, analyze/compare on
#               hostile names, the fuzz test of every reader, the tracer tests (real MPI jobs traced), the
#               recorder's concurrency tests.
#   build-tsan: -fsanitize=thread. Tests: the recorder's rings and seqlocks (ThreadBuffer, PendingRequests), the
#               store, the analysis tests (the run loader reads rank files on several threads).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${COLLSCOPE_SANITIZE_CHECKS:-1}" == 0 ]]; then
  echo "sanitize.sh: skipped (COLLSCOPE_SANITIZE_CHECKS=0)"
  exit 0
fi
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

check build-tsan thread '^(Store|Tables|Sqlite|BoundedRead|Analyzer|Compare|Truncation|PendingRequests|ThreadBuffer)\.' \
  store_test analyzer_test pending_requests_test thread_buffer_test
check build-asan address,undefined \
  '^(Store|Tables|Sqlite|BoundedRead|ReadOnly|Analyzer|Compare|Truncation|AnalyzerCli|PhysicalLimits|RunShare|Fuzz|Preload|Cli|PendingRequests|ThreadBuffer)\.' \
  collscope collscope-preload mpi_probe fusion_trainer trace_read_probe store_test read_only_test analyzer_test \
  analyzer_cli_test physical_limits_test run_share_test input_fuzz_test preload_test pending_requests_test thread_buffer_test
