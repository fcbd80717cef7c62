// Attention ladder, rung 4: + two consumer warpgroups and the pingpong token ring (tests/kernels/ladder.h).
//
// What this rung adds to rung 3: a CTA of three warpgroups owns 128 query rows (so seqlen_q must be
// a multiple of 128 here):
//   warpgroup 0     PRODUCER  setmaxnreg.dec to 24; one thread loads Q (128 rows) and K/V block by
//                             block into the 2-stage ring: each K/V block is loaded once for both
//                             consumers (rung 3 loaded it once per 64 rows);
//   warpgroups 1-2  CONSUMERS setmaxnreg.inc to 240; consumer g owns rows [64g, 64g + 64).
// Register split: 384 threads x 168 at launch (__launch_bounds__(384, 1)) = 64512 = 128 x 24 +
// 2 x 128 x 240, the whole register file.
//
// The pingpong token (docs/PROTOCOLS.md, "Pingpong"; src/protocol/pingpong.h TokenRing<2>):
// the consumers take turns to issue their MMAs, so that one warpgroup's softmax runs while the
// other's MMAs use the tensor cores. Consumer g waits its turn with bar.sync(2 + g, 256) and passes
// it with bar.arrive(2 + next(g), 256); consumer 0 deposits the bootstrap half-credit on barrier 2
// once. A turn issues PV(n-1) and QK(n) together (no wait inside a turn, so no one holds the token
// while waiting): the first turn QK(0) alone, the last PV(N-1) alone, N + 1 turns per consumer
// (TokenRing::handoffs_non_overlap). The token carries no data: K/V readiness is the mbarriers'.
//
// Which barrier certifies what (docs/PROTOCOLS.md, "The K/V rings"):
//   five mbarrier inits by thread 0 (q_full, kv_full[2]: count 1; kv_empty[2]: count 8, one arrival
//   per consumer warp of both consumers), fence.mbarrier_init, __syncthreads;
//   q_full          producer arrive.expect_tx(32 KiB) + four Q loads (two 64-row halves x two chunks);
//   kv_full[s]      producer arrive.expect_tx(64 KiB) + the K and V loads, waited before the turn;
//   kv_empty[s]     one arrive per consumer warp after the wgmma.wait_group 0 that retired PV of the
//                   stage's block, in both consumers: then the producer may overwrite the stage.
//   In a turn of step n a consumer reads two stages at once (V of block n-1, K of block n): the ring
//   needs its two stages, and the load of block n+1 waits until both consumers retired PV(n-1).
// What it lacks (the library's FA3 forward adds it): the two-stage overlap inside a warpgroup
// (softmax(n) while PV(n-1) still runs: "The two-stage overlap"), the epilogue through shared
// memory and a TMA store, LSE, masks and tails, and the persistent tile scheduler ("Scheduling").
#include <cstdint>

#include "src/protocol/pingpong.h"
#include "src/protocol/ring.h"
#include "ptx/barrier.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"
#include "tests/kernels/ladder_common.cuh"

namespace ll = flashptx_test::ladder;
namespace fp = flashptx::ptx;

