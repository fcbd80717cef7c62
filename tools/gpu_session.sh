#!/usr/bin/env bash
# One device session on the H200: everything that needs the GPU, in one call, logs under $OUT.
#
#   tools/gpu_session.sh BIN OUT [steps...]
# BIN holds run_tests, flashptx and libflashptx.so built here (CUDA runtime linked statically) and
# COMMIT (`git rev-parse HEAD` of the build);
# steps (default: info tests bench): info tests gputests sanitize bench bwdbench ab variants grid side quick
#   trace ncu racematrix
# (the measurement method: docs/PERFORMANCE.md, "Method")
# Variants are chosen with flashptx's own options (bench --kernel NAME --schedule S), never with
# environment variables: the library reads none.
# Every step writes its own log; the last lines printed are a short summary.
set -u
BIN=${1:?BIN}; OUT=${2:?OUT}; shift 2
steps=${*:-"info tests bench"}
mkdir -p "$OUT"
# The commit the binaries in BIN were built from (written there by the caller; the GPU machine's copy
# of the tree has no .git), recorded in every manifest.
[ -f "$BIN/COMMIT" ] && export FLASHPTX_GIT_COMMIT=$(cat "$BIN/COMMIT")
summary=()
run() {  # run NAME TIMEOUT CMD...: logs to $OUT/NAME.log, records the exit code
  local name=$1 t=$2; shift 2
  local t0=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  summary+=("$name rc=$rc $(( $(date +%s) - t0 ))s: $(tail -n 1 "$OUT/$name.log" | cut -c1-150)")
  return $rc
}
for s in $steps; do
  case $s in
    info)
      run info 30 bash -c 'nvidia-smi; nvidia-smi -q -d CLOCK | head -40; python3 -c "import torch; print(torch.__version__, torch.backends.cudnn.version())"' ;;
    tests)
      run tests 420 "$BIN/run_tests" ;;
    gputests)  # one process per suite: a trapped kernel poisons its CUDA context, not the others'
      for suite in "gpu_sm90 fa3 forward" "gpu_sm90 fa3 backward" "gpu_sm90 release flavour" "gpu_sm90 launch plan" \
                   "gpu_sm90 fa3 trace" "gpu_sm90 numerics" "gpu_sm90 race repro" "gpu_sm90 primitives mbarrier" \
                   "gpu_sm90 primitives named barriers" "gpu_sm90 primitives setmaxnreg" "gpu_sm90 primitives tma" \
                   "gpu_sm90 primitives wgmma" "gpu_sm90 primitives ldst" "gpu_sm90 primitives cluster"; do
        run "gpu_${suite// /_}" 300 "$BIN/run_tests" -ts="$suite"
      done ;;
    sanitize)
      run memcheck 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/run_tests" -ts='gpu_sm90 fa3 forward' \
        -tc='strided*,seqlen_k*,bad input*'
      run racecheck 100 compute-sanitizer --tool racecheck --error-exitcode 9 "$BIN/run_tests" -ts='gpu_sm90 fa3 forward' \
        -tc='seqlen_k*'
      run memcheck_bwd 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/run_tests" -ts='gpu_sm90 fa3 backward' \
        -tc='medium*,strided*,edge*,bad*'
      run synccheck_bwd 90 compute-sanitizer --tool synccheck --error-exitcode 9 "$BIN/run_tests" -ts='gpu_sm90 fa3 backward' \
        -tc='medium*'
      run racecheck_release 90 compute-sanitizer --tool racecheck --error-exitcode 9 "$BIN/run_tests" \
        -ts='gpu_sm90 release flavour' -tc='release library: ring*' ;;
    bwdbench)  # the backward, default and deterministic modes
      for d in 64 128; do for c in "" "--causal"; do for sl in 1024 8192; do for m in "" "--deterministic"; do
        run "bwd_d${d}_s${sl}${c:+_causal}${m:+_det}" 60 "$BIN/flashptx" bench --direction bwd --batch $((16384 / sl)) \
          --seqlen $sl --heads $((2048 / d)) --hdim $d $c $m --reps 20 --no-gpu-ref \
          --out "$OUT/bwd_d${d}_s${sl}${c:+_causal}${m:+_det}.json"
      done; done; done; done ;;
    racematrix)
      run racematrix 120 tools/race/racecheck_matrix.sh "$BIN" "$OUT/race" ;;
    bench)
      for d in 64 128 256; do for c in "" "--causal"; do
        run "bench_d${d}${c:+_causal}" 60 "$BIN/flashptx" bench --batch 2 --seqlen 8192 --heads $((2048 / d)) --hdim $d $c \
          --out "$OUT/bench_d${d}${c:+_causal}.json"
      done; done ;;
    ab)  # the same kernels under both schedules: one CTA per tile, and persistent CTAs looping over tiles
      for d in 64 128; do for c in "" "--causal"; do for sl in 1024 8192; do
        for sch in one-per-tile persistent; do
          run "ab_${sch}_d${d}_s${sl}${c:+_causal}" 60 "$BIN/flashptx" bench --batch $((16384 / sl)) --seqlen $sl \
            --heads $((2048 / d)) --hdim $d $c --schedule $sch --check-rows 0 --no-gpu-ref \
            --out "$OUT/ab_${sch}_d${d}_s${sl}${c:+_causal}.json"
        done
      done; done; done ;;
    variants)  # every forward kernel of d64/d128 (--kernel), and for causal masks the persistent schedule too
      for k in bf16_d64_m128 bf16_d64_m192 bf16_d128_n128; do
        d=${k#bf16_d}; d=${d%_*}
        for c in "" "--causal"; do for sl in 1024 8192; do
          run "k_${k}_s${sl}${c:+_causal}" 60 "$BIN/flashptx" bench --kernel fa3_fwd_sm90_$k --batch $((16384 / sl)) \
            --seqlen $sl --heads $((2048 / d)) $c --check-rows 8 --out "$OUT/k_${k}_s${sl}${c:+_causal}.json"
          [ -n "$c" ] && run "kp_${k}_s${sl}_causal" 60 "$BIN/flashptx" bench --kernel fa3_fwd_sm90_$k --schedule persistent \
            --batch $((16384 / sl)) --seqlen $sl --heads $((2048 / d)) $c --check-rows 8 --out "$OUT/kp_${k}_s${sl}_causal.json"
        done; done
      done ;;
    grid)
      run grid 300 "$BIN/flashptx" bench --grid fa3-grid --check-rows 4 --out "$OUT/grid.json" ;;
    side)
      PYTHONUNBUFFERED=1 run side 500 python3 tools/bench/side_by_side.py --lib "$BIN/libflashptx.so" --direction both \
        --reps 20 --out "$OUT/h200-latest.json" --plot "$OUT/h200-latest" --table ;;
    quick)
      PYTHONUNBUFFERED=1 run quick 200 python3 tools/bench/side_by_side.py --quick --lib "$BIN/libflashptx.so" \
        --out "$OUT/quick.json" --table ;;
    trace)
      run trace 120 "$BIN/flashptx" trace --hdim 128 --seqlen 8192 --batch 2 --heads 16 --out "$OUT/trace.svg" \
        --json "$OUT/trace.json" ;;
    ncu)
      run ncu 300 ncu --clock-control none --kernel-name regex:fa3_fwd_sm90_bf16_d128 --launch-skip 3 --launch-count 1 \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
        "$BIN/flashptx" bench --batch 2 --seqlen 8192 --heads 16 --hdim 128 --reps 3 --warmup 1 --check-rows 0 --no-gpu-ref ;;
  esac
done
echo "==== summary"
for l in "${summary[@]}"; do echo "$l"; done
# At most 8 files come back: pack the logs into one archive, keep the JSON results beside it.
(cd "$OUT" && tar czf logs.tgz *.log *.json 2>/dev/null && rm -f *.log && mkdir -p json && mv *.json json/ 2>/dev/null; rm -rf json)
