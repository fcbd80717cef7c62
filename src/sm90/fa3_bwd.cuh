// FlashAttention-3 backward on Hopper (sm_90a), by hand: the main kernel.
// Protocols: docs/PROTOCOLS.md ("The backward relay", "Deterministic writer order"); the FA3
// paper (Shah et al., arXiv 2407.08608, section 3 and appendix B); PTX ISA sections cited inline.
// The preprocess (delta, LSE in base 2, dQ accumulator zeroed) and postprocess (dQ, and dK/dV under
// GQA, converted to the output dtype) are in src/sm90/fa3_bwd_aux.cuh.
//
// A CTA owns one block of block_n keys (128; d256: 64) of one (batch, query head) and walks the
// query blocks that see any of its keys (all of them; under a bottom-right causal mask, those from
// the first row that sees the block's first key). It loads K and V once and streams Q with its LSE
// and dO with its delta through a ring (d256: a 2-stage Q ring and a 1-stage dO ring, each with its
// own empty barrier). Two ways of splitting the work between the MMA warpgroups (BwdSplit,
// src/sm90/fa3_bwd_config.h), one body: kSplitKeys (d64, d128) and kSplitHeadDim (d256). Roles:
//
//   warpgroup 0, warp 0   PRODUCER    setmaxnreg.dec; one thread: K and V by TMA once (kv_full),
//                                     then per query block Q + LSE2 (q_full[s]) and dO + delta
//                                     (do_full[s]) into an s-stage ring.
//   warpgroup 0, warp 1   dQ WRITER   one thread: per query block, waits for the MMA warpgroups'
//                                     fp32 dQ tile in shared memory (dq_full) and adds it to the
//                                     global accumulator with one cp.reduce.async.bulk .add.f32;
//                                     once the bulk add has read the tile, frees it (dq_empty).
//                                     d256: the staging buffer holds half the tile; per query block
//                                     two parts, warpgroup 0's columns then warpgroup 1's, each its
//                                     own dq_full[g] / dq_empty[g] and its own bulk add.
//                                     Deterministic mode: before the (first) add, waits for its turn
//                                     on the tile's semaphore; after the adds complete, advances it.
//   warpgroups 1, 2       MMA         setmaxnreg.inc. kSplitKeys: warpgroup g owns keys
//                                     [64g, 64g+64), holds dK and dV (fp32) for them across the loop:
//     S^T  = K_g Q^T         wgmma SS      (64 x block_m, fp32)
//     dP^T = V_g dO^T        wgmma SS
//     P^T  = exp2(S^T scale log2e - LSE2)  (masked: 0)
//     dV  += P^T dO          wgmma RS (P^T from registers; dO MN-major)
//     dS^T = P^T (dP^T - delta)            -> registers (for dK) and shared memory (for dQ)
//     dK  += dS^T Q          wgmma RS
//     dQ   = dS K            wgmma SS (dS^T MN-major, K MN-major), once both halves of dS^T are in
//                            shared memory; warpgroup g computes its half of dQ (columns for
//                            block_m 64, rows for block_m 128: BwdLayout::kDqSplitRows)
//   kSplitHeadDim (d256, 64 keys x 64 query rows per step): dK and dV of 64 keys x 256 columns in
//   fp32 would be 256 registers per thread on one warpgroup. Warpgroup g instead owns head-dim
//   columns [128g, 128g+128) of dK, dV (across the loop) and dQ (per step): 3 x 64 accumulator
//   registers, the K/V tiles of 64 keys fit beside a 2-stage Q ring. Per step it computes
//     S^T, dP^T for all 64 keys and query rows [32g, 32g+32)   wgmma SS, m64n32 (16 + 16 registers)
//     P^T, dS^T as above, written (16-bit) to shared memory [keys][query rows]: the other
//                            warpgroup's rows are needed for the full K = 64 of the next GEMMs
//     dV  += P^T dO          wgmma SS (P^T K-major from shared memory; dO MN-major, its columns)
//     dK  += dS^T Q          wgmma SS
//     dQ   = dS K            wgmma SS (dS^T MN-major, K MN-major, its columns)
//   Epilogue: dK scaled by softmax_scale; without GQA dK and dV are staged in the K and V buffers
//   and stored by TMA (each warpgroup its keys, or its columns); under GQA they are added (fp32) to
//   the caller's workspace accumulators.
//
// Variable-length batches (C.varlen, src/sm90/fa3_bwd_config.h "variable-length batches"): the
// tensors are packed [total, heads, d] (tensor maps of batch extent 1), and CTA blockIdx.x is key
// block blockIdx.x - n_prefix[s] of the table's sequence s. The differences from the fixed-length
// kernel, each under `if constexpr (C.varlen)` (VarlenKeyBlock carries the sequence):
//   - coordinates: the sequence's first packed row is added to every Q, dO, K, V, dK and dV row;
//     its padded block range (m_prefix[s]) locates its LSE2, delta, dQ accumulator and semaphores;
//   - lengths: the key bound of the mask, the causal diagonal, the masked-step count and the dQ
//     writers' causal lock are the sequence's. A Q/dO box past the sequence's last row reads the
//     next sequence's rows (or TMA's zero fill): their LSE2 is +inf and their delta 0 (the
//     preprocess pads each sequence), so P = dS = 0 there, as on the padded rows of a fixed-length
//     problem; a K/V box past its last key reads finite keys the mask removes;
//   - the dK/dV store: a TMA store writes its whole 64-row box, clipped at the tensor's end only, so
//     a warpgroup whose 64 keys all lie inside the sequence stores by TMA, and the one holding the
//     sequence's last keys stores its rows < len_k from registers (as the forward varlen's O), and
//     of them the columns < real_head_dim only (head dims 96 and 192 on the d128 and d256 shapes:
//     BwdConfig::real_head_dim; the box stores are clipped at the tensor maps' extent);
//   - no rotated dQ order (the plan never sets dq_rotated for varlen).
//
// The sliding window and the softcap (C.local, src/sm90/fa3_bwd_local.cu; BwdLocal in the kernel's
// parameter block, read through LocalKeyBlock), each under `if constexpr (C.local)`:
//   - the walk: only the query blocks whose rows see a key of the block, as three segments, a
//     masked head, an unmasked middle and a masked tail (src/protocol/bwd_window.h window_walk);
//     the producer and the dQ writer take the total; the key blocks ascend (no causal reversal:
//     causal is the window (-1, 0), and the plan sets causal = 0, dq_rotated = 0);
//   - the mask: keys past seqlen_k and outside win_lo <= key - row <= win_hi (probabilities_local);
//   - the softcap c: t = tanh(S^T scale / c) before the exponential (scale_log2 = c log2e), and
//     dS^T = P^T (dP^T - delta)(1 - t^2) with t recomputed from P^T and LSE2 after the wait that
//     retires dP^T (score_gradients_local: nothing beside the accumulators);
//   - deterministic dQ: the writers of a tile ascend from its first writer (window_first_writer).
//
// Barriers (slots and arrival counts in BwdLayout, src/sm90/fa3_bwd_config.h):
//   kv_full         producer expect_tx(K + V bytes) + TMA complete_tx; waited once
//   q_full[s]       producer expect_tx(Q + LSE2 bytes) + TMA/bulk complete_tx
//   do_full[s]      producer expect_tx(dO + delta bytes)
//   qdo_empty[s]    one arrive per MMA warp, after the wgmma wait that retires dK and dV (the last
//                   readers of Q and dO) and the LSE2/delta reads; with one ring it releases Q and
//                   dO of stage s, with two (d256) Q only
//   do_empty[s]     d256 only: the same arrivals, after the same wait, for the dO ring
//   dq_full[part]   every MMA thread of the part (one part: all 256; d256: warpgroup g's 128 for
//                   part g), after its dQ stores and its proxy fence
//   dq_empty[part]  the dQ writer, after cp.async.bulk.wait_group.read 0 of the previous part
// Named barriers: 2 = both MMA warpgroups' halves of dS^T (d256: and of P^T) are in shared memory
//   (256 threads);
//   3 = both MMA warpgroups retired every wgmma reading K/V (epilogue, 256); 4 + g = warpgroup g's
//   dK/dV staging written (128).
// wgmma groups in one step, oldest first: S^T, dP^T | wait 1 -> S^T read (P^T) | wait 0 -> dP^T
//   read (dS^T) | dV, dK, then (after the dS^T barrier) dQ | wait 0 -> all retired: the Q/dO stage is
//   released and dQ handed to the writer. d256: dV, dK and dQ are all issued after the barrier (their
//   A operands are the shared P^T and dS^T tiles) | wait 1 -> dV, dK retired: the Q and dO stages
//   are released (dQ reads neither) | wait 0 -> dQ retired: handed to the writer.
#pragma once
#include <cuda.h>
#include <cstdint>
#include <cstdio>
#include <type_traits>

