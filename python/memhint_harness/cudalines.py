"""CUDA allocator figures per source line: allocated/reserved deltas and the peak within each line.

The allocator's peak statistics are reset at every line start, so the peak a line reaches is its own; the
run's maxima are therefore kept here (cudainfo reads them instead of the allocator's reset figures)."""
from __future__ import annotations

from typing import Dict, List, Tuple

import torch


class CudaLineMeter:
    def __init__(self, now_ms):
        self._now_ms = now_ms
        self._open: Dict[int, Tuple[int, int]] = {}  # id(Frame) -> (allocated, reserved) at its line start
        self.series: Tuple[List[float], List[int], List[int]] = ([], [], [])  # times, allocated, reserved
        self.max_allocated = 0
        self.max_reserved = 0

    def line_start(self, top):
        cuda = torch.cuda
        state = (cuda.memory_allocated(), cuda.memory_reserved())
        cuda.reset_peak_memory_stats()
        self._open[id(top)] = state
        series = self.series
        series[0].append(self._now_ms())
        series[1].append(state[0])
        series[2].append(state[1])

    def line_end(self, top, acc):
        state = self._open.pop(id(top), None)
        if state is None:
            return
        cuda = torch.cuda
        allocated, reserved = cuda.memory_allocated(), cuda.memory_reserved()
        if acc.cuda is None:
            acc.cuda = [0, 0, 0]
        acc.cuda[0] += allocated - state[0]
        acc.cuda[1] += reserved - state[1]
        peak_allocated = cuda.max_memory_allocated()
        self.max_allocated = max(self.max_allocated, peak_allocated)
        self.max_reserved = max(self.max_reserved, cuda.max_memory_reserved())
        rise = peak_allocated - state[0]
        if rise > acc.cuda[2]:
            acc.cuda[2] = rise
