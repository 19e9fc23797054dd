# torch.distributed jobs on gloo, traced by `collscope trace` without a change to their code (tracer/python): real
# DDP jobs (tests/tracer/python/ddp_gloo_job.py), 2 ranks started the way torchrun starts them (RANK, WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT; env:// rendezvous), each rank under its own `collscope trace -o RUN`.
#   plain: one rank file per rank, each gloo process group a communicator (the default group and a new_group) and
#     the default group's C++ calls one more, exactly the collectives the job made (DDP's bucket allreduces: one
#     per step, the gradients' bytes, and its broadcasts, numbered alike on both ranks; the explicit ones;
#     async ones completed), the job's output and exit code unchanged, DDP's knobs in meta, no "more work"
#     straggler, and advice in no other backend's knobs (no Open MPI, MPICH, NCCL or Horovod variable);
#   a 30 ms sleep before each step on rank 1: the straggler named within 20 % of 30 ms, off a CPU;
#   small buckets (bucket_cap_mb 0.07): the DDP bucket finding in DDP's own knob, counting DDP's buckets alone
#     (not find_unused_parameters' bitmap); the default cap: none;
#   the group destroyed and made again: each one's buckets on its own C++ calls communicator;
#   3 ranks with a group of ranks {0, 2}: a communicator per group with its members, its calls counted exactly;
#   no_sync over 3 micro-batches (the comm hook on): steps = optimizer steps, buckets only in the syncing
#     backward pass, each once (the hook's, not again from gloo);
#   DDP advice from what DDP logged (buckets not recorded): small buckets, find_unused_parameters=True with none unused;
#     none on the plain run or the default cap.
# Usage: torch_distributed_test.py COLLSCOPE SCRATCH_DIR   (exit 77: torch is not installed)
import json
import os
import re
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys

collscope, scratch = sys.argv[1:3]
# DDP's buckets are recorded from gloo itself (Debian's libgloo.so.0) on a communicator of their own; with
# COLLSCOPE_TEST_DDP_HOOK=1 the runs use the opt-in comm hook instead (COLLSCOPE_DDP_HOOK=1), which records them on
# the group. The no_sync run always uses the hook: its buckets must then be counted once, not again from gloo.
HOOK = os.environ.get("COLLSCOPE_TEST_DDP_HOOK") == "1"
job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python", "ddp_gloo_job.py")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


try:
    import torch  # noqa: F401  (the jobs' interpreter is this one)
except ImportError:
    print("SKIP: python3-torch is not installed (scripts/install-deps.sh installs it)")
    sys.exit(77)

shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(name, *args, traced=True, ranks=2, hook=None, script=job):
    """All ranks of the job; returns (run dir, [(exit code, stdout, stderr) per rank]). hook: COLLSCOPE_DDP_HOOK for
    this run (default: COLLSCOPE_TEST_DDP_HOOK). --no-hook: DDP's buckets not recorded at all (no hook, and
    COLLSCOPE_GLOO=0: not from gloo), for what DDP's own log tells."""
    run = os.path.join(scratch, name)
    port = str(free_port())
    # A group made again rendezvous on a port of its own, found free like the first (MASTER_PORT + 1 could be in use
    # by another test's job when tests run side by side).
    second_port = str(free_port())
    gloo = "0" if "--no-hook" in args else "1"
    hook = "1" if (HOOK if hook is None else hook) and "--no-hook" not in args else "0"
    args = tuple(a for a in args if a != "--no-hook")
    procs = []
    for rank in range(ranks):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                   SECOND_MASTER_PORT=second_port, LOCAL_RANK=str(rank), COLLSCOPE_DDP_HOOK=hook,
                   COLLSCOPE_GLOO=gloo)
        command = [sys.executable, script, *args]
        if traced:
            command = [collscope, "trace", "-o", run, "--"] + command
        # Each rank in a session of its own, so that a rank that hangs is killed with everything it started (a
        # leaked rank spinning in torch's TCPStore once held a core for the rest of a test loop).
        procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      start_new_session=True))
    results = []
    for rank, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            for q in procs:
                try:
                    os.killpg(q.pid, 9)
                except ProcessLookupError:
                    pass
            out, err = p.communicate()
            check(False, "%s: rank %d still running after 180 s, every rank killed; its stderr: %s"
                  % (name, rank, err.strip()[-500:]))
        results.append((p.returncode, out, err))
    if traced and os.path.isdir(run):
        # The calls as plain SQL rows, as a user who queries the files would make them (the tracer leaves compact
        # batches, which collscope's own readers decode).
        sql = subprocess.run([collscope, "sql", run], capture_output=True, text=True, timeout=120)
        check(sql.returncode == 0, "%s: collscope sql exited %d: %s" % (run, sql.returncode, sql.stderr.strip()))
    return run, results


