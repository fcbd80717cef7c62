// Attention ladder, rung 2: + TMA loads completing on an mbarrier (tests/kernels/ladder.h).
//
// What this rung adds to rung 1: the tiles are copied by the Tensor Memory Accelerator. One thread
// issues cp.async.bulk.tensor.4d loads (UTMALDG.4D) through tensor maps whose 128B swizzle is the
// layout the wgmma descriptors read, so no thread computes a swizzled address or holds a load in
// flight; every thread then waits on a shared-memory transaction barrier (mbarrier) until the bytes
// have landed. Still one stage: the loads of block n+1 are issued after block n's MMAs retired.
//
// Which barrier certifies what (docs/PROTOCOLS.md, "Hopper prerequisites": expect_tx and the
// phase parity; "The K/V rings": this is the ring's full barrier with one stage and no empty barrier):
//   mbarrier.init (count 1) by thread 0, fence.mbarrier_init, __syncthreads
//       the two barriers are initialised and visible to every thread and to the TMA unit before use;
//   q_full:  thread 0's mbarrier.arrive.expect_tx(16 KiB) + the Q loads' complete_tx
//   kv_full: thread 0's arrive.expect_tx(64 KiB) + the K and V loads' complete_tx, once per block
//       the phase completes when the one arrival and exactly that many bytes are in; the waiters'
//       try_wait.parity (SYNCS.PHASECHK.TRANS64.TRYWAIT) acquires the bytes, which the async proxy
//       wrote, for the async-proxy reads of the wgmmas: no proxy fence is needed. Block n waits for
//       the phase of parity n & 1;
//   wgmma.wait_group 0, then __syncthreads at the top of the next block
//       every warp's MMAs reading K and V have completed: thread 0 may load the next block over them.
// What it lacks (rung 3 adds it): a second buffer and a thread that loads ahead, so that the copy of
// block n+1 overlaps the MMAs and softmax of block n; and the consumers' registers, bounded here by
// the launch (one warpgroup, nothing to give away).
#include <cstdint>

#include "ptx/barrier.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "tests/kernels/ladder_common.cuh"

namespace ll = flashptx_test::ladder;
namespace fp = flashptx::ptx;

namespace {

// Shared memory (1024-aligned base): Q 16 KiB, K and V 32 KiB each, then the two mbarriers.
constexpr uint32_t kOffQ = 0, kOffK = 16384, kOffV = 16384 + 32768, kOffBar = 16384 + 2 * 32768;
constexpr uint32_t kSmemBytes = kOffBar + 16 + 1024;
constexpr uint32_t kQBytes = ll::kBlockM * ll::kHeadDim * 2, kKVBytes = 2 * ll::kBlockN * ll::kHeadDim * 2;

}  // namespace

extern "C" __global__ void __launch_bounds__(128, 1) ladder_2_kernel(const __grid_constant__ ll::LadderTmaArgs t) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t base = (fp::smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t q_full = base + kOffBar, kv_full = base + kOffBar + 8;
  const int m_block = blockIdx.x, head = blockIdx.y, batch = blockIdx.z;
  const int n_blocks = t.a.seqlen_k / ll::kBlockN;

  if (threadIdx.x == 0) {
    fp::mbarrier_init(q_full, 1);
    fp::mbarrier_init(kv_full, 1);
    fp::fence_mbarrier_init();
  }
  __syncthreads();  // the barriers are initialised before anyone arrives, waits or completes on them

  if (threadIdx.x == 0) {
    fp::mbarrier_arrive_expect_tx(q_full, kQBytes);
    for (int c = 0; c < 2; ++c)
      fp::cp_async_bulk_tensor_4d_load(base + kOffQ + c * ll::kBlockM * 128, &t.tma_q, q_full, c * 64,
                                       m_block * ll::kBlockM, head, batch);
  }
  ll::Rows rows;
  rows.init();
  ll::wait(q_full, 0);  // Q landed (phase 0)
  for (int n = 0; n < n_blocks; ++n) {
    // Every warp has retired PV(n-1) (its wait_group 0 below): K and V may be overwritten.
    if (n > 0) __syncthreads();
    if (threadIdx.x == 0) {
      fp::mbarrier_arrive_expect_tx(kv_full, kKVBytes);
      for (int c = 0; c < 2; ++c) {
        fp::cp_async_bulk_tensor_4d_load(base + kOffK + c * ll::kBlockN * 128, &t.tma_k, kv_full, c * 64,
                                         n * ll::kBlockN, head, batch);
        fp::cp_async_bulk_tensor_4d_load(base + kOffV + c * ll::kBlockN * 128, &t.tma_v, kv_full, c * 64,
                                         n * ll::kBlockN, head, batch);
      }
    }
    ll::wait(kv_full, n & 1);  // K_n and V_n landed
    rows.issue_qk(base + kOffQ, base + kOffK);
    fp::wgmma_wait_group<0>();  // QK complete: S readable
    fp::wgmma_fence_operand(rows.s);
    rows.softmax_rescale_convert(t.a.scale_log2);
    rows.issue_pv(base + kOffV);
    fp::wgmma_wait_group<0>();  // PV complete: O readable, P and the V tile reusable
    fp::wgmma_fence_operand(rows.o);
  }
  rows.store_o(t.a, batch, head, m_block * ll::kBlockM + 16 * (threadIdx.x / 32) + (threadIdx.x % 32) / 4);
}

namespace flashptx_test::ladder {

cudaError_t launch_rung2(const LadderTmaArgs& a, dim3 grid, cudaStream_t stream) {
  cudaError_t e = cudaFuncSetAttribute(ladder_2_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  if (e != cudaSuccess) return e;
  ladder_2_kernel<<<grid, 128, kSmemBytes, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace flashptx_test::ladder
