// FlashAttention-3 FP8 forward on Hopper (sm_90a), by hand: e4m3 Q, K, V; bf16 O; fp32 LSE.
// Protocols: docs/PROTOCOLS.md ("FP8 layouts", "The K/V rings", "Hopper prerequisites");
// the FA3 paper (Shah et al., arXiv 2407.08608, section 3.3); PTX ISA sections cited inline. The
// CPU model of the layouts this file uses: tools/models/fp8.{h,cpp} (transpose_tile_16x16, the
// selectors 0x6420 / 0x7531, transpose_sigma, a_fragment_col / c_fragment_col).
//
// A work tile is 128 query rows (= one Q descale block) of one (batch, head) against its admissible
// K/V blocks of block_n keys, visited right to left (masked blocks first). A CTA runs tiles
// blockIdx.x, blockIdx.x + gridDim.x, ... of the linear order (longest-first under a causal mask):
// the host launches one CTA per SM (persistent) or one per tile (src/sm90/fa3_fwd_fp8.cu launch_fp8
// says when); the code is the same. The paired kernels (Fp8Config::paired, causal launches) walk
// instead the paired static schedule: units of tiles m and M-1-m dealt round robin, one CTA per SM.
// The two consumer warpgroups issue their GEMMs in turn (pingpong, as the bf16 forward); the token
// ring carries over from tile to tile.
//
// Roles:
//   warpgroup 0   PRODUCER   setmaxnreg.dec 56.
//                 thread 0 (the leader) issues every TMA load: K(r) into the K ring, each tile's
//                 Q into its Q slot, V(r) into the raw V ring (or, V^T given, straight into the Vt
//                 ring), along the CTA's stream of blocks across its tiles, stages - 1 blocks
//                 ahead of the warpgroup's transpose.
//                 all 128 threads transpose each raw V stage into a Vt stage (ldmatrix .trans,
//                 prmt, stmatrix; below), fence, meet at named barrier 1, and the leader arrives
//                 on vt_full.
//   warpgroup 1,2 CONSUMERS  setmaxnreg.inc 224; consumer g owns query rows [64g, 64g+64):
//                 S = Q K^T (wgmma SS, e4m3 x e4m3, fp32), online softmax in base 2 with the
//                 descales in the exponent's scale and the 2^8 offset, P -> e4m3 in registers,
//                 O += P Vt^T (wgmma RS, e4m3), O stored from registers (bf16), LSE.
//
// Barriers (mbarriers; slots and counts in Fp8Layout, src/sm90/fa3_fwd_fp8_config.h):
//   q_full[q]           leader arrive.expect_tx(Q bytes) + TMA complete_tx; Q slot q = i % 2 for the
//                       CTA's i-th tile with keys (double-buffered across tiles)
//   q_empty[q]          one arrive per consumer warp after the tile's last PV retired (every QK of the
//                       tile retired before it); the leader waits it before loading tile i + 2's Q
//   k_full[s]           leader arrive.expect_tx + TMA;  k_empty[s]: one arrive per consumer warp
//                       after the wgmma wait that retires the QK reading stage s
//   v_full[s]           leader arrive.expect_tx + TMA of the raw V stage; waited by the producer
//                       warpgroup only. The raw stage is refilled by the leader after the transpose
//                       that read it has passed named barrier 1 (program order of the leader), every
//                       reader having fenced (generic reads -> async-proxy write: docs/PROTOCOLS.md,
//                       "Hopper prerequisites").
//   vt_full[s]          the leader's arrive after named barrier 1 of the transpose of stage s: all
//                       128 threads' stmatrix writes done and each followed by fence.proxy.async
//                       (generic writes -> async-proxy reads by wgmma). With V^T given: leader
//                       arrive.expect_tx + TMA.
//   vt_empty[s]         one arrive per consumer warp after the wgmma wait that retires the PV
//                       reading Vt stage s; the producer waits it before writing the stage again.
// Named barrier 1: the producer warpgroup's 128 threads, once per transposed stage.
// Named barriers 2 + g (src/protocol/pingpong.h, docs/PROTOCOLS.md "Pingpong"): the token ring of the
// two consumer warpgroups, 256 threads per generation (consumer g syncs before issuing a steady
// step's QK and PV, its predecessor arrives after issuing its own); primed once by consumer 0.
//
// Stages and phases: K, raw V and Vt rings share one stage coordinate (block r in stage r % stages).
// Consumers: steady step j issues QK(j) then PV(j-1) (PV lags QK by one block), wgmma groups as in
// the bf16 forward: wait_group(1) retires QK(j) (K released), softmax(j) overlaps PV(j-1),
// wait_group(0) retires PV(j-1) (Vt released, O rescaled, P overwritten). ptxas keeps all the
// step's exponentials before the PV wait only because of pin_before_pv_wait (below; docs/DECISIONS.md,
// "FP8: the exponentials pinned before the PV wait"). SASS-pinned: sass_golden/sm_90a/fa3_fwd_fp8.check.inc
// holds that order.
//
// Scales (docs/PROTOCOLS.md "FP8 layouts", invariants): with descales dQ (the tile's Q block), dK_n and
// dV_n (the K/V block's), the scores are softmax_scale * dQ * dK_n * (q8 k8^T): the product goes into
// the exponent's scale per block (scale_n below), before the row max. The row max m is kept in the
// scaled base-2 unit. P = 2^(s*scale_n - m + 8) in [0, 256] uses e4m3's range; the row sum l adds the
// same fp32 values (before rounding to e4m3), so the 2^8 cancels in O = acc / l and LSE takes -8 ln 2.
// dV_n varies per block under per-block scales, so it cannot be applied once at the end: the
// accumulator is kept in the unit of the last block's dV, and the online rescale that multiplies O
// by alpha also multiplies by dV_prev / dV_n before PV(n) adds (exact algebra; one factor where the
// bf16 kernel has alpha). At the end O = acc * dV_last / l.
#pragma once
#include <cuda.h>
#include <cstdint>

