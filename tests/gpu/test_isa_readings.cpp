// The simulator's ISA readings, on the device: where the PTX ISA is silent or unclear, the simulator
// chose a reading (tools/sim/READINGS.md "core #N", tools/sim/isa/READINGS.md "isa #N"); each
// expectation below is that reading, stated before any hardware run. On the H200 a failing check
// refutes the reading (the simulator is then corrected, with this test); in the simulator the same
// checks show that it implements what it claims. The sweeps measure the approximate functions
// against correctly rounded fp64 results and hold them to the ISA's stated bounds.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <random>
#include <vector>

#include "tests/kernels/isa_readings.h"
#include "tests/kernels/prim_host_util.h"

using namespace flashptx_test::readings;
using flashptx_test::prim::DevBuf;

namespace {

using flashptx_test::prim::bits_from_f32;
using flashptx_test::prim::f32_from_bits;

// Distance in units in the last place between two finite floats of the same sign class.
int64_t ulp_distance(float a, float b) {
  auto ordered = [](float x) { const int32_t i = static_cast<int32_t>(bits_from_f32(x)); return i < 0 ? int64_t(INT32_MIN) - i : int64_t(i); };
  return std::llabs(ordered(a) - ordered(b));
}

struct Probe { int index; uint32_t want; const char* what; };

std::string hex(uint32_t v) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", v);
  return s;
}

std::vector<uint32_t> probe_inputs() {
  std::vector<uint32_t> in(32, 0);
  in[0] = 0x7fc00001u; in[1] = 0xffc00000u; in[2] = bits_from_f32(1.0f); in[3] = bits_from_f32(-1.0f); in[4] = 0x80000000u;
  in[5] = bits_from_f32(3e9f); in[6] = bits_from_f32(-3e9f); in[7] = bits_from_f32(-130.0f); in[8] = bits_from_f32(-149.0f);
  in[9] = 0x03020100u; in[10] = 0x07060504u; in[11] = 0; in[12] = 1; in[13] = 32;
  in[14] = 0x3f81u; in[15] = 0xbf82u; in[16] = 0x7f7fffffu; in[17] = 7;
  in[18] = bits_from_f32(500.0f); in[19] = bits_from_f32(-500.0f); in[20] = 0x7f800000u; in[21] = 0xff800000u;
  return in;
}

template <typename Launch, size_t N>
void check_probes(Launch launch, const Probe (&probes)[N]) {
  const std::vector<uint32_t> in = probe_inputs();
  DevBuf<uint32_t> din(in.size()), dout(kProbes);
  din.upload(in);
  dout.poison(0x5A);
  PRIM_LAUNCH_REQUIRE(launch(din.p, dout.p));
  const std::vector<uint32_t> out = dout.download();
  for (const Probe& p : probes) {
    INFO(p.what);
    CHECK_MESSAGE(out[p.index] == p.want, "probe " << p.index << ": got " << hex(out[p.index]) << ", the reading says "
                                                   << hex(p.want));
  }
}

}  // namespace

