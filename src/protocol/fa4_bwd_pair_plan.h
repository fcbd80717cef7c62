// The FA4 backward, 2-CTA form (cta_group::2, issue 13): what the pair kernel
// (src/sm100/fa4_bwd_pair.cuh), its CPU emulator replay (tests/host/test_fa4_bwd_replay.cpp) and the
// plan rule (src/plan.cpp) share, FLASHPTX_HD and free of CUDA headers. It builds on the 1-CTA plan
// (src/protocol/fa4_bwd_plan.h: roles, the TMEM column map, the P/dS arithmetic, the schedule
// bwd_tile_schedule, the dQ accumulator order), and changes what a cluster of two CTAs changes:
//
//   1. geometry   a pair owns two adjacent key blocks (256 keys; rank r the block 2 p + r) and walks the
//                 query blocks of its first one, one step each (the second block's extra rows are
//                 masked: P = 0)
//   2. MMAs       every tcgen05 instruction of the kernel is cta_group::2 (the ISA asks one .cta_group
//                 per kernel); the leader's (rank 0) MMA thread issues all five for both CTAs:
//                   S^T, dP^T, dV, dK   M = 256 (data-path Layout A): each CTA's A is its own 128 keys,
//                                      its D its own 128 lanes; B is split by N between the CTAs
//                   dQ                  M = 128 (Layout B): CTA r holds query rows [64 r, +64) of A and
//                                      D, and head-dim columns [64 r, +64) of B; K runs over the pair's
//                                      256 keys, so each CTA needs the peer's dS half (the exchange)
//                                      and the peer's key block's K columns (a second TMA load)
//   3. shared memory   one Q/dO stage; each operand at the same offset in both CTAs (one descriptor
//                 serves the pair), filled with the CTA's share
//   4. the dS exchange: CTA r's compute warps store dS^T (both query halves, for dK) and a copy of the
//                 half r (its own dQ rows) into XA; the warpgroup of half 1 - r, once its stores are
//                 fenced, sends that half (one 16 KiB cp.async.bulk into the peer's XA, completing
//                 transaction bytes on the peer's x_full, whose arrive.expect_tx it also performs); the
//                 relay warp of each CTA waits its x_full and arrives on the leader's ds_ready
//   5. barriers   per CTA, with the leader's counts taking the peer's arrivals
//   6. the deterministic writer order of dQ tiles, per CTA of each pair
//
// Only head dim 128: at d = 64 each CTA's share of an N = 64 B operand would be 32 columns, a 64-byte
// row that the 128-byte-swizzled tiles of this plan (and the TMA boxes of the 1-CTA kernel) cannot
// hold; the plan rule keeps d64 on the 1-CTA kernel.
//
// What it certifies: the kernel and the replay compute descriptors, TMEM columns, K steps, the
// exchange's source and destination, and the dQ read-out of Layout B with the same code. What it does
// not: timing, asynchrony, or the cluster memory model (reading only; see the kernel's header).
// NEVER EXECUTED: no Blackwell GPU ran the kernel; it is compiled, disassembled, order-checked and
// replayed on the CPU only.
#pragma once
#include <cstdint>

#include "src/protocol/fa4_bwd_plan.h"