def expectations(out):
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "expect":
            found[parts[1]] = int(parts[2])
    return found


def job_lines(out):
    return [l for l in out.splitlines() if not l.startswith("collscope") and not l.startswith("Next:") and l.strip()]


def analyze(run):
    out = subprocess.run([collscope, "analyze", run, "--format", "json"], capture_output=True, text=True, timeout=120)
    check(out.returncode == 0, "%s: collscope analyze exited %d: %s" % (run, out.returncode, out.stderr.strip()))
    text = subprocess.run([collscope, "analyze", run], capture_output=True, text=True, timeout=120).stdout
    return (json.loads(out.stdout) if out.returncode == 0 else {}), text


STEPS = 10
# The job alone, then traced: the same output (the losses are deterministic) and exit codes.
_, plain_untraced = run_job("untraced", "--steps", str(STEPS), "--explicit", "--second-group", traced=False)
run, plain = run_job("plain", "--steps", str(STEPS), "--explicit", "--second-group")
for rank in range(2):
    check(plain[rank][0] == 0 and plain_untraced[rank][0] == 0, "rank %d: exit codes %d traced, %d untraced"
          % (rank, plain[rank][0], plain_untraced[rank][0]))
    check(job_lines(plain[rank][1]) == job_lines(plain_untraced[rank][1]), "rank %d: the job's output unchanged" % rank)
expect = expectations(plain[0][1])
tags = []
for rank in range(2):
    path = os.path.join(run, "rank-%05d.sqlite" % rank)
    check(os.path.exists(path), "rank file %s" % os.path.basename(path))
    if not os.path.exists(path):
        continue
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    comms = db.execute("SELECT id, backend, size, members, name FROM communicators ORDER BY id").fetchall()
    by_name = {c[4]: c for c in comms}
    # The default group, the new group, and the default group's C++ calls (DDP's buckets, recorded from gloo
    # itself unless the hook records them on the group).
    names = ["default group", "new_group 1"] + ([] if HOOK else ["default group (C++ calls)"])
    check(sorted(by_name) == sorted(names) and all(c[1:4] == ("gloo", 2, "0,1") for c in comms),
          "rank %d: the default group, its C++ calls and the new group as gloo communicators: %s" % (rank, comms))
    counts = dict(((o, comm), (n, b)) for o, comm, n, b in db.execute(
        "SELECT o.name, c.comm, count(*), sum(c.bytes) FROM collectives c JOIN ops o ON o.code = c.op GROUP BY 1, 2"))
    world = by_name.get("default group", (1,))[0]
    second = by_name.get("new_group 1", (-1,))[0]
    cpp = by_name.get("default group (C++ calls)", (-1,))[0]
    # DDP's buckets are async work: the non-blocking form, iallreduce (op 2), one per step (one bucket holds the
    # gradients); from C++ besides, only DDP's broadcasts from rank 0: the parameters at its construction (one
    # coalesced broadcast of their bytes; the model has no buffers to broadcast before each forward), and the small
    # ones of its metadata (the parameters' shapes at construction, the rebuilt bucket layout after the first step).
    grads = db.execute("SELECT count(*) FROM collectives WHERE op = 2 AND comm = ? AND bytes = ?",
                       (world if HOOK else cpp, expect["grad_bytes"])).fetchone()[0]
    check(grads == STEPS, "rank %d: DDP's bucket allreduces with the gradients' %d bytes: %d, expected %d"
          % (rank, expect["grad_bytes"], grads, STEPS))
    on_cpp = {k[0]: v for k, v in counts.items() if k[1] == cpp}
    broadcasts = db.execute("SELECT bytes, root FROM collectives WHERE comm = ? AND op = (SELECT code FROM ops WHERE "
                            "name = 'ibcast') ORDER BY start_ns", (cpp,)).fetchall()
    check(HOOK or (set(on_cpp) == {"iallreduce", "ibcast"} and on_cpp["iallreduce"] == (STEPS, STEPS * expect["grad_bytes"])
                   and [b for b in broadcasts if b[0] >= 1024] == [(expect["grad_bytes"], 0)]
                   and all(b[1] == 0 for b in broadcasts)),
          "rank %d: the C++ calls are DDP's buckets and its broadcasts from rank 0 (the parameters' once): %s %s"
          % (rank, on_cpp, broadcasts))
    tags.append([r[0] for r in db.execute("SELECT seq FROM collectives WHERE comm = ? ORDER BY seq", (cpp,))])
    buckets = STEPS if HOOK else 0
    check(counts.get(("allreduce", world), (0, 0))[0] == expect["explicit_allreduce"] - 2,
          "rank %d: blocking allreduces on the default group: %s" % (rank, counts.get(("allreduce", world))))
    check(counts.get(("iallreduce", world), (0, 0))[0] == buckets + 2,
          "rank %d: async allreduces on the default group (DDP's buckets, 2 explicit): %s"
          % (rank, counts.get(("iallreduce", world))))
    check(counts.get(("bcast", world), (0, 0))[0] == expect["explicit_bcast"], "rank %d: broadcasts" % rank)
    check(counts.get(("allgather", world), (0, 0)) == (1, 2 * 1000 * 4), "rank %d: the allgather and its gathered bytes" % rank)
    check(counts.get(("alltoallv", world), (0, 0)) == (1, (rank + 1) * 2 * 4),
          "rank %d: the uneven all_to_all_single as alltoallv with this rank's bytes: %s" % (rank, counts.get(("alltoallv", world))))
    check(counts.get(("allreduce", second), (0, 0))[0] == expect["second_group_allreduce"],
          "rank %d: allreduces on the new group: %s" % (rank, counts.get(("allreduce", second))))
    seqs = [r[0] for r in db.execute("SELECT seq FROM collectives WHERE comm = ? ORDER BY start_ns", (world,))]
    check(seqs == list(range(len(seqs))), "rank %d: the default group's calls numbered in call order" % rank)
    asynchronous = db.execute("SELECT count(*) FROM collectives WHERE post_end_ns IS NOT NULL AND end_ns >= post_end_ns"
                              " AND op = 2").fetchone()[0]
    check(asynchronous >= STEPS + 2, "rank %d: async work (DDP buckets, 2 async allreduces) completed after it "
          "was issued: %d" % (rank, asynchronous))
    meta = dict(db.execute("SELECT key, value FROM meta"))
    check(meta.get("world_rank") == str(rank) and meta.get("world_size") == "2", "rank %d: rank and size" % rank)
    check(meta.get("ddp.bucket_cap_mb") == "25" and meta.get("ddp.find_unused_parameters") == "false",
          "rank %d: DDP's knobs in meta" % rank)
    db.close()
