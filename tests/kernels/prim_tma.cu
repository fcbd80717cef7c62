// Test kernels for ptx/tma.cuh: tensor-tile loads (2D-5D), stores (2D-4D) and 2D reduce-add through
// tensor maps encoded by src/tensormap.h, and the non-tensor bulk copies with their bulk groups.
// The kernels only move bytes; the host (tests/gpu/test_prim_tma.cpp) computes where every element
// must land (swizzle, zero fill, clipping) and checks each one.
#include <cstdint>

#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "tests/kernels/prim_tma.h"

namespace fp = flashptx::ptx;
using flashptx_test::prim::TmaCoords;

namespace {

// The tile starts at the first 1024-byte boundary of dynamic shared memory: the 128B swizzle's
// pattern repeats every 1024 bytes and is a function of the address bits, so the host's
// un-swizzling of tile offsets is exact only on that alignment.
__device__ __forceinline__ uint8_t* aligned_tile(uint8_t* dyn) {
  const uint32_t base = fp::smem_u32(dyn);
  return dyn + ((1024u - (base & 1023u)) & 1023u);
}

}  // namespace

// ---- tensor loads -----------------------------------------------------------------------------------
// Semantics: cp.async.bulk.tensor.{2..5}d loads complete on the mbarrier after exactly the box's bytes
// (tx-count = box bytes, also when part of the box lies outside the tensor), land in the swizzled
// layout of the map's swizzle mode, and read zeros outside the tensor. The tile is poisoned first
// (generic stores, then fence.proxy.async so the TMA's async-proxy writes are ordered after them).
// Fails if: wrong coordinates order/rank (wrong elements), wrong byte count (trap in the bounded
// wait, or early completion with poison left), swizzle mismatch, OOB not zero-filled.
__global__ void prim_tma_load_kernel(const __grid_constant__ CUtensorMap map, int rank, TmaCoords co,
                                     uint32_t box_bytes, uint8_t* out) {
  extern __shared__ uint8_t dyn[];
  __shared__ alignas(8) uint64_t bar;
  uint8_t* tile = aligned_tile(dyn);
  const uint32_t t = fp::smem_u32(tile), b = fp::smem_u32(&bar);
  for (uint32_t i = threadIdx.x; i < box_bytes / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(tile)[i] = make_uint4(0xA5A5A5A5u, 0xA5A5A5A5u, 0xA5A5A5A5u, 0xA5A5A5A5u);
  fp::fence_proxy_async_shared_cta();
  if (threadIdx.x == 0) {
    fp::mbarrier_init(b, 1);
    fp::fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const int* c = co.c;
    if (rank == 2) fp::cp_async_bulk_prefetch_tensor_2d(&map, c[0], c[1]);  // a hint: certifies nothing
    if (rank == 4) fp::cp_async_bulk_prefetch_tensor_4d(&map, c[0], c[1], c[2], c[3]);
    fp::mbarrier_arrive_expect_tx(b, box_bytes);
    switch (rank) {
      case 2: fp::cp_async_bulk_tensor_2d_load(t, &map, b, c[0], c[1]); break;
      case 3: fp::cp_async_bulk_tensor_3d_load(t, &map, b, c[0], c[1], c[2]); break;
      case 4: fp::cp_async_bulk_tensor_4d_load(t, &map, b, c[0], c[1], c[2], c[3]); break;
      case 5: fp::cp_async_bulk_tensor_5d_load(t, &map, b, c[0], c[1], c[2], c[3], c[4]); break;
      default: fp::cp_async_bulk_tensor_1d_load(t, &map, b, c[0]); break;
    }
  }
  FLASHPTX_MBAR_WAIT(b, 0, "tma load full");
  for (uint32_t i = threadIdx.x; i < box_bytes / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(out)[i] = reinterpret_cast<const uint4*>(tile)[i];
}

// ---- tensor stores and reduce-add ----------------------------------------------------------------
// Semantics: cp.async.bulk.tensor.{2..4}d stores of a swizzled shared tile write exactly the box's
// in-bounds elements (a box reaching outside the tensor is clipped: nothing is written outside, not
// even into the padding between rows), and cp.reduce.async.bulk.tensor.2d .add adds the tile to
// global. The tile is written with generic stores, fence.proxy.async by each writer, then a CTA
// barrier, as the contract requires; wait_group<0> makes the writes complete.
// Fails if: swizzle/coordinates wrong (elements misplaced), clipping wrong (padding or guard
// overwritten), reduce stores instead of adds, or the proxy ordering is missing (stale tile bytes).
__global__ void prim_tma_store_kernel(const __grid_constant__ CUtensorMap map, int rank, TmaCoords co,
                                      uint32_t box_bytes, const uint8_t* image, int reduce_add) {
  extern __shared__ uint8_t dyn[];
  uint8_t* tile = aligned_tile(dyn);
  const uint32_t t = fp::smem_u32(tile);
  for (uint32_t i = threadIdx.x; i < box_bytes / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(tile)[i] = reinterpret_cast<const uint4*>(image)[i];
  fp::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0) {
    const int* c = co.c;
    if (reduce_add) {
      fp::cp_reduce_async_bulk_tensor_2d_add(&map, t, c[0], c[1]);
    } else {
      switch (rank) {
        case 2: fp::cp_async_bulk_tensor_2d_store(&map, t, c[0], c[1]); break;
        case 3: fp::cp_async_bulk_tensor_3d_store(&map, t, c[0], c[1], c[2]); break;
        default: fp::cp_async_bulk_tensor_4d_store(&map, t, c[0], c[1], c[2], c[3]); break;
      }
    }
    fp::cp_async_bulk_commit_group();
    fp::cp_async_bulk_wait_group<0>();
  }
}

// ---- non-tensor bulk copies ------------------------------------------------------------------------
// Semantics: cp.async.bulk store copies the shared buffer to global; cp.reduce.async.bulk .add.f32
// adds it element-wise, atomically per element, so 8 CTAs adding onto one array sum exactly (the
// values are small integers); wait_group.read<0> certifies the shared source has been read, so
// overwriting it afterwards (with -src) cannot change what the first group wrote, and the second
// store writes the new contents.
// Fails if: the store/reduce size or address is wrong, the reduction is not atomic across CTAs
// (lost updates), or wait_group.read returns before the source was read (copy1 sees -src).
__global__ void prim_bulk_kernel(const float* src, float* copy1, float* copy2, float* acc) {
  using flashptx_test::prim::kBulkFloats;
  __shared__ alignas(128) float buf[kBulkFloats];
  const uint32_t s = fp::smem_u32(buf);
  const float* mine = src + blockIdx.x * kBulkFloats;
  for (int i = threadIdx.x; i < kBulkFloats; i += blockDim.x) buf[i] = mine[i];
  fp::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0) {
    fp::cp_async_bulk_store(copy1 + blockIdx.x * kBulkFloats, s, kBulkFloats * 4);
    fp::cp_reduce_async_bulk_add_f32(acc, s, kBulkFloats * 4);
    fp::cp_async_bulk_commit_group();
    fp::cp_async_bulk_wait_group_read<0>();
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kBulkFloats; i += blockDim.x) buf[i] = -mine[i];
  fp::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0) {
    fp::cp_async_bulk_store(copy2 + blockIdx.x * kBulkFloats, s, kBulkFloats * 4);
    fp::cp_async_bulk_commit_group();
    fp::cp_async_bulk_wait_group<0>();
  }
}

