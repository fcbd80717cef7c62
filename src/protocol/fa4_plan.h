// The FA4 forward plan (sm_100a, issue 12 part 3): everything the kernel (src/sm100/fa4_fwd.cuh) and
// its CPU evidence share, written __host__ __device__ (FLASHPTX_HD) and free of CUDA headers:
//
//   1. roles        which warp does what, and its register target (setmaxnreg)
//   2. barriers     every mbarrier of the kernel: who arrives (and how: TMA bytes, tcgen05.commit,
//                   one arrive per warp), who waits, and the arrival count per CTA of the pair
//   3. MmaPlan      the operand tiles (umma::SmemTile), instruction descriptors, the TMEM column map
//                   (S0/P0, S1/P1, O0, O1: tmem::Fa4FwdColumnPlan) and, per K step, the exact
//                   operands the MMA thread hands to tcgen05.mma (descriptors, TMEM addresses,
//                   enable-input-d); the TMEM addresses of the softmax's and correction's ld/st
//   4. mma_tile_schedule   the MMA warp's order of one work tile (waits, issues, commits), as a
//                   visitor walk: the kernel's MMA thread, the peer CTA's relay warp, the emulator
//                   replay (tests/host/test_fa4_replay.cpp) and the protocol model
//                   (tools/models/fa4_forward.cpp) all walk this one function
//   5. softmax arithmetic   the row max, the conditional-rescale reference step (the retained-
//                   reference recurrence of flashptx/online_softmax.h), the exponentials split
//                   between MUFU.EX2 and the degree-3 emulation (flashptx/exp2_emulation.h), the
//                   packing of P, the row sum; the correction's rescale and the epilogue's
//                   normalisation and LSE
//
// What it certifies: the kernel and the replay compute their descriptors, TMEM columns, K-step
// advances and softmax arithmetic with the same code, so the replay's agreement with fp64 is a
// statement about the addresses and the arithmetic the kernel issues. What it does not certify:
// anything about timing, asynchrony or the memory model on a Blackwell GPU (no such GPU ran this).
#pragma once
#include <cmath>
#include <cstdint>

#include "src/protocol/exp2_emulation.h"
#include "src/protocol/hd.h"
#include "src/protocol/tile_scheduler.h"
#include "src/protocol/tmem_plan.h"
#include "src/protocol/umma_plan.h"
#include "ptx/tcgen05_desc.cuh"

// `#pragma unroll` in nvcc's device pass (host compilers do not know the pragma).
#if defined(__CUDA_ARCH__)
#define FLASHPTX_FA4_UNROLL _Pragma("unroll")
#else
#define FLASHPTX_FA4_UNROLL
#endif

