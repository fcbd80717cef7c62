// FA3 forward: what the host, the kernel and the CPU models share (plain C++, no device code).
//
//   FwdParams     the kernel's one argument (passed by value as a __grid_constant__ parameter)
//   FwdVarlenParams  the varlen kernels' one argument: FwdParams plus the sequence table
//   FwdConfig     one specialization: its shape and every protocol switch, named fields
//   FwdLayout<C>  the sizes and offsets derived from a config: tile sizes, the shared-
//                 memory plan (offsets of Q, the K and V rings, the O staging buffer, the barriers)
//                 and the barrier slots with their arrival counts. The kernel carves shared memory
//                 from it, and the launch plan sizes the launch from it (through the kernel table
//                 rows of src/sm90/fa3_fwd.cu); tests/host/test_plan.cpp checks it. (The ring
//                 model's shared-memory ledger, `flashptx ledger 0x02`, prints the generic equation,
//                 not this object.) Protocols: docs/PROTOCOLS.md.
// The configurations that exist are listed once, below ("the shipped configurations"), and
// instantiated once, in src/sm90/fa3_fwd.cu.
#pragma once
#include <cuda.h>
#include <cstdint>

namespace flashptx::fa3 {

struct FwdParams {
  CUtensorMap tma_q;  // [batch, seqlen_q, heads_q, d]  box (64, block_m, 1, 1), 128B swizzle
  CUtensorMap tma_k;  // [batch, seqlen_k, heads_kv, d] box (64, block_n, 1, 1), 128B swizzle
  CUtensorMap tma_v;  // [batch, seqlen_k, heads_kv, d_v] box (64, block_n, 1, 1), 128B swizzle
  CUtensorMap tma_o;  // [batch, seqlen_q, heads_q, d_v]  box (64, 64, 1, 1),      128B swizzle
                      // (d_v = FwdConfig::head_dim_v; a box past d or d_v (d96): zero-filled on
                      // load, clipped on store)
  float* lse;         // [batch, heads_q, seqlen_q] or nullptr
  uint64_t* trace;    // trace buffer (src/protocol/trace.h), traced builds only
  int seqlen_q, seqlen_k, heads_q, heads_kv, batch;
  int num_m_blocks;
  int causal;
  float softmax_scale;       // natural-log scale (for LSE)
  float softmax_scale_log2;  // softmax_scale * log2(e)
  // The dynamic causal schedule (the kernels with FwdConfig::dynamic_walk; nullptr: their paired
  // static schedule). The caller's two words (flashptx_fwd_params::tile_counter): [0] the next tile
  // index minus gridDim.x, [1] the CTAs that have stopped fetching; zero at launch, and zero again
  // when the kernel ends (its last CTA resets them). Tiles go out longest-first inside sections of
  // lpt_section (batch, head) pairs (tile_scheduler.h tile_from_linear_lpt). (Last in the block: the
  // fields above keep their offsets, and the kernels that never read these keep their listings.)
  unsigned* tile_counter;
  int lpt_section;
  // The local kernels' score modifiers (FwdConfig::window, FwdConfig::softcap; the other kernels never
  // read them). window_left / window_right: FlashAttention's sliding window, bottom-right aligned:
  // query row i sees key j iff i + diag - window_left <= j <= i + diag + window_right (diag = len_k -
  // len_q), -1 unbounded on that side; the plan folds a causal mask in as window_right = 0.
  // softcap_prescale: softmax_scale / c for a softcap c > 0 (then softmax_scale = c and
  // softmax_scale_log2 = c log2(e), so the logit is c tanh(scale s / c)), 0 without a softcap.
  // (In the tail padding: sizeof stays 640, so the varlen table's offset, and with it the varlen
  // kernels' listings, do not move.)
  int window_left, window_right;
  float softcap_prescale;
  // The sink kernels' learnable attention sinks (FwdConfig::sinks; the other kernels never read it):
  // fp32 [heads_q], one logit per query head in the units of the scores (natural log, after the
  // scale and the softcap), joining every row's softmax denominator and adding no value. (In the
  // tail padding, as above.)
  const float* sinks;
};
static_assert(sizeof(FwdParams) == 640, "FwdParams grows in its tail padding only (FwdVarlenParams::table)");

// How a kernel stages O for its TMA store (FwdConfig::o_staging).
enum class OStaging : uint8_t {
  kInQ,     // in the Q buffer, which stays taken until the store has read it (one tile per CTA)
  kOwn,     // in a buffer of its own: the next tile's Q loads while this tile drains
  kHalves,  // half at a time (each warpgroup 128 of its columns, stored, then the other 128) in a
            // buffer of half the Q tile: Q, as with kOwn, is free once the tile's last QK has
            // retired (head dim 256 in a tile loop, where a whole O buffer does not fit)
};

// One specialization, every protocol switch named. The shipped ones are listed below, each field
// set explicitly; FwdLayout derives sizes and offsets from them and checks that each switch fits.
// Why each kernel has the switches it has: docs/DECISIONS.md, under the name given beside the field.
struct FwdConfig {
  // ---- shape
  int head_dim;      // of Q and K: 64, 96, 128, 192 or 256
  int head_dim_v;    // of V and O: head_dim, or 128 beside a head_dim of 192 (DeepSeek's split);
                     // the PV GEMM's N, O's registers, staging and store, and V's ring stages
                     // follow it ("Head dims 96 and 192, and a V head dim of its own")
  int block_n;       // keys per K (and V) ring stage
  int stages;        // depth of the K and V rings
  int consumer_wgs;  // consumer warpgroups; each owns 64 query rows, so block_m = 64 * consumer_wgs
  bool bf16;         // bf16 in and out; fp16 otherwise
  // ---- schedule
  bool persistent;    // the kernel loops over work tiles (grid may be smaller than the tile count)
  bool paired;        // persistent causal walk: the paired static schedule (tile_scheduler.h paired_slot)
  bool dynamic_walk;  // also the dynamic schedule (TileWalk::next_dynamic), run when FwdParams::tile_counter
                      // is set ("The dynamic schedule")
  bool varlen;        // packed variable-length sequences (FwdVarlenParams; one tile per CTA)
  // ---- producer
  bool tile_feed;   // the producer alone walks the schedule and hands each tile to the consumers
                    // through shared-memory slots (TileFeed; "The tile feed")
  bool walk_ahead;  // the producer walks one tile ahead of its loads (Producer::run_walk_ahead;
                    // "Walking ahead")
  int q_slots;      // Q buffers: 1, or 2 so that the next tile's Q loads right after its first K,
                    // not after this tile's last QK (the CTA's k-th tile in slot k % 2; "Two Q slots")
  // ---- register split (setmaxnreg; "Register splits")
  int producer_regs, consumer_regs;
  // ---- consumers
  bool pingpong;        // consumers take turns issuing through the named-barrier token ring
                        // ("Token ring at the tile edges")
  OStaging o_staging;   // where O is staged for its TMA store ("O in halves")
  bool skip_blocks;     // each warpgroup visits only the K/V blocks its own 64 rows see
                        // (Consumer::own_n_blocks; "Per-warpgroup block skipping")
  bool half_first;      // the first block a warpgroup visits is computed 64 columns wide where its
                        // right half is masked for all its rows ("The tile feed and the half-width diagonal")
  bool tree_max;        // the row maximum as a tree, not one chain ("The softmax's dependent steps")
  bool lazy_rescale;    // O is rescaled only when a row's maximum grew by more than kRescaleLog2
                        // ("The lazy rescale")
  bool defer_epilogue;  // a tile's O is staged and stored under the next tile's QK(0)
                        // ("The deferred epilogue")
  bool traced;          // the instrumented build (FLASHPTX_TRACE, `flashptx trace`)
  // ---- score modifiers (the local kernels; "Sliding window and softcap: one local kernel per shape")
  bool window;          // the sliding window of FwdParams::window_left/right (run-time values, -1
                        // unbounded): the block walk runs [n_min, n_max), blocks wholly outside the
                        // window are never loaded, the blocks on both edges are masked
  bool softcap;         // scores become c tanh(scale s / c) where FwdParams::softcap_prescale != 0
                        // (tanh.approx.f32, before the mask)
  bool sinks;           // the learnable attention sinks of FwdParams::sinks: the head's sink logit
                        // joins each row's denominator in the epilogue (Consumer::epilogue;
                        // "Attention sinks: the epilogue's denominator")
  bool sinks_optional;  // (with sinks) FwdParams::sinks may be null: then every head's sink logit is
                        // -inf, which the sink epilogue already treats as no sink (exactly: O = O / l,
                        // LSE = ln 2 (ref + log2 l)); the main loop is the same either way, so one
                        // kernel serves the window, the softcap and the sinks, each at run time
                        // ("Score modifiers at head dims 96 and 192: one kernel with optional sinks")
};

template <FwdConfig C>
struct FwdLayout {
  static constexpr int kHeadDim = C.head_dim;
  static constexpr int kBlockN = C.block_n;
  static constexpr int kStages = C.stages;
  static constexpr int kConsumerWGs = C.consumer_wgs;
  static constexpr int kBlockM = 64 * C.consumer_wgs;
  static constexpr int kThreads = 128 * (C.consumer_wgs + 1);  // warpgroup 0 is the producer
  static constexpr int kHeadDimV = C.head_dim_v;
  // 64-element (128-byte) columns of a swizzled tile: Q and K span kChunks, V and O kChunksV. A head
  // dim that is not a multiple of 64 (96) takes whole chunks: the TMA box past the tensor's last
  // column is filled with zeros (no global read), the QK GEMM reads its head_dim columns only, and
  // the PV GEMM's N is the padded width kDimVPad, whose columns past head_dim_v are P x 0 = 0 and are
  // never stored (the O store's box is clipped at the tensor's last column: PTX ISA "Tensor copy
  // restrictions", out-of-bound elements are not written).
  static constexpr int kChunks = (C.head_dim + 63) / 64;
  static constexpr int kChunksV = (C.head_dim_v + 63) / 64;
  static constexpr int kDimVPad = 64 * kChunksV;

