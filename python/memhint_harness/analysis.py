"""Kinds of live memory, the peak snapshot, and leak detection across steps."""
import os
import weakref

import torch

KINDS = ("parameter", "gradient", "optimizer_state", "activation", "input", "temporary")
GRAPH_NODE_CAP = 200000


class Registry:
    """Modules and optimizers the user creates, found by patching their constructors (no gc scans)."""

    def __init__(self):
        self.modules = weakref.WeakSet()
        self.optimizers = weakref.WeakSet()
        self._patch(torch.nn.Module, self.modules)
        self._patch(torch.optim.Optimizer, self.optimizers)

    @staticmethod
    def _patch(klass, registry):
        original = klass.__init__

        def __init__(self, *args, **kwargs):
            registry.add(self)
            original(self, *args, **kwargs)

        __init__.__wrapped__ = original
        klass.__init__ = __init__

    def state_tensors(self):
        """Yields (kind, tensor) for model parameters and buffers, their gradients and optimizer state."""
        seen = set()
        params = []
        for module in list(self.modules):
            try:
                cls = type(module)
                if cls.parameters is _MODULE_PARAMETERS and cls.named_parameters is _MODULE_NAMED_PARAMETERS \
                        and cls._named_members is _MODULE_NAMED_MEMBERS:
                    # What parameters(recurse=False) yields, without its generator stack (per module, per step).
                    params.extend(p for p in module._parameters.values() if p is not None)
                else:
                    params.extend(module.parameters(recurse=False))
                if cls.buffers is _MODULE_BUFFERS and cls.named_buffers is _MODULE_NAMED_BUFFERS \
                        and cls._named_members is _MODULE_NAMED_MEMBERS:
                    buffers = _distinct(b for b in module._buffers.values() if b is not None)
                else:
                    buffers = module.buffers(recurse=False)
                for b in buffers:
                    yield "parameter", b
            except Exception:
                continue
        for optimizer in list(self.optimizers):
            try:
                for group in optimizer.param_groups:
                    params.extend(group["params"])
                for state in optimizer.state.values():
                    for value in state.values():
                        if isinstance(value, torch.Tensor):
                            yield "optimizer_state", value
            except Exception:
                continue
        for p in params:
            if id(p) in seen:
                continue
            seen.add(id(p))
            yield "parameter", p
            if p.grad is not None:
                yield "gradient", p.grad


_Module = torch.nn.Module
_MODULE_PARAMETERS = _Module.parameters
_MODULE_NAMED_PARAMETERS = _Module.named_parameters
_MODULE_BUFFERS = _Module.buffers
_MODULE_NAMED_BUFFERS = _Module.named_buffers
_MODULE_NAMED_MEMBERS = getattr(_Module, "_named_members", None)


def _distinct(values):
    """Drops repeats of one object, as Module._named_members does."""
    seen = set()
    result = []
    for value in values:
        if id(value) not in seen:
            seen.add(id(value))
            result.append(value)
    return result