namespace flashptx::fa4 {

// ---- shape constants ------------------------------------------------------------------------------
constexpr int kBlockN = 128;     // keys per K/V block (the N of S = Q K^T, the K of O += P V)
constexpr int kStageRows = 128;  // query rows of one Q stage in one CTA: the 128 TMEM lanes
constexpr int kQStages = 2;      // two Q tiles in flight per CTA: H (stage 0) and L (stage 1)
constexpr int kChunkElems = 64;  // 2-byte elements per 128-byte swizzle row (one TMA box column)
constexpr int kSwizzleRow = 128; // bytes

// Query rows of one work tile: kQStages stages x cta_group CTAs x 128 rows.
FLASHPTX_HD constexpr int tile_rows(int cta_group) { return kQStages * cta_group * kStageRows; }
// First query row of stage `stage` in CTA `rank` of work tile `m_block`. For cta_group::2 the pair's
// M = 256 MMA takes rows [0, 128) from rank 0 and [128, 256) from rank 1: stage s of the pair covers
// tile rows [256 s, 256 s + 256).
FLASHPTX_HD constexpr int q_row0(int m_block, int stage, int rank, int cta_group) {
  return m_block * tile_rows(cta_group) + (stage * cta_group + rank) * kStageRows;
}

// ---- 1. roles (16 warps) --------------------------------------------------------------------------
enum class Role : uint8_t { kSoftmaxH, kSoftmaxL, kCorrection, kMma, kEpilogue, kLoad, kScheduler, kCount };

struct RoleSpec {
  Role role;
  const char* name;
  int first_warp, last_warp;
  int regs;  // setmaxnreg target of the role's warpgroup
};
// Warps 12-15 are one warpgroup (setmaxnreg acts on whole warpgroups): one register target.
// 2 x 128 x 192 + 128 x 80 + 128 x 48 = 65,536: the register file, exactly.
// (A switch, not a table: device code may not index a namespace-scope constexpr array at run time.)
FLASHPTX_HD constexpr RoleSpec role_spec(Role r) {
  switch (r) {
    case Role::kSoftmaxH: return {Role::kSoftmaxH, "softmax H", 0, 3, 192};
    case Role::kSoftmaxL: return {Role::kSoftmaxL, "softmax L", 4, 7, 192};
    case Role::kCorrection: return {Role::kCorrection, "correction", 8, 11, 80};
    case Role::kMma: return {Role::kMma, "MMA issuer (TMEM owner; the relay in a pair's peer CTA)", 12, 12, 48};
    case Role::kEpilogue: return {Role::kEpilogue, "epilogue (TMA store)", 13, 13, 48};
    case Role::kLoad: return {Role::kLoad, "load (TMA Q, K, V)", 14, 14, 48};
    case Role::kScheduler: return {Role::kScheduler, "tile scheduler (cluster launch control)", 15, 15, 48};
    case Role::kCount: break;
  }
  return {Role::kCount, "?", -1, -2, 0};
}
constexpr int kRoleCount = static_cast<int>(Role::kCount);
constexpr int kWarps = 16;
constexpr int kThreads = 32 * kWarps;
constexpr int kSoftmaxWarp0 = 0, kCorrectionWarp0 = 8, kMmaWarp = 12, kEpilogueWarp = 13, kLoadWarp = 14,
              kSchedulerWarp = 15;

FLASHPTX_HD constexpr Role role_of_warp(int warp) {
  for (int r = 0; r < kRoleCount; ++r) {
    const RoleSpec s = role_spec(static_cast<Role>(r));
    if (warp >= s.first_warp && warp <= s.last_warp) return s.role;
  }
  return Role::kCount;
}
FLASHPTX_HD constexpr int role_warps(Role role) { return role_spec(role).last_warp - role_spec(role).first_warp + 1; }
FLASHPTX_HD constexpr int role_regs(Role role) { return role_spec(role).regs; }
constexpr int register_total() {
  int n = 0;
  for (int r = 0; r < kRoleCount; ++r) n += 32 * role_warps(static_cast<Role>(r)) * role_regs(static_cast<Role>(r));
  return n;
}
static_assert(register_total() == 65536, "the role register targets fill the register file exactly");
static_assert(role_of_warp(kMmaWarp) == Role::kMma && role_of_warp(kLoadWarp) == Role::kLoad &&
                  role_of_warp(kEpilogueWarp) == Role::kEpilogue && role_of_warp(kSchedulerWarp) == Role::kScheduler &&
                  role_of_warp(kCorrectionWarp0) == Role::kCorrection && role_of_warp(kSoftmaxWarp0) == Role::kSoftmaxH,
              "warp ids");

// ---- 2. barriers ------------------------------------------------------------------------------------
// Every mbarrier of one CTA (the pair uses the same offsets in both CTAs). `copies` barriers each.
enum class Bar : uint8_t {
  kQFull,       // [stage] load (TMA Q, expect_tx) -> MMA; the leader also counts the peer's relay
  kQEmpty,      // [stage] MMA (tcgen05.commit after the tile's last QK on the stage) -> load
  kKvFull,      // [slot]  load (TMA K or V, expect_tx) -> MMA; + the peer's relay on the leader
  kKvEmpty,     // [slot]  MMA (tcgen05.commit after the block's last reader) -> load
  kSFull,       // [stage] MMA (commit after QK) -> softmax of the stage
  kPReady,      // [stage] softmax (P stored to TMEM, one arrive per warp; peer warps remotely) -> MMA
  kORescaled,   // [stage] correction (O rescaled, or free for the tile's first PV; per warp) -> MMA
  kOReady,      // [stage] MMA (commit after PV) -> correction (rescale / epilogue) and MMA (S free)
  kStatsFull,   // [stage] softmax (row scale gamma, or the final row sum; per warp) -> correction
  kStatsEmpty,  // [stage] correction (read the record; per warp) -> softmax
  kOStaged,     // correction (O tile in shared memory, fenced; per warp) -> epilogue
  kOFree,       // epilogue (TMA store has read the staging buffer) -> correction
  kSchedFull,   // [slot]  scheduler (tile index written) -> every role
  kSchedEmpty,  // [slot]  every role (read the tile index; per warp, or per single-thread role) -> scheduler
  kClc,         // cluster launch control response (try_cancel, complete_tx 16 bytes) -> scheduler
  kCount
};

// How the arrivals of one phase are made.
enum class Signal : uint8_t {
  kTmaBytes,    // one arrive.expect_tx by the issuing thread + complete_tx of the copies
  kCommit,      // one tcgen05.commit (cta_group::2: multicast to both CTAs: one arrival in each)
  kPerWarp,     // one arrive per producing warp (after __syncwarp), remote for the peer's warps
  kPerThread,   // one arrive by a single-thread role
};

struct BarrierSpec {
  Bar bar;
  const char* name;
  Signal signal;
  Role producer;         // for the per-stage barriers of the softmax: stage H's role (L is the same)
  Role consumer;
  bool pair_to_leader;   // cta_group::2: the peer CTA's producers arrive on the leader's barrier too
};

FLASHPTX_HD constexpr BarrierSpec barrier_spec(Bar b) {
  switch (b) {
    case Bar::kQFull: return {b, "q_full", Signal::kTmaBytes, Role::kLoad, Role::kMma, true};
    case Bar::kQEmpty: return {b, "q_empty", Signal::kCommit, Role::kMma, Role::kLoad, false};
    case Bar::kKvFull: return {b, "kv_full", Signal::kTmaBytes, Role::kLoad, Role::kMma, true};
    case Bar::kKvEmpty: return {b, "kv_empty", Signal::kCommit, Role::kMma, Role::kLoad, false};
    case Bar::kSFull: return {b, "s_full", Signal::kCommit, Role::kMma, Role::kSoftmaxH, false};
    case Bar::kPReady: return {b, "p_ready", Signal::kPerWarp, Role::kSoftmaxH, Role::kMma, true};
    case Bar::kORescaled: return {b, "o_rescaled", Signal::kPerWarp, Role::kCorrection, Role::kMma, true};
    case Bar::kOReady: return {b, "o_ready", Signal::kCommit, Role::kMma, Role::kCorrection, false};
    case Bar::kStatsFull: return {b, "stats_full", Signal::kPerWarp, Role::kSoftmaxH, Role::kCorrection, false};
    case Bar::kStatsEmpty: return {b, "stats_empty", Signal::kPerWarp, Role::kCorrection, Role::kSoftmaxH, false};
    case Bar::kOStaged: return {b, "o_staged", Signal::kPerWarp, Role::kCorrection, Role::kEpilogue, false};
    case Bar::kOFree: return {b, "o_free", Signal::kPerThread, Role::kEpilogue, Role::kCorrection, false};
    case Bar::kSchedFull: return {b, "sched_full", Signal::kPerThread, Role::kScheduler, Role::kCount, false};
    case Bar::kSchedEmpty: return {b, "sched_empty", Signal::kPerWarp, Role::kCount, Role::kScheduler, true};
    case Bar::kClc: return {b, "clc", Signal::kTmaBytes, Role::kScheduler, Role::kScheduler, false};
    case Bar::kCount: break;
  }
  return {Bar::kCount, "?", Signal::kPerThread, Role::kCount, Role::kCount, false};
}
constexpr int kBarCount = static_cast<int>(Bar::kCount);

// Agents that read a tile index from the scheduler ring, per CTA: every warp of the multi-warp roles,
// and the single-thread roles (MMA or relay, epilogue, load) once each. The scheduler does not.
constexpr int kTileReaders = 8 + 4 + 3;

// Arrivals that complete one phase of barrier `b` in CTA `rank` of a `cta_group` pair. The kernel
// initialises its barriers with this; the protocol model checks it against the roles.
FLASHPTX_HD constexpr uint32_t arrival_count(Bar b, int cta_group, int rank) {
  const BarrierSpec s = barrier_spec(b);
  const bool leader = rank == 0;
  const uint32_t pair = (cta_group == 2 && s.pair_to_leader && leader) ? 2u : 1u;
  switch (s.signal) {
    case Signal::kTmaBytes: return pair == 2u ? 2u : 1u;  // leader: its expect_tx + the peer's relay
    case Signal::kCommit: return 1u;
    case Signal::kPerThread: return 1u;
    case Signal::kPerWarp:
      if (b == Bar::kSchedEmpty) return static_cast<uint32_t>(kTileReaders) * pair;
      return static_cast<uint32_t>(role_warps(s.producer)) * pair;
  }
  return 0u;
}

// ---- 3. the MMA plan ----------------------------------------------------------------------------------
using umma::SmemTile;

// What the issuing thread passes to one tcgen05.mma (one K step).
struct Issue {
  uint32_t d_tmem;
  bool a_tmem_form;  // TS: A (P) from TMEM at a_tmem; SS: A (Q) through a_desc
  uint32_t a_tmem;
  uint64_t a_desc;
  uint64_t b_desc;
  uint32_t idesc;
  bool accumulate;   // enable-input-d
};

// One head dim / CTA group / dtype. D: head dim (64 or 128), G: cta_group.
template <int D, int G, bool Bf16>
struct MmaPlan {
  static_assert(D == 64 || D == 128, "head dims 64 and 128 (TMEM: 2 x 128 + 2 x D <= 512 columns)");
  static_assert(G == 1 || G == 2, "cta_group 1 or 2");
  static_assert(G == 1 || D == 128, "the pair form splits V by head-dim halves of one 128-byte row: D = 128");
  static constexpr int kD = D, kG = G;
  static constexpr int kNLocal = kBlockN / G;  // K rows (keys) of one block held by one CTA
  static constexpr int kDLocal = D / G;        // V columns (head dim) of one block held by one CTA
  static constexpr int kM = kStageRows * G;    // the instruction's M
  static constexpr uint32_t kQkSteps = umma::ksteps(D * 2);        // 32 bytes of K per MMA
  static constexpr uint32_t kPvSteps = umma::ksteps(kBlockN * 2);  // 16 keys per MMA

