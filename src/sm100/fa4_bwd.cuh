// FlashAttention-4 backward on Blackwell (sm_100a), by hand: the 1-CTA form.
//
// NEVER EXECUTED. No Blackwell GPU exists where this was written: the kernel is compiled for sm_100a,
// disassembled and order-checked (sass_golden/sm_100a/fa4_bwd_sm100_*.check), and its MMA issue
// sequence (descriptors, TMEM addresses, K steps, the order of MMAs, waits and commits), its P/dS
// arithmetic, its dS^T shared-memory layout and its dQ accumulator order are replayed through the
// project's tcgen05 emulator on the CPU against an fp64 backward (tests/host/test_fa4_bwd_replay.cpp).
// The memory-model claims below rest on reading the PTX ISA; each says where it comes from.
//
// Sources: the FA4 paper (Zadouri et al.) section 3.2 and the seed's FA4 backward section (five MMAs
// per step, the TMEM budget, the ordered dQ reduction); PTX ISA "Tensorcore 5th Generation Family
// Instructions" (tcgen05.*), "mbarrier", "cp.async.bulk", "cp.reduce.async.bulk"; the protocols
// guide docs/PROTOCOLS.md, "The backward relay" and "Deterministic writer order".
//
// A CTA owns one key block (128 keys) of one (batch, query head) and walks the query blocks of 128
// rows that see it (causal: from the diagonal down), one step each. Per step, five MMAs (the plan:
// src/protocol/fa4_bwd_plan.h BwdMmaPlan):
//   S^T = K Q^T and dP^T = V dO^T into TMEM; the compute warps turn them into P^T (back into TMEM,
//   16-bit, over S^T's columns) and dS^T (into shared memory); dV += P^T dO (P^T from TMEM),
//   dK += dS^T Q and dQ = dS K (dS^T from shared memory, read K-major and MN-major); the reduction
//   warps move dQ out of TMEM and bulk-add it (cp.reduce.async.bulk .add.f32) into the fp32 dQ
//   accumulator in global memory. dK and dV stay in TMEM across the query loop.
//
// Roles (fa4_bwd_plan.h role_spec; warpgroup register targets 152 / 136 / 136 / 88):
//   warps 0-3   REDUCTION  one thread per query row: dQ from TMEM (tcgen05.ld), staged 32 columns at
//                          a time in shared memory, bulk reduce-add by thread 0; deterministic mode:
//                          the tile's semaphore turn around the adds (writer_order.h locks)
//   warps 4-11  COMPUTE    one thread per key and query half (warpgroup 1: queries 0-63, 2: 64-127):
//                          S^T, dP^T from TMEM, P^T = exp2(S^T lambda - LSE2) (masked), dS^T =
//                          P^T (dP^T - delta); P^T to TMEM (tcgen05.st), dS^T to shared memory. After
//                          the loop: dK (x softmax_scale) and dV to bf16/fp16, staged, TMA-stored (or,
//                          GQA, red.global.add into the fp32 dK/dV accumulators)
//   warp 12     MMA        allocates the 512 TMEM columns; one thread issues every tcgen05.mma and
//                          commit, walking fa4_bwd_plan.h bwd_tile_schedule
//   warp 13     LOAD       TMA K, V once; per step TMA Q, dO and bulk copies of LSE2, delta
//   warps 14-15 idle       (warp 14 is the 2-CTA form's relay, which is not built)
//
// TMEM (512 columns from column 0): S^T [0,128) with P^T over the head of each 64-column half,
// dP^T [128,256) with dQ over [128,128+d), dV [256,256+d), dK [256+d,256+2d).
//
// Barriers (fa4_bwd_plan.h barrier_spec; slots and counts: BwdLayout):
//   kv_full                 TMA K, V -> MMA
//   q_full[s], do_full[s]   TMA Q + LSE2 / dO + delta -> MMA, compute      qdo_empty[s]  commit -> load
//   sdp_full                commit (S^T, dP^T) -> compute
//   p_ready                 compute (P^T in TMEM) -> MMA (dV)               p_free   commit (dV) -> MMA (next S^T)
//   ds_ready                compute (dS^T in smem, dP^T read) -> MMA (dK, dQ)  ds_free  commit (dQ) -> compute
//   dq_full                 commit (dQ) -> reduction                        dq_free  reduction -> MMA (next dP^T)
//   dkv_full                commit (the last step) -> compute (epilogue)
// Every TMEM hand-off between threads is: producer's tcgen05.wait::ld/st (or tcgen05.commit) ->
// tcgen05.fence::before_thread_sync -> mbarrier arrive ... mbarrier wait -> tcgen05.fence::
// after_thread_sync -> consumer's tcgen05 operation (PTX ISA "Memory Consistency Model for 5th
// generation of TensorCore operations"; docs/PROTOCOLS.md, "The backward relay"). dS^T, written by
// generic stores and read by the MMA (async proxy): fence.proxy.async.shared::cta in every writer
// before its arrive (PTX ISA "Async proxy"). The dQ staging chunk, read by the bulk reduce (async
// proxy): the same fence, then a named barrier, then thread 0's cp.reduce.async.bulk.
#pragma once
#include <cuda.h>
#include <cstdint>

