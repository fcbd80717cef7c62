// FA3 forward over a KV cache on Hopper (sm_90a): decode and chunked prefill against a contiguous or
// paged cache whose lengths live in device memory (flashptx_fwd_kvcache, include/flashptx.h), and
// the split-KV combine. FA3's producer / consumer roles (src/sm90/fa3_fwd.cuh), at decode's shape.
//
// A work tile (one CTA) is 64 packed rows of one (batch, kv head): packed GQA, row r of the tile is
// query row (64 m + r) / G of query head kv_head * G + (64 m + r) % G (G = heads_q / heads_kv), so
// the G query heads of a KV group share the tile and each K/V block is read once per group, not
// once per query head. Under split-KV (num_splits > 1, gridDim.x) the tile's key blocks are cut
// into num_splits contiguous ranges, one per CTA, each writing its O normalised by its own sum and
// its LSE to the workspace; the combine kernel below merges them by LSE.
//
// The sequence's key count is cache_seqlens[b], read on the device by every role (the same value:
// the same load of the same word), clamped to [0, capacity]; the blocks a tile visits are derived
// from it (and from cache_leftpad[b], where given: the first key), so a CUDA graph replays with new
// lengths.
//
// Roles:
//   warpgroup 0   PRODUCER   one thread: for each K/V block of the tile's range, left to right,
//                            the block's page-table entries (paged), then its TMA loads into the
//                            K and V rings; a block of block_n keys is block_n / box_rows boxes,
//                            each inside one page (box_rows = min(page_size, block_n)).
//   warpgroup 1   CONSUMER   Q from global memory into the swizzled Q tile (packed rows gathered,
//                            rows past the problem zero), then per block: S = Q K^T (wgmma SS),
//                            the mask (keys past the length, the causal diagonal), online softmax
//                            in base 2, O += P V (wgmma RS, P from registers); the epilogue stores
//                            O (or the split's partial O and LSE) from registers.
// Barriers (shared memory; slots and counts in KvLayout, src/sm90/fa3_fwd_kvcache_config.h):
//   k_full[s]/v_full[s]    producer arrive.expect_tx(stage bytes) + TMA complete_tx
//   k_empty[s]/v_empty[s]  one arrive per consumer warp, after the wgmma wait that retired the
//                          stage's reader
//   named barrier 1        the consumer warpgroup's Q tile written -> read by its first wgmma
// Steps are not overlapped inside the consumer (QK(j), softmax(j), PV(j) in order): decode is bound
// by the cache's bytes, which the producer's ring keeps in flight ahead of the consumer.
#pragma once
#include <cuda.h>
#include <cstdint>

#include "ptx/barrier.cuh"
#include "ptx/cvt.cuh"
#include "ptx/fence.cuh"
#include "ptx/ldst.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "src/protocol/ring.h"
#include "src/sm90/common.cuh"
#include "src/sm90/fa3_fwd_kvcache_config.h"

#if defined(__CUDA_ARCH__) && !FLASHPTX_HAS_SM90A
#error "src/sm90/fa3_fwd_kvcache.cuh is Hopper code: compile it with -gencode arch=compute_90a,code=sm_90a"
#endif

