"""CUDA allocator figures per source line: allocated/reserved deltas and the peak within each line.

The allocator's peak statistics are reset at every line start, so the peak a line reaches is its own; the
run's maxima are therefore kept here (cudainfo reads them instead of the allocator's reset figures).

Cost: this runs at every user line boundary. `torch.cuda.memory_allocated()` and its siblings each call
`memory_stats()`, which flattens the allocator's whole nested statistics dict in Python (measured on an
H200: the dispatch path cost 96-216 us per op with six such calls per line); one raw
`torch._C._cuda_memoryStats(device)` per boundary gives the same four figures."""
from __future__ import annotations

from typing import Dict, List, Tuple

import torch


def _raw_stats():
    """() -> (allocated, reserved, peak allocated, peak reserved) of the current device, in one C call where
    this torch has it (the nested dict memory_stats() flattens), else through the public functions."""
    raw = getattr(torch._C, "_cuda_memoryStats", None)
    if raw is None:
        cuda = torch.cuda

        def public():
            return (cuda.memory_allocated(), cuda.memory_reserved(), cuda.max_memory_allocated(),
                    cuda.max_memory_reserved())
        return public
    current_device = torch.cuda.current_device

    def stats():
        nested = raw(current_device())
        allocated, reserved = nested["allocated_bytes"]["all"], nested["reserved_bytes"]["all"]
        return allocated["current"], reserved["current"], allocated["peak"], reserved["peak"]
    return stats


class CudaLineMeter:
    def __init__(self, now_ms):
        self._stats = _raw_stats()
        self._reset_peaks = getattr(torch._C, "_cuda_resetPeakMemoryStats", None)
        self._now_ms = now_ms
        self._open: Dict[int, Tuple[int, int]] = {}  # id(Frame) -> (allocated, reserved) at its line start
        self.series: Tuple[List[float], List[int], List[int]] = ([], [], [])  # times, allocated, reserved
        self.max_allocated = 0
        self.max_reserved = 0

    def line_start(self, top):
        state = self._stats()[:2]
        if self._reset_peaks is not None:
            self._reset_peaks(torch.cuda.current_device())
        else:
            torch.cuda.reset_peak_memory_stats()
        self._open[id(top)] = state
        series = self.series
        series[0].append(self._now_ms())
        series[1].append(state[0])
        series[2].append(state[1])

    def line_end(self, top, acc):
        state = self._open.pop(id(top), None)
        if state is None:
            return
        allocated, reserved, peak_allocated, peak_reserved = self._stats()
        if acc.cuda is None:
            acc.cuda = [0, 0, 0]
        acc.cuda[0] += allocated - state[0]
        acc.cuda[1] += reserved - state[1]
        self.max_allocated = max(self.max_allocated, peak_allocated)
        self.max_reserved = max(self.max_reserved, peak_reserved)
        rise = peak_allocated - state[0]
        if rise > acc.cuda[2]:
            acc.cuda[2] = rise