#include "src/protocol/fa4_bwd_plan.h"
#include "src/protocol/ring.h"
#include "ptx/atomic.cuh"
#include "ptx/barrier.cuh"
#include "ptx/cvt.cuh"
#include "ptx/fence.cuh"
#include "ptx/ldst.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tcgen05.cuh"
#include "ptx/tma.cuh"
#include "src/sm100/fa4_bwd_config.h"
#include "src/sm90/common.cuh"

#if defined(__CUDA_ARCH__) && !FLASHPTX_HAS_SM100A
#error "src/sm100/fa4_bwd.cuh is Blackwell code: compile it with -gencode arch=compute_100a,code=sm_100a"
#endif

namespace flashptx::fa4bwd {

// ---- shared memory, carved from BwdLayout ------------------------------------------------------------
template <BwdConfig C>
struct BwdSmem {
  using L = BwdLayout<C>;
  uint32_t base;  // 1024-aligned shared::cta address
  uint8_t* ptr;   // the same bytes as a generic pointer (LSE2 and delta are read with plain loads)
  __device__ __forceinline__ uint32_t k() const { return base + L::kOffK; }
  __device__ __forceinline__ uint32_t v() const { return base + L::kOffV; }
  __device__ __forceinline__ uint32_t q(uint32_t s) const { return base + L::kOffQ + s * L::Plan::kQBytes; }
  __device__ __forceinline__ uint32_t dO(uint32_t s) const { return base + L::kOffDo + s * L::Plan::kQBytes; }
  __device__ __forceinline__ uint32_t ds() const { return base + L::kOffDs; }
  __device__ __forceinline__ uint32_t dq_stage(uint32_t b) const { return base + L::kOffDqStage + b * kDqChunkBytes; }
  __device__ __forceinline__ uint32_t lse(uint32_t s) const { return base + L::kOffLse + s * L::Plan::kRowBytes; }
  __device__ __forceinline__ uint32_t delta(uint32_t s) const { return base + L::kOffDelta + s * L::Plan::kRowBytes; }
  __device__ __forceinline__ const float* lse_ptr(uint32_t s) const {
    return reinterpret_cast<const float*>(ptr + L::kOffLse + s * L::Plan::kRowBytes);
  }
  __device__ __forceinline__ const float* delta_ptr(uint32_t s) const {
    return reinterpret_cast<const float*>(ptr + L::kOffDelta + s * L::Plan::kRowBytes);
  }
  __device__ __forceinline__ uint32_t tmem_slot() const { return base + L::kOffTmemSlot; }
  __device__ __forceinline__ uint32_t bar(Bar b, int copy = 0) const { return base + L::kOffBar + 8u * L::slot(b, copy); }
};

// The hardware side of the P arithmetic (fa4_bwd_plan.h bwd_p): MUFU.EX2.
struct DeviceMath {
  FLASHPTX_HD static float ex2(float x) {
#ifdef __CUDA_ARCH__
    return ptx::ex2_approx_ftz_f32(x);
#else
    return x;  // host pass only; never called
#endif
  }
};
// pack2: src/sm90/common.cuh.

// The deterministic writer order's turn (src/protocol/writer_order.h): spins until the semaphore
// shows `lock` writers done. Test builds bound the wait like every mbarrier wait (FLASHPTX_BOUNDED_WAIT).
__device__ __forceinline__ void wait_for_turn(const uint32_t* sem, uint32_t lock, const char* name) {
  ptx::semaphore_wait_eq(sem, lock, name);  // ptx/atomic.cuh: bounded in test builds
}

template <BwdConfig C>
__device__ __forceinline__ KeyBlock key_block_of(const BwdParams& p) {
  return key_block(static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z),
                   p.n_blocks, p.m_blocks, p.heads_q, p.heads_kv, p.seqlen_q, p.seqlen_k, p.causal != 0,
                   p.deterministic != 0);
}

// ==================================== LOAD (warp 13, one thread) ============================================
template <BwdConfig C>
struct Loader {
  using L = BwdLayout<C>;
  using Plan = typename L::Plan;
  const BwdParams& p;
  const BwdSmem<C> sm;
  const KeyBlock kb;