# The C++ calls are numbered by gloo's tag, which the group takes per operation in issue order: the same numbers on
# every rank (increasing, not consecutive: the explicit calls take tags too).
check(HOOK or (len(tags) == 2 and tags[0] == tags[1] and len(tags[0]) > STEPS and len(set(tags[0])) == len(tags[0])),
      "the C++ calls numbered alike on both ranks: %s" % tags)
report, text = analyze(run)
findings = report.get("findings", [])
check(report.get("summary", {}).get("steps") == STEPS, "plain: %s steps" % report.get("summary", {}).get("steps"))
# Nothing injected: a straggler may still be named on a shared machine whose CPUs differ (a rank really late for
# the whole run), but never as "more work" (which only a range one rank alone runs can prove).
for f in findings:
    if f["kind"] == "straggler":
        check(f["evidence"].get("cause_code") != 1 and f["evidence"].get("sign_test_p", 1) <= 0.01,
              "plain: a straggler named only with a cause other than more work, consistently late\n" + text)
for knob in ("--mca", "MPIR_CVAR", "NCCL_", "HOROVOD_"):
    check(knob not in text, "plain: no advice in another backend's knobs (%s)" % knob)
check("torch.distributed" in text, "plain: the job is said to run over torch.distributed")
check("problem:" not in text, "plain: every row read (the C++ calls' tags numbered from 0 by the reader)\n" + text)
check(not [f for f in report.get("findings", []) if f["kind"] == "mismatch"],
      "plain: the uneven all_to_all_single is no mismatch (its counts differ per rank by design)\n" + text)

# A rank that sleeps 30 ms before each step (its input pipeline): named, with the right cost, off a CPU.
run, slow = run_job("slow", "--steps", "12", "--slow-rank", "1", "--slow-ms", "30")
check(all(r[0] == 0 for r in slow), "slow: both ranks exit 0")
report, text = analyze(run)
stragglers = [f for f in report.get("findings", []) if f["kind"] == "straggler"]
# A straggler is named only past the sign test (p <= 0.01) and above the steps' own noise. On a loaded host the 30 ms
# can sink into the machine's noise two ways: the lateness varies by 17 ms from step to step (load 8), or the other
# rank is held off its core for more than 30 ms in a few steps, so rank 1 is latest in only 10 of 12 (chance 0.019,
# load 6-7, 2026-12-07). The report must then still say which rank, and why: the within-noise note on rank 1, off a
# CPU, with noise of at least a third of the sleep or the sign test's chance above the bar it names. On a quiet host
# rank 1 is latest in every step and the noise far below that, so the straggler must be named.
noise_note = next((n for n in report.get("notes", []) if n.startswith("the ranks differ within noise: rank 1 ")), None)
noise_ms = float(re.search(r"varies by ([0-9.]+) ms", noise_note).group(1)) if noise_note and "varies by" in noise_note else 0.0
chance = re.search(r"chance ([0-9.]+); named from ([0-9.]+)", noise_note or "")
inconsistent = chance is not None and float(chance.group(1)) > float(chance.group(2))
check((len(stragglers) == 1 and stragglers[0]["ranks"] == [1]) or
      (not stragglers and noise_note is not None and "off a CPU" in noise_note and (noise_ms >= 10.0 or inconsistent)),
      "slow: rank 1 named the straggler (or, in noise of >= 10 ms a step or a sign test the machine's noise failed, "
      "the within-noise note on rank 1, off a CPU)\n"
      + text)
