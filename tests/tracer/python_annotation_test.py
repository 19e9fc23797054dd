# `collscope trace` annotates a Python training job without a change to its code (tracer/python/sitecustomize.py):
# a real PyTorch CPU loop of STEPS steps, data-parallel in 2 torch.multiprocessing.spawn workers, must leave one
# rank file per worker (ranks from torch.distributed) with exactly STEPS "step" ranges, each holding one forward,
# one backward and one optimizer range; `collscope analyze` must count STEPS steps from NVTX; the same job with
# --no-python-annotation records no range; a sitecustomize of the user's is still run; and without the preload the
# sitecustomize does nothing (the job runs, silently). With NVTX_SHIM (a library the job marks its own NVTX "step"
# ranges through), the job's own steps are its steps, not twice as many with the annotation's.
# Usage: python_annotation_test.py COLLSCOPE SITECUSTOMIZE_DIR SCRATCH_DIR [NVTX_SHIM]   (exit 77: no torch)
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys

collscope, site_dir, scratch = sys.argv[1:4]
nvtx_shim = sys.argv[4] if len(sys.argv) > 4 else None
STEPS = 6
job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python", "train_loop.py")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


try:
    import torch  # the job's interpreter is this one
except ImportError:
    print("SKIP: python3-torch is not installed (scripts/install-deps.sh installs it)")
    sys.exit(77)

shutil.rmtree(scratch, ignore_errors=True)
user_site = os.path.join(scratch, "user-site")
os.makedirs(user_site)
with open(os.path.join(user_site, "sitecustomize.py"), "w") as f:
    f.write("import sys\nsys.stderr.write('user sitecustomize ran\\n')\n")
env = dict(os.environ, PYTHONPATH=user_site)


def trace(run, workers, *flags):
    out = subprocess.run([collscope, "trace", "-o", run, *flags, "--", sys.executable, job, str(STEPS), str(workers)],
                         env=env, capture_output=True, text=True, timeout=120)
    print(out.stdout + out.stderr)
    check(out.returncode == 0, "%s: collscope trace exited %d" % (run, out.returncode))
    for rank in range(workers):
        check("rank %d trained %d steps" % (rank, STEPS) in out.stdout, "%s: worker %d did not finish" % (run, rank))
    if os.path.isdir(run):
        # The ranges as plain SQL rows, as a user who queries the files would make them (the tracer leaves compact
        # event batches, which collscope's own readers decode).
        sql = subprocess.run([collscope, "sql", run], capture_output=True, text=True, timeout=120)
        check(sql.returncode == 0, "%s: collscope sql exited %d: %s" % (run, sql.returncode, sql.stderr.strip()))
    return out


def rank_files(run):
    return sorted(glob.glob(os.path.join(run, "rank-*.sqlite")))


def ranges(path):
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    rows = db.execute("SELECT s.value, r.depth, r.start_ns, r.end_ns FROM nvtx_ranges r "
                      "JOIN strings s ON s.id = r.name ORDER BY r.start_ns").fetchall()
    db.close()
    return rows


# Annotated: in each worker's file STEPS steps, each with its phases; the evaluation forwards in no step; nested
# modules not ranges.
run = os.path.join(scratch, "annotated")
out = trace(run, 2)
check("user sitecustomize ran" in out.stderr, "the user's own sitecustomize was not run")
files = rank_files(run)
check([os.path.basename(f) for f in files] == ["rank-00000.sqlite", "rank-00001.sqlite"], "rank files %s" % files)
for path in files:
    rows = ranges(path)
    steps = [r for r in rows if r[0] == "step"]
    check(len(steps) == STEPS, "%s: %d step ranges, expected %d" % (path, len(steps), STEPS))
    check(all(s[1] == 0 and s[3] is not None and s[3] > s[2] for s in steps), "%s: a step is nested or open" % path)
    for i, (_, _, start, end) in enumerate(steps):
        inside = [r[0] for r in rows if r[0] != "step" and start <= r[2] and r[3] is not None and r[3] <= end]
        check(inside == ["forward", "backward", "optimizer"], "%s: step %d holds %s" % (path, i, inside))
        check(all(r[1] == 1 for r in rows if r[0] != "step" and start <= r[2] <= end), "%s: step %d depth" % (path, i))
    forwards = [r for r in rows if r[0] == "forward"]
    check(len(forwards) == 2 * STEPS, "%s: %d forward ranges, expected %d (one per step, one per evaluation)"
          % (path, len(forwards), 2 * STEPS))
    names = {r[0] for r in rows}
    check(names == {"step", "forward", "backward", "optimizer"}, "%s: ranges named %s" % (path, names))
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    meta = dict(db.execute("SELECT key, value FROM meta WHERE key LIKE 'python.%'").fetchall())
    db.close()
    check(meta.get("python.torch_version") == torch.__version__, "%s: meta %s" % (path, meta))
