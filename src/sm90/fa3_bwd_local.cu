// FA3 backward with the sliding window and the softcap (BwdConfig::local): the list of
// specializations. One kernel per backward shape and dtype (kBwdD64, kBwdD128, kBwdD256 of
// src/sm90/fa3_bwd_config.h), fixed-length and varlen (varlen also at 96, 192 and (192, 128): the
// d128 and d256 shapes with BwdConfig::real_head_dim and real_head_dim_v), the window and the softcap both run-time
// values (BwdLocal), as the forward's local kernels (src/sm90/fa3_fwd_local.cu). The fixed-length
// kernels take BwdLocalParams, the varlen ones BwdVarlenLocalParams (the varlen aux kernels of
// src/sm90/fa3_bwd_varlen.cu read its leading BwdVarlenParams; the fixed-length aux kernels of
// src/sm90/fa3_bwd.cu their BwdAuxParams as without modifiers). The launch plan (src/plan.cpp
// plan_bwd_family, plan_bwd_varlen) runs them for a bounded window or a softcap only.
//
//   kernel                 shape as               walk
//   bwd local d*           fa3_bwd_sm90_*_d*      the window's query blocks: masked head,
//   bwd varlen local d*    fa3_bwd_varlen_sm90_*  unmasked middle, masked tail (src/protocol/bwd_window.h)
#include "src/kernels.h"
#include "src/sm90/fa3_bwd.cuh"
#include "src/sm90/fa3_bwd_entry.h"

#define FLASHPTX_FA3_BWD_LOCAL_KERNEL(name, config)                                                  \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::BwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::BwdLocalParams p) {                               \
    flashptx::fa3::bwd::bwd_kernel_body<config>(p.bwd, nullptr, &p.local);                           \
  }
#define FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(name, config)                                           \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::BwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::BwdVarlenLocalParams p) {                         \
    flashptx::fa3::bwd::bwd_kernel_body<config>(p.v.bwd, &p.v.table, &p.local);                      \
  }

FLASHPTX_FA3_BWD_LOCAL_KERNEL(fa3_bwd_local_sm90_bf16_d64, flashptx::fa3::local(flashptx::fa3::kBwdD64))
FLASHPTX_FA3_BWD_LOCAL_KERNEL(fa3_bwd_local_sm90_fp16_d64,
                              flashptx::fa3::local(flashptx::fa3::fp16(flashptx::fa3::kBwdD64)))
FLASHPTX_FA3_BWD_LOCAL_KERNEL(fa3_bwd_local_sm90_bf16_d128, flashptx::fa3::local(flashptx::fa3::kBwdD128))
FLASHPTX_FA3_BWD_LOCAL_KERNEL(fa3_bwd_local_sm90_fp16_d128,
                              flashptx::fa3::local(flashptx::fa3::fp16(flashptx::fa3::kBwdD128)))
FLASHPTX_FA3_BWD_LOCAL_KERNEL(fa3_bwd_local_sm90_bf16_d256, flashptx::fa3::local(flashptx::fa3::kBwdD256))
FLASHPTX_FA3_BWD_LOCAL_KERNEL(fa3_bwd_local_sm90_fp16_d256,
                              flashptx::fa3::local(flashptx::fa3::fp16(flashptx::fa3::kBwdD256)))

FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(fa3_bwd_varlen_local_sm90_bf16_d64,
                                     flashptx::fa3::local(flashptx::fa3::varlen(flashptx::fa3::kBwdD64)))
FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(fa3_bwd_varlen_local_sm90_fp16_d64,
                                     flashptx::fa3::local(flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kBwdD64))))
FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(fa3_bwd_varlen_local_sm90_bf16_d128,
                                     flashptx::fa3::local(flashptx::fa3::varlen(flashptx::fa3::kBwdD128)))
FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(fa3_bwd_varlen_local_sm90_fp16_d128,
                                     flashptx::fa3::local(flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kBwdD128))))
FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(fa3_bwd_varlen_local_sm90_bf16_d256,
                                     flashptx::fa3::local(flashptx::fa3::varlen(flashptx::fa3::kBwdD256)))
FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(fa3_bwd_varlen_local_sm90_fp16_d256,
                                     flashptx::fa3::local(flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kBwdD256))))
