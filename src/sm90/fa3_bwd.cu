// FA3 backward: the list of specializations. Every backward kernel that exists is named here, once,
// as an extern "C" __global__ wrapper (its golden: sass_golden/sm_90a/<name>.sass) and a row of the
// kernel table (src/kernels.h). The launch plan (src/plan.cpp plan_bwd) chooses the rows.
//
//   kernel     block_m x block_n  Q/dO stages  MMA WGs  warpgroups split      dQ stage        smem
//   bwd d64    128 x 128          2 / 2        2        keys; dQ rows         whole tile      194 KiB
//   bwd d128   64 x 128           2 / 2        2        keys; dQ columns      whole tile      194 KiB
//   bwd d256   64 x 64            2 / 1        2        head dim (dK dV dQ)   half, 2 adds    226 KiB
// The preprocess and postprocess kernels (src/sm90/fa3_bwd_aux.cuh) are one per dtype: the head
// dim is a run-time value for them.
// The shapes (kBwdD64, kBwdD128, kBwdD256) are in src/sm90/fa3_bwd_config.h; their varlen twins in
// src/sm90/fa3_bwd_varlen.cu.
#include "src/kernels.h"
#include "src/sm90/fa3_bwd.cuh"
#include "src/sm90/fa3_bwd_aux.cuh"
#include "src/sm90/fa3_bwd_entry.h"

#define FLASHPTX_FA3_BWD_KERNEL(name, config)                                                        \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::BwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::BwdParams p) {                                    \
    flashptx::fa3::bwd::bwd_kernel_body<config>(p);                                                  \
  }

FLASHPTX_FA3_BWD_KERNEL(fa3_bwd_sm90_bf16_d64, flashptx::fa3::kBwdD64)
FLASHPTX_FA3_BWD_KERNEL(fa3_bwd_sm90_fp16_d64, flashptx::fa3::fp16(flashptx::fa3::kBwdD64))
FLASHPTX_FA3_BWD_KERNEL(fa3_bwd_sm90_bf16_d128, flashptx::fa3::kBwdD128)
FLASHPTX_FA3_BWD_KERNEL(fa3_bwd_sm90_fp16_d128, flashptx::fa3::fp16(flashptx::fa3::kBwdD128))
FLASHPTX_FA3_BWD_KERNEL(fa3_bwd_sm90_bf16_d256, flashptx::fa3::kBwdD256)
FLASHPTX_FA3_BWD_KERNEL(fa3_bwd_sm90_fp16_d256, flashptx::fa3::fp16(flashptx::fa3::kBwdD256))

#define FLASHPTX_FA3_BWD_AUX_KERNEL(name, body, is_bf16)                                             \
  extern "C" __global__ void __launch_bounds__(256) name(const __grid_constant__ flashptx::fa3::BwdAuxParams p) { \
    flashptx::fa3::bwd::body<is_bf16>(p);                                                            \
  }

FLASHPTX_FA3_BWD_AUX_KERNEL(fa3_bwd_pre_sm90_bf16, preprocess_body, true)
FLASHPTX_FA3_BWD_AUX_KERNEL(fa3_bwd_pre_sm90_fp16, preprocess_body, false)
FLASHPTX_FA3_BWD_AUX_KERNEL(fa3_bwd_post_dq_sm90_bf16, postprocess_dq_body, true)
FLASHPTX_FA3_BWD_AUX_KERNEL(fa3_bwd_post_dq_sm90_fp16, postprocess_dq_body, false)
FLASHPTX_FA3_BWD_AUX_KERNEL(fa3_bwd_post_dkv_sm90_bf16, postprocess_dkv_body, true)
FLASHPTX_FA3_BWD_AUX_KERNEL(fa3_bwd_post_dkv_sm90_fp16, postprocess_dkv_body, false)

namespace flashptx {

#define FLASHPTX_FA3_BWD_ROW(name, config) \
  fa3_bwd_entry<config>(#name, reinterpret_cast<const void*>(&name), Family::kFa3Bwd)
#define FLASHPTX_FA3_BWD_AUX_ROW(name, family, dtype) \
  fa3_bwd_aux_entry(#name, Family::family, dtype, reinterpret_cast<const void*>(&name))

std::span<const KernelEntry> fa3_bwd_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_BWD_ROW(fa3_bwd_sm90_bf16_d64, kBwdD64),
      FLASHPTX_FA3_BWD_ROW(fa3_bwd_sm90_fp16_d64, fp16(kBwdD64)),
      FLASHPTX_FA3_BWD_ROW(fa3_bwd_sm90_bf16_d128, kBwdD128),
      FLASHPTX_FA3_BWD_ROW(fa3_bwd_sm90_fp16_d128, fp16(kBwdD128)),
      FLASHPTX_FA3_BWD_ROW(fa3_bwd_sm90_bf16_d256, kBwdD256),
      FLASHPTX_FA3_BWD_ROW(fa3_bwd_sm90_fp16_d256, fp16(kBwdD256)),
      FLASHPTX_FA3_BWD_AUX_ROW(fa3_bwd_pre_sm90_bf16, kFa3BwdPre, FLASHPTX_BF16),
      FLASHPTX_FA3_BWD_AUX_ROW(fa3_bwd_pre_sm90_fp16, kFa3BwdPre, FLASHPTX_FP16),
      FLASHPTX_FA3_BWD_AUX_ROW(fa3_bwd_post_dq_sm90_bf16, kFa3BwdPostDq, FLASHPTX_BF16),
      FLASHPTX_FA3_BWD_AUX_ROW(fa3_bwd_post_dq_sm90_fp16, kFa3BwdPostDq, FLASHPTX_FP16),
      FLASHPTX_FA3_BWD_AUX_ROW(fa3_bwd_post_dkv_sm90_bf16, kFa3BwdPostDkv, FLASHPTX_BF16),
      FLASHPTX_FA3_BWD_AUX_ROW(fa3_bwd_post_dkv_sm90_fp16, kFa3BwdPostDkv, FLASHPTX_FP16),
  };
  return rows;
}

}  // namespace flashptx
