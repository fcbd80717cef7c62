// The instrumented forward launch used by `flashptx trace` (issue 4). Implemented by the library in
// a build whose forward kernel is compiled with -DFLASHPTX_TRACE=1 (the lead's src/fa3_fwd_sm90.cu*).
//
// device_trace_buffer: flashptx::trace::kWordsTotal uint64_t words of device memory, zeroed by the
// caller, laid out as include/flashptx/trace.h says; the traced CTAs (at most kMaxCtas) fill it.
// Everything else as flashptx_fwd: validation, status, stream.
#pragma once
#include <stdint.h>
#include "flashptx.h"

#ifdef __cplusplus
extern "C" {
#endif
flashptx_status flashptx_fwd_traced(const flashptx_fwd_params* p, uint64_t* device_trace_buffer,
                                    cudaStream_t stream);
#ifdef __cplusplus
}
#endif
