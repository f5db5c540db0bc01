"""Decides which source files are the user's: only their frames receive memory attribution."""
import os
import sys
import sysconfig
from types import FrameType
from typing import Callable, Optional

_HARNESS_DIR = os.path.dirname(os.path.abspath(__file__))


def _library_roots():
    roots = {_HARNESS_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.abspath(path))
    for path in sys.path:
        if path and ("site-packages" in path or "dist-packages" in path):
            roots.add(os.path.abspath(path))
    try:
        import torch

        roots.add(os.path.dirname(os.path.abspath(torch.__file__)))
    except Exception:  # torch missing is reported elsewhere
        pass
    return tuple(sorted(roots))


class UserFiles:
    def __init__(self, extra_roots=()):
        self._library = _library_roots()
        self._cache = {}

    def is_user(self, filename):
        cached = self._cache.get(filename)
        if cached is not None:
            return cached
        result = self._decide(filename)
        self._cache[filename] = result
        return result

    def _decide(self, filename):
        if not filename or filename.startswith("<"):
            return False
        path = os.path.abspath(filename)
        for root in self._library:
            if path == root or path.startswith(root + os.sep):
                return False
        return os.path.exists(path)


def innermost_user_frame(frame: Optional[FrameType], is_user: Callable[[str], bool]) -> Optional[FrameType]:
    """`frame` or the nearest of its callers that runs a file of the user's, or None."""
    while frame is not None and not is_user(frame.f_code.co_filename):
        frame = frame.f_back
    return frame
