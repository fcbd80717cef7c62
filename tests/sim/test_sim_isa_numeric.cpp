// Conformance tests for tools/sim/isa/numeric.h: each expectation is worked out by hand from the
// PTX ISA's definitions of the formats (bf16: 8-bit exponent, 7-bit fraction; f16: IEEE binary16;
// e4m3: bias 7, S.1111.111 NaN, max 448; e5m2: bias 15, IEEE-like) and the rounding modifiers.
#include <doctest/doctest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <random>

#include "tools/sim/isa/numeric.h"

using namespace ptxsim::isa;

namespace {
float F(uint32_t b) { return f32_from_bits(b); }
uint32_t B(float f) { return f32_bits(f); }
}  // namespace

TEST_SUITE("sim isa numeric") {

TEST_CASE("bf16: nearest-even ties, directed modes, NaN, overflow, subnormals") {
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(F(0x3f808000)) == 0x3f80);  // 1 + 2^-8: halfway, 0x3f80 is even
  CHECK(f32_to_bf16(F(0x3f818000)) == 0x3f82);  // halfway between 0x3f81 and 0x3f82: to even
  CHECK(f32_to_bf16(F(0x3f808001)) == 0x3f81);  // just above halfway
  CHECK(f32_to_bf16(F(0x3f80ffff), Rnd::rz) == 0x3f80);
  CHECK(f32_to_bf16(F(0x3f80ffff), Rnd::rp) == 0x3f81);
  CHECK(f32_to_bf16(F(0x3f800001), Rnd::rm) == 0x3f80);
  CHECK(f32_to_bf16(F(0xbf800001), Rnd::rm) == 0xbf81);  // toward -inf grows the magnitude
  CHECK(f32_to_bf16(F(0xbf800001), Rnd::rp) == 0xbf80);
  CHECK(f32_to_bf16(F(0x7fc00001)) == kCanonicalNaN16);
  CHECK(f32_to_bf16(INFINITY) == 0x7f80);
  CHECK(f32_to_bf16(-INFINITY) == 0xff80);
  CHECK(f32_to_bf16(F(0x7f7fffff)) == 0x7f80);             // FLT_MAX rounds up to inf
  CHECK(f32_to_bf16(F(0x7f7fffff), Rnd::rz) == 0x7f7f);    // toward zero stays finite
  CHECK(f32_to_bf16(F(0x7f7fffff), Rnd::rn, true) == 0x7f7f);  // .satfinite
  CHECK(f32_to_bf16(F(0x00010000)) == 0x0001);             // subnormal keeps its top bits
  CHECK(f32_to_bf16(F(0x00008000)) == 0x0000);             // half the smallest: tie to even 0
  CHECK(f32_to_bf16(F(0x00018000)) == 0x0002);             // 1.5 smallest: tie to even 2
  CHECK(f32_to_bf16(-2.0f, Rnd::rn, false, true) == 0x0000);  // .relu
  std::mt19937 rng(17);
  for (int i = 0; i < 200000; ++i) {  // the bit-pattern fast path agrees with the general rounding
    const uint32_t bits = rng();
    CHECK(f32_to_bf16(F(bits)) == f64_to_bf16(double(F(bits))));
  }
  for (uint32_t h = 0; h < 0x10000; ++h) {                 // decoding is the upper half of an f32
    CHECK_MESSAGE(B(bf16_to_f32(uint16_t(h))) == (h << 16), h);
  }
}

TEST_CASE("f16: overflow threshold, subnormal ties, directed modes, decode round trip") {
  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);
  CHECK(f32_to_f16(65519.0f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);                   // halfway to 2^16: even is inf
  CHECK(f32_to_f16(65520.0f, Rnd::rz) == 0x7bff);
  CHECK(f32_to_f16(1e6f, Rnd::rn, true) == 0x7bff);        // .satfinite
  CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);      // tie to even zero
  CHECK(f32_to_f16(std::ldexp(3.0f, -26)) == 0x0001);      // 0.75 of the smallest
  CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);      // 1.5 smallest: tie to even 2
  CHECK(f32_to_f16(-std::ldexp(1.0f, -30), Rnd::rm) == 0x8001);
  CHECK(f32_to_f16(-std::ldexp(1.0f, -30), Rnd::rz) == 0x8000);
  CHECK(f32_to_f16(1.0f / 3.0f) == 0x3555);
  CHECK(f32_to_f16(NAN) == kCanonicalNaN16);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t v = uint16_t(h);
    const float f = f16_to_f32(v);
    if (std::isnan(f)) { CHECK(((h >> 10) & 0x1f) == 0x1f); continue; }
    CHECK_MESSAGE(f32_to_f16(f) == v, h);                  // every f16 is exact in f32
  }
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(f16_to_f32(0x7c00) == INFINITY);
  CHECK(f16_to_f32(0xc000) == -2.0f);
}

