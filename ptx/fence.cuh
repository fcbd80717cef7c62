// Proxy fences (PTX ISA: "Parallel Synchronization and Communication Instructions: membar/fence",
// and "Memory Consistency Model: proxies").
//
// Shared memory is reached through two proxies: the generic proxy (ld/st.shared, stmatrix) and the
// async proxy (TMA cp.async.bulk*, wgmma operand reads). Ordering between them needs a proxy fence
// in the thread that made the accesses; a barrier alone orders only generic-proxy accesses.
#pragma once
#include "ptx/arch.cuh"

namespace flashptx::ptx {

// fence.proxy.async.shared::cta;
// Certifies: this thread's prior generic-proxy accesses to shared::cta are ordered before its
// subsequent async-proxy accesses (and, with a barrier after it, before other threads' async-proxy
// operations ordered after that barrier, e.g. a TMA store of a tile this thread wrote with st.shared).
// Does not certify completion of anything asynchronous already in flight.
__device__ __forceinline__ void fence_proxy_async_shared_cta() {
#if FLASHPTX_HAS_SM90
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("fence.proxy.async needs sm_90");
#endif
}

// fence.proxy.async;   (all state spaces)
__device__ __forceinline__ void fence_proxy_async() {
#if FLASHPTX_HAS_SM90
  asm volatile("fence.proxy.async;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("fence.proxy.async needs sm_90");
#endif
}

}  // namespace flashptx::ptx
