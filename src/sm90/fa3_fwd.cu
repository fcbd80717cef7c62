// FA3 forward: the list of specializations, the dispatch rule, and the launcher.
//
// Every kernel that exists is named here, once. Each is an extern "C" __global__ wrapper around
// fa3::fwd_kernel_body<Config<...>> (src/fa3_fwd_sm90.cuh), so its SASS golden is named plainly
// (sass_golden/sm_90a/fa3_fwd_sm90_bf16_d128_n128.sass).
// Candidates that lost a measurement are removed from this list; tools/NOTES.md keeps their numbers.
//
//   kernel     kBlockM x kBlockN  stages  consumers  pingpong  persistent  O staging  smem
//   d64_m128   128 x 128          3       2          yes       yes         own        129 KiB
//   d64_m192   192 x 128          3       3          yes (3)   yes         own        145 KiB  (160 regs/consumer)
//   d128_n128  128 x 128          2       2          yes       yes         own        193 KiB
//   d256       128 x 80           2       2          no        no          in Q       225 KiB
// d256: the FA3 admission table disables the scheduler above d = 128 (0x04); the persistent tile
// loop's carried state spills there (O alone is 128 registers), so one tile per CTA.
#include "src/sm90/fa3_fwd.cuh"
#include "src/sm90/fa3_fwd.h"
#include "src/tensormap.h"

#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace flashptx::fa3 {

//                      head dim, kBlockN, stages, consumer WGs, pingpong, persistent, bf16
using CfgBf16D64M128 = Config<64, 128, 3, 2, true, true, true>;
using CfgFp16D64M128 = Config<64, 128, 3, 2, true, true, false>;
using CfgBf16D64M192 = Config<64, 128, 3, 3, true, true, true>;
using CfgFp16D64M192 = Config<64, 128, 3, 3, true, true, false>;
using CfgBf16D128N128 = Config<128, 128, 2, 2, true, true, true>;
using CfgFp16D128N128 = Config<128, 128, 2, 2, true, true, false>;
using CfgBf16D256 = Config<256, 80, 2, 2, false, false, true>;
using CfgFp16D256 = Config<256, 80, 2, 2, false, false, false>;

}  // namespace flashptx::fa3

#define FLASHPTX_FA3_FWD_KERNEL(name, Cfg)                                                           \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::Cfg::kThreads, 1)                      \
      name(const __grid_constant__ flashptx::fa3::FwdParams p) {                                    \
    flashptx::fa3::fwd_kernel_body<flashptx::fa3::Cfg>(p);                                           \
  }

FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d64_m128, CfgBf16D64M128)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d64_m128, CfgFp16D64M128)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d64_m192, CfgBf16D64M192)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d64_m192, CfgFp16D64M192)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d128_n128, CfgBf16D128N128)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d128_n128, CfgFp16D128N128)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d256, CfgBf16D256)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d256, CfgFp16D256)

// The traced build of bf16 d128 lives in src/fa3_fwd_sm90_trace.cu (compiled with FLASHPTX_TRACE=1).
extern "C" __global__ void fa3_fwd_sm90_bf16_d128_trace(const __grid_constant__ flashptx::fa3::FwdParams p);

