// FA3 forward over a KV cache (flashptx_fwd_kvcache): what the host, the kernels and the tests
// share (plain C++, no device code).
//
//   KvcacheParams   the attention kernel's one argument (a __grid_constant__ parameter)
//   KvCombineParams the combine kernel's one argument (split-KV: partial O and LSE merged by LSE)
//   KvConfig        one specialization, every switch a named field
//   KvLayout<C>     sizes, shared-memory offsets, barrier slots and arrival counts of a config
// The configurations that exist are listed once, below, and instantiated once, in
// src/sm90/fa3_fwd_kvcache.cu. Semantics: include/flashptx.h, "inference: attention over a KV cache".
#pragma once
#include <cuda.h>
#include <cstdint>

namespace flashptx::fa3 {

// The device error word's bits (flashptx_kvcache_params::error_word; include/flashptx.h repeats them
// as FLASHPTX_KVCACHE_ERR_*): what only the device sees, clamped, recorded with one atom.or each.
constexpr uint32_t kKvErrSeqlen = 1u;      // a cache_seqlens entry < 0 or above the cache's capacity: clamped
constexpr uint32_t kKvErrPage = 2u;        // a page_table entry outside [0, num_pages): that page read as zeros
constexpr uint32_t kKvErrBatchIdx = 4u;    // a cache_batch_idx entry outside [0, batch_cache): no keys
constexpr uint32_t kKvErrRotary = 8u;      // a rotary position at or past seqlen_ro: the last row used
constexpr uint32_t kKvErrLeftpad = 16u;    // a cache_leftpad entry < 0 or above the sequence's length: clamped

struct KvcacheParams {
  // The cache as a 4-D tensor map, d innermost: contiguous (d, seqlen_cache, heads_kv, batch_cache),
  // paged (d, page_size, heads_kv, num_pages); box (64, box_rows, 1, 1), 128B swizzle. box_rows =
  // min(page_size, block_n) where paged (a block of block_n keys is block_n / box_rows boxes, each
  // inside one page), block_n where contiguous. Rows past the extent (the producer's coordinate for
  // a box that holds no key of the sequence, or a bad page) read as zeros.
  CUtensorMap tma_k;
  CUtensorMap tma_v;
  const uint16_t* q;  // [batch, seqlen_q, heads_q, d]
  int64_t q_sb, q_sr, q_sh;
  uint16_t* o;        // [batch, seqlen_q, heads_q, d] (num_splits == 1)
  int64_t o_sb, o_sr, o_sh;
  float* lse;         // [batch, heads_q, seqlen_q] or nullptr (num_splits == 1)
  float* part_o;      // num_splits > 1: fp32 [num_splits, batch, heads_q, seqlen_q, d], normalised per split
  float* part_lse;    // num_splits > 1: fp32 [num_splits, batch, heads_q, seqlen_q]; -inf: no key in the split
  const int32_t* cache_seqlens;    // device, [batch]
  const int32_t* cache_batch_idx;  // device, [batch] or nullptr (contiguous only)
  const int32_t* page_table;       // device, [batch, max_pages] rows page_table_stride apart (paged only)
  int64_t page_table_stride;
  const int32_t* cache_leftpad;    // device, [batch] or nullptr: sequence b's keys start at cache_leftpad[b]
  uint32_t* error_word;            // device, or nullptr (nothing recorded)
  int batch, seqlen_q, heads_q, heads_kv, group;  // group = heads_q / heads_kv (packed GQA rows)
  int capacity;      // keys one sequence may hold: seqlen_cache, or max_pages * page_size
  int cache_batch;   // contiguous: batch_cache; paged: num_pages
  int page_size;     // paged only
  int box_rows;      // rows per TMA box (above)
  int max_pages;     // paged only: entries per page_table row
  int num_splits;    // key blocks of a sequence split across this many CTAs (gridDim.x)
  int m_blocks;      // 64-row tiles of the packed (query row, head of the group) rows
  int causal;
  float softmax_scale;       // natural-log scale (for LSE)
  float softmax_scale_log2;  // softmax_scale * log2(e)
  int seqlen_new;            // keys appended before this launch (KvAppendParams): the sequence attends
                             // to cache_seqlens[b] + seqlen_new keys
};

// The append (and rotary) kernel, launched before the attention kernel where new keys are given:
// row j of k_new / v_new of sequence b goes to the cache at position cache_seqlens[b] + j (k rotated
// at that position), and (rotary) q row i is rotated at cache_seqlens[b] + i (causal) or
// cache_seqlens[b] (otherwise) into q_rot, which the attention kernel then reads. Positions past the
// cache's capacity, or in a bad page, are not written (recorded in the error word).
struct KvAppendParams {
  const uint16_t* k_new;  // [batch, seqlen_new, heads_kv, d]
  const uint16_t* v_new;
  int64_t kn_sb, kn_sr, kn_sh, vn_sb, vn_sr, vn_sh;
  uint16_t* k_cache;      // the cache as KvcacheParams reads it
  uint16_t* v_cache;
  int64_t k_sb, k_sr, k_sh, v_sb, v_sr, v_sh;
  const uint16_t* q;      // [batch, seqlen_q, heads_q, d]
  int64_t q_sb, q_sr, q_sh;
  uint16_t* q_rot;        // rotary only: contiguous [batch, seqlen_q, heads_q, d]
  const float* rotary_cos;  // fp32 [seqlen_ro, rotary_dim / 2], or nullptr: no rotary
  const float* rotary_sin;
  int rotary_dim, seqlen_ro, interleaved, causal;
  const int32_t* cache_seqlens;
  const int32_t* cache_batch_idx;
  const int32_t* page_table;
  int64_t page_table_stride;
  uint32_t* error_word;
  int batch, seqlen_new, seqlen_q, heads_q, heads_kv, head_dim;
  int capacity, cache_batch, page_size, paged;
};
constexpr int kKvAppendThreads = 128;

struct KvCombineParams {
  const float* part_o;    // as KvcacheParams
  const float* part_lse;
  uint16_t* o;
  int64_t o_sb, o_sr, o_sh;
  float* lse;             // or nullptr
  int batch, seqlen_q, heads_q, num_splits;
};

struct KvConfig {
  int head_dim;   // 64, 128 or 256
  int block_n;    // keys per K (and V) ring stage
  int stages;     // depth of the K and V rings
  bool bf16;      // bf16 in and out
  bool paged;     // the cache is pages [num_pages, page_size, heads_kv, d] found through page_table;
                  // otherwise [batch_cache, seqlen_cache, heads_kv, d], row cache_batch_idx[b] or b
};

template <KvConfig C>
struct KvLayout {
  static constexpr int kHeadDim = C.head_dim;
  static constexpr int kBlockN = C.block_n;
  static constexpr int kBlockM = 64;    // one consumer warpgroup: 64 packed rows
  static constexpr int kThreads = 256;  // warpgroup 0 the producer, warpgroup 1 the consumer
  static constexpr int kChunks = C.head_dim / 64;  // 128-byte columns of a swizzled tile
  static constexpr int kMaxBoxes = C.block_n / 8;  // a block as boxes of 8 rows at least (page_size >= 8)
  static constexpr int kQBytes = kBlockM * C.head_dim * 2;
  static constexpr int kKVBytes = C.block_n * C.head_dim * 2;
  static constexpr int kOffQ = 0;
  static constexpr int kOffK = kOffQ + kQBytes;
  static constexpr int kOffV = kOffK + C.stages * kKVBytes;
  static constexpr int kOffBar = kOffV + C.stages * kKVBytes;
  static constexpr int kNumBarriers = 4 * C.stages;
  static constexpr int kSmemBytes = kOffBar + 8 * kNumBarriers + 1024;  // + alignment slack
  // Barrier slots (mbarrier i at kOffBar + 8 i) and arrival counts.
  static constexpr uint32_t kBarKFull = 0;                  // + stage; 1: producer arrive.expect_tx
  static constexpr uint32_t kBarKEmpty = C.stages;          // + stage; 4: one per consumer warp
  static constexpr uint32_t kBarVFull = 2 * C.stages;       // + stage; 1
  static constexpr uint32_t kBarVEmpty = 3 * C.stages;      // + stage; 4
  static constexpr uint32_t kFullArrivals = 1;
  static constexpr uint32_t kEmptyArrivals = 4;
  // Named barrier of the consumer warpgroup: its Q tile written (generic proxy) -> read by wgmma.
  static constexpr uint32_t kBarQReady = 1;