if stragglers:
    late = stragglers[0]["evidence"]["lateness_per_step_ns"]
    # The sleep is 30 ms off a CPU in every step, which the cause measures whatever the load: the off-CPU excess
    # within 20 % of it. The lateness is at least the sleep; on a loaded machine the job really loses more (at load
    # 8: 50-59 ms, much of it waiting for a CPU; at load 6-8: 36.9-37.9 ms with 0.01 ms waiting for a CPU, the
    # others waiting as long), so the lateness has no
    # upper bound from the injection; the others' wait must match it (one definition of who waits for whom).
    ev = stragglers[0]["evidence"]
    off_cpu = ev.get("off_cpu_excess_per_step_ns", 0.0)
    check(0.8 * 30e6 <= late and 0.8 * 30e6 <= off_cpu <= 1.2 * 30e6,
          "slow: %.2f ms per step late, %.2f ms of it off a CPU beyond the others, for a 30 ms sleep\n%s"
          % (late / 1e6, off_cpu / 1e6, text))
    check(abs(ev.get("others_wait_per_step_ns", 0.0) - late) <= 0.2 * late,
          "slow: the others wait %.2f ms per step for its %.2f ms" % (ev.get("others_wait_per_step_ns", 0.0) / 1e6,
                                                                       late / 1e6))
    check(stragglers[0]["evidence"].get("cause_code") == 4, "slow: cause off a CPU (the sleep)\n" + text)

# The bucket finding from the bucket allreduces themselves (recorded from gloo, or by the hook with
# COLLSCOPE_TEST_DDP_HOOK=1).
# Small buckets (bucket_cap_mb 0.07 for 4 MiB of gradients): the DDP finding, in DDP's knob, above the value in
# effect; the default cap (25) holds them: no such finding.
run, small = run_job("small-buckets", "--steps", "8", "--layers", "64", "--width", "128", "--bucket-cap-mb", "0.07")
check(all(r[0] == 0 for r in small), "small buckets: both ranks exit 0")
report, text = analyze(run)
ddp = [f for f in report.get("findings", []) if f["title"].startswith("DDP sends")]
check(len(ddp) == 1 and ddp[0]["evidence"]["suggested_bucket_cap_mb"] == 25 and ddp[0]["evidence"]["buckets_per_step"] >= 8
      and "bucket_cap_mb=25" in ddp[0]["suggestion"], "small buckets: DDP's bucket finding\n" + text)
for knob in ("--mca", "MPIR_CVAR", "NCCL_", "HOROVOD_"):
    check(knob not in text, "small buckets: no advice in another backend's knobs (%s)" % knob)
# The same with find_unused_parameters=True: DDP also allreduces its unused-parameter bitmap every step (recorded
# from gloo beside the buckets); the finding counts DDP's buckets alone, as many as the layout DDP logged.
run, unused_small = run_job("small-buckets-find-unused", "--steps", "8", "--layers", "64", "--width", "128",
                            "--bucket-cap-mb", "0.07", "--find-unused")
report, text = analyze(run)
ddp = [f for f in report.get("findings", []) if f["title"].startswith("DDP sends")]
db = sqlite3.connect("file:%s?mode=ro" % os.path.join(run, "rank-00000.sqlite"), uri=True)
layout = [b for b in dict(db.execute("SELECT key, value FROM meta")).get("ddp.bucket_sizes", "").split(",") if b]
bitmaps = db.execute("SELECT count(*) FROM collectives WHERE op = 2 AND bytes = ?", (64 * 2 * 4,)).fetchone()[0]
db.close()
check(HOOK or bitmaps >= 8, "find_unused: the unused-parameter bitmap (128 parameters: 512 bytes) allreduced every "
      "step, recorded from gloo: %d rows" % bitmaps)
check(len(ddp) == 1 and len(layout) >= 8 and ddp[0]["evidence"]["buckets_per_step"] == len(layout),
      "find_unused: the bucket finding counts DDP's %d buckets, not the bitmap\n%s" % (len(layout), text))
