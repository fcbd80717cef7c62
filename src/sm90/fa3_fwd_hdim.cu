// FA3 forward at head dims 96 and 192, and at d_qk 192 with d_v 128 (DeepSeek's split): the list of
// specializations (src/sm90/fa3_fwd_config.h kD96, kD192, kD192V128; docs/DECISIONS.md, "Head dims
// 96 and 192, and a V head dim of its own"). The kernel body is fa3::fwd_kernel_body, as in
// src/sm90/fa3_fwd.cu; their own translation unit, so that the kernels of src/sm90/fa3_fwd.cu and
// their goldens do not depend on them, and nvcc compiles them beside that file.
//
//   kernel       d_qk  d_v  block_m x block_n  stages  consumers  schedule          O staging
//   d96            96   96  128 x 128          2       2          one tile per CTA  own
//   d192          192  192  128 x 112          2       2          one tile per CTA  in Q
//   d192_v128     192  128  128 x 128          2       2          one tile per CTA  in Q
//
// One kernel per shape and dtype serves causal and non-causal masks (tiles in longest-first order
// under a causal mask): no persistent or paired twin. Their window, softcap and sinks, and their
// varlen twins: src/sm90/fa3_fwd_hdim_local.cu.
#include "src/kernels.h"
#include "src/sm90/fa3_fwd.cuh"
#include "src/sm90/fa3_fwd_entry.h"

#define FLASHPTX_FA3_FWD_KERNEL(name, config)                                                        \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::FwdParams p) {                                    \
    flashptx::fa3::fwd_kernel_body<config>(p);                                                       \
  }

FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d96, flashptx::fa3::kD96)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d96, flashptx::fa3::fp16(flashptx::fa3::kD96))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d192, flashptx::fa3::kD192)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d192, flashptx::fa3::fp16(flashptx::fa3::kD192))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d192_v128, flashptx::fa3::kD192V128)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d192_v128, flashptx::fa3::fp16(flashptx::fa3::kD192V128))

namespace flashptx {

#define FLASHPTX_FA3_FWD_ROW(name, config) \
  fa3_fwd_entry<config>(#name, reinterpret_cast<const void*>(&name), Family::kFa3Fwd)

std::span<const KernelEntry> fa3_fwd_hdim_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d96, kD96),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d96, fp16(kD96)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d192, kD192),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d192, fp16(kD192)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d192_v128, kD192V128),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d192_v128, fp16(kD192V128)),
  };
  return rows;
}

}  // namespace flashptx
