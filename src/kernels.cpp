// The kernel table (src/kernels.h): the families' rows, concatenated once.
#include "src/kernels.h"

#include <vector>

namespace flashptx {

const char* family_name(Family f) {
  switch (f) {
    case Family::kFa3Fwd: return "fa3_fwd";
    case Family::kFa3FwdTraced: return "fa3_fwd_traced";
    case Family::kFa3FwdVarlen: return "fa3_fwd_varlen";
    case Family::kFa3Bwd: return "fa3_bwd";
    case Family::kFa3BwdPre: return "fa3_bwd_pre";
    case Family::kFa3BwdPostDq: return "fa3_bwd_post_dq";
    case Family::kFa3BwdPostDkv: return "fa3_bwd_post_dkv";
    case Family::kFa4Fwd: return "fa4_fwd";
    case Family::kFa4Bwd: return "fa4_bwd";
    case Family::kFa4BwdPre: return "fa4_bwd_pre";
    case Family::kFa4BwdPostDq: return "fa4_bwd_post_dq";
    case Family::kFa4BwdPostDkv: return "fa4_bwd_post_dkv";
    case Family::kFa3FwdFp8: return "fa3_fwd_fp8";
    case Family::kFa3FwdKvcache: return "fa3_fwd_kvcache";
    case Family::kFa3FwdKvcacheCombine: return "fa3_fwd_kvcache_combine";
    case Family::kFa3FwdKvcacheAppend: return "fa3_fwd_kvcache_append";
    case Family::kFa3BwdSink: return "fa3_bwd_sink";
    case Family::kFa3BwdVarlen: return "fa3_bwd_varlen";
    case Family::kFa3BwdVarlenPre: return "fa3_bwd_varlen_pre";
    case Family::kFa3BwdVarlenPostDq: return "fa3_bwd_varlen_post_dq";
    case Family::kFa3BwdVarlenPostDkv: return "fa3_bwd_varlen_post_dkv";
  }
  return "unknown";
}

std::span<const KernelEntry> kernel_table() {
  static const std::vector<KernelEntry> table = [] {
    std::vector<KernelEntry> t;
    for (auto rows : {fa3_fwd_kernels(), fa3_fwd_traced_kernels(), fa3_fwd_traced_paired_kernels(),
                      fa3_fwd_traced_d64_kernels(), fa3_fwd_varlen_kernels(), fa3_fwd_local_kernels(),
                      fa3_fwd_varlen_local_kernels(), fa3_fwd_sink_kernels(), fa3_fwd_fp8_kernels(),
                      fa3_bwd_kernels(), fa3_bwd_sink_kernels(), fa3_bwd_varlen_kernels(),
                      fa3_bwd_local_kernels(), fa3_bwd_varlen_local_kernels(),
                      fa4_fwd_kernels(), fa4_bwd_kernels(), fa4_bwd_pair_kernels(),
                      fa3_fwd_kvcache_kernels(), fa3_fwd_hdim_kernels(),
                      fa3_fwd_hdim_local_kernels(), fa3_fwd_varlen_hdim_local_kernels()})
      t.insert(t.end(), rows.begin(), rows.end());
    return t;
  }();
  return table;
}

const KernelEntry* kernel_by_name(std::string_view name) {
  for (const KernelEntry& k : kernel_table())
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace flashptx
