#!/usr/bin/env bash
# The GPU check: on one machine with one NVIDIA GPU, proves collscope's GPU paths and writes a summary.
#   (a) a CUDA C++ program making NCCL collectives on a one-rank communicator plus its own kernel, copies and a
#       memset, traced: CUPTI kernels and copies with device and stream, the NCCL calls with GPU times, each NCCL
#       kernel and copy tied to its collective by correlation id, counts equal to what the program did;
#   (b) the NCCL profiler plugin with the preload and alone: one row per call; on two ranks (two processes on the
#       one GPU, NCCL's socket transport over loopback) every collective with kernel-channel GPU times,
#       algorithm, protocol, channels and network transfers;
#   (c) the tuner plugin loaded by NCCL and applying a rule, in NCCL's own NCCL_DEBUG=INFO lines;
#   (d) a PyTorch DDP training loop (world size 1, NCCL backend) traced without code changes;
#   (e) its step time traced over untraced, with the ratio.
#
#   tests/gpu/run.sh                 everything; without a GPU: "SKIP: no GPU found", exit 0
#   tests/gpu/run.sh --build-only    only compile the CUDA programs (CI: nvcc, no GPU)
#   tests/gpu/run.sh --overhead-only only (e), with ROUNDS rounds (default 3)
#
# What it runs: the carried build (COLLSCOPE_CARRY, default <repo>/gpu-carry, made on the build machine by
# tests/gpu/prepare_carry.sh: collscope, its libraries, the plugins, the CUDA programs, CUPTI 13), else
# COLLSCOPE_BIN (a build's bin/) with the CUDA programs compiled here by nvcc. NCCL: PyTorch's own (its
# nvidia-nccl package), else the CUDA toolkit's. Needs: bash, python3 (+ torch for (d)/(e)), timeout; not cmake,
# not MPI, not the sqlite3 tool. Output: WORK_DIR (default a temporary directory) and summary.txt there; when
# $OUT is set (the GPU machine's return folder) the summary and the logs are copied there too.
# Budget: about 4 minutes on an H200 (every command has its own time limit).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
carry="${COLLSCOPE_CARRY:-$repo/gpu-carry}"
work="${WORK_DIR:-$(mktemp -d -t collscope-gpu-check.XXXXXX)}"
mkdir -p "$work"
summary="$work/summary.txt"
build_only=0 overhead_only=0
[[ "${1:-}" == "--build-only" ]] && build_only=1
[[ "${1:-}" == "--overhead-only" ]] && overhead_only=1
started=$(date +%s)
: >"$summary"

say() { echo "gpu check: $*"; }
results=()
failed=0
# record NAME STATUS DETAIL: one summary line per check (STATUS: PASS, FAIL, SKIP, INFO)
record() {
  local line="$1: $2${3:+ -- $3}"
  results+=("$line")
  say "$line"
  echo "$line" >>"$summary"
  [[ "$2" == FAIL ]] && failed=$((failed + 1))
  return 0
}
finish() {
  {
    echo "---"
    echo "elapsed: $(( $(date +%s) - started )) s; failed checks: $failed; work: $work"
  } >>"$summary"
  if [[ -n "${OUT:-}" && -d "${OUT:-}" ]]; then
    cp "$summary" "$OUT/" 2>/dev/null
    mkdir -p "$OUT/logs" && find "$work" -maxdepth 2 -name '*.log' -size -2M -exec cp {} "$OUT/logs/" \; 2>/dev/null
  fi
  echo "===== summary ($summary) ====="
  cat "$summary"
  exit $(( failed > 0 ? 1 : 0 ))
}

# ---- the CUDA programs --------------------------------------------------------------------------------------
cuda="${CUDA_HOME:-/usr/local/cuda}"
nvcc="$cuda/bin/nvcc"
[[ -x "$nvcc" ]] || nvcc="$(command -v nvcc || true)"
python="$(command -v python3 || true)"

# libnccl.so.2 and nccl.h: PyTorch's (what its jobs use), else the toolkit's.
nccl_lib="" nccl_inc=""
if [[ -n "$python" ]]; then
  nccl_root="$("$python" -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || true)"
  [[ -n "$nccl_root" && -e "$nccl_root/lib/libnccl.so.2" ]] && nccl_lib="$nccl_root/lib"
  [[ -n "$nccl_root" && -e "$nccl_root/include/nccl.h" ]] && nccl_inc="$nccl_root/include"
