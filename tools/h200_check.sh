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
#   tools/h200_check.sh BIN OUT capture_split  the same, one capture file per group of suites
#                                          (chip-GROUP.cap.gz)
#   tools/h200_check.sh BIN OUT capture    the simulator's cases at the simulator's shapes on the H200,
#                                          every device-to-host copy recorded (chip.cap.gz: compare with
#                                          tools/sim/compare_capture.py against a simulator run here)
#   tools/h200_check.sh BIN OUT grids      the bf16 forward and backward grids twice (kernel time, with
#                                          FA2 and the deterministic backward); the package's bench twice
#   tools/h200_check.sh BIN OUT fp8        the FP8 forward grid per head and per block (beside our bf16
#                                          and cuDNN's), the ladder's rungs, Nsight Compute on the FP8
#                                          forward at d128 8k
#   tools/h200_check.sh BIN OUT final      the capture again, the ISA-reading probes, the cases $CASES names
#                                          ("suite|case patterns;..."), memcheck on $MEMCHECK, cuDNN's FP8
#                                          forward beside ours (tools/bench/cudnn_fp8.py)
#   tools/h200_check.sh BIN OUT new        what was built since the last check: head dims 96/192, the
#                                          varlen backward, the sinks' gradient, the KV cache (leftpad,
#                                          CUDA graph, Python), their sanitizers; then their benchmarks
#   tools/h200_check.sh BIN OUT new_bench  those benchmarks alone (two runs each): d96/d192 beside
#                                          cuDNN, the varlen backward against the padded one, the KV cache
#   tools/h200_check.sh BIN OUT host       the package's host path: its GPU tests, the suites of the launch
#                                          path, then profile_calls (host time per call, with its split) and
#                                          the package's bench beside SDPA, two runs each
#   tools/h200_check.sh BIN OUT merged     the suites of the KV cache at d64/d256, the modifiers at d96/d192 and seqused;
#                                          the Python GPU tests; memcheck on their cases; the KV cache's bench
#   tools/h200_check.sh BIN OUT merged2    the KV cache's suite, the Python GPU tests, the FP8 suite, the FP8 paired
#                                          walk's long causal points against $LIB_B, the KV cache's bench again
#   tools/h200_check.sh BIN OUT fp8_walk   the FP8 forward's suite, memcheck/synccheck of its paired walk, and its
#                                          causal points against $LIB_B's FP8 forward in one process (two runs)
#   tools/h200_check.sh BIN OUT timeline   one forward+backward through the package and through SDPA cuDNN on the
#                                          bench's shapes under torch.profiler: each launch's host time, each
#                                          GPU wait, the host ops before the backward (two runs; traces of run 1)
#   tools/h200_check.sh BIN OUT all        every GPU suite split into steps (test flavour; the release flavour's
#                                          suite and the Python GPU tests), then memcheck, synccheck and
#                                          racecheck on one small case per kernel family: $JOBS processes at a
#                                          time on the one GPU (correctness only: nothing here is timed)
#   tools/h200_check.sh BIN OUT capture_new  the capture (as capture_split) of the suites and cases added since
#                                          the manifest tools/sim/chip/h200-copies.tsv was written
#   tools/h200_check.sh BIN OUT newkernels  the backward with a window and a softcap, the backward and the varlen
#                                          forward at head dims 96/192: their suites, the plan, release
#                                          flavour, sinks and Python GPU tests, three sanitizers on each (in
#                                          parallel); then, alone on the GPU, variants_time.py --bwd and the
#                                          d96/d192 forward+backward beside cuDNN, two runs each
#   tools/h200_check.sh BIN OUT split      the backward at (192, 128) and the varlen backward at head dims 96/192:
#                                          their cases, sinks, regressions, the plan, release flavour and Python
#                                          GPU tests, memcheck and synccheck on each (in parallel); then, alone
#                                          on the GPU, the varlen backward against the padded one at 96 and 192
#                                          and the d96/d192 and (192, 128) backward beside cuDNN, two runs each
#   tools/h200_check.sh BIN OUT bwdall     the backward's suites of mode all, the varlen backward and seqused, release
#                                          flavour and launch plan, memcheck on the backward's small shapes
#   tools/h200_check.sh BIN OUT split2     the varlen (192, 128) backward's cases alone and under memcheck, the Python
#                                          GPU tests; the head dims 96, 192, (192, 128) beside cuDNN and FA2 (two runs);
#                                          the varlen backward against the padded one at 96 and 192
#   WHAT may name several modes, comma-separated, run in that order in one call.
#
# BIN holds run_tests, flashptx, libflashptx.so (CUDA runtime linked statically) and COMMIT.
# Every step writes its own log; the summary (printed last, and in summary.txt) gives each step's
# exit code, seconds and last line; the logs come back in one archive.
set -u
BIN=$(cd "${1:?BIN}" && pwd); OUT=${2:?OUT}; what=${3:?suites|sanitize|changed|capture|capture_split|cases|grids|fp8|final}
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
# pstep NAME TIMEOUT CMD...: like step, in the background, at most $JOBS at a time; pwait collects them.
JOBS=${JOBS:-8}; pnames=()
pstep() {
  local name=$1 t=$2; shift 2
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  local left=$(( budget - ($(date +%s) - t_start) ))
  if [ "$left" -lt 20 ]; then summary+=("$name not run: the call's budget of ${budget}s is spent"); return; fi
  [ "$t" -le "$left" ] || t=$left
  pnames+=("$name")
  ( t0=$(date +%s); timeout "$t" "$@" > "$OUT/$name.log" 2>&1; echo "$? $(( $(date +%s) - t0 ))" > "$OUT/$name.rc" ) &
}
pwait() {
  wait
  local name rc secs
  for name in "${pnames[@]}"; do
    read -r rc secs < "$OUT/$name.rc" 2>/dev/null || { rc=?; secs=?; }
    summary+=("$name rc=$rc ${secs}s: $(grep -E 'passed|ERROR SUMMARY|test cases' "$OUT/$name.log" | tail -n 1 | cut -c1-150)")
    rm -f "$OUT/$name.rc"
  done
  pnames=()
}
run_cases() {  # run_cases TIMEOUT: each of $CASES ("suite|case patterns;...") its own step
  local named i
  IFS=';' read -ra named <<< "${CASES:-}"
  for i in "${!named[@]}"; do
    step "cases_$i" "$1" "$BIN/run_tests" -ts="${named[$i]%%|*}" -tc="${named[$i]#*|}"
  done
}
step info 40 bash -c 'nvidia-smi; python3 -c "import torch; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"cudnn\", torch.backends.cudnn.version())"; compute-sanitizer --version; python3 -c "import cudnn; print(\"cudnn frontend\", cudnn.__version__, cudnn.backend_version())" 2>&1 | tail -n 1; echo commit ${FLASHPTX_GIT_COMMIT:-unknown}'
for what in ${what//,/ }; do
case $what in
  capture)
    rm -f "$OUT/chip.cap"
    step capture_sim_cases 240 env FLASHPTX_TEST_SIM_SHAPES=1 FLASHPTX_CAPTURE="$OUT/chip.cap" "$BIN/run_tests"
    [ -f "$OUT/chip.cap" ] && gzip -f "$OUT/chip.cap" ;;
  grids)
    g="--dims 64,128,256 --seqlens 512,1024,2048,4096,8192,16384 --fa2 --det"
    step grid_bf16_run1 150 python3 tools/bench/kernel_time.py $g --out "$OUT/grid-bf16-run1.json"
    step grid_bf16_run2 150 python3 tools/bench/kernel_time.py $g --out "$OUT/grid-bf16-run2.json"
    step package_bench_run1 120 python3 -m flashptx.bench --hdims 64,128 --seqlens 1024,4096 --json "$OUT/package-bench-run1.json"
    step package_bench_run2 120 python3 -m flashptx.bench --hdims 64,128 --seqlens 1024,4096 --json "$OUT/package-bench-run2.json"
    ;;
  fp8)
    step grid_fp8_per_head 200 python3 tools/bench/fp8_time.py --grid --gran 1 --out "$OUT/grid-fp8-per-head.json"
    step grid_fp8_per_block 200 python3 tools/bench/fp8_time.py --grid --gran 2 --out "$OUT/grid-fp8-per-block.json"
    step ladder_rungs 90 "$BIN/flashptx" ladder --bench
    step ncu_fp8_d128_8k 150 ncu --clock-control none -k regex:fwd_fp8 --launch-count 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats \
      --section SchedulerStats --section Occupancy --section LaunchStats \
      python3 tools/bench/fp8_time.py --shapes "2,8192,16,128,0" --check-only ;;
  final)
    # The session's last call: the simulator's cases captured again (new cases since the last
    # capture), the ISA-reading probes (all four cases), the cases named by $CASES (suite|cases;...),
    # cuDNN's FP8 forward beside ours (the frontend wheel from .whl/), memcheck on $MEMCHECK (suite|cases).
    rm -f "$OUT/chip.cap"
    step capture_sim_cases 200 env FLASHPTX_TEST_SIM_SHAPES=1 FLASHPTX_CAPTURE="$OUT/chip.cap" "$BIN/run_tests"
    [ -f "$OUT/chip.cap" ] && gzip -f "$OUT/chip.cap"
    step isa_readings 60 "$BIN/run_tests" -ts="gpu_sm90 isa readings" -s
    run_cases "${CASE_TIMEOUT:-200}"
    if [ -n "${MEMCHECK:-}" ]; then
      step memcheck_named 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/run_tests" \
        -ts="${MEMCHECK%%|*}" -tc="${MEMCHECK#*|}"
    fi
    step variants_time 150 python3 tools/bench/variants_time.py --out "$OUT/variants-time.json"
    [ -n "${SKIP_CUDNN_FP8:-}" ] || step cudnn_fp8 200 bash -c 'python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --target /tmp/site .whl/*.whl && PYTHONPATH=/tmp/site:$PYTHONPATH python3 tools/bench/cudnn_fp8.py' ;;
  suites)
    # The forward suite in three steps (one of its cases alone runs minutes at the GPU's shapes).
    step suite_fwd_core 240 "$BIN/run_tests" -ts="gpu_sm90 fa3 forward" -tc="small shapes*,medium and long*,unequal lengths*,strided layouts*,large-magnitude*,scores that grow*,seqlen_k = 0*"
    step suite_fwd_schedules 240 "$BIN/run_tests" -ts="gpu_sm90 fa3 forward" -tc="large shapes*,determinism*,the paired*,the persistent d256*,the dynamic schedule*"
    step suite_fwd_local 300 "$BIN/run_tests" -ts="gpu_sm90 fa3 forward" -tc="sliding window*,softcap*,bad window*,bad input*,release library*"
    for suite in "gpu_sm90 fa3 backward" "gpu_sm90 fa3 fp8 forward" "gpu_sm90 fa3 fp8 rmse" \
                 "gpu_sm90 fp8 quantize" "gpu_sm90 fa3 varlen" "gpu_sm90 release flavour" "gpu_sm90 launch plan" \
                 "gpu_sm90 fa3 trace" "gpu_sm90 fa3 dynamic schedule" "gpu_sm90 numerics" "gpu_sm90 ladder" "gpu_sm90 race repro" \
                 "gpu_sm90 isa readings" "gpu_sm90 primitives*"; do
      step "suite_${suite// /_}" 240 "$BIN/run_tests" -ts="$suite"
    done
    step python_gpu 200 python3 tools/python/tests/test_gpu.py --json "$OUT/python_gpu.json" ;;
  cases)
    # The cases named by $CASES ("suite|case patterns;..."), each its own step of up to $CASE_TIMEOUT s.
    run_cases "${CASE_TIMEOUT:-300}" ;;
  capture_split)
    # The capture of the simulator's cases, one file per group of suites (a single file of every case
    # is past what a call can bring back).
    groups=("fwd|gpu_sm90 fa3 forward" "bwd|gpu_sm90 fa3 backward" "varlen|gpu_sm90 fa3 varlen,gpu_sm90 fa3 trace,gpu_sm90 fa3 dynamic schedule"
            "fp8|gpu_sm90 fa3 fp8*,gpu_sm90 fp8 quantize" "rest|gpu_sm90 primitives*,gpu_sm90 numerics,gpu_sm90 ladder,gpu_sm90 race repro,gpu_sm90 launch plan,gpu_sm90 release flavour,gpu_sm90 isa readings")
    for g in "${groups[@]}"; do
      rm -f "$OUT/chip-${g%%|*}.cap"
      step "capture_${g%%|*}" 150 env FLASHPTX_TEST_SIM_SHAPES=1 FLASHPTX_CAPTURE="$OUT/chip-${g%%|*}.cap" "$BIN/run_tests" -ts="${g#*|}"
      [ -f "$OUT/chip-${g%%|*}.cap" ] && gzip -f "$OUT/chip-${g%%|*}.cap"
    done ;;
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
      cs $tool local "gpu_sm90 fa3 forward" "softcap*"
      cs $tool dynamic "gpu_sm90 fa3 dynamic schedule" "*"
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
  new)
    step suite_hdim 200 "$BIN/run_tests" -ts="gpu_sm90 fa3 forward" -tc="head dims 96*,small shapes*,bad input*"
    step suite_varlen 300 "$BIN/run_tests" -ts="gpu_sm90 fa3 varlen"
    step suite_sinks 240 "$BIN/run_tests" -ts="gpu_sm90 fa3 sinks"
    step suite_kvcache 120 "$BIN/run_tests" -ts="gpu_sm90 fa3 kvcache"
    step suite_plan_release 150 "$BIN/run_tests" -ts="gpu_sm90 launch plan,gpu_sm90 release flavour"
    step python_gpu 200 python3 tools/python/tests/test_gpu.py --json "$OUT/python_gpu.json"
    cs() { local tool=$1 name=$2 suite=$3 cases=$4; step "${tool}_$name" 120 compute-sanitizer --tool "$tool" \
             --error-exitcode 9 "$BIN/run_tests" -ts="$suite" -tc="$cases"; }
    for tool in memcheck racecheck; do
      cs $tool hdim "gpu_sm90 fa3 forward" "head dims 96 and 192, and*"
      cs $tool varlen_bwd "gpu_sm90 fa3 varlen" "backward: every head dim*"
      cs $tool kvcache "gpu_sm90 fa3 kvcache" "*"
    done ;;
  new_bench)
    for run in 1 2; do
      step kvcache_time_run$run 90 python3 tools/bench/kvcache_time.py --out "$OUT/kvcache-time-run$run.json"
      step hdim_time_run$run 120 python3 tools/bench/kernel_time.py --dims 96,192 --seqlens 1024,4096,8192 --fwd-only \
        --out "$OUT/hdim-time-run$run.json"
      [ -f tools/bench/varlen_bwd_time.py ] && step varlen_bwd_time_run$run 150 python3 tools/bench/varlen_bwd_time.py \
        --out "$OUT/varlen-bwd-time-run$run.json"
    done ;;
  host)
    step python_gpu 200 python3 tools/python/tests/test_gpu.py --json "$OUT/python_gpu.json"
    step suite_plan_release_kv 200 "$BIN/run_tests" -ts="gpu_sm90 launch plan,gpu_sm90 release flavour,gpu_sm90 fa3 kvcache"
    for run in 1 2; do
      step profile_calls_run$run 150 python3 tools/python/profile_calls.py --cprofile 300 --json "$OUT/profile-calls-run$run.json"
      step package_bench_run$run 120 python3 -m flashptx.bench --hdims 64,128 --seqlens 1024,4096 \
        --json "$OUT/package-bench-run$run.json"
    done ;;
  merged)
    # What the variants and KV-cache issues added since the last check: the KV cache at d64/d256,
    # the modifiers at head dims 96/192, seqused in both varlen directions, the FP8 suite; the Python
    # GPU tests (attention_varlen, the KV cache's head dims, the modifiers at d96/d192); memcheck
    # on the new kernels' cases; the KV cache's bench at every head dim.
    step suite_kvcache 150 "$BIN/run_tests" -ts="gpu_sm90 fa3 kvcache"
    step suite_hdim_local 120 "$BIN/run_tests" -ts="gpu_sm90 fa3 forward" -tc="head dims 96 and 192*"
    step suite_seqused 120 "$BIN/run_tests" -ts="gpu_sm90 fa3 varlen" -tc="seqused:*"
    step python_gpu 200 python3 tools/python/tests/test_gpu.py --json "$OUT/python_gpu.json"
    step memcheck_kv_dims 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/run_tests" \
      -ts="gpu_sm90 fa3 kvcache" -tc="d64 and d256: decode*"
    step memcheck_hdim_local 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/run_tests" \
      -ts="gpu_sm90 fa3 forward" -tc="head dims 96 and 192: window*"
    step memcheck_seqused 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/run_tests" \
      -ts="gpu_sm90 fa3 varlen" -tc="seqused: backward*"
    step kvcache_dims_time 120 python3 tools/bench/kvcache_time.py --dims 64,128,256 --out "$OUT/kvcache-dims-time.json" ;;
  merged2)
    # After merged: the KV cache's suite and the package's GPU tests again, the FP8 suite with the
    # paired walk on every causal call, that walk's long causal points against $LIB_B (two runs), the
    # KV cache's bench (run 2).
    step suite_kvcache 150 "$BIN/run_tests" -ts="gpu_sm90 fa3 kvcache"
    step python_gpu 200 python3 tools/python/tests/test_gpu.py --json "$OUT/python_gpu.json"
    step suite_fp8 300 "$BIN/run_tests" -ts="gpu_sm90 fa3 fp8 forward"
    long_head="8,2048,32,64,1;4,4096,32,64,1;2,8192,32,64,1;1,16384,32,64,1;8,2048,16,128,1;4,4096,16,128,1"
    long_head="$long_head;2,8192,16,128,1;1,16384,16,128,1;2,8192,8,256,1;1,16384,8,256,1"
    long_block="2,8192,32,64,1;1,16384,32,64,1;2,8192,16,128,1;1,16384,16,128,1"
    for run in 1 2; do
      step fp8_long_per_head_run$run 120 python3 tools/bench/fp8_time.py --lib-b "${LIB_B:?LIB_B}" --gran 1 \
        --shapes "$long_head" --out "$OUT/fp8-long-per-head-run$run.json"
      step fp8_long_per_block_run$run 90 python3 tools/bench/fp8_time.py --lib-b "$LIB_B" --gran 2 \
        --shapes "$long_block" --out "$OUT/fp8-long-per-block-run$run.json"
    done
    step kvcache_dims_time_run2 150 python3 tools/bench/kvcache_time.py --dims 64,128,256 --out "$OUT/kvcache-dims-time-run2.json" ;;
  fp8_walk)
    # The FP8 forward's causal walk: its GPU suite, memcheck and synccheck on the paired case, then the
    # causal grid points against $LIB_B (a build whose causal FP8 calls ran one CTA per tile) in the
    # same process, per head and per block descales, two runs.
    step suite_fp8 200 "$BIN/run_tests" -ts="gpu_sm90 fa3 fp8 forward"
    for tool in memcheck synccheck; do
      step "${tool}_fp8_paired" 120 compute-sanitizer --tool "$tool" --error-exitcode 9 "$BIN/run_tests" \
        -ts="gpu_sm90 fa3 fp8 forward" -tc="the paired causal walk*"
    done
    sh_short="32,512,32,64,1;16,1024,32,64,1;32,512,16,128,1;16,1024,16,128,1;32,512,8,256,1;16,1024,8,256,1"
    sh_long="8,2048,32,64,1;4,4096,32,64,1;8,2048,16,128,1;4,4096,16,128,1;8,2048,8,256,1;4,4096,8,256,1"
    for run in 1 2; do
      step fp8_walk_per_head_run$run 150 python3 tools/bench/fp8_time.py --lib-b "${LIB_B:?LIB_B}" --gran 1 \
        --shapes "$sh_short" --out "$OUT/fp8-walk-per-head-run$run.json"
      step fp8_walk_per_block_run$run 200 python3 tools/bench/fp8_time.py --lib-b "$LIB_B" --gran 2 \
        --shapes "$sh_short;$sh_long" --out "$OUT/fp8-walk-per-block-run$run.json"
    done ;;
  timeline)
    for run in 1 2; do
      step timeline_run$run 200 python3 tools/python/timeline_calls.py --json "$OUT/timeline-run$run.json" \
        $([ $run = 1 ] && echo --trace-dir "$OUT")
    done ;;
  all)
    # Longest first. Each step its own process (a trapped kernel poisons its own context only).
    R="$BIN/run_tests"; F="gpu_sm90 fa3 forward"; B="gpu_sm90 fa3 backward"; E="gpu_sm90 fa3 fp8 forward"; V="gpu_sm90 fa3 varlen"
    pstep bwd_large 420 "$R" -ts="$B" -tc="large shapes*,the release library*"
    pstep bwd_d256_large 420 "$R" -ts="$B" -tc="d256: large*"
    pstep fwd_large 300 "$R" -ts="$F" -tc="large shapes*"
    pstep fwd_paired 300 "$R" -ts="$F" -tc="the paired*"
    pstep fwd_determinism 300 "$R" -ts="$F" -tc="determinism*"
    pstep fp8_walk_det 300 "$R" -ts="$E" -tc="the paired causal walk*,determinism*,bad input*"
    pstep sinks 300 "$R" -ts="gpu_sm90 fa3 sinks"
    pstep bwd_det 300 "$R" -ts="$B" -tc="deterministic mode*"
    pstep bwd_d256_det 300 "$R" -ts="$B" -tc="d256: deterministic*"
    pstep bwd_core 300 "$R" -ts="$B" -tc="small shapes*,medium shapes*,strided*,a custom*,edge sizes*,a call from*"
    pstep bwd_d256_core 300 "$R" -ts="$B" -tc="d256: small*,d256: medium*,d256: strided*,d256: a custom*,d256: edge*"
    pstep fwd_persistent_dynamic 300 "$R" -ts="$F" -tc="the persistent d256*,the dynamic schedule*"
    pstep fwd_hdim 300 "$R" -ts="$F" -tc="head dims 96*"
    pstep fp8_shapes 300 "$R" -ts="$E" -tc="smoke*,d64:*,d128:*,d256:*,mixed*,shapes:*"
    pstep fwd_core 300 "$R" -ts="$F" -tc="small shapes*,medium and long*,unequal lengths*,strided layouts*,large-magnitude*,scores that grow*,seqlen_k = 0*"
    pstep fwd_local 300 "$R" -ts="$F" -tc="sliding window*,softcap*,bad window*,bad input*"
    pstep varlen_fwd 300 "$R" -ts="$V" -tc="every head dim*,batches*,padded*,repeated*,sliding*,bad cu*"
    pstep varlen_bwd_seqused 300 "$R" -ts="$V" -tc="backward:*,seqused:*"
    pstep kvcache 300 "$R" -ts="gpu_sm90 fa3 kvcache"
    pstep fp8_rmse_quant 200 "$R" -ts="gpu_sm90 fa3 fp8 rmse,gpu_sm90 fp8 quantize"
    pstep ladder 200 "$R" -ts="gpu_sm90 ladder"
    pstep primitives 200 "$R" -ts="gpu_sm90 primitives*"
    pstep misc 200 "$R" -ts="gpu_sm90 release flavour,gpu_sm90 launch plan,gpu_sm90 fa3 trace,gpu_sm90 fa3 dynamic schedule,gpu_sm90 numerics,gpu_sm90 race repro,gpu_sm90 isa readings"
    pstep python_gpu 300 python3 tools/python/tests/test_gpu.py --json "$OUT/python_gpu.json"
    # One small case per kernel family under each tool.
    for tool in memcheck synccheck racecheck; do
      for fam in "fwd|$F|unequal lengths*" "local|$F|softcap*" "hdim|$F|head dims 96 and 192: window*" \
                 "dynamic|gpu_sm90 fa3 dynamic schedule|*" "bwd|$B|small shapes*" "fp8|$E|d128:*" \
                 "fp8_paired|$E|the paired causal walk*" "quant|gpu_sm90 fp8 quantize|shapes:*" \
                 "varlen|$V|every head dim*" "varlen_bwd|$V|backward: every head dim*" "seqused|$V|seqused: backward*" \
                 "kvcache|gpu_sm90 fa3 kvcache|d64 and d256: decode*" "sinks|gpu_sm90 fa3 sinks|backward with sinks*"; do
        IFS='|' read -r n suite cases <<< "$fam"
        pstep "${tool}_$n" 300 compute-sanitizer --tool "$tool" --error-exitcode 9 "$R" -ts="$suite" -tc="$cases"
      done
    done
    pwait ;;
  capture_new)
    # The suites and cases captured nowhere in tools/sim/chip/h200-copies.tsv yet.
    groups=("new_fwd|gpu_sm90 fa3 forward|head dims 96*" "new_varlen|gpu_sm90 fa3 varlen|seqused:*,backward:*"
            "new_fp8|gpu_sm90 fa3 fp8 forward|the paired causal walk*" "new_kv_sinks|gpu_sm90 fa3 kvcache,gpu_sm90 fa3 sinks|*")
    for g in "${groups[@]}"; do
      IFS='|' read -r n suites cases <<< "$g"
      rm -f "$OUT/chip-$n.cap"
      pstep "capture_$n" 200 env FLASHPTX_TEST_SIM_SHAPES=1 FLASHPTX_CAPTURE="$OUT/chip-$n.cap" "$BIN/run_tests" -ts="$suites" -tc="$cases"
    done
    pwait
    for g in "${groups[@]}"; do n=${g%%|*}; [ -f "$OUT/chip-$n.cap" ] && gzip -f "$OUT/chip-$n.cap"; done ;;
  newkernels)
    R="$BIN/run_tests"; B="gpu_sm90 fa3 backward"; V="gpu_sm90 fa3 varlen"
    HB=${HDIM_BWD_CASES:-head dims 96*}; HV=${HDIM_VARLEN_BWD_CASES:-backward: head dims 96*}
    pstep bwd_local 300 "$R" -ts="$B" -tc="window and softcap:*"
    pstep varlen_new 300 "$R" -ts="$V" -tc="backward: window and softcap*,head dims 96 and 192 over packed*,$HV"
    pstep bwd_hdim 300 "$R" -ts="$B" -tc="$HB"
    pstep sinks 300 "$R" -ts="gpu_sm90 fa3 sinks"
    pstep bwd_regress 300 "$R" -ts="$B" -tc="small shapes*,edge sizes*,d256: small*"
    pstep varlen_regress 300 "$R" -ts="$V" -tc="every head dim*,backward: every head dim*,seqused: backward*"
    pstep plan_release 200 "$R" -ts="gpu_sm90 launch plan,gpu_sm90 release flavour"
    pstep python_gpu 300 python3 tools/python/tests/test_gpu.py --json "$OUT/python_gpu.json"
    for tool in memcheck synccheck racecheck; do
      for fam in "bwd_local|$B|window and softcap: every*" "varlen_bwd_local|$V|backward: window and softcap*" \
                 "varlen_hdim|$V|head dims 96 and 192 over packed sequences: window*" "bwd_hdim|$B|$HB"; do
        IFS='|' read -r n suite cases <<< "$fam"
        pstep "${tool}_$n" 300 compute-sanitizer --tool "$tool" --error-exitcode 9 "$R" -ts="$suite" -tc="$cases"
      done
    done
    pwait
    for run in 1 2; do
      step variants_time_bwd_run$run 150 python3 tools/bench/variants_time.py --bwd --out "$OUT/variants-time-bwd-run$run.json"
      step hdim_time_run$run 100 python3 tools/bench/kernel_time.py --dims 96,192 --seqlens 1024,4096,8192 \
        --out "$OUT/hdim-time-run$run.json"
    done ;;
  bwdall)
    # The backward's suites of mode all (the pre/postprocess kernels changed for (192, 128):
    # BwdAuxParams::head_dim_v), the varlen backward and seqused, the release flavour, memcheck on
    # the backward's small shapes.
    R="$BIN/run_tests"; B="gpu_sm90 fa3 backward"; V="gpu_sm90 fa3 varlen"
    pstep bwd_large 330 "$R" -ts="$B" -tc="large shapes*,the release library*"
    pstep bwd_d256_large 330 "$R" -ts="$B" -tc="d256: large*"
    pstep bwd_det 300 "$R" -ts="$B" -tc="deterministic mode*"
    pstep bwd_d256_det 300 "$R" -ts="$B" -tc="d256: deterministic*"
    pstep bwd_core 300 "$R" -ts="$B" -tc="small shapes*,medium shapes*,strided*,a custom*,edge sizes*,a call from*"
    pstep bwd_d256_core 300 "$R" -ts="$B" -tc="d256: small*,d256: medium*,d256: strided*,d256: a custom*,d256: edge*"
    pstep varlen_bwd_seqused 300 "$R" -ts="$V" -tc="backward: every*,backward: deterministic*,backward: bad*,seqused:*"
    pstep release_plan 200 "$R" -ts="gpu_sm90 release flavour,gpu_sm90 launch plan"
    pstep memcheck_bwd 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$R" -ts="$B" -tc="small shapes*"
    pwait ;;
  split2)
    # The second call for the (192, 128) work: the varlen (192, 128) backward's cases alone (the fp64
    # reference of the GPU shapes is CPU-bound: with ten jobs beside it they ran past 300 s), memcheck
    # on them, the varlen d96/d192 case the first call did not reach, the Python GPU tests (the
    # (192, 128) fixes of the backward ops); then, alone on the GPU, the head dims 96, 192 and
    # (192, 128) beside cuDNN and FA2 (SDPA's flash backend), two runs, and the varlen backward
    # against the padded one.
    R="$BIN/run_tests"; V="gpu_sm90 fa3 varlen"
    pstep varlen_bwd_split 360 "$R" -ts="$V" -tc="backward: (192*"
    pstep varlen_bwd_hdim_rest 300 "$R" -ts="$V" -tc="backward: head dims 96 and 192 run*"
    pstep python_gpu 300 python3 tools/python/tests/test_gpu.py --json "$OUT/python_gpu.json"
    pstep memcheck_varlen_bwd_split 360 compute-sanitizer --tool memcheck --error-exitcode 9 "$R" -ts="$V" \
      -tc="backward: (192*"
    # The (192, 128) cases at the simulator's shapes, every device-to-host copy recorded, for
    # tools/sim/compare_capture.py against the same cases in the simulator here.
    rm -f "$OUT/chip-split-bwd.cap" "$OUT/chip-split-varlen.cap"
    pstep capture_split_bwd 200 env FLASHPTX_TEST_SIM_SHAPES=1 FLASHPTX_CAPTURE="$OUT/chip-split-bwd.cap" "$R" \
      -ts="gpu_sm90 fa3 backward" -tc="head dims (192*,window and softcap: head dims (192*"
    pstep capture_split_varlen 200 env FLASHPTX_TEST_SIM_SHAPES=1 FLASHPTX_CAPTURE="$OUT/chip-split-varlen.cap" "$R" \
      -ts="$V,gpu_sm90 fa3 sinks" -tc="backward: (192*,backward with sinks at head dims (192*"
    pwait
    for f in "$OUT"/chip-split-*.cap; do [ -f "$f" ] && gzip -f "$f"; done
    for run in 1 2; do
      step hdim_fa2_time_run$run 60 python3 tools/bench/kernel_time.py --dims 96,192 --seqlens 1024,4096,8192 --fa2 \
        --out "$OUT/hdim-fa2-time-run$run.json"
      step split_fa2_time_run$run 60 python3 tools/bench/kernel_time.py --dims 192 --dv 128 --seqlens 1024,4096,8192 \
        --fa2 --out "$OUT/split-fa2-time-run$run.json"
    done
    for d in 96 192; do
      step varlen_bwd_time_d${d} 90 python3 tools/bench/varlen_bwd_time.py --dim $d --out "$OUT/varlen-bwd-time-d$d.json"
    done ;;
  split)
    R="$BIN/run_tests"; B="gpu_sm90 fa3 backward"; V="gpu_sm90 fa3 varlen"
    # (doctest splits a filter at commas: the patterns stop before the ", 128)" of the case names)
    HS=${SPLIT_CASES:-head dims (192*,window and softcap: head dims (192*}
    HV=${VARLEN_HDIM_BWD_CASES:-backward: head dims 96*,backward: (192*}
    pstep bwd_split 300 "$R" -ts="$B" -tc="$HS"
    pstep varlen_bwd_hdim 300 "$R" -ts="$V" -tc="$HV"
    pstep bwd_hdim 300 "$R" -ts="$B" -tc="head dims 96 and 192:*,window and softcap: head dims 96*"
    pstep sinks 300 "$R" -ts="gpu_sm90 fa3 sinks"
    pstep racecheck_bwd_split 300 compute-sanitizer --tool racecheck --error-exitcode 9 "$R" -ts="$B" \
      -tc="head dims (192*small shapes*"
    pstep bwd_regress 300 "$R" -ts="$B" -tc="small shapes*,edge sizes*,d256: small*"
    pstep varlen_regress 300 "$R" -ts="$V" -tc="every head dim*,backward: every head dim*,backward: window and softcap*,seqused: backward*"
    pstep plan_release 200 "$R" -ts="gpu_sm90 launch plan,gpu_sm90 release flavour"
    pstep python_gpu 300 python3 tools/python/tests/test_gpu.py --json "$OUT/python_gpu.json"
    for tool in memcheck synccheck; do
      pstep "${tool}_bwd_split" 300 compute-sanitizer --tool "$tool" --error-exitcode 9 "$R" -ts="$B" -tc="$HS"
      pstep "${tool}_varlen_bwd_hdim" 300 compute-sanitizer --tool "$tool" --error-exitcode 9 "$R" -ts="$V" -tc="$HV"
    done
    pwait
    for run in 1 2; do
      for d in 96 192; do
        step varlen_bwd_time_d${d}_run$run 100 python3 tools/bench/varlen_bwd_time.py --dim $d --out "$OUT/varlen-bwd-time-d$d-run$run.json"
      done
      step hdim_time_run$run 100 python3 tools/bench/kernel_time.py --dims 96,192 --seqlens 1024,4096,8192 \
        --out "$OUT/hdim-time-run$run.json"
      step split_time_run$run 100 python3 tools/bench/kernel_time.py --dims 192 --dv 128 --seqlens 1024,4096,8192 \
        --out "$OUT/split-time-run$run.json"
    done ;;
  *) summary+=("unknown mode $what") ;;
esac
done
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
# At most 8 files come back from a call: the logs and result files travel in one archive.
(cd "$OUT" && tar czf logs.tgz $(ls *.log *.json *.json.gz 2>/dev/null) && rm -f *.log *.json *.json.gz)
