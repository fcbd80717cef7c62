// FA3 backward over packed variable-length sequences: the list of specializations. The varlen twin
// of each backward shape (src/sm90/fa3_bwd.cu: the same BwdConfig with BwdConfig::varlen), and the
// pre/postprocess bodies of src/sm90/fa3_bwd_aux.cuh with their Varlen flag, one per dtype. Every
// kernel takes BwdVarlenParams (src/sm90/fa3_bwd_config.h "variable-length batches": the main
// kernel's and the aux kernels' parameters and the sequence table, in the parameter block). The
// launch plan (src/plan.cpp plan_bwd_varlen) chooses the rows.
//
//   kernel           shape as               grid
//   bwd varlen d*    fa3_bwd_sm90_*_d*      (key blocks summed over the sequences, heads_q)
//                    (d96 and d192: the d128 and d256 shapes over zero columns, real_head_dim 96, 192;
//                    d192_v128: d256 with real_head_dim 192 and real_head_dim_v 128)
//   pre              fa3_bwd_pre_sm90_*     (padded query rows summed over the sequences / rows per CTA, heads_q)
//   post_dq          fa3_bwd_post_dq_*      (padded query blocks summed over the sequences, heads_q)
//   post_dkv (GQA)   fa3_bwd_post_dkv_*     (key blocks summed over the sequences, heads_kv)
#include "src/kernels.h"
#include "src/sm90/fa3_bwd.cuh"
#include "src/sm90/fa3_bwd_aux.cuh"
#include "src/sm90/fa3_bwd_entry.h"

#define FLASHPTX_FA3_BWD_VARLEN_KERNEL(name, config)                                                 \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::BwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::BwdVarlenParams p) {                              \
    flashptx::fa3::bwd::bwd_kernel_body<config>(p.bwd, &p.table);                                    \
  }

FLASHPTX_FA3_BWD_VARLEN_KERNEL(fa3_bwd_varlen_sm90_bf16_d64, flashptx::fa3::varlen(flashptx::fa3::kBwdD64))
FLASHPTX_FA3_BWD_VARLEN_KERNEL(fa3_bwd_varlen_sm90_fp16_d64,
                               flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kBwdD64)))
FLASHPTX_FA3_BWD_VARLEN_KERNEL(fa3_bwd_varlen_sm90_bf16_d128, flashptx::fa3::varlen(flashptx::fa3::kBwdD128))
FLASHPTX_FA3_BWD_VARLEN_KERNEL(fa3_bwd_varlen_sm90_fp16_d128,
                               flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kBwdD128)))
FLASHPTX_FA3_BWD_VARLEN_KERNEL(fa3_bwd_varlen_sm90_bf16_d256, flashptx::fa3::varlen(flashptx::fa3::kBwdD256))
FLASHPTX_FA3_BWD_VARLEN_KERNEL(fa3_bwd_varlen_sm90_fp16_d256,
                               flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kBwdD256)))
// Head dims 96 and 192: the d128 and d256 shapes over zero columns, their register stores bounded
// by the real columns (BwdConfig::real_head_dim).
FLASHPTX_FA3_BWD_VARLEN_KERNEL(fa3_bwd_varlen_sm90_bf16_d96,
                               flashptx::fa3::with_real_head_dim(flashptx::fa3::varlen(flashptx::fa3::kBwdD128), 96))
FLASHPTX_FA3_BWD_VARLEN_KERNEL(fa3_bwd_varlen_sm90_fp16_d96,
                               flashptx::fa3::with_real_head_dim(
                                   flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kBwdD128)), 96))
FLASHPTX_FA3_BWD_VARLEN_KERNEL(fa3_bwd_varlen_sm90_bf16_d192,
                               flashptx::fa3::with_real_head_dim(flashptx::fa3::varlen(flashptx::fa3::kBwdD256), 192))
FLASHPTX_FA3_BWD_VARLEN_KERNEL(fa3_bwd_varlen_sm90_fp16_d192,
                               flashptx::fa3::with_real_head_dim(
                                   flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kBwdD256)), 192))
// (head_dim, head_dim_v) = (192, 128): the d256 shape, V's, dO's and dV's columns past 128 zero, the
// register-stored dV rows bounded at 128 (BwdConfig::real_head_dim_v).
FLASHPTX_FA3_BWD_VARLEN_KERNEL(fa3_bwd_varlen_sm90_bf16_d192_v128,
                               flashptx::fa3::with_real_head_dims(flashptx::fa3::varlen(flashptx::fa3::kBwdD256), 192,
                                                                  128))
FLASHPTX_FA3_BWD_VARLEN_KERNEL(fa3_bwd_varlen_sm90_fp16_d192_v128,
                               flashptx::fa3::with_real_head_dims(
                                   flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kBwdD256)), 192, 128))

#define FLASHPTX_FA3_BWD_VARLEN_AUX_KERNEL(name, body, is_bf16)                                      \
  extern "C" __global__ void __launch_bounds__(256)                                                 \
      name(const __grid_constant__ flashptx::fa3::BwdVarlenParams p) {                              \
    flashptx::fa3::bwd::body<is_bf16, true>(p.aux, &p.table);                                        \
  }

