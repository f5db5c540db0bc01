"""Per-module memory: which nn.Module (by its path in the model, `transformer.h.3.mlp`) ran when memory was
allocated, saved for backward, or allocated in backward by a graph node that module's forward created.

A stack of running modules is kept with the global forward pre/post hooks (every module, no model
changes). The tracker charges each forward allocation and saved tensor to the innermost running module, and
tags each autograd node with it, so backward allocations go to the module whose forward made the node.
Figures are charged to the innermost module only and summed up the path tree when the report is built
(so a module's figures include its submodules'). Parameters, gradients and optimizer state are read from
the live model: parameter and buffer bytes and optimizer state when the report is built, gradient bytes at
the end of each backward() (gradients set to None later in the step would otherwise be missed).
"""
from __future__ import annotations

import sys
import threading
import weakref
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import torch

from .linetrace import SWITCH_TRACE, settrace

_gettrace = sys.gettrace
_settrace = settrace  # linetrace.settrace: restores the C tracer as such

ModuleKey = Tuple[int, str]  # (root index, path under the root; "" for the root itself)
# The key of torch.compile's OptimizedModule wrapper: never on the stack, its `_orig_mod` is the root.
_WRAPPER: ModuleKey = (-1, "")
MODULE_KEY = "memhint_module"
# calls, forward allocations, saved for backward, backward allocations: totals over profiled steps
_CALLS, _FORWARD, _SAVED, _BACKWARD = range(4)

_module_api = getattr(torch.nn.modules, "module", None)
_register_pre = getattr(_module_api, "register_module_forward_pre_hook", None)
_register_post = getattr(_module_api, "register_module_forward_hook", None)


def _register_post_always(hook: Callable[..., None]) -> Any:
    """The post hook also for a forward that raises (`always_call`, torch >= 2.0): non-reentrant checkpoint
    recomputation (torch >= 2.1) stops early by raising out of the checkpointed module's forward, once it has
    remade what backward needs, and a module left on the stack would be charged with everything that follows
    (timm's --grad-checkpointing: the loss, backward and optimizer of later steps went to layer1). torch 1.13
    has no such argument, and its checkpoint no early stop; a forward that raised there is unwound by the
    enclosing module's post hook."""
    try:
        return _register_post(hook, always_call=True)
    except TypeError:
        return _register_post(hook)


