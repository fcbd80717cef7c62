// The (stage, phase) coordinate of a circular shared-memory ring (docs/PROTOCOLS.md, "Hopper
// prerequisites" and "The K/V rings"; PTX ISA "mbarrier" for the phase and parity semantics).
//
// A ring of S stages is a set of S slots, each guarded by a "full" mbarrier (producer -> consumer:
// the bytes of this slot have landed) and an "empty" mbarrier (consumer -> producer: every reader of
// this slot is done). Iteration j of a loop uses slot j % S in generation j / S; the parity a waiter
// passes to mbarrier.try_wait.parity is the generation's low bit.
//
// The producer waits on "empty" with the opposite parity, so that in generation 0 its wait on a
// freshly initialised barrier (phase 0 incomplete, the previous phase counted as complete) passes at
// once: the producer runs one generation ahead. RingState::producer_start() encodes exactly that.
//
// This object is __host__ __device__: the kernels run it, and the CPU oracles (tools/models/) drive the
// same code through every ring table and mutation of the guide's "The K/V rings".
#pragma once
#include <cstdint>

#include "src/protocol/hd.h"

namespace flashptx {

template <int Stages>
struct RingState {
  static_assert(Stages >= 1 && Stages <= 32, "ring depth");
  static constexpr int kStages = Stages;
  uint32_t stage = 0;  // slot index, 0 .. Stages-1
  uint32_t phase = 0;  // parity of the generation this slot is in

  // Consumer side: waits full[stage] with `phase`; starts at (0, 0).
  FLASHPTX_HD static RingState consumer_start() { return RingState{0u, 0u}; }
  // Producer side: waits empty[stage] with `phase`; starts at (0, 1), one generation ahead.
  FLASHPTX_HD static RingState producer_start() { return RingState{0u, 1u}; }

  FLASHPTX_HD void advance() {
    if (++stage == static_cast<uint32_t>(Stages)) { stage = 0; phase ^= 1u; }
  }
  FLASHPTX_HD void advance(uint32_t n) { for (uint32_t i = 0; i < n; ++i) advance(); }
};

}  // namespace flashptx
