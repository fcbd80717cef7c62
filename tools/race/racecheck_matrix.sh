#!/usr/bin/env bash
# The racecheck matrix: each variant of the reproducer (tests/kernels/race_repro.cu) in its own
# compute-sanitizer process, plus a plain run, one memcheck run and the FA3 release kernel itself as
# the positive control. One line per run, to stdout and to $OUT/racecheck_matrix.txt; the full logs
# go to $OUT/race_logs.tgz. Reading the table: tools/race/README.md.
#
#   tools/race/racecheck_matrix.sh BIN OUT
#
# BIN holds run_tests and flashptx (built on any machine; the CUDA runtime is linked statically).
# Needs compute-sanitizer (COMPUTE_SANITIZER, else PATH, else /usr/local/cuda*/bin) and an sm_90 GPU.
# Budget: the whole script stops starting runs after RACE_BUDGET_S seconds (default 85); each run is
# killed after RACE_RUN_TIMEOUT_S (default 15; never past the budget). Runs that the budget leaves out
# are listed as "skipped". The order is the priority order: the five FA3-shaped variants, the two FA3
# controls, memcheck and (where the sanitizer has --check-warpgroup-mma) the release shapes with that
# check off run first, one process at a time; the remaining variants then run RACE_JOBS
# (default 4) processes at a time (their rows say "xN"; RACE_JOBS=1 keeps every run alone on the GPU);
# synccheck of the whole suite last, if time is left.
# RACE_ONLY="name name ..." runs only those variants (the control rows still run).
set -u
BIN=${1:?usage: racecheck_matrix.sh BIN OUT}
OUT=${2:?usage: racecheck_matrix.sh BIN OUT}
BUDGET=${RACE_BUDGET_S:-85}
RUN_TIMEOUT=${RACE_RUN_TIMEOUT_S:-15}
JOBS=${RACE_JOBS:-4}
SUITE='gpu_sm90 race repro'
T0=$(date +%s)
LOGS="$OUT/race_logs"
TABLE="$OUT/racecheck_matrix.txt"
mkdir -p "$LOGS"
: > "$TABLE"

say() { echo "$*" | tee -a "$TABLE"; }
elapsed() { echo $(( $(date +%s) - T0 )); }

CS=${COMPUTE_SANITIZER:-}
if [ -z "$CS" ]; then
  CS=$(command -v compute-sanitizer 2>/dev/null || true)
  [ -z "$CS" ] && for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer; do
    [ -x "$c" ] && CS=$c && break
  done
fi
if [ -z "$CS" ] || [ ! -x "$CS" ]; then
  say "racecheck matrix: compute-sanitizer not found (set COMPUTE_SANITIZER)"; exit 2
fi
if [ ! -x "$BIN/run_tests" ]; then say "racecheck matrix: no $BIN/run_tests"; exit 2; fi

# The variants, in priority order (the names of tests/kernels/race_repro.cu's table and of the cases
# of tests/gpu/test_race_repro.cpp). Cases the binary has but this list lacks are appended.
VARIANTS="fa3kv_regs_wrap_spin fa3kv_regs_wrap_bounded fa3kv_regs_wrap_boundednp fa3kv_regs_wrap_spin_serial
fa3kv_regs_nowrap_spin wgmma_regs_wrap_spin wgmma_regs_nowrap_spin lds_wrap_spin fa3kv_wrap_spin
fa3kv_regs_wrap_pspin_cboundednp fa3kv_regs_wrap_pboundednp_cspin
fa3kv_regs_wrap_testwait fa3kv_regs_wrap_hint fa3kv_regs_wrap_backoff
wgmma_regs_wrap_bounded lds_regs_wrap_spin lds_wrap_boundednp lds_nowrap_spin fa3kv_regs_single_spin
bulk_lds_wrap_boundednp"
listed=$(timeout 20 "$BIN/run_tests" -ts="$SUITE" -ltc 2>/dev/null | grep -E '^[a-z0-9_]+$' || true)
for c in $listed; do
  case " $(echo $VARIANTS) " in *" $c "*) ;; *) VARIANTS="$VARIANTS $c" ;; esac
done
[ -n "${RACE_ONLY:-}" ] && VARIANTS=$RACE_ONLY
FIRST=$(echo $VARIANTS | cut -d' ' -f1-5)
REST=$(echo $VARIANTS | cut -d' ' -f6-)