  // Register split (setmaxnreg; PTX ISA "setmaxnreg"): the producer's and the consumers' registers
  // must add up to no more than the CTA was launched with, which is the pool setmaxnreg moves
  // registers within; a split that asks for more never completes its .inc (USETMAXREG.TRY_ALLOC
  // retries forever). Checked below.
  static constexpr int kProducerRegs = C.producer_regs;
  static constexpr int kConsumerRegs = C.consumer_regs;

  // Shared-memory plan, in bytes from a 1024-aligned base (the 128B swizzle repeats every
  // 8 rows x 128 B, so every tile starts 1024-aligned).
  static constexpr int kQBytes = kBlockM * 64 * kChunks * 2;
  static constexpr int kKBytes = C.block_n * 64 * kChunks * 2;   // one stage of K
  static constexpr int kVBytes = C.block_n * 64 * kChunksV * 2;  // one stage of V
  static constexpr int kKVBytes = kKBytes;  // (the ring model's name: K's stage, V's too where the head dims are equal)
  // The tile feed: kTileSlots 16-byte slots {m_block, head, batch, n_max} (m_block < 0: no more
  // tiles), each guarded by tile_full (the producer's release-arrive after its store) and tile_empty
  // (one arrival per consumer warp after its read). The consumers then hold no walk state.
  static constexpr int kTileSlots = C.tile_feed ? 2 : 0;
  static constexpr bool kSeparateO = C.o_staging == OStaging::kOwn;
  static constexpr bool kOHalves = C.o_staging == OStaging::kHalves;
  static constexpr int kQSlots = C.q_slots;
  static constexpr int kNumBarriers = 2 * kQSlots + 4 * C.stages + 2 * kTileSlots;  // q, k/v rings, tile feed
  static constexpr int kOTileBytes = kBlockM * kDimVPad * 2;  // O of the tile, staged whole
  static constexpr int kOBytes = kSeparateO ? kOTileBytes : (kOHalves ? kQBytes / 2 : 0);
  static constexpr int kOffQ = 0;  // + slot * kQBytes
  static constexpr int kOffK = kOffQ + kQSlots * kQBytes;
  static constexpr int kOffV = kOffK + C.stages * kKBytes;
  static constexpr int kOffO = kOffV + C.stages * kVBytes;
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

