// FA3 forward: what the host, the kernel and the CPU models share (plain C++, no device code).
//
//   FwdParams     the kernel's one argument (passed by value as a __grid_constant__ parameter)
//   FwdVarlenParams  the varlen kernels' one argument: FwdParams plus the sequence table
//   FwdConfig     the compile-time shape of one specialization, with named fields
//   FwdLayout<C>  everything derived from a config: tile sizes, the register split, the shared-
//                 memory plan (offsets of Q, the K and V rings, the O staging buffer, the barriers)
//                 and the barrier slots with their arrival counts. The kernel carves shared memory
//                 from it, and the launch plan sizes the launch from it (through the kernel table
//                 rows of src/sm90/fa3_fwd.cu); tests/host/test_plan.cpp checks it. (The ring
//                 model's shared-memory ledger, `flashptx ledger 0x02`, prints the generic equation,
//                 not this object.) Protocols: tools/guide/PROTOCOLS.md.
// The specializations that exist are listed once, in src/sm90/fa3_fwd.cu.
#pragma once
#include <cuda.h>
#include <cstdint>

namespace flashptx::fa3 {

struct FwdParams {
  CUtensorMap tma_q;  // [batch, seqlen_q, heads_q, d]  box (64, block_m, 1, 1), 128B swizzle
  CUtensorMap tma_k;  // [batch, seqlen_k, heads_kv, d] box (64, block_n, 1, 1), 128B swizzle
  CUtensorMap tma_v;  // [batch, seqlen_k, heads_kv, d] box (64, block_n, 1, 1), 128B swizzle
  CUtensorMap tma_o;  // [batch, seqlen_q, heads_q, d]  box (64, 64, 1, 1),      128B swizzle
  float* lse;         // [batch, heads_q, seqlen_q] or nullptr
  uint64_t* trace;    // trace buffer (src/protocol/trace.h), traced builds only
  int seqlen_q, seqlen_k, heads_q, heads_kv, batch;
  int num_m_blocks;
  int causal;
  float softmax_scale;       // natural-log scale (for LSE)
  float softmax_scale_log2;  // softmax_scale * log2(e)
  // The dynamic causal schedule (the kernels with FwdLayout::kDynamicWalk; nullptr: their paired
  // static schedule). The caller's two words (flashptx_fwd_params::tile_counter): [0] the next tile
  // index minus gridDim.x, [1] the CTAs that have stopped fetching; zero at launch, and zero again
  // when the kernel ends (its last CTA resets them). Tiles go out longest-first inside sections of
  // lpt_section (batch, head) pairs (tile_scheduler.h tile_from_linear_lpt). (Last in the block: the
  // fields above keep their offsets, and the kernels that never read these keep their listings.)
  unsigned* tile_counter;
  int lpt_section;
};

struct FwdConfig {
  int head_dim;      // 64, 128 or 256
  int block_n;       // keys per K (and V) ring stage
  int stages;        // depth of the K and V rings
  int consumer_wgs;  // consumer warpgroups; each owns 64 query rows, so block_m = 64 * consumer_wgs
  bool pingpong;     // consumers take turns issuing through the named-barrier token ring
  bool persistent;   // the kernel loops over work tiles (grid may be smaller than the tile count)
  bool bf16;         // bf16 in and out; fp16 otherwise
  bool varlen = false;  // packed variable-length sequences (FwdVarlenParams; one tile per CTA)
  bool paired = false;  // persistent causal walk: the paired static schedule (tile_scheduler.h paired_slot)
  bool traced = false;  // the instrumented build (FLASHPTX_TRACE, `flashptx trace`): its own register split
};

template <FwdConfig C>
struct FwdLayout {
  static constexpr int kHeadDim = C.head_dim;
  static constexpr int kBlockN = C.block_n;
  static constexpr int kStages = C.stages;
  static constexpr int kConsumerWGs = C.consumer_wgs;
  static constexpr int kBlockM = 64 * C.consumer_wgs;
  static constexpr int kThreads = 128 * (C.consumer_wgs + 1);  // warpgroup 0 is the producer
  static constexpr int kChunks = C.head_dim / 64;  // 64-element (128-byte) columns of a swizzled tile

