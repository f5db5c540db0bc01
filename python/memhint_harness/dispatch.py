"""The TorchDispatchMode that feeds every aten op's outputs to the tracker, and on torch 1.13 a C-level
trampoline that spares the op the Python mode stack."""
from __future__ import annotations

import sys

import torch

from .linetrace import SWITCH_TRACE as _SWITCH_TRACE

try:
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError:  # pragma: no cover - torch < 1.12
    TorchDispatchMode = None

_gettrace = sys.gettrace
_settrace = sys.settrace


class DispatchMode(TorchDispatchMode if TorchDispatchMode is not None else object):  # pyright: ignore[reportGeneralTypeIssues]
    """Feeds every aten op's outputs to the tracker."""

    def __init__(self, tracker):
        super().__init__()
        self.tracker = tracker
        self._trampoline = None

    _detach = torch.ops.aten.detach.default  # pyright: ignore[reportAttributeAccessIssue] (torch 1.13 stubs)

    def __enter__(self):
        entered = super().__enter__()
        self._trampoline = _SoleModeTrampoline.install(self)
        return entered

    def __exit__(self, exc_type, exc_val, exc_tb):
        self._trampoline = None
        return super().__exit__(exc_type, exc_val, exc_tb)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        tracker = self.tracker
        if func is self._detach:
            out = func(*args, **(kwargs or {}))
            if not isinstance(out, torch.Tensor) and args and isinstance(args[0], torch.Tensor):
                # torch 1.13: detaching a wrapped Python number (the saved `2` of `x * 2`, unpacked from
                # saved_tensors_hooks) comes back from the op as a plain number; the tensor is equivalent.
                return args[0]
            return out
        if tracker.disabled:
            return func(*args, **(kwargs or {}))
        try:
            # Traced like any other code: a tensor subclass's __torch_dispatch__ in a user file runs here.
            out = func(*args, **(kwargs or {}))
        except BaseException as error:
            if not tracker.disabled:
                tracker.guard(tracker.on_op_error, func, error)
            raise
        # The bookkeeping runs with the tracer off: its own calls would each be a trace event.
        trace = _gettrace() if _SWITCH_TRACE else None
        if trace is not None:
            _settrace(None)
        try:
            tracker.on_outputs(out)
        except Exception:  # tracker.guard, inlined: this runs for every op
            tracker.fail()
        if trace is not None and not tracker.disabled:
            _settrace(trace)
        return out


try:
    from torch.utils import _python_dispatch as _pd
except ImportError:  # pragma: no cover - torch < 1.12
    _pd = None
_StackMode = getattr(_pd, "_TorchDispatchStackMode", None)
_set_dispatch_mode = getattr(torch._C, "_set_torch_dispatch_mode", None)
_stack_len = getattr(torch._C, "_len_torch_dispatch_stack", None)
_stack_at = getattr(torch._C, "_get_dispatch_stack_at", None)


class _SoleModeTrampoline:
    """torch 1.13 runs the mode stack in Python: per op, _TorchDispatchStackMode pops the mode through a
    context manager, calls it and pushes it back with a new stack-mode object (a dozen Python calls, each a
    trace event too). While memhint's mode is the only one on the stack, this C-level mode calls it
    directly, with no mode active inside as before; with other modes stacked on it, it does what
    _TorchDispatchStackMode does. torch >= 2.0 keeps the stack in C++ and needs none of this."""

    def __init__(self, mode):
        self.mode = mode

    @classmethod
    def install(cls, mode):
        if _StackMode is None or None in (_set_dispatch_mode, _stack_len, _stack_at):
            return None
        if not hasattr(_StackMode, "__torch_dispatch__"):
            return None
        if _stack_len() != 1 or _stack_at(0) is not mode:
            return None
        trampoline = cls(mode)
        _set_dispatch_mode(trampoline)
        return trampoline

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        mode = self.mode
        if _stack_len() == 1 and _stack_at(0) is mode:
            _set_dispatch_mode(None)
            try:
                return mode.__torch_dispatch__(func, types, args, kwargs)
            finally:
                _set_dispatch_mode(self)
        # Other modes pushed on top: the stock behaviour, which re-installs `self` as the C-level mode.
        return _StackMode.__torch_dispatch__(self, func, types, args, kwargs)
