// Pipeline timeline instrumentation (`flashptx trace`; docs/PROTOCOLS.md, "Evidence").
//
// A kernel compiled with -DFLASHPTX_TRACE=1 stamps protocol events; compiled without it, every
// FLASHPTX_STAMP expands to nothing, so the release SASS (and its golden) is unchanged.
//
// Buffer layout (device memory, uint64_t words), written by the traced CTAs only:
//   for traced CTA c in [0, kMaxCtas), lane l in [0, kLanes):
//     base = (c * kLanes + l) * (2 + 2 * kMaxRecords)
//     base + 0: number of records written (may exceed kMaxRecords; the excess is dropped)
//     base + 1: %globaltimer (ns) at the lane's first stamp, to align SMs
//     base + 2 + 2*i: clock64 of record i;  base + 3 + 2*i: (event << 32) | arg
// Lanes: 0 the producer warpgroup, 1.. the consumer warpgroups. One elected thread per warpgroup
// stamps (thread 0 of the warpgroup).
#pragma once
#include <cstdint>

namespace flashptx::trace {

constexpr int kMaxCtas = 4;
constexpr int kLanes = 4;
constexpr int kMaxRecords = 4096;
constexpr int kWordsPerLane = 2 + 2 * kMaxRecords;
constexpr int kWordsTotal = kMaxCtas * kLanes * kWordsPerLane;

enum Event : uint32_t {
  kTmaIssueQ = 1,     // producer: Q load issued                 arg: m_block
  kTmaIssueK = 2,     // producer: K stage load issued           arg: (n_block << 8) | stage
  kTmaIssueV = 3,     // producer: V stage load issued           arg: (n_block << 8) | stage
  kEmptyWaitK = 4,    // producer: empty[K] wait passed           arg: stage
  kEmptyWaitV = 5,    // producer: empty[V] wait passed           arg: stage
  kFullK = 6,         // consumer: full[K] wait passed (bytes landed)  arg: stage
  kFullV = 7,         // consumer: full[V] wait passed            arg: stage
  kQKIssue = 8,       // consumer: S = QK^T wgmma batch issued    arg: n_block
  kQKDone = 9,        // consumer: wait_group retired QK          arg: n_block
  kSoftmaxBegin = 10, //                                          arg: n_block
  kSoftmaxEnd = 11,   //                                          arg: n_block
  kPVIssue = 12,      // consumer: O += PV wgmma batch issued     arg: n_block
  kPVDone = 13,       // consumer: wait_group retired PV          arg: n_block
  kReleaseK = 14,     // consumer: arrive on empty[K]             arg: stage
  kReleaseV = 15,     // consumer: arrive on empty[V]             arg: stage
  kTokenWait = 16,    // consumer: pingpong bar.sync entered      arg: barrier id
  kTokenGot = 17,     // consumer: pingpong bar.sync passed       arg: barrier id
  kTokenPass = 18,    // consumer: pingpong bar.arrive to next    arg: barrier id
  kEpilogueBegin = 19,
  kEpilogueEnd = 20,
  kTileBegin = 21,    // any lane: a work tile starts             arg: tile index
  kTileEnd = 22,
};

#if defined(__CUDACC__)
// Stamps one record. `lane_base` points at the lane's block (nullptr: this CTA is not traced).
__device__ __forceinline__ void stamp(uint64_t* lane_base, uint32_t event, uint32_t arg) {
  if (lane_base == nullptr) return;
  uint64_t n = lane_base[0];
  if (n == 0) {
    uint64_t gt;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(gt));
    lane_base[1] = gt;
  }
  if (n < static_cast<uint64_t>(kMaxRecords)) {
    lane_base[2 + 2 * n] = static_cast<uint64_t>(clock64());
    lane_base[3 + 2 * n] = (static_cast<uint64_t>(event) << 32) | arg;
  }
  lane_base[0] = n + 1;
}
#endif

}  // namespace flashptx::trace

#if defined(FLASHPTX_TRACE) && FLASHPTX_TRACE
#define FLASHPTX_STAMP(lane_base, event, arg) ::flashptx::trace::stamp((lane_base), (event), (arg))
#else
#define FLASHPTX_STAMP(lane_base, event, arg) ((void)0)
#endif
