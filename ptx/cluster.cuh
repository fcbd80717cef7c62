// Thread-block clusters of sm_90: rank queries, distributed shared memory (DSMEM) and the cluster
// barrier (PTX ISA: "Special Registers: %cluster_ctarank, %cluster_nctarank, %clusterid,
// %cluster_ctaid, %cluster_nctaid", "Data Movement and Conversion Instructions: mapa", "ld", "st"
// with the .shared::cluster state space, "Parallel Synchronization and Communication Instructions:
// barrier.cluster" and "membar/fence", and "Memory Consistency Model" for scopes).
//
// Addresses: a shared::cta address (ptx::smem_u32) names this CTA's shared memory; it is also a
// valid shared::cluster address denoting the same bytes of the executing CTA. mapa turns it into the
// shared::cluster address of the same offset in another CTA of the cluster. Only shared::cluster
// addresses may be given to the *_shared_cluster loads and stores below.
//
// Lifetime: a CTA's shared memory may be accessed by peers only while that CTA is running. A kernel
// that touches peer shared memory must end with a cluster barrier (arrive + wait) so that no CTA
// exits while a peer may still read or write its shared memory.
#pragma once
#include <cstdint>

#include "ptx/arch.cuh"

namespace flashptx::ptx {

// ---- rank queries (special registers; no memory effect) ---------------------------------------

// mov.u32 r, %cluster_ctarank;   this CTA's linear rank in its cluster, 0 .. nctarank-1
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r = 0;
#if FLASHPTX_HAS_SM90
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#else
  FLASHPTX_ARCH_UNSUPPORTED("%cluster_ctarank needs sm_90");
#endif
  return r;
}

// mov.u32 r, %cluster_nctarank;   number of CTAs in the cluster (1 for a launch without clusters)
__device__ __forceinline__ uint32_t cluster_nctarank() {
  uint32_t r = 0;
#if FLASHPTX_HAS_SM90
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
#else
  FLASHPTX_ARCH_UNSUPPORTED("%cluster_nctarank needs sm_90");
#endif
  return r;
}

// mov.u32 {x,y,z}, %clusterid.{x,y,z};   the cluster's index in the grid of clusters
__device__ __forceinline__ uint3 clusterid() {
  uint3 r{0, 0, 0};
#if FLASHPTX_HAS_SM90
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r.x));
  asm volatile("mov.u32 %0, %%clusterid.y;" : "=r"(r.y));
  asm volatile("mov.u32 %0, %%clusterid.z;" : "=r"(r.z));
#else
  FLASHPTX_ARCH_UNSUPPORTED("%clusterid needs sm_90");
#endif
  return r;
}

// mov.u32 {x,y,z}, %cluster_ctaid.{x,y,z};   this CTA's index inside its cluster
__device__ __forceinline__ uint3 cluster_ctaid() {
  uint3 r{0, 0, 0};
#if FLASHPTX_HAS_SM90
  asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(r.x));
  asm volatile("mov.u32 %0, %%cluster_ctaid.y;" : "=r"(r.y));
  asm volatile("mov.u32 %0, %%cluster_ctaid.z;" : "=r"(r.z));
#else
  FLASHPTX_ARCH_UNSUPPORTED("%cluster_ctaid needs sm_90");
#endif
  return r;
}

// mov.u32 {x,y,z}, %cluster_nctaid.{x,y,z};   the cluster's shape in CTAs
__device__ __forceinline__ uint3 cluster_nctaid() {
  uint3 r{0, 0, 0};
#if FLASHPTX_HAS_SM90
  asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(r.x));
  asm volatile("mov.u32 %0, %%cluster_nctaid.y;" : "=r"(r.y));
  asm volatile("mov.u32 %0, %%cluster_nctaid.z;" : "=r"(r.z));
#else
  FLASHPTX_ARCH_UNSUPPORTED("%cluster_nctaid needs sm_90");
#endif
  return r;
}

// ---- mapa -------------------------------------------------------------------------------------

// mapa.shared::cluster.u32 d, smem_addr, rank;
// Certifies: d is the shared::cluster address of the byte at offset `smem_addr` (a shared::cta
// address of this CTA) in the CTA of cluster rank `rank`. Pure address arithmetic: does not certify
// that the peer is running, nor anything about its data.
__device__ __forceinline__ uint32_t mapa_shared_cluster(uint32_t smem_addr, uint32_t rank) {
  uint32_t d = 0;
#if FLASHPTX_HAS_SM90
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(d) : "r"(smem_addr), "r"(rank));
#else
  FLASHPTX_ARCH_UNSUPPORTED("mapa needs sm_90");
