// Conformance tests for tools/sim/isa/bits.h, worked out from the PTX ISA's semantics pseudo-code
// of prmt, lop3, bfe, bfi, bfind, shf, bmsk, szext, dp4a/dp2a and the carry-flag instructions.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>

#include "tools/sim/isa/bits.h"

using namespace ptxsim::isa;

TEST_SUITE("sim isa bits") {

TEST_CASE("prmt default mode: byte selection and sign replication") {
  const uint32_t a = 0x03020100u, b = 0x07060504u;  // byte i of {b, a} holds i
  CHECK(prmt(a, b, 0x3210) == a);
  CHECK(prmt(a, b, 0x7654) == b);
  CHECK(prmt(a, b, 0x0123) == 0x00010203u);
  CHECK(prmt(a, b, 0x7531) == 0x07050301u);
  CHECK(prmt(a, b, 0xffff7531u) == 0x07050301u);  // only c[15:0] is read
  // a bytes: b0 = 0x01, b1 = 0x7f, b2 = 0x00, b3 = 0x80. Selectors 8, 9, b (sign of bytes 0, 1,
  // 3) and 3 (copy byte 3): 0x00, 0x00, 0xff, 0x80.
  CHECK(prmt(0x80007f01u, 0, 0x3b98) == 0x80ff0000u);
  CHECK(prmt(0, 0x00800000u, 0xeeee) == 0xffffffffu);   // sign of byte 6 (b's byte 2)
}

TEST_CASE("prmt modes: the ISA's table for c[1:0] = 0..3") {
  const uint32_t a = 0x03020100u, b = 0x07060504u;
  // results listed d.b3 d.b2 d.b1 d.b0 as in the ISA's table
  CHECK(prmt(a, b, 0, PrmtMode::f4e) == 0x03020100u);
  CHECK(prmt(a, b, 1, PrmtMode::f4e) == 0x04030201u);
  CHECK(prmt(a, b, 2, PrmtMode::f4e) == 0x05040302u);
  CHECK(prmt(a, b, 3, PrmtMode::f4e) == 0x06050403u);
  CHECK(prmt(a, b, 0, PrmtMode::b4e) == 0x05060700u);
  CHECK(prmt(a, b, 1, PrmtMode::b4e) == 0x06070001u);
  CHECK(prmt(a, b, 2, PrmtMode::b4e) == 0x07000102u);
  CHECK(prmt(a, b, 3, PrmtMode::b4e) == 0x00010203u);
  CHECK(prmt(a, b, 2, PrmtMode::rc8) == 0x02020202u);
  CHECK(prmt(a, b, 1, PrmtMode::ecl) == 0x03020101u);
  CHECK(prmt(a, b, 2, PrmtMode::ecl) == 0x03020202u);
  CHECK(prmt(a, b, 1, PrmtMode::ecr) == 0x01010100u);
  CHECK(prmt(a, b, 2, PrmtMode::ecr) == 0x02020100u);
  CHECK(prmt(a, b, 0, PrmtMode::rc16) == 0x01000100u);
  CHECK(prmt(a, b, 1, PrmtMode::rc16) == 0x03020302u);
  CHECK(prmt(a, b, 0xfffffff5u, PrmtMode::f4e) == 0x04030201u);  // only c[1:0]
  CHECK(prmt(0x00000081u, 0, 0, PrmtMode::rc8) == 0x81818181u);   // modes copy, no sign fill
}

TEST_CASE("lop3: immLut is the table over 0xF0, 0xCC, 0xAA") {
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    const uint32_t a = rng(), b = rng(), c = rng();
    CHECK(lop3(a, b, c, 0xf0) == a);
    CHECK(lop3(a, b, c, 0xcc) == b);
    CHECK(lop3(a, b, c, 0xaa) == c);
    CHECK(lop3(a, b, c, 0x80) == (a & b & c));
    CHECK(lop3(a, b, c, 0xfe) == (a | b | c));
    CHECK(lop3(a, b, c, 0x96) == (a ^ b ^ c));
    CHECK(lop3(a, b, c, 0xea) == ((a & b) | c));
    CHECK(lop3(a, b, c, 0x0f) == ~a);
    CHECK(lop3(a, b, c, 0xca) == ((a & b) | (~a & c)));  // select b where a, else c
  }
}

