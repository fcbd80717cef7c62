// FA4 backward (sm_100a): what the host, the kernel and the CPU evidence share (plain C++, no device
// code).
//
//   BwdParams     the kernel's one argument: the FA3 backward's (src/sm90/fa3_bwd_config.h), so that
//                 the launch plan fills one struct whichever architecture runs. The FA4 kernel reads
//                 tma_q/do/k/v (boxes of (64, 128)), tma_dk/dv (stores, boxes of (64, 64)), lse2, delta,
//                 dq_accum (in fa4bwd::dq_accum_index order, not FA3's fragment order), dk/dv_accum
//                 (GQA), dq_sem/dkv_sem (deterministic), the sizes and scales. It does not read
//                 dq_rotated (FA3's rotated writer order): the plan never sets it for this kernel.
//   BwdConfig     the compile-time shape of one specialization, named fields
//   BwdPairLayout<Bf16>  the same for the 2-CTA form (src/protocol/fa4_bwd_pair_plan.h), d = 128
//   BwdLayout<C>  the MMA plan (src/protocol/fa4_bwd_plan.h), the shared-memory plan, the barrier
//                 slots with their arrival counts, the register split (the plan's role table)
// The specializations that exist are listed once, in src/sm100/fa4_bwd.cu.
// NEVER EXECUTED: no Blackwell GPU ran these kernels (compiled, audited, replayed on the CPU only).
#pragma once
#include <cstdint>

#include "src/protocol/fa4_bwd_pair_plan.h"
#include "src/protocol/fa4_bwd_plan.h"
#include "src/sm90/fa3_bwd_config.h"

namespace flashptx::fa4bwd {

using BwdParams = fa3::BwdParams;

struct BwdConfig {
  int head_dim;  // 64 or 128
  int stages;    // depth of the Q/dO ring (one stage = Q + LSE2 + dO + delta of one query block)
  bool bf16;     // bf16 in and out; fp16 otherwise
};

template <BwdConfig C>
struct BwdLayout {
  using Plan = BwdMmaPlan<C.head_dim, C.bf16>;
  static constexpr int kStages = C.stages;
  static constexpr int kThreads = fa4bwd::kThreads;
  static constexpr int kReductionRegs = warpgroup_regs(0);
  static constexpr int kComputeRegs = warpgroup_regs(1);
  static constexpr int kOtherRegs = warpgroup_regs(3);
  static_assert(warpgroup_regs(2) == kComputeRegs, "both compute warpgroups have one target");

  // Shared memory, bytes from a 1024-aligned base. After the query loop the dK/dV epilogue stages dV
  // in the dS^T buffer and dK in Q stage 0 (both free once dkv_full completes: every MMA has).
  static constexpr uint32_t kOffK = 0;
  static constexpr uint32_t kOffV = kOffK + Plan::kKBytes;
  static constexpr uint32_t kOffQ = kOffV + Plan::kKBytes;
  static constexpr uint32_t kOffDo = kOffQ + C.stages * Plan::kQBytes;
  static constexpr uint32_t kOffDs = kOffDo + C.stages * Plan::kQBytes;
  static constexpr uint32_t kOffDqStage = kOffDs + Plan::kDsBytes;  // two 16 KiB dQ chunks
  static constexpr uint32_t kOffLse = kOffDqStage + 2 * kDqChunkBytes;
  static constexpr uint32_t kOffDelta = kOffLse + C.stages * Plan::kRowBytes;
  static constexpr uint32_t kOffTmemSlot = kOffDelta + C.stages * Plan::kRowBytes;  // tcgen05.alloc's result
  static constexpr uint32_t kOffBar = kOffTmemSlot + 16;
  static constexpr uint32_t kNumBarriers = barrier_total(C.stages);
  static constexpr uint32_t kSmemBytes = kOffBar + 8 * kNumBarriers + 1024;  // + alignment slack
  static constexpr uint32_t slot(Bar b, int copy = 0) { return barrier_first_slot(b, C.stages) + static_cast<uint32_t>(copy); }

