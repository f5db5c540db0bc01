#!/usr/bin/env bash
# Every CUDA check of memhint in one command (issues #14 #16 #17 #18). Needs only python3 with a CUDA torch;
# the sampler check also needs node with out/ and native/build/.
#   bash test/gpu/run.sh [--quick] [--only KEY,KEY...]   (keys: profile predict per-line overhead trace
#                                                        trace-backend sampler)
# Writes gpu-log.txt and gpu-results.tgz (reports, the memory_viz snapshot, JSON figures) to $OUT (or
# .gpu-out/): one archive, since a device lease brings back only a few files. Each check has its own time
# limit so that one hang cannot eat a short lease; --quick trims the repetitions (about 5 minutes in all on
# an H200) and is what a lent device runs first.
set -uo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${MEMHINT_TEST_PYTHON:-python3}"
ROOT_OUT="${OUT:-.gpu-out}"; mkdir -p "$ROOT_OUT"
OUT="$ROOT_OUT/results"; export OUT; rm -rf "$OUT"; mkdir -p "$OUT"  # where the checks write
QUICK=0; ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in --quick) QUICK=1 ;; --only) ONLY=",$2,"; shift ;; *) echo "run.sh: unknown option $1"; exit 2 ;; esac
  shift
done
export PYTHONUNBUFFERED=1
exec > >(tee "$ROOT_OUT/gpu-log.txt") 2>&1
"$PYTHON" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' || exit 2
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
status=0
check() {  # check KEY NAME SECONDS COMMAND...: runs one check under its limit and records its outcome
  local key=$1 name=$2 limit=$3; shift 3
  if [ -n "$ONLY" ] && [[ "$ONLY" != *",$key,"* ]]; then echo "=== $name: not selected (--only)"; return; fi
  local started=$SECONDS
  echo; echo "=== $name (limit ${limit} s)"
  timeout -k 5 "$limit" "$@"; local rc=$?
  echo "=== $name: rc $rc in $((SECONDS - started)) s"
  [ $rc -eq 0 ] || status=1
}
# The cuda backend against analytic sizes: parameters, gradients, Adam state, backward on device threads, OOM.
check profile "profile: cuda backend" 150 "$PYTHON" test/gpu/check_profile.py
# The harness's cuda trace path vs its dispatch path on the profile fixture: per-line bytes, kinds, step times.
check trace-backend "harness: cuda trace path vs dispatch path" 90 "$PYTHON" test/gpu/check_trace_backend.py
# memhint predict vs the real allocator: max_memory_allocated within 3%, max_memory_reserved within 10%.
check predict "predict vs measured" 200 "$PYTHON" test/gpu/check_predict.py --json "$OUT/predict-vs-measured.json"
# Where a difference comes from: the same GPT-2 step profiled (cuda backend) and predicted, line by line.
check per-line "predict vs measured, per line (GPT-2 small, batch 8 x 1024)" 150 "$PYTHON" test/gpu/profile_vs_predict.py
# The harness's per-op cost on a GPU (the dispatch path) on GPT-2 small, beside the allocator-trace design.
PAIRS=8; [ $QUICK -eq 1 ] && PAIRS=4
for model in hf-gpt2 nanogpt; do
  check overhead "overhead: memhint cuda backend (dispatch path), $model" 120 \
    "$PYTHON" scripts/bench_interleaved.py --zoo "$model" --device cuda --pairs $PAIRS --warmup 1
done
check trace "overhead + per-line: allocator trace (the trace design)" 150 "$PYTHON" test/gpu/check_trace.py
if [ -f test/gpu/sampler-check.mjs ] && command -v node >/dev/null 2>&1; then
  # Native sampler vs NVML (needs `npm run compile` and the addon built: out/ and native/build/).
  if [ -f out/src/sampler/index.js ]; then
    export MEMHINT_GPU_PYTHON="$PYTHON"; check sampler "sampler vs NVML" 120 node test/gpu/sampler-check.mjs
  else echo "sampler GPU check skipped: out/ not compiled (npm run compile)"; fi
else
  echo "sampler GPU check skipped: no node on this machine"
fi
tar czf "$ROOT_OUT/gpu-results.tgz" -C "$OUT" . && rm -rf "$OUT"
echo; echo "test/gpu/run.sh: $([ $status -eq 0 ] && echo all checks passed || echo some checks FAILED)"
exit $status
