// FA3 backward: the preprocess and postprocess kernels around the main kernel (src/sm90/fa3_bwd.cuh).
// Memory-bound, one pass each; plain CUDA (no wgmma, no barriers beyond the warp).
//
//   preprocess   per (batch, head, query row) of the padded row range m_blocks * block_m:
//                delta = rowsum(dO * O) in fp32 (0 on padded rows), LSE2 = LSE * log2(e) (+inf on
//                padded rows and on rows the forward saw no key for, whose LSE is -inf: their P is
//                then exactly 0), and the row's d floats of the dQ accumulator zeroed.
//   postprocess  dQ = softmax_scale * dQ_accum, converted to the dtype, from the accumulator's
//                fragment order (fa3_bwd_config.h dq_accum_coord) to the caller's strides; under
//                GQA also dK and dV from their fp32 accumulators (already scaled).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "src/sm90/fa3_bwd_config.h"

namespace flashptx::fa3::bwd {

template <bool IsBf16>
__device__ __forceinline__ float2 load_pair(const void* base, int64_t elem) {
  const uint32_t u = *reinterpret_cast<const uint32_t*>(static_cast<const uint16_t*>(base) + elem);
  if constexpr (IsBf16) {
    __nv_bfloat162 h;
    memcpy(&h, &u, 4);
    return __bfloat1622float2(h);
  } else {
    __half2 h;
    memcpy(&h, &u, 4);
    return __half22float2(h);
  }
}
template <bool IsBf16>
__device__ __forceinline__ void store_pair(void* base, int64_t elem, float a, float b) {
  uint32_t u;
  if constexpr (IsBf16) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    memcpy(&u, &h, 4);
  } else {
    const __half2 h = __floats2half2_rn(a, b);
    memcpy(&u, &h, 4);
  }
  *reinterpret_cast<uint32_t*>(static_cast<uint16_t*>(base) + elem) = u;
}

// Grid (ceil(m_blocks * block_m / 8), heads_q, batch), 256 threads: one warp per row.
template <bool IsBf16>
__device__ __forceinline__ void preprocess_body(const BwdAuxParams& p) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = blockIdx.x * 8 + warp;
  const int h = blockIdx.y, b = blockIdx.z;
  const int rows_pad = p.m_blocks * p.block_m;
  if (row >= rows_pad) return;
  const int64_t r = (static_cast<int64_t>(b) * p.heads_q + h) * rows_pad + row;
  float* acc = p.dq_accum + r * p.head_dim;
  for (int e = 4 * lane; e < p.head_dim; e += 128) *reinterpret_cast<float4*>(acc + e) = make_float4(0.f, 0.f, 0.f, 0.f);
  float delta = 0.f, lse2 = INFINITY;
  if (row < p.seqlen_q) {
    const int64_t o_at = b * p.o_sb + row * p.o_ss + h * p.o_sh, do_at = b * p.do_sb + row * p.do_ss + h * p.do_sh;
    for (int e = 2 * lane; e < p.head_dim; e += 64) {
      const float2 o = load_pair<IsBf16>(p.o, o_at + e), d = load_pair<IsBf16>(p.dout, do_at + e);
      delta += o.x * d.x + o.y * d.y;
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) delta += __shfl_xor_sync(0xffffffffu, delta, off);
    const float lse = p.lse[(static_cast<int64_t>(b) * p.heads_q + h) * p.seqlen_q + row];
    lse2 = lse == -INFINITY ? INFINITY : lse * 1.4426950408889634f;
  }
  if (lane == 0) {
    p.delta[r] = delta;
    p.lse2[r] = lse2;
  }
}

// Grid (m_blocks, heads_q, batch), 256 threads: one dQ tile per CTA.
template <bool IsBf16>
__device__ __forceinline__ void postprocess_dq_body(const BwdAuxParams& p) {
  const int m = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int tile = p.block_m * p.head_dim;
  const float* acc = p.dq_accum + ((static_cast<int64_t>(b) * p.heads_q + h) * p.m_blocks + m) * tile;
  for (int f = 2 * threadIdx.x; f < tile; f += 2 * blockDim.x) {
    const TileCoord2 c = dq_accum_coord(f, p.head_dim, p.dq_split_rows != 0);
    const int row = m * p.block_m + c.row;
    if (row >= p.seqlen_q) continue;
    const float2 v = *reinterpret_cast<const float2*>(acc + f);
    store_pair<IsBf16>(p.dq, b * p.dq_sb + row * p.dq_ss + h * p.dq_sh + c.col, v.x * p.softmax_scale,
                       v.y * p.softmax_scale);
  }
}

// GQA: grid (n_blocks, heads_kv, batch), 256 threads: one key block of dK and dV per CTA.
template <bool IsBf16>
__device__ __forceinline__ void postprocess_dkv_body(const BwdAuxParams& p) {
  const int n = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int tile = p.block_n * p.head_dim;
  const int64_t at = ((static_cast<int64_t>(b) * p.heads_kv + h) * p.n_blocks + n) * tile;
  for (int f = 2 * threadIdx.x; f < tile; f += 2 * blockDim.x) {
    const int row = n * p.block_n + f / p.head_dim, col = f % p.head_dim;
    if (row >= p.seqlen_k) continue;
    const float2 k = *reinterpret_cast<const float2*>(p.dk_accum + at + f);
    const float2 v = *reinterpret_cast<const float2*>(p.dv_accum + at + f);
    store_pair<IsBf16>(p.dk, b * p.dk_sb + row * p.dk_ss + h * p.dk_sh + col, k.x, k.y);
    store_pair<IsBf16>(p.dv, b * p.dv_sb + row * p.dv_ss + h * p.dv_sh + col, v.x, v.y);
  }
}

}  // namespace flashptx::fa3::bwd
