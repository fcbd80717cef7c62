// The instrumented build of the 128-row d64 paired causal FA3 forward (bf16) behind
// `flashptx trace --hdim 64 --causal`: the same source and configuration as the release kernel
// fa3_fwd_sm90_bf16_d64_m128_paired (persistent CTAs over the paired causal schedule, or, with a
// tile counter, the dynamic schedule: FwdConfig::dynamic_walk), compiled with FLASHPTX_TRACE=1
// (src/protocol/trace.h), so that the timeline shows where a short causal tile's time goes
// (docs/DECISIONS.md, "Where a short d64 causal tile's time goes"). In its own
// translation unit, as the d128 traced kernels are (src/sm90/fa3_fwd_trace_paired.cu says why).
// A row of the kernel table, family kFa3FwdTraced.
#define FLASHPTX_TRACE 1
#include "src/kernels.h"
#include "src/sm90/fa3_fwd.cuh"
#include "src/sm90/fa3_fwd_entry.h"

extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<flashptx::fa3::kTracedD64M128Paired>::kThreads, 1)
    fa3_fwd_sm90_bf16_d64_paired_trace(const __grid_constant__ flashptx::fa3::FwdParams p) {
  flashptx::fa3::fwd_kernel_body<flashptx::fa3::kTracedD64M128Paired>(p);
}

namespace flashptx {

std::span<const KernelEntry> fa3_fwd_traced_d64_kernels() {
  static const KernelEntry rows[] = {
      fa3_fwd_entry<fa3::kTracedD64M128Paired>("fa3_fwd_sm90_bf16_d64_paired_trace",
                     reinterpret_cast<const void*>(&fa3_fwd_sm90_bf16_d64_paired_trace), Family::kFa3FwdTraced),
  };
  return rows;
}

}  // namespace flashptx
