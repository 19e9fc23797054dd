#!/usr/bin/env python3
"""Predicted against measured step time of a real Horovod job under changed settings (outside CI).

The job is the fixtures' `train_hvd.py` (tests/data/horovod-0.28.1-cpu: 2 ranks, PyTorch CPU, Horovod 0.28.1 built
by ../shared/tools/build-horovod.sh) with `--nvtx` (its step/forward/backward/optimizer ranges through a small NVTX
shim, built here with the CUDA toolkit's NVTX headers). Each round traces the baseline and a straggler twin (rank 1
sleeps 30 ms before backward), asks `collscope predict` for each setting, then runs the baseline and every setting
untraced, in an order rotated each round; the measured step is rank 0's printed median step. Per setting: the
medians over rounds, the error, and whether the direction is right where the real change exceeds the baseline's
run-to-run noise (2 x 1.4826 x MAD of its rounds). --against another collscope binary: its predictions from the
same traces, in two more columns.

    predict/bench/predict_vs_horovod.py BUILD_DIR HOROVOD_SITE [--rounds 3] [--steps 40] [--against COLLSCOPE]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from prediction_table import print_table, run_rounds

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOB = os.path.join(ROOT, "tests", "data", "horovod-0.28.1-cpu", "train_hvd.py")
BATCH = 64
# (label, `collscope predict` arguments, job environment, job arguments, baseline)
SETTINGS = [
    ("HOROVOD_CYCLE_TIME=4.5", ["--set", "HOROVOD_CYCLE_TIME=4.5"], {"HOROVOD_CYCLE_TIME": "4.5"}, [], "plain"),
    ("HOROVOD_CYCLE_TIME=9", ["--set", "HOROVOD_CYCLE_TIME=9"], {"HOROVOD_CYCLE_TIME": "9"}, [], "plain"),
    ("HOROVOD_CYCLE_TIME=20", ["--set", "HOROVOD_CYCLE_TIME=20"], {"HOROVOD_CYCLE_TIME": "20"}, [], "plain"),
    ("HOROVOD_FUSION_THRESHOLD=1 MiB", ["--set", "HOROVOD_FUSION_THRESHOLD=1048576"],
     {"HOROVOD_FUSION_THRESHOLD": "1048576"}, [], "plain"),
    ("HOROVOD_FUSION_THRESHOLD=64 KiB", ["--set", "HOROVOD_FUSION_THRESHOLD=65536"],
     {"HOROVOD_FUSION_THRESHOLD": "65536"}, [], "plain"),
    ("batch 32", ["--set", "batch_size=32"], {}, ["--batch-size", "32"], "plain"),
    ("batch 128", ["--set", "batch_size=128"], {}, ["--batch-size", "128"], "plain"),
    ("--balanced (rank 1 sleeps 30 ms)", ["--balanced"], {}, [], "straggler"),
]
BASELINES = {"plain": [], "straggler": ["--slow-rank", "1", "--slow-ms", "30"]}
SHIM = r"""
#include <nvtx3/nvToolsExt.h>
int shim_push(const char* name) { return nvtxRangePushA(name); }
int shim_pop(void) { return nvtxRangePop(); }
"""


def build_shim(work):
    source, library = os.path.join(work, "nvtxshim.c"), os.path.join(work, "libnvtxshim.so")
    with open(source, "w") as f:
        f.write(SHIM)
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-I", os.path.join(cuda, "include"), source, "-o", library,
                    "-ldl"], check=True)
    return library


def environment(site, shim, extra):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONPATH=site,
               NVTX_SHIM=shim)
    for knob in ("HOROVOD_CYCLE_TIME", "HOROVOD_FUSION_THRESHOLD"):
        env.pop(knob, None)
    env.update(extra)
    return env


def job_command(steps, args, env):
    exported = []
    for name in ("PYTHONPATH", "NVTX_SHIM", "HOROVOD_CYCLE_TIME", "HOROVOD_FUSION_THRESHOLD"):
        if name in env:
            exported += ["-x", name]
    return (["mpirun", "-np", "2", "--oversubscribe", "--mca", "btl", "self,vader"] + exported +
            ["/usr/bin/python3", JOB, "--nvtx", "--steps", str(steps)] +
            ([] if "--batch-size" in args else ["--batch-size", str(BATCH)]) + args)


def median_step_ms(output):
    found = re.search(r"median step ([0-9.]+) ms", output)
    if not found:
        raise RuntimeError("no median step printed by rank 0:\n" + output[-2000:])
    return float(found.group(1))


def run(command, env):
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(out.stdout[-1000:] + out.stderr[-2000:])
    return out.stdout


def predict(collscope, run_dir, args):
    out = run([collscope, "predict", run_dir] + args, dict(os.environ))
    found = re.search(r"predicted median step: ([0-9.]+) ms", out)
    if not found:  # the model declined (its "not predicted" line says why): no number
        print(f"{run_dir} {' '.join(args)}: not predicted: " + out.strip().splitlines()[-1][:300], file=sys.stderr)
        return None
    return float(found.group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("horovod_site")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--against", help="another collscope binary whose predictions to compare")
    args = parser.parse_args()
    collscope = os.path.join(os.path.abspath(args.build_dir), "bin", "collscope")
    site = os.path.abspath(args.horovod_site)
    work = tempfile.mkdtemp(prefix="predict_vs_horovod.")
    shim = build_shim(work)

    def trace(name, extra, round_):
        run_dir = os.path.join(work, f"{name}-{round_}")
        env = environment(site, shim, {})
        # The job marks its own ranges; without collscope's Python annotation the traces read the same to an older
        # collscope given as --against (before the annotation had its own NVTX domain).
        run([collscope, "trace", "--no-python-annotation", "-o", run_dir, "--"] + job_command(args.steps, extra, env),
            env)
        return run_dir

    def measure(extra_env, extra):
        env = environment(site, shim, extra_env)
        return median_step_ms(run(job_command(args.steps, extra, env), env))

    predicted, against, measured, baseline = run_rounds(
        args.rounds, SETTINGS, BASELINES, trace, lambda binary, run_dir, a: predict(binary or collscope, run_dir, a),
        measure, args.against)
    print_table(f"train_hvd.py --nvtx, batch {BATCH}, 2 ranks, {args.steps} steps", [label for label, *_ in SETTINGS],
                predicted, measured, baseline, against)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
