#!/usr/bin/env python3
"""Checks of the GPU check's traces (tests/gpu/run.sh) against what the jobs say they did (`expect KEY VALUE`
lines in their output). Standard library only (the GPU machine has Python, not the sqlite3 tool).

  check_trace.py one-rank RUN EXPECT              (a) CUPTI kernels/copies, NCCL collectives, ties, GPU times
  check_trace.py one-rank-profiler RUN EXPECT     (b) the same job with the profiler plugin and the preload
  check_trace.py one-rank-alone RUN EXPECT        (b) the profiler plugin alone
  check_trace.py pair RUN EXPECT0 EXPECT1         (b) two ranks, preload + profiler plugin
  check_trace.py pair-alone RUN EXPECT0 EXPECT1 [BOTH_RUN]   (b) two ranks, the plugin alone
  check_trace.py ddp RUN EXPECT ANALYZE_JSON      (d) the PyTorch DDP job
Prints one line per check; exit 1 when one failed."""
import json
import os
import sqlite3
import sys

failures = []


def check(what, ok, detail=""):
    print(f"  {'ok  ' if ok else 'FAIL'} {what} {detail}".rstrip())
    if not ok:
        failures.append(what)
    return ok


def note(what, detail=""):
    print(f"  info {what} {detail}".rstrip())


def expectations(path):
    out = {}
    for line in open(path, errors="replace"):
        parts = line.split()
        if len(parts) == 3 and parts[0] == "expect":
            out[parts[1]] = int(parts[2])
    return out


def open_rank(run, rank):
    path = os.path.join(run, f"rank-{rank:05d}.sqlite")
    if not check(f"rank file {os.path.basename(path)}", os.path.exists(path), path):
        return None
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def one(db, sql, *args):
    row = db.execute(sql, args).fetchone()
    return row[0] if row else None


def meta(db):
    return dict(db.execute("select key, value from meta"))


NCCL_ROWS = "select c.* from collectives c join communicators m on c.comm = m.id where m.backend = 'nccl'"


def nccl_count(db):
    return one(db, f"select count(*) from ({NCCL_ROWS})")


def profiled(db):
    return one(db, f"select count(*) from nccl_profile p join ({NCCL_ROWS}) c on c.id = p.collective")


# ---- (a) -------------------------------------------------------------------------------------------------------

def check_one_rank(run, expect):
    db = open_rank(run, 0)
    if db is None:
        return
    m = meta(db)
    check("meta nccl_version", "nccl_version" in m, m.get("nccl_version", ""))
    check("CUPTI active", "active" in m.get("gpu_capture", ""), m.get("gpu_capture", "(no gpu_capture line)"))
    n = nccl_count(db)
    check("NCCL collectives recorded", n == expect["collectives"], f"{n} == {expect['collectives']}")
    # CUPTI: the job's own kernel and copies, with device and stream.
    scale = db.execute("""select g.device, g.stream from gpu_activities g join strings s on g.name = s.id
                          where g.kind = 0 and s.value like '%scale_kernel%'""").fetchall()
    check("scale_kernel launches", len(scale) == expect["scale_kernels"], f"{len(scale)} == {expect['scale_kernels']}")
    check("kernels carry device and stream", all(d >= 0 and s > 0 for d, s in scale), str(scale[:3]))
    job_stream = scale[0][1] if scale else None
    # The job's stream: NCCL's own setup copies and memsets run on NCCL's internal streams (noted, not counted).
    for kind, key in (("memcpy HtoD", "h2d"), ("memcpy DtoH", "d2h"), ("memcpy DtoD", "d2d")):
        rows = db.execute("""select g.device, g.stream, g.bytes from gpu_activities g join strings s on g.name = s.id
                             where g.kind = 1 and s.value = ?""", (kind,)).fetchall()
        mine = [r for r in rows if r[1] == job_stream]
        check(f"{kind} copies on the job's stream", len(mine) == expect[key], f"{len(mine)} == {expect[key]}")
        check(f"{kind} copies carry device and bytes", all(d >= 0 and b > 0 for d, _, b in mine))
        if len(rows) > len(mine):
            note(f"{kind} copies on other streams (NCCL's own)", str(len(rows) - len(mine)))
    sets = one(db, "select count(*) from gpu_activities where kind = 2 and stream = ?", job_stream)
    check("memsets on the job's stream", sets == expect["iterations"], f"{sets} == {expect['iterations']}")
    # Ties by correlation id, whatever the names.
    tied = db.execute("""select s.value, g.kind, count(distinct w.collective) from collective_gpu_work w
                         join gpu_activities g on g.id = w.activity join strings s on s.id = g.name
                         group by g.id""").fetchall()
    tied_copies = sum(1 for name, kind, _ in tied if name == "memcpy DtoD")
    check("NCCL's copies tied to their collectives", tied_copies == expect["nccl_copies"],
          f"{tied_copies} == {expect['nccl_copies']}")
    check("the job's own kernel is tied to no collective", not any("scale_kernel" in n for n, _, _ in tied))
    nccl_kernels = db.execute("""select g.id, s.value from gpu_activities g join strings s on g.name = s.id
                                 where g.kind = 0 and (s.value like 'nccl%' or s.value like '%oneRankReduce%')""").fetchall()
    untied = [name for gid, name in nccl_kernels
              if not one(db, "select count(*) from collective_gpu_work where activity = ?", gid)]
    check("every NCCL kernel is tied to its collective", nccl_kernels and not untied,
          f"{len(nccl_kernels)} NCCL kernels, untied: {untied[:3]}")
    note("NCCL kernel names", ", ".join(sorted({n for _, n in nccl_kernels}))[:300])
    sendrecv = one(db, """select count(distinct c.id) from collectives c join collective_gpu_work w on w.collective = c.id
                          join gpu_activities g on g.id = w.activity where c.op in (16, 17) and g.kind = 0""")
    check("send/recv to itself tied to a kernel", sendrecv == expect["p2p"], f"{sendrecv} == {expect['p2p']}")
    timed = one(db, f"select count(*) from ({NCCL_ROWS}) where gpu_start_ns is not null and gpu_end_ns >= gpu_start_ns")
    check("NCCL collectives with GPU times (those that launched GPU work)", timed == expect["gpu_timed_collectives"],
          f"{timed} == {expect['gpu_timed_collectives']}")
    inside = one(db, """select count(*) from collectives c where c.gpu_start_ns is not null and exists
                        (select 1 from collective_gpu_work w join gpu_activities g on g.id = w.activity
                         where w.collective = c.id and g.start_ns = c.gpu_start_ns)""")
    check("each GPU time starts with the collective's own GPU work", inside == timed, f"{inside} of {timed}")
    after = one(db, f"select count(*) from ({NCCL_ROWS}) where gpu_start_ns >= start_ns")
    check("GPU start after the call's CPU start", after == timed, f"{after} of {timed}")
    iters = one(db, """select count(*) from nvtx_ranges r join strings s on r.name = s.id
                       where s.value = 'iter' and r.end_ns is not null and r.depth = 1""")
    check("NVTX iter ranges", iters == expect["iterations"], f"{iters} == {expect['iterations']}")
    packed = db.execute("select tensors_packed from buffers where address = ?", (expect["fusion_address"],)).fetchone()
    check("fusion buffer tensors packed (D2D copies)", packed is not None and packed[0] == expect["fusion_tensors"],
          f"{packed[0] if packed else None} == {expect['fusion_tensors']}")


