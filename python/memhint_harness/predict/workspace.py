"""cuBLAS workspaces in the predicted allocator (measured on an H200 with torch 2.11: two 32 MiB blocks).

PyTorch gives every (cuBLAS handle, stream) pair a workspace allocated through the caching allocator
(aten/src/ATen/cuda/CublasHandlePool.cpp, `setWorkspaceForHandle`), so it counts in memory_allocated and
stays allocated for the life of the process; cuBLASLt matmuls share it (`getCUDABlasLtWorkspace`). Handles
are per thread, and on CUDA autograd runs backward on its own device thread: a training step has one
workspace for the forward/optimizer thread and one for backward. On meta nothing runs on a device thread,
so the phase in which a cuBLAS op first runs stands for the thread.

Size: `CUBLAS_WORKSPACE_CONFIG` (":SIZE_KiB:COUNT" pairs, summed) when set, else PyTorch's default,
":4096:2:16:8" (8 MiB + 128 KiB) and 32 MiB on compute capability 9.0 (Hopper).
"""
import re
from typing import Dict, Optional, Tuple

# aten ops that reach cuBLAS on CUDA (matmul, linear, einsum and the attention math decompose into these).
CUBLAS_OPS = frozenset((
    "mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot", "_addmm_activation",
    "addr", "_int_mm", "_scaled_mm",
))

KiB = 1024


def workspace_bytes(capability: Tuple[int, int], config: Optional[str]) -> int:
    """Bytes of one cuBLAS workspace, as parseChosenWorkspaceSize() computes it."""
    default = 4096 * 8 * KiB if tuple(capability) == (9, 0) else 4096 * KiB * 2 + 16 * KiB * 8
    if not config:
        return default
    pairs = re.findall(r":([0-9]+):([0-9]+)", config)
    if not pairs:
        return default  # PyTorch warns and uses the default
    return sum(int(size) * int(count) * KiB for size, count in pairs)


class CublasWorkspaces:
    """Allocates, in the allocator model, the workspace of each thread the first time it runs a cuBLAS op."""

    def __init__(self, model, nbytes: int, phase):
        self.model = model
        self.nbytes = nbytes
        self.phase = phase  # () -> "forward" | "backward" | "other" (the tracker's phase)
        self.allocated: Dict[str, str] = {}  # thread ("main" | "backward") -> the op that first needed it
        self._cublas: Dict[object, bool] = {}  # OpOverload -> whether it reaches cuBLAS on CUDA

    def on_op(self, func) -> None:
        """Called with every aten op (an OpOverload) before it runs, by the prediction's dispatch mode."""
        if len(self.allocated) == 2:
            return  # both threads have theirs: nothing more to allocate for the rest of the run
        cublas = self._cublas.get(func)
        if cublas is None:
            # decided once per OpOverload: the packet's name is several attribute lookups per op
            cublas = self._cublas[func] = func.overloadpacket.__name__ in CUBLAS_OPS
        if not cublas:
            return
        thread = "backward" if self.phase() == "backward" else "main"
        if thread in self.allocated:
            return
        self.allocated[thread] = func.overloadpacket.__name__
        self.model.malloc(("cublas-workspace", thread), self.nbytes)

    def note(self) -> Optional[str]:
        if not self.allocated:
            return None
        return ("included: %d cuBLAS workspace(s) of %d bytes (one per thread that runs a matmul: %s), which "
                "PyTorch allocates through the caching allocator and keeps for the life of the process; "
                "set CUBLAS_WORKSPACE_CONFIG or --compute-capability to match the target GPU"
                % (len(self.allocated), self.nbytes, " and ".join(sorted(self.allocated))))


def parse_capability(text: Optional[str]) -> Tuple[int, int]:
    """"9.0" -> (9, 0); None -> (8, 0), the A100 the stand-in device has always reported."""
    if not text:
        return (8, 0)
    match = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", text)
    if match is None:
        raise ValueError("--compute-capability %r is not MAJOR.MINOR (e.g. 9.0)" % text)
    return (int(match.group(1)), int(match.group(2)))