#include "ptx/barrier.cuh"
#include "ptx/cvt.cuh"
#include "ptx/fence.cuh"
#include "ptx/ldst.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "src/protocol/pingpong.h"
#include "src/protocol/ring.h"
#include "src/protocol/tile_scheduler.h"
#include "src/sm90/common.cuh"
#include "src/sm90/fa3_fwd_fp8_config.h"
#include "src/sm90/fa3_fwd_fp8_math.h"

#if defined(__CUDA_ARCH__) && !FLASHPTX_HAS_SM90A
#error "src/sm90/fa3_fwd_fp8.cuh is Hopper code: compile it with -gencode arch=compute_90a,code=sm_90a"
#endif

namespace flashptx::fa3::fp8 {

// The e4m3 tiles' swizzle mode for a row width (swizzle_unit in the config header gives the pattern).
template <int RowBytes>
struct Swz {
  static_assert(RowBytes == 64 || RowBytes == 128, "64- or 128-byte swizzled rows");
  static constexpr ptx::Swizzle kMode = RowBytes == 128 ? ptx::Swizzle::k128B : ptx::Swizzle::k64B;
  static constexpr uint32_t kAtomBytes = 8 * RowBytes;  // SBO: 8 rows (one swizzle repeat)
};

template <Fp8Config C>
struct Smem {
  using L = Fp8Layout<C>;
  uint32_t base;  // 1024-aligned shared::cta address
  __device__ __forceinline__ uint32_t q(uint32_t slot) const { return base + L::kOffQ + slot * L::kQBytes; }
  __device__ __forceinline__ uint32_t k(uint32_t s) const { return base + L::kOffK + s * L::kKBytes; }
  __device__ __forceinline__ uint32_t v(uint32_t s) const { return base + L::kOffV + s * L::kVBytes; }
  __device__ __forceinline__ uint32_t vt(uint32_t s) const { return base + L::kOffVt + s * L::kVtBytes; }
  __device__ __forceinline__ uint32_t bar(uint32_t slot) const { return base + L::kOffBar + 8u * slot; }
  __device__ __forceinline__ uint32_t q_full(uint32_t slot) const { return bar(L::kBarQFull + slot); }
  __device__ __forceinline__ uint32_t q_empty(uint32_t slot) const { return bar(L::kBarQEmpty + slot); }
  __device__ __forceinline__ uint32_t k_full(uint32_t s) const { return bar(L::kBarKFull + s); }
  __device__ __forceinline__ uint32_t k_empty(uint32_t s) const { return bar(L::kBarKEmpty + s); }
  __device__ __forceinline__ uint32_t v_full(uint32_t s) const { return bar(L::kBarVFull + s); }
  __device__ __forceinline__ uint32_t vt_full(uint32_t s) const { return bar(L::kBarVtFull + s); }
  __device__ __forceinline__ uint32_t vt_empty(uint32_t s) const { return bar(L::kBarVtEmpty + s); }
};

// ---- the rings, as their users see them (src/protocol/ring.h for the stage and phase) --------
// Every ring object knows its barriers (the Smem slots above), the names its waits report in
// bounded-wait builds, and which side of the ring it is on, so that a step reads wait / issue /
// release. K, raw V and Vt share one stage coordinate per role: block r of the CTA's stream is in
// stage r % stages of each. Layout (SASS-pinned: the fa3_fwd_fp8 goldens; docs/DECISIONS.md, "Rings
// that know their barriers"): the coordinate is each object's first member, and the producer's
// rings take the Smem as an argument instead of holding it.
enum class Fp8Ring { kK, kVt };

// A consumer's K or Vt ring: wait_full, read the stage, release, which advances. k_full[s] /
// vt_full[s] of the current generation certify that the stage's bytes are in shared memory (K: the
// leader's TMA complete_tx; Vt: the transpose's fenced writes, or V^T's TMA); release is one arrive
// per warp on k_empty[s] / vt_empty[s], after this warp's wgmma wait retired the stage's last reader.
template <Fp8Config C, Fp8Ring R>
struct ReadRing {
  RingState<C.stages> at = RingState<C.stages>::consumer_start();
  const Smem<C>& sm;
  __device__ __forceinline__ uint32_t stage() const { return at.stage; }
  __device__ __forceinline__ void wait_full() const {
    const uint32_t full_bar = R == Fp8Ring::kK ? sm.k_full(at.stage) : sm.vt_full(at.stage);
    FLASHPTX_MBAR_WAIT(full_bar, at.phase, R == Fp8Ring::kK ? "fa3 fp8 consumer: k_full" : "fa3 fp8 consumer: vt_full");
  }
  __device__ __forceinline__ void release(int lane) {
    const uint32_t empty_bar = R == Fp8Ring::kK ? sm.k_empty(at.stage) : sm.vt_empty(at.stage);
    if (lane == 0) ptx::mbarrier_arrive(empty_bar);
    at.advance();
  }
};

// The leader's load position (one generation ahead: producer_start). Before it writes the K stage
// it waits the consumers' release of it (k_empty); with V^T given, the same for the Vt stage
// (vt_empty). The raw V stage has no empty barrier: its reader is this warpgroup's own transpose,
// ordered by program order and named barrier 1 (Producer::issue).
template <Fp8Config C>
struct LoadRing {
  RingState<C.stages> at = RingState<C.stages>::producer_start();
  __device__ __forceinline__ uint32_t stage() const { return at.stage; }
  __device__ __forceinline__ void wait_k_empty(const Smem<C>& sm) const {
    FLASHPTX_MBAR_WAIT(sm.k_empty(at.stage), at.phase, "fa3 fp8 producer: k_empty");
  }
  __device__ __forceinline__ void wait_vt_empty(const Smem<C>& sm) const {
    FLASHPTX_MBAR_WAIT(sm.vt_empty(at.stage), at.phase, "fa3 fp8 producer: vt_empty (V^T load)");
  }
  __device__ __forceinline__ void advance() { at.advance(); }
};

// The transpose's position: the consumer of the raw V ring (v_full, waited one generation behind
// the producer-start phase) and the producer of the Vt ring (vt_empty, then vt_full published by
// the leader after named barrier 1, which advances).
template <Fp8Config C>
struct TransposeRing {
  RingState<C.stages> at = RingState<C.stages>::producer_start();
  __device__ __forceinline__ uint32_t stage() const { return at.stage; }
  __device__ __forceinline__ void wait_raw_full(const Smem<C>& sm) const {
    FLASHPTX_MBAR_WAIT(sm.v_full(at.stage), at.phase ^ 1u, "fa3 fp8 transpose: v_full");
  }
  __device__ __forceinline__ void wait_vt_empty(const Smem<C>& sm) const {
    FLASHPTX_MBAR_WAIT(sm.vt_empty(at.stage), at.phase, "fa3 fp8 transpose: vt_empty");
  }
  __device__ __forceinline__ void publish(const Smem<C>& sm, bool leader) {
    if (leader) ptx::mbarrier_arrive(sm.vt_full(at.stage));
    at.advance();
  }
};

struct Tile {
  int m_block, head, head_kv, batch;
  int n_max;  // admissible K/V blocks [0, n_max), visited right to left
};

// The tile at (m_block, head, batch): its kv head and its admissible K/V blocks.
template <Fp8Config C>
__device__ __forceinline__ Tile tile_at(const FwdFp8Params& p, const TileCoord& tc) {
  using L = Fp8Layout<C>;
  Tile t;
  t.m_block = tc.m_block;
  t.head = tc.head;
  t.batch = tc.batch;
  t.head_kv = tc.head / (p.heads_q / p.heads_kv);
  // Causal masks are aligned to the bottom-right: query row r sees key c iff c <= r + (seqlen_k - seqlen_q).
  t.n_max = p.causal ? causal_n_blocks(tc.m_block, L::kBlockM, C.block_n, p.seqlen_q, p.seqlen_k)
                     : n_blocks(C.block_n, p.seqlen_k);
  return t;
}
// Linear tile `idx` (src/protocol/tile_scheduler.h: m blocks fastest, longest first under a
// causal mask).
template <Fp8Config C>
__device__ __forceinline__ Tile tile_of(const FwdFp8Params& p, int idx) {
  return tile_at<C>(p, tile_from_linear(idx, p.num_m_blocks, p.heads_q, p.batch, p.causal != 0));
}
// The paired walk's slot k of this CTA (paired_slot): its tile's coordinate in *tc, or kEmpty (the
// short half of an odd M's middle pair; the slot after it is a unit's long tile or the end), or kDone.
__device__ __forceinline__ SlotKind paired_tile(const FwdFp8Params& p, int k, TileCoord* tc) {
  return paired_slot(static_cast<int>(blockIdx.x), k, static_cast<int>(gridDim.x), p.num_m_blocks, p.heads_q, p.batch,
                     tc);
}

// ==================================== PRODUCER ====================================================
template <Fp8Config C>
struct Producer {
  using L = Fp8Layout<C>;
  static constexpr int kD = C.head_dim, kBlockN = C.block_n;
  const FwdFp8Params& p;
  const Smem<C>& sm;
  const int tid;  // 0..127
  // The transpose's per-thread addresses, relative to the stage bases: this warp's units (below)
  // are fixed for the kernel's life, so their swizzled offsets are computed once, not per block.
  static constexpr int kKeyUnits = kBlockN / 16, kUnits = kKeyUnits * (kD / 32), kUnitsPerWarp = kUnits / 4;
  static_assert(kUnits % 4 == 0, "every producer warp transposes the same number of units");
  uint32_t src_off[kUnitsPerWarp], dst_off[kUnitsPerWarp];
  LoadRing<C> load;     // the leader's issue position
  TransposeRing<C> tp;  // the transpose's position