# ---- (b) -------------------------------------------------------------------------------------------------------

def check_profile_rows(db, expect_profiled, label):
    m = meta(db)
    p = profiled(db)
    check(f"{label}: NCCL profiler rows on the collectives", p == expect_profiled, f"{p} == {expect_profiled}")
    check(f"{label}: every profiler record matched", m.get("nccl_profiler.unmatched") == "0",
          f"unmatched {m.get('nccl_profiler.unmatched')}, records {m.get('nccl_profiler.records')}")
    check(f"{label}: nothing dropped", m.get("nccl_profiler.dropped", "0") == "0" and m.get("events_dropped", "0") == "0",
          f"profiler {m.get('nccl_profiler.dropped')}, events {m.get('events_dropped')}")
    api = one(db, "select max(api_version) from nccl_profile")
    note(f"{label}: profiler API version NCCL chose", str(api))
    timed = one(db, """select count(*) from nccl_profile p join collectives c on c.id = p.collective
                       where p.kernel_channels > 0 and p.kernel_channels = p.channels
                       and c.gpu_start_ns is not null and c.gpu_end_ns > c.gpu_start_ns""")
    return api, timed


def check_one_rank_profiler(run, expect, alone):
    db = open_rank(run, 0)
    if db is None:
        return
    n = nccl_count(db)
    # One rank: NCCL gives collectives no task (a copy or nothing), so only the send/receive reach the profiler.
    want_rows = expect["p2p"] if alone else expect["collectives"]
    check("one row per call (no duplicates)", n == want_rows, f"{n} == {want_rows}")
    api, timed = check_profile_rows(db, expect["p2p"], "one rank")
    note("one rank: point-to-point rows with kernel-channel GPU times", f"{timed} of {expect['p2p']}")


