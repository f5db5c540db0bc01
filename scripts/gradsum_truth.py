"""Truth oracle for the profiler's per-step figures (issue #17/#14): each step run with no dispatch mode at
all, its memory seen by the allocation hook (python/memhint_harness/allochook.py), beside memhint's report
of the same step (the harness run as scripts/report_identity.py runs it: --warmup 1 --steps 3, CPU).

    .venv-torch2/bin/python scripts/gradsum_truth.py [--harness python] [--only resnet18,grad_sum.step]

Per target: bytes allocated per step and the step's peak above its starting level, (1) with the hook's
op filter (start(ops=True): what an op-output view such as the dispatch path's counts, transients inside a
kernel dropped), (2) raw allocator events (ops=False), (3) memhint's report (`steps[].allocated`,
`peakLive - liveAtStart`, the same three steps). memhint - truth(ops) is what the profiler gets wrong
about the unprofiled program; the engine's out-of-place gradient sums (gradsum.py) were one block per sum.
The truth runs here, in this process, one warmup step then three measured, the hook started before setup
(it reports a block's free only when it saw the allocation). Needs a torch with C++ headers (torch 2.x).
"""
import argparse
import importlib.util
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import torch  # noqa: E402

import bench_zoo  # noqa: E402
import report_identity  # noqa: E402
from memhint_harness import allochook  # noqa: E402

GRAD_SUM = os.path.join(ROOT, "test", "fixtures", "profiler", "grad_sum.py")
ZOO_SETUPS = {"nanogpt": "gpt_inputs", "hf-gpt2": "hf_gpt2_inputs", "resnet18": "resnet18_inputs",
              "lstm": "lstm_inputs", "tiny": "tiny_inputs"}
# python_sum (an autograd.Function) is left out: the hook's op callback fails on it under ops=True
# (std::bad_array_new_length, session 16) and the process does not survive it.
FIXTURE_FUNCTIONS = ("step", "squared", "shared_weight", "accumulate", "second_order")


def zoo_step(name):
    def make():
        model, optimizer, inputs, targets, kind = bench_zoo.MODELS[name][1]()
        return lambda: bench_zoo.train_step(model, optimizer, inputs, targets, kind)
    return make, bench_zoo.__file__, ["--function", "train_step", "--setup", ZOO_SETUPS[name]]


def fixture_step(function):
    def make():
        spec = importlib.util.spec_from_file_location("grad_sum_fixture", GRAD_SUM)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # defines the tensors and functions; the loop runs only as __main__
        return getattr(module, function)
    return make, GRAD_SUM, ["--function", function]


TARGETS = dict([(name, zoo_step(name)) for name in ZOO_SETUPS]
               + [("grad_sum." + fn, fixture_step(fn)) for fn in FIXTURE_FUNCTIONS])


def truth(hook, make, ops):
    """[(allocated, peak above the step's start)] of three steps after one warmup, no mode."""
    torch.manual_seed(0)
    if not hook.start(ops):
        raise SystemExit("the profiler slot is taken")
    try:
        step = make()
        step()
        hook.take()
        steps = []
        for _ in range(3):
            hook.take()
            step()
            _, events = hook.take()
            level = peak = allocated = 0
            for _ptr, size, _node, _device in events:
                level += size
                peak = max(peak, level)
                allocated += max(size, 0)
            steps.append((allocated, peak))
        return steps
    finally:
        hook.stop()


def memhint(python, harness, script, extra):
    report = report_identity.run_target(python, harness, os.path.abspath(script), extra)
    if "error" in report:
        raise SystemExit("%s: %s" % (script, json.dumps(report["error"])))
    return [(s["allocated"], s["peakLive"] - s["liveAtStart"]) for s in report["steps"]]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--harness", default=os.path.join(ROOT, "python"))
    parser.add_argument("--only")
    parser.add_argument("--json")
    options = parser.parse_args()
    hook, why = allochook.load()
    if hook is None:
        raise SystemExit("the allocation hook is unavailable: " + why)
    torch.set_num_threads(1)
    names = options.only.split(",") if options.only else list(TARGETS)
    rows = {}
    print("%-22s %14s %14s %14s | %12s %12s %12s" % ("target", "alloc truth", "alloc memhint", "memhint-truth",
                                                    "peak truth", "peak memhint", "raw peak"))
    for name in names:
        make, script, extra = TARGETS[name]
        try:
            ops, raw = truth(hook, make, True), truth(hook, make, False)
        except RuntimeError as error:  # the hook's own limits (an autograd.Function under ops=True, S16)
            print("%-22s the hook failed: %s" % (name, str(error).splitlines()[0]))
            continue
        seen = memhint(sys.executable, os.path.abspath(options.harness), script, extra)
        # Steps are alike; the last one is shown (the first measured step may still differ in caches).
        (t_alloc, t_peak), (_, raw_peak), (m_alloc, m_peak) = ops[-1], raw[-1], seen[-1]
        rows[name] = {"truth": ops, "raw": raw, "memhint": seen}
        print("%-22s %14d %14d %14d | %12d %12d %12d" % (name, t_alloc, m_alloc, m_alloc - t_alloc,
                                                          t_peak, m_peak, raw_peak))
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
