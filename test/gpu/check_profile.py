"""GPU checks of the step profiler's cuda backend (and of the cpu backend with this machine's torch, which is
usually a current 2.x, while CI has Debian's 1.13). Python only: runs the bundled harness the way the
TypeScript launcher does (protocol on an inherited pipe) and checks the report against analytic sizes.

    python3 test/gpu/check_profile.py          (test/gpu/run.sh does this)
"""
import json
import os
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(ROOT, "test", "gpu", "profile_fixture.py")
PARAMS = 1000 * 1000 * 4 + 1000 * 4
ACT = 64 * 1000 * 4
OUT_DIR = os.environ.get("OUT") or os.path.join(ROOT, ".gpu-out")


def run_harness(device, *extra, script_args=()):
    read_fd, write_fd = os.pipe()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), MEMHINT_DEVICE=device)
    args = [sys.executable, "-m", "memhint_harness", "--protocol-fd", str(write_fd), "--script", FIXTURE,
            "--function", "train_step", "--warmup", "1", "--steps", "3", "--backend", device, *extra]
    if script_args:
        args += ["--", *script_args]
    started = time.time()
    child = subprocess.Popen(args, env=env, pass_fds=(write_fd,), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    out, err = child.communicate(timeout=300)
    messages = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    for message in messages:
        assert message["v"] == 1, message
    print("    (%s %s: exit %d in %.1f s)" % (device, " ".join(extra + tuple(script_args)), child.returncode,
                                               time.time() - started))
    return child.returncode, messages, err.decode(errors="replace")


def report_of(messages):
    results = [m for m in messages if m["type"] == "result"]
    assert results, "no result message: %s" % [m["type"] for m in messages]
    return results[0]["report"]


def line(report, code):
    for entry in report["lines"]:
        if entry["code"] == code:
            return entry
    raise AssertionError("no line %r in %s" % (code, [e["code"] for e in report["lines"]]))


def check_training(device):
    snapshot = os.path.join(OUT_DIR, "memhint-%s-snapshot.pickle" % device)
    # On cuda, the dispatch path: the exact per-storage figures asserted below (saved-for-backward, backward
    # on the forward line) are its own; check_trace_backend.py compares the trace path with it.
    extra = ("--cuda-path", "dispatch") if device == "cuda" else ()
    code, messages, err = run_harness(device, "--cuda-snapshot", snapshot, *extra)
    assert code == 0, err[-3000:]
    report = report_of(messages)
    hello = messages[0]
    print("    torch %s, backend %s, device %s, capabilities %s" % (
        hello["torchVersion"], hello["backend"], hello["device"], json.dumps(hello["capabilities"])))
    with open(os.path.join(OUT_DIR, "report-%s.json" % device), "w") as handle:
        json.dump(report, handle, indent=1)
    peak = report["peak"]
    by_kind = peak["byKind"]
    assert by_kind["parameter"] == PARAMS, by_kind
    assert by_kind["gradient"] == PARAMS, by_kind
    # Adam's `step` counters are CPU scalars on cuda (not capturable), float32 tensors beside the moments on cpu.
    assert by_kind["optimizer_state"] in (2 * PARAMS, 2 * PARAMS + 8), by_kind
    assert by_kind["input"] == ACT, by_kind
    forward = line(report, "out = model(x)")
    assert forward["self"]["allocated"] == 3 * ACT, forward
    relu = line(report, "act = out.relu()")
    assert relu["savedForBackward"] == 3 * ACT, relu
    # The heart of the cuda backend: backward runs on an autograd device thread, and its allocations must
    # still land on the forward line whose node ran.
    assert forward["backward"]["allocated"] == 3 * PARAMS, ("backward attribution", forward["backward"])
    assert relu["backward"]["allocated"] == 3 * ACT, relu["backward"]
    # backward() of a scalar allocates its implicit seed gradient (ones_like(loss), 4 B) on its own line in
    # torch 2.x; nothing else may land there (backward's work belongs to the forward lines).
    assert line(report, "loss.backward()")["self"]["allocated"] in (0, 3 * 4), line(report, "loss.backward()")
    leaks = report["leaks"]
    assert any(l["reason"] == "storage" and l["bytesByStep"] == [1000 * 1000 * 4] * 2 for l in leaks), leaks
    assert any(l["code"] == "total += loss" and l["reason"] == "autograd_graph" for l in leaks), leaks
    if device == "cuda":
        cuda = report["cuda"]
        assert cuda["memoryStats"]["allocated_bytes.all.peak"] > 0, cuda["memoryStats"]
        assert "PyTorch CUDA memory summary" in cuda["memorySummary"], cuda["memorySummary"][:200]
        assert cuda["fragmentationBytes"] == cuda["reservedBytes"] - cuda["allocatedBytes"]
        assert cuda["maxAllocatedBytes"] >= report["peak"]["bytes"], (cuda["maxAllocatedBytes"], report["peak"]["bytes"])
        if hello["capabilities"]["cudaMemoryHistory"]:
            assert cuda["snapshotPath"] == snapshot and os.path.getsize(snapshot) > 0, cuda["snapshotPath"]
        per_line = line(report, "out = model(x)")["cuda"]
        assert per_line["allocatedDelta"] >= 3 * ACT, per_line
        assert report["timeline"]["cuda"]["allocated"], "cuda timeline"
        print("    allocator: allocated %d, reserved %d, max allocated %d, fragmentation %d" % (
            cuda["allocatedBytes"], cuda["reservedBytes"], cuda["maxAllocatedBytes"], cuda["fragmentationBytes"]))
    print("    peak %d B at %s (%s); backward on forward line: %d B" % (
        peak["bytes"], peak["location"], peak["phase"], forward["backward"]["allocated"]))


def check_cuda_oom():
    code, messages, err = run_harness("cuda", script_args=("oom",))
    assert code == 1, err[-2000:]
    errors = [m for m in messages if m["type"] == "error"]
    assert errors and errors[0]["kind"] == "oom", (errors, err[-2000:])
    oom = report_of(messages)["oom"]
    assert oom["location"]["line"] > 0 and "torch.empty" in oom["code"], oom
    assert oom["requestedBytes"] and oom["requestedBytes"] > 0, oom["message"]
    assert any("expandable_segments" in tip for tip in oom["advice"]), oom["advice"]
    print("    oom at line %d, requested %d B: %s" % (oom["location"]["line"], oom["requestedBytes"], oom["message"][:120]))


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    import torch

    checks = [("cpu backend with this torch", lambda: check_training("cpu"))]
    if torch.cuda.is_available():
        checks += [("cuda backend: exact per-line accounting, backward on device threads", lambda: check_training("cuda")),
                   ("cuda out-of-memory", check_cuda_oom)]
    else:
        print("torch.cuda.is_available() is False: only the cpu checks can run here")
    failed = 0
    for name, check in checks:
        print("- %s" % name)
        try:
            check()
            print("  PASS")
        except Exception:  # noqa: BLE001 - report every check
            failed += 1
            print("  FAIL\n" + traceback.format_exc())
    print("%d/%d checks passed" % (len(checks) - failed, len(checks)))
    return 1 if failed or not torch.cuda.is_available() else 0


if __name__ == "__main__":
    sys.exit(main())