TEST_CASE("packed cvt: the first source goes to the upper half") {
  // cvt.rn.bf16x2.f32 d, a, b: d[31:16] = cvt(a), d[15:0] = cvt(b).
  CHECK(cvt_rn_bf16x2_f32(1.0f, 2.0f) == 0x3f804000u);
  CHECK(cvt_rn_f16x2_f32(1.0f, 2.0f) == 0x3c004000u);
  CHECK(cvt_rn_f16x2_f32(-1.0f, 0.5f, true) == 0x00003800u);  // .relu on the upper one
  // cvt.rn.satfinite.e4m3x2.f32 d, a, b: d[15:8] = cvt(a), d[7:0] = cvt(b).
  CHECK(cvt_rn_satfinite_e4m3x2_f32(1.0f, -2.0f) == 0x38c0);
  CHECK(cvt_rn_satfinite_e5m2x2_f32(1.0f, -2.0f) == 0x3cc0);
  // cvt.rn.f16x2.e4m3x2 d, a: byte 0 -> half 0.
  CHECK(cvt_rn_f16x2_e4m3x2(0x38c0) == 0x3c00c000u);
  CHECK(cvt_rn_f16x2_e5m2x2(0x3cc0) == 0x3c00c000u);
  CHECK(cvt_rn_satfinite_e4m3x2_f16x2(0x3c00c000u) == 0x38c0);
  CHECK(cvt_rn_satfinite_e5m2x2_f16x2(0x3c00c000u) == 0x3cc0);
  CHECK(cvt_rn_satfinite_e5m2x2_f16x2(0x7bffbc00u) == 0x7bbc);        // 65504 rounds past 57344: clamped; -1
  CHECK(cvt_rn_satfinite_e5m2x2_f16x2(0x7bffbc00u, true) == 0x7b00);  // .relu: -1 -> 0
  CHECK(cvt_rn_satfinite_e4m3x2_f32(1.0f, -2.0f, true) == 0x3800);  // .relu
}

TEST_CASE("cvt to tf32: rna ties away, rn ties to even, rz, satfinite") {
  CHECK(cvt_tf32_f32(F(0x3f801000u), Tf32Rnd::rna) == 0x3f802000u);  // exactly half: away
  CHECK(cvt_tf32_f32(F(0x3f801000u), Tf32Rnd::rn) == 0x3f800000u);   // half: to even
  CHECK(cvt_tf32_f32(F(0x3f803000u), Tf32Rnd::rn) == 0x3f804000u);   // half above odd: up
  CHECK(cvt_tf32_f32(F(0x3f801fffu), Tf32Rnd::rz) == 0x3f800000u);
  CHECK(cvt_tf32_f32(F(0xbf801000u), Tf32Rnd::rna) == 0xbf802000u);  // sign kept
  CHECK(cvt_tf32_f32(F(0x7f7fffffu), Tf32Rnd::rna) == 0x7f800000u);  // overflow
  CHECK(cvt_tf32_f32(F(0x7f7fffffu), Tf32Rnd::rna, true) == 0x7f7fe000u);
  CHECK(cvt_tf32_f32(F(0x7fc00001u), Tf32Rnd::rna) == 0x7fc00000u);  // the H200's answer (READINGS #30)
  CHECK(cvt_tf32_f32(F(0xff800001u), Tf32Rnd::rn) == 0xffc00000u);   // signalling: made quiet, sign kept
  CHECK(cvt_tf32_f32(-1.0f, Tf32Rnd::rn, false, true) == 0u);
}