#include "src/protocol/bwd_window.h"
#include "src/protocol/ring.h"
#include "src/protocol/tile_scheduler.h"
#include "src/protocol/writer_order.h"
#include "ptx/atomic.cuh"
#include "ptx/barrier.cuh"
#include "ptx/cvt.cuh"
#include "ptx/fence.cuh"
#include "ptx/ldst.cuh"
#include "ptx/lg2.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tanh.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "src/sm90/common.cuh"
#include "src/sm90/fa3_bwd_config.h"

#if defined(__CUDA_ARCH__) && !FLASHPTX_HAS_SM90A
#error "src/sm90/fa3_bwd.cuh is Hopper code: compile it with -gencode arch=compute_90a,code=sm_90a"
#endif

namespace flashptx::fa3::bwd {

// Named barriers of the backward (PTX: 16 per CTA; 0 is __syncthreads).
enum BwdNamedBarrier : uint32_t {
  kBarDsReady = 2,     // 256: both halves of dS^T stored (and fenced) before the dQ GEMM reads them
  kBarKVRetired = 3,   // 256: every wgmma reading K and V retired, before the epilogue reuses them
  kBarStagedWG0 = 4,   // 128 (+g): warpgroup g's dK/dV staging written, before its TMA store
};

// ---- shared memory, carved from BwdLayout ----------------------------------------------------
template <BwdConfig C>
struct BwdSmem {
  using L = BwdLayout<C>;
  uint32_t base;
  __device__ __forceinline__ uint32_t k() const { return base + L::kOffK; }
  __device__ __forceinline__ uint32_t v() const { return base + L::kOffV; }
  __device__ __forceinline__ uint32_t q(uint32_t s) const { return base + L::kOffQ + s * L::kQBytes; }
  __device__ __forceinline__ uint32_t dO(uint32_t s) const { return base + L::kOffDo + s * L::kQBytes; }
  __device__ __forceinline__ uint32_t ds(uint32_t buf) const { return base + L::kOffDs + buf * L::kDsBytes; }
  __device__ __forceinline__ uint32_t pt(uint32_t buf) const { return base + L::kOffP + buf * L::kDsBytes; }
  __device__ __forceinline__ uint32_t dq() const { return base + L::kOffDq; }
  __device__ __forceinline__ uint32_t lse(uint32_t s) const { return base + L::kOffLse + s * L::kRowBytes; }
  __device__ __forceinline__ uint32_t delta(uint32_t s) const { return base + L::kOffDelta + s * L::kRowBytes; }
  __device__ __forceinline__ uint32_t bar(uint32_t slot) const { return base + L::kOffBar + 8u * slot; }
  __device__ __forceinline__ uint32_t kv_full() const { return bar(L::kBarKV); }
  __device__ __forceinline__ uint32_t q_full(uint32_t s) const { return bar(L::kBarQFull + s); }
  __device__ __forceinline__ uint32_t do_full(uint32_t s) const { return bar(L::kBarDoFull + s); }
  // Q stage s released (with one ring: Q and dO of stage s).
  __device__ __forceinline__ uint32_t qdo_empty(uint32_t s) const { return bar(L::kBarQdoEmpty + s); }
  __device__ __forceinline__ uint32_t do_empty(uint32_t s) const {
    return L::kOneRing ? qdo_empty(s) : bar(L::kBarDoEmpty + s);
  }
  __device__ __forceinline__ uint32_t dq_full(uint32_t part) const { return bar(L::kBarDqFull + part); }
  __device__ __forceinline__ uint32_t dq_empty(uint32_t part) const { return bar(L::kBarDqEmpty + part); }
};

// ---- the Q and dO rings, as their two sides see them (src/protocol/ring.h: stage and phase) ----
// One ring (kOneRing: d64, d128): Q + LSE2 and dO + delta of a query block share a stage index
// and the empty barrier qdo_empty[s]. Two rings (d256): Q (stages deep, qdo_empty) and dO (1
// stage, do_empty), each with its own coordinate. Each side knows its barriers and the names its
// waits report in bounded-wait builds, so that a step reads wait / issue / release.

// The producer's side: it waits a stage's release before refilling it (one generation ahead:
// producer_start), and before it leaves, every stage it filled (drain).
template <BwdConfig C>
struct QdoWriteRing {
  using L = BwdLayout<C>;
  const BwdSmem<C>& sm;
  // d before q (SASS-pinned: the d256 goldens; docs/DECISIONS.md, "Rings that know their barriers").
  RingState<C.do_stages> d = RingState<C.do_stages>::producer_start();  // unused with one ring
  RingState<C.stages> q = RingState<C.stages>::producer_start();
  __device__ __forceinline__ uint32_t q_stage() const { return q.stage; }
  __device__ __forceinline__ uint32_t do_stage() const { return L::kOneRing ? q.stage : d.stage; }
  __device__ __forceinline__ void wait_q_empty() const {
    FLASHPTX_MBAR_WAIT(sm.qdo_empty(q.stage), q.phase, "fa3 bwd producer: qdo_empty");
  }
  // With one ring, wait_q_empty released dO's stage too.
  __device__ __forceinline__ void wait_do_empty() const {
    if constexpr (!L::kOneRing) FLASHPTX_MBAR_WAIT(sm.do_empty(d.stage), d.phase, "fa3 bwd producer: do_empty");
  }
  __device__ __forceinline__ void advance() {
    q.advance();
    if constexpr (!L::kOneRing) d.advance();
  }
  // Producer tail: every stage it filled has been released before it leaves.
  __device__ __forceinline__ void drain() {
    for (int i = 0; i < C.stages; ++i) {
      FLASHPTX_MBAR_WAIT(sm.qdo_empty(q.stage), q.phase, "fa3 bwd producer tail: qdo_empty");
      q.advance();
    }
    if constexpr (!L::kOneRing)
      for (int i = 0; i < C.do_stages; ++i) {
        FLASHPTX_MBAR_WAIT(sm.do_empty(d.stage), d.phase, "fa3 bwd producer tail: do_empty");
        d.advance();
      }
  }
};

// The MMA warpgroups' side: wait q_full / do_full (the stage's TMA and bulk bytes have landed:
// expect_tx + complete_tx of the current generation), read, release. release() is called after the
// wgmma wait that retires the last readers of Q and dO. LSE2 and delta were read with generic loads
// from bytes the async proxy wrote, and the producer's next bulk copy into this stage is
// async-proxy again: the reads are ordered before it by the fence (PTX ISA "Memory Consistency
// Model: proxies"; the race without it is reproduced by tools/race/README.md); then one arrive per
// warp on each empty barrier, which advances.
template <BwdConfig C>
struct QdoReadRing {
  using L = BwdLayout<C>;
  const BwdSmem<C>& sm;
  RingState<C.stages> q = RingState<C.stages>::consumer_start();
  RingState<C.do_stages> d = RingState<C.do_stages>::consumer_start();  // unused with one ring
  __device__ __forceinline__ uint32_t q_stage() const { return q.stage; }
  __device__ __forceinline__ uint32_t do_stage() const { return L::kOneRing ? q.stage : d.stage; }
  __device__ __forceinline__ void wait_q_full() const {
    FLASHPTX_MBAR_WAIT(sm.q_full(q.stage), q.phase, "fa3 bwd mma: q_full");
  }
  __device__ __forceinline__ void wait_do_full() const {
    FLASHPTX_MBAR_WAIT(sm.do_full(do_stage()), L::kOneRing ? q.phase : d.phase, "fa3 bwd mma: do_full");
  }
  __device__ __forceinline__ void release(int lane) {
    ptx::fence_proxy_async_shared_cta();
    __syncwarp();
    if (lane == 0) {
      ptx::mbarrier_arrive(sm.qdo_empty(q.stage));
      if constexpr (!L::kOneRing) ptx::mbarrier_arrive(sm.do_empty(d.stage));
    }
    q.advance();
    if constexpr (!L::kOneRing) d.advance();
  }
};

// ---- this CTA's work -----------------------------------------------------------------------
// Grid (n_blocks, heads_q, batch). Causal masks in deterministic mode visit key blocks in reverse
// (the largest n first: the dQ writer order "shortest first", src/protocol/writer_order.h), so
// that every writer a dQ tile waits for was dispatched earlier.
struct KeyBlock {
  int n_block, head, head_kv, batch;
  // The walk over query blocks. The producer, the dQ writer and the MMA warpgroups start at query
  // block m_first and take next_m() after each step: first steps_masked steps that need a mask,
  // then steps_unmasked that do not. Ascending (the default), m_first is the first query block that
  // sees a key of this block and the walk is m_first, m_first + 1, ... Rotated (p.dq_rotated: the
  // deterministic mode without a mask, src/protocol/writer_order.h rotated_m_block), key block n
  // starts at query block n (the plan allows it only with n_blocks <= m_blocks) and wraps past the
  // last: every query block is visited, and without a mask either every step is masked (a ragged
  // key tail) or none, so the masked steps are still the masked query blocks. Counted loops (not bounds on m): the MMA warpgroups and the
  // producer have no register to spare for a rotation, and their old loops carried three values.
  int m_first, steps_masked, steps_unmasked;
};
// C.varlen: the key block's sequence (the table's slot), on top of the walk. Its own type, so that
// the fixed-length kernels' KeyBlock (and their listings) stay as they are.
struct VarlenKeyBlock : KeyBlock {
  int q_row0, k_row0;  // packed row of the sequence's first query and key
  int len_q, len_k;
  int m_base, n_base;  // its first padded query block (m_prefix) and first key block (n_prefix)
};
// C.local: the window walk's third segment and the run-time modifiers, on top of either (the
// fixed-length and varlen kernels' key blocks stay as they are).
//   steps_tail        masked steps after the unmasked ones (src/protocol/bwd_window.h window_walk)
//   win_lo, win_hi    row i sees key j iff win_lo <= j - i <= win_hi (bwd_window::window_lo/hi)
//   softcap_prescale  scale / c, 0 without a softcap; softcap_ln2_inv = ln(2) / c (BwdLocal)
template <class Base>
struct LocalKeyBlock : Base {
  int steps_tail;
  int win_lo, win_hi;
  float softcap_prescale, softcap_ln2_inv;
};
template <BwdConfig C>
using KeyBlockBase = std::conditional_t<C.varlen, VarlenKeyBlock, KeyBlock>;
template <BwdConfig C>
using KeyBlockOf = std::conditional_t<C.local, LocalKeyBlock<KeyBlockBase<C>>, KeyBlockBase<C>>;
// Every role's step count: the walk's segments.
template <BwdConfig C>
__device__ __forceinline__ int steps_total(const KeyBlockOf<C>& kb) {
  if constexpr (C.local) return kb.steps_masked + kb.steps_unmasked + kb.steps_tail;
  else return kb.steps_masked + kb.steps_unmasked;
}
// The lengths a role masks and walks with: the launch's, or (varlen) the key block's sequence's.
template <BwdConfig C>
__device__ __forceinline__ int len_q_of(const BwdParams& p, const KeyBlockOf<C>& kb) {
  if constexpr (C.varlen) return kb.len_q;
  return p.seqlen_q;
}
template <BwdConfig C>
__device__ __forceinline__ int len_k_of(const BwdParams& p, const KeyBlockOf<C>& kb) {
  if constexpr (C.varlen) return kb.len_k;
  return p.seqlen_k;
}
// Row coordinates in the tensor maps: the row in the sequence, plus (varlen) its first packed row.
template <BwdConfig C>
__device__ __forceinline__ int q_coord(const KeyBlockOf<C>& kb, int row) {
  if constexpr (C.varlen) return kb.q_row0 + row;
  return row;
}
template <BwdConfig C>
__device__ __forceinline__ int k_coord(const KeyBlockOf<C>& kb, int row) {
  if constexpr (C.varlen) return kb.k_row0 + row;
  return row;
}
// The first dQ tile (and semaphore) of this CTA's (batch, head), or (varlen) of its (head,
// sequence): tiles [batch, heads_q, m_blocks], or [heads_q, m_prefix[num_seqs]] at m_base.
template <BwdConfig C>
__device__ __forceinline__ int64_t dq_tiles0(const BwdParams& p, const KeyBlockOf<C>& kb) {
  if constexpr (C.varlen) return static_cast<int64_t>(kb.head) * p.m_blocks + kb.m_base;
  return (static_cast<int64_t>(kb.batch) * p.heads_q + kb.head) * p.m_blocks;
}

// The fixed-length kernels' key block (its code is as it was before varlen: their listings are
// pinned by the goldens).
template <BwdConfig C>
__device__ __forceinline__ KeyBlock fixed_key_block(const BwdParams& p) {
  constexpr int kBm = C.block_m, kBn = BwdLayout<C>::kBlockN;
  KeyBlock kb;
  kb.n_block = (p.causal && p.deterministic) ? p.n_blocks - 1 - static_cast<int>(blockIdx.x) : static_cast<int>(blockIdx.x);
  kb.head = blockIdx.y;
  kb.batch = blockIdx.z;
  kb.head_kv = kb.head / (p.heads_q / p.heads_kv);
  const int diag = p.seqlen_k - p.seqlen_q;  // query row r sees key c iff c <= r + diag
  int m_end = p.m_blocks, m_begin = 0, m_unmasked;
  if (p.causal) {
    const int first_row = kb.n_block * kBn - diag;  // the first row that sees the block's first key
    m_begin = first_row <= 0 ? 0 : min(first_row / kBm, p.m_blocks);
  }
  // No mask where every row of the query block sees every key of the block: the block's last key
  // is below seqlen_k, and (causal) the query block's first row sees it.
  const int last_key = (kb.n_block + 1) * kBn - 1;
  if (last_key >= p.seqlen_k) {
    m_unmasked = m_end;
  } else if (p.causal) {
    const int first_row = last_key - diag;  // the first row that sees the last key
    m_unmasked = first_row <= 0 ? 0 : min((first_row + kBm - 1) / kBm, m_end);
  } else {
    m_unmasked = 0;
  }
  m_unmasked = max(m_unmasked, m_begin);
  kb.m_first = p.dq_rotated ? kb.n_block : m_begin;  // rotated: n_blocks <= m_blocks (src/plan.cpp)
  kb.steps_masked = m_unmasked - m_begin;
  kb.steps_unmasked = m_end - m_unmasked;
  return kb;
}

// Varlen: the sequence is the table's slot of blockIdx.x (its key blocks are consecutive CTAs), and
// the walk is fixed_key_block's with the sequence's lengths and block counts (the deterministic
// causal mode reverses the key blocks within the sequence: a dQ tile's writers all belong to one
// sequence); no rotation.
template <BwdConfig C>
__device__ __forceinline__ VarlenKeyBlock varlen_key_block(const BwdParams& p, const BwdVarlenTable& vt) {
  constexpr int kBm = C.block_m, kBn = BwdLayout<C>::kBlockN;
  VarlenKeyBlock kb;
  const int s = varlen_slot_of_tile(vt.n_prefix, vt.num_seqs, static_cast<int>(blockIdx.x));
  const BwdVarlenSeq sq = vt.seq[s];
  kb.q_row0 = sq.q_start;
  kb.k_row0 = sq.k_start;
  kb.len_q = sq.len_q;
  kb.len_k = sq.len_k;
  kb.m_base = vt.m_prefix[s];
  kb.n_base = vt.n_prefix[s];
  const int m_blocks = vt.m_prefix[s + 1] - kb.m_base, n_blocks = vt.n_prefix[s + 1] - kb.n_base;
  const int local = static_cast<int>(blockIdx.x) - kb.n_base;
  kb.n_block = (p.causal && p.deterministic) ? n_blocks - 1 - local : local;
  kb.head = blockIdx.y;
  kb.batch = 0;  // the packed tensors' one batch coordinate
  kb.head_kv = kb.head / (p.heads_q / p.heads_kv);
  const int diag = sq.len_k - sq.len_q;
  int m_begin = 0, m_unmasked;
  if (p.causal) {
    const int first_row = kb.n_block * kBn - diag;
    m_begin = first_row <= 0 ? 0 : min(first_row / kBm, m_blocks);
  }
  const int last_key = (kb.n_block + 1) * kBn - 1;
  if (last_key >= sq.len_k) {
    m_unmasked = m_blocks;
  } else if (p.causal) {
    const int first_row = last_key - diag;
    m_unmasked = first_row <= 0 ? 0 : min((first_row + kBm - 1) / kBm, m_blocks);
  } else {
    m_unmasked = 0;
  }
  m_unmasked = max(m_unmasked, m_begin);
  kb.m_first = m_begin;
  kb.steps_masked = m_unmasked - m_begin;
  kb.steps_unmasked = m_blocks - m_unmasked;
  return kb;
}

// vt: the varlen kernels' sequence table (in the parameter block), nullptr otherwise.
template <BwdConfig C>
__device__ __forceinline__ KeyBlockBase<C> base_key_block(const BwdParams& p, const BwdVarlenTable* vt) {
  if constexpr (C.varlen) return varlen_key_block<C>(p, *vt);
  else return fixed_key_block<C>(p);
}
// C.local: the base key block (the plan sets causal = 0 and dq_rotated = 0 for the local kernels:
// its n_block is blockIdx.x's, ascending, the causal mask is the window (-1, 0)), then the window
// walk over the sequence's lengths in place of the base walk.
template <BwdConfig C>
__device__ __forceinline__ KeyBlockOf<C> key_block(const BwdParams& p, const BwdVarlenTable* vt, const BwdLocal* lc) {
  if constexpr (C.local) {
    KeyBlockOf<C> kb;
    static_cast<KeyBlockBase<C>&>(kb) = base_key_block<C>(p, vt);
    const int len_q = len_q_of<C>(p, kb), len_k = len_k_of<C>(p, kb), diag = len_k - len_q;
    kb.win_lo = bwd_window::window_lo(diag, lc->window_left);
    kb.win_hi = bwd_window::window_hi(diag, lc->window_right);
    const bwd_window::WindowWalk w =
        bwd_window::window_walk(kb.n_block, C.block_m, BwdLayout<C>::kBlockN, len_q, len_k, kb.win_lo, kb.win_hi);
    kb.m_first = w.m_first;
    kb.steps_masked = w.head;
    kb.steps_unmasked = w.middle;
    kb.steps_tail = w.tail;
    kb.softcap_prescale = lc->softcap_prescale;
    kb.softcap_ln2_inv = lc->softcap_ln2_inv;
    return kb;
  } else {
    return base_key_block<C>(p, vt);
  }
}

// The query block after m in every role's walk: m + 1, wrapping to 0 past the last (reached only by
// the rotated walk, and by the ascending one after its last step).
__device__ __forceinline__ int next_m(int m, const BwdParams& p) { return m + 1 == p.m_blocks ? 0 : m + 1; }

// ---- small helpers (pack2: src/sm90/common.cuh) ----------------------------------------------
template <int N, int TransA, int TransB, bool IsBf16>
__device__ __forceinline__ void mma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, uint32_t scale_d) {
  if constexpr (IsBf16) ptx::wgmma_m64k16_f32_bf16_ss<N, TransA, TransB>(d, da, db, scale_d);
  else ptx::wgmma_m64k16_f32_f16_ss<N, TransA, TransB>(d, da, db, scale_d);
}
template <int N, bool IsBf16>
__device__ __forceinline__ void mma_rs_transb(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db,
                                              uint32_t scale_d) {
  if constexpr (IsBf16) ptx::wgmma_m64k16_f32_bf16_rs<N, 1>(d, a, db, scale_d);
  else ptx::wgmma_m64k16_f32_f16_rs<N, 1>(d, a, db, scale_d);
}
// The wgmma D fragment as the next wgmma's A fragment (16-bit): two adjacent n8 blocks per k16.
template <int N, bool IsBf16>
__device__ __forceinline__ void to_a_fragments(const float (&acc)[N / 2], uint32_t (&frag)[N / 16][4]) {
#pragma unroll
  for (int k = 0; k < N / 16; ++k) {
    frag[k][0] = pack2<IsBf16>(acc[8 * k + 0], acc[8 * k + 1]);
    frag[k][1] = pack2<IsBf16>(acc[8 * k + 2], acc[8 * k + 3]);
    frag[k][2] = pack2<IsBf16>(acc[8 * k + 4], acc[8 * k + 5]);
    frag[k][3] = pack2<IsBf16>(acc[8 * k + 6], acc[8 * k + 7]);
  }
}
// A descriptor the compiler must treat as produced here: keeps it from hoisting the k-step
// advances of every GEMM out of the query-block loop (8 precomputed 64-bit descriptors per GEMM
// would hold ~80 registers across the loop and spill the accumulators; recomputing them is a few
// uniform-register adds per step).
__device__ __forceinline__ uint64_t opaque(uint64_t desc) {
  asm volatile("" : "+l"(desc));
  return desc;
}
// Byte offset of element pair (row, col..col+1) in a 128B-swizzled tile of 2-byte elements stored
// as 64-column chunks of `rows` rows of 128 B (the TMA 128B-swizzle layout: 16-byte unit u of row r
// at u ^ (r % 8)).
__device__ __forceinline__ uint32_t swizzled_pair_offset(int rows, int row, int col) {
  return (col / 64) * rows * 128 + row * 128 + ((((col % 64) / 8) ^ (row % 8)) * 16) + (col % 8) * 2;
}

