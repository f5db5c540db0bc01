"""Per line, on a real GPU: memhint's CUDA measurement of a step beside `memhint predict` of the same step.

check_predict.py compares the allocator's peaks; this one says where a difference comes from. It runs the
harness twice in fresh processes on one model (default: GPT-2 small, Hugging Face, batch 8 x 1024): `profile`
with the cuda backend, and `--predict` with this device's compute capability. Prints the step peaks, peak by
kind, and the lines whose self allocation, saved-for-backward or backward bytes differ most; writes both
reports to $OUT (profile-measured.json, profile-predicted.json). Exit 1 when a run fails (the figures are for
reading, not a goal: check_predict.py holds the goals).

    python3 test/gpu/profile_vs_predict.py [--setup gpt2_124m] [--setup-args '{"batch": 8, "seq": 1024}']
"""
import argparse
import json
import os
import subprocess
import sys

from step_runs import harness_report

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT_DIR = os.environ.get("OUT") or os.path.join(REPO, ".gpu-out")


def harness(extra, script, setup, setup_args, steps=1):
    return harness_report(script, setup, setup_args, extra, steps=steps)


PLAIN = r"""
import importlib.util, json, statistics, sys, time, torch
spec = importlib.util.spec_from_file_location("m", sys.argv[1]); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
args = getattr(m, sys.argv[2])(**json.loads(sys.argv[3]))
times = []
for _ in range(6):
    torch.cuda.synchronize(); start = time.perf_counter()
    m.train_step(*args)
    torch.cuda.synchronize(); times.append((time.perf_counter() - start) * 1000)
print(json.dumps(statistics.median(times[2:])))
"""


def plain_step_ms(script, setup, setup_args):
    out = subprocess.run([sys.executable, "-c", PLAIN, script, setup, json.dumps(setup_args)], capture_output=True,
                         text=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None


def step_ms(report):
    times = sorted(step["endMs"] - step["startMs"] for step in report["steps"])
    return times[len(times) // 2] if times else None


def figures(line):
    return {"self": line["self"]["allocated"], "saved": line.get("savedForBackward", 0),
            "backward": line.get("backward", {}).get("allocated", 0), "peak": line["self"]["peak"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", default=os.path.join(REPO, "scripts", "bench", "predict_models.py"))
    parser.add_argument("--setup", default="gpt2_124m")
    parser.add_argument("--setup-args", default='{"batch": 8, "seq": 1024}')
    options = parser.parse_args()
    setup_args = json.loads(options.setup_args)
    os.makedirs(OUT_DIR, exist_ok=True)
    import torch  # only for the capability; the runs are child processes

    capability = "%d.%d" % torch.cuda.get_device_capability()
    # The dispatch path: saved-for-backward and backward-on-forward-line figures, as the prediction has them.
    measured = harness(["--backend", "cuda", "--cuda-path", "dispatch"], options.script, options.setup, setup_args)
    predicted = harness(["--predict", "--compute-capability", capability], options.script, options.setup, setup_args)
    traced = harness(["--backend", "cuda", "--cuda-path", "trace"], options.script, options.setup, setup_args, steps=3)
    plain = plain_step_ms(options.script, options.setup, setup_args)
    print("step wall time: plain %s ms, profiled with the trace path %s ms (%s), with the dispatch path %s ms (%s)" % (
        "%.1f" % plain if plain else "?", step_ms(traced), traced["environment"].get("cudaPath"), step_ms(measured),
        measured["environment"].get("cudaPath")))
    if plain:
        print("overhead on this step: trace path %.2fx, dispatch path %.2fx" % (
            step_ms(traced) / plain, step_ms(measured) / plain))
    m_trace = traced["peak"]
    print("trace path: peak %d B at line %s; kinds %s" % (m_trace["bytes"], m_trace["location"].get("line"),
                                                          json.dumps(m_trace["byKind"])))
    for name, report in (("measured", measured), ("predicted", predicted), ("traced", traced)):
        with open(os.path.join(OUT_DIR, "profile-%s.json" % name), "w") as handle:
            json.dump(report, handle)
    m_peak, p_peak = measured["peak"], predicted["peak"]
    print("step peak (live tensor bytes): measured %d at line %s, predicted %d at line %s" % (
        m_peak["bytes"], m_peak["location"].get("line"), p_peak["bytes"], p_peak["location"].get("line")))
    for kind in sorted(set(m_peak["byKind"]) | set(p_peak["byKind"])):
        m, p = m_peak["byKind"].get(kind, 0), p_peak["byKind"].get(kind, 0)
        print("  %-16s measured %14d predicted %14d diff %+14d" % (kind, m, p, p - m))
    allocator = predicted["prediction"]["allocator"]
    cuda = measured.get("cuda", {})
    print("allocator: measured max allocated %s reserved %s; predicted %d / %d" % (
        cuda.get("maxAllocatedBytes"), cuda.get("maxReservedBytes", cuda.get("reservedBytes")),
        allocator["maxAllocatedBytes"], allocator["maxReservedBytes"]))
    by_site = {}
    for side, report in (("m", measured), ("p", predicted)):
        for line in report["lines"]:
            by_site.setdefault((os.path.basename(line["file"]), line["line"], line["code"][:60]), {})[side] = figures(line)
    rows = []
    for site, sides in by_site.items():
        m, p = sides.get("m", {}), sides.get("p", {})
        diff = sum(abs(p.get(key, 0) - m.get(key, 0)) for key in ("self", "saved", "backward"))
        if diff:
            rows.append((diff, site, m, p))
    rows.sort(key=lambda row: -row[0])
    print("lines that differ (measured -> predicted: self allocated / saved / backward), largest first:")
    for diff, site, m, p in rows[:25]:
        print("  %s:%d %-60s self %d -> %d, saved %d -> %d, backward %d -> %d" % (
            site[0], site[1], site[2], m.get("self", 0), p.get("self", 0), m.get("saved", 0), p.get("saved", 0),
            m.get("backward", 0), p.get("backward", 0)))
    print("%d line(s) differ" % len(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
