// FA3 FP8 forward (e4m3 Q, K, V; bf16 O): what the host, the kernel and the host tests share (plain
// C++, no device code). The kernel: src/sm90/fa3_fwd_fp8.cuh; its specializations and launch:
// src/sm90/fa3_fwd_fp8.cu; the C entry point: flashptx_fwd_fp8 (include/flashptx.h).
//
//   FwdFp8Params     the kernel's one argument (__grid_constant__)
//   Fp8Config        the compile-time shape of one specialization
//   Fp8Layout<C>     tile sizes, the register split, the shared-memory plan, the barrier slots
//   DescaleIndex     where the descale of a (batch, head, 128-row block) lives, for every granularity
// Protocols: docs/PROTOCOLS.md ("FP8 layouts", "The K/V rings").
#pragma once
#include <cuda.h>
#include <cstdint>

namespace flashptx::fa3 {

// The descale of a (batch, head, 128-row block): d[b * sb + h * sh + blk * sblk]. One formula for
// every granularity of flashptx_quantize_fp8 (include/flashptx.h):
//   per tensor  sb = sh = sblk = 0
//   per head    sb = heads, sh = 1, sblk = 0                 ([batch, heads])
//   per block   sb = heads * nblk, sh = nblk, sblk = 1       ([batch, heads, ceil(seqlen / 128)])
struct DescaleIndex {
  int sb = 0, sh = 0, sblk = 0;
  constexpr int64_t at(int b, int h, int blk) const {
    return static_cast<int64_t>(b) * sb + static_cast<int64_t>(h) * sh + static_cast<int64_t>(blk) * sblk;
  }
};
// The rows one descale covers along the sequence (FLASHPTX_FP8_SCALE_BLOCK_ROWS).
constexpr int kFp8ScaleRows = 128;

// ---- layout arithmetic the kernel and the host tests share (tests/host/test_fwd_fp8.cpp runs it
// through a thread-by-thread emulation of ldmatrix/stmatrix and of the wgmma fragments) ----------
//
// The swizzle of e4m3 tiles (TMA and wgmma agree on it; from a 1024-aligned base): logical 16-byte
// unit u of row r sits at unit u ^ (r % 8) in 128-byte rows (128B swizzle) and u ^ ((r / 2) % 4)
// in 64-byte rows (64B swizzle): address bits [4, 4+B) ^= bits [7, 7+B).
constexpr uint32_t swizzle_unit(uint32_t row, uint32_t unit, int row_bytes) {
  return row_bytes == 128 ? unit ^ (row & 7u) : unit ^ ((row >> 1) & 3u);
}
// The raw V stage (row-major V, before the transpose) as TMA writes it: the layout of a K stage,
// chunks of min(d, 128) bytes of every key (chunk c at c * block_n * min(d, 128)), each key's row of
// the chunk swizzled (128B, or 64B at d 64). The byte offset of (key, head-dim byte col). Swizzled
// so that the 8 rows one ldmatrix matrix reads (8 consecutive keys, one 16-byte unit) lie in 8
// different 16-byte bank groups: with dense unswizzled rows of d bytes (v1) they all fell in one,
// an 8-way bank conflict on every LDSM of the transpose.
constexpr uint32_t raw_v_offset(int key, int col, int d, int block_n) {
  const int cb = d < 128 ? d : 128;
  const int c = col / cb, u = (col % cb) / 16;
  return static_cast<uint32_t>(c * block_n * cb + key * cb) +
         swizzle_unit(static_cast<uint32_t>(key), static_cast<uint32_t>(u), cb) * 16u + static_cast<uint32_t>(col % 16);
}
// The V transpose, unit (kk, jj) = keys [16kk, 16kk+16) x head dims [32jj, 32jj+32), one warp:
// the byte offset in the raw stage (raw_v_offset) of the ldmatrix.x4 row that `lane` addresses
// (matrix lane / 8: keys +8 for odd matrices, dims +16 for matrices 2 and 3; 16 bytes, one swizzle
// unit), and the byte offset in the Vt stage of the stmatrix.x4 row it addresses (matrix m: Vt row
// 32jj + 16(m/2) + 2(lane % 8) + m % 2, the even and odd head dims the two prmt selectors split).
constexpr uint32_t transpose_src(int kk, int jj, int lane, int d, int block_n) {
  const int m = lane / 8, rr = lane % 8;
  return raw_v_offset(16 * kk + 8 * (m & 1) + rr, 32 * jj + 16 * (m >> 1), d, block_n);
}
constexpr uint32_t transpose_dst_row(int jj, int lane) {
  const int m = lane / 8, rr = lane % 8;
  return static_cast<uint32_t>(32 * jj + 16 * (m >> 1) + 2 * rr + (m & 1));
}
// The Vt stage (d rows of block_n keys, K-major for the PV wgmma): chunks of 128 keys, chunk c at
// byte c * d * 128, each chunk d rows of vt_chunk_keys(c) bytes (128, or 64 for a last half chunk),
// swizzled at that width (128B / 64B). block_n 64 and 128 are one chunk; 192 is 128 + 64; 256 is
// two chunks of 128. The byte offset of (head dim row, key).
constexpr int vt_chunk_keys(int c, int block_n) { return block_n - 128 * c < 128 ? block_n - 128 * c : 128; }
constexpr uint32_t vt_offset(int row, int key, int d, int block_n) {
  const int c = key / 128, w = vt_chunk_keys(c, block_n), k = key % 128;
  return static_cast<uint32_t>(c * d * 128 + row * w) +
         swizzle_unit(static_cast<uint32_t>(row), static_cast<uint32_t>(k / 16), w) * 16u + static_cast<uint32_t>(k % 16);
}
constexpr uint32_t transpose_dst(int kk, int jj, int lane, int d, int block_n) {
  return vt_offset(static_cast<int>(transpose_dst_row(jj, lane)), 16 * kk, d, block_n);
}
// P's register repair: byte i of A-fragment register w of k32 step k takes the fp32 S/P accumulator
// s_acc[p_acc_index(k, w, i)] (the D fragment: n8 block 4k + j, element e = 2 (row half) + column
// parity). w = 0/1: rows r0 / r0+8, keys [0,16) of the step; w = 2/3: keys [16,32). Bytes 0-3 are the
// thread's keys 2q, 2q+1 (n8 block 0 of the group) and 8+2q, 9+2q (block 1).
constexpr int p_acc_index(int k, int w, int i) {
  const int j = 2 * (w >> 1) + (i >> 1), e = 2 * (w & 1) + (i & 1);
  return 16 * k + 4 * j + e;
}
// With V^T given (keys in natural order in Vt), each word is put in natural key order by an exchange
// inside the quad: thread q needs keys 4q..4q+3 of its 16, the low (q < 2) or high (q >= 2) byte pairs
// of the words of quad threads natural_src(q, 0) and natural_src(q, 1), joined by prmt with
// natural_selector(q) ({x.b0, x.b1, y.b0, y.b1} or {x.b2, x.b3, y.b2, y.b3}).
constexpr int natural_src(int q, int which) { return (2 * q + which) & 3; }
constexpr uint32_t natural_selector(int q) { return q < 2 ? 0x5410u : 0x7632u; }

struct FwdFp8Params {
  CUtensorMap tma_q;  // e4m3 [batch, seqlen_q, heads_q, d]: box (min(d,128), 128), 128B (64B at d64) swizzle
  CUtensorMap tma_k;  // e4m3 [batch, seqlen_k, heads_kv, d]: box (min(d,128), block_n), same swizzle
  // V, by layout (v_keys_contiguous):
  //   0: e4m3 [batch, seqlen_k, heads_kv, d] as tma_k (box (min(d,128), block_n), same swizzle):
  //      the producer transposes it (raw_v_offset)
  //   1: e4m3 V^T [batch, heads_kv, d, seqlen_k] box (block_n, d), the Vt stage's swizzle: no transpose
  CUtensorMap tma_v;
  uint16_t* o;                        // bf16 [batch, seqlen_q, heads_q, d]
  int64_t o_sb, o_ss, o_sh;           // elements
  float* lse;                         // [batch, heads_q, seqlen_q] or nullptr
  const float* descale_q;             // never null (the host validated them)
  const float* descale_k;
  const float* descale_v;
  DescaleIndex iq, ik, iv;
  int seqlen_q, seqlen_k, heads_q, heads_kv, batch;
  int num_m_blocks;
  int num_tiles;  // num_m_blocks * heads_q * batch: CTA c runs tiles c, c + gridDim.x, ... (persistent)
  int causal;
  int v_keys_contiguous;
  float softmax_scale;       // natural-log scale (for LSE)
  float softmax_scale_log2;  // softmax_scale * log2(e)
};

struct Fp8Config {
  int head_dim;  // 64, 128 or 256
  int block_n;   // keys per K / V stage: 64 or 128 (inside one 128-row descale block), or 192 / 256
                 // (wide: launched only for K/V descales uniform along the keys)
  int stages;    // depth of the K, V and Vt rings (>= 2: the producer loads block r + stages - 1
                 // before transposing block r, into the raw V stage block r - 1 left)
  // true: the consumers loop over tiles blockIdx.x + k gridDim.x (launched one CTA per SM); false:
  // one tile per CTA (grid = tiles). The producer's stream is the same code in both. Two flavours
  // because the tile loop alone makes ptxas keep the d128 steady step's descriptors and barrier
  // addresses in ordinary registers (docs/DECISIONS.md, "FP8: two flavours, looping or not").
  bool persistent = false;
  // true (with persistent): the CTAs walk the paired static schedule of causal launches
  // (src/protocol/tile_scheduler.h paired_slot: units of query blocks m and M-1-m, equal key counts,
  // dealt round robin) instead of the linear order; the producer and both consumers walk the same
  // slots. Its own kernels, chosen at compile time, as the bf16 forward's paired walk
  // (docs/DECISIONS.md, "The paired causal schedule", "FP8: the paired causal walk").
  bool paired = false;
  // The consumers skip O's rescale when every factor of the warp is exactly 1 (no row max moved, the
  // same V descale): a vote and a branch per step, against kD / 2 multiplies ("FP8: the unit rescale
  // skipped").
  bool skip_unit_rescale = false;
};
constexpr Fp8Config persistent(Fp8Config c) {
  c.persistent = true;
  return c;
}
constexpr Fp8Config paired(Fp8Config c) {
  c.persistent = true;
  c.paired = true;
  return c;
}

template <Fp8Config C>
struct Fp8Layout {
  static constexpr int kHeadDim = C.head_dim;
  static constexpr int kBlockN = C.block_n;
  static constexpr int kStages = C.stages;
  static constexpr int kConsumerWGs = 2;
  static constexpr int kBlockM = 128;  // = one Q descale block (kFp8ScaleRows)
  static constexpr int kThreads = 128 * (kConsumerWGs + 1);

