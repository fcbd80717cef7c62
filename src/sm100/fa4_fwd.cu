// FA4 forward (sm_100a): the list of specializations. Every FA4 forward kernel that exists is named
// here, once: an extern "C" __global__ wrapper around fa4::fwd_kernel_body<config>
// (src/sm100/fa4_fwd.cuh), so its SASS golden is named plainly
// (sass_golden/sm_100a/fa4_fwd_sm100_bf16_d128.sass), and a row of the kernel table (src/kernels.h).
// Which row a problem uses is the launch plan's rule (src/plan.cpp).
//
// None of these has run: there is no Blackwell GPU here. They compile, audit and replay (see the .cuh).
//
//   kernel        cta_group  rows/tile  K/V ring slots      exp2 emulation (freq/res/start)  smem
//   d64           1          256        6 x 16 KiB          16/4/1: 16 of 128 (12.5%)        149.3 KiB
//   d128          1          256        3 x 32 KiB          16/4/1: 16 of 128 (12.5%)        197.3 KiB
//   d128_2cta     2 (pair)   512        6 x 16 KiB          10/4/1: 24 of 128 (18.75%)       197.3 KiB
// The configs (FwdConfig objects) are in src/sm100/fa4_fwd_config.h, which the CPU replay includes.
// The pair form exists for head dim 128 only: each CTA holds half of V's head dim, and 64 columns of a
// 64-wide V would need a 64-byte swizzle (and its tensor map) that this plan does not have.
#include "src/kernels.h"
#include "src/sm100/fa4_fwd.cuh"

#define FLASHPTX_FA4_FWD_KERNEL(name, config)                                                     \
  extern "C" __global__ void __launch_bounds__(flashptx::fa4::kThreads, 1)                       \
      name(const __grid_constant__ flashptx::fa4::FwdParams p) {                                  \
    flashptx::fa4::fwd_kernel_body<config>(p);                                                    \
  }
#define FLASHPTX_FA4_FWD_PAIR_KERNEL(name, config)                                                \
  extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(flashptx::fa4::kThreads, 1) \
      name(const __grid_constant__ flashptx::fa4::FwdParams p) {                                  \
    flashptx::fa4::fwd_kernel_body<config>(p);                                                    \
  }

FLASHPTX_FA4_FWD_KERNEL(fa4_fwd_sm100_bf16_d64, flashptx::fa4::kD64)
FLASHPTX_FA4_FWD_KERNEL(fa4_fwd_sm100_fp16_d64, flashptx::fa4::fp16(flashptx::fa4::kD64))
FLASHPTX_FA4_FWD_KERNEL(fa4_fwd_sm100_bf16_d128, flashptx::fa4::kD128)
FLASHPTX_FA4_FWD_KERNEL(fa4_fwd_sm100_fp16_d128, flashptx::fa4::fp16(flashptx::fa4::kD128))
FLASHPTX_FA4_FWD_PAIR_KERNEL(fa4_fwd_sm100_bf16_d128_2cta, flashptx::fa4::kD128Pair)
FLASHPTX_FA4_FWD_PAIR_KERNEL(fa4_fwd_sm100_fp16_d128_2cta, flashptx::fa4::fp16(flashptx::fa4::kD128Pair))

namespace flashptx {

// The FwdConfig switches beside the row's columns (kv_slots is the stages column, cta_group the
// cluster size), and the role table's register targets.
template <fa4::FwdConfig C>
inline constexpr KernelSwitch kFa4FwdSwitches[] = {
    {"emu_freq", C.emu.freq},
    {"emu_res", C.emu.res},
    {"emu_start", C.emu.start},
    {"tau_log2", C.tau_log2},
    {"softmax_regs", fa4::FwdLayout<C>::kSoftmaxRegs},
    {"correction_regs", fa4::FwdLayout<C>::kCorrectionRegs},
    {"other_regs", fa4::FwdLayout<C>::kOtherRegs},
};
template <fa4::FwdConfig C>
KernelEntry fa4_fwd_entry(const char* name, const void* fn) {
  using L = fa4::FwdLayout<C>;
  return KernelEntry{.name = name,
                     .family = Family::kFa4Fwd,
                     .dtype = C.bf16 ? FLASHPTX_BF16 : FLASHPTX_FP16,
                     .head_dim = C.head_dim,
                     .block_m = L::kBlockM,
                     .block_n = fa4::kBlockN,
                     .stages = C.kv_slots,
                     .consumer_wgs = fa4::kQStages,
                     .pingpong = true,
                     .persistent = true,  // cluster launch control
                     .threads = L::kThreads,
                     .smem_bytes = static_cast<int>(L::kSmemBytes),
                     .fn = fn,
                     .cluster_ctas = C.cta_group,
                     .switches = kFa4FwdSwitches<C>};
}
#define FLASHPTX_FA4_FWD_ROW(name, config) fa4_fwd_entry<config>(#name, reinterpret_cast<const void*>(&name))

std::span<const KernelEntry> fa4_fwd_kernels() {
  using namespace fa4;
  static const KernelEntry rows[] = {
      FLASHPTX_FA4_FWD_ROW(fa4_fwd_sm100_bf16_d64, kD64),
      FLASHPTX_FA4_FWD_ROW(fa4_fwd_sm100_fp16_d64, fp16(kD64)),
      FLASHPTX_FA4_FWD_ROW(fa4_fwd_sm100_bf16_d128, kD128),
      FLASHPTX_FA4_FWD_ROW(fa4_fwd_sm100_fp16_d128, fp16(kD128)),
      FLASHPTX_FA4_FWD_ROW(fa4_fwd_sm100_bf16_d128_2cta, kD128Pair),
      FLASHPTX_FA4_FWD_ROW(fa4_fwd_sm100_fp16_d128_2cta, fp16(kD128Pair)),
  };
  return rows;
}

}  // namespace flashptx
