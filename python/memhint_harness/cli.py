"""Entry point: `python -m memhint_harness --protocol-fd 3 --script train.py --function train_step ...`."""
import argparse
import gc
import os
import platform
import sys
import traceback

from . import HARNESS_VERSION, lifeline
from .protocol import NONCE_ENV, Channel


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="memhint_harness", add_help=True)
    parser.add_argument("--protocol-fd", type=int, default=None)
    parser.add_argument("--script", required=True)
    parser.add_argument("--function", default=None)
    parser.add_argument("--setup", default=None)
    parser.add_argument("--loop", default=None,
                        help="without --function: 'auto' (find the training loop), the header line of a loop "
                             "in the script, or FILE:LINE for a loop in a module of yours that the script runs")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=None)
    parser.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--cuda-path", choices=("auto", "trace", "dispatch"), default="auto",
                        help="cuda backend: the allocator's own history (trace; auto where this torch has it) or "
                             "a Python dispatch mode on every op (dispatch)")
    parser.add_argument("--budget", type=int, default=None, help="bytes")
    parser.add_argument("--memory-limit", type=int, default=None,
                        help="address-space headroom in bytes above the size after importing torch (RLIMIT_AS)")
    parser.add_argument("--cuda-snapshot", default=None, help="where to write the memory_viz snapshot")
    # Prediction (python/memhint_harness/predict): meta tensors, a predicted CUDA device.
    parser.add_argument("--predict", action="store_true")
    parser.add_argument("--setup-args", default=None, help="JSON object of keyword arguments for --setup")
    parser.add_argument("--device-memory", type=int, default=None, help="bytes")
    parser.add_argument("--amp", choices=("bf16", "fp16"), default=None)
    parser.add_argument("--checkpoint", default=None, help="module path/class pattern(s) to checkpoint")
    parser.add_argument("--compute-capability", default=None,
                        help="with --predict: the target GPU's MAJOR.MINOR (cuBLAS workspace size); default 8.0")
    parser.add_argument("--max-split-size", type=int, default=None, help="allocator max_split_size in bytes")
    parser.add_argument("--world-size", type=int, default=None,
                        help="predict one rank of a job of this many ranks on a fake process group (predict/ranks.py)")
    parser.add_argument("--rank", type=int, default=0, help="with --world-size: the rank predicted")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    if options.script_args and options.script_args[0] == "--":
        options.script_args = options.script_args[1:]
    options.setup_args = _setup_args(options.setup_args, parser)
    return options


def _setup_args(text, parser):
    if text is None:
        return None
    import json

    try:
        value = json.loads(text)
    except ValueError as error:
        parser.error("--setup-args is not JSON: %s" % error)
    if not isinstance(value, dict):
        parser.error("--setup-args must be a JSON object")
    return value


def main(argv, observers=()):
    """`observers`: further observers.StepObserver told of the step boundaries (the distributed entry point's
    collective log)."""
    try:
        options = parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    # Before the user's code runs: the nonce leaves the environment (the script's subprocesses never see
    # it), the protocol descriptor moves out of reach, and the harness's life is tied to the launcher's.
    nonce = os.environ.pop(NONCE_ENV, None)
    channel = Channel(options.protocol_fd, nonce)
    lifeline.start()
    try:
        return _run(options, channel, observers)
    finally:
        channel.close()


def _error(channel, kind, message, trace=None, location=None, report=None):
    channel.send("error", kind=kind, message=message, traceback=trace, location=location)
    return 1


def _user_location(tb, user_files):
    """Innermost frame of the traceback that is in a user file."""
    found = None
    for frame, lineno in traceback.walk_tb(tb):
        if user_files.is_user(frame.f_code.co_filename):
            found = {"file": os.path.abspath(frame.f_code.co_filename), "line": lineno,
                     "function": frame.f_code.co_name}
    return found


