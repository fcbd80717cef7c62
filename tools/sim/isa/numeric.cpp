// ptxsim ISA semantics: number formats and floating-point instruction semantics (see numeric.h).
//
// Method: every operation is evaluated exactly or "rounded to odd" in binary64 (53 bits, at least
// two more than twice any target's precision), then rounded once to the target format with the
// requested mode. Rounding to odd first and to the target second gives the correctly rounded
// result for every mode, so no host rounding-mode state is touched.
#include "tools/sim/isa/numeric.h"

#include <cfenv>
#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>

namespace ptxsim::isa {

float f32_from_bits(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
uint32_t f32_bits(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }
double f64_from_bits(uint64_t b) { double d; std::memcpy(&d, &b, 8); return d; }
uint64_t f64_bits(double d) { uint64_t b; std::memcpy(&b, &d, 8); return b; }

namespace {

// A binary floating-point format: fraction bits, minimum normal exponent, maximum exponent,
// exponent field width, whether the top exponent encodes inf/NaN (IEEE) and the largest finite.
struct Fmt {
  int frac;
  int emin;
  int emax;
  int exp_bits;
  bool ieee_top;      // exponent field all-ones is inf/NaN (f32, f16, bf16, e5m2)
  double max_finite;
};
const Fmt kF32{23, -126, 127, 8, true, 0x1.fffffep127};
const Fmt kF16{10, -14, 15, 5, true, 65504.0};
const Fmt kBF16{7, -126, 127, 8, true, 0x1.fep127};
// e4m3 (e4m3fn): the all-ones exponent holds normal numbers except S.1111.111 (NaN): max 448.
const Fmt kE4M3{3, -6, 8, 4, false, 448.0};
const Fmt kE5M2{2, -14, 15, 5, true, 57344.0};

constexpr double kInf = std::numeric_limits<double>::infinity();

// s + e is the exact value, s = RN(s + e): the round-to-odd value of s + e.
double to_odd(double s, double e) {
  if (e == 0 || !std::isfinite(s)) return s;
  if (f64_bits(s) & 1) return s;
  return std::nextafter(s, e > 0 ? kInf : -kInf);
}
// Round-to-odd a + b (TwoSum gives the exact error).
double add_odd(double a, double b) {
  const double s = a + b;
  if (!std::isfinite(s)) return s;
  const double bb = s - a;
  const double e = (a - (s - bb)) + (b - bb);
  return to_odd(s, e);
}
// Round-to-odd a * b + c where a * b is exact in binary64 (inputs of at most 26 significant bits).
double fma_odd_narrow(double a, double b, double c) { return add_odd(a * b, c); }

// Rounds x (already exact or rounded to odd at 53 bits) to the format. Returns the value as a
// double (or +-inf / NaN). satfinite clamps overflow and infinities to +-max_finite; ftz flushes a
// subnormal result to a sign-preserving zero.
double round_to(double x, const Fmt& f, Rnd rnd, bool satfinite = false, bool ftz = false) {
  if (std::isnan(x)) return x;
  const bool neg = std::signbit(x);
  if (std::isinf(x)) return satfinite ? (neg ? -f.max_finite : f.max_finite) : x;
  if (x == 0) return x;
  const double a = std::fabs(x);
  const int e = std::ilogb(a);
  const int q = (e < f.emin ? f.emin : e) - f.frac;   // exponent of the last kept bit
  const double scaled = std::ldexp(a, -q);
  double n = std::floor(scaled);
  const double frac = scaled - n;
  bool up = false;
  switch (rnd) {
    case Rnd::rn: up = frac > 0.5 || (frac == 0.5 && std::fmod(n, 2.0) != 0); break;
    case Rnd::rz: up = false; break;
    case Rnd::rm: up = neg && frac > 0; break;
    case Rnd::rp: up = !neg && frac > 0; break;
  }
  if (up) n += 1;
  double r = std::ldexp(n, q);
  if (r > f.max_finite) {
    if (satfinite) r = f.max_finite;
    else if (rnd == Rnd::rz || (rnd == Rnd::rm && !neg) || (rnd == Rnd::rp && neg)) r = f.max_finite;
    else r = kInf;
  }
  if (ftz && r != 0 && r < std::ldexp(1.0, f.emin)) r = 0;
  return neg ? -r : r;
}

// Bit pattern of a value representable in the format (or inf / NaN). The canonical NaN is the
// all-ones exponent with all-ones fraction and a clear sign (e4m3: 0x7F).
uint32_t encode(double v, const Fmt& f) {
  const uint32_t sign_shift = uint32_t(f.exp_bits + f.frac);
  const uint32_t exp_all = (1u << f.exp_bits) - 1;
  if (std::isnan(v)) return (exp_all << f.frac) | ((1u << f.frac) - 1);
  const uint32_t sign = std::signbit(v) ? (1u << sign_shift) : 0;
  if (std::isinf(v)) {
    if (!f.ieee_top) return (exp_all << f.frac) | ((1u << f.frac) - 1);  // no inf: NaN
    return sign | (exp_all << f.frac);
  }
  const double a = std::fabs(v);
  if (a == 0) return sign;
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const int e = std::ilogb(a);
  if (e < f.emin) {
    const uint32_t m = uint32_t(std::ldexp(a, f.frac - f.emin));
    return sign | m;
  }
  const uint32_t m = uint32_t(std::ldexp(a, f.frac - e)) - (1u << f.frac);
  return sign | (uint32_t(e + bias) << f.frac) | m;
}

double decode(uint32_t bits, const Fmt& f) {
  const uint32_t sign_shift = uint32_t(f.exp_bits + f.frac);
  const bool neg = (bits >> sign_shift) & 1;
  const uint32_t exp_all = (1u << f.exp_bits) - 1;
  const uint32_t ef = (bits >> f.frac) & exp_all, m = bits & ((1u << f.frac) - 1);
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  double v;
  if (ef == exp_all && f.ieee_top) v = m ? std::numeric_limits<double>::quiet_NaN() : kInf;
  else if (ef == exp_all && !f.ieee_top && m == (1u << f.frac) - 1) v = std::numeric_limits<double>::quiet_NaN();
  else if (ef == 0) v = std::ldexp(double(m), f.emin - f.frac);
  else v = std::ldexp(double(m + (1u << f.frac)), int(ef) - bias - f.frac);
  return neg ? -v : v;
}

bool is_subnormal_f32(float a) { return std::fpclassify(a) == FP_SUBNORMAL; }
float flush_in(float a, bool ftz) { return (ftz && is_subnormal_f32(a)) ? std::copysign(0.0f, a) : a; }

float f32_of(double r) { return std::isnan(r) ? f32_from_bits(kCanonicalNaN32) : float(r); }

// .sat on f32/f16 results: clamp to [0.0, 1.0]; NaN becomes +0.0.
double saturate(double r) {
  if (std::isnan(r)) return 0.0;
  if (r < 0) return 0.0;  // -0.0 included: the ISA's .sat gives +0.0 for it (ISA reading)
  if (r > 1) return 1.0;
  return r;
}

}  // namespace

// ---- f32 <-> f64 -------------------------------------------------------------------------------
double cvt_f64_f32(float a) { return double(a); }
float cvt_f32_f64(double a, Rnd rnd, bool ftz, bool sat) {
  if (std::isnan(a)) return sat ? 0.0f : f32_from_bits(kCanonicalNaN32);
  double r = round_to(a, kF32, rnd, false, ftz);
  if (sat) r = saturate(r);
  return float(r);
}

// ---- 16-bit formats -----------------------------------------------------------------------------
float bf16_to_f32(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }
float f16_to_f32(uint16_t h) { return float(decode(h, kF16)); }

namespace {
// ISA reading: a NaN result of cvt to .f16/.bf16 is the canonical NaN 0x7fff.
uint16_t to16(double x, const Fmt& f, Rnd rnd, bool satfinite, bool relu) {
  // ISA reading: .relu clamps negative results to +0 and a NaN result becomes the canonical NaN.
  if (std::isnan(x)) return kCanonicalNaN16;
  double r = round_to(x, f, rnd, satfinite);
  if (relu && (r < 0 || (r == 0 && std::signbit(r)))) r = 0.0;
  return uint16_t(encode(r, f));
}
}  // namespace

uint16_t f32_to_bf16(float a, Rnd rnd, bool satfinite, bool relu) {
  if (rnd == Rnd::rn && !satfinite && !relu) {  // fast path: nearest-even on the bit pattern
    const uint32_t b = f32_bits(a);
    if ((b & 0x7fffffffu) > 0x7f800000u) return kCanonicalNaN16;
    return uint16_t((b + 0x7fffu + ((b >> 16) & 1)) >> 16);
  }
  return to16(a, kBF16, rnd, satfinite, relu);
}
uint16_t f64_to_bf16(double a, Rnd rnd) { return to16(a, kBF16, rnd, false, false); }
uint16_t f32_to_f16(float a, Rnd rnd, bool satfinite, bool relu) { return to16(a, kF16, rnd, satfinite, relu); }
uint16_t f64_to_f16(double a, Rnd rnd) { return to16(a, kF16, rnd, false, false); }

// ---- 8-bit formats ---------------------------------------------------------------------------------
float e4m3_to_f32(uint8_t v) { return f32_of(decode(v, kE4M3)); }
float e5m2_to_f32(uint8_t v) { return f32_of(decode(v, kE5M2)); }
// ISA reading: .satfinite maps NaN to the canonical positive NaN 0x7F in both formats.
uint8_t f32_to_e4m3_satfinite(float a) {
  if (std::isnan(a)) return 0x7f;
  return uint8_t(encode(round_to(a, kE4M3, Rnd::rn, true), kE4M3));
}
uint8_t f32_to_e5m2_satfinite(float a) {
  if (std::isnan(a)) return 0x7f;
  return uint8_t(encode(round_to(a, kE5M2, Rnd::rn, true), kE5M2));
}
uint8_t f32_to_e5m2_rn(float a) {
  if (std::isnan(a)) return 0x7f;
  return uint8_t(encode(round_to(a, kE5M2, Rnd::rn, false), kE5M2));
}

// ---- packed cvt ---------------------------------------------------------------------------------
uint32_t cvt_rn_f16x2_f32(float a, float b, bool relu, bool satfinite) {
  return (uint32_t(f32_to_f16(a, Rnd::rn, satfinite, relu)) << 16) | f32_to_f16(b, Rnd::rn, satfinite, relu);
}
uint32_t cvt_rn_bf16x2_f32(float a, float b, bool relu, bool satfinite) {
  return (uint32_t(f32_to_bf16(a, Rnd::rn, satfinite, relu)) << 16) | f32_to_bf16(b, Rnd::rn, satfinite, relu);
}
namespace {
float relu_in(float a, bool relu) { return (relu && !std::isnan(a) && (a < 0 || std::signbit(a))) ? 0.0f : a; }
}  // namespace
uint16_t cvt_rn_satfinite_e4m3x2_f32(float a, float b, bool relu) {
  return uint16_t((uint32_t(f32_to_e4m3_satfinite(relu_in(a, relu))) << 8) | f32_to_e4m3_satfinite(relu_in(b, relu)));
}
uint16_t cvt_rn_satfinite_e5m2x2_f32(float a, float b, bool relu) {
  return uint16_t((uint32_t(f32_to_e5m2_satfinite(relu_in(a, relu))) << 8) | f32_to_e5m2_satfinite(relu_in(b, relu)));
}

uint16_t cvt_rn_satfinite_e4m3x2_f16x2(uint32_t a, bool relu) {  // every f16 is exact in f32
  return cvt_rn_satfinite_e4m3x2_f32(f16_to_f32(uint16_t(a >> 16)), f16_to_f32(uint16_t(a)), relu);
}
uint16_t cvt_rn_satfinite_e5m2x2_f16x2(uint32_t a, bool relu) {
  return cvt_rn_satfinite_e5m2x2_f32(f16_to_f32(uint16_t(a >> 16)), f16_to_f32(uint16_t(a)), relu);
}

// ISA reading: a NaN input keeps its sign and payload with the low 13 bits cleared, made quiet
// (on the H200, cvt.rna.tf32.f32 of 0x7fc00001 is 0x7fc00000, not the canonical 0x7fffffff this
// read first: tools/sim/isa/READINGS.md #30); .satfinite clamps to the largest tf32 0x7f7fe000;
// without it overflow gives infinity.
uint32_t cvt_tf32_f32(float a, Tf32Rnd rnd, bool satfinite, bool relu) {
  if (std::isnan(a)) return (f32_bits(a) | 0x00400000u) & 0xffffe000u;
  a = relu_in(a, relu);
  const uint32_t bits = f32_bits(a), sign = bits & 0x80000000u, mag = bits & 0x7fffffffu;
  uint32_t r;
  if (mag == 0x7f800000u) r = satfinite ? 0x7f7fe000u : mag;
  else if (rnd == Tf32Rnd::rz) r = mag & 0xffffe000u;
  else if (rnd == Tf32Rnd::rna) r = (mag + 0x1000u) & 0xffffe000u;  // ties away: add half, truncate
  else r = (mag + 0xfffu + ((mag >> 13) & 1)) & 0xffffe000u;         // ties to even
  if (r >= 0x7f800000u && mag != 0x7f800000u) r = satfinite ? 0x7f7fe000u : 0x7f800000u;
  return sign | r;
}
uint32_t cvt_rn_f16x2_e4m3x2(uint16_t a) {
  const uint32_t lo = f32_to_f16(e4m3_to_f32(uint8_t(a))), hi = f32_to_f16(e4m3_to_f32(uint8_t(a >> 8)));
  return (hi << 16) | lo;
}
uint32_t cvt_rn_f16x2_e5m2x2(uint16_t a) {
  const uint32_t lo = f32_to_f16(e5m2_to_f32(uint8_t(a))), hi = f32_to_f16(e5m2_to_f32(uint8_t(a >> 8)));
  return (hi << 16) | lo;
}


// ---- float <-> integer ------------------------------------------------------------------------------
namespace {
double round_integral(double a, IRnd rnd) {
  switch (rnd) {
    case IRnd::rni: return std::nearbyint(a);  // the host default mode is nearest-even
    case IRnd::rzi: return std::trunc(a);
    case IRnd::rmi: return std::floor(a);
    case IRnd::rpi: return std::ceil(a);
  }
  return a;
}
// Integer magnitude to a binary format of p significant bits, rounded with rnd.
double round_u64(uint64_t mag, bool neg, int p, Rnd rnd) {
  if (mag == 0) return neg ? -0.0 : 0.0;
  const int nb = 64 - __builtin_clzll(mag);
  if (nb <= p) return neg ? -double(mag) : double(mag);
  const int s = nb - p;
  uint64_t m = mag >> s;
  const uint64_t rem = mag & ((uint64_t(1) << s) - 1), half = uint64_t(1) << (s - 1);
  bool up = false;
  switch (rnd) {
    case Rnd::rn: up = rem > half || (rem == half && (m & 1)); break;
    case Rnd::rz: up = false; break;
    case Rnd::rm: up = neg && rem; break;
    case Rnd::rp: up = !neg && rem; break;
  }
  m += up ? 1 : 0;
  const double r = std::ldexp(double(m), s);
  return neg ? -r : r;
}
}  // namespace

// ISA reading: float-to-integer cvt saturates to the destination range and maps NaN to 0.
int64_t cvt_int_from_float(double a, IRnd rnd, int bits, bool is_signed) {
  if (std::isnan(a)) return 0;
  const double r = round_integral(a, rnd);
  if (is_signed) {
    const double lo = -std::ldexp(1.0, bits - 1), hi = std::ldexp(1.0, bits - 1);
    if (r < lo) return bits == 64 ? std::numeric_limits<int64_t>::min() : int64_t(lo);
    if (r >= hi) return bits == 64 ? std::numeric_limits<int64_t>::max() : int64_t(hi) - 1;
    return int64_t(r);
  }
  if (r <= 0) return 0;
  const double hi = std::ldexp(1.0, bits);
  if (r >= hi) return bits == 64 ? int64_t(~uint64_t(0)) : int64_t((uint64_t(1) << bits) - 1);
  return int64_t(uint64_t(r));
}

float cvt_f32_from_s64(int64_t a, Rnd rnd) {
  const bool neg = a < 0;
  const uint64_t mag = neg ? uint64_t(0) - uint64_t(a) : uint64_t(a);
  return float(round_u64(mag, neg, 24, rnd));
}
float cvt_f32_from_u64(uint64_t a, Rnd rnd) { return float(round_u64(a, false, 24, rnd)); }
double cvt_f64_from_s64(int64_t a, Rnd rnd) {
  const bool neg = a < 0;
  const uint64_t mag = neg ? uint64_t(0) - uint64_t(a) : uint64_t(a);
  return round_u64(mag, neg, 53, rnd);
}
double cvt_f64_from_u64(uint64_t a, Rnd rnd) { return round_u64(a, false, 53, rnd); }

float cvt_f32_round_integral(float a, IRnd rnd, bool ftz) {
  a = flush_in(a, ftz);
  if (std::isnan(a)) return f32_from_bits(kCanonicalNaN32);
  return float(round_integral(a, rnd));
}
double cvt_f64_round_integral(double a, IRnd rnd) { return round_integral(a, rnd); }

// ---- f32 arithmetic ------------------------------------------------------------------------------
float ftz_f32(float a) { return flush_in(a, true); }

namespace {
float finish_f32(double r_odd, Rnd rnd, bool ftz, bool sat) {
  if (std::isnan(r_odd)) return sat ? 0.0f : f32_from_bits(kCanonicalNaN32);
  double r = round_to(r_odd, kF32, rnd, false, ftz);
  if (sat) r = saturate(r);
  return float(r);
}
// The sign of an exact zero sum x + y in mode rnd. ISA reading: IEEE 754's rule (-0 only under .rm,
// or -0 + -0), for f32 and the 16-bit forms alike.
double zero_sum_sign(double r, double x, double y, Rnd rnd) {
  if (r != 0) return r;
  if (std::signbit(x) && std::signbit(y)) return -0.0;
  if (std::signbit(x) != std::signbit(y) || x != 0 || y != 0) return rnd == Rnd::rm ? -0.0 : 0.0;
  return 0.0;
}
}  // namespace

// The host's binary32 arithmetic is IEEE 754 round-to-nearest-even: used directly for the plain
// .rn forms, with NaN results made canonical.
namespace {
float canonical_nan_f32(float r) { return std::isnan(r) ? f32_from_bits(kCanonicalNaN32) : r; }
}  // namespace

float add_f32(float a, float b, Rnd rnd, bool ftz, bool sat) {
  if (rnd == Rnd::rn && !ftz && !sat) return canonical_nan_f32(a + b);
  a = flush_in(a, ftz); b = flush_in(b, ftz);
  return finish_f32(zero_sum_sign(add_odd(a, b), a, b, rnd), rnd, ftz, sat);
}
float sub_f32(float a, float b, Rnd rnd, bool ftz, bool sat) { return add_f32(a, -b, rnd, ftz, sat); }
float mul_f32(float a, float b, Rnd rnd, bool ftz, bool sat) {
  if (rnd == Rnd::rn && !ftz && !sat) return canonical_nan_f32(a * b);
  a = flush_in(a, ftz); b = flush_in(b, ftz);
  return finish_f32(double(a) * double(b), rnd, ftz, sat);  // exact in binary64
}
float fma_f32(float a, float b, float c, Rnd rnd, bool ftz, bool sat) {
  if (rnd == Rnd::rn && !ftz && !sat) return canonical_nan_f32(std::fma(a, b, c));
  a = flush_in(a, ftz); b = flush_in(b, ftz); c = flush_in(c, ftz);
  const double p = double(a) * double(b);
  return finish_f32(zero_sum_sign(add_odd(p, c), p, c, rnd), rnd, ftz, sat);
}

namespace {
// binary64 arithmetic with a directed mode: the host's rounding mode, set and restored around one
// operation on volatile operands.
int host_mode(Rnd rnd) {
  switch (rnd) {
    case Rnd::rn: return FE_TONEAREST;
    case Rnd::rz: return FE_TOWARDZERO;
    case Rnd::rm: return FE_DOWNWARD;
    case Rnd::rp: return FE_UPWARD;
  }
  return FE_TONEAREST;
}
}  // namespace

double fma_f64(double a, double b, double c, Rnd rnd) {
  if (rnd == Rnd::rn) return std::fma(a, b, c);
  const int old = std::fegetround();
  std::fesetround(host_mode(rnd));
  volatile double va = a, vb = b, vc = c;
  volatile double r = std::fma(va, vb, vc);
  std::fesetround(old);
  return r;
}
double add_f64(double a, double b, Rnd rnd) { return fma_f64(1.0, a, b, rnd); }
double mul_f64(double a, double b, Rnd rnd) { return fma_f64(a, b, rnd == Rnd::rm ? 0.0 : -0.0, rnd); }

float div_rn_f32(float a, float b, bool ftz) {
  a = flush_in(a, ftz); b = flush_in(b, ftz);
  // a / b in binary64 rounded to nearest, then to f32: the quotient of two 24-bit values needs
  // 24 + 24 + 2 bits to round correctly after a double rounding, and binary64 has 53.
  return finish_f32(double(a) / double(b), Rnd::rn, ftz, false);
}
float sqrt_rn_f32(float a, bool ftz) {
  a = flush_in(a, ftz);
  return finish_f32(std::sqrt(double(a)), Rnd::rn, ftz, false);
}
float div_f32(float a, float b, Rnd rnd, bool ftz) {
  a = flush_in(a, ftz); b = flush_in(b, ftz);
  const double q = double(a) / double(b);  // the sign of the exact remainder gives the sticky bit
  const double e = std::isfinite(q) && q != 0 ? -std::fma(q, double(b), -double(a)) / double(b) : 0.0;
  return finish_f32(to_odd(q, e), rnd, ftz, false);
}
float sqrt_f32(float a, Rnd rnd, bool ftz) {
  a = flush_in(a, ftz);
  const double q = std::sqrt(double(a));
  const double e = std::isfinite(q) && q != 0 ? std::fma(-q, q, double(a)) : 0.0;  // a - q^2
  return finish_f32(to_odd(q, e), rnd, ftz, false);
}
float rcp_rn_f32(float a, Rnd rnd, bool ftz) {
  a = flush_in(a, ftz);
  const double q = 1.0 / double(a);
  const double e = std::isfinite(q) && q != 0 ? -std::fma(q, double(a), -1.0) / double(a) : 0.0;
  return finish_f32(to_odd(q, e), rnd, ftz, false);
}

namespace {
// min/max core on values already decoded; nan_mode: any NaN -> NaN.
double minmax(double a, double b, bool is_max, bool nan_mode, bool* is_nan) {
  *is_nan = false;
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na || nb) {
    if (nan_mode || (na && nb)) { *is_nan = true; return 0; }
    return na ? b : a;
  }
  // The ISA's min/max semantics: "+0.0 > -0.0 here".
  if (a == b) {
    const bool take_a = is_max ? !std::signbit(a) : std::signbit(a);
    return take_a ? a : b;
  }
  return is_max ? (a > b ? a : b) : (a < b ? a : b);
}
}  // namespace

float min_f32(float a, float b, bool nan_mode, bool ftz) {
  bool nan;
  const double r = minmax(flush_in(a, ftz), flush_in(b, ftz), false, nan_mode, &nan);
  return nan ? f32_from_bits(kCanonicalNaN32) : float(r);
}
float max_f32(float a, float b, bool nan_mode, bool ftz) {
  bool nan;
  const double r = minmax(flush_in(a, ftz), flush_in(b, ftz), true, nan_mode, &nan);
  return nan ? f32_from_bits(kCanonicalNaN32) : float(r);
}

// ---- comparisons and classification ------------------------------------------------------------
bool setp_f64(FCmp op, double a, double b) {
  const bool un = std::isnan(a) || std::isnan(b);
  switch (op) {
    case FCmp::eq: return !un && a == b;
    case FCmp::ne: return !un && a != b;
    case FCmp::lt: return !un && a < b;
    case FCmp::le: return !un && a <= b;
    case FCmp::gt: return !un && a > b;
    case FCmp::ge: return !un && a >= b;
    case FCmp::equ: return un || a == b;
    case FCmp::neu: return un || a != b;
    case FCmp::ltu: return un || a < b;
    case FCmp::leu: return un || a <= b;
    case FCmp::gtu: return un || a > b;
    case FCmp::geu: return un || a >= b;
    case FCmp::num: return !un;
    case FCmp::nan: return un;
  }
  return false;
}
bool setp_f32(FCmp op, float a, float b, bool ftz) { return setp_f64(op, flush_in(a, ftz), flush_in(b, ftz)); }
bool testp_f32(TestP op, float a) {
  switch (op) {
    case TestP::finite: return std::isfinite(a);
    case TestP::infinite: return std::isinf(a);
    case TestP::number: return !std::isnan(a);
    case TestP::notanumber: return std::isnan(a);
    case TestP::normal: return std::fpclassify(a) == FP_NORMAL;
    case TestP::subnormal: return std::fpclassify(a) == FP_SUBNORMAL;
  }
  return false;
}

// ---- approximate functions ---------------------------------------------------------------------
namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
enum class Fn : uint64_t { ex2 = 1, rcp, rsqrt, lg2, tanh, sqrt };

// The f32 result of a function whose exact value is x: correctly rounded (exact mode), or
// (perturbed mode) with a deterministic error from the hash of (seed, function, input bits):
// ulp_steps > 0: the correctly rounded result moved by k ulps, k uniform in [-ulp_steps, ulp_steps];
// otherwise y = x + u * bound (u uniform in [-1, 1]) rounded to f32, pulled back inside the bound.
// The sign and finiteness of the exact result are kept. ftz flushes a subnormal result.
float approx_result(double x, int ulp_steps, double bound, Fn fn, uint32_t in_bits, bool ftz,
                    const ApproxConfig& cfg) {
  if (std::isnan(x)) return f32_from_bits(kCanonicalNaN32);
  const float rn = float(round_to(x, kF32, Rnd::rn, false, ftz));
  if (cfg.mode != ApproxMode::perturbed || !std::isfinite(rn) || rn == 0) return rn;
  const uint64_t h = splitmix64(cfg.seed ^ splitmix64((uint64_t(fn) << 32) | in_bits));
  float y = rn;
  if (ulp_steps > 0) {
    const int k = int(h % uint64_t(2 * ulp_steps + 1)) - ulp_steps;
    for (int i = 0; i < (k < 0 ? -k : k); ++i) y = std::nextafter(y, k < 0 ? -INFINITY : INFINITY);
  } else if (bound > 0) {
    const double u = (double(h >> 11) / double(uint64_t(1) << 53)) * 2.0 - 1.0;
    y = float(x + u * bound);
    for (int i = 0; i < 4 && std::fabs(double(y) - x) > bound; ++i)
      y = std::nextafter(y, double(y) > x ? -INFINITY : INFINITY);  // step toward x
    if (std::fabs(double(y) - x) > bound) y = rn;
  }
  if (!std::isfinite(y) || y == 0 || std::signbit(y) != std::signbit(rn)) return rn;
  if (ftz && std::fpclassify(y) == FP_SUBNORMAL) return std::copysign(0.0f, y);
  return y;
}
double ulp_bound(double x, int ulps) {
  const double a = std::fabs(x);
  const int e = a == 0 ? -126 : std::max(std::ilogb(a), -126);
  return ulps * std::ldexp(1.0, e - 23);
}
}  // namespace