  __device__ __forceinline__ void run() {
    const int J = kb.m_end - kb.m_begin;
    if (J <= 0) return;
    // K and V of the key block, once.
    ptx::mbarrier_arrive_expect_tx(sm.bar(Bar::kKvFull), 2 * Plan::kKBytes);
    for (int c = 0; c < C.head_dim / kChunkElems; ++c) {
      ptx::cp_async_bulk_tensor_4d_load(sm.k() + Plan::chunk(kBlockN, c), &p.tma_k, sm.bar(Bar::kKvFull), c * kChunkElems,
                                        kb.n_block * kBlockN, kb.head_kv, kb.batch);
      ptx::cp_async_bulk_tensor_4d_load(sm.v() + Plan::chunk(kBlockN, c), &p.tma_v, sm.bar(Bar::kKvFull), c * kChunkElems,
                                        kb.n_block * kBlockN, kb.head_kv, kb.batch);
    }
    const int64_t rows0 = (static_cast<int64_t>(kb.batch) * p.heads_q + kb.head) * p.m_blocks * kBlockM;
    RingState<C.stages> ring = RingState<C.stages>::producer_start();
    for (int j = 0; j < J; ++j) {
      const int m = kb.m_begin + j;
      const uint32_t s = ring.stage;
      FLASHPTX_MBAR_WAIT(sm.bar(Bar::kQdoEmpty, s), ring.phase, "fa4 bwd load: qdo_empty");
      ptx::mbarrier_arrive_expect_tx(sm.bar(Bar::kQFull, s), Plan::kQBytes + Plan::kRowBytes);
      for (int c = 0; c < C.head_dim / kChunkElems; ++c)
        ptx::cp_async_bulk_tensor_4d_load(sm.q(s) + Plan::chunk(kBlockM, c), &p.tma_q, sm.bar(Bar::kQFull, s),
                                          c * kChunkElems, m * kBlockM, kb.head, kb.batch);
      ptx::cp_async_bulk_load(sm.lse(s), p.lse2 + rows0 + m * kBlockM, Plan::kRowBytes, sm.bar(Bar::kQFull, s));
      ptx::mbarrier_arrive_expect_tx(sm.bar(Bar::kDoFull, s), Plan::kQBytes + Plan::kRowBytes);
      for (int c = 0; c < C.head_dim / kChunkElems; ++c)
        ptx::cp_async_bulk_tensor_4d_load(sm.dO(s) + Plan::chunk(kBlockM, c), &p.tma_do, sm.bar(Bar::kDoFull, s),
                                          c * kChunkElems, m * kBlockM, kb.head, kb.batch);
      ptx::cp_async_bulk_load(sm.delta(s), p.delta + rows0 + m * kBlockM, Plan::kRowBytes, sm.bar(Bar::kDoFull, s));
      ring.advance();
    }
    // Tail: every stage released (no commit arrive in flight at exit).
    for (int s = 0; s < C.stages; ++s) {  // an unused stage passes at once (producer phase)
      FLASHPTX_MBAR_WAIT(sm.bar(Bar::kQdoEmpty, ring.stage), ring.phase, "fa4 bwd load tail: qdo_empty");
      ring.advance();
    }
  }
};

// ==================================== MMA (warp 12, one thread) =============================================
// The visitor of fa4_bwd_plan.h bwd_tile_schedule. Descriptors, TMEM columns and K-step advances come
// from BwdMmaPlan, the code the emulator replay runs.
template <BwdConfig C>
struct MmaIssuer {
  using L = BwdLayout<C>;
  using Plan = typename L::Plan;
  const BwdSmem<C> sm;
  const uint32_t tmem;
  RingState<C.stages> ring = RingState<C.stages>::consumer_start();
  uint32_t p_free_phase = 0, dq_free_phase = 0, p_ready_phase = 0, ds_ready_phase = 0;

