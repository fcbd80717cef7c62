// FlashAttention-4 backward on Blackwell (sm_100a), by hand: the 2-CTA form (cta_group::2).
//
// NEVER EXECUTED. No Blackwell GPU exists where this was written: the kernel is compiled for sm_100a,
// disassembled and order-checked (sass_golden/sm_100a/fa4_bwd_sm100_*_d128_2cta.check), and its MMA
// issue sequence over both CTAs, its dS exchange and its dQ read-out are replayed through the
// project's tcgen05 emulator on the CPU against an fp64 backward (tests/host/test_fa4_bwd_replay.cpp).
//
// The plan (what each tile holds, the five pair MMAs, the exchange, the barrier counts) is
// src/protocol/fa4_bwd_pair_plan.h; the 1-CTA kernel (src/sm100/fa4_bwd.cuh) is the reference for
// everything not said here: the P/dS arithmetic, the TMEM column map, the dK/dV epilogue.
//
// A cluster of two CTAs owns key blocks 2 p and 2 p + 1 (rank r the block 2 p + r) of one (batch,
// query head) and walks the query blocks of block 2 p. The leader (rank 0) MMA thread issues every
// tcgen05.mma for both CTAs; the peer's warp 12 only takes part in the pair allocation.
//
// Roles (the 1-CTA split, fa4_bwd_plan.h role_spec):
//   warps 0-3   REDUCTION  dQ rows [64 r, +64) of the query block (Layout B: a warp holds 32 rows x 64
//                          head-dim columns), staged in QS / dOS, four 8 KiB bulk reduce-adds by thread 0;
//                          then this CTA's arrive on qdo_empty (the staging was read)
//   warps 4-11  COMPUTE    as 1-CTA; the warpgroup of query half r also stores its dS^T units into XA
//                          block r; the warpgroup of half 1 - r sends its half to the peer (below)
//   warp 12     MMA        (leader) bwd_tile_schedule with the pair plan; commits multicast to both CTAs
//   warp 13     LOAD       this CTA's share: K, V, XB (both key blocks' K, its head-dim half); per step
//                          QS, QD (boxes of 64 rows), dOS, dOD, LSE2, delta
//   warp 14     RELAY      peer: forwards its kv_full, q_full, do_full landings to the leader's barriers;
//                          both: waits its x_full (the peer's dS half landed) and arrives on the leader's
//                          ds_ready
//
// The dS exchange (the seed's FA4 backward section: "The DSMEM Copy Is A Transaction Protocol"):
//   sender (warpgroup of half 1 - r): dS^T stores, fence.proxy.async.shared::cta in every writer, the
//     warpgroup's named barrier (id 3, 128 threads), then one thread: mbarrier.arrive.expect_tx at
//     cluster scope on the peer's x_full (16 KiB), cp.async.bulk.shared::cluster.shared::cta of DS's
//     chunk 1 - r into the peer's XA block r, completing on that x_full;
//   receiver's relay: waits x_full, arrives (remotely from the peer) on the leader's ds_ready;
//   leader's MMA thread: waits ds_ready (16 compute warps + 2 relays), issues dK and dQ.
// The sender may overwrite DS and the peer's XA block only after ds_free (the multicast commit after
// the previous dQ, which read both CTAs' XA): the compute warps wait it before their first store.
//
// Every wait here acquires at cluster scope (FLASHPTX_MBAR_WAIT_SCOPED(true, ...), ptx/mbarrier.cuh
// mbarrier_try_wait_parity_cluster): the peer's warps arrive on the leader's barriers with
// release.cluster and the leader's commits are multicast, and an acquire.cta does not synchronize with
// a release by a thread of the other CTA (PTX ISA, Memory Consistency Model: each one's scope must
// include the other thread); the PTX simulator reports such a pairing (docs/DECISIONS.md, "FA4 2-CTA
// waits at cluster scope").
// READING ONLY (no Blackwell GPU; the simulator executes it, no hardware has):
//   - that the peer's TMA bytes, tcgen05.st of P^T and generic stores of dS^T, released by a remote
//     mbarrier arrive at cluster scope (directly or through the relay's acquire.cluster +
//     release.cluster), are visible to the leader's pair MMA after its wait and
//     tcgen05.fence::after_thread_sync (the same reading as the forward's 2-CTA relay,
//     src/sm100/fa4_fwd.cuh);
//   - that the bulk copy's bytes are visible to the MMA's async-proxy reads once x_full's phase completes;
//   - the data-path layouts of cta_group::2 M = 256 (A) and M = 128 (B) as the emulator models them.
#pragma once
#include <cuda.h>
#include <cstdint>