TEST_CASE("bfe, bfi, brev, clz, popc, bfind") {
  CHECK(bfe(0x12345678u, 4, 8, 32, false) == 0x67u);
  CHECK(bfe(0x000000f0u, 4, 4, 32, true) == 0xffffffffu);
  CHECK(bfe(0x00000070u, 4, 4, 32, true) == 0x7u);
  CHECK(bfe(0x80000000u, 28, 8, 32, true) == 0xfffffff8u);  // sign from a[31]
  CHECK(bfe(0x80000000u, 28, 8, 32, false) == 0x8u);
  CHECK(bfe(0xffffffffu, 4, 0, 32, true) == 0u);            // len 0
  CHECK(bfe(0xffffffffu, 40, 4, 32, false) == 0u);          // pos past msb
  CHECK(bfe(0xffffffffu, 0x104, 0x208, 32, false) == 0xffu);  // only b[7:0], c[7:0]
  CHECK(bfe(0x8000000000000000ull, 60, 8, 64, true) == 0xfffffffffffffff8ull);
  CHECK(bfi(0xf, 0x12345678u, 8, 4, 32) == 0x12345f78u);
  CHECK(bfi(0xff, 0, 28, 8, 32) == 0xf0000000u);            // bits past msb dropped
  CHECK(bfi(0xff, 0xabcd, 3, 0, 32) == 0xabcdu);
  CHECK(brev32(1) == 0x80000000u);
  CHECK(brev32(0x12345678u) == 0x1e6a2c48u);
  CHECK(brev64(1) == 0x8000000000000000ull);
  CHECK(clz32(0) == 32);
  CHECK(clz32(1) == 31);
  CHECK(clz64(1) == 63);
  CHECK(popc32(0xf0f0u) == 8);
  CHECK(popc64(~0ull) == 64);
  CHECK(bfind(0x00010000u, 32, false, false) == 16);
  CHECK(bfind(0x00010000u, 32, false, true) == 15);
  CHECK(bfind(0, 32, false, false) == 0xffffffffu);
  CHECK(bfind(0xffffffffu, 32, true, false) == 0xffffffffu);  // -1: no non-sign bit
  CHECK(bfind(0xffff0000u, 32, true, false) == 15);
}

TEST_CASE("shf funnel shifts: wrap and clamp; shl/shr past the width") {
  const uint32_t a = 0x89abcdefu, b = 0x01234567u;  // {b, a} = 0x0123456789abcdef
  CHECK(shf_l(a, b, 4, false) == 0x12345678u);
  CHECK(shf_r(a, b, 4, false) == 0x789abcdeu);
  CHECK(shf_l(a, b, 36, false) == 0x12345678u);  // wrap: 36 & 31 = 4
  CHECK(shf_l(a, b, 40, true) == a);             // clamp: 32
  CHECK(shf_r(a, b, 40, true) == b);
  CHECK(shf_l(a, b, 0, false) == b);
  CHECK(shf_r(a, b, 0, true) == a);
  CHECK(shl(1, 32, 32) == 0);
  CHECK(shr_u(0x80000000u, 40, 32) == 0);
  CHECK(uint32_t(shr_s(int32_t(0x80000000u), 40, 32)) == 0xffffffffu);
  CHECK(uint32_t(shr_s(int32_t(0x80000000u), 4, 32)) == 0xf8000000u);
}

TEST_CASE("carry chains: add.cc/addc and sub.cc/subc build 64-bit and 96-bit arithmetic") {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 500; ++i) {
    const uint64_t x = rng(), y = rng();
    const Carry32 lo = add_cc32(uint32_t(x), uint32_t(y));
    const Carry32 hi = addc32(uint32_t(x >> 32), uint32_t(y >> 32), lo.cf);
    CHECK(((uint64_t(hi.d) << 32) | lo.d) == x + y);
    CHECK(hi.cf == (x + y < x));
    const Carry32 slo = sub_cc32(uint32_t(x), uint32_t(y));
    const Carry32 shi = subc32(uint32_t(x >> 32), uint32_t(y >> 32), slo.cf);
    CHECK(((uint64_t(shi.d) << 32) | slo.d) == x - y);
    CHECK(shi.cf == (x < y));  // the final borrow
    // 64x32 -> 96-bit product via mad.lo.cc / madc.hi: x * m = lo(x0*m) + (hi(x0*m) + x1*m) << 32
    const uint32_t m = uint32_t(rng());
    const uint32_t x0 = uint32_t(x), x1 = uint32_t(x >> 32);
    const Carry32 p1 = madc32(x1, m, mul_hi_u32(x0, m), false, false, false);
    const uint32_t p2 = madc32(x1, m, 0, true, false, p1.cf).d;
    const unsigned __int128 want = (unsigned __int128)x * m;
    CHECK(uint32_t(want) == x0 * m);
    CHECK(uint32_t(want >> 32) == p1.d);
    CHECK(uint32_t(want >> 64) == p2);
  }
  CHECK(add_cc32(0xffffffffu, 1).cf);
  CHECK(addc32(0xffffffffu, 0, true).d == 0);
  CHECK(subc32(0, 0, true).d == 0xffffffffu);
  CHECK(subc32(0, 0, true).cf);
  CHECK(!sub_cc32(5, 5).cf);
  const Carry64 c64 = add_cc64(~0ull, 2);
  CHECK(c64.d == 1);
  CHECK(c64.cf);
}

