// FA4 backward (sm_100a): the dQ postprocess. NEVER EXECUTED (no Blackwell GPU): compiled and audited.
//
// The preprocess (delta, LSE2, the dQ accumulator zeroed) and the GQA dK/dV postprocess are the FA3
// backward's bodies (src/sm90/fa3_bwd_aux.cuh), compiled a second time for sm_100a in
// src/sm100/fa4_bwd.cu: their arithmetic and layouts are the FA4 kernel's too (the preprocess zeroes a
// tile's block_m x d floats whatever their order; dk/dv_accum are row-major [b, h_kv, n_pad, d] in
// both). A second compile, not the sm_90a cubins: an sm_90a cubin does not run on sm_100, and the
// library ships no PTX to JIT. The dQ postprocess differs because the FA4 accumulator's element order
// does (fa4_bwd_plan.h dq_accum_index, chunks of 32 columns with a 16-byte unit swizzle, instead of
// FA3's wgmma fragment order).
#pragma once
#include <cstdint>

#include "src/protocol/fa4_bwd_plan.h"
#include "src/sm90/fa3_bwd_aux.cuh"

namespace flashptx::fa4bwd {

// Grid (m_blocks, heads_q, batch), 256 threads, no shared memory: one dQ tile per CTA; each thread
// takes 8 consecutive columns of a row (two 16-byte units of the accumulator), scales them by
// softmax_scale in fp32, rounds once and stores 16 bytes. Rows past seqlen_q are not stored.
template <bool IsBf16>
__device__ __forceinline__ void postprocess_dq_body(const fa3::BwdAuxParams& p) {
  const int m = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const float* acc = p.dq_accum + ((static_cast<int64_t>(b) * p.heads_q + h) * p.m_blocks + m) * (kBlockM * p.head_dim);
  const int per_row = p.head_dim / 8;
  for (int i = static_cast<int>(threadIdx.x); i < kBlockM * per_row; i += 256) {
    const int row = i / per_row, col = (i % per_row) * 8;
    const int grow = m * kBlockM + row;
    if (grow >= p.seqlen_q) continue;
    const float4 a = *reinterpret_cast<const float4*>(acc + dq_accum_index(row, col));
    const float4 c = *reinterpret_cast<const float4*>(acc + dq_accum_index(row, col + 4));
    const float s = p.softmax_scale;
    fa3::bwd::st_global_16(p.dq, b * p.dq_sb + grow * p.dq_ss + h * p.dq_sh + col,
                           make_uint4(pack2<IsBf16>(a.x * s, a.y * s),
                                      pack2<IsBf16>(a.z * s, a.w * s),
                                      pack2<IsBf16>(c.x * s, c.y * s),
                                      pack2<IsBf16>(c.z * s, c.w * s)));
  }
}

}  // namespace flashptx::fa4bwd
