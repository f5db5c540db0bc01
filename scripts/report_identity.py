"""Dumps the profiler's reports in a comparable form, to check that a harness change loses no exactness
(issue #17: reports identical byte for byte per line before and after an overhead change).

    python3 scripts/report_identity.py --harness python --out /tmp/after.json [--only NAME]
    python3 scripts/report_identity.py --compare /tmp/before.json /tmp/after.json

Runs the harness (`python -m memhint_harness`, from the --harness directory) on the profiler fixtures and
the five models of scripts/bench_zoo.py, and keeps every report field except the ones that are clocks
(milliseconds, timestamps, the timeline's times) or describe the run's environment. Each per-line record is
written as one canonical JSON line, so `--compare` names the first differing line of each target.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FIXTURES = os.path.join(ROOT, "test", "fixtures", "profiler")
ZOO = os.path.join(ROOT, "scripts", "bench_zoo.py")

# (name, script, extra arguments)
TARGETS = [
    ("examples-train", os.path.join(ROOT, "examples", "train.py"), ["--function", "train_step", "--setup", "make_inputs"]),
    ("linear_adam", os.path.join(FIXTURES, "linear_adam.py"), ["--function", "train_step"]),
    ("saved_lines", os.path.join(FIXTURES, "saved_lines.py"), ["--function", "step"]),
    ("storage_ops", os.path.join(FIXTURES, "storage_ops.py"), ["--function", "step"]),
    ("inplace_backward", os.path.join(FIXTURES, "inplace_backward.py"), ["--function", "step"]),
    ("kept_losses", os.path.join(FIXTURES, "kept_losses.py"), ["--function", "step"]),
    ("nanogpt-loop", os.path.join(FIXTURES, "nanogpt", "train.py"), []),
    ("hf_gpt2", os.path.join(FIXTURES, "hf_gpt2.py"), ["--function", "train_step"]),
] + [("zoo-" + name, ZOO, ["--function", "train_step", "--setup", setup]) for name, setup in (
    ("nanogpt", "gpt_inputs"), ("hf-gpt2", "hf_gpt2_inputs"), ("resnet18", "resnet18_inputs"),
    ("lstm", "lstm_inputs"), ("tiny", "tiny_inputs"))]

# Keys whose values are clock readings or the machine's, not memory figures.
CLOCK_KEYS = {"ms", "atMs", "start", "end", "durationMs", "elapsedMs", "timeline", "wallMs", "t", "at",
              "environment", "python", "torch", "seconds"}


def scrub(value):
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in sorted(value.items()) if k not in CLOCK_KEYS and not k.endswith("Ms")}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def run_target(python, harness, script, extra):
    read, write = os.pipe()
    env = dict(os.environ, PYTHONPATH=harness)
    args = [python, "-m", "memhint_harness", "--protocol-fd", str(write), "--script", script,
            "--warmup", "1", "--steps", "3", "--backend", "cpu"] + extra
    proc = subprocess.Popen(args, cwd=os.path.dirname(script), env=env, pass_fds=(write,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    stderr = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    proc.wait()
    for line in data.decode("utf-8").splitlines():
        message = json.loads(line)
        if message.get("type") == "result":
            return message["report"]
        if message.get("type") == "error":
            return {"error": {k: message.get(k) for k in ("kind", "message")}}
    return {"error": {"kind": "no result", "message": stderr[-2000:]}}


def dump(options):
    out = {}
    for name, script, extra in TARGETS:
        if options.only and name not in options.only.split(","):
            continue
        report = run_target(options.python, os.path.abspath(options.harness), script, extra)
        flat = scrub(report)
        lines = [json.dumps(line, sort_keys=True) for line in flat.pop("lines", [])]
        out[name] = {"lines": lines, "rest": json.dumps(flat, sort_keys=True)}
        print("%s: %d lines%s" % (name, len(lines), " (error %s)" % report["error"] if "error" in report else ""),
              file=sys.stderr)
    with open(options.out, "w") as handle:
        json.dump(out, handle, indent=1)


def compare(before_path, after_path):
    with open(before_path) as handle:
        before = json.load(handle)
    with open(after_path) as handle:
        after = json.load(handle)
    differing = 0
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            print("%s: only in %s" % (name, "after" if a is None else "before"))
            differing += 1
            continue
        if a["lines"] != b["lines"]:
            differing += 1
            for index, (x, y) in enumerate(zip(a["lines"], b["lines"])):
                if x != y:
                    print("%s: line record %d differs\n  before %s\n  after  %s" % (name, index, x, y))
                    break
            else:
                print("%s: %d line records before, %d after" % (name, len(a["lines"]), len(b["lines"])))
        elif a["rest"] != b["rest"]:
            differing += 1
            print("%s: per-line records identical; other report fields differ" % name)
        else:
            print("%s: identical (%d line records)" % (name, len(a["lines"])))
    return 1 if differing else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--harness", default=os.path.join(ROOT, "python"))
    parser.add_argument("--out")
    parser.add_argument("--only")
    parser.add_argument("--compare", nargs=2)
    options = parser.parse_args()
    if options.compare:
        raise SystemExit(compare(*options.compare))
    dump(options)


if __name__ == "__main__":
    main()