class State:
    def __init__(self, tracker, registry, warmup):
        self.tracker = tracker
        self.registry = registry
        self.warmup = warmup
        self.best_peak = None
        self.leaks = {}  # site -> {epoch: bytes}
        self.graph_counts = {}  # serial -> (rec, [node counts at successive boundaries])
        self.checked_epochs = []
        self.leaked_cdatas = {}  # site -> cdatas of leaked storages (for naming their holders)
        self.leaked_by_epoch = {}  # site -> {epoch: {(cdata, serial, nbytes)}}, to see whether they die later
        self.bounded = {}  # site -> first epoch whose survivors mostly died since: held for a while, then freed
        self.holders = {}  # site -> description of what holds the leak
        self.held_nodes = {}  # site -> autograd nodes the leaked tensors keep reachable (all steps)

    def stamp_state_kinds(self):
        """Marks live storages that are parameters, gradients or optimizer state *now*, registering any the
        tracker never saw allocated (created before tracking, or by numpy). A storage that stopped being
        state (a replaced gradient kept in a list) loses the mark; dead storages keep their last one."""
        tracker = self.tracker
        current = {}
        for kind, tensor in self.registry.state_tensors():
            rec = tracker.register_existing(tensor)
            if rec is not None:
                current.setdefault(rec.cdata, kind)
        for rec in list(tracker.live.values()):
            rec.state = current.get(rec.cdata)
            tracker.set_generation(rec, rec.state in ("parameter", "optimizer_state"))
        return current

    def kind_of(self, rec):
        if rec.state is not None:
            return rec.state
        if rec.saved:
            return "activation"
        if rec.hint == "input":
            return "input"
        return "temporary"

    # ------------------------------------------------------------ peak

    def consider_peak(self, log, events, tracker):
        if self.best_peak is not None and log.peak <= self.best_peak["bytes"]:
            return
        sizes = dict(tracker.step_start_sizes)
        for rec, delta in events[: tracker.step_peak_index]:
            sizes[rec] = sizes.get(rec, 0) + delta
        snapshot = self.snapshot(((rec, n) for rec, n in sizes.items() if n > 0), log.peak)
        if tracker.modules is not None:
            tracker.modules.note_peak((rec, n) for rec, n in sizes.items() if n > 0)
            tracker.modules.note_optimizers(self.registry.optimizers, tracker.api.describe)
        snapshot.update(step=log.index, atMs=log.peak_at, location=site_location(tracker.step_peak_site),
                        phase=tracker.step_peak_phase)
        self.best_peak = snapshot

    def snapshot(self, recs_and_sizes, total):
        return composition(((self.kind_of(rec), nbytes, rec.site) for rec, nbytes in recs_and_sizes), total)

    # ------------------------------------------------------------ leaks

    def epoch_boundary(self, starting_epoch, complete=True):
        """Called when epoch `starting_epoch` begins: storages from two epochs back that are still alive and
        are not model or optimizer state have leaked. At the end of a run that stopped elsewhere than at the
        next call (`complete` False) the user's loop did not finish its iteration, so nothing is concluded.
        Returns whether it checked (and so stamped the state kinds)."""
        tracker = self.tracker
        tracker.poll()
        if starting_epoch in self.checked_epochs or not complete:
            return False
        self.checked_epochs.append(starting_epoch)
        # What is model/optimizer state *now*: a gradient replaced by a new one and kept in a list is a leak.
        current = self.stamp_state_kinds()
        leak_epoch = starting_epoch - 2
        if leak_epoch >= self.warmup:
            self._note_leaks(leak_epoch, current)
        self._find_bounded(leak_epoch)
        if starting_epoch >= 1:
            self._count_graphs(starting_epoch, current)
        if starting_epoch == self.final_epoch and self.leaked_cdatas:
            self._name_holders()
        return True

    def _note_leaks(self, leak_epoch, current):
        """Storages made in `leak_epoch` that are still alive and are not model or optimizer state (`current`)."""
        for rec in self.tracker.live.values():
            if rec.epoch == leak_epoch and rec.cdata not in current and rec.site[0] != "<untracked>":
                per_epoch = self.leaks.setdefault(rec.site, {})
                per_epoch[leak_epoch] = per_epoch.get(leak_epoch, 0) + rec.nbytes
                self.leaked_cdatas.setdefault(rec.site, set()).add(rec.cdata)
                self.leaked_by_epoch.setdefault(rec.site, {}).setdefault(leak_epoch, set()).add(
                    (rec.cdata, rec.serial, rec.nbytes))

    final_epoch = None

    def _find_bounded(self, leak_epoch):
        """A site most of whose survivors of an earlier step (by bytes) have died since is not leaking: it
        keeps each step's tensors for a bounded number of steps (timm's PrefetchLoader prepares batch k+2 while
        step k ends, so it is alive when step k+2 starts; a `deque(maxlen=...)` of recent outputs). Most, not
        all: the same line may hold a few small tensors a step longer (a DataLoader's out-of-order batches),
        while a leak keeps everything. Storages are matched by serial as well as address: a freed
        StorageImpl's address is reused."""
        live = self.tracker.live
        for site, by_epoch in self.leaked_by_epoch.items():
            if site in self.bounded:
                continue
            for epoch in sorted(e for e in by_epoch if e < leak_epoch):
                entries = by_epoch[epoch]
                alive = sum(nbytes for cdata, serial, nbytes in entries
                            if live.get(cdata) is not None and live[cdata].serial == serial)
                if 2 * alive < sum(nbytes for _, _, nbytes in entries):
                    self.bounded[site] = epoch
                    break

    def bounded_notes(self):
        """One sentence per site that kept storages past the leak check's two steps and then freed them."""
        return ["%s:%d (%s) keeps each step's tensors alive into a later step and then frees them (a loader "
                "that prefetches batches, a bounded history): not reported as a leak"
                % (os.path.basename(site[0]), site[1], site[2]) for site in sorted(self.bounded)]

    def _count_held_nodes(self, live):
        """Autograd nodes reachable from the leaked tensors of each site: a kept `loss` is 4 bytes of storage
        but keeps its whole graph (and whatever the graph still saves) alive."""
        for site, cdatas in self.leaked_cdatas.items():
            nodes = 0
            for cdata in cdatas:
                rec = live.get(cdata)
                tensor = rec.tensor_ref() if rec is not None and rec.tensor_ref is not None else None
                node = tensor.grad_fn if tensor is not None else None
                if node is not None:
                    nodes += count_nodes(node)
            if nodes:
                self.held_nodes[site] = nodes

    def _name_holders(self):
        live = self.tracker.live
        try:
            self._count_held_nodes(live)
        except Exception:  # noqa: BLE001 - a courtesy, like the names
            pass
        alive = {site: [c for c in cdatas if c in live] for site, cdatas in self.leaked_cdatas.items()
                 if site not in self.bounded}
        try:
            names = describe_holders(self.tracker, {c for cs in alive.values() for c in cs})
        except Exception:  # naming is a courtesy; never fail the profile for it
            return
        for site, cdatas in alive.items():
            held = sorted({names[c] for c in cdatas if c in names})
            if held:
                self.holders[site] = ", ".join(held)

    def _count_graphs(self, epoch, current):
        for rec in list(self.tracker.live.values()):
            if rec.tensor_ref is None or rec.epoch >= epoch or rec.cdata in current:
                continue
            tensor = rec.tensor_ref()
            node = tensor.grad_fn if tensor is not None else None
            if node is None:
                continue
            entry = self.graph_counts.setdefault(rec.serial, (rec, []))
            entry[1].append(count_nodes(node))

    def leak_list(self, steps_measured):
        result = {}
        for site, per_epoch in self.leaks.items():
            if site in self.bounded:
                continue
            epochs = range(self.warmup, self.warmup + max(steps_measured - 1, 0))
            by_step = [per_epoch.get(e, 0) for e in epochs]
            if not any(by_step):
                continue
            leaked_steps = max(sum(1 for b in by_step if b), 1)
            result[site[:2]] = {"site": site, "bytesByStep": by_step, "heldBy": self.holders.get(site),
                                "bytesPerStep": sum(by_step) // max(len(by_step), 1),
                                "graphNodesPerStep": self.held_nodes.get(site, 0) // leaked_steps,
                                "reason": "storage"}
        for rec, counts in self.graph_counts.values():
            if len(counts) < 2 or counts[-1] <= counts[0]:
                continue
            if any(b < a for a, b in zip(counts, counts[1:])):
                continue
            growth = (counts[-1] - counts[0]) // (len(counts) - 1)
            if growth <= 0:
                continue
            key = rec.site[:2]
            entry = result.get(key)
            if entry is None:
                entry = result[key] = {"site": rec.site, "bytesByStep": [], "bytesPerStep": 0, "heldBy": None,
                                       "graphNodesPerStep": 0, "reason": "autograd_graph"}
            entry["graphNodesPerStep"] += growth
            entry["reason"] = "autograd_graph" if not entry["bytesPerStep"] else entry["reason"]
        return sorted(result.values(), key=lambda e: (-e["bytesPerStep"], -e["graphNodesPerStep"]))


