"""Replays allocator operations given as JSON on stdin and prints the model's statistics after each one:
`[{"op": "malloc", "key": 1, "bytes": 100}, {"op": "free", "key": 1}, {"op": "empty_cache"}]`, options as
`{"maxSplitSize": .., "capacity": .., "ops": [...]}`. Used by the unit tests and for checking a trace by hand:
`python -m memhint_harness.predict.replay < ops.json`."""
import json
import sys

from .allocator import CachingAllocatorModel, OutOfMemory


def replay(spec):
    model = CachingAllocatorModel(max_split_size=spec.get("maxSplitSize"), capacity=spec.get("capacity"))
    results = []
    for op in spec["ops"]:
        kind = op["op"]
        entry = {}
        try:
            if kind == "malloc":
                entry["block"] = model.malloc(op["key"], op["bytes"])
            elif kind == "free":
                model.free(op["key"])
            elif kind == "empty_cache":
                model.empty_cache()
            else:
                raise ValueError("unknown op %r" % kind)
        except OutOfMemory as error:
            entry["oom"] = str(error)
        entry.update(model.stats())
        results.append(entry)
    return results


if __name__ == "__main__":
    json.dump(replay(json.load(sys.stdin)), sys.stdout)
