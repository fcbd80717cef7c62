// FA4 forward (sm_100a): what the host, the kernel and the CPU evidence share (plain C++, no device
// code).
//
//   FwdParams     the kernel's one argument: the forward kernels of both architectures take the same
//                 struct (src/sm90/fa3_fwd_config.h), so the launch plan fills one whatever runs
//                 (src/plan.cpp: the tensor-map boxes differ, the fields do not; `trace` is unused here)
//   FwdConfig     the compile-time shape of one specialization, with named fields
//   FwdLayout<C>  everything derived from a config: the MMA plan (src/protocol/fa4_plan.h), the
//                 shared-memory plan (Q stages, the K/V ring, the O staging tile, the softmax ->
//                 correction records, the scheduler ring, the barriers), the barrier slots with their
//                 arrival counts (from fa4_plan.h's barrier table), the register split (its role table)
// The specializations that exist are listed once, in src/sm100/fa4_fwd.cu.
#pragma once
#include <cstdint>

#include "src/protocol/fa4_plan.h"
#include "src/sm90/fa3_fwd_config.h"

namespace flashptx::fa4 {

using FwdParams = fa3::FwdParams;

struct FwdConfig {
  int head_dim;     // 64 or 128
  int cta_group;    // 1: one CTA per work tile; 2: a 2-CTA cluster issuing cta_group::2 MMAs (M = 256)
  int kv_slots;     // slots of the K/V ring, which holds K0 V0 K1 V1 ... in turn
  bool bf16;        // bf16 in and out; fp16 otherwise
  EmuSplit emu;     // which exponentials the degree-3 polynomial computes (the rest: MUFU.EX2)
  int tau_log2;     // rescale threshold: the reference moves when the row max grows by more (base 2)
};

constexpr int kSchedulerSlots = 2;  // depth of the tile-index ring (scheduler -> every role)

// How many barriers of each kind: one per Q stage, per ring slot, per scheduler slot, or one.
constexpr int barrier_copies(Bar b, int kv_slots) {
  switch (b) {
    case Bar::kKvFull:
    case Bar::kKvEmpty: return kv_slots;
    case Bar::kOStaged:
    case Bar::kOFree:
    case Bar::kClc: return 1;
    case Bar::kSchedFull:
    case Bar::kSchedEmpty: return kSchedulerSlots;
    default: return kQStages;
  }
}
constexpr uint32_t barrier_first_slot(Bar b, int kv_slots) {
  uint32_t n = 0;
  for (int x = 0; x < static_cast<int>(b); ++x) n += static_cast<uint32_t>(barrier_copies(static_cast<Bar>(x), kv_slots));
  return n;
}

template <FwdConfig C>
struct FwdLayout {
  using Plan = MmaPlan<C.head_dim, C.cta_group, C.bf16>;
  static constexpr int kG = C.cta_group;
  static constexpr int kThreads = fa4::kThreads;
  static constexpr int kBlockM = tile_rows(C.cta_group);  // query rows of one work tile (the pair's)
  static constexpr int kSlots = C.kv_slots;

  // Register split: the role table's targets (fa4_plan.h). Kernel entry has 65536 / 512 = 128.
  static constexpr int kSoftmaxRegs = role_regs(Role::kSoftmaxH);
  static constexpr int kCorrectionRegs = role_regs(Role::kCorrection);
  static constexpr int kOtherRegs = role_regs(Role::kMma);

  // Shared-memory plan, bytes from a 1024-aligned base (128-byte swizzle atoms repeat every 1024 B).
  static constexpr uint32_t kQBytes = Plan::kQBytes;  // one Q stage
  static constexpr uint32_t kSlotBytes = Plan::kKBytes > Plan::kVBytes ? Plan::kKBytes : Plan::kVBytes;
  static constexpr uint32_t kOBytes = kStageRows * C.head_dim * 2;  // one staged O tile (bf16/fp16)
  static constexpr uint32_t kOffQ = 0;
  static constexpr uint32_t kOffKv = kOffQ + kQStages * kQBytes;
  static constexpr uint32_t kOffO = kOffKv + kSlots * kSlotBytes;
  static constexpr uint32_t kOffScale = kOffO + kOBytes;                     // float [2][128]: gamma
  static constexpr uint32_t kOffFinal = kOffScale + kQStages * kStageRows * 4;  // float2 [2][128]: D, a
  static constexpr uint32_t kOffBias = kOffFinal + kQStages * kStageRows * 8;   // float [2][128]: see Softmax
  static constexpr uint32_t kOffSched = kOffBias + kQStages * kStageRows * 4;   // int [2] tile ring
  static constexpr uint32_t kOffTmemBase = kOffSched + 8;                     // uint32: tcgen05.alloc's result
  static constexpr uint32_t kOffClc = kOffSched + 16;                         // 16 bytes, 16-aligned
  static constexpr uint32_t kOffBar = kOffClc + 16;

  // Barrier slots: one run of barrier_copies(b) barriers per fa4_plan.h Bar, in its order.
  static constexpr int kSchedSlots = kSchedulerSlots;
  static constexpr uint32_t slot(Bar b, int copy = 0) { return barrier_first_slot(b, kSlots) + static_cast<uint32_t>(copy); }
  static constexpr uint32_t kNumBarriers = barrier_first_slot(Bar::kCount, kSlots);
  static constexpr uint32_t kSmemBytes = kOffBar + 8 * kNumBarriers + 1024;  // + alignment slack

  static_assert(kQBytes % 1024 == 0 && kSlotBytes % 1024 == 0 && kOBytes % 1024 == 0, "1024-byte tiles");
  static_assert(kOffScale % 1024 == 0, "tiles end 1024-aligned");
  static_assert(kOffClc % 16 == 0 && kOffBar % 8 == 0, "alignment of the response and the barriers");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
  static_assert(kSlots >= 2, "the ring holds a K and a V block at least");
  static_assert(C.tau_log2 >= 0 && C.tau_log2 <= 8, "P <= 2^tau must fit the 16-bit P");
};

// The specializations that exist (their kernels: src/sm100/fa4_fwd.cu; the CPU replay runs the same
// objects). The emulation splits are the pinned FA4 source's for (1-CTA, d 128) and (2-CTA, d 128)
// (docs/PROTOCOLS.md, "The FA4 roles"); d 64 takes the 1-CTA one. tau = 8 (log2 256): the
// BF16/FP16 envelope.
constexpr FwdConfig kD64 = {.head_dim = 64, .cta_group = 1, .kv_slots = 6, .bf16 = true,
                            .emu = {16, 4, 1}, .tau_log2 = 8};
constexpr FwdConfig kD128 = {.head_dim = 128, .cta_group = 1, .kv_slots = 3, .bf16 = true,
                             .emu = {16, 4, 1}, .tau_log2 = 8};
constexpr FwdConfig kD128Pair = {.head_dim = 128, .cta_group = 2, .kv_slots = 6, .bf16 = true,
                                 .emu = {10, 4, 1}, .tau_log2 = 8};
// The same shape in fp16.
constexpr FwdConfig fp16(FwdConfig c) {
  c.bf16 = false;
  return c;
}
static_assert(emulated_count(kD128.emu) == 16 && emulated_count(kD128Pair.emu) == 24,
              "the seed's emulated fractions: 12.5% and 18.75% of a 128-element row");

}  // namespace flashptx::fa4
