"""Runs the user's target under the tracker: a function of a script run as __main__, a function fed by a
setup function, or a whole script for a time budget."""
import asyncio
import functools
import importlib.util
import inspect
import os
import sys
import time
import types
from typing import Any, Dict, List, Optional, Tuple

import torch

from .imported_loops import training_loops_in_imports
from .linetrace import SWITCH_TRACE, settrace, untraced_caller
from .loops import Loop, LoopError, LoopFinder, LoopWatch, code_with_line, runs_loop
from .tracker import StopProfiling

_gettrace = sys.gettrace
_settrace = settrace  # linetrace.settrace: restores the C tracer as such
_call_traced, _Untraced, _CTracer = untraced_caller()


class TargetError(Exception):
    """A problem with the user's target, reported with `kind` (missing_target, target_not_called, ...)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class StepLog:
    __slots__ = ("index", "warmup", "start", "end", "allocated", "freed", "live_start", "live_end", "peak",
                 "peak_at")


def _tensors_in(value, depth=0):
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 2 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors_in(item, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for item in value.values():
            yield from _tensors_in(item, depth + 1)


class Runner:
    def __init__(self, tracker, state, channel, options, saved_tensors=True):
        self.tracker = tracker
        self.state = state  # analysis.State: kinds, leaks, snapshots
        self.channel = channel
        self.options = options
        self.script = os.path.abspath(options.script)
        self.calls = 0
        self.done = False
        self.stop_deadline = None
        self.stopped_at_call = False
        self.deadline = None
        self.target_seen = False
        self.steps = []
        self.stopping = False  # the harness stopped the script from its tracer
        self.depth = 0  # step calls running (a recursive step calls itself)
        self.unsupported = None  # why the target cannot be measured (a generator function)
        self._noted = set()
        self.saved_watch: Any = None  # nograd.NoBackwardWatch: wraps what the pack hook saves
        # saved_tensors False: the cuda trace path, which runs no Python per saved tensor (and says so).
        self.saved_hooks = _saved_tensor_hooks(tracker, self) if saved_tensors else None
        self.loop_watches: Dict[types.CodeType, List[LoopWatch]] = {}  # per code object, its candidate loops
        self.loop_candidates: List[Loop] = []
        self.loop: Optional[Loop] = None  # the loop being profiled, once one ran
        # Training loops in modules the script imports (it has none): watched once their code first runs.
        self.pending_loops: Dict[str, List[Loop]] = {}
        self._codes_checked: set = set()
        self.loop_chosen = False  # --loop FILE:LINE named a loop outside the script
        self.open_step: Optional[Tuple[StepLog, int, Any]] = None  # loop mode: the running iteration
        self.notes = []
        self.observers: List[Any] = []  # observers.StepObserver: told of step boundaries, add report fields
        if self.saved_hooks is None and saved_tensors:
            self.notes.append("torch.autograd.graph.saved_tensors_hooks is unavailable: saved-for-backward bytes "
                              "and the activation kind are not measured.")

    # ------------------------------------------------------------------ steps

    @property
    def total_calls(self):
        return self.options.warmup + self.options.steps

    def note_once(self, key, text):
        if key not in self._noted:
            self._noted.add(key)
            self.notes.append(text)

    def call_step(self, original, args, kwargs):
        if self.depth:
            # A recursive step: the nested calls are part of the outermost one, which is the step.
            self.note_once("recursive", "%s is recursive: each step is its outermost call, nested calls "
                           "included" % self.options.function)
            return original(*args, **kwargs)
        if self.done:
            # The boundary is checked now, while the user's loop still holds what it holds.
            self.state.final_epoch = self.tracker.epoch + 1
            self.state.epoch_boundary(self.tracker.epoch + 1)
            self.stopped_at_call = True
            raise StopProfiling()
        index = self.calls
        self.calls += 1
        warmup = index < self.options.warmup
        profiled = None if warmup else index - self.options.warmup
        if inspect.iscoroutinefunction(original):
            # A coroutine is measured from its start to its end: driven here, by asyncio.run (setup mode).
            self.note_once("async", "%s is async def: each call ran under asyncio.run() and was measured "
                           "from its start to its end" % self.options.function)
            return self._measure(lambda: asyncio.run(original(*args, **kwargs)), index, profiled, (args, kwargs))
        return self._measure(lambda: original(*args, **kwargs), index, profiled, (args, kwargs))

    async def call_async_step(self, original, args, kwargs):
        """An `async def` step awaited by the user's loop: measured from its first to its last await."""
        if self.depth:
            return await original(*args, **kwargs)
        if self.done:
            self.call_step(original, args, kwargs)  # raises StopProfiling at the boundary
        self.note_once("async", "%s is async def: each step was measured from its start to its end; what "
                       "other tasks allocate while it awaits counts in the step" % self.options.function)
        index = self.calls
        self.calls += 1
        profiled = None if index < self.options.warmup else index - self.options.warmup
        log, hooks = self._begin(index, profiled, (args, kwargs))
        try:
            return await original(*args, **kwargs)
        finally:
            self._end(log, index, hooks)

    def _measure(self, body, index, profiled, inputs):
        log, hooks = self._begin(index, profiled, inputs)
        try:
            return body()
        finally:
            self._end(log, index, hooks)

    def _begin(self, index, profiled, inputs):
        tracker = self.tracker
        # The harness's own work around the step runs untraced: each of its calls would be a trace event.
        trace = tracker.pause_tracing()
        try:
            log, hooks = self._begin_step(index, profiled, inputs)
            self.depth += 1
        finally:
            tracker.resume_tracing(trace)
        return log, hooks

    def _end(self, log, index, hooks):
        tracker = self.tracker
        log.end = tracker.now_ms()
        self.depth -= 1
        if sys.gettrace() is None and not tracker.disabled and not self.stopping:
            # The user's code removed the tracer: tensor totals are still counted (dispatch mode), but
            # lines after that point were not seen. Said so, never shown as lines that allocated nothing.
            self.note_once("untraced", "the script removed memhint's line tracer (sys.settrace(None)) during "
                           "step %d: per-line figures from that point on are missing; step totals, peaks and "
                           "leaks are still measured" % log.index)
        trace = tracker.pause_tracing()
        try:
            self._step_done(log, index, hooks)
        finally:
            tracker.resume_tracing(trace)

    def _begin_step(self, index, profiled, inputs):
        """Opens step `index` (warmup when `profiled` is None): the leak check of the boundary, the inputs,
        saved-tensor hooks. Runs with the tracer off (paused, or inside a trace callback)."""
        tracker = self.tracker
        if not self.state.epoch_boundary(tracker.epoch + 1):
            self.state.stamp_state_kinds()
        # Registering the inputs after the stamp changes no kind: state tensors were registered by it.
        for tensor in _tensors_in(inputs):
            tracker.register_existing(tensor, hint="input", site=tracker.current_site())
        log = StepLog()
        log.index = profiled if profiled is not None else index
        log.warmup = profiled is None
        hooks = self.saved_hooks() if self.saved_hooks is not None else None
        if hooks is not None:
            hooks.__enter__()
        for observer in self.observers:
            observer.step_begin(profiled)
        tracker.step_begin(profiled)
        log.live_start = tracker.live_bytes
        log.start = tracker.now_ms()
        return log, hooks

    def _step_done(self, log, index, hooks):
        tracker = self.tracker
        events = tracker.step_end()
        if hooks is not None:
            hooks.__exit__(None, None, None)
        for observer in self.observers:
            observer.step_end(None if log.warmup else log.index)
        log.live_end = tracker.live_bytes
        if events is not None:
            allocated = freed = 0
            for _, delta in events:
                if delta > 0:
                    allocated += delta
                else:
                    freed -= delta
            log.allocated = allocated
            log.freed = freed
            log.peak = tracker.step_peak
            log.peak_at = tracker.step_peak_at
            self.state.stamp_state_kinds()
            self.state.consider_peak(log, events, tracker)
        self.steps.append(log)
        self.channel.send("progress", step=log.index, warmup=log.warmup, ms=log.end - log.start,
                          liveBytes=tracker.live_bytes, of=self.options.steps)
        if index + 1 >= self.total_calls:
            # Stop at the next call, so the last step's leaks are seen across a full iteration of the
            # user's loop; a script that goes on to other work is stopped after a grace period.
            self.done = True
            durations = [step.end - step.start for step in self.steps]
            grace = max(2.0 * sum(durations) / len(durations) / 1000.0, 1.0)
            self.stop_deadline = time.perf_counter() + grace

    # ------------------------------------------------------------------ inline training loops

    def _arm_loops(self, code, source):
        """Loop mode: finds the loop (--loop LINE, or the training loop) and the code objects that run it.
        Returns False when no training loop was found (the caller profiles the whole script)."""
        finder = LoopFinder(source, self.script)
        if self.options.loop not in (None, "auto") and not self.options.loop.isdigit():
            chosen = self._chosen_loop_elsewhere(self.options.loop)
            if chosen is not None:
                return chosen
        if self.options.loop not in (None, "auto"):
            try:
                loops = [finder.loop_at(int(self.options.loop.rpartition(":")[2]))]
            except LoopError as error:
                raise TargetError("missing_target", "%s: %s" % (self.script, error))
        else:
            loops = finder.training_loops()
            if not loops:
                return self._arm_imported_loops(finder.tree)
        for loop in loops:
            runs = code_with_line(code, (loop.header, loop.body_first))
            if runs is not None:
                self.loop_watches.setdefault(runs, []).append(LoopWatch(loop))
        if not self.loop_watches:
            raise TargetError("missing_target", "%s: no code runs the loop on line %d" % (self.script, loops[0].header))
        self.loop_candidates = loops
        return True

    def _chosen_loop_elsewhere(self, spec):
        """--loop FILE:LINE: the loop on LINE of FILE, a module of the user's that the script imports and runs
        (minGPT's chargpt.py runs the `while True:` of mingpt/trainer.py). Its code object exists only once the
        module is imported, so it is matched when its code first runs, as for imported training loops.
        Returns None when FILE is the script itself (then LINE is an ordinary --loop LINE)."""
        name, _, line = spec.rpartition(":")
        path = os.path.abspath(name)
        if path == os.path.abspath(self.script):
            return None
        if not os.path.isfile(path):
            raise TargetError("missing_target", "--loop %s: no such file" % spec)
        if not self.tracker.user_files.is_user(path):
            raise TargetError("missing_target", "--loop %s: %s is library code, which the profiler does not trace "
                              "line by line; profile a function of yours that calls it instead" % (spec, name))
        try:
            with open(path, "rb") as handle:
                loop = LoopFinder(handle.read(), path).loop_at(int(line))
        except (SyntaxError, ValueError) as error:
            raise TargetError("missing_target", "%s: cannot read its loops (%s)" % (name, error))
        except LoopError as error:
            raise TargetError("missing_target", "%s: %s" % (name, error))
        self.pending_loops.setdefault(path, []).append(loop)
        self.loop_candidates = [loop]
        self.loop_chosen = True
        return True

    def _arm_imported_loops(self, tree):
        """No training loop in the script: those of the user's modules it imports and calls into. Their code
        objects do not exist before the import, so each is matched when its code first runs (on_line)."""
        loops = training_loops_in_imports(self.script, tree, sys.path, self.tracker.user_files.is_user)
        if not loops:
            return False
        for loop in loops:
            self.pending_loops.setdefault(os.path.abspath(loop.file), []).append(loop)
        self.loop_candidates = loops
        return True

    def _watch_imported(self, code):
        self._codes_checked.add(code)
        for loop in self.pending_loops.get(os.path.abspath(code.co_filename), ()):
            if runs_loop(code, loop):
                self.loop_watches.setdefault(code, []).append(LoopWatch(loop))

    def where(self, loop):
        """A loop's place for messages: its line in the script, else file:line."""
        if not loop.file or os.path.abspath(loop.file) == self.script:
            return "line %d" % loop.header
        relative = os.path.relpath(loop.file)  # to the working directory, as the user typed the script's path
        return "%s:%d" % (loop.file if relative.startswith("..") else relative, loop.header)

    def _on_loop_line(self, frame):
        for watch in self.loop_watches[frame.f_code]:
            what = watch.event(frame.f_lineno)
            if what is None:
                continue
            if self.loop is None and what == "boundary":
                self.loop = watch.loop  # the first candidate that runs is the training loop
            if watch.loop is not self.loop:
                continue
            if what == "boundary":
                self._loop_boundary(watch)
            elif what == "exit":
                self._loop_exit(watch)

    def _loop_boundary(self, watch):
        if self.open_step is not None:
            self._close_loop_step()
        if self.done:
            self._stop_at_boundary()
        index = self.calls
        self.calls += 1
        profiled = None if index < self.options.warmup else index - self.options.warmup
        log, hooks = self._begin_step(index, profiled, ((), {}))
        self.open_step = (log, index, hooks)

    def _loop_exit(self, watch):
        if self.open_step is not None:
            self._close_loop_step()
        if self.done:
            self._stop_at_boundary()

    def _close_loop_step(self):
        open_step = self.open_step
        if open_step is None:
            return
        log, index, hooks = open_step
        self.open_step = None
        log.end = self.tracker.now_ms()
        self._step_done(log, index, hooks)

    def _stop_at_boundary(self):
        # The boundary is checked now, while the user's loop still holds what it holds.
        self.state.final_epoch = self.tracker.epoch + 1
        self.state.epoch_boundary(self.tracker.epoch + 1)
        self.stopped_at_call = True
        raise StopProfiling()

    # ------------------------------------------------------------------ line hook

    def on_line(self, frame):
        if self.pending_loops and frame.f_code not in self._codes_checked:
            self._watch_imported(frame.f_code)
        if self.loop_watches and frame.f_code in self.loop_watches:
            self._on_loop_line(frame)
        if self.done and self.stop_deadline is not None and time.perf_counter() > self.stop_deadline:
            self.stopping = True
            raise StopProfiling()
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self.stopping = True  # raised from the tracer, which CPython then removes: not the user's doing
            raise StopProfiling()
        if not self.target_seen and self.options.function and frame.f_globals is self.module_globals:
            self._try_wrap(frame.f_globals)

    def _try_wrap(self, namespace):
        try:
            self._wrap_target(namespace)
        except Exception:  # the user's class may do anything on attribute access; try again next line
            pass

    def _wrap_target(self, namespace):
        parts = self.options.function.split(".")
        owner = None
        value = namespace.get(parts[0])
        for part in parts[1:]:
            if value is None:
                return
            owner = value
            value = vars(value).get(part) if isinstance(value, type) else getattr(value, part, None)
        if value is None or not callable(value) and not isinstance(value, (staticmethod, classmethod)):
            return
        wrapped = self._wrap(value)
        if owner is None:
            namespace[parts[0]] = wrapped
        else:
            setattr(owner, parts[-1], wrapped)
        self.target_seen = True

    def _wrap(self, value):
        runner = self
        inner = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        if inspect.isgeneratorfunction(inner) or inspect.isasyncgenfunction(inner):
            return self._refuse_generator(value, inner)
        if inspect.iscoroutinefunction(inner):

            @functools.wraps(inner)
            async def async_step(*args, **kwargs):
                return await runner.call_async_step(inner, args, kwargs)

            return type(value)(async_step) if inner is not value else async_step
        if isinstance(value, (staticmethod, classmethod)):

            @functools.wraps(inner)
            def bound_step(*args, **kwargs):
                return runner.call_step(inner, args, kwargs)

            return type(value)(bound_step)

        @functools.wraps(value)
        def step(*args, **kwargs):
            return runner.call_step(value, args, kwargs)

        return step

    def _refuse_generator(self, value, inner):
        """Calling a generator function runs none of its body: there is no step to measure. The first call
        stops the run with a clear error instead of a report of zeros."""
        runner = self

        @functools.wraps(inner)
        def refused(*args, **kwargs):
            runner.unsupported = (
                "%s is a generator function: calling it runs none of its body, so memhint has no step to "
                "measure; profile the function that iterates over it (or make the step a plain function)"
                % runner.options.function)
            raise StopProfiling()

        return type(value)(refused) if inner is not value else refused

    # ------------------------------------------------------------------ targets

    def run(self):
        options = self.options
        if not os.path.isfile(self.script):
            raise TargetError("missing_target", "script not found: %s" % self.script)
        with open(self.script, "rb") as handle:
            source = handle.read()
        code = compile(source, self.script, "exec")  # SyntaxError is reported by the caller
        sys.argv = [self.script] + list(options.script_args)
        sys.path.insert(0, os.path.dirname(self.script))
        if options.setup:
            return self._run_setup(code)
        module = types.ModuleType("__main__")
        module.__file__ = self.script
        module.__dict__["__builtins__"] = __builtins__
        sys.modules["__main__"] = module
        self.module_globals = module.__dict__
        if not options.function:
            if self._arm_loops(code, source):
                return self._run_loop(code, module)
            self.notes.append("no training loop found (a for/while loop whose body reaches backward() and "
                              "optimizer.step()): the whole script was profiled as one step")
            return self._run_script(code, module)
        self._note_loop_inside_target(source)
        self._exec(code, module.__dict__)
        if self.unsupported is not None:
            raise TargetError("unsupported_target", self.unsupported)
        if self.calls == 0:
            if not self.target_seen:
                raise TargetError("missing_target", "%s does not define %s" % (self.script, options.function))
            raise TargetError("target_not_called",
                              "%s ran to completion without calling %s" % (self.script, options.function))
        if self.calls < self.total_calls:
            self.notes.append("the script called %s only %d time(s); %d warmup + %d steps were requested"
                              % (options.function, self.calls, options.warmup, options.steps))

    def _note_loop_inside_target(self, source):
        """A target that contains the training loop (pytorch/examples' `train()`, called once per epoch)
        measures whole epochs: said in the report, with the loop to profile instead."""
        name = self.options.function.split(".")[-1]
        try:
            loops = LoopFinder(source, self.script).training_loops()
        except (SyntaxError, ValueError):
            return
        inside = [loop for loop in loops if loop.function == name]
        if inside:
            script = os.path.basename(self.script)
            self.notes.append("%s contains the training loop (line %d): each call of it is a whole pass over that "
                              "loop (an epoch), not one training step; `%s:%d` (or `%s` alone) makes each iteration "
                              "a step" % (self.options.function, inside[0].header, script, inside[0].header, script))

    def _run_loop(self, code, module):
        try:
            self._exec(code, module.__dict__)
        finally:
            if self.open_step is not None:
                # The script raised, exited or stopped inside an iteration: it ends the step.
                trace = self.tracker.pause_tracing()
                try:
                    self._close_loop_step()
                finally:
                    self.tracker.resume_tracing(trace)
        if self.pending_loops:
            return self._imported_loop_notes()
        lines = ", ".join(str(loop.header) for loop in self.loop_candidates)
        if self.loop is None:
            raise TargetError("target_not_called", "%s ran to completion without reaching the loop on line %s"
                              % (self.script, lines))
        others = [loop.header for loop in self.loop_candidates if loop is not self.loop]
        if others:
            self.notes.append("profiled the training loop on line %d; other candidate loops: line %s (pick one "
                              "with %s:LINE)" % (self.loop.header, ", ".join(map(str, others)),
                                                 os.path.basename(self.script)))
        self._short_run_note()

    def _imported_loop_notes(self):
        places = ", ".join(self.where(loop) for loop in self.loop_candidates)
        if self.loop_chosen:
            if self.loop is None:
                raise TargetError("target_not_called", "%s ran to completion without reaching the loop at %s"
                                  % (self.script, places))
            return self._short_run_note()
        if self.loop is None:
            raise TargetError("target_not_called", "%s has no training loop and ran to completion without reaching "
                              "the one in the modules it imports (%s)" % (self.script, places))
        self.notes.append("%s has no training loop: profiled the one it runs in %s (a module of yours that it "
                          "imports); each iteration is a step" % (os.path.basename(self.script), self.where(self.loop)))
        others = [self.where(loop) for loop in self.loop_candidates if loop is not self.loop]
        if others:
            self.notes.append("other candidate loops in imported modules: %s" % ", ".join(others))
        self._short_run_note()

    def _short_run_note(self):
        if self.calls < self.total_calls:
            self.notes.append("the loop on %s ran only %d iteration(s); %d warmup + %d steps were requested"
                              % (self.where(self.loop), self.calls, self.options.warmup, self.options.steps))

    def _exec(self, code, namespace):
        try:
            exec(code, namespace)
        except StopProfiling:
            pass
        except SystemExit as exit_:
            status = exit_.code
            failed = status not in (None, 0)
            if self.measured_steps() == 0:
                raise TargetError("script_exit", "the script called sys.exit(%r) before any profiled step" % (status,))
            if failed:
                self.notes.append("the script exited with sys.exit(%r) after the profiled steps" % (status,))

    def measured_steps(self):
        return sum(1 for step in self.steps if not step.warmup)

    def _run_script(self, code, module):
        self.deadline = time.perf_counter() + (self.options.max_seconds or 30.0)
        self.target_seen = True
        finished = {"value": False}

        def body():
            self._exec(code, module.__dict__)
            finished["value"] = True

        self.options.warmup = 0
        self.options.steps = 1
        self._measure(body, 0, 0, ((), {}))
        if not finished["value"] or time.perf_counter() > self.deadline:
            self.notes.append("the script was stopped after --max-seconds %g" % (self.options.max_seconds or 30.0))

    def _run_setup(self, code):
        options = self.options
        name = os.path.splitext(os.path.basename(self.script))[0]
        spec = importlib.util.spec_from_loader(name, loader=None, origin=self.script)
        if spec is None:
            raise TargetError("missing_target", "cannot import %s" % self.script)
        module = importlib.util.module_from_spec(spec)
        module.__file__ = self.script
        sys.modules[name] = module
        self.module_globals = module.__dict__
        self.target_seen = True
        exec(code, module.__dict__)
        setup = getattr(module, options.setup, None)
        if setup is None or not callable(setup):
            raise TargetError("missing_target", "%s does not define a setup function %s" % (self.script, options.setup))
        target = module
        for part in options.function.split("."):
            target = getattr(target, part, None)
            if target is None:
                raise TargetError("missing_target", "%s does not define %s" % (self.script, options.function))
        if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
            raise TargetError("unsupported_target", "%s is a generator function: calling it runs none of its "
                              "body, so memhint has no step to measure" % options.function)
        args, kwargs = step_arguments(setup(**(getattr(options, "setup_args", None) or {})))
        try:
            for _ in range(self.total_calls):
                self.call_step(target, args, kwargs)
        except StopProfiling:
            pass
        # Nothing of the user's runs between setup-mode calls: the end is a full step boundary.
        self.stopped_at_call = True
        self.state.final_epoch = self.tracker.epoch + 1
        self.state.epoch_boundary(self.tracker.epoch + 1)


