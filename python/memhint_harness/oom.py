"""Recognising allocation failures and explaining what to do about them."""
import re

_UNITS = {"b": 1, "bytes": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
          "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3}


def is_oom(error):
    import torch

    for name in ("OutOfMemoryError",):
        for owner in (torch, getattr(torch, "cuda", None)):
            cls = getattr(owner, name, None) if owner is not None else None
            if isinstance(cls, type) and isinstance(error, cls):
                return True
    if isinstance(error, MemoryError):
        return True
    if isinstance(error, RuntimeError):
        text = str(error)
        return ("can't allocate memory" in text or "out of memory" in text.lower()
                or "Tried to allocate" in text)
    return False


def requested_bytes(message):
    # CPU: "DefaultCPUAllocator: can't allocate memory: you tried to allocate 4000000000 bytes."
    match = re.search(r"tried to allocate (\d+) bytes", message, re.IGNORECASE)
    if match:
        return int(match.group(1))
    # CUDA: "Tried to allocate 20.00 MiB (GPU 0; ...)"
    match = re.search(r"Tried to allocate ([\d.]+) ?([KMGT]i?B|B|bytes)", message, re.IGNORECASE)
    if match:
        return int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    return None


def advice(backend, phase, top_kinds, cuda_fragmentation=None):
    tips = []
    if top_kinds.get("activation", 0) or phase == "backward":
        tips.append("Reduce the batch size, or trade compute for memory with activation checkpointing "
                    "(torch.utils.checkpoint.checkpoint) on the largest blocks.")
    else:
        tips.append("Reduce the batch size (or sequence length / image size) of the failing step.")
    tips.append("Use mixed precision (torch.autocast with bfloat16/float16) to halve activation memory.")
    if top_kinds.get("optimizer_state", 0):
        tips.append("Optimizer state is large: consider a fused/foreach=False optimizer, 8-bit optimizers, "
                    "or sharding it (ZeRO / FSDP).")
    if top_kinds.get("temporary", 0):
        tips.append("Large temporaries are alive: delete intermediate tensors you no longer need (`del x`) and "
                    "avoid keeping tensors that hold the autograd graph (use `.item()` / `.detach()`).")
    if backend == "cuda":
        tips.append("If reserved memory is much larger than allocated (fragmentation), set "
                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.")
    return tips
