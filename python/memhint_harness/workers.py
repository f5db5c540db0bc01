"""DataLoader worker processes: their own memory, per loader and per step.

The profiler's ledger and the OS timeline cover the main process only. A DataLoader with `num_workers > 0`
forks worker processes, and a Dataset holding one Python object per sample (a list of paths, of dicts) is
copied into each of them page by page as they read it: reading an object writes its reference count
(copy-on-read, pytorch/pytorch#13246). That growth is in the workers, and in the RSS of nobody the user
watches. This module finds each multi-process DataLoader iterator when it starts, attributes its worker
pids to the loader (the user line that built the DataLoader), and samples every worker's USS (its private
pages) and PSS (private plus its share of shared ones) from /proc/<pid>/smaps_rollup: RSS counts every
page a worker shares with its parent in full, once per worker, which is exactly the memory that is *not*
duplicated. Samples are taken at each step boundary (main thread, exact per-step figures) and every
`interval_s` by a daemon thread (the per-process series in the timeline). Linux only; elsewhere nothing is
reported.
"""
from __future__ import annotations

import os
import sys
import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

from .userfiles import innermost_user_frame

SMAPS_ROLLUP = "/proc/%d/smaps_rollup"
STAT = "/proc/%d/stat"

# A loader's workers grow "across steps" when their USS (all workers) rises by at least this much per
# profiled step on average. Measured on the fixtures (test/fixtures/profiler/workers): a Dataset of Python objects grows
# its workers by MiBs per step, a numpy one by tens of KiB (allocator noise, the batch being built).
GROWTH_BYTES_PER_STEP = 256 * 1024