default_steps = 8
run, large = run_job("default-buckets", "--steps", str(default_steps), "--layers", "64", "--width", "128")
report, text = analyze(run)
check(not [f for f in report.get("findings", []) if f["title"].startswith("DDP sends")], "default cap: no bucket finding\n" + text)
# gloo's worker runs each bucket's allreduce synchronously: its whole span is time in the collective, so the step's
# time in collectives holds at least half of what the buckets' median span adds up to per step (it read 0 when only
# the rows' zero-length posting counted).
spans = []
for rank in range(2):
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(run, "rank-%05d.sqlite" % rank), uri=True)
    spans += [r[0] for r in db.execute(
        "SELECT c.end_ns - c.start_ns FROM collectives c JOIN communicators m ON m.id = c.comm "
        "WHERE c.op = 2 AND m.name = 'default group (C++ calls)'")]
    db.close()
summary = report.get("summary", {})
bucket_ns_per_step = statistics.median(spans) * len(spans) / 2 / default_steps if spans else 0  # 2 ranks
check(HOOK or 0.5 * bucket_ns_per_step <= summary.get("mean_comm_ns", 0) <= summary.get("mean_step_ns", 0),
      "default cap: the buckets' allreduces on gloo's worker are time in collectives: %.2f ms per step, the buckets "
      "%.2f ms\n%s" % (summary.get("mean_comm_ns", 0) / 1e6, bucket_ns_per_step / 1e6, text))

# The group made twice in one process (destroyed, then made again): each group and its C++ calls are
# communicators of their own, each with its 3 buckets (a new group's contexts may reuse the old ones' addresses).
if not HOOK:
    run, again = run_job("reinit", ranks=2, script=os.path.join(os.path.dirname(job), "ddp_reinit_job.py"))
    check(all(r[0] == 0 for r in again), "reinit: both ranks exit 0: %s" % [r[2][-300:] for r in again if r[0]])
    grad_bytes = expectations(again[0][1]).get("grad_bytes")
    for rank in range(2):
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(run, "rank-%05d.sqlite" % rank), uri=True)
        comms = [(name, n) for name, n in db.execute(
            "SELECT c.name, (SELECT count(*) FROM collectives x WHERE x.comm = c.id AND x.op = 2 AND x.bytes = ?) "
            "FROM communicators c ORDER BY c.id", (grad_bytes,))]
        db.close()
        want = [("default group", 0), ("default group (C++ calls)", 3)] * 2
        check(comms == want, "reinit rank %d: each group and its C++ calls, 3 buckets each: %s" % (rank, comms))


def same_output(name, traced, untraced):
    for rank, (t, u) in enumerate(zip(traced, untraced)):
        check(t[0] == 0 and u[0] == 0, "%s rank %d: exit codes %d traced, %d untraced" % (name, rank, t[0], u[0]))
        check(job_lines(t[1]) == job_lines(u[1]), "%s rank %d: the job's output unchanged" % (name, rank))


def collective_counts(db):
    """(op name, communicator id) -> (calls, bytes)."""
    return dict(((o, comm), (n, b)) for o, comm, n, b in db.execute(
        "SELECT o.name, c.comm, count(*), sum(c.bytes) FROM collectives c JOIN ops o ON o.code = c.op GROUP BY 1, 2"))


# Two process groups on 3 ranks: the default group and a group of ranks {0, 2}. Ranks 0 and 2 have a communicator
# for each, with its members; rank 1 only the default one; the subgroup's calls counted exactly, on its members only.
_, sub_untraced = run_job("subgroup-untraced", "--steps", "2", "--subgroup", traced=False, ranks=3)
run, sub = run_job("subgroup", "--steps", "2", "--subgroup", ranks=3)
same_output("subgroup", sub, sub_untraced)
expect = expectations(sub[0][1])
for rank in range(3):
    path = os.path.join(run, "rank-%05d.sqlite" % rank)
    check(os.path.exists(path), "subgroup: rank file %s" % os.path.basename(path))
    if not os.path.exists(path):
        continue
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    comms = db.execute("SELECT id, backend, size, members, name FROM communicators ORDER BY id").fetchall()
    # DDP's buckets on the default group, recorded from gloo: a communicator of their own, which the test of the
    # plain run checks. Here the groups.
    cpp = [c for c in comms if c[4] == "default group (C++ calls)"]
    comms = [c[:4] for c in comms if c[4] != "default group (C++ calls)"]
    check(len(cpp) == (0 if HOOK else 1) and all(c[1:4] == ("gloo", 3, "0,1,2") for c in cpp),
          "subgroup rank %d: the default group's C++ calls: %s" % (rank, cpp))
    member = rank in (0, 2)
    want = [("gloo", 3, "0,1,2")] + ([("gloo", 2, "0,2")] if member else [])
    check([c[1:] for c in comms] == want, "subgroup rank %d: communicators %s, expected %s" % (rank, comms, want))
    counts = collective_counts(db)
    on_sub = {k[0]: v for k, v in counts.items() if len(comms) > 1 and k[1] == comms[1][0]}
    want_sub = {"allreduce": (expect["subgroup_allreduce"], 4 * 100 * 4), "bcast": (expect["subgroup_bcast"], 50 * 4)}
    check(on_sub == (want_sub if member else {}), "subgroup rank %d: calls on the subgroup %s" % (rank, on_sub))
    if member:
        root = db.execute("SELECT root FROM collectives WHERE comm = ? AND op = (SELECT code FROM ops WHERE name = "
                          "'bcast')", (comms[1][0],)).fetchone()
        check(root == (1,), "subgroup rank %d: the broadcast's root is rank 2, the group's rank 1: %s" % (rank, root))
    check(counts.get(("barrier", comms[0][0] if comms else 0), (0, 0))[0] == 1,
          "subgroup rank %d: the one barrier on the default group" % rank)
    db.close()
