// FlashAttention-4 forward on Blackwell (sm_100a), by hand.
//
// NEVER EXECUTED. No Blackwell GPU exists where this was written: the kernel is compiled for sm_100a,
// disassembled and order-checked (sass_golden/sm_100a/fa4_fwd_*.check), and its MMA issue sequence,
// TMEM column map and softmax/correction arithmetic are replayed through the project's tcgen05
// emulator on the CPU against an fp64 reference (tests/host/test_fa4_replay.cpp). The memory-model
// claims below rest on reading the PTX ISA; each says where it comes from.
//
// Sources: the FA4 paper (Zadouri et al.); docs/PROTOCOLS.md, "TMEM planning" and "The FA4
// roles"; PTX ISA "Tensorcore 5th Generation Family Instructions" (tcgen05.*), "mbarrier",
// "clusterlaunchcontrol", "cp.async.bulk".
//
// A work tile is 256 query rows per CTA (two Q stages of 128: H and L; a cta_group::2 pair covers 512)
// of one (batch, head) against the K/V blocks of 128 keys it may see, visited right to left. CTAs
// take tiles from a ring the scheduler warp fills with cluster launch control (work stealing); every
// other role reads the same tile sequence. Roles (src/protocol/fa4_plan.h role_spec):
//
//   warps 0-3   SOFTMAX H    one thread per query row of stage H: S from TMEM (tcgen05.ld), mask,
//   warps 4-7   SOFTMAX L    row max, the conditional-rescale reference step, exponentials (MUFU.EX2
//                            and the degree-3 polynomial on the FMA pipe), P as 16-bit pairs back into
//                            the tail half of S (tcgen05.st), row sum. H and L take turns through a
//                            named-barrier token around their exponentials (the paper's ping-pong).
//   warps 8-11  CORRECTION   rescales O_i in TMEM when some row's reference moved (warp vote),
//                            releases O_i for the next PV; at the tile's end normalises O, stages it
//                            in shared memory for the TMA store, writes LSE.
//   warp 12     MMA          allocates the 512 TMEM columns; one thread issues every tcgen05.mma:
//                            S_i = Q_i K^T (SS), O_i += P_i V (TS: P read from TMEM), and commits each
//                            hand-off to an mbarrier. In the peer CTA of a pair: the relay (below).
//   warp 13     EPILOGUE     TMA store of the staged O tile.
//   warp 14     LOAD         TMA Q (per stage) and K, V (one ring, K0 V0 K1 V1 ...).
//   warp 15     SCHEDULER    clusterlaunchcontrol.try_cancel: the next tile, into the tile ring.
//
// TMEM (one CTA, 512 columns from column 0): S0 [0,128), S1 [128,256), P_i in the tail half of S_i
// (bf16/fp16 pairs, 64 columns), O0 [256, 256+d), O1 [256+d, 256+2d). S_i and P_i alias: P_i is written
// only after the softmax has loaded all of S_i, and the next S_i only after the PV reading P_i has
// completed (mma_tile_schedule's wait_s_free).
//
// Barriers (fa4_plan.h barrier_spec; slots and counts: FwdLayout, src/sm100/fa4_fwd_config.h):
//   q_full[i], kv_full[s]   TMA bytes -> MMA            q_empty[i], kv_empty[s]   tcgen05.commit -> load
//   s_full[i]               commit -> softmax i         p_ready[i]   softmax i -> MMA
//   o_ready[i]              commit -> correction, MMA   o_rescaled[i] correction -> MMA
//   stats_full/empty[i]     softmax i <-> correction (gamma per block; D and the reference at the end)
//   o_staged, o_free        correction <-> epilogue     sched_full/empty[2]  scheduler <-> every role
//   clc                     the try_cancel response
// Every TMEM hand-off between threads is: producer's tcgen05.wait::ld/st (or tcgen05.commit) ->
// tcgen05.fence::before_thread_sync -> mbarrier arrive ... mbarrier wait -> tcgen05.fence::
// after_thread_sync -> consumer's tcgen05 operation (PTX ISA "Memory Consistency Model for 5th
// generation of TensorCore operations", the canonical patterns).
//
// cta_group::2 (a cluster of 2; rank 0 the leader): each CTA holds its own Q rows, half of each K block
// (64 keys) and half of each V block's head dim (64 columns), and its own TMEM; the leader's MMA thread
// issues M = 256 MMAs over both; its commits are multicast to both CTAs' barriers. The peer's warps
// arrive on the leader's p_ready / o_rescaled / sched_empty remotely (mbarrier.arrive.release.cluster).
// The peer's TMA loads complete on the peer's own barriers (this project's TMA wrapper has no
// .cta_group::2 form), so the peer's warp 12 relays each: it waits its q_full / kv_full and arrives on
// the leader's, which count that arrival. With cta_group == 2 every wait acquires at cluster scope
// (FLASHPTX_MBAR_WAIT_SCOPED, ptx/mbarrier.cuh mbarrier_try_wait_parity_cluster): an acquire.cta does
// not synchronize with the peer's release.cluster arrive (PTX ISA, Memory Consistency Model: each
// one's scope must include the other thread), so the leader's MMA reads of the peer's shared memory
// and TMEM, and the peer's reads of the tile index the leader stored, would not be ordered (the PTX
// simulator's report; docs/DECISIONS.md, "FA4 2-CTA waits at cluster scope"). The 1-CTA kernels keep
// .acquire.cta. READING ONLY: that this relay (acquire.cluster on the peer, release.cluster to the
// leader, acquire.cluster there) orders the peer's TMA bytes before the leader's MMA reads them is our
// reading of the memory model, executed in the simulator, never on a Blackwell GPU; CUTLASS uses the
// .cta_group::2 TMA instead.
#pragma once
#include <cuda.h>
#include <cstdint>