#include "src/protocol/fa4_bwd_pair_plan.h"
#include "ptx/cluster.cuh"
#include "src/sm100/fa4_bwd.cuh"

namespace flashptx::fa4bwd::pair {

template <bool Bf16>
struct PairSmem {
  using L = BwdPairLayout<Bf16>;
  uint32_t base;  // 1024-aligned shared::cta address, the same offset in both CTAs
  uint8_t* ptr;
  __device__ __forceinline__ uint32_t at(uint32_t off) const { return base + off; }
  __device__ __forceinline__ uint32_t bar(PBar b) const { return base + L::bar(b); }
  __device__ __forceinline__ const float* lse_ptr() const { return reinterpret_cast<const float*>(ptr + L::kOffLse); }
  __device__ __forceinline__ const float* delta_ptr() const { return reinterpret_cast<const float*>(ptr + L::kOffDelta); }
};

// This CTA's rank in the pair; read where used (a value live across setmaxnreg regions is spilled).
__device__ __forceinline__ uint32_t rank() { return ptx::cluster_ctarank(); }
// Arrive on the leader's copy of `bar`: locally in the leader, remotely (release.cluster) from the peer.
__device__ __forceinline__ void arrive_on_leader(uint32_t bar) {
  if (rank() == 0) ptx::mbarrier_arrive(bar);
  else ptx::mbarrier_arrive_cluster(ptx::mapa_shared_cluster(bar, 0));
}
// A commit of the leader's pair MMAs to `bar` in both CTAs.
__device__ __forceinline__ void commit_both(uint32_t bar) { ptx::tcgen05_commit_multicast<2>(bar, 0b11); }

__device__ __forceinline__ KeyBlock key_block_of(const BwdParams& p) {
  return pair_key_block(static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z),
                        p.n_blocks, p.m_blocks, p.heads_q, p.heads_kv, p.seqlen_q, p.seqlen_k, p.causal != 0,
                        p.deterministic != 0);
}

// ==================================== LOAD (warp 13, one thread, both CTAs) =================================
template <bool Bf16>
struct PairLoader {
  using L = BwdPairLayout<Bf16>;
  using Plan = typename L::Plan;
  const BwdParams& p;
  const PairSmem<Bf16> sm;
  const KeyBlock kb;

  // One of Q / dO: this CTA's 64 queries (QS: boxes of 64 rows, one per 64-column chunk) and its 64
  // head-dim columns of all 128 queries (QD: two boxes of 64 rows), then the row statistic.
  __device__ __forceinline__ void load_q_do(const CUtensorMap* map, uint32_t bar, uint32_t qs, uint32_t qd,
                                            uint32_t row_dst, const float* rows, int m, uint32_t r) {
    ptx::mbarrier_arrive_expect_tx(bar, Plan::kQsBytes + Plan::kQdBytes + Plan::kRowBytes);
#pragma unroll
    for (int c = 0; c < Plan::kD / kChunkElems; ++c)
      ptx::cp_async_bulk_tensor_4d_load(sm.at(qs) + Plan::kmajor(Plan::kHalf).kstep_offset(4u * c), map, bar,
                                        c * kChunkElems, m * kBlockM + 64 * static_cast<int>(r), kb.head, kb.batch);
#pragma unroll
    for (int h = 0; h < 2; ++h)
      ptx::cp_async_bulk_tensor_4d_load(sm.at(qd) + static_cast<uint32_t>(h) * 64u * kSwizzleRow, map, bar,
                                        static_cast<int>(r) * kChunkElems, m * kBlockM + 64 * h, kb.head, kb.batch);
    ptx::cp_async_bulk_load(sm.at(row_dst), rows + m * kBlockM, Plan::kRowBytes, bar);
  }

