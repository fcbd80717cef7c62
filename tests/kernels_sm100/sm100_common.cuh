// Shared pieces of the sm_100a test kernels.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#define SM100_TRY(expr)                          \
  do {                                           \
    cudaError_t sm100_err_ = (expr);             \
    if (sm100_err_ != cudaSuccess) return sm100_err_; \
  } while (0)

namespace flashptx_test {

// Copies a row-major [rows x 128 bytes] tile from global memory into shared memory in the
// no-swizzle K-major canonical layout of tcgen05.mma: 8x16-byte core matrices, the 8 core matrices
// of one 8-row group contiguous along K (LBO = 128 B), 8-row groups 1024 B apart (SBO = 1024 B).
// Byte (row i, k-byte b) lands at (i/8)*1024 + (b/16)*128 + (i%8)*16 + b%16.
constexpr uint32_t kCoreLbo = 128, kCoreSbo = 1024, kKStepBytes = 32;
__device__ __forceinline__ void tile_to_smem_kmajor(uint8_t* smem, const uint8_t* g, int rows) {
  for (int c = threadIdx.x; c < rows * 8; c += blockDim.x) {
    const int i = c / 8, chunk = c % 8;
    const uint4 v = reinterpret_cast<const uint4*>(g)[c];
    *reinterpret_cast<uint4*>(smem + (i / 8) * kCoreSbo + chunk * kCoreLbo + (i % 8) * 16) = v;
  }
}

}  // namespace flashptx_test