report, text = analyze(run)
check(not [f for f in report.get("findings", []) if f["kind"] == "mismatch"], "subgroup: no mismatch\n" + text)

# no_sync accumulation, 3 micro-batches per optimizer step (the hook on for this run: DDP's buckets as rows):
# a step is one optimizer.step() with 3 backward passes; the buckets are allreduced once per step, all in the
# step's last (syncing) backward pass, carrying the gradients' bytes exactly.
ACC_STEPS, MICRO = 6, 3
_, acc_untraced = run_job("no-sync-untraced", "--steps", str(ACC_STEPS), "--accumulate", str(MICRO), traced=False)
run, acc = run_job("no-sync", "--steps", str(ACC_STEPS), "--accumulate", str(MICRO), hook=True)
same_output("no_sync", acc, acc_untraced)
expect = expectations(acc[0][1])
for rank in range(2):
    path = os.path.join(run, "rank-%05d.sqlite" % rank)
    if not os.path.exists(path):
        check(False, "no_sync: rank file %s" % os.path.basename(path))
        continue
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    ranges = {}
    for name, start, end in db.execute("SELECT s.value, n.start_ns, n.end_ns FROM nvtx_ranges n JOIN strings s "
                                       "ON s.id = n.name ORDER BY n.start_ns"):
        ranges.setdefault(name, []).append((start, end))
    steps, backward = ranges.get("step", []), ranges.get("backward", [])
    check(len(steps) == ACC_STEPS and len(ranges.get("optimizer", [])) == ACC_STEPS,
          "no_sync rank %d: %d steps, one per optimizer.step()" % (rank, len(steps)))
    check(len(backward) == ACC_STEPS * MICRO, "no_sync rank %d: %d backward passes" % (rank, len(backward)))
    buckets = db.execute("SELECT start_ns, bytes FROM collectives WHERE op = 2 ORDER BY start_ns").fetchall()
    meta = dict(db.execute("SELECT key, value FROM meta"))
    layout = [int(b) for b in meta.get("ddp.bucket_sizes", "").split(",") if b]
    check(sum(layout) == expect["grad_bytes"], "no_sync rank %d: DDP's bucket layout %s holds the gradients" % (rank, layout))
    check(len(buckets) == ACC_STEPS * len(layout), "no_sync rank %d: %d bucket allreduces, %d steps x %d buckets"
          % (rank, len(buckets), ACC_STEPS, len(layout)))
    for k, (start, end) in enumerate(steps):
        mine = [b for b in buckets if start <= b[0] <= end]
        passes = [p for p in backward if start <= p[0] and p[1] <= end]
        syncing = passes[-1] if passes else (0, 0)
        check(len(passes) == MICRO and sum(b[1] for b in mine) == expect["grad_bytes"]
              and all(syncing[0] <= b[0] <= syncing[1] for b in mine),
              "no_sync rank %d step %d: %d passes; buckets %s all in the last pass %s" % (rank, k, len(passes), mine, syncing))
    db.close()
report, text = analyze(run)
check(report.get("summary", {}).get("steps") == ACC_STEPS, "no_sync: %s steps analysed" % report.get("summary", {}).get("steps"))


# DDP advice from what DDP's reducer logged (its buckets not recorded: no hook, COLLSCOPE_GLOO=0): present when the
# trace shows the problem, in DDP's own knobs, never at the value in effect; absent on the plain run above and where
# the knob already fixes it.
# The accumulation advice rests on a measured share (allreduces backward does not hide >= 30 % of the step), which
# these small jobs cross on this shared machine in some runs (4.13 ms of a 12.71 ms step, measured): where it
# appears, its premise is checked from its own evidence instead of assuming it absent.
def is_accumulation_advice(f):
    return "no_sync" in f.get("suggestion", "")


