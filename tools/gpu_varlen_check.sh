#!/usr/bin/env bash
# The varlen forward (flashptx_fwd_varlen) on the H200, from the built binaries, logs under $OUT:
#
#   OUT=DIR tools/gpu_varlen_check.sh [BIN] [steps...]
#
# BIN (default: the repository root) holds run_tests and libflashptx.so as `make` builds them.
# Steps (default: info tests timing):
#   info      nvidia-smi -L
#   tests     ./run_tests -ts="gpu_sm90 fa3 varlen": the varlen GPU suite alone (tests/gpu/
#             test_fa3_varlen.cpp: fp64 reference per sequence, poison, cross-sequence rows, bad
#             cu_seqlens, 100 launches bitwise); budget 120 s, expected well under 60 s
#   timing    tools/bench/varlen_time.py (needs PyTorch) into $OUT/varlen_time.json: per mix of
#             lengths (16 random in 256..4096; one 8192 + 63 x 128; 8 x 2048), d128, 16 heads, bf16,
#             causal and not: varlen vs the padded batch (every sequence padded to the longest) and vs
#             equal lengths of the same token count, median of 20 CUDA-event times after an L2 flush,
#             TFLOP/s over the pairs each call computes (varlen: exact per-sequence pairs)
#   fwd       ./run_tests -ts="gpu_sm90 fa3 forward": the fixed-length forward suite (regression)
#   memcheck  compute-sanitizer memcheck over the varlen suite's short-sequence case (out-of-bounds
#             writes of a tail tile would show here too)
# The last lines printed are a one-line summary per step; every step's full log is $OUT/STEP.log.
set -u
OUT=${OUT:?set OUT to the folder for the logs}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT}
[ $# -gt 0 ] && shift
steps=${*:-"info tests timing"}
mkdir -p "$OUT"
# The release library beside run_tests is found through FLASHPTX_LIB (tests/gpu/release_lib.h).
export FLASHPTX_LIB=${FLASHPTX_LIB:-$BIN/libflashptx.so}
summary=()
status=0
run() {  # run NAME TIMEOUT CMD...: logs to $OUT/NAME.log, records the exit code and the time
  local name=$1 t=$2 t0 rc
  shift 2
  t0=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  summary+=("$name rc=$rc $(( $(date +%s) - t0 ))s: $(tail -n 1 "$OUT/$name.log" | cut -c1-160)")
}
for s in $steps; do
  case $s in
    info) run info 30 nvidia-smi -L ;;
    tests) run tests 120 "$BIN/run_tests" -ts="gpu_sm90 fa3 varlen" ;;
    timing)
      run timing 240 env PYTHONPATH="$ROOT/tools/python" python3 "$ROOT/tools/bench/varlen_time.py" \
        --out "$OUT/varlen_time.json"
      cat "$OUT/timing.log" ;;
    fwd) run fwd 420 "$BIN/run_tests" -ts="gpu_sm90 fa3 forward" ;;
    memcheck)
      run memcheck 300 "${CUDA:-/usr/local/cuda}/bin/compute-sanitizer" --tool memcheck "$BIN/run_tests" \
        -ts="gpu_sm90 fa3 varlen" -tc="every head dim*" ;;
    *) echo "gpu_varlen_check: unknown step $s (info tests timing fwd memcheck)"; status=1 ;;
  esac
done
printf '%s\n' "${summary[@]}"
exit $status
