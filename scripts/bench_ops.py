"""The harness's cost per aten op by kind, and its trace events per step (issue #17). Prints one JSON line.

    python3 scripts/bench_ops.py [--ops 2000] [--rounds 7]      per-op CPU cost of four op kinds
    python3 scripts/bench_ops.py --events MODEL                 trace events per profiled step of a model of
                                                                scripts/bench_zoo.py (nanogpt, resnet18, ...)

Per-op: each kind (a view, an in-place op under no_grad, an allocating op under no_grad, an allocating op
that makes a graph node) runs `--ops` times in a loop of a non-user file, called from a step function in a
user file (the harness's state while a user line runs torch code). Plain and profiled steps alternate in
one process; printed: plain CPU per op and the harness's (median profiled - median plain) / ops, in us.

Events: every call into the line tracer during one profiled step (each Python call made with the tracer on
is one, the harness's own included). Deterministic, unlike timings on a loaded machine: the figure to
compare before and after a change to what runs with the tracer on.

MEMHINT_HARNESS_DIR selects another copy of the harness (main's, to compare against).
"""
import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import types

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.environ.get("MEMHINT_HARNESS_DIR") or os.path.join(ROOT, "python"))

import torch  # noqa: E402

from memhint_harness import linetrace  # noqa: E402
from memhint_harness.cli import instrument  # noqa: E402
from memhint_harness.protocol import Channel  # noqa: E402
from memhint_harness.runner import step_arguments  # noqa: E402
from memhint_harness.storage import StorageApi  # noqa: E402
from memhint_harness.userfiles import UserFiles  # noqa: E402

# The op loops: compiled under a name that is no file, so the tracer treats them as library code.
LOOPS = '''
def run(kind, x, w, n):
    if kind == "view":
        for _ in range(n):
            x.t()
    elif kind == "inplace":
        with torch.no_grad():
            for _ in range(n):
                x.add_(1.0)
    elif kind == "alloc":
        with torch.no_grad():
            for _ in range(n):
                x + 1.0
    else:
        for _ in range(n):
            w * 2.0
'''

# The user's file: the step function the harness profiles.
STEP = '''
def step(run, kind, x, w, n):
    run(kind, x, w, n)
'''

KINDS = ("view", "inplace", "alloc", "graph")


def harness(script, function, setup=None):
    options = types.SimpleNamespace(script=script, function=function, setup=setup, warmup=1, steps=10 ** 6,
                                    max_seconds=None, budget=None, script_args=[])
    tracker, _state, runner, mode = instrument(torch, options, "cpu", Channel(os.open(os.devnull, os.O_WRONLY)),
                                               StorageApi(), UserFiles())
    runner.target_seen = True
    return tracker, runner, mode


# Installs the C tracer as a C trace function (sys.settrace would wrap it in the Python trampoline); a
# harness copy from before the C tracer has no linetrace.settrace.
_settrace = getattr(linetrace, "settrace", sys.settrace)


def tracer_kind():
    return getattr(linetrace, "TRACER_KIND", "python")


def profiled_call(tracker, runner, mode, step, args, kwargs, trace=None):
    _settrace(trace or tracker.trace_call)
    try:
        with mode:
            runner.call_step(step, args, kwargs)
    finally:
        sys.settrace(None)


def per_op(options):
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "ops_step.py")
        with open(script, "w") as handle:
            handle.write(STEP)
        tracker, runner, mode = harness(script, "step")
        namespace = {"__name__": "ops_step", "__file__": script}
        exec(compile(STEP, script, "exec"), namespace)
        loops = {"torch": torch}
        exec(compile(LOOPS, "<memhint bench_ops loops>", "exec"), loops)
        step = namespace["step"]
        gc.freeze()
        result = {}
        for kind in KINDS:
            args = (loops["run"], kind, torch.randn(8, 8), torch.randn(8, 8, requires_grad=True), options.ops)
            step(*args)
            profiled_call(tracker, runner, mode, step, args, {})
            plain, profiled = [], []
            for _ in range(options.rounds):
                start = time.process_time()
                step(*args)
                plain.append(time.process_time() - start)
                start = time.process_time()
                profiled_call(tracker, runner, mode, step, args, {})
                profiled.append(time.process_time() - start)
            result[kind] = {"plainUs": statistics.median(plain) / options.ops * 1e6,
                            "harnessUs": (statistics.median(profiled) - statistics.median(plain)) / options.ops * 1e6}
    if tracker.internal_error is not None:
        raise SystemExit("the harness stopped measuring: " + tracker.internal_error)
    return {"ops": options.ops, "rounds": options.rounds, "perOp": result}


def events(options):
    script = os.path.join(ROOT, "scripts", "bench_zoo.py")
    setup = {"nanogpt": "gpt_inputs", "hf-gpt2": "hf_gpt2_inputs", "resnet18": "resnet18_inputs",
             "lstm": "lstm_inputs", "tiny": "tiny_inputs"}[options.events]
    torch.set_num_threads(1)
    tracker, runner, mode = harness(script, "train_step", setup)
    namespace = {"__name__": "memhint_bench_target", "__file__": script}
    with open(script, "rb") as handle:
        exec(compile(handle.read(), script, "exec"), namespace)
    args, kwargs = step_arguments(namespace[setup]())
    step = namespace["train_step"]
    count = [0]
    inner = tracker.trace_call
    counted = getattr(inner, "calls", None) is not None  # the C tracer counts its call events itself

    def counting(frame, event, arg):
        count[0] += 1
        return inner(frame, event, arg)

    for _ in range(2):  # warmup, then a profiled step
        count[0] = -inner.calls if counted else 0
        profiled_call(tracker, runner, mode, step, args, kwargs, None if counted else counting)
        if counted:
            count[0] += inner.calls
    if tracker.internal_error is not None:
        raise SystemExit("the harness stopped measuring: " + tracker.internal_error)
    return {"model": options.events, "traceEventsPerStep": count[0]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--events", help="a model of scripts/bench_zoo.py: count its trace events per step")
    options = parser.parse_args()
    result = events(options) if options.events else per_op(options)
    result.update(torch=str(torch.__version__), python=sys.version.split()[0], tracer=tracer_kind())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