  // Q [128 rows x D] and K [kNLocal rows x D]: K-major, 128-byte swizzle, rows of 128 bytes (64
  // elements of D) grouped 8 to a 1024-byte atom (SBO), 64-element columns of D one tile-height apart
  // (k_atom_stride): exactly what TMA writes for boxes of (64, rows) with CU_TENSOR_MAP_SWIZZLE_128B.
  // (Functions returning the objects, not static objects: device code may not take the address of a
  // static constexpr object, which a member call does.)
  FLASHPTX_HD static constexpr SmemTile q_tile() {
    return SmemTile{ptx::UmmaMajor::kK, ptx::UmmaSwizzle::k128B, 16u, 1024u, 2u,
                    static_cast<uint32_t>(kStageRows * kSwizzleRow)};
  }
  FLASHPTX_HD static constexpr SmemTile k_tile() {
    return SmemTile{ptx::UmmaMajor::kK, ptx::UmmaSwizzle::k128B, 16u, 1024u, 2u,
                    static_cast<uint32_t>(kNLocal * kSwizzleRow)};
  }
  // V [128 keys x kDLocal] as the B operand of O += P V is MN-major (N = head dim contiguous):
  // LBO = distance between 64-column chunks of the head dim (128 keys x 128 B), SBO = 1024 between
  // groups of 8 keys. One K step (16 keys) is 2 x SBO = 2048 bytes.
  FLASHPTX_HD static constexpr SmemTile v_tile() {
    return SmemTile{ptx::UmmaMajor::kMN, ptx::UmmaSwizzle::k128B, static_cast<uint32_t>(kBlockN * kSwizzleRow), 1024u,
                    2u, 0u};
  }
  static constexpr uint32_t kQBytes = kStageRows * D * 2;   // one Q stage
  static constexpr uint32_t kKBytes = kNLocal * D * 2;      // one K block (this CTA's share)
  static constexpr uint32_t kVBytes = kBlockN * kDLocal * 2;