namespace flashptx::fa3 {

template <class Cfg>
constexpr KernelDesc desc(const char* symbol, const void* fn) {
  return KernelDesc{symbol, Cfg::kHeadDim, Cfg::kBf16 ? FLASHPTX_BF16 : FLASHPTX_FP16, Cfg::kBlockM, Cfg::kBlockN,
                    Cfg::kStages, Cfg::kConsumerWGs, Cfg::kPingpong, Cfg::kPersistent, Cfg::kThreads, Cfg::kSmemBytes, fn};
}

#define FLASHPTX_FA3_DESC(Cfg, name) desc<Cfg>(#name, reinterpret_cast<const void*>(&name))
static const KernelDesc kKernels[] = {
    FLASHPTX_FA3_DESC(CfgBf16D64M128, fa3_fwd_sm90_bf16_d64_m128),
    FLASHPTX_FA3_DESC(CfgFp16D64M128, fa3_fwd_sm90_fp16_d64_m128),
    FLASHPTX_FA3_DESC(CfgBf16D64M192, fa3_fwd_sm90_bf16_d64_m192),
    FLASHPTX_FA3_DESC(CfgFp16D64M192, fa3_fwd_sm90_fp16_d64_m192),
    FLASHPTX_FA3_DESC(CfgBf16D128N128, fa3_fwd_sm90_bf16_d128_n128),
    FLASHPTX_FA3_DESC(CfgFp16D128N128, fa3_fwd_sm90_fp16_d128_n128),
    FLASHPTX_FA3_DESC(CfgBf16D256, fa3_fwd_sm90_bf16_d256),
    FLASHPTX_FA3_DESC(CfgFp16D256, fa3_fwd_sm90_fp16_d256),
};
#undef FLASHPTX_FA3_DESC
static const KernelDesc kTraced =
    desc<CfgBf16D128N128>("fa3_fwd_sm90_bf16_d128_trace", reinterpret_cast<const void*>(&fa3_fwd_sm90_bf16_d128_trace));


static const KernelDesc* by_symbol(const char* symbol) {
  for (const KernelDesc& k : kKernels)
    if (std::strcmp(k.symbol, symbol) == 0) return &k;
  return nullptr;
}

// FLASHPTX_KERNEL=<symbol> forces one specialization of the right head dim and dtype (A/B
// measurements only; tools/NOTES.md).
static const char* forced_symbol() {
  static const char* s = std::getenv("FLASHPTX_KERNEL");
  return s;
}

// The dispatch rule, from the measurements in tools/NOTES.md (H200, bf16, FA3 grid):
//   d64:  3 consumer warpgroups (kBlockM 192) except causal below 2k rows, where the smaller tile
//         wastes less of the diagonal (v3: 8k +16% non-causal, +9% causal; 1k causal -8%).
//   d128: kBlockN 128 everywhere: with O staged in its own buffer (v4) it matches kBlockN 176 at 8k
//         (617 vs 615 TFLOP/s) and beats it at 1k (551 vs 489); kBlockN 176 has no room for that buffer.
//   d256: one specialization.
const KernelDesc* find_kernel(const flashptx_fwd_params& a, bool traced) {
  const int d = static_cast<int>(a.head_dim);
  const bool bf16 = a.q_dtype == FLASHPTX_BF16;
  if (traced) return (d == 128 && bf16) ? &kTraced : nullptr;
  if (forced_symbol()) {
    const KernelDesc* k = by_symbol(forced_symbol());
    if (k && k->head_dim == d && k->dtype == a.q_dtype) return k;
  }
  switch (d) {
    case 64:
      if (a.causal && a.seqlen_q < 2048)
        return by_symbol(bf16 ? "fa3_fwd_sm90_bf16_d64_m128" : "fa3_fwd_sm90_fp16_d64_m128");
      return by_symbol(bf16 ? "fa3_fwd_sm90_bf16_d64_m192" : "fa3_fwd_sm90_fp16_d64_m192");
    case 128:
      return by_symbol(bf16 ? "fa3_fwd_sm90_bf16_d128_n128" : "fa3_fwd_sm90_fp16_d128_n128");
    case 256:
      return by_symbol(bf16 ? "fa3_fwd_sm90_bf16_d256" : "fa3_fwd_sm90_fp16_d256");
  }
  return nullptr;
}

// One [batch, seqlen, heads, d] tensor as a 4-D tensor map (d innermost), box (64, rows, 1, 1),
// 128B swizzle. A dimension of extent 1 gets a harmless stride (TMA wants each a multiple of 16).
static bool encode_bshd(CUtensorMap* map, flashptx_dtype dt, const void* ptr, int64_t batch, int64_t seqlen,
                        int64_t heads, int64_t d, int64_t sb, int64_t ss, int64_t sh, uint32_t box_rows,
                        std::string* err) {
  const uint64_t esz = 2;
  uint64_t dims[4] = {static_cast<uint64_t>(d), static_cast<uint64_t>(seqlen), static_cast<uint64_t>(heads),
                      static_cast<uint64_t>(batch)};
  uint64_t strides[3] = {static_cast<uint64_t>(ss) * esz, static_cast<uint64_t>(sh) * esz,
                         static_cast<uint64_t>(sb) * esz};
  if (seqlen == 1) strides[0] = static_cast<uint64_t>(d) * esz;
  if (heads == 1) strides[1] = strides[0] * static_cast<uint64_t>(seqlen);
  if (batch == 1) strides[2] = strides[1] * static_cast<uint64_t>(heads);
  uint32_t box[4] = {64, box_rows, 1, 1};
  const CUtensorMapDataType t = dt == FLASHPTX_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  return encode_tensor_map(map, t, 4, ptr, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B, err);
}

// FLASHPTX_PERSISTENT=0 in the environment launches one CTA per tile even for the persistent
// specializations (the same kernel: its tile loop then runs once). For A/B measurements only.
// FLASHPTX_PERSISTENT=2 uses the persistent grid for causal masks too.
static int persistent_mode() {
  static const int m = [] {
    const char* e = std::getenv("FLASHPTX_PERSISTENT");
    return e ? std::atoi(e) : 1;
  }();
  return m;
}

flashptx_status launch_fwd(const flashptx_fwd_params& a, cudaStream_t stream, uint64_t* trace, bool traced,
                           std::string* err) {
  const KernelDesc* k = find_kernel(a, traced);
  if (!k) {
    *err = "no kernel for this head dim and dtype";
    return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  }
  FwdParams p{};
  bool ok = encode_bshd(&p.tma_q, a.q_dtype, a.q, a.batch, a.seqlen_q, a.heads_q, a.head_dim, a.q_batch_stride,
                        a.q_row_stride, a.q_head_stride, static_cast<uint32_t>(k->block_m), err) &&
            encode_bshd(&p.tma_k, a.k_dtype, a.k, a.batch, std::max<int64_t>(a.seqlen_k, 1), a.heads_kv, a.head_dim, a.k_batch_stride,
                        a.k_row_stride, a.k_head_stride, static_cast<uint32_t>(k->block_n), err) &&
            encode_bshd(&p.tma_v, a.v_dtype, a.v, a.batch, std::max<int64_t>(a.seqlen_k, 1), a.heads_kv, a.head_dim, a.v_batch_stride,
                        a.v_row_stride, a.v_head_stride, static_cast<uint32_t>(k->block_n), err) &&
            encode_bshd(&p.tma_o, a.o_dtype, a.o, a.batch, a.seqlen_q, a.heads_q, a.head_dim, a.o_batch_stride,
                        a.o_row_stride, a.o_head_stride, 64u, err);
  if (!ok) return FLASHPTX_ERR_BAD_STRIDES;
  p.lse = a.lse;
  p.trace = trace;
  p.seqlen_q = static_cast<int>(a.seqlen_q);
  p.seqlen_k = static_cast<int>(a.seqlen_k);
  p.heads_q = static_cast<int>(a.heads_q);
  p.heads_kv = static_cast<int>(a.heads_kv);
  p.batch = static_cast<int>(a.batch);
  p.num_m_blocks = static_cast<int>((a.seqlen_q + k->block_m - 1) / k->block_m);
  p.causal = a.causal ? 1 : 0;
  const float scale = a.softmax_scale != 0.f ? a.softmax_scale : 1.f / std::sqrt(static_cast<float>(a.head_dim));
  p.softmax_scale = scale;
  p.softmax_scale_log2 = scale * 1.4426950408889634f;

  cudaError_t e = cudaFuncSetAttribute(k->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, k->smem_bytes);
  if (e != cudaSuccess) {
    *err = std::string("cudaFuncSetAttribute(") + k->symbol + "): " + cudaGetErrorString(e);
    return FLASHPTX_ERR_CUDA;
  }
  const int64_t tiles = static_cast<int64_t>(p.num_m_blocks) * a.heads_q * a.batch;
  int64_t ctas = tiles;
  if (k->persistent && persistent_mode() != 0 && (!a.causal || persistent_mode() == 2)) {
    // Non-causal only: with causal tiles of unequal length the static round-robin measured slower
    // than the hardware's own block dispatch (tools/NOTES.md, v2).
    // One CTA per SM (a CTA uses more than half the shared memory), looping over tiles.
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
      *err = "cannot read the multiprocessor count";
      return FLASHPTX_ERR_CUDA;
    }
    ctas = std::min<int64_t>(tiles, sms);
  }
  void* args[] = {&p};
  e = cudaLaunchKernel(k->fn, dim3(static_cast<unsigned>(ctas)), dim3(k->threads), args,
                       static_cast<size_t>(k->smem_bytes), stream);
  if (e != cudaSuccess) {
    *err = std::string("launch of ") + k->symbol + ": " + cudaGetErrorString(e);
    return FLASHPTX_ERR_CUDA;
  }
  return FLASHPTX_OK;
}

}  // namespace flashptx::fa3
