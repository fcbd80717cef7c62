// CPU oracle of Blackwell TMEM and CTA groups (docs/PROTOCOLS.md, "TMEM planning"; its tables:
// `flashptx ledger 0x07`): an event checker for tcgen05 allocation / issue / completion /
// visibility / CTA-group rules, driven over the positive traces and the eleven negative fixtures of
// its failure lab. The column plan and allocator it drives are the kernel's own code in
// src/protocol/tmem_plan.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "src/protocol/tmem_plan.h"

namespace flashptx::models::tmem07 {

using flashptx::tmem::Interval;
using flashptx::tmem::TmemError;

enum class Op : uint8_t {
  kAlloc,           // tcgen05.alloc (cols), issued by `participants` CTAs' warps
  kRelinquish,      // tcgen05.relinquish_alloc_permit
  kDealloc,         // tcgen05.dealloc (base, cols)
  kMma,             // tcgen05.mma: single-thread issue, asynchronous result into TMEM
  kCommit,          // tcgen05.commit: completion -> mbarrier
  kWaitMbar,        // consumer observes the mbarrier completion
  kFenceAfterSync,  // tcgen05.fence::after_thread_sync on the consumer side
  kLd,              // tcgen05.ld by `warp`, lanes [lanes.begin, lanes.end)
  kWaitLd,          // tcgen05.wait::ld
  kPeerActive,      // the peer CTA of the pair is resident (cluster launched, peer started)
  kPeerQuiesce,     // the peer reports that it no longer touches TMEM (pair barrier)
  kExit,            // kernel exit of this CTA
};

struct Event {
  Op op;
  uint8_t cta_group = 1;     // 1 or 2 for tcgen05 operations
  uint32_t cols = 0;         // kAlloc / kDealloc
  uint32_t base = 0;         // kDealloc
  uint8_t participants = 1;  // CTAs contributing a warp to a collective (alloc/relinquish/dealloc)
  uint32_t warp = 0;         // kLd: warp index inside the CTA
  Interval lanes{0, 32};     // kLd
};

struct CheckResult {
  TmemError error = TmemError::kOk;
  int at = -1;  // index of the offending event (-1: accepted, or the exit check)
};

// Runs the rules over a trace, stopping at the first violation.
CheckResult check_trace(const std::vector<Event>& trace);

// Positive traces: full-width allocation, one MMA, completion chain, four warps loading their
// 32-lane slices, relinquish, free, exit. cta_group 1 or 2.
std::vector<Event> positive_trace(int cta_group);

// The eleven negative fixtures (the guide's "TMEM planning", failure lab).
struct Fixture {
  const char* mutation;  // the mutation, as the ledger prints it
  TmemError expected;    // the failure it must be detected as
};
const std::vector<Fixture>& negative_fixtures();
// Runs fixture i through the same checkers the positive cases pass; returns the reason it failed.
TmemError run_fixture(size_t i);

// The FA4 forward TMEM objects (S0/P0/S1/P1/O0/O1) with a live-interval schedule, for the alias audit.
std::vector<flashptx::tmem::TmemObject> fa4_fwd_objects(uint32_t n, uint32_t d_v, uint32_t q_stage);
// First illegal pair (by name "x/y"), or "" when every pair is legal.
std::string first_illegal_alias(const std::vector<flashptx::tmem::TmemObject>& objs);

// CTA-group contract for M = N = d = 128.
struct CtaGroupContract {
  uint32_t mma_m, mma_n, mma_k;   // logical MMA tile
  Interval cta0_rows, cta1_rows;  // output rows of CTA 0 / CTA 1 (cta1 in its own tile for group 1)
  uint32_t cluster_m, cluster_n;
  uint32_t b_bytes_per_cta;       // staged B operand bytes per CTA
  uint32_t b_bytes_pair;          // for the two CTAs together
};
CtaGroupContract cta_group_contract(int cta_group);

}  // namespace flashptx::models::tmem07
