"""Builds and loads the allocation hook (_callochook.cpp, issue #17): torch's own memory-reporting hook and
a backward-node RecordFunction callback in C++, so that allocations are seen without a Python dispatch mode.

Built with the system C++ compiler against the running torch's headers (`torch/include`, shipped in pip
wheels; Debian's python3-torch 1.13 ships none without libtorch-dev) and linked to its libc10/libtorch_cpu,
at first use or by `python -m memhint_harness.allochook --build`, into a cache keyed by interpreter, torch
build and source hash. Nothing is downloaded. Where it cannot be built (no headers, no compiler, a compile
error against another torch, a build over the time limit) load() says why and the caller keeps the dispatch
path: the hook is an optimisation, never a requirement.

MEMHINT_ALLOCHOOK=0 refuses it, =1 makes a failed build an error (tests use both). The cache is
<ctrace cache>/allochook (MEMHINT_CTRACE_CACHE moves both).
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shlex
import sys
import sysconfig
from types import ModuleType
from typing import List, Tuple

from . import ctrace

_HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(_HERE, "_callochook.cpp")
MODULE = "memhint_allochook"
# A cold build under load takes 5-25 s (torch's headers are large); a hung compiler must not hang the run.
BUILD_TIMEOUT_S = 180

def _torch_paths() -> Tuple[str, str]:
    """(include folder, library folder) of the imported torch; raises RuntimeError where there are none."""
    import torch

    root = os.path.dirname(os.path.abspath(torch.__file__))
    include, lib = os.path.join(root, "include"), os.path.join(root, "lib")
    if not os.path.isfile(os.path.join(include, "c10", "core", "Allocator.h")):
        raise RuntimeError("torch %s has no C++ headers in %s (Debian: libtorch-dev)" % (torch.__version__, include))
    for name in ("libc10.so", "libtorch_cpu.so"):
        if not os.path.exists(os.path.join(lib, name)):
            raise RuntimeError("torch %s has no %s in %s" % (torch.__version__, name, lib))
    return include, lib


def binary_path() -> str:
    import torch

    digest = hashlib.sha256()
    with open(SOURCE, "rb") as handle:
        digest.update(handle.read())
    # One build per interpreter and torch build: the C++ ABI of torch changes between any two versions.
    digest.update(("%s|%s|%s" % (sys.version, torch.__version__, os.path.abspath(torch.__file__))).encode())
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or importlib.machinery.EXTENSION_SUFFIXES[0]
    tag = "%s-%s" % (sys.implementation.cache_tag, digest.hexdigest()[:16])
    return os.path.join(ctrace.cache_dir(), "allochook", tag, MODULE + suffix)


def compile_command(target: str) -> List[str]:
    import torch

    include, lib = _torch_paths()
    python_include = sysconfig.get_paths().get("include") or ""
    if not os.path.exists(os.path.join(python_include, "Python.h")):
        raise RuntimeError("no Python.h in %s (Debian: apt-get install python3-dev)" % (python_include or "?"))
    cxx = shlex.split(os.environ.get("CXX") or "c++")
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    # -isystem: torch's own headers warn under -Wall; the hook's source is kept -Wall clean.
    return cxx + ["-shared", "-fPIC", "-O2", "-Wall", "-std=c++20", "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi,
                  "-I" + python_include, "-isystem", include, SOURCE, "-L" + lib, "-lc10", "-ltorch_cpu",
                  "-Wl,-rpath," + lib, "-o", target]


def build(target: str) -> None:
    """Compiles the hook into `target` (atomically, as ctrace.build). Raises RuntimeError saying why not."""
    if sys.implementation.name != "cpython":
        raise RuntimeError("not CPython (%s)" % sys.implementation.name)
    compile_command(target)  # raises before anything is written where the headers or Python.h are missing
    ctrace.compile_atomically(target, compile_command, timeout_s=BUILD_TIMEOUT_S)


def _import(path: str) -> ModuleType:
    import torch  # noqa: F401 - libc10/libtorch_cpu loaded before the hook that links them

    return ctrace.import_extension(MODULE, path)


# (the hook module, "") or (None, why not). Decided once per process (ctrace.OnceLoader).
load = ctrace.OnceLoader("MEMHINT_ALLOCHOOK", "allocation hook", binary_path, build, _import)


def main(argv=None) -> int:
    """`python -m memhint_harness.allochook --build`: builds this interpreter's and torch's copy now; exit 0
    also where the torch has no headers (said on stdout), 1 where it has them and the build fails."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["--build"]:
        print("usage: python -m memhint_harness.allochook --build", file=sys.stderr)
        return 2
    try:
        _torch_paths()
    except Exception as error:  # noqa: BLE001 - a torch without headers: nothing to build, not a setup error
        print("memhint: allocation hook skipped for %s (the dispatch path will run): %s" % (sys.executable, error))
        return 0
    try:
        path = binary_path()
        build(path)
        _import(path)
    except Exception as error:  # noqa: BLE001
        print("memhint: allocation hook not built (the dispatch path will run): %s" % error, file=sys.stderr)
        return 1
    print("memhint: allocation hook built for %s: %s" % (sys.executable, path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