def composition(blocks, total):
    """What is live at a moment, by kind and by the line that allocated it: `blocks` yields
    (kind, bytes, site) with site (file, line, function). Shared by the dispatch and the event trackers."""
    by_kind = dict.fromkeys(KINDS, 0)
    by_line = {}
    for kind, nbytes, site in blocks:
        by_kind[kind] += nbytes
        group = by_line.get(site[:2])
        if group is None:
            group = by_line[site[:2]] = {"file": site[0], "line": site[1], "function": site[2],
                                         "bytes": 0, "byKind": dict.fromkeys(KINDS, 0)}
        group["bytes"] += nbytes
        group["byKind"][kind] += nbytes
    lines = sorted(by_line.values(), key=lambda g: (-g["bytes"], g["file"], g["line"]))
    return {"bytes": total, "byKind": by_kind, "byLine": lines}


def count_nodes(root):
    # Keeps every visited wrapper alive so that ids stay unique during the walk.
    seen = {id(root): root}
    frontier = [root]
    while frontier and len(seen) < GRAPH_NODE_CAP:
        node = frontier.pop()
        try:
            nexts = node.next_functions
        except Exception:
            continue
        for child, _ in nexts:
            if child is not None and id(child) not in seen:
                seen[id(child)] = child
                frontier.append(child)
    return len(seen)


