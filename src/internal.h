// What the command line and the tests may call beyond the C ABI (not exported from libflashptx.so;
// reachable through libflashptx.a). Every entry validates exactly as the C ABI does, sets
// flashptx_last_error() the same way, and differs only in taking explicit variant options.
#pragma once
#include "include/flashptx.h"
#include "src/plan.h"

namespace flashptx {

// flashptx_fwd with a forced kernel and/or schedule (and the trace buffer of the traced kernel).
flashptx_status fwd(const flashptx_fwd_params* p, const FwdOptions& opt, cudaStream_t stream);

// flashptx_fwd_kernel_info for the same options: the plan fwd() would launch.
flashptx_status fwd_kernel_info(const flashptx_fwd_params* p, const FwdOptions& opt, flashptx_kernel_info* info);

// flashptx_fwd_varlen / _kernel_info with a forced kernel of the varlen family.
flashptx_status fwd_varlen(const flashptx_fwd_varlen_params* p, const FwdOptions& opt, cudaStream_t stream);
flashptx_status fwd_varlen_kernel_info(const flashptx_fwd_varlen_params* p, const FwdOptions& opt,
                                       flashptx_kernel_info* info);

// flashptx_bwd with a forced main kernel.
flashptx_status bwd(const flashptx_bwd_params* p, const BwdOptions& opt, cudaStream_t stream);
flashptx_status bwd_kernel_info(const flashptx_bwd_params* p, const BwdOptions& opt, flashptx_kernel_info* info);

}  // namespace flashptx
