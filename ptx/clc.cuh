// Cluster launch control (sm_100): work stealing from the hardware's queue of not-yet-launched
// clusters (PTX ISA: "Parallel Synchronization and Communication Instructions:
// clusterlaunchcontrol.try_cancel" and "clusterlaunchcontrol.query_cancel").
//
// Protocol (one request at a time, from one thread):
//   mbarrier_arrive_expect_tx(bar, 16); clusterlaunchcontrol_try_cancel(resp, bar);
//   all readers wait on `bar` (the phase completes when the 16-byte response has landed);
//   clusterlaunchcontrol_query_cancel_is_canceled(resp) -> false: no cluster left, stop;
//                                                          true: get_first_ctaid is the stolen work.
//   every reader, after its last read of `resp`: fence.proxy.async.shared::cta
//     (ptx::fence_proxy_async_shared_cta, ptx/fence.cuh), then a barrier with the requesting thread,
//     then the next try_cancel.
// Why the fence: the response is written by the async proxy (try_cancel is an asynchronous
// operation, like a TMA load) and read with generic ld.shared. The next try_cancel overwrites the
// same bytes through the async proxy; without a proxy fence between a thread's generic reads and
// that async write, the write is not ordered after the reads (the ISA's memory consistency model:
// "Proxies", a generic-proxy access and an async-proxy access to the same location need a proxy
// fence), so a reader could observe the next response. The barrier alone orders threads, not proxies.
// Rules the wrappers cannot check: after observing a failed request, issuing another is undefined;
// reading the ctaid of a failed response is undefined; all readers of `resp` must be done (proxy
// fence, then a barrier) before the next request overwrites it.
#pragma once
#include <cstdint>

#include "ptx/arch.cuh"

namespace flashptx::ptx {

// clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [resp], [bar];
// @pre one thread; `resp` a 16-byte aligned shared::cta address of 16 bytes, `bar` an mbarrier of this
//      CTA that expects 16 transaction bytes for the current phase (arrive.expect_tx by this thread).
// Certifies: asynchronously, an opaque 16-byte response is written to `resp` and its 16 bytes signalled
// as complete_tx on `bar`; on success the response names the first CTA of a cluster whose launch was
// cancelled, and no other successful response of the grid names it. Does not certify success.
__device__ __forceinline__ void clusterlaunchcontrol_try_cancel(uint32_t resp, uint32_t bar) {
#if FLASHPTX_HAS_SM100A
  asm volatile("clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%0], [%1];"
               :: "r"(resp), "r"(bar) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("clusterlaunchcontrol.try_cancel is only built for sm_100a in flashptx");
#endif
}

// clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.multicast::cluster::all.b128 [resp], [bar];
// As above, but the response is written to `resp` and signalled on `bar` at the same offsets in every
// CTA of the issuing cluster (each CTA's mbarrier must expect the 16 bytes).
__device__ __forceinline__ void clusterlaunchcontrol_try_cancel_multicast(uint32_t resp, uint32_t bar) {
#if FLASHPTX_HAS_SM100A
  asm volatile("clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.multicast::cluster::all.b128 [%0], [%1];"
               :: "r"(resp), "r"(bar) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("clusterlaunchcontrol.try_cancel is only built for sm_100a in flashptx");
#endif
}

// The response, as read from shared memory after the mbarrier phase that signalled it completed.
struct ClcResponse {
  uint64_t lo, hi;
};

__device__ __forceinline__ ClcResponse clc_response_load(uint32_t resp) {
  ClcResponse r{0, 0};
#if FLASHPTX_HAS_SM100A
  asm volatile("ld.shared.v2.u64 {%0, %1}, [%2];" : "=l"(r.lo), "=l"(r.hi) : "r"(resp) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("clusterlaunchcontrol is only built for sm_100a in flashptx");
#endif
  return r;
}

// clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, response;
// Certifies: true iff the request succeeded (a cluster was cancelled and is now this CTA's work).
__device__ __forceinline__ bool clusterlaunchcontrol_query_cancel_is_canceled(ClcResponse r) {
  uint32_t ok = 0;
#if FLASHPTX_HAS_SM100A
  asm volatile(
      "{\n"
      ".reg .b128 resp;\n"
      ".reg .pred p;\n"
      "mov.b128 resp, {%1, %2};\n"
      "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, resp;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(ok) : "l"(r.lo), "l"(r.hi));
#else
  FLASHPTX_ARCH_UNSUPPORTED("clusterlaunchcontrol.query_cancel is only built for sm_100a in flashptx");
#endif
  return ok != 0;
}

// clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {x, y, z, _}, response;
// @pre the response is a success (is_canceled true); otherwise the result is undefined.
// Certifies: the %ctaid of the first CTA of the cancelled cluster (add %cluster_ctaid for the others).
__device__ __forceinline__ uint3 clusterlaunchcontrol_query_cancel_get_first_ctaid(ClcResponse r) {
  uint3 c{0, 0, 0};
#if FLASHPTX_HAS_SM100A
  asm volatile(
      "{\n"
      ".reg .b128 resp;\n"
      "mov.b128 resp, {%3, %4};\n"
      "clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {%0, %1, %2, _}, resp;\n"
      "}\n"
      : "=r"(c.x), "=r"(c.y), "=r"(c.z) : "l"(r.lo), "l"(r.hi));
#else
  FLASHPTX_ARCH_UNSUPPORTED("clusterlaunchcontrol.query_cancel is only built for sm_100a in flashptx");
#endif
  return c;
}

}  // namespace flashptx::ptx
