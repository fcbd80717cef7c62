// flashptx_quantize_fp8's launches (src/sm90/fp8_quantize.cu). Not part of the kernel table
// (src/kernels.h): the quantize kernels take no launch plan, one CTA shape, a grid from the sizes.
#pragma once
#include <string>

#include "include/flashptx.h"

namespace flashptx {

// Launches the quantization of a validated, non-empty call on `stream` (the per-tensor memset and
// two launches, or one launch). FLASHPTX_OK or FLASHPTX_ERR_CUDA with *msg.
flashptx_status launch_quantize_fp8(const flashptx_quantize_fp8_params& p, cudaStream_t stream, std::string* msg);

// The kernels' symbols (their goldens: sass_golden/sm_90a/<name>.sass).
inline constexpr const char* kQuantizeFp8KernelBf16 = "fp8_quantize_sm90_bf16";
inline constexpr const char* kQuantizeFp8KernelFp16 = "fp8_quantize_sm90_fp16";

}  // namespace flashptx
