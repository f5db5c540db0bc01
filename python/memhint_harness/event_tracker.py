"""The event-fed tracker (issue #17; opt-in with MEMHINT_EVENTS=1, CPU, where the allocation hook builds).

The dispatch path (tracker.py) runs a Python TorchDispatchMode on every aten op: ~3 us per op before any
bookkeeping, and the mode itself changes what some kernels allocate (docs/profiler.md, "Composite kernels
under a mode", "Gradient sums"). Here no mode is entered. The allocation hook (allochook.py) records every
allocation and free in C++, in order, with the backward node running; the line tracer drains it with
`take(True)` at each call, line and return of a user frame, at backward()'s start and end, at step
boundaries and in autograd's pack hook, and an EventLines (event_lines.py) turns the events into the
report's per-line figures with the dispatch path's rules.

What comes from the events: per-line self, inclusive and backward figures (allocated, freed, peak,
allocations), call counts (the line tracer's, as on the dispatch path), the step's allocated and freed
bytes and its peak; and, from the blocks' records (session 20), what is live at the peak by kind and line,
leaks across steps (event_state.py: kinds from the storages' addresses of parameters, gradients and optimizer
state at the boundaries, as the dispatch path stamps them) and saved for backward per line (autograd's
pack hook: per saved tensor, not per op) and the per-module breakdown (modules.py's stack hooks drain
the hook before each change, so each block is charged to the module running when it was made; a backward
node's blocks to the module running when its forward made it, as node_site for lines). What does not
yet: kernel workspaces, graphs never backpropagated or kept alive by a leak, the timeline within a step,
--budget; the report's notes say so (NOTE), and those fields are empty rather than measured.
"""
from __future__ import annotations

import bisect
import threading
from typing import Any, Dict, List, Optional, Tuple

from .event_lines import R_BYTES, R_EPOCH, R_HINT, R_SAVED, R_SITE, EventLines, Key, Record
from .linetrace import LineTracer
from .modules import _BACKWARD, _FORWARD
from .tracker import Tracker

_get_ident = threading.get_ident

ENV = "MEMHINT_EVENTS"

NOTE = ("MEMHINT_EVENTS=1: per-line figures (self, inclusive, backward, calls), each step's allocated, freed "
        "and peak bytes, what is live at the peak by kind, leaks across steps, saved for backward and the "
        "per-module breakdown come from the allocation hook's events, with no dispatch mode; not computed from "
        "events yet, so left empty here (not measured as zero): kernel workspaces, graphs never backpropagated "
        "or held by a leak, the timeline within a step")


class _StepTotal:
    """Stands for a step's allocations or frees in the runner's event list (runner.py sums the deltas); no
    record: nothing of this path reads records."""

    __slots__ = ()


_TOTAL = _StepTotal()


class EventLineTracer(LineTracer):
    """The line tracer, telling the tracker's EventLines of each user frame and line it sees."""

    def _trace_call(self, frame):
        local = super()._trace_call(frame)
        if local is not None:
            self.tracker.feed_call()
        return local

    def _trace_local(self, frame, event):
        local = super()._trace_local(frame, event)
        if event == "line":
            tracker = self.tracker
            stack = tracker.stack
            if stack and stack[-1].frame == id(frame):
                top = stack[-1]
                key = (top.file, top.line)
                if not tracker.in_step and key not in tracker.funcs:
                    # The line tracer names lines in steps only; a block made outside one (a parameter at
                    # module level) is named in the peak and the leaks with its function as well.
                    tracker.funcs[key] = top.func
                tracker.feed_line(key)
        return local


