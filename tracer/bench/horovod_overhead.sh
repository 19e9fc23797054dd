#!/usr/bin/env bash
# What tracing costs real Horovod: the fixtures' train_hvd.py (tests/data/horovod-0.28.1-cpu; Horovod 0.28.1 built
# by ../shared/tools/build-horovod.sh, its site directory given), 2 ranks, 40 steps, batch 64, Horovod's defaults
# (its background thread negotiates in MPI every 1 ms). Per round, in an order rotated each round: untraced; traced
# as a user runs it; traced without CPU samples (COLLSCOPE_CPU_SAMPLE_US=0); traced without the Python annotation.
# Prints the job's own median step (rank 0, after its warm-up) of each run, then per arm the median over rounds
# and its ratio to untraced.
#   tracer/bench/horovod_overhead.sh BUILD_DIR HOROVOD_SITE [ROUNDS=4]
set -euo pipefail
build=$(cd "${1:?BUILD_DIR}" && pwd)
site=$(cd "${2:?HOROVOD_SITE (DEST/site of build-horovod.sh)}" && pwd)
rounds=${3:-4}
here=$(cd "$(dirname "$0")/../.." && pwd)
job=$here/tests/data/horovod-0.28.1-cpu/train_hvd.py
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONPATH=$site
mpi=(mpirun -np 2 --oversubscribe --mca btl self,vader -x PYTHONPATH)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
arms=(untraced traced no-cpu-samples no-annotation)
run_arm() {  # ARM -> the job's median step (ms)
  local out=$work/$1.out
  rm -rf "$work/run"
  case $1 in
    untraced) "${mpi[@]}" /usr/bin/python3 "$job" --steps 40 --batch-size 64 > "$out" 2>&1 ;;
    traced) "$build/bin/collscope" trace -o "$work/run" -- "${mpi[@]}" /usr/bin/python3 "$job" --steps 40 \
              --batch-size 64 > "$out" 2>&1 ;;
    no-cpu-samples) COLLSCOPE_CPU_SAMPLE_US=0 "$build/bin/collscope" trace -o "$work/run" -- "${mpi[@]}" \
              -x COLLSCOPE_CPU_SAMPLE_US /usr/bin/python3 "$job" --steps 40 --batch-size 64 > "$out" 2>&1 ;;
    no-annotation) "$build/bin/collscope" trace --no-python-annotation -o "$work/run" -- "${mpi[@]}" \
              /usr/bin/python3 "$job" --steps 40 --batch-size 64 > "$out" 2>&1 ;;
  esac
  sed -n 's/.*median step \([0-9.]*\) ms.*/\1/p' "$out"
}
echo "horovod_overhead: train_hvd.py, 2 ranks ($(nproc) cores), $rounds rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < rounds; r++)); do
  line="round $((r + 1)):"
  for ((a = 0; a < ${#arms[@]}; a++)); do
    arm=${arms[$(((a + r) % ${#arms[@]}))]}
    step=$(run_arm "$arm")
    echo "$arm $step" >> "$work/steps"
    line+=" $arm $step ms;"
  done
  echo "$line"
done
median() { sort -n | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
base=$(awk '$1 == "untraced" {print $2}' "$work/steps" | median)
for arm in "${arms[@]}"; do
  m=$(awk -v a="$arm" '$1 == a {print $2}' "$work/steps" | median)
  awk -v a="$arm" -v m="$m" -v b="$base" 'BEGIN {printf "horovod_overhead: %s median step %.1f ms, %.3f x untraced\n", a, m, m / b}'
done
