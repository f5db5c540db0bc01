"""Lines whose ops allocate memory inside their kernels, where the CPU accounting cannot see it.

The dispatch mode sees the tensors an op returns. Some kernels also allocate scratch memory of their own and
free it before returning: convolution (im2col column buffers, oneDNN scratchpads and weight reorders, cuDNN
workspaces), oneDNN's and cuDNN's fused RNN layers (LSTM/GRU gates and workspaces). None of it is a tensor
the op returns, so a line that runs them allocates more than its figures say: against torch.profiler's
memory view, allocation volume was under-counted by 13-55% on ResNet and LSTM (issue 14). The harness lists
those lines (report.kernelWorkspaces) and says so in a note. On CUDA the workspaces come from the caching
allocator, so each line's `cuda` figures (memory_allocated at the line's boundaries, its peak inside the
line) include them.

The check is one set lookup per op in the dispatch mode (tracker.watched_ops, keyed by OpOverload._op); only
matching ops call here.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, FrozenSet, List, Tuple

# aten op packets whose kernels allocate internally, forward ops only: each one's backward kernel
# (convolution_backward, mkldnn_rnn_layer_backward, ...) has workspaces too and belongs to the same line,
# which torch 1.13 cannot tell during backward (no torch._C._current_autograd_node). torch 1.13's CPU LSTM is
# made of ordinary ops (addmm, sigmoid, ...) that return everything they allocate: no packet of it here.
WORKSPACE_OPS = (
    "convolution", "_convolution", "mkldnn_convolution", "cudnn_convolution", "cudnn_convolution_transpose",
    "miopen_convolution", "mkldnn_rnn_layer", "_cudnn_rnn", "miopen_rnn",
)


def watched_overloads(aten: Any) -> FrozenSet[Any]:
    """Every overload of WORKSPACE_OPS that this torch has (torch.ops.aten is given: `aten`)."""
    found = set()
    for name in WORKSPACE_OPS:
        try:
            packet = getattr(aten, name)
            names = packet.overloads()
        except (AttributeError, RuntimeError):
            continue  # not in this torch
        for overload in names:
            try:
                found.add(getattr(packet, overload))
            except (AttributeError, RuntimeError):
                continue
    return frozenset(found)


class LineKernels:
    __slots__ = ("site", "ops", "calls")

    def __init__(self, site: Tuple[str, int, str]):
        self.site = site
        self.ops: Dict[str, None] = {}  # ordered set of op names
        self.calls = 0


class KernelWatch:
    """Step observer; `on_op(func)` is the tracker's op_hook for the ops in watched_ops."""

    def __init__(self, tracker, backend: str):
        self.tracker = tracker
        self.backend = backend
        self.lines: Dict[Tuple[str, int], LineKernels] = {}

    def on_op(self, func: Any) -> None:
        """A watched op ran in forward (or under no_grad): charged to the running user line."""
        tracker = self.tracker
        if not tracker.in_step or tracker.in_backward:
            return
        site = tracker.current_site()
        if site is None:
            return
        record = self.lines.get(site[:2])
        if record is None:
            record = self.lines[site[:2]] = LineKernels(site)
        record.ops[str(func)] = None
        record.calls += 1

    def step_begin(self, profiled) -> None:
        pass

    def step_end(self, profiled) -> None:
        pass

    def contribute(self, report: Dict[str, Any], code_of: Callable[[str, int], str]) -> None:
        lines: List[Dict[str, Any]] = []
        for (file, line), record in sorted(self.lines.items()):
            lines.append({"file": file, "line": line, "function": record.site[2], "code": code_of(file, line),
                          "ops": list(record.ops), "calls": record.calls})
        report["kernelWorkspaces"] = lines
        if lines:
            report["notes"].append(workspace_note(lines, self.backend))


def workspace_note(lines: List[Dict[str, Any]], backend: str) -> str:
    where = ", ".join("%s:%d" % (os.path.basename(entry["file"]), entry["line"]) for entry in lines[:5])
    if len(lines) > 5:
        where += " and %d more" % (len(lines) - 5)
    text = ("%s %s convolution or fused RNN (oneDNN/cuDNN) kernels, which allocate workspaces inside the kernel, "
            "forward and backward (im2col buffers, scratchpads, weight reorders): they are not tensors the ops "
            "return, so " % (where, "runs" if len(lines) == 1 else "run"))
    if backend == "meta":  # memhint predict
        return text + "the prediction leaves them out: on the GPU they come on top of these lines' predicted figures"
    if backend == "cuda":
        return text + ("the tracked figures of these lines leave them out; the lines' cuda figures (the caching "
                       "allocator's) include them")
    return text + ("these lines' allocation volume and peaks are under-counted on CPU (13-55% less allocation "
                   "volume than torch.profiler measured on ResNet and LSTM)")
