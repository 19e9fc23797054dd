# collscope's automatic annotation of PyTorch training jobs. `collscope trace` puts this file's directory first on
# PYTHONPATH when the traced job is Python (--no-python-annotation turns that off), so Python imports it at start-up
# as `sitecustomize`. It changes nothing in the job:
#   - at start-up it only adds an import hook; a job that never imports torch pays nothing else;
#   - when torch has been imported it wraps torch.optim optimizers' step, torch.Tensor.backward and
#     torch.nn.Module.__call__, and records ranges through the preload's annotation table
#     (collscope_annotation_v1, looked up in the process with ctypes): without the preload it wraps nothing;
#   - nothing it does raises into the job: a failure of its own turns the annotation off and says so once.
#
# Ranges, on one thread: the first to run one of these calls, the training loop's (the analyzer reads "step" ranges
# as training steps, the others as phases inside them):
#   step       from the first forward (or backward) after the previous step's end, grad enabled, to the end of the
#              outermost optimizer step: one training step, gradient accumulation included. The time from a
#              step's end to the next forward (data loading, logging) is in no range.
#   forward    the outermost nn.Module call (a module called inside another module's call is not a range)
#   backward   Tensor.backward
#   optimizer  the outermost optimizer step call (a second optimizer stepped in the same iteration: its own
#              optimizer range, inside no step)
# Forward passes without grad (evaluation) get a forward range but open no step.
#
# Finally the next sitecustomize on the path (the one this file hides, such as Debian's) is run.

import atexit
import sys


