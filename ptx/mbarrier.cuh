// mbarrier: the shared-memory transaction barrier of sm_90 (PTX ISA: "Parallel Synchronization and
// Communication Instructions: mbarrier", and "Memory Consistency Model" for its ordering).
//
// An mbarrier is a 64-bit object in shared memory holding: the current phase's parity, a pending
// arrival count (reset to the init count at each phase flip) and a pending transaction count
// (tx-count, in bytes). A phase completes when both reach zero; completion flips the parity.
// Waiters name the parity of the phase they wait for (try_wait.parity): the wait passes when that
// phase has completed, i.e. when the barrier's current parity differs from the one given.
//
// Conventions: `bar` is a 32-bit shared::cta address (ptx::smem_u32). All wrappers are executed by
// the threads named in their contract; none of them is a collective unless it says so.
#pragma once
#include <cstdint>
#include <cstdio>

#include "ptx/arch.cuh"

namespace flashptx::ptx {

// mbarrier.init.shared::cta.b64 [bar], count;
// Certifies: the barrier is in phase 0 with `count` pending arrivals and tx-count 0.
// Does not certify: visibility to other threads or to the async proxy (TMA): follow with
// fence_mbarrier_init() (cluster scope) or fence.proxy.async, then a CTA barrier, before any use.
// One thread initialises; re-initialising a barrier that may have waiters is undefined.
__device__ __forceinline__ void mbarrier_init(uint32_t bar, uint32_t count) {
#if FLASHPTX_HAS_SM90
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("mbarrier.init needs sm_90");
#endif
}

// mbarrier.inval.shared::cta.b64 [bar];
// Certifies: the 8 bytes may be reused as ordinary shared memory. Only after every phase anyone
// waits on has completed, and no arrive or TMA completion can still target it.
__device__ __forceinline__ void mbarrier_inval(uint32_t bar) {
#if FLASHPTX_HAS_SM90
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(bar) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("mbarrier.inval needs sm_90");
#endif
}

// fence.mbarrier_init.release.cluster;
// Certifies: prior mbarrier.init of this thread are visible, at cluster scope, to later operations
// ordered after a cluster barrier (or a CTA barrier for a single-CTA cluster), including TMA
// completions and remote arrives. It is the only fence the ISA defines for mbarrier.init.
__device__ __forceinline__ void fence_mbarrier_init() {
#if FLASHPTX_HAS_SM90
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("fence.mbarrier_init needs sm_90");
#endif
}

// mbarrier.arrive.release.cta.shared::cta.b64 _, [bar];
// Certifies: this thread's prior memory accesses are released (cta scope) to whoever acquires the
// completed phase; one arrival is counted. Does not certify that the phase completed.
__device__ __forceinline__ void mbarrier_arrive(uint32_t bar) {
#if FLASHPTX_HAS_SM90
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("mbarrier.arrive needs sm_90");
#endif
}

// mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [bar], tx_bytes;
// Certifies: tx-count is raised by `tx_bytes` and one arrival counted, atomically, so the phase
// cannot complete before that many bytes of asynchronous copies signal completion on `bar`.
// Does not certify anything about which copies: any complete_tx on `bar` decrements the count, so
// the byte count must be exactly the sum of the copies issued against this phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t tx_bytes) {
#if FLASHPTX_HAS_SM90
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;"
               :: "r"(bar), "r"(tx_bytes) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("mbarrier.arrive.expect_tx needs sm_90");
#endif
}

// mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], tx_bytes;
// Certifies: tx-count raised by `tx_bytes`, without an arrival and without release semantics.
__device__ __forceinline__ void mbarrier_expect_tx(uint32_t bar, uint32_t tx_bytes) {
#if FLASHPTX_HAS_SM90
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;"
               :: "r"(bar), "r"(tx_bytes) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("mbarrier.expect_tx needs sm_90");
#endif
}

// mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote_bar];
// Arrive on a barrier of another CTA of the cluster. `remote_bar` is a shared::cluster address
// (ptx::mapa of the peer's barrier). Certifies: release at cluster scope, one arrival counted on
// the peer's barrier. Does not certify the peer observed it.
__device__ __forceinline__ void mbarrier_arrive_cluster(uint32_t remote_bar) {
#if FLASHPTX_HAS_SM90
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];"
               :: "r"(remote_bar) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("mbarrier.arrive (shared::cluster) needs sm_90");
#endif
}

// mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [remote_bar], tx_bytes;
// As mbarrier_arrive_expect_tx, on a barrier of another CTA of the cluster (`remote_bar`: mapa of the
// peer's barrier), release at cluster scope: the usual companion of a copy into that CTA's shared
// memory that completes its bytes there (cp_async_bulk_shared_cluster). Does not certify the peer
// observed it, nor that the bytes arrived.
__device__ __forceinline__ void mbarrier_arrive_expect_tx_cluster(uint32_t remote_bar, uint32_t tx_bytes) {
#if FLASHPTX_HAS_SM90
  asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;"
               :: "r"(remote_bar), "r"(tx_bytes) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("mbarrier.arrive.expect_tx (shared::cluster) needs sm_90");
#endif
}

// mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [bar], parity;
// Returns true when the phase of parity `parity` has completed; the hardware may suspend the
// thread for a system-dependent time before returning false. On true, certifies (acquire, cta
// scope) visibility of everything released by the arrivals of that phase, and of the bytes that
// asynchronous copies signalled on it. Does not certify anything about later phases.
__device__ __forceinline__ bool mbarrier_try_wait_parity(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
#if FLASHPTX_HAS_SM90
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("mbarrier.try_wait.parity needs sm_90");
#endif
  return done != 0;
}

// mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [bar], parity;
// As mbarrier_try_wait_parity, with the acquire at cluster scope: the wait for a barrier that
// threads of another CTA of the cluster arrive on (mbarrier_arrive_cluster, a multicast
// tcgen05.commit). A release and an acquire synchronize only if each one's scope includes the other
// thread (PTX ISA, "Memory Consistency Model", scope and morally strong operations): .cta does not
// include a thread of the peer CTA, so after an .acquire.cta wait the peer's writes released by its
// arrive are not ordered before this thread's reads. Certifies, on true, visibility of everything
// released at cluster scope by the arrivals of that phase.
__device__ __forceinline__ bool mbarrier_try_wait_parity_cluster(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
#if FLASHPTX_HAS_SM90
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("mbarrier.try_wait.parity.acquire.cluster needs sm_90");
#endif
  return done != 0;
}

// One try_wait of the scope asked for: kCluster, acquire at cluster scope; else at CTA scope.
template <bool kCluster>
__device__ __forceinline__ bool mbarrier_try_wait_parity_scoped(uint32_t bar, uint32_t parity) {
  if constexpr (kCluster) return mbarrier_try_wait_parity_cluster(bar, parity);
  return mbarrier_try_wait_parity(bar, parity);
}

// The unbounded wait: loops on try_wait.parity. The release build uses this one.
template <bool kCluster = false>
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
  while (!mbarrier_try_wait_parity_scoped<kCluster>(bar, parity)) {
  }
}

// The bounded wait of the test builds: after `max_cycles` of clock64 without completion it prints
// the barrier's name, its address and the parity waited for, then executes `trap`, so a protocol
// bug fails the test run with a message instead of hanging it. Certifies what try_wait certifies.
// The report is an out-of-line call that never returns, so no value is live across it and the
// retry loop costs the caller no registers (a returning call would force spills around it).
__device__ __noinline__ __attribute__((noreturn)) inline void mbarrier_wait_timeout(uint32_t bar, uint32_t parity,
                                                                                   const char* name) {
  printf("flashptx: mbarrier wait timed out: barrier %s (smem 0x%x) parity %u, block (%d,%d,%d) thread %d\n",
         name, bar, parity, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x);
#if FLASHPTX_HAS_ANY_SM
  asm volatile("trap;");
#else
  FLASHPTX_ARCH_UNSUPPORTED("trap needs a device target");
#endif
  __builtin_unreachable();
}
template <bool kCluster = false>
__device__ __forceinline__ void mbarrier_wait_bounded(uint32_t bar, uint32_t parity, const char* name,
                                                      long long max_cycles = 20000000000LL) {
  if (mbarrier_try_wait_parity_scoped<kCluster>(bar, parity)) return;
  const long long start = clock64();
  while (!mbarrier_try_wait_parity_scoped<kCluster>(bar, parity)) {
    if (clock64() - start > max_cycles) mbarrier_wait_timeout(bar, parity, name);
  }
}

}  // namespace flashptx::ptx

// The wait the kernels call: bounded (trapping with the barrier's name) in test builds, a plain
// try_wait loop in release builds. `name` is a string literal naming the barrier and its role.
// FLASHPTX_MBAR_WAIT_SCOPED(cluster, ...): the same with the acquire's scope a compile-time choice
// (true: cluster, for a barrier another CTA of the cluster arrives on).
#if defined(FLASHPTX_BOUNDED_WAIT) && FLASHPTX_BOUNDED_WAIT
#define FLASHPTX_MBAR_WAIT(bar, parity, name) ::flashptx::ptx::mbarrier_wait_bounded((bar), (parity), (name))
#define FLASHPTX_MBAR_WAIT_SCOPED(cluster, bar, parity, name) \
  ::flashptx::ptx::mbarrier_wait_bounded<(cluster)>((bar), (parity), (name))
#else
#define FLASHPTX_MBAR_WAIT(bar, parity, name) ::flashptx::ptx::mbarrier_wait((bar), (parity))
#define FLASHPTX_MBAR_WAIT_SCOPED(cluster, bar, parity, name) ::flashptx::ptx::mbarrier_wait<(cluster)>((bar), (parity))
#endif
