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
from memhint_harness import allochook  # noqa: E402

ZOO_FILE = os.path.abspath(bench_zoo.__file__)


class Lines:
    """Drains the hook at each user-file trace event and charges what it returns to the running line."""

    def __init__(self, hook):
        self.hook = hook
        self.stack = []  # [line] per user frame, innermost last
        self.starts, self.sites = [], []  # sequence-number ranges: starts[i] .. starts[i+1] made at sites[i]
        self.last_peek = 0
        self.acc = {}  # line -> [self allocated, self allocations, bw allocated, bw allocations]

    def drain(self):
        peek, events = self.hook.take()
        site = self.stack[-1] if self.stack else None
        if peek != self.last_peek:
            self.starts.append(self.last_peek)
            self.sites.append(site)
            self.last_peek = peek
        for _ptr, size, node, _device in events:
            if size <= 0:
                continue
            if node >= 0:
                i = bisect.bisect_right(self.starts, node) - 1
                line, k = (self.sites[i] if i >= 0 else None), 2
            else:
                line, k = site, 0
            if line is None:
                continue
            acc = self.acc.setdefault(line, [0, 0, 0, 0])
            acc[k] += size
            acc[k + 1] += 1

    def trace(self, frame, event, arg):
        if event != "call" or frame.f_code.co_filename != ZOO_FILE:
            return None
        self.drain()
        self.stack.append(frame.f_lineno)
        return self.local

    def local(self, frame, event, arg):
        if event == "line":
            self.drain()
            self.hook.node_reset()  # a new user line: any backward() of the last one is over
            self.stack[-1] = frame.f_lineno
        elif event == "return":
            self.drain()
            self.stack.pop()
        return self.local


def measure(name, hook):
    torch.set_num_threads(1)
    model, optimizer, inputs, targets, kind = bench_zoo.MODELS[name][1]()
    lines = Lines(hook)
    assert hook.start(True), "the profiler slot is taken"
    try:
        bench_zoo.train_step(model, optimizer, inputs, targets, kind)  # warmup, as report_identity's --warmup 1
        lines.drain()
        lines.acc.clear()
        sys.settrace(lines.trace)
        try:
            for _ in range(3):
                bench_zoo.train_step(model, optimizer, inputs, targets, kind)
        finally:
            sys.settrace(None)
        lines.drain()
    finally:
        hook.stop()
    return lines.acc


def dispatch_lines(report, name):
    out = {}
    for text in report["zoo-" + name]["lines"]:
        line = json.loads(text)
        if line["file"] != ZOO_FILE:
            continue
        out[line["line"]] = [line["self"]["allocated"], line["self"]["allocations"],
                             line["backward"]["allocated"], line["backward"]["allocations"]]
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
        diffs = [(k, dispatched.get(k, [0] * 4), hooked.get(k, [0] * 4)) for k in keys
                 if dispatched.get(k, [0] * 4) != hooked.get(k, [0] * 4)]
        print("%s: %d lines with allocations, %d differ" % (name, len(keys), len(diffs)))
        for line, a, b in diffs[:6]:
            print("  line %d [self bytes, self n, bw bytes, bw n] dispatch %s hook %s" % (line, a, b))
        differing += bool(diffs)
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
