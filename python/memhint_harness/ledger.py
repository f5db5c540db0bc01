"""The live storages, in two generations, and how their deaths are found.

A storage's death is seen through its C++ weak reference (`_expired`). Checking every live storage before
each allocation would cost O(live) per op, so storages are split in two generations: `young` (everything
but parameters and optimizer state, which practically never die inside a step) is checked before each
allocation, `old` only at line boundaries, around backward() and at step boundaries."""
from __future__ import annotations

from itertools import compress
from typing import Dict, List

from .records import StorageRec


class StorageLedger:
    # young_handles has young's keys in young's order (old_handles likewise): compress() pairs them.
    __slots__ = ("live", "young", "young_handles", "old", "old_handles", "_expired", "_scan")

    def __init__(self, expired, scan=None):
        self.live: Dict[int, StorageRec] = {}  # cdata -> StorageRec, both generations
        self.young: Dict[int, StorageRec] = {}
        self.young_handles: Dict[int, object] = {}
        self.old: Dict[int, StorageRec] = {}  # parameters and optimizer state
        self.old_handles: Dict[int, object] = {}
        self._expired = expired
        # expiry.py's scanner: _cexpiry.c's dead_records(recs, handles, expired, into), the same records in
        # the same order as the compress() below; None: the scan below.
        self._scan = scan

    def remember(self, rec):
        """A new live storage, in the young generation."""
        cdata = rec.cdata
        self.live[cdata] = self.young[cdata] = rec
        self.young_handles[cdata] = rec.handle

    def forget(self, rec):
        cdata = rec.cdata
        del self.live[cdata]
        if self.young.pop(cdata, None) is not None:
            del self.young_handles[cdata]
        else:
            del self.old[cdata]
            del self.old_handles[cdata]

    def set_generation(self, rec, old):
        """Moves a live storage between the generations (called when kinds are stamped)."""
        cdata = rec.cdata
        if old and cdata in self.young:
            del self.young[cdata], self.young_handles[cdata]
            self.old[cdata], self.old_handles[cdata] = rec, rec.handle
        elif not old and cdata in self.old:
            del self.old[cdata], self.old_handles[cdata]
            self.young[cdata], self.young_handles[cdata] = rec, rec.handle

    def expired(self, full) -> List[StorageRec]:
        """The records whose storage died: the young generation's, and with `full` the old one's too."""
        expired = self._expired
        scan = self._scan
        if scan is not None:
            dead = scan(self.young, self.young_handles, expired, [])
            if full and self.old:
                scan(self.old, self.old_handles, expired, dead)
            return dead
        # list() runs compress to the end before the caller forgets records; both dicts share a key order.
        dead = list(compress(self.young.values(), map(expired, self.young_handles.values())))
        if full and self.old:
            dead.extend(compress(self.old.values(), map(expired, self.old_handles.values())))
        return dead
