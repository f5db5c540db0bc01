"""Versioned JSON-lines messages on a dedicated file descriptor, never mixed with the user's stdout.

Every message is one line: {"v": 1, "type": "hello" | "progress" | "result" | "error", ...}.
"""
import json
import math
import os

from . import PROTOCOL_VERSION


def _finite(value):
    # JSON has no NaN/Infinity; a report must stay parseable whatever the user's numbers are.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


class Channel:
    def __init__(self, fd):
        self._fd = fd
        if fd is not None:
            # The user's own subprocesses must not inherit (and hold open) the protocol pipe.
            os.set_inheritable(fd, False)

    def send(self, type_, **fields):
        if self._fd is None:
            return
        message = {"v": PROTOCOL_VERSION, "type": type_}
        message.update(fields)
        data = (json.dumps(_finite(message), separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def close(self):
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
