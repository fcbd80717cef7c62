// FA3 backward: the preprocess and postprocess kernels around the main kernel (src/sm90/fa3_bwd.cuh).
// Memory-bound, one pass each; plain CUDA (no wgmma, no mbarrier). Every global access is 16 bytes
// wide (the ABI requires 16-byte aligned tensors and strides that are multiples of 8 elements:
// src/validate.cpp), and every warp's accesses cover whole 32-byte sectors.
//
//   preprocess   per (batch, head, query row) of the padded row range m_blocks * block_m:
//                delta = rowsum(dO * O) in fp32 (0 on padded rows), LSE2 = LSE * log2(e) (+inf on
//                padded rows and on rows the forward saw no key for, whose LSE is -inf: their P is
//                then exactly 0), and the row's d floats of the dQ accumulator zeroed.
//                d/8 threads per row, 8 elements (16 bytes) each, d the kernel's head dim
//                (bwd_kernel_head_dim: 96 runs at 128, 192 at 256); the threads past V's head dim
//                (head_dim_v, O's and dO's width) read nothing and add 0, and the accumulator rows
//                are the kernel's width.
//   postprocess  dQ = softmax_scale * dQ_accum, converted to the dtype, from the accumulator's
//                fragment order (fa3_bwd_config.h dq_accum_coord) to the caller's strides, through
//                a shared-memory transpose: the fragment order puts 8 rows x 16 bytes under one warp
//                store, so direct stores would fill half of every sector they touch; staged in shared
//                memory, each row goes out as whole 16-byte chunks, a warp writing 512 contiguous
//                bytes per row group. Under GQA also dK and dV from their fp32 accumulators (row-major,
//                already scaled), 8 elements per thread.
// Varlen (template flag Varlen, src/sm90/fa3_bwd_config.h "variable-length batches"): the same
// passes over the padded-per-sequence scratch, batch 1; a padded block's sequence is the table's
// slot of the block (one sequence per block), its rows below len_q (len_k) are the live ones, and
// the packed tensors are addressed at the sequence's first row; LSE is [heads_q, total_q].
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ptx/cvt.cuh"
#include "src/protocol/tile_scheduler.h"
#include "src/sm90/common.cuh"
#include "src/sm90/fa3_bwd_config.h"