// ISA reading: without .ftz subnormal inputs and results are kept ("subnormal numbers are
// supported"); rcp.approx's 1 ulp is measured, like ex2's 2 ulp, from the correctly rounded result.
float ex2_approx_f32(float a, bool ftz, const ApproxConfig& cfg) {
  a = flush_in(a, ftz);
  const double x = std::exp2(double(a));
  return approx_result(x, kEx2MaxUlp, 0, Fn::ex2, f32_bits(a), ftz, cfg);
}
float rcp_approx_f32(float a, bool ftz, const ApproxConfig& cfg) {
  a = flush_in(a, ftz);
  const double x = 1.0 / double(a);
  return approx_result(x, kRcpMaxUlp, 0, Fn::rcp, f32_bits(a), ftz, cfg);
}
float rsqrt_approx_f32(float a, bool ftz, const ApproxConfig& cfg) {
  a = flush_in(a, ftz);
  const double x = (a == 0) ? std::copysign(kInf, a) : 1.0 / std::sqrt(double(a));
  return approx_result(x, 0, std::fabs(x) * kRsqrtMaxRel, Fn::rsqrt, f32_bits(a), ftz, cfg);
}
double lg2_approx_bound(float input, double exact) {
  const double b = (input > 0.5f && input < 2.0f) ? 0x1p-22 : std::fabs(exact) * 0x1p-22;
  return std::max(b, ulp_bound(exact, 1));
}
float lg2_approx_f32(float a, bool ftz, const ApproxConfig& cfg) {
  a = flush_in(a, ftz);
  const double x = (a == 0) ? -kInf : std::log2(double(a));
  return approx_result(x, 0, lg2_approx_bound(a, x), Fn::lg2, f32_bits(a), ftz, cfg);
}
float tanh_approx_f32(float a, const ApproxConfig& cfg) {
  const double x = std::tanh(double(a));
  return approx_result(x, 0, std::fabs(x) * kTanhMaxRel, Fn::tanh, f32_bits(a), false, cfg);
}
float sqrt_approx_f32(float a, bool ftz, const ApproxConfig& cfg) {
  a = flush_in(a, ftz);
  const double x = std::sqrt(double(a));
  return approx_result(x, 1, 0, Fn::sqrt, f32_bits(a), ftz, cfg);
}
uint16_t ex2_approx_f16(uint16_t a) { return f64_to_f16(std::exp2(decode(a, kF16))); }
uint16_t ex2_approx_bf16(uint16_t a) {
  double v = decode(a, kBF16);
  if (std::fpclassify(float(v)) == FP_SUBNORMAL) v = std::copysign(0.0, v);  // .ftz
  const double r = round_to(std::exp2(v), kBF16, Rnd::rn, false, true);
  return std::isnan(r) ? kCanonicalNaN16 : uint16_t(encode(r, kBF16));
}