  // Register split (setmaxnreg; PTX ISA "setmaxnreg"): 128 x 24 + 256 x 240 = 64,512 with two
  // consumers, 128 x 32 + 384 x 160 = 65,536 with three: exactly the registers the CTA was launched
  // with (168 x 384, 128 x 512), which is the pool setmaxnreg moves registers within; a split that
  // asks for more never completes its .inc (USETMAXREG.TRY_ALLOC retries forever, measured on the
  // H200). The paired causal kernels move 8 registers per consumer thread to the producer (40 / 232):
  // the paired walk's index arithmetic spilled at 24 (in the test flavour's bounded waits). The d64
  // paired kernel moves 16 more (56 / 224): its producer holds both the paired and the dynamic walk
  // (kDynamicWalk), which spilled 24 bytes at 40; d64's consumers (O 32, S 64, P 32 registers) fit.
  // The traced kernels (C.traced) move 8 more for the producer's stamps (which spilled with the walk
  // run one tile ahead): their consumers run 8 registers below the release kernel's.
  static constexpr int kProducerRegs =
      C.consumer_wgs == 2 ? (C.paired || C.traced ? (C.head_dim == 64 || (C.paired && C.traced) ? 56 : 40) : 24) : 32;
  static constexpr int kConsumerRegs =
      C.consumer_wgs == 2 ? (C.paired || C.traced ? (C.head_dim == 64 || (C.paired && C.traced) ? 224 : 232) : 240)
                          : 160;