#include "src/protocol/fa4_plan.h"
#include "src/protocol/pingpong.h"
#include "src/protocol/ring.h"
#include "src/protocol/tile_scheduler.h"
#include "ptx/barrier.cuh"
#include "ptx/clc.cuh"
#include "ptx/cluster.cuh"
#include "ptx/cvt.cuh"
#include "ptx/fence.cuh"
#include "ptx/ldst.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tcgen05.cuh"
#include "ptx/tma.cuh"
#include "src/sm100/fa4_fwd_config.h"

#if defined(__CUDA_ARCH__) && !FLASHPTX_HAS_SM100A
#error "src/sm100/fa4_fwd.cuh is Blackwell code: compile it with -gencode arch=compute_100a,code=sm_100a"
#endif

namespace flashptx::fa4 {

// ---- shared memory, carved from FwdLayout ----------------------------------------------------------
template <FwdConfig C>
struct FwdSmem {
  using L = FwdLayout<C>;
  uint32_t base;  // 1024-aligned shared::cta address
  uint8_t* ptr;   // the same bytes as a generic pointer (the small records are read with plain loads)
  __device__ __forceinline__ uint32_t q(int i) const { return base + L::kOffQ + i * L::kQBytes; }
  __device__ __forceinline__ uint32_t kv(uint32_t s) const { return base + L::kOffKv + s * L::kSlotBytes; }
  __device__ __forceinline__ uint32_t o() const { return base + L::kOffO; }
  __device__ __forceinline__ uint32_t bar(Bar b, int copy = 0) const { return base + L::kOffBar + 8u * L::slot(b, copy); }
  __device__ __forceinline__ uint32_t sched(int s) const { return base + L::kOffSched + 4u * s; }
  __device__ __forceinline__ uint32_t tmem_slot() const { return base + L::kOffTmemBase; }
  __device__ __forceinline__ uint32_t clc() const { return base + L::kOffClc; }
  __device__ __forceinline__ float* scale(int i) const {
    return reinterpret_cast<float*>(ptr + L::kOffScale) + i * kStageRows;
  }
  __device__ __forceinline__ float2* final_stats(int i) const {
    return reinterpret_cast<float2*>(ptr + L::kOffFinal) + i * kStageRows;
  }
  __device__ __forceinline__ volatile float* bias(int i) const {
    return reinterpret_cast<volatile float*>(ptr + L::kOffBias) + i * kStageRows;
  }
  __device__ __forceinline__ int sched_tile(int s) const {
    return *reinterpret_cast<volatile const int*>(ptr + L::kOffSched + 4 * s);
  }
};

// ---- small helpers ------------------------------------------------------------------------------------
// One phase bit per copy of a per-stage barrier.
struct Phases {
  uint32_t bits = 0;
  __device__ __forceinline__ uint32_t operator[](int i) const { return (bits >> i) & 1u; }
  __device__ __forceinline__ void flip(int i) { bits ^= 1u << i; }
};

// The hardware side of the softmax arithmetic (fa4_plan.h exp_pack_fragment): MUFU.EX2 and cvt.
template <bool Bf16>
struct DeviceMath {
  FLASHPTX_HD static float ex2(float x) {
#ifdef __CUDA_ARCH__
    return ptx::ex2_approx_ftz_f32(x);
#else
    return x;  // host pass only; never called
#endif
  }
  FLASHPTX_HD static uint32_t pack(float lo, float hi) {
#ifdef __CUDA_ARCH__
    if constexpr (Bf16) return ptx::cvt_rn_bf16x2_f32(lo, hi);
    else return ptx::cvt_rn_f16x2_f32(lo, hi);
#else
    return static_cast<uint32_t>(lo + hi);  // host pass only; never called
#endif
  }
};

// This CTA's rank in its pair (0 for cta_group::1). Read where it is used rather than kept from kernel
// entry: a value live across the setmaxnreg regions is one ptxas spills.
template <int G>
__device__ __forceinline__ uint32_t cta_rank() {
  if constexpr (G == 1) return 0u;
  else return ptx::cluster_ctarank();
}

// Arrive on barrier `bar` of the pair's leader: locally in the leader (and in a single CTA), remotely
// (mapa to rank 0, release at cluster scope) from the peer.
template <int G>
__device__ __forceinline__ void arrive_on_leader(uint32_t bar, uint32_t rank) {
  if (G == 1 || rank == 0) ptx::mbarrier_arrive(bar);
  else ptx::mbarrier_arrive_cluster(ptx::mapa_shared_cluster(bar, 0));
}
// tcgen05.commit of this thread's MMAs to `bar`; cta_group::2 multicasts it to both CTAs' copies.
template <int G>
__device__ __forceinline__ void commit_to(uint32_t bar) {
  if constexpr (G == 1) ptx::tcgen05_commit<1>(bar);
  else ptx::tcgen05_commit_multicast<2>(bar, 0b11);
}

// ---- work tiles (fa4_plan.h tile_at: the code the replay runs) ---------------------------------------
template <FwdConfig C>
__device__ __forceinline__ Tile tile_at(const FwdParams& p, int index) {
  return fa4::tile_at(index, p.num_m_blocks, p.heads_q, p.heads_kv, p.batch, p.causal != 0, p.seqlen_q, p.seqlen_k,
                      C.cta_group);
}

// Reads the next tile index (-1: no more) from the scheduler ring. `whole_warp`: every lane waits and
// reads, one arrive for the warp; otherwise the calling thread alone (the single-thread roles).
template <FwdConfig C>
struct TileReader {
  RingState<kSchedulerSlots> at = RingState<kSchedulerSlots>::consumer_start();
  __device__ __forceinline__ int next(const FwdSmem<C>& sm, uint32_t rank, bool whole_warp) {
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kSchedFull, at.stage), at.phase, "fa4: sched_full");
    const int t = sm.sched_tile(at.stage);
    if (whole_warp) __syncwarp();
    if (!whole_warp || threadIdx.x % 32 == 0) arrive_on_leader<C.cta_group>(sm.bar(Bar::kSchedEmpty, at.stage), rank);
    at.advance();
    return t;
  }
};

