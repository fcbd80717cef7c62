// FA4 backward (sm_100a): the list of specializations. Every FA4 backward kernel that exists is named
// here, once: an extern "C" __global__ wrapper around fa4bwd::bwd_kernel_body<config>
// (src/sm100/fa4_bwd.cuh), so its SASS golden is named plainly
// (sass_golden/sm_100a/fa4_bwd_sm100_bf16_d128.sass).
//
// NEVER EXECUTED: there is no Blackwell GPU here. They compile, audit and replay (see the .cuh).
//
//   kernel   cta_group  keys/CTA  query rows/step  Q/dO stages  smem
//   d64      1          128       128              2            163.1 KiB
//   d128     1          128       128              1            194.1 KiB
// The configs (BwdConfig objects) are in src/sm100/fa4_bwd_config.h, which the CPU replay includes.
// Not built: the 2-CTA (cta_group::2) form and its dS exchange over DSMEM (modelled only:
// tools/models/fa4_backward.cpp); see docs/DECISIONS.md, "FA4 on sm_100a: written, audited, never run".
//
// Around the main kernel, one per dtype (src/sm100/fa4_bwd_aux.cuh says why these are a second
// compile of the FA3 bodies for sm_100a, and why the dQ postprocess is FA4's own):
//   fa4_bwd_pre_sm100_*       fa3::bwd::preprocess_body     delta, LSE2, dQ accumulator zeroed
//   fa4_bwd_post_dq_sm100_*   fa4bwd::postprocess_dq_body   dQ from the fa4bwd::dq_accum_index order
//   fa4_bwd_post_dkv_sm100_*  fa3::bwd::postprocess_dkv_body  GQA: dK, dV from their fp32 accumulators
#include "src/kernels.h"
#include "src/sm100/fa4_bwd.cuh"
#include "src/sm100/fa4_bwd_aux.cuh"

#define FLASHPTX_FA4_BWD_KERNEL(name, config)                                                     \
  extern "C" __global__ void __launch_bounds__(flashptx::fa4bwd::kThreads, 1)                    \
      name(const __grid_constant__ flashptx::fa4bwd::BwdParams p) {                               \
    flashptx::fa4bwd::bwd_kernel_body<config>(p);                                                 \
  }

FLASHPTX_FA4_BWD_KERNEL(fa4_bwd_sm100_bf16_d64, flashptx::fa4bwd::kBwdD64)
FLASHPTX_FA4_BWD_KERNEL(fa4_bwd_sm100_fp16_d64, flashptx::fa4bwd::fp16(flashptx::fa4bwd::kBwdD64))
FLASHPTX_FA4_BWD_KERNEL(fa4_bwd_sm100_bf16_d128, flashptx::fa4bwd::kBwdD128)
FLASHPTX_FA4_BWD_KERNEL(fa4_bwd_sm100_fp16_d128, flashptx::fa4bwd::fp16(flashptx::fa4bwd::kBwdD128))

#define FLASHPTX_FA4_BWD_AUX_KERNEL(name, body, is_bf16)                                             \
  extern "C" __global__ void __launch_bounds__(256) name(const __grid_constant__ flashptx::fa3::BwdAuxParams p) { \
    body<is_bf16>(p);                                                                                \
  }

FLASHPTX_FA4_BWD_AUX_KERNEL(fa4_bwd_pre_sm100_bf16, flashptx::fa3::bwd::preprocess_body, true)
FLASHPTX_FA4_BWD_AUX_KERNEL(fa4_bwd_pre_sm100_fp16, flashptx::fa3::bwd::preprocess_body, false)
FLASHPTX_FA4_BWD_AUX_KERNEL(fa4_bwd_post_dq_sm100_bf16, flashptx::fa4bwd::postprocess_dq_body, true)
FLASHPTX_FA4_BWD_AUX_KERNEL(fa4_bwd_post_dq_sm100_fp16, flashptx::fa4bwd::postprocess_dq_body, false)
FLASHPTX_FA4_BWD_AUX_KERNEL(fa4_bwd_post_dkv_sm100_bf16, flashptx::fa3::bwd::postprocess_dkv_body, true)
FLASHPTX_FA4_BWD_AUX_KERNEL(fa4_bwd_post_dkv_sm100_fp16, flashptx::fa3::bwd::postprocess_dkv_body, false)

namespace flashptx {

template <fa4bwd::BwdConfig C>
KernelEntry fa4_bwd_entry(const char* name, const void* fn) {
  using L = fa4bwd::BwdLayout<C>;
  return KernelEntry{.name = name,
                     .family = Family::kFa4Bwd,
                     .dtype = C.bf16 ? FLASHPTX_BF16 : FLASHPTX_FP16,
                     .head_dim = C.head_dim,
                     .block_m = fa4bwd::kBlockM,
                     .block_n = fa4bwd::kBlockN,
                     .stages = C.stages,
                     .consumer_wgs = 2,  // the compute warpgroups
                     .pingpong = false,
                     .persistent = false,
                     .threads = L::kThreads,
                     .smem_bytes = static_cast<int>(L::kSmemBytes),
                     .fn = fn};
}
static KernelEntry fa4_aux_entry(const char* name, Family f, flashptx_dtype t, const void* fn) {
  // A pre/postprocess kernel: no head dimension, tiles, rings or dynamic shared memory.
  return KernelEntry{.name = name, .family = f, .dtype = t, .threads = 256, .fn = fn};
}
#define FLASHPTX_FA4_BWD_ROW(name, config) fa4_bwd_entry<config>(#name, reinterpret_cast<const void*>(&name))
#define FLASHPTX_FA4_BWD_AUX_ROW(name, family, dtype) \
  fa4_aux_entry(#name, Family::family, dtype, reinterpret_cast<const void*>(&name))

std::span<const KernelEntry> fa4_bwd_kernels() {
  using namespace fa4bwd;
  static const KernelEntry rows[] = {
      FLASHPTX_FA4_BWD_ROW(fa4_bwd_sm100_bf16_d64, kBwdD64),
      FLASHPTX_FA4_BWD_ROW(fa4_bwd_sm100_fp16_d64, fp16(kBwdD64)),
      FLASHPTX_FA4_BWD_ROW(fa4_bwd_sm100_bf16_d128, kBwdD128),
      FLASHPTX_FA4_BWD_ROW(fa4_bwd_sm100_fp16_d128, fp16(kBwdD128)),
      FLASHPTX_FA4_BWD_AUX_ROW(fa4_bwd_pre_sm100_bf16, kFa4BwdPre, FLASHPTX_BF16),
      FLASHPTX_FA4_BWD_AUX_ROW(fa4_bwd_pre_sm100_fp16, kFa4BwdPre, FLASHPTX_FP16),
      FLASHPTX_FA4_BWD_AUX_ROW(fa4_bwd_post_dq_sm100_bf16, kFa4BwdPostDq, FLASHPTX_BF16),
      FLASHPTX_FA4_BWD_AUX_ROW(fa4_bwd_post_dq_sm100_fp16, kFa4BwdPostDq, FLASHPTX_FP16),
      FLASHPTX_FA4_BWD_AUX_ROW(fa4_bwd_post_dkv_sm100_bf16, kFa4BwdPostDkv, FLASHPTX_BF16),
      FLASHPTX_FA4_BWD_AUX_ROW(fa4_bwd_post_dkv_sm100_fp16, kFa4BwdPostDkv, FLASHPTX_FP16),
  };
  return rows;
}

}  // namespace flashptx