  // Shared-memory plan, in bytes from a 1024-aligned base (the 128B swizzle repeats every
  // 8 rows x 128 B, so every tile starts 1024-aligned).
  static constexpr int kQBytes = kBlockM * C.head_dim * 2;
  static constexpr int kKVBytes = C.block_n * C.head_dim * 2;  // one stage of K (or of V)
  // The tile feed (the persistent and paired kernels of two consumer warpgroups): the producer walks
  // the schedule and hands each tile to the consumers through kTileSlots 16-byte slots {m_block,
  // head, batch, n_max} (m_block < 0: no more tiles), each guarded by tile_full (the producer's
  // release-arrive after its store) and tile_empty (one arrival per consumer warp after its read).
  // The consumers then hold no walk state and do no division between tiles (src/sm90/fa3_fwd.cuh,
  // TileFeed; measured on the H200: tools/NOTES.md, "The tile feed"). On in every paired kernel
  // (the 192-row one's 160-register consumers spilled with the paired walk of their own); off for
  // the plain 192-row kernel (measured 0-2% slower there) and the one-tile-per-CTA kernels.
  // (paired() sets persistent, and varlen() clears it: persistent alone names the looping kernels.)
  static constexpr bool kTileFeed = C.persistent && (C.consumer_wgs == 2 || C.paired);
  static constexpr int kTileSlots = kTileFeed ? 2 : 0;
  // O is staged for its TMA store in a buffer of its own where it fits (the next tile's Q can then
  // load while this tile drains); otherwise (head dim 256) in halves beside Q in the persistent
  // kernels (kOHalves, below), or in the Q buffer one tile per CTA, which stays taken until the store
  // has read it.
  static constexpr bool kSeparateO =
      2 * kQBytes + 2 * C.stages * kKVBytes + 8 * (2 + 4 * C.stages + 2 * kTileSlots) + 1024 <= 227 * 1024;
  // The producer walks one tile ahead of its loads (Producer::run_walk_ahead) in the kernels with a
  // tile feed, except the 128-row d64 kernel's non-causal loop, where it measured 2-3% slower at
  // 512-1k (tools/NOTES.md, "Walking ahead").
  static constexpr bool kWalkAhead = kTileFeed && (C.paired || C.head_dim != 64);
  // Q slots: two at d128 with the walk ahead, where they fit beside O's buffer, and in the 128-row
  // d64 paired kernel: the next tile's Q then loads right after the next tile's first K, not after
  // the current tile's last QK. Measured on the H200 (tools/NOTES.md, "Walking ahead", "Two Q slots
  // in the d64 paired kernel"): +1-2% at d128 512; d64 causal 512 +2% (two runs; 1k-2k equal) in the
  // paired kernel with the dynamic schedule and the deferred epilogue; in the 128-row d64
  // non-causal loop -3 to -5% (one slot there). The slot of a CTA's k-th tile is k % 2.
  static constexpr int kQSlots =
      (kWalkAhead && kSeparateO && (C.head_dim == 128 || (C.head_dim == 64 && C.paired && C.consumer_wgs == 2)) &&
       3 * kQBytes + 2 * C.stages * kKVBytes + 8 * (4 + 4 * C.stages + 2 * kTileSlots) + 16 * kTileSlots + 1024 <=
           227 * 1024)
          ? 2
          : 1;
  static constexpr int kNumBarriers = 2 * kQSlots + 4 * C.stages + 2 * kTileSlots;  // q, k/v rings, tile feed
  // The dynamic schedule (TileWalk::next_dynamic: an atomic tile counter, longest-first inside L2
  // sections) beside the paired static one, chosen at run time by FwdParams::tile_counter: in the
  // 128-row d64 paired kernel only. Measured on the H200 (tools/NOTES.md, "The dynamic schedule"):
  // d64 causal 512-2k +4-5% over the paired static schedule; d128 and d256 causal 1-15% slower
  // (their K/V stay in L2 better in the paired order, whose concurrent CTAs share few heads) and the
  // 192-row kernel mixed, so they keep the static schedule alone.
  static constexpr bool kDynamicWalk = C.paired && C.head_dim == 64 && C.consumer_wgs == 2;
  // Where a whole O buffer does not fit (head dim 256), the persistent kernels stage O half at a time
  // in a buffer of half the Q tile (each warpgroup 128 of its columns, stored, then the other 128),
  // so that Q, as with kSeparateO, is free once the tile's last QK has retired and the next tile's Q
  // loads under this tile's drain and epilogue. One-tile-per-CTA kernels keep O in the Q buffer.
  static constexpr bool kOHalves =
      !kSeparateO && C.persistent &&
      kQBytes + kQBytes / 2 + 2 * C.stages * kKVBytes + 8 * kNumBarriers + 16 * kTileSlots + 1024 <= 227 * 1024;
  static constexpr int kOBytes = kSeparateO ? kQBytes : (kOHalves ? kQBytes / 2 : 0);
  static constexpr int kOffQ = 0;  // + slot * kQBytes
  static constexpr int kOffK = kOffQ + kQSlots * kQBytes;
  static constexpr int kOffV = kOffK + C.stages * kKVBytes;
  static constexpr int kOffO = kOffV + C.stages * kKVBytes;
  static constexpr int kOffBar = kOffO + kOBytes;
  static constexpr int kOffTile = kOffBar + 8 * kNumBarriers;  // tile-feed slots (16-byte aligned)
  static constexpr int kSmemBytes = kOffTile + 16 * kTileSlots + 1024;  // + alignment slack

  // Barrier slots: mbarrier i lives at kOffBar + 8 i. Arrival counts beside each.
  static constexpr uint32_t kBarQFull = 0;                      // 1: producer arrive.expect_tx
  static constexpr uint32_t kBarQEmpty = 1;                     // kQEmptyArrivals (below)
  static constexpr uint32_t kBarKFull = 2;                      // + stage; 1: producer expect_tx
  static constexpr uint32_t kBarKEmpty = 2 + C.stages;          // + stage; 4G: one per consumer warp
  static constexpr uint32_t kBarVFull = 2 + 2 * C.stages;       // + stage; 1
  static constexpr uint32_t kBarVEmpty = 2 + 3 * C.stages;      // + stage; 4G
  static constexpr uint32_t kBarTileFull = 2 + 4 * C.stages;    // + slot; 1: producer arrive
  static constexpr uint32_t kBarTileEmpty = kBarTileFull + kTileSlots;  // + slot; 4G: one per consumer warp
  // The second Q slot's pair, after the tile feed's (the other slots keep their numbers):
  // q_full(s) = kBarQFull + s * kBarQStride, q_empty(s) = kBarQEmpty + s * kBarQStride.
  static constexpr uint32_t kBarQStride = kQSlots == 2 ? kBarTileEmpty + kTileSlots : 0;
  static constexpr uint32_t kFullArrivals = 1;
  static constexpr uint32_t kEmptyArrivals = 4 * C.consumer_wgs;
  static constexpr uint32_t kTileFullArrivals = 1;
  static constexpr uint32_t kTileEmptyArrivals = 4 * C.consumer_wgs;
  // q_empty: with O in its own buffer or in halves beside Q (kOBytes > 0), every consumer warp
  // arrives once the wait that retires the tile's last QK has passed; with O in the Q buffer, every
  // consumer warpgroup's storing thread arrives once its TMA store has read the buffer.
  static constexpr uint32_t kQEmptyArrivals = kOBytes > 0 ? 4 * C.consumer_wgs : C.consumer_wgs;

