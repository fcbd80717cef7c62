// What the command line and the tests may call beyond the C ABI (not exported from libflashptx.so;
// reachable through libflashptx.a). Every entry validates exactly as the C ABI does, sets
// flashptx_last_error() the same way, and differs only in taking explicit variant options.
#pragma once
#include "include/flashptx.h"
#include "src/plan.h"

#include <string>

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
// flashptx_bwd_varlen / _kernel_info with a forced main kernel of family kFa3BwdVarlen.
flashptx_status bwd_varlen(const flashptx_bwd_varlen_params* p, const BwdOptions& opt, cudaStream_t stream);
flashptx_status bwd_varlen_kernel_info(const flashptx_bwd_varlen_params* p, const BwdOptions& opt,
                                       flashptx_kernel_info* info);

// The status of an entry point defined outside src/api.cpp (src/kvcache.cpp), recorded as api.cpp
// records its own: flashptx_last_error() is "STATUS_NAME: msg", or "" after FLASHPTX_OK.
flashptx_status record_status(flashptx_status s, const std::string& msg);
// flashptx_fwd_kvcache's host-side validation (src/kvcache.cpp).
flashptx_status validate_fwd_kvcache(const flashptx_kvcache_params& p, std::string* msg);

}  // namespace flashptx
