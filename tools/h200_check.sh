#!/usr/bin/env bash
# The hardware check of main on the H200, in device calls of at most ~9 minutes each:
#
#   tools/h200_check.sh BIN OUT suites     every GPU suite, one process each (a trapped kernel
#                                          poisons its own CUDA context only), test flavour
#                                          (./run_tests) and release flavour (libflashptx.so: the
#                                          release-flavour suites and the Python GPU tests); the
#                                          ladder's TFLOP/s (flashptx ladder --bench)
#   tools/h200_check.sh BIN OUT sanitize   compute-sanitizer memcheck, synccheck and racecheck on one
#                                          small case per kernel family; the package's host cost
#   tools/h200_check.sh BIN OUT changed    the suites whose tests or host path changed with the product
#                                          and lab restructuring (backward, FP8, varlen, release
#                                          flavour, launch plan, a forward subset, the Python package
#                                          and its host cost)
#
# BIN holds run_tests, flashptx, libflashptx.so (CUDA runtime linked statically) and COMMIT.
# Every step writes its own log; the summary (printed last, and in summary.txt) gives each step's
# exit code, seconds and last line; the logs come back in one archive.
set -u
BIN=$(cd "${1:?BIN}" && pwd); OUT=${2:?OUT}; what=${3:?suites|sanitize|changed}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
export FLASHPTX_LIB=$BIN/libflashptx.so PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/tools/python${PYTHONPATH:+:$PYTHONPATH}
[ -f "$BIN/COMMIT" ] && export FLASHPTX_GIT_COMMIT=$(cat "$BIN/COMMIT")
summary=()
t_start=$(date +%s); budget=${BUDGET:-540}
step() {  # step NAME TIMEOUT CMD...: not started once the call's budget (seconds) would be passed
  local name=$1 t=$2 t0 rc; shift 2
  t0=$(date +%s)
  local left=$(( budget - (t0 - t_start) ))
  if [ "$left" -lt 20 ]; then summary+=("$name not run: the call's budget of ${budget}s is spent"); return; fi
  [ "$t" -le "$left" ] || t=$left
  timeout "$t" "$@" > "$OUT/$name.log" 2>&1; rc=$?
  summary+=("$name rc=$rc $(( $(date +%s) - t0 ))s: $(grep -E 'passed|ERROR SUMMARY|test cases|ladder-tflops: fa3' "$OUT/$name.log" | tail -n 1 | cut -c1-150)")
}
step info 40 bash -c 'nvidia-smi; python3 -c "import torch; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"cudnn\", torch.backends.cudnn.version())"; compute-sanitizer --version; echo commit ${FLASHPTX_GIT_COMMIT:-unknown}'
case $what in
  suites)
    for suite in "gpu_sm90 fa3 forward" "gpu_sm90 fa3 backward" "gpu_sm90 fa3 fp8 forward" "gpu_sm90 fa3 fp8 rmse" \
                 "gpu_sm90 fp8 quantize" "gpu_sm90 fa3 varlen" "gpu_sm90 release flavour" "gpu_sm90 launch plan" \
                 "gpu_sm90 fa3 trace" "gpu_sm90 numerics" "gpu_sm90 ladder" "gpu_sm90 race repro" \
                 "gpu_sm90 primitives mbarrier" "gpu_sm90 primitives named barriers" "gpu_sm90 primitives setmaxnreg" \
                 "gpu_sm90 primitives tma" "gpu_sm90 primitives wgmma" "gpu_sm90 primitives ldst" \
                 "gpu_sm90 primitives cluster"; do
      step "suite_${suite// /_}" 240 "$BIN/run_tests" -ts="$suite"
    done
    step ladder_bench 120 "$BIN/flashptx" ladder --bench
    step all_but_gpu 200 "$BIN/run_tests" -tse='gpu*'
    step python_gpu 200 python3 tools/python/tests/test_gpu.py --json "$OUT/python_gpu.json" ;;
  sanitize)
    step "suite_gpu_sm90_fa3_forward_rest" 200 "$BIN/run_tests" -ts="gpu_sm90 fa3 forward" \
      -tc="the persistent d256*,the dynamic schedule*,bad input*"
    cs() { local tool=$1 name=$2 suite=$3 cases=$4; step "${tool}_$name" 150 compute-sanitizer --tool "$tool" \
             --error-exitcode 9 "$BIN/run_tests" -ts="$suite" -tc="$cases"; }
    for tool in memcheck synccheck racecheck; do
      cs $tool fwd "gpu_sm90 fa3 forward" "unequal lengths*"
      cs $tool bwd "gpu_sm90 fa3 backward" "small shapes*"
      cs $tool fp8 "gpu_sm90 fa3 fp8 forward" "d128:*"
      cs $tool varlen "gpu_sm90 fa3 varlen" "every head dim*"
      cs $tool quant "gpu_sm90 fp8 quantize" "shapes:*"
    done
    cs racecheck release "gpu_sm90 release flavour" "*"
    step profile_calls 200 python3 tools/python/profile_calls.py --json "$OUT/profile_calls.json" ;;
  changed)
    step python_gpu 150 python3 tools/python/tests/test_gpu.py --json "$OUT/python_gpu.json"
    step profile_calls 120 python3 tools/python/profile_calls.py --json "$OUT/profile_calls.json"
    step suite_fp8_rmse 60 "$BIN/run_tests" -ts="gpu_sm90 fa3 fp8 rmse"
    step suite_bwd 240 "$BIN/run_tests" -ts="gpu_sm90 fa3 backward"
    for suite in "gpu_sm90 release flavour" "gpu_sm90 fa3 varlen" "gpu_sm90 fa3 fp8 forward" "gpu_sm90 launch plan" \
                 "gpu_sm90 fp8 quantize"; do
      step "suite_${suite// /_}" 120 "$BIN/run_tests" -ts="$suite"
    done
    step suite_fwd_subset 150 "$BIN/run_tests" -ts="gpu_sm90 fa3 forward" \
      -tc="small shapes*,unequal lengths*,strided layouts*,seqlen_k = 0*,bad input*" ;;
esac
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
(cd "$OUT" && tar czf logs.tgz *.log && rm -f *.log)
