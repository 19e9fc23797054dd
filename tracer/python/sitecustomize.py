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
                        ("set_meta", ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p))]

        try:
            entry = ctypes.CDLL(None).collscope_annotation_v1  # dlopen(NULL): the preload if it is loaded
        except (AttributeError, OSError):
            return None
        entry.restype = ctypes.POINTER(Table)
        entry.argtypes = []
        t = entry()
        if not t or t.contents.version != 1 or t.contents.size < ctypes.sizeof(Table):
            warn("the preload's annotation table is not version 1")
            return None
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
