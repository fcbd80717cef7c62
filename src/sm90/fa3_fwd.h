// Host side of the FA3 forward kernels: the launcher behind flashptx_fwd (src/api.cpp) and the
// table of specializations (src/fa3_fwd_sm90.cu lists them all in one place).
#pragma once
#include <cstdint>
#include <string>

#include "flashptx.h"

namespace flashptx::fa3 {

struct KernelDesc {
  const char* symbol;     // extern "C" kernel name, also its golden's name
  int head_dim;
  flashptx_dtype dtype;
  int block_m, block_n, stages, consumer_wgs;
  bool pingpong;
  bool persistent;        // grid = min(tiles, SMs), each CTA loops over tiles
  int threads;
  int smem_bytes;         // dynamic shared memory per CTA
  const void* fn;         // the __global__ function
};

// The specialization a (validated) problem dispatches to, or nullptr. `traced` selects the
// instrumented build (FLASHPTX_TRACE=1), which exists for bf16 head dim 128 only.
const KernelDesc* find_kernel(const flashptx_fwd_params& a, bool traced = false);

// Encodes the tensor maps and launches. The parameters must already be validated (api.cpp).
// `trace` is a device buffer laid out as include/flashptx/trace.h, or nullptr.
flashptx_status launch_fwd(const flashptx_fwd_params& a, cudaStream_t stream, uint64_t* trace, bool traced,
                           std::string* err);

}  // namespace flashptx::fa3
