// FlashAttention-3 forward on Hopper (sm_90a), by hand. Spec sections 0x02-0x05.
//
// A work tile is kBlockM query rows of one (batch, head) against all admissible K/V blocks of
// kBlockN keys, traversed right to left (the masked blocks first). A persistent CTA loops over
// tiles blockIdx.x, blockIdx.x + gridDim.x, ...; ring states, the Q phase and the pingpong token
// carry across tiles (never reset per tile: 0x03's first failure). Roles:
//
//   warpgroup 0   PRODUCER   setmaxnreg.dec; one elected thread issues every TMA load:
//                            Q once (q_full), then K and V block by block into an s-stage ring.
//   warpgroup 1.. CONSUMERS  setmaxnreg.inc; consumer g owns query rows [64g, 64g+64) of the tile:
//                            S = Q K^T (wgmma SS), online softmax in base 2 (FP32 row max and sum),
//                            O += P V (wgmma RS: P straight from registers), epilogue through
//                            shared memory and a TMA store, LSE in fp32 natural log.
//
// Barriers (shared memory, all initialised by thread 0 before the role split):
//   q_full            count 1   producer arrive.expect_tx(Q bytes) + TMA complete_tx
//   q_empty           count 4G  one arrive per consumer warp once the wait that retires the tile's
//                               last QK has passed (O staged in a buffer of its own), or
//                     count G   one arrive per consumer warpgroup once the TMA store of its O tile,
//                               staged in its rows of the Q buffer, has read it (head dim 256)
//   k_full[s]         count 1   producer arrive.expect_tx(K bytes) + TMA complete_tx
//   v_full[s]         count 1   likewise for V
//   k_empty[s]        count 4G  one arrive per consumer warp, after the wgmma wait that retires
//                               the QK that read K[s]
//   v_empty[s]        count 4G  one arrive per consumer warp, after the wait that retires PV
// Named barriers (include/flashptx/pingpong.h):
//   B_g = 2 + g       the pingpong token ring, 256 threads per generation (consumer g syncs,
//                     its predecessor arrives); primed once by consumer 0 (bootstrap half-credit)
//   8 + g             consumer g's own 128-thread epilogue barrier (O tile written -> TMA store)
//
// Stages and phases: K and V have separate full/empty rings on one stage coordinate
// (flashptx::RingState). The producer starts one generation ahead (phase 1 on empty). Each consumer
// keeps one read state for K and one for V: V lags K by one block because of the intra-warpgroup
// overlap (0x05): steady step j issues QK(j) then PV(j-1).
//
// wgmma group ages in steady step j (0x05):
//   commit QK(j) (older), commit PV(j-1) (newer)
//   wait_group(1)  -> QK(j) complete: S readable, K[j] released
//   softmax(j) on S while PV(j-1) may still run
//   wait_group(0)  -> PV(j-1) complete: V[j-1] released, O rescaled, P overwritten with P_j
#pragma once
#include <cuda.h>
#include <cstdint>
#include <type_traits>

#include "flashptx/pingpong.h"
#include "flashptx/ring.h"
#include "flashptx/tile_scheduler.h"
#include "flashptx/trace.h"
#include "ptx/barrier.cuh"
#include "ptx/cvt.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

#if defined(__CUDA_ARCH__) && !FLASHPTX_HAS_SM90A
#error "src/fa3_fwd_sm90.cuh is Hopper code: compile it with -gencode arch=compute_90a,code=sm_90a"
#endif

