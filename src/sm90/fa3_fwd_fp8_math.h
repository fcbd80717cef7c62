// The FA3 FP8 forward's per-row softmax arithmetic, shared by the kernel (src/sm90/fa3_fwd_fp8.cuh)
// and the host tile emulator of tests/host/test_fwd_fp8.cpp, which replays the kernel's block walk
// with these functions against the fp64 reference. Plain scalar code, host and device (FLASHPTX_HD);
// the exponential is the caller's (ex2.approx on the device, exp2f on the host).
// Protocols: docs/PROTOCOLS.md, "FP8 layouts" (invariants: scores dQ dK (q8 k8^T) scaled
// before the max; u = 2^8 exp2(x - m); O = sum dV_j u v8 / sum u; LSE = m + ln(sum u) - 8 ln 2).
#pragma once
#include <cmath>

#include "ptx/arch.cuh"

namespace flashptx::fa3::fp8 {

constexpr float kOffsetLog2 = 8.0f;  // P = 2^(x - m + 8): the 2^8 probability offset
constexpr float kLn2 = 0.693147180559945309f;

// A descale as the kernel uses it: a zero descale (an all-zero group, as flashptx_quantize_fp8 writes
// it) has all-zero codes, whose contribution is 0 whatever the factor: 1 keeps the rescale finite.
FLASHPTX_HD float descale_or_one(float d) { return d > 0.f ? d : 1.f; }

// The exponent's scale of a K/V block: softmax_scale * log2(e) * dQ * dK_n, kept above 0 (a zero
// descale would turn a masked -inf into NaN; 1e-30 gives the same zero scores).
FLASHPTX_HD float block_scale(float scale_log2, float dq, float dk) { return fmaxf(scale_log2 * dq * dk, 1e-30f); }

// One row's online-softmax step on a block whose raw row maximum (q8 k8 units, -inf when every key
// of the block is masked for the row) is mx: updates the running max (scaled base-2 units), returns
// alpha (the factor of the running O and l) and sets *bias so that P = ex2(fma(s, scale, *bias)).
// A row with no visible key so far keeps max -inf: exponent reference 0, so ex2(-inf) = 0, never NaN;
// its O and l stay exactly 0 (alpha = 0 keeps them so).
template <class Ex2>
FLASHPTX_HD float row_update(float& row_max, float mx, float scale, float* bias, Ex2 ex2) {
  const float m_blk = mx == -INFINITY ? -INFINITY : mx * scale;
  const float m_new = fmaxf(row_max, m_blk);
  const float ref = m_new == -INFINITY ? 0.f : m_new;
  // The exponential unconditionally, then a select: ex2 is inline asm, which the compiler does not
  // speculate, so `cond ? 0 : ex2(..)` became a branch in the kernel's PTX, and a branch between
  // wgmma.wait_group 1 and 0 makes ptxas retire every wgmma at the join (docs/DECISIONS.md, "No
  // branch between the two wgmma waits"). The
  // value is the same: a row at -inf has ex2(-inf - ref) = +0.
  const float e = ex2(row_max - ref);
  const float alpha = row_max == -INFINITY ? 0.f : e;
  row_max = m_new;
  *bias = kOffsetLog2 - ref;
  return alpha;
}

// The factor of the final normalisation: the accumulator is in the unit of the last block's dV, and
// l carries the same 2^8 as P. 0 for a row without keys.
FLASHPTX_HD float out_factor(float dv_last, float l) { return l > 0.f ? dv_last / l : 0.f; }

// LSE = ln(sum exp(score)) = ln 2 * (m + log2 l - 8); -inf for a row without keys.
FLASHPTX_HD float lse_of(float row_max, float l) {
  return l > 0.f ? row_max * kLn2 + logf(l) - kOffsetLog2 * kLn2 : -INFINITY;
}

}  // namespace flashptx::fa3::fp8
