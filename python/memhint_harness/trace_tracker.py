"""The CUDA backend's trace path (issue #17): the allocator's own history instead of a Python dispatch mode.

No Python runs per op. The allocator logs every alloc / free with its Python frames (cuda_history.py); at
the harness's checkpoints, which lie outside the user's timed step (step start, step end, a step boundary,
an OOM), the log is read, cleared and replayed into the same ledger, per-line accumulators, step events and
timeline the dispatch path fills, so that runner.py, analysis.py and report.py build the same report.

Conventions, as in tracker.py: an allocation is charged to the innermost user frame of its stack (self)
and once to every distinct user line on it (inclusive); a free to the user line running when it happened.
Frameless events between the backward markers are autograd's device threads: charged as backward memory
of the line that called backward() (the dispatch path can name the forward line of each graph node; the
allocator's log cannot), and inclusively to that line's stack. Per-line peaks are the rise of the live
level over a run of consecutive events of the line (an execution that allocates nothing is invisible).

Blocks are the ledger's records, keyed by their device address (StorageRec.cdata): a storage's data_ptr is
its block's address, which is how parameters, gradients, optimizer state and step inputs are recognised.
"""
from __future__ import annotations

import bisect
import threading
import time
from time import perf_counter
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .analysis import State
from .cuda_history import marker_kind
from .records import UNTRACKED, StorageRec
from .tracker import Tracker

_get_ident = threading.get_ident
BLOCK = 512  # the caching allocator's rounding of every block size
Site = Tuple[str, int, str]


def _rounded(nbytes: int) -> int:
    return (nbytes + BLOCK - 1) // BLOCK * BLOCK


