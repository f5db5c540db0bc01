#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: install what memhint needs, build it, then lint and
# profile the bundled example training script (CPU backend, Debian's PyTorch).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-system.sh
[ -d node_modules ] || npm ci
npm run build --silent
PY="${MEMHINT_PYTHON:-/usr/bin/python3}"

echo "== memhint lint examples/"
node bin/memhint.js lint examples || true   # exit 1 = findings, which the example has on purpose

echo
echo "== memhint profile examples/train.py::train_step"
node bin/memhint.js profile examples/train.py::train_step --python "$PY" --backend auto --warmup 1 --steps 3
