// Global-memory atomics and the fences that order them (PTX ISA: "Parallel Synchronization and
// Communication Instructions: atom / red", "ld" with .acquire, "Memory Consistency Model").
//
// Used by the backward's fp32 gradient accumulation and by its deterministic writer order: a
// semaphore per accumulator block that writers wait on (ld.acquire) and advance (red.release) in a
// declared order (src/protocol/writer_order.h).
#pragma once
#include <cstdint>
#include <cstdio>

#include "ptx/arch.cuh"

namespace flashptx::ptx {

// red.global.add.f32 [addr], v;
// Certifies: v is added to *addr atomically with respect to every other atomic on that address.
// Does not certify any order among adds from different threads (fp32 addition is not associative:
// the sum's bits depend on that order), nor visibility to this thread's later plain loads.
__device__ __forceinline__ void red_global_add_f32(float* addr, float v) {
#if FLASHPTX_HAS_SM90
  asm volatile("red.global.add.f32 [%0], %1;" :: "l"(addr), "f"(v) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("red.global.add.f32 is only built for sm_90+ in flashptx");
#endif
}

// ld.acquire.gpu.global.u32 v, [addr];
// Certifies: if v was written by a release (at gpu scope) of another thread, everything that thread
// did before its release is visible to this thread's later accesses (generic proxy).
__device__ __forceinline__ uint32_t ld_acquire_gpu_u32(const uint32_t* addr) {
  uint32_t v = 0;
#if FLASHPTX_HAS_SM90
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(addr) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("ld.acquire.gpu is only built for sm_90+ in flashptx");
#endif
  return v;
}

// red.release.gpu.global.add.u32 [addr], v;
// Certifies: this thread's prior accesses (generic proxy) are visible at gpu scope to any thread
// that acquires the updated value. Async-proxy writes (bulk reduce) need their own completion wait
// and a proxy fence first (fence_proxy_async_global).
__device__ __forceinline__ void red_release_gpu_add_u32(uint32_t* addr, uint32_t v) {
#if FLASHPTX_HAS_SM90
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" :: "l"(addr), "r"(v) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("red.release.gpu is only built for sm_90+ in flashptx");
#endif
}

// fence.acq_rel.gpu;
// Certifies: this thread's prior memory accesses (generic proxy) are ordered before its later ones
// as observed at gpu scope (the fence behind __threadfence()).
__device__ __forceinline__ void fence_acq_rel_gpu() {
#if FLASHPTX_HAS_SM90
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("fence.acq_rel.gpu is only built for sm_90+ in flashptx");
#endif
}

// fence.proxy.async.global;
// Certifies: ordering between this thread's generic-proxy and async-proxy accesses to global
// memory (e.g. a completed cp.reduce.async.bulk and a later release of a semaphore, or an acquire
// and a later bulk reduce-add). Does not wait for any asynchronous operation to complete.
__device__ __forceinline__ void fence_proxy_async_global() {
#if FLASHPTX_HAS_SM90
  asm volatile("fence.proxy.async.global;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("fence.proxy.async.global needs sm_90");
#endif
}

// ---- a spin wait on a semaphore (not an instruction: a loop around ld.acquire) ------------------
// Spins until *sem == value (the deterministic writer order's turn, src/protocol/writer_order.h).
// Certifies what the acquire load that saw `value` certifies (above). Test builds
// (FLASHPTX_BOUNDED_WAIT) bound the spin like every mbarrier wait (ptx/mbarrier.cuh): an order that
// can never complete traps with the semaphore's name instead of hanging; release builds spin.
__device__ __noinline__ __attribute__((noreturn)) inline void semaphore_wait_timeout(const uint32_t* sem,
                                                                                  uint32_t value,
                                                                                  const char* name) {
  printf("flashptx: semaphore wait timed out: %s (at %p) waiting for %u, holds %u, block (%d,%d,%d)\n", name,
         static_cast<const void*>(sem), value, *const_cast<volatile const uint32_t*>(sem), blockIdx.x, blockIdx.y,
         blockIdx.z);
  asm volatile("trap;");
  __builtin_unreachable();
}
__device__ __forceinline__ void semaphore_wait_eq(const uint32_t* sem, uint32_t value, const char* name) {
#if defined(FLASHPTX_BOUNDED_WAIT) && FLASHPTX_BOUNDED_WAIT
  if (ld_acquire_gpu_u32(sem) == value) return;
  const long long start = clock64();
  while (ld_acquire_gpu_u32(sem) != value)
    if (clock64() - start > 20000000000LL) semaphore_wait_timeout(sem, value, name);
#else
  (void)name;
  while (ld_acquire_gpu_u32(sem) != value) {
  }
#endif
}

}  // namespace flashptx::ptx
