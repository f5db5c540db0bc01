"""Rank entry point for `memhint profile --nproc-per-node N`.

`python -m memhint_harness.distributed --report-dir DIR [harness options]` runs the ordinary harness in one
rank of a torch.distributed job (started by torch.distributed.run, or by memhint itself where torchrun does
not work). Each rank's protocol channel is its own file, DIR/rank-R.jsonl (R = $RANK), so ranks never share
a pipe and a rank that dies leaves what it had written. DDP models built in the rank are described in
DIR/rank-R.ddp.jsonl (one JSON object per DistributedDataParallel constructed): the line that built it and
the size of its gradient buckets, which the CLI states next to that line.
"""
import json
import os
import sys


def _rank():
    raw = os.environ.get("RANK")
    if raw is None or not raw.isdigit():
        return None
    return int(raw)


def main(argv):
    if len(argv) < 2 or argv[0] != "--report-dir":
        sys.stderr.write("usage: python -m memhint_harness.distributed --report-dir DIR [harness options]\n")
        return 2
    directory, rest = argv[1], argv[2:]
    rank = _rank()
    if rank is None:
        sys.stderr.write("memhint_harness.distributed: $RANK is not set; start it through torch.distributed.run\n")
        return 2
    # The pid first, before torch is imported: whoever launched the rank, memhint can end its process group.
    with open(os.path.join(directory, "rank-%d.pid" % rank), "w", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
    fd = os.open(os.path.join(directory, "rank-%d.jsonl" % rank), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    _watch_ddp(os.path.join(directory, "rank-%d.ddp.jsonl" % rank))
    from .cli import main as harness_main

    return harness_main(["--protocol-fd", str(fd)] + rest)


def _caller_in_user_code():
    """The innermost frame outside torch and the harness: the user's `DDP(model)` line."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if "memhint_harness" not in name and os.sep + "torch" + os.sep not in name:
            return {"file": os.path.abspath(name), "line": frame.f_lineno, "function": frame.f_code.co_name}
        frame = frame.f_back
    return None


def _ddp_description(ddp, location):
    params = [p for p in ddp.module.parameters() if p.requires_grad]
    grad_bytes = sum(p.numel() * p.element_size() for p in params)
    return {
        "location": location,
        "parameters": len(params),
        # DDP's reducer keeps one flat bucket buffer per bucket holding every trainable parameter's gradient
        # (same dtype), allocated when DDP is constructed and alive as long as the DDP module.
        "bucketBytes": grad_bytes,
        "bucketCapBytes": int(getattr(ddp, "bucket_bytes_cap", 0) or 0),
        "gradientAsBucketView": bool(getattr(ddp, "gradient_as_bucket_view", False)),
        "findUnusedParameters": bool(getattr(ddp, "find_unused_parameters", False)),
    }


def _watch_ddp(path):
    """Wraps DistributedDataParallel.__init__ to describe each DDP built. Without torch it does nothing:
    the harness then reports that torch is missing."""
    try:
        from torch.nn.parallel import DistributedDataParallel
    except Exception:  # noqa: BLE001 - the harness reports a missing or broken torch itself
        return
    original = DistributedDataParallel.__init__

    def init(self, *args, **kwargs):
        location = _caller_in_user_code()
        original(self, *args, **kwargs)
        try:
            record = _ddp_description(self, location)
        except Exception as error:  # noqa: BLE001 - a description must never break the user's DDP
            record = {"location": location, "error": "%s: %s" % (type(error).__name__, error)}
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    init.__wrapped__ = original
    DistributedDataParallel.__init__ = init


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