  // The CTA's stream of K/V blocks: its tiles blockIdx.x, + gridDim.x, ... (static round robin over
  // the linear tile order), in each the admissible blocks right to left; tiles without keys are
  // skipped (their consumers write O = 0 and load nothing). qi counts the keyed tiles: Q slot qi % 2.
  struct StreamPos {
    int tile, r, qi;
    Tile t;
  };
  // The paired walk (C.paired): tile is the CTA's slot index k (paired_tile), -1 once the walk is done.
  __device__ __forceinline__ void seek(StreamPos& s) const {
    if constexpr (C.paired) {
      for (;; ++s.tile) {
        TileCoord tc;
        const SlotKind kind = paired_tile(p, s.tile, &tc);
        if (kind == SlotKind::kDone) {
          s.tile = -1;
          return;
        }
        if (kind == SlotKind::kEmpty) continue;
        s.t = tile_at<C>(p, tc);
        if (s.t.n_max > 0) return;
      }
    } else {
      for (; s.tile < p.num_tiles; s.tile += static_cast<int>(gridDim.x)) {
        s.t = tile_of<C>(p, s.tile);
        if (s.t.n_max > 0) return;
      }
    }
  }
  __device__ __forceinline__ StreamPos stream_start() const {
    StreamPos s{C.paired ? 0 : static_cast<int>(blockIdx.x), 0, 0, Tile{}};
    seek(s);
    return s;
  }
  __device__ __forceinline__ bool done(const StreamPos& s) const {
    if constexpr (C.paired) return s.tile < 0;
    else return s.tile >= p.num_tiles;
  }
  __device__ __forceinline__ void next(StreamPos& s) const {
    if (++s.r < s.t.n_max) return;
    s.r = 0;
    ++s.qi;
    s.tile += C.paired ? 1 : static_cast<int>(gridDim.x);
    seek(s);
  }