  __device__ __forceinline__ void run() {
    const int J = kb.m_end - kb.m_begin;
    if (J <= 0) return;
    const uint32_t r = rank();
    const uint32_t kv = sm.bar(PBar::kKvFull);
    ptx::mbarrier_arrive_expect_tx(kv, 2 * Plan::kKBytes + Plan::kXBytes);
#pragma unroll
    for (int c = 0; c < Plan::kD / kChunkElems; ++c) {
      ptx::cp_async_bulk_tensor_4d_load(sm.at(L::kOffK) + Plan::One::chunk(kBlockN, c), &p.tma_k, kv, c * kChunkElems,
                                        kb.n_block * kBlockN, kb.head_kv, kb.batch);
      ptx::cp_async_bulk_tensor_4d_load(sm.at(L::kOffV) + Plan::One::chunk(kBlockN, c), &p.tma_v, kv, c * kChunkElems,
                                        kb.n_block * kBlockN, kb.head_kv, kb.batch);
    }
    // XB: block b of the pair's keys, this CTA's head-dim half (dQ's B share).
#pragma unroll
    for (int b = 0; b < 2; ++b)
      ptx::cp_async_bulk_tensor_4d_load(sm.at(L::kOffXb) + static_cast<uint32_t>(b) * Plan::kXBlockBytes, &p.tma_k, kv,
                                        static_cast<int>(r) * kChunkElems, (2 * (kb.n_block / 2) + b) * kBlockN,
                                        kb.head_kv, kb.batch);
    const int64_t rows0 = (static_cast<int64_t>(kb.batch) * p.heads_q + kb.head) * p.m_blocks * kBlockM;
    uint32_t empty_phase = 1;  // one stage: the producer's first wait passes
    for (int j = 0; j < J; ++j) {
      const int m = kb.m_begin + j;
      FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kQdoEmpty), empty_phase, "fa4 bwd pair load: qdo_empty");
      empty_phase ^= 1u;
      load_q_do(&p.tma_q, sm.bar(PBar::kQFull), L::kOffQs, L::kOffQd, L::kOffLse, p.lse2 + rows0, m, r);
      load_q_do(&p.tma_do, sm.bar(PBar::kDoFull), L::kOffDos, L::kOffDod, L::kOffDelta, p.delta + rows0, m, r);
    }
    // Tail: the last step's commit and reduction arrive have landed (none in flight at exit).
    FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kQdoEmpty), empty_phase, "fa4 bwd pair load tail: qdo_empty");
  }
};

// ==================================== MMA (leader warp 12, one thread) ======================================
// The visitor of fa4_bwd_plan.h bwd_tile_schedule with the pair plan's operands.
template <bool Bf16>
struct PairMmaIssuer {
  using L = BwdPairLayout<Bf16>;
  using Plan = typename L::Plan;
  const PairSmem<Bf16> sm;
  const uint32_t tmem;
  uint32_t ph_q = 0, ph_p_free = 0, ph_dq_free = 0, ph_p_ready = 0, ph_ds_ready = 0;

