// Attention ladder, rung 3: + a producer warpgroup, setmaxnreg, a 2-stage K/V ring (tests/kernels/ladder.h).
//
// What this rung adds to rung 2: warp specialisation. The CTA has two warpgroups:
//   warpgroup 0  PRODUCER  setmaxnreg.dec to 24 registers; one thread loads Q, then K and V block by
//                          block into a ring of two stages, running ahead of the consumer by up to
//                          two blocks;
//   warpgroup 1  CONSUMER  setmaxnreg.inc to 240 registers; rung 2's math on the 64 query rows.
// The copy of block n+1 now overlaps the MMAs and softmax of block n. The register split fits the
// launch allocation: __maxnreg__(192) caps the kernel at 192 registers per thread at launch, and
// 256 threads x 192 = 49152 >= 128 x 24 + 128 x 240 = 33792. The consumer's .inc can only be granted
// once the producer's .dec has returned its registers to the CTA's pool. (ptxas still fits the
// consumer's code under the launch cap: at 168 and 176 the test flavour's bounded waits spilled;
// 192 is the smallest of 168/176/184/192 with no spill in either flavour.)
//
// Which barrier certifies what (docs/PROTOCOLS.md, "The K/V rings"):
//   mbarrier.init by thread 0 (q_full, kv_full[0..1]: count 1; kv_empty[0..1]: count 4, one arrival
//   per consumer warp; five barriers), fence.mbarrier_init, __syncthreads: initialised before use;
//   q_full          producer arrive.expect_tx(16 KiB) + the Q loads' complete_tx;
//   kv_full[s]      producer arrive.expect_tx(64 KiB) + the K and V loads' complete_tx: the consumer's
//                   parity wait acquires the block in stage s;
//   kv_empty[s]     one mbarrier.arrive per consumer warp after the wgmma.wait_group 0 that retired
//                   the last MMA (PV) reading stage s: the producer's parity wait certifies that no
//                   MMA still reads the stage, so its next TMA may overwrite it.
//   Phases (flashptx::RingState, src/protocol/ring.h): the consumer starts at (stage 0, phase 0);
//   the producer waits on kv_empty one generation ahead (phase 1), so its first two waits pass on
//   the freshly initialised barriers. The producer's tail waits until every stage it filled has been
//   released, so it never leaves while a stage it loaded is still being read.
// No __syncthreads after the set-up: the consumer and the producer meet only through the mbarriers.
// What it lacks (the library's FA3 forward adds it): a second consumer warpgroup (128 rows per CTA,
// each K/V block loaded once for both) scheduled by the pingpong token ring ("Pingpong"), the
// intra-warpgroup overlap of softmax(j) with PV(j-1) ("The two-stage overlap"), the epilogue through
// shared memory and a TMA store, and the persistent tile scheduler.
#include <cstdint>

#include "src/protocol/ring.h"
#include "ptx/barrier.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"
#include "tests/kernels/ladder_common.cuh"

namespace ll = flashptx_test::ladder;
namespace fp = flashptx::ptx;