  // Q and K rows (head dim, K-major for the QK wgmma): chunks of at most 128 bytes = 128 e4m3,
  // 128B swizzle; head dim 64 is one 64-byte chunk with the 64B swizzle.
  static constexpr int kQKChunkBytes = C.head_dim < 128 ? C.head_dim : 128;
  static constexpr int kQKChunks = C.head_dim / kQKChunkBytes;
  // Vt (keys, K-major for the PV wgmma): chunks of 128 keys (vt_offset), 128B swizzle, or 64B for a
  // 64-key chunk. Each k32 step of PV lies inside one chunk.
  static constexpr int kVtChunks = (C.block_n + 127) / 128;

  // Register split (setmaxnreg, PTX ISA "setmaxnreg"): the producer warpgroup transposes V, so it
  // keeps 56; 128 x 56 + 256 x 224 = 64,512 = 384 x 168, the CTA's launch allocation (65536 / 384
  // rounded down to a multiple of 8), which is the pool setmaxnreg moves registers within.
  static constexpr int kProducerRegs = 56;
  static constexpr int kConsumerRegs = 224;

  // Shared memory, from a 1024-aligned base. The raw V stages have the K stages' layout
  // (raw_v_offset: swizzled chunks; only the transposing threads read them, with ldmatrix).
  static constexpr int kQBytes = kBlockM * C.head_dim;
  static constexpr int kKBytes = C.block_n * C.head_dim;
  static constexpr int kVBytes = C.block_n * C.head_dim;
  static constexpr int kVtBytes = C.head_dim * C.block_n;
  // Q is double-buffered: a CTA runs tiles one after another (persistent), and the producer loads
  // the Q of keyed tile i + 1 while the consumers still read tile i's (slot = i % 2).
  static constexpr int kQSlots = 2;
  static constexpr int kNumBarriers = 2 * kQSlots + 5 * C.stages;
  static constexpr int kOffQ = 0;
  static constexpr int kOffK = kOffQ + kQSlots * kQBytes;
  static constexpr int kOffV = kOffK + C.stages * kKBytes;
  static constexpr int kOffVt = kOffV + C.stages * kVBytes;
  static constexpr int kOffBar = kOffVt + C.stages * kVtBytes;
  static constexpr int kSmemBytes = kOffBar + 8 * kNumBarriers + 1024;  // + alignment slack

