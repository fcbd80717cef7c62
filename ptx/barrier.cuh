// Named barriers: bar.sync / bar.arrive (PTX ISA: "Parallel Synchronization and Communication
// Instructions: bar, barrier"). A CTA has 16 of them, ids 0..15; id 0 is __syncthreads'.
//
// A named barrier counts threads (a warp contributes 32 at a time), not agents: a generation
// completes when `count` threads have executed bar.sync or bar.arrive on it, then it re-arms for the
// next generation by itself. Threads of one warp must execute it convergently (.aligned).
// Every device target has them (bar.sync / bar.arrive with a thread count: sm_20 and later).
#pragma once
#include <cstdint>

#include "ptx/arch.cuh"

namespace flashptx::ptx {

// bar.sync id, count;   (barrier.sync.aligned)
// Certifies: the caller waits until `count` threads have arrived on `id` in this generation;
// memory accesses of the participating threads before it are ordered before accesses after it
// (CTA-level, generic proxy only: not TMA or wgmma operand reads of shared memory).
// `count` must be a multiple of 32 and equal for every participant of the generation.
__device__ __forceinline__ void bar_sync(uint32_t id, uint32_t count) {
#if FLASHPTX_HAS_ANY_SM
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(count) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("bar.sync needs a device target");
#endif
}

// bar.arrive id, count;   (barrier.arrive.aligned)
// Certifies: the caller's arrival is counted; it does not wait and learns nothing about the others.
// Releases nothing by itself to the waiters beyond the barrier's ordering of the arriving threads'
// prior accesses (PTX memory model: bar.arrive has release semantics for the waiting side).
__device__ __forceinline__ void bar_arrive(uint32_t id, uint32_t count) {
#if FLASHPTX_HAS_ANY_SM
  asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(count) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("bar.arrive needs a device target");
#endif
}

// Compile-time-id forms, so that the SASS shows the id and the count as immediates.
template <uint32_t Id, uint32_t Count>
__device__ __forceinline__ void bar_sync() {
  static_assert(Id < 16, "named barrier ids are 0..15");
  static_assert(Count % 32 == 0 && Count > 0 && Count <= 1024, "named barrier counts are warps");
#if FLASHPTX_HAS_ANY_SM
  asm volatile("bar.sync %0, %1;" :: "n"(Id), "n"(Count) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("bar.sync needs a device target");
#endif
}
template <uint32_t Id, uint32_t Count>
__device__ __forceinline__ void bar_arrive() {
  static_assert(Id < 16, "named barrier ids are 0..15");
  static_assert(Count % 32 == 0 && Count > 0 && Count <= 1024, "named barrier counts are warps");
#if FLASHPTX_HAS_ANY_SM
  asm volatile("bar.arrive %0, %1;" :: "n"(Id), "n"(Count) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("bar.arrive needs a device target");
#endif
}

// nanosleep.u32 ns;   (PTX ISA "Miscellaneous Instructions: nanosleep", sm_70+)
// Suspends the calling thread for about `ns` nanoseconds (0 to 2 x ns; 0: a minimal yield).
// Certifies nothing: no ordering, no visibility. flashptx uses it only as the body of a branch that
// never runs (src/sm90/fa3_fwd_fp8.cuh, softmax_pin): a side effect the compiler cannot remove, so
// that the values its condition reads must be computed before the branch.
__device__ __forceinline__ void nanosleep_u32(uint32_t ns) {
#if FLASHPTX_HAS_SM90
  asm volatile("nanosleep.u32 %0;" :: "r"(ns));
#else
  FLASHPTX_ARCH_UNSUPPORTED("nanosleep is only built for sm_90+ in flashptx");
#endif
}

}  // namespace flashptx::ptx
