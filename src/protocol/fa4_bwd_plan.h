// The FA4 backward plan (sm_100a, issue 13): everything the kernel (src/sm100/fa4_bwd.cuh), its CPU
// emulator replay (tests/host/test_fa4_bwd_replay.cpp) and the CPU protocol model
// (tools/models/fa4_backward.cpp) share, written __host__ __device__ (FLASHPTX_HD) and free of CUDA
// headers:
//
//   1. roles        which warp does what, and its register target (setmaxnreg)
//   2. barriers     every mbarrier of the kernel, who arrives (TMA bytes, tcgen05.commit, one arrive
//                   per warp), who waits, and the arrival count
//   3. BwdMmaPlan   the operand tiles, instruction descriptors, the TMEM column map (S^T/P^T, dP^T/dQ,
//                   dV, dK) and, per K step, the exact operands of each of the five tcgen05.mma
//                   families; the TMEM addresses of the compute and reduction warps' ld/st; where dS^T
//                   lands in shared memory; the dQ accumulator's element order
//   4. bwd_tile_schedule   the MMA thread's order for one key block (waits, issues, commits), as a
//                   visitor walk: the kernel's MMA thread and the emulator replay walk this one function
//   5. key blocks, the mask, the arithmetic of P and dS (one thread = one key)
//
// What it certifies: the kernel and the replay compute descriptors, TMEM columns, K-step advances,
// the MMA order and the P/dS arithmetic with the same code, so the replay's agreement with an fp64
// backward is a statement about what the kernel issues. What it does not certify: anything about
// timing, asynchrony or the memory model on a Blackwell GPU. NEVER EXECUTED: no Blackwell GPU ran
// the kernel; it is compiled, disassembled, order-checked and replayed on the CPU only.
#pragma once
#include <cstdint>

#include "src/protocol/exp2_emulation.h"
#include "src/protocol/hd.h"
#include "src/protocol/tile_scheduler.h"
#include "src/protocol/umma_plan.h"
#include "src/protocol/writer_order.h"
#include "ptx/tcgen05_desc.cuh"