  __device__ __forceinline__ void wait(PBar b, uint32_t& phase, const char* name, bool fence) {
    FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(b), phase, name);
    phase ^= 1u;
    if (fence) ptx::tcgen05_fence_after_thread_sync();
  }
  __device__ __forceinline__ void wait_kv() { FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kKvFull), 0u, "fa4 bwd pair mma: kv_full"); }
  __device__ __forceinline__ void wait_q(int) { FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kQFull), ph_q, "fa4 bwd pair mma: q_full"); }
  __device__ __forceinline__ void wait_do(int) {
    FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kDoFull), ph_q, "fa4 bwd pair mma: do_full");
  }
  __device__ __forceinline__ void wait_s_free(int) { wait(PBar::kPFree, ph_p_free, "fa4 bwd pair mma: p_free", true); }
  __device__ __forceinline__ void wait_dq_free(int) { wait(PBar::kDqFree, ph_dq_free, "fa4 bwd pair mma: dq_free", true); }
  __device__ __forceinline__ void wait_p_ready(int) { wait(PBar::kPReady, ph_p_ready, "fa4 bwd pair mma: p_ready", true); }
  // ds_ready: both CTAs' compute warps (dS^T stored and proxy-fenced, dP^T read) and both relays (each
  // CTA's x_full: the peer's half in its XA).
  __device__ __forceinline__ void wait_ds_ready(int) {
    wait(PBar::kDsReady, ph_ds_ready, "fa4 bwd pair mma: ds_ready", true);
  }
  // Steps K steps of one MMA family, each the pair instruction the plan's Issue describes (TS where A is
  // in TMEM: dV's P^T).
  template <uint32_t Steps, class F>
  __device__ __forceinline__ void issue(F make) {
#pragma unroll
    for (uint32_t s = 0; s < Steps; ++s) {
      const Issue is = make(s);
      if (is.a_tmem_form) ptx::tcgen05_mma_f16_ts<2>(is.d_tmem, is.a_tmem, is.b_desc, is.idesc, is.accumulate);
      else ptx::tcgen05_mma_f16_ss<2>(is.d_tmem, is.a_desc, is.b_desc, is.idesc, is.accumulate);
    }
  }
  __device__ __forceinline__ void issue_s(int) {
    issue<Plan::kSdpSteps>([&](uint32_t s) { return Plan::s_t(tmem, sm.at(L::kOffK), sm.at(L::kOffQs), s); });
  }
  __device__ __forceinline__ void issue_dp(int) {
    issue<Plan::kSdpSteps>([&](uint32_t s) { return Plan::dp_t(tmem, sm.at(L::kOffV), sm.at(L::kOffDos), s); });
  }
  __device__ __forceinline__ void issue_dv(int j) {
    issue<Plan::kDkvSteps>([&](uint32_t s) { return Plan::dv(tmem, sm.at(L::kOffDod), s, j > 0); });
  }
  __device__ __forceinline__ void issue_dk(int j) {
    issue<Plan::kDkvSteps>([&](uint32_t s) { return Plan::dk(tmem, sm.at(L::kOffDs), sm.at(L::kOffQd), s, j > 0); });
  }
  __device__ __forceinline__ void issue_dq(int) {
    issue<Plan::kDqSteps>([&](uint32_t s) { return Plan::dq(tmem, sm.at(L::kOffXa), sm.at(L::kOffXb), s); });
  }
  __device__ __forceinline__ void commit_sdp_full(int) { commit_both(sm.bar(PBar::kSdpFull)); }
  __device__ __forceinline__ void commit_p_free(int) { ptx::tcgen05_commit<2>(sm.bar(PBar::kPFree)); }
  __device__ __forceinline__ void commit_dq_full(int) { commit_both(sm.bar(PBar::kDqFull)); }
  __device__ __forceinline__ void commit_ds_free(int) { commit_both(sm.bar(PBar::kDsFree)); }
  __device__ __forceinline__ void commit_qdo_empty(int) {
    commit_both(sm.bar(PBar::kQdoEmpty));
    ph_q ^= 1u;
  }
  __device__ __forceinline__ void commit_dkv_full() { commit_both(sm.bar(PBar::kDkvFull)); }

  __device__ __forceinline__ void run(const KeyBlock& kb) {
    const int J = kb.m_end - kb.m_begin;
    bwd_tile_schedule(J, *this);
    if (J > 0) {  // the last local commit has arrived (none in flight at exit)
      FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kPFree), ph_p_free, "fa4 bwd pair mma tail: p_free");
    }
  }
};

// ==================================== RELAY (warp 14, one thread, both CTAs) ================================
template <bool Bf16>
struct PairRelay {
  const PairSmem<Bf16> sm;

