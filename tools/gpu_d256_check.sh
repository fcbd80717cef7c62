#!/usr/bin/env bash
# The d256 FA3 backward on the H200, from the built binaries: the backward GPU suite's d256 cases,
# the sanitizers on a few of them, and a quick timing. Logs under $OUT (one per step), then a summary.
#
#   OUT=/some/dir tools/gpu_d256_check.sh [BIN]
# BIN (default: the repository root) holds run_tests and flashptx as `make -j2` builds them (CUDA
# runtime linked statically: on the device machine, carry run_tests and flashptx with the tree).
# Steps, each bounded by `timeout`, each its own process (a trapped kernel poisons only its own
# CUDA context):
#   tests_d256        run_tests -ts='gpu_sm90 fa3 backward' -tc='d256*' (the seven "d256: ..." cases:
#                     fp64 reference rule, GQA/MQA, strides, causal, edges, deterministic 100 launches)
#   tests_d64_d128    the same suite without the d256 cases: the shared kernel body at d64/d128
#   memcheck, synccheck   compute-sanitizer on the d256 medium/edge cases
#   bwd_b4_s4096, bwd_b2_s8192 (+ _causal, + _det)   flashptx bench --direction bwd, d256, 8 heads
set -u
BIN=${1:-.}
OUT=${OUT:?set OUT to the folder for the logs}
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin"  # compute-sanitizer, where the toolkit is not on PATH
summary=()
run() {  # run NAME TIMEOUT CMD...: logs to $OUT/NAME.log, records the exit code and the last line
  local name=$1 t=$2; shift 2
  local t0=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  summary+=("$name rc=$rc $(( $(date +%s) - t0 ))s: $(tail -n 1 "$OUT/$name.log" | cut -c1-160)")
  return $rc
}

run nvidia_smi 20 nvidia-smi
run tests_d256 420 "$BIN/run_tests" -ts='gpu_sm90 fa3 backward' -tc='d256*'
run tests_d64_d128 300 "$BIN/run_tests" -ts='gpu_sm90 fa3 backward' -tce='d256*'
if command -v compute-sanitizer > /dev/null; then
  run memcheck_d256 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/run_tests" \
    -ts='gpu_sm90 fa3 backward' -tc='d256: medium*,d256: edge*,d256: strided*'
  run synccheck_d256 200 compute-sanitizer --tool synccheck --error-exitcode 9 "$BIN/run_tests" \
    -ts='gpu_sm90 fa3 backward' -tc='d256: medium*'
fi
# Timing: b=4 s=4096 and b=2 s=8192, 8 heads, d256, bf16; non-causal and causal, default and
# deterministic mode. The first row of each size is checked against the GPU reference (every element
# of dQ, dK, dV); the others are timed only.
for shape in "4 4096" "2 8192"; do
  set -- $shape
  b=$1 s=$2
  for c in "" "--causal"; do
    for m in "" "--deterministic"; do
      name="bwd_b${b}_s${s}${c:+_causal}${m:+_det}"
      check=(--no-gpu-ref)
      [ -z "$c" ] && [ -z "$m" ] && check=()
      run "$name" 240 "$BIN/flashptx" bench --direction bwd --batch "$b" --seqlen "$s" --heads 8 --hdim 256 $c $m \
        --reps 20 "${check[@]}" --out "$OUT/$name.json"
    done
  done
done

printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