class ModuleLedger:
    def __init__(self, is_profiling: Callable[[], bool], device_type: str = "cpu") -> None:
        self.is_profiling = is_profiling
        # Only storages on the measured device count (as in the peak's byKind): Adam's `step` counters stay
        # on the host when the model is on CUDA (or meta, when predicting).
        self.device_type = device_type
        self.stack: List[ModuleKey] = []
        # Strong references: with --setup the step's arguments (the model) are dropped once the steps ran,
        # before the report is built, and a weakly held model would vanish from the breakdown.
        self.roots: List[Tuple[torch.nn.Module, str]] = []
        self.paths: "weakref.WeakKeyDictionary[torch.nn.Module, ModuleKey]" = weakref.WeakKeyDictionary()
        self.counters: Dict[ModuleKey, List[int]] = {}
        self.grads: Dict[ModuleKey, int] = {}
        self.live_at_peak: Dict[ModuleKey, int] = {}
        self.optimizer_bytes: Dict[ModuleKey, int] = {}
        self.main_thread = threading.get_ident()
        self.handles: List[Any] = []
        # Called (untraced) before each change of the stack: the event-fed tracker drains the allocation
        # hook there, so that what was allocated until then is charged to the module running until then.
        self.before_change: Optional[Callable[[], None]] = None

    def install(self, wrap: Callable[[Callable[..., Any]], Callable[..., Any]] = lambda fn: fn) -> Optional[str]:
        """Registers the global hooks (each through `wrap`: linetrace.untraced); returns a note when this
        torch has none."""
        if _register_pre is None or _register_post is None:
            return ("torch %s has no global module forward hooks: the per-module breakdown is not measured"
                    % torch.__version__)
        self.handles = [_register_pre(wrap(self._pre_hook)), _register_post_always(wrap(self._post_hook))]
        return None

    def uninstall(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []

    # ------------------------------------------------------------ module stack

    # Both hooks run for every module call, with the line tracer on (nn.Module calls them): their bodies run
    # with it switched off, or each Python call in them (the WeakKeyDictionary lookup, ...) is a trace event.
    # They call no user code, and the hook's own call event (the one that may pop a returned user frame)
    # comes before the switch, so the tracer sees the same user events as before.

    def _pre_hook(self, module: torch.nn.Module, inputs: Any) -> None:
        if threading.get_ident() != self.main_thread:
            return
        trace = _gettrace() if SWITCH_TRACE else None
        if trace is not None:
            _settrace(None)
        try:
            key = self.paths.get(module)
            if key is None:
                key = self._add_root(module)
            if key is _WRAPPER:
                return
            if self.before_change is not None:
                self.before_change()
            self.stack.append(key)
            if self.is_profiling():
                self._counter(key)[_CALLS] += 1
        finally:
            if trace is not None:
                _settrace(trace)

    def _post_hook(self, module: torch.nn.Module, inputs: Any, output: Any) -> None:
        if threading.get_ident() != self.main_thread:
            return
        trace = _gettrace() if SWITCH_TRACE else None
        if trace is not None:
            _settrace(None)
        try:
            key = self.paths.get(module)
            # A forward that raised never ran its post hook: unwind to this module's own entry.
            if key is not None and key in self.stack:
                if self.before_change is not None:
                    self.before_change()
                while self.stack and self.stack.pop() != key:
                    pass
        finally:
            if trace is not None:
                _settrace(trace)

    def _add_root(self, module: torch.nn.Module) -> ModuleKey:
        """A module that runs outside any known model is a root: its whole tree gets paths. torch.compile's
        wrapper (nanoGPT's `model = torch.compile(model)`) is skipped for the model it wraps, so that the
        tree reads `GPT` / `transformer.h.0.mlp`, not `OptimizedModule` / `_orig_mod.transformer.h.0.mlp`."""
        inner = getattr(module, "_orig_mod", None) if type(module).__name__ == "OptimizedModule" else None
        if isinstance(inner, torch.nn.Module):
            self.paths[module] = _WRAPPER
            if self.paths.get(inner) is None:
                self._add_root(inner)
            return _WRAPPER
        index = len(self.roots)
        self.roots.append((module, type(module).__name__))
        for path, sub in module.named_modules():
            self.paths[sub] = (index, path)
        return (index, "")

    def top(self) -> Optional[ModuleKey]:
        return self.stack[-1] if self.stack else None

    def reset_stack(self) -> None:
        self.stack = []

    # ------------------------------------------------------------ charges (innermost module only)

    def _counter(self, key: ModuleKey) -> List[int]:
        counter = self.counters.get(key)
        if counter is None:
            counter = self.counters[key] = [0, 0, 0, 0]
        return counter

    def charge_forward(self, key: ModuleKey, nbytes: int) -> None:
        self._counter(key)[_FORWARD] += nbytes

    def charge_saved(self, key: ModuleKey, nbytes: int) -> None:
        self._counter(key)[_SAVED] += nbytes

    def charge_backward(self, key: ModuleKey, nbytes: int) -> None:
        self._counter(key)[_BACKWARD] += nbytes

    # ------------------------------------------------------------ state read from the model

    def _named_modules(self) -> Iterable[Tuple[ModuleKey, torch.nn.Module]]:
        for index, (root, _) in enumerate(self.roots):
            for path, sub in root.named_modules():
                if self.paths.get(sub) == (index, path):
                    yield (index, path), sub

    def measure_grads(self, describe: Callable[[torch.Tensor], Any]) -> None:
        """End of a profiled backward(): the gradient bytes of each module's parameters, kept at their max."""
        for key, module in self._named_modules():
            grads = (p.grad for p in module.parameters() if p.grad is not None)
            total = _distinct_bytes(self.device_type, grads, describe)
            if total > self.grads.get(key, 0):
                self.grads[key] = total

    def note_peak(self, recs_and_sizes: Iterable[Tuple[Any, int]]) -> None:
        """The live bytes at the step's peak by the module that allocated them (innermost)."""
        self.note_peak_by_module((rec.module, nbytes) for rec, nbytes in recs_and_sizes)

    def note_peak_by_module(self, modules_and_sizes: Iterable[Tuple[Optional[ModuleKey], int]]) -> None:
        """note_peak over (module or None, bytes) pairs (the event path's block records)."""
        live: Dict[ModuleKey, int] = {}
        for module, nbytes in modules_and_sizes:
            if module is not None:
                live[module] = live.get(module, 0) + nbytes
        self.live_at_peak = live

    def note_optimizers(self, optimizers: Iterable[Any], describe: Callable[[torch.Tensor], Any]) -> None:
        """Optimizer-state bytes per module as of the end of the peak step. Taken then, not at report time:
        optimizers are held weakly (a strong reference would change what a step keeps alive), and with
        --setup they are gone once the steps ran."""
        states = _optimizer_states(optimizers)
        self.optimizer_bytes = {
            key: _distinct_bytes(self.device_type, (value for state in states for p in module.parameters()
                                  for value in _state_values(state, p)), describe)
            for key, module in self._named_modules()}

    def report(self, steps: int, optimizers: Iterable[Any], describe: Callable[[torch.Tensor], Any]) -> List[dict]:
        """Entries in tree order, figures including submodules'; per-step figures are totals // steps."""
        if not self.roots:
            return []
        steps = max(steps, 1)
        states = _optimizer_states(optimizers)
        rolled = _roll_up({k: v[_FORWARD:] for k, v in self.counters.items()}, 3)
        live = _roll_up({k: [v] for k, v in self.live_at_peak.items()}, 1)
        entries = []
        for key, module in self._named_modules():
            params = list(module.parameters())
            param_bytes = _distinct_bytes(self.device_type, list(params) + list(module.buffers()), describe)
            optimizer_bytes = max(self.optimizer_bytes.get(key, 0), _distinct_bytes(self.device_type,
                (value for state in states for p in params for value in _state_values(state, p)), describe))
            forward, saved, backward = rolled.get(key, [0, 0, 0])
            entry = {
                "root": self.roots[key[0]][1],
                "path": key[1],
                "type": type(module).__name__,
                "calls": self.counters.get(key, [0])[_CALLS] // steps,
                "params": param_bytes,
                "grads": self.grads.get(key, 0),
                "optimizer": optimizer_bytes,
                "saved": saved // steps,
                "forward_alloc": forward // steps,
                "backward_alloc": backward // steps,
                "live_at_peak": live.get(key, [0])[0],
            }
            if any(entry[name] for name in ("calls", "params", "saved", "forward_alloc", "backward_alloc")):
                entries.append(entry)
        return entries


def _optimizer_states(optimizers: Iterable[Any]) -> List[Any]:
    states = []
    for optimizer in list(optimizers):
        try:
            states.append(optimizer.state)
        except Exception:  # noqa: BLE001 - a user optimizer may do anything
            continue
    return states


def _state_values(state: Any, param: torch.Tensor) -> List[torch.Tensor]:
    values = state.get(param) if hasattr(state, "get") else None
    if not isinstance(values, dict):
        return []
    return [v for v in values.values() if isinstance(v, torch.Tensor)]


def _distinct_bytes(device_type: str, tensors: Iterable[torch.Tensor], describe: Callable[[torch.Tensor], Any]) -> int:
    seen = set()
    total = 0
    for tensor in tensors:
        if tensor.device.type != device_type:
            continue
        described = describe(tensor)
        if described is None or described[0] in seen:
            continue
        seen.add(described[0])
        total += described[1]
    return total


def _roll_up(values: Dict[ModuleKey, List[int]], width: int) -> Dict[ModuleKey, List[int]]:
    """Adds each module's figures to every ancestor on its path (`a.b.c` to `a.b`, `a` and the root)."""
    rolled: Dict[ModuleKey, List[int]] = {}
    for (root, path), figures in values.items():
        parts = path.split(".") if path else []
        for depth in range(len(parts) + 1):
            key = (root, ".".join(parts[:depth]))
            target = rolled.get(key)
            if target is None:
                target = rolled[key] = [0] * width
            for i in range(width):
                target[i] += figures[i]
    return rolled
