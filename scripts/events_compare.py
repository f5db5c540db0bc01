"""The event-fed tracker (MEMHINT_EVENTS=1, issue #17) against the dispatch path, per line and per step.

    .venv-torch2/bin/python scripts/events_compare.py [--only zoo-tiny,zoo-resnet18] [--keep DIR]

Runs scripts/report_identity.py's targets twice with the same interpreter (the dispatch path, then
MEMHINT_EVENTS=1) and compares what the event path computes: per line `self`, `inclusive` and `backward`
(allocated, freed, net, peak, allocations) and `calls`; per step allocated, freed and peak bytes. Fields the
event path does not compute yet (savedForBackward, modules, leaks, the peak's composition) are not compared:
its report says so in a note, which is checked to be there. Exit 1 when any target differs or when the
event path did not run (its note missing).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_identity  # noqa: E402

LINE_FIELDS = ("self", "inclusive", "backward", "calls")
STEP_FIELDS = ("allocated", "freed", "peakLive")
EVENTS_NOTE = "MEMHINT_EVENTS=1: per-line figures"


def figures(report):
    """(per-line figures keyed by (file, line), per-step figures, whether the event path ran)."""
    lines = {(line["file"], line["line"]): {k: line[k] for k in LINE_FIELDS} for line in report.get("lines", [])
             if any(line[k] for k in ("calls",)) or any(line[k]["allocated"] or line[k]["freed"]
                                                         for k in ("self", "inclusive", "backward"))}
    steps = [{k: step.get(k) for k in STEP_FIELDS} for step in report.get("steps", []) if not step.get("warmup")]
    ran = any(note.startswith(EVENTS_NOTE) for note in report.get("notes", []))
    return lines, steps, ran


def compare(name, dispatch, events):
    """Prints the differences of one target; returns how many lines and steps differ (-1: no event path)."""
    if "error" in dispatch or "error" in events:
        print("%s: error %s" % (name, dispatch.get("error") or events.get("error")))
        return -1
    a_lines, a_steps, _ = figures(dispatch)
    b_lines, b_steps, ran = figures(events)
    if not ran:
        print("%s: the event path did not run (no MEMHINT_EVENTS note): %s" % (name, events.get("notes")))
        return -1
    keys = sorted(set(a_lines) | set(b_lines))
    differing = [k for k in keys if a_lines.get(k) != b_lines.get(k)]
    steps_differ = a_steps != b_steps
    print("%s: %d of %d lines differ; steps %s" % (name, len(differing), len(keys),
                                                  "differ" if steps_differ else "identical"))
    for key in differing[:6]:
        print("  line %d\n    dispatch %s\n    events   %s" % (key[1], json.dumps(a_lines.get(key), sort_keys=True),
                                                           json.dumps(b_lines.get(key), sort_keys=True)))
    if steps_differ:
        print("  steps\n    dispatch %s\n    events   %s" % (a_steps, b_steps))
    return len(differing) + int(steps_differ)


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