FLASHPTX_FA3_BWD_VARLEN_AUX_KERNEL(fa3_bwd_varlen_pre_sm90_bf16, preprocess_body, true)
FLASHPTX_FA3_BWD_VARLEN_AUX_KERNEL(fa3_bwd_varlen_pre_sm90_fp16, preprocess_body, false)
FLASHPTX_FA3_BWD_VARLEN_AUX_KERNEL(fa3_bwd_varlen_post_dq_sm90_bf16, postprocess_dq_body, true)
FLASHPTX_FA3_BWD_VARLEN_AUX_KERNEL(fa3_bwd_varlen_post_dq_sm90_fp16, postprocess_dq_body, false)
FLASHPTX_FA3_BWD_VARLEN_AUX_KERNEL(fa3_bwd_varlen_post_dkv_sm90_bf16, postprocess_dkv_body, true)
FLASHPTX_FA3_BWD_VARLEN_AUX_KERNEL(fa3_bwd_varlen_post_dkv_sm90_fp16, postprocess_dkv_body, false)

namespace flashptx {

#define FLASHPTX_FA3_BWD_VARLEN_ROW(name, config) \
  fa3_bwd_entry<config>(#name, reinterpret_cast<const void*>(&name), Family::kFa3BwdVarlen)
#define FLASHPTX_FA3_BWD_VARLEN_AUX_ROW(name, family, dtype) \
  fa3_bwd_aux_entry(#name, Family::family, dtype, reinterpret_cast<const void*>(&name))

std::span<const KernelEntry> fa3_bwd_varlen_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_BWD_VARLEN_ROW(fa3_bwd_varlen_sm90_bf16_d64, varlen(kBwdD64)),
      FLASHPTX_FA3_BWD_VARLEN_ROW(fa3_bwd_varlen_sm90_fp16_d64, varlen(fp16(kBwdD64))),
      FLASHPTX_FA3_BWD_VARLEN_ROW(fa3_bwd_varlen_sm90_bf16_d128, varlen(kBwdD128)),
      FLASHPTX_FA3_BWD_VARLEN_ROW(fa3_bwd_varlen_sm90_fp16_d128, varlen(fp16(kBwdD128))),
      FLASHPTX_FA3_BWD_VARLEN_ROW(fa3_bwd_varlen_sm90_bf16_d256, varlen(kBwdD256)),
      FLASHPTX_FA3_BWD_VARLEN_ROW(fa3_bwd_varlen_sm90_fp16_d256, varlen(fp16(kBwdD256))),
      FLASHPTX_FA3_BWD_VARLEN_ROW(fa3_bwd_varlen_sm90_bf16_d96, with_real_head_dim(varlen(kBwdD128), 96)),
      FLASHPTX_FA3_BWD_VARLEN_ROW(fa3_bwd_varlen_sm90_fp16_d96, with_real_head_dim(varlen(fp16(kBwdD128)), 96)),
      FLASHPTX_FA3_BWD_VARLEN_ROW(fa3_bwd_varlen_sm90_bf16_d192, with_real_head_dim(varlen(kBwdD256), 192)),
      FLASHPTX_FA3_BWD_VARLEN_ROW(fa3_bwd_varlen_sm90_fp16_d192, with_real_head_dim(varlen(fp16(kBwdD256)), 192)),
      FLASHPTX_FA3_BWD_VARLEN_ROW(fa3_bwd_varlen_sm90_bf16_d192_v128, with_real_head_dims(varlen(kBwdD256), 192, 128)),
      FLASHPTX_FA3_BWD_VARLEN_ROW(fa3_bwd_varlen_sm90_fp16_d192_v128,
                                  with_real_head_dims(varlen(fp16(kBwdD256)), 192, 128)),
      FLASHPTX_FA3_BWD_VARLEN_AUX_ROW(fa3_bwd_varlen_pre_sm90_bf16, kFa3BwdVarlenPre, FLASHPTX_BF16),
      FLASHPTX_FA3_BWD_VARLEN_AUX_ROW(fa3_bwd_varlen_pre_sm90_fp16, kFa3BwdVarlenPre, FLASHPTX_FP16),
      FLASHPTX_FA3_BWD_VARLEN_AUX_ROW(fa3_bwd_varlen_post_dq_sm90_bf16, kFa3BwdVarlenPostDq, FLASHPTX_BF16),
      FLASHPTX_FA3_BWD_VARLEN_AUX_ROW(fa3_bwd_varlen_post_dq_sm90_fp16, kFa3BwdVarlenPostDq, FLASHPTX_FP16),
      FLASHPTX_FA3_BWD_VARLEN_AUX_ROW(fa3_bwd_varlen_post_dkv_sm90_bf16, kFa3BwdVarlenPostDkv, FLASHPTX_BF16),
      FLASHPTX_FA3_BWD_VARLEN_AUX_ROW(fa3_bwd_varlen_post_dkv_sm90_fp16, kFa3BwdVarlenPostDkv, FLASHPTX_FP16),
  };
  return rows;
}

}  // namespace flashptx
