"""GPU check of the trace-based CUDA design (python/memhint_harness/cuda_trace.py, issue #17): no Python on
any op, the allocator's own history with Python frames, attributed per line.

1. Overhead: GPT-2 small (Hugging Face, from config, random init; the zoo's nanoGPT-style model when
   transformers is missing), steps interleaved plain / with `_record_memory_history(stacks="python")`,
   CUDA-synchronized wall time; goal <= 1.10x (median of pair ratios).
2. Per-line figures: the zoo's nanoGPT-style step run under the recorded history, attributed by
   cuda_trace.attribute (backward windows marked by snapshots taken around backward(), outside the timed
   part), printed side by side with the CPU backend's report of the same step (`memhint_harness`, cpu):
   allocated bytes per line should agree up to the allocator's 512-byte rounding.
Writes $OUT/trace-check.json. Exit 1 when the attribution finds no user line or the goal is missed.

    python3 test/gpu/check_trace.py       (test/gpu/run.sh does this)
"""
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
OUT_DIR = os.environ.get("OUT") or os.path.join(ROOT, ".gpu-out")
ZOO = os.path.join(ROOT, "scripts", "bench_zoo.py")

import torch  # noqa: E402

import bench_zoo  # noqa: E402
from memhint_harness.cuda_trace import attribute, device_trace  # noqa: E402


def to_cuda(inputs):
    model, optimizer, x, y, kind = inputs
    model.cuda()
    # The optimizer was built on CPU parameters; moving the module moves them in place (param.data).
    return model, optimizer, x.cuda(), y.cuda(), kind


def gpt2_small():
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        return "nanoGPT-style (transformers missing)", to_cuda(bench_zoo.gpt_inputs(batch=8, block=256))
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).cuda().train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    idx = torch.randint(0, 50257, (8, 512), device="cuda")
    return "GPT-2 small (HF, config)", (model, optimizer, idx, idx, "hf")


def overhead(name, inputs, pairs=10):
    record = torch.cuda.memory._record_memory_history

    def step(traced):
        if traced:
            record(enabled="all", context="all", stacks="python", max_entries=1000000)
        torch.cuda.synchronize()
        start = time.perf_counter()
        bench_zoo.train_step(*inputs)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        if traced:
            record(enabled=None)
        return elapsed

    for _ in range(3):
        step(False)
        step(True)
    ratios, plain, traced = [], [], []
    for pair in range(pairs):
        order = (False, True) if pair % 2 == 0 else (True, False)
        times = {flag: step(flag) for flag in order}
        plain.append(times[False])
        traced.append(times[True])
        ratios.append(times[True] / times[False])
    result = {"model": name, "plainMs": statistics.median(plain) * 1e3,
              "tracedMs": statistics.median(traced) * 1e3, "medianRatio": statistics.median(ratios),
              "range": [min(ratios), max(ratios)]}
    print("overhead, %s: %.1f -> %.1f ms, median pair ratio %.3fx (range %.3f-%.3f), goal <= 1.10x" % (
        name, result["plainMs"], result["tracedMs"], result["medianRatio"], *result["range"]))
    return result


def traced_lines():
    memory = torch.cuda.memory
    inputs = to_cuda(bench_zoo.gpt_inputs())
    bench_zoo.train_step(*inputs)  # warm: optimizer state exists, as in a profiled (non-warmup) step
    original = torch.autograd.backward
    windows = []

    def marked(*args, **kwargs):
        torch.cuda.synchronize()
        first = len(device_trace(memory._snapshot()))
        try:
            return original(*args, **kwargs)
        finally:
            torch.cuda.synchronize()
            windows.append((first, len(device_trace(memory._snapshot())) - 1, (ZOO, backward_line)))

    backward_line = next(i for i, text in enumerate(open(ZOO).read().splitlines(), 1) if "loss.backward()" in text)
    torch.autograd.backward = marked
    memory._record_memory_history(enabled="all", context="all", stacks="python", max_entries=1000000,
                                  clear_history=True)
    try:
        bench_zoo.train_step(*inputs)
        torch.cuda.synchronize()
        snapshot = memory._snapshot()
    finally:
        memory._record_memory_history(enabled=None)
        torch.autograd.backward = original
    zoo = os.path.realpath(ZOO)
    figures = attribute(device_trace(snapshot), lambda f: os.path.realpath(f) == zoo, windows)
    return {"%d" % site[1]: fig.as_dict() for site, fig in figures.lines.items()}, figures.peak


def cpu_lines():
    read_fd, write_fd = os.pipe()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), CUDA_VISIBLE_DEVICES="")
    args = [sys.executable, "-m", "memhint_harness", "--protocol-fd", str(write_fd), "--script", ZOO,
            "--function", "train_step", "--setup", "gpt_inputs", "--warmup", "1", "--steps", "1", "--backend", "cpu"]
    child = subprocess.Popen(args, env=env, pass_fds=(write_fd,), stdout=subprocess.DEVNULL)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    child.wait(timeout=600)
    for line in data.decode().splitlines():
        message = json.loads(line)
        if message.get("type") == "result":
            return {"%d" % row["line"]: row for row in message["report"]["lines"]}
    return {}


def main():
    if not torch.cuda.is_available() or not hasattr(torch.cuda.memory, "_record_memory_history"):
        print("trace check skipped: no CUDA device or no _record_memory_history in torch %s" % torch.__version__)
        return 0
    os.makedirs(OUT_DIR, exist_ok=True)
    name, inputs = gpt2_small()
    result = {"overhead": overhead(name, inputs)}
    del inputs
    torch.cuda.empty_cache()
    lines, peak = traced_lines()
    cpu = cpu_lines()
    print("per line, nanoGPT-style step: trace (cuda) vs memhint cpu backend; allocated self / backward bytes")
    for key in sorted(set(lines) | set(cpu), key=int):
        t, c = lines.get(key, {}), cpu.get(key, {})
        print("  line %4s: cuda %12s / %12s   cpu %12s / %12s" % (
            key, t.get("allocated", "-"), t.get("backward_allocated", "-"),
            c.get("self", {}).get("allocated", "-"), c.get("backward", {}).get("allocated", "-")))
    result.update(traceLines=lines, tracePeak=peak, cpuLines=cpu)
    with open(os.path.join(OUT_DIR, "trace-check.json"), "w") as handle:
        json.dump(result, handle, indent=1)
    ok = bool(lines) and result["overhead"]["medianRatio"] <= 1.10
    print("trace check: %s" % ("OK" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
