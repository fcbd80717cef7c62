// FA3 forward, the score modifiers at head dims 96 and 192 and at d_qk 192 with d_v 128: the
// sliding window, the softcap and the learnable attention sinks (FwdConfig::window, ::softcap,
// ::sinks with ::sinks_optional; window_left/right, softcap_prescale and sinks read from FwdParams
// at run time) in one kernel per shape and dtype (src/sm90/fa3_fwd_config.h kD96Local, kD192Local,
// kD192V128Local): the shapes of src/sm90/fa3_fwd_hdim.cu's kernels, one tile per CTA, every
// warpgroup on every block of its tile, the main loop of the local kernels (Consumer::
// run_local_blocks) and the sink epilogue, whose sink is -inf (none) where FwdParams::sinks is null.
// A problem with neither a window, a softcap nor sinks never runs them (src/plan.cpp), so the plain
// kernels at these dims and their goldens are untouched; why one kernel with optional sinks, not a
// local and a sink kernel per shape: docs/DECISIONS.md, "Score modifiers at head dims 96 and 192:
// one kernel with optional sinks". Their varlen twins (packed(kD96Local) etc., FwdVarlenParams) are
// the varlen forward at these dims, plain as well as with a window and a softcap: one kernel per
// shape and dtype (docs/DECISIONS.md, "Varlen at head dims 96 and 192: the local kernel serves the
// plain varlen too"; the varlen ABI has no sinks, so their FwdParams::sinks is null, the -inf sink
// that is none). Their own translation unit, beside the others in the build.
//
//   kernel                                d_qk  d_v  block_m x block_n  stages  O staging
//   fa3_fwd_local_sm90_*_d96                96   96  128 x 128          2       own
//   fa3_fwd_local_sm90_*_d192              192  192  128 x 112          2       in Q
//   fa3_fwd_local_sm90_*_d192_v128         192  128  128 x 128          2       in Q
//   fa3_fwd_varlen_local_sm90_*            the same over packed variable-length sequences
#include "src/kernels.h"
#include "src/sm90/fa3_fwd.cuh"
#include "src/sm90/fa3_fwd_entry.h"

#define FLASHPTX_FA3_FWD_HDIM_LOCAL_KERNEL(name, config)                                             \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::FwdParams p) {                                    \
    flashptx::fa3::fwd_kernel_body<config>(p);                                                       \
  }
#define FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_KERNEL(name, config)                                      \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::FwdVarlenParams p) {                              \
    flashptx::fa3::fwd_kernel_body<config>(p.fwd, &p.table);                                         \
  }

FLASHPTX_FA3_FWD_HDIM_LOCAL_KERNEL(fa3_fwd_local_sm90_bf16_d96, flashptx::fa3::kD96Local)
FLASHPTX_FA3_FWD_HDIM_LOCAL_KERNEL(fa3_fwd_local_sm90_fp16_d96, flashptx::fa3::fp16(flashptx::fa3::kD96Local))
FLASHPTX_FA3_FWD_HDIM_LOCAL_KERNEL(fa3_fwd_local_sm90_bf16_d192, flashptx::fa3::kD192Local)
FLASHPTX_FA3_FWD_HDIM_LOCAL_KERNEL(fa3_fwd_local_sm90_fp16_d192, flashptx::fa3::fp16(flashptx::fa3::kD192Local))
FLASHPTX_FA3_FWD_HDIM_LOCAL_KERNEL(fa3_fwd_local_sm90_bf16_d192_v128, flashptx::fa3::kD192V128Local)
FLASHPTX_FA3_FWD_HDIM_LOCAL_KERNEL(fa3_fwd_local_sm90_fp16_d192_v128,
                                   flashptx::fa3::fp16(flashptx::fa3::kD192V128Local))

FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_KERNEL(fa3_fwd_varlen_local_sm90_bf16_d96, flashptx::fa3::packed(flashptx::fa3::kD96Local))
FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_KERNEL(fa3_fwd_varlen_local_sm90_fp16_d96,
                                          flashptx::fa3::fp16(flashptx::fa3::packed(flashptx::fa3::kD96Local)))
FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_KERNEL(fa3_fwd_varlen_local_sm90_bf16_d192, flashptx::fa3::packed(flashptx::fa3::kD192Local))
FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_KERNEL(fa3_fwd_varlen_local_sm90_fp16_d192,
                                          flashptx::fa3::fp16(flashptx::fa3::packed(flashptx::fa3::kD192Local)))
FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_KERNEL(fa3_fwd_varlen_local_sm90_bf16_d192_v128,
                                          flashptx::fa3::packed(flashptx::fa3::kD192V128Local))
FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_KERNEL(fa3_fwd_varlen_local_sm90_fp16_d192_v128,
                                          flashptx::fa3::fp16(flashptx::fa3::packed(flashptx::fa3::kD192V128Local)))

namespace flashptx {

#define FLASHPTX_FA3_FWD_HDIM_LOCAL_ROW(name, config) \
  fa3_fwd_entry<config>(#name, reinterpret_cast<const void*>(&name), Family::kFa3Fwd)
#define FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_ROW(name, config) \
  fa3_fwd_entry<config>(#name, reinterpret_cast<const void*>(&name), Family::kFa3FwdVarlen)

std::span<const KernelEntry> fa3_fwd_hdim_local_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_FWD_HDIM_LOCAL_ROW(fa3_fwd_local_sm90_bf16_d96, kD96Local),
      FLASHPTX_FA3_FWD_HDIM_LOCAL_ROW(fa3_fwd_local_sm90_fp16_d96, fp16(kD96Local)),
      FLASHPTX_FA3_FWD_HDIM_LOCAL_ROW(fa3_fwd_local_sm90_bf16_d192, kD192Local),
      FLASHPTX_FA3_FWD_HDIM_LOCAL_ROW(fa3_fwd_local_sm90_fp16_d192, fp16(kD192Local)),
      FLASHPTX_FA3_FWD_HDIM_LOCAL_ROW(fa3_fwd_local_sm90_bf16_d192_v128, kD192V128Local),
      FLASHPTX_FA3_FWD_HDIM_LOCAL_ROW(fa3_fwd_local_sm90_fp16_d192_v128, fp16(kD192V128Local)),
  };
  return rows;
}

std::span<const KernelEntry> fa3_fwd_varlen_hdim_local_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_ROW(fa3_fwd_varlen_local_sm90_bf16_d96, packed(kD96Local)),
      FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_ROW(fa3_fwd_varlen_local_sm90_fp16_d96, fp16(packed(kD96Local))),
      FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_ROW(fa3_fwd_varlen_local_sm90_bf16_d192, packed(kD192Local)),
      FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_ROW(fa3_fwd_varlen_local_sm90_fp16_d192, fp16(packed(kD192Local))),
      FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_ROW(fa3_fwd_varlen_local_sm90_bf16_d192_v128, packed(kD192V128Local)),
      FLASHPTX_FA3_FWD_VARLEN_HDIM_LOCAL_ROW(fa3_fwd_varlen_local_sm90_fp16_d192_v128, fp16(packed(kD192V128Local))),
  };
  return rows;
}

}  // namespace flashptx