class EventTracker(Tracker):
    def __init__(self, storage_api, user_files, hook: Any, budget=None):
        super().__init__(storage_api, user_files, "cpu", budget=budget)
        self.hook = hook  # the allocation hook module, started by the caller (allochook.load())
        self._starts: List[int] = []  # autograd sequence-number ranges: _starts[i].. were made at _sites[i]
        self._sites: List[Optional[Key]] = []
        self._node_modules: List[Any] = []  # the module running when _starts[i].. were made (None: none)
        self._last_peek = 0
        self.feed = EventLines(self._node_site, self._node_module)
        self.feed.counting = False  # until the first profiled step (setup and warmup are not charged)
        self.step_start_records: Dict[int, Record] = {}  # the live blocks when the profiled step began
        # (address, bytes, epoch, in a step, line, module) of the tensors autograd saved since the last drain
        self._saved: List[Tuple[int, int, int, bool, Optional[Key], Any]] = []
        self.tracer = EventLineTracer(self, user_files)
        self.trace_call = self.tracer.trace_call
        self.finished = False

    # ----------------------------------------------------------------- events

    def _node_site(self, node: int) -> Optional[Key]:
        i = bisect.bisect_right(self._starts, node) - 1
        return self._sites[i] if i >= 0 else None

    def _node_module(self, node: int) -> Any:
        i = bisect.bisect_right(self._starts, node) - 1
        return self._node_modules[i] if i >= 0 else None

    def drain(self, returned: bool = False) -> None:
        """Charges what the hook recorded since the last drain. The autograd nodes numbered since then were
        made by the line that was running (the top of the stack before it moves)."""
        if self.finished:
            return
        peek, events = self.hook.take(True)
        feed = self.feed
        modules = self.modules
        if modules is not None:
            stack = modules.stack
            feed.module = stack[-1] if stack else None
        if peek != self._last_peek:
            self._starts.append(self._last_peek)
            self._sites.append(feed.stack[-1].key if feed.stack else None)
            self._node_modules.append(feed.module)
            self._last_peek = peek
        if events or returned:
            feed.feed(events, returned=returned)
            self.live_bytes = feed.live
        if self._saved:
            self._settle_saved()

    def feed_call(self) -> None:
        """A user frame starts: what its caller's line allocated until now is the caller's."""
        self.drain()
        self.feed.call(None)  # the frame's first line event names its line

    def feed_line(self, key: Key) -> None:
        self.hook.node_reset()  # a new user line: any backward() of the last one is over
        self.feed.move(key)

    # ----------------------------------------------------------------- the dispatch path's hooks, replaced

    def poll(self, full=True):
        if _get_ident() != self.main_thread:
            return  # the hook's slot is the main thread's (torch's profiler state is per thread)
        returning = self.returning
        try:
            self.drain(returned=returning)
        except Exception:  # a harness bug must not become the user's exception (backward(), step boundaries)
            self.fail()
        if returning:
            self.tracer.pop_returned()

    def block_of(self, tensor) -> Optional[int]:
        """The address of the live block holding `tensor`'s storage (its record's key in feed.records), or None
        for a tensor on another device, without storage, or whose memory is not the allocator's (numpy's:
        no event tells of it, nor of its free; the dispatch path counts such a block, this one cannot)."""
        if not self._on_device(tensor):
            return None
        try:
            address = self._storage_of(tensor).data_ptr()
        except Exception:  # sparse, nested, functional or otherwise storage-less tensors
            return None
        return address if address in self.feed.records else None

    def register_existing(self, tensor, hint=None, site=None):
        """The block of a tensor the caller names (state, a step input): its address, marked with `hint`. No
        record is made for a block the hook never saw (see block_of): nothing would tell of its free."""
        address = self.block_of(tensor)
        if address is not None and hint is not None:
            rec = self.feed.records[address]
            if rec[R_HINT] is None:
                rec[R_HINT] = hint
        return address

    def on_saved(self, tensor):
        """autograd's pack hook: the block is marked saved for backward at the next drain (_settle_saved), as
        the dispatch path marks it at once (tracker.on_saved). Not drained here: the pack hook runs inside the
        op that saves, and a take() there would split the op's events (the hook pairs an op's transient
        allocations with their frees at the op's end, _callochook.cpp)."""
        if not self._on_device(tensor):
            return
        try:
            storage = self._storage_of(tensor)
            address, nbytes = storage.data_ptr(), storage.nbytes()
        except Exception:  # storage-less tensors
            return
        stack = self.stack
        in_step = self.in_step
        site = (stack[-1].file, stack[-1].line) if stack and in_step else None
        modules = self.modules
        module = modules.top() if modules is not None and in_step and not self.in_backward else None
        self._saved.append((address, nbytes, self.epoch, in_step, site, module))

    def _settle_saved(self) -> None:
        """Marks the blocks the pack hook saw since the last drain (now in feed.records) and charges them: to
        the line whose op saved them (savedForBackward), the line that made them (savedMadeHere), the running
        module. A block is marked once, in the step that made it; the size tells a reused address apart."""
        saved, self._saved = self._saved, []
        records = self.feed.records
        for address, nbytes, epoch, in_step, site, module in saved:
            rec = records.get(address)
            if rec is None or rec[R_SAVED] or rec[R_EPOCH] != epoch or rec[R_BYTES] != nbytes:
                continue
            rec[R_SAVED] = True
            if site is not None:
                self._acc(site).saved += nbytes
            if in_step and rec[R_SITE] is not None:
                self._acc(rec[R_SITE]).saved_made += nbytes
            if module is not None:
                self.modules.charge_saved(module, nbytes)

    def module_boundary(self) -> None:
        """A module's forward starts or ends (modules.py's hooks, before the stack changes): what was allocated
        until now is the running module's; a returned user frame is popped there, as on the dispatch path."""
        if not self.disabled:
            self.poll()

    def backward_begin(self):
        trace = self.pause_tracing()
        try:
            self.poll()
            self.feed.backward_begin()
            self.in_backward += 1
        finally:
            self.resume_tracing(trace)

    def backward_end(self):
        trace = self.pause_tracing()
        try:
            self.poll()
            self.hook.node_reset()
            self.feed.backward_end()
            if self.in_step and self.in_backward == 1:
                if self.modules is not None:
                    self.modules.measure_grads(self.api.describe)
                if self.backward_hook is not None:
                    self.backward_hook()
            self.in_backward -= 1
        finally:
            self.resume_tracing(trace)

    def step_begin(self, profiled_index):
        super().step_begin(profiled_index)  # drains first, with the last step's counting and epoch
        feed = self.feed
        feed.epoch = self.epoch
        feed.counting = self.in_step
        self.step_start_records = feed.start_step(self.step_peak_phase) if self.in_step else {}

    def step_end(self):
        self.poll()
        feed = self.feed
        events = super().step_end()
        feed.counting = False
        if events is None:
            return None
        self.step_peak = feed.peak
        self.step_peak_index = 0  # no per-event list here: event_state.py replays feed.live_at_peak instead
        self.step_peak_phase = feed.peak_phase
        if feed.peak_key is not None:
            self.step_peak_site = feed.peak_key + (self.funcs.get(feed.peak_key, ""),)
        self._copy_figures()
        return [(_TOTAL, feed.step_allocated), (_TOTAL, -feed.step_freed)]

    def _copy_figures(self) -> None:
        """The report reads tracker.lines: the events' figures replace the dispatch path's (which no op
        filled on this path), in place, so that the frames' cached LineAccs stay the same objects."""
        feed = self.feed
        for table, field in ((feed.self_c, "self_c"), (feed.incl_c, "incl_c"), (feed.bw_c, "bw_c")):
            for key, figures in table.items():
                getattr(self._acc(key), field)[:] = figures
        modules = self.modules
        if modules is not None:
            for module, (forward, backward) in feed.module_c.items():
                counter = modules._counter(module)
                counter[_FORWARD], counter[_BACKWARD] = forward, backward

    def finish(self) -> None:
        """The run is over: the last events are charged and the hook gives the profiler slot back."""
        if self.finished:
            return
        try:
            self.drain()
        finally:
            self.finished = True
            self.hook.stop()
        self._copy_figures()


def install_module_boundary(tracker: EventTracker) -> Optional[Any]:
    """A global forward post-hook that ends a returned user frame (`forward`) when its module call returns.

    The dispatch path's module hooks run there, and their call pops a returned frame (linetrace.py): frees
    made after that, by the caller's line (`logits, loss = model(X, Y)` dropping the last micro-step's
    tensors), are the caller's. Without a hook, nothing runs between the return and the caller's next line,
    and those frees would stay on the callee's return line (event_lines.py's rule for a frame's dying
    locals). One Python call per module call. Returns the handle, or None where torch has no global hooks."""
    from torch.nn.modules import module as module_api

    register = getattr(module_api, "register_module_forward_hook", None)
    if register is None:
        return None

    def module_returned(module, args, output):
        if tracker.returning and not tracker.disabled:
            tracker.poll()

    return register(module_returned)


def start_hook() -> Tuple[Optional[Any], str]:
    """The allocation hook started on this thread, or (None, why the dispatch path runs instead)."""
    from . import allochook

    hook, why = allochook.load()
    if hook is None:
        return None, why
    if not hook.start(True):
        return None, "the profiler slot is taken (torch.profiler is running)"
    hook.take(True)  # anything left from an earlier run in this process
    return hook, ""
