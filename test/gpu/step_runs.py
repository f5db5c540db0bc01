"""One harness run of a step in a fresh process, as the TypeScript launcher makes it (protocol on an inherited
pipe): the report, or RuntimeError with the harness's error. Shared by check_predict.py and
profile_vs_predict.py."""
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def harness_report(script, setup, setup_args, extra=(), steps=1, timeout=600):
    read, write = os.pipe()
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    args = [sys.executable, "-m", "memhint_harness", "--protocol-fd", str(write), "--script", script,
            "--function", "train_step", "--setup", setup, "--warmup", "1", "--steps", str(steps),
            "--setup-args", json.dumps(setup_args), *extra]
    # stderr to a file: a pipe nobody reads until the protocol pipe closes could fill up and stall the child.
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(args, pass_fds=(write,), env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        os.close(write)
        with os.fdopen(read) as handle:
            data = handle.read()
        proc.wait(timeout=timeout)
        stderr.seek(0)
        tail = stderr.read().decode(errors="replace")[-2000:]
    for line in data.splitlines():
        message = json.loads(line)
        if message["type"] == "result":
            return message["report"]
        if message["type"] == "error":
            raise RuntimeError("%s: %s" % (message.get("kind"), message["message"]))
    raise RuntimeError("no result: " + tail)