  static constexpr ptx::UmmaF16Type kAB = Bf16 ? ptx::UmmaF16Type::kBF16 : ptx::UmmaF16Type::kF16;
  static constexpr uint32_t kIdescQK =
      ptx::make_umma_idesc_f16<kAB, ptx::UmmaDType::kF32, kM, kBlockN, ptx::UmmaMajor::kK, ptx::UmmaMajor::kK, G>();
  static constexpr uint32_t kIdescPV =
      ptx::make_umma_idesc_f16<kAB, ptx::UmmaDType::kF32, kM, D, ptx::UmmaMajor::kK, ptx::UmmaMajor::kMN, G>();
  static_assert(ptx::umma_a_tmem_ok(kIdescPV), "PV reads P from TMEM: A must be K-major");

  // TMEM (one CTA's 512 columns, allocated whole so its base is column 0 of lane 0): S_i at
  // [128 i, 128 i + 128), P_i (bf16 pairs) in the tail half of S_i, O_i at [256 + D i, 256 + D i + D).
  FLASHPTX_HD static constexpr tmem::Fa4FwdColumnPlan cols() { return tmem::Fa4FwdColumnPlan{kBlockN, D, kQStages}; }
  static_assert(cols().check() == tmem::TmemError::kOk, "the S/P/O map fits 512 columns");
  static constexpr uint32_t kTmemCols = cols().alloc_columns();
  FLASHPTX_HD static constexpr uint32_t s_col(int i) { return cols().s(static_cast<uint32_t>(i)).begin; }
  FLASHPTX_HD static constexpr uint32_t p_col(int i) { return cols().p(static_cast<uint32_t>(i)).begin; }
  FLASHPTX_HD static constexpr uint32_t o_col(int i) { return cols().o(static_cast<uint32_t>(i)).begin; }

