#!/usr/bin/env bash
# Makes the folder tests/gpu/run.sh takes to the GPU machine, which has CUDA, PyTorch and its NCCL but none of
# the Debian packages collscope builds with (SQLite, fmt, yaml-cpp, NLopt, CLI11, MPI): run here, where they are.
#   tests/gpu/prepare_carry.sh [BUILD_DIR (default build)] [OUT (default <repo>/gpu-carry)]
# OUT/bin: collscope (stripped) and the two CUDA programs (sm_90 + PTX, static CUDA runtime, libnccl.so.2 found at
# run time); OUT/lib: the preload, the NCCL profiler and tuner plugins and the non-glibc libraries they need;
# OUT/lib-cxx: this machine's libstdc++/libgcc_s, used there only if the machine's are older; OUT/lib-cupti:
# CUPTI 13, used there only if the machine has none; OUT/share/collscope/python: the sitecustomize of Python jobs;
# OUT/MANIFEST: what was built from. OUT is listed in
# .git/info/exclude, so it travels with the working tree but is never committed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-$repo/build}"
out="${2:-$repo/gpu-carry}"
cuda="${CUDA_HOME:-/usr/local/cuda}"

cmake --build "$build" -j2 --target collscope collscope-preload collscope-nccl-profiler collscope-nccl-tuner
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/lib-cxx" "$out/lib-cupti" "$out/share/collscope/python"
cp "$build/bin/collscope" "$out/bin/"
# The Python job's annotation (steps, forward/backward/optimizer): collscope finds it at ../share/collscope/python.
cp "$repo/tracer/python/sitecustomize.py" "$out/share/collscope/python/"
cp "$build/lib/libcollscope-preload.so" "$build/lib/libcollscope-nccl-profiler.so" "$build/lib/libcollscope-nccl-tuner.so" "$out/lib/"
strip --strip-debug "$out/bin/collscope" "$out"/lib/*.so

# Libraries beyond glibc and the C++ runtime that collscope or a library of ours needs.
for f in "$out/bin/collscope" "$out"/lib/libcollscope-*.so; do
  ldd "$f" | awk '/=> \// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libdl|librt|libpthread|libmvec|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r dep; do cp -L "$dep" "$out/lib/"; done
cp -L "$(g++ -print-file-name=libstdc++.so.6)" "$(g++ -print-file-name=libgcc_s.so.1)" "$out/lib-cxx/"
for c in "$cuda/extras/CUPTI/lib64/libcupti.so.13" "$cuda/lib64/libcupti.so.13"; do
  if [[ -e "$c" ]]; then cp -L "$c" "$out/lib-cupti/"; break; fi
done

for p in nccl_gpu_check nccl_pair_check; do
  "$cuda/bin/nvcc" -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
    -o "$out/bin/$p" "$here/$p.cu" -I"$cuda/include" -L"$cuda/lib64" -lnccl
done

{
  echo "commit $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet HEAD -- . ':!gpu-carry' || echo '+changes') built $(date -u +%FT%TZ) on $(uname -n)"
  echo "nvcc: $("$cuda/bin/nvcc" --version | tail -1)"
  echo "glibc needed: $(objdump -T "$out/bin/collscope" "$out"/lib/libcollscope-*.so | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1)"
  echo "libstdc++ needed: $(objdump -T "$out/bin/collscope" "$out"/lib/libcollscope-*.so | grep -o 'GLIBCXX_[0-9.]*' | sort -V | tail -1)"
  (cd "$out" && find . -type f | sort)
} >"$out/MANIFEST"

exclude="$(git -C "$repo" rev-parse --git-path info/exclude)"
[[ "$exclude" = /* ]] || exclude="$repo/$exclude"
mkdir -p "$(dirname "$exclude")"
grep -qx '/gpu-carry/' "$exclude" 2>/dev/null || echo '/gpu-carry/' >>"$exclude"
du -sh "$out"
