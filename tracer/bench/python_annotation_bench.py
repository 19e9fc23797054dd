# Per-step cost of collscope's Python annotation (tracer/python/sitecustomize.py), measured in one process:
# blocks of minimal PyTorch training steps (Linear(1, 1): forward, backward, SGD step; little else to hide the
# annotation behind) alternate between the annotated functions and the originals they wrap, and the median
# per-step times of both are compared. Run it under the tracer so that the annotation records:
#   collscope trace -o /tmp/annot-bench -- /usr/bin/python3 tracer/bench/python_annotation_bench.py
import statistics
import sys
import time

import torch

if not hasattr(torch.nn.Module.__call__, "__wrapped__"):
    sys.exit("python_annotation_bench: torch is not annotated (run it under `collscope trace`)")

STEPS, BLOCKS = 1000, 7
model = torch.nn.Linear(1, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.ones(1, 1)
annotated = (torch.nn.Module.__call__, torch.Tensor.backward, torch.optim.SGD.step)
plain = tuple(f.__wrapped__ for f in annotated)


def use(functions):
    torch.nn.Module.__call__, torch.Tensor.backward, torch.optim.SGD.step = functions


def block():
    start = time.perf_counter_ns()
    for _ in range(STEPS):
        model(x).sum().backward()
        optimizer.step()
    return (time.perf_counter_ns() - start) / STEPS


times = {"annotated": [], "plain": []}
for i in range(BLOCKS * 2 + 1):
    name = "plain" if i % 2 else "annotated"
    use(plain if name == "plain" else annotated)
    t = block()
    if i:  # the first block warms up
        times[name].append(t)
use(annotated)
a, p = statistics.median(times["annotated"]), statistics.median(times["plain"])
print("python annotation: %.1f us per step annotated, %.1f us plain: +%.2f us per step, ratio %.3f "
      "(median of %d blocks of %d steps each)" % (a / 1e3, p / 1e3, (a - p) / 1e3, a / p, BLOCKS, STEPS))

# Where the time goes: one push/pop pair through the annotation table against two calls of a C function that does
# nothing (libc abs) through ctypes, same run: the recording itself is lost in ctypes' own call cost.
import ctypes  # noqa: E402


class Table(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("size", ctypes.c_uint32),
                ("range_push", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p)),
                ("range_pop", ctypes.CFUNCTYPE(ctypes.c_int))]


libc = ctypes.CDLL(None)
entry = libc.collscope_annotation_v1
entry.restype = ctypes.POINTER(Table)
table = entry().contents
push, pop = table.range_push, table.range_pop
no_op = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(ctypes.cast(libc.abs, ctypes.c_void_p).value)


def per_call(f, n=2000):
    runs = []
    for _ in range(9):
        start = time.perf_counter_ns()
        for _ in range(n):
            f()
        runs.append((time.perf_counter_ns() - start) / n)
        time.sleep(0.02)  # the writer empties the ring between runs: no drops
    return statistics.median(runs)


pair, baseline = per_call(lambda: (push(b"x"), pop())), per_call(lambda: (no_op(1), no_op(1)))
print("range push+pop through ctypes: %.0f ns; two no-op ctypes calls: %.0f ns; ratio %.2f"
      % (pair, baseline, pair / baseline))