TEST_CASE("e4m3: every code decoded, satfinite clamps, NaN, ties, round trip") {
  for (uint32_t c = 0; c < 256; ++c) {
    const uint32_t s = c >> 7, e = (c >> 3) & 15, m = c & 7;
    const float v = e4m3_to_f32(uint8_t(c));
    if (e == 15 && m == 7) { CHECK_MESSAGE(std::isnan(v), c); continue; }
    const double mag = e == 0 ? std::ldexp(double(m), -9) : std::ldexp(1.0 + m / 8.0, int(e) - 7);
    CHECK_MESSAGE(double(v) == (s ? -mag : mag), c);
    CHECK_MESSAGE(f32_to_e4m3_satfinite(v) == c, c);  // -0 included: 0x80
  }
  CHECK(e4m3_to_f32(0x7e) == 448.0f);
  CHECK(e4m3_to_f32(0x38) == 1.0f);
  CHECK(e4m3_to_f32(0x08) == std::ldexp(1.0f, -6));
  CHECK(e4m3_to_f32(0x01) == std::ldexp(1.0f, -9));
  CHECK(f32_to_e4m3_satfinite(1000.0f) == 0x7e);
  CHECK(f32_to_e4m3_satfinite(-1000.0f) == 0xfe);
  CHECK(f32_to_e4m3_satfinite(INFINITY) == 0x7e);
  CHECK(f32_to_e4m3_satfinite(-INFINITY) == 0xfe);
  CHECK(f32_to_e4m3_satfinite(NAN) == 0x7f);
  CHECK(f32_to_e4m3_satfinite(464.0f) == 0x7e);   // halfway 448..480: 448 (fraction 110) is even
  CHECK(f32_to_e4m3_satfinite(432.0f) == 0x7e);   // halfway 416..448: 448 (110) is even
  CHECK(f32_to_e4m3_satfinite(424.0f) == 0x7d);   // nearer 416
  CHECK(f32_to_e4m3_satfinite(std::ldexp(1.0f, -10)) == 0x00);      // half the smallest: even 0
  CHECK(f32_to_e4m3_satfinite(std::ldexp(3.0f, -11)) == 0x01);
  CHECK(f32_to_e4m3_satfinite(std::ldexp(3.0f, -10)) == 0x02);      // 1.5 smallest: even 2
  CHECK(f32_to_e4m3_satfinite(1.0625f) == 0x38);                    // 1 + 1/16: tie to 1.0
  CHECK(f32_to_e4m3_satfinite(1.1875f) == 0x3a);                    // 1 + 3/16: tie to 1.25
}

TEST_CASE("e5m2: every code decoded, infinities, satfinite") {
  for (uint32_t c = 0; c < 256; ++c) {
    const uint32_t s = c >> 7, e = (c >> 2) & 31, m = c & 3;
    const float v = e5m2_to_f32(uint8_t(c));
    if (e == 31) {
      if (m == 0) CHECK(v == (s ? -INFINITY : INFINITY));
      else CHECK(std::isnan(v));
      continue;
    }
    const double mag = e == 0 ? std::ldexp(double(m), -16) : std::ldexp(1.0 + m / 4.0, int(e) - 15);
    CHECK_MESSAGE(double(v) == (s ? -mag : mag), c);
    CHECK_MESSAGE(f32_to_e5m2_satfinite(v) == c, c);
  }
  CHECK(e5m2_to_f32(0x7b) == 57344.0f);
  CHECK(f32_to_e5m2_satfinite(1e6f) == 0x7b);
  CHECK(f32_to_e5m2_satfinite(INFINITY) == 0x7b);
  CHECK(f32_to_e5m2_satfinite(NAN) == 0x7f);
  CHECK(f32_to_e5m2_rn(1e6f) == 0x7c);
}