  // One consumer warpgroup holds O (64 x d fp32) in registers, d / 2 per thread: 32 at d64, 64 at
  // d128, 128 at d256 (with S's 32 and P's 16: within the 255 of __launch_bounds__(256, 1), no spill).
  static_assert(C.head_dim == 64 || C.head_dim == 128 || C.head_dim == 256,
                "the KV-cache kernels are d64, d128 or d256 (O in one warpgroup's registers; wgmma N = d)");
  static_assert(C.block_n == 64, "64-key blocks: a decode step wastes at most 63 keys of a block");
  static_assert(C.stages >= 2 && C.stages <= 4, "K/V ring depth");
  // The cache bytes the producer keeps in flight, K's and V's rings together (2 x stages x block_n
  // x d x 2): at least 64 KiB at every head dim, so that one CTA per SM covers the memory latency at
  // the SM's share of the copy bandwidth (docs/DECISIONS.md, "KV-cache tiles per head dim").
  static_assert(2 * C.stages * kKVBytes >= 64 * 1024, "cache bytes in flight per CTA");
  static_assert(kQBytes % 1024 == 0 && kKVBytes % 1024 == 0, "tiles keep 1024-byte alignment");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
};

// ---- the shipped configurations (instantiated in src/sm90/fa3_fwd_kvcache.cu) ----------------------
// Every head dim keeps the 64-key block (the decode waste bound above) and one consumer warpgroup;
// the ring depth is what differs (docs/DECISIONS.md, "KV-cache tiles per head dim"):
//   d64   4 stages of 8 KiB (the depth bound): 64 KiB in flight; Q 8 + 8 x 8 = 72 KiB of shared memory
//   d128  3 stages of 16 KiB: 96 KiB in flight; 16 + 6 x 16 = 112 KiB
//   d256  2 stages of 32 KiB: 128 KiB in flight; 32 + 4 x 32 = 160 KiB (3 stages, 224 KiB, fit the
//         227 KiB by under 2 KiB and add nothing decode needs in flight)
constexpr KvConfig kKvD64Paged = {.head_dim = 64, .block_n = 64, .stages = 4, .bf16 = true, .paged = true};
constexpr KvConfig kKvD64Contig = {.head_dim = 64, .block_n = 64, .stages = 4, .bf16 = true, .paged = false};
constexpr KvConfig kKvD128Paged = {.head_dim = 128, .block_n = 64, .stages = 3, .bf16 = true, .paged = true};
constexpr KvConfig kKvD128Contig = {.head_dim = 128, .block_n = 64, .stages = 3, .bf16 = true, .paged = false};
constexpr KvConfig kKvD256Paged = {.head_dim = 256, .block_n = 64, .stages = 2, .bf16 = true, .paged = true};
constexpr KvConfig kKvD256Contig = {.head_dim = 256, .block_n = 64, .stages = 2, .bf16 = true, .paged = false};

// The combine kernel: one CTA per (batch, head, query row), two of the d columns per thread (the
// partial rows are d floats apart: one combine per head dim).
constexpr int kv_combine_threads(int head_dim) { return head_dim / 2; }
// The most splits a call may ask for (the combine reads num_splits LSEs per row).
constexpr int kKvMaxSplits = 128;

}  // namespace flashptx::fa3