  __device__ __forceinline__ void forward(PBar b, uint32_t phase, const char* name) {
    FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(b), phase, name);
    ptx::mbarrier_arrive_cluster(ptx::mapa_shared_cluster(sm.bar(b), 0));
  }
  __device__ __forceinline__ void run(const KeyBlock& kb) {
    const int J = kb.m_end - kb.m_begin;
    if (J <= 0) return;
    const bool peer = rank() != 0;
    if (peer) forward(PBar::kKvFull, 0u, "fa4 bwd pair relay: kv_full");
    for (int j = 0; j < J; ++j) {
      const uint32_t ph = static_cast<uint32_t>(j) & 1u;
      if (peer) {
        forward(PBar::kQFull, ph, "fa4 bwd pair relay: q_full");
        forward(PBar::kDoFull, ph, "fa4 bwd pair relay: do_full");
      }
      // The peer's dS half has landed in this CTA's XA (its expect_tx arrive and its bytes).
      FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kXFull), ph, "fa4 bwd pair relay: x_full");
      arrive_on_leader(sm.bar(PBar::kDsReady));
    }
    // Tail: the last multicast ds_free has landed in this CTA (none in flight at exit).
    FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kDsFree), static_cast<uint32_t>(J - 1) & 1u, "fa4 bwd pair relay tail: ds_free");
  }
};

// ==================================== COMPUTE (warps 4-11, both CTAs) =======================================
template <bool Bf16>
struct PairCompute {
  using L = BwdPairLayout<Bf16>;
  using Plan = typename L::Plan;
  using One = typename Plan::One;
  const BwdParams& p;
  const PairSmem<Bf16> sm;
  const KeyBlock kb;
  const uint32_t tmem;
  const int warp, h, key;  // as in the 1-CTA Compute: lane quarter warp % 4, query half h, key of the block

  __device__ __forceinline__ PairCompute(const BwdParams& p_, const PairSmem<Bf16> sm_, const KeyBlock& kb_, uint32_t tmem_)
      : p(p_), sm(sm_), kb(kb_), tmem(tmem_), warp(static_cast<int>(threadIdx.x) / 32),
        h(static_cast<int>(threadIdx.x) / 128 - 1),
        key(32 * (static_cast<int>(threadIdx.x) / 32 % 4) + static_cast<int>(threadIdx.x) % 32) {}

  __device__ __forceinline__ void step(int j) {
    const int m = kb.m_begin + j;
    const uint32_t ph = static_cast<uint32_t>(j) & 1u;
    FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kQFull), ph, "fa4 bwd pair compute: q_full");    // LSE2
    FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kDoFull), ph, "fa4 bwd pair compute: do_full");  // delta
    FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kSdpFull), ph, "fa4 bwd pair compute: sdp_full");
    // dS^T(j-1) and both CTAs' XA were read by dK(j-1) and dQ(j-1) (their multicast commit).
    if (j > 0) FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kDsFree), ph ^ 1u, "fa4 bwd pair compute: ds_free");
    ptx::tcgen05_fence_after_thread_sync();
    const uint32_t r = rank();
    const bool copy = static_cast<uint32_t>(h) == r;  // this warpgroup's half is this CTA's dQ rows
    // The 1-CTA chunk (fa4_bwd.cuh compute_chunk); the warpgroup of half r also stores into XA block r.