  // Q of keyed tile qi into slot qi % 2, once the consumers released what that slot held (tile qi - 2;
  // producer-start parity: the first use of each slot passes at once).
  __device__ __forceinline__ void load_q(const Tile& t, int qi) {
    const uint32_t slot = static_cast<uint32_t>(qi) & 1u, phase = (static_cast<uint32_t>(qi) >> 1) & 1u;
    FLASHPTX_MBAR_WAIT(sm.q_empty(slot), phase ^ 1u, "fa3 fp8 producer: q_empty");
    ptx::mbarrier_arrive_expect_tx(sm.q_full(slot), L::kQBytes);
    for (int c = 0; c < L::kQKChunks; ++c)
      ptx::cp_async_bulk_tensor_4d_load(sm.q(slot) + c * L::kBlockM * L::kQKChunkBytes, &p.tma_q, sm.q_full(slot),
                                        c * L::kQKChunkBytes, t.m_block * L::kBlockM, t.head, t.batch);
  }

  // The leader: block r of the stream position's tile: its K (and, r = 0, the tile's Q), and its V
  // (raw, or V^T into the Vt ring).
  __device__ __forceinline__ void issue(const StreamPos& sp) {
    const Tile& t = sp.t;
    const int r = sp.r;
    const int n = t.n_max - 1 - r;
    const uint32_t s = load.stage();
    load.wait_k_empty(sm);
    ptx::mbarrier_arrive_expect_tx(sm.k_full(s), L::kKBytes);
    for (int c = 0; c < L::kQKChunks; ++c)
      ptx::cp_async_bulk_tensor_4d_load(sm.k(s) + c * kBlockN * L::kQKChunkBytes, &p.tma_k, sm.k_full(s),
                                        c * L::kQKChunkBytes, n * kBlockN, t.head_kv, t.batch);
    if (r == 0) load_q(t, sp.qi);  // Q's latency hides behind K's
    if (p.v_keys_contiguous) {
      // V^T [batch, heads_kv, d, seqlen_k]: box (block_n keys, d rows) lands K-major in the Vt stage.
      load.wait_vt_empty(sm);
      ptx::mbarrier_arrive_expect_tx(sm.vt_full(s), L::kVtBytes);
      ptx::cp_async_bulk_tensor_4d_load(sm.vt(s), &p.tma_v, sm.vt_full(s), n * kBlockN, 0, t.head_kv, t.batch);
    } else {
      // The raw stage s was last read by the transpose of the stream's block x - stages (x this
      // block's place in the CTA's stream). run() issues block x after the transpose of block
      // x - stages (stages - 1 blocks of lookahead): that transpose passed named barrier 1 with
      // every reader fenced, in this thread's program order, so the TMA write cannot overtake its
      // reads.
      // In K's layout (chunks of kQKChunkBytes columns, swizzled: raw_v_offset), like K's load.
      ptx::mbarrier_arrive_expect_tx(sm.v_full(s), L::kVBytes);
      for (int c = 0; c < L::kQKChunks; ++c)
        ptx::cp_async_bulk_tensor_4d_load(sm.v(s) + c * kBlockN * L::kQKChunkBytes, &p.tma_v, sm.v_full(s),
                                          c * L::kQKChunkBytes, n * kBlockN, t.head_kv, t.batch);
    }
    load.advance();
  }

  // All 128 threads: raw V stage (keys x d in K's swizzled layout, raw_v_offset) -> Vt stage (d x
  // keys, K-major, swizzled). Both sides conflict-free: each LDSM matrix's 8 rows (8 keys, one
  // 16-byte unit) and each STSM matrix's 8 rows sit in 8 different bank groups. Unit (kk, jj): keys [16kk, 16kk+16) x head dims [32jj, 32jj+32), one warp:
  //   ldmatrix.x4.trans  matrices {keys 0-7, 8-15} x {dims 0-15, 16-31} of 16-bit units (byte pairs);
  //                      thread 4c+q gets units (key 2q, dim pair c) and (2q+1, c) of each
  //   prmt 0x6420/0x7531 split the byte pairs: even dim 2c / odd dim 2c+1, keys {2q, 2q+1, 2q+8,
  //                      2q+9} (tools/models/fp8.cpp transpose_tile_16x16: the only selectors that work)
  //   stmatrix.x4        row c of each result matrix -> Vt rows 2c (even) and 2c+1 (odd), bytes
  //                      [16kk, 16kk+16), 16-byte unit kk of the swizzled row
  // so Vt[d][16kk + p] = V[16kk + sigma(p)][d] with sigma = transpose_sigma (tools/models/fp8.h), the
  // key order the consumers' P fragment has without any exchange (convert_p below).
  __device__ __forceinline__ void transpose() {
    const uint32_t s = tp.stage();
    tp.wait_raw_full(sm);
    tp.wait_vt_empty(sm);
    // ldmatrix / stmatrix are .sync.aligned: the warp reconverges after the waits (and, in warp 0,
    // after the leader's issue) before the first of them.
    __syncwarp();
    const uint32_t src = sm.v(s), dst = sm.vt(s);
#pragma unroll
    for (int i = 0; i < kUnitsPerWarp; ++i) {
      uint32_t r0, r1, r2, r3;
      ptx::ldmatrix_x4_trans(src + src_off[i], r0, r1, r2, r3);
      const uint32_t e0 = ptx::prmt<0x6420>(r0, r1), o0 = ptx::prmt<0x7531>(r0, r1);
      const uint32_t e1 = ptx::prmt<0x6420>(r2, r3), o1 = ptx::prmt<0x7531>(r2, r3);
      ptx::stmatrix_x4(dst + dst_off[i], e0, o0, e1, o1);
    }
    // Every thread fences its own generic accesses before the hand-over to the async proxy: its
    // stmatrix writes (read next by the PV wgmma) and its ldmatrix reads (the raw stage is next
    // written by TMA). PTX ISA "Memory Consistency Model: proxies"; docs/PROTOCOLS.md, "Hopper
    // prerequisites". Then the 128-thread barrier: after it, the whole stage is written.
    ptx::fence_proxy_async_shared_cta();
    ptx::bar_sync(L::kBarTranspose, 128);
    tp.publish(sm, tid == 0);
  }