  // After each wait on a barrier that certifies another thread's tcgen05.ld/st (p_ready, dq_free) or
  // an earlier MMA's completion (p_free): tcgen05.fence::after_thread_sync before the next MMA.
  __device__ __forceinline__ void wait_kv() { FLASHPTX_MBAR_WAIT(sm.bar(Bar::kKvFull), 0u, "fa4 bwd mma: kv_full"); }
  __device__ __forceinline__ void wait_q(int) {
    FLASHPTX_MBAR_WAIT(sm.bar(Bar::kQFull, ring.stage), ring.phase, "fa4 bwd mma: q_full");
  }
  __device__ __forceinline__ void wait_do(int) {
    FLASHPTX_MBAR_WAIT(sm.bar(Bar::kDoFull, ring.stage), ring.phase, "fa4 bwd mma: do_full");
  }
  __device__ __forceinline__ void wait_s_free(int) {
    FLASHPTX_MBAR_WAIT(sm.bar(Bar::kPFree), p_free_phase, "fa4 bwd mma: p_free");
    p_free_phase ^= 1u;
    ptx::tcgen05_fence_after_thread_sync();
  }
  __device__ __forceinline__ void wait_dq_free(int) {
    FLASHPTX_MBAR_WAIT(sm.bar(Bar::kDqFree), dq_free_phase, "fa4 bwd mma: dq_free");
    dq_free_phase ^= 1u;
    ptx::tcgen05_fence_after_thread_sync();  // the reduction's tcgen05.ld of dQ before dP^T overwrites it
  }
  __device__ __forceinline__ void wait_p_ready(int) {
    FLASHPTX_MBAR_WAIT(sm.bar(Bar::kPReady), p_ready_phase, "fa4 bwd mma: p_ready");
    p_ready_phase ^= 1u;
    ptx::tcgen05_fence_after_thread_sync();  // the compute warps' tcgen05.st of P^T before dV reads it
  }
  __device__ __forceinline__ void wait_ds_ready(int) {
    FLASHPTX_MBAR_WAIT(sm.bar(Bar::kDsReady), ds_ready_phase, "fa4 bwd mma: ds_ready");
    ds_ready_phase ^= 1u;
    ptx::tcgen05_fence_after_thread_sync();  // their tcgen05.ld of dP^T before dQ overwrites it
  }
  __device__ __forceinline__ void issue_s(int) {
#pragma unroll
    for (uint32_t s = 0; s < Plan::kSdpSteps; ++s) {
      const Issue is = Plan::s_t(tmem, sm.k(), sm.q(ring.stage), s);
      ptx::tcgen05_mma_f16_ss<1>(is.d_tmem, is.a_desc, is.b_desc, is.idesc, is.accumulate);
    }
  }
  __device__ __forceinline__ void issue_dp(int) {
#pragma unroll
    for (uint32_t s = 0; s < Plan::kSdpSteps; ++s) {
      const Issue is = Plan::dp_t(tmem, sm.v(), sm.dO(ring.stage), s);
      ptx::tcgen05_mma_f16_ss<1>(is.d_tmem, is.a_desc, is.b_desc, is.idesc, is.accumulate);
    }
  }
  __device__ __forceinline__ void issue_dv(int j) {
#pragma unroll
    for (uint32_t s = 0; s < Plan::kDkvSteps; ++s) {
      const Issue is = Plan::dv(tmem, sm.dO(ring.stage), s, j > 0);
      ptx::tcgen05_mma_f16_ts<1>(is.d_tmem, is.a_tmem, is.b_desc, is.idesc, is.accumulate);
    }
  }
  __device__ __forceinline__ void issue_dk(int j) {
#pragma unroll
    for (uint32_t s = 0; s < Plan::kDkvSteps; ++s) {
      const Issue is = Plan::dk(tmem, sm.ds(), sm.q(ring.stage), s, j > 0);
      ptx::tcgen05_mma_f16_ss<1>(is.d_tmem, is.a_desc, is.b_desc, is.idesc, is.accumulate);
    }
  }
  __device__ __forceinline__ void issue_dq(int) {
#pragma unroll
    for (uint32_t s = 0; s < Plan::kDqSteps; ++s) {
      const Issue is = Plan::dq(tmem, sm.ds(), sm.k(), s);
      ptx::tcgen05_mma_f16_ss<1>(is.d_tmem, is.a_desc, is.b_desc, is.idesc, is.accumulate);
    }
  }
  // tcgen05.commit: the barrier's arrive happens once every tcgen05.mma this thread issued before it
  // has completed (PTX ISA "tcgen05.commit"); that completion covers their reads and writes.
  __device__ __forceinline__ void commit_sdp_full(int) { ptx::tcgen05_commit<1>(sm.bar(Bar::kSdpFull)); }
  __device__ __forceinline__ void commit_p_free(int) { ptx::tcgen05_commit<1>(sm.bar(Bar::kPFree)); }
  __device__ __forceinline__ void commit_dq_full(int) { ptx::tcgen05_commit<1>(sm.bar(Bar::kDqFull)); }
  __device__ __forceinline__ void commit_ds_free(int) { ptx::tcgen05_commit<1>(sm.bar(Bar::kDsFree)); }
  __device__ __forceinline__ void commit_qdo_empty(int) {
    ptx::tcgen05_commit<1>(sm.bar(Bar::kQdoEmpty, ring.stage));
    ring.advance();
  }
  __device__ __forceinline__ void commit_dkv_full() { ptx::tcgen05_commit<1>(sm.bar(Bar::kDkvFull)); }

  __device__ __forceinline__ void run(const KeyBlock& kb) {
    const int J = kb.m_end - kb.m_begin;
    bwd_tile_schedule(J, *this);
    // Tail: the commits nobody else waits for (the last p_free and ds_free) have arrived, so no
    // tcgen05.commit arrive is in flight at exit.
    if (J > 0) {
      FLASHPTX_MBAR_WAIT(sm.bar(Bar::kPFree), p_free_phase, "fa4 bwd mma tail: p_free");
      FLASHPTX_MBAR_WAIT(sm.bar(Bar::kDsFree), static_cast<uint32_t>(J - 1) & 1u, "fa4 bwd mma tail: ds_free");
    }
  }
};

