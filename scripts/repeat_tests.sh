#!/usr/bin/env bash
# Runs the built test suite (build/, after scripts/test.sh or scripts/build.sh) N times in a row and counts the
# failures of each test: how the suite's false-failure rate is measured (docs/performance.md, "Test suite under
# load"). Every run's ctest log is kept in build/repeat-tests/.
#
#   scripts/repeat_tests.sh [--timing] [--busy K] [--jobs J] [--pause-file F] N
#     --timing  only the tests whose outcome depends on time or the machine's load (the list below)
#     --busy K  K processes spinning on the CPU beside the tests for the whole loop (production nodes have no idle
#               core); 0 by default
#     --jobs J  ctest -jJ (1 by default, as the README's command runs them)
#     --pause-file F  before each run, wait while F exists, the spinners stopped: a quiet benchmark beside the
#               loop creates F, waits for "paused" in the log, runs, removes F (stopping the loop's processes
#               instead once stopped a test midway, which then timed out)
# Exit 0 when every run passed.
set -euo pipefail
cd "$(dirname "$0")/.."

# The tests whose outcome depends on time or the machine's load (docs/reliability.md, "Tests that depend on time",
# gives each one's basis): real jobs asserting durations, stragglers, waits, "no finding on a plain run", or counts
# that depend on scheduling (calls in flight, hang rows, kept iterations); loops that run until another thread has
# done enough, within 5 s; wall-clock bounds and deadlines (process timeouts, readers within 1-5 s, fuzz cases
# within 10 s, the viewer closing within 1 s); trials and traced jobs under timeouts. Tests of recorded or seeded
# synthetic runs are not here: their figures do not move.
timing_tests='^(RealRuns|FusionTrainer|Preload|SampleTrace|FormatsOnSample|PointToPointRuns|RealTuning|RealJobs|NeverDrop|TuneMemory|TuneResume|Fuzz|BoundedRead)\.|^ThreadBuffer\.(DrainSees|CallInFlight)|^PendingRequests\.Scans|^PhysicalLimits\.(SeqBeyond|TimelineTick)|^Process\.(Timeout|NoTimeout|Background|TerminateEscalates|Destroying|WhatHoldsThePipes)|^(torch_distributed_test|ddp_tune_test|python_annotation_test|gui_time_agreement_test|gui_viewer_test|gui_trace_sample_run|gui_trace_halo_run)$'

regex="" busy=0 jobs=1 runs="" pause_file=""
while (($#)); do
  case $1 in
    --timing) regex=$timing_tests ;;
    --busy) busy=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --pause-file) pause_file=$2; shift ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) runs=$1 ;;
  esac
  shift
done
[[ $runs =~ ^[0-9]+$ ]] || { echo "repeat_tests.sh: give the number of runs (--help)" >&2; exit 2; }
[[ -f build/CTestTestfile.cmake ]] || { echo "repeat_tests.sh: build/ has no test suite: run scripts/build.sh" >&2; exit 2; }

spinners=()
stop_spinners() { ((${#spinners[@]})) && kill "${spinners[@]}" 2>/dev/null; true; }
trap stop_spinners EXIT
for ((i = 0; i < busy; i++)); do
  (while :; do :; done) &
  spinners+=($!)
done

logs=build/repeat-tests
rm -rf "$logs" && mkdir -p "$logs"
failed_runs=0
for ((run = 1; run <= runs; run++)); do
  if [[ -n $pause_file && -e $pause_file ]]; then
    ((${#spinners[@]})) && kill -STOP "${spinners[@]}" 2>/dev/null
    echo "paused before run $run while $pause_file exists"
    while [[ -e $pause_file ]]; do sleep 1; done
    ((${#spinners[@]})) && kill -CONT "${spinners[@]}" 2>/dev/null
  fi
  started=$SECONDS
  status=0
  ctest --test-dir build --output-on-failure --timeout 600 -j"$jobs" ${regex:+-R "$regex"} >"$logs/run-$run.log" 2>&1 ||
    status=$?
  summary=$(grep -E 'tests passed|tests failed' "$logs/run-$run.log" | tail -1)
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "run $run/$runs: ${summary:-no summary (ctest exit $status)}; $((SECONDS - started)) s; load $load"
  ((status == 0)) || failed_runs=$((failed_runs + 1))
done

echo "$failed_runs of $runs runs failed"
# Per test, how many runs it failed in.
grep -h -E '^\s*[0-9]+ - .* \((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)\)' "$logs"/run-*.log 2>/dev/null |
  sed -E 's/^\s*[0-9]+ - //; s/ \(.*\)$//' | sort | uniq -c | sort -rn || true
((failed_runs == 0))
