// The kernel-table row of an FA3 forward specialization, from its configuration: what the launch
// plan reads (src/plan.cpp) derived from FwdConfig and FwdLayout, so that a row cannot disagree
// with the kernel it names. Used by every translation unit that instantiates forward kernels
// (src/sm90/fa3_fwd.cu and the traced builds src/sm90/fa3_fwd_trace*.cu).
#pragma once
#include "src/kernels.h"
#include "src/sm90/fa3_fwd_config.h"

namespace flashptx {

template <fa3::FwdConfig C>
KernelEntry fa3_fwd_entry(const char* name, const void* fn, Family family) {
  using L = fa3::FwdLayout<C>;
  return KernelEntry{name,         family,           C.bf16 ? FLASHPTX_BF16 : FLASHPTX_FP16,
                     C.head_dim,   L::kBlockM,       C.block_n,
                     C.stages,     C.consumer_wgs,   C.pingpong,
                     C.persistent, L::kThreads,      L::kSmemBytes,
                     fn,           1,                C.paired,
                     L::kDynamicWalk};
}

}  // namespace flashptx
