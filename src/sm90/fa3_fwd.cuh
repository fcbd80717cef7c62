// FlashAttention-3 forward on Hopper (sm_90a), by hand.
// Protocols: docs/PROTOCOLS.md ("The K/V rings", "Pingpong", "The two-stage overlap");
// the FA3 paper (Shah et al., arXiv 2407.08608, sections 3.1-3.2); PTX ISA sections cited inline.
//
// A work tile is block_m query rows of one (batch, head) against all admissible K/V blocks of
// block_n keys, visited right to left (the masked blocks first). A persistent CTA loops over tiles
// blockIdx.x, blockIdx.x + gridDim.x, ...; ring states, the Q phase and the pingpong token carry
// across tiles, never reset per tile.
//
// Variable-length batches (C.varlen, src/sm90/fa3_fwd_config.h "variable-length batches"): the
// tensors are packed [total, heads, d] (tensor maps of batch extent 1), a tile is one query block of
// one head of one sequence, found in the parameter block's sequence table, one tile per CTA. The
// only differences from the fixed-length kernel, each under `if constexpr (C.varlen)`:
//   - coordinates: the sequence's first packed row is added to every Q, K, V and O row coordinate;
//   - lengths: the key bound of the mask, the causal diagonal and the row guards are the
//     sequence's, per tile. A K/V block that runs past the sequence's last key reads the next
//     sequence's keys (or TMA's zero fill past the tensor): finite values the mask removes, as it
//     removes the ragged tail of a fixed-length K. A Q block past the sequence's end likewise reads
//     rows whose outputs are never stored;
//   - the O store: a TMA store writes its whole 64-row box (clipped only at the tensor's end, not at
//     the sequence's), which would overwrite the next sequence's rows, owned by another CTA. So
//     only a consumer warpgroup whose 64 rows all lie inside the sequence stores by TMA; the one
//     that holds the sequence's last rows stores its rows < len_q from registers (st.global), and
//     LSE ([heads_q, total_q]) is written for rows < len_q only.
// Roles:
//
//   warpgroup 0   PRODUCER   setmaxnreg.dec; one elected thread issues every TMA load:
//                            Q once per tile (q_full), then K and V block by block into the rings;
//                            in the kernels with a tile feed it alone walks the schedule and
//                            hands each tile to the consumers (tile_full).
//   warpgroup 1.. CONSUMERS  setmaxnreg.inc; consumer g owns query rows [64g, 64g+64) of the tile:
//                            S = Q K^T (wgmma SS), online softmax in base 2 (FP32 row max and sum),
//                            O += P V (wgmma RS: P straight from registers), epilogue through
//                            shared memory and a TMA store, LSE in fp32 natural log.
//
// Barriers (shared memory; slots and arrival counts in FwdLayout, src/sm90/fa3_fwd_config.h):
//   q_full[s]         producer arrive.expect_tx(Q bytes) + TMA complete_tx
//   q_empty[s]        Q slot s is free for a later tile's Q (see QRelease below); one slot, or two
//                     (FwdConfig::q_slots, d128) so that the next tile's Q loads before this tile's
//                     last QK
//   k_full[s]/v_full[s]    producer arrive.expect_tx(stage bytes) + TMA complete_tx
//   k_empty[s]/v_empty[s]  one arrive per consumer warp, after the wgmma wait that retires the
//                          last MMA reading the stage
//   tile_full[t]      the tile feed (persistent and paired kernels of two consumers, TileFeed):
//                     the producer's arrive after it stored tile slot t
//   tile_empty[t]     one arrive per consumer warp, after the whole warp read tile slot t
// Named barriers (src/protocol/pingpong.h):
//   2 + g             the pingpong token ring, 256 threads per generation (consumer g syncs, its
//                     predecessor arrives); primed once per CTA by consumer 0 (bootstrap half-credit)
//   8 + g             consumer g's own 128-thread epilogue barrier (O tile written -> TMA store)
//
// Stages and phases: K and V have separate full/empty rings on one stage coordinate
// (flashptx::RingState). The producer starts one generation ahead (phase 1 on empty). Each consumer
// keeps one read state for K and one for V: V lags K by one block because steady step j issues
// QK(j) then PV(j-1). wgmma group ages in steady step j:
//   commit QK(j) (older), commit PV(j-1) (newer)
//   wait_group(1)  -> QK(j) complete: S readable, K stage released
//   softmax(j) on S while PV(j-1) may still run
//   wait_group(0)  -> PV(j-1) complete: V stage released, O rescaled, P overwritten with P_j
#pragma once
#include <cuda.h>
#include <cstdint>
#include <type_traits>

#include "src/protocol/pingpong.h"
#include "src/protocol/ring.h"
#include "src/protocol/tile_scheduler.h"
#include "src/protocol/trace.h"
#include "ptx/barrier.cuh"
#include "ptx/cvt.cuh"
#include "ptx/fence.cuh"
#include "ptx/ldst.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tanh.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "src/sm90/common.cuh"
#include "src/sm90/fa3_fwd_config.h"

#if defined(__CUDA_ARCH__) && !FLASHPTX_HAS_SM90A
#error "src/sm90/fa3_fwd.cuh is Hopper code: compile it with -gencode arch=compute_90a,code=sm_90a"
#endif