TEST_CASE("mul.hi, mul.wide, sad, dp4a, dp2a") {
  CHECK(mul_hi_u32(0xffffffffu, 0xffffffffu) == 0xfffffffeu);
  CHECK(mul_hi_s32(-1, 1) == -1);
  CHECK(mul_hi_u64(~0ull, 2) == 1);
  CHECK(mul_wide_s32(-2, 0x40000000) == -0x80000000ll);
  CHECK(mul_wide_u16(0xffff, 0xffff) == 0xfffe0001u);
  CHECK(sad_u32(3, 10, 100) == 107);
  CHECK(sad_s32(-3, 4, 1) == 8);
  CHECK(dp4a(0x01020304u, 0x01010101u, 10, false, false) == 20);
  CHECK(dp4a(0x000000ffu, 0x00000002u, 0, true, true) == 0xfffffffeu);
  CHECK(dp4a(0x000000ffu, 0x00000002u, 0, false, true) == 510);
  CHECK(dp4a(0x00000002u, 0x000000ffu, 0, false, true) == 0xfffffffeu);
  CHECK(dp2a(0x00020003u, 0x04030201u, 0, false, false, false) == 7);   // 3*1 + 2*2
  CHECK(dp2a(0x00020003u, 0x04030201u, 0, true, false, false) == 17);   // 3*3 + 2*4
  CHECK(dp2a(0xffff0001u, 0x00000101u, 5, false, true, false) == 5);    // 1*1 + (-1)*1 + 5
}

TEST_CASE("mul24 and integer setp") {
  CHECK(mul24(0x01000003u, 5, false, false) == 15u);        // bits above 23 ignored
  CHECK(mul24(0x00ffffffu, 0x00ffffffu, true, false) == 0xfffffe00u);  // bits 47..16 of (2^24-1)^2
  CHECK(mul24(0x00ffffffu, 2, false, true) == 0xfffffffeu);  // .s32: 0xffffff is -1
  CHECK(setp_int(ICmp::lt, 0xffffffffu, 1, 32, true));       // -1 < 1 signed
  CHECK(!setp_int(ICmp::lt, 0xffffffffu, 1, 32, false));     // lo: unsigned
  CHECK(setp_int(ICmp::ge, 0x8000, 0x7fff, 16, false));
  CHECK(!setp_int(ICmp::ge, 0x8000, 0x7fff, 16, true));
  CHECK(setp_int(ICmp::eq, 0x1ffffffffull, 0xffffffffu, 32, false));  // only the low 32 bits
}

TEST_CASE("bmsk and szext: wrap and clamp") {
  CHECK(bmsk(4, 8, false) == 0xff0u);
  CHECK(bmsk(28, 8, true) == 0xf0000000u);
  CHECK(bmsk(0, 32, true) == 0xffffffffu);
  CHECK(bmsk(0, 32, false) == 0u);     // wrap: 32 & 31 = 0
  CHECK(bmsk(40, 4, true) == 0u);      // clamp: start 32
  CHECK(bmsk(36, 4, false) == 0xf0u);  // wrap: start 4
  CHECK(szext(0xff, 8, true, true) == 0xffffffffu);
  CHECK(szext(0xff, 8, true, false) == 0xffu);
  CHECK(szext(0x1ff, 8, true, false) == 0xffu);
  CHECK(szext(0x17f, 8, false, true) == 0x7fu);
  CHECK(szext(0x80, 0, true, true) == 0u);
  CHECK(szext(0x80000000u, 40, true, true) == 0x80000000u);
}

}  // TEST_SUITE