namespace {

constexpr int kStages = 2, kQRows = 2 * ll::kBlockM;
constexpr int kProducerRegs = 24, kConsumerRegs = 240;
using Tokens = flashptx::TokenRing<2>;
// Shared memory (1024-aligned base): Q 128 x 128 (32 KiB); per stage K and V 32 KiB each; then the
// barriers: q_full, kv_full[2], kv_empty[2].
constexpr uint32_t kOffQ = 0, kOffK = 32768, kOffV = kOffK + kStages * 32768, kOffBar = kOffV + kStages * 32768;
constexpr uint32_t kSmemBytes = kOffBar + 8 * (1 + 2 * kStages) + 1024;
constexpr uint32_t kQBytes = kQRows * ll::kHeadDim * 2, kKVBytes = 2 * ll::kBlockN * ll::kHeadDim * 2;
static_assert(kProducerRegs * 128 + 2 * kConsumerRegs * 128 <= (65536 / 384) / 8 * 8 * 384, "register file");

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
    for (int h = 0; h < 2; ++h)
      fp::cp_async_bulk_tensor_4d_load(sm.q() + c * kQRows * 128 + h * ll::kBlockM * 128, &t.tma_q, sm.q_full(),
                                       c * 64, m_block * kQRows + h * ll::kBlockM, head, batch);
  flashptx::RingState<kStages> write = flashptx::RingState<kStages>::producer_start();
  for (int n = 0; n < n_blocks; ++n) {
    // Stage free: every warp of both consumers retired the MMAs that read its previous block.
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

// The token: my turn to issue (bar.sync on my barrier), and the pass to the other consumer.
__device__ __forceinline__ void take_token(int g) { fp::bar_sync(Tokens::barrier_of(g), Tokens::kParticipants); }
__device__ __forceinline__ void pass_token(int g) {
  fp::bar_arrive(Tokens::barrier_of(Tokens::next(g)), Tokens::kParticipants);
}

// Consumer g (0 or 1): 128 threads; `tid` is the thread's index in its warpgroup. Its mbarrier waits
// are the plain try_wait loop in both flavours: the test flavour's bounded wait (ll::wait) costs the
// registers that make ptxas serialise this kernel's wgmmas there (info C7512) at 168 per thread. A
// consumer stuck on kv_full still ends the launch: the producer's bounded kv_empty wait traps.
__device__ __forceinline__ void consume(const ll::LadderTmaArgs& t, const Smem& sm, int m_block, int head, int batch,
                                        int n_blocks, int g, int tid) {
  if (Tokens::primes(g)) fp::bar_arrive(Tokens::barrier_of(0), Tokens::kParticipants);  // bootstrap, once
  const uint32_t q_mine = sm.q() + g * ll::kBlockM * 128;  // my 64 rows in each chunk
  ll::Rows rows;
  rows.init();
  flashptx::RingState<kStages> read = flashptx::RingState<kStages>::consumer_start();
  fp::mbarrier_wait(sm.q_full(), 0);  // Q landed
  // Turn 0: QK(0).
  fp::mbarrier_wait(sm.kv_full(read.stage), read.phase);  // K_0, V_0 landed
  take_token(g);
  rows.issue_qk<kQRows>(q_mine, sm.k(read.stage));
  pass_token(g);
  fp::wgmma_wait_group<0>();  // QK(0) complete: S readable
  fp::wgmma_fence_operand(rows.s);
  rows.softmax_rescale_convert(t.a.scale_log2);
  uint32_t prev = read.stage;  // the stage of block n-1, whose V the next turn reads
  read.advance();
  // Turn n: PV(n-1) and QK(n).
  for (int n = 1; n < n_blocks; ++n) {
    fp::mbarrier_wait(sm.kv_full(read.stage), read.phase);  // K_n, V_n landed
    take_token(g);
    rows.issue_pv(sm.v(prev));
    rows.issue_qk<kQRows>(q_mine, sm.k(read.stage));
    pass_token(g);
    fp::wgmma_wait_group<0>();  // PV(n-1) and QK(n) complete: O and S readable, P reusable
    fp::wgmma_fence_operand(rows.o);
    fp::wgmma_fence_operand(rows.s);
    if (tid % 32 == 0) fp::mbarrier_arrive(sm.kv_empty(prev));  // block n-1's stage: no reader left here
    rows.softmax_rescale_convert(t.a.scale_log2);
    prev = read.stage;
    read.advance();
  }
  // Turn N: PV(N-1).
  take_token(g);
  rows.issue_pv(sm.v(prev));
  pass_token(g);
  fp::wgmma_wait_group<0>();  // PV(N-1) complete: O readable
  fp::wgmma_fence_operand(rows.o);
  if (tid % 32 == 0) fp::mbarrier_arrive(sm.kv_empty(prev));
  rows.store_o(t.a, batch, head, m_block * kQRows + g * ll::kBlockM + 16 * (tid / 32) + (tid % 32) / 4);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(384, 1) ladder_4_kernel(const __grid_constant__ ll::LadderTmaArgs t) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const Smem sm{(fp::smem_u32(smem_raw) + 1023u) & ~1023u};
  const int m_block = blockIdx.x, head = blockIdx.y, batch = blockIdx.z;
  const int n_blocks = t.a.seqlen_k / ll::kBlockN;

  if (threadIdx.x == 0) {
    fp::mbarrier_init(sm.q_full(), 1);
    for (uint32_t s = 0; s < kStages; ++s) {
      fp::mbarrier_init(sm.kv_full(s), 1);
      fp::mbarrier_init(sm.kv_empty(s), 8);
    }
    fp::fence_mbarrier_init();
  }
  __syncthreads();  // the barriers are initialised before anyone arrives, waits or completes on them

  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    fp::setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) produce(t, sm, m_block, head, batch, n_blocks);
    return;
  }
  fp::setmaxnreg_inc<kConsumerRegs>();
  consume(t, sm, m_block, head, batch, n_blocks, warpgroup - 1, threadIdx.x % 128);
}

namespace flashptx_test::ladder {

cudaError_t launch_rung4(const LadderTmaArgs& a, dim3 grid, cudaStream_t stream) {
  cudaError_t e = cudaFuncSetAttribute(ladder_4_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  if (e != cudaSuccess) return e;
  ladder_4_kernel<<<grid, 384, kSmemBytes, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace flashptx_test::ladder
