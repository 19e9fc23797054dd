#!/usr/bin/env bash
# A job whose gloo is not Debian's libgloo.so.0 (tests/tracer/gloo/foreign_gloo.cpp), traced: every gloo call passes
# through to it (the probe exits 0 only when all 5 arrived), and stderr says once that its calls are not recorded.
# Usage: foreign_gloo_test.sh COLLSCOPE PROBE SCRATCH_DIR
set -uo pipefail
collscope=$1 probe=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
"$collscope" trace -o "$scratch/run" -- "$probe" >"$scratch/out" 2>"$scratch/err"
rc=$?
fail=0
check() { if eval "$1"; then echo "ok   $2"; else echo "FAIL $2"; fail=1; fi; }
check '[ $rc -eq 0 ]' "the job's exit code 0 (every call reached its gloo): got $rc"
check 'grep -q "^foreign gloo calls: 5$" "$scratch/out"' "the job's output: $(cat "$scratch/out")"
lines=$(grep -c "gloo is inside .*libforeigngloo.so, not Debian's libgloo.so.0" "$scratch/err")
check '[ "$lines" -eq 1 ]' "one line on stderr naming the foreign gloo (got $lines): $(cat "$scratch/err")"
exit $fail