namespace flashptx::fa4bwd::pair {

constexpr int kCtaGroup = 2;
constexpr int kHeadDim = 128;
constexpr int kRelayWarp = 14;  // role_spec(Role::kRelay): the exchange and TMA-landing relay
constexpr uint32_t kSendNamedBar = 3;  // the sending warpgroup's 128 threads (ids 1, 2: fa4_bwd_plan.h)

// ---- 1. geometry ---------------------------------------------------------------------------------
FLASHPTX_HD constexpr int pair_count(int n_blocks) { return (n_blocks + 1) / 2; }
// The pair of CTA x of the grid (x = 2 p' + rank) and its key block. Deterministic causal visits pairs
// from the last (the SPT writer order's first writer, as key_block does for single blocks).
FLASHPTX_HD KeyBlock pair_key_block(int bx, int head, int batch, int n_blocks, int m_blocks, int heads_q, int heads_kv,
                                    int seqlen_q, int seqlen_k, bool causal, bool deterministic) {
  const int pairs = pair_count(n_blocks);
  const int rank = bx % 2;
  const int p = (causal && deterministic) ? pairs - 1 - bx / 2 : bx / 2;
  // The pair's first block decides the query blocks both CTAs walk.
  KeyBlock kb = key_block(2 * p, head, batch, n_blocks, m_blocks, heads_q, heads_kv, seqlen_q, seqlen_k, causal, false);
  kb.n_block = 2 * p + rank;
  return kb;
}
// The deterministic order of the writers of dQ tile m: the pairs that walk it (dense: all; causal: the
// pairs whose first key block sees it, visited from the last), and inside a pair rank 0 then rank 1
// (their rows are disjoint; the order only makes the semaphore a simple count).
FLASHPTX_HD int pair_dq_lock(int n_block, int m_block, int seqlen_q, int seqlen_k, bool causal) {
  const int p = n_block / 2, rank = n_block % 2;
  const int order = causal ? writer_order::lock_causal_spt(p, causal_n_blocks(m_block, kBlockM, 2 * kBlockN, seqlen_q, seqlen_k))
                           : writer_order::lock_dense(p);
  return 2 * order + rank;
}

// The plan rule (src/plan.cpp plan_bwd on sm_100): the 2-CTA kernel when it exists for the head dim
// (d = 128) and the keys fill at least two key blocks (a pair); otherwise the 1-CTA kernel. One key
// block would leave the pair's second CTA with no keys: all of its work masked. Nothing here is
// timed (no Blackwell GPU): the rule follows the seed's traffic ledger (the pair halves the fp32 dQ
// staging and reduce-add surface and shares B operands), not a measurement.
FLASHPTX_HD constexpr bool use_pair(int head_dim, long long seqlen_k) {
  return head_dim == kHeadDim && seqlen_k > kBlockN;
}

// Head dim 256 (not built, either form): a CTA keeps S^T and dP^T (128 query columns each) and dV and
// dK (d columns each) of its 128 keys in its own TMEM, the pair's M = 256 MMAs included (the pair splits
// B, not a CTA's accumulators): 2 x 128 + 2 d columns, 768 of 512 at d = 256. It would need another
// schedule (64 keys per CTA with M = 128 pair MMAs throughout: 64 + 64 + 128 + 128 + dQ 128 = 512
// columns, shared memory not evaluated; or dK/dV moved out of TMEM), none written. src/plan.cpp refuses
// it with FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM.
FLASHPTX_HD constexpr int tmem_columns_needed(int head_dim) { return 2 * kBlockM + 2 * head_dim; }
static_assert(tmem_columns_needed(128) == 512 && tmem_columns_needed(256) == 768,
              "d128 fills TMEM exactly; d256 does not fit");

// ---- 2. the MMA plan --------------------------------------------------------------------------------
template <bool Bf16>
struct PairMmaPlan {
  using One = BwdMmaPlan<kHeadDim, Bf16>;  // the TMEM column map and the compute/epilogue addresses
  static constexpr int kD = kHeadDim;
  static constexpr uint32_t kSdpSteps = One::kSdpSteps;            // K = head dim: 8
  static constexpr uint32_t kDkvSteps = One::kDkvSteps;            // K = 128 queries: 8
  static constexpr uint32_t kDqSteps = umma::ksteps(2 * kBlockN * 2);  // K = the pair's 256 keys: 16
  static constexpr uint32_t kHalf = 64;                            // query rows / head-dim columns per CTA

  // Tiles (bytes). K, V, dS^T: [128 keys][128] K-major. QS, dOS: this CTA's 64 queries (S^T's and
  // dP^T's B share) K-major. QD, dOD: all 128 queries x this CTA's 64 head-dim columns (dK's and dV's
  // B share) MN-major. XA: dQ's A share, [256 keys][this CTA's 64 queries] MN-major; XB: dQ's B share,
  // [256 keys][this CTA's 64 head-dim columns] MN-major. One 128-byte swizzled row = 64 elements.
  static constexpr uint32_t kKBytes = kBlockN * kD * 2;          // 32 KiB
  static constexpr uint32_t kQsBytes = kHalf * kD * 2;           // 16 KiB
  static constexpr uint32_t kQdBytes = kBlockM * kHalf * 2;      // 16 KiB
  static constexpr uint32_t kDsBytes = kBlockN * kBlockM * 2;    // 32 KiB
  static constexpr uint32_t kXBytes = 2 * kBlockN * kHalf * 2;   // 32 KiB
  static constexpr uint32_t kXBlockBytes = kXBytes / 2;          // one key block of XA / XB: 16 KiB
  static constexpr uint32_t kRowBytes = kBlockM * 4;             // LSE2 (delta) of the step's 128 queries

