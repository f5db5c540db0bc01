"""The autograd engine's gradient sums that only a profiler makes out of place (issue #17/#14).

When two gradients flow into the same graph input (`y.sin() + y.cos()`, a weight used twice, a residual
connection), the engine adds the second into the first's block in place (torch >= 2:
torch/csrc/autograd/input_buffer.cpp, `accumulate`): `old_var.add_(var)` when grad mode is off, `old_var`
is not sparse, and `can_accumulate_inplace(old_var)` (a plain tensor: not a subclass, not a ZeroTensor, not
nested; non-overlapping and dense; the buffer holds the only reference to it and to its storage) and `var`
is not a subclass. "Subclass" there is `at::isTensorSubclassLike`, which is true for *every* tensor while a
Python dispatch mode is active: under memhint's mode the same sum runs as `old_var + var`, a new
gradient-sized block the unprofiled program never allocates (ResNet-18: 1,212,416 B per step, nanoGPT
2,097,152 B, GPT-2 about 5 MB). torch 1.13 sums out of place with or without a mode (no observer effect).

The mode cannot change what the engine does, so it changes what it reports: such a sum's result takes over
the first gradient's record (no allocation, no free), as the unprofiled program's in-place sum keeps its
block. The program still runs out of place (its real memory, e.g. CUDA's allocator figures, still holds the
extra block for the sum's duration); only the storage accounting is corrected. Misjudging a sum costs a
misreport, never a wrong gradient, which is why memhint does not run the sum in place itself.

What decides "the engine's sum that would have been in place", per `aten.add.Tensor` seen in backward:
- the conditions of the C++ above, read from the tensors (grad mode, layout, ZeroTensor, nested, density,
  same shape, dtype and device as the result);
- the reference counts: `old_var`'s tensor and storage use counts, minus what the dispatch to Python adds
  (measured once per process by `probe()`, in a sum the engine makes under a pass-through mode), are 1;
- the caller is C++ (the engine or a C++ backward formula): the innermost Python frame is the engine's
  entry (`torch.autograd.backward`/`grad`, `_engine_run_backward`) or there is none (CUDA's device
  threads). A Python backward (`autograd.Function`) or hook adding two tensors is the user's own sum.
A C++ backward formula that adds two same-shaped temporaries it owns alone passes the same tests (and is
under-reported by a block); scripts/gradsum_truth.py finds none on the zoo models (docs/profiler.md).

`probe()` also decides whether the correction applies at all: only where, without any mode, the engine
sums in place and, with one, out of place (torch >= 2 on CPU; not 1.13). No module-level mutable state:
the probe's result lives on the tracker.
"""
from __future__ import annotations

import sys
from typing import Optional

import torch

_add = getattr(getattr(torch.ops.aten, "add", None), "Tensor", None)
# torch >= 2 only (1.13 has neither, and needs no correction): looked up once, read per candidate sum.
_tensor_use_count = getattr(torch.Tensor, "_use_count", None)
_storage_use_count = getattr(torch._C, "_storage_Use_Count", None)
_current_node = getattr(torch._C, "_current_autograd_node", None)


class EngineSums:
    """Recognises the engine's out-of-place gradient sums in a dispatch mode (see the module docstring)."""

    __slots__ = ("op", "tensor_extra", "storage_extra", "entry_codes")

    def __init__(self, tensor_extra: int, storage_extra: int):
        self.op = _add._op  # what the mode compares `func._op` with (OpOverload._op, a C function)
        # The use counts a sole owner's tensor and storage show inside the mode's __torch_dispatch__.
        self.tensor_extra = tensor_extra
        self.storage_extra = storage_extra
        self.entry_codes = _engine_entry_codes()

    def would_be_in_place(self, args, kwargs) -> bool:
        """Whether this `aten.add.Tensor(old, new)` (called in backward, before it runs) is the engine's sum
        that the unprofiled program makes in place."""
        if kwargs or len(args) != 2 or torch.is_grad_enabled():
            return False
        old, new = args
        if type(old) is not torch.Tensor or type(new) is not torch.Tensor:
            return False
        if old.layout is not torch.strided or new.layout is not torch.strided:
            return False
        if old.shape != new.shape or old.dtype != new.dtype or old.device != new.device:
            return False
        if old._is_zerotensor() or old.is_nested or not _non_overlapping_and_dense(old):
            return False
        if _tensor_use_count(old) != 1 + self.tensor_extra:
            return False
        storage = old.untyped_storage()  # pyright: ignore[reportAttributeAccessIssue] (torch 1.13 stubs)
        if _storage_use_count(storage._cdata) != 1 + self.storage_extra:
            return False
        return self._called_by_cpp()

    def _called_by_cpp(self) -> bool:
        """Whether the op was called from C++ (the engine), not from Python code of a backward or a hook."""
        frame = sys._getframe(1)  # the harness's own frames (the mode, the tracker) are skipped below
        while frame is not None and _is_harness_or_mode(frame.f_code.co_filename):
            frame = frame.f_back
        return frame is None or frame.f_code in self.entry_codes