namespace flashptx::fa3::kv {

template <KvConfig C>
struct KvSmem {
  using L = KvLayout<C>;
  uint32_t base;  // 1024-aligned shared::cta address
  __device__ __forceinline__ uint32_t q() const { return base + L::kOffQ; }
  __device__ __forceinline__ uint32_t k(uint32_t s) const { return base + L::kOffK + s * L::kKVBytes; }
  __device__ __forceinline__ uint32_t v(uint32_t s) const { return base + L::kOffV + s * L::kKVBytes; }
  __device__ __forceinline__ uint32_t bar(uint32_t slot) const { return base + L::kOffBar + 8u * slot; }
  __device__ __forceinline__ uint32_t k_full(uint32_t s) const { return bar(L::kBarKFull + s); }
  __device__ __forceinline__ uint32_t k_empty(uint32_t s) const { return bar(L::kBarKEmpty + s); }
  __device__ __forceinline__ uint32_t v_full(uint32_t s) const { return bar(L::kBarVFull + s); }
  __device__ __forceinline__ uint32_t v_empty(uint32_t s) const { return bar(L::kBarVEmpty + s); }
};

// The CTA's tile, derived alike by every role from blockIdx and the sequence's length.
struct KvTile {
  int split, m_block, head_kv, batch;
  int len_k;      // the sequence's keys, clamped to [0, capacity]: cache positions [key_begin, len_k)
  int key_begin;  // cache_leftpad[b] clamped to [0, len_k], or 0
  int cache_row;  // contiguous: the cache's batch coordinate (cache_batch_idx[b] or b)
  int n_begin, n_end;  // this split's key blocks [n_begin, n_end)
  uint32_t err;   // kKvErr* bits of what was clamped
};

template <KvConfig C>
__device__ __forceinline__ KvTile kv_tile(const KvcacheParams& p) {
  KvTile t;
  t.split = static_cast<int>(blockIdx.x);
  t.m_block = static_cast<int>(blockIdx.y) % p.m_blocks;
  t.head_kv = static_cast<int>(blockIdx.y) / p.m_blocks;
  t.batch = static_cast<int>(blockIdx.z);
  t.err = 0u;
  int len = p.cache_seqlens[t.batch];
  if (len < 0 || len > p.capacity) {
    t.err |= kKvErrSeqlen;
    len = min(max(len, 0), p.capacity);
  }
  // Appended keys (KvAppendParams, launched before): past the capacity they were not written.
  if (len + p.seqlen_new > p.capacity) {
    t.err |= kKvErrSeqlen;
    len = p.capacity;
  } else {
    len += p.seqlen_new;
  }
  // Left padding (FlashAttention's cache_leftpad): the sequence's keys are cache positions
  // [leftpad, len); positions, the causal diagonal and the append stay cache positions.
  int begin = 0;
  if (p.cache_leftpad != nullptr) {
    begin = p.cache_leftpad[t.batch];
    if (begin < 0 || begin > len) {
      t.err |= kKvErrLeftpad;
      begin = min(max(begin, 0), len);
    }
  }
  t.cache_row = t.batch;
  if constexpr (!C.paged) {
    if (p.cache_batch_idx != nullptr) {
      const int cb = p.cache_batch_idx[t.batch];
      if (cb < 0 || cb >= p.cache_batch) {
        t.err |= kKvErrBatchIdx;
        len = 0;  // no cache row to read: the sequence has no keys
      } else {
        t.cache_row = cb;
      }
    }
  }
  t.len_k = len;
  t.key_begin = min(begin, len);
  // The keys some row of the tile sees: [key_begin, key_end). Causal, bottom-right within the sequence's
  // length: query row i sees key j iff j <= i + len_k - seqlen_q; the tile's last row sees most.
  int key_end = len;
  if (p.causal) {
    const int last = min(t.m_block * 64 + 63, p.seqlen_q * p.group - 1);
    key_end = max(0, min(len, last / p.group + 1 + len - p.seqlen_q));
  }
  // Key blocks [first, nb), cut into num_splits contiguous ranges (empty where key_end <= key_begin).
  const int first = t.key_begin / C.block_n;
  const int nb = max(first, (key_end + C.block_n - 1) / C.block_n);
  const int per = (nb - first + p.num_splits - 1) / p.num_splits;
  t.n_begin = min(nb, first + t.split * per);
  t.n_end = min(nb, t.n_begin + per);
  return t;
}

// ==================================== PRODUCER ====================================================
template <KvConfig C>
struct KvProducer {
  using L = KvLayout<C>;
  const KvcacheParams& p;
  const KvSmem<C>& sm;
  const KvTile& t;
  RingState<C.stages> write = RingState<C.stages>::producer_start();  // one generation ahead
  uint32_t err = 0u;

