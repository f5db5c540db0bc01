#!/usr/bin/env bash
# Every CUDA check of memhint in one command (issues #14 #16 #17 #18). Needs only python3 with a CUDA torch;
# the sampler check also needs node with out/ and native/build/.
#   bash test/gpu/run.sh [--quick]
# Writes reports, the memory_viz snapshot and gpu-log.txt to $OUT (or .gpu-out/). Each check has its own
# time limit so that one hang cannot eat a short device lease; --quick trims the repetitions (about 5
# minutes in all on an H200) and is what a lent device runs first.
set -uo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${MEMHINT_TEST_PYTHON:-python3}"
OUT="${OUT:-.gpu-out}"; export OUT; mkdir -p "$OUT"
QUICK=0; [ "${1:-}" = "--quick" ] && QUICK=1
export PYTHONUNBUFFERED=1
exec > >(tee "$OUT/gpu-log.txt") 2>&1
"$PYTHON" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' || exit 2
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
status=0
check() {  # check NAME SECONDS COMMAND...: runs one check under its limit and records its outcome
  local name=$1 limit=$2; shift 2
  local started=$SECONDS
  echo; echo "=== $name (limit ${limit} s)"
  timeout -k 5 "$limit" "$@"; local rc=$?
  echo "=== $name: rc $rc in $((SECONDS - started)) s"
  [ $rc -eq 0 ] || status=1
}
# The cuda backend against analytic sizes: parameters, gradients, Adam state, backward on device threads, OOM.
check "profile: cuda backend" 150 "$PYTHON" test/gpu/check_profile.py
# memhint predict vs the real allocator: max_memory_allocated within 3%, max_memory_reserved within 10%.
check "predict vs measured" 240 "$PYTHON" test/gpu/check_predict.py --json "$OUT/predict-vs-measured.json"
# The harness's per-op cost on a GPU (the dispatch path) on GPT-2 small, beside the allocator-trace design.
PAIRS=8; [ $QUICK -eq 1 ] && PAIRS=4
for model in hf-gpt2 nanogpt; do
  check "overhead: memhint cuda backend (dispatch path), $model" 120 \
    "$PYTHON" scripts/bench_interleaved.py --zoo "$model" --device cuda --pairs $PAIRS --warmup 1
done
check "overhead + per-line: allocator trace (the trace design)" 150 "$PYTHON" test/gpu/check_trace.py
# The harness's cuda trace path vs its dispatch path on the profile fixture: per-line bytes, kinds, step times.
check "harness: cuda trace path vs dispatch path" 90 "$PYTHON" test/gpu/check_trace_backend.py
if [ -f test/gpu/sampler-check.mjs ] && command -v node >/dev/null 2>&1; then
  # Native sampler vs NVML (needs `npm run compile` and the addon built: out/ and native/build/).
  if [ -f out/src/sampler/index.js ]; then
    export MEMHINT_GPU_PYTHON="$PYTHON"; check "sampler vs NVML" 120 node test/gpu/sampler-check.mjs
  else echo "sampler GPU check skipped: out/ not compiled (npm run compile)"; fi
else
  echo "sampler GPU check skipped: no node on this machine"
fi
echo; echo "test/gpu/run.sh: $([ $status -eq 0 ] && echo all checks passed || echo some checks FAILED)"
exit $status