report = subprocess.run([collscope, "analyze", run, "--format", "json"], capture_output=True, text=True, timeout=60)
check(report.returncode == 0, "collscope analyze exited %d: %s" % (report.returncode, report.stderr))
if report.returncode == 0:
    summary = json.loads(report.stdout)["summary"]
    check(summary["step_source"] == "nvtx", "analyze: step source %s, expected nvtx" % summary["step_source"])
    check(summary["steps"] == STEPS, "analyze: %d steps, expected %d" % (summary["steps"], STEPS))

# A job that marks its own steps with NVTX (real Horovod's train_hvd.py --nvtx got 80 steps for 40 when both
# counted, 2026-12-07): the annotation's ranges stay in their own domain and the analysis counts the job's steps.
if nvtx_shim:
    run = os.path.join(scratch, "own-nvtx")
    env_before = env
    env = dict(env, COLLSCOPE_TEST_NVTX_SHIM=nvtx_shim)
    trace(run, 2)
    env = env_before
    for path in rank_files(run):
        db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        domains = dict(db.execute("SELECT coalesce(d.value, ''), count(*) FROM nvtx_ranges r "
                                  "LEFT JOIN strings d ON d.id = r.domain JOIN strings s ON s.id = r.name "
                                  "WHERE s.value = 'step' GROUP BY 1").fetchall())
        db.close()
        check(domains.get("", 0) == STEPS and domains.get("collscope.python", 0) == STEPS,
              "%s: step ranges per domain %s, expected %d of the job's and %d of the annotation's"
              % (path, domains, STEPS, STEPS))
    report = subprocess.run([collscope, "analyze", run, "--format", "json"], capture_output=True, text=True, timeout=60)
    check(report.returncode == 0, "own NVTX: collscope analyze exited %d: %s" % (report.returncode, report.stderr))
    if report.returncode == 0:
        steps = json.loads(report.stdout)["summary"]["steps"]
        check(steps == STEPS, "own NVTX: analyze counted %d steps, expected %d (the job's own)" % (steps, STEPS))
else:
    print("note: no NVTX shim (NVTX 3 headers not found): the own-NVTX case is not run")

# Off: the same job records no range (a Python job without MPI then writes no rank file at all).
run = os.path.join(scratch, "off")
out = trace(run, 1, "--no-python-annotation")
check(rank_files(run) == [], "--no-python-annotation: rank files %s" % rank_files(run))
check("user sitecustomize ran" in out.stderr, "--no-python-annotation: the user's sitecustomize was not run")

# No preload: collscope's sitecustomize on the path does nothing, and says nothing.
out = subprocess.run([sys.executable, job, str(STEPS), "1"], env=dict(env, PYTHONPATH=site_dir + os.pathsep + user_site),
                     capture_output=True, text=True, timeout=120)
check(out.returncode == 0 and "rank 0 trained %d steps" % STEPS in out.stdout, "without the preload the job failed: %s" % out.stderr)
check("collscope" not in out.stderr, "without the preload: %s" % out.stderr.strip())

# Which commands are Python jobs (collscope's directory first on PYTHONPATH, the job's own after it).
shebang = os.path.join(scratch, "train")
with open(shebang, "w") as f:
    f.write("#!%s\nimport os\nprint('PYTHONPATH=' + os.environ.get('PYTHONPATH', ''))\n" % sys.executable)
os.chmod(shebang, 0o755)
show = "import os; print('PYTHONPATH=' + os.environ.get('PYTHONPATH', ''))"
want = os.path.realpath(site_dir) + os.pathsep + user_site
for command, python in (([sys.executable, "-c", show], True),
                        (["mpirun", "-np", "1", "--oversubscribe", sys.executable, "-c", show], True),
                        ([shebang], True),
                        (["/bin/sh", "-c", "echo PYTHONPATH=$PYTHONPATH"], False),
                        ([sys.executable, "-c", show], False)):
    flags = [] if python or command[0] == "/bin/sh" else ["--no-python-annotation"]
    out = subprocess.run([collscope, "trace", "-o", os.path.join(scratch, "detect"), "--force", *flags, "--", *command],
                         env=env, capture_output=True, text=True, timeout=60)
    seen = [line[len("PYTHONPATH="):] for line in out.stdout.splitlines() if line.startswith("PYTHONPATH=")]
    check(seen == [want if python else user_site], "%s %s: PYTHONPATH %s" % (" ".join(flags), " ".join(command), seen))

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