// One 32-query chunk c of a compute thread's step (key `key`, query half h, query block m): S^T and
// dP^T out of TMEM, P^T = exp2(S^T lambda - LSE2) (masked) and dS^T = P^T (dP^T - delta); P^T back to
// TMEM over S^T's columns it has read (fa4_bwd_plan.h: the head of the half), dS^T into the shared
// tile ds_tile at ds_unit_byte (dK's K-major A, dQ's MN-major A). Copy (the 2-CTA kernel): the
// thread's units also go to copy_tile at the same offsets where `copy` holds (its half is this CTA's
// dQ rows). Shared by the 1-CTA and 2-CTA kernels.
template <int D, bool Bf16, bool Copy>
__device__ __forceinline__ void compute_chunk(const BwdParams& p, const KeyBlock& kb, uint32_t tmem, int warp, int h,
                                              int key, int c, int m, const float* lse, const float* delta,
                                              uint32_t ds_tile, uint32_t copy_tile, bool copy = false) {
  const int gkey = kb.n_block * kBlockN + key;
  uint32_t s_raw[kComputeCols], dp_raw[kComputeCols];
  ptx::tcgen05_ld_32x32b_x32(BwdMmaPlan<D, Bf16>::s_taddr(tmem, warp, h, c), s_raw);
  ptx::tcgen05_ld_32x32b_x32(BwdMmaPlan<D, Bf16>::dp_taddr(tmem, warp, h, c), dp_raw);
  ptx::tcgen05_wait_ld_bind(s_raw);  // waits for both loads
  ptx::tcgen05_wait_ld_bind(dp_raw);
  const int q0 = 64 * h + kComputeCols * c;  // first query of the chunk in the block
  uint32_t p_pack[kComputeCols / 2], ds_pack[kComputeCols / 2];
#pragma unroll
  for (int e = 0; e < kComputeCols / 2; ++e) {
    float pv[2], dsv[2];
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      const int q = q0 + 2 * e + x;
      const bool vis = key_visible(gkey, m * kBlockM + q, p.seqlen_q, p.seqlen_k, p.causal != 0);
      pv[x] = bwd_p<DeviceMath>(__uint_as_float(s_raw[2 * e + x]), p.softmax_scale_log2, lse[q], vis);
      dsv[x] = bwd_ds(pv[x], __uint_as_float(dp_raw[2 * e + x]), delta[q]);
    }
    p_pack[e] = pack2<Bf16>(pv[0], pv[1]);
    ds_pack[e] = pack2<Bf16>(dsv[0], dsv[1]);
  }
  // P^T over columns of S^T this thread has already read (fa4_bwd_plan.h: the head of the half).
  ptx::tcgen05_st_32x32b_x16(BwdMmaPlan<D, Bf16>::p_taddr(tmem, warp, h, c), p_pack);
  // dS^T[key][q0 .. q0+32): four 16-byte units, swizzled as dK's K-major A (and dQ's MN-major A).
#pragma unroll
  for (int u = 0; u < kComputeCols / 8; ++u) {
    const uint32_t a = BwdMmaPlan<D, Bf16>::ds_unit_byte(static_cast<uint32_t>(key), static_cast<uint32_t>(q0 + 8 * u));
    ptx::st_shared_v4_b32(ds_tile + a, ds_pack[4 * u], ds_pack[4 * u + 1], ds_pack[4 * u + 2], ds_pack[4 * u + 3]);
    if (Copy && copy)
      ptx::st_shared_v4_b32(copy_tile + a, ds_pack[4 * u], ds_pack[4 * u + 1], ds_pack[4 * u + 2], ds_pack[4 * u + 3]);
  }
}