TEST_SUITE("gpu_sm90 isa readings") {

TEST_CASE("forms the simulator executes: NaN, saturation, rounding, integer edges, elect with partial masks") {
  const Probe probes[] = {
      {0, 0x7fffu, "isa #1: cvt.rn.bf16.f32 of +NaN 0x7fc00001 is the canonical NaN"},
      {1, 0x7fffu, "isa #1: cvt.rn.bf16.f32 of -NaN 0xffc00000 is the canonical (positive) NaN"},
      {2, 0x7fffu, "isa #1: cvt.rn.f16.f32 of +NaN is 0x7fff"},
      {3, 0x7fffu, "isa #1: cvt.rn.f16.f32 of -NaN is 0x7fff"},
      {34, 0x7fff7fffu, "isa #1: cvt.rn.f16x2.f32 of (+NaN, -NaN)"},
      {35, 0x7fff7fffu, "isa #1: cvt.rn.bf16x2.f32 of (+NaN, -NaN)"},
      {4, 0x7f7fu, "isa #2: cvt.rn.satfinite.e4m3x2.f32 of (+NaN, -NaN) is 0x7f in each byte"},
      {5, 0x7f7fu, "isa #2: cvt.rn.satfinite.e5m2x2.f32 of (+NaN, -NaN) is 0x7f in each byte"},
      {36, 0x7efeu, "cvt.rn.satfinite.e4m3x2.f32 of (500, -500) saturates to (448, -448)"},
      {37, 0x7efeu, "cvt.rn.satfinite.e4m3x2.f32 of (+inf, -inf) saturates to (448, -448)"},
      {7, 0x00000000u, "isa #4: add.sat.f32 of (NaN, 1) is +0.0"},
      {8, 0x00000000u, "isa #4: add.sat.f32 of (-0.0, -0.0) is +0.0"},
      {9, 0x00080000u, "isa #7: ex2.approx.f32 of -130 keeps the subnormal 2^-130"},
      {10, 0x00000001u, "isa #7: ex2.approx.f32 of -149 is 2^-149"},
      {38, 0x00000000u, "ex2.approx.ftz.f32 of -130 flushes to +0.0"},
      {39, 0xff800000u, "rcp.approx.f32 of -0.0 is -inf"},
      {11, 0x80000000u, "isa #9: add.rm.f32 of (1, -1) is -0.0"},
      {12, 0x00000000u, "isa #9: add.rn.f32 of (1, -1) is +0.0"},
      {13, 0x7fffffffu, "isa #10: cvt.rzi.s32.f32 of 3e9 saturates to INT32_MAX"},
      {14, 0x80000000u, "isa #10: cvt.rzi.s32.f32 of -3e9 saturates to INT32_MIN"},
      {15, 0x00000000u, "isa #10: cvt.rzi.s32.f32 of NaN is 0"},
      {16, 0x00000000u, "isa #10: cvt.rzi.u32.f32 of -1 is 0"},
      {26, 0xffffffffu, "core #19: div.s32 by zero is all ones"},
      {27, 0xffffffffu, "core #19: rem.s32 by zero is all ones (the H200's answer; the first reading, the dividend, was wrong)"},
      {22, 16u, "core #1 / isa #29: elect.sync of membermask 0xffff0000 elects lane 16"},
      {23, 0u, "core #1 / isa #29: elect.sync of membermask 0x80000001 elects lane 0"},
  };
  check_probes(launch_core_probes, probes);
}

// No library kernel issues these forms; the simulator's core executes them for this probe (through
// its ISA library, whose unit tests check the same readings: tests/sim/test_sim_isa_*.cpp).
TEST_CASE("forms only the simulator's ISA library models: relu, szext/bmsk wrap, borrow chain, bf16 fma, tf32, prmt modes") {
  const Probe probes[] = {
      {6, 0x00007fffu, "isa #3: cvt.rn.relu.bf16x2.f32 of (-0.0, NaN) is (+0.0, canonical NaN)"},
      {21, 0x3880u, "isa #8: fma.rn.bf16 (0x3f81, 0x3f81, 0xbf82) rounds once: 2^-14"},
      {28, 0x04030201u, "isa #11: prmt.b32.f4e c=1"},
      {29, 0x06070001u, "isa #11: prmt.b32.b4e c=1"},
      {30, 0x01010101u, "isa #11: prmt.b32.rc8 c=1"},
      {31, 0x03020101u, "isa #11: prmt.b32.ecl c=1"},
      {32, 0x01010100u, "isa #11: prmt.b32.ecr c=1"},
      {33, 0x03020302u, "isa #11: prmt.b32.rc16 c=1"},
      {17, 0x00000000u, "isa #12: szext.wrap.s32 with width 32 wraps to 0 and yields 0"},
      {18, 0x00000000u, "isa #12: bmsk.wrap.b32 with b = 32 yields 0"},
      {19, 0xffffffffu, "isa #13: sub.cc.u32 0 - 1"},
      {20, 0xffffffffu, "isa #13: subc.u32 0 - 0 after a borrow"},
      {24, 0x7fc00000u, "isa #30: cvt.rna.tf32.f32 of NaN 0x7fc00001 clears the low 13 bits: 0x7fc00000 (the H200's answer; the first reading, the canonical 0x7fffffff, was wrong)"},
      {25, 0x7f800000u, "isa #30: cvt.rna.tf32.f32 of FLT_MAX overflows to +inf"},
  };
  check_probes(launch_library_probes, probes);
}

// Fresh inputs over the whole normal range. The simulator computes each function correctly rounded
// (its exact mode), so there the bounds hold by construction: what these cases measure is the chip,
// whose largest errors they print (the simulator's perturbed mode moves results by up to the same
// bounds: tools/sim/isa/READINGS.md #5).
TEST_CASE("rcp.approx and ex2.approx (.ftz) f32 within the ISA's bounds of the rounded result") {
  std::mt19937 rng(0x15A);
  const int n = 1 << 14;
  std::vector<float> x(2 * n);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f), ex2_arg(-126.0f, 127.0f);
  std::uniform_int_distribution<int> expo(-120, 120);
  for (int i = 0; i < n; ++i) {
    x[i] = std::ldexp(mant(rng), expo(rng)) * ((rng() & 1) ? -1.0f : 1.0f);  // rcp's inputs
    x[n + i] = ex2_arg(rng);                                                    // ex2's (normal results)
  }
  DevBuf<float> dx(x.size());
  DevBuf<uint32_t> dout(3 * x.size());
  dx.upload(x);
  dout.poison(0x5A);
  PRIM_LAUNCH_REQUIRE(launch_approx_sweep(dx.p, dout.p, static_cast<int>(x.size())));
  const std::vector<uint32_t> out = dout.download();
  int64_t rcp_ulp = 0, ex2_ulp = 0, ex2_ftz_ulp = 0;
  for (int i = 0; i < n; ++i) {
    rcp_ulp = std::max(rcp_ulp, ulp_distance(f32_from_bits(out[3 * i + 0]), static_cast<float>(1.0 / double(x[i]))));
    const float e_ref = static_cast<float>(std::exp2(double(x[n + i])));
    ex2_ulp = std::max(ex2_ulp, ulp_distance(f32_from_bits(out[3 * (n + i) + 1]), e_ref));
    ex2_ftz_ulp = std::max(ex2_ftz_ulp, ulp_distance(f32_from_bits(out[3 * (n + i) + 2]), e_ref));
  }
  MESSAGE("largest errors over " << n << " inputs each: rcp.approx " << rcp_ulp << " ulp, ex2.approx " << ex2_ulp
          << " ulp, ex2.approx.ftz " << ex2_ftz_ulp << " ulp");
  CHECK_MESSAGE(rcp_ulp <= 1, "isa #5: rcp.approx.f32 within 1 ulp of the rounded 1/x");
  CHECK_MESSAGE(ex2_ulp <= 2, "ex2.approx.f32 within 2 ulp of the rounded 2^x (the ISA's bound)");
  CHECK_MESSAGE(ex2_ftz_ulp <= 2, "ex2.approx.ftz.f32 within 2 ulp on normal results");
}

