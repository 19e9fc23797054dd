#!/bin/bash
# Grid vs BO vs random over real traced runs of fusion_trainer (2 ranks). Prints the grid's best,
# the defaults' throughput, and per seed the best at 15 trials and trials-to-97 % of the grid's best.
# Usage: autotuner/bench/tune_benchmark.sh BUILD_DIR [OUT_DIR] [SEEDS] [GRID_LEVELS]
set -euo pipefail
build=$(realpath "${1:?build dir}"); out=${2:-/tmp/collscope-tune-bench}; seeds=${3:-5}; levels=${4:-4}
space=$(realpath "$(dirname "$0")/../../samples/fusion_trainer/space.yaml")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader
job=(mpirun -np 2 --oversubscribe --mca btl self,vader "$build/bin/fusion_trainer" --batch-size "{batch_size}" --steps 10 --warmup-steps 2 --max-batch-size 96)
rm -rf "$out"; mkdir -p "$out"; cd "$out"
tune() { "$build/bin/collscope" tune "$space" --no-progress --confirm-top 0 "$@" -- "${job[@]}" > /dev/null 2>&1 || true; }
best_of() { sqlite3 "$1" "SELECT max(score) FROM trials WHERE status='ok'${2:+ AND id<=$2}"; }
tune --study grid.sqlite --strategy grid --grid-levels "$levels" --trials 1000
grid_best=$(best_of grid.sqlite)
echo "grid ($levels levels/knob, $(sqlite3 grid.sqlite 'SELECT count(*) FROM trials') trials): best $grid_best samples/s"
HOROVOD_FUSION_THRESHOLD=134217728 HOROVOD_CYCLE_TIME=1 "$build/bin/collscope" trace -o defaults -- \
  mpirun -np 2 --oversubscribe --mca btl self,vader "$build/bin/fusion_trainer" --batch-size 32 --steps 10 --warmup-steps 2 --max-batch-size 96 \
  | grep -o 'throughput [0-9.]*' | sed 's/^/defaults (128 MiB, 1 ms, batch 32): /'
for strategy in bo random; do
  for seed in $(seq 1 "$seeds"); do
    tune --study "$strategy-$seed.sqlite" --strategy "$strategy" --seed "$seed" --trials 15
    reach=$(sqlite3 "$strategy-$seed.sqlite" "SELECT min(id) FROM trials WHERE status='ok' AND score >= 0.97 * $grid_best")
    echo "$strategy seed $seed: best@15 $(best_of "$strategy-$seed.sqlite" 15) ($(echo "scale=3; $(best_of "$strategy-$seed.sqlite" 15) / $grid_best" | bc)) trials-to-97% ${reach:->15}"
  done
done