  // The leader keeps the loads stages - 1 blocks ahead of the transpose along the CTA's stream of
  // blocks (across tile boundaries: the next tile's Q, K and V are in flight while the consumers
  // finish this one): before transposing block x it issues block x + stages - 1, into the K stage
  // QK(x - 1) read (k_empty) and the raw V stage the transpose of block x - 1 read (program order).
  __device__ __forceinline__ void run() {
    // Warp w transposes units w, w + 4, ...: unit u = keys [16kk, 16kk+16) x dims [32jj, 32jj+32),
    // kk = u % kKeyUnits, jj = u / kKeyUnits.
    const int warp = tid / 32, lane = tid % 32;
#pragma unroll
    for (int i = 0; i < kUnitsPerWarp; ++i) {
      const int u = warp + 4 * i, kk = u % kKeyUnits, jj = u / kKeyUnits;
      src_off[i] = transpose_src(kk, jj, lane, kD, kBlockN);
      dst_off[i] = transpose_dst(kk, jj, lane, kD, kBlockN);
    }
    constexpr int kAhead = C.stages - 1;
    StreamPos ld = stream_start();  // the leader's next load
    if (tid == 0)
      for (int a = 0; a < kAhead && !done(ld); ++a) {
        issue(ld);
        next(ld);
      }
    for (StreamPos x = stream_start(); !done(x); next(x)) {
      if (tid == 0 && !done(ld)) {
        issue(ld);
        next(ld);
      }
      if (!p.v_keys_contiguous) transpose();
    }
  }
};

// ==================================== CONSUMER ====================================================
template <Fp8Config C>
struct Consumer {
  using L = Fp8Layout<C>;
  using QKSwz = Swz<L::kQKChunkBytes>;
  using Tokens = TokenRing<L::kConsumerWGs>;
  static constexpr int kD = C.head_dim, kBlockN = C.block_n, kBlockM = L::kBlockM;
  static constexpr int kKPerChunk = L::kQKChunkBytes / 32;  // k32 steps per swizzled Q/K chunk

  const FwdFp8Params& p;
  const Smem<C>& sm;
  const int g;     // consumer index 0..1
  const int lane;
  // wgmma D fragment: this thread holds rows r0 and r0 + 8 of the warpgroup's 64, columns
  // 8i + 2q + {0, 1} of every n8 block i.
  const int q4, r0;
  // The launch's lengths and mask, kept in registers (read from the parameter block once, not per
  // masked element).
  const int seqlen_q, seqlen_k;
  const bool causal;
  const int diag;  // seqlen_k - seqlen_q: the bottom-right causal alignment offset
  uint64_t desc_q = 0;  // this warpgroup's 64 Q rows of the tile's Q slot, K-major

  float o[kD / 2];                   // O accumulator, in the unit of dv_cur
  float s_acc[kBlockN / 2];          // S, then P in fp32
  uint32_t pfrag[kBlockN / 32][4];   // P in e4m3, the RS A fragment of each k32 step
  float row_max[2], row_sum[2];      // row max in scaled base-2 units; per-thread partial sums
  float dv_cur = 1.f;                // V descale of the block whose P is in pfrag
  ReadRing<C, Fp8Ring::kK> k_ring{RingState<C.stages>::consumer_start(), sm};
  ReadRing<C, Fp8Ring::kVt> v_ring{RingState<C.stages>::consumer_start(), sm};
  Tile t;
  int row0 = 0;  // query row (in the sequence) of r0
  float dq = 1.f;

  __device__ __forceinline__ Consumer(const FwdFp8Params& p_, const Smem<C>& sm_, int g_)
      : p(p_), sm(sm_), g(g_), lane(threadIdx.x % 32), q4(lane % 4), r0(16 * ((threadIdx.x % 128) / 32) + lane / 4),
        seqlen_q(p_.seqlen_q), seqlen_k(p_.seqlen_k), causal(p_.causal != 0), diag(p_.seqlen_k - p_.seqlen_q) {}

  // ---- descales --------------------------------------------------------------------------
  // The tile's (batch, kv head) rows of the K and V descales, set once per tile (run()).
  const float* dk_row = nullptr;
  const float* dv_row = nullptr;
  __device__ __forceinline__ float dk_of(int n) const { return dk_row[(n * kBlockN / kFp8ScaleRows) * p.ik.sblk]; }
  __device__ __forceinline__ float dv_of(int n) const {
    return descale_or_one(dv_row[(n * kBlockN / kFp8ScaleRows) * p.iv.sblk]);
  }
  // The next block's descales, loaded one step ahead (prefetch_descales): a load issued at the step
  // that uses it put its latency (an L1 or L2 hit, every step) in front of the step's QK issue.
  float dk_next = 1.f, dv_next = 1.f;
  __device__ __forceinline__ void prefetch_descales(int n) {
    dk_next = dk_of(n);
    dv_next = dv_of(n);
  }

