"""Per-nn.Module breakdown of a step's memory, for library models whose whole forward is one user line.

Plain-data output (shared shape with the measured profiler's breakdown):
    {"modules": [{"path": "transformer.h.3.mlp", "type": "GPT2MLP", "depth": 4, "params": .., "grads": ..,
                  "optimizer": .., "saved": .., "forward_alloc": .., "backward_alloc": .., "live_at_peak": ..}]}
Every figure is in bytes and *inclusive*: a module's figure contains its submodules' (the root's is the
model's total), so the list reads as a tree; `depth` is the number of dots + 1 (the root, path "", is 0).
- params: parameters and buffers; grads: their `.grad` after the last backward(); optimizer: optimizer
  state of its parameters; all three as of the end of the last profiled step (grads: after backward()).
- saved: bytes saved for backward by ops run inside the module's forward (per step).
- forward_alloc: bytes allocated inside the module's forward; backward_alloc: bytes allocated during
  backward() by the graph nodes its forward created (per step, the sum over the profiled steps / steps).
- live_at_peak: bytes live at the step's peak that belong to the module: its parameters, gradients and
  optimizer state, plus storages allocated while it was the innermost running module.
Allocation is charged to the innermost module running (module forward hooks, global).
"""
import torch

NODE_KEY = "memhint_module"


