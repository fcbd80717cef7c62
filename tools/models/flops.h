// FLOP numerators of the benchmarks (docs/PROTOCOLS.md, "Evidence"). TFLOP/s is an
// accounting throughput: counted FLOPs over a timed interval. Which FLOPs are counted is a
// convention; these functions name each.
//
//   dense forward       2 B H S_q S_k (d_qk + d_v)      (= 4 B H S^2 d when square, d_qk = d_v = d)
//   causal forward      dense / 2                       (the FA3/FA4 papers' convention)
//   causal exact        2 B H N_pairs (d_qk + d_v)      (valid score pairs, bottom-right aligned)
//   backward            2.5 x forward                   (five dominant matmuls against two)
//
// Doubles throughout: 274,877,906,944 (the worked example of `flashptx ledger 0x0D`) is exact in a
// double.
#pragma once
#include <cstdint>

#include "src/protocol/hd.h"

namespace flashptx {

FLASHPTX_HD double fwd_flops_dense(double batch, double heads, double seqlen_q, double seqlen_k,
                                   double d_qk, double d_v) {
  return 2.0 * batch * heads * seqlen_q * seqlen_k * (d_qk + d_v);
}
// Square, one head dimension: 4 B H S^2 d.
FLASHPTX_HD double fwd_flops_dense(double batch, double heads, double seqlen, double d) {
  return 4.0 * batch * heads * seqlen * seqlen * d;
}
// The papers' causal convention: half the dense count.
FLASHPTX_HD double fwd_flops_causal_half(double batch, double heads, double seqlen_q, double seqlen_k,
                                         double d_qk, double d_v) {
  return 0.5 * fwd_flops_dense(batch, heads, seqlen_q, seqlen_k, d_qk, d_v);
}

// Valid (query, key) pairs of bottom-right aligned causal attention: row i sees keys
// j <= i + S_k - S_q. Rows see max(0, i + off + 1) keys with off = S_k - S_q, never more than S_k,
// so the sum is the triangle 1..S_k minus the part 1..max(off,0) cut off above.
// Square: S(S+1)/2.
FLASHPTX_HD int64_t causal_valid_pairs(int64_t seqlen_q, int64_t seqlen_k) {
  if (seqlen_q <= 0 || seqlen_k <= 0) return 0;
  const int64_t off = seqlen_k - seqlen_q;
  const int64_t lo = off > 0 ? off : 0;  // keys every row already sees before its first own row
  const int64_t top = seqlen_k;           // the last row sees all S_k keys
  // rows with a non-empty range see lo+1 .. top keys, one more per row
  return (top * (top + 1) - lo * (lo + 1)) / 2;
}
// Exact useful-work numerator of causal forward.
FLASHPTX_HD double fwd_flops_causal_exact(double batch, double heads, int64_t seqlen_q, int64_t seqlen_k,
                                          double d_qk, double d_v) {
  return 2.0 * batch * heads * (double)causal_valid_pairs(seqlen_q, seqlen_k) * (d_qk + d_v);
}

// Backward: 2.5 x the forward numerator of the same mask convention.
FLASHPTX_HD double bwd_flops(double fwd_flops) { return 2.5 * fwd_flops; }

// Accounting throughput in TFLOP/s for a time in milliseconds.
FLASHPTX_HD double tflops_per_s(double flops, double ms) { return flops / (ms * 1e-3) / 1e12; }

}  // namespace flashptx
