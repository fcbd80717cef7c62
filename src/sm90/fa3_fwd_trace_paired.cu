// The instrumented build of the paired causal FA3 forward (bf16, head dim 128) behind
// `flashptx trace --causal`: the same source and configuration as the release kernel
// fa3_fwd_sm90_bf16_d128_n128_paired (persistent CTAs over the paired causal schedule,
// src/protocol/tile_scheduler.h), compiled with FLASHPTX_TRACE=1 (src/protocol/trace.h), so
// that the timeline shows a CTA's tile transitions: the next tile's loads under the current tile's
// end. In its own translation unit: beside the plain traced kernel (src/sm90/fa3_fwd_trace.cu) it
// changed that kernel's instruction schedule. A row of the kernel table, family kFa3FwdTraced.
#define FLASHPTX_TRACE 1
#include "src/kernels.h"
#include "src/sm90/fa3_fwd.cuh"
#include "src/sm90/fa3_fwd_entry.h"

extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<flashptx::fa3::kTracedD128N128Paired>::kThreads, 1)
    fa3_fwd_sm90_bf16_d128_paired_trace(const __grid_constant__ flashptx::fa3::FwdParams p) {
  flashptx::fa3::fwd_kernel_body<flashptx::fa3::kTracedD128N128Paired>(p);
}

namespace flashptx {

std::span<const KernelEntry> fa3_fwd_traced_paired_kernels() {
  static const KernelEntry rows[] = {
      fa3_fwd_entry<fa3::kTracedD128N128Paired>("fa3_fwd_sm90_bf16_d128_paired_trace",
                     reinterpret_cast<const void*>(&fa3_fwd_sm90_bf16_d128_paired_trace), Family::kFa3FwdTraced),
  };
  return rows;
}

}  // namespace flashptx