  // The TMA coordinates (row, page / cache batch) of block n's boxes. Paged: box s holds keys
  // [key0, key0 + box_rows) of one page, page_table[b][key0 / page_size], row key0 % page_size. A box
  // that holds no key of the sequence, or whose page index is outside [0, num_pages) (recorded in
  // err), gets the row coordinate page_size, past the map's extent: TMA fills it with zeros and still
  // counts its whole box towards complete_tx, so the stage's expect_tx stays exact. (key0 < len_k <=
  // max_pages * page_size keeps the page-table read inside the row the host validated.)
  __device__ __forceinline__ void coords(int n, int (&row)[L::kMaxBoxes], int (&page)[L::kMaxBoxes]) {
    if constexpr (C.paged) {
      const int boxes = C.block_n / p.box_rows;
      const int32_t* pt = p.page_table + static_cast<int64_t>(t.batch) * p.page_table_stride;
#pragma unroll
      for (int s = 0; s < L::kMaxBoxes; ++s) {
        if (s < boxes) {
          const int key0 = n * C.block_n + s * p.box_rows;
          row[s] = p.page_size;
          page[s] = 0;
          if (key0 < t.len_k && key0 + p.box_rows > t.key_begin) {  // the box holds a key of the sequence
            const int pg = pt[key0 / p.page_size];
            if (pg >= 0 && pg < p.cache_batch) {
              page[s] = pg;
              row[s] = key0 % p.page_size;
            } else {
              err |= kKvErrPage;
            }
          }
        }
      }
    } else {
      row[0] = n * C.block_n;  // rows past seqlen_cache: TMA's zero fill
      page[0] = t.cache_row;
    }
  }
  __device__ __forceinline__ void load(const CUtensorMap* map, uint32_t dst, uint32_t full_bar,
                                       const int (&row)[L::kMaxBoxes], const int (&page)[L::kMaxBoxes]) {
    const int boxes = C.paged ? C.block_n / p.box_rows : 1;
    const int rows = C.paged ? p.box_rows : C.block_n;
    for (int c = 0; c < L::kChunks; ++c) {
#pragma unroll
      for (int s = 0; s < L::kMaxBoxes; ++s) {
        if (s < boxes)
          ptx::cp_async_bulk_tensor_4d_load(dst + c * C.block_n * 128 + s * rows * 128, map, full_bar, c * 64, row[s],
                                            t.head_kv, page[s]);
      }
    }
  }
  __device__ __forceinline__ void run() {
    for (int n = t.n_begin; n < t.n_end; ++n) {
      int row[L::kMaxBoxes], page[L::kMaxBoxes];
      // The block's page-table entries before the empty wait: their latency passes under it.
      coords(n, row, page);
      FLASHPTX_MBAR_WAIT(sm.k_empty(write.stage), write.phase, "kvcache producer: k_empty");
      ptx::mbarrier_arrive_expect_tx(sm.k_full(write.stage), L::kKVBytes);
      load(&p.tma_k, sm.k(write.stage), sm.k_full(write.stage), row, page);
      FLASHPTX_MBAR_WAIT(sm.v_empty(write.stage), write.phase, "kvcache producer: v_empty");
      ptx::mbarrier_arrive_expect_tx(sm.v_full(write.stage), L::kKVBytes);
      load(&p.tma_v, sm.v(write.stage), sm.v_full(write.stage), row, page);
      write.advance();
    }
    // Tail: every stage released by the consumer before the producer leaves (a synchronisation
    // tail, as the training forward's).
    for (int s = 0; s < C.stages; ++s) {
      FLASHPTX_MBAR_WAIT(sm.k_empty(write.stage), write.phase, "kvcache producer tail: k_empty");
      FLASHPTX_MBAR_WAIT(sm.v_empty(write.stage), write.phase, "kvcache producer tail: v_empty");
      write.advance();
    }
  }
};

// ==================================== CONSUMER ====================================================
template <KvConfig C>
struct KvConsumer {
  using L = KvLayout<C>;
  static constexpr int kD = C.head_dim, kBlockN = C.block_n, kBlockM = L::kBlockM;
  const KvcacheParams& p;
  const KvSmem<C>& sm;
  const KvTile& t;
  const int tid, lane, q4, r0;  // wgmma D fragment: rows r0, r0 + 8; columns 8i + 2 q4 + {0, 1}
  float o[kD / 2];
  float s_acc[kBlockN / 2];
  uint32_t pfrag[kBlockN / 16][4];
  float row_max[2], row_sum[2];
  int qpos[2], head[2];
  bool valid[2];
  RingState<C.stages> k_at = RingState<C.stages>::consumer_start();
  RingState<C.stages> v_at = RingState<C.stages>::consumer_start();