class ModuleTracker:
    def __init__(self, tracker, state):
        self.tracker = tracker
        self.state = state
        self.stack = []
        self.stats = {}  # module -> [forward_alloc, backward_alloc, saved]
        self.owner_of_serial = {}  # storage serial -> module innermost when it was allocated
        self.pending = []
        self.grads = {}  # module -> own gradient bytes after the last backward()
        self.peak = None  # module -> bytes live at the step's peak (own, not inclusive)
        self.current_node = getattr(torch._C, "_current_autograd_node", None)
        self.handles = []
        self.names = {}  # module -> path, as of the last profiled step's end
        self.params = {}
        self.optimizer = {}

    # ------------------------------------------------------------ wiring

    def install(self):
        hooks = torch.nn.modules.module
        self.handles.append(hooks.register_module_forward_pre_hook(self._pre))
        self.handles.append(hooks.register_module_forward_hook(self._post))
        tracker = self.tracker
        on_alloc, on_saved, on_outputs = tracker.on_alloc, tracker.on_saved, tracker.on_outputs
        backward_end, consider_peak, step_end = tracker.backward_end, self.state.consider_peak, tracker.step_end

        def alloc(cdata, nbytes, storage, tensor):
            on_alloc(cdata, nbytes, storage, tensor)
            self._alloc(cdata, nbytes)

        def saved(tensor):
            rec = self._rec_of(tensor)
            was = rec.saved if rec is not None else True
            on_saved(tensor)
            if rec is not None and not was and rec.saved and tracker.in_step and self.stack:
                self._stat(self.stack[-1])[2] += rec.nbytes

        def outputs(out):
            if self.pending:
                self._flush()
            on_outputs(out)
            if self.stack and not tracker.in_backward and torch.is_grad_enabled():
                self._queue(out)

        def end_backward():
            backward_end()
            if not tracker.in_backward:
                self._grads()

        def peak(log, events, trk):
            before = self.state.best_peak
            consider_peak(log, events, trk)
            if self.state.best_peak is not before:
                self._peak(trk, events)

        tracker.on_alloc, tracker.on_saved, tracker.on_outputs = alloc, saved, outputs
        def end_step():
            profiled = tracker.in_step
            events = step_end()
            if profiled:
                self._capture()
            return events

        tracker.backward_end = end_backward
        tracker.step_end = end_step
        self.state.consider_peak = peak

    def remove(self):
        for handle in self.handles:
            handle.remove()
        self.handles = []

    # ------------------------------------------------------------ events

    def _pre(self, module, args):
        self.stack.append(module)

    def _post(self, module, args, output):
        # A module that raised never reaches here; unwind to it so the stack stays consistent.
        while self.stack:
            if self.stack.pop() is module:
                break

    def _stat(self, module):
        stat = self.stats.get(module)
        if stat is None:
            stat = self.stats[module] = [0, 0, 0]
        return stat

    def _rec_of(self, tensor):
        described = self.tracker.api.describe(tensor)
        return self.tracker.live.get(described[0]) if described is not None else None

    def _alloc(self, cdata, nbytes):
        tracker = self.tracker
        rec = tracker.live.get(cdata)
        if tracker.in_backward:
            module = self._node_module()
            if module is not None:
                if rec is not None:
                    self.owner_of_serial[rec.serial] = module
                if tracker.in_step:
                    self._stat(module)[1] += nbytes
            return
        if not self.stack:
            return
        module = self.stack[-1]
        if rec is not None:
            self.owner_of_serial[rec.serial] = module
        if tracker.in_step:
            self._stat(module)[0] += nbytes

    def _node_module(self):
        if self.current_node is None:
            return None
        node = self.current_node()
        if node is None:
            return None
        try:
            return node.metadata.get(NODE_KEY)
        except Exception:
            return None

    def _queue(self, out):
        module = self.stack[-1]
        if isinstance(out, torch.Tensor):
            self.pending.append((out, module))
        elif isinstance(out, (tuple, list)):
            self.pending.extend((item, module) for item in out if isinstance(item, torch.Tensor))

    def _flush(self):
        # grad_fn is set after the op returns: tag it at the next op.
        pending, self.pending = self.pending, []
        for tensor, module in pending:
            node = tensor.grad_fn
            if node is None:
                continue
            try:
                metadata = node.metadata
            except Exception:
                continue
            metadata.setdefault(NODE_KEY, module)

    def _grads(self):
        grads = {}
        counted = set()  # a tied weight's gradient counts once, with its parameter's first module
        for module in _module_names(self._modules()):
            total = 0
            for p in module.parameters(recurse=False):
                described = self.tracker.api.describe(p.grad) if p.grad is not None else None
                if described is not None and described[0] not in counted:
                    counted.add(described[0])
                    total += described[1]
            if total:
                grads[module] = total
        self.grads = grads

    def _capture(self):
        """Parameters and optimizer state per module at the end of a profiled step (the user's objects may be
        gone when the report is built: only weak references are kept to them)."""
        self.names = _module_names(self._modules())
        params = {}
        counted = set()  # tied weights (an embedding shared with the output layer) count once
        for module in self.names:
            total = 0
            for tensor in list(module.parameters(recurse=False)) + list(module.buffers(recurse=False)):
                described = self.tracker.api.describe(tensor)
                if described is not None and described[0] not in counted:
                    counted.add(described[0])
                    total += described[1]
            params[module] = total
        self.params = params
        self.optimizer = self._optimizer_bytes()

    def _owners(self):
        """storage cdata -> module for parameters, buffers, gradients and optimizer state."""
        owners = {}
        by_param = {}
        for module in self._modules():
            for p in module.parameters(recurse=False):
                by_param.setdefault(id(p), module)
                for tensor in (p, p.grad):
                    cdata = _cdata(self.tracker, tensor)
                    if cdata is not None:
                        owners.setdefault(cdata, module)
            for b in module.buffers(recurse=False):
                cdata = _cdata(self.tracker, b)
                if cdata is not None:
                    owners.setdefault(cdata, module)
        for optimizer in list(self.state.registry.optimizers):
            for p, values in list(optimizer.state.items()):
                module = by_param.get(id(p))
                if module is None:
                    continue
                for value in values.values():
                    cdata = _cdata(self.tracker, value)
                    if cdata is not None:
                        owners.setdefault(cdata, module)
        return owners

    def _peak(self, tracker, events):
        sizes = dict(tracker.step_start_sizes)
        for rec, delta in events[: tracker.step_peak_index]:
            sizes[rec] = sizes.get(rec, 0) + delta
        owners = self._owners()
        peak = {}
        for rec, nbytes in sizes.items():
            if nbytes <= 0:
                continue
            module = owners.get(rec.cdata) if rec.state is not None else None
            if module is None:
                module = self.owner_of_serial.get(rec.serial)
            if module is not None:
                peak[module] = peak.get(module, 0) + nbytes
        self.peak = peak

    def _modules(self):
        return list(self.state.registry.modules)

    # ------------------------------------------------------------ report

    def report(self, steps):
        """The plain-data breakdown; `steps` divides the per-step sums."""
        names = self.names
        if not names:
            return {"modules": []}
        steps = max(steps, 1)
        own = {}
        for module, path in names.items():
            stat = self.stats.get(module, (0, 0, 0))
            own[path] = [self.params.get(module, 0), self.grads.get(module, 0), self.optimizer.get(module, 0),
                         stat[2] // steps,
                         stat[0] // steps, stat[1] // steps, (self.peak or {}).get(module, 0)]
        totals = {path: list(values) for path, values in own.items()}
        for path, values in own.items():
            for parent in _ancestors(path):
                acc = totals.get(parent)
                if acc is not None:
                    for i, v in enumerate(values):
                        acc[i] += v
        types = {path: type(module).__name__ for module, path in names.items()}
        modules = []
        for path in sorted(totals, key=_path_key):
            p, g, o, s, fa, ba, lp = totals[path]
            modules.append({"path": path, "type": types[path], "depth": 0 if path == "" else path.count(".") + 1,
                            "params": p, "grads": g, "optimizer": o, "saved": s, "forward_alloc": fa,
                            "backward_alloc": ba, "live_at_peak": lp})
        return {"modules": modules}

    def _optimizer_bytes(self):
        by_param = {}
        for module in self._modules():
            for p in module.parameters(recurse=False):
                by_param.setdefault(id(p), module)
        result = {}
        for optimizer in list(self.state.registry.optimizers):
            for p, values in list(optimizer.state.items()):
                module = by_param.get(id(p))
                if module is None:
                    continue
                for value in values.values():
                    # Host tensors (Adam's `step` counters) are no device memory.
                    if isinstance(value, torch.Tensor) and self.tracker._on_device(value):
                        result[module] = result.get(module, 0) + _nbytes(self.tracker, value)
        return result


def _ancestors(path):
    """"a.b.c" -> "a.b", "a", ""; a separate root "<Loss>.x" -> "<Loss>" (never the model's root "")."""
    parts = path.split(".") if path else []
    lowest = 1 if parts and parts[0].startswith("<") else 0
    for i in range(len(parts) - 1, lowest - 1, -1):
        yield ".".join(parts[:i])


def _path_key(path):
    return [int(part) if part.isdigit() else -1 for part in path.split(".")] if path else [], path


def _module_names(modules):
    """module -> dotted path from the root model. The root is the registered module that is nobody's child and
    has the most descendants; modules outside it (a loss module, a second model) are roots of their own,
    named `<ClassName>` (numbered if repeated)."""
    children = set()
    for module in modules:
        for child in module.children():
            children.add(child)
    roots = [m for m in modules if m not in children]
    roots.sort(key=lambda m: -sum(1 for _ in m.modules()))
    names = {}
    used = set()
    for index, root in enumerate(roots):
        if root in names:
            continue
        if index == 0:
            prefix = ""
        else:
            prefix = "<%s>" % type(root).__name__
            n = 2
            while prefix in used:
                prefix = "<%s#%d>" % (type(root).__name__, n)
                n += 1
        used.add(prefix)
        for name, module in root.named_modules():
            if module in names:
                continue
            names[module] = ".".join(part for part in (prefix, name) if part)
    return names


def _cdata(tracker, tensor):
    if not isinstance(tensor, torch.Tensor):
        return None
    described = tracker.api.describe(tensor)
    return described[0] if described is not None else None


def _nbytes(tracker, tensor):
    described = tracker.api.describe(tensor)
    return described[1] if described is not None else 0
