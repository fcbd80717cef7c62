// FA3 forward: the list of specializations, and the launcher.
//
// Every kernel that exists is named here, once. Each is an extern "C" __global__ wrapper around
// fa3::fwd_kernel_body<Config<...>> (src/fa3_fwd_sm90.cuh), so its SASS golden is named plainly
// (sass_golden/sm_90a/fa3_fwd_sm90_bf16_d128.sass).
//
//   head dim  kBlockM x kBlockN  stages  consumers  pingpong  why
//   64        128 x 128          3       2          yes       small tiles: more stages hide TMA latency
//   128       128 x 128          2       2          yes       160 KiB smem; 64+64+32 live words (0x05)
//   256       128 x 80           2       2          no        224 KiB smem; the FA3 admission table
//                                                             disables the scheduler above d=128 (0x04)
#include "src/fa3_fwd_sm90.cuh"
#include "src/fa3_fwd_sm90.h"
#include "src/tensormap.h"

#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>

namespace flashptx::fa3 {

using CfgBf16D64 = Config<64, 128, 3, 2, true, true>;
using CfgFp16D64 = Config<64, 128, 3, 2, true, false>;
using CfgBf16D128 = Config<128, 128, 2, 2, true, true>;
using CfgFp16D128 = Config<128, 128, 2, 2, true, false>;
using CfgBf16D256 = Config<256, 80, 2, 2, false, true>;
using CfgFp16D256 = Config<256, 80, 2, 2, false, false>;

}  // namespace flashptx::fa3

#define FLASHPTX_FA3_FWD_KERNEL(name, Cfg)                                                           \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::Cfg::kThreads, 1)                      \
      name(const __grid_constant__ flashptx::fa3::FwdParams p) {                                    \
    flashptx::fa3::fwd_kernel_body<flashptx::fa3::Cfg>(p);                                           \
  }

FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d64, CfgBf16D64)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d64, CfgFp16D64)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d128, CfgBf16D128)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d128, CfgFp16D128)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d256, CfgBf16D256)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d256, CfgFp16D256)

// The traced build of bf16 d128 lives in src/fa3_fwd_sm90_trace.cu (compiled with FLASHPTX_TRACE=1).
extern "C" __global__ void fa3_fwd_sm90_bf16_d128_trace(const __grid_constant__ flashptx::fa3::FwdParams p);

namespace flashptx::fa3 {

template <class Cfg>
constexpr KernelDesc desc(const char* symbol, const void* fn) {
  return KernelDesc{symbol, Cfg::kHeadDim, Cfg::kBf16 ? FLASHPTX_BF16 : FLASHPTX_FP16, Cfg::kBlockM, Cfg::kBlockN,
                    Cfg::kStages, Cfg::kConsumerWGs, Cfg::kPingpong, Cfg::kThreads, Cfg::kSmemBytes, fn};
}

static const KernelDesc kKernels[] = {
    desc<CfgBf16D64>("fa3_fwd_sm90_bf16_d64", reinterpret_cast<const void*>(&fa3_fwd_sm90_bf16_d64)),
    desc<CfgFp16D64>("fa3_fwd_sm90_fp16_d64", reinterpret_cast<const void*>(&fa3_fwd_sm90_fp16_d64)),
    desc<CfgBf16D128>("fa3_fwd_sm90_bf16_d128", reinterpret_cast<const void*>(&fa3_fwd_sm90_bf16_d128)),
    desc<CfgFp16D128>("fa3_fwd_sm90_fp16_d128", reinterpret_cast<const void*>(&fa3_fwd_sm90_fp16_d128)),
    desc<CfgBf16D256>("fa3_fwd_sm90_bf16_d256", reinterpret_cast<const void*>(&fa3_fwd_sm90_bf16_d256)),
    desc<CfgFp16D256>("fa3_fwd_sm90_fp16_d256", reinterpret_cast<const void*>(&fa3_fwd_sm90_fp16_d256)),
};
static const KernelDesc kTraced =
    desc<CfgBf16D128>("fa3_fwd_sm90_bf16_d128_trace", reinterpret_cast<const void*>(&fa3_fwd_sm90_bf16_d128_trace));

int num_kernels() { return static_cast<int>(sizeof(kKernels) / sizeof(kKernels[0])); }
const KernelDesc& kernel_at(int i) { return kKernels[i]; }

const KernelDesc* find_kernel(int head_dim, flashptx_dtype dtype, bool traced) {
  if (traced) return (head_dim == 128 && dtype == FLASHPTX_BF16) ? &kTraced : nullptr;
  for (const KernelDesc& k : kKernels)
    if (k.head_dim == head_dim && k.dtype == dtype) return &k;
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

flashptx_status launch_fwd(const flashptx_fwd_params& a, cudaStream_t stream, uint64_t* trace, bool traced,
                           std::string* err) {
  const KernelDesc* k = find_kernel(static_cast<int>(a.head_dim), a.q_dtype, traced);
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
  const int64_t ctas = static_cast<int64_t>(p.num_m_blocks) * a.heads_q * a.batch;
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