  __device__ __forceinline__ KvConsumer(const KvcacheParams& p_, const KvSmem<C>& sm_, const KvTile& t_)
      : p(p_), sm(sm_), t(t_), tid(static_cast<int>(threadIdx.x) % 128), lane(static_cast<int>(threadIdx.x) % 32),
        q4(lane % 4), r0(16 * (tid / 32) + lane / 4) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int i = t.m_block * kBlockM + r0 + 8 * h;
      valid[h] = i < p.seqlen_q * p.group;
      qpos[h] = i / p.group;
      head[h] = t.head_kv * p.group + i % p.group;
      row_max[h] = -INFINITY;
      row_sum[h] = 0.f;
    }
  }

  // The tile's 64 packed rows of Q into the 128B-swizzled K-major tile the wgmma descriptor reads
  // (row r at r * 128 B of its 64-column chunk, 16-byte unit u at u ^ (r % 8)); rows past the
  // problem are zero. Generic-proxy stores read by wgmma (async proxy): fence.proxy.async in every
  // writer, then the warpgroup's barrier (PTX ISA "Memory Consistency Model: proxies").
  __device__ __forceinline__ void load_q() {
    constexpr int kUnitsPerRow = kD / 8;
#pragma unroll
    for (int k = 0; k < kBlockM * kUnitsPerRow / 128; ++k) {
      const int u = tid + 128 * k;
      const int r = u / kUnitsPerRow, unit = u % kUnitsPerRow;
      const int c = unit / 8, uc = unit % 8;
      const int i = t.m_block * kBlockM + r;
      uint4 val = make_uint4(0u, 0u, 0u, 0u);
      if (i < p.seqlen_q * p.group) {
        const int qp = i / p.group, hd = t.head_kv * p.group + i % p.group;
        val = *reinterpret_cast<const uint4*>(p.q + t.batch * p.q_sb + qp * p.q_sr + hd * p.q_sh + unit * 8);
      }
      ptx::st_shared_v4_b32(sm.q() + c * kBlockM * 128 + r * 128 + ((uc ^ (r % 8)) * 16), val.x, val.y, val.z, val.w);
    }
    ptx::fence_proxy_async_shared_cta();
    ptx::bar_sync(L::kBarQReady, 128);
  }

  // S = Q K^T: kD/16 k-steps, 4 per 128-byte chunk (+32 B each), as the training forward's issue_qk.
  __device__ __forceinline__ void qk(uint32_t stage) {
    const uint64_t desc_q = ptx::make_smem_desc(sm.q(), 0, 1024, ptx::Swizzle::k128B);
    const uint64_t desc_k = ptx::make_smem_desc(sm.k(stage), 0, 1024, ptx::Swizzle::k128B);
    ptx::wgmma_fence_operand(s_acc);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kD / 16; ++k) {
      const uint32_t a_off = (k / 4) * kBlockM * 128 + (k % 4) * 32;
      const uint32_t b_off = (k / 4) * kBlockN * 128 + (k % 4) * 32;
      ptx::wgmma_m64k16_f32_bf16_ss<kBlockN, 0, 0>(s_acc, ptx::smem_desc_advance(desc_q, a_off),
                                                   ptx::smem_desc_advance(desc_k, b_off), k > 0 ? 1u : 0u);
    }
    ptx::wgmma_commit_group();
    // wgmma.wait_group 0 (PTX ISA "wgmma.wait_group"): S readable, the K stage's reader retired.
    ptx::wgmma_wait_group<0>();
    ptx::wgmma_fence_operand(s_acc);
  }
  // O (+)= P V: V MN-major (d contiguous): LBO = one 64-column chunk, SBO = 1024 per 8 keys.
  __device__ __forceinline__ void pv(uint32_t stage, bool accumulate) {
    const uint64_t desc_v = ptx::make_smem_desc(sm.v(stage), kBlockN * 128, 1024, ptx::Swizzle::k128B);
    ptx::wgmma_fence_operand(o);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kBlockN / 16; ++k)
      ptx::wgmma_m64k16_f32_bf16_rs<kD, 1>(o, pfrag[k], ptx::smem_desc_advance(desc_v, k * 16 * 128),
                                           (accumulate || k > 0) ? 1u : 0u);
    ptx::wgmma_commit_group();
    ptx::wgmma_wait_group<0>();  // O readable, P and the V stage reusable
    ptx::wgmma_fence_operand(o);
  }

  // Keys before the left padding's end, past the sequence's length, and (causal) right of row i's
  // diagonal i + len_k - seqlen_q: row h sees the block's columns first <= c <= last[h] (relative to
  // n * kBlockN + 2 * q4; two compares per element).
  __device__ __forceinline__ void mask(int n) {
    int last[2];
    const int first = t.key_begin - n * kBlockN - 2 * q4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      last[h] = t.len_k - 1;
      if (p.causal) last[h] = min(last[h], qpos[h] + t.len_k - p.seqlen_q);
      last[h] -= n * kBlockN + 2 * q4;
    }
