// setmaxnreg (PTX ISA: "Miscellaneous Instructions: setmaxnreg"), sm_90a and sm_100a.
//
// Moves registers between the warpgroups of a CTA: .dec releases registers to the CTA's pool,
// .inc blocks until the pool can grant the new per-thread count. Every warp of a warpgroup must
// execute the same setmaxnreg (.sync.aligned). It takes effect only when the kernel is compiled with
// a register cap at entry (__launch_bounds__(threads, 1) or -maxrregcount); otherwise ptxas warns
// (C7508) and drops it. In SASS: USETMAXREG.DEALLOC.CTAPOOL n and USETMAXREG.TRY_ALLOC.CTAPOOL
// in a retry loop.
#pragma once
#include "ptx/arch.cuh"

namespace flashptx::ptx {

// setmaxnreg.dec.sync.aligned.u32 N;
// Certifies: the calling warp's registers beyond N per thread are returned to the pool; the warp's
// live values must fit in N (ptxas enforces that for the code after it).
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes 24..256 in steps of 8");
#if FLASHPTX_HAS_SETMAXNREG
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(N));
#else
  FLASHPTX_ARCH_UNSUPPORTED("setmaxnreg needs sm_90a or sm_100a (not plain sm_90)");
#endif
}

// setmaxnreg.inc.sync.aligned.u32 N;
// Certifies: on return the warp owns N registers per thread. Does not certify that the pool had
// them immediately: it waits until other warpgroups' .dec have returned enough.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes 24..256 in steps of 8");
#if FLASHPTX_HAS_SETMAXNREG
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(N));
#else
  FLASHPTX_ARCH_UNSUPPORTED("setmaxnreg needs sm_90a or sm_100a (not plain sm_90)");
#endif
}

}  // namespace flashptx::ptx
