// FLOP numerators for the bench (spec 0x0D). Kept here, not in include/flashptx/flops.h, because
// another helper owns that file; the lead may merge the two (the definitions below are the spec's).
//
//   paper forward:   4 * B * H * Sq * Sk * d        (QK^T and PV, 2 FLOPs per multiply-add, d_qk = d_v)
//   paper causal:    the dense count halved          (the FA3/FA4 papers' convention)
//   useful forward:  4 * B * H * pairs * d           pairs = the exact number of unmasked (i, j)
//                                                    with bottom-right alignment (S(S+1)/2 when Sq = Sk)
//   paper backward:  2.5 * the paper forward count   (five GEMMs against two)
// TFLOP/s from these is accounting throughput: masked tiles the kernel skips or pads, softmax,
// and memory traffic are not in the numerator but are in the time.
#pragma once
#include <algorithm>
#include <cstdint>

namespace flashptx::bench {

// Exact number of (query, key) pairs a causal mask aligned to the bottom-right leaves visible,
// for one (batch, head): row i sees keys j <= i + Sk - Sq, clamped to [0, Sk). Non-causal: Sq*Sk.
inline int64_t valid_pairs(int64_t sq, int64_t sk, bool causal) {
  if (sq <= 0 || sk <= 0) return 0;
  if (!causal) return sq * sk;
  const int64_t a = sk - sq + 1;                  // row i sees clamp(i + a, 0, sk) keys
  const int64_t lo = std::max<int64_t>(0, 1 - a); // first row that sees at least one key
  const int64_t hi = std::max(lo, sq - 1);        // first row that sees every key (the last row always does)
  const int64_t n = hi - lo;                      // rows in the partial band
  const int64_t band = n > 0 ? (n * ((lo + a) + (hi - 1 + a))) / 2 : 0;
  return band + (sq - hi) * sk;
}

inline double fwd_flops_dense(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d) {
  return 4.0 * static_cast<double>(b) * h * sq * sk * d;
}
// The paper's numerator: dense, halved when causal.
inline double fwd_flops(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, bool causal) {
  return fwd_flops_dense(b, h, sq, sk, d) * (causal ? 0.5 : 1.0);
}
// Useful work: only the unmasked pairs.
inline double fwd_flops_useful(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, bool causal) {
  return 4.0 * static_cast<double>(b) * h * static_cast<double>(valid_pairs(sq, sk, causal)) * d;
}
inline double bwd_flops(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, bool causal) {
  return 2.5 * fwd_flops(b, h, sq, sk, d, causal);
}
inline double tflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0; }

}  // namespace flashptx::bench
