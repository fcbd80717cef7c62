// TMA and bulk copies (PTX ISA: "Data Movement and Conversion Instructions: cp.async.bulk.tensor,
// cp.reduce.async.bulk.tensor, cp.async.bulk.prefetch.tensor, cp.async.bulk, cp.reduce.async.bulk,
// cp.async.bulk.commit_group, cp.async.bulk.wait_group"). sm_90.
//
// A tensor map (CUtensorMap, 128 bytes, encoded on the host: src/tensormap.h) describes a global
// tensor of rank 1..5, its box and its shared-memory swizzle. Kernels receive it as a
// `const __grid_constant__ CUtensorMap` parameter and pass its generic address here.
// Coordinates are element indices, innermost first; a box that reaches outside the tensor is
// filled with zeros on load and clipped on store.
//
// Loads complete on an mbarrier (complete_tx: the bytes are subtracted from its tx-count). Stores
// and reductions complete in bulk groups: commit_group closes a group, wait_group<N> waits until at
// most N groups are pending (.read: until their shared-memory source may be overwritten).
#pragma once
#include <cstdint>

#include "ptx/arch.cuh"

namespace flashptx::ptx {

// ---- tensor loads: cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// Certifies (once `bar`'s phase completes): the box's bytes are in shared memory at `dst` and
// visible to threads that observed the phase. Does not certify anything at issue time; the issuing
// thread must have raised the tx-count (mbarrier_arrive_expect_tx) for this phase by the box size.
#define FLASHPTX_TMA_LOAD_SIG(N) \
  "cp.async.bulk.tensor." #N "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"

__device__ __forceinline__ void cp_async_bulk_tensor_1d_load(uint32_t dst, const void* tmap, uint32_t bar,
                                                             int32_t c0) {
#if FLASHPTX_HAS_SM90
  asm volatile(FLASHPTX_TMA_LOAD_SIG(1) " [%0], [%1, {%3}], [%2];"
               :: "r"(dst), "l"(tmap), "r"(bar), "r"(c0) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.tensor needs sm_90");
#endif
}
__device__ __forceinline__ void cp_async_bulk_tensor_2d_load(uint32_t dst, const void* tmap, uint32_t bar,
                                                             int32_t c0, int32_t c1) {
#if FLASHPTX_HAS_SM90
  asm volatile(FLASHPTX_TMA_LOAD_SIG(2) " [%0], [%1, {%3, %4}], [%2];"
               :: "r"(dst), "l"(tmap), "r"(bar), "r"(c0), "r"(c1) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.tensor needs sm_90");
#endif
}
__device__ __forceinline__ void cp_async_bulk_tensor_3d_load(uint32_t dst, const void* tmap, uint32_t bar,
                                                             int32_t c0, int32_t c1, int32_t c2) {
#if FLASHPTX_HAS_SM90
  asm volatile(FLASHPTX_TMA_LOAD_SIG(3) " [%0], [%1, {%3, %4, %5}], [%2];"
               :: "r"(dst), "l"(tmap), "r"(bar), "r"(c0), "r"(c1), "r"(c2) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.tensor needs sm_90");
#endif
}
__device__ __forceinline__ void cp_async_bulk_tensor_4d_load(uint32_t dst, const void* tmap, uint32_t bar,
                                                             int32_t c0, int32_t c1, int32_t c2, int32_t c3) {
#if FLASHPTX_HAS_SM90
  asm volatile(FLASHPTX_TMA_LOAD_SIG(4) " [%0], [%1, {%3, %4, %5, %6}], [%2];"
               :: "r"(dst), "l"(tmap), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.tensor needs sm_90");
#endif
}
__device__ __forceinline__ void cp_async_bulk_tensor_5d_load(uint32_t dst, const void* tmap, uint32_t bar,
                                                             int32_t c0, int32_t c1, int32_t c2, int32_t c3,
                                                             int32_t c4) {
#if FLASHPTX_HAS_SM90
  asm volatile(FLASHPTX_TMA_LOAD_SIG(5) " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];"
               :: "r"(dst), "l"(tmap), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.tensor needs sm_90");
#endif
}

// Multicast form: the box lands at the same offset `dst` in every CTA of the cluster named in
// `cta_mask`, and completes on the mbarrier at the same offset in each of them.
__device__ __forceinline__ void cp_async_bulk_tensor_2d_load_multicast(uint32_t dst, const void* tmap,
                                                                       uint32_t bar, uint16_t cta_mask,
                                                                       int32_t c0, int32_t c1) {
#if FLASHPTX_HAS_SM90
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;"
               :: "r"(dst), "l"(tmap), "r"(bar), "h"(cta_mask), "r"(c0), "r"(c1) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.tensor multicast needs sm_90");
#endif
}
#undef FLASHPTX_TMA_LOAD_SIG

// ---- tensor stores and reductions: complete in bulk groups ----------------------------------
// cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [tmap, {c...}], [src];
// Certifies nothing at issue. Before it, the shared-memory source written by generic stores must be
// ordered into the async proxy (fence_proxy_async_shared_cta in each writer, then a barrier).
// After cp_async_bulk_wait_group_read<0>() the source may be overwritten; after
// cp_async_bulk_wait_group<0>() the global writes are complete (visible to later grids).
__device__ __forceinline__ void cp_async_bulk_tensor_2d_store(const void* tmap, uint32_t src, int32_t c0,
                                                              int32_t c1) {
#if FLASHPTX_HAS_SM90
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];"
               :: "l"(tmap), "r"(src), "r"(c0), "r"(c1) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.tensor store needs sm_90");
#endif
}
__device__ __forceinline__ void cp_async_bulk_tensor_3d_store(const void* tmap, uint32_t src, int32_t c0,
                                                              int32_t c1, int32_t c2) {
#if FLASHPTX_HAS_SM90
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];"
               :: "l"(tmap), "r"(src), "r"(c0), "r"(c1), "r"(c2) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.tensor store needs sm_90");
#endif
}
__device__ __forceinline__ void cp_async_bulk_tensor_4d_store(const void* tmap, uint32_t src, int32_t c0,
                                                              int32_t c1, int32_t c2, int32_t c3) {
#if FLASHPTX_HAS_SM90
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
               :: "l"(tmap), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.tensor store needs sm_90");
#endif
}
// cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group: global += box (element-wise,
// atomically per element with respect to other reductions; no ordering among elements).
__device__ __forceinline__ void cp_reduce_async_bulk_tensor_2d_add(const void* tmap, uint32_t src, int32_t c0,
                                                                   int32_t c1) {
#if FLASHPTX_HAS_SM90
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];"
               :: "l"(tmap), "r"(src), "r"(c0), "r"(c1) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.reduce.async.bulk.tensor needs sm_90");
#endif
}

// cp.async.bulk.prefetch.tensor.Nd.L2.global.tile [tmap, {c...}]: a hint; certifies nothing.
__device__ __forceinline__ void cp_async_bulk_prefetch_tensor_2d(const void* tmap, int32_t c0, int32_t c1) {
#if FLASHPTX_HAS_SM90
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];"
               :: "l"(tmap), "r"(c0), "r"(c1) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.prefetch.tensor needs sm_90");
#endif
}
__device__ __forceinline__ void cp_async_bulk_prefetch_tensor_4d(const void* tmap, int32_t c0, int32_t c1,
                                                                 int32_t c2, int32_t c3) {
#if FLASHPTX_HAS_SM90
  asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];"
               :: "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.prefetch.tensor needs sm_90");
#endif
}

