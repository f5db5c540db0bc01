"""Library imports run with the line tracer off.

The tracer (linetrace.py) is a Python function that CPython calls at every Python call, library code's
too: one dict lookup each, but importing a library runs millions of calls (`from transformers import ...`
under a setup function: 3.3 s of CPU without the tracer, 5.2 s with it, torch 2.13, Python 3.11). A
library module's body never is a user line, and what it allocates is charged to the user line that
imported it whether the tracer sees its frames or not (they are not the user's). So while the import
system executes a library module (`exec_module` of the file loaders), the tracer is switched off; a user
module imported from inside (a library importing the user's plugin) switches it back on for its own body.

What is given up: user code that a library module's body *calls back* (not imports) while it is being
imported runs untraced: its allocations are charged to the user line of the import instead of its own.
Only where switching the tracer is cheap (Python < 3.12, linetrace.SWITCH_TRACE), on the thread that runs
the tracker's tracer, and never when the user's own tracer (a debugger) is installed.
"""
from __future__ import annotations

import sys
import threading

from .linetrace import SWITCH_TRACE, settrace

_gettrace = sys.gettrace
_settrace = settrace  # linetrace.settrace: restores the C tracer as such


def _loader_base():
    """The class whose exec_module runs a module file's code (SourceFileLoader, SourcelessFileLoader)."""
    try:
        from importlib import _bootstrap_external

        base = _bootstrap_external._LoaderBasics  # pyright: ignore[reportAttributeAccessIssue] (private)
        base.exec_module  # noqa: B018 - the probe: a Python without it keeps every import traced
        return base
    except (ImportError, AttributeError):
        return None


class UntracedImports:
    """Installed around the user's code (cli.run_target); `uninstall` restores the import system."""

    def __init__(self, tracker, is_user):
        self.tracker = tracker
        self.is_user = is_user
        self._base = None
        self._original = None
        self._paused = threading.local()  # .depth: library modules being executed untraced on this thread

    def install(self):
        base = _loader_base()
        if not SWITCH_TRACE or base is None:
            return
        original = base.exec_module
        tracker = self.tracker
        trace_call = tracker.trace_call
        is_user = self.is_user
        paused = self._paused

        def exec_module(loader, module):
            trace = _gettrace()
            depth = getattr(paused, "depth", 0)
            if trace is trace_call:
                if tracker.disabled or is_user(_filename(loader, module)):
                    return original(loader, module)
                paused.depth = depth + 1
                _settrace(None)
                try:
                    return original(loader, module)
                finally:
                    paused.depth = depth
                    # Back on only if nothing else changed it meanwhile (the tracker failing switches it off).
                    if _gettrace() is None and not tracker.disabled:
                        _settrace(trace_call)
            if trace is None and depth and not tracker.disabled and is_user(_filename(loader, module)):
                # The user's module imported by a library module being executed untraced: traced as always.
                paused.depth = 0
                _settrace(trace_call)
                try:
                    return original(loader, module)
                finally:
                    paused.depth = depth
                    if _gettrace() is trace_call:
                        _settrace(None)
            return original(loader, module)

        self._base, self._original = base, original
        base.exec_module = exec_module

    def uninstall(self):
        if self._base is not None:
            self._base.exec_module = self._original
            self._base = self._original = None

    def __enter__(self):
        self.install()
        return self

    def __exit__(self, *exc):
        self.uninstall()
        return False


def _filename(loader, module):
    path = getattr(loader, "path", None)
    if isinstance(path, str):
        return path
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None)
    return origin if isinstance(origin, str) else ""
