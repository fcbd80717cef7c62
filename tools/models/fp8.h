// FA3 FP8 oracle (docs/PROTOCOLS.md, "FP8 layouts"): the E4M3FN codebook, descale placement
// and its failure lab, the 2^8 probability offset, the Q/K orthogonal (signed Hadamard) identity,
// the paired P/V permutation, and the seeded quantization-error experiment. Codes come from
// src/protocol/e4m3.h, the encoder the device uses (checked against the hardware conversion by
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

// The FA3 paper's Table 3 (source-reported RMSE, FP64 reference, its own synthetic distribution).
struct PaperRmse { const char* method; double rmse; };
const std::vector<PaperRmse>& paper_table3();
// per-tensor FP8 (2.4e-2) over block quantization + incoherent processing (9.1e-3): about 2.6
double paper_fp8_rmse_ratio();

// ---- in-kernel V transpose (FP8 wgmma reads V K-major; V arrives head-contiguous) ----------------
// PTX prmt.b32, default mode: selector nibble i picks byte i of the result from the 8 bytes
// {b, a} (a = bytes 0-3, b = bytes 4-7); nibble bit 3 replicates that byte's sign bit instead.
uint32_t prmt(uint32_t a, uint32_t b, uint32_t selector);

// Shape rule of the transpose: d_v % 32 == 0, B_c % 32 == 0, and d_v % 64 == 0 or B_c % 64 == 0.
// The block is 64 (head dim) x 32 (keys) when d_v % 64 == 0, else 32 x 64 (our choice of order when
// both divide by 64).
struct TransposeBlock { bool ok; int d_rows, key_cols; std::string reason; };
TransposeBlock v_transpose_block(int d_v, int b_c);

// One 16 (keys) x 16 (head dim) tile of E4M3 bytes, moved the way a warp does it: two ldmatrix .trans
// (8x8 of 16-bit units, keys [0,8) and [8,16)), two prmt per thread, two stmatrix (even and odd head
// dims). A 16-bit unit holds two FP8 bytes, so .trans alone would keep byte pairs of adjacent head
// dims together; prmt splits them. Result vt[d][p] holds V[sigma(p)][d] for the key permutation
// sigma the register ownership implies (P must be permuted with it: P[:,sigma] Vt^T = P V).
struct Vt16 { uint8_t vt[16][16]; int sigma[16]; };
Vt16 transpose_tile_16x16(const uint8_t v[16][16], uint32_t sel_even, uint32_t sel_odd);
// sigma(4q + i) = {2q, 2q+1, 2q+8, 2q+9}[i]: the key each output byte position holds.
int transpose_sigma(int p);
// Output positions that disagree with the direct transpose vt[d][p] = v[sigma(p)][d] (0: exact).
int transpose_mismatches(const uint8_t v[16][16], const Vt16& t);
// Every 16-bit selector (nibbles 0..7) that gathers, for each thread, the four bytes of one head dim
// (even: odd = false) in ascending key order; the model enumerates all 4096.
std::vector<uint32_t> derive_selectors(bool odd);

// ---- the FP8 layout failure lab (docs/PROTOCOLS.md, "FP8 layouts") ---------------------
// Each lab breaks one rule of the FP8 path and names the fault its checker reports; "ok" for the
// protocol as the kernel runs it.
enum class LayoutLab {
  none,
  v_head_contiguous_to_pv,       // V handed to the PV wgmma as it landed (head dims contiguous): FP8
                                 // wgmma reads B only K-major, so it reads V[d][k] as V[k][d]
  vt_released_before_transpose,  // one warp releases the Vt (source) stage to TMA when its own quarter
                                 // is stored, before the 128-thread barrier that closes the transpose
  p_ownership_repair_skipped,    // FP32 P converted to E4M3 in place: the accumulator's register
                                 // ownership is taken as operand A's, with V not permuted to match
};
const char* layout_lab_name(LayoutLab l);
struct LayoutLabResult {
  std::string verdict;  // "ok" or the named fault
  std::string evidence; // the number that shows it
};
LayoutLabResult run_layout_lab(LayoutLab l);

// The FP32 accumulator column that register slot i (0..7) of lane `lane` holds in one 32-key chunk of
// S (wgmma C fragment: pairs at 8j + 2(lane%4)), and the column operand A of an FP8 wgmma expects in
// the same slot (runs of four at 16(i/4) + 4(lane%4)).
int c_fragment_col(int lane, int i);
int a_fragment_col(int lane, int i);

// Descale admission: every descale must be finite and > 0. "ok" or "<name>[<block>] = <value>: zero
// descale" / "negative descale" / "NaN descale" / "infinite descale".
std::string check_descales(const ScaleFixture& fx);

// Q and K rotated by different orthogonal transforms (R_Q R_K^T != I): the max |R_Q R_K^T - I| and the
// max logit change |(Q R_Q)(K R_K)^T - Q K^T|, binary64, d = 32; `same` uses R_K = R_Q.
struct TransformPair { double rqrk_err, logit_err; };
TransformPair qk_transform_pair(uint64_t seed, bool same);
// "ok" or "R_Q R_K^T != I: logits change before quantization"
std::string check_qk_transform(const TransformPair& t);

}  // namespace flashptx::models::fp8
