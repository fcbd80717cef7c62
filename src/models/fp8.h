// FA3 FP8 oracle (tools/guide/PROTOCOLS.md, "FP8 layouts"): the E4M3FN codebook, descale placement
// and its failure lab, the 2^8 probability offset, the Q/K orthogonal (signed Hadamard) identity,
// the paired P/V permutation, and the seeded quantization-error experiment. Codes come from
// include/flashptx/e4m3.h, the encoder the device uses (checked against the hardware conversion by
// tests/gpu).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace flashptx::models::fp8 {

// A small dense row-major matrix in binary64.
struct Mat {
  int rows = 0, cols = 0;
  std::vector<double> a;
  Mat() = default;
  Mat(int r, int c) : rows(r), cols(c), a(static_cast<size_t>(r) * c, 0.0) {}
  double& operator()(int r, int c) { return a[static_cast<size_t>(r) * cols + c]; }
  double operator()(int r, int c) const { return a[static_cast<size_t>(r) * cols + c]; }
};
Mat matmul(const Mat& x, const Mat& y);          // x @ y
Mat matmul_bt(const Mat& x, const Mat& y);       // x @ y^T
double max_abs_diff(const Mat& x, const Mat& y);
double rmse(const Mat& x, const Mat& y);

// ---- codebook -----------------------------------------------------------------------------------
struct CodebookSummary {
  int finite = 0, nan = 0;           // of 256 codes
  float max_finite = 0, min_subnormal = 0, min_normal = 0;
  int roundtrip_failures = 0;        // encode(decode(c)) != c over the finite codes
  int midpoint_failures = 0;         // a midpoint between neighbours must round to the even code
  int saturation_failures = 0;       // > 448 and +-inf must give +-448
};
CodebookSummary codebook_check();

// Quantize a matrix with one descale per `block_rows` rows (block_rows = rows: per tensor):
// codes = E4M3(x / d), d = amax(block) / 448 (1 for an all-zero block). Returns the dequantized
// matrix d * decode(codes), and the codes and descales if asked.
Mat quantize_rows(const Mat& x, int block_rows, Mat* codes = nullptr, std::vector<double>* d = nullptr);

// ---- scale placement (the FA3 paper, Shah et al., arXiv 2407.08608, section 3.3) --------------
enum class ScaleMutation {
  none,
  qk_descale_after_softmax,   // d^Q d^K multiplied into P after softmax
  q_descale_by_kv_block,      // Q descale broadcast by the K/V block index
  final_v_scale,              // one V descale at finalize (legal only when d^V is head-wide)
  offset_not_in_denominator,  // 2^8 multiplies P but not the row sum
  offset_not_in_lse,          // LSE not corrected by - 8 ln 2
};
struct ScaleRun {
  Mat s_entering_softmax;  // scores the softmax saw
  Mat o;                   // output
  std::vector<double> lse;
};
// Q: 2 blocks of 8 rows, K/V: 4 blocks of 8 rows, d = 16; per-block E4M3 descales that differ per
// block. `head_wide_v` quantizes V with one descale instead (the pinned [batch, kv_head] API).
struct ScaleFixture {
  Mat q8, k8, v8;                 // code values (decoded E4M3, unscaled)
  std::vector<double> dq, dk, dv; // per-block descales
  int q_block = 8, kv_block = 8;
  double alpha = 0.25;            // 1 / sqrt(16)
  Mat q_hat, k_hat, v_hat;        // dequantized
};
ScaleFixture scale_fixture(bool head_wide_v);
ScaleRun run_scaled(const ScaleFixture& fx, ScaleMutation m, bool offset = true);
// Direct binary64 attention on the dequantized tensors (no P rounding).
ScaleRun reference_attention(const ScaleFixture& fx);
// "ok" or: "QK descale not applied before softmax", "QK descale on wrong axis",
// "V descale outside a block-varying sum", "2^8 offset not cancelled in denominator",
// "LSE biased by the 2^8 offset".
std::string check_scaled(const ScaleFixture& fx, const ScaleRun& run);

// ---- exact identities ---------------------------------------------------------------------------
Mat signed_hadamard(int d, uint64_t seed);  // diag(signs) * H_d / sqrt(d), orthonormal
struct Identities {
  double rrt_err;            // max |R R^T - I|
  double qk_err;             // max |(QR)(KR)^T - QK^T|
  double qk_quantized_err;   // max |Q(QR)Q(KR)^T - QK^T|: not exact after E4M3
  double paired_err;         // max |P[:,s] V[s,:] - PV|
  double unpaired_p_err;     // max |P[:,s] V - PV|
  double unpaired_v_err;     // max |P V[s,:] - PV|
  double offset_err;         // max |(2^8 N)/(2^8 D) - N/D| before P rounding
};
Identities identities(uint64_t seed);
// "ok" or "unpaired permutation changes PV" for a P/V permutation result
std::string check_permutation(double err);

// ---- the seeded experiment ------------------------------------------------------------------
// N(0,1) + N(0,100) * Bernoulli(0.001) over 32 x 32 Q/K/V; output RMSE versus binary64 attention
// for per-tensor, per-8-row-block, and signed-Hadamard + per-block E4M3 Q/K/V.
struct ExperimentRow {
  double per_tensor, per_block, hadamard_block;
  int outliers_q, outliers_k, outliers_v;
};
ExperimentRow outlier_experiment(uint64_t seed);
// Persistent +-10 excursions in Q/K channel 0.
ExperimentRow channel_outlier_experiment(uint64_t seed);
constexpr uint64_t kHeadlineSeed = 3406;

}  // namespace flashptx::models::fp8