def _run(options, channel, observers=()):
    if options.function is None and options.setup is not None:
        return _error(channel, "bad_arguments", "--setup needs a target function (script.py::function)")
    if options.loop not in (None, "auto") and not options.loop.isdigit() \
            and not options.loop.rpartition(":")[2].isdigit():
        return _error(channel, "bad_arguments", "--loop must be auto, a line number or FILE:LINE")
    if options.warmup < 0 or options.steps < 1:
        return _error(channel, "bad_arguments", "--warmup must be >= 0 and --steps >= 1")
    try:
        import torch
    except Exception as error:  # noqa: BLE001 - any import failure means "no usable torch"
        return _error(channel, "torch_missing", "cannot import torch with %s: %s" % (sys.executable, error))

    if options.predict:
        from .predict.run import predict

        return predict(torch, options, channel)
    if options.setup_args and options.setup is None:
        return _error(channel, "bad_arguments", "--setup-args needs --setup")

    from . import cudainfo
    from .capabilities import detect
    from .report import build_report
    from .storage import StorageApi
    from .userfiles import UserFiles

    caps, notes = detect(torch)
    backend = options.backend
    if backend == "auto":
        backend = "cuda" if caps["cudaAvailable"] else "cpu"
    if backend == "cuda" and not caps["cudaAvailable"]:
        return _error(channel, "bad_arguments", "--backend cuda was requested but torch.cuda.is_available() is False")
    if not caps["torchDispatchMode"]:
        return _error(channel, "unsupported_torch",
                      "torch %s has no usable TorchDispatchMode; memhint needs torch >= 1.13" % torch.__version__)
    device = "cpu"
    history = None
    if backend == "cuda":
        device = "cuda:%d (%s)" % (torch.cuda.current_device(), torch.cuda.get_device_name())
        history = _trace_history(torch, options.cuda_path, notes)
    environment = {"python": sys.executable, "pythonVersion": platform.python_version(),
                   "torchVersion": str(torch.__version__), "backend": backend, "device": device,
                   "pid": os.getpid(), "capabilities": caps, "tracer": _tracer_kind()}
    if backend == "cuda":
        environment["cudaPath"] = "trace" if history is not None else "dispatch"
    channel.send("hello", harnessVersion=HARNESS_VERSION, **environment)

    if options.memory_limit is not None:
        notes.append(_limit_address_space(options.memory_limit))

    storage_api = StorageApi()
    if not storage_api.weak_refs:
        return _error(channel, "unsupported_torch",
                      "torch %s has no storage weak references (UntypedStorage._weak_ref/_expired): frees cannot "
                      "be observed" % torch.__version__)
    user_files = UserFiles()
    _warm_dispatch_modes(torch)
    tracker, state, runner, mode = instrument(torch, options, "cuda" if backend == "cuda" else "cpu", channel,
                                              storage_api, user_files, trace_history=history)
    runner.observers.extend(observers)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=tracker.disable_in_child)
    if backend != "cuda":
        history = None
    elif history is not None:
        history = "all"  # the trace path's own recording also feeds the memory_viz snapshot
    else:
        history = cudainfo.start_history(torch)

    failure = None
    # torch's and the harness's own objects never become garbage: keeping them out of the cyclic GC's
    # generations stops the harness's small bookkeeping allocations from triggering costly full scans.
    if hasattr(gc, "freeze"):
        gc.freeze()
    from .threads import OtherThreads

    other_threads = OtherThreads(tracker)
    other_threads.install()
    try:
        failure = run_target(tracker, runner, options, user_files, [mode], _oom_failure(tracker, user_files))
    finally:
        other_threads.uninstall()
        tracker.finish()
    close_epoch(tracker, runner, notes)
    notes.extend(runner.notes)
    notes.extend(other_threads.notes())
    if tracker.internal_error is not None:
        notes.append("memhint stopped measuring after an internal error; figures are partial:\n"
                     + tracker.internal_error)
    measured = runner.measured_steps()
    if failure is not None and failure[0] != "oom" and measured == 0:
        return _error(channel, failure[0], failure[1], failure[2], failure[3])
    cuda = cudainfo.collect(torch, history, options.cuda_snapshot, notes, tracker) if backend == "cuda" else None
    report = build_report(options, environment, notes, tracker, state, runner, cuda,
                          partial=failure is not None or measured < options.steps
                          or tracker.internal_error is not None)
    channel.send("result", report=report)
    if failure is not None:
        return _error(channel, failure[0], failure[1], failure[2], failure[3])
    return 0


def _tracer_kind():
    """"c" when the line tracer's global trace function is the C one (ctrace.py), else "python"."""
    from .linetrace import TRACER_KIND

    return TRACER_KIND


def run_target(tracker, runner, options, user_files, contexts, classify=None):
    """Runs the target with the line tracer on inside `contexts` (dispatch/function modes). The failure as
    (kind, message, traceback, location), or None. `classify(error)`
    may name the kind of an exception from the user's code (an OOM) before it is reported."""
    import contextlib

    from .imports import UntracedImports
    from .linetrace import settrace
    from .runner import TargetError

    failure = None
    settrace(tracker.trace_call)
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(UntracedImports(tracker, user_files.is_user))  # library imports untraced
            for context in contexts:
                stack.enter_context(context)
            runner.run()
    except TargetError as error:
        failure = (error.kind, str(error), None, None)
    except SyntaxError as error:
        location = {"file": os.path.abspath(error.filename or options.script), "line": error.lineno or 0}
        failure = ("syntax_error", "%s: %s (line %s)" % (type(error).__name__, error.msg, error.lineno),
                   traceback.format_exc(), location)
    except BaseException as error:  # noqa: BLE001 - the user's code may raise anything
        sys.settrace(None)
        kind = (classify(error) if classify is not None else None) or "user_exception"
        failure = (kind, "%s: %s" % (type(error).__name__, error), _user_traceback(error, user_files),
                   _user_location(error.__traceback__, user_files))
    finally:
        sys.settrace(None)
    return failure


