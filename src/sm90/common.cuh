// Device helpers the kernel families share: the FA3 forward (fa3_fwd.cuh), its FP8 form
// (fa3_fwd_fp8.cuh), the FA3 backward (fa3_bwd.cuh, fa3_bwd_aux.cuh) and the FA4 backward
// (src/sm100/fa4_bwd.cuh). One definition each, all __forceinline__: a kernel compiles to the
// instruction stream its own copy did (the goldens check it).
//
// The barrier initialisation (thread 0: mbarrier.init of every barrier, fence.mbarrier_init; then a
// CTA barrier) is init_barriers below where the kernel compiles to the same PTX with it: the FA3
// backward. The FA3 forward and the FP8 forward keep it written out in the kernel body: there,
// wrapping the kernel's list in a helper (a lambda or a member function) renumbers the PTX
// registers of the code after it, and ptxas then schedules that code differently (SASS-pinned: the
// goldens of those kernels; docs/DECISIONS.md, "Barrier set-up: one helper, where the SASS allows").
//
// Nothing here is specific to an architecture: the header includes no wgmma or tcgen05 wrapper,
// so that sm_100a code includes it too. Defined in namespace flashptx, the parent of every kernel
// namespace, so that the kernels call them unqualified.
#pragma once
#include <cstdint>

#include "ptx/arch.cuh"
#include "ptx/cvt.cuh"
#include "ptx/mbarrier.cuh"

namespace flashptx {

// Two floats rounded once (round to nearest even) to the 16-bit dtype and packed as the 32-bit word
// they occupy in memory and in an MMA A fragment: `lo` in bits 0-15, `hi` in bits 16-31.
template <bool IsBf16>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (IsBf16) return ptx::cvt_rn_bf16x2_f32(lo, hi);
  else return ptx::cvt_rn_f16x2_f32(lo, hi);
}

// The max and the sum over the four lanes of a quad (lanes 4r..4r+3): the threads that hold one
// accumulator row's columns in the wgmma D-fragment layout. Every lane of the warp must call it
// (full-mask shuffles); each lane of a quad gets the quad's result.
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// The shared::cta address of the dynamic shared memory rounded up to 1024 B, where a kernel's
// carve-up starts: a 128B-swizzled TMA or MMA tile must start on the 1024-byte repeat of its
// swizzle pattern. The kernel's layout reserves the slack (its shared-memory size counts it).
__device__ __forceinline__ uint32_t smem_base_1024() {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  return (ptx::smem_u32(smem_raw) + 1023u) & ~1023u;
}

// A kernel's barrier set-up: thread 0 runs init() (its mbarrier.init list) and then
// fence.mbarrier_init, which makes the initialisations visible to the other threads' and the async
// proxy's (TMA complete_tx) operations on the barriers; the CTA barrier after it certifies that no
// role waits on or arrives at a barrier before it is initialised (PTX ISA "mbarrier.init",
// "fence.mbarrier_init"). Every thread of the CTA must call it.
template <class Init>
__device__ __forceinline__ void init_barriers(const Init& init) {
  if (threadIdx.x == 0) {
    init();
    ptx::fence_mbarrier_init();
  }
  __syncthreads();
}

}  // namespace flashptx
