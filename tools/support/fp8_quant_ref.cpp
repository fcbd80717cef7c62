// The host reference of flashptx_quantize_fp8 (tools/support/fp8_quant_ref.h).
#include "tools/support/fp8_quant_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tools/support/dtype.h"

namespace flashptx::ref {

double e4m3_decode(uint8_t code) {
  const int sign = code >> 7, exp = (code >> 3) & 0xF, man = code & 7;
  if (exp == 0xF && man == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = exp == 0 ? std::ldexp(man, -9) : std::ldexp(8 + man, exp - 10);
  return sign ? -mag : mag;
}

uint8_t e4m3_encode(double x) {
  if (std::isnan(x)) return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  double a = std::fabs(x);
  if (a >= 448.0) return sign | 0x7E;  // saturate (inf included)
  // The spacing of the binade of a: 2^(e - 3) for normals (e = floor(log2 a) >= -6), 2^-9 below.
  int e = a > 0 ? std::ilogb(a) : -7;
  if (e < -6) e = -6;
  const double ulp = std::ldexp(1.0, e - 3);
  const double m = a / ulp;  // exact: a power-of-two scaling
  double r = std::floor(m);
  const double frac = m - r;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  const double v = r * ulp;  // the rounded magnitude (may carry into the next binade: still exact)
  if (v > 448.0) return sign | 0x7E;  // cannot happen below 448 (464 rounds from >= 456), kept safe
  if (v == 0) return sign;
  int ev = std::ilogb(v);
  if (ev < -6) return sign | static_cast<uint8_t>(std::lround(v / std::ldexp(1.0, -9)));  // subnormal
  const int man = static_cast<int>(std::lround(v / std::ldexp(1.0, ev - 3))) - 8;
  return sign | static_cast<uint8_t>(((ev + 7) << 3) | man);
}

void hadamard_fp64(double* x, int n) {
  for (int s = 1; s < n; s <<= 1)
    for (int i = 0; i < n; ++i)
      if (!(i & s)) {
        const double a = x[i], c = x[i + s];
        x[i] = a + c;
        x[i + s] = a - c;
      }
  const double k = 1.0 / std::sqrt(static_cast<double>(n));
  for (int i = 0; i < n; ++i) x[i] *= k;
}

void hadamard_fp32(float* x, int n) {
  for (int s = 1; s < n; s <<= 1)
    for (int i = 0; i < n; ++i)
      if (!(i & s)) {
        const float a = x[i], c = x[i + s];
        x[i] = a + c;
        x[i + s] = a - c;
      }
  const float k = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
  for (int i = 0; i < n; ++i) x[i] *= k;
}

void quantize_fp8(const QuantizeFp8Host& q) {
  const int64_t d = q.head_dim;
  const int64_t nblk = (q.seqlen + FLASHPTX_FP8_SCALE_BLOCK_ROWS - 1) / FLASHPTX_FP8_SCALE_BLOCK_ROWS;
  // The rotated rows, fp32, [batch, heads, seqlen, d].
  std::vector<float> y(static_cast<size_t>(q.batch * q.heads * q.seqlen * d));
  auto row = [&](int64_t b, int64_t h, int64_t s) { return &y[static_cast<size_t>(((b * q.heads + h) * q.seqlen + s) * d)]; };
  for (int64_t b = 0; b < q.batch; ++b)
    for (int64_t h = 0; h < q.heads; ++h)
      for (int64_t s = 0; s < q.seqlen; ++s) {
        float* r = row(b, h, s);
        const uint16_t* src = q.in + b * q.in_sb + s * q.in_ss + h * q.in_sh;
        for (int64_t i = 0; i < d; ++i) r[i] = q.bf16 ? bf16_to_float(src[i]) : fp16_to_float(src[i]);
        if (q.hadamard_block > 0)
          for (int64_t c = 0; c < d; c += q.hadamard_block) hadamard_fp32(r + c, q.hadamard_block);
      }
  auto group_amax = [&](int64_t b, int64_t h, int64_t s0, int64_t s1) {
    float m = 0.f;
    for (int64_t s = s0; s < s1; ++s) {
      const float* r = row(b, h, s);
      for (int64_t i = 0; i < d; ++i) m = std::max(m, std::fabs(r[i]));
    }
    return m;
  };
  auto quantize_group = [&](int64_t b, int64_t h, int64_t s0, int64_t s1, float descale) {
    // The scale is the fp32 reciprocal of the descale (correctly rounded, capped at FLT_MAX so that a
    // zero element of a group with a tiny amax stays 0 rather than 0 * inf), applied by one fp32
    // multiply per element: the kernel's arithmetic (an IEEE division per element cost it a fifth of
    // its bandwidth; docs/DECISIONS.md, "FP8 quantizer").
    const float scale = descale > 0.f ? std::min(1.0f / descale, std::numeric_limits<float>::max()) : 0.f;
    for (int64_t s = s0; s < s1; ++s) {
      const float* r = row(b, h, s);
      uint8_t* dst = q.out + b * q.out_sb + s * q.out_ss + h * q.out_sh;
      for (int64_t i = 0; i < d; ++i) {
        const float v = r[i] * scale;
        dst[i] = e4m3_encode(static_cast<double>(v));
      }
    }
  };
  const float kMax = 448.0f;
  switch (q.granularity) {
    case FLASHPTX_FP8_SCALE_PER_TENSOR: {
      float m = 0.f;
      for (int64_t b = 0; b < q.batch; ++b)
        for (int64_t h = 0; h < q.heads; ++h) m = std::max(m, group_amax(b, h, 0, q.seqlen));
      const float descale = m / kMax;
      q.descale[0] = descale;
      for (int64_t b = 0; b < q.batch; ++b)
        for (int64_t h = 0; h < q.heads; ++h) quantize_group(b, h, 0, q.seqlen, descale);
      break;
    }
    case FLASHPTX_FP8_SCALE_PER_HEAD:
      for (int64_t b = 0; b < q.batch; ++b)
        for (int64_t h = 0; h < q.heads; ++h) {
          const float descale = group_amax(b, h, 0, q.seqlen) / kMax;
          q.descale[b * q.heads + h] = descale;
          quantize_group(b, h, 0, q.seqlen, descale);
        }
      break;
    case FLASHPTX_FP8_SCALE_PER_BLOCK:
      for (int64_t b = 0; b < q.batch; ++b)
        for (int64_t h = 0; h < q.heads; ++h)
          for (int64_t k = 0; k < nblk; ++k) {
            const int64_t s0 = k * FLASHPTX_FP8_SCALE_BLOCK_ROWS;
            const int64_t s1 = std::min(q.seqlen, s0 + FLASHPTX_FP8_SCALE_BLOCK_ROWS);
            const float descale = group_amax(b, h, s0, s1) / kMax;
            q.descale[(b * q.heads + h) * nblk + k] = descale;
            quantize_group(b, h, s0, s1, descale);
          }
      break;
  }
}

}  // namespace flashptx::ref
