"""The interface of the measurements that ride along a profile without being part of the tracker's ledger
(workers.WorkerWatch, nograd.NoBackwardWatch, kernels.KernelWatch): told of every step boundary by the
runner, each adds its own fields to the report once the run is over."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Protocol


class StepObserver(Protocol):
    def step_begin(self, profiled: Optional[int]) -> None:
        """A step starts; `profiled` is its index among profiled steps, None in warmup."""

    def step_end(self, profiled: Optional[int]) -> None:
        """The step that began with the same `profiled` ended."""

    def contribute(self, report: Dict[str, Any], code_of: Callable[[str, int], str]) -> None:
        """Adds this observer's fields (and notes) to the finished report; `code_of(file, line)` is the
        stripped source line."""
