#!/usr/bin/env python3
"""Predicted against measured step time of fusion_trainer under changed settings.

Each round traces the baseline (and a straggler twin for --balanced), asks `collscope predict` for every setting,
then runs every setting for real, untraced; rounds alternate the settings so slow drifts of machine load spread
over all of them. Per setting: the median over rounds of the prediction and of the measured median step (rank 0's
`step_ms` after the warm-up steps), the error, and whether the predicted direction of change is right where the
real change exceeds the run-to-run noise of the baseline (2 x 1.4826 x MAD of its per-round medians). Prints a
Markdown table; --record DIR keeps the last round's traced runs and every measurement for tests/data.

    samples/fusion_trainer/bench/predict_vs_real.py BUILD_DIR [--rounds 5] [--steps 20] [--record DIR]
        [--against COLLSCOPE]

--against: another `collscope` binary (an earlier version of the model) asked for the same predictions from the same
traces; its errors against the same measurements come in two more columns, so two models compare in one run.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

# The table is the predict component's, shared with predict/bench/predict_vs_horovod.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "predict", "bench"))
from prediction_table import print_table, run_rounds  # noqa: E402

BATCH = 32
# (label, `collscope predict` arguments, trainer environment, trainer arguments, baseline)
SETTINGS = [
    ("HOROVOD_CYCLE_TIME=5", ["--set", "HOROVOD_CYCLE_TIME=5"], {"HOROVOD_CYCLE_TIME": "5"}, [], "plain"),
    ("HOROVOD_CYCLE_TIME=20", ["--set", "HOROVOD_CYCLE_TIME=20"], {"HOROVOD_CYCLE_TIME": "20"}, [], "plain"),
    ("HOROVOD_FUSION_THRESHOLD=64 KiB", ["--set", "HOROVOD_FUSION_THRESHOLD=65536"],
     {"HOROVOD_FUSION_THRESHOLD": "65536"}, [], "plain"),
    ("HOROVOD_FUSION_THRESHOLD=1 MiB", ["--set", "HOROVOD_FUSION_THRESHOLD=1048576"],
     {"HOROVOD_FUSION_THRESHOLD": "1048576"}, [], "plain"),
    ("batch 64", ["--set", "batch_size=64"], {}, ["--batch-size", "64"], "plain"),
    ("batch 16", ["--set", "batch_size=16"], {}, ["--batch-size", "16"], "plain"),
    ("--balanced (rank 1 +30 ms)", ["--balanced"], {}, [], "straggler"),
]
BASELINES = {"plain": [], "straggler": ["--slow-rank", "1", "--slow-ms", "30"]}


def environment(extra):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for knob in ("HOROVOD_CYCLE_TIME", "HOROVOD_FUSION_THRESHOLD"):
        env.pop(knob, None)
    env.update(extra)
    return env


def trainer_command(build, steps, args):
    return ["mpirun", "-np", "2", "--oversubscribe", "--mca", "btl", "self,vader",
            os.path.join(build, "bin", "fusion_trainer"), "--steps", str(steps)] + \
        ([] if "--batch-size" in args else ["--batch-size", str(BATCH)]) + args


def median_step_ms(output):
    for line in output.splitlines():
        if line.startswith("COLLSCOPE_SAMPLE_REPORT "):
            report = json.loads(line.split(" ", 1)[1])
            if report["rank"] == 0:
                return statistics.median(report["step_ms"][report["warmup_steps"]:])
    raise RuntimeError("no report from rank 0")


def measure(build, steps, env, args):
    out = subprocess.run(trainer_command(build, steps, args), env=environment(env), capture_output=True,
                         text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return median_step_ms(out.stdout)


def trace(build, steps, run_dir, args):
    shutil.rmtree(run_dir, ignore_errors=True)
    command = [os.path.join(build, "bin", "collscope"), "trace", "-o", run_dir, "--"] + trainer_command(build, steps, args)
    out = subprocess.run(command, env=environment({}), capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])


def predict(collscope, run_dir, args):
    out = subprocess.run([collscope, "predict", run_dir, "--format", "json"] + args,
                         capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--record", help="keep the last round's traced runs and the measurements here")
    parser.add_argument("--against", help="another collscope binary whose predictions to compare")
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)
    work = tempfile.mkdtemp(prefix="predict_vs_real.")
    collscope = os.path.join(build, "bin", "collscope")

    def traced(name, extra, round_):
        run_dir = os.path.join(work, f"{name}-{round_}")
        trace(build, args.steps, run_dir, extra)
        return run_dir

    def keep(runs):  # --record: the last round's traced runs
        if not args.record:
            return
        os.makedirs(args.record, exist_ok=True)
        for name, path in runs.items():
            target = os.path.join(args.record, name)
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(path, target)

    predicted, against, measured, baseline = run_rounds(
        args.rounds, SETTINGS, BASELINES, traced,
        lambda binary, run_dir, a: predict(binary or collscope, run_dir, a)["predicted"]["step_ms"],
        lambda env, extra: measure(build, args.steps, env, extra), args.against, keep)
    print_table(f"plain, batch {BATCH}, 2 ranks, {args.steps} steps", [label for label, *_ in SETTINGS], predicted,
                measured, baseline, against)
    if args.record:
        with open(os.path.join(args.record, "measured.json"), "w") as f:
            json.dump({"steps": args.steps, "batch_size": BATCH, "rounds": args.rounds,
                       "baseline_step_ms": baseline,
                       "settings": [{"label": label, "predict_args": pa, "baseline": b,
                                     "measured_step_ms": measured[label], "predicted_step_ms": predicted[label]}
                                    for label, pa, _, _, b in SETTINGS]}, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
