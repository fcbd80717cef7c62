// The instrumented build of FA3 forward (bf16, head dim 128) behind `flashptx trace`.
// Same source as the release kernel, compiled with FLASHPTX_TRACE=1 so that every FLASHPTX_STAMP
// in src/fa3_fwd_sm90.cuh records a protocol event (include/flashptx/trace.h). The release kernels
// are compiled without it; their goldens show no trace code.
#define FLASHPTX_TRACE 1
#include "src/sm90/fa3_fwd.cuh"

extern "C" __global__ void __launch_bounds__(flashptx::fa3::Config<128, 128, 2, 2, true, true, true>::kThreads, 1)
    fa3_fwd_sm90_bf16_d128_trace(const __grid_constant__ flashptx::fa3::FwdParams p) {
  flashptx::fa3::fwd_kernel_body<flashptx::fa3::Config<128, 128, 2, 2, true, true, true>>(p);
}
