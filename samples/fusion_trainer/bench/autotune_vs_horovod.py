#!/usr/bin/env python3
"""collscope's tuner against HOROVOD_AUTOTUNE's method on the bundled trainer.

All tune fusion threshold and cycle time of fusion_trainer (batch fixed at the space's default) through
`collscope tune`: `--strategy horovod` (Horovod's method: 3 discarded warm-up samples, seed points (4 MB, 5 ms),
(32, 50), (16, 25), (8, 10), BO over [0, 64] MB x [1, 100] ms to 20 samples, score = bytes all-reduced per us),
`--strategy bo` (the defaults, the analyzer's advice, then the replay model's screen: docs/autotuner.md) and `bo
--no-model-screening` (the strategy's search after the advice), each given the same tuning time (`--time-budget` =
Horovod's, confirmation included). Then:
  - each winner's throughput, and the analyzer's advice's (the screened study's `advice` trial), in alternating
    untraced runs (ROUNDS each),
  - a fine grid (untraced, one run per cell) and the tuning time each method took to first run a setting whose
    throughput (the job's own printed samples/s) reached 97 % of the grid's best.
Prints a Markdown summary (docs/performance.md).

    samples/fusion_trainer/bench/autotune_vs_horovod.py BUILD_DIR [--rounds 5] [--steps 12] [--seed 0]
"""
import argparse
import itertools
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SPACE = os.path.join(HERE, "..", "space.yaml")
THROUGHPUT = re.compile(r"throughput ([0-9.]+) samples/s")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
GRID_THRESHOLDS = [0, 64 << 10, 512 << 10, 2 << 20, 8 << 20, 32 << 20, 128 << 20]  # bytes
GRID_CYCLES_MS = [0.1, 0.5, 1, 3, 10, 30, 100]


def trainer_command(build, steps):
    return ["mpirun", "-np", "2", "--oversubscribe", "--mca", "btl", "self,vader",
            os.path.join(build, "bin", "fusion_trainer"), "--batch-size", "{batch_size}", "--steps", str(steps),
            "--warmup-steps", "2", "--max-batch-size", "96"]


def tune(build, work, strategy, steps, seed, extra):
    study = os.path.join(work, f"{strategy}.sqlite")
    command = [os.path.join(build, "bin", "collscope"), "tune", SPACE, "--study", study, "--strategy", strategy,
               "--fixed-batch", "--seed", str(seed), "--no-progress"] + extra + ["--"] + trainer_command(build, steps)
    result = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        sys.exit(f"{strategy}: collscope tune failed ({result.returncode}):\n{result.stderr[-2000:]}")
    db = sqlite3.connect(study)
    rows = db.execute("SELECT id, kind, status, params, score, wall_s, dir FROM trials ORDER BY id").fetchall()
    return study, rows, result.stdout


def printed_throughput(trial_dir):
    try:
        with open(os.path.join(trial_dir, "output.log"), errors="replace") as f:
            found = THROUGHPUT.findall(f.read())
        return float(found[-1]) if found else None
    except OSError:
        return None


def winner(rows):
    """The setting with the best mean score over its ok runs (what `collscope tune` reports), warm-up left out."""
    scores = {}
    for _, kind, status, params, score, _, _ in rows:
        if status == "ok" and kind != "warm-up" and score is not None:
            scores.setdefault(params, []).append(score)
    return max(scores.items(), key=lambda kv: statistics.mean(kv[1]))[0]


def env_of(params):
    import json
    values = json.loads(params)
    return {"HOROVOD_FUSION_THRESHOLD": values[0], "HOROVOD_CYCLE_TIME": values[1]}


def run_untraced(build, steps, env_extra):
    command = [c.replace("{batch_size}", "32") for c in trainer_command(build, steps)]
    out = subprocess.run(command, env=dict(ENV, **env_extra), capture_output=True, text=True, timeout=600).stdout
    found = THROUGHPUT.findall(out)
    return float(found[-1]) if found else None


