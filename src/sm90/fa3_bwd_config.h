// FA3 backward: what the host, the kernels and the tests share (plain C++, no device code).
//
//   BwdParams       the main kernel's one argument (__grid_constant__)
//   BwdAuxParams    the preprocess and postprocess kernels' argument
//   BwdVarlenParams the varlen kernels' one argument: both of the above and the sequence table
//   BwdConfig       the compile-time shape of one main-kernel specialization, named fields
//   BwdLayout<C>    tiles, register split, shared-memory plan, barrier slots and arrival counts
//   BwdWorkspace    where the fp32 accumulators, per-row scratch and semaphores live in the
//                   caller's workspace (flashptx_bwd_workspace_size)
//   dq_accum_coord  the element order of one dQ accumulator tile (the MMA fragment order, so that
//                   the kernel stages it with conflict-free 16-byte stores and reduces it with one
//                   bulk add); the postprocess kernel and the tests read it back through this map
// The specializations that exist are listed once, in src/sm90/fa3_bwd.cu.
#pragma once
#include <cuda.h>
#include <cstddef>
#include <cstdint>

#include "src/protocol/hd.h"

namespace flashptx::fa3 {

constexpr int kVarlenMaxSeqsBwd = 1024;  // = FLASHPTX_VARLEN_MAX_SEQS (include/flashptx.h)

struct BwdParams {
  CUtensorMap tma_q;   // [batch, seqlen_q, heads_q, d]   box (64, block_m, 1, 1), 128B swizzle
  CUtensorMap tma_do;  // [batch, seqlen_q, heads_q, d]   box (64, block_m, 1, 1)
  CUtensorMap tma_k;   // [batch, seqlen_k, heads_kv, d]  box (64, block_n, 1, 1)
  CUtensorMap tma_v;   // [batch, seqlen_k, heads_kv, d]  box (64, block_n, 1, 1)
  CUtensorMap tma_dk;  // [batch, seqlen_k, heads_kv, d]  box (64, 64, 1, 1): stores (no GQA)
  CUtensorMap tma_dv;  // [batch, seqlen_k, heads_kv, d]  box (64, 64, 1, 1)
  float* dq_accum;     // [batch, heads_q, m_blocks, block_m * d] fp32, fragment order (dq_accum_coord)
  const float* lse2;   // [batch, heads_q, m_blocks * block_m]: LSE * log2(e); +inf on padded rows
  const float* delta;  // [batch, heads_q, m_blocks * block_m]: rowsum(dO * O); 0 on padded rows
  float* dk_accum;     // GQA only: [batch, heads_kv, n_blocks * block_n, d] fp32 row-major
  float* dv_accum;     // GQA only
  uint32_t* dq_sem;    // deterministic: [batch, heads_q, m_blocks] writers done per dQ tile
  uint32_t* dkv_sem;   // deterministic GQA: [batch, heads_kv, n_blocks]
  int seqlen_q, seqlen_k, heads_q, heads_kv, batch;
  int m_blocks, n_blocks;
  int causal;
  int deterministic;
  int dq_rotated;      // deterministic, no mask: key block n walks the query blocks from n (mod m_blocks)
                       // and dQ tiles take writers in visit order (writer_order::lock_dense_rotated)
  float softmax_scale;       // applied to dK here and to dQ in the postprocess
  float softmax_scale_log2;  // softmax_scale * log2(e)
};

struct BwdAuxParams {
  const void* o;      // preprocess: [batch, seqlen_q, heads_q, d] (strides below)
  const void* dout;   // preprocess
  const float* lse;   // preprocess: [batch, heads_q, seqlen_q], natural log
  void* dq;           // postprocess: [batch, seqlen_q, heads_q, d]
  void* dk;           // postprocess (GQA): [batch, seqlen_k, heads_kv, d]
  void* dv;
  float* dq_accum;
  float* lse2;
  float* delta;
  const float* dk_accum;
  const float* dv_accum;
  int64_t o_sb, o_ss, o_sh, do_sb, do_ss, do_sh;      // strides in elements
  int64_t dq_sb, dq_ss, dq_sh, dk_sb, dk_ss, dk_sh, dv_sb, dv_ss, dv_sh;
  int seqlen_q, seqlen_k, heads_q, heads_kv, batch;
  int head_dim;  // Q's and K's (the caller's); the accumulators' rows are bwd_kernel_head_dim(head_dim) wide
  int block_m, block_n, m_blocks, n_blocks;
  // V's head dim (V, O, dO, dV; flashptx_bwd_params::head_dim_v resolved, <= head_dim): the
  // preprocess reads O and dO below it, the dK/dV postprocess writes dV below it. It took the slot of
  // the int that held dq_accum_coord's split, which the dQ postprocess now derives from block_m
  // (bwd_dq_split_rows), so that sizeof(BwdAuxParams) and every offset after it
  // (BwdVarlenParams::table, which every varlen main kernel reads) stay as they were: the
  // static_asserts below.
  int head_dim_v;
  float softmax_scale;
};

// How the two MMA warpgroups share the CTA's work.
//   kSplitKeys     (d64, d128; block_n 128) warpgroup g owns keys [64g, 64g+64): it computes
//                  S^T = K Q^T and dP^T = V dO^T for them and holds dK and dV of its keys in
//                  registers (P^T and dS^T from registers are the A operands of dV and dK).
//                  dQ = dS K needs all 128 keys: dS^T goes through shared memory, and the
//                  warpgroups split dQ by columns (block_m 64) or by rows (block_m 128).
//   kSplitHeadDim  (d256; block_n 64) dK and dV of 64 keys x 256 columns in fp32 are 256
//                  registers per thread for one warpgroup: too many. Warpgroup g owns head-dim
//                  columns [128g, 128g+128) of dK, dV and dQ (64 + 64 + 64 accumulator registers),
//                  and computes S^T and dP^T for all 64 keys and query rows [32g, 32g+32) of the
//                  block (m64n32: 16 + 16 registers). dV += P^T dO and dK += dS^T Q need all 64
//                  query rows of P^T and dS^T: both go through shared memory (K-major A operands),
//                  like dS^T for dQ.
enum class BwdSplit { kSplitKeys, kSplitHeadDim };

// The dQ accumulator's split (BwdConfig::dq_split_rows, dq_accum_coord) as a function of block_m:
// the one 128-row shape (kBwdD64) splits dQ by rows, the 64-row ones by columns (BwdLayout asserts
// it of every shape). The dQ postprocess reads the split this way, from BwdAuxParams::block_m.
FLASHPTX_HD constexpr bool bwd_dq_split_rows(int block_m) { return block_m == 128; }

struct BwdConfig {
  int head_dim;    // 64, 128 or 256
  int block_m;     // query rows per step (a Q / dO ring stage)
  int stages;      // depth of the Q ring
  bool bf16;       // bf16 in and out; fp16 otherwise
  int block_n;     // keys per CTA: 128 (kSplitKeys) or 64 (kSplitHeadDim)
  int do_stages;   // depth of the dO ring: == stages (one ring, one empty barrier per stage) or 1
  BwdSplit split;  // see above
  bool dq_split_rows;  // kSplitKeys: the warpgroups split dQ = dS K by rows (block_m 128, each
                       // warpgroup all d columns of 64 rows), else by columns (d / 2 each, all rows);
                       // the dQ accumulator's order follows it (dq_accum_coord)
  bool varlen = false;  // packed variable-length sequences (BwdVarlenParams, "variable-length
                        // batches" below): the key block's sequence from the table, every length
                        // and row coordinate the sequence's, the tail dK/dV rows stored from registers
  bool local = false;   // the sliding window and the softcap, both run-time values (BwdLocal, in
                        // BwdLocalParams / BwdVarlenLocalParams; src/sm90/fa3_bwd_local.cu): the
                        // walk visits only the query blocks the window lets see the key block (a
                        // masked head, an unmasked middle, a masked tail), and P^T, dS^T carry the
                        // softcap's tanh and its derivative. One kernel per shape, as the forward's.
  int real_head_dim = head_dim;  // the caller's head dim, the columns the tensors have: head_dim, or
                        // (varlen) 96 on the d128 shape and 192 on d256, whose tile columns past it are
                        // TMA's zero fill on load and clipped by the box stores at the tensor maps'
                        // extent (bwd_kernel_head_dim below); the varlen tail's register stores
                        // (store_dkv_tail) write no column at or past it, so that nothing lands on
                        // the next head's first columns. The fixed-length kernels serve 96 and 192
                        // with it equal to head_dim: every store of theirs is a clipped box.
  int real_head_dim_v = head_dim;  // V's (and dO's, dV's) columns, <= real_head_dim: the varlen tail's
                        // dV register stores write no column at or past it (varlen (192, 128) on the
                        // d256 shape: 128, warpgroup 1's dV columns all zero and none stored); set with
                        // real_head_dim by with_real_head_dim, apart only by with_real_head_dims.
};

// The specializations' shapes (src/sm90/fa3_bwd.cu lists the kernels; src/sm90/fa3_bwd_varlen.cu
// their varlen twins).
constexpr BwdConfig kBwdD64 = {.head_dim = 64, .block_m = 128, .stages = 2, .bf16 = true, .block_n = 128,
                               .do_stages = 2, .split = BwdSplit::kSplitKeys, .dq_split_rows = true};
constexpr BwdConfig kBwdD128 = {.head_dim = 128, .block_m = 64, .stages = 2, .bf16 = true, .block_n = 128,
                                .do_stages = 2, .split = BwdSplit::kSplitKeys, .dq_split_rows = false};
constexpr BwdConfig kBwdD256 = {.head_dim = 256, .block_m = 64, .stages = 2, .bf16 = true, .block_n = 64,
                                .do_stages = 1, .split = BwdSplit::kSplitHeadDim, .dq_split_rows = false};
constexpr BwdConfig fp16(BwdConfig c) {
  c.bf16 = false;
  return c;
}
constexpr BwdConfig varlen(BwdConfig c) {
  c.varlen = true;
  return c;
}
constexpr BwdConfig local(BwdConfig c) {
  c.local = true;
  return c;
}
// A varlen shape serving a smaller head dim over zero columns (BwdConfig::real_head_dim).
constexpr BwdConfig with_real_head_dim(BwdConfig c, int d) {
  c.real_head_dim = d;
  c.real_head_dim_v = d;
  return c;
}
// ... and V's head dim apart from Q's (varlen (192, 128)).
constexpr BwdConfig with_real_head_dims(BwdConfig c, int d, int dv) {
  c.real_head_dim = d;
  c.real_head_dim_v = dv;
  return c;
}

// The shapes and the shared-memory plan of one specialization. Both splits have two MMA
// warpgroups at 240 registers and a producer warpgroup at 24.
//
// d256 budgets (kSplitHeadDim, block_m = block_n = 64, Q stages 2, dO stages 1):
//   registers per MMA thread: dK 64 + dV 64 + dQ 64 (fp32 accumulators, m64n128) + S^T 16 + dP^T 16
//     (m64n32) = 224 at most, but S^T/dP^T are dead (stored as bf16) before dQ is issued: ~192 live
//     accumulators across the dV/dK/dQ GEMMs plus addresses, under the 240 of setmaxnreg.
//   shared memory: K 32 + V 32 + Q 2 x 32 + dO 1 x 32 + P^T 2 x 8 + dS^T 2 x 8 + the dQ stage 32
//     (one warpgroup's half of the 64 KiB fp32 tile: two bulk adds per step) = 224 KiB, + LSE2/delta
//     rows + barriers + 1 KiB alignment slack <= 227 KiB.
template <BwdConfig C>
struct BwdLayout {
  static constexpr bool kSplitHeadDim = C.split == BwdSplit::kSplitHeadDim;
  static constexpr int kHeadDim = C.head_dim;
  static constexpr int kBlockM = C.block_m;
  static constexpr int kBlockN = C.block_n;
  static constexpr int kStages = C.stages;      // Q ring
  static constexpr int kDoStages = C.do_stages;  // dO ring
  static constexpr bool kOneRing = C.do_stages == C.stages;  // Q and dO share stage index and empty barrier
  static constexpr int kMmaWGs = 2;
  static constexpr int kThreads = 128 * (kMmaWGs + 1);  // warpgroup 0: producer and dQ writer
  static constexpr int kChunks = C.head_dim / 64;        // 64-column (128-byte) chunks of a row
  static constexpr bool kDqSplitRows = C.dq_split_rows;
  static constexpr int kDqN = kDqSplitRows ? C.head_dim : C.head_dim / 2;  // dQ columns per warpgroup
  static constexpr int kDkvN = kSplitHeadDim ? C.head_dim / 2 : C.head_dim;  // dK/dV columns per warpgroup
  static constexpr int kSN = kSplitHeadDim ? C.block_m / 2 : C.block_m;    // S^T/dP^T columns per warpgroup
  // The dQ staging buffer holds the whole tile (one bulk add per step, both warpgroups arrive on
  // dq_full[0]) or one warpgroup's half (kDqParts = 2: warpgroup g stages part g, the writer adds
  // part 0 then part 1; dq_full[g] and dq_empty[g] are per warpgroup).
  static constexpr int kDqParts = kSplitHeadDim ? 2 : 1;