  // K step s of S_i = Q_i K^T: A = Q stage i, B = the K block, D = S_i; the first step overwrites.
  FLASHPTX_HD static constexpr Issue qk(uint32_t tmem_base, uint32_t q_smem, uint32_t k_smem, int i, uint32_t s) {
    Issue r{};
    r.d_tmem = tmem_base + s_col(i);
    r.a_tmem_form = false;
    r.a_tmem = 0;
    r.a_desc = q_tile().desc(q_smem, s);
    r.b_desc = k_tile().desc(k_smem, s);
    r.idesc = kIdescQK;
    r.accumulate = s > 0;
    return r;
  }
  // K step s (16 keys) of O_i += P_i V: A = P_i from TMEM (8 columns of bf16 pairs per step), B = the
  // V block, D = O_i. `accumulate_tile`: false for the tile's first block (O_i starts from zero).
  FLASHPTX_HD static constexpr Issue pv(uint32_t tmem_base, uint32_t v_smem, int i, uint32_t s, bool accumulate_tile) {
    Issue r{};
    r.d_tmem = tmem_base + o_col(i);
    r.a_tmem_form = true;
    r.a_tmem = tmem_base + p_col(i) + umma::tmem_kstep_columns(s);
    r.a_desc = 0;
    r.b_desc = v_tile().desc(v_smem, s);
    r.idesc = kIdescPV;
    r.accumulate = accumulate_tile || s > 0;
    return r;
  }

  // TMEM addresses of the .32x32b ld/st of warp `warp` (its lane quarter): S_i half h (64 columns:
  // ptxas needs 128 consecutive registers plus the address for one .x128 load, more than the 128 a
  // thread has at kernel entry, so S is read as two .x64), P_i fragment c (16 columns: 32 keys as
  // 16-bit pairs), O_i chunk c (16 columns: the correction warpgroup has 80 registers).
  static constexpr int kSLoadCols = 64;
  static constexpr int kOChunkCols = 16;
  FLASHPTX_HD static constexpr uint32_t quarter_lane(int warp) { return 32u * static_cast<uint32_t>(warp % 4); }
  FLASHPTX_HD static constexpr uint32_t s_taddr(uint32_t base, int warp, int i, int h) {
    return base + ptx::tmem_addr(quarter_lane(warp), s_col(i) + static_cast<uint32_t>(kSLoadCols * h));
  }
  FLASHPTX_HD static constexpr uint32_t p_taddr(uint32_t base, int warp, int i, int c) {
    return base + ptx::tmem_addr(quarter_lane(warp), p_col(i) + 16u * static_cast<uint32_t>(c));
  }
  FLASHPTX_HD static constexpr uint32_t o_taddr(uint32_t base, int warp, int i, int c) {
    return base + ptx::tmem_addr(quarter_lane(warp), o_col(i) + static_cast<uint32_t>(kOChunkCols * c));
  }