say "# racecheck matrix  $(date -u +%FT%TZ)  $("$CS" --version 2>/dev/null | grep -i version | head -1)"
say "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)  BIN=$BIN  budget ${BUDGET}s, ${RUN_TIMEOUT}s per run"
[ -n "$listed" ] || say "# note: run_tests -ltc listed no case of '$SUITE' (no GPU seen?)"
# The sanitizer's own options touching racecheck, wgmma or async copies (for the write-up).
timeout 10 "$CS" --help < /dev/null > "$LOGS/compute-sanitizer-help.txt" 2>&1 || true
say "# sanitizer options: $(grep -Eo -- '--(racecheck[a-z-]*|check-warpgroup[a-z-]*|[a-z-]*async[a-z-]*)' "$LOGS/compute-sanitizer-help.txt" | sort -u | tr '\n' ' ')"
say "$(printf '%-34s %-11s %-4s %-16s %s' variant tool rc verdict 'details (sanitizer summary; doctest counts; seconds)')"

# classify LOG RC TOOL -> "verdict|details"
classify() {
  local log=$1 rc=$2 tool=$3 verdict details sum tests ie
  sum=$(grep -Eo '(RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ errors?, [0-9]+ warnings?\))|(ERROR SUMMARY: [0-9]+ errors?)' "$log" | tail -1)
  tests=$(grep -Eo '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -1)
  ie=$(grep -m1 -o 'Internal Sanitizer Error.*' "$log" | cut -c1-90)
  details="${sum:-no summary}; ${tests:-no doctest counts}"
  grep -q 'cudaErrorIllegalAddress\|illegal memory access' "$log" && details="$details; illegal address"
  grep -q 'mbarrier wait timed out' "$log" && details="$details; bounded wait timed out"
  grep -q 'its kernel hangs' "$log" && details="$details; host watchdog: kernel hangs"
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then verdict=TIMEOUT
  elif [ -n "$ie" ]; then verdict=INTERNAL-ERROR; details="$ie; $details"
  elif echo "$sum" | grep -Eq 'SUMMARY: [1-9][0-9]* hazard'; then verdict=HAZARDS
  elif echo "$sum" | grep -Eq 'ERROR SUMMARY: [1-9]'; then verdict=ERRORS
  elif [ -z "$tests" ] && [ "$tool" != fa3-bench ]; then verdict=NO-RESULT
  elif echo "$tests" | grep -q '^0 passed, 0 failed'; then verdict=NO-CASE
  elif echo "$tests" | grep -Eq ', [1-9][0-9]* failed'; then verdict=TEST-FAIL
  elif [ "$rc" != 0 ]; then verdict=FAIL
  else verdict=ok
  fi
  echo "$verdict|$details"
}

# run_row NAME TOOL LOGNAME TIMEOUT NOTE CMD...: runs CMD (killed after TIMEOUT s), prints its row.
run_row() {
  local name=$1 tool=$2 logname=$3 t=$4 note=$5; shift 5
  local log="$LOGS/$logname.log" s0=$(date +%s) rc r
  echo "\$ $*" > "$log"
  timeout -k 3 "$t" "$@" < /dev/null >> "$log" 2>&1
  rc=$?
  r=$(classify "$log" "$rc" "$tool")
  printf '%-34s %-11s %-4s %-16s %s; %ss%s\n' "$name" "$tool" "$rc" "${r%%|*}" "${r#*|}" $(( $(date +%s) - s0 )) "$note"
}
# slot SECONDS: the timeout a run may have now (0: the budget is spent).
slot() {
  local left=$(( BUDGET - $(elapsed) )) t=$1
  [ "$left" -lt 3 ] && { echo 0; return; }
  [ "$t" -gt "$left" ] && t=$left
  echo "$t"
}
skipped() { say "$(printf '%-34s %-11s %-4s %-16s %s' "$1" "$2" - skipped "time budget spent")"; }
# row NAME TOOL LOGNAME TIMEOUT CMD...: one run alone.
row() {
  local name=$1 tool=$2 logname=$3 t; t=$(slot "$4"); shift 4
  if [ "$t" = 0 ]; then skipped "$name" "$tool"; return; fi
  say "$(run_row "$name" "$tool" "$logname" "$t" "" "$@")"
}

RC_ARGS=(--tool racecheck --error-exitcode 9)

# 1. Plain run of every case: the numbers are right without any tool (and the kernels do not hang).
row "(all variants, no tool)" none plain 25 "$BIN/run_tests" -ts="$SUITE"
# 2. The FA3-shaped variants: release shape, test shape, the two ingredients that differ between
#    them, and the same release shape without a wrap.
for v in $FIRST; do
  row "$v" racecheck "racecheck-$v" "$RUN_TIMEOUT" "$CS" "${RC_ARGS[@]}" --kernel-name kns=race_ring_kernel \
    "$BIN/run_tests" -ts="$SUITE" -tc="$v"
done
# 3. Positive controls: the release FA3 forward itself (flashptx links the release library). First the
#    shape of the finding: seqlen_q 1, seqlen_k 4096, d64 (32 K/V blocks through a 3-stage ring); then
#    seqlen_k 256: 2 blocks, the ring never wraps, but the steady loop runs (wgmma in flight across
#    the V waits). The finding's passing release shapes all had a single K/V block.
fa3() {  # fa3 NAME SEQLEN_K
  if [ ! -x "$BIN/flashptx" ]; then
    say "$(printf '%-34s %-11s %-4s %-16s %s' "$1" fa3-bench - skipped "no $BIN/flashptx")"; return
  fi
  row "$1" fa3-bench "$1" 20 "$CS" "${RC_ARGS[@]}" --kernel-name kns=fa3_fwd \
    "$BIN/flashptx" bench --batch 1 --seqlen-q 1 --seqlen-k "$2" --heads 1 --hdim 64 --reps 1 --warmup 0 \
    --min-ms 0 --check-rows 0 --no-gpu-ref --quiet --out "$LOGS/$1.json"
}
fa3 FA3-release-1x4096-d64 4096
fa3 FA3-release-1x256-d64-nowrap 256
# 4. memcheck once, every case in one process.
row "(all variants)" memcheck memcheck 25 "$CS" --tool memcheck --error-exitcode 9 "$BIN/run_tests" -ts="$SUITE"
# 5. If this compute-sanitizer has --check-warpgroup-mma (NVIDIA's CCCL CI passes it to racecheck), the
#    release shapes with that checking switched off: a workaround if the fault is in wgmma tracking.
if grep -q -- '--check-warpgroup-mma' "$LOGS/compute-sanitizer-help.txt"; then
  v=$(echo $FIRST | cut -d' ' -f1)
  row "$v" rc-wgmma-no "racecheck-wgmma-no-$v" "$RUN_TIMEOUT" "$CS" "${RC_ARGS[@]}" --check-warpgroup-mma no \
    --kernel-name kns=race_ring_kernel "$BIN/run_tests" -ts="$SUITE" -tc="$v"
  RC_ARGS_SAVE=("${RC_ARGS[@]}"); RC_ARGS+=(--check-warpgroup-mma no)
  fa3 FA3-release-1x4096-wgmma-no 4096
  RC_ARGS=("${RC_ARGS_SAVE[@]}")
fi
# 6. The reduction steps, in priority order, JOBS processes at a time, while the budget lasts.
set -- $REST
while [ $# -gt 0 ]; do
  t=$(slot "$RUN_TIMEOUT")
  if [ "$t" = 0 ]; then for v in "$@"; do skipped "$v" racecheck; done; break; fi
  batch=()
  while [ $# -gt 0 ] && [ ${#batch[@]} -lt "$JOBS" ]; do batch+=("$1"); shift; done
  note=""; [ ${#batch[@]} -gt 1 ] && note=" x${#batch[@]}"
  for v in "${batch[@]}"; do
    run_row "$v" racecheck "racecheck-$v" "$t" "$note" "$CS" "${RC_ARGS[@]}" --kernel-name kns=race_ring_kernel \
      "$BIN/run_tests" -ts="$SUITE" -tc="$v" > "$LOGS/row-$v.txt" &
  done
  wait
  for v in "${batch[@]}"; do say "$(cat "$LOGS/row-$v.txt")"; rm -f "$LOGS/row-$v.txt"; done
done

# 7. synccheck once, every case in one process, if the budget still allows.
row "(all variants)" synccheck synccheck 20 "$CS" --tool synccheck --error-exitcode 9 "$BIN/run_tests" -ts="$SUITE"

say "# done in $(elapsed)s; logs: race_logs.tgz (one log per row)"
(cd "$OUT" && tar czf race_logs.tgz race_logs && rm -rf race_logs)
exit 0
