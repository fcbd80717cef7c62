// FA3 forward: the list of specializations. Every forward kernel that exists is named here, once.
//
// Each is an extern "C" __global__ wrapper around fa3::fwd_kernel_body<config> (src/sm90/fa3_fwd.cuh),
// so its SASS golden is named plainly (sass_golden/sm_90a/fa3_fwd_sm90_bf16_d128_n128.sass), and a
// row of the kernel table (src/kernels.h). Which row a problem uses is the launch plan's rule
// (src/plan.cpp). Each configuration (src/sm90/fa3_fwd_config.h, "the shipped configurations") sets
// every protocol switch by name; `flashptx kernels` prints them with each kernel's registers and
// shared memory. The candidates measured and not kept: docs/DECISIONS.md.
//
//   kernel           block_m x block_n  stages  consumers  schedule                 O staging
//   d64_m128         128 x 128          3       2          persistent, tile feed    own
//   d64_m192         192 x 128          3       3          persistent               own
//   d128_n128        128 x 128          2       2          persistent, walk ahead   own, two Q slots
//   d256             128 x 64           2       2          one tile per CTA         in Q
//   d256_persistent  128 x 64           2       2          persistent, walk ahead   in halves
//   *_paired         the d64_m128, d64_m192, d128_n128 and d256 shapes, persistent over the paired
//                    causal schedule, walking ahead; d64_m128_paired also has the dynamic schedule
//                    (FwdConfig::dynamic_walk), two Q slots and the deferred epilogue
//   varlen           the d64_m128, d128_n128 and d256 shapes over packed variable-length sequences
//                    (FwdVarlenParams: the sequence table in the parameter block, one tile per CTA
//                    in longest-first order); their own kernels, so the fixed-length kernels' SASS
//                    does not depend on varlen. d64 takes the 128-row tile: packed batches are
//                    mostly short sequences, where a 192-row tile wastes more of each last block.
#include "src/kernels.h"
#include "src/sm90/fa3_fwd.cuh"
#include "src/sm90/fa3_fwd_entry.h"

#define FLASHPTX_FA3_FWD_KERNEL(name, config)                                                        \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::FwdParams p) {                                    \
    flashptx::fa3::fwd_kernel_body<config>(p);                                                       \
  }

FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d64_m128, flashptx::fa3::kD64M128)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d64_m128, flashptx::fa3::fp16(flashptx::fa3::kD64M128))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d64_m192, flashptx::fa3::kD64M192)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d64_m192, flashptx::fa3::fp16(flashptx::fa3::kD64M192))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d128_n128, flashptx::fa3::kD128N128)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d128_n128, flashptx::fa3::fp16(flashptx::fa3::kD128N128))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d64_m128_paired, flashptx::fa3::kD64M128Paired)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d64_m128_paired, flashptx::fa3::fp16(flashptx::fa3::kD64M128Paired))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d128_n128_paired, flashptx::fa3::kD128N128Paired)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d128_n128_paired, flashptx::fa3::fp16(flashptx::fa3::kD128N128Paired))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d256, flashptx::fa3::kD256)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d256, flashptx::fa3::fp16(flashptx::fa3::kD256))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d256_paired, flashptx::fa3::kD256Paired)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d64_m192_paired, flashptx::fa3::kD64M192Paired)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d64_m192_paired, flashptx::fa3::fp16(flashptx::fa3::kD64M192Paired))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d256_paired, flashptx::fa3::fp16(flashptx::fa3::kD256Paired))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d256_persistent, flashptx::fa3::kD256Persistent)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d256_persistent, flashptx::fa3::fp16(flashptx::fa3::kD256Persistent))

#define FLASHPTX_FA3_FWD_VARLEN_KERNEL(name, config)                                                 \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::FwdVarlenParams p) {                              \
    flashptx::fa3::fwd_kernel_body<config>(p.fwd, &p.table);                                         \
  }

FLASHPTX_FA3_FWD_VARLEN_KERNEL(fa3_fwd_varlen_sm90_bf16_d64_m128, flashptx::fa3::kD64M128Varlen)
FLASHPTX_FA3_FWD_VARLEN_KERNEL(fa3_fwd_varlen_sm90_fp16_d64_m128,
                               flashptx::fa3::fp16(flashptx::fa3::kD64M128Varlen))
FLASHPTX_FA3_FWD_VARLEN_KERNEL(fa3_fwd_varlen_sm90_bf16_d128_n128, flashptx::fa3::kD128N128Varlen)
FLASHPTX_FA3_FWD_VARLEN_KERNEL(fa3_fwd_varlen_sm90_fp16_d128_n128,
                               flashptx::fa3::fp16(flashptx::fa3::kD128N128Varlen))
FLASHPTX_FA3_FWD_VARLEN_KERNEL(fa3_fwd_varlen_sm90_bf16_d256, flashptx::fa3::kD256Varlen)
FLASHPTX_FA3_FWD_VARLEN_KERNEL(fa3_fwd_varlen_sm90_fp16_d256,
                               flashptx::fa3::fp16(flashptx::fa3::kD256Varlen))

namespace flashptx {

#define FLASHPTX_FA3_FWD_ROW(name, config) \
  fa3_fwd_entry<config>(#name, reinterpret_cast<const void*>(&name), Family::kFa3Fwd)
#define FLASHPTX_FA3_FWD_VARLEN_ROW(name, config) \
  fa3_fwd_entry<config>(#name, reinterpret_cast<const void*>(&name), Family::kFa3FwdVarlen)

std::span<const KernelEntry> fa3_fwd_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d64_m128, kD64M128),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d64_m128, fp16(kD64M128)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d64_m192, kD64M192),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d64_m192, fp16(kD64M192)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d128_n128, kD128N128),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d128_n128, fp16(kD128N128)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d64_m128_paired, kD64M128Paired),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d64_m128_paired, fp16(kD64M128Paired)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d128_n128_paired, kD128N128Paired),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d128_n128_paired, fp16(kD128N128Paired)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d256, kD256),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d256, fp16(kD256)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d256_paired, kD256Paired),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d64_m192_paired, kD64M192Paired),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d64_m192_paired, fp16(kD64M192Paired)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d256_paired, fp16(kD256Paired)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d256_persistent, kD256Persistent),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d256_persistent, fp16(kD256Persistent)),
  };
  return rows;
}

std::span<const KernelEntry> fa3_fwd_varlen_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_FWD_VARLEN_ROW(fa3_fwd_varlen_sm90_bf16_d64_m128, kD64M128Varlen),
      FLASHPTX_FA3_FWD_VARLEN_ROW(fa3_fwd_varlen_sm90_fp16_d64_m128, fp16(kD64M128Varlen)),
      FLASHPTX_FA3_FWD_VARLEN_ROW(fa3_fwd_varlen_sm90_bf16_d128_n128, kD128N128Varlen),
      FLASHPTX_FA3_FWD_VARLEN_ROW(fa3_fwd_varlen_sm90_fp16_d128_n128, fp16(kD128N128Varlen)),
      FLASHPTX_FA3_FWD_VARLEN_ROW(fa3_fwd_varlen_sm90_bf16_d256, kD256Varlen),
      FLASHPTX_FA3_FWD_VARLEN_ROW(fa3_fwd_varlen_sm90_fp16_d256, fp16(kD256Varlen)),
  };
  return rows;
}

}  // namespace flashptx
