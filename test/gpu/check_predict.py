"""GPU check of `memhint predict`: for each model, the measured max_memory_allocated / max_memory_reserved of
a real CUDA run (setup, 1 warmup step, 1 step, in a fresh process) against the prediction of the same run
(goal: within 3% / 10%). Prints a table for docs/predict.md; exit 1 when a goal is missed.
    python3 test/gpu/check_predict.py [--json OUT]"""
import functools
import json
import os
import subprocess
import sys

from step_runs import harness_report

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(REPO, "test", "fixtures", "predict")
CASES = [
    ("mlp.py", {"batch": 256}),
    ("cnn.py", {"batch": 128}),
    ("gpt.py", {"batch": 16, "seq": 64}),
    ("hf_gpt2.py", {"batch": 8, "seq": 64, "attn": "sdpa"}),
    ("hf_gpt2.py", {"batch": 8, "seq": 64, "attn": "eager"}),
    ("lstm.py", {"batch": 32, "seq": 32}),
    ("dropout_mlp.py", {"batch": 8192}),
    (os.path.join(REPO, "scripts", "bench", "predict_models.py"), {"batch": 8, "seq": 1024}, "gpt2_124m"),
    # The --amp what-if against the real thing: the step under torch.autocast("cuda", bfloat16).
    (os.path.join(REPO, "scripts", "bench", "predict_models.py"), {"batch": 8, "seq": 1024}, "gpt2_124m", "bf16"),
]

MEASURE = r"""
import importlib.util, json, sys, torch
spec = importlib.util.spec_from_file_location("m", sys.argv[1]); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
args = getattr(m, sys.argv[3])(**json.loads(sys.argv[2]))
for _ in range(2):
    if sys.argv[4]:
        with torch.autocast("cuda", dtype={"bf16": torch.bfloat16, "fp16": torch.float16}[sys.argv[4]]):
            m.train_step(*args)
    else:
        m.train_step(*args)
torch.cuda.synchronize()
print(json.dumps({"allocated": torch.cuda.max_memory_allocated(), "reserved": torch.cuda.max_memory_reserved()}))
"""


def measure(script, setup_args, setup, amp=""):
    out = subprocess.run([sys.executable, "-c", MEASURE, script, json.dumps(setup_args), setup, amp],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


@functools.lru_cache(maxsize=None)
def capability():
    """The real device's MAJOR.MINOR, asked in a child so that this process never initialises CUDA."""
    out = subprocess.run([sys.executable, "-c", "import torch; print(*torch.cuda.get_device_capability())"],
                         capture_output=True, text=True, timeout=120)
    major, minor = out.stdout.split()
    return int(major), int(minor)


def predict(script, setup_args, setup, amp=""):
    extra = ["--predict", "--compute-capability", "%d.%d" % capability()] + (["--amp", amp] if amp else [])
    report = harness_report(script, setup, setup_args, extra)
    allocator = report["prediction"]["allocator"]
    return {"allocated": allocator["maxAllocatedBytes"], "reserved": allocator["maxReservedBytes"],
            "seconds": report["prediction"]["seconds"]}


def run_case(case):
    """(script, measured, predicted) or (script, error) for one case; each side in its own process."""
    script = case[0] if os.path.isabs(case[0]) else os.path.join(FIXTURES, case[0])
    setup = case[2] if len(case) > 2 else "make_inputs"
    amp = case[3] if len(case) > 3 else ""
    try:
        return script, measure(script, case[1], setup, amp), predict(script, case[1], setup, amp)
    except Exception as error:  # noqa: BLE001 - report and go on with the other models
        return script, error, None


def main():
    from concurrent.futures import ThreadPoolExecutor

    rows = []
    failed = False
    print("| model | setup | measured alloc | predicted alloc | diff | measured reserved | predicted reserved | diff |")
    print("|---|---|---|---|---|---|---|---|")
    # Cases run 4 at a time (each measurement is its own process: its allocator peaks are its own).
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run_case, CASES))
    for case, (script, real, pred) in zip(CASES, results):
        if pred is None:
            error = real
            print("| %s | %s | error: %s |" % (os.path.basename(script), json.dumps(case[1]), (str(error).strip().splitlines() or [repr(error)])[-1][:200]))
            failed = True
            continue
        da = (pred["allocated"] - real["allocated"]) / real["allocated"]
        dr = (pred["reserved"] - real["reserved"]) / real["reserved"]
        ok = abs(da) <= 0.03 and abs(dr) <= 0.10
        failed = failed or not ok
        rows.append(dict(model=os.path.basename(script), setup=case[1], amp=case[3] if len(case) > 3 else None,
                         measured=real, predicted=pred, ok=ok))
        print("| %s%s | %s | %d | %d | %+.1f%% | %d | %d | %+.1f%% |%s" % (
            os.path.basename(script), " --amp " + case[3] if len(case) > 3 else "", json.dumps(case[1]), real["allocated"], pred["allocated"], 100 * da,
            real["reserved"], pred["reserved"], 100 * dr, "" if ok else " MISSED"))
    if "--json" in sys.argv:
        path = sys.argv[sys.argv.index("--json") + 1]
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as handle:
            json.dump(rows, handle, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