  static_assert(C.head_dim % 32 == 0 && C.head_dim >= 64 && C.head_dim <= 256,
                "head dims are multiples of 32 from 64 to 256 (a last half chunk is zero-filled)");
  static_assert(C.head_dim_v % 32 == 0 && C.head_dim_v >= 64 && C.head_dim_v <= C.head_dim,
                "V's head dim is at most Q's: O fits wherever Q's buffer stages it");
  static_assert(C.head_dim_v == C.head_dim || (C.head_dim % 64 == 0 && C.head_dim_v % 64 == 0),
                "a separate V head dim in whole chunks");
  static_assert(C.head_dim % 64 == 0 || C.o_staging != OStaging::kHalves,
                "a half chunk (d96): O staged whole (the halves store two whole chunks per round); the "
                "varlen rows stored from registers write head_dim_v columns, whole chunks or not");
  static_assert(C.o_staging != OStaging::kInQ || kOTileBytes <= kQBytes, "O staged in the Q buffer fits there");
  static_assert(C.block_n % 16 == 0 && C.block_n <= 256, "block_n is a multiple of 16 (wgmma k16)");
  static_assert(C.consumer_wgs == 2 || C.consumer_wgs == 3, "two or three consumer warpgroups");
  static_assert(!C.pingpong || C.consumer_wgs >= 2, "pingpong needs two or three consumer warpgroups");
  // Each switch where it fits:
  static_assert(!C.paired || C.persistent, "paired: the CTAs loop over their units (persistent)");
  static_assert(!C.varlen || (!C.persistent && !C.paired), "varlen: one tile per CTA, in launch order");
  static_assert(!C.dynamic_walk || C.paired, "dynamic_walk: chosen at run time beside the paired walk");
  static_assert(!C.tile_feed || C.persistent, "tile_feed: tiles are handed on inside a tile loop");
  static_assert(!C.walk_ahead || C.tile_feed, "walk_ahead: the consumers read the walk from the tile feed");
  static_assert(C.q_slots == 1 || (C.q_slots == 2 && C.walk_ahead && kSeparateO),
                "two Q slots: the producer knows the next tile (walk_ahead) and O does not live in Q");
  static_assert(!kOHalves || (C.head_dim == 256 && C.persistent && !C.varlen),
                "O in halves: 2 of the 4 chunks per round (d256), in a tile loop");
  static_assert(C.o_staging != OStaging::kInQ || !C.persistent || C.head_dim == 256,
                "O in the Q buffer only where neither a buffer of its own nor halves fit");
  static_assert(!C.half_first || (C.block_n == 128 && !C.varlen), "half_first: the left 64 of a 128-key block");
  static_assert(!C.defer_epilogue || (C.tile_feed && kSeparateO && !C.varlen),
                "defer_epilogue: O's own buffer, staged under the next tile's QK(0) inside a tile loop");
  static_assert(!C.window || (!C.tile_feed && !C.skip_blocks && !C.half_first),
                "window: every role walks the tiles itself (the tile feed's slot has no n_min), and every "
                "warpgroup visits the tile's blocks [n_min, n_max) (no per-warpgroup skip)");
  static_assert(!C.sinks || (C.window && !C.lazy_rescale && !C.defer_epilogue),
                "sinks: on the local kernels' walk, and the epilogue's one row sum is both O's and the "
                "LSE's (no lazy rescale), read where the tile ends (no deferred epilogue)");
  static_assert(!C.sinks_optional || C.sinks, "sinks_optional: a sink kernel whose FwdParams::sinks may be null");
  static_assert(kOffTile % 16 == 0, "tile-feed slots are read with ld.shared.v4");
  static_assert(kQBytes % 1024 == 0 && kKBytes % 1024 == 0 && kVBytes % 1024 == 0 && kOBytes % 1024 == 0,
                "tiles keep 1024-byte alignment");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA (Q slots, O staging, rings, barriers, tile feed)");
  static_assert(kProducerRegs % 8 == 0 && kConsumerRegs % 8 == 0 && kProducerRegs >= 24 && kConsumerRegs <= 256,
                "setmaxnreg counts are multiples of 8 in [24, 256]");
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * C.consumer_wgs <= 65536, "register file");
  // setmaxnreg moves registers within the CTA's launch allocation: __launch_bounds__(kThreads, 1)
  // gives each thread 65536 / kThreads registers rounded down to a multiple of 8.
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * C.consumer_wgs <= (65536 / kThreads) / 8 * 8 * kThreads,
                "setmaxnreg split beyond the CTA's launch allocation: the .inc would never complete");
};