// ==================================== SCHEDULER (warp 15, leader) ==========================================
// Cluster launch control (ptx/clc.cuh): the grid has one CTA (pair) per tile; a running CTA cancels
// the launch of one not yet started and takes its tile, until a request fails. Only this thread reads
// the response, so its own proxy fence (generic reads -> the next try_cancel's async write) suffices.
template <FwdConfig C>
struct Scheduler {
  static constexpr int G = C.cta_group;
  const FwdSmem<C> sm;
  RingState<kSchedulerSlots> write = RingState<kSchedulerSlots>::producer_start();

  __device__ __forceinline__ void publish(int tile) {
    const uint32_t s = write.stage;
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kSchedEmpty, s), write.phase, "fa4 scheduler: sched_empty");
    ptx::st_shared_b32(sm.sched(s), static_cast<uint32_t>(tile));
    if constexpr (G == 2) ptx::st_shared_cluster_u32(ptx::mapa_shared_cluster(sm.sched(s), 1), static_cast<uint32_t>(tile));
    ptx::mbarrier_arrive(sm.bar(Bar::kSchedFull, s));  // release: the slot's store
    if constexpr (G == 2) ptx::mbarrier_arrive_cluster(ptx::mapa_shared_cluster(sm.bar(Bar::kSchedFull, s), 1));
    write.advance();
  }

  __device__ __forceinline__ void run() {
    int tile = static_cast<int>(blockIdx.x) / G;  // this cluster's own tile first
    uint32_t clc_phase = 0;
    for (;;) {
      publish(tile);
      if (tile < 0) break;
      ptx::mbarrier_arrive_expect_tx(sm.bar(Bar::kClc), 16);
      ptx::clusterlaunchcontrol_try_cancel(sm.clc(), sm.bar(Bar::kClc));
      FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kClc), clc_phase, "fa4 scheduler: clc");
      clc_phase ^= 1u;
      const ptx::ClcResponse r = ptx::clc_response_load(sm.clc());
      tile = ptx::clusterlaunchcontrol_query_cancel_is_canceled(r)
                 ? static_cast<int>(ptx::clusterlaunchcontrol_query_cancel_get_first_ctaid(r).x) / G
                 : -1;  // a failed request is the last one
      ptx::fence_proxy_async_shared_cta();
    }
    // Tail: every reader has taken the last indices (no remote arrive still in flight at exit).
    for (int s = 0; s < kSchedulerSlots; ++s) {
      FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kSchedEmpty, write.stage), write.phase, "fa4 scheduler tail: sched_empty");
      write.advance();
    }
  }
};

// ==================================== LOAD (warp 14, one thread) ============================================
// Q of stage H, K(0), Q of stage L, V(0), K(1), V(1), ...: the order the MMA thread consumes them.
template <FwdConfig C>
struct Loader {
  using L = FwdLayout<C>;
  using Plan = typename L::Plan;
  static constexpr int G = C.cta_group;
  const FwdParams& p;
  const FwdSmem<C> sm;
  const uint32_t rank;
  RingState<L::kSlots> write = RingState<L::kSlots>::producer_start();
  Phases q_empty{0b11u};  // both Q buffers start empty: the first waits pass at once