def _is_harness_or_mode(filename: str) -> bool:
    return "memhint_harness" in filename or filename.endswith("_python_dispatch.py") or "/_dynamo/" in filename


def _engine_entry_codes() -> frozenset:
    """The code objects of the Python functions that call into the autograd engine: the innermost Python
    frame while the engine runs a node in the calling thread."""
    import torch.autograd as autograd

    functions = [autograd.backward, autograd.grad, getattr(autograd.graph, "_engine_run_backward", None)]
    codes = set()
    for fn in functions:
        fn = getattr(fn, "__wrapped__", fn)  # memhint's own backward()/grad() patches wrap them
        code = getattr(fn, "__code__", None)
        if code is not None:
            codes.add(code)
    return frozenset(codes)


def _non_overlapping_and_dense(tensor) -> bool:
    """TensorImpl::is_non_overlapping_and_dense, which Python does not expose: the strides, sorted, are the
    running products of the sizes (dimensions of size 1 excepted)."""
    if tensor.is_contiguous():
        return True
    dims = sorted((stride, size) for size, stride in zip(tensor.shape, tensor.stride()) if size != 1)
    expected = 1
    for stride, size in dims:
        if stride != expected:
            return False
        expected *= size
    return True


def probe() -> Optional[EngineSums]:
    """Runs one engine sum without a mode and one under a pass-through mode (a few small tensors, about a
    millisecond): an EngineSums where the mode makes the engine's in-place sum out of place, else None
    (torch 1.13, or a torch that behaves the same either way). Run before memhint's mode is entered."""
    if None in (_add, _tensor_use_count, _storage_use_count, _current_node):
        return None
    try:
        from .dispatch import FastDispatchMode

        if not _sums_in_place(None):
            return None
        seen = []

        class _Counting(FastDispatchMode):  # the same dispatch path as memhint's mode: the same extra counts
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if func._op is _add._op and _current_node() is not None and len(args) == 2:
                    old = args[0]
                    storage = old.untyped_storage()
                    seen.append((old.data_ptr(), _tensor_use_count(old), _storage_use_count(storage._cdata)))
                return func(*args, **(kwargs or {}))

        mode = _Counting()
        if _sums_in_place(mode):
            return None  # the mode changes nothing on this torch
        firsts = {ptr for ptr, _, _ in seen if ptr in mode.firsts}
        counts = {(uses, storage_uses) for ptr, uses, storage_uses in seen if ptr in firsts}
        if len(counts) != 1:
            return None
        ((uses, storage_uses),) = counts
        return EngineSums(uses - 1, storage_uses - 1)
    except Exception:  # noqa: BLE001 - a torch where the probe itself fails: report what the mode sees
        return None


def _sums_in_place(mode) -> bool:
    """One sum of two gradients in the engine (`y.sin() + y.cos()`, y's buffer): whether the gradient
    that reaches y's node is the first contribution's block. Only data pointers are kept (holding a
    gradient would make it shared, hence summed out of place). With `mode`, sets `mode.firsts` to the
    data pointers of the two contributions."""
    x = torch.ones(64, requires_grad=True)
    with torch.enable_grad():
        y = x * 1.0
        sin, cos = y.sin(), y.cos()
        contributions, arrived = [], []
        sin.grad_fn.register_hook(lambda inputs, outputs: contributions.append(inputs[0].data_ptr()))
        cos.grad_fn.register_hook(lambda inputs, outputs: contributions.append(inputs[0].data_ptr()))
        y.grad_fn.register_prehook(lambda outputs: arrived.append(outputs[0].data_ptr()))
        total = (sin + cos).sum()
        backward = getattr(torch.autograd.backward, "__wrapped__", torch.autograd.backward)  # never memhint's patch
        if mode is None:
            backward(total)
        else:
            with mode:
                backward(total)
            mode.firsts = set(contributions)
    return len(arrived) == 1 and arrived[0] in contributions