namespace flashptx::fa3 {

// ---- tracing: stamps live inside the protocol helpers; release builds compile them out ---------
struct Tracer {
  uint64_t* lane = nullptr;  // this warpgroup's trace lane (traced builds, elected thread only)
  __device__ __forceinline__ void operator()(uint32_t event, uint32_t arg) const {
    FLASHPTX_STAMP(lane, event, arg);
  }
};

// ---- shared memory, carved from FwdLayout ----------------------------------------------------
template <FwdConfig C>
struct FwdSmem {
  using L = FwdLayout<C>;
  uint32_t base;  // 1024-aligned shared::cta address
  __device__ __forceinline__ uint32_t q(uint32_t slot = 0) const { return base + L::kOffQ + slot * L::kQBytes; }
  __device__ __forceinline__ uint32_t k(uint32_t s) const { return base + L::kOffK + s * L::kKBytes; }
  __device__ __forceinline__ uint32_t v(uint32_t s) const { return base + L::kOffV + s * L::kVBytes; }
  __device__ __forceinline__ uint32_t o() const { return L::kOBytes > 0 ? base + L::kOffO : base + L::kOffQ; }
  __device__ __forceinline__ uint32_t bar(uint32_t slot) const { return base + L::kOffBar + 8u * slot; }
  __device__ __forceinline__ uint32_t q_full(uint32_t slot = 0) const { return bar(L::kBarQFull + slot * L::kBarQStride); }
  __device__ __forceinline__ uint32_t q_empty(uint32_t slot = 0) const { return bar(L::kBarQEmpty + slot * L::kBarQStride); }
  __device__ __forceinline__ uint32_t k_full(uint32_t s) const { return bar(L::kBarKFull + s); }
  __device__ __forceinline__ uint32_t k_empty(uint32_t s) const { return bar(L::kBarKEmpty + s); }
  __device__ __forceinline__ uint32_t v_full(uint32_t s) const { return bar(L::kBarVFull + s); }
  __device__ __forceinline__ uint32_t v_empty(uint32_t s) const { return bar(L::kBarVEmpty + s); }
  __device__ __forceinline__ uint32_t tile_full(uint32_t s) const { return bar(L::kBarTileFull + s); }
  __device__ __forceinline__ uint32_t tile_empty(uint32_t s) const { return bar(L::kBarTileEmpty + s); }
  __device__ __forceinline__ uint32_t tile_slot(uint32_t s) const { return base + L::kOffTile + 16u * s; }
};

// ---- work tiles ----------------------------------------------------------------------------
// src/protocol/tile_scheduler.h is the code the scheduling model drives. Every role walks the
// same tile sequence and derives the same n_max per tile.
struct Tile {
  int index, m_block, head, head_kv, batch;
  int n_max;  // admissible K/V blocks [0, n_max), visited right to left
  // C.window only: the blocks are [n_min, n_max) (window_blocks), set by tile_of / varlen_tile_at
  // and read by no other kernel. (No default member initializer: one moved instructions of the
  // d64_m128 kernels, whose listings must not change.)
  int n_min;
  // Varlen only: the sequence's first packed row of Q and of K/V, and its lengths.
  int q_row0 = 0, k_row0 = 0, len_q = 0, len_k = 0;
};

// The K/V blocks of a tile the roles walk: n_max (blocks [0, n_max)), or with a window n_max - n_min.
template <FwdConfig C>
__device__ __forceinline__ int walk_blocks(const Tile& t) {
  if constexpr (C.window) return t.n_max - t.n_min;
  return t.n_max;
}
// Query blocks in descending order (longest first) where a tile's block count grows with m_block:
// under a causal mask, and (C.window) under a window with a right edge, whose tiles grow until the
// left edge leaves key 0 and then stay equal (a window bounded on the left only shrinks with m: in
// ascending order). One tile per CTA in that order: the hardware's dispatch is then longest-first.
template <FwdConfig C>
__device__ __forceinline__ bool m_descending(const FwdParams& p) {
  if constexpr (C.window) return p.window_right >= 0;
  return p.causal != 0;
}
// Varlen: the tile's sequence from the table the host built and validated (no device data).
template <FwdConfig C>
__device__ __forceinline__ Tile varlen_tile_at(const FwdParams& p, const FwdVarlenTable& vt, int index) {
  const TileCoord tc = varlen_tile_from_linear(vt.tile_prefix, vt.num_seqs, p.heads_q, index, m_descending<C>(p));
  const VarlenSeq sq = vt.seq[tc.batch];
  Tile t;
  t.index = index;
  t.m_block = tc.m_block;
  t.head = tc.head;
  t.batch = 0;  // the packed tensors' one batch coordinate
  t.head_kv = tc.head / (p.heads_q / p.heads_kv);
  // The table is the host's, built from prefix sums it validated; clamped anyway (two uniform
  // operations per role), so that no table can make this kernel write outside rows [0, total_q) of
  // O and LSE: every write below is guarded by len_q or lies inside a full warpgroup's rows.
  t.q_row0 = max(sq.q_start, 0);
  t.k_row0 = sq.k_start;
  t.len_q = max(0, min(sq.len_q, vt.total_q - t.q_row0));
  t.len_k = sq.len_k;
  if constexpr (C.window) {
    const BlockRange r =
        window_blocks(tc.m_block, FwdLayout<C>::kBlockM, C.block_n, t.len_q, t.len_k, p.window_left, p.window_right);
    t.n_min = r.n_min;
    t.n_max = r.n_max;
    return t;
  }
  t.n_max = p.causal ? causal_n_blocks(tc.m_block, FwdLayout<C>::kBlockM, C.block_n, t.len_q, t.len_k)
                     : n_blocks(C.block_n, t.len_k);
  return t;
}

template <FwdConfig C>
__device__ __forceinline__ Tile tile_of(const FwdParams& p, const TileCoord& tc, int index) {
  Tile t;
  t.index = index;
  t.m_block = tc.m_block;
  t.head = tc.head;
  t.batch = tc.batch;
  t.head_kv = tc.head / (p.heads_q / p.heads_kv);
  if constexpr (C.window) {
    const BlockRange r = window_blocks(tc.m_block, FwdLayout<C>::kBlockM, C.block_n, p.seqlen_q, p.seqlen_k,
                                       p.window_left, p.window_right);
    t.n_min = r.n_min;
    t.n_max = r.n_max;
    return t;
  }
  // Causal masks are aligned to the bottom-right: query row r sees key c iff c <= r + (seqlen_k - seqlen_q).
  t.n_max = p.causal ? causal_n_blocks(tc.m_block, FwdLayout<C>::kBlockM, C.block_n, p.seqlen_q, p.seqlen_k)
                     : n_blocks(C.block_n, p.seqlen_k);
  return t;
}
// Row coordinates in the tensor maps: the row in the sequence, plus (varlen) the sequence's first
// packed row.
template <FwdConfig C>
__device__ __forceinline__ int q_coord(const Tile& t, int row) {
  if constexpr (C.varlen) return t.q_row0 + row;
  return row;
}
template <FwdConfig C>
__device__ __forceinline__ int k_coord(const Tile& t, int row) {
  if constexpr (C.varlen) return t.k_row0 + row;
  return row;
}
// This CTA's tiles, walked the same way by every role (so that each derives the same tile, n_max
// and phases). The walk is the kernel's, fixed at compile time (src/sm90/fa3_fwd.cu):
//   one CTA per tile (!C.persistent)         the tile blockIdx.x, in LPT order for causal masks;
//   persistent (C.persistent)                tiles blockIdx.x + k gridDim.x, for masks whose tiles
//                                            all cost the same (the plan's non-causal launches);
//   paired (C.paired)                        the paired static schedule of causal launches
//                                            (tile_scheduler.h paired_slot): units of tiles m and
//                                            M-1-m, equal in cost, round-robin over the CTAs;
//   varlen (C.varlen, one CTA per tile)      the tile blockIdx.x of the host's longest-first table.
// (The walk is a compile-time choice, one kernel per walk: docs/DECISIONS.md, "The paired causal
// schedule".) With a tile feed
// (FwdConfig::tile_feed) only the producer walks; the consumers read its tiles (TileFeed).
template <FwdConfig C>
struct TileWalk {
  int k = 0;  // this CTA's next slot
  unsigned fetched = 0;  // the dynamic schedule: the counter value fetched for the call after this one
  // The dynamic schedule (p.tile_counter, in the kernels with FwdConfig::dynamic_walk, where only
  // the producer walks): the first
  // tile is blockIdx.x, each later one gridDim.x + an atomic increment of tile_counter[0], fetched
  // one call ahead so that the atomic's latency passes under a whole tile. A CTA stops at its first
  // index past the last tile; then it counts itself in tile_counter[1], and the last CTA to do so
  // resets both words for the next launch on the stream: every CTA's last increment of word 0
  // returned before its increment of word 1 (the fence between them), so none follows the reset.
  __device__ __forceinline__ bool next_dynamic(const FwdParams& p, Tile* t) {
    const int num_tiles = p.num_m_blocks * p.heads_q * p.batch;
    const int i = k++ == 0 ? static_cast<int>(blockIdx.x) : static_cast<int>(gridDim.x + fetched);
    if (i >= num_tiles) {
      __threadfence();
      if (atomicAdd(p.tile_counter + 1, 1u) == gridDim.x - 1) {
        p.tile_counter[0] = 0u;
        p.tile_counter[1] = 0u;
      }
      return false;
    }
    fetched = atomicAdd(p.tile_counter, 1u);  // used by the next call: its latency passes under this tile
    *t = tile_of<C>(p, tile_from_linear_lpt(i, p.num_m_blocks, p.heads_q, p.batch, p.lpt_section), i);
    return true;
  }
  // vt: the varlen kernels' sequence table (in the parameter block), nullptr otherwise.
  __device__ __forceinline__ bool next(const FwdParams& p, const FwdVarlenTable* vt, Tile* t) {
    if constexpr (C.dynamic_walk) {
      if (p.tile_counter != nullptr) return next_dynamic(p, t);
    }
    if constexpr (C.varlen) {
      if (k++ > 0 || static_cast<int>(blockIdx.x) >= vt->tile_prefix[vt->num_seqs]) return false;
      *t = varlen_tile_at<C>(p, *vt, static_cast<int>(blockIdx.x));
      return true;
    } else if constexpr (C.paired) {
      TileCoord tc;
      SlotKind s = paired_slot(blockIdx.x, k++, gridDim.x, p.num_m_blocks, p.heads_q, p.batch, &tc);
      // An empty slot (the short half of an odd M's middle pair) is odd; the slot after it is a
      // unit's long tile or the end.
      if (s == SlotKind::kEmpty) s = paired_slot(blockIdx.x, k++, gridDim.x, p.num_m_blocks, p.heads_q, p.batch, &tc);
      if (s == SlotKind::kDone) return false;
      *t = tile_of<C>(p, tc, (tc.batch * p.heads_q + tc.head) * p.num_m_blocks + tc.m_block);
      return true;
    } else {
      const int num_tiles = p.num_m_blocks * p.heads_q * p.batch;
      const int i = C.persistent ? static_cast<int>(blockIdx.x) + k * static_cast<int>(gridDim.x)
                                 : (k == 0 ? static_cast<int>(blockIdx.x) : num_tiles);
      ++k;
      if (i >= num_tiles) return false;
      *t = tile_of<C>(p, tile_from_linear(i, p.num_m_blocks, p.heads_q, p.batch, m_descending<C>(p)), i);
      return true;
    }
  }
};

// The tile feed (FwdConfig::tile_feed, persistent kernels): the producer walks TileWalk and
// publishes each tile in a two-slot ring of shared memory; the consumers take it from there. Every
// consumer still sees the same tiles in the same order (they all read every slot), and the
// producer's walk is the only one, so the consumers' tile transition has no division in it.
template <FwdConfig C>
struct TileFeed {
  using L = FwdLayout<C>;
  using Ring = RingState<(L::kTileSlots > 0 ? L::kTileSlots : 1)>;  // one slot where there is no feed
  Ring at;
  // Producer: wait until every consumer warp has read the slot's previous tile, store, release.
  __device__ __forceinline__ void publish(const FwdSmem<C>& sm, int m_block, int head, int batch, int n_max) {
    FLASHPTX_MBAR_WAIT(sm.tile_empty(at.stage), at.phase, "fa3 producer: tile_empty");
    ptx::st_shared_v4_b32(sm.tile_slot(at.stage), static_cast<uint32_t>(m_block), static_cast<uint32_t>(head),
                          static_cast<uint32_t>(batch), static_cast<uint32_t>(n_max));
    ptx::mbarrier_arrive(sm.tile_full(at.stage));  // release: the store above is visible to the waiter
    at.advance();
  }
  // Consumer: acquire the slot; lane 0 alone reads it, then the warp barrier, then lane 0 releases
  // it for this warp. One reader per warp, so the release follows the slot's only read in program
  // order (every lane reading it, ordered before lane 0's arrive only through __syncwarp, is not a
  // happens-before the race checker accepts: docs/DECISIONS.md, "racecheck and the tile feed"). The
  // values reach the other lanes by shuffle, which also makes them warp-uniform to the compiler:
  // loop bounds built from shared-memory loads would leave the uniform datapath (see own in
  // Consumer::run). The __syncwarp stays for the same reason: without it ptxas moves the steady
  // loops off that datapath (docs/DECISIONS.md, "Warp-uniform loop bounds").
  __device__ __forceinline__ bool take(const FwdSmem<C>& sm, const FwdParams& p, int lane, Tile* t) {
    FLASHPTX_MBAR_WAIT(sm.tile_full(at.stage), at.phase, "fa3 consumer: tile_full");
    int4 v = make_int4(0, 0, 0, 0);
    if (lane == 0) v = ptx::ld_shared_v4_b32(sm.tile_slot(at.stage));
    __syncwarp();
    if (lane == 0) ptx::mbarrier_arrive(sm.tile_empty(at.stage));
    at.advance();
    v.x = __shfl_sync(0xffffffffu, v.x, 0);
    if (v.x < 0) return false;
    t->m_block = v.x;
    t->head = __shfl_sync(0xffffffffu, v.y, 0);
    t->batch = __shfl_sync(0xffffffffu, v.z, 0);
    t->n_max = __shfl_sync(0xffffffffu, v.w, 0);
    t->head_kv = 0;  // the producer's only
    t->index = (t->batch * p.heads_q + t->head) * p.num_m_blocks + t->m_block;  // trace stamps only
    return true;
  }
};

// ---- small helpers (pack2, quad_max, quad_sum: src/sm90/common.cuh) -------------------------
// The sum of the two 16-bit values of a pack2 word, each widened exactly: what the PV GEMM multiplies.
template <bool IsBf16>
__device__ __forceinline__ float unpacked_sum2(uint32_t w) {
  if constexpr (IsBf16) return __uint_as_float(w << 16) + __uint_as_float(w & 0xffff0000u);
  else return ptx::cvt_f32_f16(static_cast<uint16_t>(w & 0xffffu)) + ptx::cvt_f32_f16(static_cast<uint16_t>(w >> 16));
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

// ---- ring protocol helpers (tracing folded in) ---------------------------------------------
// One K/V ring as its consumer sees it, with its barriers (full[stage], empty[stage] of FwdSmem),
// the names its waits report (bounded-wait builds) and its trace events: wait_full, read the stage,
// release, which advances. full[stage] of the current generation certifies that the producer's TMA
// bytes of the stage have landed; release is one arrive per warp on empty[stage], after this warp's
// wgmma wait retired the stage's last reader.
enum class KV { kK, kV };
template <FwdConfig C, KV R>
struct ReadRing {
  const FwdSmem<C>& sm;
  Tracer tr;
  RingState<C.stages> at = RingState<C.stages>::consumer_start();
  __device__ __forceinline__ uint32_t stage() const { return at.stage; }
  // kSkip: a block this warpgroup does not read (Consumer::skip_block), named apart in a timeout.
  template <bool kSkip = false>
  __device__ __forceinline__ void wait_full() const {
    const uint32_t full_bar = R == KV::kK ? sm.k_full(at.stage) : sm.v_full(at.stage);
    const char* name = R == KV::kK ? (kSkip ? "fa3 consumer: k_full (skip)" : "fa3 consumer: k_full")
                                   : (kSkip ? "fa3 consumer: v_full (skip)" : "fa3 consumer: v_full");
    FLASHPTX_MBAR_WAIT(full_bar, at.phase, name);
    tr(R == KV::kK ? trace::kFullK : trace::kFullV, at.stage);
  }
  __device__ __forceinline__ void release(int lane) {
    const uint32_t empty_bar = R == KV::kK ? sm.k_empty(at.stage) : sm.v_empty(at.stage);
    if (lane == 0) ptx::mbarrier_arrive(empty_bar);
    tr(R == KV::kK ? trace::kReleaseK : trace::kReleaseV, at.stage);
    at.advance();
  }
};

// Who frees the Q buffer for the next tile (q_empty), in one place. With O staged in its own
// buffer, every consumer warp arrives once the wait that retires the tile's last QK has passed;
// with O staged in the Q buffer, the storing thread of every consumer warpgroup arrives once its
// TMA store has read the buffer (cp.async.bulk.wait_group.read 0, PTX ISA "cp.async.bulk.wait_group").
template <FwdConfig C>
struct QRelease {
  static constexpr bool kAfterLastQK = FwdLayout<C>::kOBytes > 0;
  __device__ __forceinline__ static void after_last_qk(uint32_t q_empty, int lane) {
    if constexpr (kAfterLastQK) {
      if (lane == 0) ptx::mbarrier_arrive(q_empty);
    }
  }
  __device__ __forceinline__ static void after_store(uint32_t q_empty) {
    if constexpr (!kAfterLastQK) {
      ptx::cp_async_bulk_wait_group_read<0>();
      ptx::mbarrier_arrive(q_empty);
    }
  }
};

// ==================================== PRODUCER ====================================================
// One elected thread. K of a block, then (first block only) Q, then V: Q's latency hides behind K's.
template <FwdConfig C>
struct Producer {
  using L = FwdLayout<C>;
  const FwdParams& p;
  const FwdSmem<C>& sm;
  Tracer tr;
  const FwdVarlenTable* vt;  // varlen only (else nullptr)
  RingState<C.stages> write = RingState<C.stages>::producer_start();  // one generation ahead
  RingState<L::kQSlots> q_write = RingState<L::kQSlots>::producer_start();  // the Q buffers start empty

  __device__ __forceinline__ void load_q(const Tile& t) {
    const uint32_t slot = q_write.stage;
    FLASHPTX_MBAR_WAIT(sm.q_empty(slot), q_write.phase, "fa3 producer: q_empty");
    q_write.advance();
    ptx::mbarrier_arrive_expect_tx(sm.q_full(slot), L::kQBytes);
    for (int c = 0; c < L::kChunks; ++c)
      ptx::cp_async_bulk_tensor_4d_load(sm.q(slot) + c * L::kBlockM * 128, &p.tma_q, sm.q_full(slot), c * 64,
                                        q_coord<C>(t, t.m_block * L::kBlockM), t.head, t.batch);
    tr(trace::kTmaIssueQ, t.m_block);
  }
  // Waits for stage `write.stage` of one ring to be empty, then loads block n into it: K's head_dim
  // columns or V's head_dim_v (R), in whole 64-column chunks (FwdLayout::kChunks, kChunksV; a box
  // past the tensor's last column is zero-filled and its bytes count towards complete_tx too).
  template <KV R>
  __device__ __forceinline__ void load_kv(const CUtensorMap* map, uint32_t dst, uint32_t empty_bar, uint32_t full_bar,
                                          const Tile& t, int n, const char* name, uint32_t ev_empty, uint32_t ev_issue) {
    constexpr int kChunksR = R == KV::kK ? L::kChunks : L::kChunksV;
    constexpr uint32_t kBytesR = R == KV::kK ? L::kKBytes : L::kVBytes;
    FLASHPTX_MBAR_WAIT(empty_bar, write.phase, name);
    tr(ev_empty, write.stage);
    ptx::mbarrier_arrive_expect_tx(full_bar, kBytesR);
    for (int c = 0; c < kChunksR; ++c)
      ptx::cp_async_bulk_tensor_4d_load(dst + c * C.block_n * 128, map, full_bar, c * 64, k_coord<C>(t, n * C.block_n),
                                        t.head_kv, t.batch);
    tr(ev_issue, (n << 8) | write.stage);
  }

  // The r-th K/V block of tile t (right to left: block n_max - 1 - r, down to n_min with a window:
  // the blocks left of the window are never loaded) into the rings' next stage;
  // the tile's Q after its first K, so that Q's latency hides behind K's.
  __device__ __forceinline__ void load_block(const Tile& t, int r) {
    const int n = t.n_max - 1 - r;
    load_kv<KV::kK>(&p.tma_k, sm.k(write.stage), sm.k_empty(write.stage), sm.k_full(write.stage), t, n,
            "fa3 producer: k_empty", trace::kEmptyWaitK, trace::kTmaIssueK);
    if (r == 0) load_q(t);
    load_kv<KV::kV>(&p.tma_v, sm.v(write.stage), sm.v_empty(write.stage), sm.v_full(write.stage), t, n,
            "fa3 producer: v_empty", trace::kEmptyWaitV, trace::kTmaIssueV);
    write.advance();
  }

  // With a tile feed: the walk runs one tile ahead, in the shadow of the ring. The next tile is
  // found and published right after the current tile's first K, Q and V are issued, where the
  // producer would otherwise wait for a free stage, so no walk stands between the last V of one
  // tile and the first K of the next (docs/DECISIONS.md, "Walking ahead").
  // Publishing tile k + 1 waits for the consumers to have read tile k - 1's slot (TileFeed: two
  // slots), which they do when they begin tile k - 1: usually long done; after short tiles it can
  // hold the producer back, never deadlock it, since every load of the tiles before k is issued.
  __device__ __forceinline__ void run_walk_ahead() {
    TileWalk<C> walk;
    TileFeed<C> feed{TileFeed<C>::Ring::producer_start()};
    Tile t;
    bool have = walk.next(p, vt, &t);
    publish_or_end(feed, have, t);
    while (have) {
      Tile next;
      bool have_next = false;
      tr(trace::kTileBegin, t.index);
      if (walk_blocks<C>(t) == 0) {
        load_q(t);  // consumers still take (and release) the tile's Q buffer
        have_next = walk.next(p, vt, &next);
        publish_or_end(feed, have_next, next);
      }
      for (int r = 0; r < walk_blocks<C>(t); ++r) {
        load_block(t, r);
        if (r == 0) {
          have_next = walk.next(p, vt, &next);
          publish_or_end(feed, have_next, next);
        }
      }
      tr(trace::kTileEnd, t.index);
      t = next;
      have = have_next;
    }
    tail();
  }
  __device__ __forceinline__ void publish_or_end(TileFeed<C>& feed, bool have, const Tile& t) {
    if (have) feed.publish(sm, t.m_block, t.head, t.batch, t.n_max);
    else feed.publish(sm, -1, 0, 0, 0);  // no more tiles
  }
  // Producer tail: wait until the consumers have released every stage, so the producer never
  // leaves while a stage it filled is still being read. A synchronization tail, not data.
  __device__ __forceinline__ void tail() {
    for (int s = 0; s < C.stages; ++s) {
      FLASHPTX_MBAR_WAIT(sm.k_empty(write.stage), write.phase, "fa3 producer tail: k_empty");
      FLASHPTX_MBAR_WAIT(sm.v_empty(write.stage), write.phase, "fa3 producer tail: v_empty");
      write.advance();
    }
  }

  __device__ __forceinline__ void run() {
    if constexpr (C.walk_ahead) {
      run_walk_ahead();
      return;
    }
    TileWalk<C> walk;
    TileFeed<C> feed{TileFeed<C>::Ring::producer_start()};
    for (Tile t; walk.next(p, vt, &t);) {
      if constexpr (C.tile_feed) feed.publish(sm, t.m_block, t.head, t.batch, t.n_max);
      tr(trace::kTileBegin, t.index);
      if (walk_blocks<C>(t) == 0) load_q(t);  // consumers still take (and release) the tile's Q buffer
      for (int r = 0; r < walk_blocks<C>(t); ++r) {
        load_block(t, r);
      }
      tr(trace::kTileEnd, t.index);
    }
    if constexpr (C.tile_feed) feed.publish(sm, -1, 0, 0, 0);  // no more tiles
    tail();
  }
};

// ==================================== CONSUMER ====================================================
template <FwdConfig C>
struct Consumer {
  using L = FwdLayout<C>;
  using Tokens = TokenRing<(C.consumer_wgs >= 2 ? C.consumer_wgs : 2)>;
  static constexpr int kD = C.head_dim, kBlockN = C.block_n, kBlockM = L::kBlockM;
  // O's columns in registers, the PV GEMM's N: head_dim_v in whole chunks (FwdLayout::kDimVPad).
  static constexpr int kDv = L::kDimVPad;
  // The deferred epilogue (C.defer_epilogue): a tile's O is normalised (and its LSE written) when
  // the tile ends, but staged in shared memory and stored only once the next tile's QK(0) is issued,
  // so that the next tile's first GEMM follows this tile's drain without the staging's barriers and
  // stores in between, and the staging runs under QK(0). O's own buffer (OStaging::kOwn) stages it;
  // the previous tile's O waits in kDv / 2 registers (o_prev). Where it is compiled: docs/DECISIONS.md,
  // "The deferred epilogue".

  const FwdParams& p;
  const FwdSmem<C>& sm;
  Tracer tr;
  const FwdVarlenTable* vt;  // varlen only (else nullptr)
  const int g;     // consumer index 0..G-1 (physical warpgroup minus the producer's)
  const int lane;  // lane in the warp
  // Fragment coordinates (wgmma m64nNk16 D layout): this thread holds rows r0 and r0 + 8 of the
  // warpgroup's 64 rows, columns 8i + 2q + {0, 1} of every n8 block i.
  const int q4, r0;
  const int seqlen_q, seqlen_k;
  const bool causal;
  const int diag;  // seqlen_k - seqlen_q: the bottom-right causal alignment offset
  const float scale_log2;
  // Q rows of this warpgroup, K-major, 128B swizzle, SBO = 1024 (ptx/wgmma.cuh descriptor), in Q
  // slot 0 and in the current tile's slot (FwdConfig::q_slots: two at d128, the k-th tile of the
  // CTA in slot k % 2).
  const uint64_t desc_q0;
  uint64_t desc_q;
  uint32_t q_slot = 0;

  // Registers owned across the steady loop.
  float o[kDv / 2];                // O accumulator (wgmma D layout)
  float s_acc[kBlockN / 2];        // S, then P in fp32
  uint32_t pfrag[kBlockN / 16][4];  // P as the RS A fragment
  float row_max[2], row_sum[2];    // row_sum: per-thread partial sums, reduced across the quad at the end
  float row_sum_pv[2];             // C.lazy_rescale: the same over P as rounded for the PV GEMM (else unused)
  // The deferred epilogue (C.defer_epilogue): the previous tile's normalised O, staged and stored
  // under this tile's QK(0).
  float o_prev[C.defer_epilogue ? kDv / 2 : 1];
  Tile prev;
  bool have_prev = false;
  ReadRing<C, KV::kK> k_ring;
  ReadRing<C, KV::kV> v_ring;
  int row0 = 0;                    // global query row of r0 in the current tile
  float sink_log2 = 0.f;           // C.sinks: the tile's head's sink logit in log2 units (read at the tile's start)

  __device__ __forceinline__ Consumer(const FwdParams& p_, const FwdSmem<C>& sm_, Tracer tr_,
                                      const FwdVarlenTable* vt_, int g_)
      : p(p_), sm(sm_), tr(tr_), vt(vt_), g(g_), lane(threadIdx.x % 32), q4(lane % 4),
        r0(16 * ((threadIdx.x % 128) / 32) + lane / 4), seqlen_q(p_.seqlen_q), seqlen_k(p_.seqlen_k),
        causal(p_.causal != 0), diag(p_.seqlen_k - p_.seqlen_q),
        scale_log2(p_.softmax_scale_log2),
        desc_q0(ptx::make_smem_desc(sm_.q() + 64 * g_ * 128, 0, 1024, ptx::Swizzle::k128B)), desc_q(desc_q0),
        k_ring{sm_, tr_}, v_ring{sm_, tr_} {}

  // ---- the two GEMMs ----------------------------------------------------------------------
  // S = Q K^T over the head dim: kD/16 k-steps; 4 per 128-byte chunk (+32 B each; d96: the second
  // chunk's first two, its zero-filled right half never read). kCols < kBlockN:
  // the block's first kCols keys only (an m64nNk16 with N = kCols reads the stage's first kCols K
  // rows: the same descriptor), into s_acc[0, kCols / 2); the rest of s_acc is left as it was.
  template <int kCols = kBlockN>
  __device__ __forceinline__ void issue_qk(uint32_t k_stage, int n) {
    const uint64_t desc_k = ptx::make_smem_desc(sm.k(k_stage), 0, 1024, ptx::Swizzle::k128B);
    float(&s)[kCols / 2] = *reinterpret_cast<float(*)[kCols / 2]>(&s_acc[0]);
    ptx::wgmma_fence_operand(s_acc);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kD / 16; ++k) {
      const uint32_t a_off = (k / 4) * kBlockM * 128 + (k % 4) * 32;
      const uint32_t b_off = (k / 4) * kBlockN * 128 + (k % 4) * 32;
      mma_ss<kCols, C.bf16>(s, ptx::smem_desc_advance(desc_q, a_off), ptx::smem_desc_advance(desc_k, b_off),
                            k > 0 ? 1u : 0u);
    }
    ptx::wgmma_commit_group();
    ptx::wgmma_fence_operand(s_acc);
    tr(trace::kQKIssue, n);
  }
  // O (+)= P V: kBlockN/16 k-steps over the keys, N = kDv (head_dim_v in whole chunks; d96: 128, the
  // last 32 columns V's zero fill, so O's are 0). V is MN-major for this GEMM (d contiguous):
  // LBO = distance between 64-column chunks, SBO = 1024 between 8-key groups; +2048 B per k16.
  __device__ __forceinline__ void issue_pv(uint32_t v_stage, bool accumulate, int n) {
    const uint64_t desc_v = ptx::make_smem_desc(sm.v(v_stage), kBlockN * 128, 1024, ptx::Swizzle::k128B);
    ptx::wgmma_fence_operand(o);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kBlockN / 16; ++k)
      mma_rs_transb<kDv, C.bf16>(o, pfrag[k], ptx::smem_desc_advance(desc_v, k * 16 * 128),
                                (accumulate || k > 0) ? 1u : 0u);
    ptx::wgmma_commit_group();
    ptx::wgmma_fence_operand(o);
    tr(trace::kPVIssue, n);
  }
  // wgmma.wait_group N (PTX ISA "wgmma.wait_group"): certifies that all but the N newest groups
  // have completed, so their accumulators are readable and their smem operands reusable.
  template <int kPending>
  __device__ __forceinline__ void retire_qk(int n) {
    ptx::wgmma_wait_group<kPending>();
    ptx::wgmma_fence_operand(s_acc);
    tr(trace::kQKDone, n);
  }
  __device__ __forceinline__ void retire_pv(int n) {
    ptx::wgmma_wait_group<0>();
    ptx::wgmma_fence_operand(o);
    tr(trace::kPVDone, n);
  }

