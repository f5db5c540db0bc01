"""The tracker's records: one per live storage, one per source line, one per active user frame.

Plain slotted classes: they are created on the per-op and per-call hot paths, and the report reads them
after the run."""
from __future__ import annotations

from typing import Optional, Tuple

# node.metadata keys of autograd nodes: the forward line (file, line, function) and module that made them.
NODE_KEY = "memhint_site"
MODULE_KEY = "memhint_module"
UNTRACKED = ("<untracked>", 0, "")


class LineAcc:
    """What one source line did over the profiled steps."""

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
    """One live storage: who allocated it, when, and what it has become (saved, parameter, ...)."""

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