  static constexpr ptx::UmmaF16Type kAB = One::kAB;
  static constexpr uint32_t kIdescSdp =
      ptx::make_umma_idesc_f16<kAB, ptx::UmmaDType::kF32, 256, kBlockM, ptx::UmmaMajor::kK, ptx::UmmaMajor::kK, 2>();
  static constexpr uint32_t kIdescDkv =
      ptx::make_umma_idesc_f16<kAB, ptx::UmmaDType::kF32, 256, kD, ptx::UmmaMajor::kK, ptx::UmmaMajor::kMN, 2>();
  static constexpr uint32_t kIdescDq =
      ptx::make_umma_idesc_f16<kAB, ptx::UmmaDType::kF32, 128, kD, ptx::UmmaMajor::kMN, ptx::UmmaMajor::kMN, 2>();
  static_assert(ptx::umma_a_tmem_ok(kIdescDkv), "dV reads P^T from TMEM: A must be K-major");

  // TMEM (512 columns, both CTAs): the 1-CTA map at d = 128. dQ (Layout B: 64 rows x 128 columns folded
  // into 128 lanes x 64 columns) overwrites the first half of dP^T's columns, under the same waits.
  static constexpr uint32_t kTmemCols = One::kTmemCols;
  static constexpr uint32_t kSCol = One::kSCol, kDpCol = One::kDpCol, kDqCol = One::kDqCol, kDvCol = One::kDvCol,
                            kDkCol = One::kDkCol;
  static constexpr uint32_t kDqWidth = kD / 2;
  static_assert(kDqCol + kDqWidth <= kDvCol, "dQ fits dP^T's columns");

  FLASHPTX_HD static constexpr SmemTile kmajor(uint32_t rows) { return One::kmajor(rows); }
  FLASHPTX_HD static constexpr SmemTile mnmajor(uint32_t rows) { return One::mnmajor(rows); }

  // K step s of S^T = K Q^T: A = this CTA's keys, B = this CTA's 64 queries.
  FLASHPTX_HD static constexpr Issue s_t(uint32_t tmem, uint32_t k_smem, uint32_t qs_smem, uint32_t s) {
    return One::ss(tmem + kSCol, kmajor(kBlockN).desc(k_smem, s), kmajor(kHalf).desc(qs_smem, s), kIdescSdp, s > 0);
  }
  FLASHPTX_HD static constexpr Issue dp_t(uint32_t tmem, uint32_t v_smem, uint32_t dos_smem, uint32_t s) {
    return One::ss(tmem + kDpCol, kmajor(kBlockN).desc(v_smem, s), kmajor(kHalf).desc(dos_smem, s), kIdescSdp, s > 0);
  }
  // K step s of dV += P^T dO: A = P^T in this CTA's TMEM (the 1-CTA placement), B = dOD.
  FLASHPTX_HD static constexpr Issue dv(uint32_t tmem, uint32_t dod_smem, uint32_t s, bool accumulate_tile) {
    Issue r = One::dv(tmem, dod_smem, s, accumulate_tile);
    r.b_desc = mnmajor(kBlockM).desc(dod_smem, s);
    r.idesc = kIdescDkv;
    return r;
  }
  FLASHPTX_HD static constexpr Issue dk(uint32_t tmem, uint32_t ds_smem, uint32_t qd_smem, uint32_t s, bool accumulate_tile) {
    return One::ss(tmem + kDkCol, kmajor(kBlockN).desc(ds_smem, s), mnmajor(kBlockM).desc(qd_smem, s), kIdescDkv,
                   accumulate_tile || s > 0);
  }
  // K step s (16 of the pair's 256 keys; steps 8 b .. 8 b + 7 are key block 2 p + b) of dQ = dS K.
  FLASHPTX_HD static constexpr Issue dq(uint32_t tmem, uint32_t xa_smem, uint32_t xb_smem, uint32_t s) {
    return One::ss(tmem + kDqCol, mnmajor(2 * kBlockN).desc(xa_smem, s), mnmajor(2 * kBlockN).desc(xb_smem, s),
                   kIdescDq, s > 0);
  }