def read_memory(pid: int) -> Optional[Tuple[int, int]]:
    """(USS, PSS) in bytes of `pid` from smaps_rollup (Linux >= 4.14), or None when it cannot be read."""
    try:
        with open(SMAPS_ROLLUP % pid, "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    private = pss = 0
    found = False
    for line in text.splitlines():
        # "Private_Dirty:       112 kB"; Pss_Anon/Pss_File/Pss_Dirty are breakdowns of Pss, not added.
        if line.startswith(b"Private_Clean:") or line.startswith(b"Private_Dirty:") \
                or line.startswith(b"Private_Hugetlb:"):
            private += int(line.split()[1]) * 1024
        elif line.startswith(b"Pss:"):
            pss = int(line.split()[1]) * 1024
            found = True
    return (private, pss) if found else None


def start_time(pid: int) -> Optional[int]:
    """The process's start time in clock ticks (field 22 of /proc/<pid>/stat): tells a reused pid apart."""
    try:
        with open(STAT % pid, "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain spaces: split after its closing one.
    fields = text[text.rfind(b")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 else None


class WorkerProcess:
    """One worker process of one loader, with its samples on the harness clock."""

    __slots__ = ("pid", "loader", "worker_id", "started", "t", "uss", "pss", "exited")

    def __init__(self, pid: int, loader: "LoaderRecord", worker_id: int, started: Optional[int]):
        self.pid = pid
        self.loader = loader
        self.worker_id = worker_id
        self.started = started
        self.t: List[float] = []
        self.uss: List[int] = []
        self.pss: List[int] = []
        self.exited = False

    def sample(self, now_ms: float) -> Optional[Tuple[int, int]]:
        if self.exited:
            return None
        memory = read_memory(self.pid)
        if memory is None or start_time(self.pid) != self.started:
            self.exited = True  # gone (the iterator shut its workers down), or the pid was reused
            return None
        self.t.append(now_ms)
        self.uss.append(memory[0])
        self.pss.append(memory[1])
        return memory


class LoaderRecord:
    """A DataLoader the script built, identified by the user line that built it."""

    def __init__(self, index: int, site: Optional[Tuple[str, int, str]], dataset_type: str, num_workers: int):
        self.index = index
        self.site = site
        self.dataset_type = dataset_type
        self.num_workers = num_workers
        self.processes: List[WorkerProcess] = []
        # Per profiled step: (USS, PSS) summed over the loader's live workers at the step's start and end.
        self.at_start: Dict[int, Tuple[int, int]] = {}
        self.at_end: Dict[int, Tuple[int, int]] = {}


class WorkerWatch:
    """Step observer (runner.observers): samples DataLoader workers and reports `dataLoaders`."""

    def __init__(self, is_user: Callable[[str], bool], now_ms: Callable[[], float], interval_s: float = 0.02):
        self._is_user = is_user
        self._now_ms = now_ms
        self._interval_s = interval_s
        self._sites: "weakref.WeakKeyDictionary[Any, Tuple[str, int, str]]" = weakref.WeakKeyDictionary()
        self._records: "weakref.WeakKeyDictionary[Any, LoaderRecord]" = weakref.WeakKeyDictionary()
        self.loaders: List[LoaderRecord] = []
        self._lock = threading.Lock()  # one sampler at a time, and none while the process forks
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._restore: List[Callable[[], None]] = []
        self.available = sys.platform.startswith("linux") and os.path.exists(SMAPS_ROLLUP % os.getpid())

    # ------------------------------------------------------------------ wiring

    def install(self) -> Optional[str]:
        """Patches DataLoader construction and its multi-process iterator. A note when it cannot."""
        if not self.available:
            return None
        try:
            from torch.utils.data import dataloader
        except Exception:  # noqa: BLE001 - no DataLoader, nothing to watch
            return None
        iterator = getattr(dataloader, "_MultiProcessingDataLoaderIter", None)
        if iterator is None:
            return "DataLoader workers are not sampled: this torch has no _MultiProcessingDataLoaderIter"
        watch = self
        loader_init = dataloader.DataLoader.__init__
        iterator_init = iterator.__init__

        def init_loader(loader, *args, **kwargs):
            loader_init(loader, *args, **kwargs)
            watch._built(loader)

        def init_iterator(it, loader, *args, **kwargs):
            iterator_init(it, loader, *args, **kwargs)
            watch._started(it, loader)

        dataloader.DataLoader.__init__ = init_loader  # pyright: ignore[reportAttributeAccessIssue]
        iterator.__init__ = init_iterator
        self._restore = [lambda: setattr(dataloader.DataLoader, "__init__", loader_init),
                         lambda: setattr(iterator, "__init__", iterator_init)]
        if hasattr(os, "register_at_fork"):
            # The sampler thread never holds a file open across a fork (the workers are forked by this
            # process while it samples them).
            # Bound to methods, not to the lock's own: a forked child gets a new lock, and forks again with it.
            os.register_at_fork(before=self._before_fork, after_in_parent=self._after_fork,
                                after_in_child=self._in_child)
        return None

    def _before_fork(self) -> None:
        self._lock.acquire()

    def _after_fork(self) -> None:
        self._lock.release()

    def _in_child(self) -> None:
        self._lock = threading.Lock()  # the parent's was copied held
        self._thread = None
        self.available = False  # a worker samples nothing

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=2.0)
        for restore in self._restore:
            restore()
        self._restore = []

    def _user_site(self) -> Optional[Tuple[str, int, str]]:
        frame = innermost_user_frame(sys._getframe(2), self._is_user)
        if frame is None:
            return None
        return (os.path.abspath(frame.f_code.co_filename), frame.f_lineno, frame.f_code.co_name)

    def _built(self, loader: Any) -> None:
        try:
            if self.available and loader not in self._sites:
                site = self._user_site()
                if site is not None:
                    self._sites[loader] = site
        except Exception:  # noqa: BLE001 - attribution must never break the user's DataLoader
            pass

    def _started(self, iterator: Any, loader: Any) -> None:
        try:
            self._register(iterator, loader)
        except Exception:  # noqa: BLE001
            pass

    def _register(self, iterator: Any, loader: Any) -> None:
        if not self.available:
            return
        record = self._records.get(loader)
        if record is None:
            site = self._sites.get(loader) or self._user_site()
            record = LoaderRecord(len(self.loaders), site, type(loader.dataset).__name__,
                                  int(getattr(loader, "num_workers", 0)))
            self._records[loader] = record
            self.loaders.append(record)
        with self._lock:
            now = self._now_ms()  # read under the lock: the sampler thread appends to the same series
            for worker_id, process in enumerate(getattr(iterator, "_workers", ())):
                pid = getattr(process, "pid", None)
                if pid is None:
                    continue
                worker = WorkerProcess(pid, record, worker_id, start_time(pid))
                record.processes.append(worker)
                worker.sample(now)
        if self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._sample_forever, name="memhint-workers", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------------ sampling

    def _sample_all(self) -> Dict[LoaderRecord, Tuple[int, int]]:
        totals: Dict[LoaderRecord, Tuple[int, int]] = {}
        with self._lock:
            # The clock is read under the lock: the sampler thread and a step boundary both sample, and a time
            # read before waiting for the other could land after that sampler's later time (series out of order).
            now = self._now_ms()
            for record in self.loaders:
                uss = pss = 0
                for worker in record.processes:
                    memory = worker.sample(now)
                    if memory is not None:
                        uss += memory[0]
                        pss += memory[1]
                totals[record] = (uss, pss)
        return totals

    def _sample_forever(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self._sample_all()
            except Exception:  # noqa: BLE001 - a sampler failure costs the series, never the run
                return

    # ------------------------------------------------------------------ step observer

    def step_begin(self, profiled: Optional[int]) -> None:
        if profiled is None or not self.loaders:
            return
        for record, memory in self._sample_all().items():
            record.at_start[profiled] = memory

    def step_end(self, profiled: Optional[int]) -> None:
        if profiled is None or not self.loaders:
            return
        for record, memory in self._sample_all().items():
            record.at_end[profiled] = memory

    # ------------------------------------------------------------------ report

    def contribute(self, report: Dict[str, Any], code_of: Callable[[str, int], str]) -> None:
        self.close()
        if not self.loaders:
            return
        loaders = []
        processes = []
        for record in self.loaders:
            loaders.append(self._loader_entry(record, code_of))
            for worker in record.processes:
                if worker.t:
                    processes.append({"pid": worker.pid, "role": "dataloader_worker", "loader": record.index,
                                      "worker": worker.worker_id, "t": worker.t, "ussBytes": worker.uss,
                                      "pssBytes": worker.pss})
        report["dataLoaders"] = loaders
        report["timeline"]["processes"] = processes
        for entry in loaders:
            if entry["grows"]:
                report["notes"].append(growth_note(entry))

    def _loader_entry(self, record: LoaderRecord, code_of: Callable[[str, int], str]) -> Dict[str, Any]:
        steps = sorted(set(record.at_start) & set(record.at_end))
        uss = [record.at_end[s][0] for s in steps]
        pss = [record.at_end[s][1] for s in steps]
        # From the first profiled step's start to the last one's end: a worker produces about one batch per
        # step, but which step a batch lands in depends on prefetching, so single steps jitter (0, then 2).
        growth = int((uss[-1] - record.at_start[steps[0]][0]) / len(steps)) if steps else 0
        grows = growth >= GROWTH_BYTES_PER_STEP
        file, line, function = record.site if record.site is not None else ("<untracked>", 0, "")
        return {"file": file, "line": line, "function": function,
                "code": code_of(file, line) if record.site is not None else "",
                "datasetType": record.dataset_type, "numWorkers": record.num_workers,
                "pids": [worker.pid for worker in record.processes],
                "ussByStep": uss, "pssByStep": pss, "ussGrowthPerStep": growth, "grows": grows}


def growth_note(entry: Dict[str, Any]) -> str:
    where = "%s:%d" % (os.path.basename(entry["file"]), entry["line"]) if entry["line"] else "a library"
    return ("the DataLoader workers of the loader built at %s (%s, %d worker(s)) grew by %.1f KiB per step "
            "(USS, all workers): copy-on-read, each worker copies the pages of the Dataset's Python objects "
            "it reads (reference counts are writes); keep the samples in numpy arrays or tensors "
            "(pytorch/pytorch#13246)" % (where, entry["datasetType"], entry["numWorkers"],
                                         entry["ussGrowthPerStep"] / 1024.0))
