// FA4 backward (sm_100a), the 2-CTA form: the list of specializations (src/sm100/fa4_bwd_pair.cuh),
// each an extern "C" __global__ wrapper with a cluster of two CTAs declared (__cluster_dims__), so its
// golden is named plainly (sass_golden/sm_100a/fa4_bwd_sm100_bf16_d128_2cta.sass).
//
// NEVER EXECUTED: there is no Blackwell GPU here. They compile, audit and replay (see the .cuh).
//
//   kernel       cta_group  keys/CTA (pair)  query rows/step  Q/dO stages  smem
//   d128_2cta    2          128 (256)        128              1            226.1 KiB
// Head dim 64 has no 2-CTA form (src/protocol/fa4_bwd_pair_plan.h says why); the plan rule that
// picks 1-CTA or 2-CTA is in src/plan.cpp (plan_bwd). The pre/postprocess kernels are the 1-CTA form's
// (src/sm100/fa4_bwd.cu): the dQ accumulator order is the same.
#include "src/kernels.h"
#include "src/sm100/fa4_bwd_pair.cuh"

#define FLASHPTX_FA4_BWD_PAIR_KERNEL(name, bf16)                                                        \
  extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(flashptx::fa4bwd::kThreads, 1) \
      name(const __grid_constant__ flashptx::fa4bwd::BwdParams p) {                                   \
    flashptx::fa4bwd::pair::bwd_pair_kernel_body<bf16>(p);                                            \
  }

FLASHPTX_FA4_BWD_PAIR_KERNEL(fa4_bwd_sm100_bf16_d128_2cta, true)
FLASHPTX_FA4_BWD_PAIR_KERNEL(fa4_bwd_sm100_fp16_d128_2cta, false)

namespace flashptx {

template <bool Bf16>
KernelEntry fa4_bwd_pair_entry(const char* name, const void* fn) {
  using L = fa4bwd::BwdPairLayout<Bf16>;
  return KernelEntry{.name = name,
                     .family = Family::kFa4Bwd,
                     .dtype = Bf16 ? FLASHPTX_BF16 : FLASHPTX_FP16,
                     .head_dim = fa4bwd::pair::kHeadDim,
                     .block_m = fa4bwd::kBlockM,
                     .block_n = fa4bwd::kBlockN,
                     .stages = 1,
                     .consumer_wgs = 2,  // the compute warpgroups
                     .pingpong = false,
                     .persistent = false,
                     .threads = L::kThreads,
                     .smem_bytes = static_cast<int>(L::kSmemBytes),
                     .fn = fn,
                     .cluster_ctas = fa4bwd::pair::kCtaGroup};
}

std::span<const KernelEntry> fa4_bwd_pair_kernels() {
  static const KernelEntry rows[] = {
      fa4_bwd_pair_entry<true>("fa4_bwd_sm100_bf16_d128_2cta", reinterpret_cast<const void*>(&fa4_bwd_sm100_bf16_d128_2cta)),
      fa4_bwd_pair_entry<false>("fa4_bwd_sm100_fp16_d128_2cta", reinterpret_cast<const void*>(&fa4_bwd_sm100_fp16_d128_2cta)),
  };
  return rows;
}

}  // namespace flashptx
