"""FSDP's collectives in one rank, attributed to the user's line and the FSDP unit (module) they serve.

FSDP allocates, through torch, a full-size buffer per unit for each all-gather (the unit's parameters,
gathered before its forward and again before its backward) and for each reduce-scatter (the unit's
unsharded gradient, scattered back to the shard after its backward). The profiler counts those bytes on
the user's line that ran the unit (`out = model(x)`, `loss.backward()`), mixed with the activations and
gradients of that line. This module wraps torch.distributed's tensor collectives so that every call is
described by what it moved and for whom: the operation, the buffer's bytes (the gathered output of an
all-gather, the unsharded input of a reduce-scatter), forward or backward, the user's line, and the FSDP
unit whose frame issued it (FSDP1: the FlatParamHandle's module; FSDP2: the FSDPParamGroup's module fqn).
One JSON object per call is appended to the rank's file (`profile --nproc-per-node`), or kept in `records`
for the prediction's report (`predict --world-sizes`, predict/ranks.py: the same wrappers over the fake
process group, sizes from the meta tensors); the CLI aggregates them per line and unit.
Each record also says which step issued it (the runner tells this log of step boundaries, as an
observers.StepObserver): a profiled step's index, a warmup step, or outside any step (the script's own
code around the step function), so that the CLI can give calls per profiled step, not per run.

The wrappers look up nothing but frames and tensor sizes, and never change the call: a failure to describe
a call is written as the record's error, the collective runs as the user's code asked.
"""
import json
import os
import sys

# torch.distributed entry points FSDP (1 and 2) uses for its buffers, by operation. Older aliases call the
# newer ones through module globals, so a depth guard keeps one record per user-visible call.
# FSDP1 on CPU gathers into a list of views of its padded flat parameter (`all_gather(list, shard)`).
_ALL_GATHER = ("all_gather_single", "all_gather_into_tensor", "_all_gather_base", "all_gather")
_REDUCE_SCATTER = ("reduce_scatter_single", "reduce_scatter_tensor", "_reduce_scatter_base")


_TORCH_DIR = os.sep + "torch" + os.sep


def _nbytes(tensor):
    if isinstance(tensor, (list, tuple)):  # all_gather's output list
        return sum(_nbytes(part) for part in tensor)
    return int(tensor.numel()) * int(tensor.element_size())


class CollectiveLog:
    """Wraps the collectives once per rank; `names` maps id(module) -> qualified name for FSDP1 units.
    `path`: the rank's file, one JSON object a line; None keeps the records in `records` instead."""

    def __init__(self, path, user_frame):
        self.path = path
        self.records = []
        self.user_frame = user_frame
        self.names = {}
        self._depth = 0
        self._in_step = False
        self._step = None  # the profiled step's index; None in warmup (and outside steps)

    # observers.StepObserver: the runner's step boundaries
    def step_begin(self, profiled):
        self._in_step = True
        self._step = profiled

    def step_end(self, profiled):
        self._in_step = False
        self._step = None

    def contribute(self, report, code_of):
        """The records go to the rank's own file, not the report."""

    def install(self, patch=setattr):
        """`patch(owner, name, value)` replaces each entry point (the prediction's records what to restore)."""
        try:
            import torch.distributed as dist
            from torch.distributed import distributed_c10d
        except Exception:  # noqa: BLE001 - torch without torch.distributed: nothing to describe
            return
        if not dist.is_available():
            return
        for op, names in (("all_gather", _ALL_GATHER), ("reduce_scatter", _REDUCE_SCATTER)):
            for name in names:
                original = getattr(distributed_c10d, name, None)
                if original is None:
                    continue
                wrapped = self._wrap(op, original)
                for owner in (distributed_c10d, dist):
                    if getattr(owner, name, None) is original:
                        patch(owner, name, wrapped)

    def _wrap(self, op, original):
        log = self

        def collective(output, input, *args, **kwargs):  # noqa: A002 - torch's own parameter name
            if log._depth:
                return original(output, input, *args, **kwargs)
            log._depth += 1
            try:
                record = log._describe(op, output, input)
            except Exception as error:  # noqa: BLE001 - a description must never break the collective
                record = {"op": op, "error": "%s: %s" % (type(error).__name__, error)}
            try:
                return original(output, input, *args, **kwargs)
            finally:
                log._depth -= 1
                log._append(record)

        collective.__wrapped__ = original
        collective.__name__ = original.__name__
        return collective

    def _describe(self, op, output, input):  # noqa: A002
        import torch

        buffer = output if op == "all_gather" else input
        graph_task = getattr(torch._C, "_current_graph_task_id", None)
        backward = graph_task is not None and graph_task() != -1
        return {
            "op": op,
            "bytes": _nbytes(buffer),
            "shardBytes": _nbytes(input if op == "all_gather" else output),
            "phase": "backward" if backward else "forward",
            "location": self.user_frame(),
            "unit": self._unit(sys._getframe(2)),
            "step": self._step if self._in_step else None,
            "warmup": self._in_step and self._step is None,
        }

    def _unit(self, frame):
        """The FSDP unit whose code issued the collective: the nearest frame holding a FlatParamHandle
        (FSDP1, as `self` or `handle`) or an FSDPParamGroup (FSDP2, as `self`)."""
        while frame is not None:
            if _TORCH_DIR not in frame.f_code.co_filename:
                frame = frame.f_back  # FSDP's frames are torch's: user objects are never probed
                continue
            local = frame.f_locals
            for key in ("self", "handle"):
                owner = local.get(key)
                module = getattr(owner, "_fully_sharded_module", None)
                if module is not None:  # FSDP1 FlatParamHandle
                    return {"module": type(module).__name__, "name": self.names.get(id(module))}
                fqn = getattr(owner, "_module_fqn", False)
                modules = getattr(owner, "modules", None)
                if fqn is not False and isinstance(modules, tuple) and modules:  # FSDP2 FSDPParamGroup
                    return {"module": type(modules[0]).__name__, "name": fqn}
            frame = frame.f_back
        return None

    def name_fsdp1_units(self, root):
        """Qualified names of the modules FSDP1 wrapped, as the user named them (FSDP's wrapper prefixes
        removed), for `_unit`."""
        for name, module in root.named_modules():
            clean = ".".join(part for part in name.split(".") if part != "_fsdp_wrapped_module")
            self.names.setdefault(id(module), clean)

    def _append(self, record):
        if self.path is None:
            self.records.append(record)
            return
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
