"""The TorchDispatchMode that feeds every aten op's outputs to the tracker, and on torch 1.13 a C-level
trampoline that spares the op the Python mode stack.

With the C tracer, the mode's per-op bookkeeping runs in C as well (_cdispatch.c's DispatchCore): the
common cases (views, in-place ops, new storages outside backward()) without a Python frame; everything else
through DispatchMode's Python code below, which stays the reference and the fallback (MEMHINT_CTRACE=0)."""
from __future__ import annotations

import sys
import threading
import time

import torch

from .linetrace import SWITCH_TRACE as _SWITCH_TRACE
from .linetrace import dispatch_core as _dispatch_core
from .linetrace import settrace
from .linetrace import untraced_caller as _untraced_caller
from .records import MODULE_KEY, NODE_KEY, UNTRACKED, StorageRec
from .storage import PLAIN_TENSOR_TYPES

try:
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError:  # pragma: no cover - torch < 1.12
    TorchDispatchMode = None

_gettrace = sys.gettrace
_get_ident = threading.get_ident
_is_grad_enabled = torch.is_grad_enabled
_settrace = settrace  # linetrace.settrace: restores the C tracer as such


def _is_pending(pending, tensor) -> bool:
    """Whether `tensor` is the output of an earlier op still waiting for its graph node's tag."""
    for entry in pending:
        if entry[0] is tensor:
            return True
    return False
_call_traced, _Untraced, _CTracer = _untraced_caller()
_DispatchCore = _dispatch_core()
_Tensor = torch.Tensor


def _dynamo_skip_strategy():
    """torch >= 2.x wraps every TorchDispatchMode's __torch_dispatch__ in `torch._dynamo.disable` (so that a
    torch.compile'd region never traces into a mode): per op, half a dozen Python calls (eval-frame
    callback swaps, a stance lookup, an export check), each also a call event for the line tracer. Marking
    the method's code object SKIP, for itself and for every frame it calls, asks Dynamo's C frame evaluator
    for the same thing at no per-call cost. Returns the marker, or None where the torch has no such API
    (1.13: no Dynamo; other versions keep torch's own wrapper)."""
    try:
        from torch._C._dynamo.eval_frame import (  # pyright: ignore[reportMissingImports]
            _FrameAction,
            _FrameExecStrategy,
            set_code_exec_strategy,
        )

        strategy = _FrameExecStrategy(_FrameAction.SKIP, _FrameAction.SKIP)
    except Exception:  # noqa: BLE001 - an older or newer torch without this API: torch's own wrapper stays
        return None
    return lambda code: set_code_exec_strategy(code, strategy)


_mark_dynamo_skip = _dynamo_skip_strategy()


class FastDispatchMode(TorchDispatchMode if TorchDispatchMode is not None else object):  # pyright: ignore[reportGeneralTypeIssues]
    """A TorchDispatchMode whose __torch_dispatch__ runs without torch's per-call Dynamo wrapper: its code
    object (and what it calls) is marked SKIP once instead (see _dynamo_skip_strategy). Every mode memhint
    keeps on the stack for each op derives from it: each wrapped mode cost a dozen Python calls per op."""

    @classmethod
    def _should_skip_dynamo(cls):
        # Read by TorchDispatchMode.__init_subclass__ (torch 2.x): False when the code-level skip below
        # replaces torch's per-call disable wrapper.
        return _mark_dynamo_skip is None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        handler = cls.__dict__.get("__torch_dispatch__")
        if _mark_dynamo_skip is None or handler is None or isinstance(handler, classmethod):
            return
        try:
            _mark_dynamo_skip(handler.__code__)
        except Exception:  # noqa: BLE001 - the API is there but refuses: torch's own wrapper, as for any mode
            cls.__torch_dispatch__ = torch._disable_dynamo(  # pyright: ignore[reportAttributeAccessIssue]
                handler, recursive=True)


