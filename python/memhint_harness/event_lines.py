"""Per-line figures from allocator events (issue #17, "the tracker fed from events", first piece).

The dispatch path (tracker.py) learns of an allocation when an op returns a storage it has not seen, and
of a free when a weak reference is found expired at the next poll. The allocation hook (allochook.py)
hands over both as events, in order, with the address, the signed size and the backward node running.
EventLines turns such a stream into the per-line `self` and `backward` figures the report has
(allocated, freed, peak, allocations), with the tracker's rules:

- an allocation is charged to the line at the top of the user stack; inside a backward node, to the
  forward line that made the node (`node_site`), as `backward`;
- a free is charged to the line running when it happens (the dispatch path: at its next poll, which is
  when the next op returns a new storage, or at the next trace event, so the same line). In backward()
  the dispatch path's poll time shows: a free is charged to the node of the op that returns the *next*
  new storage (the engine frees a node's input gradients after its call, and the poll that finds them
  dead runs after the next node's op), including frees inside that op after its allocation; frees left
  when backward() ends go to the backward() line itself. The events say which node held the block; to
  give the same report, backward frees wait for the next allocation's op here too (`_pending`; with the
  op ids of `take(True)`, a free inside the op of the last allocation is that allocation's) or for the
  engine's next gradient sum (a marker event (0, 0, node, -1): the dispatch path polls there too, and
  charges what it finds to the node whose gradient is summed);
  a free of a block allocated before the stream began is not known (no record) and is not counted;
- a line's self peak is the highest live level reached at one of its own (forward) allocations, above the
  level when the line began, over all its executions; a line's backward peak is the highest live level at
  one of its nodes' allocations above the level when backward() began;
- inclusive figures (`incl_c`) charge every allocation and free that the self or backward figures charge
  once more to each distinct line of the user stack (a recursive line once), as tracker._charge_accs; a
  line's inclusive peak is the highest live level at any allocation while it ran (its callees' and backward
  allocations included) above the level it began at, a returned frame's reached level passing to its caller;
- the step's totals and peak (`step_allocated`, `step_freed`, `peak`, `peak_key`) while counting.

Records are keyed by address: an address is reused only after its free, which comes first in the stream.
Each is a list (`R_*` below): bytes, the line charged (the backward line inside a node, else the running
line), the epoch (the caller's step count, as StorageRec.epoch) and what the caller learns of the block
later (its state kind, whether autograd saved it, whether it is a step input), read for the peak's
composition and the leak check (event_state.py). While counting, the step's batches and the records its
allocations made are kept, so that the records live at the step's peak can be replayed (`live_at_peak`)
once, at the step's end, instead of a copy of the live set at every new peak.
No torch here: the events are plain tuples, so the rules can be checked without an allocator. Not used
by the profiler yet (docs/profiler.md, "The event-fed tracker"): scripts/alloc_path_compare.py compares
its figures with the dispatch report's.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

Key = Tuple[str, int]  # (file, line)
Figures = List[int]

# Indices into the per-line figure lists, as records.LineAcc orders them.
ALLOCATED, FREED, PEAK, ALLOCATIONS = 0, 1, 2, 3
# Indices into a block's record: bytes, line (Key or None), epoch, state kind (parameter, gradient,
# optimizer_state or None), saved for backward, hint ("input" or None), module (the caller's key or None).
R_BYTES, R_SITE, R_EPOCH, R_STATE, R_SAVED, R_HINT, R_MODULE = 0, 1, 2, 3, 4, 5, 6
Record = List  # [bytes, site, epoch, state, saved, hint, module]
# Indices into the per-module figure lists (module_c)
M_FORWARD, M_BACKWARD = 0, 1


class _Frame:
    __slots__ = ("key", "start", "self_max", "incl_max")

    def __init__(self, key: Optional[Key], live: int):
        self.key = key
        self.start = live
        self.self_max = live
        self.incl_max = live


class EventLines:
    """Per-line self and backward figures from an ordered stream of (ptr, bytes, node, device) events."""

    def __init__(self, node_site: Callable[[int], Optional[Key]],
                 node_module: Optional[Callable[[int], Any]] = None):
        self.node_site = node_site  # backward node (sequence number) -> forward line, or None
        # backward node -> the module running when its forward made it (None: modules are not followed)
        self.node_module = node_module
        self.module: Any = None  # the innermost running module, set by the caller before each batch
        self.module_c: Dict[Any, List[int]] = {}  # module -> [forward, backward] bytes allocated while counting
        self.live = 0
        self.records: Dict[int, Record] = {}  # address -> the live block's record (R_*)
        self.epoch = -1  # stamped into each record (the caller's step count)
        self.step_batches: List[Iterable[Tuple[int, ...]]] = []  # while counting: the step's batches, in order
        self.step_records: List[Record] = []  # while counting: the records the step's allocations made, in order
        self.peak_event: Optional[Tuple[int, ...]] = None  # the allocation event that reached the peak
        self.peak_batch = -1  # its batch's index in step_batches
        self.peak_phase = "other"  # backward, forward (grad mode on) or other, when the peak was reached
        self.stack: List[_Frame] = []
        self.self_c: Dict[Key, List[int]] = {}
        self.bw_c: Dict[Key, List[int]] = {}
        self.incl_c: Dict[Key, List[int]] = {}
        self._distinct: Optional[List[Figures]] = None  # incl_c lists of the stack's distinct lines (None: stale)
        self.step_allocated = 0
        self.step_freed = 0
        self.peak = 0  # the highest live level while counting (reset by the caller at each step's start)
        self.peak_key: Optional[Key] = None  # the line charged with the allocation that reached it
        self.in_backward = 0
        self.backward_start = 0
        self.counting = True  # False: keep the live level and records, charge nothing (warmup)
        self._pending = 0  # bytes freed in backward() since its last allocation (see the module's doc)
        self._last_op = 0  # the op id of the last allocation in backward() (0: unknown)
        self._last_site: Optional[Key] = None  # its backward line, or None: the running line's self

    # ---------------------------------------------------------------- the user stack

    def call(self, key: Optional[Key]) -> None:
        """A user frame starts at line `key` (None: named by its first line event); its caller's line goes on."""
        self.stack.append(_Frame(key, self.live))
        self._distinct = None

    def move(self, key: Key) -> None:
        """The top frame moves to line `key`: the line it leaves is closed (its peak)."""
        if not self.stack:
            self.call(key)
            return
        top = self.stack[-1]
        self._close(top)
        top.key, top.start, top.self_max, top.incl_max = key, self.live, self.live, self.live
        self._distinct = None

    def ret(self) -> None:
        """The top frame has returned."""
        if self.stack:
            frame = self.stack.pop()
            self._distinct = None
            self._close(frame)
            if self.stack and frame.incl_max > self.stack[-1].incl_max:
                self.stack[-1].incl_max = frame.incl_max

    def _close(self, frame: _Frame) -> None:
        if frame.key is None or not self.counting:
            return
        rise = frame.self_max - frame.start
        c = self._figures(self.self_c, frame.key)
        if rise > c[PEAK]:
            c[PEAK] = rise
        rise = frame.incl_max - frame.start
        c = self._figures(self.incl_c, frame.key)
        if rise > c[PEAK]:
            c[PEAK] = rise

    def _stack_figures(self) -> List[Figures]:
        """The inclusive figures of the stack's distinct lines, cached until the stack changes."""
        distinct = self._distinct
        if distinct is None:
            seen = set()
            distinct = []
            for frame in self.stack:
                if frame.key is not None and frame.key not in seen:
                    seen.add(frame.key)
                    distinct.append(self._figures(self.incl_c, frame.key))
            self._distinct = distinct
        return distinct

    def _charge_inclusive(self, nbytes: int, freed: bool) -> None:
        if freed:
            for c in self._stack_figures():
                c[FREED] += nbytes
        else:
            for c in self._stack_figures():
                c[ALLOCATED] += nbytes
                c[ALLOCATIONS] += 1

    # ---------------------------------------------------------------- backward

    def backward_begin(self) -> None:
        self._last_op, self._last_site = 0, None
        self.in_backward += 1
        if self.in_backward == 1:
            self.backward_start = self.live

    def backward_end(self) -> None:
        self.in_backward = max(0, self.in_backward - 1)
        if not self.in_backward:
            self._settle(None)

    def _settle(self, site: Optional[Key]) -> None:
        """Charges backward frees waiting for a poll: to the backward line `site`, or to the running line."""
        freed, self._pending = self._pending, 0
        if not freed or not self.counting:
            return
        self.step_freed += freed
        if site is not None:
            self._figures(self.bw_c, site)[FREED] += freed
            self._charge_inclusive(freed, True)
        elif self.stack and self.stack[-1].key is not None:
            self._figures(self.self_c, self.stack[-1].key)[FREED] += freed
            self._charge_inclusive(freed, True)

    # ---------------------------------------------------------------- events

    def feed(self, events: Iterable[Tuple[int, ...]], returned: bool = False) -> None:
        """Charges a batch of events, in order. `returned`: the top frame returned before the batch began;
        frees up to its first allocation are its locals dying and are charged to it before it is popped (the
        dispatch path pops a returned frame at its first poll after the return)."""
        pending_return = returned
        if self.counting:
            self.step_batches.append(events)
        for event in events:  # (ptr, bytes, node, device[, op])
            ptr, size, node = event[0], event[1], event[2]
            op = event[4] if len(event) > 4 else 0
            if pending_return and size > 0:
                self.ret()
                pending_return = False
            if size > 0:
                self._allocated(event, ptr, size, node, op)
            elif size < 0:
                self._freed(ptr, op)
            elif self.in_backward and self._pending:  # (0, 0, node, -1): the engine's gradient sum, a poll
                self._settle(self.node_site(node) if node >= 0 else None)
        if pending_return:
            self.ret()

    def _allocated(self, event: Tuple[int, ...], ptr: int, size: int, node: int, op: int) -> None:
        self.live += size
        site = self.node_site(node) if node >= 0 and self.in_backward else None
        if self._pending:
            self._settle(site)
        self._last_op, self._last_site = op, site
        top = self.stack[-1] if self.stack else None
        if not self.in_backward:
            module = self.module
        elif site is not None and self.node_module is not None:
            module = self.node_module(node)
        else:
            module = None
        rec = self.records[ptr] = [size, site if site is not None else top.key if top is not None else None,
                                   self.epoch, None, False, None, module]
        if not self.counting:
            return
        self.step_records.append(rec)
        if module is not None:
            # The dispatch path's module charges: forward allocations to the running module, a node's
            # backward allocations to the module whose forward made it (none without the node's line).
            figures = self.module_c.get(module)
            if figures is None:
                figures = self.module_c[module] = [0, 0]
            figures[M_BACKWARD if self.in_backward else M_FORWARD] += size
        self.step_allocated += size
        if self.live > self.peak:
            self.peak = self.live
            self.peak_key = rec[R_SITE]
            self.peak_event = event
            self.peak_batch = len(self.step_batches) - 1
            # The event's grad mode (take(True)'s sixth item; absent: on), as the dispatch path's phase().
            self.peak_phase = ("backward" if self.in_backward else
                               "other" if len(event) > 5 and not event[5] else "forward")
        if top is not None and self.live > top.incl_max:
            top.incl_max = self.live
        if site is not None:
            c = self._figures(self.bw_c, site)
            c[ALLOCATED] += size
            c[ALLOCATIONS] += 1
            rise = self.live - self.backward_start
            if rise > c[PEAK]:
                c[PEAK] = rise
            self._charge_inclusive(size, False)
            return
        if top is None:
            return
        if self.live > top.self_max and not self.in_backward:
            top.self_max = self.live
        if top.key is not None:
            c = self._figures(self.self_c, top.key)
            c[ALLOCATED] += size
            c[ALLOCATIONS] += 1
            self._charge_inclusive(size, False)

    def _freed(self, ptr: int, op: int) -> None:
        rec = self.records.pop(ptr, None)
        if rec is None:
            return  # allocated before the stream began: neither its size nor its line is known
        self.live -= rec[0]
        if not self.counting:
            return
        if self.in_backward:
            self._pending += rec[0]
            if op != 0 and op == self._last_op:  # inside the op that made the last allocation: polled with it
                self._settle(self._last_site)
            return
        self.step_freed += rec[0]
        if self.stack and self.stack[-1].key is not None:
            self._figures(self.self_c, self.stack[-1].key)[FREED] += rec[0]
            self._charge_inclusive(rec[0], True)

    # ---------------------------------------------------------------- the step's peak

    def start_step(self, phase: str) -> Dict[int, Record]:
        """A counted step begins in `phase`: its peak starts at the live level; returns the live records (a
        copy), from which live_at_peak replays."""
        self.step_allocated = self.step_freed = 0
        self.peak = self.live
        self.peak_key = None
        self.peak_event = None
        self.peak_batch = -1
        self.peak_phase = phase
        self.step_batches = []
        self.step_records = []
        return dict(self.records)

    def live_at_peak(self, start: Dict[int, Record]) -> List[Record]:
        """The records live when the step reached its peak: `start` (start_step's copy) with the step's
        allocations up to the peak's event and without the blocks freed before it."""
        live = dict(start)
        if self.peak_event is None:
            return list(live.values())
        made = iter(self.step_records)
        peak_event, last = self.peak_event, self.peak_batch
        for index, batch in enumerate(self.step_batches[: last + 1]):
            for event in batch:
                size = event[1]
                if size > 0:
                    live[event[0]] = next(made)
                    if event is peak_event and index == last:
                        return list(live.values())
                elif size < 0:
                    live.pop(event[0], None)
        return list(live.values())

    @staticmethod
    def _figures(table: Dict[Key, List[int]], key: Key) -> List[int]:
        c = table.get(key)
        if c is None:
            c = table[key] = [0, 0, 0, 0]
        return c