// ---- the deterministic writer order's turn (src/protocol/writer_order.h) ----------------------
// Spins until the semaphore shows `lock` writers done. Test builds bound the wait like every mbarrier
// wait (FLASHPTX_BOUNDED_WAIT): a writer order that can never complete traps with a message.
__device__ __forceinline__ void wait_for_turn(const uint32_t* sem, uint32_t lock, const char* name) {
  ptx::semaphore_wait_eq(sem, lock, name);  // ptx/atomic.cuh: bounded in test builds
}

// ==================================== PRODUCER ====================================================
template <BwdConfig C>
struct Producer {
  using L = BwdLayout<C>;
  const BwdParams& p;
  const BwdSmem<C>& sm;
  const KeyBlockOf<C>& kb;

  __device__ __forceinline__ void run() {
    // K and V of this key block, once.
    ptx::mbarrier_arrive_expect_tx(sm.kv_full(), 2 * L::kKVBytes);
    for (int c = 0; c < L::kChunks; ++c) {
      ptx::cp_async_bulk_tensor_4d_load(sm.k() + c * L::kBlockN * 128, &p.tma_k, sm.kv_full(), c * 64,
                                        k_coord<C>(kb, kb.n_block * L::kBlockN), kb.head_kv, kb.batch);
      ptx::cp_async_bulk_tensor_4d_load(sm.v() + c * L::kBlockN * 128, &p.tma_v, sm.kv_full(), c * 64,
                                        k_coord<C>(kb, kb.n_block * L::kBlockN), kb.head_kv, kb.batch);
    }
    // Q + LSE2 and dO + delta of every query block, through the ring (QdoWriteRing: one generation
    // ahead; with two rings the dO ring has its own stage and empty barrier).
    QdoWriteRing<C> write{sm};
    const int64_t rows0 = dq_tiles0<C>(p, kb) * C.block_m;  // LSE2 / delta rows: one per dQ tile row
    int m = kb.m_first;
    for (int left = steps_total<C>(kb); left > 0; --left, m = next_m(m, p)) {
      const uint32_t s = write.q_stage();
      write.wait_q_empty();
      ptx::mbarrier_arrive_expect_tx(sm.q_full(s), L::kQBytes + L::kRowBytes);
      for (int c = 0; c < L::kChunks; ++c)
        ptx::cp_async_bulk_tensor_4d_load(sm.q(s) + c * C.block_m * 128, &p.tma_q, sm.q_full(s), c * 64,
                                          q_coord<C>(kb, m * C.block_m), kb.head, kb.batch);
      ptx::cp_async_bulk_load(sm.lse(s), p.lse2 + rows0 + m * C.block_m, L::kRowBytes, sm.q_full(s));
      const uint32_t sd = write.do_stage();
      write.wait_do_empty();
      ptx::mbarrier_arrive_expect_tx(sm.do_full(sd), L::kQBytes + L::kRowBytes);
      for (int c = 0; c < L::kChunks; ++c)
        ptx::cp_async_bulk_tensor_4d_load(sm.dO(sd) + c * C.block_m * 128, &p.tma_do, sm.do_full(sd), c * 64,
                                          q_coord<C>(kb, m * C.block_m), kb.head, kb.batch);
      ptx::cp_async_bulk_load(sm.delta(sd), p.delta + rows0 + m * C.block_m, L::kRowBytes, sm.do_full(sd));
      write.advance();
    }
    write.drain();
  }
};

