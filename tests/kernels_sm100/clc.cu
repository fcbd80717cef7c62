// sm_100a test kernel: cluster launch control work stealing (clusterlaunchcontrol.try_cancel and
// query_cancel). Each CTA processes its own blockIdx.x, then thread 0 requests the cancellation of
// a not-yet-launched CTA; on success the whole CTA processes the stolen index and asks again, on
// failure it exits. Every reader of a response fences the async proxy before the barrier that
// precedes the next request (ptx/clc.cuh). "Processing" counts a visit per block index, so a
// correct protocol visits every index exactly once however many CTAs actually launched.
// Semantics: tests/gpu/test_sm100_primitives.cpp.
#include <cstdint>

#include "ptx/clc.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "tests/kernels_sm100/sm100_common.cuh"
#include "tests/kernels_sm100/sm100_launchers.h"

namespace ptx = flashptx::ptx;

extern "C" __global__ void __launch_bounds__(128) sm100_clc_kernel(uint32_t* visits, uint32_t* started) {
  __shared__ __align__(16) uint4 response;
  __shared__ __align__(8) uint64_t clc_bar;
  const uint32_t resp = ptx::smem_u32(&response), bar = ptx::smem_u32(&clc_bar);
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(bar, 1);
    ptx::fence_mbarrier_init();
    atomicAdd(started, 1u);
  }
  __syncthreads();

  uint32_t block = blockIdx.x;
  uint32_t phase = 0;
  while (true) {
    if (threadIdx.x == 0) atomicAdd(&visits[block], 1u);  // the "work" of block index `block`
    if (threadIdx.x == 0) {
      ptx::mbarrier_arrive_expect_tx(bar, sizeof(uint4));
      ptx::clusterlaunchcontrol_try_cancel(resp, bar);
    }
    FLASHPTX_MBAR_WAIT(bar, phase, "clc.response");
    phase ^= 1u;
    const ptx::ClcResponse r = ptx::clc_response_load(resp);
    const bool stolen = ptx::clusterlaunchcontrol_query_cancel_is_canceled(r);
    if (stolen) block = ptx::clusterlaunchcontrol_query_cancel_get_first_ctaid(r).x;
    // This thread's generic reads of `response`, ordered before the next try_cancel's async-proxy
    // write of it (ptx/clc.cuh), then the barrier that orders every reader before the requester.
    ptx::fence_proxy_async_shared_cta();
    __syncthreads();
    if (!stolen) break;
  }
}

namespace flashptx_test {

cudaError_t sm100_launch_clc(int grid, uint32_t* visits, uint32_t* started) {
  uint32_t *d_visits = nullptr, *d_started = nullptr;
  SM100_TRY(cudaMalloc(&d_visits, grid * sizeof(uint32_t)));
  SM100_TRY(cudaMalloc(&d_started, sizeof(uint32_t)));
  SM100_TRY(cudaMemset(d_visits, 0, grid * sizeof(uint32_t)));
  SM100_TRY(cudaMemset(d_started, 0, sizeof(uint32_t)));
  sm100_clc_kernel<<<grid, 128>>>(d_visits, d_started);
  SM100_TRY(cudaGetLastError());
  SM100_TRY(cudaDeviceSynchronize());
  SM100_TRY(cudaMemcpy(visits, d_visits, grid * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  SM100_TRY(cudaMemcpy(started, d_started, sizeof(uint32_t), cudaMemcpyDeviceToHost));
  SM100_TRY(cudaFree(d_visits));
  SM100_TRY(cudaFree(d_started));
  return cudaSuccess;
}

}  // namespace flashptx_test
