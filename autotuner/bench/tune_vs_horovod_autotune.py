#!/usr/bin/env python3
"""collscope's tuner against real Horovod's own autotune (HOROVOD_AUTOTUNE=1), on a real Horovod job (outside CI).

The job is the fixtures' `train_hvd.py` (tests/data/horovod-0.28.1-cpu: 2 ranks, PyTorch CPU, Horovod 0.28.1 built
by ../shared/tools/build-horovod.sh), batch 64, no NVTX: as a user runs it.
  - Horovod's method: one job with HOROVOD_AUTOTUNE=1, long enough for Horovod to finish its search (3 warm-up
    settings, then Bayesian optimisation to 20, each scored over 50 steps; HOROVOD_AUTOTUNE_LOG holds each one);
    its winner is the setting with the best score, the one Horovod keeps for the rest of the job.
  - collscope: `collscope tune samples/spaces/horovod.yaml --fixed-batch --trials N` on 20-step runs (the job's
    defaults, the analyzer's advice, the replay model's screen, then the strategy); its winner is the best setting.
Then the job's defaults and both winners run untraced, ROUNDS times each in a rotated order, and the table gives
each one's median throughput (samples/s from the job's median step). Prints a Markdown summary.

    autotuner/bench/tune_vs_horovod_autotune.py BUILD_DIR HOROVOD_SITE [--rounds 5] [--trials 10] [--steps 40]
"""
import argparse
import csv
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOB = os.path.join(ROOT, "tests", "data", "horovod-0.28.1-cpu", "train_hvd.py")
SPACE = os.path.join(ROOT, "samples", "spaces", "horovod.yaml")
BATCH, RANKS = 64, 2
KNOBS = ("HOROVOD_FUSION_THRESHOLD", "HOROVOD_CYCLE_TIME")
# Horovod's autotune scores a setting over 5 samples of 10 steps (parameter_manager.h: SAMPLES, its
# HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE default): 3 warm-up settings and 20 Bayesian ones take 1 150 steps, the
# categorical knobs after them a few more. With room to spare:
AUTOTUNE_STEPS = 1600


def environment(site, extra):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONPATH=site)
    for knob in KNOBS + ("HOROVOD_AUTOTUNE", "HOROVOD_AUTOTUNE_LOG"):
        env.pop(knob, None)
    env.update(extra)
    return env


def job_command(steps, env, batch="64"):
    exported = []
    for name in ("PYTHONPATH",) + KNOBS + ("HOROVOD_AUTOTUNE", "HOROVOD_AUTOTUNE_LOG"):
        if name in env:
            exported += ["-x", name]
    return (["mpirun", "-np", str(RANKS), "--oversubscribe", "--mca", "btl", "self,vader"] + exported +
            ["/usr/bin/python3", JOB, "--steps", str(steps), "--batch-size", batch])


def median_step_ms(output):
    found = re.search(r"median step ([0-9.]+) ms", output)
    if not found:
        raise RuntimeError("no median step in the job's output:\n" + output[-2000:])
    return float(found.group(1))


def run_job(site, steps, extra):
    env = environment(site, extra)
    out = subprocess.run(job_command(steps, env), env=env, capture_output=True, text=True, timeout=1200)
    if out.returncode != 0:
        raise RuntimeError(out.stdout[-1000:] + out.stderr[-2000:])
    return out.stdout


def horovod_autotune(site, work):
    """Runs the job once with Horovod's autotune; returns (winner env, samples, seconds)."""
    log = os.path.join(work, "autotune.csv")
    start = time.monotonic()
    run_job(site, AUTOTUNE_STEPS, {"HOROVOD_AUTOTUNE": "1", "HOROVOD_AUTOTUNE_LOG": log})
    seconds = time.monotonic() - start
    with open(log) as f:
        rows = [r for r in csv.DictReader(f)]
    if not rows:
        raise RuntimeError(f"{log}: Horovod's autotune logged no sample")
    # Horovod writes each sample, then its best once the search ends: the best score's row either way. Its
    # threshold column is in MB (parameter_manager.cc, fusion_buffer_threshold_mb).
    best = max(rows, key=lambda r: float(r["score"]))
    threshold = int(round(float(best["tensor_fusion_threshold"]) * 1024 * 1024))
    cycle = float(best["cycle_time_ms"])
    return {"HOROVOD_FUSION_THRESHOLD": str(threshold), "HOROVOD_CYCLE_TIME": f"{cycle:g}"}, len(rows), seconds