// cp.async.bulk.commit_group: closes the bulk group of this thread's prior stores/reductions.
__device__ __forceinline__ void cp_async_bulk_commit_group() {
#if FLASHPTX_HAS_SM90
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.commit_group needs sm_90");
#endif
}
// cp.async.bulk.wait_group N: at most N of this thread's bulk groups still pending (all effects,
// including the global writes, complete for the others).
template <int N>
__device__ __forceinline__ void cp_async_bulk_wait_group() {
  static_assert(N >= 0 && N <= 63, "wait_group depth");
#if FLASHPTX_HAS_SM90
  asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.wait_group needs sm_90");
#endif
}
// cp.async.bulk.wait_group.read N: the shared-memory sources of all but N groups have been read
// (may be overwritten); the global writes may still be in flight.
template <int N>
__device__ __forceinline__ void cp_async_bulk_wait_group_read() {
  static_assert(N >= 0 && N <= 63, "wait_group depth");
#if FLASHPTX_HAS_SM90
  asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk.wait_group.read needs sm_90");
#endif
}

// ---- non-tensor bulk copies ------------------------------------------------------------------
// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [bar];
// `bytes` a multiple of 16, both addresses 16-byte aligned. Completes on `bar` like a tensor load.
__device__ __forceinline__ void cp_async_bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
#if FLASHPTX_HAS_SM90
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk needs sm_90");
#endif
}
// cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [bar];
// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from this CTA's shared memory
// (`src`, shared::cta) to another CTA's of the cluster (`dst`, shared::cluster: mapa), through the
// async proxy; completes them as transaction bytes on the barrier `bar` of the destination CTA
// (shared::cluster, same CTA as dst). The source read is by the async proxy: generic stores to it
// need fence.proxy.async.shared::cta before. Certifies nothing about when; the destination's waiter
// on `bar` sees the bytes once its phase completes.
__device__ __forceinline__ void cp_async_bulk_shared_cluster(uint32_t dst, uint32_t src, uint32_t bytes, uint32_t bar) {
#if FLASHPTX_HAS_SM90
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(dst), "r"(src), "r"(bytes), "r"(bar) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk needs sm_90");
#endif
}
// cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size;
__device__ __forceinline__ void cp_async_bulk_store(void* dst, uint32_t src, uint32_t bytes) {
#if FLASHPTX_HAS_SM90
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
               :: "l"(dst), "r"(src), "r"(bytes) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.async.bulk needs sm_90");
#endif
}
// cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [dst], [src], size;
// global[i] += shared[i] for `bytes`/4 floats; each element's add is atomic, the set is not ordered.
__device__ __forceinline__ void cp_reduce_async_bulk_add_f32(float* dst, uint32_t src, uint32_t bytes) {
#if FLASHPTX_HAS_SM90
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;"
               :: "l"(dst), "r"(src), "r"(bytes) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("cp.reduce.async.bulk needs sm_90");
#endif
}

}  // namespace flashptx::ptx