  __device__ __forceinline__ void load_q(const Tile& t, int i) {
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kQEmpty, i), q_empty[i], "fa4 load: q_empty");
    q_empty.flip(i);
    ptx::mbarrier_arrive_expect_tx(sm.bar(Bar::kQFull, i), Plan::kQBytes);
    for (int c = 0; c < C.head_dim / kChunkElems; ++c)
      ptx::cp_async_bulk_tensor_4d_load(sm.q(i) + Plan::q_chunk(c), &p.tma_q, sm.bar(Bar::kQFull, i), c * kChunkElems,
                                        q_row0(t.m_block, i, rank, G), t.head, t.batch);
  }
  __device__ __forceinline__ uint32_t take_slot(uint32_t bytes) {
    const uint32_t s = write.stage;
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kKvEmpty, s), write.phase, "fa4 load: kv_empty");
    ptx::mbarrier_arrive_expect_tx(sm.bar(Bar::kKvFull, s), bytes);
    write.advance();
    return s;
  }
  // This CTA's share of block n: keys [128 n + 64 rank, +64) of K (cta_group::2), all 128 keys of V
  // but head-dim columns [64 rank, +64).
  __device__ __forceinline__ void load_k(const Tile& t, int n) {
    const uint32_t s = take_slot(Plan::kKBytes);
    for (int c = 0; c < C.head_dim / kChunkElems; ++c)
      ptx::cp_async_bulk_tensor_4d_load(sm.kv(s) + Plan::k_chunk(c), &p.tma_k, sm.bar(Bar::kKvFull, s), c * kChunkElems,
                                        n * kBlockN + static_cast<int>(rank) * Plan::kNLocal, t.head_kv, t.batch);
  }
  __device__ __forceinline__ void load_v(const Tile& t, int n) {
    const uint32_t s = take_slot(Plan::kVBytes);
    for (int c = 0; c < Plan::kDLocal / kChunkElems; ++c)
      ptx::cp_async_bulk_tensor_4d_load(sm.kv(s) + Plan::v_chunk(c), &p.tma_v, sm.bar(Bar::kKvFull, s),
                                        static_cast<int>(rank) * Plan::kDLocal + c * kChunkElems, n * kBlockN, t.head_kv,
                                        t.batch);
  }

  __device__ __forceinline__ void run() {
    TileReader<C> tiles;
    for (;;) {
      const int index = tiles.next(sm, rank, false);
      if (index < 0) break;
      const Tile t = tile_at<C>(p, index);
      if (t.n_max == 0) continue;  // every row masked: nothing to load, nothing to multiply
      load_q(t, 0);
      for (int j = 0; j < t.n_max; ++j) {
        const int n = block_of_step(t.n_max, j);
        load_k(t, n);
        if (j == 0) load_q(t, 1);
        load_v(t, n);
      }
    }
    // Tail: every slot and Q buffer released (no commit arrive in flight at exit).
    for (int s = 0; s < L::kSlots; ++s) {
      FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kKvEmpty, write.stage), write.phase, "fa4 load tail: kv_empty");
      write.advance();
    }
    for (int i = 0; i < kQStages; ++i) FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kQEmpty, i), q_empty[i], "fa4 load tail: q_empty");
  }
};

// ==================================== MMA (warp 12, one thread) =============================================
// The visitor of fa4_plan.h mma_tile_schedule: waits, K steps, commits. Descriptors, TMEM columns and
// K-step advances come from MmaPlan, the code the emulator replay runs.
template <FwdConfig C>
struct MmaIssuer {
  using L = FwdLayout<C>;
  using Plan = typename L::Plan;
  static constexpr int G = C.cta_group;
  const FwdSmem<C> sm;
  const uint32_t tmem;
  RingState<L::kSlots> kv_read = RingState<L::kSlots>::consumer_start();
  RingState<L::kSlots> kv_release = RingState<L::kSlots>::consumer_start();
  Phases q_full, p_ready, o_rescaled, o_ready;
  uint32_t pv_issued = 0;  // bit i: some PV_i was issued (its completion guards the next S_i)
  uint32_t k_slot = 0, v_slot = 0;

  __device__ __forceinline__ void wait_q(int i) {
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kQFull, i), q_full[i], "fa4 mma: q_full");
    q_full.flip(i);
  }
  __device__ __forceinline__ void wait_kv(bool is_v, int) {
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kKvFull, kv_read.stage), kv_read.phase, "fa4 mma: kv_full");
    (is_v ? v_slot : k_slot) = kv_read.stage;
    kv_read.advance();
  }
  __device__ __forceinline__ void wait_p_ready(int i, int) {
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kPReady, i), p_ready[i], "fa4 mma: p_ready");
    p_ready.flip(i);
    ptx::tcgen05_fence_after_thread_sync();  // the softmax's tcgen05.st of P before this MMA's read
  }
  __device__ __forceinline__ void wait_o_rescaled(int i, int) {
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kORescaled, i), o_rescaled[i], "fa4 mma: o_rescaled");
    o_rescaled.flip(i);
    ptx::tcgen05_fence_after_thread_sync();  // the correction's tcgen05.ld/st of O before this MMA
  }
  __device__ __forceinline__ void wait_s_free(int i, int) {
    if (((pv_issued >> i) & 1u) == 0u) return;
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kOReady, i), o_ready[i], "fa4 mma: o_ready (S free)");
    o_ready.flip(i);
    ptx::tcgen05_fence_after_thread_sync();
  }
  __device__ __forceinline__ void issue_qk(int i, int) {
#pragma unroll
    for (uint32_t s = 0; s < Plan::kQkSteps; ++s) {
      const Issue is = Plan::qk(tmem, sm.q(i), sm.kv(k_slot), i, s);
      ptx::tcgen05_mma_f16_ss<G>(is.d_tmem, is.a_desc, is.b_desc, is.idesc, is.accumulate);
    }
  }
  __device__ __forceinline__ void issue_pv(int i, int j) {
#pragma unroll
    for (uint32_t s = 0; s < Plan::kPvSteps; ++s) {
      const Issue is = Plan::pv(tmem, sm.kv(v_slot), i, s, j > 0);
      ptx::tcgen05_mma_f16_ts<G>(is.d_tmem, is.a_tmem, is.b_desc, is.idesc, is.accumulate);
    }
    pv_issued |= 1u << i;
  }
  __device__ __forceinline__ void commit_s_full(int i, int) { commit_to<G>(sm.bar(Bar::kSFull, i)); }
  __device__ __forceinline__ void commit_o_ready(int i, int) { commit_to<G>(sm.bar(Bar::kOReady, i)); }
  __device__ __forceinline__ void commit_q_empty(int i) { commit_to<G>(sm.bar(Bar::kQEmpty, i)); }
  __device__ __forceinline__ void release_kv(bool, int) {
    commit_to<G>(sm.bar(Bar::kKvEmpty, kv_release.stage));
    kv_release.advance();
  }

  __device__ __forceinline__ void run(const FwdParams& p) {
    TileReader<C> tiles;
    for (;;) {
      const int index = tiles.next(sm, 0, false);
      if (index < 0) break;
      const Tile t = tile_at<C>(p, index);
      if (t.n_max > 0) mma_tile_schedule(t.n_max, *this);
    }
  }
};