#pragma unroll
    for (int i = 0; i < kBlockN / 8; ++i) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = 8 * i + (e & 1);
        const bool masked = c > last[e >> 1] || c < first;
        s_acc[4 * i + e] = masked ? -INFINITY : s_acc[4 * i + e];
      }
    }
  }
  // Online softmax in base 2 (the training forward's, without its variants): a row with no visible
  // key so far keeps max -inf and reference 0, so that its P and sum stay exactly 0.
  __device__ __forceinline__ void softmax(float (&alpha)[2]) {
    const float scale_log2 = p.softmax_scale_log2;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = row_max[h];
#pragma unroll
      for (int i = 0; i < kBlockN / 8; ++i) mx = fmaxf(mx, fmaxf(s_acc[4 * i + 2 * h], s_acc[4 * i + 2 * h + 1]));
      mx = quad_max(mx);
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
  }
  __device__ __forceinline__ void convert_p() {
#pragma unroll
    for (int k = 0; k < kBlockN / 16; ++k) {
      pfrag[k][0] = pack2<C.bf16>(s_acc[8 * k + 0], s_acc[8 * k + 1]);
      pfrag[k][1] = pack2<C.bf16>(s_acc[8 * k + 2], s_acc[8 * k + 3]);
      pfrag[k][2] = pack2<C.bf16>(s_acc[8 * k + 4], s_acc[8 * k + 5]);
      pfrag[k][3] = pack2<C.bf16>(s_acc[8 * k + 6], s_acc[8 * k + 7]);
    }
  }

  __device__ __forceinline__ void epilogue() {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float l = quad_sum(row_sum[h]);
      const float inv = l > 0.f ? ptx::rcp_approx_ftz_f32(l) : 0.f;
      const float lse = l > 0.f ? row_max[h] * p.softmax_scale + logf(l) : -INFINITY;
      if (!valid[h]) continue;
      if (p.num_splits == 1) {
        uint16_t* o_row = p.o + t.batch * p.o_sb + qpos[h] * p.o_sr + head[h] * p.o_sh;
#pragma unroll
        for (int i = 0; i < kD / 8; ++i)
          ptx::st_global_b32(o_row + 8 * i + 2 * q4, pack2<C.bf16>(o[4 * i + 2 * h] * inv, o[4 * i + 2 * h + 1] * inv));
        if (p.lse != nullptr && q4 == 0)
          p.lse[(static_cast<int64_t>(t.batch) * p.heads_q + head[h]) * p.seqlen_q + qpos[h]] = lse;
      } else {
        // The split's partial row ((split, b, head, i) in that order), normalised by its own sum.
        const int64_t pr =
            ((static_cast<int64_t>(t.split) * p.batch + t.batch) * p.heads_q + head[h]) * p.seqlen_q + qpos[h];
        float* o_row = p.part_o + pr * kD;
#pragma unroll
        for (int i = 0; i < kD / 8; ++i)
          *reinterpret_cast<float2*>(o_row + 8 * i + 2 * q4) = make_float2(o[4 * i + 2 * h] * inv, o[4 * i + 2 * h + 1] * inv);
        if (q4 == 0) p.part_lse[pr] = lse;
      }
    }
  }

  __device__ __forceinline__ void run() {
    load_q();
#pragma unroll
    for (int x = 0; x < kD / 2; ++x) o[x] = 0.f;
    for (int n = t.n_begin; n < t.n_end; ++n) {
      FLASHPTX_MBAR_WAIT(sm.k_full(k_at.stage), k_at.phase, "kvcache consumer: k_full");
      qk(k_at.stage);
      if (lane == 0) ptx::mbarrier_arrive(sm.k_empty(k_at.stage));  // QK retired: the K stage is free
      k_at.advance();
      mask(n);
      float alpha[2];
      softmax(alpha);
#pragma unroll
      for (int i = 0; i < kD / 8; ++i) {
        o[4 * i + 0] *= alpha[0];
        o[4 * i + 1] *= alpha[0];
        o[4 * i + 2] *= alpha[1];
        o[4 * i + 3] *= alpha[1];
      }
      convert_p();
      FLASHPTX_MBAR_WAIT(sm.v_full(v_at.stage), v_at.phase, "kvcache consumer: v_full");
      pv(v_at.stage, true);
      if (lane == 0) ptx::mbarrier_arrive(sm.v_empty(v_at.stage));  // PV retired: the V stage is free
      v_at.advance();
    }
    epilogue();
  }
};