// ---- half-precision arithmetic --------------------------------------------------------------------
// ISA reading: the .bf16/.bf16x2 forms round once (.rn) and keep subnormals (no .ftz exists).
namespace {
double in16(uint16_t h, const Fmt& f, bool ftz) {
  const double v = decode(h, f);
  if (ftz && v != 0 && std::fabs(v) < std::ldexp(1.0, f.emin)) return std::copysign(0.0, v);
  return v;
}
uint16_t out16(double r_odd, const Fmt& f, bool ftz, bool sat, bool relu) {
  if (std::isnan(r_odd)) return sat ? 0 : kCanonicalNaN16;
  double r = round_to(r_odd, f, Rnd::rn, false, ftz);
  if (sat) r = saturate(r);
  if (relu && (r < 0 || (r == 0 && std::signbit(r)))) r = 0.0;
  return uint16_t(encode(r, f));
}
uint16_t add16(uint16_t a, uint16_t b, const Fmt& f, bool ftz, bool sat, bool negate_b) {
  const double x = in16(a, f, ftz), y = negate_b ? -in16(b, f, ftz) : in16(b, f, ftz);
  return out16(zero_sum_sign(add_odd(x, y), x, y, Rnd::rn), f, ftz, sat, false);
}
uint16_t mul16(uint16_t a, uint16_t b, const Fmt& f, bool ftz, bool sat) {
  return out16(in16(a, f, ftz) * in16(b, f, ftz), f, ftz, sat, false);  // exact in binary64
}
uint16_t fma16(uint16_t a, uint16_t b, uint16_t c, const Fmt& f, bool ftz, bool sat, bool relu) {
  const double p = in16(a, f, ftz) * in16(b, f, ftz), z = in16(c, f, ftz);
  return out16(zero_sum_sign(fma_odd_narrow(in16(a, f, ftz), in16(b, f, ftz), z), p, z, Rnd::rn), f, ftz, sat, relu);
}
uint16_t minmax16(uint16_t a, uint16_t b, const Fmt& f, bool is_max, bool nan_mode) {
  bool nan;
  const double r = minmax(decode(a, f), decode(b, f), is_max, nan_mode, &nan);
  return nan ? kCanonicalNaN16 : uint16_t(encode(r, f));
}
template <class F>
uint32_t pairwise(uint32_t a, uint32_t b, F op) {
  return (uint32_t(op(uint16_t(a >> 16), uint16_t(b >> 16))) << 16) | op(uint16_t(a), uint16_t(b));
}
}  // namespace

