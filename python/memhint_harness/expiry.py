"""The ledger's expiry scan in C (_cexpiry.c), and the check that lets it read strong counts directly.

`scanner(storage_api)` is what StorageLedger uses to find dead storages: _cexpiry.c's dead_records when the C
extension loaded (None: ledger.py's compress/map over `_expired`, with MEMHINT_CTRACE=0 or without a
compiler). Before it is handed out, `calibrate` checks once per process, on storages made here and against
torch's own `_expired`, that the strong count of a storage is where _cexpiry.c's direct mode reads it; only
then is direct mode switched on. Any mismatch (another torch layout) leaves every check to `_expired`.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import torch

from . import ctrace

_calibrated: Optional[bool] = None  # decided once per process: whether direct mode is on


def calibrate(module: Any, storage_api: Any) -> bool:
    """Whether module.strong_count(handle) follows the storage's strong references exactly: one more per
    tensor sharing the storage, back down as they go, 0 exactly when `_expired` says the storage died."""
    if not storage_api.weak_refs:
        return False
    expired, free = storage_api.expired_raw, storage_api.free_raw
    tensor = torch.empty(16)
    storage = storage_api.storage_of(tensor)
    handle = storage._weak_ref()
    try:
        base = module.strong_count(handle)
        counts = [base]
        views = []
        for _ in range(3):
            views.append(tensor.view(-1))  # a new TensorImpl on the same storage: one strong reference
            counts.append(module.strong_count(handle))
        ok = base >= 1 and counts == [base + i for i in range(4)] and not expired(handle)
        del views
        ok = ok and module.strong_count(handle) == base
        del tensor, storage
        return bool(ok and expired(handle) and module.strong_count(handle) == 0)
    finally:
        free(handle)


def scanner(storage_api: Any) -> Optional[Callable[..., Any]]:
    """_cexpiry.c's dead_records(recs, handles, expired, into), or None (the Python scan)."""
    global _calibrated
    module, _ = ctrace.load()
    scan = getattr(module, "dead_records", None) if module is not None else None
    if scan is None:
        return None
    if _calibrated is None:
        try:
            _calibrated = calibrate(module, storage_api)
        except Exception:  # noqa: BLE001 - no direct reads where the check cannot even run
            _calibrated = False
        module.set_direct_expiry(_calibrated)
    return scan


def direct_reads() -> bool:
    """Whether the C scan reads strong counts directly (for the tests and the benchmarks)."""
    module, _ = ctrace.load()
    return bool(module is not None and module.direct_expiry())