// The peer CTA's warp 12 (cta_group::2): walks the same schedule and forwards each landing of its own
// Q stages and ring slots to the leader's barrier (see the file comment; reading only).
template <FwdConfig C>
struct Relay {
  using L = FwdLayout<C>;
  const FwdSmem<C> sm;
  RingState<L::kSlots> kv_read = RingState<L::kSlots>::consumer_start();
  Phases q_full;

  __device__ __forceinline__ void wait_q(int i) {
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kQFull, i), q_full[i], "fa4 relay: q_full");
    q_full.flip(i);
    ptx::mbarrier_arrive_cluster(ptx::mapa_shared_cluster(sm.bar(Bar::kQFull, i), 0));
  }
  __device__ __forceinline__ void wait_kv(bool, int) {
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kKvFull, kv_read.stage), kv_read.phase, "fa4 relay: kv_full");
    ptx::mbarrier_arrive_cluster(ptx::mapa_shared_cluster(sm.bar(Bar::kKvFull, kv_read.stage), 0));
    kv_read.advance();
  }
  __device__ __forceinline__ void wait_p_ready(int, int) {}
  __device__ __forceinline__ void wait_o_rescaled(int, int) {}
  __device__ __forceinline__ void wait_s_free(int, int) {}
  __device__ __forceinline__ void issue_qk(int, int) {}
  __device__ __forceinline__ void issue_pv(int, int) {}
  __device__ __forceinline__ void commit_s_full(int, int) {}
  __device__ __forceinline__ void commit_o_ready(int, int) {}
  __device__ __forceinline__ void commit_q_empty(int) {}
  __device__ __forceinline__ void release_kv(bool, int) {}

  __device__ __forceinline__ void run(const FwdParams& p) {
    TileReader<C> tiles;
    for (;;) {
      const int index = tiles.next(sm, 1, false);
      if (index < 0) break;
      const Tile t = tile_at<C>(p, index);
      if (t.n_max > 0) mma_tile_schedule(t.n_max, *this);
    }
  }
};

// ==================================== SOFTMAX (warps 0-7) ===================================================
template <FwdConfig C>
struct Softmax {
  using L = FwdLayout<C>;
  using Plan = typename L::Plan;
  using Tokens = TokenRing<kQStages>;
  static constexpr int G = C.cta_group;
  const FwdParams& p;
  const FwdSmem<C> sm;
  const uint32_t tmem, rank;
  const int i;     // stage: 0 = H (warps 0-3), 1 = L (warps 4-7)
  const int warp;  // warp index in the CTA; its lane quarter is warp % 4
  const int t;     // row of the stage: TMEM lane 32 (warp % 4) + lane
  const float lambda;
  Phases s_full, stats_empty{0b11u};

  __device__ __forceinline__ Softmax(const FwdParams& p_, const FwdSmem<C> sm_, uint32_t tmem_, uint32_t rank_)
      : p(p_), sm(sm_), tmem(tmem_), rank(rank_), i(static_cast<int>(threadIdx.x) / 128),
        warp(static_cast<int>(threadIdx.x) / 32), t(static_cast<int>(threadIdx.x) % 128),
        lambda(p_.softmax_scale_log2) {}

