"""Exact tensor-storage accounting per user source line: the coordinator of the measuring parts.

Three sources of events feed one ledger (ledger.py):
- a TorchDispatchMode (dispatch.py) sees every aten op's outputs: a storage never seen before is an
  allocation, a known storage whose size changed was resized (`resize_`, `out=`);
- before each op and at each traced line, the C++ weak references of live storages are polled: an expired
  one was freed. Polling before an op keeps the live level exact at every allocation, hence at every peak;
- sys.settrace on user frames only (linetrace.py) gives line boundaries (per-line peak, call counts, the
  current line).

Each allocation and free is charged to the running line, every line of the traced stack (inclusive
figures), the running module, and during backward() to the forward line and module that created the running
graph node (backward.py). CUDA allocator figures per line: cudalines.py.
"""
from __future__ import annotations

import sys
import threading
import time
from operator import attrgetter
from time import perf_counter
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple

import torch

from . import expiry
from .backward import BackwardAttribution
from .cudalines import CudaLineMeter
from .dispatch import DispatchMode  # noqa: F401 - re-exported: cli and benchmarks import it from here
from .ledger import StorageLedger
from .linetrace import SWITCH_TRACE, LineTracer, StopProfiling, settrace  # noqa: F401 - StopProfiling re-exported
from .records import MODULE_KEY, NODE_KEY, UNTRACKED, Frame, LineAcc, StorageRec  # noqa: F401
from .storage import PLAIN_TENSOR_TYPES, unwrap_subclass

if TYPE_CHECKING:
    from .gradsum import EngineSums
    from .modules import ModuleLedger

_Tensor = torch.Tensor
_is_grad_enabled = torch.is_grad_enabled
_get_ident = threading.get_ident


def _device_flag(device_type):
    """Whether a tensor is on the tracked device, without building a torch.device per tensor."""
    flag = {"cpu": "is_cpu", "cuda": "is_cuda", "meta": "is_meta"}.get(device_type)
    if flag is not None and hasattr(torch.Tensor, flag):
        return attrgetter(flag)
    return lambda tensor: tensor.device.type == device_type