namespace flashptx::fa3 {

// What the host passes (by value, as a __grid_constant__ kernel parameter).
struct FwdParams {
  CUtensorMap tma_q;  // [batch, seqlen_q, heads_q, d]  box (64, kBlockM, 1, 1), 128B swizzle
  CUtensorMap tma_k;  // [batch, seqlen_k, heads_kv, d] box (64, kBlockN, 1, 1), 128B swizzle
  CUtensorMap tma_v;  // [batch, seqlen_k, heads_kv, d] box (64, kBlockN, 1, 1), 128B swizzle
  CUtensorMap tma_o;  // [batch, seqlen_q, heads_q, d]  box (64, 64, 1, 1),      128B swizzle
  float* lse;         // [batch, heads_q, seqlen_q] or nullptr
  uint64_t* trace;    // trace buffer (include/flashptx/trace.h), traced builds only
  int seqlen_q, seqlen_k, heads_q, heads_kv, batch;
  int num_m_blocks;
  int causal;
  float softmax_scale;       // natural-log scale (for LSE)
  float softmax_scale_log2;  // softmax_scale * log2(e)
};

// The compile-time shape of one specialization. Listed once, in src/fa3_fwd_sm90.cu.
template <int HeadDim, int BlockN, int Stages, int ConsumerWGs, bool Pingpong, bool Persistent, bool IsBf16>
struct Config {
  static constexpr int kHeadDim = HeadDim;
  static constexpr int kBlockN = BlockN;
  static constexpr int kStages = Stages;
  static constexpr int kConsumerWGs = ConsumerWGs;
  static constexpr bool kPingpong = Pingpong;
  // Persistent: a CTA loops over work tiles (grid = min(tiles, SMs)); otherwise one tile per CTA.
  static constexpr bool kPersistent = Persistent;
  static constexpr bool kBf16 = IsBf16;
  static constexpr int kBlockM = 64 * ConsumerWGs;
  static constexpr int kThreads = 128 * (ConsumerWGs + 1);
  static constexpr int kChunks = HeadDim / 64;  // 64-element (128-byte) columns of a swizzled tile
  // Register budget per thread (0x02: 128 x 24 + 256 x 240 = 64,512 of 65,536).
  static constexpr int kProducerRegs = ConsumerWGs == 2 ? 24 : 32;
  static constexpr int kConsumerRegs = ConsumerWGs == 2 ? 240 : 160;

  // Shared memory (bytes), every tile 1024-aligned (the 128B swizzle repeats every 8 rows x 128 B).
  static constexpr int kQBytes = kBlockM * HeadDim * 2;
  static constexpr int kKVBytes = kBlockN * HeadDim * 2;  // one stage of K (or of V)
  // O is staged for its TMA store in a buffer of its own where it fits (Q can then be reloaded for
  // the next tile while this one drains); otherwise (head dim 256) in the Q buffer, which then
  // stays taken until the store has read it.
  static constexpr bool kSeparateO = 2 * kQBytes + 2 * Stages * kKVBytes + 8 * (2 + 4 * Stages) + 1024 <= 227 * 1024;
  static constexpr int kOffQ = 0;
  static constexpr int kOffK = kOffQ + kQBytes;
  static constexpr int kOffV = kOffK + Stages * kKVBytes;
  static constexpr int kOffO = kOffV + Stages * kKVBytes;
  static constexpr int kOffBar = kOffO + (kSeparateO ? kQBytes : 0);
  static constexpr int kNumBars = 2 + 4 * Stages;  // q_full, q_empty, k_full, k_empty, v_full, v_empty
  static constexpr int kSmemBytes = kOffBar + 8 * kNumBars + 1024;  // + alignment slack

  static_assert(HeadDim % 64 == 0 && HeadDim <= 256, "head dims are multiples of 64 up to 256");
  static_assert(BlockN % 16 == 0 && BlockN <= 256, "kBlockN is a multiple of 16 (wgmma k16)");
  static_assert(!Pingpong || ConsumerWGs >= 2, "pingpong needs two or three consumer warpgroups");
  static_assert(kQBytes % 1024 == 0 && kKVBytes % 1024 == 0, "tiles keep 1024-byte alignment");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * ConsumerWGs <= 65536, "register file");
};

// ---- small helpers ---------------------------------------------------------------------------

template <bool IsBf16>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (IsBf16) return ptx::cvt_rn_bf16x2_f32(lo, hi);
  else return ptx::cvt_rn_f16x2_f32(lo, hi);
}

template <int N, bool IsBf16>
__device__ __forceinline__ void mma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, uint32_t scale_d) {
  if constexpr (IsBf16) ptx::wgmma_m64k16_f32_bf16_ss<N, 0, 0>(d, da, db, scale_d);
  else ptx::wgmma_m64k16_f32_f16_ss<N, 0, 0>(d, da, db, scale_d);
}

