"""`--predict`: the profiler's per-line accounting on meta tensors, reported for a predicted CUDA device.

The same Tracker, analysis State, Runner and report builder as `profile` run unchanged; only the device
differs (tensors live on `meta`, see device.py). On top: a model of the CUDA caching allocator fed with the
same allocation/free sequence (allocator.py), the per-module breakdown of the profiler (../modules.py), autocast emulation
(autocast.py) and activation checkpointing of chosen modules (checkpoint.py).
"""
import gc
import os
import platform
import sys
import time
from typing import Optional

from .. import HARNESS_VERSION
from .allocator import CachingAllocatorModel

CUDA_CONTEXT_NOTE = ("not included: the CUDA context and kernels loaded by the driver (about 300-500 MiB per "
                     "process on current GPUs and drivers, more with many kernels/libraries loaded, e.g. "
                     "cuBLAS/cuDNN handles), which nvidia-smi shows but torch.cuda.memory_reserved() does not")
WORKSPACE_NOTE = ("not included: workspaces cuDNN allocates through the caching allocator for convolutions and "
                  "RNNs (they depend on the algorithm cuDNN picks on the real GPU: tens to hundreds of MiB); "
                  "see docs/predict.md")


def supported(torch):
    """None when this torch can predict, else a one-line reason."""
    try:
        major = int(str(torch.__version__).split(".")[0])
    except ValueError:
        major = 0
    if major < 2:
        return ("memhint predict needs torch >= 2.0 (meta kernels for training ops); %s has torch %s"
                % (sys.executable, torch.__version__))
    return None


class AllocatorFeed:
    """Feeds the tracker's storage events to the allocator model and notes where it first exceeds capacity."""

    def __init__(self, tracker, model, capacity):
        self.tracker = tracker
        self.model = model
        self.capacity = capacity
        self.crossed: Optional[tuple] = None  # (site, reserved, allocated, step, phase)
        self.step_max = None  # (max_allocated, max_reserved) within profiled steps

    def install(self):
        tracker = self.tracker
        grow, on_free = tracker._grow, tracker._on_free
        model = self.model

        def _grow(rec, nbytes, bw_site):
            if rec.serial in model.blocks:
                model.resize(rec.serial, rec.nbytes)
            else:
                model.malloc(rec.serial, rec.nbytes)
            if self.capacity is not None and self.crossed is None and model.reserved > self.capacity:
                self.crossed = (rec.site, model.reserved, model.allocated, tracker.step_index, tracker.phase())
            grow(rec, nbytes, bw_site)

        def _on_free(rec, nbytes):
            if rec.cdata not in tracker.live or tracker.live[rec.cdata] is not rec:
                model.free(rec.serial)
            on_free(rec, nbytes)

        tracker._grow, tracker._on_free = _grow, _on_free