namespace flashptx::fa4bwd {

// ---- shape constants ------------------------------------------------------------------------------
constexpr int kBlockN = 128;     // keys per CTA (one key block, resident for the whole query loop)
constexpr int kBlockM = 128;     // query rows per step (one Q/dO stage)
constexpr int kChunkElems = 64;  // 2-byte elements per 128-byte swizzle row (one TMA box column)
constexpr int kSwizzleRow = 128; // bytes
constexpr int kDqChunkCols = 32; // dQ columns the reduction warps stage and bulk-add at a time
constexpr int kComputeCols = 32; // query columns of S^T/dP^T a compute thread handles at a time

// ---- 1. roles (16 warps, one CTA) -------------------------------------------------------------------
// The pinned FA4 source's split (tools/models/fa4_backward.cpp bwd_roles, 1CTA column): a reduction
// warpgroup (dQ out of TMEM into the fp32 accumulator), two compute warpgroups (P and dS; the dK/dV
// epilogue), then the MMA, load, relay and an idle warp in the last warpgroup. setmaxnreg acts on
// whole warpgroups: 152 + 136 + 136 + 88 = 512 registers per thread slot, x 128 = 65,536.
enum class Role : uint8_t { kReduction, kCompute, kMma, kLoad, kRelay, kIdle, kCount };
struct RoleSpec {
  Role role;
  const char* name;
  int first_warp, last_warp;
  int regs;  // setmaxnreg target of the role's warpgroup (the largest of its warps' roles)
};
FLASHPTX_HD constexpr RoleSpec role_spec(Role r) {
  switch (r) {
    case Role::kReduction: return {r, "reduction (dQ: TMEM -> shared -> bulk reduce-add)", 0, 3, 152};
    case Role::kCompute: return {r, "compute (P^T, dS^T; dK/dV epilogue)", 4, 11, 136};
    case Role::kMma: return {r, "MMA issuer (TMEM owner)", 12, 12, 88};
    case Role::kLoad: return {r, "load (TMA K, V, Q, dO; bulk LSE2, delta)", 13, 13, 88};
    case Role::kRelay: return {r, "relay (2-CTA form: TMA landings, the dS exchange; idle in 1-CTA)", 14, 14, 88};
    case Role::kIdle: return {r, "idle (register donor)", 15, 15, 88};
    case Role::kCount: break;
  }
  return {Role::kCount, "?", -1, -2, 0};
}
constexpr int kRoleCount = static_cast<int>(Role::kCount);
constexpr int kWarps = 16;
constexpr int kThreads = 32 * kWarps;
constexpr int kReductionWarp0 = 0, kComputeWarp0 = 4, kMmaWarp = 12, kLoadWarp = 13;
constexpr int kComputeWarps = 8, kReductionWarps = 4;
FLASHPTX_HD constexpr int role_regs(Role r) { return role_spec(r).regs; }
FLASHPTX_HD constexpr int role_warps(Role r) { return role_spec(r).last_warp - role_spec(r).first_warp + 1; }
FLASHPTX_HD constexpr int warpgroup_regs(int wg) {
  int t = 0;
  for (int r = 0; r < kRoleCount; ++r) {
    const RoleSpec s = role_spec(static_cast<Role>(r));
    if (s.first_warp / 4 <= wg && s.last_warp / 4 >= wg && s.regs > t) t = s.regs;
  }
  return t;
}
static_assert(warpgroup_regs(0) + warpgroup_regs(1) + warpgroup_regs(2) + warpgroup_regs(3) == 512,
              "the warpgroup register targets fill the register file exactly (x 128 threads = 65,536)");
static_assert(role_warps(Role::kReduction) == kReductionWarps && role_warps(Role::kCompute) == kComputeWarps,
              "warp counts");

// Named barrier of the reduction warpgroup (the staging buffer handoff between its 128 threads);
// id 0 is __syncthreads. The compute warpgroups' GQA turn uses id 2 (256 threads).
constexpr uint32_t kReductionNamedBar = 1;
constexpr uint32_t kComputeNamedBar = 2;

// ---- 2. barriers ------------------------------------------------------------------------------------
// Every mbarrier of one CTA. Per-stage barriers exist once per Q/dO stage; the others once.
enum class Bar : uint8_t {
  kKvFull,    // load (TMA K and V, expect_tx) -> MMA: the key block is resident
  kQFull,     // [stage] load (TMA Q + bulk LSE2, expect_tx) -> MMA (S^T), compute (LSE2)
  kDoFull,    // [stage] load (TMA dO + bulk delta, expect_tx) -> MMA (dP^T), compute (delta)
  kQdoEmpty,  // [stage] MMA (tcgen05.commit after dK and dQ, the stage's last readers) -> load
  kSdpFull,   // MMA (commit after S^T and dP^T) -> compute
  kPReady,    // compute (P^T stored to TMEM, tcgen05.wait::st; per warp) -> MMA (dV)
  kPFree,     // MMA (commit after dV, the last reader of P^T in S's columns) -> MMA (next S^T)
  kDsReady,   // compute (dS^T stored to shared memory, proxy-fenced; dP read; per warp) -> MMA (dK, dQ)
  kDsFree,    // MMA (commit after dQ, the last reader of dS^T) -> compute (next dS^T stores)
  kDqFull,    // MMA (commit after dQ) -> reduction
  kDqFree,    // reduction (dQ read out of TMEM, tcgen05.wait::ld; per warp) -> MMA (next dP^T: dQ aliases dP)
  kDkvFull,   // MMA (commit after the key block's last step) -> compute (dK/dV epilogue)
  kCount
};
enum class Signal : uint8_t { kTmaBytes, kCommit, kPerWarp };
struct BarrierSpec {
  Bar bar;
  const char* name;
  Signal signal;
  Role producer, consumer;
  bool per_stage;
};
FLASHPTX_HD constexpr BarrierSpec barrier_spec(Bar b) {
  switch (b) {
    case Bar::kKvFull: return {b, "kv_full", Signal::kTmaBytes, Role::kLoad, Role::kMma, false};
    case Bar::kQFull: return {b, "q_full", Signal::kTmaBytes, Role::kLoad, Role::kMma, true};
    case Bar::kDoFull: return {b, "do_full", Signal::kTmaBytes, Role::kLoad, Role::kMma, true};
    case Bar::kQdoEmpty: return {b, "qdo_empty", Signal::kCommit, Role::kMma, Role::kLoad, true};
    case Bar::kSdpFull: return {b, "sdp_full", Signal::kCommit, Role::kMma, Role::kCompute, false};
    case Bar::kPReady: return {b, "p_ready", Signal::kPerWarp, Role::kCompute, Role::kMma, false};
    case Bar::kPFree: return {b, "p_free", Signal::kCommit, Role::kMma, Role::kMma, false};
    case Bar::kDsReady: return {b, "ds_ready", Signal::kPerWarp, Role::kCompute, Role::kMma, false};
    case Bar::kDsFree: return {b, "ds_free", Signal::kCommit, Role::kMma, Role::kCompute, false};
    case Bar::kDqFull: return {b, "dq_full", Signal::kCommit, Role::kMma, Role::kReduction, false};
    case Bar::kDqFree: return {b, "dq_free", Signal::kPerWarp, Role::kReduction, Role::kMma, false};
    case Bar::kDkvFull: return {b, "dkv_full", Signal::kCommit, Role::kMma, Role::kCompute, false};
    case Bar::kCount: break;
  }
  return {Bar::kCount, "?", Signal::kCommit, Role::kCount, Role::kCount, false};
}
constexpr int kBarCount = static_cast<int>(Bar::kCount);
FLASHPTX_HD constexpr uint32_t arrival_count(Bar b) {
  const BarrierSpec s = barrier_spec(b);
  return s.signal == Signal::kPerWarp ? static_cast<uint32_t>(role_warps(s.producer)) : 1u;
}
// How many barriers of each kind, and where each run starts (one slot = 8 bytes).
FLASHPTX_HD constexpr int barrier_copies(Bar b, int stages) { return barrier_spec(b).per_stage ? stages : 1; }
FLASHPTX_HD constexpr uint32_t barrier_first_slot(Bar b, int stages) {
  uint32_t n = 0;
  for (int x = 0; x < static_cast<int>(b); ++x) n += static_cast<uint32_t>(barrier_copies(static_cast<Bar>(x), stages));
  return n;
}
FLASHPTX_HD constexpr uint32_t barrier_total(int stages) { return barrier_first_slot(Bar::kCount, stages); }
static_assert(barrier_total(1) == 12 && barrier_total(2) == 15, "3 per-stage kinds, 9 single barriers");

// ---- 3. the MMA plan (cta_group::1, M = 128) --------------------------------------------------------
using umma::SmemTile;

struct Issue {
  uint32_t d_tmem;
  bool a_tmem_form;  // TS: A from TMEM at a_tmem (P^T for dV); SS: A through a_desc
  uint32_t a_tmem;
  uint64_t a_desc;
  uint64_t b_desc;
  uint32_t idesc;
  bool accumulate;   // enable-input-d
};

// The five MMAs of one step (key block n, query block m), each an M = 128 tcgen05.mma.cta_group::1
// kind::f16 with an fp32 accumulator in TMEM:
//   S^T  = K Q^T       A = K   (K-major)  B = Q  (K-major)   D = S^T  [128 keys x 128 queries]
//   dP^T = V dO^T      A = V   (K-major)  B = dO (K-major)   D = dP^T [128 keys x 128 queries]
//   dV  += P^T dO      A = P^T (TMEM, 16-bit pairs)  B = dO (MN-major)  D = dV [128 keys x d]
//   dK  += dS^T Q      A = dS^T (shared, K-major)    B = Q  (MN-major)  D = dK [128 keys x d]
//   dQ   = dS K        A = dS   (shared, MN-major)   B = K  (MN-major)  D = dQ [128 queries x d]
// Every operand tile in shared memory is what TMA writes for boxes of (64 columns, R rows) with the
// 128-byte swizzle: rows of 128 bytes, 8 to a 1024-byte atom, 64-column chunks R x 128 bytes apart.
// The same bytes read K-major (rows = M or N, columns = K) or MN-major (rows = K, columns = M or N)
// need only a different descriptor: that is how Q, dO and K each serve two MMAs, and how dS^T,
// stored once by the compute warps, is dK's A (K-major) and dQ's A (MN-major: dS = (dS^T)^T).
template <int D, bool Bf16>
struct BwdMmaPlan {
  static_assert(D == 64 || D == 128, "head dims 64 and 128 (TMEM: S^T 128 + dP^T 128 + dV d + dK d <= 512)");
  static constexpr int kD = D;
  static constexpr uint32_t kSdpSteps = umma::ksteps(D * 2);        // K = head dim
  static constexpr uint32_t kDkvSteps = umma::ksteps(kBlockM * 2);  // K = queries
  static constexpr uint32_t kDqSteps = umma::ksteps(kBlockN * 2);   // K = keys

