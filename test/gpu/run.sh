#!/usr/bin/env bash
# GPU checks of the step profiler (cuda backend). Needs only python3 with a CUDA torch: no node, no npm.
#   bash test/gpu/run.sh            (writes reports and the memory_viz snapshot to $OUT or .gpu-out/)
set -uo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${MEMHINT_TEST_PYTHON:-python3}"
"$PYTHON" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' || exit 2
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
status=0
timeout 300 "$PYTHON" test/gpu/check_profile.py || status=$?
# The trace-based CUDA design (#17): _record_memory_history overhead on GPT-2 small (goal <= 1.10x) and
# per-line figures from the allocator's trace beside the CPU backend's.
timeout 600 "$PYTHON" test/gpu/check_trace.py || status=$?
# memhint predict vs the real allocator: max_memory_allocated within 3%, max_memory_reserved within 10%
# (needs torch >= 2.0 and transformers in $PYTHON; docs/predict.md has the table).
timeout 1200 "$PYTHON" test/gpu/check_predict.py --json "${OUT:-.gpu-out}/predict-vs-measured.json" || status=$?
if [ -f test/gpu/sampler-check.mjs ] && command -v node >/dev/null 2>&1; then
  # Native sampler vs NVML (needs `npm run compile` and the addon built: out/ and native/build/).
  if [ -f out/src/sampler/index.js ]; then MEMHINT_GPU_PYTHON="$PYTHON" timeout 300 node test/gpu/sampler-check.mjs || status=$?; else echo "sampler GPU check skipped: out/ not compiled (npm run compile)"; fi
fi
exit $status
