"""Exact tensor-storage accounting per user source line.

Three sources of events feed one ledger:
- a TorchDispatchMode sees every aten op's outputs: a storage never seen before is an allocation, a known
  storage whose size changed was resized (`resize_`, `out=`);
- before each op and at each traced line, the C++ weak references of live storages are polled: an expired
  one was freed. Polling before an op keeps the live level exact at every allocation, hence at every peak;
- sys.settrace on user frames only gives line boundaries (per-line peak, call counts, the current line).

Backward: allocations made while autograd runs a graph node are charged to the forward line that created
the node. Forward outputs' `grad_fn` nodes are tagged with their line in `node.metadata`. During backward the
running node comes from `torch._C._current_autograd_node()` when the torch has it (any thread, so CUDA's
device threads too); otherwise (torch 1.13) a post-hook on each tagged node closes the allocations made since
the previous node finished: exact on CPU, where the engine runs nodes one by one in the calling thread.
"""
from __future__ import annotations

import sys
import threading
import time
import weakref
from itertools import compress
from operator import attrgetter
from time import perf_counter
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple

import torch

from .storage import PLAIN_TENSOR_TYPES, unwrap_subclass

if TYPE_CHECKING:
    from .modules import ModuleLedger

_Tensor = torch.Tensor
_is_grad_enabled = torch.is_grad_enabled
_get_ident = threading.get_ident

try:
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError:  # pragma: no cover - torch < 1.12
    TorchDispatchMode = None

NODE_KEY = "memhint_site"
MODULE_KEY = "memhint_module"
UNTRACKED = ("<untracked>", 0, "")


class LineAcc:
    __slots__ = ("self_c", "incl_c", "bw_c", "calls", "saved", "saved_made", "cuda")

    def __init__(self):
        # allocated, freed, peak, allocations
        self.self_c = [0, 0, 0, 0]
        self.incl_c = [0, 0, 0, 0]
        self.bw_c = [0, 0, 0, 0]
        self.calls = 0
        self.saved = 0  # saved for backward by the ops this line ran
        self.saved_made = 0  # allocated by this line and saved for backward by any op
        self.cuda = None  # [allocated_delta, reserved_delta, max_allocated_rise]


class StorageRec:
    __slots__ = ("serial", "cdata", "handle", "nbytes", "site", "epoch", "step", "saved", "hint", "state",
                 "tensor_ref", "t", "module")

    def __init__(self, serial, cdata, handle, nbytes, site, epoch, step, t):
        self.serial = serial
        self.cdata = cdata
        self.handle = handle
        self.nbytes = nbytes
        self.site = site
        self.epoch = epoch
        self.step = step
        self.saved = False
        self.hint = None  # "input" for step arguments
        self.state = None  # parameter / gradient / optimizer_state, as of the last classification
        self.tensor_ref = None
        self.t = t
        # modules.ModuleKey of the module that allocated it (forward or backward)
        self.module: Optional[Tuple[int, str]] = None


class Frame:
    """One active user frame on the traced stack."""

    # The frame's id, not the frame: holding a frame object would keep its locals (tensors) alive.
    # `acc` caches the LineAcc of (file, line), looked up at the first charge of the line.
    __slots__ = ("frame", "file", "func", "line", "start", "self_max", "incl_max", "acc")

    def __init__(self, frame, file, func, live):
        self.frame = id(frame)
        self.file = file
        self.func = func
        self.line = 0
        self.start = live
        self.self_max = live
        self.incl_max = live
        self.acc = None


def _device_flag(device_type):
    """Whether a tensor is on the tracked device, without building a torch.device per tensor."""
    flag = {"cpu": "is_cpu", "cuda": "is_cuda", "meta": "is_meta"}.get(device_type)
    if flag is not None and hasattr(torch.Tensor, flag):
        return attrgetter(flag)
    return lambda tensor: tensor.device.type == device_type