#endif
  return d;
}

// ---- DSMEM loads and stores (weak: no ordering of their own) ----------------------------------
// Certify: the access of the named bytes of the owning CTA's shared memory. Do not certify ordering
// with any other thread: publish with barrier.cluster (arrive.release / wait.acquire), an mbarrier
// arrive at cluster scope, or fence.acq_rel.cluster + a flag. Addresses: shared::cluster (mapa).

// ld.shared::cluster.u32 d, [addr];
__device__ __forceinline__ uint32_t ld_shared_cluster_u32(uint32_t cluster_addr) {
  uint32_t d = 0;
#if FLASHPTX_HAS_SM90
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(d) : "r"(cluster_addr) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("ld.shared::cluster needs sm_90");
#endif
  return d;
}

// ld.shared::cluster.v4.u32 {d0, d1, d2, d3}, [addr];   addr 16-byte aligned
__device__ __forceinline__ uint4 ld_shared_cluster_v4_u32(uint32_t cluster_addr) {
  uint4 d{0, 0, 0, 0};
#if FLASHPTX_HAS_SM90
  asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(d.x), "=r"(d.y), "=r"(d.z), "=r"(d.w) : "r"(cluster_addr) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("ld.shared::cluster needs sm_90");
#endif
  return d;
}

// st.shared::cluster.u32 [addr], v;
__device__ __forceinline__ void st_shared_cluster_u32(uint32_t cluster_addr, uint32_t v) {
#if FLASHPTX_HAS_SM90
  asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(cluster_addr), "r"(v) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("st.shared::cluster needs sm_90");
#endif
}

// st.shared::cluster.v4.u32 [addr], {v0, v1, v2, v3};   addr 16-byte aligned
__device__ __forceinline__ void st_shared_cluster_v4_u32(uint32_t cluster_addr, uint4 v) {
#if FLASHPTX_HAS_SM90
  asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};"
               :: "r"(cluster_addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("st.shared::cluster needs sm_90");
#endif
}

// ---- cluster barrier --------------------------------------------------------------------------
// barrier.cluster is split: arrive marks this thread's arrival for the current phase, wait blocks
// until every non-exited thread of every CTA of the cluster has arrived. The .aligned forms below
// require all threads of the warp to execute the same barrier.cluster instruction convergently.
// Each thread must alternate arrive, wait, arrive, wait... (a second arrive before the wait is
// undefined).

// barrier.cluster.arrive.release.aligned;
// Certifies: this thread's prior memory accesses (including DSMEM stores) are released at cluster
// scope to the threads whose matching wait.acquire completes. Does not block.
__device__ __forceinline__ void barrier_cluster_arrive_release() {
#if FLASHPTX_HAS_SM90
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("barrier.cluster needs sm_90");
#endif
}

// barrier.cluster.arrive.relaxed.aligned;
// Certifies only the arrival: no memory ordering. For pure execution rendezvous (e.g. "the peer is
// running"), or when ordering is provided by a separate fence.acq_rel.cluster / mbarrier protocol.
__device__ __forceinline__ void barrier_cluster_arrive_relaxed() {
#if FLASHPTX_HAS_SM90
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("barrier.cluster needs sm_90");
#endif
}

// barrier.cluster.wait.acquire.aligned;
// Certifies: every thread of the cluster has arrived for this phase, and (acquire, cluster scope)
// visibility of everything released by release-arrives of that phase. Relaxed arrivals release
// nothing.
__device__ __forceinline__ void barrier_cluster_wait_acquire() {
#if FLASHPTX_HAS_SM90
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("barrier.cluster needs sm_90");
#endif
}

// arrive.release + wait.acquire: the full cluster-wide rendezvous (cluster.sync() in CUDA terms).
__device__ __forceinline__ void barrier_cluster_sync() {
  barrier_cluster_arrive_release();
  barrier_cluster_wait_acquire();
}

// fence.acq_rel.cluster;
// Certifies: a cluster-scope acquire-release fence for this thread's accesses (the ISA's fence.sc is
// not implied). Combined with a relaxed flag store/load on the other side it forms a release/acquire
// pattern; alone it synchronises with nobody.
__device__ __forceinline__ void fence_acq_rel_cluster() {
#if FLASHPTX_HAS_SM90
  asm volatile("fence.acq_rel.cluster;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("fence.acq_rel.cluster needs sm_90");
#endif
}

}  // namespace flashptx::ptx
