"""Per-line allocations from the allocation hook (python/memhint_harness/allochook.py, issue #17) beside
the dispatch path's report, on the models of scripts/bench_zoo.py: the evidence for (or against) building
the profiler on allocator events instead of a Python dispatch mode.

    .venv-torch2/bin/python scripts/alloc_path_compare.py --report /tmp/zoo.json [--models tiny,nanogpt]

--report: a dump of scripts/report_identity.py (--only zoo-...) of the same torch. Attribution here is the
design's, with a plain Python tracer (its cost is not what is measured): the hook's events are drained
at every line, call and return event of the user file and charged to the line that was running (the
innermost user frame's); an event inside a backward node is charged, as the dispatch path does, to the
forward line that made the node, found from the autograd sequence numbers handed out while that line ran
(take()'s peek). Compared per line: self and backward `allocated` and `allocations` over the same three
profiled steps after one warmup step. Prints one line per model and the first differing lines.
"""
import argparse
import bisect
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import torch  # noqa: E402

import bench_zoo  # noqa: E402
from memhint_harness import allochook, event_lines  # noqa: E402
from memhint_harness.event_lines import ALLOCATED, ALLOCATIONS, FREED, PEAK  # noqa: E402

ZOO_FILE = os.path.abspath(bench_zoo.__file__)


class Lines:
    """Drains the hook at each user-file trace event into an EventLines (the charging rules live there)."""

    def __init__(self, hook):
        self.hook = hook
        self.starts, self.sites = [], []  # sequence-number ranges: starts[i] .. starts[i+1] made at sites[i]
        self.last_peek = 0
        self.returned = False  # the top frame returned at the last drain: popped at this one
        self.events = event_lines.EventLines(self.node_site)

    def node_site(self, node):
        i = bisect.bisect_right(self.starts, node) - 1
        return self.sites[i] if i >= 0 else None

    def drain(self):
        peek, events = self.hook.take(True)
        lines = self.events
        site = lines.stack[-1].key if lines.stack else None
        if peek != self.last_peek:
            self.starts.append(self.last_peek)
            self.sites.append(site)
            self.last_peek = peek
        returned, self.returned = self.returned, False
        lines.feed(events, returned=returned)

    def trace(self, frame, event, arg):
        if event != "call" or frame.f_code.co_filename != ZOO_FILE:
            return None
        self.drain()
        self.events.call(None)  # the frame's first line event names its line
        return self.local

    def local(self, frame, event, arg):
        if event == "line":
            self.drain()
            self.hook.node_reset()  # a new user line: any backward() of the last one is over
            self.events.move((ZOO_FILE, frame.f_lineno))
        elif event == "return":
            self.drain()
            self.returned = True
        return self.local

    def backward(self, original):
        """Tensor.backward wrapped as the harness wraps it: the backward phase's start and end."""
        def run(tensor, *args, **kwargs):
            self.drain()
            self.events.backward_begin()
            try:
                return original(tensor, *args, **kwargs)
            finally:
                self.drain()
                self.hook.node_reset()
                self.events.backward_end()
        return run


def measure(name, hook):
    torch.set_num_threads(1)
    model, optimizer, inputs, targets, kind = bench_zoo.MODELS[name][1]()
    lines = Lines(hook)
    original = torch.Tensor.backward
    torch.Tensor.backward = lines.backward(original)
    assert hook.start(True), "the profiler slot is taken"
    try:
        # Step 0 is the warmup, as report_identity's --warmup 1: records kept, nothing charged.
        sys.settrace(lines.trace)
        try:
            for step in range(4):
                lines.events.counting = step > 0
                result = bench_zoo.train_step(model, optimizer, inputs, targets, kind)
                # The harness keeps the step's return value until the step has ended (its free is no
                # line's): drained here first, so that the returned frame is popped before it dies.
                lines.drain()
                del result
        finally:
            sys.settrace(None)
        lines.drain()
    finally:
        hook.stop()
        torch.Tensor.backward = original
    out = {}
    for key in set(lines.events.self_c) | set(lines.events.bw_c):
        c = lines.events.self_c.get(key, [0] * 8)
        b = lines.events.bw_c.get(key, [0] * 8)
        out[key[1]] = [c[ALLOCATED], c[ALLOCATIONS], c[FREED], c[PEAK],
                       b[ALLOCATED], b[ALLOCATIONS], b[FREED], b[PEAK]]
    return out


def dispatch_lines(report, name):
    out = {}
    for text in report["zoo-" + name]["lines"]:
        line = json.loads(text)
        if line["file"] != ZOO_FILE:
            continue
        self_, backward = line["self"], line["backward"]
        out[line["line"]] = [self_["allocated"], self_["allocations"], self_["freed"], self_["peak"],
                             backward["allocated"], backward["allocations"], backward["freed"], backward["peak"]]
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--report", required=True)
    parser.add_argument("--models", default="tiny,nanogpt,resnet18,lstm,hf-gpt2")
    options = parser.parse_args()
    hook, why = allochook.load()
    if hook is None:
        raise SystemExit("the allocation hook is unavailable: " + why)
    with open(options.report) as handle:
        report = json.load(handle)
    differing = 0
    for name in options.models.split(","):
        if "zoo-" + name not in report:
            print("%s: not in %s" % (name, options.report))
            continue
        hooked, dispatched = measure(name, hook), dispatch_lines(report, name)
        keys = sorted(k for k in set(hooked) | set(dispatched) if any(hooked.get(k, ())) or any(dispatched.get(k, ())))
        diffs = [(k, dispatched.get(k, [0] * 8), hooked.get(k, [0] * 8)) for k in keys
                 if dispatched.get(k, [0] * 8) != hooked.get(k, [0] * 8)]
        print("%s: %d lines with allocations, %d differ" % (name, len(keys), len(diffs)))
        for line, a, b in diffs[:6]:
            print("  line %d [self allocated, n, freed, peak; backward allocated, n, freed, peak]\n    dispatch %s\n    hook     %s" % (line, a, b))
        differing += bool(diffs)
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