class DispatchMode(FastDispatchMode):
    """Feeds every aten op's outputs to the tracker."""

    # The tracker methods whose work _cdispatch.c does itself: it runs only while they are Tracker's own
    # (predict/run.py wraps _grow and _on_free on the instance; a subclass may override any of them).
    _C_REPRODUCES = ("on_outputs", "_see", "poll", "on_alloc", "_grow", "_on_free", "_charge_accs",
                     "current_site", "phase")

    def __init__(self, tracker):
        super().__init__()
        self.tracker = tracker
        self._trampoline = None
        self.core = None  # the DispatchCore while the mode is entered with the C tracer
        # What the 1.13 trampoline calls: (func, types, args, kwargs, tracer) -> the op's result.
        self._body = self._dispatch_body

    _detach = torch.ops.aten.detach.default  # pyright: ignore[reportAttributeAccessIssue] (torch 1.13 stubs)

    def __enter__(self):
        entered = super().__enter__()
        tracer = self.tracker.trace_call
        if _Untraced is not None and _CTracer is not None and isinstance(tracer, _CTracer):
            # The C tracer: torch calls this instance attribute, which runs __torch_dispatch__ below (or the
            # C bookkeeping) with the tracer off and passes it the tracer to switch back on around the op
            # (see _ctrace.c).
            self.core = self._make_core()
            self._body = self.core if self.core is not None else self._dispatch_body
            self.__dict__["__torch_dispatch__"] = _Untraced(self._body, tracer)
        self._trampoline = _SoleModeTrampoline.install(self)
        return entered

    def __exit__(self, exc_type, exc_val, exc_tb):
        self._trampoline = None
        self.core = None
        self._body = self._dispatch_body
        self.__dict__.pop("__torch_dispatch__", None)
        return super().__exit__(exc_type, exc_val, exc_tb)

    def _make_core(self):
        """The C bookkeeping for this tracker, or None where it would not do what the Python code does."""
        from .tracker import Tracker  # tracker.py imports this module

        tracker = self.tracker
        if _DispatchCore is None or type(tracker) is not Tracker:
            return None
        if any(name in vars(tracker) for name in self._C_REPRODUCES):
            return None
        consts = {"Tensor": torch.Tensor, "Parameter": torch.nn.Parameter, "StorageRec": StorageRec,
                  "UNTRACKED": UNTRACKED, "NODE_KEY": NODE_KEY, "MODULE_KEY": MODULE_KEY,
                  "perf_counter": time.perf_counter, "is_grad_enabled": torch.is_grad_enabled,
                  # In backward, aten.add.Tensor goes to the Python body (the engine's gradient sums, gradsum.py).
                  "sum_op": tracker.engine_sums.op if tracker.engine_sums is not None else None}
        return _DispatchCore(tracker, self._dispatch_body, self._after_op, self._op_failed, tracker.fail,
                             self._detach, consts)

    # Called by the C bookkeeping (with the tracer off): the parts of __torch_dispatch__ below that it
    # leaves to Python.

    def _after_op(self, func, op, out):
        """The outputs the C code does not handle: on_outputs, as __torch_dispatch__ does after the op."""
        tracker = self.tracker
        try:
            tracker.on_outputs(out)
            if op in tracker.watched_ops:
                tracker.op_hook(func)
        except Exception:  # tracker.guard, as in __torch_dispatch__
            tracker.fail()

    def _op_failed(self, func, error):
        tracker = self.tracker
        if not tracker.disabled:
            tracker.guard(tracker.on_op_error, func, error)

    @property
    def _dispatch_body(self):
        """The class's __torch_dispatch__, bound (the instance attribute set by __enter__ shadows it)."""
        return type(self).__torch_dispatch__.__get__(self)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None, tracer=None):
        # `tracer`: passed by the C wrapper of __enter__, which runs this with the line tracer off; the op
        # itself runs with it on again (call_traced), since it may run a user file's code. None: the
        # Python tracer, this runs traced and calls the op directly.
        # func._op is the C function OpOverload.__call__ forwards to: calling it directly saves a Python
        # frame (and its trace event) per op. Same op, same arguments, same redispatch.
        op = func._op
        if func is self._detach:
            out = op(*args, **(kwargs or {})) if tracer is None else _call_traced(tracer, op, args, kwargs)
            if not isinstance(out, _Tensor) and args and isinstance(args[0], _Tensor):
                # torch 1.13: detaching a wrapped Python number (the saved `2` of `x * 2`, unpacked from
                # saved_tensors_hooks) comes back from the op as a plain number; the tensor is equivalent.
                return args[0]
            return out
        tracker = self.tracker
        if tracker.disabled:
            return op(*args, **(kwargs or {})) if tracer is None else _call_traced(tracer, op, args, kwargs)
        if tracker.pending and args and _is_pending(tracker.pending, args[0]):
            # The earlier ops' outputs get their graph nodes tagged before an op on one of them runs, not
            # at the next allocation: an in-place op (`relu_(bn(h))`, `relu(out + identity)` with
            # ReLU(inplace=True)) replaces its input's grad_fn, and the node it replaces (the batch norm's),
            # read only afterwards, stayed untagged - its backward allocations fell on the backward() line
            # (issue #17's comparison with the allocator's events; test/fixtures/profiler/
            # inplace_rebase.py). An in-place aten op mutates its first argument (`self`), and in-place
            # on a view is an op on the view, itself a pending output: checking the first argument is
            # enough, and costs a few identity tests per op instead of a flush per op.
            trace = _gettrace() if tracer is None and _SWITCH_TRACE else None
            if trace is not None:
                _settrace(None)
            try:
                tracker.autograd.flush_pending()
            except Exception:  # tracker.guard, inlined
                tracker.fail()
            if trace is not None and not tracker.disabled:
                _settrace(trace)
        summed = None
        if tracker.in_backward and tracker.engine_sums is not None and op is tracker.engine_sums.op:
            # The autograd engine's gradient sum, out of place only because a dispatch mode is active: its
            # result takes over the first gradient's record (gradsum.py). Judged before the op runs (use counts).
            try:
                summed = tracker.gradient_sum_source(args, kwargs)
            except Exception:  # noqa: BLE001 - a tensor the checks cannot read: reported as the op runs
                summed = None
        try:
            # Traced like any other code: a tensor subclass's __torch_dispatch__ in a user file runs here.
            out = op(*args, **(kwargs or {})) if tracer is None else _call_traced(tracer, op, args, kwargs)
        except BaseException as error:
            if not tracker.disabled:
                tracker.guard(tracker.on_op_error, func, error)
            raise
        if not isinstance(out, (_Tensor, tuple, list)):
            return out  # sizes, scalars, None: nothing that can hold a storage (on_outputs would do nothing)
        if summed is not None and tracker.guard(tracker.carry_over, summed, out):
            return out
        if type(out) in PLAIN_TENSOR_TYPES and op not in tracker.watched_ops:
            # tracker.on_outputs' path for one plain tensor whose storage is live in the ledger at its
            # recorded size (a view, an in-place op, most ops of an optimizer step), inlined: only C functions
            # are called, so the tracer sees no event and needs no switching off. Anything else (a new or
            # resized storage, an address reused after a free, a storage-less tensor) goes on to on_outputs,
            # which makes the same checks again.
            try:
                if not tracker._on_device(out):
                    return out
                storage = tracker._storage_of(out)
                rec = tracker.live.get(storage._cdata)
                if rec is not None and rec.nbytes == storage.nbytes() and not tracker._expired(rec.handle):
                    if tracker.in_backward or not _is_grad_enabled():
                        return out
                    # tracker.current_site() and ModuleLedger.top(), inlined (in_backward is 0 here).
                    stack = tracker.stack
                    if stack and _get_ident() == tracker.main_thread:
                        top = stack[-1]
                        modules = tracker.modules
                        module = modules.stack[-1] if modules is not None and modules.stack else None
                        tracker.pending.append((out, rec, (top.file, top.line, top.func), module))
                    return out
            except Exception:  # noqa: BLE001 - storage-less tensors and harness bugs alike: on_outputs decides
                pass
        # The bookkeeping runs with the tracer off: its own calls would each be a trace event.
        trace = _gettrace() if _SWITCH_TRACE else None
        if trace is not None:
            _settrace(None)
        try:
            tracker.on_outputs(out)
            if op in tracker.watched_ops:
                tracker.op_hook(func)
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
        tracer = mode.tracker.trace_call
        if _Untraced is not None and _CTracer is not None and isinstance(tracer, _CTracer):
            # As DispatchMode.__enter__ does for the mode: this runs untraced and hands the tracer on.
            trampoline.__dict__["__torch_dispatch__"] = _Untraced(
                _SoleModeTrampoline.__torch_dispatch__.__get__(trampoline), tracer)
        _set_dispatch_mode(trampoline)
        return trampoline

    def __torch_dispatch__(self, func, types, args=(), kwargs=None, tracer=None):
        # `tracer`: as for DispatchMode.__torch_dispatch__ (run untraced by the C tracer's wrapper).
        mode = self.mode
        if _stack_len() == 1 and _stack_at(0) is mode:
            _set_dispatch_mode(None)
            try:
                if tracer is None:
                    return mode.__torch_dispatch__(func, types, args, kwargs)
                return mode._body(func, types, args, kwargs, tracer)
            finally:
                _set_dispatch_mode(self)
        # Other modes pushed on top: the stock behaviour, which re-installs `self` as the C-level mode. It
        # runs the user's modes: traced.
        if tracer is None:
            return _StackMode.__torch_dispatch__(self, func, types, args, kwargs)
        return _call_traced(tracer, _StackMode.__torch_dispatch__, (self, func, types, args, kwargs), None)
