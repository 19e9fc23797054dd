#!/bin/bash
# The Debian package as a user gets it: CPack builds it from this build tree, it is unpacked into a fresh prefix
# (dpkg-deb -x, as dpkg would install it, without root), and collscope runs from there alone: the demo traces
# and analyzes the packaged sample with the packaged preload, `find_package(collscope)` builds a job against the
# packaged header, and the man page and search spaces are where the docs say.
# Usage: package_test.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR
set -u
build=$1 source=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The package.
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$scratch/pkg" >"$scratch/cpack.log" 2>&1 ||
  { cat "$scratch/cpack.log"; echo "FAIL: cpack"; exit 1; }
deb=$(ls "$scratch"/pkg/collscope_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { cat "$scratch/cpack.log"; echo "FAIL: no collscope_*.deb"; exit 1; }
echo "package: $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for dep in openmpi-bin libc6 libsqlite3-0 libstdc++6; do
  [[ ",$depends," == *", $dep"* || "$depends" == "$dep"* ]] || fail "Depends lacks $dep"
done

# Its files: everything the docs use.
dpkg-deb -c "$deb" | awk '{ print $NF }' | sed 's|^\./|/|' >"$scratch/files.txt"
for f in /usr/bin/collscope /usr/lib/collscope/libcollscope-preload.so /usr/lib/collscope/libcollscope-nccl-tuner.so \
  /usr/libexec/collscope/fusion_trainer /usr/include/collscope/tracer/fusion.h \
  /usr/lib/cmake/collscope/collscopeConfig.cmake /usr/lib/cmake/collscope/collscopeTargets.cmake \
  /usr/share/collscope/samples/fusion_trainer/space.yaml /usr/share/collscope/samples/spaces/horovod.yaml \
  /usr/share/man/man1/collscope.1.gz /usr/share/doc/collscope/README.md; do
  grep -qx "$f" "$scratch/files.txt" || fail "the package lacks $f"
done
[ -x "$build/bin/collscope-view" ] && { grep -qx /usr/bin/collscope-view "$scratch/files.txt" || fail "the package lacks the viewer"; }
grep -E '^/usr/(bin|lib|libexec)/.*(_test|_bench)$' "$scratch/files.txt" && fail "tests or benchmarks in the package"

# Unpacked into a fresh prefix, with nothing of the build tree in reach.
root=$scratch/root
dpkg-deb -x "$deb" "$root" || { echo "FAIL: dpkg-deb -x"; exit 1; }
unset COLLSCOPE_PRELOAD COLLSCOPE_BIN
cd "$scratch" || exit 1
timeout 120 "$root/usr/bin/collscope" demo --steps 6 -o demo >demo.txt 2>&1 || { cat demo.txt; fail "demo from the package: exit $?"; }
[ -e demo/rank-00000.sqlite ] && [ -e demo/rank-00001.sqlite ] || fail "demo from the package: no rank files"
grep -q "^== collscope analysis of demo ==" demo.txt || { cat demo.txt; fail "demo from the package: no analysis"; }
grep -q "collscope tune $root/usr/share/collscope/samples/fusion_trainer/space.yaml" demo.txt ||
  { cat demo.txt; fail "demo from the package: no tune command with the packaged space"; }
"$root/usr/bin/collscope" analyze demo --format html -o demo.html || fail "analyze from the package: exit $?"
"$root/usr/bin/collscope" trace -o traced -- true 2>trace.txt; grep -q "nothing traced" trace.txt || fail "trace from the package"
if [ -x "$root/usr/bin/collscope-view" ]; then
  env -u DISPLAY "$root/usr/bin/collscope" view --help >view.txt 2>&1 || { cat view.txt; fail "view --help from the package"; }
  grep -q -- "--screenshot" view.txt || { cat view.txt; fail "view --help from the package lists no options"; }
fi
gzip -dc "$root/usr/share/man/man1/collscope.1.gz" | grep -q '^\.SS collscope analyze' || fail "man page without analyze"

# A job's build finds the package: the C API header through collscope::api, the tools through variables.
cmake -S "$source/tests/install/consumer" -B consumer -DCMAKE_PREFIX_PATH="$root/usr" >consumer.log 2>&1 &&
  cmake --build consumer >>consumer.log 2>&1 && ./consumer/uses_fusion_api >>consumer.log 2>&1 ||
  { cat consumer.log; fail "find_package(collscope) from the package"; }
grep -q "COLLSCOPE_PRELOAD=$root/usr/lib/collscope/libcollscope-preload.so" consumer.log ||
  { cat consumer.log; fail "the package config's COLLSCOPE_PRELOAD"; }

[ "$failures" -eq 0 ] && echo "package: built, unpacked into a fresh prefix, the demo and find_package work from it"
exit $((failures > 0))
