"""Backward allocations per autograd node, two witnesses side by side (issue #17): what the dispatch path
sees (a pass-through TorchDispatchMode: each op output whose storage is new, under
`torch._C._current_autograd_node()`) and what the allocation hook keeps (python/memhint_harness/allochook.py,
`start(ops)`: allocator events by the node running). Explains scripts/alloc_path_compare.py's per-line
differences node by node, since both sides here count the same thing per node and no line mapping enters.

    .venv-torch2/bin/python scripts/alloc_node_compare.py --models resnet18,nanogpt,lstm,hf-gpt2 [--ops 0]

Each arm runs in its own process (one warmup step, then the measured step), so both see the same graph
with the same sequence numbers up to a constant offset (the arms run different numbers of steps before),
found from the last node. Prints, per model, how many nodes agree and, for those that do not, the node type,
the byte difference (mode - hook) and the bytes of each op's new outputs the mode saw in those nodes.
"""
import argparse
import collections
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def arm(name, which):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import torch
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode

    import bench_zoo
    from memhint_harness import allochook

    hook, why = allochook.load()
    if hook is None:
        raise SystemExit("the allocation hook is unavailable: " + why)
    torch.set_num_threads(1)
    model, optimizer, inputs, targets, kind = bench_zoo.MODELS[name][1]()
    per, first = collections.Counter(), {}

    class Mode(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.live, self.backward = {}, False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            node = torch._C._current_autograd_node()
            out = func(*args, **(kwargs or {}))
            for tensor in out if isinstance(out, (tuple, list)) else [out]:
                if not isinstance(tensor, torch.Tensor):
                    continue
                storage = tensor.untyped_storage()
                handle = self.live.get(storage._cdata)
                if (handle is None or torch.UntypedStorage._expired(handle)) and storage.nbytes() > 0:
                    self.live[storage._cdata] = storage._weak_ref()
                    if self.backward:
                        key = node._sequence_nr() if node is not None and type(node).__name__ != "AccumulateGrad" else -1
                        per[key] += storage.nbytes()
                        kind_ops = first.setdefault(key, [type(node).__name__, {}])
                        kind_ops[1][str(func)] = kind_ops[1].get(str(func), 0) + storage.nbytes()
            return out

    mode = Mode() if which == "mode" else None

    def step():
        optimizer.zero_grad(set_to_none=True)
        if kind == "hf":
            loss = model(inputs, labels=targets).loss
        else:
            logits = model(inputs)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        hook.take()
        if mode is not None:
            mode.backward = True
        loss.backward()
        _, events = hook.take()
        hook.node_reset()
        if mode is not None:
            mode.backward = False
        optimizer.step()
        return events

    if mode is not None:
        with mode:
            step()
            per.clear()
            first.clear()
            step()
    else:
        step()
        assert hook.start(which == "ops"), "the profiler slot is taken"
        try:
            step()
            for _ptr, size, node, _device in step():
                if size > 0:
                    per[node] += size
        finally:
            hook.stop()
    print(json.dumps({str(k): [v, first.get(k)] for k, v in per.items()}))


def run_arm(name, which):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--arm", which, "--models", name],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    return {int(k): v for k, v in json.loads(out.stdout.decode().strip().splitlines()[-1]).items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="resnet18,nanogpt,lstm,hf-gpt2")
    parser.add_argument("--ops", default="1", help="1: the hook drops what no op output holds (start(ops=True))")
    parser.add_argument("--arm", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.arm:
        return arm(options.models, options.arm)
    for name in options.models.split(","):
        mode, hook = run_arm(name, "mode"), run_arm(name, "ops" if options.ops == "1" else "noops")
        offset = max(k for k in hook if k >= 0) - max(k for k in mode if k >= 0)
        same, diffs = 0, collections.Counter()
        count, ops = collections.Counter(), {}
        for key, (size, what) in mode.items():
            other = hook.get(key + offset if key >= 0 else key, [0])[0]
            if size == other:
                same += 1
                continue
            node = what[0] if what else "?"
            diffs[node] += size - other
            count[node] += 1
            for op, nbytes in (what[1] if what else {}).items():
                ops.setdefault(node, collections.Counter())[op] += nbytes
        extra = sum(1 for key in hook if key >= 0 and key - offset not in mode)
        print("%s: %d nodes equal, %d differ, %d nodes with allocations only in the hook's events"
              % (name, same, sum(count.values()), extra))
        for node, delta in diffs.items():
            print("  %s: %d nodes, mode - hook %+d bytes; the mode's new outputs there: %s" % (
                node, count[node], delta, ", ".join("%s %d" % item for item in ops.get(node, {}).items())))


if __name__ == "__main__":
    main()