fi
for d in "$cuda/lib64" "$cuda/lib" "$cuda/targets/x86_64-linux/lib" /usr/lib/x86_64-linux-gnu; do
  [[ -z "$nccl_lib" && -e "$d/libnccl.so.2" ]] && nccl_lib="$d"
done
for d in "$cuda/include" /usr/include; do
  [[ -z "$nccl_inc" && -e "$d/nccl.h" ]] && nccl_inc="$d"
done

programs="$work/bin"
mkdir -p "$programs"
build_programs() {
  [[ -n "$nvcc" ]] || { say "nvcc not found (set CUDA_HOME)"; return 1; }
  [[ -n "$nccl_inc" && -n "$nccl_lib" ]] || { say "nccl.h or libnccl.so.2 not found"; return 1; }
  local p
  for p in nccl_gpu_check nccl_pair_check; do
    say "compiling $p.cu with $nvcc (NCCL from $nccl_lib)"
    timeout 300 "$nvcc" -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
      -o "$programs/$p" "$here/$p.cu" -I"$nccl_inc" -I"$cuda/include" -L"$nccl_lib" -lnccl >"$work/nvcc-$p.log" 2>&1 \
      || { cat "$work/nvcc-$p.log"; return 1; }
  done
}

if (( build_only )); then
  if [[ -z "$nvcc" || -z "$nccl_inc" ]]; then say "SKIP: nvcc or nccl.h not found: nothing compiled"; exit 0; fi
  build_programs || { say "FAILED: the CUDA programs do not compile"; exit 1; }
  say "built $programs/nccl_gpu_check and nccl_pair_check (--build-only: not run)"
  exit 0
fi

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  # CI: still compile what can be compiled, so the programs never rot.
  if [[ -n "$nvcc" && -n "$nccl_inc" ]]; then build_programs >/dev/null || { say "FAILED: the CUDA programs do not compile"; exit 1; }; fi
  say "SKIP: no GPU found (nvidia-smi lists no device); nothing was run"
  exit 0
fi
record "machine" INFO "$(nvidia-smi -L | head -1); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1); compute mode $(nvidia-smi --query-gpu=compute_mode --format=csv,noheader | head -1)"
[[ -n "$python" ]] || { record "python3" FAIL "not found: the trace checks need it"; finish; }

# ---- collscope: the carried build, else COLLSCOPE_BIN -----------------------------------------------------------
if [[ -x "$carry/bin/collscope" ]]; then
  bin="$carry/bin"
  export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # Our C++ runtime only where the machine's is older than the one collscope was built with.
  if ! "$bin/collscope" --help >/dev/null 2>"$work/collscope-start.log" && grep -q GLIBCXX "$work/collscope-start.log"; then
    export LD_LIBRARY_PATH="$carry/lib-cxx:$LD_LIBRARY_PATH"
  fi
  [[ -x "$carry/bin/nccl_gpu_check" ]] && cp "$carry/bin/nccl_gpu_check" "$carry/bin/nccl_pair_check" "$programs/"
  record "build" INFO "carried from $(cat "$carry/MANIFEST" 2>/dev/null | head -1)"
elif [[ -n "${COLLSCOPE_BIN:-}" && -x "$COLLSCOPE_BIN/collscope" ]]; then
  bin="$COLLSCOPE_BIN"
  record "build" INFO "COLLSCOPE_BIN=$bin"
else
  record "collscope" FAIL "no carried build in $carry and no COLLSCOPE_BIN (make one with tests/gpu/prepare_carry.sh)"
  finish
fi
lib="$bin/../lib"
if ! "$bin/collscope" --help >/dev/null 2>"$work/collscope-start.log"; then
  record "collscope starts" FAIL "$(head -3 "$work/collscope-start.log" | tr '\n' ' ')"
  finish
fi
if [[ ! -x "$programs/nccl_gpu_check" || ! -x "$programs/nccl_pair_check" ]]; then
  build_programs || { record "CUDA programs" FAIL "none carried and nvcc could not build them"; finish; }
fi
export LD_LIBRARY_PATH="$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# CUPTI 13 (the API the tracer was built with): the machine's, else the carried one.
cupti=""
for c in "$cuda/extras/CUPTI/lib64/libcupti.so.13" "$cuda/lib64/libcupti.so.13" \
         "$("$python" -c 'import nvidia.cuda_cupti as n; print(list(n.__path__)[0])' 2>/dev/null)/lib/libcupti.so.13" \
         "$carry/lib-cupti/libcupti.so.13"; do
  [[ -z "$cupti" && -e "$c" ]] && cupti="$c"
