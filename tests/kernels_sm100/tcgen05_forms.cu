// sm_100a compile coverage of the tcgen05 / CLC forms the semantic kernels do not use (kind::f8f6f4
// with cta_group::2 in SS and TS form, the non-multicast cta_group::2 commit, the cta_group::1
// multicast commit, the multicast try_cancel), so each is assembled by ptxas and appears in a golden.
// Never launched: the protocol here is only well-formed enough to compile, not a test of semantics.
#include <cstdint>

#include "ptx/clc.cuh"
#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tcgen05.cuh"

namespace ptx = flashptx::ptx;

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128, 1)
sm100_tcgen05_forms_kernel(uint64_t a_desc, uint64_t b_desc, uint32_t* out) {
  __shared__ __align__(16) uint4 response;
  __shared__ __align__(8) uint64_t bar_storage;
  __shared__ uint32_t tmem_base_slot;
  const uint32_t bar = ptx::smem_u32(&bar_storage);
  constexpr uint32_t idesc = ptx::make_umma_idesc_f8f6f4<ptx::UmmaF8F6F4Type::kE4M3, ptx::UmmaF8F6F4Type::kE5M2,
                                                         ptx::UmmaDType::kF32, 256, 128, ptx::UmmaMajor::kK,
                                                         ptx::UmmaMajor::kK, 2>();
  ptx::barrier_cluster_sync();  // the pair allocation acts on the peer: it must be running
  if (threadIdx.x / 32 == 0) ptx::tcgen05_alloc<2, 256>(ptx::smem_u32(&tmem_base_slot));
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(bar, 1);
    ptx::fence_mbarrier_init();
  }
  ptx::tcgen05_fence_before_thread_sync();
  ptx::barrier_cluster_sync();
  ptx::tcgen05_fence_after_thread_sync();
  const uint32_t tmem = tmem_base_slot;
  if (ptx::cluster_ctarank() == 0 && threadIdx.x == 0) {
    ptx::tcgen05_mma_f8f6f4_ss<2>(tmem, a_desc, b_desc, idesc, false);
    ptx::tcgen05_mma_f8f6f4_ts<2>(tmem, tmem + 128, b_desc, idesc, true);
    ptx::tcgen05_commit<2>(bar);
  }
  ptx::mbarrier_wait(bar, 0);
  if (threadIdx.x == 0) {
    ptx::mbarrier_arrive_expect_tx(bar, sizeof(uint4));
    ptx::clusterlaunchcontrol_try_cancel_multicast(ptx::smem_u32(&response), bar);
  }
  ptx::mbarrier_wait(bar, 1);
  const ptx::ClcResponse r = ptx::clc_response_load(ptx::smem_u32(&response));
  out[threadIdx.x] = ptx::clusterlaunchcontrol_query_cancel_is_canceled(r) ? 1u : 0u;
  ptx::tcgen05_fence_before_thread_sync();
  ptx::barrier_cluster_sync();
  if (threadIdx.x / 32 == 0) {
    ptx::tcgen05_fence_after_thread_sync();
    ptx::tcgen05_dealloc<2, 256>(tmem);
    ptx::tcgen05_relinquish_alloc_permit<2>();
  }
  ptx::barrier_cluster_sync();
}

// cta_group::1 multicast commit (a 1-CTA-group MMA whose completion is signalled to both CTAs).
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128, 1)
sm100_tcgen05_commit_mc1_kernel(uint64_t a_desc, uint64_t b_desc) {
  __shared__ __align__(8) uint64_t bar_storage;
  __shared__ uint32_t tmem_base_slot;
  const uint32_t bar = ptx::smem_u32(&bar_storage);
  constexpr uint32_t idesc = ptx::make_umma_idesc_f16<ptx::UmmaF16Type::kF16, ptx::UmmaDType::kF16, 64, 64>();
  if (threadIdx.x / 32 == 0) ptx::tcgen05_alloc<1, 64>(ptx::smem_u32(&tmem_base_slot));
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(bar, 1);
    ptx::fence_mbarrier_init();
  }
  ptx::tcgen05_fence_before_thread_sync();
  ptx::barrier_cluster_sync();
  ptx::tcgen05_fence_after_thread_sync();
  const uint32_t tmem = tmem_base_slot;
  if (ptx::cluster_ctarank() == 0 && threadIdx.x == 0) {
    ptx::tcgen05_mma_f16_ss<1>(tmem, a_desc, b_desc, idesc, false);
    ptx::tcgen05_commit_multicast<1>(bar, 0b11);
  }
  ptx::mbarrier_wait(bar, 0);
  ptx::tcgen05_fence_before_thread_sync();
  ptx::barrier_cluster_sync();
  if (threadIdx.x / 32 == 0) {
    ptx::tcgen05_fence_after_thread_sync();
    ptx::tcgen05_dealloc<1, 64>(tmem);
    ptx::tcgen05_relinquish_alloc_permit<1>();
  }
}
