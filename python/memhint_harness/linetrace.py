"""Line boundaries from sys.settrace on the user's files only: the traced stack of user frames, per-line
call counts and the per-line peak (self: the line itself; inclusive: while anything it calls runs).

A frame that returns is popped at the tracker's next event, after the frees its locals cause have been
charged to its last line."""
from __future__ import annotations

import sys
import threading

from . import ctrace
from .records import Frame

_get_ident = threading.get_ident

# sys.settrace is cheap to switch off and on before Python 3.12; from 3.12 it re-instruments code objects.
SWITCH_TRACE = sys.version_info < (3, 12)

# The global trace function in C when it builds here (ctrace.py), else the Python one below. `settrace` is
# what the harness restores a paused tracer with: sys.settrace would wrap the C tracer (sys.gettrace()'s
# value) in the Python trampoline, correct but as slow as the Python tracer.
_CTRACE, CTRACE_UNAVAILABLE = ctrace.load()
TRACER_KIND = "c" if _CTRACE is not None else "python"
settrace = _CTRACE.settrace if _CTRACE is not None else sys.settrace


def untraced(fn, tracer):
    """`fn` run with the C tracer off (see _ctrace.c's Untraced), for harness hooks that torch calls with
    the tracer on and that call no user code; `fn` itself with the Python tracer, or when `tracer` is not a
    C tracer. Each bytecode run traced costs the interpreter's tracing machinery even when the trace
    function ignores the frame."""
    if _CTRACE is None or not isinstance(tracer, _CTRACE.CTracer):
        return fn
    return _CTRACE.Untraced(fn, tracer, False)


def untraced_caller():
    """(call_traced, Untraced, CTracer) of the C tracer's module, or Nones with the Python tracer: what lets
    the dispatch mode run untraced around a traced op (dispatch.py, _ctrace.c)."""
    if _CTRACE is None:
        return None, None, None
    return _CTRACE.call_traced, _CTRACE.Untraced, _CTRACE.CTracer


def dispatch_core():
    """_cdispatch.c's DispatchCore (the dispatch mode's per-op bookkeeping in C), or None with the Python
    tracer: it runs inside the C tracer's Untraced calls."""
    return getattr(_CTRACE, "DispatchCore", None) if _CTRACE is not None else None


class StopProfiling(BaseException):
    """Raised into the user's code to end the run once enough steps were measured."""


class LineTracer:
    def __init__(self, tracker, user_files):
        self.tracker = tracker
        self.user_files = user_files
        self._code_cache = {}  # code object -> is it the user's
        self.kind = TRACER_KIND
        if _CTRACE is not None:
            # The same decisions as _make_trace_call's function, made in C (see _ctrace.c).
            self.trace_call = _CTRACE.CTracer(tracker, self._trace_call_guarded, user_files.is_user,
                                              self.library_call)
        else:
            self.trace_call = self._make_trace_call()

    def _make_trace_call(self):
        """The global trace function in Python. It runs at every Python call (torch's and the harness's own
        too), so the common case, a non-user code object already classified, is one dict lookup."""
        cache_get = self._code_cache.get
        tracker = self.tracker
        guarded = self._trace_call_guarded

        def trace_call(frame, event, arg):
            if tracker.returning or tracker.disabled:
                return guarded(frame)
            if cache_get(frame.f_code) is False:
                return None
            return guarded(frame)

        return trace_call

    def _trace_call_guarded(self, frame):
        tracker = self.tracker
        if tracker.disabled:
            return None
        try:
            return self._trace_call(frame)
        except Exception:  # a harness bug must not become the user's exception
            tracker.fail()
            return None

    def _trace_call(self, frame):
        tracker = self.tracker
        if tracker.returning:
            tracker.poll()
        code = frame.f_code
        user = self._code_cache.get(code)
        if user is None:
            user = self._code_cache[code] = self.user_files.is_user(code.co_filename)
        if not user or _get_ident() != tracker.main_thread:
            return None
        tracker.stack.append(Frame(frame, code.co_filename, code.co_name, tracker.live_bytes))
        tracker._stack_accs = None
        return self.trace_local

    def library_call(self):
        """What the call event of a library frame does (_trace_call), for library code that the C tracer
        runs untraced (`untraced` below): a user frame whose return is pending is popped."""
        tracker = self.tracker
        if tracker.disabled or not tracker.returning:
            return
        try:
            tracker.poll()
        except Exception:  # a harness bug must not become the user's exception
            tracker.fail()

    def trace_local(self, frame, event, arg):
        tracker = self.tracker
        if tracker.disabled:
            return None
        try:
            return self._trace_local(frame, event)
        except StopProfiling:
            raise
        except Exception:
            tracker.fail()
            return None

    def _trace_local(self, frame, event):
        tracker = self.tracker
        if event == "line":
            tracker.poll()
            stack = tracker.stack
            if not stack:
                return self.trace_local
            top = stack[-1]
            if top.frame != id(frame):
                return self.trace_local
            if top.line:
                self.close_line(top)
            if tracker.line_hook is not None:
                # May stop profiling (deadlines): before this line is counted, since it will not run.
                tracker.line_hook(frame)
            top.line = frame.f_lineno
            top.acc = None
            tracker._stack_accs = None
            live = tracker.live_bytes
            top.start = top.self_max = top.incl_max = live
            if tracker.in_step:
                key = (top.file, top.line)
                acc = top.acc = tracker._acc(key)
                acc.calls += 1
                tracker.funcs[key] = top.func
                if tracker.cuda is not None:
                    tracker.cuda.line_start(top)
        elif event == "return":
            tracker.poll()
            stack = tracker.stack
            if stack and stack[-1].frame == id(frame):
                # Popped at the next event, after the frees its locals cause are charged to this line.
                tracker.returning = True
        return self.trace_local

    def pop_returned(self):
        tracker = self.tracker
        tracker.returning = False
        stack = tracker.stack
        if not stack:
            return
        top = stack.pop()
        tracker._stack_accs = None
        if top.line:
            self.close_line(top)
        if stack and top.incl_max > stack[-1].incl_max:
            stack[-1].incl_max = top.incl_max

    def close_line(self, top):
        tracker = self.tracker
        if not tracker.in_step:
            return
        acc = top.acc
        if acc is None:
            acc = top.acc = tracker._acc((top.file, top.line))
        rise = top.self_max - top.start
        if rise > acc.self_c[2]:
            acc.self_c[2] = rise
        rise = top.incl_max - top.start
        if rise > acc.incl_c[2]:
            acc.incl_c[2] = rise
        if tracker.cuda is not None:
            tracker.cuda.line_end(top, acc)