class Tracker:
    def __init__(self, storage_api, user_files, device_type, budget=None, cuda_lines=False, c_expiry=True):
        self.api = storage_api
        self.user_files = user_files
        self.device_type = device_type
        self.t0 = time.perf_counter()
        self.main_thread = threading.get_ident()
        self.ledger = StorageLedger(storage_api.expired_raw, expiry.scanner(storage_api) if c_expiry else None)
        self.live = self.ledger.live  # cdata -> StorageRec, read by the analysis and the report
        self.live_bytes = 0
        self.serial = 0
        self.lines = {}  # (file, line) -> LineAcc
        self.funcs = {}  # (file, line) -> function name
        self.stack = []  # main-thread user Frames
        self.autograd = BackwardAttribution(self)
        # Shared with self.autograd, read on the hot path: forward outputs to tag, hooks-mode backward events.
        self.pending = self.autograd.pending
        self.bw_pending = self.autograd.bw_pending
        self.current_node = self.autograd.current_node
        self.in_step = False  # a profiled (non-warmup) step is running
        self.step_index = None
        self.epoch = -1  # number of step starts so far - 1 (warmup included)
        self.in_backward = 0
        self.backward_site = None
        self.backward_start_live = 0
        self.active = False
        self.events: Optional[List[Tuple[StorageRec, int]]] = None  # per profiled step: (record, +/-nbytes)
        self.timeline = []
        self.step_peak = 0
        self.step_peak_at = 0.0
        self.step_peak_index = 0
        self.step_peak_site = None
        self.step_peak_phase = "other"
        self.budget = budget
        self.budget_hit = None
        self.oom = None
        self.cuda = CudaLineMeter(self.now_ms) if cuda_lines else None
        self._stack_accs = None  # distinct LineAccs of the stack's lines, bottom to top (None: recompute)
        self.disabled = False
        self.internal_error = None
        self.returning = False
        self.line_hook: Optional[Callable[[FrameType], None]] = None
        self.modules: Optional[ModuleLedger] = None  # when torch has global module hooks
        self.backward_hook: Optional[Callable[[], Any]] = None  # called at the end of each profiled backward()
        self.node_hook: Optional[Callable[[], Any]] = None  # nograd.py: called per new forward graph node tagged
        # kernels.py: the C functions (OpOverload._op) of the ops whose OpOverload the dispatch mode passes to op_hook
        self.watched_ops: frozenset = frozenset()
        self.op_hook: Optional[Callable[[Any], Any]] = None
        # gradsum.EngineSums where a dispatch mode makes the engine's in-place gradient sums out of place
        # (torch >= 2): set by cli.instrument from gradsum.probe(); None: every sum is reported as it runs.
        self.engine_sums: Optional[EngineSums] = None
        # Hot-path shortcuts: C functions and attribute names looked up once.
        self._expired = storage_api.expired_raw
        self._storage_of = storage_api.storage_of
        self._free_handle = storage_api.free_raw
        self._on_device = _device_flag(device_type)
        self.tracer = LineTracer(self, user_files)
        self.trace_call = self.tracer.trace_call  # what sys.settrace gets

    # ----------------------------------------------------------------- robustness

    def guard(self, fn, *args):
        """Runs bookkeeping; on a harness bug, stops measuring (the report says so) instead of failing the user."""
        try:
            return fn(*args)
        except Exception:
            self.fail()
            return None

    def fail(self, error: Optional[BaseException] = None):
        """Stops measuring; `error`: the exception, when not the one being handled (the C bookkeeping's)."""
        import traceback

        if self.internal_error is None:
            self.internal_error = (traceback.format_exc() if error is None else
                                   "".join(traceback.format_exception(type(error), error, error.__traceback__)))
        self.disabled = True
        sys.settrace(None)

    def pause_tracing(self):
        """Switches the tracer off for harness work between user code; returns what resume_tracing needs."""
        if not SWITCH_TRACE:
            return None
        trace = sys.gettrace()
        if trace is not None:
            sys.settrace(None)
        return trace

    def resume_tracing(self, trace):
        if trace is not None and not self.disabled:
            settrace(trace)

    def disable_in_child(self):
        """A forked child (DataLoader worker) inherits the mode and the tracer: measure nothing there."""
        self.disabled = True
        sys.settrace(None)

    # ----------------------------------------------------------------- cuda figures (read by the report)

    @property
    def cuda_series(self):
        return self.cuda.series if self.cuda is not None else None

    @property
    def cuda_max_allocated(self):
        return self.cuda.max_allocated if self.cuda is not None else 0

    @property
    def cuda_max_reserved(self):
        return self.cuda.max_reserved if self.cuda is not None else 0

    def now_ms(self):
        return (perf_counter() - self.t0) * 1000.0

    def _acc(self, key):
        acc = self.lines.get(key)
        if acc is None:
            acc = self.lines[key] = LineAcc()
        return acc

    def current_site(self):
        # During backward() the main thread waits in the backward() line; autograd threads report to it.
        if self.stack and (self.in_backward or _get_ident() == self.main_thread):
            top = self.stack[-1]
            return (top.file, top.line, top.func)
        return None

    # ----------------------------------------------------------------- ledger

    def poll(self, full=True):
        """Detects freed storages (expired weak references) and charges them to the running line.

        Storages are split in two generations. Before each allocation only the young one is checked:
        everything but parameters and optimizer state, which practically never die inside a step. The full
        check runs at every traced line, around backward() and at step boundaries."""
        if self.pending:
            self.autograd.flush_pending()
        dead = self.ledger.expired(full)
        if dead:
            free = self._free_handle
            forget = self.ledger.forget
            on_free = self._on_free
            for rec in dead:
                forget(rec)
                if rec.handle is not None:
                    free(rec.handle)
                on_free(rec, rec.nbytes)
        if self.returning and _get_ident() == self.main_thread:
            self.tracer.pop_returned()

    def set_generation(self, rec, old):
        """Moves a live storage between the generations (called when kinds are stamped)."""
        self.ledger.set_generation(rec, old)

    def _on_free(self, rec, nbytes):
        self.live_bytes -= nbytes
        if self.events is not None:
            self.events.append((rec, -nbytes))
            self.timeline.append(((perf_counter() - self.t0) * 1000.0, self.live_bytes))
        if self.in_backward and not self.current_node:
            self.bw_pending.setdefault(_get_ident(), []).append((rec, -nbytes, self.in_step))
            return
        if not self.in_step:
            return
        if self.in_backward:
            site = self.autograd.running_site()
            if site is not None:
                self._acc(site[:2]).bw_c[1] += nbytes
                self._charge_stack(nbytes, freed=True, self_too=False)
                return
            if not self.stack:
                return
        elif not self.stack or _get_ident() != self.main_thread:
            return  # _charge_stack's check, made once here
        self._charge_accs(nbytes, True, True)

    def _charge_stack(self, nbytes, freed, self_too):
        # Another thread (CUDA's autograd device threads) charges the main stack only during backward(),
        # while the main thread waits in the backward() line.
        if not self.stack or (not self.in_backward and _get_ident() != self.main_thread):
            return
        self._charge_accs(nbytes, freed, self_too)

    def _charge_accs(self, nbytes, freed, self_too):
        """_charge_stack once its check passed (the stack is not empty and belongs to this thread)."""
        accs = self._stack_accs
        if accs is None:
            accs = self._collect_stack_accs()
        top, distinct = accs
        if freed:
            if self_too:
                top.self_c[1] += nbytes
            for acc in distinct:
                acc.incl_c[1] += nbytes
        else:
            if self_too:
                c = top.self_c
                c[0] += nbytes
                c[3] += 1
            for acc in distinct:
                c = acc.incl_c
                c[0] += nbytes
                c[3] += 1

    def _collect_stack_accs(self):
        """The top frame's LineAcc and the distinct LineAccs of the stack's lines (a recursive line once).
        Cached until a frame is pushed or popped or a frame moves to another line."""
        distinct = []
        seen = set()
        for fr in self.stack:
            acc = fr.acc
            if acc is None:
                acc = fr.acc = self._acc((fr.file, fr.line))
            if id(acc) not in seen:
                seen.add(id(acc))
                distinct.append(acc)
        accs = self._stack_accs = (self.stack[-1].acc, distinct)
        return accs

    def on_alloc(self, cdata, nbytes, storage, tensor):
        """A storage seen for the first time: its record, charged to the running line. Returns the record."""
        self.serial += 1
        stack = self.stack
        in_backward = self.in_backward
        if stack and (in_backward or _get_ident() == self.main_thread):
            top = stack[-1]
            site = (top.file, top.line, top.func)
        else:
            site = None
        bw_site = self.autograd.running_site() if in_backward else None
        rec = StorageRec(self.serial, cdata, storage._weak_ref(), nbytes,
                         bw_site or site or UNTRACKED, self.epoch, self.step_index, None)
        modules = self.modules
        if modules is not None:
            rec.module = self.autograd.running_module() if in_backward else modules.top()
        self.ledger.remember(rec)
        self._grow(rec, nbytes, bw_site)
        return rec

    def _grow(self, rec, nbytes, bw_site):
        live = self.live_bytes = self.live_bytes + nbytes
        now = (perf_counter() - self.t0) * 1000.0
        if rec.t is None:
            rec.t = now
        if self.events is not None:
            self.events.append((rec, nbytes))
            self.timeline.append((now, live))
        if self.budget is not None and self.budget_hit is None and live > self.budget:
            self.budget_hit = (rec.site, live, self.step_index)
        in_backward = self.in_backward
        hooks_backward = in_backward and bw_site is None and self.current_node is None
        if hooks_backward:
            # Claimed by the next node post-hook, in warmup too: the storage's line must be the forward one.
            self.bw_pending.setdefault(_get_ident(), []).append((rec, nbytes, self.in_step))
        if not self.in_step:
            return
        stack = self.stack
        stack_ok = stack and (in_backward or _get_ident() == self.main_thread)
        if stack_ok:
            top = stack[-1]
            if live > top.incl_max:
                top.incl_max = live
            if live > top.self_max and not in_backward:
                top.self_max = live
        if live > self.step_peak:
            self.step_peak = live
            self.step_peak_at = now
            self.step_peak_index = len(self.events or ())
            self.step_peak_site = rec.site
            self.step_peak_phase = self.phase()
        if hooks_backward:
            return
        if in_backward and bw_site is not None:
            self._charge_backward(bw_site, nbytes)
            if stack_ok:
                self._charge_accs(nbytes, False, False)
            if rec.module is not None:
                self.modules.charge_backward(rec.module, nbytes)
            return
        if not in_backward and rec.module is not None:
            self.modules.charge_forward(rec.module, nbytes)
        if stack_ok:
            self._charge_accs(nbytes, False, True)

    def _charge_backward(self, site, nbytes):
        c = self._acc(site[:2]).bw_c
        c[0] += nbytes
        c[3] += 1
        rise = self.live_bytes - self.backward_start_live
        if rise > c[2]:
            c[2] = rise

    def phase(self):
        if self.in_backward:
            return "backward"
        return "forward" if torch.is_grad_enabled() else "other"

    def on_outputs(self, out):
        # An op's outputs get their grad_fn only after the whole op returns: queue them together.
        seen = []
        if isinstance(out, _Tensor):
            self._see(out, seen)
        elif isinstance(out, (tuple, list)):
            for item in out:
                if isinstance(item, _Tensor):
                    self._see(item, seen)
                elif isinstance(item, (tuple, list)):
                    for sub in item:
                        if isinstance(sub, _Tensor):
                            self._see(sub, seen)
        if seen and not self.in_backward and _is_grad_enabled():
            # The node belongs to the line running the op, which for a view or an in-place op is not
            # the line that allocated the storage.
            site = self.current_site()
            if site is not None:
                module = self.modules.top() if self.modules is not None else None
                append = self.pending.append
                for tensor, rec in seen:
                    append((tensor, rec, site, module))

    def _see(self, tensor, seen):
        if not self._on_device(tensor):
            return
        try:
            storage = self._storage_of(tensor if type(tensor) in PLAIN_TENSOR_TYPES else unwrap_subclass(tensor))
            cdata = storage._cdata
            nbytes = storage.nbytes()
        except Exception:  # sparse, nested, functional or otherwise storage-less tensors
            return
        rec = self.live.get(cdata)
        if rec is not None and self._expired(rec.handle):
            rec = None  # the address of a freed storage, reused: poll() retires the old record
        if rec is None:
            if nbytes > 0:
                # Frees are collected right before each allocation, so the live level is exact at every
                # allocation (hence at every peak) without polling around ops that allocate nothing.
                self.poll(full=False)
                rec = self.on_alloc(cdata, nbytes, storage, tensor)
        elif rec.nbytes != nbytes:
            self.poll(full=False)
            delta = nbytes - rec.nbytes
            rec.nbytes = nbytes
            if delta > 0:
                self._grow(rec, delta, self.autograd.running_site() if self.in_backward else None)
            else:
                self._on_free(rec, -delta)
        if rec is not None:
            seen.append((tensor, rec))

    def gradient_sum_source(self, args, kwargs):
        """For an `aten.add.Tensor` in backward, before it runs: the record of the gradient it adds into,
        where it is the engine's sum that the unprofiled program makes in place (gradsum.py); else None."""
        if not self.engine_sums.would_be_in_place(args, kwargs) or not self._on_device(args[0]):
            return None
        storage = self._storage_of(args[0])
        rec = self.live.get(storage._cdata)
        if rec is None or rec.nbytes != storage.nbytes() or self._expired(rec.handle):
            return None
        return rec

    def carry_over(self, rec, out):
        """The engine's sum `out` would have been made in `rec`'s block: `rec` moves to out's storage, with
        no allocation and no free (the first gradient's storage, which the engine drops right after the
        sum, is no longer watched). Returns False, changing nothing, where `out` is not such a result."""
        if type(out) is not _Tensor or not self._on_device(out):
            return False
        storage = self._storage_of(out)
        cdata = storage._cdata
        if cdata == rec.cdata or storage.nbytes() != rec.nbytes:
            return False
        self.poll(full=False)  # frees before the sum are charged first, as before an allocation
        known = self.live.get(cdata)
        if self.live.get(rec.cdata) is not rec or (known is not None and not self._expired(known.handle)):
            return False
        ledger = self.ledger
        old_generation = rec.cdata in ledger.old
        ledger.forget(rec)
        if rec.handle is not None:
            self._free_handle(rec.handle)
        rec.cdata = cdata
        rec.handle = self.api.weak_ref(storage)
        rec.tensor_ref = None
        ledger.remember(rec)
        if old_generation:
            ledger.set_generation(rec, True)
        return True

    def on_saved(self, tensor):
        """autograd pack hook: marks a storage allocated in this step as saved for backward."""
        if not self._on_device(tensor):
            return
        described = self.api.describe(tensor)
        if described is None:
            return
        rec = self.live.get(described[0])
        if rec is None or rec.saved or rec.epoch != self.epoch:
            return
        rec.saved = True
        if self.in_step:
            site = self.current_site()
            if site is not None:
                self._acc(site[:2]).saved += rec.nbytes
            if rec.site[0] != UNTRACKED[0]:
                self._acc(rec.site[:2]).saved_made += rec.nbytes
            if self.modules is not None and not self.in_backward:
                module = self.modules.top()
                if module is not None:
                    self.modules.charge_saved(module, rec.nbytes)

    def register_existing(self, tensor, hint=None, site=None):
        """Adds a tensor allocated outside tracking (numpy, before start) to the ledger without charging a line."""
        if not self._on_device(tensor):
            return None
        described = self.api.describe(tensor)
        if described is None:
            return None
        cdata, nbytes, storage = described
        rec = self.live.get(cdata)
        if rec is None and nbytes > 0:
            self.serial += 1
            rec = StorageRec(self.serial, cdata, self.api.weak_ref(storage), nbytes, site or UNTRACKED,
                             self.epoch, None, self.now_ms())
            self.ledger.remember(rec)
            self.live_bytes += nbytes
        if rec is not None and hint is not None and rec.hint is None:
            rec.hint = hint
        return rec

    def on_op_error(self, func, error):
        """Freezes the state at the first failing allocation: line, requested bytes, what was live."""
        from .oom import is_oom, requested_bytes

        if self.oom is not None or not is_oom(error):
            return
        self.poll()
        site = (self.autograd.running_site() if self.in_backward else None) or self.current_site()
        self.oom = {
            "op": str(func),
            "site": site,
            "message": str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__,
            "requested": requested_bytes(str(error)),
            "step": self.step_index,
            "epoch": self.epoch,
            "phase": self.phase(),
            "at": self.now_ms(),
            "live_bytes": self.live_bytes,
            "live": list(self.live.values()),
        }

    # ----------------------------------------------------------------- backward / steps

    # backward() is entered and left from user code with the tracer on: the bookkeeping here (stamping every
    # parameter, gradient and optimizer state tensor) runs untraced, or each of its calls is a trace event.

    def backward_begin(self):
        trace = self.pause_tracing()
        try:
            self.poll()
            self.in_backward += 1
            self.backward_start_live = self.live_bytes
        finally:
            self.resume_tracing(trace)

    def backward_end(self):
        trace = self.pause_tracing()
        try:
            self.poll()
            if self.in_step and self.in_backward == 1:
                if self.modules is not None:
                    self.modules.measure_grads(self.api.describe)
                if self.backward_hook is not None:
                    # Gradients accumulated over micro-steps are live inside the step: stamp them as such now.
                    self.backward_hook()
            self.in_backward -= 1
            if not self.in_backward:
                self.autograd.settle()
        finally:
            self.resume_tracing(trace)

    def step_begin(self, profiled_index):
        self.poll()
        self.epoch += 1
        self.step_index = profiled_index
        if profiled_index is not None:
            self.in_step = True
            self.events = []
            self.step_start_sizes = {rec: rec.nbytes for rec in self.live.values()}
            self.step_start_live = self.live_bytes
            self.step_peak = self.live_bytes
            self.step_peak_at = self.now_ms()
            self.step_peak_index = 0
            self.step_peak_site = self.current_site()
            self.step_peak_phase = self.phase()
            self.timeline.append((self.now_ms(), self.live_bytes))

    def step_end(self):
        self.poll()
        self.in_step = False
        events = self.events
        self.events = None
        return events

    def finish(self):
        """The run is over (the event-fed tracker gives its hook back here); nothing to do on this path."""


