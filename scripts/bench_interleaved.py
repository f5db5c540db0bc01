"""Profiled vs unprofiled steps of one script, interleaved in one process (used by bench-profile.mjs).

Separate processes are what a user runs, but on a small VM a whole process is often 10-30% faster or
slower than the next one (host load, where its heap lands), which buries a few percent of overhead. Here
the same model, optimizer and batch run step after step, alternately with all of the harness's per-step
machinery active (the dispatch mode, the line tracer, saved-tensor hooks, backward() markers, the ledger
and the per-step analysis and progress message, via Runner.call_step as in `--setup` mode) and with none
of it (no mode, no tracer, torch's own backward()). Pairs alternate their order (ABBA) so a drift hits
both sides alike. Not covered: what differs per process only (the harness's gc.freeze() applies to both
sides here, and its import and report time are outside the steps). Prints one JSON line.

    python3 scripts/bench_interleaved.py [--script examples/train.py] [--function train_step]
                                         [--setup make_inputs] [--pairs 16] [--warmup 2]
"""
import argparse
import gc
import json
import os
import resource
import statistics
import sys
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402

from memhint_harness.cli import instrument  # noqa: E402
from memhint_harness.protocol import Channel  # noqa: E402
from memhint_harness.runner import step_arguments  # noqa: E402
from memhint_harness.storage import StorageApi  # noqa: E402
from memhint_harness.userfiles import UserFiles  # noqa: E402


def load(script, function, setup):
    namespace = {"__name__": "memhint_bench_target", "__file__": script}
    with open(script, "rb") as handle:
        exec(compile(handle.read(), script, "exec"), namespace)
    args, kwargs = step_arguments(namespace[setup]())
    return namespace[function], args, kwargs


def main():
    parser = argparse.ArgumentParser()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    parser.add_argument("--script", default=os.path.join(root, "examples", "train.py"))
    parser.add_argument("--function", default="train_step")
    parser.add_argument("--setup", default="make_inputs")
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=2)
    options = parser.parse_args()
    script = os.path.abspath(options.script)
    step, args, kwargs = load(script, options.function, options.setup)

    harness_options = types.SimpleNamespace(
        script=script, function=options.function, setup=options.setup, warmup=options.warmup,
        steps=options.pairs + options.warmup + 1, max_seconds=None, budget=None, script_args=[])
    devnull = os.open(os.devnull, os.O_WRONLY)
    channel = Channel(devnull)  # progress messages are serialized and written, as to the real pipe
    tracker, _state, runner, mode = instrument(torch, harness_options, "cpu", channel, StorageApi(), UserFiles())
    runner.target_seen = True  # as in --setup mode: the target is called directly, never looked up
    patched = (torch.autograd.backward, torch.autograd.grad)
    originals = (patched[0].__wrapped__, patched[1].__wrapped__)
    if hasattr(gc, "freeze"):
        gc.freeze()

    def unprofiled():
        torch.autograd.backward, torch.autograd.grad = originals
        step(*args, **kwargs)

    def profiled():
        torch.autograd.backward, torch.autograd.grad = patched
        sys.settrace(tracker.trace_call)
        try:
            with mode:
                runner.call_step(step, args, kwargs)
        finally:
            sys.settrace(None)

    def timed(fn):
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = (time.perf_counter() - wall) * 1000.0, (time.process_time() - cpu) * 1000.0
        return wall, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults

    for _ in range(options.warmup):  # the harness's warmup steps, each side's caches and allocator warm
        unprofiled()
        profiled()
    plain, prof = [], []
    for pair in range(options.pairs):
        if pair % 2 == 0:
            plain.append(timed(unprofiled))
            prof.append(timed(profiled))
        else:
            prof.append(timed(profiled))
            plain.append(timed(unprofiled))
    os.close(devnull)
    if tracker.internal_error is not None:
        raise SystemExit("the harness stopped measuring: " + tracker.internal_error)

    def summary(index):
        ratios = [b[index] / a[index] for a, b in zip(plain, prof)]
        return {"plainMs": statistics.median(a[index] for a in plain),
                "profiledMs": statistics.median(b[index] for b in prof),
                "medianPairRatio": statistics.median(ratios), "pairRatios": ratios}

    measured = sum(1 for log in runner.steps if not log.warmup)
    if measured != options.pairs:
        raise SystemExit("the harness measured %d of the %d profiled steps" % (measured, options.pairs))
    # Minor page faults per step: glibc returning freed heap to the kernel and taking it back shows here.
    faults = {"plain": statistics.median(a[2] for a in plain), "profiled": statistics.median(b[2] for b in prof)}
    print(json.dumps({"pairs": options.pairs, "profiledSteps": measured, "wall": summary(0), "cpu": summary(1),
                      "pageFaultsPerStep": faults,
                      "torch": str(torch.__version__), "python": sys.version.split()[0]}))


if __name__ == "__main__":
    main()
