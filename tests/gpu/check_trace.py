#!/usr/bin/env python3
"""Asserts a GPU-check trace against the `expect KEY VALUE` lines nccl_gpu_check printed.
usage: check_trace.py RANK_FILE.sqlite EXPECT_FILE"""
import sqlite3
import sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
expect = {}
for line in open(sys.argv[2]):
    parts = line.split()
    if len(parts) == 3 and parts[0] == "expect":
        expect[parts[1]] = int(parts[2])
failures = []


def check(what, ok, detail=""):
    print(f"  {'ok  ' if ok else 'FAIL'} {what} {detail}")
    if not ok:
        failures.append(what)


def one(sql, *args):
    return db.execute(sql, args).fetchone()[0]


meta = dict(db.execute("select key, value from meta"))
check("meta nccl_version", "nccl_version" in meta, meta.get("nccl_version", ""))
check("meta gpu_capture says CUPTI is active", "active" in meta.get("gpu_capture", ""), meta.get("gpu_capture", ""))
nccl = one("select count(*) from collectives c join communicators m on c.comm = m.id where m.backend = 'nccl'")
check("NCCL collectives recorded", nccl == expect["collectives"], f"{nccl} == {expect['collectives']}")
timed = one("""select count(*) from collectives c join communicators m on c.comm = m.id
               where m.backend = 'nccl' and c.gpu_start_ns is not null and c.gpu_end_ns >= c.gpu_start_ns""")
check("every NCCL collective has GPU times", timed == nccl, f"{timed} of {nccl}")
after = one("""select count(*) from collectives c join communicators m on c.comm = m.id
               where m.backend = 'nccl' and c.gpu_start_ns >= c.start_ns""")
check("GPU start after the call's CPU start", after == nccl, f"{after} of {nccl}")
kernels = one("select count(*) from gpu_activities where kind = 0")
check("kernels recorded", kernels >= expect["scale_kernels"] + 1, str(kernels))
scale = one("""select count(*) from gpu_activities g join strings s on g.name = s.id
               where g.kind = 0 and s.value like '%scale_kernel%'""")
check("scale_kernel launches", scale == expect["scale_kernels"], f"{scale} == {expect['scale_kernels']}")
nccl_kernels = one("""select count(*) from gpu_activities g join strings s on g.name = s.id
                      where g.kind = 0 and s.value like '%nccl%'""")
check("NCCL kernels recorded", nccl_kernels > 0, str(nccl_kernels))
copies = one("select count(*) from gpu_activities where kind = 1")
check("copies recorded", copies >= expect["iterations"] * 5, str(copies))
sets = one("select count(*) from gpu_activities where kind = 2")
check("memsets recorded", sets == expect["iterations"], str(sets))
iters = one("""select count(*) from nvtx_ranges r join strings s on r.name = s.id
               where s.value = 'iter' and r.end_ns is not null and r.depth = 1""")
check("NVTX iter ranges", iters == expect["iterations"], f"{iters} == {expect['iterations']}")
packed = db.execute("select tensors_packed from buffers where address = ?", (expect["fusion_address"],)).fetchone()
check("fusion buffer tensors packed (D2D copies)", packed is not None and packed[0] == expect["fusion_tensors"],
      f"{packed[0] if packed else None} == {expect['fusion_tensors']}")
if failures:
    print(f"GPU check FAILED: {len(failures)} check(s)")
    sys.exit(1)
print("GPU check passed")