  static_assert(C.head_dim % 64 == 0 && C.head_dim <= 256, "head dims are multiples of 64 up to 256");
  static_assert(C.block_n % 16 == 0 && C.block_n <= 256, "block_n is a multiple of 16 (wgmma k16)");
  static_assert(!kOHalves || (C.head_dim == 256 && !C.varlen), "O in halves: 2 of the 4 chunks per round (d256)");
  static_assert(C.consumer_wgs == 2 || C.consumer_wgs == 3, "two or three consumer warpgroups");
  static_assert(!C.pingpong || C.consumer_wgs >= 2, "pingpong needs two or three consumer warpgroups");
  static_assert(kOffTile % 16 == 0, "tile-feed slots are read with ld.shared.v4");
  static_assert(kQBytes % 1024 == 0 && kKVBytes % 1024 == 0, "tiles keep 1024-byte alignment");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * C.consumer_wgs <= 65536, "register file");
  // setmaxnreg moves registers within the CTA's launch allocation: __launch_bounds__(kThreads, 1)
  // gives each thread 65536 / kThreads registers rounded down to a multiple of 8.
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * C.consumer_wgs <= (65536 / kThreads) / 8 * 8 * kThreads,
                "setmaxnreg split beyond the CTA's launch allocation: the .inc would never complete");
};

// The shipped configurations (their kernels are instantiated in src/sm90/fa3_fwd.cu; the ring model
// prints their layouts, tools/models/ring_model.cpp). Each in bf16; fp16() gives the fp16 twin.
constexpr FwdConfig kD64M128 = {.head_dim = 64, .block_n = 128, .stages = 3, .consumer_wgs = 2,
                                .pingpong = true, .persistent = true, .bf16 = true};
constexpr FwdConfig kD64M192 = {.head_dim = 64, .block_n = 128, .stages = 3, .consumer_wgs = 3,
                                .pingpong = true, .persistent = true, .bf16 = true};
constexpr FwdConfig kD128N128 = {.head_dim = 128, .block_n = 128, .stages = 2, .consumer_wgs = 2,
                                 .pingpong = true, .persistent = true, .bf16 = true};
// d256: 64-key blocks (every power-of-two length an exact number of blocks; 80 left 512 keys 6.4
// blocks) and the token ring (FA3 leaves it off above head dim 128; here ptxas also places half of
// the exponentials before the PV wait with it, none without): +2-5% at every grid point over
// 128 x 80 without the ring (tools/NOTES.md, "Token ring at the tile edges").
constexpr FwdConfig kD256 = {.head_dim = 256, .block_n = 64, .stages = 2, .consumer_wgs = 2,
                             .pingpong = true, .persistent = false, .bf16 = true};
// Its persistent twin (non-causal up to 4k keys): CTAs loop over the tiles with the tile feed and O
// staged in halves (FwdLayout::kOHalves), so the next tile's Q loads under this tile's drain and
// epilogue: +10% at 512, +6% at 1k, +2% at 2k, equal at 4k, 1-2% slower at 8k-16k on the H200
// (tools/NOTES.md, "O in halves"), where the plain kernel keeps the launches.
constexpr FwdConfig kD256Persistent = {.head_dim = 256, .block_n = 64, .stages = 2, .consumer_wgs = 2,
                                       .pingpong = true, .persistent = true, .bf16 = true};