#pragma unroll
    for (int c = 0; c < 64 / kComputeCols; ++c)
      compute_chunk<kHeadDim, Bf16, true>(p, kb, tmem, warp, h, key, c, m, sm.lse_ptr(), sm.delta_ptr(),
                                          sm.at(L::kOffDs), sm.at(L::kOffXa), copy);
    ptx::tcgen05_wait_st();
    ptx::tcgen05_fence_before_thread_sync();
    ptx::fence_proxy_async_shared_cta();  // generic dS^T stores -> the MMA's and the bulk copy's reads
    if (!copy) {
      // The sending warpgroup: all its stores fenced, then one thread sends the half to the peer.
      ptx::bar_sync(kSendNamedBar, 128);
      if (threadIdx.x % 128 == 0) {
        const uint32_t peer = r ^ 1u;
        const uint32_t x_full = ptx::mapa_shared_cluster(sm.bar(PBar::kXFull), peer);
        ptx::mbarrier_arrive_expect_tx_cluster(x_full, Plan::kXBlockBytes);
        ptx::cp_async_bulk_shared_cluster(ptx::mapa_shared_cluster(sm.at(L::kOffXa) + Plan::send_dst(r), peer),
                                          sm.at(L::kOffDs) + Plan::send_src(r), Plan::kXBlockBytes, x_full);
      }
    }
    __syncwarp();
    if (threadIdx.x % 32 == 0) {
      arrive_on_leader(sm.bar(PBar::kPReady));
      arrive_on_leader(sm.bar(PBar::kDsReady));
    }
  }

  // dK (x softmax_scale) and dV of this CTA's keys, as in the 1-CTA epilogue, staged in DS (dV) and
  // XA (dK). A pair's second block past the keys writes nothing.
  __device__ __forceinline__ void epilogue() {
    const bool any = kb.m_end > kb.m_begin;
    if (any) {
      FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kDkvFull), 0u, "fa4 bwd pair compute: dkv_full");
      ptx::tcgen05_fence_after_thread_sync();
    }
    if (kb.n_block >= p.n_blocks) return;
    dkv_epilogue<kHeadDim, Bf16>(p, kb, tmem, warp, h, key, any, sm.at(L::kOffDs), sm.at(L::kOffXa));
  }

  __device__ __forceinline__ void run() {
    for (int j = 0; j < kb.m_end - kb.m_begin; ++j) step(j);
    epilogue();
  }
};

// ==================================== REDUCTION (warps 0-3, both CTAs) ======================================
template <bool Bf16>
struct PairReduction {
  using L = BwdPairLayout<Bf16>;
  using Plan = typename L::Plan;
  const BwdParams& p;
  const PairSmem<Bf16> sm;
  const KeyBlock kb;
  const uint32_t tmem;
  const int warp, t;

  __device__ __forceinline__ void step(int j) {
    const int m = kb.m_begin + j;
    FLASHPTX_MBAR_WAIT_SCOPED(true, sm.bar(PBar::kDqFull), static_cast<uint32_t>(j) & 1u, "fa4 bwd pair reduction: dq_full");
    ptx::tcgen05_fence_after_thread_sync();
    const uint32_t row = static_cast<uint32_t>(Plan::dq_row(warp, t % 32));
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      uint32_t v[kDqChunkCols];
      ptx::tcgen05_ld_32x32b_x32(Plan::One::dq_taddr(tmem, warp, c), v);
      ptx::tcgen05_wait_ld_bind(v);
      if (c == 1) {  // dQ is out of TMEM: the next dP^T may overwrite its columns
        ptx::tcgen05_fence_before_thread_sync();
        __syncwarp();
        if (t % 32 == 0) arrive_on_leader(sm.bar(PBar::kDqFree));
      }
      // Staging (QS / dOS): free, since the last step's bulk reads completed before its qdo_empty arrive.
      const uint32_t stage = sm.at(L::dq_stage(Plan::dq_chunk(warp, c)));
#pragma unroll
      for (int u = 0; u < kDqChunkCols / 4; ++u)
        ptx::st_shared_v4_b32(stage + dq_stage_byte(row, static_cast<uint32_t>(u)), v[4 * u], v[4 * u + 1], v[4 * u + 2],
                              v[4 * u + 3]);
    }
    // Generic stores -> the bulk reduce's async-proxy reads: fence in every writer, then the barrier.
    ptx::fence_proxy_async_shared_cta();
    ptx::bar_sync(kReductionNamedBar, 32 * kReductionWarps);
    if (t == 0) {
      const int64_t tile = (static_cast<int64_t>(kb.batch) * p.heads_q + kb.head) * p.m_blocks + m;
      float* dst = p.dq_accum + tile * (kBlockM * Plan::kD);
      uint32_t* sem = p.dq_sem + tile;
      if (p.deterministic) {
        wait_for_turn(sem, static_cast<uint32_t>(pair_dq_lock(kb.n_block, m, p.seqlen_q, p.seqlen_k, p.causal != 0)),
                      "fa4 bwd pair reduction: dq_sem");
        ptx::fence_proxy_async_global();
      }
      // Rows [64 r, +64) of each 32-column chunk of the accumulator: 8 KiB contiguous.
#pragma unroll
      for (int c = 0; c < Plan::kD / kDqChunkCols; ++c)
        ptx::cp_reduce_async_bulk_add_f32(dst + dq_accum_index(64 * static_cast<int>(rank()), kDqChunkCols * c),
                                          sm.at(L::dq_stage(c)), L::kDqStageChunkBytes);
      ptx::cp_async_bulk_commit_group();
      ptx::cp_async_bulk_wait_group_read<0>();
      ptx::mbarrier_arrive(sm.bar(PBar::kQdoEmpty));  // the staging (QS / dOS) may take the next loads
      if (p.deterministic) {
        ptx::cp_async_bulk_wait_group<0>();
        ptx::fence_proxy_async_global();
        ptx::red_release_gpu_add_u32(sem, 1u);
      }
    }
  }

  __device__ __forceinline__ void run() {
    for (int j = 0; j < kb.m_end - kb.m_begin; ++j) step(j);
    if (t == 0) ptx::cp_async_bulk_wait_group<0>();
  }
};