  // ---- the pingpong token (src/protocol/pingpong.h) -------------------------------------
  __device__ __forceinline__ void take_token() {
    if constexpr (C.pingpong) {
      tr(trace::kTokenWait, Tokens::barrier_of(g));
      ptx::bar_sync(Tokens::barrier_of(g), Tokens::kParticipants);  // my turn to issue
      tr(trace::kTokenGot, Tokens::barrier_of(g));
    }
  }
  __device__ __forceinline__ void pass_token() {
    if constexpr (C.pingpong) {
      ptx::bar_arrive(Tokens::barrier_of(Tokens::next(g)), Tokens::kParticipants);
      tr(trace::kTokenPass, Tokens::barrier_of(Tokens::next(g)));
    }
  }

  // ---- softmax ------------------------------------------------------------------------------
  // The tile's lengths: the launch's, or (varlen) its sequence's.
  __device__ __forceinline__ int len_q(const Tile& t) const {
    if constexpr (C.varlen) return t.len_q;
    return seqlen_q;
  }
  __device__ __forceinline__ int len_k(const Tile& t) const {
    if constexpr (C.varlen) return t.len_k;
    return seqlen_k;
  }
  __device__ __forceinline__ int diag_of(const Tile& t) const {
    if constexpr (C.varlen) return t.len_k - t.len_q;
    return diag;
  }
  // Whether block n holds a masked key for some row of this tile: keys past seqlen_k, or keys
  // right of the causal diagonal of the tile's first row. True exactly for a suffix of the blocks.
  // (The tile's first row, not this warpgroup's: a value that depends on the warpgroup index is not
  // warp-uniform to the compiler, and loop bounds built from it move the ring's descriptor
  // arithmetic out of the uniform datapath: docs/DECISIONS.md, "Warp-uniform loop bounds".)
  __device__ __forceinline__ bool block_needs_mask(const Tile& t, int n) const {
    if constexpr (C.window) return right_needs_mask(t, n) || left_needs_mask(t, n);
    return (n + 1) * kBlockN > len_k(t) || (causal && (n + 1) * kBlockN - 1 > t.m_block * kBlockM + diag_of(t));
  }
  // C.window: the two edges of the window. Right: keys past len_k or right of the window of the
  // tile's first row (the row that sees least on the right): a suffix of [n_min, n_max). Left: keys
  // left of the window of the tile's last row (block_m rows down, whether or not they exist: a block
  // masked that needs no mask costs time, never a value): a prefix. Between them every row of the
  // tile sees every key of a block, which then runs unmasked.
  __device__ __forceinline__ bool right_needs_mask(const Tile& t, int n) const {
    return (n + 1) * kBlockN > len_k(t) ||
           (p.window_right >= 0 && (n + 1) * kBlockN - 1 > t.m_block * kBlockM + diag_of(t) + p.window_right);
  }
  __device__ __forceinline__ bool left_needs_mask(const Tile& t, int n) const {
    return p.window_left >= 0 && n * kBlockN < t.m_block * kBlockM + kBlockM - 1 + diag_of(t) - p.window_left;
  }
  // The K/V blocks this warpgroup's own 64 rows see: [0, own) with own <= t.n_max (the tile's last
  // row sets n_max). Less than n_max where a later warpgroup's rows reach further right: the causal
  // diagonal with 64-key blocks (d256: warpgroup 0 sees none of the tile's last block) or with
  // 192-row tiles, and a ragged tile whose last warpgroup holds no row of the sequence (own = 0).
  // Used where C.skip_blocks is set (docs/DECISIONS.md, "Per-warpgroup block skipping"); without
  // it every warpgroup visits the tile's n_max blocks, and the mask removes what its rows do not see.
  __device__ __forceinline__ int own_n_blocks(const Tile& t) const {
    const int first = t.m_block * kBlockM + 64 * g;
    return rows_n_blocks(first, first + 64, kBlockN, len_q(t), len_k(t), causal);
  }
  // Whether the first block this warpgroup visits (own - 1, the rightmost) holds no key that any of
  // its rows sees in the block's right half: startup<true> then computes that block 64 columns wide.
  // With 128-key blocks: warpgroup 0 on the diagonal of a square causal mask, or a K length that
  // ends in the first half of its last block. Used where C.half_first is set (128-key blocks; with
  // 64-key blocks, d256, the per-warpgroup skip already drops whole blocks).
  __device__ __forceinline__ bool half_first(const Tile& t, int own) const {
    const int first = t.m_block * kBlockM + 64 * g;
    return rows_key_end(first, first + 64, len_q(t), len_k(t), causal) <= (own - 1) * kBlockN + kBlockN / 2;
  }
  // (len_k(t) and diag_of(t) stay inside the expression: hoisted into locals, they change the
  // fixed-length kernels' instruction schedule, though not their values. A one-compare form was
  // tried: docs/DECISIONS.md, "The mask as one compare".)
  template <int kCols>
  __device__ __forceinline__ void apply_mask(const Tile& t, int n) {
    if constexpr (C.window) {
      apply_window_mask<kCols>(t, n);
    } else {
#pragma unroll
      for (int i = 0; i < kCols / 8; ++i) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = n * kBlockN + 8 * i + 2 * q4 + (e & 1);
          const int row = row0 + 8 * (e >> 1);
          const bool masked = col >= len_k(t) || (causal && col > row + diag_of(t));
          s_acc[4 * i + e] = masked ? -INFINITY : s_acc[4 * i + e];
        }
      }
    }
  }
  // C.window: row r sees key c iff r + lo <= c <= r + hi and c < len_k, with lo = diag - window_left
  // and hi = diag + window_right; an unbounded side (-1) takes a bound no row of the tile passes
  // (hi = len_k: c < len_k <= r + len_k; lo = -(len_q + block_m): r + lo <= 0 <= c for every row of
  // the tile), so one form serves every window, causal (hi = diag) included.
  template <int kCols>
  __device__ __forceinline__ void apply_window_mask(const Tile& t, int n) {
    const int hi = p.window_right >= 0 ? diag_of(t) + p.window_right : len_k(t);
    const int lo = p.window_left >= 0 ? diag_of(t) - p.window_left : -(len_q(t) + kBlockM);
#pragma unroll
    for (int i = 0; i < kCols / 8; ++i) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = n * kBlockN + 8 * i + 2 * q4 + (e & 1);
        const int row = row0 + 8 * (e >> 1);
        const bool masked = col >= len_k(t) || col > row + hi || col < row + lo;
        s_acc[4 * i + e] = masked ? -INFINITY : s_acc[4 * i + e];
      }
    }
  }
  // kCap (C.softcap, where p.softcap_prescale = softmax_scale / c is set): S becomes
  // tanh(S scale / c), before the mask (FlashAttention-3's order: the cap on the scaled score, then
  // the mask); the softmax's scale is then c (log2(e) c in base 2: the plan sets both), so the logit
  // is c tanh(scale S / c) and the LSE is that logit's. tanh.approx.f32: MUFU.TANH, 2^-11 relative.
  // A compile-time argument of the step, chosen once per tile (run_local_blocks): a branch between
  // the two wgmma waits would make ptxas retire PV(j-1) before the exponentials (docs/DECISIONS.md,
  // "No branch between the two wgmma waits").
  template <int kCols, bool kCap>
  __device__ __forceinline__ void apply_softcap() {
    if constexpr (kCap) {
      static_assert(C.softcap, "the softcap is compiled where FwdConfig::softcap is set");
      const float k = p.softcap_prescale;
#pragma unroll
      for (int i = 0; i < kCols / 2; ++i) s_acc[i] = ptx::tanh_approx_f32(s_acc[i] * k);
    }
  }
  // Online softmax on S of block n, base 2, masked or not as the caller knows at compile time: a
  // branch between wait_group(1) and wait_group(0) makes ptxas wait for every wgmma at the join
  // (seen in our SASS: WARPGROUP.DEPBAR.LE gsb0, 0x0 hoisted above the exponentials), so the steady
  // loop is split into a masked and an unmasked loop, each without control flow there.
  // Returns the rescale factors of the two rows (applied to O once the PV into O has retired).
  // kCols < kBlockN: a half-width block (startup<true>): S holds its first kCols columns only.
  // The row maximum as a tree (C.tree_max: pairs, then halving, 6 dependent FMNMX per row at 128
  // columns) or as one chain (17 dependent FMNMX): max is exact in any order, so O and LSE are
  // bit-identical either way; only the latency before the first exponential differs
  // (docs/DECISIONS.md, "The softmax's dependent steps").
  // The lazy rescale (C.lazy_rescale: FlashAttention-4's conditional rescaling, Zadouri et al. 2025,
  // here inside each warpgroup): a row whose maximum grew by at most kRescaleLog2 (log2 units, after
  // the scale) keeps its old exponent reference, so its alpha is exactly 1, and a warp none of whose
  // rows moved its reference skips the rescale of O: 128 FMULs per thread between PV(j-1)'s wait and
  // PV(j)'s issue, on the step's critical path. P may then reach 2^kRescaleLog2, and its largest
  // entry is no longer exactly 1 before the bf16/fp16 rounding; O is therefore normalised by the sum
  // of the rounded P (row_sum_pv: the weights the PV GEMM used), under which a rounded dominant entry
  // cancels, while the LSE keeps the sum of the unrounded P (docs/DECISIONS.md, "The lazy rescale").
  static constexpr float kRescaleLog2 = 8.f;
  template <bool kMasked, int kCols = kBlockN, bool kCap = false>
  __device__ __forceinline__ void softmax(const Tile& t, int n, float (&alpha)[2]) {
    tr(trace::kSoftmaxBegin, n);
    apply_softcap<kCols, kCap>();
    if constexpr (kMasked) apply_mask<kCols>(t, n);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = row_max[h];
      if constexpr (C.tree_max) {
        float m[kCols / 8];
#pragma unroll
        for (int i = 0; i < kCols / 8; ++i) m[i] = fmaxf(s_acc[4 * i + 2 * h], s_acc[4 * i + 2 * h + 1]);
        constexpr int kLevels = kCols == 128 ? 4 : kCols == 64 ? 3 : kCols == 32 ? 2 : 1;  // log2(kCols / 8)
        static_assert((kCols / 8) == (1 << kLevels), "a power-of-two count of n8 blocks");
#pragma unroll
        for (int lv = 0; lv < kLevels; ++lv) {
#pragma unroll
          for (int i = 0; i < kCols / 16; ++i) {
            const int w = (kCols / 16) >> lv;  // a constant bound inside: nvcc unrolls inner loops first
            if (i < w) m[i] = fmaxf(m[i], m[i + w]);
          }
        }
        mx = fmaxf(mx, m[0]);
      } else {
#pragma unroll
        for (int i = 0; i < kCols / 8; ++i) mx = fmaxf(mx, fmaxf(s_acc[4 * i + 2 * h], s_acc[4 * i + 2 * h + 1]));
      }
      mx = quad_max(mx);
      // The lazy rescale (C.lazy_rescale, above): growth of at most kRescaleLog2 keeps the old
      // reference. O, both row sums and the LSE all use the reference the exponentials used.
      if constexpr (C.lazy_rescale) {
        if (row_max[h] != -INFINITY && (mx - row_max[h]) * scale_log2 <= kRescaleLog2) mx = row_max[h];
      }
      // A row with no visible key so far keeps max -inf: use 0 as its exponent reference so that
      // exp2(-inf - ref) = 0 and never NaN; its O and sum are exactly 0 (alpha = 0 keeps them so).
      const float ref_new = mx == -INFINITY ? 0.f : mx * scale_log2;
      const float ref_old = row_max[h] == -INFINITY ? 0.f : row_max[h] * scale_log2;
      alpha[h] = row_max[h] == -INFINITY ? 0.f : ptx::ex2_approx_ftz_f32(ref_old - ref_new);
      row_max[h] = mx;
      float sum = 0.f;
#pragma unroll
      for (int i = 0; i < kCols / 8; ++i) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& s = s_acc[4 * i + 2 * h + e];
          s = ptx::ex2_approx_ftz_f32(fmaf(s, scale_log2, -ref_new));
          sum += s;
        }
      }
      row_sum[h] = row_sum[h] * alpha[h] + sum;
      if constexpr (C.lazy_rescale) row_sum_pv[h] *= alpha[h];  // the previous block's P is in already
    }
  }
  // P (registers, the RS A fragment) from the exponentiated S: two adjacent n8 blocks per k16.
  // kCols < kBlockN: the columns past kCols are P = 0 (keys no row of this warpgroup sees), so the
  // PV that reads this P adds nothing for them.
  template <int kCols = kBlockN>
  __device__ __forceinline__ void convert_p() {
#pragma unroll
    for (int k = 0; k < kBlockN / 16; ++k) {
      if (k < kCols / 16) {
        pfrag[k][0] = pack2<C.bf16>(s_acc[8 * k + 0], s_acc[8 * k + 1]);
        pfrag[k][1] = pack2<C.bf16>(s_acc[8 * k + 2], s_acc[8 * k + 3]);
        pfrag[k][2] = pack2<C.bf16>(s_acc[8 * k + 4], s_acc[8 * k + 5]);
        pfrag[k][3] = pack2<C.bf16>(s_acc[8 * k + 6], s_acc[8 * k + 7]);
      } else {
        pfrag[k][0] = pfrag[k][1] = pfrag[k][2] = pfrag[k][3] = 0u;
      }
    }
  }
  // C.lazy_rescale: the rounded P of the block whose PV was just issued (pfrag, read while the GEMM
  // reads it) into row_sum_pv, in the GEMMs' shadow; words 0 and 2 of each k16 hold row r0's P,
  // words 1 and 3 row r0 + 8's. Before the next softmax scales the sum by its alpha.
  __device__ __forceinline__ void add_pv_sum() {
    if constexpr (C.lazy_rescale) {
#pragma unroll
      for (int k = 0; k < kBlockN / 16; ++k) {
        row_sum_pv[0] += unpacked_sum2<C.bf16>(pfrag[k][0]) + unpacked_sum2<C.bf16>(pfrag[k][2]);
        row_sum_pv[1] += unpacked_sum2<C.bf16>(pfrag[k][1]) + unpacked_sum2<C.bf16>(pfrag[k][3]);
      }
    }
  }
  __device__ __forceinline__ void rescale_o(const float (&alpha)[2]) {
#pragma unroll
    for (int i = 0; i < kDv / 8; ++i) {
      o[4 * i + 0] *= alpha[0];
      o[4 * i + 1] *= alpha[0];
      o[4 * i + 2] *= alpha[1];
      o[4 * i + 3] *= alpha[1];
    }
  }

  // ---- one tile: startup, steady steps, drain ----------------------------------------------
  // Startup: QK(0) and softmax(0). QK(0) is issued inside the token ring, like every GEMM of the
  // tile: the consumers then start a tile half a step apart (one's softmax(0) under the other's
  // QK(0)), as they run the steady loop, instead of computing softmax(0) together while the tensor
  // cores idle (docs/DECISIONS.md, "Token ring at the tile edges").
  // kHalf: no row of this warpgroup sees a key in the right half of the block (half_first): QK(0)
  // is one m64n64 wgmma per k-step instead of m64n128, the softmax runs on 64 columns, and the
  // right half of P is zero. On a 128 x 128 tile of a square causal mask this is warpgroup 0's
  // diagonal block in every tile: a quarter of the diagonal block's QK and softmax work of the CTA.
  template <bool kHalf, bool kCap = false>
  __device__ __forceinline__ void startup(const Tile& t) {
    constexpr int kCols = kHalf ? kBlockN / 2 : kBlockN;
    const int n = t.n_max - 1;
    k_ring.wait_full();
    take_token();
    issue_qk<kCols>(k_ring.stage(), n);
    pass_token();
    store_prev();  // the deferred epilogue's staging and store, under QK(0)
    retire_qk<0>(n);
    k_ring.release(lane);  // QK(0) retired
    if (walk_blocks<C>(t) == 1) QRelease<C>::after_last_qk(sm.q_empty(q_slot), lane);
    float alpha[2];
    if (block_needs_mask(t, n)) softmax<true, kCols, kCap>(t, n, alpha);
    else softmax<false, kCols, kCap>(t, n, alpha);
    convert_p<kCols>();
    tr(trace::kSoftmaxEnd, n);
  }

  // Steady step j: QK(j) and PV(j-1) in flight together.
  template <bool kMasked, bool kCap = false>
  __device__ __forceinline__ void steady(const Tile& t, int j) {
    const int n = t.n_max - 1 - j;
    k_ring.wait_full();
    take_token();
    issue_qk(k_ring.stage(), n);  // older group
    v_ring.wait_full();
    issue_pv(v_ring.stage(), j > 1, n + 1);  // newer group; the first PV overwrites O
    pass_token();
    add_pv_sum();
    retire_qk<1>(n);  // QK(j) complete; PV(j-1) may still run
    k_ring.release(lane);
    if (j == walk_blocks<C>(t) - 1) QRelease<C>::after_last_qk(sm.q_empty(q_slot), lane);
    float alpha[2];
    softmax<kMasked, kBlockN, kCap>(t, n, alpha);
    // A compiler fence on S: nvcc keeps the exponentials before the wait below in the PTX; how many
    // of them ptxas schedules before the wait (WARPGROUP.DEPBAR.LE gsb0, 0x0), under PV(j-1), is its
    // choice. SASS-pinned: at least one (sass_golden/sm_90a/fa3_fwd_sm90_steady_overlap.check.inc,
    // "CHECK: MUFU.EX2" before "CHECK: WARPGROUP.DEPBAR.LE gsb0, 0x0"). Forcing all of them before
    // it was tried: docs/DECISIONS.md, "The exponentials before the PV wait".
    ptx::wgmma_fence_operand(s_acc);
    tr(trace::kSoftmaxEnd, n);
    retire_pv(n + 1);  // PV(j-1) complete: O readable, P and V[j-1] reusable
    v_ring.release(lane);
    // Lazy: skipped by the whole warp when none of its rows moved its reference (alpha == 1).
    if (!C.lazy_rescale || __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) rescale_o(alpha);
    convert_p();
  }

  // A block none of this warpgroup's rows can see (n >= own_n_blocks): no GEMM, no softmax; the
  // block contributes exactly what a fully masked block would (nothing: P = 0, alpha = 1). Its K and
  // V stages are still consumed in ring order, and the token still passes once, so the producer and
  // the other consumers see the protocol they see for a visited block. The full-barrier waits are
  // not for data: full[s] of this generation certifies that every consumer released the stage's
  // previous generation (the producer refilled it after empty[s] completed), so this warpgroup's
  // arrivals on empty[s] count towards this generation, never the previous one (docs/PROTOCOLS.md,
  // "The K/V rings").
  __device__ __forceinline__ void skip_block() {
    k_ring.template wait_full<true>();
    k_ring.release(lane);
    v_ring.template wait_full<true>();
    v_ring.release(lane);
    take_token();
    pass_token();
  }

  // Drain: PV(J-1), inside the token ring (as startup's QK(0)): a tile makes J + 1 handoffs per
  // consumer (TokenRing::handoffs_edges_in_ring), the same in every consumer of the CTA.
  __device__ __forceinline__ void drain(const Tile& t) {
    v_ring.wait_full();
    take_token();
    issue_pv(v_ring.stage(), walk_blocks<C>(t) > 1, 0);
    pass_token();
    add_pv_sum();
    retire_pv(0);
    v_ring.release(lane);
  }

  // ---- epilogue: O normalised, staged in shared memory, stored by TMA; LSE ------------------
  // LSE of query row `row` of the tile's sequence: [batch, heads_q, seqlen_q], or (varlen) [heads_q,
  // total_q] at the row's packed index (FlashAttention's varlen layout).
  __device__ __forceinline__ int64_t lse_index(const Tile& t, int row) const {
    if constexpr (C.varlen) return static_cast<int64_t>(t.head) * vt->total_q + t.q_row0 + row;
    return (static_cast<int64_t>(t.batch) * p.heads_q + t.head) * seqlen_q + row;
  }
  // Varlen, the warpgroup that holds the sequence's last rows: its rows < len_q from registers,
  // 4 bytes (two columns) per store; rows past the sequence belong to another CTA and are never
  // written. Plain global stores (generic proxy): no earlier async-proxy store of this CTA wrote
  // these bytes, and the kernel's completion publishes them.
  __device__ __forceinline__ void store_rows_guarded(const Tile& t) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 8 * h;
      if (row >= t.len_q) continue;
      uint16_t* o_row = static_cast<uint16_t*>(vt->o) + static_cast<int64_t>(t.q_row0 + row) * vt->o_row_stride +
                        static_cast<int64_t>(t.head) * vt->o_head_stride;