  // ---- the two GEMMs ----------------------------------------------------------------------
  // S = Q K^T: kD/32 k-steps of 32 bytes, kKPerChunk per swizzled chunk (+32 B each).
  __device__ __forceinline__ void issue_qk(uint32_t k_stage) {
    const uint64_t desc_k = ptx::make_smem_desc(sm.k(k_stage), 0, QKSwz::kAtomBytes, QKSwz::kMode);
    ptx::wgmma_fence_operand(s_acc);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kD / 32; ++k) {
      const uint32_t a_off = (k / kKPerChunk) * kBlockM * L::kQKChunkBytes + (k % kKPerChunk) * 32;
      const uint32_t b_off = (k / kKPerChunk) * kBlockN * L::kQKChunkBytes + (k % kKPerChunk) * 32;
      ptx::wgmma_m64k32_f32_fp8_ss<kBlockN, 0, 0>(s_acc, ptx::smem_desc_advance(desc_q, a_off),
                                                  ptx::smem_desc_advance(desc_k, b_off), k > 0 ? 1u : 0u);
    }
    ptx::wgmma_commit_group();
    ptx::wgmma_fence_operand(s_acc);
  }
  // O (+)= P Vt^T: kBlockN/32 k-steps over the keys; Vt is K-major (keys contiguous) in chunks of
  // 128 keys (vt_offset): step k reads chunk 32k / 128 at +32 B per step inside it, with the chunk's
  // row width and swizzle (128B, or 64B for a 64-key chunk).
  template <int kChunk>
  __device__ __forceinline__ uint64_t vt_desc(uint32_t vt_stage) const {
    using S = Swz<vt_chunk_keys(kChunk, kBlockN)>;
    return ptx::make_smem_desc(sm.vt(vt_stage) + kChunk * kD * 128, 0, S::kAtomBytes, S::kMode);
  }
  __device__ __forceinline__ void issue_pv(uint32_t vt_stage, bool accumulate) {
    const uint64_t desc_v0 = vt_desc<0>(vt_stage);
    const uint64_t desc_v1 = vt_desc<L::kVtChunks - 1>(vt_stage);
    ptx::wgmma_fence_operand(o);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kBlockN / 32; ++k)
      ptx::wgmma_m64k32_f32_fp8_rs<kD, 0, 0>(o, pfrag[k],
                                             ptx::smem_desc_advance(k < 4 ? desc_v0 : desc_v1, (k % 4) * 32),
                                             (accumulate || k > 0) ? 1u : 0u);
    ptx::wgmma_commit_group();
    ptx::wgmma_fence_operand(o);
  }
  // wgmma.wait_group N (PTX ISA "wgmma.wait_group"): all but the N newest groups have completed:
  // their accumulators are readable, their shared-memory operands reusable.
  template <int kPending>
  __device__ __forceinline__ void retire_qk() {
    ptx::wgmma_wait_group<kPending>();
    ptx::wgmma_fence_operand(s_acc);
  }
  __device__ __forceinline__ void retire_pv() {
    ptx::wgmma_wait_group<0>();
    ptx::wgmma_fence_operand(o);
  }

  // ---- the pingpong token (src/protocol/pingpong.h; docs/PROTOCOLS.md "Pingpong") ------------
  // Orders the two warpgroups' tensor-core issue only (one warpgroup's softmax runs under the
  // other's GEMMs); it certifies nothing about K/V readiness, which stays the mbarrier rings'.
  __device__ __forceinline__ void take_token() {
    ptx::bar_sync(Tokens::barrier_of(g), Tokens::kParticipants);  // my turn to issue
  }
  __device__ __forceinline__ void pass_token() {
    ptx::bar_arrive(Tokens::barrier_of(Tokens::next(g)), Tokens::kParticipants);
  }

  // ---- softmax ------------------------------------------------------------------------------
  __device__ __forceinline__ bool block_needs_mask(int n) const {
    return (n + 1) * kBlockN > seqlen_k || (causal && (n + 1) * kBlockN - 1 > t.m_block * kBlockM + diag);
  }
  __device__ __forceinline__ void apply_mask(int n) {
#pragma unroll
    for (int i = 0; i < kBlockN / 8; ++i) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = n * kBlockN + 8 * i + 2 * q4 + (e & 1);
        const int row = row0 + 8 * (e >> 1);
        const bool masked = col >= seqlen_k || (causal && col > row + diag);
        s_acc[4 * i + e] = masked ? -INFINITY : s_acc[4 * i + e];
      }
    }
  }
  // Online softmax of block n in base 2 with the block's scale and the 2^8 offset. alpha: the
  // factor of the running state (O, l) of the two rows.
  template <bool kMasked>
  __device__ __forceinline__ void softmax(int n, float scale, float (&alpha)[2]) {
    if constexpr (kMasked) apply_mask(n);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = -INFINITY;
#pragma unroll
      for (int i = 0; i < kBlockN / 8; ++i) mx = fmaxf(mx, fmaxf(s_acc[4 * i + 2 * h], s_acc[4 * i + 2 * h + 1]));
      mx = quad_max(mx);
      float bias;
      alpha[h] = row_update(row_max[h], mx, scale, &bias, [](float x) { return ptx::ex2_approx_ftz_f32(x); });
      float sum = 0.f;
#pragma unroll
      for (int i = 0; i < kBlockN / 8; ++i) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& s = s_acc[4 * i + 2 * h + e];
          s = ptx::ex2_approx_ftz_f32(fmaf(s, scale, bias));
          sum += s;
        }
      }
      row_sum[h] = row_sum[h] * alpha[h] + sum;
    }
  }
  // P (fp32, the D fragment of S) -> e4m3, repaired into the A fragment of the FP8 RS wgmma by byte
  // permutes, without an exchange between threads. The A fragment of k32 step k wants, per thread
  // (lane = 4 x row-in-8 + q): a[0] = row r0, 4 key slots 4q..4q+3; a[1] = row r0 + 8, same slots;
  // a[2], a[3] = the same for slots 16 + 4q.. (tools/models/fp8.cpp a_fragment_col). This thread holds
  // keys 2q, 2q+1 (n8 block 0) and 8+2q, 9+2q (block 1) of each 16: packed in that order, slot 4q+i
  // holds key sigma(4q+i) (transpose_sigma), the order the in-kernel transpose left in Vt, so the
  // permutation cancels in the reduction (docs/PROTOCOLS.md "FP8 layouts"). With V^T given (keys in
  // natural order in Vt), the slots are put in natural order by two shuffles per word (below).
  __device__ __forceinline__ uint32_t pack4(float a, float b, float c, float d) const {
    // bytes {a, b, c, d}
    return ptx::mov_b32_b16x2(ptx::cvt_rn_satfinite_e4m3x2_f32(a, b), ptx::cvt_rn_satfinite_e4m3x2_f32(c, d));
  }
  __device__ __forceinline__ void convert_p(uint32_t (&pf)[kBlockN / 32][4]) const {
#pragma unroll
    for (int k = 0; k < kBlockN / 32; ++k)
#pragma unroll
      for (int w = 0; w < 4; ++w)
        pf[k][w] = pack4(s_acc[p_acc_index(k, w, 0)], s_acc[p_acc_index(k, w, 1)], s_acc[p_acc_index(k, w, 2)],
                            s_acc[p_acc_index(k, w, 3)]);
    if (p.v_keys_contiguous) {
      // Natural order (fa3_fwd_fp8_config.h natural_src / natural_selector).
      const int base = lane & ~3;
      const int src_x = base | natural_src(q4, 0), src_y = base | natural_src(q4, 1);
      const uint32_t sel = natural_selector(q4);
#pragma unroll
      for (int k = 0; k < kBlockN / 32; ++k)
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          const uint32_t x = __shfl_sync(0xffffffffu, pf[k][w], src_x);
          const uint32_t y = __shfl_sync(0xffffffffu, pf[k][w], src_y);
          pf[k][w] = ptx::prmt(x, y, sel);
        }
    }
  }
  // C.skip_unit_rescale: the multiplies are skipped when every factor of the warp is exactly 1 (no
  // row max moved, the same dV): a vote and a branch per step.
  __device__ __forceinline__ void rescale_o(const float (&alpha)[2], float ratio) {
    const float a0 = alpha[0] * ratio, a1 = alpha[1] * ratio;
    if constexpr (C.skip_unit_rescale) {
      if (!__any_sync(0xffffffffu, a0 != 1.f || a1 != 1.f)) return;
    }
#pragma unroll
    for (int i = 0; i < kD / 8; ++i) {
      o[4 * i + 0] *= a0;
      o[4 * i + 1] *= a0;
      o[4 * i + 2] *= a1;
      o[4 * i + 3] *= a1;
    }
  }

  // ---- one tile ----------------------------------------------------------------------------
  __device__ __forceinline__ void startup() {
    const int n = t.n_max - 1;
    const float scale = block_scale(p.softmax_scale_log2, dq, dk_of(n));
    dv_cur = dv_of(n);
    prefetch_descales(n > 0 ? n - 1 : 0);
    k_ring.wait_full();
    issue_qk(k_ring.stage());
    retire_qk<0>();
    k_ring.release(lane);
    float alpha[2];
    if (block_needs_mask(n)) softmax<true>(n, scale, alpha);
    else softmax<false>(n, scale, alpha);
    convert_p(pfrag);
  }
  // Keeps softmax(j) ahead of the PV(j-1) wait in the SASS. The PTX has the exponentials before
  // wgmma.wait_group 0 (the operand fences pin them there for nvcc), but ptxas schedules the wait
  // freely inside a basic block and, without this, puts it before all 64 MUFU.EX2 of the step,
  // serialising softmax(j) after PV(j-1). A branch whose condition reads every
  // exponential (through the row sums) ends the basic block: ptxas does not move the wait above
  // it, nor the exponentials below it. The branch is never taken (a row sum is a sum of
  // exponentials, >= 0, or NaN, and NaN < 0 is false); its body is a side effect nvcc cannot drop.
  __device__ __forceinline__ void pin_before_pv_wait() const {
    if (row_sum[0] + row_sum[1] < 0.f) ptx::nanosleep_u32(0);
  }
  // Steady step j: QK(j) and PV(j-1) in flight together.
  template <bool kMasked>
  __device__ __forceinline__ void steady(int j) {
    const int n = t.n_max - 1 - j;
    const float scale = block_scale(p.softmax_scale_log2, dq, dk_next);  // the exponent's scale of block n
    const float dv_n = dv_next;
    prefetch_descales(n > 0 ? n - 1 : 0);
    k_ring.wait_full();
    take_token();
    issue_qk(k_ring.stage());  // older group
    v_ring.wait_full();
    issue_pv(v_ring.stage(), j > 1);  // newer group; the first PV overwrites O
    pass_token();
    retire_qk<1>();  // QK(j) complete; PV(j-1) may still run
    k_ring.release(lane);
    float alpha[2];
    softmax<kMasked>(n, scale, alpha);
    // Keep the exponentials before the wait below: the operand fence for nvcc (without a volatile
    // use of S it sinks them past wgmma.wait_group 0, as in the bf16 forward), the pin for ptxas.
    ptx::wgmma_fence_operand(s_acc);
    pin_before_pv_wait();
    retire_pv();  // PV(j-1) complete: O readable, P and Vt[j-1] reusable
    v_ring.release(lane);
    // O moves to the unit of dV_n, whose PV adds next. rcp.approx (1 ulp): an IEEE division costs a
    // range check and a branch to a subroutine every step.
    rescale_o(alpha, dv_cur * ptx::rcp_approx_ftz_f32(dv_n));
    dv_cur = dv_n;
    convert_p(pfrag);
  }
  __device__ __forceinline__ void drain() {
    v_ring.wait_full();
    issue_pv(v_ring.stage(), t.n_max > 1);
    retire_pv();
    v_ring.release(lane);
  }

  // ---- epilogue: O = acc * dV / l in bf16 from registers (rows < seqlen_q), LSE -----------------
  // Plain global stores (4 bytes: two columns): no shared-memory staging, so ragged tails and any
  // 16-byte-aligned strides need no special case. Rows past seqlen_q are never written.
  __device__ __forceinline__ void epilogue() {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float l = quad_sum(row_sum[h]);
      const float f = out_factor(dv_cur, l);
      const int row = row0 + 8 * h;
      if (row >= seqlen_q) continue;
      if (p.lse != nullptr && q4 == 0) {
        p.lse[(static_cast<int64_t>(t.batch) * p.heads_q + t.head) * p.seqlen_q + row] = lse_of(row_max[h], l);
      }
      uint16_t* o_row = p.o + t.batch * p.o_sb + static_cast<int64_t>(row) * p.o_ss + t.head * p.o_sh;
#pragma unroll
      for (int i = 0; i < kD / 8; ++i)
        ptx::st_global_b32(o_row + 8 * i + 2 * q4, ptx::cvt_rn_bf16x2_f32(o[4 * i + 2 * h] * f, o[4 * i + 2 * h + 1] * f));
    }
  }

  // The CTA's tiles blockIdx.x, + gridDim.x, ... (persistent; the producer walks the same list).
  __device__ __forceinline__ void run() {
    // Bootstrap half-credit of the token ring, once per CTA, by consumer 0. Both consumers run the
    // same tiles, so they take and pass the token the same number of times (n_max - 1 steady steps
    // per tile); the ring carries over from one tile to the next.
    if (Tokens::primes(g)) ptx::bar_arrive(Tokens::barrier_of(0), Tokens::kParticipants);
    int qi = 0;  // keyed tiles so far: Q slot qi % 2, its full-barrier parity (qi / 2) % 2
    if constexpr (C.paired) {
      // The producer's walk (Producer::seek), slot by slot; tiles without keys included (O = 0).
      for (int k = 0;; ++k) {
        TileCoord tc;
        const SlotKind kind = paired_tile(p, k, &tc);
        if (kind == SlotKind::kDone) break;
        if (kind == SlotKind::kEmpty) continue;
        run_tile(tc, qi);
        epilogue();
      }
    } else if constexpr (C.persistent) {
      for (int tile = static_cast<int>(blockIdx.x); tile < p.num_tiles; tile += static_cast<int>(gridDim.x)) {
        run_tile(tile, qi);
        epilogue();
      }
    } else {  // one tile per CTA (the host launches gridDim.x == num_tiles)
      run_tile(static_cast<int>(blockIdx.x), qi);
      epilogue();
    }
  }
  // where: a linear tile index (tile_of), or the paired walk's coordinate (tile_at).
  __device__ __forceinline__ Tile locate(int idx) const { return tile_of<C>(p, idx); }
  __device__ __forceinline__ Tile locate(const TileCoord& tc) const { return tile_at<C>(p, tc); }
  template <class Where>
  __device__ __forceinline__ void run_tile(Where where, int& qi) {
    t = locate(where);
    row0 = t.m_block * kBlockM + 64 * g + r0;
    row_max[0] = row_max[1] = -INFINITY;
    row_sum[0] = row_sum[1] = 0.f;
    if (t.n_max > 0) {
      const uint32_t slot = static_cast<uint32_t>(qi) & 1u;
      desc_q = ptx::make_smem_desc(sm.q(slot) + 64 * g * L::kQKChunkBytes, 0, QKSwz::kAtomBytes, QKSwz::kMode);
      dq = p.descale_q[p.iq.at(t.batch, t.head, t.m_block)];
      dk_row = p.descale_k + p.ik.at(t.batch, t.head_kv, 0);
      dv_row = p.descale_v + p.iv.at(t.batch, t.head_kv, 0);
      FLASHPTX_MBAR_WAIT(sm.q_full(slot), (static_cast<uint32_t>(qi) >> 1) & 1u, "fa3 fp8 consumer: q_full");
      startup();
      // Blocks [n_unmasked_end, n_max) need the mask: the first steps of the right-to-left walk.
      int n_unmasked_end = t.n_max;
      while (n_unmasked_end > 0 && block_needs_mask(n_unmasked_end - 1)) --n_unmasked_end;
      const int j_unmasked = max(1, t.n_max - n_unmasked_end);
      for (int j = 1; j < j_unmasked && j < t.n_max; ++j) steady<true>(j);
      for (int j = j_unmasked; j < t.n_max; ++j) steady<false>(j);
      drain();
      // Every QK of the tile has retired (wgmma.wait_group in the steps above): the Q slot may be
      // refilled, with the Q of keyed tile qi + 2.
      if (lane == 0) ptx::mbarrier_arrive(sm.q_empty(slot));
      ++qi;
    } else {
      // No admissible key for any row of this tile (causal, seqlen_q > seqlen_k): O = 0, LSE = -inf.
#pragma unroll
      for (int x = 0; x < kD / 2; ++x) o[x] = 0.f;
    }
  }
};

