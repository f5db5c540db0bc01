"""Tensors made on other threads. The dispatch mode and the line tracer act on the main thread only (torch's
mode stack and sys.settrace are per thread), so what a thread started by the script allocates is not in the
figures. This counts it, so the report says so instead of showing those bytes as nothing."""
import sys
import threading

from torch import Tensor as _Tensor

# Imported only after cli.py checked that torch has a usable TorchDispatchMode.
from torch.utils._python_dispatch import TorchDispatchMode


class OtherThreads:
    def __init__(self, tracker):
        self.tracker = tracker
        self.tensors = 0
        self.bytes = 0
        self.names = set()
        self._bootstrap = None

    def install(self):
        # Every thread started through `threading` from now on counts its ops under a _Counter mode that is
        # entered when the thread starts and exited when it ends: a mode left pushed on a finished thread is
        # torn down by torch's thread-local destructors without the GIL, which aborted the process
        # ("terminate called without an active exception") on torch 1.13. Thread._bootstrap_inner runs
        # for Thread subclasses that override run() too; without it (another Python) a trace hook at the
        # thread's first call enters the mode and leaves it on.
        bootstrap = getattr(threading.Thread, "_bootstrap_inner", None)
        if bootstrap is None:
            threading.settrace(self._thread_started)
            return
        counter = self

        def counted_bootstrap(thread):
            mode = _Counter(counter)
            try:
                mode.__enter__()
            except Exception:  # noqa: BLE001 - counting must never break the user's thread
                return bootstrap(thread)
            try:
                return bootstrap(thread)
            finally:
                mode.__exit__(None, None, None)

        self._bootstrap = bootstrap
        threading.Thread._bootstrap_inner = counted_bootstrap  # type: ignore[attr-defined]

    def uninstall(self):
        bootstrap = getattr(self, "_bootstrap", None)
        if bootstrap is not None:
            threading.Thread._bootstrap_inner = bootstrap  # type: ignore[attr-defined]
            self._bootstrap = None
        else:
            threading.settrace(None)

    def _thread_started(self, frame, event, arg):
        sys.settrace(None)
        try:
            _Counter(self).__enter__()  # left on for the thread's life: its ops are what is counted
        except Exception:  # noqa: BLE001 - counting must never break the user's thread
            pass
        return None

    def seen(self, out):
        if not self.tracker.in_step:
            return
        counted = 0
        for value in out if isinstance(out, (list, tuple)) else (out,):
            if isinstance(value, _Tensor) and value._base is None:  # views allocate nothing
                self.tensors += 1
                counted += value.numel() * value.element_size()
        if counted:
            self.bytes += counted
            self.names.add(threading.current_thread().name)

    def notes(self):
        if not self.tensors:
            return []
        return ["%d tensor(s), %d bytes, were created on other threads (%s) during the profiled steps: memhint "
                "measures the main thread, so they are not in the figures" % (
                    self.tensors, self.bytes, ", ".join(sorted(self.names)))]


class _Counter(TorchDispatchMode):
    def __init__(self, counter):
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        try:
            self.counter.seen(out)
        except Exception:  # noqa: BLE001
            pass
        return out