#pragma unroll
      for (int i = 0; i < C.head_dim_v / 8; ++i)
        ptx::st_global_b32(o_row + 8 * i + 2 * q4, pack2<C.bf16>(o[4 * i + 2 * h], o[4 * i + 2 * h + 1]));
    }
  }

  // O in two halves through a buffer of half the Q tile (OStaging::kHalves, d256 persistent): this
  // warpgroup's columns [128 h, 128 h + 128) in round h, each round waiting until the previous
  // store from the buffer (the previous round's, or the previous tile's last) has read it.
  template <int kHalf>
  __device__ __forceinline__ void store_o_half(const Tile& t, uint32_t s_o, const uint32_t (&unit_addr)[8],
                                               int tid_in_wg) {
    if (tid_in_wg == 0) ptx::cp_async_bulk_wait_group_read<0>();
    ptx::bar_sync(kBarEpilogueWG0 + g, 128);
#pragma unroll
    for (int j = 0; j < kDv / 16; ++j) {
      constexpr int kFirst = kHalf * kDv / 16;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int i = kFirst + j;
        const uint32_t addr = unit_addr[i % 8] + (j / 8) * kBlockM * 128 + h * 8 * 128;
        ptx::st_shared_b32(addr, pack2<C.bf16>(o[4 * i + 2 * h], o[4 * i + 2 * h + 1]));
      }
    }
    ptx::fence_proxy_async_shared_cta();
    ptx::bar_sync(kBarEpilogueWG0 + g, 128);
    if (tid_in_wg == 0) {
#pragma unroll
      for (int c = 0; c < 2; ++c)
        ptx::cp_async_bulk_tensor_4d_store(&p.tma_o, s_o + c * kBlockM * 128, (2 * kHalf + c) * 64,
                                           t.m_block * kBlockM + 64 * g, t.head, t.batch);
      ptx::cp_async_bulk_commit_group();
    }
  }
  __device__ __forceinline__ void store_o_halves(const Tile& t, uint32_t s_o, int tid_in_wg) {
    uint32_t unit_addr[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) unit_addr[u] = s_o + r0 * 128 + ((u ^ (r0 % 8)) * 16) + q4 * 4;
    store_o_half<0>(t, s_o, unit_addr, tid_in_wg);
    store_o_half<1>(t, s_o, unit_addr, tid_in_wg);
  }

  // This warpgroup's O tile (src, normalised) -> its rows of the staging buffer (the Q buffer for
  // head dim 256: its last QK has retired, and the other warpgroups read only their own rows), in
  // the 128B-swizzled layout of the O tensor map: row r at r*128 B, 16-byte unit u stored at
  // u ^ (r % 8); then the TMA store.
  __device__ __forceinline__ void stage_o(const Tile& t, const float (&src)[kDv / 2], int tid_in_wg) {
    const uint32_t s_o = sm.o() + 64 * g * 128;
    if constexpr (L::kOHalves) store_o_halves(t, s_o, tid_in_wg);
    else stage_o_whole(t, s_o, src, tid_in_wg);
  }
  __device__ __forceinline__ void stage_o_whole(const Tile& t, uint32_t s_o, const float (&src)[kDv / 2], int tid_in_wg) {
    if constexpr (L::kSeparateO) {
      // The previous tile's store from this buffer must have read it before it is overwritten.
      if (tid_in_wg == 0) ptx::cp_async_bulk_wait_group_read<0>();
      ptx::bar_sync(kBarEpilogueWG0 + g, 128);
    }
    // Rows r0 and r0 + 8 share r % 8, so the thread's 2 x kDv/8 stores use eight unit addresses, each
    // plus a constant (chunk, row + 8): eight registers, not one per store.
    uint32_t unit_addr[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) unit_addr[u] = s_o + r0 * 128 + ((u ^ (r0 % 8)) * 16) + q4 * 4;
#pragma unroll
    for (int i = 0; i < kDv / 8; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t addr = unit_addr[i % 8] + (i / 8) * kBlockM * 128 + h * 8 * 128;
        ptx::st_shared_b32(addr, pack2<C.bf16>(src[4 * i + 2 * h], src[4 * i + 2 * h + 1]));
      }
    }
    // Generic-proxy writes -> async-proxy read by the TMA store: fence in every writer, then the
    // warpgroup's own barrier, then one thread stores (PTX ISA "Memory Consistency Model: proxies").
    ptx::fence_proxy_async_shared_cta();
    ptx::bar_sync(kBarEpilogueWG0 + g, 128);
    if (tid_in_wg == 0) {
      for (int c = 0; c < L::kChunksV; ++c) {
        // (Spelled out per flavour: through q_coord, the fixed-length kernels' schedule changed.)
        if constexpr (C.varlen)
          ptx::cp_async_bulk_tensor_4d_store(&p.tma_o, s_o + c * kBlockM * 128, c * 64,
                                             t.q_row0 + t.m_block * kBlockM + 64 * g, t.head, t.batch);
        else
          ptx::cp_async_bulk_tensor_4d_store(&p.tma_o, s_o + c * kBlockM * 128, c * 64, t.m_block * kBlockM + 64 * g,
                                             t.head, t.batch);
      }
      ptx::cp_async_bulk_commit_group();
      QRelease<C>::after_store(sm.q_empty());
    }
  }
  // The deferred epilogue's second half: the previous tile's O staged and stored (C.defer_epilogue),
  // called under the next tile's QK(0), where a warpgroup sees no block of the next tile, and after
  // the CTA's last tile. The staging's barriers are per warpgroup (kBarEpilogueWG0 + g), so the
  // token ring and the other warpgroup are untouched by where it runs.
  __device__ __forceinline__ void store_prev() {
    if constexpr (C.defer_epilogue) {
      if (have_prev) {
        stage_o(prev, o_prev, threadIdx.x % 128);
        have_prev = false;
      }
    }
  }

  // C.sinks: row h's denominator with the head's sink logit s (log2 units: sink_log2) beside its
  // keys. The loop's invariant at the end of the tile: l = sum_j 2^(x_j - ref) and O = sum_j
  // 2^(x_j - ref) v_j over the row's visible keys (x_j the scores in log2 units, ref = row_max *
  // scale_log2 the exponent reference the last softmax used: the exact running maximum, as the sink
  // kernels have no lazy rescale), l = 0 and O = 0 where the row saw no key. The sink joins the sum
  // under the new reference m = max(ref, s): l' = l 2^(ref - m) + 2^(s - m), O / l' scaled by
  // 2^(ref - m), LSE = ln 2 (m + log2 l'). Equal to initialising the running state at (max = s,
  // sum = 1) and running the loop, without touching the loop (docs/DECISIONS.md, "Attention sinks:
  // the epilogue's denominator"); every factor is <= 1, so nothing overflows however far the sink
  // lies from the scores. A row without keys gets O = 0 and LSE = s (its denominator is the sink
  // alone); a sink of -inf is no sink (m = ref; with no key either: O = 0, LSE = -inf).
  __device__ __forceinline__ void sink_epilogue(const Tile& t, int h, float (&inv)[2]) {
    const float l = quad_sum(row_sum[h]);
    const bool no_key = row_max[h] == -INFINITY;
    const float ref = row_max[h] * scale_log2;
    const float m = no_key ? sink_log2 : fmaxf(ref, sink_log2);
    const bool empty = m == -INFINITY;  // no key and a sink of -inf
    const float beta = no_key ? 0.f : ptx::ex2_approx_ftz_f32(ref - m);
    const float l_all = empty ? 0.f : fmaf(l, beta, ptx::ex2_approx_ftz_f32(sink_log2 - m));
    // (rcp.approx, not a division: as epilogue() says.)
    inv[h] = l_all > 0.f ? beta * ptx::rcp_approx_ftz_f32(l_all) : 0.f;
    const int row = row0 + 8 * h;
    if (p.lse != nullptr && q4 == 0 && row < len_q(t)) {
      p.lse[lse_index(t, row)] = l_all > 0.f ? (m + log2f(l_all)) * 0.6931471805599453f : -INFINITY;
    }
  }

  __device__ __forceinline__ void epilogue(const Tile& t) {
    tr(trace::kEpilogueBegin, t.m_block);
    const int tid_in_wg = threadIdx.x % 128;
    float inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if constexpr (C.sinks) {
        sink_epilogue(t, h, inv);
        continue;
      }
      const float l = quad_sum(row_sum[h]);
      // (C.lazy_rescale: O by the sum of the P it was accumulated from; the LSE by the exact sum.)
      const float l_o = C.lazy_rescale ? quad_sum(row_sum_pv[h]) : l;
      // rcp.approx, not 1.f / l: the IEEE division calls a slow-path subroutine whose calling
      // convention made ptxas copy the O accumulator between registers around it in every epilogue
      // (and spill it at d256 in a tile loop). O is rounded to 16 bits after this; 1 ulp of fp32 is
      // far below that.
      inv[h] = l_o > 0.f ? ptx::rcp_approx_ftz_f32(l_o) : 0.f;
      const int row = row0 + 8 * h;
      if (p.lse != nullptr && q4 == 0 && row < len_q(t)) {
        const float lse = l > 0.f ? row_max[h] * p.softmax_scale + logf(l) : -INFINITY;
        p.lse[lse_index(t, row)] = lse;
      }
    }
    // Normalised in place: a persistent tile loop keeps O live into the next tile (its first PV is
    // one wgmma with scale-d 0, which the compiler sees as reading O), so a scaled copy would need
    // a second accumulator's worth of registers here.
    rescale_o(inv);
    if constexpr (C.varlen) {
      // Uniform per warpgroup: do all 64 rows of this warpgroup lie inside the sequence?
      if (t.m_block * kBlockM + 64 * g + 64 > t.len_q) {
        store_rows_guarded(t);
        // The Q buffer's release keeps its one arrival per warpgroup (nothing staged, nothing to wait for).
        if (tid_in_wg == 0) QRelease<C>::after_store(sm.q_empty());
        tr(trace::kEpilogueEnd, t.m_block);
        return;
      }
    }
    if constexpr (C.defer_epilogue) {
      // Staged under the next tile's QK(0) (store_prev), or after the CTA's last tile.
#pragma unroll
      for (int x = 0; x < kDv / 2; ++x) o_prev[x] = o[x];
      prev = t;
      have_prev = true;
      tr(trace::kEpilogueEnd, t.m_block);
      return;
    }
    stage_o(t, o, tid_in_wg);
    tr(trace::kEpilogueEnd, t.m_block);
  }

  // C.window: the tile's blocks [n_min, n_max), right to left (step j is block n_max - 1 - j): the
  // right edge's masked blocks [n_right, n_max) first, then the unmasked ones, then the left edge's
  // masked [n_min, n_left) (each edge found by a walk of a few blocks: it spans at most
  // block_m / block_n + 1 of them). kCap: the softcap in every step.
  template <bool kCap>
  __device__ __forceinline__ void run_local_blocks(const Tile& t) {
    startup<false, kCap>(t);
    const int nb = walk_blocks<C>(t);
    int n_right = t.n_max;
    while (n_right > t.n_min && right_needs_mask(t, n_right - 1)) --n_right;
    int n_left = t.n_min;
    while (n_left < n_right && left_needs_mask(t, n_left)) ++n_left;
    const int j_unmasked = max(1, t.n_max - n_right);
    const int j_left = max(j_unmasked, t.n_max - n_left);
    for (int j = 1; j < j_unmasked && j < nb; ++j) steady<true, kCap>(t, j);
    for (int j = j_unmasked; j < j_left && j < nb; ++j) steady<false, kCap>(t, j);
    for (int j = j_left; j < nb; ++j) steady<true, kCap>(t, j);
    drain(t);
  }

  __device__ __forceinline__ void run() {
    // Bootstrap half-credit of the token ring: once per CTA, by consumer 0.
    if constexpr (C.pingpong) {
      if (Tokens::primes(g)) ptx::bar_arrive(Tokens::barrier_of(0), Tokens::kParticipants);
    }
    RingState<L::kQSlots> q_read = RingState<L::kQSlots>::consumer_start();
    TileWalk<C> walk;
    TileFeed<C> feed{TileFeed<C>::Ring::consumer_start()};
    for (Tile t; C.tile_feed ? feed.take(sm, p, lane, &t) : walk.next(p, vt, &t);) {
      tr(trace::kTileBegin, t.index);
      row0 = t.m_block * kBlockM + 64 * g + r0;
      // (Read here, used in the epilogue: the load's latency hides behind the tile.)
      // (C.sinks_optional: no sinks array is a sink of -inf on every head, which sink_epilogue
      // takes as no sink; a uniform select, once per tile, the loop untouched.)
      if constexpr (C.sinks_optional)
        sink_log2 = p.sinks != nullptr ? p.sinks[t.head] * 1.4426950408889634f : -INFINITY;
      else if constexpr (C.sinks)
        sink_log2 = p.sinks[t.head] * 1.4426950408889634f;
      row_max[0] = row_max[1] = -INFINITY;
      // O and S start the tile dead: the tile's first PV and every QK begin with scale-d 0, which
      // overwrites the accumulator, but the compiler sees each wgmma as reading it ("+f") and would
      // otherwise keep the previous tile's O and S live through its epilogue and into this tile.
      // An empty asm that "defines" them ends those live ranges; it emits no instruction.
#pragma unroll
      for (int x = 0; x < kDv / 2; ++x) asm("" : "=f"(o[x]));
#pragma unroll
      for (int x = 0; x < kBlockN / 2; ++x) asm("" : "=f"(s_acc[x]));
      row_sum[0] = row_sum[1] = 0.f;
      if constexpr (C.lazy_rescale) row_sum_pv[0] = row_sum_pv[1] = 0.f;
      if constexpr (L::kQSlots == 2) {
        q_slot = q_read.stage;
        desc_q = ptx::smem_desc_advance(desc_q0, q_slot * L::kQBytes);
      }
      FLASHPTX_MBAR_WAIT(sm.q_full(q_slot), q_read.phase, "fa3 consumer: q_full");
      q_read.advance();
      // This warpgroup's own blocks [0, own): the right-to-left walk first passes the tile's blocks
      // it cannot see (skip_block), then runs startup, steady steps and drain on its own blocks, as
      // if its tile ended at `own` (mine.n_max). Every consumer makes t.n_max + 1 token handoffs per
      // tile either way (pingpong.h, TokenRing::handoffs_edges_in_ring).
      // (Broadcast from lane 0: own depends on the warpgroup index, which the compiler cannot prove
      // warp-uniform; the ring positions derived from it then left the uniform datapath, +86
      // instructions per d256 steady step. After the shuffle they stay there.)
      // half_first is broadcast the same way.
      int own = t.n_max;
      if constexpr (C.skip_blocks) own = __shfl_sync(0xffffffffu, t.n_max > 0 ? own_n_blocks(t) : 0, 0);
      bool half = false;
      if constexpr (C.half_first) half = __shfl_sync(0xffffffffu, own > 0 && half_first(t, own) ? 1 : 0, 0) != 0;
      for (int r = own; r < t.n_max; ++r) skip_block();
      Tile mine = t;
      mine.n_max = own;
      if (C.window ? walk_blocks<C>(mine) > 0 : own > 0) {
        if constexpr (C.window) {
          // The softcap chosen once per tile, each of its steps compiled without a branch.
          if (C.softcap && p.softcap_prescale != 0.f) run_local_blocks<C.softcap>(mine);
          else run_local_blocks<false>(mine);
        } else {
          if (C.half_first && half) startup<true>(mine);
          else startup<false>(mine);
          // Blocks [n_unmasked_end, own) need the mask: the first steps of the right-to-left walk.
          int n_unmasked_end = own;
          while (n_unmasked_end > 0 && block_needs_mask(mine, n_unmasked_end - 1)) --n_unmasked_end;
          const int j_unmasked = max(1, own - n_unmasked_end);
          // (The half-width block's PV stays 128 keys wide, P's right half zero: one steady-step body
          // for both; docs/DECISIONS.md, "The tile feed and the half-width diagonal".)
          for (int j = 1; j < j_unmasked && j < own; ++j) steady<true>(mine, j);
          for (int j = j_unmasked; j < own; ++j) steady<false>(mine, j);
          drain(mine);
        }
      } else {
        // The (J + 1)-th handoff of a tile none of whose blocks this warpgroup sees (J skips above).
        if (C.skip_blocks && t.n_max > 0) {
          take_token();
          pass_token();
        }
        // No admissible key for any row of this warpgroup (causal, seqlen_q > seqlen_k, or rows past
        // the sequence's end): O = 0, LSE = -inf.
        QRelease<C>::after_last_qk(sm.q_empty(q_slot), lane);  // Q was loaded but has no reader here
        store_prev();  // (no QK(0) here to hide it under)
#pragma unroll
        for (int x = 0; x < kDv / 2; ++x) o[x] = 0.f;
      }
      epilogue(t);
      tr(trace::kTileEnd, t.index);
    }
    store_prev();  // the deferred epilogue of the CTA's last tile
    // The last store's source is this CTA's shared memory: it must have been read before exit.
    if (threadIdx.x % 128 == 0) ptx::cp_async_bulk_wait_group_read<0>();
  }
};

