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


NONCE_ENV = "MEMHINT_PROTOCOL_NONCE"
# Exit status and stderr prefix of a harness whose protocol descriptor was closed or replaced by the
# user's code; src/profiler/launcher.ts recognises both.
EXIT_CHANNEL_LOST = 87
LOST_PREFIX = "memhint-harness: protocol channel lost: "


def _move_high(fd):
    """A close-on-exec duplicate of fd far above the descriptors scripts use and close (3..1023)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY:
            soft = 1 << 20
    except (ImportError, OSError, ValueError):
        soft = 1024
    target = max(3, min(soft - 16, 2048))
    try:
        import fcntl

        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, target)
    except (ImportError, OSError, AttributeError):
        high = os.dup(fd)
        os.set_inheritable(high, False)
        return high


def _identity(fd):
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino)


class Channel:
    """The protocol descriptor, kept where user code cannot take it over silently: moved high, its
    identity (st_dev, st_ino) checked before every write; on loss the harness stops with EXIT_CHANNEL_LOST
    and one line on (a verified duplicate of) stderr, instead of writing into whatever now has that number.
    Every message carries the run's nonce, so lines the user's code forges are not believed."""

    def __init__(self, fd, nonce=None):
        self._fd = None
        self._nonce = nonce
        self._fallback = None
        if fd is None:
            return
        self._fd = _move_high(fd)
        self._id = _identity(self._fd)
        if fd != self._fd:
            os.close(fd)
        try:
            self._fallback = _move_high(2)
            self._stderr_id = _identity(self._fallback)
        except OSError:
            self._fallback = self._stderr_id = None

    def send(self, type_, **fields):
        if self._fd is None:
            return
        message = {"v": PROTOCOL_VERSION, "type": type_}
        if self._nonce is not None:
            message["nonce"] = self._nonce
        message.update(fields)
        data = (json.dumps(_finite(message), separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
        try:
            if _identity(self._fd) != self._id:
                self._lost("descriptor %d now refers to another file (the profiled code closed or replaced it)"
                           % self._fd)
        except OSError as error:
            self._lost("descriptor %d was closed by the profiled code (%s)" % (self._fd, error.strerror))
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as error:
            self._lost("cannot write to descriptor %d: %s" % (self._fd, error.strerror))

    def _lost(self, why):
        # The line goes to the launcher's stderr pipe: the high duplicate, else fd 2, whichever still is it.
        line = (LOST_PREFIX + why + "; measuring stopped\n").encode("utf-8")
        for fd in (self._fallback, 2):
            try:
                if fd is not None and self._stderr_id is not None and _identity(fd) == self._stderr_id:
                    os.write(fd, line)
                    break
            except OSError:
                continue
        os._exit(EXIT_CHANNEL_LOST)

    def close(self):
        for fd in (self._fd, self._fallback):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._fd = self._fallback = None
