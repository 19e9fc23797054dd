#!/bin/sh
# The HTML reports as a browser shows them: headless Chromium renders the analysis report of a traced
# run and the tuner report of a real study; each screenshot must show a page (png_check), and the laid-out page,
# checked by report_render_check.js, must have no horizontal overflow, charts with legends, ticks and units, no
# label over another or cut off, humanised sizes and no console error.
# Usage: report_render_test.sh COLLSCOPE PNG_CHECK WRITE_SYNTHETIC_RUN RUN_DIR|- SCRATCH_DIR
# (RUN_DIR: the traced sample run; with - the synthetic lockstep run is written and analysed instead.)
set -u
collscope=$(realpath "$1") png_check=$(realpath "$2") writer=$3 run=$4 scratch=$(realpath -m "$5")
here=$(dirname "$0")
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
command -v chromium >/dev/null || fail "chromium not installed (scripts/install-deps.sh installs it)"
# browser NAME ARGS: one Chromium run with NAME's own profile and log (the two reports are checked in parallel).
browser() { name=$1; shift; timeout 30 chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
  --no-first-run --user-data-dir="$scratch/profile-$name" "$@" 2>>"$scratch/chromium-$name.log"; }

# check PAGE.html WIDTH HEIGHT UNITS_JSON: a screenshot of the page as written at WIDTH×HEIGHT, then the DOM of a
# copy with the checks injected (error hooks first in <head>, the measuring script last in <body>) laid out in a
# narrower window, 760 px (half a laptop screen), where overflow shows first.
check() {
  page=$1 w=$2 h=$3 units=$4 name=$(basename "$(dirname "$1")")
  browser "$name" --window-size="$w,$h" --screenshot="$scratch/$name.png" "file://$page" >/dev/null || fail "$page: chromium failed"
  "$png_check" "$scratch/$name.png" "$w" "$h" || fail "$page: the screenshot shows no rendered page"
  w=760
  probe=$(dirname "$page")/render-check.html
  { sed 's|<head>|<head><script>window.__renderErrors=[];addEventListener("error",e=>__renderErrors.push(e.message\|\|("failed to load "+(e.target.src\|\|e.target.href))),true);(c=>{console.error=(...a)=>{__renderErrors.push(a.join(" "));c(...a)}})(console.error.bind(console));</script>|' "$page" \
      | sed 's|</body>.*||'
    printf '<script>const UNITS=%s;\n' "$units"; cat "$here/report_render_check.js"; printf '</script></body></html>\n'
  } >"$probe"
  browser "$name" --window-size="$w,$h" --dump-dom "file://$probe" >"$scratch/$name.dom" || fail "$page: chromium --dump-dom failed"
  result=$(sed -n '/<pre id="render-check">/,/<\/pre>/p' "$scratch/$name.dom" | sed 's|<[^>]*>||g')
  [ -n "$result" ] || fail "$page: the check script did not run"
  echo "$name at ${w}px: $result"
  [ "$(echo "$result" | sed -n '2,$p' | grep -c .)" -eq 0 ] || fail "$page: problems above"
  # The page's own scripts or resources reported nothing on the console.
  ! grep -i "CONSOLE" "$scratch/chromium-$name.log" || fail "$page: console messages above"
}

if [ "$run" = "-" ]; then
  run=$scratch/synthetic-run
  "$writer" "$run" >/dev/null || fail "writing the synthetic run"
fi
[ -f "$run/rank-00000.sqlite" ] || fail "no run in $run"
mkdir -p "$scratch/analysis"
"$collscope" analyze "$run" --format html -o "$scratch/analysis/index.html" >/dev/null 2>"$scratch/analyze.log" ||
  { cat "$scratch/analyze.log"; fail "analyze --format html"; }
analysis_units='{"Late":["µs|ms| s"],"Lateness":["µs|ms| s"],"Wait":["µs|ms| s"],"Step time per rank":["step","s)"],
  "Where the step time goes":["step","s)"],"Bus bandwidth vs message size":["(GB/s)","message size"],
  "Time in point-to-point calls per rank":["rank","s)"],"Point-to-point messages by size":["messages","B"],
  "Bytes sent point-to-point":["receiver rank","B)"]}'
check "$scratch/analysis/index.html" 1000 2400 "$analysis_units" >"$scratch/analysis.out" 2>&1 &
analysis_check=$!

# A real study: `collscope tune` running awk as the job (a known optimum at fusion_mib 30, tree 50 better).
cat >"$scratch/space.yaml" <<'YAML'
knobs:
  - {name: fusion_mib, env: X_FUSION, type: real, min: 1, max: 100, default: 10}
  - {name: cycle_ms, env: X_CYCLE, type: integer, min: 1, max: 50, default: 5}
  - {name: algo, type: categorical, values: [ring, tree]}
objective: {kind: regex, regex: 'score ([0-9.]+)'}
trial: {timeout_s: 20, confirm_top: 1}
YAML
(cd "$scratch" && "$collscope" tune space.yaml --study study.sqlite --trials 12 --no-progress -- /usr/bin/awk \
  -v x='{fusion_mib}' -v c='{cycle_ms}' -v a='{algo}' 'BEGIN{printf "score %f\n", 1000-(x-30)^2/3+c+(a=="tree"?50:0)}' \
  >tune.log 2>&1) || { cat "$scratch/tune.log"; fail "collscope tune"; }
"$collscope" tune show "$scratch/study.sqlite" --report "$scratch/tune" >/dev/null || fail "tune show --report"
tune_units='{"Convergence":["trial","objective"],"Effect of fusion_mib":["fusion_mib","objective"],
  "Effect of cycle_ms":["cycle_ms","objective"],"Effect of algo":["ring","tree","objective"]}'
check "$scratch/tune/index.html" 1200 1400 "$tune_units"
wait $analysis_check; rc=$?
cat "$scratch/analysis.out"
[ $rc -eq 0 ] || exit 1
echo "reports render in Chromium: screenshots in $scratch"
