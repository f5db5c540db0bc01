"""Storage identity across torch versions.

A tensor's memory is its storage; views, `detach`, in-place ops and `out=` share it. We identify a storage
by its StorageImpl address (`_cdata`, stable across `resize_`) and see its death through a C++ weak
reference (`_weak_ref` / `_expired`): unlike a weakref on the Python tensor, that stays exact when only
C++ (autograd's saved variables, a view's base) keeps the storage alive.
"""
from operator import methodcaller

import torch

# Tensors whose own storage is their memory: the fast path of the tracker's per-op loop.
PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)


def unwrap_subclass(tensor):
    """The tensor that holds a wrapper subclass's data (DTensor's local shard), else `tensor` itself.

    A wrapper subclass (`_make_wrapper_subclass`: DTensor of FSDP2/tensor parallelism) carries a stand-in
    storage of its *logical* size; its memory is its inner tensors (`__tensor_flatten__`). Counting the
    stand-in would charge every rank the global size of a sharded parameter. Subclasses with several inner
    tensors (quantized layouts) are left as they are: which inner tensor is "the" storage is not defined.
    """
    cls = type(tensor)
    if cls in PLAIN_TENSOR_TYPES:
        return tensor
    flatten = getattr(tensor, "__tensor_flatten__", None)
    if flatten is None:
        return tensor
    try:
        names = flatten()[0]
    except Exception:  # noqa: BLE001 - a subclass whose flatten needs state it lacks here
        return tensor
    # Newer torch also flattens opaque objects (DTensor's device_mesh): only inner tensors hold memory.
    inner = [value for value in (getattr(tensor, name, None) for name in names) if isinstance(value, torch.Tensor)]
    return unwrap_subclass(inner[0]) if len(inner) == 1 else tensor


class StorageApi:
    def __init__(self):
        probe = torch.empty(1)
        self.untyped = hasattr(probe, "untyped_storage")
        storage_cls = getattr(torch, "UntypedStorage", None) or getattr(torch, "_UntypedStorage", None)
        self.weak_refs = bool(
            storage_cls is not None and hasattr(storage_cls, "_expired") and hasattr(storage_cls, "_free_weak_ref")
        )
        self._expired = storage_cls._expired if self.weak_refs else None
        # The C function itself, for the tracker's hot loop.
        self.expired_raw = self._expired
        self._free = storage_cls._free_weak_ref if self.weak_refs else None
        self.free_raw = self._free  # the C function itself, for the tracker's hot loop
        # methodcaller: a C-level call, no Python frame per tensor on the tracker's hot path.
        if self.untyped:
            self.storage_of = methodcaller("untyped_storage")
        elif hasattr(probe, "_storage"):
            self.storage_of = methodcaller("_storage")  # torch 1.13: no TypedStorage wrapper per call
        else:
            self.storage_of = methodcaller("storage")
        # Probe once so a torch with an unexpected storage API degrades instead of failing per op.
        storage = self.storage_of(probe)
        storage._cdata  # noqa: B018 - the probe: raises on a torch without it
        storage.nbytes()
        if self.weak_refs:
            handle = storage._weak_ref()
            self._free(handle)

    def describe(self, tensor):
        """(cdata, nbytes, storage) of the tensor's storage, or None for tensors without one."""
        try:
            storage = self.storage_of(unwrap_subclass(tensor))
            return storage._cdata, storage.nbytes(), storage
        except Exception:  # sparse, nested, functional or otherwise storage-less tensors
            return None

    def weak_ref(self, storage):
        return storage._weak_ref() if self.weak_refs else None

    def expired(self, handle):
        return self._expired(handle)

    def free(self, handle):
        if handle is not None:
            self._free(handle)

