// flashptx_fwd_fp8's launch (src/sm90/fa3_fwd_fp8.cu). Not part of the kernel table (src/kernels.h):
// one CTA shape per head dim and descale kind (wide K/V blocks where the K and V descales are uniform
// along the keys); the same kernel runs persistent or one CTA per tile (launch_fp8).
#pragma once
#include <string>

#include "include/flashptx.h"

namespace flashptx {

// Launches a validated, non-empty call on `stream`: min(tiles, sm_count) persistent CTAs for
// non-causal calls up to 4k keys, one CTA per tile otherwise.
// FLASHPTX_OK or FLASHPTX_ERR_CUDA with *msg.
flashptx_status launch_fwd_fp8(const flashptx_fwd_fp8_params& p, int sm_count, cudaStream_t stream, std::string* msg);

// The symbol of the kernel a call launches (its golden: sass_golden/sm_90a/<name>.sass), or nullptr.
const char* fwd_fp8_kernel_name(const flashptx_fwd_fp8_params& p);

}  // namespace flashptx