  // Barrier slots (mbarrier i at kOffBar + 8 i) and arrival counts.
  static constexpr uint32_t kBarQFull = 0;                   // + slot; 1: producer arrive.expect_tx
  static constexpr uint32_t kBarQEmpty = kQSlots;            // + slot; 8: one per consumer warp
  static constexpr uint32_t kBarKFull = 2 * kQSlots;         // + stage; 1: expect_tx
  static constexpr uint32_t kBarKEmpty = kBarKFull + C.stages;   // + stage; 8: one per consumer warp
  static constexpr uint32_t kBarVFull = kBarKFull + 2 * C.stages;  // + stage; 1: raw V landed (expect_tx)
  static constexpr uint32_t kBarVtFull = kBarKFull + 3 * C.stages;  // + stage; 1: after the transpose's
                                                                    //   named barrier (or expect_tx for V^T)
  static constexpr uint32_t kBarVtEmpty = kBarKFull + 4 * C.stages;  // + stage; 8: one per consumer warp
  static constexpr uint32_t kFullArrivals = 1;
  static constexpr uint32_t kEmptyArrivals = 4 * kConsumerWGs;
  // Named barrier of the producer warpgroup's transpose. The kernel's others: id 0 (the CTA
  // barrier after init) and ids 2, 3, the consumers' pingpong token ring (src/protocol/pingpong.h
  // TokenRing<2>, as the bf16 forward); 8.. (the bf16 epilogues) are unused here.
  static constexpr uint32_t kBarTranspose = 1;