  static_assert(Plan::kQBytes % 1024 == 0 && Plan::kKBytes % 1024 == 0 && kOffDqStage % 1024 == 0, "1024-aligned tiles");
  static_assert(kOffLse % 16 == 0 && kOffBar % 8 == 0, "bulk-copy and barrier alignment");
  static_assert(Plan::kDsBytes >= kBlockN * C.head_dim * 2 && Plan::kQBytes >= kBlockN * C.head_dim * 2,
                "the epilogue's dV / dK staging fits the dS^T buffer / Q stage 0");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
};

// The specializations that exist (kernels: src/sm100/fa4_bwd.cu; the replay runs the same objects).
// d128 has one Q/dO stage: K, V, Q, dO, dS^T (32 KiB each) and two dQ chunks fill 192 KiB; a second
// stage would need 256 KiB.
constexpr BwdConfig kBwdD64 = {.head_dim = 64, .stages = 2, .bf16 = true};
constexpr BwdConfig kBwdD128 = {.head_dim = 128, .stages = 1, .bf16 = true};
// The 2-CTA form's shared memory (each CTA; src/protocol/fa4_bwd_pair_plan.h says what each tile
// holds). Every tile sits at the same offset in both CTAs: one descriptor of the leader serves both.
// The dQ staging reuses QS (chunks 0, 1) and dOS (chunks 2, 3), 8 KiB a chunk (64 rows x 32 fp32):
// S^T and dP^T, their only readers, completed before dq_full, and the next loads wait qdo_empty, which
// counts the reduction's arrive. The epilogue stages dV in DS and dK in XA (free after dkv_full).
template <bool Bf16>
struct BwdPairLayout {
  using Plan = pair::PairMmaPlan<Bf16>;
  static constexpr int kThreads = fa4bwd::kThreads;
  static constexpr int kReductionRegs = warpgroup_regs(0);
  static constexpr int kComputeRegs = warpgroup_regs(1);
  static constexpr int kOtherRegs = warpgroup_regs(3);
  static constexpr uint32_t kOffK = 0;
  static constexpr uint32_t kOffV = kOffK + Plan::kKBytes;
  static constexpr uint32_t kOffQs = kOffV + Plan::kKBytes;
  static constexpr uint32_t kOffDos = kOffQs + Plan::kQsBytes;
  static constexpr uint32_t kOffQd = kOffDos + Plan::kQsBytes;
  static constexpr uint32_t kOffDod = kOffQd + Plan::kQdBytes;
  static constexpr uint32_t kOffDs = kOffDod + Plan::kQdBytes;
  static constexpr uint32_t kOffXa = kOffDs + Plan::kDsBytes;
  static constexpr uint32_t kOffXb = kOffXa + Plan::kXBytes;
  static constexpr uint32_t kOffLse = kOffXb + Plan::kXBytes;
  static constexpr uint32_t kOffDelta = kOffLse + Plan::kRowBytes;
  static constexpr uint32_t kOffTmemSlot = kOffDelta + Plan::kRowBytes;
  static constexpr uint32_t kOffBar = kOffTmemSlot + 16;
  static constexpr uint32_t kSmemBytes = kOffBar + 8 * pair::kPBarCount + 1024;  // + alignment slack
  static constexpr uint32_t kDqStageChunkBytes = kBlockM / 2 * kDqChunkCols * 4;  // 8 KiB
  // Staging of dQ chunk c (0..3): QS for chunks 0, 1; dOS for 2, 3.
  static constexpr uint32_t dq_stage(int c) {
    return (c < 2 ? kOffQs : kOffDos) + static_cast<uint32_t>(c % 2) * kDqStageChunkBytes;
  }
  static constexpr uint32_t bar(pair::PBar b) { return kOffBar + 8u * static_cast<uint32_t>(b); }
  static_assert(2 * kDqStageChunkBytes <= Plan::kQsBytes, "two staged dQ chunks fit QS (and dOS)");
  static_assert(kOffXa % 1024 == 0 && kOffXb % 1024 == 0 && kOffQd % 1024 == 0, "1024-aligned tiles");
  static_assert(Plan::kDsBytes >= kBlockN * Plan::kD * 2 && Plan::kXBytes >= kBlockN * Plan::kD * 2,
                "the epilogue's dV / dK staging fits DS / XA");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
};

constexpr BwdConfig fp16(BwdConfig c) {
  c.bf16 = false;
  return c;
}

}  // namespace flashptx::fa4bwd
