// log2 on the special-function unit (PTX ISA "Floating Point Instructions: lg2").
#pragma once

#include "ptx/arch.cuh"

namespace flashptx::ptx {

// lg2.approx.ftz.f32 d, a;   log2(a) on the MUFU unit (SASS MUFU.LG2), one instruction; a subnormal
// input flushes to zero. Maximum absolute error 2^-22 for a in (0.5, 2), relative error 2^-22
// elsewhere (PTX ISA "lg2"); lg2(+-0) = -inf, lg2(+inf) = +inf, lg2 of a negative number or NaN is
// NaN.
__device__ __forceinline__ float lg2_approx_ftz_f32(float a) {
  float d = 0.0f;
#if FLASHPTX_HAS_ANY_SM
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(d) : "f"(a));
#else
  FLASHPTX_ARCH_UNSUPPORTED("lg2.approx.ftz.f32 needs a device target");
#endif
  return d;
}

}  // namespace flashptx::ptx
