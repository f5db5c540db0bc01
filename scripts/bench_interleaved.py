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
    python3 scripts/bench_interleaved.py --zoo nanogpt|hf-gpt2|resnet18|lstm|tiny   (scripts/bench_zoo.py)
    python3 scripts/bench_interleaved.py --zoo hf-gpt2 --device cuda     (test/gpu/run.sh: the cuda backend's
        dispatch path on a GPU; wall time around torch.cuda.synchronize(), since CPU time hides the GPU's work)

Also counts the aten ops of one step (a counting dispatch mode, outside the timed steps) and prints the
harness's CPU cost per op: (median profiled - median plain step CPU time) / ops.
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

# MEMHINT_HARNESS_DIR (as for the launcher): another copy of the harness, e.g. to time a change against it.
sys.path.insert(0, os.environ.get("MEMHINT_HARNESS_DIR")
                or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402

from memhint_harness import linetrace  # noqa: E402
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


def to_device(value, device):
    """The zoo builds on CPU: modules and tensors go to `device` in place (an optimizer built over the CPU
    parameters keeps them, since Module.to moves param.data), anything else is left as it is."""
    if isinstance(value, torch.nn.Module):
        return value.to(device)
    if isinstance(value, torch.Tensor):
        return value.to(device)
    return value


def count_ops(step, args, kwargs):
    """aten ops one step runs (all threads' ops that reach the Python dispatch mode)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        ops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.ops += 1
            return func(*args, **(kwargs or {}))

    with Count():
        step(*args, **kwargs)
    return Count.ops


def _no_trace(frame, event, arg):
    return None


# The C tracer is installed as a C trace function (sys.settrace would wrap it in the Python trampoline, as
# slow as the Python tracer); a harness copy from before it (MEMHINT_HARNESS_DIR) has no linetrace.settrace.
_settrace = getattr(linetrace, "settrace", sys.settrace)


def pass_through_mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    class PassThrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    return PassThrough()


def main():
    parser = argparse.ArgumentParser()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    parser.add_argument("--script", default=os.path.join(root, "examples", "train.py"))
    parser.add_argument("--function", default="train_step")
    parser.add_argument("--setup", default="make_inputs")
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--floor", action="store_true",
                        help="a third arm: a pass-through dispatch mode and a no-op tracer (on with --zoo)")
    parser.add_argument("--alloc-arms", action="store_true",
                        help="two more arms (issue #17): torch's allocation hook (allochook.py, torch 2.x with "
                             "headers) with a no-op tracer, and torch.profiler(profile_memory=True)")
    parser.add_argument("--zoo", help="a model of scripts/bench_zoo.py instead of --script/--setup")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="whose storages the harness counts; cuda moves the step's modules and tensors there")
    options = parser.parse_args()
    if options.zoo:
        options.floor = True
        options.script = os.path.join(root, "scripts", "bench_zoo.py")
        options.function = "train_step"
        options.setup = {"nanogpt": "gpt_inputs", "hf-gpt2": "hf_gpt2_inputs", "resnet18": "resnet18_inputs",
                         "lstm": "lstm_inputs", "tiny": "tiny_inputs"}[options.zoo]
        if options.zoo == "hf-gpt2":
            try:
                import transformers  # noqa: F401
            except ImportError as error:
                print(json.dumps({"skipped": "transformers is not installed for this python (%s)" % error,
                                  "device": options.device, "torch": str(torch.__version__), "python": sys.version.split()[0],
                      "tracer": getattr(linetrace, "TRACER_KIND", "python")}))
                return
    if options.zoo and options.device == "cpu":
        # One intra-op thread on both torches: process CPU time then counts work, not OpenMP spin-waits
        # (torch 2.x wheels use every core, Debian's 1.13 one), which swing with the VM's load.
        torch.set_num_threads(1)
    script = os.path.abspath(options.script)

    harness_options = types.SimpleNamespace(
        script=script, function=options.function, setup=options.setup, warmup=options.warmup,
        steps=options.pairs + options.warmup + 1, max_seconds=None, budget=None, script_args=[])
    devnull = os.open(os.devnull, os.O_WRONLY)
    # Progress messages are serialized and written, as to the real pipe (Channel moves the fd high).
    channel = Channel(devnull)
    tracker, _state, runner, mode = instrument(torch, harness_options, options.device, channel, StorageApi(), UserFiles())
    runner.target_seen = True  # as in --setup mode: the target is called directly, never looked up
    # Set up after instrumenting, as `--setup` does: the harness's registry sees the model and optimizer
    # being built (their storages become parameters / optimizer state, the long-lived generation).
    step, args, kwargs = load(script, options.function, options.setup)
    if options.device != "cpu":
        args = tuple(to_device(arg, options.device) for arg in args)
        kwargs = {name: to_device(value, options.device) for name, value in kwargs.items()}
    synchronize = torch.cuda.synchronize if options.device == "cuda" else (lambda: None)
    patched = (torch.autograd.backward, torch.autograd.grad)
    originals = (patched[0].__wrapped__, patched[1].__wrapped__)
    torch.autograd.backward, torch.autograd.grad = originals
    ops = count_ops(step, args, kwargs)
    if hasattr(gc, "freeze"):
        gc.freeze()

    def unprofiled():
        torch.autograd.backward, torch.autograd.grad = originals
        step(*args, **kwargs)

    # MEMHINT_EVENTS=1: instrument() made the event-fed tracker, whose allocation hook records from then on;
    # it is switched off for the other arms, so that they do not pay for it (its start and stop are timed).
    event_hook = getattr(tracker, "hook", None)
    if event_hook is not None:
        event_hook.stop()

    def profiled():
        torch.autograd.backward, torch.autograd.grad = patched
        if event_hook is not None:
            event_hook.start(True)
        _settrace(tracker.trace_call)
        try:
            with mode:
                runner.call_step(step, args, kwargs)
        finally:
            sys.settrace(None)
            if event_hook is not None:
                tracker.poll()
                event_hook.stop()

    floor_mode = pass_through_mode() if options.floor else None

    def floor():
        """What the mechanism alone costs: a dispatch mode and a tracer that both do nothing."""
        torch.autograd.backward, torch.autograd.grad = originals
        sys.settrace(_no_trace)
        try:
            with floor_mode:
                step(*args, **kwargs)
        finally:
            sys.settrace(None)

    hook_arm, hook_ops_arm, hook_lines_arm, profiler_arm, hook_events, hook_missing = None, None, None, None, [0, 0], None
    if options.alloc_arms:
        from memhint_harness import allochook

        hook, hook_missing = allochook.load()

        def hook_arm(ops=False):
            """The allocation hook with a no-op tracer, events drained and summed per site in Python once a
            step (the attribution's Python cost per event is included). ops: with the aten-op callback that
            drops each op's transient allocations (the dispatch path's view)."""
            torch.autograd.backward, torch.autograd.grad = originals
            sys.settrace(_no_trace)
            hook.start(ops)
            try:
                step(*args, **kwargs)
            finally:
                hook.stop()
                sys.settrace(None)
            _peek, events = hook.take()
            per_node = {}
            for _ptr, size, node, _device in events:
                per_node[node] = per_node.get(node, 0) + size
            hook_events[1 if ops else 0] = len(events)

        def hook_ops_arm():
            hook_arm(True)

        from memhint_harness.event_lines import EventLines

        def hook_lines_arm():
            """hook_ops_arm's hook with the event-fed tracker's bookkeeping (event_lines.py) over the step's
            events, op ids and sum markers (take(True)), drained once: the Python cost per event of the
            per-line figures. Not counted: per-line drains (the line tracer's events), which need the
            harness's C tracer to call take() at line changes (docs/profiler.md, the event-fed tracker)."""
            torch.autograd.backward, torch.autograd.grad = originals
            lines = EventLines(lambda node: ("step", 0))
            lines.call(("step", 0))
            sys.settrace(_no_trace)
            hook.start(True)
            try:
                step(*args, **kwargs)
            finally:
                hook.stop()
                sys.settrace(None)
            _peek, events = hook.take(True)
            lines.feed(events)
            lines.ret()

        if hook is None:  # a torch without headers (Debian's 1.13): torch.profiler's arm alone
            hook_arm = hook_ops_arm = hook_lines_arm = None

        def profiler_arm():
            """torch.profiler with memory events around one step; the time is the step's alone (the
            profiler's start and its event processing at exit are left out: a design keeping it on for
            the whole run would pay them once)."""
            torch.autograd.backward, torch.autograd.grad = originals
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                        profile_memory=True) as _prof:
                inside = (time.perf_counter(), time.process_time())
                step(*args, **kwargs)
                inside = (time.perf_counter() - inside[0], time.process_time() - inside[1])
            return inside

    def timed(fn):
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        synchronize()
        wall, cpu = time.perf_counter(), time.process_time()
        inside = fn()
        synchronize()
        wall, cpu = (time.perf_counter() - wall) * 1000.0, (time.process_time() - cpu) * 1000.0
        if inside is not None:  # the arm timed its own part (the profiler arm)
            wall, cpu = inside[0] * 1000.0, inside[1] * 1000.0
        return wall, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults

    arms = [unprofiled, profiled] + ([floor] if floor_mode is not None else [])
    arms += [arm for arm in (hook_arm, hook_ops_arm, hook_lines_arm, profiler_arm) if arm is not None]
    for _ in range(options.warmup):  # the harness's warmup steps, each side's caches and allocator warm
        for arm in arms:
            arm()
    times = {arm: [] for arm in arms}
    for pair in range(options.pairs):
        # Each round runs every arm once, in an order that rotates and reverses (ABBA for two arms), so a
        # drift in the machine's speed hits all of them alike.
        order = arms[pair % len(arms):] + arms[:pair % len(arms)]
        for arm in (order if pair % 2 == 0 else order[::-1]):
            times[arm].append(timed(arm))
    plain, prof = times[unprofiled], times[profiled]
    if tracker.internal_error is not None:
        raise SystemExit("the harness stopped measuring: " + tracker.internal_error)

    def summary(index, other=prof):
        ratios = [b[index] / a[index] for a, b in zip(plain, other)]
        return {"plainMs": statistics.median(a[index] for a in plain),
                "profiledMs": statistics.median(b[index] for b in other),
                "medianPairRatio": statistics.median(ratios), "pairRatios": ratios,
                "usPerOp": (statistics.median(b[index] for b in other)
                            - statistics.median(a[index] for a in plain)) * 1000.0 / max(ops, 1)}

    measured = sum(1 for log in runner.steps if not log.warmup)
    if measured != options.pairs:
        raise SystemExit("the harness measured %d of the %d profiled steps" % (measured, options.pairs))
    # Minor page faults per step: glibc returning freed heap to the kernel and taking it back shows here.
    faults = {"plain": statistics.median(a[2] for a in plain), "profiled": statistics.median(b[2] for b in prof)}
    print(json.dumps({"pairs": options.pairs, "profiledSteps": measured, "opsPerStep": ops,
                      "wall": summary(0), "cpu": summary(1),
                      "floorCpu": summary(1, times[floor]) if floor_mode is not None else None,
                      "hookCpu": summary(1, times[hook_arm]) if hook_arm is not None else None,
                      "hookEventsPerStep": hook_events[0] if hook_arm is not None else None,
                      "hookOpsCpu": summary(1, times[hook_ops_arm]) if hook_ops_arm is not None else None,
                      "hookOpsEventsPerStep": hook_events[1] if hook_ops_arm is not None else None,
                      "hookLinesCpu": summary(1, times[hook_lines_arm]) if hook_lines_arm is not None else None,
                      "hookUnavailable": hook_missing or None,
                      "profilerMemoryCpu": summary(1, times[profiler_arm]) if profiler_arm is not None else None,
                      "pageFaultsPerStep": faults,
                      "device": options.device, "torch": str(torch.__version__), "python": sys.version.split()[0],
                      "tracer": getattr(linetrace, "TRACER_KIND", "python"),
                      "path": "events" if event_hook is not None else "dispatch"}))


if __name__ == "__main__":
    main()