  __device__ __forceinline__ void wait_stats_slot() {
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kStatsEmpty, i), stats_empty[i], "fa4 softmax: stats_empty");
    stats_empty.flip(i);
  }
  __device__ __forceinline__ void publish_stats() {
    __syncwarp();
    if (threadIdx.x % 32 == 0) ptx::mbarrier_arrive(sm.bar(Bar::kStatsFull, i));
  }

  // One K/V block n of row `row`: S_i -> P_i, the row state carried in `st`.
  __device__ __forceinline__ void block(int row, int n, RowState& st) {
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kSFull, i), s_full[i], "fa4 softmax: s_full");
    s_full.flip(i);
    ptx::tcgen05_fence_after_thread_sync();  // the MMA's S (commit -> mbarrier) before tcgen05.ld
    uint32_t r0[Plan::kSLoadCols], r1[Plan::kSLoadCols];
    ptx::tcgen05_ld_32x32b_x64(Plan::s_taddr(tmem, warp, i, 0), r0);
    ptx::tcgen05_ld_32x32b_x64(Plan::s_taddr(tmem, warp, i, 1), r1);
    ptx::tcgen05_wait_ld_bind(r0);  // waits for both loads
    ptx::tcgen05_wait_ld_bind(r1);
    float s[kBlockN];
#pragma unroll
    for (int k = 0; k < Plan::kSLoadCols; ++k) {
      s[k] = __uint_as_float(r0[k]);
      s[Plan::kSLoadCols + k] = __uint_as_float(r1[k]);
    }
    const int lim = key_limit(row, n, p.seqlen_q, p.seqlen_k, p.causal != 0);
    if (lim < kBlockN) {
#pragma unroll
      for (int k = 0; k < kBlockN; ++k) s[k] = k < lim ? s[k] : -INFINITY;
    }
    const RefStep rs = reference_step(st, row_max(s), lambda, static_cast<float>(C.tau_log2), 0.0f);
    // The row scale goes to the correction before the exponentials, so that O_i's rescale overlaps them.
    wait_stats_slot();
    sm.scale(i)[t] = rs.gamma;
    publish_stats();
    // The exponentials, one warpgroup at a time (H, L, H, ...): P_i over the tail half of S_i.
    // Every exponent is fma(s, lambda, bias), and bias makes a round trip through this thread's shared-
    // memory slot across the token wait: a load cannot move above bar.sync, so neither can any
    // exponential. (ex2.approx is plain arithmetic to the compilers: without this, ptxas computed most of
    // them before the BAR.SYNC, and an empty volatile asm on bias does not reach ptxas.)
    sm.bias(i)[t] = rs.bias;
    ptx::bar_sync(Tokens::barrier_of(i), Tokens::kParticipants);
    const float bias = sm.bias(i)[t];
    float psum = 0.0f;
#pragma unroll
    for (int c = 0; c < kFragments; ++c) {
      uint32_t packed[kFragment / 2];
      psum = exp_pack_fragment<C.emu, DeviceMath<C.bf16>>(s + kFragment * c, c, lambda, bias, packed, psum);
      ptx::tcgen05_st_32x32b_x16(Plan::p_taddr(tmem, warp, i, c), packed);
    }
    ptx::bar_arrive(Tokens::barrier_of(Tokens::next(i)), Tokens::kParticipants);
    ptx::tcgen05_wait_st();
    ptx::tcgen05_fence_before_thread_sync();
    __syncwarp();
    if (threadIdx.x % 32 == 0) arrive_on_leader<G>(sm.bar(Bar::kPReady, i), rank);
    row_accumulate(st, rs.gamma, psum);
  }

  __device__ __forceinline__ void run() {
    if (Tokens::primes(i)) ptx::bar_arrive(Tokens::barrier_of(0), Tokens::kParticipants);  // once per CTA
    TileReader<C> tiles;
    for (;;) {
      const int index = tiles.next(sm, rank, true);
      if (index < 0) break;
      const Tile tl = tile_at<C>(p, index);
      const int row = q_row0(tl.m_block, i, static_cast<int>(rank), G) + t;
      RowState st = row_start();
      for (int j = 0; j < tl.n_max; ++j) block(row, block_of_step(tl.n_max, j), st);
      // The final record: D and the retained reference, for the epilogue's normalisation and LSE.
      wait_stats_slot();
      sm.final_stats(i)[t] = make_float2(st.d, st.a);
      publish_stats();
    }
  }
};

// ==================================== CORRECTION (warps 8-11) ===============================================
template <FwdConfig C>
struct Correction {
  using L = FwdLayout<C>;
  using Plan = typename L::Plan;
  static constexpr int G = C.cta_group;
  static constexpr int kOChunks = C.head_dim / Plan::kOChunkCols;
  const FwdParams& p;
  const FwdSmem<C> sm;
  const uint32_t tmem, rank;
  const int warp, t;
  Phases stats_full, o_ready;
  uint32_t o_free_phase = 1;  // the staging tile starts free

  __device__ __forceinline__ Correction(const FwdParams& p_, const FwdSmem<C> sm_, uint32_t tmem_, uint32_t rank_)
      : p(p_), sm(sm_), tmem(tmem_), rank(rank_), warp(static_cast<int>(threadIdx.x) / 32),
        t(static_cast<int>(threadIdx.x) % 128) {}

