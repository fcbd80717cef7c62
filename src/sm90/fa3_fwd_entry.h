// The kernel-table row of an FA3 forward specialization, from its configuration: what the launch
// plan reads (src/plan.cpp) derived from FwdConfig and FwdLayout, so that a row cannot disagree
// with the kernel it names. Used by every translation unit that instantiates forward kernels
// (src/sm90/fa3_fwd.cu and the traced builds src/sm90/fa3_fwd_trace*.cu).
#pragma once
#include "src/kernels.h"
#include "src/sm90/fa3_fwd_config.h"

namespace flashptx {

constexpr const char* o_staging_name(fa3::OStaging o) {
  return o == fa3::OStaging::kOwn ? "own" : (o == fa3::OStaging::kHalves ? "halves" : "in_q");
}
// Every FwdConfig field the row's own columns do not carry (pingpong, persistent, paired and
// dynamic_walk are columns), in field order.
template <fa3::FwdConfig C>
inline constexpr KernelSwitch kFa3FwdSwitches[] = {
    {"head_dim_v", C.head_dim_v},
    {"varlen", C.varlen},
    {"tile_feed", C.tile_feed},
    {"walk_ahead", C.walk_ahead},
    {"q_slots", C.q_slots},
    {"producer_regs", C.producer_regs},
    {"consumer_regs", C.consumer_regs},
    {"o_staging", static_cast<int>(C.o_staging), o_staging_name(C.o_staging)},
    {"skip_blocks", C.skip_blocks},
    {"half_first", C.half_first},
    {"tree_max", C.tree_max},
    {"lazy_rescale", C.lazy_rescale},
    {"defer_epilogue", C.defer_epilogue},
    {"traced", C.traced},
    {"window", C.window},
    {"softcap", C.softcap},
    {"sinks", C.sinks},
    {"sinks_optional", C.sinks_optional},
};

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
                     .dynamic = C.dynamic_walk,
                     .head_dim_v = C.head_dim_v,
                     .switches = kFa3FwdSwitches<C>};
}

}  // namespace flashptx
