"""The event-fed tracker (MEMHINT_EVENTS=1, issue #17) against the dispatch path, per line and per step.

    .venv-torch2/bin/python scripts/events_compare.py [--only zoo-tiny,zoo-resnet18] [--keep DIR]

Runs scripts/report_identity.py's targets twice with the same interpreter (the dispatch path, then
MEMHINT_EVENTS=1) and compares what the event path computes: per line `self`, `inclusive` and `backward`
(allocated, freed, net, peak, allocations), `calls`, `savedForBackward` and `savedMadeHere`; per step
allocated, freed and peak bytes; the peak's composition (bytes by kind, by line and kind, step, phase and
location) and the leaks (line, bytes by step, holder; `graphNodesPerStep` and the autograd-graph reason are
not computed on the event path, so not compared); the modules (every figure of each entry). Fields the event
path does not compute yet (kernel workspaces) are not compared: its report says so in a note, which is checked to be there. Exit 1 when any target differs or when the
event path did not run (its note missing).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_identity  # noqa: E402

LINE_FIELDS = ("self", "inclusive", "backward", "calls", "savedForBackward", "savedMadeHere")
PEAK_FIELDS = ("bytes", "byKind", "byLine", "step", "phase", "location")
LEAK_FIELDS = ("file", "line", "function", "bytesByStep", "bytesPerStep", "heldBy")
MODULE_FIELDS = ("root", "path", "type", "calls", "params", "grads", "optimizer", "saved", "forward_alloc",
                 "backward_alloc", "live_at_peak")
STEP_FIELDS = ("allocated", "freed", "peakLive")
EVENTS_NOTE = "MEMHINT_EVENTS=1: per-line figures"


def figures(report):
    """(per-line figures keyed by (file, line), per-step figures, whether the event path ran)."""
    lines = {(line["file"], line["line"]): {k: line[k] for k in LINE_FIELDS} for line in report.get("lines", [])
             if any(line[k] for k in ("calls",)) or any(line[k]["allocated"] or line[k]["freed"]
                                                         for k in ("self", "inclusive", "backward"))}
    steps = [{k: step.get(k) for k in STEP_FIELDS} for step in report.get("steps", []) if not step.get("warmup")]
    ran = any(note.startswith(EVENTS_NOTE) for note in report.get("notes", []))
    peak = {k: (report.get("peak") or {}).get(k) for k in PEAK_FIELDS}
    leaks = [{k: leak.get(k) for k in LEAK_FIELDS} for leak in report.get("leaks", []) if leak.get("bytesPerStep")]
    modules = [{k: module.get(k) for k in MODULE_FIELDS} for module in report.get("modules") or []]
    return lines, steps, ran, peak, leaks, modules


def compare(name, dispatch, events):
    """Prints the differences of one target; returns how many lines and steps differ (-1: no event path)."""
    if "error" in dispatch or "error" in events:
        print("%s: error %s" % (name, dispatch.get("error") or events.get("error")))
        return -1
    a_lines, a_steps, _, a_peak, a_leaks, a_modules = figures(dispatch)
    b_lines, b_steps, ran, b_peak, b_leaks, b_modules = figures(events)
    if not ran:
        print("%s: the event path did not run (no MEMHINT_EVENTS note): %s" % (name, events.get("notes")))
        return -1
    keys = sorted(set(a_lines) | set(b_lines))
    differing = [k for k in keys if a_lines.get(k) != b_lines.get(k)]
    steps_differ = a_steps != b_steps
    peak_differs = a_peak != b_peak
    leaks_differ = a_leaks != b_leaks
    modules_differ = [(a, b) for a, b in zip(a_modules, b_modules) if a != b]
    if len(a_modules) != len(b_modules):
        modules_differ.append((len(a_modules), len(b_modules)))
    print("%s: %d of %d lines differ; steps %s; peak %s; leaks %s (%d); %d of %d modules differ" % (
        name, len(differing), len(keys), "differ" if steps_differ else "identical",
        "differs" if peak_differs else "identical", "differ" if leaks_differ else "identical", len(a_leaks),
        len(modules_differ), len(a_modules)))
    for key in differing[:6]:
        print("  line %d\n    dispatch %s\n    events   %s" % (key[1], json.dumps(a_lines.get(key), sort_keys=True),
                                                           json.dumps(b_lines.get(key), sort_keys=True)))
    if steps_differ:
        print("  steps\n    dispatch %s\n    events   %s" % (a_steps, b_steps))
    if peak_differs:
        for field in PEAK_FIELDS:
            if a_peak[field] != b_peak[field]:
                print("  peak.%s\n    dispatch %s\n    events   %s" % (field, json.dumps(a_peak[field])[:600],
                                                                   json.dumps(b_peak[field])[:600]))
    if leaks_differ:
        print("  leaks\n    dispatch %s\n    events   %s" % (json.dumps(a_leaks)[:600], json.dumps(b_leaks)[:600]))
    for a, b in modules_differ[:6]:
        print("  module\n    dispatch %s\n    events   %s" % (json.dumps(a), json.dumps(b)))
    return len(differing) + int(steps_differ) + int(peak_differs) + int(leaks_differ) + len(modules_differ)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--harness", default=os.path.join(report_identity.ROOT, "python"))
    parser.add_argument("--only")
    options = parser.parse_args()
    failed = 0
    for name, script, extra in report_identity.TARGETS:
        if options.only and name not in options.only.split(","):
            continue
        reports = []
        for events in ("0", "1"):
            os.environ["MEMHINT_EVENTS"] = events
            reports.append(report_identity.run_target(options.python, os.path.abspath(options.harness), script, extra))
        failed += compare(name, *reports) != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
