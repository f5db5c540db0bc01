"""Where the user's code calls torch.compile, so that the report can say that it was measured as eager code.

While a TorchDispatchMode is active, Dynamo compiles nothing and runs the compiled function's frames as plain
Python (test/fixtures/profiler/compiled_step.py): the dispatch path's figures are those of the uncompiled
model. timm's train.py --torchcompile gave the same bytes per step as without it, and nothing in the report
said why. This watch wraps torch.compile and nn.Module.compile (torch >= 2.2) to record the user line of
each call; it measures nothing and sits on no per-op path. Used on the dispatch path only: on the CUDA
trace path no mode is active and the compiled code really runs.
"""
from __future__ import annotations

import functools
import os
import sys
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

Site = Tuple[str, int, str]


class CompileWatch:
    """Step observer (runner.observers) that only contributes a note."""

    def __init__(self, is_user: Callable[[str], bool]):
        self.is_user = is_user
        self.sites: Dict[Site, None] = {}  # ordered set of the user lines that called torch.compile

    def install(self, torch: Any) -> None:
        # torch warns, at each call of a compiled module, that global module hooks will fire an extra time for
        # its OptimizedModule wrapper: those hooks are the harness's (modules.py), which skips the wrapper, so
        # the warning would only puzzle the user in the script's output.
        warnings.filterwarnings("ignore", message=r"Using `torch\.compile\(module\)` when there are global hooks",
                                category=UserWarning)
        if callable(getattr(torch, "compile", None)):
            torch.compile = self._wrap(torch.compile)
        module = torch.nn.Module
        if callable(getattr(module, "compile", None)):
            module.compile = self._wrap(module.compile)

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def compile_(*args: Any, **kwargs: Any) -> Any:
            site = self._user_site(sys._getframe(1))
            if site is not None:
                self.sites.setdefault(site, None)
            return original(*args, **kwargs)

        return compile_

    def _user_site(self, frame: Optional[Any]) -> Optional[Site]:
        """The innermost user frame of the call (a library's own torch.compile, from the user line that led to
        it): torch.compile used as a decorator factory calls itself from torch's frame."""
        while frame is not None:
            filename = frame.f_code.co_filename
            if self.is_user(filename):
                return (filename, frame.f_lineno, frame.f_code.co_name)
            frame = frame.f_back
        return None

    # observers.StepObserver
    def step_begin(self, profiled: Optional[int]) -> None:
        pass

    def step_end(self, profiled: Optional[int]) -> None:
        pass

    def contribute(self, report: Dict[str, Any], code_of: Callable[[str, int], str]) -> None:
        if not self.sites:
            return
        places: List[str] = ["%s:%d" % (os.path.basename(f), line) for f, line, _ in self.sites]
        report["notes"].append(
            "torch.compile (%s) was measured as eager code: while the profiler's dispatch mode is active, Dynamo "
            "compiles nothing and runs the code it wraps as plain Python, so these figures are those of the "
            "uncompiled code, not of the compiled kernels" % ", ".join(places))