def ddp_advice(report):
    found = [f for f in report.get("findings", []) if f["title"].startswith("DDP ") or f["kind"] == "framework_setting"
             or is_accumulation_advice(f)]
    for f in found:
        if is_accumulation_advice(f):
            ev = f.get("evidence", {})
            check(ev.get("step_time_ns", 0) > 0 and ev.get("exposed_comm_per_step_ns", 0) >= 0.3 * ev["step_time_ns"],
                  "accumulation advice below its 30 %% premise: %s" % f)
    return [f for f in found if not is_accumulation_advice(f)]


plain_report, plain_text = analyze(os.path.join(scratch, "plain"))
check(not ddp_advice(plain_report), "plain: no DDP advice (bucket_cap_mb 25, find_unused_parameters False, 1 thread)\n"
      + plain_text)
run, small = run_job("small-buckets-reducer", "--steps", "8", "--layers", "64", "--width", "128", "--bucket-cap-mb",
                     "0.07", "--no-hook")
check(all(r[0] == 0 for r in small), "small buckets (no hook): both ranks exit 0")
report, text = analyze(run)
advice = ddp_advice(report)
check(len(advice) == 1 and advice[0]["title"].startswith("DDP sends") and advice[0]["evidence"]["bucket_cap_mb"] == 0.07
      and advice[0]["evidence"]["buckets_per_step"] >= 8 and "bucket_cap_mb=25" in advice[0]["suggestion"],
      "small buckets (no hook): the bucket advice alone, from DDP's own bucket layout\n" + text)
for knob in ("--mca", "MPIR_CVAR", "NCCL_", "HOROVOD_"):
    check(knob not in text, "small buckets (no hook): no advice in another backend's knobs (%s)" % knob)
run, large = run_job("default-buckets-reducer", "--steps", "8", "--layers", "64", "--width", "128", "--no-hook")
report, text = analyze(run)
check(not ddp_advice(report), "default cap (25) on the same model: no DDP advice\n" + text)
_, unused_untraced = run_job("find-unused-untraced", "--steps", "8", "--find-unused", traced=False)
run, unused = run_job("find-unused", "--steps", "8", "--find-unused", "--no-hook")
same_output("find_unused", unused, unused_untraced)
report, text = analyze(run)
advice = ddp_advice(report)
check(len(advice) == 1 and advice[0]["kind"] == "framework_setting"
      and "find_unused_parameters=False" in advice[0]["suggestion"] and "(now True)" in advice[0]["suggestion"],
      "find_unused_parameters=True with no unused parameter: advice to turn it off, alone\n" + text)