def _collscope_annotate():
    state = {"failed": False}

    def warn(what):
        try:
            sys.stderr.write("collscope: Python annotation off: %s\n" % what)
        except Exception:
            pass

    def table():
        import ctypes

        class Table(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("size", ctypes.c_uint32),
                        ("range_push", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p)),
                        ("range_pop", ctypes.CFUNCTYPE(ctypes.c_int)),
                        ("start", ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int)),
                        ("set_meta", ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p)),
                        # Appended: torch.distributed process groups (present when `size` covers them).
                        ("now", ctypes.CFUNCTYPE(ctypes.c_uint64)),
                        ("comm_register", ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint64, ctypes.c_char_p,
                                                           ctypes.c_int, ctypes.c_int,
                                                           ctypes.POINTER(ctypes.c_int32), ctypes.c_char_p)),
                        ("collective_issue", ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_uint32, ctypes.c_char_p)),
                        ("collective", ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_int64, ctypes.c_char_p,
                                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_char_p, ctypes.c_int,
                                                        ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64,
                                                        ctypes.c_int)),
                        # Appended: claims of the buffers whose allreduce Python records (gloo's own are recorded
                        # from gloo: the C++ ones, DDP's buckets).
                        ("claim_buffer", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64)),
                        ("release_buffer", ctypes.CFUNCTYPE(None, ctypes.c_uint64))]

        try:
            entry = ctypes.CDLL(None).collscope_annotation_v1  # dlopen(NULL): the preload if it is loaded
        except (AttributeError, OSError):
            return None
        entry.restype = ctypes.POINTER(Table)
        entry.argtypes = []
        t = entry()
        if not t or t.contents.version != 1 or t.contents.size < Table.now.offset:
            warn("the preload's annotation table is not version 1")
            return None
        state["distributed_api"] = t.contents.size >= Table.claim_buffer.offset
        state["claims"] = t.contents.size >= ctypes.sizeof(Table)
        return t.contents

    def fail(e):
        # Our own bug or a job that breaks our assumptions: stop annotating, never disturb the job.
        if not state["failed"]:
            state["failed"] = True
            warn("%s: %s" % (type(e).__name__, e))

    def wrap_torch(torch):
        t = table()
        if t is None:
            return
        import functools
        import os
        import threading

        push, pop = t.range_push, t.range_pop
        state["table"] = t  # keeps the ctypes function objects alive
        get_ident, grad_enabled = threading.get_ident, torch.is_grad_enabled
        STEP, FORWARD, BACKWARD, OPTIMIZER = b"step", b"forward", b"backward", b"optimizer"
        # One thread is annotated: the first to run a forward, backward or optimizer step (the training loop's);
        # calls on other threads pass straight through. Its state is in closure cells, the fastest Python has.
        owner = None
        in_step = False
        busy = [False, False, False]  # inside the outermost forward, backward, optimizer step

        def mine():
            nonlocal owner
            ident = get_ident()
            if owner is None:
                owner = ident
            return ident == owner and not state["failed"]

        started = False

        def start():
            # The first range opens a process's rank file (if it has no MPI): with torch.distributed's rank when
            # it is initialised (torch.multiprocessing.spawn workers have no launcher variable that names it).
            nonlocal started
            started = True
            rank = size = -1
            dist = getattr(torch, "distributed", None)
            if dist is not None and dist.is_available() and dist.is_initialized():
                rank, size = dist.get_rank(), dist.get_world_size()
            t.start(rank, size)
            # What the job runs, for the analyzer (Horovod's defaults depend on its version); by the first step
            # the job has imported all of it.
            versions = {"python.version": sys.version.split()[0], "python.torch_version": torch.__version__}
            horovod = sys.modules.get("horovod")
            if horovod is not None and getattr(horovod, "__version__", None):
                versions["python.horovod_version"] = horovod.__version__
            for key, value in versions.items():
                t.set_meta(key.encode(), str(value).encode())

        def begin(name, opens_step):
            nonlocal in_step
            if not started:
                start()
            if opens_step and not in_step and grad_enabled():
                in_step = True
                push(STEP)
            push(name)

        def end(closes_step):
            nonlocal in_step
            pop()
            if closes_step and in_step:
                in_step = False
                pop()

        def phase(original, kind, name, opens_step, closes_step):
            """`original` wrapped: a range `name` around its outermost call on the annotated thread."""

            def wrapper(*args, **kwargs):
                if busy[kind] or not mine():  # nested (a module inside a module), or another thread
                    return original(*args, **kwargs)
                busy[kind] = True
                try:
                    begin(name, opens_step)
                except Exception as e:
                    fail(e)
                    busy[kind] = False
                    return original(*args, **kwargs)
                try:
                    return original(*args, **kwargs)
                finally:
                    busy[kind] = False
                    try:
                        end(closes_step)
                    except Exception as e:
                        fail(e)

            wrapper.__wrapped__ = original
            return wrapper

        module_call, backward = torch.nn.Module.__call__, torch.Tensor.backward
        call = phase(module_call, 0, FORWARD, True, False)
        tensor_backward = phase(backward, 1, BACKWARD, True, False)

        def wrap_step(cls):
            step = cls.__dict__.get("step")
            if step is None or getattr(step, "_collscope_wrapped", False):
                return
            # One flag for all optimizers: an optimizer stepping another inside its step is one range.
            optimizer_step = phase(step, 2, OPTIMIZER, False, True)
            # Name, doc and attributes (torch 1.x's `hooked` mark of its profiler wrapper, which must not wrap
            # again) are the wrapped step's; __wrapped__ is it.
            functools.update_wrapper(optimizer_step, step)
            optimizer_step._collscope_wrapped = True
            cls.step = optimizer_step

        # Every optimizer class defines its own step: each is wrapped when its first instance is made (classes
        # defined by the job itself included).
        optimizer = torch.optim.Optimizer
        optimizer_init = optimizer.__init__

        def init(self, *args, **kwargs):
            optimizer_init(self, *args, **kwargs)
            # After torch's own __init__: torch 1.x wraps the class's step for its profiler there, and the
            # optimizer range must be outside that wrapper (its cost is torch's, not ours).
            try:
                for cls in type(self).__mro__:
                    if cls is not optimizer and issubclass(cls, optimizer):
                        wrap_step(cls)
            except Exception as e:
                fail(e)

        init.__wrapped__ = optimizer_init
        optimizer.__init__ = init
        torch.nn.Module.__call__ = call
        torch.Tensor.backward = tensor_backward
        # COLLSCOPE_TORCH_DISTRIBUTED=0: ranges only, torch.distributed untouched.
        if state.get("distributed_api") and os.environ.get("COLLSCOPE_TORCH_DISTRIBUTED", "1") != "0":
            wrap_distributed(torch, t)

    def wrap_distributed(torch, t):
        """torch.distributed's operations on process groups that neither the MPI nor the NCCL interposer sees
        (gloo, custom backends) become collectives rows: one communicator per process group, each operation
        numbered per group in call order, async work completed when its future completes. DDP's bucket
        allreduces, which DDP issues from C++, are recorded by the preload from gloo itself (Debian's libgloo.so.0:
        torch/gloo_interpose.cpp) on a communicator beside the group's; where it cannot (another gloo, another
        backend), COLLSCOPE_DDP_HOOK=1 records them through a communication hook equal to DDP's default one,
        registered at the first forward unless the job registered its own (then that hook is wrapped)."""
        import ctypes
        import functools
        import inspect
        import os
        import threading
        import warnings
        import zlib

        dist = torch.distributed
        if not dist.is_available():
            return
        now, issue, record = t.now, t.collective_issue, t.collective

        def claim(handle, tensor):
            """Claims the buffer of an allreduce or broadcast recorded here, so that the preload does not record it
            again from gloo (where it records the group's C++ ones: DDP's buckets and buffers). Returns the address
            to release, or 0 when there is nothing to claim."""
            if not state.get("claims") or not handle:
                return 0
            try:
                address = tensor.data_ptr()
            except Exception:  # sparse tensors: gloo reduces them with an allgather
                return 0
            return address if t.claim_buffer(handle, address) else 0
        # id(process group) -> (handle, the group's world ranks); handle 0: not ours to record. No reference to the
        # group itself: its lifetime (its threads, joined when it is freed) stays the job's.
        groups = {}
        # DDP's buckets (the comm hook, with COLLSCOPE_DDP_HOOK=1): (id(group), bucket index) -> (work, tensor,
        # future) of the bucket's latest allreduce, kept until its next one so that they are released on the training
        # thread (see allreduce_hook below), and at the end kept for good (release_live).
        live = {}

        def release_live(group_id=None):
            """Waits for the kept bucket allreduces (of one group, or all) and then keeps their work, tensor and
            future for the rest of the process, before their group is destroyed or the interpreter finalises.
            Dropping them here made the gloo worker that ran the work hold the last reference to the bucket's
            tensor, which Python has seen: freeing it needs the GIL, and the worker waited for it forever while this
            thread, holding it, joined that worker in the group's destructor (~Reducer -> ~ProcessGroupGloo ->
            join; gdb stacks of a hung rank, docs/gpu-capture.md: 2 of 8 runs at load 6, 3 of 90 before). Kept,
            the tensor is never freed by a worker, whatever the scheduling. The cost: the last step's bucket views
            (storage DDP's reducer holds anyway) stay until exit, once per destroyed group."""
            for key in [k for k in live if group_id is None or k[0] == group_id]:
                entry = live.pop(key)
                try:
                    entry[0].wait()
                except Exception:
                    pass
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(entry))  # never freed: see above

        atexit.register(release_live)
        recorded = [False]  # some group is ours to record: until then (NCCL/MPI-only jobs) calls pass straight on
        created = [0]  # process groups made in this process, in order (the same order on every rank)
        local = threading.local()  # depth of wrapped calls: an operation made inside another is not recorded

        def register(pg, name):
            try:
                backend = str(dist.get_backend(pg)).lower()
                size = dist.get_world_size(pg)
                rank = dist.get_rank(pg)
                c10d = dist.distributed_c10d
                global_rank = getattr(c10d, "get_global_rank", None) or getattr(c10d, "_get_global_rank", None)
                try:
                    with warnings.catch_warnings():  # torch 1.13 warns that _get_global_rank is deprecated
                        warnings.simplefilter("ignore")
                        members = [global_rank(pg, i) for i in range(size)] if pg is not dist.group.WORLD else list(range(size))
                except Exception:
                    members = list(range(size))
                created[0] += 1
                if backend in ("nccl", "mpi") or rank < 0:  # the interposers record these (once)
                    groups[id(pg)] = (0, members)
                    return
                text = "torch:%d:%s:%s" % (created[0], backend, ",".join(map(str, members)))
                key = zlib.crc32(text.encode()) | (zlib.adler32(text.encode()) << 32)
                array = (ctypes.c_int32 * size)(*members)
                handle = t.comm_register(key, backend.encode(), rank, size, array, name.encode())
                groups[id(pg)] = (handle, members)
                recorded[0] = recorded[0] or bool(handle)
            except Exception as e:
                fail(e)

        init_process_group = dist.init_process_group

        def init(*args, **kwargs):
            result = init_process_group(*args, **kwargs)
            try:
                # The tracer starts here: rank and world size from the process group, one file per rank.
                if not state["failed"]:
                    t.start(dist.get_rank(), dist.get_world_size())
                    register(dist.group.WORLD, "default group")
            except Exception as e:
                fail(e)
            return result

        functools.update_wrapper(init, init_process_group)
        dist.init_process_group = init

        destroy_process_group = dist.destroy_process_group

        def destroy(*args, **kwargs):
            try:
                group = args[0] if args else kwargs.get("group")
                release_live(None if group is None else id(group))
                if group is None:
                    groups.clear()
                else:
                    groups.pop(id(group), None)
            except Exception as e:
                fail(e)
            return destroy_process_group(*args, **kwargs)

        functools.update_wrapper(destroy, destroy_process_group)
        dist.destroy_process_group = destroy

        new_group = dist.new_group

        def make_group(*args, **kwargs):
            pg = new_group(*args, **kwargs)
            try:
                if pg is not None and pg != dist.GroupMember.NON_GROUP_MEMBER:
                    register(pg, "new_group %d" % created[0])
                else:
                    created[0] += 1  # not a member: the others count it too
            except Exception as e:
                fail(e)
            return pg

        functools.update_wrapper(make_group, new_group)
        dist.new_group = make_group

        def nbytes(x):
            if isinstance(x, (list, tuple)):
                return sum(nbytes(y) for y in x)
            return x.numel() * x.element_size() if hasattr(x, "element_size") else 0

        def count_of(x):
            if isinstance(x, (list, tuple)):
                return sum(count_of(y) for y in x)
            return x.numel() if hasattr(x, "numel") else 0

        def dtype_of(x):
            while isinstance(x, (list, tuple)) and x:
                x = x[0]
            return str(getattr(x, "dtype", "")).encode()

        # name -> (op, the argument whose tensors are the payload, the argument naming a root/peer (global rank))
        ops = {
            "all_reduce": (b"allreduce", "tensor", None), "broadcast": (b"bcast", "tensor", "src"),
            "all_gather": (b"allgather", "tensor_list", None), "all_gather_into_tensor": (b"allgather", "output_tensor", None),
            "_all_gather_base": (b"allgather", "output_tensor", None), "reduce_scatter": (b"reduce_scatter", "input_list", None),
            "reduce_scatter_tensor": (b"reduce_scatter", "input", None), "_reduce_scatter_base": (b"reduce_scatter", "input", None),
            # a tensor per peer / split sizes: counts may differ per rank, as MPI_Alltoallv's
            "all_to_all": (b"alltoallv", "input_tensor_list", None), "all_to_all_single": (b"alltoallv", "input", None),
            "barrier": (b"barrier", None, None), "monitored_barrier": (b"barrier", None, None),
            "reduce": (b"reduce", "tensor", "dst"), "gather": (b"gather", "tensor", "dst"),
            "scatter": (b"scatter", "tensor", "src"), "send": (b"send", "tensor", "dst"), "recv": (b"recv", "tensor", "src"),
            "isend": (b"isend", "tensor", "dst"), "irecv": (b"irecv", "tensor", "src"),
        }

        def traced(name, original, op, payload, peer_arg):
            signature = inspect.signature(original)

            def wrapper(*args, **kwargs):
                if not recorded[0] or getattr(local, "depth", 0) or state["failed"]:
                    return original(*args, **kwargs)
                try:
                    bound = signature.bind(*args, **kwargs)
                    arguments = bound.arguments
                    group = arguments.get("group") or dist.group.WORLD
                    handle, members = groups.get(id(group), (0, None))
                except Exception as e:
                    fail(e)
                    handle = 0
                if not handle:
                    return original(*args, **kwargs)
                number = issue(handle, op)
                claimed = claim(handle, arguments.get(payload)) if op in (b"allreduce", b"bcast") else 0
                issued = now()
                local.depth = 1
                try:
                    result = original(*args, **kwargs)
                except Exception:
                    if claimed:
                        t.release_buffer(claimed)
                    returned = now()
                    try:
                        record(handle, number, op, 0, 0, b"", -1, issued, returned, returned, 1)
                    except Exception:
                        pass
                    raise
                finally:
                    local.depth = 0
                returned = now()
                if claimed and result is None:  # blocking: gloo took the claim, unless the call went another way
                    t.release_buffer(claimed)
                try:
                    data = arguments.get(payload) if payload else None
                    peer = arguments.get(peer_arg, -1) if peer_arg else -1
                    if peer is None:
                        peer = -1
                    if peer >= 0 and members is not None:
                        peer = members.index(peer) if peer in members else -1
                    values = (handle, number, op, count_of(data) if data is not None else 0,
                              nbytes(data) if data is not None else 0, dtype_of(data) if data is not None else b"",
                              peer)
                    if result is not None and not op.startswith(b"i"):
                        # Async work (async_op=True) is the non-blocking form of its operation (iallreduce, ...).
                        # Its completion is not waited for here: a Python callback on the backend's threads can
                        # run while the interpreter shuts down, which aborts the process. DDP's buckets get theirs
                        # from the hook below, in the callback DDP's own Python hook has too.
                        values = (values[0], values[1], b"i" + op) + values[3:]
                    record(*values, issued, returned, returned, 0)
                except Exception as e:
                    fail(e)
                return result

            functools.update_wrapper(wrapper, original)
            return wrapper

        for name, (op, payload, peer_arg) in ops.items():
            original = getattr(dist, name, None)
            if original is not None:
                setattr(dist, name, traced(name, original, op, payload, peer_arg))

        # DDP: its buckets' allreduces come from C++. On Debian's gloo the preload records them; elsewhere a hook
        # equal to DDP's default one (divide by the group's size, allreduce, take the result), opt-in, records them
        # here (and claims their buffers, so that they are never recorded twice).
        try:
            from torch.nn.parallel import DistributedDataParallel as DDP
        except Exception:
            return
        forward, register_hook, ddp_init = DDP.forward, DDP.register_comm_hook, DDP.__init__

        all_reduce = dist.all_reduce.__wrapped__  # the hook records its allreduce itself, with its completion

        def allreduce_hook(process_group, bucket):
            group = process_group if process_group is not None else dist.group.WORLD
            tensor = bucket.buffer()
            tensor.div_(dist.get_world_size(group))
            handle, _ = groups.get(id(group), (0, None))
            number = issue(handle, b"allreduce") if handle else -1
            claimed = claim(handle, tensor)
            issued = now()
            try:
                work = all_reduce(tensor, group=group, async_op=True)
            except Exception:
                if claimed:
                    t.release_buffer(claimed)
                raise
            future = work.get_future()
            returned = now()
            # The work, its tensor and future stay referenced from here until the same bucket's next allreduce (or
            # exit): released on this thread, which holds the GIL, never last by the group's worker thread. A worker
            # that releases the last reference to a tensor Python has seen needs the GIL, and waited for it forever
            # while the main thread, holding it, joined that worker in the group's destructor (DDP's reducer
            # dropping the last reference to its process group as the job's DDP object was freed).
            live[(id(group), bucket.index())] = (work, tensor, future)
            values = (handle, number, b"iallreduce", tensor.numel(), tensor.numel() * tensor.element_size(),
                      str(tensor.dtype).encode(), -1, issued, returned)

            def done(f):  # what DDP's default Python hook does (take the result), and the completion
                if handle and not state["failed"]:
                    try:
                        record(*values, now(), 0)
                    except Exception as e:
                        fail(e)
                return f.value()[0]

            return future.then(done)

        def record_knobs(self):
            """DDP's constructor arguments in effect (its attributes after __init__, so defaults included), and the
            intra-op threads torch computes with: the analyzer advises none of these at the value already set."""
            cap = getattr(self, "bucket_bytes_cap", None)
            if cap:
                t.set_meta(b"ddp.bucket_cap_mb", ("%.4g" % (cap / 1048576.0)).encode())
            for knob in ("gradient_as_bucket_view", "find_unused_parameters", "static_graph"):
                if hasattr(self, knob):
                    t.set_meta(("ddp." + knob).encode(), str(bool(getattr(self, knob))).lower().encode())
            record_threads()

        def record_threads():
            t.set_meta(b"torch.num_threads", str(torch.get_num_threads()).encode())
            try:
                cpus = len(os.sched_getaffinity(0))  # the CPUs this rank may run on
            except (AttributeError, OSError):
                cpus = os.cpu_count() or 0
            t.set_meta(b"torch.cpus", str(cpus).encode())

        def init_ddp(self, *args, **kwargs):
            ddp_init(self, *args, **kwargs)
            try:
                if not state["failed"]:
                    record_knobs(self)
            except Exception as e:
                fail(e)

        def record_reducer(self):
            """What DDP's reducer itself logged (torch >= 1.10, `_get_ddp_logging_data`): its buckets' sizes in
            bytes in bucket-index order (the rebuilt ones once it rebuilt them), the bytes of parameters it found
            unused, and its averages over the iterations it sampled (the first 10, then every 100th) of backward's
            compute, of the bucket allreduces from the first launch to the last completion, and of their overlap,
            in ns. Read on the training thread, never at exit."""
            logging_data = getattr(self, "_get_ddp_logging_data", None)
            if logging_data is None:
                return
            data = logging_data()
            sizes = data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes")
            if sizes:
                t.set_meta(b"ddp.bucket_sizes", ",".join(s.strip() for s in str(sizes).split(",")).encode())
            for key, meta in (("iteration", b"ddp.sampled_iterations"),
                              ("unused_parameter_size", b"ddp.unused_parameter_bytes"),
                              ("avg_backward_compute_time", b"ddp.backward_compute_ns"),
                              ("avg_backward_comm_time", b"ddp.backward_comm_ns"),
                              ("avg_backward_compute_comm_overlap_time", b"ddp.backward_overlap_ns")):
                if key in data:
                    t.set_meta(meta, str(int(data[key])).encode())
            record_threads()  # torch.set_num_threads may come after DDP's constructor

        def ddp_forward(self, *args, **kwargs):
            forwards = getattr(self, "_collscope_forwards", 0) + 1
            self._collscope_forwards = forwards
            if forwards == 1:
                try:
                    if getattr(self, "_collscope_user_hook", False) is False and getattr(self, "reducer", None) is not None:
                        group = getattr(self, "process_group", None)
                        handle = groups.get(id(group if group is not None else dist.group.WORLD), (0,))[0]
                        # Opt-in (COLLSCOPE_DDP_HOOK=1): it replaces DDP's own hook in the job, and the preload records
                        # the buckets from Debian's gloo without one (its cost is within noise: 1.000 x the job's rate,
                        # docs/performance.md). Its exit hang
                        # (a gloo worker freeing a tensor Python had seen while the main thread joined it) is gone:
                        # release_live.
                        if handle and os.environ.get("COLLSCOPE_DDP_HOOK", "0") == "1":
                            register_hook(self, group, allreduce_hook)
                except Exception as e:
                    fail(e)
            elif (forwards <= 12 or forwards % 100 == 2) and not state["failed"]:
                # After each iteration DDP sampled (its first 10, every 100th): ~10 us (4.5 us the log, the rest
                # ctypes), not every step.
                try:
                    record_reducer(self)
                except Exception as e:
                    fail(e)
            return forward(self, *args, **kwargs)

        def user_hook(self, state_, hook):
            self._collscope_user_hook = True  # theirs stays theirs; its allreduces go through all_reduce anyway
            return register_hook(self, state_, hook)

        register_builtin = getattr(DDP, "_register_builtin_comm_hook", None)

        def user_builtin_hook(self, comm_hook_type):
            self._collscope_user_hook = True  # a C++ hook: its allreduces are not seen (said in no row)
            return register_builtin(self, comm_hook_type)

        functools.update_wrapper(ddp_forward, forward)
        functools.update_wrapper(init_ddp, ddp_init)
        DDP.__init__ = init_ddp
        functools.update_wrapper(user_hook, register_hook)
        DDP.forward = ddp_forward
        DDP.register_comm_hook = user_hook
        if register_builtin is not None:
            functools.update_wrapper(user_builtin_hook, register_builtin)
            DDP._register_builtin_comm_hook = user_builtin_hook

    class TorchFinder:
        """Finds nothing itself: when `torch` is imported it lets the other finders find it, then wraps its
        loader so that the annotation is installed once torch has been executed."""

        def find_spec(self, name, path=None, target=None):
            if name != "torch":
                return None
            try:
                sys.meta_path.remove(self)
                import importlib.util
                spec = importlib.util.find_spec(name)
                loader = getattr(spec, "loader", None)
                if loader is None or not hasattr(loader, "exec_module"):
                    return None
                real_exec = loader.exec_module

                def exec_module(module):
                    real_exec(module)
                    try:
                        wrap_torch(module)
                    except Exception as e:
                        fail(e)

                loader.exec_module = exec_module
                return spec
            except Exception as e:
                fail(e)
                return None

    if "torch" in sys.modules:
        wrap_torch(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, TorchFinder())


def _collscope_chain():
    """Runs the sitecustomize this one hides (the next one on sys.path), as Python would have."""
    import importlib.machinery
    import importlib.util
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


try:
    _collscope_annotate()
except Exception as _e:
    try:
        sys.stderr.write("collscope: Python annotation off: %s: %s\n" % (type(_e).__name__, _e))
    except Exception:
        pass

try:
    _collscope_chain()
except Exception as _e:  # Python reports a failing sitecustomize the same way and carries on
    sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n" % (type(_e).__name__, _e))