done
[[ -n "$cupti" ]] && export COLLSCOPE_CUPTI_LIBRARY="$cupti"
torch_line="$(timeout 120 "$python" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())), "gpu", torch.cuda.is_available())' 2>&1 | tail -n 1)"
record "software" INFO "NCCL lib $nccl_lib; CUPTI ${cupti:-none}; torch: $torch_line"
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}"
collscope="$bin/collscope"
check() { "$python" "$here/check_trace.py" "$@"; }

if (( ! overhead_only )); then
# ---- (a) one rank, traced ---------------------------------------------------------------------------------------
say "(a) one-rank NCCL job under collscope trace"
timeout 180 "$collscope" trace -o "$work/a" -- "$programs/nccl_gpu_check" >"$work/a.log" 2>&1
rc=$?
if (( rc != 0 )) || ! grep -q '^result 2.0$' "$work/a.log"; then
  record "(a) one-rank job traced" FAIL "exit $rc or wrong result: $(tail -n 3 "$work/a.log" | tr '\n' ' ')"
else
  check one-rank "$work/a" "$work/a.log" >"$work/a-check.log" 2>&1
  st=$?
  cat "$work/a-check.log"
  if (( st == 0 )); then record "(a) one-rank job: CUPTI, NCCL calls, ties, GPU times" PASS
  else record "(a) one-rank job: CUPTI, NCCL calls, ties, GPU times" FAIL "$(grep -c FAIL "$work/a-check.log") checks failed, see a-check.log"; fi
fi

# ---- (b) the profiler plugin, one rank ---------------------------------------------------------------------------
say "(b) one-rank job with the NCCL profiler plugin, with the preload and alone"
for mode in with alone; do
  flags=(--nccl-profiler)
  [[ $mode == alone ]] && flags+=(--no-preload)
  timeout 180 "$collscope" trace "${flags[@]}" -o "$work/b1-$mode" -- env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV "$programs/nccl_gpu_check" >"$work/b1-$mode.log" 2>&1
  rc=$?
  loaded="$(grep -m1 -o 'PROFILER/Plugin: Loaded [^ ]* (v[0-9])' "$work/b1-$mode.log")"
  if (( rc != 0 )) || ! grep -q '^result 2.0$' "$work/b1-$mode.log"; then
    record "(b) one rank, profiler $mode preload" FAIL "exit $rc or wrong result"
    continue
  fi
  check "$([[ $mode == alone ]] && echo one-rank-alone || echo one-rank-profiler)" "$work/b1-$mode" "$work/b1-$mode.log" >"$work/b1-$mode-check.log" 2>&1
  st=$?
  cat "$work/b1-$mode-check.log"
  record "(b) one rank, profiler $mode preload: one row per call" "$([[ $st -eq 0 ]] && echo PASS || echo FAIL)" "${loaded:-NCCL did not say it loaded the plugin}"
done