  // Register split (setmaxnreg): 128 x 24 + 256 x 240 = 64,512 of 65,536.
  static constexpr int kProducerRegs = 24;
  static constexpr int kMmaRegs = 240;

  // Shared-memory plan, bytes from a 1024-aligned base.
  static constexpr int kKVBytes = kBlockN * C.head_dim * 2;  // K (or V): all keys of the CTA
  static constexpr int kQBytes = C.block_m * C.head_dim * 2;  // one stage of Q (or dO)
  static constexpr int kRowBytes = C.block_m * 4;              // one stage of LSE2 (or delta)
  static constexpr int kDsBytes = kBlockN * C.block_m * 2;     // dS^T (or P^T) [keys][block_m], bf16
  static constexpr int kDqTileBytes = C.block_m * C.head_dim * 4;  // dQ tile, fp32
  static constexpr int kDqBytes = kDqTileBytes / kDqParts;          // what the staging buffer holds
  static constexpr int kOffK = 0;
  static constexpr int kOffV = kOffK + kKVBytes;
  static constexpr int kOffQ = kOffV + kKVBytes;
  static constexpr int kOffDo = kOffQ + C.stages * kQBytes;
  static constexpr int kOffDs = kOffDo + C.do_stages * kQBytes;  // two buffers (step parity)
  static constexpr int kOffP = kOffDs + 2 * kDsBytes;            // kSplitHeadDim: P^T, two buffers
  static constexpr int kOffDq = kOffP + (kSplitHeadDim ? 2 * kDsBytes : 0);
  static constexpr int kOffLse = kOffDq + kDqBytes;
  static constexpr int kOffDelta = kOffLse + C.stages * kRowBytes;
  static constexpr int kOffBar = kOffDelta + C.do_stages * kRowBytes;

