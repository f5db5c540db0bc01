"""GPU check of the cuda backend's trace path (python/memhint_harness/trace_tracker.py, issue #17) against
its dispatch path, both run by the harness on test/gpu/profile_fixture.py (Linear(1000, 1000) + Adam):

- per line, self-allocated bytes and allocation counts: the trace path logs allocator blocks, so each
  allocation may be up to 511 bytes larger than the storage the dispatch path counts, and it also sees
  allocations no op returned (a reduction's scratch buffer), which the dispatch path cannot;
- backward bytes in total (the trace path charges them to the backward() line, the dispatch path to the
  forward line of each graph node), and per step;
- the kinds at the peak the trace path derives from block addresses: parameters, gradients, Adam moments;
- the per-step wall time of both paths (median), the point of the trace path.

Writes $OUT/trace-backend.json. Exit 0 when they agree, 1 when not, 0 with a note when there is no CUDA or
the torch has no usable allocator history (the harness then falls back, which the report says).

    python3 test/gpu/check_trace_backend.py      (test/gpu/run.sh does this, under its own time limit)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(ROOT, "test", "gpu", "profile_fixture.py")
OUT_DIR = os.environ.get("OUT") or os.path.join(ROOT, ".gpu-out")
ROUNDING = 511  # the caching allocator rounds every block up to a multiple of 512 bytes
PARAMS = 4_000_256 + 4_096  # weight and bias, as 512-byte blocks
STEPS = 5


def harness(path):
    read_fd, write_fd = os.pipe()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), MEMHINT_DEVICE="cuda")
    args = [sys.executable, "-m", "memhint_harness", "--protocol-fd", str(write_fd), "--script", FIXTURE,
            "--function", "train_step", "--warmup", "1", "--steps", str(STEPS), "--backend", "cuda",
            "--cuda-path", path]
    started = time.time()
    # stderr to a file: a pipe nobody reads until the protocol pipe closes could fill up and stall the child.
    with tempfile.TemporaryFile() as stderr:
        child = subprocess.Popen(args, env=env, pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=stderr)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            data = pipe.read()
        child.wait(timeout=120)
        stderr.seek(0)
        err = stderr.read()
    messages = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    reports = [m["report"] for m in messages if m["type"] == "result"]
    errors = [m for m in messages if m["type"] == "error"]
    print("  %s path: exit %d in %.1f s%s" % (path, child.returncode, time.time() - started,
                                             (" error %s" % errors[0]) if errors else ""))
    if not reports:
        raise SystemExit("no report from the %s path: %s" % (path, err.decode(errors="replace")[-2000:]))
    return reports[0]


def step_ms(report):
    return statistics.median(step["endMs"] - step["startMs"] for step in report["steps"])


def main():
    import torch

    if not torch.cuda.is_available():
        print("trace backend check skipped: no CUDA device")
        return 0
    os.makedirs(OUT_DIR, exist_ok=True)
    trace = harness("trace")
    if trace["environment"].get("cudaPath") != "trace":
        print("trace backend check skipped: the harness fell back to the dispatch path: %s"
              % [n for n in trace["notes"] if "dispatch path" in n])
        return 0
    dispatch = harness("dispatch")
    problems = compare(trace, dispatch)
    timing = {"traceStepMs": step_ms(trace), "dispatchStepMs": step_ms(dispatch)}
    print("  per-step wall time (median of %d): trace %.2f ms, dispatch %.2f ms" % (
        STEPS, timing["traceStepMs"], timing["dispatchStepMs"]))
    with open(os.path.join(OUT_DIR, "trace-backend.json"), "w") as handle:
        json.dump({"timing": timing, "problems": problems, "trace": trace, "dispatch": dispatch}, handle, indent=1)
    for problem in problems:
        print("  MISMATCH " + problem)
    print("trace backend check: %s" % ("OK" if not problems else "FAILED"))
    return 1 if problems else 0


def agree(trace, dispatch):
    """Whether a line's (or a total's) trace figures match the dispatch path's: the same allocations, each
    up to 511 bytes larger; or more of them, which are allocations no tensor returned (kernel-internal
    buffers, which only the allocator sees), and then at least the dispatch path's bytes. (ok, remark)"""
    rounded = dispatch["allocated"] + ROUNDING * dispatch["allocations"]
    if trace["allocations"] == dispatch["allocations"]:
        return dispatch["allocated"] <= trace["allocated"] <= rounded, ""
    if trace["allocations"] > dispatch["allocations"] and trace["allocated"] >= dispatch["allocated"]:
        return True, "  (+%d allocations no tensor returned)" % (trace["allocations"] - dispatch["allocations"])
    return False, ""


def compare(trace, dispatch):
    """What differs between the two paths' reports beyond the allocator's rounding (printed as it goes)."""
    problems = []
    by_line = {(e["line"]): e for e in dispatch["lines"]}
    print("  per line: self allocated bytes / allocations, trace vs dispatch")
    for entry in trace["lines"]:
        other = by_line.get(entry["line"])
        if other is None:
            continue
        t, d = entry["self"], other["self"]
        ok, extra = agree(t, d)
        print("    %-4s %-40s %12d / %3d   %12d / %3d %s" % (entry["line"], entry["code"][:40], t["allocated"],
                                                           t["allocations"], d["allocated"], d["allocations"],
                                                           "  <- differs" if not ok else extra))
        if not ok:
            problems.append("line %d: %s vs %s" % (entry["line"], t, d))
    backward = [sum(e["backward"]["allocated"] for e in r["lines"]) for r in (trace, dispatch)]
    counts = [sum(e["backward"]["allocations"] for e in r["lines"]) for r in (trace, dispatch)]
    print("  backward allocated: trace %d (%d allocations), dispatch %d (%d)" % (backward[0], counts[0],
                                                                             backward[1], counts[1]))
    if not agree({"allocated": backward[0], "allocations": counts[0]},
                 {"allocated": backward[1], "allocations": counts[1]})[0]:
        problems.append("backward bytes %s, allocations %s" % (backward, counts))
    for t, d in zip(trace["steps"], dispatch["steps"]):
        if t["allocated"] < d["allocated"]:
            problems.append("step %d allocated %d vs %d" % (t["index"], t["allocated"], d["allocated"]))
    kinds = trace["peak"]["byKind"]
    print("  trace peak %d B (%s), by kind %s; dispatch peak %d B" % (
        trace["peak"]["bytes"], trace["peak"]["phase"], kinds, dispatch["peak"]["bytes"]))
    for kind, expected in (("parameter", PARAMS), ("gradient", PARAMS), ("optimizer_state", 2 * PARAMS)):
        if abs(kinds[kind] - expected) > 1024:
            problems.append("peak %s %d, expected %d" % (kind, kinds[kind], expected))
    print("  leaks: trace %s; dispatch %s" % ([(l["line"], l["bytesPerStep"]) for l in trace["leaks"]],
                                            [(l["line"], l["bytesPerStep"]) for l in dispatch["leaks"]]))
    return problems


if __name__ == "__main__":
    sys.exit(main())
