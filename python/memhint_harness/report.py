"""Turns the tracker's ledger into the versioned JSON report (shape: src/profiler/report.ts)."""
import linecache
import os
import time

from . import HARNESS_VERSION
from .analysis import site_location
from .oom import advice

REPORT_VERSION = 1
TIMELINE_POINTS = 4000


def _counters(c):
    allocated, freed, peak, allocations = c
    return {"allocated": allocated, "freed": freed, "net": allocated - freed, "peak": peak,
            "allocations": allocations}


def _code(file, line):
    return linecache.getline(file, line).strip()


def _downsample(points, limit):
    """Keeps the first, last, and the min and max of each bucket, so peaks survive downsampling."""
    if len(points) <= limit:
        return points
    buckets = limit // 2
    size = len(points) / buckets
    kept = [points[0]]
    for b in range(buckets):
        chunk = points[int(b * size): int((b + 1) * size)]
        if not chunk:
            continue
        low = min(chunk, key=lambda p: p[1])
        high = max(chunk, key=lambda p: p[1])
        kept.extend(sorted({low, high}, key=lambda p: p[0]))
    kept.append(points[-1])
    return kept


def build_report(options, environment, notes, tracker, state, runner, cuda, partial):
    lines = []
    files = set()
    for (file, line), acc in tracker.lines.items():
        if file == "<untracked>":
            continue
        files.add(file)
        entry = {"file": file, "line": line, "function": tracker.funcs.get((file, line), ""),
                 "code": _code(file, line), "calls": acc.calls, "self": _counters(acc.self_c),
                 "inclusive": _counters(acc.incl_c), "savedForBackward": acc.saved, "savedMadeHere": acc.saved_made,
                 "backward": _counters(acc.bw_c)}
        if acc.cuda is not None:
            entry["cuda"] = {"allocatedDelta": acc.cuda[0], "reservedDelta": acc.cuda[1],
                             "maxAllocatedRise": acc.cuda[2]}
        lines.append(entry)
    lines.sort(key=lambda e: (e["file"], e["line"]))

    steps = []
    boundaries = []
    for log in runner.steps:
        boundaries.append({"step": log.index, "warmup": log.warmup, "startMs": log.start, "endMs": log.end})
        if log.warmup:
            continue
        steps.append({"index": log.index, "startMs": log.start, "endMs": log.end, "allocated": log.allocated,
                      "freed": log.freed, "liveAtStart": log.live_start, "liveAtEnd": log.live_end,
                      "peakLive": log.peak, "peakAtMs": log.peak_at})

    leaks = []
    for leak in state.leak_list(len(steps)):
        site = leak["site"]
        leaks.append({"file": site[0], "line": site[1], "function": site[2], "code": _code(site[0], site[1]),
                      "bytesPerStep": leak["bytesPerStep"], "bytesByStep": leak["bytesByStep"],
                      "graphNodesPerStep": leak["graphNodesPerStep"], "reason": leak["reason"],
                      "heldBy": leak["heldBy"]})

    origin_epoch_ms = (time.time() - (time.perf_counter() - tracker.t0)) * 1000.0
    timeline = {"originEpochMs": origin_epoch_ms,
                "allocator": [{"t": t, "live": live} for t, live in _downsample(tracker.timeline, TIMELINE_POINTS)],
                "steps": boundaries}
    if tracker.cuda_series is not None:
        t, allocated, reserved = tracker.cuda_series
        timeline["cuda"] = {"t": t, "allocated": allocated, "reserved": reserved}

    peak = state.best_peak
    if peak is not None:
        peak = dict(peak)
    report = {
        "version": REPORT_VERSION,
        "harnessVersion": HARNESS_VERSION,
        "target": {"kind": _target_kind(options, runner), "loopLine": runner.loop.header if runner.loop else None,
                   "loopFile": _loop_file(options, runner),
                   "script": os.path.abspath(options.script), "function": options.function,
                   "setup": options.setup, "warmup": options.warmup, "steps": options.steps,
                   "maxSeconds": options.max_seconds, "scriptArgs": list(options.script_args)},
        "environment": environment,
        "notes": notes,
        "partial": bool(partial),
        "files": sorted(files),
        "lines": lines,
        "steps": steps,
        "peak": peak,
        "leaks": leaks,
        "timeline": timeline,
    }
    if tracker.modules is not None:
        report["modules"] = tracker.modules.report(len(steps), state.registry.optimizers, tracker.api.describe)
    if cuda is not None:
        report["cuda"] = cuda
    if tracker.oom is not None:
        report["oom"] = _oom(tracker, state, environment["backend"])
    if options.budget is not None:
        hit = tracker.budget_hit
        first = None
        if hit is not None:
            site, live, step = hit
            location = site_location(site) or {"file": "<untracked>", "line": 0, "function": ""}
            first = dict(location, code=_code(location["file"], location["line"]), liveBytes=live, step=step)
        report["budget"] = {"budgetBytes": options.budget, "exceeded": hit is not None, "firstExceeded": first}
    for observer in runner.observers:
        observer.contribute(report, _code)
    return report


def _loop_file(options, runner):
    """The file of the profiled loop when it is not the script (a module the script imports), else None."""
    loop = runner.loop
    if loop is None or not loop.file or os.path.abspath(loop.file) == os.path.abspath(options.script):
        return None
    return os.path.abspath(loop.file)


def _target_kind(options, runner):
    if options.setup:
        return "setup"
    if options.function:
        return "function"
    return "loop" if runner.loop is not None else "script"


def _oom(tracker, state, backend):
    info = tracker.oom
    snapshot = state.snapshot(((rec, rec.nbytes) for rec in info["live"]), info["live_bytes"])
    snapshot.update(step=info["step"], atMs=info["at"], location=site_location(info["site"]), phase=info["phase"])
    location = site_location(info["site"])
    return {
        "message": info["message"],
        "location": location,
        "code": _code(location["file"], location["line"]) if location else "",
        "requestedBytes": info["requested"],
        "step": info["step"],
        "liveAtOom": snapshot,
        "advice": advice(backend, info["phase"], snapshot["byKind"]),
    }