// ==================================== THE KERNELS =================================================
template <KvConfig C>
__device__ __forceinline__ void fwd_kvcache_body(const KvcacheParams& p) {
  using L = KvLayout<C>;
  const KvSmem<C> sm{smem_base_1024()};
  const KvTile t = kv_tile<C>(p);
  // Barrier initialisation (init_barriers, src/sm90/common.cuh: one thread, the mbarrier-init fence,
  // a CTA barrier).
  init_barriers([&] {
    for (uint32_t s = 0; s < C.stages; ++s) {
      ptx::mbarrier_init(sm.k_full(s), L::kFullArrivals);
      ptx::mbarrier_init(sm.v_full(s), L::kFullArrivals);
      ptx::mbarrier_init(sm.k_empty(s), L::kEmptyArrivals);
      ptx::mbarrier_init(sm.v_empty(s), L::kEmptyArrivals);
    }
  });
  if (threadIdx.x < 128) {
    if (threadIdx.x == 0) {
      KvProducer<C> prod{p, sm, t};
      prod.run();
      const uint32_t err = t.err | prod.err;
      if (err != 0u && p.error_word != nullptr) atomicOr(p.error_word, err);
    }
    return;
  }
  KvConsumer<C>(p, sm, t).run();
}

// The split-KV combine: row (b, h, i) of O from its num_splits partial rows, O = sum_s w_s O_s /
// sum_s w_s with w_s = exp(lse_s - max_s lse_s), LSE = max + log(sum w) (a split with no key has
// lse -inf and weight 0; a row with none at all: O = 0, LSE = -inf). One CTA per row of kD columns
// (the head dim: the partial rows' pitch), two columns per thread: kv_combine_threads(kD) threads.
template <bool IsBf16, int kD>
__device__ __forceinline__ void kv_combine_body(const KvCombineParams& p) {
  static_assert(kD == 64 || kD == 128 || kD == 256, "a KV-cache head dim");
  const int64_t row = blockIdx.x;  // (b, h, i) in that order
  const int i = static_cast<int>(row % p.seqlen_q);
  const int h = static_cast<int>((row / p.seqlen_q) % p.heads_q);
  const int b = static_cast<int>(row / (static_cast<int64_t>(p.seqlen_q) * p.heads_q));
  const int64_t per_split = static_cast<int64_t>(p.batch) * p.heads_q * p.seqlen_q;
  const int col = 2 * static_cast<int>(threadIdx.x);
  float m = -INFINITY;
  for (int s = 0; s < p.num_splits; ++s) m = fmaxf(m, p.part_lse[s * per_split + row]);
  float sum = 0.f, acc0 = 0.f, acc1 = 0.f;
  if (m != -INFINITY) {
    for (int s = 0; s < p.num_splits; ++s) {
      const float l = p.part_lse[s * per_split + row];
      if (l == -INFINITY) continue;
      const float w = expf(l - m);
      const float2 v = *reinterpret_cast<const float2*>(p.part_o + (s * per_split + row) * kD + col);
      sum += w;
      acc0 += w * v.x;
      acc1 += w * v.y;
    }
  }
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
  ptx::st_global_b32(p.o + b * p.o_sb + i * p.o_sr + h * p.o_sh + col, pack2<IsBf16>(acc0 * inv, acc1 * inv));
  if (p.lse != nullptr && threadIdx.x == 0) p.lse[row] = sum > 0.f ? m + logf(sum) : -INFINITY;
}

