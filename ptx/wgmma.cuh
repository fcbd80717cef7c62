// wgmma: Hopper's warpgroup matrix multiply-accumulate (PTX ISA: "Asynchronous Warpgroup Level
// Matrix Multiply-Accumulate Instructions"), sm_90a only.
//
// A warpgroup (4 consecutive warps, the first one's index divisible by 4) issues
// wgmma.mma_async collectively; the MMA runs asynchronously and reads its shared-memory operands
// through the async proxy. Protocol per batch of MMAs:
//   wgmma_fence()                     orders prior register/shared writes before the MMAs read them
//   wgmma_m64k16_*(...) x k           the MMAs (ptx/wgmma_mma.cuh)
//   wgmma_commit_group()              closes a wgmma-group of all uncommitted MMAs of this warpgroup
//   wgmma_wait_group<N>()             waits until at most N groups are pending
// Until the wait retires a group, its accumulator registers must not be read or written, its
// A-fragment registers not modified, and its shared-memory operands not overwritten. In SASS:
// WARPGROUP.ARRIVE, HGMMA.64xNx16.F32.BF16 ..., WARPGROUP.DEPBAR.LE gsb0, N.
//
// The descriptor builders are plain constexpr C++ (FLASHPTX_HD): a host compiler that includes this
// header sees only them (the host tests check their bits, tests/host/test_wgmma_desc.cpp); the
// instruction wrappers are compiled by CUDA compilers only.
#pragma once
#include <cstdint>

#include "ptx/arch.cuh"
#if defined(__CUDACC__)
#include "ptx/wgmma_mma.cuh"
#endif

namespace flashptx::ptx {

// ---- shared-memory matrix descriptor (PTX ISA: "Matrix Descriptor Format" of wgmma) ------------
// 64-bit value:
//   bits  0-13  start address >> 4          (shared::cta byte address of the operand tile)
//   bits 16-29  leading-dimension byte offset >> 4 (LBO)
//   bits 32-45  stride-dimension byte offset >> 4  (SBO)
//   bits 49-51  base offset (0 when the swizzle pattern's 1024/512/256-byte repeat is aligned)
//   bits 62-63  layout / swizzle: 0 none (interleave), 1 128B, 2 64B, 3 32B
// With a swizzled K-major operand LBO is unused (the K extent of one MMA lies inside one swizzle
// row) and SBO is the byte distance between consecutive 8-row core-matrix groups (8 rows x the
// swizzle width: 1024 B for 128B swizzle). With an MN-major operand LBO is the byte distance between
// consecutive swizzle-width chunks along MN, and SBO the distance between 8-row groups along K.
enum class Swizzle : uint32_t { kNone = 0, k128B = 1, k64B = 2, k32B = 3 };

FLASHPTX_HD constexpr uint64_t make_smem_desc(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes,
                                               Swizzle swizzle) {
  return (static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4))                 // bits 0-13: start address
       | (static_cast<uint64_t>((lbo_bytes & 0x3FFFF) >> 4) << 16)           // bits 16-29: LBO
       | (static_cast<uint64_t>((sbo_bytes & 0x3FFFF) >> 4) << 32)           // bits 32-45: SBO
       | (static_cast<uint64_t>(0) << 49)                                    // bits 49-51: base offset
       | (static_cast<uint64_t>(static_cast<uint32_t>(swizzle)) << 62);      // bits 62-63: swizzle
}

// Advances a descriptor's start address by `bytes` (a multiple of 16). Used to step along K inside a
// swizzled tile: the hardware applies the swizzle to the final address, so +32 B is the next k16 of
// a 128B-swizzled bf16 K-major row.
FLASHPTX_HD constexpr uint64_t smem_desc_advance(uint64_t desc, uint32_t bytes) {
  return desc + static_cast<uint64_t>(bytes >> 4);
}

#if defined(__CUDACC__)
// ---- ordering ------------------------------------------------------------------------------------
// wgmma.fence.sync.aligned;
// Certifies: this warpgroup's prior writes to registers used as accumulators or A fragments, and to
// shared memory read by the following wgmma, are ordered before those wgmma read them. Required
// before the first wgmma of a batch and whenever those registers were touched in between.
__device__ __forceinline__ void wgmma_fence() {
#if FLASHPTX_HAS_SM90A
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("wgmma needs sm_90a");
#endif
}

// wgmma.commit_group.sync.aligned;
// Certifies: all prior uncommitted wgmma.mma_async of this warpgroup form one wgmma-group.
__device__ __forceinline__ void wgmma_commit_group() {
#if FLASHPTX_HAS_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("wgmma needs sm_90a");
#endif
}

// wgmma.wait_group.sync.aligned N;
// Certifies: at most N of this warpgroup's wgmma-groups are still pending; the older ones have
// completed: their accumulators are readable, their A registers and shared-memory operands reusable.
// Does not certify anything about the N most recent groups.
template <int N>
__device__ __forceinline__ void wgmma_wait_group() {
  static_assert(N >= 0 && N <= 7, "wgmma.wait_group depth is 0..7");
#if FLASHPTX_HAS_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("wgmma needs sm_90a");
#endif
}

// A compiler-only fence on accumulator registers: keeps the compiler from moving reads or writes of
// `r` across the wgmma issue/wait points (the asm above does not name the registers a pending MMA
// still owns). Emits no instruction.
template <int N>
__device__ __forceinline__ void wgmma_fence_operand(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i]) :: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_fence_operand(uint32_t (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i]) :: "memory");
}
#endif  // defined(__CUDACC__): the instruction wrappers

}  // namespace flashptx::ptx
