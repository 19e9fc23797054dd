#!/bin/sh
# `collscope view` as a user types it, without a display: arguments reach the viewer in order, a bad run
# gives one line naming it and exit 2, and an interactive start without a screen says so instead of aborting.
# Usage: cli_view_test.sh COLLSCOPE WRITE_SYNTHETIC_RUN SCRATCH_DIR
set -u
collscope=$1 writer=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
"$writer" "$scratch/run" >/dev/null || exit 1
fail() { echo "FAIL: $*"; exit 1; }
run() { env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM timeout 60 "$collscope" view "$@" >"$scratch/out" 2>&1; }

run --screenshot "$scratch/first.png" "$scratch/run"; rc=$?
[ $rc -eq 0 ] || { cat "$scratch/out"; fail "screenshot option first: exit $rc"; }
[ "$(stat -c %s "$scratch/first.png")" -gt 20000 ] || fail "screenshot option first: no picture"

run "$scratch/run" --screenshot "$scratch/last.png"; rc=$?
[ $rc -eq 0 ] || { cat "$scratch/out"; fail "screenshot option last: exit $rc"; }
[ "$(stat -c %s "$scratch/last.png")" -gt 20000 ] || fail "screenshot option last: no picture"

run "$scratch/missing" --screenshot "$scratch/bad.png"; rc=$?
[ $rc -eq 2 ] || fail "missing run: exit $rc, expected 2"
grep -qx "collscope-view: $scratch/missing: no such run directory" "$scratch/out" || { cat "$scratch/out"; fail "missing run: no one-line message naming it"; }

run "$scratch/run"; rc=$?
[ $rc -eq 2 ] || fail "no display: exit $rc, expected 2"
grep -q "^collscope-view: no display" "$scratch/out" || { cat "$scratch/out"; fail "no display: no message"; }
echo "collscope view: 4 of 4 cases as expected"