def collscope_tune(build, site, work, trials):
    """Runs `collscope tune` on the shipped Horovod space; returns (winner env, trials run, seconds, the log)."""
    study = os.path.join(work, "study.sqlite")
    env = environment(site, {})
    command = ([os.path.join(build, "bin", "collscope"), "tune", SPACE, "--fixed-batch", "--study", study,
                "--trials", str(trials), "--"] + job_command(20, env, "{batch_size}"))
    start = time.monotonic()
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600, cwd=work)
    seconds = time.monotonic() - start
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    db = sqlite3.connect(study)
    rows = db.execute("SELECT kind, status, params, score FROM trials ORDER BY id").fetchall()
    scores = {}
    for kind, status, params, score in rows:
        if status == "ok" and score is not None:
            scores.setdefault(params, []).append(score)
    params = json.loads(max(scores.items(), key=lambda kv: statistics.mean(kv[1]))[0])
    winner = {"HOROVOD_FUSION_THRESHOLD": params[0], "HOROVOD_CYCLE_TIME": params[1]}
    return winner, len(rows), seconds, out.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("horovod_site")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    build, site = os.path.abspath(args.build_dir), os.path.abspath(args.horovod_site)
    work = tempfile.mkdtemp(prefix="tune_vs_horovod_autotune.")

    hvd_env, hvd_samples, hvd_s = horovod_autotune(site, work)
    print(f"Horovod's autotune: {hvd_samples} samples in one job of {AUTOTUNE_STEPS} steps, {hvd_s:.0f} s: {hvd_env}",
          file=sys.stderr)
    cs_env, cs_trials, cs_s, log = collscope_tune(build, site, work, args.trials)
    print(f"collscope tune: {cs_trials} trials, {cs_s:.0f} s: {cs_env}", file=sys.stderr)

    arms = [("the job's defaults", {}), ("Horovod's autotune winner", hvd_env), ("collscope's winner", cs_env)]
    measured = {name: [] for name, _ in arms}
    for r in range(args.rounds):
        for name, extra in arms[r % len(arms):] + arms[:r % len(arms)]:
            step_ms = median_step_ms(run_job(site, args.steps, extra))
            measured[name].append(RANKS * BATCH / (step_ms / 1e3))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)

    print("| arm | setting (fusion bytes, cycle ms) | tuning | median samples/s (range) |")
    print("|---|---|---|---|")
    tuning = {"the job's defaults": "-",
              "Horovod's autotune winner": f"{hvd_samples} samples in one {AUTOTUNE_STEPS}-step job, {hvd_s:.0f} s",
              "collscope's winner": f"{cs_trials} trials of 20 steps, {cs_s:.0f} s"}
    for name, extra in arms:
        v = measured[name]
        setting = f"{extra.get('HOROVOD_FUSION_THRESHOLD', '134217728')}, {extra.get('HOROVOD_CYCLE_TIME', '1')}"
        print(f"| {name} | {setting} | {tuning[name]} | {statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f}) |")
    ratio = statistics.median(measured["collscope's winner"]) / statistics.median(measured["Horovod's autotune winner"])
    wins = sum(c >= h for c, h in zip(measured["collscope's winner"], measured["Horovod's autotune winner"]))
    print(f"\ncollscope's winner / Horovod's (medians): {ratio:.3f}; at least as fast in {wins} of {args.rounds} rounds; "
          f"work in {work}")
    print("\ncollscope tune's lines:\n" + "\n".join(l for l in log.splitlines() if "collscope tune:" in l and
                                                  ("picks" in l or "advises" in l or "stopped" in l or "not used" in l)))


if __name__ == "__main__":
    main()
