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
#include "src/kernels.h"
#include "src/sm90/fa3_bwd.cuh"
#include "src/sm90/fa3_bwd_aux.cuh"

namespace flashptx::fa3 {

constexpr BwdConfig kBwdD64 = {.head_dim = 64, .block_m = 128, .stages = 2, .bf16 = true, .block_n = 128,
                                .do_stages = 2, .split = BwdSplit::kSplitKeys, .dq_split_rows = true};
constexpr BwdConfig kBwdD128 = {.head_dim = 128, .block_m = 64, .stages = 2, .bf16 = true, .block_n = 128,
                                .do_stages = 2, .split = BwdSplit::kSplitKeys, .dq_split_rows = false};
constexpr BwdConfig kBwdD256 = {.head_dim = 256, .block_m = 64, .stages = 2, .bf16 = true, .block_n = 64,
                                .do_stages = 1, .split = BwdSplit::kSplitHeadDim, .dq_split_rows = false};
constexpr BwdConfig fp16(BwdConfig c) {
  c.bf16 = false;
  return c;
}

}  // namespace flashptx::fa3

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

// The BwdConfig switches beside the row's columns, in field order, and the fixed register split.
template <fa3::BwdConfig C>
inline constexpr KernelSwitch kFa3BwdSwitches[] = {
    {"do_stages", C.do_stages},
    {"split", static_cast<int>(C.split), C.split == fa3::BwdSplit::kSplitKeys ? "split_keys" : "split_head_dim"},
    {"dq_split_rows", C.dq_split_rows},
    {"producer_regs", fa3::BwdLayout<C>::kProducerRegs},
    {"mma_regs", fa3::BwdLayout<C>::kMmaRegs},
};
template <fa3::BwdConfig C>
KernelEntry fa3_bwd_entry(const char* name, const void* fn) {
  using L = fa3::BwdLayout<C>;
  return KernelEntry{.name = name,
                     .family = Family::kFa3Bwd,
                     .dtype = C.bf16 ? FLASHPTX_BF16 : FLASHPTX_FP16,
                     .head_dim = C.head_dim,
                     .block_m = C.block_m,
                     .block_n = L::kBlockN,
                     .stages = C.stages,
                     .consumer_wgs = L::kMmaWGs,
                     .pingpong = false,
                     .persistent = false,
                     .threads = L::kThreads,
                     .smem_bytes = L::kSmemBytes,
                     .fn = fn,
                     .switches = kFa3BwdSwitches<C>};
}
static KernelEntry aux_entry(const char* name, Family f, flashptx_dtype t, const void* fn) {
  // A pre/postprocess kernel: no head dimension, tiles, rings or dynamic shared memory.
  return KernelEntry{.name = name, .family = f, .dtype = t, .threads = 256, .fn = fn};
}
#define FLASHPTX_FA3_BWD_ROW(name, config) fa3_bwd_entry<config>(#name, reinterpret_cast<const void*>(&name))
#define FLASHPTX_FA3_BWD_AUX_ROW(name, family, dtype) \
  aux_entry(#name, Family::family, dtype, reinterpret_cast<const void*>(&name))

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