// lg2.approx: no kernel issues it. On the simulator (its ISA library's lg2, correctly rounded in the
// exact mode) the bound holds by construction; on the chip this measures it.
TEST_CASE("lg2.approx.f32 within the ISA's bound") {
  std::mt19937 rng(0x15B);
  const int n = 1 << 14;
  std::vector<float> x(n);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-120, 120);
  for (int i = 0; i < n; ++i) x[i] = std::ldexp(mant(rng), (i % 4 == 0) ? -1 + (i / 4) % 2 : expo(rng));
  DevBuf<float> dx(x.size());
  DevBuf<uint32_t> dout(x.size());
  dx.upload(x);
  dout.poison(0x5A);
  PRIM_LAUNCH_REQUIRE(launch_lg2_sweep(dx.p, dout.p, n));
  const std::vector<uint32_t> out = dout.download();
  double abs_near1 = 0, rel = 0;
  for (int i = 0; i < n; ++i) {
    const double got = double(f32_from_bits(out[i])), want = std::log2(double(x[i]));
    if (x[i] > 0.5f && x[i] < 2.0f) abs_near1 = std::max(abs_near1, std::fabs(got - want));
    else rel = std::max(rel, std::fabs(got - want) / std::fabs(want));
  }
  MESSAGE("lg2.approx.f32 over " << n << " inputs: largest absolute error in (0.5, 2) " << abs_near1
          << ", largest relative error elsewhere " << rel);
  // isa #6: 2^-22 absolute in (0.5, 2), 2^-22 relative elsewhere, and never below one ulp of the
  // result: the rounding of the result itself (half an ulp, at most 2^-24 relative) is allowed on top.
  CHECK_MESSAGE(abs_near1 <= std::ldexp(1.0, -22), "isa #6: lg2.approx.f32 absolute error in (0.5, 2)");
  CHECK_MESSAGE(rel <= std::ldexp(1.0, -22) + std::ldexp(1.0, -24), "isa #6: lg2.approx.f32 relative error elsewhere");
}

}  // TEST_SUITE