TEST_CASE("f32 arithmetic: fma rounds once, directed add, min/max NaN rules, ftz, sat") {
  const float a = F(0x3f800800);  // 1 + 2^-12; a*a = 1 + 2^-11 + 2^-24
  CHECK(B(mul_f32(a, a)) == 0x3f801000u);                    // the 2^-24 is a tie: to even
  CHECK(fma_f32(a, a, -F(0x3f801000)) == std::ldexp(1.0f, -24));  // the exact remainder
  CHECK(B(mul_f32(a, a, Rnd::rp)) == 0x3f801001u);
  const float tiny = std::ldexp(1.0f, -24);
  CHECK(add_f32(1.0f, tiny) == 1.0f);                       // tie to even
  CHECK(B(add_f32(1.0f, tiny, Rnd::rp)) == 0x3f800001u);
  CHECK(add_f32(1.0f, tiny, Rnd::rz) == 1.0f);
  CHECK(B(add_f32(-1.0f, -tiny, Rnd::rm)) == 0xbf800001u);
  CHECK(std::signbit(add_f32(1.0f, -1.0f, Rnd::rm)));       // exact zero is -0 under .rm only
  CHECK(!std::signbit(add_f32(1.0f, -1.0f, Rnd::rn)));
  CHECK(max_f32(NAN, 1.0f) == 1.0f);                        // max.f32: the non-NaN input
  CHECK(min_f32(2.0f, NAN) == 2.0f);
  CHECK(B(max_f32(NAN, 1.0f, true)) == kCanonicalNaN32);    // max.NaN.f32
  CHECK(B(max_f32(NAN, NAN)) == kCanonicalNaN32);
  CHECK(!std::signbit(max_f32(-0.0f, 0.0f)));
  CHECK(std::signbit(min_f32(0.0f, -0.0f)));
  const float den = F(0x00000123);
  CHECK(add_f32(den, 0.0f) == den);
  CHECK(B(add_f32(den, 0.0f, Rnd::rn, true)) == 0u);        // .ftz flushes the input
  CHECK(B(mul_f32(-den, 1.0f, Rnd::rn, true)) == 0x80000000u);  // sign-preserving zero
  CHECK(mul_f32(std::ldexp(1.0f, -70), std::ldexp(1.0f, -70)) == std::ldexp(1.0f, -140));
  CHECK(mul_f32(std::ldexp(1.0f, -70), std::ldexp(1.0f, -70), Rnd::rn, true) == 0.0f);  // result
  CHECK(add_f32(0.75f, 0.5f, Rnd::rn, false, true) == 1.0f);  // .sat
  CHECK(B(mul_f32(NAN, 1.0f, Rnd::rn, false, true)) == 0u);
  CHECK(div_rn_f32(1.0f, 3.0f) == 1.0f / 3.0f);
  CHECK(B(div_f32(1.0f, 3.0f, Rnd::rz)) == 0x3eaaaaaau);
  CHECK(B(div_f32(1.0f, 3.0f, Rnd::rp)) == 0x3eaaaaabu);
  CHECK(B(div_f32(-1.0f, 3.0f, Rnd::rm)) == 0xbeaaaaabu);
  CHECK(div_f32(6.0f, 3.0f, Rnd::rp) == 2.0f);                         // exact: no step
  CHECK(B(sqrt_f32(2.0f, Rnd::rz)) == 0x3fb504f3u);                    // sqrt 2 = 1.41421354 (rn) ...
  CHECK(B(sqrt_f32(2.0f, Rnd::rp)) == 0x3fb504f4u);
  CHECK(sqrt_f32(4.0f, Rnd::rm) == 2.0f);
  CHECK(B(rcp_rn_f32(3.0f, Rnd::rz)) == 0x3eaaaaaau);
  CHECK(B(rcp_rn_f32(3.0f, Rnd::rp)) == 0x3eaaaaabu);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (int i = 0; i < 2000; ++i) {  // agreement with the host's correctly rounded fma
    const float x = u(rng), y = u(rng), z = u(rng);
    CHECK(B(fma_f32(x, y, z)) == B(std::fma(x, y, z)));
  }
  CHECK(cvt_f32_f64(1.0 + 0x1p-24) == 1.0f);
  CHECK(B(cvt_f32_f64(1.0 + 0x1p-30, Rnd::rp)) == 0x3f800001u);
  CHECK(B(cvt_f32_f64(1e300, Rnd::rz)) == 0x7f7fffffu);
}

namespace {
// The host's IEEE 754 arithmetic in a directed mode: an oracle independent of the library.
int host_mode(Rnd r) {
  return r == Rnd::rz ? FE_TOWARDZERO : r == Rnd::rm ? FE_DOWNWARD : r == Rnd::rp ? FE_UPWARD : FE_TONEAREST;
}
float host_op(int op, float a, float b, float c, Rnd r) {
  const int old = std::fegetround();
  std::fesetround(host_mode(r));
  volatile float va = a, vb = b, vc = c, out;
  if (op == 0) out = va + vb;
  else if (op == 1) out = va * vb;
  else if (op == 2) out = std::fma(float(va), float(vb), float(vc));
  else if (op == 3) out = va / vb;
  else out = std::sqrt(float(va));
  std::fesetround(old);
  return out;
}
}  // namespace

