// Launchers of the wgmma test kernels (tests/kernels/prim_wgmma.cu). Each returns the launch's
// error (cudaGetLastError; cudaErrorInvalidValue for a combination not instantiated); the caller
// synchronises and checks. Device pointers. M = 64 always; K = 64 (16-bit) or 128 (e4m3), i.e. one
// 128-byte row of K per operand row, 4 MMAs per product, so the descriptor advance is exercised.
#pragma once
#include <cuda_runtime.h>

namespace flashptx_test::prim {

enum class MmaType : int { kBF16 = 0, kF16 = 1, kE4M3 = 2 };

constexpr int kMmaM = 64;
constexpr int kMmaRowBytes = 128;  // K extent of A and of K-major B, in bytes

// SS: A (64 x 128 bytes, K contiguous) and B from shared memory, 128B swizzle.
//   trans_b = 0: B is N rows x 128 bytes (K-major, K contiguous);
//   trans_b = 1 (16-bit types only): B is K=64 rows x N elements (MN-major, N contiguous).
// D: 64 x N floats, row-major. Instantiated: bf16 and f16 K-major for N in 64, 80, 96, 128, 160,
// 176, 192, 256; bf16 MN-major for N in 64, 128, 256; e4m3 K-major for N in 64, 128, 256.
cudaError_t launch_wgmma_ss(MmaType type, int n, int trans_b, const void* a, const void* b, float* d);

// RS: A (64 x 64 16-bit elements, row-major) loaded into registers in the wgmma A-fragment layout,
// B MN-major (K=64 rows x N elements) in shared memory, 128B swizzle. bf16 and f16, N in 64, 128, 256.
cudaError_t launch_wgmma_rs(MmaType type, int n, const void* a, const void* b, float* d);

// wait_group depth: two committed groups (bf16, N = 64, K-major): D1 = A1*B, D2 = A2*B; D1 is read
// after wait_group<1>, D2 after wait_group<0>.
cudaError_t launch_wgmma_wait_depth(const void* a1, const void* a2, const void* b, float* d1, float* d2);

}  // namespace flashptx_test::prim
