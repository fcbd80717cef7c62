// FA3 forward, the local kernels: the sliding window and the softcap (FwdConfig::window and
// FwdConfig::softcap, both read from FwdParams at run time: window_left/right, softcap_prescale).
// One kernel per head dim and dtype, fixed-length and varlen (src/sm90/fa3_fwd_config.h, "the local
// kernels"): the shapes of the varlen kernels, one tile per CTA, every warpgroup on every block of
// its tile. A problem with neither a window nor a softcap never runs them (src/plan.cpp), so the
// kernels of src/sm90/fa3_fwd.cu and their goldens are untouched by the variants; why one kernel
// per shape, not one per variant: docs/DECISIONS.md, "Sliding window and softcap: one local kernel
// per shape". Their own translation unit, beside the others in the build.
//
//   kernel                        block_m x block_n  stages  O staging
//   fa3_fwd_local_sm90_*_d64      128 x 128          3       own
//   fa3_fwd_local_sm90_*_d128     128 x 128          2       own
//   fa3_fwd_local_sm90_*_d256     128 x 64           2       in Q
//   fa3_fwd_varlen_local_sm90_*   the same over packed variable-length sequences (FwdVarlenParams)
#include "src/kernels.h"
#include "src/sm90/fa3_fwd.cuh"
#include "src/sm90/fa3_fwd_entry.h"

#define FLASHPTX_FA3_FWD_LOCAL_KERNEL(name, config)                                                  \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::FwdParams p) {                                    \
    flashptx::fa3::fwd_kernel_body<config>(p);                                                       \
  }
#define FLASHPTX_FA3_FWD_VARLEN_LOCAL_KERNEL(name, config)                                           \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::FwdVarlenParams p) {                              \
    flashptx::fa3::fwd_kernel_body<config>(p.fwd, &p.table);                                         \
  }

FLASHPTX_FA3_FWD_LOCAL_KERNEL(fa3_fwd_local_sm90_bf16_d64, flashptx::fa3::kD64M128Local)
FLASHPTX_FA3_FWD_LOCAL_KERNEL(fa3_fwd_local_sm90_fp16_d64, flashptx::fa3::fp16(flashptx::fa3::kD64M128Local))
FLASHPTX_FA3_FWD_LOCAL_KERNEL(fa3_fwd_local_sm90_bf16_d128, flashptx::fa3::kD128N128Local)
FLASHPTX_FA3_FWD_LOCAL_KERNEL(fa3_fwd_local_sm90_fp16_d128, flashptx::fa3::fp16(flashptx::fa3::kD128N128Local))
FLASHPTX_FA3_FWD_LOCAL_KERNEL(fa3_fwd_local_sm90_bf16_d256, flashptx::fa3::kD256Local)
FLASHPTX_FA3_FWD_LOCAL_KERNEL(fa3_fwd_local_sm90_fp16_d256, flashptx::fa3::fp16(flashptx::fa3::kD256Local))

FLASHPTX_FA3_FWD_VARLEN_LOCAL_KERNEL(fa3_fwd_varlen_local_sm90_bf16_d64, flashptx::fa3::packed(flashptx::fa3::kD64M128Local))
FLASHPTX_FA3_FWD_VARLEN_LOCAL_KERNEL(fa3_fwd_varlen_local_sm90_fp16_d64,
                                     flashptx::fa3::fp16(flashptx::fa3::packed(flashptx::fa3::kD64M128Local)))
FLASHPTX_FA3_FWD_VARLEN_LOCAL_KERNEL(fa3_fwd_varlen_local_sm90_bf16_d128, flashptx::fa3::packed(flashptx::fa3::kD128N128Local))
FLASHPTX_FA3_FWD_VARLEN_LOCAL_KERNEL(fa3_fwd_varlen_local_sm90_fp16_d128,
                                     flashptx::fa3::fp16(flashptx::fa3::packed(flashptx::fa3::kD128N128Local)))
FLASHPTX_FA3_FWD_VARLEN_LOCAL_KERNEL(fa3_fwd_varlen_local_sm90_bf16_d256, flashptx::fa3::packed(flashptx::fa3::kD256Local))
FLASHPTX_FA3_FWD_VARLEN_LOCAL_KERNEL(fa3_fwd_varlen_local_sm90_fp16_d256,
                                     flashptx::fa3::fp16(flashptx::fa3::packed(flashptx::fa3::kD256Local)))

namespace flashptx {

#define FLASHPTX_FA3_FWD_LOCAL_ROW(name, config, family) \
  fa3_fwd_entry<config>(#name, reinterpret_cast<const void*>(&name), family)

std::span<const KernelEntry> fa3_fwd_local_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_FWD_LOCAL_ROW(fa3_fwd_local_sm90_bf16_d64, kD64M128Local, Family::kFa3Fwd),
      FLASHPTX_FA3_FWD_LOCAL_ROW(fa3_fwd_local_sm90_fp16_d64, fp16(kD64M128Local), Family::kFa3Fwd),
      FLASHPTX_FA3_FWD_LOCAL_ROW(fa3_fwd_local_sm90_bf16_d128, kD128N128Local, Family::kFa3Fwd),
      FLASHPTX_FA3_FWD_LOCAL_ROW(fa3_fwd_local_sm90_fp16_d128, fp16(kD128N128Local), Family::kFa3Fwd),
      FLASHPTX_FA3_FWD_LOCAL_ROW(fa3_fwd_local_sm90_bf16_d256, kD256Local, Family::kFa3Fwd),
      FLASHPTX_FA3_FWD_LOCAL_ROW(fa3_fwd_local_sm90_fp16_d256, fp16(kD256Local), Family::kFa3Fwd),
  };
  return rows;
}

std::span<const KernelEntry> fa3_fwd_varlen_local_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_FWD_LOCAL_ROW(fa3_fwd_varlen_local_sm90_bf16_d64, packed(kD64M128Local), Family::kFa3FwdVarlen),
      FLASHPTX_FA3_FWD_LOCAL_ROW(fa3_fwd_varlen_local_sm90_fp16_d64, fp16(packed(kD64M128Local)), Family::kFa3FwdVarlen),
      FLASHPTX_FA3_FWD_LOCAL_ROW(fa3_fwd_varlen_local_sm90_bf16_d128, packed(kD128N128Local), Family::kFa3FwdVarlen),
      FLASHPTX_FA3_FWD_LOCAL_ROW(fa3_fwd_varlen_local_sm90_fp16_d128, fp16(packed(kD128N128Local)), Family::kFa3FwdVarlen),
      FLASHPTX_FA3_FWD_LOCAL_ROW(fa3_fwd_varlen_local_sm90_bf16_d256, packed(kD256Local), Family::kFa3FwdVarlen),
      FLASHPTX_FA3_FWD_LOCAL_ROW(fa3_fwd_varlen_local_sm90_fp16_d256, fp16(packed(kD256Local)), Family::kFa3FwdVarlen),
  };
  return rows;
}

}  // namespace flashptx