class TraceTracker(Tracker):
    def __init__(self, storage_api, user_files, history, baseline_bytes: int, budget=None):
        # No C expiry scan here: no op runs Python on this path, so the ledger is scanned rarely, and its
        # calibration allocates a tensor of its own, which an allocator that logs every allocation (the
        # tests' fake CUDA allocator) would record beside the baseline read just before (512 B off the peak).
        super().__init__(storage_api, user_files, "cuda", budget=budget, cuda_lines=True, c_expiry=False)
        self.history = history  # cuda_history.AllocatorHistory, recording
        self._origin_epoch_ms = time.time() * 1000.0 - (perf_counter() - self.t0) * 1000.0
        self._last_take_ms = self.now_ms()
        # Blocks allocated before the history began, addresses unknown: one record, lowered by their frees.
        self._baseline = StorageRec(0, 0, None, baseline_bytes, UNTRACKED, -1, None, 0.0)
        self.live_bytes = baseline_bytes
        self._window: Optional[Tuple[Optional[Site], List[Site], int]] = None  # open backward() window
        self._backward_seen = False  # a backward window opened in this step
        self._forward_blocks: set = set()  # serials of the blocks this step allocated before its backward
        self._self_run: Optional[Tuple[Site, int]] = None  # (line, live before its run of events)
        self._incl_runs: Dict[Tuple[str, int], int] = {}
        self._user_cache: Dict[str, bool] = {}

    # ----------------------------------------------------------------- the dispatch path's hooks, replaced

    def poll(self, full=True):
        # Frees come from the allocator's log; only the line tracer's deferred frame pops remain.
        if self.returning and _get_ident() == self.main_thread:
            self.tracer.pop_returned()

    def backward_begin(self):
        trace = self.pause_tracing()
        try:
            if not self.in_backward and not self.disabled:
                self.guard(self.history._backward_begins)
            self.in_backward += 1
        finally:
            self.resume_tracing(trace)

    def backward_end(self):
        trace = self.pause_tracing()
        try:
            self.in_backward -= 1
            if not self.in_backward and not self.disabled:
                self.guard(self.history._backward_ends)
        finally:
            self.resume_tracing(trace)

    def step_begin(self, profiled_index):
        self.catch_up()
        self._backward_seen = False
        self._forward_blocks = set()
        self._self_run = None
        self._incl_runs = {}
        super().step_begin(profiled_index)
        if profiled_index is not None and self._baseline.nbytes > 0:
            self.step_start_sizes[self._baseline] = self._baseline.nbytes

    def step_end(self):
        self.catch_up()  # in_step is still set: the step's events are charged
        return super().step_end()

    def on_op_error(self, func, error):
        self.catch_up()  # the live blocks at the failing allocation
        super().on_op_error(func, error)

    def register_existing(self, tensor, hint=None, site=None):
        """The block of a tensor's storage (by address), for kinds; a device tensor allocated before the
        history began gets a record (its bytes are in the baseline already)."""
        try:
            storage = self._storage_of(tensor)
            address, nbytes = storage.data_ptr(), storage.nbytes()
        except Exception:  # storage-less tensors
            return None
        if not address:
            return None
        rec = self.live.get(address)
        if rec is None:
            if not self._on_device(tensor):
                return None
            rec = self._containing(address)
        if rec is None and nbytes > 0:
            self.serial += 1
            rec = StorageRec(self.serial, address, None, _rounded(nbytes), site or UNTRACKED, self.epoch, None,
                             self.now_ms())
            self.ledger.remember(rec)
            self._baseline.nbytes = max(self._baseline.nbytes - rec.nbytes, 0)
        if rec is not None and hint is not None and rec.hint is None:
            rec.hint = hint
        return rec

    def _containing(self, address: int) -> Optional[StorageRec]:
        """The live block whose range holds `address` (a storage inside a larger block)."""
        starts = sorted(self.live)
        index = bisect.bisect_right(starts, address) - 1
        if index < 0:
            return None
        rec = self.live[starts[index]]
        return rec if address < rec.cdata + rec.nbytes else None

    # ----------------------------------------------------------------- replay

    def catch_up(self):
        """Reads and clears the allocator's log and replays it (a checkpoint)."""
        if self.disabled or not self.history.recording:
            return
        self.guard(self._catch_up)

    def _catch_up(self):
        entries = self.history.take()
        start, end = self._last_take_ms, self.now_ms()
        self._last_take_ms = end
        count = len(entries)
        for index, entry in enumerate(entries):
            action = entry.get("action")
            if action != "alloc" and action != "free_completed":
                continue
            frames = entry.get("frames") or ()
            kind = marker_kind(frames)
            if kind is not None:
                if action == "alloc":  # each marker logs an alloc and its free: acted on once
                    self._mark(kind, self._sites(frames))
                continue
            t = self._time_of(entry, index, count, start, end)
            if action == "alloc":
                self._alloc(int(entry["addr"]), int(entry["size"]), self._sites(frames), t)
            else:
                self._free(int(entry["addr"]), int(entry["size"]), self._sites(frames), t)

    def _sites(self, frames: Sequence[Dict[str, Any]]) -> List[Site]:
        """(file, line, function) of the user's frames, innermost first."""
        cache = self._user_cache
        found = []
        for frame in frames:
            file = frame.get("filename")
            if not file:
                continue
            user = cache.get(file)
            if user is None:
                user = cache[file] = self.user_files.is_user(file)
            if user:
                found.append((file, int(frame["line"]), str(frame.get("name", ""))))
        return found

    def _time_of(self, entry, index, count, start, end):
        """ms since t0: the entry's own time (torch >= 2.2 logs time_us, Unix time), else spread evenly
        over the interval since the last checkpoint."""
        stamp = entry.get("time_us")
        if isinstance(stamp, (int, float)) and stamp > 0:
            return min(max(stamp / 1000.0 - self._origin_epoch_ms, start), end)
        return start + (end - start) * (index + 1) / (count + 1)

    def _mark(self, kind, sites):
        if kind == "begin":
            self._window = (sites[0] if sites else None, sites, self.live_bytes)
            if self.in_step:
                self._backward_seen = True
        else:
            self._window = None

    def _alloc(self, address, size, sites, t):
        stale = self.live.get(address)
        if stale is not None:  # its free fell out of the log: retired unseen
            self.ledger.forget(stale)
            self.live_bytes -= stale.nbytes
        window = self._window
        backward = window is not None and not sites
        site = sites[0] if sites else (window[0] if backward else None)
        self.serial += 1
        rec = StorageRec(self.serial, address, None, size, site or UNTRACKED, self.epoch, self.step_index, t)
        self.ledger.remember(rec)
        live_before = self.live_bytes
        live = self.live_bytes = live_before + size
        if self.events is not None:
            self.events.append((rec, size))
            self.timeline.append((t, live))
        if self.budget is not None and self.budget_hit is None and live > self.budget:
            self.budget_hit = (rec.site, live, self.step_index)
        if not self.in_step:
            return
        if not self._backward_seen:
            self._forward_blocks.add(rec.serial)
        if sites:
            self._name(sites)
            top = self._acc(sites[0][:2]).self_c
            top[0] += size
            top[3] += 1
            self._charge_inclusive(sites, size, 0, count=True)
        elif backward:
            stack = window[1]
            if site is not None:
                counters = self._acc(site[:2]).bw_c
                counters[0] += size
                counters[3] += 1
                counters[2] = max(counters[2], live - window[2])
            self._charge_inclusive(stack, size, 0, count=True)
        self._runs(sites if sites else (window[1] if backward else None), bool(sites), live_before, live)
        if live > self.step_peak:
            self.step_peak = live
            self.step_peak_at = t
            self.step_peak_index = len(self.events or ())
            self.step_peak_site = rec.site
            self.step_peak_phase = ("backward" if window is not None
                                    else "other" if self._backward_seen else "forward")

    def _free(self, address, size, sites, t):
        rec = self.live.get(address)
        if rec is not None:
            self.ledger.forget(rec)
            if (self._window is not None and rec.epoch == self.epoch and self.in_step
                    and rec.serial in self._forward_blocks):
                # Allocated by this step's forward, freed by its backward: what autograd saved (activation).
                rec.saved = True
        else:
            rec = self._baseline
            self._baseline.nbytes = max(self._baseline.nbytes - size, 0)
        live_before = self.live_bytes
        live = self.live_bytes = live_before - size
        if self.events is not None:
            self.events.append((rec, -size))
            self.timeline.append((t, live))
        if not self.in_step:
            return
        window = self._window
        if sites:
            self._name(sites)
            self._acc(sites[0][:2]).self_c[1] += size
            self._charge_inclusive(sites, size, 1, count=False)
        elif window is not None:
            if window[0] is not None:
                self._acc(window[0][:2]).bw_c[1] += size
            self._charge_inclusive(window[1], size, 1, count=False)
        self._runs(sites if sites else (window[1] if window is not None else None), bool(sites),
                   live_before, live)

    def _name(self, sites):
        funcs = self.funcs
        for file, line, function in sites:
            if (file, line) not in funcs:
                funcs[file, line] = function

    def _charge_inclusive(self, sites, size, column, count):
        for key in dict.fromkeys(site[:2] for site in sites):
            counters = self._acc(key).incl_c
            counters[column] += size
            if count:
                counters[3] += 1

    def _runs(self, stack, own, live_before, live):
        """Per-line peaks over runs of consecutive events: a line's run starts at the live level before its
        first event and its peak is the highest rise above that level while the run lasts. `own`: the
        events are the top line's own (not backward's)."""
        if stack is None:
            return  # a frameless event outside backward (another thread): no line's run is interrupted
        top = stack[0][:2] if own and stack else None
        run = self._self_run
        if top is None:
            self._self_run = None
        else:
            if run is None or run[0] != top:
                run = self._self_run = (top, live_before)
            counters = self._acc(top).self_c
            counters[2] = max(counters[2], live - run[1])
        keys = set(site[:2] for site in stack)
        runs = self._incl_runs
        for key in [key for key in runs if key not in keys]:
            del runs[key]
        for key in keys:
            start = runs.setdefault(key, live_before)
            counters = self._acc(key).incl_c
            counters[2] = max(counters[2], live - start)


class TraceState(State):
    """analysis.State over the trace tracker: the log is replayed before each step boundary's leak check, so
    the live blocks are those of that moment."""

    def epoch_boundary(self, starting_epoch, complete=True):
        self.tracker.catch_up()
        return super().epoch_boundary(starting_epoch, complete)


NOTES = (
    "cuda trace path: per-line figures come from the CUDA caching allocator's own history "
    "(torch.cuda.memory._record_memory_history with Python stacks), with no Python on any op; sizes are "
    "allocator blocks (rounded up to 512 bytes). Not measured on this path: saved-for-backward bytes per line, "
    "per-module figures, kernel workspaces, leaked autograd graphs and the names of what holds a leak (run with "
    "--cuda-path dispatch for them). Backward memory is "
    "charged to the line that called backward(), not to the forward line of each graph node; 'activation' at "
    "the peak means a block allocated by the step's forward and freed by its backward.",
)