// ---- the shipped configurations ------------------------------------------------------------------
// Every FA3 forward kernel's configuration, one per protocol (the fp16 twins: fp16(c)). Their kernels
// are instantiated in src/sm90/fa3_fwd.cu (the traced ones in src/sm90/fa3_fwd_trace*.cu), and the
// kernel table prints them (`flashptx kernels`). The two-consumer kernels split 24 / 240 registers,
// the three-consumer ones 32 / 160; the paired walk's index arithmetic takes 40 / 232, the d64
// paired kernel's two walks (paired and dynamic) 56 / 224, and the traced builds' stamps 8 more
// for the producer ("Register splits").
//
// The 128 x 128 d64 kernel: the one-tile-per-CTA and non-causal loop (no walk ahead: "Walking ahead").
constexpr FwdConfig kD64M128 = {
    .head_dim = 64, .head_dim_v = 64, .block_n = 128, .stages = 3, .consumer_wgs = 2, .bf16 = true,
    .persistent = true, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = true, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = true,
    .tree_max = true, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
// The 192 x 128 d64 kernel: no tile feed ("The tile feed"); its warpgroups skip blocks.
constexpr FwdConfig kD64M192 = {
    .head_dim = 64, .head_dim_v = 64, .block_n = 128, .stages = 3, .consumer_wgs = 3, .bf16 = true,
    .persistent = true, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 32, .consumer_regs = 160,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = true, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
constexpr FwdConfig kD128N128 = {
    .head_dim = 128, .head_dim_v = 128, .block_n = 128, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = true, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = true, .walk_ahead = true, .q_slots = 2, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = true,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
// d256: 64-key blocks (every power-of-two length an exact number of blocks) and the token ring,
// which FA3's admission table leaves off above head dim 128 ("Token ring at the tile edges").
// One tile per CTA, O in the Q buffer.
constexpr FwdConfig kD256 = {
    .head_dim = 256, .head_dim_v = 256, .block_n = 64, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kInQ, .skip_blocks = true, .half_first = false,
    .tree_max = true, .lazy_rescale = true, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
// Its persistent twin (the plan's non-causal launches up to 4k keys: "O in halves").
constexpr FwdConfig kD256Persistent = {
    .head_dim = 256, .head_dim_v = 256, .block_n = 64, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = true, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = true, .walk_ahead = true, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kHalves, .skip_blocks = true, .half_first = false,
    .tree_max = true, .lazy_rescale = true, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
// The paired causal twins: the same shapes, persistent CTAs walking the paired static schedule
// (units of tiles m and M-1-m). The plan runs them for causal masks only (src/plan.cpp).
// The 128-row d64 one also has the dynamic schedule, two Q slots and the deferred epilogue.
constexpr FwdConfig kD64M128Paired = {
    .head_dim = 64, .head_dim_v = 64, .block_n = 128, .stages = 3, .consumer_wgs = 2, .bf16 = true,
    .persistent = true, .paired = true, .dynamic_walk = true, .varlen = false,
    .tile_feed = true, .walk_ahead = true, .q_slots = 2, .producer_regs = 56, .consumer_regs = 224,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = true,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = true, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
// The 192-row one takes the tile feed (its 160-register consumers cannot hold the paired walk).
constexpr FwdConfig kD64M192Paired = {
    .head_dim = 64, .head_dim_v = 64, .block_n = 128, .stages = 3, .consumer_wgs = 3, .bf16 = true,
    .persistent = true, .paired = true, .dynamic_walk = false, .varlen = false,
    .tile_feed = true, .walk_ahead = true, .q_slots = 1, .producer_regs = 32, .consumer_regs = 160,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = true, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
constexpr FwdConfig kD128N128Paired = {
    .head_dim = 128, .head_dim_v = 128, .block_n = 128, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = true, .paired = true, .dynamic_walk = false, .varlen = false,
    .tile_feed = true, .walk_ahead = true, .q_slots = 2, .producer_regs = 40, .consumer_regs = 232,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = true,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
constexpr FwdConfig kD256Paired = {
    .head_dim = 256, .head_dim_v = 256, .block_n = 64, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = true, .paired = true, .dynamic_walk = false, .varlen = false,
    .tile_feed = true, .walk_ahead = true, .q_slots = 1, .producer_regs = 40, .consumer_regs = 232,
    .pingpong = true, .o_staging = OStaging::kHalves, .skip_blocks = true, .half_first = false,
    .tree_max = true, .lazy_rescale = true, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
// The varlen twins: the same shapes, tiles decoded from FwdVarlenTable, one tile per CTA (the launch
// order is the schedule: see FwdVarlenTable). d64 takes the 128-row tile.
constexpr FwdConfig kD64M128Varlen = {
    .head_dim = 64, .head_dim_v = 64, .block_n = 128, .stages = 3, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = true,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
constexpr FwdConfig kD128N128Varlen = {
    .head_dim = 128, .head_dim_v = 128, .block_n = 128, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = true,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
constexpr FwdConfig kD256Varlen = {
    .head_dim = 256, .head_dim_v = 256, .block_n = 64, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = true,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kInQ, .skip_blocks = true, .half_first = false,
    .tree_max = false, .lazy_rescale = true, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
// The instrumented twins (src/sm90/fa3_fwd_trace*.cu, compiled with FLASHPTX_TRACE): the release
// kernels' protocols, 8 more producer registers for the stamps, the chain maximum.
constexpr FwdConfig kTracedD128N128 = {
    .head_dim = 128, .head_dim_v = 128, .block_n = 128, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = true, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = true, .walk_ahead = true, .q_slots = 2, .producer_regs = 40, .consumer_regs = 232,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = true,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = true,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
constexpr FwdConfig kTracedD128N128Paired = {
    .head_dim = 128, .head_dim_v = 128, .block_n = 128, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = true, .paired = true, .dynamic_walk = false, .varlen = false,
    .tile_feed = true, .walk_ahead = true, .q_slots = 2, .producer_regs = 56, .consumer_regs = 224,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = true,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = true,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
constexpr FwdConfig kTracedD64M128Paired = {
    .head_dim = 64, .head_dim_v = 64, .block_n = 128, .stages = 3, .consumer_wgs = 2, .bf16 = true,
    .persistent = true, .paired = true, .dynamic_walk = true, .varlen = false,
    .tile_feed = true, .walk_ahead = true, .q_slots = 2, .producer_regs = 56, .consumer_regs = 224,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = true,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = true, .traced = true,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
// The local kernels (FwdConfig::window and ::softcap, run-time window and softcap values): the
// one-tile-per-CTA shapes of the varlen kernels, each warpgroup visiting every block of its tile
// (docs/DECISIONS.md, "Sliding window and softcap: one local kernel per shape"). The plan runs them
// for a window or a softcap only: a problem with neither keeps today's kernels.
constexpr FwdConfig kD64M128Local = {
    .head_dim = 64, .head_dim_v = 64, .block_n = 128, .stages = 3, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = true, .softcap = true, .sinks = false, .sinks_optional = false};
constexpr FwdConfig kD128N128Local = {
    .head_dim = 128, .head_dim_v = 128, .block_n = 128, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = true, .softcap = true, .sinks = false, .sinks_optional = false};
constexpr FwdConfig kD256Local = {
    .head_dim = 256, .head_dim_v = 256, .block_n = 64, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kInQ, .skip_blocks = false, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = true, .softcap = true, .sinks = false, .sinks_optional = false};
// Head dims 96 and 192, and d_qk 192 with d_v 128 (src/sm90/fa3_fwd_hdim.cu): one kernel per
// shape and dtype, one CTA per tile in longest-first order, for causal and non-causal masks alike
// (docs/DECISIONS.md, "Head dims 96 and 192, and a V head dim of its own"). d96: the d128 tile and
// rings in whole chunks, the last chunk's right half zero-filled (FwdLayout::kChunks); its three
// 64-column consumers of FA3's 192-row tile would need O (64 padded columns), S and P in 160
// registers. d192: 112-key blocks, the most two stages of K and V hold beside Q (216 KiB; FA3's
// choice), O staged in the Q buffer as at d256; 14 n8 blocks per row, not a power of two (no tree
// maximum). d192 with d_v 128: 128-key blocks (V's stage is two thirds of K's: 208 KiB), O in the
// Q buffer. d96 and (192, 128) compute their first block full width (no half_first: with it and no
// tile feed ptxas serialised the wgmma pipeline, C7511).
constexpr FwdConfig kD96 = {
    .head_dim = 96, .head_dim_v = 96, .block_n = 128, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
constexpr FwdConfig kD192 = {
    .head_dim = 192, .head_dim_v = 192, .block_n = 112, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kInQ, .skip_blocks = true, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
constexpr FwdConfig kD192V128 = {
    .head_dim = 192, .head_dim_v = 128, .block_n = 128, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kInQ, .skip_blocks = false, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = false, .softcap = false, .sinks = false, .sinks_optional = false};
// Their varlen twins (FwdVarlenParams), the same switches over the packed sequences.
constexpr FwdConfig packed(FwdConfig c) {
  c.varlen = true;
  return c;
}
// The sink kernels (FwdConfig::sinks; src/sm90/fa3_fwd_sink.cu): the local kernels with the
// learnable attention sinks, so that one kernel per head dim and dtype serves a sink with any mask,
// window and softcap (docs/DECISIONS.md, "Attention sinks: the epilogue's denominator").
constexpr FwdConfig with_sinks(FwdConfig c) {
  c.sinks = true;
  return c;
}
constexpr FwdConfig fp16(FwdConfig c) {
  c.bf16 = false;
  return c;
}

// The local kernels at head dims 96 and 192 and (192, 128) (src/sm90/fa3_fwd_hdim_local.cu): the
// window, the softcap and the sinks, all three at run time, one kernel per shape and dtype
// (docs/DECISIONS.md, "Score modifiers at head dims 96 and 192: one kernel with optional sinks").
// The shapes, rings and O staging of kD96, kD192 and kD192V128, with every warpgroup on every block
// of its tile (the window's walk: no per-warpgroup skip at d192) and the sink epilogue, whose -inf
// sink (sinks null) is none. Shared memory as their plain twins' (no field that differs changes
// FwdLayout's plan).
constexpr FwdConfig kD96Local = {
    .head_dim = 96, .head_dim_v = 96, .block_n = 128, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kOwn, .skip_blocks = false, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = true, .softcap = true, .sinks = true, .sinks_optional = true};
constexpr FwdConfig kD192Local = {
    .head_dim = 192, .head_dim_v = 192, .block_n = 112, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kInQ, .skip_blocks = false, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = true, .softcap = true, .sinks = true, .sinks_optional = true};
constexpr FwdConfig kD192V128Local = {
    .head_dim = 192, .head_dim_v = 128, .block_n = 128, .stages = 2, .consumer_wgs = 2, .bf16 = true,
    .persistent = false, .paired = false, .dynamic_walk = false, .varlen = false,
    .tile_feed = false, .walk_ahead = false, .q_slots = 1, .producer_regs = 24, .consumer_regs = 240,
    .pingpong = true, .o_staging = OStaging::kInQ, .skip_blocks = false, .half_first = false,
    .tree_max = false, .lazy_rescale = false, .defer_epilogue = false, .traced = false,
    .window = true, .softcap = true, .sinks = true, .sinks_optional = true};
// Their varlen twins, packed(kD96Local) etc. (src/sm90/fa3_fwd_hdim_local.cu): the varlen forward at
// these dims, plain or with a window and a softcap, on one kernel per shape and dtype (the varlen
// ABI has no sinks: FwdParams::sinks stays null, the -inf sink that is none; docs/DECISIONS.md,
// "Varlen at head dims 96 and 192: the local kernel serves the plain varlen too").

// ---- the sliding window's blocks (FwdConfig::window) --------------------------------------------
// The K/V blocks [n_min, n_max) that query rows [m_block * block_m, min(+ block_m, len_q)) can see
// under the window (left, right) (-1: unbounded), bottom-right aligned (diag = len_k - len_q): row i
// sees keys [i + diag - left, i + diag + right], clipped to [0, len_k). The tile's last row bounds
// the right edge, its first row the left edge; no visible key: the empty range {0, 0}. In 64 bits
// (a huge window on a long sequence must not wrap); once per tile. Host (the plan's schedule and
// tests/host) and device share it.
struct BlockRange {
  int n_min, n_max;
};
constexpr BlockRange window_blocks(int m_block, int block_m, int block_n, int len_q, int len_k, int left, int right) {
  const long long first = static_cast<long long>(m_block) * block_m;
  const long long end = first + block_m < len_q ? first + block_m : len_q;
  const long long diag = static_cast<long long>(len_k) - len_q;
  long long hi = len_k, lo = 0;  // visible keys [lo, hi)
  if (right >= 0 && end - 1 + diag + right + 1 < hi) hi = end - 1 + diag + right + 1;
  if (left >= 0 && first + diag - left > lo) lo = first + diag - left;
  if (end <= first || hi <= lo) return BlockRange{0, 0};
  return BlockRange{static_cast<int>(lo / block_n), static_cast<int>((hi + block_n - 1) / block_n)};
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
// free up, a greedy list scheduler, so the order above is what makes it longest-first (the
// fixed-length causal launches' paired schedule needs equal-cost pairs, which sequences of
// unequal length do not give: docs/DECISIONS.md, "Varlen: longest-first launch order"). A tile
// finds its sequence by binary
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
