"""Builds and loads the harness's C extension, or says why the Python code runs: the line tracer's trace
function (_ctrace.c), the dispatch mode's per-op bookkeeping (_cdispatch.c) and the ledger's expiry scan
(_cexpiry.c), one module.

The extension is compiled with the system C compiler against the running interpreter's headers, at setup
(`python3 -m memhint_harness.ctrace --build`, run by scripts/setup-system.sh's callers) or lazily on first
use, into a cache keyed by the interpreter's ABI (cache tag + extension suffix) and the source's hash, so
two interpreters or two harness versions never share a binary. Nothing is downloaded. When it cannot be
built (no compiler, no Python.h, another implementation) the pure-Python tracer runs instead; the report's
environment says which (`tracer`: "c" or "python"; with "c" the per-op bookkeeping runs in C too).

MEMHINT_CTRACE=0 forces the Python tracer and bookkeeping, MEMHINT_CTRACE=1 makes a failed build an error
(tests use both); MEMHINT_CTRACE_CACHE moves the cache (default: $XDG_CACHE_HOME or ~/.cache, then memhint/ctrace).
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from types import ModuleType
from typing import Callable, List, Optional, Tuple

_HERE = os.path.dirname(os.path.abspath(__file__))
# One extension from three sources sharing _ctrace.h: the line tracer (_ctrace.c), the dispatch mode's per-op
# bookkeeping (_cdispatch.c, which calls the tracer's switching directly) and the ledger's expiry scan
# (_cexpiry.c).
SOURCES = tuple(os.path.join(_HERE, name) for name in ("_ctrace.c", "_cdispatch.c", "_cexpiry.c"))
HEADERS = (os.path.join(_HERE, "_ctrace.h"),)
MODULE = "memhint_ctrace"

def cache_dir() -> str:
    explicit = os.environ.get("MEMHINT_CTRACE_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "memhint", "ctrace")


def binary_path() -> str:
    """Where this interpreter's build of the current source lives."""
    digest = hashlib.sha256()
    for path in SOURCES + HEADERS:
        with open(path, "rb") as handle:
            digest.update(handle.read())
    # Patch releases keep the ABI, but their headers (inline functions, macros) may differ: one build each.
    digest.update(("%s|%s" % (sys.version, sysconfig.get_paths().get("include"))).encode())
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or importlib.machinery.EXTENSION_SUFFIXES[0]
    tag = "%s-%s" % (sys.implementation.cache_tag, digest.hexdigest()[:16])
    return os.path.join(cache_dir(), tag, MODULE + suffix)


def _compiler():
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shlex.split(cc)


def build(target: str) -> None:
    """Compiles the C sources into `target` (atomically: concurrent first uses each write their own file and
    the last rename wins, all of them the same build). Raises RuntimeError with the compiler's message."""
    if sys.implementation.name != "cpython":
        raise RuntimeError("not CPython (%s)" % sys.implementation.name)
    include = sysconfig.get_paths().get("include") or ""
    if not os.path.exists(os.path.join(include, "Python.h")):
        raise RuntimeError("no Python.h in %s (Debian: apt-get install python3-dev)" % (include or "?"))
    compile_atomically(target, lambda partial: _compiler() + ["-shared", "-fPIC", "-O2", "-Wall", "-I" + include]
                       + list(SOURCES) + ["-o", partial], timeout_s=120)


def compile_atomically(target: str, command_for: Callable[[str], List[str]], timeout_s: int) -> None:
    """Runs `command_for(partial)` to write a temporary file next to `target`, then renames it over `target`
    (concurrent first uses each write their own file; the last rename wins, all of them the same build).
    Raises RuntimeError with the compiler's last lines, or on a timeout; never leaves the partial file."""
    folder = os.path.dirname(target)
    os.makedirs(folder, exist_ok=True)
    handle, partial = tempfile.mkstemp(dir=folder, prefix=".build-", suffix=".so")
    os.close(handle)
    command: List[str] = ["compiler"]
    try:
        command = command_for(partial)
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout_s)
        if done.returncode != 0:
            text = done.stdout.decode("utf-8", "replace").strip().splitlines()
            raise RuntimeError("%s failed: %s" % (command[0], " | ".join(text[-5:]) or done.returncode))
        os.replace(partial, target)
    except subprocess.TimeoutExpired:
        raise RuntimeError("%s took over %d s" % (command[0], timeout_s))
    except OSError as error:
        raise RuntimeError("%s: %s" % (command[0], error))
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def import_extension(module: str, path: str) -> ModuleType:
    """Loads the extension module `module` from the file `path` (not from sys.path: the cache is keyed)."""
    loader = importlib.machinery.ExtensionFileLoader(module, path)
    spec = importlib.util.spec_from_file_location(module, path, loader=loader)
    if spec is None:
        raise ImportError("cannot load %s" % path)
    extension = importlib.util.module_from_spec(spec)
    loader.exec_module(extension)
    return extension


def _import(path: str) -> ModuleType:
    return import_extension(MODULE, path)


class OnceLoader:
    """An extension chosen once per process by an environment variable: "0" refuses it, "1" makes a failed
    build or import an error, anything else builds it where missing and, on any failure, says why (the
    caller then runs its fallback). Shared by the C tracer (MEMHINT_CTRACE) and the allocation hook
    (MEMHINT_ALLOCHOOK), which differ only in the variable, the binary's path, the build and the import."""

    def __init__(self, variable: str, label: str, path: Callable[[], str], build_to: Callable[[str], None],
                 import_from: Callable[[str], ModuleType]):
        self.variable, self.label = variable, label
        self.path, self.build_to, self.import_from = path, build_to, import_from
        self.loaded: Optional[Tuple[Optional[ModuleType], str]] = None  # (module or None, why not)

    def __call__(self) -> Tuple[Optional[ModuleType], str]:
        if self.loaded is not None:
            return self.loaded
        choice = os.environ.get(self.variable, "")
        if choice == "0":
            self.loaded = (None, "%s=0" % self.variable)
            return self.loaded
        try:
            path = self.path()
            if not os.path.exists(path):
                self.build_to(path)
            self.loaded = (self.import_from(path), "")
        except Exception as error:  # noqa: BLE001 - any failure means the caller's fallback, said by it
            if choice == "1":
                raise RuntimeError("%s=1 but the %s is unavailable: %s" % (self.variable, self.label, error))
            self.loaded = (None, str(error) or type(error).__name__)
        return self.loaded


# (the C module, "") or (None, why the Python tracer runs). Decided once per process.
load = OnceLoader("MEMHINT_CTRACE", "C tracer", binary_path, build, _import)


def main(argv=None) -> int:
    """`python -m memhint_harness.ctrace --build`: builds this interpreter's copy now (setup scripts)."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["--build"]:
        print("usage: python -m memhint_harness.ctrace --build", file=sys.stderr)
        return 2
    try:
        path = binary_path()
        build(path)
        _import(path)
    except Exception as error:  # noqa: BLE001
        print("memhint: C tracer not built (the Python tracer will run): %s" % error, file=sys.stderr)
        return 1
    print("memhint: C tracer built for %s: %s" % (sys.executable, path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
