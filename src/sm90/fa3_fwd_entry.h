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
  return KernelEntry{.name = name,
                     .family = family,
                     .dtype = C.bf16 ? FLASHPTX_BF16 : FLASHPTX_FP16,
                     .head_dim = C.head_dim,
                     .block_m = L::kBlockM,
                     .block_n = C.block_n,
                     .stages = C.stages,
                     .consumer_wgs = C.consumer_wgs,
                     .pingpong = C.pingpong,
                     .persistent = C.persistent,
                     .threads = L::kThreads,
                     .smem_bytes = L::kSmemBytes,
                     .fn = fn,
                     .cluster_ctas = 1,
                     .paired = C.paired,
                     .dynamic = L::kDynamicWalk};
}

}  // namespace flashptx
