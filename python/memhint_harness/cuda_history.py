"""The CUDA caching allocator's own history, as the trace backend reads it (issue #17).

`torch.cuda.memory._record_memory_history(stacks="python")` makes the allocator log every alloc and free with
the Python frames that made it, in C++: no Python runs per op. This module switches that log on, takes what
it holds (and clears it) at the harness's checkpoints, which are outside the user's timed step, and puts
markers into it around backward(): autograd's device threads allocate with no Python stack, so the markers
are what tells a backward allocation from any other frameless one.

A marker is one tiny allocation, freed at once, made by `_backward_begins` / `_backward_ends` below; the
allocator logs it with this file's frames, which is how `marker_kind` recognises it. It costs one cached
block (about 1 us), once per backward() call, and the trace backend drops it from every figure.

`for_torch` is the one place the backend gets its memory API from: tests replace it with a fake in
torch's exact snapshot format, so the whole harness path runs without a GPU."""
from __future__ import annotations

import inspect
import os
from typing import Any, Callable, Dict, List, Optional, Sequence

MARK_BYTES = 1  # the allocator rounds it up to one 512-byte block
MAX_ENTRIES = 2_000_000  # per checkpoint interval; the log is cleared at every checkpoint
_THIS_FILE = os.path.normcase(os.path.abspath(__file__).replace(".pyc", ".py"))
_MARKERS = {"_backward_begins": "begin", "_backward_ends": "end"}


def unsupported(memory: Any) -> Optional[str]:
    """Why this torch's allocator history cannot feed the trace backend, or None when it can. Feature
    detection, not a version test: the backend needs Python stacks and a history it can clear (torch >= 2.1
    has the first; clear_history came later)."""
    record = getattr(memory, "_record_memory_history", None)
    if record is None or not hasattr(memory, "_snapshot"):
        return "torch.cuda.memory has no _record_memory_history/_snapshot"
    try:
        parameters = inspect.signature(record).parameters
    except (TypeError, ValueError):
        return "the signature of torch.cuda.memory._record_memory_history cannot be read"
    missing = [name for name in ("stacks", "clear_history", "max_entries") if name not in parameters]
    if missing:
        return "torch.cuda.memory._record_memory_history has no %s parameter" % "/".join(missing)
    return None


class AllocatorHistory:
    """Switches the allocator's history on, reads and clears it, and marks backward windows in it."""

    def __init__(self, memory: Any, empty: Callable[[int], Any], device: int = 0):
        self._memory = memory
        self._empty = empty  # allocates n bytes on the profiled device
        self.device = device
        self.recording = False

    def start(self) -> None:
        self._memory._record_memory_history(enabled="all", context="all", stacks="python",
                                            max_entries=MAX_ENTRIES, clear_history=True)
        self.recording = True

    def stop(self) -> None:
        if self.recording:
            self._memory._record_memory_history(enabled=None)
            self.recording = False

    def take(self) -> List[Dict[str, Any]]:
        """The events logged since the last take (or start), oldest first; the log is cleared."""
        snapshot = self._memory._snapshot()
        traces = snapshot.get("device_traces") or []
        entries = list(traces[self.device]) if self.device < len(traces) else []
        self.start()  # clear_history=True: the next take starts after this one
        return entries

    # The two markers: their names are what marker_kind looks for in the logged frames.
    def _backward_begins(self) -> None:
        self._empty(MARK_BYTES)

    def _backward_ends(self) -> None:
        self._empty(MARK_BYTES)


def marker_kind(frames: Sequence[Dict[str, Any]]) -> Optional[str]:
    """"begin" / "end" for the events of a backward marker (its alloc and free), None for anything else."""
    for frame in frames:
        kind = _MARKERS.get(frame.get("name", ""))
        if kind is not None and os.path.normcase(os.path.abspath(str(frame.get("filename", "")))) == _THIS_FILE:
            return kind
    return None


def for_torch(torch: Any) -> AllocatorHistory:
    """The history of the current CUDA device of `torch`."""
    device = torch.cuda.current_device()

    def empty(nbytes):
        return torch.empty(nbytes, dtype=torch.uint8, device=torch.device("cuda", device))

    return AllocatorHistory(torch.cuda.memory, empty, device)