  // Where TMA box column chunk c of each tile lands (bytes from the tile start).
  FLASHPTX_HD static constexpr uint32_t q_chunk(int c) { return static_cast<uint32_t>(c) * q_tile().k_atom_stride; }
  FLASHPTX_HD static constexpr uint32_t k_chunk(int c) { return static_cast<uint32_t>(c) * k_tile().k_atom_stride; }
  FLASHPTX_HD static constexpr uint32_t v_chunk(int c) { return static_cast<uint32_t>(c) * v_tile().lbo; }
  // The O staging tile has Q's layout (128 rows, 64-column chunks, 128B swizzle): byte of element (r, d).
  FLASHPTX_HD static constexpr uint32_t o_stage_byte(uint32_t r, uint32_t d) {
    const uint32_t a = q_chunk(static_cast<int>(d / kChunkElems)) + r * kSwizzleRow + (d % kChunkElems) * 2u;
    return a ^ (((a >> 7) & 7u) << 4);  // the 128-byte swizzle on a 1024-aligned tile
  }
  // The same address from the row's first byte (tile + o_stage_byte(r, 0)): the chunk of d, then the
  // 16-byte unit XOR r % 8, then the byte inside the unit.
  FLASHPTX_HD static constexpr uint32_t o_stage_addr(uint32_t row_base, uint32_t r, uint32_t d) {
    return row_base + q_chunk(static_cast<int>(d / kChunkElems)) +
           (((((d % kChunkElems) * 2u) >> 4) ^ (r % 8u)) << 4) - ((r % 8u) << 4) + (d * 2u) % 16u;
  }
};

// ---- 4. the MMA warp's schedule of one work tile -----------------------------------------------------
// J >= 1 K/V blocks, visited right to left (block n = J - 1 - j at step j). Step j = 0 .. J, stage
// i = H then L: PV_i(j-1) (j >= 1), then QK_i(j) (j < J). Startup is step 0 (both score tiles, the
// two S slots), the drain is step J (the last PVs). The K/V ring holds K0 V0 K1 V1 ... in that
// order, and this walk consumes (and releases) them in that order.
//
// The visitor V provides:
//   wait_q(i)           Q stage i landed (q_full)
//   wait_kv(is_v, blk)  the next ring slot landed (kv_full); is_v: a V block, else a K block
//   wait_p_ready(i, j)  softmax stored P_i(j) (p_ready)
//   wait_o_rescaled(i, j)  correction released O_i for PV_i(j) (o_rescaled)
//   wait_s_free(i, j)   the last PV that read P_i (which aliases S_i) has completed (o_ready):
//                       tcgen05's pipelined pairs order MMAs of the same accumulator and shape
//                       only (PTX ISA "Pipelined tcgen05 Instructions"), and PV_i (D = O_i, reads
//                       P_i) and QK_i (D = S_i) differ in both, so the order is made explicit
//   issue_qk(i, j) / issue_pv(i, j)   the K steps
//   commit_s_full(i, j), commit_o_ready(i, j), commit_q_empty(i), release_kv(is_v, blk)
template <class V>
FLASHPTX_HD void mma_tile_schedule(int J, V& v) {
  for (int j = 0; j <= J; ++j) {
    for (int i = 0; i < kQStages; ++i) {
      if (j > 0) {  // PV_i(j-1): O_i (+)= P_i V(j-1)
        if (i == 0) v.wait_kv(true, j - 1);
        v.wait_p_ready(i, j - 1);
        v.wait_o_rescaled(i, j - 1);
        v.issue_pv(i, j - 1);
        v.commit_o_ready(i, j - 1);
        if (i == kQStages - 1) v.release_kv(true, j - 1);  // V(j-1): its last reader was PV_L(j-1)
      }
      if (j < J) {  // QK_i(j): S_i = Q_i K(j)^T
        if (j == 0) v.wait_q(i);
        v.wait_s_free(i, j);
        if (i == 0) v.wait_kv(false, j);
        v.issue_qk(i, j);
        v.commit_s_full(i, j);
        if (i == kQStages - 1) v.release_kv(false, j);  // K(j): its last reader was QK_L(j)
        if (j == J - 1) v.commit_q_empty(i);             // Q_i: its last reader was QK_i(J-1)
      }
    }
  }
}

// ---- work tiles, their K/V blocks, the mask ---------------------------------------------------------------
// A work tile: tile_rows(cta_group) query rows of one (batch, head). Linear index -> coordinate as the
// FA3 forward does (flashptx/tile_scheduler.h; causal tiles longest first), and the K/V blocks its rows
// may see: every block of the keys, or (causal, bottom-right) those up to its last row's diagonal.
struct Tile {
  int m_block, head, head_kv, batch;
  int n_max;  // K/V blocks [0, n_max); 0: every row of the tile is fully masked
};
FLASHPTX_HD Tile tile_at(int index, int num_m_blocks, int heads_q, int heads_kv, int batch, bool causal, int seqlen_q,
                         int seqlen_k, int cta_group) {
  const TileCoord tc = tile_from_linear(index, num_m_blocks, heads_q, batch, causal);
  Tile t;
  t.m_block = tc.m_block;
  t.head = tc.head;
  t.batch = tc.batch;
  t.head_kv = tc.head / (heads_q / heads_kv);
  t.n_max = causal ? causal_n_blocks(tc.m_block, tile_rows(cta_group), kBlockN, seqlen_q, seqlen_k)
                   : n_blocks(kBlockN, seqlen_k);
  return t;
}

// Block visited at step j of J (right to left: the masked blocks of a causal tile first).
FLASHPTX_HD constexpr int block_of_step(int J, int j) { return J - 1 - j; }
// One past the last key of block n that query row `row` may see, counted from the block's first key:
// keys past seqlen_k are masked, and (causal, bottom-right aligned) keys c > row + seqlen_k - seqlen_q.
// >= kBlockN: nothing of the block is masked; <= 0: all of it.
FLASHPTX_HD constexpr int key_limit(int row, int n, int seqlen_q, int seqlen_k, bool causal) {
  int hi = seqlen_k;
  if (causal && row + seqlen_k - seqlen_q + 1 < hi) hi = row + seqlen_k - seqlen_q + 1;
  return hi - n * kBlockN;
}

// ---- 5. softmax arithmetic (one thread = one query row) ------------------------------------------------
// The exp2 split between MUFU.EX2 and the degree-3 emulation: exp2emu::pair_uses_emulation over a row
// of kBlockN elements in fragments of 32 (docs/PROTOCOLS.md, "The FA4 roles"; the pinned FA4
// source's SoftmaxSm100.apply_exp2_convert). freq = 0: all MUFU.
struct EmuSplit {
  int freq, res, start;
};
constexpr int kFragment = 32;
constexpr int kFragments = kBlockN / kFragment;
// exp2emu::pair_uses_emulation for the pair holding element k, in constexpr form so that the kernel's
// unrolled loop folds it (tests/host/test_fa4_replay.cpp checks the two agree on every element).
FLASHPTX_HD constexpr bool emulated(EmuSplit e, int k) {
  const int pair = (k % kFragment) & ~1, j = k / kFragment;
  if (e.freq <= 0) return false;
  return (pair % e.freq) >= e.freq - e.res && j >= e.start && j < kFragments - 1;
}
FLASHPTX_HD constexpr int emulated_count(EmuSplit e) {
  int n = 0;
  for (int k = 0; k < kBlockN; ++k) n += emulated(e, k) ? 1 : 0;
  return n;
}

// The row state across the blocks of one tile: the retained reference a (raw score coordinate) and
// the denominator D in the frame lambda * a (flashptx/online_softmax.h, RowState without N: N is O_i,
// accumulated by the tensor core in TMEM).
struct RowState {
  float a;  // -inf while the row has seen no key
  float d;
};
FLASHPTX_HD RowState row_start() { return RowState{-INFINITY, 0.0f}; }

struct RefStep {
  float gamma;  // old-state scale: 1 when the reference is retained, 2^(-delta) when it moves
  float bias;   // omega - lambda * a': the exponent of element s is fma(s, lambda, bias)
};

// The conditional-rescale decision for one block with row maximum bmax: the reference moves only when
// the candidate exceeds it by more than tau in base 2 (online_softmax.h row_update, the same FP32
// operations in the same order). The one extension: a row that has seen no key yet (candidate -inf,
// all its keys so far masked) keeps a = -inf and gamma = 1 and centres on 0, so that its
// probabilities are exactly 0 (exp2(-inf)) and never NaN; its first finite block moves the reference
// with gamma = exp2(-inf) = 0, as row_update's first block does.
FLASHPTX_HD RefStep reference_step(RowState& st, float bmax, float lambda, float tau, float omega) {
  using namespace exp2emu;
  const float cand = fmax_f32(st.a, bmax);
  float gamma = 1.0f;
  if (cand != -INFINITY) {
    const float delta = fmul_rn(fsub_rn(cand, st.a), lambda);  // +inf on the first finite block
    if (delta > tau) {
      st.a = cand;
      gamma = exp2_degree3(-delta);  // exactly 0 when delta = +inf (the clamp at -127)
    }
  }
  const float ref = st.a == -INFINITY ? 0.0f : st.a;
  return RefStep{gamma, fsub_rn(omega, fmul_rn(ref, lambda))};
}

// Row maximum of kBlockN scores, in index order.
FLASHPTX_HD float row_max(const float* s) {
  float m = s[0];
  for (int k = 1; k < kBlockN; ++k) m = exp2emu::fmax_f32(m, s[k]);
  return m;
}

// Fragment c (32 scores) of the row: p = exp2(fma(s, lambda, bias)), by the degree-3 emulation where
// the split says so and by the hardware exponential (Hw::ex2: MUFU.EX2 on the device, a model of it
// on the host) elsewhere; packed in pairs (Hw::pack: element 2e in the low half, 2e + 1 in the high
// half, as TMEM holds a K-major A operand); the unrounded FP32 values summed in index order onto psum.
template <EmuSplit E, class Hw>
FLASHPTX_HD float exp_pack_fragment(const float* s, int c, float lambda, float bias, uint32_t (&packed)[kFragment / 2],
                                    float psum) {
  using namespace exp2emu;
  FLASHPTX_FA4_UNROLL
  for (int e = 0; e < kFragment / 2; ++e) {
    const int k = c * kFragment + 2 * e;
    const float x0 = ffma_rn(s[2 * e], lambda, bias);
    const float x1 = ffma_rn(s[2 * e + 1], lambda, bias);
    float p0, p1;
    if (emulated(E, k)) {
      p0 = exp2_degree3(x0);
      p1 = exp2_degree3(x1);
    } else {
      p0 = Hw::ex2(x0);
      p1 = Hw::ex2(x1);
    }
    psum = fadd_rn(fadd_rn(psum, p0), p1);
    packed[e] = Hw::pack(p0, p1);
  }
  return psum;
}

// D' = gamma D + sum(p): the same frame conversion as the numerator's (the correction's O *= gamma).
FLASHPTX_HD void row_accumulate(RowState& st, float gamma, float psum) {
  st.d = exp2emu::fadd_rn(exp2emu::fmul_rn(gamma, st.d), psum);
}

// The correction's decision for a warp of rows: rescale O only when some row's reference moved, and
// never before the tile's first PV (which overwrites O). Rows with gamma = 1 multiply by 1 (exact).
FLASHPTX_HD constexpr bool row_needs_rescale(float gamma) { return gamma < 1.0f; }
FLASHPTX_HD float rescale(float o, float gamma) { return exp2emu::fmul_rn(o, gamma); }

// The epilogue: 1 / D (correctly rounded on both sides), 0 for a row that saw no key; O = N / D.
FLASHPTX_HD float inverse_sum(float d) {
#ifdef __CUDA_ARCH__
  return d > 0.0f ? __frcp_rn(d) : 0.0f;
#else
  return d > 0.0f ? 1.0f / d : 0.0f;
#endif
}
FLASHPTX_HD float normalise(float o, float inv) { return exp2emu::fmul_rn(o, inv); }
// LSE = (lambda a + log2 D - omega) ln 2 from the retained frame (online_softmax.h row_lse);
// -inf for a row that saw no key.
FLASHPTX_HD float row_lse(const RowState& st, float lambda, float omega) {
  using namespace exp2emu;
  if (!(st.d > 0.0f)) return -INFINITY;
  const float ref = st.a == -INFINITY ? 0.0f : st.a;
  const float t = fsub_rn(fadd_rn(fmul_rn(ref, lambda), log2f(st.d)), omega);
  return fmul_rn(t, 0.69314718055994531f);
}

}  // namespace flashptx::fa4