  // The reduction warps' read-out of dQ (Layout B): warp w reads at One::dq_taddr(tmem, w, c) (lane
  // quarter 32 (w % 4), column kDqCol + 32 c, c in {0, 1}: the 1-CTA address), which holds rows
  // 32 (w % 2) + lane of this CTA's 64 and head-dim columns [64 (w / 2) + 32 c, +32).
  FLASHPTX_HD static constexpr int dq_row(int warp, int lane) { return 32 * (warp % 2) + lane; }  // in [0, 64)
  FLASHPTX_HD static constexpr int dq_chunk(int warp, int c) { return 2 * (warp / 2) + c; }      // 32-col chunk of d

  // The exchange (bytes from the tiles' starts): this CTA's dS^T half (1 - r), DS's chunk 1 - r, goes
  // to the peer's XA block r; its own half r is copied by its writers into XA block r at the same
  // offsets as in DS (ds_unit_byte: chunk q / 64, so the same unit lands in block r).
  FLASHPTX_HD static constexpr uint32_t send_src(uint32_t rank) { return (1u - rank) * kXBlockBytes; }
  FLASHPTX_HD static constexpr uint32_t send_dst(uint32_t rank) { return rank * kXBlockBytes; }
  static_assert(One::chunk(kBlockN, 1) == kXBlockBytes, "a dS^T query half is one XA key block");
};

// ---- 5. barriers ------------------------------------------------------------------------------------
// Every mbarrier of one CTA of the pair (one Q/dO stage). Counts differ by rank: the leader's take the
// peer's arrivals (remote mbarrier.arrive at cluster scope, or its relay's).
enum class PBar : uint8_t {
  kKvFull,    // TMA K, V, XB (expect_tx) -> MMA; leader: + the peer relay's arrive
  kQFull,     // TMA QS, QD + LSE2 -> MMA, compute; leader: + the peer relay
  kDoFull,    // TMA dOS, dOD + delta -> MMA, compute; leader: + the peer relay
  kQdoEmpty,  // commit (multicast, after dK and dQ) + this CTA's reduction (its staging in QS/dOS read) -> load
  kSdpFull,   // commit (multicast) -> compute
  kPReady,    // compute warps of both CTAs (P^T in TMEM) -> MMA (leader)
  kPFree,     // commit (leader-local) -> MMA (next S^T)
  kXFull,     // the peer's arrive.expect_tx + its bulk copy's bytes (the exchange landed) -> relay
  kDsReady,   // compute warps of both CTAs (dS^T stored, dP^T read) + both relays (exchange landed) -> MMA
  kDsFree,    // commit (multicast, after dQ) -> compute (next dS^T, next exchange), relay (tail)
  kDqFull,    // commit (multicast) -> reduction
  kDqFree,    // reduction warps of both CTAs (dQ read) -> MMA (next dP^T)
  kDkvFull,   // commit (multicast, the last step) -> compute (epilogue)
  kCount
};
constexpr int kPBarCount = static_cast<int>(PBar::kCount);
FLASHPTX_HD constexpr uint32_t pair_arrival_count(PBar b, int rank) {
  const bool leader = rank == 0;
  switch (b) {
    case PBar::kKvFull:
    case PBar::kQFull:
    case PBar::kDoFull: return leader ? 2u : 1u;
    case PBar::kQdoEmpty: return 2u;
    case PBar::kPReady: return leader ? 2u * kComputeWarps : 1u;
    case PBar::kDsReady: return leader ? 2u * kComputeWarps + 2u : 1u;
    case PBar::kDqFree: return leader ? 2u * kReductionWarps : 1u;
    default: return 1u;  // commits, and x_full's one arrive.expect_tx
  }
}
static_assert(pair_arrival_count(PBar::kDsReady, 0) == 18 && pair_arrival_count(PBar::kQdoEmpty, 1) == 2,
              "leader ds_ready: 16 compute warps and 2 relays");

}  // namespace flashptx::fa4bwd::pair