// ==================================== THE KERNEL ==================================================
// vt: the sequence table of a varlen kernel (C.varlen), in its parameter block; nullptr otherwise.
template <FwdConfig C>
__device__ __forceinline__ void fwd_kernel_body(const FwdParams& p, const FwdVarlenTable* vt = nullptr) {
  using L = FwdLayout<C>;
  const FwdSmem<C> sm{smem_base_1024()};
  const int warpgroup = threadIdx.x / 128;

  Tracer tr;
#if defined(FLASHPTX_TRACE) && FLASHPTX_TRACE
  if (p.trace != nullptr && blockIdx.x < trace::kMaxCtas && threadIdx.x % 128 == 0)
    tr.lane = p.trace + static_cast<size_t>(blockIdx.x * trace::kLanes + warpgroup) * trace::kWordsPerLane;
#endif

  // Barrier initialisation: one thread, then the mbarrier-init fence and a CTA barrier, so that
  // every role (and the TMA unit) sees initialised barriers before first use (PTX ISA
  // "mbarrier.init", "fence.mbarrier_init"). Once per CTA: ring states, the Q phase and the
  // pingpong token all persist across work tiles.
  if (threadIdx.x == 0) {
    for (uint32_t s = 0; s < L::kQSlots; ++s) {
      ptx::mbarrier_init(sm.q_full(s), L::kFullArrivals);
      ptx::mbarrier_init(sm.q_empty(s), L::kQEmptyArrivals);
    }
    if constexpr (C.tile_feed) {
      for (uint32_t s = 0; s < L::kTileSlots; ++s) {
        ptx::mbarrier_init(sm.tile_full(s), L::kTileFullArrivals);
        ptx::mbarrier_init(sm.tile_empty(s), L::kTileEmptyArrivals);
      }
    }
    for (uint32_t s = 0; s < C.stages; ++s) {
      ptx::mbarrier_init(sm.k_full(s), L::kFullArrivals);
      ptx::mbarrier_init(sm.v_full(s), L::kFullArrivals);
      ptx::mbarrier_init(sm.k_empty(s), L::kEmptyArrivals);
      ptx::mbarrier_init(sm.v_empty(s), L::kEmptyArrivals);
    }
    ptx::fence_mbarrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    ptx::setmaxnreg_dec<L::kProducerRegs>();
    if (threadIdx.x == 0) Producer<C>{p, sm, tr, vt}.run();
    return;
  }
  ptx::setmaxnreg_inc<L::kConsumerRegs>();
  Consumer<C>(p, sm, tr, vt, warpgroup - 1).run();
}

}  // namespace flashptx::fa3
