// Degree-3 software exp2 (docs/PROTOCOLS.md, "The FA4 roles"; the FA4 paper, Zadouri et al.,
// arXiv 2603.05451, section 3.1.3).
//
// FA4 moves a share of the softmax exponentials off the MUFU.EX2 unit onto FP32 FMA/ALU issue. For
// one base-2 argument x the pinned helper (utils.ex2_emulation) does:
//   1. clamp x from below at -127;
//   2. add C = 2^23 + 2^22 = 12,582,912 rounding toward minus infinity: in [2^23, 2^24) the FP32
//      unit is 1, so the sum is C + floor(x) and floor(x) sits in the low mantissa bits;
//   3. subtract C with round-to-nearest (exact), recovering n = floor(x);
//   4. f = x - n in [0, 1) (exact);
//   5. p(f) = p0 + f (p1 + f (p2 + f p3)) by three dependent FP32 FMAs (Horner);
//   6. shift the bits of (C + n) left by 23 and add them to the bits of p(f): the exponent field
//      of p(f) (p in [1, 2)) grows by n, giving 2^n * p(f).
// The positive side is assumed <= 127 (the softmax reference and the dtype envelope keep it far
// below). x = -127 gives exactly +0.0 bits: p(0) = 1.0 = 0x3F800000 minus 127 << 23.
//
// Every operation is spelled out so the host and the device produce the same bits: on the device
// the round-to-nearest intrinsics forbid nvcc's FMA contraction, and __fadd_rd is the directed add;
// on the host std::fmaf is correctly rounded (glibc) and the directed add is reconstructed exactly
// from a round-to-nearest add and its TwoSum error term (no fesetround, no global state).
#pragma once
#include <cstdint>
#include <cstring>
#include <cmath>

#include "src/protocol/hd.h"  // FLASHPTX_HD

namespace flashptx::exp2emu {

// The pinned helper's degree-3 coefficients, lowest power first. The decimal strings are the FP32
// values printed to double precision, so the float literals are exact.
constexpr float kP0 = 1.0f;
constexpr float kP1 = 0.6951461434364319f;
constexpr float kP2 = 0.22756439447402954f;
constexpr float kP3 = 0.07711908966302872f;
constexpr float kRoundConst = 12582912.0f;  // 2^23 + 2^22
constexpr float kClampLow = -127.0f;

FLASHPTX_HD uint32_t f2u(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t u; std::memcpy(&u, &x, 4); return u;
#endif
}
FLASHPTX_HD float u2f(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float x; std::memcpy(&x, &u, 4); return x;
#endif
}

// Round-to-nearest FP32 primitives that nvcc may not contract or reorder.
FLASHPTX_HD float fadd_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
FLASHPTX_HD float fsub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
FLASHPTX_HD float fmul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
FLASHPTX_HD float ffma_rn(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return std::fmaf(a, b, c);
#endif
}
// fmaxf semantics (a NaN operand yields the other one), as cute.arch.fmax / PTX max.f32.
FLASHPTX_HD float fmax_f32(float a, float b) {
#ifdef __CUDA_ARCH__
  return fmaxf(a, b);
#else
  return std::fmax(a, b);
#endif
}

// a + b rounded toward minus infinity (PTX add.rm.f32).
FLASHPTX_HD float fadd_rd(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rd(a, b);
#else
  // TwoSum (Knuth): s = RN(a + b) and err = (a + b) - s exactly, for finite operands. If the exact
  // sum lies below s, RD(a + b) is the float just below s; otherwise it is s.
  float s = a + b;
  float bb = s - a;
  float err = (a - (s - bb)) + (b - bb);
  if (err < 0.0f) return std::nextafterf(s, -INFINITY);
  return s;
#endif
}

// Bits of the degree-3 result and its intermediate stages, for the ledger and the tests.
struct Exp2Trace {
  float x_clamped;      // step 1
  float x_rounded;      // step 2: C + floor(x)
  float n;              // step 3: floor(x) as a float
  float f;              // step 4
  float poly;           // step 5: p(f) in [1, 2)
  float result;         // step 6
};

FLASHPTX_HD Exp2Trace exp2_degree3_trace(float x) {
  Exp2Trace t;
  t.x_clamped = fmax_f32(x, kClampLow);
  t.x_rounded = fadd_rd(t.x_clamped, kRoundConst);
  t.n = fsub_rn(t.x_rounded, kRoundConst);
  t.f = fsub_rn(t.x_clamped, t.n);
  float p = ffma_rn(kP3, t.f, kP2);
  p = ffma_rn(p, t.f, kP1);
  p = ffma_rn(p, t.f, kP0);
  t.poly = p;
  // shl.b32 then add.s32: the exponent/high mantissa bits of x_rounded fall off the top; the low
  // bits carry n (two's complement), which lands in the exponent field.
  uint32_t e = f2u(t.x_rounded) << 23;
  t.result = u2f(e + f2u(p));
  return t;
}

// 2^x by the pinned degree-3 emulation (x <= 127).
FLASHPTX_HD float exp2_degree3(float x) { return exp2_degree3_trace(x).result; }

// FP32 -> BF16 bits, round to nearest even (finite inputs; NaN kept quiet).
FLASHPTX_HD uint16_t bf16_bits_rne(float x) {
  uint32_t u = f2u(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return static_cast<uint16_t>(u >> 16);
}
FLASHPTX_HD float bf16_to_float(uint16_t b) { return u2f(static_cast<uint32_t>(b) << 16); }

// Hardware/software dispatch inside one score row (docs/PROTOCOLS.md, "The FA4 roles";
// SoftmaxSm100.apply_exp2_convert in flash-attention fa4-v4.0.0.beta23). A row is cut into F
// fragments of 32 elements; the loop visits element pairs (k, k+1), k even, inside fragment j. The
// pair is emulated only when
//   k mod freq >= freq - res,   j >= start,   j < F - 1.
// The last fragment always uses MUFU.EX2; freq = 0 means all hardware (the SM103 tuning).
FLASHPTX_HD bool pair_uses_emulation(int k, int j, int F, int freq, int res, int start) {
  if (freq <= 0) return false;
  return (k % freq) >= freq - res && j >= start && j < F - 1;
}

}  // namespace flashptx::exp2emu
