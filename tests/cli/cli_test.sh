#!/bin/bash
# The command line as a new user meets it: mistyped commands and options get "did you mean" and the
# subcommand's help, help texts are clean and fit 100 columns, `trace` reports what it traced (or that nothing
# was traced, and why), refuses to overwrite an earlier run without --force, and the demo warns when ranks
# exceed cores and keeps the job's JSON lines off the terminal.
# Usage: cli_test.sh COLLSCOPE FUSION_TRAINER SCRATCH_DIR
set -u
collscope=$1 trainer=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# expect RC PATTERN ARGS...: runs collscope ARGS, checks the exit code and that the output matches PATTERN.
expect() {
  local want_rc=$1 pattern=$2
  shift 2
  timeout 120 "$collscope" "$@" >out.txt 2>&1
  local rc=$?
  [ "$rc" -eq "$want_rc" ] || { cat out.txt; fail "collscope $*: exit $rc, expected $want_rc"; return; }
  grep -Eq -- "$pattern" out.txt || { cat out.txt; fail "collscope $*: no line matching: $pattern"; }
}

expect 2 "'analyse' is not a collscope command; did you mean 'analyze'\? \(see 'collscope --help'\)" analyse run1
expect 2 "^collscope analyze: --fmt is not an option .*did you mean --format\? \(see 'collscope analyze --help'\)" \
  analyze --fmt json run1
expect 2 "did you mean --trials\? \(see 'collscope tune --help'\)" tune space.yaml --trails 3
expect 2 "^collscope analyze: --batch-size: -3 must not be negative \(see 'collscope analyze --help'\)" \
  analyze run1 --batch-size -3
expect 2 "^collscope: a command is needed" 

# Help: no CLI11 decorations, every line within 100 columns.
for cmd in "" trace demo analyze compare tune "tune show" export import; do
  # shellcheck disable=SC2086
  "$collscope" $cmd --help >help.txt 2>&1 || fail "collscope $cmd --help: exit $?"
  grep -Eq '\{false\}|\[SUBCOMMAND\]|=[a-z]' help.txt && { cat help.txt; fail "collscope $cmd --help: CLI11 clutter"; }
  awk -v c="collscope $cmd --help" 'length($0) > 100 { print c ": line of " length($0) " columns: " $0; bad = 1 } END { exit bad }' \
    help.txt || fail "collscope $cmd --help: lines over 100 columns"
done
"$collscope" view --help >help.txt 2>&1 || fail "collscope view --help: exit $?"
grep -q -- "--screenshot" help.txt || { cat help.txt; fail "collscope view --help lists no options"; }

# trace of a command without MPI: says so, leaves no empty directory, keeps the command's exit code.
expect 0 "nothing traced: none of the processes of .true. started the tracer" trace -o untraced -- true
[ -e untraced ] && fail "trace -- true left the run directory behind"

# trace of a real MPI job: a summary and the next command.
mpi=(mpirun -np 2 --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
expect 0 "^collscope trace: 2 rank files in run1 \(.*\): [0-9]+ collectives" trace -o run1 -- "${mpi[@]}" "$trainer" --steps 3
grep -q "^Next: collscope analyze run1" out.txt || fail "trace: no next command"
# An earlier run is not overwritten without --force.
expect 2 "^collscope: run1: holds an earlier run \(2 rank files\); use --force" trace -o run1 -- true
[ -e run1/rank-00001.sqlite ] || fail "trace -o run1 (refused) removed the earlier run's files"
expect 0 "nothing traced" trace -o run1 --force -- true
[ -e run1/rank-00000.sqlite ] && fail "trace --force kept the earlier run's files"

# The demo on fewer cores than ranks says the straggler may be lost; the job's JSON lines go to a file.
taskset -c 0 "$collscope" demo --ranks 2 --steps 3 -o demo >demo.txt 2>&1 || { cat demo.txt; fail "demo: exit $?"; }
grep -q "2 ranks on 1 cores" demo.txt || { cat demo.txt; fail "demo on 1 core: no warning"; }
awk 'length($0) > 100 { print "demo: line of " length($0) " columns: " substr($0, 1, 120); bad = 1 } END { exit bad }' \
  demo.txt || fail "demo: lines over 100 columns"
grep -q COLLSCOPE_SAMPLE_REPORT demo/job-output.log || fail "demo: the job's output is not in demo/job-output.log"

[ "$failures" -eq 0 ] && echo "collscope CLI: all cases as expected"
exit $((failures > 0))
