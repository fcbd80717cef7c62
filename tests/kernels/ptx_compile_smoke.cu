// Compile smoke test of ptx/ldst.cuh and ptx/cluster.cuh for sm_90a: every wrapper is instantiated
// once, so a wrong PTX spelling or constraint fails the build, and the golden of this kernel shows
// which SASS each wrapper lowers to. Semantics are tested by the gpu_sm90 suites, not here; this
// kernel is never launched.
#include <cstdint>

#include "ptx/cluster.cuh"
#include "ptx/ldst.cuh"

namespace ptx = flashptx::ptx;

extern "C" __global__ void __cluster_dims__(2, 1, 1) ptx_compile_smoke_kernel(uint32_t* out, uint32_t sel) {
  __shared__ __align__(16) uint16_t tile[4 * 64];
  __shared__ __align__(16) uint32_t box[4];
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t row = ptx::smem_u32(&tile[(lane % 32) * 8]);
  tile[threadIdx.x] = static_cast<uint16_t>(threadIdx.x);
  if (threadIdx.x < 4) box[threadIdx.x] = threadIdx.x;
  __syncthreads();

  uint32_t a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, d0, e0, e1;
  ptx::ldmatrix_x1(row, d0);
  ptx::ldmatrix_x2(row, e0, e1);
  ptx::ldmatrix_x4(row, a0, a1, a2, a3);
  ptx::ldmatrix_x1_trans(row, c0);
  ptx::ldmatrix_x2_trans(row, c1, c2);
  ptx::ldmatrix_x4_trans(row, b0, b1, b2, b3);
  c3 = ptx::prmt(a0, b0, sel) ^ ptx::prmt<0x5410>(a1, b1) ^ ptx::byte_perm(a2, b2, 0x3210);
  __syncthreads();
  ptx::stmatrix_x1(row, d0 ^ c0);
  ptx::stmatrix_x2(row, e0, e1 ^ c1);
  ptx::stmatrix_x4(row, a0, a1, a2, a3 ^ c2);
  ptx::stmatrix_x1_trans(row, b0);
  ptx::stmatrix_x2_trans(row, b1, b2);
  ptx::stmatrix_x4_trans(row, b3, c3, a0, a1);

  const ptx::Elected e = ptx::elect_sync();
  const uint32_t rank = ptx::cluster_ctarank();
  const uint32_t peer = rank ^ 1u;
  const uint32_t remote = ptx::mapa_shared_cluster(ptx::smem_u32(box), peer);
  ptx::barrier_cluster_sync();
  if (e.is_elected) {
    ptx::st_shared_cluster_u32(remote, rank);
    ptx::st_shared_cluster_v4_u32(remote, make_uint4(rank, e.lane, 1, 2));
  }
  ptx::fence_acq_rel_cluster();
  ptx::barrier_cluster_arrive_relaxed();
  ptx::barrier_cluster_wait_acquire();
  const uint32_t v = ptx::ld_shared_cluster_u32(remote);
  const uint4 w = ptx::ld_shared_cluster_v4_u32(remote);
  const uint3 cid = ptx::clusterid(), cta = ptx::cluster_ctaid(), ncta = ptx::cluster_nctaid();
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = v + w.x + w.y + w.z + w.w + tile[threadIdx.x] +
      ptx::cluster_nctarank() + cid.x + cid.y + cid.z + cta.x + cta.y + cta.z + ncta.x + ncta.y + ncta.z +
      (ptx::elect_one_sync() ? 1u : 0u);
  ptx::barrier_cluster_sync();  // no CTA exits while its peer may still touch its shared memory
}