  FLASHPTX_HD static constexpr SmemTile kmajor(uint32_t rows) {
    return SmemTile{ptx::UmmaMajor::kK, ptx::UmmaSwizzle::k128B, 16u, 1024u, 2u, rows * kSwizzleRow};
  }
  FLASHPTX_HD static constexpr SmemTile mnmajor(uint32_t rows) {
    return SmemTile{ptx::UmmaMajor::kMN, ptx::UmmaSwizzle::k128B, rows * kSwizzleRow, 1024u, 2u, 0u};
  }
  static constexpr uint32_t kKBytes = kBlockN * D * 2;   // K (and V): the key block
  static constexpr uint32_t kQBytes = kBlockM * D * 2;   // one Q (and dO) stage
  static constexpr uint32_t kDsBytes = kBlockN * kBlockM * 2;  // dS^T [keys][queries]
  static constexpr uint32_t kRowBytes = kBlockM * 4;     // LSE2 (or delta) of one stage

  static constexpr ptx::UmmaF16Type kAB = Bf16 ? ptx::UmmaF16Type::kBF16 : ptx::UmmaF16Type::kF16;
  static constexpr uint32_t kIdescSdp =
      ptx::make_umma_idesc_f16<kAB, ptx::UmmaDType::kF32, 128, kBlockM, ptx::UmmaMajor::kK, ptx::UmmaMajor::kK, 1>();
  static constexpr uint32_t kIdescDkv =
      ptx::make_umma_idesc_f16<kAB, ptx::UmmaDType::kF32, 128, D, ptx::UmmaMajor::kK, ptx::UmmaMajor::kMN, 1>();
  static constexpr uint32_t kIdescDq =
      ptx::make_umma_idesc_f16<kAB, ptx::UmmaDType::kF32, 128, D, ptx::UmmaMajor::kMN, ptx::UmmaMajor::kMN, 1>();
  static_assert(ptx::umma_a_tmem_ok(kIdescDkv), "dV reads P^T from TMEM: A must be K-major");

