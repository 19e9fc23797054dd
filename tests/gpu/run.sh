#!/usr/bin/env bash
# GPU check of collscope's GPU capture: builds the tracer and a small CUDA+NCCL program (tests/gpu/
# nccl_gpu_check.cu), runs it on one GPU under `collscope trace`, and asserts the trace (check_trace.py): the NCCL
# calls with GPU times, the kernels, copies and memsets, the NVTX ranges and the fusion buffer's packed tensors.
#
#   tests/gpu/run.sh                 build + run + check (skips with exit 0 and a message when no GPU is found)
#   tests/gpu/run.sh --build-only    only compile the CUDA program (what CI does: no GPU there)
#
# Environment: BUILD_DIR (default build-gpucheck), COLLSCOPE_BIN (use an existing build's bin/ instead of
# building), CUDA_HOME (default /usr/local/cuda), WORK_DIR (default a temporary directory).
# Budget: under 5 minutes on a fresh machine (the build is of the tracer and CLI only).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cuda="${CUDA_HOME:-/usr/local/cuda}"
build_only=0
[[ "${1:-}" == "--build-only" ]] && build_only=1
work="${WORK_DIR:-$(mktemp -d -t collscope-gpu-check.XXXXXX)}"
mkdir -p "$work"

nvcc="$cuda/bin/nvcc"
if [[ ! -x "$nvcc" ]]; then
  nvcc="$(command -v nvcc || true)"
fi
if [[ -z "$nvcc" ]]; then
  echo "gpu check: SKIP: nvcc not found (set CUDA_HOME)"
  exit 0
fi
nccl_lib=""
for d in "$cuda/lib64" "$cuda/lib" "$cuda/targets/x86_64-linux/lib" /usr/lib/x86_64-linux-gnu; do
  if [[ -e "$d/libnccl.so" || -e "$d/libnccl.so.2" ]]; then nccl_lib="$d"; break; fi
done
if [[ -z "$nccl_lib" ]]; then
  echo "gpu check: SKIP: libnccl not found next to the CUDA toolkit"
  exit 0
fi

echo "gpu check: compiling nccl_gpu_check.cu with $nvcc"
"$nvcc" -O2 -std=c++17 -o "$work/nccl_gpu_check" "$here/nccl_gpu_check.cu" \
  -I"$cuda/include" -L"$nccl_lib" -Xlinker -rpath -Xlinker "$nccl_lib" -lnccl -ldl
if (( build_only )); then
  echo "gpu check: built $work/nccl_gpu_check (--build-only: not run)"
  exit 0
fi

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "gpu check: SKIP: no GPU found (nvidia-smi lists no device); nothing was run"
  exit 0
fi
nvidia-smi -L | head -1

if [[ -z "${COLLSCOPE_BIN:-}" ]]; then
  build="${BUILD_DIR:-$repo/build-gpucheck}"
  echo "gpu check: building collscope and the preload in $build"
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLSCOPE_BUILD_TESTS=OFF \
    -DCOLLSCOPE_BUILD_BENCHMARKS=OFF -DCOLLSCOPE_BUILD_GUI=OFF -DCOLLSCOPE_WITH_AUTOTUNER=OFF \
    >"$work/cmake.log"
  cmake --build "$build" --target collscope collscope-preload collscope-nccl-tuner -j"$(nproc)" >"$work/build.log"
  COLLSCOPE_BIN="$build/bin"
fi

run="$work/run"
rm -rf "$run"
echo "gpu check: running under collscope trace -o $run"
set +e
timeout 180 "$COLLSCOPE_BIN/collscope" trace -o "$run" -- "$work/nccl_gpu_check" >"$work/job.out" 2>"$work/job.err"
rc=$?
set -e
cat "$work/job.out"
if (( rc != 0 )); then
  echo "gpu check: FAILED: the traced job exited with $rc"; cat "$work/job.err"; exit 1
fi
if ! grep -q '^result 2.0$' "$work/job.out"; then
  echo "gpu check: FAILED: the job computed a wrong result under the tracer"; exit 1
fi
python3 "$here/check_trace.py" "$run/rank-00000.sqlite" "$work/job.out"

# The NCCL tuner plugin: NCCL must load it, read the rules and still compute the right result.
tuner="$COLLSCOPE_BIN/../lib/libcollscope-nccl-tuner.so"
if [[ ! -e "$tuner" ]]; then
  echo "gpu check: FAILED: $tuner not built"; exit 1
fi
printf 'allreduce 0 inf ring simple 2\n' >"$work/tuner.rules"
echo "gpu check: running with NCCL_TUNER_PLUGIN=$tuner"
set +e
NCCL_TUNER_PLUGIN="$tuner" COLLSCOPE_NCCL_TUNER_RULES="$work/tuner.rules" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING \
  timeout 180 "$work/nccl_gpu_check" >"$work/tuner.out" 2>&1
rc=$?
set -e
if (( rc != 0 )) || ! grep -q '^result 2.0$' "$work/tuner.out"; then
  echo "gpu check: FAILED: the job under the tuner plugin exited $rc or computed a wrong result"; tail -20 "$work/tuner.out"; exit 1
fi
if ! grep -q 'collscope tuner: 1 rules' "$work/tuner.out"; then
  echo "gpu check: FAILED: NCCL did not load the collscope tuner (no 'collscope tuner: 1 rules' in its log)"
  grep -i tuner "$work/tuner.out" | head; exit 1
fi
echo "gpu check: tuner plugin loaded by NCCL and its rules applied: OK"
