"""Per-line CUDA memory from the caching allocator's own trace, with no Python on any op (issue #17).

`torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python")` makes the
allocator record every alloc / free with the Python frames that made it, in C++ (about 2 us per event).
`torch.cuda.memory._snapshot()["device_traces"][device]` is then a list of TraceEntry dicts:

    {"action": "alloc" | "free_requested" | "free_completed" | "segment_alloc" | "segment_free" | "oom"
               | "snapshot",
     "addr": int, "size": int, "stream": int, "frames": [{"filename": str, "line": int, "name": str}, ...]}

with frames innermost first (torch/cuda/_memory_viz.py reverses them to draw flame graphs root first).
This module turns such a list into memhint's per-line figures, with the same conventions as the CPU
backend (tracker.py): an allocation is charged to the innermost user frame ("self") and once to every
distinct user line on the stack ("inclusive"); a free to the user line running when it happened. Events
with no user frame inside a backward window (autograd's device threads carry no Python stack) go to the
line that called backward(). The live level follows `free_completed` (when the block can be reused, as
torch.cuda.memory_allocated() counts it).

Pure functions over the recorded structure: unit-tested on CPU with snapshots in torch's exact format;
test/gpu/check_trace.py runs them on a real GPU against the CPU backend's figures.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

Site = Tuple[str, int]

ALLOC = "alloc"
FREE = "free_completed"


class LineFigures:
    __slots__ = ("allocated", "freed", "allocations", "inclusive_allocated", "inclusive_allocations",
                 "backward_allocated", "backward_freed", "backward_allocations")

    def __init__(self) -> None:
        self.allocated = 0
        self.freed = 0
        self.allocations = 0
        self.inclusive_allocated = 0
        self.inclusive_allocations = 0
        self.backward_allocated = 0
        self.backward_freed = 0
        self.backward_allocations = 0

    def as_dict(self) -> Dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


class TraceFigures:
    """What one pass over a device trace found."""

    def __init__(self) -> None:
        self.lines: Dict[Site, LineFigures] = {}
        self.peak = 0  # highest live level reached, relative to the level before the first event
        self.peak_site: Optional[Site] = None
        self.peak_index = -1
        self.unattributed_allocated = 0
        self.unmatched_frees = 0  # frees of blocks allocated before the trace began

    def line(self, site: Site) -> LineFigures:
        found = self.lines.get(site)
        if found is None:
            found = self.lines[site] = LineFigures()
        return found


def user_sites(frames: Sequence[Dict[str, Any]], is_user: Callable[[str], bool]) -> List[Site]:
    """(file, line) of the user's frames, innermost first."""
    return [(frame["filename"], int(frame["line"])) for frame in frames
            if frame.get("filename") and is_user(frame["filename"])]


def attribute(entries: Iterable[Dict[str, Any]], is_user: Callable[[str], bool],
              backward_windows: Sequence[Tuple[int, int, Site]] = ()) -> TraceFigures:
    """Per-line figures of a device trace. `backward_windows`: (first, last) entry indices (inclusive) of
    each backward() call and the user line that made it, as the harness marks them."""
    figures = TraceFigures()
    live = 0
    sizes: Dict[int, Tuple[int, Optional[Site]]] = {}  # addr -> (size, allocating site) of live blocks
    windows = sorted(backward_windows)
    window_at = 0
    for index, entry in enumerate(entries):
        action = entry.get("action")
        if action not in (ALLOC, FREE):
            continue
        while window_at < len(windows) and windows[window_at][1] < index:
            window_at += 1
        backward_site: Optional[Site] = None
        if window_at < len(windows) and windows[window_at][0] <= index:
            backward_site = windows[window_at][2]
        sites = user_sites(entry.get("frames") or (), is_user)
        size = int(entry["size"])
        if action == ALLOC:
            live += size
            if sites:
                site: Optional[Site] = sites[0]
                top = figures.line(sites[0])
                top.allocated += size
                top.allocations += 1
                for distinct in dict.fromkeys(sites):
                    line = figures.line(distinct)
                    line.inclusive_allocated += size
                    line.inclusive_allocations += 1
            elif backward_site is not None:
                site = backward_site
                line = figures.line(backward_site)
                line.backward_allocated += size
                line.backward_allocations += 1
            else:
                site = None
                figures.unattributed_allocated += size
            sizes[int(entry["addr"])] = (size, site)
            if live > figures.peak:
                figures.peak, figures.peak_site, figures.peak_index = live, site, index
        else:
            known = sizes.pop(int(entry["addr"]), None)
            if known is None:
                figures.unmatched_frees += 1
            live -= size
            if sites:
                figures.line(sites[0]).freed += size
            elif backward_site is not None:
                figures.line(backward_site).backward_freed += size
    return figures


def device_trace(snapshot: Dict[str, Any], device: int = 0) -> List[Dict[str, Any]]:
    """The event list of one device in a `torch.cuda.memory._snapshot()` result ([] when none)."""
    traces = snapshot.get("device_traces") or []
    return list(traces[device]) if device < len(traces) else []