// The dK/dV epilogue of one compute thread (key `key` of the block, query half h = head-dim half h),
// after dkv_full (`any`: the key block had a step; otherwise zeros): dK (x softmax_scale) and dV,
// head-dim columns [h d/2, (h+1) d/2), 32 at a time. Non-GQA: bf16/fp16 into the staging tiles
// (dv_stage, dk_stage: the TMA store layout, 64-column chunks of 128 rows, 128-byte swizzle), then the
// TMA stores by one thread. GQA: red.global.add.f32 into the fp32 accumulators (the FA3 postprocess
// layout), deterministic: in the head order of writer_order.h lock_gqa. Shared by the 1-CTA and
// 2-CTA kernels (the TMEM columns of dV and dK are BwdMmaPlan<D>'s in both).
template <int D, bool Bf16>
__device__ __forceinline__ void dkv_epilogue(const BwdParams& p, const KeyBlock& kb, uint32_t tmem, int warp, int h,
                                             int key, bool any, uint32_t dv_stage, uint32_t dk_stage) {
  const bool gqa = p.heads_q != p.heads_kv;
  const int gkey = kb.n_block * kBlockN + key;
  const int ratio = p.heads_q / p.heads_kv;
  uint32_t* sem = p.dkv_sem + (static_cast<int64_t>(kb.batch) * p.heads_kv + kb.head_kv) * p.n_blocks + kb.n_block;
  if (gqa && p.deterministic) {
    if (threadIdx.x == 32 * kComputeWarp0)
      wait_for_turn(sem, static_cast<uint32_t>(writer_order::lock_gqa(kb.head % ratio, ratio)), "fa4 bwd: dkv_sem");
    ptx::bar_sync(kComputeNamedBar, 32 * kComputeWarps);
  }
#pragma unroll
  for (int t = 0; t < 2; ++t) {  // t = 0: dV, t = 1: dK
    const float scale = t == 0 ? 1.0f : p.softmax_scale;
#pragma unroll
    for (int c = 0; c < D / 2 / 32; ++c) {
      const int col0 = h * (D / 2) + 32 * c;  // head-dim column of the chunk
      uint32_t r[32];
      if (any) {
        if (t == 0) ptx::tcgen05_ld_32x32b_x32(BwdMmaPlan<D, Bf16>::dv_taddr(tmem, warp, col0 / 32), r);
        else ptx::tcgen05_ld_32x32b_x32(BwdMmaPlan<D, Bf16>::dk_taddr(tmem, warp, col0 / 32), r);
        ptx::tcgen05_wait_ld_bind(r);
      } else {
#pragma unroll
        for (int k = 0; k < 32; ++k) r[k] = 0u;
      }
      if (gqa) {
        if (gkey < p.seqlen_k) {
          float* acc = (t == 0 ? p.dv_accum : p.dk_accum) +
                       ((static_cast<int64_t>(kb.batch) * p.heads_kv + kb.head_kv) * p.n_blocks * kBlockN + gkey) *
                           D + col0;
#pragma unroll
          for (int k = 0; k < 32; ++k) ptx::red_global_add_f32(acc + k, __uint_as_float(r[k]) * scale);
        }
      } else {
        const uint32_t tile = t == 0 ? dv_stage : dk_stage;
#pragma unroll
        for (int u = 0; u < 4; ++u) {  // 16-byte units: 8 columns each
          uint32_t w[4];
#pragma unroll
          for (int e = 0; e < 4; ++e)
            w[e] = pack2<Bf16>(__uint_as_float(r[8 * u + 2 * e]) * scale, __uint_as_float(r[8 * u + 2 * e + 1]) * scale);
          ptx::st_shared_v4_b32(tile + BwdMmaPlan<D, Bf16>::out_unit_byte(static_cast<uint32_t>(key), static_cast<uint32_t>(col0 + 8 * u)),
                                w[0], w[1], w[2], w[3]);
        }
      }
    }
  }
  if (gqa) {
    if (p.deterministic) {
      ptx::bar_sync(kComputeNamedBar, 32 * kComputeWarps);  // every thread's adds issued (reading only: see NOTES)
      if (threadIdx.x == 32 * kComputeWarp0) {
        ptx::fence_acq_rel_gpu();
        ptx::red_release_gpu_add_u32(sem, 1u);
      }
    }
    return;
  }
  // Generic stores -> the TMA stores' async-proxy reads: fence in every writer, then the barrier.
  ptx::fence_proxy_async_shared_cta();
  ptx::bar_sync(kComputeNamedBar, 32 * kComputeWarps);
  if (threadIdx.x == 32 * kComputeWarp0) {
    for (int c = 0; c < D / kChunkElems; ++c)
      for (int r0 = 0; r0 < kBlockN; r0 += 64) {
        ptx::cp_async_bulk_tensor_4d_store(&p.tma_dv, dv_stage + BwdMmaPlan<D, Bf16>::chunk(kBlockN, c) + r0 * kSwizzleRow,
                                           c * kChunkElems, kb.n_block * kBlockN + r0, kb.head_kv, kb.batch);
        ptx::cp_async_bulk_tensor_4d_store(&p.tma_dk, dk_stage + BwdMmaPlan<D, Bf16>::chunk(kBlockN, c) + r0 * kSwizzleRow,
                                           c * kChunkElems, kb.n_block * kBlockN + r0, kb.head_kv, kb.batch);
      }
    ptx::cp_async_bulk_commit_group();
    ptx::cp_async_bulk_wait_group_read<0>();  // the staging tiles stay valid until read (CTA exit)
  }
}

// ==================================== COMPUTE (warps 4-11) ==================================================
template <BwdConfig C>
struct Compute {
  using L = BwdLayout<C>;
  using Plan = typename L::Plan;
  const BwdParams& p;
  const BwdSmem<C> sm;
  const KeyBlock kb;
  const uint32_t tmem;
  const int warp;  // warp index in the CTA; its lane quarter is warp % 4
  const int h;     // query half: warpgroup 1 -> 0 (queries 0-63), warpgroup 2 -> 1 (64-127)
  const int key;   // this thread's key in the block: TMEM lane 32 (warp % 4) + lane

  __device__ __forceinline__ Compute(const BwdParams& p_, const BwdSmem<C> sm_, const KeyBlock& kb_, uint32_t tmem_)
      : p(p_), sm(sm_), kb(kb_), tmem(tmem_), warp(static_cast<int>(threadIdx.x) / 32),
        h(static_cast<int>(threadIdx.x) / 128 - 1), key(32 * (static_cast<int>(threadIdx.x) / 32 % 4) +
                                                         static_cast<int>(threadIdx.x) % 32) {}