// ==================================== dQ WRITER ===================================================
// Adds each dQ tile to the global fp32 accumulator with bulk reduces (PTX ISA
// "cp.reduce.async.bulk"): one per tile, or (kDqParts = 2, d256) one per warpgroup's half, part 0
// then part 1, through one half-size staging buffer. The MMA threads' generic stores reach the
// async proxy through their fence.proxy.async.shared::cta before they arrive on dq_full[part]; this
// thread's wait on dq_full[part] acquires them. Once the add has read part h, the buffer is free
// for the next part in the order: dq_empty[(h + 1) % kDqParts] (warpgroup 1 after part 0,
// warpgroup 0 after part 1; with one part, both warpgroups wait dq_empty[0]).
template <BwdConfig C>
struct DqWriter {
  using L = BwdLayout<C>;
  const BwdParams& p;
  const BwdSmem<C>& sm;
  const KeyBlockOf<C>& kb;

  __device__ __forceinline__ void run() {
    RingState<1> full = RingState<1>::consumer_start();
    const int64_t tiles0 = dq_tiles0<C>(p, kb);
    int m = kb.m_first;
    for (int left = steps_total<C>(kb); left > 0; --left, m = next_m(m, p)) {
      FLASHPTX_MBAR_WAIT(sm.dq_full(0), full.phase, "fa3 bwd dq writer: dq_full");
      uint32_t* sem = p.dq_sem + tiles0 + m;
      if (p.deterministic) {
        // This tile's writers add in a declared order: key blocks ascending, in the order of their
        // visits (rotated walk), or (causal) from the last key block that reaches the tile
        // downwards. The turn is held across both parts.
        int lock;
        if constexpr (C.local)  // key blocks ascending from the tile's first writer (src/protocol/bwd_window.h)
          lock = writer_order::lock_dense(kb.n_block -
                                          bwd_window::window_first_writer(m, C.block_m, L::kBlockN, kb.win_lo));
        else lock = p.causal ? writer_order::lock_causal_spt(
                                        kb.n_block, causal_n_blocks(m, C.block_m, L::kBlockN, len_q_of<C>(p, kb),
                                                                    len_k_of<C>(p, kb)))
                         : p.dq_rotated ? writer_order::lock_dense_rotated(kb.n_block, m, p.n_blocks)
                                        : writer_order::lock_dense(kb.n_block);
        wait_for_turn(sem, static_cast<uint32_t>(lock), "fa3 bwd dq writer: dq_sem");
        ptx::fence_proxy_async_global();  // the acquire orders the bulk adds below after the earlier writers'
      }
#pragma unroll
      for (int h = 0; h < L::kDqParts; ++h) {
        if (h > 0) FLASHPTX_MBAR_WAIT(sm.dq_full(h), full.phase, "fa3 bwd dq writer: dq_full");
        ptx::cp_reduce_async_bulk_add_f32(p.dq_accum + (tiles0 + m) * (C.block_m * C.head_dim) + h * (L::kDqBytes / 4),
                                          sm.dq(), L::kDqBytes);
        ptx::cp_async_bulk_commit_group();
        ptx::cp_async_bulk_wait_group_read<0>();  // the part has been read: the buffer is free
        ptx::mbarrier_arrive(sm.dq_empty((h + 1) % L::kDqParts));
      }
      if (p.deterministic) {
        ptx::cp_async_bulk_wait_group<0>();  // the adds are complete in global memory
        ptx::fence_proxy_async_global();
        ptx::red_release_gpu_add_u32(sem, 1u);  // the next writer's turn
      }
      full.advance();
    }
    ptx::cp_async_bulk_wait_group<0>();
  }
};