  // Barrier slots (mbarrier i at kOffBar + 8 i) and arrival counts. With one ring (kOneRing),
  // qdo_empty[s] releases Q and dO of stage s together; otherwise do_empty[s] has its own slots.
  static constexpr uint32_t kBarKV = 0;                     // 1: producer expect_tx (K and V bytes)
  static constexpr uint32_t kBarQFull = 1;                  // + stage; 1: expect_tx (Q + LSE2 bytes)
  static constexpr uint32_t kBarDoFull = 1 + C.stages;      // + stage; 1: expect_tx (dO + delta bytes)
  static constexpr uint32_t kBarQdoEmpty = 1 + C.stages + C.do_stages;  // + stage; 8: one per MMA warp
  static constexpr uint32_t kBarDqFull = 1 + 2 * C.stages + C.do_stages;  // + part: every MMA thread of the part
  static constexpr uint32_t kBarDqEmpty = kBarDqFull + kDqParts;  // + part; 1: the dQ writer, once the add read it
  static constexpr uint32_t kBarDoEmpty = kBarDqEmpty + kDqParts;  // + stage (not kOneRing); 8
  static constexpr int kNumBarriers = kBarDoEmpty + (kOneRing ? 0 : C.do_stages);
  static constexpr uint32_t kFullArrivals = 1;
  static constexpr uint32_t kEmptyArrivals = 4 * kMmaWGs;
  static constexpr uint32_t kDqFullArrivals = 128 * kMmaWGs / kDqParts;
  static constexpr uint32_t kDqEmptyArrivals = 1;
  static constexpr int kSmemBytes = kOffBar + 8 * kNumBarriers + 1024;  // + alignment slack