uint16_t add_f16(uint16_t a, uint16_t b, bool ftz, bool sat) { return add16(a, b, kF16, ftz, sat, false); }
uint16_t sub_f16(uint16_t a, uint16_t b, bool ftz, bool sat) { return add16(a, b, kF16, ftz, sat, true); }
uint16_t mul_f16(uint16_t a, uint16_t b, bool ftz, bool sat) { return mul16(a, b, kF16, ftz, sat); }
uint16_t fma_f16(uint16_t a, uint16_t b, uint16_t c, bool ftz, bool sat, bool relu) {
  return fma16(a, b, c, kF16, ftz, sat, relu);
}
uint16_t add_bf16(uint16_t a, uint16_t b) { return add16(a, b, kBF16, false, false, false); }
uint16_t sub_bf16(uint16_t a, uint16_t b) { return add16(a, b, kBF16, false, false, true); }
uint16_t mul_bf16(uint16_t a, uint16_t b) { return mul16(a, b, kBF16, false, false); }
uint16_t fma_bf16(uint16_t a, uint16_t b, uint16_t c, bool relu) { return fma16(a, b, c, kBF16, false, false, relu); }
uint16_t min_f16(uint16_t a, uint16_t b, bool nan_mode) { return minmax16(a, b, kF16, false, nan_mode); }
uint16_t max_f16(uint16_t a, uint16_t b, bool nan_mode) { return minmax16(a, b, kF16, true, nan_mode); }
uint16_t min_bf16(uint16_t a, uint16_t b, bool nan_mode) { return minmax16(a, b, kBF16, false, nan_mode); }
uint16_t max_bf16(uint16_t a, uint16_t b, bool nan_mode) { return minmax16(a, b, kBF16, true, nan_mode); }

