// The pingpong token ring of FA3's consumer warpgroups (docs/PROTOCOLS.md, "Pingpong"; the FA3
// paper, Shah et al., arXiv 2407.08608, section 3.1; PTX ISA "bar, barrier").
//
// G consumer warpgroups pass one issue token around a ring of named barriers. Consumer g waits its
// turn with bar.sync(barrier_of(g), kParticipants) and passes it with
// bar.arrive(barrier_of(next(g)), kParticipants). A generation of barrier B_g is completed by
// 128 threads of g (sync) plus 128 threads of pred(g) (arrive): kParticipants = 256.
// The ring is primed once per CTA (not per work tile) by consumer 0 arriving on B_0: the bootstrap
// half-credit. The token orders tensor-core issue only; it carries no data and certifies nothing
// about K/V readiness (those are the mbarrier rings').
//
// __host__ __device__: the kernel calls these, and the CPU model (tools/models/) drives the same code.
#pragma once
#include <cstdint>

#include "src/protocol/hd.h"

namespace flashptx {

// Named-barrier ids of the forward kernels (PTX: 16 per CTA, 0..15).
enum NamedBarrier : uint32_t {
  kBarCta = 0,            // reserved: __syncthreads / bar.sync 0
  kBarReserved1 = 1,      // unused by the forward kernels (FA3's enum reserves it for its epilogue)
  kBarSchedulerWG1 = 2,   // B_0: consumer 0 waits its turn here
  kBarSchedulerWG2 = 3,   // B_1
  kBarSchedulerWG3 = 4,   // B_2
  kBarEpilogueWG0 = 8,    // consumer g's own 128-thread epilogue barrier is 8 + g
};

template <int Groups>
struct TokenRing {
  static_assert(Groups >= 2 && Groups <= 3, "the ring has two or three consumer warpgroups");
  static constexpr int kGroups = Groups;
  static constexpr uint32_t kThreadsPerGroup = 128;
  static constexpr uint32_t kParticipants = 2 * kThreadsPerGroup;  // one group syncs, its predecessor arrives
  static constexpr uint32_t kFirstBarrier = kBarSchedulerWG1;

  // g is the local consumer index 0..G-1 (physical warpgroup minus the producer's one).
  FLASHPTX_HD static constexpr uint32_t barrier_of(int g) { return kFirstBarrier + static_cast<uint32_t>(g); }
  FLASHPTX_HD static constexpr int next(int g) { return (g + 1) % Groups; }
  FLASHPTX_HD static constexpr int pred(int g) { return (g + Groups - 1) % Groups; }
  // Only consumer 0 deposits the bootstrap half-credit, once per CTA.
  FLASHPTX_HD static constexpr bool primes(int g) { return g == 0; }
  // Scheduler handoffs (syncs, and as many arrives) per consumer per work tile of J K/V blocks.
  FLASHPTX_HD static constexpr int handoffs_intra_overlap(int J) { return J > 1 ? J - 1 : 0; }
  FLASHPTX_HD static constexpr int handoffs_non_overlap(int J) { return J >= 1 ? J + 1 : 0; }
  // Our forward kernels (src/sm90/fa3_fwd.cuh): the two-stage overlap with startup QK(0) and drain
  // PV(J-1) inside the ring as well, so consecutive tiles keep the consumers half a step apart.
  FLASHPTX_HD static constexpr int handoffs_edges_in_ring(int J) { return J >= 1 ? J + 1 : 0; }
};

}  // namespace flashptx