// ==================================== THE KERNEL ==================================================
template <Fp8Config C>
__device__ __forceinline__ void fwd_fp8_kernel_body(const FwdFp8Params& p) {
  using L = Fp8Layout<C>;
  const Smem<C> sm{smem_base_1024()};
  const int warpgroup = threadIdx.x / 128;

  // Barrier initialisation: one thread, exactly kNumBarriers barriers (4 + 5 per stage), then the
  // mbarrier-init fence and a CTA barrier (PTX ISA "mbarrier.init", "fence.mbarrier_init").
  if (threadIdx.x == 0) {
    for (uint32_t slot = 0; slot < L::kQSlots; ++slot) {
      ptx::mbarrier_init(sm.q_full(slot), L::kFullArrivals);
      ptx::mbarrier_init(sm.q_empty(slot), L::kEmptyArrivals);
    }
    for (uint32_t s = 0; s < C.stages; ++s) {
      ptx::mbarrier_init(sm.k_full(s), L::kFullArrivals);
      ptx::mbarrier_init(sm.k_empty(s), L::kEmptyArrivals);
      ptx::mbarrier_init(sm.v_full(s), L::kFullArrivals);
      ptx::mbarrier_init(sm.vt_full(s), L::kFullArrivals);
      ptx::mbarrier_init(sm.vt_empty(s), L::kEmptyArrivals);
    }
    ptx::fence_mbarrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    ptx::setmaxnreg_dec<L::kProducerRegs>();
    Producer<C>{p, sm, static_cast<int>(threadIdx.x)}.run();
    return;
  }
  ptx::setmaxnreg_inc<L::kConsumerRegs>();
  Consumer<C>(p, sm, warpgroup - 1).run();
}

}  // namespace flashptx::fa3::fp8