// ---- launchers ---------------------------------------------------------------------------------------
namespace flashptx_test::prim {

cudaError_t launch_tma_load(const CUtensorMap& map, int rank, TmaCoords coords, uint32_t box_bytes,
                            void* out_raw) {
  if (box_bytes > kTmaMaxBoxBytes || box_bytes % 16) return cudaErrorInvalidValue;
  const int smem = static_cast<int>(box_bytes + 1024);
  cudaError_t e = cudaFuncSetAttribute(prim_tma_load_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  prim_tma_load_kernel<<<1, 128, smem>>>(map, rank, coords, box_bytes, static_cast<uint8_t*>(out_raw));
  return cudaGetLastError();
}

cudaError_t launch_tma_store(const CUtensorMap& map, int rank, TmaCoords coords, uint32_t box_bytes,
                             const void* image, bool reduce_add) {
  if (box_bytes > kTmaMaxBoxBytes || box_bytes % 16) return cudaErrorInvalidValue;
  const int smem = static_cast<int>(box_bytes + 1024);
  cudaError_t e = cudaFuncSetAttribute(prim_tma_store_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  prim_tma_store_kernel<<<1, 128, smem>>>(map, rank, coords, box_bytes, static_cast<const uint8_t*>(image),
                                          reduce_add ? 1 : 0);
  return cudaGetLastError();
}

cudaError_t launch_bulk(const float* src, float* copy1, float* copy2, float* acc) {
  prim_bulk_kernel<<<kBulkCtas, 128>>>(src, copy1, copy2, acc);
  return cudaGetLastError();
}

}  // namespace flashptx_test::prim
