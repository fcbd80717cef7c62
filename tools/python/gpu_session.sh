#!/usr/bin/env bash
# The Python package on the H200, in one call (about 3 minutes expected; each step has its own time limit, 7.5 minutes in all):
#
#   tools/python/gpu_session.sh OUT
#
#   1. tests/test_gpu.py     flashptx.attention against fp64 SDPA (forward, gradients, GQA, odd lengths),
#                            layouts, errors, deterministic mode, opcheck, torch.compile (< 200 s)
#   2. train_compare.py      SDPA (cuDNN) seed 0 / flashptx seed 0 / SDPA seed 1, 300 steps each (< 150 s)
#   3. python -m flashptx.bench   a few shapes, fwd and fwd+bwd, flashptx vs SDPA cuDNN vs SDPA flash (< 60 s)
#
# The library: $FLASHPTX_LIB, else libflashptx.so at the repository root (built by `make`; carry it).
# $FLASHPTX_GIT_COMMIT, when set, is recorded in the JSON files (the GPU machine's tree has no .git).
# OUT receives six files: summary.txt (also printed), logs.tgz (every step's full log),
# test_gpu.json, train_compare.json, train_compare.png, bench.json.
set -u
OUT=${1:?usage: tools/python/gpu_session.sh OUT}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export PYTHONPATH="$ROOT/tools/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export FLASHPTX_LIB=${FLASHPTX_LIB:-$ROOT/libflashptx.so}
if [ ! -f "$FLASHPTX_LIB" ]; then
  echo "gpu_session: no $FLASHPTX_LIB: run make at $ROOT, or set FLASHPTX_LIB" | tee "$OUT/summary.txt"
  exit 1
fi
summary=()
status=0
step() {  # step NAME TIMEOUT CMD...: the log goes to $OUT/NAME.log
  local name=$1 t=$2 t0 rc
  shift 2
  t0=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  summary+=("$name rc=$rc $(( $(date +%s) - t0 ))s: $(tail -n 1 "$OUT/$name.log" | cut -c1-160)")
}
t_start=$(date +%s)
step info 30 bash -c 'nvidia-smi -L; python3 -c "import torch; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"cudnn\", torch.backends.cudnn.version())"'
step test_gpu 200 python3 "$ROOT/tools/python/tests/test_gpu.py" --json "$OUT/test_gpu.json"
step train 150 python3 "$ROOT/tools/python/train_compare.py" --out "$OUT"
step bench 60 python3 -m flashptx.bench --json "$OUT/bench.json"
{
  echo "==== gpu_session: $(( $(date +%s) - t_start ))s, library $FLASHPTX_LIB, commit ${FLASHPTX_GIT_COMMIT:-unknown}"
  printf '%s\n' "${summary[@]}"
  echo "==== info";     cat "$OUT/info.log"
  echo "==== test_gpu"; grep -v '^  ' "$OUT/test_gpu.log" | tail -n 40
  echo "==== train";    tail -n 8 "$OUT/train.log"
  echo "==== bench";    tail -n 30 "$OUT/bench.log"
} > "$OUT/summary.txt"
(cd "$OUT" && tar czf logs.tgz ./*.log && rm -f ./*.log)
cat "$OUT/summary.txt"
exit $status