  // TMEM, 512 columns allocated whole (base column 0):
  //   S^T  [0, 128)        P^T (16-bit pairs) overwrites it: query half h at [64 h, 64 h + 32)
  //   dP^T [128, 256)      dQ [128, 128 + d) overwrites it once the compute warps have read dP^T
  //   dV   [256, 256 + d)  dK [256 + d, 256 + 2d)
  // P^T sits in the head of each 64-column half of S^T so that a thread, reading its half's S^T 32
  // columns at a time, only ever overwrites columns it has already read (the tail-half placement of
  // the forward needs all of S in registers first). dQ aliases dP^T: the dQ MMA is issued after
  // ds_ready (the compute warps have read dP^T), the next dP^T after dq_free (the reduction warps
  // have read dQ).
  static constexpr uint32_t kTmemCols = 512;
  static constexpr uint32_t kSCol = 0, kDpCol = 128, kDqCol = kDpCol, kDvCol = 256, kDkCol = 256 + D;
  static_assert(kDkCol + D <= kTmemCols, "the column map fits");
  FLASHPTX_HD static constexpr uint32_t p_col(uint32_t half, uint32_t chunk) { return kSCol + 64u * half + 16u * chunk; }
  // K step s of dV (16 queries) reads 8 columns of P^T: half s / 4, 8 columns per step inside it.
  FLASHPTX_HD static constexpr uint32_t p_kstep_col(uint32_t s) { return kSCol + 64u * (s / 4u) + umma::tmem_kstep_columns(s % 4u); }

