#!/usr/bin/env python3
"""Throughput landscape of fusion_trainer over (fusion threshold, cycle time) and batch size.

Runs `mpirun -np 2` of the untraced sample for every configuration, round robin over the
configurations REPEATS times (so slow drifts of machine load spread over all cells), and prints
Markdown tables of the median global throughput (samples/s).

    samples/fusion_trainer/bench/landscape.py BUILD_DIR [--repeats 3] [--steps 20]
"""
import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys

THRESHOLDS = [64 << 10, 512 << 10, 4 << 20, 32 << 20, 256 << 20]  # bytes
CYCLES_MS = [0.1, 0.3, 1, 3, 10, 30, 100]
BATCHES = [8, 16, 32, 64, 128, 256]


def run(trainer, steps, extra):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    command = ["mpirun", "-np", "2", "--oversubscribe", "--mca", "btl", "self,vader", trainer,
               "--steps", str(steps)] + extra
    output = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300).stdout
    for line in output.splitlines():
        if line.startswith("COLLSCOPE_SAMPLE_REPORT "):
            return json.loads(line.split(" ", 1)[1])["throughput_samples_per_s"]
    raise RuntimeError(f"no report from {' '.join(command)}")


def size_label(nbytes):
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    trainer = os.path.join(args.build_dir, "bin", "fusion_trainer")

    grid = [("grid", t, c, 32) for t, c in itertools.product(THRESHOLDS, CYCLES_MS)]
    grid += [("batch", 128 << 20, 1, b) for b in BATCHES]
    samples = {cell: [] for cell in grid}
    for repeat in range(args.repeats):
        for cell in grid:
            _, threshold, cycle, batch = cell
            samples[cell].append(run(trainer, args.steps, [
                "--fusion-threshold", str(threshold), "--cycle-time-ms", str(cycle),
                "--batch-size", str(batch)]))
        print(f"repeat {repeat + 1}/{args.repeats} done", file=sys.stderr)

    median = {cell: statistics.median(values) for cell, values in samples.items()}
    spread = [(max(v) - min(v)) / statistics.median(v) for v in samples.values()]
    print(f"Median throughput, samples/s (2 ranks, batch 32, {args.steps} steps, "
          f"{args.repeats} repeats; median relative spread {statistics.median(spread):.0%})\n")
    print("| threshold \\ cycle | " + " | ".join(f"{c} ms" for c in CYCLES_MS) + " |")
    print("|---" * (len(CYCLES_MS) + 1) + "|")
    for threshold in THRESHOLDS:
        row = [f"{median[('grid', threshold, c, 32)]:.0f}" for c in CYCLES_MS]
        print(f"| {size_label(threshold)} | " + " | ".join(row) + " |")
    print("\nBatch size at 128 MiB / 1 ms:\n")
    print("| batch | " + " | ".join(str(b) for b in BATCHES) + " |")
    print("|---" * (len(BATCHES) + 1) + "|")
    print("| samples/s | " + " | ".join(
        f"{median[('batch', 128 << 20, 1, b)]:.0f}" for b in BATCHES) + " |")


if __name__ == "__main__":
    main()
