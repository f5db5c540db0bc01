#!/usr/bin/env bash
# Creates .venv-torch2 at the repository root: a current torch 2.x (CPU) for the harness tests next to
# Debian's torch 1.13 (/usr/bin/python3). Offline on CI machines: pip uses the preconfigured local wheels
# and index (`pip config list`). Idempotent: a venv that already imports torch >= 2 is kept.
# Works on Debian 12 (python 3.11) and 13 (python 3.13). scripts/test-torch2.mjs runs the tests with it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-torch2
PACKAGES=(torch numpy transformers)
# Importing transformers takes seconds: its presence is enough.
CHECK='import importlib.util as u, sys, torch; sys.exit(0 if int(torch.__version__.split(".")[0]) >= 2 and u.find_spec("numpy") and u.find_spec("transformers") else 1)'

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$CHECK" 2>/dev/null; then
  echo "setup-torch2: $VENV ready ($("$VENV/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
  exit 0
fi

# An interpreter that can make a venv with pip: python3 on PATH (pyenv, ...), else Debian's, whose venv
# module needs the python3-venv package.
pick() {
  for candidate in python3 /usr/bin/python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import venv, ensurepip' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}
if ! PYTHON=$(pick); then
  echo "setup-torch2: no python3 with venv/ensurepip; installing Debian's python3-venv"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv
  PYTHON=$(pick) || { echo "setup-torch2: python3 -m venv still unavailable" >&2; exit 1; }
fi

rm -rf "$VENV"  # a half-made venv from an interrupted run
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --retries 0 --quiet "${PACKAGES[@]}"
"$VENV/bin/python" -c "$CHECK" || { echo "setup-torch2: $VENV has no torch >= 2" >&2; exit 1; }
echo "setup-torch2: $VENV ready ($("$VENV/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