def predict(torch, options, channel):
    from .. import cli
    from ..capabilities import detect
    from ..report import build_report, _code
    from ..storage import StorageApi
    from ..userfiles import UserFiles
    from .autocast import AutocastEmulation
    from .device import CudaStandIn, MetaDevice
    from .metacache import MetaKernelCache

    from .workspace import CublasWorkspaces, parse_capability, workspace_bytes

    reason = supported(torch)
    try:
        capability = parse_capability(options.compute_capability)
    except ValueError as error:
        return cli._error(channel, "bad_arguments", str(error))
    world = None
    if reason is None and options.world_size is not None:
        from .ranks import FakeWorld, unavailable

        if options.world_size < 1 or not 0 <= options.rank < options.world_size:
            return cli._error(channel, "bad_arguments", "--rank must be in [0, --world-size)")
        reason = unavailable(torch)
        world = FakeWorld(torch, options.world_size, options.rank) if reason is None else None
    if reason is not None:
        return cli._error(channel, "unsupported_torch", reason)
    started = time.perf_counter()
    caps, notes = detect(torch)
    caps = dict(caps, cudaAvailable=False)
    environment = {"python": sys.executable, "pythonVersion": platform.python_version(),
                   "torchVersion": str(torch.__version__), "backend": "cuda", "device": "cuda (predicted)",
                   "pid": os.getpid(), "capabilities": caps}
    channel.send("hello", harnessVersion=HARNESS_VERSION, **environment)

    storage_api = StorageApi()
    user_files = UserFiles()
    tracker, state, runner, mode = cli.instrument(torch, options, "meta", channel, storage_api, user_files)
    capacity = options.device_memory
    model = CachingAllocatorModel(max_split_size=options.max_split_size)
    feed = AllocatorFeed(tracker, model, capacity)
    feed.install()
    workspaces = CublasWorkspaces(model, workspace_bytes(capability, os.environ.get("CUBLAS_WORKSPACE_CONFIG")),
                                  tracker.phase)
    emulation = AutocastEmulation()
    emulation.install()
    device_mode = MetaDevice(user_files, emulation)
    kernels = MetaKernelCache(observe=workspaces.on_op)
    _wrap_step(torch, runner, options, state, notes, device_mode)

    stand_in = CudaStandIn(lambda: model.allocated, lambda: model.max_allocated, capacity, capability)
    if world is not None:
        world.install()
        runner.observers.append(world.collectives)  # each record says which step issued it
        device_mode.device_libraries = world.device_libraries  # FSDP allocates on its (host) mesh device
    # As the profiler does (cli._run): torch's and the harness's own objects never become garbage; out of the
    # cyclic GC's generations, its full collections while the user's code runs scan only the user's objects
    # (measured, 7B Llama case: GC 1.04 -> 0.71 s of CPU). Nothing of the user's exists yet to be kept.
    if hasattr(gc, "freeze"):
        gc.freeze()
    try:
        # kernels below the profiler's mode: it sees the outputs the memoised meta kernels build (and
        # shows each op to the cuBLAS workspace model before it runs)
        failure = cli.run_target(tracker, runner, options, user_files, [stand_in, device_mode, kernels, mode],
                                 classify=_refusal_kind)
    finally:
        emulation.remove()
    if world is not None and failure is not None and failure[0] == "unsupported_torch":
        failure = (failure[0], world.refusal(), None, failure[3])  # one line: no exception type, no traceback
    world_description = world.describe() if world is not None else None
    if world is not None:
        world.remove()
    cli.close_epoch(tracker, runner, notes)

    notes.extend(runner.notes)
    notes.extend(device_mode.notes())
    if tracker.internal_error is not None:
        notes.append("memhint stopped measuring after an internal error; figures are partial:\n"
                     + tracker.internal_error)
    measured = runner.measured_steps()
    if failure is not None and measured == 0:
        return cli._error(channel, failure[0], failure[1], failure[2], failure[3])
    notes.append("predicted on meta tensors: no kernel ran; " + CUDA_CONTEXT_NOTE)
    if workspaces.note() is not None:
        notes.append(workspaces.note())
    notes.append(WORKSPACE_NOTE)
    if world is not None:
        notes.append("predicted rank %d of %d on torch's fake process group: collectives move no data, and the "
                     "communication library's own buffers (NCCL) are not included (docs/distributed.md)"
                     % (options.rank, options.world_size))
    report = build_report(options, environment, notes, tracker, state, runner, None,
                          partial=failure is not None or measured < options.steps
                          or tracker.internal_error is not None)
    report["mode"] = "predicted"
    crossed = None
    if feed.crossed is not None:
        site, reserved, allocated, step, phase = feed.crossed
        crossed = {"file": site[0], "line": site[1], "function": site[2], "code": _code(site[0], site[1]),
                   "reservedBytes": reserved, "allocatedBytes": allocated, "step": step, "phase": phase}
    report["prediction"] = {
        "allocator": dict(model.stats(), model="CUDACachingAllocator (native, 1 stream)",
                          maxSplitSize=options.max_split_size),
        "rawPeakBytes": max((s["peakLive"] for s in report["steps"]), default=0),
        "deviceMemoryBytes": capacity,
        "fits": None if capacity is None else feed.crossed is None,
        "firstExceeded": crossed,
        "computeCapability": "%d.%d" % capability,
        "cublasWorkspaceBytes": workspaces.nbytes * len(workspaces.allocated),
        "amp": options.amp,
        "checkpoint": options.checkpoint,
        "setupArgs": options.setup_args or {},
        "seconds": time.perf_counter() - started,
    }
    if world_description is not None:
        report["prediction"]["world"] = world_description
    # Per-module figures come from the profiler's own ledger (modules.py, installed by cli.instrument): one
    # breakdown for measured and predicted reports.
    report.setdefault("modules", [])
    channel.send("result", report=report)
    if failure is not None:
        return cli._error(channel, failure[0], failure[1], failure[2], failure[3])
    return 0


def _refusal_kind(error):
    """What the prediction refuses (FSDP on meta) is reported like an unsupported torch: one line, no traceback."""
    from .ranks import FsdpOnMeta

    return "unsupported_torch" if isinstance(error, FsdpOnMeta) else None


def _wrap_step(torch, runner, options, state, notes, device_mode):
    """--amp and --checkpoint: the step runs under autocast / with matching modules checkpointed."""
    if not options.amp and not options.checkpoint:
        return
    original = runner.call_step
    done = {"checkpoint": False}

    def call_step(target, args, kwargs):
        if options.checkpoint and not done["checkpoint"]:
            from .checkpoint import checkpoint_modules

            done["checkpoint"] = True
            wrapped = checkpoint_modules(list(state.registry.modules), options.checkpoint, device_mode)
            notes.append("--checkpoint %s: %d module(s) checkpointed%s" % (
                options.checkpoint, len(wrapped), (": " + ", ".join(wrapped[:8]) + (" ..." if len(wrapped) > 8
                                                                                     else "")) if wrapped else ""))
        if options.amp:
            dtype = torch.bfloat16 if options.amp == "bf16" else torch.float16

            def under_autocast(*a, **k):
                with torch.autocast("cuda", dtype=dtype):
                    return target(*a, **k)

            return original(under_autocast, args, kwargs)
        return original(target, args, kwargs)

    runner.call_step = call_step