# ---- (b, c) two ranks on the one GPU ----------------------------------------------------------------------------
# Two processes, two "hosts" for NCCL (NCCL_HOSTID), the socket transport over loopback: a real network path.
pair_env=(NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1)
run_pair() {  # TAG [trace flags...]: both ranks under one command (traced: one run directory)
  local tag="$1"; shift
  local id="$work/$tag.id"
  rm -f "$id"
  local envs program log0 log1
  envs="$(printf '%q ' "${pair_env[@]}")"
  program="$(printf '%q' "$programs/nccl_pair_check")"
  id="$(printf '%q' "$id")" log0="$(printf '%q' "$work/$tag-0.log")" log1="$(printf '%q' "$work/$tag-1.log")"
  local job="env $envs NCCL_HOSTID=collscope-pair-0 RANK=0 $program 0 $id >$log0 2>&1 & a=\$!
             env $envs NCCL_HOSTID=collscope-pair-1 RANK=1 $program 1 $id >$log1 2>&1 & b=\$!
             wait \$a; ra=\$?; wait \$b; rb=\$?; exit \$(( ra | rb ))"
  if (( $# )); then timeout 300 "$collscope" trace "$@" -o "$work/$tag" -- sh -c "$job"
  else timeout 300 sh -c "$job"; fi
}
pair_ok() { grep -q '^result ok$' "$work/$1-0.log" && grep -q '^result ok$' "$work/$1-1.log"; }

say "(b) two ranks on one GPU: plain run first"
run_pair pair-plain
rc=$?
if (( rc != 0 )) || ! pair_ok pair-plain; then
  record "(b) two ranks on one GPU (socket transport)" FAIL "exit $rc: $(tail -n 2 "$work/pair-plain-0.log" "$work/pair-plain-1.log" 2>/dev/null | tr '\n' ' ' | cut -c1-400)"
  record "(b) two ranks with the profiler" SKIP "the two-rank job does not run here"
  record "(c) tuner plugin applying a rule" SKIP "the two-rank job does not run here (NCCL asks the tuner only for 2+ ranks)"
else
  record "(b) two ranks on one GPU (socket transport)" PASS "$(grep -m1 -o 'collectives [0-9]*' "$work/pair-plain-0.log") per rank"
  say "(b) two ranks, preload + profiler plugin"
  run_pair pair-both --nccl-profiler
  rc=$?
  if (( rc != 0 )) || ! pair_ok pair-both; then record "(b) two ranks, preload + profiler" FAIL "exit $rc or wrong result"
  else
    check pair "$work/pair-both" "$work/pair-both-0.log" "$work/pair-both-1.log" >"$work/pair-both-check.log" 2>&1
    st=$?; cat "$work/pair-both-check.log"
    record "(b) two ranks, preload + profiler: one row per collective, kernel-channel GPU times, network" "$([[ $st -eq 0 ]] && echo PASS || echo FAIL)"
  fi
  say "(b) two ranks, profiler plugin alone"
  run_pair pair-alone --nccl-profiler --no-preload
  rc=$?
  if (( rc != 0 )) || ! pair_ok pair-alone; then record "(b) two ranks, profiler alone" FAIL "exit $rc or wrong result"
  else
    check pair-alone "$work/pair-alone" "$work/pair-alone-0.log" "$work/pair-alone-1.log" "$work/pair-both" >"$work/pair-alone-check.log" 2>&1
    st=$?; cat "$work/pair-alone-check.log"
    record "(b) two ranks, profiler alone: the rows the interposer writes" "$([[ $st -eq 0 ]] && echo PASS || echo FAIL)"
  fi

  say "(c) tuner plugin on two ranks"
  printf 'allreduce 0 inf ring ll 1\n' >"$work/tuner.rules"
  pair_env+=(NCCL_TUNER_PLUGIN="$lib/libcollscope-nccl-tuner.so" COLLSCOPE_NCCL_TUNER_RULES="$work/tuner.rules"
             NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING)
  run_pair pair-tuner
  rc=$?
  log="$work/pair-tuner-0.log"
  using="$(grep -m1 -o 'TUNER/Plugin: Using collscope (v[0-9])' "$log")"
  ours="$(grep -m1 -o 'collscope tuner: rule 1 (allreduce 0 inf ring ll 1) decides allreduce of [0-9]* bytes' "$log")"
  # Alone, each allreduce gets the rule's one channel. A group's allreduces share one kernel plan, which NCCL
  # spreads over the sum of its tasks' channel counts (enqueue.cc, scheduleCollTasksToPlan): the group of two
  # below runs on channels {0..1}, one task possibly straddling both. RING/LL everywhere either way.
  alone_sizes='(4096|262144|4194304)' grouped_sizes='(1024|2097152)'
  applied="$(grep -cE "AllReduce: $alone_sizes Bytes -> Algo RING proto LL channel\{Lo..Hi\}=\{0..0\}" "$log")"
  grouped="$(grep -cE "AllReduce: $grouped_sizes Bytes -> Algo RING proto LL channel\{Lo..Hi\}=\{0..[01]\}" "$log")"
  others="$(grep 'AllReduce: [0-9]* Bytes -> Algo' "$log" | grep -vcE 'Algo RING proto LL channel\{Lo..Hi\}=\{0..[01]\}')"
  wide="$(grep -E "AllReduce: $alone_sizes Bytes -> Algo" "$log" | grep -vc 'channel{Lo..Hi}={0..0}')"
  if (( rc == 0 )) && pair_ok pair-tuner && [[ -n "$using" && -n "$ours" ]] && (( applied > 0 && grouped > 0 && others == 0 && wide == 0 )); then
    record "(c) tuner plugin loaded by NCCL and applying a rule" PASS "$using; $ours; NCCL: $applied lone allreduces RING/LL on channel 0 only, $grouped grouped RING/LL within the group's 2 channels"
  else
    record "(c) tuner plugin loaded by NCCL and applying a rule" FAIL "exit $rc; '${using:-not loaded}'; '${ours:-no rule decided}'; lone RING/LL/1ch $applied (wider $wide), grouped RING/LL $grouped, other choices $others"
  fi
fi

# ---- (d) PyTorch DDP, traced without code changes ------------------------------------------------------------
if ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  record "(d) PyTorch DDP traced" FAIL "torch with CUDA not importable: $torch_line"
  record "(e) traced / untraced step time" SKIP "no torch"
  finish
fi
say "(d) PyTorch DDP training loop under collscope trace"
timeout 300 "$collscope" trace -o "$work/d" -- "$python" "$here/ddp_train.py" --steps 40 --warmup 5 >"$work/d.log" 2>&1
rc=$?
if (( rc != 0 )); then
  record "(d) PyTorch DDP traced" FAIL "exit $rc: $(tail -n 3 "$work/d.log" | tr '\n' ' ')"
else
  timeout 120 "$bin/collscope" analyze "$work/d" --format json >"$work/d-analyze.json" 2>"$work/d-analyze.log"
  check ddp "$work/d" "$work/d.log" "$work/d-analyze.json" >"$work/d-check.log" 2>&1
  st=$?; cat "$work/d-check.log"
  record "(d) PyTorch DDP traced: steps, phases, NCCL calls, kernels" "$([[ $st -eq 0 ]] && echo PASS || echo FAIL)" "$(grep -E 'FAIL' "$work/d-check.log" | head -2 | tr '\n' ' ')"
fi

fi  # overhead_only

# ---- (e) overhead: alternate untraced / traced, median step times -----------------------------------------------
# ROUNDS rounds (default 3), each running every variant once in turn (the machine's drift falls on all alike); a variant's ratio
# is the median over rounds of (its median step / the round's untraced median step). The breakdown variants say
# where a cost comes from: without the Python annotation, without CUPTI.
rounds="${ROUNDS:-3}"
# Every run on the same cores: a launch-bound step's time otherwise varies by some 20 % from process to process
# with where the scheduler puts it.
pin=()
command -v taskset >/dev/null 2>&1 && (( $(nproc) >= 8 )) && pin=(taskset -c 2-7)
say "(e) step time, untraced vs traced (alternating, $rounds rounds${pin:+, pinned to cores 2-7})"
step_ms() { grep -m1 '^step_ms_median' "$1" | awk '{print $2}'; }
variants=(plain traced profiled no-python no-cupti)
declare -A ms
for ((i = 1; i <= rounds; i++)); do
  for v in "${variants[@]}"; do
    job=("$python" "$here/ddp_train.py" --steps 200 --warmup 20)
    case $v in
      plain) cmd=("${job[@]}") ;;
      traced) cmd=("$collscope" trace -o "$work/e-$v-$i" -- "${job[@]}") ;;
      profiled) cmd=("$collscope" trace --nccl-profiler -o "$work/e-$v-$i" -- "${job[@]}") ;;
      no-python) cmd=("$collscope" trace --no-python-annotation -o "$work/e-$v-$i" -- "${job[@]}") ;;
      no-cupti) cmd=(env COLLSCOPE_CUPTI=0 "$collscope" trace -o "$work/e-$v-$i" -- "${job[@]}") ;;
    esac
    # The pin goes before collscope (its affinity passes to the job): `collscope trace -- taskset ...` would
    # hide that the job is Python.
    timeout 300 "${pin[@]}" "${cmd[@]}" >"$work/e-$v-$i.log" 2>&1 && ms[$v]+="$(step_ms "$work/e-$v-$i.log") "
  done
done
ratio_of() {  # VARIANT: the median over rounds of variant/plain, or nothing when a run failed
  "$python" - "${ms[plain]:-}" "${ms[$1]:-}" "$rounds" <<'PY'
import statistics, sys
p, t = sys.argv[1].split(), sys.argv[2].split()
if len(p) == len(t) == int(sys.argv[3]):
    print(f"{statistics.median(float(b) / float(a) for a, b in zip(p, t)):.3f}")
PY
}
ratio="$(ratio_of traced)"
if [[ -n "$ratio" ]]; then
  detail="untraced ${ms[plain]}ms, traced ${ms[traced]}ms (median step of each run, $rounds rounds): ratio $ratio"
  for v in profiled no-python no-cupti; do
    r="$(ratio_of $v)"
    detail="$detail; $v ${ms[$v]:-failed }ms: ${r:-n/a}"
  done
  record "(e) traced / untraced step time" "$("$python" -c "print('PASS' if $ratio <= 1.10 else 'FAIL')")" "$detail (bound 1.10)"
else
  record "(e) traced / untraced step time" FAIL "runs failed: untraced ${ms[plain]:-none}, traced ${ms[traced]:-none}"
fi
finish
