// The E4M3FN codebook (docs/PROTOCOLS.md, "FP8 layouts"; PTX ISA "Alternate Floating-Point
// Data Formats" for the e4m3 format).
//
// One sign bit, four exponent bits (bias 7), three fraction bits; finite-only ("FN"): no infinity,
// S.1111.111 is NaN. Largest finite magnitude 1.75 * 2^8 = 448 (0x7E); smallest positive subnormal
// 2^-9 = 0.001953125 (0x01); smallest normal 2^-6 (0x08).
//
// encode() is FP32 -> E4M3FN with round to nearest even and saturation to +-448 (the behaviour of
// PTX cvt.rn.satfinite.e4m3x2.f32): out-of-range finite values and infinities saturate, NaN stays
// NaN. It is integer bit work only, so it is identical on the host and the device.
#pragma once
#include <cstdint>

#include "src/protocol/exp2_emulation.h"  // f2u / u2f, FLASHPTX_HD

namespace flashptx::e4m3 {

constexpr uint8_t kMaxCode = 0x7E;           // 448
constexpr uint8_t kNaNCode = 0x7F;
constexpr float kMax = 448.0f;
constexpr float kMinSubnormal = 0.001953125f;  // 2^-9
constexpr float kMinNormal = 0.015625f;        // 2^-6

FLASHPTX_HD bool is_nan(uint8_t c) { return (c & 0x7F) == 0x7F; }

FLASHPTX_HD float decode(uint8_t c) {
  using flashptx::exp2emu::u2f;
  const uint32_t sign = static_cast<uint32_t>(c >> 7) << 31;
  const uint32_t e = (c >> 3) & 0xF, m = c & 0x7;
  if (e == 0xF && m == 0x7) return u2f(sign | 0x7FC00000u);
  if (e == 0) {  // subnormal: m * 2^-9, exact in FP32
    const float mag = static_cast<float>(m) * kMinSubnormal;
    return sign ? -mag : mag;
  }
  return u2f(sign | ((e - 7 + 127) << 23) | (m << 20));
}

// Round to nearest even on the dropped bits of `q` (the kept value), `rem` of `half * 2` units.
FLASHPTX_HD uint32_t rne(uint32_t q, uint32_t rem, uint32_t half) {
  if (rem > half || (rem == half && (q & 1u))) return q + 1u;
  return q;
}

FLASHPTX_HD uint8_t encode(float x) {
  using flashptx::exp2emu::f2u;
  const uint32_t u = f2u(x);
  const uint8_t sign = static_cast<uint8_t>((u >> 31) << 7);
  const uint32_t mag = u & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return sign | kNaNCode;
  if (mag >= 0x43E00000u) return sign | kMaxCode;  // |x| >= 448, infinities included: saturate
  const int32_t ebits = static_cast<int32_t>(mag >> 23);
  if (ebits == 0) return sign;                      // FP32 zero or subnormal: far below 2^-10
  const int32_t e = ebits - 127;                    // |x| = 1.mant * 2^e
  const uint32_t mant = mag & 0x7FFFFFu;
  uint32_t q;
  if (e >= -6) {  // normal range of E4M3: keep 3 fraction bits; a carry moves into the exponent
    q = rne((static_cast<uint32_t>(e + 7) << 3) | (mant >> 20), mant & 0xFFFFFu, 0x80000u);
  } else {        // subnormal range: count units of 2^-9
    const uint32_t sig = mant | 0x800000u;         // |x| = sig * 2^(e-23)
    const int32_t shift = 14 - e;                  // units of 2^-9 = sig >> shift; >= 21 here
    if (shift >= 32) return sign;
    q = rne(sig >> shift, sig & ((1u << shift) - 1u), 1u << (shift - 1));
  }
  return sign | static_cast<uint8_t>(q);
}

FLASHPTX_HD float quantize(float x) { return decode(encode(x)); }

}  // namespace flashptx::e4m3
