"""Kinds, the peak's composition and leaks across steps on the event-fed path (issue #17, session 20).

analysis.State reads the dispatch path's ledger (StorageRecs keyed by StorageImpl). The event path has no
ledger: the allocation hook's blocks are EventLines records keyed by address (event_lines.R_*), and a
storage's data_ptr is its block's address (CPU: one allocation per storage). The same rules apply:

- kinds are stamped at the boundaries (step start and end, the end of each backward()): a block that is a
  parameter, buffer, gradient or optimizer state *now* gets that kind, any other loses it (a replaced
  gradient kept in a list is a leak); saved for backward (the pack hook) makes an activation, a step
  argument an input, the rest is temporary;
- what was live at the step's peak is replayed from the step's events (EventLines.live_at_peak), once per
  step whose peak is the highest so far;
- at the start of epoch e, a block made in epoch e - 2 (a profiled one) that is still live and not state has
  leaked; a line whose survivors mostly die later keeps them for a bounded number of steps (not a leak);
  the containers holding a leak are named at the last boundary (analysis.describe_holders, by address).

Not here yet: autograd graphs kept alive by a leak and graphs that grow across steps (they need the tensor
of each block: the dispatch path keeps a weak reference per forward output, one Python call per op).
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

from .analysis import State, composition, describe_holders, site_location
from .event_lines import R_BYTES, R_EPOCH, R_HINT, R_MODULE, R_SAVED, R_SITE, R_STATE, Key, Record
from .records import UNTRACKED

Site = Tuple[str, int, str]


class _BlockApi:
    """analysis.describe_holders' view of a tensor, by its block's address instead of its StorageImpl."""

    def __init__(self, storage_of):
        self._storage_of = storage_of

    def describe(self, tensor):
        try:
            storage = self._storage_of(tensor)
            return storage.data_ptr(), storage.nbytes(), storage
        except Exception:  # storage-less tensors
            return None


class _HolderView:
    """What describe_holders reads of a tracker: api, device_type, user_files."""

    def __init__(self, tracker):
        self.api = _BlockApi(tracker._storage_of)
        self.device_type = tracker.device_type
        self.user_files = tracker.user_files


class EventState(State):
    def _site(self, key: Optional[Key]) -> Site:
        if key is None:
            return UNTRACKED
        return key + (self.tracker.funcs.get(key, ""),)

    @staticmethod
    def record_kind(rec: Record) -> str:
        if rec[R_STATE] is not None:
            return rec[R_STATE]
        if rec[R_SAVED]:
            return "activation"
        if rec[R_HINT] == "input":
            return "input"
        return "temporary"

    def stamp_state_kinds(self) -> Dict[int, str]:
        tracker = self.tracker
        tracker.drain()
        current: Dict[int, str] = {}
        for kind, tensor in self.registry.state_tensors():
            address = tracker.block_of(tensor)
            if address is not None:
                current.setdefault(address, kind)
        get = current.get
        for address, rec in tracker.feed.records.items():
            rec[R_STATE] = get(address)
        return current

    # ------------------------------------------------------------ peak

    def consider_peak(self, log, events, tracker):
        if self.best_peak is not None and log.peak <= self.best_peak["bytes"]:
            return
        live = tracker.feed.live_at_peak(tracker.step_start_records)
        snapshot = self.block_snapshot(live, log.peak)
        if tracker.modules is not None:
            tracker.modules.note_peak_by_module((rec[R_MODULE], rec[R_BYTES]) for rec in live)
            tracker.modules.note_optimizers(self.registry.optimizers, tracker.api.describe)
        snapshot.update(step=log.index, atMs=log.peak_at, location=site_location(tracker.step_peak_site),
                        phase=tracker.step_peak_phase)
        self.best_peak = snapshot

    def block_snapshot(self, records: Iterable[Record], total: int):
        """analysis.State.snapshot over block records."""
        return composition(((self.record_kind(rec), rec[R_BYTES], self._site(rec[R_SITE])) for rec in records), total)

    # ------------------------------------------------------------ leaks

    def _note_leaks(self, leak_epoch, current):
        """analysis.State._note_leaks over block records."""
        for address, rec in self.tracker.feed.records.items():
            if rec[R_EPOCH] == leak_epoch and address not in current and rec[R_SITE] is not None:
                site = self._site(rec[R_SITE])
                per_epoch = self.leaks.setdefault(site, {})
                per_epoch[leak_epoch] = per_epoch.get(leak_epoch, 0) + rec[R_BYTES]
                self.leaked_cdatas.setdefault(site, set()).add(address)
                # The record itself tells a reused address apart (the dispatch path's serial).
                self.leaked_by_epoch.setdefault(site, {}).setdefault(leak_epoch, []).append((address, rec))

    def _count_graphs(self, epoch, current):
        """Graphs never backpropagated are not counted from events yet (the report's notes say so)."""

    def _find_bounded(self, leak_epoch):
        records = self.tracker.feed.records
        for site, by_epoch in self.leaked_by_epoch.items():
            if site in self.bounded:
                continue
            for epoch in sorted(e for e in by_epoch if e < leak_epoch):
                entries: List[Tuple[int, Record]] = by_epoch[epoch]
                alive = sum(rec[R_BYTES] for address, rec in entries if records.get(address) is rec)
                if 2 * alive < sum(rec[R_BYTES] for _, rec in entries):
                    self.bounded[site] = epoch
                    break

    def _name_holders(self):
        records = self.tracker.feed.records
        alive = {site: [a for a in addresses if a in records] for site, addresses in self.leaked_cdatas.items()
                 if site not in self.bounded}
        try:
            names = describe_holders(_HolderView(self.tracker), {a for addresses in alive.values() for a in addresses})
        except Exception:  # naming is a courtesy; never fail the profile for it
            return
        for site, addresses in alive.items():
            held = sorted({names[a] for a in addresses if a in names})
            if held:
                self.holders[site] = ", ".join(held)