  FLASHPTX_HD static constexpr Issue ss(uint32_t d, uint64_t a, uint64_t b, uint32_t idesc, bool acc) {
    Issue r{};
    r.d_tmem = d;
    r.a_tmem_form = false;
    r.a_desc = a;
    r.b_desc = b;
    r.idesc = idesc;
    r.accumulate = acc;
    return r;
  }
  // K step s of S^T = K Q^T (the first overwrites).
  FLASHPTX_HD static constexpr Issue s_t(uint32_t tmem, uint32_t k_smem, uint32_t q_smem, uint32_t s) {
    return ss(tmem + kSCol, kmajor(kBlockN).desc(k_smem, s), kmajor(kBlockM).desc(q_smem, s), kIdescSdp, s > 0);
  }
  // K step s of dP^T = V dO^T.
  FLASHPTX_HD static constexpr Issue dp_t(uint32_t tmem, uint32_t v_smem, uint32_t do_smem, uint32_t s) {
    return ss(tmem + kDpCol, kmajor(kBlockN).desc(v_smem, s), kmajor(kBlockM).desc(do_smem, s), kIdescSdp, s > 0);
  }
  // K step s of dV += P^T dO. `accumulate_tile`: false at the key block's first step.
  FLASHPTX_HD static constexpr Issue dv(uint32_t tmem, uint32_t do_smem, uint32_t s, bool accumulate_tile) {
    Issue r{};
    r.d_tmem = tmem + kDvCol;
    r.a_tmem_form = true;
    r.a_tmem = tmem + p_kstep_col(s);
    r.b_desc = mnmajor(kBlockM).desc(do_smem, s);
    r.idesc = kIdescDkv;
    r.accumulate = accumulate_tile || s > 0;
    return r;
  }
  // K step s of dK += dS^T Q (scaled by softmax_scale in the epilogue).
  FLASHPTX_HD static constexpr Issue dk(uint32_t tmem, uint32_t ds_smem, uint32_t q_smem, uint32_t s,
                                        bool accumulate_tile) {
    return ss(tmem + kDkCol, kmajor(kBlockN).desc(ds_smem, s), mnmajor(kBlockM).desc(q_smem, s), kIdescDkv,
              accumulate_tile || s > 0);
  }
  // K step s (16 keys) of dQ = dS K (this key block's partial; the first step overwrites).
  FLASHPTX_HD static constexpr Issue dq(uint32_t tmem, uint32_t ds_smem, uint32_t k_smem, uint32_t s) {
    return ss(tmem + kDqCol, mnmajor(kBlockN).desc(ds_smem, s), mnmajor(kBlockN).desc(k_smem, s), kIdescDq, s > 0);
  }

  // TMEM addresses of the .32x32b ld/st (warp `warp` owns lanes [32 (warp % 4), +32)).
  FLASHPTX_HD static constexpr uint32_t quarter_lane(int warp) { return 32u * static_cast<uint32_t>(warp % 4); }
  // Compute warp `warp` (half h = its warpgroup - 1: queries [64 h, 64 h + 64)), chunk c of 32 queries.
  FLASHPTX_HD static constexpr uint32_t s_taddr(uint32_t base, int warp, int h, int c) {
    return base + ptx::tmem_addr(quarter_lane(warp), kSCol + 64u * h + kComputeCols * c);
  }
  FLASHPTX_HD static constexpr uint32_t dp_taddr(uint32_t base, int warp, int h, int c) {
    return base + ptx::tmem_addr(quarter_lane(warp), kDpCol + 64u * h + kComputeCols * c);
  }
  FLASHPTX_HD static constexpr uint32_t p_taddr(uint32_t base, int warp, int h, int c) {
    return base + ptx::tmem_addr(quarter_lane(warp), p_col(static_cast<uint32_t>(h), static_cast<uint32_t>(c)));
  }
  // Reduction warp: dQ columns [32 c, 32 c + 32). Epilogue: dV / dK columns [32 c, 32 c + 32).
  FLASHPTX_HD static constexpr uint32_t dq_taddr(uint32_t base, int warp, int c) {
    return base + ptx::tmem_addr(quarter_lane(warp), kDqCol + kDqChunkCols * c);
  }
  FLASHPTX_HD static constexpr uint32_t dv_taddr(uint32_t base, int warp, int c) {
    return base + ptx::tmem_addr(quarter_lane(warp), kDvCol + 32u * c);
  }
  FLASHPTX_HD static constexpr uint32_t dk_taddr(uint32_t base, int warp, int c) {
    return base + ptx::tmem_addr(quarter_lane(warp), kDkCol + 32u * c);
  }