  // One step: query block m. S^T, dP^T -> P^T (TMEM), dS^T (shared memory), 32 queries at a time.
  __device__ __forceinline__ void step(int j, uint32_t stage, uint32_t ring_phase) {
    const int m = kb.m_begin + j;
    FLASHPTX_MBAR_WAIT(sm.bar(Bar::kQFull, stage), ring_phase, "fa4 bwd compute: q_full");    // LSE2
    FLASHPTX_MBAR_WAIT(sm.bar(Bar::kDoFull, stage), ring_phase, "fa4 bwd compute: do_full");  // delta
    FLASHPTX_MBAR_WAIT(sm.bar(Bar::kSdpFull), static_cast<uint32_t>(j) & 1u, "fa4 bwd compute: sdp_full");
    // dS^T(j-1) has been read by dK(j-1) and dQ(j-1) (their commit), so this step may overwrite it.
    if (j > 0) FLASHPTX_MBAR_WAIT(sm.bar(Bar::kDsFree), static_cast<uint32_t>(j - 1) & 1u, "fa4 bwd compute: ds_free");
    ptx::tcgen05_fence_after_thread_sync();  // the MMAs' S^T, dP^T (commit -> mbarrier) before tcgen05.ld
#pragma unroll
    for (int c = 0; c < 64 / kComputeCols; ++c)
      compute_chunk<C.head_dim, C.bf16, false>(p, kb, tmem, warp, h, key, c, m, sm.lse_ptr(stage), sm.delta_ptr(stage),
                                               sm.ds(), 0u);
    // P^T: stores complete (wait::st) and ordered before the arrive (fence::before_thread_sync).
    ptx::tcgen05_wait_st();
    ptx::tcgen05_fence_before_thread_sync();
    // dS^T: generic-proxy stores -> the MMA's async-proxy reads (fence in every writer, then arrive).
    ptx::fence_proxy_async_shared_cta();
    __syncwarp();
    if (threadIdx.x % 32 == 0) {
      ptx::mbarrier_arrive(sm.bar(Bar::kPReady));
      ptx::mbarrier_arrive(sm.bar(Bar::kDsReady));
    }
  }

  // After dkv_full: dK and dV out of TMEM (dkv_epilogue above, shared with the 2-CTA kernel), staged
  // in the dS^T buffer (dV) and Q stage 0 (dK), both free once every MMA has completed.
  __device__ __forceinline__ void epilogue() {
    const bool any = kb.m_end > kb.m_begin;
    if (any) {
      FLASHPTX_MBAR_WAIT(sm.bar(Bar::kDkvFull), 0u, "fa4 bwd compute: dkv_full");
      ptx::tcgen05_fence_after_thread_sync();  // the last dV/dK MMA (commit -> mbarrier) before tcgen05.ld
    }
    dkv_epilogue<C.head_dim, C.bf16>(p, kb, tmem, warp, h, key, any, sm.ds(), sm.q(0));
  }

  __device__ __forceinline__ void run() {
    RingState<C.stages> ring = RingState<C.stages>::consumer_start();
    for (int j = 0; j < kb.m_end - kb.m_begin; ++j) {
      step(j, ring.stage, ring.phase);
      ring.advance();
    }
    epilogue();
  }
};

// ==================================== REDUCTION (warps 0-3) =================================================
template <BwdConfig C>
struct Reduction {
  using L = BwdLayout<C>;
  using Plan = typename L::Plan;
  static constexpr int kChunks = C.head_dim / kDqChunkCols;
  const BwdParams& p;
  const BwdSmem<C> sm;
  const KeyBlock kb;
  const uint32_t tmem;
  const int warp, t;  // t: query row of the block = TMEM lane
  uint32_t staged = 0;  // chunks handed to the bulk engine so far (buffer = staged % 2)