TEST_CASE("f32 add/mul/fma/div/sqrt in all four modes agree with the host's IEEE arithmetic") {
  REQUIRE(B(host_op(0, 1.0f, std::ldexp(1.0f, -24), 0, Rnd::rp)) == 0x3f800001u);  // the oracle's mode holds
  REQUIRE(B(host_op(0, 1.0f, std::ldexp(1.0f, -24), 0, Rnd::rn)) == 0x3f800000u);
  std::mt19937 rng(23);
  int mismatches = 0;
  for (int i = 0; i < 40000; ++i) {
    // random bit patterns over a wide exponent range, subnormals included; NaN/inf skipped
    auto pick = [&]() {
      uint32_t bits = rng();
      if (((bits >> 23) & 0xff) == 0xff) bits &= 0xbfffffffu;
      if (i % 4 == 0) bits = (bits & 0x807fffffu) | ((100 + rng() % 56) << 23);  // near exponents
      return F(bits);
    };
    const float a = pick(), b = pick(), c = pick();
    for (Rnd r : {Rnd::rn, Rnd::rz, Rnd::rm, Rnd::rp}) {
      mismatches += B(add_f32(a, b, r)) != B(host_op(0, a, b, c, r));
      mismatches += B(mul_f32(a, b, r)) != B(host_op(1, a, b, c, r));
      mismatches += B(fma_f32(a, b, c, r)) != B(host_op(2, a, b, c, r));
      mismatches += B(div_f32(a, b, r)) != B(host_op(3, a, b, c, r));
      const float s = std::fabs(a);
      mismatches += B(sqrt_f32(s, r)) != B(host_op(4, s, b, c, r));
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("float <-> integer conversions: the four integer roundings, saturation, NaN") {
  CHECK(cvt_int_from_float(2.5, IRnd::rni, 32, true) == 2);
  CHECK(cvt_int_from_float(3.5, IRnd::rni, 32, true) == 4);
  CHECK(cvt_int_from_float(-2.5, IRnd::rni, 32, true) == -2);
  CHECK(cvt_int_from_float(-2.5, IRnd::rmi, 32, true) == -3);
  CHECK(cvt_int_from_float(2.1, IRnd::rpi, 32, true) == 3);
  CHECK(cvt_int_from_float(-2.9, IRnd::rzi, 32, true) == -2);
  CHECK(cvt_int_from_float(3e9, IRnd::rzi, 32, true) == 2147483647);
  CHECK(cvt_int_from_float(-3e9, IRnd::rzi, 32, true) == -2147483647 - 1);
  CHECK(cvt_int_from_float(-1.0, IRnd::rzi, 32, false) == 0);
  CHECK(cvt_int_from_float(300.0, IRnd::rni, 8, false) == 255);
  CHECK(cvt_int_from_float(-300.0, IRnd::rni, 8, true) == -128);
  CHECK(cvt_int_from_float(NAN, IRnd::rni, 32, true) == 0);
  CHECK(uint64_t(cvt_int_from_float(1e20, IRnd::rzi, 64, false)) == ~uint64_t(0));
  CHECK(cvt_f32_from_u64((1u << 24) + 1, Rnd::rn) == 16777216.0f);
  CHECK(cvt_f32_from_u64((1u << 24) + 1, Rnd::rp) == 16777218.0f);
  CHECK(cvt_f32_from_u64((1u << 24) + 3, Rnd::rn) == 16777220.0f);  // tie to even
  CHECK(cvt_f32_from_s64(-((1 << 24) + 1), Rnd::rm) == -16777218.0f);
  CHECK(cvt_f32_from_u64(~uint64_t(0), Rnd::rn) == 18446744073709551616.0f);
  CHECK(cvt_f64_from_u64((uint64_t(1) << 53) + 1, Rnd::rp) == 9007199254740994.0);
  CHECK(cvt_f32_round_integral(2.5f, IRnd::rni) == 2.0f);
  CHECK(cvt_f32_round_integral(-0.5f, IRnd::rzi) == 0.0f);
  CHECK(std::signbit(cvt_f32_round_integral(-0.5f, IRnd::rzi)));
  CHECK(cvt_f32_round_integral(-1.5f, IRnd::rpi) == -1.0f);
}

TEST_CASE("setp: ordered and unordered compares with NaN; testp classes") {
  const float n = NAN;
  CHECK(!setp_f32(FCmp::ne, n, 1.0f));   // ne is ordered: false with a NaN
  CHECK(setp_f32(FCmp::neu, n, 1.0f));
  CHECK(!setp_f32(FCmp::eq, n, n));
  CHECK(setp_f32(FCmp::equ, n, 2.0f));
  CHECK(setp_f32(FCmp::eq, -0.0f, 0.0f));
  CHECK(setp_f32(FCmp::lt, 1.0f, 2.0f));
  CHECK(!setp_f32(FCmp::ltu, 2.0f, 1.0f));
  CHECK(setp_f32(FCmp::geu, n, 1.0f));
  CHECK(setp_f32(FCmp::num, 1.0f, 2.0f));
  CHECK(setp_f32(FCmp::nan, 1.0f, n));
  CHECK(setp_f32(FCmp::eq, F(0x00000001), 0.0f, true));  // .ftz: the subnormal is zero
  CHECK(!setp_f32(FCmp::eq, F(0x00000001), 0.0f));
  CHECK(testp_f32(TestP::subnormal, F(0x00000001)));
  CHECK(!testp_f32(TestP::normal, 0.0f));
  CHECK(testp_f32(TestP::infinite, -INFINITY));
  CHECK(!testp_f32(TestP::finite, NAN));
  CHECK(testp_f32(TestP::notanumber, NAN));
}

TEST_CASE("approximate functions: exact mode, special values, ftz") {
  CHECK(ex2_approx_f32(1.0f, false) == 2.0f);
  CHECK(ex2_approx_f32(0.5f, false) == float(std::sqrt(2.0)));
  CHECK(ex2_approx_f32(-INFINITY, false) == 0.0f);
  CHECK(ex2_approx_f32(INFINITY, false) == INFINITY);
  CHECK(std::isnan(ex2_approx_f32(NAN, false)));
  CHECK(ex2_approx_f32(F(0x00000001), true) == 1.0f);                // subnormal input flushed
  CHECK(ex2_approx_f32(-130.0f, false) == std::ldexp(1.0f, -130));   // subnormal result kept
  CHECK(ex2_approx_f32(-130.0f, true) == 0.0f);                      // ... or flushed
  CHECK(rcp_approx_f32(0.0f, false) == INFINITY);
  CHECK(rcp_approx_f32(-0.0f, false) == -INFINITY);
  CHECK(rcp_approx_f32(4.0f, false) == 0.25f);
  CHECK(rcp_approx_f32(F(0x00000100), true) == INFINITY);           // flushed to +0
  CHECK(rsqrt_approx_f32(4.0f, false) == 0.5f);
  CHECK(std::isnan(rsqrt_approx_f32(-1.0f, false)));
  CHECK(lg2_approx_f32(8.0f, false) == 3.0f);
  CHECK(lg2_approx_f32(0.0f, false) == -INFINITY);
  CHECK(std::isnan(lg2_approx_f32(-1.0f, false)));
  CHECK(tanh_approx_f32(0.0f) == 0.0f);
  CHECK(tanh_approx_f32(20.0f) == 1.0f);
  CHECK(tanh_approx_f32(0.5f) == float(std::tanh(0.5)));
}

TEST_CASE("approximate functions: perturbed mode stays within the stated error and is deterministic") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-20.0f, 20.0f), pos(0.01f, 100.0f);
  ApproxConfig cfg{ApproxMode::perturbed, 1234};
  ApproxConfig cfg2{ApproxMode::perturbed, 99};
  int lg2_moved = 0, ex2_moved = 0, rcp_moved = 0, tanh_moved = 0, seeds_differ = 0;
  for (int i = 0; i < 5000; ++i) {
    const float x = u(rng), p = pos(rng);
    const float r2 = ex2_approx_f32(x, false, cfg), rn2 = float(std::exp2(double(x)));
    CHECK(std::abs(int64_t(B(r2)) - int64_t(B(rn2))) <= kEx2MaxUlp);  // 2 ulp from the rounded result
    ex2_moved += r2 != rn2;
    seeds_differ += r2 != ex2_approx_f32(x, false, cfg2);
    CHECK(B(r2) == B(ex2_approx_f32(x, false, cfg)));  // same seed, same input: same result
    const float rr = rcp_approx_f32(p, false, cfg), rnr = float(1.0 / double(p));
    CHECK(std::abs(int64_t(B(rr)) - int64_t(B(rnr))) <= kRcpMaxUlp);
    rcp_moved += rr != rnr;
    const double et = std::tanh(double(x) / 8);
    const float rt = tanh_approx_f32(x / 8, cfg);
    CHECK(std::fabs(double(rt) - et) <= std::fabs(et) * kTanhMaxRel);
    tanh_moved += rt != tanh_approx_f32(x / 8);
    const double es = 1.0 / std::sqrt(double(p));
    CHECK(std::fabs(double(rsqrt_approx_f32(p, false, cfg)) - es) <= es * kRsqrtMaxRel);
    const double el = std::log2(double(p));
    const float rl = lg2_approx_f32(p, false, cfg);
    CHECK(std::fabs(double(rl) - el) <= lg2_approx_bound(p, el));
    lg2_moved += rl != lg2_approx_f32(p, false);
  }
  CHECK(ex2_moved > 3000);   // k in -2..2: 4 of 5 move
  CHECK(lg2_moved > 1000);
  CHECK(rcp_moved > 500);
  CHECK(tanh_moved > 4000);
  CHECK(seeds_differ > 1000);
}

TEST_CASE("bf16x2 / f16x2 arithmetic: lanes independent, one rounding, ftz") {
  // hi: 1.0 + 2^-8 (a tie: stays 1.0); lo: 3.0 + 2^-7 (a tie: stays 3.0)
  CHECK(add_bf16x2(0x3f804040u, 0x3b803c00u) == 0x3f804040u);
  // hi: 1.0 + 3*2^-9 rounds up to 1 + 2^-7; lo: 3.0 + 0 stays
  CHECK(add_bf16x2(0x3f804040u, 0x3bc00000u) == 0x3f814040u);
  // fma.rn.bf16x2: (1+2^-7)^2 - (1+2^-6) = 2^-14 exactly (two roundings would give 0)
  CHECK(fma_bf16x2(0x3f813f81u, 0x3f813f81u, 0xbf82bf82u) == 0x38803880u);
  CHECK(fma_bf16(0x3f81, 0x3f81, 0xbf82) == 0x3880);
  CHECK(mul_bf16x2(0x40004040u, 0x3f00bf80u) == 0x3f80c040u);  // 2*0.5 | 3*-1
  CHECK(sub_bf16x2(0x40400000u, 0x3f800000u) == 0x40000000u);
  CHECK(fma_bf16(0xbf80, 0x3f80, 0x0000, true) == 0x0000);    // .relu
  // f16: 1 + 2^-11 is a tie (stays 1.0); 2048 + 1 also a tie (stays 2048)
  CHECK(add_f16x2(0x3c006800u, 0x10003c00u) == 0x3c006800u);
  CHECK(fma_f16x2(0x3c013c01u, 0x3c013c01u, 0xbc02bc02u) == 0x00100010u);  // 2^-20: subnormal
  CHECK(fma_f16x2(0x3c013c01u, 0x3c013c01u, 0xbc02bc02u, true) == 0x00000000u);  // .ftz
  CHECK(add_f16(0x0001, 0x0000, true) == 0x0000);
  CHECK(add_f16(0x3800, 0x3c00, false, true) == 0x3c00);       // 1.5 saturated to 1.0
  CHECK(max_bf16x2(0x7fc13f80u, 0x3f804000u) == 0x3f804000u);  // NaN lane takes the other
  CHECK(max_bf16x2(0x7fc13f80u, 0x3f804000u, true) == 0x7fff4000u);
  CHECK(min_f16x2(0x3c00c000u, 0x4000bc00u) == 0x3c00c000u);
  CHECK(ex2_approx_f16(0x3c00) == 0x4000);
  CHECK(ex2_approx_bf16(0x3f80) == 0x4000);
}

}  // TEST_SUITE
