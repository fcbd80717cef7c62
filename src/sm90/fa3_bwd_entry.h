// The kernel-table row of an FA3 backward specialization, from its configuration (BwdConfig and
// BwdLayout), so that a row cannot disagree with the kernel it names; and the rows of the pre and
// postprocess kernels. Used by the translation units that instantiate backward kernels
// (src/sm90/fa3_bwd.cu, src/sm90/fa3_bwd_varlen.cu, src/sm90/fa3_bwd_local.cu).
#pragma once
#include "src/kernels.h"
#include "src/sm90/fa3_bwd_config.h"

namespace flashptx {

// The BwdConfig switches beside the row's columns, in field order, and the fixed register split.
template <fa3::BwdConfig C>
inline constexpr KernelSwitch kFa3BwdSwitches[] = {
    {"kernel_head_dim", C.head_dim},  // the tiles' (the row's head_dim is the caller's: real_head_dim)
    {"do_stages", C.do_stages},
    {"split", static_cast<int>(C.split), C.split == fa3::BwdSplit::kSplitKeys ? "split_keys" : "split_head_dim"},
    {"dq_split_rows", C.dq_split_rows},
    {"varlen", C.varlen},
    {"local", C.local},
    {"producer_regs", fa3::BwdLayout<C>::kProducerRegs},
    {"mma_regs", fa3::BwdLayout<C>::kMmaRegs},
};
template <fa3::BwdConfig C>
KernelEntry fa3_bwd_entry(const char* name, const void* fn, Family family) {
  using L = fa3::BwdLayout<C>;
  return KernelEntry{.name = name,
                     .family = family,
                     .dtype = C.bf16 ? FLASHPTX_BF16 : FLASHPTX_FP16,
                     .head_dim = C.real_head_dim,  // the head dim the kernel serves (96 on a d128 shape)
                     .block_m = C.block_m,
                     .block_n = L::kBlockN,
                     .stages = C.stages,
                     .consumer_wgs = L::kMmaWGs,
                     .pingpong = false,
                     .persistent = false,
                     .threads = L::kThreads,
                     .smem_bytes = L::kSmemBytes,
                     .fn = fn,
                     // V's head dim where it is not the row's (varlen (192, 128)); 0: head_dim
                     .head_dim_v = C.real_head_dim_v != C.real_head_dim ? C.real_head_dim_v : 0,
                     .switches = kFa3BwdSwitches<C>};
}
// A pre/postprocess kernel: no head dimension, tiles, rings or dynamic shared memory.
inline KernelEntry fa3_bwd_aux_entry(const char* name, Family f, flashptx_dtype t, const void* fn) {
  return KernelEntry{.name = name, .family = f, .dtype = t, .threads = 256, .fn = fn};
}

}  // namespace flashptx