template <int N, bool IsBf16>
__device__ __forceinline__ void mma_rs_transb(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db,
                                              uint32_t scale_d) {
  if constexpr (IsBf16) ptx::wgmma_m64k16_f32_bf16_rs<N, 1>(d, a, db, scale_d);
  else ptx::wgmma_m64k16_f32_f16_rs<N, 1>(d, a, db, scale_d);
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// ---- the kernel body ---------------------------------------------------------------------------

template <class Cfg>
__device__ __forceinline__ void fwd_kernel_body(const FwdParams& p) {
  constexpr int kBlockM = Cfg::kBlockM, kBlockN = Cfg::kBlockN, kD = Cfg::kHeadDim;
  constexpr int kStages = Cfg::kStages, kChunks = Cfg::kChunks, G = Cfg::kConsumerWGs;
  using Ring = RingState<kStages>;
  using Tokens = TokenRing<(G >= 2 ? G : 2)>;

  extern __shared__ __align__(1024) uint8_t smem_raw[];
  // Align the carve-up to 1024 bytes in the shared state space.
  const uint32_t raw = ptx::smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  const uint32_t sQ = base + Cfg::kOffQ;
  const uint32_t sK = base + Cfg::kOffK;
  const uint32_t sV = base + Cfg::kOffV;
  const uint32_t sO = Cfg::kSeparateO ? base + Cfg::kOffO : sQ;
  const uint32_t bar_q_full = base + Cfg::kOffBar;
  const uint32_t bar_q_empty = bar_q_full + 8u;
  auto bar_k_full = [&](uint32_t s) { return bar_q_full + 8u * (2u + s); };
  auto bar_k_empty = [&](uint32_t s) { return bar_q_full + 8u * (2u + kStages + s); };
  auto bar_v_full = [&](uint32_t s) { return bar_q_full + 8u * (2u + 2 * kStages + s); };
  auto bar_v_empty = [&](uint32_t s) { return bar_q_full + 8u * (2u + 3 * kStages + s); };

  const int warpgroup = threadIdx.x / 128;
  const int tid_in_wg = threadIdx.x % 128;
  const int warp_in_wg = tid_in_wg / 32;
  const int lane = threadIdx.x % 32;

  // Work tiles (include/flashptx/tile_scheduler.h, the code the 0x0B oracle drives): this CTA takes
  // tiles blockIdx.x, blockIdx.x + gridDim.x, ... (a persistent grid when gridDim.x < num_tiles;
  // one tile per CTA when the launcher makes them equal). For causal masks each head's tiles come
  // longest first. Every role walks the same sequence and derives the same n_max per tile.
  const int num_tiles = p.num_m_blocks * p.heads_q * p.batch;
  int m_block = 0, head = 0, batch = 0, head_kv = 0, n_max = 0;
  auto set_tile = [&](int tile) {
    const TileCoord tc = tile_from_linear(tile, p.num_m_blocks, p.heads_q, p.batch, p.causal != 0);
    m_block = tc.m_block;
    head = tc.head;
    batch = tc.batch;
    head_kv = head / (p.heads_q / p.heads_kv);
    // The K/V blocks of this tile, [0, n_max), visited right to left. Causal masks are aligned to
    // the bottom-right: query row r sees key c iff c <= r + (seqlen_k - seqlen_q).
    n_max = p.causal ? causal_n_blocks(m_block, kBlockM, kBlockN, p.seqlen_q, p.seqlen_k)
                     : n_blocks(kBlockN, p.seqlen_k);
  };

  uint64_t* trace_lane = nullptr;
#if defined(FLASHPTX_TRACE) && FLASHPTX_TRACE
  if (p.trace != nullptr && blockIdx.x < trace::kMaxCtas && tid_in_wg == 0)
    trace_lane = p.trace + static_cast<size_t>(blockIdx.x * trace::kLanes + warpgroup) * trace::kWordsPerLane;
#endif

  // Barrier initialisation: one thread, then the mbarrier-init fence and a CTA barrier, so that
  // every role (and the TMA unit) sees initialised barriers before first use (0x02). Once per CTA:
  // ring states, Q phase and the pingpong token all persist across work tiles (0x03, 0x04).
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(bar_q_full, 1);
    ptx::mbarrier_init(bar_q_empty, Cfg::kSeparateO ? 4 * G : G);
    for (uint32_t s = 0; s < kStages; ++s) {
      ptx::mbarrier_init(bar_k_full(s), 1);
      ptx::mbarrier_init(bar_v_full(s), 1);
      ptx::mbarrier_init(bar_k_empty(s), 4 * G);
      ptx::mbarrier_init(bar_v_empty(s), 4 * G);
    }
    ptx::fence_mbarrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ================================ PRODUCER =================================================
    ptx::setmaxnreg_dec<Cfg::kProducerRegs>();
    if (warp_in_wg == 0 && lane == 0) {
      Ring write = Ring::producer_start();
      uint32_t q_empty_phase = 1;  // the Q buffer starts empty: the first wait passes at once
      auto load_q = [&]() {
        // The Q buffer also stages the previous tile's O: wait until its TMA store has read it.
        FLASHPTX_MBAR_WAIT(bar_q_empty, q_empty_phase, "fa3 producer: q_empty");
        q_empty_phase ^= 1u;
        ptx::mbarrier_arrive_expect_tx(bar_q_full, Cfg::kQBytes);
        for (int c = 0; c < kChunks; ++c)
          ptx::cp_async_bulk_tensor_4d_load(sQ + c * kBlockM * 128, &p.tma_q, bar_q_full, c * 64, m_block * kBlockM,
                                            head, batch);
        FLASHPTX_STAMP(trace_lane, trace::kTmaIssueQ, m_block);
      };
      for (int tile = blockIdx.x; tile < num_tiles; tile = Cfg::kPersistent ? tile + gridDim.x : num_tiles) {
        set_tile(tile);
        FLASHPTX_STAMP(trace_lane, trace::kTileBegin, tile);
        if (n_max == 0) load_q();  // consumers still take (and release) the tile's Q buffer
        // K of the first (rightmost) block, then Q, then V: Q's latency hides behind K's.
        for (int r = 0; r < n_max; ++r) {
          const int n = n_max - 1 - r;
          FLASHPTX_MBAR_WAIT(bar_k_empty(write.stage), write.phase, "fa3 producer: k_empty");
          FLASHPTX_STAMP(trace_lane, trace::kEmptyWaitK, write.stage);
          ptx::mbarrier_arrive_expect_tx(bar_k_full(write.stage), Cfg::kKVBytes);
          for (int c = 0; c < kChunks; ++c)
            ptx::cp_async_bulk_tensor_4d_load(sK + write.stage * Cfg::kKVBytes + c * kBlockN * 128, &p.tma_k,
                                              bar_k_full(write.stage), c * 64, n * kBlockN, head_kv, batch);
          FLASHPTX_STAMP(trace_lane, trace::kTmaIssueK, (n << 8) | write.stage);
          if (r == 0) load_q();
          FLASHPTX_MBAR_WAIT(bar_v_empty(write.stage), write.phase, "fa3 producer: v_empty");
          FLASHPTX_STAMP(trace_lane, trace::kEmptyWaitV, write.stage);
          ptx::mbarrier_arrive_expect_tx(bar_v_full(write.stage), Cfg::kKVBytes);
          for (int c = 0; c < kChunks; ++c)
            ptx::cp_async_bulk_tensor_4d_load(sV + write.stage * Cfg::kKVBytes + c * kBlockN * 128, &p.tma_v,
                                              bar_v_full(write.stage), c * 64, n * kBlockN, head_kv, batch);
          FLASHPTX_STAMP(trace_lane, trace::kTmaIssueV, (n << 8) | write.stage);
          write.advance();
        }
        FLASHPTX_STAMP(trace_lane, trace::kTileEnd, tile);
      }
      // Producer tail (0x03): wait until the consumers have released every stage, so the producer
      // never leaves while a stage it filled is still being read. A synchronization tail, not data.
      for (int s = 0; s < kStages; ++s) {
        FLASHPTX_MBAR_WAIT(bar_k_empty(write.stage), write.phase, "fa3 producer tail: k_empty");
        FLASHPTX_MBAR_WAIT(bar_v_empty(write.stage), write.phase, "fa3 producer tail: v_empty");
        write.advance();
      }
    }
    return;
  }

  // ================================== CONSUMERS =================================================
  ptx::setmaxnreg_inc<Cfg::kConsumerRegs>();
  const int g = warpgroup - 1;  // local consumer index: physical warpgroup minus the producer's

  // Bootstrap half-credit of the token ring (0x04): once per CTA, by consumer 0.
  if constexpr (Cfg::kPingpong) {
    if (Tokens::primes(g)) ptx::bar_arrive(Tokens::barrier_of(0), Tokens::kParticipants);
  }

  // Fragment coordinates (wgmma m64nNk16 D layout): this thread holds rows r0 and r0 + 8 of the
  // warpgroup's 64 rows, columns 8i + 2q + {0, 1} of every n8 block i.
  const int q4 = lane % 4;
  const int r0 = 16 * warp_in_wg + lane / 4;
  const int diag = p.seqlen_k - p.seqlen_q;  // bottom-right alignment offset
  int row0 = 0;                              // global query row of r0 in the current tile

  float o[kD / 2];
  float s_acc[kBlockN / 2];
  uint32_t pfrag[kBlockN / 16][4];
  float row_max[2], row_sum[2];  // row_sum: per-thread partial sums, reduced across the quad at the end
  const float scale_log2 = p.softmax_scale_log2;

  // Descriptors (ptx/wgmma.cuh). Q rows of this warpgroup, K-major, 128B swizzle, SBO = 1024.
  const uint64_t desc_q = ptx::make_smem_desc(sQ + 64 * g * 128, 0, 1024, ptx::Swizzle::k128B);

  // S = Q K^T over the head dim: kD/16 k-steps; 4 per 128-byte chunk (+32 B each).
  auto issue_qk = [&](uint32_t stage) {
    const uint64_t desc_k = ptx::make_smem_desc(sK + stage * Cfg::kKVBytes, 0, 1024, ptx::Swizzle::k128B);
    ptx::wgmma_fence_operand(s_acc);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kD / 16; ++k) {
      const uint32_t a_off = (k / 4) * kBlockM * 128 + (k % 4) * 32;
      const uint32_t b_off = (k / 4) * kBlockN * 128 + (k % 4) * 32;
      mma_ss<kBlockN, Cfg::kBf16>(s_acc, ptx::smem_desc_advance(desc_q, a_off),
                                  ptx::smem_desc_advance(desc_k, b_off), k > 0 ? 1u : 0u);
    }
    ptx::wgmma_commit_group();
    ptx::wgmma_fence_operand(s_acc);
  };
  // O (+)= P V: kBlockN/16 k-steps over the keys. V is MN-major for this GEMM (d contiguous):
  // LBO = distance between 64-column chunks, SBO = 1024 between 8-key groups; +2048 B per k16.
  auto issue_pv = [&](uint32_t stage, bool accumulate) {
    const uint64_t desc_v = ptx::make_smem_desc(sV + stage * Cfg::kKVBytes, kBlockN * 128, 1024, ptx::Swizzle::k128B);
    ptx::wgmma_fence_operand(o);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kBlockN / 16; ++k)
      mma_rs_transb<kD, Cfg::kBf16>(o, pfrag[k], ptx::smem_desc_advance(desc_v, k * 16 * 128),
                                    (accumulate || k > 0) ? 1u : 0u);
    ptx::wgmma_commit_group();
    ptx::wgmma_fence_operand(o);
  };
  // Release a stage: one arrive per warp, after this warp's wgmma wait retired the reader.
  auto release = [&](uint32_t bar) {
    if (lane == 0) ptx::mbarrier_arrive(bar);
  };

  // Whether block n holds a masked key for some row of this tile: keys past seqlen_k, or keys
  // right of the causal diagonal of the tile's first row. True exactly for a suffix of the blocks.
  auto block_needs_mask = [&](int n) {
    return (n + 1) * kBlockN > p.seqlen_k || (p.causal && (n + 1) * kBlockN - 1 > m_block * kBlockM + diag);
  };
  auto apply_mask = [&](int n) {
#pragma unroll
    for (int i = 0; i < kBlockN / 8; ++i) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = n * kBlockN + 8 * i + 2 * q4 + (e & 1);
        const int row = row0 + 8 * (e >> 1);
        const bool masked = col >= p.seqlen_k || (p.causal && col > row + diag);
        s_acc[4 * i + e] = masked ? -INFINITY : s_acc[4 * i + e];
      }
    }
  };

  // Online softmax on S of block n (0x05, base 2), masked or not as the caller knows at compile
  // time: a branch between wait_group(1) and wait_group(0) makes ptxas wait for every wgmma at the
  // join (seen in our SASS: WARPGROUP.DEPBAR.LE gsb0, 0x0 hoisted above the exponentials), so the
  // steady loop is split into a masked and an unmasked loop, each without control flow there.
  // Returns the rescale factors of the two rows (to apply to O once the PV into O has retired).
  auto softmax = [&](int n, float (&alpha)[2], auto masked_c) {
    if constexpr (decltype(masked_c)::value) apply_mask(n);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = row_max[h];
#pragma unroll
      for (int i = 0; i < kBlockN / 8; ++i) mx = fmaxf(mx, fmaxf(s_acc[4 * i + 2 * h], s_acc[4 * i + 2 * h + 1]));
      mx = quad_max(mx);
      // A row with no visible key so far keeps max -inf: use 0 as its exponent reference so that
      // exp2(-inf - ref) = 0 and never NaN; its O and sum are exactly 0 (alpha = 0 keeps them so).
      const float ref_new = mx == -INFINITY ? 0.f : mx * scale_log2;
      const float ref_old = row_max[h] == -INFINITY ? 0.f : row_max[h] * scale_log2;
      alpha[h] = row_max[h] == -INFINITY ? 0.f : ptx::ex2_approx_ftz_f32(ref_old - ref_new);
      row_max[h] = mx;
      float sum = 0.f;
#pragma unroll
      for (int i = 0; i < kBlockN / 8; ++i) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& s = s_acc[4 * i + 2 * h + e];
          s = ptx::ex2_approx_ftz_f32(fmaf(s, scale_log2, -ref_new));
          sum += s;
        }
      }
      row_sum[h] = row_sum[h] * alpha[h] + sum;
    }
  };
  // P (registers, the RS A fragment) from the exponentiated S: two adjacent n8 blocks per k16.
  auto convert_p = [&]() {
#pragma unroll
    for (int k = 0; k < kBlockN / 16; ++k) {
      pfrag[k][0] = pack2<Cfg::kBf16>(s_acc[8 * k + 0], s_acc[8 * k + 1]);
      pfrag[k][1] = pack2<Cfg::kBf16>(s_acc[8 * k + 2], s_acc[8 * k + 3]);
      pfrag[k][2] = pack2<Cfg::kBf16>(s_acc[8 * k + 4], s_acc[8 * k + 5]);
      pfrag[k][3] = pack2<Cfg::kBf16>(s_acc[8 * k + 6], s_acc[8 * k + 7]);
    }
  };
  auto rescale_o = [&](const float (&alpha)[2]) {
#pragma unroll
    for (int i = 0; i < kD / 8; ++i) {
      o[4 * i + 0] *= alpha[0];
      o[4 * i + 1] *= alpha[0];
      o[4 * i + 2] *= alpha[1];
      o[4 * i + 3] *= alpha[1];
    }
  };

  Ring k_read = Ring::consumer_start();
  Ring v_read = Ring::consumer_start();
  uint32_t q_phase = 0;
  for (int tile = blockIdx.x; tile < num_tiles; tile = Cfg::kPersistent ? tile + gridDim.x : num_tiles) {
    set_tile(tile);
    FLASHPTX_STAMP(trace_lane, trace::kTileBegin, tile);
    row0 = m_block * kBlockM + 64 * g + r0;
    row_max[0] = row_max[1] = -INFINITY;
    row_sum[0] = row_sum[1] = 0.f;
    FLASHPTX_MBAR_WAIT(bar_q_full, q_phase, "fa3 consumer: q_full");
    q_phase ^= 1u;

    if (n_max > 0) {
      // ---- startup: QK(0) and softmax(0), outside the token ring -----------------------------
      {
        FLASHPTX_MBAR_WAIT(bar_k_full(k_read.stage), k_read.phase, "fa3 consumer: k_full");
        FLASHPTX_STAMP(trace_lane, trace::kFullK, k_read.stage);
        issue_qk(k_read.stage);
        FLASHPTX_STAMP(trace_lane, trace::kQKIssue, n_max - 1);
        ptx::wgmma_wait_group<0>();
        ptx::wgmma_fence_operand(s_acc);
        FLASHPTX_STAMP(trace_lane, trace::kQKDone, n_max - 1);
        release(bar_k_empty(k_read.stage));  // QK(0) retired: K[0] has no reader left
        FLASHPTX_STAMP(trace_lane, trace::kReleaseK, k_read.stage);
        k_read.advance();
        if (Cfg::kSeparateO && n_max == 1) release(bar_q_empty);  // the tile's last QK retired
        float alpha[2];
        FLASHPTX_STAMP(trace_lane, trace::kSoftmaxBegin, n_max - 1);
        if (block_needs_mask(n_max - 1)) softmax(n_max - 1, alpha, std::true_type{});
        else softmax(n_max - 1, alpha, std::false_type{});
        convert_p();
        FLASHPTX_STAMP(trace_lane, trace::kSoftmaxEnd, n_max - 1);
      }

      // ---- steady state: QK(j) and PV(j-1) in flight together --------------------------------
      auto steady = [&](int j, auto masked_c) {
        const int n = n_max - 1 - j;
        FLASHPTX_MBAR_WAIT(bar_k_full(k_read.stage), k_read.phase, "fa3 consumer: k_full");
        FLASHPTX_STAMP(trace_lane, trace::kFullK, k_read.stage);
        if constexpr (Cfg::kPingpong) {
          FLASHPTX_STAMP(trace_lane, trace::kTokenWait, Tokens::barrier_of(g));
          ptx::bar_sync(Tokens::barrier_of(g), Tokens::kParticipants);  // my turn to issue
          FLASHPTX_STAMP(trace_lane, trace::kTokenGot, Tokens::barrier_of(g));
        }
        issue_qk(k_read.stage);  // older group
        FLASHPTX_STAMP(trace_lane, trace::kQKIssue, n);
        FLASHPTX_MBAR_WAIT(bar_v_full(v_read.stage), v_read.phase, "fa3 consumer: v_full");
        FLASHPTX_STAMP(trace_lane, trace::kFullV, v_read.stage);
        issue_pv(v_read.stage, j > 1);  // newer group; the first PV overwrites O
        FLASHPTX_STAMP(trace_lane, trace::kPVIssue, n + 1);
        if constexpr (Cfg::kPingpong) {
          ptx::bar_arrive(Tokens::barrier_of(Tokens::next(g)), Tokens::kParticipants);  // pass the token
          FLASHPTX_STAMP(trace_lane, trace::kTokenPass, Tokens::barrier_of(Tokens::next(g)));
        }
        ptx::wgmma_wait_group<1>();  // QK(j) complete; PV(j-1) may still run
        ptx::wgmma_fence_operand(s_acc);
        FLASHPTX_STAMP(trace_lane, trace::kQKDone, n);
        release(bar_k_empty(k_read.stage));
        FLASHPTX_STAMP(trace_lane, trace::kReleaseK, k_read.stage);
        k_read.advance();
        if (Cfg::kSeparateO && j == n_max - 1) release(bar_q_empty);  // the tile's last QK retired
        float alpha[2];
        FLASHPTX_STAMP(trace_lane, trace::kSoftmaxBegin, n);
        softmax(n, alpha, masked_c);
        // Pin the exponentials here, before the wait below: they are plain register arithmetic, and
        // without a volatile use of S the compiler sinks them past wgmma.wait_group 0, which
        // serialises softmax(j) after PV(j-1) and loses the overlap this loop exists for (0x05).
        ptx::wgmma_fence_operand(s_acc);
        FLASHPTX_STAMP(trace_lane, trace::kSoftmaxEnd, n);
        ptx::wgmma_wait_group<0>();  // PV(j-1) complete: O readable, P and V[j-1] reusable
        ptx::wgmma_fence_operand(o);
        FLASHPTX_STAMP(trace_lane, trace::kPVDone, n + 1);
        release(bar_v_empty(v_read.stage));
        FLASHPTX_STAMP(trace_lane, trace::kReleaseV, v_read.stage);
        v_read.advance();
        rescale_o(alpha);
        convert_p();
      };
      // Blocks [n_unmasked_end, n_max) need the mask: the first steps of the right-to-left walk.
      int n_unmasked_end = n_max;
      while (n_unmasked_end > 0 && block_needs_mask(n_unmasked_end - 1)) --n_unmasked_end;
      const int j_unmasked = max(1, n_max - n_unmasked_end);
      for (int j = 1; j < j_unmasked && j < n_max; ++j) steady(j, std::true_type{});
      for (int j = j_unmasked; j < n_max; ++j) steady(j, std::false_type{});


      // ---- drain: PV(J-1) --------------------------------------------------------------------
      FLASHPTX_MBAR_WAIT(bar_v_full(v_read.stage), v_read.phase, "fa3 consumer: v_full");
      FLASHPTX_STAMP(trace_lane, trace::kFullV, v_read.stage);
      issue_pv(v_read.stage, n_max > 1);
      FLASHPTX_STAMP(trace_lane, trace::kPVIssue, 0);
      ptx::wgmma_wait_group<0>();
      ptx::wgmma_fence_operand(o);
      FLASHPTX_STAMP(trace_lane, trace::kPVDone, 0);
      release(bar_v_empty(v_read.stage));
      FLASHPTX_STAMP(trace_lane, trace::kReleaseV, v_read.stage);
      v_read.advance();
    } else {
      // No admissible key for any row of this tile (causal, seqlen_q > seqlen_k): O = 0, LSE = -inf.
      if (Cfg::kSeparateO) release(bar_q_empty);  // Q was loaded but has no reader
#pragma unroll
      for (int i = 0; i < kD / 2; ++i) o[i] = 0.f;
    }

    // ================================ EPILOGUE ==================================================
    FLASHPTX_STAMP(trace_lane, trace::kEpilogueBegin, m_block);
    float inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float l = quad_sum(row_sum[h]);
      inv[h] = l > 0.f ? 1.f / l : 0.f;
      const int row = row0 + 8 * h;
      if (p.lse != nullptr && q4 == 0 && row < p.seqlen_q) {
        const float lse = l > 0.f ? row_max[h] * p.softmax_scale + logf(l) : -INFINITY;
        p.lse[(static_cast<int64_t>(batch) * p.heads_q + head) * p.seqlen_q + row] = lse;
      }
    }
    // O tile of this warpgroup -> its rows of the O staging buffer (the Q buffer for head dim 256:
    // its last QK has retired, and the other warpgroups read only their own rows), in the
    // 128B-swizzled layout of the O tensor map: row r at r*128 B, 16-byte unit u stored at u ^ (r % 8).
    const uint32_t s_o = sO + 64 * g * 128;
    if constexpr (Cfg::kSeparateO) {
      // The previous tile's store from this buffer must have read it before it is overwritten.
      if (tid_in_wg == 0) ptx::cp_async_bulk_wait_group_read<0>();
      ptx::bar_sync(kBarEpilogueWG0 + g, 128);
    }
