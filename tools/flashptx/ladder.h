// `flashptx ladder`: the attention ladder's table (README "Attention ladder", tests/kernels/ladder.h).
// Pure functions of the committed files, so that the host tests call them on the real goldens and on
// fixtures:
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

}  // namespace flashptx::cli