def time_to_reach(rows, target):
    """Tuning seconds (cumulative trial wall time) until a trial's printed throughput first reaches target."""
    spent = 0.0
    for _, _, status, _, _, wall, trial_dir in rows:
        spent += wall
        t = printed_throughput(trial_dir) if status == "ok" else None
        if t is not None and t >= target:
            return spent
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="collscope-vs-horovod-")

    _, h_rows, _ = tune(args.build, work, "horovod", args.steps, args.seed, [])
    h_time = sum(r[5] for r in h_rows)
    _, c_rows, _ = tune(args.build, work, "bo", args.steps, args.seed,
                        ["--trials", "40", "--time-budget", f"{h_time:.1f}"])
    c_time = sum(r[5] for r in c_rows)
    os.rename(os.path.join(work, "bo.sqlite"), os.path.join(work, "bo-screened.sqlite"))
    _, n_rows, _ = tune(args.build, work, "bo", args.steps, args.seed,
                        ["--trials", "40", "--time-budget", f"{h_time:.1f}", "--no-model-screening"])
    n_time = sum(r[5] for r in n_rows)
    h_best, c_best, n_best = winner(h_rows), winner(c_rows), winner(n_rows)
    advice = next((params for _, kind, status, params, *_ in c_rows if kind == "advice"), None)

    h_runs, c_runs, n_runs, a_runs = [], [], [], []
    for _ in range(args.rounds):  # alternating, so a drift of the machine's load hits all alike
        h_runs.append(run_untraced(args.build, args.steps, env_of(h_best)))
        c_runs.append(run_untraced(args.build, args.steps, env_of(c_best)))
        n_runs.append(run_untraced(args.build, args.steps, env_of(n_best)))
        if advice:
            a_runs.append(run_untraced(args.build, args.steps, env_of(advice)))
    grid = {}
    for threshold, cycle in itertools.product(GRID_THRESHOLDS, GRID_CYCLES_MS):
        grid[(threshold, cycle)] = run_untraced(args.build, args.steps, {"HOROVOD_FUSION_THRESHOLD": str(threshold),
                                                                         "HOROVOD_CYCLE_TIME": str(cycle)})
    grid_best_cell, grid_best = max(((k, v) for k, v in grid.items() if v), key=lambda kv: kv[1])
    target = 0.97 * grid_best
    h_reach, c_reach, n_reach = time_to_reach(h_rows, target), time_to_reach(c_rows, target), time_to_reach(n_rows, target)

    def fmt_reach(s):
        return f"{s:.0f} s" if s is not None else "not reached"

    h_med, c_med, n_med = statistics.median(h_runs), statistics.median(c_runs), statistics.median(n_runs)
    wins = sum(1 for h, c in zip(h_runs, c_runs) if c >= h)
    predicted = sum(1 for r in c_rows if r[1] == "predicted")
    print(f"| method | trials | tuning time | winner (fusion bytes, cycle ms) | winner median samples/s "
          f"({args.rounds} alternating runs) | time to 97 % of grid best |")
    print("|---|---|---|---|---|---|")
    print(f"| HOROVOD_AUTOTUNE's method | {len(h_rows)} | {h_time:.0f} s | {tuple(env_of(h_best).values())} | "
          f"{h_med:.1f} ({min(h_runs):.1f}-{max(h_runs):.1f}) | {fmt_reach(h_reach)} |")
    print(f"| collscope, replay model's screen ({predicted} picks) | {len(c_rows)} | {c_time:.0f} s | "
          f"{tuple(env_of(c_best).values())} | {c_med:.1f} ({min(c_runs):.1f}-{max(c_runs):.1f}) | {fmt_reach(c_reach)} |")
    print(f"| collscope BO, --no-model-screening | {len(n_rows)} | {n_time:.0f} s | {tuple(env_of(n_best).values())} | "
          f"{n_med:.1f} ({min(n_runs):.1f}-{max(n_runs):.1f}) | {fmt_reach(n_reach)} |")
    if a_runs:
        a_med = statistics.median(a_runs)
        print(f"| the analyzer's advice (one setting) | - | - | {tuple(env_of(advice).values())} | "
              f"{a_med:.1f} ({min(a_runs):.1f}-{max(a_runs):.1f}) | - |")
    print(f"\ncollscope (screened)/Horovod winner throughput ratio (medians): {c_med / h_med:.3f}; its winner >= "
          f"Horovod's in {wins} of {args.rounds} rounds; real trials {len(c_rows)} against {len(h_rows)} "
          f"({len(h_rows) / max(1, len(c_rows)):.1f}x fewer); without the screen {n_med / h_med:.3f} in {len(n_rows)} "
          f"trials; fine grid ({len(grid)} cells, one run each) best {grid_best:.1f} samples/s at {grid_best_cell}; "
          f"97 % = {target:.1f}; studies in {work}")


if __name__ == "__main__":
    main()