// Head dims 96 and 192 (varlen): the d128 and d256 shapes over zero columns, their register stores
// bounded by the real columns (BwdConfig::real_head_dim). The fixed-length local kernels serve 96
// and 192 as they are (src/plan.cpp plan_bwd_family: bwd_kernel_head_dim).
FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(
    fa3_bwd_varlen_local_sm90_bf16_d96,
    flashptx::fa3::with_real_head_dim(flashptx::fa3::local(flashptx::fa3::varlen(flashptx::fa3::kBwdD128)), 96))
FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(
    fa3_bwd_varlen_local_sm90_fp16_d96,
    flashptx::fa3::with_real_head_dim(
        flashptx::fa3::local(flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kBwdD128))), 96))
FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(
    fa3_bwd_varlen_local_sm90_bf16_d192,
    flashptx::fa3::with_real_head_dim(flashptx::fa3::local(flashptx::fa3::varlen(flashptx::fa3::kBwdD256)), 192))
FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(
    fa3_bwd_varlen_local_sm90_fp16_d192,
    flashptx::fa3::with_real_head_dim(
        flashptx::fa3::local(flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kBwdD256))), 192))
// (192, 128) (varlen): d256, the dV register stores bounded at V's 128 columns (real_head_dim_v).
FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(
    fa3_bwd_varlen_local_sm90_bf16_d192_v128,
    flashptx::fa3::with_real_head_dims(flashptx::fa3::local(flashptx::fa3::varlen(flashptx::fa3::kBwdD256)), 192,
                                       128))
FLASHPTX_FA3_BWD_VARLEN_LOCAL_KERNEL(
    fa3_bwd_varlen_local_sm90_fp16_d192_v128,
    flashptx::fa3::with_real_head_dims(
        flashptx::fa3::local(flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kBwdD256))), 192, 128))

namespace flashptx {

#define FLASHPTX_FA3_BWD_LOCAL_ROW(name, config, family) \
  fa3_bwd_entry<config>(#name, reinterpret_cast<const void*>(&name), Family::family)

std::span<const KernelEntry> fa3_bwd_local_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_local_sm90_bf16_d64, local(kBwdD64), kFa3Bwd),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_local_sm90_fp16_d64, local(fp16(kBwdD64)), kFa3Bwd),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_local_sm90_bf16_d128, local(kBwdD128), kFa3Bwd),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_local_sm90_fp16_d128, local(fp16(kBwdD128)), kFa3Bwd),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_local_sm90_bf16_d256, local(kBwdD256), kFa3Bwd),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_local_sm90_fp16_d256, local(fp16(kBwdD256)), kFa3Bwd),
  };
  return rows;
}

std::span<const KernelEntry> fa3_bwd_varlen_local_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_varlen_local_sm90_bf16_d64, local(varlen(kBwdD64)), kFa3BwdVarlen),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_varlen_local_sm90_fp16_d64, local(varlen(fp16(kBwdD64))), kFa3BwdVarlen),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_varlen_local_sm90_bf16_d128, local(varlen(kBwdD128)), kFa3BwdVarlen),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_varlen_local_sm90_fp16_d128, local(varlen(fp16(kBwdD128))), kFa3BwdVarlen),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_varlen_local_sm90_bf16_d256, local(varlen(kBwdD256)), kFa3BwdVarlen),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_varlen_local_sm90_fp16_d256, local(varlen(fp16(kBwdD256))), kFa3BwdVarlen),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_varlen_local_sm90_bf16_d96, with_real_head_dim(local(varlen(kBwdD128)), 96),
                                 kFa3BwdVarlen),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_varlen_local_sm90_fp16_d96,
                                 with_real_head_dim(local(varlen(fp16(kBwdD128))), 96), kFa3BwdVarlen),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_varlen_local_sm90_bf16_d192,
                                 with_real_head_dim(local(varlen(kBwdD256)), 192), kFa3BwdVarlen),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_varlen_local_sm90_fp16_d192,
                                 with_real_head_dim(local(varlen(fp16(kBwdD256))), 192), kFa3BwdVarlen),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_varlen_local_sm90_bf16_d192_v128,
                                 with_real_head_dims(local(varlen(kBwdD256)), 192, 128), kFa3BwdVarlen),
      FLASHPTX_FA3_BWD_LOCAL_ROW(fa3_bwd_varlen_local_sm90_fp16_d192_v128,
                                 with_real_head_dims(local(varlen(fp16(kBwdD256))), 192, 128), kFa3BwdVarlen),
  };
  return rows;
}

}  // namespace flashptx