def close_epoch(tracker, runner, notes):
    """The leak check of the last epoch, after the run; its failure is a note, never the report's loss."""
    try:
        runner.state.epoch_boundary(tracker.epoch + 1, complete=runner.stopped_at_call)
        notes.extend(runner.state.bounded_notes())
    except Exception:  # noqa: BLE001 - a failing leak check must not hide the report
        notes.append("leak check failed: %s" % traceback.format_exc(limit=1).strip())


def _oom_failure(tracker, user_files):
    """The profiler's classify for run_target: an allocation failure is an OOM charged to its user line."""
    def classify(error):
        from .oom import is_oom

        if tracker.oom is None and is_oom(error):
            tracker.on_op_error("<python allocation>", error)
            if tracker.oom is not None and tracker.oom["site"] is None:
                loc = _user_location(error.__traceback__, user_files)
                tracker.oom["site"] = (loc["file"], loc["line"], loc["function"]) if loc else None
        return "oom" if tracker.oom is not None else None

    return classify


def _trace_history(torch, requested, notes):
    """The allocator history of the cuda backend's trace path, or None for the dispatch path (asked for, or
    this torch's history cannot feed it: said in a note)."""
    if requested == "dispatch":
        return None
    from . import cuda_history

    why = cuda_history.unsupported(torch.cuda.memory)
    if why is not None:
        notes.append("cuda: the dispatch path (a Python dispatch mode on every op) was used: %s (torch %s); the "
                     "trace path needs torch.cuda.memory._record_memory_history with Python stacks and "
                     "clear_history" % (why, torch.__version__))
        return None
    return cuda_history.for_torch(torch)


def instrument(torch, options, device_type, channel, storage_api, user_files, trace_history=None):
    """The measuring parts wired together: tracker, analysis state, runner, dispatch mode; backward() and
    autograd.grad() are patched. `device_type`: whose storages are counted (cpu, cuda, or meta when predicting).
    With `trace_history` (cuda_history.AllocatorHistory) the cuda trace path instead: no dispatch mode (the
    context returned does nothing), the allocator's log replayed at checkpoints (trace_tracker.py).
    Also used by scripts/bench_interleaved.py to time steps with and without."""
    from .analysis import Registry, State
    from .dispatch import DispatchMode
    from .modules import ModuleLedger
    from .runner import Runner
    from .tracker import Tracker

    if trace_history is not None:
        return _instrument_trace(torch, options, channel, storage_api, user_files, trace_history)
    if os.environ.get("MEMHINT_EVENTS") == "1":
        events = _instrument_events(torch, options, device_type, channel, storage_api, user_files)
        if isinstance(events, str):
            notes = [events]  # why not: said in the report's notes, the dispatch path runs
        else:
            return events
    else:
        notes = []
    tracker = Tracker(storage_api, user_files, device_type,
                      budget=options.budget, cuda_lines=device_type == "cuda")
    state = State(tracker, Registry(), options.warmup)
    runner = Runner(tracker, state, channel, options)
    runner.notes.extend(notes)
    tracker.line_hook = runner.on_line
    tracker.backward_hook = state.stamp_state_kinds
    from .linetrace import untraced

    modules = ModuleLedger(lambda: tracker.in_step, device_type)
    missing = modules.install(lambda fn: untraced(fn, tracker.trace_call))
    if missing is None:
        tracker.modules = modules
    else:
        runner.notes.append(missing)
    if os.environ.get("MEMHINT_GRADSUM") != "0":
        # Before backward() is patched and the mode entered: the probe runs one backward with and one without
        # a mode of its own (on CPU tensors). The predictor ("meta") applies the same correction: the program it
        # predicts runs without a mode, where the engine sums in place on every device.
        from .gradsum import probe

        tracker.engine_sums = probe()
    _patch_backward(torch, tracker)
    _add_observers(torch, runner, tracker, user_files, device_type)
    return tracker, state, runner, DispatchMode(tracker)