namespace flashptx::fa3::bwd {

// pack2 (two floats rounded once to the dtype, packed as the 32-bit pair they occupy in memory):
// src/sm90/common.cuh.
template <bool IsBf16>
__device__ __forceinline__ float2 unpack_pair(uint32_t u) {
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
__device__ __forceinline__ uint4 ld_global_16(const void* base, int64_t elem) {
  return *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(base) + elem);
}
__device__ __forceinline__ void st_global_16(void* base, int64_t elem, uint4 v) {
  *reinterpret_cast<uint4*>(static_cast<uint16_t*>(base) + elem) = v;
}

// This thread's part of a row's dO . O: its 8 elements of each, in fp32, pair by pair.
template <bool IsBf16>
__device__ __forceinline__ float dot_pairs(uint4 o, uint4 d) {
  float delta = 0.f;
  const uint32_t ow[4] = {o.x, o.y, o.z, o.w}, dw[4] = {d.x, d.y, d.z, d.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 a = unpack_pair<IsBf16>(ow[i]), c = unpack_pair<IsBf16>(dw[i]);
    delta += a.x * c.x + a.y * c.y;
  }
  return delta;
}

// Grid (ceil(m_blocks * block_m / pre_rows_per_cta), heads_q, batch), 256 threads. vt: the varlen
// table (Varlen), else nullptr.
template <bool IsBf16, bool Varlen = false>
__device__ __forceinline__ void preprocess_body(const BwdAuxParams& p, const BwdVarlenTable* vt = nullptr) {
  const int kd = bwd_kernel_head_dim(p.head_dim);  // the accumulator's row width
  const int per_row = kd / 8;  // 8, 16 or 32 threads: an aligned group inside one warp
  const int row = blockIdx.x * pre_rows_per_cta(kd) + threadIdx.x / per_row;
  const int e = (threadIdx.x % per_row) * 8;
  // This thread's 8 columns exist in O and dO, which have V's head dim (the row's first thread,
  // which reads LSE, always).
  const bool cols = e < p.head_dim_v;
  const int h = blockIdx.y, b = blockIdx.z;
  const int rows_pad = p.m_blocks * p.block_m;
  const bool in_pad = row < rows_pad;  // no early return: the whole warp takes part in the butterfly
  const int64_t r = (static_cast<int64_t>(b) * p.heads_q + h) * rows_pad + row;
  if (in_pad) {
    float4* acc = reinterpret_cast<float4*>(p.dq_accum + r * kd + e);
    acc[0] = make_float4(0.f, 0.f, 0.f, 0.f);
    acc[1] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
  float delta = 0.f, lse = -INFINITY;
  bool live;
  if constexpr (Varlen) {
    // The padded block's sequence (one per block) and the row's packed index `at`.
    const int s = varlen_slot_of_tile(vt->m_prefix, vt->num_seqs, row / p.block_m);
    const BwdVarlenSeq sq = vt->seq[s];
    const int in_seq = row - vt->m_prefix[s] * p.block_m;
    live = in_pad && in_seq < sq.len_q;
    if (live && cols) {
      const int64_t at = sq.q_start + in_seq;
      const uint4 o = ld_global_16(p.o, at * p.o_ss + h * p.o_sh + e);
      const uint4 d = ld_global_16(p.dout, at * p.do_ss + h * p.do_sh + e);
      if (e == 0) lse = p.lse[static_cast<int64_t>(h) * vt->total_q + at];  // [heads_q, total_q]
      delta = dot_pairs<IsBf16>(o, d);
    }
  } else {
    live = in_pad && row < p.seqlen_q;
    if (live && cols) {
      const uint4 o = ld_global_16(p.o, b * p.o_sb + row * p.o_ss + h * p.o_sh + e);
      const uint4 d = ld_global_16(p.dout, b * p.do_sb + row * p.do_ss + h * p.do_sh + e);
      // The row's LSE (read by its first thread), in flight with O's and dO's loads.
      if (e == 0) lse = p.lse[(static_cast<int64_t>(b) * p.heads_q + h) * p.seqlen_q + row];
      delta = dot_pairs<IsBf16>(o, d);
    }
  }
  // The row's sum over its per_row threads: butterfly steps below per_row stay inside the group.
#pragma unroll
  for (int off = 16; off > 0; off /= 2)
    if (off < per_row) delta += __shfl_xor_sync(0xffffffffu, delta, off);
  if (in_pad && e == 0) {
    // Padded rows and rows that saw no key (LSE = -inf): LSE2 = +inf, so that P = 0 there.
    const float lse2 = lse == -INFINITY ? INFINITY : lse * 1.4426950408889634f;
    p.delta[r] = delta;
    p.lse2[r] = lse2;
  }
}

// Grid (m_blocks, heads_q, batch), 256 threads, post_dq_smem_bytes of dynamic shared memory: one dQ
// tile per CTA. The head dim and the fragment split are compile-time here (postprocess_dq_body
// dispatches on them) so that dq_accum_coord's divisions fold into shifts. D is the kernel's head
// dim (bwd_kernel_head_dim); only the caller's p.head_dim columns of a row are written.
template <bool IsBf16, int D, bool SplitRows, bool Varlen = false>
__device__ __forceinline__ void postprocess_dq_tile(const BwdAuxParams& p, const BwdVarlenTable* vt = nullptr) {
  extern __shared__ __align__(16) uint32_t stage[];
  constexpr int kPitch = post_dq_pitch_words(D);
  const int m = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int tile = p.block_m * D;
  const float4* acc =
      reinterpret_cast<const float4*>(p.dq_accum + ((static_cast<int64_t>(b) * p.heads_q + h) * p.m_blocks + m) * tile);
  // Phase 1: the accumulator tile, read in its own (fragment) order: thread t of each half of the CTA
  // takes float4 t of every other 128-float4 chunk, four 16-byte loads in flight. Each float4 is
  // the pairs (row, col..col+1) and (row+8, col..col+1) (dq_accum_coord_parts of its floats 0 and
  // 2), scaled in fp32, rounded once, staged row-major.
  const int t = threadIdx.x % 128;
  const int chunks = tile / 512;
  for (int c0 = threadIdx.x / 128; c0 < chunks; c0 += 8) {
    float4 v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (c0 + 2 * i < chunks) v[i] = acc[(c0 + 2 * i) * 128 + t];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int chunk = c0 + 2 * i;
      if (chunk >= chunks) break;
      const TileCoord2 a = dq_accum_coord_parts(chunk, t, 0, D, SplitRows);
      const TileCoord2 c = dq_accum_coord_parts(chunk, t, 2, D, SplitRows);
      stage[a.row * kPitch + a.col / 2] = pack2<IsBf16>(v[i].x * p.softmax_scale, v[i].y * p.softmax_scale);
      stage[c.row * kPitch + c.col / 2] = pack2<IsBf16>(v[i].z * p.softmax_scale, v[i].w * p.softmax_scale);
    }
  }
  __syncthreads();  // every staged pair written before any thread reads a row chunk
  // Phase 2: 16-byte chunks of the rows that exist (row < seqlen_q), consecutive threads on
  // consecutive chunks of a row.
  constexpr int kChunksPerRow = D / 8;
  if constexpr (Varlen) {
    // The tile's sequence; its rows below len_q, at the sequence's packed rows.
    const int s = varlen_slot_of_tile(vt->m_prefix, vt->num_seqs, m);
    const BwdVarlenSeq sq = vt->seq[s];
    const int row0 = (m - vt->m_prefix[s]) * p.block_m;
    for (int c = threadIdx.x; c < p.block_m * kChunksPerRow; c += 256) {
      const int row = c / kChunksPerRow, col = (c % kChunksPerRow) * 8;
      if (row0 + row >= sq.len_q || col >= p.head_dim) continue;
      const uint4 v = *reinterpret_cast<const uint4*>(&stage[row * kPitch + col / 2]);
      st_global_16(p.dq, (static_cast<int64_t>(sq.q_start) + row0 + row) * p.dq_ss + h * p.dq_sh + col, v);
    }
  } else {
    for (int c = threadIdx.x; c < p.block_m * kChunksPerRow; c += 256) {
      const int row = c / kChunksPerRow, col = (c % kChunksPerRow) * 8;
      const int grow = m * p.block_m + row;
      if (grow >= p.seqlen_q || col >= p.head_dim) continue;
      const uint4 v = *reinterpret_cast<const uint4*>(&stage[row * kPitch + col / 2]);
      st_global_16(p.dq, b * p.dq_sb + grow * p.dq_ss + h * p.dq_sh + col, v);
    }
  }
}
template <bool IsBf16, bool Varlen = false>
__device__ __forceinline__ void postprocess_dq_body(const BwdAuxParams& p, const BwdVarlenTable* vt = nullptr) {
  const bool rows = bwd_dq_split_rows(p.block_m);  // the accumulator's split (fa3_bwd_config.h)
  switch (bwd_kernel_head_dim(p.head_dim)) {  // the plan only launches head dims 64, 96, 128, 192, 256
    case 64:
      return rows ? postprocess_dq_tile<IsBf16, 64, true, Varlen>(p, vt) : postprocess_dq_tile<IsBf16, 64, false, Varlen>(p, vt);
    case 128:
      return rows ? postprocess_dq_tile<IsBf16, 128, true, Varlen>(p, vt)
                  : postprocess_dq_tile<IsBf16, 128, false, Varlen>(p, vt);
    case 256:
      return rows ? postprocess_dq_tile<IsBf16, 256, true, Varlen>(p, vt)
                  : postprocess_dq_tile<IsBf16, 256, false, Varlen>(p, vt);
    default: __trap();
  }
}

// GQA: grid (n_blocks, heads_kv, batch), 256 threads: one key block of dK and dV per CTA, 8
// consecutive elements of a row per thread; the accumulator rows have the kernel's head dim
// (bwd_kernel_head_dim) columns, of which dK's p.head_dim and dV's p.head_dim_v (<= head_dim) are
// written.
// Varlen: the key block's sequence, its rows below len_k at the sequence's packed rows (b = 0).
template <bool IsBf16, bool Varlen = false>
__device__ __forceinline__ void postprocess_dkv_body(const BwdAuxParams& p, const BwdVarlenTable* vt = nullptr) {
  const int n = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int kd = bwd_kernel_head_dim(p.head_dim);
  const int tile = p.block_n * kd;
  const int64_t at = ((static_cast<int64_t>(b) * p.heads_kv + h) * p.n_blocks + n) * tile;
  int row0 = n * p.block_n, len = p.seqlen_k, first = 0;  // the block's first row, its sequence's length and first row
  if constexpr (Varlen) {
    const int s = varlen_slot_of_tile(vt->n_prefix, vt->num_seqs, n);
    row0 = (n - vt->n_prefix[s]) * p.block_n;
    len = vt->seq[s].len_k;
    first = vt->seq[s].k_start;
  }
  for (int f = 8 * threadIdx.x; f < tile; f += 8 * 256) {
    const int row = row0 + f / kd, col = f % kd;
    if (row >= len || col >= p.head_dim) continue;
    // The four loads together (in flight at once); the accumulator rows are the kernel's width, so
    // dV's columns past head_dim_v are read (zeros: dO's zero-filled columns) but not stored.
    const float4* k = reinterpret_cast<const float4*>(p.dk_accum + at + f);
    const float4* v = reinterpret_cast<const float4*>(p.dv_accum + at + f);
    const float4 k0 = k[0], k1 = k[1], v0 = v[0], v1 = v[1];
    st_global_16(p.dk, b * p.dk_sb + (first + row) * p.dk_ss + h * p.dk_sh + col,
                 make_uint4(pack2<IsBf16>(k0.x, k0.y), pack2<IsBf16>(k0.z, k0.w),
                            pack2<IsBf16>(k1.x, k1.y), pack2<IsBf16>(k1.z, k1.w)));
    if (col >= p.head_dim_v) continue;  // (192, 128): dV's row ends at V's head dim
    st_global_16(p.dv, b * p.dv_sb + (first + row) * p.dv_ss + h * p.dv_sh + col,
                 make_uint4(pack2<IsBf16>(v0.x, v0.y), pack2<IsBf16>(v0.z, v0.w),
                            pack2<IsBf16>(v1.x, v1.y), pack2<IsBf16>(v1.z, v1.w)));
  }
}

}  // namespace flashptx::fa3::bwd
