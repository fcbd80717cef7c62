// Host-side conversions between float/double and the 16-bit storage formats the kernels use.
//
// Plain inline host code (no CUDA headers). Every narrowing conversion rounds to nearest, ties to
// even, as the hardware's cvt.rn does:
//   bf16: 1 sign, 8 exponent, 7 mantissa bits (float's exponent range, so only NaN needs care);
//   fp16: 1 sign, 5 exponent, 10 mantissa bits (max 65504, subnormals down to 2^-24).
// Double inputs are first narrowed to float with round-to-odd, which makes the two-step
// double -> float -> 16-bit rounding equal to a single correct rounding of the double.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace flashptx {

inline uint32_t float_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// ---- bf16 ---------------------------------------------------------------------------------------
inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_bf16(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  // Add just under half an ulp of bf16, plus one if the kept part is odd: ties go to even.
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);  // may carry into the exponent: overflow gives inf, as it should
}

// ---- fp16 ---------------------------------------------------------------------------------------
inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) ? 1u : 0u;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float mag;
  if (exp == 0) {
    mag = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal: mant * 2^-24
  } else if (exp == 31) {
    mag = mant ? bits_float(0x7fc00000u) : bits_float(0x7f800000u);
  } else {
    mag = bits_float(((exp + 112u) << 23) | (mant << 13));
  }
  return sign ? -mag : mag;
}

inline uint16_t float_to_fp16(float f) {
  uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (and inf): rounds to inf
  if (x < 0x38800000u) {                        // below 2^-14: a subnormal half (or zero)
    if (x <= 0x33000000u) return sign;          // <= 2^-25: rounds to zero (2^-25 is a tie -> even 0)
    const uint32_t mant = (x & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(x >> 23);  // value / 2^-24 = mant >> shift
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return sign | static_cast<uint16_t>(q);
  }
  uint32_t h = (x >> 13) - (112u << 10);  // rebias the exponent 127 -> 15
  const uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent correctly
  return sign | static_cast<uint16_t>(h);
}

// ---- double -> float with round-to-odd (see the header comment) ---------------------------------
inline float double_to_float_odd(double d) {
  float f = static_cast<float>(d);
  if (!std::isfinite(f) || static_cast<double>(f) == d) return f;
  uint32_t b = float_bits(f);
  if ((b & 1u) == 0) {  // inexact and even: step to the odd neighbour on d's side
    const bool too_big = std::fabs(static_cast<double>(f)) > std::fabs(d);
    b = too_big ? b - 1u : b + 1u;  // magnitude bits move; the sign bit stays
  }
  return bits_float(b);
}

inline uint16_t double_to_bf16(double d) { return float_to_bf16(double_to_float_odd(d)); }
inline uint16_t double_to_fp16(double d) { return float_to_fp16(double_to_float_odd(d)); }

// Rounds a value to the nearest representable one of a dtype, returned as double.
enum class Round { kNone = 0, kBF16 = 1, kFP16 = 2, kFP32 = 3 };
inline double round_to(Round r, double x) {
  switch (r) {
    case Round::kBF16: return bf16_to_float(double_to_bf16(x));
    case Round::kFP16: return fp16_to_float(double_to_fp16(x));
    case Round::kFP32: return static_cast<double>(static_cast<float>(x));
    default: return x;
  }
}

}  // namespace flashptx
