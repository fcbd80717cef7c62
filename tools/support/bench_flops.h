// FLOP numerators for the bench (docs/PROTOCOLS.md, "Evidence"): thin wrappers over
// tools/models/flops.h, so that
// the bench and the accounting oracle share one implementation.
//
//   paper forward:   4 * B * H * Sq * Sk * d        (QK^T and PV, 2 FLOPs per multiply-add, d_qk = d_v)
//   paper causal:    the dense count halved          (the FA3/FA4 papers' convention)
//   useful forward:  4 * B * H * pairs * d           pairs = the exact number of unmasked (i, j)
//                                                    with bottom-right alignment (S(S+1)/2 when Sq = Sk)
//   paper backward:  2.5 * the paper forward count   (five GEMMs against two)
// TFLOP/s from these is accounting throughput: masked tiles the kernel skips or pads, softmax,
// and memory traffic are not in the numerator but are in the time.
#pragma once
#include <cstdint>

#include "tools/models/flops.h"

namespace flashptx::bench {

// The bench's names for the numerators of tools/models/flops.h (the one implementation, which the
// accounting oracle behind `flashptx ledger 0x0D` tests): integer shapes, a causal flag.
inline int64_t valid_pairs(int64_t sq, int64_t sk, bool causal) {
  if (sq <= 0 || sk <= 0) return 0;
  return causal ? causal_valid_pairs(sq, sk) : sq * sk;
}
inline double fwd_flops_dense(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d) {
  return ::flashptx::fwd_flops_dense(double(b), double(h), double(sq), double(sk), double(d), double(d));
}
inline double fwd_flops(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, bool causal) {
  return causal ? fwd_flops_causal_half(double(b), double(h), double(sq), double(sk), double(d), double(d))
                : fwd_flops_dense(b, h, sq, sk, d);
}
inline double fwd_flops_useful(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, bool causal) {
  return causal ? fwd_flops_causal_exact(double(b), double(h), sq, sk, double(d), double(d))
                : fwd_flops_dense(b, h, sq, sk, d);
}
inline double bwd_flops(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, bool causal) {
  return ::flashptx::bwd_flops(fwd_flops(b, h, sq, sk, d, causal));
}
inline double tflops(double flops, double ms) { return ms > 0 ? tflops_per_s(flops, ms) : 0.0; }

}  // namespace flashptx::bench