  // Where the TMA box column chunk c of a tile of R rows lands (bytes from the tile start).
  FLASHPTX_HD static constexpr uint32_t chunk(uint32_t rows, int c) { return static_cast<uint32_t>(c) * rows * kSwizzleRow; }
  // dS^T: byte of the 16-byte unit holding queries [q, q + 8) of key row `key` (q % 8 == 0), 128-byte
  // swizzle applied (the tile is 1024-aligned): the layout kmajor(128) describes with dS^T[key][q].
  FLASHPTX_HD static constexpr uint32_t ds_unit_byte(uint32_t key, uint32_t q) {
    const uint32_t a = kmajor(kBlockN).byte_offset(key, q);
    return a ^ (((a >> 7) & 7u) << 4);
  }
  // The dK/dV epilogue's staging tile (what a TMA store of boxes (64, 64) with the 128-byte swizzle
  // reads): byte of the 16-byte unit holding head-dim columns [col, col + 8) of key row `key`.
  FLASHPTX_HD static constexpr uint32_t out_unit_byte(uint32_t key, uint32_t col) {
    return chunk(kBlockN, static_cast<int>(col / kChunkElems)) + key * kSwizzleRow +
           ((((col % kChunkElems) / 8u) ^ (key % 8u)) * 16u);
  }
};

// The dQ accumulator of one (batch, head, query block): 128 x d fp32 in chunks of 32 columns, each
// chunk [128 rows][8 units of 4 floats] with unit u of row r stored at u ^ (r % 8) (conflict-free
// 16-byte shared stores by one-row-per-thread; a chunk is one contiguous 16 KiB bulk reduce-add).
FLASHPTX_HD constexpr int dq_accum_index(int row, int col) {
  return (col / kDqChunkCols) * (kBlockM * kDqChunkCols) + row * kDqChunkCols +
         ((((col % kDqChunkCols) / 4) ^ (row % 8)) * 4) + col % 4;
}
constexpr uint32_t kDqChunkBytes = kBlockM * kDqChunkCols * 4;  // 16 KiB
// Byte of the unit holding columns [4u, 4u + 4) of row r inside one staged chunk.
FLASHPTX_HD constexpr uint32_t dq_stage_byte(uint32_t r, uint32_t u) { return r * (kDqChunkCols * 4) + ((u ^ (r % 8u)) * 16u); }
static_assert(dq_accum_index(9, 37) == 1 * 4096 + 9 * 32 + ((1 ^ 1) * 4) + 1, "dQ accumulator order");

// ---- 4. the MMA thread's schedule of one key block ------------------------------------------------
// J >= 0 query blocks m_begin .. m_begin + J - 1, one step each, the Q/dO ring taking them in turn.
// The visitor V provides (the wait names are the barriers above):
//   wait_kv()            K and V landed (kv_full)
//   wait_q(j), wait_do(j)   Q + LSE2 / dO + delta of step j landed (q_full, do_full of its stage)
//   wait_s_free(j)       j > 0: dV(j-1), the last reader of P^T (in S^T's columns), completed (p_free)
//   wait_dq_free(j)      j > 0: the reduction warps read dQ(j-1) out of dP^T's columns (dq_free)
//   wait_p_ready(j)      the compute warps stored P^T(j) (p_ready)
//   wait_ds_ready(j)     the compute warps stored dS^T(j) and read dP^T(j) (ds_ready)
//   issue_s, issue_dp, issue_dv, issue_dk, issue_dq (j)   the K steps of each MMA
//   commit_sdp_full, commit_p_free, commit_dq_full, commit_ds_free, commit_qdo_empty (j),
//   commit_dkv_full()    tcgen05.commit to that barrier (tracks every MMA issued before it)
// Why the explicit waits: tcgen05.mma instructions of one thread are pipelined in issue order only
// for the same accumulator and shape (PTX ISA "Pipelined tcgen05 Instructions"); S^T(j) overwrites
// what dV(j-1) reads and dP^T(j) what the reduction warps read, so those orders are made by barriers.
template <class V>
FLASHPTX_HD void bwd_tile_schedule(int J, V& v) {
  if (J > 0) v.wait_kv();
  for (int j = 0; j < J; ++j) {
    v.wait_q(j);
    if (j > 0) v.wait_s_free(j);
    v.issue_s(j);
    v.wait_do(j);
    if (j > 0) v.wait_dq_free(j);
    v.issue_dp(j);
    v.commit_sdp_full(j);
    v.wait_p_ready(j);
    v.issue_dv(j);
    v.commit_p_free(j);
    v.wait_ds_ready(j);
    v.issue_dk(j);
    v.issue_dq(j);
    v.commit_dq_full(j);
    v.commit_ds_free(j);
    v.commit_qdo_empty(j);
  }
  if (J > 0) v.commit_dkv_full();
}

// ---- 5. key blocks, the mask, the arithmetic ----------------------------------------------------------
// The CTA's key block and the query blocks that see it (the FA3 backward's rule, src/sm90/fa3_bwd.cuh
// key_block: causal is bottom-right aligned, query row r sees key c iff c <= r + seqlen_k - seqlen_q;
// deterministic causal visits key blocks from the last, the SPT writer order's first writer).
struct KeyBlock {
  int n_block, head, head_kv, batch;
  int m_begin, m_end;  // query blocks [m_begin, m_end)
};
FLASHPTX_HD KeyBlock key_block(int bx, int head, int batch, int n_blocks_, int m_blocks, int heads_q, int heads_kv,
                                      int seqlen_q, int seqlen_k, bool causal, bool deterministic) {
  KeyBlock kb;
  kb.n_block = (causal && deterministic) ? n_blocks_ - 1 - bx : bx;
  kb.head = head;
  kb.batch = batch;
  kb.head_kv = head / (heads_q / heads_kv);
  kb.m_end = m_blocks;
  kb.m_begin = 0;
  if (causal) {
    const int first_row = kb.n_block * kBlockN - (seqlen_k - seqlen_q);
    kb.m_begin = first_row <= 0 ? 0 : (first_row / kBlockM < m_blocks ? first_row / kBlockM : m_blocks);
  }
  return kb;
}
// The deterministic order of the writers of dQ tile m (writer_order.h; the same locks as FA3's).
FLASHPTX_HD int dq_lock(int n_block, int m_block, int seqlen_q, int seqlen_k, bool causal) {
  return causal ? writer_order::lock_causal_spt(n_block, causal_n_blocks(m_block, kBlockM, kBlockN, seqlen_q, seqlen_k))
                : writer_order::lock_dense(n_block);
}
// Key `key` contributes to query row `row`: inside the keys, and (causal) on or below the diagonal.
// Rows past seqlen_q need no test: their LSE2 is +inf (the preprocess), so P = exp2(-inf) = 0.
FLASHPTX_HD constexpr bool key_visible(int key, int row, int seqlen_q, int seqlen_k, bool causal) {
  return key < seqlen_k && (!causal || key <= row + seqlen_k - seqlen_q);
}
// P = exp2(S lambda - LSE2): one FFMA and the hardware exponential (Hw::ex2: MUFU.EX2 on the device, a
// model of it on the host); 0 where masked.
template <class Hw>
FLASHPTX_HD float bwd_p(float s, float lambda, float lse2, bool visible) {
  return visible ? Hw::ex2(exp2emu::ffma_rn(s, lambda, -lse2)) : 0.0f;
}
// dS = P (dP - delta), in fp32 (the softmax scale is applied to dK in the epilogue and to dQ in the
// postprocess).
FLASHPTX_HD float bwd_ds(float p, float dp, float delta) { return exp2emu::fmul_rn(p, exp2emu::fsub_rn(dp, delta)); }

}  // namespace flashptx::fa4bwd
