// Conversions and special functions used by the softmax (PTX ISA: "Data Movement and Conversion
// Instructions: cvt" and "Floating Point Instructions: ex2").
#pragma once
#include <cstdint>

#include "ptx/arch.cuh"

namespace flashptx::ptx {

// cvt.rn.bf16x2.f32 d, hi, lo;   d = {bf16(hi) in bits 31..16, bf16(lo) in bits 15..0}, round to
// nearest even. One instruction per pair: the packed register is a wgmma A-fragment register.
__device__ __forceinline__ uint32_t cvt_rn_bf16x2_f32(float lo, float hi) {
  uint32_t d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}

// cvt.rn.f16x2.f32 d, hi, lo;   as above for fp16 (overflow to +-inf, not saturated).
__device__ __forceinline__ uint32_t cvt_rn_f16x2_f32(float lo, float hi) {
  uint32_t d;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}

// ex2.approx.ftz.f32 d, a;   2^a on the MUFU (special-function) unit; subnormal results flush to
// zero; ex2(-inf) = +0. Maximum relative error 2^-22 over the normal range (PTX ISA).
__device__ __forceinline__ float ex2_approx_ftz_f32(float a) {
  float d;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(d) : "f"(a));
  return d;
}

}  // namespace flashptx::ptx