// ==================================== THE KERNEL ============================================================
template <bool Bf16>
__device__ __forceinline__ void bwd_pair_kernel_body(const BwdParams& p) {
  using L = BwdPairLayout<Bf16>;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t raw = ptx::smem_u32(smem_raw);
  const uint32_t aligned = (raw + 1023u) & ~1023u;
  const PairSmem<Bf16> sm{aligned, smem_raw + (aligned - raw)};
  const int warp = static_cast<int>(threadIdx.x) / 32;

  // Barriers (counts by rank: fa4_bwd_pair_plan.h pair_arrival_count), the init fence, then the cluster
  // barrier: the peer's barriers exist before any remote arrive, multicast commit or copy reaches them,
  // and the peer is running before the pair allocation.
  if (threadIdx.x == 0) {
    const int r = static_cast<int>(rank());
#pragma unroll
    for (int b = 0; b < kPBarCount; ++b) ptx::mbarrier_init(sm.bar(static_cast<PBar>(b)), pair_arrival_count(static_cast<PBar>(b), r));
    ptx::fence_mbarrier_init();
  }
  ptx::barrier_cluster_sync();

  if (warp == kMmaWarp) ptx::tcgen05_alloc<2, L::Plan::kTmemCols>(sm.at(L::kOffTmemSlot));
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  ptx::tcgen05_fence_after_thread_sync();
  const uint32_t tmem = *reinterpret_cast<volatile const uint32_t*>(sm.ptr + L::kOffTmemSlot);
  // The key block is computed inside each role (after setmaxnreg): a value live across the register
  // reallocation is one ptxas spills.

  if (warp < kComputeWarp0) {
    ptx::setmaxnreg_inc<L::kReductionRegs>();
    PairReduction<Bf16>{p, sm, key_block_of(p), tmem, warp, static_cast<int>(threadIdx.x)}.run();
  } else if (warp < kMmaWarp) {
    ptx::setmaxnreg_inc<L::kComputeRegs>();
    PairCompute<Bf16>(p, sm, key_block_of(p), tmem).run();
  } else {
    ptx::setmaxnreg_dec<L::kOtherRegs>();
    if (threadIdx.x % 32 == 0) {
      if (warp == kMmaWarp) {
        if (rank() == 0) PairMmaIssuer<Bf16>{sm, tmem}.run(key_block_of(p));
      } else if (warp == kLoadWarp) {
        PairLoader<Bf16>{p, sm, key_block_of(p)}.run();
      } else if (warp == kRelayWarp) {
        PairRelay<Bf16>{sm}.run(key_block_of(p));
      }
    }
    __syncwarp();
  }

  // Teardown: every role of both CTAs is done with TMEM and with the peer's shared memory and barriers
  // before the pair-collective dealloc, and no CTA exits while the other may still reach it.
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  ptx::barrier_cluster_sync();
  if (warp == kMmaWarp) {
    ptx::tcgen05_fence_after_thread_sync();
    ptx::tcgen05_dealloc<2, L::Plan::kTmemCols>(tmem);
    ptx::tcgen05_relinquish_alloc_permit<2>();
  }
  ptx::barrier_cluster_sync();
}

}  // namespace flashptx::fa4bwd::pair