#pragma unroll
    for (int i = 0; i < kD / 8; ++i) {
      const uint32_t chunk = s_o + (i / 8) * kBlockM * 128;
      const int u = i % 8;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + 8 * h;
        const uint32_t addr = chunk + r * 128 + ((u ^ (r % 8)) * 16) + q4 * 4;
        const uint32_t v = pack2<Cfg::kBf16>(o[4 * i + 2 * h] * inv[h], o[4 * i + 2 * h + 1] * inv[h]);
        asm volatile("st.shared.b32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
      }
    }
    // Generic-proxy writes -> async-proxy read by the TMA store: fence in every writer, then the
    // warpgroup's own barrier, then one thread stores (0x02).
    ptx::fence_proxy_async_shared_cta();
    ptx::bar_sync(kBarEpilogueWG0 + g, 128);
    if (tid_in_wg == 0) {
      for (int c = 0; c < kChunks; ++c)
        ptx::cp_async_bulk_tensor_4d_store(&p.tma_o, s_o + c * kBlockM * 128, c * 64, m_block * kBlockM + 64 * g,
                                           head, batch);
      ptx::cp_async_bulk_commit_group();
      if constexpr (!Cfg::kSeparateO) {
        // The store reads the Q buffer: only once it has, may the producer load the next tile's Q
        // into it.
        ptx::cp_async_bulk_wait_group_read<0>();
        ptx::mbarrier_arrive(bar_q_empty);
      }
    }
    FLASHPTX_STAMP(trace_lane, trace::kEpilogueEnd, m_block);
    FLASHPTX_STAMP(trace_lane, trace::kTileEnd, tile);
  }
  // The last store's source is this CTA's shared memory: it must have been read before exit.
  if (tid_in_wg == 0) ptx::cp_async_bulk_wait_group_read<0>();
}

}  // namespace flashptx::fa3