// ==================================== MMA WARPGROUP ===============================================
template <BwdConfig C>
struct Mma {
  using L = BwdLayout<C>;
  static constexpr int kD = C.head_dim, kBm = C.block_m, kBn = L::kBlockN, kDqN = L::kDqN;
  static constexpr int kSN = L::kSN, kDkvN = L::kDkvN;

  const BwdParams& p;
  const BwdSmem<C>& sm;
  const KeyBlockOf<C>& kb;
  const int g;       // 0 or 1
  const int t;       // thread in the warpgroup
  const int lane, q4, r0;
  const int seqlen_k, diag;
  const bool causal;
  const float scale_log2;
  const uint64_t desc_k, desc_v;  // A operands of S^T and dP^T: this warpgroup's keys, K-major

  // Registers.
  float dv[kDkvN / 2], dk[kDkvN / 2];  // across the loop
  float s[kSN / 2], dp[kSN / 2];       // S^T then P^T; dP^T then dS^T (fp32)
  uint32_t pfrag[kSN / 16][4];         // P^T, 16-bit: the A fragment of dV (kSplitKeys) or the bytes stored
  uint32_t dsfrag[kSN / 16][4];        // dS^T, 16-bit: the A fragment of dK (kSplitKeys) and the bytes stored
  float dq[kDqN / 2];                  // this warpgroup's part of dQ
  QdoReadRing<C> ring{sm};
  // The dQ staging buffer: free at the start for the warpgroup that stages the first part; with
  // two parts, warpgroup 1 first waits for the writer to have read warpgroup 0's part.
  RingState<1> dq_buf;
  uint32_t ds_buf = 0;

  __device__ __forceinline__ Mma(const BwdParams& p_, const BwdSmem<C>& sm_, const KeyBlockOf<C>& kb_, int g_)
      : p(p_), sm(sm_), kb(kb_), g(g_), t(threadIdx.x % 128), lane(threadIdx.x % 32), q4(lane % 4),
        r0(16 * ((threadIdx.x % 128) / 32) + lane / 4), seqlen_k(len_k_of<C>(p_, kb_)),
        diag(len_k_of<C>(p_, kb_) - len_q_of<C>(p_, kb_)),
        causal(p_.causal != 0), scale_log2(p_.softmax_scale_log2),
        desc_k(ptx::make_smem_desc(sm_.k() + (L::kSplitHeadDim ? 0 : 64 * g_) * 128, 0, 1024, ptx::Swizzle::k128B)),
        desc_v(ptx::make_smem_desc(sm_.v() + (L::kSplitHeadDim ? 0 : 64 * g_) * 128, 0, 1024, ptx::Swizzle::k128B)),
        dq_buf(L::kDqParts == 1 || g_ == 0 ? RingState<1>::producer_start() : RingState<1>::consumer_start()) {}

  // Where this warpgroup's work sits in the block (functions, not members: as members they change
  // the d64/d128 code generation, whose goldens stay as they were).
  // key0(): its first key (64g for kSplitKeys, 0); col0(): its first query row of S^T (0, or kSN g);
  // dcol0(): its first head-dim column of dK and dV (0, or kDkvN g).
  __device__ __forceinline__ int key0() const { return L::kSplitHeadDim ? 0 : 64 * g; }
  __device__ __forceinline__ int col0() const { return L::kSplitHeadDim ? kSN * g : 0; }
  __device__ __forceinline__ int dcol0() const { return L::kSplitHeadDim ? kDkvN * g : 0; }

