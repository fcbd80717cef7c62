// Launchers of the sm_100a primitive test kernels (tests/kernels_sm100/*.cu). Each one allocates,
// copies, launches, synchronises and copies back, returning the first CUDA error (cudaSuccess when
// all went well), so the doctest side (tests/gpu/test_sm100_primitives.cpp) only does CPU work.
// Compiled for sm_100a only: they run on a Blackwell GPU and nowhere else.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace flashptx_test {

// The value the TMEM round trip writes at (lane, column); host and device agree on it.
#if defined(__CUDACC__)
__host__ __device__
#endif
inline constexpr uint32_t tmem_pattern(uint32_t lane, uint32_t column, uint32_t seed) {
  return ((lane << 16) | column) ^ (seed * 2654435761u) ^ (column * 40503u);
}

// TMEM round trip on 128 lanes x 256 columns (one CTA, 4 warps): the column range [N-1, 2N-1) is
// stored with tcgen05.st.32x32b.xN for N = 1, 2, 4, ..., 128 (columns 0..254), then read back
// (a) with the same shapes into direct[lane * 256 + column] and (b) with two .x128 loads into
// x128[lane * 256 + column]. Column 255 is never written.
constexpr int kTmemRoundtripCols = 256;
cudaError_t sm100_launch_tmem_roundtrip(uint32_t seed, uint32_t* direct, uint32_t* x128);

// One tcgen05.mma tile, cta_group::1: D[128 x 64] (f32) = A[128 x K] * B[64 x K]^T, operands given
// as rows of 128 bytes (K = 64 bf16 or K = 128 e4m3), row-major, K contiguous. Four MMAs along K;
// the first with enable-input-d false. Completion through tcgen05.commit on an mbarrier.
enum class UmmaVariant : int { kF16SS = 0, kF16TS = 1, kF8SS = 2, kF8TS = 3 };
constexpr int kUmmaM = 128, kUmmaN = 64, kUmmaRowBytes = 128;
cudaError_t sm100_launch_umma(UmmaVariant v, const uint8_t* a, const uint8_t* b, float* d);

// The same with cta_group::2 in a 2-CTA cluster: D[256 x 64] = A[256 x K] * B[64 x K]^T, bf16,
// CTA r holding A rows [128r, 128r+128) and B rows [32r, 32r+32); SS or TS (A in each CTA's TMEM).
constexpr int kUmma2M = 256;
cudaError_t sm100_launch_umma_2cta(bool ts, const uint8_t* a, const uint8_t* b, float* d);

// Cluster launch control work stealing: `grid` CTAs of 128 threads; each CTA processes its own
// blockIdx.x, then steals launches with try_cancel until a request fails. visits[i] counts how
// often block index i was processed; *started counts the CTAs that actually began executing.
cudaError_t sm100_launch_clc(int grid, uint32_t* visits, uint32_t* started);

}  // namespace flashptx_test