// The append: grid (rows, batch), rows = max(seqlen_new, seqlen_q where rotary); each CTA one row
// j of sequence b: k_new / v_new row j into the cache at position cache_seqlens[b] + j (K rotated
// there), and (rotary) q row j rotated into q_rot. A thread takes one pair of dims of one head at a
// time: rotated pairs (d_a, d_b) = (2i, 2i + 1) interleaved or (i, i + rotary_dim / 2) half-split,
// i < rotary_dim / 2 (x_a' = x_a cos - x_b sin, x_b' = x_b cos + x_a sin, in fp32, rounded once), and
// the pairs past rotary_dim copied.
__device__ __forceinline__ void rotary_pair_dims(const KvAppendParams& p, int pair, int* da, int* db, bool* rot) {
  const int half = p.rotary_cos != nullptr ? p.rotary_dim / 2 : 0;
  *rot = pair < half;
  if (*rot && !p.interleaved) {
    *da = pair;
    *db = pair + half;
  } else if (*rot || p.interleaved) {
    *da = 2 * pair;
    *db = 2 * pair + 1;
  } else {
    *da = p.rotary_dim + 2 * (pair - half);
    *db = *da + 1;
  }
}
__device__ __forceinline__ void rotate_row(const KvAppendParams& p, const uint16_t* src, uint16_t* dst, int heads,
                                           int64_t src_sh, int64_t dst_sh, int pos, bool rotate) {
  const int pairs = p.head_dim / 2;
  for (int w = static_cast<int>(threadIdx.x); w < heads * pairs; w += kKvAppendThreads) {
    const int h = w / pairs, pair = w % pairs;
    int da, db;
    bool rot;
    rotary_pair_dims(p, pair, &da, &db, &rot);
    const uint16_t* s = src + h * src_sh;
    uint16_t* d = dst + h * dst_sh;
    uint16_t a = s[da], b = s[db];
    if (rotate && rot) {
      const float c = p.rotary_cos[static_cast<int64_t>(pos) * (p.rotary_dim / 2) + pair];
      const float sn = p.rotary_sin[static_cast<int64_t>(pos) * (p.rotary_dim / 2) + pair];
      const float xa = __uint_as_float(static_cast<uint32_t>(a) << 16), xb = __uint_as_float(static_cast<uint32_t>(b) << 16);
      const uint32_t packed = pack2<true>(xa * c - xb * sn, xb * c + xa * sn);
      a = static_cast<uint16_t>(packed & 0xffffu);
      b = static_cast<uint16_t>(packed >> 16);
    }
    d[da] = a;
    d[db] = b;
  }
}
__device__ __forceinline__ void kv_append_body(const KvAppendParams& p) {
  const int j = static_cast<int>(blockIdx.x), b = static_cast<int>(blockIdx.y);
  uint32_t err = 0u;
  int len = p.cache_seqlens[b];
  if (len < 0 || len > p.capacity) {
    err |= kKvErrSeqlen;
    len = min(max(len, 0), p.capacity);
  }
  const bool rotary = p.rotary_cos != nullptr;
  auto clamp_pos = [&](int pos) {
    if (pos >= p.seqlen_ro) {
      err |= kKvErrRotary;
      return p.seqlen_ro - 1;
    }
    return pos;
  };
  if (j < p.seqlen_new) {
    const int pos = len + j;
    int outer = -1, row = 0;
    if (pos >= p.capacity) {
      err |= kKvErrSeqlen;
    } else if (p.paged) {
      const int pg = p.page_table[static_cast<int64_t>(b) * p.page_table_stride + pos / p.page_size];
      if (pg >= 0 && pg < p.cache_batch) {
        outer = pg;
        row = pos % p.page_size;
      } else {
        err |= kKvErrPage;
      }
    } else {
      outer = b;
      if (p.cache_batch_idx != nullptr) {
        outer = p.cache_batch_idx[b];
        if (outer < 0 || outer >= p.cache_batch) {
          err |= kKvErrBatchIdx;
          outer = -1;
        }
      }
      row = pos;
    }
    if (outer >= 0) {
      const int rpos = rotary ? clamp_pos(pos) : 0;
      rotate_row(p, p.k_new + b * p.kn_sb + j * p.kn_sr, p.k_cache + outer * p.k_sb + row * p.k_sr, p.heads_kv,
                 p.kn_sh, p.k_sh, rpos, rotary);
      rotate_row(p, p.v_new + b * p.vn_sb + j * p.vn_sr, p.v_cache + outer * p.v_sb + row * p.v_sr, p.heads_kv,
                 p.vn_sh, p.v_sh, 0, false);
    }
  }
  if (rotary && j < p.seqlen_q) {
    const int pos = clamp_pos(len + (p.causal ? j : 0));
    rotate_row(p, p.q + b * p.q_sb + j * p.q_sr,
               p.q_rot + (static_cast<int64_t>(b) * p.seqlen_q + j) * p.heads_q * p.head_dim, p.heads_q, p.q_sh,
               p.head_dim, pos, true);
  }
  if (err != 0u && p.error_word != nullptr && threadIdx.x == 0) atomicOr(p.error_word, err);
}

}  // namespace flashptx::fa3::kv