  __device__ __forceinline__ void take_stats(int i) {
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kStatsFull, i), stats_full[i], "fa4 correction: stats_full");
    stats_full.flip(i);
  }
  __device__ __forceinline__ void release_stats(int i) {
    __syncwarp();
    if (threadIdx.x % 32 == 0) ptx::mbarrier_arrive(sm.bar(Bar::kStatsEmpty, i));
  }
  __device__ __forceinline__ void wait_o_ready(int i) {
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kOReady, i), o_ready[i], "fa4 correction: o_ready");
    o_ready.flip(i);
    ptx::tcgen05_fence_after_thread_sync();  // the PV's O (commit -> mbarrier) before tcgen05.ld
  }
  __device__ __forceinline__ void release_o(int i) {
    ptx::tcgen05_fence_before_thread_sync();
    __syncwarp();
    if (threadIdx.x % 32 == 0) arrive_on_leader<G>(sm.bar(Bar::kORescaled, i), rank);
  }

  // O_i *= gamma for this warp's 32 rows, in TMEM, 16 columns at a time (the role has 80 registers).
  __device__ __forceinline__ void rescale_o(int i, float gamma) {
#pragma unroll
    for (int c = 0; c < kOChunks; ++c) {
      uint32_t r[Plan::kOChunkCols];
      ptx::tcgen05_ld_32x32b_x16(Plan::o_taddr(tmem, warp, i, c), r);
      ptx::tcgen05_wait_ld_bind(r);
#pragma unroll
      for (int k = 0; k < Plan::kOChunkCols; ++k) r[k] = __float_as_uint(rescale(__uint_as_float(r[k]), gamma));
      ptx::tcgen05_st_32x32b_x16(Plan::o_taddr(tmem, warp, i, c), r);
    }
    ptx::tcgen05_wait_st();
  }

  // Before PV_i(j): the previous PV_i has completed (o_ready); if some row of the warp moved its
  // reference, O_i *= gamma; then O_i is released to the MMA. For j = 0 O_i only has to be free: the
  // previous tile's epilogue, earlier in this thread's program, has read it.
  __device__ __forceinline__ void step(int i, int j) {
    take_stats(i);
    const float gamma = sm.scale(i)[t];
    release_stats(i);
    if (j > 0) {
      wait_o_ready(i);
      if (__any_sync(0xFFFFFFFFu, row_needs_rescale(gamma))) rescale_o(i, gamma);
    }
    release_o(i);
  }

  // The tile's end for stage i: O_i / D into the staging tile (bf16/fp16, 128-byte swizzle, Q's
  // layout), then the epilogue's TMA store; LSE from the retained frame.
  __device__ __forceinline__ void epilogue(const Tile& tl, int i) {
    take_stats(i);
    const float2 fin = sm.final_stats(i)[t];
    release_stats(i);
    const RowState st{fin.y, fin.x};
    const float inv = inverse_sum(st.d);
    if (tl.n_max > 0) wait_o_ready(i);
    FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kOFree), o_free_phase, "fa4 correction: o_free");
    o_free_phase ^= 1u;
    // This row's first byte in the staging tile; the compiler is kept from hoisting every store
    // address of the row out of the tile loop (64 live registers, and spills, at head dim 128).
    uint32_t row_base = sm.o() + Plan::o_stage_byte(static_cast<uint32_t>(t), 0);
    asm volatile("" : "+r"(row_base));
#pragma unroll
    for (int c = 0; c < kOChunks; ++c) {
      uint32_t r[Plan::kOChunkCols];
      if (tl.n_max > 0) {
        ptx::tcgen05_ld_32x32b_x16(Plan::o_taddr(tmem, warp, i, c), r);
        ptx::tcgen05_wait_ld_bind(r);
      } else {
#pragma unroll
        for (int k = 0; k < Plan::kOChunkCols; ++k) r[k] = 0u;
      }
#pragma unroll
      for (int e = 0; e < Plan::kOChunkCols / 2; ++e) {
        const uint32_t v = DeviceMath<C.bf16>::pack(normalise(__uint_as_float(r[2 * e]), inv),
                                                    normalise(__uint_as_float(r[2 * e + 1]), inv));
        const uint32_t d0 = static_cast<uint32_t>(Plan::kOChunkCols * c + 2 * e);  // head-dim column of the pair
        ptx::st_shared_b32(Plan::o_stage_addr(row_base, static_cast<uint32_t>(t), d0), v);
      }
    }
    // Generic-proxy stores -> the TMA store's async-proxy read: fence in every writer, then the arrive.
    ptx::fence_proxy_async_shared_cta();
    ptx::tcgen05_fence_before_thread_sync();  // this thread's tcgen05.ld of O_i before the release below
    __syncwarp();
    if (threadIdx.x % 32 == 0) ptx::mbarrier_arrive(sm.bar(Bar::kOStaged));
    const int row = q_row0(tl.m_block, i, static_cast<int>(rank), G) + t;
    if (p.lse != nullptr && row < p.seqlen_q)
      p.lse[(static_cast<int64_t>(tl.batch) * p.heads_q + tl.head) * p.seqlen_q + row] =
          row_lse(st, p.softmax_scale_log2, 0.0f);
  }

  __device__ __forceinline__ void run() {
    TileReader<C> tiles;
    for (;;) {
      const int index = tiles.next(sm, rank, true);
      if (index < 0) break;
      const Tile tl = tile_at<C>(p, index);
      for (int j = 0; j < tl.n_max; ++j)
        for (int i = 0; i < kQStages; ++i) step(i, j);
      for (int i = 0; i < kQStages; ++i) epilogue(tl, i);
    }
  }
};