def site_location(site):
    if site is None or site[0] == "<untracked>":
        return None
    return {"file": site[0], "line": site[1], "function": site[2]}


def describe_holders(tracker, cdatas):
    """Names the Python containers that keep leaked storages alive, e.g. "`grad_snapshots` (list) in main()".
    Runs once, at the last step boundary, and only when there are leaks."""
    import gc
    import types

    wanted = set(cdatas)
    found = {}
    api = tracker.api
    objects = gc.get_objects()
    for obj in objects:
        # type() rather than isinstance(): isinstance may run properties of arbitrary objects (warnings).
        if not issubclass(type(obj), torch.Tensor) or obj.device.type != tracker.device_type:
            continue
        described = api.describe(obj)
        if described is None or described[0] not in wanted or described[0] in found:
            continue
        for holder in gc.get_referrers(obj):
            if holder is objects:
                continue
            if isinstance(holder, (list, dict, tuple, set)) and not _is_namespace(holder):
                name = _name_of(holder, types, tracker.user_files) or _attribute_name(holder, types,
                                                                                    tracker.user_files)
                if name:
                    found[described[0]] = "%s (%s)" % (name, type(holder).__name__)
                    break
            elif isinstance(holder, types.FrameType):
                name = _local_name(holder, obj)
                if name:
                    found[described[0]] = "%s in %s()" % (name, holder.f_code.co_name)
                    break
    return found


def _is_namespace(holder):
    return isinstance(holder, dict) and "__name__" in holder and "__builtins__" in holder


def _local_name(frame, value):
    try:
        for name, item in frame.f_locals.items():
            if item is value:
                return "`%s`" % name
    except Exception:
        return None
    return None


def _attribute_name(container, types, user_files):
    """`self.losses` in run(): the container is an attribute of an object (a Trainer's list of losses, as
    in minGPT-style trainer classes) that a user frame or module names. One level: owner.attribute."""
    import gc

    for holder in gc.get_referrers(container):
        if isinstance(holder, (types.FrameType, types.ModuleType, type)) or _is_namespace(holder):
            continue
        if isinstance(holder, dict):
            # An instance's __dict__ (Python < 3.11, or a materialized one): its owner refers to it.
            attribute = _key_of(holder, container)
            owners = [o for o in gc.get_referrers(holder) if getattr(o, "__dict__", None) is holder]
        else:
            # Python 3.11+ keeps an instance's attributes inline: the instance itself is the referrer.
            try:
                attribute = _key_of(vars(holder), container)
            except TypeError:
                continue
            owners = [holder]
        if attribute is None:
            continue
        for owner in owners:
            name = _name_of(owner, types, user_files)
            if name and name.startswith("`"):
                end = name.index("`", 1)  # "`self` in run()" -> "`self.losses` in run()"
                return "%s.%s%s" % (name[:end], attribute, name[end:])
    return None


def _key_of(mapping, value):
    for key, item in mapping.items():
        if item is value and isinstance(key, str):
            return key
    return None


def _name_of(container, types, user_files):
    import gc
    import sys

    # Running frames' locals are not visible to gc.get_referrers on every Python: look at the stack first.
    frame = sys._getframe(1)
    while frame is not None:
        if user_files.is_user(frame.f_code.co_filename):
            name = _local_name(frame, container)
            if name:
                return "%s in %s()" % (name, frame.f_code.co_name)
        frame = frame.f_back
    for holder in gc.get_referrers(container):
        if isinstance(holder, types.FrameType):
            name = _local_name(holder, container)
            if name and user_files.is_user(holder.f_code.co_filename):
                return "%s in %s()" % (name, holder.f_code.co_name)
        elif _is_namespace(holder):
            for key, item in holder.items():
                if item is container:
                    return "`%s`" % key
    return None