uint32_t add_f16x2(uint32_t a, uint32_t b, bool ftz, bool sat) {
  return pairwise(a, b, [&](uint16_t x, uint16_t y) { return add_f16(x, y, ftz, sat); });
}
uint32_t sub_f16x2(uint32_t a, uint32_t b, bool ftz, bool sat) {
  return pairwise(a, b, [&](uint16_t x, uint16_t y) { return sub_f16(x, y, ftz, sat); });
}
uint32_t mul_f16x2(uint32_t a, uint32_t b, bool ftz, bool sat) {
  return pairwise(a, b, [&](uint16_t x, uint16_t y) { return mul_f16(x, y, ftz, sat); });
}
uint32_t fma_f16x2(uint32_t a, uint32_t b, uint32_t c, bool ftz, bool sat, bool relu) {
  return (uint32_t(fma_f16(uint16_t(a >> 16), uint16_t(b >> 16), uint16_t(c >> 16), ftz, sat, relu)) << 16) |
         fma_f16(uint16_t(a), uint16_t(b), uint16_t(c), ftz, sat, relu);
}
uint32_t add_bf16x2(uint32_t a, uint32_t b) { return pairwise(a, b, add_bf16); }
uint32_t sub_bf16x2(uint32_t a, uint32_t b) { return pairwise(a, b, sub_bf16); }
uint32_t mul_bf16x2(uint32_t a, uint32_t b) { return pairwise(a, b, mul_bf16); }
uint32_t fma_bf16x2(uint32_t a, uint32_t b, uint32_t c, bool relu) {
  return (uint32_t(fma_bf16(uint16_t(a >> 16), uint16_t(b >> 16), uint16_t(c >> 16), relu)) << 16) |
         fma_bf16(uint16_t(a), uint16_t(b), uint16_t(c), relu);
}
uint32_t min_f16x2(uint32_t a, uint32_t b, bool nan_mode) {
  return pairwise(a, b, [&](uint16_t x, uint16_t y) { return min_f16(x, y, nan_mode); });
}
uint32_t max_f16x2(uint32_t a, uint32_t b, bool nan_mode) {
  return pairwise(a, b, [&](uint16_t x, uint16_t y) { return max_f16(x, y, nan_mode); });
}
uint32_t min_bf16x2(uint32_t a, uint32_t b, bool nan_mode) {
  return pairwise(a, b, [&](uint16_t x, uint16_t y) { return min_bf16(x, y, nan_mode); });
}
uint32_t max_bf16x2(uint32_t a, uint32_t b, bool nan_mode) {
  return pairwise(a, b, [&](uint16_t x, uint16_t y) { return max_bf16(x, y, nan_mode); });
}

}  // namespace ptxsim::isa