// ==================================== EPILOGUE (warp 13, one thread) ========================================
template <FwdConfig C>
struct Epilogue {
  using Plan = typename FwdLayout<C>::Plan;
  static constexpr int G = C.cta_group;
  const FwdParams& p;
  const FwdSmem<C> sm;
  const uint32_t rank;
  uint32_t staged_phase = 0;

  __device__ __forceinline__ void run() {
    TileReader<C> tiles;
    for (;;) {
      const int index = tiles.next(sm, rank, false);
      if (index < 0) break;
      const Tile tl = tile_at<C>(p, index);
      for (int i = 0; i < kQStages; ++i) {
        FLASHPTX_MBAR_WAIT_SCOPED(C.cta_group == 2, sm.bar(Bar::kOStaged), staged_phase, "fa4 epilogue: o_staged");
        staged_phase ^= 1u;
        for (int c = 0; c < C.head_dim / kChunkElems; ++c)
          ptx::cp_async_bulk_tensor_4d_store(&p.tma_o, sm.o() + Plan::q_chunk(c), c * kChunkElems,
                                             q_row0(tl.m_block, i, static_cast<int>(rank), G), tl.head, tl.batch);
        ptx::cp_async_bulk_commit_group();
        ptx::cp_async_bulk_wait_group_read<0>();  // the staging tile may be overwritten
        ptx::mbarrier_arrive(sm.bar(Bar::kOFree));
      }
    }
  }
};

// ==================================== THE KERNEL ============================================================
template <FwdConfig C>
__device__ __forceinline__ void fwd_kernel_body(const FwdParams& p) {
  using L = FwdLayout<C>;
  constexpr int G = C.cta_group;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t raw = ptx::smem_u32(smem_raw);
  const uint32_t aligned = (raw + 1023u) & ~1023u;  // align the carve-up to 1024 B
  const FwdSmem<C> sm{aligned, smem_raw + (aligned - raw)};
  const int warp = static_cast<int>(threadIdx.x) / 32;

  // Barriers: one thread, the init fence, then a barrier over everything that may touch them (the
  // CTA; for a pair the cluster, since multicast commits and remote arrives reach the peer's).
  if (threadIdx.x == 0) {
    for (int b = 0; b < static_cast<int>(Bar::kCount); ++b)
      for (int c = 0; c < barrier_copies(static_cast<Bar>(b), L::kSlots); ++c)
        ptx::mbarrier_init(sm.bar(static_cast<Bar>(b), c),
                           arrival_count(static_cast<Bar>(b), G, static_cast<int>(cta_rank<G>())));
    ptx::fence_mbarrier_init();
  }
  // The cluster barrier also makes the peer known to be running before the pair allocation.
  if constexpr (G == 2) ptx::barrier_cluster_sync();
  else __syncthreads();

  // TMEM: warp 12 allocates all 512 columns (base column 0); the address reaches every warp through
  // shared memory behind the fence / barrier / fence pattern tcgen05.alloc's contract names.
  if (warp == kMmaWarp) ptx::tcgen05_alloc<G, L::Plan::kTmemCols>(sm.tmem_slot());
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  ptx::tcgen05_fence_after_thread_sync();
  const uint32_t tmem = *reinterpret_cast<volatile const uint32_t*>(smem_raw + (aligned - raw) + L::kOffTmemBase);

  if (warp < kCorrectionWarp0) {
    ptx::setmaxnreg_inc<L::kSoftmaxRegs>();
    Softmax<C>(p, sm, tmem, cta_rank<G>()).run();
  } else if (warp < kMmaWarp) {
    ptx::setmaxnreg_dec<L::kCorrectionRegs>();
    Correction<C>(p, sm, tmem, cta_rank<G>()).run();
  } else {
    ptx::setmaxnreg_dec<L::kOtherRegs>();
    if (threadIdx.x % 32 == 0) {
      if (warp == kMmaWarp) {
        if (cta_rank<G>() == 0) MmaIssuer<C>{sm, tmem}.run(p);
        else Relay<C>{sm}.run(p);
      } else if (warp == kEpilogueWarp) {
        Epilogue<C>{p, sm, cta_rank<G>()}.run();
      } else if (warp == kLoadWarp) {
        Loader<C>{p, sm, cta_rank<G>()}.run();
      } else if (cta_rank<G>() == 0) {
        Scheduler<C>{sm}.run();
      }
    }
    __syncwarp();
  }

  // Teardown: every role is done with TMEM (the correction waited the last PVs' commits, the softmax
  // its last S); in a pair both CTAs are, before the pair-collective dealloc; and no CTA of a pair
  // exits while the other may still signal its barriers.
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  if constexpr (G == 2) ptx::barrier_cluster_sync();
  if (warp == kMmaWarp) {
    ptx::tcgen05_fence_after_thread_sync();
    ptx::tcgen05_dealloc<G, L::Plan::kTmemCols>(tmem);
    ptx::tcgen05_relinquish_alloc_permit<G>();
  }
  if constexpr (G == 2) ptx::barrier_cluster_sync();
}

}  // namespace flashptx::fa4