  __device__ __forceinline__ void step(int j) {
    const int m = kb.m_begin + j;
    FLASHPTX_MBAR_WAIT(sm.bar(Bar::kDqFull), static_cast<uint32_t>(j) & 1u, "fa4 bwd reduction: dq_full");
    ptx::tcgen05_fence_after_thread_sync();  // the dQ MMA (commit -> mbarrier) before tcgen05.ld
    const int64_t tile = (static_cast<int64_t>(kb.batch) * p.heads_q + kb.head) * p.m_blocks + m;
    float* dst = p.dq_accum + tile * (kBlockM * C.head_dim);
    uint32_t* sem = p.dq_sem + tile;
#pragma unroll 1
    for (int c = 0; c < kChunks; ++c) {
      uint32_t r[kDqChunkCols];
      ptx::tcgen05_ld_32x32b_x32(Plan::dq_taddr(tmem, warp, c), r);
      ptx::tcgen05_wait_ld_bind(r);
      if (c == kChunks - 1) {  // dQ is out of TMEM: dP^T(j+1) may overwrite its columns
        ptx::tcgen05_fence_before_thread_sync();
        __syncwarp();
        if (threadIdx.x % 32 == 0) ptx::mbarrier_arrive(sm.bar(Bar::kDqFree));
      }
      const uint32_t buf = staged % 2u;
      // The buffer's previous bulk add (two chunks ago) has read it: thread 0 waits, the barrier tells all.
      if (t == 0 && staged >= 2) ptx::cp_async_bulk_wait_group_read<1>();
      ptx::bar_sync(kReductionNamedBar, 32 * kReductionWarps);
#pragma unroll
      for (int u = 0; u < kDqChunkCols / 4; ++u)
        ptx::st_shared_v4_b32(sm.dq_stage(buf) + dq_stage_byte(static_cast<uint32_t>(t), static_cast<uint32_t>(u)),
                              r[4 * u], r[4 * u + 1], r[4 * u + 2], r[4 * u + 3]);
      // Generic stores -> the bulk reduce's async-proxy read: fence in every writer, then the barrier.
      ptx::fence_proxy_async_shared_cta();
      ptx::bar_sync(kReductionNamedBar, 32 * kReductionWarps);
      if (t == 0) {
        if (c == 0 && p.deterministic) {
          wait_for_turn(sem, static_cast<uint32_t>(dq_lock(kb.n_block, m, p.seqlen_q, p.seqlen_k, p.causal != 0)),
                        "fa4 bwd reduction: dq_sem");
          ptx::fence_proxy_async_global();  // the acquire orders the bulk adds below after the earlier writers'
        }
        ptx::cp_reduce_async_bulk_add_f32(dst + c * (kBlockM * kDqChunkCols), sm.dq_stage(buf), kDqChunkBytes);
        ptx::cp_async_bulk_commit_group();
      }
      ++staged;
    }
    if (t == 0 && p.deterministic) {
      ptx::cp_async_bulk_wait_group<0>();  // the adds are complete in global memory
      ptx::fence_proxy_async_global();
      ptx::red_release_gpu_add_u32(sem, 1u);  // the next writer's turn
    }
  }

  __device__ __forceinline__ void run() {
    for (int j = 0; j < kb.m_end - kb.m_begin; ++j) step(j);
    if (t == 0) ptx::cp_async_bulk_wait_group<0>();  // the staging buffers stay valid until read
  }
};

// ==================================== THE KERNEL ============================================================
template <BwdConfig C>
__device__ __forceinline__ void bwd_kernel_body(const BwdParams& p) {
  using L = BwdLayout<C>;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t raw = ptx::smem_u32(smem_raw);
  const uint32_t aligned = (raw + 1023u) & ~1023u;
  const BwdSmem<C> sm{aligned, smem_raw + (aligned - raw)};
  const int warp = static_cast<int>(threadIdx.x) / 32;

  // Barriers: one thread initialises exactly barrier_copies(b) of each kind (BwdLayout::kNumBarriers
  // in all; unrolled, so that the .check counts the SYNCS.EXCH.64), the init fence, then a CTA
  // barrier before anyone uses them.
  if (threadIdx.x == 0) {
#pragma unroll
    for (int b = 0; b < kBarCount; ++b)
#pragma unroll
      for (int c = 0; c < barrier_copies(static_cast<Bar>(b), C.stages); ++c)
        ptx::mbarrier_init(sm.bar(static_cast<Bar>(b), c), arrival_count(static_cast<Bar>(b)));
    ptx::fence_mbarrier_init();
  }
  __syncthreads();

  // TMEM: warp 12 allocates all 512 columns; the address reaches every warp through shared memory
  // behind the fence / barrier / fence pattern tcgen05.alloc's contract names.
  if (warp == kMmaWarp) ptx::tcgen05_alloc<1, L::Plan::kTmemCols>(sm.tmem_slot());
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  ptx::tcgen05_fence_after_thread_sync();
  const uint32_t tmem = *reinterpret_cast<volatile const uint32_t*>(smem_raw + (aligned - raw) + L::kOffTmemSlot);
  const KeyBlock kb = key_block_of<C>(p);

  if (warp < kComputeWarp0) {
    ptx::setmaxnreg_inc<L::kReductionRegs>();
    Reduction<C>{p, sm, kb, tmem, warp, static_cast<int>(threadIdx.x)}.run();
  } else if (warp < kMmaWarp) {
    ptx::setmaxnreg_inc<L::kComputeRegs>();
    Compute<C>(p, sm, kb, tmem).run();
  } else {
    ptx::setmaxnreg_dec<L::kOtherRegs>();
    if (threadIdx.x % 32 == 0) {
      if (warp == kMmaWarp) MmaIssuer<C>{sm, tmem}.run(kb);
      else if (warp == kLoadWarp) Loader<C>{p, sm, kb}.run();
    }
    __syncwarp();
  }

  // Teardown: every role is done with TMEM (compute waited dkv_full, the last commit, and read dK/dV;
  // the reduction read the last dQ), then warp 12 frees it.
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  if (warp == kMmaWarp) {
    ptx::tcgen05_fence_after_thread_sync();
    ptx::tcgen05_dealloc<1, L::Plan::kTmemCols>(tmem);
    ptx::tcgen05_relinquish_alloc_permit<1>();
  }
}

}  // namespace flashptx::fa4bwd