  // ---- the GEMMs -------------------------------------------------------------------------------
  // acc (64 keys x kSN) = A (this warpgroup's keys, K-major) x B^T (kSN rows from b_tile, K-major),
  // over the head dim: 4 k16 steps per 128-byte chunk (+32 B each), chunks kBn*128 (A) and
  // kBm*128 (B) apart. S^T (A = K, B = Q) and dP^T (A = V, B = dO). kSplitHeadDim: b_tile starts
  // at row col0() (32 rows of 128 B: a multiple of the 1024-byte swizzle atom).
  __device__ __forceinline__ void issue_keys_x_rows(float (&acc)[kSN / 2], uint64_t desc_a_base, uint32_t b_tile) {
    const uint64_t desc_a = opaque(desc_a_base);
    const uint64_t desc_b = opaque(ptx::make_smem_desc(b_tile + col0() * 128, 0, 1024, ptx::Swizzle::k128B));
    ptx::wgmma_fence_operand(acc);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kD / 16; ++k)
      mma_ss<kSN, 0, 0, C.bf16>(acc, ptx::smem_desc_advance(desc_a, (k / 4) * kBn * 128 + (k % 4) * 32),
                                ptx::smem_desc_advance(desc_b, (k / 4) * kBm * 128 + (k % 4) * 32), k > 0 ? 1u : 0u);
    ptx::wgmma_commit_group();
    ptx::wgmma_fence_operand(acc);
  }
  // kSplitKeys: acc (64 keys x d) += frag (64 keys x block_m, registers) x B (block_m rows x d,
  // MN-major: d contiguous; LBO = kBm*128 between 64-column chunks, SBO = 1024, +2048 B per k16 of
  // rows). dV (frag = P^T, B = dO) and dK (frag = dS^T, B = Q).
  __device__ __forceinline__ void issue_rows_to_keys(float (&acc)[kDkvN / 2], const uint32_t (&frag)[kSN / 16][4],
                                                     uint32_t b_tile) {
    const uint64_t desc_b = opaque(ptx::make_smem_desc(b_tile, kBm * 128, 1024, ptx::Swizzle::k128B));
    ptx::wgmma_fence_operand(acc);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kBm / 16; ++k)
      mma_rs_transb<kDkvN, C.bf16>(acc, frag[k], ptx::smem_desc_advance(desc_b, k * 2048), 1u);
    ptx::wgmma_commit_group();
    ptx::wgmma_fence_operand(acc);
  }
  // kSplitHeadDim: acc (64 keys x kDkvN columns from dcol0()) += A (64 keys x block_m, shared memory
  // [keys][block_m], K-major: +32 B per k16) x B (block_m rows x kDkvN columns from dcol0(), MN-major
  // as above). dV (A = P^T, B = dO) and dK (A = dS^T, B = Q).
  __device__ __forceinline__ void issue_rows_to_cols(float (&acc)[kDkvN / 2], uint32_t a_tile, uint32_t b_tile) {
    const uint64_t desc_a = opaque(ptx::make_smem_desc(a_tile, 0, 1024, ptx::Swizzle::k128B));
    const uint64_t desc_b =
        opaque(ptx::make_smem_desc(b_tile + (dcol0() / 64) * kBm * 128, kBm * 128, 1024, ptx::Swizzle::k128B));
    ptx::wgmma_fence_operand(acc);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kBm / 16; ++k)
      mma_ss<kDkvN, 0, 1, C.bf16>(acc, ptx::smem_desc_advance(desc_a, k * 32), ptx::smem_desc_advance(desc_b, k * 2048),
                                  1u);
    ptx::wgmma_commit_group();
    ptx::wgmma_fence_operand(acc);
  }
  // dQ (64 x kDqN) = dS (A: 64 query rows x kBn keys, MN-major: dS^T rows of 64 query rows) x
  // K (B: kBn keys x kDqN columns, MN-major), over the keys: kBn/16 k16 steps of +2048 B in both.
  __device__ __forceinline__ void issue_dq() {
    const uint32_t a_tile = sm.ds(ds_buf) + (L::kDqSplitRows ? g * kBn * 128 : 0);
    const uint32_t b_tile = sm.k() + (L::kDqSplitRows ? 0 : ((kD / 2) * g / 64) * kBn * 128);
    const uint64_t desc_a = opaque(ptx::make_smem_desc(a_tile, kBn * 128, 1024, ptx::Swizzle::k128B));
    const uint64_t desc_b = opaque(ptx::make_smem_desc(b_tile, kBn * 128, 1024, ptx::Swizzle::k128B));
    ptx::wgmma_fence_operand(dq);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kBn / 16; ++k)
      mma_ss<kDqN, 1, 1, C.bf16>(dq, ptx::smem_desc_advance(desc_a, k * 2048), ptx::smem_desc_advance(desc_b, k * 2048),
                                 k > 0 ? 1u : 0u);
    ptx::wgmma_commit_group();
    ptx::wgmma_fence_operand(dq);
  }

  // ---- elementwise ----------------------------------------------------------------------------
  // Accumulator element x = 4i + e of S^T / dP^T: key key0() + r0 + 8(e>>1), query row
  // col0() + 8i + 2q4 + (e&1) of the block.
  // P^T = exp2(S^T scale log2e - LSE2(row)); 0 where masked (keys past seqlen_k; causal: key >
  // row + diag). LSE2 is +inf on padded rows, so they give 0 without a mask.
  template <bool kMasked>
  __device__ __forceinline__ void probabilities(int m, uint32_t stage) {
    const int key = kb.n_block * kBn + key0() + r0;
    const int row0 = m * kBm + col0() + 2 * q4;
#pragma unroll
    for (int i = 0; i < kSN / 8; ++i) {
      const float2 lse = ptx::ld_shared_v2_f32(sm.lse(stage) + (col0() + 8 * i + 2 * q4) * 4);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float& x = s[4 * i + e];
        x = ptx::ex2_approx_ftz_f32(fmaf(x, scale_log2, -((e & 1) ? lse.y : lse.x)));
        if constexpr (kMasked) {
          const int kk = key + 8 * (e >> 1), row = row0 + 8 * i + (e & 1);
          if (kk >= seqlen_k || (causal && kk > row + diag)) x = 0.f;
        }
      }
    }
  }
  // C.local: the window's mask and the softcap. kMasked: 0 outside the window (win_lo <= key - row
  // <= win_hi) and past seqlen_k. kCapped (softcap c): S^T scale -> t = tanh(S^T scale / c) on the
  // MUFU (tanh.approx.f32), and P^T = exp2(t c log2e - LSE2) (scale_log2 = c log2e: the forward's
  // encoding, so LSE2 is of the capped scores). Neither t nor S^T is kept: score_gradients recovers
  // t from P^T.
  template <bool kMasked, bool kCapped>
  __device__ __forceinline__ void probabilities_local(int m, uint32_t stage) {
    const int key = kb.n_block * kBn + key0() + r0;
    const int row0 = m * kBm + col0() + 2 * q4;
#pragma unroll
    for (int i = 0; i < kSN / 8; ++i) {
      const float2 lse = ptx::ld_shared_v2_f32(sm.lse(stage) + (col0() + 8 * i + 2 * q4) * 4);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float& x = s[4 * i + e];
        if constexpr (kCapped) x = ptx::tanh_approx_f32(x * kb.softcap_prescale);
        x = ptx::ex2_approx_ftz_f32(fmaf(x, scale_log2, -((e & 1) ? lse.y : lse.x)));
        if constexpr (kMasked) {
          const int kk = key + 8 * (e >> 1), row = row0 + 8 * i + (e & 1);
          if (kk >= seqlen_k || !bwd_window::window_sees(row, kk, kb.win_lo, kb.win_hi)) x = 0.f;
        }
      }
    }
  }
  // C.local, kCapped: dS^T = P^T (dP^T - delta) (1 - t^2), the softcap's derivative
  // d(c tanh(u / c))/du = 1 - t^2 (the scale is applied to dK and dQ as without a softcap). t is
  // recovered from P^T = exp2(c log2e t - LSE2): t = (lg2(P^T) + LSE2) ln2 / c, clamped to [-1, 1].
  // Precision: lg2.approx.ftz.f32 has an absolute error of 2^-22 for inputs in (0.5, 2) and a
  // relative error of 2^-22 elsewhere (PTX ISA "lg2"), so |lg2(P) - log2(P)| <= 2^-22 max(1,
  // |log2 P|); with the roundings of the fma that formed P's exponent and of the add here, t is off
  // by a few ulp of max(|LSE2|, c log2e) times ln2 / c: about 2^-20 for |LSE2| < 64 and c >= 1,
  // far below the 16-bit rounding of dS^T (2^-8 relative), and 1 - t^2 by twice that. P^T = 0
  // (masked, underflowed, or a padded row's LSE2 = +inf: lg2(0) + LSE2 is -inf or NaN, clamped to
  // -1 by max.f32, which returns the non-NaN operand) gives dS^T = 0. The stage: LSE2 is the Q
  // ring's (sq), delta the dO ring's (sd).
  template <bool kCapped>
  __device__ __forceinline__ void score_gradients_local(uint32_t sq, uint32_t sd) {
#pragma unroll
    for (int i = 0; i < kSN / 8; ++i) {
      const float2 dl = ptx::ld_shared_v2_f32(sm.delta(sd) + (col0() + 8 * i + 2 * q4) * 4);
      float2 lse = make_float2(0.f, 0.f);
      if constexpr (kCapped) lse = ptx::ld_shared_v2_f32(sm.lse(sq) + (col0() + 8 * i + 2 * q4) * 4);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float pv = s[4 * i + e];
        float g = pv * (dp[4 * i + e] - ((e & 1) ? dl.y : dl.x));
        if constexpr (kCapped) {
          const float tt = fminf(fmaxf((ptx::lg2_approx_ftz_f32(pv) + ((e & 1) ? lse.y : lse.x)) * kb.softcap_ln2_inv,
                                       -1.f), 1.f);
          g *= fmaf(-tt, tt, 1.f);
        }
        dp[4 * i + e] = g;
      }
    }
  }
  // dS^T = P^T (dP^T - delta(row)), in place in dp[]. `stage`: the dO ring's.
  __device__ __forceinline__ void score_gradients(uint32_t stage) {
#pragma unroll
    for (int i = 0; i < kSN / 8; ++i) {
      const float2 dl = ptx::ld_shared_v2_f32(sm.delta(stage) + (col0() + 8 * i + 2 * q4) * 4);
#pragma unroll
      for (int e = 0; e < 4; ++e) dp[4 * i + e] = s[4 * i + e] * (dp[4 * i + e] - ((e & 1) ? dl.y : dl.x));
    }
  }
  // A 16-bit fragment of 64 keys x kSN query rows (dS^T or P^T) -> the tile [kBn keys][block_m] in
  // shared memory, 128B swizzle, 64-row chunks of block_m: the MN-major A operand of dQ and (d256)
  // the K-major A operand of dV and dK. frag[k][h + 2c] holds keys key0() + r0 + 8h, query rows
  // col0() + 16k + 8c + 2q4 (+1).
  __device__ __forceinline__ void store_keys_x_rows(uint32_t tile, const uint32_t (&frag)[kSN / 16][4]) {
#pragma unroll
    for (int k = 0; k < kSN / 16; ++k)
#pragma unroll
      for (int c = 0; c < 2; ++c)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          ptx::st_shared_b32(tile + swizzled_pair_offset(kBn, key0() + r0 + 8 * h, col0() + 16 * k + 8 * c + 2 * q4),
                             frag[k][h + 2 * c]);
  }
  // This warpgroup's dQ registers -> the staging tile, in fragment order (fa3_bwd_config.h
  // dq_accum_coord): 16-byte stores, consecutive threads consecutive addresses. With two parts the
  // buffer holds this warpgroup's range of the tile only.
  __device__ __forceinline__ void hand_dq_to_writer() {
    const uint32_t part = L::kDqParts == 1 ? 0u : static_cast<uint32_t>(g);
    const int first = L::kDqParts == 1 ? g * (kDqN / 8) : 0;  // first float4 column block in the buffer
    FLASHPTX_MBAR_WAIT(sm.dq_empty(part), dq_buf.phase, "fa3 bwd mma: dq_empty");
#pragma unroll
    for (int j = 0; j < kDqN / 8; ++j)
      ptx::st_shared_v4_f32(sm.dq() + ((first + j) * 128 + t) * 16, dq[4 * j], dq[4 * j + 1], dq[4 * j + 2],
                            dq[4 * j + 3]);
    ptx::fence_proxy_async_shared_cta();  // the bulk add reads through the async proxy
    ptx::mbarrier_arrive(sm.dq_full(part));
    dq_buf.advance();
  }
  // ---- the start of every step: S^T and dP^T in flight together, then P^T and dS^T ------------
  // Q stage sq (its LSE2 with it), dO stage sd (its delta with it; the same stage and phase as Q's
  // for the one-ring layouts): the ring's current stages. Leaves P^T in pfrag and dS^T in dsfrag
  // (16-bit A fragments).
  template <bool kMasked>
  __device__ __forceinline__ void scores_to_fragments(int m, uint32_t sq, uint32_t sd) {
    ring.wait_q_full();
    issue_keys_x_rows(s, desc_k, sm.q(sq));    // S^T = K Q^T
    ring.wait_do_full();
    issue_keys_x_rows(dp, desc_v, sm.dO(sd));  // dP^T = V dO^T
    ptx::wgmma_wait_group<1>();                // S^T complete; dP^T may run
    ptx::wgmma_fence_operand(s);
    if constexpr (C.local) {
      if (kb.softcap_prescale != 0.f) probabilities_local<kMasked, true>(m, sq);
      else probabilities_local<kMasked, false>(m, sq);
    } else {
      probabilities<kMasked>(m, sq);
    }
    ptx::wgmma_fence_operand(s);               // P^T computed while dP^T runs
    ptx::wgmma_wait_group<0>();                // dP^T complete
    ptx::wgmma_fence_operand(dp);
    if constexpr (C.local) {
      if (kb.softcap_prescale != 0.f) score_gradients_local<true>(sq, sd);
      else score_gradients_local<false>(sq, sd);
    } else {
      score_gradients(sd);
    }
    to_a_fragments<kSN, C.bf16>(s, pfrag);
    to_a_fragments<kSN, C.bf16>(dp, dsfrag);
  }

  // ---- one step (kSplitKeys): the query block m ------------------------------------------------
  // P^T and dS^T are both computed before dV and dK are issued, so that P^T (fp32) and dP^T never
  // live beside the A fragments of an MMA in flight: at block_m 128 that would not fit in 240
  // registers. The dS^T stores then overlap the dV and dK GEMMs.
  template <bool kMasked>
  __device__ __forceinline__ void step_split_keys(int m) {
    static_assert(L::kOneRing, "kSplitKeys: Q and dO share the stage");
    const uint32_t st = ring.q_stage();
    scores_to_fragments<kMasked>(m, st, st);
    issue_rows_to_keys(dv, pfrag, sm.dO(st));  // dV += P^T dO
    issue_rows_to_keys(dk, dsfrag, sm.q(st));  // dK += dS^T Q
    store_keys_x_rows(sm.ds(ds_buf), dsfrag);  // while dV and dK run
    // Generic stores -> async-proxy reads by the other warpgroup's dQ wgmma: fence in every writer
    // before the barrier that hands the tile over (PTX ISA "Memory Consistency Model: proxies").
    ptx::fence_proxy_async_shared_cta();
    ptx::bar_sync(kBarDsReady, 256);           // both halves of dS^T stored and fenced
    issue_dq();                                // dQ = dS K
    ptx::wgmma_wait_group<0>();                // dV, dK, dQ complete: Q, dO, LSE2, delta no longer read
    ptx::wgmma_fence_operand(dv);
    ptx::wgmma_fence_operand(dk);
    ring.release(lane);
    hand_dq_to_writer();
    ds_buf ^= 1u;
  }

  // ---- one step (kSplitHeadDim, d256): the query block m ---------------------------------------
  // Each warpgroup computes S^T and dP^T for its 32 query rows, then writes P^T and dS^T (16-bit)
  // to shared memory; after the barrier that certifies both halves are there (stored and fenced),
  // it computes its 128 columns of dV, dK and dQ from the whole 64 x 64 P^T / dS^T.
  // The P^T and dS^T buffers alternate by step parity: a warpgroup writes buffer b again two steps
  // later, after the barrier of the step in between, which the other warpgroup reaches only after
  // the wgmma wait that retired its reads of buffer b.
  template <bool kMasked>
  __device__ __forceinline__ void step_split_head_dim(int m) {
    const uint32_t sq = ring.q_stage(), sd = ring.do_stage();
    scores_to_fragments<kMasked>(m, sq, sd);  // this warpgroup's 32 query rows
    store_keys_x_rows(sm.pt(ds_buf), pfrag);
    store_keys_x_rows(sm.ds(ds_buf), dsfrag);
    // Generic stores -> async-proxy reads by both warpgroups' wgmma: fence in every writer before
    // the barrier that hands the tiles over (PTX ISA "Memory Consistency Model: proxies").
    ptx::fence_proxy_async_shared_cta();
    ptx::bar_sync(kBarDsReady, 256);                       // both halves of P^T and dS^T stored and fenced
    issue_rows_to_cols(dv, sm.pt(ds_buf), sm.dO(sd));      // dV += P^T dO (columns dcol0()..)
    issue_rows_to_cols(dk, sm.ds(ds_buf), sm.q(sq));       // dK += dS^T Q
    issue_dq();                                            // dQ = dS K (columns 128g..): reads dS^T and K only
    ptx::wgmma_wait_group<1>();                // dV and dK complete (dQ may run): Q, dO, LSE2, delta no longer read
    ptx::wgmma_fence_operand(dv);
    ptx::wgmma_fence_operand(dk);
    ring.release(lane);                        // the 1-stage dO ring refills while dQ runs
    ptx::wgmma_wait_group<0>();                // dQ complete
    hand_dq_to_writer();
    ds_buf ^= 1u;
  }

  template <bool kMasked>
  __device__ __forceinline__ void step(int m) {
    if constexpr (L::kSplitHeadDim) step_split_head_dim<kMasked>(m);
    else step_split_keys<kMasked>(m);
  }

  // ---- epilogue -------------------------------------------------------------------------------
  // Varlen, the warpgroup that holds the sequence's last keys: its dK and dV rows < len_k from
  // registers (st.global of packed pairs), so that nothing lands on the next sequence's rows,
  // which another CTA owns; and only the columns < C.real_head_dim of dK, < C.real_head_dim_v of
  // dV (a head dim run over zero columns, BwdConfig::real_head_dim), so that nothing lands on the
  // next head's (or, at V's narrower rows, the next row's) first columns.
  __device__ __forceinline__ void store_dkv_tail(const BwdVarlenTable& vt) {
    const int key_base = kb.n_block * kBn + key0() + r0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int key = key_base + 8 * h;
      if (key >= seqlen_k) continue;
      const int64_t row = k_coord<C>(kb, key);
      uint16_t* dk_row = static_cast<uint16_t*>(vt.dk) + row * vt.dk_row_stride + kb.head_kv * vt.dk_head_stride;
      uint16_t* dv_row = static_cast<uint16_t*>(vt.dv) + row * vt.dv_row_stride + kb.head_kv * vt.dv_head_stride;
#pragma unroll
      for (int i = 0; i < kDkvN / 8; ++i) {
        // Columns 8i.. of this warpgroup's: zero past the real ones (kSplitKeys: a compile-time
        // bound; kSplitHeadDim: warpgroup 1's upper columns).
        if constexpr (C.real_head_dim < C.head_dim)
          if (dcol0() + 8 * i >= C.real_head_dim) continue;
        const int col = dcol0() + 8 * i + 2 * q4;
        ptx::st_global_b32(dk_row + col, pack2<C.bf16>(dk[4 * i + 2 * h], dk[4 * i + 2 * h + 1]));
        // dV's columns end at V's head dim (varlen (192, 128): warpgroup 1 stores none).
        if constexpr (C.real_head_dim_v < C.real_head_dim)
          if (dcol0() + 8 * i >= C.real_head_dim_v) continue;
        ptx::st_global_b32(dv_row + col, pack2<C.bf16>(dv[4 * i + 2 * h], dv[4 * i + 2 * h + 1]));
      }
    }
  }
  // dK = softmax_scale dS^T Q. Accumulator element x = 4i + e of dK/dV: key key0() + r0 + 8(e>>1),
  // column dcol0() + 8i + 2q4 + (e&1). vt: the varlen sequence table (C.varlen), else nullptr.
  __device__ __forceinline__ void epilogue(const BwdVarlenTable* vt) {
#pragma unroll
    for (int x = 0; x < kDkvN / 2; ++x) dk[x] *= p.softmax_scale;
    if (p.heads_q == p.heads_kv) {
      // Stage in the K and V buffers (every wgmma reading them retired in both warpgroups), then
      // one TMA store per 64-column chunk of this warpgroup's keys and columns; the store clips
      // keys past seqlen_k.
      ptx::bar_sync(kBarKVRetired, 256);
      if constexpr (C.varlen) {
        // A 64-row box that would run past the sequence's last key: stored from registers.
        if (kb.n_block * kBn + key0() + 64 > seqlen_k) {
          store_dkv_tail(*vt);
          return;
        }
      }
#pragma unroll
      for (int i = 0; i < kDkvN / 8; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t off = swizzled_pair_offset(kBn, key0() + r0 + 8 * h, dcol0() + 8 * i + 2 * q4);
          ptx::st_shared_b32(sm.k() + off, pack2<C.bf16>(dk[4 * i + 2 * h], dk[4 * i + 2 * h + 1]));
          ptx::st_shared_b32(sm.v() + off, pack2<C.bf16>(dv[4 * i + 2 * h], dv[4 * i + 2 * h + 1]));
        }
      ptx::fence_proxy_async_shared_cta();
      ptx::bar_sync(kBarStagedWG0 + g, 128);
      if (t == 0) {
        for (int c = dcol0() / 64; c < (dcol0() + kDkvN) / 64; ++c) {
          const uint32_t off = c * kBn * 128 + key0() * 128;
          ptx::cp_async_bulk_tensor_4d_store(&p.tma_dk, sm.k() + off, c * 64, k_coord<C>(kb, kb.n_block * kBn + key0()),
                                             kb.head_kv, kb.batch);
          ptx::cp_async_bulk_tensor_4d_store(&p.tma_dv, sm.v() + off, c * 64, k_coord<C>(kb, kb.n_block * kBn + key0()),
                                             kb.head_kv, kb.batch);
        }
        ptx::cp_async_bulk_commit_group();
        ptx::cp_async_bulk_wait_group_read<0>();  // the source is this CTA's shared memory
      }
      return;
    }
    // GQA: fp32 adds into the group's accumulators. Deterministic mode: the query heads of a group
    // add in ascending order (writer_order::lock_gqa), one CTA at a time per key block.
    const int group = p.heads_q / p.heads_kv;
    // The key block's accumulator rows and semaphore: [batch, heads_kv, n_blocks], or (varlen)
    // [heads_kv, n_prefix[num_seqs]] at the sequence's n_base.
    int64_t blk;
    if constexpr (C.varlen) blk = static_cast<int64_t>(kb.head_kv) * p.n_blocks + kb.n_base + kb.n_block;
    else blk = (static_cast<int64_t>(kb.batch) * p.heads_kv + kb.head_kv) * p.n_blocks + kb.n_block;
    uint32_t* sem = p.dkv_sem + blk;
    if (p.deterministic) {
      if (threadIdx.x == 128)
        wait_for_turn(sem, static_cast<uint32_t>(writer_order::lock_gqa(kb.head, group)), "fa3 bwd epilogue: dkv_sem");
      ptx::bar_sync(kBarKVRetired, 256);  // the turn, observed by thread 128, for both warpgroups
    }
    float* dk_rows = p.dk_accum + blk * kBn * kD;
    float* dv_rows = p.dv_accum + blk * kBn * kD;
#pragma unroll
    for (int i = 0; i < kDkvN / 8; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t at = static_cast<int64_t>(key0() + r0 + 8 * (e >> 1)) * kD + dcol0() + 8 * i + 2 * q4 + (e & 1);
        ptx::red_global_add_f32(dk_rows + at, dk[4 * i + e]);
        ptx::red_global_add_f32(dv_rows + at, dv[4 * i + e]);
      }
    if (p.deterministic) {
      ptx::fence_acq_rel_gpu();               // this thread's adds before the release below
      ptx::bar_sync(kBarKVRetired, 256);      // every thread's adds
      if (threadIdx.x == 128) ptx::red_release_gpu_add_u32(sem, 1u);
    }
  }

  __device__ __forceinline__ void run(const BwdVarlenTable* vt) {
#pragma unroll
    for (int x = 0; x < kDkvN / 2; ++x) dv[x] = dk[x] = 0.f;
    // K and V have landed (also when there is no step: the epilogue reuses their buffers).
    FLASHPTX_MBAR_WAIT(sm.kv_full(), 0, "fa3 bwd mma: kv_full");
    // The steps in unwrapped coordinates m_first, m_first + 1, ...: a step needs its query block
    // only for a causal mask's rows, and a walk that wraps (rotated) has no causal mask, so these
    // equal the query block wherever it is used. (Wrapping here too cost the d64 kernel a spill in
    // this loop: the two bounds below are the only loop state, as before the rotation.)
    int m = kb.m_first;
    const int m_unmasked = kb.m_first + kb.steps_masked, m_end = m_unmasked + kb.steps_unmasked;
    for (; m < m_unmasked; ++m) step<true>(m);
    for (; m < m_end; ++m) step<false>(m);
    if constexpr (C.local) {
      // The window's masked tail (src/protocol/bwd_window.h window_walk).
      const int m_tail_end = m_end + kb.steps_tail;
      for (; m < m_tail_end; ++m) step<true>(m);
    }
    epilogue(vt);
  }
};

