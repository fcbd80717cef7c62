// Shared pieces of the sm_100a test kernels.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "src/protocol/umma_plan.h"

#define SM100_TRY(expr)                          \
  do {                                           \
    cudaError_t sm100_err_ = (expr);             \
    if (sm100_err_ != cudaSuccess) return sm100_err_; \
  } while (0)

namespace flashptx_test {

// Copies a row-major [rows x 128 bytes] tile from global memory into shared memory in the layout
// `tile` describes (tile.byte_offset: the same object that builds the tile's descriptors), one
// 16-byte chunk per thread and step.
__device__ __forceinline__ void tile_to_smem(uint8_t* smem, const uint8_t* g, int rows,
                                             const flashptx::umma::SmemTile& tile) {
  for (int c = threadIdx.x; c < rows * 8; c += blockDim.x) {
    const uint32_t i = c / 8, kb = (c % 8) * 16;
    const uint4 v = reinterpret_cast<const uint4*>(g)[c];
    *reinterpret_cast<uint4*>(smem + tile.byte_offset(i, kb / tile.elem_bytes)) = v;
  }
}

}  // namespace flashptx_test
