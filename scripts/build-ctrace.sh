#!/usr/bin/env bash
# Builds the harness's C line tracer (python/memhint_harness/_ctrace.c) and, where the torch ships C++ headers,
# its allocation hook (_callochook.cpp, allochook.py) for the interpreters the tests use:
# Debian's python3 (torch 1.13) and .venv-torch2 when present, into the per-interpreter cache of ctrace.py.
# The harness would otherwise build it on first use; building here makes a missing compiler or Python.h
# (setup-system.sh installs python3-dev) an error of the setup, not a silent fallback to the Python tracer.
#   bash scripts/build-ctrace.sh [PYTHON...]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  set -- /usr/bin/python3
  [ -x .venv-torch2/bin/python ] && set -- "$@" .venv-torch2/bin/python
fi
for python in "$@"; do
  PYTHONPATH=python "$python" -m memhint_harness.ctrace --build
  # The allocation hook (issue #17) where the torch ships C++ headers (pip wheels; not Debian's 1.13).
  PYTHONPATH=python "$python" -m memhint_harness.allochook --build
done
