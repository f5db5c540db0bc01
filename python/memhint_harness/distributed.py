"""Rank entry point for `memhint profile --nproc-per-node N`.

`python -m memhint_harness.distributed --report-dir DIR [harness options]` runs the ordinary harness in one
rank of a torch.distributed job (started by torch.distributed.run, or by memhint itself where torchrun does
not work). Each rank's protocol channel is its own file, DIR/rank-R.jsonl (R = $RANK), so ranks never share
a pipe and a rank that dies leaves what it had written. DDP models built in the rank are described in
DIR/rank-R.ddp.jsonl (one JSON object per DistributedDataParallel constructed): the line that built it and
the size of its gradient buckets, which the CLI states next to that line. FSDP units are described in
DIR/rank-R.fsdp.jsonl, one JSON object per unit (a FullyShardedDataParallel instance holding parameters, or
one `fully_shard(module)` call): the line that sharded it, its parameters' full (gathered) bytes and this
rank's shard bytes. Every all-gather and reduce-scatter FSDP issues is described in DIR/rank-R.collectives.jsonl
(collectives.py): its buffer's bytes, forward or backward, the user's line and the FSDP unit it serves.
"""
import json
import os
import sys

from .collectives import CollectiveLog


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
    collectives = CollectiveLog(os.path.join(directory, "rank-%d.collectives.jsonl" % rank), _caller_in_user_code)
    collectives.install()
    _watch_fsdp(os.path.join(directory, "rank-%d.fsdp.jsonl" % rank), collectives)
    from .cli import main as harness_main

    return harness_main(["--protocol-fd", str(fd)] + rest, observers=[collectives])


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


def _append(path, record):
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def _fsdp1_units(root, location, names):
    """One record per FullyShardedDataParallel instance under `root` that holds a flat parameter. Its full
    size is what FSDP all-gathers for the unit's forward and backward; the shard is what this rank keeps."""
    from torch.distributed.fsdp import FullyShardedDataParallel

    records = []
    for unit in FullyShardedDataParallel.fsdp_modules(root):
        handle = getattr(unit, "_handle", None)
        flat = getattr(handle, "flat_param", None)
        if flat is None:
            continue  # its parameters all went to nested units
        size = flat.element_size()
        shard = int(flat.numel())
        world = int(getattr(handle, "world_size", 1) or 1)
        sharded = bool(getattr(handle, "uses_sharded_strategy", world > 1))
        inner = getattr(handle, "_fully_sharded_module", None)
        records.append({
            "api": "FullyShardedDataParallel", "location": location,
            "module": type(getattr(unit, "module", unit)).__name__,
            # the unit's qualified name in the model, as the collectives' records name it
            "name": names.get(id(inner)) if inner is not None else None,
            "strategy": getattr(getattr(unit, "sharding_strategy", None), "name", None),
            "parameters": len(getattr(flat, "_fqns", ()) or ()),
            "fullBytes": int(flat._unpadded_unsharded_size.numel()) * size,
            # every rank's shard has the same (padded) size; all-gathered, they make the unit's gathered buffer
            "gatheredBytes": (shard * world if sharded else shard) * size,
            "shardBytes": shard * size,
        })
    return records


def _fsdp2_unit(module, location, seen):
    """`fully_shard(module)`: its parameters not sharded by an earlier (inner) call are this unit's."""
    full = shard = gathered = count = 0
    for param in module.parameters():
        if id(param) in seen or not hasattr(param, "to_local"):
            continue
        seen.add(id(param))
        count += 1
        size = param.element_size()
        full += param.numel() * size
        local = param.to_local()
        shard += local.numel() * size
        # FSDP2 pads dim 0 to a multiple of the world size: every rank's shard lives in a storage of the padded
        # chunk (the last ranks' local tensors are narrower views of it), and the all-gather moves world x that.
        gathered += local.untyped_storage().nbytes() * param.device_mesh.size()
    if count == 0:
        return None  # a root whose parameters all went to inner calls
    return {"api": "fully_shard", "location": location, "module": type(module).__name__, "strategy": None,
            "parameters": count, "fullBytes": full, "gatheredBytes": gathered, "shardBytes": shard}


def _watch_fsdp(path, collectives):
    """Wraps FullyShardedDataParallel.__init__ (the outermost instance describes its nested units when it is
    done) and torch.distributed.fsdp.fully_shard (each call one unit). Absent APIs are left alone."""
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel
    except Exception:  # noqa: BLE001 - torch without FSDP (or without torch.distributed)
        return
    original = FullyShardedDataParallel.__init__
    depth = [0]

    def init(self, *args, **kwargs):
        location = _caller_in_user_code() if depth[0] == 0 else None
        depth[0] += 1
        try:
            original(self, *args, **kwargs)
        finally:
            depth[0] -= 1
        if location is None:
            return
        try:
            collectives.name_fsdp1_units(self)
            records = _fsdp1_units(self, location, collectives.names)
        except Exception as error:  # noqa: BLE001 - a description must never break the user's FSDP
            records = [{"api": "FullyShardedDataParallel", "location": location,
                        "error": "%s: %s" % (type(error).__name__, error)}]
        for record in records:
            _append(path, record)

    init.__wrapped__ = original
    FullyShardedDataParallel.__init__ = init

    try:
        import importlib

        fsdp = importlib.import_module("torch.distributed.fsdp")
        owners = [fsdp, importlib.import_module("torch.distributed._composable.fsdp")]
    except Exception:  # noqa: BLE001 - torch before fully_shard
        return
    shard_original = getattr(fsdp, "fully_shard", None)
    if shard_original is None:
        return
    seen = set()

    def fully_shard(module, *args, **kwargs):
        location = _caller_in_user_code()
        result = shard_original(module, *args, **kwargs)
        try:
            record = _fsdp2_unit(module, location, seen)
        except Exception as error:  # noqa: BLE001 - as above
            record = {"api": "fully_shard", "location": location, "error": "%s: %s" % (type(error).__name__, error)}
        if record is not None:
            _append(path, record)
        return result

    fully_shard.__wrapped__ = shard_original
    for owner in owners:
        if getattr(owner, "fully_shard", None) is shard_original:
            owner.fully_shard = fully_shard  # pyright: ignore[reportAttributeAccessIssue]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
