// sm_100a test kernel: TMEM allocation and the tcgen05.st / tcgen05.ld 32x32b shapes .x1 .. .x128.
// Protocol under test: warp 0 allocates (cta_group::1) -> fence::before + bar.sync + fence::after ->
// every warp stores its lane quarter with each shape -> wait::st -> loads back with the same shapes
// and with .x128 -> wait::ld -> fence::before + bar.sync + fence::after -> warp 0 deallocates and
// relinquishes the allocation permit. Semantics are checked by tests/gpu/test_sm100_primitives.cpp.
#include <cstdint>

#include "ptx/tcgen05.cuh"
#include "tests/kernels_sm100/sm100_common.cuh"
#include "tests/kernels_sm100/sm100_launchers.h"

namespace ptx = flashptx::ptx;
using flashptx_test::kTmemRoundtripCols;
using flashptx_test::tmem_pattern;

namespace {

// Shape N owns columns [N-1, 2N-1).
template <int N>
__device__ __forceinline__ void store_segment(uint32_t warp_base, uint32_t lane, uint32_t seed) {
  uint32_t r[N];
#pragma unroll
  for (int j = 0; j < N; ++j) r[j] = tmem_pattern(lane, N - 1 + j, seed);
  ptx::tcgen05_st_32x32b<N>(warp_base + (N - 1), r);
}

template <int N>
__device__ __forceinline__ void load_segment(uint32_t warp_base, uint32_t lane, uint32_t* out) {
  uint32_t r[N];
  ptx::tcgen05_ld_32x32b<N>(warp_base + (N - 1), r);
  ptx::tcgen05_wait_ld_bind(r);
#pragma unroll
  for (int j = 0; j < N; ++j) out[lane * kTmemRoundtripCols + N - 1 + j] = r[j];
}

}  // namespace

extern "C" __global__ void __launch_bounds__(128, 1)
sm100_tmem_roundtrip_kernel(uint32_t seed, uint32_t* direct, uint32_t* x128) {
  __shared__ uint32_t tmem_base_slot;
  const uint32_t warp = threadIdx.x / 32;
  const uint32_t lane = threadIdx.x;  // TMEM lane of this thread: 32 * warp + lane-in-warp

  if (warp == 0) ptx::tcgen05_alloc<1, kTmemRoundtripCols>(ptx::smem_u32(&tmem_base_slot));
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  ptx::tcgen05_fence_after_thread_sync();
  const uint32_t base = tmem_base_slot;
  const uint32_t warp_base = base + ptx::tmem_addr(32 * warp, 0);

  store_segment<1>(warp_base, lane, seed);
  store_segment<2>(warp_base, lane, seed);
  store_segment<4>(warp_base, lane, seed);
  store_segment<8>(warp_base, lane, seed);
  store_segment<16>(warp_base, lane, seed);
  store_segment<32>(warp_base, lane, seed);
  store_segment<64>(warp_base, lane, seed);
  store_segment<128>(warp_base, lane, seed);
  ptx::tcgen05_wait_st();

  load_segment<1>(warp_base, lane, direct);
  load_segment<2>(warp_base, lane, direct);
  load_segment<4>(warp_base, lane, direct);
  load_segment<8>(warp_base, lane, direct);
  load_segment<16>(warp_base, lane, direct);
  load_segment<32>(warp_base, lane, direct);
  load_segment<64>(warp_base, lane, direct);
  load_segment<128>(warp_base, lane, direct);

  // Columns [0, 128) and [128, 256) with the widest shape, crossing the segments' boundaries.
  for (uint32_t half = 0; half < 2; ++half) {
    uint32_t r[128];
    ptx::tcgen05_ld_32x32b_x128(warp_base + 128 * half, r);
    ptx::tcgen05_wait_ld_bind(r);
#pragma unroll
    for (int j = 0; j < 128; ++j) x128[lane * kTmemRoundtripCols + 128 * half + j] = r[j];
  }

  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  if (warp == 0) {
    ptx::tcgen05_fence_after_thread_sync();
    ptx::tcgen05_dealloc<1, kTmemRoundtripCols>(base);
    ptx::tcgen05_relinquish_alloc_permit<1>();
  }
}

namespace flashptx_test {

cudaError_t sm100_launch_tmem_roundtrip(uint32_t seed, uint32_t* direct, uint32_t* x128) {
  const size_t bytes = 128 * kTmemRoundtripCols * sizeof(uint32_t);
  uint32_t *d_direct = nullptr, *d_x128 = nullptr;
  SM100_TRY(cudaMalloc(&d_direct, bytes));
  SM100_TRY(cudaMalloc(&d_x128, bytes));
  SM100_TRY(cudaMemset(d_direct, 0xFF, bytes));
  SM100_TRY(cudaMemset(d_x128, 0xFF, bytes));
  sm100_tmem_roundtrip_kernel<<<1, 128>>>(seed, d_direct, d_x128);
  SM100_TRY(cudaGetLastError());
  SM100_TRY(cudaDeviceSynchronize());
  SM100_TRY(cudaMemcpy(direct, d_direct, bytes, cudaMemcpyDeviceToHost));
  SM100_TRY(cudaMemcpy(x128, d_x128, bytes, cudaMemcpyDeviceToHost));
  SM100_TRY(cudaFree(d_direct));
  SM100_TRY(cudaFree(d_x128));
  return cudaSuccess;
}

}  // namespace flashptx_test
