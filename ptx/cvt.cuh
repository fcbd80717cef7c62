// Conversions and special functions used by the softmax (PTX ISA: "Data Movement and Conversion
// Instructions: cvt" and "Floating Point Instructions: ex2").
#pragma once
#include <cstdint>

#include "ptx/arch.cuh"

namespace flashptx::ptx {

// cvt.rn.bf16x2.f32 d, hi, lo;   d = {bf16(hi) in bits 31..16, bf16(lo) in bits 15..0}, round to
// nearest even. One instruction per pair: the packed register is a wgmma A-fragment register.
// The packed f32 -> bf16x2 / f16x2 conversions exist from sm_80 (PTX ISA 7.0).
__device__ __forceinline__ uint32_t cvt_rn_bf16x2_f32(float lo, float hi) {
  uint32_t d = 0;
#if FLASHPTX_HAS_SM80
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
#else
  FLASHPTX_ARCH_UNSUPPORTED("cvt.rn.bf16x2.f32 needs sm_80");
#endif
  return d;
}

// cvt.rn.f16x2.f32 d, hi, lo;   as above for fp16 (overflow to +-inf, not saturated).
__device__ __forceinline__ uint32_t cvt_rn_f16x2_f32(float lo, float hi) {
  uint32_t d = 0;
#if FLASHPTX_HAS_SM80
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
#else
  FLASHPTX_ARCH_UNSUPPORTED("cvt.rn.f16x2.f32 needs sm_80");
#endif
  return d;
}

// cvt.rn.satfinite.e4m3x2.f32 d, hi, lo;   d = {e4m3(hi) in bits 15..8, e4m3(lo) in bits 7..0}, round
// to nearest even, finite values beyond +-448 (and +-inf) saturated to +-448, NaN to the NaN code 0x7F
// (PTX ISA: .e4m3x2 destinations need .satfinite; sm_89+, PTX ISA 7.8). One instruction per pair
// (SASS F2FP.SATFINITE.E4M3.F32.PACK_AB).
__device__ __forceinline__ uint16_t cvt_rn_satfinite_e4m3x2_f32(float lo, float hi) {
  uint16_t d = 0;
#if FLASHPTX_HAS_SM90
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
#else
  FLASHPTX_ARCH_UNSUPPORTED("cvt.rn.satfinite.e4m3x2.f32 needs sm_89 (sm_90 here)");
#endif
  return d;
}

// cvt.f32.f16 d, a;   an fp16 value (a 16-bit register) widened to f32, exactly (PTX ISA "cvt":
// every f16 value is an f32 value). bf16 needs no instruction: its bits are an f32's upper half.
__device__ __forceinline__ float cvt_f32_f16(uint16_t a) {
  float d = 0.f;
#if FLASHPTX_HAS_SM80
  asm("cvt.f32.f16 %0, %1;" : "=f"(d) : "h"(a));
#else
  FLASHPTX_ARCH_UNSUPPORTED("cvt.f32.f16 (as used here) needs sm_80");
#endif
  return d;
}

// mov.b32 d, {lo, hi};   packs two 16-bit registers into one 32-bit register (lo in bits 15..0), the
// PTX ISA "mov" vector form. After cvt.*x2 into 16-bit registers it lets ptxas write the second pair
// straight into the upper half (SASS F2FP ... MERGE_C), where a zero-extension and a prmt of two
// 32-bit values cost two LOP3 and a PRMT per word.
__device__ __forceinline__ uint32_t mov_b32_b16x2(uint16_t lo, uint16_t hi) {
  uint32_t d = 0;
  asm("mov.b32 %0, {%1, %2};" : "=r"(d) : "h"(lo), "h"(hi));
  return d;
}

// rcp.approx.ftz.f32 d, a;   1/a on the MUFU unit, subnormals flushed; at most 1 ulp from the exact
// quotient over the normal range (PTX ISA "rcp.approx.ftz.f64" / "rcp"). Unlike 1.f / a (IEEE
// round-to-nearest), it needs no slow-path subroutine call.
__device__ __forceinline__ float rcp_approx_ftz_f32(float a) {
  float d = 0.0f;
#if FLASHPTX_HAS_ANY_SM
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(d) : "f"(a));
#else
  FLASHPTX_ARCH_UNSUPPORTED("rcp.approx.ftz.f32 needs a device target");
#endif
  return d;
}

// ex2.approx.ftz.f32 d, a;   2^a on the MUFU (special-function) unit; subnormal results flush to
// zero; ex2(-inf) = +0. Maximum relative error 2^-22 over the normal range (PTX ISA).
__device__ __forceinline__ float ex2_approx_ftz_f32(float a) {
  float d = 0.0f;
#if FLASHPTX_HAS_ANY_SM
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(d) : "f"(a));
#else
  FLASHPTX_ARCH_UNSUPPORTED("ex2.approx.ftz.f32 needs a device target");
#endif
  return d;
}

}  // namespace flashptx::ptx