def step_arguments(produced):
    """The (args, kwargs) of a step from what its --setup function returned: a dict is keyword arguments,
    a tuple positional ones, None none, anything else the only argument."""
    if isinstance(produced, dict):
        return (), produced
    if isinstance(produced, tuple):
        return produced, {}
    if produced is None:
        return (), {}
    return (produced,), {}


def _saved_tensor_hooks(tracker, runner):
    graph = getattr(torch.autograd, "graph", None)
    hooks = getattr(graph, "saved_tensors_hooks", None) if graph is not None else None
    if hooks is None:
        return None

    def pack(tensor, tracer=None):
        # Called by autograd for every tensor an op saves, with the line tracer on: the harness's own work
        # here runs with it switched off (each of its Python calls would be a trace event), the detach in
        # between with it on, as any op (a tensor subclass's __torch_dispatch__ may be the user's code).
        # `tracer`: the C tracer's wrapper (linetrace.untraced_caller) runs all of this untraced, the
        # detach through call_traced.
        if not tracker.disabled:
            trace = _gettrace() if SWITCH_TRACE else None
            if trace is not None:
                _settrace(None)
            tracker.guard(tracker.on_saved, tensor)
            if trace is not None and not tracker.disabled:
                _settrace(trace)
        # A detached alias, not the tensor itself: holding an op's output from its own graph node would
        # create a reference cycle and delay its free until the garbage collector runs. Tensors without a
        # grad_fn (leaves, and the wrapped Python numbers of `x * 2`) cannot form one and are kept as is.
        if tensor.grad_fn is None:
            alias = tensor
        elif tracer is None:
            alias = tensor.detach()
        else:
            alias = _call_traced(tracer, tensor.detach, (), None)
        watch = runner.saved_watch
        if watch is not None and not tracker.disabled:
            trace = _gettrace() if SWITCH_TRACE else None
            if trace is not None:
                _settrace(None)
            try:
                return watch.pack(alias, tensor)
            finally:
                if trace is not None and not tracker.disabled:
                    _settrace(trace)
        return alias

    def unpack(packed):
        return packed

    trace_call = tracker.trace_call
    if _Untraced is not None and _CTracer is not None and isinstance(trace_call, _CTracer):
        pack = _Untraced(pack, trace_call)

    # The watch's own unpack when there is one (set up before any step): one Python call per unpacked
    # tensor, not two.
    return lambda: hooks(pack, runner.saved_watch.unpack if runner.saved_watch is not None else unpack)
