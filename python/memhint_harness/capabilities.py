"""Feature detection across torch 1.13 .. 2.x: what we can measure, and notes for what we cannot."""


def detect(torch):
    notes = []
    try:
        from torch.utils._python_dispatch import TorchDispatchMode  # noqa: F401

        dispatch = True
    except ImportError:
        dispatch = False
    graph = getattr(torch.autograd, "graph", None)
    caps = {
        "torchDispatchMode": dispatch,
        "untypedStorage": hasattr(torch.Tensor, "untyped_storage"),
        "savedTensorsHooks": graph is not None and hasattr(graph, "saved_tensors_hooks"),
        "currentAutogradNode": hasattr(torch._C, "_current_autograd_node"),
        "cudaAvailable": bool(torch.cuda.is_available()),
        "cudaMemoryHistory": hasattr(getattr(torch.cuda, "memory", None), "_record_memory_history"),
        "outOfMemoryError": hasattr(torch, "OutOfMemoryError") or hasattr(torch.cuda, "OutOfMemoryError"),
    }
    if not caps["currentAutogradNode"]:
        notes.append("torch %s has no torch._C._current_autograd_node(): backward allocations are matched to "
                     "forward lines with autograd node post-hooks (exact on CPU, where nodes run one at a time)."
                     % torch.__version__)
    return caps, notes
