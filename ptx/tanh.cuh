// tanh on the special-function unit (PTX ISA "Floating Point Instructions: tanh").
#pragma once

#include "ptx/arch.cuh"

namespace flashptx::ptx {

// tanh.approx.f32 d, a;   tanh(a) on the MUFU unit (SASS MUFU.TANH), one instruction. Maximum
// relative error 2^-11 over the whole range (PTX ISA "tanh": "Max relative error 2^-11"); tanh(+-0)
// = +-0, tanh(+-inf) = +-1, NaN in, NaN out. There is no .ftz form. Introduced in PTX ISA 7.0 for
// sm_75; every target this project compiles (sm_90a, sm_100a) has it.
__device__ __forceinline__ float tanh_approx_f32(float a) {
  float d = 0.0f;
#if FLASHPTX_HAS_SM80
  asm("tanh.approx.f32 %0, %1;" : "=f"(d) : "f"(a));
#else
  FLASHPTX_ARCH_UNSUPPORTED("tanh.approx.f32 needs sm_75 (this project's device targets are sm_80 and up)");
#endif
  return d;
}

}  // namespace flashptx::ptx
