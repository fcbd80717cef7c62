// `flashptx ladder`: the attention ladder's table (README "Attention ladder", tests/kernels/ladder.h).
// The table and lessons are pure functions of the committed files, so that the host tests call them
// on the real goldens and on fixtures:
//   - the rungs (kernel, what each adds), fixed here;
//   - SASS facts of each rung, counted at run time in its golden, sass_golden/sm_90a/<kernel>.sass;
//   - measured TFLOP/s, from tools/ladder/h200_tflops.txt (lines "RUNG TFLOPS", RUNG 1..4 or fa3,
//     "#" comments); a rung without a line prints "not measured yet".
#pragma once
#include <string>
#include <vector>

namespace flashptx::cli {

struct LadderRung {
  const char* id;      // "1", "2", "3", "4", "fa3": the results file's key
  const char* kernel;  // the golden's stem (sass_golden/sm_90a/<kernel>.sass)
  const char* source;  // where it is written
  const char* adds;    // what this rung adds to the previous one
};
const std::vector<LadderRung>& ladder_rungs();

// Instruction counts of one normalised listing (header "#" lines skipped, except the resources line
// for REG). An opcode is counted by the prefix of its first token (after a predicate "@P"/"@!P"):
// HGMMA., UTMALDG., SYNCS., BAR., USETMAXREG.
struct SassFacts {
  bool found = false;
  int reg = -1, instructions = 0, hgmma = 0, utmaldg = 0, syncs = 0, bar = 0, setmaxnreg = 0;
};
SassFacts sass_facts(const std::string& golden_text);

// The TFLOP/s recorded for `id` in a results file's text, or "" when none.
std::string ladder_result(const std::string& results_text, const std::string& id);

// The whole table. golden_dir: the folder holding sm_90a/; results_text: the results file's text.
std::string ladder_table(const std::string& golden_dir, const std::string& results_text);

// The lesson of rung n (2..5, 5 being fa3): the normalised SASS diff of rung n-1 -> rung n, golden against golden
// (tools/sass/sass_diff.h), with a one-line count summary first. "" with *err set when a golden is
// missing or n is out of range.
std::string ladder_diff(const std::string& golden_dir, int n, std::string* err);

// `flashptx ladder --bench`: every rung's TFLOP/s on this machine's GPU at the results file's shape
// (kBench*), rungs 1-4 the release flavour of tests/kernels/ladder_*.cu (the instruction stream
// the goldens record), fa3 the library's flashptx_fwd. Without a Hopper GPU: one line on stderr
// saying why, nothing timed, exit 1; a CUDA error: one line naming it, exit 1. A benchmark, not a
// test: nothing is asserted about the numbers (the GPU suite "gpu_sm90 ladder" checks the rungs'
// outputs against the fp64 reference).
constexpr int kBenchBatch = 4, kBenchSeqlen = 4096, kBenchHeads = 16;
int ladder_bench(int64_t iters);
// One result line of the bench: "ladder-tflops: ID TFLOPS   (MS ms)"; with the prefix removed, the
// line is one of the results file's ("ID TFLOPS", ladder_result reads it). flops / ms: TFLOP/s.
std::string ladder_bench_line(const std::string& id, double flops, double ms);

}  // namespace flashptx::cli