// The instrumented twin (src/sm90/fa3_fwd_trace*.cu): the same shape and protocol, its own
// instantiation (compiled with FLASHPTX_TRACE) and register split (FwdLayout::kProducerRegs).
constexpr FwdConfig traced(FwdConfig c) {
  c.traced = true;
  return c;
}
constexpr FwdConfig fp16(FwdConfig c) {
  c.bf16 = false;
  return c;
}
// The paired causal twin of a persistent configuration: the same shape, its persistent CTAs walk
// the paired static schedule (units of tiles m and M-1-m). The plan runs it for causal masks only
// (src/plan.cpp); the plain kernel keeps the non-causal launches (whose code it leaves unchanged).
constexpr FwdConfig paired(FwdConfig c) {
  c.paired = true;
  c.persistent = true;  // its CTAs loop over their units (d256's one-tile-per-CTA shape included)
  return c;
}
// The varlen twin of a configuration: the same shape, tiles decoded from FwdVarlenTable, one tile
// per CTA (the launch order is the schedule: see FwdVarlenTable).
constexpr FwdConfig varlen(FwdConfig c) {
  c.varlen = true;
  c.persistent = false;
  return c;
}

// ---- variable-length batches (flashptx_fwd_varlen) ----------------------------------------------
// Q, K, V and O are packed [total, heads, d] tensors; sequence b owns rows [cu[b], cu[b+1]). The
// host reads the prefix sums (the caller's host copy), validates them, and hands the kernel what
// it needs in its parameter block, so the kernel reads no sequence data from device memory (none
// the validation did not see) and needs no workspace:
//   seq[s]          sequence s of the schedule: its first packed row of Q and of K/V and its lengths
//   tile_prefix[s]  the work tiles (query blocks x heads) of the sequences before s; tile_prefix
//                   [num_seqs] is the launch's tile count
// The host orders the sequences longest-first (by the K/V blocks of their longest tile, then by
// tile count; sequences of zero query rows are left out), and inside a sequence the kernel visits
// query blocks longest-first under a causal mask, every head of a block before the next block.
// One CTA per tile, blockIdx.x = tile index: the hardware dispatches CTAs in index order as SMs
// free up, a greedy list scheduler, so the order above is what makes it longest-first (for tiles
// of unequal length it balanced better than a static round-robin: tools/NOTES.md, v2; the
// fixed-length causal launches' paired schedule needs equal-cost pairs, which sequences of
// unequal length do not give). A tile finds its sequence by binary
// search over tile_prefix (src/protocol/tile_scheduler.h): log2(1024) = 10 constant-bank loads
// per role, once per CTA.
// Size: kernel parameters may take 32764 bytes on sm_90 (CUDA 12.1+); 1024 sequences take 20 KiB.
constexpr int kVarlenMaxSeqs = 1024;  // = FLASHPTX_VARLEN_MAX_SEQS (include/flashptx.h)

struct VarlenSeq {
  int q_start, k_start;  // packed row of the sequence's first query / key
  int len_q, len_k;      // its lengths (len_q >= 1: empty sequences are not in the table)
};

struct FwdVarlenTable {
  void* o;                        // O's base, for the tail rows stored one by one (see the epilogue)
  int64_t o_row_stride, o_head_stride;  // in elements
  int total_q;                    // packed query rows: LSE is [heads_q, total_q]
  int num_seqs;                   // entries of seq[] (sequences with at least one query row)
  int tile_prefix[kVarlenMaxSeqs + 1];
  VarlenSeq seq[kVarlenMaxSeqs];
};

struct FwdVarlenParams {
  FwdParams fwd;  // tensor maps over the packed tensors (batch extent 1), scale, heads, causal
  FwdVarlenTable table;
};
static_assert(sizeof(FwdVarlenParams) <= 32764, "kernel parameter space on sm_90 (CUDA 12.1+)");

}  // namespace flashptx::fa3