  static_assert(kSplitHeadDim ? (C.head_dim == 256 && C.block_m == 64 && C.block_n == 64)
                              : ((C.head_dim == 64 || C.head_dim == 128) && C.block_n == 128 &&
                                 (C.block_m == 64 || C.block_m == 128)),
                "kSplitKeys: d64/d128, 128 keys, block_m 64 or 128; kSplitHeadDim: d256, 64 x 64");
  static_assert(!C.dq_split_rows || (!kSplitHeadDim && C.block_m == 128),
                "dQ by rows: two warpgroups of 64 rows each (kSplitKeys, block_m 128)");
  static_assert(C.dq_split_rows == bwd_dq_split_rows(C.block_m),
                "the dQ postprocess reads the accumulator's split from block_m (bwd_dq_split_rows)");
  static_assert(C.do_stages == C.stages || C.do_stages == 1, "the dO ring is as deep as the Q ring, or 1");
  static_assert(C.real_head_dim == C.head_dim ||
                    (C.varlen && C.real_head_dim % 8 == 0 && C.real_head_dim > 0 && C.real_head_dim < C.head_dim),
                "fewer real columns: varlen only (the register stores' bound), whole 8-column groups");
  static_assert(kKVBytes % 1024 == 0 && kQBytes % 1024 == 0 && kDsBytes % 1024 == 0, "1024-byte tiles");
  static_assert(kOffDq % 1024 == 0 && kDqBytes % 16 == 0, "the dQ stage: 16-byte bulk copies");
  static_assert(kSN % 8 == 0 && kSN >= 8 && kSN <= 256 && kDkvN <= 256 && kDqN <= 256, "wgmma m64nNk16 shapes");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
  static_assert(kProducerRegs * 128 + kMmaRegs * 128 * kMmaWGs <= 65536, "register file");
  // Accumulators held across the dV/dK/dQ GEMMs of one step, per MMA thread, leave room under
  // kMmaRegs for addresses, descriptors and loop state (kSplitKeys also holds the P^T and dS^T A
  // fragments: kBm/4 registers each).
  // d64: 32 + 32 + 32 + 64; d128: 64 + 64 + 32 + 32; d256: 64 + 64 + 64 + 0 (all 192 at most).
  static_assert(kDkvN / 2 + kDkvN / 2 + kDqN / 2 + (kSplitHeadDim ? 0 : C.block_m / 2) <= kMmaRegs - 48,
                "MMA register budget");
};

// One dQ accumulator tile holds block_m * d floats in the MMA warpgroups' fragment order: float4
// number (g * kDqN / 8 + j) * 128 + t is registers 4j..4j+3 of thread t of MMA warpgroup g.
// Warpgroup g's floats are one contiguous range [g * block_m * kDqN, (g+1) * block_m * kDqN), so
// d256 (kDqParts = 2, columns split) stages and adds each warpgroup's range on its own; the order
// is the same function of (f, head_dim, split_rows) for every head dim.
// Register x of the m64nNk16 accumulator is row 16 w + l/4 + 8 ((x%4) >> 1), column
// 8 (x/4) + 2 (l%4) + (x%2) of the warpgroup's 64 x kDqN block (w = t/32, l = t%32).
// Returns (row, col) of float f of the tile.
struct TileCoord2 {
  int row, col;
};
// The same map by parts: float e (0..3) of the 128-float4 chunk `chunk`, written by thread t.
FLASHPTX_HD constexpr TileCoord2 dq_accum_coord_parts(int chunk, int t, int e, int head_dim, bool split_rows) {
  const int dq_n = split_rows ? head_dim : head_dim / 2;
  const int g = chunk / (dq_n / 8);
  const int j = chunk % (dq_n / 8);
  const int w = t / 32, l = t % 32;
  const int row = 16 * w + l / 4 + 8 * (e >> 1);
  const int col = 8 * j + 2 * (l % 4) + (e & 1);
  return split_rows ? TileCoord2{64 * g + row, col} : TileCoord2{row, (head_dim / 2) * g + col};
}
FLASHPTX_HD constexpr TileCoord2 dq_accum_coord(int f, int head_dim, bool split_rows) {
  // chunk: 128 threads x 4 floats
  return dq_accum_coord_parts(f / 512, (f / 4) % 128, f % 4, head_dim, split_rows);
}

// The caller's workspace, carved in this order, each section 256-byte aligned. Sizes in bytes.
// The aux kernels' launch shapes (src/sm90/fa3_bwd_aux.cuh), shared with the plan (src/plan.cpp).
// Preprocess: d/8 threads per row, 8 elements (16 bytes) each: rows per 256-thread CTA.
FLASHPTX_HD constexpr int pre_rows_per_cta(int head_dim) { return 256 / (head_dim / 8); }
// The head dim a backward kernel runs at for the caller's head dim: 96 on the d128 kernels, 192 on
// the d256 kernels (their tiles' columns past the real ones are zero: the tensor maps keep the real
// extent, so TMA fills the boxes past it with zeros and clips the stores at it: PTX ISA
// "Tensors", out-of-bound access), every other head dim on its own. The accumulators in the
// workspace (dQ, and dK/dV under GQA) have rows of this many columns; the aux kernels write only
// the caller's columns (docs/DECISIONS.md, "Backward head dims 96 and 192").
FLASHPTX_HD constexpr int bwd_kernel_head_dim(int head_dim) {
  return head_dim == 96 ? 128 : head_dim == 192 ? 256 : head_dim;
}
// dQ postprocess staging tile: block_m rows of d/2 packed 16-bit pairs plus 4 words of padding per
// row, so that the 8 rows one warp's fragment-order store touches land in distinct banks (row r
// starts at bank 4r mod 32) and every row start stays 16-byte aligned for the 16-byte reads.
FLASHPTX_HD constexpr int post_dq_pitch_words(int head_dim) { return head_dim / 2 + 4; }
FLASHPTX_HD constexpr int post_dq_smem_bytes(int block_m, int head_dim) { return block_m * post_dq_pitch_words(head_dim) * 4; }

struct BwdWorkspace {
  int64_t dq_accum = 0, lse2 = 0, delta = 0, dq_sem = 0, dkv_sem = 0, dk_accum = 0, dv_accum = 0;  // offsets
  int64_t zeroed_begin = 0, zeroed_end = 0;  // [dq_sem, end): what the launch zeroes with one memset
  int64_t total = 0;
};
FLASHPTX_HD int64_t align256(int64_t x) { return (x + 255) / 256 * 256; }
// GQA (heads_q > heads_kv) accumulates dK and dV in fp32 across the query heads of a group.
FLASHPTX_HD BwdWorkspace bwd_workspace(int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                                       int64_t seqlen_k, int64_t head_dim, int block_m, int block_n) {
  BwdWorkspace w;
  const int64_t m_blocks = (seqlen_q + block_m - 1) / block_m, n_blocks = (seqlen_k + block_n - 1) / block_n;
  const int64_t rows = batch * heads_q * m_blocks * block_m;
  const bool gqa = heads_q != heads_kv;
  int64_t at = 0;
  w.dq_accum = at; at = align256(at + rows * head_dim * 4);
  w.lse2 = at;     at = align256(at + rows * 4);
  w.delta = at;    at = align256(at + rows * 4);
  w.zeroed_begin = at;
  w.dq_sem = at;   at = align256(at + batch * heads_q * m_blocks * 4);
  w.dkv_sem = at;  at = align256(at + (gqa ? batch * heads_kv * n_blocks * 4 : 0));
  const int64_t kv_rows = gqa ? batch * heads_kv * n_blocks * block_n : 0;
  w.dk_accum = at; at = align256(at + kv_rows * head_dim * 4);
  w.dv_accum = at; at = align256(at + kv_rows * head_dim * 4);
  w.zeroed_end = at;
  w.total = at;
  return w;
}

// ---- variable-length batches (flashptx_bwd_varlen) ---------------------------------------------
// Q, K, V, O, dO and the gradients are packed [total, heads, d] tensors (tensor maps of batch extent
// 1); LSE is the forward varlen's [heads_q, total_q]. The host validates the prefix sums and lists
// the sequences (those with a query row or a key) in launch order, each with
//   m_prefix[s]  the padded query blocks (ceil(len_q / block_m)) of the sequences before s: sequence s
//                owns padded blocks [m_prefix[s], m_prefix[s+1]) of the per-row scratch (LSE2, delta),
//                of the dQ accumulator and of the dQ semaphores, per query head: the fixed-length
//                layout with (batch, head) replaced by (head, the sequence's block range), so that
//                no block holds rows of two sequences and a TMA box or bulk copy of block_m rows
//                never reads another sequence's scratch;
//   n_prefix[s]  the key blocks (ceil(len_k / block_n)) of the sequences before s: the main kernel's
//                CTAs blockIdx.x in [n_prefix[s], n_prefix[s+1]) are sequence s's key blocks, and
//                under GQA the dK/dV accumulators and semaphores are laid out by them.
// A prefix may repeat (a sequence without query rows, or without keys); the slot of a block is the
// largest s with prefix[s] <= block (src/protocol/tile_scheduler.h varlen_slot_of_tile), the one
// sequence that owns it. Sizes: 1024 sequences take 24.6 KiB of the 32764-byte parameter space.
struct BwdVarlenSeq {
  int q_start, k_start;  // packed row of the sequence's first query / key
  int len_q, len_k;
};
struct BwdVarlenTable {
  void* dk;  // the main kernel's stores of a sequence's last key rows (no GQA), from registers
  void* dv;
  int64_t dk_row_stride, dk_head_stride, dv_row_stride, dv_head_stride;  // elements
  int total_q, total_k;  // packed rows: LSE is [heads_q, total_q]
  int num_seqs;          // entries of seq[]
  int m_prefix[kVarlenMaxSeqsBwd + 1];
  int n_prefix[kVarlenMaxSeqsBwd + 1];
  BwdVarlenSeq seq[kVarlenMaxSeqsBwd];
};
struct BwdVarlenParams {
  BwdParams bwd;     // over the packed tensors; m_blocks, n_blocks: the totals m_prefix / n_prefix [num_seqs]
  BwdAuxParams aux;  // the pre/postprocess's (batch 1; batch strides unused)
  BwdVarlenTable table;
};
static_assert(sizeof(BwdVarlenParams) <= 32764, "kernel parameter space on sm_90 (CUDA 12.1+)");
// The layout every varlen main kernel's parameter offsets depend on (BwdAuxParams::head_dim_v took
// half of head_dim's int, not a field of its own).
static_assert(sizeof(BwdAuxParams) == 256 && offsetof(BwdVarlenParams, table) == 1152,
              "BwdAuxParams' size and BwdVarlenParams::table's offset");

// ---- the sliding window and the softcap (BwdConfig::local) ------------------------------------
// The local kernels' run-time score modifiers, beside (not inside) BwdParams, so that the other
// kernels' parameter blocks (and BwdVarlenParams' offsets) stay as they are. FlashAttention's
// semantics, as the forward's (FwdParams::window_left/right, softcap_prescale): query row i sees
// key j iff i + diag - window_left <= j <= i + diag + window_right (diag = len_k - len_q, per
// sequence for varlen), -1 unbounded on that side (causal is (-1, 0): the plan folds it in).
// Softcap c > 0: the score is c tanh(scale q.k / c); then softcap_prescale = scale / c,
// BwdParams::softmax_scale_log2 = c log2(e) (P^T = exp2(c log2e t - LSE2), t = tanh), and
// BwdParams::softmax_scale stays the ORIGINAL scale (dK here, dQ in the postprocess): the chain
// rule d(c tanh(scale x / c))/dx = scale (1 - t^2), with (1 - t^2) applied to dS^T in the kernel.
// softcap_ln2_inv = ln(2) / c recovers t from P^T (src/sm90/fa3_bwd.cuh score_gradients).
// softcap_prescale = 0: no softcap.
struct BwdLocal {
  int window_left, window_right;
  float softcap_prescale;
  float softcap_ln2_inv;
};
struct BwdLocalParams {
  BwdParams bwd;
  BwdLocal local;
};
struct BwdVarlenLocalParams {
  BwdVarlenParams v;  // first: the varlen aux kernels (BwdVarlenParams) read the same block
  BwdLocal local;
};
static_assert(sizeof(BwdVarlenLocalParams) <= 32764, "kernel parameter space on sm_90 (CUDA 12.1+)");

}  // namespace flashptx::fa3
