"""Backward attribution: allocations made while autograd runs a graph node are charged to the forward line
(and module) that created the node.

Forward outputs' `grad_fn` nodes are tagged with their line in `node.metadata` (after the op returns: autograd
sets grad_fn once dispatch is done, so outputs wait in `pending` until the tracker's next event). During
backward the running node comes from `torch._C._current_autograd_node()` when the torch has it (any thread, so
CUDA's device threads too); otherwise (torch 1.13, "hooks mode") a post-hook on each tagged node claims the
allocations and frees made since the previous node finished: exact on CPU, where the engine runs nodes one by
one in the calling thread."""
from __future__ import annotations

import sys
import threading
import weakref

import torch

from .linetrace import SWITCH_TRACE, settrace, untraced
from .records import MODULE_KEY, NODE_KEY

_gettrace = sys.gettrace
_settrace = settrace  # linetrace.settrace: restores the C tracer as such


class BackwardAttribution:
    def __init__(self, tracker):
        self.tracker = tracker
        self.current_node = getattr(torch._C, "_current_autograd_node", None)
        # Both lists are shared with the tracker (its hot path appends to them): emptied in place, never rebound.
        self.pending = []  # (tensor, rec, site, module) of forward outputs, tagged at the next event
        self.bw_pending = {}  # hooks mode, per thread: [(rec, +/-nbytes, in_step)] not yet claimed by a node
        self._site_hooks = {}

    def running_site(self):
        """The forward line of the node autograd is running (None in hooks mode or outside a node)."""
        return self._running(NODE_KEY)

    def running_module(self):
        return self._running(MODULE_KEY)

    def _running(self, key):
        if self.current_node is None:
            return None
        node = self.current_node()
        if node is None:
            return None
        try:
            return node.metadata.get(key)
        except Exception:
            return None

    def flush_pending(self):
        """Tags the grad_fn of recent forward outputs with their line (autograd sets it after dispatch)."""
        pending = self.pending[:]
        del self.pending[:]
        hooks = self.current_node is None
        for tensor, rec, site, module in pending:
            node = tensor.grad_fn
            if node is None:
                continue
            if rec.tensor_ref is None:
                try:
                    rec.tensor_ref = weakref.ref(tensor)
                except TypeError:
                    pass
            try:
                metadata = node.metadata
            except Exception:
                continue
            if NODE_KEY in metadata:
                continue
            metadata[NODE_KEY] = site
            if module is not None:
                metadata[MODULE_KEY] = module
            node_hook = self.tracker.node_hook
            if node_hook is not None:
                node_hook()
            if hooks:
                node.register_hook(self._hook_for(site, module))
            for next_node, _ in node.next_functions:
                # AccumulateGrad writes .grad; it belongs to the line that used the parameter.
                if next_node is not None and type(next_node).__name__ == "AccumulateGrad":
                    md = next_node.metadata
                    if NODE_KEY not in md:
                        md[NODE_KEY] = site
                        if module is not None:
                            md[MODULE_KEY] = module
                        if hooks:
                            next_node.register_hook(self._hook_for(site, module))

    def _hook_for(self, site, module):
        found = self._site_hooks.get((site, module))
        if found is not None:
            return found

        def hook(grad_inputs, grad_outputs, site=site, module=module):
            # Run by autograd after every tagged node, with the line tracer on: node_done runs with it
            # switched off (each of its Python calls would be a trace event); it calls no user code.
            trace = _gettrace() if SWITCH_TRACE else None
            if trace is not None:
                _settrace(None)
            try:
                self.node_done(site, module)
            finally:
                if trace is not None and not self.tracker.disabled:
                    _settrace(trace)

        # With the C tracer, the whole hook runs untraced (its switching above then finds no tracer on).
        hook = self._site_hooks[(site, module)] = untraced(hook, self.tracker.trace_call)
        return hook

    def node_done(self, site, module=None):
        """hooks mode: the node created at `site` has run; claim the backward events since the last node."""
        tracker = self.tracker
        tracker.poll(full=False)
        events = self.bw_pending.pop(threading.get_ident(), None)
        if not events:
            return
        for rec, nbytes, in_step in events:
            if nbytes > 0:
                rec.site = site
                rec.module = module
            if not in_step:
                continue
            if nbytes > 0:
                tracker._charge_backward(site, nbytes)
                tracker._charge_stack(nbytes, freed=False, self_too=False)
                if module is not None:
                    tracker.modules.charge_backward(module, nbytes)
            else:
                tracker._acc(site[:2]).bw_c[1] += -nbytes
                tracker._charge_stack(-nbytes, freed=True, self_too=False)

    def settle(self):
        """End of backward(): events no node claimed stay on the backward() line."""
        events = [event for thread_events in self.bw_pending.values() for event in thread_events]
        self.bw_pending.clear()
        tracker = self.tracker
        for _rec, nbytes, in_step in events:
            if not in_step:
                continue
            if nbytes > 0:
                tracker._charge_stack(nbytes, freed=False, self_too=True)
            else:
                tracker._charge_stack(-nbytes, freed=True, self_too=True)
