"""CUDA caching-allocator figures: memory_stats subset, memory_summary, fragmentation, memory_viz snapshot."""
import pickle

STAT_KEYS = (
    "allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current",
    "reserved_bytes.all.peak", "active_bytes.all.current", "active_bytes.all.peak",
    "inactive_split_bytes.all.current", "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
)


def start_history(torch):
    memory = getattr(torch.cuda, "memory", None)
    record = getattr(memory, "_record_memory_history", None)
    if record is None:
        return None
    try:
        record(enabled="all", max_entries=100000)  # torch >= 2.1
        return "all"
    except TypeError:
        try:
            record(True)  # torch 2.0
            return "legacy"
        except Exception:  # noqa: BLE001
            return None
    except Exception:  # noqa: BLE001
        return None


def collect(torch, history, snapshot_path, notes, tracker):
    cuda = torch.cuda
    cuda.synchronize()
    stats = cuda.memory_stats()
    subset = {key: int(stats[key]) for key in STAT_KEYS if key in stats}
    allocated, reserved = cuda.memory_allocated(), cuda.memory_reserved()
    written = None
    if history is not None and snapshot_path:
        try:
            memory = torch.cuda.memory
            if hasattr(memory, "_dump_snapshot"):
                memory._dump_snapshot(snapshot_path)
            else:
                with open(snapshot_path, "wb") as handle:
                    pickle.dump(memory._snapshot(), handle)
            written = snapshot_path
        except Exception as error:  # noqa: BLE001
            notes.append("could not write the CUDA memory snapshot: %s" % error)
    elif history is None:
        notes.append("this torch has no torch.cuda.memory._record_memory_history: no memory_viz snapshot")
    return {
        "memoryStats": subset,
        "memorySummary": cuda.memory_summary(),
        "allocatedBytes": allocated,
        "reservedBytes": reserved,
        "maxAllocatedBytes": max(cuda.max_memory_allocated(), tracker.cuda_max_allocated),
        "maxReservedBytes": max(cuda.max_memory_reserved(), tracker.cuda_max_reserved),
        "fragmentationBytes": reserved - allocated,
        "snapshotPath": written,
    }