namespace {

constexpr int kStages = 2;
constexpr int kProducerRegs = 24, kConsumerRegs = 240;
// Shared memory (1024-aligned base): Q 16 KiB; per stage K and V 32 KiB each; then the barriers:
// q_full, kv_full[2], kv_empty[2].
constexpr uint32_t kOffQ = 0, kOffK = 16384, kOffV = kOffK + kStages * 32768, kOffBar = kOffV + kStages * 32768;
constexpr uint32_t kSmemBytes = kOffBar + 8 * (1 + 2 * kStages) + 1024;
constexpr uint32_t kQBytes = ll::kBlockM * ll::kHeadDim * 2, kKVBytes = 2 * ll::kBlockN * ll::kHeadDim * 2;
static_assert(kProducerRegs * 128 + kConsumerRegs * 128 <= (65536 / 256) / 8 * 8 * 256, "register file");

struct Smem {
  uint32_t base;
  __device__ __forceinline__ uint32_t q() const { return base + kOffQ; }
  __device__ __forceinline__ uint32_t k(uint32_t s) const { return base + kOffK + s * 32768; }
  __device__ __forceinline__ uint32_t v(uint32_t s) const { return base + kOffV + s * 32768; }
  __device__ __forceinline__ uint32_t q_full() const { return base + kOffBar; }
  __device__ __forceinline__ uint32_t kv_full(uint32_t s) const { return base + kOffBar + 8 + 8 * s; }
  __device__ __forceinline__ uint32_t kv_empty(uint32_t s) const { return base + kOffBar + 8 + 8 * kStages + 8 * s; }
};

// The producer: one thread.
__device__ __forceinline__ void produce(const ll::LadderTmaArgs& t, const Smem& sm, int m_block, int head, int batch,
                                        int n_blocks) {
  fp::mbarrier_arrive_expect_tx(sm.q_full(), kQBytes);
  for (int c = 0; c < 2; ++c)
    fp::cp_async_bulk_tensor_4d_load(sm.q() + c * ll::kBlockM * 128, &t.tma_q, sm.q_full(), c * 64,
                                     m_block * ll::kBlockM, head, batch);
  flashptx::RingState<kStages> write = flashptx::RingState<kStages>::producer_start();
  for (int n = 0; n < n_blocks; ++n) {
    // Stage free: every consumer warp retired the MMAs that read its previous block.
    ll::wait(sm.kv_empty(write.stage), write.phase);
    fp::mbarrier_arrive_expect_tx(sm.kv_full(write.stage), kKVBytes);
    for (int c = 0; c < 2; ++c) {
      fp::cp_async_bulk_tensor_4d_load(sm.k(write.stage) + c * ll::kBlockN * 128, &t.tma_k, sm.kv_full(write.stage),
                                       c * 64, n * ll::kBlockN, head, batch);
      fp::cp_async_bulk_tensor_4d_load(sm.v(write.stage) + c * ll::kBlockN * 128, &t.tma_v, sm.kv_full(write.stage),
                                       c * 64, n * ll::kBlockN, head, batch);
    }
    write.advance();
  }
  // Tail: every stage released once more (each stage's last fill has been read).
  for (int s = 0; s < kStages; ++s) {
    ll::wait(sm.kv_empty(write.stage), write.phase);
    write.advance();
  }
}

// The consumer warpgroup: 128 threads; `tid` is the thread's index in it.
__device__ __forceinline__ void consume(const ll::LadderTmaArgs& t, const Smem& sm, int m_block, int head, int batch,
                                        int n_blocks, int tid) {
  ll::Rows rows;
  rows.init();
  flashptx::RingState<kStages> read = flashptx::RingState<kStages>::consumer_start();
  ll::wait(sm.q_full(), 0);  // Q landed
  for (int n = 0; n < n_blocks; ++n) {
    ll::wait(sm.kv_full(read.stage), read.phase);  // K_n, V_n landed
    rows.issue_qk(sm.q(), sm.k(read.stage));
    fp::wgmma_wait_group<0>();  // QK complete: S readable
    fp::wgmma_fence_operand(rows.s);
    rows.softmax_rescale_convert(t.a.scale_log2);
    rows.issue_pv(sm.v(read.stage));
    fp::wgmma_wait_group<0>();  // PV complete: O readable; this warp no longer reads the stage
    fp::wgmma_fence_operand(rows.o);
    if (tid % 32 == 0) fp::mbarrier_arrive(sm.kv_empty(read.stage));  // one arrival per warp
    read.advance();
  }
  rows.store_o(t.a, batch, head, m_block * ll::kBlockM + 16 * (tid / 32) + (tid % 32) / 4);
}

}  // namespace

extern "C" __global__ void __maxnreg__(192) ladder_3_kernel(const __grid_constant__ ll::LadderTmaArgs t) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const Smem sm{(fp::smem_u32(smem_raw) + 1023u) & ~1023u};
  const int m_block = blockIdx.x, head = blockIdx.y, batch = blockIdx.z;
  const int n_blocks = t.a.seqlen_k / ll::kBlockN;

  if (threadIdx.x == 0) {
    fp::mbarrier_init(sm.q_full(), 1);
    for (uint32_t s = 0; s < kStages; ++s) {
      fp::mbarrier_init(sm.kv_full(s), 1);
      fp::mbarrier_init(sm.kv_empty(s), 4);
    }
    fp::fence_mbarrier_init();
  }
  __syncthreads();  // the barriers are initialised before anyone arrives, waits or completes on them

  if (threadIdx.x / 128 == 0) {
    fp::setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) produce(t, sm, m_block, head, batch, n_blocks);
    return;
  }
  fp::setmaxnreg_inc<kConsumerRegs>();
  consume(t, sm, m_block, head, batch, n_blocks, threadIdx.x - 128);
}

namespace flashptx_test::ladder {

cudaError_t launch_rung3(const LadderTmaArgs& a, dim3 grid, cudaStream_t stream) {
  cudaError_t e = cudaFuncSetAttribute(ladder_3_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  if (e != cudaSuccess) return e;
  ladder_3_kernel<<<grid, 256, kSmemBytes, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace flashptx_test::ladder
