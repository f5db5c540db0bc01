"""Storage identity across torch versions.

A tensor's memory is its storage; views, `detach`, in-place ops and `out=` share it. We identify a storage
by its StorageImpl address (`_cdata`, stable across `resize_`) and see its death through a C++ weak
reference (`_weak_ref` / `_expired`): unlike a weakref on the Python tensor, that stays exact when only
C++ (autograd's saved variables, a view's base) keeps the storage alive.
"""
from operator import methodcaller

import torch


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
            storage = self.storage_of(tensor)
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