# torch threads: each of the 2 ranks computes with as many intra-op threads as the CPUs they may run on (2x the
# CPUs in all, spinning OpenMP threads): the advice in torch's knob, below the value in effect; the plain run (1
# thread) had none.
cpus = len(os.sched_getaffinity(0))
run, threads = run_job("threads", "--steps", "8", "--width", "512", "--threads", str(max(2, cpus)), "--no-hook")
check(all(r[0] == 0 for r in threads), "threads: both ranks exit 0")
report, text = analyze(run)
advice = [f for f in ddp_advice(report) if "set_num_threads" in f["suggestion"]]
check(len(advice) == 1 and advice[0]["evidence"]["suggested_num_threads"] == max(1, cpus // 2)
      and advice[0]["evidence"]["num_threads"] == max(2, cpus) and advice[0]["evidence"]["run_queue_pct"] >= 10,
      "threads: torch.set_num_threads(%d) advised\n" % max(1, cpus // 2) + text)

# The bucket finding on a recorded DDP run with small buckets (bucket_cap_mb 0.07, traced with the hook): in
# DDP's own knob, above the value in effect, no other backend's knobs.
recorded = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "ddp-gloo-small-buckets")
report, text = analyze(recorded)
ddp = [f for f in report.get("findings", []) if f["title"].startswith("DDP sends")]
check(len(ddp) == 1 and ddp[0]["evidence"]["suggested_bucket_cap_mb"] == 25 and ddp[0]["evidence"]["bucket_cap_mb"] == 0.07
      and "bucket_cap_mb=25" in ddp[0]["suggestion"], "recorded small buckets: DDP's bucket finding\n" + text)
for knob in ("--mca", "MPIR_CVAR", "NCCL_", "HOROVOD_"):
    check(knob not in text, "recorded small buckets: no advice in another backend's knobs (%s)" % knob)

# The accumulation advice, and its saving against the job run as advised: the shipped sample trainer (its own
# launcher, 2 ranks) with 4 layers of 1024 x 1024 in one bucket (bucket_cap_mb 100) and 2 samples per rank, where
# DDP's allreduces after backward are 38-58 % of the step (3 runs at load 6; the advice needs 30 %). Whether the
# advice is given is checked against its premise, computed here from DDP's timers in the rank files (it follows
# the measured share, which a loaded machine moves). Where it is given, the saving it prints per micro-batch is
# compared with the trainer's own rate untraced, plain and with --accumulate k, each the faster of two runs (the
# machine is shared). The quoted saving is the exposed allreduce's part only: on a quiet machine a floor (11.2-25.9
# ms quoted for 21.3-28.6 ms real: the optimizer also runs once per k, and backward without allreduces beside it);
# under load the runs compared are minutes apart and the real saving was 0.42-0.82 x the quote in 2 of 6 runs (load
# 6-11). Asserted: the advised k saves time (real saving > 0); the error is printed.
trainer = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples", "ddp_trainer", "train_ddp.py")
model = ["--batch-size", "2", "--layers", "4", "--width", "1024", "--bucket-cap-mb", "100"]


def trainer_step_ms(*args, traced_as=None):
    """The trainer's printed mean step, ms (one step is --accumulate micro-batches)."""
    command = [sys.executable, trainer, *model, *args]
    if traced_as:
        command = [collscope, "trace", "-o", os.path.join(scratch, traced_as), "--"] + command
    out = subprocess.run(command, capture_output=True, text=True, timeout=300)
    check(out.returncode == 0, "accumulation: %s exited %d %s" % (" ".join(args), out.returncode,
                                                                  out.stderr[-500:] if out.returncode else ""))
    for line in out.stdout.splitlines():
        if line.startswith("train_ddp: throughput"):
            return float(line.split("mean step ")[1].split(" ms")[0])
    return float("nan")


def least_exposed_ddp_comm_ns(run):
    """DDP's timers as the tracer recorded them: backward's allreduce time not overlapped, least over the ranks."""
    exposed = []
    for name in sorted(os.listdir(run)):
        if name.startswith("rank-") and name.endswith(".sqlite"):
            db = sqlite3.connect("file:%s?mode=ro" % os.path.join(run, name), uri=True)
            meta = dict(db.execute("SELECT key, value FROM meta WHERE key LIKE 'ddp.backward_%'").fetchall())
            db.close()
            exposed.append(max(0, int(meta["ddp.backward_comm_ns"]) - int(meta["ddp.backward_overlap_ns"])))
    return min(exposed)


trainer_step_ms("--steps", "12", traced_as="accumulation")
report, text = analyze(os.path.join(scratch, "accumulation"))
advice = [f for f in report.get("findings", []) if is_accumulation_advice(f)]
share = least_exposed_ddp_comm_ns(os.path.join(scratch, "accumulation")) / report["summary"]["median_step_ns"]
# The product's own rule (analyzer/src/detectors/ddp_knobs.cpp): no accumulation advice beside the threads advice,
# the finding whose advice is torch.set_num_threads itself. A straggler waiting for a CPU also names
# torch.set_num_threads among the placement checks, and does not suppress it (load 8: both given, share 77 %).
threads_advice = any(f.get("suggestion", "").startswith("torch.set_num_threads") for f in report.get("findings", []))
print("accumulation: DDP's allreduces after backward %.0f %% of the step" % (100 * share))
# Also only while the exposed allreduce is less than the step (the rule's `exposed < step`): at load 7.5 the least
# exposed rank's DDP timers read 104 % of the median step, a reading that leaves no compute to accumulate over.
check(len(advice) == (1 if 0.3 <= share < 1.0 and not threads_advice else 0),
      "accumulation: the no_sync advice given exactly when its premise holds (%.0f %% of the step)\n%s"
      % (100 * share, text))
if len(advice) == 1:
    ev = advice[0]["evidence"]
    k = int(ev["suggested_accumulation_steps"])
    predicted_ms = ev["exposed_comm_per_step_ns"] * (1 - 1 / k) / 1e6
    check(("%.2f ms less per micro-batch" % predicted_ms) in advice[0]["suggestion"],
          "accumulation: the saving quoted is the exposed allreduce over k: %s" % advice[0]["suggestion"])
    check(2 <= k <= 16 and "%d micro-batches" % k in advice[0]["suggestion"], "accumulation: k = %d" % k)
    plain_ms = min(trainer_step_ms("--steps", "12") for _ in range(2))
    accumulated_ms = min(trainer_step_ms("--steps", "5", "--warmup-steps", "1", "--accumulate", str(k))
                         for _ in range(2)) / k
    real_ms = plain_ms - accumulated_ms
    print("accumulation: k %d, predicted saving %.2f ms per micro-batch, real %.2f ms (%.2f -> %.2f ms), error %+.0f %%"
          % (k, predicted_ms, real_ms, plain_ms, accumulated_ms, 100 * (predicted_ms - real_ms) / real_ms))
    check(real_ms > 0,
          "accumulation: the advised k saves per micro-batch: %.2f ms real for %.2f predicted" % (real_ms, predicted_ms))

print("%d passed, %d failed" % (0 if failures else 1, len(failures)))
sys.exit(1 if failures else 0)
