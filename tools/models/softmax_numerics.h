// FA4 softmax numerics oracle (docs/PROTOCOLS.md, "The FA4 roles"): the degree-3 exp2 grid,
// the fragment-dispatch table, the retained-reference recurrence fixture and its failure lab, the
// dtype envelopes. The arithmetic itself lives in src/protocol/exp2_emulation.h and
// src/protocol/online_softmax.h, the same code the device runs.
#pragma once
#include <string>
#include <vector>

#include "src/protocol/online_softmax.h"

namespace flashptx::models::softmax_numerics {

// ---- the 65,536-point grid: x_i = i / 65536, i = 0 .. 65535, in [0, 1) -------------------------
// Errors are relative to the FP64 exp2 of the (exact) FP32 grid point:
//   raw:       |y - ref| / ref, y the degree-3 FP32 result
//   post-BF16: |bf16(y) - ref| / ref, bf16 = round to nearest even
//   exact:     bf16(y) == bf16(float(ref))   (the same code as the reference rounded through FP32)
//   one step:  |bf16 code(y) - bf16 code(float(ref))| <= 1
constexpr int kGridPoints = 65536;
struct GridStats {
  double raw_max = 0, raw_mean = 0, bf16_max = 0, bf16_mean = 0;
  int exact_codes = 0, within_one = 0, points = 0;
  double exact_pct() const { return 100.0 * exact_codes / points; }
  double within_one_pct() const { return 100.0 * within_one / points; }
};
float grid_point(int i);
GridStats grid_stats();

// ---- fragment dispatch ------------------------------------------------------------------------
struct DispatchRow {
  const char* coordinate;
  int freq, res, start;
  int emulated;   // of kRowLen entries
  double pct;
};
constexpr int kRowLen = 128, kFragLen = 32;
int emulated_entries(int freq, int res, int start, int row_len = kRowLen);
std::vector<DispatchRow> dispatch_table();

// ---- retained-reference recurrence ------------------------------------------------------------
constexpr int kDV = 4;
using Row = flashptx::softmax::RowState<kDV>;
using flashptx::softmax::Mutation;

// One row of scores and values in blocks; lambda, tau, omega are the frame coordinates.
struct RowFixture {
  std::vector<std::vector<float>> s;  // blocks of raw scores
  std::vector<std::vector<float>> v;  // per block: B * kDV values
  float lambda = 1.0f, tau = 8.0f, omega = 0.0f;
};
RowFixture deterministic_fixture(float omega = 0.0f);     // the retained-reference worked example
RowFixture random_fixture(unsigned seed, int blocks, int block_len, float omega);

struct RecurrenceRun {
  Row state;
  std::vector<float> a_after;       // retained reference after each block
  std::vector<float> gamma;         // old-state scale of each block
  std::vector<double> true_max_b;   // true base-2 running maximum after each block
  float out[kDV];
  float lse;
  double ref_out[kDV];              // direct FP64 softmax
  double ref_lse;
  double ref_D, ref_N[kDV];         // direct FP64 D and N in the final retained frame
  float max_p;                      // largest unnormalised probability fed to PV
};
RecurrenceRun run_recurrence(const RowFixture& fx, Mutation mut = Mutation::none);

// "ok" or the named reason the run violates the recurrence contract:
//   "D not in retained frame", "N not in retained frame", "block and state in different frames",
//   "output differs from direct softmax", "LSE biased by a constant".
std::string check_recurrence(const RecurrenceRun& run);

// Dtype envelope: "ok" or "P_max exceeds format max" when 2^(tau+omega) > format max.
std::string check_envelope(float tau, float omega, float format_max);

// ---- the correction warp: one warp-level decision (failure lab) ----------------------------------
// One correction warp owns 32 rows of O, one row per lane, each with the old-state scale its softmax
// row published (1 = the reference did not move). Rescaling O goes through a warp-collective TMEM
// load, a multiply, a warp-collective TMEM store, and one arrive on the "O rescaled" barrier: the
// collectives need all 32 lanes. The protocol decides with a warp vote (ballot of scale < 1): if any
// lane needs it, every lane takes the path and the scale-one rows multiply by 1. The mutation
// branches per lane, so only the lanes whose scale is below one reach the collectives.
struct CorrectionRun {
  std::string verdict;          // "ok" or "partial_warp_collective (lanes L of 32 reached tcgen05.ld)"
  int lanes_on_path = 0;        // lanes that executed the rescale path
  double max_row_err = 0;       // max |O_row - scale * O_row_before| over the lanes (0 when correct)
};
CorrectionRun correction_warp(const std::vector<float>& scales, bool per_lane_branch);

}  // namespace flashptx::models::softmax_numerics