class StopProfiling(BaseException):
    """Raised into the user's code to end the run once enough steps were measured."""


class Tracker:
    def __init__(self, storage_api, user_files, device_type, budget=None, cuda_lines=False):
        self.api = storage_api
        self.user_files = user_files
        self.device_type = device_type
        self.t0 = time.perf_counter()
        self.main_thread = threading.get_ident()
        self.live = {}  # cdata -> StorageRec, both generations
        self.young = {}  # cdata -> StorageRec; young_handles has the same keys in the same order
        self.young_handles = {}
        self.old = {}  # parameters and optimizer state
        self.old_handles = {}
        self.live_bytes = 0
        self.serial = 0
        self.lines = {}  # (file, line) -> LineAcc
        self.funcs = {}  # (file, line) -> function name
        self.stack = []  # main-thread user frames
        self.pending = []  # forward outputs whose grad_fn is tagged at the next event
        self.bw_pending = {}  # hooks mode, per thread: backward events not yet claimed by a node
        self.site_hooks = {}
        self.current_node = getattr(torch._C, "_current_autograd_node", None)
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
        self.cuda_lines = cuda_lines
        self.cuda_series = ([], [], []) if cuda_lines else None
        self.cuda_max_allocated = 0
        self.cuda_max_reserved = 0
        self._code_cache = {}  # code object -> is it the user's
        self._stack_accs = None  # distinct LineAccs of the stack's lines, bottom to top (None: recompute)
        self.disabled = False
        self.internal_error = None
        self.returning = False
        self.line_hook: Optional[Callable[[FrameType], None]] = None
        self.modules: Optional[ModuleLedger] = None  # when torch has global module hooks
        self.backward_hook: Optional[Callable[[], Any]] = None  # called at the end of each profiled backward()
        self.node_hook: Optional[Callable[[], Any]] = None  # nograd.py: called per new forward graph node tagged
        self.watched_ops: frozenset = frozenset()  # kernels.py: ops passed to op_hook by the dispatch mode
        self.op_hook: Optional[Callable[[Any], Any]] = None
        # Hot-path shortcuts: C functions and attribute names looked up once.
        self._expired = storage_api.expired_raw
        self._storage_of = storage_api.storage_of
        self._on_device = _device_flag(device_type)
        self.trace_call = self._make_trace_call()

    # ----------------------------------------------------------------- robustness

    def guard(self, fn, *args):
        """Runs bookkeeping; on a harness bug, stops measuring (the report says so) instead of failing the user."""
        try:
            return fn(*args)
        except Exception:
            self.fail()
            return None

    def fail(self):
        import traceback

        if self.internal_error is None:
            self.internal_error = traceback.format_exc()
        self.disabled = True
        sys.settrace(None)

    def pause_tracing(self):
        """Switches the tracer off for harness work between user code; returns what resume_tracing needs."""
        if not _SWITCH_TRACE:
            return None
        trace = sys.gettrace()
        if trace is not None:
            sys.settrace(None)
        return trace

    def resume_tracing(self, trace):
        if trace is not None and not self.disabled:
            sys.settrace(trace)

    def disable_in_child(self):
        """A forked child (DataLoader worker) inherits the mode and the tracer: measure nothing there."""
        self.disabled = True
        sys.settrace(None)

    # ----------------------------------------------------------------- time, sites

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
            self.flush_pending()
        expired = self._expired
        # list() runs compress to the end before _forget changes the dicts; both dicts share a key order.
        dead = list(compress(self.young.values(), map(expired, self.young_handles.values())))
        if full and self.old:
            dead.extend(compress(self.old.values(), map(expired, self.old_handles.values())))
        if dead:
            free = self.api.free
            for rec in dead:
                self._forget(rec)
                free(rec.handle)
                self._on_free(rec, rec.nbytes)
        if self.returning and _get_ident() == self.main_thread:
            self._pop_returned()

    def _remember(self, rec):
        self.live[rec.cdata] = rec
        self.young[rec.cdata] = rec
        self.young_handles[rec.cdata] = rec.handle

    def _forget(self, rec):
        cdata = rec.cdata
        del self.live[cdata]
        if self.young.pop(cdata, None) is not None:
            del self.young_handles[cdata]
        else:
            del self.old[cdata]
            del self.old_handles[cdata]

    def set_generation(self, rec, old):
        """Moves a live storage between the generations (called when kinds are stamped)."""
        cdata = rec.cdata
        if old and cdata in self.young:
            del self.young[cdata], self.young_handles[cdata]
            self.old[cdata], self.old_handles[cdata] = rec, rec.handle
        elif not old and cdata in self.old:
            del self.old[cdata], self.old_handles[cdata]
            self.young[cdata], self.young_handles[cdata] = rec, rec.handle

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
            site = self._running_node_site()
            if site is not None:
                self._acc(site[:2]).bw_c[1] += nbytes
                self._charge_stack(nbytes, freed=True, self_too=False)
                return
        self._charge_stack(nbytes, freed=True, self_too=True)

    def _charge_stack(self, nbytes, freed, self_too):
        # Another thread (CUDA's autograd device threads) charges the main stack only during backward(),
        # while the main thread waits in the backward() line.
        if not self.stack or (not self.in_backward and _get_ident() != self.main_thread):
            return
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

    def _running_node_module(self):
        if self.current_node is None:
            return None
        node = self.current_node()
        if node is None:
            return None
        try:
            return node.metadata.get(MODULE_KEY)
        except Exception:
            return None

    def _running_node_site(self):
        if self.current_node is None:
            return None
        node = self.current_node()
        if node is None:
            return None
        try:
            return node.metadata.get(NODE_KEY)
        except Exception:
            return None

    def on_alloc(self, cdata, nbytes, storage, tensor):
        self.serial += 1
        stack = self.stack
        in_backward = self.in_backward
        if stack and (in_backward or _get_ident() == self.main_thread):
            top = stack[-1]
            site = (top.file, top.line, top.func)
        else:
            site = None
        bw_site = self._running_node_site() if in_backward else None
        rec = StorageRec(self.serial, cdata, storage._weak_ref(), nbytes,
                         bw_site or site or UNTRACKED, self.epoch, self.step_index, None)
        modules = self.modules
        if modules is not None:
            rec.module = self._running_node_module() if in_backward else modules.top()
        self.live[cdata] = self.young[cdata] = rec
        self.young_handles[cdata] = rec.handle
        self._grow(rec, nbytes, bw_site)

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
        stack_ok = self.stack and (in_backward or _get_ident() == self.main_thread)
        if stack_ok:
            top = self.stack[-1]
            if live > top.incl_max:
                top.incl_max = live
            if live > top.self_max and not self.in_backward:
                top.self_max = live
        if live > self.step_peak:
            self.step_peak = live
            self.step_peak_at = now
            self.step_peak_index = len(self.events or ())
            self.step_peak_site = rec.site
            self.step_peak_phase = self.phase()
        if hooks_backward:
            return
        if self.in_backward and bw_site is not None:
            self._charge_backward(bw_site, nbytes)
            self._charge_stack(nbytes, freed=False, self_too=False)
            if rec.module is not None:
                self.modules.charge_backward(rec.module, nbytes)
            return
        if not in_backward and rec.module is not None:
            self.modules.charge_forward(rec.module, nbytes)
        self._charge_stack(nbytes, freed=False, self_too=True)

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
                self.pending.extend((tensor, rec, site, module) for tensor, rec in seen)

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
                self.on_alloc(cdata, nbytes, storage, tensor)
                rec = self.live.get(cdata)
        elif rec.nbytes != nbytes:
            self.poll(full=False)
            delta = nbytes - rec.nbytes
            rec.nbytes = nbytes
            if delta > 0:
                self._grow(rec, delta, self._running_node_site() if self.in_backward else None)
            else:
                self._on_free(rec, -delta)
        if rec is not None:
            seen.append((tensor, rec))

    def flush_pending(self):
        """Tags the grad_fn of recent forward outputs with their line (autograd sets it after dispatch)."""
        pending = self.pending
        self.pending = []
        hooks = self.current_node is None
        for tensor, rec, site, module in pending:
            node = tensor.grad_fn
            if node is None:
                continue
            if rec.tensor_ref is None:
                try:
                    rec.tensor_ref = weakref.ref(tensor)
                except TypeError:
                    pass
            try:
                metadata = node.metadata
            except Exception:
                continue
            if NODE_KEY in metadata:
                continue
            metadata[NODE_KEY] = site
            if module is not None:
                metadata[MODULE_KEY] = module
            if self.node_hook is not None:
                self.node_hook()
            if hooks:
                node.register_hook(self._hook_for(site, module))
            for next_node, _ in node.next_functions:
                # AccumulateGrad writes .grad; it belongs to the line that used the parameter.
                if next_node is not None and type(next_node).__name__ == "AccumulateGrad":
                    md = next_node.metadata
                    if NODE_KEY not in md:
                        md[NODE_KEY] = site
                        if module is not None:
                            md[MODULE_KEY] = module
                        if hooks:
                            next_node.register_hook(self._hook_for(site, module))

    def _hook_for(self, site, module):
        found = self.site_hooks.get((site, module))
        if found is not None:
            return found

        def hook(grad_inputs, grad_outputs, site=site, module=module):
            self.node_done(site, module)

        self.site_hooks[(site, module)] = hook
        return hook

    def node_done(self, site, module=None):
        """hooks mode: the node created at `site` has run; claim the backward events since the last node."""
        self.poll(full=False)
        events = self.bw_pending.pop(threading.get_ident(), None)
        if not events:
            return
        for rec, nbytes, in_step in events:
            if nbytes > 0:
                rec.site = site
                rec.module = module
            if not in_step:
                continue
            if nbytes > 0:
                self._charge_backward(site, nbytes)
                self._charge_stack(nbytes, freed=False, self_too=False)
                if module is not None:
                    self.modules.charge_backward(module, nbytes)
            else:
                self._acc(site[:2]).bw_c[1] += -nbytes
                self._charge_stack(-nbytes, freed=True, self_too=False)

    def settle_backward(self):
        """End of backward(): events no node claimed stay on the backward() line."""
        events = [event for thread_events in self.bw_pending.values() for event in thread_events]
        self.bw_pending = {}
        for _rec, nbytes, in_step in events:
            if not in_step:
                continue
            if nbytes > 0:
                self._charge_stack(nbytes, freed=False, self_too=True)
            else:
                self._charge_stack(-nbytes, freed=True, self_too=True)

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
            self._remember(rec)
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
        site = (self._running_node_site() if self.in_backward else None) or self.current_site()
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

    # ----------------------------------------------------------------- line tracing

    def _make_trace_call(self):
        """The global trace function. It runs at every Python call (torch's and the harness's own too), so
        the common case, a non-user code object already classified, is one dict lookup."""
        cache = self._code_cache
        cache_get = cache.get
        tracker = self

        def trace_call(frame, event, arg):
            if tracker.returning or tracker.disabled:
                return tracker._trace_call_guarded(frame)
            if cache_get(frame.f_code) is False:
                return None
            return tracker._trace_call_guarded(frame)

        return trace_call

    def _trace_call_guarded(self, frame):
        if self.disabled:
            return None
        try:
            return self._trace_call(frame)
        except Exception:  # a harness bug must not become the user's exception
            self.fail()
            return None

    def _trace_call(self, frame):
        if self.returning:
            self.poll()
        code = frame.f_code
        user = self._code_cache.get(code)
        if user is None:
            user = self._code_cache[code] = self.user_files.is_user(code.co_filename)
        if not user or _get_ident() != self.main_thread:
            return None
        self.stack.append(Frame(frame, code.co_filename, code.co_name, self.live_bytes))
        self._stack_accs = None
        return self.trace_local

    def trace_local(self, frame, event, arg):
        if self.disabled:
            return None
        try:
            return self._trace_local(frame, event)
        except StopProfiling:
            raise
        except Exception:
            self.fail()
            return None

    def _trace_local(self, frame, event):
        if event == "line":
            self.poll()
            stack = self.stack
            if not stack:
                return self.trace_local
            top = stack[-1]
            if top.frame != id(frame):
                return self.trace_local
            if top.line:
                self._close_line(top)
            if self.line_hook is not None:
                # May stop profiling (deadlines): before this line is counted, since it will not run.
                self.line_hook(frame)
            top.line = frame.f_lineno
            top.acc = None
            self._stack_accs = None
            live = self.live_bytes
            top.start = top.self_max = top.incl_max = live
            if self.in_step:
                key = (top.file, top.line)
                acc = top.acc = self._acc(key)
                acc.calls += 1
                self.funcs[key] = top.func
                if self.cuda_lines:
                    self._cuda_line_start(top)
        elif event == "return":
            self.poll()
            stack = self.stack
            if stack and stack[-1].frame == id(frame):
                # Popped at the next event, after the frees its locals cause are charged to this line.
                self.returning = True
        return self.trace_local

    def _pop_returned(self):
        self.returning = False
        stack = self.stack
        if not stack:
            return
        top = stack.pop()
        self._stack_accs = None
        if top.line:
            self._close_line(top)
        if stack and top.incl_max > stack[-1].incl_max:
            stack[-1].incl_max = top.incl_max

    def _close_line(self, top):
        if not self.in_step:
            return
        acc = top.acc
        if acc is None:
            acc = top.acc = self._acc((top.file, top.line))
        rise = top.self_max - top.start
        if rise > acc.self_c[2]:
            acc.self_c[2] = rise
        rise = top.incl_max - top.start
        if rise > acc.incl_c[2]:
            acc.incl_c[2] = rise
        if self.cuda_lines:
            self._cuda_line_end(top, acc)

    # ----------------------------------------------------------------- cuda line boundaries

    def _cuda_line_start(self, top):
        cuda = torch.cuda
        top_state = (cuda.memory_allocated(), cuda.memory_reserved())
        cuda.reset_peak_memory_stats()
        self._cuda_open = getattr(self, "_cuda_open", {})
        self._cuda_open[id(top)] = top_state
        series = self.cuda_series
        series[0].append(self.now_ms())
        series[1].append(top_state[0])
        series[2].append(top_state[1])

    def _cuda_line_end(self, top, acc):
        state = getattr(self, "_cuda_open", {}).pop(id(top), None)
        if state is None:
            return
        cuda = torch.cuda
        allocated, reserved = cuda.memory_allocated(), cuda.memory_reserved()
        if acc.cuda is None:
            acc.cuda = [0, 0, 0]
        acc.cuda[0] += allocated - state[0]
        acc.cuda[1] += reserved - state[1]
        peak_allocated = cuda.max_memory_allocated()
        # Per-line peaks reset the allocator's peak stats, so the run's maxima are kept here.
        self.cuda_max_allocated = max(self.cuda_max_allocated, peak_allocated)
        self.cuda_max_reserved = max(self.cuda_max_reserved, cuda.max_memory_reserved())
        rise = peak_allocated - state[0]
        if rise > acc.cuda[2]:
            acc.cuda[2] = rise

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
                self.settle_backward()
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


# sys.settrace is cheap to switch off and on before Python 3.12; from 3.12 it re-instruments code objects.
_SWITCH_TRACE = sys.version_info < (3, 12)
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
            if func in tracker.watched_ops:
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