// ==================================== THE KERNEL ==================================================
// vt: the sequence table of a varlen kernel (C.varlen), in its parameter block; nullptr otherwise.
// lc: the window and softcap of a local kernel (C.local), in its parameter block; nullptr otherwise.
template <BwdConfig C>
__device__ __forceinline__ void bwd_kernel_body(const BwdParams& p, const BwdVarlenTable* vt = nullptr,
                                                const BwdLocal* lc = nullptr) {
  using L = BwdLayout<C>;
  const BwdSmem<C> sm{smem_base_1024()};
  const KeyBlockOf<C> kb = key_block<C>(p, vt, lc);
  const int warpgroup = threadIdx.x / 128;

  // Barrier initialisation (init_barriers, src/sm90/common.cuh): every role and the TMA unit see
  // initialised barriers before first use.
  // do_full has do_stages slots, not stages: with a 1-stage dO ring (d256) do_full(1) is slot
  // kBarDoFull + 1 == kBarQdoEmpty, so initialising it (count 1) after qdo_empty(0) (count 8) left
  // qdo_empty(0) completing a phase on every one of the 8 arrivals of a step (8 phases, even: the
  // parity the producer waits for never shows, and every second step it hung on qdo_empty(0)).
  init_barriers([&] {
    ptx::mbarrier_init(sm.kv_full(), L::kFullArrivals);
    for (uint32_t s = 0; s < C.stages; ++s) {
      ptx::mbarrier_init(sm.q_full(s), L::kFullArrivals);
      if (s < C.do_stages) ptx::mbarrier_init(sm.do_full(s), L::kFullArrivals);
      ptx::mbarrier_init(sm.qdo_empty(s), L::kEmptyArrivals);
    }
    for (uint32_t h = 0; h < L::kDqParts; ++h) {
      ptx::mbarrier_init(sm.dq_full(h), L::kDqFullArrivals);
      ptx::mbarrier_init(sm.dq_empty(h), L::kDqEmptyArrivals);
    }
    if constexpr (!L::kOneRing)
      for (uint32_t s = 0; s < C.do_stages; ++s) ptx::mbarrier_init(sm.do_empty(s), L::kEmptyArrivals);
  });

  if (warpgroup == 0) {
    ptx::setmaxnreg_dec<L::kProducerRegs>();
    if (threadIdx.x == 0) Producer<C>{p, sm, kb}.run();
    else if (threadIdx.x == 32) DqWriter<C>{p, sm, kb}.run();
    return;
  }
  ptx::setmaxnreg_inc<L::kMmaRegs>();
  Mma<C>(p, sm, kb, warpgroup - 1).run(vt);
}

}  // namespace flashptx::fa3::bwd
