"""Forward passes that build autograd graphs no backward() ever uses: evaluation without torch.no_grad().

Autograd records every op on tensors that require grad, and each graph node keeps what it saved for
backward (the activations) until the graph dies. When the graph's output is never backpropagated (a
validation forward in the training step, a metric computed with grad on), those activations are held for
nothing, as long as the output lives: `val_out = model(val_x)` keeps them until the next step rebinds it.

Measured through the saved-tensor hooks the runner installs for every step: each tensor packed while a
statement of the step runs is wrapped with that statement's record, and unpacking (which autograd does only
when backward runs the node that saved it) marks the record as backpropagated. A statement is reported when,
over the whole profile, its ops saved tensors and none of them was ever unpacked. Its figures: the autograd
nodes it created (told by the tracker as it tags them) and the bytes allocated in the step that its ops
saved, each storage once: what torch.no_grad() would have freed at once.

Every line on the user's stack from the step's own frame (the training loop's body, the step function) up
counts what runs under it, like the inclusive line figures: a model's forward lines, shared by training and
evaluation, are backpropagated and never reported; `val_out = model(val_x)` is. Of nested reported lines
(`acc = evaluate(model, val_x)` in the loop, `out = model(x)` inside evaluate) the outermost is reported: the
line whose whole call built nothing that backward used.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Set, Tuple

Site = Tuple[str, int, str]


class StatementGraphs:
    """What one statement of the step saved for backward, and whether backward ever used it."""

    __slots__ = ("nodes", "bytes", "packed", "unpacked", "steps", "parents", "_step", "_storages")

    def __init__(self):
        self.parents: Set[Optional[Site]] = set()  # the lines it ran under (None: the step's own frame)
        self.nodes = 0
        self.bytes = 0  # storages allocated in the step and saved by the statement's ops, each once per step
        self.packed = 0
        self.unpacked = 0
        self.steps: Set[int] = set()
        self._step: Optional[int] = None
        self._storages: Set[int] = set()

    def saw_storage(self, step: int, cdata: int) -> bool:
        """True the first time `cdata` is saved by this statement in `step`."""
        if self._step != step:
            self._step = step
            self._storages = set()
        if cdata in self._storages:
            return False
        self._storages.add(cdata)
        return True


class Packed:
    """What the pack hook returns: the saved tensor (a detached alias) and the statement that saved it."""

    __slots__ = ("tensor", "statements")

    def __init__(self, tensor, statements: List[StatementGraphs]):
        self.tensor = tensor
        self.statements = statements


class NoBackwardWatch:
    """Step observer and saved-tensor watcher; `in_loop()` tells whether steps are a loop's iterations (the
    step's statements are then lines of the frame that runs the loop, not of a frame the step pushes)."""

    def __init__(self, tracker, in_loop: Callable[[], bool]):
        self.tracker = tracker
        self._in_loop = in_loop
        self._level = 0  # index in tracker.stack of the step's own frame
        self._profiled: Optional[int] = None
        self.statements: Dict[Site, StatementGraphs] = {}
        self._cache: Optional[Tuple[Any, int, int, List[StatementGraphs]]] = None

    # ------------------------------------------------------------------ step observer

    def step_begin(self, profiled: Optional[int]) -> None:
        self._profiled = profiled
        depth = len(self.tracker.stack)
        self._level = max(depth - 1, 0) if self._in_loop() else depth
        self._cache = None

    def step_end(self, profiled: Optional[int]) -> None:
        self._profiled = None

    def _statements(self) -> List[StatementGraphs]:
        """The records of the lines on the stack from the step's frame up (empty outside profiled forward)."""
        tracker = self.tracker
        if self._profiled is None or tracker.in_backward or not tracker.in_step:
            return []
        stack = tracker.stack
        if not stack:
            return []
        # Cached per top frame and line: while the same Frame object is on top, the frames below it are
        # suspended in their calls, on the same lines (the cache's reference keeps the object's id unique).
        top = stack[-1]
        cache = self._cache
        if cache is not None and cache[0] is top and cache[1] == top.line and cache[2] == len(stack):
            return cache[3]
        found = []
        parent: Optional[Site] = None
        seen = set()
        for frame in stack[min(self._level, len(stack) - 1):]:
            site = (frame.file, frame.line, frame.func)
            if not frame.line or site in seen:  # a recursive line counts once
                continue
            seen.add(site)
            record = self.statements.get(site)
            if record is None:
                record = self.statements[site] = StatementGraphs()
            record.parents.add(parent)
            found.append(record)
            parent = site
        self._cache = (top, top.line, len(stack), found)
        return found

    # ------------------------------------------------------------------ hooks

    def on_node(self) -> None:
        """The tracker tagged a new autograd node (not a parameter's AccumulateGrad) made in forward."""
        for statement in self._statements():
            statement.nodes += 1

    def pack(self, alias, tensor) -> Any:
        try:
            return self._pack(alias, tensor)
        except Exception:  # noqa: BLE001 - a harness bug costs this figure, never the user's forward
            return alias

    def _pack(self, alias, tensor) -> Any:
        statements = self._statements()
        if not statements:
            return alias
        profiled = self._profiled
        assert profiled is not None
        tracker = self.tracker
        described = tracker.api.describe(tensor)
        rec = tracker.live.get(described[0]) if described is not None else None
        # Parameters, inputs and anything older than the step live anyway: not what the graph keeps.
        fresh = rec is not None and rec.epoch == tracker.epoch
        for statement in statements:
            statement.packed += 1
            statement.steps.add(profiled)
            if fresh and statement.saw_storage(profiled, rec.cdata):
                statement.bytes += rec.nbytes
        return Packed(alias, statements)

    @staticmethod
    def unpack(packed) -> Any:
        if type(packed) is Packed:
            for statement in packed.statements:
                statement.unpacked += 1
            return packed.tensor
        return packed

    # ------------------------------------------------------------------ report

    def contribute(self, report: Dict[str, Any], code_of: Callable[[str, int], str]) -> None:
        flagged = {site for site, statement in self.statements.items()
                   if statement.packed and not statement.unpacked and statement.nodes}
        graphs = []
        for (file, line, function), statement in self.statements.items():
            if (file, line, function) not in flagged or statement.parents & flagged:
                continue
            steps = len(statement.steps)
            graphs.append({"file": file, "line": line, "function": function, "code": code_of(file, line),
                           "nodesPerStep": statement.nodes // steps, "bytesKeptPerStep": statement.bytes // steps,
                           "steps": steps})
        graphs.sort(key=lambda g: (-g["bytesKeptPerStep"], g["file"], g["line"]))
        report["noBackwardGraphs"] = graphs
        for graph in graphs[:3]:
            report["notes"].append(
                "line %d (%s) builds an autograd graph that no backward() uses: %d node(s) and %d bytes of saved "
                "activations per step, kept while its result lives; run it under torch.no_grad() (or "
                "torch.inference_mode())" % (graph["line"], graph["code"], graph["nodesPerStep"],
                                             graph["bytesKeptPerStep"]))