def check_pair(run, expects, alone, both_run=None):
    apis = set()
    for rank, expect in enumerate(expects):
        db = open_rank(run, rank)
        if db is None:
            continue
        label = f"rank {rank}"
        n = nccl_count(db)
        check(f"{label}: one row per call", n == expect["collectives"], f"{n} == {expect['collectives']}")
        api = one(db, "select max(api_version) from nccl_profile") or 0
        apis.add(api)
        # Before API v5 a point-to-point task names nothing the interposer knows: left unmatched, not guessed.
        want = expect["collectives"] if (alone or api >= 5) else expect["collectives"] - expect["p2p"]
        _, timed = check_profile_rows(db, want, label)
        check(f"{label}: GPU times from every kernel channel", timed == want, f"{timed} == {want}")
        algos = [r[0] for r in db.execute("""select distinct s.value from nccl_profile p join strings s on s.id = p.algorithm
                                             where s.value != ''""")]
        check(f"{label}: algorithms named", bool(algos), ", ".join(algos))
        ops = db.execute("select count(*), sum(is_send), sum(bytes), sum(steps_done) from nccl_proxy_ops").fetchone()
        check(f"{label}: network transfers (proxy operations, socket transport)", ops[0] > 0 and ops[1] > 0 and (ops[2] or 0) > 0,
              f"{ops[0]} ops, {ops[1]} sends, {ops[2]} bytes, {ops[3]} steps")
        if not alone:
            kernels = one(db, """select count(*) from gpu_activities g join strings s on s.id = g.name
                                 where g.kind = 0 and s.value like 'nccl%'""")
            tied = one(db, """select count(distinct g.id) from gpu_activities g join strings s on s.id = g.name
                              join collective_gpu_work w on w.activity = g.id where g.kind = 0 and s.value like 'nccl%'""")
            check(f"{label}: NCCL kernels (CUPTI) tied to collectives", kernels and tied == kernels, f"{tied} of {kernels}")
            within = one(db, f"""select count(*) from ({NCCL_ROWS}) where gpu_start_ns is not null
                                 and gpu_start_ns >= start_ns - 1000000""")
            check(f"{label}: kernel-channel GPU times on the host clock (not before the call)",
                  within == one(db, f"select count(*) from ({NCCL_ROWS}) where gpu_start_ns is not null"), str(within))
        if both_run:
            other = open_rank(both_run, rank)
            if other is not None:
                mine = db.execute(f"select seq, op, bytes from ({NCCL_ROWS}) order by seq").fetchall()
                theirs = other.execute(f"select seq, op, bytes from ({NCCL_ROWS}) order by seq").fetchall()
                check(f"{label}: the plugin alone writes the interposer's rows", mine == theirs,
                      f"{len(mine)} rows vs {len(theirs)}")
    note("profiler API versions", str(sorted(apis)))


# ---- (d) -------------------------------------------------------------------------------------------------------

def check_ddp(run, expect, analyze_json):
    db = open_rank(run, 0)
    if db is None:
        return
    m = meta(db)
    check("CUPTI active in the Python process", "active" in m.get("gpu_capture", ""), m.get("gpu_capture", ""))
    note("NCCL", m.get("nccl_version", "?"))
    steps = expect["steps"]
    grads = one(db, f"select count(*) from ({NCCL_ROWS}) where op = 1 and bytes = ?", expect["grad_bytes"])
    check("DDP's gradient allreduce, once per step", grads == steps, f"{grads} == {steps}")
    calls = db.execute(f"select o.name, count(*) from ({NCCL_ROWS}) c join ops o on o.code = c.op group by o.name").fetchall()
    note("NCCL calls", str(calls))
    kernels = one(db, "select count(*) from gpu_activities where kind = 0")
    check("kernels recorded (CUPTI)", kernels >= steps * 3, f"{kernels} kernels for {steps} steps")
    nccl_nvtx = one(db, """select count(*) from nvtx_ranges r join strings d on d.id = r.domain where d.value = 'NCCL'""")
    note("NCCL's own NVTX ranges (injection)", str(nccl_nvtx))
    names = {n.lower(): c for n, c in db.execute("""select s.value, count(*) from nvtx_ranges r join strings s on s.id = r.name
                                                    group by s.value""")}
    phases = {p: sum(c for n, c in names.items() if p in n) for p in ("forward", "backward", "optim")}
    step_ranges = sum(c for n, c in names.items() if n == "step" or n.startswith("step"))
    summary = json.load(open(analyze_json)).get("summary", {})
    check("steps (NVTX or inferred by the analyzer)", summary.get("steps", 0) >= steps - 2 or step_ranges >= steps,
          f"analyzer: {summary.get('steps')} steps ({summary.get('step_source')}); NVTX step ranges: {step_ranges}")
    check("phases (forward, backward, optimizer) without code changes", all(v >= steps for v in phases.values()),
          str(phases))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    mode, run = sys.argv[1], sys.argv[2]
    print(f"check {mode}: {run}")
    if mode == "one-rank":
        check_one_rank(run, expectations(sys.argv[3]))
    elif mode == "one-rank-profiler":
        check_one_rank_profiler(run, expectations(sys.argv[3]), alone=False)
    elif mode == "one-rank-alone":
        check_one_rank_profiler(run, expectations(sys.argv[3]), alone=True)
    elif mode in ("pair", "pair-alone"):
        expects = [expectations(sys.argv[3]), expectations(sys.argv[4])]
        check_pair(run, expects, alone=mode == "pair-alone", both_run=sys.argv[5] if len(sys.argv) > 5 else None)
    elif mode == "ddp":
        check_ddp(run, expectations(sys.argv[3]), sys.argv[4])
    else:
        print(__doc__)
        sys.exit(2)
    if failures:
        print(f"FAILED: {len(failures)} check(s): {'; '.join(failures)}")
        sys.exit(1)
    print("passed")


if __name__ == "__main__":
    main()