  static_assert(C.head_dim == 64 || C.head_dim == 128 || C.head_dim == 256, "head dims 64, 128, 256");
  static_assert(C.block_n == 64 || C.block_n == 128 || C.block_n == 192 || C.block_n == 256,
                "block_n: whole Vt chunks of 128 keys plus at most one of 64 (vt_offset)");
  static_assert(kBlockM == kFp8ScaleRows, "a tile is one Q descale block");
  // A K/V block inside one descale block (per-block K/V descales) needs block_n | 128; wider blocks
  // are launched only for uniform K/V descales (per tensor, per head) and V row-major: see
  // wide_blocks_apply in src/sm90/fa3_fwd_fp8.cu.
  static constexpr bool kUniformKVDescalesOnly = kFp8ScaleRows % C.block_n != 0;
  static_assert(C.stages >= 2 && C.stages <= 4, "stages 2..4 (see Fp8Config::stages)");
  static_assert(!C.paired || C.persistent, "paired: the CTAs loop over their slots (persistent)");
  static_assert(kQBytes % 1024 == 0 && kKBytes % 1024 == 0 && kVtBytes % 1024 == 0, "tiles keep 1024-byte alignment");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumerWGs <= (65536 / kThreads) / 8 * 8 * kThreads,
                "setmaxnreg split beyond the CTA's launch allocation: the .inc would never complete");
};

// The shipped configurations (instantiated in src/sm90/fa3_fwd_fp8.cu; persistent(c) gives the tile
// loop's twin). Two stages everywhere: the smaller footprint ("FP8: two stages"). The unit-rescale
// skip at d256 only, where O is 128 registers per thread against 64-key blocks.
constexpr Fp8Config kFp8D64 = {.head_dim = 64, .block_n = 128, .stages = 2, .persistent = false, .paired = false, .skip_unit_rescale = false};
constexpr Fp8Config kFp8D128 = {.head_dim = 128, .block_n = 128, .stages = 2, .persistent = false, .paired = false, .skip_unit_rescale = false};
constexpr Fp8Config kFp8D256 = {.head_dim = 256, .block_n = 64, .stages = 2, .persistent = false, .paired = false, .skip_unit_rescale = true};
constexpr Fp8Config kFp8D64N256 = {.head_dim = 64, .block_n = 256, .stages = 2, .persistent = false, .paired = false, .skip_unit_rescale = false};
constexpr Fp8Config kFp8D128N192 = {.head_dim = 128, .block_n = 192, .stages = 2, .persistent = false, .paired = false, .skip_unit_rescale = false};

}  // namespace flashptx::fa3
