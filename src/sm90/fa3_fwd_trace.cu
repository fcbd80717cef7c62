// The instrumented build of the FA3 forward (bf16, head dim 128) behind `flashptx trace`.
// The same source and configuration as the release kernel fa3_fwd_sm90_bf16_d128_n128, compiled
// with FLASHPTX_TRACE=1 so that the protocol helpers of src/sm90/fa3_fwd.cuh record each event
// (src/protocol/trace.h). The release kernels are compiled without it; their goldens show no
// trace code. A row of the kernel table like every other kernel, in its own family.
#define FLASHPTX_TRACE 1
#include "src/kernels.h"
#include "src/sm90/fa3_fwd.cuh"
#include "src/sm90/fa3_fwd_entry.h"

extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<flashptx::fa3::kTracedD128N128>::kThreads, 1)
    fa3_fwd_sm90_bf16_d128_trace(const __grid_constant__ flashptx::fa3::FwdParams p) {
  flashptx::fa3::fwd_kernel_body<flashptx::fa3::kTracedD128N128>(p);
}

namespace flashptx {

std::span<const KernelEntry> fa3_fwd_traced_kernels() {
  static const KernelEntry rows[] = {
      fa3_fwd_entry<fa3::kTracedD128N128>("fa3_fwd_sm90_bf16_d128_trace",
                     reinterpret_cast<const void*>(&fa3_fwd_sm90_bf16_d128_trace), Family::kFa3FwdTraced),
  };
  return rows;
}

}  // namespace flashptx