def _instrument_events(torch, options, device_type, channel, storage_api, user_files):
    """MEMHINT_EVENTS=1: the event-fed tracker (event_tracker.py), no dispatch mode; or, where it cannot run,
    the note that says why (the caller then runs the dispatch path)."""
    import contextlib

    from .analysis import Registry
    from .event_state import EventState
    from .event_tracker import NOTE, EventTracker, install_module_boundary, start_hook
    from .runner import Runner

    if device_type != "cpu":
        return ("MEMHINT_EVENTS=1 ignored: the event-fed tracker is CPU only so far (%s here); the dispatch path "
                "ran" % device_type)
    hook, why = start_hook()
    if hook is None:
        return "MEMHINT_EVENTS=1 ignored: the allocation hook is unavailable (%s); the dispatch path ran" % why
    tracker = EventTracker(storage_api, user_files, hook, budget=options.budget)
    state = EventState(tracker, Registry(), options.warmup)
    # The pack hook (saved for backward): one Python call per saved tensor, not per op.
    runner = Runner(tracker, state, channel, options)
    runner.notes.append(NOTE)
    if options.budget is not None:
        runner.notes.append("MEMHINT_EVENTS=1: --budget is not checked on the event path yet")
    tracker.line_hook = runner.on_line
    tracker.backward_hook = state.stamp_state_kinds
    from .linetrace import untraced
    from .modules import ModuleLedger

    # Per module: the module stack's hooks drain the allocation hook before each change (one take() per
    # module call's start and end), so each block is charged to the module running when it was made.
    modules = ModuleLedger(lambda: tracker.in_step, device_type)
    modules.before_change = tracker.module_boundary
    missing = modules.install(lambda fn: untraced(fn, tracker.trace_call))
    if missing is None:
        tracker.modules = modules
    else:
        runner.notes.append(missing)
        install_module_boundary(tracker)  # the returned frame's pop at a module's return, without the ledger
    _patch_backward(torch, tracker)
    _watch_workers(runner, user_files, tracker)
    return tracker, state, runner, contextlib.nullcontext()


def _watch_workers(runner, user_files, tracker):
    """DataLoader workers' memory in the report (USS/PSS), or a note saying why it cannot be watched."""
    from .workers import WorkerWatch

    workers = WorkerWatch(user_files.is_user, tracker.now_ms)
    problem = workers.install()
    if problem is not None:
        runner.notes.append(problem)
    runner.observers.append(workers)


def _instrument_trace(torch, options, channel, storage_api, user_files, history):
    import contextlib

    from .analysis import Registry
    from .runner import Runner
    from .trace_tracker import NOTES, TraceState, TraceTracker

    tracker = TraceTracker(storage_api, user_files, history, int(torch.cuda.memory_allocated()),
                           budget=options.budget)
    state = TraceState(tracker, Registry(), options.warmup)
    runner = Runner(tracker, state, channel, options, saved_tensors=False)
    runner.notes.extend(NOTES)
    tracker.line_hook = runner.on_line
    _patch_backward(torch, tracker)
    _watch_workers(runner, user_files, tracker)
    history.start()
    return tracker, state, runner, contextlib.nullcontext()


def _add_observers(torch, runner, tracker, user_files, device_type):
    """Measurements beside the ledger (observers.StepObserver), each in its own module."""
    from .kernels import KernelWatch, watched_overloads

    _watch_workers(runner, user_files, tracker)
    if runner.saved_hooks is not None:
        from .nograd import NoBackwardWatch

        nograd = NoBackwardWatch(tracker, lambda: runner.loop is not None)
        tracker.node_hook = nograd.on_node
        runner.saved_watch = nograd
        runner.observers.append(nograd)
    from .compiled import CompileWatch

    compiled = CompileWatch(user_files.is_user)
    compiled.install(torch)
    runner.observers.append(compiled)
    kernels = KernelWatch(tracker, device_type)
    # Keyed by each overload's C function (OpOverload._op, what the mode calls): OpOverload's own __hash__ is
    # Python code on torch 1.13, one more call per op.
    tracker.watched_ops = frozenset(overload._op for overload in watched_overloads(torch.ops.aten))
    tracker.op_hook = kernels.on_op
    runner.observers.append(kernels)


def _warm_dispatch_modes(torch):
    """torch 2.x imports a great deal (sympy, ...) the first time any TorchDispatchMode runs an op: seconds.
    Done here, it is not charged to the user's first step, nor to a whole script's --max-seconds."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode

        class _Warm(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        with _Warm():
            torch.empty(0)
    except Exception:  # noqa: BLE001 - only a warm-up; the real mode reports its own problems
        pass


def _user_traceback(error, user_files):
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    return "".join(line for line in lines if "memhint_harness" not in line)


def _patch_backward(torch, tracker):
    """Marks backward() and autograd.grad() so allocations inside are charged to forward lines."""
    for name in ("backward", "grad"):
        original = getattr(torch.autograd, name)

        def patched(*args, __original=original, **kwargs):
            tracker.backward_begin()
            try:
                return __original(*args, **kwargs)
            finally:
                tracker.backward_end()

        patched.__wrapped__ = original
        patched.__doc__ = original.__doc__
        setattr(torch.autograd, name, patched)


def _limit_address_space(headroom):
    import resource

    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[0])
    current = pages * os.sysconf("SC_PAGE_SIZE")
    limit = current + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return "address space limited to %d bytes (%d above the size after importing torch)" % (limit, headroom)
