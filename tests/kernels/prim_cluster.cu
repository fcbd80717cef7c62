// Test kernels for ptx/cluster.cuh (ranks, mapa, DSMEM ld/st, barrier.cluster), the cluster-scope
// mbarrier arrive of ptx/mbarrier.cuh and the multicast TMA load of ptx/tma.cuh, in 2-CTA clusters
// (__cluster_dims__(2, 1, 1)). Each kernel ends with a cluster barrier so that no CTA exits while
// its peer may still touch its shared memory.
#include <cstdint>

#include "ptx/cluster.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "tests/kernels/prim_ldst.h"

namespace fp = flashptx::ptx;

// ---- DSMEM exchange ----------------------------------------------------------------------------------
// Semantics: rank queries (ctarank 0/1, nctarank 2); after barrier.cluster (arrive.release +
// wait.acquire) a CTA reads its peer's shared memory through mapa + ld.shared::cluster (u32 and v4)
// and sees the values the peer wrote before the barrier; DSMEM stores into the peer, published by a
// second barrier.cluster, are seen by the peer's plain loads; mbarrier.arrive.release.cluster on
// the peer's barrier (via mapa) completes the peer's count-1 phase (each CTA's own barrier is
// completed only by the other CTA: a misdirected arrive leaves one barrier pending -> trap).
// Fails if: mapa maps to the wrong CTA/offset (own or wrong values), the cluster barrier does not
// order the DSMEM accesses (stale or poisoned values), the remote arrive is lost or misdirected.
__global__ void __cluster_dims__(2, 1, 1)
    prim_cluster_dsmem_kernel(const uint32_t* in, int* info, uint32_t* ld_out, uint32_t* st_out, uint32_t* v4_out) {
  __shared__ alignas(16) uint32_t mine[256];
  __shared__ alignas(16) uint32_t recv[256];
  __shared__ alignas(8) uint64_t bar;
  const uint32_t rank = fp::cluster_ctarank(), peer = rank ^ 1u;
  const int t = threadIdx.x;  // 256 threads
  mine[t] = in[rank * 256 + t];
  recv[t] = 0xDEADBEEFu;
  if (t == 0) {
    fp::mbarrier_init(fp::smem_u32(&bar), 1);
    fp::fence_mbarrier_init();
    info[blockIdx.x * 4 + 0] = static_cast<int>(rank);
    info[blockIdx.x * 4 + 1] = static_cast<int>(fp::cluster_nctarank());
    info[blockIdx.x * 4 + 2] = static_cast<int>(fp::cluster_ctaid().x);
    info[blockIdx.x * 4 + 3] = static_cast<int>(fp::clusterid().x);
  }
  fp::barrier_cluster_sync();  // both CTAs running, `mine` and the barrier initialised

  const uint32_t peer_mine = fp::mapa_shared_cluster(fp::smem_u32(&mine[(t * 3) % 256]), peer);
  ld_out[rank * 256 + t] = fp::ld_shared_cluster_u32(peer_mine);
  if (t < 64) {
    const uint4 v = fp::ld_shared_cluster_v4_u32(fp::mapa_shared_cluster(fp::smem_u32(&mine[4 * t]), peer));
    v4_out[rank * 256 + 4 * t + 0] = v.x;
    v4_out[rank * 256 + 4 * t + 1] = v.y;
    v4_out[rank * 256 + 4 * t + 2] = v.z;
    v4_out[rank * 256 + 4 * t + 3] = v.w;
  }
  // DSMEM stores into the peer: words 0..127 as u32, words 128..255 as v4 (threads 0..31).
  if (t < 128) fp::st_shared_cluster_u32(fp::mapa_shared_cluster(fp::smem_u32(&recv[t]), peer), mine[t] ^ 0x5A5A5A5Au);
  if (t < 32) {
    const int w = 128 + 4 * t;
    fp::st_shared_cluster_v4_u32(fp::mapa_shared_cluster(fp::smem_u32(&recv[w]), peer),
                                 make_uint4(mine[w] ^ 0x5A5A5A5Au, mine[w + 1] ^ 0x5A5A5A5Au,
                                            mine[w + 2] ^ 0x5A5A5A5Au, mine[w + 3] ^ 0x5A5A5A5Au));
  }
  fp::barrier_cluster_arrive_release();
  fp::barrier_cluster_wait_acquire();
  st_out[rank * 256 + t] = recv[t];

  if (t == 0) fp::mbarrier_arrive_cluster(fp::mapa_shared_cluster(fp::smem_u32(&bar), peer));
  FLASHPTX_MBAR_WAIT(fp::smem_u32(&bar), 0, "cluster remote-arrive barrier");
  fp::barrier_cluster_sync();  // no CTA exits while its peer may still access its shared memory
}

// ---- multicast TMA load --------------------------------------------------------------------------------
// Semantics: one 2D load issued by rank 0 with cta_mask 0b11 lands at the same offset in both CTAs
// and completes_tx on the barrier at the same offset in each; each CTA announces the bytes on its own
// barrier (arrive.expect_tx); barrier inits are published cluster-wide (fence.mbarrier_init +
// barrier.cluster) before the copy is issued. Fails if: the mask or the multicast form is wrong
// (rank 1 never completes -> trap, or receives nothing), or the bytes differ.
__global__ void __cluster_dims__(2, 1, 1)
    prim_cluster_multicast_kernel(const __grid_constant__ CUtensorMap map, int c0, int c1, uint32_t box_bytes,
                                  uint8_t* out) {
  __shared__ alignas(128) uint8_t tile[4096];
  __shared__ alignas(8) uint64_t bar;
  const uint32_t rank = fp::cluster_ctarank();
  const uint32_t b = fp::smem_u32(&bar);
  for (uint32_t i = threadIdx.x; i < box_bytes / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(tile)[i] = make_uint4(0xA5A5A5A5u, 0xA5A5A5A5u, 0xA5A5A5A5u, 0xA5A5A5A5u);
  fp::fence_proxy_async_shared_cta();
  if (threadIdx.x == 0) {
    fp::mbarrier_init(b, 1);
    fp::fence_mbarrier_init();
  }
  fp::barrier_cluster_sync();
  if (threadIdx.x == 0) {
    fp::mbarrier_arrive_expect_tx(b, box_bytes);
    if (rank == 0) fp::cp_async_bulk_tensor_2d_load_multicast(fp::smem_u32(tile), &map, b, 0x3, c0, c1);
  }
  FLASHPTX_MBAR_WAIT(b, 0, "multicast full");
  for (uint32_t i = threadIdx.x; i < box_bytes / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(out + rank * box_bytes)[i] = reinterpret_cast<const uint4*>(tile)[i];
  fp::barrier_cluster_sync();
}

namespace flashptx_test::prim {

cudaError_t launch_cluster_dsmem(const uint32_t* in, int* info, uint32_t* ld_out, uint32_t* st_out,
                                 uint32_t* v4_out) {
  prim_cluster_dsmem_kernel<<<2, 256>>>(in, info, ld_out, st_out, v4_out);
  return cudaGetLastError();
}

cudaError_t launch_cluster_multicast(const CUtensorMap& map, int c0, int c1, uint32_t box_bytes, void* out) {
  if (box_bytes > 4096 || box_bytes % 16) return cudaErrorInvalidValue;
  prim_cluster_multicast_kernel<<<2, 128>>>(map, c0, c1, box_bytes, static_cast<uint8_t*>(out));
  return cudaGetLastError();
}

}  // namespace flashptx_test::prim
